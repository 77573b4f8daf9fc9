#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# gpu-bench.sh - one comparison run on the GPU machine: the hardware ceilings,
# then the workloads of the performance doc's targets table through NVIDIA's
# libcufile and ours, alternating, and one table at the end.
#
#   scripts/gpu-bench.sh            (repository root, after the build, as root)
#
# Method (docs/benchmarks.md): the same gdsio binary runs every workload; ours
# is loaded with LD_PRELOAD, NVIDIA's with LD_LIBRARY_PATH, and gdsio's banner
# is checked to be sure which one was mapped.  Per workload and library:
# repetition 0 runs with -V (every byte verified; also the warm-up), then
# GPU_BENCH_REPS timed repetitions alternate ours / NVIDIA's (order flipped
# each time); the table shows median (min-max) of the timed ones.  A library
# whose verified repetition fails is not timed further for that workload.
#
# NVIDIA's library refuses files on the VM's disk without udev data, so for
# its runs only, /run/udev/data/b<major>:<minor> is created for the scratch
# file's block device(s) and removed right after, restoring what was there.
#
# Environment (all optional):
#   BUILD=build-gpu  GDSIO=$BUILD/tools/gdsio  CEILINGS=$BUILD/bench/ceilings
#   OVERLAP=$BUILD/bench/overlap (the ovl_* workloads: I/O while a kernel runs)
#   OPENCUFILE_LIB=$BUILD/libcufile.so.0    NV_LIBDIR=/usr/local/cuda/targets/x86_64-linux/lib
#   OUT=./gpu-out  GPU_SCRATCH=./gpu-scratch (must be on the real disk, not tmpfs)
#   GPU_BENCH_REPS=3  GPU_BENCH_BUDGET=420 (seconds; later workloads are skipped
#   when it runs out)  GPU_BENCH_SIZE=4G  GPU_BENCH_COLD_SIZE=2G
#   GPU_BENCH_ONLY="w4g lat4k ..." (workload ids)  GPU_BENCH_LIBS="ours nv"
#   GPU_BENCH_KEEP=1 (keep the scratch files)
#   The sweep (id "sweep", last): threads x call size through every library,
#   alternating per thread count, each cell a fixed time (gdsio -S -T):
#   GPU_BENCH_SWEEP_THREADS=1,2,4,8,16,32,64  GPU_BENCH_SWEEP_SIZES=1M,4M,16M,64M
#   GPU_BENCH_SWEEP_BUDGET=150 (seconds, and never more than is left of
#   GPU_BENCH_BUDGET)  GPU_BENCH_SWEEP_CELL (seconds per cell; default: what
#   the budget allows, at most 3)  GPU_BENCH_SWEEP_ARGS="-x 0 -m 0 -b -N"
#   Output: $OUT/sweep.csv (lib,threads,size_mib,GBps,cpu_s_per_GB,status)
#   and $OUT/sweep.svg (scripts/sweep-chart.py).
#   GPU_BENCH_QUICK=loader: the loader comparison only (1, 8, 16 threads x
#   16 MiB registered and not, 16 x 1 MiB, 4 KiB latency, 256 async reads,
#   one 4 GiB call, the ceilings with the kernel's CPU cost) and the shapes
#   most programs issue (one thread x 1 MiB, sequential and random, and x 4
#   MiB; 4 threads x 256 KiB; 16 threads x 64 KiB; registered memory, each
#   thread its own buffer, with the separate-copy ceilings of those sizes),
#   and the shapes of client libraries that read through O_DIRECT handles
#   into unregistered memory (KvikIO): 8 and 4 threads x 4 MiB, one thread x
#   1 MiB at random offsets, 16 threads x 64 KiB, each beside the same shape
#   buffered and registered (ids ending _dio_ur against _r: the 0.95x
#   targets), and the thread pool's shape (gdsio -q: each read cut into 4
#   MiB pieces that the threads take from one queue, the next read when all
#   its pieces are done): 16 MiB reads on 4 and 8 threads, and the whole
#   data set as one read on 8 threads (pool4_16m pool8_16m pool8_4g), with
#   the staged ceilings of 4 MiB chunks beside them; each run
#   GPU_BENCH_QUICK_T seconds (0.6), 5 repetitions: about 4 minutes for two
#   libraries without the nine client-library rows, which take about as
#   long each as the others and come last (rows past GPU_BENCH_BUDGET are
#   skipped and named).
#   GPU_BENCH_QUICK=kv: the KV-cache rows only (batches of 128 x 64 KiB, 16
#   batches in flight from 4 threads, 128 x 1 MiB batches, 16 threads x 64
#   KiB and 1 MiB plain calls, reads and writes, the time from submit to the
#   last completion of 8 x 64 KiB beside one 64 KiB cuFileRead, and their
#   ceilings), each run GPU_BENCH_QUICK_T seconds (1), 3 repetitions.  The
#   batch rows come twice: "contiguous" (entries that follow each other in
#   the file use buffers that follow each other in memory, so a library may
#   merge them) and "scattered" (ids ending _sc; gdsio -R: file blocks at a
#   random permutation of offsets, buffers at a random permutation of the
#   slots of one registered pool, as a paged KV cache has them).
#   NVIDIA's library gives no result for 128-entry batches: those runs get
#   a short timeout (GPU_BENCH_KV_TIMEOUT, 8 s) and the row says so.
#   A third library "base" (LIBS="nv base ours", OPENCUFILE_BASE_LIB=path of
#   another libcufile.so.0 of ours, e.g. an earlier commit's) runs beside the
#   others, alternating, for before/after comparisons in one run.  The table
#   then has a column "fall": FALL where ours is below base beyond both
#   spreads (ours' best below base's worst: for times, ours' best above
#   base's worst), "rise" the other way round, "=" where the spreads meet;
#   the rows that fell are listed under the table.
#   GPU_BENCH_QUICK=clients: the shapes client libraries issue (each row
#   NVIDIA's library, the base and ours; its ceiling: 8 threads' pwrite into
#   new files, ceilings -t newfiles): KvikIO's pool fed by several threads
#   (gdsio -Q; O_DIRECT handles, unregistered device memory): 8 callers x
#   16 MiB reads in 4 MiB pieces on 8 threads and 16 callers x 64 KiB (one
#   piece each) on 8, beside the existing pool rows (pool8_16m: one caller's
#   16 MiB reads; pool8_4g: one 4 GiB read) and the 8 x 4 MiB and 16 x 64
#   KiB buffered registered rows (their 0.95x references); reads through an
#   O_DIRECT handle into unregistered memory of a 1 GiB file this process
#   wrote 1 s before (gdsio -Y) beside the same from the 4 GiB file at rest;
#   NIXL's GDS tests (gdsio -e, each entry its own new file and buffer,
#   registered, buffered fd): its default write, 250 entries of 10 MiB in
#   batches of up to 128 and the same through a pool of 8 cuFileWrite
#   threads (its GDS_MT backend); 16 x 2 MiB written then read, 5 rounds,
#   batches and pool (write and read GB/s on their own lines); its first
#   batch of writes, 4 x 1,000,001 bytes right after the registrations,
#   in GPU_BENCH_FIRST_PROCS fresh processes (20; median of their first
#   batches, and of the same batch later in the same processes); the batch
#   of 8 x 64 KiB latency rows of the kv mode with one 64 KiB read beside
#   them, and 256 async reads beside one thread's 16 MiB reads.
#   GPU_BENCH_QUICK_T seconds a run (0.4), 5 repetitions (3 for the 250-entry
#   and freshly-written rows: with 5 of each, two equal libraries still show
#   a fall on one row in about 250, so a fall is confirmed by a rerun);
#   NVIDIA's 128-entry batches get a short timeout
#   (GPU_BENCH_NIXL_TIMEOUT, 20 s: its setup of 250 files and buffers
#   included); NIXL's batches are collected as its GDS backend does, all
#   of a batch's entries with no timeout (GPU_BENCH_NIXL_WAIT=wait; poll:
#   as its earlier versions, never blocking).  About 8 minutes for three libraries (GPU_BENCH_BUDGET 480
#   by default here); rows past the budget are skipped and named.
#   GPU_BENCH_QUICK=write: the write rows only, through both libraries:
#   buffered cuFileWrite from registered device memory into a NEW file
#   (gdsio -n: made empty before each run) by 1 and 8 threads x 16 MiB, 16
#   threads x 1 MiB and x 64 KiB, a checkpoint save (one thread, a new 4 GiB
#   file as pieces of 1-64 MiB; again 16 GiB timed to the end of its fsync),
#   O_DIRECT writes of 1 and 8 threads x 16 MiB into a new file and 8 over
#   an existing 4 GiB one, the KV write rows (batches of 128 x 64 KiB
#   contiguous and scattered, 16 such batches in flight, 128 x 1 MiB
#   batches, 16 threads x 64 KiB and 1 MiB, over an existing file), and
#   torch.cuda.gds GdsFile.save_storage of 1 GiB in 16 MiB tensors
#   (tests/gpu/torch_save_bench.py; torch adds O_DIRECT); the ceilings of
#   bench/ceilings -t copy,writes,kvscatter beside them (kvscatter: 64 KiB
#   blocks at scattered places of a pool file by pwrite, stores and
#   O_DIRECT, with the bytes the device wrote for each).  2 repetitions.
#   GPU_BENCH_QUICK=tp: several processes, one per GPU (the tensor-parallel
#   loading shape): for each row, one gdsio per GPU (-d K, each its own warm
#   data file), all started together, the libraries alternating; per-process
#   and summed GB/s, CPU s/GB weighted by what each moved; 1 and 8 threads x
#   16 MiB and 16 threads x 1 MiB, one process alone for the 8-thread row,
#   and the 1- and 8-thread rows again with each process pinned (taskset) to
#   an equal share of the CPUs, where each process's logged CPU budget is
#   recorded.  GPU_BENCH_TP_GPUS overrides the number of GPUs (default:
#   nvidia-smi's count; 1 without it); any number works, 1 included.
#   GPU_BENCH_DRYRUN=1: tiny sizes, one repetition, ours only, no cache drops,
#   no udev changes, quick ceilings (ceilings -q) - to check the script's logic
#   on a machine without a GPU
#   (set OPENCUFILE_LIBCUDA to tests/fakecuda's libcuda.so.1 there).
#
# The plan check: before a workload runs, its row is checked - a warm row
# (every id but those in COLD_ROWS) must not drop the page cache, a cold row
# must, and every run needs a time limit of at least one second.  Each row's
# intended cache drop and limit is logged ("plan: ..."), also in a dry run,
# where nothing is dropped.  A row that fails the check is not run (status
# plan_error) and the script exits 4 at the end, so a mistake in the list
# is caught by the dry run before a GPU minute is spent
# (tests/test_gpu_bench_dry_run_checks_the_plan.sh).
#
# Which tree was measured: the tree often arrives on the GPU machine as a
# copy of a working tree whose .git is absent or stale, so the commit is
# taken from, in order: GPU_BENCH_COMMIT; a file COMMIT at the repository
# root, written by whoever sends the tree (e.g. `git describe --always
# --dirty > COMMIT`; an untracked file travels with the tree); `git
# describe --always --dirty` only when .git is there and its HEAD holds this
# very src/; else "unknown".  Every report also prints a hash of src/ (file
# names and contents) that anyone can recompute from a checkout:
#   find src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
#
# Output: compact progress and the final markdown table on stdout (also in
# $OUT/bench-table.md); every gdsio and ceilings output in $OUT/bench.log
# ($OUT/bench-raw.log when stdout already goes to $OUT/bench.log, as under
# scripts/gpu-check.sh).  Exit status 0, 2 when the run could not start, 4 when a
# row failed the plan check (below).

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2

T0=$SECONDS
BUILD=${BUILD:-$ROOT/build-gpu}
GDSIO=${GDSIO:-$BUILD/tools/gdsio}
CEILINGS=${CEILINGS:-$BUILD/bench/ceilings}
GDSCHECK=${GDSCHECK:-$BUILD/tools/gdscheck}
OVERLAP=${OVERLAP:-$BUILD/bench/overlap}
PROG=$GDSIO # what run_gdsio runs: gdsio, or bench/overlap for the ovl_* workloads
OURLIB=${OPENCUFILE_LIB:-$BUILD/libcufile.so.0}
NV_LIBDIR=${NV_LIBDIR:-/usr/local/cuda/targets/x86_64-linux/lib}
OUT=${OUT:-$ROOT/gpu-out}
SCRATCH=${GPU_SCRATCH:-$ROOT/gpu-scratch}
REPS=${GPU_BENCH_REPS:-3}
BUDGET=${GPU_BENCH_BUDGET:-420}
SIZE=${GPU_BENCH_SIZE:-4G}
COLD=${GPU_BENCH_COLD_SIZE:-2G}
ONLY=${GPU_BENCH_ONLY:-}
LIBS=${GPU_BENCH_LIBS:-ours nv}
DRY=${GPU_BENCH_DRYRUN:-0}
KEEP=${GPU_BENCH_KEEP:-0}
SW_THREADS=${GPU_BENCH_SWEEP_THREADS:-1,2,4,8,16,32,64}
SW_SIZES=${GPU_BENCH_SWEEP_SIZES:-1M,4M,16M,64M}
SW_BUDGET=${GPU_BENCH_SWEEP_BUDGET:-150}
SW_CELL=${GPU_BENCH_SWEEP_CELL:-}
SW_ARGS=${GPU_BENCH_SWEEP_ARGS:--x 0 -m 0 -b -N}
LATT=2          # seconds of 4 KiB random reads per repetition
BATCHSZ=1G      # data set of the batch workloads
DROP=1
QUICK=${GPU_BENCH_QUICK:-}
QT=${GPU_BENCH_QUICK_T:-0.6}
BASELIB=${OPENCUFILE_BASE_LIB:-}
TQ=() # -T for the quick mode's timed rows
if [ "$QUICK" = loader ]; then
	ONLY=${GPU_BENCH_ONLY:-"ceilings t1_1m_r t1_1m_rr t1_4m_r t1_16m t1_16m_r t4_256k_r t16_64k_r t8_16m t8_16m_ur t16_16m_sh t16_1m t16_1m_r lat4k lat4k_r async256 w4g t8_4m_r t8_4m_dio_ur t4_4m_r t4_4m_dio_ur t1_1m_rr_dio_ur t16_64k_dio_ur pool4_16m pool8_16m pool8_4g"}
	REPS=${GPU_BENCH_REPS:-5}
	TQ=(-T "$QT")
	LATT=1
