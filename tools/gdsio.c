/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio - opencufile's counterpart of NVIDIA's gdsio benchmark.
 *
 * It calls only the cuFile API and the CUDA driver API (loaded with dlopen,
 * OPENCUFILE_LIBCUDA overrides the path), so the same binary measures any
 * libcufile.so.0 the dynamic loader gives it: ours (LD_PRELOAD) or NVIDIA's
 * (LD_LIBRARY_PATH).  The banner says which library is mapped.  Run with -h
 * for the options; docs/benchmarks.md describes how the comparison runs.
 *
 * DESIGN: each run (one IO size x one thread count) starts N worker threads.
 * Every worker binds the GPU's primary context itself, allocates its own
 * buffer of the requested memory type, registers it (unless -b), and then
 * waits at a barrier; the clock and getrusage start when all are ready and
 * stop when the last one has finished its I/O, so setup and teardown are
 * outside the figures.  With -f all workers share one fd and one cuFile
 * handle and each owns a disjoint region of the file; with -D each has its
 * own file.  Latencies go into a log-linear histogram per worker (3 %
 * buckets), merged for p50/p99; the average is exact.  Verification (-V) is
 * outside each op's latency but inside the wall time; the comparison script
 * therefore runs a verified repetition separately from the timed ones.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cufile.h"
#include "cuda_dl.h"
#include "cufile_library.h"
#include "pattern.h"
#include "size_arg.h"

enum xfer { X_GPUD = 0, X_CPU = 1, X_CPU_GPU = 2, X_ASYNC = 3, X_ASYNC_REG = 4, X_BATCH = 5 };
enum mem { M_DEVICE = 0, M_VMM = 1, M_PINNED = 2, M_MALLOC = 3, M_MMAP = 4 };
enum iotype { IO_READ = 0, IO_WRITE = 1, IO_RANDREAD = 2, IO_RANDWRITE = 3 };
/* Worker and run status, worst wins (ordered by severity). */
enum status {
	ST_OK = 0,
	ST_SKIPPED,
	ST_UNSUPPORTED,
	ST_INCOMPLETE,
	ST_TIMEOUT,
	ST_IOERR,
	ST_SETUP,
	ST_VERIFY
};
static const char *const status_name[] = {"ok",	     "skipped",	 "not_supported", "incomplete",
					  "timeout", "io_error", "setup_error",	  "verify_failed"};
/* Exit statuses: 0 all runs ok, 1 a failure (I/O, verification, timeout,
 * incomplete), 2 usage, 3 the library does not support the transfer type. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_UNSUPPORTED = 3 };

static const char *const xfer_name[] = {
    "GPUD", "CPUONLY", "CPU_GPU", "GPUD_ASYNC", "GPUD_ASYNC_STREAMREG", "GPU_BATCH"};
static const char *const mem_name[] = {"DEVICE(cuMemAlloc)", "DEVICE(VMM cuMemCreate)",
				       "PINNED(cuMemHostAlloc)", "HOST(malloc)", "HOST(mmap)"};
static const char *const io_name[] = {"READ", "WRITE", "RANDREAD", "RANDWRITE"};

#define MAX_LIST 64
#define VERIFY_CHUNK ((size_t)64 << 20)
#define POISON 0x5a

static struct opts {
	const char *file, *dir;
	int gpu, mem, xfer, iotype;
	uint64_t size, offset;
	size_t ios[MAX_LIST];
	int nios;
	int threads[MAX_LIST];
	int nthreads;
	int skip_reg, verify, unaligned, odirect, sweep, prepare_only;
	int shared;    /* -A: one buffer of the data set's size shared by all threads */
	unsigned vec;  /* -v: each op is a cuFileReadv/Writev of this many pieces (0: off) */
	double duration, batch_timeout;
	unsigned seed;
	unsigned depth; /* -B: operations per async group / batch */
	const char *csv, *svg;
	int driver_open_runs;
} o = {.gpu = 0,
       .mem = M_DEVICE,
       .xfer = X_GPUD,
       .iotype = IO_READ,
       .odirect = 1,
       .seed = 1,
       .depth = 8,
       .batch_timeout = 10.0};

static struct cuda_dl cu;
static int have_cuda;
static char cuda_why[512];
static int is_tty;
/* Set when a batch or async group is abandoned with I/O still in flight:
 * the process then exits without tearing anything down. */
static atomic_int abandon;

/* ------------------------------------------------------------------ helpers */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "gdsio: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (-h for help)\n");
	va_end(ap);
	exit(EXIT_USAGE);
}


static void human_size(char *buf, size_t len, uint64_t v)
{
	static const char *const suf[] = {"", "K", "M", "G", "T"};
	int i = 0;
	while (i < 4 && v >= 1024 && v % 1024 == 0)
		v /= 1024, i++;
	snprintf(buf, len, "%llu%s", (unsigned long long)v, suf[i]);
}

