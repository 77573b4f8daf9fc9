/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.c - the parallel, pipelined data path.
 *
 * DESIGN
 * A request is cut into chunks.  Chunk 0 ends where the file becomes
 * aligned, so every later chunk starts on an O_DIRECT boundary; chunks are
 * at most the lane's staging size and, for medium requests, smaller, so that
 * every worker gets a share (the sizes, and every other choice of a
 * request's path: planner.c).  The calling thread
 * and up to N helper threads (the worker pool) claim chunks with one atomic
 * counter; no chunk list is built.  Each participant holds a lane (gpu.h): OCF_LANE_DEPTH pinned
 * buffers, a stream and an event per buffer.  For a device read it runs
 *     pread(chunk k -> buffer j); cuMemcpyHtoDAsync(buffer j); record ev[j]
 * and before refilling buffer j waits for ev[j], so the file read of chunk
 * k+1 overlaps the PCIe copy of chunk k.  Device writes are the mirror
 * image (copy chunk k+1 to the host while chunk k is written).  Host memory
 * is read and written in place by every participant, in parallel.
 *
 * Small requests (one chunk) never leave the calling thread: no hand-off,
 * no wake-up latency.  Many callers with small requests therefore use no
 * helpers, and the pool (one thread per CPU by default) bounds the threads
 * that large requests add, so the machine is not oversubscribed.  A helper
 * that finds no free lane leaves the work to the others instead of waiting,
 * so helpers can never deadlock against callers holding lanes.
 *
 * Results: a participant that hits an error or a short transfer records the
 * chunk index (atomic minimum in `stop`); chunks at or beyond it are not
 * started, chunks before it all complete.  The result is the contiguous
 * prefix: everything before the first failed or short chunk, plus the short
 * chunk's bytes.  A write thus never reports bytes it did not write, and a
 * read never stores outside [target, target + len).
 */
#define _GNU_SOURCE
#include "engine.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "copygroup.h"
#include "cpu_budget.h"
#include "cuda_loader.h"
#include "fileio.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "job.h"
#include "log.h"
#include "planner.h"
#include "profile.h"
#include "stripe.h"
#include "uring.h"
#include "vecio.h"
#include "watchdog.h"

const struct ocf_engine_ops *ocf_engine = &ocf_engine_parallel;


/* ------------------------------------------------------------ worker pool */

/* q_lock protects queue, nworkers, running, shutting_down. */
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;
static struct ocf_job *queue;
static pthread_t *workers;
static int nworkers;
static size_t min_chunk_bytes; /* set by pool_start, read by submitters after it */
static int parallel_max;       /* set by pool_start: participants at once, all requests */
static int request_max;	       /* set by pool_start: participants of one request */

/* Participants moving data now: callers inside submit() and helpers that
 * joined a request.  Helpers are only asked for while this is below
 * parallel_max, so a machine whose callers already keep enough threads busy
 * (8 loader threads) adds no helper threads, and one lone caller gets a few
 * (request_max).  Relaxed: a hint for how many helpers to ask for; a stale
 * value only asks for one helper more or less. */
static atomic_int participants;
static bool running, shutting_down;

/* Helpers that stay awake after a job: a worker that has just finished a
 * job whose spin_ns is set (a lone caller's short striped read, stripe.c),
 * or any job when OPENCUFILE_HELPER_SPIN_US sets helper_spin_ns (tests),
 * polls `queue_nonempty` that long before it sleeps on q_cv,
 * while fewer than the job's spin_cap workers poll, so a caller that issues its next
 * request at once finds helpers that start in well under a microsecond
 * instead of the ~15 us (p50) a sleeping thread takes to run once woken
 * (bench/wakeup, H200 machine).  `spinners` (under q_lock) counts them: a
 * submitter signals q_cv only for the helpers the spinners cannot supply.
 * A spinner re-checks the queue under q_lock before it sleeps, so a job it
 * was counted for is never left without the helper it was promised. */
static uint64_t helper_spin_ns; /* set by pool_start */
static int spinners;		/* under q_lock */
static atomic_bool queue_nonempty;
static atomic_ulong polled_joins; /* jobs a worker joined while polling */
static atomic_ulong striped_beside; /* requests striped while other callers were busy */

#ifdef OCF_FAULT_INJECTION
#include "fault.h"
/* fault.h's test controls: defined here, where the counts are. */
OCF_EXPORT unsigned long ocf_fault_polled_joins(void)
{
	return atomic_load_explicit(&polled_joins, memory_order_relaxed);
}

OCF_EXPORT unsigned long ocf_fault_striped_beside_others(void)
{
	return atomic_load_explicit(&striped_beside, memory_order_relaxed);
}
#endif

static void queue_changed(void)
{
	atomic_store_explicit(&queue_nonempty, queue != NULL, memory_order_release);
}

/* Appends job, which wants job->helpers_wanted helpers, to the queue
 * (q_lock held); returns how many workers to signal once q_lock is
 * released: as many as it wants, not all of them (a broadcast would wake
 * every idle worker to find nothing), less the spinning workers, which come
 * first when the queue was empty. */
static int queue_append_locked(struct ocf_job *job)
{
	int wake = job->helpers_wanted - (queue ? 0 : spinners);
	struct ocf_job **pp = &queue;
	while (*pp)
		pp = &(*pp)->qnext;
	job->qnext = NULL;
	*pp = job;
	job->in_queue = true;
	queue_changed();
	return wake;
}

/* Takes job off the queue if it is still there (q_lock held). */
static void queue_remove_locked(struct ocf_job *job)
{
	if (!job->in_queue)
		return;
	for (struct ocf_job **pp = &queue; *pp; pp = &(*pp)->qnext) {
		if (*pp == job) {
			*pp = job->qnext;
			break;
		}
	}
	job->in_queue = false;
	job->helpers_wanted = 0;
	queue_changed();
}

/* Set on the asynchronous executor's threads (async.c): a copy on a
 * blocking stream issued there can queue behind an application stream that
 * is blocked in cuStreamWaitValue32 until this very I/O completes (seen on
 * an H200: a deadlock with the legacy default stream), so requests those
 * threads submit copy on their lanes' non-blocking streams. */
static __thread bool nonblocking_copies;

void engine_thread_nonblocking_copies(bool on)
{
	nonblocking_copies = on;
}

/* Set on the stream executor's threads (async.c): see engine.h. */
static __thread bool no_cuda;

void engine_thread_no_cuda(bool on)
{
	no_cuda = on;
}

static bool run_job(struct ocf_job *job, struct ocf_lane *lane, bool helper);

/* Returns a lane after use; one whose stream could not be drained is
 * destroyed rather than handed to the next request. */
static void lane_release(struct ocf_lane *lane, bool clean)
{
	if (clean)
		pool_put(lane);
	else
		pool_discard(lane);
}

static void *worker_main(void *arg)
{
	prof_name_thread("cufile-io-%d", (int)(intptr_t)arg);
	/* How long to poll after the job just finished (0: sleep at once),
	 * and how many helpers may poll at once. */
	uint64_t spin_ns = 0;
	int spin_cap = 0;
	bool polled = false; /* the queue found non-empty by polling */
	pthread_mutex_lock(&q_lock);
	for (;;) {
		while (!queue && !shutting_down) {
			if (spin_ns && spinners < spin_cap) {
				uint64_t len = spin_ns;
				spin_ns = 0;
				spinners++;
				pthread_mutex_unlock(&q_lock);
				ocf_poll_flag(&queue_nonempty, len);
				pthread_mutex_lock(&q_lock);
				spinners--;
				polled = true;
				continue;
			}
			polled = false;
			pthread_cond_wait(&q_cv, &q_lock);
		}
		if (shutting_down)
			break;
		struct ocf_job *job = queue;
		if (polled)
			atomic_fetch_add_explicit(&polled_joins, 1, memory_order_relaxed);
		polled = false;
		if (--job->helpers_wanted == 0) {
			queue = job->qnext;
			job->in_queue = false;
			queue_changed();
		}
		/* Joining under q_lock: the caller removes the request from the
		 * queue under q_lock before it waits for active == 0, so it
		 * cannot miss this helper. */
		pthread_mutex_lock(&job->lock);
		job->active++;
		pthread_mutex_unlock(&job->lock);
		pthread_mutex_unlock(&q_lock);
		/* Read now: the job may be gone once active drops below. */
		uint64_t job_spin_ns = helper_spin_ns ? helper_spin_ns : job->spin_ns;
		int job_spin_cap = helper_spin_ns ? INT_MAX : job->spin_cap;

		prof_begin(PROF_ENGINE);
		if (job->queued_ns)
			prof_time(PROF_T_START, job->queued_ns);
		/* A task (engine_task_post) is no request's participant: it
		 * does not count among the callers' busy participants. */
		if (!job->task)
			atomic_fetch_add_explicit(&participants, 1, memory_order_relaxed);
		struct ocf_lane *lane = NULL;
		if (job->task) {
			job->task(job);
		} else if (job->striped) {
			stripe_run_helper(job); /* no lane: it reads into the caller's */
		} else if (!job->pool) {
			run_job(job, NULL, true);
		} else if (pool_try_get(job->pool, &lane) == 0) {
			lane_release(lane, run_job(job, lane, true));
		}
		if (!job->task)
			atomic_fetch_sub_explicit(&participants, 1, memory_order_relaxed);
		prof_end();

		pthread_mutex_lock(&job->lock);
		if (--job->active == 0)
			pthread_cond_broadcast(&job->cv);
		pthread_mutex_unlock(&job->lock);
		spin_ns = job_spin_ns;
		spin_cap = job_spin_cap;
		pthread_mutex_lock(&q_lock);
	}
	pthread_mutex_unlock(&q_lock);
	return NULL;
}

/* Worker threads: one per CPU of the process's budget (cpu_budget.h) up
 * to 16 (warm page-cache reads scale to about that many threads), or
 * execution.max_io_threads if larger, but never more than the budget:
 * every worker copies data, and workers beyond the CPUs the process may
 * use only take turns on them.  NVIDIA's stock value (4) sizes its own
 * compatible-mode pool and would starve this engine, so it is a lower
 * bound here, within the budget.  OPENCUFILE_IO_THREADS sets the number
 * exactly (0: no helpers; tests). */
static int configured_threads(void)
{
	long budget = ocf_cpu_budget();
	long n = OCF_MIN(budget, 16);
	if (n < (long)OCF_EFF(OCF_K_EXEC_MAX_IO_THREADS))
		n = OCF_MIN((long)OCF_EFF(OCF_K_EXEC_MAX_IO_THREADS), budget);
	if (ocf_cfg.tuning.io_threads >= 0)
		n = ocf_cfg.tuning.io_threads;
	if (n < 0)
		n = 0;
	if (n > 256)
		n = 256;
	return (int)n;
}

int engine_participants(void)
{
	return configured_threads() + 1;
}

/* Starts the pool at the first request that can use it.  Returns the
 * number of helper threads available. */
static int pool_start(void)
{
	pthread_mutex_lock(&q_lock);
	if (!running) {
		int want = configured_threads();
		workers = calloc((size_t)(want ? want : 1), sizeof(*workers));
		nworkers = 0;
		shutting_down = false;
		for (int i = 0; workers && i < want; i++) {
			if (pthread_create(&workers[i], NULL, worker_main, (void *)(intptr_t)i) != 0)
				break;
			nworkers++;
		}
		min_chunk_bytes = ocf_cfg.min_chunk_kb * 1024;
		/* Participants at once: one per CPU of the budget up to the
		 * pool's size; of one request: execution.max_request_parallelism
		 * (NVIDIA's default 4 parallel parts), 0 meaning no bound.
		 * OPENCUFILE_PARALLEL overrides the first (tests). */
		parallel_max = (int)OCF_MIN(ocf_cpu_budget(), (long)nworkers + 1);
		if (ocf_cfg.tuning.parallel >= 0)
			parallel_max = ocf_cfg.tuning.parallel;
		request_max = OCF_EFF(OCF_K_EXEC_MAX_REQUEST_PARALLELISM)
				  ? (int)OCF_MIN(OCF_EFF(OCF_K_EXEC_MAX_REQUEST_PARALLELISM), 256)
				  : nworkers + 1;
		if (parallel_max < 1)
			parallel_max = 1;
		if (request_max < 1)
			request_max = 1;
		helper_spin_ns = config_env(OCF_E_HELPER_SPIN_US) * 1000;
		running = true;
		log_debug("engine: %d worker thread(s), at most %d participants at once and %d per request, "
			  "chunks of "
			  "at least %zu KiB, helpers polling %llu us after a job",
			  nworkers, parallel_max, request_max, min_chunk_bytes / 1024,
			  (unsigned long long)(helper_spin_ns / 1000));
	}
	int n = nworkers;
	pthread_mutex_unlock(&q_lock);
	return n;
}

static void engine_shutdown(void)
{
	pthread_mutex_lock(&q_lock);
	if (!running) {
		pthread_mutex_unlock(&q_lock);
		return;
	}
	shutting_down = true;
	pthread_cond_broadcast(&q_cv);
	pthread_mutex_unlock(&q_lock);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i], NULL);
	pthread_mutex_lock(&q_lock);
	/* Tasks still queued (their owners quiesce them when they go) must
	 * not reach the workers of the next open. */
	for (struct ocf_job *j = queue, *next; j; j = next) {
		next = j->qnext;
		if (j->task)
			queue_remove_locked(j);
	}
	free(workers);
	workers = NULL;
	nworkers = 0;
	running = false;
	shutting_down = false;
	pthread_mutex_unlock(&q_lock);
}

