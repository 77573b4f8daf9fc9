/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_pool_spy.c - a preload library for the gdsio pool test
 * (test_gdsio_pool_mode_verifies_pieces.sh).  It sits between gdsio and
 * libcufile, passes every cuFileRead through, and checks what gdsio's own
 * output cannot prove about the pool shape (gdsio -q PIECE -i REQUEST):
 *
 *  - every call reads PIECE bytes at a multiple of PIECE within a request's
 *    range of the file, into the buffer at the same distance from one base
 *    address for all calls (the request's one buffer);
 *  - the requests follow each other through the file in order, wrapping
 *    at the data set's end, each piece of a request read exactly once;
 *  - no call of the next request starts before every call of the current
 *    one has returned ("early" counts those that do);
 *  - how many calls were in flight at once (the pieces of one request run
 *    at once) and from how many threads;
 *  - whether a request was left partly done at exit.
 *
 * With GDSIO_POOL_SPY_CALLERS=C (gdsio -Q C) the data set is C regions of
 * whole requests, one per caller, and each caller is a stream of requests
 * of its own: the checks above hold per caller (its calls share one base
 * address, its requests go through its region in order, none of its next
 * request starts before its current one is done); across callers it
 * counts bases shared by two callers (each must have its own buffer) and
 * how many callers had a call in flight at once.
 *
 * Environment: GDSIO_POOL_SPY (the file the counters are written to at
 * exit, one line of name=value), GDSIO_POOL_SPY_REQUEST, _PIECE and _SET
 * (the request, piece and data set sizes in bytes; the data set starts at
 * file offset 0), GDSIO_POOL_SPY_CALLERS (default 1),
 * GDSIO_POOL_SPY_DELAY_US (each call sleeps this long before it is passed
 * on, so that calls meant to overlap do, also on a machine of few CPUs).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cufile.h"

#define MAX_THREADS 1024
#define MAX_CALLERS 1024

/* One caller's stream of requests (the only one without callers). */
struct stream {
	unsigned char *seen;		  /* pieces of the current request already started */
	uint64_t cur, started, completed; /* the current request: its window, its calls */
	int have_cur;
	uintptr_t base;
	int have_base;
	unsigned long in_flight;
};

/* lock protects everything below; never held across a libcufile call. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int configured;
static uint64_t req_len, piece_len, set_len, npieces, nwindows, region_len, ncallers, delay_us;
static struct stream *streams;
static pthread_t threads[MAX_THREADS];
static unsigned nthreads;
static unsigned long calls, requests, misshapen, buffer_mismatch, early, out_of_order, repeated;
static unsigned long in_flight, max_in_flight, callers_in_flight, max_callers_in_flight;

static uint64_t env_u64(const char *name)
{
	const char *v = getenv(name);
	return v ? strtoull(v, NULL, 0) : 0;
}

static void configure(void)
{
	configured = 1;
	req_len = env_u64("GDSIO_POOL_SPY_REQUEST");
	piece_len = env_u64("GDSIO_POOL_SPY_PIECE");
	set_len = env_u64("GDSIO_POOL_SPY_SET");
	ncallers = env_u64("GDSIO_POOL_SPY_CALLERS");
	delay_us = env_u64("GDSIO_POOL_SPY_DELAY_US");
	if (!ncallers)
		ncallers = 1;
	if (ncallers <= MAX_CALLERS && req_len && piece_len && req_len % piece_len == 0 &&
	    set_len / ncallers >= req_len) {
		npieces = req_len / piece_len;
		nwindows = set_len / req_len / ncallers;
		region_len = nwindows * req_len;
		streams = calloc(ncallers, sizeof(*streams));
		for (uint64_t c = 0; streams && c < ncallers; c++)
			if (!(streams[c].seen = calloc(npieces, 1)))
				streams = NULL; /* leaked: the spy then counts every call as misshapen */
	}
}

static void note_thread(void)
{
	pthread_t me = pthread_self();
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_equal(threads[i], me))
			return;
	if (nthreads < MAX_THREADS)
		threads[nthreads++] = me;
}

