/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi_probe.c - prints one line per interface fact of <cufile.h>.
 *
 * Built twice by scripts/gpu-check.sh: once against NVIDIA's header and once
 * against include/cufile.h (both with -I/usr/local/cuda/include).  The two
 * outputs, sorted, must be identical.
 *
 * Layout of this file matters to the script: every fact sits on its own line
 * between the FACTS-BEGIN and FACTS-END markers (and the signature typedefs
 * between TYPEDEFS-BEGIN and TYPEDEFS-END).  When a header lacks something,
 * the compiler reports an error on that line; the script then comments the
 * line out, reports it as UNAVAILABLE and rebuilds.
 *
 * Kept valid C and C++ (no _Alignof, no designated initialisers).
 */
/* The probe compares with NVIDIA's cuFile 1.15 header (CUDA 13.0): ours
 * is asked for that surface.  NVIDIA's header ignores the macro. */
#ifndef OPENCUFILE_API_VERSION
#define OPENCUFILE_API_VERSION 1150
#endif
#include <cufile.h>

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define STR_(x) #x
#define XSTR(x) STR_(x)

#define SZ(T) printf("sizeof(%s) = %zu ; alignof = %zu\n", #T, sizeof(T), (size_t)__alignof__(T))
#define OFF(T, f)                                                                                  \
	printf("offsetof(%s, %s) = %zu ; size %zu\n", #T, #f, (size_t)offsetof(T, f),               \
	       sizeof(((T *)0)->f))
