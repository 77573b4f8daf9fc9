/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async.c - the asynchronous executor: a pool of threads with one FIFO.
 *
 * DESIGN
 * Batch entries and stream operations are both "run the synchronous
 * cuFileRead/cuFileWrite path later, on another thread, then complete".
 * One pool serves both: a doubly linked FIFO of struct async_op under one
 * mutex, and N threads (OPENCUFILE_ASYNC_THREADS, default the number of
 * CPUs clamped to [4, 16] and to execution.max_io_queue_depth) that take
 * the head and call op->run().  The synchronous path below them already
 * splits large requests over the engine's own helpers, so N bounds how many
 * requests are in flight, not how many threads touch one request.
 *
 * The FIFO is doubly linked so that a batch cancel can take an entry out
 * before any thread sees it (async_remove); an entry already handed to a
 * thread is finished by it.
 *
 * Lifetime: every op carries a driver hold taken by its submitter; the
 * thread that runs it adopts the hold while run() executes (so the
 * synchronous path's driver gate nests) and releases it afterwards.  A
 * driver close therefore waits until every op has run, and only then
 * joins the threads (async_shutdown); they are started again at the next
 * asynchronous call.
 *
 * async_submit* may be called from a CUDA host function: it only takes the
 * queue mutex and signals, and never calls CUDA.
 */
#define _GNU_SOURCE
#include "async.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "driver.h"
#include "engine.h"
#include "gpu.h"
#include "internal.h"
#include "log.h"

/* q_lock protects head, tail, every op's links and queued flag, threads,
 * nthreads and stopping.  It is never held while an op runs. */
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;
static struct async_op *head, *tail;
static pthread_t *threads;
static int nthreads;
static bool stopping;

static void *executor_main(void *arg)
{
	(void)arg;
	/* A stream operation's application stream is blocked (wait value)
	 * until this thread finishes the I/O: synchronous legacy-stream
	 * copies could queue behind it. */
	engine_thread_no_sync_copies(true);
	pthread_mutex_lock(&q_lock);
	for (;;) {
		while (!head && !stopping)
			pthread_cond_wait(&q_cv, &q_lock);
		if (!head)
			break; /* stopping, and nothing left */
		struct async_op *op = head;
		head = op->next;
		if (head)
			head->prev = NULL;
		else
			tail = NULL;
		op->queued = false;
		op->next = op->prev = NULL;
		pthread_mutex_unlock(&q_lock);

		driver_adopt();
		op->run(op); /* may free op */
		driver_unadopt();
		driver_release();

		pthread_mutex_lock(&q_lock);
	}
	pthread_mutex_unlock(&q_lock);
	return NULL;
}

static int wanted_threads(void)
{
	long n = ocf_online_cpus();
	n = OCF_MAX(n, 4);
	n = OCF_MIN(n, 16);
	if (ocf_cfg.max_io_queue_depth && n > (long)ocf_cfg.max_io_queue_depth)
		n = (long)ocf_cfg.max_io_queue_depth;
	const char *env = ocf_getenv("OPENCUFILE_ASYNC_THREADS");
	if (env && *env)
		n = strtol(env, NULL, 10);
	return (int)OCF_MIN(OCF_MAX(n, 1), 256);
}

int async_start(void)
{
	int r = 0;
	pthread_mutex_lock(&q_lock);
	if (nthreads == 0) {
		int want = wanted_threads();
		threads = calloc((size_t)want, sizeof(*threads));
		stopping = false;
		for (int i = 0; threads && i < want; i++) {
			if (pthread_create(&threads[i], NULL, executor_main, NULL) != 0)
				break;
			nthreads++;
		}
		if (nthreads == 0) {
			/* No memory for the thread table, or no thread could
			 * be created (EAGAIN: a resource limit). */
			r = threads ? OCF_ERR(CU_FILE_INTERNAL_ERROR) : OCF_ERR(CU_FILE_NOMEM_ERROR);
			free(threads);
			threads = NULL;
			log_error("cannot start the asynchronous I/O threads");
		} else {
			log_debug("%d asynchronous I/O threads started", nthreads);
		}
	}
	pthread_mutex_unlock(&q_lock);
	return r;
}

int async_thread_count(void)
{
	pthread_mutex_lock(&q_lock);
	int n = nthreads;
	pthread_mutex_unlock(&q_lock);
	return n;
}

void async_submit_list(struct async_op *first)
{
	if (!first)
		return;
	pthread_mutex_lock(&q_lock);
	int n = 0;
	for (struct async_op *op = first, *next; op; op = next) {
		next = op->next;
		op->next = NULL;
		op->prev = tail;
		op->queued = true;
		if (tail)
			tail->next = op;
		else
			head = op;
		tail = op;
		n++;
	}
	if (n == 1)
		pthread_cond_signal(&q_cv);
	else
		pthread_cond_broadcast(&q_cv);
	pthread_mutex_unlock(&q_lock);
}

void async_submit(struct async_op *op)
{
	op->next = NULL;
	async_submit_list(op);
}

bool async_remove(struct async_op *op)
{
	pthread_mutex_lock(&q_lock);
	bool was = op->queued;
	if (was) {
		if (op->prev)
			op->prev->next = op->next;
		else
			head = op->next;
		if (op->next)
			op->next->prev = op->prev;
		else
			tail = op->prev;
		op->next = op->prev = NULL;
		op->queued = false;
	}
	pthread_mutex_unlock(&q_lock);
	return was;
}

void async_shutdown(void)
{
	pthread_mutex_lock(&q_lock);
	stopping = true;
	pthread_cond_broadcast(&q_cv);
	int n = nthreads;
	pthread_t *t = threads;
	pthread_mutex_unlock(&q_lock);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_lock(&q_lock);
	free(threads);
	threads = NULL;
	nthreads = 0;
	stopping = false;
	pthread_mutex_unlock(&q_lock);
}
