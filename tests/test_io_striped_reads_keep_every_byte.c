/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device reads of 512 KiB to 8 MiB by a caller alone take the striped path (stripe.c):
 * helpers read 256 KiB pieces into the caller's staging buffers and the
 * caller copies each stripe once (2 MiB, or half the request rounded up to
 * a piece when that is less).  Every byte is checked, and every
 * byte around the requested range must keep its poison:
 *  - sizes at and around the piece, stripe and path boundaries (the first
 *    size above 8 MiB goes the other way), file offsets aligned and not,
 *    buffer offsets aligned and not, registered buffers and not, buffered
 *    and O_DIRECT descriptors;
 *  - end of file inside a stripe: the read returns what the file holds and
 *    nothing after it reaches the buffer;
 *  - the path is the striped one: one host-to-device copy per stripe
 *    (counted in the stand-in driver) for reads that start on a stripe;
 *  - six threads at once, each its own slice of one shared buffer and its
 *    own file range: a read stripes only while its caller is alone in the
 *    engine, so some of them stripe and some take the other path;
 *  - slow streams (the copies land 2 ms late), so that helpers wait for
 *    stripe buffers the caller has not got back yet.
 * The ctest entry sets OPENCUFILE_PARALLEL=8, so that helpers are offered
 * whatever the machine's CPU count, and OPENCUFILE_STRIPE_MIN_KB=512 (the
 * default path starts at 2 MiB).
 */
#include "test.h"
#include "fakecuda.h"

#include <pthread.h>

#define FLEN (40 * T_MIB)
#define GUARD (64 * T_KIB)
#define MAXREQ (9 * T_MIB)
#define ALLOC (GUARD + 4096 + MAXREQ + GUARD)

static const char *path;

struct shape {
	size_t size;
	off_t foff;
	off_t boff;
};

static void run_shapes(CUfileHandle_t fh, struct t_mem *m, const char *what)
{
	static const size_t sizes[] = {512 * T_KIB,	 512 * T_KIB + 1, 768 * T_KIB - 4096,
				       T_MIB,		 T_MIB + 4095,	  3 * T_MIB + 17,
				       4 * T_MIB,	 8 * T_MIB,	  8 * T_MIB + 1};
	static const off_t foffs[] = {0, 4095, T_MIB - 1, 8192};
	static const off_t boffs[] = {0, 3};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t j = 0; j < sizeof(foffs) / sizeof(foffs[0]); j++)
			for (size_t k = 0; k < sizeof(boffs) / sizeof(boffs[0]); k++) {
				t_set_case("%s: read of %zu at file offset %lld into buffer offset %lld", what,
					   sizes[i], (long long)foffs[j], (long long)boffs[k]);
				if (t_read_and_verify_window(fh, m, GUARD, sizes[i], foffs[j], boffs[k],
							     (ssize_t)sizes[i], 0, GUARD))
					T_FAIL("bad read");
			}
	/* End of file inside a stripe: 1.5 MiB of a 4 MiB read. */
	size_t have = 3 * T_MIB / 2;
	t_set_case("%s: read of 4 MiB that meets end of file after %zu bytes", what, have);
	if (t_read_and_verify_window(fh, m, GUARD, 4 * T_MIB, (off_t)(FLEN - have), 5, (ssize_t)have, 0, GUARD))
		T_FAIL("bad read at end of file");
	/* Past end of file: nothing. */
	t_set_case("%s: read of 2 MiB past end of file", what);
	if (t_read_and_verify_window(fh, m, GUARD, 2 * T_MIB, (off_t)FLEN + 4096, 0, 0, 0, GUARD))
		T_FAIL("bad read past end of file");
}

/* One copy per stripe: the read went the striped way.  Stripes are 2 MiB,
 * or half the request rounded up to whole 256 KiB pieces when that is
 * less: 512 KiB for 1 MiB, 1.75 MiB for 3 MiB + 17. */
static void check_copies(CUfileHandle_t fh, struct t_mem *m)
{
	static const struct {
		size_t size;
		unsigned long copies;
	} c[] = {{T_MIB, 2}, {4 * T_MIB, 2}, {8 * T_MIB, 4}, {3 * T_MIB + 17, 2}};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		t_set_case("copies of a striped read of %zu at offset 0", c[i].size);
		unsigned long before = fakecuda_call_count("cuMemcpyHtoDAsync_v2");
		T_EQ(cuFileRead(fh, (char *)m->ptr + GUARD, c[i].size, 0, 0), (ssize_t)c[i].size);
		T_EQ_U(fakecuda_call_count("cuMemcpyHtoDAsync_v2") - before, c[i].copies);
	}
}

struct worker_arg {
	CUfileHandle_t fh;
	struct t_mem *m;
	int id;
};

#define NTHREADS 6
#define SLICE (4 * T_MIB + 2 * GUARD)

static void *worker(void *p)
{
	struct worker_arg *a = p;
	t_cuda_bind_thread();
	struct t_mem slice = {a->m->kind, (char *)a->m->ptr + (size_t)a->id * SLICE, SLICE};
	uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(a->id + 1);
	for (int it = 0; it < 12; it++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t size = 512 * T_KIB + (size_t)(rng >> 33) % (7 * T_MIB / 2);
		off_t foff = (off_t)((rng >> 13) % (FLEN - size));
		off_t boff = (off_t)((rng >> 7) % 4096);
		/* No t_set_case here: t_case is one buffer for the process. */
		if (t_read_and_verify_window(a->fh, &slice, GUARD, size, foff, boff, (ssize_t)size, 0, GUARD))
			T_FAIL("thread %d, iteration %d: bad read of %zu at %lld into offset %lld", a->id, it, size,
			       (long long)foff, (long long)boff);
	}
	return NULL;
}

static void run_threads(CUfileHandle_t fh)
{
	t_set_case("six threads reading at once");
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, (size_t)NTHREADS * SLICE);
	pthread_t th[NTHREADS];
	struct worker_arg args[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		args[i] = (struct worker_arg){fh, &m, i};
		T_EQ(pthread_create(&th[i], NULL, worker, &args[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	t_mem_free(&m);
}

int main(void)
{
	t_cuda_require();
	path = t_make_pattern_file(FLEN, 0);
	T_CUFILE_OK(cuFileDriverOpen());
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, ALLOC);

	int fd = t_open(path, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	run_shapes(fh, &m, "buffered, unregistered");
	check_copies(fh, &m);
	T_CUFILE_OK(cuFileBufRegister(m.ptr, ALLOC, 0));
	run_shapes(fh, &m, "buffered, registered");
	check_copies(fh, &m);
	/* Helpers wait for stripe buffers while the copies are slow. */
	fakecuda_set_stream_delay_us(2000);
	t_set_case("slow streams");
	if (t_read_and_verify_window(fh, &m, GUARD, 8 * T_MIB, 4095, 3, (ssize_t)(8 * T_MIB), 0, GUARD))
		T_FAIL("bad read with slow streams");
	run_threads(fh);
	fakecuda_set_stream_delay_us(0);
	run_threads(fh);
	T_CUFILE_OK(cuFileBufDeregister(m.ptr));
	cuFileHandleDeregister(fh);
	close(fd);

	if (t_odirect_supported(path)) {
		fd = t_open(path, O_RDONLY | O_DIRECT);
		fh = t_register_fd(fd);
		run_shapes(fh, &m, "O_DIRECT, unregistered");
		check_copies(fh, &m);
		cuFileHandleDeregister(fh);
		close(fd);
	} else {
		fprintf(stderr, "O_DIRECT not supported here: the direct cases are not run\n");
	}

	t_mem_free(&m);
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
