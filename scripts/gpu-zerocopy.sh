#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The page-cache zero-copy experiment on the GPU machine: builds bench/zerocopy,
# writes a 4 GiB file on the real disk, warms it, and runs the experiment
# (docs/history/benchmarks.md, "Zero-copy from the page cache").  Knobs: ZC_SIZE (4G),
# ZC_ARGS (extra zerocopy arguments), GPU_SCRATCH (gpu-scratch).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-zc}
SCRATCH=${GPU_SCRATCH:-gpu-scratch}
OUT=${OUT:-gpu-out}
mkdir -p "$SCRATCH" "$OUT"
extra=()
[ -d .carry/jsonc ] && extra+=(-DJSONC_ROOT="$PWD/.carry/jsonc")
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "${extra[@]}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target zerocopy >/dev/null
f="$SCRATCH/zc-${ZC_SIZE:-4G}.dat"
[ -f "$f" ] || head -c "${ZC_SIZE:-4G}" /dev/zero | tr '\0' '\141' > "$f"
cat "$f" > /dev/null
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) commit ${GPU_BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo none)}"
"$BUILD"/bench/zerocopy -f "$f" ${ZC_ARGS:-} | tee "$OUT/zerocopy.log"
