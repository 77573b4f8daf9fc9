#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# docs-check.sh - the reference docs say what is true now, and stay short.
#
#   scripts/docs-check.sh [-n MAX_LINES] [DIR]
#
# DIR is a tree with docs/ (default: this script's tree).  Three pages are
# the reference: docs/architecture.md, docs/benchmarks.md and
# docs/reliability.md.  Their history (dated runs, what was measured when,
# at which commit) lives in docs/history/ and CHANGELOG.md, so that a
# reader finds what holds today without digging.  Each reference page must
#
#   - have fewer than MAX_LINES lines (800);
#   - carry no date (YYYY-MM-DD) and no commit hash (7 to 40 hex digits,
#     at least one a letter and one a digit) outside a markdown table row:
#     a table's measured columns say when and where a figure was measured,
#     prose does not.
#
# And every relative link [text](path) or [text](path#anchor) in the pages
# of docs/, docs/history/, README.md and CHANGELOG.md must name a file that
# exists and, for a markdown file, a heading that makes that anchor (the
# anchor as GitHub makes it: lower case, punctuation dropped, spaces as
# hyphens).
#
# Exit status 0 when all holds; 1, with one line per finding
# ("FILE:LINE: ..."), when something does not; 2 on a usage error.  Run
# by ctest (test_docs_reference_is_current_and_short, and against a
# fixture that must fail, test_docs_check_finds_history_in_the_reference).
set -u
max=800
if [ "${1:-}" = "-n" ]; then
	[ $# -ge 2 ] || { echo "usage: $0 [-n MAX_LINES] [DIR]" >&2; exit 2; }
	max=$2
	shift 2
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[ -d "$root/docs" ] || { echo "usage: $0 [-n MAX_LINES] [DIR]: $root has no docs/" >&2; exit 2; }
cd "$root" || exit 2
tmp_fail=$(mktemp) || exit 2
trap 'rm -f "$tmp_fail"' EXIT

fail=0
for doc in docs/architecture.md docs/benchmarks.md docs/reliability.md; do
	if [ ! -f "$doc" ]; then
		echo "$doc: missing"
		fail=1
		continue
	fi
	n=$(wc -l <"$doc")
	if [ "$n" -ge "$max" ]; then
		echo "$doc: $n lines, the reference pages stay under $max (move history to docs/history/)"
		fail=1
	fi
	# Table rows start with "|"; everything else is prose (code blocks
	# included: a sample output needs no date either).
	awk -v f="$doc" '
		/^[ \t]*\|/ { next }
		{
			line = $0
			while (match(line, /20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]/)) {
				printf "%s:%d: a date (%s) outside a table row\n", f, NR, substr(line, RSTART, RLENGTH)
				bad = 1
				line = substr(line, RSTART + RLENGTH)
			}
			n = split($0, w, /[^0-9A-Za-z]+/)
			for (i = 1; i <= n; i++)
				if (length(w[i]) >= 7 && length(w[i]) <= 40 && w[i] ~ /^[0-9a-f]+$/ &&
				    w[i] ~ /[a-f]/ && w[i] ~ /[0-9]/) {
					printf "%s:%d: a commit hash (%s) outside a table row\n", f, NR, w[i]
					bad = 1
				}
		}
		END { exit bad }' "$doc" || fail=1
done

# Links between the pages.  Headings become anchors the way GitHub makes
# them; a heading seen twice gets -1, -2 ... as GitHub does.
anchors() {
	awk '
		/^```/ { code = !code; next }
		code { next }
		/^#+ / {
			h = $0
			sub(/^#+ +/, "", h)
			sub(/[ \t]+$/, "", h)
			h = tolower(h)
			gsub(/[^a-z0-9 _-]/, "", h)
			gsub(/ /, "-", h)
			if (h in seen) { seen[h]++; print h "-" seen[h] } else { seen[h] = 0; print h }
		}' "$1"
}
for page in docs/*.md docs/history/*.md README.md CHANGELOG.md; do
	[ -f "$page" ] || continue
	dir=$(dirname "$page")
	# Every [text](target) outside code spans and blocks, one per line:
	# LINE TARGET.
	awk '
		/^```/ { code = !code; next }
		code { next }
		{
			line = $0
			gsub(/`[^`]*`/, "", line)
			while (match(line, /\]\([^) ]+\)/)) {
				print NR, substr(line, RSTART + 2, RLENGTH - 3)
				line = substr(line, RSTART + RLENGTH)
			}
		}' "$page" | while read -r ln target; do
		case $target in
		http://* | https://* | mailto:*) continue ;;
		esac
		file=${target%%#*}
		anchor=
		case $target in *#*) anchor=${target#*#} ;; esac
		if [ -z "$file" ]; then
			path=$page
		else
			path=$dir/$file
		fi
		if [ ! -e "$path" ]; then
			echo "$page:$ln: a link to $target, and $path does not exist"
			echo x >>"$tmp_fail"
			continue
		fi
		if [ -n "$anchor" ] && [ "${path%.md}" != "$path" ]; then
			if ! anchors "$path" | grep -qxF -- "$anchor"; then
				echo "$page:$ln: a link to $target, and $path has no heading that makes #$anchor"
				echo x >>"$tmp_fail"
			fi
		fi
	done
done
[ -s "$tmp_fail" ] && fail=1
exit $fail
