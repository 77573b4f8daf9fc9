/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async.c - the asynchronous executor: a pool of threads with one FIFO.
 *
 * DESIGN
 * Batch entries and stream operations are both "run I/O later, on another
 * thread, then complete".  Each family has its own executor (the same code,
 * two instances): a doubly linked FIFO of struct async_op under one mutex,
 * and N threads (OPENCUFILE_ASYNC_THREADS, default the CPU budget,
 * cpu_budget.h, clamped to [2, 16] and to execution.max_io_queue_depth)
 * that take the head and call op->run().  The engine below them already splits large
 * requests over its own helpers, so N bounds how many requests are in
 * flight, not how many threads touch one request.  Why two: batch entries
 * copy through staging lanes (CUDA calls, which the real driver holds back
 * while another thread's cuMemFree waits for a stream that waits for us),
 * while stream operations never call CUDA on these threads; one shared FIFO
 * would let a stream operation wait behind batch work that waits, in the
 * driver, for that very stream operation.
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
 *
 * Awake threads (batch executor only): a thread that has just run an
 * operation marked spin_after (a small batch job's, batch.c) polls the
 * FIFO for spin_ns (OPENCUFILE_BATCH_SPIN_US, default
 * 50 us) before it sleeps, while fewer than spin_cap threads poll
 * (OPENCUFILE_BATCH_SPINNERS, default a quarter of the CPU budget, at most
 * 4), so an application that submits its next batch as soon as the last one
 * completed finds threads that start in well under a microsecond instead of
 * the ~15 us (p50) a sleeping thread takes to run once woken on the H200
 * machine.  Few, never all: every spinning thread holds a CPU that the
 * submitter, the woken threads and the application need.  `spinning`
 * (under the lock) counts them; a submission to an empty FIFO signals only
 * the threads the spinners cannot supply, and a spinner re-checks the FIFO
 * under the lock before it sleeps, so an operation it was counted for is
 * never left without a thread.
 *
 * Wake-ups: a submission wakes the threads it needs after it released the
 * FIFO's lock, with one broadcast where it needs every idle thread.  Made
 * under the lock, each woken thread, and each polling one, first blocked on
 * that lock until the submitter's last signal, then the threads took it one
 * after another, a sleep and a wake-up each: on the H200 machine the
 * threads of a batch of 8 entries started 18-31 us after Submit (the
 * profile's batch timeline), the first 4-6 us after it once woken after the
 * lock.  (The sixteen threads of a batch of 128 still start ~10 us apart,
 * for a reason not known yet: not the lock, not GetStatus's polling, not
 * one thread making every wake-up.  Handing each woken thread its
 * operation, so that none takes the FIFO's lock after its wake-up - idle
 * threads asleep on one futex word, each with its own bit of a
 * FUTEX_WAKE_BITSET mask - was measured and not kept: every batch row
 * level with these wake-ups.)  A waiter counted idle that has
 * meanwhile left its wait (its bounded wait ran out, and it took an
 * operation) makes a wake-up find nobody, which loses nothing: every thread
 * re-checks the FIFO before it waits, and takes operations until it is
 * empty.  The lock is an adaptive one (it spins briefly before it sleeps):
 * threads woken together each hold it for a fraction of a microsecond, and
 * one that slept on it would wait a wake-up's 15 us.
 */
#define _GNU_SOURCE
#include "async.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "cpu_budget.h"
#include "driver.h"
#include "engine.h"
#include "gpu.h"
#include "internal.h"
#include "log.h"
#include "profile.h"

struct async_exec {
	const char *name;
	bool cuda; /* its operations call CUDA (batch) or never do (streams) */
	/* Grows a thread for every operation that would otherwise wait in the
	 * FIFO (up to ELASTIC_MAX): a stream operation may wait, on its
	 * thread, for its submitter to queue its commands, while the stream
	 * of another operation waits for a thread (see stream.c). */
	bool elastic;
	/* lock protects head, tail, queued, every op's links and queued flag,
	 * threads, nthreads, cap, idle and stopping.  It is never held while
	 * an op runs. */
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct async_op *head, *tail;
	int queued; /* ops in the FIFO */
	pthread_t *threads;
	int nthreads, cap;
	int idle;     /* threads waiting for an op */
	int starting; /* threads created that have not taken the lock yet */
	int spinning; /* threads polling `nonempty` (see DESIGN) */
	bool stopping;
	uint64_t spin_ns; /* set by async_start; 0: sleep at once */
	int spin_cap;
	atomic_bool nonempty;	  /* head != NULL, for the spinners */
	atomic_ulong polled_ops; /* operations a thread took while polling */
};

#define ELASTIC_MAX 1024

/* Adaptive where glibc has it (see Wake-ups). */
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
#define EXEC_LOCK_INIT PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
#else
#define EXEC_LOCK_INIT PTHREAD_MUTEX_INITIALIZER
#endif

struct async_exec async_batch_exec = {
	.name = "batch", .cuda = true, .lock = EXEC_LOCK_INIT, .cv = PTHREAD_COND_INITIALIZER};
struct async_exec async_stream_exec = {.name = "stream",
				       .cuda = false,
				       .elastic = true,
				       .lock = EXEC_LOCK_INIT,
				       .cv = PTHREAD_COND_INITIALIZER};

#ifdef OCF_FAULT_INJECTION
#include "fault.h"
/* fault.h's test control: defined here, where the count is. */
OCF_EXPORT unsigned long ocf_fault_polled_batch_ops(void)
{
	return atomic_load_explicit(&async_batch_exec.polled_ops, memory_order_relaxed);
}
#endif

/* The FIFO's head changed (lock held). */
static void head_changed(struct async_exec *ex)
{
	atomic_store_explicit(&ex->nonempty, ex->head != NULL, memory_order_release);
}

static void *executor_main(void *arg)
{
	struct async_exec *ex = arg;
	prof_name_thread(ex->cuda ? "cufile-batch" : "cufile-stream", 0);
	/* A stream operation's application stream may be blocked (wait
	 * value) until I/O of ours finishes: a copy on a blocking stream made
	 * by a batch thread could queue behind it. */
	engine_thread_nonblocking_copies(ex->cuda);
	engine_thread_no_cuda(!ex->cuda);
	bool spin = false; /* poll before sleeping: an operation just ran */
	bool polled = false;
	pthread_mutex_lock(&ex->lock);
	ex->starting--;
	for (;;) {
		while (spin && !ex->head && !ex->stopping && ex->spinning < ex->spin_cap) {
			spin = false;
			ex->spinning++;
			pthread_mutex_unlock(&ex->lock);
			ocf_poll_flag(&ex->nonempty, ex->spin_ns);
			pthread_mutex_lock(&ex->lock);
			ex->spinning--;
			polled = true;
		}
		spin = false;
		if (!ex->head)
			polled = false;
		ex->idle++;
		while (!ex->head && !ex->stopping) {
			/* Bounded: a wake-up that glibc's condition variable
			 * loses (its bug 25847, pthread_cond_signal under
			 * contention) delays an operation by at most this
			 * long instead of leaving it queued for good. */
			struct timespec dl;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_nsec += 100 * 1000 * 1000;
			if (dl.tv_nsec >= 1000000000L) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&ex->cv, &ex->lock, &dl);
		}
		ex->idle--;
		if (!ex->head)
			break; /* stopping, and nothing left */
		struct async_op *op = ex->head;
		ex->queued--;
		ex->head = op->next;
		if (ex->head)
			ex->head->prev = NULL;
		else
			ex->tail = NULL;
		head_changed(ex);
		op->queued = false;
		op->next = op->prev = NULL;
		pthread_mutex_unlock(&ex->lock);
		if (polled)
			atomic_fetch_add_explicit(&ex->polled_ops, 1, memory_order_relaxed);
		polled = false;

		bool spin_after = op->spin_after; /* op may be gone after run() */
		driver_adopt();
		prof_begin(ex->cuda ? PROF_BATCH : PROF_STREAM);
		op->run(op); /* may free op */
		prof_end();
		driver_unadopt();
		driver_release();
		spin = spin_after && ex->spin_ns > 0;

		pthread_mutex_lock(&ex->lock);
	}
	pthread_mutex_unlock(&ex->lock);
	return NULL;
}

static int wanted_threads(void)
{
	/* The CPU budget (cpu_budget.h), clamped to [2, 16]: at least two, so
	 * that one operation waiting for the device (a stream operation
	 * waiting for its submitter) never holds up the rest of the FIFO; more
	 * than the budget would only take turns on its CPUs. */
	long n = ocf_cpu_budget();
	n = OCF_MAX(n, 2);
	n = OCF_MIN(n, 16);
	if (n > (long)OCF_EFF(OCF_K_EXEC_MAX_IO_QUEUE_DEPTH))
		n = (long)OCF_EFF(OCF_K_EXEC_MAX_IO_QUEUE_DEPTH);
	if (ocf_cfg.tuning.async_threads >= 0)
		n = ocf_cfg.tuning.async_threads;
	return (int)OCF_MIN(OCF_MAX(n, 1), 256);
}

/* Awake threads of the batch executor (see DESIGN). */
static void spin_config(struct async_exec *ex, int nthreads)
{
	ex->spin_ns = 0;
	ex->spin_cap = 0;
	if (!ex->cuda)
		return;
	long cap = OCF_MIN(OCF_MAX(ocf_cpu_budget() / 4, 1), 4);
	if (ocf_cfg.tuning.batch_spinners >= 0)
		cap = ocf_cfg.tuning.batch_spinners;
	ex->spin_cap = (int)OCF_MIN(cap, (long)nthreads);
	ex->spin_ns = ocf_cfg.tuning.batch_spin_ns;
	if (ex->spin_cap <= 0)
		ex->spin_ns = 0;
}

int async_start(struct async_exec *ex)
{
	int r = 0;
	pthread_mutex_lock(&ex->lock);
	if (ex->nthreads == 0) {
		int want = wanted_threads();
		spin_config(ex, want);
		ex->cap = ex->elastic ? ELASTIC_MAX : want;
		ex->threads = calloc((size_t)ex->cap, sizeof(*ex->threads));
		ex->stopping = false;
		for (int i = 0; ex->threads && i < want; i++) {
			if (pthread_create(&ex->threads[i], NULL, executor_main, ex) != 0)
				break;
			ex->nthreads++;
			ex->starting++;
		}
		if (ex->nthreads == 0) {
			/* No memory for the thread table, or no thread could
			 * be created (EAGAIN: a resource limit). */
			r = ex->threads ? OCF_ERR(CU_FILE_INTERNAL_ERROR) : OCF_ERR(CU_FILE_NOMEM_ERROR);
			free(ex->threads);
			ex->threads = NULL;
			log_error("cannot start the asynchronous %s I/O threads", ex->name);
		} else {
			log_debug("%d asynchronous %s I/O threads started, up to %d polling %llu us after an operation",
				  ex->nthreads, ex->name, ex->spin_cap, (unsigned long long)(ex->spin_ns / 1000));
		}
	}
	pthread_mutex_unlock(&ex->lock);
	return r;
}

int async_thread_count(struct async_exec *ex)
{
	pthread_mutex_lock(&ex->lock);
	int n = ex->nthreads;
	pthread_mutex_unlock(&ex->lock);
	return n;
}

void async_submit_list(struct async_exec *ex, struct async_op *first)
{
	if (!first)
		return;
	pthread_mutex_lock(&ex->lock);
	int n = 0;
	/* Spinners poll only an empty FIFO; they take the first operations. */
	int supplied = ex->head ? 0 : ex->spinning;
	for (struct async_op *op = first, *next; op; op = next) {
		next = op->next;
		op->next = NULL;
		op->prev = ex->tail;
		op->queued = true;
		if (ex->tail)
			ex->tail->next = op;
		else
			ex->head = op;
		ex->tail = op;
		n++;
	}
	ex->queued += n;
	head_changed(ex);
	/* Elastic: no operation waits for a thread.  Creating one takes no
	 * lock of the CUDA driver, so this may run on CUDA's callback thread;
	 * if it fails (a resource limit) the FIFO waits for a thread. */
	while (ex->elastic && !ex->stopping && ex->queued > ex->idle + ex->starting + ex->spinning && ex->nthreads > 0 &&
	       ex->nthreads < ex->cap) {
		if (pthread_create(&ex->threads[ex->nthreads], NULL, executor_main, ex) != 0)
			break;
		ex->nthreads++;
		ex->starting++;
	}
	/* One wake-up per operation, or one broadcast (one system call)
	 * where every idle thread is wanted, made after the lock is released
	 * (see Wake-ups). */
	int wake = OCF_MIN(n - supplied, ex->idle);
	bool all = wake > 0 && wake >= ex->idle;
	pthread_mutex_unlock(&ex->lock);
	if (all)
		pthread_cond_broadcast(&ex->cv);
	else
		for (int i = 0; i < wake; i++)
			pthread_cond_signal(&ex->cv);
}

void async_submit(struct async_exec *ex, struct async_op *op)
{
	op->next = NULL;
	async_submit_list(ex, op);
}

bool async_remove(struct async_exec *ex, struct async_op *op)
{
	pthread_mutex_lock(&ex->lock);
	bool was = op->queued;
	if (was) {
		ex->queued--;
		if (op->prev)
			op->prev->next = op->next;
		else
			ex->head = op->next;
		if (op->next)
			op->next->prev = op->prev;
		else
			ex->tail = op->prev;
		op->next = op->prev = NULL;
		op->queued = false;
		head_changed(ex);
	}
	pthread_mutex_unlock(&ex->lock);
	return was;
}

static void exec_shutdown(struct async_exec *ex)
{
	pthread_mutex_lock(&ex->lock);
	ex->stopping = true;
	pthread_cond_broadcast(&ex->cv);
	int n = ex->nthreads;
	pthread_t *t = ex->threads;
	pthread_mutex_unlock(&ex->lock);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_lock(&ex->lock);
	free(ex->threads);
	ex->threads = NULL;
	ex->nthreads = 0;
	ex->queued = ex->idle = ex->starting = ex->spinning = 0;
	ex->stopping = false;
	pthread_mutex_unlock(&ex->lock);
}

void async_shutdown(void)
{
	exec_shutdown(&async_batch_exec);
	exec_shutdown(&async_stream_exec);
}
