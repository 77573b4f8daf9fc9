/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault.c - fault injection for the file side (test variant only).
 *
 * DESIGN: compiled only into libcufile-faultinject.so (OCF_FAULT_INJECTION),
 * a copy of the library that the test suite links and nothing installs, so
 * the shipped library carries no hook and nothing in the environment can
 * arm one.  One rule per call kind {first, last, action}, counted under one
 * mutex: every counted call is a system call anyway, and tests need exact
 * "the Nth call" semantics across threads more than speed.  A rule acts on
 * calls first..last of its kind; the action is "fail with errno E without
 * doing anything" or "transfer k bytes fewer (at least one)", optionally
 * followed by "the calls after it fail" (a transfer that breaks off
 * midway).
 */
#define _GNU_SOURCE
#include "fault.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "internal.h"

struct rule {
	unsigned long calls; /* calls of this kind so far */
	unsigned long hits;  /* calls a rule acted on */
	unsigned long first, last; /* affected calls (1-based); first 0: no rule */
	int err;             /* fail with this errno, or 0: short */
	size_t short_by;
	int then_err;            /* a short rule: calls after the short one fail with this */
	unsigned long then_times; /* how many (0: every later call) */
	unsigned long fail_from, fail_to; /* those calls (1-based); fail_from 0: none pending */
};

/* rules_lock protects rules[]. */
static pthread_mutex_t rules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rule rules[OCF_FAULT_NCALLS];
static int scribble; /* relaxed atomics */
static void (*call_hook[OCF_FAULT_NCALLS])(void); /* relaxed atomics */

/* Counts a call; true with the action to take when a rule hits it. */
static bool hit(enum ocf_fault_call call, int *err, size_t *short_by)
{
	void (*fn)(void) = __atomic_load_n(&call_hook[call], __ATOMIC_RELAXED);
	if (fn)
		fn();
	pthread_mutex_lock(&rules_lock);
	struct rule *r = &rules[call];
	unsigned long n = ++r->calls;
	bool on = r->first && n >= r->first && n <= r->last;
	if (on) {
		r->hits++;
		*err = r->err;
		*short_by = r->short_by;
		if (!r->err && r->then_err) {
			r->fail_from = n + 1;
			bool bounded = r->then_times && r->then_times < (unsigned long)-1 - n;
			r->fail_to = bounded ? n + r->then_times : (unsigned long)-1;
		}
	} else if (r->fail_from && n >= r->fail_from && n <= r->fail_to) {
		on = true;
		r->hits++;
		*err = r->then_err;
		*short_by = 0;
	}
	pthread_mutex_unlock(&rules_lock);
	return on;
}

static void set_rule(enum ocf_fault_call call, unsigned long nth, unsigned long times, int err, size_t short_by,
		     int then_err, unsigned long then_times)
{
	if ((unsigned)call >= OCF_FAULT_NCALLS)
		return;
	pthread_mutex_lock(&rules_lock);
	struct rule *r = &rules[call];
	r->first = nth ? r->calls + nth : 0;
	r->last = !nth ? 0 : times ? r->first + times - 1 : (unsigned long)-1;
	r->err = err;
	r->short_by = short_by;
	r->then_err = then_err;
	r->then_times = then_times;
	r->fail_from = r->fail_to = 0;
	pthread_mutex_unlock(&rules_lock);
}

OCF_EXPORT void ocf_fault_fail_nth(enum ocf_fault_call call, unsigned long nth, unsigned long times, int err)
{
	set_rule(call, nth, times, err > 0 ? err : EIO, 0, 0, 0);
}

OCF_EXPORT void ocf_fault_short_nth(enum ocf_fault_call call, unsigned long nth, unsigned long times,
				    size_t short_by)
{
	set_rule(call, nth, times, 0, short_by, 0, 0);
}

OCF_EXPORT void ocf_fault_short_then_fail_nth(enum ocf_fault_call call, unsigned long nth, size_t short_by, int err,
					      unsigned long times)
{
	set_rule(call, nth, 1, 0, short_by, err > 0 ? err : EIO, times);
}

OCF_EXPORT void ocf_fault_scribble_failed_reads(int on)
{
	__atomic_store_n(&scribble, on ? 1 : 0, __ATOMIC_RELAXED);
}

OCF_EXPORT void ocf_fault_on_call(enum ocf_fault_call call, void (*fn)(void))
{
	if ((unsigned)call < OCF_FAULT_NCALLS)
		__atomic_store_n(&call_hook[call], fn, __ATOMIC_RELAXED);
}

OCF_EXPORT void ocf_fault_reset(void)
{
	__atomic_store_n(&scribble, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < OCF_FAULT_NCALLS; i++)
		__atomic_store_n(&call_hook[i], NULL, __ATOMIC_RELAXED);
	pthread_mutex_lock(&rules_lock);
	for (int i = 0; i < OCF_FAULT_NCALLS; i++)
		rules[i].first = rules[i].last = rules[i].fail_from = 0;
	pthread_mutex_unlock(&rules_lock);
}

