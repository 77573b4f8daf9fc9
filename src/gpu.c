/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu.c - per-GPU contexts, staging memory and the waits for its copies.
 *
 * DESIGN: every byte that moves between a file and GPU memory passes through
 * staging buffers: page-aligned, pinned host memory.  They are handed out as
 * lanes: OCF_LANE_DEPTH buffers, a stream pair of the GPU's primary context
 * (blocking and non-blocking) and two events per buffer (one slept for, one
 * polled), everything one thread needs to keep the file and the copy engine
 * busy at once.
 *
 * Staging memory: a GPU pool's lanes are carved out of arenas, large blocks
 * pinned at once (cuMemHostAlloc; or, where the GPU has a NUMA node, mapped,
 * placed on it and registered: pin_arena says why), since pinning one large
 * block costs far less than pinning many small ones.  All the lanes of a
 * GPU are made by gpu_bringup before anything asynchronous can be queued on
 * it, up to a bound derived from the staging budget (pool_init), so pinned
 * memory use is bounded; they are kept until the driver closes.  A second
 * pool of plain aligned host memory (host_staging) serves O_DIRECT I/O on
 * host buffers; its lanes are made on demand.
 *
 * Taking a lane: pool_get waits for one (take_lane; take_host_lane for the
 * host pool), pool_try_get does not: engine helpers that find none leave the
 * work to the caller, so they never wait on a caller holding lanes.
 *
 * Waiting for copies (gpu_event_wait): a copy of up to 1 MiB is polled, a
 * longer one slept for in the driver - nobody spins on a copy that takes
 * milliseconds, nobody sleeps on one that takes microseconds (the comment
 * above ev_mode has the measurements).  A polled copy still not done after
 * its polling budget (queued behind other threads' copies) is looked at
 * after naps that double from 20 us; the batch path's waits
 * (gpu_event_wait_prompt) take them by the clock (ocf_nap_ns), the others
 * with the thread's timer slack (see first_nap_ns).
 */
#define _GNU_SOURCE
#include "gpu.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "copygroup.h"
#include "cuda_loader.h"
#include "internal.h"
#include "log.h"
#include "profile.h"
#include "stats.h"
#include "uring.h"
#include "watchdog.h"

#define OCF_MAX_GPUS 64

/* gpu_lock protects gpus[] and host_pool_ready (creation and teardown). */
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ocf_gpu *gpus[OCF_MAX_GPUS];
/* How many GPUs are up (gpu_bringup); reset at teardown.  When all of them
 * are, gpu_prepare_async needs no pointer query at all. */
static int up_gpus;

static struct ocf_pool host_staging;
static bool host_pool_ready;

static size_t buf_bytes(const struct ocf_pool *p)
{
	return OCF_ALIGN_UP(p->chunk + 3 * (size_t)OCF_MAX_ALIGN, (size_t)OCF_MAX_ALIGN);
}

static void pool_init(struct ocf_pool *p, struct ocf_gpu *gpu)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->arena_lock, NULL);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->gpu = gpu;
	/* Chunks of 4 MiB unless max_direct_io_size_kb asks for less. */
	p->chunk = OCF_MIN(ocf_cfg.staging_chunk_kb, OCF_EFF(OCF_K_MAX_DIRECT_IO_SIZE_KB)) * 1024;
	uint64_t chunk_kb;
	if (config_env_given(OCF_E_CHUNK_KB, &chunk_kb)) /* tests */
		p->chunk = (size_t)chunk_kb * 1024;
	if (p->chunk < 65536)
		p->chunk = 65536;
	/* The POSIX pool slabs are NVIDIA's bounce-buffer budget in its
	 * compatible mode (about 1.1 GiB by default); ours is the same bound,
	 * spent on lanes, created only as they are needed.  GPU bounce-buffer
	 * slabs (1.17), when configured, are that per-GPU budget instead, and
	 * their largest slab bounds a chunk as it bounds a transfer there. */
	size_t largest;
	size_t budget = config_staging_budget(&ocf_cfg, &largest);
	if (largest && largest < p->chunk)
		p->chunk = OCF_MAX(largest, (size_t)65536);
	size_t lane_bytes = OCF_LANE_DEPTH * buf_bytes(p);
	p->max = (int)OCF_MIN(budget / lane_bytes, 1024);
	if (p->max < 2)
		p->max = 2;
	if (gpu)
		stats_pinned_bound_add((int64_t)((size_t)p->max * lane_bytes));
}

size_t pool_chunk(const struct ocf_pool *p) { return p->chunk; }

bool pool_has_waiters(const struct ocf_pool *p) { return __atomic_load_n(&p->waiters, __ATOMIC_RELAXED) > 0; }

