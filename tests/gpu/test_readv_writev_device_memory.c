/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileReadv/cuFileWritev into and out of device memory: thousands of
 * small pieces of one device allocation (unregistered, then registered),
 * spanning several staging chunks, and a vector that mixes device and host
 * pieces.  Every piece gets its file bytes, the gaps between device pieces
 * are untouched, end of file shortens the result, and writes land in the
 * file in vector order.
 */
#include "../vec_test_util.h"

#define NPIECES 3000
#define DEVLEN (32 * T_MIB)
#define FLEN (24 * T_MIB)

static CUfileIOVec_t iov[NPIECES];
static char *shadow; /* the layout, computed on a host arena of the same size */

/* Moves the host layout onto the device allocation at d. */
static void to_device(CUdeviceptr d)
{
	for (size_t i = 0; i < NPIECES; i++)
		iov[i].base = (void *)(uintptr_t)(d + (CUdeviceptr)((char *)iov[i].base - shadow));
}

static void check_device(CUdeviceptr d, off_t off, size_t limit, const char *what)
{
	char *host = malloc(DEVLEN);
	T_ASSERT(host != NULL);
	T_CU(cuMemcpyDtoH(host, d, DEVLEN));
	uint64_t at = (uint64_t)off;
	char *prev_end = host;
	for (size_t i = 0; i < NPIECES; i++) {
		char *p = host + ((uintptr_t)iov[i].base - (uintptr_t)d);
		size_t have = at >= limit ? 0 : (iov[i].len < limit - at ? iov[i].len : limit - at);
		if (t_check_fill(prev_end, (size_t)(p - prev_end), T_POISON, "gap"))
			T_FAIL("%s: gap before piece %zu written", what, i);
		if (t_check_pattern(p, have, at, 1, "device piece") ||
		    t_check_fill(p + have, iov[i].len - have, T_POISON, "device piece past end of file"))
			T_FAIL("%s: device piece %zu (%zu bytes) wrong", what, i, iov[i].len);
		at += iov[i].len;
		prev_end = p + iov[i].len;
	}
	free(host);
}

int main(void)
{
	t_cuda_require();
	shadow = malloc(DEVLEN);
	T_ASSERT(shadow != NULL);
	size_t total = t_vec_layout(iov, NPIECES, shadow, DEVLEN, 12000, 11);
	T_ASSERT(total > 8 * T_MIB && total < FLEN);
	CUdeviceptr d;
	T_CU(cuMemAlloc(&d, DEVLEN));
	to_device(d);
	T_CUFILE_OK(cuFileDriverOpen());
	const char *path = t_make_pattern_file(FLEN, 1);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);

	for (int reg = 0; reg < 2; reg++) {
		const char *what = reg ? "registered" : "unregistered";
		if (reg)
			T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)d, DEVLEN, 0));
		T_CU(cuMemsetD8(d, T_POISON, DEVLEN));
		t_set_case("%s: readv of %d device pieces", what, NPIECES);
		T_IO(cuFileReadv(fh, iov, NPIECES, 4321, 0), (ssize_t)total);
		check_device(d, 4321, FLEN, what);
		/* Across end of file. */
		T_CU(cuMemsetD8(d, T_POISON, DEVLEN));
		off_t off = (off_t)(FLEN - total / 3);
		t_set_case("%s: readv across end of file", what);
		T_IO(cuFileReadv(fh, iov, NPIECES, off, 0), (ssize_t)(FLEN - (size_t)off));
		check_device(d, off, FLEN, what);
		if (reg)
			T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)d));
	}

	/* writev from device pieces, then read back with pread. */
	const char *wpath = t_make_pattern_file(FLEN, 0);
	int wfd = t_open(wpath, O_RDWR);
	CUfileHandle_t wfh = t_register_fd(wfd);
	char *host = malloc(DEVLEN);
	T_ASSERT(host != NULL);
	uint64_t at = 100;
	for (size_t i = 0; i < NPIECES; i++) {
		t_fill_pattern(host + ((uintptr_t)iov[i].base - (uintptr_t)d), iov[i].len, at, 2);
		at += iov[i].len;
	}
	T_CU(cuMemcpyHtoD(d, host, DEVLEN));
	t_set_case("writev of %d device pieces", NPIECES);
	T_IO(cuFileWritev(wfh, iov, NPIECES, 100, 0), (ssize_t)total);
	char *back = malloc(total);
	T_ASSERT(back != NULL);
	T_EQ_U(t_pread_full(wfd, back, total, 100), total);
	if (t_check_pattern(back, total, 100, 2, "file after device writev"))
		T_FAIL("the file does not hold the gathered device pieces");

	/* Mixed: device, host, device pieces in one vector. */
	static char hbuf[3 * 4096];
	CUfileIOVec_t mix[5] = {
		{(void *)(uintptr_t)d, 5000}, {hbuf, 3000}, {(void *)(uintptr_t)(d + 10000), 7000},
		{hbuf + 4096, 1}, {(void *)(uintptr_t)(d + 20000), 4096},
	};
	size_t mtotal = 5000 + 3000 + 7000 + 1 + 4096;
	T_CU(cuMemsetD8(d, T_POISON, DEVLEN));
	memset(hbuf, T_POISON, sizeof(hbuf));
	t_set_case("%s", "readv of device and host pieces");
	T_IO(cuFileReadv(fh, mix, 5, 333, 0), (ssize_t)mtotal);
	T_CU(cuMemcpyDtoH(host, d, 32768));
	uint64_t o = 333;
	for (int i = 0; i < 5; i++) {
		const char *p = (i % 2) ? (const char *)mix[i].base : host + ((uintptr_t)mix[i].base - (uintptr_t)d);
		if (t_check_pattern(p, mix[i].len, o, 1, "mixed piece"))
			T_FAIL("mixed piece %d wrong", i);
		o += mix[i].len;
	}
	t_set_case("%s", "writev of device and host pieces");
	T_IO(cuFileWritev(wfh, mix, 5, 999, 0), (ssize_t)mtotal);
	T_EQ_U(t_pread_full(wfd, back, mtotal, 999), mtotal);
	if (t_check_pattern(back, mtotal, 333, 1, "file after mixed writev"))
		T_FAIL("mixed writev wrote the wrong bytes");

	free(back);
	free(host);
	cuFileHandleDeregister(wfh);
	cuFileHandleDeregister(fh);
	close(wfd);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuMemFree(d));
	free(shadow);
	return T_EXIT_PASS;
}
