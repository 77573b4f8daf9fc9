/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_verify.c - the file pattern (pattern.h) in gdsio: test files are
 * created with it, writes send it, -V checks every byte read or written
 * against it.  Device buffers are filled and checked through the worker's
 * host scratch, 64 MiB at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gdsio.h"
#include "pattern.h"

/* Put the pattern for file offset `off` into len bytes of the worker's
 * buffer at byte `at` (through the scratch when the buffer is on the GPU).
 * With -e, each entry's file holds its own part of the pattern: file offset
 * X that of X + w->pattern_at (0 otherwise), here and in the checks. */
int fill_buffer(struct worker *w, size_t at, uint64_t off, size_t len)
{
	off += w->pattern_at;
	if (!w->buf.on_device) {
		pattern_fill((char *)w->buf.ptr + at, off, len);
		return 0;
	}
	for (size_t c = 0; c < len; c += w->vhost_len) {
		size_t m = len - c < w->vhost_len ? len - c : w->vhost_len;
		pattern_fill(w->vhost, off + c, m);
		CUresult r = cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)w->buf.ptr + at + c, w->vhost, m);
		if (r) {
			worker_fail(w, ST_SETUP, "cuMemcpyHtoD: %s", cuda_dl_errstr(&cu, r));
			return -1;
		}
	}
	/* From pageable memory the copy may still be landing: cuFile I/O is
	 * not stream-ordered, so wait for the legacy stream. */
	CUresult r = cu.StreamSynchronize(NULL);
	if (r) {
		worker_fail(w, ST_SETUP, "cuStreamSynchronize: %s", cuda_dl_errstr(&cu, r));
		return -1;
	}
	return 0;
}

int poison_buffer(struct worker *w, size_t at, size_t len)
{
	if (!w->buf.on_device) {
		memset((char *)w->buf.ptr + at, POISON, len);
		return 0;
	}
	CUresult r =
	    cu.MemsetD8 ? cu.MemsetD8((CUdeviceptr)(uintptr_t)w->buf.ptr + at, POISON, len) : CUDA_SUCCESS;
	if (r) {
		worker_fail(w, ST_SETUP, "cuMemsetD8: %s", cuda_dl_errstr(&cu, r));
		return -1;
	}
	/* A memset of device memory returns before it has run: it is queued
	 * on the legacy stream.  cuFile I/O is ordered with no stream, and a
	 * library that copies on a non-blocking stream can land the read's
	 * bytes first, which the late memset then overwrites with poison.
	 * Wait until it has run. */
	r = cu.MemsetD8 ? cu.StreamSynchronize(NULL) : CUDA_SUCCESS;
	if (r)
		worker_fail(w, ST_SETUP, "cuStreamSynchronize: %s", cuda_dl_errstr(&cu, r));
	return r ? -1 : 0;
}

/* After a read: the len bytes at buffer byte `at` must hold file [off, off+len). */
int verify_read(struct worker *w, size_t at, uint64_t off, size_t len)
{
	for (size_t c = 0; c < len; c += w->vhost_len) {
		size_t m = len - c < w->vhost_len ? len - c : w->vhost_len;
		const void *p = (char *)w->buf.ptr + at + c;
		if (w->buf.on_device) {
			CUresult r = cu.MemcpyDtoH(w->vhost, (CUdeviceptr)(uintptr_t)w->buf.ptr + at + c, m);
			if (r) {
				worker_fail(w, ST_SETUP, "cuMemcpyDtoH: %s", cuda_dl_errstr(&cu, r));
				return -1;
			}
			p = w->vhost;
		}
		long long bad = pattern_check(p, off + c + w->pattern_at, m);
		if (bad >= 0) {
			uint64_t fo = off + c + (uint64_t)bad;
			worker_fail(
			    w, ST_VERIFY,
			    "verify: first bad byte at file offset %llu (read of %zu at %llu): got 0x%02x, "
			    "want 0x%02x",
			    (unsigned long long)fo, len, (unsigned long long)off, ((const uint8_t *)p)[bad],
			    pattern_byte(fo + w->pattern_at));
			return -1;
		}
	}
	return 0;
}

/* After a write: read the file back (buffered fd) and check it. */
int verify_write(struct worker *w, uint64_t off, size_t len)
{
	for (size_t c = 0; c < len; c += w->vhost_len) {
		size_t m = len - c < w->vhost_len ? len - c : w->vhost_len;
		int e = full_pread(w->vfd, w->vhost, m, off + c);
		if (e) {
			worker_fail(w, ST_IOERR, "verify: read back at %llu: %s",
				    (unsigned long long)(off + c), strerror(-e));
			return -1;
		}
		long long bad = pattern_check(w->vhost, off + c + w->pattern_at, m);
		if (bad >= 0) {
			uint64_t fo = off + c + (uint64_t)bad;
			worker_fail(
			    w, ST_VERIFY,
			    "verify: written data wrong, first bad byte at file offset %llu: got 0x%02x, "
			    "want 0x%02x",
			    (unsigned long long)fo, ((const uint8_t *)w->vhost)[bad],
			    pattern_byte(fo + w->pattern_at));
			return -1;
		}
	}
	return 0;
}

/* -v: piece j of an op of io bytes.  Pieces follow each other in the file
 * (foff) and are laid out in the buffer in reverse order (moff), so that no
 * two neighbouring pieces are adjacent in memory and the library cannot
 * merge them into one: the vector really scatters (gathers).  The last piece
 * takes the remainder. */
void vec_piece(size_t io, unsigned j, size_t *foff, size_t *moff, size_t *len)
{
	size_t base = io / o.vec;
	*foff = base * j;
	*len = j == o.vec - 1 ? io - base * (o.vec - 1) : base;
	*moff = io - *foff - *len;
}