/* ------------------------------------------------------------------ tasks */

bool engine_task_post(struct ocf_job *job, int helpers)
{
	if (helpers <= 0 || pool_start() == 0)
		return false;
	pthread_mutex_lock(&q_lock);
	if (shutting_down) {
		pthread_mutex_unlock(&q_lock);
		return false;
	}
	int wake = helpers;
	if (job->in_queue) {
		job->helpers_wanted += helpers;
	} else {
		job->helpers_wanted = helpers;
		wake = queue_append_locked(job);
	}
	pthread_mutex_unlock(&q_lock);
	for (int i = 0; i < wake; i++)
		pthread_cond_signal(&q_cv);
	return true;
}

void engine_task_quiesce(struct ocf_job *job)
{
	pthread_mutex_lock(&q_lock);
	queue_remove_locked(job);
	pthread_mutex_unlock(&q_lock);
	pthread_mutex_lock(&job->lock);
	while (job->active > 0)
		pthread_cond_wait(&job->cv, &job->lock);
	pthread_mutex_unlock(&job->lock);
}

static long cuda_fail(const char *what, CUresult r)
{
	log_error("%s failed: %s", what, cuda_error_name(r));
	return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
}

/* Queues copies of n bytes between staging memory and bytes [at, at+n) of
 * the request's device memory on `stream`.  A vectored request takes one
 * copy per piece the range touches. */
