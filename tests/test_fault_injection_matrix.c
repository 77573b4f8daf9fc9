/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver, fault-injection library) Fault injection as a test method,
 * SQLite-style.  For one API family (argv[1]), under one I/O backend
 * (argv[2]: uring or psync, set explicitly), and each fault kind — the
 * file side's system calls (src/fault.h: pread, pwrite, preadv2 with
 * RWF_NOWAIT, cachestat, io_uring completions, submission and buffer
 * registration, open/fstat/fcntl/statx at registration: EIO, short
 * transfers, EINTR, EAGAIN, ENOSPC), the fake CUDA driver (host<->device
 * copies refused or failing on the GPU, pinned allocation and
 * registration, stream and event creation, pointer queries, host-function
 * launches, stream waits) and the library's own allocations
 * (malloc_fault.h) — make the 1st, 2nd, 3rd ... such call fail, until the
 * family's call no longer reaches the fault.  A cell that never reaches its
 * fault fails the test, unless the not_applicable table says why the call
 * cannot reach it; such a cell is still run once and must not reach it.
 * Every time, in a session of its own (driver open ... close):
 *   - the result is the one the specification gives (the table at
 *     "expected results" below): -1 with errno or -CU_FILE_* from
 *     cuFileRead/cuFileWrite, the negative value in batch events and
 *     stream byte counts, the status (and cu_err) of CUfileError_t calls,
 *     a prefix of the bytes when some moved before the fault, or success
 *     where the library copes (EINTR, EAGAIN and short transfers are
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
 * absorbed) is printed, and a total per run: docs/history/reliability.md
 * holds the totals of one run.
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

/* ------------------------------------- expected results, from the spec */

/* What a call must report when an injected fault shows, taken from the
 * interface specification (shared/spec/cufile-api.md), not from the code
 * under test:
 *
 * | fault                                  | cuFileRead/cuFileWrite       | CUfileError_t call            |
 * | -------------------------------------- | ---------------------------- | ----------------------------- |
 * | system call fails with errno E         | -1, errno E ("-1 with errno  | CU_FILE_IO_ERROR (44): the    |
 * | (EIO, ENOSPC)                          | for OS errors")              | status for a failed I/O       |
 * | EINTR, EAGAIN, a short transfer        | retried: the call succeeds   | CU_FILE_SUCCESS               |
 * | a descriptor that is not open (EBADF)  | -                            | CU_FILE_INVALID_VALUE (22)    |
 * | a CUDA driver call fails               | -CU_FILE_CUDA_DRIVER_ERROR   | CU_FILE_CUDA_DRIVER_ERROR     |
 * |                                        | ("-CU_FILE_* for library     | (11), cu_err = the CUresult   |
 * |                                        | errors")                     | (IS_CUDA_ERR, CU_FILE_CUDA_ERR)|
 * | the library's allocation fails         | -CU_FILE_NOMEM_ERROR         | CU_FILE_NOMEM_ERROR (43)      |
 * | an optional resource fails (a twin     | the call succeeds            | CU_FILE_SUCCESS               |
 * | descriptor, statx, cachestat, fixed    |                              |                               |
 * | buffers)                               |                              |                               |
 *
 * Batch events (FAILED, ret) and stream byte counts (*bytes_p) carry the
 * negative value of the same error: -E or -CU_FILE_*.  Any of them may
 * instead be the count of the bytes that moved before the fault ("returns
 * bytes done"), never more. */
enum how { RETRIED, OS_ERRNO, CUFILE_CODE };
struct expect {
	enum how how;
	int code;              /* OS_ERRNO: the errno; CUFILE_CODE: the CUfileOpError */
	CUfileOpError status;  /* what a CUfileError_t call reports */
};
#define EX_RETRIED {RETRIED, 0, CU_FILE_SUCCESS}
#define EX_OS(e) {OS_ERRNO, (e), CU_FILE_IO_ERROR}
#define EX_BADF {OS_ERRNO, EBADF, CU_FILE_INVALID_VALUE}
#define EX_CUDA {CUFILE_CODE, CU_FILE_CUDA_DRIVER_ERROR, CU_FILE_CUDA_DRIVER_ERROR}
#define EX_NOMEM {CUFILE_CODE, CU_FILE_NOMEM_ERROR, CU_FILE_NOMEM_ERROR}

/* ------------------------------------------------------------ fault kinds */

enum src { SRC_NONE, SRC_FILE, SRC_CUDA, SRC_CUDA_DEFERRED, SRC_MALLOC };

/* The CUresults the stand-in driver is told to fail with. */
#define CU_REFUSED CUDA_ERROR_OUT_OF_MEMORY
#define CU_GPU_FAILS CUDA_ERROR_ECC_UNCORRECTABLE

struct kind {
	const char *name;
	enum src src;
	enum ocf_fault_call call; /* SRC_FILE */
	int err;                  /* SRC_FILE: errno to inject; 0: short */
	const char *fn;           /* SRC_CUDA*: driver function */
	struct expect ex;         /* what a call reports when the fault shows */
	/* The call may also succeed: the library can do without the resource
	 * (an engine helper without a lane, a registration without its
	 * buffered twin, a background pre-pinning that failed). */
	bool may_absorb;
};

