#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian packages (libcufile0, libcufile-dev, opencufile-tools)
# with CPack's DEB generator into build-deb/deb/ and lists them.
#
#   scripts/package.sh            build (installs what it needs as root)
#   sudo apt-get install ./build-deb/deb/*.deb
#
# BUILD_DIR (default build-deb) and JOBS (default nproc) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-deb}
jobs=${JOBS:-$(nproc)}

scripts/setup.sh
# dpkg-shlibdeps computes the packages' dependencies.
if ! command -v dpkg-shlibdeps >/dev/null; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "package: please install dpkg-dev" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
	-DBUILD_TESTING=OFF -DOPENCUFILE_DEB=ON -DOPENCUFILE_PC_RELOCATABLE=OFF >/dev/null
cmake --build "$build" -j"$jobs" >/dev/null
rm -f "$build"/deb/*.deb
(cd "$build" && cpack -G DEB >/dev/null)
ls -1 "$build"/deb/*.deb
