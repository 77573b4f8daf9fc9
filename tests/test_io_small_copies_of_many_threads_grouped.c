/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small device reads of many threads at once have their host-to-device
 * copies queued together (copygroup.c: one cuMemcpyBatchAsync for the
 * copies of several threads, submitted by one of them).  20 threads (more
 * than the 16 copies of one group, so a leader also serves groups without
 * its own copy) read blocks of 1 byte to 300 KiB at file and buffer offsets
 * aligned and not into their own slices of one registered device buffer.
 * The slice is poisoned in the stand-in's device memory before each read
 * and looked at directly (no copy, no synchronisation) the moment the read
 * returns: every byte read must be there, every other byte of the slice
 * still poison.  In the rounds with slow streams the slice is then poisoned
 * again and looked at once more after the streams' delay: nothing may land
 * after the call returned.  Rounds:
 *  - plain: grouped calls happen (counted in the stand-in driver);
 *  - copies landing 300 us late: a member that did not wait for its
 *    group's event finds poison;
 *  - a grouped call failing, grouped copies slower than single ones (the
 *    stand-in queues the failing call's first copy, as the driver may):
 *    the copies go again one by one, and the failed call's queued copy
 *    must not land after the read returned;
 *  - a wait for a copy failing, grouped copies slow: those reads fail, and
 *    their copies, still queued, must not land after they returned;
 *  - an O_DIRECT descriptor (where the file system has it);
 *  - grouped calls refused as invalid: after three refusals in a row
 *    grouping stops, reads go on;
 *  - (after opening the driver again) a grouped call failing on the device
 *    (its first copy fails when the stream reaches it, so every member's
 *    wait fails): those reads fail, the others are whole, and nothing
 *    lands after any read returned.
 * The ctest entries set OPENCUFILE_CALLER_GROUPS_BUSY=2 (group from two busy
 * threads) and OPENCUFILE_CALLER_GROUPS_GATHER_US=300 (a leader waits that
 * long for a fuller group), so that groups form on a 2-CPU machine and
 * under valgrind.  The default two queues take 10 threads each; a second
 * entry runs the plain round alone ("plain") from 40 threads on one queue
 * (OPENCUFILE_CALLER_GROUPS_QUEUES=1, and a lane for each:
 * OPENCUFILE_IO_THREADS=39) with grouped calls that take 300 us in the
 * stand-in: more copies are queued than one group takes, and a
 * leader must also queue groups without its own copy (counted by a hook
 * in the stand-in's cuMemcpyBatchAsync; the test fails if none is seen).
 */
#include "test.h"
#include "fakecuda.h"

#include <pthread.h>
#include <stdatomic.h>

#define NTHREADS 20
#define MAX_THREADS 40 /* the "plain" mode's */
#define GUARD (8 * T_KIB)
#define MAXREQ (300 * T_KIB)
#define SLICE (GUARD + 4096 + MAXREQ + GUARD)
#define FLEN (8 * T_MIB)

static CUfileHandle_t fh;
static struct t_mem mem;
static pthread_barrier_t barrier;
static int iters;
static unsigned watch_us;     /* 0: no look after the call returned */
static bool errors_allowed;   /* a read may fail (device-side faults) */
static atomic_int bad, failed_reads;

/* Bytes [from, to) of v that are not `byte`: the first such index, or -1. */
static long not_fill(const uint8_t *v, size_t from, size_t to, uint8_t byte)
{
	for (size_t i = from; i < to; i++)
		if (v[i] != byte)
			return (long)i;
	return -1;
}

/* The worker number of the calling thread (-1: not a worker). */
static __thread long my_id = -1;
static atomic_int groups_without_own;

static atomic_int hook_calls, hook_max; /* grouped calls seen, the largest */

/* Every grouped call: one whose copies do not include its calling
 * thread's own is a leader queuing other threads' copies only. */
static void batch_hook(const CUdeviceptr *dsts, size_t count)
{
	atomic_fetch_add(&hook_calls, 1);
	if ((int)count > atomic_load(&hook_max))
		atomic_store(&hook_max, (int)count);
	if (my_id < 0)
		return;
	CUdeviceptr lo = (CUdeviceptr)(uintptr_t)mem.ptr + (CUdeviceptr)my_id * SLICE, hi = lo + SLICE;
	for (size_t i = 0; i < count; i++)
		if (dsts[i] >= lo && dsts[i] < hi)
			return;
	atomic_fetch_add(&groups_without_own, 1);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	my_id = id;
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
	size_t slice_off = (size_t)id * SLICE;
	uint8_t *dev = fakecuda_shadow((CUdeviceptr)(uintptr_t)mem.ptr + slice_off, SLICE);
	T_ASSERT(dev != NULL);
	t_cuda_bind_thread();
	pthread_barrier_wait(&barrier);
	for (int it = 0; it < iters; it++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t size = it % 4 == 0 ? 64 * T_KIB : (size_t)(1 + x % MAXREQ);
		off_t foff = (off_t)((x >> 20) % (FLEN - size));
		if (it % 3 == 0)
			foff &= ~(off_t)4095;
		size_t at = GUARD + (it % 2 ? (size_t)((x >> 40) % 4096) : 0);
		memset(dev, T_POISON, SLICE);
		ssize_t r = cuFileRead(fh, mem.ptr, size, foff, (off_t)(slice_off + at));
		const char *what = NULL;
		long where = -1;
		if (r == (ssize_t)size) {
			if (t_check_pattern(dev + at, size, (uint64_t)foff, 0, "data read"))
				what = "data read";
		} else if (r < 0 && errors_allowed) {
			atomic_fetch_add(&failed_reads, 1);
		} else {
			fprintf(stderr, "    read returned %zd, expected %zu\n", r, size);
			what = "result";
		}
		/* Nothing outside the requested bytes; after a failed read,
		 * nothing at all can be checked inside them. */
		if (!what && (where = not_fill(dev, 0, at, T_POISON)) >= 0)
			what = "guard before the range";
		if (!what && (where = not_fill(dev, at + size, SLICE, T_POISON)) >= 0)
			what = "guard after the range";
		if (!what && watch_us) {
			memset(dev, T_POISON, SLICE);
			usleep(watch_us);
			if ((where = not_fill(dev, 0, SLICE, T_POISON)) >= 0)
				what = "a byte that landed after the read returned";
		}
		if (what) {
			fprintf(stderr, "thread %ld iteration %d: %s (index %ld): read of %zu at %lld, slice offset %zu\n",
				id, it, what, where, size, (long long)foff, at);
			atomic_fetch_add(&bad, 1);
			break;
		}
	}
	return NULL;
}

static int nthreads = NTHREADS;

static unsigned long round_of(int fd, const char *what, int n)
{
	t_set_case("%s", what);
	fprintf(stderr, "--- %s\n", what);
	unsigned long before = fakecuda_call_count("cuMemcpyBatchAsync_v2");
	fh = t_register_fd(fd);
	iters = n;
	t_run_numbered_threads(nthreads, worker, &barrier);
	cuFileHandleDeregister(fh);
	if (atomic_load(&bad))
		T_FAIL("%s: bad data", what);
	unsigned long calls = fakecuda_call_count("cuMemcpyBatchAsync_v2") - before;
	fprintf(stderr, "    %lu grouped calls\n", calls);
	return calls;
}

/* Every round after the plain one (see the top comment). */
static void other_rounds(const char *path, int fd)
{
	fakecuda_set_stream_delay_us(300);
	watch_us = 900;
	T_ASSERT(round_of(fd, "copies landing 300 us late", 12) > 0);

	/* The second grouped call of each of four rounds fails (a rule fires
	 * once); at least one of them must have been reached (up to eight
	 * rounds more until one is: a loaded machine may form fewer than two
	 * groups in a round of six reads a thread).  The streams
	 * grouped copies go on are slower (1.5 ms an operation) than the
	 * lanes' (0.3 ms): the copy a failed call queued would land well after
	 * its member's own copy, and after the read returned, unless the
	 * library waited for it. */
	fakecuda_set_batch_stream_delay_us(1500);
	watch_us = 2500;
	int fired = 0;
	for (int k = 0; k < 4 || (!fired && k < 12); k++) {
		fakecuda_fail_nth("cuMemcpyBatchAsync_v2", 2, CUDA_ERROR_UNKNOWN);
		fired += round_of(fd, "a grouped call failing, grouped copies slow", 6) >= 2;
	}
	fakecuda_reset_faults();
	T_ASSERT(fired > 0);

	/* A wait for a copy failing (the fifth cuEventQuery of each of four
	 * rounds), grouped copies slow: such a read fails, and its copy, still
	 * queued, must not land after it returned. */
	errors_allowed = true;
	for (int k = 0; k < 4; k++) {
		fakecuda_fail_nth("cuEventQuery", 5, CUDA_ERROR_UNKNOWN);
		round_of(fd, "a wait for a copy failing, grouped copies slow", 6);
	}
	fakecuda_reset_faults();
	errors_allowed = false;
	fakecuda_set_batch_stream_delay_us(0);
	watch_us = 900;

	fakecuda_set_stream_delay_us(0);
	watch_us = 0;

	if (t_odirect_supported(path)) {
		int dfd = t_open(path, O_RDONLY | O_DIRECT);
		T_ASSERT(round_of(dfd, "O_DIRECT descriptor", 30) > 0);
		close(dfd);
	} else {
		fprintf(stderr, "NOTE: %s refuses O_DIRECT; O_DIRECT round skipped\n", t_dir());
	}

	/* A driver that refuses the grouped form as invalid: three refusals in
	 * a row, then no more grouped calls, and the reads go on. */
	fakecuda_fail_always("cuMemcpyBatchAsync_v2", CUDA_ERROR_INVALID_VALUE);
	unsigned long refused = round_of(fd, "grouped calls refused as invalid", 30);
	fakecuda_reset_faults();
	T_ASSERT(refused >= 3);
	T_EQ_U(round_of(fd, "after the refusals", 20), 0);

	/* Last, as members whose drain fails lose their lanes (a stream that
	 * reported an error is treated as never drained): the second grouped
	 * call's first copy fails when its stream reaches it, so the reads
	 * of that group fail; the others are whole, and nothing lands after
	 * any read returned.  The driver is opened anew: the refusals above
	 * turned grouping off for its life.  Up to eight rounds more until a
	 * read has failed, as above. */
	T_CUFILE_OK(cuFileBufDeregister(mem.ptr));
	T_CUFILE_OK(cuFileDriverClose());
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileBufRegister(mem.ptr, mem.len, 0));
	errors_allowed = true;
	fakecuda_set_stream_delay_us(300);
	watch_us = 900;
	int failed0 = atomic_load(&failed_reads); /* the failed waits' reads above */
	for (int k = 0; k < 4 || (atomic_load(&failed_reads) == failed0 && k < 12); k++) {
		fakecuda_fail_nth_deferred("cuMemcpyBatchAsync_v2", 2, CUDA_ERROR_LAUNCH_FAILED);
		round_of(fd, "a grouped copy failing on the device", 6);
	}
	fakecuda_reset_faults();
	fakecuda_set_stream_delay_us(0);
	fprintf(stderr, "    %d reads failed\n", atomic_load(&failed_reads) - failed0);
	T_ASSERT(atomic_load(&failed_reads) > failed0);
}

int main(int argc, char **argv)
{
	/* "plain": the first round only (the ctest entry with one queue). */
	bool plain_only = argc > 1 && strcmp(argv[1], "plain") == 0;
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	if (plain_only)
		nthreads = MAX_THREADS;
	t_mem_alloc(&mem, T_MEM_DEVICE, (size_t)nthreads * SLICE);
	T_CUFILE_OK(cuFileBufRegister(mem.ptr, mem.len, 0));

	if (plain_only) {
		/* 40 threads, grouped calls that take 300 us: the other
		 * threads queue up behind one, more than a group takes, and a
		 * leader's own copy is often not among the oldest 16. */
		fakecuda_set_batch_call_hook(batch_hook);
		fakecuda_set_batch_call_delay_us(300);
	}
	T_ASSERT(round_of(fd, "plain", 60) > 0);
	if (plain_only) {
		fakecuda_set_batch_call_delay_us(0);
		fakecuda_set_batch_call_hook(NULL);
		fprintf(stderr, "    %d grouped calls without their leader's own copy (%d calls, max %d)\n",
			atomic_load(&groups_without_own), atomic_load(&hook_calls), atomic_load(&hook_max));
		T_ASSERT(atomic_load(&groups_without_own) > 0);
	} else {
		other_rounds(path, fd);
	}

	T_CUFILE_OK(cuFileBufDeregister(mem.ptr));
	t_mem_free(&mem);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ_U(fakecuda_live_events(), 0);
	T_EQ_U(fakecuda_live_streams(), 0);
	close(fd);
	return 0;
}
