/* SPDX-License-Identifier: Apache-2.0 */
/* A library file that reads a variable of its own, outside the settings
 * table, for test_settings_check_finds_a_variable_outside_the_table:
 * never compiled. */
#include <stdlib.h>

int reader_threads(void)
{
	const char *v = getenv("OPENCUFILE_NOT_A_ROW");
	return v ? atoi(v) : 4;
}
