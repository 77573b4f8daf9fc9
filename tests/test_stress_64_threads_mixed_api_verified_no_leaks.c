/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounded stress: 64 threads for a fixed time (OCF_STRESS_SECONDS, default
 * 6) mix every kind of call, eight roles of eight threads each:
 *
 *   reader     reads random ranges of a shared file through one shared
 *              handle into its own registered buffer
 *   buffers    allocates, registers, reads into, deregisters and frees
 *              buffers (device and host memory alternately)
 *   writer     writes a fresh pattern to its own region of a second file
 *              and reads it back at another buffer offset
 *   batch      sets up batches, submits 8 reads, collects, destroys
 *   handles    opens its own descriptor, registers it, reads, deregisters
 *   lifecycle  nested cuFileDriverOpen / read / cuFileDriverClose pairs
 *   stream     cuFileReadAsync on its own stream (unregistered host reads
 *              without CUDA)
 *   unaligned  odd sizes at odd file and buffer offsets, unregistered
 *              memory, with guard bytes checked
 *
 * Every byte read is checked against the pattern (a writer's against its
 * own last write).  Every role must complete an operation: when the fixed
 * time is up the threads keep going until each role has, and a role that
 * still has none after another 60 s (a limit only a hang reaches) fails
 * the test by name.  Main holds one driver reference throughout, so the
 * lifecycle threads' opens and closes nest; at the end everything is
 * deregistered and the driver closed, and the process must be back where
 * it started: no descriptor left open and (with the stand-in driver) no
 * stream, pinned allocation, host registration or device allocation.
 */
#include "async_test_util.h"

#include <stdatomic.h>

#ifdef OPENCUFILE_FAKE_CUDA
#include "fakecuda.h"
#endif

#define NTHREADS 64
#define NROLES 8
#define RFLEN (8 * T_MIB)    /* shared read-only file */
#define WREGION (256 * T_KIB) /* each writer's part of the write file */
#define MAXIO (512 * T_KIB)
#define HANG_LIMIT_S 60 /* after the fixed run; only a hang takes this long */

enum role { READER, BUFFERS, WRITER, BATCH, HANDLES, LIFECYCLE, STREAM, UNALIGNED };
static const char *const role_names[NROLES] = {"reader", "buffers", "writer", "batch",
					       "handles", "lifecycle", "stream", "unaligned"};

static const char *rpath;
static CUfileHandle_t rfh, wfh;
static int wfd_check;
static bool use_gpu;
static atomic_bool stop;
static atomic_long ops[NROLES];

struct rng {
	uint64_t s;
};

