/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fileio.c - POSIX file I/O for a registered handle.
 *
 * DESIGN: O_DIRECT descriptors accept only aligned offsets, lengths and
 * memory.  Reads are widened to the aligned range that covers the request
 * and land in an aligned staging slot; the extra bytes are never copied to
 * the caller.  Writes split into an unaligned head, an aligned body and an
 * unaligned tail: the body is written with O_DIRECT, head and tail through a
 * second, buffered descriptor of the same file (opened at registration), so
 * no read-modify-write is needed and concurrent writers of neighbouring bytes
 * cannot lose each other's data.  Where no such descriptor could be opened,
 * O_DIRECT is cleared on the caller's descriptor while unaligned pieces are
 * written (a counter keeps it cleared while any such write runs); I/O that
 * other threads issue meanwhile is then buffered, which is still correct.
 * The kernel keeps buffered and direct I/O of one file coherent (direct I/O
 * writes back and invalidates the cached pages it covers).
 */
#define _GNU_SOURCE
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "log.h"

/* pread until n bytes, end of file, or an error.  Returns bytes read, or
 * -errno if the first call failed. */
static ssize_t pread_full(int fd, char *buf, size_t n, off_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = fault_pread(fd, buf + done, n - done, off + (off_t)done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

static ssize_t pwrite_full(int fd, const char *buf, size_t n, off_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = fault_pwrite(fd, buf + done, n - done, off + (off_t)done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -errno;
		}
		if (r == 0)
			return done ? (ssize_t)done : -EIO;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* The caller's userspace file system: loop like pread/pwrite. */
static ssize_t fs_io(struct ocf_handle *h, char *buf, size_t n, off_t off, int write)
{
	size_t done = 0;
	while (done < n) {
		errno = 0;
		ssize_t r = write ? h->fs_ops->write(h->fs_handle, buf + done, n - done, off + (off_t)done, NULL)
				  : h->fs_ops->read(h->fs_handle, buf + done, n - done, off + (off_t)done, NULL);
		if (r < 0) {
			int e = errno ? errno : EIO;
			return done ? (ssize_t)done : -e;
		}
		if (r == 0 || (size_t)r > n - done) {
			if ((size_t)r > n - done)
				log_error("userspace fs %s returned %zd for %zu bytes", write ? "write" : "read", r,
					  n - done);
			if (r == 0 && write)
				return done ? (ssize_t)done : -EIO;
			break;
		}
		done += (size_t)r;
	}
	return (ssize_t)done;
}

size_t fio_stage_skew(const struct ocf_handle *h, off_t off)
{
	return h->odirect ? (size_t)off % h->align : 0;
}

int fio_direct_compatible(const struct ocf_handle *h, const void *p, off_t off)
{
	return !h->odirect || (uintptr_t)p % h->align == (uintptr_t)off % h->align;
}

ssize_t fio_read_staged(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n)
{
	if (h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS)
		return fs_io(h, slot->buf, n, off, 0);
	if (!h->odirect)
		return pread_full(h->fd, slot->buf, n, off);
	/* Unsigned: off + n <= LLONG_MAX, but rounding it up may not fit in
	 * an off_t (the kernel refuses such offsets anyway). */
	uint64_t A = h->align;
	off_t a = OCF_ALIGN_DOWN(off, (off_t)A);
	uint64_t e = OCF_ALIGN_UP((uint64_t)off + n, A);
	ssize_t got = pread_full(h->fd, slot->buf, (size_t)(e - (uint64_t)a), a);
	if (got < 0)
		return got;
	size_t skew = (size_t)(off - a);
	if ((size_t)got <= skew)
		return 0;
	return (ssize_t)OCF_MIN((size_t)got - skew, n);
}

/* Through the aligned scratch, one chunk at a time: only the requested
 * bytes are copied to dst. */
static ssize_t read_via_scratch(struct ocf_handle *h, char *dst, size_t n, off_t off, struct ocf_slot *scratch)
{
	size_t done = 0;
	while (done < n) {
		size_t k = OCF_MIN(n - done, scratch->chunk);
		ssize_t got = fio_read_staged(h, scratch, off + (off_t)done, k);
		if (got < 0)
			return done ? (ssize_t)done : got;
		memcpy(dst + done, scratch->buf + fio_stage_skew(h, off + (off_t)done), (size_t)got);
		done += (size_t)got;
		if ((size_t)got < k)
			break;
	}
	return (ssize_t)done;
}

/* Size of the file or block device, or -errno. */
static off_t file_size(int fd)
{
	struct stat st;
	if (fault_fstat(fd, &st) != 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes = 0;
		if (ioctl(fd, BLKGETSIZE64, &bytes) != 0)
			return -errno;
		return (off_t)bytes;
	}
	return st.st_size;
}

ssize_t fio_read(struct ocf_handle *h, char *dst, size_t n, off_t off, struct ocf_slot *scratch)
{
	if (h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS)
		return fs_io(h, dst, n, off, 0);
	if (!h->odirect)
		return pread_full(h->fd, dst, n, off);
	if (!fio_direct_compatible(h, dst, off))
		return read_via_scratch(h, dst, n, off, scratch);

	/* Memory aligned like the file: the aligned body goes straight into
	 * dst, head and tail through the scratch.  The body stops at the last
	 * whole block before end of file, because a direct read of the block
	 * that holds end of file may store past the bytes it reports. */
	size_t A = h->align;
	size_t head = OCF_MIN((A - (size_t)off % A) % A, n);
	size_t body = OCF_ALIGN_DOWN(n - head, A);
	if (body) {
		off_t size = file_size(h->fd);
		off_t body_off = off + (off_t)head;
		off_t avail = size > body_off ? OCF_ALIGN_DOWN(size - body_off, (off_t)A) : 0;
		if (size < 0 || (off_t)body > avail)
			body = size < 0 ? 0 : (size_t)avail;
	}
	size_t piece[3] = {head, body, n - head - body};
	size_t done = 0;
	for (int i = 0; i < 3; i++) {
		if (!piece[i])
			continue;
		ssize_t r = i == 1 ? pread_full(h->fd, dst + done, piece[i], off + (off_t)done)
				   : read_via_scratch(h, dst + done, piece[i], off + (off_t)done, scratch);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
		if ((size_t)r < piece[i])
			break;
	}
	return (ssize_t)done;
}

/* Writes an unaligned piece of an O_DIRECT file. */
static ssize_t write_unaligned(struct ocf_handle *h, const char *src, size_t n, off_t off)
{
	if (h->fd_buffered >= 0)
		return pwrite_full(h->fd_buffered, src, n, off);
	pthread_mutex_lock(&h->toggle_lock);
	if (h->toggle_count++ == 0 && fault_fcntl(h->fd, F_SETFL, h->open_flags & ~O_DIRECT) != 0) {
		int e = errno;
		h->toggle_count--;
		pthread_mutex_unlock(&h->toggle_lock);
		return -e;
	}
	pthread_mutex_unlock(&h->toggle_lock);
	ssize_t r = pwrite_full(h->fd, src, n, off);
	pthread_mutex_lock(&h->toggle_lock);
	if (--h->toggle_count == 0 && fault_fcntl(h->fd, F_SETFL, h->open_flags) != 0)
		log_error("could not restore O_DIRECT on fd %d: %s", h->fd, strerror(errno));
	pthread_mutex_unlock(&h->toggle_lock);
	return r;
}

ssize_t fio_write(struct ocf_handle *h, const char *src, size_t n, off_t off)
{
	if (h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS)
		return fs_io(h, (char *)src, n, off, 1);
	if (!h->odirect)
		return pwrite_full(h->fd, src, n, off);

	off_t A = (off_t)h->align;
	off_t end = off + (off_t)n; /* <= LLONG_MAX: checked by the caller */
	off_t head = (A - off % A) % A;
	if (head >= (off_t)n) /* no aligned block inside: one piece */
		return write_unaligned(h, src, n, off);
	off_t body_start = off + head; /* <= end: cannot overflow */
	off_t body_end = OCF_ALIGN_DOWN(end, A);
	if (body_start >= body_end)
		return write_unaligned(h, src, n, off);
	/* [cut[i], cut[i+1]) in file order: head, body, tail. */
	off_t cut[4] = {off, body_start, body_end, end};
	size_t done = 0;
	for (int i = 0; i < 3; i++) {
		size_t len = (size_t)(cut[i + 1] - cut[i]);
		if (len == 0)
			continue;
		const char *p = src + (cut[i] - off);
		ssize_t r = i == 1 ? pwrite_full(h->fd, p, len, cut[i]) : write_unaligned(h, p, len, cut[i]);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
		if ((size_t)r < len)
			break;
	}
	return (ssize_t)done;
}
