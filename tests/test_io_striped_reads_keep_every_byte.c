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
 * default path starts at 1 MiB).
 *
 *   test_io_striped_reads_keep_every_byte [striped|lone]
 *
 * "lone": reads of 4 KiB to 2 MiB by a caller alone in the engine below
 * the striped path (its ctest entries start it at 2 MiB; the default is
 * 1 MiB), the same checks; by default
 * (OPENCUFILE_ALONE_CHUNK_KB unset or 256) such a read is cut into up to
 * three even chunks of at least 256 KiB, so that reading and copying
 * overlap (chunking.c): 1 MiB in three copies, 600 and 512 KiB
 * in two, 300 and 256 KiB in one (never a short last chunk); a 1 MiB write
 * still one; with the variable 0 every such read is one copy.
 * Four threads at once: some alone, some not.
 */
#include "test.h"
#include "fakecuda.h"

#define FLEN (40 * T_MIB)
#define GUARD (64 * T_KIB)
#define MAXREQ (9 * T_MIB)
#define ALLOC (GUARD + 4096 + MAXREQ + GUARD)

static const char *path;
static bool lone;    /* the "lone" mode */
static bool chunked; /* OPENCUFILE_ALONE_CHUNK_KB unset or not 0 */

struct shape {
	size_t size;
	off_t foff;
	off_t boff;
};

static void run_shapes(CUfileHandle_t fh, struct t_mem *m, const char *what)
{
	static const size_t striped_sizes[] = {512 * T_KIB, 512 * T_KIB + 1, 768 * T_KIB - 4096,
					       T_MIB,	    T_MIB + 4095,    3 * T_MIB + 17,
					       4 * T_MIB,   8 * T_MIB,	     8 * T_MIB + 1};
	static const size_t lone_sizes[] = {4096,	 256 * T_KIB, 256 * T_KIB + 1, 300 * T_KIB,  512 * T_KIB - 17,
					    768 * T_KIB, T_MIB,	      T_MIB + 4095,    2 * T_MIB - 1};
	const size_t *sizes = lone ? lone_sizes : striped_sizes;
	size_t nsizes = lone ? sizeof(lone_sizes) / sizeof(lone_sizes[0])
			     : sizeof(striped_sizes) / sizeof(striped_sizes[0]);
	static const off_t foffs[] = {0, 4095, T_MIB - 1, 8192};
	static const off_t boffs[] = {0, 3};
	for (size_t i = 0; i < nsizes; i++)
		for (size_t j = 0; j < sizeof(foffs) / sizeof(foffs[0]); j++)
			for (size_t k = 0; k < sizeof(boffs) / sizeof(boffs[0]); k++) {
				t_set_case("%s: read of %zu at file offset %lld into buffer offset %lld", what,
					   sizes[i], (long long)foffs[j], (long long)boffs[k]);
				if (t_read_and_verify_window(fh, m, GUARD, sizes[i], foffs[j], boffs[k],
							     (ssize_t)sizes[i], 0, GUARD))
					T_FAIL("bad read");
			}
	/* End of file inside a stripe: 1.5 MiB of a 4 MiB read (lone: 300
	 * KiB + 5 of a 1 MiB read, inside its second chunk). */
	size_t want = lone ? T_MIB : 4 * T_MIB, have = lone ? 300 * T_KIB + 5 : 3 * T_MIB / 2;
	t_set_case("%s: read of %zu that meets end of file after %zu bytes", what, want, have);
	if (t_read_and_verify_window(fh, m, GUARD, want, (off_t)(FLEN - have), 5, (ssize_t)have, 0, GUARD))
		T_FAIL("bad read at end of file");
	/* Past end of file: nothing. */
	t_set_case("%s: read of 2 MiB past end of file", what);
	if (t_read_and_verify_window(fh, m, GUARD, 2 * T_MIB, (off_t)FLEN + 4096, 0, 0, 0, GUARD))
		T_FAIL("bad read past end of file");
}

/* One copy per stripe: the read went the striped way.  Stripes are 2 MiB,
 * or half the request rounded up to whole 256 KiB pieces when that is
 * less: 512 KiB for 1 MiB, 1.75 MiB for 3 MiB + 17. */
