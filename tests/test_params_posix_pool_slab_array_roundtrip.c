/* SPDX-License-Identifier: Apache-2.0 */
/* The slab arrays: defaults [4,1024,16384]/[128,64,64]; a set of equal
 * length replaces both; a bigger output array is zero-filled, a smaller one
 * refused; sizes and counts of 0 are kept as set (they add no staging
 * memory); NULL arrays are refused without changing anything. */
#include "config_test_util.h"

int main(void)
{
	t_clear_config_env();
	size_t sz[5], cnt[5];
	T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 3));
	T_EQ_U(sz[0], 4);
	T_EQ_U(sz[2], 16384);
	T_EQ_U(cnt[0], 128);
	T_EQ_U(cnt[2], 64);
	T_CUFILE(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 2), CU_FILE_INVALID_VALUE);

	size_t nsz[2] = {64, 2048}, ncnt[2] = {10, 20};
	T_CUFILE_OK(cuFileSetParameterPosixPoolSlabArray(nsz, ncnt, 2));
	T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 5));
	T_EQ_U(sz[0], 64);
	T_EQ_U(sz[1], 2048);
	T_EQ_U(sz[2], 0);
	T_EQ_U(cnt[1], 20);
	T_EQ_U(cnt[4], 0);

	size_t zero[2] = {64, 0};
	T_CUFILE_OK(cuFileSetParameterPosixPoolSlabArray(zero, ncnt, 2));
	T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 2));
	T_EQ_U(sz[1], 0);
	T_CUFILE_OK(cuFileSetParameterPosixPoolSlabArray(nsz, zero, 2));
	T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 2));
	T_EQ_U(sz[1], 2048);
	T_EQ_U(cnt[1], 0);
	T_CUFILE(cuFileSetParameterPosixPoolSlabArray(NULL, ncnt, 2), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetParameterPosixPoolSlabArray(nsz, NULL, 2), CU_FILE_INVALID_VALUE);
	T_CUFILE_OK(cuFileSetParameterPosixPoolSlabArray(nsz, ncnt, 2));

	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 2));
	T_EQ_U(sz[1], 2048);
	T_EQ_U(cnt[0], 10);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
