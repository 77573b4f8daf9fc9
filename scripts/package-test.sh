#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests the Debian packages as a user meets them (scripts/test.sh stage
# "package"; docs/packaging.md):
#
#   1. scripts/package.sh builds libcufile0, libcufile-dev, opencufile-tools;
#   2. mmdebstrap makes a clean Debian 12 root from the Debian mirror: the
#      essential packages and apt, plus gcc, libc6-dev and pkg-config for
#      building a consumer; cuda.h is copied in from the host, standing for
#      the user's CUDA toolkit headers (cufile.h includes it);
#   3. in that root (chroot): apt-get installs the three .deb files and pulls
#      their dependencies from Debian; a consumer (tests/package/consumer.c)
#      is built with `pkg-config --cflags --libs cufile` only and reads a
#      file into host memory, every byte checked; gdscheck runs and names
#      the library; gds_stats runs the consumer and reports its reads;
#      remove keeps only the conffile, purge leaves no file;
#   4. beside "NVIDIA's" library: a stand-in (a copy of ours whose
#      OPENCUFILE_* marker is overwritten, so gdscheck calls it another
#      implementation) under /usr/local/cuda/targets/x86_64-linux/lib,
#      listed by /etc/ld.so.conf.d/988_cuda-13.conf, and an existing
#      /etc/cufile.json: installing keeps that file byte for byte; the ld.so
#      cache picks the stand-in; an ld.so.conf.d entry sorted first picks
#      ours, deleting it goes back; LD_PRELOAD picks ours for one process,
#      even for a program whose RUNPATH names a directory holding the
#      stand-in (as torch's libraries name the nvidia-cufile wheel's);
#      purge leaves the stand-in and its /etc/cufile.json as they were.
#
# Needs root (mmdebstrap, chroot, mount) and the Debian mirror
# (DEBIAN_MIRROR, default http://deb.debian.org/debian).  Without root it
# prints "package: SKIPPED ..." and exits 77.  Prints one line per check and
# ends with "N passed, N failed".  KEEP_ROOT=1 keeps the root for a look.
# shellcheck disable=SC2317  # functions called through check()
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

if [ "$(id -u)" -ne 0 ]; then
	echo "package: SKIPPED: needs root (mmdebstrap, chroot, mount)"
	exit 77
fi

mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${DEBIAN_SUITE:-bookworm}
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$multiarch
# shellcheck source=scripts/checks.sh
. scripts/checks.sh

need=()
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

t0=$(date +%s)
if debs=$(BUILD_DIR=build-deb scripts/package.sh 2>/dev/null | grep '\.deb$'); then
	ok "packages built: $(echo "$debs" | xargs -n1 basename | tr '\n' ' ')"
else
	not_ok "scripts/package.sh failed"
	finish
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/ocf-pkgroot.XXXXXX")
cleanup() {
	mountpoint -q "$root/proc" && umount "$root/proc"
	if [ "${KEEP_ROOT:-0}" = 1 ]; then
		echo "root kept in $root"
	elif ! mountpoint -q "$root/proc"; then
		rm -rf --one-file-system "$root"
	fi
}
trap cleanup EXIT

if ! mmdebstrap --quiet --mode=root --variant=apt --include=gcc,libc6-dev,pkg-config \
	"$suite" "$root" "$mirror" >"$root.log" 2>&1; then
	not_ok "mmdebstrap $suite from $mirror (log: $root.log)"
	tail -20 "$root.log"
	finish
fi
rm -f "$root.log"
ok "clean $suite root made by mmdebstrap in $(($(date +%s) - t0)) s"
mount -t proc proc "$root/proc"

# in_root CMD...: run in the root with a plain environment.
in_root() {
	chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C DEBIAN_FRONTEND=noninteractive "$@"
}
# sh_root SCRIPT: run a shell script in the root.
sh_root() { in_root /bin/sh -ec "$1"; }

# The CUDA toolkit headers the user already has, and the test's files.
mkdir -p "$root/usr/local/cuda-13.0/include" "$root/opt/ocf"
cp "${CUDA_INCLUDE_DIR:-/usr/local/cuda/include}/cuda.h" "$root/usr/local/cuda-13.0/include/"
ln -s cuda-13.0 "$root/usr/local/cuda"
# shellcheck disable=SC2086
cp $debs "$root/opt/ocf/"
cp tests/package/consumer.c "$root/opt/ocf/"

# Every path of the root except state, caches and scratch: what must be
# the same after purge as before install.
snapshot() {
	in_root find / -xdev \( -path /proc -o -path /dev -o -path /sys -o -path /run -o -path /tmp \
		-o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \
		-o -path /opt/ocf -o -path /root \) -prune -o -print | sort
}
snapshot >"$root/opt/ocf/before"

pkgs="libcufile0 libcufile-dev opencufile-tools"
# mmdebstrap leaves no package lists: apt-get update first, as a user would.
install_debs() { sh_root "apt-get update -q >/dev/null && apt-get install -y -q /opt/ocf/*.deb >/opt/ocf/install.log 2>&1 || { cat /opt/ocf/install.log; exit 1; }"; }

