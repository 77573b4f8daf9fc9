/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ceilings - what the hardware allows, measured in the same run as the
 * benchmarks so every library figure can be read as a fraction of it
 * (protocol: ../shared/docs/performance.md, results: docs/benchmarks.md).
 *
 *   ceilings [-f FILE] [-W FILE] [-s SIZE] [-r SIZE] [-c SIZE] [-d GPU] [-t TESTS] [-n] [-q]
 *     -f FILE   patterned test file for the read ceilings (page cache, disk)
 *     -W FILE   scratch file for the write ceilings (overwritten, kept)
 *     -s SIZE   bytes written by each write ceiling (default 4G)
 *     -r SIZE   bytes read per O_DIRECT queue depth (default 1G)
 *     -c SIZE   chunk of the page-cache pread ceiling (default 1M)
 *     -d GPU    GPU index (default 0)
 *     -t TESTS  comma list of copy,latency,dirty,pread,odirect,pwrite,kvcopy,
 *               kvfile,staged (default all that the given files allow), writes
 *               (only when named: the write mechanisms and the disk's write
 *               rates, -W FILE's name with .wN appended, -s bytes each),
 *               newfiles (only when named: of those, 8 threads' pwrite into
 *               8 new files, write_files_new_8x16MiB, alone), kvscatter
 *               (only when named: 64 KiB blocks written at scattered places
 *               of a pool 32 times -s / 8, by pwrite, stores and O_DIRECT,
 *               with the bytes the device wrote for each: test_kvscatter)
 *     -n        never drop the page cache (default: drop it, as root, before
 *               each cold measurement)
 *     -q        quick: the GPU copy ceilings on 64 MiB instead of 1 GiB, the
 *               page-cache and staged ceilings on the file's first 32 MiB
 *               (the staged threads' device buffers 4 MiB instead of 16),
 *               fewer latency samples and the timed KV copies 10 ms each
 *               instead of 0.5 s, so that a dry run of scripts/gpu-bench.sh
 *               takes seconds; every ceiling is still printed under its name,
 *               but the figures are not ceilings
 *
 * Output: one line per ceiling, `ceiling <name> <value> <unit>`, with
 * details on lines starting with '#'.  Throughputs are GB/s (10^9 bytes/s),
 * the best of a few repetitions; latencies are medians in microseconds.
 *
 * DESIGN: no cuFile here, only the CUDA driver (dlopen, like gdsio) and
 * plain system calls, so the figures bound every libcufile alike.  Parallel
 * file ceilings use threads that take chunk indexes from one atomic counter;
 * queue depth = number of threads each with one synchronous I/O in flight.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cuda_dl.h"
#include "pattern.h"
#include "size_arg.h"

static struct cuda_dl cu;
static int have_cuda;
static char cuda_why[512];
static int no_drop;
static int quick; /* -q */

/* -q: the bytes a file ceiling reads, at most 32 MiB. */
static uint64_t quick_cap(uint64_t bytes)
{
	const uint64_t cap = (uint64_t)32 << 20;
	return quick && bytes > cap ? cap : bytes;
}
static int gpu_index;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}


/* User + system CPU seconds of the process between two getrusage calls. */
static double cpu_seconds(const struct rusage *r0, const struct rusage *r1)
{
	return (double)(r1->ru_utime.tv_sec - r0->ru_utime.tv_sec + r1->ru_stime.tv_sec - r0->ru_stime.tv_sec) +
	       (double)(r1->ru_utime.tv_usec - r0->ru_utime.tv_usec + r1->ru_stime.tv_usec - r0->ru_stime.tv_usec) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void ceiling(const char *name, double v, const char *unit)
{
	printf("ceiling %s %.3f %s\n", name, v, unit);
	fflush(stdout);
}

/* Returns 1 if the page cache was dropped. */
static int drop_caches(void)
{
	if (no_drop)
		return 0;
	sync();
	if (geteuid() != 0)
		return 0;
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0)
		return 0;
	int ok = write(fd, "3\n", 2) == 2;
	close(fd);
	return ok;
}

/* Host memory for the file ceilings: pinned when the driver is there (that is
 * where a GPU-bound read lands), else page-aligned plain memory. */
static void *host_alloc(size_t len, int *pinned)
{
	void *p = NULL;
	*pinned = 0;
	CUcontext ctx;
	/* Pinned allocations need a current context in the calling thread. */
	if (have_cuda && cuda_dl_bind(&cu, gpu_index, &ctx) == CUDA_SUCCESS &&
	    cu.MemHostAlloc(&p, len, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS) {
		*pinned = 1;
		memset(p, 0, len);
		return p;
	}
	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static void host_free(void *p, int pinned)
{
	if (pinned)
		cu.MemFreeHost(p);
	else
		free(p);
}

/* ------------------------------------------------------------- GPU copies */

static double copy_gbps(int h2d, CUdeviceptr d, void *h, size_t len, int reps)
{
	double best = 0;
	for (int i = 0; i < reps; i++) {
		double t0 = now();
		CUresult r = h2d ? cu.MemcpyHtoD(d, h, len) : cu.MemcpyDtoH(h, d, len);
		double dt = now() - t0;
		if (r) {
			printf("# copy failed: %s\n", cuda_dl_errstr(&cu, r));
			return 0;
		}
		if ((double)len / dt / 1e9 > best)
			best = (double)len / dt / 1e9;
	}
	return best;
}

static void test_copy(void)
{
	/* The names say 1GiB, which the benchmark's targets refer to; -q only
	 * checks that the copies run. */
	const size_t len = quick ? (size_t)64 << 20 : (size_t)1 << 30;
	CUdeviceptr d;
	void *pinned = NULL, *pageable = NULL;
	if (cu.MemAlloc(&d, len)) {
		printf("# copy: cannot allocate %zu MiB on the GPU\n", len >> 20);
		return;
	}
	if (cu.MemHostAlloc(&pinned, len, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS) {
		memset(pinned, 1, len);
		copy_gbps(1, d, pinned, len, 1); /* warm-up */
		ceiling("h2d_pinned_1GiB", copy_gbps(1, d, pinned, len, 5), "GB/s");
		ceiling("d2h_pinned_1GiB", copy_gbps(0, d, pinned, len, 5), "GB/s");
		cu.MemFreeHost(pinned);
	}
	pageable = malloc(len);
	if (pageable) {
		memset(pageable, 1, len);
		ceiling("h2d_pageable_1GiB", copy_gbps(1, d, pageable, len, 3), "GB/s");
		free(pageable);
	}
	cu.MemFree(d);
}

static void test_latency(void)
{
	static const size_t sizes[] = {4096, 65536, 1 << 20};
	static const char *const names[] = {"h2d_pinned_latency_4KiB", "h2d_pinned_latency_64KiB",
					    "h2d_pinned_latency_1MiB"};
	const int iters = quick ? 50 : 500;
	CUdeviceptr d;
	void *h;
	if (cu.MemAlloc(&d, 1 << 20))
		return;
	if (cu.MemHostAlloc(&h, 1 << 20, CU_MEMHOSTALLOC_PORTABLE)) {
		cu.MemFree(d);
		return;
	}
	double *us = calloc(iters, sizeof(double));
	for (int s = 0; us && s < 3; s++) {
		for (int i = 0; i < 20; i++)
			cu.MemcpyHtoD(d, h, sizes[s]);
		for (int i = 0; i < iters; i++) {
			double t0 = now();
			cu.MemcpyHtoD(d, h, sizes[s]);
			us[i] = (now() - t0) * 1e6;
		}
		qsort(us, iters, sizeof(double), cmp_double);
		ceiling(names[s], us[iters / 2], "us");
	}
	free(us);
	cu.MemFreeHost(h);
	cu.MemFree(d);
}

/* Copies of data the CPU has just written: a staged read copies what
 * pread (the kernel's copy) put into the pinned buffer a moment ago, and
 * the copy engine then reads cache lines a core still holds.  For 1 MiB:
 * the latency of one synchronous copy from a buffer last written long ago
 * (as test_latency), just written by this thread (memcpy), just filled by
 * pread from the page cache, and the last again split into 4 copies on 4
 * streams; each p50 of 300. */
static void test_dirty(const char *file)
{
	const size_t n = 1 << 20;
	const int iters = 300;
	CUdeviceptr d = 0;
	void *h = NULL;
	char *src = malloc(n);
	double *us = calloc(iters, sizeof(double));
	CUstream st[4] = {0};
	int fd = file ? open(file, O_RDONLY) : -1;
	if (!src || !us || cu.MemAlloc(&d, n) || cu.MemHostAlloc(&h, n, CU_MEMHOSTALLOC_PORTABLE))
		goto out;
	for (int i = 0; i < 4; i++)
		if (cu.StreamCreate(&st[i], CU_STREAM_NON_BLOCKING))
			goto out;
	memset(src, 7, n);
	memset(h, 1, n);
	static const char *const names[] = {"h2d_1MiB_clean_p50", "h2d_1MiB_after_memcpy_p50",
					    "h2d_1MiB_after_pread_p50", "h2d_1MiB_after_pread_4streams_p50"};
	for (int mode = 0; mode < 4; mode++) {
		if (mode >= 2 && fd < 0)
			break;
		for (int i = 0; i < iters + 20; i++) {
			if (mode == 1)
				memcpy(h, src, n);
			else if (mode >= 2 && pread(fd, h, n, (off_t)((size_t)i % 1024 * n)) != (ssize_t)n)
				goto out;
			double t0 = now();
			if (mode == 3) {
				for (int k = 0; k < 4; k++)
					cu.MemcpyHtoDAsync(d + (CUdeviceptr)(k * (n / 4)), (char *)h + k * (n / 4), n / 4, st[k]);
				for (int k = 0; k < 4; k++)
					cu.StreamSynchronize(st[k]);
			} else {
				cu.MemcpyHtoD(d, h, n);
			}
			if (i >= 20)
				us[i - 20] = (now() - t0) * 1e6;
		}
		qsort(us, iters, sizeof(double), cmp_double);
		ceiling(names[mode], us[iters / 2], "us");
	}
out:
	if (fd >= 0)
		close(fd);
	if (h)
		cu.MemFreeHost(h);
	if (d)
		cu.MemFree(d);
	free(src), free(us);
}

#define OCF_MIN_U64(a, b) ((a) < (b) ? (a) : (b))

/* ------------------------------------------- the KV-cache block ceilings */

/* Pinned host<->GPU copies of `block` bytes, queued back to back by
 * `threads` threads, each with its own stream and pinned buffer, for about
 * `secs` seconds: GB/s. */
struct kvjob {
	int h2d;
	size_t block;
	int group; /* 0: separate copies; n: n copies per cuMemcpyBatchAsync */
	double secs;
	atomic_ullong bytes;
	atomic_int err;
};

/* Queues `calls` submissions (one() each) between stream synchronisations
 * for about j->secs, adding per_call bytes per submission to j->bytes;
 * records a failure in j->err. */
static void timed_copies(struct kvjob *j, CUstream s, int calls, size_t per_call, CUresult (*one)(void *), void *arg)
{
	double t0 = now();
	unsigned long long n = 0;
	while (now() - t0 < j->secs) {
		for (int i = 0; i < calls; i++)
			if (one(arg)) {
				atomic_store(&j->err, 1);
				return;
			}
		if (cu.StreamSynchronize(s)) {
			atomic_store(&j->err, 1);
			return;
		}
		n += (unsigned long long)calls * per_call;
	}
	atomic_fetch_add(&j->bytes, n);
}

struct grouped_call {
	CUdeviceptr *dst, *src;
	size_t *sizes, count;
	CUstream s;
};

static CUresult grouped_one(void *arg)
{
	struct grouped_call *c = arg;
	CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
	size_t attr_idx = 0;
	return cu.MemcpyBatchAsync(c->dst, c->src, c->sizes, c->count, &attr, &attr_idx, 1, c->s);
}

struct single_call {
	int h2d;
	CUdeviceptr d;
	void *h;
	size_t len;
	CUstream s;
};

static CUresult single_one(void *arg)
{
	struct single_call *c = arg;
	return c->h2d ? cu.MemcpyHtoDAsync(c->d, c->h, c->len, c->s) : cu.MemcpyDtoHAsync(c->h, c->d, c->len, c->s);
}

/* Grouped copies: `group` blocks at a random permutation of the slots of
 * one pinned buffer to a random permutation of the slots of one device
 * buffer (nothing adjacent on both sides, as a paged KV pool), one
 * cuMemcpyBatchAsync per group. */
static void kvgroup_run(struct kvjob *j, CUstream s, CUdeviceptr d, void *h)
{
	int g = j->group;
	CUdeviceptr *dst = calloc((size_t)g, sizeof(*dst)), *src = calloc((size_t)g, sizeof(*src));
	size_t *sizes = calloc((size_t)g, sizeof(*sizes));
	int *perm = malloc((size_t)g * sizeof(*perm));
	if (!dst || !src || !sizes || !perm || !cu.MemcpyBatchAsync) {
		atomic_store(&j->err, 1);
		goto out;
	}
	unsigned seed = (unsigned)(uintptr_t)h;
	for (int side = 0; side < 2; side++) {
		for (int i = 0; i < g; i++)
			perm[i] = i;
		for (int i = g - 1; i > 0; i--) {
			int k = (int)(rand_r(&seed) % (unsigned)(i + 1)), t = perm[i];
			perm[i] = perm[k];
			perm[k] = t;
		}
		for (int i = 0; i < g; i++) {
			CUdeviceptr dev = d + (CUdeviceptr)perm[i] * j->block;
			CUdeviceptr host = (CUdeviceptr)(uintptr_t)h + (CUdeviceptr)perm[(i + 1) % g] * j->block;
			if (side == 0) {
				dst[i] = j->h2d ? dev : host;
				sizes[i] = j->block;
			} else {
				src[i] = j->h2d ? host : dev;
			}
		}
	}
	size_t len = (size_t)g * j->block;
	struct grouped_call call = {.dst = dst, .src = src, .sizes = sizes, .count = (size_t)g, .s = s};
	timed_copies(j, s, (int)(((size_t)16 << 20) / len) + 1, len, grouped_one, &call);
out:
	free(perm);
	free(dst);
	free(src);
	free(sizes);
}

/* One thread of kvcopy(): its stream, a device and a pinned buffer of one
 * block (separate copies) or of `group` blocks (grouped copies). */
static void *kvcopy_main(void *arg)
{
	struct kvjob *j = arg;
	CUcontext ctx;
	CUstream s = NULL;
	CUdeviceptr d = 0;
	void *h = NULL;
	size_t len = (size_t)(j->group ? j->group : 1) * j->block;
	if (cuda_dl_bind(&cu, gpu_index, &ctx) || cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING) || cu.MemAlloc(&d, len) ||
	    cu.MemHostAlloc(&h, len, CU_MEMHOSTALLOC_PORTABLE)) {
		atomic_store(&j->err, 1);
		goto out;
	}
	memset(h, 1, len);
	if (j->group) {
		kvgroup_run(j, s, d, h);
	} else {
		struct single_call call = {.h2d = j->h2d, .d = d, .h = h, .len = j->block, .s = s};
		/* copies per synchronisation: about 16 MiB */
		timed_copies(j, s, (int)(((size_t)16 << 20) / j->block) + 1, j->block, single_one, &call);
	}
out:
	if (s) {
		cu.StreamSynchronize(s);
		if (cu.StreamDestroy)
			cu.StreamDestroy(s);
	}
	if (h)
		cu.MemFreeHost(h);
	if (d)
		cu.MemFree(d);
	return NULL;
}

static double kvcopy(int h2d, size_t block, int group, int threads)
{
	struct kvjob j = {.h2d = h2d, .block = block, .group = group, .secs = quick ? 0.01 : 0.5};
	pthread_t th[16];
	int n = 0;
	double t0 = now();
	for (; n < threads && n < 16; n++)
		if (pthread_create(&th[n], NULL, kvcopy_main, &j))
			break;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	double dt = now() - t0;
	return atomic_load(&j.err) ? 0 : (double)atomic_load(&j.bytes) / dt / 1e9;
}

/* The ceilings of the KV-cache rows and of small calls: separate pinned
 * copies of 64 KiB, 256 KiB and 1 MiB blocks, host to GPU and back, the
 * best of 1, 4 and 16 threads each with its own stream. */
static void test_kvcopy(void)
{
	static const size_t blocks[] = {64 << 10, 256 << 10, 1 << 20};
	static const char *const bname[] = {"64KiB", "256KiB", "1MiB"};
	static const int counts[] = {1, 4, 16};
	for (int b = 0; b < 3; b++)
		for (int h2d = 1; h2d >= 0; h2d--) {
			double best = 0;
			int at = 0;
			for (int i = 0; i < 3; i++) {
				double v = kvcopy(h2d, blocks[b], 0, counts[i]);
				if (v > best) {
					best = v;
					at = counts[i];
				}
			}
			char name[64];
			snprintf(name, sizeof(name), "%s_pinned_%s_best", h2d ? "h2d" : "d2h", bname[b]);
			ceiling(name, best, "GB/s");
			printf("# %s: best with %d thread(s)\n", name, at);
		}
	/* Grouped 64 KiB copies, host to GPU: the limit of a batch path that
	 * hands the driver many scattered blocks in one call. */
	if (!cu.MemcpyBatchAsync) {
		printf("# h2d_pinned_64KiB_grouped: the driver has no cuMemcpyBatchAsync_v2\n");
		return;
	}
	static const int groups[] = {2, 4, 16, 128};
	for (int gi = 0; gi < 4; gi++) {
		double best = 0;
		int at = 0;
		for (int i = 0; i < 3; i++) {
			double v = kvcopy(1, (size_t)64 << 10, groups[gi], counts[i]);
			if (v > best) {
				best = v;
				at = counts[i];
			}
		}
		char name[64];
		snprintf(name, sizeof(name), "h2d_pinned_64KiB_grouped%d_best", groups[gi]);
		if (best > 0)
			ceiling(name, best, "GB/s");
		else
			printf("# %s: cuMemcpyBatchAsync failed\n", name);
		printf("# %s: %d scattered copies per cuMemcpyBatchAsync, best with %d thread(s)\n", name,
		       groups[gi], at);
	}
}

/* ---------------------------------------------------- parallel file I/O */

struct job {
	int fd;
	int write;
	size_t chunk;
	uint64_t nchunks;
	atomic_ullong next; /* relaxed: only hands out chunk indexes */
	atomic_int err;
	atomic_int pinned; /* relaxed: any thread's answer will do, all ask the same driver */
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	int pinned;
	void *buf = host_alloc(j->chunk, &pinned);
	if (!buf) {
		atomic_store(&j->err, ENOMEM);
		return NULL;
	}
	atomic_store_explicit(&j->pinned, pinned, memory_order_relaxed);
	if (j->write)
		pattern_fill(buf, 0, j->chunk);
	for (;;) {
		uint64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
		if (c >= j->nchunks)
			break;
		uint64_t off = c * j->chunk;
		size_t done = 0;
		while (done < j->chunk) {
			ssize_t r =
			    j->write ? pwrite(j->fd, (char *)buf + done, j->chunk - done, (off_t)(off + done))
				     : pread(j->fd, (char *)buf + done, j->chunk - done, (off_t)(off + done));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				atomic_store(&j->err, r < 0 ? errno : EIO);
				goto out;
			}
			done += (size_t)r;
		}
	}
out:
	host_free(buf, pinned);
	return NULL;
}

/* GB/s for `bytes` (a multiple of chunk) moved by `threads` threads. */
static double parallel_io(int fd, int write, int threads, size_t chunk, uint64_t bytes, int *pinned)
{
	struct job j = {.fd = fd, .write = write, .chunk = chunk, .nchunks = bytes / chunk};
	pthread_t th[64];
	int n = 0;
	double t0 = now();
	for (; n < threads && n < 64; n++)
		if (pthread_create(&th[n], NULL, job_main, &j))
			break;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	double dt = now() - t0;
	if (pinned)
		*pinned = atomic_load(&j.pinned);
	if (atomic_load(&j.err)) {
		printf("# %s failed: %s\n", write ? "pwrite" : "pread", strerror(atomic_load(&j.err)));
		return 0;
	}
	return (double)(j.nchunks * chunk) / dt / 1e9;
}

static void test_pread(const char *file, size_t chunk)
{
	static const int counts[] = {1, 2, 4, 8, 16};
	int fd = open(file, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		printf("# pread: %s: %s\n", file, strerror(errno));
		return;
	}
	uint64_t bytes = quick_cap((uint64_t)st.st_size) / chunk * chunk;
	parallel_io(fd, 0, 16, chunk, bytes, NULL); /* make sure it is all cached */
	double best = 0;
	int pinned = 0;
	for (int i = 0; i < 5; i++) {
		double v = 0;
		for (int rep = 0; rep < 2; rep++) {
			double g = parallel_io(fd, 0, counts[i], chunk, bytes, &pinned);
			v = g > v ? g : v;
		}
		char name[64];
		snprintf(name, sizeof(name), "pagecache_pread_%dthreads", counts[i]);
		ceiling(name, v, "GB/s");
		best = v > best ? v : best;
	}
	printf("# pread: %llu bytes of %s in %zu-byte chunks into %s memory\n", (unsigned long long)bytes,
	       file, chunk, pinned ? "pinned" : "plain (no CUDA driver)");
	ceiling("pagecache_pread_best", best, "GB/s");

	/* The CPU floor of a warm read: the kernel's page-cache copy, in CPU
	 * seconds (user + system, the whole process) per GB of 16 MiB preads
	 * into pinned memory, by 1 and by 8 threads (the best of 3). */
	static const int cpu_threads[] = {1, 8};
	for (int i = 0; i < 2 && bytes >= (16u << 20); i++) {
		double best_cpu = 0;
		for (int rep = 0; rep < 3; rep++) {
			struct rusage r0, r1;
			getrusage(RUSAGE_SELF, &r0);
			double g = parallel_io(fd, 0, cpu_threads[i], 16u << 20, bytes / (16u << 20) * (16u << 20), NULL);
			getrusage(RUSAGE_SELF, &r1);
			double cpu = cpu_seconds(&r0, &r1);
			double per_gb = g > 0 ? cpu / ((double)(bytes / (16u << 20) * (16u << 20)) / 1e9) : 0;
			if (per_gb > 0 && (best_cpu == 0 || per_gb < best_cpu))
				best_cpu = per_gb;
		}
		char name[64];
		snprintf(name, sizeof(name), "pagecache_pread_cpu_%dx16MiB", cpu_threads[i]);
		ceiling(name, best_cpu, "CPU_s/GB");
	}

	/* The floor under a small cuFileRead: one 4 KiB pread of cached data. */
	int p4;
	void *b4 = host_alloc(4096, &p4);
	const int iters = quick ? 2000 : 20000;
	double *us = calloc(iters, sizeof(double));
	uint64_t x = 88172645463325252ull, pages = quick_cap((uint64_t)st.st_size) / 4096;
	for (int i = 0; b4 && us && pages && i < iters; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		double t0 = now();
		if (pread(fd, b4, 4096, (off_t)((x % pages) * 4096)) != 4096)
			break;
		us[i] = (now() - t0) * 1e6;
	}
	if (b4 && us && pages) {
		qsort(us, iters, sizeof(double), cmp_double);
		ceiling("pagecache_pread_4KiB_latency_p50", us[iters / 2], "us");
	}
	free(us);
	if (b4)
		host_free(b4, p4);
	close(fd);
}

static void test_odirect(const char *file, uint64_t per_depth)
{
	static const int depths[] = {1, 4, 16, 32};
	const size_t chunk = 1 << 20;
	struct stat st;
	if (stat(file, &st)) {
		printf("# odirect: %s: %s\n", file, strerror(errno));
		return;
	}
	uint64_t bytes = per_depth < (uint64_t)st.st_size ? per_depth : (uint64_t)st.st_size;
	bytes = bytes / chunk * chunk;
	double best = 0;
	int dropped = 1;
	for (int i = 0; i < 4; i++) {
		dropped &= drop_caches();
		int fd = open(file, O_RDONLY | O_DIRECT);
		if (fd < 0) {
			printf("# odirect: %s: %s\n", file, strerror(errno));
			return;
		}
		double v = parallel_io(fd, 0, depths[i], chunk, bytes, NULL);
		close(fd);
		char name[64];
		snprintf(name, sizeof(name), "disk_odirect_read_qd%d", depths[i]);
		ceiling(name, v, "GB/s");
		best = v > best ? v : best;
	}
	ceiling("disk_odirect_read_best", best, "GB/s");
	/* A cold buffered read, one thread, 16 MiB calls (readahead at work). */
	dropped &= drop_caches();
	int fd = open(file, O_RDONLY);
	if (fd >= 0) {
		ceiling("disk_buffered_cold_read_1x16MiB",
			parallel_io(fd, 0, 1, 16 << 20, bytes / (16 << 20) * (16 << 20), NULL), "GB/s");
		close(fd);
	}
	printf("# disk: %llu bytes per measurement in 1 MiB O_DIRECT reads, queue depth = threads; page "
	       "cache %s\n",
	       (unsigned long long)bytes, dropped ? "dropped before each" : "NOT dropped (not root or -n)");
}

static void test_pwrite(const char *file, uint64_t bytes)
{
	/* Overwrite an existing, allocated file, as the write benchmarks do. */
	int fd = open(file, O_WRONLY | O_CREAT, 0644);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		printf("# pwrite: %s: %s\n", file, strerror(errno));
		return;
	}
	if ((uint64_t)st.st_size < bytes) {
		int e = posix_fallocate(fd, 0, (off_t)bytes);
		if (e)
			printf("# pwrite: fallocate: %s\n", strerror(e));
		fsync(fd);
	}
	close(fd);
	fd = open(file, O_WRONLY | O_DIRECT);
	if (fd >= 0) {
		uint64_t b = bytes / (16 << 20) * (16 << 20);
		ceiling("pwrite_odirect_1x16MiB", parallel_io(fd, 1, 1, 16 << 20, b, NULL), "GB/s");
		close(fd);
	}
	fd = open(file, O_WRONLY);
	if (fd >= 0) {
		uint64_t b = bytes / (1 << 20) * (1 << 20);
		ceiling("pwrite_buffered_8x1MiB", parallel_io(fd, 1, 8, 1 << 20, b, NULL), "GB/s");
		double t0 = now();
		fsync(fd);
		printf("# pwrite: %llu bytes per measurement, no fsync inside the timing (fsync after: %.2f "
		       "s)\n",
		       (unsigned long long)bytes, now() - t0);
		close(fd);
	}
}

/* ------------------------------------------------------- write ceilings */

/* The mechanisms a write from staging into a file can use, measured from
 * pinned memory (where a device-to-host copy lands) into a file, timed
 * over the calls only (no fsync inside the timing: the page cache is where
 * a buffered write ends), CPU s/GB of the whole process beside each:
 *   pwrite   buffered pwrite: the file's write lock (i_rwsem) is taken for
 *            each call, so writers of one file take turns
 *   files    the same, each thread its own file (no shared lock)
 *   map      stores (memcpy) through one shared writable mapping of the
 *            file: a page fault takes no file write lock
 * and +thp: the mapping 2 MiB-aligned and MADV_HUGEPAGE, so that a fault
 * can bring in and map a 2 MiB folio (populating the pages first with
 * MADV_POPULATE_WRITE or _READ, or posix_fadvise WILLNEED, gained nothing
 * on the H200 machine: docs/history/benchmarks.md); into a new file (created empty; a mapping's file
 * extended with ftruncate, its blocks allocated at the faults), into blocks
 * reserved beforehand (fallocate, timed with the writes: "res") and over
 * clean cached pages of the same file ("cached").  Then the disk: O_DIRECT
 * writes of 16 MiB at queue depth 1-16 (threads), new file and reserved,
 * and buffered writes of the same bytes timed to the end of their fsync. */
enum wmode { W_PWRITE, W_FILES, W_MAP, W_DIRECT };
enum wfile { WF_NEW, WF_RESERVED, WF_CACHED };
enum { WP_THP = 1, WP_FSYNC = 2, WP_SCATTER = 4 };

#define WTHREADS_MAX 128

struct wjob {
	enum wmode mode;
	int flags;
	int fds[WTHREADS_MAX];
	const uint64_t *perm; /* scattered: chunk k goes to block perm[k] of the file (else block k) */
	uint64_t file_bytes;  /* the file's size (a scattered write's pool; else the bytes written) */
	char *map, *map_base;
	size_t map_len;
	size_t chunk;
	uint64_t nchunks;
	int threads;
	atomic_ullong next;
	atomic_int err;
	pthread_barrier_t go;
};

struct wthread {
	struct wjob *j;
	int id;
};

static int wpwrite(int fd, const char *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pwrite(fd, buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? errno : EIO;
		done += (size_t)r;
	}
	return 0;
}

static void *wjob_main(void *arg)
{
	struct wthread *t = arg;
	struct wjob *j = t->j;
	int pinned = 0;
	void *buf = host_alloc(j->chunk, &pinned);
	if (buf)
		pattern_fill(buf, (uint64_t)t->id * j->chunk, j->chunk);
	else
		atomic_store(&j->err, ENOMEM);
	pthread_barrier_wait(&j->go); /* buffers ready */
	pthread_barrier_wait(&j->go); /* the timed set-up done */
	uint64_t per_file = j->nchunks / (uint64_t)j->threads;
	for (uint64_t k = 0; buf;) {
		uint64_t c;
		if (j->mode == W_FILES) {
			if (k >= per_file)
				break;
			c = k++;
		} else {
			c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
			if (c >= j->nchunks)
				break;
		}
		uint64_t off = (j->perm ? j->perm[c] : c) * j->chunk;
		int e = 0;
		if (j->mode == W_MAP) {
			memcpy(j->map + off, buf, j->chunk);
		} else {
			e = wpwrite(j->mode == W_FILES ? j->fds[t->id] : j->fds[0], buf, j->chunk, off);
		}
		if (e) {
			atomic_store(&j->err, e);
			break;
		}
	}
	pthread_barrier_wait(&j->go);
	if (buf)
		host_free(buf, pinned);
	return NULL;
}

static void wname(char *name, size_t len, const char *base, int i) { snprintf(name, len, "%s.w%d", base, i); }

/* Prepares the file(s) of one measurement (not timed): a new empty file,
 * or one written once and synced (clean cached pages). */
static int wprep(struct wjob *j, const char *base, enum wfile kind, uint64_t bytes)
{
	int nf = j->mode == W_FILES ? j->threads : 1;
	uint64_t each = bytes / (uint64_t)nf;
	(void)each;
	for (int i = 0; i < nf; i++) {
		char name[4096];
		wname(name, sizeof(name), base, i);
		unlink(name);
		j->fds[i] = open(name, O_RDWR | O_CREAT | O_TRUNC | (j->mode == W_DIRECT ? O_DIRECT : 0), 0644);
		if (j->fds[i] < 0) {
			printf("# writes: %s: %s\n", name, strerror(errno));
			return -1;
		}
		uint64_t fb = j->file_bytes / (uint64_t)nf;
		if (kind == WF_CACHED) {
			char *b = calloc(1, 1 << 20);
			for (uint64_t o = 0; b && o < fb; o += 1 << 20)
				if (wpwrite(j->fds[i], b, 1 << 20, o))
					break;
			free(b);
			fsync(j->fds[i]);
		}
		/* A scattered write's pool exists before it: reserved untimed. */
		if (kind == WF_RESERVED && (j->flags & WP_SCATTER)) {
			int e = posix_fallocate(j->fds[i], 0, (off_t)fb);
			if (e) {
				printf("# writes: fallocate: %s\n", strerror(e));
				return -1;
			}
			fsync(j->fds[i]);
		}
	}
	return 0;
}

/* The timed set-up of a measurement: blocks reserved (not a scattered
 * row's pool, which exists before it), the mapping of the file made. */
static int wsetup(struct wjob *j, enum wfile kind)
{
	int nf = j->mode == W_FILES ? j->threads : 1;
	uint64_t bytes = j->file_bytes;
	for (int i = 0; kind == WF_RESERVED && !(j->flags & WP_SCATTER) && i < nf; i++) {
		int e = posix_fallocate(j->fds[i], 0, (off_t)(bytes / (uint64_t)nf));
		if (e) {
			printf("# writes: fallocate: %s\n", strerror(e));
			return -1;
		}
	}
	if (j->mode != W_MAP)
		return 0;
	if (kind == WF_NEW && ftruncate(j->fds[0], (off_t)bytes)) {
		printf("# writes: ftruncate: %s\n", strerror(errno));
		return -1;
	}
	const size_t A = (size_t)2 << 20;
	j->map_len = bytes + A;
	j->map_base = mmap(NULL, j->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (j->map_base == MAP_FAILED) {
		j->map_base = NULL;
		return -1;
	}
	char *at = (char *)(((uintptr_t)j->map_base + A - 1) & ~(uintptr_t)(A - 1));
	j->map = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, j->fds[0], 0);
	if (j->map == MAP_FAILED) {
		printf("# writes: mmap: %s\n", strerror(errno));
		j->map = NULL;
		return -1;
	}
	if ((j->flags & WP_THP) && madvise(j->map, bytes, MADV_HUGEPAGE))
		printf("# writes: MADV_HUGEPAGE: %s\n", strerror(errno));
	return 0;
}

static void wdone(struct wjob *j, const char *base)
{
	int nf = j->mode == W_FILES ? j->threads : 1;
	if (j->map_base)
		munmap(j->map_base, j->map_len);
	for (int i = 0; i < nf; i++) {
		char name[4096];
		wname(name, sizeof(name), base, i);
		if (j->fds[i] >= 0)
			close(j->fds[i]);
		unlink(name); /* drops its dirty pages unwritten */
	}
}

/* The block device that holds fd's file: its /sys/dev/block stat file, or
 * "" when there is none (tmpfs, a network file system). */
static void dev_stat_path(int fd, char *path, size_t len)
{
	struct stat st;
	path[0] = 0;
	if (fstat(fd, &st) == 0)
		snprintf(path, len, "/sys/dev/block/%u:%u/stat", major(st.st_dev), minor(st.st_dev));
	if (path[0] && access(path, R_OK) != 0)
		path[0] = 0;
}

/* Bytes the device has written (its sectors written, field 7 of the stat
 * file), or -1. */
static int64_t dev_written(const char *path)
{
	unsigned long long f[7];
	FILE *fp = path[0] ? fopen(path, "r") : NULL;
	if (!fp)
		return -1;
	int n = fscanf(fp, "%llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6]);
	fclose(fp);
	return n == 7 ? (int64_t)(f[6] * 512) : -1;
}

/* The file system of fd's file and its options (the journal mode among
 * them), from /proc/self/mountinfo. */
static void fs_of(int fd, char *out, size_t len)
{
	struct stat st;
	snprintf(out, len, "?");
	FILE *fp = fstat(fd, &st) == 0 ? fopen("/proc/self/mountinfo", "r") : NULL;
	if (!fp)
		return;
	char line[4096];
	while (fgets(line, sizeof(line), fp)) {
		unsigned ma, mi;
		char mnt[1024], opts[1024], fstype[64], src[1024], sopts[1024];
		if (sscanf(line, "%*d %*d %u:%u %*s %1023s %1023s", &ma, &mi, mnt, opts) != 4 ||
		    makedev(ma, mi) != st.st_dev)
			continue;
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(dash, " - %63s %1023s %1023s", fstype, src, sopts) != 3)
			break;
		/* ext4 lists every option, the journal mode (data=) included,
		 * in /proc/fs/ext4/DEV/options; the mount table only those
		 * that differ from the defaults. */
		char journal[64] = "";
		const char *dev = strrchr(src, '/');
		char path[1200];
		snprintf(path, sizeof(path), "/proc/fs/ext4/%.1000s/options", dev ? dev + 1 : src);
		FILE *o = strcmp(fstype, "ext4") ? NULL : fopen(path, "r");
		for (char w[256]; o && fgets(w, sizeof(w), o);)
			if (!strncmp(w, "data=", 5))
				snprintf(journal, sizeof(journal), ", %.*s", (int)strcspn(w, "\n"), w);
		if (o)
			fclose(o);
		snprintf(out, len, "%.60s on %.300s (%.300s), %.600s%s", fstype, mnt, src, sopts, journal);
		break;
	}
	fclose(fp);
}

/* A random permutation's first n of `blocks` block numbers (a partial
 * Fisher-Yates of a fixed seed, so every row writes the same blocks). */
static uint64_t *scatter_blocks(uint64_t blocks, uint64_t n)
{
	uint64_t *all = malloc(blocks * sizeof(*all));
	if (!all)
		return NULL;
	for (uint64_t i = 0; i < blocks; i++)
		all[i] = i;
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (uint64_t i = 0; i < n && i + 1 < blocks; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t k = i + x % (blocks - i), t = all[i];
		all[i] = all[k];
		all[k] = t;
	}
	return all;
}

/* The scattered rows' pool: this many times the bytes written, so that a
 * whole-folio write-back of the blocks' neighbours shows at the device. */
#define SCATTER_POOL 32

/* One write measurement; prints `ceiling write_<mode>_<file>_<T>x<chunk>`
 * and its CPU.  WP_SCATTER: the chunks go to blocks of a pool SCATTER_POOL
 * times as large, at a random permutation of its blocks, and the bytes
 * the device wrote for them (after a syncfs, outside the timing) are
 * printed beside, as `ceiling devbytes_<name>`: their ratio to the bytes
 * written.  Returns GB/s (0 on failure). */
static double wmeasure(const char *base, enum wmode mode, int flags, enum wfile kind, int threads, size_t chunk,
		       uint64_t bytes)
{
	static const char *const modes[] = {"pwrite", "files", "map", "odirect"};
	static const char *const kinds[] = {"new", "res", "cached"};
	struct wjob j = {.mode = mode, .flags = flags, .chunk = chunk, .nchunks = bytes / chunk, .threads = threads};
	for (int i = 0; i < WTHREADS_MAX; i++)
		j.fds[i] = -1;
	bytes = j.nchunks * chunk;
	j.file_bytes = flags & WP_SCATTER ? bytes * SCATTER_POOL : bytes;
	uint64_t *perm = NULL;
	double v = 0;
	int n = threads < WTHREADS_MAX ? threads : WTHREADS_MAX;
	if (j.nchunks < (uint64_t)n) {
		printf("# writes: %llu bytes are too few for %d threads of %zu-byte writes\n",
		       (unsigned long long)bytes, n, chunk);
		return 0;
	}
	if (flags & WP_SCATTER) {
		perm = scatter_blocks(j.file_bytes / chunk, j.nchunks);
		if (!perm) {
			printf("# writes: no memory for the scattered blocks\n");
			return 0;
		}
		j.perm = perm;
	}
	if (wprep(&j, base, kind, bytes) == 0) {
		pthread_t th[WTHREADS_MAX];
		struct wthread wt[WTHREADS_MAX];
		char statp[128], fsname[2400];
		dev_stat_path(j.fds[0], statp, sizeof(statp));
		if (flags & WP_SCATTER)
			syncfs(j.fds[0]); /* the pool's own write-back is not the rows' */
		int64_t dev0 = dev_written(statp);
		pthread_barrier_init(&j.go, NULL, (unsigned)n + 1);
		for (int i = 0; i < n; i++) {
			wt[i] = (struct wthread){.j = &j, .id = i};
			pthread_create(&th[i], NULL, wjob_main, &wt[i]);
		}
		pthread_barrier_wait(&j.go); /* buffers ready */
		struct rusage r0, r1;
		getrusage(RUSAGE_SELF, &r0);
		double t0 = now();
		int bad = wsetup(&j, kind);
		double t_setup = now() - t0;
		if (bad)
			atomic_store(&j.err, EINVAL), atomic_store(&j.next, j.nchunks);
		pthread_barrier_wait(&j.go); /* go */
		pthread_barrier_wait(&j.go); /* every thread done */
		if (flags & WP_FSYNC)
			for (int i = 0; i < (mode == W_FILES ? n : 1); i++)
				fsync(j.fds[i]);
		double dt = now() - t0;
		getrusage(RUSAGE_SELF, &r1);
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&j.go);
		if (atomic_load(&j.err)) {
			printf("# writes %s: %s\n", modes[mode], strerror(atomic_load(&j.err)));
		} else {
			v = (double)bytes / dt / 1e9;
			char name[128], cs[24];
			if (chunk >= (1 << 20))
				snprintf(cs, sizeof(cs), "%zuMiB", chunk >> 20);
			else
				snprintf(cs, sizeof(cs), "%zuKiB", chunk >> 10);
			snprintf(name, sizeof(name), "write_%s%s_%s%s_%dx%s%s", modes[mode], flags & WP_THP ? "+thp" : "",
				 kinds[kind], flags & WP_SCATTER ? "_scatter" : "", threads, cs,
				 flags & WP_FSYNC ? "_fsync" : "");
			ceiling(name, v, "GB/s");
			printf("# %s: %.3f CPU s/GB, set-up %.1f ms, %llu bytes\n", name,
			       cpu_seconds(&r0, &r1) / ((double)bytes / 1e9), t_setup * 1e3, (unsigned long long)bytes);
			if (flags & WP_SCATTER) {
				/* What reached the device for those bytes: the
				 * dirty pages written back (and the journal's
				 * share), counted at the block device. */
				if (j.map)
					msync(j.map, j.file_bytes, MS_SYNC);
				syncfs(j.fds[0]);
				int64_t dev1 = dev_written(statp);
				fs_of(j.fds[0], fsname, sizeof(fsname));
				if (dev0 >= 0 && dev1 >= dev0) {
					char dn[160];
					snprintf(dn, sizeof(dn), "devbytes_%s", name);
					ceiling(dn, (double)(dev1 - dev0) / (double)bytes, "x");
					printf("# %s: the device wrote %lld bytes for %llu written in %llu blocks of %zu "
					       "in a pool of %llu; %s\n",
					       name, (long long)(dev1 - dev0), (unsigned long long)bytes,
					       (unsigned long long)j.nchunks, chunk, (unsigned long long)j.file_bytes,
					       fsname);
				} else {
					printf("# %s: the device's bytes are not counted (%s: no block device stat)\n", name,
					       fsname);
				}
			}
		}
	}
	wdone(&j, base);
	free(perm);
	return v;
}

