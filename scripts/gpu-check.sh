#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# gpu-check.sh - everything one call on the GPU machine does, in one script.
#
#   scripts/gpu-check.sh            (from the repository root, as root)
#
# Steps: (a) machine facts, (b) build ours with the GPU tests, (b2) gdscheck's
# direct-path verdict per GPU, (c) ctest (not
# "large", then "large"), (c2) the hang hunt (scripts/gpu-hang-hunt.sh),
# (d) ABI probe against NVIDIA's header + identifiers
# and exports NVIDIA has that we lack, (e) differential table NVIDIA vs ours,
# (f) torch.cuda.gds round trip and cuda.bindings.cufile smoke with ours
# preloaded, (g) scripts/gpu-bench.sh if present.  A failing step never stops
# the run; each records PASS/FAIL/SKIP.  Logs go to $OUT (default ./gpu-out):
#   summary.txt tests.log gdscheck.txt abi.txt differential.md clients.log bench.log
#   hunt.log (and hang-stacks.txt after a hang)
# The summary table is the last thing printed on stdout.
#
# Environment knobs: OUT, GPU_CHECK_BUDGET (seconds for the whole run, default
# 480; every step's timeout is clamped to what is left), NV_LIBDIR, NV_INCDIR,
# CUDA_HOME, GPU_CHECK_SKIP (space-separated step names to skip: build direct
# tests tests-large hunt abi differential torch bindings bench), GPU_CHECK_USE_STALE=1
# (use a library left in build-gpu by an earlier call when this build fails),
# DIFF_CASE_IDLE (seconds without output before a differential case counts as
# hung, default 30).
#
# scripts/gpu-bench.sh, when present and executable, runs last with the time
# that is left, its output in $OUT/bench.log, and these variables set:
# OPENCUFILE_LIB (our libcufile.so.0, absolute), NV_LIBDIR, GPU_SCRATCH (a
# directory on the real disk, removed afterwards), OUT.  /run/udev is as the
# machine had it (normally absent): a bench that runs NVIDIA's library on
# local files must create the udev data itself and remove it again.

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2

OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SCR=$ROOT/gpu-scratch
BUDGET=${GPU_CHECK_BUDGET:-480}
T0=$SECONDS
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NV_LIBDIR=${NV_LIBDIR:-$CUDA_HOME/targets/x86_64-linux/lib}
NV_INCDIR=${NV_INCDIR:-$CUDA_HOME/targets/x86_64-linux/include}
CUDA_INC=$CUDA_HOME/include
STUBS=$CUDA_HOME/lib64/stubs
[ -e "$STUBS/libcuda.so" ] || STUBS=$CUDA_HOME/targets/x86_64-linux/lib/stubs
BUILD=$ROOT/build-gpu
SKIP=" ${GPU_CHECK_SKIP:-} "

SUMMARY=$OUT/summary.txt
TESTS_LOG=$OUT/tests.log
ABI_TXT=$OUT/abi.txt
DIFF_MD=$OUT/differential.md
CLIENTS_LOG=$OUT/clients.log
BENCH_LOG=$OUT/bench.log
: >"$SUMMARY" ; : >"$TESTS_LOG" ; : >"$ABI_TXT" ; : >"$DIFF_MD" ; : >"$CLIENTS_LOG"

rm -rf "$SCR"
mkdir -p "$SCR/tools"

OURLIB=""
S_NAME=() ; S_RES=() ; S_FIG=()

# ------------------------------------------------------------------ helpers

elapsed() { echo $((SECONDS - T0)); }

# tmo WANT: seconds a step may take: WANT, clamped to what is left of the budget.
tmo() {
	local want=$1 left
	left=$((BUDGET - (SECONDS - T0) - 10))
	((left < 1)) && left=1
	((want < left)) && echo "$want" || echo "$left"
}

# have_time MIN: is there at least MIN seconds left?
have_time() { (((BUDGET - (SECONDS - T0) - 10) >= $1)); }

record() { # step result figure
	S_NAME+=("$1") ; S_RES+=("$2") ; S_FIG+=("$3")
	printf '%-14s %-5s %s\n' "$1" "$2" "$3" >>"$SUMMARY"
	echo "=== [$(elapsed)s] step $1: $2 ($3)"
}

skipped() { # step -> true if the user asked to skip it
	case "$SKIP" in *" $1 "*) record "$1" SKIP "GPU_CHECK_SKIP" ; return 0 ;; esac
	return 1
}

section() { printf '\n===== %s  [t=%ss]\n' "$*" "$(elapsed)"; }

# udev_setup DIR / udev_cleanup: the udev data NVIDIA's library needs.
. "$ROOT/scripts/udev-shim.sh"

