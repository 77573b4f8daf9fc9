/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_api - libFuzzer target: random sequences of cuFile calls with random
 * arguments against the fake CUDA driver.
 *
 * The input is a program: each step is an opcode byte and the bytes its
 * arguments take (a reader hands out zeros once the input is used up).
 * Steps cover the whole API: driver open/close, handle registration
 * (descriptors of every kind, userspace file systems, NULL), buffer
 * registration, reads and writes, batch set-up/submit/status/cancel/
 * destroy, stream reads and writes, stream registration, parameters,
 * properties, statistics; plus moves the application can make around the
 * library: freeing device memory and getting the same address back (stale
 * registrations), and armed faults in the fake driver and the file side.
 * Handles and batch IDs are taken from what registration returned, stale
 * ones (deregistered, destroyed, from before a close) and forged values;
 * sizes and offsets from tables of edge values (0, block edges, SIZE_MAX,
 * SSIZE_MAX, negative, LLONG_MAX, overflow pairs) and from the input.
 *
 * The oracle: no crash, hang (libFuzzer -timeout) or sanitizer report, and
 * every call returns a defined result: a CUfileError_t of a defined code
 * (cu_err only with CU_FILE_CUDA_DRIVER_ERROR), a byte count no larger
 * than asked, -1 with an errno, or -CU_FILE_*; batch events with a defined
 * status, a cookie that was submitted, a count no larger than the entry's.
 * Host memory the library cannot size (unregistered) gets only ranges that
 * lie inside the fuzzer's allocations, as any caller must pass; ranges
 * beyond a registration or a device allocation are fair game, since the
 * library must refuse them (ASan and the fake's PROT_NONE device memory
 * catch any stray access).
 *
 * After each input every driver open is closed, every rule disarmed,
 * staged parameters restored and the files truncated, so an input replays
 * the same way alone.  Built with -DOPENCUFILE_FUZZ=ON and clang:
 *   build/tests/fuzz_api tests/fuzz/corpus_api -max_total_time=600 -timeout=20
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cufile.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"
#include "fault.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* A huge calloc the application asked for (SetUp of the largest batch,
 * say) must come back NULL to the library, not end the run. */
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

#define CHECK(cond)                                                                                          \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "fuzz_api: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
			abort();                                                                             \
		}                                                                                            \
	} while (0)

/* ------------------------------------------------------------ input reader */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		v <<= 8;
		if (in->n) {
			v |= *in->p++;
			in->n--;
		}
	}
	return v;
}

static unsigned u8(struct in *in) { return (unsigned)take(in, 1); }
static unsigned pick(struct in *in, unsigned n) { return n ? u8(in) % n : 0; }

/* ------------------------------------------------------------------ state */

#define FILE_LEN (256 * 1024)
#define NHOST 5
#define NDEV 4
#define NHANDLES 8
#define NBATCH 4
#define NSTREAMS 2
#define MAX_ENTRIES 300

static int fd_rw, fd_direct, fd_ro, fd_wo, fd_dir, fd_pipe, fd_null, fd_path, fd_append, fd_nonblock;

struct hostbuf {
	uint8_t *p;
	size_t len;
	size_t reg_len; /* registered at p with this length by us; 0: not */
};
static struct hostbuf host[NHOST];

struct devbuf {
	CUdeviceptr p;
	size_t len;
	CUcontext ctx;
};
static struct devbuf dev[NDEV];

static uint8_t *forged_region; /* PROT_NONE: forged pointers point here */
#define FORGED_LEN (1024 * 1024)

static CUcontext ctx0, ctx1;
static CUstream streams[NSTREAMS];
static CUfileHandle_t handles[NHANDLES];
static CUfileBatchHandle_t batches[NBATCH];

/* Parameter values at start, restored after every input. */
static size_t saved_size[CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS + 1];
static bool saved_bool[CUFILE_PARAM_STREAM_MEMOPS_BYPASS + 1];
static char saved_str[CUFILE_PARAM_LOG_DIR + 1][4096];
static size_t saved_slab_size[16], saved_slab_count[16];
static int saved_slab_len;
static int saved_stats_level;

/* ---------------------------------------------------- userspace file system */

static pthread_mutex_t memfs_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t memfs[FILE_LEN];

