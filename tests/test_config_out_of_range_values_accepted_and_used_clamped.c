/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile.json follows the setters' policy: values of the right type outside
 * a key's range are accepted without an ERROR, read back as written, and
 * used clamped to the range, with one WARN line each when the driver opens:
 * the batch limit is 256 for io_batchsize 1000, the statistics level 3 for
 * cufile_stats 9.  Slab arrays describing 16 PiB of staging memory are
 * accepted and read back; the library pins at most its cap (a quarter of
 * the machine's memory, at least 2 GiB), and the stats file shows a bound
 * and a peak within it after reads into device memory.  Reads are right
 * byte for byte.  Type errors stay errors (test_config_bad_values_...).
 */
#include "stats_test_util.h"

#define HUGE_KB "1099511627776" /* 2^40 */

int main(void)
{
	t_clear_config_env();
	const char *log = t_fresh_log("WARN");
	char stats[600];
	snprintf(stats, sizeof(stats), "%s/ocf_clamped_%d.bin", t_dir(), (int)getpid());
	unlink(stats);
	setenv("OPENCUFILE_STATS_FILE", stats, 1);
	t_use_config(t_write_text_file(
		"{ \"profile\": { \"cufile_stats\": 9 },\n"
		"  \"execution\": { \"max_io_queue_depth\": 0, \"max_io_threads\": 1000,\n"
		"                   \"min_io_threshold_size_kb\": 0, \"max_request_parallelism\": 100,\n"
		"                   \"wait_watchdog_s\": " HUGE_KB " },\n"
		"  \"properties\": { \"max_direct_io_size_kb\": 0, \"max_device_cache_size_kb\": " HUGE_KB ",\n"
		"                    \"per_buffer_cache_size_kb\": 1, \"max_device_pinned_mem_size_kb\": 0,\n"
		"                    \"io_batchsize\": 1000, \"poll_mode_max_size_kb\": 0,\n"
		"                    \"max_batch_io_timeout_msecs\": 5000,\n"
		"                    \"posix_pool_slab_size_kb\": [16777216, 1000],\n"
		"                    \"posix_pool_slab_count\": [1048576, 0] } }\n"));
	static const struct {
		CUFileSizeTConfigParameter_t param;
		size_t value;
		const char *line;
	} expect[] = {
		{CUFILE_PARAM_PROFILE_STATS, 9, "profile.cufile_stats = 9 is outside [0, 3]"},
		{CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH, 0, "execution.max_io_queue_depth = 0 is outside [1, 256]"},
		{CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 1000, "execution.max_io_threads = 1000 is outside [0, 32]"},
		{CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB, 0, "execution.min_io_threshold_size_kb = 0 is outside"},
		{CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, 100, "max_request_parallelism = 100 is outside [0, 8]"},
		{CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 0, "max_direct_io_size_kb = 0 is outside [64, 16384]"},
		{CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB, (size_t)1 << 40, "max_device_cache_size_kb = " HUGE_KB},
		{CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB, 1, "per_buffer_cache_size_kb = 1 is outside"},
		{CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB, 0, "max_device_pinned_mem_size_kb = 0 is outside"},
		{CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 1000, "properties.io_batchsize = 1000 is outside [1, 256]"},
		{CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, 0, "properties.poll_mode_max_size_kb = 0 is outside"},
		{CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, 5000, "max_batch_io_timeout_msecs = 5000 is outside [1, 1000]"},
	};
	const char *data = t_make_pattern_file(20 * T_MIB, 3);
	size_t v;
	for (int open = 0; open < 2; open++) {
		if (open)
			T_CUFILE_OK(cuFileDriverOpen());
		for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
			t_set_case("%s, %s", expect[i].line, open ? "open" : "closed");
			T_CUFILE_OK(cuFileGetParameterSizeT(expect[i].param, &v));
			T_EQ_U(v, expect[i].value);
		}
		size_t sz[2], cnt[2];
		T_CUFILE_OK(cuFileGetParameterPosixPoolSlabArray(sz, cnt, 2));
		T_EQ_U(sz[0], 16777216);
		T_EQ_U(sz[1], 1000);
		T_EQ_U(cnt[0], 1048576);
		T_EQ_U(cnt[1], 0);
	}
	t_set_case("%s", "open");
	/* Used clamped. */
	t_check_batch_limit(256);
	int level = -1;
	T_CUFILE_OK(cuFileGetStatsLevel(&level));
	T_EQ(level, 3);
	t_check_reads_verified(data, 3);
	T_CUFILE_OK(cuFileDriverClose());

	if (log) {
		const char *txt = t_slurp(log);
		T_ASSERT(strstr(txt, "ERROR config") == NULL); /* no value refused */
		for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
			t_set_case("log line %s", expect[i].line);
			T_ASSERT(strstr(txt, expect[i].line) != NULL);
		}
		t_set_case("%s", "log line of the staging budget");
		T_ASSERT(strstr(txt, "the slab arrays describe 17179869184 MiB of staging memory per GPU; the library "
				     "pins at most") != NULL);
	}
	if (t_cuda_init() == 0) {
		struct ocf_stats_file f;
		t_read_stats_file(stats, &f);
		fprintf(stderr, "pinned bound %llu peak %llu, cap %zu\n", (unsigned long long)f.pinned_bound_bytes,
			(unsigned long long)f.pinned_peak_bytes, t_staging_cap());
		t_set_case("pinned bound %llu peak %llu", (unsigned long long)f.pinned_bound_bytes,
			   (unsigned long long)f.pinned_peak_bytes);
		T_ASSERT(f.pinned_peak_bytes > 0);
		T_LE_U(f.pinned_bound_bytes, t_staging_cap());
		T_LE_U(f.pinned_peak_bytes, f.pinned_bound_bytes + 4u * 65536u);
	}
	unlink(stats);
	return T_EXIT_PASS;
}