final_cleanup() {
	udev_cleanup
	rm -rf "$SCR"
}
trap final_cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

# --------------------------------------------------------- helper programs
# Small Python helpers, written to the scratch directory (removed at the end).

cat >"$SCR/tools/abi_build.py" <<'PY'
# Build the ABI probe against one header directory.  Lines of the probe that
# fail to compile (inside the FACTS / TYPEDEFS regions) are commented out and
# reported as UNAVAILABLE; the build is retried until it succeeds.
import os, re, subprocess, sys
src, incdir, cudainc, outbin = sys.argv[1:5]
lines = open(src).read().split("\n")
removable, region = set(), False
for i, l in enumerate(lines, 1):
    if "FACTS-BEGIN" in l or "TYPEDEFS-BEGIN" in l:
        region = True
        continue
    if "FACTS-END" in l or "TYPEDEFS-END" in l:
        region = False
        continue
    if region and l.strip() and not l.strip().startswith(("/*", "*", "//")):
        removable.add(i)
work = outbin + "-probe.c"
unavailable = []
for attempt in range(30):
    with open(work, "w") as f:
        f.write("\n".join(lines))
    cmd = ["gcc", "-std=gnu11", "-O0", "-Wall", "-Werror=incompatible-pointer-types",
           "-ftrack-macro-expansion=0", "-fmax-errors=0", "-I", incdir, "-I", cudainc,
           work, "-o", outbin]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 0:
        break
    bad = set()
    for m in re.finditer(re.escape(work) + r":(\d+):\d+: error", p.stderr):
        bad.add(int(m.group(1)))
    fixable = sorted(n for n in bad if n in removable)
    if not fixable:
        sys.stderr.write(p.stderr[-6000:])
        print(f"BUILD FAILED (errors outside the fact lines: {sorted(bad)[:20]})")
        sys.exit(1)
    for n in fixable:
        unavailable.append(lines[n - 1].strip())
        lines[n - 1] = "/* UNAVAILABLE: " + lines[n - 1].replace("*/", "* /") + " */"
        removable.discard(n)
    sys.stderr.write(f"attempt {attempt}: commented out {len(fixable)} line(s)\n")
    sys.stderr.write("\n".join(l for l in p.stderr.splitlines() if ": error" in l)[:4000] + "\n")
with open(outbin + ".unavailable", "w") as f:
    for u in unavailable:
        f.write("UNAVAILABLE: " + u + "\n")
print(f"built {outbin}; unavailable facts: {len(unavailable)}")
PY

cat >"$SCR/tools/idents.py" <<'PY'
# Identifiers (cuFile/CUfile/CUFile/CU_FILE_/CUFILE/cufile...) in NVIDIA's header
# that never appear as a word in ours (comments and string literals stripped).
import re, sys
def strip(t):
    t = re.sub(r"/\*.*?\*/", " ", t, flags=re.S)
    t = re.sub(r"//[^\n]*", " ", t)
    t = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', t)
    return t
pat = re.compile(r"(?<![A-Za-z0-9_])(?:cuFile|CUfile|CUFile|CU_FILE_|CUFILE|cufile)[A-Za-z0-9_]*")
nv = strip(open(sys.argv[1], errors="replace").read())
ours = strip(open(sys.argv[2], errors="replace").read())
nv_ids = sorted(set(pat.findall(nv)))
our_words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", ours))
our_ids = sorted(set(pat.findall(ours)))
missing = [w for w in nv_ids if w not in our_words]
nv_words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", nv))
extra = [w for w in our_ids if w not in nv_words]
print(f"NVIDIA header identifiers: {len(nv_ids)}; ours: {len(our_ids)}")
print(f"MISSING in ours ({len(missing)}):")
for w in missing:
    print("  missing " + w)
print(f"only in ours ({len(extra)}, informational):")
for w in extra:
    print("  extra " + w)
PY

cat >"$SCR/tools/diffrun.py" <<'PY'
# Run the differential program, rerunning the remaining cases after a crash
# or a hang (no output for IDLE seconds); write the results as JSON and the
# raw output to a log.
import json, os, select, signal, subprocess, sys, tempfile, time
binp, ddir, label, outjson, rawlog, deadline = sys.argv[1:7]
deadline = float(deadline)
IDLE = float(os.environ.get("DIFF_CASE_IDLE", "30"))
allcases = subprocess.run([binp, "--list"], capture_output=True, text=True, timeout=30).stdout.split()

