/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stream.h - I/O ordered with CUDA streams (cuFileReadAsync/WriteAsync).
 */
#ifndef OCF_STREAM_H_
#define OCF_STREAM_H_

#include <cuda.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cufile.h"

/* Per-stream settings (CU_FILE_STREAM_* flags).  0 or an error. */
int stream_register(CUstream stream, unsigned flags);
int stream_deregister(CUstream stream);
/* Enqueues one read or write on a (non-NULL) stream; the caller is inside
 * the driver gate and has checked the pointers.  Returns 0 or an error. */
int stream_io(CUfileHandle_t fh, void *base, size_t *size_p, off_t *file_offset_p, off_t *buf_offset_p,
	      ssize_t *bytes_p, CUstream stream, bool write);
/* At process exit: releases every stream wait of the library, so that the
 * CUDA driver's teardown can drain the streams (see stream.c). */
void stream_release_all_at_exit(void);
/* Driver close, once no operation is in flight: forgets registered streams
 * and frees the flag memory. */
void stream_teardown(void);

#endif /* OCF_STREAM_H_ */