static uint64_t next(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static size_t pick(struct rng *r, size_t lo, size_t hi) { return lo + (size_t)(next(r) % (hi - lo + 1)); }

/* Reads [foff, +size) of the shared file into m at boff and checks it. */
static void read_check(CUfileHandle_t fh, struct t_mem *m, size_t size, off_t foff, off_t boff, uint8_t *scratch,
		       const char *who)
{
	ssize_t r = cuFileRead(fh, m->ptr, size, foff, boff);
	if (r != (ssize_t)size)
		T_FAIL("%s: read of %zu at %lld returned %zd", who, size, (long long)foff, r);
	t_mem_get(m, (size_t)boff, scratch, size);
	if (t_check_pattern(scratch, size, (uint64_t)foff, 0, who))
		T_FAIL("%s: bad data (size %zu, file offset %lld, buffer offset %lld)", who, size,
		       (long long)foff, (long long)boff);
}

/* Half the threads of each role use device memory (with a GPU). */
static enum t_mem_kind kind_for(long id)
{
	return use_gpu && (id / NROLES) % 2 == 0 ? T_MEM_DEVICE : T_MEM_HOST_MALLOC;
}

/* A random file offset where len bytes of the shared file remain. */
static off_t file_off(struct rng *r, size_t len) { return (off_t)pick(r, 0, RFLEN - len); }

static void *worker(void *arg)
{
	long id = (long)arg;
	enum role role = (enum role)(id % NROLES);
	struct rng rng = {0x9E3779B97F4A7C15ull * (uint64_t)(id + 1)};
	uint8_t *scratch = malloc(MAXIO + 2 * 4096);
	char who[64];
	struct t_mem m;
	CUstream stream = NULL;
	CUfileBatchHandle_t batch = NULL;

	T_ASSERT(scratch);
	snprintf(who, sizeof(who), "%s thread %ld", role_names[role], id);
	if (use_gpu)
		t_cuda_bind_thread();
	t_mem_alloc(&m, kind_for(id), MAXIO + 8192);
	if (role == READER || role == WRITER)
		T_CUFILE_OK(cuFileBufRegister(m.ptr, m.len, 0));
	if (role == STREAM && use_gpu)
		T_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

	for (unsigned it = 0; !atomic_load_explicit(&stop, memory_order_relaxed); it++) {
		size_t size = pick(&rng, 1, MAXIO);
		off_t foff = file_off(&rng, size);
		off_t boff = (off_t)pick(&rng, 0, 8192);

		switch (role) {
		case READER:
			read_check(rfh, &m, size, foff, boff, scratch, who);
			break;
		case BUFFERS: {
			struct t_mem b;
			t_mem_alloc(&b, it % 2 ? T_MEM_HOST_MALLOC : kind_for(id), size + 8192);
			T_CUFILE_OK(cuFileBufRegister(b.ptr, b.len, 0));
			read_check(rfh, &b, size, foff, boff, scratch, who);
			T_CUFILE_OK(cuFileBufDeregister(b.ptr));
			t_mem_free(&b);
			break;
		}
		case WRITER: {
			/* Writer k owns [k * WREGION, +WREGION) of the write file. */
			size_t wsize = pick(&rng, 1, WREGION);
			off_t wbase = (off_t)((size_t)(id / NROLES) * WREGION);
			off_t woff = wbase + (off_t)pick(&rng, 0, WREGION - wsize);
			uint32_t seed = (uint32_t)(id * 100000 + it + 1);
			t_mem_put_pattern(&m, (size_t)boff, wsize, (uint64_t)woff, seed);
			ssize_t r = cuFileWrite(wfh, m.ptr, wsize, woff, boff);
			if (r != (ssize_t)wsize)
				T_FAIL("%s: write of %zu returned %zd", who, wsize, r);
			off_t boff2 = (boff + 4097) % 8192;
			t_mem_fill(&m, (size_t)boff2, T_POISON, wsize);
			r = cuFileRead(wfh, m.ptr, wsize, woff, boff2);
			if (r != (ssize_t)wsize)
				T_FAIL("%s: read back of %zu returned %zd", who, wsize, r);
			t_mem_get(&m, (size_t)boff2, scratch, wsize);
			if (t_check_pattern(scratch, wsize, (uint64_t)woff, seed, who))
				T_FAIL("%s: read back differs", who);
			/* And the file itself, through the kernel. */
			T_EQ_U(t_pread_full(wfd_check, scratch, wsize, (uint64_t)woff), wsize);
			if (t_check_pattern(scratch, wsize, (uint64_t)woff, seed, who))
				T_FAIL("%s: file differs", who);
			break;
		}
		case BATCH: {
			CUfileIOParams_t io[8];
			CUfileIOEvents_t ev[8];
			size_t bs = size / 8 + 1;
			foff = file_off(&rng, 8 * bs);
			if (!batch)
				T_CUFILE_OK(cuFileBatchIOSetUp(&batch, 8));
			for (int i = 0; i < 8; i++)
				io[i] = t_batch_io(CUFILE_READ, rfh, m.ptr, bs, foff + (off_t)(i * bs),
						   (off_t)(i * bs), (void *)(uintptr_t)(i + 1));
			T_CUFILE_OK(cuFileBatchIOSubmit(batch, 8, io, 0));
			t_batch_collect(batch, 8, ev);
			for (int i = 0; i < 8; i++) {
				if (ev[i].status != CUFILE_COMPLETE || ev[i].ret != bs)
					T_FAIL("%s: entry status %d ret %zd", who, (int)ev[i].status,
					       (ssize_t)ev[i].ret);
			}
			t_mem_get(&m, 0, scratch, 8 * bs);
			if (t_check_pattern(scratch, 8 * bs, (uint64_t)foff, 0, who))
				T_FAIL("%s: bad data", who);
			if (it % 4 == 3) {
				cuFileBatchIODestroy(batch);
				batch = NULL;
			}
			break;
		}
		case HANDLES: {
			int fd = t_open(rpath, it % 2 ? O_RDONLY : O_RDWR);
			CUfileHandle_t h = t_register_fd(fd);
			read_check(h, &m, size, foff, boff, scratch, who);
			cuFileHandleDeregister(h);
			close(fd);
			break;
		}
		case LIFECYCLE:
			T_CUFILE_OK(cuFileDriverOpen());
			T_GE(cuFileUseCount(), 2);
			size = size % 65536 + 1;
			read_check(rfh, &m, size, file_off(&rng, size), boff, scratch, who);
			T_CUFILE_OK(cuFileDriverClose());
			break;
		case STREAM:
			if (stream) {
				size_t sz = size;
				off_t fo = foff, bo = boff;
				ssize_t bytes = -7;
				T_CUFILE_OK(cuFileReadAsync(rfh, m.ptr, &sz, &fo, &bo, &bytes, stream));
				T_CU(cuStreamSynchronize(stream));
				if (bytes != (ssize_t)size)
					T_FAIL("%s: stream read returned %zd, expected %zu", who, bytes, size);
				t_mem_get(&m, (size_t)boff, scratch, size);
				if (t_check_pattern(scratch, size, (uint64_t)foff, 0, who))
					T_FAIL("%s: bad data", who);
			} else {
				read_check(rfh, &m, size, foff, boff, scratch, who);
			}
			break;
		case UNALIGNED: {
			size_t us = size % 20000 + 1;
			off_t uo = (off_t)(pick(&rng, 0, 4000) | 1);
			off_t uf = file_off(&rng, us + 1) | 1;
			if (t_read_and_verify_window(rfh, &m, 0, us, uf, uo, (ssize_t)us, 0, 4096))
				T_FAIL("%s: unaligned read (size %zu)", who, us);
			break;
		}
		}
		atomic_fetch_add_explicit(&ops[role], 1, memory_order_relaxed);
	}
	if (batch)
		cuFileBatchIODestroy(batch);
	if (stream)
		T_CU(cuStreamDestroy(stream));
	if (role == READER || role == WRITER)
		T_CUFILE_OK(cuFileBufDeregister(m.ptr));
	t_mem_free(&m);
	free(scratch);
	return NULL;
}

/* Waits until every role has completed an operation: a count, not a time
 * (a slow machine or a sanitizer only makes this take longer).  The limit
 * turns a role that hangs, or never gets through, into a failure naming it;
 * the threads are left where they are, since one may be stuck in a call. */
static void every_role_progresses(void)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int missing = 0;
		for (int r = 0; r < NROLES; r++)
			missing += atomic_load(&ops[r]) == 0;
		if (!missing)
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= HANG_LIMIT_S)
			break;
		t_sleep_ms(10);
	}
	for (int r = 0; r < NROLES; r++)
		if (atomic_load(&ops[r]) == 0)
			fprintf(stderr, "  %s: no operation completed\n", role_names[r]);
	T_FAIL("a role completed no operation in the fixed run and %d s more", HANG_LIMIT_S);
}

