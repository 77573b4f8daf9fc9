/* SPDX-License-Identifier: Apache-2.0 */
/*
 * other_libcufile.c - a stand-in for another libcufile.so.0 (NVIDIA's, as the
 * nvidia-cufile wheel or the CUDA toolkit installs it) for the test of the
 * Python wheel: SONAME libcufile.so.0 and two functions.  It is told apart
 * from opencufile by cuFileGetVersion (OTHER_LIBCUFILE_VERSION, not ours) and
 * by its file, which holds none of opencufile's setting names.
 */
#include <cufile.h>

#define OTHER_LIBCUFILE_VERSION 1150

__attribute__((visibility("default"))) CUfileError_t cuFileGetVersion(int *version)
{
	CUfileError_t r = {CU_FILE_SUCCESS, CUDA_SUCCESS};
	if (!version)
		r.err = CU_FILE_INVALID_VALUE;
	else
		*version = OTHER_LIBCUFILE_VERSION;
	return r;
}

__attribute__((visibility("default"))) CUfileError_t cuFileDriverOpen(void)
{
	CUfileError_t r = {CU_FILE_DRIVER_NOT_INITIALIZED, CUDA_SUCCESS};
	return r;
}
