#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# gpu-wheel-check.sh - the Python wheel on the GPU machine (docs/using.md,
# "Python"): one pip install gives torch.cuda.gds and cuda.bindings.cufile
# our library with no LD_PRELOAD, and one pip uninstall gives NVIDIA's back.
#
#   scripts/gpu-wheel-check.sh [WHEEL]     (repository root, as root)
#
# WHEEL: default the one dist/opencufile-*.whl (built on the CPU machine by
# scripts/wheel.sh; the device call carries `dist`).  Nothing is built here.
#
# Steps, each PASS/FAIL/NOTE in the summary:
#  (a) facts: the machine's Python, torch, cuda.bindings, the libcufile copies
#      of the nvidia wheels and of the toolkit, and the lines of torch's
#      loader that open the nvidia wheels' libraries by full path;
#  (b) a venv made with --system-site-packages over that Python (PYTHON,
#      default python3), the wheel installed offline (pip --no-index);
#  (c) in the venv: `python -m opencufile`, the gdscheck command, interpreter
#      start maps no CUDA driver, start cost (median of 20 with and without
#      OPENCUFILE_DISABLE=1);
#  (d) tests/gpu/torch_gds_roundtrip.py and tests/gpu/cufile_bindings_smoke.py
#      with NO LD_PRELOAD: the script passes (every cuFile symbol binds to
#      ours: clientcheck.py), the cufile log names our file, and
#      /proc/self/maps holds exactly one libcufile (NOTE when the only other
#      copy is an nvidia wheel's that torch's loader opened by full path and
#      nothing binds to: docs/using.md says why);
#  (e) pip uninstall: the venv as it was, no file of ours left;
#  (f) the two scripts again (the torch one smaller), the udev data NVIDIA's
#      library needs in place (scripts/udev-shim.sh): one libcufile mapped,
#      not ours, and no opencufile line in the log.
#
# Files under $OUT (default ./gpu-out): wheel-summary.txt, wheel-clients.log
# (every client's output and log), wheel-report.txt (python -m opencufile,
# gdscheck, facts).  The summary is printed last.
# Environment: OUT, PYTHON, WHEEL_CHECK_BUDGET (seconds, default 480).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SCR=$ROOT/gpu-scratch/wheel
BUDGET=${WHEEL_CHECK_BUDGET:-480}
PY=${PYTHON:-python3}
T0=$SECONDS
SUMMARY=$OUT/wheel-summary.txt
CLIENTS=$OUT/wheel-clients.log
REPORT=$OUT/wheel-report.txt
: >"$SUMMARY"
: >"$CLIENTS"
: >"$REPORT"
rm -rf "$SCR"
mkdir -p "$SCR"
unset LD_PRELOAD OPENCUFILE_DISABLE
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# shellcheck source=scripts/udev-shim.sh
. "$ROOT/scripts/udev-shim.sh"
trap 'udev_cleanup; rm -rf "$SCR"' EXIT
NFAIL=0

record() { # step result detail
	printf '%-16s %-5s %s\n' "$1" "$2" "$3" >>"$SUMMARY"
	echo "=== [$((SECONDS - T0))s] $1: $2 $3"
	[ "$2" = FAIL ] && NFAIL=$((NFAIL + 1))
	return 0
}
tmo() { # seconds a step may take: WANT, clamped to what is left
	local left=$((BUDGET - (SECONDS - T0) - 10))
	((left < 5)) && left=5
	((left < $1)) && echo "$left" || echo "$1"
}
finish() {
	{
		echo
		echo "total $((SECONDS - T0)) s of ${BUDGET} s; failing checks: $NFAIL"
	} >>"$SUMMARY"
	echo
	echo "==================== SUMMARY (files in $OUT) ===================="
	cat "$SUMMARY"
	exit $((NFAIL > 0 ? 1 : 0))
}

WHEEL=${1:-$(find "$ROOT/dist" -maxdepth 1 -name 'opencufile-*.whl' 2>/dev/null | sort | tail -1)}
if [ -z "$WHEEL" ] || [ ! -f "$WHEEL" ]; then
	record wheel FAIL "no wheel (scripts/wheel.sh on the CPU machine; carry dist)"
	finish
