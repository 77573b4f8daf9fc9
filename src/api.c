/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.c - the public cuFile entry points for the driver, handles, buffers
 * and synchronous I/O.
 *
 * This layer is thin: it validates arguments, enters the driver gate, hands
 * work to the subsystem and maps internal results (0/count, -errno,
 * -CUfileOpError) to the API's conventions: CUfileError_t, or for
 * cuFileRead/cuFileWrite a byte count, -1 with errno, or -CU_FILE_* code.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "api.h"
#include "buffer.h"
#include "config.h"
#include "cuda_loader.h"
#include "driver.h"
#include "engine.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "profile.h"
#include "stats.h"

CUfileError_t api_status(long r)
{
	CUfileError_t e = {CU_FILE_SUCCESS, CUDA_SUCCESS};
	if (r >= 0)
		return e;
	if (ocf_is_cufile_err(r)) {
		e.err = (CUfileOpError)-r;
		if (e.err == CU_FILE_CUDA_DRIVER_ERROR)
			e.cu_err = cuda_last_error();
		return e;
	}
	switch (-r) {
	case ENOMEM:
		e.err = CU_FILE_NOMEM_ERROR;
		break;
	case EINVAL:
		e.err = CU_FILE_INVALID_VALUE;
		break;
	case EACCES:
	case EPERM:
		e.err = CU_FILE_PERMISSION_DENIED;
		break;
	default:
		e.err = CU_FILE_IO_ERROR;
		break;
	}
	return e;
}

ssize_t api_io_result(ssize_t r)
{
	if (r >= 0 || ocf_is_cufile_err(r))
		return r;
	errno = (int)-r;
	return -1;
}

OCF_EXPORT CUfileError_t cuFileGetVersion(int *version)
{
	if (!version)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	*version = OPENCUFILE_API_VERSION_MAX; /* the newest surface implemented */
	return api_status(0);
}

OCF_EXPORT CUfileError_t cuFileDriverOpen(void)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return api_status(driver_open());
}

OCF_EXPORT CUfileError_t cuFileDriverClose_v2(void)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return api_status(driver_close());
}

/* The name before the _v2 macro existed; binaries built against older
 * headers call it. */
#undef cuFileDriverClose
OCF_EXPORT CUfileError_t cuFileDriverClose(void);
CUfileError_t cuFileDriverClose(void)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return api_status(driver_close());
}

OCF_EXPORT long cuFileUseCount(void)
{
	API_FORK_GUARD(0);
	return driver_use_count();
}

OCF_EXPORT CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr)
{
	API_FORK_GUARD(API_FORK_STATUS);
	if (!fh || !descr) {
		log_error("cuFileHandleRegister: NULL %s", !fh ? "handle pointer" : "descriptor");
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	}
	int r = driver_enter(true);
	if (r)
		return api_status(r);
	r = handle_register(descr, fh);
	driver_exit();
	stats_handle_register(r == 0);
	if (r)
		log_error("cuFileHandleRegister failed: %s", cufileop_status_error(api_status(r).err));
	return api_status(r);
}

OCF_EXPORT void cuFileHandleDeregister(CUfileHandle_t fh)
{
	API_FORK_GUARD();
	if (!fh)
		return;
	if (driver_enter(false))
		return;
	int r = handle_deregister(fh);
	driver_exit();
	stats_handle_deregister(r == 0);
	if (r)
		log_error("cuFileHandleDeregister: unknown handle %p", fh);
}

OCF_EXPORT CUfileError_t cuFileBufRegister(const void *bufPtr_base, size_t length, int flags)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int r = driver_enter(true);
	if (r)
		return api_status(r);
	r = buf_register(bufPtr_base, length, flags);
	driver_exit();
	stats_buf_register(r == 0);
	if (r)
		log_error("cuFileBufRegister(%p, %zu, %d) failed: %s", bufPtr_base, length, flags,
			  cufileop_status_error(api_status(r).err));
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileBufDeregister(const void *bufPtr_base)
{
	API_FORK_GUARD(API_FORK_STATUS);
	if (!bufPtr_base)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	int r = driver_enter(false);
	if (r)
		return api_status(r);
	r = buf_deregister(bufPtr_base);
	driver_exit();
	stats_buf_deregister(r == 0);
	if (r)
		log_error("cuFileBufDeregister(%p) failed: %s", bufPtr_base, cufileop_status_error(api_status(r).err));
	return api_status(r);
}

/* The handle for fh: from the cache when it holds it (*owned = false: the
 * cache keeps the reference), else a new reference that the cache keeps if
 * it has room, or that the caller owns (*owned = true). */
static struct ocf_handle *cached_handle(CUfileHandle_t fh, struct api_io_cache *c, bool *owned)
{
	*owned = true;
	if (!c)
		return handle_get(fh);
	for (int i = 0; i < c->nh; i++)
		if (c->fh[i] == fh) {
			*owned = false;
			return c->h[i];
		}
	struct ocf_handle *h = handle_get(fh);
	if (h && c->nh < API_IO_CACHE_HANDLES) {
		c->fh[c->nh] = fh;
		c->h[c->nh++] = h;
		*owned = false;
	}
	return h;
}

