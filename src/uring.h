/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uring.h - the io_uring backend of the file side: one ring per staging
 * lane, the lane's buffers registered as fixed buffers.
 */
#ifndef OCF_URING_H_
#define OCF_URING_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct ocf_ring;

/* OPENCUFILE_IO_BACKEND: which system calls move file data. */
enum ocf_io_backend {
	OCF_IO_PSYNC, /* pread/pwrite only */
	OCF_IO_AUTO,  /* io_uring for direct I/O, pread/pwrite for buffered */
	OCF_IO_URING, /* io_uring for every staged transfer */
};

/* The backend asked for: OPENCUFILE_IO_BACKEND (ocf_cfg.tuning, resolved
 * at each driver open) when set, else uring with properties.prefer_iouring,
 * else auto.  Says
 * nothing about whether a ring could be set up: see uring_ring_new. */
enum ocf_io_backend uring_backend(void);

/* A ring for one lane (gpu.c's lane_ring), its nbufs staging buffers
 * registered as fixed buffers where the kernel allows; NULL when file I/O
 * goes through pread/pwrite: the backend is psync, the library was built
 * without liburing, io_uring could not start in this process (logged once
 * at INFO; it is a mode, not an error) or there was no memory.  One thread
 * at a time uses it. */
struct ocf_ring *uring_ring_new(const struct iovec *bufs, int nbufs);
/* Tears a lane's ring down (nothing may be in flight). */
void uring_ring_destroy(struct ocf_ring *ring);

/* Queues one read or write of [off, off+len) of fd at buf; a buffer inside
 * one of the lane's registered slots goes as READ_FIXED/WRITE_FIXED.  `tag`
 * comes back with the completion.  Returns 0 or -errno (nothing queued). */
int uring_queue(struct ocf_ring *ring, bool write, int fd, void *buf, size_t len, off_t off, uint64_t tag);

/* Submits what is queued and waits for one completion: its tag, and its
 * result (bytes moved, or -errno).  Every io_uring completion result of the
 * library is taken here.  Returns 0, or -errno when nothing could be
 * submitted or waited for: the ring is then broken (uring_ring_broken). */
int uring_reap(struct ocf_ring *ring, uint64_t *tag, ssize_t *res);

/* Did submitting or waiting fail with transfers in flight?  The lane's
 * buffers may then still be in use by the kernel: the lane is discarded. */
bool uring_ring_broken(const struct ocf_ring *ring);

#endif /* OCF_URING_H_ */
