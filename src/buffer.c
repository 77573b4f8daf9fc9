/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buffer.c - the buffer registry and pointer classification.
 *
 * DESIGN: registrations live in an array sorted by base address under a
 * reader/writer lock, so the registration covering an address is found by
 * binary search.  Device memory is classified with one
 * cuPointerGetAttributes() call (memory type, context, device ordinal,
 * buffer ID, allocation range).  A registration remembers the buffer ID of
 * its memory; at every I/O the ID is read again, and a mismatch (the memory
 * was freed and another allocation now sits at that address) rebuilds the
 * registration from the new memory (or drops it) instead of trusting it.  Registered device memory gets
 * CU_POINTER_ATTRIBUTE_SYNC_MEMOPS so that synchronous CUDA copies by the
 * application and our stream copies are ordered.
 *
 * Registration pins nothing: without nvidia-fs there is nothing to pin GPU
 * memory for, and the staging pool is shared.  It validates once and makes
 * later lookups cheap.
 */
#define _GNU_SOURCE
#include "buffer.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_loader.h"
#include "gpu.h"
#include "internal.h"
#include "log.h"

enum mem_kind { MEM_HOST = 0, MEM_PINNED, MEM_DEVICE, MEM_MANAGED };

struct reg {
	uintptr_t base;
	size_t len;
	struct ocf_meminfo mi;
};

/* reg_lock protects regs[], nregs, regcap. */
static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct reg *regs;
static size_t nregs, regcap;
/* Driver sessions, for the per-thread lookups of unregistered memory
 * (unreg_lookup): a thread keeps its entries within one session, the driver
 * close bumps it.  Relaxed: a thread that misses a bump by a moment checks
 * the buffer ID anyway. */
static unsigned unreg_session;

static int classify(uintptr_t p, struct ocf_meminfo *mi)
{
	memset(mi, 0, sizeof(*mi));
	mi->kind = MEM_HOST;
	if (!cuda_available())
		return 0;
	CUpointer_attribute attrs[] = {
		CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_CONTEXT,
		CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_BUFFER_ID,
		CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
		CU_POINTER_ATTRIBUTE_IS_MANAGED,
	};
	unsigned int memtype = 0;
	CUcontext ctx = NULL;
	int ordinal = -1;
	unsigned long long id = 0;
	CUdeviceptr start = 0;
	size_t size = 0;
	unsigned int managed = 0;
	void *data[] = {&memtype, &ctx, &ordinal, &id, &start, &size, &managed};
	CUresult r = ocf_cu.PointerGetAttributes(7, attrs, data, (CUdeviceptr)p);
	if (r == CUDA_ERROR_INVALID_VALUE)
		return 0; /* not memory CUDA knows: plain host memory */
	if (r != CUDA_SUCCESS) {
		log_error("cuPointerGetAttributes(%#lx) failed: %s", (unsigned long)p, cuda_error_name(r));
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	switch (memtype) {
	case 0:
		return 0;
	case CU_MEMORYTYPE_HOST:
		mi->kind = MEM_PINNED;
		break;
	case CU_MEMORYTYPE_DEVICE:
		mi->kind = managed ? MEM_MANAGED : MEM_DEVICE;
		break;
	default:
		return OCF_ERR(CU_FILE_CUDA_MEMORY_TYPE_INVALID);
	}
	mi->ctx = ctx;
	mi->ordinal = ordinal;
	mi->buffer_id = id;
	mi->start = (uintptr_t)start;
	mi->size = size;
	if (mi->kind != MEM_PINNED && (ordinal < 0 || ordinal >= cuda_device_count()))
		return OCF_ERR(CU_FILE_CUDA_POINTER_INVALID);
	return 0;
}

/* Is [p, p+len) inside the allocation?  The allocation's own range only:
 * a neighbouring allocation that happens to be contiguous does not count. */
static bool device_range_ok(const struct ocf_meminfo *mi, uintptr_t p, size_t len)
{
	uintptr_t end = mi->start + mi->size;
	return p >= mi->start && p <= end && len <= end - p;
}

static int fill_target(const struct ocf_meminfo *mi, uintptr_t p, struct ocf_target *t)
{
	memset(t, 0, sizeof(*t));
	if (mi->kind == MEM_HOST || mi->kind == MEM_PINNED) {
		t->host = (char *)p;
		return 0;
	}
	struct ocf_gpu *g;
	int r = gpu_get(mi->ordinal, &g);
	if (r)
		return r;
	t->device = true;
	t->dev = (CUdeviceptr)p;
	t->gpu = g;
	t->ctx = mi->ctx ? mi->ctx : g->primary;
	t->use_stream = t->ctx == g->primary;
	t->alloc_end = mi->size ? (CUdeviceptr)(mi->start + mi->size) : 0;
	return 0;
}

/* Caller holds reg_lock.  Index of the last registration with base <= p,
 * or -1. */
static ssize_t find_le(uintptr_t p)
{
	size_t lo = 0, hi = nregs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (regs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ssize_t)lo - 1;
}

/* Device memory is ordered with the application's synchronous copies. */
static void set_sync_memops(uintptr_t p)
{
	unsigned int one = 1;
	CUresult cr = ocf_cu.PointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)p);
	if (cr != CUDA_SUCCESS)
		log_warn("SYNC_MEMOPS on %#lx failed: %s", (unsigned long)p, cuda_error_name(cr));
}

