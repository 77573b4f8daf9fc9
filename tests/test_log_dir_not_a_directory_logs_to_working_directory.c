/* SPDX-License-Identifier: Apache-2.0 */
/* A logging.dir that is not a directory (missing, or a file) is taken and
 * read back as set, and the log goes to cufile.log in the working
 * directory, starting with one ERROR line that says so, rather than
 * nowhere (NVIDIA's libcufile 1.15.1 also logs "found invalid log
 * directory" and goes on).  A directory that exists gets the log. */
#include "config_test_util.h"

static char top[] = "/tmp/ocf_logdir_XXXXXX";

static void cleanup(void)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/cufile.log", top);
	unlink(p);
	snprintf(p, sizeof(p), "%s/sub/cufile.log", top);
	unlink(p);
	snprintf(p, sizeof(p), "%s/sub", top);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/file", top);
	unlink(p);
	rmdir(top);
}

/* Opens with logging.dir = dir, makes one ERROR line (a bad descriptor),
 * and reads logging.dir back while open. */
static void open_with_dir(const char *dir)
{
	char got[256];
	CUfileDescr_t d = {.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD, .handle.fd = -1};
	CUfileHandle_t fh;
	T_CUFILE_OK(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, dir));
	T_CUFILE_OK(cuFileDriverOpen());
	T_ASSERT(cuFileHandleRegister(&fh, &d).err != CU_FILE_SUCCESS);
	T_CUFILE_OK(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, got, sizeof(got)));
	T_ASSERT(strcmp(got, dir) == 0);
	T_CUFILE_OK(cuFileDriverClose());
}

int main(void)
{
	t_clear_config_env();
	unsetenv("CUFILE_LOGFILE_PATH");
	setenv("CUFILE_LOGGING_LEVEL", "ERROR", 1);
	if (!mkdtemp(top))
		T_FAIL("mkdtemp: %s", strerror(errno));
	atexit(cleanup);
	if (chdir(top) != 0)
		T_FAIL("chdir %s: %s", top, strerror(errno));

	open_with_dir("/nonexistent/opencufile-log-dir");
	T_ASSERT(strstr(t_slurp("cufile.log"), "logging.dir = \"/nonexistent/opencufile-log-dir\" is not a "
					       "directory: kept and read back as set; the log is cufile.log in the "
					       "working directory") != NULL);
	unlink("cufile.log");

	char file[128];
	snprintf(file, sizeof(file), "%s/file", top);
	fclose(fopen(file, "w"));
	open_with_dir(file);
	T_ASSERT(strstr(t_slurp("cufile.log"), "/file\" is not a directory") != NULL);
	unlink("cufile.log");

	char sub[128];
	snprintf(sub, sizeof(sub), "%s/sub", top);
	T_ASSERT(mkdir(sub, 0755) == 0);
	open_with_dir(sub);
	T_ASSERT(access("cufile.log", F_OK) != 0);
	T_ASSERT(strstr(t_slurp("sub/cufile.log"), " ERROR ") != NULL);
	return T_EXIT_PASS;
}
