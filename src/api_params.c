/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_params.c - cuFileGet/SetParameter*.
 *
 * Setters work only while the driver is closed and stage the value for the
 * next open (CU_FILE_DRIVER_ALREADY_OPEN otherwise); getters return the live
 * value while the driver is open and, while it is closed, the value the
 * next open will use.  Each call runs under the driver's state lock
 * (driver_with_state_locked), so an open cannot slip in between the
 * "is it open?" test and the staging or the read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "config.h"
#include "driver.h"
#include "internal.h"
#include "log.h"

static const enum ocf_cfg_key size_keys[] = {
	[CUFILE_PARAM_PROFILE_STATS] = OCF_K_PROFILE_CUFILE_STATS,
	[CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH] = OCF_K_EXEC_MAX_IO_QUEUE_DEPTH,
	[CUFILE_PARAM_EXECUTION_MAX_IO_THREADS] = OCF_K_EXEC_MAX_IO_THREADS,
	[CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB] = OCF_K_EXEC_MIN_IO_THRESHOLD_SIZE_KB,
	[CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM] = OCF_K_EXEC_MAX_REQUEST_PARALLELISM,
	[CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB] = OCF_K_MAX_DIRECT_IO_SIZE_KB,
	[CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB] = OCF_K_MAX_DEVICE_CACHE_SIZE_KB,
	[CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB] = OCF_K_PER_BUFFER_CACHE_SIZE_KB,
	[CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB] = OCF_K_MAX_DEVICE_PINNED_MEM_SIZE_KB,
	[CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE] = OCF_K_IO_BATCHSIZE,
	[CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB] = OCF_K_POLL_MODE_MAX_SIZE_KB,
	[CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS] = OCF_K_MAX_BATCH_IO_TIMEOUT_MSECS,
};

static const enum ocf_cfg_key bool_keys[] = {
	[CUFILE_PARAM_PROPERTIES_USE_POLL_MODE] = OCF_K_USE_POLL_MODE,
	[CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE] = OCF_K_ALLOW_COMPAT_MODE,
	[CUFILE_PARAM_FORCE_COMPAT_MODE] = OCF_K_FORCE_COMPAT_MODE,
	[CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE] = OCF_K_MISC_API_CHECK_AGGRESSIVE,
	[CUFILE_PARAM_EXECUTION_PARALLEL_IO] = OCF_K_EXEC_PARALLEL_IO,
	[CUFILE_PARAM_PROFILE_NVTX] = OCF_K_PROFILE_NVTX,
	[CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY] = OCF_K_ALLOW_SYSTEM_MEMORY,
	[CUFILE_PARAM_USE_PCIP2PDMA] = OCF_K_USE_PCI_P2PDMA,
	[CUFILE_PARAM_PREFER_IO_URING] = OCF_K_PREFER_IOURING,
	[CUFILE_PARAM_FORCE_ODIRECT_MODE] = OCF_K_FORCE_ODIRECT_MODE,
	[CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION] = OCF_K_SKIP_TOPOLOGY_DETECTION,
	[CUFILE_PARAM_STREAM_MEMOPS_BYPASS] = OCF_K_STREAM_MEMOPS_BYPASS,
	[CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE] = OCF_K_VANILLA_POSIX_IO_MODE,
	[CUFILE_PARAM_GDS_FALLBACK_IO] = OCF_K_GDS_FALLBACK_IO,
};

