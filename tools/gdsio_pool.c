/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_pool.c - the pool shape (-q PIECE): what a client library with a
 * thread pool (KvikIO's pread().get()) makes of one large read.  Each
 * request of -i bytes is cut into pieces of PIECE bytes; the -w threads
 * take pieces from one shared queue, so the pieces of one request run at
 * once on different threads, each one cuFileRead (or pread with -x 1 and
 * 2) of PIECE bytes into its place in the run's one buffer of a request.
 * The next request starts when every piece of the current one is done, and
 * reads the next -i bytes of the file (again from the start of the data set
 * after its end).
 *
 * DESIGN: the queue is a ticket counter (struct pool in gdsio.h): a thread
 * draws a ticket, and when the ticket's request is not yet available (the
 * one before still has pieces in flight) it sleeps on a condition variable,
 * as a pool's thread does on an empty queue; the thread that completes a
 * request's last piece makes the next one available and wakes them.  With
 * -T, that thread also decides, once the deadline has passed, that no
 * further request starts: a request runs whole or not at all.  Op
 * latencies are per piece; the request latencies (from the moment a
 * request became available to the completion of its last piece, what the
 * caller of pread().get() waits) go to the worker's second histogram.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "gdsio.h"

int pool_init(struct run *run)
{
	struct pool *p = &run->pool;
	p->nreq = o.size / run->io;
	p->npieces = run->io / o.piece;
	atomic_init(&p->next, 0);
	atomic_init(&p->pieces_done, 0);
	atomic_init(&p->avail, 0);
	atomic_init(&p->limit, o.duration > 0 ? UINT64_MAX : p->nreq);
	p->t_start_ns = 0;
	if (pthread_mutex_init(&p->mu, NULL))
		return -1;
	if (pthread_cond_init(&p->cv, NULL)) {
		pthread_mutex_destroy(&p->mu);
		return -1;
	}
	return 0;
}

void pool_fini(struct run *run)
{
	pthread_cond_destroy(&run->pool.cv);
	pthread_mutex_destroy(&run->pool.mu);
}

static int stopped(const struct run *run)
{
	return atomic_load_explicit(&run->stop, memory_order_relaxed);
}

/* Wait until request r may start; 0 when it may, -1 when it never will
 * (past the limit, or a worker failed). */
static int wait_for_request(struct run *run, uint64_t r)
{
	struct pool *p = &run->pool;
	/* limit is stored before avail: whoever sees the new avail sees the
	 * new limit too. */
	if (atomic_load_explicit(&p->avail, memory_order_acquire) < r) {
		pthread_mutex_lock(&p->mu);
		while (atomic_load_explicit(&p->avail, memory_order_acquire) < r &&
		       r < atomic_load_explicit(&p->limit, memory_order_acquire) && !stopped(run))
			pthread_cond_wait(&p->cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
	return r < atomic_load_explicit(&p->limit, memory_order_acquire) && !stopped(run) ? 0 : -1;
}

/* The last piece of request r is done: count the request, and make the next
 * one available, or (-T, past the deadline) end the run. */
static void finish_request(struct worker *w, uint64_t r, uint64_t t_ns)
{
	struct pool *p = &w->run->pool;
	pthread_mutex_lock(&p->mu);
	hist_add(w->bhist, t_ns - p->t_start_ns);
	p->t_start_ns = t_ns;
	if (o.duration > 0 && (double)t_ns * 1e-9 >= w->run->deadline)
		atomic_store_explicit(&p->limit, r + 1, memory_order_release);
	atomic_store_explicit(&p->avail, r + 1, memory_order_release);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* A worker failed: wake every waiting thread, which then sees the stop flag
 * (set by worker_fail) and leaves. */
static void wake_all(struct run *run)
{
	pthread_mutex_lock(&run->pool.mu);
	pthread_cond_broadcast(&run->pool.cv);
	pthread_mutex_unlock(&run->pool.mu);
}

void loop_pool(struct worker *w)
{
	struct run *run = w->run;
	struct pool *p = &run->pool;
	const size_t piece = o.piece;
	for (;;) {
		uint64_t g = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
		uint64_t r = g / p->npieces, k = g % p->npieces;
		if (wait_for_request(run, r))
			return;
		size_t at = (size_t)k * piece;
		uint64_t off = o.offset + (r % p->nreq) * run->io + at;
		if (o.verify && poison_buffer(w, at, piece))
			goto failed;
		uint64_t t0 = now_ns();
		if (do_io(w, at, off, piece))
			goto failed;
		uint64_t t1 = now_ns();
		hist_add(w->hist, t1 - t0);
		w->bytes += piece, w->ops++;
		atomic_fetch_add_explicit(&w->progress, piece, memory_order_relaxed);
		if (o.verify && verify_read(w, at, off, piece))
			goto failed;
		uint64_t done = atomic_fetch_add_explicit(&p->pieces_done, 1, memory_order_acq_rel) + 1;
		if (done == (r + 1) * p->npieces)
			finish_request(w, r, now_ns());
	}
failed:
	wake_all(run);
}
