/* SPDX-License-Identifier: Apache-2.0 */
/* Wrong types (a negative size among them) are ERRORs naming file, line and
 * key; that key keeps its default while the file's valid keys still apply;
 * an unknown key or section is a WARN with its line.  A value of the right
 * type the library cannot use as given (a log level that is none) is kept
 * and read back, and config_note_effective says what is used instead. */
#define OCF_CONFIG_UNIT
#include "config_test_util.h"

static struct ocf_config cfg;
static struct ocf_cfg_diags d;

static void expect(int level, const char *file, const char *line_key, const char *what)
{
	const struct ocf_cfg_diag *x = t_find_diag(&d, file, line_key, what, (const char *)NULL);
	if (!x || x->level != level) {
		t_print_diags(&d);
		T_FAIL("no %s message with \"%s\" and \"%s\"", log_level_name(level), line_key, what);
	}
}

int main(void)
{
	t_clear_config_env();
	const char *f = t_data("cufile_errors.json");
	t_load(f, &cfg, &d);
	expect(OCF_LOG_ERROR, f, ":6: properties.max_direct_io_size_kb", "-64 is negative");
	expect(OCF_LOG_ERROR, f, ":7: properties.use_poll_mode", "expected true or false, found string");
	expect(OCF_LOG_ERROR, f, ":9: properties.posix_pool_slab_size_kb", "element 1");
	expect(OCF_LOG_WARN, f, ":10: unknown key", "properties.frobnicate");
	expect(OCF_LOG_ERROR, f, ":12: fs.generic", "expected an object");
	expect(OCF_LOG_WARN, f, ":12: unknown key", "fs.zfs");
	expect(OCF_LOG_ERROR, f, ":13: profile.cufile_stats", "expected an integer, found double");
	T_EQ(d.n, 7);
	/* Defaults kept for the bad keys, the good ones applied. */
	T_ASSERT(strcmp(cfg.logging_level, "LOUD") == 0);
	T_EQ(cfg.source[OCF_K_LOGGING_LEVEL], OCF_SRC_FILE);
	T_EQ_U(cfg.max_direct_io_size_kb, 16384);
	T_ASSERT(!cfg.use_poll_mode);
	T_EQ_U(cfg.posix_pool_slab_size_kb.n, 3);
	T_EQ_U(cfg.cufile_stats, 0);
	T_EQ(cfg.source[OCF_K_MAX_DIRECT_IO_SIZE_KB], OCF_SRC_DEFAULT);
	T_EQ_U(cfg.io_batchsize, 64);
	T_EQ(cfg.source[OCF_K_IO_BATCHSIZE], OCF_SRC_FILE);
	/* LOUD is no level: ERROR stays in force, and the note says so at ERROR
	 * (a WARN line would not be written at that level). */
	memset(&d, 0, sizeof(d));
	config_note_effective(&cfg, &d);
	T_EQ(d.n, 1);
	expect(OCF_LOG_ERROR, "logging.level = \"LOUD\"", "is not one of", "the library uses ERROR");
	return T_EXIT_PASS;
}
