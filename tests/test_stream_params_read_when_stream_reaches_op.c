/* SPDX-License-Identifier: Apache-2.0 */
/*
 * When the values behind size_p, file_offset_p and bufPtr_offset_p are
 * read: the test blocks the stream on a flag (cuStreamWaitValue32), queues
 * a read, changes the three values, checks nothing ran yet, releases the
 * stream and looks at which values were used.
 *   host memory   all three when the stream reaches the operation;
 *   GPU memory    the file offset then, size and buffer offset at
 *                 submission (the copies into GPU memory are queued on the
 *                 stream at submission: docs/compatibility.md).
 * cuFileStreamRegister's CU_FILE_STREAM_FIXED_* flags make the values at
 * submission stick, one field at a time; re-registering changes the flags,
 * deregistering twice or registering unknown flags fails.
 */
#include "async_test_util.h"

#define FLEN (256 * T_KIB)

static uint32_t *flag;
static CUdeviceptr flag_dev;
static uint32_t flag_val;
static CUfileHandle_t fh;
static CUdeviceptr dev;
static uint8_t *hostbuf;

/* Queues a read of (4096 @ 0, boff 0) into GPU or host memory, then
 * changes the values to (8192 @ 65536, boff 100) before the stream reaches
 * it.  Checks the bytes reported and which values were used. */
static void run_case1(CUstream s, unsigned fixed, bool gpu)
{
	t_set_case("fixed flags %#x, %s memory", fixed, gpu ? "GPU" : "host");
	if (gpu)
		t_dev_fill(dev, T_POISON, 64 * T_KIB);
	else
		memset(hostbuf, T_POISON, 64 * T_KIB);
	void *base = gpu ? (void *)(uintptr_t)dev : (void *)hostbuf;
	T_CU(cuStreamWaitValue32(s, flag_dev, ++flag_val, CU_STREAM_WAIT_VALUE_GEQ));
	size_t size = 4096;
	off_t foff = 0, boff = 0;
	ssize_t bytes = -999;
	T_CUFILE_OK(cuFileReadAsync(fh, base, &size, &foff, &boff, &bytes, s));
	size = 8192;
	foff = 65536;
	boff = 100;
	t_sleep_ms(30);
	T_EQ(__atomic_load_n(&bytes, __ATOMIC_ACQUIRE), -999); /* the stream has not reached it */
	__atomic_store_n(flag, flag_val, __ATOMIC_RELEASE);
	T_CU(cuStreamSynchronize(s));
	size_t want_size = gpu || fixed & CU_FILE_STREAM_FIXED_FILE_SIZE ? 4096 : 8192;
	off_t want_foff = fixed & CU_FILE_STREAM_FIXED_FILE_OFFSET ? 0 : 65536;
	off_t want_boff = gpu || fixed & CU_FILE_STREAM_FIXED_BUF_OFFSET ? 0 : 100;
	T_EQ(bytes, (ssize_t)want_size);
	uint8_t *chk = malloc(64 * T_KIB);
	T_ASSERT(chk != NULL);
	if (gpu)
		t_dev_get(chk, dev, 64 * T_KIB);
	else
		memcpy(chk, hostbuf, 64 * T_KIB);
	if (t_check_fill(chk, (size_t)want_boff, T_POISON, "before") ||
	    t_check_pattern(chk + want_boff, want_size, (uint64_t)want_foff, 0, "data") ||
	    t_check_fill(chk + want_boff + want_size, 64 * T_KIB - (size_t)want_boff - want_size, T_POISON, "after"))
		T_FAIL("the read used the wrong values");
	free(chk);
}

static void run_case(CUstream s, unsigned fixed)
{
	run_case1(s, fixed, true);
	run_case1(s, fixed, false);
}

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	fh = t_register_fd(fd);
	T_CU(cuMemHostAlloc((void **)&flag, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	*flag = 0;
	T_CU(cuMemHostGetDevicePointer(&flag_dev, flag, 0));
	dev = t_dev_alloc(64 * T_KIB);
	hostbuf = malloc(64 * T_KIB);
	T_ASSERT(hostbuf != NULL);
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

	/* Not registered: everything read late. */
	run_case(s, 0);
	/* Registered without fixed flags: the same. */
	T_CUFILE_OK(cuFileStreamRegister(s, 0));
	run_case(s, 0);
	/* All fixed. */
	unsigned all = CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET |
		       CU_FILE_STREAM_FIXED_FILE_SIZE;
	T_CUFILE_OK(cuFileStreamRegister(s, all | CU_FILE_STREAM_PAGE_ALIGNED_INPUTS));
	run_case(s, all);
	/* One at a time (re-registering replaces the flags). */
	const unsigned one[] = {CU_FILE_STREAM_FIXED_BUF_OFFSET, CU_FILE_STREAM_FIXED_FILE_OFFSET,
				CU_FILE_STREAM_FIXED_FILE_SIZE};
	for (int i = 0; i < 3; i++) {
		T_CUFILE_OK(cuFileStreamRegister(s, one[i]));
		run_case(s, one[i]);
	}
	/* Deregistered: read late again. */
	T_CUFILE_OK(cuFileStreamDeregister(s));
	run_case(s, 0);
	t_set_case("%s", "");
	T_CUFILE(cuFileStreamDeregister(s), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileStreamRegister(s, 0x100), CU_FILE_INVALID_VALUE);

	/* A registered stream is forgotten at close. */
	T_CUFILE_OK(cuFileStreamRegister(s, all));
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE(cuFileStreamDeregister(s), CU_FILE_INVALID_VALUE);
	T_CUFILE_OK(cuFileDriverClose());

	T_CU(cuStreamDestroy(s));
	T_CU(cuMemFree(dev));
	T_CU(cuMemFreeHost(flag));
	free(hostbuf);
	close(fd);
	return T_EXIT_PASS;
}