fi
WHEEL=$(readlink -f "$WHEEL")

# ------------------------------------------------------------------ (a) facts
{
	echo "# gpu-wheel-check $(date -u '+%Y-%m-%dT%H:%M:%SZ') git=$(git rev-parse --short HEAD 2>/dev/null || echo none)"
	echo "wheel: $WHEEL"
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
	echo "glibc: $(ldd --version 2>&1 | head -1)"
	"$PY" - <<'PY' 2>&1
import glob, os, sys
print(f"python: {sys.executable} {sys.version.split()[0]} prefix={sys.prefix} base={sys.base_prefix}")
for mod in ("torch", "cuda.bindings", "cupy"):
    try:
        m = __import__(mod, fromlist=["_"])
        print(f"{mod}: {getattr(m, '__version__', '?')} {os.path.dirname(m.__file__)}")
    except Exception as e:  # noqa: BLE001
        print(f"{mod}: not importable ({e!r})")
for entry in sys.path:
    for p in sorted(glob.glob(os.path.join(entry, "nvidia", "*", "lib", "libcufile.so*"))):
        print(f"nvidia wheel copy: {p} -> {os.path.realpath(p)}")
PY
	for f in /usr/local/cuda/targets/x86_64-linux/lib/libcufile.so*; do
		[ -e "$f" ] && echo "toolkit copy: $f -> $(readlink -f "$f")"
	done
	echo "ld.so cache: $(ldconfig -p | grep 'libcufile.so.0 ' | tr -s ' \t' ' ')"
	tinit=$("$PY" -c 'import importlib.util as u; s = u.find_spec("torch"); print(s.origin if s else "")' 2>/dev/null)
	if [ -n "$tinit" ]; then
		echo "torch's loader, lines naming cufile or the full-path preload ($tinit):"
		grep -nE '"cufile"|def _preload_cuda_lib|_preload_cuda_deps\(|ctypes.CDLL\(lib_path' "$tinit" | sed 's/^/  /'
	fi
} >>"$REPORT"
if "$PY" -c 'import torch, cuda.bindings' 2>/dev/null; then
	record facts PASS "$("$PY" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null); see wheel-report.txt"
else
	record facts FAIL "$PY cannot import torch and cuda.bindings"
fi

# ------------------------------------------------------------------ (b) venv + install
VENV=$SCR/venv
VPY=$VENV/bin/python
if "$PY" -m venv --system-site-packages "$VENV" >"$SCR/venv.log" 2>&1; then
	how="with pip"
elif rm -rf "$VENV" && "$PY" -m venv --system-site-packages --without-pip "$VENV" >>"$SCR/venv.log" 2>&1; then
	how="without pip of its own: the machine's pip, run by the venv's python"
else
	cat "$SCR/venv.log"
	record venv FAIL "$PY -m venv --system-site-packages failed"
	finish
fi
SITE=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
# A machine Python that is itself a venv: its packages are not the base's
# system site-packages, so they are added to this venv by a .pth file.
outer=$("$PY" -c 'import sys, sysconfig; print(sysconfig.get_paths()["platlib"] if sys.prefix != sys.base_prefix else "")')
if [ -n "$outer" ]; then
	echo "import site; site.addsitedir('$outer')" >"$SITE/_machine_env.pth"
	how="$how; the machine's venv $outer added"
fi
if ! "$VPY" -m pip --version >/dev/null 2>&1; then
	record venv FAIL "no pip usable in the venv ($how)"
	finish
fi
snapshot() { (cd "$VENV" && find . | grep -v '/site-packages/pip\(/\|$\)' | LC_ALL=C sort); }
snapshot >"$SCR/before.txt"
if "$VPY" -m pip install --no-index --no-deps "$WHEEL" >"$SCR/pip.log" 2>&1; then
	record install PASS "${WHEEL##*/} into a --system-site-packages venv ($how)"
else
	cat "$SCR/pip.log"
	record install FAIL "pip install --no-index failed"
	finish
fi
OURS=$SITE/opencufile/lib/libcufile.so.0
"$VPY" -c 'import torch, cuda.bindings' 2>/dev/null || record venv FAIL "the venv cannot import torch and cuda.bindings"

