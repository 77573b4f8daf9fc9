#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_gdscheck_prints_every_setting_with_its_source.sh GDSCHECK DATA
#
# gdscheck prints every setting of tier user with its value and where it
# came from: every key (default, file, environment), every key's variable
# (the key's value and source) and every other variable of tier user, one
# line each, as many as the table has (gdscheck -k); the settings of tier
# tuning and test only where the environment sets them, marked with their
# tier ("(computed)" for a default the library computes), and a line that
# counts the rest and names gdscheck -k.  Before them the messages: a value
# clamped into its range, one refused, and a variable named OPENCUFILE_*
# that the library does not know.
set -u
GDSCHECK=$1
DATA=$2
out=$(CUFILE_ENV_PATH_JSON="$DATA/cufile_engine_split.json" CUFILE_LOGGING_LEVEL=INFO \
	OPENCUFILE_PIECE_KB=64 OPENCUFILE_STRIPE_SPIN_US=5000 OPENCUFILE_READAHEAD=maybe \
	OPENCUFILE_NOT_A_SETTING=1 OPENCUFILE_STAGING_REGISTER=off OPENCUFILE_IO_THREADS= \
	OPENCUFILE_ASYNC_THREADS=many OPENCUFILE_DISABLE=1 "$GDSCHECK" 2>&1)
status=0
expect() { # an extended regular expression some line must match, and why
	if ! printf '%s\n' "$out" | grep -Eq -- "$1"; then
		echo "FAIL: $2: no line matches: $1"
		status=1
	fi
}
expect '^  logging\.level +"INFO" +environment$' "a key set by its variable"
expect '^  execution\.min_io_threshold_size_kb +4 +file' "a key set by the file"
expect '^  execution\.max_io_queue_depth +128 +default$' "a key at its default"
expect '^  CUFILE_LOGGING_LEVEL +"INFO" +environment \(logging\.level\)$' "a key's variable, set"
expect '^  OPENCUFILE_WAIT_WATCHDOG_S +30 +default \(execution\.wait_watchdog_s\)$' "a key's variable, unset"
expect '^  OPENCUFILE_DEREGISTER_WAIT_MS +10000 ms +default$' "a user variable at its default"
expect '^  OPENCUFILE_DISABLE +"1" +environment \(read by the Python wheel\)$' "another program's user variable"
expect '^  OPENCUFILE_PIECE_KB +64 KiB +environment \(tuning\)$' "a tuning variable set"
expect '^  OPENCUFILE_STAGING_REGISTER +off +environment \(test\)$' "a test variable set"
expect '^  OPENCUFILE_ASYNC_THREADS +\(computed\) +default \(tuning\)$' "a refused value of a default the library computes"
expect '^  OPENCUFILE_STRIPE_SPIN_US +1000 us +environment \(tuning\)$' "a value clamped into its range"
expect '^  not shown: [0-9]+ tuning and [0-9]+ test settings at their defaults; gdscheck -k lists every setting' \
	"where the rest are listed"
expect '^  WARN: environment OPENCUFILE_STRIPE_SPIN_US="5000": outside \[0, 1000\] us; using 1000$' \
	"the clamped value's message"
expect '^  OPENCUFILE_READAHEAD +on +default$' "a value refused"
expect '^  WARN: environment OPENCUFILE_READAHEAD="maybe": not on or off .*; using on$' \
	"the refused value's message"
expect '^  WARN: environment OPENCUFILE_NOT_A_SETTING is not a variable of this library' "an unknown variable"
if printf '%s\n' "$out" | grep -Eq '^  OPENCUFILE_(STRIPE_KB|IO_THREADS) '; then
	echo "FAIL: a tuning variable the environment does not set is in the report"
	status=1
fi
# One line per setting of tier user, and per tuning and test variable set
# (here 4 of them: OPENCUFILE_PIECE_KB, OPENCUFILE_STRIPE_SPIN_US,
# OPENCUFILE_STAGING_REGISTER, OPENCUFILE_ASYNC_THREADS; and
# OPENCUFILE_LIBCUDA where the test runs with it set).
keys=$("$GDSCHECK" -k | awk -F'|' '/^\| key \|/ { t = 1; next } /^\| variable \|/ { t = 2; next }
	/^\| ---/ { next } /^\| `/ && $3 ~ /user/ && t == 1 { k++; if ($8 ~ /`/) e++ }
	/^\| `/ && $3 ~ /user/ && t == 2 { e++ } END { print k + 0, e + 0 }')
set -- $keys
extra=4
[ -n "${OPENCUFILE_LIBCUDA:-}" ] && extra=5
printed_keys=$(printf '%s\n' "$out" | sed -n '/^  key  /,/^  environment variable /p' |
	grep -vE '^  (key|environment variable) ' | grep -c '^  [a-z]')
printed_env=$(printf '%s\n' "$out" | sed -n '/^  environment variable /,/^$/p' | grep -cE '^  [A-Z]')
if [ "$printed_keys" != "$1" ] || [ "$printed_env" != "$(($2 + extra))" ]; then
	echo "FAIL: $printed_keys keys and $printed_env variables printed; the table has $1 and $2 of tier user" \
		"(and $extra set of the others)"
	status=1
fi
if [ $status -ne 0 ]; then
	printf '%s\n' "$out" | sed -n '/^Configuration/,/^CPU budget/p'
else
	echo "PASS: $1 keys and $2 environment variables of tier user, each with its value and source"
fi
exit $status
