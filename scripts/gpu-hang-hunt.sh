#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# gpu-hang-hunt.sh - repeats, on the GPU machine, the workloads that can hang
# against the real CUDA driver, each run under a watchdog.
#
#   scripts/gpu-hang-hunt.sh BUILD_DIR      (from the repository root)
#
# Steps (HUNT_STEPS, default all but probe, in this order):
#   probe     (only when named) tests/gpu/probe_driver_waits.c: which driver
#             calls wait while a stream is blocked in cuStreamWaitValue32, and
#             which of the library's calls still go through meanwhile
#   stress    the 64-thread mixed-API stress test, HUNT_N_STRESS times (10)
#   ovl3      bench/overlap -x 3 (16 MiB cuFileReadAsync on one stream while
#             a spin kernel runs on another), HUNT_N_OVL times (20)
#   ovl5      bench/overlap -x 5 (batches of 128 x 64 KiB, same), HUNT_N_OVL
#   async256  gdsio -x 3: 256 x 16 MiB cuFileReadAsync on one stream, data
#             verified, HUNT_N_ASYNC times (20)
#   kv16      the KV-cache pool: 16 batch handles of 128 x 64 KiB in flight
#             from 4 threads (gdsio -x 5 -H 4), reads then writes, reaped
#             with GetStatus(nr, NULL), data verified, HUNT_N_KV times (10);
#             the reads also scattered (gdsio -R: grouped copies, batch_io.c)
#   kv16p     the same, polled (min_nr 0, zero timeout)
#   kvlat     small batches back to back, where executor threads poll the
#             FIFO after each operation and GetStatus polls the batch's
#             completions before it sleeps (async.c, batch.c): one thread's
#             batches of 8 x 64 KiB, contiguous and scattered, and 4
#             threads' batches of 3 x 100 KiB at random offsets (-I 2) with
#             8 threads polling for 1 ms; reads then writes; 1 s each, data
#             verified, HUNT_N_KV times (10)
#   stripe    the striped path of device reads (stripe.c: helpers wait for
#             buffers, the caller for stripes, on futex words; helpers
#             polling the queue after short requests): 1 thread x 1 MiB at
#             random offsets, the same x 1.5 MiB through an O_DIRECT handle
#             into unregistered memory, 6 threads x 3 MiB, 2 threads x 5 MiB
#             through an O_DIRECT handle into unregistered memory, 2 threads
#             x 4 MiB at random offsets and a pool's 4 MiB pieces of 16 MiB
#             reads on 4 and on 8 threads (several callers striped at once),
#             1 s each, data verified, HUNT_N_STRIPE times (10)
#   readahead one caller reading in order, served from windows read
#             ahead by the engine's helpers (readahead.c: the caller waits
#             for buffers being filled, spinning then on a futex word):
#             1 thread x 1 MiB, x 16 MiB, x 4 MiB through an O_DIRECT handle
#             into unregistered memory, x 300 KiB; 4 threads x 256 KiB and
#             6 x 1 MiB through one handle (a window per stream, opening and
#             closing as the callers come and go); 1 thread x 16 MiB with
#             at most two helpers filling a window; 1 s each, data verified,
#             HUNT_N_RA times (10)
#   busy      many callers at once, whose staged bytes are written back
#             before their copies (fileio.c, fio_flush_before_copy): 16
#             threads x 64 KiB and x 256 KiB; and one caller of 16 MiB with
#             helpers polling after each job (OPENCUFILE_HELPER_SPIN_US=100,
#             engine.c); the copies of those 16 callers go grouped
#             (copygroup.c: members wait for a leader, then for the group's
#             event), and once more 16 x 100 KiB at random offsets with
#             leaders waiting 20 us for fuller groups, and 24 x 64 KiB (more
#             callers than CPUs) on four queues grouping from two busy
#             participants; members nap before they poll (copygroup.c:
#             the adaptive nap in every run, and a fixed 200 us one, far
#             longer than a group's copy, in a last 16 x 64 KiB run); 1 s
#             each, data verified, HUNT_N_BUSY times (6)
#   exit      the exit-with-I/O-in-flight test with statistics at level 3,
#             HUNT_N_EXIT times (10)
#   fork      the fork test, likewise
#   dereg     cuFileHandleDeregister while four threads read through the
#             handle (test_handle_deregister_while_reads_run_returns: the
#             call waits, bounded, for the reads in flight), HUNT_N_DEREG
#             times (10)
# A run that lasts longer than HUNT_LIMIT seconds (60) is a hang: cuda-gdb is
# attached (thread apply all bt), the stacks are appended to
# $OUT/hang-stacks.txt, and the process is killed.  Every run's result goes
# to $OUT/hunt.log (a failed run's last output lines, and the lines the
# library appended to ./cufile.log during it), which ends with the table
# (runs, passed, failed, hangs per step); the table is also printed last.
# HUNT_BUDGET (seconds, default 420) bounds the whole hunt: a step that
# would start after it is reported as not run.  GPU_SCRATCH: a directory on
# the real disk for the data file (default ./gpu-scratch/hunt).
set -u