static const enum ocf_cfg_key string_keys[] = {
	[CUFILE_PARAM_LOGGING_LEVEL] = OCF_K_LOGGING_LEVEL,
	[CUFILE_PARAM_ENV_LOGFILE_PATH] = OCF_K_LOGFILE_PATH,
	[CUFILE_PARAM_LOG_DIR] = OCF_K_LOGGING_DIR,
	[CUFILE_PARAM_RDMA_TRANSPORT] = OCF_K_RDMA_TRANSPORT_TYPE,
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Maps an enum value to a key; -1 for values outside the enum (the enums
 * are unsigned or int depending on the compiler, so compare as unsigned). */
static int key_of(const enum ocf_cfg_key *map, size_t n, unsigned param)
{
	return param < n ? (int)map[param] : -1;
}

/* One call, carried through driver_with_state_locked. */
struct pcall {
	int key;
	void *out;       /* getters: where the value goes */
	size_t out_size; /* the field's size */
	int (*stage)(const struct pcall *c);
	size_t size_value;
	bool bool_value;
	const char *string_value;
	const size_t *sizes, *counts;
	size_t n;
	bool gpu; /* slab arrays: the GPU bounce buffers' rather than the POSIX pool's */
};

static int do_get(bool is_open, void *arg)
{
	struct pcall *c = arg;
	if (is_open) {
		const struct ocf_cfg_key_info *ki = config_key_info((enum ocf_cfg_key)c->key);
		memcpy(c->out, (const char *)&ocf_cfg + ki->offset, ki->size);
		return 0;
	}
	return config_preview_get((enum ocf_cfg_key)c->key, c->out, c->out_size, NULL);
}

/* Both slab arrays in one locked step, so they come from the same config. */
static int do_get_pair(bool is_open, void *arg)
{
	struct pcall *c = arg;
	int r = do_get(is_open, &c[0]);
	return r ? r : do_get(is_open, &c[1]);
}

static int do_set(bool is_open, void *arg)
{
	const struct pcall *c = arg;
	if (is_open)
		return OCF_ERR(CU_FILE_DRIVER_ALREADY_OPEN);
	return c->stage(c);
}

static CUfileError_t set_result(const char *fn, int r)
{
	if (r == -ERANGE || r == -EINVAL)
		r = OCF_ERR(CU_FILE_INVALID_VALUE);
	if (r == OCF_ERR(CU_FILE_DRIVER_ALREADY_OPEN))
		log_error("%s: parameters can only be set while the driver is closed", fn);
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileGetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t *value)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int k = key_of(size_keys, N_OF(size_keys), (unsigned)param);
	if (k < 0 || !value)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	struct pcall c = {.key = k, .out = value, .out_size = sizeof(size_t)};
	return api_status(driver_with_state_locked(do_get, &c));
}

OCF_EXPORT CUfileError_t cuFileGetParameterBool(CUFileBoolConfigParameter_t param, bool *value)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int k = key_of(bool_keys, N_OF(bool_keys), (unsigned)param);
	if (k < 0 || !value)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	struct pcall c = {.key = k, .out = value, .out_size = sizeof(bool)};
	return api_status(driver_with_state_locked(do_get, &c));
}

OCF_EXPORT CUfileError_t cuFileGetParameterString(CUFileStringConfigParameter_t param, char *desc_str, int len)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int k = key_of(string_keys, N_OF(string_keys), (unsigned)param);
	if (k < 0 || !desc_str || len <= 0)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	char buf[4096]; /* the largest string field */
	const struct ocf_cfg_key_info *ki = config_key_info((enum ocf_cfg_key)k);
	if (ki->size > sizeof(buf))
		return api_status(OCF_ERR(CU_FILE_INTERNAL_ERROR));
	struct pcall c = {.key = k, .out = buf, .out_size = ki->size};
	int r = driver_with_state_locked(do_get, &c);
	if (r == 0) {
		buf[ki->size - 1] = '\0';
		snprintf(desc_str, (size_t)len, "%s", buf); /* truncates to len - 1 bytes + NUL */
	}
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileGetParameterMinMaxValue(CUFileSizeTConfigParameter_t param, size_t *min_value,
						       size_t *max_value)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int k = key_of(size_keys, N_OF(size_keys), (unsigned)param);
	if (k < 0 || !min_value || !max_value)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	const struct ocf_cfg_key_info *ki = config_key_info((enum ocf_cfg_key)k);
	*min_value = (size_t)ki->min;
	*max_value = (size_t)ki->max;
	return api_status(0);
}

static int stage_size(const struct pcall *c) { return config_stage_size((enum ocf_cfg_key)c->key, c->size_value); }
static int stage_bool(const struct pcall *c) { return config_stage_bool((enum ocf_cfg_key)c->key, c->bool_value); }
static int stage_string(const struct pcall *c)
{
	return config_stage_string((enum ocf_cfg_key)c->key, c->string_value);
}
static int stage_slabs(const struct pcall *c) { return config_stage_slabs(c->gpu, c->sizes, c->counts, c->n); }