struct wrow {
	enum wmode mode;
	int flags;
	enum wfile kind;
	int threads;
	size_t chunk;
};

static void test_writes(const char *base, uint64_t bytes)
{
	const size_t M = 1 << 20;
	static const struct wrow rows[] = {
	    {W_PWRITE, 0, WF_NEW, 1, 16 << 20},
	    {W_PWRITE, 0, WF_NEW, 8, 16 << 20},
	    {W_FILES, 0, WF_NEW, 8, 16 << 20},
	    {W_PWRITE, 0, WF_CACHED, 8, 16 << 20},
	    {W_MAP, 0, WF_CACHED, 1, 16 << 20},
	    {W_MAP, 0, WF_CACHED, 8, 2 << 20},
	    {W_MAP, 0, WF_RESERVED, 8, 2 << 20},
	    {W_MAP, WP_THP, WF_NEW, 8, 2 << 20},
	    {W_MAP, WP_THP, WF_RESERVED, 1, 16 << 20},
	    {W_MAP, WP_THP, WF_RESERVED, 8, 2 << 20},
	    {W_MAP, WP_THP, WF_RESERVED, 16, 2 << 20},
	    {W_MAP, WP_THP, WF_RESERVED, 16, 64 << 10},
	    {W_MAP, WP_THP, WF_CACHED, 16, 64 << 10},
	    {W_PWRITE, 0, WF_CACHED, 16, 64 << 10},
	    {W_PWRITE, 0, WF_CACHED, 1, 64 << 10},
	    {W_PWRITE, 0, WF_CACHED, 16, 1 << 20},
	    {W_MAP, WP_THP | WP_FSYNC, WF_RESERVED, 8, 2 << 20},
	};
	sync();
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct wrow *r = &rows[i];
		wmeasure(base, r->mode, r->flags, r->kind, r->threads, r->chunk, r->chunk < M ? bytes / 2 : bytes);
		if (i % 4 == 3)
			sync();
	}
	/* The disk. */
	double best_new = 0, best_res = 0;
	static const int depths[] = {1, 8, 16};
	for (int i = 0; i < 3; i++) {
		double a = wmeasure(base, W_DIRECT, 0, WF_NEW, depths[i], 16 * M, bytes);
		double b = wmeasure(base, W_DIRECT, 0, WF_RESERVED, depths[i], 16 * M, bytes);
		best_new = a > best_new ? a : best_new;
		best_res = b > best_res ? b : best_res;
		sync();
	}
	ceiling("disk_odirect_write_new_best", best_new, "GB/s");
	ceiling("disk_odirect_write_reserved_best", best_res, "GB/s");
	ceiling("disk_buffered_write_fsync_1x1MiB", wmeasure(base, W_PWRITE, WP_FSYNC, WF_NEW, 1, M, bytes), "GB/s");
}

