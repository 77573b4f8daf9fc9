/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_batch.c - the grouped transfer types: -x 3/4, up to -B
 * cuFileReadAsync/cuFileWriteAsync on the worker's stream then one
 * cuStreamSynchronize; -x 5, -B entries in one cuFileBatchIOSubmit on each
 * of the worker's -H batch handles, collected with cuFileBatchIOGetStatus
 * in the -W style until every entry has completed or -t has passed; -R
 * scatters the entries in the file and in the buffer pool (loop_batch).
 *
 * DESIGN: a batch the library does not finish within -t, or that reports an
 * event it was never given, may still be moving data into the worker's
 * buffer: the worker sets `abandon` and the process exits without freeing
 * anything.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdsio.h"

/* Ops in the group that starts at op k: -B, or what is left of one pass. */
static unsigned group_size(struct worker *w, uint64_t k)
{
	if (o.duration <= 0 && w->nops - k < o.depth)
		return (unsigned)(w->nops - k);
	return o.depth;
}

/* The file offsets of the g ops from op k, whose buffers start at the
 * bytes ats[i] of the worker's buffer; with -V the buffers get the pattern
 * (writes) or poison (reads) first. */
static int group_prepare(struct worker *w, uint64_t k, unsigned g, const size_t *ats, uint64_t *offs,
			 const uint64_t *fperm)
{
	size_t io = w->run->io;
	for (unsigned i = 0; i < g; i++) {
		offs[i] = fperm ? w->start + fperm[(k + i) % w->nops] * io : op_offset(w, k + i);
		if (o.verify && (is_write() ? fill_buffer(w, ats[i], offs[i], io) : poison_buffer(w, ats[i], io)))
			return -1;
	}
	return 0;
}

/* After a group: count the ops that moved all their bytes and check them
 * (-V).  Returns how many did, or -1 when one holds the wrong data. */
static int group_finish(struct worker *w, unsigned g, const size_t *ats, const uint64_t *offs,
			const ssize_t *rets)
{
	size_t io = w->run->io;
	unsigned good = 0;
	for (unsigned i = 0; i < g; i++)
		good += rets[i] == (ssize_t)io;
	w->bytes += (uint64_t)good * io, w->ops += good;
	atomic_fetch_add_explicit(&w->progress, (uint64_t)good * io, memory_order_relaxed);
	if (o.verify)
		for (unsigned i = 0; i < g; i++)
			if (rets[i] == (ssize_t)io && (is_write() ? verify_write(w, offs[i], io)
								  : verify_read(w, ats[i], offs[i], io)))
				return -1;
	return (int)good;
}

/* -x 3/4: groups of -B cuFileReadAsync/cuFileWriteAsync on the worker's
 * stream, each group ended by cuStreamSynchronize. */
