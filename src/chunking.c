/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chunking.c - how the engine cuts a request: the size of its chunks and
 * how many participants (the caller and helper threads) it may have.
 *
 * DESIGN
 * Chunks: three for every participant, as far as the minimum chunk allows,
 * never more than one staging buffer.  Each participant then keeps its
 * three staging buffers busy (the file read of one chunk overlaps the
 * copies of the others), and the request's end waits for one small last
 * copy, not a large one.  Without helpers a chunk is a whole staging
 * buffer: one caller copying its own request gains nothing from more
 * copies and waits - except a device read by a caller alone in the
 * engine (below).
 *
 * A lone caller's reads in three (OPENCUFILE_ALONE_CHUNK_KB, default 256;
 * 0 turns it off): a device read that gets no helpers (below the split
 * threshold, or none free) whose caller is alone in the engine (one thread
 * reading one tensor at a time) and that fits in three staging buffers is
 * cut into up to three even chunks of at least this size, so that the file
 * read of one chunk overlaps the copy of the one before instead of the
 * whole copy waiting for the whole read.  One caller's 1 MiB reads went
 * 5.7-6.4 GB/s against 5.3-5.6 with whole chunks, at random offsets 6.3
 * against 5.1-5.7, at less CPU per GB, and 4 x 256 KiB and 16 x 1 MiB
 * unchanged; in the comparison run 6.0 against NVIDIA's 5.5 (H200 machine,
 * docs/benchmarks.md, 2026-11-27).  Only when alone: where other callers
 * are busy their copies keep the copy engine busy, and more copies and
 * waits per request cost 4 x 256 KiB and 16 x 1 MiB 10-25 % (measured when
 * the rule applied to every caller).  Even chunks: a short last chunk
 * (below fileio.c's probing size) would be read with a plain buffered
 * pread, caching pages a direct read leaves alone.  Writes keep whole
 * chunks (not measured).
 *
 * Participants: a stream operation's chunks all at once (each has a slot
 * of its ring waiting, and the stream copies each chunk as soon as it is
 * in its slot); otherwise execution.max_request_parallelism (NVIDIA's
 * default: 4 parallel parts), or one per 2 MiB for larger requests, so
 * that one large call can use every CPU the machine has free (a 4 GiB read
 * at 47 GB/s on the H100 machine) and a 16 MiB one gets eight (19.7 GB/s
 * for one caller of 16 MiB requests against 14-15 with four, H200 machine,
 * 2026-11-26).  Whether helpers are free at all is the engine's business.
 */
#include "chunking.h"

#include <limits.h>

#include "config.h"
#include "fileio.h"
#include "gpu.h"
#include "internal.h"

int chunk_participants(const struct ocf_io *io, int request_max)
{
	if (io->plan)
		return (int)OCF_MIN(io->plan->nchunks, (size_t)INT_MAX);
	size_t by_size = io->len / ((size_t)2 << 20);
	return (int)OCF_MAX((size_t)request_max, OCF_MIN(by_size, (size_t)INT_MAX));
}

size_t chunk_size(const struct ocf_io *io, const struct chunk_shape *s)
{
	size_t A = OCF_MAX(s->align, (size_t)4096);
	size_t alone = s->lone && !s->helpers ? ocf_cfg.tuning.alone_chunk_bytes : 0;
	size_t total = io->len + s->skew0;
	size_t cap = OCF_ALIGN_DOWN(s->max_chunk, A);
	size_t whole = (total + cap - 1) / cap; /* chunks of a whole staging buffer */
	if (alone && whole <= OCF_LANE_DEPTH) {
		/* Up to three even chunks of at least `alone` bytes (as many
		 * as the staging buffer needs where it is smaller than a
		 * third); every chunk but the first (shortened by the file's
		 * misalignment) then holds all but a few A of the same share,
		 * the last at least a share less 2 A.  Not for more than three
		 * buffers' worth: the rounding up to A of each of n chunks
		 * would add up and could leave a short last chunk again. */
		size_t n = OCF_MAX(OCF_MIN((size_t)OCF_LANE_DEPTH, total / alone), whole);
		if (n > 1)
			return OCF_MIN(OCF_ALIGN_UP((total + n - 1) / n, A), cap);
	}
	size_t min_chunk = OCF_MAX(s->helpers ? s->min_chunk : s->max_chunk, A);
	if (min_chunk > s->max_chunk)
		min_chunk = s->max_chunk;
	size_t share = io->len / ((size_t)(s->helpers + 1) * OCF_LANE_DEPTH);
	size_t c = OCF_ALIGN_UP(OCF_MAX(share, 1), A);
	c = OCF_MAX(c, min_chunk);
	c = OCF_MIN(c, s->max_chunk);
	return OCF_ALIGN_DOWN(c, A);
}
