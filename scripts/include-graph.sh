#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# include-graph.sh - the module dependency graph of src/, from its
# `#include "..."` lines, and a check that it has no cycle.
#
#   scripts/include-graph.sh [-p] [DIR]     (DIR: default src/ of this tree)
#
# A module is a .c file and the .h of the same name (engine.c + engine.h =
# engine); module A depends on B when a file of A includes B's header.
# Headers that are not in DIR (cufile.h, system headers) do not count, and
# neither do conditional includes' conditions (every include line counts).
# Exit status 0 when the graph has no cycle; 1, with every cycle found
# printed as "a -> b -> a", when it has one; 2 on a usage error.  Modules
# that choose from values alone (VALUES_ONLY: planner, the one place a
# request's path is chosen) may include no header of DIR but their own,
# so that no engine, file I/O or mapping state can reach them: an include
# of another is reported and fails the check too.  -p also
# prints the graph, one "module: dependencies" line per module, lowest
# layer first where the graph allows (modules that depend on nothing come
# before those that use them).
#
# Run by ctest (test_src_include_graph_has_no_cycles) so that a new circle
# fails the build's tests; docs/architecture.md has the intended layers.

set -u
print=0
if [ "${1:-}" = "-p" ]; then
	print=1
	shift
fi
dir=${1:-$(dirname "$0")/../src}
if [ ! -d "$dir" ]; then
	echo "include-graph: $dir is not a directory" >&2
	exit 2
fi

# One "module dependency" line per include of a header that lives in DIR.
edges() {
	for f in "$dir"/*.c "$dir"/*.h; do
		[ -f "$f" ] || continue
		m=$(basename "$f")
		m=${m%.*}
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
			while read -r h; do
				[ -f "$dir/$h" ] || continue
				d=${h%.*}
				[ "$d" = "$m" ] || echo "$m $d"
			done
	done | sort -u
}

VALUES_ONLY="planner"
status=0
for m in $VALUES_ONLY; do
	for d in $(edges | awk -v m="$m" '$1 == m {print $2}'); do
		echo "include-graph: $m chooses from values alone, but includes $d.h" >&2
		status=1
	done
done

edges | awk -v show="$print" '
# Depth-first search; a dependency met while still on the path closes a
# cycle, printed from that dependency back to it.
function visit(m,    i, d, k, s) {
	state[m] = 1
	path[++depth] = m
	for (i = 1; i <= ndeps[m]; i++) {
		d = deps[m, i]
		if (state[d] == 1) {
			s = ""
			for (k = 1; k <= depth; k++)
				if (path[k] == d)
					break
			for (; k <= depth; k++)
				s = s path[k] " -> "
			print "include cycle: " s d
			cycles++
		} else if (state[d] == 0) {
			visit(d)
		}
	}
	depth--
	state[m] = 2
	order[++norder] = m
}
{
	if (!($1 in ndeps)) { ndeps[$1] = 0; mods[++nmods] = $1 }
	if (!($2 in ndeps)) { ndeps[$2] = 0; mods[++nmods] = $2 }
	deps[$1, ++ndeps[$1]] = $2
}
END {
	for (i = 1; i <= nmods; i++)
		if (state[mods[i]] == 0)
			visit(mods[i])
	if (show)
		for (i = 1; i <= norder; i++) {
			m = order[i]
			line = m ":"
			for (k = 1; k <= ndeps[m]; k++)
				line = line " " deps[m, k]
			print line
		}
	if (cycles) {
		print cycles " include cycle(s) in the module graph" > "/dev/stderr"
		exit 1
	}
}' || status=1
exit $status