static ssize_t memfs_read(const void *h, char *buf, size_t n, loff_t off, const cufileRDMAInfo_t *r)
{
	(void)h;
	(void)r;
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	if ((uint64_t)off >= FILE_LEN)
		return 0;
	size_t k = n < FILE_LEN - (size_t)off ? n : FILE_LEN - (size_t)off;
	pthread_mutex_lock(&memfs_lock);
	memcpy(buf, memfs + off, k);
	pthread_mutex_unlock(&memfs_lock);
	return (ssize_t)k;
}

static ssize_t memfs_write(const void *h, const char *buf, size_t n, loff_t off, const cufileRDMAInfo_t *r)
{
	(void)h;
	(void)r;
	if (off < 0 || (uint64_t)off >= FILE_LEN) {
		errno = off < 0 ? EINVAL : ENOSPC;
		return -1;
	}
	size_t k = n < FILE_LEN - (size_t)off ? n : FILE_LEN - (size_t)off;
	pthread_mutex_lock(&memfs_lock);
	memcpy(memfs + off, buf, k);
	pthread_mutex_unlock(&memfs_lock);
	return (ssize_t)k;
}

static const char *memfs_type(const void *h)
{
	(void)h;
	return "fuzzfs";
}

static const CUfileFSOps_t memfs_ops = {.fs_type = memfs_type, .read = memfs_read, .write = memfs_write};
static const CUfileFSOps_t memfs_ops_noread = {.fs_type = memfs_type, .write = memfs_write};

/* --------------------------------------------------------------- oracles */

static bool defined_code(int err)
{
	return err == CU_FILE_SUCCESS ||
	       (err > CUFILEOP_BASE_ERR && err <= CU_FILE_IO_MAX_ERROR && err != CUFILEOP_BASE_ERR + 21 &&
		err != CUFILEOP_BASE_ERR + 32);
}

static CUfileError_t st_check(CUfileError_t st)
{
	CHECK(defined_code(st.err));
	CHECK(st.err == CU_FILE_CUDA_DRIVER_ERROR || st.cu_err == CUDA_SUCCESS);
	return st;
}

/* An I/O result in the internal convention (bytes, -errno, -CU_FILE_*). */
static void result_check(long r, size_t asked)
{
	if (r >= 0)
		CHECK((size_t)r <= asked);
	else if (r <= -CUFILEOP_BASE_ERR)
		CHECK(defined_code((int)-r) && -r != CU_FILE_SUCCESS);
	else
		CHECK(r >= -4095);
}

static void io_ret_check(ssize_t r, int err, size_t asked)
{
	if (r == -1) {
		CHECK(err > 0 && err < 4096);
		return;
	}
	CHECK(r >= 0 || r <= -CUFILEOP_BASE_ERR);
	result_check(r, asked);
}

/* ------------------------------------------------------- argument choices */

static const size_t size_edges[] = {0,       1,        7,       511,        512,           4095,
				    4096,    4097,     65535,   65536,      65537,         1 << 20,
				    3 << 20, SIZE_MAX, SSIZE_MAX, (size_t)SSIZE_MAX + 1, (size_t)1 << 32};
static const long long off_edges[] = {0,         1,         3,          4095,      4096,       4097,
				      65536,     FILE_LEN,  FILE_LEN - 1, -1,      -4096,      LLONG_MAX,
				      LLONG_MIN, LLONG_MAX - 4095, (long long)1 << 40, (long long)1 << 62};

static size_t any_size(struct in *in)
{
	unsigned c = u8(in);
	if (c < 200)
		return size_edges[c % (sizeof(size_edges) / sizeof(size_edges[0]))];
	return (size_t)take(in, 3);
}

static off_t any_off(struct in *in)
{
	unsigned c = u8(in);
	if (c < 200)
		return (off_t)off_edges[c % (sizeof(off_edges) / sizeof(off_edges[0]))];
	return (off_t)take(in, 3);
}

static CUfileHandle_t any_handle(struct in *in)
{
	unsigned c = u8(in);
	if (c < 192)
		return handles[c % NHANDLES]; /* live, stale or NULL */
	switch (c % 6) {
	case 0: return NULL;
	case 1: return (CUfileHandle_t)(uintptr_t)1;
	case 2: return (CUfileHandle_t)(uintptr_t)take(in, 8); /* anything */
	case 3: return (CUfileHandle_t)((uintptr_t)handles[0] ^ ((uintptr_t)1 << 24)); /* other generation */
	case 4: return (CUfileHandle_t)((uintptr_t)handles[1] + 1); /* next slot */
	default: return (CUfileHandle_t)&handles[0]; /* a real pointer to memory */
	}
}

