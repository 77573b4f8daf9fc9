#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_wheel_gives_ours_to_every_cufile_user_until_uninstalled.sh
#     SRC WORK FAKECUDA OTHER_DIR RUNPATH_CLIENT
#
# The Python wheel (scripts/wheel.sh, docs/using.md "Python"), as a user
# meets it: built into WORK, installed with `pip install --no-index` into a
# fresh venv of Debian's /usr/bin/python3 (OCF_PYTHON), and checked there
# beside another libcufile.so.0 (OTHER_DIR, tests/wheel/other_libcufile.c,
# whose cuFileGetVersion gives 1150 where ours gives 1190):
#  - the wheel: tag manylinux_2_N with N the newest glibc symbol version its
#    binaries require; the library needs glibc only, exports the cuFile API
#    only; the tools need ours beside them (RUNPATH $ORIGIN/../lib);
#  - installed, with LD_LIBRARY_PATH pointing at the other copy:
#    ctypes.CDLL("libcufile.so.0") is ours, and so is what a library that
#    links libcufile.so.0 with a RUNPATH to the other copy (RUNPATH_CLIENT,
#    as torch's libraries name the nvidia-cufile wheel) reaches, with one copy
#    mapped; interpreter start maps no CUDA driver; cuFileDriverOpen on the
#    stand-in driver (FAKECUDA) and a verified read work through ctypes, and
#    the log names our file; `python -m opencufile` and the gdscheck,
#    gds_stats and gdsio commands say and use ours;
#  - OPENCUFILE_DISABLE=1 gives the other copy, and so does LD_PRELOAD of it
#    (the loader then leaves the process alone);
#  - at interpreter start the loader imports nothing beyond its package and
#    _ctypes (not the ctypes package, which costs more than the load
#    itself); the start cost in milliseconds is measured by
#    scripts/wheel-start-cost.py (docs/using.md), not asserted here;
#  - pip uninstall removes every file it installed (the venv is as before,
#    pip's own files aside) and the other copy is what everyone gets again.
# Exit 0: every check passed; 1: one failed; 77: no venv with pip can be
# made here (python3-venv missing: scripts/setup.sh installs it as root).
# shellcheck disable=SC2317  # functions called through check()
set -uo pipefail
src=$1 work=$2 fakecuda=$3 other_dir=$4 client=$5
python=${OCF_PYTHON:-/usr/bin/python3}
probe=$src/tests/wheel/probe.py
unset LD_PRELOAD LD_LIBRARY_PATH OPENCUFILE_DISABLE PYTHONPATH PYTHONHOME PYTHONSTARTUP
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# shellcheck source=scripts/checks.sh
. "$src/scripts/checks.sh"
# has LINE KEY=VALUE...: every pair is in the probe's line.
has() {
	local line=$1
	shift
	for kv in "$@"; do
		[[ " $line " == *" $kv "* ]] || { echo "want $kv in: $line"; return 1; }
	done
}

[ -x "$python" ] || { echo "SKIPPED: $python not found"; exit 77; }
rm -rf "$work/venv" "$work/unpacked" "$work/io"
mkdir -p "$work/io"

# ---- the wheel
if ! BUILD_DIR=$work/build DIST=$work/dist JOBS=${JOBS:-2} PYTHON=$python \
	"$src/scripts/wheel.sh" >"$work/wheel.log" 2>&1; then
	cat "$work/wheel.log"
	not_ok "scripts/wheel.sh"
	finish
