/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batch.c - batch I/O (cuFileBatchIO*).
 *
 * DESIGN
 * A batch is a fixed array of `cap` entries (cap = the SetUp size, at most
 * properties.io_batchsize).  An entry is FREE, QUEUED (in the executor's
 * FIFO or just handed to a thread), RUNNING, or DONE (its event waits in
 * the completion ring for GetStatus).  Submit takes FREE entries, so at
 * most cap - (entries submitted and not yet reported) may be submitted;
 * GetStatus reports DONE entries in completion order and frees them.  Each
 * entry is one async_op: an executor thread runs the synchronous
 * cuFileRead/cuFileWrite path for it (api_io), so batch entries get every
 * property of the synchronous path (any memory kind, alignment, the
 * parallel engine) and per-entry failures land in the entry's event.
 *
 * Identity: a CUfileBatchHandle_t is a key (generation << 24 | slot + 1),
 * looked up in a table like file handles, never dereferenced, so a stale,
 * destroyed or forged ID is refused.
 *
 * Lifetime: a batch is reference counted (table 1, each QUEUED/RUNNING
 * entry 1, each API call using it 1).  Destroy removes it from the table,
 * cancels entries not started and drops the table's reference; running
 * entries finish and the last reference frees the memory, so no executor
 * thread ever touches freed memory.
 *
 * Cancel: entries still in the FIFO are taken out (async_remove) and
 * completed as CUFILE_CANCELED at once; an entry a thread has already taken
 * but not started is marked and completes as CANCELED without I/O; running
 * entries finish.
 *
 * Events: status CUFILE_COMPLETE with ret = bytes (short at end of file);
 * CUFILE_FAILED with ret = the internal error as a negative number cast to
 * size_t (-errno, e.g. (size_t)-EBADF, or (size_t)-CU_FILE_* code), so a
 * caller can print (ssize_t)ret; CUFILE_CANCELED with ret 0.
 *
 * Locks: table_lock (slots, next_gen) is taken before a batch's lock; a
 * batch's lock before the executor's queue lock.  The driver's state lock
 * is never taken under either (holds are released after unlocking).
 */
#define _GNU_SOURCE
#include "batch.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "async.h"
#include "config.h"
#include "driver.h"
#include "internal.h"
#include "log.h"
#include "stats.h"

#define SLOT_BITS 24
#define SLOT_MASK ((1ull << SLOT_BITS) - 1)

enum entry_state { E_FREE, E_QUEUED, E_RUNNING, E_DONE };

struct batch;

struct entry {
	struct async_op aop;
	struct batch *b;
	/* Fields below are protected by the batch's lock, except p, which
	 * the running thread reads after taking the entry (RUNNING). */
	enum entry_state state;
	bool cancel;
	CUfileIOParams_t p;
	CUfileStatus_t status;
	ssize_t result;
	uint64_t t0; /* statistics: submission time, 0 when not counting */
};

struct batch {
	pthread_mutex_t lock; /* protects everything below but key/cap/e[].b */
	pthread_cond_t cv;    /* broadcast at every completion and at destroy */
	uint64_t key;
	unsigned cap;
	unsigned used; /* entries not FREE */
	int refs;
	bool dead;
	unsigned nfree;
	unsigned *free_idx; /* stack of FREE entry indices */
	unsigned done_head, ndone;
	unsigned *done_ring; /* DONE entries in completion order */
	struct entry e[];
};

