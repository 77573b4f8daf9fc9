/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tools/pattern.h (gdsio's and bench/ceilings' file pattern, filled and
 * checked eight bytes at a time): pattern_fill writes exactly
 * pattern_byte's bytes and nothing past the range, and pattern_check
 * accepts them and returns the first wrong byte wherever it is - for file
 * offsets and buffer addresses at every alignment, lengths around the
 * 8-byte steps, the 4 KiB check blocks and the 1 MiB runs, offsets past
 * 4 GiB, and a second wrong byte after the first.
 */
#include "test.h"

#include "pattern.h"

static const uint64_t offs[] = {0, 1, 7, 8, 4095, 4097, (1u << 20) - 3, (2u << 20) - 5, 0xFFFFFFFFull, (10ull << 30) + 3};
static const size_t lens[] = {0, 1, 7, 8, 9, 15, 16, 17, 4095, 4096, 4097, 8193, (1u << 20) + 13};
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define GUARD 16

int main(void)
{
	size_t max = (1u << 20) + 13;
	uint8_t *mem = malloc(max + 2 * GUARD + 8);
	T_ASSERT(mem != NULL);
	for (size_t o = 0; o < N(offs); o++)
		for (size_t l = 0; l < N(lens); l++)
			for (size_t al = 0; al < 8; al++) {
				uint64_t off = offs[o];
				size_t len = lens[l];
				uint8_t *buf = mem + GUARD + al;
				memset(mem, 0x5A, max + 2 * GUARD + 8);
				pattern_fill(buf, off, len);
				for (size_t k = 0; k < len; k++)
					if (buf[k] != pattern_byte(off + k))
						T_FAIL("fill off %llu len %zu align %zu: byte %zu is %u, want %u",
						       (unsigned long long)off, len, al, k, buf[k], pattern_byte(off + k));
				for (size_t k = 0; k < GUARD; k++)
					T_ASSERT(buf[-1 - (long)k] == 0x5A && buf[len + k] == 0x5A);
				T_EQ(pattern_check(buf, off, len), -1);
				if (!len)
					continue;
				/* A wrong byte at the start, near each end of an 8-byte
				 * step, at the end, and a second one after it. */
				size_t at[] = {0, 7 % len, 8 % len, len / 2, len - 1};
				for (size_t a = 0; a < N(at); a++) {
					size_t w = at[a];
					buf[w] ^= 0x10;
					T_EQ(pattern_check(buf, off, len), (long long)w);
					if (w + 1 < len) {
						buf[len - 1 == w ? w : len - 1] ^= 0x01;
						T_EQ(pattern_check(buf, off, len), (long long)w);
						buf[len - 1 == w ? w : len - 1] ^= 0x01;
					}
					buf[w] ^= 0x10;
				}
				T_EQ(pattern_check(buf, off, len), -1);
			}
	free(mem);
	return T_EXIT_PASS;
}
