/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu.h - per-GPU state and the staging (bounce) buffer pools.
 */
#ifndef OCF_GPU_H_
#define OCF_GPU_H_

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Staging buffers per lane: one being filled by the file while the others
 * are in flight to or from the GPU. */
#define OCF_LANE_DEPTH 3

struct ocf_pool;
struct ocf_ring;

/* One staging buffer: page aligned, pinned when it belongs to a GPU pool. */
struct ocf_slot {
	char *buf;
	size_t size;  /* bytes usable at buf */
	size_t chunk; /* largest file range staged at once */
};

/* What one thread needs to move data through a GPU: staging buffers, a
 * stream of the GPU's primary context and an event per buffer that marks
 * when its copy is done. */
struct ocf_lane {
	struct ocf_lane *next;
	struct ocf_pool *pool;
	int depth;
	struct ocf_slot bufs[OCF_LANE_DEPTH];
	CUevent ev[OCF_LANE_DEPTH];      /* BLOCKING_SYNC: slept for (long copies) */
	CUevent ev_poll[OCF_LANE_DEPTH]; /* not BLOCKING_SYNC: polled (short copies) */
	CUstream stream;    /* blocking: ordered with the legacy default stream */
	CUstream nb_stream; /* non-blocking: for the asynchronous executor's I/O */
	struct ocf_ring *ring; /* io_uring of the lane's owner (uring.h), or NULL */
	/* A copy of one of its buffers may still be queued where its owner
	 * could not drain it (a failed grouped copy, copygroup.h): the lane
	 * must be discarded, never reused.  Set by its owner only. */
	bool unsafe;
};

/* A block of staging memory that lanes are carved from: pinning one large
 * block costs far less than pinning many small ones. */
struct ocf_arena {
	struct ocf_arena *next;
	char *base;
	size_t size, used;
	bool registered; /* mmap + mbind + cuMemHostRegister, not cuMemHostAlloc */
};

struct ocf_pool {
	pthread_mutex_t arena_lock; /* protects arenas, arena_bytes (held while pinning) */
	struct ocf_arena *arenas;
	size_t arena_bytes; /* sum of the arenas' sizes */
	pthread_mutex_t lock; /* protects free, created */
	pthread_cond_t cv;    /* signalled when a lane is returned */
	struct ocf_lane *free;
	int created;
	int max;
	size_t chunk;
	struct ocf_gpu *gpu; /* NULL: host pool (plain aligned memory) */
	int waiters; /* threads waiting for a lane (atomic: read without the lock) */
};

struct ocf_gpu {
	int ordinal;
	CUdevice dev;
	CUcontext primary;
	int numa_node; /* where its staging memory is placed; -1: anywhere */
	bool up;       /* gpu_bringup done (first lanes exist) */
	pthread_mutex_t bring_lock; /* serialises gpu_bringup */
	CUevent alive_ev; /* never recorded: queried to tell a failed context */
	struct ocf_pool pool;
	/* Small copies of several threads grouped (copygroup.h), or NULL; set
	 * once by gpu_bringup: read it with gpu_copy_groups. */
	struct ocf_copy_groups *groups;
};

static inline struct ocf_copy_groups *gpu_copy_groups(struct ocf_gpu *g)
{
	return g ? __atomic_load_n(&g->groups, __ATOMIC_ACQUIRE) : NULL;
}

/* Per-GPU state, created at first use while the driver is open. */
int gpu_get(int ordinal, struct ocf_gpu **out);
/* Pool of aligned host staging buffers for O_DIRECT I/O on host memory. */
struct ocf_pool *host_pool(void);

/* Whether lane events are BLOCKING_SYNC (the default; not with
 * OPENCUFILE_EVENT_WAIT=spin). */
bool lane_events_sleep(void);

/* Brings a GPU up: all its staging lanes and its liveness event, on the
 * calling thread.  Done at driver open for GPUs the application already
 * uses, else at the first synchronous or batch I/O on the GPU, before
 * anything asynchronous of the library can wait on it: no lane is created
 * at any other time.  0, or an error. */
int gpu_bringup(struct ocf_gpu *g);
/* gpu_bringup for the GPU owning ptr (device memory), before batch work on
 * it is queued; nothing for host memory. */
void gpu_prepare_async(const void *ptr);
/* CUDA_SUCCESS while the GPU's primary context is usable; its sticky error
 * after a failure.  Takes no driver lock (an event query). */
CUresult gpu_alive(struct ocf_gpu *g);

/* Takes a lane, waiting while all are busy (GPU pools: lanes are only
 * made by gpu_bringup); returns 0 or an error. */
int pool_get(struct ocf_pool *pool, struct ocf_lane **out);
/* Takes a lane only if one is free (host pools: or may be made at once);
 * returns 0, or -EAGAIN. */
int pool_try_get(struct ocf_pool *pool, struct ocf_lane **out);
/* Called (outside the pool's lock) when a thread is about to wait for a
 * lane of `pool`: holders of idle lanes give them back (readahead.c). */
void pool_set_reclaim(void (*fn)(struct ocf_pool *pool));
/* Whether a thread waits for a lane of the pool now (a hint). */
bool pool_has_waiters(const struct ocf_pool *pool);
/* Lanes the pool has made (a hint: lanes discarded after failures go). */
int pool_lanes(struct ocf_pool *pool);
void pool_put(struct ocf_lane *lane);
/* Destroys a lane whose stream may still hold work (a failed copy). */
void pool_discard(struct ocf_lane *lane);
/* Staging chunk size of the lanes (bytes). */
size_t pool_chunk(const struct ocf_pool *pool);

/* The lane's io_uring ring (uring.h), set up at its first use with the
 * lane's buffers; NULL when file I/O goes through pread/pwrite.  The lane's
 * owner is the only user. */
struct ocf_ring *lane_ring(struct ocf_lane *lane);

/* The event of buffer j to record after a copy of `bytes` into or out of
 * it: one that is cheap to record and is polled for a short copy, one that
 * lets the waiter sleep for a long one (gpu.c says why).  Wait for it with
 * gpu_event_wait(ev, bytes). */
CUevent gpu_lane_event(const struct ocf_lane *lane, int j, size_t bytes);

/* Waits for a lane's event marking a copy of `bytes` (the last of those it
 * covers): polled briefly when the copy is short, else slept for in the
 * driver (gpu.c says why).  Returns what cuEventQuery/cuEventSynchronize
 * returned. */
CUresult gpu_event_wait(CUevent ev, size_t bytes);
/* The same, for a wait whose end completes many entries at once (a batch
 * staging buffer's): a copy held up past its polling budget is looked at
 * after naps by the clock (ocf_nap_ns) rather than naps the thread's timer
 * slack stretches (gpu.c says why). */
CUresult gpu_event_wait_prompt(CUevent ev, size_t bytes);

/* Releases every pool, stream and context.  Called by the driver close
 * when no I/O is in flight. */
void gpu_teardown_all(void);

/* Driver open: brings up every GPU whose primary context the application
 * already uses, with `lanes` lanes each (OPENCUFILE_PREWARM=0: not at open;
 * a GPU is then brought up at its first I/O). */
void gpu_prewarm_start(int lanes);

#endif /* OCF_GPU_H_ */