static CUfileBatchHandle_t any_batch(struct in *in)
{
	unsigned c = u8(in);
	if (c < 200)
		return batches[c % NBATCH];
	switch (c % 4) {
	case 0: return NULL;
	case 1: return (CUfileBatchHandle_t)(uintptr_t)take(in, 8);
	case 2: return (CUfileBatchHandle_t)((uintptr_t)batches[0] ^ ((uintptr_t)1 << 24));
	default: return (CUfileBatchHandle_t)&batches[0];
	}
}

/* An I/O target: a buffer, an offset into it and a size.  Unregistered
 * host memory gets only ranges inside the allocation; registered host
 * memory and device memory get anything (the library knows their size).
 * Not registered host memory for I/O that runs later (batch entries, stream
 * operations): the registration that governs is the one when it runs, and
 * a later step may deregister the buffer first. */
struct target {
	void *base;
	size_t size;
	off_t boff;
};

static void any_target(struct in *in, struct target *t, bool now)
{
	unsigned c = u8(in);
	if (c % 2 == 0) {
		struct hostbuf *h = &host[(c / 2) % NHOST];
		t->base = h->p;
		if (now && h->reg_len && u8(in) < 128) {
			t->size = any_size(in);
			t->boff = any_off(in);
			return;
		}
		unsigned m = u8(in);
		if (m < 16) { /* negative offset: refused before any access */
			t->boff = -(off_t)(1 + take(in, 2));
			t->size = take(in, 2) % (h->len + 1);
			return;
		}
		t->boff = (off_t)(take(in, 3) % (h->len + 1));
		size_t room = h->len - (size_t)t->boff;
		t->size = m < 64 ? room : take(in, 3) % (room + 1);
	} else {
		struct devbuf *d = &dev[(c / 2) % NDEV];
		t->base = (void *)(uintptr_t)d->p;
		unsigned m = u8(in);
		if (m < 100) {
			t->boff = (off_t)(take(in, 3) % (d->len + 1));
			t->size = take(in, 3) % (d->len - (size_t)t->boff + 1);
		} else {
			t->boff = any_off(in);
			t->size = any_size(in);
		}
	}
}

/* A pointer for registration calls: buffers, interior pointers, forged
 * addresses (in a PROT_NONE region, or small numbers), NULL. */
static void any_reg_ptr(struct in *in, void **p, size_t *len, struct hostbuf **hb)
{
	unsigned c = u8(in);
	*hb = NULL;
	switch (c % 6) {
	case 0:
	case 1: {
		struct hostbuf *h = &host[(c / 6) % NHOST];
		*p = h->p;
		*len = u8(in) < 200 ? h->len : take(in, 3) % (h->len + 1);
		*hb = h;
		return;
	}
	case 2:
	case 3: {
		struct devbuf *d = &dev[(c / 6) % NDEV];
		size_t off = u8(in) < 128 ? 0 : take(in, 3) % (d->len + 1);
		*p = (void *)(uintptr_t)(d->p + off);
		*len = u8(in) < 128 ? d->len - off : any_size(in);
		return;
	}
	case 4: {
		size_t off = take(in, 3) % FORGED_LEN;
		*p = forged_region + off;
		*len = u8(in) < 128 ? take(in, 3) % (FORGED_LEN - off + 1) : (size_t)-1 - take(in, 1);
		return;
	}
	default:
		*p = u8(in) < 128 ? NULL : (void *)(uintptr_t)(1 + take(in, 1));
		*len = any_size(in);
		return;
	}
}

/* ------------------------------------------------------------------ steps */

static void step_register_handle(struct in *in)
{
	CUfileDescr_t d;
	memset(&d, 0, sizeof(d));
	unsigned c = u8(in);
	const int fds[] = {fd_rw, fd_direct, fd_ro, fd_wo, fd_dir, fd_pipe, fd_null, fd_path, fd_append, fd_nonblock,
			   -1, 1000};
	d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	d.handle.fd = fds[c % (sizeof(fds) / sizeof(fds[0]))];
	unsigned t = u8(in);
	if (t >= 224) {
		d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
		d.handle.handle = (void *)(uintptr_t)(1 + t % 3);
		d.fs_ops = t % 4 == 0 ? NULL : t % 4 == 1 ? &memfs_ops_noread : &memfs_ops;
	} else if (t >= 208) {
		d.type = (enum CUfileFileHandleType)(t % 8); /* WIN32, unknown */
	}
	CUfileHandle_t fh = NULL;
	unsigned slot = pick(in, NHANDLES);
	unsigned nulls = u8(in);
	CUfileError_t st = st_check(cuFileHandleRegister(nulls == 1 ? NULL : &fh, nulls == 2 ? NULL : &d));
	if (st.err == CU_FILE_SUCCESS) {
		CHECK(fh != NULL);
		handles[slot] = fh; /* the old one may stay registered: it leaks until close, as it may */
	}
}

