#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# gpu-quick.sh - one short call on the GPU machine: build ours (and, with
# OPENCUFILE_BASE_SRC, an earlier tree of ours as the "base" library), then
# run the steps named on the command line, each leaving at most two files
# under $OUT (two per base with OPENCUFILE_BASE_LIBS; a device call brings
# back 8):
#
#   kv | loader | tp | write | clients
#                   scripts/gpu-bench.sh with GPU_BENCH_QUICK=that mode and
#                   the libraries of GPU_BENCH_LIBS (default "ours nv", or
#                   "nv base ours" with a base): $OUT/MODE-table.md and
#                   $OUT/MODE-raw.log.gz.  With OPENCUFILE_BASE_LIBS, one
#                   run per base, each "base ours" by default (bisection):
#                   $OUT/MODE-NAME-table.md and $OUT/MODE-NAME-raw.log.gz
#   memset          tests/gpu/read_after_memset.c against NVIDIA's library
#                   and ours, 16 threads and 1 thread x 64 KiB, the memset
#                   waited for and not: $OUT/memset.txt
#   gdsio:ARGS      one gdsio run of ours with ARGS (commas for spaces), e.g.
#                   "gdsio:-x,0,-m,0,-N,-w,1,-i,1M,-T,2,-P": $OUT/gdsio.txt
#   bisect:MODE:ROWS  which commit moved a row: for each library of
#                   OPENCUFILE_BASES (names of .carry/bases/NAME/libcufile.so.0,
#                   made by scripts/build-bases.sh; default: all of them), one
#                   scripts/gpu-bench.sh run of quick mode MODE, only the rows
#                   ROWS (commas), with GPU_BENCH_LIBS="base ours": each base
#                   and ours alternate in the same run.  $OUT/bisect.md holds
#                   every run's table, one section per base, $OUT/bisect-raw.log.gz
#                   their logs (GPU_BISECT_BUDGET:
#                   seconds per run, default 120)
#
#   scripts/gpu-quick.sh kv loader      (repository root, as root)
#   OPENCUFILE_BASE_LIBS="a=libs/a.so.0 b=libs/b.so.0" scripts/gpu-quick.sh clients
#
# Environment: OUT (default ./gpu-out), GPU_SCRATCH (default ./gpu-scratch),
# OPENCUFILE_BASE_SRC (a source tree of ours to build as the base),
# OPENCUFILE_BASE_LIBS="NAME=PATH ..." (libraries of ours already built,
# e.g. of the commits a bisection tries, carried to the machine: each bench
# step runs once per library, as the base beside ours; the base of
# OPENCUFILE_BASE_SRC, if any, runs first under the name "base"),
# GPU_QUICK_BUDGET (seconds for each bench run, default 330; 480 for
# clients), and every variable of scripts/gpu-bench.sh.  The build log
# comes back only when the build fails ($OUT/build.log).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/gpu-out}
SCR=${GPU_SCRATCH:-$ROOT/gpu-scratch}
mkdir -p "$OUT" "$SCR"
BUILD=$ROOT/build-gpu
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NV_LIBDIR=${NV_LIBDIR:-$CUDA_HOME/targets/x86_64-linux/lib}
DEPS=()
if [ -d "$ROOT/.carry/jsonc" ]; then
	DEPS+=("-DJSONC_ROOT=$ROOT/.carry/jsonc")
	export LD_LIBRARY_PATH="$ROOT/.carry/jsonc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
[ -d "$ROOT/.carry/liburing" ] && DEPS+=("-DLIBURING_ROOT=$ROOT/.carry/liburing")
[ -d "$ROOT/.carry/zlib" ] && DEPS+=("-DZLIB_ROOT=$ROOT/.carry/zlib")

build() { # SRC DIR
	cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF "${DEPS[@]}" &&
		cmake --build "$2" -j"$(nproc)"
}
T0=$SECONDS
if ! build "$ROOT" "$BUILD" >"$SCR/build.log" 2>&1; then
	cp "$SCR/build.log" "$OUT/build.log"
	echo "gpu-quick: build failed (build.log)"
	exit 1
fi
BASE=""
if [ -n "${OPENCUFILE_BASE_SRC:-}" ]; then
	if build "$OPENCUFILE_BASE_SRC" "$ROOT/build-base" >>"$SCR/build.log" 2>&1; then
		BASE=$ROOT/build-base/libcufile.so.0
	else
		cp "$SCR/build.log" "$OUT/build.log"
		echo "gpu-quick: the base did not build (build.log): base not run"
	fi
