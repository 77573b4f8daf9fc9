/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufileop_status_error gives a non-empty string for every CUfileOpError
 * value of the header, a different one for each, and CUFILE_ERRSTR maps
 * negative return values to the same strings.
 */
#include "test.h"

#define E(x) { x, #x }
static const struct {
	CUfileOpError code;
	const char *name;
} codes[] = {
	E(CU_FILE_SUCCESS), E(CU_FILE_DRIVER_NOT_INITIALIZED), E(CU_FILE_DRIVER_INVALID_PROPS),
	E(CU_FILE_DRIVER_UNSUPPORTED_LIMIT), E(CU_FILE_DRIVER_VERSION_MISMATCH),
	E(CU_FILE_DRIVER_VERSION_READ_ERROR), E(CU_FILE_DRIVER_CLOSING),
	E(CU_FILE_PLATFORM_NOT_SUPPORTED), E(CU_FILE_IO_NOT_SUPPORTED),
	E(CU_FILE_DEVICE_NOT_SUPPORTED), E(CU_FILE_NVFS_DRIVER_ERROR), E(CU_FILE_CUDA_DRIVER_ERROR),
	E(CU_FILE_CUDA_POINTER_INVALID), E(CU_FILE_CUDA_MEMORY_TYPE_INVALID),
	E(CU_FILE_CUDA_POINTER_RANGE_ERROR), E(CU_FILE_CUDA_CONTEXT_MISMATCH),
	E(CU_FILE_INVALID_MAPPING_SIZE), E(CU_FILE_INVALID_MAPPING_RANGE),
	E(CU_FILE_INVALID_FILE_TYPE), E(CU_FILE_INVALID_FILE_OPEN_FLAG), E(CU_FILE_DIO_NOT_SET),
	E(CU_FILE_INVALID_VALUE), E(CU_FILE_MEMORY_ALREADY_REGISTERED),
	E(CU_FILE_MEMORY_NOT_REGISTERED), E(CU_FILE_PERMISSION_DENIED),
	E(CU_FILE_DRIVER_ALREADY_OPEN), E(CU_FILE_HANDLE_NOT_REGISTERED),
	E(CU_FILE_HANDLE_ALREADY_REGISTERED), E(CU_FILE_DEVICE_NOT_FOUND),
	E(CU_FILE_INTERNAL_ERROR), E(CU_FILE_GETNEWFD_FAILED), E(CU_FILE_NVFS_SETUP_ERROR),
	E(CU_FILE_IO_DISABLED), E(CU_FILE_BATCH_SUBMIT_FAILED),
	E(CU_FILE_GPU_MEMORY_PINNING_FAILED), E(CU_FILE_BATCH_FULL),
	E(CU_FILE_ASYNC_NOT_SUPPORTED), E(CU_FILE_INTERNAL_BATCH_SETUP_ERROR),
	E(CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR), E(CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR),
	E(CU_FILE_INTERNAL_BATCH_CANCEL_ERROR), E(CU_FILE_NOMEM_ERROR), E(CU_FILE_IO_ERROR),
	E(CU_FILE_INTERNAL_BUF_REGISTER_ERROR), E(CU_FILE_HASH_OPR_ERROR),
	E(CU_FILE_INVALID_CONTEXT_ERROR), E(CU_FILE_NVFS_INTERNAL_DRIVER_ERROR),
	E(CU_FILE_BATCH_NOCOMPAT_ERROR), E(CU_FILE_IO_MAX_ERROR),
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

int main(void)
{
	/* 0 plus 5001..5050 without 5021 and 5032. */
	T_EQ_U(NCODES, 49);
	const char *unknown = cufileop_status_error((CUfileOpError)4999);
	T_ASSERT(unknown != NULL);

	for (size_t i = 0; i < NCODES; i++) {
		const char *s = cufileop_status_error(codes[i].code);
		t_set_case("%s", codes[i].name);
		T_ASSERT(s != NULL);
		T_GT(strlen(s), 0);
		if (!strcmp(s, unknown))
			T_FAIL("%s gives the unknown-code string \"%s\"", codes[i].name, s);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(s, cufileop_status_error(codes[j].code)))
				T_FAIL("%s and %s share the string \"%s\"", codes[i].name,
				       codes[j].name, s);
		if (codes[i].code != CU_FILE_SUCCESS) {
			T_ASSERT(IS_CUFILE_ERR(-(int)codes[i].code));
			T_ASSERT(CUFILE_ERRSTR(-(int)codes[i].code) == s ||
				 !strcmp(CUFILE_ERRSTR(-(int)codes[i].code), s));
		}
	}
	return 0;
}