int pool_lanes(struct ocf_pool *p)
{
	pthread_mutex_lock(&p->lock);
	int n = p->created;
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* The NUMA node a GPU hangs off, from sysfs, where the machine has more
 * than one node; -1 otherwise (or when sysfs does not say).
 * OPENCUFILE_NUMA_NODE forces a node (tests and experiments). */
static int gpu_numa_node(CUdevice dev)
{
	uint64_t forced;
	if (config_env_given(OCF_E_NUMA_NODE, &forced))
		return (int)forced;
	char online[64] = "", bus[32], path[96];
	FILE *f = fopen("/sys/devices/system/node/online", "re");
	if (f) {
		if (!fgets(online, sizeof(online), f))
			online[0] = '\0';
		fclose(f);
	}
	if (!strpbrk(online, ",-")) /* "0": one node, nothing to choose */
		return -1;
	if (ocf_cu.DeviceGetPCIBusId(bus, (int)sizeof(bus), dev) != CUDA_SUCCESS)
		return -1;
	for (char *c = bus; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", bus);
	int node = -1;
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d", &node) != 1)
			node = -1;
		fclose(f);
	}
	return node;
}

/* Pins `size` bytes of staging memory for GPU g.  By default with
 * cuMemHostAlloc.  Where the GPU has a NUMA node (or with
 * OPENCUFILE_STAGING_REGISTER=1), as an anonymous mapping backed by
 * transparent huge pages, placed on that node (MPOL_PREFERRED), populated,
 * then pinned with cuMemHostRegister.  That pins 114 MiB in 19-25 ms where
 * cuMemHostAlloc takes 42-71 ms (H200 machine), but measured there,
 * cuMemHostRegister waits until the device's queued work drains, and
 * cuMemHostAlloc does not: a pin made while an application stream waits
 * (for its own flag, a long kernel, or a cuFileReadAsync) stalls until that
 * work is done.  So the faster pinning is kept for NUMA placement only.
 * Where any step is refused, cuMemHostAlloc. */
#define HUGE_PAGE (2u << 20)
static int pin_arena(struct ocf_gpu *g, size_t *size, size_t room, void **mem, bool *registered)
{
	*registered = false;
	if (g->numa_node < 0 && !config_env(OCF_E_STAGING_REGISTER)) /* tests */
		goto hostalloc;
	/* Whole huge pages where the pool's bound leaves room for them. */
	size_t len = OCF_ALIGN_UP(*size, (size_t)HUGE_PAGE);
	if (len > room)
		len = OCF_ALIGN_UP(*size, (size_t)4096);
	/* Map one huge page more and trim, so the block starts on one. */
	char *raw = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw != MAP_FAILED) {
		char *m = (char *)OCF_ALIGN_UP((uintptr_t)raw, (uintptr_t)HUGE_PAGE);
		if (m > raw)
			munmap(raw, (size_t)(m - raw));
		if (m + len < raw + len + HUGE_PAGE)
			munmap(m + len, (size_t)(raw + len + HUGE_PAGE - (m + len)));
		(void)madvise(m, len, MADV_HUGEPAGE); /* a hint; "never" THP is fine */
		bool placed = true;
		if (g->numa_node >= 0 && g->numa_node < 64) {
			unsigned long mask = 1ul << g->numa_node;
			placed = syscall(SYS_mbind, m, len, 1 /* MPOL_PREFERRED */, &mask, 64, 0) == 0;
			if (!placed)
				log_debug("GPU %d: NUMA placement on node %d refused (%s)", g->ordinal, g->numa_node,
					  strerror(errno));
		}
		/* MADV_POPULATE_WRITE (Linux 5.14) faults it all in at once;
		 * older kernels: touch every page. */
		if (placed && madvise(m, len, 23 /* MADV_POPULATE_WRITE */) != 0)
			for (size_t o = 0; o < len; o += 4096)
				m[o] = 0;
		if (placed && ocf_cu.MemHostRegister(m, len, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS) {
			*mem = m;
			*size = len;
			*registered = true;
			return 0;
		}
		munmap(m, len);
	}
hostalloc:
	/* Pinned memory from the driver is page aligned; OCF_MAX_ALIGN
	 * alignment is asked of what is carved, so leave room to align. */
	*size += OCF_MAX_ALIGN;
	CUresult r = ocf_cu.MemHostAlloc(mem, *size, CU_MEMHOSTALLOC_PORTABLE);
	if (r != CUDA_SUCCESS) {
		log_error("pinned staging allocation of %zu bytes failed: %s", *size, cuda_error_name(r));
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	return 0;
}

static void unpin_arena(struct ocf_arena *a)
{
	CUresult r = a->registered ? ocf_cu.MemHostUnregister(a->base) : ocf_cu.MemFreeHost(a->base);
	if (r != CUDA_SUCCESS)
		log_error("staging memory release failed: %s", cuda_error_name(r));
	if (a->registered)
		munmap(a->base, a->size);
}

/* Lanes per arena: the first arena of a pool is small (an application
 * doing only small I/O pins little), later ones hold many lanes. */
#define FIRST_ARENA_LANES 2
#define ARENA_LANES 8

/* Carves `bytes` (a multiple of OCF_MAX_ALIGN) of staging memory into
 * *out; pins a new arena when the current one is full.  For a GPU pool the
 * caller has made its primary context current.  Returns 0, or
 * CU_FILE_CUDA_DRIVER_ERROR when pinning failed (like every failed CUDA
 * call), CU_FILE_NOMEM_ERROR when host memory ran out. */
static int arena_take(struct ocf_pool *p, size_t bytes, bool consume, char **out)
{
	pthread_mutex_lock(&p->arena_lock);
	struct ocf_arena *a = p->arenas;
	if (!a || a->size - a->used < bytes) {
		size_t lane = OCF_LANE_DEPTH * buf_bytes(p);
		size_t size = OCF_MAX(bytes, lane * (a ? ARENA_LANES : FIRST_ARENA_LANES));
		/* Never pin more than the pool's bound: the last arena holds
		 * only the lanes still allowed. */
		size_t bound = (size_t)p->max * lane;
		size_t left = bound > p->arena_bytes ? bound - p->arena_bytes : 0;
		size = OCF_MAX(bytes, OCF_MIN(size, left));
		struct ocf_arena *n = calloc(1, sizeof(*n));
		void *mem = NULL;
		bool registered = false;
		int err = n ? 0 : OCF_ERR(CU_FILE_NOMEM_ERROR);
		if (!err && p->gpu) {
			err = pin_arena(p->gpu, &size, OCF_MAX(left, size), &mem, &registered);
		} else if (!err && posix_memalign(&mem, OCF_MAX_ALIGN, size) != 0) {
			err = OCF_ERR(CU_FILE_NOMEM_ERROR);
		}
		if (err) {
			free(n);
			pthread_mutex_unlock(&p->arena_lock);
			return err;
		}
		n->base = mem;
		n->size = size;
		n->registered = registered;
		p->arena_bytes += size;
		if (p->gpu)
			stats_pinned_add((int64_t)size);
		n->used = OCF_ALIGN_UP((uintptr_t)mem, OCF_MAX_ALIGN) - (uintptr_t)mem;
		n->next = p->arenas;
		p->arenas = n;
		a = n;
		log_debug("staging arena of %zu KiB %s", size / 1024, p->gpu ? "pinned" : "allocated");
	}
	*out = a->base + a->used;
	if (consume)
		a->used += bytes;
	pthread_mutex_unlock(&p->arena_lock);
	return 0;
}

/* Gives back the most recent carve (a lane that could not be completed). */
static void arena_uncarve(struct ocf_pool *p, char *mem, size_t bytes)
{
	pthread_mutex_lock(&p->arena_lock);
	struct ocf_arena *a = p->arenas;
	if (a && mem + bytes == a->base + a->used)
		a->used -= bytes;
	pthread_mutex_unlock(&p->arena_lock);
}

static void arenas_free(struct ocf_pool *p)
{
	while (p->arenas) {
		struct ocf_arena *a = p->arenas;
		p->arenas = a->next;
		if (p->gpu) {
			unpin_arena(a);
			stats_pinned_add(-(int64_t)a->size);
		} else {
			free(a->base);
		}
		free(a);
	}
	p->arena_bytes = 0;
}

struct ocf_ring *lane_ring(struct ocf_lane *l)
{
	if (!l->ring) {
		struct iovec iov[OCF_LANE_DEPTH];
		for (int i = 0; i < l->depth; i++)
			iov[i] = (struct iovec){.iov_base = l->bufs[i].buf, .iov_len = l->bufs[i].size};
		l->ring = uring_ring_new(iov, l->depth);
	}
	return l->ring;
}

/* Events and stream of a lane; its buffers belong to the pool's arenas. */
static void lane_free_buffers(struct ocf_lane *l)
{
	struct ocf_pool *p = l->pool;
	uring_ring_destroy(l->ring);
	l->ring = NULL;
	if (!p->gpu)
		return;
	/* Streams and events are destroyed by handle, so try even if the
	 * context cannot be made current: a leak is worse than a failed call. */
	bool pushed = ocf_cu.CtxPushCurrent(p->gpu->primary) == CUDA_SUCCESS;
	for (int i = 0; i < l->depth; i++) {
		if (l->ev[i])
			ocf_cu.EventDestroy(l->ev[i]);
		if (l->ev_poll[i])
			ocf_cu.EventDestroy(l->ev_poll[i]);
	}
	CUstream streams[2] = {l->stream, l->nb_stream};
	for (int i = 0; i < 2; i++) {
		if (!streams[i])
			continue;
		CUresult r = ocf_cu.StreamDestroy(streams[i]);
		if (r != CUDA_SUCCESS)
			log_error("staging stream release failed: %s", cuda_error_name(r));
	}
	if (pushed) {
		cuda_ctx_pop();
	}
}

static int lane_create(struct ocf_pool *p, struct ocf_lane **out)
{
	struct ocf_lane *l = calloc(1, sizeof(*l));
	if (!l)
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	l->pool = p;
	int r = 0;
	bool pushed = false;
	if (p->gpu) {
		if (ocf_cu.CtxPushCurrent(p->gpu->primary) != CUDA_SUCCESS) {
			r = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			goto fail;
		}
		pushed = true;
		/* A blocking stream: its copies wait for work the application
		 * queued earlier on the context's legacy default stream (a
		 * cudaMemset, a kernel producing the data to write) and later
		 * legacy-stream work waits for them, the ordering a synchronous
		 * cudaMemcpy would give.  Registered memory is ordered with the
		 * application's synchronous copies through SYNC_MEMOPS too. */
		CUresult cr = ocf_cu.StreamCreate(&l->stream, CU_STREAM_DEFAULT);
		if (cr != CUDA_SUCCESS) {
			log_error("stream creation failed: %s", cuda_error_name(cr));
			l->stream = NULL;
			r = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			goto fail;
		}
		/* And a non-blocking one, for I/O that an application stream is
		 * waiting for (stream and batch operations run by the executor):
		 * ordering with the legacy stream there could wait for work that
		 * itself waits for this I/O. */
		cr = ocf_cu.StreamCreate(&l->nb_stream, CU_STREAM_NON_BLOCKING);
		if (cr != CUDA_SUCCESS) {
			log_error("stream creation failed: %s", cuda_error_name(cr));
			l->nb_stream = NULL;
			r = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			goto fail;
		}
	}
	char *mem;
	r = arena_take(p, OCF_LANE_DEPTH * buf_bytes(p), true, &mem);
	if (r)
		goto fail;
	for (int i = 0; i < OCF_LANE_DEPTH; i++) {
		struct ocf_slot *b = &l->bufs[i];
		b->chunk = p->chunk;
		b->size = buf_bytes(p);
		b->buf = mem + (size_t)i * buf_bytes(p);
		l->depth = i + 1; /* what lane_free_buffers must look at */
		if (!p->gpu)
			continue;
		CUresult cr;
		/* BLOCKING_SYNC: cuEventSynchronize sleeps instead of
		 * spinning (see gpu_event_wait). */
		cr = ocf_cu.EventCreate(&l->ev[i], CU_EVENT_DISABLE_TIMING |
						       (lane_events_sleep() ? CU_EVENT_BLOCKING_SYNC : 0));
		if (cr != CUDA_SUCCESS) {
			log_error("event creation failed: %s", cuda_error_name(cr));
			l->ev[i] = NULL;
			r = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			goto fail;
		}
		/* A second event per buffer, without BLOCKING_SYNC, for copies
		 * that are polled: recording a BLOCKING_SYNC event costs more
		 * (about 1.3 us of a 4 KiB read's 11 on the H100 machine) and
		 * its interrupt is wasted on a waiter that polls. */
		if (!lane_events_sleep())
			continue;
		cr = ocf_cu.EventCreate(&l->ev_poll[i], CU_EVENT_DISABLE_TIMING);
		if (cr != CUDA_SUCCESS) {
			log_error("event creation failed: %s", cuda_error_name(cr));
			l->ev_poll[i] = NULL;
			r = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			goto fail;
		}
	}
	if (pushed) {
		cuda_ctx_pop();
	}
	*out = l;
	return 0;

fail:
	lane_free_buffers(l);
	if (l->bufs[0].buf)
		arena_uncarve(p, l->bufs[0].buf, OCF_LANE_DEPTH * buf_bytes(p));
	if (pushed) {
		cuda_ctx_pop();
	}
	free(l);
	return r;
}

/* A lane of a host pool: plain memory, no CUDA call, made on demand. */
static int take_host_lane(struct ocf_pool *p, struct ocf_lane **out, bool wait)
{
	bool create_failed = false;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->free) {
			struct ocf_lane *l = p->free;
			p->free = l->next;
			pthread_mutex_unlock(&p->lock);
			*out = l;
			return 0;
		}
		if (create_failed && p->created == 0)
			create_failed = false;
		if (p->created < p->max && !create_failed) {
			p->created++; /* reserve the place; create outside the lock */
			pthread_mutex_unlock(&p->lock);
			struct ocf_lane *l = NULL;
			int r = lane_create(p, &l);
			if (r == 0) {
				*out = l;
				return 0;
			}
			pthread_mutex_lock(&p->lock);
			p->created--;
			pthread_cond_broadcast(&p->cv);
			if (p->created == 0 || !wait) {
				pthread_mutex_unlock(&p->lock);
				return r;
			}
			create_failed = true;
			continue;
		}
		if (!wait) {
			pthread_mutex_unlock(&p->lock);
			return -EAGAIN;
		}
		pthread_cond_wait(&p->cv, &p->lock);
	}
}

