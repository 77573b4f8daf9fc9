/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stripe.c - the striped path of device reads: one request of a few MiB
 * read by several threads at once, copied to the GPU by its caller alone.
 *
 * DESIGN
 * Why: a request of a few MiB cannot pass one thread's page-cache speed
 * (8.5-9.4 GB/s on the GPU machine) if its caller reads it alone, and
 * splitting it the way large requests are split (each participant with
 * its own lane, its own copies and its own waits) costs more than it
 * gains at this size: on the H200 machine nine threads queuing 128 KiB
 * copies spent 16 us per copy submission contending for the driver, and
 * each waited for its own small copy (docs/history/benchmarks.md,
 * 2026-11-26).  Here the copies stay few and on one thread:
 *
 *   - The request is cut into pieces (chunks of job.h, 256 KiB) that start
 *     on the file's alignment after the first; consecutive pieces form
 *     stripes (2 MiB, or half the request rounded up to whole pieces when
 *     that is less, so that the copy of the first stripe overlaps the
 *     reading of the next).  Stripe s lives in buffer s % depth of the CALLER's
 *     lane, laid out exactly as one staged chunk of that size would be
 *     (fio_stage_skew of its first byte, then contiguous), so a direct read
 *     of any piece lands inside its own part of the stripe.
 *   - The caller and its helpers claim pieces with the job's counter and
 *     read them (pread, or the staged O_DIRECT read) straight into the
 *     stripe, then write the piece's cache lines back (clwb,
 *     fio_flush_before_copy), so that the copy reads clean memory: a DMA
 *     read of lines the CPU holds modified is slow (below).  Helpers make
 *     no CUDA call and hold no lane.
 *   - When every piece of the oldest uncopied stripe is resolved, the
 *     caller queues ONE host-to-device copy of it on its lane's stream and
 *     records the buffer's event; stripes are copied in order.
 *   - A piece of stripe s may be read only while s < released: its buffer
 *     is free once the copy of stripe s - depth is done.  The caller
 *     retires copies (waits for or polls their events) and raises
 *     `released`; helpers that got ahead wait for it.  The caller reads a
 *     piece itself only while it has no copy to retire, so that buffers
 *     come back as soon as their copies are done.
 *
 * Waiting: a wait here is expected to last microseconds (a 256 KiB read
 * is about 30 us), so each first spins briefly and then sleeps on a futex
 * word - the caller on `ready` (bumped when a stripe's last piece is
 * resolved), helpers on `released`.  Wakes are only sent when the other
 * side said it sleeps (Dekker-style: a sequentially consistent store of
 * the sleeping flag, then a load of the condition, on both sides).
 *
 * Failures: every piece is claimed and resolved, also those at or beyond
 * a recorded failure (they are skipped without I/O), so every stripe's
 * count completes and nobody waits for a piece that nobody holds.  A
 * stripe's copy covers only bytes before the first failed or short piece
 * (job_good_prefix), so nothing past what the call reports is written to
 * the caller's memory.  A failed copy submission or copy wait records an
 * error at the stripe's first piece.  After any failure the stream is
 * drained before the lane is returned.
 *
 * Helpers kept awake: a request below OPENCUFILE_STRIPE_SPIN_BELOW_KB
 * (2048) lasts some 70-130 us, and a helper woken for it runs 15-40 us
 * later, when the caller has read most of it alone.  So such a request is
 * cut into one piece per participant (the caller and
 * OPENCUFILE_STRIPE_SPINNERS helpers, 2), and afterwards up to that many
 * helpers poll the engine's queue for OPENCUFILE_STRIPE_SPIN_US (50) before
 * they sleep: a caller issuing its next request at once finds them
 * running.  One caller's 1 MiB reads at random offsets: 12.7-13.3 GB/s at
 * 0.22-0.23 CPU s/GB, against 11.6 (0.20) striped without it and 7.1-7.7
 * (0.13-0.14) unstriped; at 2 MiB the polling bought nothing (H200
 * machine, 2026-11-27, docs/history/benchmarks.md).
 *
 * Used for device reads of primary-context memory between
 * OPENCUFILE_STRIPE_MIN_KB (1024) and OPENCUFILE_STRIPE_MAX_KB (8192), as
 * the planner decides (planner.c, plan_request): by a caller alone in the
 * engine, or while fewer than OPENCUFILE_STRIPE_CALLERS (4) other callers
 * are busy and its handle has no read-ahead window open (a window serves
 * a reader in order better; more callers keep the CPUs and the copy
 * engine busy themselves), when helpers are free.  A few callers striped at once
 * each stripe into their own lanes.  Larger requests, writes, vectored
 * and stream requests keep the per-participant lanes of engine.c (a
 * 16 MiB request went faster there with eight participants: 19.7 GB/s
 * against 14.2 striped, H200 machine).
 *
 * Why the write-back: on the H200 machine a 1 MiB copy of data the CPU
 * has just written takes 48-50 us against 28 us for data written long ago
 * (bench/ceilings -t dirty).  With it (and the two rules above), one
 * caller's 4 MiB calls went 11.7-13.3 GB/s against 7.9-8.5, its 8 MiB calls
 * 16.4-16.6 against 12.0-12.2 (docs/history/benchmarks.md, 2026-11-26
 * late); OPENCUFILE_STRIPE_FLUSH=0 turns it off.
 */