static void step_io(struct in *in, bool write)
{
	CUfileHandle_t fh = any_handle(in);
	struct target t;
	any_target(in, &t, true);
	off_t foff = any_off(in);
	errno = 0;
	ssize_t r = write ? cuFileWrite(fh, t.base, t.size, foff, t.boff) : cuFileRead(fh, t.base, t.size, foff, t.boff);
	io_ret_check(r, errno, t.size);
}

static void step_buf_register(struct in *in)
{
	void *p;
	size_t len;
	struct hostbuf *hb;
	any_reg_ptr(in, &p, &len, &hb);
	int flags = (int)take(in, 1) - 64;
	CUfileError_t st = st_check(cuFileBufRegister(p, len, flags));
	if (st.err == CU_FILE_SUCCESS && hb)
		hb->reg_len = len;
}

static void step_buf_deregister(struct in *in)
{
	void *p;
	size_t len;
	struct hostbuf *hb;
	any_reg_ptr(in, &p, &len, &hb);
	CUfileError_t st = st_check(cuFileBufDeregister(p));
	if (st.err == CU_FILE_SUCCESS && hb)
		hb->reg_len = 0;
}

/* Cookies of submitted entries: 0x1000 + index into the params array. */
static CUfileIOParams_t params[MAX_ENTRIES];
static CUfileIOEvents_t events[MAX_ENTRIES];

static void step_batch(struct in *in)
{
	unsigned op = pick(in, 5);
	unsigned slot = pick(in, NBATCH);
	switch (op) {
	case 0: {
		unsigned nr = u8(in) < 200 ? 1 + pick(in, 16) : (unsigned)take(in, 2);
		CUfileBatchHandle_t b = NULL;
		CUfileError_t st = st_check(cuFileBatchIOSetUp(u8(in) == 7 ? NULL : &b, nr));
		if (st.err == CU_FILE_SUCCESS)
			batches[slot] = b;
		break;
	}
	case 1: {
		unsigned nr = u8(in) < 230 ? 1 + pick(in, 8) : (unsigned)take(in, 2) % (MAX_ENTRIES + 1);
		for (unsigned i = 0; i < nr && i < MAX_ENTRIES; i++) {
			CUfileIOParams_t *p = &params[i];
			memset(p, 0, sizeof(*p));
			unsigned m = u8(in);
			p->mode = m < 240 ? CUFILE_BATCH : (CUfileBatchMode_t)(m % 4);
			unsigned o = u8(in);
			p->opcode = o < 240 ? (CUfileOpcode_t)(o % 2) : (CUfileOpcode_t)(o % 5);
			p->fh = any_handle(in);
			struct target t;
			any_target(in, &t, false);
			p->u.batch.devPtr_base = t.base;
			p->u.batch.devPtr_offset = t.boff;
			p->u.batch.size = t.size;
			p->u.batch.file_offset = any_off(in);
			p->cookie = (void *)(uintptr_t)(0x1000 + i);
		}
		st_check(cuFileBatchIOSubmit(any_batch(in), nr, u8(in) == 3 ? NULL : params, (unsigned)take(in, 1)));
		break;
	}
	case 2: {
		unsigned nr = pick(in, 20);
		unsigned min_nr = u8(in) < 200 ? pick(in, 20) : (unsigned)take(in, 4);
		struct timespec ts[] = {{0, 0}, {0, 1000000}, {-1, -1}, {0, 2000000000L}, {0, 100000}};
		unsigned tc = pick(in, 6);
		/* NULL waits for min(min_nr, nr, outstanding): entries always
		 * finish, so this returns. */
		struct timespec *tp = tc == 5 ? NULL : &ts[tc];
		unsigned in_nr = nr;
		unsigned ptrs = u8(in);
		CUfileError_t st = st_check(cuFileBatchIOGetStatus(any_batch(in), min_nr, ptrs == 1 ? NULL : &nr,
								   ptrs == 2 ? NULL : events, tp));
		if (st.err == CU_FILE_SUCCESS && ptrs != 1) {
			CHECK(nr <= in_nr);
			for (unsigned i = 0; i < nr; i++) {
				uintptr_t ck = (uintptr_t)events[i].cookie;
				CHECK(ck >= 0x1000 && ck < 0x1000 + MAX_ENTRIES);
				CHECK(events[i].status == CUFILE_COMPLETE || events[i].status == CUFILE_FAILED ||
				      events[i].status == CUFILE_CANCELED);
				if (events[i].status == CUFILE_FAILED)
					result_check((long)(ssize_t)events[i].ret, 0);
				if (events[i].status == CUFILE_CANCELED)
					CHECK(events[i].ret == 0);
			}
		}
		break;
	}
	case 3: st_check(cuFileBatchIOCancel(any_batch(in))); break;
	default: cuFileBatchIODestroy(any_batch(in)); break;
	}
}

