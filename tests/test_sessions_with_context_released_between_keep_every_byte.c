/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Many driver sessions in one process, with the application's primary
 * context released to zero and retained anew between them (so every
 * allocation, stream and event of the previous context is gone), the way a
 * test suite of a cuFile client runs: each session retains the primary
 * context, opens the driver explicitly or implicitly (some with a
 * cufile.json like the client's: 4 I/O threads, parallel I/O, an 8 MiB
 * threshold), then
 *   - synchronous writes and reads through an O_DIRECT handle, small and
 *     large enough for the engine's helpers;
 *   - a batch of four 64 KiB writes from four separate cuMemAlloc buffers at
 *     consecutive file offsets (small allocations sit back to back in device
 *     memory, so entries contiguous in the file and in memory come from
 *     different allocations: one copy may not span them), then a batch of
 *     reads into four others, and a cuFileReadv over those four;
 *   - a stream write and read on a stream of this context;
 * with every byte verified, then closes the driver, frees everything and
 * releases the context.
 */
#include "async_test_util.h"

#define SZ (64 * T_KIB)
#define NB 8
#define BIG (12 * T_MIB)
#define FLEN (16 * T_MIB)
#define SESSIONS 6

static const char *json_path;

static void write_json(void)
{
	static char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/sessions-%d.json", t_dir(), (int)getpid());
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	fputs("{ \"execution\": { \"max_io_threads\": 4, \"parallel_io\": true,\n"
	      "                 \"min_io_threshold_size_kb\": 8192, \"max_request_parallelism\": 4 } }\n",
	      f);
	T_ASSERT(fclose(f) == 0);
	json_path = path;
}

static void check_dev(CUdeviceptr d, size_t len, uint64_t foff, uint32_t seed, const char *what)
{
	uint8_t *buf = malloc(len);
	T_ASSERT(buf != NULL);
	t_dev_get(buf, d, len);
	if (t_check_pattern(buf, len, foff, seed, what))
		T_FAIL("%s: wrong bytes", what);
	free(buf);
}

static void put_pattern(CUdeviceptr d, size_t len, uint64_t foff, uint32_t seed)
{
	uint8_t *buf = malloc(len);
	T_ASSERT(buf != NULL);
	t_fill_pattern(buf, len, foff, seed);
	t_dev_put(d, buf, len);
	free(buf);
}

static void batch(CUfileHandle_t fh, CUfileOpcode_t op, CUdeviceptr *bufs)
{
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 4));
	CUfileIOParams_t io[4];
	CUfileIOEvents_t ev[4];
	for (int i = 0; i < 4; i++)
		io[i] = t_batch_io(op, fh, (void *)(uintptr_t)bufs[i], SZ, (off_t)i * (off_t)SZ, 0,
				   (void *)(uintptr_t)(i + 1));
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 4, io, 0));
	t_batch_collect(b, 4, ev);
	for (int k = 0; k < 4; k++) {
		t_set_case("%s batch entry %d: status %#x ret %zd", op == CUFILE_WRITE ? "write" : "read",
			   (int)(uintptr_t)ev[k].cookie - 1, ev[k].status, (ssize_t)ev[k].ret);
		T_EQ(ev[k].status, CUFILE_COMPLETE);
		T_EQ_U(ev[k].ret, SZ);
	}
	t_set_case("%s", "");
	cuFileBatchIODestroy(b);
}

