/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_vec.c - cuFileReadv and cuFileWritev (cuFile 1.19).
 *
 * DESIGN: the vector describes one contiguous file range starting at
 * file_offset and the memory pieces it is scattered to or gathered from, in
 * order.  Each piece is resolved like a cuFileRead buffer (registered or
 * not, host or device memory; pieces inside one registration or one device
 * allocation share a single lookup), neighbouring pieces that are adjacent
 * in memory are merged, and consecutive pieces in the same kind of memory
 * (host, or device memory of one GPU and context) form a run.  Each run is
 * one engine request over its part of the file range (engine.c: vectored
 * requests), so the engine's chunking, parallelism, staging, alignment and
 * data-safety rules apply unchanged: a vector of many small pieces costs the
 * system calls of its file range, not one per piece.  Runs execute in order;
 * the result follows cuFileRead's conventions: the bytes moved (the
 * contiguous prefix of the vector; short only at end of file or when a later
 * part failed after earlier ones succeeded), -1 with errno for bad arguments
 * (EINVAL) or an unknown handle (EBADF), or -CU_FILE_* for a library error
 * when nothing was moved.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "buffer.h"
#include "request.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "stats.h"

/* Same kind of memory: one engine request can serve both. */
static bool same_domain(const struct ocf_target *a, const struct ocf_target *b)
{
	if (a->device != b->device)
		return false;
	return !a->device || (a->gpu == b->gpu && a->ctx == b->ctx && a->use_stream == b->use_stream);
}

static uintptr_t target_mem(const struct ocf_target *t) { return t->device ? (uintptr_t)t->dev : (uintptr_t)t->host; }

struct vec_plan {
	struct ocf_seg *segs;     /* merged pieces, `at` relative to their run */
	struct ocf_target *doms;  /* each piece's memory */
	size_t *run_start;        /* first piece of each run */
	size_t n, nruns;
	int gpu;                  /* a GPU ordinal for the statistics, or -1 */
	bool unaligned;
};

static void plan_free(struct vec_plan *p)
{
	free(p->segs);
	free(p->doms);
	free(p->run_start);
}

/* Resolves and merges the pieces; 0 or an internal error (nothing moved). */
static int plan_build(const CUfileIOVec_t *iov, size_t iovcnt, struct vec_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->gpu = -1;
	p->segs = calloc(iovcnt, sizeof(*p->segs));
	p->doms = calloc(iovcnt, sizeof(*p->doms));
	p->run_start = calloc(iovcnt, sizeof(*p->run_start));
	if (!p->segs || !p->doms || !p->run_start)
		return -ENOMEM;
	struct ocf_bufinfo bi;
	const void *bi_base = NULL;
	size_t run_at = 0;
	for (size_t i = 0; i < iovcnt; i++) {
		const void *b = iov[i].base;
		size_t len = iov[i].len;
		if (len == 0)
			continue;
		int r = 0;
		if (!bi_base || !buf_info_covers(&bi, b, len)) {
			bi_base = NULL;
			r = buf_lookup(b, &bi);
			if (r == 0)
				bi_base = b;
		}
		/* Resolved at its own address: a piece may lie below the one
		 * whose lookup it shares (pieces in any memory order). */
		struct ocf_target t;
		if (r == 0)
			r = buf_target(&bi, b, 0, len, &t);
		if (r)
			return r == OCF_ERR(CU_FILE_INVALID_VALUE) ? -EINVAL : r; /* past the end of a registration */
		if (t.device && p->gpu < 0)
			p->gpu = t.gpu->ordinal;
		if ((uintptr_t)b & 4095 || len & 4095)
			p->unaligned = true;
		if (p->n > 0 && same_domain(&p->doms[p->n - 1], &t)) {
			struct ocf_seg *prev = &p->segs[p->n - 1];
			/* Adjacent in memory: one piece, but never one copy across
			 * two device allocations that happen to be back to back. */
			if (prev->mem + prev->len == target_mem(&t) &&
			    (!t.device || buf_same_allocation(&p->doms[p->n - 1], &t))) {
				prev->len += len;
				run_at += len;
				continue;
			}
		} else {
			p->run_start[p->nruns++] = p->n;
			run_at = 0;
		}
		p->segs[p->n] = (struct ocf_seg){.at = run_at, .len = len, .mem = target_mem(&t)};
		p->doms[p->n++] = t;
		run_at += len;
	}
	return 0;
}

/* Runs the plan's runs in order from file offset off: bytes moved, or an
 * internal error when nothing was. */
static ssize_t plan_run(struct vec_plan *p, struct ocf_handle *h, off_t off, bool write)
{
	size_t done = 0;
	for (size_t k = 0; k < p->nruns; k++) {
		size_t a = p->run_start[k], b = k + 1 < p->nruns ? p->run_start[k + 1] : p->n;
		struct ocf_io io = {.h = h, .t = p->doms[a], .off = off + (off_t)done};
		io.len = p->segs[b - 1].at + p->segs[b - 1].len;
		if (b - a > 1) {
			io.segs = &p->segs[a];
			io.nsegs = b - a;
		}
		ssize_t r = request_engine(&io, write);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
		if ((size_t)r < io.len)
			break;
	}
	return (ssize_t)done;
}

static ssize_t vec_io(CUfileHandle_t fh, const CUfileIOVec_t *iov, size_t iovcnt, off_t file_offset, unsigned flags,
		      bool write)
{
	/* Arguments first, as cuFileRead checks them: -EINVAL / -EBADF. */
	if (!fh || (iovcnt && !iov) || flags || file_offset < 0)
		return -EINVAL;
	size_t total = 0;
	for (size_t i = 0; i < iovcnt; i++) {
		if (iov[i].len && !iov[i].base)
			return -EINVAL;
		if (iov[i].len > (size_t)SSIZE_MAX - total)
			return -EINVAL;
		total += iov[i].len;
	}
	if ((off_t)total > LLONG_MAX - file_offset)
		return -EINVAL;
	uint64_t t0 = stats_io_begin();
	int r = driver_enter(true);
	if (r)
		return r;
	struct ocf_handle *h = handle_get(fh);
	ssize_t ret = h ? 0 : -EBADF;
	struct vec_plan plan = {.gpu = -1};
	if (h && total > 0) {
		ret = plan_build(iov, iovcnt, &plan);
		if (ret == 0)
			ret = plan_run(&plan, h, file_offset, write);
	}
	if (h)
		handle_put(h);
	driver_exit();
	if (t0)
		stats_iov_done(write, total, ret, t0, plan.gpu, plan.unaligned || (file_offset & 4095) != 0);
	plan_free(&plan);
	if (ret < 0)
		log_error("cuFile%s(%p, %p, %zu, %lld, %u) failed: %s", write ? "Writev" : "Readv", fh, (const void *)iov,
			  iovcnt, (long long)file_offset, flags,
			  ocf_is_cufile_err(ret) ? cufileop_status_error((CUfileOpError)-ret) : strerror((int)-ret));
	return ret;
}

OCF_EXPORT ssize_t cuFileReadv(CUfileHandle_t fh, const CUfileIOVec_t *iov, size_t iovcnt, off_t file_offset,
			       unsigned flags)
{
	API_FORK_GUARD(OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED));
	return api_io_result(vec_io(fh, iov, iovcnt, file_offset, flags, false));
}

OCF_EXPORT ssize_t cuFileWritev(CUfileHandle_t fh, const CUfileIOVec_t *iov, size_t iovcnt, off_t file_offset,
				unsigned flags)
{
	API_FORK_GUARD(OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED));
	return api_io_result(vec_io(fh, iov, iovcnt, file_offset, flags, true));
}