struct copies {
	size_t size;
	unsigned long copies;
};

static void check_copies(CUfileHandle_t fh, struct t_mem *m)
{
	static const struct copies striped[] = {{T_MIB, 2}, {4 * T_MIB, 2}, {8 * T_MIB, 4}, {3 * T_MIB + 17, 2}};
	static const struct copies alone[] = {{T_MIB, 3},	    {600 * T_KIB, 2}, {512 * T_KIB, 2},
					      {300 * T_KIB, 1},	    {256 * T_KIB, 1}, {64 * T_KIB, 1},
					      {2 * T_MIB - 4096, 3}, {776 * T_KIB, 3}};
	const struct copies *c = lone ? alone : striped;
	size_t n = lone ? sizeof(alone) / sizeof(alone[0]) : sizeof(striped) / sizeof(striped[0]);
	for (size_t i = 0; i < n; i++) {
		t_set_case("copies of a %s read of %zu at offset 0", lone ? "lone" : "striped", c[i].size);
		unsigned long before = fakecuda_call_count("cuMemcpyHtoDAsync_v2");
		T_EQ(cuFileRead(fh, (char *)m->ptr + GUARD, c[i].size, 0, 0), (ssize_t)c[i].size);
		T_EQ_U(fakecuda_call_count("cuMemcpyHtoDAsync_v2") - before, !lone || chunked ? c[i].copies : 1);
	}
	if (lone) {
		/* Writes keep whole chunks.  The buffer holds the file's first
		 * bytes: the file is unchanged. */
		t_set_case("copies of a lone write of 1 MiB");
		unsigned long before = fakecuda_call_count("cuMemcpyDtoHAsync_v2");
		T_EQ(cuFileWrite(fh, (char *)m->ptr + GUARD, T_MIB, 0, 0), (ssize_t)T_MIB);
		T_EQ_U(fakecuda_call_count("cuMemcpyDtoHAsync_v2") - before, 1);
	}
}

/* Six threads at once (lone: four), each its own slice of one buffer and
 * its own file ranges: some stripe (are alone) and some do not. */
static void run_threads(CUfileHandle_t fh)
{
	t_set_case("%s threads reading at once", lone ? "four" : "six");
	struct t_slice_reads striped = {fh, 512 * T_KIB, 7 * T_MIB / 2, GUARD, FLEN, 12};
	struct t_slice_reads alone = {fh, 1, 2 * T_MIB, GUARD, FLEN, 16};
	t_threads_read_slices(lone ? &alone : &striped, lone ? 4 : 6);
}

int main(int argc, char **argv)
{
	lone = argc > 1 && !strcmp(argv[1], "lone");
	const char *env = getenv("OPENCUFILE_ALONE_CHUNK_KB");
	chunked = !env || !*env || strcmp(env, "0");
	t_cuda_require();
	path = t_make_pattern_file(FLEN, 0);
	T_CUFILE_OK(cuFileDriverOpen());
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, ALLOC);

	int fd = t_open(path, O_RDWR); /* lone: one write, of the file's own bytes */
	CUfileHandle_t fh = t_register_fd(fd);
	run_shapes(fh, &m, "buffered, unregistered");
	check_copies(fh, &m);
	T_CUFILE_OK(cuFileBufRegister(m.ptr, ALLOC, 0));
	run_shapes(fh, &m, "buffered, registered");
	check_copies(fh, &m);
	/* Helpers wait for stripe buffers while the copies are slow (lone: a
	 * chunk's buffer comes back only once its copy landed). */
	fakecuda_set_stream_delay_us(2000);
	t_set_case("slow streams");
	size_t slow = lone ? T_MIB + 5 : 8 * T_MIB;
	if (t_read_and_verify_window(fh, &m, GUARD, slow, 4095, 3, (ssize_t)slow, 0, GUARD))
		T_FAIL("bad read with slow streams");
	run_threads(fh);
	fakecuda_set_stream_delay_us(0);
	run_threads(fh);
	T_CUFILE_OK(cuFileBufDeregister(m.ptr));
	cuFileHandleDeregister(fh);
	close(fd);

	if (t_odirect_supported(path)) {
		fd = t_open(path, O_RDWR | O_DIRECT);
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
