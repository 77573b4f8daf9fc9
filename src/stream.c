/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stream.c - reads and writes ordered with CUDA stream work.
 *
 * DESIGN
 * The rule: once a stream operation is queued, nothing but file I/O on our
 * threads stands between it and its completion.  Every CUDA call it needs
 * is made at submission, on the calling thread.  The reason is the real
 * driver (docs/reliability.md, "Hangs"): while an application stream waits
 * for one of our operations, another thread's cuMemFree, cuMemFreeHost,
 * cuMemHostUnregister or cuModuleLoadData waits for that stream while
 * holding a context-wide lock that every copy, event record and host-
 * function launch needs, and stream creation can do the same.  A completion
 * that needed a CUDA call from us would then wait for itself.
 *
 * GPU memory: cuFileReadAsync(..., stream) queues, at submission,
 *   1. cuLaunchHostFunc(stream, host_fn, op): when the stream reaches the
 *      operation, host_fn (CUDA's callback thread: no CUDA call, no
 *      blocking) hands op to the stream executor (async.c), whose threads
 *      never call CUDA;
 *   2. per staging chunk k, in slot s of the stream's ring (below), use g:
 *        cuStreamWaitValue32(fill[s] >= g)   the file data is in the slot
 *        cuMemcpyHtoDAsync(dst + k, slot)    copy engine, stream order
 *        cuStreamWriteValue32(free[s] = g)   the slot may be refilled
 *      (writes: wait free[s] >= g - 1, cuMemcpyDtoHAsync into the slot,
 *      write fill[s] = g; our thread writes the file and stores free[s]);
 *   3. cuStreamWaitValue32(flag >= target): *bytes_p is written;
 *   4. cuStreamWriteValue32(passed = target): the stream is done with our
 *      memory (see "Lifetime").
 * The executor thread (with engine helpers, engine.c ring_chunks) reads each
 * chunk into its slot and stores fill[s]; the stream copies it out and
 * stores free[s].  So the queued copies fix, at submission, where data lands
 * and how much: *size_p and *bufPtr_offset_p are read at submission for GPU
 * memory; *file_offset_p is read when the stream reaches the operation
 * (unless CU_FILE_STREAM_FIXED_FILE_OFFSET fixes it), as only our thread
 * uses it.  A read that ends early (end of file, an error) fills the rest of
 * its range with zeros: the copies run regardless.  docs/compatibility.md.
 *
 * The ring: each stream that carries GPU-memory operations gets a ring of
 * RING_SLOTS pinned slots of one staging chunk (plus alignment room) and a
 * page of fill/free words, mapped for the GPU.  Chunks take slots in
 * submission order, which is the stream's order, so a slot's next use waits
 * only for an earlier item of the same stream: no operation can wait for
 * another stream.  The ring lock is held while an operation's commands are
 * queued, so two threads submitting to one stream cannot interleave them.
 * A ring whose stream has passed all its operations may be taken over by
 * another stream; rings are kept until driver close, bounded by the staging
 * budget (a submission beyond it fails with CU_FILE_NOMEM_ERROR).  Rings
 * and flag pages are pinned by the submitting thread (cuMemHostAlloc, which
 * was measured not to wait for blocked streams); no completion depends on
 * that call.
 *
 * Host memory: no copies.  host_fn hands the operation to the executor,
 * which reads all three values then and runs the synchronous path (host
 * memory only: engine_thread_no_cuda), then stores *bytes_p and the flag
 * (steps 1, 3, 4).  With all three CU_FILE_STREAM_FIXED_* flags, the
 * arguments are checked and the buffer resolved at submission.
 *
 * Flags: 32-bit words in pinned host memory (cuMemHostAlloc PORTABLE |
 * DEVICEMAP, a 4 KiB page holds 512 pairs), device addresses from
 * cuMemHostGetDevicePointer_v2 (with unified addressing, valid in every
 * context).  A word serves one operation at a time; each use waits for a
 * new, larger target (GEQ is a cyclic comparison), so a word can be reused
 * as soon as its stream passed its wait.
 *
 * Lifetime: after its last wait the stream writes the flag's "passed" word,
 * its last access to our memory for that operation; a flag is reused, a
 * ring handed to another stream and a page or ring freed at close only once
 * that word caught up (a close waits at most PASS_WAIT_NS, then leaves the
 * memory allocated and logs it).  Each operation holds the driver
 * (driver_hold) from submission to completion, so a close waits for queued
 * operations; a stream that never reaches them makes the close wait too.
 *
 * Results in *bytes_p: bytes moved, or the error as a negative number:
 * -errno for system errors (errno of the executor thread cannot reach the
 * caller), -CU_FILE_* for library errors.
 *
 * If queuing fails after the host function was queued (the stream or its
 * context is broken), the call returns CU_FILE_CUDA_DRIVER_ERROR and
 * *bytes_p is not written; the chunks already queued still get their file
 * data when (if) the stream reaches them, since their copies cannot be
 * taken back.
 */
#define _GNU_SOURCE
#include "stream.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "async.h"
#include "config.h"
#include "cuda_loader.h"
#include "driver.h"
#include "engine.h"
#include "fileio.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "request.h"
#include "stats.h"
#include "watchdog.h"

#define FLAG_PAGE_BYTES 4096
/* A flag is two words: the one the stream waits on, and the one it writes
 * after the wait ("passed"). */
#define FLAGS_PER_PAGE (FLAG_PAGE_BYTES / (2 * sizeof(uint32_t)))
/* How long a close waits for streams to pass their waits before it leaves
 * the memory allocated. */
#define PASS_WAIT_NS (10ull * 1000000000ull)
#define FIXED_ALL \
	(CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET | CU_FILE_STREAM_FIXED_FILE_SIZE)
/* Slots per stream ring: a 16 MiB operation fits whole, so its chunks are
 * read in parallel by the engine's helpers. */
#define RING_SLOTS 8u

struct flag_page;

struct flag {
	uint32_t *host; /* the word the GPU polls */
	CUdeviceptr dev;
	uint32_t *passed_host; /* the word the stream writes after its wait */
	CUdeviceptr passed_dev;
	uint32_t seq;     /* last target handed out; under flag_lock */
	uint32_t tracked; /* the target of its latest use: passed reaches it */
	bool has_tracked;
	struct flag_page *page;
	struct flag *next_free;
};

struct flag_page {
	struct flag_page *next;
	void *mem;
	CUcontext ctx; /* allocated in it; made current to free it */
	bool untracked; /* a stream may read it and we cannot tell when it stops */
	struct flag flags[FLAGS_PER_PAGE];
};

