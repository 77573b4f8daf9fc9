/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu.c - per-GPU contexts and staging buffer pools.
 *
 * DESIGN: every byte that moves between a file and GPU memory passes through
 * staging buffers: page-aligned, pinned host memory (cuMemHostAlloc,
 * PORTABLE so any context may copy from it).  They are handed out as lanes:
 * OCF_LANE_DEPTH buffers, one non-blocking stream of the GPU's primary
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

static void pool_init(struct ocf_pool *p, struct ocf_gpu *gpu)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->gpu = gpu;
	p->chunk = ocf_cfg.staging_chunk_kb * 1024;
	if (p->chunk < 65536)
		p->chunk = 65536;
	size_t lane_bytes = OCF_LANE_DEPTH * (p->chunk + 3 * (size_t)OCF_MAX_ALIGN);
	size_t budget = ocf_cfg.staging_budget_kb * 1024;
	p->max = (int)OCF_MIN(budget / lane_bytes, 1024);
	if (p->max < 2)
		p->max = 2;
}

size_t pool_chunk(const struct ocf_pool *p) { return p->chunk; }

static void lane_free_buffers(struct ocf_lane *l)
{
	struct ocf_pool *p = l->pool;
	if (!p->gpu) {
		for (int i = 0; i < l->depth; i++)
			free(l->bufs[i].buf);
		return;
	}
	/* Pinned memory is PORTABLE and streams/events are destroyed by
	 * handle, so try even if the context cannot be made current: a leak
	 * is worse than a failed call. */
	bool pushed = ocf_cu.CtxPushCurrent(p->gpu->primary) == CUDA_SUCCESS;
	for (int i = 0; i < l->depth; i++) {
		if (l->ev[i])
			ocf_cu.EventDestroy(l->ev[i]);
		if (l->bufs[i].buf) {
			CUresult r = ocf_cu.MemFreeHost(l->bufs[i].buf);
			if (r != CUDA_SUCCESS)
				log_error("staging buffer release failed: %s", cuda_error_name(r));
		}
	}
	if (l->stream) {
		CUresult r = ocf_cu.StreamDestroy(l->stream);
		if (r != CUDA_SUCCESS)
			log_error("staging stream release failed: %s", cuda_error_name(r));
	}
	if (pushed) {
		CUcontext dummy;
		ocf_cu.CtxPopCurrent(&dummy);
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
		CUresult cr = ocf_cu.StreamCreate(&l->stream, CU_STREAM_NON_BLOCKING);
		if (cr != CUDA_SUCCESS) {
			log_error("stream creation failed: %s", cuda_error_name(cr));
			l->stream = NULL;
			r = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			goto fail;
		}
	}
	for (int i = 0; i < OCF_LANE_DEPTH; i++) {
		struct ocf_slot *b = &l->bufs[i];
		b->chunk = p->chunk;
		b->size = p->chunk + 3 * (size_t)OCF_MAX_ALIGN;
		l->depth = i + 1; /* what lane_free_buffers must look at */
		if (!p->gpu) {
			if (posix_memalign((void **)&b->buf, OCF_MAX_ALIGN, b->size) != 0) {
				b->buf = NULL;
				r = OCF_ERR(CU_FILE_NOMEM_ERROR);
				goto fail;
			}
			continue;
		}
		void *buf = NULL;
		/* Pinned memory from the driver is page aligned. */
		CUresult cr = ocf_cu.MemHostAlloc(&buf, b->size, CU_MEMHOSTALLOC_PORTABLE);
		if (cr != CUDA_SUCCESS) {
			log_error("pinned staging allocation of %zu bytes failed: %s", b->size, cuda_error_name(cr));
			r = OCF_ERR(CU_FILE_NOMEM_ERROR);
			goto fail;
		}
		b->buf = buf;
		cr = ocf_cu.EventCreate(&l->ev[i], CU_EVENT_DISABLE_TIMING);
		if (cr != CUDA_SUCCESS) {
			log_error("event creation failed: %s", cuda_error_name(cr));
			l->ev[i] = NULL;
			r = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			goto fail;
		}
	}
	if (pushed) {
		CUcontext dummy;
		ocf_cu.CtxPopCurrent(&dummy);
	}
	*out = l;
	return 0;

fail:
	if (pushed) {
		CUcontext dummy;
		ocf_cu.CtxPopCurrent(&dummy);
	}
	lane_free_buffers(l);
	free(l);
	return r;
}

static int pool_take(struct ocf_pool *p, struct ocf_lane **out, bool wait)
{
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->free) {
			struct ocf_lane *l = p->free;
			p->free = l->next;
			pthread_mutex_unlock(&p->lock);
			*out = l;
			return 0;
		}
		if (p->created < p->max) {
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
			if (p->created == 0 || !wait) {
				pthread_mutex_unlock(&p->lock);
				return r;
			}
			/* Other lanes exist: wait for one of them. */
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
