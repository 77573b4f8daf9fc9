/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostshare.c - the read-ahead fillers of the library's processes on one
 * host, shared out among the processes filling at the same time.
 *
 * DESIGN (docs/architecture.md, "Read-ahead for one sequential reader")
 * A read-ahead window's fills are page-cache copies, bound by the host's
 * memory bandwidth.  One process alone fills with as many helpers as it
 * has buffers queued; two processes that each do so (a model's shards
 * loaded by one process per GPU) copy no faster than with a few helpers
 * each, and spend a third more CPU per byte doing it (docs/history/benchmarks.md,
 * nvidia-h200-x2).  So the processes that fill windows at once divide a
 * number of fillers for the host (OPENCUFILE_READAHEAD_HOST_FILLERS, 8):
 * with k of them active, each window of each fills with at most
 * max(1, fillers / k) helpers; a process alone keeps no bound.
 *
 * How processes see each other: a table of HS_SLOTS slots in a file of
 * the user's own in /dev/shm (OPENCUFILE_SHM_DIR), mapped shared.  A slot
 * is one 64-bit word: a token the process drew at driver open (24 bits,
 * never 0) and the CLOCK_MONOTONIC millisecond until which it counts as
 * filling (40 bits).  Every change is one compare-and-swap of that word,
 * so a slot is taken and stamped at once, stamped only by its owner (the
 * swap expects the owner's token) and given back only by it.  A process
 * takes a slot at its first fill decision (a free one: zero, stale for
 * HS_RECLAIM_MS - its process died without giving it back -, or stamped
 * implausibly far ahead) and, at most every HS_PERIOD_NS while it fills,
 * stamps it HS_ACTIVE_MS ahead (OPENCUFILE_HOST_SHARE_ACTIVE_MS) and counts
 * the slots stamped ahead of now (by at most HS_CAP_MS, whatever the
 * counting process's own setting).  One thread of the process does this at
 * a time (a try-lock; the others use the last count).  A process that
 * finds no free slot counts itself, uncounted by the others; one with
 * OPENCUFILE_READAHEAD_FILLERS set has a fixed bound and stamps nothing.
 *
 * What cannot be trusted: the file may be made by anyone who can write the
 * directory.  It is opened without following links, used only if it is a
 * regular file of this user with one link, writable by no one else, of the
 * table's size (grown only from empty), with our magic (the layout's
 * version is in the name and the magic, which is set by one swap from zero
 * on a new, all-zero table); otherwise, or where the directory is missing
 * (a container without /dev/shm), each process counts itself alone, which
 * is the behaviour without sharing.  A slot holding garbage is at worst
 * counted for HS_CAP_MS and then taken over.  A process of this user that
 * truncates the file under a mapping would make the next stamp fault: the
 * file's name carries its layout's version so that no build of the
 * library does so.
 */
#define _GNU_SOURCE
#include "hostshare.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "internal.h"
#include "log.h"

#define HS_MAGIC 0x6f63662d66696c32ull /* "ocf-fil2" */
#define HS_VERSION 2u
#define HS_SLOTS 64
/* A process restamps and recounts at most this often. */
#define HS_PERIOD_NS 5000000ull
/* A process counts as filling for this long after its last stamp
 * (OPENCUFILE_HOST_SHARE_ACTIVE_MS), at most HS_CAP_MS. */
#define HS_ACTIVE_MS 200ull
#define HS_CAP_MS 3600000ull
/* A slot stale for this long may be taken over (its process died without
 * giving it back). */
#define HS_RECLAIM_MS 10000ull

#define HS_TIME_BITS 40
#define HS_TIME_MASK ((1ull << HS_TIME_BITS) - 1)

struct hs_table {
	_Atomic uint64_t magic;
	char pad[56];
	_Atomic uint64_t slot[HS_SLOTS][8]; /* one word used a cache line */
};

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
/* 0: not tried since the driver opened; 1: mapped; -1: off. */
static _Atomic int state;
static struct hs_table *table;
static size_t table_len;
static int fillers;
static uint64_t active_ms;
/* The stamp and count: one thread at a time (try-lock); my_slot and
 * my_token belong to it. */
static pthread_mutex_t stamp_lock = PTHREAD_MUTEX_INITIALIZER;
static int my_slot = -1;
static uint64_t my_token;
static _Atomic uint64_t next_ns;
static _Atomic int cached_bound;
static _Atomic int last_peers;

static _Atomic uint64_t *slot_word(int k)
{
	return &table->slot[k][0];
}

/* How far ahead of now (ms, 40-bit wrapping) a word is stamped; negative:
 * stale by that much. */
static int64_t ahead_ms(uint64_t w, uint64_t now)
{
	uint64_t d = ((w & HS_TIME_MASK) - (now & HS_TIME_MASK)) & HS_TIME_MASK;
	return d >= (1ull << (HS_TIME_BITS - 1)) ? (int64_t)d - (int64_t)(1ull << HS_TIME_BITS) : (int64_t)d;
}

static bool counted(uint64_t w, uint64_t now)
{
	int64_t a = ahead_ms(w, now);
	return w != 0 && a > 0 && (uint64_t)a <= HS_CAP_MS;
}

static bool takeable(uint64_t w, uint64_t now)
{
	int64_t a = ahead_ms(w, now);
	return w == 0 || (a < 0 && (uint64_t)-a > HS_RECLAIM_MS) || (a > 0 && (uint64_t)a > HS_CAP_MS);
}

static bool table_usable(int fd, struct stat *st)
{
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 022) ||
	    st->st_nlink != 1)
		return false;
	/* Grown only from empty: a file of another size is not a table. */
	if (st->st_size == 0 && ftruncate(fd, (off_t)table_len) != 0)
		return false;
	return fstat(fd, st) == 0 && (size_t)st->st_size == table_len;
}

