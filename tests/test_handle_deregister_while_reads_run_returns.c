/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileHandleDeregister called while other threads' reads through the
 * same handle run (the plain library, the stand-in driver or the real
 * one; the hang hunt's "dereg" step): four threads read a warm file
 * through one handle into device memory - in order (read-ahead windows
 * open) and at random offsets, 64 KiB to 8 MiB - while the main thread
 * deregisters the handle 0-4 ms after each reader's first read.  Each round:
 *   - the call returns within its bound (OPENCUFILE_DEREGISTER_WAIT_MS,
 *     500 ms here) plus a margin, never hangs;
 *   - every read returns its full count with the file's bytes, or an
 *     error (the handle gone), never a short or wrong result, and nothing
 *     is stored past its buffer;
 *   - once the readers stopped, no descriptor of the file but the test's
 *     own is open.
 * 40 rounds, buffered and O_DIRECT descriptors in turn.
 */
#include <stdatomic.h>

#include "test.h"

#include <dirent.h>
#include <pthread.h>
#include <time.h>

#define FLEN (64 * T_MIB)
#define MAXREQ (8 * T_MIB)
#define GUARD 4096
#define ROUNDS 40
#define NREAD 4

static const char *path;
static uint8_t *truth;
static CUfileHandle_t shared;
static atomic_int stop, readers_going;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct reader {
	int id;
	uint32_t seed;
	unsigned ok, failed;
};

static void *reader_main(void *p)
{
	struct reader *r = p;
	t_cuda_bind_thread();
	CUdeviceptr dev = t_dev_alloc(MAXREQ + GUARD);
	uint8_t *got = malloc(MAXREQ + GUARD);
	T_ASSERT(got != NULL);
	uint32_t x = r->seed;
	off_t seq = (off_t)r->id * (off_t)(FLEN / NREAD);
	while (!atomic_load(&stop)) {
		x = x * 1103515245u + 12345u;
		static const size_t sizes[] = {64 * T_KIB, T_MIB, 4 * T_MIB, MAXREQ};
		size_t len = sizes[(x >> 8) % 4];
		off_t off;
		if (r->id % 2 == 0) { /* in order through its quarter */
			if (seq + (off_t)T_MIB > (off_t)(r->id + 1) * (off_t)(FLEN / NREAD))
				seq = (off_t)r->id * (off_t)(FLEN / NREAD);
			len = T_MIB;
			off = seq;
			seq += (off_t)len;
		} else {
			off = (off_t)((x >> 4) % ((FLEN - MAXREQ) / 4096)) * 4096;
		}
		t_dev_fill(dev, T_POISON, len + GUARD);
		ssize_t n = cuFileRead(shared, (void *)(uintptr_t)dev, len, off, 0);
		t_dev_get(got, dev, len + GUARD);
		if (t_check_fill(got + len, GUARD, T_POISON, "past the request"))
			T_FAIL("reader %d: stored past the request", r->id);
		if (n < 0) {
			r->failed++;
			continue;
		}
		if ((size_t)n != len)
			T_FAIL("reader %d: %zu bytes at %lld returned %zd", r->id, len, (long long)off, n);
		if (memcmp(got, truth + off, len) != 0)
			T_FAIL("reader %d: %zu bytes at %lld differ from the file", r->id, len, (long long)off);
		if (r->ok++ == 0)
			atomic_fetch_add(&readers_going, 1);
	}
	T_CU(cuMemFree(dev));
	free(got);
	return NULL;
}

int main(void)
{
	setenv("OPENCUFILE_DEREGISTER_WAIT_MS", "500", 0);
	t_cuda_require();
	path = t_make_pattern_file(FLEN, 3);
	t_require_local_odirect_fs(path);
	truth = malloc(FLEN);
	T_ASSERT(truth != NULL);
	int tfd = t_open(path, O_RDONLY);
	T_EQ_U(t_pread_full(tfd, truth, FLEN, 0), FLEN); /* and cached */
	close(tfd);
	bool odirect_ok = t_odirect_supported(path);
	unsigned ok = 0, failed = 0;
	double worst = 0;
	uint32_t x = 7;
	for (int round = 0; round < ROUNDS; round++) {
		bool direct = odirect_ok && round % 2;
		t_set_case("round %d, %s descriptor", round, direct ? "O_DIRECT" : "buffered");
		int fd = t_open(path, O_RDONLY | (direct ? O_DIRECT : 0));
		shared = t_register_fd(fd);
		atomic_store(&stop, 0);
		struct reader r[NREAD];
		pthread_t th[NREAD];
		for (int i = 0; i < NREAD; i++) {
			r[i] = (struct reader){.id = i, .seed = 11u * (uint32_t)(round + 1) + (uint32_t)i};
			T_EQ(pthread_create(&th[i], NULL, reader_main, &r[i]), 0);
		}
		/* Every reader has read once: the call meets reads in flight. */
		for (int w = 0; atomic_load(&readers_going) < NREAD * (round + 1) && w < 10000; w++)
			usleep(1000);
		x = x * 1103515245u + 12345u;
		usleep((x >> 8) % 4000);
		double t0 = now_ms();
		cuFileHandleDeregister(shared);
		double took = now_ms() - t0;
		if (took > worst)
			worst = took;
		if (took > 500 + 2000)
			T_FAIL("cuFileHandleDeregister took %.0f ms (bound 500)", took);
		atomic_store(&stop, 1);
		for (int i = 0; i < NREAD; i++) {
			T_EQ(pthread_join(th[i], NULL), 0);
			ok += r[i].ok;
			failed += r[i].failed;
		}
		close(fd);
		T_EQ(t_fds_of_path(path), 0);
	}
	printf("%d rounds: %u reads whole and right, %u failed (the handle gone); the longest "
	       "cuFileHandleDeregister %.1f ms\n",
	       ROUNDS, ok, failed, worst);
	T_GT(ok, 0);
	T_GT(failed, 0);
	free(truth);
	T_CUFILE_OK(cuFileDriverClose());
	t_cleanup_files();
	printf("PASS\n");
	return T_EXIT_PASS;
}
