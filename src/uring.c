/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uring.c - io_uring for the file side of staged I/O.
 *
 * DESIGN: a ring belongs to a staging lane (gpu.h, which creates it at the
 * lane's first staged transfer through uring_ring_new and destroys it with
 * the lane; this file knows buffers, not lanes).  A lane is used by one
 * thread at a time, so its ring needs no lock and is never shared between
 * threads that run at once; the ring's memory and the lane's buffers are
 * kept together.  The lane's staging buffers are registered
 * (io_uring_register_buffers), so reads and writes of staged chunks go as
 * READ_FIXED/WRITE_FIXED: the kernel does not look up and pin the pages of
 * every request.  Where registration is refused (RLIMIT_MEMLOCK for
 * unprivileged processes, memory the kernel cannot pin) the ring still
 * serves plain READ/WRITE requests.
 *
 * If io_uring_queue_init fails (a kernel without io_uring, a seccomp
 * filter in a container, io_uring disabled by sysctl) the process falls
 * back to pread/pwrite for good: logged once at INFO, never an error.
 *
 * Every completion result passes through uring_reap(), so a fault (EAGAIN,
 * EIO, a short transfer) can be injected in one place; submission and
 * waiting (OCF_FAULT_URING_ENTER) and the buffer registration can be
 * failed too (fault.h).
 */
#define _GNU_SOURCE
#include "uring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "internal.h"
#include "fault.h"
#include "log.h"

enum ocf_io_backend uring_backend(void)
{
	/* OPENCUFILE_IO_BACKEND's words (config.c): auto, uring, psync. */
	static const enum ocf_io_backend asked[] = {OCF_IO_AUTO, OCF_IO_URING, OCF_IO_PSYNC};
	enum ocf_io_backend m = asked[ocf_cfg.tuning.io_backend];
	/* The environment variable, when set, wins; otherwise
	 * properties.prefer_iouring sends buffered transfers to the ring too
	 * (both are fixed while the driver is open). */
	if (m == OCF_IO_AUTO && ocf_cfg.prefer_iouring)
		return OCF_IO_URING;
	return m;
}

#ifdef OCF_HAVE_LIBURING

#include <liburing.h>

struct ocf_ring {
	struct io_uring ring;
	bool fixed; /* the lane's buffers are registered */
	unsigned queued;   /* prepared, not yet submitted */
	unsigned inflight; /* prepared or submitted, not yet reaped */
	bool broken;       /* a submission or wait failed */
	int nbufs;
	struct iovec iov[]; /* the lane's buffers, nbufs of them */
};

/* Set once io_uring failed to start: from then on every lane uses
 * pread/pwrite.  Relaxed: a lane that misses the store only tries (and
 * fails) once more. */
static bool uring_unavailable;

/* Entries per ring: a lane never has more transfers in flight than it has
 * buffers; the ring is sized for that (the kernel rounds up to a power of
 * two). */
#define RING_ENTRIES 4

struct ocf_ring *uring_ring_new(const struct iovec *bufs, int nbufs)
{
	if (uring_backend() == OCF_IO_PSYNC || __atomic_load_n(&uring_unavailable, __ATOMIC_RELAXED))
		return NULL;
	struct ocf_ring *r = calloc(1, sizeof(*r) + (size_t)nbufs * sizeof(r->iov[0]));
	if (!r)
		return NULL;
	unsigned entries = (unsigned)OCF_MAX(nbufs, RING_ENTRIES);
	int e = io_uring_queue_init(entries, &r->ring, 0);
	if (e < 0) {
		free(r);
		if (e == -ENOMEM || e == -EMFILE || e == -ENFILE || e == -EAGAIN || e == -EBUSY) {
			/* Out of a resource (memory, descriptors): this lane goes
			 * without a ring, the next may get one; io_uring stays in
			 * use.  Logged once per process (relaxed exchange). */
			static bool told;
			if (!__atomic_exchange_n(&told, true, __ATOMIC_RELAXED))
				log_warn("io_uring ring not set up (io_uring_queue_init: %s): this staging lane "
					 "uses pread/pwrite",
					 strerror(-e));
			return NULL;
		}
		/* No io_uring here (no kernel support, a seccomp filter,
		 * kernel.io_uring_disabled): a mode for the process.  Log once
		 * per process: the exchange returns the old value. */
		if (!__atomic_exchange_n(&uring_unavailable, true, __ATOMIC_RELAXED))
			log_info("io_uring unavailable (io_uring_queue_init: %s): file I/O uses pread/pwrite",
				 strerror(-e));
		return NULL;
	}
	memcpy(r->iov, bufs, (size_t)nbufs * sizeof(r->iov[0]));
	r->nbufs = nbufs;
	e = -fault_errno(OCF_FAULT_URING_REGBUF);
	if (!e)
		e = io_uring_register_buffers(&r->ring, r->iov, (unsigned)r->nbufs);
	r->fixed = e == 0;
	if (e < 0) {
		static bool logged; /* once per process; relaxed: a repeat is harmless */
		if (!__atomic_exchange_n(&logged, true, __ATOMIC_RELAXED))
			log_info("io_uring: staging buffers not registered (%s): plain reads and writes",
				 strerror(-e));
	}
	log_debug("io_uring: ring of %u entries, %s buffers", entries, r->fixed ? "fixed" : "unregistered");
	return r;
}

