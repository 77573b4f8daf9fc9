/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu.c - per-GPU contexts and staging buffer pools.
 *
 * DESIGN: every byte that moves between a file and GPU memory passes through
 * staging buffers: page-aligned, pinned host memory (cuMemHostAlloc,
 * PORTABLE so any context may copy from it).  They are handed out as lanes:
 * OCF_LANE_DEPTH buffers, one (blocking) stream of the GPU's primary
 * context and one event per buffer, everything one thread needs to keep the
 * file and the copy engine busy at once.  Lanes are created on demand up to
 * a bound derived from the staging budget, so pinned memory use is bounded;
 * a caller that finds none free waits for one (engine helpers do not wait,
 * they leave the work to the caller).  Lanes are kept until the driver
 * closes, because pinning is expensive.  A second pool of plain aligned
 * host memory serves O_DIRECT I/O on host buffers.
 */
#define _GNU_SOURCE
#include "gpu.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cuda_loader.h"
#include "internal.h"
#include "log.h"

#define OCF_MAX_GPUS 64

/* gpu_lock protects gpus[] and host_pool_ready (creation and teardown). */
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ocf_gpu *gpus[OCF_MAX_GPUS];
static struct ocf_pool hpool;
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
	p->chunk = OCF_MIN(ocf_cfg.staging_chunk_kb, ocf_cfg.max_direct_io_size_kb) * 1024;
	const char *env = ocf_getenv("OPENCUFILE_CHUNK_KB"); /* tuning experiments */
	if (env && *env)
		p->chunk = (size_t)strtoull(env, NULL, 10) * 1024;
	if (p->chunk < 65536)
		p->chunk = 65536;
	size_t lane_bytes = OCF_LANE_DEPTH * buf_bytes(p);
	/* The POSIX pool slabs are NVIDIA's bounce-buffer budget in its
	 * compatible mode (about 1.1 GiB by default); ours is the same bound,
	 * spent on lanes, created only as they are needed. */
	size_t budget = 0;
	const struct ocf_size_array *sz = &ocf_cfg.posix_pool_slab_size_kb, *cnt = &ocf_cfg.posix_pool_slab_count;
	for (size_t i = 0; i < sz->n && i < cnt->n; i++)
		budget += sz->v[i] * cnt->v[i] * 1024;
	if (budget == 0)
		budget = ocf_cfg.staging_budget_kb * 1024;
	p->max = (int)OCF_MIN(budget / lane_bytes, 1024);
	if (p->max < 2)
		p->max = 2;
}

size_t pool_chunk(const struct ocf_pool *p) { return p->chunk; }

/* Lanes per arena: the first arena of a pool is small (an application
 * doing only small I/O pins little), later ones hold many lanes. */
#define FIRST_ARENA_LANES 2
#define ARENA_LANES 8

/* Carves `bytes` (a multiple of OCF_MAX_ALIGN) of staging memory; pins a
 * new arena when the current one is full.  For a GPU pool the caller has
 * made its primary context current. */
static char *arena_take(struct ocf_pool *p, size_t bytes, bool consume)
{
	pthread_mutex_lock(&p->arena_lock);
	struct ocf_arena *a = p->arenas;
	if (!a || a->size - a->used < bytes) {
		size_t lane = OCF_LANE_DEPTH * buf_bytes(p);
		size_t size = OCF_MAX(bytes, lane * (a ? ARENA_LANES : FIRST_ARENA_LANES));
		struct ocf_arena *n = calloc(1, sizeof(*n));
		void *mem = NULL;
		bool ok = n != NULL;
		if (ok && p->gpu) {
			/* Pinned memory from the driver is page aligned;
			 * OCF_MAX_ALIGN alignment is asked of what is carved,
			 * so align the start ourselves. */
			size += OCF_MAX_ALIGN;
			CUresult r = ocf_cu.MemHostAlloc(&mem, size, CU_MEMHOSTALLOC_PORTABLE);
			if (r != CUDA_SUCCESS) {
				log_error("pinned staging allocation of %zu bytes failed: %s", size,
					  cuda_error_name(r));
				ok = false;
			}
		} else if (ok && posix_memalign(&mem, OCF_MAX_ALIGN, size) != 0) {
			ok = false;
		}
		if (!ok) {
			free(n);
			pthread_mutex_unlock(&p->arena_lock);
			return NULL;
		}
		n->base = mem;
		n->size = size;
		n->used = OCF_ALIGN_UP((uintptr_t)mem, OCF_MAX_ALIGN) - (uintptr_t)mem;
		n->next = p->arenas;
		p->arenas = n;
		a = n;
		log_debug("staging arena of %zu KiB %s", size / 1024, p->gpu ? "pinned" : "allocated");
	}
	char *r = a->base + a->used;
	if (consume)
		a->used += bytes;
	pthread_mutex_unlock(&p->arena_lock);
	return r;
}