/* flag_lock protects pages, free_flags, every flag's seq, tracked,
 * has_tracked and next_free, and every page's untracked.  A flag serves one
 * operation from flag_get until its stream has written the passed word,
 * not only until flag_put: the next use waits for that (flag_get). */
static pthread_mutex_t flag_lock = PTHREAD_MUTEX_INITIALIZER;
static struct flag_page *pages;
static struct flag *free_flags;

struct stream_ent {
	CUstream stream;
	unsigned flags;
};
/* reg_lock protects regs and nregs. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream_ent *regs;
static size_t nregs;

/* A stream's staging ring (see DESIGN). */
struct sring {
	struct sring *next; /* ring_list, under ring_lock */
	CUstream stream;    /* the stream it serves; under ring_lock */
	void *mem;          /* one pinned block: the word page, then the slots */
	CUcontext ctx;      /* allocated in it */
	char *slots;
	size_t slot_bytes, chunk;
	uint32_t *fill, *free; /* RING_SLOTS words each */
	CUdeviceptr fill_dev, free_dev;
	/* lock serialises submissions on the stream: chunk numbers are handed
	 * out in the order their commands are queued.  Protects next_q. */
	pthread_mutex_t lock;
	uint64_t next_q;
	/* Under ring_lock: operations submitted and not yet completed, and
	 * the passed word and target of the latest one. */
	int inflight;
	const uint32_t *last_passed;
	uint32_t last_target;
	bool untracked; /* a stream may still use it and we cannot tell */
	bool retired;   /* queuing failed part-way: its words are out of step */
};
/* ring_lock protects ring_list, ring_total and the fields marked above. */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sring *ring_list;
static size_t ring_total; /* bytes pinned for rings */
static size_t ring_bound; /* added to the pinned-memory bound the statistics report */

enum { OP_PENDING, OP_QUEUED, OP_ABANDONED };
enum { Q_QUEUING, Q_DONE, Q_FAILED };
enum { FINAL_UNKNOWN, FINAL_RESULT, FINAL_NO_RESULT };

struct stream_op {
	struct async_op aop;
	/* PENDING until host_fn hands the op to the executor (QUEUED), or the
	 * submitter gives it up after a failed enqueue of its last wait
	 * (ABANDONED).  The compare-and-swap decides who owns the completion;
	 * acq_rel orders the fields written before it for whoever wins. */
	atomic_int state;
	/* Two owners: the submitter and the stream pipeline; the last frees. */
	atomic_int refs;
	CUfileHandle_t fh;
	void *base;
	size_t *size_p;
	off_t *file_offset_p, *buf_offset_p;
	ssize_t *bytes_p;
	unsigned fixed;
	size_t size;
	off_t file_offset, buf_offset;
	bool write;
	struct flag *flag;
	uint32_t target;
	/* Host memory with all parameters fixed: resolved at submission
	 * (prep: the result of request_prepare, io and owns_handle what it
	 * produced). */
	bool prepared, owns_handle;
	ssize_t prep;
	struct ocf_io io;
	/* GPU memory: the ring and the plan its copies were queued for. */
	struct sring *ring;
	struct ocf_ringplan plan;
	/* Queuing (submit_ring_op) may still go on while the stream runs the
	 * first chunks: chunks whose first command (the wait) is queued, and
	 * whose three commands are (release), and the outcome (Q_QUEUING, then
	 * Q_DONE or Q_FAILED, release; flag_unref is written before it). */
	atomic_size_t nwaits, nqueued;
	atomic_int qstate;
	/* Set once the last wait (on the flag) is queued: whether *bytes_p is
	 * ours (FINAL_RESULT) or not (FINAL_NO_RESULT: a chunk could not be
	 * queued, the call fails).  Q_FAILED without it: the last wait could
	 * not be queued either. */
	atomic_int final;
	bool no_result;  /* queuing failed: *bytes_p is not ours (executor's) */
	bool partial;    /* the submitter queued something before failing */
	bool flag_unref; /* queuing failed before the last wait: no stream reads the flag */
	/* Set by the executor once it has read the caller's values: a
	 * submitter that failed waits for it before returning, so nothing
	 * reads the caller's memory after the error. */
	atomic_bool params_read;
	atomic_bool dead; /* the GPU can no longer progress: waits give up */
	struct ocf_gpu *gpu;
};

static void op_free(struct stream_op *op)
{
	if (op->owns_handle)
		handle_put(op->io.h); /* resolved, never run */
	free(op);
}

static void op_put(struct stream_op *op)
{
	/* acq_rel: the last owner sees every write of the other before freeing. */
	if (atomic_fetch_sub_explicit(&op->refs, 1, memory_order_acq_rel) == 1)
		op_free(op);
}

static bool cyc_reached(uint32_t cur, uint32_t target) { return (int32_t)(cur - target) >= 0; }

/* ------------------------------------------------------------ flag words */

/* Pins `bytes` of host memory mapped for the GPU (PORTABLE | DEVICEMAP) in
 * g's primary context: *mem and its device address *dev.  0, or
 * CU_FILE_CUDA_DRIVER_ERROR (logged with `what`). */
