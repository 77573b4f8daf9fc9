/* SPDX-License-Identifier: Apache-2.0 */
/* cuFileDriverSetPollMode/MaxDirectIOSize/MaxCacheSize/MaxPinnedMemSize:
 * outside the key's range (NVIDIA's, as cuFileGetParameterMinMaxValue
 * reports it) -> CU_FILE_DRIVER_UNSUPPORTED_LIMIT and nothing changes; inside
 * it, ends included, the value shows at once in cuFileDriverGetProperties
 * and in the parameter getters, and holds after a reopen. */
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

int main(void)
{
	t_clear_config_env();
	CUfileDrvProps_t p;
	size_t v;
	bool b;
	T_CUFILE(cuFileDriverGetProperties(&p), CU_FILE_DRIVER_NOT_INITIALIZED);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE(cuFileDriverGetProperties(NULL), CU_FILE_INVALID_VALUE);

	/* Outside the ranges: refused, nothing changes. */
	T_CUFILE(cuFileDriverSetMaxDirectIOSize(3), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetMaxDirectIOSize(EXPECT_DIRECT_IO_MIN - 1), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetMaxDirectIOSize(EXPECT_DIRECT_IO_MAX + 1), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetMaxDirectIOSize((size_t)1 << 40), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetMaxCacheSize(EXPECT_CACHE_MAX + 1), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetMaxPinnedMemSize(0), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetMaxPinnedMemSize(EXPECT_PINNED_MIN - 1), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetMaxPinnedMemSize(EXPECT_PINNED_MAX + 1), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	/* No longer than the 32-bit max_device_pinned_mem_size field. */
	T_CUFILE(cuFileDriverSetMaxPinnedMemSize((size_t)1 << 32), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetPollMode(true, EXPECT_POLL_MIN - 1), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetPollMode(true, EXPECT_POLL_MAX + 1), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE(cuFileDriverSetPollMode(true, SIZE_MAX), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ_U(p.nvfs.max_direct_io_size, 16384);
	T_EQ_U(p.max_device_cache_size, 131072);
	T_EQ_U(p.max_device_pinned_mem_size, 33554432);
	T_EQ_U(p.nvfs.poll_thresh_size, 4);
	T_EQ(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE), 0);

	/* The ends of the ranges are accepted and show at once. */
	T_CUFILE_OK(cuFileDriverSetMaxDirectIOSize(EXPECT_DIRECT_IO_MIN));
	T_CUFILE_OK(cuFileDriverSetMaxCacheSize(EXPECT_CACHE_MIN)); /* 0 is allowed */
	T_CUFILE_OK(cuFileDriverSetMaxPinnedMemSize(EXPECT_PINNED_MAX));
	T_CUFILE_OK(cuFileDriverSetPollMode(true, EXPECT_POLL_MAX));
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ_U(p.nvfs.max_direct_io_size, EXPECT_DIRECT_IO_MIN);
	T_EQ_U(p.max_device_cache_size, EXPECT_CACHE_MIN);
	T_EQ_U(p.max_device_pinned_mem_size, EXPECT_PINNED_MAX);
	T_EQ_U(p.nvfs.poll_thresh_size, EXPECT_POLL_MAX);
	T_NE(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE), 0);
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB, &v));
	T_EQ_U(v, EXPECT_CACHE_MIN);
	T_CUFILE_OK(cuFileDriverSetMaxDirectIOSize(EXPECT_DIRECT_IO_MAX));
	T_CUFILE_OK(cuFileDriverSetMaxCacheSize(EXPECT_CACHE_MAX));
	T_CUFILE_OK(cuFileDriverSetMaxPinnedMemSize(EXPECT_PINNED_MIN));
	T_CUFILE_OK(cuFileDriverSetPollMode(false, EXPECT_POLL_MIN));
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ_U(p.nvfs.max_direct_io_size, EXPECT_DIRECT_IO_MAX);
	T_EQ_U(p.max_device_cache_size, EXPECT_CACHE_MAX);
	T_EQ_U(p.max_device_pinned_mem_size, EXPECT_PINNED_MIN);
	T_EQ_U(p.nvfs.poll_thresh_size, EXPECT_POLL_MIN);
	T_EQ(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE), 0);

	T_CUFILE_OK(cuFileDriverSetMaxDirectIOSize(1024));
	T_CUFILE_OK(cuFileDriverSetMaxCacheSize(65536));
	T_CUFILE_OK(cuFileDriverSetMaxPinnedMemSize(1 << 20));
	T_CUFILE_OK(cuFileDriverSetPollMode(true, 64));
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ_U(p.nvfs.max_direct_io_size, 1024);
	T_EQ_U(p.max_device_cache_size, 65536);
	T_EQ_U(p.max_device_pinned_mem_size, 1 << 20);
	T_EQ_U(p.nvfs.poll_thresh_size, 64);
	T_NE(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE), 0);
	T_CUFILE_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v));
	T_EQ_U(v, 1024);
	T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, &b));
	T_ASSERT(b);
	T_CUFILE_OK(cuFileDriverClose());

	/* Closed: the setters stage; the reopen keeps the values. */
	T_CUFILE_OK(cuFileDriverSetMaxCacheSize(32768));
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ_U(p.max_device_cache_size, 32768);
	T_EQ_U(p.nvfs.max_direct_io_size, 1024);
	T_EQ_U(p.nvfs.poll_thresh_size, 64);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
