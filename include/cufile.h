/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile.h - the cuFile API (GPUDirect Storage 1.15 to 1.19 interfaces) as
 * implemented by opencufile.  Names, values and layouts follow the public
 * interface so that programs written for the cuFile API compile and link
 * unchanged.
 *
 * OPENCUFILE_API_VERSION selects the surface a program is written for
 * (1000 * major + 10 * minor; default: the newest, 1190).  Define it before
 * including this header, e.g. -DOPENCUFILE_API_VERSION=1150, to build a
 * program written for cuFile 1.15 exactly as it was: without the names of
 * later versions, with the 1.15 statistics layout, and with the file-system
 * callbacks that take non-const pointers (1.17 made them const; a C++
 * program with non-const callbacks compiles only with a value below 1170).
 * Every selection runs against the same library.
 */
#ifndef CUFILE_H_
#define CUFILE_H_

#ifndef OPENCUFILE_API_VERSION
#define OPENCUFILE_API_VERSION 1190
#endif
/* The newest interface version the library implements. */
#define OPENCUFILE_API_VERSION_MAX 1190

/* const on the file-system callbacks' pointers from 1.17 on. */
#if OPENCUFILE_API_VERSION >= 1170
#define CUFILE_FSOPS_CONST_ const
#else
#define CUFILE_FSOPS_CONST_
#endif

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

struct timespec;

/* loff_t is a glibc extension that strict ISO modes leave undeclared. */
#if defined(__GLIBC__) && !defined(__USE_MISC)
typedef __loff_t loff_t;
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifndef CUFILEAPI
#define CUFILEAPI __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------ errors */

#define CUFILEOP_BASE_ERR 5000