elif [ "$QUICK" = tp ]; then
	ONLY=${GPU_BENCH_ONLY:-"tp_t1_16m tp_t8_16m_alone tp_t8_16m tp_t16_1m tp_t1_16m_pin tp_t8_16m_pin"}
	REPS=${GPU_BENCH_REPS:-3}
	QT=${GPU_BENCH_QUICK_T:-1}
elif [ "$QUICK" = write ]; then
	ONLY=${GPU_BENCH_ONLY:-"ceilings wr_t1_16m wr_t8_16m wr_t16_1m wr_t16_64k wr_ckpt wr_dio_t1 wr_dio_t8 wr_dio_t8_ow kv_b128_64k_wr kv_b128_64k_wr_sc kv_16b_wait_wr kv_16b_wait_wr_sc kv_b128_1m_wr kv_t16_64k_wr kv_t16_1m_wr torch_save wr_ckpt_sync"}
	REPS=${GPU_BENCH_REPS:-2}
	QT=${GPU_BENCH_QUICK_T:-1}
	TQ=(-T "$QT")
elif [ "$QUICK" = clients ]; then
	ONLY=${GPU_BENCH_ONLY:-"ceilings t16_64k_r t1_16m async256 t8_4m_r t8_4m_dio_ur pool8_16m pool8_4g cl_pool_c8_16m cl_pool_c16_64k kv_lat_b8 kv_lat_b8_sc kv_lat_64k nixl_b16x5 nixl_mt16x5 nixl_first nixl_b250 nixl_mt250 cl_fresh_dio_ur"}
	REPS=${GPU_BENCH_REPS:-5}
	QT=${GPU_BENCH_QUICK_T:-0.4}
	BUDGET=${GPU_BENCH_BUDGET:-480}
	TQ=(-T "$QT")
	LATT=1
elif [ "$QUICK" = kv ]; then
	ONLY=${GPU_BENCH_ONLY:-"ceilings kv_b128_64k_rd kv_b128_64k_rd_sc kv_b128_64k_wr kv_b128_64k_wr_sc kv_16b_wait_rd kv_16b_wait_rd_sc kv_16b_poll_rd kv_16b_poll_rd_sc kv_16b_wait_wr kv_b128_1m_rd kv_b128_1m_rd_sc kv_b128_1m_wr kv_t16_64k_rd kv_t16_64k_wr kv_t16_1m_rd kv_t16_1m_wr kv_lat_b8 kv_lat_b8_sc kv_lat_64k"}
	REPS=${GPU_BENCH_REPS:-3}
	QT=${GPU_BENCH_QUICK_T:-1}
	TQ=(-T "$QT")
	LATT=1
fi
# The clients mode's files and counts: a freshly written file (gdsio -Y),
# NIXL's entries (gdsio -e, in their own directory), the processes of the
# first-batch row.
FRESHSZ=1G FRESHWAIT=1 NXIO=10M FIRSTPROCS=${GPU_BENCH_FIRST_PROCS:-20} HEAVYREPS=3
if [ "$DRY" = 1 ]; then
	SIZE=${GPU_BENCH_SIZE:-128M} COLD=${GPU_BENCH_COLD_SIZE:-32M} REPS=${GPU_BENCH_REPS:-1}
	LIBS=${GPU_BENCH_LIBS:-ours} LATT=0.3 BATCHSZ=$SIZE DROP=0
	FRESHSZ=32M FRESHWAIT=0.2 NXIO=64K FIRSTPROCS=${GPU_BENCH_FIRST_PROCS:-2} HEAVYREPS=$REPS
fi

mkdir -p "$OUT" "$SCRATCH" || exit 2
OUT=$(cd "$OUT" && pwd)
SCRATCH=$(cd "$SCRATCH" && pwd)
RAW=$OUT/bench.log
if [ "$(readlink -f /proc/$$/fd/1 2>/dev/null)" = "$(readlink -f "$RAW")" ]; then
	RAW=$OUT/bench-raw.log
fi
: >"$RAW"
TABLE=$OUT/bench-table.md
SWEEP_CSV=$OUT/sweep.csv
SWEEP_SVG=$OUT/sweep.svg
DATA=$SCRATCH/bench.dat
WDATA=$SCRATCH/bench-write.dat
WNEW=$SCRATCH/bench-new.dat # the write mode's new files (gdsio -n)
FRESHF=$SCRATCH/bench-fresh.dat # the clients mode's freshly written file (gdsio -Y)
NXDIR=$SCRATCH/nixl # the clients mode's entries (gdsio -e), removed by gdsio at its end
WSIZE=${GPU_BENCH_WRITE_SIZE:-2G} # the write mode's new files, and its ceilings' files
CKPT=4G CKPT_SYNC=16G W64K=1G
[ "$DRY" = 1 ] && WSIZE=${GPU_BENCH_WRITE_SIZE:-128M} CKPT=128M CKPT_SYNC=128M W64K=32M
RUNOUT=$SCRATCH/run.out

# The commit and src/ hash the reports name (see the header).
tree_commit() {
	local c
	if [ -n "${GPU_BENCH_COMMIT:-}" ]; then
		echo "$GPU_BENCH_COMMIT"
	elif [ -s "$ROOT/COMMIT" ]; then
		head -c 64 "$ROOT/COMMIT" | head -1 | tr -cd 'A-Za-z0-9._+-'
	elif [ -e "$ROOT/.git" ] && c=$(git -C "$ROOT" describe --always --dirty 2>/dev/null) &&
		[ "$(git -C "$ROOT" rev-parse --show-toplevel 2>/dev/null)" = "$ROOT" ] &&
		git -C "$ROOT" diff --quiet HEAD -- src 2>/dev/null &&
		[ -z "$(git -C "$ROOT" ls-files --others --exclude-standard -- src 2>/dev/null)" ]; then
		echo "$c"
	else
		echo unknown
	fi
}
src_hash() {
	(cd "$ROOT" && find src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}
TREE_ID="commit $(tree_commit), src $(src_hash)"

elapsed() { echo $((SECONDS - T0)); }
left() { echo $((BUDGET - (SECONDS - T0))); }
log() { printf '%s\n' "$*" >>"$RAW"; }
say() { printf '%s\n' "$*"; printf '%s\n' "$*" >>"$RAW"; }

# bytes of a size with a K/M/G suffix
bytes() {
	local v=${1%[KkMmGg]} s=${1: -1}
	case $s in K|k) echo $((v << 10)) ;; M|m) echo $((v << 20)) ;; G|g) echo $((v << 30)) ;; *) echo "$1" ;; esac
}

for f in "$GDSIO" "$CEILINGS"; do
	[ -x "$f" ] || { say "gpu-bench: $f not built"; exit 2; }
done
[ -e "$OURLIB" ] || { say "gpu-bench: our library $OURLIB not found"; exit 2; }
OURREAL=$(readlink -f "$OURLIB")
BASEREAL=""
case " $LIBS " in *" base "*)
	if [ -n "$BASELIB" ] && [ -e "$BASELIB" ]; then
		BASEREAL=$(readlink -f "$BASELIB")
	else
		say "gpu-bench: LIBS names base but OPENCUFILE_BASE_LIB ($BASELIB) is not a file: base not run"
		LIBS=$(echo " $LIBS " | sed 's/ base / /; s/^ *//; s/ *$//')
	fi ;;
esac
NVREAL=$(readlink -f "$NV_LIBDIR" 2>/dev/null || echo "$NV_LIBDIR")
case " $LIBS " in *" nv "*)
	if [ ! -e "$NV_LIBDIR/libcufile.so.0" ]; then
		say "gpu-bench: NVIDIA's libcufile.so.0 not in $NV_LIBDIR: ours only"
		LIBS=ours
	fi ;;
esac
fstype=$(stat -f -c %T "$SCRATCH" 2>/dev/null)
[ "$fstype" = tmpfs ] && say "gpu-bench: WARNING: $SCRATCH is on tmpfs: cold and O_DIRECT figures are meaningless"

# ------------------------------------------------------------- udev shim
# Block devices NVIDIA's library may look up for the scratch directory.
devnums() {
	local dev src pk
	{
		dev=$(stat -c '%d' "$SCRATCH" 2>/dev/null)
		[ -n "$dev" ] && echo "$(((dev >> 8) & 0xfff | ((dev >> 32) & ~0xfff))):$(((dev & 0xff) | ((dev >> 12) & ~0xff)))"
		findmnt -n -o MAJ:MIN --target "$SCRATCH" 2>/dev/null
		src=$(findmnt -n -o SOURCE --target "$SCRATCH" 2>/dev/null)
		if [ -n "$src" ] && [ -b "$src" ]; then
			lsblk -dno MAJ:MIN "$src" 2>/dev/null
			pk=$(lsblk -dno PKNAME "$src" 2>/dev/null | tr -d ' ')
			[ -n "$pk" ] && lsblk -dno MAJ:MIN "/dev/$pk" 2>/dev/null
		fi
	} | tr -d ' ' | grep -E '^[0-9]+:[0-9]+$' | awk '!seen[$0]++'
}
DEVNUMS=$(devnums | tr '\n' ' ')
[ -n "$DEVNUMS" ] || DEVNUMS="254:0"
UDEV_FILES=()
UDEV_NOTE=""
UDEV_MADE_RUN=0
UDEV_MADE_DATA=0
udev_on() {
	[ "$DRY" = 1 ] && return
	UDEV_FILES=() UDEV_MADE_RUN=0 UDEV_MADE_DATA=0
	[ -d /run/udev ] || UDEV_MADE_RUN=1
	[ -d /run/udev/data ] || UDEV_MADE_DATA=1
	mkdir -p /run/udev/data 2>/dev/null || return
	local mm f
	for mm in $DEVNUMS; do
		f=/run/udev/data/b$mm
		if [ ! -e "$f" ] && printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n' >"$f" 2>/dev/null; then
			UDEV_FILES+=("$f")
		fi
	done
}
udev_off() {
	local f
	for f in "${UDEV_FILES[@]}"; do rm -f "$f"; done
	UDEV_FILES=()
	((UDEV_MADE_DATA)) && rmdir /run/udev/data 2>/dev/null
	((UDEV_MADE_RUN)) && rmdir /run/udev 2>/dev/null
	UDEV_MADE_RUN=0 UDEV_MADE_DATA=0
}

DROP_NOTE=""
drop_caches() {
	sync
	((DROP)) || return 0
	if ! { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
		DROP_NOTE="page cache could not be dropped (not root?): cold figures are not cold"
	fi
}

# ------------------------------------------------------------- running
CHILD=""
CREATED=()
# Declared empty (=()): under set -u an associative array declared without
# a value counts as unset, and reading ${#PIN[@]} would stop the script.
declare -A V=() ST=() VF=() CEIL=() PIN=()
# V[id|lib|metric]="v1 v2 ..."  ST[id|lib]=first bad status  VF[id|lib]=verify result

# launch LIB TIMEOUT ARGS... : $PROG through library LIB, output in $RUNOUT.
launch() {
	local lib=$1 tmo=$2 rc
	shift 2
	local args=("$@")
	if [ "$lib" = nv ]; then
		udev_on
		timeout -k 3 "$tmo" env -u LD_PRELOAD LD_LIBRARY_PATH="$NV_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			CUFILE_LOGFILE_PATH="$OUT/cufile-nvidia.log" "$PROG" "${args[@]}" >"$RUNOUT" 2>&1 &
	elif [ "$lib" = base ]; then
		timeout -k 3 "$tmo" env LD_PRELOAD="$BASEREAL" CUFILE_LOGFILE_PATH="$OUT/cufile-base.log" \
			"$PROG" "${args[@]}" >"$RUNOUT" 2>&1 &
	else
		rm -f "$OUT/ours-stats.bin"
		timeout -k 3 "$tmo" env LD_PRELOAD="$OURREAL" CUFILE_LOGFILE_PATH="$OUT/cufile-ours.log" \
			OPENCUFILE_STATS_FILE="$OUT/ours-stats.bin" "$PROG" "${args[@]}" >"$RUNOUT" 2>&1 &
	fi
	CHILD=$!
	wait "$CHILD"
	rc=$?
	CHILD=""
	UDEV_NOTE=""
	[ "$lib" = nv ] && UDEV_NOTE="udev data written: ${UDEV_FILES[*]:-none}" && udev_off
	return $rc
}

# right_library LIB : "" when $RUNOUT's banner names the intended library.
right_library() {
	local libline want
	libline=$(grep -m1 -E '^# [a-z]+: cuFile library' "$RUNOUT")
	[ -n "$libline" ] || return 0
	case $1 in
	ours) want="mapped: 1: $OURREAL)" ;;
	base) want="mapped: 1: $BASEREAL)" ;;
	*) want="mapped: 1: $NVREAL/" ;;
	esac
	case $libline in *"$want"*) ;; *) echo WRONG_LIBRARY; log "!!! expected $want in: $libline" ;; esac
}