/* A lane of a GPU pool.  GPU lanes are never created here: all of them
 * are made by gpu_bringup, on the thread that first touches the GPU (the
 * driver open for GPUs the application already uses), before anything
 * asynchronous can be queued on it.  Creating a stream or an event can
 * wait, inside the driver and holding the lock every copy needs, while a
 * stream is blocked in a stream wait (docs/reliability.md, "Hangs"): no
 * thread serving I/O may be that thread, and no thread of the library may
 * do it in the background at a moment nobody controls.  Callers wait for a
 * lane to come back; helpers leave the work to the others. */
static void (*_Atomic lane_reclaim)(struct ocf_pool *);

void pool_set_reclaim(void (*fn)(struct ocf_pool *)) { atomic_store_explicit(&lane_reclaim, fn, memory_order_release); }

static int take_lane(struct ocf_pool *p, struct ocf_lane **out, bool wait)
{
	if (!p->gpu)
		return take_host_lane(p, out, wait);
	if (!__atomic_load_n(&p->gpu->up, __ATOMIC_ACQUIRE)) {
		int r = gpu_bringup(p->gpu);
		if (r)
			return r;
	}
	bool waiting = false;
	int ret = 0;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->free) {
			struct ocf_lane *l = p->free;
			p->free = l->next;
			*out = l;
			break;
		}
		if (!wait) {
			ret = -EAGAIN;
			break;
		}
		if (p->created == 0) {
			/* Every lane was discarded after failures: none will
			 * come back. */
			ret = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			break;
		}
		if (!waiting) {
			waiting = true;
			pthread_mutex_unlock(&p->lock);
			void (*reclaim)(struct ocf_pool *) = atomic_load_explicit(&lane_reclaim, memory_order_acquire);
			if (reclaim)
				reclaim(p);
			watchdog_wait_begin("staged I/O", -1, p->gpu->ordinal, "a free staging lane (all are in use)");
			pthread_mutex_lock(&p->lock);
			continue;
		}
		/* Counted while it waits: holders of idle lanes (read-ahead
		 * windows) see it at their next use and give theirs back. */
		__atomic_add_fetch(&p->waiters, 1, __ATOMIC_RELAXED);
		pthread_cond_wait(&p->cv, &p->lock);
		__atomic_sub_fetch(&p->waiters, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&p->lock);
	if (waiting)
		watchdog_wait_end();
	return ret;
}