/* The KV cache's writes: 64 KiB blocks at a random permutation of the
 * blocks of a pool file SCATTER_POOL times the bytes written, the pool
 * written earlier and cached ("cached") or fallocated ("res"), by:
 *   pwrite from 16 threads;
 *   stores through a shared mapping from 16 threads, 4 KiB faults and
 *   2 MiB-aligned MADV_HUGEPAGE (a store's fault dirties its whole folio,
 *   so write-back writes the block's neighbours too: the device's bytes
 *   beside each row tell);
 *   O_DIRECT into the reserved pool at queue depth 1 to 128 (threads),
 *   and the best of them: disk_odirect_write_64KiB_scatter_best.
 * Each row with `ceiling devbytes_<row>`: the bytes the block device wrote
 * for it (its stat file, after a syncfs outside the timing, the pool's
 * own write-back before it) divided by the bytes written; the file
 * system and its options (the journal mode) on a `#` line.  Run it on a
 * loop-mounted ext4 image to count that image's device alone. */
static void test_kvscatter(const char *base, uint64_t bytes)
{
	const size_t B = 64 << 10;
	static const struct {
		enum wmode mode;
		int flags;
		enum wfile kind;
	} rows[] = {
	    {W_PWRITE, 0, WF_CACHED},	 {W_PWRITE, 0, WF_RESERVED},	{W_MAP, 0, WF_CACHED},
	    {W_MAP, 0, WF_RESERVED},	 {W_MAP, WP_THP, WF_CACHED},	{W_MAP, WP_THP, WF_RESERVED},
	};
	sync();
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		wmeasure(base, rows[i].mode, rows[i].flags | WP_SCATTER, rows[i].kind, 16, B, bytes);
	double best = 0;
	static const int depths[] = {1, 4, 16, 64, 128};
	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		double v = wmeasure(base, W_DIRECT, WP_SCATTER, WF_RESERVED, depths[i], B, bytes);
		best = v > best ? v : best;
	}
	ceiling("disk_odirect_write_64KiB_scatter_best", best, "GB/s");
}