# ---- 1. a clean machine
check "apt-get install ./*.deb pulls the dependencies from Debian" install_debs
check "libcufile.so.0 is in the multiarch directory and the ld.so cache" \
	sh_root "test -f $libdir/libcufile.so.0.1.0; ldconfig -p | grep -q 'libcufile.so.0 .*=> \(/usr\)\?/lib/$multiarch/libcufile.so.0\$'"
check "its SONAME is libcufile.so.0" sh_root "objdump -p $libdir/libcufile.so.0 | grep -q 'SONAME *libcufile.so.0\$'"
check "/etc/cufile.json links to the package's sample, which the library reads without a message" \
	sh_root "test \"\$(readlink -f /etc/cufile.json)\" = /etc/opencufile/cufile.json
		gdscheck | grep -q 'file: /etc/cufile.json'
		! gdscheck | grep -E '^ *(ERROR|WARN)'"
check "pkg-config --cflags --libs cufile builds the consumer" \
	sh_root "cd /opt/ocf && cc -Wall -Werror -o consumer consumer.c \$(pkg-config --cflags --libs cufile)"
check "the consumer reads a file into host memory, every byte verified, through the package's library" \
	sh_root "cd /tmp && /opt/ocf/consumer /tmp/c.dat | tee /dev/stderr | grep -q 'verified by $libdir/libcufile.so.0.1.0'"
check "gdscheck says the library is opencufile, chosen by the ld.so cache" \
	sh_root "gdscheck > /opt/ocf/gdscheck.txt; sed -n '/^Library/,/^\$/p' /opt/ocf/gdscheck.txt >&2
		grep -q 'in this process: $libdir/libcufile.so.0.1.0 (opencufile)' /opt/ocf/gdscheck.txt
		grep -q 'chosen by: the ld.so cache' /opt/ocf/gdscheck.txt"
check "gds_stats runs the consumer under it and reports its reads" \
	sh_root "cd /tmp && gds_stats -l 1 -- /opt/ocf/consumer /tmp/s.dat > /opt/ocf/gds_stats.txt; cat /opt/ocf/gds_stats.txt >&2
		grep -q '^  read  *ok [1-9]' /opt/ocf/gds_stats.txt"
check "man pages of gdsio, gdscheck and gds_stats, copyright and changelog are installed" \
	sh_root "for p in gdsio gdscheck gds_stats; do zcat /usr/share/man/man1/\$p.1.gz | grep -q '^.TH'; done
		for p in $pkgs; do grep -q Apache-2.0 /usr/share/doc/\$p/copyright; zcat /usr/share/doc/\$p/changelog.gz | grep -q '^opencufile'; done"
check "remove keeps only the conffile and drops the /etc/cufile.json link" \
	sh_root "apt-get remove -y -q $pkgs >/dev/null 2>&1
		test -f /etc/opencufile/cufile.json; test ! -e /etc/cufile.json; test ! -L /etc/cufile.json
		! ldconfig -p | grep -q libcufile; dpkg -l libcufile0 | grep -q '^rc'"
# After remove only libcufile0 (which has a conffile) is left to purge.
purge_debs() {
	sh_root "apt-get purge -y -q --autoremove libcufile0 >/opt/ocf/purge.log 2>&1 || { cat /opt/ocf/purge.log; exit 1; }
		if dpkg -l $pkgs 2>/dev/null | grep '^[a-z][a-z] '; then cat /opt/ocf/purge.log; exit 1; fi"
}
check "purge of libcufile0 (and autoremove of json-c) leaves no package behind" purge_debs
snapshot >"$root/opt/ocf/after"
check "the root's files are those it had before install" diff -u "$root/opt/ocf/before" "$root/opt/ocf/after"

# ---- 2. beside NVIDIA's library
nv=/usr/local/cuda-13.0/targets/x86_64-linux/lib
mkdir -p "$root$nv" "$root/opt/ocf/wheel/nvidia/cufile/lib"
dpkg-deb -x "$(echo "$debs" | grep libcufile0_)" "$root/opt/ocf/x"
sed 's/OPENCUFILE_LIBCUDA/NVIDIA_STANDIN_LIB/g' "$root/opt/ocf/x$libdir/libcufile.so.0.1.0" >"$root$nv/libcufile.so.1.15.1"
ln -s libcufile.so.1.15.1 "$root$nv/libcufile.so.0"
cp "$root$nv/libcufile.so.1.15.1" "$root/opt/ocf/wheel/nvidia/cufile/lib/libcufile.so.0"
echo "/usr/local/cuda/targets/x86_64-linux/lib" >"$root/etc/ld.so.conf.d/988_cuda-13.conf"
cp tests/data/cufile_stock_like.json "$root/etc/cufile.json"
# The stand-in needs json-c, as NVIDIA's library needs its own dependencies.
sh_root "apt-get install -y -q libjson-c5 >/dev/null 2>&1; ldconfig; md5sum /etc/cufile.json > /opt/ocf/cufile.json.md5"
snapshot >"$root/opt/ocf/before"
check "a stand-in for NVIDIA's libcufile.so.0 is in the ld.so cache" \
	sh_root "ldconfig -p | grep -q 'libcufile.so.0 .*=> /usr/local/cuda/targets/x86_64-linux/lib/libcufile.so.0\$'"
