/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileRead and cuFileWrite reject bad arguments and move no data.
 * Argument errors are -1 with errno, as NVIDIA's libcufile reports them:
 *   NULL buffer base, NULL handle, negative file or buffer offset, size
 *   above SSIZE_MAX                       -> -1, errno EINVAL
 *   a non-NULL handle that is unknown or deregistered
 *                                         -> -1, errno EBADF
 *   registered buffer, buf_offset + size past the registered length
 *                                         -> -1, errno EINVAL
 * Library errors that are not argument errors stay negative cuFile codes:
 *   unregistered device buffer, buf_offset + size past its allocation
 *                                         -> -CU_FILE_CUDA_POINTER_RANGE_ERROR
 * and size 0 returns 0.
 */
#include "test.h"

/* errno of the -1 return. */
#define EXPECT_NULL_BASE EINVAL
#define EXPECT_NULL_HANDLE EINVAL
#define EXPECT_UNKNOWN_HANDLE EBADF
#define EXPECT_NEG_OFFSET EINVAL
#define EXPECT_HUGE_SIZE EINVAL
#define EXPECT_PAST_REGISTRATION EINVAL
/* Return value (not an argument error). */
#define EXPECT_PAST_DEVICE_ALLOC (-CU_FILE_CUDA_POINTER_RANGE_ERROR)

#define FLEN (256 * T_KIB)
#define BLEN (64 * T_KIB)

static int check_fd;

/* The file must still hold pattern 0 everywhere (no write got through). */
static void file_untouched(void)
{
	uint8_t *b = malloc(FLEN);
	T_ASSERT(b != NULL);
	T_EQ_U(t_pread_full(check_fd, b, FLEN, 0), FLEN);
	if (t_check_pattern(b, FLEN, 0, 0, "file after rejected writes"))
		T_FAIL("a rejected write changed the file");
	T_EQ_U(t_file_size(check_fd), FLEN);
	free(b);
}

/* Read and write must both return `expected` (and, when that is -1, set
 * errno to `expected_errno`). */
static void both_e(CUfileHandle_t fh, void *base, size_t size, off_t foff, off_t boff,
		   ssize_t expected, int expected_errno, const char *what)
{
	t_set_case("%s (read)", what);
	T_IO_E(cuFileRead(fh, base, size, foff, boff), expected, expected_errno);
	t_set_case("%s (write)", what);
	T_IO_E(cuFileWrite(fh, base, size, foff, boff), expected, expected_errno);
	t_set_case("%s", "");
}

/* Both must return `expected` (a count or a negative cuFile code). */
static void both(CUfileHandle_t fh, void *base, size_t size, off_t foff, off_t boff,
		 ssize_t expected, const char *what)
{
	T_ASSERT(expected != -1);
	both_e(fh, base, size, foff, boff, expected, 0, what);
}

/* Both must return -1 with errno `expected_errno`. */
static void both_errno(CUfileHandle_t fh, void *base, size_t size, off_t foff, off_t boff,
		       int expected_errno, const char *what)
{
	both_e(fh, base, size, foff, boff, -1, expected_errno, what);
}