/* Parameters of stream operations live until the streams are synchronised
 * (the library reads some of them when the stream reaches the operation). */
#define NASYNC 64
static struct {
	size_t size;
	off_t foff, boff;
	ssize_t bytes;
	size_t asked;
	bool queued;
} aops[NASYNC];
static unsigned naops;
/* A copy armed to fail on the GPU (a deferred rule) since the last
 * synchronisation: a GPU-memory stream operation queues its copies on the
 * application's stream, so the stream reports that failure itself. */
static bool gpu_copy_fault_armed;

static void sync_streams(void)
{
	fakecuda_reset_faults(); /* armed rules are for the library's calls */
	for (int i = 0; i < NSTREAMS; i++) {
		CUresult r = cuStreamSynchronize(streams[i]);
		CHECK(r == CUDA_SUCCESS || (gpu_copy_fault_armed && r == CUDA_ERROR_ECC_UNCORRECTABLE));
	}
	gpu_copy_fault_armed = false;
	for (unsigned i = 0; i < naops; i++)
		if (aops[i].queued)
			result_check(aops[i].bytes, aops[i].asked);
	naops = 0;
}

static void step_async(struct in *in)
{
	if (naops == NASYNC)
		sync_streams();
	unsigned c = u8(in);
	CUstream s = c % 4 == 3 ? NULL : streams[c % NSTREAMS];
	bool write = (c / 4) % 2;
	CUfileHandle_t fh = any_handle(in);
	struct target t;
	any_target(in, &t, s == NULL);
	unsigned i = naops++;
	aops[i].size = t.size;
	aops[i].asked = t.size;
	aops[i].boff = t.boff;
	aops[i].foff = any_off(in);
	aops[i].bytes = -4242;
	aops[i].queued = false;
	unsigned nulls = u8(in);
	size_t *sp = nulls == 1 ? NULL : &aops[i].size;
	ssize_t *bp = nulls == 2 ? NULL : &aops[i].bytes;
	CUfileError_t st = st_check(write ? cuFileWriteAsync(fh, t.base, sp, &aops[i].foff, &aops[i].boff, bp, s)
					  : cuFileReadAsync(fh, t.base, sp, &aops[i].foff, &aops[i].boff, bp, s));
	if (st.err == CU_FILE_SUCCESS) {
		aops[i].queued = true;
		if (!s && aops[i].bytes == -1)
			aops[i].bytes = -errno; /* synchronous: -1 with errno */
	}
}

static void step_stream_register(struct in *in)
{
	unsigned c = u8(in);
	CUstream s = c % 4 == 3 ? (CUstream)(uintptr_t)take(in, 8) : streams[c % NSTREAMS];
	if (u8(in) < 128)
		st_check(cuFileStreamRegister(s, (unsigned)take(in, 1) % 32));
	else
		st_check(cuFileStreamDeregister(s));
}

static const char *const strings[] = {"", "ERROR", "TRACE", "DEBUG", "bogus", "fuzz_api_cufile.log", ".",
				      "/nonexistent/dir"};

