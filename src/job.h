/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job.h - the work of one request (request.h) once the engine has cut it
 * into chunks: what its participants (the calling thread and the engine's
 * helper threads) share.  Private to the engine (engine.c) and its striped
 * path (stripe.c).
 *
 * Chunk i covers bytes [job_chunk_start(i), + job_chunk_len(i)) of the
 * request; participants claim chunks with one atomic counter.  A
 * participant that hits an error or a short transfer records the chunk
 * (job_record_error / job_record_short: an atomic minimum in `stop`);
 * chunks at or beyond it are not started, chunks before it all complete,
 * and the result is the contiguous prefix before the first failed or short
 * chunk, plus the short chunk's bytes.
 */
#ifndef OCF_JOB_H_
#define OCF_JOB_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io.h"

struct fio_wprep;

struct ocf_pool;
struct ocf_lane;

/* Stripes of one striped job, at most (stripe.c). */
#define OCF_STRIPES_MAX 32

struct ocf_job {
	const struct ocf_io *io;
	bool write;
	struct ocf_pool *pool;
	size_t chunk; /* chunk size */
	size_t skew0; /* off % alignment: chunk 0 is that much shorter */
	size_t nchunks;
	bool nonblocking;		 /* submitted by the executor: copy on non-blocking streams */
	const struct ocf_ringplan *plan; /* a stream operation's ring (no CUDA here) */
	struct fio_wprep *wprep;	 /* a write: what fio_write_begin did for its pieces (else NULL) */
	/* Next chunk to claim.  Relaxed: the counter only hands out distinct
	 * indices; the data each chunk touches is disjoint. */
	atomic_size_t next;
	/* Chunks >= stop are not started.  Relaxed is enough: it is an
	 * optimisation for claiming; the result is computed under `lock`. */
	atomic_size_t stop;

	pthread_mutex_t lock; /* protects the fields below */
	pthread_cond_t cv;    /* signalled when active drops to zero */
	int active;	      /* helpers working on the job */
	size_t err_idx;	      /* first chunk that failed (nchunks: none) */
	long err;
	size_t short_idx; /* first chunk that was short (nchunks: none) */
	size_t short_got;

	/* Protected by the engine's queue lock. */
	int helpers_wanted;
	struct ocf_job *qnext;
	bool in_queue; /* on the queue (the engine's queue lock) */
	/* A task, not a request (engine.h, engine_task_post): what each
	 * helper that joins runs, with no lane; NULL for requests. */
	void (*task)(struct ocf_job *job);
	uint64_t queued_ns; /* prof_now() when queued (0: profiling off) */
	/* A helper polls the queue for spin_ns after this job, while fewer
	 * than spin_cap helpers poll (engine.c, worker_main). */
	uint64_t spin_ns;
	int spin_cap;

	/* A striped device read (stripe.c): set before any helper can see
	 * the job, read-only afterwards, except the atomics. */
	bool striped;
	bool flush;	       /* each piece written back from the CPU's caches before its copy */
	struct ocf_lane *lane; /* the caller's lane: its buffers are the stripes */
	size_t per_stripe;     /* chunks per stripe */
	size_t nstripes;
	/* Stripes whose staging buffer may be filled: s < released.  A futex
	 * word; helpers sleep on it while `sleepers` counts them. */
	_Atomic uint32_t released;
	_Atomic uint32_t sleepers;
	/* Bumped whenever a stripe's last chunk is resolved: the futex word
	 * the caller sleeps on (caller_sleeps set). */
	_Atomic uint32_t ready;
	_Atomic uint32_t caller_sleeps;
	/* Chunks of each stripe resolved (read, failed, or skipped). */
	atomic_size_t resolved[OCF_STRIPES_MAX];
};

static inline size_t job_chunk_start(const struct ocf_job *job, size_t i)
{
	return ocf_chunk_start(job->chunk, job->skew0, i);
}

static inline size_t job_chunk_len(const struct ocf_job *job, size_t i)
{
	return ocf_chunk_len(job->chunk, job->skew0, job->io->len, i);
}

static inline void job_stop_at(struct ocf_job *job, size_t idx)
{
	size_t cur = atomic_load_explicit(&job->stop, memory_order_relaxed);
	while (idx < cur && !atomic_compare_exchange_weak_explicit(&job->stop, &cur, idx, memory_order_relaxed,
								   memory_order_relaxed))
		;
}

static inline void job_record_error(struct ocf_job *job, size_t idx, long err)
{
	pthread_mutex_lock(&job->lock);
	if (idx < job->err_idx) {
		job->err_idx = idx;
		job->err = err;
	}
	pthread_mutex_unlock(&job->lock);
	job_stop_at(job, idx);
}

static inline void job_record_short(struct ocf_job *job, size_t idx, size_t got)
{
	pthread_mutex_lock(&job->lock);
	if (idx < job->short_idx) {
		job->short_idx = idx;
		job->short_got = got;
	}
	pthread_mutex_unlock(&job->lock);
	job_stop_at(job, idx + 1);
}

/* Bytes of the request known good so far: everything before the first
 * failed or short chunk, plus the short chunk's bytes (the request's
 * length when neither happened). */
static inline size_t job_good_prefix(struct ocf_job *job)
{
	pthread_mutex_lock(&job->lock);
	size_t n = job->io->len;
	if (job->err_idx <= job->short_idx && job->err_idx < job->nchunks)
		n = job_chunk_start(job, job->err_idx);
	else if (job->short_idx < job->nchunks)
		n = job_chunk_start(job, job->short_idx) + job->short_got;
	pthread_mutex_unlock(&job->lock);
	return n;
}

/* Claims the next chunk; false when none is left to start.  A ring job
 * and a striped job hand out every chunk, also those past a failure: each
 * must be signalled to the stream waiting for it, or counted as resolved
 * for its stripe. */
static inline bool job_claim(struct ocf_job *job, size_t *idx)
{
	size_t i = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
	if (i >= job->nchunks ||
	    (!job->plan && !job->striped && i >= atomic_load_explicit(&job->stop, memory_order_relaxed)))
		return false;
	*idx = i;
	return true;
}

#endif /* OCF_JOB_H_ */
