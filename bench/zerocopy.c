/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zerocopy - does letting the GPU copy straight out of the page cache pay
 * off?  Measures, for a warm file, what it costs to map a range, pin the
 * mapping with cuMemHostRegister(READ_ONLY) and copy it to device memory,
 * against the same copy from an already pinned buffer; and the latency of
 * small host->GPU copies in the ways a 4 KiB read could issue them.
 *
 *   zerocopy -f FILE [-s SIZES] [-S SLICE] [-T THREADS] [-d GPU] [-r REPS] [-t TESTS]
 *     -f FILE     patterned file, read once before (warm page cache)
 *     -s SIZES    comma list of request sizes (default 4M,16M,64M,256M,1G,4G)
 *     -S SLICES   comma list of slice sizes of the pipelined variant (default 8M,32M)
 *     -T THREADS  comma list of thread counts of the pipelined variant (default 4,8,16)
 *     -t TESTS    comma list of setup,whole,pipe,small (default all)
 *
 * Output lines: `zc <test> size=<bytes> ... e2e=<GB/s>` where e2e is the
 * whole request (map + pin + copy + unpin + unmap) over its wall time, the
 * figure to compare with a cuFileRead of the same size; each is the median
 * of REPS (default 3).  `lat <variant> 4096 <us>` for the small-copy test.
 *
 * DESIGN: no cuFile; the CUDA driver comes from tools/cuda_dl.h plus the few
 * extra entry points this experiment needs, looked up here.  The pipelined
 * variant is the shape an engine would ship: one mapping of the whole range,
 * threads that each take slices from an atomic counter, pin a slice, copy it
 * on their own stream, and unpin it when the copy is done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuda_dl.h"
#include "size_arg.h"

