/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile_demo - the main job in one command: write a file with a known
 * pattern, read it back with cuFileRead into GPU memory (host memory where
 * no GPU is usable), verify every byte, and say what happened and how fast.
 *
 *   cufile_demo [-f FILE] [-s SIZE_MIB] [-d] [-k] [-h]   (usage() says more)
 *
 * It uses only the cuFile API plus the CUDA driver API (loaded with dlopen,
 * like the library does), so it runs against any libcufile.so.0.
 *
 * The arguments are checked before anything is printed or written: a size
 * that is not a whole number of MiB, or that the machine cannot hold (two
 * copies of the data in host memory, the file on its file system), is
 * refused with the accepted range.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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

#define DEFAULT_FILE "cufile_demo.dat"
#define DEFAULT_MIB 256
#define USAGE "usage: cufile_demo [-f FILE] [-s SIZE_MIB] [-d] [-k] [-h]"

/* What the machine can hold, in MiB: the demo keeps two copies of the data
 * in host memory (the pattern it writes, and the buffer it verifies: the
 * read's target, or the copy back from the GPU), so half of the memory
 * available; and the file, so the free space of its file system (plus what
 * the file it replaces holds).  UINT64_MAX where it cannot be told. */
struct room {
	uint64_t mem_mib, disk_mib;
	int disk_errno; /* the file's directory cannot be looked at */
};

static uint64_t mem_available_mib(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kib = 0;
	int found = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
			found = 1;
			break;
		}
	if (f)
		fclose(f);
	if (found)
		return (uint64_t)kib >> 10;
	long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page >> 20 : UINT64_MAX;
}

static struct room room_for(const char *file)
{
	struct room r = {.mem_mib = mem_available_mib(), .disk_mib = UINT64_MAX};
	if (r.mem_mib != UINT64_MAX)
		r.mem_mib /= 2;
	char *copy = strdup(file);
	struct statvfs vfs;
	if (!copy || statvfs(dirname(copy), &vfs) != 0) {
		r.disk_errno = copy ? errno : ENOMEM;
	} else {
		uint64_t free_b = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
		struct stat st;
		if (stat(file, &st) == 0 && S_ISREG(st.st_mode)) /* O_TRUNC gives its blocks back */
			free_b += (uint64_t)st.st_blocks * 512;
		r.disk_mib = free_b >> 20;
	}
	free(copy);
	return r;
}

static uint64_t room_max(const struct room *r)
{
	return r->mem_mib < r->disk_mib ? r->mem_mib : r->disk_mib;
}

static void usage(FILE *to, const struct room *r)
{
	fprintf(to, USAGE "   (scripts/demo.sh builds and runs it)\n"
		    "Writes FILE with a known pattern, reads it with cuFileRead into GPU memory (host\n"
		    "memory where no GPU is usable), verifies every byte and prints how fast.\n"
		    "  -f FILE      the file to write and read; a relative name is taken from the\n"
		    "               current directory (default: " DEFAULT_FILE ")\n"
		    "  -s SIZE_MIB  its size, a whole number of MiB (default: %d)\n",
		DEFAULT_MIB);
	if (room_max(r) != UINT64_MAX)
		fprintf(to, "               here 1 to %" PRIu64 " (%s)\n", room_max(r),
			r->mem_mib <= r->disk_mib ? "half the available memory: the data is held twice"
						  : "the free space of FILE's file system");
	fprintf(to, "  -d           open the file with O_DIRECT (default: buffered)\n"
		    "  -k           keep the file afterwards (default: removed)\n"
		    "  -h           this help\n");
}

/* -s ARG (NULL: the default): a whole number of MiB the machine can hold,
 * else a message naming the value and the accepted range, and 0. */
static uint64_t size_arg(const char *arg, const char *file, const struct room *r)
{
	char text[32];
	const char *what = "";
	if (!arg) {
		snprintf(text, sizeof(text), "%d", DEFAULT_MIB);
		arg = text;
		what = " (the default)";
	}
	uint64_t max = room_max(r);
	char range[160];
	if (max == UINT64_MAX)
		snprintf(range, sizeof(range), "1 MiB or more");
	else
		snprintf(range, sizeof(range), "1 to %" PRIu64 " MiB on this machine", max);
	int digits = *arg != 0;
	for (const char *p = arg; *p; p++)
		digits &= *p >= '0' && *p <= '9';
	errno = 0;
	unsigned long long v = digits ? strtoull(arg, NULL, 10) : 0;
	if (!digits) {
		fprintf(stderr, "cufile_demo: -s %s: not a whole, positive number of MiB (accepted: %s)\n", arg,
			range);
		return 0;
	}
	if (errno == ERANGE || v > (UINT64_MAX >> 21)) {
		fprintf(stderr, "cufile_demo: -s %s: far more than any machine holds (accepted: %s)\n", arg, range);
		return 0;
	}
	if (v == 0) {
		fprintf(stderr, "cufile_demo: -s %s: the size must be at least 1 MiB (accepted: %s)\n", arg, range);
		return 0;
	}
	if (v > r->mem_mib) {
		fprintf(stderr,
			"cufile_demo: -s %s%s: the demo holds the data twice in host memory (%llu MiB) and %" PRIu64
			" MiB are available (accepted: %s)\n",
			arg, what, 2 * v, 2 * r->mem_mib, range);
		return 0;
	}
	if (v > r->disk_mib) {
		fprintf(stderr, "cufile_demo: -s %s%s: %s needs %llu MiB and its file system has %" PRIu64
				" MiB free (accepted: %s)\n",
			arg, what, file, v, r->disk_mib, range);
		return 0;
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *file = DEFAULT_FILE, *size_text = NULL;
	int direct = 0, keep = 0, help = 0, wrong = 0, opt;
	opterr = 0;
	while ((opt = getopt(argc, argv, ":f:s:dkh")) != -1) {
		switch (opt) {
		case 'f': file = optarg; break;
		case 's': size_text = optarg; break;
		case 'd': direct = 1; break;
		case 'k': keep = 1; break;
		case 'h': help = 1; break;
		case ':': fprintf(stderr, "cufile_demo: -%c needs a value\n", optopt), wrong = 1; break;
		default: fprintf(stderr, "cufile_demo: unknown option -%c\n", optopt), wrong = 1; break;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cufile_demo: unexpected argument '%s' (it takes options only)\n", argv[optind]);
		wrong = 1;
	}
	if (wrong) {
		fprintf(stderr, USAGE "   (-h: every option and its default)\n");
		return 2;
	}
	struct room room = room_for(file);
	if (help) {
		usage(stdout, &room);
		return 0;
	}
	if (room.disk_errno) {
		fprintf(stderr, "cufile_demo: -f %s: cannot look at its directory: %s\n", file, strerror(room.disk_errno));
		return 2;
	}
	uint64_t mib = size_arg(size_text, file, &room);
	if (!mib)
		return 2;
	size_t size = (size_t)mib << 20;
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
	char *where = realpath(file, NULL);
	printf("wrote %s: %" PRIu64 " MiB with a known pattern\n", where ? where : file, mib);
	free(where);

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
		if (!target) {
			perror("malloc");
			return 1;
		}
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
	if (!check) {
		perror("malloc");
		return 1;
	}
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
