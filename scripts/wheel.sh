#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Python wheel dist/opencufile-<version>-py3-none-manylinux_2_<N>_x86_64.whl
# (docs/using.md, "Python"):
#
#   opencufile/lib/libcufile.so.0   json-c and liburing linked in: needs glibc only
#   opencufile/bin/gdscheck, gdsio, gds_stats   the console commands of the same
#                                   names (RUNPATH $ORIGIN/../lib: the library beside)
#   opencufile/*.py                 python -m opencufile; the loader run at start
#   opencufile.pth                  loads the library at every interpreter start
#
# No extension module, so one wheel serves every Python 3 (py3-none).  Nothing
# is fetched: a CMake build with -DOPENCUFILE_STATIC_DEPS=ON (the static
# archives of libjson-c-dev, liburing-dev, zlib1g-dev), then the standard
# library's zipfile writes the wheel (python/build_wheel.py).
#
# The manylinux tag: N is the highest GLIBC_2.N symbol version that any binary
# of the wheel requires (the version references `objdump -T` lists), so pip
# installs the wheel only where glibc is that new or newer.  The build also
# fails if a binary needs a shared library outside glibc (libc, libm,
# libpthread, libdl, the dynamic loader) or, for the tools, ours.
#
#   scripts/wheel.sh                       prints the wheel's path last
#   pip install dist/opencufile-*.whl
#
# BUILD_DIR (default build-wheel), DIST (default dist), JOBS (default nproc),
# PYTHON (default /usr/bin/python3, else python3) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-wheel}
dist=${DIST:-dist}
jobs=${JOBS:-$(nproc)}
python=${PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=python3
for t in cmake objdump readelf strip "$python"; do
	command -v "$t" >/dev/null || { echo "wheel: $t not found" >&2; exit 1; }
done
[ "$(uname -m)" = x86_64 ] || { echo "wheel: builds x86_64 wheels only" >&2; exit 1; }

version=$(sed -n 's/^project(opencufile VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "wheel: no version in CMakeLists.txt" >&2; exit 1; }

# shellcheck disable=SC2016  # $ORIGIN is for ld.so
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
	-DOPENCUFILE_STATIC_DEPS=ON -DOPENCUFILE_TOOLS_RUNPATH='$ORIGIN/../lib' >"$build.configure.log" 2>&1 ||
	{ tail -20 "$build.configure.log" >&2; exit 1; }
mv "$build.configure.log" "$build/configure.log"
cmake --build "$build" -j"$jobs" --target cufile gdscheck gdsio gds_stats >"$build/build.log" 2>&1 ||
	{ tail -30 "$build/build.log" >&2; exit 1; }

stage=$build/wheel-stage
rm -rf "$stage"
mkdir -p "$stage/opencufile/lib" "$stage/opencufile/bin"
strip --strip-unneeded -o "$stage/opencufile/lib/libcufile.so.0" "$(readlink -f "$build/libcufile.so.0")"
for t in gdscheck gdsio gds_stats; do
	strip -o "$stage/opencufile/bin/$t" "$build/tools/$t"
done
cp python/opencufile/*.py "$stage/opencufile/"
cp python/opencufile.pth "$stage/"

# Dependencies: glibc's libraries only (and ours, for the tools).
bad=0
for f in "$stage"/opencufile/lib/* "$stage"/opencufile/bin/*; do
	for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case $n in
		libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | ld-linux-x86-64.so.2) ;;
		libcufile.so.0) [[ $f == */bin/* ]] || { echo "wheel: $f needs $n" >&2; bad=1; } ;;
		*) echo "wheel: ${f#"$stage"/} needs $n, which is not part of glibc" >&2; bad=1 ;;
		esac
	done
done
[ "$bad" = 0 ] || exit 1

# manylinux_2_N: the newest glibc symbol version required.
glibc=$(objdump -T "$stage"/opencufile/lib/* "$stage"/opencufile/bin/* |
	grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2,2n -u | tail -1)
minor=${glibc#GLIBC_2.}
[ -n "$minor" ] || { echo "wheel: no GLIBC_2.N version found" >&2; exit 1; }
tag=py3-none-manylinux_2_${minor}_x86_64
echo "wheel: newest glibc symbol version required: $glibc -> $tag" >&2

rm -f "$dist"/opencufile-*.whl
"$python" python/build_wheel.py --stage "$stage" --version "$version" --tag "$tag" \
	--license LICENSE --out "$dist"
