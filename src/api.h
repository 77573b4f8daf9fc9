/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.h - helpers shared by the public API files (api*.c, topology.c): the
 * fork guard and the mapping of internal results to the public
 * conventions.  Only these files know CUfileError_t; nothing below the API
 * layer includes this header.
 */
#ifndef OCF_API_H_
#define OCF_API_H_

#include <stdbool.h>
#include <stdint.h>
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

/* An internal I/O result as cuFileRead returns it: bytes and -CU_FILE_*
 * codes as they are, -errno as -1 with errno set. */
ssize_t api_io_result(ssize_t r);

#endif /* OCF_API_H_ */
