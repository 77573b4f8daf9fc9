/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vecio.c - where the chunks of a vectored request (cuFileReadv /
 * cuFileWritev) meet its pieces of memory.
 *
 * DESIGN
 * A vectored request is chunked like any other by the engine (engine.c):
 * its file range is contiguous.  Only where a chunk's bytes meet memory does
 * it differ: host memory behind a buffered descriptor is moved with one
 * preadv/pwritev per chunk (up to VEC_IOV_MAX pieces per call), with no copy;
 * every other chunk is staged whole (one file transfer) and its bytes are
 * scattered to or gathered from the pieces it touches: one memcpy per piece
 * here, or, for device memory, one copy on the lane's stream per piece, all
 * completed by one event (engine.c, dev_copy, with seg_find and seg_part).
 */
#define _GNU_SOURCE
#include "vecio.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "fileio.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"

#define VEC_IOV_MAX 1024 /* the kernel's UIO_MAXIOV */

/* Index of the piece that holds byte `at` of the request. */
size_t seg_find(const struct ocf_io *io, size_t at)
{
	size_t lo = 0, hi = io->nsegs;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (io->segs[mid].at <= at)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The part of piece i from request byte `at` on, at most n bytes. */
uintptr_t seg_part(const struct ocf_io *io, size_t i, size_t at, size_t n, size_t *len)
{
	const struct ocf_seg *sg = &io->segs[i];
	size_t o = at - sg->at;
	*len = OCF_MIN(sg->len - o, n);
	return sg->mem + o;
}

/* Copies between `buf` and bytes [at, at+n) of a vectored host request. */
static void host_vec_copy(const struct ocf_io *io, size_t at, char *buf, size_t n, bool to_pieces)
{
	size_t done = 0;
	for (size_t i = seg_find(io, at); done < n; i++) {
		size_t k;
		char *p = (char *)seg_part(io, i, at + done, n - done, &k);
		if (to_pieces)
			memcpy(p, buf + done, k);
		else
			memcpy(buf + done, p, k);
		done += k;
	}
}

/* preadv/pwritev of bytes [at, at+n) of a vectored host request at file
 * offset off, on a buffered descriptor.  Returns the bytes moved (short
 * only at end of file), or -errno when nothing was. */
ssize_t host_vec_syscalls(const struct ocf_job *job, size_t at, size_t n, off_t off)
{
	const struct ocf_io *io = job->io;
	struct iovec iov[VEC_IOV_MAX];
	size_t done = 0;
	while (done < n) {
		int cnt = 0;
		size_t want = 0;
		for (size_t i = seg_find(io, at + done); cnt < VEC_IOV_MAX && want < n - done; i++) {
			size_t k;
			uintptr_t p = seg_part(io, i, at + done + want, n - done - want, &k);
			iov[cnt++] = (struct iovec){(void *)p, k};
			want += k;
		}
		ssize_t r = job->write ? pwritev(io->h->fd, iov, cnt, off + (off_t)done)
				      : preadv(io->h->fd, iov, cnt, off + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return done ? (ssize_t)done : -errno;
		if (r == 0) {
			if (job->write)
				return done ? (ssize_t)done : -EIO;
			break;
		}
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* Bytes [at, at+n) of a vectored host request through the lane's staging
 * buffer (O_DIRECT descriptors, userspace file systems): one file transfer
 * per staging chunk.  Returns as host_vec_syscalls. */
ssize_t host_vec_staged(struct ocf_job *job, struct ocf_lane *lane, size_t at, size_t n, off_t off)
{
	const struct ocf_io *io = job->io;
	struct ocf_slot *sl = &lane->bufs[0];
	size_t done = 0;
	while (done < n) {
		size_t k = OCF_MIN(n - done, sl->chunk);
		off_t o = off + (off_t)done;
		char *stage = sl->buf + fio_stage_skew(io->h, o);
		ssize_t r;
		if (!job->write) {
			r = fio_read_staged(io->h, sl, o, k);
			if (r > 0)
				host_vec_copy(io, at + done, stage, (size_t)r, true);
		} else {
			host_vec_copy(io, at + done, stage, k, false);
			r = fio_write(io->h, stage, k, o, NULL, job->wprep);
		}
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
		if ((size_t)r < k)
			break;
	}
	return (ssize_t)done;
}

/* Needs a vectored host request a staging buffer? */
bool host_vec_needs_stage(const struct ocf_io *io)
{
	return io->h->odirect || io->h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS;
}