/* ------------------------------------------------ the staged pipeline */

/* What any library that reaches device memory through pinned staging can
 * move from a warm file: `threads` threads take chunk indexes from one
 * counter; each has three pinned buffers of `chunk` bytes, each buffer its
 * own stream, and loops pread(chunk -> buffer j); cuMemcpyHtoDAsync(buffer
 * j) - waiting for buffer j's stream only before refilling it, so the read
 * of one chunk overlaps the copies of the two before.  No cuFile, no
 * hand-offs, no wake-ups: an upper bound for every staged design with that
 * many reading threads (the engine's participants), below the bus whenever
 * the page-cache copies and the DMA compete for memory.  Chunks of 1 MiB,
 * 256 KiB and 4 MiB (staged_<N>threads_<chunk>), by 1, 2, 4, 8 and 16
 * threads. */
struct stagedjob {
	int fd;
	size_t chunk;
	uint64_t nchunks;
	atomic_ullong next;
	atomic_int err;
	pthread_barrier_t go, end; /* every thread and the timer: setup and teardown untimed */
};

static void *staged_main(void *arg)
{
	struct stagedjob *j = arg;
	CUcontext ctx;
	void *buf[3] = {0};
	CUstream st[3] = {0};
	CUdeviceptr d = 0;
	const size_t dlen = (size_t)(quick ? 4 : 16) << 20; /* the chunks' copies wrap around in it */
	int e = 0;
	if (cuda_dl_bind(&cu, gpu_index, &ctx) || cu.MemAlloc(&d, dlen)) {
		e = ENOMEM;
		goto out;
	}
	for (int i = 0; i < 3; i++) {
		if (cu.MemHostAlloc(&buf[i], j->chunk, CU_MEMHOSTALLOC_PORTABLE) || cu.StreamCreate(&st[i], 1)) {
			e = ENOMEM;
			goto out;
		}
		memset(buf[i], 0, j->chunk);
	}
out:
	if (e)
		atomic_store(&j->err, e);
	pthread_barrier_wait(&j->go);
	for (uint64_t k = 0; !e; k++) {
		uint64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
		if (c >= j->nchunks)
			break;
		int b = (int)(k % 3);
		if (k >= 3 && cu.StreamSynchronize(st[b])) {
			e = EIO;
			break;
		}
		size_t done = 0;
		while (done < j->chunk) {
			ssize_t r = pread(j->fd, (char *)buf[b] + done, j->chunk - done, (off_t)(c * j->chunk + done));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				e = r < 0 ? errno : EIO;
				break;
			}
			done += (size_t)r;
		}
		if (!e && cu.MemcpyHtoDAsync(d + (CUdeviceptr)(c * j->chunk % (dlen / j->chunk * j->chunk)), buf[b],
					     j->chunk, st[b]))
			e = EIO;
	}
	for (int i = 0; i < 3; i++)
		if (st[i])
			cu.StreamSynchronize(st[i]);
	if (e)
		atomic_store(&j->err, e);
	pthread_barrier_wait(&j->end);
	for (int i = 0; i < 3; i++) {
		if (st[i])
			cu.StreamDestroy(st[i]);
		if (buf[i])
			cu.MemFreeHost(buf[i]);
	}
	if (d)
		cu.MemFree(d);
	return NULL;
}

