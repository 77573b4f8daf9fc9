/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver, fault-injection library) Fault injection as a test method,
 * SQLite-style.  For one API family (argv[1]) and each fault kind that can
 * reach it — the file side's system calls (src/fault.h: EIO, short
 * transfers, EINTR, ENOSPC, io_uring completions, open/fstat/fcntl at
 * registration), the fake CUDA driver (host<->device copies refused or
 * failing on the GPU, pinned allocation, stream and event creation,
 * pointer queries) and the library's own allocations (malloc_fault.h) —
 * make the 1st, 2nd, 3rd ... such call fail, until the family's call no
 * longer reaches the fault.  Every time, in a session of its own
 * (driver open ... close):
 *   - the result is the documented one: the error the fault maps to (for
 *     cuFileRead/cuFileWrite -1 with errno, or -CU_FILE_*; in batch events
 *     and stream byte counts the negative value; for CUfileError_t calls the
 *     status), a prefix of the bytes when some moved before the fault, or
 *     success where the library copes (EINTR and short transfers are
 *     retried; an optional resource it can do without);
 *   - nothing outside the caller's range changed: guard bytes around the
 *     buffer, file bytes around the written range, the file length; bytes
 *     reported as moved are correct, and the others in the range hold
 *     either the old or the new value, never anything else;
 *   - the next call on the same handle and buffer works, with correct data;
 *   - after the close, the library's pinned memory, streams, events, device
 *     allocations, file descriptors and malloc'd blocks are back to where
 *     they were: nothing leaked;
 *   - nothing hangs (a watchdog fails the test): no lock was left held and
 *     no in-flight count was left raised, or the close would wait forever.
 * Each cell's tally (faults hit; documented errors, partial results,
 * absorbed) is printed: docs/reliability.md holds the table.
 *
 * Families: read write bufregister handleregister driveropen batch async.
 */
#include "test.h"
#include "fakecuda.h"
#include "fault.h"
#include "malloc_fault.h"

#include <signal.h>

#define MAX_NTH 400
#define WATCHDOG_S 60
#define GUARD 4096
#define FLEN (1 * T_MIB)
/* Batch and stream writes go to the second half of the file. */
#define WRITE_AREA (FLEN / 2)
#define SEED_OLD 0
#define SEED_NEW 7

/* ------------------------------------------------------------ fault kinds */

enum src { SRC_NONE, SRC_FILE, SRC_CUDA, SRC_CUDA_DEFERRED, SRC_MALLOC };

struct kind {
	const char *name;
	enum src src;
	enum ocf_fault_call call; /* SRC_FILE */
	int err;                  /* SRC_FILE: errno to inject; 0: short */
	const char *fn;           /* SRC_CUDA*: driver function */
	/* The internal result (-errno or -CU_FILE_*) a call reports when the
	 * fault shows; 0: the library retries, the call must succeed. */
	long expect;
	/* The call may also succeed: the library can do without the resource
	 * (an engine helper without a lane, a registration without its
	 * buffered twin, a background pre-pinning that failed). */
	bool may_absorb;
	unsigned families; /* F* bits: the families it can reach */
	bool device_only;  /* read/write: only with device memory */
};

#define CUERR(c) (-(long)(c))

/* Families a kind is run against (bit per enum family). */
#define FR (1u << 0)  /* read */
#define FW (1u << 1)  /* write */
#define FBR (1u << 2) /* bufregister */
#define FHR (1u << 3) /* handleregister */
#define FDO (1u << 4) /* driveropen */
#define FB (1u << 5)  /* batch */
#define FA (1u << 6)  /* async */
#define FALL 0x7fu

