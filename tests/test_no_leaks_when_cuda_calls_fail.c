/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) Fault injection, SQLite-style: for each CUDA driver
 * function the library uses to set itself up or to move data, fail its 1st,
 * 2nd, ... call during a session (open, register, read/write device memory,
 * close) until the session no longer reaches the fault.  Whatever the calls
 * return, nothing crashes or hangs, no call reports more bytes than are
 * correct, and after the close the pinned allocations, host registrations,
 * streams, device allocations and fds are back to their starting counts;
 * a clean session afterwards works.  Every listed function must be reached
 * at least once, unless the table says why the session cannot reach it
 * (then one faulted session checks that it is not reached), and the loop
 * must end before MAX_NTH.
 */
#include "test.h"
#include "fakecuda.h"

#define MAX_NTH 40
#define SLOW_STREAM_US 2000

/* Driver functions the library resolves (the test's own copies use the
 * synchronous cuMemcpyHtoD_v2/cuMemcpyDtoH_v2, so those are not faulted),
 * and, for those a session cannot reach, why. */
static const struct {
	const char *fn;
	const char *not_reached; /* NULL: the session must reach it */
} funcs[] = {
	{"cuMemHostAlloc", NULL},
	/* Staging arenas are registered with OPENCUFILE_STAGING_REGISTER=1
	 * (set for this function). */
	{"cuMemHostRegister_v2", NULL},
	{"cuStreamCreate", NULL},
	{"cuEventCreate", NULL},
	{"cuEventRecord", NULL},
	{"cuEventSynchronize", NULL},
	{"cuStreamSynchronize", "a staging stream is drained only after another failure stopped the request "
				"(test_io_cuda_copy_failure_never_overreports faults it)"},
	{"cuCtxSetCurrent", "resolved by the loader, never called: the library pushes and pops its context"},
	{"cuDevicePrimaryCtxRetain", NULL},
	{"cuPointerGetAttribute", NULL},
	{"cuPointerGetAttributes", NULL},
	{"cuMemGetAddressRange_v2", "resolved by the loader, never called: the range comes from "
				    "cuPointerGetAttributes"},
	{"cuPointerSetAttribute", NULL},
	{"cuMemcpyHtoDAsync_v2", NULL},
	{"cuMemcpyDtoHAsync_v2", NULL},
	{"cuCtxPushCurrent_v2", NULL},
	{"cuCtxPopCurrent_v2", NULL},
	{"cuDeviceGetCount", "called once per process, when the library loads the driver (before the first "
			     "session)"},
	{"cuDeviceGetAttribute", "resolved by the loader, never called"},
	{"cuCtxGetCurrent", "called once per process, when the library loads the driver (before the first "
			    "session)"},
};

/* The session's write: pipelined (over 64 KiB), so that its copies are
 * asynchronous. */
#define WSIZE (1 * T_MIB + 5)
#define WOFF (2 * T_MIB)

struct counts {
	size_t pinned, host_reg, streams, dev_allocs;
	int fds;
};

static void snap(struct counts *c)
{
	c->pinned = fakecuda_live_pinned_allocations();
	c->host_reg = fakecuda_live_host_registrations();
	c->streams = fakecuda_live_streams();
	c->dev_allocs = fakecuda_live_device_allocations();
	c->fds = t_count_fds();
}

static const char *path;
static struct t_mem dev;

