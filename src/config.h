/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - the configuration of the library: cufile.json, environment,
 * parameter setters, and where each effective value came from.
 *
 * Every key of the cufile.json format is one row of a table (config.c)
 * {json path, type, default, min, max, field, ..., tier}.  A struct ocf_config holds
 * one value per row plus the row's source.  Sizes are in KiB as in the file.
 *
 * Stored and effective values.  A value of the right type is refused only
 * where config.c's refusal table says so (NVIDIA's library accepts values
 * outside the ranges its cuFileGetParameterMinMaxValue reports, and programs
 * set them); otherwise it is stored as given, and the getters and gdscheck
 * show it as given.  What the library works with is the effective value:
 * config_effective_size() (the stored value clamped to the key's
 * [min, max]), config_staging_budget() and the log level; each value that
 * differs from what was stored is logged once (config_note_effective).
 */
#ifndef OCF_CONFIG_H_
#define OCF_CONFIG_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCF_CFG_ARRAY_MAX 64  /* longest slab array (NVIDIA's setters take 17: more than 16) */
#define OCF_CFG_LIST_LEN 1024 /* string arrays and objects, kept as JSON text */
#define OCF_CFG_STR_LEN 4096  /* string parameters (paths, levels, names), NUL included */

/* Where an effective value came from, in increasing precedence. */
enum ocf_cfg_source {
	OCF_SRC_DEFAULT = 0,
	OCF_SRC_FILE,
	OCF_SRC_ENV,
	OCF_SRC_SETTER,
};

/* Who a setting is for: a column of both tables (keys and environment
 * rows).  gdscheck's report shows every user setting with its value and
 * source, and the others only where they are set; gdscheck -k lists them
 * all with their tier; docs/configuration.md says what each tier promises. */
enum ocf_tier {
	OCF_TIER_USER,   /* a setting a user of the library may set: kept and documented */
	OCF_TIER_TUNING, /* a performance knob with a measured default: in ocf_cfg.tuning */
	OCF_TIER_TEST,   /* a hook of the tests and the measurement scripts */
};
const char *config_tier_name(enum ocf_tier t);

enum ocf_cfg_type {
	OCF_CFG_BOOL,         /* bool */
	OCF_CFG_SIZE,         /* size_t, JSON integer within [min, max] */
	OCF_CFG_STRING,       /* char[], JSON string (optionally from a fixed set) */
	OCF_CFG_SIZE_ARRAY,   /* struct ocf_size_array, JSON array of integers */
	OCF_CFG_STRING_ARRAY, /* char[], JSON array of strings, kept as JSON text */
	OCF_CFG_OBJECT,       /* char[], any JSON object (mount_table), as text */
};

/* Keys, in table order.  Only those code outside config.c names are listed
 * by name; the rest are reached through the table. */
