#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copies the build dependencies that the GPU machine lacks (json-c headers
# and library) into .carry/, which git ignores and a device call carries.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry/jsonc
mkdir -p .carry/jsonc/include .carry/jsonc/lib
cp -r /usr/include/json-c .carry/jsonc/include/
cp -a /usr/lib/x86_64-linux-gnu/libjson-c.so* .carry/jsonc/lib/
du -sh .carry