# ------------------------------------------------------------------ (c) start
{
	echo
	echo "## python -m opencufile (installed)"
	"$VPY" -m opencufile 2>&1
	echo
	echo "## the gdscheck command (its Library section)"
	"$VENV/bin/gdscheck" 2>&1 | sed -n '/^Library/,/^$/p'
} >>"$REPORT"
if grep -qF "in this interpreter: $OURS (opencufile)" "$REPORT"; then
	record report PASS "python -m opencufile: ours, $(grep -m1 'chosen by' "$REPORT" | sed 's/^ *//' | cut -c1-60)"
else
	record report FAIL "python -m opencufile does not name ours (wheel-report.txt)"
fi
cuda_at_start=$("$VPY" -c '
import os
m = [l.split()[-1] for l in open("/proc/self/maps") if "/" in l]
print(",".join(sorted({p for p in m if os.path.basename(p).startswith(("libcuda.so", "libcufile"))})) or "none")')
if [[ "$cuda_at_start" == "$OURS" ]]; then
	record no-cuda-init PASS "interpreter start maps ours and no libcuda"
else
	record no-cuda-init FAIL "mapped at start: $cuda_at_start"
fi
if cost=$("$PY" scripts/wheel-start-cost.py "$VPY" 2.0); then
	record start-cost PASS "$cost"
else
	record start-cost FAIL "$cost"
fi

# ------------------------------------------------------------------ clients
# client NAME SCRIPT WANT-SECONDS LOG EXPECT-LIB ARGS...: runs one client
# script with the venv's python and no LD_PRELOAD; sets RC, MAPS (every
# distinct libcufile set the script saw), LOGF.
client() {
	local name=$1 script=$2 want=$3 expect=$4
	shift 4
	LOGF=$SCR/cufile-$name.log
	mkdir -p "$SCR/$name"
	{
		echo
		echo "##### $name: $VPY $script --dir $SCR/$name ${expect:+--expect-lib $expect} $*  (no LD_PRELOAD; udev data: $([ -e /run/udev ] && echo present || echo absent))  [t=$((SECONDS - T0))s]"
	} >>"$CLIENTS"
	env -u LD_PRELOAD CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH="$LOGF" \
		timeout -k 5 "$(tmo "$want")" "$VPY" "$script" --dir "$SCR/$name" ${expect:+--expect-lib "$expect"} "$@" \
		>"$SCR/$name.out" 2>&1
	RC=$?
	cat "$SCR/$name.out" >>"$CLIENTS"
	{
		echo "exit: $RC"
		echo "--- cufile.log ($name): $(nlines "$LOGF") lines; the first 15 and the last 15"
		head -n 15 "$LOGF" 2>/dev/null
		echo "..."
		tail -n 15 "$LOGF" 2>/dev/null
	} >>"$CLIENTS"
	MAPS=$("$VPY" - "$SCR/$name.out" <<'PY'
import ast, sys
sets = []
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("libcufile mapped ("):
        v = line.split("): ", 1)[1].strip()
        libs = tuple(ast.literal_eval(v)) if v.startswith("[") else ()
        if libs not in sets:
            sets.append(libs)
print(";".join(",".join(s) or "none" for s in sets) or "no maps line")
PY
)
	echo "maps seen ($name): $MAPS" >>"$CLIENTS"
}
nlines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
summary_line() { grep -E '^(torch_gds|cufile_bindings): ' "$SCR/$1.out" | tail -1; }

# one_copy NAME: exactly one libcufile, ours, in every maps line of the run.
# NOTE instead of FAIL when the only other copy is an nvidia wheel's and
# clientcheck.py found every cuFile symbol bound to ours (torch's loader opens
# the wheels' libraries by full path: docs/using.md).
one_copy() {
	local name=$1 others
	others=$(tr ';,' '\n' <<<"$MAPS" | grep -vxF -e "$OURS" -e none -e "no maps line" | sort -u)
	if [ "$MAPS" = "$OURS" ]; then
		record "$name-maps" PASS "one libcufile mapped: ours"
	elif [[ ";$MAPS;" == *"$OURS"* ]] && [ -n "$others" ] && ! grep -qv '/nvidia/[^/]*/lib/libcufile\.so' <<<"$others" &&
		grep -q '^PASS maps_' "$SCR/$name.out" && ! grep -q '^FAIL maps_' "$SCR/$name.out"; then
		record "$name-maps" NOTE "two copies: ours, which every cuFile symbol binds to, and $(tr '\n' ' ' <<<"$others")(an nvidia wheel's, opened by full path, unused)"
	else
		record "$name-maps" FAIL "libcufile mapped: $MAPS"
	fi
}

# ------------------------------------------------------------------ (d) ours
for c in torch:tests/gpu/torch_gds_roundtrip.py:150 bindings:tests/gpu/cufile_bindings_smoke.py:90; do
	IFS=: read -r name script want <<<"$c"
	client "$name" "$script" "$want" "$OURS"
	if [ "$RC" = 0 ]; then
		record "$name" PASS "$(summary_line "$name")"
	else
		record "$name" FAIL "rc=$RC $(summary_line "$name")"
	fi
	if grep -F "($OURS): driver opened" "$LOGF" 2>/dev/null | grep -qE 'opencufile [^ ]+ \('; then
		record "$name-log" PASS "the log names $OURS"
	elif grep -q "^PASS set_parameter_string_staged: 'ERROR'" "$SCR/$name.out" &&
		grep -q '^PASS maps_end: ours=yes symbols_bind_to_ours=True' "$SCR/$name.out"; then
		# The bindings smoke sets logging.level ERROR itself before the
		# driver opens (a test of the parameter API), so the INFO line is
		# not written; its own check saw every cuFile symbol bound to ours.
		record "$name-log" PASS "no INFO line (the client sets logging.level ERROR before opening); every cuFile symbol bound to $OURS"
	else
		record "$name-log" FAIL "no 'opencufile ... ($OURS): driver opened' line in the log"
	fi
	one_copy "$name"
done

# ------------------------------------------------------------------ (e) uninstall
if "$VPY" -m pip uninstall -y opencufile >"$SCR/pip-uninstall.log" 2>&1; then
	snapshot >"$SCR/after.txt"
	if diff "$SCR/before.txt" "$SCR/after.txt" >"$SCR/diff.txt"; then
		record uninstall PASS "the venv is as before install (pip's own files aside)"
	else
		record uninstall FAIL "left behind: $(grep '^[<>]' "$SCR/diff.txt" | head -5 | tr '\n' ' ')"
	fi
else
	cat "$SCR/pip-uninstall.log"
	record uninstall FAIL "pip uninstall failed"
fi
{
	echo
	echo "## python -m opencufile after uninstall: no module (expected)"
	"$VPY" -m opencufile 2>&1 | head -3
} >>"$REPORT"

# ------------------------------------------------------------------ (f) NVIDIA's
udev_setup "$SCR" >>"$CLIENTS" 2>&1
for c in torch-nv:tests/gpu/torch_gds_roundtrip.py:120 bindings-nv:tests/gpu/cufile_bindings_smoke.py:90; do
	IFS=: read -r name script want <<<"$c"
	if [ "$name" = torch-nv ]; then
		client "$name" "$script" "$want" "" --big-mib 64
	else
		client "$name" "$script" "$want" ""
	fi
	copies=$(tr ';,' '\n' <<<"$MAPS" | grep -vxF -e none -e "no maps line" | sort -u)
	n=$(grep -c . <<<"$copies")
	mine=$(grep -cE 'opencufile [^ ]+ \(.*\): driver opened' "$LOGF" 2>/dev/null)
	if [ "$n" = 1 ] && [ -f "$copies" ] && ! grep -q OPENCUFILE_LIBCUDA "$copies" && [ "${mine:-0}" = 0 ]; then
		record "$name" PASS "NVIDIA's only: $copies; log $(nlines "$LOGF") lines, none of ours; script rc=$RC $(summary_line "$name")"
	else
		record "$name" FAIL "libcufile mapped: $MAPS; opencufile lines in log: ${mine:-0}; script rc=$RC"
	fi
done
udev_cleanup >/dev/null 2>&1
finish