enum ocf_cfg_key {
	OCF_K_LOGGING_DIR,
	OCF_K_LOGGING_LEVEL,
	OCF_K_LOGFILE_PATH, /* no JSON key: CUFILE_LOGFILE_PATH or the setter */
	OCF_K_PROFILE_NVTX,
	OCF_K_PROFILE_CUFILE_STATS,
	OCF_K_PROFILE_CPU,
	OCF_K_EXEC_MAX_IO_QUEUE_DEPTH,
	OCF_K_EXEC_MAX_IO_THREADS,
	OCF_K_EXEC_PARALLEL_IO,
	OCF_K_EXEC_MIN_IO_THRESHOLD_SIZE_KB,
	OCF_K_EXEC_MAX_REQUEST_PARALLELISM,
	OCF_K_EXEC_WAIT_WATCHDOG_S,
	OCF_K_MAX_DIRECT_IO_SIZE_KB,
	OCF_K_MAX_DEVICE_CACHE_SIZE_KB,
	OCF_K_PER_BUFFER_CACHE_SIZE_KB,
	OCF_K_MAX_DEVICE_PINNED_MEM_SIZE_KB,
	OCF_K_POSIX_POOL_SLAB_SIZE_KB,
	OCF_K_POSIX_POOL_SLAB_COUNT,
	OCF_K_USE_POLL_MODE,
	OCF_K_POLL_MODE_MAX_SIZE_KB,
	OCF_K_USE_PCI_P2PDMA,
	OCF_K_ALLOW_COMPAT_MODE,
	OCF_K_FORCE_COMPAT_MODE,
	OCF_K_GDS_RDMA_WRITE_SUPPORT,
	OCF_K_IO_BATCHSIZE,
	OCF_K_IO_PRIORITY,
	OCF_K_RDMA_DEV_ADDR_LIST,
	OCF_K_RDMA_LOAD_BALANCING_POLICY,
	OCF_K_RDMA_DC_KEY,
	OCF_K_RDMA_ACCESS_MASK,
	OCF_K_RDMA_DYNAMIC_ROUTING,
	OCF_K_RDMA_DYNAMIC_ROUTING_ORDER,
	OCF_K_MAX_BATCH_IO_SIZE,
	OCF_K_MAX_BATCH_IO_TIMEOUT_MSECS,
	OCF_K_PREFER_IOURING,
	OCF_K_FORCE_ODIRECT_MODE,
	OCF_K_ALLOW_SYSTEM_MEMORY,
	OCF_K_SKIP_TOPOLOGY_DETECTION,
	OCF_K_STREAM_MEMOPS_BYPASS,
	OCF_K_FS_GENERIC_POSIX_UNALIGNED_WRITES,
	OCF_K_FS_BEEGFS_POSIX_GDS_MIN_KB,
	OCF_K_FS_BEEGFS_RDMA_DEV_ADDR_LIST,
	OCF_K_FS_BEEGFS_MOUNT_TABLE,
	OCF_K_FS_LUSTRE_POSIX_GDS_MIN_KB,
	OCF_K_FS_LUSTRE_RDMA_DEV_ADDR_LIST,
	OCF_K_FS_LUSTRE_MOUNT_TABLE,
	OCF_K_FS_NFS_RDMA_DEV_ADDR_LIST,
	OCF_K_FS_NFS_MOUNT_TABLE,
	OCF_K_FS_GPFS_GDS_WRITE_SUPPORT,
	OCF_K_FS_GPFS_GDS_ASYNC_SUPPORT,
	OCF_K_FS_GPFS_RDMA_DEV_ADDR_LIST,
	OCF_K_FS_GPFS_MOUNT_TABLE,
	OCF_K_FS_WEKA_RDMA_WRITE_SUPPORT,
	OCF_K_FS_WEKA_RDMA_DEV_ADDR_LIST,
	OCF_K_FS_WEKA_MOUNT_TABLE,
	OCF_K_DENYLIST_DRIVERS,
	OCF_K_DENYLIST_DEVICES,
	OCF_K_DENYLIST_MOUNTS,
	OCF_K_DENYLIST_FILESYSTEMS,
	OCF_K_MISC_API_CHECK_AGGRESSIVE,
	/* cuFile 1.17-1.19 keys */
	OCF_K_GPU_BOUNCE_SLAB_SIZE_KB,
	OCF_K_GPU_BOUNCE_SLAB_COUNT,
	OCF_K_VANILLA_POSIX_IO_MODE,
	OCF_K_GDS_FALLBACK_IO,
	OCF_K_RDMA_TRANSPORT_TYPE,
	OCF_K_SPARSE_P2P_COMPAT_ENABLE,
	OCF_K_BLOCK_RAID1_USE_PCI_P2PDMA,
	OCF_K_BLOCK_RAID10_USE_PCI_P2PDMA,
	OCF_K_MISC_ENABLE_STATIC_ROUTING,
	OCF_K_MISC_STATIC_ROUTING_FILEPATH,
	OCF_K_LOGGING_MAX_FILE_SIZE_MB,
	/* opencufile's own keys */
	OCF_K_DIRECT_READS_FROM_CACHE,
	OCF_K_COUNT
};

struct ocf_size_array {
	size_t n;
	size_t v[OCF_CFG_ARRAY_MAX];
};

/* The striped path's values (stripe.c): requests of min_bytes to
 * max_bytes striped, in pieces of `piece` bytes and stripes of `stripe`
 * bytes (at least a piece), by at most `participants` threads; short ones
 * (below spin_below_bytes) keep up to `spinners` helpers polling for
 * spin_ns after them; striped beside other callers while fewer than
 * `callers` are busy. */