static void test_staged(const char *file)
{
	static const int counts[] = {1, 2, 4, 8, 16};
	/* 4 MiB: the pieces of a client library's thread pool (KvikIO). */
	static const size_t chunks[] = {1 << 20, 256 << 10, 4 << 20};
	static const char *const cname[] = {"1MiB", "256KiB", "4MiB"};
	int fd = open(file, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		printf("# staged: %s: %s\n", file, strerror(errno));
		return;
	}
	uint64_t cap = quick_cap(OCF_MIN_U64((uint64_t)st.st_size, (uint64_t)4 << 30));
	parallel_io(fd, 0, 16, 1 << 20, cap / (1 << 20) * (1 << 20), NULL); /* all of it cached */
	for (int c = 0; c < 3; c++) {
		for (int i = 0; i < 5; i++) {
			double best = 0, best_cpu = 0;
			for (int rep = 0; rep < 2; rep++) {
				struct stagedjob j = {.fd = fd, .chunk = chunks[c], .nchunks = cap / chunks[c]};
				pthread_t th[16];
				int n = 0;
				struct rusage r0, r1;
				pthread_barrier_init(&j.go, NULL, (unsigned)counts[i] + 1);
				pthread_barrier_init(&j.end, NULL, (unsigned)counts[i] + 1);
				for (; n < counts[i]; n++)
					if (pthread_create(&th[n], NULL, staged_main, &j)) {
						printf("# staged: cannot start threads\n");
						exit(1);
					}
				pthread_barrier_wait(&j.go);
				getrusage(RUSAGE_SELF, &r0);
				double t0 = now();
				pthread_barrier_wait(&j.end);
				double dt = now() - t0;
				getrusage(RUSAGE_SELF, &r1);
				for (int k = 0; k < n; k++)
					pthread_join(th[k], NULL);
				pthread_barrier_destroy(&j.go);
				pthread_barrier_destroy(&j.end);
				if (atomic_load(&j.err)) {
					printf("# staged: failed: %s\n", strerror(atomic_load(&j.err)));
					close(fd);
					return;
				}
				double g = (double)(j.nchunks * chunks[c]) / dt / 1e9;
				double cpu = cpu_seconds(&r0, &r1);
				if (g > best) {
					best = g;
					best_cpu = cpu / ((double)(j.nchunks * chunks[c]) / 1e9);
				}
			}
			char name[64];
			snprintf(name, sizeof(name), "staged_%dthreads_%s", counts[i], cname[c]);
			ceiling(name, best, "GB/s");
			printf("# staged_%dthreads_%s: %.3f CPU s/GB (waits spin in the driver)\n", counts[i],
			       cname[c], best_cpu);
		}
	}
	printf("# staged: %llu bytes of %s, warm, each thread 3 pinned buffers and 3 streams, pread then "
	       "cuMemcpyHtoDAsync, the best of 2 (setup and teardown not timed)\n",
	       (unsigned long long)cap, file);
	close(fd);
}

