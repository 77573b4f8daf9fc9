/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buffer.h - buffer registration and classification of caller memory.
 */
#ifndef OCF_BUFFER_H_
#define OCF_BUFFER_H_

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ocf_gpu;

/* Where the bytes of one I/O go to or come from. */
struct ocf_target {
	bool device;          /* false: host memory the CPU may touch */
	char *host;           /* host: first byte of the I/O range */
	CUdeviceptr dev;      /* device: first byte of the I/O range */
	struct ocf_gpu *gpu;  /* device: the GPU that holds the memory */
	CUcontext ctx;        /* device: context to make current for copies */
	bool use_stream;      /* device: ctx is the primary one, so the staging
			       * slot's stream may carry the copies */
	bool registered;
	CUdeviceptr alloc_end; /* device: end of the allocation holding dev (0:
				* unknown).  One copy never crosses it: the
				* driver refuses a copy spanning two
				* allocations, even back-to-back ones. */
};

/* May one copy cover bytes of both targets (device memory of one
 * allocation)?  Two cuMemAlloc blocks often sit back to back. */
static inline bool buf_same_allocation(const struct ocf_target *a, const struct ocf_target *b)
{
	return a->device && b->device && a->alloc_end && a->alloc_end == b->alloc_end;
}

/* Registers [base, base+len).  Returns 0 or an error. */
int buf_register(const void *base, size_t len, int flags);
int buf_deregister(const void *base);
void buf_deregister_all(void);

/* Resolves the I/O range [base+off, base+off+size) to a target: a valid,
 * live registration (buffer ID checked) or a fresh classification of the
 * pointer.  Returns 0 or an error; on error nothing was touched. */
int buf_resolve(const void *base, off_t off, size_t size, struct ocf_target *t);

/* buf_resolve in two steps, so that requests on one buffer base can share
 * the first (one CUDA call): buf_lookup finds what memory `base` is (its
 * live registration, or a fresh classification), buf_target checks and
 * resolves one range of it.  buf_lookup(b) + buf_target(.., b, off, size) gives
 * exactly what buf_resolve(b, off, size) gives, as long as the memory is
 * neither freed nor (de)registered in between. */
/* What a pointer is (buffer.c fills it; kind is buffer.c's memory kind). */
struct ocf_meminfo {
	int kind;
	CUcontext ctx;
	int ordinal;
	unsigned long long buffer_id;
	uintptr_t start; /* allocation range (device kinds) */
	size_t size;
};
struct ocf_bufinfo {
	bool registered;
	uintptr_t reg_base; /* registered: the registration's range */
	size_t reg_len;
	struct ocf_meminfo mi;
};
int buf_lookup(const void *base, struct ocf_bufinfo *bi);
/* Does what buf_lookup found also hold [p, p+len) (inside the same
 * registration, or the same unregistered device allocation)?  Then
 * buf_target(bi, its base, p - base, len) resolves that range without
 * another lookup. */
bool buf_info_covers(const struct ocf_bufinfo *bi, const void *p, size_t len);
int buf_target(const struct ocf_bufinfo *bi, const void *base, off_t off, size_t size, struct ocf_target *t);

#endif /* OCF_BUFFER_H_ */
