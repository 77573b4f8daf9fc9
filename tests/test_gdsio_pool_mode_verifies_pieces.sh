#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_gdsio_pool_mode_verifies_pieces.sh GDSIO SPY
#
# gdsio's pool shape (-q PIECE: each -i request cut into pieces that the -w
# threads take from one shared queue, as a client library's thread pool
# does) moves the right bytes and runs the way its flags say, on the
# stand-in driver's device memory.  SPY is a preload library
# (gdsio_pool_spy.c) between gdsio and libcufile that records every
# cuFileRead and slows each one a little, so that calls meant to overlap do:
#  - 16 MiB requests in 4 MiB pieces on 4 threads, and the whole data set as
#    one request in 4 MiB pieces on 8 threads; buffered and O_DIRECT,
#    registered and not (-b); every byte verified (-V), the byte count and
#    the op and request counts as planned;
#  - every call is one piece at its place in the request's file range and
#    in the one buffer, the requests go through the file in order, and no
#    piece of the next request starts before the current one is done, while
#    the pieces of one request do run at once on different threads;
#  - a timed run (-T) goes round the data set again and ends with whole
#    requests only; host memory (-m 3) and pread (-x 1) also work;
#  - a wrong byte in the file fails the verified pool read (exit 1,
#    "Verify: FAIL", the offset named): the check looks at the data;
#  - caller threads feeding the pool (-Q, KvikIO's pool fed by several
#    threads of the application): 4 callers x 16 MiB requests in 4 MiB
#    pieces on 8 threads and 16 callers x 64 KiB requests (one piece each)
#    on 4 threads, buffered and O_DIRECT, registered and not, every byte
#    verified; each caller goes through its own region in order with its
#    own buffer, none of its next request before its current one is done,
#    the requests of several callers in flight at once, and the reads done
#    by the pool's threads only (never more threads nor calls in flight
#    than -w); a timed run ends with whole requests; a wrong byte fails;
#  - a piece that does not divide the request, the shapes the pool does not
#    support (writes, random reads, batches, -D), and -Q without -q are
#    usage errors (exit 2) with a message naming -q; a bad count of
#    callers is one naming -Q.
set -u
GDSIO=$1
SPY=$2
T=$(mktemp -d "$PWD/gdsio-pool.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
F=$T/data
# A sanitizer runtime wants to be first in the process; the spy comes first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
export GDSIO_POOL_SPY_DELAY_US=3000
M=1048576
fails=0
# bad, judge, spy, extra, expect
# shellcheck source=gdsio_spy_lib.sh
. "$(dirname "$0")/gdsio_spy_lib.sh"
# run NAME RC REQUEST PIECE SET gdsio-args...: one run through the spy, told the
# request, piece and data set sizes (bytes) and the callers (callers=N, for
# -Q N); a verified run when RC is 0
run() {
	name=$1 want=$2 req=$3 piece=$4 set=$5
	shift 5
	rm -f "$T/spy"
	GDSIO_POOL_SPY=$T/spy GDSIO_POOL_SPY_REQUEST=$req GDSIO_POOL_SPY_PIECE=$piece GDSIO_POOL_SPY_SET=$set \
		GDSIO_POOL_SPY_CALLERS=${callers:-1} \
		LD_PRELOAD="$SPY${LD_PRELOAD:+:$LD_PRELOAD}" "$GDSIO" "$@" >"$T/out" 2>&1
	rc=$?
	callers='' # a prefix assignment to a function may outlive the call (POSIX leaves it open)
	judge "$name" "$want" 1 $rc "$@"
}
expect_extra() { # name key value
	v=$(extra "$2")
	[ "$v" = "$3" ] || bad "$1" "$2: ${v:-missing}, want $3"
}
# The calls were pieces in order, one request at a time, nothing partial.
shape() { # name
	for c in misshapen buffer_mismatch early out_of_order repeated partial; do
		expect "$1" "$c" -eq 0
	done
}
# One pass: the byte count of gdsio's line, its ops and requests, the spy's.
pass() { # name data-set-bytes ops requests
	grep -q "DataSetSize: $(($2 / 1024))/$(($2 / 1024))(KiB)" "$T/out" ||
		bad "$1" "not $(($2 / 1024)) KiB read of $(($2 / 1024)) planned"
	grep -q " ops: $3 " "$T/out" || bad "$1" "not $3 ops"
	expect_extra "$1" requests "$4"
	expect_extra "$1" piece_bytes $((4 * M))
	expect "$1" calls -eq "$3"
	expect "$1" requests -eq "$4"
}

"$GDSIO" -Z -f "$F" -s 128M >/dev/null || exit 1

# both NAME REQUEST_MIB SET_MIB THREADS OPS REQUESTS MAX_IN_FLIGHT: verified
# pool reads of REQUEST_MIB in 4 MiB pieces over SET_MIB on THREADS threads,
# through a buffered and an O_DIRECT fd, into a registered and an
# unregistered buffer; the pieces of a request at once on several threads.
both() {
	for fd in N O; do
		for reg in r b; do
			regopt=
			[ "$reg" = b ] && regopt=-b
			# shellcheck disable=SC2086 # regopt is empty or one option
			run "$1_$fd$reg" 0 $(($2 * M)) $((4 * M)) $(($3 * M)) -f "$F" -s "$3M" -x 0 -m 0 -$fd $regopt \
				-w "$4" -i "$2M" -q 4M -V && {
				shape "$1_$fd$reg"
				pass "$1_$fd$reg" $(($3 * M)) "$5" "$6"
				expect "$1_$fd$reg" max_in_flight -ge 2
				expect "$1_$fd$reg" max_in_flight -le "$7"
				expect "$1_$fd$reg" threads -ge 2
			}
		done
	done
}
# 16 MiB requests in 4 MiB pieces on 4 threads: 4 requests of 4 pieces.
both req16m_t4 16 64 4 16 4 4
# The whole data set as one request in 4 MiB pieces on 8 threads.
both whole_t8 128 128 8 32 1 8
# More threads than pieces: 8 threads on 16 MiB requests of 4 pieces.
run req16m_t8 0 $((16 * M)) $((4 * M)) $((64 * M)) -f "$F" -s 64M -x 0 -m 0 -O -b -w 8 -i 16M -q 4M -V && {
	shape req16m_t8
	pass req16m_t8 $((64 * M)) 16 4
	expect req16m_t8 max_in_flight -le 4
}
# Timed: round the 32 MiB data set (two requests) more than once, whole
# requests only.
run timed 0 $((16 * M)) $((4 * M)) $((32 * M)) -f "$F" -s 32M -x 0 -m 0 -N -w 4 -i 16M -q 4M -T 0.5 -V && {
	shape timed
	expect timed requests -gt 2
	r=$(extra requests)
	expect timed calls -eq $((${r:-0} * 4))
}
# Host memory, and pread into it (no cuFile: the spy sees nothing).
run host_malloc 0 $((16 * M)) $((4 * M)) $((64 * M)) -f "$F" -s 64M -x 0 -m 3 -N -w 4 -i 16M -q 4M -V && {
	shape host_malloc
	pass host_malloc $((64 * M)) 16 4
}
run cpu_pread 0 $((16 * M)) $((4 * M)) $((64 * M)) -f "$F" -s 64M -x 1 -m 3 -N -w 4 -i 16M -q 4M -V && {
	grep -q " ops: 16 " "$T/out" || bad cpu_pread "not 16 ops"
	expect cpu_pread calls -eq 0
}

# Callers feeding the pool (-Q): every call a piece of its caller's request,
# each caller its own buffer and region, several callers' requests at once,
# the reads done by the pool's -w threads only.
# callers_both NAME CALLERS REQUEST_KIB PIECE_KIB SET_MIB THREADS CALLS REQUESTS
callers_both() {
	for fd in N O; do
		for reg in r b; do
			regopt=
			[ "$reg" = b ] && regopt=-b
			# shellcheck disable=SC2086 # regopt is empty or one option
			callers=$2 run "$1_$fd$reg" 0 $(($3 * 1024)) $(($4 * 1024)) $(($5 * M)) -f "$F" -s "$5M" -x 0 \
				-m 0 -$fd $regopt -w "$6" -Q "$2" -i "$3K" -q "$4K" -V && {
				n=$1_$fd$reg
				shape "$n"
				grep -q "DataSetSize: $(($5 * 1024))/$(($5 * 1024))(KiB)" "$T/out" || bad "$n" "not $5 MiB read"
				grep -q " ops: $7 " "$T/out" || bad "$n" "not $7 ops"
				expect_extra "$n" requests "$8"
				expect_extra "$n" callers "$2"
				expect "$n" calls -eq "$7"
				expect "$n" requests -eq "$8"
				expect "$n" shared_buffers -eq 0
				expect "$n" max_callers_in_flight -ge 2
				expect "$n" max_in_flight -le "$6"
				expect "$n" threads -le "$6"
				expect "$n" threads -ge 2
			}
		done
	done
}
# 4 callers x 16 MiB requests (2 each) in 4 MiB pieces on a pool of 8.
callers_both callers4_16m 4 16384 4096 128 8 32 8
# 16 callers x 64 KiB requests, each one piece, on a pool of 4: the calls
# come from the pool's 4 threads, not from the 16 callers.
callers_both callers16_64k 16 64 64 16 4 256 256
# Timed: each caller goes round its region again, whole requests only.
callers=4 run callers_timed 0 $((16 * M)) $((4 * M)) $((64 * M)) -f "$F" -s 64M -x 0 -m 0 -N -w 4 -Q 4 -i 16M \
	-q 4M -T 0.5 -V && {
	shape callers_timed
	expect callers_timed requests -gt 4
	r=$(extra requests)
	expect callers_timed calls -eq $((${r:-0} * 4))
}

# Wrong data must be noticed: two bytes in the third piece of the second
# request.
printf '\377\000' | dd of="$F" bs=1 seek=$((16 * M + 8 * M + 12345)) conv=notrunc 2>/dev/null
run detects_bad_byte 1 $((16 * M)) $((4 * M)) $((64 * M)) -f "$F" -s 64M -x 0 -m 0 -N -w 4 -i 16M -q 4M -V &&
	if ! grep -q 'Verify: FAIL' "$T/out" || ! grep -Eq "file offset $((16 * M + 8 * M + 12345))|file offset $((16 * M + 8 * M + 12346))" "$T/out"; then
		bad detects_bad_byte "not reported at offset $((16 * M + 8 * M + 12345))"
	fi
# The same through callers: the byte is in the first request of caller 1.
callers=4 run callers_detect_bad_byte 1 $((16 * M)) $((4 * M)) $((64 * M)) -f "$F" -s 64M -x 0 -m 0 -N -w 4 -Q 4 \
	-i 16M -q 4M -V &&
	if ! grep -q 'Verify: FAIL' "$T/out" || ! grep -Eq "file offset $((16 * M + 8 * M + 12345))|file offset $((16 * M + 8 * M + 12346))" "$T/out"; then
		bad callers_detect_bad_byte "not reported at offset $((16 * M + 8 * M + 12345))"
	fi

# Usage errors, each with a message naming -q (or $flag).
usage() { # name gdsio-args...
	name=$1
	shift
	"$GDSIO" "$@" >"$T/out" 2>&1
	rc=$?
	if [ "$rc" != 2 ]; then
		bad "$name" "exit $rc, want 2: gdsio $*"
	elif ! grep -q -- "${flag:--q}" "$T/out"; then
		bad "$name" "no message naming ${flag:--q}"
	else
		echo "ok   $name: $(head -1 "$T/out")"
	fi
}
usage piece_not_dividing -f "$F" -s 64M -x 0 -m 0 -i 16M -q 3M
usage piece_larger -f "$F" -s 64M -x 0 -m 0 -i 4M -q 16M
usage pool_writes -f "$F" -s 64M -x 0 -m 0 -I 1 -i 16M -q 4M
usage pool_random -f "$F" -s 64M -x 0 -m 0 -I 2 -i 16M -q 4M
usage pool_batch -f "$F" -s 64M -x 5 -m 0 -i 16M -q 4M
usage pool_async -f "$F" -s 64M -x 3 -m 0 -i 16M -q 4M
usage pool_dir -D "$T" -s 64M -x 0 -m 0 -i 16M -q 4M
usage pool_shared -f "$F" -s 64M -x 0 -m 0 -A -i 16M -q 4M
usage piece_bad -f "$F" -s 64M -x 0 -m 0 -i 16M -q 0
usage callers_without_pool -f "$F" -s 64M -x 0 -m 0 -i 16M -Q 4
flag=-Q usage callers_bad -f "$F" -s 64M -x 0 -m 0 -i 16M -q 4M -Q 0

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
