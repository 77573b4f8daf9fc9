#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# settings-check.sh - checks that every environment variable is a setting
# of the one settings table (src/config.c: the key table's `env` column and
# the environment table) and that docs/configuration.md documents it.
#
#   scripts/settings-check.sh table GDSCHECK [SRC]
#       every variable named OPENCUFILE_* or CUFILE_* in a string of
#       SRC/*.c and SRC/*.h (default: src/ of this tree) is a row of the
#       table, and no file of SRC reads the environment but config.c (the
#       library's one reader) and cpu_features.c (LD_PRELOAD, which tells
#       valgrind; not a setting).
#   scripts/settings-check.sh docs GDSCHECK [DOC] [SRC] [TOOLS]
#       every row of the table (`gdscheck -k`) is a line of DOC (default:
#       docs/configuration.md), as gdscheck prints it; and every variable
#       named OPENCUFILE_* or CUFILE_* in a string of SRC or TOOLS (default:
#       tools/), and every variable a file of TOOLS reads with getenv, is
#       named in DOC.
#   scripts/settings-check.sh report GDSCHECK [SRC] [TOOLS]
#       every row of the table has a tier (user, tuning or test), every
#       variable named OPENCUFILE_* or CUFILE_* in a string of SRC or TOOLS
#       is a row (so it has one), and gdscheck's default report (run in
#       this environment) shows every setting of tier user - each key of
#       that tier, its variable, and each such variable that is no key's -
#       on a line of its own with its value and source, and says where the
#       rest are listed (gdscheck -k).
#
# GDSCHECK is the built tools/gdscheck, which compiles config.c in and
# prints the table (-k).  Exit status 0 when the check holds; 1, with one
# line per finding, when it does not; 2 on a usage error.  Run by ctest
# (test_settings_*), each with a second entry that shows the check fails on
# a variable outside the table, undocumented, without a tier or missing from
# the report (tests/data/settings_check).

set -u
root=$(dirname "$0")/..
mode=${1:-}
gdscheck=${2:-}
case $mode in table | docs | report) ;; *) mode= ;; esac
if [ -z "$gdscheck" ] || [ ! -x "$gdscheck" ] || [ -z "$mode" ]; then
	echo "usage: settings-check.sh table|docs|report GDSCHECK [...]" >&2
	exit 2
fi
shift 2

# The settings of the table, one "NAME TIER" a line: each key (its path),
# the key's variable, and each variable that is no key's.  Columns: key,
# tier, type, default, range, refused, environment, what it drives; and
# variable, tier, type, default, range, read by, what it does.
table_rows() {
	"$gdscheck" -k | awk -F'|' '
		/^\| key \|/ { mode = "key"; next }
		/^\| variable \|/ { mode = "env"; next }
		/^\| ---/ { next }
		/^\| / {
			n = $2; t = $3; gsub(/[ `]/, "", n); gsub(/ /, "", t)
			if (t == "") t = "-"
			print n, t
			if (mode == "key") { v = $8; gsub(/[ `]/, "", v); if (v != "") print v, t }
		}'
}

# The variables of the table, one a line.
table_variables() {
	table_rows | awk '$1 !~ /[.:]/ { print $1 }'
}

# The variables named in the C strings of the files given (escaped quotes
# and backslashes dropped first, so that every string is one "..." run).
named_in_strings() {
	cat "$@" 2>/dev/null | sed 's/\\\\//g; s/\\"//g' | grep -o '"[^"]*"' |
		grep -oE '(OPENCUFILE|CUFILE)_[A-Z0-9_]+' | sort -u
}

found=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
table_variables | sort -u >"$tmp/table"
if [ ! -s "$tmp/table" ]; then
	echo "settings-check: $gdscheck -k printed no table" >&2
	exit 2
fi

if [ "$mode" = report ]; then
	src=${1:-$root/src}
	tools=${2:-$root/tools}
	table_rows >"$tmp/rows"
	awk '$2 != "user" && $2 != "tuning" && $2 != "test" { print $1 ": no tier (user, tuning or test) in the settings table" }' \
		"$tmp/rows" >"$tmp/found"
	named_in_strings "$src"/*.c "$src"/*.h "$tools"/*.c "$tools"/*.h >"$tmp/named"
	for v in $(comm -23 "$tmp/named" "$tmp/table"); do
		echo "$v: named in $src or $tools but not a row of the settings table, so it has no tier" >>"$tmp/found"
	done
	"$gdscheck" >"$tmp/report" 2>&1
	awk '$2 == "user" { print $1 }' "$tmp/rows" | sort -u | while IFS= read -r name; do
		# Two spaces, the name, then a value and a source.
		if ! awk -v n="$name" 'substr($0, 1, length(n) + 3) == "  " n " " && NF >= 3 { f = 1 } END { exit !f }' \
			"$tmp/report"; then
			echo "$name: a setting of tier user that gdscheck's default report does not show with its value and source"
		fi
	done >>"$tmp/found"
	if ! grep -q 'gdscheck -k' "$tmp/report"; then
		echo "gdscheck's default report does not say where the settings it leaves out are listed (gdscheck -k)" \
			>>"$tmp/found"
	fi
	if [ -s "$tmp/found" ]; then
		cat "$tmp/found"
		found=1
	fi
elif [ "$mode" = table ]; then
	src=${1:-$root/src}
	named_in_strings "$src"/*.c "$src"/*.h >"$tmp/named"
	for v in $(comm -23 "$tmp/named" "$tmp/table"); do
		echo "$v: named in $src but not a row of the settings table (src/config.c)"
		found=1
	done
	for f in "$src"/*.c "$src"/*.h; do
		[ -f "$f" ] || continue
		case $(basename "$f") in config.c | cpu_features.c) continue ;; esac
		grep -nE '(^|[^A-Za-z0-9_])(secure_)?getenv[[:space:]]*\(' "$f" /dev/null |
			grep -vE ':[0-9]+:[[:space:]]*(/?\*|//)' |
			while IFS= read -r line; do
				echo "$line: reads the environment outside config.c (use config_env*)"
			done >>"$tmp/readers"
	done
	if [ -s "$tmp/readers" ]; then
		cat "$tmp/readers"
		found=1
	fi
else
	doc=${1:-$root/docs/configuration.md}
	src=${2:-$root/src}
	tools=${3:-$root/tools}
	"$gdscheck" -k | grep '^| ' | grep -vE '^\| (---|key \||variable \|)' >"$tmp/rows"
	while IFS= read -r row; do
		if ! grep -Fxq -- "$row" "$doc"; then
			name=$(echo "$row" | awk -F'|' '{ gsub(/[ `]/, "", $2); print $2 }')
			echo "$name: its row of the settings table is not in $doc as gdscheck -k prints it"
			found=1
		fi
	done <"$tmp/rows"
	{
		cat "$tmp/table"
		named_in_strings "$src"/*.c "$src"/*.h "$tools"/*.c "$tools"/*.h
		cat "$tools"/*.c "$tools"/*.h 2>/dev/null | grep -oE 'getenv\("[A-Za-z0-9_]+"\)' |
			sed 's/.*("\(.*\)")/\1/'
	} | sort -u >"$tmp/read"
	for v in $(cat "$tmp/read"); do
		if ! grep -qE "(^|[^A-Za-z0-9_])$v([^A-Za-z0-9_]|\$)" "$doc"; then
			echo "$v: read but not documented in $doc"
			found=1
		fi
	done
fi
exit $found