static int pin_mapped(struct ocf_gpu *g, size_t bytes, void **mem, CUdeviceptr *dev, const char *what)
{
	CUresult cr = ocf_cu.CtxPushCurrent(g->primary);
	if (cr != CUDA_SUCCESS) {
		log_error("%s: cuCtxPushCurrent: %s", what, cuda_error_name(cr));
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	cr = ocf_cu.MemHostAlloc(mem, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
	if (cr == CUDA_SUCCESS) {
		cr = ocf_cu.MemHostGetDevicePointer(dev, *mem, 0);
		if (cr != CUDA_SUCCESS)
			ocf_cu.MemFreeHost(*mem);
	}
	cuda_ctx_pop();
	if (cr != CUDA_SUCCESS) {
		log_error("%s of %zu KiB: %s", what, bytes / 1024, cuda_error_name(cr));
		*mem = NULL;
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	return 0;
}

static int flag_page_new(void)
{
	struct ocf_gpu *g;
	int r = gpu_get(0, &g);
	if (r)
		return r;
	struct flag_page *pg = calloc(1, sizeof(*pg));
	if (!pg)
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	CUdeviceptr dev = 0;
	r = pin_mapped(g, FLAG_PAGE_BYTES, &pg->mem, &dev, "flag page");
	if (r) {
		free(pg);
		return r;
	}
	memset(pg->mem, 0, FLAG_PAGE_BYTES);
	pg->ctx = g->primary;
	pthread_mutex_lock(&flag_lock);
	for (size_t i = 0; i < FLAGS_PER_PAGE; i++) {
		struct flag *f = &pg->flags[i];
		f->host = (uint32_t *)pg->mem + i;
		f->dev = dev + i * sizeof(uint32_t);
		f->passed_host = (uint32_t *)pg->mem + FLAGS_PER_PAGE + i;
		f->passed_dev = dev + (FLAGS_PER_PAGE + i) * sizeof(uint32_t);
		f->page = pg;
		f->next_free = free_flags;
		free_flags = f;
	}
	pg->next = pages;
	pages = pg;
	pthread_mutex_unlock(&flag_lock);
	return 0;
}

/* Caller holds flag_lock.  Has the stream of the flag's last operation
 * passed its wait (written the passed word)?  Acquire: that write is the
 * stream's last access for that operation. */
static bool flag_idle_locked(const struct flag *f)
{
	return !f->has_tracked || cyc_reached(__atomic_load_n(f->passed_host, __ATOMIC_ACQUIRE), f->tracked);
}

/* A flag for a new operation: a free one whose previous stream has passed
 * its wait, so that the passed words of two operations never race. */
static int flag_get(struct flag **out, uint32_t *target)
{
	for (;;) {
		pthread_mutex_lock(&flag_lock);
		struct flag **pp = &free_flags;
		while (*pp && !flag_idle_locked(*pp))
			pp = &(*pp)->next_free;
		struct flag *f = *pp;
		if (f) {
			*pp = f->next_free;
			*target = ++f->seq;
			f->tracked = *target;
			f->has_tracked = true;
			pthread_mutex_unlock(&flag_lock);
			*out = f;
			return 0;
		}
		pthread_mutex_unlock(&flag_lock);
		/* Pinning outside the lock: rare (one page serves 512
		 * operations in flight). */
		int r = flag_page_new();
		if (r)
			return r;
	}
}

static void flag_put(struct flag *f)
{
	pthread_mutex_lock(&flag_lock);
	f->next_free = free_flags;
	free_flags = f;
	pthread_mutex_unlock(&flag_lock);
}

/* Release: everything written before (the data, *bytes_p) is visible to
 * whoever observes the value, the GPU's wait included. */
static void flag_signal(struct flag *f, uint32_t target) { __atomic_store_n(f->host, target, __ATOMIC_RELEASE); }

static bool flag_reached(const struct flag *f, uint32_t target)
{
	return cyc_reached(__atomic_load_n(f->host, __ATOMIC_ACQUIRE), target);
}

/* No stream write of the passed word was queued for this use of the flag
 * (or the stream is known to be past it): mark it passed from the CPU. */
static void flag_passed_now(struct flag *f, uint32_t target)
{
	__atomic_store_n(f->passed_host, target, __ATOMIC_RELEASE);
}

/* Has every stream passed the waits queued on this page?  Called at close,
 * without flag_lock: no operation is in flight and none can be submitted,
 * so tracked and has_tracked no longer change. */
static bool page_passed(const struct flag_page *pg)
{
	for (size_t i = 0; i < FLAGS_PER_PAGE; i++)
		if (!flag_idle_locked(&pg->flags[i]))
			return false;
	return true;
}

/* ------------------------------------------------------------ rings */

/* Caller holds ring_lock.  No operation of the ring is in flight and its
 * stream has passed the last one's waits: the ring's memory is unused. */
static bool ring_idle_locked(const struct sring *r)
{
	return r->inflight == 0 && !r->untracked &&
	       (!r->last_passed || cyc_reached(__atomic_load_n(r->last_passed, __ATOMIC_ACQUIRE), r->last_target));
}

static size_t ring_chunk(void) { return OCF_MAX((size_t)ocf_cfg.staging_chunk_kb * 1024, (size_t)OCF_MAX_ALIGN); }

static size_t ring_slot_bytes(size_t chunk)
{
	/* Room for the chunk at any offset modulo the alignment, and for the
	 * aligned read that covers it. */
	return OCF_ALIGN_UP(chunk + 3 * (size_t)OCF_MAX_ALIGN, (size_t)OCF_MAX_ALIGN);
}

static size_t ring_bytes(size_t chunk) { return FLAG_PAGE_BYTES + OCF_MAX_ALIGN + RING_SLOTS * ring_slot_bytes(chunk); }

/* Rings may pin at most the staging budget (config_staging_budget: the
 * slab arrays, NVIDIA's bounce-buffer budget, capped), and one ring
 * whatever the budget. */
static size_t ring_budget(void)
{
	return OCF_MAX(config_staging_budget(&ocf_cfg, NULL), ring_bytes(ring_chunk()));
}

static int ring_pin(struct sring *r, struct ocf_gpu *g)
{
	size_t bytes = ring_bytes(r->chunk);
	CUdeviceptr dev = 0;
	int err = pin_mapped(g, bytes, &r->mem, &dev, "stream ring");
	if (err)
		return err;
	memset(r->mem, 0, FLAG_PAGE_BYTES);
	r->ctx = g->primary;
	r->fill = r->mem;
	r->free = (uint32_t *)r->mem + RING_SLOTS;
	r->fill_dev = dev;
	r->free_dev = dev + RING_SLOTS * sizeof(uint32_t);
	r->slots = (char *)OCF_ALIGN_UP((uintptr_t)r->mem + FLAG_PAGE_BYTES, (uintptr_t)OCF_MAX_ALIGN);
	stats_pinned_add((int64_t)bytes);
	return 0;
}

/* The key of a stream's ring: the handle, except for the per-thread
 * default stream, whose one handle names a different stream on each
 * thread. */
static __thread char per_thread_key;
static CUstream ring_key(CUstream stream)
{
	return stream == CU_STREAM_PER_THREAD ? (CUstream)(void *)&per_thread_key : stream;
}

/* The ring of `stream`, with one more operation in flight: the stream's
 * own, an idle one taken over, or a new one. */
static int ring_for(CUstream stream, struct ocf_gpu *g, struct sring **out)
{
	stream = ring_key(stream);
	pthread_mutex_lock(&ring_lock);
	struct sring *r, *idle = NULL;
	for (r = ring_list; r; r = r->next) {
		if (r->retired)
			continue;
		if (r->stream == stream)
			break;
		if (!idle && ring_idle_locked(r))
			idle = r;
	}
	if (!r && ring_total + ring_bytes(ring_chunk()) > ring_budget() && idle) {
		r = idle; /* its stream passed everything it had: take it over */
		r->stream = stream;
	}
	if (r) {
		r->inflight++;
		pthread_mutex_unlock(&ring_lock);
		*out = r;
		return 0;
	}
	if (ring_total + ring_bytes(ring_chunk()) > ring_budget()) {
		pthread_mutex_unlock(&ring_lock);
		log_error("cuFile stream I/O: every stream ring is in use (%zu KiB pinned, the staging budget); "
			  "too many streams with operations in flight",
			  ring_total / 1024);
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	}
	ring_total += ring_bytes(ring_chunk()); /* reserved; pinned outside the lock */
	if (!ring_bound) {
		/* Rings have their own budget: the reported bound grows by it
		 * once the first ring exists. */
		ring_bound = ring_budget();
		stats_pinned_bound_add((int64_t)ring_bound);
	}
	pthread_mutex_unlock(&ring_lock);
	r = calloc(1, sizeof(*r));
	int err = r ? 0 : OCF_ERR(CU_FILE_NOMEM_ERROR);
	if (r) {
		r->chunk = ring_chunk();
		r->slot_bytes = ring_slot_bytes(r->chunk);
		pthread_mutex_init(&r->lock, NULL);
		err = ring_pin(r, g);
		if (err) {
			pthread_mutex_destroy(&r->lock);
			free(r);
		}
	}
	pthread_mutex_lock(&ring_lock);
	if (err) {
		ring_total -= ring_bytes(ring_chunk());
		r = NULL;
	} else {
		r->stream = stream;
		r->inflight = 1;
		r->next = ring_list;
		ring_list = r;
	}
	pthread_mutex_unlock(&ring_lock);
	*out = r;
	return err;
}

/* One operation of the ring completed (or was never queued). */
static void ring_release(struct sring *r)
{
	pthread_mutex_lock(&ring_lock);
	r->inflight--;
	pthread_mutex_unlock(&ring_lock);
}

/* Waits for a ring word (engine.c, struct ocf_ringplan).  The stream has
 * reached the operation, and its next commands are ours, so the GPU gets
 * there within the time of the copies before it: spin briefly, then yield,
 * then sleep in short steps.  A context that failed never gets there: a
 * lock-free query of the GPU's liveness event every 100 ms finds that out,
 * and the watchdog names a wait that lasts. */
static int ring_wait(const struct ocf_ringplan *p, size_t k, const uint32_t *w, uint32_t val)
{
	struct stream_op *op = p->owner;
	for (int i = 0; i < 200; i++) {
		if (cyc_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), val))
			return 0;
		ocf_cpu_relax();
	}
	watchdog_wait_begin(op->write ? "cuFileWriteAsync" : "cuFileReadAsync",
			    handle_watch_fd(op->io.h), op->gpu ? op->gpu->ordinal : -1,
			    op->write ? "the GPU to copy a chunk of device memory into its staging slot"
				      : "the GPU to copy the previous chunk out of its staging slot");
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t next_check = 100000000ull;
	long sleep_ns = 2000;
	int ret = 0;
	for (;;) {
		if (cyc_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), val))
			break;
		if (atomic_load_explicit(&op->dead, memory_order_relaxed)) {
			ret = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			break;
		}
		/* A write chunk whose commands never got queued: its copy
		 * will not come. */
		if (op->write && atomic_load_explicit(&op->qstate, memory_order_acquire) == Q_FAILED &&
		    k >= atomic_load_explicit(&op->nqueued, memory_order_acquire)) {
			ret = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t ns = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
			      (uint64_t)t0.tv_nsec;
		if (ns < 50000) {
			sched_yield();
			continue;
		}
		if (ns >= next_check) {
			next_check = ns + 100000000ull;
			CUresult cr = op->gpu ? gpu_alive(op->gpu) : CUDA_SUCCESS;
			if (cr != CUDA_SUCCESS) {
				log_error("%s: the GPU's context failed (%s) while a stream operation was in "
					  "flight: the operation fails",
					  op->write ? "cuFileWriteAsync" : "cuFileReadAsync", cuda_error_name(cr));
				atomic_store_explicit(&op->dead, true, memory_order_relaxed);
				ret = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
				break;
			}
		}
		struct timespec ts = {0, sleep_ns};
		nanosleep(&ts, NULL);
		if (sleep_ns < 200000)
			sleep_ns *= 2;
	}
	watchdog_wait_end();
	return ret;
}

