/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every value NVIDIA's setters accept, ours accepts, stores and reads back
 * unchanged (docs/compatibility.md, "Parameter values"):
 * - cuFileSetParameterSizeT(BATCH_IO_TIMEOUT_MS, 5000) reads back 5000,
 *   although cuFileGetParameterMinMaxValue says 1..1000 (cuda-python's
 *   tests set it);
 * - POSIX pool slabs {4096, 65536, 1048576, 16777216} KiB x {10, 5, 3, 2}
 *   (cuda-python's tests): accepted, the driver opens, the getter returns
 *   them unchanged, closed and open;
 * - every size_t parameter below its minimum, above its maximum, 0, 2^40
 *   and SIZE_MAX reads back unchanged while closed and, after an open, while
 *   open.  The open succeeds with all of them at SIZE_MAX and again with all
 *   at 0, logs one WARN line per value the library does not use as set
 *   (and one for the capped staging budget), works with the nearest value
 *   (the batch limit: 256, then 1), and reads into host and device memory
 *   are right byte for byte.
 */
#include "config_test_util.h"

#define NPARAMS (CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS + 1)

static void set_all(size_t v)
{
	for (int p = 0; p < NPARAMS; p++) {
		t_set_case("parameter %d = %zu", p, v);
		T_CUFILE_OK(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)p, v));
	}
	t_set_case("%s", "");
}

static void expect_all(size_t v)
{
	for (int p = 0; p < NPARAMS; p++) {
		size_t got = 0;
		t_set_case("parameter %d", p);
		T_CUFILE_OK(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)p, &got));
		T_EQ_U(got, v);
	}
	t_set_case("%s", "");
}

static void expect_client_slabs(void)
{
	static const size_t want_sz[] = {4096, 65536, 1048576, 16777216}, want_cnt[] = {10, 5, 3, 2};
	size_t sz[4], cnt[4];
	T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 4));
	for (int i = 0; i < 4; i++) {
		T_EQ_U(sz[i], want_sz[i]);
		T_EQ_U(cnt[i], want_cnt[i]);
	}
}

int main(void)
{
	t_clear_config_env();
	const char *log = t_fresh_log("WARN");
	const char *data = t_make_pattern_file(20 * T_MIB, 7);
	size_t v;

	/* cuda-python's two cases, exactly. */
	T_CUFILE_OK(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, 5000));
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, &v));
	T_EQ_U(v, 5000);
	size_t sizes[] = {4096, 65536, 1048576, 16777216}, counts[] = {10, 5, 3, 2};
	T_CUFILE_OK(cuFileSetParameterPosixPoolSlabArray(sizes, counts, 4));
	T_CUFILE_OK(cuFileDriverOpen());
	expect_client_slabs();
	T_CUFILE_OK(cuFileDriverClose());
	expect_client_slabs();

	/* Every size_t parameter, every kind of value outside its range. */
	for (int p = 0; p < NPARAMS; p++) {
		CUFileSizeTConfigParameter_t param = (CUFileSizeTConfigParameter_t)p;
		size_t mn, mx;
		T_CUFILE_OK(cuFileGetParameterMinMaxValue(param, &mn, &mx));
		size_t values[] = {mn ? mn - 1 : mx + 1, mx + 1, 0, (size_t)1 << 40, SIZE_MAX};
		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
			t_set_case("parameter %d = %zu", p, values[i]);
			T_CUFILE_OK(cuFileSetParameterSizeT(param, values[i]));
			T_CUFILE_OK(cuFileGetParameterSizeT(param, &v));
			T_EQ_U(v, values[i]);
		}
	}
	t_set_case("%s", "");

	/* All at SIZE_MAX: the driver opens, the values read back as set while
	 * open, and the library works with the largest it can. */
	set_all(SIZE_MAX);
	T_CUFILE_OK(cuFileDriverOpen());
	expect_all(SIZE_MAX);
	expect_client_slabs();
	CUfileDrvProps_t props;
	T_CUFILE_OK(cuFileDriverGetProperties(&props));
	T_EQ_U(props.max_batch_io_timeout_msecs, 0xffffffffu); /* as set, saturated to the field */
	T_EQ_U(props.nvfs.max_direct_io_size, SIZE_MAX);
	t_check_batch_limit(256);
	t_check_reads_verified(data, 7);
	T_CUFILE_OK(cuFileDriverClose());
	if (log) {
		const char *txt = t_slurp(log);
		T_ASSERT(strstr(txt, " WARN ") != NULL);
		T_ASSERT(strstr(txt, "properties.io_batchsize = 18446744073709551615 is outside [1, 256]: kept and "
				     "read back as set; the library works with 256") != NULL);
		T_ASSERT(strstr(txt, "properties.max_batch_io_timeout_msecs = 18446744073709551615 is outside") != NULL);
		T_ASSERT(strstr(txt, "execution.max_io_threads = 18446744073709551615 is outside [0, 32]") != NULL);
		/* The slabs describe 35 GiB and change per GPU. */
		if (t_staging_cap() < 35 * T_GIB)
			T_ASSERT(strstr(txt, "properties.posix_pool_slab_*: the slab arrays describe 36200 MiB of "
					     "staging memory per GPU; the library pins at most") != NULL);
	}

	/* All at 0: below every minimum; the library works with the smallest. */
	set_all(0);
	T_CUFILE_OK(cuFileDriverOpen());
	expect_all(0);
	t_check_batch_limit(1);
	t_check_reads_verified(data, 7);
	T_CUFILE_OK(cuFileDriverClose());
	if (log)
		T_ASSERT(strstr(t_slurp(log), "properties.max_direct_io_size_kb = 0 is outside [64, 16384]: kept and "
					      "read back as set; the library works with 64") != NULL);
	return T_EXIT_PASS;
}