static CUresult dev_copy(const struct ocf_io *io, bool to_dev, size_t at, char *host, size_t n,
			 CUstream stream)
{
	size_t done = 0;
	for (size_t i = io->segs ? seg_find(io, at) : 0; done < n; i++) {
		size_t k = n - done;
		CUdeviceptr d = io->segs ? (CUdeviceptr)seg_part(io, i, at + done, k, &k) : io->t.dev + at;
		CUresult r = to_dev ? ocf_cu.MemcpyHtoDAsync(d, host + done, k, stream)
				    : ocf_cu.MemcpyDtoHAsync(host + done, d, k, stream);
		if (r != CUDA_SUCCESS)
			return r;
		done += k;
	}
	return CUDA_SUCCESS;
}

static void host_chunks(struct ocf_job *job, struct ocf_lane *lane)
{
	const struct ocf_io *io = job->io;
	size_t idx;
	while (job_claim(job, &idx)) {
		size_t at = job_chunk_start(job, idx), n = job_chunk_len(job, idx);
		off_t off = io->off + (off_t)at;
		char *mem = io->segs ? NULL : io->t.host + at;
		ssize_t r;
		uint64_t t0 = prof_now();
		if (io->segs) {
			r = host_vec_needs_stage(io) ? host_vec_staged(job, lane, at, n, off)
						     : host_vec_syscalls(job, at, n, off);
		} else if (!job->write) {
			r = fio_read(io->h, mem, n, off, lane ? &lane->bufs[0] : NULL);
		} else if (fio_direct_compatible(io->h, mem, off)) {
			r = fio_write(io->h, mem, n, off, NULL, job->wprep);
		} else {
			char *stage = lane->bufs[0].buf + fio_stage_skew(io->h, off);
			memcpy(stage, mem, n);
			r = fio_write(io->h, stage, n, off, NULL, job->wprep);
		}
		prof_time(PROF_T_FILE, t0);
		if (r > 0)
			prof_bytes((size_t)r);
		if (r < 0) {
			job_record_error(job, idx, r);
			return;
		}
		if ((size_t)r < n) {
			job_record_short(job, idx, (size_t)r);
			return;
		}
	}
}

/* The stream a participant copies on: the request decides, so that engine
 * helpers serving an executor's request also avoid the legacy stream. */
static CUstream lane_stream(const struct ocf_job *job, const struct ocf_lane *lane)
{
	return job->nonblocking ? lane->nb_stream : lane->stream;
}

