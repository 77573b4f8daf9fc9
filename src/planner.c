/* SPDX-License-Identifier: Apache-2.0 */
/*
 * planner.c - the one place a request's path is chosen.
 *
 * DESIGN
 * Pure functions of values: nothing here reads a clock, a file, a counter
 * or a setting; the snapshot builders do (engine.c, plan_snapshot: the
 * request, the engine's load, the handle's read-ahead windows, the pool's
 * staging size; fileio.c, write_facts: RLIMIT_FSIZE, the file's size,
 * holes, cached pages).  So every rule is stated once, here, and the table
 * test (tests/test_planner_table.c) states what it gives for each case -
 * the shapes client libraries issue among them, and rows on both sides of
 * every threshold.  A test build that flips one rule (OCF_PLAN_MUTATION)
 * must fail some row of it.  This file includes no header of the engine,
 * the file I/O or the mappings (scripts/include-graph.sh checks it).
 *
 * Requests (plan_request):
 *  - staging: a device request takes its GPU's lanes; host memory takes
 *    the host pool's only where it must be aligned for O_DIRECT or staged
 *    for a vectored request; a stream operation stages in its ring's slots.
 *  - striped (a device read of a few MiB, stripe.c): while the caller is
 *    alone, or fewer than stripe.callers are busy and no read-ahead window
 *    follows the handle, and helpers are free within parallel_max - where
 *    other callers are busy their requests keep the CPUs and the copy
 *    engine busy, and helpers taken from them cost more than they give;
 *    beside a window, the window serves the next read.
 *  - split among helpers: requests longer than split_above, as many as
 *    the request may have (plan_participants) and parallel_max leaves.
 *  - chunks (plan_chunk): three for every participant, as far as the
 *    minimum chunk allows, never more than one staging buffer.  Each
 *    participant then keeps its three staging buffers busy (the file read
 *    of one chunk overlaps the copies of the others), and the request's
 *    end waits for one small last copy, not a large one.  Without helpers
 *    a chunk is a whole staging buffer: one caller copying its own request
 *    gains nothing from more copies and waits - except a device read by a
 *    caller alone in the engine: one that gets no helpers and fits in
 *    three staging buffers is cut into up to three even chunks of at least
 *    alone_chunk (OPENCUFILE_ALONE_CHUNK_KB, 256; 0: off), so that the
 *    file read of one chunk overlaps the copy of the one before.  One
 *    caller's 1 MiB reads went 5.7-6.4 GB/s against 5.3-5.6 with whole
 *    chunks, at random offsets 6.3 against 5.1-5.7, at less CPU per GB
 *    (H200 machine, docs/history/benchmarks.md, 2026-11-27).  Only when alone:
 *    where other callers are busy their copies keep the copy engine busy,
 *    and more copies and waits per request cost 4 x 256 KiB and 16 x 1 MiB
 *    10-25 %.  Even chunks: a short last chunk (below fileio.c's probing
 *    size) would be read with a plain buffered pread.  Writes keep whole
 *    chunks.
 *  - participants (plan_participants): a stream operation's chunks all at
 *    once (each has a slot of its ring waiting); otherwise
 *    execution.max_request_parallelism (NVIDIA's default: 4), or one per
 *    2 MiB for larger requests, so that one large call can use every CPU
 *    the machine has free (a 4 GiB read at 47 GB/s on the H100 machine)
 *    and a 16 MiB one gets eight (19.7 GB/s for one caller of 16 MiB
 *    requests against 14-15 with four, H200 machine, 2026-11-26).
 *  - a write whose pieces must be serial (plan_write) gets no helper: the
 *    engine drops them after asking the write's plan.
 *
 * Writes (plan_write): pieces in parallel, or stores through the file's
 * mapping, only where nothing the file system refuses can happen once the
 * first byte moves (docs/architecture.md, "Writes that fail"): below
 * RLIMIT_FSIZE, on a file system whose reservations hold, every hole and
 * the part past end of file reserved first; stores also ask whether the
 * file system takes writes where no reservation did.  Otherwise serial.
 * Stores only into the 2 MiB regions the request writes whole, and past
 * end of file to its end; the last 4 KiB wait for the end.
 *
 * What may still change at run time, after the plan, each with its
 * fallback and its test:
 *  - the reservation fails (a full disk, a quota): the pieces are serial
 *    (plan_write_reservation_failed; test_write_failures_..._hole_full);
 *  - the file system refuses writes when asked: the request fails with its
 *    errno before any piece (test_write_failures_..._read_only);
 *  - a store faults (SIGBUS: the file shrank, a block could not be had):
 *    the piece is written with pwrite (test_write_mapped_..._truncated,
 *    _reservation_refused);
 *  - a piece's range is not ready for stores after all (pages evicted,
 *    data on the disk only): that piece is written with pwrite
 *    (fileio.c, mapped_ready; test_write_mapped_..._paths);
 *  - no lane or helper is free: the caller does the chunks itself
 *    (engine.c, run_request).
 */
