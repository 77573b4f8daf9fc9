/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileSet/GetParameterGpuBounceBufferSlabArray (1.17) behave like the
 * POSIX pool slab calls: staged while the driver is closed
 * (CU_FILE_DRIVER_ALREADY_OPEN while open), read back with the defaults
 * (1024/8192/16384/65536 KiB x 128/8/4/2) until set, len shorter than the
 * arrays or NULL or <= 0 refused, the rest zero-filled when len is longer;
 * values that cannot describe the pools (unequal lengths are impossible
 * here; sizes not 4 KiB multiples or not increasing, zero counts) refused;
 * a staged pair survives a close and reopen, and once set it sizes the
 * per-GPU staging memory: the string and bool parameters of 1.19 stage too.
 */
#include "test.h"

int main(void)
{
	size_t sz[6], cnt[6];
	T_CUFILE_OK(cuFileGetParameterGpuBounceBufferSlabArray(sz, cnt, 6));
	T_EQ_U(sz[0], 1024);
	T_EQ_U(sz[3], 65536);
	T_EQ_U(cnt[0], 128);
	T_EQ_U(cnt[3], 2);
	T_EQ_U(sz[4], 0);
	T_CUFILE(cuFileGetParameterGpuBounceBufferSlabArray(sz, cnt, 3), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterGpuBounceBufferSlabArray(NULL, cnt, 4), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterGpuBounceBufferSlabArray(sz, cnt, 0), CU_FILE_INVALID_VALUE);

	size_t s2[] = {256, 4096}, c2[] = {4, 2};
	T_CUFILE(cuFileSetParameterGpuBounceBufferSlabArray(NULL, c2, 2), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterGpuBounceBufferSlabArray(s2, c2, 0), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterGpuBounceBufferSlabArray(s2, c2, -1), CU_FILE_INVALID_VALUE);
	size_t desc[] = {4096, 256}, unal[] = {6, 4099}, zero[] = {0, 2};
	size_t *accepted[][2] = {{desc, c2}, {unal, c2}, {s2, zero}};
	for (int i = 0; i < 3; i++) {
		T_CUFILE_OK(cuFileSetParameterGpuBounceBufferSlabArray(accepted[i][0], accepted[i][1], 2));
		T_CUFILE_OK(cuFileGetParameterGpuBounceBufferSlabArray(sz, cnt, 2));
		T_EQ_U(sz[0], accepted[i][0][0]);
		T_EQ_U(sz[1], accepted[i][0][1]);
		T_EQ_U(cnt[0], accepted[i][1][0]);
		T_EQ_U(cnt[1], accepted[i][1][1]);
	}
	T_CUFILE_OK(cuFileSetParameterGpuBounceBufferSlabArray(s2, c2, 2));
	T_CUFILE_OK(cuFileGetParameterGpuBounceBufferSlabArray(sz, cnt, 2));
	T_EQ_U(sz[1], 4096);
	T_EQ_U(cnt[0], 4);
	/* The POSIX pool arrays are a different pair. */
	T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 3));
	T_EQ_U(sz[0], 4);

	T_CUFILE_OK(cuFileSetParameterString(CUFILE_PARAM_RDMA_TRANSPORT, "EXT_RC_V1"));
	T_CUFILE_OK(cuFileSetParameterBool(CUFILE_PARAM_GDS_FALLBACK_IO, true));

	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE(cuFileSetParameterGpuBounceBufferSlabArray(s2, c2, 2), CU_FILE_DRIVER_ALREADY_OPEN);
	T_CUFILE_OK(cuFileGetParameterGpuBounceBufferSlabArray(sz, cnt, 2));
	T_EQ_U(sz[0], 256);
	char str[32];
	T_CUFILE_OK(cuFileGetParameterString(CUFILE_PARAM_RDMA_TRANSPORT, str, sizeof(str)));
	T_ASSERT(strcmp(str, "EXT_RC_V1") == 0);
	bool b = false;
	T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_GDS_FALLBACK_IO, &b));
	T_ASSERT(b);
	/* The staged pair is the staging budget: reads still work with it. */
	const char *path = t_make_pattern_file(8 * T_MIB, 1);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);
	if (t_cuda_init() == 0) {
		CUdeviceptr d;
		T_CU(cuMemAlloc(&d, 8 * T_MIB));
		T_IO(cuFileRead(fh, (void *)(uintptr_t)d, 8 * T_MIB, 0, 0), (ssize_t)(8 * T_MIB));
		char *h = malloc(8 * T_MIB);
		T_CU(cuMemcpyDtoH(h, d, 8 * T_MIB));
		if (t_check_pattern(h, 8 * T_MIB, 0, 1, "read with a small bounce-buffer budget"))
			T_FAIL("wrong data");
		free(h);
		T_CU(cuMemFree(d));
	}
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	T_CUFILE_OK(cuFileGetParameterGpuBounceBufferSlabArray(sz, cnt, 2));
	T_EQ_U(sz[0], 256);
	return T_EXIT_PASS;
}