static void run(CUfileHandle_t fh, CUfileHandle_t gone, enum t_mem_kind kind)
{
	struct t_mem m;
	char w[160];
	const char *k = t_mem_kind_name(kind);

	t_mem_alloc(&m, kind, BLEN);
	t_mem_fill(&m, 0, T_POISON, BLEN);

	snprintf(w, sizeof(w), "%s NULL handle", k);
	both_errno(NULL, m.ptr, 4096, 0, 0, EXPECT_NULL_HANDLE, w);
	snprintf(w, sizeof(w), "%s deregistered handle", k);
	both_errno(gone, m.ptr, 4096, 0, 0, EXPECT_UNKNOWN_HANDLE, w);
	long junk[8] = { 0 };
	snprintf(w, sizeof(w), "%s never-registered handle", k);
	both_errno((CUfileHandle_t)junk, m.ptr, 4096, 0, 0, EXPECT_UNKNOWN_HANDLE, w);
	snprintf(w, sizeof(w), "%s negative file offset", k);
	both_errno(fh, m.ptr, 4096, -1, 0, EXPECT_NEG_OFFSET, w);
	snprintf(w, sizeof(w), "%s very negative file offset", k);
	both_errno(fh, m.ptr, 4096, -((off_t)1 << 40), 0, EXPECT_NEG_OFFSET, w);
	snprintf(w, sizeof(w), "%s negative buffer offset", k);
	both_errno(fh, (uint8_t *)m.ptr + 8192, 4096, 0, -1, EXPECT_NEG_OFFSET, w);
	snprintf(w, sizeof(w), "%s negative buffer offset -4096", k);
	both_errno(fh, (uint8_t *)m.ptr + 8192, 4096, 0, -4096, EXPECT_NEG_OFFSET, w);

	snprintf(w, sizeof(w), "%s size SSIZE_MAX + 1", k);
	both_errno(fh, m.ptr, (size_t)SSIZE_MAX + 1, 0, 0, EXPECT_HUGE_SIZE, w);
	snprintf(w, sizeof(w), "%s size SIZE_MAX", k);
	both_errno(fh, m.ptr, SIZE_MAX, 0, 0, EXPECT_HUGE_SIZE, w);

	snprintf(w, sizeof(w), "%s size 0", k);
	both(fh, m.ptr, 0, 0, 0, 0, w);
	snprintf(w, sizeof(w), "%s size 0 past EOF", k);
	both(fh, m.ptr, 0, FLEN + 100, 5, 0, w);

	/* Registered: the range must stay inside the registration. */
	T_CUFILE_OK(cuFileBufRegister(m.ptr, BLEN / 2, 0));
	snprintf(w, sizeof(w), "%s registered, size past registration", k);
	both_errno(fh, m.ptr, BLEN / 2 + 1, 0, 0, EXPECT_PAST_REGISTRATION, w);
	snprintf(w, sizeof(w), "%s registered, offset+size past registration", k);
	both_errno(fh, m.ptr, 4096, 0, BLEN / 2 - 4095, EXPECT_PAST_REGISTRATION, w);
	snprintf(w, sizeof(w), "%s registered, offset at registration end", k);
	both_errno(fh, m.ptr, 1, 0, BLEN / 2, EXPECT_PAST_REGISTRATION, w);
	/* Exactly up to the end is fine (read only: writes would change the file). */
	t_set_case("%s registered, exactly to the end", k);
	T_IO(cuFileRead(fh, m.ptr, 4096, 0, BLEN / 2 - 4096), 4096);
	T_CUFILE_OK(cuFileBufDeregister(m.ptr));

	/* Unregistered device memory: the range must stay in the allocation. */
	if (t_mem_is_device(&m)) {
		snprintf(w, sizeof(w), "%s unregistered, size past allocation", k);
		both(fh, m.ptr, BLEN + 1, 0, 0, EXPECT_PAST_DEVICE_ALLOC, w);
		snprintf(w, sizeof(w), "%s unregistered, offset+size past allocation", k);
		both(fh, m.ptr, 4096, 0, BLEN - 4095, EXPECT_PAST_DEVICE_ALLOC, w);
		snprintf(w, sizeof(w), "%s unregistered interior base, past allocation", k);
		both(fh, (uint8_t *)m.ptr + 4096, BLEN - 4095, 0, 0, EXPECT_PAST_DEVICE_ALLOC, w);
	}
	t_set_case("%s", "");

	/* Nothing reached the file, and the buffer past the legitimate read is
	 * untouched. */
	file_untouched();
	uint8_t *v = malloc(BLEN);
	T_ASSERT(v != NULL);
	t_mem_get(&m, 0, v, BLEN);
	if (t_check_fill(v, BLEN / 2 - 4096, T_POISON, "buffer before the legitimate read") ||
	    t_check_fill(v + BLEN / 2, BLEN / 2, T_POISON, "buffer after it"))
		T_FAIL("a rejected read changed the buffer");
	free(v);
	t_mem_free(&m);
}

int main(void)
{
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDWR), fd2 = t_open(path, O_RDWR);
	check_fd = t_open(path, O_RDONLY);

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	CUfileHandle_t gone = t_register_fd(fd2);
	cuFileHandleDeregister(gone);

	/* NULL base, with and without offsets. */
	both_errno(fh, NULL, 4096, 0, 0, EXPECT_NULL_BASE, "NULL base");
	both_errno(fh, NULL, 4096, 0, 4096, EXPECT_NULL_BASE, "NULL base with buffer offset");
	both_errno(NULL, NULL, 4096, 0, 0, EXPECT_NULL_BASE, "NULL base and NULL handle");

	run(fh, gone, T_MEM_HOST_MALLOC);
	if (t_cuda_init() == 0) {
		run(fh, gone, T_MEM_DEVICE);
		run(fh, gone, T_MEM_HOST_PINNED);
	} else {
		fprintf(stderr, "NOTE: no CUDA device; device cases skipped\n");
	}

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	close(check_fd);
	close(fd2);
	close(fd);
	return 0;
}