# run_gdsio ID LIB REP COLD TIMEOUT ARGS... : one gdsio process, recorded.
run_gdsio() {
	local id=$1 lib=$2 rep=$3 cold=$4 tmo=$5 rc st v
	shift 5
	local args=("$@")
	((rep == 0)) && args+=(-V)
	((cold)) && drop_caches
	local t
	t=$(left)
	((t < 5)) && t=5
	((tmo > t)) && tmo=$t
	launch "$lib" "$tmo" "${args[@]}"
	rc=$?
	# Ours writes its pinned staging memory (peak, bound) at driver close.
	if [ "$lib" = ours ] && [ -x "$GDSCHECK" ] && [ -f "$OUT/ours-stats.bin" ]; then
		local pin
		pin=$("$GDSCHECK" -s "$OUT/ours-stats.bin" 2>/dev/null | awk '/pinned staging memory/ {print $8, $11}')
		[ -n "$pin" ] && PIN[$id]="$pin"
	fi
	{
		echo "### [t=$(elapsed)s] $id $lib rep=$rep rc=$rc: $(basename "$PROG") ${args[*]}${UDEV_NOTE:+ ($UDEV_NOTE)}"
		cat "$RUNOUT"
	} >>"$RAW"
	st=$(awk '/^Extra:/ {for (i = 1; i <= NF; i++) if ($i == "Status:") print $(i + 1)}' "$RUNOUT" | sort -u |
		grep -v '^ok$' | head -1)
	[ -z "$st" ] && ! grep -q '^Extra:.*Status: ok' "$RUNOUT" && st=no_result
	case $rc in
	0) ;;
	3) st=not_supported ;;
	124 | 137) st=hang ;;
	*) [ -z "$st" ] && st="rc=$rc" ;;
	esac
	# Which libcufile did it really load?
	v=$(right_library "$lib")
	[ -n "$v" ] && st=$v
	if ((rep == 0)); then
		if grep -q 'Verify: PASS' "$RUNOUT" && [ -z "$st" ]; then VF[$id|$lib]=PASS; else VF[$id|$lib]="FAIL${st:+($st)}"; fi
	fi
	if [ -n "$st" ]; then
		[ -z "${ST[$id|$lib]:-}" ] && ST[$id|$lib]=$st
		return 1
	fi
	((rep == 0)) && return 0
	# The first value after each "name:" of the Extra lines, read in one pass
	# (an awk per metric cost seconds of a dry run).
	local -A ex=()
	local k
	# A line of gdsio -e's read phase ("phase: read") gives its figures as
	# read_<name>, beside the write phase's.
	while read -r k v; do [ -n "${ex[$k]+set}" ] || ex[$k]=$v; done < <(awk '/^Extra:/ {p = / phase: read/ ? "read_" : ""; for (i = 1; i <= NF; i++) if ($i ~ /.:$/) print p $i, $(i + 1)}' "$RUNOUT")
	for m in GB_per_sec p50_usecs p99_usecs CPU_sec_per_GB overlap io_GB_per_sec io_GB_per_sec_with_kernel \
		batch_avg_usecs batch_p50_usecs batch_p99_usecs request_avg_usecs request_p99_usecs \
		read_GB_per_sec read_CPU_sec_per_GB first_round_usecs later_round_usecs; do
		V[$id|$lib|$m]="${V[$id|$lib|$m]:-} ${ex[$m:]:-}"
	done
	v=$(sed -n 's/.*Avg_Latency: \([0-9.]*\) usecs.*/\1/p' "$RUNOUT" | head -1)
	V[$id|$lib|avg_usecs]="${V[$id|$lib|avg_usecs]:-} $v"
	return 0
}

# median min max of a list of numbers ("" if empty); one awk that sorts the
# few values itself (the table calls this hundreds of times)
stats() {
	printf '%s\n' $1 | awk '/^[0-9.]+$/ {v = $1 + 0; i = n++; while (i > 0 && a[i] + 0 > v) {a[i + 1] = a[i]; i--} a[i + 1] = $1}
		END {if (!n) exit; m = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2; print m, a[1], a[n]}'
}

wanted() {
	[ -z "$ONLY" ] && return 0
	case " $ONLY " in *" $1 "*) return 0 ;; esac
	return 1
}

SKIPPED=()
# The rows that read a cold file: the page cache is dropped before each of
# their runs.  Every other row is warm.
COLD_ROWS="cold_buf cold_dio"
PLAN_ERRORS=0
# plan_ok ID COLD TIMEOUT: log the row's plan; 1 (and a PLAN ERROR line)
# when it would drop the cache of a warm row, not drop it for a cold one, or
# run without a time limit.
plan_ok() {
	local id=$1 cold=$2 tmo=$3 err="" want=0
	case " $COLD_ROWS " in *" $id "*) want=1 ;; esac
	[[ $cold =~ ^[01]$ ]] || err+=" cold must be 0 or 1, got '$cold';"
	[[ $tmo =~ ^[0-9]+$ ]] && ((tmo >= 1)) || err+=" time limit must be >= 1 s, got '$tmo';"
	if [ -z "$err" ] && ((cold != want)); then
		((want)) && err+=" a cold row that would not drop the page cache;" ||
			err+=" a warm row that would drop the page cache before each run;"
	fi
	say "plan: $id $( ((want)) && echo cold || echo warm) drop_cache=$( [ "$cold" = 1 ] && echo yes || echo no)$( ((DROP)) || echo ' (dry run: not done)') limit=${tmo}s"
	if [ -n "$err" ]; then
		say "PLAN ERROR: $id:$err not run"
		PLAN_ERRORS=1
		return 1
	fi
	return 0
}

# workload ID COLD TIMEOUT MIN_SECONDS_LEFT ARGS...
workload() {
	local id=$1 cold=$2 tmo=$3 need=$4 lib r line
	shift 4
	wanted "$id" || return 0
	if ! plan_ok "$id" "$cold" "$tmo"; then
		for lib in $LIBS; do ST[$id|$lib]=plan_error; done
		return 0
	fi
	if (($(left) < need)); then
		SKIPPED+=("$id")
		say "[t=$(elapsed)s] $id: skipped, ${need}s needed, $(left)s left of the budget"
		return 0
	fi
	local -A dead=()
	for lib in $LIBS; do
		run_gdsio "$id" "$lib" 0 "$cold" "$tmo" "$@" || dead[$lib]=1
	done
	for ((r = 1; r <= REPS; r++)); do
		local order=$LIBS
		((r % 2 == 0)) && order=$(echo "$LIBS" | awk '{for (i = NF; i >= 1; i--) printf "%s%s", $i, (i > 1 ? " " : "")}')
		for lib in $order; do
			[ -n "${dead[$lib]:-}" ] && continue
			(($(left) < 3)) && break 2
			run_gdsio "$id" "$lib" "$r" "$cold" "$tmo" "$@" || dead[$lib]=1
		done
	done
	line="[t=$(elapsed)s] $id:"
	for lib in $LIBS; do
		line+=" $lib ${VF[$id|$lib]:-?}"
		[ -n "${ST[$id|$lib]:-}" ] && line+="/${ST[$id|$lib]}"
		line+=" [$(echo ${V[$id|$lib|GB_per_sec]:-} | tr ' ' ',')]"
	done
	say "$line"
}

drvopen() {
	local id=drvopen lib r v
	wanted $id || return 0
	for ((r = 1; r <= REPS; r++)); do
		for lib in $LIBS; do
			(($(left) < 5)) && { SKIPPED+=("$id"); return 0; }
			if [ "$lib" = nv ]; then
				udev_on
				timeout -k 3 30 env -u LD_PRELOAD LD_LIBRARY_PATH="$NV_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
					CUFILE_LOGFILE_PATH="$OUT/cufile-nvidia.log" "$GDSIO" -L 5 >"$RUNOUT" 2>&1 &
			else
				local lp=$OURREAL
				[ "$lib" = base ] && lp=$BASEREAL
				timeout -k 3 30 env LD_PRELOAD="$lp" CUFILE_LOGFILE_PATH="$OUT/cufile-$lib.log" \
					"$GDSIO" -L 5 >"$RUNOUT" 2>&1 &
			fi
			CHILD=$!
			wait "$CHILD"
			CHILD=""
			[ "$lib" = nv ] && udev_off
			{ echo "### [t=$(elapsed)s] drvopen $lib rep=$r"; cat "$RUNOUT"; } >>"$RAW"
			v=$(sed -n 's/.* first \([0-9.]*\) ms.*/\1/p' "$RUNOUT" | head -1)
			if [ -n "$v" ]; then
				V[$id|$lib|first_ms]="${V[$id|$lib|first_ms]:-} $v"
				VF[$id|$lib]=PASS
			else
				ST[$id|$lib]=fail
			fi
		done
	done
	say "[t=$(elapsed)s] drvopen: ours [${V[drvopen|ours|first_ms]:-}] base [${V[drvopen|base|first_ms]:-}] nv [${V[drvopen|nv|first_ms]:-}] ms"
}

ceilings() {
	local args=("$@")
	((DROP)) || args+=(-n)
	[ "$DRY" = 1 ] && args+=(-q) # small, short copies: the dry run checks the logic, not the figures
	timeout -k 3 "$(($(left) > 20 ? $(left) : 20))" "$CEILINGS" "${args[@]}" >"$RUNOUT" 2>&1 &
	CHILD=$!
	wait "$CHILD"
	CHILD=""
	{ echo "### [t=$(elapsed)s] ceilings ${args[*]}"; cat "$RUNOUT"; } >>"$RAW"
	local name val unit
	while read -r _ name val unit; do
		CEIL[$name]="$val $unit"
	done < <(grep '^ceiling ' "$RUNOUT")
	say "[t=$(elapsed)s] ceilings $(grep -c '^ceiling ' "$RUNOUT") measured ($*)"
}

