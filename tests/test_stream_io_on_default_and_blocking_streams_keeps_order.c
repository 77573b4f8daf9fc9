/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileReadAsync/WriteAsync queued on CU_STREAM_LEGACY, on
 * CU_STREAM_PER_THREAD and on an application stream created blocking
 * (flags 0) run in that stream's order: a memset queued before a read lands
 * first (the read's bytes are not overwritten, the bytes around them are),
 * a copy and a host function queued after it see its data and *bytes_p, a
 * write sends what a memset queued before it stored and not what one queued
 * after it stores.  Small (one staging chunk) and large (several chunks)
 * requests, and 16 reads back to back.  Across streams, the legacy stream's
 * implicit synchronisation holds: legacy-stream work queued after a read on
 * a blocking stream waits for the read, and a read on a blocking stream
 * waits for legacy-stream work queued before it.  None of this may deadlock
 * (the library's own copies must not queue behind the waiting streams).
 */
#include "async_test_util.h"

#define SMALL (64 * T_KIB + 5)
#define LARGE (2 * T_MIB + 3 * T_KIB + 7)
#define LEN (4 * T_MIB)
#define FLEN (8 * T_MIB)
#define BOFF 100
#define FOFF 12345
#define WOFF (6 * T_MIB + 3)
#define NBACK 16

static CUfileHandle_t fh;
static int fd;
static CUdeviceptr dev;
static uint8_t *host;

/* memset(0x11) ; read(size) ; host fn ; copy back, all on s; then checks. */
static void read_between(CUstream s, size_t size)
{
	size_t sz = size;
	off_t foff = FOFF, boff = BOFF;
	ssize_t bytes = -12345;
	struct t_marks m = {.watch = &bytes};
	T_CU(cuMemsetD8Async(dev, 0x11, LEN, s));
	T_CU(cuLaunchHostFunc(s, t_mark_before, &m));
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &sz, &foff, &boff, &bytes, s));
	T_CU(cuLaunchHostFunc(s, t_mark_after, &m));
	T_CU(cuMemcpyDtoHAsync(host, dev, LEN, s));
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, (ssize_t)size);
	T_EQ(m.before, 1);
	T_EQ(m.after, 2);
	T_EQ(m.seen_after, (ssize_t)size);
	if (t_check_fill(host, BOFF, 0x11, "memset before the read") ||
	    t_check_pattern(host + BOFF, size, FOFF, 0, "read data") ||
	    t_check_fill(host + BOFF + size, LEN - BOFF - size, 0x11, "memset after the read range"))
		T_FAIL("the read was not ordered between the memset and the copy");
}

/* memset(0x33) ; write ; memset(0x44), all on s: the file gets 0x33. */
static void write_between(CUstream s, size_t size)
{
	size_t sz = size;
	off_t foff = WOFF, boff = 0;
	ssize_t bytes = -12345;
	T_CU(cuMemsetD8Async(dev, 0x33, size, s));
	T_CUFILE_OK(cuFileWriteAsync(fh, (void *)(uintptr_t)dev, &sz, &foff, &boff, &bytes, s));
	T_CU(cuMemsetD8Async(dev, 0x44, size, s));
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, (ssize_t)size);
	uint8_t *chk = malloc(size);
	T_ASSERT(chk != NULL);
	T_EQ_U(t_pread_full(fd, chk, size, WOFF), size);
	if (t_check_fill(chk, size, 0x33, "written bytes"))
		T_FAIL("the write did not send what the memset before it stored");
	free(chk);
	t_pwrite_pattern(fd, WOFF, size, 0);
}

/* 16 reads of 64 KiB back to back, reversed file order. */
static void back_to_back(CUstream s)
{
	static size_t sizes[NBACK];
	static off_t foffs[NBACK], boffs[NBACK];
	static ssize_t res[NBACK];
	T_CU(cuMemsetD8Async(dev, 0x22, LEN, s));
	for (int i = 0; i < NBACK; i++) {
		sizes[i] = 64 * T_KIB;
		foffs[i] = (off_t)((NBACK - 1 - i) * 64 * T_KIB);
		boffs[i] = (off_t)(i * 64 * T_KIB);
		res[i] = -777;
		T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &sizes[i], &foffs[i], &boffs[i], &res[i], s));
	}
	T_CU(cuMemcpyDtoHAsync(host, dev, NBACK * 64 * T_KIB, s));
	T_CU(cuStreamSynchronize(s));
	for (int i = 0; i < NBACK; i++) {
		T_EQ(res[i], 64 * T_KIB);
		if (t_check_pattern(host + i * 64 * T_KIB, 64 * T_KIB, (uint64_t)foffs[i], 0, "back-to-back read"))
			T_FAIL("read %d of %d", i, NBACK);
	}
}

static void on_stream(const char *name, CUstream s)
{
	t_set_case("%s: small read", name);
	read_between(s, SMALL);
	t_set_case("%s: large read", name);
	read_between(s, LARGE);
	t_set_case("%s: small write", name);
	write_between(s, SMALL);
	t_set_case("%s: large write", name);
	write_between(s, LARGE);
	t_set_case("%s: back to back", name);
	back_to_back(s);
	t_set_case("%s", "");
}

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	fd = t_open(path, O_RDWR);
	T_CUFILE_OK(cuFileDriverOpen());
	fh = t_register_fd(fd);
	dev = t_dev_alloc(LEN);
	T_CU(cuMemHostAlloc((void **)&host, LEN, 0));

	on_stream("CU_STREAM_LEGACY", CU_STREAM_LEGACY);
	on_stream("CU_STREAM_PER_THREAD", CU_STREAM_PER_THREAD);
	CUstream b;
	T_CU(cuStreamCreate(&b, 0)); /* blocking */
	on_stream("blocking stream", b);

	/* ---- legacy work after a read on a blocking stream waits for it,
	 * and the read waits for legacy work before it. */
	t_set_case("%s", "across the legacy and a blocking stream");
	size_t sz = SMALL;
	off_t foff = FOFF, boff = BOFF;
	ssize_t bytes = -12345;
	T_CU(cuMemsetD8Async(dev, 0x55, LEN, CU_STREAM_LEGACY));
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &sz, &foff, &boff, &bytes, b));
	T_CU(cuMemcpyDtoHAsync(host, dev, LEN, CU_STREAM_LEGACY));
	T_CU(cuStreamSynchronize(CU_STREAM_LEGACY));
	T_EQ(bytes, SMALL);
	if (t_check_fill(host, BOFF, 0x55, "legacy memset") ||
	    t_check_pattern(host + BOFF, SMALL, FOFF, 0, "read on the blocking stream") ||
	    t_check_fill(host + BOFF + SMALL, LEN - BOFF - SMALL, 0x55, "legacy memset after"))
		T_FAIL("the read on a blocking stream was not ordered with the legacy stream");
	T_CU(cuStreamSynchronize(b));

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuStreamDestroy(b));
	T_CU(cuMemFree(dev));
	T_CU(cuMemFreeHost(host));
	close(fd);
	return T_EXIT_PASS;
}