/* Waits for the submitter that is still queuing (see struct stream_op)
 * until `count` (nwaits or nqueued) exceeds k or queuing is over.  Safe
 * only where the stream does not wait for us meanwhile: the submitter's
 * CUDA calls can be held back, inside the driver, by another thread that
 * waits for the stream to drain (cuMemFree, a synchronous copy); seen on
 * an H200 as a deadlock when read chunks waited for their copy to be
 * queued while the stream already waited for their data. */
static int wait_queuing(struct stream_op *op, const atomic_size_t *count, size_t k)
{
	int st;
	long ns = 1000;
	bool watching = false;
	while ((st = atomic_load_explicit(&op->qstate, memory_order_acquire)) == Q_QUEUING &&
	       atomic_load_explicit(count, memory_order_acquire) <= k) {
		if (!watching) {
			watching = true;
			watchdog_wait_begin(op->write ? "cuFileWriteAsync" : "cuFileReadAsync",
					    handle_watch_fd(op->io.h), op->gpu ? op->gpu->ordinal : -1,
					    "the submitting thread to finish queuing the operation's copies");
		}
		struct timespec ts = {0, ns};
		nanosleep(&ts, NULL);
		if (ns < 100000)
			ns *= 2;
	}
	if (watching)
		watchdog_wait_end();
	return st;
}

/* May chunk k be served?  A read chunk as soon as its wait is queued: the
 * stream may already be waiting for its data, and its copy may be queued
 * only once a thread that waits for the stream lets go of the driver's
 * lock (then the data is simply not copied: queuing failed).  A write
 * chunk at once: its wait (ring_wait) is for the GPU's copy, which ends
 * the wait; if queuing fails first, ring_wait gives up. */
static bool ring_queued(const struct ocf_ringplan *p, size_t k)
{
	struct stream_op *op = p->owner;
	if (op->write)
		return !(atomic_load_explicit(&op->qstate, memory_order_acquire) == Q_FAILED &&
			 k >= atomic_load_explicit(&op->nqueued, memory_order_acquire));
	wait_queuing(op, &op->nwaits, k);
	return k < atomic_load_explicit(&op->nwaits, memory_order_acquire);
}