/* Copies a chunk between buffer j of the lane and the device.  Memory of
 * the GPU's primary context: queued on the lane's stream with an event of
 * buffer j recorded after it (gpu_lane_event: a polled one for a short
 * copy, a sleeping one for a long one), returned in *ev for wait_copy.
 * Memory of another context (which the lane's stream cannot carry): on
 * that context's legacy stream, ordered with its work as a synchronous copy
 * would be (on executor threads too), and waited for at once with
 * cuStreamSynchronize, which holds no lock of the driver while it waits:
 * a synchronous cuMemcpyHtoD/DtoH to pinned memory keeps the context's
 * lock until the copy is done (docs/reliability.md, "Hangs", cause 4). */
static CUresult chunk_copy(const struct ocf_job *job, struct ocf_lane *lane, int j, bool to_dev, size_t at,
			   char *host, size_t n, CUevent *ev)
{
	const struct ocf_io *io = job->io;
	CUstream stream = io->t.use_stream ? lane_stream(job, lane) : CU_STREAM_LEGACY;
	uint64_t t0 = prof_now();
	CUresult r = dev_copy(io, to_dev, at, host, n, stream);
	if (r != CUDA_SUCCESS)
		return r;
	if (!io->t.use_stream)
		return ocf_cu.StreamSynchronize(stream);
	CUevent e = gpu_lane_event(lane, j, n);
	r = ocf_cu.EventRecord(e, stream);
	prof_time(PROF_T_SUBMIT, t0);
	if (r == CUDA_SUCCESS)
		*ev = e;
	return r;
}

struct pending {
	size_t idx;
	int buf;
	bool busy;
	CUevent ev;   /* recorded after the copy (gpu_lane_event, or its group's) */
	size_t bytes; /* of the copy in flight (the wait's polling budget) */
	struct ocf_copy_group *grp; /* the group the copy went in, or NULL */
};

/* Waits for the copy of one pending buffer of the lane; records a
 * failure. */
static bool wait_copy(struct ocf_job *job, struct ocf_lane *lane, struct pending *p)
{
	p->busy = false;
	if (!job->io->t.use_stream)
		return true; /* waited for when it was queued (chunk_copy) */
	CUresult r = gpu_event_wait(p->ev, p->bytes);
	if (p->grp) {
		/* A failed wait does not cancel the copy, and it went on a
		 * stream run_job does not drain: drain that one now, or the
		 * lane's buffer may still be read. */
		if (r != CUDA_SUCCESS && cg_drain(p->grp) != CUDA_SUCCESS)
			lane->unsafe = true;
		cg_release(gpu_copy_groups(job->io->t.gpu), p->grp);
		p->grp = NULL;
	}
	if (r != CUDA_SUCCESS) {
		job_record_error(job, p->idx,
			     cuda_fail(job->write ? "device to host copy" : "host to device copy", r));
		return false;
	}
	return true;
}

/* Queues the host-to-device copy of a staged chunk read (n bytes at src,
 * for the request's bytes from `at`): with other threads' small copies in
 * one grouped call (copygroup.c) when enough participants are busy, else
 * alone (chunk_copy).  Sets p's event (and group) to wait for. */
static CUresult read_copy(const struct ocf_job *job, struct ocf_lane *lane, int j, size_t at, char *src, size_t n,
			  int busy, struct pending *p)
{
	const struct ocf_io *io = job->io;
	p->ev = NULL;
	p->grp = NULL;
	p->bytes = n;
	if (io->t.use_stream && !job->nonblocking && !io->segs && n <= OCF_GROUP_COPY_MAX) {
		struct ocf_copy_groups *cg = gpu_copy_groups(io->t.gpu);
		if (cg_wanted(cg, busy)) {
			CUresult err = CUDA_SUCCESS;
			switch (cg_copy(cg, io->t.dev + at, src, n, job->nchunks == 1, &p->ev, &p->grp, &p->bytes, &err)) {
			case CG_GROUPED:
				return CUDA_SUCCESS;
			case CG_FAILED:
				lane->unsafe = true; /* the group's stream could not be drained */
				return err;
			case CG_ALONE:
				break;
			}
		}
	}
	return chunk_copy(job, lane, j, true, at, src, n, &p->ev);
}

/* A staged chunk's file read is done (got: bytes or an error): copy it to
 * the device.  Returns false when the participant must stop claiming. */
static bool read_chunk_done(struct ocf_job *job, struct ocf_lane *lane, int j, struct pending *p, ssize_t got)
{
	const struct ocf_io *io = job->io;
	size_t at = job_chunk_start(job, p->idx), n = job_chunk_len(job, p->idx);
	off_t off = io->off + (off_t)at;
	if (got < 0) {
		job_record_error(job, p->idx, got);
		return false;
	}
	if (got > 0) {
		char *src = lane->bufs[j].buf + fio_stage_skew(io->h, off);
		int busy = atomic_load_explicit(&participants, memory_order_relaxed);
		fio_flush_before_copy(src, (size_t)got, busy);
		CUresult r = read_copy(job, lane, j, at, src, (size_t)got, busy, p);
		p->busy = p->ev != NULL;
		if (r != CUDA_SUCCESS) {
			job_record_error(job, p->idx, cuda_fail("host to device copy", r));
			return false;
		}
	}
	prof_bytes((size_t)got);
	if ((size_t)got < n) {
		job_record_short(job, p->idx, (size_t)got);
		return false;
	}
	return true;
}

/* Is io large enough for the engine to split among participants
 * (execution.min_io_threshold_size_kb)? */
static bool over_split_threshold(const struct ocf_io *io)
{
	return io->len > OCF_EFF(OCF_K_EXEC_MIN_IO_THRESHOLD_SIZE_KB) * 1024;
}

/* File reads a participant keeps in flight on its ring: one per staging
 * buffer, at most execution.max_io_queue_depth. */
static int ring_reads(const struct ocf_lane *lane)
{
	return (int)OCF_MIN((size_t)lane->depth, OCF_EFF(OCF_K_EXEC_MAX_IO_QUEUE_DEPTH));
}

