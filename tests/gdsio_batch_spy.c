/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_batch_spy.c - a preload library for the gdsio batch tests
 * (test_gdsio_batch_modes_verify_data_in_flight.sh).  It sits between
 * gdsio and libcufile, passes cuFileBatchIOSubmit and cuFileBatchIOGetStatus
 * through unchanged, and records what gdsio's own output cannot prove:
 *
 *  - how many batch handles had entries in flight at once, in all and in
 *    one thread, from how many threads, and how many entries one submit
 *    carried;
 *  - whether two entries in flight at once shared buffer bytes or (on one
 *    file handle) file bytes;
 *  - how many neighbouring entries of one submit (i, i + 1) were also
 *    neighbours in the file, in the buffer, or in both (gdsio -R must make
 *    that rare; the contiguous default makes every pair both);
 *  - the style of every GetStatus: "wait" (min_nr = the handle's entries
 *    outstanding, NULL timeout), "poll" (min_nr 0, zero timeout), "timed"
 *    (min_nr = outstanding, a non-zero timeout) or anything else.
 *
 * At exit it writes one line of name=value counters to the file named by
 * GDSIO_BATCH_SPY.  An entry is in flight from just before its submit until
 * a GetStatus returns its event; gdsio's cookies are unique per handle.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cufile.h"

struct entry {
	CUfileBatchHandle_t batch;
	void *cookie;
	CUfileHandle_t fh;
	uintptr_t buf_lo, buf_hi;
	off_t file_lo, file_hi;
};

struct handle {
	CUfileBatchHandle_t batch;
	unsigned outstanding;
	unsigned owner; /* index in threads[] of the thread that submitted it */
};

#define MAX_HANDLES 4096
#define MAX_THREADS 1024

/* lock protects everything below; never held across a libcufile call. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *live;
static size_t nlive, cap;
static struct handle handles[MAX_HANDLES];
static unsigned nhandles, busy_handles;
static pthread_t threads[MAX_THREADS];
static unsigned thread_busy[MAX_THREADS]; /* handles in flight per thread */
static unsigned nthreads, max_thread_busy;
static unsigned long submits, entries, buffer_overlaps, file_overlaps, stray_events;
static unsigned long gs_wait, gs_poll, gs_timed, gs_other;
static unsigned long pairs, file_adjacent, buffer_adjacent, both_adjacent;
static unsigned max_busy_handles, max_live, max_per_submit;

static struct handle *handle_of(CUfileBatchHandle_t b)
{
	for (unsigned i = 0; i < nhandles; i++)
		if (handles[i].batch == b)
			return &handles[i];
	if (nhandles == MAX_HANDLES)
		return NULL;
	handles[nhandles].batch = b;
	return &handles[nhandles++];
}

/* The index of the calling thread in threads[] (the last slot when full). */
static unsigned thread_index(void)
{
	pthread_t me = pthread_self();
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_equal(threads[i], me))
			return i;
	if (nthreads == MAX_THREADS)
		return MAX_THREADS - 1;
	threads[nthreads] = me;
	return nthreads++;
}

static void handle_busy(struct handle *h, int busy)
{
	if (busy) {
		busy_handles++;
		h->owner = thread_index();
		if (++thread_busy[h->owner] > max_thread_busy)
			max_thread_busy = thread_busy[h->owner];
		if (busy_handles > max_busy_handles)
			max_busy_handles = busy_handles;
	} else {
		busy_handles--;
		thread_busy[h->owner]--;
	}
}

/* Adds the n entries of a submit to the live set, counting overlaps with
 * the entries already there.  Returns -1 when out of memory. */
static int add_entries(CUfileBatchHandle_t b, unsigned n, const CUfileIOParams_t *p)
{
	if (nlive + n > cap) {
		size_t c = (nlive + n) * 2;
		struct entry *e = realloc(live, c * sizeof(*e));
		if (!e)
			return -1;
		live = e, cap = c;
	}
	for (unsigned i = 0; i < n; i++) {
		struct entry e = {
		    .batch = b,
		    .cookie = p[i].cookie,
		    .fh = p[i].fh,
		    .buf_lo = (uintptr_t)p[i].u.batch.devPtr_base + (uintptr_t)p[i].u.batch.devPtr_offset,
		    .file_lo = p[i].u.batch.file_offset,
		};
		e.buf_hi = e.buf_lo + p[i].u.batch.size;
		e.file_hi = e.file_lo + (off_t)p[i].u.batch.size;
		for (size_t j = 0; j < nlive; j++) {
			const struct entry *o = &live[j];
			if (e.buf_lo < o->buf_hi && o->buf_lo < e.buf_hi)
				buffer_overlaps++;
			if (e.fh == o->fh && e.file_lo < o->file_hi && o->file_lo < e.file_hi)
				file_overlaps++;
		}
		live[nlive++] = e;
		if (i) {
			const struct entry *prev = &live[nlive - 2];
			int fa = e.fh == prev->fh && prev->file_hi == e.file_lo;
			int ba = prev->buf_hi == e.buf_lo;
			pairs++, file_adjacent += fa, buffer_adjacent += ba, both_adjacent += fa && ba;
		}
	}
	return 0;
}

