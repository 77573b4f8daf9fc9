/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_loader.h - the CUDA driver, loaded at run time.
 *
 * DESIGN: the library never links libcuda.so.1.  cuda_load() dlopen()s it
 * (path from OPENCUFILE_LIBCUDA, else "libcuda.so.1") and fills one ops table
 * by dlsym, using the explicit versioned symbol names so that the ABI of each
 * entry point is fixed regardless of cuda.h's macro mapping.  No driver, or
 * no GPU, is a mode (host memory only), not an error.
 */
#ifndef OCF_CUDA_LOADER_H_
#define OCF_CUDA_LOADER_H_

#include <cuda.h>
#include <stdbool.h>

/* X(name, symbol, return, args): every driver entry point the library uses. */
#define OCF_CUDA_FUNCS(X)                                                                      \
	X(Init, "cuInit", CUresult, (unsigned int))                                            \
	X(DriverGetVersion, "cuDriverGetVersion", CUresult, (int *))                           \
	X(GetErrorString, "cuGetErrorString", CUresult, (CUresult, const char **))             \
	X(GetErrorName, "cuGetErrorName", CUresult, (CUresult, const char **))                 \
	X(DeviceGetCount, "cuDeviceGetCount", CUresult, (int *))                               \
	X(DeviceGet, "cuDeviceGet", CUresult, (CUdevice *, int))                               \
	X(DeviceGetAttribute, "cuDeviceGetAttribute", CUresult,                                \
	  (int *, CUdevice_attribute, CUdevice))                                               \
	X(DeviceGetName, "cuDeviceGetName", CUresult, (char *, int, CUdevice))                 \
	X(DeviceGetUuid, "cuDeviceGetUuid_v2", CUresult, (CUuuid *, CUdevice))                 \
	X(DeviceGetPCIBusId, "cuDeviceGetPCIBusId", CUresult, (char *, int, CUdevice))         \
	X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext *, CUdevice)) \
	X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice))       \
	X(DevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState", CUresult,                    \
	  (CUdevice, unsigned int *, int *))                                                   \
	X(CtxGetCurrent, "cuCtxGetCurrent", CUresult, (CUcontext *))                           \
	X(CtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext))                             \
	X(CtxPushCurrent, "cuCtxPushCurrent_v2", CUresult, (CUcontext))                        \
	X(CtxPopCurrent, "cuCtxPopCurrent_v2", CUresult, (CUcontext *))                        \
	X(CtxGetDevice, "cuCtxGetDevice", CUresult, (CUdevice *))                              \
	X(PointerGetAttribute, "cuPointerGetAttribute", CUresult,                              \
	  (void *, CUpointer_attribute, CUdeviceptr))                                          \
	X(PointerGetAttributes, "cuPointerGetAttributes", CUresult,                            \
	  (unsigned int, CUpointer_attribute *, void **, CUdeviceptr))                         \
	X(PointerSetAttribute, "cuPointerSetAttribute", CUresult,                              \
	  (const void *, CUpointer_attribute, CUdeviceptr))                                    \
	X(MemGetAddressRange, "cuMemGetAddressRange_v2", CUresult,                             \
	  (CUdeviceptr *, size_t *, CUdeviceptr))                                              \
	X(MemHostAlloc, "cuMemHostAlloc", CUresult, (void **, size_t, unsigned int))           \
	X(MemFreeHost, "cuMemFreeHost", CUresult, (void *))                                    \
	X(MemHostRegister, "cuMemHostRegister_v2", CUresult, (void *, size_t, unsigned int))   \
	X(MemHostUnregister, "cuMemHostUnregister", CUresult, (void *))                        \
	X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult,                                   \
	  (CUdeviceptr, const void *, size_t, CUstream))                                       \
	X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult,                                   \
	  (void *, CUdeviceptr, size_t, CUstream))                                             \
	X(MemcpyHtoD, "cuMemcpyHtoD_v2", CUresult, (CUdeviceptr, const void *, size_t))        \
	X(MemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void *, CUdeviceptr, size_t))              \
	X(StreamCreate, "cuStreamCreate", CUresult, (CUstream *, unsigned int))                \
	X(StreamDestroy, "cuStreamDestroy_v2", CUresult, (CUstream))                           \
	X(StreamSynchronize, "cuStreamSynchronize", CUresult, (CUstream))                     \
	X(EventCreate, "cuEventCreate", CUresult, (CUevent *, unsigned int))                   \
	X(EventRecord, "cuEventRecord", CUresult, (CUevent, CUstream))                         \
	X(EventSynchronize, "cuEventSynchronize", CUresult, (CUevent))                         \
	X(EventQuery, "cuEventQuery", CUresult, (CUevent))                                     \
	X(EventDestroy, "cuEventDestroy_v2", CUresult, (CUevent))                             \
	/* Stream I/O (stream.c): a host function hands the operation to the \
	 * executor; the stream then waits on a flag in mapped pinned memory. */ \
	X(LaunchHostFunc, "cuLaunchHostFunc", CUresult, (CUstream, CUhostFn, void *))         \
	X(StreamWaitValue32, "cuStreamWaitValue32_v2", CUresult,                              \
	  (CUstream, CUdeviceptr, cuuint32_t, unsigned int))                                  \
	X(StreamWriteValue32, "cuStreamWriteValue32_v2", CUresult,                            \
	  (CUstream, CUdeviceptr, cuuint32_t, unsigned int))                                  \
	X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", CUresult,                  \
	  (CUdeviceptr *, void *, unsigned int))

/* Entry points the library uses where the driver has them (NULL where it
 * does not; the caller has a way without). */
#define OCF_CUDA_OPTIONAL_FUNCS(X)                                                             \
	/* CUDA 13's form (12.8's cuMemcpyBatchAsync had a failIdx argument):    \
	 * many scattered copies in one call (batch_io.c). */                    \
	X(MemcpyBatchAsync, "cuMemcpyBatchAsync_v2", CUresult,                                \
	  (CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t, CUstream))

struct ocf_cuda {
#define OCF_CUDA_MEMBER(name, sym, ret, args) ret(*name) args;
	OCF_CUDA_FUNCS(OCF_CUDA_MEMBER)
	OCF_CUDA_OPTIONAL_FUNCS(OCF_CUDA_MEMBER)
#undef OCF_CUDA_MEMBER
};

/* The loaded driver; valid (non-NULL members) only while cuda_available(). */
extern struct ocf_cuda ocf_cu;

/* Pops the context a matching cuCtxPushCurrent made current. */
static inline void cuda_ctx_pop(void)
{
	CUcontext popped;
	ocf_cu.CtxPopCurrent(&popped);
}

/* Loads the driver and runs cuInit once per process.  Returns 0 when a
 * driver with at least one GPU is usable, -ENODEV otherwise (the library
 * then runs host-memory only).  Thread-safe; the result is cached. */
int cuda_load(void);
bool cuda_available(void);
/* Number of GPUs (0 without a driver). */
int cuda_device_count(void);
/* "CUDA_ERROR_x" for logs; also remembers r as this thread's last CUDA
 * error, which the API reports in CUfileError_t.cu_err. */
const char *cuda_error_name(CUresult r);
CUresult cuda_last_error(void);

#endif /* OCF_CUDA_LOADER_H_ */