check "install beside it; the existing /etc/cufile.json is kept byte for byte" \
	sh_root "apt-get install -y -q /opt/ocf/*.deb >/opt/ocf/install.log 2>&1 || { cat /opt/ocf/install.log; exit 1; }
		test ! -L /etc/cufile.json; md5sum -c /opt/ocf/cufile.json.md5 >/dev/null"
check "a consumer against the package (pkg-config) is built" \
	sh_root "cd /opt/ocf && cc -o consumer consumer.c \$(pkg-config --cflags --libs cufile)
		cc -o consumer_runpath consumer.c \$(pkg-config --cflags --libs cufile) -Wl,--enable-new-dtags,-rpath,/opt/ocf/wheel/nvidia/cufile/lib"
check "the ld.so cache gives NVIDIA's directory first (988_cuda-13.conf before x86_64-linux-gnu.conf); gdscheck says so" \
	sh_root "cd /tmp && /opt/ocf/consumer /tmp/c.dat | grep -q 'verified by $nv/libcufile.so.1.15.1'
		gdscheck > /opt/ocf/gdscheck.txt; sed -n '/^Library/,/^\$/p' /opt/ocf/gdscheck.txt >&2
		grep -q '(another implementation)' /opt/ocf/gdscheck.txt
		grep -q 'listed in /etc/ld.so.conf.d/988_cuda-13.conf' /opt/ocf/gdscheck.txt"
check "system-wide: an ld.so.conf.d entry sorted first makes ours the one every program gets" \
	sh_root "echo $libdir/opencufile > /etc/ld.so.conf.d/0000-opencufile.conf; ldconfig
		cd /tmp && /opt/ocf/consumer /tmp/c.dat | grep -q 'verified by $libdir/libcufile.so.0.1.0'
		gdscheck > /opt/ocf/gdscheck.txt; sed -n '/^Library/,/^\$/p' /opt/ocf/gdscheck.txt >&2
		grep -q 'in this process: $libdir/libcufile.so.0.1.0 (opencufile)' /opt/ocf/gdscheck.txt
		grep -q 'listed in /etc/ld.so.conf.d/0000-opencufile.conf' /opt/ocf/gdscheck.txt"
check "a program whose RUNPATH names a directory holding NVIDIA's copy (torch and its wheel) still gets that copy" \
	sh_root "cd /tmp && /opt/ocf/consumer_runpath /tmp/c.dat | grep -q 'verified by /opt/ocf/wheel/nvidia/cufile/lib/libcufile.so.0'"
check "system-wide back: deleting the entry and running ldconfig gives NVIDIA's again" \
	sh_root "rm /etc/ld.so.conf.d/0000-opencufile.conf; ldconfig
		cd /tmp && /opt/ocf/consumer /tmp/c.dat | grep -q 'verified by $nv/libcufile.so.1.15.1'"
check "per process: LD_PRELOAD gives ours, over the ld.so cache and over a RUNPATH" \
	sh_root "cd /tmp && export LD_PRELOAD=$libdir/libcufile.so.0
		/opt/ocf/consumer /tmp/c.dat | grep -q 'verified by $libdir/libcufile.so.0.1.0'
		/opt/ocf/consumer_runpath /tmp/c.dat | grep -q 'verified by $libdir/libcufile.so.0.1.0'
		gdscheck | grep -q 'chosen by: LD_PRELOAD'"
check "per process back: without LD_PRELOAD the RUNPATH program gets NVIDIA's copy again" \
	sh_root "cd /tmp && /opt/ocf/consumer_runpath /tmp/c.dat | grep -q 'verified by /opt/ocf/wheel/'"
check "purge leaves NVIDIA's library and /etc/cufile.json as they were, and no file of ours" \
	sh_root "apt-get purge -y -q --autoremove $pkgs >/opt/ocf/purge.log 2>&1 || { cat /opt/ocf/purge.log; exit 1; }
		md5sum -c /opt/ocf/cufile.json.md5 >/dev/null
		test \"\$(ldconfig -p | grep -c 'libcufile.so.0 ')\" = 1
		cd /tmp && /opt/ocf/consumer /tmp/c.dat | grep -q 'verified by $nv/libcufile.so.1.15.1'"
snapshot >"$root/opt/ocf/after"
check "the root's files are those it had before install" diff -u "$root/opt/ocf/before" "$root/opt/ocf/after"

echo "package stage: $(($(date +%s) - t0)) s"
finish
