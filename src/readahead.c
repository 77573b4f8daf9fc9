/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readahead.c - the next bytes of a file that one caller reads in order,
 * read into staging by the engine's helpers before the caller asks for
 * them.
 *
 * DESIGN (docs/architecture.md, "Read-ahead for one sequential reader")
 * A caller that reads a file in order, a request of a few MiB at a time,
 * cannot go faster than one thread copies the page cache (about 9 GB/s on
 * the H200 machine): helpers woken for each call join too late to share a
 * request of that size.  Here they work before the call.  A handle follows
 * up to RA_STREAMS streams of reads (threads reading their own regions of
 * one handle in order).  When a stream's second read in a row starts where
 * the one before ended, and fewer than RA_CALLERS_MAX callers are busy, the
 * handle opens a *window* for it: staging buffers
 * of lanes taken from the GPU's pool without waiting (pool_try_get), each
 * queued for the next chunk of the file after the request, and an engine
 * task (engine_task_post) whose helpers fill them, as many at once as
 * there are buffers queued (at most OPENCUFILE_READAHEAD_FILLERS when set:
 * post_fills).  A later read that starts where the window
 * starts is served from the filled buffers: one host-to-device copy per
 * buffer it touches, on the first lane's stream, then one wait; a buffer
 * the caller needs that no helper has started is filled by the caller
 * itself, so the window is never slower than the caller alone.  Buffers
 * the read used up are queued again for the chunks after the window's end.
 *
 * Bytes read ahead are a copy of the file at the time of the fill; a write
 * after that must not be hidden.  Two signals, recorded by a fill before it
 * reads and compared by a read when it starts: (1) an inotify watch on the
 * window's file, whose IN_MODIFY event the kernel queues in the writer's
 * own call, after the bytes are in place (write, pwrite, io_uring,
 * splice, copy_file_range, truncate, fallocate; each event counts one
 * change); (2) fstat's size and times, which every write updates when it
 * begins, Linux AIO included (which queues no event).  A write that ended
 * before the read began is therefore seen, except an AIO write in flight
 * when the fill began whose bytes landed after the fill read them.  Stores
 * through a writable shared mapping raise no event; a store to a clean
 * page faults and updates the times (the kernel write-protects clean pages
 * of shared mappings), a store to a dirty page changes nothing visible.
 * So (3) a fill reads nothing of a range that has a dirty page (cachestat,
 * after the stamp, before the read: fill_slot), and a window opens only
 * where the bytes it would read first are clean (clean_ahead).  A store
 * after that check is to a clean page, or to one a store or write after
 * the stamp dirtied: either changed the times.  Without cachestat (before
 * Linux 6.5) the third signal is missing and gdscheck says so; tmpfs keeps
 * no dirty state, so its files get no windows (handle.c).  Where the watch
 * cannot be made (no /proc, no inotify, the watch limit), no window opens.
 *
 * A window is closed - its fills waited for, its lanes given back - when a
 * read at its start finds RA_CALLERS_MAX callers busy or cannot be served,
 * the file changed, a fill failed or came back short, the handle goes, no
 * read came for a second (the ticker), or a thread waits for a lane of the
 * pool (ra_reclaim); one no read came for in RA_STALE_NS gives way to a new
 * one.  At most RA_ACTIVE_MAX windows are open, process-wide.
 */
#define _GNU_SOURCE
#include "readahead.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cuda_loader.h"
#include "engine.h"
#include "fileio.h"
#include "gpu.h"
#include "handle.h"
#include "hostshare.h"
#include "internal.h"
#include "job.h"
#include "log.h"
#include "profile.h"
#include "ticker.h"

#define RA_LANES_MAX 6
#define RA_SLOTS_MAX (RA_LANES_MAX * OCF_LANE_DEPTH)
/* Lanes of a window opened while other callers are busy. */
#define RA_LANES_SHARED 2
/* Streams (and windows) followed per handle, and windows open at once,
 * process-wide. */
#define RA_STREAMS 4
#define RA_ACTIVE_MAX 4
/* Windows open and stay open only while fewer callers than this are busy:
 * with more, their own reads keep the CPUs and the bus busy. */
#define RA_CALLERS_MAX 4
/* A window no read came for in this long may be closed for a new one. */
#define RA_STALE_NS 50000000ull
/* Requests of this size or more, and at most RA_MAX_REQUEST. */
#define RA_MIN_REQUEST (128u * 1024)
#define RA_MAX_REQUEST (16u << 20)
/* A window holds at least this much, and four requests where it can. */
#define RA_WINDOW_MIN (8u << 20)
/* A window no read came for in this long is closed by the ticker. */
#define RA_IDLE_NS 1000000000ull
/* A caller spins this long for a buffer being filled before it sleeps. */
#define RA_SPIN_NS 20000

