/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_props.c - driver properties, their setters and the GPU BAR size.
 *
 * The properties are views of the configuration (config.h): the setters
 * refuse what the configuration's refusal table refuses for the key's
 * property setter (as NVIDIA's do: a value outside the range that
 * cuFileGetParameterMinMaxValue reports, with CU_FILE_DRIVER_UNSUPPORTED_LIMIT
 * or CU_FILE_INVALID_VALUE, changing nothing), change the live value at
 * once when the driver is open, and also record it as a setter value, so the
 * parameter getters report it and a reopen keeps it.  While the driver
 * is closed they only stage the value, like cuFileSetParameter*.  All of it
 * runs under the driver's state lock, so a setter and
 * cuFileDriverGetProperties never see each other half done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "config.h"
#include "cuda_loader.h"
#include "driver.h"
#include "internal.h"
#include "log.h"

static unsigned clamp_u32(size_t v) { return v > 0xffffffffu ? 0xffffffffu : (unsigned)v; }

static int fill_props(bool is_open, void *arg)
{
	CUfileDrvProps_t *props = arg;
	if (!is_open)
		return OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED);
	memset(props, 0, sizeof(*props));
	/* No nvidia-fs: its version stays 0.0 and no file system is reported
	 * in dstatusflags (those bits mean "nvidia-fs can do DMA to it"). */
	props->nvfs.poll_thresh_size = ocf_cfg.poll_threshold_size_kb;
	props->nvfs.max_direct_io_size = ocf_cfg.max_direct_io_size_kb;
	props->nvfs.dcontrolflags = (ocf_cfg.use_poll_mode ? 1u << CU_FILE_USE_POLL_MODE : 0) |
				    (ocf_cfg.allow_compat_mode ? 1u << CU_FILE_ALLOW_COMPAT_MODE : 0);
	/* Feature flags: batch I/O (batch.c), stream I/O (stream.c) and the
	 * parallel engine (engine.c); dynamic routing is an RDMA feature. */
	props->fflags = 1u << CU_FILE_BATCH_IO_SUPPORTED | 1u << CU_FILE_STREAMS_SUPPORTED |
			1u << CU_FILE_PARALLEL_IO_SUPPORTED;
	props->max_device_cache_size = clamp_u32(ocf_cfg.max_device_cache_size_kb);
	props->per_buffer_cache_size = clamp_u32(ocf_cfg.per_buffer_cache_size_kb);
	props->max_device_pinned_mem_size = clamp_u32(ocf_cfg.max_device_pinned_mem_size_kb);
	props->max_batch_io_size = clamp_u32(ocf_cfg.io_batchsize);
	props->max_batch_io_timeout_msecs = clamp_u32(ocf_cfg.batch_io_timeout_ms);
	return 0;
}

OCF_EXPORT CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *props)
{
	API_FORK_GUARD(API_FORK_STATUS);
	if (!props)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	return api_status(driver_with_state_locked(fill_props, props));
}

struct prop_set {
	enum ocf_cfg_key key;
	size_t value;
	bool has_bool;
	enum ocf_cfg_key bool_key;
	bool bool_value;
};

static int set_locked(bool is_open, void *arg)
{
	const struct prop_set *p = arg;
	if (is_open) {
		config_live_set_size(p->key, p->value);
		if (p->has_bool)
			config_live_set_bool(p->bool_key, p->bool_value);
		return 0;
	}
	int r = config_stage_size(p->key, p->value);
	if (r == 0 && p->has_bool)
		r = config_stage_bool(p->bool_key, p->bool_value);
	return r;
}

static CUfileError_t set_prop(const char *fn, struct prop_set *p)
{
	char why[200];
	int refused = config_check_prop_size(p->key, p->value, why, sizeof(why));
	if (refused) {
		log_error("%s(%zu): %s; the value stays as it was", fn, p->value, why);
		return api_status(OCF_ERR(refused));
	}
	int r = driver_with_state_locked(set_locked, p);
	if (r == -ERANGE || r == -EINVAL)
		r = OCF_ERR(CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size)
{
	API_FORK_GUARD(API_FORK_STATUS);
	struct prop_set p = {OCF_K_POLL_MODE_MAX_SIZE_KB, poll_threshold_size, true, OCF_K_USE_POLL_MODE, poll};
	return set_prop(__func__, &p);
}

OCF_EXPORT CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t kb)
{
	API_FORK_GUARD(API_FORK_STATUS);
	struct prop_set p = {.key = OCF_K_MAX_DIRECT_IO_SIZE_KB, .value = kb};
	return set_prop(__func__, &p);
}

OCF_EXPORT CUfileError_t cuFileDriverSetMaxCacheSize(size_t kb)
{
	API_FORK_GUARD(API_FORK_STATUS);
	struct prop_set p = {.key = OCF_K_MAX_DEVICE_CACHE_SIZE_KB, .value = kb};
	return set_prop(__func__, &p);
}

OCF_EXPORT CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t kb)
{
	API_FORK_GUARD(API_FORK_STATUS);
	struct prop_set p = {.key = OCF_K_MAX_DEVICE_PINNED_MEM_SIZE_KB, .value = kb};
	return set_prop(__func__, &p);
}

/* BAR1 is PCI resource 1 of an NVIDIA GPU; its size is in sysfs (the CUDA
 * driver API has no attribute for it). */
OCF_EXPORT CUfileError_t cuFileGetBARSizeInKB(int gpuIndex, size_t *barSize)
{
	API_FORK_GUARD(API_FORK_STATUS);
	if (!barSize || gpuIndex < 0)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	cuda_load(); /* idempotent; the driver need not be open */
	if (gpuIndex >= cuda_device_count()) {
		log_error("cuFileGetBARSizeInKB: no GPU %d (%d found)", gpuIndex, cuda_device_count());
		return api_status(OCF_ERR(CU_FILE_DEVICE_NOT_FOUND));
	}
	CUdevice dev;
	char bus[64];
	if (ocf_cu.DeviceGet(&dev, gpuIndex) != CUDA_SUCCESS ||
	    ocf_cu.DeviceGetPCIBusId(bus, (int)sizeof(bus), dev) != CUDA_SUCCESS)
		return api_status(OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR));
	for (char *c = bus; *c; c++)
		if (*c >= 'A' && *c <= 'F')
			*c = (char)(*c - 'A' + 'a');
	char path[128];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bus);
	FILE *f = fopen(path, "re");
	if (!f) {
		log_error("cuFileGetBARSizeInKB: cannot read %s: %s", path, strerror(errno));
		return api_status(OCF_ERR(CU_FILE_PLATFORM_NOT_SUPPORTED));
	}
	/* BAR1 is the second memory region in use: a 64-bit BAR0 takes two
	 * BAR slots, so its upper half shows as an empty line, and "BAR1" may
	 * be line 1 or line 2 of the file. */
	unsigned long long start = 0, end = 0, flags = 0;
	int regions = 0;
	for (int line = 0; line < 6 && regions < 2; line++) {
		if (fscanf(f, "%llx %llx %llx", &start, &end, &flags) != 3)
			break;
		if (end > start)
			regions++;
	}
	fclose(f);
	if (regions < 2) {
		log_error("cuFileGetBARSizeInKB: %s has no BAR1", path);
		return api_status(OCF_ERR(CU_FILE_PLATFORM_NOT_SUPPORTED));
	}
	*barSize = (size_t)((end - start + 1) / 1024);
	return api_status(0);
}
