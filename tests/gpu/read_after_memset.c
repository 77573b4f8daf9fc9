/* SPDX-License-Identifier: Apache-2.0 */
/*
 * read_after_memset - does a cuFileRead into registered device memory land
 * its bytes when the buffer was cleared by cuMemsetD8 just before?
 *
 *   read_after_memset FILE THREADS IOSIZE_KIB SECONDS nosync|sync
 *
 * Each thread allocates and registers its own buffer and reads its own
 * region of FILE (a buffered descriptor, as gdsio -N): for each op
 *   cuMemsetD8(buf, 0x5a, n)               poison, as gdsio -V does
 *   [sync: cuStreamSynchronize(NULL)]      wait for the memset
 *   r = cuFileRead(fh, buf, n, off, 0)
 *   cuMemcpyDtoH(host, buf, n)             what the buffer holds now
 * and compares with pread of the same bytes.  cuMemsetD8 on device memory
 * returns before it has run (it is queued on the legacy stream); cuFile I/O
 * is ordered with no stream.  A library that copies on a stream that does
 * not wait for the legacy stream can land the read first and have the
 * memset overwrite it: the buffer then holds 0x5a although cuFileRead
 * returned n.  "sync" waits for the memset first and must never differ.
 *
 * Prints one line per thread count: reads, short reads, reads whose bytes
 * differ, and the first such read (offset, what cuFileRead returned, the
 * first wrong byte).  Exit 0 when every read matched, 1 otherwise, 2 on a
 * setup error.  Build:  cc -O2 -Iinclude -I$CUDA/include read_after_memset.c
 *   -L$CUFILE_DIR -lcufile -L$CUDA/lib64/stubs -lcuda -lpthread
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cufile.h"

static int fd, nthreads, sync_memset;
static size_t n;
static double secs;
static uint64_t region;
static CUfileHandle_t fh;
static CUcontext ctx;
static atomic_ulong reads, shorts, wrong;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char first[256];

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	CUdeviceptr d = 0;
	unsigned char *host = malloc(n), *want = malloc(n);
	if (!host || !want || cuCtxSetCurrent(ctx) || cuMemAlloc(&d, n)) {
		fprintf(stderr, "thread %ld: setup failed\n", id);
		exit(2);
	}
	CUfileError_t e = cuFileBufRegister((void *)(uintptr_t)d, n, 0);
	if (e.err) {
		fprintf(stderr, "cuFileBufRegister: %d\n", e.err);
		exit(2);
	}
	uint64_t start = (uint64_t)id * region, k = 0, nops = region / n;
	double t0 = now();
	while (now() - t0 < secs) {
		uint64_t off = start + (k++ % nops) * n;
		if (cuMemsetD8(d, 0x5a, n) || (sync_memset && cuStreamSynchronize(NULL))) {
			fprintf(stderr, "cuMemsetD8 failed\n");
			exit(2);
		}
		ssize_t r = cuFileRead(fh, (void *)(uintptr_t)d, n, (off_t)off, 0);
		if (cuMemcpyDtoH(host, d, n) || pread(fd, want, n, (off_t)off) != (ssize_t)n) {
			fprintf(stderr, "cuMemcpyDtoH or pread failed\n");
			exit(2);
		}
		atomic_fetch_add(&reads, 1);
		if (r != (ssize_t)n)
			atomic_fetch_add(&shorts, 1);
		if (memcmp(host, want, n)) {
			size_t i = 0, bad = 0;
			while (host[i] == want[i])
				i++;
			for (size_t j = 0; j < n; j++)
				bad += host[j] != want[j];
			if (atomic_fetch_add(&wrong, 1) == 0) {
				pthread_mutex_lock(&lock);
				snprintf(first, sizeof(first),
					 "first: thread %ld read of %zu at file offset %llu returned %zd; %zu bytes "
					 "wrong, first at +%zu: got 0x%02x, want 0x%02x",
					 id, n, (unsigned long long)off, r, bad, i, host[i], want[i]);
				pthread_mutex_unlock(&lock);
			}
		}
	}
	cuFileBufDeregister((void *)(uintptr_t)d);
	cuMemFree(d);
	free(host), free(want);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s FILE THREADS IOSIZE_KIB SECONDS nosync|sync\n", argv[0]);
		return 2;
	}
	nthreads = atoi(argv[2]);
	n = (size_t)atol(argv[3]) << 10;
	secs = atof(argv[4]);
	sync_memset = !strcmp(argv[5], "sync");
	struct stat st;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || nthreads < 1 || !n) {
		perror(argv[1]);
		return 2;
	}
	region = (uint64_t)st.st_size / (uint64_t)nthreads / n * n;
	CUdevice dev;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "CUDA setup failed\n");
		return 2;
	}
	CUfileError_t e = cuFileDriverOpen();
	CUfileDescr_t desc;
	memset(&desc, 0, sizeof(desc));
	desc.handle.fd = fd;
	desc.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	if (e.err || (e = cuFileHandleRegister(&fh, &desc)).err) {
		fprintf(stderr, "cuFileDriverOpen/HandleRegister: %d\n", e.err);
		return 2;
	}
	pthread_t th[256];
	if (nthreads > 256)
		nthreads = 256;
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("%s: %d thread(s) x %zu KiB, memset %s: %lu reads, %lu short, %lu with wrong bytes%s%s\n",
	       argv[1], nthreads, n >> 10, sync_memset ? "then cuStreamSynchronize(NULL)" : "not waited for",
	       atomic_load(&reads), atomic_load(&shorts), atomic_load(&wrong), first[0] ? "; " : "", first);
	cuFileHandleDeregister(fh);
	cuFileDriverClose();
	return atomic_load(&wrong) ? 1 : 0;
}
