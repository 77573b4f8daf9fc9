/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.c - the public cuFile entry points for the driver, handles, buffers
 * and synchronous I/O (which request.c carries out), and the mapping of
 * internal results that every api_*.c file uses.
 *
 * This layer is thin: it validates arguments, enters the driver gate, hands
 * work to the subsystem and maps internal results (0/count, -errno,
 * -CUfileOpError) to the API's conventions: CUfileError_t, or for
 * cuFileRead/cuFileWrite a byte count, -1 with errno, or -CU_FILE_* code.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "api.h"
#include "buffer.h"
#include "cuda_loader.h"
#include "driver.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "request.h"
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

static ssize_t do_io(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
		     bool write)
{
	return api_io_result(request_io(fh, base, size, file_offset, buf_offset, write, true));
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