struct ocf_stripe_tuning {
	size_t min_bytes, max_bytes;
	size_t piece, stripe;
	int participants;
	bool flush; /* each piece written back from the CPU's caches before its copy */
	uint64_t spin_ns;
	size_t spin_below_bytes;
	int spinners;
	int callers;
};

/* Every setting of tier tuning, resolved from its environment row
 * (config.c, env_rows[]) by config_load at each driver open, in the unit
 * its reader works in.  WORD rows hold the index of the word in the row's
 * list; a row whose default its reader computes holds -1 when the variable
 * gives no value.  The subsystems read these fields instead of the
 * environment; docs/configuration.md, "Tiers", says when they change. */
struct ocf_tuning {
	/* the engine (engine.c) */
	int io_threads; /* OPENCUFILE_IO_THREADS, -1: computed */
	int parallel;	/* OPENCUFILE_PARALLEL, -1: computed */
	size_t alone_chunk_bytes; /* the planner: a lone caller's chunks (planner.c) */
	struct ocf_stripe_tuning stripe;
	/* the file side (uring.c, handle.c, fileio.c, filemap.c) */
	int io_backend; /* auto, uring, psync */
	bool buffered_direct;
	int flush_staged; /* clwb, clflushopt, off */
	int flush_busy;
	size_t flush_max_bytes;
	int mapped_reads; /* on, off, avx512, avx2, sse2, plain */
	bool mapped_bulk;
	bool mapped_writes;
	uint64_t mapped_direct_quiet_ns;
	/* read-ahead (readahead.c, hostshare.c) */
	int readahead_fillers;
	int readahead_host_fillers;
	uint64_t host_share_active_ms;
	/* GPUs, staging and copies (gpu.c, copygroup.c) */
	bool prewarm;
	int event_wait; /* hybrid, spin */
	uint64_t event_nap_ns;
	bool grouped_copies;
	bool caller_groups;
	int caller_groups_busy;
	uint64_t caller_groups_gather_ns;
	int caller_groups_queues;
	int64_t caller_groups_nap_ns; /* -1: adaptive */
	int caller_groups_nap_early;  /* % */
	/* batches and streams (async.c, batch.c) */
	int async_threads;  /* -1: computed */
	int batch_spinners; /* -1: computed */
	uint64_t batch_spin_ns;
	uint64_t batch_wait_spin_ns;
};