def run(args):
    """Returns (rc or None, stdout, stderr, why) where why is '' or 'TIMEOUT'."""
    with tempfile.TemporaryFile() as errf:
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=errf, start_new_session=True)
        buf, last, why = b"", time.time(), ""
        fd = p.stdout.fileno()
        while True:
            r, _, _ = select.select([fd], [], [], 1.0)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                buf += chunk
                last = time.time()
            now = time.time()
            if now - last > IDLE or now > deadline:
                why = "TIMEOUT"
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                break
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        if why:
            rc = None
        errf.seek(0)
        err = errf.read()
    return rc, buf.decode("utf-8", "replace"), err.decode("utf-8", "replace"), why

res, order, comments, crashes = {}, [], [], []
def put(k, v):
    if k not in res:
        order.append(k)
        res[k] = v
    else:
        res[k] = res[k] + " | " + v
remaining = list(allcases)
first, runs = True, 0
raw = open(rawlog, "a")
raw.write(f"\n######## {label}: {binp}\n")
while remaining and runs < 25:
    runs += 1
    if deadline - time.time() < 5:
        for c in remaining:
            put(c, "NOT RUN (time budget)")
        break
    args = [binp, "--dir", ddir] + ([] if first else remaining)
    first = False
    rc, so, se, why = run(args)
    raw.write(f"\n--- run {runs}: {' '.join(args[:3])} {'(+%d cases)' % (len(args) - 3) if len(args) > 3 else '(all)'}"
              f" rc={rc} {why}\n--- stdout\n{so}\n--- stderr\n{se[-20000:]}\n")
    raw.flush()
    started, done = [], False
    for line in so.splitlines():
        if line.startswith(">> "):
            started.append(line[3:].strip())
        elif line.startswith("#"):
            comments.append(line)
            if line.strip() == "# done":
                done = True
        elif ": " in line:
            k, v = line.split(": ", 1)
            put(k.strip(), v.strip())
    if done and rc == 0:
        remaining = []
        break
    if done:  # all cases ran, but the process did not exit cleanly
        put("process_exit", f"rc={rc} {why}".strip())
        remaining = []
        break
    if not started:
        for c in remaining:
            put(c, f"NOT RUN (process failed before any case, rc={rc} {why})")
        break
    last = started[-1]
    why = why or (f"CRASH(signal {-rc})" if rc is not None and rc < 0 else f"EXIT({rc})")
    put(last, why)
    crashes.append(f"{last}: {why}")
    remaining = remaining[remaining.index(last) + 1:] if last in remaining else []
libs = sorted(set(c.split(":", 1)[1].strip() for c in comments if c.startswith("# libcufile:")))
json.dump({"label": label, "cases": allcases, "order": order, "results": res,
           "comments": comments, "crashes": crashes, "libs": libs, "runs": runs},
          open(outjson, "w"), indent=1)
print(f"{label}: {len(order)} result lines, {runs} process run(s), crashes: {crashes or 'none'}, libcufile: {libs}")
PY

cat >"$SCR/tools/difftable.py" <<'PY'
# Side-by-side markdown table of the two differential runs.
import json, sys
nv = json.load(open(sys.argv[1])); ours = json.load(open(sys.argv[2])); out = sys.argv[3]
cases = ours["cases"] or nv["cases"]
cidx = {c: i for i, c in enumerate(cases)}
pos = {}
for run in (nv, ours):
    for i, k in enumerate(run["order"]):
        pos.setdefault(k, i)
keys = sorted(set(nv["results"]) | set(ours["results"]),
              key=lambda k: (cidx.get(k.split(".")[0], 10**6), pos.get(k, 10**6), k))
esc = lambda s: s.replace("|", "\\|")
same = 0
rows = []
for k in keys:
    a = nv["results"].get(k, "(missing)")
    b = ours["results"].get(k, "(missing)")
    s = a == b
    same += s
    rows.append(f"| {k} | {esc(a)} | {esc(b)} | {'same' if s else '**DIFF**'} |")
with open(out, "a") as f:
    f.write(f"## Differential: NVIDIA libcufile vs opencufile\n\n")
    f.write(f"- rows: {len(keys)}, same: {same}, different: {len(keys) - same}\n")
    f.write(f"- NVIDIA run: libcufile mapped = {nv['libs']}; process runs = {nv['runs']}; crashes = {nv['crashes'] or 'none'}\n")
    f.write(f"- ours run: libcufile mapped = {ours['libs']}; process runs = {ours['runs']}; crashes = {ours['crashes'] or 'none'}\n\n")
    f.write("| case | NVIDIA | ours | same? |\n| --- | --- | --- | --- |\n")
    f.write("\n".join(rows) + "\n\n")
print(f"{same}/{len(keys)}")
PY

