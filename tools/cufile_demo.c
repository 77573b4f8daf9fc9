/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile_demo - the main job in one command: write a file with a known
 * pattern, read it back with cuFileRead into GPU memory (host memory where
 * no GPU is usable), verify every byte, and say what happened and how fast.
 *
 *   cufile_demo [-f FILE] [-s SIZE_MIB] [-d] [-k]
 *     -f FILE   file to create (default ./cufile_demo.dat)
 *     -s MIB    size in MiB (default 256)
 *     -d        open the file with O_DIRECT
 *     -k        keep the file afterwards
 *
 * It uses only the cuFile API plus the CUDA driver API (loaded with dlopen,
 * like the library does), so it runs against any libcufile.so.0.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cufile.h"

static uint8_t pattern(uint64_t i) { return (uint8_t)(((i * 2654435761u) >> 13) ^ (i >> 20)); }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct cuda {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
};

static int cuda_open(struct cuda *c, char *name, size_t namelen)
{
	const char *path = getenv("OPENCUFILE_LIBCUDA");
	void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
	if (!lib)
		return -1;
	c->Init = (CUresult(*)(unsigned))dlsym(lib, "cuInit");
	c->DeviceGet = (CUresult(*)(CUdevice *, int))dlsym(lib, "cuDeviceGet");
	c->DeviceGetName = (CUresult(*)(char *, int, CUdevice))dlsym(lib, "cuDeviceGetName");
	c->PrimaryCtxRetain = (CUresult(*)(CUcontext *, CUdevice))dlsym(lib, "cuDevicePrimaryCtxRetain");
	c->CtxSetCurrent = (CUresult(*)(CUcontext))dlsym(lib, "cuCtxSetCurrent");
	c->MemAlloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(lib, "cuMemAlloc_v2");
	c->MemFree = (CUresult(*)(CUdeviceptr))dlsym(lib, "cuMemFree_v2");
	c->MemcpyDtoH = (CUresult(*)(void *, CUdeviceptr, size_t))dlsym(lib, "cuMemcpyDtoH_v2");
	if (!c->Init || !c->DeviceGet || !c->DeviceGetName || !c->PrimaryCtxRetain || !c->CtxSetCurrent ||
	    !c->MemAlloc || !c->MemFree || !c->MemcpyDtoH)
		return -1;
	CUdevice dev;
	CUcontext ctx;
	if (c->Init(0) || c->DeviceGet(&dev, 0) || c->PrimaryCtxRetain(&ctx, dev) || c->CtxSetCurrent(ctx))
		return -1;
	c->DeviceGetName(name, (int)namelen, dev);
	return 0;
}

int main(int argc, char **argv)
{
	const char *file = "cufile_demo.dat";
	size_t mib = 256;
	int direct = 0, keep = 0, opt;
	while ((opt = getopt(argc, argv, "f:s:dkh")) != -1) {
		switch (opt) {
		case 'f': file = optarg; break;
		case 's': mib = strtoull(optarg, NULL, 10); break;
		case 'd': direct = 1; break;
		case 'k': keep = 1; break;
		default:
			fprintf(stderr, "usage: %s [-f FILE] [-s SIZE_MIB] [-d] [-k]\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	size_t size = mib << 20;
	if (size == 0) {
		fprintf(stderr, "size must be at least 1 MiB\n");
		return 2;
	}
	int version = 0;
	cuFileGetVersion(&version);
	printf("cuFile API version %d\n", version);

	/* 1. Generate the file. */
	uint8_t *host = malloc(size);
	if (!host) {
		perror("malloc");
		return 1;
	}
	for (size_t i = 0; i < size; i++)
		host[i] = pattern(i);
	int wfd = open(file, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	size_t put = 0;
	while (wfd >= 0 && put < size) { /* write(2) moves at most ~2 GiB a call */
		ssize_t w = write(wfd, host + put, size - put);
		if (w <= 0)
			break;
		put += (size_t)w;
	}
	if (wfd < 0 || put != size || fsync(wfd) != 0) {
		fprintf(stderr, "cannot write %s: %s\n", file, strerror(errno));
		return 1;
	}
	close(wfd);
	printf("wrote %s: %zu MiB with a known pattern\n", file, mib);

	/* 2. Target memory: GPU if one is usable, else host. */
	struct cuda cu = {0};
	char gpu[128] = "";
	CUdeviceptr dptr = 0;
	void *target;
	int on_gpu = cuda_open(&cu, gpu, sizeof(gpu)) == 0 && cu.MemAlloc(&dptr, size) == CUDA_SUCCESS;
	if (on_gpu) {
		target = (void *)(uintptr_t)dptr;
		printf("target: GPU memory on %s\n", gpu);
	} else {
		target = malloc(size);
		memset(target, 0, size);
		printf("target: host memory (no usable GPU)\n");
	}

	/* 3. cuFileRead. */
	CUfileError_t st = cuFileDriverOpen();
	if (st.err != CU_FILE_SUCCESS) {
		fprintf(stderr, "cuFileDriverOpen: %s\n", cufileop_status_error(st.err));
		return 1;
	}
	int fd = open(file, O_RDONLY | (direct ? O_DIRECT : 0));
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", file, strerror(errno));
		return 1;
	}
	CUfileDescr_t d = {.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD, .handle.fd = fd};
	CUfileHandle_t fh;
	st = cuFileHandleRegister(&fh, &d);
	if (st.err != CU_FILE_SUCCESS) {
		fprintf(stderr, "cuFileHandleRegister: %s\n", cufileop_status_error(st.err));
		return 1;
	}
	double best = 0;
	ssize_t got = 0;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now();
		got = cuFileRead(fh, target, size, 0, 0);
		double dt = now() - t0;
		if (got != (ssize_t)size) {
			fprintf(stderr, "cuFileRead returned %zd (%s)\n", got,
				got == -1 ? strerror(errno) : got < 0 ? CUFILE_ERRSTR((int)got) : "short read");
			return 1;
		}
		double gbs = (double)size / dt / 1e9;
		printf("read %d: %zu bytes in %.3f ms = %.2f GB/s%s\n", rep + 1, size, dt * 1e3, gbs,
		       rep == 0 ? " (first read may come from disk)" : "");
		if (gbs > best)
			best = gbs;
	}

	/* 4. Verify every byte. */
	uint8_t *check = on_gpu ? malloc(size) : target;
	if (on_gpu && cu.MemcpyDtoH(check, dptr, size) != CUDA_SUCCESS) {
		fprintf(stderr, "copy back from GPU failed\n");
		return 1;
	}
	size_t bad = 0;
	for (size_t i = 0; i < size; i++)
		bad += check[i] != pattern(i);
	printf("verify: %s (%zu bad bytes)\n", bad ? "FAILED" : "all bytes correct", bad);
	printf("summary: %s, %s fd, best %.2f GB/s\n", on_gpu ? "file -> GPU" : "file -> host",
	       direct ? "O_DIRECT" : "buffered", best);

	cuFileHandleDeregister(fh);
	close(fd);
	cuFileDriverClose();
	if (on_gpu) {
		cu.MemFree(dptr);
		free(check);
	} else {
		free(target);
	}
	free(host);
	if (!keep)
		unlink(file);
	return bad ? 1 : 0;
}
