/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_dl.h - the CUDA driver API for the command-line tools (gdsio,
 * bench/ceilings), loaded with dlopen so that the tools build and run on a
 * machine without a GPU and never link libcuda.
 *
 * DESIGN: one X-macro list names every driver function the tools call, with
 * its explicit versioned symbol (cuMemAlloc_v2, not the cuda.h macro); the
 * table is filled by dlsym.  Absent functions are not an error at load time
 * (an older or stand-in driver may lack a few); a tool checks the entry
 * before it relies on it.  OPENCUFILE_LIBCUDA overrides the path, as in the
 * library, so the CPU tests can point the tools at tests/fakecuda.
 */
#ifndef OCF_TOOLS_CUDA_DL_H_
#define OCF_TOOLS_CUDA_DL_H_

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* X(field, symbol, return-type-less signature) */
#define CUDA_DL_FUNCS(X)                                                                                     \
	X(Init, "cuInit", (unsigned))                                                                        \
	X(DeviceGet, "cuDeviceGet", (CUdevice *, int))                                                       \
	X(DeviceGetCount, "cuDeviceGetCount", (int *))                                                       \
	X(DeviceGetName, "cuDeviceGetName", (char *, int, CUdevice))                                         \
	X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice))                             \
	X(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice))                                     \
	X(CtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                                                     \
	X(GetErrorString, "cuGetErrorString", (CUresult, const char **))                                     \
	X(MemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                                                \
	X(MemFree, "cuMemFree_v2", (CUdeviceptr))                                                            \
	X(MemHostAlloc, "cuMemHostAlloc", (void **, size_t, unsigned))                                       \
	X(MemFreeHost, "cuMemFreeHost", (void *))                                                            \
	X(MemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr, const void *, size_t))                                \
	X(MemcpyDtoH, "cuMemcpyDtoH_v2", (void *, CUdeviceptr, size_t))                                      \
	X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void *, size_t, CUstream))            \
	X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *, CUdeviceptr, size_t, CUstream))                  \
	X(MemsetD8, "cuMemsetD8_v2", (CUdeviceptr, unsigned char, size_t))                                   \
	X(StreamCreate, "cuStreamCreate", (CUstream *, unsigned))                                            \
	X(StreamDestroy, "cuStreamDestroy_v2", (CUstream))                                                   \
	X(StreamSynchronize, "cuStreamSynchronize", (CUstream))                                              \
	X(MemcpyBatchAsync, "cuMemcpyBatchAsync_v2",                                                         \
	  (CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t, CUstream)) \
	X(MemGetAllocationGranularity, "cuMemGetAllocationGranularity",                                      \
	  (size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags))                         \
	X(MemCreate, "cuMemCreate",                                                                          \
	  (CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long))         \
	X(MemRelease, "cuMemRelease", (CUmemGenericAllocationHandle))                                        \
	X(MemAddressReserve, "cuMemAddressReserve",                                                          \
	  (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))                                  \
	X(MemAddressFree, "cuMemAddressFree", (CUdeviceptr, size_t))                                         \
	X(MemMap, "cuMemMap",                                                                                \
	  (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))                   \
	X(MemUnmap, "cuMemUnmap", (CUdeviceptr, size_t))                                                     \
	X(MemSetAccess, "cuMemSetAccess", (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t))             \
	X(DeviceGetAttribute, "cuDeviceGetAttribute", (int *, CUdevice_attribute, CUdevice))                 \
	X(ModuleLoadData, "cuModuleLoadData", (CUmodule *, const void *))                                    \
	X(ModuleGetFunction, "cuModuleGetFunction", (CUfunction *, CUmodule, const char *))                  \
	X(ModuleUnload, "cuModuleUnload", (CUmodule))                                                        \
	X(LaunchKernel, "cuLaunchKernel",                                                                    \
	  (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, \
	   void **))

struct cuda_dl {
	void *lib;
	char path[256];
#define CUDA_DL_FIELD(field, sym, args) CUresult(*field) args;
	CUDA_DL_FUNCS(CUDA_DL_FIELD)
#undef CUDA_DL_FIELD
};

/* The functions every GPU-using mode needs; the rest are checked where used. */
static inline int cuda_dl_core_ok(const struct cuda_dl *c)
{
	return c->Init && c->DeviceGet && c->PrimaryCtxRetain && c->CtxSetCurrent && c->MemAlloc &&
	       c->MemFree && c->MemHostAlloc && c->MemFreeHost && c->MemcpyHtoD && c->MemcpyDtoH;
}

/* 0 on success; -1 with a reason in err (never fatal for the caller). */
static inline int cuda_dl_load(struct cuda_dl *c, char *err, size_t errlen)
{
	const char *env = getenv("OPENCUFILE_LIBCUDA");
	const char *path = env && *env ? env : "libcuda.so.1";
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!c->lib) {
		snprintf(err, errlen, "dlopen(%s): %s", path, dlerror());
		return -1;
	}
#define CUDA_DL_SYM(field, sym, args) c->field = (CUresult(*) args)dlsym(c->lib, sym);
	CUDA_DL_FUNCS(CUDA_DL_SYM)
#undef CUDA_DL_SYM
	if (!cuda_dl_core_ok(c)) {
		snprintf(err, errlen, "%s lacks core CUDA driver functions", path);
		return -1;
	}
	CUresult r = c->Init(0);
	if (r != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuInit: CUDA error %d", (int)r);
		return -1;
	}
	return 0;
}

static inline const char *cuda_dl_errstr(const struct cuda_dl *c, CUresult r)
{
	const char *s = NULL;
	if (c->GetErrorString && c->GetErrorString(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "unknown CUDA error";
}

/* Retain the primary context of device `gpu` and make it current in the
 * calling thread (the driver keeps one current context per thread). */
static inline CUresult cuda_dl_bind(const struct cuda_dl *c, int gpu, CUcontext *ctx)
{
	CUdevice dev;
	CUresult r = c->DeviceGet(&dev, gpu);
	if (r == CUDA_SUCCESS)
		r = c->PrimaryCtxRetain(ctx, dev);
	if (r == CUDA_SUCCESS)
		r = c->CtxSetCurrent(*ctx);
	return r;
}

#endif /* OCF_TOOLS_CUDA_DL_H_ */
