#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# run_and_check_log.sh LOG TEXT [TEXT...] -- COMMAND [ARGS...]
# Removes LOG (cufile logs are appended to), runs COMMAND and passes its exit
# status on (77 = skip included); when it passed, LOG must contain every
# TEXT, so a ctest entry can prove that the run took the paths it is meant
# to cover.  A TEXT written !TEXT must not be in LOG (a path not taken).
log="$1"
shift
n=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	n=$((n + 1))
	eval "text_$n=\$1"
	shift
done
if [ $# -eq 0 ] || [ "$n" -eq 0 ]; then
	echo "usage: run_and_check_log.sh LOG TEXT [TEXT...] -- COMMAND [ARGS...]" >&2
	exit 1
fi
shift # the --
rm -f "$log"
"$@"
rc=$?
if [ "$rc" -ne 0 ]; then
	exit "$rc"
fi
i=1
while [ "$i" -le "$n" ]; do
	eval "text=\$text_$i"
	case "$text" in
	!*)
		if grep -qF -- "${text#!}" "$log" 2>/dev/null; then
			echo "FAIL: \"${text#!}\" is in $log: the run took a path this entry excludes" >&2
			exit 1
		fi
		;;
	*)
		if ! grep -qF -- "$text" "$log" 2>/dev/null; then
			echo "FAIL: \"$text\" is not in $log: the run did not take the path this entry covers" >&2
			exit 1
		fi
		;;
	esac
	i=$((i + 1))
done
exit 0