struct ocf_config {
	/* logging */
	char logging_level[OCF_CFG_STR_LEN]; /* any string; unknown levels log at ERROR */
	char logging_dir[4096];
	char logfile_path[4096];
	/* profile */
	bool nvtx;
	size_t cufile_stats;
	bool cpu_profile;
	/* execution */
	size_t max_io_queue_depth;
	size_t max_io_threads;
	size_t wait_watchdog_s; /* a wait longer than this is logged (0: never) */
	bool parallel_io;
	size_t min_io_threshold_size_kb;
	size_t max_request_parallelism;
	/* properties */
	size_t max_direct_io_size_kb;
	size_t max_device_cache_size_kb;
	size_t per_buffer_cache_size_kb;
	size_t max_device_pinned_mem_size_kb;
	struct ocf_size_array posix_pool_slab_size_kb;
	struct ocf_size_array posix_pool_slab_count;
	bool use_poll_mode;
	size_t poll_threshold_size_kb; /* properties.poll_mode_max_size_kb */
	bool use_pci_p2pdma;
	bool allow_compat_mode;
	bool force_compat_mode;
	bool gds_rdma_write_support;
	size_t io_batchsize;
	char io_priority[16];
	char rdma_dev_addr_list[OCF_CFG_LIST_LEN];
	char rdma_load_balancing_policy[32];
	char rdma_dc_key[32];
	char rdma_access_mask[32];
	bool rdma_dynamic_routing;
	char rdma_dynamic_routing_order[OCF_CFG_LIST_LEN];
	size_t max_batch_io_size;
	size_t batch_io_timeout_ms; /* properties.max_batch_io_timeout_msecs */
	bool prefer_iouring;
	bool force_odirect_mode;
	bool allow_system_memory;
	bool skip_topology_detection;
	bool stream_memops_bypass;
	/* fs */
	bool posix_unaligned_writes;
	size_t beegfs_posix_gds_min_kb;
	char beegfs_rdma_dev_addr_list[OCF_CFG_LIST_LEN];
	char beegfs_mount_table[OCF_CFG_LIST_LEN];
	size_t lustre_posix_gds_min_kb;
	char lustre_rdma_dev_addr_list[OCF_CFG_LIST_LEN];
	char lustre_mount_table[OCF_CFG_LIST_LEN];
	char nfs_rdma_dev_addr_list[OCF_CFG_LIST_LEN];
	char nfs_mount_table[OCF_CFG_LIST_LEN];
	bool gpfs_gds_write_support;
	bool gpfs_gds_async_support;
	char gpfs_rdma_dev_addr_list[OCF_CFG_LIST_LEN];
	char gpfs_mount_table[OCF_CFG_LIST_LEN];
	bool weka_rdma_write_support;
	char weka_rdma_dev_addr_list[OCF_CFG_LIST_LEN];
	char weka_mount_table[OCF_CFG_LIST_LEN];
	/* denylist */
	char denylist_drivers[OCF_CFG_LIST_LEN];
	char denylist_devices[OCF_CFG_LIST_LEN];
	char denylist_mounts[OCF_CFG_LIST_LEN];
	char denylist_filesystems[OCF_CFG_LIST_LEN];
	/* miscellaneous */
	bool api_check_aggressive;
	/* cuFile 1.17-1.19 keys */
	struct ocf_size_array gpu_bounce_slab_size_kb;
	struct ocf_size_array gpu_bounce_slab_count;
	bool vanilla_posix_io_mode;
	bool gds_fallback_io;
	char rdma_transport_type[OCF_CFG_STR_LEN];
	bool sparse_p2p_compat_enable;
	bool raid1_use_pci_p2pdma;
	bool raid10_use_pci_p2pdma;
	bool enable_static_routing;
	char static_routing_filepath[4096];
	size_t log_max_file_size_mb; /* SIZE_MAX: unlimited (-1 in the file) */
	/* opencufile's own keys */
	bool direct_reads_from_cache; /* O_DIRECT handles read cached pages by copy */

	/* Not in cufile.json: the staging engine's chunk.  4 MiB: large enough
	 * that the per-chunk syscall and copy-launch costs are amortised,
	 * small enough that the pool bounded by max_device_cache_size_kb holds
	 * many of them. */
	size_t staging_chunk_kb;
	size_t min_chunk_kb;       /* smallest piece a request is split into */

	/* The tuning settings (environment rows of tier tuning). */
	struct ocf_tuning tuning;

	/* Where each value came from (enum ocf_cfg_source), by key. */
	unsigned char source[OCF_K_COUNT];
	/* The file read ("" when none), and whether it was read without error. */
	char file_path[4096];
	bool file_ok;
};

/* One row of the table. */
struct ocf_cfg_key_info {
	const char *path;   /* "properties.max_direct_io_size_kb"; env-only keys: "(env) NAME" */
	enum ocf_cfg_type type;
	const char *def;    /* default, as JSON text */
	uint64_t min, max;  /* SIZE: value range; SIZE_ARRAY: element range */
	size_t offset, size;
	const char *const *choices; /* STRING: allowed values (NULL: any) */
	const char *env;    /* environment variable overriding it, or NULL */
	const char *drives; /* what it does here, for docs and gdscheck */
	enum ocf_tier tier;
};

/* What a key refuses of a value of its own type (config.c's refusal
 * table).  Type errors (a string for a number, a negative size, a string
 * longer than its field, an array of 0 or more than OCF_CFG_ARRAY_MAX
 * elements) are refused whatever the table says. */
enum {
	OCF_REFUSE_BELOW_MIN = 1 << 0,      /* SIZE, SIZE_ARRAY elements: below min */
	OCF_REFUSE_ABOVE_MAX = 1 << 1,      /* SIZE, SIZE_ARRAY elements: above max */
	OCF_REFUSE_NOT_A_CHOICE = 1 << 2,   /* STRING: not one of choices */
	OCF_REFUSE_UNALIGNED = 1 << 3,      /* SIZE_ARRAY: element not a multiple of 4 (KiB) */
	OCF_REFUSE_NOT_INCREASING = 1 << 4, /* SIZE_ARRAY: elements not strictly increasing */
	OCF_REFUSE_EMPTY = 1 << 5,          /* STRING: "" */
	OCF_REFUSE_BUT_ZERO = 1 << 6,       /* with BELOW_MIN: 0 itself is accepted */
};

