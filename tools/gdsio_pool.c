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
 *
 * With -Q CALLERS the requests come from caller threads instead, as a
 * client library's pool is fed by the threads of its application (KvikIO:
 * several threads calling pread().get() on one pool).  Each caller owns a
 * buffer of one request and a region of the data set (-s / CALLERS, whole
 * requests), goes through it in order (again from its start with -T: no
 * request starts after the deadline), and for each request queues its
 * pieces and waits until the pool has done them all.  The -w pool threads
 * take pieces from one first-in-first-out queue, whichever caller queued
 * them, and read each into its caller's buffer.
 *
 * DESIGN (-Q): the queue is a ring under the pool's mutex, its capacity one
 * request of every caller (a caller has at most one in flight); takers
 * sleep on the pool's condition variable while it is empty.  A caller
 * waits for its request on its own mutex and condition variable, which the
 * thread that completes the request's last piece signals (a future's
 * wait).  After a failure the pool threads still take every queued piece,
 * without reading it, so that no caller waits for a piece that never
 * comes; the callers then see the stop flag and issue nothing more.  The
 * last caller to finish closes the queue, and the pool threads leave once
 * it is empty.  Request latencies (queueing to the last piece) are the
 * callers'; the run's clock stops when the last pool thread leaves.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>

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

/* -Q: a pool thread takes pieces from the callers' queue until it is closed
 * and empty. */
static void loop_pool_callers(struct worker *w)
{
	struct run *run = w->run;
	struct pool *p = &run->pool;
	const size_t piece = o.piece;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->qlen && !p->closed)
			pthread_cond_wait(&p->cv, &p->mu);
		if (!p->qlen) {
			pthread_mutex_unlock(&p->mu);
			return;
		}
		struct qpiece q = p->q[p->qhead];
		p->qhead = (p->qhead + 1) % p->qcap, p->qlen--;
		pthread_mutex_unlock(&p->mu);
		struct caller *c = q.c;
		if (!stopped(run)) {
			w->buf = c->buf; /* the verification helpers read it */
			if (o.verify && poison_buffer(w, q.at, piece))
				goto piece_done;
			uint64_t t0 = now_ns();
			if (do_io(w, q.at, q.off, piece))
				goto piece_done;
			hist_add(w->hist, now_ns() - t0);
			w->bytes += piece, w->ops++;
			atomic_fetch_add_explicit(&w->progress, piece, memory_order_relaxed);
			if (o.verify)
				verify_read(w, q.at, q.off, piece);
		}
	piece_done:
		if (atomic_fetch_sub_explicit(&c->left, 1, memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&c->mu);
			c->done = 1;
			pthread_cond_signal(&c->cv);
			pthread_mutex_unlock(&c->mu);
		}
	}
}

/* -Q: the callers' buffers (registered unless -b), regions, and the queue;
 * made by run_one before any thread starts.  0, or -1 with why. */
int callers_init(struct run *run, char *why, size_t whylen)
{
	struct pool *p = &run->pool;
	char eb[160];
	uint64_t per = o.size / run->io / (uint64_t)o.callers;
	p->npieces = run->io / o.piece;
	if (!per) {
		snprintf(why, whylen, "data set %llu bytes too small for %d callers of %zu-byte requests",
			 (unsigned long long)o.size, o.callers, run->io);
		return -1;
	}
	p->qcap = (size_t)o.callers * p->npieces;
	p->q = calloc(p->qcap, sizeof(*p->q));
	p->callers = calloc((size_t)o.callers, sizeof(*p->callers));
	if (!p->q || !p->callers) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	atomic_init(&p->callers_left, o.callers);
	for (int i = 0; i < o.callers; i++, p->ncallers++) {
		struct caller *c = &p->callers[i];
		c->run = run, c->id = i;
		c->start = o.offset + (uint64_t)i * per * run->io, c->nreq = per;
		atomic_init(&c->left, 0);
		c->rhist = calloc(1, sizeof(*c->rhist));
		if (!c->rhist || pthread_mutex_init(&c->mu, NULL)) {
			free(c->rhist);
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		if (pthread_cond_init(&c->cv, NULL)) {
			pthread_mutex_destroy(&c->mu);
			free(c->rhist);
			snprintf(why, whylen, "cannot make a caller's condition variable");
			return -1;
		}
		char bw[400];
		if (buffer_alloc(&c->buf, effective_mem(), run->io, o.gpu, bw, sizeof(bw))) {
			snprintf(why, whylen, "caller %d's buffer (-Q): %s", i, bw);
			p->ncallers++; /* its mutex and histogram are made: undone by callers_fini */
			return -1;
		}
		if (uses_cufile(o.xfer) && !o.skip_reg) {
			CUfileError_t e = cuFileBufRegister(c->buf.ptr, run->io, 0);
			if (e.err) {
				snprintf(why, whylen,
					 "cuFileBufRegister(%s, %zu) of caller %d's buffer (-Q): %s",
					 mem_name[c->buf.kind], run->io, i, cufile_err(e, eb, sizeof(eb)));
				p->ncallers++;
				return -1;
			}
			c->registered = 1;
		}
	}
	return 0;
}

void callers_fini(struct run *run)
{
	struct pool *p = &run->pool;
	for (int i = 0; i < p->ncallers; i++) {
		struct caller *c = &p->callers[i];
		if (c->registered)
			cuFileBufDeregister(c->buf.ptr);
		buffer_free(&c->buf);
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c->rhist);
	}
	free(p->callers), free(p->q);
	p->callers = NULL, p->q = NULL, p->ncallers = 0;
}

/* -Q: a caller's requests, one at a time: queue its pieces, wait for them. */
static void caller_loop(struct caller *c)
{
	struct run *run = c->run;
	struct pool *p = &run->pool;
	for (uint64_t r = 0;; r++) {
		if (stopped(run))
			return;
		if (o.duration > 0 ? r > 0 && now() >= run->deadline : r >= c->nreq)
			return;
		uint64_t off = c->start + (r % c->nreq) * run->io;
		pthread_mutex_lock(&c->mu);
		c->done = 0;
		pthread_mutex_unlock(&c->mu);
		atomic_store_explicit(&c->left, (unsigned)p->npieces, memory_order_release);
		uint64_t t0 = now_ns();
		pthread_mutex_lock(&p->mu);
		for (uint64_t k = 0; k < p->npieces; k++) {
			size_t at = (size_t)k * o.piece;
			p->q[(p->qhead + p->qlen) % p->qcap] =
			    (struct qpiece){.c = c, .off = off + at, .at = at};
			p->qlen++;
		}
		if (p->npieces > 1)
			pthread_cond_broadcast(&p->cv);
		else
			pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_mutex_lock(&c->mu);
		while (!c->done)
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
		hist_add(c->rhist, now_ns() - t0);
	}
}

void *caller_main(void *arg)
{
	struct caller *c = arg;
	struct run *run = c->run;
	struct pool *p = &run->pool;
	pthread_barrier_wait(&run->ready);
	pthread_barrier_wait(&run->go);
	caller_loop(c);
	if (atomic_fetch_sub_explicit(&p->callers_left, 1, memory_order_acq_rel) == 1) {
		pthread_mutex_lock(&p->mu);
		p->closed = 1;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

void loop_pool(struct worker *w)
{
	if (o.callers) {
		loop_pool_callers(w);
		return;
	}
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
