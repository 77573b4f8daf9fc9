/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.h - helpers shared by the public API files.
 */
#ifndef OCF_API_H_
#define OCF_API_H_

#include <stdbool.h>
#include <sys/types.h>

#include "cufile.h"
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

/* cuFileRead/cuFileWrite after their argument checks, with the internal
 * result (bytes, -errno, -CUfileOpError); enters the driver gate itself.
 * Used by the asynchronous executor (async.c) for batch and stream I/O. */
ssize_t api_io(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset, bool write,
	       bool count_stats);

#endif /* OCF_API_H_ */