/* One key's row of the refusal table: what each way in refuses of a value
 * of the key's own type (OCF_REFUSE_* bits). */
struct ocf_refusal {
	unsigned char all;   /* the file, the environment and every setter */
	unsigned char param; /* cuFileSetParameter* as well */
	unsigned char prop;  /* the key's cuFileDriverSet* property setter as well (SIZE keys) */
	/* The CUfileOpError that property setter returns for a value below
	 * min and above max. */
	unsigned short prop_below_err, prop_above_err;
};
const struct ocf_refusal *config_key_refusal(enum ocf_cfg_key k);

const struct ocf_cfg_key_info *config_key_info(enum ocf_cfg_key k);

/* The configuration in force.  Written whole only under the driver's state
 * lock while the driver opens: no call is in flight then, and no thread of
 * the library runs (the close before joined them all), so every thread
 * started or entered afterwards sees it whole.  While the driver is open,
 * only the property setters write it (single aligned size_t/bool stores of
 * keys), and `tuning` does not change until the next open. */
extern struct ocf_config ocf_cfg;

/* Messages produced while loading, kept so that they can be logged once the
 * log itself is configured, and printed by gdscheck. */
#define OCF_CFG_MAX_DIAG 64
struct ocf_cfg_diag {
	int level; /* OCF_LOG_ERROR or OCF_LOG_WARN */
	char msg[320];
};
struct ocf_cfg_diags {
	int n;
	int dropped;
	struct ocf_cfg_diag d[OCF_CFG_MAX_DIAG];
};

/* Every key at its default, and `tuning` at the defaults of its rows. */
void config_load_defaults(struct ocf_config *cfg);

/* Loads defaults, then the file (CUFILE_ENV_PATH_JSON, else /etc/cufile.json,
 * if it exists), then the environment (the keys' variables and the rows of
 * tier tuning).  Never fails: a bad value falls back to the default of that
 * key or row; problems are appended to diags (may be NULL). */
void config_load(struct ocf_config *cfg, struct ocf_cfg_diags *diags);

/* Parses cufile.json text into cfg over its current values (source FILE).
 * `name` names the file in messages.  Returns 0, or -EINVAL when the text
 * is not valid JSON (cfg is then untouched). */
int config_parse_text(struct ocf_config *cfg, const char *text, size_t len, const char *name,
		      struct ocf_cfg_diags *diags);

/* Applies the environment over cfg: the keys' variables (source ENV) and
 * the rows of tier tuning (cfg->tuning). */
void config_apply_env(struct ocf_config *cfg, struct ocf_cfg_diags *diags);

/* Parameter setters stage values here while the driver is closed; every
 * later open applies them over file and environment (source SETTER).
 * Callers serialise through the driver's state lock. */
int config_stage_size(enum ocf_cfg_key k, size_t v);     /* 0, -EINVAL, -ERANGE */
int config_stage_bool(enum ocf_cfg_key k, bool v);
int config_stage_string(enum ocf_cfg_key k, const char *s);
/* Stages a pair of slab arrays: the POSIX pool's (gpu = false) or the GPU
 * bounce buffers' (gpu = true). */
int config_stage_slabs(bool gpu, const size_t *sizes, const size_t *counts, size_t n);

/* Whether the refusal table refuses size v for SIZE key k from the file,
 * the environment or a parameter setter: 0, or -1 with the reason in why. */
int config_check_size(enum ocf_cfg_key k, uint64_t v, char *why, size_t wlen);
/* What the key's cuFileDriverSet* property setter returns for size v: 0
 * (accepted), or the CUfileOpError of the refusal table with the reason in
 * why. */
int config_check_prop_size(enum ocf_cfg_key k, uint64_t v, char *why, size_t wlen);
/* Whether cuFileSetParameterString refuses s for STRING key k (the table,
 * and a string too long for the field): 0, or -1 with the reason in why. */