# ============================================================ (a) facts
section "(a) machine facts"
{
	echo "# gpu-check $(date -u '+%Y-%m-%dT%H:%M:%SZ')  repo=$ROOT  git=$(git rev-parse --short HEAD 2>/dev/null || echo none)"
	echo "## machine"
	nvidia-smi -L 2>&1 | sed 's/^/  /'
	nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv,noheader 2>&1 | sed 's/^/  /'
	echo "  kernel: $(uname -r)   nproc: $(nproc)"
	free -g 2>&1 | sed 's/^/  /'
	df -h "$ROOT" 2>&1 | sed 's/^/  /'
	echo "  fs of repo: $(findmnt -n -o SOURCE,FSTYPE,MAJ:MIN --target "$ROOT" 2>/dev/null)"
	if [ -e /run/udev ]; then echo "  /run/udev: exists"; else echo "  /run/udev: absent"; fi
	echo "  NVIDIA libcufile: $(ls -l "$NV_LIBDIR"/libcufile.so* 2>&1 | tr '\n' ' ')"
	echo "  NVIDIA cufile.h: $(ls "$NV_INCDIR/cufile.h" 2>&1)"
	echo "  gcc: $(gcc --version 2>/dev/null | head -1)  cmake: $(cmake --version 2>/dev/null | head -1)"
	echo "  python: $(python3 --version 2>&1)"
	echo "## steps"
} >>"$SUMMARY"
cat "$SUMMARY"
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if [ -n "$GPU_NAME" ]; then record facts PASS "$GPU_NAME"; else record facts FAIL "nvidia-smi gave no GPU"; fi

# json-c is not installed on the GPU machine: scripts/carry-deps.sh copies
# its headers and library into .carry/ on the build machine, and the device
# call names .carry in `carry`.
JSONC_ARG=
if [ -d "$ROOT/.carry/jsonc" ]; then
	JSONC_ARG="-DJSONC_ROOT=$ROOT/.carry/jsonc"
	export LD_LIBRARY_PATH="$ROOT/.carry/jsonc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# liburing likewise (linked statically: nothing needed at run time).
if [ -d "$ROOT/.carry/liburing" ]; then
	JSONC_ARG="$JSONC_ARG -DLIBURING_ROOT=$ROOT/.carry/liburing"
fi
# zlib's headers, so gdscheck reads /proc/config.gz (libz.so.1 itself is on
# every machine).
if [ -d "$ROOT/.carry/zlib" ]; then
	JSONC_ARG="$JSONC_ARG -DZLIB_ROOT=$ROOT/.carry/zlib"
fi

# ============================================================ (b) build
section "(b) build ours"
if ! skipped build; then
	{
		echo "##### cmake configure + build of the library target  [t=$(elapsed)s]"
		timeout -k 5 "$(tmo 150)" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
			-DOPENCUFILE_GPU_TESTS=ON $JSONC_ARG 2>&1 &&
			timeout -k 5 "$(tmo 240)" cmake --build "$BUILD" -j16 --target cufile 2>&1
		echo "lib-exit: $?"
	} >>"$TESTS_LOG"
	LIBRC=$(tail -1 "$TESTS_LOG" | sed -n 's/^lib-exit: //p')
	{
		echo "##### full build (tests, tools)  [t=$(elapsed)s]"
		timeout -k 5 "$(tmo 240)" cmake --build "$BUILD" -j16 2>&1
		echo "build-exit: $?"
	} >>"$TESTS_LOG"
	BRC=$(tail -1 "$TESTS_LOG" | sed -n 's/^build-exit: //p')
	OURLIB=$(find "$BUILD" -name 'libcufile.so.0' \( -type f -o -type l \) 2>/dev/null | head -1)
	[ -n "$OURLIB" ] && OURLIB=$(readlink -f "$OURLIB")
	# build-gpu survives between calls on a warm machine: a library left by an
	# earlier call is only used when this call built it (or when asked to).
	if [ "$LIBRC" != 0 ] && [ "${GPU_CHECK_USE_STALE:-0}" != 1 ]; then
		[ -n "$OURLIB" ] && echo "NOT using $OURLIB: the library did not build (GPU_CHECK_USE_STALE=1 to use it anyway)"
		OURLIB=""
	fi
	if [ "$BRC" = 0 ] && [ -n "$OURLIB" ]; then
		record build PASS "${OURLIB#"$ROOT"/}"
	else
		grep -E 'error|Error' "$TESTS_LOG" | head -20
		record build FAIL "lib rc=$LIBRC, full build rc=$BRC, lib=${OURLIB:-none}"
	fi
else
	OURLIB=$(find "$BUILD" -name 'libcufile.so.0' \( -type f -o -type l \) 2>/dev/null | head -1)
	[ -n "$OURLIB" ] && OURLIB=$(readlink -f "$OURLIB")