/* table_lock protects slots, nslots and next_gen. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct batch **slots;
static size_t nslots;
static uint64_t next_gen = 1;

static void batch_free(struct batch *b)
{
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cv);
	free(b->free_idx);
	free(b->done_ring);
	free(b);
}

static struct batch *batch_get(CUfileBatchHandle_t id)
{
	uint64_t key = (uint64_t)(uintptr_t)id;
	uint64_t i = key & SLOT_MASK;
	struct batch *b = NULL;
	pthread_mutex_lock(&table_lock);
	if (i >= 1 && i <= nslots && slots[i - 1] && slots[i - 1]->key == key) {
		b = slots[i - 1];
		pthread_mutex_lock(&b->lock);
		b->refs++;
		pthread_mutex_unlock(&b->lock);
	}
	pthread_mutex_unlock(&table_lock);
	return b;
}

static void batch_put(struct batch *b)
{
	pthread_mutex_lock(&b->lock);
	bool last = --b->refs == 0;
	pthread_mutex_unlock(&b->lock);
	if (last)
		batch_free(b);
}

/* Caller holds b->lock. */
static void complete_locked(struct batch *b, struct entry *e, CUfileStatus_t status, ssize_t result)
{
	e->state = E_DONE;
	e->status = status;
	e->result = result;
	b->done_ring[(b->done_head + b->ndone) % b->cap] = (unsigned)(e - b->e);
	b->ndone++;
	pthread_cond_broadcast(&b->cv);
}

/* Executor side of one entry. */
static void entry_run(struct async_op *op)
{
	struct entry *e = (struct entry *)((char *)op - offsetof(struct entry, aop));
	struct batch *b = e->b;
	pthread_mutex_lock(&b->lock);
	bool cancel = e->cancel;
	if (!cancel)
		e->state = E_RUNNING;
	pthread_mutex_unlock(&b->lock);

	ssize_t r = 0;
	CUfileStatus_t st = CUFILE_CANCELED;
	bool write = e->p.opcode == CUFILE_WRITE;
	if (!cancel) {
		r = api_io(e->p.fh, e->p.u.batch.devPtr_base, e->p.u.batch.size, e->p.u.batch.file_offset,
			   e->p.u.batch.devPtr_offset, write, false);
		st = r >= 0 ? CUFILE_COMPLETE : CUFILE_FAILED;
	}
	stats_batch_entry_done(write, st == CUFILE_COMPLETE, r > 0 ? (size_t)r : 0, e->t0);

	pthread_mutex_lock(&b->lock);
	complete_locked(b, e, st, r);
	bool last = --b->refs == 0;
	pthread_mutex_unlock(&b->lock);
	if (last)
		batch_free(b);
}

/* Caller holds b->lock.  Cancels the entries not started yet; returns how
 * many were taken out of the FIFO, whose driver holds the caller must
 * release (after unlocking) — their batch references are dropped here,
 * never the last one since the caller holds one. */
static unsigned cancel_locked(struct batch *b)
{
	unsigned removed = 0;
	for (unsigned i = 0; i < b->cap; i++) {
		struct entry *e = &b->e[i];
		if (e->state != E_QUEUED || e->cancel)
			continue;
		e->cancel = true;
		if (async_remove(&e->aop)) {
			stats_batch_entry_done(e->p.opcode == CUFILE_WRITE, false, 0, e->t0);
			complete_locked(b, e, CUFILE_CANCELED, 0);
			b->refs--;
			removed++;
		}
	}
	return removed;
}

static void release_holds(unsigned n)
{
	while (n--)
		driver_release();
}

