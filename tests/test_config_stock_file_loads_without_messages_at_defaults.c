/* SPDX-License-Identifier: Apache-2.0 */
/* A file shaped like NVIDIA's stock cufile.json (comments of both kinds,
 * commented-out keys, every section) loads with no warning or error, and
 * every value in it equals the built-in default: the defaults are NVIDIA's. */
#define OCF_CONFIG_UNIT
#include "config_test_util.h"

static struct ocf_config cfg, def;
static struct ocf_cfg_diags d;

int main(void)
{
	t_clear_config_env();
	config_load_defaults(&def);
	t_load(t_data("cufile_stock_like.json"), &cfg, &d);
	if (d.n) {
		t_print_diags(&d);
		T_FAIL("%d messages loading the stock-like file", d.n);
	}
	T_ASSERT(cfg.file_ok);
	int from_file = 0;
	for (int k = 0; k < OCF_K_COUNT; k++) {
		char a[2048], b[2048];
		if (k == OCF_K_LOGFILE_PATH)
			continue; /* ctest sets CUFILE_LOGFILE_PATH */
		config_format_value(&cfg, (enum ocf_cfg_key)k, a, sizeof(a));
		config_format_value(&def, (enum ocf_cfg_key)k, b, sizeof(b));
		t_set_case("key %s", config_key_info((enum ocf_cfg_key)k)->path);
		if (strcmp(a, b) != 0)
			T_FAIL("file value %s differs from default %s", a, b);
		from_file += cfg.source[k] == OCF_SRC_FILE;
	}
	t_set_case("%s", "");
	T_EQ(cfg.source[OCF_K_MAX_DIRECT_IO_SIZE_KB], OCF_SRC_FILE);
	T_EQ(cfg.source[OCF_K_LOGGING_DIR], OCF_SRC_DEFAULT); /* commented out */
	T_EQ(cfg.source[OCF_K_RDMA_DC_KEY], OCF_SRC_DEFAULT);
	T_EQ(from_file, 36); /* every key the file spells out */
	/* A few values spelled out, against NVIDIA's documented defaults. */
	T_EQ_U(cfg.max_direct_io_size_kb, 16384);
	T_EQ_U(cfg.max_device_cache_size_kb, 131072);
	T_EQ_U(cfg.per_buffer_cache_size_kb, 1024);
	T_EQ_U(cfg.max_device_pinned_mem_size_kb, 33554432);
	T_EQ_U(cfg.poll_threshold_size_kb, 4);
	T_EQ_U(cfg.io_batchsize, 128);
	T_ASSERT(cfg.allow_compat_mode && !cfg.use_poll_mode);
	T_EQ_U(cfg.posix_pool_slab_count.n, 3);
	return T_EXIT_PASS;
}