/* Reads chunks into the lane's buffers and copies them to the device.
 * With a ring, up to ring_reads() file reads are in flight at once (their
 * completions come in any order) while earlier chunks are being copied;
 * without, each read is a pread, overlapping the copies of the chunks
 * before it. */
static void device_read_chunks(struct ocf_job *job, struct ocf_lane *lane)
{
	const struct ocf_io *io = job->io;
	struct pending pend[OCF_LANE_DEPTH] = {0};
	struct fio_op ops[OCF_LANE_DEPTH];
	bool reading[OCF_LANE_DEPTH] = {0};
	struct ocf_ring *ring = lane_ring(lane);
	int max_reads = ring ? ring_reads(lane) : 1;
	bool split = over_split_threshold(io);
	int reads = 0, rr = 0;
	bool more = true;
	for (;;) {
		/* Start reads into buffers that are not being read into, in
		 * turn (the oldest copy is the likeliest to be done). */
		while (more && reads < max_reads) {
			int j = -1;
			for (int k = 0; k < lane->depth && j < 0; k++)
				if (!reading[(rr + k) % lane->depth])
					j = (rr + k) % lane->depth;
			if (j < 0)
				break; /* every buffer is being read into */
			size_t idx;
			if (!job_claim(job, &idx)) {
				more = false;
				break;
			}
			rr = (j + 1) % lane->depth;
			/* The claimed chunk comes after every chunk this
			 * participant holds, so a failure recorded here stops
			 * it too. */
			if (pend[j].busy && !wait_copy(job, lane, &pend[j])) {
				more = false;
				break;
			}
			pend[j].idx = idx;
			pend[j].buf = j;
			off_t off = io->off + (off_t)job_chunk_start(job, idx);
			/* Bulk: a split request while more than twice one
			 * request's participants run, the bus full of
			 * pipelined chunks (fileio.h).  A lone caller's
			 * request may take twice request_max participants
			 * (16 MiB: eight, where request_max is 4). */
			fio_bulk_reads(split &&
				       atomic_load_explicit(&participants, memory_order_relaxed) > 2 * request_max);
			uint64_t t0 = prof_now();
			int r = fio_stage_read(io->h, &lane->bufs[j], off, job_chunk_len(job, idx), &ops[j]);
			prof_time(PROF_T_FILE, t0);
			if (r < 0) {
				job_record_error(job, idx, r);
				more = false;
				break;
			}
			if (ring && fio_op_wants_ring(&ops[j]) &&
			    uring_queue(ring, false, ops[j].fd, ops[j].buf, ops[j].len, ops[j].off,
					(uint64_t)j) == 0) {
				reading[j] = true;
				reads++;
				continue;
			}
			t0 = prof_now();
			ssize_t got = fio_op_run(&ops[j]);
			prof_time(PROF_T_FILE, t0);
			if (!read_chunk_done(job, lane, j, &pend[j], fio_stage_read_done(&ops[j], got)))
				more = false;
		}
		if (reads == 0)
			break;
		uint64_t tag;
		ssize_t res;
		uint64_t t0 = prof_now();
		int reaped = uring_reap(ring, &tag, &res);
		prof_time(PROF_T_FILE, t0);
		if (reaped != 0) {
			/* The ring is unusable and its reads in flight are lost
			 * to us: fail the earliest of them. */
			size_t first = job->nchunks;
			for (int k = 0; k < lane->depth; k++)
				if (reading[k] && pend[k].idx < first)
					first = pend[k].idx;
			job_record_error(job, first, -EIO);
			break;
		}
		int j = (int)tag;
		reading[j] = false;
		reads--;
		/* A chunk at or beyond a recorded failure is not copied: its
		 * bytes cannot be reported. */
		if (pend[j].idx >= atomic_load_explicit(&job->stop, memory_order_relaxed))
			continue;
		if (!read_chunk_done(job, lane, j, &pend[j], fio_stage_read_done(&ops[j], res)))
			more = false;
	}
	for (int i = 0; i < OCF_LANE_DEPTH; i++)
		if (pend[i].busy)
			wait_copy(job, lane, &pend[i]);
	fio_bulk_reads(false);
}

/* Writes one staged chunk whose device-to-host copy was issued. */
static bool write_staged_chunk(struct ocf_job *job, struct ocf_lane *lane, struct pending *p)
{
	if (!wait_copy(job, lane, p))
		return false;
	/* A chunk beyond a failure is not written: its bytes could never be
	 * reported. */
	if (p->idx >= atomic_load_explicit(&job->stop, memory_order_relaxed))
		return false;
	const struct ocf_io *io = job->io;
	size_t at = job_chunk_start(job, p->idx), n = job_chunk_len(job, p->idx);
	off_t off = io->off + (off_t)at;
	uint64_t t0 = prof_now();
	ssize_t w =
	    fio_write(io->h, lane->bufs[p->buf].buf + fio_stage_skew(io->h, off), n, off, lane_ring(lane), job->wprep);
	prof_time(PROF_T_FILE, t0);
	if (w > 0)
		prof_bytes((size_t)w);
	if (w < 0) {
		job_record_error(job, p->idx, w);
		return false;
	}
	if ((size_t)w < n) {
		job_record_short(job, p->idx, (size_t)w);
		return false;
	}
	return true;
}

