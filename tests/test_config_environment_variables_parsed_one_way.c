/* SPDX-License-Identifier: Apache-2.0 */
/* Every environment variable is read through its row of the settings table
 * (src/config.c) and parsed one way, by the row's type:
 *   - numbers: unset or empty gives the default; decimal digits give that
 *     number, used at the nearest end of the row's range when outside it;
 *     anything else - a sign, a suffix, spaces, hexadecimal, a number past
 *     2^64 - is refused and gives the default, never a number read from a
 *     prefix;
 *   - switches: 1/0, on/off, true/false, yes/no; words: one of the row's,
 *     in any case; anything else gives the default;
 *   - a refused or clamped value says the value, what the row accepts and
 *     what is used, logged once per process as a WARN;
 *   - rows of tier tuning are resolved by each load of the configuration
 *     (each driver open) into its `tuning` values, a refused or clamped
 *     value a WARN of that load; the others are read anew at each ask;
 *   - rows whose default the reader computes say whether a value was given;
 *   - the rows of the project's other programs are never read;
 *   - every row of tier tuning reaches the `tuning` values, and no other
 *     row does;
 *   - a variable named OPENCUFILE_* that no row names is reported; one of
 *     tier tuning or test that is set is named at INFO with its tier;
 *   - the keys' variables take numbers the same way. */
#define OCF_CONFIG_UNIT
#include "config_test_util.h"

static uint64_t v;
static const char *text;
static char why[240];

static enum ocf_cfg_source parse(enum ocf_env e, const char *value)
{
	const char *var = config_env_info(e)->var;
	if (value)
		setenv(var, value, 1);
	else
		unsetenv(var);
	return config_env_parse(e, &v, &text, why, sizeof(why));
}