#define CUERR(c) (-(long)(c))

static const struct kind kinds[] = {
	{"pread EIO", SRC_FILE, OCF_FAULT_PREAD, EIO, NULL, EX_OS(EIO), false},
	{"pread short", SRC_FILE, OCF_FAULT_PREAD, 0, NULL, EX_RETRIED, false},
	{"pread EINTR", SRC_FILE, OCF_FAULT_PREAD, EINTR, NULL, EX_RETRIED, false},
	{"preadv2 NOWAIT EIO", SRC_FILE, OCF_FAULT_PREADV2, EIO, NULL, EX_OS(EIO), false},
	{"preadv2 NOWAIT short", SRC_FILE, OCF_FAULT_PREADV2, 0, NULL, EX_RETRIED, false},
	{"preadv2 NOWAIT EINTR", SRC_FILE, OCF_FAULT_PREADV2, EINTR, NULL, EX_RETRIED, false},
	{"preadv2 NOWAIT EAGAIN", SRC_FILE, OCF_FAULT_PREADV2, EAGAIN, NULL, EX_RETRIED, false},
	{"cachestat EIO", SRC_FILE, OCF_FAULT_CACHESTAT, EIO, NULL, EX_RETRIED, false},
	{"pwrite EIO", SRC_FILE, OCF_FAULT_PWRITE, EIO, NULL, EX_OS(EIO), false},
	{"pwrite ENOSPC", SRC_FILE, OCF_FAULT_PWRITE, ENOSPC, NULL, EX_OS(ENOSPC), false},
	{"pwrite short", SRC_FILE, OCF_FAULT_PWRITE, 0, NULL, EX_RETRIED, false},
	{"pwrite EINTR", SRC_FILE, OCF_FAULT_PWRITE, EINTR, NULL, EX_RETRIED, false},
	{"io_uring EAGAIN", SRC_FILE, OCF_FAULT_URING, EAGAIN, NULL, EX_RETRIED, false},
	{"io_uring EIO", SRC_FILE, OCF_FAULT_URING, EIO, NULL, EX_OS(EIO), false},
	{"io_uring short", SRC_FILE, OCF_FAULT_URING, 0, NULL, EX_RETRIED, false},
	{"io_uring submit EIO", SRC_FILE, OCF_FAULT_URING_ENTER, EIO, NULL, EX_OS(EIO), false},
	{"io_uring submit EINTR", SRC_FILE, OCF_FAULT_URING_ENTER, EINTR, NULL, EX_RETRIED, false},
	{"io_uring buffers ENOMEM", SRC_FILE, OCF_FAULT_URING_REGBUF, ENOMEM, NULL, EX_RETRIED, false},
	{"open (twin) EMFILE", SRC_FILE, OCF_FAULT_OPEN, EMFILE, NULL, EX_RETRIED, false},
	{"fstat EIO", SRC_FILE, OCF_FAULT_FSTAT, EIO, NULL, EX_OS(EIO), true},
	/* A write's reservation, or its stores through the file's mapping,
	 * that fail: the piece goes to pwrite. */
	{"fallocate ENOSPC", SRC_FILE, OCF_FAULT_FALLOCATE, ENOSPC, NULL, EX_RETRIED, false},
	{"mapped store fault", SRC_FILE, OCF_FAULT_MAPPED_STORE, EIO, NULL, EX_RETRIED, false},
	{"fcntl EBADF", SRC_FILE, OCF_FAULT_FCNTL, EBADF, NULL, EX_BADF, false},
	{"statx EIO", SRC_FILE, OCF_FAULT_STATX, EIO, NULL, EX_RETRIED, false},
	{"H2D copy (sync)", SRC_CUDA, 0, 0, "cuMemcpyHtoD_v2", EX_CUDA, false},
	{"H2D copy (async, refused)", SRC_CUDA, 0, 0, "cuMemcpyHtoDAsync_v2", EX_CUDA, false},
	{"H2D copy (async, GPU fails)", SRC_CUDA_DEFERRED, 0, 0, "cuMemcpyHtoDAsync_v2", EX_CUDA, false},
	{"D2H copy (sync)", SRC_CUDA, 0, 0, "cuMemcpyDtoH_v2", EX_CUDA, false},
	{"D2H copy (async, refused)", SRC_CUDA, 0, 0, "cuMemcpyDtoHAsync_v2", EX_CUDA, false},
	{"D2H copy (async, GPU fails)", SRC_CUDA_DEFERRED, 0, 0, "cuMemcpyDtoHAsync_v2", EX_CUDA, false},
	/* With the mapping + cuMemHostRegister pinning (NUMA placement), a
	 * refused registration falls back to cuMemHostAlloc: the call
	 * succeeds. */
	{"pinned register", SRC_CUDA, 0, 0, "cuMemHostRegister_v2", EX_RETRIED, true},
	{"pinned alloc", SRC_CUDA, 0, 0, "cuMemHostAlloc", EX_CUDA, true},
	{"stream create", SRC_CUDA, 0, 0, "cuStreamCreate", EX_CUDA, true},
	{"event create", SRC_CUDA, 0, 0, "cuEventCreate", EX_CUDA, true},
	{"pointer query", SRC_CUDA, 0, 0, "cuPointerGetAttributes", EX_CUDA, false},
	{"host func launch", SRC_CUDA, 0, 0, "cuLaunchHostFunc", EX_CUDA, false},
	{"stream wait value", SRC_CUDA, 0, 0, "cuStreamWaitValue32_v2", EX_CUDA, false},
	{"malloc", SRC_MALLOC, 0, 0, NULL, EX_NOMEM, true},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* The internal convention (-errno, -CU_FILE_*, 0 for success) of what a
 * kind's fault shows as. */
static long expect_internal(const struct kind *k)
{
	return k->ex.how == RETRIED ? 0 : -(long)k->ex.code;
}

/* The CUresult a CUfileError_t reporting the kind's fault carries. */
static CUresult expect_cu_err(const struct kind *k)
{
	return k->src == SRC_CUDA_DEFERRED ? CU_GPU_FAILS : CU_REFUSED;
}

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
	case SRC_CUDA: fakecuda_fail_nth(k->fn, nth, CU_REFUSED); break;
	case SRC_CUDA_DEFERRED: fakecuda_fail_nth_deferred(k->fn, nth, CU_GPU_FAILS); break;
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
		if (hit && expect_internal(k) != 0 && !k->may_absorb)
			T_FAIL("the fault was hit but the call succeeded (%zu bytes); expected %s or a prefix",
			       size, res_str(expect_internal(k)));
		if (hit)
			t->absorbed++;
		return size;
	}
	if (!hit)
		T_FAIL("no fault was hit, but the call returned %s, not %zu bytes", res_str(r), size);
	if (r > 0 && (size_t)r < size) {
		if (k->ex.how == RETRIED)
			T_FAIL("a retried fault gave a short result %s of %zu", res_str(r), size);
		t->partial++;
		return (size_t)r;
	}
	if (r != expect_internal(k))
		T_FAIL("returned %s, expected %s (or a prefix of %zu bytes)", res_str(r), res_str(expect_internal(k)), size);
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
	if (expect_internal(k) != 0 && !k->may_absorb)
		T_FAIL("the fault was hit but every operation succeeded; expected %s or a prefix in one",
		       res_str(expect_internal(k)));
	t->absorbed++;
}

