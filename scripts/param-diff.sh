#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# param-diff.sh - on the GPU machine: the param_values case of
# tests/gpu/differential.c (every parameter, slab-array and property setter
# tried with out-of-range, zero, huge and odd values, driver closed and open,
# each try in a fresh process) against NVIDIA's libcufile and ours, and the
# rows that differ.
#
#   scripts/param-diff.sh          (a device call; run scripts/carry-deps.sh
#                                   first and carry .carry, as for gpu-check)
#   scripts/param-diff-compare.py NVIDIA.tsv OURS.tsv
#                                  (anywhere: the comparison of two runs)
#
# Builds our library in build-paramdiff (library target only) unless OURLIB
# names a libcufile.so.0, builds the differential against include/cufile.h
# (API 1150, as gpu-check does; the 1.17 slab functions are looked up by
# name), runs it with ours and then with NVIDIA's, each in a working
# directory of its own with CUFILE_LOGFILE_PATH=cufile.log (so both read back
# the same default log path), and compares rows by their key (kind, name,
# try, state) with scripts/param-diff-compare.py: a row differs when the
# setter's result, a read-back, the open, the read or the close differs
# (or a try crashed or hung); the driver properties are compared
# separately.  NVIDIA's run gets the udev shim (scripts/udev-shim.sh), which
# is removed again.
#
# Output, in $OUT (default ./gpu-out/param-diff): ours.tsv, nvidia.tsv (the
# raw rows), ours.stderr, nvidia.stderr (what each library printed: a try's
# stdout goes there, not into its row), diff.txt (what is printed: per
# differing row, the fields that differ; then the property fields that
# differ, grouped), cufile-ours.log, cufile-nvidia.log.
# Knobs: OUT, OURLIB, CUDA_HOME, NV_LIBDIR, PARAM_DIFF_JOBS (tries at once,
# default 4), PARAM_DIFF_ONLY (ours|nvidia: run one library only).

set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2

OUT=${OUT:-$ROOT/gpu-out/param-diff}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NV_LIBDIR=${NV_LIBDIR:-$CUDA_HOME/targets/x86_64-linux/lib}
STUBS=$CUDA_HOME/lib64/stubs
[ -e "$STUBS/libcuda.so" ] || STUBS=$CUDA_HOME/targets/x86_64-linux/lib/stubs
JOBS=${PARAM_DIFF_JOBS:-4}
SCR=$ROOT/gpu-scratch/param-diff

. "$ROOT/scripts/udev-shim.sh"
trap 'udev_cleanup; rm -rf "$SCR"' EXIT
trap 'echo interrupted; exit 130' INT TERM
rm -rf "$SCR"
mkdir -p "$SCR/data" "$SCR/ours" "$SCR/nvidia"

# ------------------------------------------------------------ our library
OURLIB=${OURLIB:-}
if [ -z "$OURLIB" ]; then
	CMAKE_ARGS=()
	if [ -d "$ROOT/.carry/jsonc" ]; then
		CMAKE_ARGS+=("-DJSONC_ROOT=$ROOT/.carry/jsonc")
		export LD_LIBRARY_PATH="$ROOT/.carry/jsonc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	fi
	[ -d "$ROOT/.carry/liburing" ] && CMAKE_ARGS+=("-DLIBURING_ROOT=$ROOT/.carry/liburing")
	if ! { cmake -S . -B build-paramdiff -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
		"${CMAKE_ARGS[@]}" && cmake --build build-paramdiff -j"$(nproc)" --target cufile; } \
		>"$OUT/build.log" 2>&1; then
		tail -30 "$OUT/build.log"
		echo "param-diff: our library did not build (see $OUT/build.log)"
		exit 1
	fi
	OURLIB=$(readlink -f build-paramdiff/libcufile.so.0)
fi
[ -f "$OURLIB" ] || { echo "param-diff: no library at $OURLIB"; exit 1; }

# ------------------------------------------------------- the differential
BIN=$SCR/differential
if ! gcc -std=gnu11 -O1 -g -Wall -DOPENCUFILE_API_VERSION=1150 -I "$ROOT/include" -I "$CUDA_HOME/include" \
	tests/gpu/differential.c -o "$BIN" -L "$(dirname "$OURLIB")" -l:libcufile.so.0 -L "$STUBS" -lcuda \
	>"$OUT/build-differential.log" 2>&1; then
	cat "$OUT/build-differential.log"
	exit 1
fi

# run WHO: the param_values rows of one library in $OUT/WHO.tsv.
run() {
	local who=$1 t0=$SECONDS
	(
		cd "$SCR/$who" || exit 2
		if [ "$who" = ours ]; then
			env LD_PRELOAD="$OURLIB" LD_LIBRARY_PATH="$(dirname "$OURLIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
				CUFILE_LOGFILE_PATH=cufile.log timeout -k 10 560 "$BIN" --dir "$SCR/data" \
				--param-jobs "$JOBS" param_values
		else
			env -u LD_PRELOAD LD_LIBRARY_PATH="$NV_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
				CUFILE_LOGFILE_PATH=cufile.log timeout -k 10 560 "$BIN" --dir "$SCR/data" \
				--param-jobs "$JOBS" param_values
		fi
	) >"$OUT/$who.tsv" 2>"$OUT/$who.stderr"
	echo "$who: rc=$? $(grep -c "^param$(printf '\t')" "$OUT/$who.tsv") rows in $((SECONDS - t0))s;" \
		"$(grep '^# libcufile:' "$OUT/$who.tsv" | tr '\n' ' ')"
	cp "$SCR/$who/cufile.log" "$OUT/cufile-$who.log" 2>/dev/null
}

ONLY=${PARAM_DIFF_ONLY:-}
[ "$ONLY" != nvidia ] && run ours
if [ "$ONLY" != ours ]; then
	udev_setup "$SCR/data"
	run nvidia
	udev_cleanup
fi
[ -n "$ONLY" ] && exit 0

# ------------------------------------------------------------ comparison
python3 "$ROOT/scripts/param-diff-compare.py" "$OUT/nvidia.tsv" "$OUT/ours.tsv" | tee "$OUT/diff.txt"
