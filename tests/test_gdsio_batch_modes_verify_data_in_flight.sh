#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_gdsio_batch_modes_verify_data_in_flight.sh GDSIO SPY MEM
#
# The gdsio shapes of the KV-cache offload benchmark move the right bytes,
# in the memory type MEM (gdsio -m: 3 = malloc, 0 = device memory of the
# stand-in driver), with -V on every run, and really run the way their flags
# say.  SPY is a preload library (gdsio_batch_spy.c) between gdsio and
# libcufile that records each batch submit and GetStatus:
#  - one batch of 128 x 64 KiB at a time, reads and writes (writes read back
#    by gdsio, then checked again by an independent CPU read);
#  - 4 threads x 4 batch handles (-H) each: a thread's handles are all in
#    flight at once (priming), every handle is submitted again, no two
#    entries in flight share buffer or file bytes, and GetStatus is called
#    exactly in the style -W asks: wait (min_nr = outstanding, NULL
#    timeout), poll (min_nr 0, zero timeout), timed (the default);
#  - scattered batches (-R, the paged KV-cache shape): neighbouring
#    entries of a batch are seldom neighbours in the file or in memory
#    (where the contiguous default makes every pair both), every byte
#    verified, reads and writes;
#  - 128 x 1 MiB batches; the latency shape (batches of 8 x 64 KiB), whose
#    per-batch figures are printed; N threads of plain cuFileRead/Write;
#  - a wrong byte in the file fails the verified multi-handle read (exit 1,
#    "Verify: FAIL", the offset named): the check looks at the data;
#  - -H/-W without -x 5 and bad values are usage errors (exit 2).
set -u
GDSIO=$1
SPY=$2
MEM=$3
T=$(mktemp -d "$PWD/gdsio-batch.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
F=$T/data W=$T/wdata
# A sanitizer runtime wants to be first in the process; the spy comes first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
fails=0
# bad, judge, spy, extra, expect
# shellcheck source=gdsio_spy_lib.sh
. "$(dirname "$0")/gdsio_spy_lib.sh"
run() { # name expected-rc gdsio-args...: a verified run (exit 0: all passed)
	check_pass=1
	run_any "$@"
}
run_skipped() { # name gdsio-args...: a run that must be skipped, exit 0
	check_pass=0
	name=$1
	shift
	run_any "$name" 0 "$@" || return 1
	grep -q '^Extra: Status: skipped' "$T/out" || { bad "$name" "not skipped"; return 1; }
}
run_any() {
	name=$1 want=$2
	shift 2
	rm -f "$T/spy"
	GDSIO_BATCH_SPY=$T/spy LD_PRELOAD="$SPY${LD_PRELOAD:+:$LD_PRELOAD}" "$GDSIO" "$@" >"$T/out" 2>&1
	judge "$name" "$want" "$check_pass" $? "$@"
}
expect_extra() { # name key op value
	v=$(extra "$2")
	if [ -z "$v" ] || ! awk -v v="$v" -v w="$4" -v op="$3" 'BEGIN {
		exit !((op == "-eq" && v == w) || (op == "-gt" && v > w)) }'; then
		bad "$1" "$2: ${v:-missing}, want $3 $4"
	fi
}
# Every batch run: entries in flight never share bytes; every event was ours.
clean() { # name
	expect "$1" buffer_overlaps -eq 0
	expect "$1" file_overlaps -eq 0
	expect "$1" stray_events -eq 0
}
style() { # name wait poll timed: which GetStatus styles were used (1) or not (0)
	for s in wait:$2 poll:$3 timed:$4; do
		if [ "${s#*:}" = 1 ]; then expect "$1" "getstatus_${s%:*}" -gt 0; else expect "$1" "getstatus_${s%:*}" -eq 0; fi
	done
	expect "$1" getstatus_other -eq 0
}

"$GDSIO" -Z -f "$F" -s 64M >/dev/null || exit 1

# One batch of 128 x 64 KiB at a time.
run read_1x128 0 -f "$F" -s 32M -x 5 -B 128 -i 64K -m "$MEM" -N -w 1 -V -W wait && {
	clean read_1x128
	style read_1x128 1 0 0
	expect read_1x128 submits -eq 4
	expect read_1x128 max_per_submit -eq 128
	expect read_1x128 max_batches_in_flight -eq 1
	expect read_1x128 max_batches_in_flight_per_thread -eq 1
	expect_extra read_1x128 batches -eq 4
}
run write_1x128 0 -f "$W" -s 32M -I 1 -x 5 -B 128 -i 64K -m "$MEM" -O -w 1 -V && {
	clean write_1x128
	style write_1x128 0 0 1
	expect write_1x128 entries -eq 512
}
run write_1x128_cpu_check 0 -f "$W" -s 32M -x 1 -m 3 -N -w 1 -i 1M -V

# 4 threads x 4 handles x 32 x 64 KiB: 8 batches per thread, so every
# handle is submitted twice; each style in turn.
for st in wait poll timed; do
	case $st in wait) s="1 0 0" ;; poll) s="0 1 0" ;; timed) s="0 0 1" ;; esac
	run "read_4x4_$st" 0 -f "$F" -s 64M -x 5 -B 32 -H 4 -W "$st" -i 64K -m "$MEM" -N -w 4 -V && {
		clean "read_4x4_$st"
		# shellcheck disable=SC2086 # s is three words
		style "read_4x4_$st" $s
		expect "read_4x4_$st" submits -eq 32
		expect "read_4x4_$st" threads -eq 4
		expect "read_4x4_$st" max_batches_in_flight_per_thread -eq 4
		expect "read_4x4_$st" max_batches_in_flight -ge 4
		expect_extra "read_4x4_$st" batches -eq 32
	}