/* A CUfileError_t result: the status the specification gives the fault
 * (and, for CU_FILE_CUDA_DRIVER_ERROR, the failed call's CUresult in
 * cu_err). */
static void status_outcome(const struct kind *k, bool hit, CUfileError_t st, struct tally *t)
{
	if (st.err == CU_FILE_SUCCESS) {
		if (hit && expect_internal(k) != 0 && !k->may_absorb)
			T_FAIL("the fault was hit but the call succeeded; expected %s", res_str(expect_internal(k)));
		if (hit)
			t->absorbed++;
		return;
	}
	if (!hit)
		T_FAIL("no fault was hit, but the call failed: %s", cufileop_status_error(st.err));
	if (st.err != k->ex.status)
		T_FAIL("status %d (%s), expected %d (%s)", (int)st.err, cufileop_status_error(st.err),
		       (int)k->ex.status, cufileop_status_error(k->ex.status));
	if (IS_CUDA_ERR(st) && CU_FILE_CUDA_ERR(st) != expect_cu_err(k))
		T_FAIL("CU_FILE_CUDA_DRIVER_ERROR with cu_err %d, expected the failed call's %d", (int)st.cu_err,
		       (int)expect_cu_err(k));
	t->errors++;
}

/* The form of a cuFileRead/cuFileWrite failure (r < 0, errno e): -1 with a
 * system errno for an OS error, -CU_FILE_* for a library error. */
