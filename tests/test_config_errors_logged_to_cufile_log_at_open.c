/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration's messages reach cufile.log when the driver opens,
 * filtered by the level being configured: ERROR lines with file:line and
 * key always, WARN lines (unknown keys) only at WARN and above. */
#include "config_test_util.h"

static const char *log_after_open(const char *log, const char *level)
{
	if (level)
		setenv("CUFILE_LOGGING_LEVEL", level, 1);
	else
		unsetenv("CUFILE_LOGGING_LEVEL");
	unlink(log);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileDriverClose());
	return t_slurp(log);
}

int main(void)
{
	t_clear_config_env();
	const char *log = getenv("CUFILE_LOGFILE_PATH");
	if (!log)
		T_SKIP("CUFILE_LOGFILE_PATH not set (run under ctest)");
	t_use_config(t_data("cufile_errors.json"));
	const char *txt = log_after_open(log, NULL);
	T_ASSERT(strstr(txt, " ERROR ") != NULL);
	T_ASSERT(strstr(txt, "cufile_errors.json:6: properties.max_direct_io_size_kb") != NULL);
	T_ASSERT(strstr(txt, "unknown key") == NULL);
	txt = log_after_open(log, "WARN");
	T_ASSERT(strstr(txt, " WARN ") != NULL);
	T_ASSERT(strstr(txt, "cufile_errors.json:10: unknown key \"properties.frobnicate\"") != NULL);
	return T_EXIT_PASS;
}
