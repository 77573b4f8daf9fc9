/* SPDX-License-Identifier: Apache-2.0 */
/* cuFileDriverGetProperties: no nvidia-fs (version 0.0, no file system
 * flags), no feature flag for what is not implemented (batch, streams,
 * parallel I/O, dynamic routing), control flags and sizes (KiB) from the
 * configuration file. */
#include "config_test_util.h"

int main(void)
{
	t_clear_config_env();
	t_use_config(t_write_text_file("{ \"properties\": { \"use_poll_mode\": true, \"poll_mode_max_size_kb\": 8,\n"
				       "  \"allow_compat_mode\": true, \"max_direct_io_size_kb\": 2048,\n"
				       "  \"per_buffer_cache_size_kb\": 512, \"io_batchsize\": 16,\n"
				       "  \"max_batch_io_timeout_msecs\": 9,\n"
				       "  \"max_device_pinned_mem_size_kb\": 8589934592 } }"));
	CUfileDrvProps_t p;
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ(p.nvfs.major_version, 0);
	T_EQ(p.nvfs.minor_version, 0);
	T_EQ(p.nvfs.dstatusflags, 0);
	T_EQ(p.fflags, 0);
	T_EQ(p.nvfs.dcontrolflags, (1u << CU_FILE_USE_POLL_MODE) | (1u << CU_FILE_ALLOW_COMPAT_MODE));
	T_EQ_U(p.nvfs.poll_thresh_size, 8);
	T_EQ_U(p.nvfs.max_direct_io_size, 2048);
	T_EQ_U(p.per_buffer_cache_size, 512);
	T_EQ_U(p.max_batch_io_size, 16);
	T_EQ_U(p.max_batch_io_timeout_msecs, 9);
	T_EQ_U(p.max_device_pinned_mem_size, 0xffffffffu); /* 8 TiB clamps to the field */
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