int pool_get(struct ocf_pool *p, struct ocf_lane **out) { return take_lane(p, out, true); }

int pool_try_get(struct ocf_pool *p, struct ocf_lane **out) { return take_lane(p, out, false); }

void pool_discard(struct ocf_lane *l)
{
	struct ocf_pool *p = l->pool;
	lane_free_buffers(l); /* its arena memory stays until the pool goes */
	free(l);
	pthread_mutex_lock(&p->lock);
	p->created--;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->lock);
}

/* Creates one lane and puts it on the free list, unless the pool already
 * has `target` lanes: 0, -EEXIST when it has, or the creation error. */
static int pool_prepare_one(struct ocf_pool *p, int target)
{
	pthread_mutex_lock(&p->lock);
	if (p->created >= target || p->created >= p->max) {
		pthread_mutex_unlock(&p->lock);
		return -EEXIST;
	}
	p->created++; /* reserve the place; create outside the lock */
	pthread_mutex_unlock(&p->lock);
	struct ocf_lane *l = NULL;
	int r = lane_create(p, &l);
	if (r == 0) {
		pool_put(l);
		return 0;
	}
	pthread_mutex_lock(&p->lock);
	p->created--;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->lock);
	return r;
}

void pool_put(struct ocf_lane *l)
{
	struct ocf_pool *p = l->pool;
	pthread_mutex_lock(&p->lock);
	l->next = p->free;
	p->free = l;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->lock);
}