typedef enum CUfileOpError {
	CU_FILE_SUCCESS = 0,
	CU_FILE_DRIVER_NOT_INITIALIZED = CUFILEOP_BASE_ERR + 1,
	CU_FILE_DRIVER_INVALID_PROPS = CUFILEOP_BASE_ERR + 2,
	CU_FILE_DRIVER_UNSUPPORTED_LIMIT = CUFILEOP_BASE_ERR + 3,
	CU_FILE_DRIVER_VERSION_MISMATCH = CUFILEOP_BASE_ERR + 4,
	CU_FILE_DRIVER_VERSION_READ_ERROR = CUFILEOP_BASE_ERR + 5,
	CU_FILE_DRIVER_CLOSING = CUFILEOP_BASE_ERR + 6,
	CU_FILE_PLATFORM_NOT_SUPPORTED = CUFILEOP_BASE_ERR + 7,
	CU_FILE_IO_NOT_SUPPORTED = CUFILEOP_BASE_ERR + 8,
	CU_FILE_DEVICE_NOT_SUPPORTED = CUFILEOP_BASE_ERR + 9,
	CU_FILE_NVFS_DRIVER_ERROR = CUFILEOP_BASE_ERR + 10,
	CU_FILE_CUDA_DRIVER_ERROR = CUFILEOP_BASE_ERR + 11,
	CU_FILE_CUDA_POINTER_INVALID = CUFILEOP_BASE_ERR + 12,
	CU_FILE_CUDA_MEMORY_TYPE_INVALID = CUFILEOP_BASE_ERR + 13,
	CU_FILE_CUDA_POINTER_RANGE_ERROR = CUFILEOP_BASE_ERR + 14,
	CU_FILE_CUDA_CONTEXT_MISMATCH = CUFILEOP_BASE_ERR + 15,
	CU_FILE_INVALID_MAPPING_SIZE = CUFILEOP_BASE_ERR + 16,
	CU_FILE_INVALID_MAPPING_RANGE = CUFILEOP_BASE_ERR + 17,
	CU_FILE_INVALID_FILE_TYPE = CUFILEOP_BASE_ERR + 18,
	CU_FILE_INVALID_FILE_OPEN_FLAG = CUFILEOP_BASE_ERR + 19,
	CU_FILE_DIO_NOT_SET = CUFILEOP_BASE_ERR + 20,
	CU_FILE_INVALID_VALUE = CUFILEOP_BASE_ERR + 22,
	CU_FILE_MEMORY_ALREADY_REGISTERED = CUFILEOP_BASE_ERR + 23,
	CU_FILE_MEMORY_NOT_REGISTERED = CUFILEOP_BASE_ERR + 24,
	CU_FILE_PERMISSION_DENIED = CUFILEOP_BASE_ERR + 25,
	CU_FILE_DRIVER_ALREADY_OPEN = CUFILEOP_BASE_ERR + 26,
	CU_FILE_HANDLE_NOT_REGISTERED = CUFILEOP_BASE_ERR + 27,
	CU_FILE_HANDLE_ALREADY_REGISTERED = CUFILEOP_BASE_ERR + 28,
	CU_FILE_DEVICE_NOT_FOUND = CUFILEOP_BASE_ERR + 29,
	CU_FILE_INTERNAL_ERROR = CUFILEOP_BASE_ERR + 30,
	CU_FILE_GETNEWFD_FAILED = CUFILEOP_BASE_ERR + 31,
	CU_FILE_NVFS_SETUP_ERROR = CUFILEOP_BASE_ERR + 33,
	CU_FILE_IO_DISABLED = CUFILEOP_BASE_ERR + 34,
	CU_FILE_BATCH_SUBMIT_FAILED = CUFILEOP_BASE_ERR + 35,
	CU_FILE_GPU_MEMORY_PINNING_FAILED = CUFILEOP_BASE_ERR + 36,
	CU_FILE_BATCH_FULL = CUFILEOP_BASE_ERR + 37,
	CU_FILE_ASYNC_NOT_SUPPORTED = CUFILEOP_BASE_ERR + 38,
	CU_FILE_INTERNAL_BATCH_SETUP_ERROR = CUFILEOP_BASE_ERR + 39,
	CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR = CUFILEOP_BASE_ERR + 40,
	CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR = CUFILEOP_BASE_ERR + 41,
	CU_FILE_INTERNAL_BATCH_CANCEL_ERROR = CUFILEOP_BASE_ERR + 42,
	CU_FILE_NOMEM_ERROR = CUFILEOP_BASE_ERR + 43,
	CU_FILE_IO_ERROR = CUFILEOP_BASE_ERR + 44,
	CU_FILE_INTERNAL_BUF_REGISTER_ERROR = CUFILEOP_BASE_ERR + 45,
	CU_FILE_HASH_OPR_ERROR = CUFILEOP_BASE_ERR + 46,
	CU_FILE_INVALID_CONTEXT_ERROR = CUFILEOP_BASE_ERR + 47,
	CU_FILE_NVFS_INTERNAL_DRIVER_ERROR = CUFILEOP_BASE_ERR + 48,
	CU_FILE_BATCH_NOCOMPAT_ERROR = CUFILEOP_BASE_ERR + 49,
	CU_FILE_IO_MAX_ERROR = CUFILEOP_BASE_ERR + 50
} CUfileOpError;

