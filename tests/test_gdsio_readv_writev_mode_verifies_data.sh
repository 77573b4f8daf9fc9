#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_gdsio_readv_writev_mode_verifies_data.sh GDSIO GDSCHECK MEM
#
# gdsio's vector mode (-v N: every op one cuFileReadv/cuFileWritev of N
# pieces laid out in reverse buffer order) moves the right bytes, in the
# memory type MEM (gdsio -m: 3 = malloc, 0 = device memory of the stand-in
# driver), registered or not:
#  - writes with -V put the pattern into a fresh file (read back and checked
#    by gdsio), then an independent CPU read (-x 1 -V) checks the file again;
#  - reads with -V check every byte of every piece, with unequal pieces too
#    (an IO size that N does not divide);
#  - the library counted the vectored calls (statistics file, gdscheck -s),
#    so the runs really went through cuFileReadv/cuFileWritev;
#  - a file whose content is wrong makes the verified vector read fail
#    (exit 1, "Verify: FAIL"): the check looks at the data, it is not vacuous;
#  - gdsio does not link cuFileReadv/cuFileWritev, so that it still loads
#    with a libcufile that lacks them (NVIDIA's 1.15, the reference of
#    comparison runs).
set -u
GDSIO=$1
GDSCHECK=$2
MEM=$3
if command -v nm >/dev/null && nm -D --undefined-only "$GDSIO" | grep -Eq ' cuFile(Read|Write)v$'; then
	echo "FAIL gdsio links cuFileReadv/cuFileWritev: it would not load with a 1.15 libcufile"
	exit 1
fi
T=$(mktemp -d "$PWD/gdsio-vec.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
F=$T/data
cat >"$T/cufile.json" <<'EOF'
{ "profile": { "cufile_stats": 1 } }
EOF
export CUFILE_ENV_PATH_JSON=$T/cufile.json
fails=0
run() { # name expected-rc gdsio-args...
	name=$1 want=$2
	shift 2
	OPENCUFILE_STATS_FILE=$T/stats.bin "$GDSIO" "$@" >"$T/out" 2>&1
	rc=$?
	if [ "$rc" = 77 ]; then cat "$T/out"; exit 77; fi
	if [ "$rc" != "$want" ]; then
		echo "FAIL $name: exit $rc, want $want: gdsio $*"
		cat "$T/out"
		fails=$((fails + 1))
		return 1
	fi
	echo "ok   $name"
	return 0
}
# counter TEXT: the number after TEXT in gdscheck -s of the last run
counter() {
	"$GDSCHECK" -s "$T/stats.bin" 2>/dev/null | sed -n "s/.*$1 \([0-9][0-9]*\).*/\1/p" | head -1
}
expect_vec_bytes() { # name readv|writev bytes
	got=$(counter "$2 bytes")
	if [ "${got:-0}" != "$3" ]; then
		echo "FAIL $1: $2 bytes counted ${got:-none}, want $3"
		"$GDSCHECK" -s "$T/stats.bin"
		fails=$((fails + 1))
	fi
}
expect_pass() { # name
	grep -q 'Verify: PASS' "$T/out" || { echo "FAIL $1: no 'Verify: PASS'"; cat "$T/out"; fails=$((fails + 1)); }
}

# 4 MiB file written from scratch through cuFileWritev, 2 threads x 256 KiB
# ops of 5 pieces (unequal: 262144 = 4 x 52428 + 52432), registered.
run write_v5 0 -f "$F" -s 4M -I 1 -x 0 -m "$MEM" -N -w 2 -i 256K -v 5 -V && {
	expect_pass write_v5
	expect_vec_bytes write_v5 writev 4194304
}
# Every byte of the file as written, checked without cuFile.
run cpu_check 0 -f "$F" -s 4M -x 1 -m 3 -N -w 1 -i 1M -V && expect_pass cpu_check
# Reads: unregistered, 8 pieces, O_DIRECT and buffered, and unaligned sizes.
run read_v8_odirect 0 -f "$F" -s 4M -x 0 -m "$MEM" -b -O -w 4 -i 64K -v 8 -V && {
	expect_pass read_v8_odirect
	expect_vec_bytes read_v8_odirect readv 4194304
}
run read_v3_buffered_registered 0 -f "$F" -s 4M -x 0 -m "$MEM" -N -w 2 -i 100000 -v 3 -V &&
	expect_pass read_v3_buffered_registered
# -v 1 is one piece: the plain vector call.
run read_v1 0 -f "$F" -s 1M -x 0 -m "$MEM" -b -N -w 1 -i 1M -v 1 -V && expect_pass read_v1
# Shared buffer (-A) combined with the vector mode.
run read_v4_shared 0 -f "$F" -s 4M -x 0 -m "$MEM" -A -N -w 4 -i 128K -v 4 -V && expect_pass read_v4_shared

# Wrong data must be noticed: flip one byte in the middle of a piece.
printf '\377' | dd of="$F" bs=1 seek=1500000 conv=notrunc 2>/dev/null
printf '\000' | dd of="$F" bs=1 seek=1500001 conv=notrunc 2>/dev/null
run detects_bad_byte 1 -f "$F" -s 4M -x 0 -m "$MEM" -b -N -w 1 -i 256K -v 4 -V &&
	if ! grep -q 'Verify: FAIL' "$T/out" || ! grep -q 'file offset 150000[01]' "$T/out"; then
		echo "FAIL detects_bad_byte: not reported at offset 1500000/1500001"
		cat "$T/out"
		fails=$((fails + 1))
	fi

# Bad option combinations are usage errors (exit 2).
run vec_needs_x0 2 -f "$F" -s 1M -x 1 -m 3 -v 2
run vec_more_pieces_than_bytes 2 -f "$F" -s 1M -x 0 -m "$MEM" -i 512 -v 1000

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
