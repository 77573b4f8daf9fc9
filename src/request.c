/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.c - the I/O request layer (request.h).
 *
 * DESIGN: a request is checked and resolved (request_prepare: the handle
 * and the buffer range, from a per-thread lookup cache when the caller has
 * one), then run by the engine and accounted (request_run).  The two halves
 * are separate because stream operations and batch entries resolve at
 * submission and run later, on an executor thread; request_io() is both
 * halves inside the driver gate, for calls that do everything at once.
 * Results are internal (bytes, -errno, -CUfileOpError); errno is never
 * set here.  Argument errors are -EINVAL and an unknown handle -EBADF, the
 * way NVIDIA's library reports them for cuFileRead/cuFileWrite (-1 with
 * errno), which the API layer applies.
 */
#define _GNU_SOURCE
#include "request.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "buffer.h"
#include "driver.h"
#include "engine.h"
#include "fileio.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "profile.h"
#include "stats.h"

/* The handle for fh: from the cache when it holds it (*owned = false: the
 * cache keeps the reference), else a new reference that the cache keeps if
 * it has room, or that the caller owns (*owned = true). */
static struct ocf_handle *cached_handle(CUfileHandle_t fh, struct request_cache *c, bool *owned)
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
	if (h && c->nh < REQUEST_CACHE_HANDLES) {
		c->fh[c->nh] = fh;
		c->h[c->nh++] = h;
		*owned = false;
	}
	return h;
}

void request_cache_drop(struct request_cache *c)
{
	for (int i = 0; i < c->nh; i++)
		handle_put(c->h[i]);
	c->nh = 0;
	c->have_buf = false;
}

ssize_t request_prepare(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
			bool write, struct request_cache *cache, struct ocf_io *io, bool *owns_handle)
{
	*owns_handle = false;
	io->call = (struct ocf_call){.fh = fh,
				     .base = base,
				     .size = size,
				     .file_offset = file_offset,
				     .buf_offset = buf_offset,
				     .write = write};
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

void request_log_failure(const struct ocf_call *c, ssize_t ret)
{
	log_error("cuFile%s(%p, %p, %zu, %lld, %lld) failed: %s", c->write ? "Write" : "Read", c->fh, c->base,
		  c->size, (long long)c->file_offset, (long long)c->buf_offset,
		  ocf_is_cufile_err(ret) ? cufileop_status_error((CUfileOpError)-ret) : strerror((int)-ret));
}

ssize_t request_engine(const struct ocf_io *io, bool write)
{
	/* The request uses the handle's files from here to its end (handle.c),
	 * unless the handle was deregistered meanwhile; what the library
	 * opened of the file serves it only while the caller's number names
	 * that file (closed: EBADF; another file: the number alone). */
	struct ocf_handle view, *use;
	int e = handle_begin_io(io->h, fio_own_files(io->h, io->len, write, io->t.device), &view, &use);
	if (e) {
		if (!io->plan)
			return e;
		/* A stream operation's copies are queued on the application's
		 * stream: every chunk is still released, with no file I/O
		 * (reads: zeros), or the stream would wait forever. */
		struct ocf_ringplan skip = *io->plan;
		skip.skip = true;
		struct ocf_io dry = *io;
		dry.plan = &skip;
		(void)(write ? ocf_engine->write(&dry) : ocf_engine->read(&dry));
		return e;
	}
	struct ocf_io alt;
	const struct ocf_io *run = io;
	if (use != io->h) {
		alt = *io;
		alt.h = use;
		run = &alt;
	}
	ssize_t r = write ? ocf_engine->write(run) : ocf_engine->read(run);
	handle_end_io(io->h, use);
	return r;
}

ssize_t request_run(struct ocf_io *io, uint64_t t0, ssize_t prep, bool owns_handle)
{
	ssize_t ret = prep;
	if (ret == 0 && io->call.size > 0)
		ret = request_engine(io, io->call.write);
	return request_done(io, t0, ret, owns_handle);
}

ssize_t request_done(struct ocf_io *io, uint64_t t0, ssize_t ret, bool owns_handle)
{
	const struct ocf_call *c = &io->call;
	if (owns_handle)
		handle_put(io->h);
	if (t0) {
		/* The GPU record lives while the caller is inside the gate. */
		int gpu = io->t.device && io->t.gpu ? io->t.gpu->ordinal : -1;
		bool unaligned =
		    (((uint64_t)c->file_offset | c->size | ((uintptr_t)c->base + (uintptr_t)c->buf_offset)) & 4095) != 0;
		stats_io_done(c->write, c->size, ret, t0, gpu, unaligned);
	}
	if (ret < 0)
		request_log_failure(c, ret);
	return ret;
}

/* Sets no errno: the asynchronous executor (batch and stream I/O) runs
 * exactly what cuFileRead/cuFileWrite run, and only the API layer speaks
 * the public conventions. */
ssize_t request_io(CUfileHandle_t fh, const void *base, size_t size, off_t file_offset, off_t buf_offset,
		   bool write, bool count_stats)
{
	uint64_t t0 = count_stats ? stats_io_begin() : 0; /* 0 when statistics are off */
	int r = driver_enter(true);
	if (r)
		return r;
	prof_begin(PROF_CALLER);
	struct ocf_io io = {0};
	bool owns_handle;
	ssize_t prep = request_prepare(fh, base, size, file_offset, buf_offset, write, NULL, &io, &owns_handle);
	ssize_t ret = request_run(&io, t0, prep, owns_handle);
	prof_end();
	driver_exit();
	return ret;
}
