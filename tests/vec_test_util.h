/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vec_test_util.h - vectors of many small pieces for the cuFileReadv /
 * cuFileWritev tests: pieces of 1 to `maxlen` bytes carved from one arena
 * with gaps between them (so that no two merge), in a fixed pseudo-random
 * order of sizes.
 */
#ifndef OCF_VEC_TEST_UTIL_H_
#define OCF_VEC_TEST_UTIL_H_

#include "test.h"

/* Lays out n pieces over [arena, arena + arena_len); returns their total
 * length.  Fails the test when the arena is too small. */
static inline size_t t_vec_layout(CUfileIOVec_t *iov, size_t n, char *arena, size_t arena_len, size_t maxlen,
				  uint32_t seed)
{
	size_t at = 0, total = 0;
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		size_t len = 1 + (x >> 8) % maxlen;
		size_t gap = 1 + (x >> 20) % 61;
		if (at + len + gap > arena_len)
			T_FAIL("arena of %zu bytes too small for %zu pieces", arena_len, n);
		iov[i].base = arena + at;
		iov[i].len = len;
		at += len + gap;
		total += len;
	}
	return total;
}

/* Gathers the pieces' bytes into out (host memory only). */
static inline void t_vec_gather(const CUfileIOVec_t *iov, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		memcpy(out, iov[i].base, iov[i].len);
		out += iov[i].len;
	}
}

/* Fills the pieces with pattern `seed` as if they held file bytes from
 * file_off on (host memory only). */
static inline void t_vec_fill(const CUfileIOVec_t *iov, size_t n, uint64_t file_off, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		t_fill_pattern(iov[i].base, iov[i].len, file_off, seed);
		file_off += iov[i].len;
	}
}

#endif /* OCF_VEC_TEST_UTIL_H_ */