/* -i: SIZE, MIN:MAX (powers of two), MIN:MAX:STEP (arithmetic). */
static void parse_io_list(const char *arg)
{
	char tmp[256], *parts[3] = {0};
	int n = 0;
	snprintf(tmp, sizeof(tmp), "%s", arg);
	if (strchr(tmp, ',')) { /* SIZE,SIZE,...: exactly these */
		o.nios = 0;
		for (char *save, *p = strtok_r(tmp, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
			uint64_t v;
			if (parse_size(p, &v) || v == 0 || o.nios >= MAX_LIST)
				die_usage("bad IO size '%s'", p);
			o.ios[o.nios++] = v;
		}
		return;
	}
	for (char *save, *p = strtok_r(tmp, ":", &save); p && n < 3; p = strtok_r(NULL, ":", &save))
		parts[n++] = p;
	uint64_t v[3] = {0};
	for (int i = 0; i < n; i++)
		if (parse_size(parts[i], &v[i]) || v[i] == 0)
			die_usage("bad IO size '%s'", arg);
	o.nios = 0;
	if (n == 1) {
		o.ios[o.nios++] = v[0];
		return;
	}
	if (v[1] < v[0])
		die_usage("IO size range '%s': max below min", arg);
	if (n == 2) {
		for (uint64_t s = v[0]; s <= v[1] && o.nios < MAX_LIST; s *= 2)
			o.ios[o.nios++] = s;
	} else {
		for (uint64_t s = v[0]; s <= v[1] && o.nios < MAX_LIST; s += v[2])
			o.ios[o.nios++] = s;
	}
}

static void parse_thread_list(const char *arg)
{
	char tmp[256];
	snprintf(tmp, sizeof(tmp), "%s", arg);
	o.nthreads = 0;
	for (char *save, *p = strtok_r(tmp, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		char *end;
		long t = strtol(p, &end, 10);
		if (*end || t < 1 || t > 4096 || o.nthreads >= MAX_LIST)
			die_usage("bad thread count '%s'", p);
		o.threads[o.nthreads++] = (int)t;
	}
}

static const char *cufile_err(CUfileError_t e, char *buf, size_t len)
{
	if (e.err == CU_FILE_CUDA_DRIVER_ERROR)
		snprintf(buf, len, "%s (%d, CUDA error %d)", cufileop_status_error(e.err), (int)e.err,
			 (int)e.cu_err);
	else
		snprintf(buf, len, "%s (%d)", cufileop_status_error(e.err), (int)e.err);
	return buf;
}

/* Text for a cuFileRead/Write result that is not the full size. */
static const char *io_ret_str(ssize_t r, int err, char *buf, size_t len)
{
	if (r == -1)
		snprintf(buf, len, "-1, errno %d (%s)", err, strerror(err));
	else if (r < 0)
		snprintf(buf, len, "%zd (%s)", r, CUFILE_ERRSTR((int)r));
	else
		snprintf(buf, len, "%zd bytes (short)", r);
	return buf;
}

static int full_pread(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += (size_t)r;
	}
	return 0;
}

static int full_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pwrite(fd, (const char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += (size_t)r;
	}
	return 0;
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: fast, good enough to scatter offsets. */
	uint64_t x = *s;
	x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* ---------------------------------------------------------------- histogram */
/* Values in ns.  Below 64 one bucket per ns; above, 32 buckets per power of
 * two (error under 3.2 %). */
#define HIST_N (64 + 58 * 32)

struct hist {
	uint64_t n[HIST_N];
	uint64_t count, sum_ns;
};

static int hist_idx(uint64_t ns)
{
	if (ns < 64)
		return (int)ns;
	int msb = 63 - __builtin_clzll(ns);
	int shift = msb - 5;
	return 64 + (msb - 6) * 32 + (int)((ns >> shift) & 31);
}

static double hist_mid(int idx)
{
	if (idx < 64)
		return idx;
	int msb = (idx - 64) / 32 + 6, sub = (idx - 64) % 32;
	double w = (double)(1ull << (msb - 5));
	return (32.0 + sub) * w + w / 2;
}

static void hist_add(struct hist *h, uint64_t ns)
{
	h->n[hist_idx(ns)]++;
	h->count++;
	h->sum_ns += ns;
}

static double hist_pct_us(const struct hist *h, double p)
{
	if (!h->count)
		return 0;
	uint64_t want = (uint64_t)ceil(p * (double)h->count), cum = 0;
	if (want < 1)
		want = 1;
	for (int i = 0; i < HIST_N; i++) {
		cum += h->n[i];
		if (cum >= want)
			return hist_mid(i) / 1e3;
	}
	return 0;
}

/* ------------------------------------------------------------------- memory */

struct buffer {
	int kind;  /* enum mem actually allocated */
	void *ptr; /* device address (as a pointer) or host address */
	size_t len;
	int on_device;
	CUmemGenericAllocationHandle vmm;
	size_t vmm_len;
};

static int buffer_alloc(struct buffer *b, int kind, size_t len, int gpu, char *why, size_t whylen)
{
	memset(b, 0, sizeof(*b));
	b->kind = kind, b->len = len;
	CUresult r = CUDA_SUCCESS;
	if ((kind == M_DEVICE || kind == M_VMM || kind == M_PINNED) && !have_cuda) {
		snprintf(why, whylen, "memory type %d needs the CUDA driver: %.300s", kind, cuda_why);
		return -1;
	}
	switch (kind) {
	case M_DEVICE: {
		CUdeviceptr d;
		r = cu.MemAlloc(&d, len);
		b->ptr = (void *)(uintptr_t)d, b->on_device = 1;
		break;
	}
	case M_VMM: {
		if (!cu.MemCreate || !cu.MemAddressReserve || !cu.MemMap || !cu.MemSetAccess ||
		    !cu.MemGetAllocationGranularity) {
			snprintf(why, whylen, "the CUDA driver lacks the VMM functions");
			return -1;
		}
		CUmemAllocationProp prop;
		memset(&prop, 0, sizeof(prop));
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = gpu;
		prop.allocFlags.gpuDirectRDMACapable = 1;
		size_t gran = 0;
		r = cu.MemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
		if (r)
			break;
		if (!gran)
			gran = 2u << 20;
		b->vmm_len = (len + gran - 1) / gran * gran;
		r = cu.MemCreate(&b->vmm, b->vmm_len, &prop, 0);
		if (r)
			break;
		CUdeviceptr d;
		r = cu.MemAddressReserve(&d, b->vmm_len, 0, 0, 0);
		if (r) {
			cu.MemRelease(b->vmm);
			break;
		}
		r = cu.MemMap(d, b->vmm_len, 0, b->vmm, 0);
		if (r) {
			cu.MemAddressFree(d, b->vmm_len);
			cu.MemRelease(b->vmm);
			break;
		}
		CUmemAccessDesc acc;
		memset(&acc, 0, sizeof(acc));
		acc.location = prop.location;
		acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		r = cu.MemSetAccess(d, b->vmm_len, &acc, 1);
		if (r) {
			cu.MemUnmap(d, b->vmm_len);
			cu.MemAddressFree(d, b->vmm_len);
			cu.MemRelease(b->vmm);
			break;
		}
		b->ptr = (void *)(uintptr_t)d, b->on_device = 1;
		break;
	}
	case M_PINNED:
		r = cu.MemHostAlloc(&b->ptr, len, CU_MEMHOSTALLOC_PORTABLE);
		if (!r)
			memset(b->ptr, 0, len);
		break;
	case M_MALLOC:
		if (posix_memalign(&b->ptr, 4096, len)) {
			snprintf(why, whylen, "malloc(%zu) failed", len);
			return -1;
		}
		memset(b->ptr, 0, len); /* fault the pages in before the clock starts */
		return 0;
	case M_MMAP:
		b->ptr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b->ptr == MAP_FAILED) {
			b->ptr = NULL;
			snprintf(why, whylen, "mmap(%zu): %s", len, strerror(errno));
			return -1;
		}
		memset(b->ptr, 0, len);
		return 0;
	}
	if (r != CUDA_SUCCESS) {
		b->ptr = NULL;
		snprintf(why, whylen, "allocating %zu bytes of %s: %s (%d)", len, mem_name[kind],
			 cuda_dl_errstr(&cu, r), (int)r);
		return -1;
	}
	return 0;
}

static void buffer_free(struct buffer *b)
{
	if (!b->ptr)
		return;
	switch (b->kind) {
	case M_DEVICE:
		cu.MemFree((CUdeviceptr)(uintptr_t)b->ptr);
		break;
	case M_VMM: {
		CUdeviceptr d = (CUdeviceptr)(uintptr_t)b->ptr;
		cu.MemUnmap(d, b->vmm_len);
		cu.MemAddressFree(d, b->vmm_len);
		cu.MemRelease(b->vmm);
		break;
	}
	case M_PINNED:
		cu.MemFreeHost(b->ptr);
		break;
	case M_MALLOC:
		free(b->ptr);
		break;
	case M_MMAP:
		munmap(b->ptr, b->len);
		break;
	}
	b->ptr = NULL;
}

/* Host scratch used to fill and check device memory: pinned when possible
 * (fast copies), else plain. */
static void *scratch_alloc(size_t len, int *pinned)
{
	void *p = NULL;
	*pinned = 0;
	if (have_cuda && cu.MemHostAlloc(&p, len, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS) {
		*pinned = 1;
		return p;
	}
	if (posix_memalign(&p, 4096, len))
		return NULL;
	return p;
}

static void scratch_free(void *p, int pinned)
{
	if (!p)
		return;
	if (pinned)
		cu.MemFreeHost(p);
	else
		free(p);
}

/* ------------------------------------------------------------------ the run */

struct run;

struct worker {
	struct run *run;
	int id;
	pthread_t th;
	const char *path;
	int fd, vfd, own_fd;
	CUfileHandle_t fh;
	int own_fh;
	uint64_t start, len, nops; /* region of the file and ops in one pass */
	struct buffer buf; /* with -A: a copy of the run's shared buffer */
	int registered;
	CUfileIOVec_t *iov; /* -v: the vector of one op */
	void *stage; /* -x 2: pinned bounce buffer */
	void *vhost; /* -V: host scratch */
	size_t vhost_len;
	int vhost_pinned, stage_pinned;
	CUcontext ctx;
	int ctx_held;
	CUstream stream;
	int stream_registered;
	CUfileBatchHandle_t batch;
	int batch_ok;
	uint64_t rng;
	struct hist *hist;
	uint64_t bytes, ops;
	double t_end;
	_Atomic uint64_t progress; /* relaxed: only read for the progress line */
	int status;
	char msg[512];
};

struct run {
	size_t io;
	int nthreads;
	struct worker *w;
	pthread_barrier_t ready, go, finished;
	atomic_int stop; /* relaxed: a hint to stop early, checked between ops */
	atomic_int done; /* acq/rel: counts workers past their last op */
	double t0, deadline;
	int fd, vfd;
	CUfileHandle_t fh;
	int fh_ok;
	struct buffer shared; /* -A: allocated and registered once, for all threads */
	int shared_registered;
};

struct result {
	int threads;
	size_t io;
	uint64_t bytes, planned, ops;
	double secs, cpu_user, cpu_sys;
	struct hist h;
	int status;
	char msg[512];
};

static int uses_cufile(int x)
{
	return x == X_GPUD || x == X_ASYNC || x == X_ASYNC_REG || x == X_BATCH;
}
static int is_write(void)
{
	return o.iotype == IO_WRITE || o.iotype == IO_RANDWRITE;
}
static int is_random(void)
{
	return o.iotype == IO_RANDREAD || o.iotype == IO_RANDWRITE;
}
static int group_mode(void)
{
	return o.xfer == X_ASYNC || o.xfer == X_ASYNC_REG || o.xfer == X_BATCH;
}

/* The memory type actually used: -x 1 moves bytes between the file and host
 * memory only, so device types fall back to malloc there. */
static int effective_mem(void)
{
	if (o.xfer == X_CPU && (o.mem == M_DEVICE || o.mem == M_VMM))
		return M_MALLOC;
	return o.mem;
}

static void fail(struct worker *w, int st, const char *fmt, ...)
{
	if (st > w->status) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->msg, sizeof(w->msg), fmt, ap);
		va_end(ap);
		w->status = st;
	}
	atomic_store_explicit(&w->run->stop, 1, memory_order_relaxed);
}

static uint64_t op_offset(struct worker *w, uint64_t k)
{
	size_t io = w->run->io;
	if (!is_random())
		return w->start + (k % w->nops) * io;
	uint64_t span = w->len - io + 1, r = rng_next(&w->rng) % span;
	if (!o.unaligned)
		r &= ~(uint64_t)4095;
	else if (r % 4096 == 0)
		r = r ? r - 1 : (span > 1 ? 1 : 0);
	return w->start + r;
}

/* cuFileReadv/cuFileWritev (1.19) are looked up at run time, so that gdsio
 * also runs with a libcufile that lacks them (NVIDIA's 1.15, the reference
 * in comparison runs); only -v needs them. */
static __typeof__(cuFileReadv) *p_readv;
static __typeof__(cuFileWritev) *p_writev;

static int resolve_vector_io(void)
{
	*(void **)&p_readv = dlsym(RTLD_DEFAULT, "cuFileReadv");
	*(void **)&p_writev = dlsym(RTLD_DEFAULT, "cuFileWritev");
	return p_readv && p_writev ? 0 : -1;
}

/* Put the pattern for file offset `off` into len bytes of the worker's
 * buffer at byte `at` (through the scratch when the buffer is on the GPU). */
