/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.h - the I/O request layer: one read or write of a registered
 * file through a buffer, from the argument checks and lookups to the engine
 * and back, with internal results (bytes, -errno, -CUfileOpError).
 *
 * cuFileRead/cuFileWrite (api.c), batch entries (batch_io.c) and stream
 * operations (stream.c) all go through it, so that every path checks,
 * resolves, counts and logs a request the same way.  Only the API layer
 * turns its results into the public conventions (api.h).
 */
#ifndef OCF_REQUEST_H_
#define OCF_REQUEST_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "buffer.h"
#include "cufile.h"
#include "engine.h"

/* cuFileRead/cuFileWrite after their argument checks, with the internal
 * result (bytes, -errno, -CUfileOpError); enters the driver gate itself.
 * count_stats: count it as a read/write op (batch entries are counted by
 * the batch counters instead). */
ssize_t request_io(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
		   bool write, bool count_stats);

/* Lookups a thread reuses across consecutive requests (batch entries):
 * references to the handles it used last and the lookup of the last buffer
 * base.  request_cache_drop() releases them; it must outlive every request
 * prepared with it. */
#define REQUEST_CACHE_HANDLES 4
struct request_cache {
	int nh;
	CUfileHandle_t fh[REQUEST_CACHE_HANDLES];
	struct ocf_handle *h[REQUEST_CACHE_HANDLES];
	bool have_buf;
	const void *base;
	struct ocf_bufinfo bi;
};
void request_cache_drop(struct request_cache *c);

/* cuFileRead/cuFileWrite's argument checks and resolution of the handle and
 * the buffer range, with their results (-EINVAL, -EBADF, -CU_FILE_*).  On
 * success io->h is valid; *owns_handle says whether the caller must
 * handle_put() it (otherwise the cache holds it).  cache may be NULL.  The
 * caller is inside the driver gate. */
ssize_t request_prepare(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
			bool write, struct request_cache *cache, struct ocf_io *io, bool *owns_handle);
/* The rest of request_io() for a request request_prepare() resolved (prep:
 * its result; io->call: its arguments), possibly ahead of time: runs it,
 * counts it when t0 is a statistics start time (stats_io_begin(); 0: not
 * counted), logs a failure and drops the handle it owns.  The caller is
 * inside the driver gate. */
ssize_t request_run(struct ocf_io *io, uint64_t t0, ssize_t prep, bool owns_handle);
/* Runs a resolved request through the engine: bytes moved, or an internal
 * error.  The one place the layers above the data path call the engine
 * (request_run, batch entries, the runs of a vector).  It counts as a use
 * of the handle's files (handle_enter): -EBADF, nothing touched, once the
 * handle is deregistered.  It goes where the caller's number points (a
 * closed one: -EBADF; another file: that file, through the number alone:
 * handle_same_file). */
ssize_t request_engine(const struct ocf_io *io, bool write);
/* The tail every single-range request shares once its result is known:
 * drops the handle it owns, counts it when t0 is a statistics start time
 * (0: not counted; batch entries are counted by the batch counters), and
 * logs a failure.  Returns ret. */
ssize_t request_done(struct ocf_io *io, uint64_t t0, ssize_t ret, bool owns_handle);
/* Logs a failed read or write the way cuFileRead/cuFileWrite do. */
void request_log_failure(const struct ocf_call *c, ssize_t ret);

#endif /* OCF_REQUEST_H_ */