fi
export OPENCUFILE_LIB="$OURLIB"

# ============================================================ (b2) direct path
# gdscheck's report ends with one verdict per GPU on the direct path
# (docs/direct-path.md): the route storage could DMA into the GPU by, or the
# first missing prerequisite.  PASS: it ran and gave a verdict for every GPU.
section "(b2) direct-path verdict (gdscheck)"
if ! skipped direct; then
	if [ ! -x "$BUILD/tools/gdscheck" ]; then
		record direct FAIL "no gdscheck in build-gpu"
	else
		timeout -k 5 "$(tmo 60)" "$BUILD/tools/gdscheck" >"$OUT/gdscheck.txt" 2>&1
		rc=$?
		sed -n '/^Direct path/,$p' "$OUT/gdscheck.txt"
		ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
		nverdict=$(grep -cE '^GPU [0-9]+: (no direct route|direct route possible)' "$OUT/gdscheck.txt")
		first=$(grep -E '^GPU 0: ' "$OUT/gdscheck.txt" | tail -1)
		if [ "$rc" = 0 ] && [ "$nverdict" -gt 0 ] && [ "$nverdict" = "$ngpu" ]; then
			record direct PASS "$first"
		else
			record direct FAIL "rc=$rc, $nverdict verdicts for $ngpu GPUs (gdscheck.txt)"
		fi
	fi
fi

# ============================================================ (c) tests
# ctest_step NAME LABEL-ARGS WANT-SECONDS
ctest_step() {
	local name=$1 sel=$2 want=$3 t rc line
	skipped "$name" && return
	if [ ! -f "$BUILD/CTestTestfile.cmake" ]; then
		record "$name" FAIL "no ctest files in build-gpu"
		return
	fi
	if ! have_time 20; then record "$name" SKIP "no time left"; return; fi
	t=$(tmo "$want")
	{
		echo
		echo "##### ctest $sel (step timeout ${t}s)  [t=$(elapsed)s]"
		(cd "$BUILD" && timeout -k 5 "$t" ctest --output-on-failure $sel -j4 --timeout "$((t < 300 ? t : 300))" 2>&1)
		echo "ctest-exit: $?"
	} >"$SCR/ctest-$name.log"
	cat "$SCR/ctest-$name.log" >>"$TESTS_LOG"
	rc=$(sed -n 's/^ctest-exit: //p' "$SCR/ctest-$name.log" | tail -1)
	line=$(grep -E 'tests passed|No tests were found' "$SCR/ctest-$name.log" | tail -1)
	if [ "$rc" = 0 ]; then
		record "$name" PASS "${line:-rc=0}"
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		record "$name" FAIL "TIMEOUT after ${t}s; ${line:-}"
	else
		record "$name" FAIL "rc=$rc ${line:-}"
	fi
	grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess|Exception|Not Run)' "$SCR/ctest-$name.log" \
		| head -15 >"$SCR/ctest-$name.failed"
}
section "(c) GPU test suite"
ctest_step tests "-LE large" 150
ctest_step tests-large "-L large" 90

# ============================================================ (c2) hang hunt
# scripts/gpu-hang-hunt.sh: the workloads that hung on the real driver,
# repeated under a watchdog (a run over 60 s is a hang: stacks by cuda-gdb
# in hang-stacks.txt).  Its own budget: GPU_HUNT_BUDGET (default 330 s).
section "(c2) hang hunt"
if ! skipped hunt; then
	if [ -z "$OURLIB" ] || [ ! -d "$BUILD" ]; then
		record hunt FAIL "no build of ours"
	elif ! have_time 60; then
		record hunt SKIP "no time left"
	else
		HB=$(tmo "${GPU_HUNT_BUDGET:-330}")
		OUT="$OUT" GPU_SCRATCH="$SCR" HUNT_BUDGET=$((HB - 15)) timeout -k 5 "$HB" \
			scripts/gpu-hang-hunt.sh "$BUILD" >"$SCR/hunt.out" 2>&1
		rc=$?
		tail -12 "$SCR/hunt.out"
		hangs=$(awk '/ hangs /{for (i = 1; i < NF; i++) if ($i == "hangs") s += $(i + 1)} END {print s + 0}' "$SCR/hunt.out")
		fails=$(awk '/ failed /{for (i = 1; i < NF; i++) if ($i == "failed") s += $(i + 1)} END {print s + 0}' "$SCR/hunt.out")
		runs=$(awk '/ runs /{s += $3} END {print s + 0}' "$SCR/hunt.out")
		if [ "$rc" = 0 ] && [ "$hangs" = 0 ] && [ "$fails" = 0 ] && [ "$runs" -gt 0 ]; then
			record hunt PASS "$runs runs, 0 hangs, 0 failures"
		else
			record hunt FAIL "rc=$rc: $runs runs, $hangs hangs, $fails failures (hunt.log, hang-stacks.txt)"
		fi
	fi