fi
whl=$(tail -1 "$work/wheel.log")
ok "scripts/wheel.sh built ${whl##*/}"
"$python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$work/unpacked"
lib=$work/unpacked/opencufile/lib/libcufile.so.0
tag_matches_glibc() {
	local want got
	want=$(objdump -T "$lib" "$work"/unpacked/opencufile/bin/* | grep -o 'GLIBC_2\.[0-9]*' |
		sort -t. -k2,2n -u | tail -1)
	got=$(sed -n 's/.*-py3-none-manylinux_2_\([0-9]*\)_x86_64\.whl$/GLIBC_2.\1/p' <<<"$whl")
	echo "newest required: $want; tag: ${got:-none}"
	[ -n "$want" ] && [ "$want" = "$got" ]
}
check "the tag is py3-none-manylinux_2_N_x86_64, N the newest GLIBC_2.N the binaries require" tag_matches_glibc
glibc_only() {
	local n bad=0
	readelf -d "$lib" | grep -q 'SONAME.*\[libcufile.so.0\]' || { echo "no SONAME libcufile.so.0"; bad=1; }
	for n in $(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case $n in libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | ld-linux-x86-64.so.2) ;;
		*) echo "NEEDED $n"; bad=1 ;; esac
	done
	! ldd "$lib" | grep 'not found' || bad=1
	n=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -v '^cuFile' || true)
	[ -z "$n" ] || { echo "exports beyond the cuFile API: $n"; bad=1; }
	return "$bad"
}
check "the wheel's libcufile.so.0 needs only glibc (readelf -d, ldd) and exports only cuFile* (json-c, liburing inside)" glibc_only
tools_find_ours() {
	local t n bad=0
	for t in gdscheck gdsio gds_stats; do
		for n in $(readelf -d "$work/unpacked/opencufile/bin/$t" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			case $n in libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | ld-linux-x86-64.so.2 | libcufile.so.0) ;;
			*) echo "$t: NEEDED $n"; bad=1 ;; esac
		done
		# shellcheck disable=SC2016  # a literal $ORIGIN
		if readelf -d "$work/unpacked/opencufile/bin/$t" | grep -q 'NEEDED.*libcufile' &&
			! readelf -d "$work/unpacked/opencufile/bin/$t" | grep -q 'RUNPATH.*\[\$ORIGIN/\.\./lib\]'; then
			echo "$t: no RUNPATH \$ORIGIN/../lib"
			bad=1
		fi
	done
	return "$bad"
}
check "gdscheck, gdsio, gds_stats need glibc and ours only, found through RUNPATH \$ORIGIN/../lib" tools_find_ours

# ---- a fresh venv
if ! "$python" -m venv "$work/venv" >"$work/venv.log" 2>&1; then
	if ! "$python" -c 'import ensurepip' 2>/dev/null; then
		echo "SKIPPED: $python -m venv cannot put pip in a venv (no ensurepip: install python3-venv;"
		echo "scripts/setup.sh does as root)"
		exit 77
	fi
	cat "$work/venv.log"
	not_ok "$python -m venv"
	finish
fi
vpy=$work/venv/bin/python
site=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
ours=$site/opencufile/lib/libcufile.so.0
other=$other_dir/libcufile.so.0
# Every path of the venv but pip's own (pip may compile its modules as it runs).
snapshot() { (cd "$work/venv" && find . | grep -v '^\./lib/python[0-9.]*/site-packages/pip\(/\|$\)' | LC_ALL=C sort); }
snapshot >"$work/before.txt"
check "pip install --no-index ${whl##*/} into a fresh venv of $python" \
	"$vpy" -m pip install --no-index "$whl"

# ---- installed: ours, wherever the other copy is on the search path
w=$(LD_LIBRARY_PATH=$other_dir "$vpy" "$probe" which)
check "ctypes.CDLL(\"libcufile.so.0\") is ours (version 1190) with LD_LIBRARY_PATH at the other copy" \
	has "$w" version=1190 "file=$ours" preload=loaded "mapped=$ours"
w=$("$vpy" "$probe" client "$client")
check "a library whose DT_NEEDED libcufile.so.0 has a RUNPATH to the other copy reaches ours; one copy mapped" \
	has "$w" version=1190 "mapped=$ours"
w=$(OPENCUFILE_LIBCUDA=$fakecuda "$vpy" "$probe" which)
check "interpreter start loads ours and maps no CUDA driver (OPENCUFILE_LIBCUDA set)" \
	has "$w" preload=loaded cuda=none
rm -f "$work/io/cufile.log"
w=$(cd "$work/io" && OPENCUFILE_LIBCUDA=$fakecuda CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$work/io/cufile.log \
	LD_LIBRARY_PATH=$other_dir "$vpy" "$probe" io "$work/io/data")
log_names_ours() {
	has "$w" read=1048576 verified=yes close=0 cuda_before_open=none "cuda=$(readlink -f "$fakecuda")" "mapped=$ours" &&
		grep -F "opencufile " "$work/io/cufile.log" | grep -F "($ours): driver opened (CUDA available)"
}
check "ctypes: cuFileDriverOpen on the stand-in driver, 1 MiB read and verified; the log names our file" log_names_ours
w=$(LD_LIBRARY_PATH=$other_dir "$vpy" -m opencufile)
report_says_ours() {
	if ! grep -qF "libcufile.so.0 in this interpreter: $ours (opencufile)" <<<"$w" ||
		! grep -qF "chosen by: opencufile.pth" <<<"$w" ||
		! grep -qF "without it (OPENCUFILE_DISABLE=1): $other (another implementation)" <<<"$w"; then
		echo "$w"
		return 1
	fi
}
check "python -m opencufile: ours, chosen by opencufile.pth; without it the other, by LD_LIBRARY_PATH" report_says_ours
gdscheck_ours() {
	local out
	out=$("$work/venv/bin/gdscheck" 2>&1) || { echo "$out"; return 1; }
	grep -qF "libcufile.so.0 in this process: $ours (opencufile)" <<<"$out" || { echo "$out"; return 1; }
}
check "the gdscheck command runs the wheel's gdscheck, which names the wheel's library" gdscheck_ours
gds_stats_counts() {
	local out
	out=$(cd "$work/io" && OPENCUFILE_LIBCUDA=$fakecuda "$work/venv/bin/gds_stats" -l 1 -- "$vpy" "$probe" io "$work/io/data2" 2>&1)
	grep -q '^  read  *ok [1-9]' <<<"$out" || { echo "$out"; return 1; }
}
check "the gds_stats command runs the venv's python under it and reports its read" gds_stats_counts
gdsio_runs() {
	local out
	out=$(cd "$work/io" && OPENCUFILE_LIBCUDA=$fakecuda "$work/venv/bin/gdsio" -f "$work/io/g.dat" -s 4M -I 1 -x 0 -m 3 \
		-w 1 -i 1M -V 2>&1 && OPENCUFILE_LIBCUDA=$fakecuda "$work/venv/bin/gdsio" -f "$work/io/g.dat" -s 4M -I 0 -x 0 -m 3 \
		-w 2 -i 1M -V 2>&1) || { echo "$out"; return 1; }
	[ "$(grep -c 'Verify: PASS' <<<"$out")" = 2 ] || { echo "$out"; return 1; }
}
check "the gdsio command writes and reads 4 MiB through cuFile, verified" gdsio_runs

# ---- one process without it
w=$(OPENCUFILE_DISABLE=1 LD_LIBRARY_PATH=$other_dir "$vpy" "$probe" which)
check "OPENCUFILE_DISABLE=1: the other copy, ours not mapped" has "$w" version=1150 "file=$other" preload=none "mapped=$other"
w=$(OPENCUFILE_DISABLE=1 "$vpy" "$probe" client "$client")
check "OPENCUFILE_DISABLE=1: the RUNPATH library reaches the other copy" has "$w" version=1150 "mapped=$other"
w=$(LD_PRELOAD=$other "$vpy" "$probe" which)
check "LD_PRELOAD of the other copy: the loader leaves the process alone, one copy mapped" \
	has "$w" version=1150 "file=$other" preload=skipped "mapped=$other"

# ---- what start costs: the modules the loader adds (a count of work, not a timing)
mods='import sys; print(" ".join(sorted(sys.modules)))'
with=$("$vpy" -c "$mods") && without=$(OPENCUFILE_DISABLE=1 "$vpy" -c "$mods")
added=$(comm -23 <(tr ' ' '\n' <<<"$with" | sort) <(tr ' ' '\n' <<<"$without" | sort) | tr '\n' ' ')
start_modules() {
	[[ " $added " == *" opencufile._preload "* ]] || { echo "the loader did not run: added [$added]"; return 1; }
	for m in $added; do
		case $m in opencufile | opencufile._preload | _ctypes) ;; *)
			echo "interpreter start imports $m with the loader (added: $added)"
			return 1
			;;
		esac
	done
}
check "interpreter start: the loader imports only opencufile, opencufile._preload and _ctypes" start_modules

# ---- uninstall: no trace, the other copy again
check "pip uninstall -y opencufile" "$vpy" -m pip uninstall -y opencufile
no_trace() {
	snapshot >"$work/after.txt"
	diff "$work/before.txt" "$work/after.txt"
}
check "uninstall leaves the venv as it was before install (pip's own files aside)" no_trace
w=$(LD_LIBRARY_PATH=$other_dir "$vpy" "$probe" which)
check "after uninstall: ctypes.CDLL(\"libcufile.so.0\") is the other copy again" \
	has "$w" version=1150 "file=$other" preload=none "mapped=$other"
w=$("$vpy" "$probe" client "$client")
check "after uninstall: the RUNPATH library reaches the other copy again" has "$w" version=1150 "mapped=$other"
finish