/* A call starts: check its shape and its place in its caller's sequence of
 * requests.  Returns its caller's stream, or NULL for a misshapen call. */
static struct stream *call_starts(const void *buf, size_t size, off_t off)
{
	note_thread();
	calls++;
	if (++in_flight > max_in_flight)
		max_in_flight = in_flight;
	if (!streams || off < 0 || size != piece_len || (uint64_t)off % piece_len ||
	    (uint64_t)off + size > ncallers * region_len) {
		misshapen++;
		return NULL;
	}
	struct stream *st = &streams[(uint64_t)off / region_len];
	if (st->in_flight++ == 0 && ++callers_in_flight > max_callers_in_flight)
		max_callers_in_flight = callers_in_flight;
	uint64_t rel = (uint64_t)off % region_len;
	uint64_t w = rel / req_len, k = (rel % req_len) / piece_len;
	uintptr_t b = (uintptr_t)buf - (uintptr_t)(rel % req_len);
	if (!st->have_base)
		st->base = b, st->have_base = 1;
	else if (b != st->base)
		buffer_mismatch++;
	if (!st->have_cur || st->completed == npieces) {
		/* The current request is complete: this call begins the next. */
		if (st->have_cur && w != (st->cur + 1) % nwindows)
			out_of_order++;
		else if (!st->have_cur && w != 0)
			out_of_order++;
		st->cur = w, st->have_cur = 1, st->started = 0, st->completed = 0, requests++;
		memset(st->seen, 0, npieces);
	} else if (w != st->cur || st->started == npieces) {
		early++; /* a piece of another request while this one runs */
		return st;
	}
	if (st->seen[k])
		repeated++;
	st->seen[k] = 1;
	st->started++;
	return st;
}

static void call_ends(struct stream *st)
{
	in_flight--;
	if (!st)
		return;
	if (--st->in_flight == 0)
		callers_in_flight--;
	if (st->have_cur && st->completed < st->started)
		st->completed++;
}

ssize_t cuFileRead(CUfileHandle_t fh, void *buf, size_t size, off_t file_offset, off_t buf_offset)
{
	/* Looked up once; threads race to do it, so the pointer is stored and
	 * loaded atomically (every thread finds the same symbol). */
	static __typeof__(cuFileRead) *real_fn;
	__typeof__(cuFileRead) *real = __atomic_load_n(&real_fn, __ATOMIC_ACQUIRE);
	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "cuFileRead");
		__atomic_store_n(&real_fn, real, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&lock);
	if (!configured)
		configure();
	struct stream *st = call_starts((const char *)buf + buf_offset, size, file_offset);
	pthread_mutex_unlock(&lock);
	if (delay_us)
		usleep((useconds_t)delay_us);
	ssize_t r = real(fh, buf, size, file_offset, buf_offset);
	pthread_mutex_lock(&lock);
	call_ends(st);
	pthread_mutex_unlock(&lock);
	return r;
}

__attribute__((destructor)) static void spy_report(void)
{
	const char *path = getenv("GDSIO_POOL_SPY");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (!f)
		return;
	int partial = 0;
	unsigned long shared_buffers = 0;
	for (uint64_t c = 0; streams && c < ncallers; c++) {
		partial |= streams[c].have_cur && streams[c].completed < npieces;
		for (uint64_t d = 0; d < c; d++)
			shared_buffers += streams[c].have_base && streams[d].have_base &&
					  streams[c].base == streams[d].base;
	}
	fprintf(f,
		"calls=%lu requests=%lu threads=%u max_in_flight=%lu misshapen=%lu buffer_mismatch=%lu "
		"early=%lu out_of_order=%lu repeated=%lu partial=%d max_callers_in_flight=%lu "
		"shared_buffers=%lu\n",
		calls, requests, nthreads, max_in_flight, misshapen, buffer_mismatch, early, out_of_order,
		repeated, partial, max_callers_in_flight, shared_buffers);
	fclose(f);
	for (uint64_t c = 0; streams && c < ncallers; c++)
		free(streams[c].seen);
	free(streams);
}
