/* SPDX-License-Identifier: Apache-2.0 */
/* The library's size variables in KiB (OPENCUFILE_*_KB) are read by one
 * function: unset or empty gives the default; decimal digits up to 2^30
 * give that many KiB (0 included); anything else — a sign, a suffix, spaces,
 * hexadecimal, a number too large — is refused with a warning and gives the
 * default, never a number read from a prefix.  The cached forms (KiB and
 * plain numbers) read the variable once. */
#define OCF_CONFIG_UNIT
#include "config_test_util.h"
#include "internal.h"

#define VAR "OPENCUFILE_TEST_SIZE_KB"

static size_t with(const char *value)
{
	if (value)
		setenv(VAR, value, 1);
	else
		unsetenv(VAR);
	return ocf_env_kb(VAR, 256);
}

int main(void)
{
	T_EQ(with(NULL), (size_t)256 * 1024);
	T_EQ(with(""), (size_t)256 * 1024);
	T_EQ(with("0"), (size_t)0);
	T_EQ(with("64"), (size_t)64 * 1024);
	T_EQ(with("0004"), (size_t)4 * 1024);
	T_EQ(with("1073741824"), (size_t)1073741824 * 1024); /* 2^30 KiB */
	static const char *const bad[] = {
	    "1073741825", "99999999999999999999999", "-4", "+4", " 4", "4 ", "4k", "4KiB", "0x40", "abc",
	    "1e3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t_set_case("refused: \"%s\"", bad[i]);
		T_EQ(with(bad[i]), (size_t)256 * 1024);
	}

	size_t cache = (size_t)-1;
	setenv(VAR, "8", 1);
	T_EQ(ocf_env_kb_once(VAR, 256, &cache), (size_t)8 * 1024);
	setenv(VAR, "16", 1);
	T_EQ(ocf_env_kb_once(VAR, 256, &cache), (size_t)8 * 1024); /* read once */
	T_EQ(cache, (size_t)8 * 1024);

	/* The plain-number form caches the same way (no KiB). */
	size_t ncache = (size_t)-1;
	setenv(VAR, "20", 1);
	T_EQ(ocf_env_num_once(VAR, 7, &ncache), (size_t)20);
	setenv(VAR, "40", 1);
	T_EQ(ocf_env_num_once(VAR, 7, &ncache), (size_t)20); /* read once */
	ncache = (size_t)-1;
	setenv(VAR, "4k", 1);
	T_EQ(ocf_env_num_once(VAR, 7, &ncache), (size_t)7); /* refused: the default */
	return 0;
}
