#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up, builds and runs the test suite (no GPU needed: the GPU code
# paths run against the stand-in CUDA driver in tests/fakecuda).  This is
# what CI runs.  Stages, each a build and a ctest run:
#
#   plain     Debug build with gcc and -Werror (OPENCUFILE_WERROR), every
#             test (the "large" 4 GiB one included)
#   asan      -DOCF_SANITIZE=address,undefined (leaks, memory errors and
#             undefined behaviour fail the test)
#   tsan      -DOCF_SANITIZE=thread (a data race or lock-order report fails
#             the test), longer timeouts
#   valgrind  the plain build's test binaries under valgrind memcheck
#             (-DOPENCUFILE_VALGRIND=ON)
#             (what each of the three leaves out, and why: below)
#   fuzz      the whole tree built with clang and -Werror (so clang's
#             warnings fail CI too), then the libFuzzer corpora replayed
#   package   the Debian packages built, installed into a clean Debian root
#             made by mmdebstrap, used and purged (scripts/package-test.sh;
#             needs root and the Debian mirror, skipped without root)
#
# Every stage runs even when an earlier one failed; the script fails if any
# did.  The summary of each stage is printed at the end, the last line a
# combined one in ctest's format.  Logs: build-test*/stage.log.
#
#   scripts/test.sh                 all stages (CI)
#   scripts/test.sh --quick         the plain stage only, without "large"
#   scripts/test.sh --stages "plain tsan"   chosen stages
#   scripts/test.sh [...] -- ARGS   extra ctest arguments, e.g. -- -R handle
set -uo pipefail
cd "$(dirname "$0")/.."

stages="plain asan tsan valgrind fuzz package"
quick=0
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1; stages=plain; shift ;;
	--stages) stages=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
extra=("$@")

scripts/setup.sh || exit 1
jobs=$(nproc)
start=$(date +%s)
declare -a names results
failed=0
total_pass=0 total_fail=0 total_run=0

# What each sanitizer stage leaves out: ctest labels (tests/CMakeLists.txt),
# one reason each.  All three:
#   large           8 GiB and minutes; the smaller tests take its path
#   script          checks a shell script, not the library's memory or threads
asan_skip="large|script"
# TSan, also:
#   backends        io_uring/pread variants of the integrity tests: the auto entries take both paths
#   faults_psync    fault matrix, psync: each backend's own code runs on one thread per lane;
#                   what threads share on an error is the same code, run by the uring entries
#   faults_unsplit  fault matrix, unsplit reads and writes: the _split_ entries run the same
#                   faults with the caller and two helpers at once
#   tsan_skip       gdsio's batch modes in host memory: the device entry runs the same threads
tsan_skip="large|script|backends|faults_psync|faults_unsplit|tsan_skip"
# Valgrind, also:
#   heavy           hundreds of MiB through byte-wise checks, 895 s of test time here at
#                   d527274, more than the rest; the same paths run with smaller volumes
#   wheel           a build of its own, run without valgrind: the plain stage's run again
#   faults_uring    fault matrix, io_uring: memcheck cannot see the buffers a ring names; the
#                   psync entries take the same faults through pread/pwrite, which it checks
#   valgrind_skip   the 16-thread shared-buffer test: threads at once are TSan's subject, and
#                   pattern 6 (the same shape, fewer rounds) runs its paths here; tests whose
#                   counts need threads at once or copies through a mapping, which valgrind's
#                   missing cachestat(2) turns off (tests/CMakeLists.txt says which)
valgrind_skip="large|script|heavy|wheel|faults_uring|valgrind_skip"

# run_stage NAME BUILD_DIR "CMAKE ARGS" "CTEST ARGS" [ENV=VALUE...]
run_stage() {
	local name=$1 dir=$2 cmake_args=$3 ctest_args=$4
	shift 4
	local log=$dir/stage.log t0 rc summary
	t0=$(date +%s)
	mkdir -p "$dir"
	echo "===== stage $name: build in $dir"
	# shellcheck disable=SC2086
	if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DBUILD_TESTING=ON $cmake_args >"$dir/configure.log" 2>&1 ||
		! cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1; then
		tail -40 "$dir/configure.log" "$dir/build.log"
		names+=("$name")
		results+=("build FAILED (see $dir/build.log)")
		failed=1
		return
	fi
	# ctest starts the longest tests first when it knows their times from
	# an earlier run in the directory; a new directory borrows the plain
	# stage's, so that a long test does not start last.
	local cost=Testing/Temporary/CTestCostData.txt
	if [ ! -f "$dir/$cost" ] && [ -f "build-test/$cost" ]; then
		mkdir -p "$dir/Testing/Temporary" && cp "build-test/$cost" "$dir/$cost"
	fi
	echo "===== stage $name: ctest $ctest_args ${extra[*]}"
	# shellcheck disable=SC2086
	(cd "$dir" && env "$@" ctest --output-on-failure -j"$jobs" $ctest_args "${extra[@]}") 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	summary=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
	if [ -z "$summary" ]; then
		summary="no ctest summary (rc $rc)"
		failed=1
	else
		local fails run
		fails=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$summary")
		run=$(sed -E 's/.* tests failed out of ([0-9]+).*/\1/' <<<"$summary")
		total_fail=$((total_fail + fails))
		total_run=$((total_run + run))
		total_pass=$((total_pass + run - fails))
	fi
	[ "$rc" -eq 0 ] || failed=1
	names+=("$name")
	results+=("$summary  [$(($(date +%s) - t0)) s]")
}