/* ------------------------------------------------------------ operations */

static void warn_changed_once(void)
{
	static atomic_bool told;
	if (!atomic_exchange_explicit(&told, true, memory_order_relaxed))
		log_warn("cuFileReadAsync/cuFileWriteAsync: *size_p or *bufPtr_offset_p changed after submission; "
			 "for GPU memory this library uses the values at submission (docs/compatibility.md)");
}

/* A GPU-memory operation: the stream reached it; its copies are queued
 * (or being queued). */
static ssize_t run_ring_op(struct stream_op *op)
{
	/* The caller's values, once: its call may still be queuing (then it
	 * waits for params_read before returning an error). */
	off_t foff = op->fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET ? op->file_offset : *op->file_offset_p;
	bool changed = false;
	if ((op->fixed & (CU_FILE_STREAM_FIXED_FILE_SIZE | CU_FILE_STREAM_FIXED_BUF_OFFSET)) !=
	    (CU_FILE_STREAM_FIXED_FILE_SIZE | CU_FILE_STREAM_FIXED_BUF_OFFSET))
		changed = *op->size_p != op->size || *op->buf_offset_p != op->buf_offset;
	atomic_store_explicit(&op->params_read, true, memory_order_release);
	if (changed)
		warn_changed_once();
	struct ocf_io io = op->io;
	io.plan = &op->plan;
	uint64_t t0 = stats_io_begin();
	bool bad_off = foff < 0 || (off_t)op->size > LLONG_MAX - foff;
	if (bad_off) {
		/* Nothing may be read, but every queued copy must be released:
		 * an offset no chunk can start at makes each of them a zero
		 * fill (reads) or a skipped write. */
		io.off = 0;
		op->plan.skip = true;
	} else {
		io.off = foff;
	}
	io.call.file_offset = io.off; /* what the failure log names */
	ssize_t ret = request_run(&io, t0, 0, false);
	/* Whether *bytes_p is ours: known once the last wait is queued (then
	 * the stream may be waiting for us: no waiting for the submitter), or
	 * once queuing failed before it (then nothing waits for us). */
	int fin;
	long ns = 1000;
	while ((fin = atomic_load_explicit(&op->final, memory_order_acquire)) == FINAL_UNKNOWN &&
	       atomic_load_explicit(&op->qstate, memory_order_acquire) == Q_QUEUING) {
		struct timespec ts = {0, ns};
		nanosleep(&ts, NULL);
		if (ns < 100000)
			ns *= 2;
	}
	op->no_result = fin != FINAL_RESULT;
	if (bad_off)
		ret = -EINVAL;
	return ret;
}

/* The end of an operation, whoever completes it: the stream's wait on the
 * flag is released, and our references go. */
static void op_release(struct stream_op *op)
{
	flag_signal(op->flag, op->target);
	if (op->flag_unref)
		flag_passed_now(op->flag, op->target);
	flag_put(op->flag);
	if (op->ring) {
		if (op->owns_handle) {
			handle_put(op->io.h);
			op->owns_handle = false;
		}
		ring_release(op->ring);
	}
}

static void op_complete(struct stream_op *op, ssize_t r)
{
	/* Release: an application that polls *bytes_p instead of
	 * synchronising the stream sees the I/O's effects once it sees this. */
	if (!op->no_result)
		__atomic_store_n(op->bytes_p, r, __ATOMIC_RELEASE);
	/* After this store the application may reuse everything it passed;
	 * only our own op, flag and ring are touched below. */
	op_release(op);
	op_put(op);
}

static void op_run(struct async_op *aop)
{
	struct stream_op *op = (struct stream_op *)((char *)aop - offsetof(struct stream_op, aop));
	ssize_t r;
	if (op->ring) {
		r = run_ring_op(op);
	} else if (op->prepared) {
		/* Checked and resolved at submission: only the I/O is left. */
		r = request_run(&op->io, stats_io_begin(), op->prep, op->owns_handle);
		op->owns_handle = false;
	} else {
		/* The stream reached the operation: read the parameters now.
		 * Host memory only (engine_thread_no_cuda): GPU memory that
		 * could not be resolved at submission is refused here. */
		size_t size = op->fixed & CU_FILE_STREAM_FIXED_FILE_SIZE ? op->size : *op->size_p;
		off_t foff = op->fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET ? op->file_offset : *op->file_offset_p;
		off_t boff = op->fixed & CU_FILE_STREAM_FIXED_BUF_OFFSET ? op->buf_offset : *op->buf_offset_p;
		r = request_io(op->fh, op->base, size, foff, boff, op->write, true);
	}
	stats_stream_done(op->write, r);
	op_complete(op, r);
}

/* Runs on CUDA's callback thread: no CUDA calls, no blocking. */
static void CUDA_CB host_fn(void *arg)
{
	struct stream_op *op = arg;
	int expect = OP_PENDING;
	if (atomic_compare_exchange_strong_explicit(&op->state, &expect, OP_QUEUED, memory_order_acq_rel,
						    memory_order_acquire)) {
		async_submit(&async_stream_exec, &op->aop); /* the executor releases the hold */
		return;
	}
	/* Abandoned by its submitter, before the stream got here.  Host
	 * memory: nothing waits for it.  GPU memory (queuing failed part-way):
	 * the read chunks whose waits were queued are released, with zeros
	 * rather than another operation's data (their copies cannot be taken
	 * back); nothing else may touch the caller's memory. */
	if (op->ring && !op->write) {
		size_t n = atomic_load_explicit(&op->nwaits, memory_order_acquire);
		for (size_t k = 0; k < n; k++) {
			uint64_t q = op->plan.q0 + k;
			unsigned s = (unsigned)(q % RING_SLOTS);
			memset(op->plan.mem + (size_t)s * op->plan.slot_bytes, 0, op->plan.slot_bytes);
			__atomic_store_n(&op->plan.fill[s], (uint32_t)(q / RING_SLOTS) + 1, __ATOMIC_RELEASE);
		}
	}
	op_release(op);
	driver_release();
	op_put(op);
}

static unsigned registered_flags(CUstream s)
{
	unsigned f = 0;
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < nregs; i++)
		if (regs[i].stream == s) {
			f = regs[i].flags;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	return f;
}

/* Plans a GPU-memory operation on the ring (the caller holds r->lock):
 * chunk boundaries as the engine would cut the request at the planned file
 * offset, and where each chunk sits in its slot. */