BUILD=${1:?usage: gpu-hang-hunt.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/hunt.log
STACKS=$OUT/hang-stacks.txt
SCR=${GPU_SCRATCH:-$PWD/gpu-scratch}/hunt
TABLE=$SCR/hunt-table.txt
LIMIT=${HUNT_LIMIT:-60}
BUDGET=${HUNT_BUDGET:-420}
STEPS=${HUNT_STEPS:-stress ovl3 ovl5 async256 kv16 kv16p kvlat stripe readahead busy exit fork dereg}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
T0=$SECONDS
mkdir -p "$SCR"
: >"$LOG"
: >"$TABLE"

LIB=$(readlink -f "$(find "$BUILD" -name 'libcufile.so.0' \( -type f -o -type l \) | head -1)")
bin() { find "$BUILD" -type f -name "$1" -perm -u+x | head -1; }
STRESS=$(bin test_stress_64_threads_mixed_api_verified_no_leaks)
EXITT=$(bin test_exit_with_io_in_flight_neither_hangs_nor_crashes)
FORKT=$(bin test_fork_child_gets_error_parent_keeps_working)
DEREGT=$(bin test_handle_deregister_while_reads_run_returns)
OVERLAP=$(bin overlap)
GDSIO=$(bin gdsio)

left() { echo $((BUDGET - (SECONDS - T0))); }

# watch NAME CMD...: one run under the watchdog; 0 passed, 124 hang, else
# the command's status.  Output goes to the log (the last lines on failure).
watch() {
	local name=$1 t0=$SECONDS pid rc clog=$PWD/cufile.log before=0
	shift
	[ -f "$clog" ] && before=$(stat -c %s "$clog")
	"$@" >"$SCR/run.out" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS - t0 >= LIMIT)); then
			{
				echo "===== HANG: $name, no exit after ${LIMIT} s (pid $pid), $(date -u +%FT%TZ)"
				echo "command: $*"
				tail -20 "$SCR/run.out"
				local p
				for p in "$pid" $(pgrep -P "$pid"); do
					echo "--- stacks of pid $p"
					timeout -k 5 90 cuda-gdb -batch -p "$p" -ex 'info threads' -ex 'thread apply all bt' 2>&1 |
						grep -v '^\[New Thread\|^\[Thread debugging'
				done
			} >>"$STACKS"
			pkill -9 -P "$pid" 2>/dev/null
			kill -9 "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			echo "$name: HANG (${LIMIT} s)" >>"$LOG"
			return 124
		fi
		sleep 0.2
	done
	wait "$pid"
	rc=$?
	if ((rc == 0)); then
		echo "$name: ok ($((SECONDS - t0)) s)" >>"$LOG"
	else
		{
			echo "$name: FAILED rc=$rc ($((SECONDS - t0)) s)"
			tail -15 "$SCR/run.out" | sed 's/^/    /'
			# What the library logged during this run (the CUDA error a
			# failed call got, a lane discarded...), where it logged.
			local grown=0
			[ -f "$clog" ] && grown=$(($(stat -c %s "$clog") - before))
			if ((grown > 0)); then
				echo "    --- cufile.log during the run (last 25 lines of $grown bytes)"
				tail -c +$((before + 1)) "$clog" | tail -25 | sed 's/^/    /'
			fi
		} >>"$LOG"
	fi
	return "$rc"
}

