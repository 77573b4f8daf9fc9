/* SPDX-License-Identifier: Apache-2.0 */
/* cuFileSetParameterString, as NVIDIA's libcufile 1.15.1 answers it
 * (measured: tests/gpu/differential.c param_values): the empty string is
 * refused for LOGGING_LEVEL, ENV_LOGFILE_PATH and LOG_DIR (and for
 * RDMA_TRANSPORT, which 1.15.1 lacks), and so is a string longer than the
 * field (5000 bytes; ours keeps up to 4095, NVIDIA up to at least 255):
 * CU_FILE_INVALID_VALUE with the driver closed and also while it is open
 * (the value is checked before the driver's state), and nothing changes.
 * Any other string, 255 and 4095 bytes included, is taken and read back.
 * In cufile.json an empty string stays a value ("not set"), without a
 * message. */
#include "config_test_util.h"

static const CUFileStringConfigParameter_t params[] = {CUFILE_PARAM_LOGGING_LEVEL, CUFILE_PARAM_ENV_LOGFILE_PATH,
						       CUFILE_PARAM_LOG_DIR, CUFILE_PARAM_RDMA_TRANSPORT};
#define NP (sizeof(params) / sizeof(params[0]))

static char got[8192];
static const char *get(CUFileStringConfigParameter_t p)
{
	memset(got, 0, sizeof(got));
	T_CUFILE_OK(cuFileGetParameterString(p, got, (int)sizeof(got)));
	return got;
}

static char *xs(size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		T_FAIL("out of memory");
	memset(s, 'x', n);
	s[n] = '\0';
	return s;
}

int main(void)
{
	t_clear_config_env();
	const char *log = t_fresh_log("ERROR");
	char before[NP][4096];
	char *s255 = xs(255), *s4095 = xs(4095), *s4096 = xs(4096), *s5000 = xs(5000);

	/* The file: "" is a value there (the keys' own defaults are ""). */
	t_use_config(t_write_text_file("{ \"logging\": { \"dir\": \"\" },\n"
				       "  \"properties\": { \"rdma_transport_type\": \"\" } }"));
	T_ASSERT(strcmp(get(CUFILE_PARAM_RDMA_TRANSPORT), "") == 0);
	T_CUFILE_OK(cuFileDriverOpen());
	T_ASSERT(strcmp(get(CUFILE_PARAM_RDMA_TRANSPORT), "") == 0);
	T_CUFILE_OK(cuFileDriverClose());
	if (log)
		T_ASSERT(strstr(t_slurp(log), "rdma_transport_type") == NULL);

	for (int open = 0; open < 2; open++) {
		if (open)
			T_CUFILE_OK(cuFileDriverOpen());
		for (size_t i = 0; i < NP; i++) {
			t_set_case("%s, parameter %d", open ? "open" : "closed", (int)params[i]);
			snprintf(before[i], sizeof(before[i]), "%s", get(params[i]));
			T_CUFILE(cuFileSetParameterString(params[i], ""), CU_FILE_INVALID_VALUE);
			T_CUFILE(cuFileSetParameterString(params[i], s5000), CU_FILE_INVALID_VALUE);
			T_CUFILE(cuFileSetParameterString(params[i], s4096), CU_FILE_INVALID_VALUE);
			T_ASSERT(strcmp(get(params[i]), before[i]) == 0);
			if (open)
				T_CUFILE(cuFileSetParameterString(params[i], "INFO"), CU_FILE_DRIVER_ALREADY_OPEN);
		}
		t_set_case("%s", "");
		if (open)
			T_CUFILE_OK(cuFileDriverClose());
	}
	if (log)
		T_ASSERT(strstr(t_slurp(log), "cuFileSetParameterString: logging.dir: the empty string is not a value") !=
			 NULL);

	/* Closed, anything else is staged and read back (the driver is not
	 * opened again: these would move the log). */
	const char *taken[] = {"BOGUS_VALUE", "info", "/nonexistent/dir", s255, s4095};
	for (size_t i = 0; i < NP; i++)
		for (size_t j = 0; j < sizeof(taken) / sizeof(taken[0]); j++) {
			t_set_case("parameter %d, value %zu bytes", (int)params[i], strlen(taken[j]));
			T_CUFILE_OK(cuFileSetParameterString(params[i], taken[j]));
			T_ASSERT(strcmp(get(params[i]), taken[j]) == 0);
		}
	t_set_case("%s", "");

	free(s255);
	free(s4095);
	free(s4096);
	free(s5000);
	return T_EXIT_PASS;
}
