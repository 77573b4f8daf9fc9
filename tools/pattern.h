/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pattern.h - the project's test-file pattern, fast enough to verify
 * gigabytes per second per thread.
 *
 *   byte at file offset i = (uint8_t)(((i * 2654435761u) >> 13) ^ (i >> 20))
 *
 * DESIGN: bits 13..20 of the product depend only on the low 21 bits of i, so
 * the first term repeats every 2 MiB and the second is constant within each
 * aligned MiB.  A 2 MiB table of the first term turns generation and checking
 * into table copies XORed with one constant per MiB: simple byte loops the
 * compiler vectorises, instead of a 64-bit multiply per byte.
 */
#ifndef OCF_TOOLS_PATTERN_H_
#define OCF_TOOLS_PATTERN_H_

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define PATTERN_PERIOD ((uint64_t)1 << 21)
#define PATTERN_MIB ((uint64_t)1 << 20)

static uint8_t pattern_table[PATTERN_PERIOD];
static pthread_once_t pattern_once = PTHREAD_ONCE_INIT;

static inline uint8_t pattern_byte(uint64_t i)
{
	return (uint8_t)(((i * 2654435761u) >> 13) ^ (i >> 20));
}

static void pattern_build(void)
{
	for (uint64_t j = 0; j < PATTERN_PERIOD; j++)
		pattern_table[j] = (uint8_t)(((uint32_t)j * 2654435761u) >> 13);
}

static inline void pattern_init(void)
{
	pthread_once(&pattern_once, pattern_build);
}

/* Length of the run starting at file offset `pos` that stays inside one
 * aligned MiB (so one XOR constant and one contiguous table slice apply). */
static inline size_t pattern_run(uint64_t pos, size_t left)
{
	uint64_t room = PATTERN_MIB - (pos & (PATTERN_MIB - 1));
	return left < room ? left : (size_t)room;
}

/* The loops below go eight bytes at a time through a type of any
 * alignment: the byte loops the compiler vectorises ran ten times slower
 * unoptimised, and a Debug build's tests verify gigabytes. */
typedef uint64_t __attribute__((may_alias, aligned(1))) pattern_u64;
#define PATTERN_X8(x) ((uint64_t)(x) * 0x0101010101010101ull)

/* d[k] = t[k] ^ x for k < n. */
static inline void pattern_xor(uint8_t *d, const uint8_t *t, size_t n, uint8_t x)
{
	size_t k = 0;
	for (uint64_t x8 = PATTERN_X8(x); k + 8 <= n; k += 8)
		*(pattern_u64 *)(d + k) = *(const pattern_u64 *)(t + k) ^ x8;
	for (; k < n; k++)
		d[k] = t[k] ^ x;
}

/* Whether some d[k] != t[k] ^ x for k < n. */
static inline int pattern_differs(const uint8_t *d, const uint8_t *t, size_t n, uint8_t x)
{
	uint64_t bad = 0, x8 = PATTERN_X8(x);
	size_t k = 0;
	for (; k + 8 <= n; k += 8)
		bad |= *(const pattern_u64 *)(d + k) ^ *(const pattern_u64 *)(t + k) ^ x8;
	for (; k < n; k++)
		bad |= (uint8_t)(d[k] ^ t[k] ^ x);
	return bad != 0;
}

/* Fill buf with the bytes that belong at file offsets [off, off+len). */
static inline void pattern_fill(void *buf, uint64_t off, size_t len)
{
	uint8_t *d = buf;
	pattern_init();
	while (len) {
		size_t n = pattern_run(off, len);
		const uint8_t *t = pattern_table + (off & (PATTERN_PERIOD - 1));
		pattern_xor(d, t, n, (uint8_t)(off >> 20));
		d += n, off += n, len -= n;
	}
}

/* Check buf against file offsets [off, off+len).  Returns the index in buf of
 * the first wrong byte, or -1 if every byte is right. */
static inline long long pattern_check(const void *buf, uint64_t off, size_t len)
{
	const uint8_t *d = buf;
	size_t done = 0;
	pattern_init();
	while (done < len) {
		size_t n = pattern_run(off + done, len - done);
		const uint8_t *t = pattern_table + ((off + done) & (PATTERN_PERIOD - 1));
		uint8_t x = (uint8_t)((off + done) >> 20);
		for (size_t b = 0; b < n; b += 4096) {
			size_t m = n - b < 4096 ? n - b : 4096;
			if (pattern_differs(d + done + b, t + b, m, x)) {
				for (size_t k = 0; k < m; k++)
					if ((uint8_t)(d[done + b + k] ^ t[b + k] ^ x))
						return (long long)(done + b + k);
			}
		}
		done += n;
	}
	return -1;
}

#endif /* OCF_TOOLS_PATTERN_H_ */