#define _GNU_SOURCE
#include "stripe.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cuda_loader.h"
#include "fileio.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "job.h"
#include "log.h"
#include "profile.h"
#include "watchdog.h"

/* ------------------------------------------------------------ settings
 *
 * The path's values are ocf_cfg.tuning.stripe (config.h), resolved at
 * driver open and constant until the close, which joins every helper; a
 * request reads them while it is planned (the engine hands them to the
 * planner) and set up (stripe_setup), and what a helper needs of them
 * travels in the job. */

void stripe_setup(struct ocf_job *job, const struct plan_stripes *sh, struct ocf_lane *lane)
{
	const struct ocf_stripe_tuning *c = &ocf_cfg.tuning.stripe;
	job->chunk = sh->chunk;
	job->flush = c->flush;
	job->skew0 = sh->skew0;
	job->nchunks = sh->nchunks;
	job->per_stripe = sh->per_stripe;
	job->nstripes = sh->nstripes;
	job->lane = lane;
	if (sh->spin) {
		job->spin_ns = c->spin_ns;
		job->spin_cap = c->spinners;
	}
	atomic_init(&job->released, (uint32_t)OCF_MIN((size_t)lane->depth, job->nstripes));
	atomic_init(&job->sleepers, 0);
	atomic_init(&job->ready, 0);
	atomic_init(&job->caller_sleeps, 0);
	for (size_t s = 0; s < OCF_STRIPES_MAX; s++)
		atomic_init(&job->resolved[s], 0);
	job->striped = true;
}

/* ------------------------------------------------------------- waiting */

/* Spins before sleeping, in ns: about one piece's read. */
#define CALLER_SPIN_NS 50000
#define HELPER_SPIN_NS 10000

/* ------------------------------------------------------------- stripes */

static size_t stripe_of(const struct ocf_job *job, size_t idx) { return idx / job->per_stripe; }

static size_t stripe_pieces(const struct ocf_job *job, size_t s)
{
	return OCF_MIN(job->per_stripe, job->nchunks - s * job->per_stripe);
}

static bool stripe_whole(struct ocf_job *job, size_t s)
{
	return atomic_load_explicit(&job->resolved[s], memory_order_acquire) == stripe_pieces(job, s);
}

/* Where stripe s's first byte sits in its buffer, and the buffer. */
static char *stripe_data(const struct ocf_job *job, size_t s)
{
	const struct ocf_io *io = job->io;
	size_t start = job_chunk_start(job, s * job->per_stripe);
	return job->lane->bufs[s % (size_t)job->lane->depth].buf + fio_stage_skew(io->h, io->off + (off_t)start);
}

/* Reads piece idx into its place in its stripe, unless it is at or beyond
 * a recorded failure; records what went wrong. */
static void read_piece(struct ocf_job *job, size_t idx)
{
	if (idx >= atomic_load_explicit(&job->stop, memory_order_relaxed))
		return;
	const struct ocf_io *io = job->io;
	size_t s = stripe_of(job, idx);
	size_t first = job_chunk_start(job, s * job->per_stripe);
	size_t at = job_chunk_start(job, idx), n = job_chunk_len(job, idx);
	off_t off = io->off + (off_t)at;
	/* A slot whose staged placement of off is this piece's place. */
	char *dst = stripe_data(job, s) + (at - first);
	struct ocf_slot sub = {.buf = dst - fio_stage_skew(io->h, off), .size = n + OCF_MAX_ALIGN, .chunk = n};
	uint64_t t0 = prof_now();
	ssize_t got = fio_read_staged_part(io->h, &sub, off, n);
	prof_time(PROF_T_FILE, t0);
	if (got > 0) {
		prof_bytes((size_t)got);
		if (job->flush)
			fio_flush_before_copy(dst, (size_t)got, INT_MAX);
	}
	if (got < 0)
		job_record_error(job, idx, got);
	else if ((size_t)got < n)
		job_record_short(job, idx, (size_t)got);
}