/* One message per code; the wording is opencufile's own. */
static inline const char *cufileop_status_error(CUfileOpError status)
{
	switch (status) {
	case CU_FILE_SUCCESS: return "cufile success";
	case CU_FILE_DRIVER_NOT_INITIALIZED: return "cufile driver is not open";
	case CU_FILE_DRIVER_INVALID_PROPS: return "invalid driver property";
	case CU_FILE_DRIVER_UNSUPPORTED_LIMIT: return "value outside the supported limit";
	case CU_FILE_DRIVER_VERSION_MISMATCH: return "driver version mismatch";
	case CU_FILE_DRIVER_VERSION_READ_ERROR: return "driver version could not be read";
	case CU_FILE_DRIVER_CLOSING: return "driver is closing";
	case CU_FILE_PLATFORM_NOT_SUPPORTED: return "platform not supported";
	case CU_FILE_IO_NOT_SUPPORTED: return "I/O not supported on this file";
	case CU_FILE_DEVICE_NOT_SUPPORTED: return "device not supported";
	case CU_FILE_NVFS_DRIVER_ERROR: return "nvidia-fs driver error";
	case CU_FILE_CUDA_DRIVER_ERROR: return "CUDA driver error";
	case CU_FILE_CUDA_POINTER_INVALID: return "invalid CUDA pointer";
	case CU_FILE_CUDA_MEMORY_TYPE_INVALID: return "unsupported CUDA memory type";
	case CU_FILE_CUDA_POINTER_RANGE_ERROR: return "range lies outside the CUDA allocation";
	case CU_FILE_CUDA_CONTEXT_MISMATCH: return "CUDA context mismatch";
	case CU_FILE_INVALID_MAPPING_SIZE: return "invalid mapping size";
	case CU_FILE_INVALID_MAPPING_RANGE: return "invalid mapping range";
	case CU_FILE_INVALID_FILE_TYPE: return "unsupported file type";
	case CU_FILE_INVALID_FILE_OPEN_FLAG: return "unsupported file open flags";
	case CU_FILE_DIO_NOT_SET: return "O_DIRECT not set";
	case CU_FILE_INVALID_VALUE: return "invalid argument";
	case CU_FILE_MEMORY_ALREADY_REGISTERED: return "memory already registered";
	case CU_FILE_MEMORY_NOT_REGISTERED: return "memory not registered";
	case CU_FILE_PERMISSION_DENIED: return "permission denied";
	case CU_FILE_DRIVER_ALREADY_OPEN: return "driver is already open";
	case CU_FILE_HANDLE_NOT_REGISTERED: return "file handle not registered";
	case CU_FILE_HANDLE_ALREADY_REGISTERED: return "file handle already registered";
	case CU_FILE_DEVICE_NOT_FOUND: return "GPU device not found";
	case CU_FILE_INTERNAL_ERROR: return "internal error";
	case CU_FILE_GETNEWFD_FAILED: return "could not obtain a new file descriptor";
	case CU_FILE_NVFS_SETUP_ERROR: return "nvidia-fs setup error";
	case CU_FILE_IO_DISABLED: return "I/O disabled by configuration";
	case CU_FILE_BATCH_SUBMIT_FAILED: return "batch submission failed";
	case CU_FILE_GPU_MEMORY_PINNING_FAILED: return "GPU memory pinning failed";
	case CU_FILE_BATCH_FULL: return "batch is full";
	case CU_FILE_ASYNC_NOT_SUPPORTED: return "asynchronous I/O not supported";
	case CU_FILE_INTERNAL_BATCH_SETUP_ERROR: return "internal batch setup error";
	case CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR: return "internal batch submit error";
	case CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR: return "internal batch status error";
	case CU_FILE_INTERNAL_BATCH_CANCEL_ERROR: return "internal batch cancel error";
	case CU_FILE_NOMEM_ERROR: return "out of memory";
	case CU_FILE_IO_ERROR: return "I/O error";
	case CU_FILE_INTERNAL_BUF_REGISTER_ERROR: return "internal buffer registration error";
	case CU_FILE_HASH_OPR_ERROR: return "internal table error";
	case CU_FILE_INVALID_CONTEXT_ERROR: return "invalid CUDA context";
	case CU_FILE_NVFS_INTERNAL_DRIVER_ERROR: return "nvidia-fs internal error";
	case CU_FILE_BATCH_NOCOMPAT_ERROR: return "batch I/O not available in compatibility mode";
	case CU_FILE_IO_MAX_ERROR: return "maximum error code";
	}
	return "unknown cufile error";
}

#define IS_CUFILE_ERR(err) (abs((err)) > CUFILEOP_BASE_ERR)
#define CUFILE_ERRSTR(err) cufileop_status_error((CUfileOpError)abs((err)))
#define IS_CUDA_ERR(status) ((status).err == CU_FILE_CUDA_DRIVER_ERROR)
#define CU_FILE_CUDA_ERR(status) ((status).cu_err)

typedef struct CUfileError {
	CUfileOpError err;
	CUresult cu_err;
} CUfileError_t;

/* ------------------------------------------------------- driver properties */

