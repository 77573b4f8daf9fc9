/* SPDX-License-Identifier: Apache-2.0 */
/* A variable named OPENCUFILE_* that is no setting of the library - one
 * removed, or misspelt - is logged as a WARN at the first driver open of
 * the process, once, naming it; the variables the library knows (the
 * stand-in driver's OPENCUFILE_LIBCUDA, a key's, one of the project's other
 * programs) are not.  At level ERROR the line is filtered like any WARN. */
#include "config_test_util.h"

static int count(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

int main(void)
{
	t_clear_config_env();
	const char *log = t_fresh_log("WARN");
	if (!log)
		T_SKIP("CUFILE_LOGFILE_PATH not set (run under ctest)");
	setenv("OPENCUFILE_REQUEST_PARALLEL", "1", 1); /* removed */
	setenv("OPENCUFILE_STRIPE_MIN_KBB", "512", 1); /* misspelt */
	setenv("OPENCUFILE_WAIT_WATCHDOG_S", "30", 1); /* a key's */
	setenv("OPENCUFILE_TEST_DIR", t_dir(), 1);     /* the tests' */
	for (int round = 0; round < 2; round++) {
		T_CUFILE_OK(cuFileDriverOpen());
		T_CUFILE_OK(cuFileDriverClose());
	}
	const char *txt = t_slurp(log);
	fprintf(stderr, "%s", txt);
	T_EQ(count(txt, " WARN "), 2);
	T_EQ(count(txt, "environment OPENCUFILE_REQUEST_PARALLEL is not a variable of this library"), 1);
	T_EQ(count(txt, "environment OPENCUFILE_STRIPE_MIN_KBB is not a variable of this library"), 1);
	T_EQ(count(txt, "OPENCUFILE_LIBCUDA"), 0);
	T_EQ(count(txt, "OPENCUFILE_WAIT_WATCHDOG_S"), 0);
	T_EQ(count(txt, "OPENCUFILE_TEST_DIR"), 0);
	return T_EXIT_PASS;
}