/* Piece idx is resolved: count it for its stripe; the last one wakes the
 * caller if it sleeps. */
static void resolve_piece(struct ocf_job *job, size_t idx)
{
	size_t s = stripe_of(job, idx);
	if (atomic_fetch_add_explicit(&job->resolved[s], 1, memory_order_acq_rel) + 1 < stripe_pieces(job, s))
		return;
	atomic_fetch_add(&job->ready, 1); /* seq_cst, before the load below */
	if (atomic_load(&job->caller_sleeps))
		ocf_futex_wake(&job->ready, 1);
}

/* A helper waits until stripe s's buffer may be filled. */
static void helper_wait_released(struct ocf_job *job, size_t s)
{
	if (s < atomic_load_explicit(&job->released, memory_order_acquire))
		return;
	uint64_t t0 = prof_now(), start = ocf_now_ns();
	while (s >= atomic_load_explicit(&job->released, memory_order_acquire)) {
		if (ocf_now_ns() - start < HELPER_SPIN_NS) {
			ocf_cpu_relax();
			continue;
		}
		uint32_t v = atomic_load(&job->released);
		if (s < v)
			break;
		atomic_fetch_add(&job->sleepers, 1); /* seq_cst: then the load below */
		if (s >= atomic_load(&job->released))
			ocf_futex_wait(&job->released, v, 10000000L);
		atomic_fetch_sub(&job->sleepers, 1);
	}
	prof_time(PROF_T_HELPERS, t0);
}

void stripe_run_helper(struct ocf_job *job)
{
	size_t idx;
	while (job_claim(job, &idx)) {
		helper_wait_released(job, stripe_of(job, idx));
		read_piece(job, idx);
		resolve_piece(job, idx);
	}
}

/* ------------------------------------------------------------ the caller */

struct copy {
	bool busy;
	CUevent ev;
	size_t bytes;
};

struct caller {
	struct ocf_job *job;
	CUstream stream;
	bool cuda_ok;		      /* the context is current */
	size_t copy_next, wait_next; /* next stripe to copy; oldest copy not retired */
	struct copy pend[OCF_LANE_DEPTH];
};

static long copy_failed(const char *what, CUresult r)
{
	log_error("%s failed: %s", what, cuda_error_name(r));
	return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
}

/* Queues the copy of stripe s (whole): the bytes of it before the first
 * failure, if any. */
static void issue_copy(struct caller *c, size_t s)
{
	struct ocf_job *job = c->job;
	const struct ocf_io *io = job->io;
	struct copy *p = &c->pend[s % (size_t)job->lane->depth];
	size_t first = s * job->per_stripe, last = first + stripe_pieces(job, s);
	size_t start = job_chunk_start(job, first);
	size_t end = last == job->nchunks ? io->len : job_chunk_start(job, last);
	end = OCF_MIN(end, job_good_prefix(job));
	p->busy = false;
	if (!c->cuda_ok || end <= start)
		return;
	size_t n = end - start;
	uint64_t t0 = prof_now();
	CUresult r = ocf_cu.MemcpyHtoDAsync(io->t.dev + start, stripe_data(job, s), n, c->stream);
	CUevent ev = NULL;
	if (r == CUDA_SUCCESS) {
		ev = gpu_lane_event(job->lane, (int)(s % (size_t)job->lane->depth), n);
		r = ocf_cu.EventRecord(ev, c->stream);
	}
	prof_time(PROF_T_SUBMIT, t0);
	if (r != CUDA_SUCCESS) {
		job_record_error(job, first, copy_failed("host to device copy", r));
		return;
	}
	*p = (struct copy){.busy = true, .ev = ev, .bytes = n};
}

/* Retires the oldest copy (waiting for it when `wait`, else only if it is
 * done) and frees its buffer for stripe wait_next + depth.  Returns
 * whether it retired one. */
