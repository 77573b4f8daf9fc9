/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public structs, enums and macros of cufile.h have the sizes, member
 * offsets and values of the cuFile interface (x86-64, LP64), so that
 * binaries built against NVIDIA's header run against this library.  Built
 * twice: with OPENCUFILE_API_VERSION=1150 (the 1.15 surface) and with the
 * header's default (1.19: the larger statistics structs and the new names).
 */
#include "test.h"

#include <stddef.h>

#define SIZE(type, expected) T_EQ_U(sizeof(type), expected)
#define OFF(type, member, expected) T_EQ_U(offsetof(type, member), expected)
#define VAL(name, expected) T_EQ((long long)(name), expected)

int main(void)
{
	/* Sizes given by the interface. */
	SIZE(CUfileError_t, 8);
	SIZE(CUfileDrvProps_t, 56);
	SIZE(cufileRDMAInfo_t, 16);
	SIZE(CUfileFSOps_t, 40);
	SIZE(CUfileDescr_t, 24);
	SIZE(CUfileHandle_t, 8);
	SIZE(CUfileBatchHandle_t, 8);
	SIZE(CUfileIOParams_t, 64);
	SIZE(CUfileIOEvents_t, 24);
	SIZE(CUfileOpCounter_t, 16);
#if OPENCUFILE_API_VERSION >= 1190
	const size_t L1 = 624; /* 1.19 appends the vectored I/O counters */
#else
	const size_t L1 = 512;
#endif
	SIZE(CUfileStatsLevel1_t, L1);
	SIZE(CUfileStatsLevel2_t, L1 + 512);
	SIZE(CUfilePerGpuStats_t, 248);
	SIZE(CUfileStatsLevel3_t, L1 + 512 + 8 + 16 * 248);

	/* CUfileError_t: err, cu_err. */
	OFF(CUfileError_t, err, 0);
	OFF(CUfileError_t, cu_err, 4);

	/* CUfileDrvProps_t. */
	OFF(CUfileDrvProps_t, nvfs.major_version, 0);
	OFF(CUfileDrvProps_t, nvfs.minor_version, 4);
	OFF(CUfileDrvProps_t, nvfs.poll_thresh_size, 8);
	OFF(CUfileDrvProps_t, nvfs.max_direct_io_size, 16);
	OFF(CUfileDrvProps_t, nvfs.dstatusflags, 24);
	OFF(CUfileDrvProps_t, nvfs.dcontrolflags, 28);
	OFF(CUfileDrvProps_t, fflags, 32);
	OFF(CUfileDrvProps_t, max_device_cache_size, 36);
	OFF(CUfileDrvProps_t, per_buffer_cache_size, 40);
	OFF(CUfileDrvProps_t, max_device_pinned_mem_size, 44);
	OFF(CUfileDrvProps_t, max_batch_io_size, 48);
	OFF(CUfileDrvProps_t, max_batch_io_timeout_msecs, 52);

	/* cufileRDMAInfo_t and CUfileFSOps_t. */
	OFF(cufileRDMAInfo_t, version, 0);
	OFF(cufileRDMAInfo_t, desc_len, 4);
	OFF(cufileRDMAInfo_t, desc_str, 8);
	OFF(CUfileFSOps_t, fs_type, 0);
	OFF(CUfileFSOps_t, getRDMADeviceList, 8);
	OFF(CUfileFSOps_t, getRDMADevicePriority, 16);
	OFF(CUfileFSOps_t, read, 24);
	OFF(CUfileFSOps_t, write, 32);

	/* CUfileDescr_t. */
	OFF(CUfileDescr_t, type, 0);
	OFF(CUfileDescr_t, handle, 8);
	OFF(CUfileDescr_t, handle.fd, 8);
	OFF(CUfileDescr_t, handle.handle, 8);
	OFF(CUfileDescr_t, fs_ops, 16);

	/* CUfileIOParams_t: mode first. */
	OFF(CUfileIOParams_t, mode, 0);
	OFF(CUfileIOParams_t, u.batch.devPtr_base, 8);
	OFF(CUfileIOParams_t, u.batch.file_offset, 16);
	OFF(CUfileIOParams_t, u.batch.devPtr_offset, 24);
	OFF(CUfileIOParams_t, u.batch.size, 32);
	OFF(CUfileIOParams_t, fh, 40);
	OFF(CUfileIOParams_t, opcode, 48);
	OFF(CUfileIOParams_t, cookie, 56);

	/* CUfileIOEvents_t. */
	OFF(CUfileIOEvents_t, cookie, 0);
	OFF(CUfileIOEvents_t, status, 8);
	OFF(CUfileIOEvents_t, ret, 16);

	/* Statistics. */
	OFF(CUfileStatsLevel1_t, read_ops, 0);
	OFF(CUfileStatsLevel1_t, buf_deregister_ops, 80);
	OFF(CUfileStatsLevel1_t, read_bytes, 96);
	OFF(CUfileStatsLevel1_t, write_lat_sum_us, 168);
	OFF(CUfileStatsLevel1_t, batch_submit_ops, 176);
	OFF(CUfileStatsLevel1_t, batch_enqueued_ops, 256);
	OFF(CUfileStatsLevel1_t, batch_nvfs_submit_ops, 320);
	OFF(CUfileStatsLevel1_t, batch_total_submit_ops, 400);
	OFF(CUfileStatsLevel1_t, batch_read_bytes, 416);
	OFF(CUfileStatsLevel1_t, last_batch_write_bytes, 504);
	OFF(CUfileStatsLevel2_t, basic, 0);
	OFF(CUfileStatsLevel2_t, read_size_kb_hist, L1);
	OFF(CUfileStatsLevel2_t, write_size_kb_hist, L1 + 256);
	OFF(CUfilePerGpuStats_t, uuid, 0);
	OFF(CUfilePerGpuStats_t, read_bytes, 16);
	OFF(CUfilePerGpuStats_t, n_reads_err, 112);
	OFF(CUfilePerGpuStats_t, writes_bytes, 120);
	OFF(CUfilePerGpuStats_t, n_writes_err, 200);
	OFF(CUfilePerGpuStats_t, reg_bytes, 240);
	OFF(CUfileStatsLevel3_t, detailed, 0);
	OFF(CUfileStatsLevel3_t, num_gpus, L1 + 512);
	OFF(CUfileStatsLevel3_t, per_gpu_stats, L1 + 520);
#if OPENCUFILE_API_VERSION >= 1190
	OFF(CUfileStatsLevel1_t, readv_ops, 512);
	OFF(CUfileStatsLevel1_t, writev_ops, 528);
	OFF(CUfileStatsLevel1_t, readv_bytes, 544);
	OFF(CUfileStatsLevel1_t, writev_bytes, 552);
	OFF(CUfileStatsLevel1_t, readv_bw_bytes_per_sec, 560);
	OFF(CUfileStatsLevel1_t, writev_bw_bytes_per_sec, 568);
	OFF(CUfileStatsLevel1_t, readv_lat_avg_us, 576);
	OFF(CUfileStatsLevel1_t, writev_lat_avg_us, 584);
	OFF(CUfileStatsLevel1_t, readv_ops_per_sec, 592);
	OFF(CUfileStatsLevel1_t, writev_ops_per_sec, 600);
	OFF(CUfileStatsLevel1_t, readv_lat_sum_us, 608);
	OFF(CUfileStatsLevel1_t, writev_lat_sum_us, 616);
	OFF(CUfileStatsLevel3_t, num_gpus, 1136);
	OFF(CUfileStatsLevel3_t, per_gpu_stats, 1144);
	SIZE(CUfileIOVec_t, 16);
	OFF(CUfileIOVec_t, base, 0);
	OFF(CUfileIOVec_t, len, 8);
	SIZE(CUfileP2PFlags_t, 4);
	SIZE(CUfileFSOps_t, 40);
	VAL(CU_FILE_VIRTIOFS_SUPPORTED, 13);
	VAL(CU_FILE_MAX_TARGET_TYPES, 14);
	VAL(CU_FILE_POSIX_IO_MODE, 2);
	VAL(CU_FILE_VANILLA_POSIX_IO_MODE, 2);
	VAL(CU_FILE_FALLBACK_IO_MODE, 4);
	VAL(CU_FILE_P2P_SUPPORTED, 4);
	VAL(CUFILE_P2PDMA, 0);
	VAL(CUFILE_NVFS, 1);
	VAL(CUFILE_DMABUF, 2);
	VAL(CUFILE_C2C, 3);
	VAL(CUFILE_NVIDIA_PEERMEM, 4);
	VAL(CU_FILE_P2P_FLAG_PCI_P2PDMA, 1);
	VAL(CU_FILE_P2P_FLAG_NVFS, 2);
	VAL(CU_FILE_P2P_FLAG_DMABUF, 4);
	VAL(CU_FILE_P2P_FLAG_C2C, 8);
	VAL(CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE, 12);
	VAL(CUFILE_PARAM_GDS_FALLBACK_IO, 13);
	VAL(CUFILE_PARAM_RDMA_TRANSPORT, 3);
	VAL(CUFILE_PARAM_GPU_BOUNCE_BUFFER_SLAB_SIZE_KB, 2);
	VAL(CUFILE_PARAM_GPU_BOUNCE_BUFFER_SLAB_COUNT, 3);
#else
	OFF(CUfileStatsLevel3_t, num_gpus, 1024);
	OFF(CUfileStatsLevel3_t, per_gpu_stats, 1032);
#endif

	/* Enumerations and macros. */
	VAL(CUFILEOP_BASE_ERR, 5000);
	VAL(CU_FILE_SUCCESS, 0);
	VAL(CU_FILE_DRIVER_NOT_INITIALIZED, 5001);
	VAL(CU_FILE_DRIVER_CLOSING, 5006);
	VAL(CU_FILE_CUDA_DRIVER_ERROR, 5011);
	VAL(CU_FILE_CUDA_POINTER_RANGE_ERROR, 5014);
	VAL(CU_FILE_INVALID_FILE_TYPE, 5018);
	VAL(CU_FILE_INVALID_FILE_OPEN_FLAG, 5019);
	VAL(CU_FILE_DIO_NOT_SET, 5020);
	VAL(CU_FILE_INVALID_VALUE, 5022);
	VAL(CU_FILE_MEMORY_ALREADY_REGISTERED, 5023);
	VAL(CU_FILE_MEMORY_NOT_REGISTERED, 5024);
	VAL(CU_FILE_DRIVER_ALREADY_OPEN, 5026);
	VAL(CU_FILE_HANDLE_NOT_REGISTERED, 5027);
	VAL(CU_FILE_HANDLE_ALREADY_REGISTERED, 5028);
	VAL(CU_FILE_GETNEWFD_FAILED, 5031);
	VAL(CU_FILE_NVFS_SETUP_ERROR, 5033);
	VAL(CU_FILE_NOMEM_ERROR, 5043);
	VAL(CU_FILE_IO_ERROR, 5044);
	VAL(CU_FILE_BATCH_NOCOMPAT_ERROR, 5049);
	VAL(CU_FILE_IO_MAX_ERROR, 5050);

	VAL(CU_FILE_LUSTRE_SUPPORTED, 0);
	VAL(CU_FILE_BEEGFS_SUPPORTED, 9);
	VAL(CU_FILE_NVME_P2P_SUPPORTED, 11);
	VAL(CU_FILE_SCATEFS_SUPPORTED, 12);
	VAL(CU_FILE_USE_POLL_MODE, 0);
	VAL(CU_FILE_ALLOW_COMPAT_MODE, 1);
	VAL(CU_FILE_DYN_ROUTING_SUPPORTED, 0);
	VAL(CU_FILE_PARALLEL_IO_SUPPORTED, 3);
	VAL(CU_FILE_HANDLE_TYPE_OPAQUE_FD, 1);
	VAL(CU_FILE_HANDLE_TYPE_OPAQUE_WIN32, 2);
	VAL(CU_FILE_HANDLE_TYPE_USERSPACE_FS, 3);
	VAL(CUFILE_READ, 0);
	VAL(CUFILE_WRITE, 1);
	VAL(CUFILE_BATCH, 1);
	VAL(CUFILE_WAITING, 0x1);
	VAL(CUFILE_PENDING, 0x2);
	VAL(CUFILE_INVALID, 0x4);
	VAL(CUFILE_CANCELED, 0x8);
	VAL(CUFILE_COMPLETE, 0x10);
	VAL(CUFILE_TIMEOUT, 0x20);
	VAL(CUFILE_FAILED, 0x40);
	VAL(CU_FILE_RDMA_REGISTER, 1);
	VAL(CU_FILE_RDMA_RELAXED_ORDERING, 2);
	VAL(CU_FILE_STREAM_FIXED_BUF_OFFSET, 1);
	VAL(CU_FILE_STREAM_FIXED_FILE_OFFSET, 2);
	VAL(CU_FILE_STREAM_FIXED_FILE_SIZE, 4);
	VAL(CU_FILE_STREAM_PAGE_ALIGNED_INPUTS, 8);
	VAL(CUFILE_PARAM_PROFILE_STATS, 0);
	VAL(CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, 11);
	VAL(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, 0);
	VAL(CUFILE_PARAM_STREAM_MEMOPS_BYPASS, 11);
	VAL(CUFILE_PARAM_LOGGING_LEVEL, 0);
	VAL(CUFILE_PARAM_LOG_DIR, 2);
	VAL(CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB, 0);
	VAL(CUFILE_PARAM_POSIX_POOL_SLAB_COUNT, 1);
	VAL(CUFILE_GPU_UUID_LEN, 16);

	/* Error macros. */
	T_ASSERT(IS_CUFILE_ERR(-CU_FILE_INVALID_VALUE));
	T_ASSERT(IS_CUFILE_ERR(CU_FILE_INVALID_VALUE));
	T_ASSERT(!IS_CUFILE_ERR(-1));
	T_ASSERT(!IS_CUFILE_ERR(0));
	T_ASSERT(CUFILE_ERRSTR(-CU_FILE_INVALID_VALUE) ==
		 cufileop_status_error(CU_FILE_INVALID_VALUE));
	CUfileError_t st = { CU_FILE_CUDA_DRIVER_ERROR, CUDA_ERROR_OUT_OF_MEMORY };
	T_ASSERT(IS_CUDA_ERR(st));
	T_EQ(CU_FILE_CUDA_ERR(st), CUDA_ERROR_OUT_OF_MEMORY);

	/* The public entry points have C linkage and the functions the program
	 * calls are the library's exported symbols of those names: each address
	 * the program links to must be what dlsym finds under that name in
	 * libcufile.so.0 (not a copy in the program, an inline in the header or
	 * another library's symbol).  The name is taken after macro expansion:
	 * where the header renames a function (the statistics getters of the
	 * 1.19 surface), the symbol checked is the one the program binds to. */
	void *lib = dlopen("libcufile.so.0", RTLD_NOW | RTLD_NOLOAD);
	if (!lib)
		T_FAIL("libcufile.so.0 is not loaded in this process: %s", dlerror());
#define STR_(x) #x
#define F(fn) { STR_(fn), (void *)fn }
	const struct {
		const char *name;
		void *addr;
	} fns[] = {
		F(cuFileDriverOpen), F(cuFileDriverClose_v2), F(cuFileUseCount),
		F(cuFileDriverGetProperties), F(cuFileDriverSetPollMode),
		F(cuFileDriverSetMaxDirectIOSize), F(cuFileDriverSetMaxCacheSize),
		F(cuFileDriverSetMaxPinnedMemSize), F(cuFileGetVersion),
		F(cuFileHandleRegister), F(cuFileHandleDeregister),
		F(cuFileBufRegister), F(cuFileBufDeregister), F(cuFileRead),
		F(cuFileWrite), F(cuFileBatchIOSetUp), F(cuFileBatchIOSubmit),
		F(cuFileBatchIOGetStatus), F(cuFileBatchIOCancel),
		F(cuFileBatchIODestroy), F(cuFileReadAsync), F(cuFileWriteAsync),
		F(cuFileStreamRegister), F(cuFileStreamDeregister),
		F(cuFileGetParameterSizeT), F(cuFileGetParameterBool),
		F(cuFileGetParameterString), F(cuFileGetParameterMinMaxValue),
		F(cuFileSetParameterSizeT), F(cuFileSetParameterBool),
		F(cuFileSetParameterString), F(cuFileSetParameterPosixPoolSlabArray),
		F(cuFileGetParameterPosixPoolSlabArray), F(cuFileSetStatsLevel),
		F(cuFileGetStatsLevel), F(cuFileStatsStart), F(cuFileStatsStop),
		F(cuFileStatsReset), F(cuFileGetStatsL1), F(cuFileGetStatsL2),
		F(cuFileGetStatsL3), F(cuFileGetBARSizeInKB),
#if OPENCUFILE_API_VERSION >= 1190
		F(cuFileDriverSetP2PFlags), F(cuFileDriverGetP2PFlags),
		F(cuFileSetParameterGpuBounceBufferSlabArray),
		F(cuFileGetParameterGpuBounceBufferSlabArray), F(cuFileExportPCIeTopology),
		F(cuFileReadv), F(cuFileWritev),
#endif
	};
#undef F
#undef STR_
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *sym = dlsym(lib, fns[i].name);
		if (sym != fns[i].addr)
			T_FAIL("%s: the program calls %p, libcufile.so.0 exports %p", fns[i].name,
			       fns[i].addr, sym);
	}
	/* The pre-_v2 close is exported too, by the library itself. */
	T_ASSERT(dlsym(lib, "cuFileDriverClose") != NULL);
	T_ASSERT(dlsym(lib, "cuFileDriverClose_v2") != NULL);
	dlclose(lib);
	return 0;
}