/* fill_buffer or verify_read (fn) for one op's n bytes at buffer byte
 * `at`, following the piece layout of -v. */
int per_op(int (*fn)(struct worker *, size_t, uint64_t, size_t), struct worker *w, size_t at, uint64_t off,
	   size_t n)
{
	if (!o.vec)
		return fn(w, at, off, n);
	for (unsigned j = 0; j < o.vec; j++) {
		size_t fo, mo, len;
		vec_piece(n, j, &fo, &mo, &len);
		if (fn(w, at + mo, off + fo, len))
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------- test files */

struct prep {
	int fd;
	uint64_t size;
	atomic_ullong next; /* relaxed: hands out chunk indexes, nothing else is published */
	int err;
};

#define PREP_CHUNK ((size_t)8 << 20)

static void *prep_main(void *arg)
{
	struct prep *p = arg;
	void *buf = malloc(PREP_CHUNK);
	if (!buf) {
		p->err = ENOMEM;
		return NULL;
	}
	for (;;) {
		uint64_t off = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed) * PREP_CHUNK;
		if (off >= p->size)
			break;
		size_t n = p->size - off < PREP_CHUNK ? (size_t)(p->size - off) : PREP_CHUNK;
		pattern_fill(buf, off, n);
		int e = full_pwrite(p->fd, buf, n, off);
		if (e) {
			p->err = -e;
			break;
		}
	}
	free(buf);
	return NULL;
}

/* Make sure `path` exists with at least `need` bytes; a file that is missing
 * or too short is (re)written with the pattern, in parallel, before timing. */
int prepare_file(const char *path, uint64_t need)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= need)
		return 0;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return 0; /* a block device: use as is */
	double t0 = now();
	struct prep p = {.fd = open(path, O_WRONLY | O_CREAT, 0644), .size = need};
	if (p.fd < 0) {
		fprintf(stderr, "gdsio: create %s: %s\n", path, strerror(errno));
		return -1;
	}
	pthread_t th[8];
	int n = 0;
	for (; n < 8; n++)
		if (pthread_create(&th[n], NULL, prep_main, &p))
			break;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (!n)
		prep_main(&p);
	close(p.fd);
	if (p.err) {
		fprintf(stderr, "gdsio: writing %s: %s\n", path, strerror(p.err));
		return -1;
	}
	printf("# created %s: %llu bytes with the pattern in %.2f s\n", path, (unsigned long long)need,
	       now() - t0);
	return 0;
}

/* -Y: write the file [0, -o + -s) anew with the pattern through the library
 * (a buffered handle, cuFileWrite of 16 MiB pieces from a buffer of the -m
 * kind, not registered), then wait -Y seconds: the timed reads that follow
 * read a file this process finished writing that long before, its pages
 * still in the page cache.  The old file is removed rather than truncated:
 * ext4 starts writing back at close a file that was truncated to nothing
 * and written again, which a new file is spared.  0, or -1 after a
 * message. */
int write_fresh(void)
{
	const size_t chunk = (size_t)16 << 20;
	uint64_t total = o.offset + o.size;
	struct run run;
	struct worker w;
	char why[512], eb[160];
	int rc = -1;
	memset(&run, 0, sizeof(run));
	memset(&w, 0, sizeof(w));
	w.run = &run, w.fd = -1;
	double t0 = now();
	if (unlink(o.file) && errno != ENOENT) {
		fprintf(stderr, "gdsio: -Y: removing %s: %s\n", o.file, strerror(errno));
		return -1;
	}
	w.fd = open(o.file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (w.fd < 0) {
		fprintf(stderr, "gdsio: -Y: open %s: %s\n", o.file, strerror(errno));
		return -1;
	}
	CUfileError_t e = register_fd(w.fd, &w.fh);
	if (e.err) {
		fprintf(stderr, "gdsio: -Y: cuFileHandleRegister(%s): %s\n", o.file,
			cufile_err(e, eb, sizeof(eb)));
		close(w.fd);
		return -1;
	}
	if (buffer_alloc(&w.buf, effective_mem(), chunk, o.gpu, why, sizeof(why))) {
		fprintf(stderr, "gdsio: -Y: %s\n", why);
		goto out;
	}
	w.vhost_len = chunk;
	if (!(w.vhost = scratch_alloc(chunk, &w.vhost_pinned))) {
		fprintf(stderr, "gdsio: -Y: out of memory\n");
		goto out;
	}
	for (uint64_t off = 0; off < total; off += chunk) {
		size_t n = total - off < chunk ? (size_t)(total - off) : chunk;
		if (fill_buffer(&w, 0, off, n))
			goto failed;
		ssize_t got = cuFileWrite(w.fh, w.buf.ptr, n, (off_t)off, 0);
		if (got != (ssize_t)n) {
			fprintf(stderr, "gdsio: -Y: cuFileWrite of %zu at %llu returned %s\n", n,
				(unsigned long long)off, io_ret_str(got, errno, eb, sizeof(eb)));
			goto out;
		}
	}
	printf(
	    "# -Y: wrote %s (%llu bytes) through cuFileWrite in %.2f s; the timed reads begin %.1f s after\n",
	    o.file, (unsigned long long)total, now() - t0, o.fresh_wait);
	fflush(stdout);
	rc = 0;
	goto out;
failed:
	fprintf(stderr, "gdsio: -Y: %s\n", w.msg);
out:
	scratch_free(w.vhost, w.vhost_pinned);
	buffer_free(&w.buf);
	cuFileHandleDeregister(w.fh);
	close(w.fd);
	if (!rc) {
		struct timespec ts = {(time_t)o.fresh_wait,
				      (long)((o.fresh_wait - (double)(time_t)o.fresh_wait) * 1e9)};
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return rc;
}
