/* SPDX-License-Identifier: Apache-2.0 */
/* Unknown enum values, NULL pointers and bad lengths are
 * CU_FILE_INVALID_VALUE.  cuFileGetParameterMinMaxValue reports NVIDIA's
 * ranges (as its libcufile reports them); the defaults lie inside them and
 * the ends are accepted.  Values outside them are accepted too:
 * test_params_accept_out_of_range_values_and_read_back; slab arrays of up
 * to 64 elements: test_params_slab_arrays_up_to_64_elements_roundtrip. */
#include "config_test_util.h"

/* Expected [min, max] of every size parameter, in enum order. */
static const size_t EXPECT_RANGE[][2] = {
	[CUFILE_PARAM_PROFILE_STATS] = { 0, 3 },
	[CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH] = { 1, 256 },
	[CUFILE_PARAM_EXECUTION_MAX_IO_THREADS] = { 0, 32 },
	[CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB] = { 4, 4294967295u },
	[CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM] = { 0, 8 },
	[CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB] = { 64, 16384 },
	[CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB] = { 0, 268435456 },
	[CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB] = { 64, 16384 },
	[CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB] = { 64, 268435456 },
	[CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE] = { 1, 256 },
	[CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB] = { 4, 18014398509481980ull },
	[CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS] = { 1, 1000 },
};

int main(void)
{
	t_clear_config_env();
	size_t v, mn, mx;
	bool b;
	char s[8];
	T_CUFILE(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)12, &v), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)-1, &v), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)99, 1), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterBool((CUFileBoolConfigParameter_t)14, &b), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterBool(CUFILE_PARAM_PROFILE_NVTX, NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterBool((CUFileBoolConfigParameter_t)14, true), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterString((CUFileStringConfigParameter_t)4, s, sizeof(s)), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, NULL, 8), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, s, 0), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)12, &mn, &mx), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, NULL, &mx), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterPosixPoolSlabArray(NULL, &v, 1), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterPosixPoolSlabArray(&v, &v, 0), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterPosixPoolSlabArray(&v, &v, -1), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetParameterPosixPoolSlabArray(&v, NULL, 1), CU_FILE_INVALID_VALUE);

	T_EQ_U(sizeof(EXPECT_RANGE) / sizeof(EXPECT_RANGE[0]),
	       CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS + 1);
	for (int p = 0; p <= CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS; p++) {
		CUFileSizeTConfigParameter_t param = (CUFileSizeTConfigParameter_t)p;
		t_set_case("size parameter %d", p);
		T_CUFILE_OK(cuFileGetParameterMinMaxValue(param, &mn, &mx));
		T_EQ_U(mn, EXPECT_RANGE[p][0]);
		T_EQ_U(mx, EXPECT_RANGE[p][1]);
		T_CUFILE_OK(cuFileGetParameterSizeT(param, &v));
		T_ASSERT(v >= mn && v <= mx); /* the default is in range */
		T_CUFILE_OK(cuFileSetParameterSizeT(param, mn));
		T_CUFILE_OK(cuFileSetParameterSizeT(param, mx));
		T_CUFILE_OK(cuFileGetParameterSizeT(param, &v));
		T_EQ_U(v, mx);
	}
	return T_EXIT_PASS;
}