/* Called with no I/O in flight, so every created lane is on the free list. */
static void pool_destroy(struct ocf_pool *p)
{
	while (p->free) {
		struct ocf_lane *l = p->free;
		p->free = l->next;
		lane_free_buffers(l);
		free(l);
		p->created--;
	}
	if (p->created != 0)
		log_error("staging pool torn down with %d lane(s) still in use", p->created);
	if (p->gpu && ocf_cu.CtxPushCurrent(p->gpu->primary) == CUDA_SUCCESS) {
		arenas_free(p);
		cuda_ctx_pop();
	} else {
		arenas_free(p);
	}
	if (p->gpu)
		stats_pinned_bound_add(-(int64_t)((size_t)p->max * OCF_LANE_DEPTH * buf_bytes(p)));
	pthread_mutex_destroy(&p->arena_lock);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cv);
}

int gpu_get(int ordinal, struct ocf_gpu **out)
{
	if (ordinal < 0 || ordinal >= OCF_MAX_GPUS || ordinal >= cuda_device_count())
		return OCF_ERR(CU_FILE_DEVICE_NOT_FOUND);
	struct ocf_gpu *g = __atomic_load_n(&gpus[ordinal], __ATOMIC_ACQUIRE);
	if (g) {
		*out = g;
		return 0;
	}
	pthread_mutex_lock(&gpu_lock);
	g = gpus[ordinal];
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			pthread_mutex_unlock(&gpu_lock);
			return OCF_ERR(CU_FILE_NOMEM_ERROR);
		}
		g->ordinal = ordinal;
		CUresult r = ocf_cu.DeviceGet(&g->dev, ordinal);
		if (r == CUDA_SUCCESS)
			r = ocf_cu.DevicePrimaryCtxRetain(&g->primary, g->dev);
		if (r != CUDA_SUCCESS) {
			log_error("GPU %d: primary context unavailable: %s", ordinal, cuda_error_name(r));
			free(g);
			pthread_mutex_unlock(&gpu_lock);
			return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
		}
		pthread_mutex_init(&g->bring_lock, NULL);
		g->numa_node = gpu_numa_node(g->dev);
		if (g->numa_node >= 0)
			log_info("GPU %d: staging memory on NUMA node %d", ordinal, g->numa_node);
		pool_init(&g->pool, g);
		/* Release pairs with the acquire load above: a thread that sees
		 * the pointer sees the initialised struct. */
		__atomic_store_n(&gpus[ordinal], g, __ATOMIC_RELEASE);
		log_debug("GPU %d: primary context retained", ordinal);
	}
	pthread_mutex_unlock(&gpu_lock);
	*out = g;
	return 0;
}

