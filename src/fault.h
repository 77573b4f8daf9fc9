/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault.h - the file side's system calls, with a fault-injection hook in
 * test builds.
 *
 * The library calls fault_pread(), fault_pwrite(), fault_preadv2(),
 * fault_open(), fault_fstat(), fault_fcntl() and fault_fallocate() where it
 * would call the system directly, an io_uring completion path passes each
 * completion's result through fault_uring_res(), and the calls that can
 * only fail (cachestat, statx, io_uring submission and waiting, io_uring
 * buffer registration, a copy or a store through a file's mapping) ask
 * fault_errno() first.  In an ordinary build (the installed libcufile.so)
 * they are the plain system calls, inlined: there is no hook and nothing
 * to arm.
 * Only the test variant of the library (libcufile-faultinject.so, built with
 * OCF_FAULT_INJECTION, never installed) routes them through fault.c, whose
 * ocf_fault_* functions a test calls to make the Nth call fail or come up
 * short.
 */
#ifndef OCF_FAULT_H_
#define OCF_FAULT_H_

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* The calls a rule can target. */
enum ocf_fault_call {
	OCF_FAULT_PREAD,  /* data reads (pread) */
	OCF_FAULT_PWRITE, /* data writes (pwrite) */
	OCF_FAULT_OPEN,   /* open(): the buffered twin of an O_DIRECT handle */
	OCF_FAULT_FSTAT,  /* fstat(): handle registration, end-of-file checks */
	OCF_FAULT_FCNTL,  /* fcntl(): F_GETFL at registration, O_DIRECT toggling */
	OCF_FAULT_URING,  /* an io_uring completion (cqe->res) */
	/* Added later; kept after the first six so that their numbers stay. */
	OCF_FAULT_PREADV2,      /* preadv2(RWF_NOWAIT): page-cache copies of buffered reads */
	OCF_FAULT_CACHESTAT,    /* cachestat(2): how much of a range the page cache holds */
	OCF_FAULT_STATX,        /* statx: STATX_DIOALIGN at registration of an O_DIRECT
				 * descriptor, STATX_SIZE in a write's preparation */
	OCF_FAULT_URING_ENTER,  /* io_uring submission and waiting (io_uring_enter) */
	OCF_FAULT_URING_REGBUF, /* io_uring_register_buffers of a lane's staging buffers */
	OCF_FAULT_MAPPED,       /* a copy through a file mapping (filemap.c): an injected errno
				 * stands for a page fault that raised SIGBUS */
	OCF_FAULT_FALLOCATE,    /* fallocate(): blocks reserved for a write, the file extended */
	OCF_FAULT_MAPPED_STORE, /* stores through a writable file mapping (filemap.c): an
				 * injected errno stands for a fault that raised SIGBUS */
	OCF_FAULT_NCALLS
};

#ifdef OCF_FAULT_INJECTION

ssize_t fault_pread(int fd, void *buf, size_t n, off_t off);
ssize_t fault_pwrite(int fd, const void *buf, size_t n, off_t off);
/* preadv2 of one buffer with `flags` (RWF_NOWAIT). */
ssize_t fault_preadv2(int fd, void *buf, size_t n, off_t off, int flags);
int fault_open(const char *path, int flags);
int fault_fstat(int fd, struct stat *st);
int fault_fcntl(int fd, int cmd, int arg);
int fault_fallocate(int fd, int mode, off_t off, off_t len);
/* The result an io_uring completion reports (bytes, or -errno) after the
 * rules: the uring path calls res = fault_uring_res(cqe->res) and handles
 * what comes back (-EAGAIN, -EIO, a short count) as a real completion. */
int fault_uring_res(int res);
/* For a call that can only fail: counts it, and returns the errno a rule
 * injects (the caller then skips the call and fails it with that errno),
 * or 0: make the call. */
int fault_errno(enum ocf_fault_call call);
/* A read of n bytes at off queued on a ring (uring.c): counted by
 * ocf_fault_direct_reads when fd is O_DIRECT, as fault_pread and
 * fault_preadv2 count theirs. */
void fault_note_ring_read(int fd, size_t n, off_t off);

#else /* no hook: the system calls themselves */

static inline ssize_t fault_pread(int fd, void *buf, size_t n, off_t off) { return pread(fd, buf, n, off); }
static inline ssize_t fault_pwrite(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }
static inline ssize_t fault_preadv2(int fd, void *buf, size_t n, off_t off, int flags)
{
	struct iovec iov = {buf, n};
	return preadv2(fd, &iov, 1, off, flags);
}
static inline int fault_open(const char *path, int flags) { return open(path, flags); }
static inline int fault_fstat(int fd, struct stat *st) { return fstat(fd, st); }
static inline int fault_fcntl(int fd, int cmd, int arg) { return fcntl(fd, cmd, arg); }
static inline int fault_fallocate(int fd, int mode, off_t off, off_t len) { return fallocate(fd, mode, off, len); }
static inline int fault_uring_res(int res) { return res; }
static inline int fault_errno(enum ocf_fault_call call)
{
	(void)call;
	return 0;
}
static inline void fault_note_ring_read(int fd, size_t n, off_t off) { (void)fd, (void)n, (void)off; }

#endif /* OCF_FAULT_INJECTION */

/* ---- test control: defined and exported by libcufile-faultinject.so only ----
 * Counting starts when a rule is set: nth = 1 is the next call of that kind
 * (in any thread).  `times` consecutive calls from the nth on are affected
 * (0: every call from the nth on).  A rule replaces the previous rule of
 * its kind. */

/* The affected calls do nothing and fail with -1 and errno `err` (io_uring:
 * the completion reports -err).  EINTR, EIO, ENOSPC, EAGAIN... */
void ocf_fault_fail_nth(enum ocf_fault_call call, unsigned long nth, unsigned long times, int err);
/* The affected pread/pwrite (or completion) transfer `short_by` bytes fewer
 * than asked, at least one byte: a short read or short write.  On an
 * O_DIRECT descriptor, and always for an io_uring completion (whose
 * descriptor the hook does not see), the length is rounded down to whole
 * 4 KiB blocks, as the kernel's partial completions are (a one-block
 * transfer is not shortened).  Calls that can only fail ignore this rule. */
void ocf_fault_short_nth(enum ocf_fault_call call, unsigned long nth, unsigned long times, size_t short_by);
/* The nth call transfers `short_by` bytes fewer than asked (as above) and
 * the `times` calls of that kind after it (0: every later call) fail with
 * `err`: a transfer that breaks off midway, as a disk error inside a large
 * read does (a loop that goes on after the short count gets the error). */
void ocf_fault_short_then_fail_nth(enum ocf_fault_call call, unsigned long nth, size_t short_by, int err,
				   unsigned long times);
/* While on, a pread that a rule fails first fills the buffer it was given
 * with 0xEE: what a direct read that fails may leave in its range (part of
 * the transfer landed, part did not).  Off after ocf_fault_reset(). */
void ocf_fault_scribble_failed_reads(int on);
/* fn runs in the calling thread at every call of that kind, before the
 * call (and before any rule acts): a test's way to change the world at an
 * exact point, such as shrinking a file between a copy's size check and
 * the copy.  NULL removes it; ocf_fault_reset removes every one. */
void ocf_fault_on_call(enum ocf_fault_call call, void (*fn)(void));
/* SIGBUS faults the mapped copies (filemap.c) caught since the process
 * started. */
unsigned long ocf_fault_mapped_caught(void);
/* Mapped copies made with streaming stores (not the bulk chunks', which
 * use ordinary stores) since the process started. */
unsigned long ocf_fault_mapped_streamed(void);
/* Bytes stored through writable file mappings (buffered writes, filemap.c)
 * since the process started. */
unsigned long long ocf_fault_mapped_stored(void);
/* Naps taken by members of copy groups (copygroup.c) since the process
 * started; *shortest and *longest (where not NULL): the shortest and the
 * longest nap since the last call (0 if none). */
unsigned long ocf_fault_cg_naps(uint64_t *shortest, uint64_t *longest);
/* Reads served from read-ahead windows (readahead.c) since the process
 * started. */
unsigned long ocf_fault_ra_served(void);
/* The most engine helpers seen filling one read-ahead window at once since
 * the process started (OPENCUFILE_READAHEAD_FILLERS bounds it). */
int ocf_fault_ra_fill_peak(void);
/* Sets that most back to 0 (a test's next phase counts afresh). */
void ocf_fault_ra_fill_peak_reset(void);
/* The processes this one counted filling read-ahead windows on the host
 * at its last count (hostshare.c; itself included; 0 before it filled),
 * or -1 where sharing is off (no usable table).  `refresh`: stamp and
 * count now, as a fill would. */
int ocf_fault_host_share_peers(bool refresh);
/* Jobs an engine worker joined while it polled the queue after a job
 * (engine.c: helpers kept awake after a lone caller's short striped read)
 * since the process started. */
unsigned long ocf_fault_polled_joins(void);
/* Device reads striped while other callers were busy (engine.c: up to
 * OPENCUFILE_STRIPE_CALLERS callers, handles without a read-ahead window). */
unsigned long ocf_fault_striped_beside_others(void);
/* Batch operations an executor thread took while it polled the FIFO after
 * an operation (async.c) since the process started. */
unsigned long ocf_fault_polled_batch_ops(void);
/* cuFileBatchIOGetStatus calls whose wait ended while polling, before any
 * sleep (batch.c), since the process started. */
unsigned long ocf_fault_polled_status_waits(void);
/* Bytes the library asked to read through O_DIRECT descriptors (pread,
 * preadv2, io_uring) since the process started: such a read goes to the
 * disk whatever the page cache holds (bytes asked past end of file, which
 * it returns none of, are counted too).  *last_off and *last_len
 * (where not NULL): the file range of the latest such read (0, 0: none). */
unsigned long long ocf_fault_direct_reads(unsigned long long *last_off, unsigned long long *last_len);
/* Removes every rule. */
void ocf_fault_reset(void);
/* Calls of that kind since the process started, and how many were hit. */
unsigned long ocf_fault_calls(enum ocf_fault_call call);
unsigned long ocf_fault_hits(enum ocf_fault_call call);

#endif /* OCF_FAULT_H_ */
