/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - every setting: cufile.json, the environment, the key table
 * and the environment table.
 *
 * DESIGN: one table row per key {json path, type, default, min, max, field,
 * allowed strings, environment variable} drives everything: defaults (the
 * default is JSON text fed through the same code as the file's values),
 * parsing, validation, the environment, formatting for gdscheck, and the
 * documentation test.  A value is applied only after it has been validated
 * completely, so a wrong value leaves the key at what it was (its default),
 * never at something half-parsed.
 *
 * What "wrong" means is decided in one place, the refusal table below: a
 * value of the right type is refused only where a key's row there says so,
 * for every way in or only for the parameter setters or the key's property
 * setter (NVIDIA's setters differ there, as measured).  Everything else is
 * stored as given and read back as given; the library works with the
 * effective value (config_effective_size, the staging budget, the log
 * level), and config_note_effective says where the two differ.  The
 * parameter setters, the property setters, the file and the environment
 * all go through config_set_size / config_set_size_array / apply_json,
 * which apply the row's common part; config_check_param_string and
 * config_check_prop_size add the setter-only parts.
 *
 * Parsing is json-c's tokener, which accepts the // and / * * / comments of
 * NVIDIA's files.  json-c does not report where a value came from, so error
 * messages find the line of a key by scanning the text for the key names of
 * its path in order (skipping comments and string contents); a syntax
 * error's line comes from the tokener's stop offset.
 *
 * Messages cannot be logged while loading (the log's own settings are being
 * loaded), so they are collected in a struct ocf_cfg_diags and logged by the
 * caller afterwards; gdscheck prints them.
 *
 * The variables that are no key's are the rows of a second table,
 * env_rows[] {variable, type, unit, range, default, tier, doc} (config.h),
 * parsed by the same number and switch parsers as the keys' variables.
 * This file is the library's only reader of the environment (env_get).
 *
 * Tiers.  Every row of both tables has a tier (enum ocf_tier): user (a
 * setting a user of the library may set: every key, and the variables that
 * name files, bound the waits of calls, cap the CPUs or switch read-ahead),
 * tuning (a performance knob whose default was measured) or test (a hook
 * of the tests and the measurement scripts).  gdscheck's report shows every
 * user setting with its value and source and the others only where set;
 * at each open the log names the tuning and test variables set (INFO).
 *
 * When values change.  config_load resolves the rows of tier tuning into
 * cfg->tuning (resolve_tuning), in the units their readers work in; at
 * driver open that is ocf_cfg.tuning, which the subsystems read instead of
 * the environment or copies of their own.  The open writes ocf_cfg under
 * the driver's state lock with no call in flight and no thread of the
 * library running: the close before waited for every call and joined every
 * thread the library starts (the engine's workers, which are also the
 * stripe helpers and the read-ahead fillers; the executors; the tickers).
 * So every tier may change at a reopen and takes effect there, and no
 * thread sees a tuning value change under a request: within one open the
 * values are constant.  The other rows are read through config_env*() when
 * their reader asks (a subsystem as it starts after the open, or a call);
 * while the driver is open only keys change, by the property setters, one
 * aligned word each.  OPENCUFILE_LIBCUDA alone holds for the process's
 * life: the CUDA driver is loaded once.
 *
 * This file depends on nothing of the library but log.c (its level
 * numbers, and the writer a refused variable is logged with), so gdscheck
 * compiles it in and computes exactly what the library will.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"

struct ocf_config ocf_cfg;

#define F(field) offsetof(struct ocf_config, field), sizeof(((struct ocf_config *)0)->field)
#define KB_MAX ((uint64_t)1 << 40) /* 1 PiB in KiB: "no limit" for sizes */

static const char *const level_choices[] = {"NOTICE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", NULL};
static const char *const priority_choices[] = {"default", "low", "med", "high", NULL};
static const char *const lb_choices[] = {"RoundRobin", "RoundRobinMaxMin", NULL};

#define NOTHING_HERE "accepted and reported; drives nothing here (no nvidia-fs/RDMA)"

/* The tier column of both tables (config.h, enum ocf_tier).  Every key is
 * a user's: cufile.json is the format users write. */
#define USER OCF_TIER_USER
#define TUNING OCF_TIER_TUNING
#define TEST OCF_TIER_TEST

const char *config_tier_name(enum ocf_tier t)
{
	switch (t) {
	case OCF_TIER_USER: return "user";
	case OCF_TIER_TUNING: return "tuning";
	case OCF_TIER_TEST: return "test";
	}
	return "?";
}

static const struct ocf_cfg_key_info keys[OCF_K_COUNT] = {
	[OCF_K_LOGGING_DIR] = {"logging.dir", OCF_CFG_STRING, "\"\"", 0, 0, F(logging_dir), NULL, NULL,
			       "directory of cufile.log (empty, or not a directory: the working directory)",
			       USER},
	[OCF_K_LOGGING_LEVEL] = {"logging.level", OCF_CFG_STRING, "\"ERROR\"", 0, 0, F(logging_level),
				 level_choices, "CUFILE_LOGGING_LEVEL", "log level", USER},
	[OCF_K_LOGFILE_PATH] = {"env:CUFILE_LOGFILE_PATH", OCF_CFG_STRING, "\"\"", 0, 0, F(logfile_path), NULL,
				"CUFILE_LOGFILE_PATH", "log file path (overrides logging.dir)", USER},
	[OCF_K_PROFILE_NVTX] = {"profile.nvtx", OCF_CFG_BOOL, "false", 0, 0, F(nvtx), NULL, NULL,
				"accepted and reported; no NVTX ranges are emitted", USER},
	[OCF_K_PROFILE_CUFILE_STATS] = {"profile.cufile_stats", OCF_CFG_SIZE, "0", 0, 3, F(cufile_stats), NULL,
					"OPENCUFILE_STATS_LEVEL",
					"statistics level at open; above 0 the snapshot is published for gds_stats",
					USER},
	[OCF_K_PROFILE_CPU] = {"profile.cpu_profile", OCF_CFG_BOOL, "false", 0, 0, F(cpu_profile), NULL, NULL,
			       "CPU time per thread role, printed at cuFileDriverClose (OPENCUFILE_PROFILE: on, off "
			       "or a file for the report)", USER},
	[OCF_K_EXEC_MAX_IO_QUEUE_DEPTH] = {"execution.max_io_queue_depth", OCF_CFG_SIZE, "128", 1, 256,
					   F(max_io_queue_depth), NULL, NULL,
					   "io_uring reads one engine thread keeps in flight (at most its 3 staging buffers)",
					   USER},
	[OCF_K_EXEC_MAX_IO_THREADS] = {"execution.max_io_threads", OCF_CFG_SIZE, "4", 0, 32, F(max_io_threads),
				       NULL, NULL,
				       "engine worker threads, at least, within the CPU budget (the default is one per CPU "
				       "of the budget, up to 16)", USER},
	[OCF_K_EXEC_PARALLEL_IO] = {"execution.parallel_io", OCF_CFG_BOOL, "true", 0, 0, F(parallel_io), NULL,
				    NULL, "false: requests are never split across worker threads", USER},
	[OCF_K_EXEC_MIN_IO_THRESHOLD_SIZE_KB] = {"execution.min_io_threshold_size_kb", OCF_CFG_SIZE, "8192", 4,
						 4294967295u, F(min_io_threshold_size_kb), NULL, NULL,
						 "requests larger than this are split across worker threads",
						 USER},
	[OCF_K_EXEC_MAX_REQUEST_PARALLELISM] = {"execution.max_request_parallelism", OCF_CFG_SIZE, "4", 0, 8,
						F(max_request_parallelism), NULL, NULL,
						"parallel parts of a request above min_io_threshold_size_kb, at most (a larger "
						"request: one per 2 MiB; 0: no bound); the striped path of 1-8 MiB device "
						"reads has its own bound (OPENCUFILE_STRIPE_PARTICIPANTS)",
						USER},
	[OCF_K_EXEC_WAIT_WATCHDOG_S] = {"execution.wait_watchdog_s", OCF_CFG_SIZE, "30", 0, 86400,
					F(wait_watchdog_s), NULL, "OPENCUFILE_WAIT_WATCHDOG_S",
					"an I/O, batch or stream operation waiting longer than this many seconds "
					"logs one ERROR line saying what it waits for (0: never)", USER},
	[OCF_K_MAX_DIRECT_IO_SIZE_KB] = {"properties.max_direct_io_size_kb", OCF_CFG_SIZE, "16384", 64,
					 16384, F(max_direct_io_size_kb), NULL, NULL,
					 "largest staged chunk (the engine uses at most 4 MiB)", USER},
	[OCF_K_MAX_DEVICE_CACHE_SIZE_KB] = {"properties.max_device_cache_size_kb", OCF_CFG_SIZE, "131072", 0,
					    268435456, F(max_device_cache_size_kb), NULL, NULL,
					    "reported in the driver properties (no GPU-side cache here)",
					    USER},
	[OCF_K_PER_BUFFER_CACHE_SIZE_KB] = {"properties.per_buffer_cache_size_kb", OCF_CFG_SIZE, "1024", 64,
					    16384, F(per_buffer_cache_size_kb), NULL, NULL,
					    "reported in the driver properties (staging chunks are 4 MiB)",
					    USER},
	[OCF_K_MAX_DEVICE_PINNED_MEM_SIZE_KB] = {"properties.max_device_pinned_mem_size_kb", OCF_CFG_SIZE,
						 "33554432", 64, 268435456, F(max_device_pinned_mem_size_kb), NULL,
						 NULL, "reported in the driver properties (GPU memory is never pinned)",
						 USER},
	[OCF_K_POSIX_POOL_SLAB_SIZE_KB] = {"properties.posix_pool_slab_size_kb", OCF_CFG_SIZE_ARRAY,
					   "[4, 1024, 16384]", 4, (uint64_t)1 << 20, F(posix_pool_slab_size_kb),
					   NULL, NULL, "with the counts, bounds the pinned staging memory per GPU",
					   USER},
	[OCF_K_POSIX_POOL_SLAB_COUNT] = {"properties.posix_pool_slab_count", OCF_CFG_SIZE_ARRAY, "[128, 64, 64]",
					 1, (uint64_t)1 << 20, F(posix_pool_slab_count), NULL, NULL,
					 "with the sizes, bounds the pinned staging memory per GPU", USER},
	[OCF_K_USE_POLL_MODE] = {"properties.use_poll_mode", OCF_CFG_BOOL, "false", 0, 0, F(use_poll_mode), NULL,
				 NULL, "reported in the driver properties (all I/O is synchronous)", USER},
	[OCF_K_POLL_MODE_MAX_SIZE_KB] = {"properties.poll_mode_max_size_kb", OCF_CFG_SIZE, "4", 4,
					 18014398509481980ull, F(poll_threshold_size_kb), NULL, NULL,
					 "reported in the driver properties", USER},
	[OCF_K_USE_PCI_P2PDMA] = {"properties.use_pci_p2pdma", OCF_CFG_BOOL, "false", 0, 0, F(use_pci_p2pdma),
				  NULL, NULL, "accepted and reported; no P2PDMA data path here", USER},
	[OCF_K_ALLOW_COMPAT_MODE] = {"properties.allow_compat_mode", OCF_CFG_BOOL, "true", 0, 0,
				     F(allow_compat_mode), NULL, "CUFILE_ALLOW_COMPAT_MODE",
				     "reported in the driver properties; the POSIX path is the only one here",
				     USER},
	[OCF_K_FORCE_COMPAT_MODE] = {"properties.force_compat_mode", OCF_CFG_BOOL, "false", 0, 0,
				     F(force_compat_mode), NULL, "CUFILE_FORCE_COMPAT_MODE",
				     "accepted and reported; the POSIX path is the only one here", USER},
	[OCF_K_GDS_RDMA_WRITE_SUPPORT] = {"properties.gds_rdma_write_support", OCF_CFG_BOOL, "true", 0, 0,
					  F(gds_rdma_write_support), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_IO_BATCHSIZE] = {"properties.io_batchsize", OCF_CFG_SIZE, "128", 1, 256, F(io_batchsize), NULL,
				NULL, "largest batch (driver properties max_batch_io_size)", USER},
	[OCF_K_IO_PRIORITY] = {"properties.io_priority", OCF_CFG_STRING, "\"default\"", 0, 0, F(io_priority),
			       priority_choices, NULL, "accepted and reported; copies use default priority",
			       USER},
	[OCF_K_RDMA_DEV_ADDR_LIST] = {"properties.rdma_dev_addr_list", OCF_CFG_STRING_ARRAY, "[]", 0, 0,
				      F(rdma_dev_addr_list), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_RDMA_LOAD_BALANCING_POLICY] = {"properties.rdma_load_balancing_policy", OCF_CFG_STRING,
					      "\"RoundRobin\"", 0, 0, F(rdma_load_balancing_policy), lb_choices,
					      NULL, NOTHING_HERE, USER},
	[OCF_K_RDMA_DC_KEY] = {"properties.rdma_dc_key", OCF_CFG_STRING, "\"\"", 0, 0, F(rdma_dc_key), NULL, NULL,
			       NOTHING_HERE, USER},
	[OCF_K_RDMA_ACCESS_MASK] = {"properties.rdma_access_mask", OCF_CFG_STRING, "\"0x1f\"", 0, 0,
				    F(rdma_access_mask), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_RDMA_DYNAMIC_ROUTING] = {"properties.rdma_dynamic_routing", OCF_CFG_BOOL, "false", 0, 0,
					F(rdma_dynamic_routing), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_RDMA_DYNAMIC_ROUTING_ORDER] = {"properties.rdma_dynamic_routing_order", OCF_CFG_STRING_ARRAY,
					      "[\"GPU_MEM_NVLINKS\", \"GPU_MEM\", \"SYS_MEM\", \"P2P\"]", 0, 0,
					      F(rdma_dynamic_routing_order), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_MAX_BATCH_IO_SIZE] = {"properties.max_batch_io_size", OCF_CFG_SIZE, "128", 1, 4096,
				     F(max_batch_io_size), NULL, NULL,
				     "accepted and reported; properties.io_batchsize is the batch limit",
				     USER},
	[OCF_K_MAX_BATCH_IO_TIMEOUT_MSECS] = {"properties.max_batch_io_timeout_msecs", OCF_CFG_SIZE, "5", 1,
					      1000, F(batch_io_timeout_ms), NULL, NULL,
					      "reported in the driver properties", USER},
	[OCF_K_PREFER_IOURING] = {"properties.prefer_iouring", OCF_CFG_BOOL, "false", 0, 0, F(prefer_iouring), NULL,
				  NULL, "true: staged buffered transfers also go through io_uring (default: only direct I/O); OPENCUFILE_IO_BACKEND, when set, wins",
				  USER},
	[OCF_K_FORCE_ODIRECT_MODE] = {"properties.force_odirect_mode", OCF_CFG_BOOL, "false", 0, 0,
				      F(force_odirect_mode), NULL, NULL,
				      "accepted and reported; the caller's open flags decide O_DIRECT", USER},
	[OCF_K_ALLOW_SYSTEM_MEMORY] = {"properties.allow_system_memory", OCF_CFG_BOOL, "true", 0, 0,
				       F(allow_system_memory), NULL, NULL,
				       "accepted and reported; host memory is always accepted", USER},
	[OCF_K_SKIP_TOPOLOGY_DETECTION] = {"properties.skip_topology_detection", OCF_CFG_BOOL, "false", 0, 0,
					   F(skip_topology_detection), NULL, NULL,
					   "accepted and reported; no topology is detected", USER},
	[OCF_K_STREAM_MEMOPS_BYPASS] = {"properties.stream_memops_bypass", OCF_CFG_BOOL, "false", 0, 0,
					F(stream_memops_bypass), NULL, NULL, "accepted and reported", USER},
	[OCF_K_FS_GENERIC_POSIX_UNALIGNED_WRITES] = {"fs.generic.posix_unaligned_writes", OCF_CFG_BOOL, "false",
						     0, 0, F(posix_unaligned_writes), NULL, NULL,
						     "accepted and reported; unaligned pieces always go through "
						     "a buffered descriptor", USER},
	[OCF_K_FS_BEEGFS_POSIX_GDS_MIN_KB] = {"fs.beegfs.posix_gds_min_kb", OCF_CFG_SIZE, "0", 0, KB_MAX,
					      F(beegfs_posix_gds_min_kb), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_BEEGFS_RDMA_DEV_ADDR_LIST] = {"fs.beegfs.rdma_dev_addr_list", OCF_CFG_STRING_ARRAY, "[]", 0, 0,
						F(beegfs_rdma_dev_addr_list), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_BEEGFS_MOUNT_TABLE] = {"fs.beegfs.mount_table", OCF_CFG_OBJECT, "{}", 0, 0,
					 F(beegfs_mount_table), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_LUSTRE_POSIX_GDS_MIN_KB] = {"fs.lustre.posix_gds_min_kb", OCF_CFG_SIZE, "0", 0, KB_MAX,
					      F(lustre_posix_gds_min_kb), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_LUSTRE_RDMA_DEV_ADDR_LIST] = {"fs.lustre.rdma_dev_addr_list", OCF_CFG_STRING_ARRAY, "[]", 0, 0,
						F(lustre_rdma_dev_addr_list), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_LUSTRE_MOUNT_TABLE] = {"fs.lustre.mount_table", OCF_CFG_OBJECT, "{}", 0, 0,
					 F(lustre_mount_table), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_NFS_RDMA_DEV_ADDR_LIST] = {"fs.nfs.rdma_dev_addr_list", OCF_CFG_STRING_ARRAY, "[]", 0, 0,
					     F(nfs_rdma_dev_addr_list), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_NFS_MOUNT_TABLE] = {"fs.nfs.mount_table", OCF_CFG_OBJECT, "{}", 0, 0, F(nfs_mount_table), NULL,
				      NULL, NOTHING_HERE, USER},
	[OCF_K_FS_GPFS_GDS_WRITE_SUPPORT] = {"fs.gpfs.gds_write_support", OCF_CFG_BOOL, "false", 0, 0,
					     F(gpfs_gds_write_support), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_GPFS_GDS_ASYNC_SUPPORT] = {"fs.gpfs.gds_async_support", OCF_CFG_BOOL, "true", 0, 0,
					     F(gpfs_gds_async_support), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_GPFS_RDMA_DEV_ADDR_LIST] = {"fs.gpfs.rdma_dev_addr_list", OCF_CFG_STRING_ARRAY, "[]", 0, 0,
					      F(gpfs_rdma_dev_addr_list), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_GPFS_MOUNT_TABLE] = {"fs.gpfs.mount_table", OCF_CFG_OBJECT, "{}", 0, 0, F(gpfs_mount_table),
				       NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_WEKA_RDMA_WRITE_SUPPORT] = {"fs.weka.rdma_write_support", OCF_CFG_BOOL, "false", 0, 0,
					      F(weka_rdma_write_support), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_WEKA_RDMA_DEV_ADDR_LIST] = {"fs.weka.rdma_dev_addr_list", OCF_CFG_STRING_ARRAY, "[]", 0, 0,
					      F(weka_rdma_dev_addr_list), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_FS_WEKA_MOUNT_TABLE] = {"fs.weka.mount_table", OCF_CFG_OBJECT, "{}", 0, 0, F(weka_mount_table),
				       NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_DENYLIST_DRIVERS] = {"denylist.drivers", OCF_CFG_STRING_ARRAY, "[]", 0, 0, F(denylist_drivers),
				    NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_DENYLIST_DEVICES] = {"denylist.devices", OCF_CFG_STRING_ARRAY, "[]", 0, 0, F(denylist_devices),
				    NULL, NULL, "accepted and reported; every device takes the POSIX path",
				    USER},
	[OCF_K_DENYLIST_MOUNTS] = {"denylist.mounts", OCF_CFG_STRING_ARRAY, "[]", 0, 0, F(denylist_mounts), NULL,
				   NULL, "accepted and reported; every mount takes the POSIX path", USER},
	[OCF_K_DENYLIST_FILESYSTEMS] = {"denylist.filesystems", OCF_CFG_STRING_ARRAY, "[]", 0, 0,
					F(denylist_filesystems), NULL, NULL,
					"accepted and reported; every file system takes the POSIX path",
					USER},
	[OCF_K_MISC_API_CHECK_AGGRESSIVE] = {"miscellaneous.api_check_aggressive", OCF_CFG_BOOL, "false", 0, 0,
					     F(api_check_aggressive), NULL, NULL,
					     "accepted and reported; arguments are always fully checked",
					     USER},
	[OCF_K_GPU_BOUNCE_SLAB_SIZE_KB] = {"properties.gpu_bounce_buffer_slab_config.slab_size_kb", OCF_CFG_SIZE_ARRAY,
					   "[1024, 8192, 16384, 65536]", 4, (uint64_t)1 << 20,
					   F(gpu_bounce_slab_size_kb), NULL, NULL,
					   "when set, with the counts: the pinned staging memory per GPU (sum of size x "
					   "count, in place of the POSIX pool slabs); the largest size caps the staging chunk",
					   USER},
	[OCF_K_GPU_BOUNCE_SLAB_COUNT] = {"properties.gpu_bounce_buffer_slab_config.slab_count", OCF_CFG_SIZE_ARRAY,
					 "[128, 8, 4, 2]", 1, (uint64_t)1 << 20, F(gpu_bounce_slab_count), NULL, NULL,
					 "when set, with the sizes: the pinned staging memory per GPU", USER},
	[OCF_K_VANILLA_POSIX_IO_MODE] = {"properties.vanilla_posix_io_mode", OCF_CFG_BOOL, "false", 0, 0,
					 F(vanilla_posix_io_mode), NULL, NULL,
					 "accepted and reported; every I/O takes the POSIX path here, whatever its value",
					 USER},
	[OCF_K_GDS_FALLBACK_IO] = {"properties.gds_fallback_io", OCF_CFG_BOOL, "false", 0, 0, F(gds_fallback_io),
				   NULL, NULL,
				   "accepted and reported; no nvidia-fs/RDMA I/O here that could fall back",
				   USER},
	[OCF_K_RDMA_TRANSPORT_TYPE] = {"properties.rdma_transport_type", OCF_CFG_STRING, "\"DC_V1\"", 0, 0,
				       F(rdma_transport_type), NULL, NULL, NOTHING_HERE, USER},
	[OCF_K_SPARSE_P2P_COMPAT_ENABLE] = {"sparse.p2p_compat_enable", OCF_CFG_BOOL, "true", 0, 0,
					    F(sparse_p2p_compat_enable), NULL, NULL,
					    "accepted and reported; no PCI P2PDMA data path here", USER},
	[OCF_K_BLOCK_RAID1_USE_PCI_P2PDMA] = {"block.raid1.use_pci_p2pdma", OCF_CFG_BOOL, "false", 0, 0,
					      F(raid1_use_pci_p2pdma), NULL, NULL,
					      "accepted and reported; no PCI P2PDMA data path here", USER},
	[OCF_K_BLOCK_RAID10_USE_PCI_P2PDMA] = {"block.raid10.use_pci_p2pdma", OCF_CFG_BOOL, "false", 0, 0,
					       F(raid10_use_pci_p2pdma), NULL, NULL,
					       "accepted and reported; no PCI P2PDMA data path here", USER},
	[OCF_K_MISC_ENABLE_STATIC_ROUTING] = {"miscellaneous.enable_static_routing", OCF_CFG_BOOL, "false", 0, 0,
					      F(enable_static_routing), NULL, NULL,
					      "accepted and reported; no routing here (staging is per GPU, on its NUMA "
					      "node); cuFileExportPCIeTopology writes such a file", USER},
	[OCF_K_MISC_STATIC_ROUTING_FILEPATH] = {"miscellaneous.static_routing_filepath", OCF_CFG_STRING,
						"\"/etc/topology.json\"", 0, 0, F(static_routing_filepath), NULL,
						NULL, "accepted and reported; see miscellaneous.enable_static_routing",
						USER},
	[OCF_K_LOGGING_MAX_FILE_SIZE_MB] = {"logging.max_file_size_mb", OCF_CFG_SIZE, "32", 0, UINT64_MAX,
					    F(log_max_file_size_mb), NULL, "CUFILE_LOGFILE_MAX_SIZE_MB",
					    "accepted and reported (-1: unlimited); the log file is not capped here",
					    USER},
	[OCF_K_DIRECT_READS_FROM_CACHE] = {"properties.direct_reads_from_cache", OCF_CFG_BOOL, "true", 0, 0,
					   F(direct_reads_from_cache), NULL, "OPENCUFILE_DIRECT_READS_FROM_CACHE",
					   "reads through an O_DIRECT handle on a local file system (ext4, xfs, "
					   "btrfs, f2fs, bcachefs, tmpfs) copy the pages the page cache holds and "
					   "read the rest with O_DIRECT (false: every read goes direct)",
					   USER},
};

/* The refusal table: what each way in refuses of a value of a key's own
 * type; a key without a row refuses nothing of its type.  Measured against
 * NVIDIA's libcufile 1.15.1 (tests/gpu/differential.c param_values, run by
 * scripts/param-diff.sh; docs/compatibility.md, "Parameter values"):
 * - cuFileSetParameterSizeT/Bool take every value and read it back as set,
 *   so no size or bool key refuses anything here;
 * - cuFileSetParameterString refuses "" (CU_FILE_INVALID_VALUE, closed and
 *   open) for the three string parameters it knows; RDMA_TRANSPORT, which
 *   it does not know, follows the same rule.  The file and the environment
 *   still take "": there it means "not set", as the keys' defaults do;
 * - the cuFileDriverSet* property setters refuse values outside the range
 *   cuFileGetParameterMinMaxValue reports, with the codes below, and keep
 *   the previous value (SetMaxPinnedMemSize takes 0, though below 64).  The
 *   same keys through cuFileSetParameterSizeT or the file take them.
 * The two policy names have no setter and keep to their choices in the
 * file, as before. */
static const struct ocf_refusal refuses[OCF_K_COUNT] = {
	[OCF_K_IO_PRIORITY] = {.all = OCF_REFUSE_NOT_A_CHOICE},
	[OCF_K_RDMA_LOAD_BALANCING_POLICY] = {.all = OCF_REFUSE_NOT_A_CHOICE},
	[OCF_K_LOGGING_LEVEL] = {.param = OCF_REFUSE_EMPTY},
	[OCF_K_LOGFILE_PATH] = {.param = OCF_REFUSE_EMPTY},
	[OCF_K_LOGGING_DIR] = {.param = OCF_REFUSE_EMPTY},
	[OCF_K_RDMA_TRANSPORT_TYPE] = {.param = OCF_REFUSE_EMPTY},
	[OCF_K_MAX_DIRECT_IO_SIZE_KB] = {.prop = OCF_REFUSE_BELOW_MIN | OCF_REFUSE_ABOVE_MAX,
					 .prop_below_err = CU_FILE_DRIVER_UNSUPPORTED_LIMIT,
					 .prop_above_err = CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	[OCF_K_MAX_DEVICE_CACHE_SIZE_KB] = {.prop = OCF_REFUSE_ABOVE_MAX, .prop_above_err = CU_FILE_INVALID_VALUE},
	[OCF_K_MAX_DEVICE_PINNED_MEM_SIZE_KB] = {.prop = OCF_REFUSE_BELOW_MIN | OCF_REFUSE_BUT_ZERO |
							 OCF_REFUSE_ABOVE_MAX,
						 .prop_below_err = CU_FILE_DRIVER_UNSUPPORTED_LIMIT,
						 .prop_above_err = CU_FILE_INVALID_VALUE},
	[OCF_K_POLL_MODE_MAX_SIZE_KB] = {.prop = OCF_REFUSE_BELOW_MIN | OCF_REFUSE_ABOVE_MAX,
					 .prop_below_err = CU_FILE_DRIVER_UNSUPPORTED_LIMIT,
					 .prop_above_err = CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
};

const struct ocf_refusal *config_key_refusal(enum ocf_cfg_key k)
{
	static const struct ocf_refusal none;
	return (unsigned)k < OCF_K_COUNT ? &refuses[k] : &none;
}

const struct ocf_cfg_key_info *config_key_info(enum ocf_cfg_key k)
{
	if ((unsigned)k >= OCF_K_COUNT)
		return NULL;
	return &keys[k];
}

static bool env_only(const struct ocf_cfg_key_info *ki) { return strncmp(ki->path, "env:", 4) == 0; }

static void *field(struct ocf_config *cfg, const struct ocf_cfg_key_info *ki) { return (char *)cfg + ki->offset; }
static const void *cfield(const struct ocf_config *cfg, const struct ocf_cfg_key_info *ki)
{
	return (const char *)cfg + ki->offset;
}

static void diag(struct ocf_cfg_diags *d, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void diag(struct ocf_cfg_diags *d, int level, const char *fmt, ...)
{
	if (!d)
		return;
	if (d->n >= OCF_CFG_MAX_DIAG) {
		d->dropped++;
		return;
	}
	struct ocf_cfg_diag *e = &d->d[d->n++];
	e->level = level;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ values */

/* Whether s is one of the key's choices (case-insensitive). */
static bool is_choice(const struct ocf_cfg_key_info *ki, const char *s)
{
	for (const char *const *c = ki->choices; c && *c; c++)
		if (strcasecmp(s, *c) == 0)
			return true;
	return false;
}

/* Checks one size (or array element) of key k against refusal bits r:
 * 0, or OCF_REFUSE_BELOW_MIN / OCF_REFUSE_ABOVE_MAX for the side it is
 * refused on, with the reason in why; `what` prefixes it ("element 2: "). */
static int check_size(enum ocf_cfg_key k, unsigned r, uint64_t x, const char *what, char *why, size_t wlen)
{
	const struct ocf_cfg_key_info *ki = &keys[k];
	int side = 0;
	if ((r & OCF_REFUSE_BELOW_MIN) && x < ki->min && !(x == 0 && (r & OCF_REFUSE_BUT_ZERO)))
		side = OCF_REFUSE_BELOW_MIN;
	else if ((r & OCF_REFUSE_ABOVE_MAX) && x > ki->max)
		side = OCF_REFUSE_ABOVE_MAX;
	if (side)
		snprintf(why, wlen, "%s%" PRIu64 " is out of range [%" PRIu64 ", %" PRIu64 "]", what, x, ki->min,
			 ki->max);
	return side;
}

static bool is_size_key(enum ocf_cfg_key k, uint64_t v, char *why, size_t wlen)
{
	if ((unsigned)k < OCF_K_COUNT && keys[k].type == OCF_CFG_SIZE && v <= SIZE_MAX)
		return true;
	snprintf(why, wlen, "not a size key");
	return false;
}

int config_check_size(enum ocf_cfg_key k, uint64_t v, char *why, size_t wlen)
{
	if (!is_size_key(k, v, why, wlen))
		return -1;
	return check_size(k, refuses[k].all, v, "", why, wlen) ? -1 : 0;
}

int config_check_prop_size(enum ocf_cfg_key k, uint64_t v, char *why, size_t wlen)
{
	if (!is_size_key(k, v, why, wlen))
		return CU_FILE_INVALID_VALUE;
	const struct ocf_refusal *r = &refuses[k];
	switch (check_size(k, r->all | r->prop, v, "", why, wlen)) {
	case 0: return 0;
	case OCF_REFUSE_BELOW_MIN: return r->prop_below_err ? r->prop_below_err : CU_FILE_INVALID_VALUE;
	default: return r->prop_above_err ? r->prop_above_err : CU_FILE_INVALID_VALUE;
	}
}

int config_set_size(struct ocf_config *cfg, enum ocf_cfg_key k, uint64_t v, char *why, size_t wlen)
{
	if (config_check_size(k, v, why, wlen))
		return -1;
	*(size_t *)field(cfg, &keys[k]) = (size_t)v;
	return 0;
}

int config_set_size_array(struct ocf_config *cfg, enum ocf_cfg_key k, const size_t *v, size_t n, char *why,
			  size_t wlen)
{
	if ((unsigned)k >= OCF_K_COUNT || keys[k].type != OCF_CFG_SIZE_ARRAY) {
		snprintf(why, wlen, "not an array key");
		return -1;
	}
	if (n < 1 || n > OCF_CFG_ARRAY_MAX) {
		snprintf(why, wlen, "array must hold 1 to %d integers, found %zu", OCF_CFG_ARRAY_MAX, n);
		return -1;
	}
	struct ocf_size_array a = {.n = n};
	for (size_t i = 0; i < n; i++) {
		char what[32];
		snprintf(what, sizeof(what), "element %zu: ", i);
		if (check_size(k, refuses[k].all, v[i], what, why, wlen))
			return -1;
		if ((refuses[k].all & OCF_REFUSE_UNALIGNED) && v[i] % 4) {
			snprintf(why, wlen, "element %zu: %zu is not a multiple of 4 KiB", i, v[i]);
			return -1;
		}
		if ((refuses[k].all & OCF_REFUSE_NOT_INCREASING) && i && v[i] <= v[i - 1]) {
			snprintf(why, wlen, "element %zu: %zu does not increase on %zu", i, v[i], v[i - 1]);
			return -1;
		}
		a.v[i] = v[i];
	}
	*(struct ocf_size_array *)field(cfg, &keys[k]) = a;
	return 0;
}

/* Checks string s of n bytes for STRING key k: the field's length (a type
 * error) and refusal bits r.  0, or -1 with the reason in why. */
static int check_string(enum ocf_cfg_key k, unsigned r, const char *s, size_t n, char *why, size_t wlen)
{
	const struct ocf_cfg_key_info *ki = &keys[k];
	if (n >= ki->size || strlen(s) != n) {
		snprintf(why, wlen, "string is too long (at most %zu bytes) or holds a NUL", ki->size - 1);
		return -1;
	}
	if ((r & OCF_REFUSE_EMPTY) && n == 0) {
		snprintf(why, wlen, "the empty string is not a value");
		return -1;
	}
	if (ki->choices && (r & OCF_REFUSE_NOT_A_CHOICE) && !is_choice(ki, s)) {
		int o = snprintf(why, wlen, "\"%.40s\" is not one of", s);
		for (const char *const *c = ki->choices; *c && o > 0 && (size_t)o < wlen; c++)
			o += snprintf(why + o, wlen - (size_t)o, " %s", *c);
		return -1;
	}
	return 0;
}

int config_check_param_string(enum ocf_cfg_key k, const char *s, char *why, size_t wlen)
{
	if ((unsigned)k >= OCF_K_COUNT || keys[k].type != OCF_CFG_STRING || !s) {
		snprintf(why, wlen, "not a string key");
		return -1;
	}
	/* strnlen: a string longer than any field is refused without reading
	 * all of it. */
	return check_string(k, refuses[k].all | refuses[k].param, s, strnlen(s, keys[k].size), why, wlen);
}

/* A JSON integer as a size: -1 is "unlimited" (SIZE_MAX) for keys whose
 * range ends at UINT64_MAX; any other negative number is not a size. */
static int json_size(const struct ocf_cfg_key_info *ki, struct json_object *v, uint64_t *out, const char *what,
		     char *why, size_t wlen)
{
	enum json_type t = json_object_get_type(v);
	if (t != json_type_int) {
		snprintf(why, wlen, "%sexpected an integer, found %s", what, json_type_to_name(t));
		return -1;
	}
	int64_t x = json_object_get_int64(v);
	if (x == -1 && ki->max == UINT64_MAX) {
		*out = SIZE_MAX;
		return 0;
	}
	if (x < 0) {
		snprintf(why, wlen, "%s%" PRId64 " is negative, not a size", what, x);
		return -1;
	}
	*out = json_object_get_uint64(v); /* exact above INT64_MAX too */
	return 0;
}

/* Validates v for key ki and, only when all of it is valid, stores it.
 * Returns 0, or -1 with a reason in why. */
static int apply_json(struct ocf_config *cfg, const struct ocf_cfg_key_info *ki, struct json_object *v, char *why,
		      size_t wlen)
{
	enum ocf_cfg_key k = (enum ocf_cfg_key)(ki - keys);
	enum json_type t = json_object_get_type(v);
	switch (ki->type) {
	case OCF_CFG_BOOL:
		if (t != json_type_boolean) {
			snprintf(why, wlen, "expected true or false, found %s", json_type_to_name(t));
			return -1;
		}
		*(bool *)field(cfg, ki) = json_object_get_boolean(v);
		return 0;
	case OCF_CFG_SIZE: {
		uint64_t x;
		if (json_size(ki, v, &x, "", why, wlen))
			return -1;
		return config_set_size(cfg, k, x, why, wlen);
	}
	case OCF_CFG_STRING: {
		if (t != json_type_string) {
			snprintf(why, wlen, "expected a string, found %s", json_type_to_name(t));
			return -1;
		}
		const char *s = json_object_get_string(v);
		size_t n = (size_t)json_object_get_string_len(v);
		if (check_string(k, refuses[k].all, s, n, why, wlen))
			return -1;
		memcpy(field(cfg, ki), s, n + 1); /* as given: read back unchanged */
		return 0;
	}
	case OCF_CFG_SIZE_ARRAY: {
		if (t != json_type_array) {
			snprintf(why, wlen, "expected an array of integers, found %s", json_type_to_name(t));
			return -1;
		}
		size_t n = json_object_array_length(v);
		if (n < 1 || n > OCF_CFG_ARRAY_MAX) {
			snprintf(why, wlen, "array must hold 1 to %d integers, found %zu", OCF_CFG_ARRAY_MAX, n);
			return -1;
		}
		size_t a[OCF_CFG_ARRAY_MAX];
		for (size_t i = 0; i < n; i++) {
			char what[32];
			uint64_t x;
			snprintf(what, sizeof(what), "element %zu: ", i);
			if (json_size(ki, json_object_array_get_idx(v, i), &x, what, why, wlen))
				return -1;
			a[i] = (size_t)x;
		}
		return config_set_size_array(cfg, k, a, n, why, wlen);
	}
	case OCF_CFG_STRING_ARRAY:
	case OCF_CFG_OBJECT: {
		if (ki->type == OCF_CFG_OBJECT && t != json_type_object) {
			snprintf(why, wlen, "expected an object, found %s", json_type_to_name(t));
			return -1;
		}
		if (ki->type == OCF_CFG_STRING_ARRAY) {
			if (t != json_type_array) {
				snprintf(why, wlen, "expected an array of strings, found %s", json_type_to_name(t));
				return -1;
			}
			for (size_t i = 0; i < json_object_array_length(v); i++) {
				if (json_object_get_type(json_object_array_get_idx(v, i)) != json_type_string) {
					snprintf(why, wlen, "element %zu is not a string", i);
					return -1;
				}
			}
		}
		const char *txt =
			json_object_to_json_string_ext(v, JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
		if (!txt || strlen(txt) >= ki->size) {
			snprintf(why, wlen, "value is too long (at most %zu bytes as JSON)", ki->size - 1);
			return -1;
		}
		memcpy(field(cfg, ki), txt, strlen(txt) + 1);
		return 0;
	}
	}
	snprintf(why, wlen, "unknown type");
	return -1;
}

static void resolve_tuning(struct ocf_tuning *t, bool from_env, struct ocf_cfg_diags *diags);

void config_load_defaults(struct ocf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (int k = 0; k < OCF_K_COUNT; k++) {
		const struct ocf_cfg_key_info *ki = &keys[k];
		struct json_object *v = json_tokener_parse(ki->def);
		char why[160];
		/* A default that does not validate is a bug of the table;
		 * test_config_defaults_match_nvidia_stock_file catches it. */
		if (!v || apply_json(cfg, ki, v, why, sizeof(why)) != 0)
			abort();
		json_object_put(v);
		cfg->source[k] = OCF_SRC_DEFAULT;
	}
	cfg->staging_chunk_kb = 2048;
	cfg->min_chunk_kb = 1024;
	resolve_tuning(&cfg->tuning, false, NULL);
}

/* ------------------------------------------------------- locating keys */

static size_t skip_space(const char *t, size_t n, size_t i)
{
	while (i < n) {
		char c = t[i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			i++;
		} else if (c == '/' && i + 1 < n && t[i + 1] == '/') {
			while (i < n && t[i] != '\n')
				i++;
		} else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
			i += 2;
			while (i + 1 < n && !(t[i] == '*' && t[i + 1] == '/'))
				i++;
			i = i + 1 < n ? i + 2 : n;
		} else {
			break;
		}
	}
	return i;
}

/* t[i] is '"'; returns the index after the closing quote. */
static size_t skip_string(const char *t, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (t[i] == '\\')
			i++;
		else if (t[i] == '"')
			return i + 1;
	}
	return n;
}

/* Finds, from *pos, a member name equal to name[0..nlen) followed by ':'.
 * On success *pos is just after the ':' and *at is the name's offset. */
static bool find_member(const char *t, size_t n, size_t *pos, const char *name, size_t nlen, size_t *at)
{
	size_t i = *pos;
	while (i < n) {
		i = skip_space(t, n, i);
		if (i >= n)
			break;
		if (t[i] != '"') {
			i++;
			continue;
		}
		size_t s = i, e = skip_string(t, n, i);
		size_t j = skip_space(t, n, e);
		if (j < n && t[j] == ':' && e - s - 2 == nlen && memcmp(t + s + 1, name, nlen) == 0) {
			*pos = j + 1;
			*at = s;
			return true;
		}
		i = e;
	}
	return false;
}

static int line_of(const char *t, size_t n, size_t off)
{
	int line = 1;
	for (size_t i = 0; i < off && i < n; i++)
		if (t[i] == '\n')
			line++;
	return line;
}

/* Line of the member named by the dotted path, 0 when not found. */
static int locate_path(const char *t, size_t n, const char *path)
{
	size_t pos = 0, at = 0;
	const char *p = path;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		if (!find_member(t, n, &pos, p, len, &at))
			return 0;
		p += len;
		if (*p == '.')
			p++;
	}
	return line_of(t, n, at);
}

/* --------------------------------------------------------- the file */

struct parse_ctx {
	struct ocf_config *cfg;
	const char *text;
	size_t len;
	const char *name;
	struct ocf_cfg_diags *diags;
};

static int find_key(const char *path)
{
	for (int k = 0; k < OCF_K_COUNT; k++)
		if (!env_only(&keys[k]) && strcmp(keys[k].path, path) == 0)
			return k;
	return -1;
}

static bool is_section(const char *path)
{
	size_t n = strlen(path);
	for (int k = 0; k < OCF_K_COUNT; k++)
		if (strncmp(keys[k].path, path, n) == 0 && keys[k].path[n] == '.')
			return true;
	return false;
}

static void walk(struct parse_ctx *c, struct json_object *obj, const char *prefix)
{
	json_object_object_foreach(obj, name, v)
	{
		char path[256];
		int pl = snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", name);
		bool fits = pl > 0 && (size_t)pl < sizeof(path);
		int line = fits ? locate_path(c->text, c->len, path) : 0;
		int k = fits ? find_key(path) : -1;
		if (k >= 0) {
			char why[200];
			if (apply_json(c->cfg, &keys[k], v, why, sizeof(why)) == 0) {
				c->cfg->source[k] = OCF_SRC_FILE;
			} else {
				char def[96];
				config_format_value(c->cfg, (enum ocf_cfg_key)k, def, sizeof(def));
				diag(c->diags, OCF_LOG_ERROR, "%s:%d: %s: %s; using %s", c->name, line, path, why, def);
			}
		} else if (fits && is_section(path)) {
			if (json_object_get_type(v) == json_type_object)
				walk(c, v, path);
			else
				diag(c->diags, OCF_LOG_ERROR, "%s:%d: %s: expected an object (a section), found %s; "
					       "using the defaults of its keys", c->name, line, path,
				     json_type_to_name(json_object_get_type(v)));
		} else {
			diag(c->diags, OCF_LOG_WARN, "%s:%d: unknown key \"%.200s\" ignored", c->name, line, path);
		}
	}
}

const char *config_slab_pair_error(const struct ocf_size_array *sizes, const struct ocf_size_array *counts)
{
	return sizes->n != counts->n ? "the size and count arrays differ in length" : NULL;
}

/* Cross-key rule: the two slab arrays of a pair describe one pool; a pair
 * that does not falls back to the defaults of both. */
static void slab_pair_check(struct ocf_config *cfg, const char *text, size_t len, const char *name,
			    struct ocf_cfg_diags *diags, enum ocf_cfg_key ks, enum ocf_cfg_key kc)
{
	struct ocf_size_array *sz = field(cfg, &keys[ks]), *cnt = field(cfg, &keys[kc]);
	const char *why = config_slab_pair_error(sz, cnt);
	if (!why)
		return;
	struct ocf_config d;
	config_load_defaults(&d);
	diag(diags, OCF_LOG_ERROR, "%s:%d: %s has %zu elements but %s has %zu (%s); using the defaults of both", name,
	     locate_path(text, len, keys[kc].path), keys[ks].path, sz->n, keys[kc].path, cnt->n, why);
	*sz = *(struct ocf_size_array *)field(&d, &keys[ks]);
	*cnt = *(struct ocf_size_array *)field(&d, &keys[kc]);
	cfg->source[ks] = OCF_SRC_DEFAULT;
	cfg->source[kc] = OCF_SRC_DEFAULT;
}

int config_parse_text(struct ocf_config *cfg, const char *text, size_t len, const char *name,
		      struct ocf_cfg_diags *diags)
{
	if (len > INT32_MAX) {
		diag(diags, OCF_LOG_ERROR, "%s: file too large; using built-in defaults", name);
		return -EINVAL;
	}
	struct json_tokener *tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	struct json_object *root = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	const char *what = NULL;
	if (!root) {
		what = jerr == json_tokener_continue ? "unexpected end of file" : json_tokener_error_desc(jerr);
		if (jerr == json_tokener_continue)
			end = len;
	} else if (skip_space(text, len, end) < len) {
		what = "unexpected text after the top-level object";
		end = skip_space(text, len, end);
	} else if (json_object_get_type(root) != json_type_object) {
		what = "the top level is not an object";
		end = 0;
	}
	if (what) {
		/* The tokener stops one past the offending character. */
		size_t at = end > 0 && root == NULL && jerr != json_tokener_continue ? end - 1 : end;
		diag(diags, OCF_LOG_ERROR, "%s:%d: not valid JSON: %s; using built-in defaults for every key", name,
		     line_of(text, len, at), what);
		json_object_put(root);
		return -EINVAL;
	}
	struct parse_ctx c = {cfg, text, len, name, diags};
	walk(&c, root, "");
	json_object_put(root);

	slab_pair_check(cfg, text, len, name, diags, OCF_K_POSIX_POOL_SLAB_SIZE_KB, OCF_K_POSIX_POOL_SLAB_COUNT);
	slab_pair_check(cfg, text, len, name, diags, OCF_K_GPU_BOUNCE_SLAB_SIZE_KB, OCF_K_GPU_BOUNCE_SLAB_COUNT);
	return 0;
}

#define OCF_CFG_FILE_MAX (1u << 20)

const char *config_file_path(void) { return config_env_text(OCF_E_ENV_PATH_JSON); }

static int read_file(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = 0;
	char *buf = NULL;
	if (fstat(fd, &st) != 0) {
		r = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out_close;
	}
	if (st.st_size > OCF_CFG_FILE_MAX) {
		r = -EFBIG;
		goto out_close;
	}
	buf = malloc(OCF_CFG_FILE_MAX + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out_close;
	}
	size_t n = 0;
	for (;;) {
		ssize_t got = read(fd, buf + n, OCF_CFG_FILE_MAX + 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			goto out_free;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > OCF_CFG_FILE_MAX) {
			r = -EFBIG;
			goto out_free;
		}
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	close(fd);
	return 0;
out_free:
	free(buf);
out_close:
	close(fd);
	return r;
}

/* ------------------------------------------------------- environment */

/* The one reader of the environment: none at all in set-uid and set-gid
 * processes, as a library should. */
static const char *env_get(const char *name) { return secure_getenv(name); }

static int parse_bool_word(const char *s, bool *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on", "y"};
	static const char *const no[] = {"0", "false", "no", "off", "n"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/* A number as every variable writes one: decimal digits only (no sign,
 * space, suffix or base prefix), not past UINT64_MAX.  0, or -1. */
static int parse_number(const char *s, uint64_t *out)
{
	uint64_t x = 0;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned d = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

void config_apply_env(struct ocf_config *cfg, struct ocf_cfg_diags *diags)
{
	for (int k = 0; k < OCF_K_COUNT; k++) {
		const struct ocf_cfg_key_info *ki = &keys[k];
		if (!ki->env)
			continue;
		const char *s = env_get(ki->env);
		if (!s || !*s)
			continue;
		int ok = -1;
		char why[200] = "";
		if (ki->type == OCF_CFG_BOOL) {
			bool b;
			ok = parse_bool_word(s, &b);
			if (ok == 0)
				*(bool *)field(cfg, ki) = b;
			else
				snprintf(why, sizeof(why), "not on or off (1/0, on/off, true/false, yes/no)");
		} else if (ki->type == OCF_CFG_STRING && ki->choices && !is_choice(ki, s) &&
			   !(k == OCF_K_LOGGING_LEVEL && log_level_from_name(s) >= 0)) {
			/* A variable set by hand: a typo leaves the file's value
			 * in force, with an ERROR, rather than an unknown word. */
			snprintf(why, sizeof(why), "not one of the values the key takes");
		} else if (ki->type == OCF_CFG_STRING) {
			struct json_object *v = json_object_new_string(s);
			ok = v ? apply_json(cfg, ki, v, why, sizeof(why)) : -1;
			json_object_put(v);
		} else if (ki->type == OCF_CFG_SIZE) {
			uint64_t x;
			if (strcmp(s, "-1") == 0 && ki->max == UINT64_MAX)
				ok = config_set_size(cfg, (enum ocf_cfg_key)k, SIZE_MAX, why, sizeof(why));
			else if (parse_number(s, &x) == 0)
				ok = config_set_size(cfg, (enum ocf_cfg_key)k, x, why, sizeof(why));
			else
				snprintf(why, sizeof(why), "not a number (decimal digits)");
		}
		if (ok == 0)
			cfg->source[k] = OCF_SRC_ENV;
		else
			diag(diags, OCF_LOG_ERROR, "environment %s=\"%.60s\": %s; ignored", ki->env, s, why);
	}
	resolve_tuning(&cfg->tuning, true, diags);
}

/* The environment table (config.h).  Sizes in KiB go up to 2^30 KiB.
 * Each row's tier follows its default (USER, TUNING or TEST). */
#define ENV_KIB_MAX ((uint64_t)1 << 30)
#define NUM(var, unit, lo, hi, d, tier, doc) \
	{var, OCF_ENV_NUMBER, unit, lo, hi, d, NULL, NULL, tier, NULL, doc}
#define NUM_COMPUTED(var, unit, lo, hi, computed, tier, doc) \
	{var, OCF_ENV_NUMBER, unit, lo, hi, 0, computed, NULL, tier, NULL, doc}
#define SWITCH(var, d, tier, doc) {var, OCF_ENV_SWITCH, NULL, 0, 1, d, NULL, NULL, tier, NULL, doc}
#define WORD(var, words, d, tier, doc) {var, OCF_ENV_WORD, NULL, 0, 0, d, NULL, words, tier, NULL, doc}
#define TEXT(var, d, tier, doc) {var, OCF_ENV_TEXT, NULL, 0, 0, 0, d, NULL, tier, NULL, doc}
#define OTHER(var, reader, tier, doc) {var, OCF_ENV_TEXT, NULL, 0, 0, 0, NULL, NULL, tier, reader, doc}

static const char *const backend_words[] = {"auto", "uring", "psync", NULL};
static const char *const flush_words[] = {"clwb", "clflushopt", "off", NULL};
static const char *const mapped_words[] = {"on", "off", "avx512", "avx2", "sse2", "plain", NULL};
static const char *const event_wait_words[] = {"hybrid", "spin", NULL};

static const struct ocf_env_info env_rows[OCF_E_COUNT] = {
	[OCF_E_ENV_PATH_JSON] = TEXT("CUFILE_ENV_PATH_JSON", "/etc/cufile.json", USER,
				     "the configuration file, read at every driver open (a missing file it names is an "
				     "ERROR; a missing /etc/cufile.json is not)"),
	[OCF_E_LIBCUDA] = TEXT("OPENCUFILE_LIBCUDA", "libcuda.so.1", TEST,
			       "the CUDA driver library loaded, once per process (the tests load the stand-in "
			       "driver of tests/fakecuda)"),
	[OCF_E_CPUS] = NUM("OPENCUFILE_CPUS", "", 0, 1u << 20, 0, USER,
			   "a cap on the CPU budget every thread pool is sized from (0: none)"),
	[OCF_E_IO_THREADS] = NUM_COMPUTED("OPENCUFILE_IO_THREADS", "", 0, 256,
					  "one per CPU of the budget up to 16, at least execution.max_io_threads "
					  "within the budget",
					  TUNING, "engine worker threads, exactly (0: none)"),
	[OCF_E_PARALLEL] = NUM_COMPUTED("OPENCUFILE_PARALLEL", "", 1, 1024, "the CPU budget, at most the workers + 1",
					TUNING,
					"participants (callers and helpers) of all requests at once, at most"),
	[OCF_E_HELPER_SPIN_US] = NUM("OPENCUFILE_HELPER_SPIN_US", "us", 0, 100000, 0, TEST,
				     "every engine worker polls the queue this long after every job (0: only after "
				     "the short striped reads of OPENCUFILE_STRIPE_SPIN_BELOW_KB); tests, the hang hunt"),
	[OCF_E_CHUNK_KB] = NUM_COMPUTED("OPENCUFILE_CHUNK_KB", "KiB", 64, 1u << 20,
					"2048, less where max_direct_io_size_kb or the largest GPU bounce-buffer slab is "
					"smaller",
					TEST,
					"the staging chunk of the GPUs' pools made after it is set; tests (64: small "
					"files pipelined)"),
	[OCF_E_ALONE_CHUNK_KB] = NUM("OPENCUFILE_ALONE_CHUNK_KB", "KiB", 0, ENV_KIB_MAX, 256, TUNING,
				     "a lone caller's device read without helpers that fits in three staging "
				     "buffers is cut into up to three even chunks of at least this (0: whole)"),
	[OCF_E_STRIPE_MIN_KB] = NUM("OPENCUFILE_STRIPE_MIN_KB", "KiB", 0, ENV_KIB_MAX, 1024, TUNING,
				    "device reads of one caller alone from this size take the striped path"),
	[OCF_E_STRIPE_MAX_KB] = NUM("OPENCUFILE_STRIPE_MAX_KB", "KiB", 0, ENV_KIB_MAX, 8192, TUNING,
				    "... up to this size (0: no striped path)"),
	[OCF_E_PIECE_KB] = NUM("OPENCUFILE_PIECE_KB", "KiB", 4, ENV_KIB_MAX, 256, TUNING,
			       "a helper's piece of a striped read"),
	[OCF_E_STRIPE_KB] = NUM("OPENCUFILE_STRIPE_KB", "KiB", 4, ENV_KIB_MAX, 2048, TUNING,
				"a stripe of a striped read, copied at once (at least a piece)"),
	[OCF_E_STRIPE_PARTICIPANTS] = NUM("OPENCUFILE_STRIPE_PARTICIPANTS", "", 1, 64, 8, TUNING,
					  "participants of one striped read, at most"),
	[OCF_E_STRIPE_FLUSH] = SWITCH("OPENCUFILE_STRIPE_FLUSH", 1, TUNING,
				      "a striped read's pieces written back from the CPU's caches before their copy"),
	[OCF_E_STRIPE_SPIN_US] = NUM("OPENCUFILE_STRIPE_SPIN_US", "us", 0, 1000, 50, TUNING,
				     "helpers kept polling after a striped read below OPENCUFILE_STRIPE_SPIN_BELOW_KB "
				     "(0: none)"),
	[OCF_E_STRIPE_SPIN_BELOW_KB] = NUM("OPENCUFILE_STRIPE_SPIN_BELOW_KB", "KiB", 0, ENV_KIB_MAX, 2048,
					   TUNING, "striped reads below this keep helpers polling after them"),
	[OCF_E_STRIPE_SPINNERS] = NUM("OPENCUFILE_STRIPE_SPINNERS", "", 0, 63, 2, TUNING,
				      "helpers kept polling after such a read, at most"),
	[OCF_E_STRIPE_CALLERS] = NUM("OPENCUFILE_STRIPE_CALLERS", "", 1, 64, 4, TUNING,
				     "device reads striped while fewer callers than this are busy, beside a lone "
				     "caller's only where the handle has no read-ahead window (1: a lone caller's)"),
	[OCF_E_IO_BACKEND] = WORD("OPENCUFILE_IO_BACKEND", backend_words, 0, TUNING,
				  "which system calls move staged file data: auto (io_uring for direct I/O, and for "
				  "buffered with properties.prefer_iouring), uring, psync (pread/pwrite)"),
	[OCF_E_BUFFERED_DIRECT] = SWITCH("OPENCUFILE_BUFFERED_DIRECT", 1, TUNING,
					 "a buffered handle, at its registration, gets an O_DIRECT twin for the bytes "
					 "the page cache does not hold (off: every buffered read is a pread)"),
	[OCF_E_FLUSH_STAGED] = WORD("OPENCUFILE_FLUSH_STAGED", flush_words, 0, TUNING,
				    "how staged bytes of busy reads are written back from the CPU's caches before "
				    "their copy (clwb and clflushopt where the CPU has them, else off)"),
	[OCF_E_FLUSH_BUSY] = NUM("OPENCUFILE_FLUSH_BUSY", "", 0, 1u << 20, 8, TUNING,
				 "... when at least this many participants are busy"),
	[OCF_E_FLUSH_MAX_KB] = NUM("OPENCUFILE_FLUSH_MAX_KB", "KiB", 0, ENV_KIB_MAX, 512, TUNING,
				   "... for reads of at most this size"),
	[OCF_E_MAPPED_READS] = WORD("OPENCUFILE_MAPPED_READS", mapped_words, 0, TUNING,
				    "a buffered handle's cached bytes copied through the file's mapping: on (the best "
				    "copy loop the CPU runs), off (preadv2), or one loop"),
	[OCF_E_MAPPED_BULK] = SWITCH("OPENCUFILE_MAPPED_BULK", 1, TUNING,
				     "bulk chunks copied through the mapping too, with ordinary stores (off: preadv2)"),
	[OCF_E_MAPPED_WRITES] = SWITCH("OPENCUFILE_MAPPED_WRITES", 1, TUNING,
				       "buffered writes stored through the file's mapping where they cover 2 MiB regions "
				       "(off: pwrite)"),
	[OCF_E_MAPPED_DIRECT_QUIET_MS] = NUM("OPENCUFILE_MAPPED_DIRECT_QUIET_MS", "ms", 0, 86400000, 10000,
					     TUNING,
					     "an O_DIRECT handle's cached bytes copied through the file's mapping when "
					     "nothing changed the file for this long (0: only no change during the copy)"),
	[OCF_E_DEREGISTER_WAIT_MS] = NUM("OPENCUFILE_DEREGISTER_WAIT_MS", "ms", 0, 86400000, 10000, USER,
					 "how long cuFileHandleDeregister waits for calls using the handle's files before "
					 "it closes them"),
	[OCF_E_READAHEAD] = SWITCH("OPENCUFILE_READAHEAD", 1, USER,
				   "read-ahead for one caller reading a file in order, read at driver open"),
	[OCF_E_READAHEAD_FILLERS] = NUM("OPENCUFILE_READAHEAD_FILLERS", "", 0, 18, 0, TUNING,
					"helpers filling one read-ahead window at once, a fixed bound (0: shared "
					"among the host's processes, OPENCUFILE_READAHEAD_HOST_FILLERS)"),
	[OCF_E_READAHEAD_HOST_FILLERS] = NUM("OPENCUFILE_READAHEAD_HOST_FILLERS", "", 0, 1024, 8, TUNING,
					     "read-ahead fillers shared by the processes of one user filling at once "
					     "(0: no sharing)"),
	[OCF_E_HOST_SHARE_ACTIVE_MS] = NUM("OPENCUFILE_HOST_SHARE_ACTIVE_MS", "ms", 0, 3600000, 200, TUNING,
					   "a process counts as filling this long after its last stamp (0: 200)"),
	[OCF_E_SHM_DIR] = TEXT("OPENCUFILE_SHM_DIR", "/dev/shm", USER,
			       "the directory of the file through which processes share read-ahead fillers"),
	[OCF_E_PREWARM] = SWITCH("OPENCUFILE_PREWARM", 1, TUNING,
				 "GPUs whose primary context is active brought up at driver open (off: at their "
				 "first I/O)"),
	[OCF_E_NUMA_NODE] = NUM_COMPUTED("OPENCUFILE_NUMA_NODE", "", 0, 63,
					 "the GPU's node from sysfs, where the machine has more than one",
					 TEST, "the NUMA node staging memory is placed on; tests"),
	[OCF_E_STAGING_REGISTER] = SWITCH("OPENCUFILE_STAGING_REGISTER", 0, TEST,
					  "staging memory mapped and pinned with cuMemHostRegister even without a "
					  "NUMA node; tests"),
	[OCF_E_EVENT_WAIT] = WORD("OPENCUFILE_EVENT_WAIT", event_wait_words, 0, TUNING,
				  "how a staging copy is waited for: hybrid (short ones polled, long ones slept "
				  "for), spin (every wait polls: no system call; a GPU test counts them)"),
	[OCF_E_EVENT_NAP_US] = NUM("OPENCUFILE_EVENT_NAP_US", "us", 1, 1000, 20, TUNING,
				   "the first nap of a polled copy held up behind others (they double up to 1 ms)"),
	[OCF_E_GROUPED_COPIES] = SWITCH("OPENCUFILE_GROUPED_COPIES", 1, TUNING,
					"copies handed to the driver grouped (cuMemcpyBatchAsync): the batch path's, "
					"and several callers'"),
	[OCF_E_CALLER_GROUPS] = SWITCH("OPENCUFILE_CALLER_GROUPS", 1, TUNING,
				       "small copies of several callers grouped (a GPU's, at its bring-up)"),
	[OCF_E_CALLER_GROUPS_BUSY] = NUM("OPENCUFILE_CALLER_GROUPS_BUSY", "", 0, 1u << 20, 10, TUNING,
					 "... when at least this many participants are busy"),
	[OCF_E_CALLER_GROUPS_GATHER_US] = NUM("OPENCUFILE_CALLER_GROUPS_GATHER_US", "us", 0, 10000, 3, TUNING,
					      "how long a group's leader waits for more copies"),
	[OCF_E_CALLER_GROUPS_QUEUES] = NUM("OPENCUFILE_CALLER_GROUPS_QUEUES", "", 1, 4, 2, TUNING,
					   "queues of groups per GPU"),
	[OCF_E_CALLER_GROUPS_NAP_US] = NUM_COMPUTED("OPENCUFILE_CALLER_GROUPS_NAP_US", "us", 0, 1000,
						    "adaptive", TUNING,
						    "a group member's nap before it polls for its copy (0: no nap)"),
	[OCF_E_CALLER_GROUPS_NAP_EARLY] = NUM("OPENCUFILE_CALLER_GROUPS_NAP_EARLY", "%", 1, 90, 25, TUNING,
					      "the share of members the adaptive nap lets wake before their copy is "
					      "done"),
	[OCF_E_ASYNC_THREADS] = NUM_COMPUTED("OPENCUFILE_ASYNC_THREADS", "", 1, 256,
					     "the CPU budget within [2, 16], at most execution.max_io_queue_depth",
					     TUNING, "threads of each executor (batch, stream)"),
	[OCF_E_BATCH_SPINNERS] = NUM_COMPUTED("OPENCUFILE_BATCH_SPINNERS", "", 0, 256,
					      "a quarter of the CPU budget, 1 to 4", TUNING,
					      "batch executor threads kept polling after a small batch's operation"),
	[OCF_E_BATCH_SPIN_US] = NUM("OPENCUFILE_BATCH_SPIN_US", "us", 0, 1000, 50, TUNING,
				    "... for this long (0: none kept awake)"),
	[OCF_E_BATCH_WAIT_SPIN_US] = NUM("OPENCUFILE_BATCH_WAIT_SPIN_US", "us", 0, 1000, 100, TUNING,
					 "cuFileBatchIOGetStatus polls this long before it sleeps (0: sleeps at once)"),
	[OCF_E_BATCH_WORKERS] = NUM_COMPUTED("OPENCUFILE_BATCH_WORKERS", "", 1, 1u << 20,
					     "the executor's threads", TEST,
					     "executor operations one batch submission is shared by, at most; tests"),
	[OCF_E_BATCH_CANCEL_WAIT_MS] = NUM("OPENCUFILE_BATCH_CANCEL_WAIT_MS", "ms", 0, 86400000, 10000, USER,
					   "how long cuFileBatchIOCancel waits for entries already running"),
	[OCF_E_PROFILE] = TEXT("OPENCUFILE_PROFILE", NULL, USER,
			       "CPU time per thread role, reported at cuFileDriverClose: 1 or on (to stderr), 0 or "
			       "off, or a file the report is appended to; unset: profile.cpu_profile"),
	[OCF_E_STATS_FILE] = TEXT("OPENCUFILE_STATS_FILE", NULL, USER,
				  "the file the statistics snapshot is written to (%p: the pid), at every level"),
	[OCF_E_XDG_RUNTIME_DIR] = TEXT("XDG_RUNTIME_DIR", NULL, USER,
				       "the snapshot for gds_stats is published in its opencufile/ (unset or not "
				       "absolute: in /tmp/opencufile-UID)"),
	[OCF_E_GDSCHECK_ROOT] = OTHER("OPENCUFILE_GDSCHECK_ROOT", "gdscheck", TEST,
				      "a directory /sys, /proc/driver, /proc/config.gz, /proc/kallsyms and /boot "
				      "are read under; tests"),
	[OCF_E_TEST_DIR] = OTHER("OPENCUFILE_TEST_DIR", "the tests", TEST,
				 "the directory of the tests' files (not tmpfs: O_DIRECT), else the working directory"),
	[OCF_E_LIB] = OTHER("OPENCUFILE_LIB", "the GPU scripts", TEST,
			    "the libcufile.so.0 the GPU scripts and tests compare and expect"),
	[OCF_E_BASE_LIB] = OTHER("OPENCUFILE_BASE_LIB", "scripts/gpu-bench.sh", TEST,
				 "a third library measured beside ours and NVIDIA's"),
	[OCF_E_BASE_SRC] = OTHER("OPENCUFILE_BASE_SRC", "scripts/gpu-bench.sh", TEST,
				 "the source tree that library was built from"),
	[OCF_E_DISABLE] = OTHER("OPENCUFILE_DISABLE", "the Python wheel", USER,
				"set, not empty and not 0: an interpreter starts without loading ours"),
};

const struct ocf_env_info *config_env_info(enum ocf_env e)
{
	return (unsigned)e < OCF_E_COUNT ? &env_rows[e] : NULL;
}

/* What is used when row r's variable is not: its default, in words. */
static void env_default_words(const struct ocf_env_info *r, char *buf, size_t len)
{
	if (r->type == OCF_ENV_NUMBER && r->def_text)
		snprintf(buf, len, "the default (%s)", r->def_text);
	else if (r->type == OCF_ENV_NUMBER)
		snprintf(buf, len, "%" PRIu64, r->def);
	else if (r->type == OCF_ENV_SWITCH)
		snprintf(buf, len, "%s", r->def ? "on" : "off");
	else if (r->type == OCF_ENV_WORD)
		snprintf(buf, len, "%s", r->words[r->def]);
	else
		snprintf(buf, len, "%s", r->def_text ? r->def_text : "nothing");
}

enum ocf_cfg_source config_env_parse(enum ocf_env e, uint64_t *v, const char **text, char *why, size_t wlen)
{
	const struct ocf_env_info *r = &env_rows[e];
	const char *s = r->reader ? NULL : env_get(r->var);
	if (wlen)
		why[0] = '\0';
	*v = r->def;
	s = s && *s ? s : NULL;
	if (text)
		*text = s;
	if (!s)
		return OCF_SRC_DEFAULT;
	char def[160];
	env_default_words(r, def, sizeof(def));
	switch (r->type) {
	case OCF_ENV_NUMBER: {
		uint64_t x;
		const char *sp = *r->unit ? " " : "";
		if (parse_number(s, &x) != 0) {
			snprintf(why, wlen, "not a number in [%" PRIu64 ", %" PRIu64 "]%s%s (decimal digits); using %s",
				 r->min, r->max, sp, r->unit, def);
			return OCF_SRC_DEFAULT;
		}
		if (x < r->min || x > r->max) {
			*v = x < r->min ? r->min : r->max;
			snprintf(why, wlen, "outside [%" PRIu64 ", %" PRIu64 "]%s%s; using %" PRIu64, r->min, r->max, sp,
				 r->unit, *v);
			return OCF_SRC_ENV;
		}
		*v = x;
		return OCF_SRC_ENV;
	}
	case OCF_ENV_SWITCH: {
		bool b;
		if (parse_bool_word(s, &b) != 0) {
			snprintf(why, wlen, "not on or off (1/0, on/off, true/false, yes/no); using %s", def);
			return OCF_SRC_DEFAULT;
		}
		*v = b;
		return OCF_SRC_ENV;
	}
	case OCF_ENV_WORD: {
		for (uint64_t i = 0; r->words[i]; i++)
			if (strcasecmp(s, r->words[i]) == 0) {
				*v = i;
				return OCF_SRC_ENV;
			}
		int o = snprintf(why, wlen, "not one of");
		for (const char *const *w = r->words; *w && o > 0 && (size_t)o < wlen; w++)
			o += snprintf(why + o, wlen - (size_t)o, " %s", *w);
		if (o > 0 && (size_t)o < wlen)
			snprintf(why + o, wlen - (size_t)o, "; using %s", def);
		return OCF_SRC_DEFAULT;
	}
	case OCF_ENV_TEXT:
		return OCF_SRC_ENV;
	}
	return OCF_SRC_DEFAULT;
}

/* Whether row e's refused or clamped value was logged (config_env). */
static atomic_bool warned[OCF_E_COUNT];

static enum ocf_cfg_source env_read(enum ocf_env e, uint64_t *v)
{
	const struct ocf_env_info *r = &env_rows[e];
	char why[240];
	const char *text;
	enum ocf_cfg_source src = config_env_parse(e, v, &text, why, sizeof(why));
	if (why[0] && !atomic_exchange_explicit(&warned[e], true, memory_order_relaxed))
		log_warn("environment %s=\"%.60s\": %s", r->var, text, why);
	return src;
}

uint64_t config_env(enum ocf_env e)
{
	uint64_t v;
	env_read(e, &v);
	return v;
}

bool config_env_given(enum ocf_env e, uint64_t *v)
{
	return env_read(e, v) == OCF_SRC_ENV;
}

int config_env_switch(const char *text)
{
	bool b;
	return parse_bool_word(text, &b) == 0 ? b : -1;
}

const char *config_env_text(enum ocf_env e)
{
	const struct ocf_env_info *r = &env_rows[e];
	const char *s = r->reader ? NULL : env_get(r->var);
	return s && *s ? s : r->def_text;
}

/* ------------------------------------------------------ tuning values */

struct tune_ctx {
	bool from_env; /* the environment's values; else the rows' defaults */
	struct ocf_cfg_diags *diags;
};

/* Row e's value for ocf_tuning (config_env_parse's, with its message in
 * diags); *given: the variable gives it.  Only rows of tier tuning are
 * resolved here: another row in the resolver is a bug of the table, which
 * any open finds. */
static uint64_t tune(const struct tune_ctx *c, enum ocf_env e, bool *given)
{
	const struct ocf_env_info *r = &env_rows[e];
	if (r->tier != OCF_TIER_TUNING)
		abort();
	uint64_t v = r->def;
	enum ocf_cfg_source src = OCF_SRC_DEFAULT;
	if (c->from_env) {
		char why[240];
		const char *text;
		src = config_env_parse(e, &v, &text, why, sizeof(why));
		if (why[0])
			diag(c->diags, OCF_LOG_WARN, "environment %s=\"%.60s\": %s", r->var, text, why);
	}
	if (given)
		*given = src == OCF_SRC_ENV;
	return v;
}

/* Numbers fit an int: no tuning row's range passes 2^20. */
static int tune_int(const struct tune_ctx *c, enum ocf_env e) { return (int)tune(c, e, NULL); }
static bool tune_on(const struct tune_ctx *c, enum ocf_env e) { return tune(c, e, NULL) != 0; }
static size_t tune_kib(const struct tune_ctx *c, enum ocf_env e) { return (size_t)tune(c, e, NULL) * 1024; }
static uint64_t tune_us(const struct tune_ctx *c, enum ocf_env e) { return tune(c, e, NULL) * 1000u; }
/* A row whose default its reader computes: the value, or -1. */
static int tune_given(const struct tune_ctx *c, enum ocf_env e)
{
	bool given;
	uint64_t v = tune(c, e, &given);
	return given ? (int)v : -1;
}

static void resolve_tuning(struct ocf_tuning *t, bool from_env, struct ocf_cfg_diags *diags)
{
	const struct tune_ctx c = {from_env, diags};
	memset(t, 0, sizeof(*t));
	t->io_threads = tune_given(&c, OCF_E_IO_THREADS);
	t->parallel = tune_given(&c, OCF_E_PARALLEL);
	t->alone_chunk_bytes = tune_kib(&c, OCF_E_ALONE_CHUNK_KB);
	struct ocf_stripe_tuning *st = &t->stripe;
	st->min_bytes = tune_kib(&c, OCF_E_STRIPE_MIN_KB);
	st->max_bytes = tune_kib(&c, OCF_E_STRIPE_MAX_KB);
	st->piece = tune_kib(&c, OCF_E_PIECE_KB);
	st->stripe = OCF_MAX(tune_kib(&c, OCF_E_STRIPE_KB), st->piece);
	st->participants = tune_int(&c, OCF_E_STRIPE_PARTICIPANTS);
	st->flush = tune_on(&c, OCF_E_STRIPE_FLUSH);
	st->spin_ns = tune_us(&c, OCF_E_STRIPE_SPIN_US);
	st->spin_below_bytes = tune_kib(&c, OCF_E_STRIPE_SPIN_BELOW_KB);
	st->spinners = tune_int(&c, OCF_E_STRIPE_SPINNERS);
	st->callers = tune_int(&c, OCF_E_STRIPE_CALLERS);
	t->io_backend = tune_int(&c, OCF_E_IO_BACKEND);
	t->buffered_direct = tune_on(&c, OCF_E_BUFFERED_DIRECT);
	t->flush_staged = tune_int(&c, OCF_E_FLUSH_STAGED);
	t->flush_busy = tune_int(&c, OCF_E_FLUSH_BUSY);
	t->flush_max_bytes = tune_kib(&c, OCF_E_FLUSH_MAX_KB);
	t->mapped_reads = tune_int(&c, OCF_E_MAPPED_READS);
	t->mapped_bulk = tune_on(&c, OCF_E_MAPPED_BULK);
	t->mapped_writes = tune_on(&c, OCF_E_MAPPED_WRITES);
	t->mapped_direct_quiet_ns = tune(&c, OCF_E_MAPPED_DIRECT_QUIET_MS, NULL) * 1000000u;
	t->readahead_fillers = tune_int(&c, OCF_E_READAHEAD_FILLERS);
	t->readahead_host_fillers = tune_int(&c, OCF_E_READAHEAD_HOST_FILLERS);
	t->host_share_active_ms = tune(&c, OCF_E_HOST_SHARE_ACTIVE_MS, NULL);
	t->prewarm = tune_on(&c, OCF_E_PREWARM);
	t->event_wait = tune_int(&c, OCF_E_EVENT_WAIT);
	t->event_nap_ns = tune_us(&c, OCF_E_EVENT_NAP_US);
	t->grouped_copies = tune_on(&c, OCF_E_GROUPED_COPIES);
	t->caller_groups = tune_on(&c, OCF_E_CALLER_GROUPS);
	t->caller_groups_busy = tune_int(&c, OCF_E_CALLER_GROUPS_BUSY);
	t->caller_groups_gather_ns = tune_us(&c, OCF_E_CALLER_GROUPS_GATHER_US);
	t->caller_groups_queues = tune_int(&c, OCF_E_CALLER_GROUPS_QUEUES);
	int nap_us = tune_given(&c, OCF_E_CALLER_GROUPS_NAP_US);
	t->caller_groups_nap_ns = nap_us < 0 ? -1 : (int64_t)nap_us * 1000;
	t->caller_groups_nap_early = tune_int(&c, OCF_E_CALLER_GROUPS_NAP_EARLY);
	t->async_threads = tune_given(&c, OCF_E_ASYNC_THREADS);
	t->batch_spinners = tune_given(&c, OCF_E_BATCH_SPINNERS);
	t->batch_spin_ns = tune_us(&c, OCF_E_BATCH_SPIN_US);
	t->batch_wait_spin_ns = tune_us(&c, OCF_E_BATCH_WAIT_SPIN_US);
}

void config_env_format(enum ocf_env e, uint64_t v, const char *text, enum ocf_cfg_source src, char *buf,
		       size_t len)
{
	const struct ocf_env_info *r = &env_rows[e];
	switch (r->type) {
	case OCF_ENV_NUMBER:
		if (src == OCF_SRC_DEFAULT && r->def_text)
			snprintf(buf, len, "(computed)"); /* by the reader: r->def_text says how */
		else
			snprintf(buf, len, "%" PRIu64 "%s%s", v, *r->unit ? " " : "", r->unit);
		break;
	case OCF_ENV_SWITCH:
		snprintf(buf, len, "%s", v ? "on" : "off");
		break;
	case OCF_ENV_WORD:
		snprintf(buf, len, "%s", r->words[v]);
		break;
	case OCF_ENV_TEXT:
		if (text || r->def_text)
			snprintf(buf, len, "\"%s\"", text ? text : r->def_text);
		else
			snprintf(buf, len, "(unset)");
		break;
	}
}

void config_env_note_refused(struct ocf_cfg_diags *diags)
{
	for (int e = 0; e < OCF_E_COUNT; e++) {
		uint64_t v;
		const char *text;
		char why[240];
		if (env_rows[e].tier == OCF_TIER_TUNING)
			continue; /* config_load says it */
		config_env_parse((enum ocf_env)e, &v, &text, why, sizeof(why));
		if (why[0])
			diag(diags, OCF_LOG_WARN, "environment %s=\"%.60s\": %s", env_rows[e].var, text, why);
	}
}

/* Whether a row of either table names the variable of n bytes at name. */
static bool known_variable(const char *name, size_t n)
{
	for (int e = 0; e < OCF_E_COUNT; e++)
		if (strlen(env_rows[e].var) == n && strncmp(env_rows[e].var, name, n) == 0)
			return true;
	for (int k = 0; k < OCF_K_COUNT; k++)
		if (keys[k].env && strlen(keys[k].env) == n && strncmp(keys[k].env, name, n) == 0)
			return true;
	return false;
}

extern char **environ;

void config_env_note_unknown(struct ocf_cfg_diags *diags)
{
	if (getauxval(AT_SECURE))
		return;
	for (char **p = environ; p && *p; p++) {
		if (strncmp(*p, "OPENCUFILE_", 11) != 0)
			continue;
		size_t n = strcspn(*p, "=");
		if (!known_variable(*p, n))
			diag(diags, OCF_LOG_WARN,
			     "environment %.*s is not a variable of this library (removed, or misspelt): ignored",
			     (int)OCF_MIN(n, (size_t)100), *p);
	}
}

void config_env_note_not_user(struct ocf_cfg_diags *diags)
{
	for (int e = 0; e < OCF_E_COUNT; e++) {
		const struct ocf_env_info *r = &env_rows[e];
		const char *s = r->tier == OCF_TIER_USER || r->reader ? NULL : env_get(r->var);
		if (s && *s)
			diag(diags, OCF_LOG_INFO,
			     "environment %s=\"%.60s\": a %s setting (%s; docs/configuration.md, \"Tiers\"); in effect",
			     r->var, s, config_tier_name(r->tier),
			     r->tier == OCF_TIER_TUNING ? "a performance knob" : "a hook of the tests");
	}
}

void config_load(struct ocf_config *cfg, struct ocf_cfg_diags *diags)
{
	config_load_defaults(cfg);
	const char *named = env_get(env_rows[OCF_E_ENV_PATH_JSON].var);
	const char *path = config_file_path();
	snprintf(cfg->file_path, sizeof(cfg->file_path), "%s", path);
	char *text = NULL;
	size_t len = 0;
	int r = read_file(path, &text, &len);
	if (r == 0) {
		cfg->file_ok = config_parse_text(cfg, text, len, path, diags) == 0;
		free(text);
	} else if (r == -ENOENT && !(named && *named)) {
		/* No /etc/cufile.json: built-in defaults, as documented. */
		cfg->file_path[0] = '\0';
	} else {
		diag(diags, OCF_LOG_ERROR, "%s: cannot read the configuration file (%s); using built-in defaults",
		     path, r == -EINVAL ? "not a regular file" : strerror(-r));
	}
	config_apply_env(cfg, diags);
}

/* ------------------------------------------------------- accessors */

size_t config_get_size(const struct ocf_config *cfg, enum ocf_cfg_key k)
{
	return keys[k].type == OCF_CFG_SIZE ? *(const size_t *)cfield(cfg, &keys[k]) : 0;
}

bool config_get_bool(const struct ocf_config *cfg, enum ocf_cfg_key k)
{
	return keys[k].type == OCF_CFG_BOOL ? *(const bool *)cfield(cfg, &keys[k]) : false;
}

const char *config_get_string(const struct ocf_config *cfg, enum ocf_cfg_key k)
{
	return keys[k].type == OCF_CFG_STRING ? (const char *)cfield(cfg, &keys[k]) : "";
}

/* Used by config_stage.c: validates and stores one value of any table type
 * given as a json-c object. */
int config_set_json(struct ocf_config *cfg, enum ocf_cfg_key k, struct json_object *v, char *why, size_t wlen);
int config_set_json(struct ocf_config *cfg, enum ocf_cfg_key k, struct json_object *v, char *why, size_t wlen)
{
	return apply_json(cfg, &keys[k], v, why, wlen);
}

void config_format_value(const struct ocf_config *cfg, enum ocf_cfg_key k, char *buf, size_t len)
{
	const struct ocf_cfg_key_info *ki = &keys[k];
	const void *f = cfield(cfg, ki);
	switch (ki->type) {
	case OCF_CFG_BOOL:
		snprintf(buf, len, "%s", *(const bool *)f ? "true" : "false");
		break;
	case OCF_CFG_SIZE:
		snprintf(buf, len, "%zu", *(const size_t *)f);
		break;
	case OCF_CFG_STRING:
		snprintf(buf, len, "\"%s\"", (const char *)f);
		break;
	case OCF_CFG_SIZE_ARRAY: {
		const struct ocf_size_array *a = f;
		int o = snprintf(buf, len, "[");
		for (size_t i = 0; i < a->n && o > 0 && (size_t)o < len; i++)
			o += snprintf(buf + o, len - (size_t)o, "%s%zu", i ? ", " : "", a->v[i]);
		if (o > 0 && (size_t)o < len)
			snprintf(buf + o, len - (size_t)o, "]");
		break;
	}
	case OCF_CFG_STRING_ARRAY:
	case OCF_CFG_OBJECT:
		snprintf(buf, len, "%s", (const char *)f);
		break;
	}
}

const char *config_source_name(enum ocf_cfg_source s)
{
	switch (s) {
	case OCF_SRC_DEFAULT: return "default";
	case OCF_SRC_FILE: return "file";
	case OCF_SRC_ENV: return "environment";
	case OCF_SRC_SETTER: return "setter";
	}
	return "?";
}

/* ------------------------------------------------------- effective values */

size_t config_effective_size(const struct ocf_config *cfg, enum ocf_cfg_key k)
{
	const struct ocf_cfg_key_info *ki = &keys[k];
	if (ki->type != OCF_CFG_SIZE)
		return 0;
	/* A single aligned word: the property setters change it while the
	 * driver is open (config_live_set_size). */
	size_t v = __atomic_load_n((const size_t *)cfield(cfg, ki), __ATOMIC_RELAXED);
	if (ki->max == UINT64_MAX)
		return v;
	return v < ki->min ? (size_t)ki->min : v > ki->max ? (size_t)ki->max : v;
}

static size_t sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t sat_mul(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

/* What the slab arrays in use describe, uncapped (bytes, saturating), and
 * their largest slab of a count > 0 (bytes).  *gpu: the GPU bounce-buffer
 * arrays are the ones in use. */
static size_t slab_bytes(const struct ocf_config *cfg, size_t *largest, bool *gpu)
{
	*gpu = cfg->source[OCF_K_GPU_BOUNCE_SLAB_SIZE_KB] != OCF_SRC_DEFAULT ||
	       cfg->source[OCF_K_GPU_BOUNCE_SLAB_COUNT] != OCF_SRC_DEFAULT;
	const struct ocf_size_array *sz = *gpu ? &cfg->gpu_bounce_slab_size_kb : &cfg->posix_pool_slab_size_kb;
	const struct ocf_size_array *cnt = *gpu ? &cfg->gpu_bounce_slab_count : &cfg->posix_pool_slab_count;
	size_t budget = 0;
	*largest = 0;
	for (size_t i = 0; i < sz->n && i < cnt->n; i++) {
		size_t bytes = sat_mul(sz->v[i], 1024);
		budget = sat_add(budget, sat_mul(bytes, cnt->v[i]));
		if (cnt->v[i])
			*largest = OCF_MAX(*largest, bytes);
	}
	return budget;
}

#define STAGING_CAP_FLOOR ((size_t)2 << 30)

size_t config_staging_budget_cap(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	size_t quarter = pages > 0 && psz > 0 ? sat_mul((size_t)pages, (size_t)psz) / 4 : 0;
	return OCF_MAX(quarter, STAGING_CAP_FLOOR);
}

size_t config_staging_budget(const struct ocf_config *cfg, size_t *max_chunk)
{
	size_t largest;
	bool gpu;
	size_t budget = slab_bytes(cfg, &largest, &gpu);
	if (max_chunk)
		*max_chunk = gpu ? largest : 0;
	return OCF_MIN(budget, config_staging_budget_cap());
}

/* The choice a string key's default names, without its quotes. */
static void default_choice(const struct ocf_cfg_key_info *ki, char *buf, size_t len)
{
	snprintf(buf, len, "%s", ki->def[0] == '"' ? ki->def + 1 : ki->def);
	buf[strcspn(buf, "\"")] = '\0';
}

bool config_effective_note(const struct ocf_config *cfg, enum ocf_cfg_key k, char *buf, size_t len)
{
	const struct ocf_cfg_key_info *ki = config_key_info(k);
	if (!ki)
		return false;
	if (ki->type == OCF_CFG_SIZE) {
		size_t v = *(const size_t *)cfield(cfg, ki), e = config_effective_size(cfg, k);
		if (v == e)
			return false;
		snprintf(buf, len, "%s = %zu is outside [%" PRIu64 ", %" PRIu64 "]: kept and read back as set; "
			 "the library works with %zu", ki->path, v, ki->min, ki->max, e);
		return true;
	}
	if (ki->type == OCF_CFG_STRING && ki->choices) {
		const char *v = cfield(cfg, ki);
		if (is_choice(ki, v) || (k == OCF_K_LOGGING_LEVEL && log_level_from_name(v) >= 0))
			return false;
		char def[32];
		default_choice(ki, def, sizeof(def));
		int o = snprintf(buf, len, "%s = \"%.60s\" is not one of", ki->path, v);
		for (const char *const *c = ki->choices; *c && o > 0 && (size_t)o < len; c++)
			o += snprintf(buf + o, len - (size_t)o, " %s", *c);
		if (o > 0 && (size_t)o < len)
			snprintf(buf + o, len - (size_t)o, ": kept and read back as set; the library uses %s", def);
		return true;
	}
	return false;
}

void config_note_effective(const struct ocf_config *cfg, struct ocf_cfg_diags *diags)
{
	char msg[sizeof(diags->d[0].msg)];
	for (int k = 0; k < OCF_K_COUNT; k++)
		if (config_effective_note(cfg, (enum ocf_cfg_key)k, msg, sizeof(msg)))
			/* An unknown log level leaves ERROR in force: a WARN
			 * line about it would never be written. */
			diag(diags, k == OCF_K_LOGGING_LEVEL ? OCF_LOG_ERROR : OCF_LOG_WARN, "%s", msg);
	size_t largest;
	bool gpu;
	size_t bytes = slab_bytes(cfg, &largest, &gpu), cap = config_staging_budget_cap();
	const char *which = gpu ? "properties.gpu_bounce_buffer_slab_config" : "properties.posix_pool_slab_*";
	if (bytes > cap)
		diag(diags, OCF_LOG_WARN,
		     "%s: the slab arrays describe %zu MiB of staging memory per GPU; the library pins at most "
		     "%zu MiB per GPU (a quarter of this machine's memory), and only as I/O needs it",
		     which, bytes >> 20, cap >> 20);
	else if (bytes == 0)
		diag(diags, OCF_LOG_WARN,
		     "%s: the slab arrays describe no staging memory (sizes or counts of 0); the library uses "
		     "its smallest staging pool (2 lanes per GPU)", which);
}