void uring_ring_destroy(struct ocf_ring *r)
{
	if (!r)
		return;
	if (r->inflight)
		log_error("io_uring ring torn down with %u transfer(s) in flight", r->inflight);
	io_uring_queue_exit(&r->ring); /* also drops the buffer registration */
	free(r);
}

/* The registered buffer holding [p, p+len), or -1. */
static int fixed_index(const struct ocf_ring *r, const void *p, size_t len)
{
	if (!r->fixed)
		return -1;
	for (int i = 0; i < r->nbufs; i++) {
		const char *b = r->iov[i].iov_base;
		if ((const char *)p >= b && (const char *)p + len <= b + r->iov[i].iov_len)
			return i;
	}
	return -1;
}

int uring_queue(struct ocf_ring *r, bool write, int fd, void *buf, size_t len, off_t off, uint64_t tag)
{
	if (len > 0x7ffff000u) /* one request moves at most this much, like read(2) */
		return -EINVAL;
	if (r->broken)
		return -EIO;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return -EBUSY;
	int idx = fixed_index(r, buf, len);
	if (idx >= 0 && write)
		io_uring_prep_write_fixed(sqe, fd, buf, (unsigned)len, (__u64)off, idx);
	else if (idx >= 0)
		io_uring_prep_read_fixed(sqe, fd, buf, (unsigned)len, (__u64)off, idx);
	else if (write)
		io_uring_prep_write(sqe, fd, buf, (unsigned)len, (__u64)off);
	else
		io_uring_prep_read(sqe, fd, buf, (unsigned)len, (__u64)off);
	if (!write)
		fault_note_ring_read(fd, len, off);
	io_uring_sqe_set_data64(sqe, tag);
	r->queued++;
	r->inflight++;
	return 0;
}

bool uring_ring_broken(const struct ocf_ring *r) { return r->broken; }

int uring_reap(struct ocf_ring *r, uint64_t *tag, ssize_t *res)
{
	if (r->inflight == 0 || r->broken)
		return -EINVAL;
	struct io_uring_cqe *cqe = NULL;
	int e = 0;
	/* Submits what is queued and waits for one completion in one system
	 * call; what a partial submission left queued goes with the next. */
	while (r->queued) {
		e = -fault_errno(OCF_FAULT_URING_ENTER);
		if (!e)
			e = io_uring_submit_and_wait(&r->ring, 1);
		if (e == -EINTR || e == -EAGAIN)
			continue;
		if (e < 0)
			break;
		r->queued -= OCF_MIN((unsigned)e, r->queued);
		if (e == 0) {
			/* Nothing taken: wait for what is in flight, if any. */
			if (r->inflight == r->queued)
				e = -EIO;
			break;
		}
	}
	if (e >= 0) {
		do {
			e = -fault_errno(OCF_FAULT_URING_ENTER);
			if (!e)
				e = io_uring_wait_cqe(&r->ring, &cqe);
		} while (e == -EINTR || e == -EAGAIN);
	}
	if (e < 0) {
		log_error("io_uring: waiting for a completion failed: %s", strerror(-e));
		r->broken = true;
		return e;
	}
	/* The one place where completion results are taken. */
	*tag = io_uring_cqe_get_data64(cqe);
	*res = fault_uring_res(cqe->res);
	io_uring_cqe_seen(&r->ring, cqe);
	r->inflight--;
	return 0;
}

#else /* !OCF_HAVE_LIBURING: built without liburing, pread/pwrite only */

struct ocf_ring *uring_ring_new(const struct iovec *bufs, int nbufs)
{
	(void)bufs, (void)nbufs;
	static bool logged; /* once per process; relaxed: a repeat is harmless */
	if (uring_backend() != OCF_IO_PSYNC && !__atomic_exchange_n(&logged, true, __ATOMIC_RELAXED))
		log_info("io_uring unavailable (built without liburing): file I/O uses pread/pwrite");
	return NULL;
}

void uring_ring_destroy(struct ocf_ring *r) { (void)r; }

int uring_queue(struct ocf_ring *r, bool write, int fd, void *buf, size_t len, off_t off, uint64_t tag)
{
	(void)r, (void)write, (void)fd, (void)buf, (void)len, (void)off, (void)tag;
	return -ENOSYS;
}

int uring_reap(struct ocf_ring *r, uint64_t *tag, ssize_t *res)
{
	(void)r, (void)tag, (void)res;
	return -ENOSYS;
}

bool uring_ring_broken(const struct ocf_ring *r)
{
	(void)r;
	return false;
}

#endif
