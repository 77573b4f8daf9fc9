/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) GPU memory is resolved at submission (its copies are
 * queued then), whatever the stream's flags; host memory only on a stream
 * registered with all three CU_FILE_STREAM_FIXED_* flags.  Once the stream
 * reaches such an operation the executor makes no pointer lookup
 * (cuPointerGetAttribute[s]) and only moves data; host memory with two of
 * the flags is looked up when the stream gets there.  A request that fails
 * the checks (a range past a registration, device memory past its
 * allocation) still reports its error in *bytes_p in stream order, not
 * before; a failure to queue the stream wait after the early setup leaks
 * nothing and leaves memory untouched.  The stream is held on a flag
 * (cuStreamWaitValue32) while the test counts calls.
 */
#include "async_test_util.h"
#include "fakecuda.h"

#define FLEN (256 * T_KIB)
#define SZ (64 * T_KIB)
#define ALL (CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET | CU_FILE_STREAM_FIXED_FILE_SIZE)

static uint32_t *flag;
static CUdeviceptr flag_dev;
static uint32_t flag_val;

static unsigned long lookups(void)
{
	return fakecuda_call_count("cuPointerGetAttributes") + fakecuda_call_count("cuPointerGetAttribute");
}

/* Queues one operation behind a held stream; returns the pointer lookups
 * made after submission, once the stream ran it. */
static unsigned long held_op(CUstream s, bool write, CUfileHandle_t fh, CUdeviceptr base, size_t size, off_t foff,
			     off_t boff, ssize_t *bytes)
{
	T_CU(cuStreamWaitValue32(s, flag_dev, ++flag_val, CU_STREAM_WAIT_VALUE_GEQ));
	*bytes = -999;
	size_t sz = size;
	off_t fo = foff, bo = boff;
	void *p = (void *)(uintptr_t)base;
	T_CUFILE_OK(write ? cuFileWriteAsync(fh, p, &sz, &fo, &bo, bytes, s) : cuFileReadAsync(fh, p, &sz, &fo, &bo, bytes, s));
	unsigned long before = lookups();
	t_sleep_ms(20);
	T_EQ(__atomic_load_n(bytes, __ATOMIC_ACQUIRE), -999); /* nothing before the stream gets there */
	__atomic_store_n(flag, flag_val, __ATOMIC_RELEASE);
	T_CU(cuStreamSynchronize(s));
	return lookups() - before;
}

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDWR);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	T_CU(cuMemHostAlloc((void **)&flag, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	*flag = 0;
	T_CU(cuMemHostGetDevicePointer(&flag_dev, flag, 0));
	CUdeviceptr dev = t_dev_alloc(4 * SZ);
	uint8_t *host = malloc(4 * SZ);
	T_ASSERT(host != NULL);
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	ssize_t bytes;

	/* ---- all fixed: no lookup when the stream reaches the read */
	T_CUFILE_OK(cuFileStreamRegister(s, ALL));
	t_dev_fill(dev, T_POISON, 4 * SZ);
	T_EQ_U(held_op(s, false, fh, dev, SZ, 4096, 3, &bytes), 0);
	T_EQ(bytes, SZ);
	t_dev_get(host, dev, 4 * SZ);
	T_ASSERT(t_check_fill(host, 3, T_POISON, "before") == 0);
	T_ASSERT(t_check_pattern(host + 3, SZ, 4096, 0, "fixed read") == 0);
	T_ASSERT(t_check_fill(host + 3 + SZ, 3 * SZ - 3, T_POISON, "after") == 0);

	/* Registered memory too, and a write. */
	T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)dev, 4 * SZ, 0));
	t_fill_pattern(host, SZ, 8192, 5);
	t_dev_put(dev + SZ, host, SZ);
	T_EQ_U(held_op(s, true, fh, dev, SZ, 8192, SZ, &bytes), 0);
	T_EQ(bytes, SZ);
	T_EQ_U(t_pread_full(fd, host, SZ, 8192), SZ);
	T_ASSERT(t_check_pattern(host, SZ, 8192, 5, "fixed write") == 0);
	t_pwrite_pattern(fd, 8192, SZ, 0);

	/* Errors found at submission arrive in stream order. */
	T_EQ_U(held_op(s, false, fh, dev, SZ, 0, 3 * SZ + 1, &bytes), 0); /* past the registration */
	T_EQ(bytes, -EINVAL);
	T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)dev));
	T_EQ_U(held_op(s, false, fh, dev, SZ, 0, 3 * SZ + 1, &bytes), 0); /* past the allocation */
	T_EQ(bytes, -CU_FILE_CUDA_POINTER_RANGE_ERROR);

	/* ---- two of the flags: GPU memory is still resolved at submission,
	 * host memory when the stream gets there */
	T_CUFILE_OK(cuFileStreamRegister(s, CU_FILE_STREAM_FIXED_FILE_OFFSET | CU_FILE_STREAM_FIXED_FILE_SIZE));
	T_EQ_U(held_op(s, false, fh, dev, SZ, 4096, 3, &bytes), 0);
	T_EQ(bytes, SZ);
	memset(host, T_POISON, 4 * SZ);
	T_ASSERT(held_op(s, false, fh, (CUdeviceptr)(uintptr_t)host, SZ, 4096, 3, &bytes) >= 1);
	T_EQ(bytes, SZ);
	T_ASSERT(t_check_pattern(host + 3, SZ, 4096, 0, "host read") == 0);

	/* ---- all fixed, but the stream wait cannot be queued: an error, and
	 * the resolved handle is released (deregister and close complete). */
	T_CUFILE_OK(cuFileStreamRegister(s, ALL));
	t_dev_fill(dev, T_POISON, 4 * SZ);
	T_CU(cuStreamWaitValue32(s, flag_dev, ++flag_val, CU_STREAM_WAIT_VALUE_GEQ));
	fakecuda_fail_nth("cuStreamWaitValue32_v2", 1, CUDA_ERROR_UNKNOWN);
	size_t sz = SZ;
	off_t fo = 0, bo = 0;
	bytes = -999;
	T_CUFILE(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &sz, &fo, &bo, &bytes, s), CU_FILE_CUDA_DRIVER_ERROR);
	fakecuda_reset_faults();
	__atomic_store_n(flag, flag_val, __ATOMIC_RELEASE);
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, -999);
	t_dev_get(host, dev, 4 * SZ);
	T_ASSERT(t_check_fill(host, 4 * SZ, T_POISON, "abandoned read") == 0);

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuStreamDestroy(s));
	T_CU(cuMemFree(dev));
	T_CU(cuMemFreeHost(flag));
	free(host);
	close(fd);
	return T_EXIT_PASS;
}
