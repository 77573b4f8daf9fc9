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

/* Sets the log level through CUFILE_LOGGING_LEVEL and empties this test's
 * log (CUFILE_LOGFILE_PATH, set by ctest), so that only this run's lines are
 * in it; returns its path, or NULL when there is none. */
static inline const char *t_fresh_log(const char *level)
{
	setenv("CUFILE_LOGGING_LEVEL", level, 1);
	const char *log = getenv("CUFILE_LOGFILE_PATH");
	if (log)
		unlink(log);
	return log;
}

/* Points CUFILE_ENV_PATH_JSON at a path. */
static inline void t_use_config(const char *path)
{
	if (setenv("CUFILE_ENV_PATH_JSON", path, 1) != 0)
		T_FAIL("setenv: %s", strerror(errno));
}

/* With the driver open: reads of 16 MiB at an unaligned file offset into
 * host memory and, where there is a CUDA driver, into device memory, each
 * checked byte for byte with its guard bytes.  path holds pattern `seed`. */
static inline void t_check_reads_verified(const char *path, uint32_t seed)
{
	const size_t len = 16 * T_MIB;
	int fd = t_open(path, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	for (int dev = 0; dev < 2; dev++) {
		struct t_mem m;
		if (dev && t_cuda_init() != 0)
			break;
		t_mem_alloc(&m, dev ? T_MEM_DEVICE : T_MEM_HOST_MALLOC, len + 2 * T_MIB);
		if (t_read_and_verify(fh, &m, T_MIB, len, 4096 + 512, 0, (ssize_t)len, seed) != 0)
			T_FAIL("read into %s memory failed or gave wrong bytes", dev ? "device" : "host");
		t_mem_free(&m);
	}
	cuFileHandleDeregister(fh);
	close(fd);
}

/* With the driver open: a batch of n entries can be set up, one of n + 1
 * cannot (the batch limit the library works with is n). */
static inline void t_check_batch_limit(unsigned n)
{
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, n));
	cuFileBatchIODestroy(b);
	T_CUFILE(cuFileBatchIOSetUp(&b, n + 1), CU_FILE_INVALID_VALUE);
}

/* The most staging memory the library pins per GPU, whatever the slab
 * arrays say (docs/configuration.md): a quarter of the machine's memory,
 * at least 2 GiB. */
static inline size_t t_staging_cap(void)
{
	size_t quarter = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE) / 4;
	return quarter > 2 * T_GIB ? quarter : 2 * T_GIB;
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