#include "planner.h"

#include <limits.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define ALIGN_DOWN(x, a) ((x) / (a) * (a))

/* A test build flips one rule (tests/CMakeLists.txt, the mutation
 * entries); 0: none. */
#ifndef OCF_PLAN_MUTATION
#define OCF_PLAN_MUTATION 0
#endif
#define MUTATED(k) (OCF_PLAN_MUTATION == (k))

/* ------------------------------------------------------------- requests */

int plan_participants(const struct plan_request *rq, int request_max)
{
	if (rq->ring)
		return (int)MIN(rq->ring_nchunks, (size_t)INT_MAX);
	size_t by_size = rq->len / ((size_t)2 << 20);
	return (int)MAX((size_t)request_max, MIN(by_size, (size_t)INT_MAX));
}

size_t plan_chunk(size_t len, const struct plan_chunk_shape *s)
{
	size_t A = MAX(s->align, (size_t)4096);
	size_t depth = (size_t)s->lane_depth;
	size_t alone = s->lone && !s->helpers ? s->alone_chunk : 0;
	size_t total = len + s->skew0;
	size_t cap = ALIGN_DOWN(s->max_chunk, A);
	size_t whole = (total + cap - 1) / cap; /* chunks of a whole staging buffer */
	if (alone && whole <= depth) {
		/* Up to `depth` even chunks of at least `alone` bytes (as many as
		 * the staging buffer needs where it is smaller); every chunk but
		 * the first (shortened by the file's misalignment) then holds all
		 * but a few A of the same share.  Not for more than `depth`
		 * buffers' worth: rounding each of n chunks up to A could leave a
		 * short last chunk. */
		size_t n = MAX(MIN(depth, total / alone), whole);
		if (n > 1)
			return MIN(ALIGN_UP((total + n - 1) / n, A), cap);
	}
	size_t min_chunk = MAX(s->helpers ? s->min_chunk : s->max_chunk, A);
	if (min_chunk > s->max_chunk)
		min_chunk = s->max_chunk;
	size_t share = len / ((size_t)(s->helpers + 1) * depth);
	size_t c = ALIGN_UP(MAX(share, (size_t)1), A);
	c = MAX(c, min_chunk);
	c = MIN(c, s->max_chunk);
	return ALIGN_DOWN(c, A);
}

/* Is this request of the striped kind and size? */
static bool stripe_kind(const struct plan_request *rq, const struct plan_settings *set)
{
	return !rq->write && rq->device && rq->use_stream && !rq->ring && !rq->vectored && !rq->userspace_fs &&
	       rq->len >= set->stripe.min_bytes && rq->len <= set->stripe.max_bytes && set->stripe.participants > 1;
}

/* The striped request's pieces and stripes for lanes of `depth` buffers of
 * `room` bytes; false when it does not fit the path. */
static bool stripe_fit(const struct plan_request *rq, const struct plan_settings *set, size_t room,
		       struct plan_stripes *sh)
{
	size_t align = MAX(rq->align, (size_t)1);
	size_t A = MAX(align, (size_t)4096);
	size_t piece = ALIGN_UP(set->stripe.piece, A);
	/* A short request (one call of a lone caller lasting some 70 us)
	 * keeps `spinners` helpers awake after it, ready for the next one,
	 * and is cut into one piece per participant: the caller and the
	 * helpers awake read at once, and none waits for another's second
	 * piece. */
	bool spin = rq->len < set->stripe.spin_below_bytes && set->stripe.spin_ns && set->stripe.spinners > 0;
	if (spin) {
		size_t n = (size_t)set->stripe.spinners + 1;
		piece = ALIGN_UP((rq->len + (size_t)rq->off % align + n - 1) / n, A);
	}
	/* A stripe fits one lane buffer as a staged chunk does, and a request
	 * has at least two, so that the copy of the first overlaps the
	 * reading of the next. */
	size_t half = ALIGN_UP((rq->len + 1) / 2, piece);
	size_t stripe = ALIGN_DOWN(MIN(MIN(set->stripe.stripe, half), room), piece);
	if (set->lane_depth < 2 || stripe < piece)
		return false;
	*sh = (struct plan_stripes){.chunk = piece, .skew0 = (size_t)rq->off % align, .spin = spin};
	sh->nchunks = (rq->len + sh->skew0 + piece - 1) / piece;
	sh->per_stripe = stripe / piece;
	sh->nstripes = (sh->nchunks + sh->per_stripe - 1) / sh->per_stripe;
	return sh->nchunks >= 2 && sh->nstripes <= (size_t)set->stripes_max;
}