static int fill_buffer(struct worker *w, size_t at, uint64_t off, size_t len)
{
	if (!w->buf.on_device) {
		pattern_fill((char *)w->buf.ptr + at, off, len);
		return 0;
	}
	for (size_t c = 0; c < len; c += w->vhost_len) {
		size_t m = len - c < w->vhost_len ? len - c : w->vhost_len;
		pattern_fill(w->vhost, off + c, m);
		CUresult r = cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)w->buf.ptr + at + c, w->vhost, m);
		if (r) {
			fail(w, ST_SETUP, "cuMemcpyHtoD: %s", cuda_dl_errstr(&cu, r));
			return -1;
		}
	}
	/* From pageable memory the copy may still be landing: cuFile I/O is
	 * not stream-ordered, so wait for the legacy stream. */
	CUresult r = cu.StreamSynchronize(NULL);
	if (r) {
		fail(w, ST_SETUP, "cuStreamSynchronize: %s", cuda_dl_errstr(&cu, r));
		return -1;
	}
	return 0;
}

static int poison_buffer(struct worker *w, size_t at, size_t len)
{
	if (!w->buf.on_device) {
		memset((char *)w->buf.ptr + at, POISON, len);
		return 0;
	}
	CUresult r =
	    cu.MemsetD8 ? cu.MemsetD8((CUdeviceptr)(uintptr_t)w->buf.ptr + at, POISON, len) : CUDA_SUCCESS;
	if (r)
		fail(w, ST_SETUP, "cuMemsetD8: %s", cuda_dl_errstr(&cu, r));
	return r ? -1 : 0;
}

/* After a read: the len bytes at buffer byte `at` must hold file [off, off+len). */
static int verify_read(struct worker *w, size_t at, uint64_t off, size_t len)
{
	for (size_t c = 0; c < len; c += w->vhost_len) {
		size_t m = len - c < w->vhost_len ? len - c : w->vhost_len;
		const void *p = (char *)w->buf.ptr + at + c;
		if (w->buf.on_device) {
			CUresult r = cu.MemcpyDtoH(w->vhost, (CUdeviceptr)(uintptr_t)w->buf.ptr + at + c, m);
			if (r) {
				fail(w, ST_SETUP, "cuMemcpyDtoH: %s", cuda_dl_errstr(&cu, r));
				return -1;
			}
			p = w->vhost;
		}
		long long bad = pattern_check(p, off + c, m);
		if (bad >= 0) {
			uint64_t fo = off + c + (uint64_t)bad;
			fail(w, ST_VERIFY,
			     "verify: first bad byte at file offset %llu (read of %zu at %llu): got 0x%02x, "
			     "want 0x%02x",
			     (unsigned long long)fo, len, (unsigned long long)off, ((const uint8_t *)p)[bad],
			     pattern_byte(fo));
			return -1;
		}
	}
	return 0;
}

/* After a write: read the file back (buffered fd) and check it. */
static int verify_write(struct worker *w, uint64_t off, size_t len)
{
	for (size_t c = 0; c < len; c += w->vhost_len) {
		size_t m = len - c < w->vhost_len ? len - c : w->vhost_len;
		int e = full_pread(w->vfd, w->vhost, m, off + c);
		if (e) {
			fail(w, ST_IOERR, "verify: read back at %llu: %s", (unsigned long long)(off + c),
			     strerror(-e));
			return -1;
		}
		long long bad = pattern_check(w->vhost, off + c, m);
		if (bad >= 0) {
			uint64_t fo = off + c + (uint64_t)bad;
			fail(w, ST_VERIFY,
			     "verify: written data wrong, first bad byte at file offset %llu: got 0x%02x, "
			     "want 0x%02x",
			     (unsigned long long)fo, ((const uint8_t *)w->vhost)[bad], pattern_byte(fo));
			return -1;
		}
	}
	return 0;
}

/* -v: piece j of an op of io bytes.  Pieces follow each other in the file
 * (foff) and are laid out in the buffer in reverse order (moff), so that no
 * two neighbouring pieces are adjacent in memory and the library cannot
 * merge them into one: the vector really scatters (gathers).  The last piece
 * takes the remainder. */
static void vec_piece(size_t io, unsigned j, size_t *foff, size_t *moff, size_t *len)
{
	size_t base = io / o.vec;
	*foff = base * j;
	*len = j == o.vec - 1 ? io - base * (o.vec - 1) : base;
	*moff = io - *foff - *len;
}

/* fill_buffer or verify_read (fn) for one op's n bytes at buffer byte
 * `at`, following the piece layout of -v. */
static int per_op(int (*fn)(struct worker *, size_t, uint64_t, size_t), struct worker *w, size_t at,
		  uint64_t off, size_t n)
{
	if (!o.vec)
		return fn(w, at, off, n);
	for (unsigned j = 0; j < o.vec; j++) {
		size_t fo, mo, len;
		vec_piece(n, j, &fo, &mo, &len);
		if (fn(w, at + mo, off + fo, len))
			return -1;
	}
	return 0;
}

/* One synchronous op of the selected transfer type, n bytes between file
 * offset `off` and the worker's buffer at byte `at`. */
static int do_io(struct worker *w, size_t at, uint64_t off, size_t n)
{
	char eb[160];
	int e;
	CUresult r;
	char *p = (char *)w->buf.ptr + at;
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)w->buf.ptr + at;
	switch (o.xfer) {
	case X_GPUD: {
		ssize_t got;
		if (o.vec) {
			for (unsigned j = 0; j < o.vec; j++) {
				size_t fo, mo, len;
				vec_piece(n, j, &fo, &mo, &len);
				w->iov[j].base = p + mo, w->iov[j].len = len;
			}
			got = is_write() ? p_writev(w->fh, w->iov, o.vec, (off_t)off, 0)
					 : p_readv(w->fh, w->iov, o.vec, (off_t)off, 0);
		} else {
			got = is_write() ? cuFileWrite(w->fh, p, n, (off_t)off, 0)
					 : cuFileRead(w->fh, p, n, (off_t)off, 0);
		}
		if (got == (ssize_t)n)
			return 0;
		fail(w, ST_IOERR, "%s of %zu at %llu returned %s",
		     o.vec ? (is_write() ? "cuFileWritev" : "cuFileReadv")
			   : (is_write() ? "cuFileWrite" : "cuFileRead"),
		     n, (unsigned long long)off, io_ret_str(got, errno, eb, sizeof(eb)));
		return -1;
	}
	case X_CPU:
		e = is_write() ? full_pwrite(w->fd, p, n, off) : full_pread(w->fd, p, n, off);
		if (!e)
			return 0;
		fail(w, ST_IOERR, "%s of %zu at %llu: %s%s", is_write() ? "pwrite" : "pread", n,
		     (unsigned long long)off, strerror(-e),
		     e == -EINVAL && o.odirect ? " (O_DIRECT needs aligned offsets and sizes; try -N)" : "");
		return -1;
	case X_CPU_GPU:
		if (is_write()) {
			r = cu.MemcpyDtoH(w->stage, d, n);
			if (r)
				goto cuda_fail;
			e = full_pwrite(w->fd, w->stage, n, off);
		} else {
			e = full_pread(w->fd, w->stage, n, off);
			if (!e) {
				r = cu.MemcpyHtoD(d, w->stage, n);
				if (r)
					goto cuda_fail;
			}
		}
		if (!e)
			return 0;
		fail(w, ST_IOERR, "%s of %zu at %llu: %s", is_write() ? "pwrite" : "pread", n,
		     (unsigned long long)off, strerror(-e));
		return -1;
	}
	return -1;
cuda_fail:
	fail(w, ST_IOERR, "CUDA copy of %zu: %s (%d)", n, cuda_dl_errstr(&cu, r), (int)r);
	return -1;
}

static int keep_going(struct worker *w, uint64_t k, double t)
{
	if (atomic_load_explicit(&w->run->stop, memory_order_relaxed))
		return 0;
	if (o.duration > 0)
		return k == 0 || t < w->run->deadline;
	return k < w->nops;
}

static void loop_sync(struct worker *w)
{
	size_t io = w->run->io;
	double t = 0;
	for (uint64_t k = 0; keep_going(w, k, t); k++) {
		uint64_t off = op_offset(w, k);
		/* -A: the shared buffer mirrors the data set, op at file offset
		 * off goes to buffer byte off - -o. */
		size_t at = o.shared ? (size_t)(off - o.offset) : 0;
		if (o.verify && (is_write() ? per_op(fill_buffer, w, at, off, io) : poison_buffer(w, at, io)))
			return;
		uint64_t t0 = now_ns();
		if (do_io(w, at, off, io))
			return;
		uint64_t t1 = now_ns();
		hist_add(w->hist, t1 - t0);
		w->bytes += io, w->ops++;
		atomic_fetch_add_explicit(&w->progress, io, memory_order_relaxed);
		if (o.verify && (is_write() ? verify_write(w, off, io) : per_op(verify_read, w, at, off, io)))
			return;
		t = (double)t1 * 1e-9;
	}
}

