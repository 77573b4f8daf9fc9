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
 * each, and spend a third more CPU per byte doing it (docs/benchmarks.md,
 * nvidia-h200-x2).  So the processes that fill windows at once divide a
 * number of fillers for the host (OPENCUFILE_READAHEAD_HOST_FILLERS, 8):
 * with k of them active, each window of each fills with at most
 * max(1, fillers / k) helpers; a process alone keeps no bound.
 *
 * How processes see each other: a table of HS_SLOTS slots in a file of
 * the user's own in /dev/shm (OPENCUFILE_SHM_DIR), mapped shared.  A
 * process takes a slot (its pid, by compare-and-swap) the first time it
 * fills and, at most every HS_PERIOD_NS while it fills, stamps the slot
 * "active until now + HS_ACTIVE_NS" and counts the slots active now.  No
 * lock: every word is an atomic of its own; the worst a torn view can do
 * is count a process one period too long or too short.  A process gives
 * its slot back at driver close; one that died keeps it until its stamp
 * has been stale for HS_RECLAIM_NS, when another may take it over.
 *
 * What cannot be trusted: the file may be made by anyone who can write the
 * directory.  It is opened without following links, used only if it is a
 * regular file of this user writable by no one else, and only if its
 * header is ours (magic and layout); otherwise, or where the directory is
 * missing (a container without /dev/shm), each process counts itself
 * alone, which is the behaviour without sharing.  A stamp far in the
 * future (a clock of another time namespace, a scribble) is not counted.
 * A process of this user that truncates the file under a mapping would
 * make the next stamp fault: the file's name carries its layout's version
 * so that no build of the library does so.
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

#include "internal.h"
#include "log.h"

#define HS_MAGIC 0x6f63662d66696c31ull /* "ocf-fil1" */
#define HS_VERSION 1u
#define HS_SLOTS 64
/* A process restamps and recounts at most this often. */
#define HS_PERIOD_NS 5000000ull
/* A process counts as filling for this long after its last stamp
 * (OPENCUFILE_HOST_SHARE_ACTIVE_MS). */
#define HS_ACTIVE_NS 200000000ull
/* A slot whose stamp is this old may be taken over (its process died
 * without giving it back). */
#define HS_RECLAIM_NS 10000000000ull
#define HS_FILLERS_DEFAULT 8

struct hs_slot {
	_Atomic int32_t pid;
	int32_t unused;
	_Atomic uint64_t until_ns;
	char pad[48];
};

struct hs_table {
	_Atomic uint64_t magic;
	_Atomic uint32_t version;
	_Atomic uint32_t nslots;
	char pad[48];
	struct hs_slot slot[HS_SLOTS];
};

_Static_assert(sizeof(struct hs_slot) == 64, "one cache line a slot");

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
/* 0: not tried since the driver opened; 1: mapped; -1: off. */
static _Atomic int state;
static struct hs_table *table;
static size_t table_len;
static int fillers;
static uint64_t active_ns;
/* This process's slot and the pid that took it (a forked child has
 * another pid and takes its own). */
static _Atomic int my_slot = -1;
static _Atomic int32_t my_pid;
static _Atomic uint64_t next_ns;
static _Atomic int cached_bound;
static _Atomic int last_peers;

static bool table_usable(int fd, struct stat *st)
{
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 022))
		return false;
	if ((size_t)st->st_size < table_len && ftruncate(fd, (off_t)table_len) != 0)
		return false;
	return fstat(fd, st) == 0 && (size_t)st->st_size >= table_len;
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
	const char *dir = ocf_getenv("OPENCUFILE_SHM_DIR");
	char path[512];
	table_len = OCF_ALIGN_UP(sizeof(struct hs_table), 4096);
	snprintf(path, sizeof(path), "%s/opencufile-readahead-v%u-%u", dir && *dir ? dir : "/dev/shm", HS_VERSION,
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
			if (atomic_compare_exchange_strong(&t->magic, &zero, HS_MAGIC)) {
				atomic_store(&t->version, HS_VERSION);
				atomic_store(&t->nslots, HS_SLOTS);
			}
			/* A table another process is setting up this instant
			 * shows its magic before its layout: that process
			 * counts itself alone until the driver opens again. */
			if (atomic_load(&t->magic) == HS_MAGIC && atomic_load(&t->version) == HS_VERSION &&
			    atomic_load(&t->nslots) == HS_SLOTS) {
				table = t;
				s = 1;
				log_info("read-ahead fillers shared with the other processes of %s: %d for the host", path,
					 fillers);
			} else {
				munmap(m, table_len);
				log_info("read-ahead fillers not shared with other processes: %s has another layout", path);
			}
		}
	}
	if (fd >= 0)
		close(fd);
	atomic_store_explicit(&state, s, memory_order_release);
	pthread_mutex_unlock(&map_lock);
	return s > 0;
}