void plan_request(const struct plan_in *in, struct plan_out *out)
{
	const struct plan_request *rq = &in->rq;
	const struct plan_load *ld = &in->load;
	const struct plan_settings *set = in->set;
	*out = (struct plan_out){.path = PLAN_ALONE};
	if (rq->ring)
		out->pool = PLAN_POOL_NONE;
	else if (rq->device)
		out->pool = PLAN_POOL_DEVICE;
	else if (rq->odirect || (rq->vectored && rq->vec_staged))
		out->pool = PLAN_POOL_HOST;
	if (out->pool != PLAN_POOL_NONE && !ld->lane_room)
		out->need |= PLAN_NEED_ROOM;
	size_t max_chunk = out->pool != PLAN_POOL_NONE ? ld->lane_room : set->host_chunk;
	max_chunk = MAX(ALIGN_DOWN(max_chunk, set->max_align), set->max_align);
	/* A userspace file system's callbacks run on the calling thread only:
	 * they may keep thread-local state, and a callback that calls the API
	 * again must nest on the thread that holds the driver gate. */
	bool may_split = set->parallel_io && !rq->userspace_fs;
	int stripe_callers = MUTATED(1) ? set->stripe.callers + 1 : set->stripe.callers;
	bool stripe_others = ld->others == 0 || (ld->others < stripe_callers && !ld->window_open);
	bool stripe = may_split && stripe_others && stripe_kind(rq, set);
	bool split = may_split && (MUTATED(2) ? rq->len >= set->split_above : rq->len > set->split_above);
	if ((stripe || split) && ld->helpers < 0)
		out->need |= PLAN_NEED_HELPERS;
	if (out->need)
		return;
	int room = MAX(set->parallel_max - ld->others - 1, 0);
	if (stripe) {
		int helpers = MIN(MIN(ld->helpers, room), set->stripe.participants - 1);
		if (helpers > 0) {
			if (stripe_fit(rq, set, ld->lane_room, &out->stripes)) {
				out->path = PLAN_STRIPED;
				out->striped_beside = ld->others > 0;
				out->helpers = helpers;
				out->chunk = out->stripes.chunk;
				out->skew0 = out->stripes.skew0;
				out->nchunks = out->stripes.nchunks;
				return;
			}
			split = false;
		}
	}
	if (split) {
		out->helpers = ld->helpers;
		out->helpers = MIN(out->helpers, plan_participants(rq, set->request_max) - 1);
		out->helpers = MIN(out->helpers, room);
	}
	if (rq->ring) {
		/* The chunks the copies were queued for. */
		out->path = PLAN_RING;
		out->chunk = rq->ring_chunk;
		out->skew0 = rq->ring_skew0;
		out->nchunks = rq->ring_nchunks;
		return;
	}
	/* A write stored through the file's mapping cuts its chunks at 2 MiB
	 * boundaries of the file where its staging buffers hold that much. */
	size_t align = rq->piece_align;
	if (align > max_chunk)
		align = rq->align;
	align = MAX(align, (size_t)1);
	out->skew0 = (size_t)rq->off % align;
	struct plan_chunk_shape shape = {
	    .max_chunk = max_chunk,
	    .min_chunk = out->helpers ? set->min_chunk : 0,
	    .skew0 = out->skew0,
	    .align = align,
	    .helpers = out->helpers,
	    .lone = ld->others == 0 && !rq->write && rq->device && out->pool != PLAN_POOL_NONE,
	    .alone_chunk = set->alone_chunk,
	    .lane_depth = set->lane_depth,
	};
	out->chunk = plan_chunk(rq->len, &shape);
	out->nchunks = (rq->len + out->skew0 + out->chunk - 1) / out->chunk;
	if (out->helpers > 0 && out->nchunks > 1)
		out->path = PLAN_SPLIT;
	else
		out->helpers = 0;
}

/* --------------------------------------------------------------- writes */

static bool write_may_store(const struct plan_wfacts *f)
{
	off_t R = (off_t)PLAN_FOLIO_MAX, end = f->off + (off_t)f->n;
	size_t store_min = MUTATED(3) ? PLAN_STORE_MIN * 2 : PLAN_STORE_MIN;
	return f->wmap && f->n >= store_min && ALIGN_UP(f->off, R) + (off_t)store_min <= end;
}