typedef enum CUfileDriverStatusFlags {
	CU_FILE_LUSTRE_SUPPORTED = 0,
	CU_FILE_WEKAFS_SUPPORTED = 1,
	CU_FILE_NFS_SUPPORTED = 2,
	CU_FILE_GPFS_SUPPORTED = 3,
	CU_FILE_NVME_SUPPORTED = 4,
	CU_FILE_NVMEOF_SUPPORTED = 5,
	CU_FILE_SCSI_SUPPORTED = 6,
	CU_FILE_SCALEFLUX_CSD_SUPPORTED = 7,
	CU_FILE_NVMESH_SUPPORTED = 8,
	CU_FILE_BEEGFS_SUPPORTED = 9,
	CU_FILE_NVME_P2P_SUPPORTED = 11, /* deprecated since 1.16 */
	CU_FILE_SCATEFS_SUPPORTED = 12
#if OPENCUFILE_API_VERSION >= 1160
	,
	CU_FILE_VIRTIOFS_SUPPORTED = 13,
	CU_FILE_MAX_TARGET_TYPES = 14
#endif
} CUfileDriverStatusFlags_t;

typedef enum CUfileDriverControlFlags {
	CU_FILE_USE_POLL_MODE = 0,
	CU_FILE_ALLOW_COMPAT_MODE = 1
#if OPENCUFILE_API_VERSION >= 1170
	,
	CU_FILE_POSIX_IO_MODE = 2,
	CU_FILE_FALLBACK_IO_MODE = 4
#endif
#if OPENCUFILE_API_VERSION >= 1190
	,
	/* The 1.19 name of CU_FILE_POSIX_IO_MODE (value presumed unchanged). */
	CU_FILE_VANILLA_POSIX_IO_MODE = 2
#endif
} CUfileDriverControlFlags_t;

typedef enum CUfileFeatureFlags {
	CU_FILE_DYN_ROUTING_SUPPORTED = 0,
	CU_FILE_BATCH_IO_SUPPORTED = 1,
	CU_FILE_STREAMS_SUPPORTED = 2,
	CU_FILE_PARALLEL_IO_SUPPORTED = 3
#if OPENCUFILE_API_VERSION >= 1160
	,
	CU_FILE_P2P_SUPPORTED = 4 /* PCI P2PDMA available */
#endif
} CUfileFeatureFlags_t;

#if OPENCUFILE_API_VERSION >= 1160
/* Peer-to-peer transports, as bit numbers of a CUfileP2PFlags_t mask. */
typedef enum CUfileP2PFlags {
	CUFILE_P2PDMA = 0,
	CUFILE_NVFS = 1,
	CUFILE_DMABUF = 2,
	CUFILE_C2C = 3,
	CUFILE_NVIDIA_PEERMEM = 4
} CUfileP2PFlags_t;

#define CU_FILE_P2P_FLAG_PCI_P2PDMA ((CUfileP2PFlags_t)(1 << CUFILE_P2PDMA))
#define CU_FILE_P2P_FLAG_NVFS ((CUfileP2PFlags_t)(1 << CUFILE_NVFS))
#define CU_FILE_P2P_FLAG_DMABUF ((CUfileP2PFlags_t)(1 << CUFILE_DMABUF))
#define CU_FILE_P2P_FLAG_C2C ((CUfileP2PFlags_t)(1 << CUFILE_C2C))
#endif

typedef struct CUfileDrvProps {
	struct {
		unsigned int major_version;
		unsigned int minor_version;
		size_t poll_thresh_size;
		size_t max_direct_io_size;
		unsigned int dstatusflags;
		unsigned int dcontrolflags;
	} nvfs;
	unsigned int fflags;
	unsigned int max_device_cache_size;
	unsigned int per_buffer_cache_size;
	unsigned int max_device_pinned_mem_size;
	unsigned int max_batch_io_size;
	unsigned int max_batch_io_timeout_msecs;
} CUfileDrvProps_t;

/* ---------------------------------------------------------- file handles */

typedef struct sockaddr sockaddr_t;

typedef struct cufileRDMAInfo {
	int version;
	int desc_len;
	const char *desc_str;
} cufileRDMAInfo_t;

#define CU_FILE_RDMA_REGISTER 1
#define CU_FILE_RDMA_RELAXED_ORDERING (1 << 1)