fi

# ============================================================ (d) ABI
section "(d) ABI probe"
if ! skipped abi; then
	ABIDIR=$SCR/abi
	mkdir -p "$ABIDIR"
	{
		echo "##### ABI probe: NVIDIA header ($NV_INCDIR) vs ours (include/)  [t=$(elapsed)s]"
		echo "--- build against NVIDIA's header"
		timeout -k 5 "$(tmo 60)" python3 "$SCR/tools/abi_build.py" tests/gpu/abi_probe.c "$NV_INCDIR" "$CUDA_INC" "$ABIDIR/probe-nv" 2>&1
		echo "--- build against ours"
		timeout -k 5 "$(tmo 60)" python3 "$SCR/tools/abi_build.py" tests/gpu/abi_probe.c "$ROOT/include" "$CUDA_INC" "$ABIDIR/probe-ours" 2>&1
	} >>"$ABI_TXT"
	ABI_OK=1
	for w in nv ours; do
		if [ -x "$ABIDIR/probe-$w" ]; then
			{ "$ABIDIR/probe-$w"; cat "$ABIDIR/probe-$w.unavailable" 2>/dev/null; } | LC_ALL=C sort >"$ABIDIR/$w.txt"
		else
			ABI_OK=0
			echo "PROBE BUILD FAILED ($w)" >"$ABIDIR/$w.txt"
		fi
	done
	diff -u "$ABIDIR/nv.txt" "$ABIDIR/ours.txt" >"$ABIDIR/diff.txt"
	DIFFN=$(grep -cE '^[-+][^-+]' "$ABIDIR/diff.txt")
	NFACTS=$(wc -l <"$ABIDIR/ours.txt")
	{
		echo
		echo "--- diff -u NVIDIA ours (sorted probe output, $NFACTS facts; empty = identical)"
		cat "$ABIDIR/diff.txt"
		echo "--- end of diff ($DIFFN differing lines)"
		echo
		echo "--- C++17 compile of the probe against ours"
		g++ -std=c++17 -fsyntax-only -x c++ -I "$ROOT/include" -I "$CUDA_INC" tests/gpu/abi_probe.c 2>&1 | head -20
		echo "c++-exit: ${PIPESTATUS[0]}"
		echo
		echo "--- identifiers in NVIDIA's header missing from ours"
		python3 "$SCR/tools/idents.py" "$NV_INCDIR/cufile.h" "$ROOT/include/cufile.h" 2>&1
		echo
		echo "--- exported cuFile symbols: NVIDIA's libcufile.so.0 vs ours"
	} >>"$ABI_TXT"
	MISSING_IDS=$(grep -c '^  missing ' "$ABI_TXT")
	nm -D --defined-only "$NV_LIBDIR/libcufile.so.0" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' \
		| grep -E '^(cuFile|cufile|CUfile)' | LC_ALL=C sort -u >"$ABIDIR/nv.syms"
	if [ -n "$OURLIB" ]; then
		nm -D --defined-only "$OURLIB" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' \
			| grep -E '^(cuFile|cufile|CUfile)' | LC_ALL=C sort -u >"$ABIDIR/ours.syms"
	else
		: >"$ABIDIR/ours.syms"
	fi
	MISSING_SYMS=$(LC_ALL=C comm -23 "$ABIDIR/nv.syms" "$ABIDIR/ours.syms" | wc -l)
	{
		echo "NVIDIA exports $(wc -l <"$ABIDIR/nv.syms") cuFile* symbols, ours $(wc -l <"$ABIDIR/ours.syms")"
		echo "missing in ours ($MISSING_SYMS):"
		LC_ALL=C comm -23 "$ABIDIR/nv.syms" "$ABIDIR/ours.syms" | sed 's/^/  missing-export /'
		echo "only in ours:"
		LC_ALL=C comm -13 "$ABIDIR/nv.syms" "$ABIDIR/ours.syms" | sed 's/^/  extra-export /'
		echo
		echo "--- full probe output (ours, sorted)"
		cat "$ABIDIR/ours.txt"
	} >>"$ABI_TXT"
	if ((ABI_OK)) && [ "$DIFFN" = 0 ]; then
		record abi-layout PASS "$NFACTS facts identical"
	else
		record abi-layout FAIL "diff lines=$DIFFN build_ok=$ABI_OK"
	fi
	if [ "$MISSING_IDS" = 0 ] && [ "$MISSING_SYMS" = 0 ] && [ -s "$ABIDIR/nv.syms" ]; then
		record abi-names PASS "no missing identifiers/exports"
	else
		record abi-names FAIL "missing identifiers=$MISSING_IDS exports=$MISSING_SYMS"
	fi