/* Does a write whose file's size is known store?  Only into the regions
 * it writes whole, and past end of file up to its end. */
static bool write_stores(const struct plan_wfacts *f)
{
	off_t R = (off_t)PLAN_FOLIO_MAX, end = f->off + (off_t)f->n;
	return write_may_store(f) &&
	       (end >= f->size ? end : ALIGN_DOWN(end, R)) - ALIGN_UP(f->off, R) >= (off_t)PLAN_STORE_MIN;
}

/* Is there anything to prepare?  One that is neither split nor stored is
 * one piece after another, written as pwrite writes: nothing - but on an
 * O_DIRECT handle, whose writes past end of file ext4 serialises, the
 * range is reserved and the file extended at once, so that its pieces and
 * other callers' writes past end of file go in parallel. */
static bool write_prepared(const struct plan_wfacts *f)
{
	return f->descriptor && (f->split || write_may_store(f) || f->odirect);
}

/* Does the request cross RLIMIT_FSIZE? */
static bool write_crosses_limit(const struct plan_wfacts *f)
{
	off_t end = f->off + (off_t)f->n;
	return MUTATED(4) ? end >= f->limit : end > f->limit;
}

enum plan_wneed plan_write_needs(const struct plan_wfacts *f)
{
	if (!write_prepared(f))
		return PLAN_WNEED_NONE;
	if (!f->limits_known)
		return PLAN_WNEED_LIMITS;
	/* Serial whatever the file holds: below. */
	if (write_crosses_limit(f) || !f->in_place)
		return PLAN_WNEED_NONE;
	if (!f->size_known)
		return PLAN_WNEED_FILE;
	off_t end = f->off + (off_t)f->n;
	if (f->inside_known || !write_stores(f) || f->off >= MIN(end, f->size))
		return PLAN_WNEED_NONE;
	return PLAN_WNEED_INSIDE;
}

void plan_write(const struct plan_wfacts *f, struct plan_write *w)
{
	off_t end = f->off + (off_t)f->n;
	*w = (struct plan_write){.limit = INT64_MAX};
	if (!write_prepared(f))
		return;
	w->prepared = true;
	/* Serial unless every condition below holds. */
	w->serial = true;
	if (!f->limits_known)
		return;
	if (write_crosses_limit(f)) {
		/* Cut at the limit: the piece that reaches it writes up to it,
		 * and none starts there. */
		w->limit = f->limit;
		return;
	}
	if (!f->in_place || !f->size_known)
		return;
	off_t size = f->size;
	bool wmap = write_stores(f);
	/* Every block the write needs reserved before the first byte moves,
	 * the file extended to its end at once. */
	off_t in_end = MIN(end, size);
	bool hole = f->off < in_end && f->hole;
	off_t lo = hole ? f->off : MAX(f->off, size);
	w->reserve = lo < end && !MUTATED(5);
	w->reserve_lo = lo;
	if (!wmap) {
		/* Pieces in parallel, none stored: a file system that refuses
		 * writes refuses each of them. */
		w->serial = false;
		return;
	}
	w->serial = false;
	w->stores = true;
	/* Stores land in the page cache whatever the file system has become:
	 * ask it first where no reservation did. */
	w->ask_fs = !w->reserve;
	w->tail_off = MAX(f->off, end - (off_t)PLAN_TAIL_MAX);
	w->tail_len = (size_t)(end - w->tail_off);
	/* Where its pieces may store without asking: what is cached, and what
	 * was reserved; where the file holds data on the disk only, the pieces
	 * decide for themselves. */
	enum plan_inside in = f->off < in_end ? f->inside : PLAN_INSIDE_HOLE;
	if (in == PLAN_INSIDE_READY || in == PLAN_INSIDE_HOLE) {
		if (w->reserve || end <= size) {
			w->ready_lo = f->off;
			w->ready_hi = end;
		}
	} else if (w->reserve) {
		/* Data on the disk only inside: only past end of file without
		 * asking. */
		w->ready_lo = MAX(f->off, size);
		w->ready_hi = MAX(w->ready_lo, end);
	}
}

void plan_write_reservation_failed(struct plan_write *w)
{
	w->serial = true;
	w->reserve = false;
	w->stores = false;
	w->ask_fs = false;
	w->ready_lo = w->ready_hi = 0;
	w->tail_off = 0;
	w->tail_len = 0;
}
