/* SPDX-License-Identifier: Apache-2.0 */
/* cuFileDriverGetProperties: no nvidia-fs (version 0.0, no file system
 * flags), feature flags only for what is implemented (batch, streams,
 * parallel I/O; not dynamic routing), control flags and sizes (KiB) from the
 * configuration file. */
#include "config_test_util.h"

int main(void)
{
	t_clear_config_env();
	t_use_config(t_write_text_file("{ \"properties\": { \"use_poll_mode\": true, \"poll_mode_max_size_kb\": 8,\n"
				       "  \"allow_compat_mode\": true, \"max_direct_io_size_kb\": 2048,\n"
				       "  \"per_buffer_cache_size_kb\": 512, \"io_batchsize\": 16,\n"
				       "  \"max_batch_io_timeout_msecs\": 9,\n"
				       "  \"max_device_pinned_mem_size_kb\": 268435456 } }"));
	CUfileDrvProps_t p;
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	T_EQ(p.nvfs.major_version, 0);
	T_EQ(p.nvfs.minor_version, 0);
	T_EQ(p.nvfs.dstatusflags, 0);
	/* Batch, stream and parallel I/O are implemented (issue 5); dynamic
	 * routing (RDMA) is not. */
	T_EQ(p.fflags, (1u << CU_FILE_BATCH_IO_SUPPORTED) | (1u << CU_FILE_STREAMS_SUPPORTED) |
			       (1u << CU_FILE_PARALLEL_IO_SUPPORTED));
	T_EQ(p.nvfs.dcontrolflags, (1u << CU_FILE_USE_POLL_MODE) | (1u << CU_FILE_ALLOW_COMPAT_MODE));
	T_EQ_U(p.nvfs.poll_thresh_size, 8);
	T_EQ_U(p.nvfs.max_direct_io_size, 2048);
	T_EQ_U(p.per_buffer_cache_size, 512);
	T_EQ_U(p.max_batch_io_size, 16);
	T_EQ_U(p.max_batch_io_timeout_msecs, 9);
	/* The top of the key's range (256 GiB in KiB) fits the 32-bit field as is. */
	T_EQ_U(p.max_device_pinned_mem_size, 268435456);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
