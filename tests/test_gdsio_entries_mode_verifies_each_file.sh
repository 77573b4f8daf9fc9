#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_gdsio_entries_mode_verifies_each_file.sh GDSIO SPY
#
# gdsio's entries shape (-e N -D DIR: each entry its own new file and
# buffer, as NIXL's GDS backends and their test move them) moves the right
# bytes and runs the way its flags say, on the stand-in driver's device
# memory.  SPY is a preload library (gdsio_entries_spy.c) between gdsio and
# libcufile that records the registrations, every entry moved and the
# batches in flight:
#  - batches (-x 5): 20 entries of 256 KiB in batches of up to 8, 2 rounds
#    of writes then 2 of reads (-I 1,0), every byte verified: one result
#    per phase, the round times printed; 20 handles of 20 distinct new
#    (empty) entry files, all registered (files and buffers) before the
#    first I/O; each entry moved whole at offset 0 from its own buffer, 4
#    times; the 3 batches of a round all in flight at once; the files gone
#    at the end;
#  - NIXL's default shape, smaller entries: 250 entries in 2 batches of up
#    to 128, both in flight at once;
#  - a pool (-x 0) of 4 threads, one cuFileWrite/cuFileRead per entry: the
#    calls from the pool's threads, several at once;
#  - NIXL's first batch: 4 entries of 1,000,001 bytes (unaligned), 10
#    rounds of one batch, the first round's time and the others' median;
#  - reads of files at rest (-I 0, written with each entry's pattern before
#    the clock: not empty when registered), polled; O_DIRECT and
#    unregistered buffers; host memory (-m 3);
#  - an entry sent to another entry's file (the spy swaps two handles)
#    fails the verified run (exit 1, "Verify: FAIL"), in batches and in the
#    pool, writes and reads: each file holds its own part of the pattern;
#  - the options the shape does not take are usage errors (exit 2) with a
#    message naming the option.
set -u
GDSIO=$1
SPY=$2
T=$(mktemp -d "$PWD/gdsio-entries.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
D=$T/d
mkdir "$D" || exit 1
# A sanitizer runtime wants to be first in the process; the spy comes first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
K=1024
M=1048576
fails=0
# bad, judge, spy, extra, expect
# shellcheck source=gdsio_spy_lib.sh
. "$(dirname "$0")/gdsio_spy_lib.sh"
# run NAME RC IO_BYTES gdsio-args...: one run through the spy, told the
# entries' size; a verified run when RC is 0.  SWAP=1: the spy sends one
# entry to another's file; DELAY_US: each synchronous call sleeps first.
run() {
	name=$1 want=$2 io=$3
	shift 3
	rm -f "$T/spy"
	GDSIO_ENTRIES_SPY=$T/spy GDSIO_ENTRIES_SPY_IO=$io GDSIO_ENTRIES_SPY_SWAP=${SWAP:-0} \
		GDSIO_ENTRIES_SPY_DELAY_US=${DELAY_US:-0} LD_PRELOAD="$SPY${LD_PRELOAD:+:$LD_PRELOAD}" \
		"$GDSIO" -D "$D" "$@" >"$T/out" 2>&1
	rc=$?
	SWAP='' DELAY_US='' # a prefix assignment to a function may outlive the call (POSIX leaves it open)
	judge "$name" "$want" 1 $rc "$@"
}
# The Extra line of one phase (write or read).
phase_line() { grep "^Extra:.* phase: $1\$" "$T/out"; }
phase_has() { # name phase key value: the phase's line has "key: value"
	phase_line "$2" | grep -q " $3: $4 " || phase_line "$2" | grep -q " $3: $4\$" ||
		bad "$1" "$2 phase: no '$3: $4' in: $(phase_line "$2")"
}
# Every run: N distinct entry files, registered before any I/O, each moved
# whole at offset 0 from its own buffer MOVES times; the files removed.
entries() { # name N moves new(1: files empty when registered)
	expect "$1" handles -eq "$2"
	expect "$1" entries -eq "$2"
	expect "$1" foreign -eq 0
	expect "$1" duplicate_files -eq 0
	expect "$1" registered_after_io -eq 0
	expect "$1" misshapen -eq 0
	expect "$1" buffer_mismatch -eq 0
	expect "$1" shared_buffers -eq 0
	expect "$1" moves_min -eq "$3"
	expect "$1" moves_max -eq "$3"
	if [ "$4" = 1 ]; then expect "$1" nonempty_at_register -eq 0; else expect "$1" nonempty_at_register -eq "$2"; fi
	[ -z "$(ls "$D")" ] || bad "$1" "files left in the directory: $(ls "$D" | head -3)"
}

# Batches: 20 x 256 KiB in batches of up to 8, 2 rounds of writes, then 2 of reads.
run batch_wr_rd 0 $((256 * K)) -e 20 -i 256K -x 5 -B 8 -W wait -r 2 -I 1,0 -m 0 -N -V && {
	entries batch_wr_rd 20 4 1
	expect batch_wr_rd buf_registers -eq 20
	expect batch_wr_rd submits -eq 12
	expect batch_wr_rd max_batch -eq 8
	expect batch_wr_rd max_batches_in_flight -eq 3
	expect batch_wr_rd sync_calls -eq 0
	for p in write read; do
		phase_has batch_wr_rd $p entries 20
		phase_has batch_wr_rd $p rounds 2
		phase_has batch_wr_rd $p batches 6
		phase_line $p | grep -q 'Verify: PASS Status: ok' || bad batch_wr_rd "$p phase not verified"
		phase_line $p | grep -Eq ' first_round_usecs: [0-9.]*[1-9]' || bad batch_wr_rd "$p phase: no first round time"
		phase_line $p | grep -Eq ' later_round_usecs: [0-9.]*[1-9]' || bad batch_wr_rd "$p phase: no later round time"
	done
	grep -q "^IoType: WRITE XferType: GPU_BATCH .*DataSetSize: $((40 * 256))/$((40 * 256))(KiB)" "$T/out" ||
		bad batch_wr_rd "not 40 x 256 KiB written"
	grep -q "^IoType: READ XferType: GPU_BATCH .*DataSetSize: $((40 * 256))/$((40 * 256))(KiB)" "$T/out" ||
		bad batch_wr_rd "not 40 x 256 KiB read"
}
# NIXL's default shape with smaller entries: 250 entries, batches of up to
# 128, both batches of the round in flight at once.
run nixl_default 0 $((64 * K)) -e 250 -i 64K -x 5 -B 128 -W wait -I 1 -m 0 -N -V && {
	entries nixl_default 250 1 1
	expect nixl_default submits -eq 2
	expect nixl_default max_batch -eq 128
	expect nixl_default max_batches_in_flight -eq 2
	phase_has nixl_default write rounds 1
	phase_line write | grep -q later_round_usecs && bad nixl_default "a later round time with one round"
}
# A pool of 4 threads, one call per entry, 2 rounds of writes then reads.
DELAY_US=2000 run pool_wr_rd 0 $((256 * K)) -e 20 -i 256K -x 0 -w 4 -r 2 -I 1,0 -m 0 -N -V && {
	entries pool_wr_rd 20 4 1
	expect pool_wr_rd submits -eq 0
	expect pool_wr_rd sync_calls -eq 80
	expect pool_wr_rd threads -le 4
	expect pool_wr_rd threads -ge 2
	expect pool_wr_rd max_in_flight -ge 2
	phase_has pool_wr_rd write rounds 2
	phase_has pool_wr_rd read rounds 2
	grep -q '^IoType: READ XferType: GPUD Threads: 4 ' "$T/out" || bad pool_wr_rd "no read result of 4 threads"
}
# NIXL's first batch: 4 x 1,000,001 bytes, 10 rounds of one batch.
run first_batch 0 1000001 -e 4 -i 1000001 -x 5 -B 128 -r 10 -I 1 -m 0 -N -V && {
	entries first_batch 4 10 1
	expect first_batch submits -eq 10
	expect first_batch max_batch -eq 4
	phase_has first_batch write rounds 10
	phase_line write | grep -Eq ' first_round_usecs: [0-9.]*[1-9].* later_round_usecs: [0-9.]*[1-9]' ||
		bad first_batch "no first and later round times"
}
# Files at rest: written with their pattern before the clock, then read,
# polled batches.
run reads_at_rest 0 $M -e 8 -i 1M -x 5 -B 4 -W poll -r 2 -I 0 -m 0 -N -V && {
	entries reads_at_rest 8 2 0
	expect reads_at_rest submits -eq 4
	expect reads_at_rest max_batches_in_flight -eq 2
	phase_has reads_at_rest read rounds 2
}
# O_DIRECT, unregistered buffers; host memory.
run odirect_unreg 0 $M -e 8 -i 1M -x 0 -w 2 -I 1,0 -m 0 -O -b -V && {
	entries odirect_unreg 8 2 1
	expect odirect_unreg buf_registers -eq 0
}
run host_memory 0 $((256 * K)) -e 8 -i 256K -x 5 -B 8 -I 1,0 -m 3 -N -V && entries host_memory 8 2 1

# An entry moved to or from another entry's file must fail the check (a
# write sent elsewhere can also leave its own file short: read back fails).
for x in "batch 5 -B 8" "pool 0 -w 2"; do
	# shellcheck disable=SC2086 # x is a list of words
	set -- $x
	for ph in 1 0; do
		n=swapped_$1_I$ph
		SWAP=1 run "$n" 1 $((256 * K)) -e 8 -i 256K -x "$2" "$3" "$4" -I $ph -m 0 -N -V && {
			expect "$n" swapped -eq 1
			grep -Eq 'Verify: FAIL|ERROR: .*verify: read back' "$T/out" || bad "$n" "not found by the check"
			grep -q 'gdsio\.e[0-9]*\.dat: verify' "$T/out" || bad "$n" "the failure does not name the entry's file"
		}
	done
done

# Usage errors, each with a message naming the option.
usage() { # name option gdsio-args...
	name=$1 opt=$2
	shift 2
	"$GDSIO" "$@" >"$T/out" 2>&1
	rc=$?
	if [ "$rc" != 2 ]; then
		bad "$name" "exit $rc, want 2: gdsio $*"
	elif ! grep -q -- "$opt" "$T/out"; then
		bad "$name" "no message naming $opt"
	else
		echo "ok   $name: $(head -1 "$T/out")"
	fi
}
usage entries_file -e -f "$T/x" -e 4 -i 1M -I 1
usage entries_async -e -D "$D" -e 4 -i 1M -x 3 -I 1
usage entries_timed -e -D "$D" -e 4 -i 1M -x 5 -I 1 -T 1
usage entries_random -e -D "$D" -e 4 -i 1M -x 5 -I 3
usage entries_two_sizes -e -D "$D" -e 4 -i 1M,2M -x 5 -I 1
usage entries_pool_depth -B -D "$D" -e 4 -i 1M -x 0 -B 16 -I 1
usage entries_same_phase -I -D "$D" -e 4 -i 1M -x 5 -I 1,1
usage rounds_without_entries -r -D "$D" -s 1M -i 1M -x 0 -r 2
usage phases_without_entries -I -D "$D" -s 1M -i 1M -x 0 -I 1,0
usage entries_bad -e -D "$D" -e 0 -i 1M -x 5

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
