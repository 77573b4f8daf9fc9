/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) Fault injection, SQLite-style: for each CUDA driver
 * function the library uses to set itself up or to move data, fail its 1st,
 * 2nd, ... call during a session (open, register, read/write device memory,
 * close) until the session no longer reaches the fault.  Whatever the calls
 * return, nothing crashes or hangs, no call reports more bytes than are
 * correct, and after the close the pinned allocations, host registrations,
 * streams, device allocations and fds are back to their starting counts;
 * a clean session afterwards works.
 */
#include "test.h"
#include "fakecuda.h"

#define MAX_NTH 24

/* Driver functions the library calls (the test's own copies use the
 * synchronous cuMemcpyHtoD_v2/cuMemcpyDtoH_v2, so those are not faulted). */
static const char *funcs[] = {
	"cuMemHostAlloc",        "cuMemHostRegister_v2",   "cuStreamCreate",
	"cuEventCreate",         "cuEventRecord",          "cuEventSynchronize",
	"cuStreamSynchronize",   "cuCtxSetCurrent",        "cuDevicePrimaryCtxRetain",
	"cuPointerGetAttribute", "cuPointerGetAttributes", "cuMemGetAddressRange_v2",
	"cuPointerSetAttribute", "cuMemcpyHtoDAsync_v2",   "cuMemcpyDtoHAsync_v2",
	"cuCtxPushCurrent_v2",   "cuCtxPopCurrent_v2",     "cuDeviceGetCount",
	"cuDeviceGetAttribute",  "cuCtxGetCurrent",
};

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
			r = cuFileWrite(fh, dev.ptr, 4096, 1 * T_MIB, 1);
			if (strict)
				T_EQ(r, 4096);
			/* Writing the file's own bytes back (shifted by one) is not
			 * a change; restore to keep the pattern exact anyway. */
			int cfd = t_open(path, O_RDWR);
			t_pwrite_pattern(cfd, 1 * T_MIB, 4096, 0);
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
		int hits = 0;
		for (unsigned long nth = 1; nth <= MAX_NTH; nth++) {
			t_set_case("fail call %lu of %s", nth, funcs[i]);
			unsigned long before = fakecuda_call_count(funcs[i]);
			fakecuda_fail_nth(funcs[i], nth, CUDA_ERROR_OUT_OF_MEMORY);
			session(false);
			unsigned long calls = fakecuda_call_count(funcs[i]) - before;
			fakecuda_reset_faults();
			snap(&now);
			T_EQ_U(now.pinned, start.pinned);
			T_EQ_U(now.host_reg, start.host_reg);
			T_EQ_U(now.streams, start.streams);
			T_EQ_U(now.dev_allocs, start.dev_allocs);
			if (now.fds != start.fds) {
		t_dump_fds();
		T_EQ(now.fds, start.fds);
	}
			if (calls < nth)
				break;
			hits++;
		}
		fprintf(stderr, "%-26s faults injected: %d\n", funcs[i], hits);
		t_set_case("clean session after faults in %s", funcs[i]);
		session(true);
	}
	t_mem_free(&dev);
	return 0;
}