/* Async (-x 3/4) and batch (-x 5): groups of up to -B operations. */
static void loop_group(struct worker *w)
{
	size_t io = w->run->io;
	unsigned depth = o.depth;
	size_t *sizes = calloc(depth, sizeof(*sizes));
	off_t *foffs = calloc(depth, sizeof(*foffs)), *boffs = calloc(depth, sizeof(*boffs));
	ssize_t *rets = calloc(depth, sizeof(*rets));
	uint64_t *offs = calloc(depth, sizeof(*offs));
	CUfileIOParams_t *params = calloc(depth, sizeof(*params));
	CUfileIOEvents_t *events = calloc(depth, sizeof(*events));
	char eb[160];
	double t = 0;
	int first = 1;
	if (!sizes || !foffs || !boffs || !rets || !offs || !params || !events) {
		fail(w, ST_SETUP, "out of memory");
		goto out;
	}
	for (uint64_t k = 0; keep_going(w, k, t);) {
		unsigned g = depth;
		if (o.duration <= 0 && w->nops - k < g)
			g = (unsigned)(w->nops - k);
		for (unsigned i = 0; i < g; i++) {
			offs[i] = op_offset(w, k + i);
			if (o.verify &&
			    (is_write() ? fill_buffer(w, i * io, offs[i], io) : poison_buffer(w, i * io, io)))
				goto out;
		}
		uint64_t t0 = now_ns();
		unsigned good = 0;
		if (o.xfer == X_BATCH) {
			for (unsigned i = 0; i < g; i++) {
				memset(&params[i], 0, sizeof(params[i]));
				params[i].mode = CUFILE_BATCH;
				params[i].u.batch.devPtr_base = w->buf.ptr;
				params[i].u.batch.file_offset = (off_t)offs[i];
				params[i].u.batch.devPtr_offset = (off_t)(i * io);
				params[i].u.batch.size = io;
				params[i].fh = w->fh;
				params[i].opcode = is_write() ? CUFILE_WRITE : CUFILE_READ;
				params[i].cookie = (void *)(uintptr_t)(i + 1);
				rets[i] = -1;
			}
			CUfileError_t e = cuFileBatchIOSubmit(w->batch, g, params, 0);
			if (e.err) {
				fail(w, first ? ST_UNSUPPORTED : ST_IOERR,
				     "cuFileBatchIOSubmit(%u entries): %s", g, cufile_err(e, eb, sizeof(eb)));
				goto out;
			}
			unsigned got = 0;
			while (got < g) {
				unsigned nr = g - got;
				struct timespec ts = {0, 100 * 1000 * 1000};
				e = cuFileBatchIOGetStatus(w->batch, g - got, &nr, events, &ts);
				uint64_t tn = now_ns();
				if (e.err) {
					fail(w, ST_IOERR, "cuFileBatchIOGetStatus: %s",
					     cufile_err(e, eb, sizeof(eb)));
					atomic_store(&abandon, 1);
					goto out;
				}
				for (unsigned j = 0; j < nr && j < g; j++) {
					uintptr_t c = (uintptr_t)events[j].cookie;
					if (c < 1 || c > g || rets[c - 1] != -1) {
						fail(w, ST_IOERR, "batch event with unknown cookie %p",
						     events[j].cookie);
						atomic_store(&abandon, 1);
						goto out;
					}
					rets[c - 1] =
					    events[j].status == CUFILE_COMPLETE ? (ssize_t)events[j].ret : -2;
					if (events[j].status != CUFILE_COMPLETE || events[j].ret != io)
						fail(w, ST_IOERR,
						     "batch entry %lu at %llu: status 0x%x ret %zu",
						     (unsigned long)c - 1, (unsigned long long)offs[c - 1],
						     (unsigned)events[j].status, events[j].ret);
					else
						hist_add(w->hist, tn - t0);
					got++;
				}
				if (got < g && (double)(tn - t0) * 1e-9 > o.batch_timeout) {
					fail(w, ST_TIMEOUT,
					     "batch: %u of %u entries completed within %.1f s (GetStatus "
					     "min_nr=%u)",
					     got, g, o.batch_timeout, g);
					atomic_store(&abandon, 1);
					goto out;
				}
			}
			for (unsigned i = 0; i < g; i++)
				good += rets[i] == (ssize_t)io;
		} else {
			unsigned queued = 0;
			for (unsigned i = 0; i < g; i++) {
				sizes[i] = io, foffs[i] = (off_t)offs[i], boffs[i] = (off_t)(i * io),
				rets[i] = -12345;
				CUfileError_t e =
				    is_write() ? cuFileWriteAsync(w->fh, w->buf.ptr, &sizes[i], &foffs[i],
								  &boffs[i], &rets[i], w->stream)
					       : cuFileReadAsync(w->fh, w->buf.ptr, &sizes[i], &foffs[i],
								 &boffs[i], &rets[i], w->stream);
				if (e.err) {
					fail(w, first && i == 0 ? ST_UNSUPPORTED : ST_IOERR, "%s: %s",
					     is_write() ? "cuFileWriteAsync" : "cuFileReadAsync",
					     cufile_err(e, eb, sizeof(eb)));
					break;
				}
				queued++;
			}
			CUresult r = cu.StreamSynchronize(w->stream);
			uint64_t t1 = now_ns();
			if (r) {
				fail(w, ST_IOERR, "cuStreamSynchronize: %s", cuda_dl_errstr(&cu, r));
				goto out;
			}
			if (queued < g)
				goto out;
			int first_bad = -1;
			for (unsigned i = 0; i < g; i++) {
				if (rets[i] == (ssize_t)io) {
					good++;
					hist_add(w->hist, t1 - t0);
				} else if (first_bad < 0) {
					first_bad = (int)i;
				}
			}
			if (first_bad >= 0)
				fail(w, ST_INCOMPLETE,
				     "async: %u of %u operations on one stream completed in full; op %d: %s",
				     good, g, first_bad,
				     rets[first_bad] == -12345
					 ? "result never written"
					 : io_ret_str(rets[first_bad], 0, eb, sizeof(eb)));
		}
		first = 0;
		w->bytes += (uint64_t)good * io, w->ops += good;
		atomic_fetch_add_explicit(&w->progress, (uint64_t)good * io, memory_order_relaxed);
		if (o.verify)
			for (unsigned i = 0; i < g; i++)
				if (rets[i] == (ssize_t)io &&
				    (is_write() ? verify_write(w, offs[i], io)
						: verify_read(w, i * io, offs[i], io)))
					goto out;
		if (good < g)
			goto out;
		k += g;
		t = (double)now_ns() * 1e-9;
	}
out:
	free(sizes), free(foffs), free(boffs), free(rets), free(offs), free(params), free(events);
}

static void worker_setup(struct worker *w)
{
	struct run *run = w->run;
	size_t io = run->io;
	size_t buflen = group_mode() ? io * o.depth : io;
	char eb[160];
	w->rng = ((uint64_t)o.seed << 32) ^ (0x9E3779B97F4A7C15ull * (uint64_t)(w->id + 1));
	if (!w->rng)
		w->rng = 1;
	w->hist = calloc(1, sizeof(*w->hist));
	if (!w->hist) {
		fail(w, ST_SETUP, "out of memory");
		return;
	}
	if (have_cuda) {
		cu.Init(0);
		CUresult r = cuda_dl_bind(&cu, o.gpu, &w->ctx);
		if (r) {
			fail(w, ST_SETUP, "binding GPU %d: %s (%d)", o.gpu, cuda_dl_errstr(&cu, r), (int)r);
			return;
		}
		w->ctx_held = 1;
	}
	if (o.dir) {
		w->own_fd = 1;
		int flags = (is_write() ? O_RDWR : O_RDONLY) | (o.odirect ? O_DIRECT : 0);
		w->fd = open(w->path, flags);
		w->vfd = o.verify ? open(w->path, O_RDONLY) : -1;
		if (w->fd < 0 || (o.verify && w->vfd < 0)) {
			fail(w, ST_SETUP, "open %s: %s", w->path, strerror(errno));
			return;
		}
		if (uses_cufile(o.xfer)) {
			CUfileDescr_t d;
			memset(&d, 0, sizeof(d));
			d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
			d.handle.fd = w->fd;
			CUfileError_t e = cuFileHandleRegister(&w->fh, &d);
			if (e.err) {
				fail(w, ST_SETUP, "cuFileHandleRegister(%s): %s", w->path,
				     cufile_err(e, eb, sizeof(eb)));
				return;
			}
			w->own_fh = 1;
		}
	} else {
		w->fd = run->fd, w->vfd = run->vfd, w->fh = run->fh;
	}
	char why[512];
	if (o.shared) {
		w->buf = run->shared; /* registered (or not) once by run_one */
	} else if (buffer_alloc(&w->buf, effective_mem(), buflen, o.gpu, why, sizeof(why))) {
		fail(w, ST_SETUP, "%s", why);
		return;
	}
	if (o.vec && !(w->iov = calloc(o.vec, sizeof(*w->iov)))) {
		fail(w, ST_SETUP, "out of memory");
		return;
	}
	if (uses_cufile(o.xfer) && !o.skip_reg && !o.shared) {
		CUfileError_t e = cuFileBufRegister(w->buf.ptr, buflen, 0);
		if (e.err) {
			fail(w, ST_SETUP, "cuFileBufRegister(%s, %zu): %s (use -b to run unregistered)",
			     mem_name[w->buf.kind], buflen, cufile_err(e, eb, sizeof(eb)));
			return;
		}
		w->registered = 1;
	}
	if (o.xfer == X_CPU_GPU) {
		if (!w->buf.on_device) {
			fail(w, ST_SETUP, "-x 2 (CPU_GPU) needs device memory (-m 0 or 1)");
			return;
		}
		if (cu.MemHostAlloc(&w->stage, io, CU_MEMHOSTALLOC_PORTABLE)) {
			fail(w, ST_SETUP, "cuMemHostAlloc(%zu) for the staging buffer failed", io);
			return;
		}
		w->stage_pinned = 1;
	}
	if (o.verify || w->buf.on_device) {
		w->vhost_len = buflen < VERIFY_CHUNK ? buflen : VERIFY_CHUNK;
		w->vhost = scratch_alloc(w->vhost_len, &w->vhost_pinned);
		if (!w->vhost) {
			fail(w, ST_SETUP, "out of memory for the verification scratch");
			return;
		}
	}
	if (o.xfer == X_ASYNC || o.xfer == X_ASYNC_REG) {
		if (!have_cuda || !cu.StreamCreate || !cu.StreamSynchronize) {
			fail(w, ST_SETUP, "async transfers need the CUDA driver (streams): %s", cuda_why);
			return;
		}
		CUresult r = cu.StreamCreate(&w->stream, CU_STREAM_NON_BLOCKING);
		if (r) {
			fail(w, ST_SETUP, "cuStreamCreate: %s", cuda_dl_errstr(&cu, r));
			return;
		}
		if (o.xfer == X_ASYNC_REG) {
			unsigned flags = 0;
			if (!is_random() && io % 4096 == 0 && o.offset % 4096 == 0 &&
			    (uintptr_t)w->buf.ptr % 4096 == 0)
				flags = CU_FILE_STREAM_PAGE_ALIGNED_INPUTS;
			CUfileError_t e = cuFileStreamRegister(w->stream, flags);
			if (e.err) {
				fail(w, ST_UNSUPPORTED, "cuFileStreamRegister(flags %u): %s", flags,
				     cufile_err(e, eb, sizeof(eb)));
				return;
			}
			w->stream_registered = 1;
		}
	}
	if (o.xfer == X_BATCH) {
		CUfileError_t e = cuFileBatchIOSetUp(&w->batch, o.depth);
		if (e.err) {
			fail(w, ST_UNSUPPORTED, "cuFileBatchIOSetUp(%u): %s", o.depth,
			     cufile_err(e, eb, sizeof(eb)));
			return;
		}
		w->batch_ok = 1;
	}
	/* Writes without -V send the pattern of the first op's offsets (with
	 * -A: of the worker's whole region). */
	if (is_write() && !o.verify) {
		if (o.shared)
			fill_buffer(w, (size_t)(w->start - o.offset), w->start, (size_t)w->len);
		else
			fill_buffer(w, 0, w->start, buflen);
	}
}

