/* SPDX-License-Identifier: Apache-2.0 */
/* cuFileDriverSetPollMode/MaxDirectIOSize/MaxCacheSize/MaxPinnedMemSize
 * with values inside the keys' ranges (NVIDIA's, as
 * cuFileGetParameterMinMaxValue reports them), ends included, and the 0
 * that SetMaxCacheSize and SetMaxPinnedMemSize take: the value shows at
 * once in cuFileDriverGetProperties and in the parameter getters, and holds
 * after a reopen; set while closed it is staged for the next open.  Values
 * outside the ranges: test_props_setters_refuse_out_of_range_with_nvidia_codes. */
#include "config_test_util.h"

/* Ranges (KiB) of the keys behind the setters. */
#define EXPECT_DIRECT_IO_MIN 64
#define EXPECT_DIRECT_IO_MAX 16384
#define EXPECT_CACHE_MAX 268435456
#define EXPECT_PINNED_MIN 64
#define EXPECT_PINNED_MAX 268435456 /* fits the 32-bit property field */
#define EXPECT_POLL_MIN 4
#define EXPECT_POLL_MAX 18014398509481980ull

/* The four values in the properties and the parameter getters. */
static void expect(size_t dio, size_t cache, size_t pinned, bool poll, size_t poll_kb)
{
	CUfileDrvProps_t p;
	size_t v;
	bool b;
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ_U(p.nvfs.max_direct_io_size, dio);
	T_EQ_U(p.max_device_cache_size, cache);
	T_EQ_U(p.max_device_pinned_mem_size, pinned);
	T_EQ_U(p.nvfs.poll_thresh_size, poll_kb);
	T_EQ(!!(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE)), poll);
	static const CUFileSizeTConfigParameter_t params[] = {
		CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB,
		CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB, CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB};
	const size_t want[] = {dio, cache, pinned, poll_kb};
	for (int i = 0; i < 4; i++) {
		T_CUFILE_OK(cuFileGetParameterSizeT(params[i], &v));
		T_EQ_U(v, want[i]);
	}
	T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, &b));
	T_EQ(b, poll);
}

/* Sets the four properties with the driver open; they show at once. */
static void set_and_expect(size_t dio, size_t cache, size_t pinned, bool poll, size_t poll_kb)
{
	t_set_case("direct %zu cache %zu pinned %zu poll %d/%zu", dio, cache, pinned, poll, poll_kb);
	T_CUFILE_OK(cuFileDriverSetMaxDirectIOSize(dio));
	T_CUFILE_OK(cuFileDriverSetMaxCacheSize(cache));
	T_CUFILE_OK(cuFileDriverSetMaxPinnedMemSize(pinned));
	T_CUFILE_OK(cuFileDriverSetPollMode(poll, poll_kb));
	expect(dio, cache, pinned, poll, poll_kb);
	t_set_case("%s", "");
}

int main(void)
{
	t_clear_config_env();
	CUfileDrvProps_t p;
	T_CUFILE(cuFileDriverGetProperties(&p), CU_FILE_DRIVER_NOT_INITIALIZED);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE(cuFileDriverGetProperties(NULL), CU_FILE_INVALID_VALUE);

	/* The ends of the ranges, 0 where NVIDIA's setter takes it, and inside
	 * values. */
	set_and_expect(EXPECT_DIRECT_IO_MIN, 0, EXPECT_PINNED_MAX, true, EXPECT_POLL_MAX);
	set_and_expect(EXPECT_DIRECT_IO_MAX, EXPECT_CACHE_MAX, EXPECT_PINNED_MIN, false, EXPECT_POLL_MIN);
	set_and_expect(1024, 65536, 0, true, (size_t)1 << 40);
	set_and_expect(1024, 65536, 1 << 20, true, 64);
	T_CUFILE_OK(cuFileDriverClose());

	/* A reopen keeps what was set while open. */
	T_CUFILE_OK(cuFileDriverOpen());
	expect(1024, 65536, 1 << 20, true, 64);
	T_CUFILE_OK(cuFileDriverClose());

	/* Closed: the setters stage; the next open uses the values. */
	T_CUFILE_OK(cuFileDriverSetMaxCacheSize(32768));
	T_CUFILE_OK(cuFileDriverSetMaxDirectIOSize(128));
	T_CUFILE_OK(cuFileDriverSetPollMode(false, 16));
	size_t v;
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v));
	T_EQ_U(v, 128);
	T_CUFILE_OK(cuFileDriverOpen());
	expect(128, 32768, 1 << 20, false, 16);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
