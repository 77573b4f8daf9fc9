/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer.c - a cuFile program as a user writes it, built in the package
 * test (scripts/package-test.sh) with nothing but
 * `cc consumer.c $(pkg-config --cflags --libs cufile)`.
 *
 * Writes FILE with a known pattern, reads it back with cuFileRead into host
 * memory at several offsets, checks every byte, and prints which
 * libcufile.so.0 served the calls:
 *   "consumer: 8388608 bytes read and verified by /path/libcufile.so.0.1.0"
 * Exit 0 on success, 1 on any failure.
 */
#define _GNU_SOURCE
#include <cufile.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_SIZE (8u << 20)

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(((i * 2654435761u) >> 13) ^ (i >> 20));
}

static int fail(const char *what, CUfileError_t e)
{
	fprintf(stderr, "consumer: %s failed: %s (%d)\n", what, cufileop_status_error(e.err), (int)e.err);
	return 1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "consumer.dat";
	uint8_t *src = malloc(FILE_SIZE), *dst = malloc(FILE_SIZE);
	if (!src || !dst)
		return 1;
	for (uint64_t i = 0; i < FILE_SIZE; i++)
		src[i] = pattern(i);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || pwrite(fd, src, FILE_SIZE, 0) != (ssize_t)FILE_SIZE) {
		perror("consumer: write");
		return 1;
	}

	CUfileError_t e = cuFileDriverOpen();
	if (e.err != CU_FILE_SUCCESS)
		return fail("cuFileDriverOpen", e);
	CUfileDescr_t d;
	memset(&d, 0, sizeof(d));
	d.handle.fd = fd;
	d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	CUfileHandle_t h;
	e = cuFileHandleRegister(&h, &d);
	if (e.err != CU_FILE_SUCCESS)
		return fail("cuFileHandleRegister", e);

	/* The whole file, then an unaligned piece at an offset in the buffer. */
	memset(dst, 0, FILE_SIZE);
	ssize_t n = cuFileRead(h, dst, FILE_SIZE, 0, 0);
	if (n != (ssize_t)FILE_SIZE || memcmp(dst, src, FILE_SIZE) != 0) {
		fprintf(stderr, "consumer: whole-file read returned %zd or wrong data\n", n);
		return 1;
	}
	memset(dst, 0, FILE_SIZE);
	n = cuFileRead(h, dst, 12345, 4097, 333);
	if (n != 12345 || memcmp(dst + 333, src + 4097, 12345) != 0) {
		fprintf(stderr, "consumer: offset read returned %zd or wrong data\n", n);
		return 1;
	}

	cuFileHandleDeregister(h);
	e = cuFileDriverClose();
	if (e.err != CU_FILE_SUCCESS)
		return fail("cuFileDriverClose", e);
	close(fd);
	unlink(path);

	Dl_info info;
	char real[PATH_MAX] = "?";
	if (dladdr((void *)cuFileRead, &info) && info.dli_fname && !realpath(info.dli_fname, real))
		snprintf(real, sizeof(real), "%s", info.dli_fname);
	printf("consumer: %u bytes read and verified by %s\n", FILE_SIZE, real);
	free(src);
	free(dst);
	return 0;
}