static void loop_async(struct worker *w)
{
	size_t io = w->run->io;
	unsigned depth = o.depth;
	size_t *sizes = calloc(depth, sizeof(*sizes));
	off_t *foffs = calloc(depth, sizeof(*foffs)), *boffs = calloc(depth, sizeof(*boffs));
	ssize_t *rets = calloc(depth, sizeof(*rets));
	uint64_t *offs = calloc(depth, sizeof(*offs));
	size_t *ats = calloc(depth, sizeof(*ats));
	char eb[160];
	double t = 0;
	int first = 1;
	if (!sizes || !foffs || !boffs || !rets || !offs || !ats) {
		worker_fail(w, ST_SETUP, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < depth; i++)
		ats[i] = i * io;
	for (uint64_t k = 0; keep_going(w, k, t);) {
		unsigned g = group_size(w, k);
		if (group_prepare(w, k, g, ats, offs, NULL))
			goto out;
		uint64_t t0 = now_ns();
		unsigned queued = 0;
		for (unsigned i = 0; i < g; i++) {
			sizes[i] = io, foffs[i] = (off_t)offs[i], boffs[i] = (off_t)(i * io),
			rets[i] = -12345;
			CUfileError_t e = is_write()
					      ? cuFileWriteAsync(w->fh, w->buf.ptr, &sizes[i], &foffs[i],
								 &boffs[i], &rets[i], w->stream)
					      : cuFileReadAsync(w->fh, w->buf.ptr, &sizes[i], &foffs[i],
								&boffs[i], &rets[i], w->stream);
			if (e.err) {
				worker_fail(w, first && i == 0 ? ST_UNSUPPORTED : ST_IOERR, "%s: %s",
					    is_write() ? "cuFileWriteAsync" : "cuFileReadAsync",
					    cufile_err(e, eb, sizeof(eb)));
				break;
			}
			queued++;
		}
		CUresult r = cu.StreamSynchronize(w->stream);
		uint64_t t1 = now_ns();
		if (r) {
			worker_fail(w, ST_IOERR, "cuStreamSynchronize: %s", cuda_dl_errstr(&cu, r));
			goto out;
		}
		if (queued < g)
			goto out;
		int first_bad = -1;
		unsigned good = 0;
		for (unsigned i = 0; i < g; i++) {
			if (rets[i] == (ssize_t)io) {
				good++;
				hist_add(w->hist, t1 - t0);
			} else if (first_bad < 0) {
				first_bad = (int)i;
			}
		}
		if (first_bad >= 0)
			worker_fail(w, ST_INCOMPLETE,
				    "async: %u of %u operations on one stream completed in full; op %d: %s",
				    good, g, first_bad,
				    rets[first_bad] == -12345
					? "result never written"
					: io_ret_str(rets[first_bad], 0, eb, sizeof(eb)));
		first = 0;
		if (group_finish(w, g, ats, offs, rets) < (int)g)
			goto out;
		k += g;
		t = (double)now_ns() * 1e-9;
	}
out:
	free(sizes), free(foffs), free(boffs), free(rets), free(offs), free(ats);
}

/* Submit the group that starts at op k on slot s.  Entry i moves one IO
 * size between file offset offs[i] and buffer byte s->ats[i]: every entry
 * in flight has its own buffer and, in one pass, its own offset. */
static int batch_submit(struct worker *w, struct slot *s, uint64_t k, int first, const uint64_t *fperm)
{
	size_t io = w->run->io;
	unsigned g = group_size(w, k);
	char eb[160];
	if (group_prepare(w, k, g, s->ats, s->offs, fperm))
		return -1;
	for (unsigned i = 0; i < g; i++) {
		CUfileIOParams_t *p = &s->params[i];
		memset(p, 0, sizeof(*p));
		p->mode = CUFILE_BATCH;
		p->u.batch.devPtr_base = w->buf.ptr;
		p->u.batch.file_offset = (off_t)s->offs[i];
		p->u.batch.devPtr_offset = (off_t)s->ats[i];
		p->u.batch.size = io;
		p->fh = w->fh;
		p->opcode = is_write() ? CUFILE_WRITE : CUFILE_READ;
		p->cookie = (void *)(uintptr_t)(i + 1);
		s->rets[i] = -1;
	}
	s->t0 = now_ns();
	CUfileError_t e = cuFileBatchIOSubmit(s->batch, g, s->params, 0);
	if (e.err) {
		worker_fail(w, first ? ST_UNSUPPORTED : ST_IOERR, "cuFileBatchIOSubmit(%u entries): %s", g,
			    cufile_err(e, eb, sizeof(eb)));
		return -1;
	}
	s->n = g, s->got = 0, s->k = k;
	return 0;
}

/* Whether the group at op k would reuse a file offset that a group still in
 * flight moves: the ops wrap around the thread's region, and in the poll
 * style a quick handle can come round to the ops of one that is slow. */
static int would_lap(struct worker *w, const struct slot *slots, unsigned nslots, uint64_t k)
{
	uint64_t g = group_size(w, k);
	for (unsigned j = 0; j < nslots; j++)
		if (slots[j].n && k + g > slots[j].k + w->nops)
			return 1;
	return 0;
}

/* One cuFileBatchIOGetStatus on slot s in the -W style, its events taken
 * into s->rets.  Returns 0, or -1 when the batch is abandoned: the call
 * failed, an event is not one of ours, or -t passed (timed and poll). */
int batch_collect(struct worker *w, struct slot *s, CUfileIOEvents_t *events)
{
	size_t io = w->run->io;
	unsigned left = s->n - s->got, nr = left, min_nr = left;
	struct timespec ts = {0, 100 * 1000 * 1000}, *tsp = &ts;
	char eb[160];
	if (o.wait_style == WAIT_POLL)
		min_nr = 0, ts.tv_nsec = 0;
	else if (o.wait_style == WAIT_BLOCK)
		tsp = NULL;
	CUfileError_t e = cuFileBatchIOGetStatus(s->batch, min_nr, &nr, events, tsp);
	uint64_t tn = now_ns();
	if (e.err) {
		worker_fail(w, ST_IOERR, "cuFileBatchIOGetStatus: %s", cufile_err(e, eb, sizeof(eb)));
		goto abandon;
	}
	for (unsigned j = 0; j < nr && j < left; j++) {
		uintptr_t c = (uintptr_t)events[j].cookie;
		if (c < 1 || c > s->n || s->rets[c - 1] != -1) {
			worker_fail(w, ST_IOERR, "batch event with unknown cookie %p", events[j].cookie);
			goto abandon;
		}
		s->rets[c - 1] = events[j].status == CUFILE_COMPLETE ? (ssize_t)events[j].ret : -2;
		if (events[j].status != CUFILE_COMPLETE || events[j].ret != io)
			worker_fail(w, ST_IOERR, "batch entry %lu at %llu: status 0x%x ret %zu",
				    (unsigned long)c - 1, (unsigned long long)s->offs[c - 1],
				    (unsigned)events[j].status, events[j].ret);
		else
			hist_add(w->hist, tn - s->t0);
		s->got++;
	}
	if (s->got == s->n) {
		hist_add(w->bhist, tn - s->t0);
		return 0;
	}
	if ((double)(tn - s->t0) * 1e-9 > o.batch_timeout) {
		worker_fail(w, ST_TIMEOUT,
			    "batch: %u of %u entries completed within %.1f s (GetStatus min_nr=%u)", s->got,
			    s->n, o.batch_timeout, o.wait_style == WAIT_POLL ? 0 : s->n);
		goto abandon;
	}
	return 0;
abandon:
	atomic_store(&abandon, 1);
	return -1;
}

/* A random permutation of 0..n-1 (Fisher-Yates on the worker's generator). */
static uint64_t *permutation(struct worker *w, uint64_t n)
{
	uint64_t *p = malloc(n * sizeof(*p));
	if (!p)
		return NULL;
	for (uint64_t i = 0; i < n; i++)
		p[i] = i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = rng_next(&w->rng) % (i + 1), t = p[i];
		p[i] = p[j], p[j] = t;
	}
	return p;
}

