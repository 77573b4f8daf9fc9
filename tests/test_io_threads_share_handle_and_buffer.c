/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 16 threads share ONE registered handle and ONE registered device buffer:
 * each owns a disjoint slice of the buffer and a disjoint range of the file,
 * and repeatedly writes a fresh pattern from its slice, reads it back into
 * the slice at a different buffer offset, and checks the slice (including
 * the slice's guard bytes) through cuMemcpyDtoH.  Run on a buffered fd and,
 * where supported, an O_DIRECT fd.  Without a CUDA device the buffer is
 * host memory.
 */
#include "test.h"

#include <pthread.h>

#define NTHREADS 16
#define ITERS 40
#define SLICE (256 * T_KIB)
#define FSLICE (512 * T_KIB)
#define FLEN ((uint64_t)NTHREADS * FSLICE)

static CUfileHandle_t fh;
static struct t_mem mem;
static int check_fd;
static pthread_barrier_t barrier;

static void *worker(void *arg)
{
	long id = (long)arg;
	size_t slice = (size_t)id * SLICE;
	uint8_t *host = malloc(SLICE), *back = malloc(SLICE);
	uint8_t *base = (uint8_t *)mem.ptr + slice;

	T_ASSERT(host && back);
	if (t_mem_is_device(&mem))
		t_cuda_bind_thread();
	pthread_barrier_wait(&barrier);
	for (int it = 0; it < ITERS; it++) {
		uint32_t seed = (uint32_t)(id * ITERS + it + 1);
		/* Sizes and offsets vary per iteration; all stay in the slices. */
		size_t size = (size_t)(1 + (it * 37813 + id * 101) % (SLICE / 2));
		off_t boff = (off_t)((it * 4093) % (SLICE / 4));
		off_t foff = (off_t)((uint64_t)id * FSLICE + (uint64_t)((it * 7919) % (FSLICE / 2)));

		/* Write the pattern for [foff, foff+size) from the slice. */
		t_fill_pattern(host, SLICE, 0, 0);
		t_fill_pattern(host + boff, size, (uint64_t)foff, seed);
		t_mem_put(&mem, slice, host, SLICE);
		ssize_t r = cuFileWrite(fh, base, size, foff, boff);
		if (r != (ssize_t)size)
			T_FAIL("thread %ld iter %d: write returned %zd, expected %zu", id, it, r, size);

		/* Read it back at another buffer offset, slice poisoned first. */
		off_t boff2 = (boff + 4099) % (SLICE / 4);
		memset(host, T_POISON, SLICE);
		t_mem_put(&mem, slice, host, SLICE);
		r = cuFileRead(fh, base, size, foff, boff2);
		if (r != (ssize_t)size)
			T_FAIL("thread %ld iter %d: read returned %zd, expected %zu", id, it, r, size);
		t_mem_get(&mem, slice, back, SLICE);
		if (t_check_fill(back, (size_t)boff2, T_POISON, "slice before") ||
		    t_check_pattern(back + boff2, size, (uint64_t)foff, seed, "slice data") ||
		    t_check_fill(back + boff2 + size, SLICE - (size_t)boff2 - size, T_POISON,
				 "slice after"))
			T_FAIL("thread %ld iter %d: bad data (size %zu foff %lld boff %lld)", id, it,
			       size, (long long)foff, (long long)boff2);
	}
	free(host);
	free(back);
	return NULL;
}

static void run(int fd, const char *what)
{
	fprintf(stderr, "--- %s fd, %s\n", what, t_mem_kind_name(mem.kind));
	fh = t_register_fd(fd);
	t_run_numbered_threads(NTHREADS, worker, &barrier);
	cuFileHandleDeregister(fh);
	/* The file has the canonical pattern outside each thread's ranges;
	 * check the untouched top of every file slice. */
	const size_t n = FSLICE / 2 - SLICE / 2; /* writes end before FSLICE/2 + SLICE/2 */
	uint8_t *b = malloc(n);
	T_ASSERT(b != NULL);
	for (int i = 0; i < NTHREADS; i++) {
		uint64_t off = (uint64_t)i * FSLICE + FSLICE / 2 + SLICE / 2;
		T_EQ_U(t_pread_full(check_fd, b, n, off), n);
		if (t_check_pattern(b, n, off, 0, "file outside the threads' ranges"))
			T_FAIL("a thread wrote outside its range");
	}
	free(b);
}

int main(void)
{
	const char *path = t_make_pattern_file(FLEN, 0);
	int bfd = t_open(path, O_RDWR);
	check_fd = t_open(path, O_RDONLY);

	T_CUFILE_OK(cuFileDriverOpen());
	if (t_cuda_init() == 0)
		t_mem_alloc(&mem, T_MEM_DEVICE, NTHREADS * SLICE);
	else
		t_mem_alloc(&mem, T_MEM_HOST_MALLOC, NTHREADS * SLICE);
	T_CUFILE_OK(cuFileBufRegister(mem.ptr, mem.len, 0));

	run(bfd, "buffered");
	if (t_odirect_supported(path)) {
		int dfd = t_open(path, O_RDWR | O_DIRECT);
		run(dfd, "O_DIRECT");
		close(dfd);
	} else {
		fprintf(stderr, "NOTE: %s refuses O_DIRECT; O_DIRECT round skipped\n", t_dir());
	}

	T_CUFILE_OK(cuFileBufDeregister(mem.ptr));
	t_mem_free(&mem);
	T_CUFILE_OK(cuFileDriverClose());
	close(check_fd);
	close(bfd);
	return 0;
}