/* Maps the table (once per driver open); false where sharing is off. */
static bool map_table(void)
{
	int s = atomic_load_explicit(&state, memory_order_acquire);
	if (s)
		return s > 0;
	pthread_mutex_lock(&map_lock);
	if ((s = atomic_load(&state))) {
		pthread_mutex_unlock(&map_lock);
		return s > 0;
	}
	s = -1;
	const char *dir = config_env_text(OCF_E_SHM_DIR);
	char path[512];
	table_len = OCF_ALIGN_UP(sizeof(struct hs_table), 4096);
	snprintf(path, sizeof(path), "%s/opencufile-readahead-v%u-%u", dir, HS_VERSION,
		 (unsigned)geteuid());
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;
	if (fd < 0) {
		log_info("read-ahead fillers not shared with other processes: %s: %s", path, strerror(errno));
	} else if (!table_usable(fd, &st)) {
		log_info("read-ahead fillers not shared with other processes: %s is not a file of this user's alone",
			 path);
	} else {
		void *m = mmap(NULL, table_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			log_info("read-ahead fillers not shared with other processes: mmap %s: %s", path,
				 strerror(errno));
		} else {
			struct hs_table *t = m;
			uint64_t zero = 0;
			/* A new table is all zero: its slots are free the
			 * moment the magic is in place. */
			atomic_compare_exchange_strong(&t->magic, &zero, HS_MAGIC);
			if (atomic_load(&t->magic) == HS_MAGIC) {
				table = t;
				s = 1;
				log_info("read-ahead fillers shared with the other processes of %s: %d for the host", path,
					 fillers);
			} else {
				munmap(m, table_len);
				log_info("read-ahead fillers not shared with other processes: %s is not a table of this "
					 "version",
					 path);
			}
		}
	}
	if (fd >= 0)
		close(fd);
	atomic_store_explicit(&state, s, memory_order_release);
	pthread_mutex_unlock(&map_lock);
	return s > 0;
}

/* Sets this process's slot to `v` if the slot is still ours; false if
 * another process took it over. */
static bool set_if_mine(int k, uint64_t v)
{
	_Atomic uint64_t *w = slot_word(k);
	uint64_t old = atomic_load(w);
	while ((old & ~HS_TIME_MASK) == my_token)
		if (atomic_compare_exchange_weak(w, &old, v))
			return true;
	return false;
}

