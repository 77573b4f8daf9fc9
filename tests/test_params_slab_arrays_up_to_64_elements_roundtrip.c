/* SPDX-License-Identifier: Apache-2.0 */
/* Slab arrays of up to 64 elements: NVIDIA's libcufile 1.15.1 takes 17
 * POSIX pool slabs and reads them back (measured: tests/gpu/differential.c
 * param_values), so ours takes at least as many.  For the POSIX pool and
 * the GPU bounce-buffer setters: 17 and 64 elements are staged, read back
 * closed and after an open, and the driver reads data correctly with them;
 * 65 are refused (CU_FILE_INVALID_VALUE) and the previous arrays stay.  In
 * cufile.json 64 elements are taken and 65 are an error (the defaults
 * stay). */
#include "config_test_util.h"

typedef CUfileError_t (*set_fn)(const size_t *, const size_t *, int);
typedef CUfileError_t (*get_fn)(size_t *, size_t *, int);

static size_t sz[65], cnt[65];

static void fill(int n, size_t first)
{
	for (int i = 0; i < n; i++) {
		sz[i] = first + 4 * (size_t)i;
		cnt[i] = (size_t)i % 3 + 1;
	}
}

static void expect(get_fn get, int n, size_t first)
{
	size_t s[65], c[65];
	T_CUFILE_OK(get(s, c, n));
	for (int i = 0; i < n; i++) {
		T_EQ_U(s[i], first + 4 * (size_t)i);
		T_EQ_U(c[i], (size_t)i % 3 + 1);
	}
}

int main(void)
{
	t_clear_config_env();
	const char *log = t_fresh_log("ERROR");
	const char *data = t_make_pattern_file(20 * T_MIB, 3);
	/* The file first (staged arrays would win over it): 64 elements taken,
	 * 65 an error that leaves both arrays at their defaults. */
	for (int n = 64; n <= 65; n++) {
		char text[4096];
		int o = snprintf(text, sizeof(text), "{ \"properties\": { \"posix_pool_slab_size_kb\": [");
		for (int i = 0; i < n; i++)
			o += snprintf(text + o, sizeof(text) - (size_t)o, "%s%d", i ? "," : "", 64 + 4 * i);
		o += snprintf(text + o, sizeof(text) - (size_t)o, "],\n \"posix_pool_slab_count\": [");
		for (int i = 0; i < n; i++)
			o += snprintf(text + o, sizeof(text) - (size_t)o, "%s%d", i ? "," : "", i % 3 + 1);
		snprintf(text + o, sizeof(text) - (size_t)o, "] } }");
		t_set_case("file, %d elements", n);
		t_use_config(t_write_text_file(text));
		T_CUFILE_OK(cuFileDriverOpen());
		if (n == 64) {
			expect(cuFileGetParameterPosixPoolSlabArray, 64, 64);
		} else {
			size_t s3[3], c3[3];
			T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(s3, c3, 3));
			T_EQ_U(s3[2], 16384);
			T_EQ_U(c3[0], 128);
		}
		T_CUFILE_OK(cuFileDriverClose());
	}
	if (log)
		T_ASSERT(strstr(t_slurp(log), "array must hold 1 to 64 integers, found 65") != NULL);
	t_clear_config_env();

	static const struct {
		const char *name;
		set_fn set;
		get_fn get;
	} pairs[] = {
		{"posix", cuFileSetParameterPosixPoolSlabArray, cuFileGetParameterPosixPoolSlabArray},
		{"gpu", cuFileSetParameterGpuBounceBufferSlabArray, cuFileGetParameterGpuBounceBufferSlabArray},
	};
	for (size_t p = 0; p < 2; p++) {
		static const int lens[] = {17, 64};
		for (size_t l = 0; l < 2; l++) {
			int n = lens[l];
			t_set_case("%s, %d elements", pairs[p].name, n);
			fill(n, 64);
			T_CUFILE_OK(pairs[p].set(sz, cnt, n));
			expect(pairs[p].get, n, 64);
			fill(65, 1024);
			T_CUFILE(pairs[p].set(sz, cnt, 65), CU_FILE_INVALID_VALUE);
			expect(pairs[p].get, n, 64);
			T_CUFILE_OK(cuFileDriverOpen());
			expect(pairs[p].get, n, 64);
			t_check_reads_verified(data, 3);
			T_CUFILE_OK(cuFileDriverClose());
		}
	}
	t_set_case("%s", "");

	return T_EXIT_PASS;
}
