/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads of a buffered fd whose file is partly in the page cache and partly
 * evicted (fdatasync + POSIX_FADV_DONTNEED, then some ranges read back):
 *   - every read returns exactly the file's bytes, the exact short count at
 *     end of file, and writes nothing outside the returned bytes (ranges
 *     crossing cached/uncached borders, unaligned offsets, tiny reads, the
 *     whole file in one call, split across the engine's workers);
 *   - the uncached part is read around the page cache: device-memory reads
 *     (staged, so every uncached block goes through the O_DIRECT twin) leave
 *     an evicted region evicted (a buffered read would have cached it);
 *   - host memory, aligned and unaligned, reads the same bytes;
 *   - threads reading at once get their own bytes;
 *   - a page dirtied by a buffered write inside the uncached region is read
 *     back with its new bytes (the direct read writes it back first).
 * Needs a file system with O_DIRECT (the build directory; tmpfs skips) and
 * one where POSIX_FADV_DONTNEED empties the page cache of the file.
 */
#include "test.h"

#include <pthread.h>

#define FLEN (24 * T_MIB + 333)
#define BUFLEN (FLEN + 2 * 4096)
#define NTHREADS 4
#define ITERS 12

/* Regions read back into the page cache after the eviction. */
static const struct {
	off_t off;
	size_t len;
} warm[] = {{0, 3 * T_MIB}, {10 * T_MIB, 1 * T_MIB}, {20 * T_MIB, 1 * T_MIB}};

/* A region that must stay out of the page cache while only staged
 * (device-memory) reads run: no read below starts or ends inside it. */
#define COLD_LO (5 * T_MIB)
#define COLD_HI (8 * T_MIB)

static const struct {
	off_t foff;
	size_t size;
	off_t boff;
} cases[] = {
	{0, FLEN + 4096, 0},                 /* whole file, short at EOF, split */
	{1 * T_MIB + 5, 12 * T_MIB + 7, 3},  /* cached, cold, cached, cold */
	{3 * T_MIB - 100, 1 * T_MIB, 0},     /* ends of the cached prefix */
	{9 * T_MIB + 1, 1 * T_MIB + 3, 4096},/* cold into cached */
	{10 * T_MIB + 4096, 64 * T_KIB, 5},  /* cached only */
	{20 * T_MIB - 7, 2 * T_MIB, 0},      /* cold, cached, cold */
	{FLEN - 1000, 64 * T_KIB, 0},        /* cold tail crossing EOF */
	{FLEN - 200 * T_KIB - 7, 300 * T_KIB, 5},
	{FLEN - 4096, 4096, 0},
	{FLEN, 4096, 0},                     /* at EOF */
	{3 * 4096 + 1, 100, 0},              /* tiny: plain pread */
	{9 * T_MIB - 3, 70 * T_KIB, 1},      /* just above the probing threshold */
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *path;
static CUfileHandle_t fh;
static int failures;

/* Pages of [lo, hi) of the file in the page cache. */
static size_t cached_pages(off_t lo, off_t hi) { return t_cached_pages(path, FLEN, lo, hi); }

static ssize_t expected(off_t foff, size_t size)
{
	if (foff >= (off_t)FLEN)
		return 0;
	return (ssize_t)((size_t)(FLEN - foff) < size ? (size_t)(FLEN - foff) : size);
}

static void run_case(struct t_mem *m, size_t i)
{
	t_set_case("%s, file offset %lld, size %zu, buffer offset %lld", t_mem_kind_name(m->kind),
		   (long long)cases[i].foff, cases[i].size, (long long)cases[i].boff);
	if (t_read_and_verify_window(fh, m, 0, cases[i].size, cases[i].foff, cases[i].boff,
				     expected(cases[i].foff, cases[i].size), 0, 4096)) {
		fprintf(stderr, "FAIL: %s\n", t_case);
		failures++;
	}
}

static void *reader(void *arg)
{
	long id = (long)arg;
	struct t_mem m;
	t_cuda_bind_thread();
	t_mem_alloc(&m, T_MEM_DEVICE, 4 * T_MIB);
	for (int it = 0; it < ITERS; it++) {
		uint64_t x = (uint64_t)(id * 7919 + it * 104729) * 2654435761u;
		off_t foff = (off_t)(x % FLEN);
		size_t size = 1 + (size_t)((x >> 20) % (3 * T_MIB));
		off_t boff = (off_t)((x >> 7) % 4097);
		if (t_read_and_verify_window(fh, &m, 0, size, foff, boff, expected(foff, size), 0, 4096))
			T_FAIL("thread %ld iteration %d: file offset %lld, size %zu, buffer offset %lld", id, it,
			       (long long)foff, size, (long long)boff);
	}
	t_mem_free(&m);
	return NULL;
}

int main(void)
{
	t_cuda_require();
	path = t_make_pattern_file(FLEN, 0);
	if (!t_odirect_supported(path))
		T_SKIP("the file system of %s refuses O_DIRECT", t_dir());

	int fd = t_open(path, O_RDONLY);
	T_SYS(fdatasync(fd));
	T_SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	if (cached_pages(0, FLEN) != 0)
		T_SKIP("POSIX_FADV_DONTNEED left pages of the file cached");
	/* Read some ranges back, without readahead beyond them. */
	T_SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM));
	char *tmp = malloc(3 * T_MIB);
	T_ASSERT(tmp != NULL);
	for (size_t i = 0; i < N(warm); i++)
		T_EQ_U(t_pread_full(fd, tmp, warm[i].len, (uint64_t)warm[i].off), warm[i].len);
	free(tmp);
	close(fd);
	if (cached_pages(COLD_LO, COLD_HI) != 0)
		T_SKIP("readahead cached the region meant to stay cold");
	T_ASSERT(cached_pages(0, 3 * T_MIB) > 0);

	int bfd = t_open(path, O_RDWR);
	fh = t_register_fd(bfd);

	struct t_mem dev;
	t_mem_alloc(&dev, T_MEM_DEVICE, BUFLEN);
	for (size_t i = 0; i < N(cases); i++)
		run_case(&dev, i);
	t_set_case("device memory reads");
	/* Staged reads took the uncached blocks from the disk directly. */
	T_EQ_U(cached_pages(COLD_LO, COLD_HI), 0);

	pthread_t th[NTHREADS];
	for (long i = 0; i < NTHREADS; i++)
		T_ASSERT(pthread_create(&th[i], NULL, reader, (void *)i) == 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	t_set_case("concurrent device reads");
	T_EQ_U(cached_pages(COLD_LO, COLD_HI), 0);

	enum t_mem_kind host[] = {T_MEM_HOST_MALLOC, T_MEM_HOST_MMAP};
	for (size_t k = 0; k < N(host); k++) {
		struct t_mem m;
		t_mem_alloc(&m, host[k], BUFLEN);
		for (size_t i = 0; i < N(cases); i++)
			run_case(&m, i);
		t_mem_free(&m);
	}

	/* A page dirtied inside the evicted region (it was not cached before:
	 * the region is cold again after DONTNEED). */
	int efd = t_open(path, O_RDONLY);
	T_SYS(posix_fadvise(efd, COLD_LO, COLD_HI - COLD_LO, POSIX_FADV_DONTNEED));
	close(efd);
	const off_t doff = 6 * T_MIB + 100;
	const size_t dlen = 5000;
	t_pwrite_pattern(bfd, (uint64_t)doff, dlen, 7);
	size_t rlen = COLD_HI - COLD_LO;
	uint8_t *back = malloc(rlen);
	T_ASSERT(back != NULL);
	t_set_case("dirty page inside the uncached region");
	T_EQ(cuFileRead(fh, dev.ptr, rlen, COLD_LO, 0), (ssize_t)rlen);
	t_mem_get(&dev, 0, back, rlen);
	size_t at = (size_t)(doff - COLD_LO);
	if (t_check_pattern(back, at, COLD_LO, 0, "before the dirty bytes") ||
	    t_check_pattern(back + at, dlen, (uint64_t)doff, 7, "the dirty bytes") ||
	    t_check_pattern(back + at + dlen, rlen - at - dlen, (uint64_t)doff + dlen, 0, "after the dirty bytes"))
		failures++;
	free(back);

	t_mem_free(&dev);
	cuFileHandleDeregister(fh);
	close(bfd);
	T_CUFILE_OK(cuFileDriverClose());
	if (failures)
		T_FAIL("%d case(s) failed", failures);
	printf("partly cached reads: %zu cases x 3 memory kinds, %d threads: ok\n", N(cases), NTHREADS);
	return T_EXIT_PASS;
}
