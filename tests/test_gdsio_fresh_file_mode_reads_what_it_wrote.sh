#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_gdsio_fresh_file_mode_reads_what_it_wrote.sh GDSIO SPY
#
# gdsio -Y SECS (reads of a file the same process finished writing SECS
# before, as a client writes a file with cuFile and reads it back) writes
# the file through the library, waits, then runs the timed reads, on the
# stand-in driver's device memory.  SPY is the preload library of the
# entries test (gdsio_entries_spy.c), which counts the cuFileWrite calls
# before the first cuFileRead and times the gap between them:
#  - a file of zeros becomes the pattern: the verified reads through an
#    O_DIRECT handle into unregistered memory pass, after 32 MiB / 16 MiB =
#    2 cuFileWrite calls, and the first read comes at least SECS after the
#    last write; the same through the pool fed by callers (-q, -Q), timed
#    (-T), from an offset (-o: the file is written up to -o + -s), and into
#    host memory;
#  - the same zero file read without -Y fails the check (exit 1): the
#    check looks at the data the write put there;
#  - -Y with -D, with writes, or with a bad time is a usage error (exit 2)
#    naming -Y.
set -u
GDSIO=$1
SPY=$2
T=$(mktemp -d "$PWD/gdsio-fresh.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
F=$T/data
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
M=1048576
fails=0
# bad, judge, spy, extra, expect
# shellcheck source=gdsio_spy_lib.sh
. "$(dirname "$0")/gdsio_spy_lib.sh"
zeros() { # MiB: F becomes that many MiB of zeros
	rm -f "$F"
	dd if=/dev/zero of="$F" bs=1048576 count="$1" 2>/dev/null
}
run() { # name rc gdsio-args...
	name=$1 want=$2
	shift 2
	rm -f "$T/spy"
	GDSIO_ENTRIES_SPY=$T/spy LD_PRELOAD="$SPY${LD_PRELOAD:+:$LD_PRELOAD}" "$GDSIO" -f "$F" "$@" >"$T/out" 2>&1
	judge "$name" "$want" 1 $? "$@"
}
fresh() { # name writes min-gap-ms: the file was written first, then read
	expect "$1" writes_before_reads -eq "$2"
	expect "$1" reads -gt 0
	expect "$1" write_read_gap_ms -ge "$3"
	grep -q '^# -Y: wrote ' "$T/out" || bad "$1" "no '# -Y: wrote' line"
}

zeros 32
run odirect_unreg 0 -s 32M -Y 0.3 -x 0 -m 0 -O -b -w 4 -i 4M -V && fresh odirect_unreg 2 300
zeros 32
run pool_callers 0 -s 32M -Y 0.2 -x 0 -m 0 -O -b -w 4 -Q 2 -i 8M -q 4M -V && fresh pool_callers 2 200
# Timed: more reads than one pass over the data set (16 MiB / 4 MiB = 4)
# in a second, which even a sanitizer build on a busy machine makes.
zeros 16
run timed 0 -s 16M -Y 0.2 -x 0 -m 0 -N -w 2 -i 4M -T 1 -V && {
	fresh timed 1 200
	expect timed reads -gt 4
}
zeros 4
run offset 0 -o 4M -s 16M -Y 0.1 -x 0 -m 0 -N -w 2 -i 4M -V && {
	fresh offset 2 100
	[ "$(stat -c %s "$F")" = $((20 * M)) ] || bad offset "the file is $(stat -c %s "$F") bytes, want $((20 * M))"
}
zeros 32
run host 0 -s 32M -Y 0.1 -x 0 -m 3 -N -w 2 -i 4M -V && fresh host 2 100

# Without -Y the zeros stay: the check must fail.
zeros 32
run zeros_without_fresh 1 -s 32M -x 0 -m 0 -O -b -w 4 -i 4M -V &&
	{ grep -q 'Verify: FAIL' "$T/out" || bad zeros_without_fresh "no 'Verify: FAIL'"; }

usage() { # name gdsio-args...
	name=$1
	shift
	"$GDSIO" "$@" >"$T/out" 2>&1
	rc=$?
	if [ "$rc" != 2 ]; then
		bad "$name" "exit $rc, want 2: gdsio $*"
	elif ! grep -q -- '-Y' "$T/out"; then
		bad "$name" "no message naming -Y"
	else
		echo "ok   $name: $(head -1 "$T/out")"
	fi
}
usage fresh_dir -D "$T" -s 4M -Y 1 -x 0 -m 0 -i 1M
usage fresh_writes -f "$F" -s 4M -Y 1 -x 0 -m 0 -i 1M -I 1
usage fresh_bad -f "$F" -s 4M -Y -1 -x 0 -m 0 -i 1M
usage fresh_bad_word -f "$F" -s 4M -Y soon -x 0 -m 0 -i 1M

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