/* Helpers filling one window at once (OPENCUFILE_READAHEAD_FILLERS; 0: one
 * per queued buffer, or the share of the host's fillers while other
 * processes fill too: hostshare.c).  Set by ra_start. */
static int fill_max;

/* The bound on one window's helpers now: fill_max where set, else the
 * process's share of the host's (0: none). */
static int fill_bound(void)
{
	return fill_max > 0 ? fill_max : hs_fill_bound();
}

enum { S_EMPTY, S_QUEUED, S_FILLING, S_READY };

/* What fstat says of the file: a write changes its times (or its size)
 * when it begins, through any path - also Linux AIO, which queues no
 * inotify event. */
struct stamp {
	off_t size;
	struct timespec mtime, ctime;
};

static bool stamp_of(int fd, struct stamp *st)
{
	struct stat sb;
	if (fstat(fd, &sb) != 0)
		return false;
	*st = (struct stamp){.size = sb.st_size, .mtime = sb.st_mtim, .ctime = sb.st_ctim};
	return true;
}

static bool stamp_same(const struct stamp *a, const struct stamp *b)
{
	return a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec && a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* now - t > ns, for times read on different threads (t may be later). */
static bool older_than(uint64_t now, uint64_t t, uint64_t ns)
{
	return (int64_t)(now - t) > (int64_t)ns;
}

struct ra_slot {
	struct ocf_slot *st; /* a held lane's staging buffer */
	/* Set by the window's owner before the slot is queued (release);
	 * read by the filler after it claimed the slot (acquire). */
	off_t off;
	size_t len;
	/* Set by the filler before the slot is marked ready. */
	ssize_t got;	    /* bytes read, or -errno */
	uint64_t gen;	    /* the file's change count before the fill read */
	struct stamp stamp; /* the file's size and times before the fill read */
	_Atomic int state;
};

/* One window: a stream of reads in order, its lanes and buffers.  Its
 * owner's lock protects everything but the atomics and the job. */
struct ra_win {
	struct ocf_handle *h;
	struct ocf_ra *owner; /* the handle's state */
	bool active;	      /* open: lanes held */
	bool busy;	      /* a read is being served from it (lock not held) */
	bool lane_bad;	      /* a copy failed: the lanes are discarded */
	struct ocf_pool *pool;
	struct ocf_lane *lanes[RA_LANES_MAX];
	int nlanes;
	struct ra_slot slots[RA_SLOTS_MAX];
	int nslots;
	_Atomic int head; /* the slot holding serve_off (fillers read it as a hint) */
	off_t serve_off;  /* the next byte a sequential read asks for */
	off_t fill_end;	  /* the window's end: the next byte to queue */
	off_t size;	  /* the file's size when the window opened */
	int wd;		  /* its inotify watch */
	uint64_t last_ns;
	struct ocf_job job;	 /* the fills: an engine task */
	_Atomic uint32_t filled; /* futex word: bumped at the end of each fill */
	/* Helpers asked for and not yet started, and helpers filling: one
	 * count, reserved before a helper is asked for or goes on, so that it
	 * never passes the bound (post_fills, fill_task); a bound that shrank
	 * (hostshare.c) is passed until helpers above it find no queued slot
	 * and give their places up. */
	_Atomic int helpers;
	_Atomic int filling; /* helpers in fill_slot now (fill_peak) */
	_Atomic uint32_t sleepers;
	struct ra_win *act_next; /* on the list of open windows (act_lock) */
};

/* A handle's read-ahead: where its recent reads ended (a stream each), and
 * its windows. */
struct ocf_ra {
	struct ocf_handle *h;
	pthread_mutex_t lock; /* everything here and in the windows but atomics */
	struct {
		off_t next_off; /* where the stream's last read ended (-1: none) */
		off_t dirty_end; /* no window for reads before this: dirty pages */
		int streak;	/* reads in a row that began where the one before ended */
		uint64_t used;	/* when it last matched a read (for replacement) */
	} det[RA_STREAMS];
	struct ra_win win[RA_STREAMS];
	_Atomic int nactive; /* windows open (read without the lock as a hint) */
};

static atomic_ulong served;
/* The most helpers seen filling one window's slots at once. */
static atomic_int fill_peak;

#ifdef OCF_FAULT_INJECTION
#include "fault.h"
/* fault.h's test controls: defined here, where the counts are. */
OCF_EXPORT unsigned long ocf_fault_ra_served(void)
{
	return atomic_load_explicit(&served, memory_order_relaxed);
}

OCF_EXPORT int ocf_fault_ra_fill_peak(void)
{
	return atomic_load_explicit(&fill_peak, memory_order_relaxed);
}

OCF_EXPORT void ocf_fault_ra_fill_peak_reset(void)
{
	atomic_store_explicit(&fill_peak, 0, memory_order_relaxed);
}
#endif

/* ------------------------------------------------------- the file's changes */

/* ino_lock protects ino_fd, ino_changes and watches[]. */
static pthread_mutex_t ino_lock = PTHREAD_MUTEX_INITIALIZER;
static int ino_fd = -1; /* -2: cannot be had */
static uint64_t ino_changes = 1;
static struct {
	int wd, refs;
} watches[RA_ACTIVE_MAX];

/* Reads the queued events: every one but IN_IGNORED (a watch removed)
 * counts a change, an overflow too.  A descriptor that can no longer be
 * read counts a change at every call, so no window is served again. */
static uint64_t ino_drain_locked(void)
{
	if (ino_fd < 0)
		return ++ino_changes;
	for (;;) {
		char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
		ssize_t n = read(ino_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			ino_changes++;
			break;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (!(ev->mask & IN_IGNORED))
				ino_changes++;
			p += sizeof(*ev) + ev->len;
		}
	}
	return ino_changes;
}

static uint64_t file_changes(void)
{
	pthread_mutex_lock(&ino_lock);
	uint64_t c = ino_drain_locked();
	pthread_mutex_unlock(&ino_lock);
	return c;
}

/* Watches the file of descriptor fd: its watch descriptor, or -1. */
static int watch_file(int fd)
{
	pthread_mutex_lock(&ino_lock);
	if (ino_fd == -1) {
		ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (ino_fd < 0) {
			log_info("read-ahead off: inotify_init1: %s", strerror(errno));
			ino_fd = -2;
		}
	}
	int wd = -1;
	if (ino_fd >= 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		wd = inotify_add_watch(ino_fd, path, IN_MODIFY);
		if (wd < 0)
			log_debug("read-ahead: no watch on descriptor %d: %s", fd, strerror(errno));
	}
	if (wd >= 0) {
		int free_i = -1, i;
		for (i = 0; i < RA_ACTIVE_MAX; i++) {
			if (watches[i].refs && watches[i].wd == wd)
				break;
			if (!watches[i].refs && free_i < 0)
				free_i = i;
		}
		if (i < RA_ACTIVE_MAX) {
			watches[i].refs++;
		} else if (free_i >= 0) {
			watches[free_i].wd = wd;
			watches[free_i].refs = 1;
		} else {
			wd = -1; /* cannot happen: one watch per open window */
		}
	}
	pthread_mutex_unlock(&ino_lock);
	return wd;
}

static void unwatch_file(int wd)
{
	pthread_mutex_lock(&ino_lock);
	for (int i = 0; i < RA_ACTIVE_MAX; i++) {
		if (watches[i].refs && watches[i].wd == wd) {
			if (--watches[i].refs == 0 && ino_fd >= 0)
				inotify_rm_watch(ino_fd, wd);
			break;
		}
	}
	pthread_mutex_unlock(&ino_lock);
}

/* ------------------------------------------------------------------ fills */

static char *slot_data(const struct ra_win *ra, const struct ra_slot *s)
{
	return s->st->buf + fio_stage_skew(ra->h, s->off);
}

static bool claim_slot(struct ra_slot *s)
{
	int expect = S_QUEUED;
	return atomic_compare_exchange_strong(&s->state, &expect, S_FILLING);
}

/* Fills a claimed slot. */
static void fill_slot(struct ra_win *ra, struct ra_slot *s)
{
	s->gen = file_changes();
	ssize_t got = stamp_of(ra->h->fd, &s->stamp) ? 0 : -errno;
	/* After the stamp, before the read: a range with a dirty page is not
	 * read ahead (a store to a dirty page through a shared mapping changes
	 * nothing the stamp or the watch sees).  Clean pages are write-
	 * protected, so that a store to one after this updates the times the
	 * stamp holds. */
	if (got == 0 && fio_range_dirty(ra->h->fd, s->off, s->len) == 1)
		got = -EAGAIN;
	if (got == 0)
		got = fio_read_staged(ra->h, s->st, s->off, s->len);
	if (got > 0)
		fio_flush_before_copy(slot_data(ra, s), (size_t)got, INT_MAX);
	s->got = got;
	atomic_store(&s->state, S_READY); /* seq_cst: before the count below */
	atomic_fetch_add(&ra->filled, 1);
	if (atomic_load(&ra->sleepers))
		ocf_futex_wake(&ra->filled, INT_MAX);
}

/* Claims and fills the queued slot nearest the window's head; false when
 * none is queued. */
static bool fill_next(struct ra_win *ra)
{
	int n = ra->nslots, head = atomic_load_explicit(&ra->head, memory_order_relaxed);
	for (int k = 0; k < n; k++) {
		struct ra_slot *s = &ra->slots[(head + k) % n];
		if (claim_slot(s)) {
			fill_slot(ra, s);
			return true;
		}
	}
	return false;
}

static bool any_queued(struct ra_win *ra)
{
	for (int k = 0; k < ra->nslots; k++)
		if (atomic_load(&ra->slots[k].state) == S_QUEUED)
			return true;
	return false;
}

/* Reserves up to `want` places among the window's helpers (fill_bound
 * bounds them when it is set); returns how many it got. */
static int reserve_helpers(struct ra_win *ra, int want)
{
	int bound = fill_bound();
	if (bound <= 0) {
		atomic_fetch_add(&ra->helpers, want);
		return want;
	}
	int cur = atomic_load(&ra->helpers), n;
	do {
		n = OCF_MIN(want, bound - cur);
		if (n <= 0)
			return 0;
	} while (!atomic_compare_exchange_weak(&ra->helpers, &cur, cur + n));
	return n;
}

/* fill_next on a helper, counting the helpers filling at once. */
static bool helper_fill_next(struct ra_win *ra)
{
	int now = atomic_fetch_add_explicit(&ra->filling, 1, memory_order_relaxed) + 1;
	int peak = atomic_load_explicit(&fill_peak, memory_order_relaxed);
	while (now > peak &&
	       !atomic_compare_exchange_weak_explicit(&fill_peak, &peak, now, memory_order_relaxed, memory_order_relaxed))
		;
	bool r = fill_next(ra);
	atomic_fetch_sub_explicit(&ra->filling, 1, memory_order_relaxed);
	return r;
}

/* The engine task: fill queued slots, nearest first, until none is left.
 * A slot queued while every place was taken got no helper of its own
 * (post_fills): a helper looks once more after it gives its place up
 * (seq_cst on both sides) and goes on if it gets a place back; if another
 * took it, that one is asked for or filling and will look in turn, so no
 * queued slot is left to the caller while a helper could have taken it. */
static void fill_task(struct ocf_job *job)
{
	struct ra_win *ra = (struct ra_win *)((char *)job - offsetof(struct ra_win, job));
	/* Counted already: post_fills reserved this helper's place. */
	for (;;) {
		if (helper_fill_next(ra))
			continue;
		atomic_fetch_sub(&ra->helpers, 1);
		if (!any_queued(ra) || reserve_helpers(ra, 1) == 0)
			return;
	}
}

/* Asks the engine for helpers for `queued` newly queued slots, no more than
 * keep fill_bound() filling at once: page-cache copies are bound by memory
 * bandwidth, and more threads copying at once only make each slower and
 * spend more CPU per byte.  False when no helper could be asked for and
 * none is counted (asked for or filling) that will take the slots. */
static bool post_fills(struct ra_win *ra, int queued)
{
	int n = reserve_helpers(ra, queued);
	if (n == 0)
		return atomic_load(&ra->helpers) > 0;
	if (engine_task_post(&ra->job, n))
		return true;
	atomic_fetch_sub(&ra->helpers, n);
	return false;
}

/* Waits until slot s is filled, filling it here if no helper has begun.
 * False when the slot holds nothing (the window ended there). */
static bool wait_slot(struct ra_win *ra, struct ra_slot *s)
{
	uint64_t t0 = 0;
	for (;;) {
		int st = atomic_load(&s->state);
		if (st == S_READY)
			return true;
		if (st == S_EMPTY)
			return false;
		if (st == S_QUEUED) {
			if (claim_slot(s))
				fill_slot(ra, s);
			continue;
		}
		if (!t0)
			t0 = ocf_now_ns();
		if (ocf_now_ns() - t0 < RA_SPIN_NS) {
			ocf_cpu_relax();
			continue;
		}
		uint32_t v = atomic_load(&ra->filled);
		atomic_fetch_add(&ra->sleepers, 1); /* seq_cst: then the load below */
		if (atomic_load(&s->state) == S_FILLING)
			ocf_futex_wait(&ra->filled, v, 10000000L);
		atomic_fetch_sub(&ra->sleepers, 1);
	}
}

/* Queues slot s for the next chunk after the window's end; false at end
 * of file (the slot stays empty). */
static bool queue_slot(struct ra_win *ra, struct ra_slot *s)
{
	if (ra->fill_end >= ra->size) {
		atomic_store(&s->state, S_EMPTY);
		return false;
	}
	s->off = ra->fill_end;
	s->len = (size_t)OCF_MIN((off_t)s->st->chunk, ra->size - ra->fill_end);
	s->got = 0;
	ra->fill_end += (off_t)s->len;
	atomic_store(&s->state, S_QUEUED);
	return true;
}

/* --------------------------------------------------------------- windows */

/* act_lock protects act_list and act_count.  Order: a window's lock, then
 * act_lock; the ticker and ra_reclaim, which hold act_lock first, only try
 * a window's lock. */
static pthread_mutex_t act_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ra_win *act_list;
static int act_count;

static void ra_tick(void);
static struct ocf_ticker ticker = OCF_TICKER_INIT(ra_tick);

/* Closes window ra (its owner's lock held, no read being served from it). */
static void close_window(struct ra_win *ra, bool act_held)
{
	if (!ra->active)
		return;
	atomic_fetch_sub(&ra->owner->nactive, 1);
	__atomic_fetch_sub(&ra->h->ra_windows, 1, __ATOMIC_RELAXED);
	engine_task_quiesce(&ra->job); /* no fill runs after this */
	atomic_store(&ra->helpers, 0); /* those asked for that never came */
	for (int i = 0; i < ra->nlanes; i++) {
		if (ra->lane_bad)
			pool_discard(ra->lanes[i]);
		else
			pool_put(ra->lanes[i]);
		ra->lanes[i] = NULL;
	}
	ra->nlanes = ra->nslots = 0;
	ra->lane_bad = false;
	if (ra->wd >= 0)
		unwatch_file(ra->wd);
	ra->wd = -1;
	if (!act_held)
		pthread_mutex_lock(&act_lock);
	for (struct ra_win **pp = &act_list; *pp; pp = &(*pp)->act_next) {
		if (*pp == ra) {
			*pp = ra->act_next;
			act_count--;
			break;
		}
	}
	if (!act_held)
		pthread_mutex_unlock(&act_lock);
	__atomic_store_n(&ra->active, false, __ATOMIC_RELAXED);
}

static void close_where(bool (*pick)(struct ra_win *ra, const void *arg), const void *arg);

static bool stale(struct ra_win *ra, const void *arg)
{
	return older_than(*(const uint64_t *)arg, ra->last_ns, RA_STALE_NS);
}

/* Whether window ra (lanes taken) holds a read of len bytes and one chunk
 * more: a window that cannot would only make its caller wait. */
static bool window_fits(const struct ra_win *ra, size_t len)
{
	size_t chunk = pool_chunk(ra->pool);
	return (size_t)ra->nslots * chunk >= len + chunk;
}

/* Opens window ra (closed) after a read of len bytes that ends at `from`,
 * when lanes and a watch can be had (the owner's lock held); `others`:
 * the callers busy besides this one. */
static void open_window(struct ra_win *ra, const struct ocf_io *io, off_t from, int others)
{
	struct ocf_pool *pool = &io->t.gpu->pool;
	size_t chunk = pool_chunk(pool);
	struct stat st;
	if (!chunk || fstat(ra->h->fd, &st) != 0 || !S_ISREG(st.st_mode) || from >= st.st_size)
		return;
	/* Room: other handles' windows no read came for lately give way
	 * (this handle's are closed by ra_read, which holds their lock). */
	pthread_mutex_lock(&act_lock);
	bool full = act_count >= RA_ACTIVE_MAX;
	pthread_mutex_unlock(&act_lock);
	if (full) {
		uint64_t now = ocf_now_ns();
		close_where(stale, &now);
	}
	pthread_mutex_lock(&act_lock);
	bool room = act_count < RA_ACTIVE_MAX;
	if (room) {
		act_count++; /* reserved; given back below if the window cannot open */
		ra->act_next = act_list;
		act_list = ra;
	}
	pthread_mutex_unlock(&act_lock);
	if (!room)
		return;
	__atomic_store_n(&ra->active, true, __ATOMIC_RELAXED); /* close_window undoes the reservation */
	atomic_fetch_add(&ra->owner->nactive, 1);
	__atomic_fetch_add(&ra->h->ra_windows, 1, __ATOMIC_RELAXED);
	ra->nlanes = ra->nslots = 0;
	ra->wd = watch_file(ra->h->fd);
	if (ra->wd < 0) {
		close_window(ra, false);
		return;
	}
	size_t want = OCF_MAX((size_t)RA_WINDOW_MIN, 4 * io->len);
	int slots = (int)OCF_MIN((want + chunk - 1) / chunk, (size_t)RA_SLOTS_MAX);
	int lanes = (slots + OCF_LANE_DEPTH - 1) / OCF_LANE_DEPTH;
	if (others > 0) /* the other callers' requests need lanes too */
		lanes = OCF_MIN(lanes, RA_LANES_SHARED);
	/* Never most of the pool: the callers that come need lanes at once. */
	lanes = OCF_MIN(lanes, OCF_MAX(pool_lanes(pool) / 3, 1));
	ra->pool = pool;
	while (ra->nlanes < lanes && pool_try_get(pool, &ra->lanes[ra->nlanes]) == 0)
		ra->nlanes++;
	ra->nslots = 0;
	for (int i = 0; i < ra->nlanes; i++)
		for (int j = 0; j < ra->lanes[i]->depth; j++)
			ra->slots[ra->nslots++].st = &ra->lanes[i]->bufs[j];
	if (!window_fits(ra, io->len)) {
		close_window(ra, false);
		return;
	}
	ra->size = st.st_size;
	ra->serve_off = ra->fill_end = from;
	atomic_store(&ra->head, 0);
	int queued = 0;
	for (int i = 0; i < ra->nslots; i++)
		queued += queue_slot(ra, &ra->slots[i]);
	ra->last_ns = ocf_now_ns();
	/* Without helper threads the caller would fill every buffer itself:
	 * no window. */
	if (!post_fills(ra, queued)) {
		close_window(ra, false);
		return;
	}
	ticker_start(&ticker);
	log_debug("read-ahead: window of %d x %zu KiB from %lld on descriptor %d", ra->nslots, chunk / 1024,
		  (long long)from, ra->h->fd);
}

/* Copies [io->off, +len) from the window to the device (ra->busy set, lock
 * not held; head: the slot holding io->off): io->len, ENGINE_NOT_SERVED (any
 * copies queued before the miss waited for), or an error of a copy. */
static ssize_t serve(struct ra_win *ra, const struct ocf_io *io, int head)
{
	uint64_t now = file_changes();
	struct stamp st;
	if (!stamp_of(ra->h->fd, &st))
		return ENGINE_NOT_SERVED;
	struct ocf_lane *lane = ra->lanes[0];
	CUstream stream = lane->stream;
	size_t at = 0;
	bool queued = false;
	ssize_t ret = (ssize_t)io->len;
	for (int k = 0; at < io->len; k++) {
		if (k >= ra->nslots) {
			ret = ENGINE_NOT_SERVED;
			break;
		}
		struct ra_slot *s = &ra->slots[(head + k) % ra->nslots];
		off_t pos = io->off + (off_t)at;
		if (!wait_slot(ra, s) || s->got < 0 || s->gen != now || !stamp_same(&s->stamp, &st) ||
		    pos < s->off || pos - s->off >= (off_t)s->got) {
			ret = ENGINE_NOT_SERVED;
			break;
		}
		size_t in = (size_t)(pos - s->off);
		size_t n = OCF_MIN(io->len - at, (size_t)s->got - in);
		CUresult r = ocf_cu.MemcpyHtoDAsync(io->t.dev + at, slot_data(ra, s) + in, n, stream);
		if (r != CUDA_SUCCESS) {
			log_error("host to device copy failed: %s", cuda_error_name(r));
			ret = OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
			break;
		}
		queued = true;
		at += n;
	}
	if (!queued)
		return ret;
	/* Also after a miss: the copies queued write the caller's memory
	 * and must be done before the engine's copies of the same bytes. */
	CUevent ev = gpu_lane_event(lane, 0, io->len);
	CUresult r = ocf_cu.EventRecord(ev, stream);
	if (r == CUDA_SUCCESS)
		r = gpu_event_wait(ev, io->len);
	if (r != CUDA_SUCCESS && ocf_cu.StreamSynchronize(stream) != CUDA_SUCCESS)
		ra->lane_bad = true;
	if (r != CUDA_SUCCESS) {
		log_error("host to device copy failed: %s", cuda_error_name(r));
		ra->lane_bad = true;
		return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
	}
	return ret;
}

static struct ocf_ra *ra_create(struct ocf_handle *h);
static void ra_destroy(struct ocf_ra *ra);

/* The handle's state, made at its first device read. */
static struct ocf_ra *ra_of(struct ocf_handle *h)
{
	struct ocf_ra *ra = __atomic_load_n(&h->ra, __ATOMIC_ACQUIRE);
	if (ra || !h->ra_ok)
		return ra;
	struct ocf_ra *mine = ra_create(h);
	if (!mine)
		return NULL;
	if (__atomic_compare_exchange_n(&h->ra, &ra, mine, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Only the winner writes it; the handle's release reads it
		 * once no request uses the handle (handle.c). */
		h->ra_free = ra_destroy;
		return mine;
	}
	ra_destroy(mine);
	return ra;
}

/* The detector of the stream a read at `off` continues, or the least
 * recently used one (reset) when it continues none; *seq: it continues one. */
static int stream_of(struct ocf_ra *ra, off_t off, uint64_t now, bool *seq)
{
	int lru = 0;
	for (int i = 0; i < RA_STREAMS; i++) {
		if (ra->det[i].next_off == off) {
			*seq = true;
			ra->det[i].streak++;
			ra->det[i].used = now;
			return i;
		}
		if (ra->det[i].used < ra->det[lru].used)
			lru = i;
	}
	*seq = false;
	ra->det[lru].streak = 0;
	ra->det[lru].dirty_end = 0;
	ra->det[lru].used = now;
	return lru;
}

/* Whether the bytes a window for stream d would read first, after a read
 * of io->len that ends at `end`, are clean in the page cache (fill_slot:
 * dirty ones are not read ahead).  A dirty range keeps the stream from
 * trying again before its reads pass it, so that a file being written
 * costs one cachestat per window's length, not one per read. */
static bool clean_ahead(struct ocf_ra *owner, int d, const struct ocf_io *io, off_t end)
{
	if (end < owner->det[d].dirty_end)
		return false;
	size_t want = OCF_MAX((size_t)RA_WINDOW_MIN, 4 * io->len);
	int dirty = fio_range_dirty(owner->h->fd, end, want);
	if (dirty < 0) {
		static atomic_bool said;
		if (!atomic_exchange(&said, true))
			log_info("read-ahead: the kernel does not answer cachestat (Linux 6.5): stores through a "
				 "shared mapping into dirty pages are not seen (OPENCUFILE_READAHEAD=off for such files)");
	}
	if (dirty != 1)
		return true;
	owner->det[d].dirty_end = end + (off_t)want;
	log_debug("read-ahead: no window from %lld on descriptor %d: dirty pages", (long long)end, owner->h->fd);
	return false;
}

/* The engine's read hook (engine.h). */
static ssize_t ra_read(const struct ocf_io *io, int others)
{
	if (io->len < RA_MIN_REQUEST || io->len > RA_MAX_REQUEST)
		return ENGINE_NOT_SERVED;
	struct ocf_ra *owner = ra_of(io->h);
	if (!owner)
		return ENGINE_NOT_SERVED;
	/* Many callers: no window can open, and their reads take no lock
	 * here (a stale answer only misses a window or takes the lock). */
	if (others >= RA_CALLERS_MAX && !atomic_load_explicit(&owner->nactive, memory_order_relaxed))
		return ENGINE_NOT_SERVED;
	uint64_t now = ocf_now_ns();
	off_t end = io->off + (off_t)io->len;
	pthread_mutex_lock(&owner->lock);
	struct ra_win *ra = NULL;
	for (int i = 0; i < RA_STREAMS && !ra; i++)
		if (owner->win[i].active && owner->win[i].serve_off == io->off)
			ra = &owner->win[i];
	if (ra && (ra->busy || others >= RA_CALLERS_MAX || end > ra->size || &io->t.gpu->pool != ra->pool ||
		   pool_has_waiters(ra->pool) || !window_fits(ra, io->len))) {
		if (!ra->busy)
			close_window(ra, false);
		ra = NULL;
	}
	if (!ra) {
		bool seq;
		int d = stream_of(owner, io->off, now, &seq);
		owner->det[d].next_off = end;
		if (seq && owner->det[d].streak >= 1 && others < RA_CALLERS_MAX &&
		    !pool_has_waiters(&io->t.gpu->pool) && clean_ahead(owner, d, io, end)) {
			/* A closed window of this handle, or its stalest one. */
			struct ra_win *w = NULL;
			for (int i = 0; i < RA_STREAMS; i++) {
				struct ra_win *c = &owner->win[i];
				if (c->busy || (c->active && !older_than(now, c->last_ns, RA_STALE_NS)))
					continue;
				if (!w || !c->active || (w->active && c->last_ns < w->last_ns))
					w = c;
			}
			if (w) {
				close_window(w, false);
				open_window(w, io, end, others);
				if (w->active)
					owner->det[d].next_off = -1; /* the window follows it now */
			}
		}
		pthread_mutex_unlock(&owner->lock);
		return ENGINE_NOT_SERVED;
	}
	ra->busy = true;
	int head = atomic_load_explicit(&ra->head, memory_order_relaxed);
	pthread_mutex_unlock(&owner->lock);

	ssize_t r = serve(ra, io, head);

	pthread_mutex_lock(&owner->lock);
	ra->busy = false;
	ra->last_ns = ocf_now_ns();
	if (r == (ssize_t)io->len) {
		atomic_fetch_add_explicit(&served, 1, memory_order_relaxed);
		prof_bytes(io->len);
		ra->serve_off += (off_t)io->len;
		int queued = 0;
		for (int k = 0; k < ra->nslots; k++) {
			struct ra_slot *s = &ra->slots[head];
			if (atomic_load(&s->state) != S_READY || s->off + (off_t)s->len > ra->serve_off)
				break;
			queued += queue_slot(ra, s);
			head = (head + 1) % ra->nslots;
		}
		atomic_store_explicit(&ra->head, head, memory_order_relaxed);
		if (queued)
			post_fills(ra, queued);
	} else {
		close_window(ra, false);
	}
	pthread_mutex_unlock(&owner->lock);
	return r;
}

/* ------------------------------------------------ idle windows, teardown */

/* Closes the open windows that satisfy `pick` and are not in use. */
static void close_where(bool (*pick)(struct ra_win *ra, const void *arg), const void *arg)
{
	pthread_mutex_lock(&act_lock);
	for (struct ra_win *ra = act_list, *next; ra; ra = next) {
		next = ra->act_next;
		if (pthread_mutex_trylock(&ra->owner->lock) != 0)
			continue;
		if (ra->active && !ra->busy && pick(ra, arg))
			close_window(ra, true);
		pthread_mutex_unlock(&ra->owner->lock);
	}
	pthread_mutex_unlock(&act_lock);
}

static bool idle(struct ra_win *ra, const void *arg)
{
	return older_than(*(const uint64_t *)arg, ra->last_ns, RA_IDLE_NS);
}

static void ra_tick(void)
{
	uint64_t now = ocf_now_ns();
	close_where(idle, &now);
}

static bool of_pool(struct ra_win *ra, const void *arg)
{
	return ra->pool == arg;
}

/* A thread must wait for a lane of `pool`: windows not in use give theirs
 * back (gpu.h, pool_set_reclaim). */
static void ra_reclaim(struct ocf_pool *pool)
{
	close_where(of_pool, pool);
}

void ra_start(void)
{
	bool on = config_env(OCF_E_READAHEAD) != 0;
	fill_max = OCF_MIN(ocf_cfg.tuning.readahead_fillers, RA_SLOTS_MAX);
	hs_start();
	engine_set_read_hook(on ? ra_read : NULL);
	pool_set_reclaim(on ? ra_reclaim : NULL);
}

void ra_stop(void)
{
	engine_set_read_hook(NULL);
	pool_set_reclaim(NULL);
	ticker_stop(&ticker);
	hs_stop();
}

static struct ocf_ra *ra_create(struct ocf_handle *h)
{
	struct ocf_ra *ra = calloc(1, sizeof(*ra));
	if (!ra)
		return NULL;
	ra->h = h;
	pthread_mutex_init(&ra->lock, NULL);
	for (int i = 0; i < RA_STREAMS; i++) {
		ra->det[i].next_off = -1;
		struct ra_win *w = &ra->win[i];
		w->h = h;
		w->owner = ra;
		w->wd = -1;
		pthread_mutex_init(&w->job.lock, NULL);
		pthread_cond_init(&w->job.cv, NULL);
		w->job.task = fill_task;
	}
	return ra;
}

static void ra_destroy(struct ocf_ra *ra)
{
	pthread_mutex_lock(&ra->lock);
	for (int i = 0; i < RA_STREAMS; i++)
		close_window(&ra->win[i], false);
	pthread_mutex_unlock(&ra->lock);
	for (int i = 0; i < RA_STREAMS; i++) {
		pthread_mutex_destroy(&ra->win[i].job.lock);
		pthread_cond_destroy(&ra->win[i].job.cv);
	}
	pthread_mutex_destroy(&ra->lock);
	free(ra);
}
