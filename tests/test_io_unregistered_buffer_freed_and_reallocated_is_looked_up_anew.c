/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An unregistered cuMemAlloc buffer is read into, freed, and a smaller one
 * allocated at the same address (the stand-in driver hands the address out
 * again).  The library remembers what it learnt about unregistered
 * allocations a thread reads into; that memory must never outlive the
 * allocation: a read that fits the new allocation moves the right bytes, and
 * one that fits the old but not the new allocation is refused with
 * CU_FILE_CUDA_POINTER_RANGE_ERROR instead of running past the new one.
 * Alternating between several live buffers keeps each one's own bounds.
 */
#include "test.h"

#define BIG (2 * T_MIB)
#define SMALL (256 * T_KIB)

static void read_check(CUfileHandle_t fh, CUdeviceptr d, size_t len, off_t foff, const char *what)
{
	uint8_t *host = malloc(len);
	T_ASSERT(host != NULL);
	t_set_case("%s", what);
	t_dev_fill(d, T_POISON, len);
	T_IO(cuFileRead(fh, (void *)(uintptr_t)d, len, foff, 0), len);
	t_dev_get(host, d, len);
	if (t_check_pattern(host, len, (uint64_t)foff, 0, "data"))
		T_FAIL("bad read");
	free(host);
}

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(4 * T_MIB, 0);
	int fd = t_open(path, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);

	for (int round = 0; round < 3; round++) {
		CUdeviceptr d1 = t_dev_alloc(BIG);
		read_check(fh, d1, BIG, 100 + round, "first allocation, whole");
		read_check(fh, d1, BIG / 2, 7, "first allocation, again");
		T_CU(cuMemFree(d1));
		CUdeviceptr d2 = t_dev_alloc(SMALL);
#ifdef OPENCUFILE_FAKE_CUDA
		T_EQ_U(d2, d1); /* the scenario needs the address to come back */
#endif
		read_check(fh, d2, SMALL, 4096, "second, smaller allocation");
		t_set_case("second allocation, old length");
		T_IO(cuFileRead(fh, (void *)(uintptr_t)d2, BIG, 0, 0), -CU_FILE_CUDA_POINTER_RANGE_ERROR);
		/* Two live buffers read in turn keep their own bounds. */
		CUdeviceptr d3 = t_dev_alloc(BIG);
		for (int i = 0; i < 6; i++) {
			read_check(fh, i % 2 ? d2 : d3, i % 2 ? SMALL : BIG, 8192 * i, "alternating");
			if (i % 2) {
				t_set_case("alternating, small one past its end");
				T_IO(cuFileRead(fh, (void *)(uintptr_t)d2, SMALL + 4096, 0, 0),
				     -CU_FILE_CUDA_POINTER_RANGE_ERROR);
			}
		}
		T_CU(cuMemFree(d2));
		T_CU(cuMemFree(d3));
	}
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	t_cleanup_files();
	printf("PASS\n");
	return T_EXIT_PASS;
}
