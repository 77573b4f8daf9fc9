/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_buffer.c - the memory types of -m: cuMemAlloc, VMM (cuMemCreate +
 * cuMemMap), pinned host memory, malloc and mmap; and the host scratch that
 * fills and checks device memory.  Host buffers are written here, so that
 * their pages are faulted in before the clock starts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gdsio.h"

int buffer_alloc(struct buffer *b, int kind, size_t len, int gpu, char *why, size_t whylen)
{
	memset(b, 0, sizeof(*b));
	b->kind = kind, b->len = len;
	CUresult r = CUDA_SUCCESS;
	if ((kind == M_DEVICE || kind == M_VMM || kind == M_PINNED) && !have_cuda) {
		/* Most often a machine without a GPU and -m left at its default. */
		snprintf(why, whylen,
			 "-m %d (%s%s) needs the CUDA driver: %.300s; for host memory give -m 3 (malloc) or -m 4 (mmap)",
			 kind, mem_name[kind], kind == M_DEVICE ? ", the default" : "", cuda_why);
		return -1;
	}
	switch (kind) {
	case M_DEVICE: {
		CUdeviceptr d;
		r = cu.MemAlloc(&d, len);
		b->ptr = (void *)(uintptr_t)d, b->on_device = 1;
		break;
	}
	case M_VMM: {
		if (!cu.MemCreate || !cu.MemAddressReserve || !cu.MemMap || !cu.MemSetAccess ||
		    !cu.MemGetAllocationGranularity) {
			snprintf(why, whylen, "the CUDA driver lacks the VMM functions");
			return -1;
		}
		CUmemAllocationProp prop;
		memset(&prop, 0, sizeof(prop));
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = gpu;
		prop.allocFlags.gpuDirectRDMACapable = 1;
		size_t gran = 0;
		r = cu.MemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
		if (r)
			break;
		if (!gran)
			gran = 2u << 20;
		b->vmm_len = (len + gran - 1) / gran * gran;
		r = cu.MemCreate(&b->vmm, b->vmm_len, &prop, 0);
		if (r)
			break;
		CUdeviceptr d;
		r = cu.MemAddressReserve(&d, b->vmm_len, 0, 0, 0);
		if (r) {
			cu.MemRelease(b->vmm);
			break;
		}
		r = cu.MemMap(d, b->vmm_len, 0, b->vmm, 0);
		if (r) {
			cu.MemAddressFree(d, b->vmm_len);
			cu.MemRelease(b->vmm);
			break;
		}
		CUmemAccessDesc acc;
		memset(&acc, 0, sizeof(acc));
		acc.location = prop.location;
		acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		r = cu.MemSetAccess(d, b->vmm_len, &acc, 1);
		if (r) {
			cu.MemUnmap(d, b->vmm_len);
			cu.MemAddressFree(d, b->vmm_len);
			cu.MemRelease(b->vmm);
			break;
		}
		b->ptr = (void *)(uintptr_t)d, b->on_device = 1;
		break;
	}
	case M_PINNED:
		r = cu.MemHostAlloc(&b->ptr, len, CU_MEMHOSTALLOC_PORTABLE);
		if (!r)
			memset(b->ptr, 0, len);
		break;
	case M_MALLOC:
		if (posix_memalign(&b->ptr, 4096, len)) {
			snprintf(why, whylen, "malloc(%zu) failed", len);
			return -1;
		}
		memset(b->ptr, 0, len); /* fault the pages in before the clock starts */
		return 0;
	case M_MMAP:
		b->ptr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b->ptr == MAP_FAILED) {
			b->ptr = NULL;
			snprintf(why, whylen, "mmap(%zu): %s", len, strerror(errno));
			return -1;
		}
		memset(b->ptr, 0, len);
		return 0;
	}
	if (r != CUDA_SUCCESS) {
		b->ptr = NULL;
		snprintf(why, whylen, "allocating %zu bytes of %s: %s (%d)", len, mem_name[kind],
			 cuda_dl_errstr(&cu, r), (int)r);
		return -1;
	}
	return 0;
}

void buffer_free(struct buffer *b)
{
	if (!b->ptr)
		return;
	switch (b->kind) {
	case M_DEVICE:
		cu.MemFree((CUdeviceptr)(uintptr_t)b->ptr);
		break;
	case M_VMM: {
		CUdeviceptr d = (CUdeviceptr)(uintptr_t)b->ptr;
		cu.MemUnmap(d, b->vmm_len);
		cu.MemAddressFree(d, b->vmm_len);
		cu.MemRelease(b->vmm);
		break;
	}
	case M_PINNED:
		cu.MemFreeHost(b->ptr);
		break;
	case M_MALLOC:
		free(b->ptr);
		break;
	case M_MMAP:
		munmap(b->ptr, b->len);
		break;
	}
	b->ptr = NULL;
}

/* Host scratch used to fill and check device memory: pinned when possible
 * (fast copies), else plain. */
void *scratch_alloc(size_t len, int *pinned)
{
	void *p = NULL;
	*pinned = 0;
	if (have_cuda && cu.MemHostAlloc(&p, len, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS) {
		*pinned = 1;
		return p;
	}
	if (posix_memalign(&p, 4096, len))
		return NULL;
	return p;
}

void scratch_free(void *p, int pinned)
{
	if (!p)
		return;
	if (pinned)
		cu.MemFreeHost(p);
	else
		free(p);
}
