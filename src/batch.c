/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batch.c - batch I/O (cuFileBatchIO*).
 *
 * DESIGN
 * A batch is a fixed array of `cap` entries (cap = the SetUp size, at most
 * properties.io_batchsize).  An entry is FREE, QUEUED (submitted, not
 * started), RUNNING, or DONE (its event waits in the completion ring for
 * GetStatus).  Submit takes FREE entries, so at most cap - (entries
 * submitted and not yet reported) may be submitted; GetStatus reports DONE
 * entries in completion order and frees them (and the first Submit after a
 * Cancel frees the cancelled round's: see Rounds).
 *
 * Execution: a Submit becomes one submission shared by W executor operations (W =
 * min(executor threads, entries); OPENCUFILE_BATCH_WORKERS for
 * tests).  Each operation's thread claims consecutive entries of the
 * submission, `per_claim` at a time (about nr / W, so one claim each when all
 * threads are free), from an atomic cursor until
 * none is left, and serves them with the batch data path (batch_io.c): one
 * staging lane per thread, merged preads and copies, one event wait and one
 * completion lock per staging buffer.  A thread that starts late or runs
 * slow simply claims less.  In a small submission (no more entries than threads:
 * one entry a claim) a thread reads what it claimed (its run closed:
 * bio_close) before it claims again: a run merged across claims let the
 * first thread to start take all of a small batch (contiguous entries cost
 * it one lookup each) while the others were still waking, so a batch of 8 x
 * 64 KiB took as long on 8 threads as on one.  Larger submissions keep merging
 * across claims: there every thread has claims of its own, and shorter runs
 * only cost more reads and copies (runs merged in small submissions too were
 * measured, docs/history/benchmarks.md).  Copies stay gathered across claims
 * (up to 16, or the end of the staging buffer): queuing each claim's copies
 * when the claim was read, so that they overlap the next claim's reads,
 * made grouped calls smaller and cost 16 batches of 128 scattered entries
 * in flight 15 %, one such batch 10 % (H200 machine, docs/history/benchmarks.md).
 * Per-entry failures land in the entry's event; everything the synchronous
 * path accepts works (any memory kind, alignment, the parallel engine for
 * large entries), since what the staged path does not serve goes through
 * it.
 *
 * Identity: a CUfileBatchHandle_t is a key (generation << 24 | slot + 1),
 * looked up in a table like file handles, never dereferenced, so a stale,
 * destroyed or forged ID is refused.
 *
 * Entry states live in one atomic word with a submission sequence number
 * (seq << 2 | state), so that a thread claims an entry (QUEUED -> RUNNING)
 * with one compare-and-swap and no lock, and a claim can never hit a later
 * submission of the same entry: a submission remembers the seq of each of its
 * entries.  All other transitions happen under the batch's lock.
 *
 * Lifetime: a batch is reference counted (table 1, each live submission 1, each
 * API call using it 1); a submission lives until its last operation has run or
 * been taken out of the FIFO.  Destroy removes the batch from the table,
 * cancels entries not started, waits (without bound, as the application
 * may free its buffers when it returns) until every submission has ended and
 * drops the table's reference; the last reference frees the memory, so no
 * executor thread ever touches freed memory.
 *
 * Cancel: operations still in the FIFO are taken out (async_remove), and
 * every entry still QUEUED — in the FIFO, or in a submission a thread has taken
 * but not reached yet — completes as CUFILE_CANCELED at once; a thread
 * that reaches it later finds its claim refused.  Then Cancel waits, at
 * most cancel_wait_ms(), until every submission submitted before it has ended
 * (its running entries finished, its threads gone): when it returns 0 no
 * entry submitted before it runs any more, so the application may reuse
 * every buffer of them.  Past the bound (a userspace file system read that
 * does not return) it gives up with CU_FILE_INTERNAL_BATCH_CANCEL_ERROR and
 * those entries go on; a later Cancel that returns 0, their events, or
 * Destroy tell the application they are done.  Cancel never waits forever.
 *
 * Rounds: each Cancel starts a new epoch.  Until the next Submit, GetStatus
 * reports the cancelled round as before (CANCELED events, and COMPLETE or
 * FAILED for what ran).  The first Submit after a Cancel discards whatever
 * of it was not reported (flush_locked): every entry becomes FREE at once,
 * so the handle takes SetUp's n entries again without the application
 * reaping — a batch returned to a pool after a cancel and resubmitted
 * later, as NIXL does.  An entry still running then (the cancel gave up on
 * it) keeps running on its submission's own item, which holds its parameters; its
 * entry slot already carries the new round, so its completion is dropped
 * (submission->epoch < flushed) and touches no entry: no event of it is ever
 * reported in the new round, and no entry storage beyond n is needed.
 *
 * Events: status CUFILE_COMPLETE with ret = bytes (short at end of file);
 * CUFILE_FAILED with ret = the internal error as a negative number cast to
 * size_t (-errno, e.g. (size_t)-EBADF, or (size_t)-CU_FILE_* code), so a
 * caller can print (ssize_t)ret; CUFILE_CANCELED with ret 0.
 *
 * Wake-ups: completions wake GetStatus only when enough are done for the
 * smallest count a waiter asked for (wake_at), so a waiter for 128 entries
 * wakes once, not once per staging buffer.  Before it sleeps, a GetStatus
 * that must wait polls the batch's count of completions for up to
 * OPENCUFILE_BATCH_WAIT_SPIN_US (default 100 us, never past its timeout):
 * a batch of a few small entries completes in tens of microseconds, less
 * than a sleeping thread takes to run again once woken on a VM.  Together
 * with the executor threads kept awake after an operation (async.c), a
 * batch submitted right after the last one completed meets no sleeping
 * thread on its way.  Measured and not kept: a GetStatus without a timeout
 * serving entries nobody had claimed yet itself, as an executor thread
 * would (a batch of 8 x 64 KiB level at 59 us; 4 threads x 4 batches of
 * 128 scattered entries 10 % slower, each thread serving its own batch
 * instead of reaping and submitting; H200 machine, docs/history/benchmarks.md).
 *
 * Locks: table_lock (slots, next_gen) is taken before a batch's lock; a
 * batch's lock before the executor's queue lock.  The driver's state lock
 * is never taken under either (holds are released after unlocking).
 */
#define _GNU_SOURCE
#include "batch.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "batch_io.h"
#include "config.h"
#include "driver.h"
#include "internal.h"
#include "gpu.h"
#include "engine.h"
#include "log.h"
#include "profile.h"
#include "stats.h"

#define SLOT_BITS 24
#define SLOT_MASK ((1ull << SLOT_BITS) - 1)

enum entry_state { E_FREE, E_QUEUED, E_RUNNING, E_DONE };
#define STATE_BITS 2
#define STATE_MASK 3u

struct batch;

struct entry {
	/* seq << STATE_BITS | state.  QUEUED -> RUNNING by the claiming thread
	 * (compare-and-swap, no lock); every other change under the batch's
	 * lock.  Acquire/release: the claim orders after Submit's writes. */
	_Atomic uint64_t word;
	/* Under the batch's lock. */
	CUfileIOParams_t p;
	CUfileStatus_t status;
	ssize_t result;
	uint64_t t0;  /* statistics: submission time, 0 when not counting */
	uint64_t pt0; /* its submission's prof_steps t0 (0: not profiled) */
	bool psmall;  /* ... a small submission's */
};

struct submission;

struct submission_op {
	struct async_op aop;
	struct submission *submission;
};

struct member {
	struct entry *e;
	uint64_t seq;
};

/* One Submit: its entries, served by nops executor operations. */
struct submission {
	struct submission *prev, *next; /* the batch's live submissions, under its lock */
	struct batch *b;
	unsigned n, per_claim;
	/* Next entry to claim.  Relaxed: it only hands out distinct indices;
	 * each entry's claim is its own compare-and-swap. */
	atomic_uint cursor;
	unsigned nops, ops_live; /* ops_live: queued or running; batch lock */
	uint64_t epoch;		 /* the batch's epoch at submission */
	uint64_t t0;		 /* statistics: submission time, 0 when not counting */
	struct prof_steps steps; /* the profile's timeline (profile.h) */
	struct submission_op *ops;
	struct member *m;
	struct bio_item *items; /* items[i] serves m[i] */
};

struct batch {
	pthread_mutex_t lock; /* protects everything below but key/cap */
	pthread_cond_t cv;    /* completions (see wake_at), GetStatus takes, destroy */
	uint64_t key;
	unsigned cap;
	unsigned used; /* entries not FREE */
	int refs;
	bool dead;
	unsigned nwaiters; /* threads in cv */
	unsigned wake_at;  /* broadcast when ndone reaches it */
	unsigned drainers; /* Cancel/Destroy calls waiting in cv for submissions to end */
	uint64_t epoch;	   /* Cancel calls so far */
	uint64_t flushed;  /* epoch at the last flush; below epoch: a flush is due */
	unsigned nfree;
	unsigned *free_idx; /* stack of FREE entry indices */
	unsigned done_head, ndone;
	atomic_uint ndone_pub; /* ndone, for GetStatus's polling without the lock */
	uint64_t wait_spin_ns; /* GetStatus polls that long before it sleeps */
	unsigned *done_ring; /* DONE entries in completion order */
	struct submission *submissions;
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

static unsigned state_of(uint64_t word) { return (unsigned)(word & STATE_MASK); }

static atomic_ulong polled_waits; /* GetStatus waits that ended while polling */

#ifdef OCF_FAULT_INJECTION
#include "fault.h"
/* fault.h's test control: defined here, where the count is. */
OCF_EXPORT unsigned long ocf_fault_polled_status_waits(void)
{
	return atomic_load_explicit(&polled_waits, memory_order_relaxed);
}
#endif

/* b->ndone changed (lock held). */
static void ndone_changed(struct batch *b)
{
	atomic_store_explicit(&b->ndone_pub, b->ndone, memory_order_release);
}

static void wake_locked(struct batch *b)
{
	b->wake_at = UINT_MAX;
	pthread_cond_broadcast(&b->cv);
}

/* Caller holds b->lock; e is RUNNING or QUEUED (cancel). */
static void complete_locked(struct batch *b, struct entry *e, CUfileStatus_t status, ssize_t result)
{
	uint64_t w = atomic_load_explicit(&e->word, memory_order_relaxed);
	atomic_store_explicit(&e->word, (w & ~(uint64_t)STATE_MASK) | E_DONE, memory_order_relaxed);
	e->status = status;
	e->result = result;
	b->done_ring[(b->done_head + b->ndone) % b->cap] = (unsigned)(e - b->e);
	b->ndone++;
	ndone_changed(b);
	if (b->ndone >= b->wake_at)
		wake_locked(b);
}

/* Caller holds b->lock; the submission has no operation left.  The caller drops
 * the submission's reference to the batch. */
static void submission_unlink_locked(struct batch *b, struct submission *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		b->submissions = j->next;
	if (j->next)
		j->next->prev = j->prev;
}

/* batch_io's completion callback: items that finished, under one lock. */
static void submission_items_done(void *arg, struct bio_item *list)
{
	struct submission *j = arg;
	struct batch *b = j->b;
	for (struct bio_item *it = list; it; it = it->next)
		stats_batch_entry_done(it->write, it->result >= 0, it->result > 0 ? (size_t)it->result : 0,
				       j->t0);
	pthread_mutex_lock(&b->lock);
	/* A submission from before the last flush: its entries carry a later round
	 * now, and nobody is to hear of these (see Rounds). */
	if (j->epoch >= b->flushed) {
		for (struct bio_item *it = list; it; it = it->next)
			complete_locked(b, j->m[it - j->items].e,
					it->result >= 0 ? CUFILE_COMPLETE : CUFILE_FAILED, it->result);
		prof_step(&j->steps, PROF_S_DONE);
	}
	pthread_mutex_unlock(&b->lock);
}

/* Executor side: claims entries of the submission until none is left. */
static void submission_run(struct async_op *aop)
{
	struct submission *j = ((struct submission_op *)((char *)aop - offsetof(struct submission_op, aop)))->submission;
	struct batch *b = j->b;
	struct bio_worker w;
	bio_begin(&w, submission_items_done, j);
	w.steps = &j->steps;
	prof_step(&j->steps, PROF_S_STARTED);
	for (;;) {
		unsigned i = atomic_fetch_add_explicit(&j->cursor, j->per_claim, memory_order_relaxed);
		if (i >= j->n)
			break;
		unsigned end = OCF_MIN(i + j->per_claim, j->n);
		for (; i < end; i++) {
			struct member *m = &j->m[i];
			uint64_t expect = m->seq << STATE_BITS | E_QUEUED;
			/* Fails when a cancel completed the entry first. */
			if (atomic_compare_exchange_strong_explicit(&m->e->word, &expect,
								    m->seq << STATE_BITS | E_RUNNING,
								    memory_order_acquire, memory_order_relaxed)) {
				prof_step(&j->steps, PROF_S_CLAIMED);
				bio_add(&w, &j->items[i]);
			}
		}
		/* A small submission (an entry per claim): read this claim before
		 * the next (see Execution). */
		if (j->per_claim == 1)
			bio_close(&w);
	}
	bio_end(&w);

	pthread_mutex_lock(&b->lock);
	bool submission_gone = --j->ops_live == 0, last = false;
	if (submission_gone) {
		submission_unlink_locked(b, j);
		last = --b->refs == 0;
		if (b->drainers) /* never with last: a drainer holds a reference */
			pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->lock);
	if (submission_gone) {
		prof_steps_end(&j->steps, j->per_claim == 1);
		free(j);
	}
	if (last)
		batch_free(b);
}

/* Caller holds b->lock.  Cancels the entries not started yet; returns how
 * many executor operations were taken out of the FIFO, whose driver holds
 * the caller must release (after unlocking). */
static unsigned cancel_locked(struct batch *b)
{
	unsigned removed = 0;
	for (struct submission *j = b->submissions, *next; j; j = next) {
		next = j->next;
		for (unsigned k = 0; k < j->nops; k++)
			if (async_remove(&async_batch_exec, &j->ops[k].aop)) {
				removed++;
				j->ops_live--;
			}
		if (j->ops_live == 0) {
			submission_unlink_locked(b, j);
			b->refs--; /* never the last: the caller holds one */
			free(j);
		}
	}
	for (unsigned i = 0; i < b->cap; i++) {
		struct entry *e = &b->e[i];
		uint64_t w = atomic_load_explicit(&e->word, memory_order_relaxed);
		if (state_of(w) != E_QUEUED)
			continue;
		/* Races only with a thread claiming it. */
		if (!atomic_compare_exchange_strong_explicit(&e->word, &w, (w & ~(uint64_t)STATE_MASK) | E_DONE,
							     memory_order_relaxed, memory_order_relaxed))
			continue;
		stats_batch_entry_done(e->p.opcode == CUFILE_WRITE, false, 0, e->t0);
		complete_locked(b, e, CUFILE_CANCELED, 0);
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
	if (!out || nr == 0 || nr > OCF_EFF(OCF_K_IO_BATCHSIZE))
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
		atomic_init(&b->e[i].word, E_FREE);
		b->free_idx[i] = nr - 1 - i; /* entry 0 is taken first */
	}
	b->nfree = nr;
	b->wake_at = UINT_MAX;
	b->wait_spin_ns = ocf_cfg.tuning.batch_wait_spin_ns;

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

/* Executor operations for n entries, and entries per claim. */
static void plan_submission(unsigned n, unsigned *nops, unsigned *per_claim)
{
	unsigned w = (unsigned)async_thread_count(&async_batch_exec);
	uint64_t given;
	if (config_env_given(OCF_E_BATCH_WORKERS, &given)) /* tests */
		w = (unsigned)given;
	w = OCF_MAX(OCF_MIN(w, n), 1u);
	unsigned k = (n + w - 1) / w;
	*per_claim = k;
	/* No operation that could only find the cursor at the end. */
	*nops = OCF_MIN(w, (n + k - 1) / k);
}

static struct submission *submission_new(unsigned n, unsigned nops, unsigned per_claim)
{
	size_t sz = sizeof(struct submission) + nops * sizeof(struct submission_op) + n * sizeof(struct member) +
		    n * sizeof(struct bio_item);
	struct submission *j = malloc(sz); /* Submit fills every member and item */
	if (!j)
		return NULL;
	*j = (struct submission){0};
	j->ops = (struct submission_op *)(j + 1);
	j->m = (struct member *)(j->ops + nops);
	j->items = (struct bio_item *)(j->m + n);
	j->n = n;
	j->nops = j->ops_live = nops;
	j->per_claim = per_claim;
	atomic_init(&j->cursor, 0);
	for (unsigned k = 0; k < nops; k++)
		j->ops[k] = (struct submission_op){
		    .aop = {.run = submission_run,
			    .next = k + 1 < nops ? &j->ops[k + 1].aop : NULL,
			    /* A small submission: its threads stay awake for the next. */
			    .spin_after = per_claim == 1},
		    .submission = j,
		};
	return j;
}

/* Caller holds b->lock; the first Submit after a Cancel.  Every entry is
 * of the cancelled round(s) (Cancel completed the QUEUED ones): DONE ones
 * lose their unreported events, RUNNING ones go on without an entry (their
 * submission's epoch is below `flushed` now).  The seq stays, so no claim of an
 * older submission can take the entry once it is submitted again. */
static void flush_locked(struct batch *b)
{
	b->nfree = 0;
	for (unsigned i = b->cap; i-- > 0;) {
		struct entry *e = &b->e[i];
		uint64_t w = atomic_load_explicit(&e->word, memory_order_relaxed);
		atomic_store_explicit(&e->word, (w & ~(uint64_t)STATE_MASK) | E_FREE, memory_order_relaxed);
		b->free_idx[b->nfree++] = i; /* entry 0 on top, as at SetUp */
	}
	b->used = 0;
	b->ndone = 0;
	ndone_changed(b);
	b->done_head = 0;
	b->flushed = b->epoch;
	if (b->nwaiters) /* they wait for fewer entries now */
		wake_locked(b);
}

int batch_submit(CUfileBatchHandle_t id, unsigned nr, const CUfileIOParams_t *params, unsigned flags)
{
	(void)flags; /* reserved */
	uint64_t pt0 = prof_now();
	if (!params || nr == 0)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	for (unsigned i = 0; i < nr; i++)
		if (params[i].mode != CUFILE_BATCH ||
		    (params[i].opcode != CUFILE_READ && params[i].opcode != CUFILE_WRITE))
			return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct batch *b = batch_get(id);
	if (!b)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	int r = async_start(&async_batch_exec);
	if (r) {
		batch_put(b);
		return r;
	}
	unsigned nops, per_claim;
	plan_submission(nr, &nops, &per_claim);
	struct submission *j = submission_new(nr, nops, per_claim);
	if (!j) {
		batch_put(b);
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	}
	j->b = b;
	prof_steps_init(&j->steps, pt0);
	for (unsigned i = 0; i < nr; i++) {
		const CUfileIOParams_t *p = &params[i];
		j->items[i] = (struct bio_item){
		    .fh = p->fh,
		    .base = p->u.batch.devPtr_base,
		    .size = p->u.batch.size,
		    .file_offset = p->u.batch.file_offset,
		    .buf_offset = p->u.batch.devPtr_offset,
		    .write = p->opcode == CUFILE_WRITE,
		};
	}
	/* A GPU that is not up yet gets its first lanes here (once per GPU,
	 * for each distinct buffer's GPU). */
	for (unsigned i = 0; i < nr; i++)
		if (i == 0 || params[i].u.batch.devPtr_base != params[i - 1].u.batch.devPtr_base)
			gpu_prepare_async(params[i].u.batch.devPtr_base);
	uint64_t t0 = stats_io_begin();
	j->t0 = t0;
	/* One hold per executor operation, released by the executor or by a
	 * cancel; taken before the batch lock (the driver's lock never nests
	 * inside it). */
	driver_hold(nops);
	pthread_mutex_lock(&b->lock);
	if (b->dead || nr > b->cap) {
		r = OCF_ERR(CU_FILE_INVALID_VALUE);
	} else {
		if (b->flushed != b->epoch)
			flush_locked(b);
		if (nr > b->nfree)
			r = OCF_ERR(CU_FILE_BATCH_FULL);
	}
	if (r) {
		pthread_mutex_unlock(&b->lock);
		release_holds(nops);
		free(j);
		batch_put(b);
		return r;
	}
	for (unsigned i = 0; i < nr; i++) {
		struct entry *e = &b->e[b->free_idx[--b->nfree]];
		e->p = params[i];
		e->t0 = t0;
		e->pt0 = pt0;
		e->psmall = per_claim == 1;
		uint64_t seq = (atomic_load_explicit(&e->word, memory_order_relaxed) >> STATE_BITS) + 1;
		/* Release: a thread whose claim sees QUEUED sees the submission. */
		atomic_store_explicit(&e->word, seq << STATE_BITS | E_QUEUED, memory_order_release);
		j->m[i] = (struct member){.e = e, .seq = seq};
	}
	b->used += nr;
	j->epoch = b->epoch;
	b->refs++; /* the submission's */
	j->next = b->submissions;
	if (b->submissions)
		b->submissions->prev = j;
	b->submissions = j;
	/* Under the batch lock: a cancel must find the operations queued. */
	prof_step(&j->steps, PROF_S_POSTED);
	async_submit_list(&async_batch_exec, &j->ops[0].aop);
	pthread_mutex_unlock(&b->lock);
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
	bool spun = false, slept = false;
	while (b->ndone < want && !b->dead && (want = OCF_MIN(OCF_MIN(min_nr, room), b->used)) > b->ndone) {
		if (!spun && b->wait_spin_ns) {
			/* Poll first (see DESIGN), at most until the deadline. */
			spun = true;
			uint64_t len = b->wait_spin_ns;
			if (timeout) {
				struct timespec now;
				clock_gettime(CLOCK_MONOTONIC, &now);
				int64_t left = (int64_t)(deadline.tv_sec - now.tv_sec) * 1000000000LL +
					       (deadline.tv_nsec - now.tv_nsec);
				len = left <= 0 ? 0 : OCF_MIN(len, (uint64_t)left);
			}
			if (len) {
				pthread_mutex_unlock(&b->lock);
				OCF_POLL_UNTIL(atomic_load_explicit(&b->ndone_pub, memory_order_acquire) >= want, len);
				pthread_mutex_lock(&b->lock);
				continue;
			}
		}
		slept = true;
		b->wake_at = OCF_MIN(b->wake_at, want);
		b->nwaiters++;
		int w = timeout ? pthread_cond_timedwait(&b->cv, &b->lock, &deadline)
				: pthread_cond_wait(&b->cv, &b->lock);
		b->nwaiters--;
		if (w == ETIMEDOUT)
			break;
	}
	if (spun && !slept && b->ndone >= want)
		atomic_fetch_add_explicit(&polled_waits, 1, memory_order_relaxed);
	unsigned n = OCF_MIN(b->ndone, room);
	for (unsigned i = 0; i < n; i++) {
		unsigned idx = b->done_ring[b->done_head];
		b->done_head = (b->done_head + 1) % b->cap;
		b->ndone--;
		ndone_changed(b);
		struct entry *e = &b->e[idx];
		events[i].cookie = e->p.cookie;
		events[i].status = e->status;
		events[i].ret = (size_t)e->result;
		/* Cancelled entries' submissions may never reach the timeline. */
		if (e->status != CUFILE_CANCELED)
			prof_reaped(e->pt0, e->psmall);
		uint64_t w = atomic_load_explicit(&e->word, memory_order_relaxed);
		atomic_store_explicit(&e->word, (w & ~(uint64_t)STATE_MASK) | E_FREE, memory_order_relaxed);
		b->free_idx[b->nfree++] = idx;
		b->used--;
	}
	/* Other waiters may now wait for fewer entries. */
	if (n && b->nwaiters)
		wake_locked(b);
	pthread_mutex_unlock(&b->lock);
	*nr = n;
	batch_put(b);
	return 0;
}

/* How long Cancel waits for entries running at the cancel (ms).  Long
 * enough for any I/O that is moving (a staged entry takes milliseconds, a
 * 16 MiB one from a slow disk a fraction of a second); bounded because a
 * userspace file system's callback may never return. */
static long cancel_wait_ms(void)
{
	return (long)config_env(OCF_E_BATCH_CANCEL_WAIT_MS); /* 10 s, at most a day */
}

/* Caller holds b->lock.  Jobs submitted before epoch `epoch` that have not
 * ended: after a cancel, those with entries still running. */
static unsigned submissions_before_locked(const struct batch *b, uint64_t epoch)
{
	unsigned n = 0;
	for (const struct submission *j = b->submissions; j; j = j->next)
		n += j->epoch < epoch;
	return n;
}

int batch_cancel(CUfileBatchHandle_t id)
{
	struct batch *b = batch_get(id);
	if (!b)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	long ms = cancel_wait_ms();
	struct timespec deadline;
	make_deadline(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L}, &deadline);
	pthread_mutex_lock(&b->lock);
	uint64_t epoch = ++b->epoch;
	unsigned removed = cancel_locked(b);
	pthread_mutex_unlock(&b->lock);
	release_holds(removed);

	int r = 0;
	pthread_mutex_lock(&b->lock);
	b->drainers++;
	unsigned left;
	while ((left = submissions_before_locked(b, epoch)) != 0)
		if (pthread_cond_timedwait(&b->cv, &b->lock, &deadline) == ETIMEDOUT &&
		    (left = submissions_before_locked(b, epoch)) != 0) {
			r = OCF_ERR(CU_FILE_INTERNAL_BATCH_CANCEL_ERROR);
			break;
		}
	b->drainers--;
	pthread_mutex_unlock(&b->lock);
	if (r)
		log_warn("cuFileBatchIOCancel: entries of %u submission(s) still running after %ld ms; "
			 "their buffers stay in use until they finish (a later cancel returning success, "
			 "their events before the next submit, or destroy tell when)",
			 left, ms);
	batch_put(b);
	return r;
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
	wake_locked(b); /* GetStatus callers return */
	/* The application may free its buffers once Destroy returns: wait for
	 * every submission to end, entries running since a cancel gave up on them
	 * included. */
	b->drainers++;
	while (b->submissions)
		pthread_cond_wait(&b->cv, &b->lock);
	b->drainers--;
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
		log_info("driver close: %u queued batch operation(s) cancelled", removed);
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