# step NAME N CMD...: N runs (fewer if the budget runs out), one table row.
step() {
	local name=$1 n=$2 i ok=0 bad=0 hang=0 rc t0=$SECONDS
	shift 2
	case " $STEPS " in *" $name "*) ;; *) return ;; esac
	for ((i = 1; i <= n; i++)); do
		if (($(left) < 10)); then break; fi
		watch "$name#$i" "$@"
		rc=$?
		if ((rc == 0)); then ok=$((ok + 1)); elif ((rc == 124)); then hang=$((hang + 1)); else bad=$((bad + 1)); fi
	done
	printf '%-9s runs %3d of %3d  passed %3d  failed %3d  hangs %3d  (%d s)\n' "$name" $((ok + bad + hang)) "$n" \
		"$ok" "$bad" "$hang" $((SECONDS - t0)) >>"$TABLE"
	echo "hunt: $name finished" >&2
}

echo "hang hunt: lib=$LIB limit=${LIMIT}s budget=${BUDGET}s steps=[$STEPS]" | tee -a "$LOG"

# ------------------------------------------------------------------ probe
case " $STEPS " in *" probe "*)
	if cc -O2 -I"$CUDA_HOME/include" -Itests/gpu tests/gpu/probe_driver_waits.c -o "$SCR/probe" -lcuda -lpthread \
		-L"$CUDA_HOME/lib64/stubs" 2>>"$LOG"; then
		timeout -k 5 200 "$SCR/probe" >"$OUT/probe.txt" 2>&1
		echo "probe: $(tail -1 "$OUT/probe.txt")" >>"$TABLE"
	else
		echo "probe: did not build" >>"$TABLE"
	fi
	;;
esac

# ------------------------------------------------------------------ workloads
step stress "${HUNT_N_STRESS:-10}" env OCF_STRESS_SECONDS=6 "$STRESS"

DATA=$SCR/hunt.dat
SIZE=${HUNT_SIZE:-4G}
case " $STEPS " in *" ovl3 "* | *" ovl5 "* | *" async256 "* | *" kv16"* | *" stripe "* | *" readahead "* | *" busy "*)
	if [ ! -e "$DATA" ]; then
		env LD_PRELOAD="$LIB" "$GDSIO" -Z -f "$DATA" -s "$SIZE" >>"$LOG" 2>&1
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -s "$SIZE" -x 1 -m 3 -N -w 16 -i 1M >>"$LOG" 2>&1
	fi
	;;
esac
step ovl3 "${HUNT_N_OVL:-20}" env LD_PRELOAD="$LIB" "$OVERLAP" -f "$DATA" -x 3 -s "$SIZE" -i 16M -b -r 1 -V
step ovl5 "${HUNT_N_OVL:-20}" env LD_PRELOAD="$LIB" "$OVERLAP" -f "$DATA" -x 5 -B 128 -s 1G -i 64K -b -r 1 -V -t 20
step async256 "${HUNT_N_ASYNC:-20}" env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 3 -B 256 -m 0 -b -N -w 1 -s "$SIZE" \
	-i 16M -I 0 -V

WDATA=$SCR/hunt-write.dat
case " $STEPS " in *" kv16"* | *" kvlat "*)
	[ -e "$WDATA" ] || env LD_PRELOAD="$LIB" "$GDSIO" -Z -f "$WDATA" -s 1G >>"$LOG" 2>&1 ;;