static void step_params(struct in *in)
{
	unsigned op = pick(in, 9);
	int param = (int)take(in, 1) - 8; /* -8 .. 247: mostly out of range */
	if (u8(in) < 200)
		param = (int)pick(in, 13);
	size_t v = 0, lo = 0, hi = 0;
	bool b = false;
	char str[64];
	unsigned nulls = u8(in);
	switch (op) {
	case 0: st_check(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)param, nulls == 1 ? NULL : &v)); break;
	case 1: st_check(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)param, any_size(in))); break;
	case 2: st_check(cuFileGetParameterBool((CUFileBoolConfigParameter_t)param, nulls == 1 ? NULL : &b)); break;
	case 3: st_check(cuFileSetParameterBool((CUFileBoolConfigParameter_t)param, u8(in) & 1)); break;
	case 4: {
		int len = u8(in) < 200 ? (int)pick(in, sizeof(str) + 1) : (int)take(in, 4);
		if (len > (int)sizeof(str))
			len = (int)sizeof(str);
		st_check(cuFileGetParameterString((CUFileStringConfigParameter_t)param, nulls == 1 ? NULL : str, len));
		break;
	}
	case 5: {
		const char *s = nulls == 1 ? NULL : strings[pick(in, sizeof(strings) / sizeof(strings[0]))];
		st_check(cuFileSetParameterString((CUFileStringConfigParameter_t)param, s));
		break;
	}
	case 6:
		st_check(cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)param, nulls == 1 ? NULL : &lo,
						       nulls == 2 ? NULL : &hi));
		break;
	case 7: {
		size_t sz[20], cnt[20];
		int len = (int)take(in, 1) - 4;
		for (int i = 0; i < 20; i++) {
			sz[i] = u8(in) < 128 ? (size_t)4 << pick(in, 16) : any_size(in);
			cnt[i] = pick(in, 200);
		}
		if (len > 20)
			len = 20;
		st_check(cuFileSetParameterPosixPoolSlabArray(nulls == 1 ? NULL : sz, nulls == 2 ? NULL : cnt, len));
		break;
	}
	default: {
		size_t sz[20], cnt[20];
		int len = (int)take(in, 1) - 4;
		if (len > 20)
			len = 20;
		st_check(cuFileGetParameterPosixPoolSlabArray(nulls == 1 ? NULL : sz, nulls == 2 ? NULL : cnt, len));
		break;
	}
	}
}

static void step_props_stats(struct in *in)
{
	unsigned op = pick(in, 14);
	unsigned nulls = u8(in);
	switch (op) {
	case 0: {
		CUfileDrvProps_t p;
		st_check(cuFileDriverGetProperties(nulls == 1 ? NULL : &p));
		break;
	}
	case 1: st_check(cuFileDriverSetPollMode(u8(in) & 1, any_size(in))); break;
	case 2: st_check(cuFileDriverSetMaxDirectIOSize(any_size(in))); break;
	case 3: st_check(cuFileDriverSetMaxCacheSize(any_size(in))); break;
	case 4: st_check(cuFileDriverSetMaxPinnedMemSize(any_size(in))); break;
	case 5: st_check(cuFileSetStatsLevel((int)take(in, 1) - 2)); break;
	case 6: {
		int l;
		st_check(cuFileGetStatsLevel(nulls == 1 ? NULL : &l));
		break;
	}
	case 7: st_check(cuFileStatsStart()); break;
	case 8: st_check(cuFileStatsStop()); break;
	case 9: st_check(cuFileStatsReset()); break;
	case 10: {
		static CUfileStatsLevel1_t s1;
		st_check(cuFileGetStatsL1(nulls == 1 ? NULL : &s1));
		break;
	}
	case 11: {
		static CUfileStatsLevel2_t s2;
		st_check(cuFileGetStatsL2(nulls == 1 ? NULL : &s2));
		break;
	}
	case 12: {
		static CUfileStatsLevel3_t s3;
		st_check(cuFileGetStatsL3(nulls == 1 ? NULL : &s3));
		break;
	}
	default: {
		size_t bar;
		int v;
		st_check(cuFileGetBARSizeInKB((int)take(in, 1) - 4, nulls == 1 ? NULL : &bar));
		st_check(cuFileGetVersion(nulls == 2 ? NULL : &v));
		CHECK(cuFileUseCount() >= 0);
		break;
	}
	}
}

/* The application frees device memory (without deregistering) and gets the
 * same address back from the next allocation: a stale registration.  Like
 * any application it frees memory only when no I/O on it is pending: the
 * streams are synchronised and every batch entry reaped first. */
static void step_realloc_device(struct in *in)
{
	struct devbuf *d = &dev[pick(in, NDEV)];
	sync_streams();
	for (int i = 0; i < NBATCH; i++) {
		unsigned nr = MAX_ENTRIES;
		st_check(cuFileBatchIOGetStatus(batches[i], MAX_ENTRIES, &nr, events, NULL));
	}
	fakecuda_reset_faults(); /* armed rules are for the library's calls */
	CHECK(cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS);
	CHECK(cuMemFree(d->p) == CUDA_SUCCESS);
	CUdeviceptr np;
	CHECK(cuMemAlloc(&np, d->len) == CUDA_SUCCESS);
	d->p = np;
	CUcontext c;
	CHECK(cuCtxPopCurrent(&c) == CUDA_SUCCESS);
}

