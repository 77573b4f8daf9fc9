/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library: the nap counts of src/fault.h)
 * A thread whose small copy another thread queues in a group (copygroup.c)
 * naps before it polls for the copy, and the nap's length follows how long
 * groups take to complete.  12 threads read 64 KiB blocks, each into its
 * own slice of one registered device buffer (poisoned before each read and
 * looked at the moment it returns: every byte read is there, nothing else
 * of the slice changed).  OPENCUFILE_CALLER_GROUPS_BUSY=2 and
 * OPENCUFILE_CALLER_GROUPS_GATHER_US=300 let groups form on 2 CPUs.
 * Modes:
 *  - adapt (the default nap): first grouped copies landing 2 ms late - the
 *    members keep waking before their copy is done, so the nap grows (to
 *    at least 400 us, at most its 1 ms bound); then copies that land at
 *    once - members wake to copies done, so the nap shrinks again (checked
 *    as a nap of that round shorter than the longest of the one before: a
 *    leader that loses its CPU for long under a sanitizer lengthens it
 *    again at times);
 *  - off (OPENCUFILE_CALLER_GROUPS_NAP_US=0): groups form, nobody naps;
 *  - fixed (OPENCUFILE_CALLER_GROUPS_NAP_US=50): every nap is 50 us,
 *    whatever the copies do;
 *  - chunks (OPENCUFILE_CHUNK_KB=64): reads of 256 KiB, four chunks each -
 *    their copies are grouped, but nobody naps (a participant with chunks
 *    left reads the next one while its copy is queued).
 */
#include "test.h"
#include "fakecuda.h"

#include <pthread.h>
#include <stdatomic.h>

#include "fault.h"

#define NTHREADS 12
#define BLOCK (256 * T_KIB) /* the largest read */
#define GUARD (4 * T_KIB)
#define SLICE (GUARD + BLOCK + GUARD)
#define FLEN (8 * T_MIB)

static CUfileHandle_t fh;
static struct t_mem mem;
static pthread_barrier_t barrier;
static int iters;
static size_t blk = 64 * T_KIB; /* each read's size */
static atomic_int bad;

static void *worker(void *arg)
{
	long id = (long)arg;
	size_t slice_off = (size_t)id * SLICE;
	uint8_t *dev = fakecuda_shadow((CUdeviceptr)(uintptr_t)mem.ptr + slice_off, SLICE);
	T_ASSERT(dev != NULL);
	t_cuda_bind_thread();
	pthread_barrier_wait(&barrier);
	for (int it = 0; it < iters; it++) {
		off_t foff = (off_t)(((size_t)(id * 131 + it * 17) * 4096) % (FLEN - blk));
		memset(dev, T_POISON, SLICE);
		ssize_t r = cuFileRead(fh, mem.ptr, blk, foff, (off_t)(slice_off + GUARD));
		const char *what = NULL;
		if (r != (ssize_t)blk)
			what = "result";
		else if (t_check_pattern(dev + GUARD, blk, (uint64_t)foff, 0, "data read"))
			what = "data read";
		for (size_t i = 0; !what && i < SLICE; i++)
			if ((i < GUARD || i >= GUARD + blk) && dev[i] != T_POISON)
				what = "a byte outside the range";
		if (what) {
			fprintf(stderr, "thread %ld iteration %d: %s (read returned %zd)\n", id, it, what, r);
			atomic_fetch_add(&bad, 1);
			break;
		}
	}
	return NULL;
}

/* Runs one round; returns the naps taken in it, and the shortest and the
 * longest of them. */
static unsigned long round_of(int fd, const char *what, int n, uint64_t *lo, uint64_t *hi)
{
	t_set_case("%s", what);
	unsigned long before = ocf_fault_cg_naps(NULL, NULL);
	unsigned long calls = fakecuda_call_count("cuMemcpyBatchAsync_v2");
	fh = t_register_fd(fd);
	iters = n;
	t_run_numbered_threads(NTHREADS, worker, &barrier);
	cuFileHandleDeregister(fh);
	if (atomic_load(&bad))
		T_FAIL("%s: bad data", what);
	unsigned long naps = ocf_fault_cg_naps(lo, hi) - before;
	calls = fakecuda_call_count("cuMemcpyBatchAsync_v2") - calls;
	fprintf(stderr, "--- %s: %lu grouped calls, %lu naps of %.1f to %.1f us\n", what, calls, naps,
		(double)*lo / 1e3, (double)*hi / 1e3);
	T_ASSERT(calls > 0);
	return naps;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "adapt";
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	t_mem_alloc(&mem, T_MEM_DEVICE, (size_t)NTHREADS * SLICE);
	T_CUFILE_OK(cuFileBufRegister(mem.ptr, mem.len, 0));
	uint64_t lo = 0, hi = 0;

	if (strcmp(mode, "off") == 0) {
		T_EQ_U(round_of(fd, "no naps", 20, &lo, &hi), 0);
	} else if (strcmp(mode, "chunks") == 0) {
		blk = 256 * T_KIB;
		T_EQ_U(round_of(fd, "four chunks a read", 20, &lo, &hi), 0);
	} else if (strcmp(mode, "fixed") == 0) {
		T_ASSERT(round_of(fd, "fixed naps, copies at once", 20, &lo, &hi) > 0);
		T_EQ_U(lo, 50000);
		T_EQ_U(hi, 50000);
		fakecuda_set_batch_stream_delay_us(2000);
		T_ASSERT(round_of(fd, "fixed naps, copies 2 ms late", 6, &lo, &hi) > 0);
		T_EQ_U(lo, 50000);
		T_EQ_U(hi, 50000);
		fakecuda_set_batch_stream_delay_us(0);
	} else {
		/* Copies 2 ms late: every member wakes before its copy is done. */
		fakecuda_set_batch_stream_delay_us(2000);
		T_ASSERT(round_of(fd, "grouped copies 2 ms late", 60, &lo, &hi) > 0);
		uint64_t grown = hi;
		T_ASSERT(grown >= 400000);
		T_ASSERT(grown <= 1000000);
		/* Copies at once: a leader gathers for 300 us and its group's
		 * copies are done when it returns, so members that nap ~1 ms wake
		 * to their copy done. */
		fakecuda_set_batch_stream_delay_us(0);
		T_ASSERT(round_of(fd, "grouped copies at once", 40, &lo, &hi) > 0);
		T_ASSERT(lo < grown);
		T_ASSERT(hi <= 1000000);
	}

	T_CUFILE_OK(cuFileBufDeregister(mem.ptr));
	t_mem_free(&mem);
	T_CUFILE_OK(cuFileDriverClose());
	close(fd);
	return 0;
}