esac
kv16() {
	local style=$1
	env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 5 -B 128 -H 4 -W "$style" -i 64K -m 0 -N -w 4 -s 1G -T 2 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 5 -B 128 -H 4 -W "$style" -R -i 64K -m 0 -N -w 4 -s 1G -T 2 \
			-V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$WDATA" -I 1 -x 5 -B 128 -H 4 -W "$style" -i 64K -m 0 -N -w 4 -s 1G -T 2 -V
}
step kv16 "${HUNT_N_KV:-10}" kv16 wait
step kv16p "${HUNT_N_KV:-10}" kv16 poll
kvlat() {
	env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 5 -B 8 -W wait -i 64K -m 0 -N -w 1 -s 1G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 5 -B 8 -W wait -R -i 64K -m 0 -N -w 1 -s 1G -T 1 -V &&
		env OPENCUFILE_BATCH_SPINNERS=8 OPENCUFILE_BATCH_SPIN_US=1000 LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" \
			-x 5 -B 3 -W wait -I 2 -i 100K -m 0 -N -w 4 -s 1G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$WDATA" -I 1 -x 5 -B 8 -W wait -i 64K -m 0 -N -w 1 -s 1G -T 1 -V
}
step kvlat "${HUNT_N_KV:-10}" kvlat
stripe() {
	env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 1 -i 1M -I 2 -s 1G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -b -O -w 1 -i 1536K -I 2 -s 1G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 6 -i 3M -s "$SIZE" -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -b -O -w 2 -i 5M -s 2G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 2 -i 4M -I 2 -s 2G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -b -O -w 4 -i 16M -q 4M -s 2G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -b -O -w 8 -i 16M -q 4M -s 2G -T 1 -V
}
step stripe "${HUNT_N_STRIPE:-10}" stripe
readahead() {
	env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 1 -i 1M -s "$SIZE" -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 1 -i 16M -s "$SIZE" -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -b -O -w 1 -i 4M -s 2G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 1 -i 300K -s 1G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 4 -i 256K -s "$SIZE" -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 6 -i 1M -s "$SIZE" -T 1 -V &&
		env OPENCUFILE_READAHEAD_FILLERS=2 LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 1 -i 16M \
			-s "$SIZE" -T 1 -V
}
step readahead "${HUNT_N_RA:-10}" readahead
busy() {
	env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 16 -i 64K -s 1G -T 1 -V &&
		env LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 16 -i 256K -I 2 -s "$SIZE" -T 1 -V &&
		env OPENCUFILE_HELPER_SPIN_US=100 LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 1 -i 16M \
			-s "$SIZE" -T 1 -V &&
		env OPENCUFILE_CALLER_GROUPS_GATHER_US=20 LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 16 \
			-i 100K -I 2 -s 1G -T 1 -V &&
		env OPENCUFILE_CALLER_GROUPS_QUEUES=4 OPENCUFILE_CALLER_GROUPS_BUSY=2 LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" \
			-x 0 -m 0 -N -w 24 -i 64K -I 2 -s 1G -T 1 -V &&
		env OPENCUFILE_CALLER_GROUPS_NAP_US=200 LD_PRELOAD="$LIB" "$GDSIO" -f "$DATA" -x 0 -m 0 -N -w 16 \
			-i 64K -I 2 -s 1G -T 1 -V
}
step busy "${HUNT_N_BUSY:-6}" busy

# Statistics at level 3 (NVIDIA's library is known to crash at exit there).
printf '{ "profile": { "cufile_stats": 3 } }\n' >"$SCR/stats3.json"
step exit "${HUNT_N_EXIT:-10}" env CUFILE_ENV_PATH_JSON="$SCR/stats3.json" "$EXITT"
step fork "${HUNT_N_EXIT:-10}" env CUFILE_ENV_PATH_JSON="$SCR/stats3.json" "$FORKT"
step dereg "${HUNT_N_DEREG:-10}" "$DEREGT"

echo "hang hunt done in $((SECONDS - T0)) s" >>"$TABLE"
{
	echo "===== table"
	cat "$TABLE"
} >>"$LOG"
cat "$TABLE"
rm -rf "$SCR"
