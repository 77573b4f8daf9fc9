#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# build-bases.sh - builds our library as it was at earlier commits, for
# before/after comparisons on the GPU machine (scripts/gpu-bisect.sh, or
# OPENCUFILE_BASE_LIB of scripts/gpu-bench.sh):
#
#   scripts/build-bases.sh COMMIT...      (repository root)
#
# Each COMMIT's tree is exported (git archive) and built as the GPU
# machine's build is (RelWithDebInfo, no tests, the library only); the
# library lands in .carry/bases/SHORT/libcufile.so.0, where SHORT is the
# commit's 7-character name.  .carry/ is ignored by git and travels with a
# device call that names it in `carry`.  The libraries link json-c
# dynamically: scripts/carry-deps.sh puts it in .carry/jsonc/lib, which the
# GPU scripts add to LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 COMMIT..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "$@"; do
	short=$(git rev-parse --short=7 "$c^{commit}")
	dest=.carry/bases/$short
	if [ -f "$dest/libcufile.so.0" ]; then
		echo "build-bases: $short already built"
		continue
	fi
	mkdir -p "$tmp/$short"
	git archive "$short" | tar -x -C "$tmp/$short"
	cmake -S "$tmp/$short" -B "$tmp/b-$short" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
	cmake --build "$tmp/b-$short" -j"$(nproc)" --target cufile >/dev/null
	mkdir -p "$dest"
	cp "$(readlink -f "$tmp/b-$short/libcufile.so.0")" "$dest/libcufile.so.0"
	git log -1 --format='%h %s' "$short" >"$dest/COMMIT"
	echo "build-bases: $short -> $dest/libcufile.so.0"
done
du -sh .carry/bases