/* The file ceilings of the KV-cache rows: pread and pwrite of 64 KiB and
 * 1 MiB blocks by 16 threads between pinned memory and a warm file (the
 * data file for reads; for writes the write file, preallocated and
 * written once so that its pages are cached), no sync. */
static void test_kvfile(const char *file, const char *wfile, uint64_t bytes)
{
	static const size_t blocks[] = {64 << 10, 1 << 20};
	uint64_t cap = (uint64_t)1 << 30;
	int rfd = open(file, O_RDONLY), wfd = open(wfile, O_RDWR | O_CREAT, 0644);
	struct stat st;
	if (rfd < 0 || wfd < 0 || fstat(rfd, &st)) {
		printf("# kvfile: %s / %s: %s\n", file, wfile, strerror(errno));
		goto out;
	}
	uint64_t rb = OCF_MIN_U64((uint64_t)st.st_size, cap), wb = OCF_MIN_U64(bytes, cap);
	int e = posix_fallocate(wfd, 0, (off_t)wb);
	if (e)
		printf("# kvfile: fallocate: %s\n", strerror(e));
	parallel_io(wfd, 1, 16, 1 << 20, wb / (1 << 20) * (1 << 20), NULL); /* its pages into the cache */
	parallel_io(rfd, 0, 16, 1 << 20, rb / (1 << 20) * (1 << 20), NULL);
	for (int b = 0; b < 2; b++) {
		char name[64];
		snprintf(name, sizeof(name), "pread_16x%s", b ? "1MiB" : "64KiB");
		ceiling(name, parallel_io(rfd, 0, 16, blocks[b], rb / blocks[b] * blocks[b], NULL), "GB/s");
		snprintf(name, sizeof(name), "pwrite_buffered_16x%s", b ? "1MiB" : "64KiB");
		ceiling(name, parallel_io(wfd, 1, 16, blocks[b], wb / blocks[b] * blocks[b], NULL), "GB/s");
	}
out:
	if (rfd >= 0)
		close(rfd);
	if (wfd >= 0)
		close(wfd);
}