#define VAL(x) printf("value %s = %lld\n", #x, (long long)(x))
#define ENUMT(T)                                                                                   \
	printf("enumtype %s: sizeof %zu ; signed %d\n", #T, sizeof(T), (int)((long long)(T)-1 < 0))
/* Type-checked assignment in an unevaluated operand: no symbol reference, no link. */
#define SIG(fn, T)                                                                                 \
	do {                                                                                       \
		T p_ = NULL;                                                                       \
		printf("signature %s matches %s : %d\n", #fn, #T, (int)(sizeof(p_ = (fn)) > 0));  \
	} while (0)

/* TYPEDEFS-BEGIN: the function types the spec gives, one per line. */
typedef CUfileError_t (*t_err_void)(void);
typedef long (*t_usecount)(void);
typedef CUfileError_t (*t_getprops)(CUfileDrvProps_t *);
typedef CUfileError_t (*t_pollmode)(bool, size_t);
typedef CUfileError_t (*t_err_size)(size_t);
typedef CUfileError_t (*t_err_intp)(int *);
typedef CUfileError_t (*t_err_int)(int);
typedef CUfileError_t (*t_hreg)(CUfileHandle_t *, CUfileDescr_t *);
typedef void (*t_hdereg)(CUfileHandle_t);
typedef CUfileError_t (*t_breg)(const void *, size_t, int);
typedef CUfileError_t (*t_bdereg)(const void *);
typedef ssize_t (*t_read)(CUfileHandle_t, void *, size_t, off_t, off_t);
typedef ssize_t (*t_write)(CUfileHandle_t, const void *, size_t, off_t, off_t);
typedef CUfileError_t (*t_bsetup)(CUfileBatchHandle_t *, unsigned);
typedef CUfileError_t (*t_bsubmit)(CUfileBatchHandle_t, unsigned, CUfileIOParams_t *, unsigned int);
typedef CUfileError_t (*t_bstatus)(CUfileBatchHandle_t, unsigned, unsigned *, CUfileIOEvents_t *, struct timespec *);
typedef CUfileError_t (*t_bcancel)(CUfileBatchHandle_t);
typedef void (*t_bdestroy)(CUfileBatchHandle_t);
typedef CUfileError_t (*t_readasync)(CUfileHandle_t, void *, size_t *, off_t *, off_t *, ssize_t *, CUstream);
typedef CUfileError_t (*t_streamreg)(CUstream, unsigned);
typedef CUfileError_t (*t_streamdereg)(CUstream);
typedef CUfileError_t (*t_getsizet)(CUFileSizeTConfigParameter_t, size_t *);
typedef CUfileError_t (*t_getbool)(CUFileBoolConfigParameter_t, bool *);
typedef CUfileError_t (*t_getstring)(CUFileStringConfigParameter_t, char *, int);
typedef CUfileError_t (*t_getminmax)(CUFileSizeTConfigParameter_t, size_t *, size_t *);
typedef CUfileError_t (*t_setsizet)(CUFileSizeTConfigParameter_t, size_t);
typedef CUfileError_t (*t_setbool)(CUFileBoolConfigParameter_t, bool);
typedef CUfileError_t (*t_setstring)(CUFileStringConfigParameter_t, const char *);
typedef CUfileError_t (*t_setslab)(const size_t *, const size_t *, int);
typedef CUfileError_t (*t_getslab)(size_t *, size_t *, int);
typedef CUfileError_t (*t_statsl1)(CUfileStatsLevel1_t *);
typedef CUfileError_t (*t_statsl2)(CUfileStatsLevel2_t *);
typedef CUfileError_t (*t_statsl3)(CUfileStatsLevel3_t *);
typedef CUfileError_t (*t_barsize)(int, size_t *);
/* TYPEDEFS-END */

static void probe_macros(void)
{
	/* Which names are preprocessor macros (not facts that can fail to compile). */
#ifdef CUFILEOP_BASE_ERR
	puts("macro CUFILEOP_BASE_ERR defined");
#endif
#ifdef CU_FILE_RDMA_REGISTER
	puts("macro CU_FILE_RDMA_REGISTER defined");
#endif
#ifdef CU_FILE_RDMA_RELAXED_ORDERING
	puts("macro CU_FILE_RDMA_RELAXED_ORDERING defined");
#endif
#ifdef CU_FILE_STREAM_FIXED_BUF_OFFSET
	puts("macro CU_FILE_STREAM_FIXED_BUF_OFFSET defined");
#endif
#ifdef CU_FILE_STREAM_FIXED_FILE_OFFSET
	puts("macro CU_FILE_STREAM_FIXED_FILE_OFFSET defined");
#endif
#ifdef CU_FILE_STREAM_FIXED_FILE_SIZE
	puts("macro CU_FILE_STREAM_FIXED_FILE_SIZE defined");
#endif
#ifdef CU_FILE_STREAM_PAGE_ALIGNED_INPUTS
	puts("macro CU_FILE_STREAM_PAGE_ALIGNED_INPUTS defined");
#endif
#ifdef CUFILE_GPU_UUID_LEN
	puts("macro CUFILE_GPU_UUID_LEN defined");
#endif
#ifdef IS_CUFILE_ERR
	puts("macro IS_CUFILE_ERR defined");
#endif
#ifdef CUFILE_ERRSTR
	puts("macro CUFILE_ERRSTR defined");
#endif
#ifdef IS_CUDA_ERR
	puts("macro IS_CUDA_ERR defined");
#endif
#ifdef CU_FILE_CUDA_ERR
	puts("macro CU_FILE_CUDA_ERR defined");
#endif
#ifdef cuFileDriverClose
	printf("macro cuFileDriverClose -> %s\n", XSTR(cuFileDriverClose));
#endif
}

static void probe_facts(void)
{
	/* FACTS-BEGIN */
	SZ(CUfileError_t);
	SZ(struct CUfileError);
	OFF(CUfileError_t, err);
	OFF(CUfileError_t, cu_err);
	SZ(CUfileOpError);
	ENUMT(CUfileOpError);
	SZ(enum CUfileOpError);
	SZ(CUresult);

	SZ(CUfileDrvProps_t);
	SZ(struct CUfileDrvProps);
	OFF(CUfileDrvProps_t, nvfs);
	OFF(CUfileDrvProps_t, nvfs.major_version);
	OFF(CUfileDrvProps_t, nvfs.minor_version);
	OFF(CUfileDrvProps_t, nvfs.poll_thresh_size);
	OFF(CUfileDrvProps_t, nvfs.max_direct_io_size);
	OFF(CUfileDrvProps_t, nvfs.dstatusflags);
	OFF(CUfileDrvProps_t, nvfs.dcontrolflags);
	OFF(CUfileDrvProps_t, fflags);
	OFF(CUfileDrvProps_t, max_device_cache_size);
	OFF(CUfileDrvProps_t, per_buffer_cache_size);
	OFF(CUfileDrvProps_t, max_device_pinned_mem_size);
	OFF(CUfileDrvProps_t, max_batch_io_size);
	OFF(CUfileDrvProps_t, max_batch_io_timeout_msecs);

	SZ(sockaddr_t);
	SZ(cufileRDMAInfo_t);
	SZ(struct cufileRDMAInfo);
	OFF(cufileRDMAInfo_t, version);
	OFF(cufileRDMAInfo_t, desc_len);
	OFF(cufileRDMAInfo_t, desc_str);

	SZ(CUfileFSOps_t);
	SZ(struct CUfileFSOps);
	OFF(CUfileFSOps_t, fs_type);
	OFF(CUfileFSOps_t, getRDMADeviceList);
	OFF(CUfileFSOps_t, getRDMADevicePriority);
	OFF(CUfileFSOps_t, read);
	OFF(CUfileFSOps_t, write);

	SZ(CUfileDescr_t);
	SZ(struct CUfileDescr_t);
	OFF(CUfileDescr_t, type);
	OFF(CUfileDescr_t, handle);
	OFF(CUfileDescr_t, handle.fd);
	OFF(CUfileDescr_t, handle.handle);
	OFF(CUfileDescr_t, fs_ops);
	SZ(enum CUfileFileHandleType);
	ENUMT(enum CUfileFileHandleType);

	SZ(CUfileHandle_t);
	SZ(CUfileBatchHandle_t);

	SZ(CUfileIOParams_t);
	SZ(struct CUfileIOParams);
	OFF(CUfileIOParams_t, mode);
	OFF(CUfileIOParams_t, u);
	OFF(CUfileIOParams_t, u.batch);
	OFF(CUfileIOParams_t, u.batch.devPtr_base);
	OFF(CUfileIOParams_t, u.batch.file_offset);
	OFF(CUfileIOParams_t, u.batch.devPtr_offset);
	OFF(CUfileIOParams_t, u.batch.size);
	OFF(CUfileIOParams_t, fh);
	OFF(CUfileIOParams_t, opcode);
	OFF(CUfileIOParams_t, cookie);

	SZ(CUfileIOEvents_t);
	SZ(struct CUfileIOEvents);
	OFF(CUfileIOEvents_t, cookie);
	OFF(CUfileIOEvents_t, status);
	OFF(CUfileIOEvents_t, ret);

	SZ(CUfileOpcode_t);
	ENUMT(CUfileOpcode_t);
	SZ(CUfileStatus_t);
	ENUMT(CUfileStatus_t);
	SZ(CUfileBatchMode_t);
	ENUMT(CUfileBatchMode_t);
	SZ(CUfileDriverStatusFlags_t);
	ENUMT(CUfileDriverStatusFlags_t);
	SZ(CUfileDriverControlFlags_t);
	ENUMT(CUfileDriverControlFlags_t);
	SZ(CUfileFeatureFlags_t);
	ENUMT(CUfileFeatureFlags_t);
	SZ(CUFileSizeTConfigParameter_t);
	ENUMT(CUFileSizeTConfigParameter_t);
	SZ(CUFileBoolConfigParameter_t);
	ENUMT(CUFileBoolConfigParameter_t);
	SZ(CUFileStringConfigParameter_t);
	ENUMT(CUFileStringConfigParameter_t);
	SZ(CUFileArrayConfigParameter_t);
	ENUMT(CUFileArrayConfigParameter_t);

	SZ(CUfileOpCounter_t);
	OFF(CUfileOpCounter_t, ok);
	OFF(CUfileOpCounter_t, err);

	SZ(CUfileStatsLevel1_t);
	OFF(CUfileStatsLevel1_t, read_ops);
	OFF(CUfileStatsLevel1_t, write_ops);
	OFF(CUfileStatsLevel1_t, hdl_register_ops);
	OFF(CUfileStatsLevel1_t, hdl_deregister_ops);
	OFF(CUfileStatsLevel1_t, buf_register_ops);
	OFF(CUfileStatsLevel1_t, buf_deregister_ops);
	OFF(CUfileStatsLevel1_t, read_bytes);
	OFF(CUfileStatsLevel1_t, write_bytes);
	OFF(CUfileStatsLevel1_t, read_bw_bytes_per_sec);
	OFF(CUfileStatsLevel1_t, write_bw_bytes_per_sec);
	OFF(CUfileStatsLevel1_t, read_lat_avg_us);
	OFF(CUfileStatsLevel1_t, write_lat_avg_us);
	OFF(CUfileStatsLevel1_t, read_ops_per_sec);
	OFF(CUfileStatsLevel1_t, write_ops_per_sec);
	OFF(CUfileStatsLevel1_t, read_lat_sum_us);
	OFF(CUfileStatsLevel1_t, write_lat_sum_us);
	OFF(CUfileStatsLevel1_t, batch_submit_ops);
	OFF(CUfileStatsLevel1_t, batch_complete_ops);
	OFF(CUfileStatsLevel1_t, batch_setup_ops);
	OFF(CUfileStatsLevel1_t, batch_cancel_ops);
	OFF(CUfileStatsLevel1_t, batch_destroy_ops);
	OFF(CUfileStatsLevel1_t, batch_enqueued_ops);
	OFF(CUfileStatsLevel1_t, batch_posix_enqueued_ops);
	OFF(CUfileStatsLevel1_t, batch_processed_ops);
	OFF(CUfileStatsLevel1_t, batch_posix_processed_ops);
	OFF(CUfileStatsLevel1_t, batch_nvfs_submit_ops);
	OFF(CUfileStatsLevel1_t, batch_p2p_submit_ops);
	OFF(CUfileStatsLevel1_t, batch_aio_submit_ops);
	OFF(CUfileStatsLevel1_t, batch_iouring_submit_ops);
	OFF(CUfileStatsLevel1_t, batch_mixed_io_submit_ops);
	OFF(CUfileStatsLevel1_t, batch_total_submit_ops);
	OFF(CUfileStatsLevel1_t, batch_read_bytes);
	OFF(CUfileStatsLevel1_t, batch_write_bytes);
	OFF(CUfileStatsLevel1_t, batch_read_bw_bytes);
	OFF(CUfileStatsLevel1_t, batch_write_bw_bytes);
	OFF(CUfileStatsLevel1_t, batch_submit_lat_avg_us);
	OFF(CUfileStatsLevel1_t, batch_completion_lat_avg_us);
	OFF(CUfileStatsLevel1_t, batch_submit_ops_per_sec);
	OFF(CUfileStatsLevel1_t, batch_complete_ops_per_sec);
	OFF(CUfileStatsLevel1_t, batch_submit_lat_sum_us);
	OFF(CUfileStatsLevel1_t, batch_completion_lat_sum_us);
	OFF(CUfileStatsLevel1_t, last_batch_read_bytes);
	OFF(CUfileStatsLevel1_t, last_batch_write_bytes);

	SZ(CUfileStatsLevel2_t);
	OFF(CUfileStatsLevel2_t, basic);
	OFF(CUfileStatsLevel2_t, read_size_kb_hist);
	OFF(CUfileStatsLevel2_t, write_size_kb_hist);

	SZ(CUfilePerGpuStats_t);
	OFF(CUfilePerGpuStats_t, uuid);
	OFF(CUfilePerGpuStats_t, read_bytes);
	OFF(CUfilePerGpuStats_t, read_bw_bytes_per_sec);
	OFF(CUfilePerGpuStats_t, read_utilization);
	OFF(CUfilePerGpuStats_t, read_duration_us);
	OFF(CUfilePerGpuStats_t, n_total_reads);
	OFF(CUfilePerGpuStats_t, n_p2p_reads);
	OFF(CUfilePerGpuStats_t, n_nvfs_reads);
	OFF(CUfilePerGpuStats_t, n_posix_reads);
	OFF(CUfilePerGpuStats_t, n_unaligned_reads);
	OFF(CUfilePerGpuStats_t, n_dr_reads);
	OFF(CUfilePerGpuStats_t, n_sparse_regions);
	OFF(CUfilePerGpuStats_t, n_inline_regions);
	OFF(CUfilePerGpuStats_t, n_reads_err);
	OFF(CUfilePerGpuStats_t, writes_bytes);
	OFF(CUfilePerGpuStats_t, write_bw_bytes_per_sec);
	OFF(CUfilePerGpuStats_t, write_utilization);
	OFF(CUfilePerGpuStats_t, write_duration_us);
	OFF(CUfilePerGpuStats_t, n_total_writes);
	OFF(CUfilePerGpuStats_t, n_p2p_writes);
	OFF(CUfilePerGpuStats_t, n_nvfs_writes);
	OFF(CUfilePerGpuStats_t, n_posix_writes);
	OFF(CUfilePerGpuStats_t, n_unaligned_writes);
	OFF(CUfilePerGpuStats_t, n_dr_writes);
	OFF(CUfilePerGpuStats_t, n_writes_err);
	OFF(CUfilePerGpuStats_t, n_mmap);
	OFF(CUfilePerGpuStats_t, n_mmap_ok);
	OFF(CUfilePerGpuStats_t, n_mmap_err);
	OFF(CUfilePerGpuStats_t, n_mmap_free);
	OFF(CUfilePerGpuStats_t, reg_bytes);

	SZ(CUfileStatsLevel3_t);
	OFF(CUfileStatsLevel3_t, detailed);
	OFF(CUfileStatsLevel3_t, num_gpus);
	OFF(CUfileStatsLevel3_t, per_gpu_stats);
	OFF(CUfileStatsLevel3_t, per_gpu_stats[1]);
	OFF(CUfileStatsLevel3_t, per_gpu_stats[15].reg_bytes);

	VAL(CUFILEOP_BASE_ERR);
	VAL(CU_FILE_SUCCESS);
	VAL(CU_FILE_DRIVER_NOT_INITIALIZED);
	VAL(CU_FILE_DRIVER_INVALID_PROPS);
	VAL(CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
	VAL(CU_FILE_DRIVER_VERSION_MISMATCH);
	VAL(CU_FILE_DRIVER_VERSION_READ_ERROR);
	VAL(CU_FILE_DRIVER_CLOSING);
	VAL(CU_FILE_PLATFORM_NOT_SUPPORTED);
	VAL(CU_FILE_IO_NOT_SUPPORTED);
	VAL(CU_FILE_DEVICE_NOT_SUPPORTED);
	VAL(CU_FILE_NVFS_DRIVER_ERROR);
	VAL(CU_FILE_CUDA_DRIVER_ERROR);
	VAL(CU_FILE_CUDA_POINTER_INVALID);
	VAL(CU_FILE_CUDA_MEMORY_TYPE_INVALID);
	VAL(CU_FILE_CUDA_POINTER_RANGE_ERROR);
	VAL(CU_FILE_CUDA_CONTEXT_MISMATCH);
	VAL(CU_FILE_INVALID_MAPPING_SIZE);
	VAL(CU_FILE_INVALID_MAPPING_RANGE);
	VAL(CU_FILE_INVALID_FILE_TYPE);
	VAL(CU_FILE_INVALID_FILE_OPEN_FLAG);
	VAL(CU_FILE_DIO_NOT_SET);
	VAL(CU_FILE_INVALID_VALUE);
	VAL(CU_FILE_MEMORY_ALREADY_REGISTERED);
	VAL(CU_FILE_MEMORY_NOT_REGISTERED);
	VAL(CU_FILE_PERMISSION_DENIED);
	VAL(CU_FILE_DRIVER_ALREADY_OPEN);
	VAL(CU_FILE_HANDLE_NOT_REGISTERED);
	VAL(CU_FILE_HANDLE_ALREADY_REGISTERED);
	VAL(CU_FILE_DEVICE_NOT_FOUND);
	VAL(CU_FILE_INTERNAL_ERROR);
	VAL(CU_FILE_GETNEWFD_FAILED);
	VAL(CU_FILE_NVFS_SETUP_ERROR);
	VAL(CU_FILE_IO_DISABLED);
	VAL(CU_FILE_BATCH_SUBMIT_FAILED);
	VAL(CU_FILE_GPU_MEMORY_PINNING_FAILED);
	VAL(CU_FILE_BATCH_FULL);
	VAL(CU_FILE_ASYNC_NOT_SUPPORTED);
	VAL(CU_FILE_INTERNAL_BATCH_SETUP_ERROR);
	VAL(CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR);
	VAL(CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR);
	VAL(CU_FILE_INTERNAL_BATCH_CANCEL_ERROR);
	VAL(CU_FILE_NOMEM_ERROR);
	VAL(CU_FILE_IO_ERROR);
	VAL(CU_FILE_INTERNAL_BUF_REGISTER_ERROR);
	VAL(CU_FILE_HASH_OPR_ERROR);
	VAL(CU_FILE_INVALID_CONTEXT_ERROR);
	VAL(CU_FILE_NVFS_INTERNAL_DRIVER_ERROR);
	VAL(CU_FILE_BATCH_NOCOMPAT_ERROR);
	VAL(CU_FILE_IO_MAX_ERROR);

	VAL(CU_FILE_LUSTRE_SUPPORTED);
	VAL(CU_FILE_WEKAFS_SUPPORTED);
	VAL(CU_FILE_NFS_SUPPORTED);
	VAL(CU_FILE_GPFS_SUPPORTED);
	VAL(CU_FILE_NVME_SUPPORTED);
	VAL(CU_FILE_NVMEOF_SUPPORTED);
	VAL(CU_FILE_SCSI_SUPPORTED);
	VAL(CU_FILE_SCALEFLUX_CSD_SUPPORTED);
	VAL(CU_FILE_NVMESH_SUPPORTED);
	VAL(CU_FILE_BEEGFS_SUPPORTED);
	VAL(CU_FILE_NVME_P2P_SUPPORTED);
	VAL(CU_FILE_SCATEFS_SUPPORTED);

	VAL(CU_FILE_USE_POLL_MODE);
	VAL(CU_FILE_ALLOW_COMPAT_MODE);

	VAL(CU_FILE_DYN_ROUTING_SUPPORTED);
	VAL(CU_FILE_BATCH_IO_SUPPORTED);
	VAL(CU_FILE_STREAMS_SUPPORTED);
	VAL(CU_FILE_PARALLEL_IO_SUPPORTED);

	VAL(CU_FILE_HANDLE_TYPE_OPAQUE_FD);
	VAL(CU_FILE_HANDLE_TYPE_OPAQUE_WIN32);
	VAL(CU_FILE_HANDLE_TYPE_USERSPACE_FS);

	VAL(CUFILE_READ);
	VAL(CUFILE_WRITE);
	VAL(CUFILE_WAITING);
	VAL(CUFILE_PENDING);
	VAL(CUFILE_INVALID);
	VAL(CUFILE_CANCELED);
	VAL(CUFILE_COMPLETE);
	VAL(CUFILE_TIMEOUT);
	VAL(CUFILE_FAILED);
	VAL(CUFILE_BATCH);

	VAL(CU_FILE_RDMA_REGISTER);
	VAL(CU_FILE_RDMA_RELAXED_ORDERING);
	VAL(CU_FILE_STREAM_FIXED_BUF_OFFSET);
	VAL(CU_FILE_STREAM_FIXED_FILE_OFFSET);
	VAL(CU_FILE_STREAM_FIXED_FILE_SIZE);
	VAL(CU_FILE_STREAM_PAGE_ALIGNED_INPUTS);

	VAL(CUFILE_PARAM_PROFILE_STATS);
	VAL(CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH);
	VAL(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS);
	VAL(CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB);
	VAL(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM);
	VAL(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB);
	VAL(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB);
	VAL(CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB);
	VAL(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB);
	VAL(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE);
	VAL(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB);
	VAL(CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS);

	VAL(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE);
	VAL(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE);
	VAL(CUFILE_PARAM_FORCE_COMPAT_MODE);
	VAL(CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE);
	VAL(CUFILE_PARAM_EXECUTION_PARALLEL_IO);
	VAL(CUFILE_PARAM_PROFILE_NVTX);
	VAL(CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY);
	VAL(CUFILE_PARAM_USE_PCIP2PDMA);
	VAL(CUFILE_PARAM_PREFER_IO_URING);
	VAL(CUFILE_PARAM_FORCE_ODIRECT_MODE);
	VAL(CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION);
	VAL(CUFILE_PARAM_STREAM_MEMOPS_BYPASS);

	VAL(CUFILE_PARAM_LOGGING_LEVEL);
	VAL(CUFILE_PARAM_ENV_LOGFILE_PATH);
	VAL(CUFILE_PARAM_LOG_DIR);

	VAL(CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB);
	VAL(CUFILE_PARAM_POSIX_POOL_SLAB_COUNT);

	VAL(CUFILE_GPU_UUID_LEN);

	SIG(cuFileDriverOpen, t_err_void);
	SIG(cuFileDriverClose, t_err_void);
	SIG(cuFileDriverClose_v2, t_err_void);
	SIG(cuFileUseCount, t_usecount);
	SIG(cuFileDriverGetProperties, t_getprops);
	SIG(cuFileDriverSetPollMode, t_pollmode);
	SIG(cuFileDriverSetMaxDirectIOSize, t_err_size);
	SIG(cuFileDriverSetMaxCacheSize, t_err_size);
	SIG(cuFileDriverSetMaxPinnedMemSize, t_err_size);
	SIG(cuFileGetVersion, t_err_intp);
	SIG(cuFileHandleRegister, t_hreg);
	SIG(cuFileHandleDeregister, t_hdereg);
	SIG(cuFileBufRegister, t_breg);
	SIG(cuFileBufDeregister, t_bdereg);
	SIG(cuFileRead, t_read);
	SIG(cuFileWrite, t_write);
	SIG(cuFileBatchIOSetUp, t_bsetup);
	SIG(cuFileBatchIOSubmit, t_bsubmit);
	SIG(cuFileBatchIOGetStatus, t_bstatus);
	SIG(cuFileBatchIOCancel, t_bcancel);
	SIG(cuFileBatchIODestroy, t_bdestroy);
	SIG(cuFileReadAsync, t_readasync);
	SIG(cuFileWriteAsync, t_readasync);
	SIG(cuFileStreamRegister, t_streamreg);
	SIG(cuFileStreamDeregister, t_streamdereg);
	SIG(cuFileGetParameterSizeT, t_getsizet);
	SIG(cuFileGetParameterBool, t_getbool);
	SIG(cuFileGetParameterString, t_getstring);
	SIG(cuFileGetParameterMinMaxValue, t_getminmax);
	SIG(cuFileSetParameterSizeT, t_setsizet);
	SIG(cuFileSetParameterBool, t_setbool);
	SIG(cuFileSetParameterString, t_setstring);
	SIG(cuFileSetParameterPosixPoolSlabArray, t_setslab);
	SIG(cuFileGetParameterPosixPoolSlabArray, t_getslab);
	SIG(cuFileSetStatsLevel, t_err_int);
	SIG(cuFileGetStatsLevel, t_err_intp);
	SIG(cuFileStatsStart, t_err_void);
	SIG(cuFileStatsStop, t_err_void);
	SIG(cuFileStatsReset, t_err_void);
	SIG(cuFileGetStatsL1, t_statsl1);
	SIG(cuFileGetStatsL2, t_statsl2);
	SIG(cuFileGetStatsL3, t_statsl3);
	SIG(cuFileGetBARSizeInKB, t_barsize);
	/* FACTS-END */
}

static void probe_macro_results(void)
{
	static const int samples[] = {0, 1, -1, 22, -22, 4999, 5000, -5000, 5001, -5001,
				      5022, -5022, 5050, -5050, 6000, INT_MAX, -INT_MAX};
	size_t i;
	CUfileError_t s;

	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		printf("IS_CUFILE_ERR(%d) = %d\n", samples[i], (int)(IS_CUFILE_ERR(samples[i]) != 0));

	memset(&s, 0, sizeof(s));
	s.err = CU_FILE_CUDA_DRIVER_ERROR;
	s.cu_err = CUDA_ERROR_INVALID_VALUE;
	printf("IS_CUDA_ERR({CUDA_DRIVER_ERROR,INVALID_VALUE}) = %d\n", (int)(IS_CUDA_ERR(s) != 0));
	printf("CU_FILE_CUDA_ERR({CUDA_DRIVER_ERROR,INVALID_VALUE}) = %d\n", (int)CU_FILE_CUDA_ERR(s));
	s.err = CU_FILE_SUCCESS;
	s.cu_err = CUDA_SUCCESS;
	printf("IS_CUDA_ERR({SUCCESS,SUCCESS}) = %d\n", (int)(IS_CUDA_ERR(s) != 0));
	printf("CU_FILE_CUDA_ERR({SUCCESS,SUCCESS}) = %d\n", (int)CU_FILE_CUDA_ERR(s));
	s.err = CU_FILE_INVALID_VALUE;
	s.cu_err = CUDA_ERROR_OUT_OF_MEMORY;
	printf("IS_CUDA_ERR({INVALID_VALUE,OUT_OF_MEMORY}) = %d\n", (int)(IS_CUDA_ERR(s) != 0));
	printf("CU_FILE_CUDA_ERR({INVALID_VALUE,OUT_OF_MEMORY}) = %d\n", (int)CU_FILE_CUDA_ERR(s));

	/* The wording is each implementation's own: only that there is one. */
	{
		const char *m1 = CUFILE_ERRSTR(-5022);
		const char *m2 = CUFILE_ERRSTR(CU_FILE_IO_ERROR);
		const char *m3 = cufileop_status_error(CU_FILE_SUCCESS);
		printf("CUFILE_ERRSTR(-5022) nonempty = %d\n", m1 != NULL && m1[0] != '\0');
		printf("CUFILE_ERRSTR(CU_FILE_IO_ERROR) nonempty = %d\n", m2 != NULL && m2[0] != '\0');
		printf("cufileop_status_error(CU_FILE_SUCCESS) nonempty = %d\n",
		       m3 != NULL && m3[0] != '\0');
	}
}

int main(void)
{
	probe_macros();
	probe_facts();
	probe_macro_results();
	return 0;
}