static void worker_teardown(struct worker *w)
{
	if (atomic_load(&abandon))
		return; /* I/O may still be in flight into these buffers */
	if (w->batch_ok)
		cuFileBatchIODestroy(w->batch);
	if (w->stream_registered)
		cuFileStreamDeregister(w->stream);
	if (w->stream)
		cu.StreamDestroy(w->stream);
	if (w->registered)
		cuFileBufDeregister(w->buf.ptr);
	if (!o.shared)
		buffer_free(&w->buf);
	free(w->iov);
	scratch_free(w->vhost, w->vhost_pinned);
	scratch_free(w->stage, w->stage_pinned);
	if (w->own_fh)
		cuFileHandleDeregister(w->fh);
	if (w->own_fd) {
		if (w->fd >= 0)
			close(w->fd);
		if (w->vfd >= 0)
			close(w->vfd);
	}
	if (w->ctx_held) {
		CUdevice dev;
		if (cu.PrimaryCtxRelease && cu.DeviceGet(&dev, o.gpu) == CUDA_SUCCESS)
			cu.PrimaryCtxRelease(dev);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	worker_setup(w);
	pthread_barrier_wait(&w->run->ready);
	pthread_barrier_wait(&w->run->go);
	if (!w->status) {
		if (group_mode())
			loop_group(w);
		else
			loop_sync(w);
	}
	w->t_end = now();
	atomic_fetch_add_explicit(&w->run->done, 1, memory_order_release);
	pthread_barrier_wait(&w->run->finished);
	worker_teardown(w);
	return NULL;
}

static double cpu_secs(const struct rusage *ru, int sys)
{
	const struct timeval *tv = sys ? &ru->ru_stime : &ru->ru_utime;
	return (double)tv->tv_sec + (double)tv->tv_usec * 1e-6;
}

static void progress_line(struct run *run, double t, int final)
{
	if (!is_tty)
		return;
	if (final) {
		printf("\r%-78s\r", "");
		fflush(stdout);
		return;
	}
	uint64_t b = 0;
	for (int i = 0; i < run->nthreads; i++)
		b += atomic_load_explicit(&run->w[i].progress, memory_order_relaxed);
	double dt = t - run->t0;
	printf("\r[gdsio] %6.1f s  %10.3f GiB  %8.3f GB/s", dt, (double)b / 1073741824.0,
	       dt > 0 ? (double)b / dt / 1e9 : 0.0);
	fflush(stdout);
}

static void file_for_thread(char *buf, size_t len, int t)
{
	snprintf(buf, len, "%s/gdsio.%d.dat", o.dir, t);
}

/* Run one (IO size, thread count) combination. */
static void run_one(size_t io, int nthreads, struct result *res)
{
	struct run run;
	char eb[160];
	memset(&run, 0, sizeof(run));
	memset(res, 0, sizeof(*res));
	res->threads = nthreads, res->io = io;
	run.io = io, run.nthreads = nthreads, run.fd = -1, run.vfd = -1;

	/* Split the data set: -f shares -s among threads, -D gives each -s. */
	uint64_t per_file_ops = o.size / io;
	uint64_t total_ops = o.dir ? per_file_ops * (uint64_t)nthreads : per_file_ops;
	if (per_file_ops == 0 || (!o.dir && total_ops < (uint64_t)nthreads)) {
		res->status = ST_SKIPPED;
		snprintf(res->msg, sizeof(res->msg),
			 "data set %llu bytes too small for %d thread(s) of %zu-byte IOs",
			 (unsigned long long)o.size, nthreads, io);
		return;
	}
	res->planned = total_ops * io;
	if (o.xfer == X_CPU_GPU && effective_mem() != M_DEVICE && effective_mem() != M_VMM) {
		res->status = ST_SETUP;
		snprintf(res->msg, sizeof(res->msg), "-x 2 (CPU_GPU) needs device memory (-m 0 or 1)");
		return;
	}

	if (!o.dir) {
		int flags = (is_write() ? O_RDWR : O_RDONLY) | (o.odirect ? O_DIRECT : 0);
		run.fd = open(o.file, flags);
		run.vfd = o.verify ? open(o.file, O_RDONLY) : -1;
		if (run.fd < 0 || (o.verify && run.vfd < 0)) {
			res->status = ST_SETUP;
			snprintf(res->msg, sizeof(res->msg), "open %s: %s", o.file, strerror(errno));
			goto close_fds;
		}
		if (uses_cufile(o.xfer)) {
			CUfileDescr_t d;
			memset(&d, 0, sizeof(d));
			d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
			d.handle.fd = run.fd;
			CUfileError_t e = cuFileHandleRegister(&run.fh, &d);
			if (e.err) {
				res->status = ST_SETUP;
				snprintf(res->msg, sizeof(res->msg), "cuFileHandleRegister(%s): %s", o.file,
					 cufile_err(e, eb, sizeof(eb)));
				goto close_fds;
			}
			run.fh_ok = 1;
		}
	}

	if (o.shared) {
		/* The fastsafetensors shape: one buffer of the data set's size,
		 * registered once, each thread reading its own part of it. */
		char why[512];
		if (buffer_alloc(&run.shared, effective_mem(), (size_t)o.size, o.gpu, why, sizeof(why))) {
			res->status = ST_SETUP;
			snprintf(res->msg, sizeof(res->msg), "shared buffer (-A): %.400s", why);
			goto close_fh;
		}
		if (uses_cufile(o.xfer) && !o.skip_reg) {
			CUfileError_t e = cuFileBufRegister(run.shared.ptr, (size_t)o.size, 0);
			if (e.err) {
				res->status = ST_SETUP;
				snprintf(res->msg, sizeof(res->msg),
					 "cuFileBufRegister(%s, %llu) of the shared buffer: %s (use -b to run "
					 "unregistered)",
					 mem_name[run.shared.kind], (unsigned long long)o.size,
					 cufile_err(e, eb, sizeof(eb)));
				goto close_fh;
			}
			run.shared_registered = 1;
		}
	}
	run.w = calloc((size_t)nthreads, sizeof(*run.w));
	char(*paths)[4096] = o.dir ? calloc((size_t)nthreads, sizeof(*paths)) : NULL;
	if (!run.w || (o.dir && !paths)) {
		res->status = ST_SETUP;
		snprintf(res->msg, sizeof(res->msg), "out of memory");
		free(paths);
		goto close_fh;
	}
	uint64_t next = o.offset;
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &run.w[i];
		w->run = &run, w->id = i, w->fd = -1, w->vfd = -1;
		if (o.dir) {
			file_for_thread(paths[i], sizeof(paths[i]), i);
			w->path = paths[i];
			w->nops = per_file_ops, w->start = o.offset;
		} else {
			w->path = o.file;
			w->nops =
			    total_ops / (uint64_t)nthreads + ((uint64_t)i < total_ops % (uint64_t)nthreads);
			w->start = next;
			next += w->nops * io;
		}
		w->len = w->nops * io;
	}
	pthread_barrier_init(&run.ready, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&run.go, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&run.finished, NULL, (unsigned)nthreads + 1);
	int started = 0;
	for (; started < nthreads; started++)
		if (pthread_create(&run.w[started].th, NULL, worker_main, &run.w[started]))
			break;
	if (started < nthreads) {
		fprintf(stderr, "gdsio: cannot start %d threads\n", nthreads);
		exit(EXIT_FAIL); /* barriers cannot be satisfied: nothing sane to unwind */
	}

	pthread_barrier_wait(&run.ready);
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	run.t0 = now();
	run.deadline = run.t0 + o.duration;
	pthread_barrier_wait(&run.go);
	double last = run.t0;
	while (atomic_load_explicit(&run.done, memory_order_acquire) < nthreads) {
		usleep(20000);
		double t = now();
		if (t - last >= 0.5) {
			progress_line(&run, t, 0);
			last = t;
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	progress_line(&run, 0, 1);
	double t_end = run.t0;
	for (int i = 0; i < nthreads; i++)
		if (run.w[i].t_end > t_end)
			t_end = run.w[i].t_end;
	res->secs = t_end - run.t0;
	res->cpu_user = cpu_secs(&ru1, 0) - cpu_secs(&ru0, 0);
	res->cpu_sys = cpu_secs(&ru1, 1) - cpu_secs(&ru0, 1);
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &run.w[i];
		res->bytes += w->bytes, res->ops += w->ops;
		if (w->hist) {
			for (int b = 0; b < HIST_N; b++)
				res->h.n[b] += w->hist->n[b];
			res->h.count += w->hist->count, res->h.sum_ns += w->hist->sum_ns;
		}
		if (w->status > res->status) {
			res->status = w->status;
			snprintf(res->msg, sizeof(res->msg), "thread %d: %.480s", i, w->msg);
		}
	}
	if (atomic_load(&abandon))
		return; /* the caller prints and leaves without teardown */
	pthread_barrier_wait(&run.finished);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(run.w[i].th, NULL);
		free(run.w[i].hist);
	}
	pthread_barrier_destroy(&run.ready);
	pthread_barrier_destroy(&run.go);
	pthread_barrier_destroy(&run.finished);
	free(paths);
	free(run.w);
close_fh:
	if (run.shared_registered)
		cuFileBufDeregister(run.shared.ptr);
	buffer_free(&run.shared);
	if (run.fh_ok)
		cuFileHandleDeregister(run.fh);
close_fds:
	if (run.fd >= 0)
		close(run.fd);
	if (run.vfd >= 0)
		close(run.vfd);
}