static int wanted(const char *list, const char *name)
{
	if (!list)
		return 1;
	size_t n = strlen(name);
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *file = NULL, *wfile = NULL, *tests = NULL;
	uint64_t wbytes = 4ull << 30, per_depth = 1ull << 30, chunk = 1 << 20;
	int gpu = 0, opt;
	while ((opt = getopt(argc, argv, "f:W:s:r:c:d:t:nqh")) != -1) {
		switch (opt) {
		case 'f':
			file = optarg;
			break;
		case 'W':
			wfile = optarg;
			break;
		case 's':
			if (parse_size(optarg, &wbytes))
				return 2;
			break;
		case 'r':
			if (parse_size(optarg, &per_depth))
				return 2;
			break;
		case 'c':
			if (parse_size(optarg, &chunk) || !chunk)
				return 2;
			break;
		case 'd':
			gpu = atoi(optarg);
			break;
		case 't':
			tests = optarg;
			break;
		case 'n':
			no_drop = 1;
			break;
		case 'q':
			quick = 1;
			break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: %s [-f FILE] [-W FILE] [-s SIZE] [-r SIZE] [-c SIZE] [-d GPU] "
				"[-t copy,latency,dirty,pread,odirect,pwrite,kvcopy,kvfile,staged,writes,newfiles,kvscatter] "
				"[-n] [-q]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	gpu_index = gpu;
	have_cuda = cuda_dl_load(&cu, cuda_why, sizeof(cuda_why)) == 0;
	if (have_cuda) {
		CUcontext ctx;
		CUresult r = cuda_dl_bind(&cu, gpu, &ctx);
		if (r) {
			snprintf(cuda_why, sizeof(cuda_why), "GPU %d: %s", gpu, cuda_dl_errstr(&cu, r));
			have_cuda = 0;
		}
	}
	if (have_cuda) {
		char name[128] = "?";
		CUdevice dev;
		if (cu.DeviceGetName && cu.DeviceGet(&dev, gpu) == CUDA_SUCCESS)
			cu.DeviceGetName(name, sizeof(name), dev);
		printf("# ceilings: CUDA driver %s, GPU %d: %s\n", cu.path, gpu, name);
		if (quick)
			printf("# ceilings: -q: small and short measurements, the figures are not ceilings\n");
	} else {
		printf("# ceilings: no CUDA driver (%s): GPU ceilings skipped\n", cuda_why);
	}
	if (have_cuda && wanted(tests, "copy"))
		test_copy();
	if (have_cuda && wanted(tests, "latency"))
		test_latency();
	if (file && wanted(tests, "pread"))
		test_pread(file, chunk);
	if (file && wanted(tests, "odirect"))
		test_odirect(file, per_depth);
	if (wfile && wanted(tests, "pwrite"))
		test_pwrite(wfile, wbytes);
	if (have_cuda && file && wanted(tests, "staged"))
		test_staged(file);
	if (have_cuda && wanted(tests, "dirty"))
		test_dirty(file);
	if (have_cuda && wanted(tests, "kvcopy"))
		test_kvcopy();
	if (file && wfile && wanted(tests, "kvfile"))
		test_kvfile(file, wfile, wbytes);
	if (wfile && tests && wanted(tests, "writes")) /* only when named: about a minute */
		test_writes(wfile, wbytes);
	if (wfile && tests && wanted(tests, "kvscatter")) /* only when named: pools of 32 x -s / 8 */
		test_kvscatter(wfile, quick ? quick_cap(wbytes / 8) : wbytes / 8);
	if (wfile && tests && wanted(tests, "newfiles") && !wanted(tests, "writes")) {
		/* The bound of writes into many new files (the entries of a
		 * transfer library), without the rest of the write ceilings. */
		sync();
		wmeasure(wfile, W_FILES, 0, WF_NEW, 8, 16 << 20, wbytes);
	}
	return 0;
}
