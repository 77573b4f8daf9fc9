#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_gdsio_without_a_gpu_names_host_memory.sh GDSIO
#
# gdsio on a machine without a CUDA driver (OPENCUFILE_LIBCUDA naming a
# library that is not there): the default memory type (-m 0, device
# memory) and pinned memory (-m 2) fail with a message that names the
# option given, why, and the host memory types to use instead (-m 3 or
# -m 4); -m 3 then writes and reads the file, every byte verified.
GDSIO=$1
T=$(mktemp -d "$PWD/gdsio-nogpu.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
export OPENCUFILE_LIBCUDA=/nonexistent/libcuda.so.1
fails=0
bad() {
	echo "FAIL $1: $2"
	fails=$((fails + 1))
}

# fails_with NAME WANT ARGS...: exit 1 and an ERROR line containing WANT.
fails_with() {
	name=$1 want=$2
	shift 2
	"$GDSIO" -f "$T/f.dat" -s 1M -i 256K -x 0 -I 1 "$@" >"$T/out" 2>&1
	rc=$?
	[ "$rc" = 1 ] || bad "$name" "exit $rc, want 1"
	grep 'ERROR:' "$T/out" | grep -qF -- "$want" || bad "$name" "no ERROR with [$want] in: $(cat "$T/out")"
	grep -qF -- "needs the CUDA driver: dlopen(/nonexistent/libcuda.so.1)" "$T/out" || bad "$name" "does not say why"
	grep -qF -- "for host memory give -m 3 (malloc) or -m 4 (mmap)" "$T/out" || bad "$name" "names no host memory type"
}
fails_with "default -m" "-m 0 (DEVICE(cuMemAlloc), the default) needs the CUDA driver"
fails_with "-m 2" "-m 2 (PINNED(cuMemHostAlloc)) needs the CUDA driver" -m 2

for io in 1 0; do
	"$GDSIO" -f "$T/f.dat" -s 1M -i 256K -x 0 -I $io -m 3 -V >"$T/out" 2>&1
	rc=$?
	[ "$rc" = 0 ] && grep -q 'Status: ok' "$T/out" && grep -q 'Verify: PASS' "$T/out" ||
		bad "-m 3 -I $io" "exit $rc: $(cat "$T/out")"
done

if [ "$fails" != 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "all passed"