/* Same layout with or without const (see OPENCUFILE_API_VERSION). */
typedef struct CUfileFSOps {
	const char *(*fs_type)(CUFILE_FSOPS_CONST_ void *handle);
	int (*getRDMADeviceList)(CUFILE_FSOPS_CONST_ void *handle, sockaddr_t **hostaddrs);
	int (*getRDMADevicePriority)(CUFILE_FSOPS_CONST_ void *handle, char *, size_t, loff_t,
				     CUFILE_FSOPS_CONST_ sockaddr_t *hostaddr);
	ssize_t (*read)(CUFILE_FSOPS_CONST_ void *handle, char *, size_t, loff_t,
			CUFILE_FSOPS_CONST_ cufileRDMAInfo_t *);
	ssize_t (*write)(CUFILE_FSOPS_CONST_ void *handle, const char *, size_t, loff_t,
			 CUFILE_FSOPS_CONST_ cufileRDMAInfo_t *);
} CUfileFSOps_t;

enum CUfileFileHandleType {
	CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1,
	CU_FILE_HANDLE_TYPE_OPAQUE_WIN32 = 2,
	CU_FILE_HANDLE_TYPE_USERSPACE_FS = 3
};

typedef struct CUfileDescr_t {
	enum CUfileFileHandleType type;
	union {
		int fd;
		void *handle;
	} handle;
	const CUfileFSOps_t *fs_ops;
} CUfileDescr_t;

typedef void *CUfileHandle_t;

/* ------------------------------------------------------------------ batch */

typedef enum CUfileOpcode {
	CUFILE_READ = 0,
	CUFILE_WRITE
} CUfileOpcode_t;

typedef enum CUFILEStatus_enum {
	CUFILE_WAITING = 0x000001,
	CUFILE_PENDING = 0x000002,
	CUFILE_INVALID = 0x000004,
	CUFILE_CANCELED = 0x000008,
	CUFILE_COMPLETE = 0x0000010,
	CUFILE_TIMEOUT = 0x0000020,
	CUFILE_FAILED = 0x0000040
} CUfileStatus_t;

typedef enum cufileBatchMode {
	CUFILE_BATCH = 1
} CUfileBatchMode_t;

typedef struct CUfileIOParams {
	CUfileBatchMode_t mode; /* must stay the first member */
	union {
		struct {
			void *devPtr_base;
			off_t file_offset;
			off_t devPtr_offset;
			size_t size;
		} batch;
	} u;
	CUfileHandle_t fh;
	CUfileOpcode_t opcode;
	void *cookie;
} CUfileIOParams_t;

typedef struct CUfileIOEvents {
	void *cookie;
	CUfileStatus_t status;
	size_t ret;
} CUfileIOEvents_t;

typedef void *CUfileBatchHandle_t;

#if OPENCUFILE_API_VERSION >= 1190
/* One piece of a cuFileReadv/cuFileWritev vector. */
typedef struct CUfileIOVec {
	void *base;
	size_t len;
} CUfileIOVec_t;
#endif

/* --------------------------------------------------------------- streams */

#define CU_FILE_STREAM_FIXED_BUF_OFFSET 1
#define CU_FILE_STREAM_FIXED_FILE_OFFSET 2
#define CU_FILE_STREAM_FIXED_FILE_SIZE 4
#define CU_FILE_STREAM_PAGE_ALIGNED_INPUTS 8

/* ------------------------------------------------------------ parameters */

typedef enum CUFileSizeTConfigParameter_t {
	CUFILE_PARAM_PROFILE_STATS,
	CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH,
	CUFILE_PARAM_EXECUTION_MAX_IO_THREADS,
	CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB,
	CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM,
	CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB,
	CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB,
	CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB,
	CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB,
	CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE,
	CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB,
	CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS
} CUFileSizeTConfigParameter_t;

typedef enum CUFileBoolConfigParameter_t {
	CUFILE_PARAM_PROPERTIES_USE_POLL_MODE,
	CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE,
	CUFILE_PARAM_FORCE_COMPAT_MODE,
	CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE,
	CUFILE_PARAM_EXECUTION_PARALLEL_IO,
	CUFILE_PARAM_PROFILE_NVTX,
	CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY,
	CUFILE_PARAM_USE_PCIP2PDMA,
	CUFILE_PARAM_PREFER_IO_URING,
	CUFILE_PARAM_FORCE_ODIRECT_MODE,
	CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION,
	CUFILE_PARAM_STREAM_MEMOPS_BYPASS
#if OPENCUFILE_API_VERSION >= 1190
	,
	CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE,
	CUFILE_PARAM_GDS_FALLBACK_IO
#endif
} CUFileBoolConfigParameter_t;