static void plan_ring_op(struct stream_op *op, struct sring *r, off_t foff_plan)
{
	struct ocf_ringplan *p = &op->plan;
	size_t align = fio_align(op->io.h);
	p->mem = r->slots;
	p->slot_bytes = r->slot_bytes;
	p->nslots = RING_SLOTS;
	p->fill = r->fill;
	p->free = r->free;
	p->chunk = OCF_ALIGN_DOWN(r->chunk, OCF_MAX(align, (size_t)4096));
	p->foff0 = foff_plan;
	p->skew0 = (size_t)foff_plan % align;
	p->nchunks = op->size ? (op->size + p->skew0 + p->chunk - 1) / p->chunk : 0;
	p->wait = ring_wait;
	p->queued = ring_queued;
	p->owner = op;
	p->q0 = r->next_q;
}

/* Queues chunk k's three commands.  0, or the failed call's result. */
static CUresult queue_chunk(struct stream_op *op, struct sring *r, CUstream stream, size_t k)
{
	const struct ocf_ringplan *p = &op->plan;
	uint64_t q = p->q0 + k;
	unsigned s = (unsigned)(q % RING_SLOTS);
	uint32_t g = (uint32_t)(q / RING_SLOTS) + 1;
	size_t at = ocf_chunk_start(p->chunk, p->skew0, k), n = ocf_chunk_len(p->chunk, p->skew0, op->size, k);
	char *src = p->mem + (size_t)s * p->slot_bytes + fio_stage_skew(op->io.h, p->foff0 + (off_t)at);
	CUdeviceptr fill_w = r->fill_dev + s * sizeof(uint32_t), free_w = r->free_dev + s * sizeof(uint32_t);
	CUresult cr;
	if (!op->write) {
		cr = ocf_cu.StreamWaitValue32(stream, fill_w, g, CU_STREAM_WAIT_VALUE_GEQ);
		/* Release: the executor may fill the slot now (ring_queued). */
		if (cr == CUDA_SUCCESS)
			atomic_store_explicit(&op->nwaits, k + 1, memory_order_release);
		if (cr == CUDA_SUCCESS)
			cr = ocf_cu.MemcpyHtoDAsync(op->io.t.dev + at, src, n, stream);
		if (cr == CUDA_SUCCESS)
			cr = ocf_cu.StreamWriteValue32(stream, free_w, g, CU_STREAM_WRITE_VALUE_DEFAULT);
	} else {
		cr = ocf_cu.StreamWaitValue32(stream, free_w, g - 1, CU_STREAM_WAIT_VALUE_GEQ);
		if (cr == CUDA_SUCCESS)
			atomic_store_explicit(&op->nwaits, k + 1, memory_order_release);
		if (cr == CUDA_SUCCESS)
			cr = ocf_cu.MemcpyDtoHAsync(src, op->io.t.dev + at, n, stream);
		if (cr == CUDA_SUCCESS)
			cr = ocf_cu.StreamWriteValue32(stream, fill_w, g, CU_STREAM_WRITE_VALUE_DEFAULT);
	}
	return cr;
}

/* The part of stream_io that GPU memory needs: the ring, the plan, and the
 * commands, queued under the ring's lock.  Returns 0 or an error; on error
 * after the host function was queued, the operation still runs (its
 * queued chunks must be released) but writes no result. */