static int count_lines(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

int main(void)
{
	/* A size in KiB: [4, 2^30], default 256. */
	t_set_case("numbers");
	T_EQ(parse(OCF_E_PIECE_KB, NULL), OCF_SRC_DEFAULT);
	T_EQ(v, 256u);
	T_ASSERT(text == NULL && why[0] == '\0');
	T_EQ(parse(OCF_E_PIECE_KB, ""), OCF_SRC_DEFAULT);
	T_EQ(v, 256u);
	T_EQ(parse(OCF_E_PIECE_KB, "64"), OCF_SRC_ENV);
	T_EQ(v, 64u);
	T_ASSERT(why[0] == '\0' && strcmp(text, "64") == 0);
	T_EQ(parse(OCF_E_PIECE_KB, "0004"), OCF_SRC_ENV);
	T_EQ(v, 4u);
	T_EQ(parse(OCF_E_PIECE_KB, "1073741824"), OCF_SRC_ENV); /* 2^30 KiB */
	T_EQ(v, (uint64_t)1 << 30);
	T_EQ(parse(OCF_E_PIECE_KB, "1"), OCF_SRC_ENV); /* below the range: its end */
	T_EQ(v, 4u);
	T_ASSERT(strstr(why, "outside [4, 1073741824] KiB; using 4") != NULL);
	T_EQ(parse(OCF_E_PIECE_KB, "1073741825"), OCF_SRC_ENV);
	T_EQ(v, (uint64_t)1 << 30);
	static const char *const bad[] = {"99999999999999999999999", "-4", "+4", " 4", "4 ", "4k", "4KiB", "0x40",
					  "abc", "1e3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t_set_case("refused: \"%s\"", bad[i]);
		T_EQ(parse(OCF_E_PIECE_KB, bad[i]), OCF_SRC_DEFAULT);
		T_EQ(v, 256u);
		T_ASSERT(strstr(why, "not a number in [4, 1073741824] KiB (decimal digits); using 256") != NULL);
	}
	unsetenv("OPENCUFILE_PIECE_KB");

	t_set_case("switches and words");
	static const char *const off[] = {"0", "off", "OFF", "no", "false", "n"};
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		T_EQ(parse(OCF_E_READAHEAD, off[i]), OCF_SRC_ENV);
		T_EQ(v, 0u);
	}
	T_EQ(parse(OCF_E_READAHEAD, "yes"), OCF_SRC_ENV);
	T_EQ(v, 1u);
	T_EQ(parse(OCF_E_READAHEAD, "maybe"), OCF_SRC_DEFAULT);
	T_EQ(v, 1u);
	T_ASSERT(strstr(why, "not on or off") && strstr(why, "using on"));
	T_EQ(parse(OCF_E_STAGING_REGISTER, NULL), OCF_SRC_DEFAULT);
	T_EQ(v, 0u);
	T_EQ(parse(OCF_E_IO_BACKEND, "psync"), OCF_SRC_ENV);
	T_EQ(v, 2u);
	T_EQ(parse(OCF_E_IO_BACKEND, "URING"), OCF_SRC_ENV);
	T_EQ(v, 1u);
	T_EQ(parse(OCF_E_IO_BACKEND, "ring"), OCF_SRC_DEFAULT);
	T_EQ(v, 0u);
	T_ASSERT(strstr(why, "not one of auto uring psync; using auto") != NULL);
	unsetenv("OPENCUFILE_READAHEAD");
	unsetenv("OPENCUFILE_IO_BACKEND");

	t_set_case("a default the reader computes");
	T_EQ(parse(OCF_E_IO_THREADS, NULL), OCF_SRC_DEFAULT);
	T_ASSERT(!config_env_given(OCF_E_IO_THREADS, &v));
	setenv("OPENCUFILE_IO_THREADS", "3", 1);
	T_ASSERT(config_env_given(OCF_E_IO_THREADS, &v));
	T_EQ(v, 3u);
	setenv("OPENCUFILE_IO_THREADS", "0", 1); /* 0 is a value: no helpers */
	T_ASSERT(config_env_given(OCF_E_IO_THREADS, &v));
	T_EQ(v, 0u);
	setenv("OPENCUFILE_IO_THREADS", "300", 1);
	T_ASSERT(config_env_given(OCF_E_IO_THREADS, &v));
	T_EQ(v, 256u);
	T_EQ(parse(OCF_E_IO_THREADS, "many"), OCF_SRC_DEFAULT);
	T_ASSERT(strstr(why, "using the default (one per CPU") != NULL);
	T_ASSERT(!config_env_given(OCF_E_IO_THREADS, &v));
	unsetenv("OPENCUFILE_IO_THREADS");

	t_set_case("text");
	unsetenv("OPENCUFILE_SHM_DIR");
	T_ASSERT(strcmp(config_env_text(OCF_E_SHM_DIR), "/dev/shm") == 0);
	setenv("OPENCUFILE_SHM_DIR", "", 1);
	T_ASSERT(strcmp(config_env_text(OCF_E_SHM_DIR), "/dev/shm") == 0);
	setenv("OPENCUFILE_SHM_DIR", "/run/x", 1);
	T_ASSERT(strcmp(config_env_text(OCF_E_SHM_DIR), "/run/x") == 0);
	unsetenv("OPENCUFILE_SHM_DIR");
	unsetenv("OPENCUFILE_STATS_FILE");
	T_ASSERT(config_env_text(OCF_E_STATS_FILE) == NULL);
	T_EQ(config_env_switch("On"), 1);
	T_EQ(config_env_switch("0"), 0);
	T_EQ(config_env_switch("/tmp/profile.txt"), -1);
	/* Not the library's: never read. */
	setenv("OPENCUFILE_GDSCHECK_ROOT", "/x", 1);
	T_EQ(config_env_parse(OCF_E_GDSCHECK_ROOT, &v, &text, why, sizeof(why)), OCF_SRC_DEFAULT);
	T_ASSERT(config_env_text(OCF_E_GDSCHECK_ROOT) == NULL);

	/* Tier tuning: each load resolves the value anew, in its reader's
	 * unit; a value clamped or refused is a message of the load. */
	t_set_case("tuning values resolved at each load");
	struct ocf_config cfg;
	struct ocf_cfg_diags d;
	t_clear_config_env();
	setenv("OPENCUFILE_STRIPE_SPIN_US", "8", 1);
	t_load(t_data("cufile_empty.json"), &cfg, &d);
	T_EQ(cfg.tuning.stripe.spin_ns, 8000u);
	T_EQ(d.n, 0);
	setenv("OPENCUFILE_STRIPE_SPIN_US", "16", 1);
	t_load(t_data("cufile_empty.json"), &cfg, &d);
	T_EQ(cfg.tuning.stripe.spin_ns, 16000u);
	setenv("OPENCUFILE_STRIPE_SPIN_US", "5000", 1);
	t_load(t_data("cufile_empty.json"), &cfg, &d);
	T_EQ(cfg.tuning.stripe.spin_ns, 1000000u);
	T_ASSERT(t_find_diag(&d, "environment OPENCUFILE_STRIPE_SPIN_US=\"5000\"",
			     "outside [0, 1000] us; using 1000", (const char *)NULL));
	unsetenv("OPENCUFILE_STRIPE_SPIN_US");
	t_load(t_data("cufile_empty.json"), &cfg, &d);
	T_EQ(cfg.tuning.stripe.spin_ns, 50000u);
	/* A default the reader computes: -1 until the variable gives one. */
	T_EQ(cfg.tuning.io_threads, -1);
	setenv("OPENCUFILE_IO_THREADS", "0", 1);
	t_load(t_data("cufile_empty.json"), &cfg, &d);
	T_EQ(cfg.tuning.io_threads, 0);
	unsetenv("OPENCUFILE_IO_THREADS");

	/* The other rows are read at each ask, and a bad value is logged
	 * once per process, as a WARN. */
	t_set_case("when read, and logged once");
	char log[PATH_MAX];
	snprintf(log, sizeof(log), "%s/env-parsed-%d.log", t_dir(), (int)getpid());
	unlink(log);
	log_set(OCF_LOG_WARN, log);
	setenv("OPENCUFILE_BATCH_CANCEL_WAIT_MS", "300", 1);
	T_EQ(config_env(OCF_E_BATCH_CANCEL_WAIT_MS), 300u);
	setenv("OPENCUFILE_BATCH_CANCEL_WAIT_MS", "3000", 1);
	T_EQ(config_env(OCF_E_BATCH_CANCEL_WAIT_MS), 3000u);
	setenv("OPENCUFILE_BATCH_CANCEL_WAIT_MS", "3s", 1);
	T_EQ(config_env(OCF_E_BATCH_CANCEL_WAIT_MS), 10000u);
	T_EQ(config_env(OCF_E_BATCH_CANCEL_WAIT_MS), 10000u);
	unsetenv("OPENCUFILE_BATCH_CANCEL_WAIT_MS");
	log_close();
	T_EQ(count_lines(log, "OPENCUFILE_BATCH_CANCEL_WAIT_MS"), 1);
	T_EQ(count_lines(log, "WARN config"), 1);
	T_EQ(count_lines(log, "environment OPENCUFILE_BATCH_CANCEL_WAIT_MS=\"3s\": not a number in [0, 86400000] "
			      "ms (decimal digits); using 10000"), 1);
	unlink(log);

	t_set_case("unknown variables");
	memset(&d, 0, sizeof(d));
	setenv("OPENCUFILE_NO_SUCH_SETTING", "1", 1);
	setenv("OPENCUFILE_PIECE_KB", "64", 1);
	config_env_note_unknown(&d);
	t_print_diags(&d);
	T_ASSERT(t_find_diag(&d, "OPENCUFILE_NO_SUCH_SETTING", "not a variable of this library", (const char *)NULL));
	T_ASSERT(!t_find_diag(&d, "OPENCUFILE_PIECE_KB", (const char *)NULL));       /* a row of the table */
	T_ASSERT(!t_find_diag(&d, "OPENCUFILE_GDSCHECK_ROOT", (const char *)NULL));  /* gdscheck's */
	T_ASSERT(!t_find_diag(&d, "OPENCUFILE_WAIT_WATCHDOG_S", (const char *)NULL)); /* a key's */
	for (int i = 0; i < d.n; i++)
		T_EQ(d.d[i].level, OCF_LOG_WARN);
	unsetenv("OPENCUFILE_NO_SUCH_SETTING");

	t_set_case("tuning and test variables set");
	setenv("OPENCUFILE_STAGING_REGISTER", "1", 1);
	setenv("OPENCUFILE_GDSCHECK_ROOT", "/x", 1);
	memset(&d, 0, sizeof(d));
	config_env_note_not_user(&d);
	t_print_diags(&d);
	T_ASSERT(t_find_diag(&d, "OPENCUFILE_PIECE_KB=\"64\"", "a tuning setting", (const char *)NULL));
	T_ASSERT(t_find_diag(&d, "OPENCUFILE_STAGING_REGISTER=\"1\"", "a test setting", (const char *)NULL));
	T_ASSERT(!t_find_diag(&d, "OPENCUFILE_GDSCHECK_ROOT", (const char *)NULL)); /* not the library's */
	T_ASSERT(!t_find_diag(&d, "OPENCUFILE_WAIT_WATCHDOG_S", (const char *)NULL)); /* a key's: user */
	for (int i = 0; i < d.n; i++)
		T_EQ(d.d[i].level, OCF_LOG_INFO);
	unsetenv("OPENCUFILE_PIECE_KB");
	unsetenv("OPENCUFILE_STAGING_REGISTER");
	unsetenv("OPENCUFILE_GDSCHECK_ROOT");

	/* Each row of tier tuning, set to a value other than its default,
	 * changes the `tuning` values; a row of another tier does not. */
	t_set_case("every tuning row resolved");
	struct ocf_config def;
	t_load(t_data("cufile_empty.json"), &def, &d);
	for (int e = 0; e < OCF_E_COUNT; e++) {
		const struct ocf_env_info *r = config_env_info((enum ocf_env)e);
		char val[32];
		if (r->type == OCF_ENV_TEXT)
			continue;
		uint64_t other = r->def == r->min ? r->max : r->min;
		const char *next = r->type == OCF_ENV_WORD ? r->words[r->def + 1] : NULL;
		if (r->type == OCF_ENV_NUMBER)
			snprintf(val, sizeof(val), "%llu", (unsigned long long)other);
		else if (r->type == OCF_ENV_SWITCH)
			snprintf(val, sizeof(val), "%s", r->def ? "off" : "on");
		else
			snprintf(val, sizeof(val), "%s", next ? next : r->words[0]);
		t_set_case("every tuning row resolved: %s=%s", r->var, val);
		setenv(r->var, val, 1);
		t_load(t_data("cufile_empty.json"), &cfg, &d);
		unsetenv(r->var);
		bool changed = memcmp(&cfg.tuning, &def.tuning, sizeof(cfg.tuning)) != 0;
		T_EQ(changed, r->tier == OCF_TIER_TUNING);
	}

	/* A key's variable takes numbers the same way. */
	t_set_case("a key's variable");
	t_clear_config_env();
	setenv("OPENCUFILE_WAIT_WATCHDOG_S", "0x10", 1);
	t_load(t_data("cufile_empty.json"), &cfg, &d);
	T_ASSERT(t_find_diag(&d, "OPENCUFILE_WAIT_WATCHDOG_S", "not a number (decimal digits)", (const char *)NULL));
	T_EQ(cfg.wait_watchdog_s, 30u);
	setenv("OPENCUFILE_WAIT_WATCHDOG_S", "12", 1);
	t_load(t_data("cufile_empty.json"), &cfg, &d);
	T_EQ(d.n, 0);
	T_EQ(cfg.wait_watchdog_s, 12u);
	T_EQ(cfg.source[OCF_K_EXEC_WAIT_WATCHDOG_S], OCF_SRC_ENV);
	unsetenv("OPENCUFILE_WAIT_WATCHDOG_S");
	t_cleanup_files();
	return T_EXIT_PASS;
}