int config_check_param_string(enum ocf_cfg_key k, const char *s, char *why, size_t wlen);
/* Validates a value of key k against the refusal table and stores it in cfg
 * (nothing changes when it is refused): 0, or -1 with the reason in why. */
int config_set_size(struct ocf_config *cfg, enum ocf_cfg_key k, uint64_t v, char *why, size_t wlen);
int config_set_size_array(struct ocf_config *cfg, enum ocf_cfg_key k, const size_t *v, size_t n, char *why,
			  size_t wlen);

/* The value of a SIZE key the library works with: the stored value clamped
 * to the key's [min, max] (keys whose max is UINT64_MAX are not clamped). */
size_t config_effective_size(const struct ocf_config *cfg, enum ocf_cfg_key k);
/* The effective value of key k in the live configuration. */
#define OCF_EFF(k) config_effective_size(&ocf_cfg, (k))

/* The per-GPU staging budget (bytes) and the largest staging chunk (bytes,
 * 0: no limit) the slab arrays of cfg set: the GPU bounce-buffer slabs when
 * they were set (file, environment or setter), else the POSIX pool slabs.
 * Effective: sums saturate, slabs of size or count 0 add nothing, and the
 * budget is at most config_staging_budget_cap(); 0 means the pools'
 * minimum (gpu.c). */
size_t config_staging_budget(const struct ocf_config *cfg, size_t *max_chunk);
/* The most staging memory one GPU may pin, whatever the slab arrays say:
 * a quarter of the machine's memory, and never less than the default
 * budget. */
size_t config_staging_budget_cap(void);

/* Appends one message per value of cfg the library does not use as stored
 * (a size outside its range, an unknown log level or choice, slab arrays
 * whose budget is capped or empty). */
void config_note_effective(const struct ocf_config *cfg, struct ocf_cfg_diags *diags);
/* The message for key k alone, into buf; returns whether there is one. */
bool config_effective_note(const struct ocf_config *cfg, enum ocf_cfg_key k, char *buf, size_t len);

/* Why a pair of slab arrays cannot describe a pool (arrays of different
 * lengths: one size needs one count), or NULL when it can. */
const char *config_slab_pair_error(const struct ocf_size_array *sizes, const struct ocf_size_array *counts);
/* The value of key k the next open would use (file + environment + staged
 * values) copied to out (size must be the field's size), and its source.
 * The file is read at the first call after each open/close. */
int config_preview_get(enum ocf_cfg_key k, void *out, size_t size, enum ocf_cfg_source *src);
/* Overlays staged values on cfg. */
void config_apply_staged(struct ocf_config *cfg);

/* Called by driver.c's open under the state lock: loads the configuration
 * into ocf_cfg, applies staged setters, configures the log and the stats
 * level, and logs what loading found. */
void config_apply_at_open(void);
/* Called at close: the next preview re-reads the file. */
void config_forget_preview(void);

/* A property setter (cuFileDriverSet*) changed a live value: record it as a
 * setter value so it also holds after a reopen. */
void config_live_set_size(enum ocf_cfg_key k, size_t v);
void config_live_set_bool(enum ocf_cfg_key k, bool v);

/* Accessors by key over any config (type must match). */
size_t config_get_size(const struct ocf_config *cfg, enum ocf_cfg_key k);
bool config_get_bool(const struct ocf_config *cfg, enum ocf_cfg_key k);
const char *config_get_string(const struct ocf_config *cfg, enum ocf_cfg_key k);

