/* SPDX-License-Identifier: Apache-2.0 */
/* posix_pool_slab_size_kb and posix_pool_slab_count describe one pool:
 * arrays of different lengths are an ERROR and both take their defaults;
 * arrays of equal length apply. */
#define OCF_CONFIG_UNIT
#include "config_test_util.h"

static struct ocf_config cfg;
static struct ocf_cfg_diags d;

int main(void)
{
	t_clear_config_env();
	t_load(t_write_text_file("{\"properties\": {\n\"posix_pool_slab_size_kb\": [4, 8],\n"
				 "\"posix_pool_slab_count\": [1, 2, 3]}}"),
	       &cfg, &d);
	T_EQ(d.n, 1);
	T_ASSERT(t_find_diag(&d, ":3:", "2 elements", "has 3", (const char *)NULL) != NULL);
	T_EQ_U(cfg.posix_pool_slab_size_kb.n, 3);
	T_EQ_U(cfg.posix_pool_slab_size_kb.v[2], 16384);
	T_EQ(cfg.source[OCF_K_POSIX_POOL_SLAB_COUNT], OCF_SRC_DEFAULT);

	t_load(t_write_text_file("{\"properties\": {\"posix_pool_slab_size_kb\": [4, 8],"
				 "\"posix_pool_slab_count\": [1, 2]}}"),
	       &cfg, &d);
	T_EQ(d.n, 0);
	T_EQ_U(cfg.posix_pool_slab_count.n, 2);
	T_EQ_U(cfg.posix_pool_slab_count.v[1], 2);
	return T_EXIT_PASS;
}
