/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chunking.c's arithmetic over a grid of requests (compiled in, linked with
 * config.c and log.c for the settings, loaded as a driver open loads them;
 * the file's alignment stubbed):
 *  - every chunk size is a multiple of the alignment (at least 4 KiB) and at
 *    most one staging buffer;
 *  - a lone caller's device read without helpers (the default
 *    OPENCUFILE_ALONE_CHUNK_KB of 256) that fits in three staging buffers
 *    is cut into at most three even chunks (the last one at most 2 A short
 *    of the others' share), each at least 256 KiB where the staging buffer
 *    allows, so that no chunk after the first is shorter than 64 KiB
 *    (fileio.c's probing size: a shorter one would be read with a plain
 *    buffered pread) unless the share is; 1 MiB is three
 *    chunks, 600 and 512 KiB two, 300 and 256 KiB one; a larger one is cut
 *    in whole staging buffers, as before the rule (requests of up to 2 GiB
 *    and 64 KiB staging buffers included);
 *  - with the variable 0 (the second ctest entry), and for a caller that
 *    is not alone, a request without helpers is cut in whole staging
 *    buffers;
 *  - with helpers, chunks are at least the minimum chunk (or the staging
 *    size, where that is smaller) and give each participant about three;
 *  - participants: at least the per-request bound, one per 2 MiB above it,
 *    a stream operation's chunk count.
 * Sizes: 1 byte to 9 MiB (every 4 KiB boundary up to 2 MiB and the sizes
 * either side of it, then every 60 KiB + 1) and a few up to 2 GiB, file
 * misalignments 0, 1, 511 and 4095 (modulo the alignment), staging buffers
 * of 2 MiB, 1 MiB, 384 KiB and 64 KiB, alignments 512 and 4096.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunking.h"
#include "config.h"
#include "handle.h"

static size_t file_align;

size_t fio_align(const struct ocf_handle *h)
{
	(void)h;
	return file_align;
}

static unsigned long failures, checks;

#define CHECK(cond, ...)                                                                                  \
	do {                                                                                              \
		checks++;                                                                                 \
		if (!(cond)) {                                                                            \
			if (failures++ < 20) {                                                            \
				fprintf(stderr, "FAIL %s: ", #cond);                                      \
				fprintf(stderr, __VA_ARGS__);                                             \
				fputc('\n', stderr);                                                      \
			}                                                                                 \
		}                                                                                         \
	} while (0)

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)

static size_t alone; /* OPENCUFILE_ALONE_CHUNK_KB in bytes */

static void check_one(struct ocf_io *io, size_t max_chunk, size_t skew0, int helpers, bool lone)
{
	size_t A = file_align > 4096 ? file_align : 4096;
	struct chunk_shape s = {.max_chunk = max_chunk, .min_chunk = MIB, .skew0 = skew0, .helpers = helpers, .lone = lone};
	size_t c = chunk_size(io, &s);
	size_t total = io->len + skew0;
	size_t cap = max_chunk / A * A;
#define WHAT "len %zu skew %zu max %zu align %zu helpers %d lone %d: chunk %zu", io->len, skew0, max_chunk, file_align, helpers, lone, c
	CHECK(c > 0 && c % A == 0, WHAT);
	if (c == 0)
		return;
	CHECK(c <= cap, WHAT);
	size_t n = (total + c - 1) / c;
	size_t last = total - (n - 1) * c;
	size_t need = (total + cap - 1) / cap; /* whole staging buffers */
	if (helpers == 0 && lone && alone && need <= 3) {
		CHECK(n <= 3, WHAT);
		/* Even: the last chunk holds the share less at most 2 A, so
		 * it is 64 KiB or more wherever the share allows. */
		CHECK(last + 2 * A >= total / n, WHAT);
		if (n > 1 && total / n >= 64 * KIB + 2 * A)
			CHECK(last >= 64 * KIB, WHAT);
		if (total >= 2 * alone)
			CHECK(n >= 2, WHAT);
		/* At least `alone` bytes a chunk, unless the staging buffer
		 * needs more chunks than `alone` allows. */
		size_t by_alone = total / alone < 3 ? total / alone : 3;
		if (n > 1 && need <= by_alone)
			CHECK(c >= alone, WHAT);
	} else if (helpers == 0) {
		CHECK(c == cap, WHAT);
	} else {
		size_t floor = (MIB > cap ? cap : MIB) / A * A;
		CHECK(c >= floor, WHAT);
		size_t share = io->len / ((size_t)(helpers + 1) * 3);
		if (share >= floor && share + A <= cap)
			CHECK(c <= share + A, WHAT);
	}
#undef WHAT
}

static void grid(void)
{
	static const size_t maxes[] = {2 * MIB, MIB, 384 * KIB, 64 * KIB};
	static const size_t aligns[] = {512, 4096};
	static const int helpers[] = {0, 1, 3, 7};
	struct ocf_handle h;
	memset(&h, 0, sizeof(h));
	for (size_t ai = 0; ai < sizeof(aligns) / sizeof(aligns[0]); ai++) {
		file_align = aligns[ai];
		for (size_t len = 1; len <= 9 * MIB;) {
			for (size_t mi = 0; mi < sizeof(maxes) / sizeof(maxes[0]); mi++) {
				static const size_t skews[] = {0, 1, 511, 4095};
				for (size_t si = 0; si < sizeof(skews) / sizeof(skews[0]); si++) {
					size_t skew0 = skews[si] % file_align;
					struct ocf_io io = {.h = &h, .off = (off_t)skew0, .len = len};
					for (size_t hi = 0; hi < sizeof(helpers) / sizeof(helpers[0]); hi++)
						for (int lone = 0; lone < 2; lone++)
							check_one(&io, maxes[mi], skew0, helpers[hi], lone);
				}
			}
			/* Every 4 KiB boundary and its neighbours up to 2 MiB,
			 * then every 60 KiB + 1. */
			if (len < 2 * MIB)
				len = len % 4096 == 1 ? len + 4094 : len + 1;
			else
				len += 60 * KIB + 1;
		}
	}
}

/* Lone requests far larger than three staging buffers: whole buffers. */
static void large(void)
{
	struct ocf_handle h;
	memset(&h, 0, sizeof(h));
	static const size_t sizes[] = {6 * MIB + 4096, 300 * MIB + 4096, 2048 * MIB + 4096, 2048 * MIB - 1};
	static const size_t maxes[] = {2 * MIB, MIB, 64 * KIB};
	file_align = 4096;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
			struct ocf_io io = {.h = &h, .off = 0, .len = sizes[i]};
			check_one(&io, maxes[m], 0, 0, true);
			check_one(&io, maxes[m], 0, 7, true);
		}
}

