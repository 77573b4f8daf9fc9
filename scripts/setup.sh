#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building and testing opencufile needs on Debian/Ubuntu
# (the sanitizer runtimes come with gcc).
# Needs root for apt-get; does nothing when everything is already there.
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v gcc >/dev/null || need+=(gcc) # the plain stage builds with gcc, the fuzz stage with clang
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v pkg-config >/dev/null || need+=(pkg-config)
dpkg -s libjson-c-dev >/dev/null 2>&1 || need+=(libjson-c-dev)
# io_uring; the build falls back to pread/pwrite without it.
dpkg -s liburing-dev >/dev/null 2>&1 || need+=(liburing-dev)
# gdscheck reads /proc/config.gz with it; the build leaves it out without.
dpkg -s zlib1g-dev >/dev/null 2>&1 || need+=(zlib1g-dev)
# scripts/test.sh runs the unit tests under valgrind too.
command -v valgrind >/dev/null || need+=(valgrind)
# ... and builds the tree with clang (-Werror) and replays the libFuzzer
# corpora, which need clang.
command -v clang >/dev/null || need+=(clang)
# The Python wheel's test makes a venv with pip (python3 -m venv: ensurepip).
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: please install: ${need[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
cuda_inc=${CUDA_INCLUDE_DIR:-/usr/local/cuda/include}
if [ ! -f "$cuda_inc/cuda.h" ]; then
  echo "setup: cuda.h not found in $cuda_inc (install the CUDA toolkit headers or set CUDA_INCLUDE_DIR)" >&2
  exit 1
fi