/* ------------------------------------------------------------------ output */

static double gbps(const struct result *r)
{
	return r->secs > 0 ? (double)r->bytes / r->secs / 1e9 : 0;
}

static void print_result(const struct result *r)
{
	double gib = r->secs > 0 ? (double)r->bytes / r->secs / 1073741824.0 : 0;
	double avg = r->h.count ? (double)r->h.sum_ns / (double)r->h.count / 1e3 : 0;
	double gb = (double)r->bytes / 1e9;
	double cpu = gb > 0 ? (r->cpu_user + r->cpu_sys) / gb : 0;
	if (r->status == ST_SKIPPED || (r->status == ST_SETUP && !r->ops) || r->status == ST_UNSUPPORTED) {
		printf("IoType: %s XferType: %s Threads: %d IOSize: %zu(KiB) %s: %s\n", io_name[o.iotype],
		       xfer_name[o.xfer], r->threads, r->io / 1024,
		       r->status == ST_UNSUPPORTED ? "NOT SUPPORTED by this libcufile" : "ERROR", r->msg);
		printf("Extra: Status: %s\n", status_name[r->status]);
		fflush(stdout);
		return;
	}
	printf("IoType: %s XferType: %s Threads: %d DataSetSize: %llu/%llu(KiB) IOSize: %zu(KiB) Throughput: "
	       "%.3f "
	       "GiB/sec, Avg_Latency: %.3f usecs ops: %llu total_time %.3f secs\n",
	       io_name[o.iotype], xfer_name[o.xfer], r->threads, (unsigned long long)(r->bytes / 1024),
	       (unsigned long long)(r->planned / 1024), r->io / 1024, gib, avg, (unsigned long long)r->ops,
	       r->secs);
	printf("Extra: GB_per_sec: %.3f p50_usecs: %.3f p99_usecs: %.3f CPU_sec_per_GB: %.4f (user %.3f sys "
	       "%.3f s) "
	       "Verify: %s Status: %s\n",
	       gbps(r), hist_pct_us(&r->h, 0.50), hist_pct_us(&r->h, 0.99), cpu, r->cpu_user, r->cpu_sys,
	       !o.verify		? "off"
	       : r->status == ST_VERIFY ? "FAIL"
	       : r->status == ST_OK	? "PASS"
					: "incomplete",
	       status_name[r->status]);
	if (r->status != ST_OK)
		printf("ERROR: %s\n", r->msg);
	fflush(stdout);
}

static void csv_row(FILE *f, const struct result *r)
{
	double gb = (double)r->bytes / 1e9;
	fprintf(f, "%s,%s,%s,%d,%zu,%llu,%.6f,%.4f,%.4f,%.3f,%.3f,%.3f,%llu,%.5f,%s\n", io_name[o.iotype],
		xfer_name[o.xfer], mem_name[effective_mem()], r->threads, r->io, (unsigned long long)r->bytes,
		r->secs, r->secs > 0 ? (double)r->bytes / r->secs / 1073741824.0 : 0, gbps(r),
		r->h.count ? (double)r->h.sum_ns / (double)r->h.count / 1e3 : 0, hist_pct_us(&r->h, 0.5),
		hist_pct_us(&r->h, 0.99), (unsigned long long)r->ops,
		gb > 0 ? (r->cpu_user + r->cpu_sys) / gb : 0, status_name[r->status]);
	fflush(f);
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* Throughput (GB/s) against IO size (log2 axis), one line per thread count. */
static int write_svg(const char *path, const struct result *res, int nres)
{
	static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
					     "#9467bd", "#8c564b", "#e377c2", "#17becf"};
	const double W = 960, H = 560, L = 90, R = 190, T = 60, B = 80;
	const double pw = W - L - R, ph = H - T - B;
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	double lmin = 1e9, lmax = -1e9, vmax = 0;
	for (int i = 0; i < nres; i++) {
		if (res[i].status != ST_OK)
			continue;
		double l = log2((double)res[i].io);
		lmin = fmin(lmin, l), lmax = fmax(lmax, l), vmax = fmax(vmax, gbps(&res[i]));
	}
	if (lmin > lmax)
		lmin = 12, lmax = 24;
	if (lmax - lmin < 1)
		lmin -= 1, lmax += 1;
	if (vmax <= 0)
		vmax = 1;
	double raw = vmax / 5, mag = pow(10, floor(log10(raw))), step = mag;
	if (raw > 5 * mag)
		step = 10 * mag;
	else if (raw > 2 * mag)
		step = 5 * mag;
	else if (raw > mag)
		step = 2 * mag;
	double ymax = ceil(vmax / step) * step;
#define XP(l) (L + ((l)-lmin) / (lmax - lmin) * pw)
#define YP(v) (T + ph - (v) / ymax * ph)
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
		"%.0f\" "
		"font-family=\"sans-serif\" font-size=\"13\">\n",
		W, H, W, H);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
	char title[512];
	snprintf(title, sizeof(title), "gdsio %s %s, %s, %s fd: throughput vs IO size", io_name[o.iotype],
		 xfer_name[o.xfer], mem_name[effective_mem()], o.odirect ? "O_DIRECT" : "buffered");
	fprintf(f, "<text x=\"%.1f\" y=\"30\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">",
		L + pw / 2);
	xml_text(f, title);
	fprintf(f, "</text>\n");
	/* Grid and y ticks. */
	for (double v = 0; v <= ymax + step / 2; v += step) {
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", L,
			YP(v), L + pw, YP(v));
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 8, YP(v) + 4,
			v);
	}
	/* x ticks at powers of two. */
	int nt = (int)(floor(lmax) - ceil(lmin)) + 1, every = nt > 12 ? 2 : 1;
	for (int l = (int)ceil(lmin), k = 0; l <= (int)floor(lmax); l++, k++) {
		char lab[32];
		human_size(lab, sizeof(lab), 1ull << l);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eeeeee\"/>\n",
			XP(l), T, XP(l), T + ph);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
			XP(l), T + ph, XP(l), T + ph + 5);
		if (k % every == 0)
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", XP(l),
				T + ph + 20, lab);
	}
	fprintf(
	    f,
	    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n",
	    L, T, pw, ph);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">IO size (bytes, log scale)</text>\n",
		L + pw / 2, H - 25);
	fprintf(
	    f,
	    "<text x=\"25\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 25 %.1f)\">Throughput "
	    "(GB/s, 10^9 bytes/s)</text>\n",
	    T + ph / 2, T + ph / 2);
	/* One line per thread count, in the order given. */
	int ncol = 0;
	for (int ti = 0; ti < o.nthreads; ti++) {
		int th = o.threads[ti];
		const char *c = colors[ncol % 8];
		int npts = 0;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
		for (int i = 0; i < nres; i++)
			if (res[i].threads == th && res[i].status == ST_OK) {
				fprintf(f, "%s%.1f,%.1f", npts ? " " : "", XP(log2((double)res[i].io)),
					YP(gbps(&res[i])));
				npts++;
			}
		fprintf(f, "\"/>\n");
		for (int i = 0; i < nres; i++)
			if (res[i].threads == th && res[i].status == ST_OK)
				fprintf(f,
					"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%d "
					"thread(s), %zu "
					"bytes: %.3f GB/s</title></circle>\n",
					XP(log2((double)res[i].io)), YP(gbps(&res[i])), c, th, res[i].io,
					gbps(&res[i]));
		double ly = T + 10 + ncol * 24;
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"3\"/>\n",
			L + pw + 20, ly, L + pw + 50, ly, c);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%d thread%s</text>\n", L + pw + 58, ly + 4, th,
			th == 1 ? "" : "s");
		ncol++;
	}
	fprintf(f, "</svg>\n");