typedef enum CUFileStringConfigParameter_t {
	CUFILE_PARAM_LOGGING_LEVEL,
	CUFILE_PARAM_ENV_LOGFILE_PATH,
	CUFILE_PARAM_LOG_DIR
#if OPENCUFILE_API_VERSION >= 1190
	,
	CUFILE_PARAM_RDMA_TRANSPORT
#endif
} CUFileStringConfigParameter_t;

typedef enum CUFileArrayConfigParameter_t {
	CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB,
	CUFILE_PARAM_POSIX_POOL_SLAB_COUNT
#if OPENCUFILE_API_VERSION >= 1170
	,
	CUFILE_PARAM_GPU_BOUNCE_BUFFER_SLAB_SIZE_KB,
	CUFILE_PARAM_GPU_BOUNCE_BUFFER_SLAB_COUNT
#endif
} CUFileArrayConfigParameter_t;

/* ------------------------------------------------------------ statistics */

#define CUFILE_GPU_UUID_LEN 16
#define CUFILE_MAX_GPUS_STATS 16
#define CUFILE_HIST_BUCKETS 32

typedef struct CUfileOpCounter {
	uint64_t ok;
	uint64_t err;
} CUfileOpCounter_t;

typedef struct CUfileStatsLevel1 {
	CUfileOpCounter_t read_ops;
	CUfileOpCounter_t write_ops;
	CUfileOpCounter_t hdl_register_ops;
	CUfileOpCounter_t hdl_deregister_ops;
	CUfileOpCounter_t buf_register_ops;
	CUfileOpCounter_t buf_deregister_ops;
	uint64_t read_bytes;
	uint64_t write_bytes;
	uint64_t read_bw_bytes_per_sec;
	uint64_t write_bw_bytes_per_sec;
	uint64_t read_lat_avg_us;
	uint64_t write_lat_avg_us;
	uint64_t read_ops_per_sec;
	uint64_t write_ops_per_sec;
	uint64_t read_lat_sum_us;
	uint64_t write_lat_sum_us;
	CUfileOpCounter_t batch_submit_ops;
	CUfileOpCounter_t batch_complete_ops;
	CUfileOpCounter_t batch_setup_ops;
	CUfileOpCounter_t batch_cancel_ops;
	CUfileOpCounter_t batch_destroy_ops;
	CUfileOpCounter_t batch_enqueued_ops;
	CUfileOpCounter_t batch_posix_enqueued_ops;
	CUfileOpCounter_t batch_processed_ops;
	CUfileOpCounter_t batch_posix_processed_ops;
	CUfileOpCounter_t batch_nvfs_submit_ops;
	CUfileOpCounter_t batch_p2p_submit_ops;
	CUfileOpCounter_t batch_aio_submit_ops;
	CUfileOpCounter_t batch_iouring_submit_ops;
	CUfileOpCounter_t batch_mixed_io_submit_ops;
	CUfileOpCounter_t batch_total_submit_ops;
	uint64_t batch_read_bytes;
	uint64_t batch_write_bytes;
	uint64_t batch_read_bw_bytes;
	uint64_t batch_write_bw_bytes;
	uint64_t batch_submit_lat_avg_us;
	uint64_t batch_completion_lat_avg_us;
	uint64_t batch_submit_ops_per_sec;
	uint64_t batch_complete_ops_per_sec;
	uint64_t batch_submit_lat_sum_us;
	uint64_t batch_completion_lat_sum_us;
	uint64_t last_batch_read_bytes;
	uint64_t last_batch_write_bytes;
#if OPENCUFILE_API_VERSION >= 1190
	/* 1.19 appends the vectored I/O counters: 624 bytes instead of 512,
	 * and every member of the level-2 and level-3 structs after `basic`
	 * moves by 112 bytes.  See cuFileGetStatsL1 below. */
	CUfileOpCounter_t readv_ops;
	CUfileOpCounter_t writev_ops;
	uint64_t readv_bytes;
	uint64_t writev_bytes;
	uint64_t readv_bw_bytes_per_sec;
	uint64_t writev_bw_bytes_per_sec;
	uint64_t readv_lat_avg_us;
	uint64_t writev_lat_avg_us;
	uint64_t readv_ops_per_sec;
	uint64_t writev_ops_per_sec;
	uint64_t readv_lat_sum_us;
	uint64_t writev_lat_sum_us;
#endif
} CUfileStatsLevel1_t;