/* The copies the striped test counts for lone reads at offset 0. */
static void known_sizes(void)
{
	struct ocf_handle h;
	memset(&h, 0, sizeof(h));
	file_align = 4096;
	static const struct {
		size_t len, chunks;
	} want[] = {{MIB, 3}, {600 * KIB, 2}, {512 * KIB, 2}, {300 * KIB, 1}, {256 * KIB, 1}, {4096, 1}};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct ocf_io io = {.h = &h, .off = 0, .len = want[i].len};
		struct chunk_shape s = {.max_chunk = 2 * MIB, .min_chunk = MIB, .lone = true};
		size_t c = chunk_size(&io, &s);
		size_t n = (want[i].len + c - 1) / c;
		size_t expect = alone ? want[i].chunks : 1;
		CHECK(n == expect, "lone %zu bytes: %zu chunks of %zu, want %zu", want[i].len, n, c, expect);
	}
}

static void participants(void)
{
	struct ocf_handle h;
	memset(&h, 0, sizeof(h));
	struct ocf_io io = {.h = &h};
	for (size_t len = 0; len <= 64 * MIB; len += MIB / 2) {
		io.len = len;
		int p = chunk_participants(&io, 4);
		size_t by_size = len / (2 * MIB);
		CHECK(p == (int)(by_size > 4 ? by_size : 4), "len %zu: %d participants", len, p);
	}
	struct ocf_ringplan plan;
	memset(&plan, 0, sizeof(plan));
	plan.nchunks = 7;
	io.plan = &plan;
	io.len = 64 * MIB;
	CHECK(chunk_participants(&io, 4) == 7, "a stream operation of 7 chunks");
}

int main(void)
{
	const char *env = getenv("OPENCUFILE_ALONE_CHUNK_KB");
	alone = (env && *env ? strtoull(env, NULL, 10) : 256) * KIB;
	config_load(&ocf_cfg, NULL); /* what cuFileDriverOpen does first */
	grid();
	large();
	known_sizes();
	participants();
	printf("%lu checks, %lu failures (lone chunks of at least %zu KiB)\n", checks, failures, alone / KIB);
	return failures ? 1 : 0;
}
