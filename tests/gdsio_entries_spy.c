/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_entries_spy.c - a preload library for the tests of gdsio's entries
 * shape (-e, test_gdsio_entries_mode_verifies_each_file.sh) and freshly
 * written file (-Y, test_gdsio_fresh_file_mode_reads_what_it_wrote.sh).
 * It sits between gdsio and libcufile, passes every call through, and
 * records what gdsio's own output cannot prove:
 *
 *  - the file handles: how many, whether each file was empty when it was
 *    registered (a new file), whether each is an entry's file
 *    (gdsio.e<k>.dat) and a distinct one, and whether any handle or buffer
 *    was registered after the first I/O;
 *  - every entry moved (batch entry, cuFileWrite or cuFileRead on an
 *    entry's handle): its size (GDSIO_ENTRIES_SPY_IO) at file offset 0,
 *    from or to the same buffer every time and a buffer no other entry
 *    uses, how often each entry was moved (fewest and most);
 *  - the batches: submits, the most entries of one, the most batches with
 *    entries outstanding at once (all of a round are submitted before any
 *    is collected);
 *  - the synchronous calls: how many threads made them, how many were in
 *    flight at once (each sleeps GDSIO_ENTRIES_SPY_DELAY_US first, so that
 *    calls meant to overlap do);
 *  - for -Y: the cuFileWrite calls before the first cuFileRead, and the
 *    time from the return of the last of them to the first read (ms).
 *
 * GDSIO_ENTRIES_SPY_SWAP=1 swaps the handles of the first two entries of
 * the first batch submitted (or sends the first synchronous call of an
 * entry to the next entry's file): the bytes then go to or come from the
 * wrong file, which gdsio -V must catch.  At exit it writes one line of
 * name=value counters to the file named by GDSIO_ENTRIES_SPY.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cufile.h"

#define MAX_HANDLES 4096
#define MAX_BATCHES 256
#define MAX_THREADS 1024

struct handle {
	CUfileHandle_t fh;
	int entry; /* k of gdsio.e<k>.dat, or -1 */
	uintptr_t buf;
	int have_buf;
	unsigned long moves;
};

/* lock protects everything below; never held across a libcufile call. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct handle handles[MAX_HANDLES];
static int nhandles;
static struct {
	CUfileBatchHandle_t b;
	unsigned long outstanding;
} batches[MAX_BATCHES];
static int nbatches;
static pthread_t threads[MAX_THREADS];
static unsigned nthreads;
static int io_started, swap_done;
static unsigned long nonempty_at_register, foreign, duplicate_files, registered_after_io, buf_registers;
static unsigned long submits, max_batch, batches_in_flight, max_batches_in_flight, misshapen;
static unsigned long buffer_mismatch, shared_buffers, sync_calls, in_flight, max_in_flight, other_calls;
static unsigned long writes_before_reads, reads;
static uint64_t last_write_ns, first_read_ns;

static uint64_t env_u64(const char *name)
{
	const char *v = getenv(name);
	return v ? strtoull(v, NULL, 0) : 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define REAL(name)                                                                                           \
	static __typeof__(name) *real_##name;                                                                \
	__typeof__(name) *real = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);                            \
	if (!real) {                                                                                         \
		*(void **)&real = dlsym(RTLD_NEXT, #name);                                                   \
		__atomic_store_n(&real_##name, real, __ATOMIC_RELEASE);                                      \
	}

static struct handle *handle_of(CUfileHandle_t fh)
{
	for (int i = 0; i < nhandles; i++)
		if (handles[i].fh == fh)
			return &handles[i];
	return NULL;
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

/* Entry h is moved from or to buffer address buf, size bytes at off. */
static void note_move(struct handle *h, uintptr_t buf, size_t size, off_t off)
{
	if (size != env_u64("GDSIO_ENTRIES_SPY_IO") || off != 0)
		misshapen++;
	if (!h->have_buf) {
		for (int i = 0; i < nhandles; i++)
			if (&handles[i] != h && handles[i].have_buf && handles[i].buf == buf)
				shared_buffers++;
		h->buf = buf, h->have_buf = 1;
	} else if (h->buf != buf) {
		buffer_mismatch++;
	}
	h->moves++;
}

CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr)
{
	REAL(cuFileHandleRegister);
	CUfileError_t e = real(fh, descr);
	if (e.err || descr->type != CU_FILE_HANDLE_TYPE_OPAQUE_FD)
		return e;
	char link[64], path[PATH_MAX];
	struct stat st;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", descr->handle.fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = 0;
	const char *base = strrchr(path, '/');
	int k = -1;
	if (!base || sscanf(base, "/gdsio.e%d.dat", &k) != 1)
		k = -1;
	pthread_mutex_lock(&lock);
	if (io_started)
		registered_after_io++;
	if (fstat(descr->handle.fd, &st) == 0 && st.st_size > 0)
		nonempty_at_register++;
	if (k < 0)
		foreign++;
	for (int i = 0; i < nhandles && k >= 0; i++)
		if (handles[i].entry == k)
			duplicate_files++;
	if (nhandles < MAX_HANDLES)
		handles[nhandles++] = (struct handle){.fh = *fh, .entry = k};
	pthread_mutex_unlock(&lock);
	return e;
}

CUfileError_t cuFileBufRegister(const void *ptr, size_t len, int flags)
{
	REAL(cuFileBufRegister);
	pthread_mutex_lock(&lock);
	if (io_started)
		registered_after_io++;
	buf_registers++;
	pthread_mutex_unlock(&lock);
	return real(ptr, len, flags);
}

static int batch_index(CUfileBatchHandle_t b)
{
	for (int i = 0; i < nbatches; i++)
		if (batches[i].b == b)
			return i;
	if (nbatches == MAX_BATCHES)
		return -1;
	batches[nbatches].b = b, batches[nbatches].outstanding = 0;
	return nbatches++;
}

CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t b, unsigned nr, CUfileIOParams_t *params,
				  unsigned flags)
{
	REAL(cuFileBatchIOSubmit);
	CUfileIOParams_t *p = params, *copy = NULL;
	pthread_mutex_lock(&lock);
	io_started = 1;
	submits++;
	if (nr > max_batch)
		max_batch = nr;
	for (unsigned i = 0; i < nr; i++) {
		struct handle *h = handle_of(params[i].fh);
		if (h && h->entry >= 0)
			note_move(h,
				  (uintptr_t)params[i].u.batch.devPtr_base +
				      (uintptr_t)params[i].u.batch.devPtr_offset,
				  params[i].u.batch.size, params[i].u.batch.file_offset);
		else
			misshapen++;
	}
	if (!swap_done && nr >= 2 && env_u64("GDSIO_ENTRIES_SPY_SWAP") &&
	    (copy = malloc(nr * sizeof(*copy)))) {
		memcpy(copy, params, nr * sizeof(*copy));
		copy[0].fh = params[1].fh, copy[1].fh = params[0].fh;
		p = copy, swap_done = 1;
	}
	int bi = batch_index(b);
	if (bi >= 0) {
		if (!batches[bi].outstanding && ++batches_in_flight > max_batches_in_flight)
			max_batches_in_flight = batches_in_flight;
		batches[bi].outstanding += nr;
	}
	pthread_mutex_unlock(&lock);
	/* The library reads the parameters at submit: the copy may go then. */
	CUfileError_t e = real(b, nr, p, flags);
	free(copy);
	return e;
}

CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t b, unsigned min_nr, unsigned *nr,
				     CUfileIOEvents_t *events, struct timespec *timeout)
{
	REAL(cuFileBatchIOGetStatus);
	CUfileError_t e = real(b, min_nr, nr, events, timeout);
	pthread_mutex_lock(&lock);
	int bi = batch_index(b);
	if (!e.err && bi >= 0 && batches[bi].outstanding) {
		batches[bi].outstanding -= *nr < batches[bi].outstanding ? *nr : batches[bi].outstanding;
		if (!batches[bi].outstanding)
			batches_in_flight--;
	}
	pthread_mutex_unlock(&lock);
	return e;
}

/* A synchronous call starts: which handle it really goes to. */
static CUfileHandle_t sync_starts(CUfileHandle_t fh, const void *buf, size_t size, off_t off, int write)
{
	pthread_mutex_lock(&lock);
	io_started = 1;
	note_thread();
	sync_calls++;
	if (++in_flight > max_in_flight)
		max_in_flight = in_flight;
	if (write && !reads)
		writes_before_reads++;
	if (!write && !reads++)
		first_read_ns = mono_ns();
	struct handle *h = handle_of(fh);
	if (h && h->entry >= 0) {
		note_move(h, (uintptr_t)buf, size, off);
		if (!swap_done && env_u64("GDSIO_ENTRIES_SPY_SWAP")) {
			/* The next entry's file instead. */
			for (int i = 0; i < nhandles; i++)
				if (handles[i].entry == (h->entry + 1) % nhandles) {
					fh = handles[i].fh, swap_done = 1;
					break;
				}
		}
	} else {
		other_calls++;
	}
	pthread_mutex_unlock(&lock);
	uint64_t d = env_u64("GDSIO_ENTRIES_SPY_DELAY_US");
	if (d)
		usleep((useconds_t)d);
	return fh;
}

