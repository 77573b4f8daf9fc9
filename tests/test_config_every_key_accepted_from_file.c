/* SPDX-License-Identifier: Apache-2.0 */
/* A file that sets every key of the format to a non-default value loads
 * without a message, and every key then has source "file" and a value that
 * differs from its default (so no key is silently ignored). */
#define OCF_CONFIG_UNIT
#include "config_test_util.h"

static struct ocf_config cfg, def;
static struct ocf_cfg_diags d;

int main(void)
{
	t_clear_config_env();
	config_load_defaults(&def);
	t_load(t_data("cufile_all_keys.json"), &cfg, &d);
	if (d.n) {
		t_print_diags(&d);
		T_FAIL("%d messages", d.n);
	}
	for (int k = 0; k < OCF_K_COUNT; k++) {
		const struct ocf_cfg_key_info *ki = config_key_info((enum ocf_cfg_key)k);
		if (strncmp(ki->path, "env:", 4) == 0)
			continue;
		char a[2048], b[2048];
		config_format_value(&cfg, (enum ocf_cfg_key)k, a, sizeof(a));
		config_format_value(&def, (enum ocf_cfg_key)k, b, sizeof(b));
		t_set_case("key %s = %s", ki->path, a);
		T_EQ(cfg.source[k], OCF_SRC_FILE);
		if (strcmp(a, b) == 0)
			T_FAIL("value equals the default");
	}
	t_set_case("%s", "");
	T_EQ_U(cfg.posix_pool_slab_size_kb.v[1], 64);
	T_ASSERT(strcmp(cfg.io_priority, "high") == 0);
	T_ASSERT(strcmp(cfg.logging_level, "DEBUG") == 0);
	T_ASSERT(strstr(cfg.lustre_mount_table, "/lustre/a") != NULL);
	T_ASSERT(strstr(cfg.denylist_filesystems, "lustre") != NULL);
	return T_EXIT_PASS;
}