static unsigned long read_counter(enum ocf_fault_call call, bool hits)
{
	if ((unsigned)call >= OCF_FAULT_NCALLS)
		return 0;
	pthread_mutex_lock(&rules_lock);
	unsigned long n = hits ? rules[call].hits : rules[call].calls;
	pthread_mutex_unlock(&rules_lock);
	return n;
}

OCF_EXPORT unsigned long ocf_fault_calls(enum ocf_fault_call call) { return read_counter(call, false); }

OCF_EXPORT unsigned long ocf_fault_hits(enum ocf_fault_call call) { return read_counter(call, true); }

/* A transfer of n bytes on fd shortened by k, never to zero (zero means
 * end of file to a reader).  O_DIRECT refuses lengths that are not whole
 * blocks, and its partial completions are whole blocks: there the length is
 * rounded down to 4 KiB, and a request of one block is not shortened. */
static size_t shortened(int fd, size_t n, size_t k)
{
	size_t m = n > k ? n - k : (n ? 1 : 0);
	int fl = fd >= 0 ? fcntl(fd, F_GETFL) : 0;
	if (fl > 0 && (fl & O_DIRECT)) {
		m = m / 4096 * 4096;
		if (m == 0)
			m = n;
	}
	return m;
}

/* For data transfers: -1 (errno set) when a rule fails the call, else the
 * length to transfer (shortened when a rule says so). */
static ssize_t transfer_len(enum ocf_fault_call call, int fd, size_t n)
{
	int err;
	size_t k;
	if (!hit(call, &err, &k))
		return (ssize_t)n;
	if (err) {
		errno = err;
		return -1;
	}
	return (ssize_t)shortened(fd, n, k);
}

/* Reads through O_DIRECT descriptors: bytes asked, and the latest range
 * (under direct_lock). */
static pthread_mutex_t direct_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long direct_bytes, direct_last_off, direct_last_len;

static void note_read(int fd, size_t n, off_t off)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || !(fl & O_DIRECT) || n == 0)
		return;
	pthread_mutex_lock(&direct_lock);
	direct_bytes += n;
	direct_last_off = (unsigned long long)off;
	direct_last_len = n;
	pthread_mutex_unlock(&direct_lock);
}

void fault_note_ring_read(int fd, size_t n, off_t off) { note_read(fd, n, off); }

OCF_EXPORT unsigned long long ocf_fault_direct_reads(unsigned long long *last_off, unsigned long long *last_len)
{
	pthread_mutex_lock(&direct_lock);
	unsigned long long n = direct_bytes;
	if (last_off)
		*last_off = direct_last_off;
	if (last_len)
		*last_len = direct_last_len;
	pthread_mutex_unlock(&direct_lock);
	return n;
}

ssize_t fault_pread(int fd, void *buf, size_t n, off_t off)
{
	ssize_t m = transfer_len(OCF_FAULT_PREAD, fd, n);
	if (m < 0 && __atomic_load_n(&scribble, __ATOMIC_RELAXED)) {
		int e = errno;
		memset(buf, 0xEE, n);
		errno = e;
	}
	if (m < 0)
		return -1;
	note_read(fd, (size_t)m, off);
	return pread(fd, buf, (size_t)m, off);
}

ssize_t fault_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t m = transfer_len(OCF_FAULT_PWRITE, fd, n);
	return m < 0 ? -1 : pwrite(fd, buf, (size_t)m, off);
}

ssize_t fault_preadv2(int fd, void *buf, size_t n, off_t off, int flags)
{
	ssize_t m = transfer_len(OCF_FAULT_PREADV2, fd, n);
	if (m < 0)
		return -1;
	note_read(fd, (size_t)m, off);
	struct iovec iov = {buf, (size_t)m};
	return preadv2(fd, &iov, 1, off, flags);
}

int fault_errno(enum ocf_fault_call call)
{
	int err;
	size_t k;
	return hit(call, &err, &k) ? err : 0;
}

/* For calls that can only fail: true (errno set) when a rule hits. */
static bool fails(enum ocf_fault_call call)
{
	int err = fault_errno(call);
	if (!err)
		return false;
	errno = err;
	return true;
}

int fault_open(const char *path, int flags) { return fails(OCF_FAULT_OPEN) ? -1 : open(path, flags); }

int fault_fstat(int fd, struct stat *st) { return fails(OCF_FAULT_FSTAT) ? -1 : fstat(fd, st); }

int fault_fcntl(int fd, int cmd, int arg) { return fails(OCF_FAULT_FCNTL) ? -1 : fcntl(fd, cmd, arg); }

int fault_fallocate(int fd, int mode, off_t off, off_t len)
{
	return fails(OCF_FAULT_FALLOCATE) ? -1 : fallocate(fd, mode, off, len);
}

int fault_uring_res(int res)
{
	int err;
	size_t k;
	if (!hit(OCF_FAULT_URING, &err, &k))
		return res;
	if (err)
		return -err;
	/* Whole 4 KiB blocks, as the kernel completes O_DIRECT transfers
	 * partially (a ring serves both kinds of descriptor); a completion of
	 * one block or less is not shortened. */
	if (res <= 4096)
		return res;
	size_t m = ((size_t)res > k ? (size_t)res - k : 1) / 4096 * 4096;
	return m ? (int)m : res;
}