/* ------------------------------------------------ environment settings
 *
 * The settings that are environment variables only.  With the key table
 * (whose rows name the variable that overrides them, `env`) they are every
 * setting: each variable the library reads is either a key's `env` or a
 * row here, and a variable named OPENCUFILE_* that is neither is logged as
 * unknown at the first driver open (config_env_note_unknown).  Rows whose
 * reader is not NULL belong to the project's other programs (gdscheck, the
 * tests, the scripts, the Python wheel): the library never reads them and
 * knows them only so as not to call them unknown.  Every row has a tier
 * (enum ocf_tier).  gdscheck prints every row of tier user with its value
 * and source, and the others where they are set; scripts/settings-check.sh
 * checks that docs/configuration.md documents every row, that no variable
 * is read outside this table, that every row has a tier and that
 * gdscheck's report shows every setting of tier user.
 *
 * Every variable is parsed one way, by its row's type: numbers are decimal
 * digits only (a sign, a suffix, spaces or hexadecimal are not numbers),
 * switches 1/0, on/off, true/false, yes/no, words one of the row's words
 * (case-insensitive), text as given.  A value that is not of the row's type
 * is not used: the default is; a number outside the row's range is used at
 * the nearest end of it.  Either is logged as a WARN naming the value,
 * what the row accepts and what is used instead: for a row of tier tuning
 * at each driver open (config_load's messages), for another once per
 * process (config_env).
 *
 * When each variable is read: the rows of tier tuning by config_load, at
 * each driver open, into ocf_cfg.tuning, which their subsystems read; the
 * other rows when their reader asks (at driver open, when a pool or a GPU
 * is set up, at a call).  Either way a value holds from one open to its
 * close, apart from a variable of tier user or test that the program
 * changes while the driver is open, which a reader at a call sees at its
 * next call.  OPENCUFILE_LIBCUDA alone holds for the process's life: the
 * CUDA driver is loaded once.
 */
enum ocf_env {
	OCF_E_ENV_PATH_JSON,
	OCF_E_LIBCUDA,
	OCF_E_CPUS,
	/* the engine */
	OCF_E_IO_THREADS,
	OCF_E_PARALLEL,
	OCF_E_HELPER_SPIN_US,
	OCF_E_CHUNK_KB,
	OCF_E_ALONE_CHUNK_KB,
	/* the striped path */
	OCF_E_STRIPE_MIN_KB,
	OCF_E_STRIPE_MAX_KB,
	OCF_E_PIECE_KB,
	OCF_E_STRIPE_KB,
	OCF_E_STRIPE_PARTICIPANTS,
	OCF_E_STRIPE_FLUSH,
	OCF_E_STRIPE_SPIN_US,
	OCF_E_STRIPE_SPIN_BELOW_KB,
	OCF_E_STRIPE_SPINNERS,
	OCF_E_STRIPE_CALLERS,
	/* the file side */
	OCF_E_IO_BACKEND,
	OCF_E_BUFFERED_DIRECT,
	OCF_E_FLUSH_STAGED,
	OCF_E_FLUSH_BUSY,
	OCF_E_FLUSH_MAX_KB,
	OCF_E_MAPPED_READS,
	OCF_E_MAPPED_BULK,
	OCF_E_MAPPED_WRITES,
	OCF_E_MAPPED_DIRECT_QUIET_MS,
	OCF_E_DEREGISTER_WAIT_MS,
	/* read-ahead */
	OCF_E_READAHEAD,
	OCF_E_READAHEAD_FILLERS,
	OCF_E_READAHEAD_HOST_FILLERS,
	OCF_E_HOST_SHARE_ACTIVE_MS,
	OCF_E_SHM_DIR,
	/* GPUs, staging and copies */
	OCF_E_PREWARM,
	OCF_E_NUMA_NODE,
	OCF_E_STAGING_REGISTER,
	OCF_E_EVENT_WAIT,
	OCF_E_EVENT_NAP_US,
	OCF_E_GROUPED_COPIES,
	OCF_E_CALLER_GROUPS,
	OCF_E_CALLER_GROUPS_BUSY,
	OCF_E_CALLER_GROUPS_GATHER_US,
	OCF_E_CALLER_GROUPS_QUEUES,
	OCF_E_CALLER_GROUPS_NAP_US,
	OCF_E_CALLER_GROUPS_NAP_EARLY,
	/* batches and streams */
	OCF_E_ASYNC_THREADS,
	OCF_E_BATCH_SPINNERS,
	OCF_E_BATCH_SPIN_US,
	OCF_E_BATCH_WAIT_SPIN_US,
	OCF_E_BATCH_WORKERS,
	OCF_E_BATCH_CANCEL_WAIT_MS,
	/* reports */
	OCF_E_PROFILE,
	OCF_E_STATS_FILE,
	OCF_E_XDG_RUNTIME_DIR,
	/* the project's other programs (reader set) */
	OCF_E_GDSCHECK_ROOT,
	OCF_E_TEST_DIR,
	OCF_E_LIB,
	OCF_E_BASE_LIB,
	OCF_E_BASE_SRC,
	OCF_E_DISABLE,
	OCF_E_COUNT
};