/* -x 5: the worker's -H batch handles each carry a group of -B entries.  All
 * are submitted, then collected in turn; a handle whose entries have all
 * completed is checked and submitted again at once, so -H groups stay in
 * flight.  The timed and wait styles block on the oldest handle until its
 * group is complete; the poll style asks each handle once (min_nr 0, zero
 * timeout) and moves on, and holds a handle's next group back while it would
 * reuse the file offsets of a group still in flight (would_lap: entries in
 * flight never share bytes).  After a failure no group is submitted, but
 * those in flight are still collected, so that nothing is left moving data
 * into the buffers when they are freed.
 *
 * The worker's buffer is a pool of -H x -B slots of one IO size.  By
 * default handle h's entry i uses slot h * -B + i and the ops follow each
 * other in the file, so neighbouring entries are neighbours on both sides
 * (a library may merge them into one copy).  With -R (a paged KV-cache
 * pool) entry i of handle h uses slot q(h * -B + i), q a random
 * permutation of the pool fixed for the run, and op k reads or writes the
 * block p(k) of the thread's region, p a random permutation of its blocks. */
static void loop_batch(struct worker *w)
{
	size_t io = w->run->io;
	unsigned nslots = w->nbatch, depth = o.depth, active = 0, ready = 0;
	struct slot *slots = calloc(nslots, sizeof(*slots));
	CUfileIOEvents_t *events = calloc(depth, sizeof(*events));
	uint64_t *fperm = NULL, *mperm = NULL;
	uint64_t k = 0;
	if (!slots || !events) {
		worker_fail(w, ST_SETUP, "out of memory");
		goto out;
	}
	if (o.scatter && (!(fperm = permutation(w, w->nops)) ||
			  !(mperm = permutation(w, (uint64_t)nslots * depth)))) {
		worker_fail(w, ST_SETUP, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < nslots; i++) {
		struct slot *s = &slots[i];
		s->batch = w->batch[i];
		s->ats = calloc(depth, sizeof(*s->ats));
		s->offs = calloc(depth, sizeof(*s->offs));
		s->rets = calloc(depth, sizeof(*s->rets));
		s->params = calloc(depth, sizeof(*s->params));
		if (!s->ats || !s->offs || !s->rets || !s->params) {
			worker_fail(w, ST_SETUP, "out of memory");
			goto out;
		}
		for (unsigned j = 0; j < depth; j++) {
			uint64_t slot = (uint64_t)i * depth + j;
			s->ats[j] = (size_t)(mperm ? mperm[slot] : slot) * io;
		}
	}
	for (unsigned i = 0; i < nslots && keep_going(w, k, now()); i++) {
		if (batch_submit(w, &slots[i], k, i == 0, fperm))
			break;
		k += slots[i].n, active++;
	}
	while (active || ready) {
		for (unsigned i = 0; i < nslots; i++) {
			struct slot *s = &slots[i];
			if (s->ready) {
				if (keep_going(w, k, now()) && would_lap(w, slots, nslots, k))
					continue;
				s->ready = 0, ready--;
				if (keep_going(w, k, now()) && !batch_submit(w, s, k, 0, fperm))
					k += s->n, active++;
				continue;
			}
			if (!s->n)
				continue;
			do {
				if (batch_collect(w, s, events))
					goto out;
			} while (s->got < s->n && o.wait_style != WAIT_POLL);
			if (s->got < s->n)
				continue;
			unsigned n = s->n;
			s->n = 0, active--;
			if (group_finish(w, n, s->ats, s->offs, s->rets) < (int)n)
				continue;
			if (keep_going(w, k, now()) && would_lap(w, slots, nslots, k))
				s->ready = 1, ready++;
			else if (keep_going(w, k, now()) && !batch_submit(w, s, k, 0, fperm))
				k += s->n, active++;
		}
	}
out:
	for (unsigned i = 0; slots && i < nslots; i++)
		free(slots[i].ats), free(slots[i].offs), free(slots[i].rets), free(slots[i].params);
	free(slots), free(events), free(fperm), free(mperm);
}

void loop_group(struct worker *w)
{
	if (o.xfer == X_BATCH)
		loop_batch(w);
	else
		loop_async(w);
}