fi

# ============================================================ (e) differential
section "(e) differential NVIDIA vs ours"
if ! skipped differential; then
	DDIR=$SCR/diff
	mkdir -p "$DDIR"
	LINKLIB=${OURLIB:-$NV_LIBDIR/libcufile.so.0}
	{
		echo "# Differential run $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
		echo
		echo "Built against include/cufile.h, linked with $LINKLIB (-l:libcufile.so.0)."
		echo
	} >>"$DIFF_MD"
	gcc -std=gnu11 -O1 -g -Wall -DOPENCUFILE_API_VERSION=1150 -I "$ROOT/include" -I "$CUDA_INC" tests/gpu/differential.c \
		-o "$SCR/differential" -L "$(dirname "$LINKLIB")" -l:libcufile.so.0 -L "$STUBS" -lcuda \
		>"$SCR/diff-build.log" 2>&1
	DBRC=$?
	if [ $DBRC != 0 ]; then
		{ echo '```'; cat "$SCR/diff-build.log"; echo '```'; } >>"$DIFF_MD"
		record differential FAIL "build failed"
	elif [ -z "$OURLIB" ]; then
		record differential FAIL "no libcufile.so.0 of ours"
	elif ! have_time 30; then
		record differential SKIP "no time left"
	else
		echo "ours first (no udev data):"
		env LD_PRELOAD="$OURLIB" LD_LIBRARY_PATH="$(dirname "$OURLIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			CUFILE_LOGFILE_PATH="$SCR/cufile-ours.log" \
			python3 "$SCR/tools/diffrun.py" "$SCR/differential" "$DDIR" ours "$SCR/diff-ours.json" \
			"$SCR/diff-raw.log" "$(($(date +%s) + $(tmo 120)))" 2>&1
		udev_setup "$DDIR"
		echo "NVIDIA (udev workaround in place):"
		env -u LD_PRELOAD LD_LIBRARY_PATH="$NV_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUFILE_LOGFILE_PATH="$SCR/cufile-nvidia.log" \
			python3 "$SCR/tools/diffrun.py" "$SCR/differential" "$DDIR" nvidia "$SCR/diff-nv.json" \
			"$SCR/diff-raw.log" "$(($(date +%s) + $(tmo 120)))" 2>&1
		udev_cleanup
		echo "udev workaround removed; /run/udev now: $([ -e /run/udev ] && ls /run/udev/data 2>/dev/null | tr '\n' ' ' || echo absent)"
		if [ -f "$SCR/diff-ours.json" ] && [ -f "$SCR/diff-nv.json" ]; then
			SAME=$(python3 "$SCR/tools/difftable.py" "$SCR/diff-nv.json" "$SCR/diff-ours.json" "$DIFF_MD")
			LIBCHK=$(python3 - "$SCR/diff-nv.json" "$SCR/diff-ours.json" "$OURLIB" "$NV_LIBDIR" <<'PY'
import json, os, sys
nv, ours = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ourlib, nvdir = os.path.realpath(sys.argv[3]), os.path.realpath(sys.argv[4])
bad = []
if ours["libs"] != [ourlib]:
    bad.append(f"ours-run maps {ours['libs']}")
if not nv["libs"] or any(not l.startswith(nvdir) for l in nv["libs"]):
    bad.append(f"nvidia-run maps {nv['libs']}")
print("; ".join(bad) if bad else "ok")
PY
)
			TOTAL=${SAME#*/}
			if [ "$LIBCHK" != ok ]; then
				record differential FAIL "same $SAME; WRONG LIBRARY: $LIBCHK"
			elif [ "${SAME%/*}" = "$TOTAL" ]; then
				record differential PASS "same $SAME rows"
			else
				record differential FAIL "same $SAME rows (see differential.md)"
			fi
		else
			record differential FAIL "a run produced no results"
		fi
		{
			echo "## Raw output of both runs"
			echo '```'
			cat "$SCR/diff-raw.log" 2>/dev/null
			echo '```'
			for w in ours nvidia; do
				echo "## cufile.log ($w), last 80 lines"
				echo '```'
				tail -n 80 "$SCR/cufile-$w.log" 2>/dev/null || echo "(none)"
				echo '```'
			done
		} >>"$DIFF_MD"
	fi
fi

# ============================================================ (f) clients
section "(f) torch.cuda.gds and cuda.bindings.cufile with ours preloaded"
client_step() { # name script want
	local name=$1 script=$2 want=$3 rc line
	skipped "$name" && return
	if [ -z "$OURLIB" ]; then record "$name" FAIL "no libcufile.so.0 of ours"; return; fi
	if ! have_time 20; then record "$name" SKIP "no time left"; return; fi
	{
		echo
		echo "##### $name: LD_PRELOAD=$OURLIB python3 $script  (udev data: $([ -e /run/udev ] && echo present || echo absent))  [t=$(elapsed)s]"
	} >>"$CLIENTS_LOG"
	mkdir -p "$SCR/$name"
	env LD_PRELOAD="$OURLIB" CUFILE_LOGFILE_PATH="$SCR/cufile-$name.log" \
		timeout -k 5 "$(tmo "$want")" python3 "$script" --dir "$SCR/$name" --expect-lib "$OURLIB" \
		>"$SCR/$name.out" 2>&1
	rc=$?
	cat "$SCR/$name.out" >>"$CLIENTS_LOG"
	{
		echo "exit: $rc"
		echo "--- cufile.log ($name), last 40 lines"
		tail -n 40 "$SCR/cufile-$name.log" 2>/dev/null || echo "(none)"
	} >>"$CLIENTS_LOG"
	line=$(grep -E '^(torch_gds|cufile_bindings): ' "$SCR/$name.out" | tail -1)
	if [ $rc = 0 ]; then
		record "$name" PASS "${line:-rc=0}"
	elif [ $rc = 124 ] || [ $rc = 137 ]; then
		record "$name" FAIL "TIMEOUT; ${line:-}"
	else
		record "$name" FAIL "rc=$rc ${line:-}"
	fi
}
client_step torch tests/gpu/torch_gds_roundtrip.py 150
client_step bindings tests/gpu/cufile_bindings_smoke.py 90

# ============================================================ (g) bench hook
section "(g) optional hooks"
if ! skipped bench; then
	if [ -x scripts/gpu-bench.sh ]; then
		if have_time 30; then
			BT=$(tmo 600)
			echo "##### scripts/gpu-bench.sh (timeout ${BT}s)  [t=$(elapsed)s]" >"$BENCH_LOG"
			mkdir -p "$SCR/bench"
			OPENCUFILE_LIB="$OURLIB" NV_LIBDIR="$NV_LIBDIR" GPU_SCRATCH="$SCR/bench" OUT="$OUT" \
				timeout -k 5 "$BT" scripts/gpu-bench.sh >>"$BENCH_LOG" 2>&1
			rc=$?
			echo "exit: $rc" >>"$BENCH_LOG"
			if [ $rc = 0 ]; then record bench PASS "see bench.log"; else record bench FAIL "rc=$rc"; fi
		else
			record bench SKIP "no time left"
		fi
	else
		record bench SKIP "scripts/gpu-bench.sh not present"
	fi
fi

# ============================================================ report
section "excerpts"
for n in tests tests-large; do
	if [ -s "$SCR/ctest-$n.failed" ]; then
		echo "-- $n failures:"
		cat "$SCR/ctest-$n.failed"
	fi
done
if [ -s "${ABIDIR:-/nonexistent}/diff.txt" ]; then
	echo "-- ABI diff (NVIDIA -/ours +), first 40 lines:"
	grep -E '^[-+][^-+]' "$ABIDIR/diff.txt" | head -40
fi
grep -E '^  missing' "$ABI_TXT" 2>/dev/null | head -30
if [ -s "$DIFF_MD" ]; then
	echo "-- differential rows that differ (params rows last; full table in differential.md):"
	grep -F '**DIFF**' "$DIFF_MD" | grep -v '^| params_' | head -35 | cut -c1-200
	grep -F '**DIFF**' "$DIFF_MD" | grep '^| params_' | head -8 | cut -c1-160
fi
grep -hE '^FAIL ' "$SCR/torch.out" "$SCR/bindings.out" 2>/dev/null | head -20 | cut -c1-300

{
	echo
	echo "total time: $(elapsed)s (budget ${BUDGET}s)"
} >>"$SUMMARY"

echo
echo "==================== SUMMARY (files in $OUT) ===================="
printf '%-14s | %-5s | %s\n' step result "key figure"
printf '%-14s-+-%-5s-+-%s\n' "--------------" "-----" "----------"
NFAIL=0
for i in "${!S_NAME[@]}"; do
	printf '%-14s | %-5s | %s\n' "${S_NAME[$i]}" "${S_RES[$i]}" "${S_FIG[$i]:0:150}"
	[ "${S_RES[$i]}" = FAIL ] && NFAIL=$((NFAIL + 1))
done
echo "total $(elapsed)s of ${BUDGET}s budget; failing steps: $NFAIL"
exit $((NFAIL > 0 ? 1 : 0))