static void device_write_chunks(struct ocf_job *job, struct ocf_lane *lane)
{
	const struct ocf_io *io = job->io;
	/* Ring of issued copies, oldest first. */
	struct pending ring[OCF_LANE_DEPTH];
	int head = 0, count = 0, j = 0;
	bool ok = true;
	size_t idx;
	while (ok && job_claim(job, &idx)) {
		size_t at = job_chunk_start(job, idx), n = job_chunk_len(job, idx);
		off_t off = io->off + (off_t)at;
		char *stage = lane->bufs[j].buf + fio_stage_skew(io->h, off);
		CUevent ev = NULL;
		CUresult r = chunk_copy(job, lane, j, false, at, stage, n, &ev);
		if (r != CUDA_SUCCESS) {
			job_record_error(job, idx, cuda_fail("device to host copy", r));
			break;
		}
		ring[(head + count) % OCF_LANE_DEPTH] =
		    (struct pending){.idx = idx, .buf = j, .busy = true, .ev = ev, .bytes = n};
		count++;
		j = (j + 1) % lane->depth;
		/* Keep one copy in flight while the previous chunk is written. */
		while (ok && count >= 2) {
			ok = write_staged_chunk(job, lane, &ring[head]);
			head = (head + 1) % OCF_LANE_DEPTH;
			count--;
		}
	}
	while (count > 0) {
		if (ok)
			ok = write_staged_chunk(job, lane, &ring[head]);
		else
			wait_copy(job, lane, &ring[head]); /* the buffer must be idle */
		head = (head + 1) % OCF_LANE_DEPTH;
		count--;
	}
}

/* A stream operation's chunks (see struct ocf_ringplan): file I/O into and
 * out of the ring's slots, and a store per chunk that releases the copy the
 * stream has waiting.  No CUDA call: the copies were queued at submission,
 * so nothing here can be held back by the driver's locks. */
static void ring_chunks(struct ocf_job *job)
{
	const struct ocf_io *io = job->io;
	const struct ocf_ringplan *p = io->plan;
	size_t idx;
	while (job_claim(job, &idx)) {
		uint64_t q = p->q0 + idx;
		unsigned s = (unsigned)(q % p->nslots);
		uint32_t g = (uint32_t)(q / p->nslots) + 1;
		size_t at = job_chunk_start(job, idx), n = job_chunk_len(job, idx);
		off_t off = io->off + (off_t)at;
		char *slot = p->mem + (size_t)s * p->slot_bytes;
		if (!p->queued(p, idx)) {
			job_record_error(job, idx, OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR));
			continue;
		}
		/* Where the queued copy expects the chunk's first byte. */
		size_t planned = fio_stage_skew(io->h, p->foff0 + (off_t)at);
		bool live = !p->skip && idx < atomic_load_explicit(&job->stop, memory_order_relaxed);
		if (!job->write) {
			int w = p->wait(p, idx, &p->free[s], g - 1);
			if (w) {
				job_record_error(job, idx, w);
				continue; /* the stream is gone: nothing will copy */
			}
			ssize_t got = 0;
			if (live) {
				struct ocf_slot sl = {.buf = slot, .size = p->slot_bytes, .chunk = p->chunk};
				uint64_t t0 = prof_now();
				got = fio_read_staged(io->h, &sl, off, n);
				prof_time(PROF_T_FILE, t0);
				if (got > 0)
					prof_bytes((size_t)got);
				size_t actual = fio_stage_skew(io->h, off);
				if (got > 0 && actual != planned)
					memmove(slot + planned, slot + actual, (size_t)got);
				if (got < 0)
					job_record_error(job, idx, got);
				else if ((size_t)got < n)
					job_record_short(job, idx, (size_t)got);
			}
			/* Bytes past end of file or a failure: zeros, not the
			 * slot's previous contents. */
			size_t have = got > 0 ? (size_t)got : 0;
			if (have < n)
				memset(slot + planned + have, 0, n - have);
			/* Release: the data is in memory before the GPU sees the
			 * value and copies it. */
			__atomic_store_n(&p->fill[s], g, __ATOMIC_RELEASE);
		} else {
			int w = p->wait(p, idx, &p->fill[s], g);
			if (w) {
				job_record_error(job, idx, w);
				continue;
			}
			if (live) {
				size_t actual = fio_stage_skew(io->h, off);
				if (actual != planned)
					memmove(slot + actual, slot + planned, n);
				uint64_t t0 = prof_now();
				ssize_t r = fio_write(io->h, slot + actual, n, off, NULL, job->wprep);
				prof_time(PROF_T_FILE, t0);
				if (r > 0)
					prof_bytes((size_t)r);
				if (r < 0)
					job_record_error(job, idx, r);
				else if ((size_t)r < n)
					job_record_short(job, idx, (size_t)r);
			}
			__atomic_store_n(&p->free[s], g, __ATOMIC_RELEASE);
		}
	}
}

/* Runs the participant's share.  Returns false when the lane's stream may
 * still hold a copy (a failure left it undrained and draining failed). */
static bool run_job(struct ocf_job *job, struct ocf_lane *lane, bool helper)
{
	const struct ocf_io *io = job->io;
	if (job->plan) {
		ring_chunks(job);
		return true;
	}
	if (!io->t.device) {
		host_chunks(job, lane);
		return true;
	}
	CUresult r = ocf_cu.CtxPushCurrent(io->t.ctx);
	if (r != CUDA_SUCCESS) {
		/* A helper leaves the work to the others; the caller, which
		 * must see every chunk done, reports the failure. */
		size_t idx;
		if (!helper && job_claim(job, &idx))
			job_record_error(job, idx, cuda_fail("cuCtxPushCurrent", r));
		else if (helper)
			log_warn("engine helper: cuCtxPushCurrent failed (%s), leaving the work to others",
				 cuda_error_name(r));
		return true;
	}
	if (job->write)
		device_write_chunks(job, lane);
	else
		device_read_chunks(job, lane);
	/* A ring that failed with transfers in flight may still move data
	 * into or out of the lane's buffers: the lane is not reused. */
	bool clean = !(lane->ring && uring_ring_broken(lane->ring)) && !lane->unsafe;
	/* After a failure, copies this participant issued may still be
	 * queued (a failed event record or wait does not cancel them): drain
	 * the stream, so that nothing lands in the caller's memory after the
	 * call returns and the lane's buffers are idle when reused. */
	if (atomic_load_explicit(&job->stop, memory_order_relaxed) < job->nchunks && io->t.use_stream) {
		r = ocf_cu.StreamSynchronize(lane_stream(job, lane));
		if (r != CUDA_SUCCESS) {
			log_error("staging stream could not be drained (%s): lane discarded",
				  cuda_error_name(r));
			clean = false;
		}
	}
	cuda_ctx_pop();
	return clean;
}