int main(void)
{
	const char *env = getenv("OCF_STRESS_SECONDS");
	int seconds = env && *env ? atoi(env) : 6;
	pthread_t th[NTHREADS];

	use_gpu = t_cuda_init() == 0;
	rpath = t_make_pattern_file(RFLEN, 0);
	const char *wpath = t_make_pattern_file((NTHREADS / NROLES) * WREGION, 0);
	int fds_before = t_count_fds();
#ifdef OPENCUFILE_FAKE_CUDA
	size_t streams0 = fakecuda_live_streams(), pinned0 = fakecuda_live_pinned_allocations();
	size_t hostreg0 = fakecuda_live_host_registrations(), dev0 = fakecuda_live_device_allocations();
#endif

	T_CUFILE_OK(cuFileDriverOpen());
	int rfd = t_open(rpath, O_RDONLY);
	int wfd = t_open(wpath, O_RDWR);
	wfd_check = t_open(wpath, O_RDONLY);
	rfh = t_register_fd(rfd);
	wfh = t_register_fd(wfd);
	fprintf(stderr, "%d threads, %d s, %s memory\n", NTHREADS, seconds, use_gpu ? "device and host" : "host");
	for (long i = 0; i < NTHREADS; i++)
		T_EQ(pthread_create(&th[i], NULL, worker, (void *)i), 0);
	t_sleep_ms(seconds * 1000L);
	every_role_progresses();
	atomic_store(&stop, true);
	for (int i = 0; i < NTHREADS; i++)
		T_EQ(pthread_join(th[i], NULL), 0);

	long total = 0;
	for (int r = 0; r < NROLES; r++) {
		long n = atomic_load(&ops[r]);
		fprintf(stderr, "  %-9s %8ld operations\n", role_names[r], n);
		total += n;
	}
	fprintf(stderr, "  total     %8ld\n", total);

	cuFileHandleDeregister(rfh);
	cuFileHandleDeregister(wfh);
	close(rfd);
	close(wfd);
	close(wfd_check);
	T_EQ(cuFileUseCount(), 1);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);

	t_expect_fds(t_count_fds(), fds_before);
#ifdef OPENCUFILE_FAKE_CUDA
	T_EQ_U(fakecuda_live_streams(), streams0);
	T_EQ_U(fakecuda_live_pinned_allocations(), pinned0);
	T_EQ_U(fakecuda_live_host_registrations(), hostreg0);
	T_EQ_U(fakecuda_live_device_allocations(), dev0);
#endif
	return T_EXIT_PASS;
}
