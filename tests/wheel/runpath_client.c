/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runpath_client.c - a library that links libcufile.so.0 (DT_NEEDED) and
 * names the directory of another copy in its RUNPATH, as torch's
 * libtorch_cuda.so names the nvidia-cufile wheel's: the test of the Python
 * wheel loads it with ctypes and asks which copy its calls reach.
 */
#include <cufile.h>

__attribute__((visibility("default"))) int runpath_client_version(void)
{
	int v = -1;
	CUfileError_t r = cuFileGetVersion(&v);
	return r.err == CU_FILE_SUCCESS ? v : -1;
}