static void rw_form(const struct kind *k, ssize_t r, int e)
{
	if (r >= 0)
		return;
	if (r == -1 && (e <= 0 || e >= CUFILEOP_BASE_ERR))
		T_FAIL("returned -1 with errno %d: not a system errno", e);
	if (r != -1 && r > -CUFILEOP_BASE_ERR)
		T_FAIL("returned %zd: neither -1 with errno nor -CU_FILE_*", r);
	if (r == -1 && k->ex.how == CUFILE_CODE)
		T_FAIL("returned -1 (errno %s) for a library error; expected %s", strerrorname_np(e),
		       res_str(expect_internal(k)));
	if (r != -1 && k->ex.how == OS_ERRNO)
		T_FAIL("returned %s for an OS error; expected -1 with errno %s", res_str(r),
		       strerrorname_np(k->ex.code));
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
	t_expect_fds(now.fds, baseline.fds);
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

/* cuFileHandleRegister of a plain descriptor, its whole status. */
static CUfileError_t register_fd(int fd, CUfileHandle_t *fh)
{
	CUfileDescr_t d;
	memset(&d, 0, sizeof(d));
	d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	d.handle.fd = fd;
	return cuFileHandleRegister(fh, &d);
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
	/* Reads: the second half of the range is dropped from the page cache
	 * first, so that a buffered read copies the cached first half
	 * (preadv2) and reads the rest from the disk (its O_DIRECT twin). */
	bool cold_tail;
};

/* Small requests copy synchronously (<= 64 KiB); large ones go through the
 * pipeline in 64 KiB chunks (OPENCUFILE_CHUNK_KB=64 in ctest). */
static const struct variant variants[] = {
	{"device, buffered fd, 5000 B", T_MEM_DEVICE, false, 5000, 4095, 3, false},
	{"device, O_DIRECT fd, 300 KiB", T_MEM_DEVICE, true, 300 * T_KIB + 5, 4095, 3, false},
	{"host, O_DIRECT fd, 300 KiB", T_MEM_HOST_MALLOC, true, 300 * T_KIB + 5, 4095, 3, false},
	/* Page-aligned memory at the file's alignment: the aligned body is read
	 * straight into it (head and tail staged), stopping before the block
	 * that holds end of file (an fstat). */
	{"host mmap, O_DIRECT fd, in place", T_MEM_HOST_MMAP, true, 300 * T_KIB + 5, 8192 + 100, 100, false},
	/* Buffered reads of at least 64 KiB measure the cached prefix
	 * (cachestat), copy it with preadv2(RWF_NOWAIT) and read the rest
	 * through the O_DIRECT twin. */
	{"host, buffered fd, 200 KiB", T_MEM_HOST_MALLOC, false, 200 * T_KIB + 1, 1, 0, true},
	{"device, buffered fd, 300 KiB", T_MEM_DEVICE, false, 300 * T_KIB + 5, 4095, 3, true},
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/* Leaves the first half of b's file range in the page cache and nothing
 * else: the whole file is dropped (the cache may hold it in folios larger
 * than the range), then the first half is read back through check_fd,
 * whose readahead is off. */
static void evict_tail(const struct buf *b)
{
	off_t from = b->foff / 4096 * 4096, to = b->foff + (off_t)b->size / 2;
	T_SYS(fdatasync(check_fd));
	T_EQ(posix_fadvise(check_fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	T_EQ(posix_fadvise(check_fd, 0, 0, POSIX_FADV_RANDOM), 0);
	uint8_t *tmp = malloc((size_t)(to - from));
	T_ASSERT(tmp != NULL);
	T_EQ_U(t_pread_full(check_fd, tmp, (size_t)(to - from), from), (size_t)(to - from));
	free(tmp);
}

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
	if (!write && v->cold_tail)
		evict_tail(b);
	fault_begin(&ss, k, nth);
	errno = 0;
	ssize_t r = write ? cuFileWrite(ss.fh, base, b->size, b->foff, b->boff)
			  : cuFileRead(ss.fh, base, b->size, b->foff, b->boff);
	int e = errno;
	bool hit = fault_end(&ss, k, nth, t);
	rw_form(k, r, e);
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
	status_outcome(k, hit, st, t);
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
	CUfileError_t st = register_fd(ss.fd, &ss.fh);
	bool hit = fault_end(&ss, k, nth, t);
	status_outcome(k, hit, st, t);
	if (st.err == CU_FILE_SUCCESS) {
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
	read_prepare(&dobuf);
	fault_begin(&ss, k, nth);
	CUfileError_t st = cuFileDriverOpen();
	long r = 0;
	ssize_t n = 0;
	int e = 0;
	CUfileError_t rs = {CU_FILE_SUCCESS, CUDA_SUCCESS};
	if (st.err == CU_FILE_SUCCESS) {
		rs = register_fd(ss.fd, &ss.fh);
		if (rs.err == CU_FILE_SUCCESS) {
			errno = 0;
			n = cuFileRead(ss.fh, buf_base(&dobuf), dobuf.size, dobuf.foff, dobuf.boff);
			e = errno;
			r = internal_of(n, e);
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
		status_outcome(k, hit, st, t);
	} else if (!ss.fh) {
		status_outcome(k, hit, rs, t);
	} else {
		rw_form(k, n, e);
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
	}
}

/* Before a round, and before the fault is armed (the test's own copies
 * must not take it): the buffers as batch_verify expects them. */
static void batch_prepare(void)
{
	for (int i = 0; i < NENT; i++) {
		if (bwrite[i])
			write_prepare(&bbuf[i]);
		else
			read_prepare(&bbuf[i]);
	}
}

/* Submit + GetStatus of every entry; returns the status of the first call
 * that failed, with the events (internal results) in res[]. */
static CUfileError_t batch_round(CUfileBatchHandle_t bh, CUfileHandle_t fh, long *res)
{
	CUfileIOParams_t p[NENT];
	batch_params(fh, p);
	CUfileError_t st = cuFileBatchIOSubmit(bh, NENT, p, 0);
	if (st.err != CU_FILE_SUCCESS)
		return st;
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
	return st;
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
	batch_prepare();
	fault_begin(&ss, k, nth);
	CUfileError_t st = cuFileBatchIOSetUp(&bh, NENT);
	if (st.err == CU_FILE_SUCCESS)
		st = batch_round(bh, ss.fh, res);
	bool hit = fault_end(&ss, k, nth, t);
	int errors0 = t->errors, partial0 = t->partial;
	if (st.err != CU_FILE_SUCCESS) {
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
	batch_prepare();
	T_CUFILE_OK(batch_round(bh, ss.fh, res));
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
static CUfileError_t async_round(CUfileHandle_t fh, long *res, CUresult *sync_r)
{
	static size_t size[2];
	static off_t foff[2], boff[2];
	static ssize_t bytes[2];
	const int which[2] = {0, 2};
	CUfileError_t first = {CU_FILE_SUCCESS, CUDA_SUCCESS};
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
		if (st.err != CU_FILE_SUCCESS && first.err == CU_FILE_SUCCESS)
			first = st;
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
	/* The buffers are prepared before the fault is armed: the test's own
	 * copies must not take it. */
	read_prepare(&bbuf[0]);
	write_prepare(&bbuf[2]);
	fault_begin(&ss, k, nth);
	CUresult sync_r;
	CUfileError_t st = async_round(ss.fh, res, &sync_r);
	bool hit = fault_end(&ss, k, nth, t);
	const int which[2] = {0, 2};
	int errors0 = t->errors, partial0 = t->partial;
	T_EQ(sync_r, CUDA_SUCCESS);
	if (st.err != CU_FILE_SUCCESS)
		status_outcome(k, hit, st, t);
	for (int i = 0; i < 2; i++) {
		struct buf *b = &bbuf[which[i]];
		size_t done = 0;
		if (res[i] == -424242) {
			/* This operation was refused: it never ran. */
			T_ASSERT(st.err != CU_FILE_SUCCESS);
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
	read_prepare(&bbuf[0]);
	write_prepare(&bbuf[2]);
	T_CUFILE_OK(async_round(ss.fh, res, NULL));
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

/* ------------------------------------------------ cells not applicable */

/* Families, read/write variants (in the order of variants[]) and I/O
 * backends as bits, for the table below. */
#define FR (1u << F_READ)
#define FW (1u << F_WRITE)
#define FBR (1u << F_BUFREG)
#define FHR (1u << F_HANDLEREG)
#define FDO (1u << F_DRIVEROPEN)
#define FB (1u << F_BATCH)
#define FA (1u << F_ASYNC)
#define FRW (FR | FW)
#define FALL 0x7fu
#define V_DEV_SMALL (1u << 0)
#define V_DEV_DIRECT (1u << 1)
#define V_HOST_DIRECT (1u << 2)
#define V_HOST_MMAP (1u << 3)
#define V_HOST_BUF (1u << 4)
#define V_DEV_BUF (1u << 5)
#define V_HOST (V_HOST_DIRECT | V_HOST_MMAP | V_HOST_BUF)
#define V_DEV (V_DEV_SMALL | V_DEV_DIRECT | V_DEV_BUF)
#define VALL 0x3fu
enum backend { B_URING, B_PSYNC };
static const char *const backend_names[] = {"uring", "psync"};
/* Configurations: a backend, and whether requests are split across engine
 * workers (the _split entries). */
#define SPLIT (1u << 2)
#define NOSPLIT (1u << 3)
#define BU ((1u << B_URING) | SPLIT | NOSPLIT)
#define BP ((1u << B_PSYNC) | SPLIT | NOSPLIT)
#define BALL (BU | BP)
#define B_NOSPLIT ((1u << B_URING) | (1u << B_PSYNC) | NOSPLIT)

/* A cell (fault kind x family [x variant] x backend) that the call under
 * test cannot reach, and why.  `kind` is a kind's name or the start of
 * several ("pread " covers EIO, short and EINTR); the first matching row
 * counts.  Such a cell is still run once (N = 1) and fails if its fault is
 * reached: the table cannot hide a path the code takes.  A row marked
 * `reachable` names a cell that is reached but not run, for the reason
 * given.  Every other cell must reach its fault. */
struct not_applicable {
	const char *kind;
	unsigned families, variants, backends;
	bool reachable;
	const char *why;
};

#define REG_ONLY "only the registration runs while the fault is armed"
static const struct not_applicable not_applicable[] = {
	/* Which system call a transfer uses. */
	{"pread ", FW, VALL, BALL, false, "a write never reads the file"},
	{"pread ", FBR | FHR, VALL, BALL, false, REG_ONLY},
	{"pread ", FDO, VALL, BU, false,
	 "under uring the first read's range, which the page cache holds whole, is one buffered ring transfer"},
	{"pread ", FR, V_DEV, BU, false,
	 "under uring a device-memory read's file transfers go to the ring"},
	{"pwrite ", FR | FBR | FHR | FDO, VALL, BALL, false, "these calls never write the file"},
	{"pwrite ", FW, V_DEV_SMALL | V_DEV_BUF, BU, false,
	 "under uring a device-memory write on a buffered descriptor is one ring transfer"},
	{"preadv2 ", FW | FB | FA, VALL, BALL, false,
	 "page-cache copies serve buffered reads of 64 KiB or more; batch and stream sessions use O_DIRECT"},
	{"cachestat ", FB | FA, VALL, BALL, false,
	 "the cached prefix is measured for buffered reads of 64 KiB or more; batch and stream sessions use "
	 "O_DIRECT"},
	{"cachestat ", FW, VALL, BALL, false,
	 "only a buffered write that starts a 2 MiB region of the file asks whether the pages it overwrites are "
	 "cached: these are smaller or O_DIRECT (test_write_mapped_stores_keep_pwrite_semantics)"},
	{"preadv2 ", FBR | FHR, VALL, BALL, false, REG_ONLY},
	{"preadv2 ", FDO, VALL, BU, false,
	 "under uring a range the page cache holds whole is one buffered ring transfer, not a copy"},
	{"cachestat ", FBR | FHR, VALL, BALL, false, REG_ONLY},
	{"preadv2 ", FR, V_DEV_SMALL | V_DEV_DIRECT | V_HOST_DIRECT | V_HOST_MMAP, BALL, false,
	 "an O_DIRECT descriptor, or a buffered read under 64 KiB (one pread): no page-cache copy"},
	{"cachestat ", FR, V_DEV_SMALL | V_DEV_DIRECT | V_HOST_DIRECT | V_HOST_MMAP, BALL, false,
	 "an O_DIRECT descriptor, or a buffered read under 64 KiB: nothing to measure"},
	{"io_uring ", FBR | FHR, VALL, BALL, false, REG_ONLY},
	{"io_uring ", FALL, VALL, BP, false, "the psync backend makes no ring"},
	{"io_uring ", FR | FW, V_HOST, BU, false,
	 "host memory is not staged in a GPU's lane: its transfers are pread/pwrite, the ring serves lanes"},
	{"io_uring ", FA, VALL, BU, false,
	 "stream operations do their file I/O with pread/pwrite on the executor's threads, without a ring"},
	{"fallocate ", FR | FBR | FHR | FDO, VALL, BALL, false, "these calls never write the file"},
	{"fallocate ", FW | FB | FA, VALL, BALL, false,
	 "these writes land inside the file, whose blocks are all written: nothing to reserve (a write past "
	 "end of file or into a hole reserves: test_write_mapped_stores_keep_pwrite_semantics)"},
	{"mapped store ", FR | FBR | FHR | FDO, VALL, BALL, false, "these calls never write the file"},
	{"mapped store ", FW, VALL, BALL, false,
	 "only a buffered write covering a whole 2 MiB region of the file stores through the mapping: "
	 "these are smaller, or O_DIRECT (test_write_mapped_stores_keep_pwrite_semantics)"},
	{"mapped store ", FB | FA, VALL, BALL, false,
	 "batch and stream sessions use O_DIRECT: no stores through the mapping"},
	/* Registration. */
	{"open ", FR | FW | FBR | FB | FA, VALL, BALL, false,
	 "twin descriptors are opened at handle registration, before the fault is armed"},
	{"fcntl ", FR | FW | FBR | FB | FA, VALL, BALL, false,
	 "F_GETFL runs at registration, before the fault; O_DIRECT is toggled only on a handle without its "
	 "buffered twin"},
	{"statx ", FR | FBR, VALL, BALL, false,
	 "statx runs at registration of an O_DIRECT descriptor, before the fault"},
	{"statx ", FW, V_DEV_BUF, B_NOSPLIT, false,
	 "a buffered write's size is asked (statx) only before pieces that run in parallel or store through "
	 "the mapping: unsplit, this is one participant's pieces in file order, none covering a 2 MiB region"},
	{"statx ", FW, V_DEV_SMALL | V_HOST_BUF, BALL, false,
	 "one piece (5000 bytes; 200 KiB of host memory, written from it by one pwrite): nothing to prepare"},
	{"fstat ", FW | FBR | FB | FA, VALL, BALL, false,
	 "fstat runs at registration, before the fault, and before a read in place (a write asks statx)"},
	{"fstat ", FR, V_DEV | V_HOST_DIRECT | V_HOST_BUF, BALL, false,
	 "the file size is asked only before a read in place, into memory aligned like the file"},
	/* CUDA. */
	{"H2D ", FW | FBR | FHR, VALL, BALL, false, "no host-to-device copy: a write or a registration"},
	{"D2H ", FR | FBR | FHR | FDO, VALL, BALL, false, "no device-to-host copy: reads or a registration"},
	{"H2D ", FR, V_HOST, BALL, false, "host memory: no copy to a device"},
	{"D2H ", FW, V_HOST, BALL, false, "host memory: no copy from a device"},
#define NO_SYNC_COPY                                                                                   \
	"the library never copies synchronously: such a copy holds the driver's lock while it waits "   \
	"(docs/reliability.md, Hangs, cause 4)"
	{"H2D copy (sync)", FALL, VALL, BALL, false, NO_SYNC_COPY},
	{"D2H copy (sync)", FALL, VALL, BALL, false, NO_SYNC_COPY},
	/* The stand-in's "copy fails, the stream goes on" is not what the real
	 * driver does to a stream operation's copies (a sticky context error:
	 * the stream stops, the operation fails through the GPU liveness
	 * check). */
	{"H2D copy (async, GPU fails)", FA, VALL, BALL, true,
	 "stream copies are the application stream's own work; the stand-in cannot model the real driver's "
	 "sticky error there"},
	{"D2H copy (async, GPU fails)", FA, VALL, BALL, true,
	 "stream copies are the application stream's own work; the stand-in cannot model the real driver's "
	 "sticky error there"},
	{"pinned ", FBR | FHR, VALL, BALL, false, "registrations set up no staging memory"},
	{"stream create", FBR | FHR, VALL, BALL, false, "registrations create no stream"},
	{"event create", FBR | FHR, VALL, BALL, false, "registrations create no event"},
	{"pinned ", FR | FW, V_HOST, BALL, false, "host memory is staged in malloc'd memory, never pinned"},
	{"stream create", FR | FW, V_HOST, BALL, false, "host memory needs no stream"},
	{"event create", FR | FW, V_HOST, BALL, false, "host memory needs no event"},
	{"pinned register", FA, VALL, BALL, false,
	 "a stream's ring is pinned with cuMemHostAlloc; the registration path serves engine lanes"},
	{"stream create", FA, VALL, BALL, false, "a stream submission creates no stream (only pinned memory)"},
	{"event create", FA, VALL, BALL, false, "a stream submission creates no event (only pinned memory)"},
	{"pointer query", FHR, VALL, BALL, false, "no buffer is looked up"},
	{"host func launch", FALL & ~FA, VALL, BALL, false, "only stream operations launch host functions"},
	{"stream wait value", FALL & ~FA, VALL, BALL, false, "only stream operations queue stream waits"},
	{"malloc", FR | FW, V_HOST_BUF, B_NOSPLIT, false,
	 "host memory on a buffered descriptor moves between the caller's memory and the file directly (split "
	 "requests allocate their work)"},
};
#define NNA (sizeof(not_applicable) / sizeof(not_applicable[0]))

static enum backend backend;
static bool split; /* requests split across engine workers */

/* NULL when the cell applies, else the row that says why it does not. */
static const struct not_applicable *not_applicable_row(enum family f, int vi, const struct kind *k)
{
	for (size_t i = 0; i < NNA; i++) {
		const struct not_applicable *n = &not_applicable[i];
		if (strncmp(k->name, n->kind, strlen(n->kind)) != 0)
			continue;
		if (!(n->families & (1u << f)) || !(n->backends & (1u << backend)) ||
		    !(n->backends & (split ? SPLIT : NOSPLIT)))
			continue;
		if (vi >= 0 && !(n->variants & (1u << vi)))
			continue;
		return n;
	}
	return NULL;
}

/* Totals over the run, printed at the end. */
static struct {
	int cells, na, not_run;
	long sessions, hits;
} totals;

/* One session of cell (f, v, k) with the fault at call nth. */
static bool run_session(enum family f, const struct variant *v, struct buf *b, const struct kind *k,
			unsigned long nth, struct tally *t)
{
	totals.sessions++;
	switch (f) {
	case F_READ: return io_session(v, b, false, k, nth, t);
	case F_WRITE: return io_session(v, b, true, k, nth, t);
	case F_BUFREG: return bufregister_session(k, nth, t);
	case F_HANDLEREG: return handleregister_session(k, nth, t);
	case F_DRIVEROPEN: return driveropen_session(k, nth, t);
	case F_BATCH: return batch_session(k, nth, t);
	default: return async_session(k, nth, t);
	}
}

/* One cell: N = 1, 2, ... until the call no longer reaches the fault.  A
 * cell that never reaches it fails, unless the table above says why it
 * cannot; then one session checks that it is indeed not reached. */
/* Under valgrind (the valgrind stage), whose preloaded allocator replaces
 * every malloc, the main program's included: the test's interposer never
 * sees a call, so no allocation fault can be injected. */
static bool under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");
	return pre && strstr(pre, "vgpreload") != NULL;
}

static void run_cell(enum family f, const struct variant *v, int vi, struct buf *b, const struct kind *k)
{
	struct tally t = {0};
	const char *vname = v ? v->name : "";
	const char *skip = NULL;
	if (k->src == SRC_MALLOC && !T_MALLOC_FAULT)
		skip = "sanitizer allocator";
	else if (k->src == SRC_MALLOC && under_valgrind())
		skip = "valgrind's allocator replaces the test's malloc";
	if (skip) {
		printf("%-12s | %-32s | %-27s | not run (%s)\n", family_names[f], vname, k->name, skip);
		totals.not_run++;
		return;
	}
	/* A thread remembers the unregistered device allocations it looked
	 * up (checked by buffer ID): a buffer new to it is classified with a
	 * full pointer query, the call this kind fails. */
	if (k->src == SRC_CUDA && k->fn && strcmp(k->fn, "cuPointerGetAttributes") == 0 && b &&
	    b->m.kind == T_MEM_DEVICE && b->m.ptr) {
		struct buf fresh;
		buf_alloc(&fresh, b->m.kind, b->size, b->foff, b->boff);
		t_mem_free(&b->m);
		*b = fresh;
	}
	const struct not_applicable *na = not_applicable_row(f, vi, k);
	if (na && na->reachable) {
		printf("%-12s | %-32s | %-27s | not run: %s\n", family_names[f], vname, k->name, na->why);
		totals.not_run++;
		return;
	}
	if (na) {
		t_set_case("%s%s%s, fault: %s at call 1 (declared not applicable)", family_names[f], v ? ", " : "",
			   vname, k->name);
		if (run_session(f, v, b, k, 1, &t) && !under_valgrind())
			T_FAIL("the fault was reached, but the cell is declared not applicable (%s)", na->why);
		t_set_case("%s", "");
		printf("%-12s | %-32s | %-27s | n/a: %s\n", family_names[f], vname, k->name, na->why);
		totals.na++;
		return;
	}
	unsigned long nth;
	for (nth = 1;; nth++) {
		if (nth > MAX_NTH)
			T_FAIL("the fault is still reached at call %d: unbounded", MAX_NTH);
		t_set_case("%s%s%s, fault: %s at call %lu", family_names[f], v ? ", " : "", vname, k->name, nth);
		if (!run_session(f, v, b, k, nth, &t))
			break;
	}
	t_set_case("%s", "");
	printf("%-12s | %-32s | %-27s | hits %3d: error %3d, partial %3d, absorbed %3d\n", family_names[f], vname,
	       k->name, t.hits, t.errors, t.partial, t.absorbed);
	fflush(stdout);
	if (t.hits == 0 && under_valgrind()) {
		/* Valgrind (3.19) does not know cachestat(2): the library then
		 * probes the page cache otherwise, and some cells take other
		 * paths.  Reachability is checked by the plain, ASan and TSan
		 * stages; this one checks the paths taken for memory errors. */
		printf("%-12s | %-32s | %-27s | not reached under valgrind\n", family_names[f], vname, k->name);
		totals.not_run++;
		return;
	}
	if (t.hits == 0)
		T_FAIL("%s%s%s, fault %s (backend %s): never reached; make the call reach it, or declare the cell "
		       "not applicable with the reason",
		       family_names[f], v ? ", " : "", vname, k->name, backend_names[backend]);
	totals.cells++;
	totals.hits += t.hits;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		T_FAIL("usage: %s read|write|bufregister|handleregister|driveropen|batch|async uring|psync", argv[0]);
	int f = -1;
	for (int i = 0; i < (int)(sizeof(family_names) / sizeof(family_names[0])); i++)
		if (!strcmp(argv[1], family_names[i]))
			f = i;
	if (f < 0)
		T_FAIL("unknown family %s", argv[1]);
	/* O_DIRECT handles read straight from the disk, as the table above
	 * assumes: the files here are cached (just written), and reads that
	 * copy cached pages (properties.direct_reads_from_cache) take the
	 * page-cache path the buffered variants cover. */
	setenv("OPENCUFILE_DIRECT_READS_FROM_CACHE", "0", 1);
	/* Cached bytes by preadv2, whose faults the rows inject; the copy
	 * through the file's mapping has its own test
	 * (test_io_mapped_reads_copy_cached_bytes_and_recover_from_faults). */
	setenv("OPENCUFILE_MAPPED_READS", "off", 1);
	if (!strcmp(argv[2], "uring"))
		backend = B_URING;
	else if (!strcmp(argv[2], "psync"))
		backend = B_PSYNC;
	else
		T_FAIL("unknown backend %s", argv[2]);
	split = getenv("OPENCUFILE_IO_THREADS") != NULL;
	/* The backend is resolved at each driver open. */
	setenv("OPENCUFILE_IO_BACKEND", argv[2], 1);
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
	static const struct kind none = {"none", SRC_NONE, 0, 0, NULL, EX_RETRIED, false};
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

	/* The backend really serves the transfers: the ring is used (its
	 * completions pass the hook) exactly when it is asked for. */
	unsigned long ring_calls = ocf_fault_calls(OCF_FAULT_URING);
	if (backend == B_PSYNC && ring_calls != 0)
		T_FAIL("backend psync, but %lu io_uring completions", ring_calls);
	if (backend == B_URING && ring_calls == 0 && f != F_HANDLEREG && f != F_ASYNC)
		T_FAIL("backend uring, but no transfer went through the ring");

	printf("%-12s | %-32s | %-27s | result (backend %s)\n", "family", "variant", "fault", argv[2]);
	if (f == F_READ || f == F_WRITE) {
		for (size_t i = 0; i < NVARIANTS; i++)
			for (size_t j = 0; j < NKINDS; j++)
				run_cell((enum family)f, &variants[i], (int)i, &vbuf[i], &kinds[j]);
	} else {
		for (size_t j = 0; j < NKINDS; j++)
			run_cell((enum family)f, NULL, -1, NULL, &kinds[j]);
	}
	printf("total %s %s: %d cells reached their fault (%ld faults injected, %ld sessions), %d cells not "
	       "applicable (checked unreached), %d not run\n",
	       family_names[f], argv[2], totals.cells, totals.hits, totals.sessions, totals.na, totals.not_run);
	if (backend == B_PSYNC && ocf_fault_calls(OCF_FAULT_URING) != 0)
		T_FAIL("backend psync, but io_uring completions were seen");

	for (size_t i = 0; i < NVARIANTS; i++)
		t_mem_free(&vbuf[i].m);
	struct buf *bufs[] = {&regbuf, &hrbuf, &dobuf, &bbuf[0], &bbuf[1], &bbuf[2]};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		t_mem_free(&bufs[i]->m);
	T_CU(cuStreamDestroy(app_stream));
	close(check_fd);
	return 0;
}