typedef struct CUfileStatsLevel2 {
	CUfileStatsLevel1_t basic;
	uint64_t read_size_kb_hist[CUFILE_HIST_BUCKETS];
	uint64_t write_size_kb_hist[CUFILE_HIST_BUCKETS];
} CUfileStatsLevel2_t;

typedef struct CUfilePerGpuStats {
	char uuid[CUFILE_GPU_UUID_LEN];
	uint64_t read_bytes;
	uint64_t read_bw_bytes_per_sec;
	uint64_t read_utilization;
	uint64_t read_duration_us;
	uint64_t n_total_reads;
	uint64_t n_p2p_reads;
	uint64_t n_nvfs_reads;
	uint64_t n_posix_reads;
	uint64_t n_unaligned_reads;
	uint64_t n_dr_reads;
	uint64_t n_sparse_regions;
	uint64_t n_inline_regions;
	uint64_t n_reads_err;
	uint64_t writes_bytes;
	uint64_t write_bw_bytes_per_sec;
	uint64_t write_utilization;
	uint64_t write_duration_us;
	uint64_t n_total_writes;
	uint64_t n_p2p_writes;
	uint64_t n_nvfs_writes;
	uint64_t n_posix_writes;
	uint64_t n_unaligned_writes;
	uint64_t n_dr_writes;
	uint64_t n_writes_err;
	uint64_t n_mmap;
	uint64_t n_mmap_ok;
	uint64_t n_mmap_err;
	uint64_t n_mmap_free;
	uint64_t reg_bytes;
} CUfilePerGpuStats_t;

typedef struct CUfileStatsLevel3 {
	CUfileStatsLevel2_t detailed;
	uint32_t num_gpus;
	CUfilePerGpuStats_t per_gpu_stats[CUFILE_MAX_GPUS_STATS];
} CUfileStatsLevel3_t;

/* -------------------------------------------------------------- functions */

#define cuFileDriverClose cuFileDriverClose_v2

/* The statistics getters have no size argument, so the library cannot tell
 * a 1.15 struct from a 1.19 one.  cuFileGetStatsL1/L2/L3 fill the 1.15
 * layout (512/1024/5000 bytes), which fits either; a program built with
 * this header's 1.19 layout calls the _v1190 entry points, which fill the
 * 1.19 layout (624/1136/5112 bytes).  docs/compatibility.md explains. */
#if OPENCUFILE_API_VERSION >= 1190
#define cuFileGetStatsL1 cuFileGetStatsL1_v1190
#define cuFileGetStatsL2 cuFileGetStatsL2_v1190
#define cuFileGetStatsL3 cuFileGetStatsL3_v1190
#endif

CUFILEAPI CUfileError_t cuFileDriverOpen(void);
CUFILEAPI CUfileError_t cuFileDriverClose_v2(void);
CUFILEAPI long cuFileUseCount(void);
CUFILEAPI CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *props);
CUFILEAPI CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size);
CUFILEAPI CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t max_direct_io_size);
CUFILEAPI CUfileError_t cuFileDriverSetMaxCacheSize(size_t max_cache_size);
CUFILEAPI CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t max_pinned_size);
CUFILEAPI CUfileError_t cuFileGetVersion(int *version);

CUFILEAPI CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr);
CUFILEAPI void cuFileHandleDeregister(CUfileHandle_t fh);
CUFILEAPI CUfileError_t cuFileBufRegister(const void *bufPtr_base, size_t length, int flags);
CUFILEAPI CUfileError_t cuFileBufDeregister(const void *bufPtr_base);

CUFILEAPI ssize_t cuFileRead(CUfileHandle_t fh, void *bufPtr_base, size_t size,
			     off_t file_offset, off_t bufPtr_offset);