/* This process's slot, taken if it has none (or lost it: a forked child,
 * or a slot taken over while this process was idle for HS_RECLAIM_NS). */
static struct hs_slot *own_slot(uint64_t now)
{
	int32_t me = (int32_t)getpid();
	int i = atomic_load(&my_slot);
	if (i >= 0 && atomic_load(&my_pid) == me && atomic_load(&table->slot[i].pid) == me)
		return &table->slot[i];
	for (int k = 0; k < HS_SLOTS; k++) {
		struct hs_slot *sl = &table->slot[k];
		int32_t p = atomic_load(&sl->pid);
		uint64_t u = atomic_load(&sl->until_ns);
		bool free_slot = p == 0 || (u + HS_RECLAIM_NS < now && u < now);
		if (free_slot && atomic_compare_exchange_strong(&sl->pid, &p, me)) {
			atomic_store(&my_slot, k);
			atomic_store(&my_pid, me);
			return sl;
		}
	}
	return NULL; /* every slot taken: this process counts, uncounted */
}

static int count_active(uint64_t now)
{
	int n = 0;
	for (int k = 0; k < HS_SLOTS; k++) {
		struct hs_slot *sl = &table->slot[k];
		uint64_t u = atomic_load_explicit(&sl->until_ns, memory_order_relaxed);
		if (atomic_load_explicit(&sl->pid, memory_order_relaxed) != 0 && u > now && u - now <= 2 * active_ns)
			n++;
	}
	return n;
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
	struct hs_slot *mine = own_slot(now);
	if (mine)
		atomic_store(&mine->until_ns, now + active_ns);
	int peers = count_active(now) + (mine ? 0 : 1);
	int bound = peers <= 1 ? 0 : OCF_MAX(1, fillers / peers);
	atomic_store(&last_peers, peers);
	atomic_store(&cached_bound, bound);
	return bound;
}

void hs_start(void)
{
	size_t f = ocf_env_num("OPENCUFILE_READAHEAD_HOST_FILLERS", HS_FILLERS_DEFAULT);
	fillers = (int)OCF_MIN(f, (size_t)1024);
	active_ns = (uint64_t)OCF_MIN(ocf_env_num("OPENCUFILE_HOST_SHARE_ACTIVE_MS", HS_ACTIVE_NS / 1000000),
				      (size_t)3600000) *
		    1000000ull;
	if (!active_ns)
		active_ns = HS_ACTIVE_NS;
	atomic_store(&next_ns, 0);
	atomic_store(&cached_bound, 0);
	atomic_store(&last_peers, 0);
}

void hs_stop(void)
{
	pthread_mutex_lock(&map_lock);
	if (table) {
		int i = atomic_load(&my_slot);
		int32_t me = (int32_t)getpid();
		if (i >= 0 && atomic_load(&my_pid) == me) {
			atomic_store(&table->slot[i].until_ns, 0);
			atomic_compare_exchange_strong(&table->slot[i].pid, &me, 0);
		}
		munmap(table, table_len);
		table = NULL;
	}
	atomic_store(&my_slot, -1);
	atomic_store(&state, 0);
	pthread_mutex_unlock(&map_lock);
}

#ifdef OCF_FAULT_INJECTION
#include "fault.h"
OCF_EXPORT int ocf_fault_host_share_peers(bool refresh)
{
	if (refresh) {
		atomic_store(&next_ns, 0);
		hs_fill_bound();
	}
	return atomic_load(&state) < 0 ? -1 : atomic_load(&last_peers);
}
#endif
