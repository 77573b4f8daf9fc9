#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test_gpu_bench_dry_run_checks_the_plan.sh SOURCE_DIR BUILD_DIR FAKE_LIBCUDA
#
# scripts/gpu-bench.sh's dry run (GPU_BENCH_DRYRUN=1, the stand-in driver)
# catches a wrong benchmark plan before a GPU minute is spent:
#  - the KV, loader, tp (several processes) and clients quick modes run to
#    their end (exit 0),
#    with no shell error (an unset variable under set -u, such as the
#    pinned-memory table when no figure was collected: gdscheck is hidden
#    here so that none is);
#  - every gdsio run of a row is preceded by the row's plan line, which
#    names its cache drop and time limit; every row of these modes is warm
#    and must not drop the page cache, and every limit is at least 1 s;
#  - every row the mode lists got a figure or a status in the table;
#  - every loader row named here (the client-library rows among them: O_DIRECT
#    unregistered beside buffered registered, and gdsio's pool shape) passed
#    its verified run and got a figure, and a pool row's request latency
#    reached the table;
#  - the clients mode (the shapes client libraries issue) with a base
#    beside ours (the same library here): every row it lists passed its
#    verified run and got a figure from each library, every line of its
#    table has a number for both (the read phase of the write-then-read
#    rows and the first-batch times among them), and the table has the
#    "fall" column and its summary line;
#  - a copy of the script whose KV rows pass the cold and time-limit
#    arguments in the wrong order (the mistake that once made every KV row
#    drop the cache and run without a limit) exits 4 with a PLAN ERROR for
#    that row, and runs nothing for it.
set -u
SRC=$1
BUILD=$2
FAKE=$3
T=$(mktemp -d "$PWD/gpu-bench-dry.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fails=0
bad() {
	echo "FAIL $1: $2"
	fails=$((fails + 1))
}

# dry MODE SCRIPT OUTDIR [VAR=VALUE...]: one dry run; its stdout+stderr in OUTDIR/out
dry() {
	local mode=$1 script=$2 out=$3
	shift 3
	mkdir -p "$out"
	env BUILD="$BUILD" GDSCHECK=/nonexistent OUT="$out" GPU_SCRATCH="$T/scratch" \
		GPU_BENCH_DRYRUN=1 GPU_BENCH_QUICK="$mode" GPU_BENCH_QUICK_T=0.05 \
		OPENCUFILE_LIBCUDA="$FAKE" CUFILE_LOGFILE_PATH="$T/cufile.log" "$@" \
		bash "$script" >"$out/out" 2>&1
}

# check MODE OUTDIR RC
check() {
	local mode=$1 out=$2 rc=$3 ids id runs planned
	[ "$rc" = 0 ] || bad "$mode" "exit $rc, want 0"
	if grep -nE 'unbound variable|syntax error|command not found|bad substitution' "$out/out"; then
		bad "$mode" "shell error in the script"
	fi
	grep -q 'PLAN ERROR' "$out/out" && bad "$mode" "$(grep 'PLAN ERROR' "$out/out" | head -3)"
	# The rows the mode runs: those that have a plan line.
	planned=$(sed -n 's/^plan: \([a-z0-9_]*\) .*/\1/p' "$out/out" | sort -u)
	[ -n "$planned" ] || bad "$mode" "no plan line at all"
	# Every gdsio run in the raw log belongs to a row with a plan line.
	runs=$(sed -n 's/^### \[t=[0-9]*s\] \([a-z0-9_]*\) [a-z]* rep=.*/\1/p' "$out/bench.log" | sort -u)
	[ -n "$runs" ] || bad "$mode" "no gdsio run in $out/bench.log"
	for id in $runs; do
		grep -qx "$id" <<<"$planned" || bad "$mode" "row $id ran without a plan line"
	done
	# Every plan line: a warm row, no drop, a limit of at least 1 s.
	while read -r line; do
		case $line in
		"plan: "*" warm drop_cache=no "*) ;;
		*) bad "$mode" "unexpected plan: $line" ;;
		esac
		lim=$(sed -n 's/.* limit=\([0-9]*\)s$/\1/p' <<<"$line")
		[ -n "$lim" ] && [ "$lim" -ge 1 ] || bad "$mode" "no time limit: $line"
	done < <(grep '^plan: ' "$out/out")
	# Each row the mode lists was run and reached the table.
	[ "$(wc -l <<<"$runs")" -eq "$(wc -l <<<"$planned")" ] || bad "$mode" "planned [$planned] but ran [$runs]"
	grep -q '^| workload |' "$out/out" || bad "$mode" "no table"
	echo "ok   $mode: $(wc -l <<<"$planned") rows planned and run"
}

# The ceilings are measured once (KV mode); the loader mode skips them to
# save time here.
dry kv "$SRC/scripts/gpu-bench.sh" "$T/kv"
check kv "$T/kv" $?
loader_rows="t1_1m_r t1_1m_rr t1_4m_r t1_16m t1_16m_r t4_256k_r t16_64k_r t8_16m t16_1m_r lat4k_r async256 w4g"
loader_rows+=" t8_4m_r t8_4m_dio_ur t4_4m_r t4_4m_dio_ur t1_1m_rr_dio_ur t16_64k_dio_ur pool4_16m pool8_16m pool8_4g"
dry loader "$SRC/scripts/gpu-bench.sh" "$T/loader" GPU_BENCH_ONLY="$loader_rows"
check loader "$T/loader" $?
for id in $loader_rows; do
	grep -q "^plan: $id " "$T/loader/out" || bad loader "row $id of the loader mode has no plan line"
	# Verified, and a figure from the timed repetition.
	grep -q "^\[t=[0-9]*s\] $id: ours PASS \[[0-9]" "$T/loader/out" || bad loader "row $id: no verified run with a figure"
