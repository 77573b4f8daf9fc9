/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_stage.c - staged parameter values and applying the configuration
 * when the driver opens.
 *
 * DESIGN: the effective configuration is computed at every open, in order
 * of increasing precedence: built-in defaults, the file, the environment,
 * staged setter values.  Setter values are kept for the life of the process
 * (a value set before one open still holds after a close and reopen, as the
 * environment does), each with a flag saying it was set.
 *
 * While the driver is closed, the parameter getters answer with what the
 * next open would use: the "base" (defaults + file + environment, read at
 * the first such call after each open or close and then cached) overlaid
 * with the staged values.  stage_lock protects staged, staged_set, base and
 * base_valid; it is a leaf lock (nothing else is taken under it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "internal.h"
#include "log.h"
#include "stats.h"

int config_set_json(struct ocf_config *cfg, enum ocf_cfg_key k, struct json_object *v, char *why, size_t wlen);

static pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ocf_config staged;
static bool staged_set[OCF_K_COUNT];
static struct ocf_config base;
static bool base_valid;

static void copy_field(struct ocf_config *dst, const struct ocf_config *src, enum ocf_cfg_key k)
{
	const struct ocf_cfg_key_info *ki = config_key_info(k);
	memcpy((char *)dst + ki->offset, (const char *)src + ki->offset, ki->size);
}

/* Caller holds stage_lock. */
static void overlay_staged_locked(struct ocf_config *cfg)
{
	for (int k = 0; k < OCF_K_COUNT; k++) {
		if (!staged_set[k])
			continue;
		copy_field(cfg, &staged, (enum ocf_cfg_key)k);
		cfg->source[k] = OCF_SRC_SETTER;
	}
}

void config_apply_staged(struct ocf_config *cfg)
{
	pthread_mutex_lock(&stage_lock);
	overlay_staged_locked(cfg);
	pthread_mutex_unlock(&stage_lock);
}

/* Validates one value of key k (as *arg) and stores it into cfg: 0, or -1
 * with the reason in why. */
typedef int (*setter_fn)(struct ocf_config *cfg, enum ocf_cfg_key k, const void *arg, char *why, size_t wlen);

/* Stores one value into the staged configuration through set (which
 * validates it against the refusal table) and marks it set.  Returns 0, or
 * -ERANGE when refused (logged). */
static int stage(enum ocf_cfg_key k, setter_fn set, const void *arg)
{
	const struct ocf_cfg_key_info *ki = config_key_info(k);
	char why[200];
	if (!ki)
		return -EINVAL;
	pthread_mutex_lock(&stage_lock);
	int r = set(&staged, k, arg, why, sizeof(why));
	if (r == 0)
		staged_set[k] = true;
	pthread_mutex_unlock(&stage_lock);
	if (r) {
		log_error("parameter %s: %s", ki->path, why);
		return -ERANGE;
	}
	return 0;
}

static int set_size(struct ocf_config *cfg, enum ocf_cfg_key k, const void *arg, char *why, size_t wlen)
{
	return config_set_size(cfg, k, *(const size_t *)arg, why, wlen);
}

/* Bools and strings through the file's own code (type and length checks). */
static int set_json(struct ocf_config *cfg, enum ocf_cfg_key k, const void *arg, char *why, size_t wlen)
{
	return config_set_json(cfg, k, (struct json_object *)arg, why, wlen);
}

static int stage_json(enum ocf_cfg_key k, enum ocf_cfg_type type, struct json_object *v)
{
	const struct ocf_cfg_key_info *ki = config_key_info(k);
	int r = !ki || ki->type != type || !v ? -EINVAL : stage(k, set_json, v);
	json_object_put(v);
	return r;
}

int config_stage_size(enum ocf_cfg_key k, size_t v)
{
	const struct ocf_cfg_key_info *ki = config_key_info(k);
	if (!ki || ki->type != OCF_CFG_SIZE)
		return -EINVAL;
	return stage(k, set_size, &v);
}

int config_stage_bool(enum ocf_cfg_key k, bool v) { return stage_json(k, OCF_CFG_BOOL, json_object_new_boolean(v)); }

int config_stage_string(enum ocf_cfg_key k, const char *s)
{
	char why[200];
	if (config_check_param_string(k, s, why, sizeof(why)))
		return -EINVAL;
	return stage_json(k, OCF_CFG_STRING, json_object_new_string(s));
}

int config_stage_slabs(bool gpu, const size_t *sizes, const size_t *counts, size_t n)
{
	if (!sizes || !counts || n < 1 || n > OCF_CFG_ARRAY_MAX)
		return -EINVAL;
	enum ocf_cfg_key ks = gpu ? OCF_K_GPU_BOUNCE_SLAB_SIZE_KB : OCF_K_POSIX_POOL_SLAB_SIZE_KB;
	enum ocf_cfg_key kc = gpu ? OCF_K_GPU_BOUNCE_SLAB_COUNT : OCF_K_POSIX_POOL_SLAB_COUNT;
	struct ocf_config tmp;
	char why[200] = "";
	/* Both arrays are validated before either is staged; one length for
	 * both, so they always pair. */
	if (config_set_size_array(&tmp, ks, sizes, n, why, sizeof(why)) ||
	    config_set_size_array(&tmp, kc, counts, n, why, sizeof(why))) {
		log_error("parameter %s arrays: %s", gpu ? "gpu_bounce_buffer_slab" : "posix_pool_slab", why);
		return -ERANGE;
	}
	pthread_mutex_lock(&stage_lock);
	copy_field(&staged, &tmp, ks);
	copy_field(&staged, &tmp, kc);
	staged_set[ks] = true;
	staged_set[kc] = true;
	pthread_mutex_unlock(&stage_lock);
	return 0;
}

int config_preview_get(enum ocf_cfg_key k, void *out, size_t size, enum ocf_cfg_source *src)
{
	const struct ocf_cfg_key_info *ki = config_key_info(k);
	if (!ki || size != ki->size)
		return -EINVAL;
	pthread_mutex_lock(&stage_lock);
	if (!base_valid) {
		config_load(&base, NULL);
		base_valid = true;
	}
	const struct ocf_config *from = staged_set[k] ? &staged : &base;
	memcpy(out, (const char *)from + ki->offset, size);
	if (src)
		*src = staged_set[k] ? OCF_SRC_SETTER : (enum ocf_cfg_source)base.source[k];
	pthread_mutex_unlock(&stage_lock);
	return 0;
}

void config_forget_preview(void)
{
	pthread_mutex_lock(&stage_lock);
	base_valid = false;
	pthread_mutex_unlock(&stage_lock);
}

void config_apply_at_open(void)
{
	struct ocf_cfg_diags *d = calloc(1, sizeof(*d));
	config_load(&ocf_cfg, d);
	/* Variables named OPENCUFILE_* that no setting has (a removed one, a
	 * typo): said once per process, at its first open. */
	static bool unknown_noted;
	if (d && !unknown_noted) {
		config_env_note_unknown(d);
		unknown_noted = true;
	}
	/* Tuning and test variables set: said at each open, as their values
	 * are resolved at each open. */
	if (d)
		config_env_note_not_user(d);
	pthread_mutex_lock(&stage_lock);
	overlay_staged_locked(&ocf_cfg);
	base_valid = false;
	pthread_mutex_unlock(&stage_lock);
	if (d)
		config_note_effective(&ocf_cfg, d);

	/* A logging.dir that is not a directory is kept and read back as set,
	 * but the log goes to the working directory rather than nowhere, as
	 * NVIDIA's library does with one ("found invalid log directory"). */
	char path[sizeof(ocf_cfg.logfile_path) + 16];
	struct stat st;
	bool bad_dir = false;
	if (ocf_cfg.logfile_path[0])
		snprintf(path, sizeof(path), "%s", ocf_cfg.logfile_path);
	else if (ocf_cfg.logging_dir[0] && stat(ocf_cfg.logging_dir, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(path, sizeof(path), "%s/cufile.log", ocf_cfg.logging_dir);
	else {
		bad_dir = ocf_cfg.logging_dir[0] != '\0';
		snprintf(path, sizeof(path), "cufile.log");
	}
	int level = log_level_from_name(ocf_cfg.logging_level);
	log_set(level < 0 ? OCF_LOG_ERROR : level, path);
	if (bad_dir)
		log_error("logging.dir = \"%.200s\" is not a directory: kept and read back as set; the log is "
			  "cufile.log in the working directory", ocf_cfg.logging_dir);

	if (d) {
		for (int i = 0; i < d->n; i++)
			ocf_log(d->d[i].level, "%s", d->d[i].msg);
		if (d->dropped)
			log_error("%d more configuration messages not shown", d->dropped);
		free(d);
	}
	if (ocf_cfg.file_path[0])
		log_info("configuration from %s%s", ocf_cfg.file_path, ocf_cfg.file_ok ? "" : " (with errors)");
	else
		log_info("configuration: built-in defaults (no %s)", config_file_path());
	stats_configure_at_open((int)config_effective_size(&ocf_cfg, OCF_K_PROFILE_CUFILE_STATS));
}

/* Records a live value as a setter value too, so that a reopen keeps it. */
static void live_set(enum ocf_cfg_key k, setter_fn set, const void *arg)
{
	char why[200];
	pthread_mutex_lock(&stage_lock);
	if (set(&staged, k, arg, why, sizeof(why)) == 0) {
		staged_set[k] = true;
		ocf_cfg.source[k] = OCF_SRC_SETTER;
	}
	pthread_mutex_unlock(&stage_lock);
}

void config_live_set_size(enum ocf_cfg_key k, size_t v)
{
	const struct ocf_cfg_key_info *ki = config_key_info(k);
	/* A single aligned word store; readers on the I/O path read the word
	 * whole (x86-64 and aarch64 do not tear aligned 8-byte stores) and
	 * either value is acceptable to them. */
	__atomic_store_n((size_t *)((char *)&ocf_cfg + ki->offset), v, __ATOMIC_RELAXED);
	live_set(k, set_size, &v);
	char note[320];
	if (config_effective_note(&ocf_cfg, k, note, sizeof(note)))
		log_warn("%s", note);
}

void config_live_set_bool(enum ocf_cfg_key k, bool v)
{
	const struct ocf_cfg_key_info *ki = config_key_info(k);
	__atomic_store_n((bool *)((char *)&ocf_cfg + ki->offset), v, __ATOMIC_RELAXED);
	struct json_object *j = json_object_new_boolean(v);
	if (j)
		live_set(k, set_json, j);
	json_object_put(j);
}
