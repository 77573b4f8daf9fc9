/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data checks of tests/test.h themselves: t_fill_pattern writes exactly
 * t_pat's bytes (and nothing past the range), and t_check_pattern and
 * t_check_fill, which compare 8 bytes at a time from a table, accept the
 * right bytes and find one wrong byte wherever it is: at every position of
 * short buffers and around the pattern's 8 KiB and 1 MiB runs, for offsets
 * and seeds that start anywhere in a run (seed 0, the file's, and the large
 * ones whose product wraps).  The long buffer (over 1 MiB, a byte-by-byte
 * comparison with t_pat) for a few of the pairs: under valgrind each costs
 * about a second.
 */
#include "test.h"

static const uint64_t offs[] = {
    0, 1, 7, 4095, 8191, 12345, 1 * T_MIB - 3, 2 * T_MIB - 5, 0xFFFFFFFFull, 10ull << 30, ~0ull - 3 * T_MIB};
static const uint32_t seeds[] = {0, 1, 7, 31, 250, 0x80000000u, 0xFFFFFFFFu};
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define LONG (1 * T_MIB + 8192 + 13)

/* The checks print what they find; here every find is expected: stderr is
 * /dev/null while they run, and a failure puts it back first. */
static int saved_stderr = -1;

static void quiet(void)
{
	fflush(stderr);
	int null = open("/dev/null", O_WRONLY);
	saved_stderr = dup(2);
	T_ASSERT(saved_stderr >= 0 && null >= 0);
	dup2(null, 2);
	close(null);
}

static void loud(void)
{
	if (saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	saved_stderr = -1;
}

#define FAIL(...)                                                                                            \
	do {                                                                                                 \
		loud();                                                                                      \
		T_FAIL(__VA_ARGS__);                                                                         \
	} while (0)

/* One wrong byte at i of b[from .. from + len) must be found; b is put
 * back. */
static void expect_found(uint8_t *b, size_t from, size_t len, size_t i, uint64_t off, uint32_t seed)
{
	uint8_t flip = (uint8_t)(1u << (i % 8));

	b[i] ^= flip;
	if (t_check_pattern(b + from, len, off + from, seed, "wrong byte") == 0)
		FAIL("a wrong byte at %zu of [%zu, %zu) (offset %llu, seed %u) was not found", i, from,
		     from + len, (unsigned long long)off, seed);
	b[i] ^= flip;
}

int main(void)
{
	uint8_t *b = malloc(LONG + 16);
	T_ASSERT(b != NULL);
	quiet();
	long found = 0;
	for (size_t o = 0; o < N(offs); o++)
		for (size_t s = 0; s < N(seeds); s++) {
			uint64_t off = offs[o];
			uint32_t seed = seeds[s];
			t_set_case("offset %llu, seed %u", (unsigned long long)off, seed);
			memset(b, T_POISON, LONG + 16);
			t_fill_pattern(b, LONG, off, seed);
			bool whole = (o + s) % 16 == 0;
			for (size_t i = 0; whole && i < LONG; i++)
				if (b[i] != t_pat(off + i, seed))
					FAIL("t_fill_pattern: byte %zu is 0x%02x, t_pat gives 0x%02x", i,
					     b[i], t_pat(off + i, seed));
			if (t_check_fill(b + LONG, 16, T_POISON, "past the range"))
				FAIL("t_fill_pattern wrote past the range");
			if (t_check_pattern(b, LONG, off, seed, "right bytes"))
				FAIL("t_check_pattern refused the right bytes");
			/* Short buffers: every position. */
			for (size_t len = 1; len <= 40; len++)
				for (size_t i = 0; i < len; i++, found++)
					expect_found(b, 0, len, i, off, seed);
			/* Around the first 8 KiB boundary of x, the first 1 MiB one
			 * and the last: 48 bytes from 24 before, every position,
			 * checked against t_pat too. */
			uint64_t x = off + (uint64_t)seed * 0x9E3779B1u;
			size_t edges[3] = {(size_t)(8192 - x % 8192), (size_t)(T_MIB - x % T_MIB),
					   (size_t)(LONG - (x + LONG) % 8192)};
			for (size_t e = 0; e < 3; e++) {
				if (edges[e] < 24 || edges[e] + 24 > LONG)
					continue;
				for (size_t i = edges[e] - 24; i < edges[e] + 24; i++, found++) {
					if (b[i] != t_pat(off + i, seed))
						FAIL("t_fill_pattern: byte %zu is 0x%02x, t_pat gives 0x%02x",
						     i, b[i], t_pat(off + i, seed));
					expect_found(b, edges[e] - 24, 48, i, off, seed);
				}
			}
			if (whole) {
				expect_found(b, 0, LONG, LONG / 2, off, seed);
				found++;
			}
		}
	/* t_check_fill: every position of short buffers. */
	t_set_case("t_check_fill");
	for (size_t len = 1; len <= 40; len++)
		for (size_t i = 0; i < len; i++) {
			memset(b, 0x5A, len);
			if (t_check_fill(b, len, 0x5A, "right bytes"))
				FAIL("t_check_fill refused %zu right bytes", len);
			b[i] = 0x5B;
			if (t_check_fill(b, len, 0x5A, "wrong byte") == 0)
				FAIL("t_check_fill missed a wrong byte at %zu of %zu", i, len);
		}
	loud();
	printf("%ld wrong bytes placed, every one found\n", found);
	free(b);
	return 0;
}