done
# The benchmark's shape: 4 threads x 4 handles x 128 x 64 KiB (16 batches,
# 128 MiB in flight), writes from the buffers into the file, polled.
run write_4x4x128_poll 0 -f "$W" -s 128M -I 1 -x 5 -B 128 -H 4 -W poll -i 64K -m "$MEM" -N -w 4 -V && {
	clean write_4x4x128_poll
	style write_4x4x128_poll 0 1 0
	expect write_4x4x128_poll max_per_submit -eq 128
	expect write_4x4x128_poll max_batches_in_flight_per_thread -eq 4
	expect write_4x4x128_poll submits -eq 16
}
run write_4x4x128_cpu_check 0 -f "$W" -s 128M -x 1 -m 3 -N -w 4 -i 4M -V
run read_4x4x128_wait 0 -f "$W" -s 128M -x 5 -B 128 -H 4 -W wait -i 64K -m "$MEM" -O -w 4 -V && {
	clean read_4x4x128_wait
	style read_4x4x128_wait 1 0 0
	expect read_4x4x128_wait entries -eq 2048
	expect read_4x4x128_wait max_batches_in_flight_per_thread -eq 4
}
# Contiguous batches: every neighbouring pair of a submit is adjacent in
# the file and in memory.
expect read_4x4x128_wait both_adjacent -eq "$(spy pairs)"
# Scattered (-R): file blocks and pool slots at random permutations; of
# 2032 neighbouring pairs, about 2 would be neighbours in the file or in
# memory by chance, none in both; the data is verified.
scattered() { # name
	expect "$1" pairs -gt 1000
	expect "$1" file_adjacent -lt 40
	expect "$1" buffer_adjacent -lt 40
	expect "$1" both_adjacent -lt 3
}
run read_4x4x128_scattered 0 -f "$W" -s 128M -x 5 -B 128 -H 4 -W wait -R -i 64K -m "$MEM" -N -w 4 -V && {
	clean read_4x4x128_scattered
	expect read_4x4x128_scattered entries -eq 2048
	scattered read_4x4x128_scattered
}
run write_4x4x128_scattered 0 -f "$W" -s 128M -I 1 -x 5 -B 128 -H 4 -W poll -R -i 64K -m "$MEM" -N -w 4 -V && {
	clean write_4x4x128_scattered
	scattered write_4x4x128_scattered
}
run write_scattered_cpu_check 0 -f "$W" -s 128M -x 1 -m 3 -N -w 4 -i 4M -V
run R_needs_batch 2 -f "$F" -s 1M -x 0 -R
# Random offsets with several handles: data checked (offsets may repeat).
run randread_2x4_poll 0 -f "$F" -s 32M -I 2 -x 5 -B 16 -H 4 -W poll -i 64K -m "$MEM" -N -w 2 -V &&
	style randread_2x4_poll 0 1 0

# 128 x 1 MiB batches.
run read_1x128_1m 0 -f "$W" -s 128M -x 5 -B 128 -i 1M -m "$MEM" -N -w 1 -V -W wait && {
	clean read_1x128_1m
	expect read_1x128_1m submits -eq 1
	expect read_1x128_1m max_per_submit -eq 128
}

# Latency: batches of 8 x 64 KiB, one at a time; the per-batch figures.
run latency_8x64k 0 -f "$F" -s 8M -x 5 -B 8 -i 64K -m "$MEM" -N -w 1 -V -W wait && {
	expect latency_8x64k submits -eq 16
	expect_extra latency_8x64k batches -eq 16
	expect_extra latency_8x64k batch_avg_usecs -gt 0
	expect_extra latency_8x64k batch_p99_usecs -gt 0
}
# With -T the data set must hold every entry in flight at distinct offsets.
run_skipped timed_too_small -f "$F" -s 1M -x 5 -B 8 -H 4 -i 64K -m "$MEM" -N -w 1 -T 1 -V &&
	{ grep -q 'too small for 4 x 8 entries' "$T/out" || bad timed_too_small "no reason given"; }
run timed_latency 0 -f "$F" -s 8M -x 5 -B 8 -H 2 -i 64K -m "$MEM" -N -w 1 -T 0.3 -V -W poll &&
	clean timed_latency

# N threads of plain cuFileRead/cuFileWrite, 64 KiB and 1 MiB.
run plain_read_64k 0 -f "$F" -s 32M -x 0 -i 64K -m "$MEM" -N -w 8 -V
run plain_write_1m 0 -f "$W" -s 32M -I 1 -x 0 -i 1M -m "$MEM" -O -w 8 -V
run plain_write_1m_cpu_check 0 -f "$W" -s 32M -x 1 -m 3 -N -w 1 -i 1M -V

# Wrong data must be noticed by the multi-handle read.
printf '\377\000' | dd of="$F" bs=1 seek=5000000 conv=notrunc 2>/dev/null
run detects_bad_byte 1 -f "$F" -s 64M -x 5 -B 32 -H 4 -W poll -i 64K -m "$MEM" -N -w 4 -V &&
	if ! grep -q 'Verify: FAIL' "$T/out" || ! grep -q 'file offset 500000[01]' "$T/out"; then
		bad detects_bad_byte "not reported at offset 5000000/5000001"
	fi

# Usage errors.
run H_needs_batch 2 -f "$F" -s 1M -x 0 -H 2
run W_needs_batch 2 -f "$F" -s 1M -x 3 -W poll
run W_bad 2 -f "$F" -s 1M -x 5 -W sometimes
run H_zero 2 -f "$F" -s 1M -x 5 -H 0

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