static void sync_ends(int write)
{
	pthread_mutex_lock(&lock);
	in_flight--;
	if (write && !reads)
		last_write_ns = mono_ns();
	pthread_mutex_unlock(&lock);
}

ssize_t cuFileWrite(CUfileHandle_t fh, const void *buf, size_t size, off_t file_offset, off_t buf_offset)
{
	REAL(cuFileWrite);
	fh = sync_starts(fh, (const char *)buf + buf_offset, size, file_offset, 1);
	ssize_t r = real(fh, buf, size, file_offset, buf_offset);
	sync_ends(1);
	return r;
}

ssize_t cuFileRead(CUfileHandle_t fh, void *buf, size_t size, off_t file_offset, off_t buf_offset)
{
	REAL(cuFileRead);
	fh = sync_starts(fh, (const char *)buf + buf_offset, size, file_offset, 0);
	ssize_t r = real(fh, buf, size, file_offset, buf_offset);
	sync_ends(0);
	return r;
}

__attribute__((destructor)) static void spy_report(void)
{
	const char *path = getenv("GDSIO_ENTRIES_SPY");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (!f)
		return;
	unsigned long entries = 0, moves_min = 0, moves_max = 0;
	for (int i = 0; i < nhandles; i++) {
		if (handles[i].entry < 0)
			continue;
		unsigned long m = handles[i].moves;
		moves_min = !entries++ || m < moves_min ? m : moves_min;
		moves_max = m > moves_max ? m : moves_max;
	}
	long gap_ms = reads && last_write_ns && first_read_ns > last_write_ns
			  ? (long)((first_read_ns - last_write_ns) / 1000000)
			  : -1;
	fprintf(
	    f,
	    "handles=%d entries=%lu nonempty_at_register=%lu foreign=%lu duplicate_files=%lu "
	    "registered_after_io=%lu buf_registers=%lu submits=%lu max_batch=%lu max_batches_in_flight=%lu "
	    "misshapen=%lu buffer_mismatch=%lu shared_buffers=%lu moves_min=%lu moves_max=%lu sync_calls=%lu "
	    "threads=%u max_in_flight=%lu other_calls=%lu writes_before_reads=%lu reads=%lu "
	    "write_read_gap_ms=%ld swapped=%d\n",
	    nhandles, entries, nonempty_at_register, foreign, duplicate_files, registered_after_io,
	    buf_registers, submits, max_batch, max_batches_in_flight, misshapen, buffer_mismatch,
	    shared_buffers, moves_min, moves_max, sync_calls, nthreads, max_in_flight, other_calls,
	    writes_before_reads, reads, gap_ms, swap_done);
	fclose(f);
}