static const char *const cuda_fns[] = {"cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoD_v2",
				       "cuMemcpyDtoH_v2",      "cuMemHostAlloc",       "cuStreamCreate",
				       "cuEventCreate",        "cuEventSynchronize",   "cuEventRecord",
				       "cuPointerGetAttributes", "cuPointerGetAttribute", "cuLaunchHostFunc",
				       "cuStreamWaitValue32_v2", "cuStreamSynchronize", "cuCtxPushCurrent_v2",
				       "cuDevicePrimaryCtxRetain"};

static void step_fault(struct in *in)
{
	unsigned c = u8(in);
	unsigned long nth = 1 + pick(in, 8);
	if (c < 128) {
		const char *fn = cuda_fns[c % (sizeof(cuda_fns) / sizeof(cuda_fns[0]))];
		if (c & 64) {
			fakecuda_fail_nth_deferred(fn, nth, CUDA_ERROR_ECC_UNCORRECTABLE);
			gpu_copy_fault_armed = true;
		} else
			fakecuda_fail_nth(fn, nth, CUDA_ERROR_OUT_OF_MEMORY);
	} else {
		const int errs[] = {EIO, EINTR, ENOSPC, EAGAIN, ENOMEM, EBADF};
		enum ocf_fault_call call = (enum ocf_fault_call)(c % OCF_FAULT_NCALLS);
		unsigned e = pick(in, 7);
		if (e == 6)
			ocf_fault_short_nth(call, nth, 1 + pick(in, 3), 1 + take(in, 2));
		else
			ocf_fault_fail_nth(call, nth, 1 + pick(in, 3), errs[e]);
	}
}

/* ------------------------------------------------------------ set-up, reset */

static int xopen(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	return fd;
}

static void fill_file(int fd)
{
	static uint8_t pat[FILE_LEN];
	for (size_t i = 0; i < FILE_LEN; i++)
		pat[i] = (uint8_t)(i * 31 + (i >> 12));
	CHECK(ftruncate(fd, 0) == 0);
	CHECK(pwrite(fd, pat, FILE_LEN, 0) == FILE_LEN);
}

static void save_params(void)
{
	for (int p = 0; p <= CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS; p++)
		CHECK(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)p, &saved_size[p]).err == CU_FILE_SUCCESS);
	for (int p = 0; p <= CUFILE_PARAM_STREAM_MEMOPS_BYPASS; p++)
		CHECK(cuFileGetParameterBool((CUFileBoolConfigParameter_t)p, &saved_bool[p]).err == CU_FILE_SUCCESS);
	for (int p = 0; p <= CUFILE_PARAM_LOG_DIR; p++)
		CHECK(cuFileGetParameterString((CUFileStringConfigParameter_t)p, saved_str[p], sizeof(saved_str[p])).err ==
		      CU_FILE_SUCCESS);
	for (saved_slab_len = 16; saved_slab_len > 0; saved_slab_len--)
		if (cuFileGetParameterPosixPoolSlabArray(saved_slab_size, saved_slab_count, saved_slab_len).err ==
		    CU_FILE_SUCCESS)
			break;
	CHECK(cuFileGetStatsLevel(&saved_stats_level).err == CU_FILE_SUCCESS);
}

