/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileReadv and cuFileWritev reject bad arguments as cuFileRead and
 * cuFileWrite do, and move no data:
 *   NULL handle, NULL vector with pieces, flags other than 0, negative file
 *   offset, a piece with a NULL base and a length, lengths summing past
 *   SSIZE_MAX                              -> -1, errno EINVAL
 *   unknown handle                         -> -1, errno EBADF
 *   a piece past the end of its registration -> -1, errno EINVAL
 *   a device piece past its allocation      -> -CU_FILE_CUDA_POINTER_RANGE_ERROR
 *   writev on an O_RDONLY descriptor        -> -1, errno EBADF
 * No pieces, or only empty ones (any base), return 0.
 */
#include "test.h"

#define FLEN (64 * T_KIB)

static void both_e(CUfileHandle_t fh, const CUfileIOVec_t *iov, size_t n, off_t off, unsigned flags,
		   ssize_t expected, int expected_errno, const char *what)
{
	t_set_case("%s (readv)", what);
	T_IO_E(cuFileReadv(fh, iov, n, off, flags), expected, expected_errno);
	t_set_case("%s (writev)", what);
	T_IO_E(cuFileWritev(fh, iov, n, off, flags), expected, expected_errno);
}

int main(void)
{
	static char buf[8192];
	T_CUFILE_OK(cuFileDriverOpen());
	const char *path = t_make_pattern_file(FLEN, 3);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);
	CUfileIOVec_t ok[2] = {{buf, 100}, {buf + 200, 100}};

	both_e(NULL, ok, 2, 0, 0, -1, EINVAL, "NULL handle");
	both_e(fh, NULL, 2, 0, 0, -1, EINVAL, "NULL vector");
	both_e(fh, ok, 2, 0, 1, -1, EINVAL, "flags 1");
	both_e(fh, ok, 2, 0, 0x80000000u, -1, EINVAL, "flags high bit");
	both_e(fh, ok, 2, -1, 0, -1, EINVAL, "negative offset");
	CUfileIOVec_t nullbase[2] = {{buf, 10}, {NULL, 10}};
	both_e(fh, nullbase, 2, 0, 0, -1, EINVAL, "NULL base with a length");
	CUfileIOVec_t huge[2] = {{buf, (size_t)SSIZE_MAX}, {buf, 2}};
	both_e(fh, huge, 2, 0, 0, -1, EINVAL, "lengths past SSIZE_MAX");
	CUfileIOVec_t offmax[1] = {{buf, 100}};
	both_e(fh, offmax, 1, LLONG_MAX - 10, 0, -1, EINVAL, "range past the largest offset");
	both_e((CUfileHandle_t)(uintptr_t)0x1234, ok, 2, 0, 0, -1, EBADF, "unknown handle");

	both_e(fh, NULL, 0, 0, 0, 0, 0, "no pieces");
	CUfileIOVec_t empty[3] = {{NULL, 0}, {buf, 0}, {(void *)1, 0}};
	both_e(fh, empty, 3, 0, 0, 0, 0, "empty pieces");

	/* A piece past the end of its registration. */
	T_CUFILE_OK(cuFileBufRegister(buf, 4096, 0));
	CUfileIOVec_t past[2] = {{buf, 100}, {buf + 4000, 200}};
	both_e(fh, past, 2, 0, 0, -1, EINVAL, "piece past its registration");
	T_CUFILE_OK(cuFileBufDeregister(buf));

	/* A device piece past its allocation. */
	if (t_cuda_init() == 0) {
		CUdeviceptr d;
		T_CU(cuMemAlloc(&d, 65536));
		CUfileIOVec_t dev[2] = {{(void *)(uintptr_t)d, 4096}, {(void *)(uintptr_t)(d + 65000), 4096}};
		both_e(fh, dev, 2, 0, 0, -CU_FILE_CUDA_POINTER_RANGE_ERROR, 0, "device piece past its allocation");
		T_CU(cuMemFree(d));
	}

	/* Nothing above changed the file. */
	static char back[FLEN];
	T_EQ_U(t_pread_full(fd, back, FLEN, 0), FLEN);
	if (t_check_pattern(back, FLEN, 0, 3, "file after rejected writes"))
		T_FAIL("a rejected writev changed the file");

	/* Wrong access mode: the system's answer. */
	int rfd = t_open(path, O_RDONLY);
	CUfileHandle_t rfh = t_register_fd(rfd);
	t_set_case("%s", "writev on O_RDONLY");
	T_IO_E(cuFileWritev(rfh, ok, 2, 0, 0), -1, EBADF);
	cuFileHandleDeregister(rfh);
	close(rfd);

	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