/* Classifies [p, p+len) for a registration. */
static int classify_for_registration(uintptr_t p, size_t len, struct ocf_meminfo *mi)
{
	int r = classify(p, mi);
	if (r)
		return r;
	if ((mi->kind == MEM_DEVICE || mi->kind == MEM_MANAGED) && !device_range_ok(mi, p, len))
		return OCF_ERR(CU_FILE_CUDA_POINTER_RANGE_ERROR);
	if (mi->kind == MEM_DEVICE) {
		struct ocf_gpu *g;
		r = gpu_get(mi->ordinal, &g);
		if (r)
			return r;
		set_sync_memops(p);
	}
	return 0;
}

int buf_register(const void *base, size_t len, int flags)
{
	if (!base || len == 0)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	/* Flags only steer RDMA, which this library does not do; unknown bits
	 * are ignored as NVIDIA's library ignores them. */
	if (flags & ~(CU_FILE_RDMA_REGISTER | CU_FILE_RDMA_RELAXED_ORDERING))
		log_debug("cuFileBufRegister: flags %#x ignored", flags);
	uintptr_t p = (uintptr_t)base;
	if (p + len < p)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct ocf_meminfo mi;
	int r = classify_for_registration(p, len, &mi);
	if (r)
		return r;

	/* Registrations are keyed by base address.  Overlapping ranges with
	 * different bases are allowed (a tensor and a view into it), as they
	 * are by NVIDIA's library; the same base twice is not. */
	pthread_rwlock_wrlock(&reg_lock);
	ssize_t i = find_le(p);
	if (i >= 0 && regs[i].base == p) {
		pthread_rwlock_unlock(&reg_lock);
		return OCF_ERR(CU_FILE_MEMORY_ALREADY_REGISTERED);
	}
	if (nregs == regcap) {
		size_t ncap = regcap ? regcap * 2 : 64;
		struct reg *n = realloc(regs, ncap * sizeof(*n));
		if (!n) {
			pthread_rwlock_unlock(&reg_lock);
			return OCF_ERR(CU_FILE_NOMEM_ERROR);
		}
		regs = n;
		regcap = ncap;
	}
	size_t at = (size_t)(i + 1);
	memmove(&regs[at + 1], &regs[at], (nregs - at) * sizeof(*regs));
	regs[at] = (struct reg){.base = p, .len = len, .mi = mi};
	nregs++;
	pthread_rwlock_unlock(&reg_lock);
	log_debug("buffer %#lx+%zu registered (%s)", (unsigned long)p, len,
		  mi.kind == MEM_DEVICE ? "device" : mi.kind == MEM_MANAGED ? "managed" : "host");
	return 0;
}

/* Caller holds reg_lock for writing. */
static void remove_at(size_t i)
{
	memmove(&regs[i], &regs[i + 1], (nregs - i - 1) * sizeof(*regs));
	nregs--;
}

int buf_deregister(const void *base)
{
	if (!base)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	uintptr_t p = (uintptr_t)base;
	pthread_rwlock_wrlock(&reg_lock);
	ssize_t i = find_le(p);
	if (i < 0 || regs[i].base != p) {
		pthread_rwlock_unlock(&reg_lock);
		return OCF_ERR(CU_FILE_MEMORY_NOT_REGISTERED);
	}
	remove_at((size_t)i);
	pthread_rwlock_unlock(&reg_lock);
	return 0;
}

void buf_deregister_all(void)
{
	__atomic_add_fetch(&unreg_session, 1, __ATOMIC_RELAXED);
	pthread_rwlock_wrlock(&reg_lock);
	free(regs);
	regs = NULL;
	nregs = regcap = 0;
	pthread_rwlock_unlock(&reg_lock);
}

/* Still the same allocation as at registration? */
static bool reg_is_live(const struct reg *g)
{
	if (g->mi.kind != MEM_DEVICE && g->mi.kind != MEM_MANAGED)
		return true;
	unsigned long long id = 0;
	CUresult r = ocf_cu.PointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)g->base);
	return r == CUDA_SUCCESS && id == g->mi.buffer_id;
}

/* The memory under a registration was freed and something else now lives
 * at its address (or nothing).  Nothing of the old state is used: the
 * registration is rebuilt from the new memory if that still holds the whole
 * registered range, else dropped.  Either way the caller classifies again.
 * Keeping it (refreshed) lets the application's later cuFileBufDeregister
 * succeed, as it does with NVIDIA's library. */
static void refresh_stale(const struct reg *stale)
{
	struct ocf_meminfo mi;
	bool keep = classify_for_registration(stale->base, stale->len, &mi) == 0;
	pthread_rwlock_wrlock(&reg_lock);
	ssize_t i = find_le(stale->base);
	if (i >= 0 && regs[i].base == stale->base && regs[i].mi.buffer_id == stale->mi.buffer_id) {
		if (keep)
			regs[i].mi = mi;
		else
			remove_at((size_t)i);
	}
	pthread_rwlock_unlock(&reg_lock);
	log_warn("buffer %#lx was freed without cuFileBufDeregister; registration %s",
		 (unsigned long)stale->base, keep ? "renewed for the new allocation" : "dropped");
}

