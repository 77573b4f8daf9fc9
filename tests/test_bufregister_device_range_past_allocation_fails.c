/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registering device memory that runs past the end of its cuMemAlloc
 * allocation fails with CUDA_POINTER_RANGE_ERROR (from the base, and from an
 * interior start), while the exact allocation and its tail register fine.
 */
#include "test.h"

#define EXPECT_PAST_END CU_FILE_CUDA_POINTER_RANGE_ERROR

int main(void)
{
	const size_t len = 1 * T_MIB;

	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	CUdeviceptr d = t_dev_alloc(len);
	/* A second allocation right after may well be contiguous: the check
	 * must be per allocation, not per mapped address range. */
	CUdeviceptr d2 = t_dev_alloc(len);
	uint8_t *p = (uint8_t *)(uintptr_t)d;

	T_CUFILE(cuFileBufRegister(p, len + 1, 0), EXPECT_PAST_END);
	T_CUFILE(cuFileBufRegister(p, 2 * len, 0), EXPECT_PAST_END);
	T_CUFILE(cuFileBufRegister(p + 4096, len, 0), EXPECT_PAST_END);
	T_CUFILE(cuFileBufRegister(p + len - 1, 2, 0), EXPECT_PAST_END);

	T_CUFILE_OK(cuFileBufRegister(p, len, 0));
	T_CUFILE_OK(cuFileBufDeregister(p));
	T_CUFILE_OK(cuFileBufRegister(p + len - 4096, 4096, 0));
	T_CUFILE_OK(cuFileBufDeregister(p + len - 4096));
	T_CUFILE_OK(cuFileBufRegister(p + len - 1, 1, 0));
	T_CUFILE_OK(cuFileBufDeregister(p + len - 1));

	T_CU(cuMemFree(d2));
	T_CU(cuMemFree(d));
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