static char *arena_carve(struct ocf_pool *p, size_t bytes) { return arena_take(p, bytes, true); }

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
			CUresult r = ocf_cu.MemFreeHost(a->base);
			if (r != CUDA_SUCCESS)
				log_error("staging memory release failed: %s", cuda_error_name(r));
		} else {
			free(a->base);
		}
		free(a);
	}
}

/* Events and stream of a lane; its buffers belong to the pool's arenas. */
static void lane_free_buffers(struct ocf_lane *l)
{
	struct ocf_pool *p = l->pool;
	if (!p->gpu)
		return;
	/* Streams and events are destroyed by handle, so try even if the
	 * context cannot be made current: a leak is worse than a failed call. */
	bool pushed = ocf_cu.CtxPushCurrent(p->gpu->primary) == CUDA_SUCCESS;
	for (int i = 0; i < l->depth; i++)
		if (l->ev[i])
			ocf_cu.EventDestroy(l->ev[i]);
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
		const char *nb = ocf_getenv("OPENCUFILE_STREAM_NONBLOCKING"); /* tuning experiments */
		CUresult cr = ocf_cu.StreamCreate(&l->stream, nb && *nb == '1' ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT);
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
	char *mem = arena_carve(p, OCF_LANE_DEPTH * buf_bytes(p));
	if (!mem) {
		r = OCF_ERR(CU_FILE_NOMEM_ERROR);
		goto fail;
	}
	for (int i = 0; i < OCF_LANE_DEPTH; i++) {
		struct ocf_slot *b = &l->bufs[i];
		b->chunk = p->chunk;
		b->size = buf_bytes(p);
		b->buf = mem + (size_t)i * buf_bytes(p);
		l->depth = i + 1; /* what lane_free_buffers must look at */
		if (!p->gpu)
			continue;
		CUresult cr;
		/* Waiting threads sleep instead of spinning: a spinning waiter
		 * takes a CPU from the threads copying out of the page cache. */
		const char *spin = ocf_getenv("OPENCUFILE_EVENT_SPIN"); /* tuning experiments */
		cr = ocf_cu.EventCreate(&l->ev[i], CU_EVENT_DISABLE_TIMING |
						       (spin && *spin == '1' ? 0 : CU_EVENT_BLOCKING_SYNC));
		if (cr != CUDA_SUCCESS) {
			log_error("event creation failed: %s", cuda_error_name(cr));
			l->ev[i] = NULL;
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

static int pool_take(struct ocf_pool *p, struct ocf_lane **out, bool wait)
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
		/* After a failed creation, wait for a lane to come back, unless
		 * none is left to come back: then try once more. */
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
			/* A waiter may now create the lane this call could not. */
			pthread_cond_broadcast(&p->cv);
			if (p->created == 0 || !wait) {
				pthread_mutex_unlock(&p->lock);
				return r;
			}
			/* Other lanes exist: take one when it comes back (it may
			 * have come back already: look again before waiting). */
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

int pool_get(struct ocf_pool *p, struct ocf_lane **out) { return pool_take(p, out, true); }

int pool_try_get(struct ocf_pool *p, struct ocf_lane **out) { return pool_take(p, out, false); }

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
		pool_init(&hpool, NULL);
		host_pool_ready = true;
	}
	pthread_mutex_unlock(&gpu_lock);
	return &hpool;
}

void gpu_teardown_all(void)
{
	pthread_mutex_lock(&gpu_lock);
	for (int i = 0; i < OCF_MAX_GPUS; i++) {
		struct ocf_gpu *g = gpus[i];
		if (!g)
			continue;
		pool_destroy(&g->pool);
		ocf_cu.DevicePrimaryCtxRelease(g->dev);
		free(g);
		__atomic_store_n(&gpus[i], NULL, __ATOMIC_RELEASE);
	}
	if (host_pool_ready) {
		pool_destroy(&hpool);
		host_pool_ready = false;
	}
	pthread_mutex_unlock(&gpu_lock);
}

/* ------------------------------------------------------------- prewarm */

/* prewarm_lock protects prewarm_thread and prewarm_running (a thread
 * exists that nobody has joined yet). */
static pthread_mutex_t prewarm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t prewarm_thread;
static bool prewarm_running;
/* The thread's last store: it has finished its work and is returning.
 * Release/acquire: whoever sees it joins a thread that only has its own
 * exit left, so the join does not wait for pinning. */
static atomic_bool prewarm_done;

static void *prewarm_main(void *arg)
{
	int lanes = (int)(intptr_t)arg;
	for (int d = 0; d < cuda_device_count(); d++) {
		CUdevice dev;
		unsigned int flags = 0;
		int active = 0;
		/* Only GPUs the application already works on: creating a
		 * primary context costs GPU memory the application may want. */
		if (ocf_cu.DeviceGet(&dev, d) != CUDA_SUCCESS ||
		    ocf_cu.DevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active)
			continue;
		struct ocf_gpu *g;
		if (gpu_get(d, &g) != 0)
			continue;
		struct ocf_lane *got[64];
		int n = 0;
		if (lanes > 64)
			lanes = 64;
		/* One arena for all of them: one pinning call. */
		if (ocf_cu.CtxPushCurrent(g->primary) == CUDA_SUCCESS) {
			size_t want = (size_t)lanes * OCF_LANE_DEPTH * buf_bytes(&g->pool);
			arena_take(&g->pool, OCF_MIN(want, (size_t)g->pool.max * OCF_LANE_DEPTH * buf_bytes(&g->pool)),
				   false);
			cuda_ctx_pop();
		}
		while (n < lanes && pool_try_get(&g->pool, &got[n]) == 0)
			n++;
		for (int i = 0; i < n; i++)
			pool_put(got[i]);
		log_debug("GPU %d: %d staging lane(s) prepared", d, n);
	}
	atomic_store_explicit(&prewarm_done, true, memory_order_release);
	return NULL;
}

void gpu_prewarm_start(int lanes)
{
	const char *env = ocf_getenv("OPENCUFILE_PREWARM"); /* 0: off */
	if (!cuda_available() || lanes <= 0 || (env && *env == '0'))
		return;
	pthread_mutex_lock(&prewarm_lock);
	if (!prewarm_running) {
		atomic_store_explicit(&prewarm_done, false, memory_order_relaxed);
		if (pthread_create(&prewarm_thread, NULL, prewarm_main, (void *)(intptr_t)lanes) == 0)
			prewarm_running = true;
	}
	pthread_mutex_unlock(&prewarm_lock);
}

/* Joins the thread once it has finished, so a driver that stays open does
 * not keep a finished thread (its stack) around until the close, nor leave
 * one unjoined at process exit.  Cheap when there is nothing to do: one
 * load.  Never waits for the work itself. */
void gpu_prewarm_reap(void)
{
	if (!atomic_load_explicit(&prewarm_done, memory_order_acquire))
		return;
	if (pthread_mutex_trylock(&prewarm_lock) != 0)
		return; /* a start or wait is under way; it or a later call joins */
	bool join = prewarm_running && atomic_load_explicit(&prewarm_done, memory_order_acquire);
	if (join) {
		pthread_join(prewarm_thread, NULL);
		prewarm_running = false;
	}
	atomic_store_explicit(&prewarm_done, false, memory_order_relaxed);
	pthread_mutex_unlock(&prewarm_lock);
}

void gpu_prewarm_forget_after_fork(void)
{
	/* The thread is the parent's; joining it here would wait forever.
	 * No lock: the child is single-threaded and a parent thread may have
	 * held prewarm_lock. */
	prewarm_running = false;
	atomic_store_explicit(&prewarm_done, false, memory_order_relaxed);
}

/* At process exit (the application may never close the driver): join the
 * thread if it has finished; a thread still working is left running, as
 * exit never waits for the library.  An exit handler rather than a
 * destructor: it then runs before handlers registered earlier (those of
 * the runtime, a thread-leak check among them), not after them. */
static void prewarm_at_exit(void) { gpu_prewarm_reap(); }
__attribute__((constructor)) static void prewarm_init(void) { atexit(prewarm_at_exit); }

void gpu_prewarm_wait(void)
{
	pthread_mutex_lock(&prewarm_lock);
	bool join = prewarm_running;
	prewarm_running = false;
	pthread_mutex_unlock(&prewarm_lock);
	if (join)
		pthread_join(prewarm_thread, NULL);
}