done
# The pool rows ran gdsio's pool shape, and their request latencies reached the table.
grep -q '^### .* pool8_4g ours rep=1 rc=0: gdsio .* -q 4M' "$T/loader/bench.log" || bad loader "pool8_4g did not run gdsio -q"
grep -q '^| *\.\.\. one 16 MiB read: avg (us) | not run | [0-9]' "$T/loader/out" || bad loader "no request latency of a pool row in the table"
# Several processes, one per GPU: two at once on the stand-in's two GPUs.
dry tp "$SRC/scripts/gpu-bench.sh" "$T/tp" GPU_BENCH_TP_GPUS=2
check tp "$T/tp" $?
for id in tp_t1_16m tp_t8_16m_alone tp_t8_16m tp_t16_1m tp_t1_16m_pin tp_t8_16m_pin; do
	grep -q "^plan: $id " "$T/tp/out" || bad tp "row $id of the tp mode has no plan line"
done
grep -q "process 1 of 2" "$T/tp/bench.log" || bad tp "the second process of a row never ran"
grep -q "pinned to CPUs" "$T/tp/bench.log" || bad tp "no pinned run"
grep -q "^- tp_t8_16m_pin process 0: [0-9]* (limited by" "$T/tp/out" ||
	bad tp "no CPU budget logged by a pinned process"

# The clients mode, with a base (ours again) beside ours.
dry clients "$SRC/scripts/gpu-bench.sh" "$T/clients" GPU_BENCH_LIBS="base ours" OPENCUFILE_BASE_LIB="$BUILD/libcufile.so.0"
check clients "$T/clients" $?
clients_rows=$(sed -n 's/^plan: \([a-z0-9_]*\) .*/\1/p' "$T/clients/out")
for id in cl_pool_c8_16m cl_pool_c16_64k pool8_16m pool8_4g t8_4m_r t16_64k_r nixl_b250 nixl_mt250 nixl_b16x5 \
	nixl_mt16x5 nixl_first kv_lat_b8 kv_lat_b8_sc kv_lat_64k async256 t1_16m cl_fresh_dio_ur t8_4m_dio_ur; do
	grep -qx "$id" <<<"$clients_rows" || bad clients "row $id of the clients mode has no plan line"
done
for id in $clients_rows; do
	grep -q "^\[t=[0-9]*s\] $id: base PASS \[[0-9].*\] ours PASS \[[0-9]" "$T/clients/out" ||
		bad clients "row $id: not verified with a figure from both libraries"
done
# Every line of the table: a median for the base and for ours (columns 3 and 4).
awk -F'|' '/^\| workload \|/ {t = 1; next} t && /^$/ {exit} t && !/^\| ---/ {
	if ($4 !~ /^ [0-9]/ || $5 !~ /^ [0-9]/) print "no figure:", $2 }' "$T/clients/bench-table.md" >"$T/clients/nofig"
[ -s "$T/clients/nofig" ] && bad clients "$(cat "$T/clients/nofig")"
grep -q '^| workload | NVIDIA median (spread) | base median (spread) | ours median (spread) | ratio | target | met | fall |' \
	"$T/clients/bench-table.md" || bad clients "no fall column"
grep -Eq '^(FALL \(ours below base|No row fell)' "$T/clients/bench-table.md" || bad clients "no fall summary"
grep -q '^| *\.\.\. then reads of the same (GB/s) | not run | [0-9]' "$T/clients/bench-table.md" ||
	bad clients "no read figure of a write-then-read row"
grep -q '^### .* nixl_first ours rep=2 rc=0: gdsio .* -e 4 -i 1000001 ' "$T/clients/bench.log" ||
	bad clients "nixl_first did not run in fresh processes"
grep -q '^### .* cl_fresh_dio_ur ours rep=1 rc=0: gdsio .* -Y ' "$T/clients/bench.log" ||
	bad clients "cl_fresh_dio_ur did not run gdsio -Y"

# The old mistake, put back into a copy of the script: caught, not run.
mkdir -p "$T/copy/scripts"
cp -r "$SRC/src" "$T/copy/"
sed 's/^\(workload kv_b128_64k_rd  *\)0 "\$KT"/\1"$KT" 0/' "$SRC/scripts/gpu-bench.sh" >"$T/copy/scripts/gpu-bench.sh"
if cmp -s "$SRC/scripts/gpu-bench.sh" "$T/copy/scripts/gpu-bench.sh"; then
	bad mutation "could not put the swapped arguments into the copy"
else
	dry kv "$T/copy/scripts/gpu-bench.sh" "$T/mut" GPU_BENCH_ONLY="kv_b128_64k_rd kv_lat_b8"
	rc=$?
	[ "$rc" = 4 ] || bad mutation "exit $rc, want 4"
	grep -q 'PLAN ERROR: kv_b128_64k_rd:' "$T/mut/out" || bad mutation "no PLAN ERROR for kv_b128_64k_rd"
	grep -q '^### .* kv_b128_64k_rd ' "$T/mut/bench.log" && bad mutation "the wrong row was run"
	grep -q '^### .* kv_lat_b8 ' "$T/mut/bench.log" || bad mutation "the right row beside it was not run"
	[ "$fails" = 0 ] && echo "ok   mutation: the swapped arguments are refused"
fi

if [ "$fails" != 0 ]; then
	for f in "$T"/*/out; do echo "----- $f"; tail -40 "$f"; done
	echo "$fails failure(s)"
	exit 1
fi
echo "all passed"
