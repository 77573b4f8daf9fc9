/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fileio.c - file I/O for a registered handle.
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
 *
 * Buffered descriptors whose file system supports O_DIRECT get an O_DIRECT
 * twin at registration, and reads of at least PROBE_MIN bytes are
 * page-cache aware: what the page cache holds from the start of the range
 * is copied with preadv2(RWF_NOWAIT), which never waits for the disk; the
 * rest is read with O_DIRECT (through io_uring when the engine has a ring),
 * so a cold read streams from the disk at queue depth instead of through
 * readahead and a second copy.  The cached prefix is measured with
 * cachestat(2) first, because on current kernels an RWF_NOWAIT read that
 * finds a page missing starts readahead of the range before it returns
 * EAGAIN: the disk would read those bytes twice.  For the same reason a
 * page cachestat counts is never left to the direct read: where the
 * no-wait copy gives up on one (locked while another reader's readahead
 * fills it or compaction moves it, or evicted and being read in again),
 * the cached run from there is read with a blocking buffered pread, which
 * waits for it.  Without cachestat (before Linux 6.5) RWF_NOWAIT alone
 * decides, and without RWF_NOWAIT (EOPNOTSUPP) the read is plain pread.
 *
 * Coherence of the direct part: pages that are cached (dirty ones
 * included) are served from the page cache, never read from the disk
 * behind them.  The direct read covers pages that were not cached when
 * measured; if a buffered write dirties one of them in between, the
 * kernel's direct read path writes that range back before reading it
 * (filemap_write_and_wait_range in the iomap and generic direct I/O code),
 * so the read returns the new bytes, as a buffered read racing with that
 * write could.
 */
#define _GNU_SOURCE
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cpu_features.h"
#include "fault.h"
#include "filemap.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "planner.h"
#include "uring.h"

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

#define NO_LIMIT ((off_t)INT64_MAX)

/* The offset at which RLIMIT_FSIZE stops writes (NO_LIMIT: none).  A write
 * that starts there fails with EFBIG and raises SIGXFSZ; one that crosses
 * it is cut short there, with no signal. */
static off_t fsize_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)NO_LIMIT)
		return NO_LIMIT;
	return (off_t)rl.rlim_cur;
}

/* pwrite until n bytes or an error.  Returns bytes written, or -errno if
 * the first call failed.  After a short write it goes on as one pwrite
 * would have (a call of more than 2 GiB is cut short by the kernel), but
 * not from RLIMIT_FSIZE: there a pwrite of the whole range would have
 * returned what was written, where another call raises SIGXFSZ. */
