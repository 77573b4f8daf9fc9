#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test_cpu_budget_reads_cgroup_quota.sh GDSCHECK GDSIO
#
# The CPU budget (src/cpu_budget.c, shared by the library and gdscheck)
# takes the lowest CFS quota along the process's cgroup and its ancestors:
#  - made-up /proc and /sys trees (OPENCUFILE_GDSCHECK_ROOT): cgroup v2
#    with the limit on a parent ("50000 100000": 0.5 CPU, rounded up to 1),
#    v2 in a container whose mount root is the container's cgroup, v1 with
#    cpu.cfs_quota_us, v2 "max" (no quota), and 2.5 CPUs of quota rounding
#    up to 3;
#  - a real cgroup, where the machine lets root make one (v1 cpu or v2 with
#    the cpu controller): gdscheck, and the library at driver open (its
#    INFO log line), run inside a cgroup limited to half a CPU both report
#    1 CPU limited by the quota.  Without root or a writable hierarchy that
#    part says SKIPPED and why; the made-up trees always run.
set -u
GDSCHECK=$1
GDSIO=$2
T=$(mktemp -d "$PWD/cpu-budget.XXXXXX") || exit 1
CG=""
cleanup() {
	if [ -n "$CG" ] && [ -d "$CG" ]; then
		# Back to the parent, then remove the test's cgroup.
		for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do echo "$p" >"$(dirname "$CG")/cgroup.procs" 2>/dev/null; done
		rmdir "$CG" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
bad() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
ncpu=$(nproc)

# tree NAME CGROUP-LINES MOUNTINFO-LINE: a made-up root under $T/NAME
tree() {
	mkdir -p "$T/$1/proc/self"
	printf '%s\n' "$2" >"$T/$1/proc/self/cgroup"
	printf '%s\n' "$3" >"$T/$1/proc/self/mountinfo"
}
# expect NAME REGEX: gdscheck's CPU budget line for the tree matches
expect() {
	local out
	out=$(OPENCUFILE_GDSCHECK_ROOT="$T/$1" "$GDSCHECK" 2>&1 | grep -A1 '^CPU budget' | tail -1)
	if [[ $out =~ $2 ]]; then echo "ok   $1: $out"; else bad "$1" "got '$out', want /$2/"; fi
}

# v2, the limit on the parent.
tree v2parent "0::/app/job" "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw"
mkdir -p "$T/v2parent/sys/fs/cgroup/app/job"
echo "50000 100000" >"$T/v2parent/sys/fs/cgroup/app/cpu.max"
echo "max 100000" >"$T/v2parent/sys/fs/cgroup/app/job/cpu.max"
expect v2parent "^  1 CPU .*cgroup quota 0\.50 \(.*/sys/fs/cgroup/app/cpu\.max\)"

# v2 in a container: the mount's root is the container's own cgroup.
tree v2container "0::/kubepods/pod7/ctr" "40 30 0:26 /kubepods/pod7 /sys/fs/cgroup ro - cgroup2 cgroup2 rw"
mkdir -p "$T/v2container/sys/fs/cgroup/ctr"
echo "100000 100000" >"$T/v2container/sys/fs/cgroup/ctr/cpu.max"
expect v2container "^  1 CPU .*cgroup quota 1\.00 \(.*/sys/fs/cgroup/ctr/cpu\.max\)"

# v1: cpu.cfs_quota_us / cpu.cfs_period_us.
tree v1 "4:cpu,cpuacct:/svc
2:memory:/svc
0::/" "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct"
mkdir -p "$T/v1/sys/fs/cgroup/cpu,cpuacct/svc"
echo 50000 >"$T/v1/sys/fs/cgroup/cpu,cpuacct/svc/cpu.cfs_quota_us"
echo 100000 >"$T/v1/sys/fs/cgroup/cpu,cpuacct/svc/cpu.cfs_period_us"
echo -1 >"$T/v1/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"
echo 100000 >"$T/v1/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"
expect v1 "^  1 CPU .*cgroup quota 0\.50 \(.*svc/cpu\.cfs_quota_us\)"

# v2 without a quota.
tree v2max "0::/free" "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw"
mkdir -p "$T/v2max/sys/fs/cgroup/free"
echo "max 100000" >"$T/v2max/sys/fs/cgroup/free/cpu.max"
expect v2max "^  $ncpu CPUs? .*no cgroup quota"

# 2.5 CPUs round up to 3 (where the machine has more than 3).
tree v2frac "0::/f" "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw"
mkdir -p "$T/v2frac/sys/fs/cgroup/f"
echo "250000 100000" >"$T/v2frac/sys/fs/cgroup/f/cpu.max"
if [ "$ncpu" -gt 3 ]; then
	expect v2frac "^  3 CPUs \(limited by cgroup quota\).*cgroup quota 2\.50"
else
	expect v2frac "^  $ncpu CPUs? .*cgroup quota 2\.50"
fi

# A real cgroup limited to half a CPU.
real=""
if [ "$(id -u)" != 0 ]; then
	real="not root"
elif [ -w /sys/fs/cgroup/cpu ] && [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
	CG=/sys/fs/cgroup/cpu/ocf-budget-test-$$
	mkdir "$CG" && echo 100000 >"$CG/cpu.cfs_period_us" && echo 50000 >"$CG/cpu.cfs_quota_us" ||
		real="cannot make a v1 cpu cgroup"
elif [ -w /sys/fs/cgroup/cgroup.subtree_control ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	CG=/sys/fs/cgroup/ocf-budget-test-$$
	mkdir "$CG" && echo "50000 100000" >"$CG/cpu.max" || real="cannot make a v2 cgroup with the cpu controller"
else
	real="no writable cgroup hierarchy with the cpu controller"
fi
if [ -z "$real" ] && [ -n "$CG" ]; then
	out=$(sh -c "echo \$\$ >'$CG/cgroup.procs' && exec '$GDSCHECK'" 2>&1 | grep -A1 '^CPU budget' | tail -1)
	if [[ $out =~ ^\ \ 1\ CPU.*cgroup\ quota\ 0\.50 ]]; then echo "ok   real cgroup, gdscheck: $out"; else bad real-gdscheck "got '$out'"; fi
	log=$T/cufile.log
	sh -c "echo \$\$ >'$CG/cgroup.procs' && CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH='$log' exec '$GDSIO' -L 1" >/dev/null 2>&1
	line=$(grep -o 'CPU budget [0-9]* (limited by [a-zA-Z_ ]*)' "$log" 2>/dev/null | tail -1)
	if [ "$ncpu" -gt 1 ]; then want="CPU budget 1 (limited by cgroup quota)"; else want="CPU budget 1 ("; fi
	case $line in "$want"*) echo "ok   real cgroup, library: $line" ;; *) bad real-library "log says '$line', want '$want'"; cat "$log" 2>/dev/null | tail -5 ;; esac
else
	echo "SKIPPED (real cgroup): $real; the made-up trees above ran"
fi

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