#undef XP
#undef YP
	return fclose(f);
}

/* ------------------------------------------------------------- test files */

struct prep {
	int fd;
	uint64_t size;
	atomic_ullong next; /* relaxed: hands out chunk indexes, nothing else is published */
	int err;
};

#define PREP_CHUNK ((size_t)8 << 20)

static void *prep_main(void *arg)
{
	struct prep *p = arg;
	void *buf = malloc(PREP_CHUNK);
	if (!buf) {
		p->err = ENOMEM;
		return NULL;
	}
	for (;;) {
		uint64_t off = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed) * PREP_CHUNK;
		if (off >= p->size)
			break;
		size_t n = p->size - off < PREP_CHUNK ? (size_t)(p->size - off) : PREP_CHUNK;
		pattern_fill(buf, off, n);
		int e = full_pwrite(p->fd, buf, n, off);
		if (e) {
			p->err = -e;
			break;
		}
	}
	free(buf);
	return NULL;
}

/* Make sure `path` exists with at least `need` bytes; a file that is missing
 * or too short is (re)written with the pattern, in parallel, before timing. */
static int prepare_file(const char *path, uint64_t need)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= need)
		return 0;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return 0; /* a block device: use as is */
	double t0 = now();
	struct prep p = {.fd = open(path, O_WRONLY | O_CREAT, 0644), .size = need};
	if (p.fd < 0) {
		fprintf(stderr, "gdsio: create %s: %s\n", path, strerror(errno));
		return -1;
	}
	pthread_t th[8];
	int n = 0;
	for (; n < 8; n++)
		if (pthread_create(&th[n], NULL, prep_main, &p))
			break;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (!n)
		prep_main(&p);
	close(p.fd);
	if (p.err) {
		fprintf(stderr, "gdsio: writing %s: %s\n", path, strerror(p.err));
		return -1;
	}
	printf("# created %s: %llu bytes with the pattern in %.2f s\n", path, (unsigned long long)need,
	       now() - t0);
	return 0;
}

/* ------------------------------------------------------------- driver open */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int measure_driver_open(int n)
{
	double *ms = calloc((size_t)n, sizeof(double));
	char eb[160];
	if (!ms)
		return EXIT_FAIL;
	for (int i = 0; i < n; i++) {
		double t0 = now();
		CUfileError_t e = cuFileDriverOpen();
		double t1 = now();
		if (e.err) {
			printf("cuFileDriverOpen: %s\n", cufile_err(e, eb, sizeof(eb)));
			free(ms);
			return EXIT_FAIL;
		}
		cuFileDriverClose();
		ms[i] = (t1 - t0) * 1e3;
	}
	double first = ms[0];
	qsort(ms, (size_t)n, sizeof(double), cmp_double);
	printf("DriverOpen: runs %d min %.3f ms median %.3f ms max %.3f ms first %.3f ms (CUDA context %s)\n",
	       n, ms[0], ms[n / 2], ms[n - 1], first, have_cuda ? "current" : "not available");
	free(ms);
	return EXIT_OK;
}

/* ----------------------------------------------------------------- banner */

static void print_banner(void)
{
	print_cufile_library("gdsio");
	int ver = 0;
	cuFileGetVersion(&ver);
	printf(" version %d\n", ver);
	if (have_cuda) {
		char name[128] = "?";
		CUdevice dev;
		if (cu.DeviceGetName && cu.DeviceGet(&dev, o.gpu) == CUDA_SUCCESS)
			cu.DeviceGetName(name, sizeof(name), dev);
		printf("# CUDA driver %s, GPU %d: %s\n", cu.path, o.gpu, name);
	} else {
		printf("# CUDA driver not available (%s)\n", cuda_why);
	}
	printf("# %s %s, %s fd, memory %s, buffer %s, %s, data set %llu bytes%s from offset %llu%s%s\n",
	       o.dir ? "dir" : "file", o.dir ? o.dir : o.file,
	       o.odirect ? "O_DIRECT" : "buffered (no O_DIRECT)", mem_name[effective_mem()],
	       !uses_cufile(o.xfer) ? "not used by cuFile"
	       : o.skip_reg	    ? "not registered (-b)"
				    : "registered with cuFileBufRegister",
	       o.dir ? "one file and handle per thread" : "one fd and cuFile handle shared by all threads",
	       (unsigned long long)o.size, o.dir ? " per thread" : "", (unsigned long long)o.offset,
	       o.verify ? ", verify every byte (-V; timings include verification)" : "",
	       o.duration > 0 ? ", timed (-T)" : "");
	if (o.shared)
		printf("# ONE buffer of %llu bytes shared by all threads (-A)\n", (unsigned long long)o.size);
	if (o.vec)
		printf("# each op is one %s of %u pieces in reverse buffer order (-v)\n",
		       is_write() ? "cuFileWritev" : "cuFileReadv", o.vec);
	fflush(stdout);
}

/* ------------------------------------------------------------------ usage */

static void usage(FILE *f)
{
	fprintf(f, "gdsio - cuFile I/O benchmark (opencufile); measures whatever libcufile.so.0 it loads\n"
		   "\n"
		   "usage: gdsio -f FILE | -D DIR  [options]\n"
		   "       gdsio -L N              time cuFileDriverOpen (open+close N times)\n"
		   "\n"
		   "  -f FILE   one file shared by all threads (one fd, one cuFile handle), each\n"
		   "            thread a disjoint region of -s/threads bytes\n"
		   "  -D DIR    one file per thread: DIR/gdsio.<thread>.dat, -s bytes each\n"
		   "  -d GPU    GPU index (default 0)\n"
		   "  -m TYPE   memory: 0 cuMemAlloc (default), 1 VMM cuMemCreate+cuMemMap,\n"
		   "            2 pinned cuMemHostAlloc, 3 malloc, 4 mmap\n"
		   "  -w N[,N]  threads (a list runs each; default 1)\n"
		   "  -s SIZE   data set size (K/M/G/T suffixes, binary); default: the file's size\n"
		   "  -o OFF    start offset in the file (default 0)\n"
		   "  -i SIZE   IO size (default 1M); MIN:MAX runs powers of two, MIN:MAX:STEP steps,\n"
		   "            A,B,C exactly those sizes\n"
		   "  -x TYPE   transfer: 0 GPU_DIRECT cuFileRead/Write (default), 1 CPU_ONLY pread/\n"
		   "            pwrite into host memory, 2 CPU_GPU pread into pinned memory then\n"
		   "            cuMemcpyHtoD (no cuFile), 3 cuFileReadAsync/WriteAsync, -B ops per\n"
		   "            stream then cuStreamSynchronize, 4 the same on a stream registered\n"
		   "            with cuFileStreamRegister, 5 cuFileBatchIO with -B entries per batch\n"
		   "  -B N      operations per async group or batch (default 8)\n"
		   "  -t SECS   give up on a batch after SECS without all completions (default 10)\n"
		   "  -I TYPE   0 read (default), 1 write, 2 random read, 3 random write\n"
		   "  -T SECS   run for SECS seconds (default: one pass over the data set)\n"
		   "  -k SEED   random seed (default 1)\n"
		   "  -U        unaligned random offsets (not 4 KiB multiples)\n"
		   "  -O        open with O_DIRECT (default; NVIDIA's gdsio always does)\n"
		   "  -N        open without O_DIRECT (buffered, page cache)\n"
		   "  -b        do not register buffers with cuFileBufRegister (default: register)\n"
		   "  -V        verify every byte: reads are checked against the file pattern,\n"
		   "            writes write the pattern and are read back and checked\n"
		   "  -A        all threads share ONE buffer of the data set's size (-s), registered\n"
		   "            once (unless -b); an op at file offset F uses buffer byte F - -o\n"
		   "            (the fastsafetensors shape); needs -f and -x 0, 1 or 2\n"
		   "  -v N      issue each op as cuFileReadv/cuFileWritev of N pieces: one\n"
		   "            contiguous file range, the pieces laid out in the buffer in\n"
		   "            reverse order (never adjacent in memory); needs -x 0\n"
		   "  -S        sweep: every -i size x every -w thread count (what any list\n"
		   "            does); use with -C/-G, and -T for a fixed time per cell\n"
		   "  -C FILE   write results as CSV\n"
		   "  -G FILE   write an SVG chart (GB/s vs IO size, one line per thread count)\n"
		   "  -Z        only create/extend the test file(s) with the pattern, then exit\n"
		   "  -L N      measure cuFileDriverOpen N times (min/median)\n"
		   "  -h        this help\n"
		   "\n"
		   "Files missing or shorter than needed are written with the pattern\n"
		   "byte(i) = (uint8_t)(((i * 2654435761u) >> 13) ^ (i >> 20)) before timing.\n"
		   "Writes without -V overwrite with the pattern of each thread's first offsets:\n"
		   "the file then no longer holds the pattern; run writes on a separate file.\n"
		   "Result: NVIDIA's line, then 'Extra:' with GB/s (10^9), p50/p99 latency and\n"
		   "CPU seconds (user+sys, whole process) per GB moved.  Async latency is the\n"
		   "time from enqueueing a group to its stream synchronisation.\n"
		   "Exit status: 0 ok, 1 I/O or verification failure, 2 usage, 3 not supported\n"
		   "by the library (async/batch).  OPENCUFILE_LIBCUDA overrides libcuda.so.1.\n");
}