# sweep: gdsio -S over SW_THREADS x SW_SIZES, one invocation per thread count
# and library (libraries alternating, order flipped each thread count), each
# cell -T seconds; rows appended to $SWEEP_CSV.
sweep() {
	wanted sweep || return 0
	local nt ns nl budget cell tmo lib order T i=0 st gpu
	nt=$(tr ',' '\n' <<<"$SW_THREADS" | grep -c .)
	ns=$(tr ',' '\n' <<<"$SW_SIZES" | grep -c .)
	nl=$(wc -w <<<"$LIBS")
	budget=$SW_BUDGET
	(($(left) - 10 < budget)) && budget=$(($(left) - 10))
	# A cell costs its -T plus about 0.5 s of setup (buffers, threads), an
	# invocation about 1.5 s more (process, driver open).
	cell=${SW_CELL:-$(awk -v b="$budget" -v c=$((nt * ns * nl)) -v n=$((nt * nl)) \
		'BEGIN {x = (b - 1.5 * n) / c - 0.5; if (x > 3) x = 3; printf "%.2f", x}')}
	if awk -v x="$cell" 'BEGIN {exit !(x < 0.2)}'; then
		SKIPPED+=(sweep)
		say "[t=$(elapsed)s] sweep: skipped, ${budget}s of budget is too little for $((nt * ns * nl)) cells"
		return 0
	fi
	say "[t=$(elapsed)s] sweep: threads $SW_THREADS x sizes $SW_SIZES x [$LIBS], ${cell}s per cell, budget ${budget}s"
	gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
	# The cold workloads dropped the cache: warm the file again (CPU only).
	env LD_PRELOAD="$OURREAL" "$GDSIO" -f "$DATA" -s "$SIZE" -x 1 -m 3 -N -w 16 -i 1M >>"$RAW" 2>&1
	{
		echo "# sweep: $(date -u '+%Y-%m-%d %H:%M UTC'), $TREE_ID, ${gpu:-no GPU (dry run?)}, gdsio $SW_ARGS, data set $SIZE, ${cell}s per cell"
		echo "lib,threads,size_mib,GBps,cpu_s_per_GB,status"
	} >"$SWEEP_CSV"
	local T0S=$SECONDS
	for T in ${SW_THREADS//,/ }; do
		order=$LIBS
		((i++ % 2)) && order=$(echo "$LIBS" | awk '{for (i = NF; i >= 1; i--) printf "%s%s", $i, (i > 1 ? " " : "")}')
		for lib in $order; do
			tmo=$(awk -v n="$ns" -v c="$cell" 'BEGIN {printf "%d", n * (c + 5) + 30}')
			if (($(left) < 10 || SECONDS - T0S > budget)); then
				SKIPPED+=("sweep(from $T threads)")
				say "[t=$(elapsed)s] sweep: out of time at $T threads"
				break 2
			fi
			rm -f "$SCRATCH/sweep-part.csv"
			# shellcheck disable=SC2086 # SW_ARGS is a list of options
			launch "$lib" "$tmo" -f "$DATA" -s "$SIZE" $SW_ARGS -S -w "$T" -i "$SW_SIZES" -T "$cell" \
				-C "$SCRATCH/sweep-part.csv"
			st=$?
			{
				echo "### [t=$(elapsed)s] sweep $lib rc=$st: threads $T sizes $SW_SIZES"
				cat "$RUNOUT"
			} >>"$RAW"
			st=$(right_library "$lib")
			[ -f "$SCRATCH/sweep-part.csv" ] &&
				awk -F, -v lib="$lib" -v bad="$st" 'NR > 1 {printf "%s,%s,%g,%s,%s,%s\n", lib, $4, $5 / 1048576, $9, $14, bad != "" ? bad : $15}' \
					"$SCRATCH/sweep-part.csv" >>"$SWEEP_CSV"
		done
	done
	rm -f "$SCRATCH/sweep-part.csv"
	say "[t=$(elapsed)s] sweep: $(($(wc -l <"$SWEEP_CSV") - 2)) cells in $SWEEP_CSV"
	if python3 "$ROOT/scripts/sweep-chart.py" "$SWEEP_CSV" "$SWEEP_SVG" >>"$RAW" 2>&1; then
		say "[t=$(elapsed)s] sweep: chart $SWEEP_SVG"
	else
		say "[t=$(elapsed)s] sweep: chart failed (see $RAW)"
	fi
}

# The sweep as markdown: per library a grid of GB/s (CPU s/GB), and the
# target "no cell at or above 4 MiB below 0.8x the sweep's best".
sweep_table() {
	[ -s "$SWEEP_CSV" ] && [ "$(wc -l <"$SWEEP_CSV")" -gt 2 ] || return 0
	echo
	echo "Sweep ($(sed -n '1s/^# sweep: //p' "$SWEEP_CSV")): GB/s (CPU s/GB) per threads x call size"
	awk -F, 'NR > 2 {
		if (!(($1) in seenlib)) { seenlib[$1] = 1; libs[++nl] = $1 }
		if (!(($2) in seent)) { seent[$2] = 1; ts[++nt] = $2 }
		if (!(($3) in seens)) { seens[$3] = 1; ss[++ns] = $3 }
		k = $1 SUBSEP $2 SUBSEP $3
		if ($6 == "ok") { v[k] = $4; c[k] = $5; if ($4 > best[$1]) best[$1] = $4 } else v[k] = $6
	} END {
		for (l = 1; l <= nl; l++) {
			lib = libs[l]; low = 0; lows = ""
			printf "\n%s (best %.1f GB/s)\n\n| threads |", lib, best[lib]
			for (j = 1; j <= ns; j++) printf " %g MiB |", ss[j]
			printf "\n| --- |"; for (j = 1; j <= ns; j++) printf " --- |"; printf "\n"
			for (i = 1; i <= nt; i++) {
				printf "| %s |", ts[i]
				for (j = 1; j <= ns; j++) {
					k = lib SUBSEP ts[i] SUBSEP ss[j]
					if (!(k in v)) printf " - |"
					else if (k in c) {
						printf " %.1f (%.2f) |", v[k], c[k]
						if (ss[j] >= 4 && v[k] < 0.8 * best[lib]) { low++; lows = lows " " ts[i] "x" ss[j] "M" }
					} else printf " %s |", v[k]
				}
				printf "\n"
			}
			printf "\ncells >= 4 MiB below 0.8x the best: %d%s\n", low, low ? " (" substr(lows, 2) ")" : ""
		}
	}' "$SWEEP_CSV"
	echo
	echo "Sweep data: $SWEEP_CSV, chart: $SWEEP_SVG"
}

# ------------------------------------------------------------- several processes
TPN=${GPU_BENCH_TP_GPUS:-}
if [ -z "$TPN" ]; then
	TPN=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
	((TPN >= 1)) || TPN=1
fi
declare -A TPBUDGET=()
# tp_cpus K N: the CPU list of process K of N for the pinned rows.
tp_cpus() {
	local k=$1 n=$2 c share
	c=$(nproc)
	share=$((c / n))
	((share >= 1)) || share=1
	echo "$((k * share % c))-$(((k * share % c) + share - 1))"
}
# tp_run ID LIB REP PIN ARGS...: one gdsio per GPU at once; records the sum.
tp_run() {
	local id=$1 lib=$2 rep=$3 pin=$4 k n=$TPN st="" sum=0 cpuw=0 pids=() v c b
	shift 4
	local args=("$@")
	((rep == 0)) && args+=(-V)
	case $id in *_alone) n=1 ;; esac
	[ "$lib" = nv ] && udev_on
	for ((k = 0; k < n; k++)); do
		local pre=() envs=(CUFILE_LOGFILE_PATH="$SCRATCH/tp-$lib-$k.log")
		((pin)) && pre=(taskset -c "$(tp_cpus "$k" "$n")")
		rm -f "$SCRATCH/tp-$lib-$k.log"
		if [ "$lib" = nv ]; then
			envs+=(LD_LIBRARY_PATH="$NV_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
			timeout -k 3 60 "${pre[@]}" env -u LD_PRELOAD "${envs[@]}" "$GDSIO" -d "$k" -f "$SCRATCH/tp-$k.dat" \
				"${args[@]}" >"$SCRATCH/tp-$k.out" 2>&1 &
		else
			local lp=$OURREAL
			[ "$lib" = base ] && lp=$BASEREAL
			timeout -k 3 60 "${pre[@]}" env LD_PRELOAD="$lp" CUFILE_LOGGING_LEVEL=INFO "${envs[@]}" "$GDSIO" \
				-d "$k" -f "$SCRATCH/tp-$k.dat" "${args[@]}" >"$SCRATCH/tp-$k.out" 2>&1 &
		fi
		pids+=($!)
	done
	for k in "${!pids[@]}"; do wait "${pids[$k]}" || st="rc=$?"; done
	[ "$lib" = nv ] && udev_off
	for ((k = 0; k < n; k++)); do
		RUNOUT=$SCRATCH/tp-$k.out
		{
			echo "### [t=$(elapsed)s] $id $lib rep=$rep process $k of $n$( ((pin)) && echo " pinned to CPUs $(tp_cpus "$k" "$n")"): gdsio -d $k ${args[*]}"
			cat "$RUNOUT"
		} >>"$RAW"
		v=$(awk '/^Extra:/ {for (i = 1; i <= NF; i++) if ($i == "GB_per_sec:") print $(i + 1)}' "$RUNOUT" | head -1)
		c=$(awk '/^Extra:/ {for (i = 1; i <= NF; i++) if ($i == "CPU_sec_per_GB:") print $(i + 1)}' "$RUNOUT" | head -1)
		grep -q '^Extra:.*Status: ok' "$RUNOUT" || st=${st:-$(awk '/^Extra:/ {for (i = 1; i <= NF; i++) if ($i == "Status:") print $(i + 1)}' "$RUNOUT" | head -1)}
		[ -n "$(right_library "$lib")" ] && st=WRONG_LIBRARY
		((rep == 0)) && ! grep -q 'Verify: PASS' "$RUNOUT" && st=${st:-verify_failed}
		[ -z "$v" ] && { st=${st:-no_result}; continue; }
		sum=$(awk -v a="$sum" -v b="$v" 'BEGIN {print a + b}')
		cpuw=$(awk -v a="$cpuw" -v b="$v" -v c="${c:-0}" 'BEGIN {print a + b * c}')
		b=$(grep -o 'CPU budget [0-9]* (limited by [a-zA-Z_ ]*)' "$SCRATCH/tp-$lib-$k.log" 2>/dev/null | tail -1)
		[ -n "$b" ] && ((pin)) && TPBUDGET[$id|$k]=${b#CPU budget }
	done
	RUNOUT=$SCRATCH/run.out
	if [ -n "$st" ]; then
		[ -z "${ST[$id|$lib]:-}" ] && ST[$id|$lib]=$st
		((rep == 0)) && VF[$id|$lib]="FAIL($st)"
		return 1
	fi
	((rep == 0)) && { VF[$id|$lib]=PASS; return 0; }
	V[$id|$lib|GB_per_sec]="${V[$id|$lib|GB_per_sec]:-} $sum"
	V[$id|$lib|CPU_sec_per_GB]="${V[$id|$lib|CPU_sec_per_GB]:-} $(awk -v w="$cpuw" -v s="$sum" 'BEGIN {if (s > 0) printf "%.4f", w / s}')"
	return 0
}
# tp_workload ID PIN ARGS...: the verified round, then REPS rounds, the
# libraries alternating.
tp_workload() {
	local id=$1 pin=$2 lib r line
	shift 2
	wanted "$id" || return 0
	plan_ok "$id" 0 60 || { for lib in $LIBS; do ST[$id|$lib]=plan_error; done; return 0; }
	if (($(left) < 20)); then
		SKIPPED+=("$id")
		return 0
	fi
	local -A dead=()
	for lib in $LIBS; do tp_run "$id" "$lib" 0 "$pin" "$@" || dead[$lib]=1; done
	for ((r = 1; r <= REPS; r++)); do
		local order=$LIBS
		((r % 2 == 0)) && order=$(echo "$LIBS" | awk '{for (i = NF; i >= 1; i--) printf "%s%s", $i, (i > 1 ? " " : "")}')
		for lib in $order; do
			[ -n "${dead[$lib]:-}" ] && continue
			(($(left) < 5)) && break 2
			tp_run "$id" "$lib" "$r" "$pin" "$@" || dead[$lib]=1
		done
	done
	local np=$TPN
	case $id in *_alone) np=1 ;; esac
	line="[t=$(elapsed)s] $id ($np process(es)):"
	for lib in $LIBS; do line+=" $lib ${VF[$id|$lib]:-?}${ST[$id|$lib]:+/${ST[$id|$lib]}} [$(echo ${V[$id|$lib|GB_per_sec]:-} | tr ' ' ',')]"; done
	say "$line"
}
tp_mode() {
	local k
	for ((k = 0; k < TPN; k++)); do
		[ -e "$SCRATCH/tp-$k.dat" ] || CREATED+=("$SCRATCH/tp-$k.dat")
		env LD_PRELOAD="$OURREAL" "$GDSIO" -Z -f "$SCRATCH/tp-$k.dat" -s "$SIZE" >>"$RAW" 2>&1 || { say "gpu-bench: cannot create tp-$k.dat"; return; }
		env LD_PRELOAD="$OURREAL" "$GDSIO" -f "$SCRATCH/tp-$k.dat" -s "$SIZE" -x 1 -m 3 -N -w 16 -i 1M >>"$RAW" 2>&1
	done
	say "gpu-bench: tp mode, $TPN process(es), one per GPU, $(nproc) CPUs"
	local T=(-T "$QT" -x 0 -m 0 -N -s "$SIZE")
	tp_workload tp_t1_16m 0 "${T[@]}" -w 1 -i 16M
	tp_workload tp_t8_16m_alone 0 "${T[@]}" -w 8 -i 16M
	tp_workload tp_t8_16m 0 "${T[@]}" -w 8 -i 16M
	tp_workload tp_t16_1m 0 "${T[@]}" -w 16 -i 1M
	tp_workload tp_t1_16m_pin 1 "${T[@]}" -w 1 -i 16M
	tp_workload tp_t8_16m_pin 1 "${T[@]}" -w 8 -i 16M
}

# ------------------------------------------------------------- the table
fmt() { [ "$1" = - ] && { echo -; return; }; awk -v v="$1" 'BEGIN {if (v >= 100) printf "%.0f", v; else if (v >= 10) printf "%.1f", v; else printf "%.2f", v}'; }

cell() { # id lib metric -> "median (min-max)" or a status
	local s
	s=$(stats "${V[$1|$2|$3]:-}")
	if [ -n "$s" ]; then
		set -- $s
		echo "$(fmt "$1") ($(fmt "$2")-$(fmt "$3"))"
	elif [ -n "${ST[$1|$2]:-}" ]; then
		echo "${ST[$1|$2]}"
	else
		echo "-"
	fi
}

median_of() { local s; s=$(stats "${V[$1|$2|$3]:-}"); echo "${s%% *}"; }

# fall_of ID METRIC LOWER: FALL where ours is worse than base beyond both
# spreads (higher is better: ours' max below base's min; times: ours' min
# above base's max), "rise" the other way round, "=" where the spreads
# meet, "-" without figures of both.
fall_of() {
	local b o
	b=$(stats "${V[$1|base|$2]:-}")
	o=$(stats "${V[$1|ours|$2]:-}")
	if [ -z "$b" ] || [ -z "$o" ]; then
		echo -
		return
	fi
	awk -v b="$b" -v o="$o" -v l="$3" 'BEGIN {
		split(b, B, " "); split(o, O, " ")
		worse = l ? O[2] > B[3] : O[3] < B[2]; better = l ? O[3] < B[2] : O[2] > B[3]
		print worse ? "FALL" : better ? "rise" : "="
	}'
}

