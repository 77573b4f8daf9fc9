/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads and writes into memory of every GPU of the machine at once: for each
 * GPU, threads with that GPU's primary context current read a shared file
 * into their own device buffer (large reads, split across the engine's
 * workers, and small ones) and write it back to a file of their own, all
 * verified byte for byte.  Exercises the per-GPU contexts, staging lanes and
 * streams.  Skips (77) with fewer than two GPUs.
 */
#include <pthread.h>

#include "test.h"

#define THREADS_PER_GPU 3
#define ROUNDS 4
#define BIG (9 * T_MIB + 17) /* above the 8 MiB split threshold */

static const char *g_path;
static CUfileHandle_t g_fh;

struct worker {
	int ordinal;
	int index;
	CUcontext ctx;
	const char *wpath; /* a file of this worker's own, for the write-back */
	int failed;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	T_CU(cuCtxSetCurrent(w->ctx));
	CUdeviceptr d = 0;
	T_CU(cuMemAlloc(&d, BIG + 4096));
	uint8_t *host = malloc(BIG);
	T_ASSERT(host != NULL);

	int wfd = t_open(w->wpath, O_RDWR);
	CUfileHandle_t wfh = t_register_fd(wfd);

	for (int round = 0; round < ROUNDS && !w->failed; round++) {
		off_t foff = (off_t)(round * 4096 + w->index * 3 + w->ordinal);
		size_t len = round % 2 ? BIG : 65536 + (size_t)w->index;
		t_dev_fill(d, T_POISON, BIG + 4096);
		ssize_t r = cuFileRead(g_fh, (void *)(uintptr_t)d, len, foff, 7);
		if (r != (ssize_t)len) {
			fprintf(stderr, "gpu %d worker %d: read returned %zd, expected %zu\n", w->ordinal, w->index, r,
				len);
			w->failed = 1;
			break;
		}
		t_dev_get(host, d + 7, len);
		if (t_check_pattern(host, len, (uint64_t)foff, 0, "read into this GPU")) {
			w->failed = 1;
			break;
		}
		ssize_t wr = cuFileWrite(wfh, (void *)(uintptr_t)d, len, 0, 7);
		if (wr != (ssize_t)len) {
			fprintf(stderr, "gpu %d worker %d: write returned %zd\n", w->ordinal, w->index, wr);
			w->failed = 1;
			break;
		}
		memset(host, 0, len);
		T_EQ_U(t_pread_full(wfd, host, len, 0), len);
		if (t_check_pattern(host, len, (uint64_t)foff, 0, "written from this GPU"))
			w->failed = 1;
	}
	cuFileHandleDeregister(wfh);
	close(wfd);
	free(host);
	T_CU(cuMemFree(d));
	return NULL;
}

int main(void)
{
	t_cuda_require();
	int n = 0;
	T_CU(cuDeviceGetCount(&n));
	if (n < 2)
		T_SKIP("fewer than two GPUs");
	if (n > 8)
		n = 8;

	g_path = t_make_pattern_file(BIG + 64 * 4096, 0);
	int fd = t_open(g_path, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	g_fh = t_register_fd(fd);

	struct worker w[8 * THREADS_PER_GPU];
	pthread_t tid[8 * THREADS_PER_GPU];
	CUdevice devs[8];
	int k = 0;
	for (int g = 0; g < n; g++) {
		CUcontext ctx;
		T_CU(cuDeviceGet(&devs[g], g));
		T_CU(cuDevicePrimaryCtxRetain(&ctx, devs[g]));
		/* File names are made here: the test helpers are not thread-safe. */
		for (int i = 0; i < THREADS_PER_GPU; i++, k++)
			w[k] = (struct worker){.ordinal = g, .index = i, .ctx = ctx, .wpath = t_new_file_path()};
	}
	for (int i = 0; i < k; i++)
		T_ASSERT(pthread_create(&tid[i], NULL, run, &w[i]) == 0);
	int failed = 0;
	for (int i = 0; i < k; i++) {
		pthread_join(tid[i], NULL);
		failed |= w[i].failed;
	}
	cuFileHandleDeregister(g_fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	for (int g = 0; g < n; g++)
		cuDevicePrimaryCtxRelease(devs[g]);
	if (failed)
		T_FAIL("data errors on at least one GPU");
	printf("%d GPUs x %d threads: all reads and writes verified\n", n, THREADS_PER_GPU);
	return 0;
}
