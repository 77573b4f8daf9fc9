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
 * Environment: GDSIO_POOL_SPY (the file the counters are written to at
 * exit, one line of name=value), GDSIO_POOL_SPY_REQUEST, _PIECE and _SET
 * (the request, piece and data set sizes in bytes; the data set starts at
 * file offset 0), GDSIO_POOL_SPY_DELAY_US (each call sleeps this long
 * before it is passed on, so that calls meant to overlap do, also on a
 * machine of few CPUs).
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

/* lock protects everything below; never held across a libcufile call. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int configured;
static uint64_t req_len, piece_len, set_len, npieces, nwindows, delay_us;
static unsigned char *seen; /* pieces of the current request already started */
static uint64_t cur, started, completed; /* the current request: its window, its calls */
static int have_cur;
static uintptr_t base;
static int have_base;
static pthread_t threads[MAX_THREADS];
static unsigned nthreads;
static unsigned long calls, requests, misshapen, buffer_mismatch, early, out_of_order, repeated;
static unsigned long in_flight, max_in_flight;

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
	delay_us = env_u64("GDSIO_POOL_SPY_DELAY_US");
	if (req_len && piece_len && req_len % piece_len == 0 && set_len >= req_len) {
		npieces = req_len / piece_len;
		nwindows = set_len / req_len;
		seen = calloc(npieces, 1);
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

/* A call starts: check its shape and its place in the sequence of requests. */
static void call_starts(const void *buf, size_t size, off_t off)
{
	note_thread();
	calls++;
	if (++in_flight > max_in_flight)
		max_in_flight = in_flight;
	if (!seen || off < 0 || size != piece_len || (uint64_t)off % piece_len ||
	    (uint64_t)off + size > nwindows * req_len) {
		misshapen++;
		return;
	}
	uint64_t w = (uint64_t)off / req_len, k = ((uint64_t)off % req_len) / piece_len;
	uintptr_t b = (uintptr_t)buf - (uintptr_t)((uint64_t)off % req_len);
	if (!have_base)
		base = b, have_base = 1;
	else if (b != base)
		buffer_mismatch++;
	if (!have_cur || completed == npieces) {
		/* The current request is complete: this call begins the next. */
		if (have_cur && w != (cur + 1) % nwindows)
			out_of_order++;
		else if (!have_cur && w != 0)
			out_of_order++;
		cur = w, have_cur = 1, started = 0, completed = 0, requests++;
		memset(seen, 0, npieces);
	} else if (w != cur || started == npieces) {
		early++; /* a piece of another request while this one runs */
		return;
	}
	if (seen[k])
		repeated++;
	seen[k] = 1;
	started++;
}

static void call_ends(void)
{
	in_flight--;
	if (have_cur && completed < started)
		completed++;
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
	call_starts((const char *)buf + buf_offset, size, file_offset);
	pthread_mutex_unlock(&lock);
	if (delay_us)
		usleep((useconds_t)delay_us);
	ssize_t r = real(fh, buf, size, file_offset, buf_offset);
	pthread_mutex_lock(&lock);
	call_ends();
	pthread_mutex_unlock(&lock);
	return r;
}

__attribute__((destructor)) static void spy_report(void)
{
	const char *path = getenv("GDSIO_POOL_SPY");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (!f)
		return;
	fprintf(f,
		"calls=%lu requests=%lu threads=%u max_in_flight=%lu misshapen=%lu buffer_mismatch=%lu "
		"early=%lu out_of_order=%lu repeated=%lu partial=%d\n",
		calls, requests, nthreads, max_in_flight, misshapen, buffer_mismatch, early, out_of_order,
		repeated, have_cur && completed < npieces);
	fclose(f);
	free(seen);
}