# check CHECKS id metric : "yes"/"NO"/"?" for ours against the target.
check() {
	local checks=$1 id=$2 metric=$3 ours nv c ok=yes ref a
	[ -z "$checks" ] && { echo ""; return; }
	ours=$(median_of "$id" ours "$metric")
	nv=$(median_of "$id" nv "$metric")
	[ -z "$ours" ] && { echo "NO"; return; }
	for c in $checks; do
		case $c in
		ge:*) awk -v a="$ours" -v b="${c#ge:}" 'BEGIN {exit !(a >= b)}' || ok=NO ;;
		le:*) awk -v a="$ours" -v b="${c#le:}" 'BEGIN {exit !(a <= b)}' || ok=NO ;;
		xnv:*) if [ -n "$nv" ]; then awk -v a="$ours" -v n="$nv" -v f="${c#xnv:}" 'BEGIN {exit !(a >= f * n)}' || ok=NO
		       elif [ "$ok" = yes ]; then ok="?"; fi ;;
		geor:*) # at least X, or at least F x ceiling C: geor:X:F:C
			c=${c#geor:}
			ref=${CEIL[${c#*:*:}]:-}
			a=${c#*:}
			awk -v v="$ours" -v x="${c%%:*}" -v f="${a%%:*}" -v r="${ref%% *}" \
				'BEGIN {exit !(v >= x || (r != "" && v >= f * r))}' || ok=NO ;;
		xceil:*)
			c=${c#xceil:}
			ref=${CEIL[${c#*:}]:-}
			if [ -n "$ref" ]; then awk -v a="$ours" -v r="${ref%% *}" -v f="${c%%:*}" 'BEGIN {exit !(a >= f * r)}' || ok=NO
			elif [ "$ok" = yes ]; then ok="?"; fi ;;
		cpule:*) # CPU s/GB at most this
			a=$(median_of "$id" ours CPU_sec_per_GB)
			if [ -n "$a" ]; then awk -v a="$a" -v b="${c#cpule:}" 'BEGIN {exit !(a <= b)}' || ok=NO
			elif [ "$ok" = yes ]; then ok="?"; fi ;;
		cpuxnv:*) # CPU s/GB at most this many times NVIDIA's
			a=$(median_of "$id" ours CPU_sec_per_GB)
			ref=$(median_of "$id" nv CPU_sec_per_GB)
			if [ -n "$a" ] && [ -n "$ref" ]; then awk -v a="$a" -v r="$ref" -v f="${c#cpuxnv:}" 'BEGIN {exit !(a <= f * r)}' || ok=NO
			elif [ "$ok" = yes ]; then ok="?"; fi ;;
		cpunv) # CPU s/GB no more than NVIDIA's
			a=$(median_of "$id" ours CPU_sec_per_GB)
			ref=$(median_of "$id" nv CPU_sec_per_GB)
			if [ -n "$a" ] && [ -n "$ref" ]; then awk -v a="$a" -v r="$ref" 'BEGIN {exit !(a <= r)}' || ok=NO
			elif [ "$ok" = yes ]; then ok="?"; fi ;;
		lenv:*) # a time at most this many times NVIDIA's
			if [ -n "$nv" ]; then awk -v a="$ours" -v n="$nv" -v f="${c#lenv:}" 'BEGIN {exit !(a <= f * n)}' || ok=NO
			elif [ "$ok" = yes ]; then ok="?"; fi ;;
		lexrow:*) # a time at most F times ours' METRIC of ROW: lexrow:F:ROW:METRIC
			c=${c#lexrow:}
			a=${c#*:}
			ref=$(median_of "${a%%:*}" ours "${a#*:}")
			if [ -n "$ref" ]; then awk -v a="$ours" -v r="$ref" -v f="${c%%:*}" 'BEGIN {exit !(a <= f * r)}' || ok=NO
			elif [ "$ok" = yes ]; then ok="?"; fi ;;
		xrow:*)
			c=${c#xrow:}
			ref=$(median_of "${c#*:}" ours GB_per_sec)
			if [ -n "$ref" ]; then awk -v a="$ours" -v r="$ref" -v f="${c%%:*}" 'BEGIN {exit !(a >= f * r)}' || ok=NO
			elif [ "$ok" = yes ]; then ok="?"; fi ;;
		esac
	done
	echo "$ok"
}

# id|metric|label|target|checks|lower-is-better
ROWS=(
	"w4g|GB_per_sec|warm, ONE 4 GiB cuFileRead, device unregistered, buffered fd (GB/s)|>= 40, >= 2x NVIDIA, >= 0.9x page cache|ge:40 xnv:2 xceil:0.9:pagecache_pread_best|0"
	"t1_1m_r|GB_per_sec|warm, 1 thread x 1 MiB calls, registered (GB/s)|>= 15, CPU <= 0.25|ge:15 cpule:0.25|0"
	"t1_1m_rr|GB_per_sec|warm, 1 thread x 1 MiB calls at random offsets, registered (GB/s)|>= 12, CPU <= 0.25|ge:12 cpule:0.25|0"
	"t1_4m_r|GB_per_sec|warm, 1 thread x 4 MiB calls, registered (GB/s)|>= 25, CPU <= 0.25|ge:25 cpule:0.25|0"
	"t4_256k_r|GB_per_sec|warm, 4 threads x 256 KiB calls, registered (GB/s)|>= 25, CPU <= 0.25 (256 KiB copies: h2d_pinned_256KiB_best)|ge:25 cpule:0.25|0"
	"t16_64k_r|GB_per_sec|warm, 16 threads x 64 KiB calls, registered (GB/s)|>= 23 or >= 0.8x grouped copies, CPU <= 0.40 (64 KiB copies: h2d_pinned_64KiB_best, grouped: h2d_pinned_64KiB_grouped16_best)|geor:23:0.8:h2d_pinned_64KiB_grouped16_best cpule:0.40|0"
	"t16_64k_r|p99_usecs|  ... p99 (us)|<= 174 (f3f6883)|le:174|1"
	"t1_1m_rr_dio_ur|GB_per_sec|warm file, O_DIRECT fd, 1 thread x 1 MiB calls at random offsets, device unregistered (GB/s)|>= 0.95x buffered registered (t1_1m_rr)|xrow:0.95:t1_1m_rr|0"
	"t16_64k_dio_ur|GB_per_sec|warm file, O_DIRECT fd, 16 threads x 64 KiB calls, device unregistered (GB/s)|>= 0.95x buffered registered (t16_64k_r)|xrow:0.95:t16_64k_r|0"
	"t4_4m_r|GB_per_sec|warm, 4 threads x 4 MiB calls, device registered (GB/s)|CPU <= NVIDIA (4 MiB staged: staged_4threads_4MiB)|cpunv|0"
	"t4_4m_dio_ur|GB_per_sec|warm file, O_DIRECT fd, 4 threads x 4 MiB calls, device unregistered (GB/s)|>= 0.95x buffered registered (t4_4m_r), CPU <= NVIDIA|xrow:0.95:t4_4m_r cpunv|0"
	"t8_4m_r|GB_per_sec|warm, 8 threads x 4 MiB calls, device registered (GB/s)|CPU <= NVIDIA (4 MiB staged: staged_8threads_4MiB)|cpunv|0"
	"t8_4m_dio_ur|GB_per_sec|warm file, O_DIRECT fd, 8 threads x 4 MiB calls, device unregistered (GB/s)|>= 0.95x buffered registered (t8_4m_r), CPU <= NVIDIA|xrow:0.95:t8_4m_r cpunv|0"
	"pool4_16m|GB_per_sec|pool: 16 MiB reads, each cut into 4 MiB pieces on 4 threads, O_DIRECT fd, device unregistered (GB/s)|>= 0.95x 4 threads x 4 MiB (t4_4m_r), CPU <= NVIDIA|xrow:0.95:t4_4m_r cpunv|0"
	"pool4_16m|request_avg_usecs|  ... one 16 MiB read: avg (us)|||1"
	"pool4_16m|request_p99_usecs|  ... p99 (us)|||1"
	"pool8_16m|GB_per_sec|pool: 16 MiB reads, each cut into 4 MiB pieces on 8 threads, O_DIRECT fd, device unregistered (GB/s)|>= 0.95x 8 threads x 4 MiB (t8_4m_r), >= NVIDIA, CPU <= NVIDIA|xrow:0.95:t8_4m_r xnv:1 cpunv|0"
	"pool8_16m|request_avg_usecs|  ... one 16 MiB read: avg (us)|||1"
	"pool8_16m|request_p99_usecs|  ... p99 (us)|||1"
	"pool8_4g|GB_per_sec|pool: the whole data set as one read cut into 4 MiB pieces on 8 threads, O_DIRECT fd, device unregistered (GB/s)|>= 0.95x 8 threads x 4 MiB (t8_4m_r), >= NVIDIA, CPU <= NVIDIA|xrow:0.95:t8_4m_r xnv:1 cpunv|0"
	"t1_16m|GB_per_sec|warm, 1 thread x 16 MiB calls, device unregistered (GB/s)|>= 15 (NVIDIA 6.3)|ge:15|0"
	"t1_16m_r|GB_per_sec|warm, 1 thread x 16 MiB calls, device registered (GB/s)|>= NVIDIA, CPU <= NVIDIA and <= 0.18|xnv:1 cpunv cpule:0.18|0"
	"t16_1m|GB_per_sec|warm, 16 threads x 1 MiB calls, device unregistered (GB/s)|>= 1.3x NVIDIA|xnv:1.3|0"
	"t16_1m_r|GB_per_sec|warm, 16 threads x 1 MiB calls, device registered (GB/s)|>= NVIDIA, CPU <= NVIDIA|xnv:1 cpunv|0"
	"t8_16m|GB_per_sec|warm, 8 threads x 16 MiB calls, device registered (GB/s)|>= 0.85x pinned H2D, > NVIDIA, CPU <= NVIDIA|xceil:0.85:h2d_pinned_1GiB xnv:1 cpunv|0"
	"t16_16m_sh|GB_per_sec|warm, 16 threads x 16 MiB into ONE registered buffer of the data set's size (GB/s)|>= 0.85x pinned H2D, > NVIDIA, CPU <= NVIDIA|xceil:0.85:h2d_pinned_1GiB xnv:1 cpunv|0"
	"t8_16m_ur|GB_per_sec|warm, 8 threads x 16 MiB calls, device unregistered (GB/s)|~ one large call (w4g), CPU <= NVIDIA|cpunv|0"
	"t64_16m|GB_per_sec|warm, 64 threads x 16 MiB calls, device registered (GB/s)|~ one large call (w4g), CPU <= NVIDIA|cpunv|0"
	"t8_16m_dio|GB_per_sec|warm file, O_DIRECT fd, 8 threads x 16 MiB, registered (GB/s)|>= 0.9x the buffered fd (t8_16m), CPU <= NVIDIA|xrow:0.9:t8_16m cpunv|0"
	"host4g|GB_per_sec|warm, ONE 4 GiB cuFileRead into malloc memory (GB/s)|>= 30 (NVIDIA 5)|ge:30|0"
	"lat4k|avg_usecs|warm, 4 KiB random reads, device, 1 thread: avg (us)|<= 6 (NVIDIA 10)|le:6|1"
	"lat4k|p50_usecs|  ... p50 (us)|(NVIDIA 9.5)||1"
	"lat4k|p99_usecs|  ... p99 (us)|(NVIDIA 18-20)||1"
	"lat4k_r|avg_usecs|warm, 4 KiB random reads, device registered, 1 thread: avg (us)|<= 1.1x (4 KiB copy + pread), < NVIDIA||1"
	"lat4k_r|p50_usecs|  ... p50 (us)|||1"
	"lat4k_r|p99_usecs|  ... p99 (us)|<= 2x p50||1"
	"batch128|GB_per_sec|batch 128 x 64 KiB, warm, unregistered (GB/s)|completes, >= 13.4 (2x 6.7)|ge:13.4|0"
	"batch32r|GB_per_sec|batch 32 x 64 KiB, warm, registered (GB/s)|(NVIDIA's best batch: 6.7)||0"
	"async256|GB_per_sec|256 x 16 MiB cuFileReadAsync, one stream (GB/s)|all complete, >= 0.9x one thread's 16 MiB sync rate, unregistered (t1_16m)|xrow:0.9:t1_16m|0"
	"ovl_async|overlap|reads while a kernel runs: 16 MiB cuFileReadAsync ops on one stream, spin kernel on another: overlap (1 = I/O hidden)|close to 1||0"
	"ovl_async|io_GB_per_sec|  ... I/O alone (GB/s)|||0"
	"ovl_async|io_GB_per_sec_with_kernel|  ... I/O while the kernel runs (GB/s)|~ I/O alone||0"
	"ovl_batch|overlap|reads while a kernel runs: batches of 128 x 64 KiB, spin kernel on another stream: overlap|close to 1||0"
	"ovl_batch|io_GB_per_sec|  ... I/O alone (GB/s)|||0"
	"ovl_batch|io_GB_per_sec_with_kernel|  ... I/O while the kernel runs (GB/s)|~ I/O alone||0"
	"cold_buf|GB_per_sec|cold, buffered fd, 1 thread x 16 MiB (GB/s)|>= 0.9x disk|xceil:0.9:disk_odirect_read_best|0"
	"cold_dio|GB_per_sec|cold, O_DIRECT fd, 1 thread x 16 MiB (GB/s)|>= 0.9x disk|xceil:0.9:disk_odirect_read_best|0"
	"wr_dio|GB_per_sec|write from GPU, O_DIRECT, 1 thread x 16 MiB (GB/s)|>= 0.9x pwrite|xceil:0.9:pwrite_odirect_1x16MiB|0"
	"wr_buf|GB_per_sec|write from GPU, buffered, 8 threads x 1 MiB (GB/s)|>= 0.9x pwrite|xceil:0.9:pwrite_buffered_8x1MiB|0"
	"wr_t1_16m|GB_per_sec|write: 1 thread x 16 MiB cuFileWrite, buffered, new 2 GiB file (GB/s)|>= 1.5x NVIDIA, CPU <= 0.5|xnv:1.5 cpule:0.5|0"
	"wr_t8_16m|GB_per_sec|write: 8 threads x 16 MiB into one new file, buffered (GB/s)|>= 2x NVIDIA, CPU <= NVIDIA (mapped-store ceiling: write_map+thp_res_8x2MiB)|xnv:2 cpunv|0"
	"wr_t16_1m|GB_per_sec|write: 16 threads x 1 MiB into one new file, buffered (GB/s)|>= 1.5x NVIDIA, CPU <= NVIDIA|xnv:1.5 cpunv|0"
	"wr_t16_64k|GB_per_sec|write: 16 threads x 64 KiB into one new 1 GiB file, buffered (GB/s)|>= 1.5x NVIDIA, CPU <= NVIDIA|xnv:1.5 cpunv|0"
	"wr_ckpt|GB_per_sec|write: checkpoint save, 1 thread, a new 4 GiB file in pieces of 1-64 MiB, buffered (GB/s)|>= 1.5x NVIDIA|xnv:1.5|0"
	"wr_ckpt_sync|GB_per_sec|write: the same, 16 GiB, timed to the end of its fsync (GB/s)|>= 0.9x the disk's best write|xceil:0.9:disk_odirect_write_new_best|0"
	"wr_dio_t1|GB_per_sec|write: O_DIRECT, 1 thread x 16 MiB, new 2 GiB file (GB/s)|>= 0.9x disk, new file|xceil:0.9:disk_odirect_write_new_best|0"
	"wr_dio_t8|GB_per_sec|write: O_DIRECT, 8 threads x 16 MiB, new 2 GiB file (GB/s)|>= 0.9x disk, new file|xceil:0.9:disk_odirect_write_new_best|0"
	"wr_dio_t8_ow|GB_per_sec|write: O_DIRECT, 8 threads x 16 MiB over an existing 4 GiB file (GB/s)|>= 0.9x disk, reserved blocks|xceil:0.9:disk_odirect_write_reserved_best|0"
	"torch_save|GB_per_sec|write: torch.cuda.gds GdsFile.save_storage, 1 GiB in 16 MiB tensors, new file, O_DIRECT (GB/s)|>= 1.5x NVIDIA, >= 0.8x disk|xnv:1.5 xceil:0.8:disk_odirect_write_new_best|0"
	"drvopen|first_ms|cuFileDriverOpen, first in a process (ms)|<= 50|le:50|1"
	"tp_t1_16m|GB_per_sec|TP: one process per GPU, 1 thread x 16 MiB each, summed (GB/s)|>= 1.5x NVIDIA, CPU <= 1.25x NVIDIA|xnv:1.5 cpuxnv:1.25|0"
	"tp_t8_16m_alone|GB_per_sec|TP: one process alone, 8 threads x 16 MiB (GB/s)|||0"
	"tp_t8_16m|GB_per_sec|TP: one process per GPU, 8 threads x 16 MiB each, summed (GB/s)|>= 1.8x alone, >= 1.5x NVIDIA, CPU <= 1.1x NVIDIA|xrow:1.8:tp_t8_16m_alone xnv:1.5 cpuxnv:1.1|0"
	"tp_t16_1m|GB_per_sec|TP: one process per GPU, 16 threads x 1 MiB each, summed (GB/s)|>= NVIDIA|xnv:1|0"
	"tp_t1_16m_pin|GB_per_sec|TP: the same 1 x 16 MiB, each process pinned to 1/N of the CPUs (GB/s)|>= NVIDIA|xnv:1|0"
	"tp_t8_16m_pin|GB_per_sec|TP: the same 8 x 16 MiB, each process pinned to 1/N of the CPUs (GB/s)|>= NVIDIA|xnv:1|0"
	"kv_b128_64k_rd|GB_per_sec|KV: one batch of 128 x 64 KiB reads, contiguous, registered (GB/s)|>= 0.3x the 64 KiB copy ceiling|xceil:0.3:h2d_pinned_64KiB_best|0"
	"kv_b128_64k_rd_sc|GB_per_sec|KV: one batch of 128 x 64 KiB reads, scattered, registered (GB/s)|>= 20 or >= 0.8x grouped copies (h2d_pinned_64KiB_grouped16_best)|geor:20:0.8:h2d_pinned_64KiB_grouped16_best|0"
	"kv_b128_64k_wr|GB_per_sec|KV: one batch of 128 x 64 KiB writes, contiguous, registered (GB/s)|>= 0.8x pwrite 16 x 64 KiB|xceil:0.8:pwrite_buffered_16x64KiB|0"
	"kv_b128_64k_wr_sc|GB_per_sec|KV: one batch of 128 x 64 KiB writes, scattered, registered (GB/s)|>= 0.8x pwrite 16 x 64 KiB|xceil:0.8:pwrite_buffered_16x64KiB|0"
	"kv_16b_wait_rd|GB_per_sec|KV: 16 batches of 128 x 64 KiB reads in flight from 4 threads, contiguous, GetStatus(nr, NULL) (GB/s)|>= 0.6x the 64 KiB copy ceiling|xceil:0.6:h2d_pinned_64KiB_best|0"
	"kv_16b_wait_rd_sc|GB_per_sec|KV: the same, scattered (GB/s)|>= 35 or >= 0.8x grouped copies|geor:35:0.8:h2d_pinned_64KiB_grouped16_best|0"
	"kv_16b_poll_rd|GB_per_sec|KV: 16 batches of 128 x 64 KiB reads, contiguous, polled (min_nr 0, zero timeout) (GB/s)|>= 0.6x the 64 KiB copy ceiling|xceil:0.6:h2d_pinned_64KiB_best|0"
	"kv_16b_poll_rd_sc|GB_per_sec|KV: the same, scattered, polled (GB/s)|>= 35 or >= 0.8x grouped copies|geor:35:0.8:h2d_pinned_64KiB_grouped16_best|0"
	"kv_16b_wait_wr|GB_per_sec|KV: 16 batches of 128 x 64 KiB writes in flight from 4 threads, contiguous (GB/s)|>= 0.8x pwrite 16 x 64 KiB|xceil:0.8:pwrite_buffered_16x64KiB|0"
	"kv_16b_wait_wr_sc|GB_per_sec|KV: 16 batches of 128 x 64 KiB writes in flight from 4 threads, scattered (GB/s)|>= 8|ge:8|0"
	"kv_b128_1m_rd|GB_per_sec|KV: batches of 128 x 1 MiB reads, contiguous (GB/s)|>= 0.8x the 1 MiB copy ceiling|xceil:0.8:h2d_pinned_1MiB_best|0"
	"kv_b128_1m_rd_sc|GB_per_sec|KV: batches of 128 x 1 MiB reads, scattered (GB/s)|>= 0.8x the 1 MiB copy ceiling|xceil:0.8:h2d_pinned_1MiB_best|0"
	"kv_b128_1m_wr|GB_per_sec|KV: batches of 128 x 1 MiB writes, contiguous (GB/s)|>= 0.8x pwrite 16 x 1 MiB|xceil:0.8:pwrite_buffered_16x1MiB|0"
	"kv_t16_64k_rd|GB_per_sec|KV: 16 threads x 64 KiB cuFileRead (GB/s)|CPU <= NVIDIA|cpunv|0"
	"kv_t16_64k_wr|GB_per_sec|KV: 16 threads x 64 KiB cuFileWrite (GB/s)|>= 0.8x pwrite 16 x 64 KiB|xceil:0.8:pwrite_buffered_16x64KiB|0"
	"kv_t16_1m_rd|GB_per_sec|KV: 16 threads x 1 MiB cuFileRead (GB/s)|>= 0.8x the 1 MiB copy ceiling|xceil:0.8:h2d_pinned_1MiB_best|0"
	"kv_t16_1m_wr|GB_per_sec|KV: 16 threads x 1 MiB cuFileWrite (GB/s)|>= 0.8x pwrite 16 x 1 MiB|xceil:0.8:pwrite_buffered_16x1MiB|0"
	"kv_lat_b8|batch_avg_usecs|KV: one batch of 8 x 64 KiB, submit to last completion: avg (us)|<= NVIDIA, <= 2x one 64 KiB cuFileRead (kv_lat_64k)|lenv:1 lexrow:2:kv_lat_64k:avg_usecs|1"
	"kv_lat_b8|batch_p99_usecs|  ... p99 (us)|||1"
	"kv_lat_b8_sc|batch_avg_usecs|KV: one batch of 8 x 64 KiB, scattered, submit to last completion: avg (us)|<= NVIDIA, <= 2x one 64 KiB cuFileRead (kv_lat_64k)|lenv:1 lexrow:2:kv_lat_64k:avg_usecs|1"
	"kv_lat_b8_sc|batch_p99_usecs|  ... p99 (us)|||1"
	"kv_lat_64k|avg_usecs|KV: one 64 KiB cuFileRead, 1 thread: avg (us)|||1"
	"cl_pool_c8_16m|GB_per_sec|clients: pool of 8 threads fed by 8 callers x 16 MiB reads in 4 MiB pieces, O_DIRECT fd, device unregistered (GB/s)|>= 0.95x 8 threads x 4 MiB (t8_4m_r), >= NVIDIA|xrow:0.95:t8_4m_r xnv:1|0"
	"cl_pool_c8_16m|request_avg_usecs|  ... one caller's 16 MiB read: avg (us)|||1"
	"cl_pool_c16_64k|GB_per_sec|clients: pool of 8 threads fed by 16 callers x 64 KiB reads (one piece each), O_DIRECT fd, device unregistered (GB/s)|>= 0.95x 16 threads x 64 KiB buffered registered (t16_64k_r), >= NVIDIA|xrow:0.95:t16_64k_r xnv:1|0"
	"cl_pool_c16_64k|request_avg_usecs|  ... one caller's 64 KiB read: avg (us)|||1"
	"cl_fresh_dio_ur|GB_per_sec|clients: O_DIRECT fd, 8 threads x 4 MiB into unregistered device memory, a 1 GiB file this process wrote 1 s before (GB/s; at rest: t8_4m_dio_ur)|>= NVIDIA|xnv:1|0"
	"nixl_b250|GB_per_sec|clients: NIXL GDS default, 250 writes of 10 MiB, each its own new file, batches of up to 128, buffered, registered (GB/s)|>= 1.5x NVIDIA, >= 0.8x 8 threads' pwrite into new files (write_files_new_8x16MiB)|xnv:1.5 xceil:0.8:write_files_new_8x16MiB|0"
	"nixl_mt250|GB_per_sec|clients: NIXL GDS_MT default, the same 250 writes by a pool of 8 cuFileWrite threads (GB/s)|>= 1.5x NVIDIA, >= 0.8x 8 threads' pwrite into new files (write_files_new_8x16MiB)|xnv:1.5 xceil:0.8:write_files_new_8x16MiB|0"
	"nixl_b16x5|GB_per_sec|clients: NIXL 16 x 2 MiB, each its own new file, 5 rounds, batches: writes (GB/s)|>= 1.5x NVIDIA|xnv:1.5|0"
	"nixl_b16x5|read_GB_per_sec|  ... then reads of the same (GB/s)|>= NVIDIA|xnv:1|0"
	"nixl_mt16x5|GB_per_sec|clients: NIXL GDS_MT 16 x 2 MiB, 5 rounds, a pool of 8 threads: writes (GB/s)|>= 1.5x NVIDIA|xnv:1.5|0"
	"nixl_mt16x5|read_GB_per_sec|  ... then reads of the same (GB/s)|>= NVIDIA|xnv:1|0"
	"nixl_first|first_round_usecs|clients: NIXL's first batch of writes of a process, 4 x 1,000,001 bytes into new files right after the registrations: median of the processes (us)|<= 2x NVIDIA, <= 2x the same batch later (below)|lenv:2 lexrow:2:nixl_first:later_round_usecs|1"
	"nixl_first|later_round_usecs|  ... the same batch later in the process, median of rounds 2-10 (us)|<= NVIDIA|lenv:1|1"
)

TABLE_DONE=0
print_table() {
	((TABLE_DONE)) && return
	TABLE_DONE=1
	local row id metric label target checks lower nvc oc ratio met nvm om cpu gpu a b cm fl falls=()
	{
		echo
		gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
		echo "## gpu-bench $(date -u '+%Y-%m-%d %H:%M UTC'), $TREE_ID, ${gpu:-no GPU (dry run?)}, $(nproc) CPUs"
		echo
		echo "Data set $SIZE (cold reads $COLD), $REPS timed repetitions after one verified (-V) repetition, median (min-max);"
		echo "ratio = ours/NVIDIA for GB/s, NVIDIA/ours for times (> 1: ours better). 'met' judges ours against the target."
		[ "$QUICK" = clients ] && echo "Clients mode: nixl_first ran in $FIRSTPROCS processes per library, the 250-entry and freshly-written rows $HEAVYREPS times."
		[ -n "$DROP_NOTE" ] && echo "NOTE: $DROP_NOTE"
		((${#SKIPPED[@]})) && echo "NOTE: skipped for lack of time: ${SKIPPED[*]}"
		echo
		local hasbase=0 bc
		case " $LIBS " in *" base "*) hasbase=1 ;; esac
		if ((hasbase)); then
			echo "| workload | NVIDIA median (spread) | base median (spread) | ours median (spread) | ratio | target | met | fall | CPU s/GB NVIDIA / base / ours |"
			echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
		else
			echo "| workload | NVIDIA median (spread) | ours median (spread) | ratio | target | met | CPU s/GB NVIDIA / ours |"
			echo "| --- | --- | --- | --- | --- | --- | --- |"
		fi
		for row in "${ROWS[@]}"; do
			IFS='|' read -r id metric label target checks lower <<<"$row"
			wanted "$id" || continue
			nvc=$(cell "$id" nv "$metric")
			oc=$(cell "$id" ours "$metric")
			case " $LIBS " in *" nv "*) ;; *) nvc="not run" ;; esac
			nvm=$(median_of "$id" nv "$metric")
			om=$(median_of "$id" ours "$metric")
			ratio="-"
			if [ -n "$nvm" ] && [ -n "$om" ]; then
				ratio=$(awk -v n="$nvm" -v o="$om" -v l="$lower" 'BEGIN {r = l ? (o > 0 ? n / o : 0) : (n > 0 ? o / n : 0); printf "%.2f", r}')
			fi
			met=$(check "$checks" "$id" "$metric")
			cpu="-"
			# The CPU of a throughput: CPU_sec_per_GB beside GB_per_sec,
			# read_CPU_sec_per_GB beside read_GB_per_sec.
			case $metric in *GB_per_sec) cm=${metric%GB_per_sec}CPU_sec_per_GB ;; *) cm="" ;; esac
			if [ -n "$cm" ]; then
				a=$(median_of "$id" nv "$cm")
				b=$(median_of "$id" ours "$cm")
				bc=$(median_of "$id" base "$cm")
				if ((hasbase)); then
					[ -n "$a$b$bc" ] && cpu="$(fmt "${a:--}") / $(fmt "${bc:--}") / $(fmt "${b:--}")"
				else
					[ -n "$a$b" ] && cpu="$(fmt "${a:--}") / $(fmt "${b:--}")"
				fi
			fi
			if ((hasbase)); then
				fl=$(fall_of "$id" "$metric" "$lower")
				[ "$fl" = FALL ] && falls+=("$id ${metric}")
				echo "| $label | $nvc | $(cell "$id" base "$metric") | $oc | $ratio | $target | $met | $fl | $cpu |"
			else
				echo "| $label | $nvc | $oc | $ratio | $target | $met | $cpu |"
			fi
		done
		if ((hasbase)); then
			echo
			if ((${#falls[@]})); then
				echo "FALL (ours below base beyond both spreads): ${falls[*]}"
			else
				echo "No row fell: none has ours below base beyond both spreads."
			fi
		fi
		if ((${#PIN[@]})); then
			echo
			echo "Pinned staging memory of ours (gdscheck -s of the stats file written at driver close; last repetition):"
			echo
			echo "| workload | peak pinned (MiB) | bound (MiB) |"
			echo "| --- | --- | --- |"
			for row in "${ROWS[@]}"; do
				IFS='|' read -r id metric label target checks lower <<<"$row"
				[ -n "${PIN[$id]:-}" ] || continue
				read -r a b <<<"${PIN[$id]}"
				echo "| $id | $a | $b |"
				PIN[$id]=""
			done
		fi
		if ((${#TPBUDGET[@]})); then
			echo
			echo "CPU budget each pinned process of ours logged at driver open (tp mode, $TPN processes):"
			for k in $(printf '%s\n' "${!TPBUDGET[@]}" | sort); do echo "- ${k/|/ process }: ${TPBUDGET[$k]}"; done
		fi
		sweep_table
		echo
		echo "| ceiling | value |"
		echo "| --- | --- |"
		for k in $(printf '%s\n' "${!CEIL[@]}" | sort); do
			echo "| $k | ${CEIL[$k]} |"
		done
		echo
		echo "Raw output: $RAW"
	} | tee "$TABLE"
}

cleanup() {
	if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null; fi
	udev_off
	if [ "$KEEP" != 1 ]; then
		for f in "${CREATED[@]}"; do rm -f "$f"; done
	fi
	rm -f "$RUNOUT"
}
trap 'say "gpu-bench: interrupted at t=$(elapsed)s"; if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null; fi; print_table; exit 143' TERM INT
trap cleanup EXIT

# ------------------------------------------------------------- the run
say "gpu-bench: gdsio=$GDSIO ours=$OURREAL nvidia=$NVREAL/libcufile.so.0 libs=[$LIBS] size=$SIZE cold=$COLD reps=$REPS budget=${BUDGET}s"
say "gpu-bench: scratch=$SCRATCH ($fstype, block devices $DEVNUMS) raw log=$RAW"

if [ "$QUICK" != write ]; then
	[ -e "$DATA" ] || CREATED+=("$DATA")
	# Helper runs (file creation, warming) use no cuFile call; ours is
	# preloaded only so that gdsio starts wherever its RUNPATH points.
	env LD_PRELOAD="$OURREAL" "$GDSIO" -Z -f "$DATA" -s "$SIZE" >>"$RAW" 2>&1 || { say "gpu-bench: cannot create $DATA"; exit 2; }
	# Warm the page cache: read it all once (CPU only, buffered).
	env LD_PRELOAD="$OURREAL" "$GDSIO" -f "$DATA" -s "$SIZE" -x 1 -m 3 -N -w 16 -i 1M >>"$RAW" 2>&1
	# Written back, as a file at rest is (read-ahead does not read ranges
	# with dirty pages: docs/architecture.md).
	sync "$DATA"
fi

# The separate-copy ceilings of 64 KiB, 256 KiB and 1 MiB blocks bound the
# small-call rows of the loader mode too.
if [ "$QUICK" = write ]; then
	# The write mechanisms (pwrite, mapped stores, the disk): their own
	# files, 2 GiB each, removed as they go.
	wanted ceilings && ceilings -W "$SCRATCH/wceil" -s "$WSIZE" -t copy,writes,kvscatter
elif [ "$QUICK" = loader ]; then
	wanted ceilings && ceilings -f "$DATA" -t copy,latency,pread,staged,kvcopy
elif [ "$QUICK" = clients ]; then
	# The bound of writes into many new files: 8 threads' pwrite into 8.
	wanted ceilings && ceilings -W "$SCRATCH/wceil" -s "$WSIZE" -t newfiles
else
	wanted ceilings && ceilings -f "$DATA" -t copy,latency,pread,staged
fi

[ "$QUICK" = tp ] && tp_mode

SB=$(bytes "$SIZE")
(($(bytes "$BATCHSZ") > SB)) && BATCHSZ=$SIZE
ASYNC_B=$((SB / (16 << 20)))
((ASYNC_B < 1)) && ASYNC_B=1
F=(-f "$DATA")
#        id       cold timeout need  gdsio arguments
workload w4g      0 60 20 "${F[@]}" -x 0 -m 0 -b -N -w 1 -s "$SIZE" -i "$SIZE"
# The shapes most programs issue: one caller with 1 and 4 MiB calls (1 MiB
# also at random 4 KiB-aligned offsets), 4 threads x 256 KiB, 16 threads x
# 64 KiB; registered device memory, each thread its own buffer.
workload t1_1m_r   0 60 20 "${F[@]}" -x 0 -m 0 -N -w 1 -s "$SIZE" -i 1M "${TQ[@]}"
workload t1_1m_rr  0 60 20 "${F[@]}" -x 0 -m 0 -N -w 1 -s "$SIZE" -i 1M -I 2 "${TQ[@]}"
workload t1_4m_r   0 60 20 "${F[@]}" -x 0 -m 0 -N -w 1 -s "$SIZE" -i 4M "${TQ[@]}"
workload t4_256k_r 0 60 20 "${F[@]}" -x 0 -m 0 -N -w 4 -s "$SIZE" -i 256K "${TQ[@]}"
workload t16_64k_r 0 60 20 "${F[@]}" -x 0 -m 0 -N -w 16 -s "$SIZE" -i 64K "${TQ[@]}"
workload t1_16m   0 60 20 "${F[@]}" -x 0 -m 0 -b -N -w 1 -s "$SIZE" -i 16M "${TQ[@]}"
workload t1_16m_r 0 60 20 "${F[@]}" -x 0 -m 0 -N -w 1 -s "$SIZE" -i 16M "${TQ[@]}"
workload t16_1m   0 60 20 "${F[@]}" -x 0 -m 0 -b -N -w 16 -s "$SIZE" -i 1M "${TQ[@]}"
workload t16_1m_r 0 60 20 "${F[@]}" -x 0 -m 0 -N -w 16 -s "$SIZE" -i 1M "${TQ[@]}"
workload t8_16m   0 60 20 "${F[@]}" -x 0 -m 0 -N -w 8 -s "$SIZE" -i 16M "${TQ[@]}"
# The loader shapes: fastsafetensors (16 threads into one registered buffer
# of the whole data set), unregistered memory, a pool of 64 threads, and a
# warm file read through an O_DIRECT handle (nothing dropped the cache yet).
workload t16_16m_sh 0 90 25 "${F[@]}" -x 0 -m 0 -A -N -w 16 -s "$SIZE" -i 16M "${TQ[@]}"
workload t8_16m_ur  0 60 20 "${F[@]}" -x 0 -m 0 -b -N -w 8 -s "$SIZE" -i 16M "${TQ[@]}"
workload t64_16m    0 90 25 "${F[@]}" -x 0 -m 0 -N -w 64 -s "$SIZE" -i 16M
workload t8_16m_dio 0 60 20 "${F[@]}" -x 0 -m 0 -O -w 8 -s "$SIZE" -i 16M
workload host4g   0 60 20 "${F[@]}" -x 0 -m 3 -b -N -w 1 -s "$SIZE" -i "$SIZE"
workload lat4k    0 60 25 "${F[@]}" -x 0 -m 0 -b -N -w 1 -s "$SIZE" -i 4K -I 2 -T "$LATT"
workload lat4k_r  0 60 25 "${F[@]}" -x 0 -m 0 -N -w 1 -s "$SIZE" -i 4K -I 2 -T "$LATT"
workload batch128 0 15 20 "${F[@]}" -x 5 -B 128 -m 0 -b -N -w 1 -s "$BATCHSZ" -i 64K -t 5
workload batch32r 0 15 20 "${F[@]}" -x 5 -B 32 -m 0 -N -w 1 -s "$BATCHSZ" -i 64K -t 5
workload async256 0 30 20 "${F[@]}" -x 3 -B "$ASYNC_B" -m 0 -b -N -w 1 -s "$SIZE" -i 16M
# The shapes of client libraries that read through an O_DIRECT handle into
# unregistered device memory (KvikIO), each beside the same shape buffered
# and registered (_r); then the thread pool's shape (gdsio -q): each read
# cut into 4 MiB pieces that the threads take from one shared queue, the
# next read when all its pieces are done (pread().get()), 16 MiB reads and
# the whole data set as one.  Last of the loader rows: a budget that runs
# out skips these, not the rows above.  The full run (no GPU_BENCH_ONLY, no
# quick mode) leaves them out, so that they take no time from its rows.
if [ "$QUICK" = loader ] || [ -n "$ONLY" ]; then
	workload t8_4m_r         0 60 20 "${F[@]}" -x 0 -m 0 -N -w 8 -s "$SIZE" -i 4M "${TQ[@]}"
	workload t8_4m_dio_ur    0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 8 -s "$SIZE" -i 4M "${TQ[@]}"
	workload t4_4m_r         0 60 20 "${F[@]}" -x 0 -m 0 -N -w 4 -s "$SIZE" -i 4M "${TQ[@]}"
	workload t4_4m_dio_ur    0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 4 -s "$SIZE" -i 4M "${TQ[@]}"
	workload t1_1m_rr_dio_ur 0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 1 -s "$SIZE" -i 1M -I 2 "${TQ[@]}"
	workload t16_64k_dio_ur  0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 16 -s "$SIZE" -i 64K "${TQ[@]}"
	workload pool4_16m       0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 4 -s "$SIZE" -i 16M -q 4M "${TQ[@]}"
	workload pool8_16m       0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 8 -s "$SIZE" -i 16M -q 4M "${TQ[@]}"
	workload pool8_4g        0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 8 -s "$SIZE" -i "$SIZE" -q 4M "${TQ[@]}"
fi
# The batch of 8 x 64 KiB, submit to last completion, beside one 64 KiB
# cuFileRead (the kv rows; the clients mode runs them too, before its NIXL
# rows).
kv_lat_rows() {
	workload kv_lat_b8 0 30 20 "${F[@]}" -x 5 -B 8 -W wait -i 64K -m 0 -N -w 1 -s "$BATCHSZ" "${TQ[@]}"
	workload kv_lat_b8_sc 0 30 20 "${F[@]}" -x 5 -B 8 -W wait -R -i 64K -m 0 -N -w 1 -s "$BATCHSZ" "${TQ[@]}"
	workload kv_lat_64k 0 30 20 "${F[@]}" -x 0 -i 64K -m 0 -N -w 1 -s "$SIZE" -I 2 "${TQ[@]}"
}
# The shapes client libraries issue (GPU_BENCH_QUICK=clients; the pool rows
# above are its too).  KvikIO's pool fed by several application threads
# (gdsio -Q): 8 callers x 16 MiB reads in 4 MiB pieces, and 16 callers x
# 64 KiB reads (one piece each), on a pool of 8 threads, O_DIRECT handles,
# unregistered device memory.
if [ "$QUICK" = clients ] || [ -n "$ONLY" ]; then
	workload cl_pool_c8_16m  0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 8 -Q 8 -s "$SIZE" -i 16M -q 4M "${TQ[@]}"
	workload cl_pool_c16_64k 0 60 20 "${F[@]}" -x 0 -m 0 -O -b -w 8 -Q 16 -s "$SIZE" -i 64K -q 64K "${TQ[@]}"
	[ "$QUICK" = clients ] && kv_lat_rows
	# NIXL's GDS tests (gdsio -e): each entry its own new file in $NXDIR
	# and its own registered device buffer, all made before the clock;
	# buffered handles (its default).  The directory is flushed first, and
	# gdsio removes its files at the end (their dirty pages unwritten).
	nixl() { # id timeout need gdsio arguments
		local id=$1 tmo=$2 need=$3
		shift 3
		wanted "$id" || return 0
		mkdir -p "$NXDIR"
		sync
		workload "$id" 0 "$tmo" "$need" -D "$NXDIR" "$@"
	}
	NXT=${GPU_BENCH_NIXL_TIMEOUT:-20}
	# How the batches are collected: NIXL's GDS backend asks each batch for
	# all its entries with no timeout (wait); earlier versions polled.
	NXW=${GPU_BENCH_NIXL_WAIT:-wait}
	# 16 x 2 MiB written, then read, 5 rounds: batches, and a pool of 8.
	nixl nixl_b16x5  "$NXT" 20 -e 16 -i 2M -x 5 -B 128 -W "$NXW" -r 5 -I 1,0 -m 0 -N
	nixl nixl_mt16x5 30 20 -e 16 -i 2M -x 0 -w 8 -r 5 -I 1,0 -m 0 -N
	# The first batch of writes of a process, right after its registrations:
	# 4 x 1,000,001 bytes, then the same batch 9 times more; fresh processes.
	REPS=$FIRSTPROCS nixl nixl_first "$NXT" 40 -e 4 -i 1000001 -x 5 -B 128 -W "$NXW" -r 10 -I 1 -m 0 -N
	# Its default: 250 x 10 MiB in batches of up to 128 (both in flight),
	# and the same through a pool of 8 threads of cuFileWrite (GDS_MT).
	REPS=$HEAVYREPS nixl nixl_b250 "$NXT" 30 -e 250 -i "$NXIO" -x 5 -B 128 -W "$NXW" -I 1 -m 0 -N
	REPS=$HEAVYREPS nixl nixl_mt250 30 30 -e 250 -i "$NXIO" -x 0 -w 8 -I 1 -m 0 -N
	# Reads through an O_DIRECT handle into unregistered memory of a file
	# this process finished writing (cuFileWrite, buffered) 1 s before,
	# beside the same shape from the data file at rest (t8_4m_dio_ur).
	if wanted cl_fresh_dio_ur; then
		CREATED+=("$FRESHF")
		sync
		REPS=$HEAVYREPS workload cl_fresh_dio_ur 0 60 25 -f "$FRESHF" -s "$FRESHSZ" -Y "$FRESHWAIT" -x 0 -m 0 -O -b \
			-w 8 -i 4M "${TQ[@]}"
		rm -f "$FRESHF"
	fi
fi
# I/O overlapped with a compute kernel (bench/overlap: kernel alone, I/O
# alone, both; the kernel lasts as long as the I/O alone did).
if [ -x "$OVERLAP" ]; then
	PROG=$OVERLAP workload ovl_async 0 30 20 "${F[@]}" -x 3 -s "$SIZE" -i 16M -b
	PROG=$OVERLAP workload ovl_batch 0 60 20 "${F[@]}" -x 5 -B 128 -s "$BATCHSZ" -i 64K -b -t 5
elif wanted ovl_async || wanted ovl_batch; then
	say "gpu-bench: $OVERLAP not built: ovl_async and ovl_batch skipped"
fi
drvopen

# The write rows into a new file (GPU_BENCH_QUICK=write): gdsio -n makes
# it empty before each run; the previous run's dirty pages are flushed
# first, so that no run pays for the one before.
wnew() { # id timeout gdsio arguments
	local id=$1 tmo=$2
	shift 2
	wanted "$id" || return 0
	sync
	CREATED+=("$WNEW")
	workload "$id" 0 "$tmo" "${WNEED:-20}" -f "$WNEW" -I 1 -n -x 0 -m 0 "$@"
	rm -f "$WNEW"
}
wnew wr_t1_16m  60 -N -w 1 -s "$WSIZE" -i 16M
wnew wr_t8_16m  60 -N -w 8 -s "$WSIZE" -i 16M
wnew wr_t16_1m  60 -N -w 16 -s "$WSIZE" -i 1M
wnew wr_t16_64k 60 -N -w 16 -s "$W64K" -i 64K
wnew wr_ckpt    90 -N -w 1 -s "$CKPT" -i 1M,16M,4M,64M,2M,32M,8M -M
wnew wr_dio_t1  60 -O -w 1 -s "$WSIZE" -i 16M
wnew wr_dio_t8  60 -O -w 8 -s "$WSIZE" -i 16M

if wanted ceilings || wanted wr_dio || wanted wr_buf || wanted wr_dio_t8_ow || [ "$QUICK" = write ]; then
	[ -e "$WDATA" ] || CREATED+=("$WDATA")
	env LD_PRELOAD="$OURREAL" "$GDSIO" -Z -f "$WDATA" -s "$SIZE" >>"$RAW" 2>&1
	sync # the write ceilings and workloads must not pay for flushing this
fi
[ -z "$QUICK" ] && wanted ceilings && ceilings -f "$DATA" -W "$WDATA" -s "$SIZE" -r "$COLD" -t odirect,pwrite
[ "$QUICK" = kv ] && wanted ceilings && ceilings -f "$DATA" -W "$WDATA" -s "$SIZE" -t kvcopy,kvfile

# The KV-cache rows (GPU_BENCH_QUICK=kv): registered GPU memory, warm files;
# NVIDIA's 128-entry batches get a short timeout.
KT=${GPU_BENCH_KV_TIMEOUT:-8}
# Contiguous rows: each batch's entries follow each other in the file and
# in the buffer.  Scattered rows (_sc, gdsio -R): file blocks at a random
# permutation of offsets, buffers at a random permutation of the slots of
# the thread's registered pool.
#                        id cold timeout need  gdsio arguments
workload kv_b128_64k_rd    0 "$KT" 20 "${F[@]}" -x 5 -B 128 -W wait -i 64K -m 0 -N -w 1 -s "$BATCHSZ" "${TQ[@]}"
workload kv_b128_64k_rd_sc 0 "$KT" 20 "${F[@]}" -x 5 -B 128 -W wait -R -i 64K -m 0 -N -w 1 -s "$BATCHSZ" "${TQ[@]}"
workload kv_b128_64k_wr    0 "$KT" 20 -f "$WDATA" -I 1 -x 5 -B 128 -W wait -i 64K -m 0 -N -w 1 -s "$BATCHSZ" "${TQ[@]}"
workload kv_b128_64k_wr_sc 0 "$KT" 20 -f "$WDATA" -I 1 -x 5 -B 128 -W wait -R -i 64K -m 0 -N -w 1 -s "$BATCHSZ" "${TQ[@]}"
workload kv_16b_wait_rd    0 "$KT" 20 "${F[@]}" -x 5 -B 128 -H 4 -W wait -i 64K -m 0 -N -w 4 -s "$BATCHSZ" "${TQ[@]}"
workload kv_16b_wait_rd_sc 0 "$KT" 20 "${F[@]}" -x 5 -B 128 -H 4 -W wait -R -i 64K -m 0 -N -w 4 -s "$BATCHSZ" "${TQ[@]}"
workload kv_16b_poll_rd    0 "$KT" 20 "${F[@]}" -x 5 -B 128 -H 4 -W poll -i 64K -m 0 -N -w 4 -s "$BATCHSZ" "${TQ[@]}"
workload kv_16b_poll_rd_sc 0 "$KT" 20 "${F[@]}" -x 5 -B 128 -H 4 -W poll -R -i 64K -m 0 -N -w 4 -s "$BATCHSZ" "${TQ[@]}"
workload kv_16b_wait_wr    0 "$KT" 20 -f "$WDATA" -I 1 -x 5 -B 128 -H 4 -W wait -i 64K -m 0 -N -w 4 -s "$BATCHSZ" "${TQ[@]}"
workload kv_16b_wait_wr_sc 0 "$KT" 20 -f "$WDATA" -I 1 -x 5 -B 128 -H 4 -W wait -R -i 64K -m 0 -N -w 4 -s "$BATCHSZ" "${TQ[@]}"
workload kv_b128_1m_rd     0 "$KT" 20 "${F[@]}" -x 5 -B 128 -W wait -i 1M -m 0 -N -w 1 -s "$SIZE" "${TQ[@]}"
workload kv_b128_1m_rd_sc  0 "$KT" 20 "${F[@]}" -x 5 -B 128 -W wait -R -i 1M -m 0 -N -w 1 -s "$SIZE" "${TQ[@]}"
workload kv_b128_1m_wr     0 "$KT" 20 -f "$WDATA" -I 1 -x 5 -B 128 -W wait -i 1M -m 0 -N -w 1 -s "$SIZE" "${TQ[@]}"
workload kv_t16_64k_rd 0 30 20 "${F[@]}" -x 0 -i 64K -m 0 -N -w 16 -s "$SIZE" "${TQ[@]}"
workload kv_t16_64k_wr 0 30 20 -f "$WDATA" -I 1 -x 0 -i 64K -m 0 -N -w 16 -s "$SIZE" "${TQ[@]}"
workload kv_t16_1m_rd 0 30 20 "${F[@]}" -x 0 -i 1M -m 0 -N -w 16 -s "$SIZE" "${TQ[@]}"
workload kv_t16_1m_wr 0 30 20 -f "$WDATA" -I 1 -x 0 -i 1M -m 0 -N -w 16 -s "$SIZE" "${TQ[@]}"
[ "$QUICK" != clients ] && kv_lat_rows

# Over an existing 4 GiB file, O_DIRECT (the write mode).
workload wr_dio_t8_ow 0 60 20 -f "$WDATA" -I 1 -x 0 -m 0 -O -w 8 -s "$SIZE" -i 16M
# torch.cuda.gds GdsFile.save_storage: 1 GiB in 16 MiB tensors, a new file
# each time (O_DIRECT: torch adds it); one process per library and round.
torch_save() {
	local id=torch_save lib r v c
	wanted $id || return 0
	plan_ok "$id" 0 60 || return 0
	if [ "$DRY" = 1 ]; then
		for lib in $LIBS; do ST[$id|$lib]=dry_run; done
		return 0
	fi
	for ((r = 0; r <= REPS; r++)); do
		for lib in $LIBS; do
			[ "$lib" = base ] && continue
			(($(left) < 20)) && { SKIPPED+=("$id"); break 2; }
			sync
			if [ "$lib" = nv ]; then
				udev_on
				timeout -k 3 60 env -u LD_PRELOAD CUFILE_LOGFILE_PATH="$OUT/cufile-nvidia.log" \
					python3 "$ROOT/tests/gpu/torch_save_bench.py" --file "$WNEW" >"$RUNOUT" 2>&1
				udev_off
			else
				timeout -k 3 60 env LD_PRELOAD="$OURREAL" CUFILE_LOGFILE_PATH="$OUT/cufile-ours.log" \
					python3 "$ROOT/tests/gpu/torch_save_bench.py" --file "$WNEW" --expect-lib "$OURREAL" >"$RUNOUT" 2>&1
			fi
			{ echo "### [t=$(elapsed)s] $id $lib rep=$r"; cat "$RUNOUT"; } >>"$RAW"
			rm -f "$WNEW"
			v=$(sed -n 's/^torch_save: .*GB_per_sec: \([0-9.]*\).*/\1/p' "$RUNOUT")
			c=$(sed -n 's/^torch_save: .*CPU_sec_per_GB: \([0-9.]*\).*/\1/p' "$RUNOUT")
			if [ -z "$v" ] || ! grep -q '^torch_save: .*Verify: PASS' "$RUNOUT"; then
				ST[$id|$lib]=${ST[$id|$lib]:-fail}
				VF[$id|$lib]=FAIL
				continue
			fi
			VF[$id|$lib]=PASS
			((r == 0)) && continue
			V[$id|$lib|GB_per_sec]="${V[$id|$lib|GB_per_sec]:-} $v"
			V[$id|$lib|CPU_sec_per_GB]="${V[$id|$lib|CPU_sec_per_GB]:-} $c"
		done
	done
	say "[t=$(elapsed)s] $id: ours [${V[$id|ours|GB_per_sec]:-}] nv [${V[$id|nv|GB_per_sec]:-}]"
}
torch_save
# The checkpoint save again, 16 GiB into a new file, timed to the end of its
# fsync (the disk bounds it): one timed round.
REPS=1 WNEED=100 wnew wr_ckpt_sync 120 -N -w 1 -s "$CKPT_SYNC" -i 1M,16M,4M,64M,2M,32M,8M -M -F

workload cold_buf 1 60 30 "${F[@]}" -x 0 -m 0 -b -N -w 1 -s "$COLD" -i 16M
workload cold_dio 1 60 30 "${F[@]}" -x 0 -m 0 -b -O -w 1 -s "$COLD" -i 16M
sync
workload wr_dio   0 90 30 -f "$WDATA" -I 1 -x 0 -m 0 -b -O -w 1 -s "$SIZE" -i 16M
sync
workload wr_buf   0 90 25 -f "$WDATA" -I 1 -x 0 -m 0 -b -N -w 8 -s "$SIZE" -i 1M

sweep

say "gpu-bench: done in $(elapsed)s"
print_table
if ((PLAN_ERRORS)); then
	say "gpu-bench: PLAN ERROR: rows with a wrong cache drop or no time limit were not run (see 'PLAN ERROR' above)"
	exit 4
fi
exit 0
