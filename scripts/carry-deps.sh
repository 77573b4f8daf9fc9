#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copies the build dependencies that the GPU machine lacks (json-c headers
# and library; liburing headers and its static archive, which is linked
# into libcufile; zlib headers, for gdscheck) into .carry/, which git
# ignores and a device call carries.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry/jsonc
mkdir -p .carry/jsonc/include .carry/jsonc/lib
cp -r /usr/include/json-c .carry/jsonc/include/
cp -a /usr/lib/x86_64-linux-gnu/libjson-c.so* .carry/jsonc/lib/
rm -rf .carry/liburing
if [ -f /usr/include/liburing.h ] && [ -f /usr/lib/x86_64-linux-gnu/liburing.a ]; then
  mkdir -p .carry/liburing/include .carry/liburing/lib
  cp -r /usr/include/liburing.h /usr/include/liburing .carry/liburing/include/
  cp -a /usr/lib/x86_64-linux-gnu/liburing.a .carry/liburing/lib/
else
  echo "carry-deps: liburing-dev not installed: the GPU build will use pread/pwrite only" >&2
fi
# zlib's headers and link, for gdscheck's reading of /proc/config.gz.
rm -rf .carry/zlib
if [ -f /usr/include/zlib.h ] && [ -e /usr/lib/x86_64-linux-gnu/libz.so ]; then
  mkdir -p .carry/zlib/include .carry/zlib/lib
  cp /usr/include/zlib.h /usr/include/zconf.h .carry/zlib/include/
  cp -a /usr/lib/x86_64-linux-gnu/libz.so* .carry/zlib/lib/
else
  echo "carry-deps: zlib1g-dev not installed: the GPU build's gdscheck will not read /proc/config.gz" >&2
fi
du -sh .carry