static struct cuda_dl cu;
static CUresult (*HostRegister)(void *, size_t, unsigned);
static CUresult (*HostUnregister)(void *);
static CUresult (*StreamQuery)(CUstream);
static CUresult (*EventCreate)(CUevent *, unsigned);
static CUresult (*EventRecord)(CUevent, CUstream);
static CUresult (*EventQuery)(CUevent);
static CUresult (*EventSynchronize)(CUevent);
static CUresult (*EventDestroy)(CUevent);
static CUcontext ctx;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die_cu(const char *what, CUresult r)
{
	fprintf(stderr, "zerocopy: %s: %s (%d)\n", what, cuda_dl_errstr(&cu, r), (int)r);
	exit(1);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_list(const char *s, uint64_t *out, int max)
{
	int n = 0;
	char *dup = strdup(s), *save = NULL;
	for (char *t = strtok_r(dup, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (parse_size(t, &v) != 0) {
			fprintf(stderr, "zerocopy: bad size '%s'\n", t);
			exit(2);
		}
		out[n++] = v;
	}
	free(dup);
	return n;
}

/* Whole request: map, pin all of it, one copy, unpin, unmap. */
static void test_whole(int fd, CUdeviceptr dev, uint64_t size, int reps)
{
	double map[16], reg[16], cp[16], unreg[16], unmap[16], e2e[16];
	for (int i = 0; i < reps; i++) {
		double t0 = now_s();
		void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
		double t1 = now_s();
		CUresult r = HostRegister(p, size, CU_MEMHOSTREGISTER_READ_ONLY);
		if (r != CUDA_SUCCESS)
			die_cu("cuMemHostRegister(READ_ONLY) of a file mapping", r);
		double t2 = now_s();
		r = cu.MemcpyHtoD(dev, p, size);
		if (r != CUDA_SUCCESS)
			die_cu("cuMemcpyHtoD", r);
		double t3 = now_s();
		HostUnregister(p);
		double t4 = now_s();
		munmap(p, size);
		double t5 = now_s();
		map[i] = (t1 - t0) * 1e3;
		reg[i] = (t2 - t1) * 1e3;
		cp[i] = size / (t3 - t2) / 1e9;
		unreg[i] = (t4 - t3) * 1e3;
		unmap[i] = (t5 - t4) * 1e3;
		e2e[i] = size / (t5 - t0) / 1e9;
	}
	printf("zc whole size=%llu map_ms=%.3f pin_ms=%.3f pin_GBps=%.1f copy=%.1f unpin_ms=%.3f unmap_ms=%.3f e2e=%.2f\n",
	       (unsigned long long)size, median(map, reps), median(reg, reps),
	       size / (median(reg, reps) / 1e3) / 1e9, median(cp, reps), median(unreg, reps), median(unmap, reps),
	       median(e2e, reps));
	fflush(stdout);
}

struct pipe_job {
	char *base;
	uint64_t size, slice;
	CUdeviceptr dev;
	atomic_uint_fast64_t next;
	atomic_int failed;
};

static void *pipe_worker(void *arg)
{
	struct pipe_job *j = arg;
	CUstream s;
	cu.CtxSetCurrent(ctx);
	if (cu.StreamCreate(&s, 1) != CUDA_SUCCESS) {
		j->failed = 1;
		return NULL;
	}
	for (;;) {
		uint64_t i = atomic_fetch_add(&j->next, 1);
		uint64_t off = i * j->slice;
		if (off >= j->size)
			break;
		uint64_t n = j->size - off < j->slice ? j->size - off : j->slice;
		if (HostRegister(j->base + off, n, CU_MEMHOSTREGISTER_READ_ONLY) != CUDA_SUCCESS ||
		    cu.MemcpyHtoDAsync(j->dev + off, j->base + off, n, s) != CUDA_SUCCESS ||
		    cu.StreamSynchronize(s) != CUDA_SUCCESS) {
			j->failed = 1;
			break;
		}
		HostUnregister(j->base + off);
	}
	cu.StreamDestroy(s);
	return NULL;
}

/* Pipelined: one mapping, THREADS threads each pinning and copying slices. */
static void test_pipe(int fd, CUdeviceptr dev, uint64_t size, uint64_t slice, int threads, int reps)
{
	double e2e[16];
	for (int i = 0; i < reps; i++) {
		double t0 = now_s();
		void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
		struct pipe_job j = { .base = p, .size = size, .slice = slice, .dev = dev };
		pthread_t th[64];
		for (int t = 0; t < threads; t++)
			pthread_create(&th[t], NULL, pipe_worker, &j);
		for (int t = 0; t < threads; t++)
			pthread_join(th[t], NULL);
		munmap(p, size);
		double t1 = now_s();
		if (j.failed) {
			printf("zc pipe size=%llu slice=%llu threads=%d FAILED\n", (unsigned long long)size,
			       (unsigned long long)slice, threads);
			return;
		}
		e2e[i] = size / (t1 - t0) / 1e9;
	}
	printf("zc pipe size=%llu slice=%llu threads=%d e2e=%.2f\n", (unsigned long long)size,
	       (unsigned long long)slice, threads, median(e2e, reps));
	fflush(stdout);
}

/* The same copy from memory pinned once up front: the ceiling of the idea. */
static void test_prepinned(CUdeviceptr dev, uint64_t size, int reps)
{
	void *h;
	CUresult r = cu.MemHostAlloc(&h, size, 0);
	if (r != CUDA_SUCCESS) {
		printf("zc prepinned size=%llu skipped (cuMemHostAlloc: %d)\n", (unsigned long long)size, (int)r);
		return;
	}
	memset(h, 1, size);
	double v[16];
	for (int i = 0; i < reps; i++) {
		double t0 = now_s();
		cu.MemcpyHtoD(dev, h, size);
		v[i] = size / (now_s() - t0) / 1e9;
	}
	cu.MemFreeHost(h);
	printf("zc prepinned size=%llu copy=%.2f\n", (unsigned long long)size, median(v, reps));
	fflush(stdout);
}

#define LAT_N 2000

/* Ways to move 4 KiB host->GPU and know it has landed. */
enum lat_way {
	LAT_SYNC,        /* cuMemcpyHtoD */
	LAT_STREAMSYNC,  /* async copy, cuStreamSynchronize */
	LAT_STREAMQUERY, /* async copy, spin on cuStreamQuery */
	LAT_EVENTQUERY,  /* async copy, record `ev`, spin on cuEventQuery */
	LAT_EVENTSYNC,   /* async copy, record `ev`, cuEventSynchronize */
	LAT_ISSUE,       /* async copy: the call alone (synchronised after timing) */
};

/* Seconds one 4 KiB copy from src to dev takes the given way on stream s. */
static double lat_once(enum lat_way way, CUdeviceptr dev, const void *src, CUstream s, CUevent ev)
{
	double t = now_s();
	if (way == LAT_SYNC) {
		cu.MemcpyHtoD(dev, src, 4096);
		return now_s() - t;
	}
	cu.MemcpyHtoDAsync(dev, src, 4096, s);
	switch (way) {
	case LAT_STREAMSYNC:
		cu.StreamSynchronize(s);
		break;
	case LAT_STREAMQUERY:
		while (StreamQuery(s) == CUDA_ERROR_NOT_READY)
			;
		break;
	case LAT_EVENTQUERY:
		EventRecord(ev, s);
		while (EventQuery(ev) == CUDA_ERROR_NOT_READY)
			;
		break;
	case LAT_EVENTSYNC:
		EventRecord(ev, s);
		EventSynchronize(ev);
		break;
	default:
		break;
	}
	double dt = now_s() - t;
	if (way == LAT_ISSUE)
		cu.StreamSynchronize(s);
	return dt;
}

/* LAT_N copies the given way; prints `lat <name> 4096 <median us>`. */
static void lat_run(const char *name, enum lat_way way, CUdeviceptr dev, const void *src, CUstream s, CUevent ev)
{
	static double v[LAT_N];
	for (int i = 0; i < LAT_N; i++)
		v[i] = lat_once(way, dev, src, s, ev);
	printf("lat %s 4096 %.2f\n", name, median(v, LAT_N) * 1e6);
	fflush(stdout);
}

static void test_small(CUdeviceptr dev)
{
	void *pin, *pageable = aligned_alloc(4096, 4096);
	CUstream sb, snb;
	CUevent ev, evb;
	if (cu.MemHostAlloc(&pin, 4096, 0) != CUDA_SUCCESS || cu.StreamCreate(&sb, 0) != CUDA_SUCCESS ||
	    cu.StreamCreate(&snb, 1) != CUDA_SUCCESS || EventCreate(&ev, 2 /* DISABLE_TIMING */) != CUDA_SUCCESS ||
	    EventCreate(&evb, 2 | 1 /* BLOCKING_SYNC */) != CUDA_SUCCESS) {
		printf("lat skipped\n");
		return;
	}
	memset(pin, 3, 4096);
	memset(pageable, 3, 4096);
	lat_run("sync_pinned", LAT_SYNC, dev, pin, NULL, NULL);
	lat_run("sync_pageable", LAT_SYNC, dev, pageable, NULL, NULL);
	CUstream ss[2] = { sb, snb };
	const char *sn[2] = { "blocking", "nonblocking" };
	static const struct {
		const char *name;
		enum lat_way way;
		bool pageable, blocking_event;
	} ways[] = {
		{ "streamsync", LAT_STREAMSYNC, false, false },
		{ "streamquery_spin", LAT_STREAMQUERY, false, false },
		{ "eventquery_spin", LAT_EVENTQUERY, false, false },
		{ "event_blocking_sync", LAT_EVENTSYNC, false, true },
		{ "pageable_streamsync", LAT_STREAMSYNC, true, false },
	};
	for (int k = 0; k < 2; k++)
		for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
			char name[64];
			snprintf(name, sizeof(name), "async_%s_%s", sn[k], ways[w].name);
			lat_run(name, ways[w].way, dev, ways[w].pageable ? pageable : pin, ss[k],
				ways[w].blocking_event ? evb : ev);
		}
	/* Issue cost alone: how long the call takes before the copy is known done. */
	lat_run("issue_only_async", LAT_ISSUE, dev, pin, snb, NULL);
	EventDestroy(ev);
	EventDestroy(evb);
	cu.StreamDestroy(sb);
	cu.StreamDestroy(snb);
	cu.MemFreeHost(pin);
	free(pageable);
}

/* What preparing staging costs: pinning a block by cuMemHostAlloc or by
 * mapping + cuMemHostRegister, and creating streams and events. */
static void test_setup(void)
{
	const size_t sz = 114u << 20;
	double t0 = now_s();
	void *h = NULL;
	CUresult r = cu.MemHostAlloc(&h, sz, 0x01 /* PORTABLE */);
	double t1 = now_s();
	if (r == CUDA_SUCCESS)
		cu.MemFreeHost(h);
	double t2 = now_s();
	void *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	double t3 = now_s();
	CUresult r2 = HostRegister(m, sz, 0x01 /* PORTABLE */);
	double t4 = now_s();
	if (r2 == CUDA_SUCCESS)
		HostUnregister(m);
	munmap(m, sz);
	m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t5 = now_s();
	CUresult r3 = HostRegister(m, sz, 0x01);
	double t6 = now_s();
	if (r3 == CUDA_SUCCESS)
		HostUnregister(m);
	munmap(m, sz);
	/* Transparent huge pages: fewer faults to populate the block. */
	double t7 = now_s();
	m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int mh = madvise(m, sz, 14 /* MADV_HUGEPAGE */);
	int mp = madvise(m, sz, 23 /* MADV_POPULATE_WRITE */);
	double t8 = now_s();
	CUresult r4 = HostRegister(m, sz, 0x01);
	double t9 = now_s();
	if (r4 == CUDA_SUCCESS)
		HostUnregister(m);
	munmap(m, sz);
	printf("setup pin114MiB thp madvise=%d,%d populate_ms=%.1f register_ms=%.1f (%d)\n", mh, mp, (t8 - t7) * 1e3,
	       (t9 - t8) * 1e3, (int)r4);
	printf("setup pin114MiB hostalloc_ms=%.1f (%d) populate_ms=%.1f register_ms=%.1f (%d) register_unpopulated_ms=%.1f (%d) free_ms=%.1f\n",
	       (t1 - t0) * 1e3, (int)r, (t3 - t2) * 1e3, (t4 - t3) * 1e3, (int)r2, (t6 - t5) * 1e3, (int)r3,
	       (t2 - t1) * 1e3);
	CUstream st[34];
	CUevent ev[51];
	for (unsigned flags = 0; flags < 2; flags++) {
		double a = now_s();
		for (int i = 0; i < 34; i++)
			cu.StreamCreate(&st[i], flags);
		double b = now_s();
		for (int i = 0; i < 34; i++)
			cu.StreamDestroy(st[i]);
		printf("setup 34 streams flags=%u create_ms=%.2f destroy_ms=%.2f\n", flags, (b - a) * 1e3,
		       (now_s() - b) * 1e3);
	}
	double a = now_s();
	for (int i = 0; i < 51; i++)
		EventCreate(&ev[i], 2 | 1);
	double b = now_s();
	for (int i = 0; i < 51; i++)
		EventDestroy(ev[i]);
	printf("setup 51 events create_ms=%.2f\n", (b - a) * 1e3);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *file = NULL, *sizes_s = "4M,16M,64M,256M,1G,4G", *slices_s = "8M,32M",
		   *threads_s = "4,8,16", *tests = "setup,whole,pipe,small";
	int gpu = 0, reps = 3, opt;
	while ((opt = getopt(argc, argv, "f:s:S:T:d:r:t:")) != -1) {
		switch (opt) {
		case 'f': file = optarg; break;
		case 's': sizes_s = optarg; break;
		case 'S': slices_s = optarg; break;
		case 'T': threads_s = optarg; break;
		case 'd': gpu = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 't': tests = optarg; break;
		default:
			fprintf(stderr, "usage: zerocopy -f FILE [-s SIZES] [-S SLICES] [-T THREADS] [-d GPU] [-r REPS] [-t TESTS]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 16)
		reps = 3;
	char err[512];
	if (cuda_dl_load(&cu, err, sizeof(err)) != 0) {
		fprintf(stderr, "zerocopy: %s\n", err);
		return 1;
	}
#define LOOK(var, sym)                                              \
	do {                                                        \
		*(void **)&var = dlsym(cu.lib, sym);                \
		if (!var) {                                         \
			fprintf(stderr, "zerocopy: no %s\n", sym); \
			return 1;                                   \
		}                                                   \
	} while (0)
	LOOK(HostRegister, "cuMemHostRegister_v2");
	LOOK(HostUnregister, "cuMemHostUnregister");
	LOOK(StreamQuery, "cuStreamQuery");
	LOOK(EventCreate, "cuEventCreate");
	LOOK(EventRecord, "cuEventRecord");
	LOOK(EventQuery, "cuEventQuery");
	LOOK(EventSynchronize, "cuEventSynchronize");
	LOOK(EventDestroy, "cuEventDestroy_v2");
	CUresult r = cuda_dl_bind(&cu, gpu, &ctx);
	if (r != CUDA_SUCCESS)
		die_cu("context", r);

	uint64_t sizes[16], slices[8], thr[8];
	int ns = parse_list(sizes_s, sizes, 16), nsl = parse_list(slices_s, slices, 8),
	    nt = parse_list(threads_s, thr, 8);
	uint64_t maxsz = 0;
	for (int i = 0; i < ns; i++)
		maxsz = sizes[i] > maxsz ? sizes[i] : maxsz;

	CUdeviceptr dev;
	r = cu.MemAlloc(&dev, maxsz > 4096 ? maxsz : 4096);
	if (r != CUDA_SUCCESS)
		die_cu("cuMemAlloc", r);

	if (strstr(tests, "setup"))
		test_setup();
	if (strstr(tests, "small"))
		test_small(dev);
	if (!file)
		return 0;
	int fd = open(file, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(file);
		return 1;
	}
	for (int i = 0; i < ns; i++) {
		if (sizes[i] > (uint64_t)st.st_size) {
			printf("zc size=%llu skipped: file is smaller\n", (unsigned long long)sizes[i]);
			continue;
		}
		if (strstr(tests, "whole")) {
			test_prepinned(dev, sizes[i], reps);
			test_whole(fd, dev, sizes[i], reps);
		}
		if (strstr(tests, "pipe"))
			for (int a = 0; a < nsl; a++)
				for (int b = 0; b < nt; b++)
					if (slices[a] < sizes[i])
						test_pipe(fd, dev, sizes[i], slices[a], (int)thr[b], reps);
	}
	cu.MemFree(dev);
	close(fd);
	return 0;
}