OCF_EXPORT CUfileError_t cuFileSetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t value)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int k = key_of(size_keys, N_OF(size_keys), (unsigned)param);
	if (k < 0)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	struct pcall c = {.key = k, .stage = stage_size, .size_value = value};
	return set_result(__func__, driver_with_state_locked(do_set, &c));
}

OCF_EXPORT CUfileError_t cuFileSetParameterBool(CUFileBoolConfigParameter_t param, bool value)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int k = key_of(bool_keys, N_OF(bool_keys), (unsigned)param);
	if (k < 0)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	struct pcall c = {.key = k, .stage = stage_bool, .bool_value = value};
	return set_result(__func__, driver_with_state_locked(do_set, &c));
}

OCF_EXPORT CUfileError_t cuFileSetParameterString(CUFileStringConfigParameter_t param, const char *desc_str)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int k = key_of(string_keys, N_OF(string_keys), (unsigned)param);
	if (k < 0 || !desc_str)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	/* The value first, then the driver's state: NVIDIA's setter answers
	 * CU_FILE_INVALID_VALUE for "" or a string too long even while the
	 * driver is open. */
	char why[200];
	if (config_check_param_string((enum ocf_cfg_key)k, desc_str, why, sizeof(why))) {
		log_error("%s: %s: %s", __func__, config_key_info((enum ocf_cfg_key)k)->path, why);
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	}
	struct pcall c = {.key = k, .stage = stage_string, .string_value = desc_str};
	return set_result(__func__, driver_with_state_locked(do_set, &c));
}

static CUfileError_t set_slabs(const char *fn, bool gpu, const size_t *size_values, const size_t *count_values,
				int len)
{
	if (!size_values || !count_values || len <= 0 || len > OCF_CFG_ARRAY_MAX)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	struct pcall c = {.stage = stage_slabs, .sizes = size_values, .counts = count_values, .n = (size_t)len,
			  .gpu = gpu};
	return set_result(fn, driver_with_state_locked(do_set, &c));
}

/* Fills the first n elements; with len larger than the configured count the
 * rest is zeroed, with len smaller the call fails (the arrays would be cut). */
static CUfileError_t get_slabs(bool gpu, size_t *size_values, size_t *count_values, int len)
{
	if (!size_values || !count_values || len <= 0)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	struct ocf_size_array sizes, counts;
	struct pcall both[2] = {
		{.key = gpu ? OCF_K_GPU_BOUNCE_SLAB_SIZE_KB : OCF_K_POSIX_POOL_SLAB_SIZE_KB, .out = &sizes,
		 .out_size = sizeof(sizes)},
		{.key = gpu ? OCF_K_GPU_BOUNCE_SLAB_COUNT : OCF_K_POSIX_POOL_SLAB_COUNT, .out = &counts,
		 .out_size = sizeof(counts)},
	};
	int r = driver_with_state_locked(do_get_pair, both);
	if (r)
		return api_status(r);
	if ((size_t)len < sizes.n || sizes.n != counts.n)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	for (size_t i = 0; i < (size_t)len; i++) {
		size_values[i] = i < sizes.n ? sizes.v[i] : 0;
		count_values[i] = i < counts.n ? counts.v[i] : 0;
	}
	return api_status(0);
}

OCF_EXPORT CUfileError_t cuFileSetParameterPosixPoolSlabArray(const size_t *size_values, const size_t *count_values,
							      int len)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return set_slabs(__func__, false, size_values, count_values, len);
}

OCF_EXPORT CUfileError_t cuFileGetParameterPosixPoolSlabArray(size_t *size_values, size_t *count_values, int len)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get_slabs(false, size_values, count_values, len);
}

/* The GPU bounce-buffer slabs (1.17), staged and read back exactly like the
 * POSIX pool's; once set they size the per-GPU staging memory (gpu.c). */
OCF_EXPORT CUfileError_t cuFileSetParameterGpuBounceBufferSlabArray(const size_t *size_values,
								    const size_t *count_values, int len)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return set_slabs(__func__, true, size_values, count_values, len);
}

OCF_EXPORT CUfileError_t cuFileGetParameterGpuBounceBufferSlabArray(size_t *size_values, size_t *count_values, int len)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get_slabs(true, size_values, count_values, len);
}
