/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) Registering device memory sets
 * CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on its allocation, so that copies the
 * library issues are ordered with the application's work on that memory.
 * Checked for a whole allocation and for an interior sub-range.
 */
#include "test.h"
#include "fakecuda.h"

int main(void)
{
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());

	CUdeviceptr a = t_dev_alloc(T_MIB), b = t_dev_alloc(T_MIB);
	T_EQ(fakecuda_sync_memops(a), 0);
	T_EQ(fakecuda_sync_memops(b), 0);

	T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)a, T_MIB, 0));
	T_EQ(fakecuda_sync_memops(a), 1);
	T_EQ(fakecuda_sync_memops(b), 0); /* only the registered allocation */

	T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)(b + 4096), 8192, 0));
	T_EQ(fakecuda_sync_memops(b), 1);

	T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)a));
	T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)(b + 4096)));
	T_CU(cuMemFree(a));
	T_CU(cuMemFree(b));
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
