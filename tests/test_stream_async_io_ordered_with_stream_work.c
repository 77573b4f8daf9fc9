/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileReadAsync/WriteAsync on a stream run in stream order: work queued
 * before starts first, work queued after waits for the I/O and sees its
 * data and *bytes_p (a host function queued after the read finds *bytes_p
 * written; a device-to-host copy queued after it copies the file's data).
 * 256 operations queued back to back on one stream all complete with the
 * right byte counts and data; a write on the stream followed by a read on
 * the stream returns what was written.  The NULL stream is synchronous:
 * *bytes_p is set when the call returns, errors as cuFileRead gives them.
 * Errors of a queued operation land in *bytes_p as -errno.  The fake
 * driver's streams are slowed down (FAKECUDA_STREAM_DELAY_US) so that a
 * missing wait shows as stale data.
 */
#include "async_test_util.h"

#define SZ (64 * T_KIB)
#define NOPS 256
#define FLEN ((size_t)NOPS * SZ)

static struct t_marks marks;

int main(void)
{
	setenv("FAKECUDA_STREAM_DELAY_US", "200", 0);
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDWR);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	CUfileDrvProps_t props;
	T_CUFILE_OK(cuFileDriverGetProperties(&props));
	T_ASSERT(props.fflags & (1u << CU_FILE_STREAMS_SUPPORTED));

	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr dev = t_dev_alloc(FLEN + 4096);
	t_dev_fill(dev, T_POISON, FLEN + 4096);
	uint8_t *host;
	T_CU(cuMemHostAlloc((void **)&host, FLEN + 4096, 0));
	memset(host, T_POISON2, FLEN + 4096);

	/* ---- one read between stream work */
	size_t size = SZ + 5;
	off_t foff = 12345, boff = 3;
	ssize_t bytes = -12345;
	marks.watch = &bytes;
	T_CU(cuLaunchHostFunc(s, t_mark_before, &marks));
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &size, &foff, &boff, &bytes, s));
	T_CU(cuLaunchHostFunc(s, t_mark_after, &marks));
	T_CU(cuMemcpyDtoHAsync(host, dev + 3, SZ + 5, s));
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, SZ + 5);
	T_EQ(marks.before, 1);
	T_EQ(marks.after, 2);
	T_EQ(marks.seen_after, SZ + 5); /* later stream work waited for the I/O */
	T_ASSERT(t_check_pattern(host, SZ + 5, 12345, 0, "data copied after the read") == 0);

	/* ---- 256 operations queued back to back */
	static size_t sizes[NOPS];
	static off_t foffs[NOPS], boffs[NOPS];
	static ssize_t res[NOPS];
	t_dev_fill(dev, T_POISON, FLEN + 4096);
	for (int i = 0; i < NOPS; i++) {
		sizes[i] = SZ;
		foffs[i] = (off_t)((size_t)(NOPS - 1 - i) * SZ); /* reversed order */
		boffs[i] = (off_t)((size_t)i * SZ);
		res[i] = -777;
		T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &sizes[i], &foffs[i], &boffs[i], &res[i], s));
	}
	T_CU(cuMemcpyDtoHAsync(host, dev, FLEN, s));
	T_CU(cuStreamSynchronize(s));
	for (int i = 0; i < NOPS; i++) {
		t_set_case("operation %d", i);
		T_EQ(res[i], SZ);
		if (t_check_pattern(host + (size_t)i * SZ, SZ, (uint64_t)foffs[i], 0, "operation data"))
			T_FAIL("wrong data");
	}
	t_set_case("%s", "");

	/* ---- write then read on the stream */
	t_fill_pattern(host, SZ, 4096, 42);
	T_CU(cuMemcpyHtoDAsync(dev, host, SZ, s));
	size_t wsize = SZ, rsize = SZ;
	off_t wfoff = 4096, wboff = 0, rfoff = 4096, rboff = SZ;
	ssize_t wres = -1, rres = -1;
	T_CUFILE_OK(cuFileWriteAsync(fh, (void *)(uintptr_t)dev, &wsize, &wfoff, &wboff, &wres, s));
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &rsize, &rfoff, &rboff, &rres, s));
	T_CU(cuMemcpyDtoHAsync(host, dev + SZ, SZ, s));
	T_CU(cuStreamSynchronize(s));
	T_EQ(wres, SZ);
	T_EQ(rres, SZ);
	T_ASSERT(t_check_pattern(host, SZ, 4096, 42, "read back after the write") == 0);
	t_pwrite_pattern(fd, 4096, SZ, 0);

	/* ---- an operation that fails reports -errno in *bytes_p */
	int wfd = t_open(path, O_WRONLY);
	CUfileHandle_t wfh = t_register_fd(wfd);
	ssize_t eres = 0;
	size = SZ;
	foff = 0;
	boff = 0;
	T_CUFILE_OK(cuFileReadAsync(wfh, (void *)(uintptr_t)dev, &size, &foff, &boff, &eres, s));
	T_CU(cuStreamSynchronize(s));
	T_EQ(eres, -EBADF);

	/* ---- the NULL stream is synchronous */
	memset(host, T_POISON2, SZ);
	size = 1000;
	foff = 777;
	boff = 0;
	bytes = -1;
	T_CUFILE_OK(cuFileReadAsync(fh, host, &size, &foff, &boff, &bytes, NULL));
	T_EQ(bytes, 1000);
	T_ASSERT(t_check_pattern(host, 1000, 777, 0, "NULL-stream read") == 0);
	errno = 0;
	T_CUFILE_OK(cuFileReadAsync(wfh, host, &size, &foff, &boff, &bytes, NULL));
	T_EQ(bytes, -1);
	T_EQ(errno, EBADF);

	/* ---- argument errors fail the call */
	T_CUFILE(cuFileReadAsync(fh, host, NULL, &foff, &boff, &bytes, s), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileReadAsync(fh, host, &size, NULL, &boff, &bytes, s), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileReadAsync(fh, host, &size, &foff, NULL, &bytes, s), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileReadAsync(fh, host, &size, &foff, &boff, NULL, s), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileReadAsync(fh, NULL, &size, &foff, &boff, &bytes, s), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileWriteAsync(NULL, host, &size, &foff, &boff, &bytes, s), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileReadAsync((CUfileHandle_t)(uintptr_t)0x4242, host, &size, &foff, &boff, &bytes, s),
		 CU_FILE_INVALID_VALUE);

	cuFileHandleDeregister(wfh);
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuStreamDestroy(s));
	T_CU(cuMemFree(dev));
	T_CU(cuMemFreeHost(host));
	close(fd);
	close(wfd);
	return T_EXIT_PASS;
}
