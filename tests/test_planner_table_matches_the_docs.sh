#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_planner_table_matches_the_docs.sh TABLE_BINARY ARCHITECTURE_MD
#
# docs/architecture.md shows the planner's table as the read and write
# paths' reference: the block between its two markers must be exactly what
# `test_planner_table --markdown` prints, so a row that changes in the test
# changes in the docs (regenerate the block with that command).
set -u
bin=$1
doc=$2
begin='<!-- planner table: test_planner_table --markdown -->'
end='<!-- end of the planner table -->'
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
"$bin" --markdown >"$t/want" || { echo "FAIL: $bin --markdown failed"; exit 1; }
awk -v b="$begin" -v e="$end" '$0 == e {on = 0} on {print} $0 == b {on = 1; seen = 1} END {exit !seen}' "$doc" >"$t/have" ||
	{ echo "FAIL: $doc has no line '$begin'"; exit 1; }
if ! cmp -s "$t/want" "$t/have"; then
	echo "FAIL: the planner table in $doc is not what the test prints:"
	diff -u "$t/have" "$t/want" | head -40
	exit 1
fi
echo "ok: the planner table in $doc is the test's ($(grep -c '^| ' "$t/want") lines)"