static void remove_entry(CUfileBatchHandle_t b, void *cookie)
{
	for (size_t j = 0; j < nlive; j++)
		if (live[j].batch == b && live[j].cookie == cookie) {
			live[j] = live[--nlive];
			return;
		}
	stray_events++;
}

CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr, CUfileIOParams_t *iocbp,
				  unsigned flags)
{
	/* Looked up once; threads race to do it, so the pointer is stored and
	 * loaded atomically (every thread finds the same symbol). */
	static __typeof__(cuFileBatchIOSubmit) *real_fn;
	__typeof__(cuFileBatchIOSubmit) *real = __atomic_load_n(&real_fn, __ATOMIC_ACQUIRE);
	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "cuFileBatchIOSubmit");
		__atomic_store_n(&real_fn, real, __ATOMIC_RELEASE);
	}
	/* Counted before the call: a completion may be collected by another
	 * thread before the call returns. */
	pthread_mutex_lock(&lock);
	struct handle *h = handle_of(batch_idp);
	int counted = iocbp && h && add_entries(batch_idp, nr, iocbp) == 0;
	if (counted) {
		if (!h->outstanding && nr)
			handle_busy(h, 1);
		h->outstanding += nr;
		if (nlive > max_live)
			max_live = (unsigned)nlive;
	}
	pthread_mutex_unlock(&lock);
	CUfileError_t e = real(batch_idp, nr, iocbp, flags);
	pthread_mutex_lock(&lock);
	if (counted && e.err) { /* nothing was queued: undo */
		for (unsigned i = 0; i < nr; i++)
			remove_entry(batch_idp, iocbp[i].cookie);
		h->outstanding -= nr;
		if (!h->outstanding && nr)
			handle_busy(h, 0);
	} else if (counted) {
		submits++, entries += nr;
		if (nr > max_per_submit)
			max_per_submit = nr;
	}
	pthread_mutex_unlock(&lock);
	return e;
}

CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr, unsigned *nr,
				     CUfileIOEvents_t *iocbp, struct timespec *timeout)
{
	/* Looked up once; threads race to do it, so the pointer is stored and
	 * loaded atomically (every thread finds the same symbol). */
	static __typeof__(cuFileBatchIOGetStatus) *real_fn;
	__typeof__(cuFileBatchIOGetStatus) *real = __atomic_load_n(&real_fn, __ATOMIC_ACQUIRE);
	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "cuFileBatchIOGetStatus");
		__atomic_store_n(&real_fn, real, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&lock);
	struct handle *h = handle_of(batch_idp);
	unsigned outstanding = h ? h->outstanding : 0;
	pthread_mutex_unlock(&lock);
	int zero = timeout && timeout->tv_sec == 0 && timeout->tv_nsec == 0;
	CUfileError_t e = real(batch_idp, min_nr, nr, iocbp, timeout);
	pthread_mutex_lock(&lock);
	if (!timeout && min_nr == outstanding)
		gs_wait++;
	else if (zero && min_nr == 0)
		gs_poll++;
	else if (timeout && !zero && min_nr == outstanding)
		gs_timed++;
	else
		gs_other++;
	if (!e.err && nr && iocbp && h) {
		for (unsigned i = 0; i < *nr; i++)
			remove_entry(batch_idp, iocbp[i].cookie);
		unsigned done = *nr < h->outstanding ? *nr : h->outstanding;
		h->outstanding -= done;
		if (done && !h->outstanding)
			handle_busy(h, 0);
	}
	pthread_mutex_unlock(&lock);
	return e;
}

__attribute__((destructor)) static void spy_report(void)
{
	const char *path = getenv("GDSIO_BATCH_SPY");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (!f)
		return;
	fprintf(f,
		"submits=%lu entries=%lu max_per_submit=%u threads=%u max_batches_in_flight=%u "
		"max_batches_in_flight_per_thread=%u max_entries_in_flight=%u buffer_overlaps=%lu "
		"file_overlaps=%lu stray_events=%lu "
		"getstatus_wait=%lu getstatus_poll=%lu getstatus_timed=%lu getstatus_other=%lu "
		"pairs=%lu file_adjacent=%lu buffer_adjacent=%lu both_adjacent=%lu\n",
		submits, entries, max_per_submit, nthreads, max_busy_handles, max_thread_busy, max_live,
		buffer_overlaps, file_overlaps, stray_events, gs_wait, gs_poll, gs_timed, gs_other, pairs,
		file_adjacent, buffer_adjacent, both_adjacent);
	fclose(f);
	free(live);
}
