# SPDX-License-Identifier: Apache-2.0
# checks.sh - sourced by the scripts that count checks (scripts/package-test.sh,
# tests/test_wheel_gives_ours_to_every_cufile_user_until_uninstalled.sh): one
# line per check, "ok:" or "FAIL:", and last "N passed, N failed" (the line
# scripts/test.sh reads); finish exits 0 when nothing failed, else 1.
# shellcheck shell=bash disable=SC2034  # pass and fail are the caller's too
pass=0 fail=0

ok() { echo "ok:   $*"; pass=$((pass + 1)); }
not_ok() { echo "FAIL: $*"; fail=$((fail + 1)); }
# check DESCRIPTION COMMAND...: one check, the command's output shown on failure.
check() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$what"
	else
		not_ok "$what"
		tail -30 <<<"$out" | sed 's/^/      /'
	fi
}
finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