struct ocf_pool *host_pool(void)
{
	pthread_mutex_lock(&gpu_lock);
	if (!host_pool_ready) {
		pool_init(&host_staging, NULL);
		host_pool_ready = true;
	}
	pthread_mutex_unlock(&gpu_lock);
	return &host_staging;
}

void gpu_teardown_all(void)
{
	pthread_mutex_lock(&gpu_lock);
	for (int i = 0; i < OCF_MAX_GPUS; i++) {
		struct ocf_gpu *g = gpus[i];
		if (!g)
			continue;
		pool_destroy(&g->pool);
		bool pushed = (g->alive_ev || g->groups) && ocf_cu.CtxPushCurrent(g->primary) == CUDA_SUCCESS;
		if (g->alive_ev && pushed)
			ocf_cu.EventDestroy(g->alive_ev);
		/* By handle whether or not the push worked, like the lanes'
		 * (lane_free_buffers): a leak is worse than a failed call. */
		cg_destroy(g->groups);
		g->groups = NULL;
		if (pushed)
			cuda_ctx_pop();
		pthread_mutex_destroy(&g->bring_lock);
		ocf_cu.DevicePrimaryCtxRelease(g->dev);
		free(g);
		__atomic_store_n(&gpus[i], NULL, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&up_gpus, 0, __ATOMIC_RELEASE);
	if (host_pool_ready) {
		pool_destroy(&host_staging);
		host_pool_ready = false;
	}
	pthread_mutex_unlock(&gpu_lock);
}

/* How a wait for a staging copy waits.  The rule: nobody spins on a copy
 * that takes milliseconds, nobody sleeps on one that takes microseconds.
 *
 * Lane events are BLOCKING_SYNC, so cuEventSynchronize sleeps in the driver
 * until the copy's completion interrupt (no CPU while it waits, a few
 * microseconds of wake-up).  Before that, one cuEventQuery: in the staged
 * pipeline a buffer is waited for only when it is needed again, two copies
 * later, and then its copy is usually done.  A copy that takes
 * microseconds (a 4 KiB, 64 KiB or 1 MiB read; at most SPIN_BYTES) is
 * polled instead, for a bounded time: a sleep and a
 * wake-up would double a 4 KiB read's latency, and cost 16 threads of
 * 1 MiB reads 7 % of their throughput on the H100 machine (256 KiB was the
 * bound then).
 *
 * The earlier design waited with cuEventSynchronize on events without
 * BLOCKING_SYNC (the driver's default policy spins while the process has
 * fewer busy threads than CPUs): the engine's workers then spent about 4 x
 * the user CPU per GB of NVIDIA's library spinning on copies that take
 * hundreds of microseconds (docs/history/benchmarks.md; so did sleeping on every
 * copy, never polling, measured there too).  OPENCUFILE_EVENT_WAIT=spin
 * brings the old wait back: events without BLOCKING_SYNC, whose waits make
 * no system call (a GPU test counts the system calls of transfers).  The
 * profile (profile.h) counts each wait by how it ended. */
enum ev_mode { EV_HYBRID, EV_SPIN };

/* OPENCUFILE_EVENT_WAIT's words (config.c) in this order; constant while
 * the driver is open, so a lane's events (made at its GPU's bring-up) suit
 * every wait on them until the close destroys them. */
static int ev_mode(void) { return ocf_cfg.tuning.event_wait; }

bool lane_events_sleep(void) { return ev_mode() != EV_SPIN; }

/* Copies of at most this are polled (see above). */
#define SPIN_BYTES ((size_t)1 << 20)

/* Polling budget for a copy of `bytes`: its transfer at 10 GB/s (a
 * conservative share of PCIe) plus 30 us of latency. */
static uint64_t spin_budget_ns(size_t bytes) { return 30000 + (uint64_t)bytes / 10; }

/* The first of a held-up copy's naps (OPENCUFILE_EVENT_NAP_US, default
 * 20 us; they double up to 1 ms).  A batch staging buffer's wait
 * (gpu_event_wait_prompt) naps by the clock (ocf_nap_ns): with the default
 * timer slack (50 us) a 20 us nap may last 70, and a copy queued behind
 * others' be seen done that much late, with every entry of the buffer
 * waiting on it (one batch of 128 scattered 64 KiB entries 2-12 % faster on
 * the H200 machine, docs/history/benchmarks.md).  The other waits keep the slack:
 * by the clock, one caller's 1 MiB reads (whose read-ahead fillers wait so)
 * went 2-6 % slower. */
static uint64_t first_nap_ns(void) { return ocf_cfg.tuning.event_nap_ns; }

CUevent gpu_lane_event(const struct ocf_lane *l, int j, size_t bytes)
{
	if (ev_mode() == EV_HYBRID && bytes <= SPIN_BYTES && l->ev_poll[j])
		return l->ev_poll[j];
	return l->ev[j];
}

static CUresult event_wait(CUevent ev, size_t bytes, bool prompt)
{
	uint64_t t0 = prof_now();
	int mode = ev_mode();
	CUresult r = mode == EV_SPIN ? CUDA_ERROR_NOT_READY : ocf_cu.EventQuery(ev);
	if (r != CUDA_ERROR_NOT_READY) {
		prof_wait(PROF_WAIT_DONE, t0);
		return r;
	}
	watchdog_wait_begin("staged I/O", -1, -1, "a staging copy to or from the GPU to finish");
	enum prof_wait how = PROF_WAIT_SLEEP;
	if (mode == EV_HYBRID && bytes <= SPIN_BYTES) {
		/* A short copy (its event is a polled one, gpu_lane_event):
		 * poll for about its transfer time, then, should it be held up
		 * (queued behind other work), keep polling with sleeps that
		 * double up to 1 ms rather than spin in the driver. */
		uint64_t start = ocf_now_ns(), budget = spin_budget_ns(bytes);
		how = PROF_WAIT_SPIN;
		do {
			for (int i = 0; i < 8; i++)
				ocf_cpu_relax();
			r = ocf_cu.EventQuery(ev);
		} while (r == CUDA_ERROR_NOT_READY && ocf_now_ns() - start < budget);
		bool loose = !prompt;
		for (uint64_t ns = first_nap_ns(); r == CUDA_ERROR_NOT_READY; ns = ns < 1000000 ? ns * 2 : ns) {
			how = PROF_WAIT_SLEEP;
			if (loose)
				nanosleep(&(struct timespec){0, (long)ns}, NULL);
			else
				ocf_nap_ns(ns);
			r = ocf_cu.EventQuery(ev);
		}
	} else {
		if (mode == EV_SPIN)
			how = PROF_WAIT_SPIN;
		r = ocf_cu.EventSynchronize(ev);
	}
	watchdog_wait_end();
	prof_wait(how, t0);
	return r;
}

CUresult gpu_event_wait(CUevent ev, size_t bytes) { return event_wait(ev, bytes, false); }

CUresult gpu_event_wait_prompt(CUevent ev, size_t bytes) { return event_wait(ev, bytes, true); }

/* Liveness of a GPU's primary context, for threads that wait on memory the
 * GPU writes (stream.c): a query of an event that never had work, which
 * takes no driver lock, and fails once the context has a sticky error. */
CUresult gpu_alive(struct ocf_gpu *g)
{
	/* Acquire pairs with gpu_bringup's release of `up`. */
	if (!__atomic_load_n(&g->up, __ATOMIC_ACQUIRE) || !g->alive_ev)
		return CUDA_SUCCESS;
	CUresult r = ocf_cu.EventQuery(g->alive_ev);
	return r == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : r;
}

/* Lanes a GPU gets: one per engine participant (gpu_prewarm_start). */
static int target_lanes = FIRST_ARENA_LANES;

/* Every lane of the GPU and its liveness event, made on the calling thread
 * before anything asynchronous can be queued on the GPU: one arena for all
 * the lanes (one pinning call), then a stream pair and three events each.
 * Idempotent; 0, or an error when not even one lane could be made (the
 * next call tries again). */
int gpu_bringup(struct ocf_gpu *g)
{
	if (__atomic_load_n(&g->up, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&g->bring_lock);
	int r = 0;
	if (!g->up) {
		struct timespec t0, t1, t2;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		struct ocf_pool *p = &g->pool;
		int want = OCF_MIN(OCF_MAX(target_lanes, FIRST_ARENA_LANES), p->max);
		if (ocf_cu.CtxPushCurrent(g->primary) == CUDA_SUCCESS) {
			if (!g->alive_ev && ocf_cu.EventCreate(&g->alive_ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
				g->alive_ev = NULL;
			pthread_mutex_lock(&p->lock);
			int missing = want - p->created;
			pthread_mutex_unlock(&p->lock);
			char *unused;
			if (missing > FIRST_ARENA_LANES)
				arena_take(p, (size_t)missing * OCF_LANE_DEPTH * buf_bytes(p), false, &unused);
			cuda_ctx_pop();
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		int n = 0;
		while ((r = pool_prepare_one(p, want)) == 0)
			n++;
		clock_gettime(CLOCK_MONOTONIC, &t2);
		pthread_mutex_lock(&p->lock);
		bool some = p->created > 0;
		pthread_mutex_unlock(&p->lock);
		log_debug("GPU %d: %d staging lane(s): pinning %.1f ms, streams and events %.1f ms", g->ordinal, n,
			  (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
			  (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6);
		if (some && !g->groups && ocf_cu.CtxPushCurrent(g->primary) == CUDA_SUCCESS) {
			/* One group event per lane buffer: a group in flight
			 * has a member's copy waiting, at most one per buffer. */
			pthread_mutex_lock(&p->lock);
			int lanes = p->created;
			pthread_mutex_unlock(&p->lock);
			__atomic_store_n(&g->groups, cg_create(lanes * OCF_LANE_DEPTH),
					 __ATOMIC_RELEASE);
			cuda_ctx_pop();
		}
		if (some) {
			r = 0;
			/* Release: whoever sees it sees the lanes. */
			__atomic_store_n(&g->up, true, __ATOMIC_RELEASE);
			__atomic_add_fetch(&up_gpus, 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&g->bring_lock);
	return r;
}

/* Makes sure the GPU that owns `ptr` (device memory; nothing for host
 * memory) is brought up before batch work on it is queued.  Once every GPU
 * is up this is one load; before that, two pointer queries and a load. */
void gpu_prepare_async(const void *ptr)
{
	if (!ptr || __atomic_load_n(&up_gpus, __ATOMIC_ACQUIRE) >= cuda_device_count())
		return;
	int ordinal = -1;
	unsigned mtype = 0;
	if (ocf_cu.PointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)ptr) !=
		    CUDA_SUCCESS ||
	    mtype != CU_MEMORYTYPE_DEVICE ||
	    ocf_cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)(uintptr_t)ptr) !=
		    CUDA_SUCCESS)
		return;
	struct ocf_gpu *g;
	if (gpu_get(ordinal, &g) == 0)
		(void)gpu_bringup(g);
}

/* ------------------------------------------------------------ driver open */

/* GPU d, if the application already works on it (its primary context is
 * active): 0 and *out, or -1.  Only those are brought up at open: creating
 * a primary context costs GPU memory the application may want. */
static int active_gpu(int d, struct ocf_gpu **out)
{
	CUdevice dev;
	unsigned int flags = 0;
	int active = 0;
	if (ocf_cu.DeviceGet(&dev, d) != CUDA_SUCCESS ||
	    ocf_cu.DevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active || gpu_get(d, out) != 0)
		return -1;
	return 0;
}

void gpu_prewarm_start(int lanes)
{
	/* OPENCUFILE_PREWARM=0: GPUs are brought up at their first I/O. */
	target_lanes = OCF_MAX(lanes, FIRST_ARENA_LANES);
	if (!cuda_available() || lanes <= 0 || !ocf_cfg.tuning.prewarm)
		return;
	for (int d = 0; d < cuda_device_count(); d++) {
		struct ocf_gpu *g;
		if (active_gpu(d, &g) == 0)
			(void)gpu_bringup(g);
	}
}
