/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stream.c - reads and writes ordered with CUDA stream work.
 *
 * DESIGN
 * cuFileReadAsync(..., stream) puts two items on the stream:
 *   1. cuLaunchHostFunc(stream, host_fn, op): runs when every earlier item
 *      of the stream is done.  host_fn must not call CUDA (CUDA's callback
 *      thread forbids it, and it would stall every stream of the context
 *      behind our I/O), so it only appends op to the executor's FIFO.
 *   2. cuStreamWaitValue32_v2(stream, flag, target, GEQ): later items of
 *      the stream wait until the executor has done the I/O, written
 *      *bytes_p and then stored target into flag (release store).
 * The executor runs the synchronous cuFileRead/cuFileWrite path (api_io),
 * reading *size_p, *file_offset_p and *buf_offset_p only then, i.e. after
 * the stream reached the operation, unless cuFileStreamRegister said they
 * are fixed (CU_FILE_STREAM_FIXED_*): those are copied at submission.  When
 * all three are fixed nothing about the request can change any more, so the
 * argument checks, the handle lookup and the buffer resolution (a CUDA
 * pointer query) are done at submission too, and the executor only moves
 * data; a failure found then is still written to *bytes_p in stream order.
 * Operations on one stream therefore stay FIFO with everything else on it.
 *
 * Cost per operation: one host-function launch, one stream wait and one
 * stream write (the "passed" word, below) at submission; on completion one queue hand-off (the CUDA callback thread
 * only takes a mutex) and a store to mapped pinned memory that the GPU
 * polls.  No stream synchronisation, no CUDA call on CUDA's thread.
 *
 * Flags: 32-bit words in pinned host memory (cuMemHostAlloc PORTABLE |
 * DEVICEMAP, a 4 KiB page holds 1024), device addresses from
 * cuMemHostGetDevicePointer_v2 (with unified addressing, valid in every
 * context).  A word is taken by one operation at a time; each use waits
 * for a new, larger target (GEQ is a cyclic comparison), so a word can be
 * reused as soon as its operation completed: a stream whose wait for an
 * older target has not been evaluated yet is released by any later value.
 * Pages are kept until driver close.
 *
 * The application's stream reads a flag word when it reaches the wait,
 * which may be long after the operation completed for the library, and an
 * application may close the driver without synchronising its streams.  So
 * after each wait the stream also writes the target into the flag's
 * "passed" word (cuStreamWriteValue32, its last access to the page), and a
 * close frees a page only when every passed word has caught up with what
 * was queued; pages a stream has not passed after a bounded wait are left
 * allocated (and logged) rather than freed under it.
 *
 * Results in *bytes_p: bytes moved, or the error as a negative number:
 * -errno for system errors (errno of the executor thread cannot reach the
 * caller), -CU_FILE_* for library errors.
 *
 * Lifetime: each operation holds the driver (driver_hold) from submission
 * to completion, so a close waits for queued stream operations; a stream
 * that never reaches them (blocked forever, or in a sticky error state)
 * makes the close wait too.
 */
#define _GNU_SOURCE
#include "stream.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "async.h"
#include "cuda_loader.h"
#include "driver.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "engine.h"
#include "log.h"
#include "stats.h"

#define FLAG_PAGE_BYTES 4096
/* A flag is two words: the one the stream waits on, and the one it writes
 * after the wait ("passed"). */
#define FLAGS_PER_PAGE (FLAG_PAGE_BYTES / (2 * sizeof(uint32_t)))
/* How long a close waits for streams to pass their waits before it leaves
 * the pages allocated. */
#define PASS_WAIT_NS (10ull * 1000000000ull)
#define FIXED_ALL \
	(CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET | CU_FILE_STREAM_FIXED_FILE_SIZE)

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

enum { OP_PENDING, OP_QUEUED, OP_ABANDONED };

