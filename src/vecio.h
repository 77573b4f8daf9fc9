/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vecio.h - the pieces of a vectored request's memory (vecio.c), for the
 * engine's participants (engine.c).
 */
#ifndef OCF_VECIO_H_
#define OCF_VECIO_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "job.h"

struct ocf_lane;

/* Index of the piece that holds byte `at` of the request. */
size_t seg_find(const struct ocf_io *io, size_t at);

/* The part of piece i from request byte `at` on, at most n bytes: its
 * address, and its length in *len. */
uintptr_t seg_part(const struct ocf_io *io, size_t i, size_t at, size_t n, size_t *len);

/* preadv/pwritev of bytes [at, at+n) of a vectored host request at file
 * offset off, on a buffered descriptor.  Returns the bytes moved (short
 * only at end of file), or -errno when nothing was. */
ssize_t host_vec_syscalls(const struct ocf_job *job, size_t at, size_t n, off_t off);

/* Bytes [at, at+n) of a vectored host request through the lane's staging
 * buffer (O_DIRECT descriptors, userspace file systems): one file transfer
 * per staging chunk.  Returns as host_vec_syscalls. */
ssize_t host_vec_staged(struct ocf_job *job, struct ocf_lane *lane, size_t at, size_t n, off_t off);

/* Whether a vectored host request needs a staging buffer. */
bool host_vec_needs_stage(const struct ocf_io *io);

#endif /* OCF_VECIO_H_ */
