/* SPDX-License-Identifier: Apache-2.0 */
/* While closed, getters return what the next open will use (file, then
 * environment, then staged setter values); the open applies exactly that;
 * setter > environment > file > default; a staged value survives a
 * close/reopen and shows in the driver properties. */
#include "config_test_util.h"

int main(void)
{
	t_clear_config_env();
	t_use_config(t_write_text_file("{ \"properties\": { \"max_direct_io_size_kb\": 8192,\n"
				       "  \"io_batchsize\": 32, \"allow_compat_mode\": false },\n"
				       "  \"logging\": { \"level\": \"WARN\" } }\n"));
	size_t v = 0;
	bool b = true;
	char s[32];
	/* Closed, nothing staged: the file's values. */
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v));
	T_EQ_U(v, 8192);
	T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, &b));
	T_ASSERT(!b);
	/* Environment beats the file. */
	setenv("CUFILE_ALLOW_COMPAT_MODE", "true", 1);
	setenv("CUFILE_LOGGING_LEVEL", "INFO", 1);
	T_CUFILE_OK(cuFileDriverOpen()); /* re-reads file and environment */
	T_CUFILE_OK(cuFileDriverClose());
	T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, &b));
	T_ASSERT(b);
	T_CUFILE_OK(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, sizeof(s)));
	T_ASSERT(strcmp(s, "INFO") == 0);
	/* Setters beat both; staged values show while closed. */
	T_CUFILE_OK(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 4096));
	T_CUFILE_OK(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, false));
	T_CUFILE_OK(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "debug"));
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v));
	T_EQ_U(v, 4096);
	T_CUFILE_OK(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, sizeof(s)));
	T_ASSERT(strcmp(s, "debug") == 0); /* read back as set */
	/* Open: live values are the staged ones. */
	for (int round = 0; round < 2; round++) {
		t_set_case("open %d", round);
		T_CUFILE_OK(cuFileDriverOpen());
		CUfileDrvProps_t p;
		T_CUFILE_OK(cuFileDriverGetProperties(&p));
		T_EQ_U(p.nvfs.max_direct_io_size, 4096);
		T_EQ_U(p.max_batch_io_size, 32);
		T_EQ(p.nvfs.dcontrolflags & (1u << CU_FILE_ALLOW_COMPAT_MODE), 0);
		T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v));
		T_EQ_U(v, 32);
		T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, &b));
		T_ASSERT(!b);
		T_CUFILE_OK(cuFileDriverClose());
	}
	return T_EXIT_PASS;
}
