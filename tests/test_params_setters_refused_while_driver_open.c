/* SPDX-License-Identifier: Apache-2.0 */
/* Every parameter setter returns CU_FILE_DRIVER_ALREADY_OPEN while the driver
 * is open (explicitly or implicitly) and changes nothing; after the close
 * they work again. */
#include "config_test_util.h"

int main(void)
{
	t_clear_config_env();
	size_t sz[1] = {4}, cnt[1] = {1}, v = 0;
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64), CU_FILE_DRIVER_ALREADY_OPEN);
	T_CUFILE(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, true), CU_FILE_DRIVER_ALREADY_OPEN);
	T_CUFILE(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "DEBUG"), CU_FILE_DRIVER_ALREADY_OPEN);
	T_CUFILE(cuFileSetParameterPosixPoolSlabArray(sz, cnt, 1), CU_FILE_DRIVER_ALREADY_OPEN);
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v));
	T_EQ_U(v, 128);
	T_CUFILE_OK(cuFileDriverClose());

	/* Implicitly opened by a handle registration. */
	const char *path = t_make_pattern_file(4096, 0);
	int fd = t_open(path, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	T_CUFILE(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64), CU_FILE_DRIVER_ALREADY_OPEN);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());

	T_CUFILE_OK(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64));
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v));
	T_EQ_U(v, 64);
	return T_EXIT_PASS;
}