CUFILEAPI ssize_t cuFileWrite(CUfileHandle_t fh, const void *bufPtr_base, size_t size,
			      off_t file_offset, off_t bufPtr_offset);

CUFILEAPI CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *batch_idp, unsigned nr);
CUFILEAPI CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr,
					    CUfileIOParams_t *iocbp, unsigned int flags);
CUFILEAPI CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr,
					       unsigned *nr, CUfileIOEvents_t *iocbp,
					       struct timespec *timeout);
CUFILEAPI CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp);
CUFILEAPI void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp);

CUFILEAPI CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p,
					off_t *file_offset_p, off_t *bufPtr_offset_p,
					ssize_t *bytes_read_p, CUstream stream);
CUFILEAPI CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p,
					 off_t *file_offset_p, off_t *bufPtr_offset_p,
					 ssize_t *bytes_written_p, CUstream stream);
CUFILEAPI CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags);
CUFILEAPI CUfileError_t cuFileStreamDeregister(CUstream stream);

CUFILEAPI CUfileError_t cuFileGetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t *value);
CUFILEAPI CUfileError_t cuFileGetParameterBool(CUFileBoolConfigParameter_t param, bool *value);
CUFILEAPI CUfileError_t cuFileGetParameterString(CUFileStringConfigParameter_t param,
						 char *desc_str, int len);
CUFILEAPI CUfileError_t cuFileGetParameterMinMaxValue(CUFileSizeTConfigParameter_t param,
						      size_t *min_value, size_t *max_value);
CUFILEAPI CUfileError_t cuFileSetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t value);
CUFILEAPI CUfileError_t cuFileSetParameterBool(CUFileBoolConfigParameter_t param, bool value);
CUFILEAPI CUfileError_t cuFileSetParameterString(CUFileStringConfigParameter_t param,
						 const char *desc_str);
CUFILEAPI CUfileError_t cuFileSetParameterPosixPoolSlabArray(const size_t *size_values,
							     const size_t *count_values, int len);
CUFILEAPI CUfileError_t cuFileGetParameterPosixPoolSlabArray(size_t *size_values,
							     size_t *count_values, int len);

CUFILEAPI CUfileError_t cuFileSetStatsLevel(int level);
CUFILEAPI CUfileError_t cuFileGetStatsLevel(int *level);
CUFILEAPI CUfileError_t cuFileStatsStart(void);
CUFILEAPI CUfileError_t cuFileStatsStop(void);
CUFILEAPI CUfileError_t cuFileStatsReset(void);
CUFILEAPI CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats);
CUFILEAPI CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats);
CUFILEAPI CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats);
CUFILEAPI CUfileError_t cuFileGetBARSizeInKB(int gpuIndex, size_t *barSize);

#if OPENCUFILE_API_VERSION >= 1160
CUFILEAPI CUfileError_t cuFileDriverSetP2PFlags(CUfileDriverStatusFlags_t status_flag, CUfileP2PFlags_t p2p_flags);
CUFILEAPI CUfileError_t cuFileDriverGetP2PFlags(CUfileDriverStatusFlags_t status_flag, CUfileP2PFlags_t *p2p_flags);
#endif
#if OPENCUFILE_API_VERSION >= 1170
CUFILEAPI CUfileError_t cuFileSetParameterGpuBounceBufferSlabArray(const size_t *size_values,
								   const size_t *count_values, int len);
CUFILEAPI CUfileError_t cuFileGetParameterGpuBounceBufferSlabArray(size_t *size_values, size_t *count_values,
								   int len);
CUFILEAPI CUfileError_t cuFileExportPCIeTopology(const char *filename);
#endif
#if OPENCUFILE_API_VERSION >= 1190
CUFILEAPI ssize_t cuFileReadv(CUfileHandle_t fh, const CUfileIOVec_t *iov, size_t iovcnt, off_t file_offset,
			      unsigned flags);
CUFILEAPI ssize_t cuFileWritev(CUfileHandle_t fh, const CUfileIOVec_t *iov, size_t iovcnt, off_t file_offset,
			       unsigned flags);
#endif

#ifdef __cplusplus
}
#endif

#endif /* CUFILE_H_ */