static bool retire_copy(struct caller *c, bool wait)
{
	struct ocf_job *job = c->job;
	if (c->wait_next >= c->copy_next)
		return false;
	size_t s = c->wait_next;
	struct copy *p = &c->pend[s % (size_t)job->lane->depth];
	if (p->busy) {
		CUresult r;
		if (wait) {
			r = gpu_event_wait(p->ev, p->bytes);
		} else {
			r = ocf_cu.EventQuery(p->ev);
			if (r == CUDA_ERROR_NOT_READY)
				return false;
		}
		p->busy = false;
		if (r != CUDA_SUCCESS)
			job_record_error(job, s * job->per_stripe, copy_failed("host to device copy", r));
	}
	c->wait_next++;
	uint32_t rel = (uint32_t)OCF_MIN(c->wait_next + (size_t)job->lane->depth, job->nstripes);
	if (rel > atomic_load_explicit(&job->released, memory_order_relaxed)) {
		atomic_store(&job->released, rel); /* seq_cst: then the load below */
		if (atomic_load(&job->sleepers))
			ocf_futex_wake(&job->released, INT_MAX);
	}
	return true;
}

/* Waits until stripe s is whole, retiring copies that finish meanwhile so
 * that helpers waiting for a buffer can go on. */
static void wait_stripe(struct caller *c, size_t s)
{
	struct ocf_job *job = c->job;
	if (stripe_whole(job, s))
		return;
	uint64_t t0 = prof_now(), start = ocf_now_ns(), last_poll = start;
	bool watched = false;
	while (!stripe_whole(job, s)) {
		uint64_t now = ocf_now_ns();
		if (now - last_poll > 2000) {
			last_poll = now;
			if (retire_copy(c, false)) {
				if (c->wait_next == c->copy_next)
					break; /* nothing left to retire: go and read */
				continue;
			}
		}
		if (now - start < CALLER_SPIN_NS) {
			ocf_cpu_relax();
			continue;
		}
		if (c->wait_next < c->copy_next) {
			/* A copy is pending (the helpers may not have joined):
			 * wait for it rather than sleep on `ready`, which its end
			 * does not bump, and then go and read. */
			retire_copy(c, true);
			if (c->wait_next == c->copy_next)
				break;
			continue;
		}
		if (!watched) {
			watchdog_wait_begin("cuFileRead", handle_watch_fd(job->io->h),
					    job->io->t.gpu ? job->io->t.gpu->ordinal : -1,
					    "the engine threads reading a striped request");
			watched = true;
		}
		uint32_t v = atomic_load(&job->ready);
		if (stripe_whole(job, s))
			break;
		atomic_store(&job->caller_sleeps, 1); /* seq_cst: then the load below */
		if (!stripe_whole(job, s))
			ocf_futex_wait(&job->ready, v, c->wait_next < c->copy_next ? 200000L : 10000000L);
		atomic_store(&job->caller_sleeps, 0);
	}
	if (watched)
		watchdog_wait_end();
	prof_time(PROF_T_HELPERS, t0);
}

bool stripe_run_caller(struct ocf_job *job)
{
	const struct ocf_io *io = job->io;
	struct caller c = {.job = job, .stream = job->nonblocking ? job->lane->nb_stream : job->lane->stream};
	CUresult r = ocf_cu.CtxPushCurrent(io->t.ctx);
	c.cuda_ok = r == CUDA_SUCCESS;
	if (!c.cuda_ok)
		job_record_error(job, 0, copy_failed("cuCtxPushCurrent", r));
	bool holding = false, more = true;
	size_t held = 0;
	for (;;) {
		while (c.copy_next < job->nstripes && stripe_whole(job, c.copy_next))
			issue_copy(&c, c.copy_next++);
		if (c.copy_next == job->nstripes)
			break;
		/* The caller reads only while it has no copy to retire: a
		 * piece keeps it away for tens of microseconds, and helpers
		 * wait for the buffers its retired copies give back. */
		if (!holding && more && c.wait_next == c.copy_next) {
			holding = job_claim(job, &held);
			more = holding;
		}
		if (holding) {
			size_t s = stripe_of(job, held);
			if (s < atomic_load_explicit(&job->released, memory_order_acquire)) {
				read_piece(job, held);
				resolve_piece(job, held);
				holding = false;
			} else if (!retire_copy(&c, true)) {
				wait_stripe(&c, c.copy_next);
			}
			continue;
		}
		wait_stripe(&c, c.copy_next);
	}
	while (retire_copy(&c, true))
		;
	bool clean = true;
	if (c.cuda_ok) {
		/* After a failure a queued copy may still run: drain the
		 * stream, so nothing lands after the call returns and the
		 * buffers are idle when the lane is reused. */
		if (atomic_load_explicit(&job->stop, memory_order_relaxed) < job->nchunks) {
			r = ocf_cu.StreamSynchronize(c.stream);
			if (r != CUDA_SUCCESS) {
				log_error("staging stream could not be drained (%s): lane discarded",
					  cuda_error_name(r));
				clean = false;
			}
		}
		cuda_ctx_pop();
	}
	return clean;
}
