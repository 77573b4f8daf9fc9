/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Best-practices pattern 6: many threads share one registered buffer and
 * one file handle, each addressing its own part of the buffer the way the
 * guide does it: the registered base pointer plus its own bufPtr_offset.
 * Each thread reads blocks of the upper half of the file (which no one
 * writes) into its part of the buffer and checks them, and writes fresh
 * patterns from its part into its own range of the lower half, checked
 * through the kernel.
 */
#include "pattern_test_util.h"

#include <pthread.h>

#define NTHREADS 16
#define PART (256 * T_KIB)
#define ROUNDS 8

static struct pt *shared;
static bool gpu;

static void *worker(void *arg)
{
	long id = (long)arg;
	off_t boff = (off_t)(id * PART);
	uint8_t *host = malloc(PART), *disk = malloc(PART);
	int rfd = t_open(shared->path, O_RDONLY);

	T_ASSERT(host && disk);
	if (gpu)
		t_cuda_bind_thread();
	for (unsigned r = 0; r < ROUNDS; r++) {
		size_t size = PART - (r * 4099) % (PART / 2);
		/* Reads come from the upper half of the file, which no one writes. */
		off_t foff = (off_t)(NTHREADS + ((unsigned)id * ROUNDS + r) % NTHREADS) * (off_t)PART;
		off_t mine = (off_t)((unsigned)id * PART); /* this thread's file range for writes */
		/* Read: the part holds the file's bytes. */
		ssize_t n = cuFileRead(shared->fh, shared->mem.ptr, size, foff, boff);
		if (n != (ssize_t)size)
			T_FAIL("thread %ld: read returned %zd, expected %zu", id, n, size);
		t_mem_get(&shared->mem, (size_t)boff, host, size);
		if (t_check_pattern(host, size, (uint64_t)foff, 0, "read"))
			T_FAIL("thread %ld round %u: bad read at %lld", id, r, (long long)foff);
		/* Write a fresh pattern into this thread's own file range. */
		uint32_t seed = (uint32_t)(1000 + id * ROUNDS + r);
		t_fill_pattern(host, size, (uint64_t)mine, seed);
		t_mem_put(&shared->mem, (size_t)boff, host, size);
		n = cuFileWrite(shared->fh, shared->mem.ptr, size, mine, boff);
		if (n != (ssize_t)size)
			T_FAIL("thread %ld: write returned %zd, expected %zu", id, n, size);
		T_EQ_U(t_pread_full(rfd, disk, size, (uint64_t)mine), size);
		if (t_check_pattern(disk, size, (uint64_t)mine, seed, "written"))
			T_FAIL("thread %ld round %u: file differs after write", id, r);
	}
	close(rfd);
	free(host);
	free(disk);
	return NULL;
}

static void body(struct pt *p)
{
	pthread_t th[NTHREADS];

	shared = p;
	gpu = t_mem_is_device(&p->mem);
	T_CUFILE_OK(cuFileBufRegister(p->mem.ptr, p->mem.len, 0));
	for (long i = 0; i < NTHREADS; i++)
		T_EQ(pthread_create(&th[i], NULL, worker, (void *)i), 0);
	for (int i = 0; i < NTHREADS; i++)
		T_EQ(pthread_join(th[i], NULL), 0);
	T_CUFILE_OK(cuFileBufDeregister(p->mem.ptr));
	/* Restore the writers' ranges for the next run. */
	t_pwrite_pattern(p->check_fd, 0, (uint64_t)NTHREADS * PART, 0);
}

int main(void)
{
	pt_run((size_t)NTHREADS * PART, body);
	return T_EXIT_PASS;
}
