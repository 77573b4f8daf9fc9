/* SPDX-License-Identifier: Apache-2.0 */
/* cuFileGetParameterString writes at most len bytes, NUL included, whatever
 * the value's length; bytes past len are untouched. */
#include "config_test_util.h"

int main(void)
{
	t_clear_config_env();
	char dir[300];
	memset(dir, 'd', sizeof(dir) - 1);
	dir[0] = '/';
	dir[sizeof(dir) - 1] = '\0';
	T_CUFILE_OK(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, dir));
	for (int len = 1; len <= 301; len += 50) {
		char out[400];
		memset(out, 0x7f, sizeof(out));
		t_set_case("len %d", len);
		T_CUFILE_OK(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, out, len));
		size_t want = ((size_t)len - 1 < strlen(dir) ? (size_t)len - 1 : strlen(dir));
		T_EQ_U(strlen(out), want);
		T_ASSERT(memcmp(out, dir, want) == 0);
		for (int i = len; i < (int)sizeof(out); i++)
			T_EQ(out[i], 0x7f);
	}
	char lvl[3];
	T_CUFILE_OK(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, lvl, sizeof(lvl)));
	T_ASSERT(strcmp(lvl, "ER") == 0);
	/* A string longer than the field is refused, not cut. */
	char *huge = malloc(10000);
	memset(huge, 'x', 9999);
	huge[9999] = '\0';
	T_CUFILE(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, huge), CU_FILE_INVALID_VALUE);
	free(huge);
	return T_EXIT_PASS;
}
