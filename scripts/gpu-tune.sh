#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# gpu-tune.sh - engine tuning experiments on the GPU machine: builds the
# library and gdsio, then runs the warm device-read workloads under the
# engine's variables (OPENCUFILE_PREWARM, OPENCUFILE_EVENT_WAIT,
# OPENCUFILE_IO_THREADS, OPENCUFILE_CHUNK_KB; docs/configuration.md) and
# prints one line per configuration.
#
#   scripts/gpu-tune.sh "label:VAR=v VAR=v" ...   (no arguments: a default set)
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build-gpu}
JSONC=; [ -d .carry/jsonc ] && JSONC="-DJSONC_ROOT=$PWD/.carry/jsonc" && export LD_LIBRARY_PATH=$PWD/.carry/jsonc/lib
[ -d .carry/liburing ] && JSONC="$JSONC -DLIBURING_ROOT=$PWD/.carry/liburing"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF $JSONC >/dev/null &&
	cmake --build "$BUILD" -j"$(nproc)" --target cufile gdsio >/dev/null || { echo "build failed"; exit 1; }
LIB=$PWD/$BUILD/libcufile.so.0
G=$PWD/$BUILD/tools/gdsio
SCR=${GPU_SCRATCH:-$PWD/gpu-scratch}
mkdir -p "$SCR"
DATA=$SCR/tune.dat
SIZE=${TUNE_SIZE:-4G}
"$G" -f "$DATA" -s "$SIZE" -Z >/dev/null 2>&1 || { echo "cannot create $DATA"; exit 1; }
cat "$DATA" >/dev/null
export CUFILE_LOGFILE_PATH=$SCR/cufile-tune.log

run() { # label, env..., then -- gdsio args; prints GB/s or avg us
	local metric=$1; shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	local out
	out=$(env "${envs[@]}" LD_PRELOAD="$LIB" timeout 60 "$G" -f "$DATA" -d 0 "$@" 2>&1)
	if [ "$metric" = lat ]; then
		echo "$out" | sed -n 's/.*Avg_Latency: \([0-9.]*\) usecs.*/\1/p' | head -1
	else
		echo "$out" | sed -n 's/.*GB_per_sec: \([0-9.]*\).*/\1/p' | head -1
	fi
}

configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(
	"default:"
	"noprewarm:OPENCUFILE_PREWARM=0"
	"spin:OPENCUFILE_EVENT_WAIT=spin"
	"thr8:OPENCUFILE_IO_THREADS=8"
	"thr12:OPENCUFILE_IO_THREADS=12"
	"chunk1m:OPENCUFILE_CHUNK_KB=1024"
	"chunk4m:OPENCUFILE_CHUNK_KB=4096"
)
printf '%-14s %8s %8s %8s %8s %8s %8s %9s\n' config w4g w4g_T3 t1x16m t16x1m t8x16mR host4g lat4k_us
for c in "${configs[@]}"; do
	label=${c%%:*}
	read -r -a ev <<<"${c#*:}"
	ev+=("OCF_TUNE=1")
	a=$(run gbs "${ev[@]}" -- -x 0 -m 0 -b -N -w 1 -s "$SIZE" -i "$SIZE")
	a3=$(run gbs "${ev[@]}" -- -x 0 -m 0 -b -N -w 1 -s "$SIZE" -i "$SIZE" -T 3)
	b=$(run gbs "${ev[@]}" -- -x 0 -m 0 -b -N -w 1 -s "$SIZE" -i 16M)
	d=$(run gbs "${ev[@]}" -- -x 0 -m 0 -b -N -w 16 -s "$SIZE" -i 1M)
	e=$(run gbs "${ev[@]}" -- -x 0 -m 0 -N -w 8 -s "$SIZE" -i 16M)
	h=$(run gbs "${ev[@]}" -- -x 0 -m 3 -b -N -w 1 -s "$SIZE" -i "$SIZE")
	l=$(run lat "${ev[@]}" -- -x 0 -m 0 -b -N -w 1 -s "$SIZE" -i 4K -I 2 -T 2)
	printf '%-14s %8s %8s %8s %8s %8s %8s %9s\n' "$label" "$a" "$a3" "$b" "$d" "$e" "$h" "$l"
done
rm -f "$DATA"