enum ocf_env_type {
	OCF_ENV_NUMBER, /* decimal digits, used within [min, max] */
	OCF_ENV_SWITCH, /* 1/0, on/off, true/false, yes/no */
	OCF_ENV_WORD,   /* one of words[] */
	OCF_ENV_TEXT,   /* any text (a path) */
};

/* One row of the environment table. */
struct ocf_env_info {
	const char *var;
	enum ocf_env_type type;
	const char *unit;    /* NUMBER: "KiB", "us", "ms" or "" */
	uint64_t min, max;   /* NUMBER: the range a value is used within */
	uint64_t def;        /* NUMBER: the default; SWITCH: 1 on, 0 off; WORD: index in words */
	/* NUMBER: a default the reader computes, in words (def is then
	 * unused: config_env_given says whether the variable gives a value);
	 * TEXT: the default text, or NULL for none. */
	const char *def_text;
	const char *const *words; /* WORD */
	enum ocf_tier tier;
	const char *reader;       /* NULL: the library; else who reads it */
	const char *doc;          /* what it does, one line */
};

const struct ocf_env_info *config_env_info(enum ocf_env e);

/* What row e's variable says now (the environment is read, nothing is
 * logged, nothing is kept): *v its value (NUMBER: in the row's unit,
 * within its range; SWITCH: 0 or 1; WORD: the word's index; TEXT: 0) or
 * the row's default, *text the variable's text (NULL when unset or empty).
 * Returns OCF_SRC_ENV when the variable gives the value, OCF_SRC_DEFAULT
 * when it is unset, empty or refused; a refused or clamped value's message
 * is written to why (otherwise why is ""). */
enum ocf_cfg_source config_env_parse(enum ocf_env e, uint64_t *v, const char **text, char *why, size_t wlen);

/* The library's readers of the rows that are not of tier tuning (those are
 * read in ocf_cfg.tuning).  The value of row e (its default when the
 * variable is unset, empty or refused), read now; a refused or clamped
 * value is logged once per process. */
uint64_t config_env(enum ocf_env e);
/* For a NUMBER row whose default its reader computes: whether the variable
 * gives a value (in range, or clamped into it), and the value in *v. */
bool config_env_given(enum ocf_env e, uint64_t *v);
/* A TEXT row's text, or its default when unset or empty (NULL: none). */
const char *config_env_text(enum ocf_env e);

/* Formats what config_env_parse gave for row e (v, text, source) as
 * gdscheck shows it: "256 KiB", "on", "auto", "\"/dev/shm\"", or
 * "(computed)" for a default its reader computes. */
void config_env_format(enum ocf_env e, uint64_t v, const char *text, enum ocf_cfg_source src, char *buf,
		       size_t len);
/* Appends one WARN per library variable not of tier tuning whose value is
 * refused or clamped (the message config_env logs when the library reads
 * it; config_load reports those of tier tuning). */
void config_env_note_refused(struct ocf_cfg_diags *diags);

/* How a switch's text reads (1/0, on/off, true/false, yes/no): 1 on, 0
 * off, -1 neither (a TEXT row that takes a switch or a file name). */
int config_env_switch(const char *text);

/* Appends one WARN per variable named OPENCUFILE_* in the environment that
 * no row of either table names (a variable removed, or misspelt); nothing
 * in a set-uid or set-gid process, which reads no environment. */
void config_env_note_unknown(struct ocf_cfg_diags *diags);
/* Appends one INFO per variable of tier tuning or test that the
 * environment sets (a value no user needs to set, in effect). */
void config_env_note_not_user(struct ocf_cfg_diags *diags);

/* Formats the value of key k as JSON-like text into buf. */
void config_format_value(const struct ocf_config *cfg, enum ocf_cfg_key k, char *buf, size_t len);
const char *config_source_name(enum ocf_cfg_source s);
/* The file config_load() would read: CUFILE_ENV_PATH_JSON or /etc/cufile.json. */
const char *config_file_path(void);

#endif /* OCF_CONFIG_H_ */