struct stream_op {
	struct async_op aop;
	/* PENDING until host_fn hands the op to the executor (QUEUED), or the
	 * submitter gives it up after a failed wait enqueue (ABANDONED).  The
	 * compare-and-swap decides who owns the completion; acq_rel orders the
	 * fields written before it for whoever wins. */
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
	/* All parameters fixed: resolved at submission (prep: the result of
	 * api_io_prepare, io and owns_handle what it produced). */
	bool prepared, owns_handle;
	ssize_t prep;
	struct ocf_io io;
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

/* ------------------------------------------------------------ flag words */

static int flag_page_new(void)
{
	struct ocf_gpu *g;
	int r = gpu_get(0, &g);
	if (r)
		return r;
	struct flag_page *pg = calloc(1, sizeof(*pg));
	if (!pg)
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	CUresult cr = ocf_cu.CtxPushCurrent(g->primary);
	if (cr != CUDA_SUCCESS) {
		free(pg);
		log_error("flag page: cuCtxPushCurrent: %s", cuda_error_name(cr));
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	CUdeviceptr dev = 0;
	cr = ocf_cu.MemHostAlloc(&pg->mem, FLAG_PAGE_BYTES, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
	if (cr == CUDA_SUCCESS) {
		cr = ocf_cu.MemHostGetDevicePointer(&dev, pg->mem, 0);
		if (cr != CUDA_SUCCESS)
			ocf_cu.MemFreeHost(pg->mem);
	}
	cuda_ctx_pop();
	if (cr != CUDA_SUCCESS) {
		log_error("flag page: %s", cuda_error_name(cr));
		free(pg);
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
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
	return !f->has_tracked || (int32_t)(__atomic_load_n(f->passed_host, __ATOMIC_ACQUIRE) - f->tracked) >= 0;
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
		/* Pinning outside the lock: a CUDA call, rare (one page serves
		 * 512 operations in flight). */
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
	return (int32_t)(__atomic_load_n(f->host, __ATOMIC_ACQUIRE) - target) >= 0;
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

/* ------------------------------------------------------------ operations */

static void op_run(struct async_op *aop)
{
	struct stream_op *op = (struct stream_op *)((char *)aop - offsetof(struct stream_op, aop));
	ssize_t r;
	if (op->prepared) {
		/* Checked and resolved at submission: only the I/O is left. */
		r = api_io_run(op->fh, op->base, op->size, op->file_offset, op->buf_offset, op->write,
			       stats_io_begin(), op->prep, &op->io, op->owns_handle);
		op->owns_handle = false;
	} else {
		/* The stream reached the operation: read the parameters now. */
		size_t size = op->fixed & CU_FILE_STREAM_FIXED_FILE_SIZE ? op->size : *op->size_p;
		off_t foff = op->fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET ? op->file_offset : *op->file_offset_p;
		off_t boff = op->fixed & CU_FILE_STREAM_FIXED_BUF_OFFSET ? op->buf_offset : *op->buf_offset_p;
		r = api_io(op->fh, op->base, size, foff, boff, op->write, true);
	}
	/* Release: an application that polls *bytes_p instead of
	 * synchronising the stream sees the I/O's effects once it sees this. */
	__atomic_store_n(op->bytes_p, r, __ATOMIC_RELEASE);
	/* After this store the application may reuse everything it passed;
	 * only our own op and flag are touched below. */
	flag_signal(op->flag, op->target);
	flag_put(op->flag);
	op_put(op);
}

/* Runs on CUDA's callback thread: no CUDA calls, no blocking. */
static void CUDA_CB host_fn(void *arg)
{
	struct stream_op *op = arg;
	int expect = OP_PENDING;
	if (atomic_compare_exchange_strong_explicit(&op->state, &expect, OP_QUEUED, memory_order_acq_rel,
						    memory_order_acquire)) {
		async_submit(&op->aop); /* the executor releases the hold */
		return;
	}
	/* Abandoned by its submitter: nothing waits for it. */
	flag_signal(op->flag, op->target);
	flag_put(op->flag);
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

int stream_io(CUfileHandle_t fh, void *base, size_t *size_p, off_t *file_offset_p, off_t *buf_offset_p,
	      ssize_t *bytes_p, CUstream stream, bool write)
{
	int r = async_start();
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
	if (op->fixed & CU_FILE_STREAM_FIXED_FILE_SIZE)
		op->size = *size_p;
	if (op->fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET)
		op->file_offset = *file_offset_p;
	if (op->fixed & CU_FILE_STREAM_FIXED_BUF_OFFSET)
		op->buf_offset = *buf_offset_p;
	if (op->fixed == FIXED_ALL) {
		/* Nothing can change before the stream reaches the operation:
		 * check the arguments, take the handle and resolve the buffer
		 * now, so the executor only moves data.  A failure is still
		 * reported in *bytes_p, in stream order. */
		op->prepared = true;
		op->prep = api_io_prepare(fh, base, op->size, op->file_offset, op->buf_offset, NULL, &op->io,
					  &op->owns_handle);
	}
	/* A GPU without lanes gets them here, before the stream can wait
	 * for this operation. */
	gpu_prepare_async(base, engine_participants() + async_thread_count());
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
	CUresult cr = ocf_cu.LaunchHostFunc(stream, host_fn, op);
	if (cr != CUDA_SUCCESS) {
		log_error("cuFile%sAsync: cuLaunchHostFunc: %s", write ? "Write" : "Read", cuda_error_name(cr));
		flag_passed_now(f, target);
		flag_put(op->flag);
		driver_release();
		op_free(op);
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	cr = ocf_cu.StreamWaitValue32(stream, op->flag->dev, op->target, CU_STREAM_WAIT_VALUE_GEQ);
	if (cr != CUDA_SUCCESS) {
		log_error("cuFile%sAsync: cuStreamWaitValue32: %s", write ? "Write" : "Read", cuda_error_name(cr));
		int expect = OP_PENDING;
		if (!atomic_compare_exchange_strong_explicit(&op->state, &expect, OP_ABANDONED, memory_order_acq_rel,
							     memory_order_acquire)) {
			/* Already running: the caller must not reuse its buffer
			 * while we write it, so wait for the I/O to finish.  The
			 * flag cannot be freed meanwhile (we are in the gate). */
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
		/* The stream has passed the wait once synchronised (nothing of
		 * the application's comes after it yet); if even that fails, the
		 * flag is never reused and its page never freed. */
		if (ocf_cu.StreamSynchronize(stream) == CUDA_SUCCESS) {
			flag_passed_now(f, target);
		} else {
			log_error("cuFile%sAsync: cannot tell when the stream leaves its flag (%s): flag page kept",
				  write ? "Write" : "Read", cuda_error_name(cr));
			pthread_mutex_lock(&flag_lock);
			f->page->untracked = true;
			pthread_mutex_unlock(&flag_lock);
		}
	}
	op_put(op);
	return 0;
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
	/* Every operation has completed (the close waited for them), but the
	 * streams may not have reached their waits yet: free a page once they
	 * have passed, or leave it to them. */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (pg) {
		struct flag_page *next = pg->next;
		bool passed = !pg->untracked;
		while (passed && !page_passed(pg)) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			uint64_t ns = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
				      (uint64_t)t0.tv_nsec;
			if (ns > PASS_WAIT_NS) {
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