static const struct kind kinds[] = {
	{"pread EIO", SRC_FILE, OCF_FAULT_PREAD, EIO, NULL, -EIO, false, FR | FB | FA, false},
	{"pread short", SRC_FILE, OCF_FAULT_PREAD, 0, NULL, 0, false, FR | FB | FA, false},
	{"pread EINTR", SRC_FILE, OCF_FAULT_PREAD, EINTR, NULL, 0, false, FR | FB | FA, false},
	{"pwrite EIO", SRC_FILE, OCF_FAULT_PWRITE, EIO, NULL, -EIO, false, FW | FB | FA, false},
	{"pwrite ENOSPC", SRC_FILE, OCF_FAULT_PWRITE, ENOSPC, NULL, -ENOSPC, false, FW | FB | FA, false},
	{"pwrite short", SRC_FILE, OCF_FAULT_PWRITE, 0, NULL, 0, false, FW | FB | FA, false},
	{"pwrite EINTR", SRC_FILE, OCF_FAULT_PWRITE, EINTR, NULL, 0, false, FW | FB | FA, false},
	{"io_uring EAGAIN", SRC_FILE, OCF_FAULT_URING, EAGAIN, NULL, 0, false, FR | FW | FB | FA, false},
	{"io_uring EIO", SRC_FILE, OCF_FAULT_URING, EIO, NULL, -EIO, false, FR | FW | FB | FA, false},
	{"open (buffered twin)", SRC_FILE, OCF_FAULT_OPEN, EMFILE, NULL, -EMFILE, true, FHR, false},
	{"fstat EIO", SRC_FILE, OCF_FAULT_FSTAT, EIO, NULL, -EIO, true, FHR | FR, false},
	{"fcntl EBADF", SRC_FILE, OCF_FAULT_FCNTL, EBADF, NULL, CUERR(CU_FILE_INVALID_VALUE), false, FHR, false},
	{"H2D copy (sync)", SRC_CUDA, 0, 0, "cuMemcpyHtoD_v2", CUERR(CU_FILE_CUDA_DRIVER_ERROR), false, FR, true},
	{"H2D copy (async, refused)", SRC_CUDA, 0, 0, "cuMemcpyHtoDAsync_v2", CUERR(CU_FILE_CUDA_DRIVER_ERROR),
	 false, FR | FB | FA, true},
	/* Not the async family: there the copies are the application stream's
	 * own work, queued at submission; a copy failing on the GPU is a
	 * sticky context error in the real driver (the stream stops, and the
	 * operation fails through the GPU liveness check), which the stand-in's
	 * "fails, stream goes on" cannot stand for. */
	{"H2D copy (async, GPU fails)", SRC_CUDA_DEFERRED, 0, 0, "cuMemcpyHtoDAsync_v2",
	 CUERR(CU_FILE_CUDA_DRIVER_ERROR), false, FR | FB, true},
	{"D2H copy (sync)", SRC_CUDA, 0, 0, "cuMemcpyDtoH_v2", CUERR(CU_FILE_CUDA_DRIVER_ERROR), false, FW, true},
	{"D2H copy (async, refused)", SRC_CUDA, 0, 0, "cuMemcpyDtoHAsync_v2", CUERR(CU_FILE_CUDA_DRIVER_ERROR),
	 false, FW | FB | FA, true},
	{"D2H copy (async, GPU fails)", SRC_CUDA_DEFERRED, 0, 0, "cuMemcpyDtoHAsync_v2",
	 CUERR(CU_FILE_CUDA_DRIVER_ERROR), false, FW | FB, true},
	/* With the mapping + cuMemHostRegister pinning (NUMA placement), a
	 * refused registration falls back to cuMemHostAlloc: the call
	 * succeeds. */
	{"pinned register", SRC_CUDA, 0, 0, "cuMemHostRegister_v2", 0, true, FR | FW | FDO | FB | FA, true},
	{"pinned alloc", SRC_CUDA, 0, 0, "cuMemHostAlloc", CUERR(CU_FILE_CUDA_DRIVER_ERROR), true,
	 FR | FW | FDO | FB | FA, true},
	{"stream create", SRC_CUDA, 0, 0, "cuStreamCreate", CUERR(CU_FILE_CUDA_DRIVER_ERROR), true,
	 FR | FW | FDO | FB | FA, true},
	{"event create", SRC_CUDA, 0, 0, "cuEventCreate", CUERR(CU_FILE_CUDA_DRIVER_ERROR), true,
	 FR | FW | FDO | FB | FA, true},
	{"pointer query", SRC_CUDA, 0, 0, "cuPointerGetAttributes", CUERR(CU_FILE_CUDA_DRIVER_ERROR), false,
	 FR | FW | FBR | FB | FA, false},
	{"host func launch", SRC_CUDA, 0, 0, "cuLaunchHostFunc", CUERR(CU_FILE_CUDA_DRIVER_ERROR), false, FA, false},
	{"stream wait value", SRC_CUDA, 0, 0, "cuStreamWaitValue32_v2", CUERR(CU_FILE_CUDA_DRIVER_ERROR), false, FA,
	 false},
	{"malloc", SRC_MALLOC, 0, 0, NULL, CUERR(CU_FILE_NOMEM_ERROR), true, FALL, false},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static unsigned long kind_calls(const struct kind *k)
{
	switch (k->src) {
	case SRC_NONE: return 0;
	case SRC_FILE: return ocf_fault_calls(k->call);
	case SRC_CUDA:
	case SRC_CUDA_DEFERRED: return fakecuda_call_count(k->fn);
	case SRC_MALLOC: return t_malloc_calls();
	}
	return 0;
}

static void arm(const struct kind *k, unsigned long nth)
{
	switch (k->src) {
	case SRC_NONE: break;
	case SRC_FILE:
		if (k->err)
			ocf_fault_fail_nth(k->call, nth, 1, k->err);
		else
			ocf_fault_short_nth(k->call, nth, 1, 1000);
		break;
	case SRC_CUDA: fakecuda_fail_nth(k->fn, nth, CUDA_ERROR_OUT_OF_MEMORY); break;
	case SRC_CUDA_DEFERRED: fakecuda_fail_nth_deferred(k->fn, nth, CUDA_ERROR_ECC_UNCORRECTABLE); break;
	case SRC_MALLOC: t_malloc_fail_nth(nth); break;
	}
}

static void disarm(void)
{
	ocf_fault_reset();
	fakecuda_reset_faults();
	t_malloc_fail_nth(0);
}

/* ------------------------------------------------------ tallies, outcomes */

struct tally {
	int hits, errors, partial, absorbed;
	unsigned long first_miss; /* the N that no longer reached the fault */
};

/* The status a CUfileError_t call gives for an internal result (what
 * api_status does). */
static CUfileOpError status_of(long internal)
{
	if (internal >= 0)
		return CU_FILE_SUCCESS;
	if (internal <= -CUFILEOP_BASE_ERR)
		return (CUfileOpError)-internal;
	switch (-internal) {
	case ENOMEM: return CU_FILE_NOMEM_ERROR;
	case EINVAL: return CU_FILE_INVALID_VALUE;
	case EACCES:
	case EPERM: return CU_FILE_PERMISSION_DENIED;
	default: return CU_FILE_IO_ERROR;
	}
}

static const char *res_str(long r)
{
	static char ring[4][128];
	static int next;
	char *b = ring[next++ % 4];
	if (r >= 0)
		snprintf(b, sizeof(ring[0]), "%ld bytes", r);
	else if (r <= -CUFILEOP_BASE_ERR)
		snprintf(b, sizeof(ring[0]), "-%ld (%s)", -r, cufileop_status_error((CUfileOpError)-r));
	else
		snprintf(b, sizeof(ring[0]), "-%s", strerrorname_np((int)-r) ? strerrorname_np((int)-r) : "?");
	return b;
}

/* An I/O result (internal convention) of a call asked for `size` bytes.
 * `several`: one of several operations of the faulted step (batch entries,
 * stream operations), any of which may have taken the fault; whether some
 * operation showed it is checked afterwards (fault_shown).  Returns how
 * many bytes to check as moved. */
static size_t io_outcome(const struct kind *k, bool hit, long r, size_t size, struct tally *t, bool several)
{
	if (r == (long)size) {
		if (several)
			return size;
		if (hit && k->expect != 0 && !k->may_absorb)
			T_FAIL("the fault was hit but the call succeeded (%zu bytes); expected %s or a prefix",
			       size, res_str(k->expect));
		if (hit)
			t->absorbed++;
		return size;
	}
	if (!hit)
		T_FAIL("no fault was hit, but the call returned %s, not %zu bytes", res_str(r), size);
	if (r > 0 && (size_t)r < size) {
		if (k->expect == 0)
			T_FAIL("a retried fault gave a short result %s of %zu", res_str(r), size);
		t->partial++;
		return (size_t)r;
	}
	if (r != k->expect)
		T_FAIL("returned %s, expected %s (or a prefix of %zu bytes)", res_str(r), res_str(k->expect), size);
	t->errors++;
	return 0;
}

/* After the operations of a step with several: a fault that was hit must
 * show in one of them, unless the library may absorb it.  errors_before and
 * partial_before: the tally before the step. */
static void fault_shown(const struct kind *k, bool hit, struct tally *t, int errors_before, int partial_before)
{
	if (!hit || t->errors != errors_before || t->partial != partial_before)
		return;
	if (k->expect != 0 && !k->may_absorb)
		T_FAIL("the fault was hit but every operation succeeded; expected %s or a prefix in one",
		       res_str(k->expect));
	t->absorbed++;
}

/* A CUfileError_t result. */
static void status_outcome(const struct kind *k, bool hit, CUfileOpError st, struct tally *t)
{
	if (st == CU_FILE_SUCCESS) {
		if (hit && k->expect != 0 && !k->may_absorb)
			T_FAIL("the fault was hit but the call succeeded; expected %s", res_str(k->expect));
		if (hit)
			t->absorbed++;
		return;
	}
	if (!hit)
		T_FAIL("no fault was hit, but the call failed: %s", cufileop_status_error(st));
	if (st != status_of(k->expect))
		T_FAIL("status %d (%s), expected %d (%s)", (int)st, cufileop_status_error(st),
		       (int)status_of(k->expect), cufileop_status_error(status_of(k->expect)));
	t->errors++;
}

/* ------------------------------------------------------------- watchdog */

static void watchdog_fire(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: watchdog: a call or the driver close did not finish (lock left held?)\n"
				  "    case: ";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	w = write(2, t_case, strlen(t_case));
	w = write(2, "\n", 1);
	(void)w;
	_exit(T_EXIT_FAIL);
}

static void watchdog_arm(void)
{
	signal(SIGALRM, watchdog_fire);
	alarm(WATCHDOG_S);
}

static void watchdog_disarm(void) { alarm(0); }

/* ------------------------------------------------------------ leak counts */

struct counts {
	size_t pinned, registrations, streams, events, dev_allocs, blocks;
	int fds;
};

static void snap(struct counts *c)
{
	c->pinned = fakecuda_live_pinned_allocations();
	c->registrations = fakecuda_live_host_registrations();
	c->streams = fakecuda_live_streams();
	c->events = fakecuda_live_events();
	c->dev_allocs = fakecuda_live_device_allocations();
	c->blocks = t_malloc_live();
	c->fds = t_count_fds();
}

static struct counts baseline;
static bool have_baseline;

static void check_no_leaks(void)
{
	if (!have_baseline)
		return;
	struct counts now;
	snap(&now);
	if (now.fds != baseline.fds)
		t_dump_fds();
	T_EQ(now.fds, baseline.fds);
	T_EQ_U(now.pinned, baseline.pinned);
	T_EQ_U(now.registrations, baseline.registrations);
	T_EQ_U(now.streams, baseline.streams);
	T_EQ_U(now.events, baseline.events);
	T_EQ_U(now.dev_allocs, baseline.dev_allocs);
	T_EQ_U(now.blocks, baseline.blocks);
}

/* Closes every open of the driver (explicit and implicit). */
static void close_driver(void)
{
	t_driver_close_all(64);
	T_EQ(cuFileUseCount(), 0);
}

/* --------------------------------------------------------------- buffers */

static const char *path;
static int check_fd; /* plain descriptor for checking and restoring the file */

/* A caller buffer: `size` bytes at GUARD + boff of an allocation with
 * GUARD bytes after. */
struct buf {
	struct t_mem m;
	size_t size;
	off_t foff, boff;
};

static void buf_alloc(struct buf *b, enum t_mem_kind kind, size_t size, off_t foff, off_t boff)
{
	t_mem_alloc(&b->m, kind, GUARD + (size_t)boff + size + GUARD);
	b->size = size;
	b->foff = foff;
	b->boff = boff;
}

static void *buf_base(const struct buf *b) { return (uint8_t *)b->m.ptr + GUARD; }

/* Before a read: everything poison. */
static void read_prepare(struct buf *b) { t_mem_fill(&b->m, 0, T_POISON, b->m.len); }

/* After a read that reported `done` bytes: guards intact, the reported
 * bytes correct, the rest of the range poison or correct (or zero, with
 * zero_ok: a stream read into GPU memory queues its copies at submission,
 * and a chunk that could not be read is copied as zeros). */
static void read_verify_z(const struct buf *b, size_t done, const char *what, bool zero_ok)
{
	uint8_t *h = malloc(b->m.len);
	T_ASSERT(h != NULL);
	t_mem_get(&b->m, 0, h, b->m.len);
	size_t start = GUARD + (size_t)b->boff;
	if (t_check_fill(h, start, T_POISON, "guard before the range") ||
	    t_check_fill(h + start + b->size, b->m.len - start - b->size, T_POISON, "guard after the range"))
		T_FAIL("%s: bytes outside the caller's range changed", what);
	if (t_check_pattern(h + start, done, (uint64_t)b->foff, SEED_OLD, "bytes reported as read"))
		T_FAIL("%s: reported bytes are wrong", what);
	for (size_t i = done; i < b->size; i++) {
		uint8_t v = h[start + i];
		if (v != T_POISON && v != t_pat((uint64_t)b->foff + i, SEED_OLD) && !(zero_ok && v == 0))
			T_FAIL("%s: byte %zu of the range (not reported) holds 0x%02x: neither old nor read", what,
			       i, v);
	}
	free(h);
}

static void read_verify(const struct buf *b, size_t done, const char *what) { read_verify_z(b, done, what, false); }

/* Before a write: the range holds pattern SEED_NEW, the guards poison. */
static void write_prepare(struct buf *b)
{
	t_mem_fill(&b->m, 0, T_POISON, b->m.len);
	t_mem_put_pattern(&b->m, GUARD + (size_t)b->boff, b->size, (uint64_t)b->foff, SEED_NEW);
}

/* After a write that reported `done` bytes: the file is FLEN long, holds
 * SEED_OLD outside [foff, foff + size), SEED_NEW over the reported bytes
 * and one of the two in the rest; the caller's buffer is unchanged.  Then
 * the file is restored. */
static void write_verify(const struct buf *b, size_t done, const char *what)
{
	T_EQ_U(t_file_size(check_fd), FLEN);
	uint8_t *f = malloc(FLEN);
	T_ASSERT(f != NULL);
	T_EQ_U(t_pread_full(check_fd, f, FLEN, 0), FLEN);
	uint64_t lo = (uint64_t)b->foff, hi = lo + b->size;
	if (t_check_pattern(f, lo, 0, SEED_OLD, "file before the range") ||
	    t_check_pattern(f + hi, FLEN - hi, hi, SEED_OLD, "file after the range"))
		T_FAIL("%s: file bytes outside the written range changed", what);
	if (t_check_pattern(f + lo, done, lo, SEED_NEW, "bytes reported as written"))
		T_FAIL("%s: reported bytes are not in the file", what);
	for (size_t i = done; i < b->size; i++) {
		uint8_t v = f[lo + i];
		if (v != t_pat(lo + i, SEED_OLD) && v != t_pat(lo + i, SEED_NEW))
			T_FAIL("%s: file byte %zu of the range holds 0x%02x: neither old nor new", what, i, v);
	}
	free(f);
	uint8_t *h = malloc(b->m.len);
	T_ASSERT(h != NULL);
	t_mem_get(&b->m, 0, h, b->m.len);
	size_t start = GUARD + (size_t)b->boff;
	if (t_check_fill(h, start, T_POISON, "buffer guard before") ||
	    t_check_pattern(h + start, b->size, lo, SEED_NEW, "source buffer") ||
	    t_check_fill(h + start + b->size, GUARD, T_POISON, "buffer guard after"))
		T_FAIL("%s: a write changed the caller's memory", what);
	free(h);
	t_pwrite_pattern(check_fd, lo, b->size, SEED_OLD);
}

/* The next call's read: all of it, correct, nothing outside the range. */
static void read_full(CUfileHandle_t fh, struct buf *b, const char *what)
{
	read_prepare(b);
	T_IO(cuFileRead(fh, buf_base(b), b->size, b->foff, b->boff), b->size);
	read_verify(b, b->size, what);
}

/* The internal convention for a cuFileRead/cuFileWrite return value. */
static long internal_of(ssize_t r, int err) { return r == -1 ? -(long)err : (long)r; }

/* -------------------------------------------------------------- sessions */

/* A session: the watchdog, a descriptor of the test file, the driver open
 * and (optionally) the descriptor registered. */
struct session {
	int fd;
	CUfileHandle_t fh;
	unsigned long before; /* calls of the fault kind before it was armed */
};

static void session_open(struct session *ss, int oflags, bool open_driver, bool register_fd)
{
	watchdog_arm();
	ss->fd = t_open(path, O_RDWR | oflags);
	ss->fh = NULL;
	if (open_driver)
		T_CUFILE_OK(cuFileDriverOpen());
	if (register_fd)
		ss->fh = t_register_fd(ss->fd);
}

/* Deregisters, closes the driver, checks that nothing leaked. */
static void session_close(struct session *ss)
{
	if (ss->fh)
		cuFileHandleDeregister(ss->fh);
	close_driver();
	close(ss->fd);
	check_no_leaks();
	watchdog_disarm();
}

static void fault_begin(struct session *ss, const struct kind *k, unsigned long nth)
{
	/* Staging is pinned with cuMemHostAlloc unless the mapping +
	 * cuMemHostRegister path is chosen (NUMA placement): choose it for
	 * the kind that fails cuMemHostRegister. */
	if (k->fn && !strcmp(k->fn, "cuMemHostRegister_v2"))
		setenv("OPENCUFILE_STAGING_REGISTER", "1", 1);
	else
		unsetenv("OPENCUFILE_STAGING_REGISTER");
	ss->before = kind_calls(k);
	arm(k, nth);
}

/* Disarms; true when the armed call was reached (counted in t). */
static bool fault_end(struct session *ss, const struct kind *k, unsigned long nth, struct tally *t)
{
	disarm();
	bool hit = kind_calls(k) - ss->before >= nth;
	if (hit)
		t->hits++;
	return hit;
}

/* -------------------------------------------------- read / write family */

struct variant {
	const char *name;
	enum t_mem_kind mem;
	bool odirect;
	size_t size;
	off_t foff, boff;
};

/* Small requests copy synchronously (<= 64 KiB); large ones go through the
 * pipeline in 64 KiB chunks (OPENCUFILE_CHUNK_KB=64 in ctest). */
static const struct variant variants[] = {
	{"device, buffered fd, 5000 B", T_MEM_DEVICE, false, 5000, 4095, 3},
	{"device, O_DIRECT fd, 300 KiB", T_MEM_DEVICE, true, 300 * T_KIB + 5, 4095, 3},
	{"host, O_DIRECT fd, 300 KiB", T_MEM_HOST_MALLOC, true, 300 * T_KIB + 5, 4095, 3},
	/* Page-aligned memory at the file's alignment: the aligned body is read
	 * straight into it (head and tail staged), stopping before the block
	 * that holds end of file (an fstat). */
	{"host mmap, O_DIRECT fd, in place", T_MEM_HOST_MMAP, true, 300 * T_KIB + 5, 8192 + 100, 100},
	{"host, buffered fd, 200 KiB", T_MEM_HOST_MALLOC, false, 200 * T_KIB + 1, 1, 0},
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

static bool io_session(const struct variant *v, struct buf *b, bool write, const struct kind *k, unsigned long nth,
		       struct tally *t)
{
	struct session ss;
	session_open(&ss, v->odirect ? O_DIRECT : 0, true, true);
	void *base = buf_base(b);
	if (write)
		write_prepare(b);
	else
		read_prepare(b);
	fault_begin(&ss, k, nth);
	errno = 0;
	ssize_t r = write ? cuFileWrite(ss.fh, base, b->size, b->foff, b->boff)
			  : cuFileRead(ss.fh, base, b->size, b->foff, b->boff);
	int e = errno;
	bool hit = fault_end(&ss, k, nth, t);
	size_t done = io_outcome(k, hit, internal_of(r, e), b->size, t, false);
	if (write)
		write_verify(b, done, "faulted write");
	else
		read_verify(b, done, "faulted read");

	/* The next call on the same handle and buffer. */
	if (write) {
		write_prepare(b);
		T_IO(cuFileWrite(ss.fh, base, b->size, b->foff, b->boff), b->size);
		write_verify(b, b->size, "next write");
	} else {
		read_full(ss.fh, b, "next read");
	}
	session_close(&ss);
	return hit;
}

/* ------------------------------------------------ registration families */

static struct buf regbuf; /* device memory registered by bufregister */

static bool bufregister_session(const struct kind *k, unsigned long nth, struct tally *t)
{
	struct session ss;
	session_open(&ss, 0, true, true);
	void *base = buf_base(&regbuf);
	size_t len = regbuf.size + (size_t)regbuf.boff;
	fault_begin(&ss, k, nth);
	CUfileError_t st = cuFileBufRegister(base, len, 0);
	bool hit = fault_end(&ss, k, nth, t);
	status_outcome(k, hit, st.err, t);
	if (st.err == CU_FILE_SUCCESS)
		T_CUFILE_OK(cuFileBufDeregister(base));
	/* The next call: registration works, and I/O into the buffer. */
	T_CUFILE_OK(cuFileBufRegister(base, len, 0));
	read_full(ss.fh, &regbuf, "read into the registered buffer");
	T_CUFILE_OK(cuFileBufDeregister(base));
	session_close(&ss);
	return hit;
}

static struct buf hrbuf; /* host memory for I/O through the new handle */

static bool handleregister_session(const struct kind *k, unsigned long nth, struct tally *t)
{
	struct session ss;
	session_open(&ss, O_DIRECT, true, false);
	fault_begin(&ss, k, nth);
	CUfileOpError st = t_try_register_fd(ss.fd, &ss.fh);
	bool hit = fault_end(&ss, k, nth, t);
	status_outcome(k, hit, st, t);
	if (st == CU_FILE_SUCCESS) {
		/* The handle works, with or without its buffered twin:
		 * unaligned writes and reads. */
		write_prepare(&hrbuf);
		T_IO(cuFileWrite(ss.fh, buf_base(&hrbuf), hrbuf.size, hrbuf.foff, hrbuf.boff), hrbuf.size);
		write_verify(&hrbuf, hrbuf.size, "write through the handle");
		cuFileHandleDeregister(ss.fh);
	}
	/* The next call. */
	ss.fh = t_register_fd(ss.fd);
	read_full(ss.fh, &hrbuf, "read through the next handle");
	session_close(&ss);
	return hit;
}

/* ---------------------------------------------------- driver open family */

static struct buf dobuf; /* device memory */

static bool driveropen_session(const struct kind *k, unsigned long nth, struct tally *t)
{
	struct session ss;
	session_open(&ss, 0, false, false);
	/* The open, with its background pre-pinning of staging memory, and
	 * the first I/O, which may race with it. */
	fault_begin(&ss, k, nth);
	CUfileError_t st = cuFileDriverOpen();
	long r = 0;
	if (st.err == CU_FILE_SUCCESS) {
		read_prepare(&dobuf);
		CUfileOpError rs = t_try_register_fd(ss.fd, &ss.fh);
		if (rs == CU_FILE_SUCCESS) {
			errno = 0;
			ssize_t n = cuFileRead(ss.fh, buf_base(&dobuf), dobuf.size, dobuf.foff, dobuf.boff);
			r = internal_of(n, errno);
		} else {
			r = -(long)rs;
		}
	}
	/* Let the pre-pinning finish before counting: it runs in the
	 * background and may still be pinning. */
	for (int i = 0; i < 200; i++) {
		unsigned long c = fakecuda_call_count("cuMemHostAlloc") + fakecuda_call_count("cuMemHostRegister_v2");
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
		if (c == fakecuda_call_count("cuMemHostAlloc") + fakecuda_call_count("cuMemHostRegister_v2"))
			break;
	}
	bool hit = fault_end(&ss, k, nth, t);
	if (st.err != CU_FILE_SUCCESS) {
		status_outcome(k, hit, st.err, t);
	} else if (!ss.fh) {
		status_outcome(k, hit, (CUfileOpError)-r, t);
	} else {
		size_t done = io_outcome(k, hit, r, dobuf.size, t, false);
		read_verify(&dobuf, done, "first read after the open");
	}
	if (ss.fh)
		cuFileHandleDeregister(ss.fh);
	close_driver();
	/* The next call: open, register, read. */
	T_CUFILE_OK(cuFileDriverOpen());
	ss.fh = t_register_fd(ss.fd);
	read_full(ss.fh, &dobuf, "read after the next open");
	session_close(&ss);
	return hit;
}

/* ---------------------------------------------------------- batch family */

#define NENT 3
static struct buf bbuf[NENT];
static const bool bwrite[NENT] = {false, false, true};

static void batch_params(CUfileHandle_t fh, CUfileIOParams_t *p)
{
	for (int i = 0; i < NENT; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].mode = CUFILE_BATCH;
		p[i].fh = fh;
		p[i].opcode = bwrite[i] ? CUFILE_WRITE : CUFILE_READ;
		p[i].cookie = (void *)(uintptr_t)(i + 1);
		p[i].u.batch.devPtr_base = buf_base(&bbuf[i]);
		p[i].u.batch.devPtr_offset = bbuf[i].boff;
		p[i].u.batch.file_offset = bbuf[i].foff;
		p[i].u.batch.size = bbuf[i].size;
		if (bwrite[i])
			write_prepare(&bbuf[i]);
		else
			read_prepare(&bbuf[i]);
	}
}

/* Submit + GetStatus of every entry; returns the status of the first call
 * that failed, with the events (internal results) in res[]. */
static CUfileOpError batch_round(CUfileBatchHandle_t bh, CUfileHandle_t fh, long *res)
{
	CUfileIOParams_t p[NENT];
	batch_params(fh, p);
	CUfileError_t st = cuFileBatchIOSubmit(bh, NENT, p, 0);
	if (st.err != CU_FILE_SUCCESS)
		return st.err;
	unsigned got = 0;
	while (got < NENT) {
		CUfileIOEvents_t ev[NENT];
		unsigned nr = NENT - got;
		st = cuFileBatchIOGetStatus(bh, nr, &nr, ev, NULL);
		if (st.err != CU_FILE_SUCCESS)
			T_FAIL("cuFileBatchIOGetStatus: %s", cufileop_status_error(st.err));
		for (unsigned i = 0; i < nr; i++) {
			int idx = (int)(uintptr_t)ev[i].cookie - 1;
			T_ASSERT(idx >= 0 && idx < NENT);
			if (ev[i].status == CUFILE_COMPLETE)
				res[idx] = (long)ev[i].ret;
			else if (ev[i].status == CUFILE_FAILED)
				res[idx] = (long)(ssize_t)ev[i].ret;
			else
				T_FAIL("entry %d: status %#x", idx, (unsigned)ev[i].status);
			T_ASSERT(res[idx] != 0 || bbuf[idx].size == 0);
		}
		got += nr;
	}
	return CU_FILE_SUCCESS;
}

static void batch_verify(const long *res, const struct kind *k, bool hit, struct tally *t, bool must_succeed)
{
	for (int i = 0; i < NENT; i++) {
		size_t done;
		if (must_succeed) {
			T_EQ(res[i], (long)bbuf[i].size);
			done = bbuf[i].size;
		} else {
			done = io_outcome(k, hit, res[i], bbuf[i].size, t, true);
		}
		if (bwrite[i])
			write_verify(&bbuf[i], done, must_succeed ? "next batch write" : "batch write");
		else
			read_verify(&bbuf[i], done, must_succeed ? "next batch read" : "batch read");
	}
}

static bool batch_session(const struct kind *k, unsigned long nth, struct tally *t)
{
	struct session ss;
	session_open(&ss, O_DIRECT, true, true);
	CUfileBatchHandle_t bh = NULL;
	long res[NENT] = {0};
	fault_begin(&ss, k, nth);
	CUfileOpError st = cuFileBatchIOSetUp(&bh, NENT).err;
	if (st == CU_FILE_SUCCESS)
		st = batch_round(bh, ss.fh, res);
	bool hit = fault_end(&ss, k, nth, t);
	int errors0 = t->errors, partial0 = t->partial;
	if (st != CU_FILE_SUCCESS) {
		status_outcome(k, hit, st, t);
		/* Nothing ran: the buffers and the file are untouched. */
		for (int i = 0; i < NENT; i++) {
			if (bwrite[i])
				write_verify(&bbuf[i], 0, "failed batch write");
			else
				read_verify(&bbuf[i], 0, "failed batch read");
		}
	} else {
		batch_verify(res, k, hit, t, false);
		fault_shown(k, hit, t, errors0, partial0);
	}
	/* The next call on the same batch (or a new one if SetUp failed). */
	if (!bh)
		T_CUFILE_OK(cuFileBatchIOSetUp(&bh, NENT));
	T_EQ(batch_round(bh, ss.fh, res), CU_FILE_SUCCESS);
	batch_verify(res, k, false, t, true);
	cuFileBatchIODestroy(bh);
	session_close(&ss);
	return hit;
}

/* ---------------------------------------------------------- async family */

static CUstream app_stream;

/* cuFileReadAsync into bbuf[0] and cuFileWriteAsync from bbuf[2] on the
 * application's stream, then a stream synchronisation (its result in
 * *sync_r when not NULL, else it must succeed).  Returns the first failed
 * status; res[] gets the byte counts (internal convention). */
static CUfileOpError async_round(CUfileHandle_t fh, long *res, CUresult *sync_r)
{
	static size_t size[2];
	static off_t foff[2], boff[2];
	static ssize_t bytes[2];
	const int which[2] = {0, 2};
	read_prepare(&bbuf[0]);
	write_prepare(&bbuf[2]);
	CUfileOpError first = CU_FILE_SUCCESS;
	for (int i = 0; i < 2; i++) {
		struct buf *b = &bbuf[which[i]];
		size[i] = b->size;
		foff[i] = b->foff;
		boff[i] = b->boff;
		bytes[i] = -424242;
		CUfileError_t st = i == 0 ? cuFileReadAsync(fh, buf_base(b), &size[i], &foff[i], &boff[i], &bytes[i],
							    app_stream)
					  : cuFileWriteAsync(fh, buf_base(b), &size[i], &foff[i], &boff[i],
							     &bytes[i], app_stream);
		if (st.err != CU_FILE_SUCCESS && first == CU_FILE_SUCCESS)
			first = st.err;
	}
	if (sync_r)
		*sync_r = cuStreamSynchronize(app_stream);
	else
		T_CU(cuStreamSynchronize(app_stream));
	for (int i = 0; i < 2; i++)
		res[i] = bytes[i];
	return first;
}

static bool async_session(const struct kind *k, unsigned long nth, struct tally *t)
{
	struct session ss;
	session_open(&ss, O_DIRECT, true, true);
	long res[2];
	fault_begin(&ss, k, nth);
	CUresult sync_r;
	CUfileOpError st = async_round(ss.fh, res, &sync_r);
	bool hit = fault_end(&ss, k, nth, t);
	const int which[2] = {0, 2};
	int errors0 = t->errors, partial0 = t->partial;
	T_EQ(sync_r, CUDA_SUCCESS);
	if (st != CU_FILE_SUCCESS)
		status_outcome(k, hit, st, t);
	for (int i = 0; i < 2; i++) {
		struct buf *b = &bbuf[which[i]];
		size_t done = 0;
		if (res[i] == -424242) {
			/* This operation was refused: it never ran. */
			T_ASSERT(st != CU_FILE_SUCCESS);
		} else {
			done = io_outcome(k, hit, res[i], b->size, t, true);
		}
		if (i == 1)
			write_verify(b, done, "stream write");
		else
			read_verify_z(b, done, "stream read", b->m.kind == T_MEM_DEVICE);
	}
	fault_shown(k, hit, t, errors0, partial0);
	/* The next calls on the same stream, handle and buffers. */
	T_EQ(async_round(ss.fh, res, NULL), CU_FILE_SUCCESS);
	T_EQ(res[0], (long)bbuf[0].size);
	T_EQ(res[1], (long)bbuf[2].size);
	read_verify(&bbuf[0], bbuf[0].size, "next stream read");
	write_verify(&bbuf[2], bbuf[2].size, "next stream write");
	session_close(&ss);
	return hit;
}

/* ------------------------------------------------------------------ main */

enum family { F_READ, F_WRITE, F_BUFREG, F_HANDLEREG, F_DRIVEROPEN, F_BATCH, F_ASYNC };
static const char *const family_names[] = {"read", "write", "bufregister", "handleregister", "driveropen", "batch",
					   "async"};

/* One cell: N = 1, 2, ... until the call no longer reaches the fault. */
static void run_cell(enum family f, const struct variant *v, struct buf *b, const struct kind *k)
{
	struct tally t = {0};
	if (k->src == SRC_MALLOC && !T_MALLOC_FAULT) {
		printf("%-12s | %-30s | %-30s | not run (sanitizer allocator)\n", family_names[f], v ? v->name : "",
		       k->name);
		return;
	}
	unsigned long nth;
	for (nth = 1;; nth++) {
		if (nth > MAX_NTH)
			T_FAIL("the fault is still reached at call %d: unbounded", MAX_NTH);
		t_set_case("%s%s%s, fault: %s at call %lu", family_names[f], v ? ", " : "", v ? v->name : "", k->name,
			   nth);
		bool hit;
		switch (f) {
		case F_READ: hit = io_session(v, b, false, k, nth, &t); break;
		case F_WRITE: hit = io_session(v, b, true, k, nth, &t); break;
		case F_BUFREG: hit = bufregister_session(k, nth, &t); break;
		case F_HANDLEREG: hit = handleregister_session(k, nth, &t); break;
		case F_DRIVEROPEN: hit = driveropen_session(k, nth, &t); break;
		case F_BATCH: hit = batch_session(k, nth, &t); break;
		default: hit = async_session(k, nth, &t); break;
		}
		if (!hit)
			break;
	}
	t_set_case("%s", "");
	if (t.hits == 0)
		printf("%-12s | %-30s | %-30s | not reached\n", family_names[f], v ? v->name : "", k->name);
	else
		printf("%-12s | %-30s | %-30s | hits %3d: error %3d, partial %3d, absorbed %3d\n", family_names[f],
		       v ? v->name : "", k->name, t.hits, t.errors, t.partial, t.absorbed);
	fflush(stdout);
}

/* Kinds that cannot reach a family are not run (they would only print
 * "not reached"). */
static bool applies(enum family f, const struct variant *v, const struct kind *k)
{
	if (!(k->families & (1u << f)))
		return false;
	return !(v && k->device_only && v->mem != T_MEM_DEVICE);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		T_FAIL("usage: %s read|write|bufregister|handleregister|driveropen|batch|async", argv[0]);
	int f = -1;
	for (int i = 0; i < (int)(sizeof(family_names) / sizeof(family_names[0])); i++)
		if (!strcmp(argv[1], family_names[i]))
			f = i;
	if (f < 0)
		T_FAIL("unknown family %s", argv[1]);
	t_cuda_require();
	if (T_MALLOC_FAULT && t_malloc_init() != 0)
		T_FAIL("libcufile's code not found among the loaded objects");
	path = t_make_pattern_file(FLEN, SEED_OLD);
	check_fd = t_open(path, O_RDWR);
	if (!t_odirect_supported(path))
		T_SKIP("the test directory does not support O_DIRECT");

	buf_alloc(&regbuf, T_MEM_DEVICE, 100 * T_KIB + 7, 8191, 5);
	buf_alloc(&hrbuf, T_MEM_HOST_MALLOC, 9000, WRITE_AREA + 4095, 1);
	buf_alloc(&dobuf, T_MEM_DEVICE, 300 * T_KIB + 5, 4095, 3);
	buf_alloc(&bbuf[0], T_MEM_DEVICE, 200 * T_KIB + 3, 12345, 7);
	buf_alloc(&bbuf[1], T_MEM_HOST_MALLOC, 3000, 300 * T_KIB + 1, 1);
	buf_alloc(&bbuf[2], T_MEM_DEVICE, 150 * T_KIB + 9, WRITE_AREA + 77, 3);
	T_CU(cuStreamCreate(&app_stream, CU_STREAM_NON_BLOCKING));

	struct buf vbuf[NVARIANTS];
	for (size_t i = 0; i < NVARIANTS; i++)
		buf_alloc(&vbuf[i], variants[i].mem, variants[i].size, variants[i].foff, variants[i].boff);

	/* A clean run of the family first: one-time set-up (the CUDA driver,
	 * the fake's default stream, statistics blocks) happens here; then
	 * the baseline every faulted session must come back to. */
	static const struct kind none = {"none", SRC_NONE, 0, 0, NULL, 0, false, FALL, false};
	for (int pass = 0; pass < 2; pass++) {
		struct tally t = {0};
		t_set_case("clean run, pass %d", pass);
		if (f == F_READ || f == F_WRITE) {
			for (size_t i = 0; i < NVARIANTS; i++)
				io_session(&variants[i], &vbuf[i], f == F_WRITE, &none, MAX_NTH, &t);
		} else if (f == F_BUFREG) {
			bufregister_session(&none, MAX_NTH, &t);
		} else if (f == F_HANDLEREG) {
			handleregister_session(&none, MAX_NTH, &t);
		} else if (f == F_DRIVEROPEN) {
			driveropen_session(&none, MAX_NTH, &t);
		} else if (f == F_BATCH) {
			batch_session(&none, MAX_NTH, &t);
		} else {
			async_session(&none, MAX_NTH, &t);
		}
		if (pass == 0) {
			snap(&baseline);
			have_baseline = true;
		}
	}

	printf("%-12s | %-30s | %-30s | result\n", "family", "variant", "fault");
	if (f == F_READ || f == F_WRITE) {
		for (size_t i = 0; i < NVARIANTS; i++)
			for (size_t j = 0; j < NKINDS; j++)
				if (applies((enum family)f, &variants[i], &kinds[j]))
					run_cell((enum family)f, &variants[i], &vbuf[i], &kinds[j]);
	} else {
		for (size_t j = 0; j < NKINDS; j++)
			if (applies((enum family)f, NULL, &kinds[j]))
				run_cell((enum family)f, NULL, NULL, &kinds[j]);
	}

	for (size_t i = 0; i < NVARIANTS; i++)
		t_mem_free(&vbuf[i].m);
	struct buf *bufs[] = {&regbuf, &hrbuf, &dobuf, &bbuf[0], &bbuf[1], &bbuf[2]};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		t_mem_free(&bufs[i]->m);
	T_CU(cuStreamDestroy(app_stream));
	close(check_fd);
	return 0;
}