/* Caller holds reg_lock.  The registration to use for an I/O whose buffer
 * base is b: the one registered at b, else the nearest one below b that
 * contains b (bounded search: overlapping registrations are rare). */
static ssize_t find_covering(uintptr_t b)
{
	ssize_t i = find_le(b);
	for (int steps = 0; i >= 0 && steps < 64; i--, steps++)
		if (b < regs[i].base + regs[i].len)
			return i;
	return -1;
}

/* The last unregistered device allocations this thread looked up.  A
 * loader reading into the same cudaMalloc'ed tensor again and again then
 * pays one buffer-ID query per I/O (as a registered buffer does) instead of
 * a full classification of seven attributes.  The buffer ID tells whether
 * the allocation is still the one classified: a freed and reallocated range
 * gets a new ID, so a stale entry is never used. */
#define UNREG_SLOTS 4
static __thread struct ocf_meminfo unreg[UNREG_SLOTS];
static __thread unsigned unreg_next;
static __thread unsigned unreg_mine; /* the session its entries belong to */

static bool unreg_lookup(uintptr_t b, struct ocf_meminfo *mi)
{
	unsigned now = __atomic_load_n(&unreg_session, __ATOMIC_RELAXED);
	if (unreg_mine != now) {
		memset(unreg, 0, sizeof(unreg));
		unreg_mine = now;
	}
	for (unsigned i = 0; i < UNREG_SLOTS; i++) {
		struct ocf_meminfo *c = &unreg[i];
		if (!c->size || b < c->start || b - c->start >= c->size)
			continue;
		unsigned long long id = 0;
		if (ocf_cu.PointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)b) == CUDA_SUCCESS &&
		    id == c->buffer_id) {
			*mi = *c;
			return true;
		}
		c->size = 0;
	}
	return false;
}

static void unreg_remember(const struct ocf_meminfo *mi)
{
	if ((mi->kind != MEM_DEVICE && mi->kind != MEM_MANAGED) || !mi->size || !mi->buffer_id)
		return;
	unreg[unreg_next++ % UNREG_SLOTS] = *mi;
}

int buf_lookup(const void *base, struct ocf_bufinfo *bi)
{
	uintptr_t b = (uintptr_t)base;
	/* Twice at most: a stale registration is renewed (or dropped) and then
	 * looked up again, so the renewed one governs this very I/O too. */
	for (int attempt = 0; attempt < 2; attempt++) {
		struct reg found;
		bool have = false;
		pthread_rwlock_rdlock(&reg_lock);
		ssize_t i = find_covering(b);
		if (i >= 0) {
			found = regs[i];
			have = true;
		}
		pthread_rwlock_unlock(&reg_lock);
		if (!have)
			break;
		if (!reg_is_live(&found)) {
			refresh_stale(&found);
			continue;
		}
		*bi = (struct ocf_bufinfo){.registered = true, .reg_base = found.base, .reg_len = found.len, .mi = found.mi};
		return 0;
	}
	memset(bi, 0, sizeof(*bi));
	if (unreg_lookup(b, &bi->mi))
		return 0;
	int r = classify(b, &bi->mi);
	if (r == 0)
		unreg_remember(&bi->mi);
	return r;
}

bool buf_info_covers(const struct ocf_bufinfo *bi, const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	if (bi->registered)
		return a >= bi->reg_base && a - bi->reg_base <= bi->reg_len && len <= bi->reg_len - (a - bi->reg_base);
	return (bi->mi.kind == MEM_DEVICE || bi->mi.kind == MEM_MANAGED) && device_range_ok(&bi->mi, a, len);
}

int buf_target(const struct ocf_bufinfo *bi, const void *base, off_t off, size_t size, struct ocf_target *t)
{
	uintptr_t b = (uintptr_t)base;
	uintptr_t p = b + (uintptr_t)off;
	if (p < b || p + size < p)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	if (bi->registered) {
		if (p + size > bi->reg_base + bi->reg_len)
			return OCF_ERR(CU_FILE_INVALID_VALUE);
		int r = fill_target(&bi->mi, p, t);
		t->registered = true;
		return r;
	}
	if ((bi->mi.kind == MEM_DEVICE || bi->mi.kind == MEM_MANAGED) && !device_range_ok(&bi->mi, p, size))
		return OCF_ERR(CU_FILE_CUDA_POINTER_RANGE_ERROR);
	return fill_target(&bi->mi, p, t);
}

int buf_resolve(const void *base, off_t off, size_t size, struct ocf_target *t)
{
	uintptr_t b = (uintptr_t)base;
	uintptr_t p = b + (uintptr_t)off;
	if (p < b || p + size < p)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct ocf_bufinfo bi;
	int r = buf_lookup(base, &bi);
	return r ? r : buf_target(&bi, base, off, size, t);
}