int batch_setup(unsigned nr, CUfileBatchHandle_t *out)
{
	if (!out || nr == 0 || nr > ocf_cfg.io_batchsize)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct batch *b = calloc(1, sizeof(*b) + nr * sizeof(b->e[0]));
	if (!b)
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	b->free_idx = calloc(nr, sizeof(unsigned));
	b->done_ring = calloc(nr, sizeof(unsigned));
	if (!b->free_idx || !b->done_ring) {
		free(b->free_idx);
		free(b->done_ring);
		free(b);
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	}
	pthread_mutex_init(&b->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	b->cap = nr;
	b->refs = 1; /* the table's */
	for (unsigned i = 0; i < nr; i++) {
		b->e[i].b = b;
		b->e[i].aop.run = entry_run;
		b->free_idx[i] = nr - 1 - i; /* entry 0 is taken first */
	}
	b->nfree = nr;

	pthread_mutex_lock(&table_lock);
	size_t idx = nslots;
	for (size_t i = 0; i < nslots; i++)
		if (!slots[i]) {
			idx = i;
			break;
		}
	if (idx == nslots) {
		size_t n = nslots ? nslots * 2 : 16;
		struct batch **ns = n <= SLOT_MASK ? realloc(slots, n * sizeof(*ns)) : NULL;
		if (!ns) {
			pthread_mutex_unlock(&table_lock);
			batch_free(b);
			return OCF_ERR(CU_FILE_NOMEM_ERROR);
		}
		memset(ns + nslots, 0, (n - nslots) * sizeof(*ns));
		slots = ns;
		nslots = n;
	}
	b->key = (next_gen++ << SLOT_BITS) | (idx + 1);
	slots[idx] = b;
	pthread_mutex_unlock(&table_lock);
	*out = (CUfileBatchHandle_t)(uintptr_t)b->key;
	return 0;
}

int batch_submit(CUfileBatchHandle_t id, unsigned nr, const CUfileIOParams_t *params, unsigned flags)
{
	(void)flags; /* reserved */
	if (!params || nr == 0)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	for (unsigned i = 0; i < nr; i++)
		if (params[i].mode != CUFILE_BATCH ||
		    (params[i].opcode != CUFILE_READ && params[i].opcode != CUFILE_WRITE))
			return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct batch *b = batch_get(id);
	if (!b)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	int r = async_start();
	if (r) {
		batch_put(b);
		return r;
	}
	uint64_t t0 = stats_io_begin();
	struct async_op *first = NULL, **link = &first;
	/* One hold per entry, released by the executor or by a cancel; taken
	 * before the batch lock (the driver's lock never nests inside it). */
	driver_hold(nr);
	pthread_mutex_lock(&b->lock);
	if (b->dead || nr > b->cap)
		r = OCF_ERR(CU_FILE_INVALID_VALUE);
	else if (nr > b->nfree)
		r = OCF_ERR(CU_FILE_BATCH_FULL);
	if (r) {
		pthread_mutex_unlock(&b->lock);
		release_holds(nr);
		batch_put(b);
		return r;
	}
	for (unsigned i = 0; i < nr; i++) {
		struct entry *e = &b->e[b->free_idx[--b->nfree]];
		e->p = params[i];
		e->state = E_QUEUED;
		e->cancel = false;
		e->t0 = t0;
		*link = &e->aop;
		link = &e->aop.next;
	}
	*link = NULL;
	b->used += nr;
	b->refs += (int)nr;
	pthread_mutex_unlock(&b->lock);
	async_submit_list(first);
	stats_batch_submit(true, nr, t0);
	batch_put(b);
	return 0;
}

/* Absolute CLOCK_MONOTONIC deadline from a relative timeout whose fields
 * may be out of range: negative parts count as 0, tv_nsec beyond a second
 * carries into seconds, and a wait is capped at about 30 years. */
static void make_deadline(const struct timespec *t, struct timespec *out)
{
	long long sec = t->tv_sec < 0 ? 0 : (long long)t->tv_sec;
	long long ns = t->tv_nsec < 0 ? 0 : (long long)t->tv_nsec;
	if (sec > 1000000000LL)
		sec = 1000000000LL;
	sec += ns / 1000000000LL;
	ns %= 1000000000LL;
	clock_gettime(CLOCK_MONOTONIC, out);
	out->tv_sec += (time_t)sec;
	out->tv_nsec += (long)ns;
	if (out->tv_nsec >= 1000000000L) {
		out->tv_sec++;
		out->tv_nsec -= 1000000000L;
	}
}

int batch_get_status(CUfileBatchHandle_t id, unsigned min_nr, unsigned *nr, CUfileIOEvents_t *events,
		     const struct timespec *timeout)
{
	if (!nr || (*nr && !events))
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct batch *b = batch_get(id);
	if (!b)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct timespec deadline;
	if (timeout)
		make_deadline(timeout, &deadline);
	unsigned room = *nr;
	pthread_mutex_lock(&b->lock);
	/* Never wait for more than can complete: what was submitted and not
	 * yet reported, and what fits in events. */
	unsigned want = OCF_MIN(OCF_MIN(min_nr, room), b->used);
	/* `want` is recomputed each pass: another GetStatus caller may have
	 * taken events meanwhile, leaving fewer outstanding. */
	while (b->ndone < want && !b->dead && (want = OCF_MIN(OCF_MIN(min_nr, room), b->used)) > b->ndone) {
		if (!timeout)
			pthread_cond_wait(&b->cv, &b->lock);
		else if (pthread_cond_timedwait(&b->cv, &b->lock, &deadline) == ETIMEDOUT)
			break;
	}
	unsigned n = OCF_MIN(b->ndone, room);
	for (unsigned i = 0; i < n; i++) {
		unsigned idx = b->done_ring[b->done_head];
		b->done_head = (b->done_head + 1) % b->cap;
		b->ndone--;
		struct entry *e = &b->e[idx];
		events[i].cookie = e->p.cookie;
		events[i].status = e->status;
		events[i].ret = (size_t)e->result;
		e->state = E_FREE;
		b->free_idx[b->nfree++] = idx;
		b->used--;
	}
	pthread_mutex_unlock(&b->lock);
	*nr = n;
	batch_put(b);
	return 0;
}

int batch_cancel(CUfileBatchHandle_t id)
{
	struct batch *b = batch_get(id);
	if (!b)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	pthread_mutex_lock(&b->lock);
	unsigned removed = cancel_locked(b);
	pthread_mutex_unlock(&b->lock);
	release_holds(removed);
	batch_put(b);
	return 0;
}

/* Caller holds b->lock.  Entries an executor thread may still be working
 * on (taken from the FIFO, or running). */
static bool busy_locked(const struct batch *b)
{
	for (unsigned i = 0; i < b->cap; i++)
		if (b->e[i].state == E_QUEUED || b->e[i].state == E_RUNNING)
			return true;
	return false;
}

int batch_destroy(CUfileBatchHandle_t id)
{
	uint64_t key = (uint64_t)(uintptr_t)id;
	uint64_t i = key & SLOT_MASK;
	struct batch *b = NULL;
	pthread_mutex_lock(&table_lock);
	if (i >= 1 && i <= nslots && slots[i - 1] && slots[i - 1]->key == key) {
		b = slots[i - 1];
		slots[i - 1] = NULL;
	}
	pthread_mutex_unlock(&table_lock);
	if (!b)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	pthread_mutex_lock(&b->lock);
	b->refs++; /* keep it while cancelling */
	b->dead = true;
	unsigned removed = cancel_locked(b);
	pthread_cond_broadcast(&b->cv); /* GetStatus callers return */
	/* The application may free its buffers once Destroy returns: wait for
	 * entries already running (or taken by a thread) to finish. */
	while (busy_locked(b))
		pthread_cond_wait(&b->cv, &b->lock);
	b->refs--;                      /* the table's reference */
	pthread_mutex_unlock(&b->lock);
	release_holds(removed);
	batch_put(b);
	return 0;
}

void batch_cancel_all(void)
{
	unsigned removed = 0;
	pthread_mutex_lock(&table_lock);
	for (size_t i = 0; i < nslots; i++) {
		struct batch *b = slots[i];
		if (!b)
			continue;
		pthread_mutex_lock(&b->lock);
		removed += cancel_locked(b);
		pthread_mutex_unlock(&b->lock);
	}
	pthread_mutex_unlock(&table_lock);
	if (removed)
		log_info("driver close: %u batch entries cancelled", removed);
	release_holds(removed);
}

void batch_teardown(void)
{
	pthread_mutex_lock(&table_lock);
	for (size_t i = 0; i < nslots; i++) {
		struct batch *b = slots[i];
		if (!b)
			continue;
		slots[i] = NULL;
		pthread_mutex_lock(&b->lock);
		b->dead = true;
		bool last = --b->refs == 0;
		pthread_mutex_unlock(&b->lock);
		if (last)
			batch_free(b);
	}
	free(slots);
	slots = NULL;
	nslots = 0;
	pthread_mutex_unlock(&table_lock);
}