/* With the driver closed: every staged value back to what it was. */
static void restore_params(void)
{
	for (int p = 0; p <= CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS; p++)
		cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)p, saved_size[p]);
	for (int p = 0; p <= CUFILE_PARAM_STREAM_MEMOPS_BYPASS; p++)
		cuFileSetParameterBool((CUFileBoolConfigParameter_t)p, saved_bool[p]);
	for (int p = 0; p <= CUFILE_PARAM_LOG_DIR; p++)
		cuFileSetParameterString((CUFileStringConfigParameter_t)p, saved_str[p]);
	if (saved_slab_len)
		cuFileSetParameterPosixPoolSlabArray(saved_slab_size, saved_slab_count, saved_slab_len);
	cuFileSetStatsLevel(saved_stats_level);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("OPENCUFILE_LIBCUDA", FAKECUDA_PATH, 1);
	setenv("CUFILE_ENV_PATH_JSON", "/nonexistent/cufile.json", 1);
	setenv("CUFILE_LOGFILE_PATH", "fuzz_api_cufile.log", 0);
	setenv("CUFILE_LOGGING_LEVEL", "NOTICE", 0);
	setenv("OPENCUFILE_PREWARM", "0", 1);
	setenv("OPENCUFILE_CHUNK_KB", "64", 1);
	setenv("OPENCUFILE_IO_THREADS", "2", 1);
	setenv("OPENCUFILE_ASYNC_THREADS", "2", 1);

	CHECK(cuInit(0) == CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&ctx1, 1) == CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&ctx0, 0) == CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(ctx0) == CUDA_SUCCESS);

	/* Files in the working directory (tmpfs refuses O_DIRECT), unlinked
	 * at once: the descriptors keep them. */
	char path[64];
	snprintf(path, sizeof(path), "fuzz_api_%d.dat", (int)getpid());
	fd_rw = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
	fill_file(fd_rw);
	fd_direct = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd_direct < 0)
		fd_direct = xopen(path, O_RDWR);
	fd_ro = xopen(path, O_RDONLY);
	fd_wo = xopen(path, O_WRONLY);
	fd_append = xopen(path, O_RDWR | O_APPEND);
	fd_nonblock = xopen(path, O_RDWR | O_NONBLOCK);
	fd_path = xopen(path, O_PATH);
	unlink(path);
	fd_dir = xopen(".", O_RDONLY | O_DIRECTORY);
	fd_null = xopen("/dev/null", O_RDWR);
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	fd_pipe = pfd[0];

	const size_t hlen[NHOST - 1] = {1, 4096 + 13, 64 * 1024, 1024 * 1024 + 7};
	for (int i = 0; i < NHOST - 1; i++) {
		host[i].len = hlen[i];
		host[i].p = malloc(hlen[i]);
		CHECK(host[i].p != NULL);
		memset(host[i].p, 0x5A, hlen[i]);
	}
	host[NHOST - 1].len = 256 * 1024;
	CHECK(cuMemHostAlloc((void **)&host[NHOST - 1].p, host[NHOST - 1].len, 0) == CUDA_SUCCESS);

	const size_t dlen[NDEV] = {4096, 64 * 1024 + 1, 1024 * 1024, 3 * 1024 * 1024};
	for (int i = 0; i < NDEV; i++) {
		dev[i].len = dlen[i];
		dev[i].ctx = i == 2 ? ctx1 : ctx0; /* one on the second GPU */
		CHECK(cuCtxPushCurrent(dev[i].ctx) == CUDA_SUCCESS);
		CHECK(cuMemAlloc(&dev[i].p, dlen[i]) == CUDA_SUCCESS);
		CUcontext c;
		CHECK(cuCtxPopCurrent(&c) == CUDA_SUCCESS);
	}
	forged_region = mmap(NULL, FORGED_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(forged_region != MAP_FAILED);
	for (int i = 0; i < NSTREAMS; i++)
		CHECK(cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
	save_params();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	int steps = 0;
	while (in.n && steps++ < 64) {
		switch (u8(&in) % 16) {
		case 0: st_check(cuFileDriverOpen()); break;
		case 1: st_check(cuFileDriverClose()); break;
		case 2: step_register_handle(&in); break;
		case 3: cuFileHandleDeregister(any_handle(&in)); break;
		case 4: step_buf_register(&in); break;
		case 5: step_buf_deregister(&in); break;
		case 6: step_io(&in, false); break;
		case 7: step_io(&in, true); break;
		case 8:
		case 9: step_batch(&in); break;
		case 10: step_async(&in); break;
		case 11: step_stream_register(&in); break;
		case 12: step_params(&in); break;
		case 13: step_props_stats(&in); break;
		case 14: step_realloc_device(&in); break;
		default: step_fault(&in); break;
		}
		if (cuFileUseCount() == 0)
			for (int i = 0; i < NHOST; i++)
				host[i].reg_len = 0; /* a close deregisters everything */
	}
	/* Back to the starting state: the input replays the same alone. */
	fakecuda_reset_faults();
	ocf_fault_reset();
	sync_streams();
	for (int i = 0; i < 1000 && cuFileDriverClose().err == CU_FILE_SUCCESS; i++)
		;
	CHECK(cuFileUseCount() == 0);
	for (int i = 0; i < NHOST; i++)
		host[i].reg_len = 0;
	restore_params();
	CHECK(ftruncate(fd_rw, FILE_LEN) == 0);
	return 0;
}