/* Stamps this process's slot `until`, taking a free one if it has none or
 * lost it (taken over while this process was idle for HS_RECLAIM_MS).
 * False when every slot is taken.  Under stamp_lock. */
static bool stamp(uint64_t now)
{
	uint64_t mine = my_token | ((now + active_ms) & HS_TIME_MASK);
	if (my_slot >= 0) {
		if (set_if_mine(my_slot, mine))
			return true;
		my_slot = -1;
	}
	for (int k = 0; k < HS_SLOTS; k++) {
		_Atomic uint64_t *w = slot_word(k);
		uint64_t old = atomic_load(w);
		if (takeable(old, now) && atomic_compare_exchange_strong(w, &old, mine)) {
			my_slot = k;
			return true;
		}
	}
	return false;
}

static int count_active(uint64_t now)
{
	int n = 0;
	for (int k = 0; k < HS_SLOTS; k++)
		n += counted(atomic_load_explicit(slot_word(k), memory_order_relaxed), now);
	return n;
}

/* Stamps and counts; returns the bound.  Under stamp_lock. */
static int update(uint64_t now_ns)
{
	uint64_t ms = now_ns / 1000000u;
	bool in_table = stamp(ms);
	int peers = count_active(ms) + (in_table ? 0 : 1);
	int bound = peers <= 1 ? 0 : OCF_MAX(1, fillers / peers);
	atomic_store(&last_peers, peers);
	atomic_store(&cached_bound, bound);
	return bound;
}

int hs_fill_bound(void)
{
	if (fillers <= 0)
		return 0;
	uint64_t now = ocf_now_ns(), due = atomic_load_explicit(&next_ns, memory_order_relaxed);
	if (now < due || !atomic_compare_exchange_strong(&next_ns, &due, now + HS_PERIOD_NS))
		return atomic_load_explicit(&cached_bound, memory_order_relaxed);
	if (!map_table())
		return 0;
	if (pthread_mutex_trylock(&stamp_lock) != 0)
		return atomic_load_explicit(&cached_bound, memory_order_relaxed);
	int bound = update(now);
	pthread_mutex_unlock(&stamp_lock);
	return bound;
}

void hs_start(void)
{
	fillers = ocf_cfg.tuning.readahead_host_fillers;
	active_ms = ocf_cfg.tuning.host_share_active_ms;
	if (!active_ms)
		active_ms = HS_ACTIVE_MS;
	/* A token of this open: pid and time mixed (processes of other pid
	 * namespaces may share the directory), never 0. */
	uint64_t x = ((uint64_t)getpid() << 32) ^ ocf_now_ns() ^ (uint64_t)(uintptr_t)&x;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	uint64_t tok = x & ((1ull << (64 - HS_TIME_BITS)) - 1);
	my_token = (tok ? tok : 1) << HS_TIME_BITS;
	my_slot = -1;
	atomic_store(&next_ns, 0);
	atomic_store(&cached_bound, 0);
	atomic_store(&last_peers, 0);
}

void hs_stop(void)
{
	pthread_mutex_lock(&map_lock);
	pthread_mutex_lock(&stamp_lock);
	if (table) {
		if (my_slot >= 0)
			set_if_mine(my_slot, 0); /* given back only if still ours */
		munmap(table, table_len);
	}
	table = NULL;
	my_slot = -1;
	atomic_store(&state, 0);
	pthread_mutex_unlock(&stamp_lock);
	pthread_mutex_unlock(&map_lock);
}

#ifdef OCF_FAULT_INJECTION
#include "fault.h"
OCF_EXPORT int ocf_fault_host_share_peers(bool refresh)
{
	if (refresh && fillers > 0 && map_table()) {
		pthread_mutex_lock(&stamp_lock);
		update(ocf_now_ns());
		pthread_mutex_unlock(&stamp_lock);
	}
	return atomic_load(&state) < 0 ? -1 : atomic_load(&last_peers);
}
#endif
