/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.h - helpers shared by the public API files.
 */
#ifndef OCF_API_H_
#define OCF_API_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "buffer.h"
#include "cufile.h"
#include "engine.h"
#include "driver.h"
#include "internal.h"

/* The first statement of every entry point but cuFileGetVersion: in the
 * child of a fork() made after the process used the library, return `fail`
 * before anything else runs (see driver.c). */
#define API_FORK_GUARD(fail)                                                  \
	do {                                                                  \
		if (driver_process_check())                                   \
			return fail;                                          \
	} while (0)
#define API_FORK_STATUS api_status(OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED))

/* Internal result (0, -errno or -CUfileOpError) to CUfileError_t. */
CUfileError_t api_status(long r);

/* An internal I/O result as cuFileRead returns it: bytes and -CU_FILE_*
 * codes as they are, -errno as -1 with errno set. */
ssize_t api_io_result(ssize_t r);

/* cuFileRead/cuFileWrite after their argument checks, with the internal
 * result (bytes, -errno, -CUfileOpError); enters the driver gate itself.
 * Used by the asynchronous executor (async.c) for batch and stream I/O. */
ssize_t api_io(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset, bool write,
	       bool count_stats);

/* Lookups a thread reuses across consecutive requests (batch entries):
 * references to the handles it used last and the lookup of the last buffer
 * base.  api_io_cache_drop() releases them; it must outlive every request
 * prepared with it. */
#define API_IO_CACHE_HANDLES 4
struct api_io_cache {
	int nh;
	CUfileHandle_t fh[API_IO_CACHE_HANDLES];
	struct ocf_handle *h[API_IO_CACHE_HANDLES];
	bool have_buf;
	const void *base;
	struct ocf_bufinfo bi;
};
void api_io_cache_drop(struct api_io_cache *c);

/* cuFileRead/cuFileWrite's argument checks and resolution of the handle and
 * the buffer range, with their results (-EINVAL, -EBADF, -CU_FILE_*).  On
 * success io->h is valid; *owns_handle says whether the caller must
 * handle_put() it (otherwise the cache holds it).  cache may be NULL.  The
 * caller is inside the driver gate. */
ssize_t api_io_prepare(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
		       struct api_io_cache *cache, struct ocf_io *io, bool *owns_handle);
/* The rest of api_io() for a request api_io_prepare() resolved (prep: its
 * result), possibly ahead of time: runs it, counts it when t0 is a
 * statistics start time (stats_io_begin(); 0: not counted), logs a failure
 * and drops the handle it owns.  The caller is inside the driver gate. */
ssize_t api_io_run(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset, bool write,
		   uint64_t t0, ssize_t prep, struct ocf_io *io, bool owns_handle);
/* Logs a failed read or write the way cuFileRead/cuFileWrite do. */
void api_io_log_failure(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
			bool write, ssize_t ret);

#endif /* OCF_API_H_ */
