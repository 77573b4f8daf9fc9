# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
#
# gdsio_spy_lib.sh - what the gdsio tests that run gdsio through a spy
# (a preload library that writes one line of name=value counters to $T/spy
# at exit) share; sourced, with T (the test's directory, gdsio's output in
# $T/out) and fails (the failures so far) set by the test.
#
#   bad NAME TEXT            count a failure, show the run's output and counters
#   judge NAME WANT PASS RC ARGS...   after a run of gdsio ARGS that exited
#                            RC: exit 77 (skip) when gdsio did, a failure when
#                            RC is not WANT, or (WANT 0 and PASS 1) when the
#                            output has no "Verify: PASS Status: ok"; 1 on a
#                            failure
#   spy NAME                 the counter NAME of the last run
#   extra KEY                the number after "KEY:" in the last Extra line
#   expect NAME COUNTER OP VALUE   a failure unless the counter OP VALUE (test)

bad() {
	echo "FAIL $1: $2"
	cat "$T/out"
	[ -f "$T/spy" ] && cat "$T/spy"
	fails=$((fails + 1))
}
judge() {
	j_name=$1 j_want=$2 j_pass=$3 j_rc=$4
	shift 4
	if [ "$j_rc" = 77 ]; then cat "$T/out"; exit 77; fi
	if [ "$j_rc" != "$j_want" ]; then
		bad "$j_name" "exit $j_rc, want $j_want: gdsio $*"
		return 1
	fi
	if [ "$j_want" = 0 ] && [ "$j_pass" = 1 ] && ! grep -q 'Verify: PASS Status: ok' "$T/out"; then
		bad "$j_name" "no 'Verify: PASS Status: ok'"
		return 1
	fi
	echo "ok   $j_name"
	return 0
}
spy() { sed -n "s/.*\<$1=\([0-9]*\).*/\1/p" "$T/spy" 2>/dev/null; }
extra() { sed -n "s/^Extra:.* $1: \([0-9.]*\).*/\1/p" "$T/out" | head -1; }
expect() {
	v=$(spy "$2")
	if [ -z "$v" ] || ! test "$v" "$3" "$4"; then bad "$1" "$2=${v:-missing}, want $3 $4"; fi
}
