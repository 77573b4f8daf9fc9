#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_gdscheck_prints_every_setting_with_its_source.sh GDSCHECK DATA
#
# gdscheck prints every setting with its value and where it came from:
# every key (default, file, environment) and every environment variable of
# the library (default, environment; "(computed)" for a default the library
# computes), one line each as many as the table has (gdscheck -k); before
# them the messages: a value clamped into its range, one refused, and a
# variable named OPENCUFILE_* that the library does not know.
set -u
GDSCHECK=$1
DATA=$2
out=$(CUFILE_ENV_PATH_JSON="$DATA/cufile_engine_split.json" CUFILE_LOGGING_LEVEL=INFO \
	OPENCUFILE_PIECE_KB=64 OPENCUFILE_STRIPE_SPIN_US=5000 OPENCUFILE_READAHEAD=maybe \
	OPENCUFILE_NOT_A_SETTING=1 "$GDSCHECK" 2>&1)
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
expect '^  OPENCUFILE_PIECE_KB +64 KiB +environment$' "a variable set"
expect '^  OPENCUFILE_STRIPE_KB +2048 KiB +default$' "a variable at its default"
expect '^  OPENCUFILE_IO_THREADS +\(computed\) +default$' "a default the library computes"
expect '^  OPENCUFILE_STRIPE_SPIN_US +1000 us +environment$' "a value clamped into its range"
expect '^  WARN: environment OPENCUFILE_STRIPE_SPIN_US="5000": outside \[0, 1000\] us; using 1000$' \
	"the clamped value's message"
expect '^  OPENCUFILE_READAHEAD +on +default$' "a value refused"
expect '^  WARN: environment OPENCUFILE_READAHEAD="maybe": not on or off .*; using on$' \
	"the refused value's message"
expect '^  WARN: environment OPENCUFILE_NOT_A_SETTING is not a variable of this library' "an unknown variable"
expect '^  OPENCUFILE_LIBCUDA +"' "the driver library"
# One line per setting of the library.
keys=$("$GDSCHECK" -k | awk '/^\| key \|/ { t = 1; next } /^\| variable \|/ { t = 2; next }
	/^\| ---/ { next } /^\| `/ && t == 1 { k++ } /^\| `/ && t == 2 && / the library/ { e++ }
	END { print k + 0, e + 0 }')
set -- $keys
printed_keys=$(printf '%s\n' "$out" | sed -n '/^  key  /,/^  environment variable /p' |
	grep -vE '^  (key|environment variable) ' | grep -c '^  [a-z]')
printed_env=$(printf '%s\n' "$out" | sed -n '/^  environment variable /,/^$/p' | grep -cE '^  [A-Z]')
if [ "$printed_keys" != "$1" ] || [ "$printed_env" != "$2" ]; then
	echo "FAIL: $printed_keys keys and $printed_env variables printed; the table has $1 and $2"
	status=1
fi
if [ $status -ne 0 ]; then
	printf '%s\n' "$out" | sed -n '/^Configuration/,/^CPU budget/p'
else
	echo "PASS: $1 keys and $2 environment variables, each with its value and source"
fi
exit $status
