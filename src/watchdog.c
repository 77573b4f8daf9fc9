/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watchdog.c - see watchdog.h.
 *
 * DESIGN: each thread that ever waits owns a slot of a static table (taken
 * with a compare-and-swap, given back when the thread exits; no memory is
 * allocated, so nothing outlives a driver close; a thread finding the table
 * full is not watched).  A
 * wait costs the owner a few relaxed stores and one release store (the
 * start time; 0 while not waiting): no lock, no system call.  The watchdog
 * thread (ticker.c) wakes every second while the driver is open, reads each
 * slot (acquire on the start time, then the fields, then the start time
 * again: a slot reused meanwhile is skipped) and logs a wait older than the
 * limit once (per wait, by its sequence number).
 */
#define _GNU_SOURCE
#include "watchdog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "internal.h"
#include "log.h"
#include "ticker.h"

struct wd_slot {
	_Atomic uint64_t since; /* CLOCK_MONOTONIC ns; 0: not waiting */
	_Atomic uint64_t seq;   /* waits begun */
	_Atomic(const char *) op;
	_Atomic(const char *) what;
	atomic_int fd;  /* -1: no descriptor */
	atomic_int ufs; /* a userspace file system */
	atomic_int gpu;
	atomic_int tid;
	atomic_bool in_use;
	uint64_t logged_seq; /* the watchdog thread's own */
};

#define WD_SLOTS 1024
static struct wd_slot slots[WD_SLOTS];
static atomic_int slots_used; /* slots ever taken: the scan stops there */
static __thread struct wd_slot *my_slot;
static __thread int my_depth;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* A thread exits: its slot may serve another. */
static void slot_release(void *arg)
{
	struct wd_slot *s = arg;
	atomic_store_explicit(&s->since, 0, memory_order_release);
	atomic_store_explicit(&s->in_use, false, memory_order_release);
}

static void make_key(void)
{
	if (pthread_key_create(&exit_key, slot_release) != 0)
		exit_key = (pthread_key_t)-1;
}

static struct wd_slot *slot_get(void)
{
	if (my_slot)
		return my_slot;
	pthread_once(&key_once, make_key);
	struct wd_slot *s = NULL;
	for (int i = 0; i < WD_SLOTS && !s; i++) {
		bool expect = false;
		if (atomic_compare_exchange_strong(&slots[i].in_use, &expect, true)) {
			s = &slots[i];
			int used = atomic_load(&slots_used);
			while (used < i + 1 && !atomic_compare_exchange_weak(&slots_used, &used, i + 1))
				;
		}
	}
	if (!s)
		return NULL;
	atomic_store_explicit(&s->tid, (int)syscall(SYS_gettid), memory_order_relaxed);
	if (exit_key != (pthread_key_t)-1)
		pthread_setspecific(exit_key, s);
	my_slot = s;
	return s;
}

void watchdog_wait_begin(const char *op, int fd, int gpu, const char *what)
{
	if (my_depth++ > 0)
		return;
	struct wd_slot *s = slot_get();
	if (!s)
		return;
	atomic_store_explicit(&s->op, op, memory_order_relaxed);
	atomic_store_explicit(&s->what, what, memory_order_relaxed);
	atomic_store_explicit(&s->fd, fd >= 0 ? fd : -1, memory_order_relaxed);
	atomic_store_explicit(&s->ufs, fd == WATCHDOG_USERSPACE_FS, memory_order_relaxed);
	atomic_store_explicit(&s->gpu, gpu, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
	/* Release: the watchdog that sees the time sees the fields. */
	atomic_store_explicit(&s->since, ocf_now_ns(), memory_order_release);
}

void watchdog_wait_end(void)
{
	if (my_depth <= 0 || --my_depth > 0)
		return;
	if (my_slot)
		atomic_store_explicit(&my_slot->since, 0, memory_order_release);
}

/* ------------------------------------------------------------ thread */

static uint64_t limit_ns(void)
{
	return (uint64_t)OCF_EFF(OCF_K_EXEC_WAIT_WATCHDOG_S) * 1000000000ull;
}

static void scan(uint64_t limit)
{
	uint64_t now = ocf_now_ns();
	int used = atomic_load(&slots_used);
	for (int i = 0; i < used; i++) {
		struct wd_slot *s = &slots[i];
		uint64_t since = atomic_load_explicit(&s->since, memory_order_acquire);
		if (!since || now < since || now - since < limit)
			continue;
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
		if (seq == s->logged_seq)
			continue;
		const char *op = atomic_load_explicit(&s->op, memory_order_relaxed);
		const char *what = atomic_load_explicit(&s->what, memory_order_relaxed);
		int fd = atomic_load_explicit(&s->fd, memory_order_relaxed);
		int ufs = atomic_load_explicit(&s->ufs, memory_order_relaxed);
		int gpu = atomic_load_explicit(&s->gpu, memory_order_relaxed);
		int tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
		/* The same wait still: not a slot reused meanwhile. */
		if (atomic_load_explicit(&s->since, memory_order_acquire) != since ||
		    atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
			continue;
		s->logged_seq = seq;
		char file[320] = "none";
		if (ufs) {
			snprintf(file, sizeof(file), "a userspace file system handle");
		} else if (fd >= 0) {
			char link[64], path[256];
			snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
			ssize_t n = readlink(link, path, sizeof(path) - 1);
			path[n > 0 ? n : 0] = '\0';
			snprintf(file, sizeof(file), "%s (fd %d)", n > 0 ? path : "?", fd);
		}
		char gpus[16] = "none";
		if (gpu >= 0)
			snprintf(gpus, sizeof(gpus), "%d", gpu);
		log_error("watchdog: %s has been waiting %.0f s for %s (file %s, GPU %s, thread %d)", op ? op : "I/O",
			  (double)(now - since) / 1e9, what ? what : "?", file, gpus, tid);
	}
}

static void wd_tick(void)
{
	uint64_t limit = limit_ns();
	if (limit)
		scan(limit);
}

static struct ocf_ticker wd_ticker = OCF_TICKER_INIT(wd_tick);

void watchdog_start(void)
{
	if (OCF_EFF(OCF_K_EXEC_WAIT_WATCHDOG_S) != 0 && ticker_start(&wd_ticker) != 0)
		log_warn("watchdog thread not started: long waits are not logged");
}

void watchdog_stop(void) { ticker_stop(&wd_ticker); }