/* One session; with `strict` every step must succeed. */
static void session(bool strict)
{
	int fd = t_open(path, O_RDWR);
	const size_t size = 2 * T_MIB + 7;

	CUfileError_t st = cuFileDriverOpen();
	if (strict)
		T_CUFILE_OK(st);
	bool opened = st.err == CU_FILE_SUCCESS;
	CUfileHandle_t fh = NULL;
	CUfileOpError e = t_try_register_fd(fd, &fh);
	if (strict)
		T_EQ(e, CU_FILE_SUCCESS);
	if (e == CU_FILE_SUCCESS) {
		for (int reg = 0; reg < 2; reg++) {
			if (reg) {
				st = cuFileBufRegister(dev.ptr, dev.len, 0);
				if (strict)
					T_CUFILE_OK(st);
			}
			t_dev_fill((CUdeviceptr)(uintptr_t)dev.ptr, T_POISON, dev.len);
			ssize_t r = cuFileRead(fh, dev.ptr, size, 1, 0);
			if (strict)
				T_EQ(r, size);
			if (r > (ssize_t)size)
				T_FAIL("read returned %zd > %zu", r, size);
			if (r > 0) {
				uint8_t *h = malloc((size_t)r);
				T_ASSERT(h != NULL);
				t_dev_get(h, (CUdeviceptr)(uintptr_t)dev.ptr, (size_t)r);
				if (t_check_pattern(h, (size_t)r, 1, 0, "bytes reported as read"))
					T_FAIL("read reported %zd bytes that are not all there", r);
				free(h);
			}
			/* Write a new pattern (seed 5) from buffer offset 1: the
			 * file must hold it over every byte the call reports. */
			t_mem_put_pattern(&dev, 1, WSIZE, WOFF, 5);
			r = cuFileWrite(fh, dev.ptr, WSIZE, WOFF, 1);
			if (strict)
				T_EQ(r, WSIZE);
			if (r > (ssize_t)WSIZE)
				T_FAIL("write returned %zd > %zu", r, (size_t)WSIZE);
			int cfd = t_open(path, O_RDWR);
			if (r > 0) {
				uint8_t *h = malloc((size_t)r);
				T_ASSERT(h != NULL);
				T_EQ_U(t_pread_full(cfd, h, (size_t)r, WOFF), (size_t)r);
				if (t_check_pattern(h, (size_t)r, WOFF, 5, "bytes reported as written"))
					T_FAIL("write reported %zd bytes that are not all in the file", r);
				free(h);
			}
			t_pwrite_pattern(cfd, WOFF, WSIZE, 0);
			close(cfd);
		}
		(void)cuFileBufDeregister(dev.ptr);
		cuFileHandleDeregister(fh);
	}
	(void)opened;
	/* Drop every open, explicit or implicit. */
	t_driver_close_all(16);
	T_EQ(cuFileUseCount(), 0);
	close(fd);
}

int main(void)
{
	t_cuda_require();
	path = t_make_pattern_file(4 * T_MIB, 0);
	t_mem_alloc(&dev, T_MEM_DEVICE, 4 * T_MIB);

	/* A clean session first (lazy one-time setup in the fake or the
	 * library happens here), then the baseline. */
	session(true);
	struct counts start, now;
	snap(&start);

	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		const char *fn = funcs[i].fn;
		int hits = 0;
		bool pin_register = !strcmp(fn, "cuMemHostRegister_v2");
		if (pin_register)
			setenv("OPENCUFILE_STAGING_REGISTER", "1", 1);
		/* A copy's event is queried first and waited for with
		 * cuEventSynchronize only if the copy is still running: on an
		 * idle machine every copy may be done by then.  Slow streams
		 * keep the copies in flight so that the wait is reached. */
		bool slow_streams = !strcmp(fn, "cuEventSynchronize");
		if (slow_streams)
			fakecuda_set_stream_delay_us(SLOW_STREAM_US);
		unsigned long max = funcs[i].not_reached ? 1 : MAX_NTH;
		unsigned long nth;
		for (nth = 1; nth <= max; nth++) {
			t_set_case("fail call %lu of %s", nth, fn);
			unsigned long before = fakecuda_call_count(fn);
			fakecuda_fail_nth(fn, nth, CUDA_ERROR_OUT_OF_MEMORY);
			session(false);
			unsigned long calls = fakecuda_call_count(fn) - before;
			fakecuda_reset_faults();
			snap(&now);
			T_EQ_U(now.pinned, start.pinned);
			T_EQ_U(now.host_reg, start.host_reg);
			T_EQ_U(now.streams, start.streams);
			T_EQ_U(now.dev_allocs, start.dev_allocs);
			t_expect_fds(now.fds, start.fds);
			if (calls < nth)
				break;
			hits++;
		}
		fprintf(stderr, "%-26s faults injected: %d%s%s\n", fn, hits, funcs[i].not_reached ? "; not reached: " : "",
			funcs[i].not_reached ? funcs[i].not_reached : "");
		if (funcs[i].not_reached && hits)
			T_FAIL("%s was reached, but is listed as not reached (%s)", fn, funcs[i].not_reached);
		if (!funcs[i].not_reached && hits == 0)
			T_FAIL("%s: the session never reached it", fn);
		if (!funcs[i].not_reached && nth > MAX_NTH)
			T_FAIL("%s: still reached at call %d", fn, MAX_NTH);
		t_set_case("clean session after faults in %s", fn);
		session(true);
		if (pin_register)
			unsetenv("OPENCUFILE_STAGING_REGISTER");
		if (slow_streams)
			fakecuda_set_stream_delay_us(0);
	}
	t_mem_free(&dev);
	return 0;
}