void api_io_cache_drop(struct api_io_cache *c)
{
	for (int i = 0; i < c->nh; i++)
		handle_put(c->h[i]);
	c->nh = 0;
	c->have_buf = false;
}

ssize_t api_io_prepare(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
		       struct api_io_cache *cache, struct ocf_io *io, bool *owns_handle)
{
	*owns_handle = false;
	/* Argument errors are -1 with errno, as NVIDIA's library reports
	 * them: EINVAL for values, EBADF for a handle that is not registered. */
	if (!fh || !base || file_offset < 0 || buf_offset < 0 || size > (size_t)SSIZE_MAX ||
	    (off_t)size > LLONG_MAX - file_offset)
		return -EINVAL;
	bool owned;
	io->h = cached_handle(fh, cache, &owned);
	if (!io->h)
		return -EBADF;
	io->off = file_offset;
	io->len = size;
	int r = 0;
	if (size == 0) {
		/* nothing to resolve */
	} else if (!cache) {
		uint64_t t0 = prof_now();
		r = buf_resolve(base, buf_offset, size, &io->t);
		prof_time(PROF_T_LOOKUP, t0);
	} else {
		/* Requests on one base share its lookup (one CUDA call). */
		if (!cache->have_buf || cache->base != base) {
			cache->have_buf = false;
			uintptr_t b = (uintptr_t)base, p = b + (uintptr_t)buf_offset;
			if (p < b || p + size < p)
				r = OCF_ERR(CU_FILE_INVALID_VALUE); /* buf_resolve's first check */
			else
				r = buf_lookup(base, &cache->bi);
			if (r == 0) {
				cache->base = base;
				cache->have_buf = true;
			}
		}
		if (r == 0)
			r = buf_target(&cache->bi, base, buf_offset, size, &io->t);
	}
	if (r == OCF_ERR(CU_FILE_INVALID_VALUE))
		r = -EINVAL; /* past the end of a registration */
	if (r) {
		if (owned)
			handle_put(io->h);
		io->h = NULL;
		return r;
	}
	*owns_handle = owned;
	return 0;
}

void api_io_log_failure(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
			bool write, ssize_t ret)
{
	log_error("cuFile%s(%p, %p, %zu, %lld, %lld) failed: %s", write ? "Write" : "Read", fh, base, size,
		  (long long)file_offset, (long long)buf_offset,
		  ocf_is_cufile_err(ret) ? cufileop_status_error((CUfileOpError)-ret) : strerror((int)-ret));
}

ssize_t api_io_run(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset, bool write,
		   uint64_t t0, ssize_t prep, struct ocf_io *io, bool owns_handle)
{
	ssize_t ret = prep;
	if (ret == 0 && size > 0)
		ret = write ? ocf_engine->write(io) : ocf_engine->read(io);
	if (owns_handle)
		handle_put(io->h);
	if (t0) {
		/* The GPU record lives while the caller is inside the gate. */
		int gpu = io->t.device && io->t.gpu ? io->t.gpu->ordinal : -1;
		bool unaligned = (((uint64_t)file_offset | size | ((uintptr_t)base + (uintptr_t)buf_offset)) & 4095) != 0;
		stats_io_done(write, size, ret, t0, gpu, unaligned);
	}
	if (ret < 0)
		api_io_log_failure(fh, base, size, file_offset, buf_offset, write, ret);
	return ret;
}

/* The synchronous read/write path after the caller's own checks; returns
 * the internal result (bytes, -errno or -CUfileOpError) and sets no errno,
 * so the asynchronous executor (batch and stream I/O) runs exactly what
 * cuFileRead/cuFileWrite run.  count_stats: count it as a read/write op
 * (batch entries are counted by the batch counters instead). */
ssize_t api_io(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset, bool write,
	       bool count_stats)
{
	uint64_t t0 = count_stats ? stats_io_begin() : 0; /* 0 when statistics are off */
	int r = driver_enter(true);
	if (r)
		return r;
	prof_begin(PROF_CALLER);
	struct ocf_io io = {0};
	bool owns_handle;
	ssize_t prep = api_io_prepare(fh, base, size, file_offset, buf_offset, NULL, &io, &owns_handle);
	ssize_t ret = api_io_run(fh, base, size, file_offset, buf_offset, write, t0, prep, &io, owns_handle);
	prof_end();
	driver_exit();
	return ret;
}

static ssize_t do_io(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
		     bool write)
{
	return api_io_result(api_io(fh, base, size, file_offset, buf_offset, write, true));
}

OCF_EXPORT ssize_t cuFileRead(CUfileHandle_t fh, void *bufPtr_base, size_t size, off_t file_offset,
			      off_t bufPtr_offset)
{
	API_FORK_GUARD(OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED));
	return do_io(fh, bufPtr_base, size, file_offset, bufPtr_offset, false);
}

OCF_EXPORT ssize_t cuFileWrite(CUfileHandle_t fh, const void *bufPtr_base, size_t size, off_t file_offset,
			       off_t bufPtr_offset)
{
	API_FORK_GUARD(OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED));
	return do_io(fh, bufPtr_base, size, file_offset, bufPtr_offset, true);
}
