#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up, builds and runs the main job: read a generated file into GPU
# memory (host memory where there is no GPU) and print what happened.
#
#   scripts/demo.sh [-f FILE] [-s SIZE_MIB] [-d] [-k] [-h]
#
# The options are cufile_demo's (-h lists each with its default).  The build
# goes to build/ (RelWithDebInfo, no tests; its output in build/demo-build.log);
# the demo runs in the directory this was started from, so a relative -f FILE
# is taken from there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
demo=$root/build/tools/cufile_demo
if [ -x "$demo" ]; then
	echo "demo: bringing $root/build up to date"
else
	echo "demo: first run: building opencufile in $root/build (10-20 s on 2 cores)..."
fi
mkdir -p "$root/build"
log=$root/build/demo-build.log
if ! { cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF &&
	cmake --build "$root/build" -j"$(nproc)"; } >"$log" 2>&1; then
	tail -30 "$log" >&2
	echo "demo: the build failed (its whole output: $log)" >&2
	exit 1
fi
exec "$demo" "$@"
