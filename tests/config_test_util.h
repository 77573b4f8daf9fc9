/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_test_util.h - helpers of the configuration, parameter, property and
 * statistics tests (on top of test.h).
 *
 * OCF_TEST_DATA_DIR (a compile definition) is tests/data.  Unit tests of the
 * configuration reader compile src/config.c and src/log.c in (see
 * tests/CMakeLists.txt) and include config.h directly.
 */
#ifndef OCF_CONFIG_TEST_UTIL_H_
#define OCF_CONFIG_TEST_UTIL_H_

#include "test.h"

#ifndef OCF_TEST_DATA_DIR
#error "OCF_TEST_DATA_DIR must be defined"
#endif

/* Full path of a file in tests/data. */
static inline const char *t_data(const char *name)
{
	static char buf[4][1024];
	static int i;
	char *p = buf[i++ % 4];
	snprintf(p, sizeof(buf[0]), "%s/%s", OCF_TEST_DATA_DIR, name);
	return p;
}

/* Writes text to a new test file (removed at exit); returns its path. */
static inline const char *t_write_text_file(const char *text)
{
	const char *path = t_new_file_path();
	FILE *f = fopen(path, "w");
	if (!f)
		T_FAIL("fopen %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
	return path;
}

/* Reads a whole (small) file into a static buffer; "" when absent. */
static inline const char *t_slurp(const char *path)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r");
	size_t n = 0;
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* Clears every variable the configuration reads and points it at an empty
 * file, so that neither the machine's environment nor its /etc/cufile.json
 * leaks into a test. */
static inline void t_clear_config_env(void)
{
	setenv("CUFILE_ENV_PATH_JSON", t_data("cufile_empty.json"), 1);
	unsetenv("CUFILE_LOGGING_LEVEL");
	unsetenv("CUFILE_FORCE_COMPAT_MODE");
	unsetenv("CUFILE_ALLOW_COMPAT_MODE");
	unsetenv("OPENCUFILE_STATS_FILE");
}

/* Points CUFILE_ENV_PATH_JSON at a path. */
static inline void t_use_config(const char *path)
{
	if (setenv("CUFILE_ENV_PATH_JSON", path, 1) != 0)
		T_FAIL("setenv: %s", strerror(errno));
}

#ifdef OCF_CONFIG_UNIT
#include "config.h"
#include "log.h"

/* The diagnostic that contains every one of the NULL-terminated strings,
 * or NULL. */
static inline const struct ocf_cfg_diag *t_find_diag(const struct ocf_cfg_diags *d, ...)
{
	for (int i = 0; i < d->n; i++) {
		va_list ap;
		va_start(ap, d);
		bool all = true;
		for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
			if (!strstr(d->d[i].msg, s))
				all = false;
		va_end(ap);
		if (all)
			return &d->d[i];
	}
	return NULL;
}

static inline void t_print_diags(const struct ocf_cfg_diags *d)
{
	for (int i = 0; i < d->n; i++)
		fprintf(stderr, "    diag %s: %s\n", log_level_name(d->d[i].level), d->d[i].msg);
}

/* Loads a file through config_load (CUFILE_ENV_PATH_JSON). */
static inline void t_load(const char *path, struct ocf_config *cfg, struct ocf_cfg_diags *d)
{
	t_use_config(path);
	memset(d, 0, sizeof(*d));
	config_load(cfg, d);
}
#endif

#endif /* OCF_CONFIG_TEST_UTIL_H_ */