static int submit_ring_op(struct stream_op *op, CUstream stream, const char *fn)
{
	int r = ring_for(stream, op->gpu, &op->ring);
	if (r)
		return r;
	struct sring *ring = op->ring;
	/* The file offset the copies are planned for: the value now (the one
	 * the stream will normally find), unless it makes no sense yet. */
	off_t foff_plan = op->fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET ? op->file_offset : *op->file_offset_p;
	if (foff_plan < 0)
		foff_plan = 0;
	pthread_mutex_lock(&ring->lock);
	plan_ring_op(op, ring, foff_plan);
	CUresult cr = ocf_cu.LaunchHostFunc(stream, host_fn, op);
	if (cr != CUDA_SUCCESS) {
		pthread_mutex_unlock(&ring->lock);
		log_error("%s: cuLaunchHostFunc: %s", fn, cuda_error_name(cr));
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	size_t k;
	for (k = 0; k < op->plan.nchunks; k++) {
		cr = queue_chunk(op, ring, stream, k);
		if (cr != CUDA_SUCCESS)
			break;
		/* Release: the stream may run it now; the worker may fill it. */
		atomic_store_explicit(&op->nqueued, k + 1, memory_order_release);
	}
	CUresult chunks_cr = cr;
	/* Chunk k's first command (the wait) may be queued without the rest:
	 * a read's is released when the operation runs; a write's waits for
	 * the slot's previous use only, which completes anyway. */
	size_t queued = k < op->plan.nchunks ? k + 1 : k;
	/* The last wait and the passed write, also after a failure: with them
	 * we still know when the stream is done with our memory. */
	CUresult wait_cr = ocf_cu.StreamWaitValue32(stream, op->flag->dev, op->target, CU_STREAM_WAIT_VALUE_GEQ);
	/* Release: from here the stream may wait for the flag, and the
	 * executor must signal it without waiting for this thread (whose next
	 * call may be held back by a thread waiting for the stream). */
	if (wait_cr == CUDA_SUCCESS)
		atomic_store_explicit(&op->final, chunks_cr == CUDA_SUCCESS ? FINAL_RESULT : FINAL_NO_RESULT,
				      memory_order_release);
	CUresult pass_cr = wait_cr;
	if (pass_cr == CUDA_SUCCESS)
		pass_cr = ocf_cu.StreamWriteValue32(stream, op->flag->passed_dev, op->target, CU_STREAM_WRITE_VALUE_DEFAULT);
	ring->next_q += queued;
	pthread_mutex_unlock(&ring->lock);
	pthread_mutex_lock(&ring_lock);
	if (pass_cr == CUDA_SUCCESS) {
		ring->last_passed = op->flag->passed_host;
		ring->last_target = op->target;
	} else if (chunks_cr == CUDA_SUCCESS && wait_cr != CUDA_SUCCESS && k > 0) {
		/* The stream's last access: the last chunk's release. */
		uint64_t q = op->plan.q0 + k - 1;
		ring->last_passed = op->write ? &ring->fill[q % RING_SLOTS] : &ring->free[q % RING_SLOTS];
		ring->last_target = (uint32_t)(q / RING_SLOTS) + 1;
	} else {
		ring->untracked = true; /* nobody can tell when the stream stops reading it */
	}
	/* After a failure among the chunks or the last wait the ring's words
	 * are out of step with its sequence (a chunk without its copy or
	 * release, a write chunk nobody writes): no later operation may use
	 * it. */
	if (chunks_cr != CUDA_SUCCESS || wait_cr != CUDA_SUCCESS)
		ring->retired = true;
	pthread_mutex_unlock(&ring_lock);
	if (pass_cr != CUDA_SUCCESS && wait_cr == CUDA_SUCCESS) {
		/* The stream waits on the flag and we cannot tell when it is
		 * done: its page stays allocated (the operation itself is
		 * queued whole when the chunks were). */
		log_error("%s: cannot tell when the stream leaves its flag (%s): flag page kept", fn,
			  cuda_error_name(pass_cr));
		pthread_mutex_lock(&flag_lock);
		op->flag->page->untracked = true;
		pthread_mutex_unlock(&flag_lock);
	}
	if (chunks_cr == CUDA_SUCCESS && wait_cr == CUDA_SUCCESS) {
		atomic_store_explicit(&op->qstate, Q_DONE, memory_order_release);
		return 0;
	}
	log_error("%s: queuing on the stream failed part-way: %s", fn,
		  cuda_error_name(chunks_cr != CUDA_SUCCESS ? chunks_cr : wait_cr));
	op->partial = true;
	if (wait_cr != CUDA_SUCCESS)
		op->flag_unref = true; /* before Q_FAILED: the executor reads it after */
	atomic_store_explicit(&op->qstate, Q_FAILED, memory_order_release);
	/* Who completes the operation: if the stream has not reached it, its
	 * host function (without reading the caller's memory); else the
	 * executor, which has read the caller's values or is about to: wait
	 * for that, so nothing reads them after the error is returned. */
	int expect = OP_PENDING;
	if (!atomic_compare_exchange_strong_explicit(&op->state, &expect, OP_ABANDONED, memory_order_acq_rel,
						     memory_order_acquire)) {
		while (!atomic_load_explicit(&op->params_read, memory_order_acquire)) {
			struct timespec ts = {0, 20000};
			nanosleep(&ts, NULL);
		}
	}
	return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
}

int stream_io(CUfileHandle_t fh, void *base, size_t *size_p, off_t *file_offset_p, off_t *buf_offset_p,
	      ssize_t *bytes_p, CUstream stream, bool write)
{
	const char *fn = write ? "cuFileWriteAsync" : "cuFileReadAsync";
	int r = async_start(&async_stream_exec);
	if (r)
		return r;
	struct stream_op *op = calloc(1, sizeof(*op));
	if (!op)
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	op->aop.run = op_run;
	op->fh = fh;
	op->base = base;
	op->size_p = size_p;
	op->file_offset_p = file_offset_p;
	op->buf_offset_p = buf_offset_p;
	op->bytes_p = bytes_p;
	op->write = write;
	op->fixed = registered_flags(stream) & FIXED_ALL;
	/* Size and buffer offset are needed now for GPU memory (the copies
	 * are queued now); the file offset only if fixed. */
	op->size = *size_p;
	op->buf_offset = *buf_offset_p;
	if (op->fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET)
		op->file_offset = *file_offset_p;
	/* Which memory, and the handle: with the submission's values (the
	 * file offset does not matter to the resolution). */
	bool owns = false;
	ssize_t prep = request_prepare(fh, base, op->size,
				       op->fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET ? op->file_offset : 0,
				       op->buf_offset, op->write, NULL, &op->io, &owns);
	op->owns_handle = owns;
	if (prep == 0 && op->size > 0 && op->io.t.device) {
		/* No lane, stream or event is needed (nor created: the
		 * application's own stream may be blocked right now, and
		 * creation can wait for it).  A GPU brought up at open or by
		 * synchronous I/O has its liveness event. */
		op->gpu = op->io.t.gpu;
		if (!op->gpu) {
			op_free(op);
			return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
		}
	} else if (op->fixed == FIXED_ALL || (prep != 0 && prep != -EINVAL && prep != OCF_ERR(CU_FILE_INVALID_VALUE))) {
		/* Host memory (or a failure), nothing can change before the
		 * stream reaches the operation, or a failure that does not
		 * depend on the values (the driver, memory): keep the
		 * resolution; a failure is reported in *bytes_p, in stream
		 * order. */
		op->prepared = true;
		op->prep = prep;
		if (op->fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET && prep == 0 && op->file_offset < 0)
			op->prep = -EINVAL;
	} else {
		/* Host memory, or a range that does not resolve with today's
		 * values: everything is read again when the stream gets there
		 * (GPU memory is then refused, engine_thread_no_cuda). */
		if (owns)
			handle_put(op->io.h);
		op->owns_handle = false;
		memset(&op->io, 0, sizeof(op->io));
	}
	r = flag_get(&op->flag, &op->target);
	if (r) {
		op_free(op);
		return r;
	}
	atomic_init(&op->state, OP_PENDING);
	atomic_init(&op->refs, 2);
	driver_hold(1); /* released by the executor, or by host_fn if abandoned */

	struct flag *f = op->flag;
	uint32_t target = op->target;
	if (op->gpu) {
		r = submit_ring_op(op, stream, fn);
		if (r && !op->partial) {
			/* Nothing was queued. */
			if (op->ring)
				ring_release(op->ring);
			flag_passed_now(f, target);
			flag_put(f);
			driver_release();
			op_free(op);
			return r;
		}
		op_put(op);
		return r;
	}

	CUresult cr = ocf_cu.LaunchHostFunc(stream, host_fn, op);
	if (cr != CUDA_SUCCESS) {
		log_error("%s: cuLaunchHostFunc: %s", fn, cuda_error_name(cr));
		flag_passed_now(f, target);
		flag_put(op->flag);
		driver_release();
		op_free(op);
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	cr = ocf_cu.StreamWaitValue32(stream, op->flag->dev, op->target, CU_STREAM_WAIT_VALUE_GEQ);
	if (cr != CUDA_SUCCESS) {
		log_error("%s: cuStreamWaitValue32: %s", fn, cuda_error_name(cr));
		int expect = OP_PENDING;
		if (!atomic_compare_exchange_strong_explicit(&op->state, &expect, OP_ABANDONED, memory_order_acq_rel,
							     memory_order_acquire)) {
			/* Already running: the caller must not reuse its buffer
			 * while we write it, so wait for the I/O to finish (host
			 * memory: no CUDA call stands in its way).  The flag
			 * cannot be freed meanwhile (we are in the gate). */
			while (!flag_reached(f, target)) {
				struct timespec ts = {0, 50000};
				nanosleep(&ts, NULL);
			}
		}
		/* No stream waits on the flag; whoever completes the operation
		 * (op_run or host_fn) returns it to the free list. */
		flag_passed_now(f, target);
		op_put(op);
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	/* The operation is queued; what is left is knowing when the stream
	 * is done with the flag page. */
	cr = ocf_cu.StreamWriteValue32(stream, f->passed_dev, target, CU_STREAM_WRITE_VALUE_DEFAULT);
	if (cr != CUDA_SUCCESS) {
		/* Without the write, nobody can tell when the stream leaves the
		 * flag: it is never reused and its page never freed (waiting
		 * for the stream here could wait for work queued after it). */
		log_error("%s: cannot tell when the stream leaves its flag (%s): flag page kept", fn,
			  cuda_error_name(cr));
		pthread_mutex_lock(&flag_lock);
		f->page->untracked = true;
		pthread_mutex_unlock(&flag_lock);
	}
	op_put(op);
	return 0;
}

/* ------------------------------------------------------------ exit */

/* The process is ending (exit handler, registered after cuInit so that it
 * runs before the CUDA driver's own teardown, which waits for every
 * stream): release every wait of ours a stream may still be blocked in —
 * each slot word and flag to the last value handed out — so that the
 * driver's teardown finds streams that can drain.  An operation still in
 * flight (its file read may never end: a userspace file system that
 * blocks) then copies whatever its slots hold: nobody reads it any more.
 * Locks are only tried: a thread that held one when exit began may never
 * let go. */
void stream_release_all_at_exit(void)
{
	if (pthread_mutex_trylock(&ring_lock) == 0) {
		for (struct sring *r = ring_list; r; r = r->next) {
			if (pthread_mutex_trylock(&r->lock) != 0)
				continue; /* a submission is under way: its stream is not waiting yet */
			for (unsigned s = 0; s < RING_SLOTS && r->next_q > s; s++) {
				uint64_t last = (r->next_q - 1 - s) / RING_SLOTS * RING_SLOTS + s;
				uint32_t g = (uint32_t)(last / RING_SLOTS) + 1;
				__atomic_store_n(&r->fill[s], g, __ATOMIC_RELEASE);
				__atomic_store_n(&r->free[s], g, __ATOMIC_RELEASE);
			}
			pthread_mutex_unlock(&r->lock);
		}
		pthread_mutex_unlock(&ring_lock);
	}
	if (pthread_mutex_trylock(&flag_lock) == 0) {
		for (struct flag_page *pg = pages; pg; pg = pg->next)
			for (size_t i = 0; i < FLAGS_PER_PAGE; i++)
				if (pg->flags[i].has_tracked)
					flag_signal(&pg->flags[i], pg->flags[i].seq);
		pthread_mutex_unlock(&flag_lock);
	}
}

/* ------------------------------------------------------------ registry */

int stream_register(CUstream stream, unsigned flags)
{
	if (flags & ~(unsigned)(FIXED_ALL | CU_FILE_STREAM_PAGE_ALIGNED_INPUTS))
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	int r = 0;
	pthread_mutex_lock(&reg_lock);
	size_t i;
	for (i = 0; i < nregs; i++)
		if (regs[i].stream == stream)
			break;
	if (i == nregs) {
		struct stream_ent *n = realloc(regs, (nregs + 1) * sizeof(*n));
		if (n) {
			regs = n;
			regs[nregs++].stream = stream;
		} else {
			r = OCF_ERR(CU_FILE_NOMEM_ERROR);
		}
	}
	if (r == 0)
		regs[i].flags = flags;
	pthread_mutex_unlock(&reg_lock);
	return r;
}

int stream_deregister(CUstream stream)
{
	int r = OCF_ERR(CU_FILE_INVALID_VALUE);
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < nregs; i++)
		if (regs[i].stream == stream) {
			regs[i] = regs[--nregs];
			r = 0;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	return r;
}

static uint64_t ns_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)(now.tv_sec - t0->tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec - (uint64_t)t0->tv_nsec;
}

void stream_teardown(void)
{
	pthread_mutex_lock(&reg_lock);
	free(regs);
	regs = NULL;
	nregs = 0;
	pthread_mutex_unlock(&reg_lock);

	pthread_mutex_lock(&flag_lock);
	struct flag_page *pg = pages;
	pages = NULL;
	free_flags = NULL;
	pthread_mutex_unlock(&flag_lock);
	pthread_mutex_lock(&ring_lock);
	struct sring *ring = ring_list;
	ring_list = NULL;
	ring_total = 0;
	if (ring_bound)
		stats_pinned_bound_add(-(int64_t)ring_bound);
	ring_bound = 0;
	pthread_mutex_unlock(&ring_lock);
	/* Every operation has completed (the close waited for them), but the
	 * streams may not have passed their last commands yet: free memory
	 * once they have, or leave it to them. */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ring) {
		struct sring *next = ring->next;
		bool passed = true;
		for (;;) {
			pthread_mutex_lock(&ring_lock);
			passed = ring_idle_locked(ring);
			bool untracked = ring->untracked;
			pthread_mutex_unlock(&ring_lock);
			if (passed || untracked || ns_since(&t0) > PASS_WAIT_NS)
				break;
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
		size_t bytes = ring_bytes(ring->chunk);
		if (!passed) {
			log_error("driver close: a stream has not passed a cuFile operation; its staging ring (%zu KiB) "
				  "stays allocated",
				  bytes / 1024);
		} else if (ocf_cu.CtxPushCurrent(ring->ctx) == CUDA_SUCCESS) {
			ocf_cu.MemFreeHost(ring->mem);
			cuda_ctx_pop();
			stats_pinned_add(-(int64_t)bytes);
		}
		pthread_mutex_destroy(&ring->lock);
		free(ring);
		ring = next;
	}
	while (pg) {
		struct flag_page *next = pg->next;
		bool passed = !pg->untracked;
		while (passed && !page_passed(pg)) {
			if (ns_since(&t0) > PASS_WAIT_NS) {
				passed = false;
				break;
			}
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
		if (!passed) {
			log_error("driver close: a stream has not passed a cuFile wait; its flag page stays allocated");
		} else if (ocf_cu.CtxPushCurrent(pg->ctx) == CUDA_SUCCESS) {
			ocf_cu.MemFreeHost(pg->mem);
			cuda_ctx_pop();
		}
		free(pg);
		pg = next;
	}
}
