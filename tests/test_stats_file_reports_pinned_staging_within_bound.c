/* SPDX-License-Identifier: Apache-2.0 */
/* The library pins staging memory for device I/O only up to the bound the
 * POSIX pool slabs set, and reports it: the stats file written at close
 * holds the pinned peak (> 0 after device reads, <= the bound), the bound,
 * and 0 bytes still pinned; `gdscheck -s FILE` (argv[1]) prints them.
 * Sixteen threads read into device memory at once with a budget of a few
 * lanes, so lanes are contended and the bound is what limits them. */
#include <pthread.h>

#include "stats_test_util.h"

#define THREADS 16
#define IO (1u << 20)
#define ROUNDS 6

static CUfileHandle_t fh;

static void *reader(void *arg)
{
	long id = (long)arg;
	t_cuda_bind_thread();
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, IO);
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t off = (uint64_t)((id * ROUNDS + r) % 8) * IO;
		if (t_read_and_verify(fh, &m, 0, IO, (off_t)off, 0, IO, 0) != 0)
			T_FAIL("thread %ld round %d: read failed or wrong data", id, r);
	}
	t_mem_free(&m);
	return NULL;
}

int main(int argc, char **argv)
{
	t_clear_config_env();
	if (argc < 2)
		T_FAIL("usage: %s GDSCHECK", argv[0]);
	t_cuda_require();
	char pattern[600], path[600];
	snprintf(pattern, sizeof(pattern), "%s/ocf_pinned_%%p.bin", t_dir());
	snprintf(path, sizeof(path), "%s/ocf_pinned_%d.bin", t_dir(), (int)getpid());
	unlink(path);
	setenv("OPENCUFILE_STATS_FILE", pattern, 1);
	/* 256 KiB staging chunks, 4 MiB of slabs: a handful of lanes. */
	t_use_config(t_write_text_file("{ \"profile\": { \"cufile_stats\": 1 },"
				       "  \"properties\": { \"max_direct_io_size_kb\": 256,"
				       "    \"posix_pool_slab_size_kb\": [1024], \"posix_pool_slab_count\": [4] } }"));
	const char *data = t_make_pattern_file(8u * IO, 0);
	int fd = t_open(data, O_RDONLY);
	fh = t_register_fd(fd);
	pthread_t th[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, reader, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());

	struct ocf_stats_file f;
	t_read_stats_file(path, &f);
	T_EQ(f.version, OCF_STATS_FILE_VERSION);
	fprintf(stderr, "pinned now %llu peak %llu bound %llu\n", (unsigned long long)f.pinned_bytes,
		(unsigned long long)f.pinned_peak_bytes, (unsigned long long)f.pinned_bound_bytes);
	T_EQ_U(f.pinned_bytes, 0);
	T_ASSERT(f.pinned_peak_bytes > 0);
	T_ASSERT(f.pinned_bound_bytes > 0);
	/* Lanes never exceed the bound; each arena may add one alignment
	 * unit of padding, and there are at most a few arenas here. */
	T_LE_U(f.pinned_peak_bytes, f.pinned_bound_bytes + 4u * 65536u);
	/* The bound is the slab budget (4 MiB) rounded to whole lanes, and
	 * at least two lanes. */
	T_LE_U(f.pinned_bound_bytes, 4u << 20);

	const char *txt = t_gdscheck_stats(argv[1], path);
	T_ASSERT(strstr(txt, "pinned staging memory  now 0.0 MiB  peak ") != NULL);
	unlink(path);
	return T_EXIT_PASS;
}