fi
# Several bases (OPENCUFILE_BASE_LIBS): NAME=PATH each; a path relative to
# the repository root is taken from there.
BASE_NAMES=() BASE_PATHS=()
[ -n "$BASE" ] && [ -n "${OPENCUFILE_BASE_LIBS:-}" ] && BASE_NAMES+=(base) BASE_PATHS+=("$BASE")
for b in ${OPENCUFILE_BASE_LIBS:-}; do
	n=${b%%=*} p=${b#*=}
	case $p in /*) ;; *) p=$ROOT/$p ;; esac
	if [ "$n" = "$b" ] || [ -z "$n" ] || [ ! -e "$p" ] || ! [[ $n =~ ^[A-Za-z0-9._-]+$ ]]; then
		echo "gpu-quick: OPENCUFILE_BASE_LIBS: '$b' is not NAME=PATH of a library: not run"
		continue
	fi
	BASE_NAMES+=("$n") BASE_PATHS+=("$p")
done
echo "gpu-quick: built in $((SECONDS - T0)) s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), $(nproc) CPUs"

# NVIDIA's library refuses files on the VM's disk without udev data.
udev_for() { # FILE: writes the udev facts of FILE's device; prints what to remove
	local d mm
	d=$(stat -c '%d' "$1")
	mm="$(((d >> 8) & 0xfff)):$(((d & 0xff) | ((d >> 12) & ~0xff)))"
	if [ ! -e "/run/udev/data/b$mm" ]; then
		mkdir -p /run/udev/data && printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n' >"/run/udev/data/b$mm" &&
			echo "/run/udev/data/b$mm"
	fi
}

# bench STEP TAG BASE LIBS: one gpu-bench run, its table and raw log under
# $OUT as STEP[-TAG]-table.md and STEP[-TAG]-raw.log.gz.
bench() {
	local step=$1 base=$3 libs=$4 name=$1${2:+-$2} T1=$SECONDS budget=${GPU_QUICK_BUDGET:-330}
	[ "$step" = clients ] && budget=${GPU_QUICK_BUDGET:-480}
	mkdir -p "$SCR/bench-$name"
	OUT="$SCR/bench-$name" GPU_SCRATCH="$SCR" BUILD="$BUILD" OPENCUFILE_BASE_LIB="$base" \
		GPU_BENCH_LIBS="$libs" GPU_BENCH_QUICK="$step" GPU_BENCH_BUDGET="$budget" \
		GPU_BENCH_COMMIT="${GPU_BENCH_COMMIT:-}" GPU_BENCH_KEEP=1 scripts/gpu-bench.sh >"$SCR/bench-$name/stdout" 2>&1
	echo "gpu-quick: $name: exit $? in $((SECONDS - T1)) s${base:+ (base $base)}"
	cp "$SCR/bench-$name/bench-table.md" "$OUT/$name-table.md" 2>/dev/null
	cat "$SCR/bench-$name/stdout" "$SCR/bench-$name/bench.log" | gzip >"$OUT/$name-raw.log.gz"
	grep -E '^\[t=|PLAN|interrupted|^FALL' "$SCR/bench-$name/stdout" | tail -40
}
TABLES=()
for step in "$@"; do
	case $step in
	kv | loader | tp | write | clients)
		if ((${#BASE_NAMES[@]})); then
			for i in "${!BASE_NAMES[@]}"; do
				bench "$step" "${BASE_NAMES[$i]}" "${BASE_PATHS[$i]}" "${GPU_BENCH_LIBS:-base ours}"
				TABLES+=("$step-${BASE_NAMES[$i]}")
			done
		else
			libs=${GPU_BENCH_LIBS:-"ours nv"}
			[ -n "$BASE" ] && libs=${GPU_BENCH_LIBS:-"nv base ours"}
			bench "$step" "" "$BASE" "$libs"
			TABLES+=("$step")
		fi
		;;
	memset)
		F=$SCR/bench.dat
		[ -s "$F" ] || "$BUILD/tools/gdsio" -Z -f "$F" -s 4G >/dev/null
		cat "$F" >/dev/null
		P=$SCR/read_after_memset
		cc -O2 -Iinclude -I"$CUDA_HOME/include" tests/gpu/read_after_memset.c -L"$NV_LIBDIR" -lcufile \
			-L"$CUDA_HOME/lib64/stubs" -lcuda -lpthread -o "$P" || { echo "memset: build failed"; continue; }
		{
			echo "# read_after_memset, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
			for lib in nv ours; do
				for shape in "16 64" "1 64" "16 1024"; do
					for mode in nosync sync; do
						if [ $lib = nv ]; then
							rm_me=$(udev_for "$F")
							echo "## NVIDIA ($NV_LIBDIR/libcufile.so.0): $shape $mode"
							# shellcheck disable=SC2086
							CUFILE_LOGFILE_PATH=$SCR/nv.log LD_LIBRARY_PATH="$NV_LIBDIR" timeout 60 "$P" "$F" $shape 3 $mode
							echo "exit $?"
							[ -n "$rm_me" ] && rm -f "$rm_me"
						else
							echo "## ours ($BUILD/libcufile.so.0): $shape $mode"
							# shellcheck disable=SC2086
							CUFILE_LOGFILE_PATH=$SCR/ours.log LD_PRELOAD="$BUILD/libcufile.so.0" timeout 60 "$P" "$F" $shape 3 $mode
							echo "exit $?"
						fi
					done
				done
			done
		} >"$OUT/memset.txt" 2>&1
		cat "$OUT/memset.txt"
		;;
	gdsio:*)
		F=$SCR/bench.dat
		[ -s "$F" ] || "$BUILD/tools/gdsio" -Z -f "$F" -s 4G >/dev/null
		cat "$F" >/dev/null
		sync "$F" # at rest: read-ahead does not read ranges with dirty pages
		IFS=, read -r -a a <<<"${step#gdsio:}"
		{
			echo "## gdsio ${a[*]}"
			CUFILE_LOGFILE_PATH=$SCR/ours.log LD_PRELOAD="$BUILD/libcufile.so.0" timeout 120 \
				"$BUILD/tools/gdsio" -f "$F" -s 4G "${a[@]}"
		} >>"$OUT/gdsio.txt" 2>&1
		tail -40 "$OUT/gdsio.txt"
		;;
	bisect:*:*)
		spec=${step#bisect:}
		mode=${spec%%:*}
		rows=${spec#*:}
		for b in ${OPENCUFILE_BASES:-$(ls "$ROOT/.carry/bases" 2>/dev/null)}; do
			lib=$ROOT/.carry/bases/$b/libcufile.so.0
			[ -f "$lib" ] || { echo "gpu-quick: bisect: no $lib"; continue; }
			d=$SCR/bisect-$mode-$b
			mkdir -p "$d"
			T1=$SECONDS
			OUT="$d" GPU_SCRATCH="$SCR" BUILD="$BUILD" OPENCUFILE_BASE_LIB="$lib" GPU_BENCH_LIBS="base ours" \
				GPU_BENCH_QUICK="$mode" GPU_BENCH_ONLY="${rows//,/ }" GPU_BENCH_BUDGET="${GPU_BISECT_BUDGET:-120}" \
				GPU_BENCH_COMMIT="${GPU_BENCH_COMMIT:-}" GPU_BENCH_KEEP=1 scripts/gpu-bench.sh >"$d/stdout" 2>&1
			echo "gpu-quick: bisect $mode base $b: exit $? in $((SECONDS - T1)) s"
			{
				echo "## base $(cat "$ROOT/.carry/bases/$b/COMMIT" 2>/dev/null || echo "$b"), mode $mode"
				# The rows' table: the first run of lines that start with '|'.
				awk '/^\|/ {t = 1; print; next} t {exit}' "$d/bench-table.md" 2>/dev/null
				echo
			} >>"$OUT/bisect.md"
			cat "$d/stdout" "$d/bench.log" 2>/dev/null | gzip >>"$OUT/bisect-raw.log.gz"
		done
		;;
	*)
		echo "gpu-quick: unknown step $step"
		;;
	esac
done
for t in ${TABLES[@]+"${TABLES[@]}"}; do
	[ -f "$OUT/$t-table.md" ] && cat "$OUT/$t-table.md"
done
[ -f "$OUT/bisect.md" ] && cat "$OUT/bisect.md"
exit 0
