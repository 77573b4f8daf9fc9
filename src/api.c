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

static ssize_t io_result(ssize_t r)
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
	*version = 1150;
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
		log_error("cuFileHandleRegister failed: %s", cufileop_status_error((CUfileOpError)-r));
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
			  cufileop_status_error((CUfileOpError)-r));
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
		log_error("cuFileBufDeregister(%p) failed: %s", bufPtr_base, cufileop_status_error((CUfileOpError)-r));
	return api_status(r);
}

/* Shared argument checks and set-up of cuFileRead / cuFileWrite. */
static ssize_t io_prepare(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
			  struct ocf_io *io)
{
	/* Argument errors are -1 with errno, as NVIDIA's library reports
	 * them: EINVAL for values, EBADF for a handle that is not registered. */
	if (!fh || !base || file_offset < 0 || buf_offset < 0 || size > (size_t)SSIZE_MAX ||
	    (off_t)size > LLONG_MAX - file_offset)
		return -EINVAL;
	io->h = handle_get(fh);
	if (!io->h)
		return -EBADF;
	io->off = file_offset;
	io->len = size;
	if (size == 0)
		return 0;
	int r = buf_resolve(base, buf_offset, size, &io->t);
	if (r == OCF_ERR(CU_FILE_INVALID_VALUE))
		r = -EINVAL; /* past the end of a registration */
	if (r) {
		handle_put(io->h);
		io->h = NULL;
	}
	return r;
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
	struct ocf_io io = {0};
	ssize_t ret = io_prepare(fh, base, size, file_offset, buf_offset, &io);
	if (ret == 0 && size > 0)
		ret = write ? ocf_engine->write(&io) : ocf_engine->read(&io);
	if (io.h)
		handle_put(io.h);
	/* Read before driver_exit: a close may free the GPU record after it. */
	int gpu = io.t.device && io.t.gpu ? io.t.gpu->ordinal : -1;
	driver_exit();
	if (t0) {
		bool unaligned = (((uint64_t)file_offset | size | ((uintptr_t)base + (uintptr_t)buf_offset)) & 4095) != 0;
		stats_io_done(write, size, ret, t0, gpu, unaligned);
	}
	if (ret < 0)
		log_error("cuFile%s(%p, %p, %zu, %lld, %lld) failed: %s", write ? "Write" : "Read", fh, base, size,
			  (long long)file_offset, (long long)buf_offset,
			  ocf_is_cufile_err(ret) ? cufileop_status_error((CUfileOpError)-ret) : strerror((int)-ret));
	return ret;
}

static ssize_t do_io(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
		     bool write)
{
	return io_result(api_io(fh, base, size, file_offset, buf_offset, write, true));
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
