/* SPDX-License-Identifier: Apache-2.0 */
/* Precedence environment > file > default for CUFILE_LOGGING_LEVEL,
 * CUFILE_LOGFILE_PATH, CUFILE_FORCE_COMPAT_MODE and CUFILE_ALLOW_COMPAT_MODE;
 * an unparsable environment value (or a log level that is none) is an ERROR
 * and leaves the file's value; values are kept as given. */
#define OCF_CONFIG_UNIT
#include "config_test_util.h"

static struct ocf_config cfg;
static struct ocf_cfg_diags d;

int main(void)
{
	t_clear_config_env();
	const char *f = t_write_text_file("{ \"logging\": { \"level\": \"WARN\" },\n"
					  "  \"properties\": { \"allow_compat_mode\": false,\n"
					  "                    \"force_compat_mode\": false } }\n");
	t_load(f, &cfg, &d);
	T_EQ(d.n, 0);
	T_ASSERT(strcmp(cfg.logging_level, "WARN") == 0);
	T_EQ(cfg.source[OCF_K_LOGGING_LEVEL], OCF_SRC_FILE);

	setenv("CUFILE_LOGGING_LEVEL", "trace", 1);
	setenv("CUFILE_ALLOW_COMPAT_MODE", "true", 1);
	setenv("CUFILE_FORCE_COMPAT_MODE", "1", 1);
	setenv("CUFILE_LOGFILE_PATH", "/tmp/x/cufile.log", 1);
	t_load(f, &cfg, &d);
	T_EQ(d.n, 0);
	T_ASSERT(strcmp(cfg.logging_level, "trace") == 0); /* as given */
	T_EQ(cfg.source[OCF_K_LOGGING_LEVEL], OCF_SRC_ENV);
	T_ASSERT(cfg.allow_compat_mode && cfg.force_compat_mode);
	T_EQ(cfg.source[OCF_K_ALLOW_COMPAT_MODE], OCF_SRC_ENV);
	T_EQ(cfg.source[OCF_K_FORCE_COMPAT_MODE], OCF_SRC_ENV);
	T_ASSERT(strcmp(cfg.logfile_path, "/tmp/x/cufile.log") == 0);
	T_EQ(cfg.source[OCF_K_LOGFILE_PATH], OCF_SRC_ENV);

	setenv("CUFILE_LOGGING_LEVEL", "chatty", 1);
	setenv("CUFILE_ALLOW_COMPAT_MODE", "maybe", 1);
	t_load(f, &cfg, &d);
	T_EQ(d.n, 2);
	T_ASSERT(t_find_diag(&d, "CUFILE_LOGGING_LEVEL", "chatty", (const char *)NULL) != NULL);
	T_ASSERT(t_find_diag(&d, "CUFILE_ALLOW_COMPAT_MODE", "ignored", (const char *)NULL) != NULL);
	T_ASSERT(strcmp(cfg.logging_level, "WARN") == 0);
	T_ASSERT(!cfg.allow_compat_mode);
	T_EQ(cfg.source[OCF_K_ALLOW_COMPAT_MODE], OCF_SRC_FILE);
	return T_EXIT_PASS;
}
