#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An installed opencufile is found the usual ways: a C consumer builds with
# `pkg-config --cflags --libs cufile`, a CMake consumer with
# find_package(opencufile) and target opencufile::cufile, and a C++17
# consumer compiles the installed header.  Both programs run and print the
# API version.   Usage: test_install_consumers_find_library.sh BUILD_DIR
set -eu
build=$1
command -v pkg-config >/dev/null || { echo "pkg-config not installed: skipped"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ocf-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
lib=$(dirname "$(find "$work/prefix" -name 'libcufile.so.0' | head -1)")
cat >"$work/m.c" <<'C'
#include <cufile.h>
#include <stdio.h>
int main(void) { int v = 0; cuFileGetVersion(&v); printf("%d\n", v); return v == OPENCUFILE_API_VERSION_MAX ? 0 : 1; }
C
cp "$work/m.c" "$work/m.cpp"
pc=$(dirname "$(find "$work/prefix" -name cufile.pc | head -1)")
# shellcheck disable=SC2046
cc "$work/m.c" $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs cufile) -Wl,-rpath,"$lib" -o "$work/m_pc"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Werror "$work/m.cpp" $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs cufile) \
	-Wl,-rpath,"$lib" -o "$work/m_cxx"
mkdir -p "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(opencufile REQUIRED)
add_executable(m_cmake ../m.c)
target_link_libraries(m_cmake opencufile::cufile)
CM
cmake -S "$work/cm" -B "$work/cm/b" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_RPATH="$lib" >/dev/null
cmake --build "$work/cm/b" >/dev/null
for p in "$work/m_pc" "$work/m_cxx" "$work/cm/b/m_cmake"; do
	out=$("$p")
	[ "$out" = 1190 ] || { echo "FAIL: $p printed '$out'"; exit 1; }
done
echo "pkg-config, C++17 and find_package consumers built and ran"