static ssize_t pwrite_full(int fd, const char *buf, size_t n, off_t off)
{
	size_t done = 0;
	while (done < n) {
		if (done && off + (off_t)done >= fsize_limit())
			break;
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

size_t fio_stage_skew(const struct ocf_handle *h, off_t off) { return (size_t)off % h->align; }

size_t fio_align(const struct ocf_handle *h) { return h->align; }

bool fio_reads_direct(const struct ocf_handle *h)
{
	return h->odirect || h->fd_direct >= 0;
}

int fio_direct_compatible(const struct ocf_handle *h, const void *p, off_t off)
{
	return !h->odirect || (uintptr_t)p % h->align == (uintptr_t)off % h->align;
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

/* --------------------------------------------------- page-cache probing */

/* Does nothing of the file lie at or after `at`?  Asked through an
 * O_DIRECT handle when the cached part of a read ends before the read
 * does: a direct read from there would read the block that holds end of
 * file from the disk only to find nothing after the cached bytes. */
static bool past_eof(int fd, off_t at)
{
	off_t size = file_size(fd);
	return size >= 0 && at >= size;
}

/* Reads below this size on a buffered descriptor are one pread: the probe
 * costs a system call or two, which matters for a 4 KiB read, and small
 * sequential reads are served well by buffered readahead. */
#define PROBE_MIN ((size_t)64 * 1024)

/* The descriptor whose cached pages reads copy (-1: none), and the
 * smallest read that looks.  A buffered handle's own descriptor, with its
 * O_DIRECT twin for the rest; an O_DIRECT handle's buffered twin, where
 * handle.c allowed it (cache_reads), with the handle's descriptor for the
 * rest.  Through an O_DIRECT handle every read looks: one cachestat costs
 * far less than the disk read it can spare. */
static int cache_fd(const struct ocf_handle *h)
{
	if (h->odirect)
		return h->cache_reads ? h->fd_buffered : -1;
	return h->fd_direct >= 0 ? h->fd : -1;
}

static size_t probe_min(const struct ocf_handle *h) { return h->odirect ? 1 : PROBE_MIN; }

bool fio_own_files(const struct ocf_handle *h, size_t n, bool write, bool device)
{
	if (h->type != CU_FILE_HANDLE_TYPE_OPAQUE_FD)
		return false;
	if (h->odirect)
		return h->fd_buffered >= 0;
	return !write && device && n >= PROBE_MIN;
}

/* cachestat(2), Linux 6.5; the C library may not wrap it yet. */
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
struct ocf_cachestat_range {
	uint64_t off, len;
};
struct ocf_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* What this kernel lacks, learnt at the first refusal.  Relaxed: a thread
 * that misses the store makes one more refused call. */
static bool no_cachestat, no_nowait;

static size_t page_size(void)
{
	static size_t ps; /* relaxed: every thread stores the same value */
	size_t v = __atomic_load_n(&ps, __ATOMIC_RELAXED);
	if (!v) {
		long r = sysconf(_SC_PAGESIZE);
		v = r > 0 ? (size_t)r : 4096;
		__atomic_store_n(&ps, v, __ATOMIC_RELAXED);
	}
	return v;
}

/* Pages cached among `pages` pages from page `first`, or -errno. */
static long cached_pages(int fd, uint64_t first, uint64_t pages)
{
	struct ocf_cachestat_range range = {first * page_size(), pages * page_size()};
	struct ocf_cachestat cs;
	int fe = fault_errno(OCF_FAULT_CACHESTAT);
	if (fe)
		return -fe;
	if (syscall(SYS_cachestat, fd, &range, &cs, 0) != 0)
		return -errno;
	return (long)cs.nr_cache;
}

int fio_range_dirty(int fd, off_t off, size_t len)
{
	if (__atomic_load_n(&no_cachestat, __ATOMIC_RELAXED) || len == 0)
		return __atomic_load_n(&no_cachestat, __ATOMIC_RELAXED) ? -1 : 0;
	struct ocf_cachestat_range range = {(uint64_t)off, len};
	struct ocf_cachestat cs;
	int fe = fault_errno(OCF_FAULT_CACHESTAT);
	if (fe == 0 && syscall(SYS_cachestat, fd, &range, &cs, 0) == 0)
		return cs.nr_dirty > 0;
	int e = fe ? fe : errno;
	if (e != ENOSYS && e != EOPNOTSUPP && e != EPERM) /* EPERM: a seccomp filter */
		return 1;					  /* a failure: nothing told clean */
	__atomic_store_n(&no_cachestat, true, __ATOMIC_RELAXED);
	return -1;
}

/* Length of the longest prefix of [off, off+n) the page cache holds (a
 * whole number of pages, at most n), or `unknown` when it cannot be told:
 * n for a buffered handle (RWF_NOWAIT, or pread, then decides), 0 for an
 * O_DIRECT one (its read stays direct, as without this probing). */
static size_t cached_prefix_len_known(int fd, off_t off, size_t n, size_t unknown, bool *known)
{
	*known = false;
	if (__atomic_load_n(&no_cachestat, __ATOMIC_RELAXED))
		return unknown;
	size_t ps = page_size();
	uint64_t first = (uint64_t)off / ps, last = ((uint64_t)off + n - 1) / ps;
	uint64_t pages = last - first + 1;
	long c = cached_pages(fd, first, pages);
	if (c < 0) {
		if (c == -ENOSYS || c == -EOPNOTSUPP || c == -EPERM) /* EPERM: a seccomp filter */
			__atomic_store_n(&no_cachestat, true, __ATOMIC_RELAXED);
		return unknown;
	}
	*known = true;
	if ((uint64_t)c >= pages)
		return n;
	if (c == 0)
		return 0;
	/* Partly cached: find the cached prefix (about log2(pages) calls). */
	uint64_t lo = 0, hi = pages; /* the first lo pages are cached, the first hi are not all */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		c = cached_pages(fd, first, mid);
		if (c < 0)
			break;
		if ((uint64_t)c >= mid)
			lo = mid;
		else
			hi = mid;
	}
	uint64_t end = (first + lo) * ps;
	return end > (uint64_t)off ? (size_t)OCF_MIN(end - (uint64_t)off, (uint64_t)n) : 0;
}

static size_t cached_prefix_len(int fd, off_t off, size_t n, size_t unknown)
{
	bool known;
	return cached_prefix_len_known(fd, off, n, unknown, &known);
}

/* After RWF_NOWAIT stopped at `at`, before the end of what cachestat
 * counted: the pages cachestat still counts from there, read with a plain
 * buffered pread into dst.  Such a page is locked (being read in by another
 * reader's readahead, or moved by compaction) or was evicted meanwhile and
 * is being read in by the readahead the no-wait read itself started; pread
 * waits for it, where a direct read would read it from the disk again.
 * Returns the bytes read (0: nothing counted) or -errno. */
static ssize_t read_cached_run(int fd, char *dst, off_t at, size_t rest)
{
	size_t more = cached_prefix_len(fd, at, rest, 0);
	return more ? pread_full(fd, dst, more, at) : 0;
}

/* Copies the part of [off, off+n) that the page cache holds from its start
 * into dst; `want` is what cached_prefix_len found.  Returns the bytes
 * copied (short also at end of file; it may exceed want when more pages
 * became cached meanwhile) or -errno.  Cached pages are never left to the
 * direct read: RWF_NOWAIT copies them without waiting, and where it gives
 * up on one that cachestat counts, read_cached_run waits for it.  When the
 * kernel can tell nothing (no cachestat, no RWF_NOWAIT) the whole range is
 * read with pread. */
static ssize_t read_cached_prefix(int fd, char *dst, off_t off, size_t want, size_t n)
{
	if (want == 0)
		return 0;
	while (!__atomic_load_n(&no_nowait, __ATOMIC_RELAXED)) {
		ssize_t r = fault_preadv2(fd, dst, want, off, RWF_NOWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != EAGAIN) {
			if (errno != EOPNOTSUPP && errno != EINVAL)
				return -errno;
			__atomic_store_n(&no_nowait, true, __ATOMIC_RELAXED);
			log_info("preadv2(RWF_NOWAIT) refused (%s): page-cache probing by cachestat only",
				 strerror(errno));
			break;
		}
		/* Done; or stopped inside a page or with nothing read (end
		 * of file), not at a page it would have to wait for. */
		size_t got = r < 0 ? 0 : (size_t)r;
		if (got == want || (r >= 0 && (got == 0 || (uint64_t)(off + r) % page_size())))
			return (ssize_t)got;
		ssize_t more = read_cached_run(fd, dst + got, off + (off_t)got, n - got);
		if (more < 0)
			return got ? (ssize_t)got : more;
		return (ssize_t)(got + (size_t)more);
	}
	/* No RWF_NOWAIT: pread what cachestat found cached (everything on a
	 * buffered handle when nothing is known: want is n then). */
	return pread_full(fd, dst, want, off);
}

/* ------------------------------------------------------------ transfers */

static ssize_t op_run_from(const struct fio_op *op, size_t done)
{
	return op->write ? pwrite_full(op->fd, op->buf + done, op->len - done, op->off + (off_t)done)
			 : pread_full(op->fd, op->buf + done, op->len - done, op->off + (off_t)done);
}

ssize_t fio_op_run(const struct fio_op *op) { return op->len ? op_run_from(op, 0) : 0; }

bool fio_op_wants_ring(const struct fio_op *op)
{
	enum ocf_io_backend b = uring_backend();
	return op->len && (b == OCF_IO_URING || (b == OCF_IO_AUTO && op->direct));
}

/* A transfer that io_uring returned short or refused with EAGAIN is
 * completed with pread/pwrite.  A direct transfer that stopped inside a
 * block stopped at end of file. */
static ssize_t op_complete(const struct fio_op *op, ssize_t res)
{
	if (res == -EAGAIN) {
		log_debug("io_uring %s of %zu bytes at %lld: EAGAIN, done with %s", op->write ? "write" : "read",
			  op->len, (long long)op->off, op->write ? "pwrite" : "pread");
		return fio_op_run(op);
	}
	if (res <= 0 || (size_t)res >= op->len || (op->direct && (size_t)res % op->align))
		return res;
	log_debug("io_uring %s of %zu bytes at %lld came back short (%zd): the rest with %s",
		  op->write ? "write" : "read", op->len, (long long)op->off, res, op->write ? "pwrite" : "pread");
	ssize_t more = op_run_from(op, (size_t)res);
	return more > 0 ? res + more : res;
}

/* The transfer through the ring, waited for: bytes or -errno.  A ring
 * that fails to submit or wait is reported as EIO (nothing is counted). */
static ssize_t op_run_ring(const struct fio_op *op, struct ocf_ring *ring)
{
	if (!ring || !fio_op_wants_ring(op))
		return fio_op_run(op);
	int q = uring_queue(ring, op->write, op->fd, op->buf, op->len, op->off, 0);
	if (q != 0) {
		log_debug("io_uring %s of %zu bytes not queued (%s): %s", op->write ? "write" : "read", op->len,
			  strerror(-q), op->write ? "pwrite" : "pread");
		return fio_op_run(op);
	}
	uint64_t tag;
	ssize_t res;
	if (uring_reap(ring, &tag, &res) != 0)
		return -EIO;
	return op_complete(op, res);
}

/* ---------------------------------------------------------------- reads */

/* fio_stage_read; `part` (a piece of a larger request): the page cache is
 * probed whatever n is, as it would be for the request. */
static int stage_read(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n, struct fio_op *op,
		      bool part)
{
	char *dst = slot->buf + fio_stage_skew(h, off);
	*op = (struct fio_op){.fd = h->fd, .align = h->align, .buf = dst, .len = n, .off = off, .req_off = off,
			      .req_n = n};
	fmap_streamed_forget(); /* until fmap_copy streams this read's bytes */
	if (h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS) {
		ssize_t r = fs_io(h, dst, n, off, 0);
		if (r < 0)
			return (int)r;
		op->prefix = (size_t)r;
		op->len = 0;
		return 0;
	}
	int dfd = h->odirect ? h->fd : -1;
	off_t from = off;
	int cfd = cache_fd(h);
	if (cfd >= 0 && (part || n >= probe_min(h))) {
		bool known;
		size_t want = cached_prefix_len_known(cfd, off, n, h->odirect ? 0 : n, &known);
		/* With every transfer on the ring (backend uring), a range the
		 * page cache holds whole is one buffered ring transfer. */
		if (want == n && uring_backend() == OCF_IO_URING) {
			op->fd = cfd;
			return 0;
		}
		if (uring_backend() == OCF_IO_URING)
			log_debug("staged read of %zu bytes at %lld: %zu cached, copied first", n, (long long)off, want);
		/* What cachestat counted, through the file's mapping when the
		 * handle has one (filemap.c: the DMA then reads memory no CPU
		 * cache holds); else, or where the mapping cannot serve it,
		 * with preadv2. */
		ssize_t p = !known || !want || !h->fmap ? -1
			    : h->odirect	   ? fmap_copy_direct(h->fmap, dst, off, want)
						   : fmap_copy(h->fmap, dst, off, want);
		if (p < 0)
			p = read_cached_prefix(cfd, dst, off, want, n);
		if (p < 0)
			return (int)p;
		op->prefix = (size_t)p;
		if ((size_t)p == n || (h->odirect && past_eof(cfd, off + p))) {
			op->len = 0;
			return 0;
		}
		dfd = h->odirect ? h->fd : h->fd_direct;
		from = off + p;
	}
	if (dfd < 0)
		return 0; /* buffered: the whole range as it is */
	/* Direct: the aligned range covering [from, off+n), placed so that
	 * the slot agrees with the file modulo the alignment. */
	/* Unsigned: off + n <= LLONG_MAX, but rounding it up may not fit in
	 * an off_t (the kernel refuses such offsets anyway). */
	uint64_t A = h->align;
	off_t a = OCF_ALIGN_DOWN(from, (off_t)A);
	uint64_t e = OCF_ALIGN_UP((uint64_t)off + n, A);
	op->fd = dfd;
	op->direct = true;
	op->buf = dst - (off - a);
	op->off = a;
	op->len = (size_t)(e - (uint64_t)a);
	return 0;
}

void fio_bulk_reads(bool on) { fmap_bulk(on); }

ssize_t fio_stage_read_done(const struct fio_op *op, ssize_t res)
{
	if (op->len == 0)
		return (ssize_t)op->prefix;
	res = op_complete(op, res);
	if (res < 0)
		return op->prefix ? (ssize_t)op->prefix : res;
	/* Valid: [req_off, req_off + prefix) and [op->off, op->off + res),
	 * which starts at or before the end of the first. */
	off_t end = OCF_MAX(op->off + (off_t)res, op->req_off + (off_t)op->prefix);
	if (end <= op->req_off)
		return 0;
	return (ssize_t)OCF_MIN((size_t)(end - op->req_off), op->req_n);
}

int fio_stage_read(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n, struct fio_op *op)
{
	return stage_read(h, slot, off, n, op, false);
}

ssize_t fio_read_staged(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n)
{
	struct fio_op op;
	int r = stage_read(h, slot, off, n, &op, false);
	if (r < 0)
		return r;
	return fio_stage_read_done(&op, fio_op_run(&op));
}

ssize_t fio_read_staged_part(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n)
{
	struct fio_op op;
	int r = stage_read(h, slot, off, n, &op, true);
	if (r < 0)
		return r;
	return fio_stage_read_done(&op, fio_op_run(&op));
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

/* Reads [off, off+n) into dst, which is aligned like the file: the whole
 * blocks go straight into dst through the O_DIRECT descriptor dfd, the
 * unaligned head and tail through the scratch (an O_DIRECT handle) or the
 * buffered descriptor.  The body stops at the last whole block before end
 * of file, because a direct read of the block that holds end of file may
 * store past the bytes it reports. */
static ssize_t read_in_place(struct ocf_handle *h, int dfd, char *dst, size_t n, off_t off, struct ocf_slot *scratch)
{
	size_t A = h->align;
	size_t head = OCF_MIN((A - (size_t)off % A) % A, n);
	size_t body = OCF_ALIGN_DOWN(n - head, A);
	if (body) {
		off_t size = file_size(dfd);
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
		char *p = dst + done;
		off_t at = off + (off_t)done;
		ssize_t r = i == 1 ? pread_full(dfd, p, piece[i], at)
			    : h->odirect ? read_via_scratch(h, p, piece[i], at, scratch)
					 : pread_full(h->fd, p, piece[i], at);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
		if ((size_t)r < piece[i])
			break;
	}
	return (ssize_t)done;
}

ssize_t fio_read(struct ocf_handle *h, char *dst, size_t n, off_t off, struct ocf_slot *scratch)
{
	if (h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS)
		return fs_io(h, dst, n, off, 0);
	int cfd = cache_fd(h);
	if (!h->odirect && (cfd < 0 || n < probe_min(h)))
		return pread_full(h->fd, dst, n, off);
	/* The cached prefix by copy (a buffered handle, or an O_DIRECT one
	 * allowed to), the rest from the disk: in place where dst is aligned
	 * like the file; else through the scratch (O_DIRECT handle) or with
	 * pread (buffered). */
	ssize_t p = 0;
	if (cfd >= 0 && n >= probe_min(h)) {
		p = read_cached_prefix(cfd, dst, off, cached_prefix_len(cfd, off, n, h->odirect ? 0 : n), n);
		if (p < 0 || (size_t)p == n || (h->odirect && past_eof(cfd, off + p)))
			return p;
	}
	char *d = dst + p;
	off_t at = off + p;
	size_t rest = n - (size_t)p;
	bool in_place = (uintptr_t)d % h->align == (size_t)at % h->align;
	ssize_t r;
	if (h->odirect) {
		r = in_place ? read_in_place(h, h->fd, d, rest, at, scratch) : read_via_scratch(h, d, rest, at, scratch);
	} else {
		/* The twin reads the file registered: only while the number
		 * still names it (handle.c); else the number, whatever it is. */
		if (in_place && handle_same_file(h) != 0)
			in_place = false;
		r = in_place ? read_in_place(h, h->fd_direct, d, rest, at, NULL) : pread_full(h->fd, d, rest, at);
	}
	if (r < 0)
		return p ? p : r;
	return p + r;
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

/* Does a write of the handle's descriptor go through `ring`?  A buffered
 * one only with the uring backend (fio_op_wants_ring). */
static bool write_on_ring(const struct ocf_handle *h, const struct ocf_ring *ring)
{
	struct fio_op op = {.fd = h->fd, .write = true, .direct = h->odirect, .align = h->align, .len = 1};
	return ring && fio_op_wants_ring(&op);
}

/* A write to fd, through the ring where it belongs there. */
static ssize_t write_piece(struct ocf_handle *h, struct ocf_ring *ring, const char *src, size_t n, off_t off)
{
	struct fio_op op = {.fd = h->fd, .write = true, .direct = h->odirect, .align = h->align,
			    .buf = (char *)src, .len = n, .off = off};
	return op_run_ring(&op, ring);
}

/* ------------------------------------------------ writes through the mapping */

/* Pieces of a buffered write below this size are one pwrite: the stores
 * save the file's write lock, which a small pwrite holds only briefly, at
 * the price of a few system calls that would cost more than they save. */
#define MAPPED_WRITE_MIN PLAN_STORE_MIN
_Static_assert(FMAP_FOLIO_MAX == PLAN_FOLIO_MAX, "the planner's folio is the mapping's");
_Static_assert(sizeof(((struct fio_wprep *)0)->tail) == PLAN_TAIL_MAX, "the held tail is the planner's");
#define NOT_MAPPED (-1000000) /* write_mapped: this piece goes to pwrite */

/* Does the page cache hold every page of [off, off+n)?  Unknown: no. */
static bool range_cached(int fd, off_t off, size_t n)
{
	bool known;
	return cached_prefix_len_known(fd, off, n, 0, &known) == n && known;
}

/* Does [off, end) of the file hold no data (a hole, or blocks reserved and
 * never written, which read as zeros)? */
static bool range_hole(int fd, off_t off, off_t end)
{
	off_t d = lseek(fd, off, SEEK_DATA);
	return d < 0 ? errno == ENXIO : d >= end;
}

/* Does [off, end) of the file hold a hole anywhere (blocks reserved and
 * never written count as one: the file system reports them so)?  Unknown:
 * yes. */
static bool range_has_hole(int fd, off_t off, off_t end)
{
	off_t hole = lseek(fd, off, SEEK_HOLE);
	return hole < 0 || hole < end;
}

/* The file's size, asked so that none of its times is: with multigrain
 * timestamps (Linux 6.13) a query of the times makes the next update of
 * them fine-grained, and every store's fault then dirties the inode (eight
 * writers of one file asking fstat for each piece spent 3 CPU s/GB in the
 * kernel, H200 machine).  0, or -1 (errno). */
static int size_of(int fd, off_t *size)
{
	int fe = fault_errno(OCF_FAULT_STATX);
	if (fe) {
		errno = fe;
		return -1;
	}
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, &sx) != 0)
		return -1;
	*size = (off_t)sx.stx_size;
	return 0;
}

/* Is a reservation (fallocate) of the handle's file a promise that writes
 * into the range need no block more?  Where the file system writes in place:
 * ext2/3/4 and tmpfs.  Not where it copies on write (btrfs; xfs where an
 * extent is shared with another file), nor where fallocate means less
 * (network and FUSE file systems). */
static bool reserves_in_place(const struct ocf_handle *h)
{
	return !strcmp(h->fs_type, "ext4") || !strcmp(h->fs_type, "ext3") || !strcmp(h->fs_type, "ext2") ||
	       !strcmp(h->fs_type, "tmpfs");
}

/* ---------------------------------------------- writes of this process */

/* Writes of this process in flight, per file (a hash of its device and
 * inode; files that share a slot only make the answer more cautious): the
 * number in flight (low 32 bits) and the number ever started (high 32
 * bits), in one word per slot and stripe.  A thread counts its writes in
 * a stripe of its own (chosen in turn at its first write), so that the
 * threads writing one file do not all step on one word; a write that may
 * have to undo what it did sums the stripes (wtrack_snapshot) before it
 * learns the file's size.  It undoes only where it was alone: no other
 * write of this process to the file was in flight when it began or began
 * after it (fio_write_end, reserve_range).  Another process's write, or
 * the program's own pwrite, is not seen here: docs/architecture.md
 * ("Writes that fail"). */
#define WTRACK_SLOTS 64
#define WTRACK_STRIPES 16
struct wtrack_word {
	_Atomic uint64_t v;
} __attribute__((aligned(64)));
static struct wtrack_word wtrack[WTRACK_SLOTS][WTRACK_STRIPES];
static _Atomic unsigned wtrack_turn;
static __thread int wtrack_stripe = -1; /* this thread's stripe */

static void wtrack_enter(const struct ocf_handle *h, struct fio_wtrack *t)
{
	uint64_t k = ((uint64_t)h->dev * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)h->ino * 0xC2B2AE3D27D4EB4Full);
	if (wtrack_stripe < 0)
		wtrack_stripe = (int)(atomic_fetch_add_explicit(&wtrack_turn, 1, memory_order_relaxed) % WTRACK_STRIPES);
	*t = (struct fio_wtrack){.slot = (int)((k >> 32) % WTRACK_SLOTS), .stripe = wtrack_stripe};
	atomic_fetch_add_explicit(&wtrack[t->slot][t->stripe].v, ((uint64_t)1 << 32) + 1, memory_order_acq_rel);
}

/* The slot's writes in flight and writes ever started, over its stripes. */
static void wtrack_sums(int slot, uint64_t *active, uint64_t *started)
{
	*active = *started = 0;
	for (int i = 0; i < WTRACK_STRIPES; i++) {
		uint64_t v = atomic_load_explicit(&wtrack[slot][i].v, memory_order_acquire);
		*active += (uint32_t)v;
		*started += v >> 32;
	}
}

/* Before a write that may have to undo learns anything of the file: who
 * else is writing it. */
static void wtrack_snapshot(struct fio_wtrack *t)
{
	uint64_t active, started;
	wtrack_sums(t->slot, &active, &started);
	t->first = active == 1;
	t->seq = started;
	t->counted = true;
}

/* Was the write alone on its file so far (see wtrack)?  Unknown: no. */
static bool wtrack_alone(const struct fio_wtrack *t)
{
	if (t->slot < 0 || !t->counted || !t->first)
		return false;
	uint64_t active, started;
	wtrack_sums(t->slot, &active, &started);
	return started == t->seq;
}

static void wtrack_exit(struct fio_wtrack *t)
{
	if (t->slot >= 0)
		atomic_fetch_sub_explicit(&wtrack[t->slot][t->stripe].v, 1, memory_order_acq_rel);
	t->slot = -1;
}

/* Does the file system still take writes?  A pwrite of nothing runs the
 * file system's own checks and changes nothing (no time, no size, no
 * signal): ext4 that has turned itself read-only after an error answers
 * EROFS - the mount table and statvfs(2) may not show it - where stores
 * through a mapping made before would still land in the page cache and
 * never reach the disk.  0, or -errno. */
static int takes_writes(int fd, off_t off)
{
	for (;;) {
		if (fault_pwrite(fd, "", 0, off) >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

/* After a reservation failed: the blocks it may have reserved past end of
 * file in [off, end) are given back (past end of file there is no data to
 * lose; a failed fallocate can leave some of its blocks reserved) - only
 * where the write was alone on the file (wtrack): another may have just
 * extended it. */
static void release_past_eof(int fd, off_t off, off_t end, const struct fio_wtrack *t)
{
	off_t size;
	if (!wtrack_alone(t) || size_of(fd, &size) != 0)
		return;
	off_t lo = OCF_MAX(off, size);
	if (lo < end)
		(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, lo, end - lo);
}

/* Reserves the blocks of [off, off+n) and makes the file at least off+n
 * long, as a pwrite there would: first the reservation, which changes no
 * size (so a full disk fails it with nothing to undo), then one byte of it
 * allocated the ordinary way, which extends the size and never shrinks it.
 * size: the file's size seen before.  The caller has made sure that the
 * range lies below RLIMIT_FSIZE.  0, or -1 (the piece goes to pwrite,
 * which reports the error as it would without us). */
static int reserve_range(struct ocf_handle *h, off_t off, size_t n, off_t size, const struct fio_wtrack *t)
{
	off_t end = off + (off_t)n;
	if (fault_fallocate(h->fd, FALLOC_FL_KEEP_SIZE, off, (off_t)n) != 0 ||
	    (end > size && fault_fallocate(h->fd, 0, end - 1, 1) != 0)) {
		int e = errno;
		release_past_eof(h->fd, off, end, t);
		log_debug("fd %d: %zu bytes at %lld not reserved (%s): written with pwrite", h->fd, n, (long long)off,
			  strerror(e));
		return -1;
	}
	return 0;
}

/* How [off, off+n) of the file, inside it (off+n <= size), may take
 * stores: READY (every page cached: no store's fault reads anything), HOLE
 * (no data: blocks to reserve first) or NO (bytes on the disk only: a
 * store's fault would read them first, which pwrite never does). */
static enum plan_inside inside_state(int fd, off_t off, size_t n)
{
	if (range_cached(fd, off, n))
		return PLAN_INSIDE_READY;
	return range_hole(fd, off, off + (off_t)n) ? PLAN_INSIDE_HOLE : PLAN_INSIDE_NO;
}

/* Makes [off, off+n) ready for stores through the mapping: inside the
 * file, its blocks reserved or its pages cached.  Nothing to do where the
 * request made its range ready (prep).  A piece of no request (prep NULL)
 * also asks whether the file system takes writes and stays below
 * RLIMIT_FSIZE, which a request asked once (fio_write_begin).  0, or -1:
 * pwrite, which reports what the file system says. */
static int mapped_ready(struct ocf_handle *h, off_t off, size_t n, const struct fio_wprep *prep,
			const struct fio_wtrack *t)
{
	off_t end = off + (off_t)n;
	if (prep && off >= prep->ready_lo && end <= prep->ready_hi)
		return 0;
	if (!prep && (end > fsize_limit() || takes_writes(h->fd, off) != 0))
		return -1;
	off_t size;
	if (size_of(h->fd, &size) != 0)
		return -1;
	off_t lo_end = OCF_MIN(end, size);
	enum plan_inside in = off < lo_end ? inside_state(h->fd, off, (size_t)(lo_end - off)) : PLAN_INSIDE_HOLE;
	if (in == PLAN_INSIDE_NO)
		return -1;
	/* Cached pages may lie over a hole (a hole that was read): blocks
	 * are reserved wherever the file has none. */
	if (in == PLAN_INSIDE_READY && end <= size && !range_has_hole(h->fd, off, end))
		return 0;
	return reserve_range(h, off, n, size, t);
}

/* Writes the piece [off, off+n) of the write that prep describes (the
 * whole request when prep is NULL) with stores through the handle's
 * writable mapping where it may, pwrite elsewhere.  Stores take no file
 * lock, so threads writing one file move in parallel (a buffered pwrite
 * holds the file's write lock, i_rwsem, for its whole copy: any number of
 * writers of one file move at about one thread's copy speed).
 *
 * Where: a store's fault dirties the whole folio it lands in, up to 2 MiB
 * (FMAP_FOLIO_MAX, the largest the page cache makes), and one into a page
 * not cached makes a folio that large.  So stores go only into 2 MiB
 * regions of the file that the request writes whole, and into the part of
 * its last region past the file's end (no folio is made past end of file);
 * anything else - the head before the first region boundary, a tail that
 * would dirty bytes the request does not write - goes with pwrite, so that
 * no byte outside the write is dirtied (a hole stays a hole, writeback
 * writes only what was written).
 *
 * A piece of no request (prep NULL: a batch's run) writes its last page
 * with pwrite after the stores; a request's last 4 KiB are written that
 * way once, after every piece (fio_write_end).  That call is what a writer
 * through pwrite would be seen by: it updates the file's times and raises
 * the inotify IN_MODIFY event after every byte is in place, so that a
 * read-ahead window of this library in any process, and any file watcher,
 * sees the write (a store raises no event, and updates the times only at
 * the first store to a clean page).  Returns the bytes written, an error
 * when none was, or NOT_MAPPED: the piece goes to pwrite whole, which
 * reports what happens. */
static ssize_t write_mapped(struct ocf_handle *h, const char *src, size_t n, off_t off,
			    const struct fio_wprep *prep, const struct fio_wtrack *t)
{
	if (!h->wmap || n < MAPPED_WRITE_MIN || (prep && !prep->stores))
		return NOT_MAPPED;
	const off_t R = (off_t)FMAP_FOLIO_MAX;
	off_t end = off + (off_t)n;
	off_t req_end = prep ? prep->req_end : end;
	/* What the request writes from here: past the piece, its last page
	 * when that waits for the end. */
	off_t wend = prep && prep->tail_len && end == prep->tail_off ? req_end : end;
	off_t s = OCF_ALIGN_UP(off, R), e = OCF_ALIGN_DOWN(wend, R);
	if (wend == req_end && e < wend && s < wend) {
		/* The request's last region: stores up to its end where the
		 * rest of the region lies past end of file. */
		off_t size;
		if (size_of(h->fd, &size) == 0 && size <= wend)
			e = wend;
	}
	e = OCF_MIN(e, end);
	/* The mapping is the file registered's: only while the number still
	 * names it (handle.c); else pwrite on the number. */
	if (e - s < (off_t)MAPPED_WRITE_MIN || handle_same_file(h) != 0 ||
	    mapped_ready(h, s, (size_t)(e - s), prep, t) != 0)
		return NOT_MAPPED;
	/* The head, then the stores, then the rest (with the last page where
	 * the piece signals itself). */
	if (s > off) {
		ssize_t w = pwrite_full(h->fd, src, (size_t)(s - off), off);
		if (w < (ssize_t)(s - off))
			return w;
	}
	off_t last = e;
	if (!prep)
		last = OCF_MIN(e, OCF_MAX(s, OCF_ALIGN_DOWN(end - 1, (off_t)page_size())));
	/* A fault (the file shrank under the stores, a block could not be
	 * reserved, a disk error): pwrite writes the stored part again. */
	off_t from = last;
	if (last > s && fmap_store(h->wmap, s, src + (s - off), (size_t)(last - s)) < 0)
		from = s;
	if (from == end)
		return (ssize_t)n;
	ssize_t w = pwrite_full(h->fd, src + (from - off), (size_t)(end - from), from);
	/* What is in the file before `from` counts: a failing pwrite of the
	 * rest makes the write short, as a pwrite that stops there would; with
	 * nothing written, the error. */
	if (w < 0)
		return from > off ? (ssize_t)(from - off) : w;
	return (ssize_t)(from - off) + w;
}

size_t fio_piece_align(const struct ocf_handle *h, bool write)
{
	return write && h->wmap ? FMAP_FOLIO_MAX : h->align;
}

/* The one place a write's plan reads live state (planner.c): the facts it
 * asks for, in its order, and no more. */
static void write_facts(const struct ocf_handle *h, off_t off, size_t n, bool split, struct fio_wtrack *t,
			struct plan_wfacts *f)
{
	*f = (struct plan_wfacts){.off = off,
				  .n = n,
				  .descriptor = h->type == CU_FILE_HANDLE_TYPE_OPAQUE_FD,
				  .wmap = h->wmap != NULL,
				  .odirect = h->odirect,
				  .split = split,
				  .limit = NO_LIMIT};
	for (enum plan_wneed need; (need = plan_write_needs(f)) != PLAN_WNEED_NONE;) {
		if (need == PLAN_WNEED_LIMITS) {
			/* A prepared write may have to undo: who else writes
			 * the file, before its size is asked. */
			wtrack_snapshot(t);
			f->limit = fsize_limit();
			f->in_place = reserves_in_place(h);
			f->limits_known = true;
			continue;
		}
		off_t in_end = OCF_MIN(off + (off_t)n, f->size);
		if (need == PLAN_WNEED_INSIDE) {
			f->inside = inside_state(h->fd, off, (size_t)(in_end - off));
			f->inside_known = true;
			continue;
		}
		off_t size;
		if (size_of(h->fd, &size) != 0)
			return; /* unknown: serial */
		f->size_known = true;
		f->size = size;
		in_end = OCF_MIN(off + (off_t)n, size);
		f->hole = off < in_end && range_has_hole(h->fd, off, in_end);
	}
}

int fio_write_begin(struct ocf_handle *h, off_t off, size_t n, bool split, struct fio_wprep *p)
{
	off_t end = off + (off_t)n;
	*p = (struct fio_wprep){.size = -1, .req_off = off, .req_end = end, .held_off = end, .limit = NO_LIMIT,
				.wt = {.slot = -1}};
	if (h->type != CU_FILE_HANDLE_TYPE_OPAQUE_FD)
		return 0;
	wtrack_enter(h, &p->wt);
	struct plan_wfacts f;
	struct plan_write w;
	write_facts(h, off, n, split, &p->wt, &f);
	plan_write(&f, &w);
	if (!w.prepared)
		return 0;
	p->serial = true;
	p->limit = w.limit;
	if (w.reserve || w.stores)
		p->size = f.size;
	/* What may still go otherwise (planner.c): the reservation fails -
	 * serial then; the file system refuses writes - the request fails
	 * before any piece. */
	if (w.reserve && reserve_range(h, w.reserve_lo, (size_t)(end - w.reserve_lo), f.size, &p->wt) != 0) {
		plan_write_reservation_failed(&w);
		return 0;
	}
	p->extended = w.reserve && end > f.size;
	if (w.ask_fs) {
		int e = takes_writes(h->fd, off);
		if (e) {
			wtrack_exit(&p->wt);
			return e;
		}
	}
	p->serial = w.serial;
	p->stores = w.stores;
	p->tail_off = w.tail_off;
	p->tail_len = w.tail_len;
	p->ready_lo = w.ready_lo;
	p->ready_hi = w.ready_hi;
	return 0;
}

ssize_t fio_write_end(struct ocf_handle *h, struct fio_wprep *p, off_t off, size_t n, ssize_t result)
{
	if (p->size >= 0) {
		/* Every piece written: the request's last bytes, now that every
		 * byte before them is in place. */
		if (p->held_off < p->req_end && result >= 0 && (size_t)result == n) {
			size_t held = (size_t)(p->req_end - p->held_off);
			ssize_t w = pwrite_full(h->fd, p->tail + (p->held_off - p->tail_off), held, p->held_off);
			if (w < (ssize_t)held)
				result = w > 0 ? (p->held_off - off) + w : p->held_off > off ? p->held_off - off : w;
		}
		/* A write that went wrong midway after it extended the file (a
		 * disk or device-memory error; nothing the file system refuses
		 * gets this far) leaves it no longer than the bytes it reports
		 * make it, and no shorter than it was - where it was alone on
		 * the file (wtrack): a write that was not may have written
		 * bytes in the range, and no call removes another's bytes.  Not
		 * when the file is longer than this write would make it:
		 * another writer extended it. */
		if (p->extended && (result < 0 || (size_t)result < n)) {
			off_t keep = OCF_MAX(p->size, off + (result > 0 ? (off_t)result : 0));
			off_t size;
			if (wtrack_alone(&p->wt) && size_of(h->fd, &size) == 0 && size > keep &&
			    size <= off + (off_t)n && ftruncate(h->fd, keep) != 0)
				log_warn("fd %d: could not cut the file back to %lld bytes after a failed write: %s",
					 h->fd, (long long)keep, strerror(errno));
		}
	}
	wtrack_exit(&p->wt);
	return result;
}

/* A piece that ends the request whose last bytes wait for the end: the
 * rest written, then those copied aside (fio_write_end writes them).
 * Returns what writing the rest gave, counting them when all of it was
 * written. */
static ssize_t write_holding_tail(struct ocf_handle *h, const char *src, size_t n, off_t off, struct ocf_ring *ring,
				  struct fio_wprep *prep)
{
	size_t keep = (size_t)(prep->tail_off - off);
	ssize_t r = fio_write(h, src, keep, off, ring, prep);
	if (r != (ssize_t)keep)
		return r;
	memcpy(prep->tail, src + keep, prep->tail_len);
	prep->held_off = prep->tail_off;
	return (ssize_t)n;
}

static ssize_t write_any(struct ocf_handle *h, const char *src, size_t n, off_t off, struct ocf_ring *ring,
			 struct fio_wprep *prep, const struct fio_wtrack *t)
{
	/* The request's last bytes wait for the end, unless the transfers go
	 * through io_uring (each piece then signals itself). */
	bool hold = prep && prep->tail_len && off + (off_t)n == prep->req_end && !write_on_ring(h, ring);
	if (hold && off < prep->tail_off)
		return write_holding_tail(h, src, n, off, ring, prep);
	if (hold) {
		/* The piece lies in the last bytes: held for the end. */
		memcpy(prep->tail + (off - prep->tail_off), src, n);
		prep->held_off = off;
		return (ssize_t)n;
	}
	if (!h->odirect) {
		/* Stores through the mapping, unless the transfers were asked
		 * to go through io_uring (OPENCUFILE_IO_BACKEND=uring,
		 * properties.prefer_iouring). */
		ssize_t r = write_on_ring(h, ring) ? NOT_MAPPED : write_mapped(h, src, n, off, prep, t);
		return r != NOT_MAPPED ? r : write_piece(h, ring, src, n, off);
	}

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
		/* Nothing written from RLIMIT_FSIZE on, where bytes before it
		 * were: as one pwrite would stop there. */
		if (done && cut[i] >= (prep ? prep->limit : fsize_limit()))
			break;
		const char *p = src + (cut[i] - off);
		ssize_t r = i == 1 ? write_piece(h, ring, p, len, cut[i]) : write_unaligned(h, p, len, cut[i]);
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
		if ((size_t)r < len)
			break;
	}
	return (ssize_t)done;
}

ssize_t fio_write(struct ocf_handle *h, const char *src, size_t n, off_t off, struct ocf_ring *ring,
		  struct fio_wprep *prep)
{
	if (h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS)
		return fs_io(h, (char *)src, n, off, 1);
	if (prep) {
		/* A request cut at RLIMIT_FSIZE: no piece after its first starts
		 * at the limit (a pwrite there raises SIGXFSZ; one pwrite of the
		 * whole range stops at the limit without it). */
		if (off > prep->req_off && off >= prep->limit)
			return 0;
		return write_any(h, src, n, off, ring, prep, &prep->wt);
	}
	struct fio_wtrack t;
	wtrack_enter(h, &t);
	wtrack_snapshot(&t); /* a piece may reserve (mapped_ready) */
	ssize_t r = write_any(h, src, n, off, ring, NULL, &t);
	wtrack_exit(&t);
	return r;
}

/* ------------------------------------------------------- cache write-back */

enum { FLUSH_OFF, FLUSH_CLFLUSHOPT, FLUSH_CLWB };

/* The write-back OPENCUFILE_FLUSH_STAGED asks for (ocf_cfg.tuning), where
 * the CPU has it. */
static int flush_mode(void)
{
	/* In the order of OPENCUFILE_FLUSH_STAGED's words (config.c). */
	static const int asked[] = {FLUSH_CLWB, FLUSH_CLFLUSHOPT, FLUSH_OFF};
	const struct ocf_cpu_features *cpu = ocf_cpu_features();
	int want = asked[ocf_cfg.tuning.flush_staged];
	if (want == FLUSH_CLWB && cpu->clwb)
		return FLUSH_CLWB;
	if (want == FLUSH_CLFLUSHOPT && cpu->clflushopt)
		return FLUSH_CLFLUSHOPT;
	return FLUSH_OFF;
}

void fio_log_settings(void)
{
	static const char *const names[] = {"off", "clflushopt", "clwb"};
	const struct ocf_tuning *t = &ocf_cfg.tuning;
	log_debug("staged write-back: %s, with at least %d copies busy, of reads up to %zu KiB",
		  names[flush_mode()], t->flush_busy, t->flush_max_bytes / 1024);
}

void fio_flush_before_copy(const void *p, size_t n, int busy)
{
	const struct ocf_tuning *t = &ocf_cfg.tuning;
	if (!n || n > t->flush_max_bytes || busy < t->flush_busy)
		return;
	int mode = flush_mode();
	if (mode == FLUSH_OFF || fmap_streamed(p, n))
		return;
#if defined(__x86_64__)
	/* Encoded as bytes: older assemblers lack the mnemonics. */
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)63, end = (uintptr_t)p + n;
	if (mode == FLUSH_CLFLUSHOPT)
		for (; a < end; a += 64)
			__asm__ volatile(".byte 0x66, 0x0f, 0xae, 0x38" ::"a"(a) : "memory"); /* clflushopt (%rax) */
	else
		for (; a < end; a += 64)
			__asm__ volatile(".byte 0x66, 0x0f, 0xae, 0x30" ::"a"(a) : "memory"); /* clwb (%rax) */
	__asm__ volatile("sfence" ::: "memory");
#endif
}
