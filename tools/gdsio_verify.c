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
#include <unistd.h>

#include "gdsio.h"
#include "pattern.h"

/* Put the pattern for file offset `off` into len bytes of the worker's
 * buffer at byte `at` (through the scratch when the buffer is on the GPU). */
int fill_buffer(struct worker *w, size_t at, uint64_t off, size_t len)
{
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
		long long bad = pattern_check(p, off + c, m);
		if (bad >= 0) {
			uint64_t fo = off + c + (uint64_t)bad;
			worker_fail(
			    w, ST_VERIFY,
			    "verify: first bad byte at file offset %llu (read of %zu at %llu): got 0x%02x, "
			    "want 0x%02x",
			    (unsigned long long)fo, len, (unsigned long long)off, ((const uint8_t *)p)[bad],
			    pattern_byte(fo));
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
		long long bad = pattern_check(w->vhost, off + c, m);
		if (bad >= 0) {
			uint64_t fo = off + c + (uint64_t)bad;
			worker_fail(
			    w, ST_VERIFY,
			    "verify: written data wrong, first bad byte at file offset %llu: got 0x%02x, "
			    "want 0x%02x",
			    (unsigned long long)fo, ((const uint8_t *)w->vhost)[bad], pattern_byte(fo));
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
