#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up, builds and runs the test suite (no GPU needed: the GPU code
# paths run against the stand-in CUDA driver in tests/fakecuda).
# Extra arguments go to ctest, e.g. scripts/test.sh -R handle
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DBUILD_TESTING=ON >/dev/null
cmake --build build-test -j"$(nproc)"
cd build-test && ctest --output-on-failure -j"$(nproc)" "$@"
