#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets with clang (in build-fuzz/) and runs them.
#
#   scripts/fuzz.sh                  replay both corpora once (the ctest entries)
#   scripts/fuzz.sh api SECONDS      fuzz the API for SECONDS, then merge what
#   scripts/fuzz.sh config SECONDS   was found into tests/fuzz/corpus_<name>
#                                    (libFuzzer -merge=1 keeps only inputs
#                                    that add coverage)
#
# New inputs of a run collect in build-fuzz/corpus_<name>_work, which starts
# from the committed corpus.  A crash leaves crash-* in build-fuzz/tests;
# replay it with build-fuzz/tests/fuzz_<name> crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=Debug -DBUILD_TESTING=ON -DOPENCUFILE_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_api fuzz_config

if [ $# -eq 0 ]; then
  cd build-fuzz && ctest --output-on-failure -R '^fuzz_'
  exit
fi

name=$1
seconds=${2:-300}
case $name in api | config) ;; *) echo "usage: $0 [api|config SECONDS]" >&2; exit 2 ;; esac
corpus=$root/tests/fuzz/corpus_$name
work=$root/build-fuzz/corpus_${name}_work
mkdir -p "$work" "$corpus"
# API inputs are programs of up to 64 steps: let them grow that long.
extra=()
[ "$name" = api ] && extra=(-max_len=1024)
cd build-fuzz/tests
./fuzz_"$name" "$work" "$corpus" -max_total_time="$seconds" -timeout=20 -print_final_stats=1 "${extra[@]}"
./fuzz_"$name" -merge=1 "$corpus" "$work"
