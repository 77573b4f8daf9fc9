/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small device reads of many threads at once have their host-to-device
 * copies queued together (copygroup.c: one cuMemcpyBatchAsync for the
 * copies of several threads, submitted by one of them).  16 threads read
 * blocks of 1 byte to 300 KiB at file and buffer offsets aligned and not
 * into their own slices of one registered device buffer; every byte read
 * is checked, and the guard bytes around each read keep their poison.
 * Rounds:
 *  - plain: grouped calls happen (counted in the stand-in driver);
 *  - slow streams (copies land 300 us late): a member that did not wait
 *    for its group's event would find poison;
 *  - a grouped call failing (the stand-in queues the first copy of a
 *    failing call, as the driver may): its copies go again one by one,
 *    every byte still right;
 *  - grouped calls refused as invalid: grouping stops, reads go on;
 *  - an O_DIRECT descriptor (where the file system has it).
 * The ctest entry sets OPENCUFILE_CALLER_GROUPS_BUSY=2 (group from two busy
 * threads) and OPENCUFILE_CALLER_GROUPS_GATHER_US=300 (a leader waits that
 * long for a fuller group), so that groups form on a 2-CPU machine and
 * under valgrind.
 */
#include "test.h"
#include "fakecuda.h"

#include <pthread.h>
#include <stdatomic.h>

#define NTHREADS 16
#define GUARD (8 * T_KIB)
#define MAXREQ (300 * T_KIB)
#define SLICE (GUARD + 4096 + MAXREQ + GUARD)
#define FLEN (8 * T_MIB)

static CUfileHandle_t fh;
static struct t_mem mem;
static pthread_barrier_t barrier;
static int iters;
static atomic_int bad;

static void *worker(void *arg)
{
	long id = (long)arg;
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
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
		off_t boff = it % 2 ? (off_t)((x >> 40) % 4096) : 0;
		if (t_read_and_verify_window(fh, &mem, (size_t)id * SLICE + GUARD, size, foff, boff, (ssize_t)size, 0,
					     GUARD)) {
			fprintf(stderr, "thread %ld iteration %d: read of %zu at %lld, buffer offset %lld\n", id, it,
				size, (long long)foff, (long long)boff);
			atomic_fetch_add(&bad, 1);
			break;
		}
	}
	return NULL;
}

static unsigned long round_of(int fd, const char *what, int n)
{
	pthread_t th[NTHREADS];
	t_set_case("%s", what);
	fprintf(stderr, "--- %s\n", what);
	unsigned long before = fakecuda_call_count("cuMemcpyBatchAsync_v2");
	fh = t_register_fd(fd);
	iters = n;
	T_EQ(pthread_barrier_init(&barrier, NULL, NTHREADS), 0);
	for (long i = 0; i < NTHREADS; i++)
		T_EQ(pthread_create(&th[i], NULL, worker, (void *)i), 0);
	for (int i = 0; i < NTHREADS; i++)
		T_EQ(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&barrier);
	cuFileHandleDeregister(fh);
	if (atomic_load(&bad))
		T_FAIL("%s: bad data", what);
	unsigned long calls = fakecuda_call_count("cuMemcpyBatchAsync_v2") - before;
	fprintf(stderr, "    %lu grouped calls\n", calls);
	return calls;
}

int main(void)
{
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	t_mem_alloc(&mem, T_MEM_DEVICE, NTHREADS * SLICE);
	T_CUFILE_OK(cuFileBufRegister(mem.ptr, mem.len, 0));

	T_ASSERT(round_of(fd, "plain", 60) > 0);

	fakecuda_set_stream_delay_us(300);
	T_ASSERT(round_of(fd, "copies landing 300 us late", 20) > 0);
	fakecuda_set_stream_delay_us(0);

	/* The second grouped call of each of four rounds fails (a rule fires
	 * once); at least one of them must have been reached. */
	int fired = 0;
	for (int k = 0; k < 4; k++) {
		fakecuda_fail_nth("cuMemcpyBatchAsync_v2", 2, CUDA_ERROR_UNKNOWN);
		fired += round_of(fd, "a grouped call failing", 12) >= 2;
	}
	fakecuda_reset_faults();
	T_ASSERT(fired > 0);

	if (t_odirect_supported(path)) {
		int dfd = t_open(path, O_RDONLY | O_DIRECT);
		T_ASSERT(round_of(dfd, "O_DIRECT descriptor", 30) > 0);
		close(dfd);
	} else {
		fprintf(stderr, "NOTE: %s refuses O_DIRECT; O_DIRECT round skipped\n", t_dir());
	}

	/* A driver that calls the grouped form invalid: one refusal, then no
	 * more grouped calls, and the reads go on. */
	fakecuda_fail_always("cuMemcpyBatchAsync_v2", CUDA_ERROR_INVALID_VALUE);
	unsigned long refused = round_of(fd, "grouped calls refused as invalid", 30);
	fakecuda_reset_faults();
	T_ASSERT(refused >= 1);
	T_EQ_U(round_of(fd, "after the refusal", 20), 0);

	T_CUFILE_OK(cuFileBufDeregister(mem.ptr));
	t_mem_free(&mem);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ_U(fakecuda_live_events(), 0);
	close(fd);
	return 0;
}
