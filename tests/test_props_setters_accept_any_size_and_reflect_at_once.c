/* SPDX-License-Identifier: Apache-2.0 */
/* cuFileDriverSetPollMode/MaxDirectIOSize/MaxCacheSize/MaxPinnedMemSize
 * accept any size, as the parameter setters do: inside the key's range
 * (NVIDIA's, as cuFileGetParameterMinMaxValue reports it), ends included,
 * and outside it.  The value shows at once in cuFileDriverGetProperties (the
 * 32-bit fields saturate) and in the parameter getters, as set, and holds
 * after a reopen; a value outside the range logs one WARN line naming the
 * value the library works with. */
#include "config_test_util.h"

/* Ranges (KiB) of the keys behind the setters. */
#define EXPECT_DIRECT_IO_MIN 64
#define EXPECT_DIRECT_IO_MAX 16384
#define EXPECT_CACHE_MIN 0
#define EXPECT_CACHE_MAX 268435456
#define EXPECT_PINNED_MIN 64
#define EXPECT_PINNED_MAX 268435456 /* fits the 32-bit property field */
#define EXPECT_POLL_MIN 4
#define EXPECT_POLL_MAX 18014398509481980ull

/* Sets the four properties with the driver open; they show at once, as
 * set, in cuFileDriverGetProperties and in the parameter getters. */
static void set_and_expect(size_t dio, size_t cache, size_t pinned, bool poll, size_t poll_kb)
{
	CUfileDrvProps_t p;
	size_t v;
	bool b;
	t_set_case("direct %zu cache %zu pinned %zu poll %d/%zu", dio, cache, pinned, poll, poll_kb);
	T_CUFILE_OK(cuFileDriverSetMaxDirectIOSize(dio));
	T_CUFILE_OK(cuFileDriverSetMaxCacheSize(cache));
	T_CUFILE_OK(cuFileDriverSetMaxPinnedMemSize(pinned));
	T_CUFILE_OK(cuFileDriverSetPollMode(poll, poll_kb));
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ_U(p.nvfs.max_direct_io_size, dio);
	T_EQ_U(p.max_device_cache_size, cache > 0xffffffffu ? 0xffffffffu : cache);
	T_EQ_U(p.max_device_pinned_mem_size, pinned > 0xffffffffu ? 0xffffffffu : pinned);
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
	t_set_case("%s", "");
}

int main(void)
{
	t_clear_config_env();
	const char *log = t_fresh_log("WARN");
	CUfileDrvProps_t p;
	size_t v;
	T_CUFILE(cuFileDriverGetProperties(&p), CU_FILE_DRIVER_NOT_INITIALIZED);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE(cuFileDriverGetProperties(NULL), CU_FILE_INVALID_VALUE);

	/* Outside the ranges: kept as set, shown as set (the 32-bit field
	 * saturates), and logged. */
	set_and_expect(3, EXPECT_CACHE_MAX + 1, (size_t)1 << 32, true, SIZE_MAX);
	if (log) {
		const char *txt = t_slurp(log);
		T_ASSERT(strstr(txt, "properties.max_direct_io_size_kb = 3 is outside [64, 16384]: kept and read "
				     "back as set; the library works with 64") != NULL);
		T_ASSERT(strstr(txt, "properties.max_device_pinned_mem_size_kb = 4294967296 is outside") != NULL);
	}
	/* The ends of the ranges, inside values. */
	set_and_expect(EXPECT_DIRECT_IO_MIN, EXPECT_CACHE_MIN, EXPECT_PINNED_MAX, true, EXPECT_POLL_MAX);
	set_and_expect(EXPECT_DIRECT_IO_MAX, EXPECT_CACHE_MAX, EXPECT_PINNED_MIN, false, EXPECT_POLL_MIN);
	set_and_expect(1024, 65536, 1 << 20, true, 64);
	T_CUFILE_OK(cuFileDriverClose());

	/* Closed: the setters stage, out-of-range values too; the reopen keeps
	 * the values. */
	T_CUFILE_OK(cuFileDriverSetMaxCacheSize(32768));
	T_CUFILE_OK(cuFileDriverSetMaxDirectIOSize(0));
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v));
	T_EQ_U(v, 0);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ_U(p.max_device_cache_size, 32768);
	T_EQ_U(p.nvfs.max_direct_io_size, 0);
	T_EQ_U(p.nvfs.poll_thresh_size, 64);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