# The plain stage's build is the gcc -Werror build (the fuzz stage's is clang's).
plain_args="-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DOCF_SANITIZE= -DOPENCUFILE_VALGRIND=OFF
	-DOPENCUFILE_TEST_TIMEOUT=120 -DOPENCUFILE_WERROR=ON"

for s in $stages; do
	case $s in
	plain)
		if ((quick)); then
			run_stage plain build-test "$plain_args" "-LE large"
		else
			run_stage plain build-test "$plain_args" ""
		fi
		;;
	asan)
		run_stage asan build-test-asan "-DOCF_SANITIZE=address,undefined -DOPENCUFILE_TEST_TIMEOUT=600" \
			"-LE $asan_skip" "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0" \
			"UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
		;;
	tsan)
		run_stage tsan build-test-tsan "-DOCF_SANITIZE=thread -DOPENCUFILE_TEST_TIMEOUT=1200" \
			"-LE $tsan_skip" "TSAN_OPTIONS=second_deadlock_stack=1:exitcode=66:suppressions=$PWD/tests/tsan.supp"
		;;
	valgrind)
		# Same binaries as the plain stage (only the test commands change),
		# so nothing is rebuilt; the plain configuration is restored after.
		run_stage valgrind build-test "-DOCF_SANITIZE= -DOPENCUFILE_VALGRIND=ON -DOPENCUFILE_TEST_TIMEOUT=1200" \
			"-LE $valgrind_skip"
		cmake -S . -B build-test -DOPENCUFILE_VALGRIND=OFF -DOPENCUFILE_TEST_TIMEOUT=120 >/dev/null 2>&1
		;;
	fuzz)
		# Everything is built (library, tools, tests, fuzz targets) with
		# -Werror: clang's warnings are checked here; ctest runs only the
		# corpus replays.
		if command -v clang >/dev/null; then
			run_stage fuzz build-test-fuzz \
				"-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DOPENCUFILE_FUZZ=ON -DOPENCUFILE_WERROR=ON" \
				"-R ^fuzz_"
		else
			names+=(fuzz)
			results+=("FAILED: clang is needed for the libFuzzer targets")
			failed=1
		fi
		;;
	package)
		# Not a ctest stage: the script's checks are counted like tests.
		t0=$(date +%s)
		echo "===== stage package: scripts/package-test.sh"
		mkdir -p build-deb
		scripts/package-test.sh 2>&1 | tee build-deb/stage.log
		rc=${PIPESTATUS[0]}
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' build-deb/stage.log | tail -1)
		names+=(package)
		if [ "$rc" -eq 77 ]; then
			results+=("SKIPPED: $(grep -m1 'SKIPPED' build-deb/stage.log)")
		elif [ -z "$line" ]; then
			results+=("FAILED: no summary (rc $rc), see build-deb/stage.log")
			failed=1
		else
			p=${line%% passed*}
			f=${line#*passed, }
			f=${f%% failed*}
			total_pass=$((total_pass + p))
			total_fail=$((total_fail + f))
			total_run=$((total_run + p + f))
			[ "$rc" -eq 0 ] || failed=1
			results+=("$line  [$(($(date +%s) - t0)) s]")
		fi
		;;
	*)
		echo "unknown stage $s" >&2
		exit 2
		;;
	esac
done

echo
echo "===== summary ($(($(date +%s) - start)) s)"
for i in "${!names[@]}"; do
	printf '%-9s %s\n' "${names[$i]}:" "${results[$i]}"
done
pct=0
if [ "$total_run" -gt 0 ]; then
	pct=$((100 * total_pass / total_run))
fi
echo "all stages ($stages): $pct% tests passed, $total_fail tests failed out of $total_run"
exit $failed