static void session(int s, CUdevice dev)
{
	bool explicit_open = s % 2 == 0;
	uint32_t seed = (uint32_t)s + 1;
	t_set_case("session %d (%s open%s)", s, explicit_open ? "explicit" : "implicit",
		   s % 3 == 1 ? ", client cufile.json" : "");
	if (s % 3 == 1)
		T_SYS(setenv("CUFILE_ENV_PATH_JSON", json_path, 1));
	else
		T_SYS(unsetenv("CUFILE_ENV_PATH_JSON"));

	CUcontext ctx;
	T_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	T_CU(cuCtxSetCurrent(ctx));
	if (explicit_open)
		T_CUFILE_OK(cuFileDriverOpen());

	const char *path = t_new_file_path();
	int fd = t_open(path, O_CREAT | O_RDWR);
	T_SYS(ftruncate(fd, (off_t)FLEN));
	if (t_odirect_supported(path)) {
		close(fd);
		fd = t_open(path, O_RDWR | O_DIRECT);
	}
	CUfileHandle_t fh = t_register_fd(fd);

	CUdeviceptr small[NB], big, big2;
	for (int i = 0; i < NB; i++)
		small[i] = t_dev_alloc(SZ);
	big = t_dev_alloc(BIG);
	big2 = t_dev_alloc(BIG);
	int adjacent = 0;
	for (int i = 0; i + 1 < NB; i++)
		adjacent += small[i] + SZ == small[i + 1];
	printf("session %d: %d of %d consecutive 64 KiB allocations back to back\n", s, adjacent, NB - 1);
	for (int i = 0; i < NB; i += 2)
		T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)small[i], SZ, 0));
	if (s % 2)
		T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)big, BIG, 0));

	/* Synchronous: small, then large (engine helpers). */
	put_pattern(small[0], SZ, 0, seed);
	T_IO(cuFileWrite(fh, (void *)(uintptr_t)small[0], SZ, 0, 0), SZ);
	t_dev_fill(small[1], T_POISON, SZ);
	T_IO(cuFileRead(fh, (void *)(uintptr_t)small[1], SZ, 0, 0), SZ);
	check_dev(small[1], SZ, 0, seed, "synchronous 64 KiB read");
	put_pattern(big, BIG, T_MIB, seed);
	T_IO(cuFileWrite(fh, (void *)(uintptr_t)big, BIG, T_MIB, 0), BIG);
	t_dev_fill(big2, T_POISON, BIG);
	T_IO(cuFileRead(fh, (void *)(uintptr_t)big2, BIG, T_MIB, 0), BIG);
	check_dev(big2, BIG, T_MIB, seed, "synchronous 12 MiB read");

	/* Batch writes from four allocations, reads into four others. */
	for (int i = 0; i < 4; i++)
		put_pattern(small[i], SZ, (uint64_t)i * SZ, seed + 100);
	batch(fh, CUFILE_WRITE, small);
	for (int i = 4; i < NB; i++)
		t_dev_fill(small[i], T_POISON, SZ);
	batch(fh, CUFILE_READ, small + 4);
	for (int i = 4; i < NB; i++)
		check_dev(small[i], SZ, (uint64_t)(i - 4) * SZ, seed + 100, "batch read");

	/* A vector over the same four allocations: pieces adjacent in memory
	 * but in different allocations. */
	CUfileIOVec_t iov[4];
	for (int i = 0; i < 4; i++) {
		t_dev_fill(small[4 + i], T_POISON, SZ);
		iov[i] = (CUfileIOVec_t){.base = (void *)(uintptr_t)small[4 + i], .len = SZ};
	}
	T_IO(cuFileReadv(fh, iov, 4, 0, 0), 4 * SZ);
	for (int i = 4; i < NB; i++)
		check_dev(small[i], SZ, (uint64_t)(i - 4) * SZ, seed + 100, "vector read");

	/* Stream write and read on a stream of this context. */
	CUstream st;
	T_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	T_CUFILE_OK(cuFileStreamRegister(st, 0));
	size_t len = 4 * T_MIB;
	off_t foff = (off_t)(2 * T_MIB), boff = 0;
	ssize_t wrote = 0, got = 0;
	put_pattern(big, len, (uint64_t)foff, seed + 200);
	T_CUFILE_OK(cuFileWriteAsync(fh, (void *)(uintptr_t)big, &len, &foff, &boff, &wrote, st));
	T_CU(cuStreamSynchronize(st));
	T_EQ(wrote, (ssize_t)len);
	t_dev_fill(big2, T_POISON, len);
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)big2, &len, &foff, &boff, &got, st));
	T_CU(cuStreamSynchronize(st));
	T_EQ(got, (ssize_t)len);
	check_dev(big2, len, (uint64_t)foff, seed + 200, "stream read");
	T_CUFILE_OK(cuFileStreamDeregister(st));
	T_CU(cuStreamDestroy(st));

	for (int i = 0; i < NB; i += 2)
		T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)small[i]));
	if (s % 2)
		T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)big));
	cuFileHandleDeregister(fh);
	close(fd);
	unlink(path);
	T_CUFILE_OK(cuFileDriverClose());
	for (int i = 0; i < NB; i++)
		T_CU(cuMemFree(small[i]));
	T_CU(cuMemFree(big));
	T_CU(cuMemFree(big2));
	/* The last reference: the context and all it held die here. */
	T_CU(cuCtxSetCurrent(NULL));
	T_CU(cuDevicePrimaryCtxRelease(dev));
	t_set_case("%s", "");
}

int main(void)
{
	int n = 0;
	CUdevice dev;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1 ||
	    cuDeviceGet(&dev, 0) != CUDA_SUCCESS)
		T_SKIP("no usable CUDA driver/device");
	unsigned flags = 0;
	int active = 1;
	T_CU(cuDevicePrimaryCtxGetState(dev, &flags, &active));
	T_ASSERT(!active); /* nobody else holds the primary context */
	write_json();
	for (int s = 0; s < SESSIONS; s++)
		session(s, dev);
	T_CU(cuDevicePrimaryCtxGetState(dev, &flags, &active));
	T_ASSERT(!active); /* the library released its reference at every close */
	unlink(json_path);
	t_cleanup_files();
	printf("PASS: %d sessions, context released between them, every byte verified\n", SESSIONS);
	return T_EXIT_PASS;
}