int main(int argc, char **argv)
{
	int opt;
	o.ios[0] = 1 << 20, o.nios = 1;
	o.threads[0] = 1, o.nthreads = 1;
	while ((opt = getopt(argc, argv, "f:D:d:m:w:s:o:i:x:B:t:I:T:k:UONbVSC:G:ZL:Av:h")) != -1) {
		switch (opt) {
		case 'f':
			o.file = optarg;
			break;
		case 'D':
			o.dir = optarg;
			break;
		case 'd':
			o.gpu = atoi(optarg);
			break;
		case 'm':
			o.mem = atoi(optarg);
			if (o.mem < 0 || o.mem > 4)
				die_usage("-m must be 0..4");
			break;
		case 'w':
			parse_thread_list(optarg);
			break;
		case 's':
			if (parse_size(optarg, &o.size) || !o.size)
				die_usage("bad size '%s'", optarg);
			break;
		case 'o':
			if (parse_size(optarg, &o.offset))
				die_usage("bad offset '%s'", optarg);
			break;
		case 'i':
			parse_io_list(optarg);
			break;
		case 'x':
			o.xfer = atoi(optarg);
			if (o.xfer < 0 || o.xfer > 5)
				die_usage("-x must be 0..5");
			break;
		case 'B':
			o.depth = (unsigned)atoi(optarg);
			if (o.depth < 1 || o.depth > 65536)
				die_usage("-B must be 1..65536");
			break;
		case 't':
			o.batch_timeout = atof(optarg);
			break;
		case 'I':
			o.iotype = atoi(optarg);
			if (o.iotype < 0 || o.iotype > 3)
				die_usage("-I must be 0..3");
			break;
		case 'T':
			o.duration = atof(optarg);
			break;
		case 'k':
			o.seed = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'U':
			o.unaligned = 1;
			break;
		case 'O':
			o.odirect = 1;
			break;
		case 'N':
			o.odirect = 0;
			break;
		case 'b':
			o.skip_reg = 1;
			break;
		case 'V':
			o.verify = 1;
			break;
		case 'S':
			o.sweep = 1;
			break;
		case 'C':
			o.csv = optarg;
			break;
		case 'G':
			o.svg = optarg;
			break;
		case 'Z':
			o.prepare_only = 1;
			break;
		case 'L':
			o.driver_open_runs = atoi(optarg);
			if (o.driver_open_runs < 1)
				die_usage("-L needs a count >= 1");
			break;
		case 'A':
			o.shared = 1;
			break;
		case 'v': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 1024)
				die_usage("-v must be 1..1024");
			o.vec = (unsigned)v;
			break;
		}
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	is_tty = isatty(STDOUT_FILENO);

	have_cuda = cuda_dl_load(&cu, cuda_why, sizeof(cuda_why)) == 0;
	if (have_cuda) {
		/* The main thread holds a context too: cuFileDriverOpen and the
		 * banner run here. */
		CUcontext ctx;
		CUresult r = cuda_dl_bind(&cu, o.gpu, &ctx);
		if (r) {
			snprintf(cuda_why, sizeof(cuda_why), "GPU %d: %s (%d)", o.gpu, cuda_dl_errstr(&cu, r),
				 (int)r);
			have_cuda = 0;
		}
	}
	if (o.driver_open_runs)
		return measure_driver_open(o.driver_open_runs);

	if (!o.file == !o.dir)
		die_usage("give exactly one of -f FILE or -D DIR");
	if (o.xfer == X_CPU_GPU && o.mem != M_DEVICE && o.mem != M_VMM)
		die_usage("-x 2 (CPU_GPU) needs device memory (-m 0 or 1)");
	if (o.shared && (o.dir || group_mode()))
		die_usage("-A (one shared buffer) needs -f and a synchronous transfer (-x 0, 1 or 2)");
	if (o.vec && o.xfer != X_GPUD)
		die_usage("-v (cuFileReadv/Writev) needs -x 0");
	if (o.vec && resolve_vector_io() != 0) {
		fprintf(stderr, "gdsio: -v: the libcufile in use has no cuFileReadv/cuFileWritev (cuFile 1.19)\n");
		return 2;
	}
	for (int i = 0; o.vec && i < o.nios; i++)
		if (o.ios[i] < o.vec)
			die_usage("-v %u: IO size %zu has fewer bytes than pieces", o.vec, o.ios[i]);
	if (o.unaligned && o.odirect && !uses_cufile(o.xfer))
		fprintf(stderr,
			"gdsio: warning: -U with O_DIRECT and pread/pwrite will fail with EINVAL (use -N)\n");
	if (!o.size) {
		struct stat st;
		if (o.file && stat(o.file, &st) == 0 && (uint64_t)st.st_size > o.offset)
			o.size = (uint64_t)st.st_size - o.offset;
		else
			die_usage("-s SIZE is needed (the file does not exist yet)");
	}
	int maxthreads = 1;
	for (int i = 0; i < o.nthreads; i++)
		if (o.threads[i] > maxthreads)
			maxthreads = o.threads[i];
	if (o.file) {
		if (prepare_file(o.file, o.offset + o.size))
			return EXIT_FAIL;
	} else {
		for (int t = 0; t < maxthreads; t++) {
			char p[4096];
			file_for_thread(p, sizeof(p), t);
			if (prepare_file(p, o.offset + o.size))
				return EXIT_FAIL;
		}
	}
	if (o.prepare_only)
		return EXIT_OK;

	char eb[160];
	int driver_open = 0;
	double t_open = 0;
	if (uses_cufile(o.xfer)) {
		double t0 = now();
		CUfileError_t e = cuFileDriverOpen();
		t_open = now() - t0;
		if (e.err) {
			printf("# cuFileDriverOpen: %s\n", cufile_err(e, eb, sizeof(eb)));
			return EXIT_FAIL;
		}
		driver_open = 1;
	}
	print_banner();
	if (driver_open)
		printf("# cuFileDriverOpen took %.3f ms\n", t_open * 1e3);

	FILE *csv = NULL;
	if (o.csv) {
		csv = fopen(o.csv, "w");
		if (!csv) {
			fprintf(stderr, "gdsio: %s: %s\n", o.csv, strerror(errno));
			return EXIT_FAIL;
		}
		fprintf(csv, "io_type,xfer_type,memory,threads,io_size,bytes,seconds,gib_per_s,gb_per_s,avg_"
			     "lat_us,p50_us,"
			     "p99_us,ops,cpu_s_per_gb,status\n");
	}
	int nres = o.nios * o.nthreads;
	struct result *res = calloc((size_t)nres, sizeof(*res));
	if (!res)
		return EXIT_FAIL;
	int worst = ST_OK, k = 0;
	for (int ti = 0; ti < o.nthreads; ti++) {
		for (int ii = 0; ii < o.nios; ii++, k++) {
			run_one(o.ios[ii], o.threads[ti], &res[k]);
			print_result(&res[k]);
			if (csv)
				csv_row(csv, &res[k]);
			if (res[k].status > worst && res[k].status != ST_SKIPPED)
				worst = res[k].status;
			if (atomic_load(&abandon)) {
				/* I/O the library never completed may still target our
				 * buffers: leave without tearing anything down. */
				fflush(NULL);
				_exit(EXIT_FAIL);
			}
			if (res[k].status == ST_UNSUPPORTED)
				goto done;
		}
	}
done:
	if (csv)
		fclose(csv);
	if (o.svg) {
		if (write_svg(o.svg, res, k))
			fprintf(stderr, "gdsio: writing %s failed\n", o.svg);
		else
			printf("# chart: %s\n", o.svg);
	}
	free(res);
	if (driver_open)
		cuFileDriverClose();
	if (worst == ST_UNSUPPORTED)
		return EXIT_UNSUPPORTED;
	return worst == ST_OK ? EXIT_OK : EXIT_FAIL;
}