/* --------------------------------------------------------------- entry */

static ssize_t submit_counted(const struct ocf_io *io, bool write, int others);

static ssize_t (*_Atomic read_hook)(const struct ocf_io *io, int others);

void engine_set_read_hook(ssize_t (*fn)(const struct ocf_io *io, int others))
{
	atomic_store_explicit(&read_hook, fn, memory_order_release);
}

static ssize_t submit(const struct ocf_io *io, bool write)
{
	if (no_cuda && io->t.device && !io->plan)
		return OCF_ERR(CU_FILE_CUDA_MEMORY_TYPE_INVALID);
	prof_begin(PROF_CALLER);
	int others = atomic_fetch_add_explicit(&participants, 1, memory_order_relaxed);
	ssize_t r = submit_counted(io, write, others);
	atomic_fetch_sub_explicit(&participants, 1, memory_order_relaxed);
	prof_end();
	return r;
}

/* ------------------------------------------------------- plan and run */

/* How a request runs: chosen once by the planner (planner.c) from a
 * snapshot of the request and what the engine is doing, and carried out by
 * run_request, which chooses nothing.  (A sequential reader's read that its
 * read-ahead window serves never gets here: the read hook serves it first,
 * submit_counted.) */
struct ocf_plan {
	enum plan_path path;
	struct ocf_pool *pool; /* the lanes its participants take (NULL: none) */
	int helpers;	       /* engine helpers asked for */
	size_t chunk, skew0, nchunks;
	struct plan_stripes stripes; /* PLAN_STRIPED */
};

/* The settings the planner reads, as they stand now.  The engine's bounds
 * (parallel_max, request_max) only once pool_start has run on this thread
 * (started): it sets them under q_lock, which orders them for this thread;
 * the planner reads them only where it knows the workers. */
static void plan_settings_now(struct plan_settings *s, bool started)
{
	const struct ocf_stripe_tuning *c = &ocf_cfg.tuning.stripe;
	*s = (struct plan_settings){
	    .parallel_io = ocf_cfg.parallel_io,
	    .split_above = OCF_EFF(OCF_K_EXEC_MIN_IO_THRESHOLD_SIZE_KB) * 1024,
	    .min_chunk = ocf_cfg.min_chunk_kb * 1024,
	    .alone_chunk = ocf_cfg.tuning.alone_chunk_bytes,
	    .host_chunk = ocf_cfg.staging_chunk_kb * 1024,
	    .parallel_max = started ? parallel_max : 0,
	    .request_max = started ? request_max : 0,
	    .lane_depth = OCF_LANE_DEPTH,
	    .max_align = OCF_MAX_ALIGN,
	    .stripes_max = OCF_STRIPES_MAX,
	    .stripe = {.min_bytes = c->min_bytes,
		       .max_bytes = c->max_bytes,
		       .piece = c->piece,
		       .stripe = c->stripe,
		       .participants = c->participants,
		       .callers = c->callers,
		       .spin_ns = c->spin_ns,
		       .spin_below_bytes = c->spin_below_bytes,
		       .spinners = c->spinners},
	};
}

/* The one place a request's plan reads live state: the request and its
 * handle as values, the callers busy, the read-ahead windows on the
 * handle; the staging size of its pool and the workers once the planner
 * asks for them (engine_plan: the pool starts then). */
static void plan_snapshot(const struct ocf_io *io, bool write, int others, struct plan_in *in)
{
	in->rq = (struct plan_request){
	    .write = write,
	    .len = io->len,
	    .off = io->off,
	    .device = io->t.device,
	    .use_stream = io->t.use_stream,
	    .vectored = io->segs != NULL,
	    .vec_staged = io->segs && host_vec_needs_stage(io),
	    .ring = io->plan != NULL,
	    .userspace_fs = io->h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS,
	    .odirect = io->h->odirect,
	    .align = fio_align(io->h),
	    .piece_align = fio_piece_align(io->h, write),
	};
	if (io->plan) {
		in->rq.ring_chunk = io->plan->chunk;
		in->rq.ring_skew0 = io->plan->skew0;
		in->rq.ring_nchunks = io->plan->nchunks;
	}
	in->load = (struct plan_load){
	    .others = others,
	    .helpers = -1,
	    .window_open = __atomic_load_n(&io->h->ra_windows, __ATOMIC_RELAXED) != 0,
	};
}

/* The request's pool: its GPU's lanes, the host pool, or none. */
static struct ocf_pool *plan_pool(const struct ocf_io *io, enum plan_pool kind)
{
	return kind == PLAN_POOL_DEVICE ? &io->t.gpu->pool : kind == PLAN_POOL_HOST ? host_pool() : NULL;
}

static void engine_plan(const struct ocf_io *io, bool write, int others, struct ocf_plan *p)
{
	struct plan_settings set;
	plan_settings_now(&set, false);
	struct plan_in in = {.set = &set};
	struct plan_out out;
	plan_snapshot(io, write, others, &in);
	plan_request(&in, &out);
	while (out.need) {
		if (out.need & PLAN_NEED_ROOM)
			in.load.lane_room = pool_chunk(plan_pool(io, out.pool));
		if (out.need & PLAN_NEED_HELPERS) {
			in.load.helpers = pool_start();
			plan_settings_now(&set, true);
		}
		plan_request(&in, &out);
	}
	if (out.striped_beside)
		atomic_fetch_add_explicit(&striped_beside, 1, memory_order_relaxed);
	*p = (struct ocf_plan){.path = out.path,
			       .pool = plan_pool(io, out.pool),
			       .helpers = out.helpers,
			       .chunk = out.chunk,
			       .skew0 = out.skew0,
			       .nchunks = out.nchunks,
			       .stripes = out.stripes};
}

static ssize_t run_request(const struct ocf_io *io, bool write, const struct ocf_plan *p);

/* submit() once the caller counts as busy; `others`: participants busy
 * before it. */
