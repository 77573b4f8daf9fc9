/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_stream.c - cuFileReadAsync/WriteAsync and stream registration: the
 * driver gate and argument checks around stream.c.
 *
 * The NULL stream means "synchronous": the values behind the pointers are
 * read now and *bytes_p gets exactly what cuFileRead/cuFileWrite would
 * return (bytes, -1 with errno set, or -CU_FILE_* code).  Without a usable
 * CUDA driver no stream work can exist to be ordered with, so every stream
 * is synchronous then too.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "api.h"
#include "cuda_loader.h"
#include "driver.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "request.h"
#include "stats.h"
#include "stream.h"

static CUfileError_t async_io(CUfileHandle_t fh, void *base, size_t *size_p, off_t *file_offset_p,
			      off_t *buf_offset_p, ssize_t *bytes_p, CUstream stream, bool write)
{
	const char *fn = write ? "cuFileWriteAsync" : "cuFileReadAsync";
	if (!fh || !base || !size_p || !file_offset_p || !buf_offset_p || !bytes_p) {
		log_error("%s: NULL argument", fn);
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	}
	int r = driver_enter(true);
	if (r)
		return api_status(r);
	if (!stream || !cuda_available()) {
		ssize_t n = request_io(fh, base, *size_p, *file_offset_p, *buf_offset_p, write, true);
		stats_stream_done(write, n);
		driver_exit();
		*bytes_p = api_io_result(n);
		return api_status(0);
	}
	/* A handle that is not registered now fails the call rather than the
	 * operation later (it may still be deregistered before the stream
	 * reaches the operation: then *bytes_p = -EBADF). */
	struct ocf_handle *h = handle_get(fh);
	if (!h) {
		driver_exit();
		log_error("%s: unknown handle %p", fn, fh);
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	}
	handle_put(h);
	r = stream_io(fh, base, size_p, file_offset_p, buf_offset_p, bytes_p, stream, write);
	driver_exit();
	if (r)
		log_error("%s(%p, stream %p) failed: %s", fn, fh, (void *)stream,
			  cufileop_status_error(api_status(r).err));
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p, off_t *file_offset_p,
					 off_t *bufPtr_offset_p, ssize_t *bytes_read_p, CUstream stream)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return async_io(fh, bufPtr_base, size_p, file_offset_p, bufPtr_offset_p, bytes_read_p, stream, false);
}

OCF_EXPORT CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p,
					  off_t *file_offset_p, off_t *bufPtr_offset_p, ssize_t *bytes_written_p,
					  CUstream stream)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return async_io(fh, bufPtr_base, size_p, file_offset_p, bufPtr_offset_p, bytes_written_p, stream, true);
}

OCF_EXPORT CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int r = driver_enter(true);
	if (r)
		return api_status(r);
	r = stream_register(stream, flags);
	driver_exit();
	if (r)
		log_error("cuFileStreamRegister(%p, %#x) failed", (void *)stream, flags);
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileStreamDeregister(CUstream stream)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int r = driver_enter(false);
	if (r)
		return api_status(r);
	r = stream_deregister(stream);
	driver_exit();
	if (r)
		log_error("cuFileStreamDeregister(%p): stream not registered", (void *)stream);
	return api_status(r);
}
