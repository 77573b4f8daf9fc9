#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# run_and_check_log.sh LOG TEXT COMMAND [ARGS...]
# Removes LOG (cufile logs are appended to), runs COMMAND and passes its exit
# status on (77 = skip included); when it passed, LOG must contain TEXT, so
# a ctest entry can prove that the run took the path it is meant to cover.
log="$1"
text="$2"
shift 2
rm -f "$log"
"$@"
rc=$?
if [ "$rc" -ne 0 ]; then
	exit "$rc"
fi
if ! grep -qF "$text" "$log"; then
	echo "FAIL: \"$text\" is not in $log: the run did not take the path this entry covers" >&2
	exit 1
fi
exit 0