static ssize_t submit_counted(const struct ocf_io *io, bool write, int others)
{
	/* A sequential reader's next bytes may be in staging already
	 * (readahead.c); the read also tells the read-ahead where it is. */
	ssize_t (*hook)(const struct ocf_io *, int) = atomic_load_explicit(&read_hook, memory_order_acquire);
	if (hook && !write && io->t.device && io->t.use_stream && !io->plan && !io->segs && !nonblocking_copies) {
		ssize_t r = hook(io, others);
		if (r != ENGINE_NOT_SERVED)
			return r;
	}
	struct ocf_plan plan;
	engine_plan(io, write, others, &plan);
	return run_request(io, write, &plan);
}

/* Runs the request as planned: the job set up, helpers asked for, the
 * caller's share done, the helpers waited for, the result. */
static ssize_t run_request(const struct ocf_io *io, bool write, const struct ocf_plan *p)
{
	struct ocf_job job = {.io = io,
			      .write = write,
			      .plan = io->plan,
			      .pool = p->pool,
			      .chunk = p->chunk,
			      .skew0 = p->skew0,
			      .nchunks = p->nchunks,
			      .nonblocking = nonblocking_copies};
	/* A write's preparation, on this stack only for writes (it holds the
	 * request's last 4 KiB: fileio.h).  A write whose pieces must be
	 * serial gets no helper. */
	struct fio_wprep wprep;
	int helpers = p->helpers, refused = 0;
	/* A stream operation released without I/O (skip) touches no file. */
	bool files = !(io->plan && io->plan->skip);
	if (write && files) {
		refused = fio_write_begin(io->h, io->off, io->len, helpers > 0 && p->nchunks > 1, &wprep);
		if (!refused)
			job.wprep = &wprep;
		if (refused || wprep.serial)
			helpers = 0;
	}
	atomic_init(&job.next, 0);
	atomic_init(&job.stop, job.nchunks);
	job.err_idx = job.short_idx = job.nchunks;
	pthread_mutex_init(&job.lock, NULL);
	pthread_cond_init(&job.cv, NULL);
	/* A file system that refuses writes: no chunk is written (a stream
	 * operation's still release the copies waiting for them). */
	if (refused)
		job_record_error(&job, 0, refused);

	/* A striped job reads into the caller's lane: taken before any helper
	 * can see the job. */
	struct ocf_lane *lane = NULL;
	int r = 0;
	uint64_t t0 = prof_now();
	if (p->path == PLAN_STRIPED) {
		r = pool_get(job.pool, &lane);
		prof_time(PROF_T_LANE, t0);
		if (r == 0)
			stripe_setup(&job, &p->stripes, lane);
	}

	bool queued = false;
	if (r == 0 && helpers > 0 && job.nchunks > 1) {
		job.helpers_wanted = (int)OCF_MIN(job.nchunks - 1, (size_t)helpers);
		job.queued_ns = prof_now();
		pthread_mutex_lock(&q_lock);
		int wake = queue_append_locked(&job);
		queued = true;
		pthread_mutex_unlock(&q_lock);
		/* Signalled after the unlock: a worker woken while the caller
		 * still held q_lock would sleep again on the lock and wait for
		 * one more wake-up before it could join. */
		for (int i = 0; i < wake; i++)
			pthread_cond_signal(&q_cv);
	}

	if (r == 0 && p->path == PLAN_STRIPED) {
		lane_release(lane, stripe_run_caller(&job));
	} else if (r == 0) {
		t0 = prof_now();
		if (job.pool)
			r = pool_get(job.pool, &lane);
		prof_time(PROF_T_LANE, t0);
		if (r == 0) {
			bool clean = run_job(&job, lane, false);
			if (lane)
				lane_release(lane, clean);
		}
	}
	if (r != 0) {
		size_t idx;
		if (job_claim(&job, &idx))
			job_record_error(&job, idx, r);
	}

	if (queued) {
		pthread_mutex_lock(&q_lock);
		queue_remove_locked(&job);
		pthread_mutex_unlock(&q_lock);
	}
	t0 = prof_now();
	pthread_mutex_lock(&job.lock);
	if (job.active > 0) {
		watchdog_wait_begin(write ? "cuFileWrite" : "cuFileRead", handle_watch_fd(io->h),
				    io->t.device && io->t.gpu ? io->t.gpu->ordinal : -1,
				    "the engine threads helping with the request");
		while (job.active > 0)
			pthread_cond_wait(&job.cv, &job.lock);
		watchdog_wait_end();
	}
	pthread_mutex_unlock(&job.lock);
	prof_time(PROF_T_HELPERS, t0);

	/* Every chunk before min(err_idx, short_idx) completed in full. */
	ssize_t ret;
	if (job.err_idx <= job.short_idx && job.err_idx < job.nchunks) {
		size_t done = job_chunk_start(&job, job.err_idx);
		ret = done ? (ssize_t)done : job.err;
	} else if (job.short_idx < job.nchunks) {
		ret = (ssize_t)(job_chunk_start(&job, job.short_idx) + job.short_got);
	} else if (atomic_load_explicit(&job.next, memory_order_relaxed) < job.nchunks) {
		/* Nobody could take the work (no lane, no helper). */
		ret = OCF_ERR(CU_FILE_INTERNAL_ERROR);
	} else {
		ret = (ssize_t)io->len;
	}
	if (job.wprep)
		ret = fio_write_end(io->h, &wprep, io->off, io->len, ret);
	pthread_mutex_destroy(&job.lock);
	pthread_cond_destroy(&job.cv);
	return ret;
}

static ssize_t engine_read(const struct ocf_io *io)
{
	return submit(io, false);
}

static ssize_t engine_write(const struct ocf_io *io)
{
	return submit(io, true);
}

const struct ocf_engine_ops ocf_engine_parallel = {
    .name = "parallel",
    .read = engine_read,
    .write = engine_write,
    .shutdown = engine_shutdown,
};
