#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test_cufile_demo_checks_its_arguments_first.sh CUFILE_DEMO
#
# cufile_demo (what scripts/demo.sh runs) checks its arguments before it
# prints or writes anything:
#  - a size that is not a whole, positive number of MiB (abc, -5, 1.5, an
#    empty one), 0, one far too large to parse, and one the machine cannot
#    hold in memory (99999999 MiB) exit 2 with a message naming the value
#    and the accepted range, nothing on stdout and no file made;
#  - an extra argument, an unknown option and a missing value exit 2 with
#    the usage line;
#  - -h lists every option with its default and the largest size here;
#  - a relative -f is taken from the current directory: a 1 MiB run there
#    verifies every byte and leaves the file (-k) where it was named;
#  - as root, on a 4 MiB tmpfs, -s 8 is refused for the file system's free
#    space (SKIPPED without root or mount).
set -u
DEMO=$(readlink -f "$1")
T=$(mktemp -d "$PWD/cufile-demo.XXXXXX") || exit 1
SMALL=$T/small
cleanup() {
	mountpoint -q "$SMALL" 2>/dev/null && umount "$SMALL"
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
bad() {
	echo "FAIL $1: $2"
	fails=$((fails + 1))
}
# ok NAME TEXT: "ok" when no check failed since the last ok
seen=0
ok() {
	[ "$fails" = "$seen" ] && echo "ok   $1: $2"
	seen=$fails
}

# refused NAME WANT_REGEX ARGS...: exit 2, stderr matching WANT_REGEX, no
# stdout, no file left behind.
refused() {
	local name=$1 want=$2 rc
	shift 2
	(cd "$T" && "$DEMO" -f refused.dat "$@" >"$T/out" 2>"$T/err")
	rc=$?
	[ "$rc" = 2 ] || bad "$name" "exit $rc, want 2"
	grep -qE -- "$want" "$T/err" || bad "$name" "stderr [$(cat "$T/err")] does not match [$want]"
	[ -s "$T/out" ] && bad "$name" "printed before refusing: $(head -2 "$T/out")"
	[ -e "$T/refused.dat" ] && bad "$name" "made the file" && rm -f "$T/refused.dat"
	ok "$name" "$(head -1 "$T/err")"
}

range='accepted: 1 to [0-9]+ MiB on this machine'
refused "-s abc" "-s abc: not a whole, positive number of MiB \($range\)" -s abc
refused "-s -5" "-s -5: not a whole, positive number of MiB \($range\)" -s -5
refused "-s 1.5" "-s 1\.5: not a whole, positive number of MiB \($range\)" -s 1.5
refused "-s ''" "-s : not a whole, positive number of MiB \($range\)" -s ''
refused "-s 0" "-s 0: the size must be at least 1 MiB \($range\)" -s 0
refused "-s huge" "-s 99999999999999999999999: far more than any machine holds \($range\)" \
	-s 99999999999999999999999
refused "-s 99999999" "-s 99999999: the demo holds the data twice in host memory \(199999998 MiB\) and [0-9]+ MiB are available \($range\)" \
	-s 99999999
refused "extra argument" "unexpected argument 'extra'" -s 1 extra
refused "unknown option" "unknown option -x" -x
refused "missing value" "-s needs a value" -s
grep -q '^usage: cufile_demo ' "$T/err" || bad "missing value" "no usage line"
ok "usage line" "after a wrong argument"

# -h: every option, each with its default.
"$DEMO" -h >"$T/help" 2>&1
rc=$?
[ "$rc" = 0 ] || bad "-h" "exit $rc, want 0"
for want in '-f FILE .*' 'default: cufile_demo\.dat' '-s SIZE_MIB .*\(default: 256\)' 'here 1 to [0-9]+ ' \
	'-d .*\(default: buffered\)' '-k .*\(default: removed\)' '-h '; do
	grep -qE -- "$want" "$T/help" || bad "-h" "no line matching [$want] in: $(cat "$T/help")"
done
ok -h "every option with its default"

# A relative -f is taken from the current directory.
mkdir -p "$T/cwd"
(cd "$T/cwd" && "$DEMO" -f rel.dat -s 1 -k >"$T/run" 2>&1)
rc=$?
[ "$rc" = 0 ] || bad "relative -f" "exit $rc: $(cat "$T/run")"
[ -f "$T/cwd/rel.dat" ] && [ "$(stat -c %s "$T/cwd/rel.dat")" = 1048576 ] ||
	bad "relative -f" "no 1 MiB rel.dat in the current directory"
grep -q "^wrote $T/cwd/rel.dat: 1 MiB" "$T/run" || bad "relative -f" "does not name where it wrote: $(head -3 "$T/run")"
grep -q '^verify: all bytes correct' "$T/run" || bad "relative -f" "not verified: $(cat "$T/run")"
ok "relative -f" "written and read in the current directory"

# The file system's free space.
mkdir -p "$SMALL"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4m tmpfs "$SMALL" 2>/dev/null; then
	(cd "$SMALL" && "$DEMO" -s 8 >"$T/out" 2>"$T/err")
	rc=$?
	[ "$rc" = 2 ] || bad "small file system" "exit $rc, want 2"
	grep -qE -- "-s 8: cufile_demo\.dat needs 8 MiB and its file system has [0-4] MiB free \(accepted: 1 to [0-4] MiB on this machine\)" "$T/err" ||
		bad "small file system" "stderr: $(cat "$T/err")"
	[ -s "$T/out" ] && bad "small file system" "printed before refusing"
	ok "small file system" "$(head -1 "$T/err")"
else
	echo "SKIPPED small file system: needs root and a tmpfs mount"
fi

if [ "$fails" != 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "all passed"
