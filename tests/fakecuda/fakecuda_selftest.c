/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakecuda_selftest.c - self-test of the stand-in CUDA driver.
 *
 * DESIGN: one process, sequential sections, each checking a piece of the
 * documented behaviour (init, devices, contexts, allocation and buffer IDs,
 * copies through delayed streams, pointer attributes of every memory kind,
 * VMM, pools, memops, events, fault injection, leak counters, the driver
 * lock model), plus a small multi-threaded stress section for the sanitizer
 * builds.  The lock-model section runs each call that may block on its own
 * thread, polls for its return for a bounded time and joins it within 5 s
 * (or fails with the lock report), so a regression fails instead of
 * hanging.
 */
#define _GNU_SOURCE
#include "fakecuda.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                                                          \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);             \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

#define CK(call, expect)                                                                                     \
	do {                                                                                                 \
		CUresult r_ = (call);                                                                        \
		if (r_ != (expect)) {                                                                        \
			fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call,   \
				(int)r_, (int)(expect));                                                     \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)

#define OK(call) CK(call, CUDA_SUCCESS)

static CUcontext g_ctx0, g_ctx1;

static void test_init(void)
{
	int n = -1, v = 0;
	CK(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	OK(cuDriverGetVersion(&v));
	CHECK(v == 13000);
	fakecuda_set_device_count(0);
	CK(cuInit(0), CUDA_ERROR_NO_DEVICE);
	CK(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	fakecuda_set_device_count(2);
	CK(cuInit(1), CUDA_ERROR_INVALID_VALUE);
	OK(cuInit(0));
	OK(cuDeviceGetCount(&n));
	CHECK(n == 2);
	CHECK(fakecuda_call_count("cuInit") == 3);
}

static void test_devices(void)
{
	CUdevice d;
	int v;
	char name[64], bus[32];
	CUuuid u0, u1;
	OK(cuDeviceGet(&d, 1));
	CHECK(d == 1);
	CK(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	CHECK(v == 9);
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
	CHECK(v == 1);
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1));
	CHECK(v == 1);
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1));
	CHECK(v == 2);
	OK(cuDeviceGetName(name, sizeof(name), 1));
	CHECK(strcmp(name, "Fake GPU 1") == 0);
	OK(cuDeviceGetPCIBusId(bus, sizeof(bus), 1));
	CHECK(strcmp(bus, "0000:02:00.0") == 0);
	OK(cuDeviceGetUuid(&u0, 0));
	OK(cuDeviceGetUuid(&u1, 1));
	CHECK(memcmp(&u0, &u1, sizeof(u0)) != 0);

	const char *s = NULL;
	OK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
	CHECK(s && strcmp(s, "CUDA_ERROR_INVALID_VALUE") == 0);
	OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
	CHECK(s && strcmp(s, "out of memory") == 0);
	CK(cuGetErrorName((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
}

static void test_contexts(void)
{
	CUdeviceptr p;
	CUcontext c = (CUcontext)1;
	CUdevice d;
	OK(cuCtxGetCurrent(&c));
	CHECK(c == NULL);
	CK(cuMemAlloc(&p, 100), CUDA_ERROR_INVALID_CONTEXT);
	CK(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
	OK(cuDevicePrimaryCtxRetain(&g_ctx0, 0));
	OK(cuDevicePrimaryCtxRetain(&g_ctx1, 1));
	CHECK(g_ctx0 && g_ctx1 && g_ctx0 != g_ctx1);
	OK(cuCtxSetCurrent(g_ctx1));
	OK(cuCtxGetDevice(&d));
	CHECK(d == 1);
	OK(cuCtxPushCurrent(g_ctx0));
	OK(cuCtxGetDevice(&d));
	CHECK(d == 0);
	OK(cuCtxPopCurrent(&c));
	CHECK(c == g_ctx0);
	OK(cuCtxGetCurrent(&c));
	CHECK(c == g_ctx1);

	/* Created context: freed with its allocations on destroy. */
	CUcontext nc;
	size_t live = fakecuda_live_device_allocations();
	OK(cuCtxCreate(&nc, NULL, 0, 0));
	OK(cuCtxGetCurrent(&c));
	CHECK(c == nc);
	OK(cuMemAlloc(&p, 4096));
	CHECK(fakecuda_live_device_allocations() == live + 1);
	OK(cuCtxDestroy(nc));
	CHECK(fakecuda_live_device_allocations() == live);
	OK(cuCtxGetCurrent(&c));
	CHECK(c == g_ctx1);
	CK(cuCtxDestroy(nc), CUDA_ERROR_INVALID_CONTEXT);
	int junk;
	CK(cuCtxPushCurrent((CUcontext)&junk), CUDA_ERROR_INVALID_CONTEXT);
	OK(cuCtxSetCurrent(g_ctx0));
}

static void test_device_memory(void)
{
	size_t live = fakecuda_live_device_allocations();
	size_t bytes = fakecuda_live_device_bytes();
	CUdeviceptr a, b, a2;
	OK(cuMemAlloc(&a, 3 << 20));
	OK(cuMemAlloc(&b, 1000));
	CHECK(fakecuda_live_device_allocations() == live + 2);
	CHECK(fakecuda_live_device_bytes() == bytes + (3 << 20) + 1000);
	CHECK(a % (2 << 20) == 0 && b % (2 << 20) == 0);

	unsigned long long id_a, id_b, id_a2;
	OK(cuPointerGetAttribute(&id_a, CU_POINTER_ATTRIBUTE_BUFFER_ID, a + 5));
	OK(cuPointerGetAttribute(&id_b, CU_POINTER_ATTRIBUTE_BUFFER_ID, b));
	CHECK(id_a != id_b && id_a != 0);

	/* Fresh memory holds the garbage pattern. */
	unsigned char *sh = fakecuda_shadow(b, 1000);
	CHECK(sh && sh[0] == 0xA5 && sh[999] == 0xA5);
	CHECK(fakecuda_shadow(b, 1001) == NULL);

	/* Copies. */
	char src[1000], dst[1000];
	for (int i = 0; i < 1000; i++)
		src[i] = (char)i;
	OK(cuMemcpyHtoD(b, src, 1000));
	memset(dst, 0, sizeof(dst));
	OK(cuMemcpyDtoH(dst, b, 1000));
	CHECK(memcmp(src, dst, 1000) == 0);
	CK(cuMemcpyHtoD(b, src, 1001), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemcpyHtoD(b + 1, src, 1000), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemcpyDtoH(dst, b - 1, 10), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemcpyDtoD(a + 100, b, 1000));
	memset(dst, 0, sizeof(dst));
	OK(cuMemcpy((CUdeviceptr)(uintptr_t)dst, a + 100, 1000));
	CHECK(memcmp(src, dst, 1000) == 0);
	OK(cuMemsetD8(b, 7, 1000));
	OK(cuMemcpyDtoH(dst, b, 1000));
	CHECK(dst[0] == 7 && dst[999] == 7);

	/* Address range / attributes. */
	CUdeviceptr base;
	size_t sz;
	OK(cuMemGetAddressRange(&base, &sz, a + 12345));
	CHECK(base == a && sz == (3 << 20));
	unsigned mt;
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
	CHECK(mt == CU_MEMORYTYPE_DEVICE);
	void *hp = (void *)1;
	CK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, a), CUDA_ERROR_INVALID_VALUE);
	CUcontext c;
	OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, a));
	CHECK(c == g_ctx0);

	/* Free + same-size alloc: same address, new buffer ID. */
	OK(cuMemFree(a));
	CK(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
	CK(cuPointerGetAttribute(&id_a2, CU_POINTER_ATTRIBUTE_BUFFER_ID, a), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemAlloc(&a2, 3 << 20));
	CHECK(a2 == a);
	OK(cuPointerGetAttribute(&id_a2, CU_POINTER_ATTRIBUTE_BUFFER_ID, a2));
	CHECK(id_a2 > id_b);
	OK(cuMemFree(a2));
	OK(cuMemFree(b));
	CHECK(fakecuda_live_device_allocations() == live);
	CHECK(fakecuda_live_device_bytes() == bytes);

	size_t fr, tot;
	OK(cuMemGetInfo(&fr, &tot));
	CHECK(fr <= tot && tot > 0);

	/* The context is needed for allocation but not for attributes. */
	OK(cuMemAlloc(&a, 64));
	CUcontext saved;
	OK(cuCtxPopCurrent(&saved));
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
	CK(cuMemAlloc(&b, 64), CUDA_ERROR_INVALID_CONTEXT);
	CK(cuMemcpyHtoD(a, src, 64), CUDA_ERROR_INVALID_CONTEXT);
	OK(cuCtxPushCurrent(saved));
	OK(cuMemFree(a));
}

static void test_segfault(void)
{
	CUdeviceptr a;
	OK(cuMemAlloc(&a, 4096));
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2); /* the sanitizers report the expected SEGV */
		volatile char *p = (volatile char *)(uintptr_t)a;
		char x = *p;
		(void)x;
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
	OK(cuMemFree(a));
}

static void test_unknown_memory(void)
{
	char *m = malloc(256);
	unsigned mt = 99;
	CK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)m),
	   CUDA_ERROR_INVALID_VALUE);
	unsigned long long id = 99;
	CUcontext c = (CUcontext)1;
	unsigned managed = 9;
	CUpointer_attribute at[4] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID,
				     CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_IS_MANAGED};
	void *data[4] = {&mt, &id, &c, &managed};
	OK(cuPointerGetAttributes(4, at, data, (CUdeviceptr)(uintptr_t)m));
	CHECK(mt == 0 && id == 0 && c == NULL && managed == 0);
	CUdeviceptr base;
	size_t sz;
	CK(cuMemGetAddressRange(&base, &sz, (CUdeviceptr)(uintptr_t)m), CUDA_ERROR_NOT_FOUND);
	CK(cuMemHostUnregister(m), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	unsigned one = 1;
	CK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)(uintptr_t)m),
	   CUDA_ERROR_INVALID_VALUE);
	free(m);
}

static void test_host_memory(void)
{
	size_t np = fakecuda_live_pinned_allocations(), nb = fakecuda_live_pinned_bytes();
	size_t nr = fakecuda_live_host_registrations();
	void *h, *h2;
	OK(cuMemHostAlloc(&h, 10000, CU_MEMHOSTALLOC_PORTABLE));
	OK(cuMemAllocHost(&h2, 64));
	CHECK(fakecuda_live_pinned_allocations() == np + 2);
	CHECK(fakecuda_live_pinned_bytes() == nb + 10064);
	memset(h, 1, 10000);
	unsigned mt;
	void *hp;
	CUdeviceptr dp, base;
	size_t sz;
	CUdeviceptr hd = (CUdeviceptr)(uintptr_t)h;
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, hd + 10));
	CHECK(mt == CU_MEMORYTYPE_HOST);
	OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, hd + 10));
	CHECK(hp == (char *)h + 10);
	OK(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, hd + 10));
	CHECK(dp == hd + 10);
	OK(cuMemGetAddressRange(&base, &sz, hd + 10));
	CHECK(base == hd && sz == 10000);
	CK(cuMemHostRegister(h, 100, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CK(cuMemFreeHost((char *)h + 1), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemFreeHost(h));
	OK(cuMemFreeHost(h2));
	CHECK(fakecuda_live_pinned_allocations() == np);
	CHECK(fakecuda_live_pinned_bytes() == nb);

	/* Registration of ordinary memory. */
	char *m = aligned_alloc(4096, 1 << 16);
	CUdeviceptr md = (CUdeviceptr)(uintptr_t)m;
	OK(cuMemHostRegister(m, 1 << 16, CU_MEMHOSTREGISTER_DEVICEMAP));
	CHECK(fakecuda_live_host_registrations() == nr + 1);
	CK(cuMemHostRegister(m + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	unsigned long long id1, id2;
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, md + 5));
	CHECK(mt == CU_MEMORYTYPE_HOST);
	OK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, md));
	CUdeviceptr rs;
	OK(cuPointerGetAttribute(&rs, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, md + 5));
	CHECK(rs == md);
	OK(cuPointerGetAttribute(&sz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, md + 5));
	CHECK(sz == 1 << 16);
	/* Copy from registered host memory into device memory (UVA cuMemcpy). */
	CUdeviceptr d;
	OK(cuMemAlloc(&d, 128));
	memset(m, 0x3c, 128);
	OK(cuMemcpy(d, md, 128));
	unsigned char *sh = fakecuda_shadow(d, 128);
	CHECK(sh && sh[127] == 0x3c);
	OK(cuMemFree(d));
	CK(cuMemHostUnregister(m + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	OK(cuMemHostUnregister(m));
	CK(cuMemHostUnregister(m), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	OK(cuMemHostRegister(m, 1 << 16, 0));
	OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, md));
	CHECK(id2 > id1);
	OK(cuMemHostUnregister(m));
	CHECK(fakecuda_live_host_registrations() == nr);
	free(m);
}

static void test_managed(void)
{
	size_t live = fakecuda_live_device_allocations();
	CUdeviceptr p;
	OK(cuMemAllocManaged(&p, 5000, CU_MEM_ATTACH_GLOBAL));
	CHECK(fakecuda_live_device_allocations() == live + 1);
	char *h = (char *)(uintptr_t)p;
	memset(h, 9, 5000); /* host-accessible */
	unsigned mt, managed;
	void *hp;
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
	CHECK(mt == CU_MEMORYTYPE_DEVICE);
	OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
	CHECK(managed == 1);
	OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, p + 1));
	CHECK(hp == h + 1);
	char buf[10];
	OK(cuMemcpyDtoH(buf, p + 4990, 10));
	CHECK(buf[0] == 9);
	OK(cuMemFree(p));
	CHECK(fakecuda_live_device_allocations() == live);
}

static void test_sync_memops(void)
{
	CUdeviceptr p;
	OK(cuMemAlloc(&p, 100));
	CHECK(fakecuda_sync_memops(p) == 0);
	unsigned one = 1;
	OK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p + 10));
	CHECK(fakecuda_sync_memops(p) == 1);
	unsigned v = 0;
	OK(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p));
	CHECK(v == 1);
	CK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_IS_MANAGED, p), CUDA_ERROR_INVALID_VALUE);
	CHECK(fakecuda_sync_memops((CUdeviceptr)(uintptr_t)&v) == -1);
	OK(cuMemFree(p));
}

static void test_vmm(void)
{
	size_t live = fakecuda_live_device_allocations();
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 1;
	size_t gran;
	OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CHECK(gran == (2 << 20));
	CUdeviceptr va;
	OK(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
	CUmemGenericAllocationHandle h;
	CK(cuMemCreate(&h, 1000, &prop, 0), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemCreate(&h, 2 * gran, &prop, 0));
	CHECK(fakecuda_live_device_allocations() == live + 1);
	CK(cuMemMap(va + gran, 2 * gran, 0, (CUmemGenericAllocationHandle)777, 0), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemMap(va + gran, 2 * gran, 0, h, 0));
	CUmemAccessDesc ad;
	memset(&ad, 0, sizeof(ad));
	ad.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	ad.location.id = 1;
	ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(cuMemSetAccess(va, 2 * gran, &ad, 1), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemSetAccess(va + gran, 2 * gran, &ad, 1));

	CUcontext c = (CUcontext)1;
	unsigned mt, acc;
	int ord;
	unsigned long long id;
	CUdeviceptr rs, base;
	size_t rsz;
	CUdeviceptr p = va + gran + 100;
	OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p));
	CHECK(c == NULL);
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
	CHECK(mt == CU_MEMORYTYPE_DEVICE);
	OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
	CHECK(ord == 1);
	OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
	CHECK(id != 0);
	OK(cuPointerGetAttribute(&rs, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p));
	OK(cuPointerGetAttribute(&rsz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
	CHECK(rs == va + gran && rsz == 2 * gran);
	OK(cuPointerGetAttribute(&acc, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, p));
	CHECK(acc == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
	OK(cuMemGetAddressRange(&base, &rsz, p));
	CHECK(base == va + gran && rsz == 2 * gran);
	CK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va), CUDA_ERROR_INVALID_VALUE);

	char buf[64] = "vmm data", out[64];
	OK(cuMemcpyHtoD(p, buf, 64));
	OK(cuMemcpyDtoH(out, p, 64));
	CHECK(strcmp(out, "vmm data") == 0);
	CK(cuMemcpyHtoD(va + 3 * gran - 10, buf, 64), CUDA_ERROR_INVALID_VALUE);

	CK(cuMemAddressFree(va, 4 * gran), CUDA_ERROR_INVALID_VALUE); /* still mapped */
	OK(cuMemRelease(h));					      /* mapping keeps the memory alive */
	CHECK(fakecuda_live_device_allocations() == live + 1);
	OK(cuMemUnmap(va + gran, 2 * gran));
	CHECK(fakecuda_live_device_allocations() == live);
	CK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemAddressFree(va, 4 * gran));
}

struct order_log {
	pthread_mutex_t mu;
	int seq[16];
	int n;
};

static void host_fn(void *ud)
{
	struct order_log *l = ud;
	pthread_mutex_lock(&l->mu);
	l->seq[l->n++] = 1;
	pthread_mutex_unlock(&l->mu);
}

static void host_cb(CUstream s, CUresult st, void *ud)
{
	(void)s;
	struct order_log *l = ud;
	pthread_mutex_lock(&l->mu);
	l->seq[l->n++] = st == CUDA_SUCCESS ? 2 : -1;
	pthread_mutex_unlock(&l->mu);
}

static void test_streams(void)
{
	size_t nstreams = fakecuda_live_streams();
	CUstream s1, s2;
	OK(cuStreamCreate(&s1, 0));
	OK(cuStreamCreateWithPriority(&s2, CU_STREAM_NON_BLOCKING, -1));
	CHECK(fakecuda_live_streams() == nstreams + 2);
	CK(cuStreamCreate(&s1 + 0 * 0, 0x80), CUDA_ERROR_INVALID_VALUE);

	CUdeviceptr d;
	OK(cuMemAlloc(&d, 1 << 20));
	static char src[1 << 20], dst[1 << 20];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(i * 7);
	memset(dst, 0, sizeof(dst));

	fakecuda_set_stream_delay_us(20000);
	OK(cuMemcpyHtoDAsync(d, src, sizeof(src), s1));
	OK(cuMemcpyDtoHAsync(dst, d, sizeof(dst), s1));
	CK(cuStreamQuery(s1), CUDA_ERROR_NOT_READY);
	CK(cuMemcpyHtoDAsync(d + 1, src, sizeof(src), s1), CUDA_ERROR_INVALID_VALUE);
	OK(cuStreamSynchronize(s1));
	OK(cuStreamQuery(s1));
	CHECK(memcmp(src, dst, sizeof(src)) == 0);

	/* Default stream handles. */
	memset(dst, 0, 100);
	OK(cuMemcpyDtoHAsync(dst, d, 100, CU_STREAM_LEGACY));
	OK(cuStreamSynchronize(NULL));
	CHECK(memcmp(src, dst, 100) == 0);
	OK(cuMemcpyDtoDAsync(d + 100, d, 100, CU_STREAM_PER_THREAD));
	/* Synchronous copy waits for the default stream. */
	OK(cuMemcpyDtoH(dst, d + 100, 100));
	CHECK(memcmp(src, dst, 100) == 0);

	/* Host functions run in order. */
	struct order_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
	OK(cuLaunchHostFunc(s2, host_fn, &log));
	OK(cuStreamAddCallback(s2, host_cb, &log, 0));
	OK(cuLaunchHostFunc(s2, host_fn, &log));
	CK(cuStreamAddCallback(s2, host_cb, &log, 1), CUDA_ERROR_INVALID_VALUE);
	OK(cuStreamSynchronize(s2));
	CHECK(log.n == 3 && log.seq[0] == 1 && log.seq[1] == 2 && log.seq[2] == 1);

	/* Events across streams. */
	CUevent e0, e1;
	OK(cuEventCreate(&e0, 0));
	OK(cuEventCreate(&e1, 0));
	OK(cuEventQuery(e0)); /* never recorded: complete */
	OK(cuEventRecord(e0, s1));
	OK(cuMemcpyHtoDAsync(d, src + 1, 1000, s1));
	OK(cuEventRecord(e1, s1));
	CK(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
	OK(cuStreamWaitEvent(s2, e1, 0));
	OK(cuMemcpyDtoHAsync(dst, d, 1000, s2));
	OK(cuStreamSynchronize(s2));
	CHECK(memcmp(src + 1, dst, 1000) == 0);
	OK(cuEventQuery(e1));
	OK(cuEventSynchronize(e0));
	float ms = -1;
	OK(cuEventElapsedTime(&ms, e0, e1));
	CHECK(ms >= 15.0f);
	OK(cuEventDestroy(e0));
	CK(cuEventQuery(e0), CUDA_ERROR_INVALID_HANDLE);
	/* Destroying an event with a pending record is fine. */
	OK(cuEventRecord(e1, s1));
	OK(cuEventDestroy(e1));
	OK(cuStreamSynchronize(s1));

	/* Stream memops on pinned host memory and on device memory. */
	void *hv;
	OK(cuMemHostAlloc(&hv, 64, 0));
	memset(hv, 0, 64);
	CUdeviceptr hvd = (CUdeviceptr)(uintptr_t)hv;
	fakecuda_set_stream_delay_us(0);
	OK(cuStreamWaitValue32(s1, hvd, 5, CU_STREAM_WAIT_VALUE_GEQ));
	OK(cuStreamWriteValue32(s1, hvd + 4, 77, 0));
	OK(cuStreamWriteValue64(s1, d + 8, 0x1122334455667788ull, 0));
	OK(cuStreamWaitValue64(s1, d + 8, 0x8ull, CU_STREAM_WAIT_VALUE_AND));
	OK(cuStreamWaitValue32(s1, hvd + 4, 77, CU_STREAM_WAIT_VALUE_EQ));
	OK(cuStreamWaitValue32(s1, hvd + 4, 0xffffff00u, CU_STREAM_WAIT_VALUE_NOR));
	usleep(20000);
	CK(cuStreamQuery(s1), CUDA_ERROR_NOT_READY);
	CHECK(__atomic_load_n((uint32_t *)hv + 1, __ATOMIC_ACQUIRE) == 0);
	__atomic_store_n((uint32_t *)hv, 6, __ATOMIC_RELEASE);
	OK(cuStreamSynchronize(s1));
	CHECK(((uint32_t *)hv)[1] == 77);
	uint64_t v64;
	OK(cuMemcpyDtoH(&v64, d + 8, 8));
	CHECK(v64 == 0x1122334455667788ull);
	int plain = 0;
	CK(cuStreamWriteValue32(s1, (CUdeviceptr)(uintptr_t)&plain, 1, 0), CUDA_ERROR_INVALID_VALUE);
	CK(cuStreamWaitValue32(s1, d + 2, 1, 0), CUDA_ERROR_INVALID_VALUE); /* misaligned */
	OK(cuMemFreeHost(hv));

	/* Destroy lets queued work finish. */
	fakecuda_set_stream_delay_us(10000);
	memset(dst, 0, 100);
	OK(cuMemcpyDtoHAsync(dst, d, 100, s2));
	struct order_log log2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
	OK(cuLaunchHostFunc(s2, host_fn, &log2));
	OK(cuStreamDestroy(s2));
	CHECK(fakecuda_live_streams() == nstreams + 1);
	CK(cuStreamSynchronize(s2), CUDA_ERROR_INVALID_HANDLE);
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&log2.mu);
		int n = log2.n;
		pthread_mutex_unlock(&log2.mu);
		if (n)
			break;
		usleep(5000);
	}
	pthread_mutex_lock(&log2.mu);
	CHECK(log2.n == 1);
	pthread_mutex_unlock(&log2.mu);
	CHECK(memcmp(src + 1, dst, 8) == 0); /* bytes 8..15 hold the memop value */
	fakecuda_set_stream_delay_us(0);

	/* Stream-ordered allocator. */
	size_t live = fakecuda_live_device_allocations();
	CUdeviceptr pa;
	OK(cuMemAllocAsync(&pa, 4096, s1));
	CHECK(fakecuda_live_device_allocations() == live + 1);
	CUmemoryPool pool = NULL;
	CUcontext c = NULL;
	OK(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pa));
	CHECK(pool != NULL);
	OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, pa));
	CHECK(c == g_ctx0);
	OK(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d));
	CHECK(pool == NULL);
	OK(cuMemcpyHtoDAsync(pa, src, 4096, s1));
	OK(cuMemFreeAsync(pa, s1));
	CK(cuMemFreeAsync(pa, s1), CUDA_ERROR_INVALID_VALUE);
	OK(cuStreamSynchronize(s1));
	CHECK(fakecuda_live_device_allocations() == live);

	OK(cuMemFree(d));
	OK(cuStreamDestroy(s1));
	CHECK(fakecuda_live_streams() == nstreams);
}

static void test_faults(void)
{
	CUdeviceptr p, q;
	unsigned long base = fakecuda_call_count("cuMemAlloc_v2");
	unsigned long hbase = fakecuda_call_count("cuMemcpyHtoDAsync_v2");
	fakecuda_fail_nth("cuMemAlloc_v2", 2, CUDA_ERROR_OUT_OF_MEMORY);
	OK(cuMemAlloc(&p, 10));
	size_t live = fakecuda_live_device_allocations();
	CK(cuMemAlloc(&q, 10), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(fakecuda_live_device_allocations() == live);
	OK(cuMemAlloc(&q, 10));
	CHECK(fakecuda_call_count("cuMemAlloc_v2") == base + 3);
	OK(cuMemFree(q));
	fakecuda_fail_always("cuMemcpyHtoDAsync_v2", CUDA_ERROR_ILLEGAL_ADDRESS);
	char b[10] = {0};
	CK(cuMemcpyHtoDAsync(p, b, 10, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	CK(cuMemcpyHtoDAsync(p, b, 10, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	fakecuda_fail_nth("cuMemFree_v2", 1, CUDA_ERROR_UNKNOWN);
	fakecuda_fail_nth("cuMemFree_v2", 0, CUDA_SUCCESS);
	fakecuda_reset_faults();
	OK(cuMemcpyHtoDAsync(p, b, 10, NULL));
	OK(cuStreamSynchronize(NULL));
	OK(cuMemFree(p));
	CHECK(fakecuda_call_count("cuMemcpyHtoDAsync_v2") == hbase + 3);
	CHECK(fakecuda_call_count("noSuchFunction") == 0);
	fakecuda_fail_always("cuInit", CUDA_ERROR_UNKNOWN);
	CK(cuInit(0), CUDA_ERROR_UNKNOWN);
	fakecuda_reset_faults();
	int n;
	OK(cuDeviceGetCount(&n));
}

struct worker_arg {
	int idx;
	int errors;
};

static void *stress_worker(void *arg)
{
	struct worker_arg *w = arg;
	if (cuCtxSetCurrent(w->idx % 2 ? g_ctx1 : g_ctx0) != CUDA_SUCCESS) {
		w->errors++;
		return NULL;
	}
	CUstream s;
	if (cuStreamCreate(&s, 0) != CUDA_SUCCESS) {
		w->errors++;
		return NULL;
	}
	char in[4096], out[4096];
	for (int it = 0; it < 50; it++) {
		CUdeviceptr d;
		if (cuMemAlloc(&d, sizeof(in)) != CUDA_SUCCESS) {
			w->errors++;
			break;
		}
		memset(in, w->idx * 31 + it, sizeof(in));
		memset(out, 0, sizeof(out));
		if (cuMemcpyHtoDAsync(d, in, sizeof(in), s) != CUDA_SUCCESS ||
		    cuMemcpyDtoHAsync(out, d, sizeof(out), s) != CUDA_SUCCESS ||
		    cuStreamSynchronize(s) != CUDA_SUCCESS)
			w->errors++;
		if (memcmp(in, out, sizeof(in)) != 0)
			w->errors++;
		unsigned long long id;
		CUpointer_attribute at = CU_POINTER_ATTRIBUTE_BUFFER_ID;
		void *dp = &id;
		if (cuPointerGetAttributes(1, &at, &dp, d) != CUDA_SUCCESS || id == 0)
			w->errors++;
		if (cuMemFree(d) != CUDA_SUCCESS)
			w->errors++;
	}
	if (cuStreamDestroy(s) != CUDA_SUCCESS)
		w->errors++;
	return NULL;
}

static void test_stress(void)
{
	size_t live = fakecuda_live_device_allocations();
	enum { N = 6 };
	pthread_t t[N];
	struct worker_arg w[N];
	for (int i = 0; i < N; i++) {
		w[i].idx = i;
		w[i].errors = 0;
		pthread_create(&t[i], NULL, stress_worker, &w[i]);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].errors == 0);
	}
	CHECK(fakecuda_live_device_allocations() == live);
	CHECK(fakecuda_live_streams() == 0);
}

/* A deferred copy failure: accepted, no byte moves, the stream's next
 * synchronisation (and events recorded after it) report the error once. */
static void test_deferred_faults(void)
{
	CUdeviceptr p;
	CUstream st;
	CUevent ev;
	size_t events = fakecuda_live_events();
	OK(cuMemAlloc(&p, 64));
	OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	CHECK(fakecuda_live_events() == events + 1);
	char a[64], b[64];
	memset(a, 1, sizeof(a));
	OK(cuMemcpyHtoD(p, a, sizeof(a)));
	OK(cuStreamSynchronize(NULL)); /* pageable: landed only now */
	memset(a, 2, sizeof(a));
	fakecuda_fail_nth_deferred("cuMemcpyHtoDAsync_v2", 2, CUDA_ERROR_ECC_UNCORRECTABLE);
	OK(cuMemcpyHtoDAsync(p, a, 32, st));      /* 1st: copies */
	OK(cuMemcpyHtoDAsync(p + 32, a, 32, st)); /* 2nd: accepted, fails later */
	OK(cuEventRecord(ev, st));
	CK(cuEventSynchronize(ev), CUDA_ERROR_ECC_UNCORRECTABLE);
	CK(cuEventQuery(ev), CUDA_ERROR_ECC_UNCORRECTABLE);
	CK(cuStreamSynchronize(st), CUDA_ERROR_ECC_UNCORRECTABLE);
	OK(cuStreamSynchronize(st)); /* reported once */
	OK(cuMemcpyDtoH(b, p, sizeof(b)));
	CHECK(b[0] == 2 && b[31] == 2 && b[32] == 1 && b[63] == 1);
	OK(cuEventRecord(ev, st));
	OK(cuEventSynchronize(ev));
	OK(cuEventDestroy(ev));
	CHECK(fakecuda_live_events() == events);
	OK(cuStreamDestroy(st));
	OK(cuMemFree(p));
}

/* ------------------------------------------------------------------ */
/* The driver lock model                                               */
/* ------------------------------------------------------------------ */

/* A driver call on its own thread, so that one that blocks cannot hang the
 * test: its completion is polled, and the join is bounded. */
struct call {
	pthread_t th;
	CUcontext ctx;
	CUresult (*fn)(void *);
	void *arg;
	CUresult r;
	atomic_int done;
};

static void *call_main(void *p)
{
	struct call *c = p;
	if (cuCtxSetCurrent(c->ctx) != CUDA_SUCCESS)
		c->r = CUDA_ERROR_INVALID_CONTEXT;
	else
		c->r = c->fn(c->arg);
	atomic_store(&c->done, 1);
	return NULL;
}

static void call_start(struct call *c, CUcontext ctx, CUresult (*fn)(void *), void *arg)
{
	c->ctx = ctx;
	c->fn = fn;
	c->arg = arg;
	c->r = CUDA_ERROR_UNKNOWN;
	atomic_init(&c->done, 0);
	if (pthread_create(&c->th, NULL, call_main, c) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		exit(1);
	}
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1)
		;
}

/* Has the call returned within ms milliseconds? */
static bool call_done_within(struct call *c, int ms)
{
	for (int i = 0; i < ms && !atomic_load(&c->done); i++)
		sleep_ms(1);
	return atomic_load(&c->done);
}

static void dump_lock_report(void)
{
	static char rep[1 << 14];
	fakecuda_lock_report(rep, sizeof(rep));
	fputs(rep, stderr);
}

/* Joins within 5 s, or fails the whole test with the lock report: a call
 * still blocked cannot be abandoned safely. */
static CUresult call_join(struct call *c, int line)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	if (pthread_timedjoin_np(c->th, NULL, &dl) != 0) {
		fprintf(stderr, "%s:%d: a call is still blocked after 5 s\n", __FILE__, line);
		dump_lock_report();
		_exit(1);
	}
	return c->r;
}
#define JOIN_OK(c) CK(call_join((c), __LINE__), CUDA_SUCCESS)

static bool report_has(const char *needle)
{
	static char rep[1 << 14];
	fakecuda_lock_report(rep, sizeof(rep));
	bool ok = strstr(rep, needle) != NULL;
	if (!ok)
		fprintf(stderr, "lock report lacks \"%s\":\n%s", needle, rep);
	return ok;
}

static CUresult do_stream_create(void *arg)
{
	return cuStreamCreate(arg, CU_STREAM_NON_BLOCKING);
}

static CUresult do_event_create(void *arg)
{
	return cuEventCreate(arg, CU_EVENT_DISABLE_TIMING);
}

static CUresult do_mem_free(void *arg)
{
	return cuMemFree(*(CUdeviceptr *)arg);
}

struct copy_job {
	CUdeviceptr d;
	const void *h;
	size_t n;
	CUstream s;
	CUevent ev;
};

static CUresult do_copy_record(void *arg)
{
	struct copy_job *j = arg;
	CUresult r = cuMemcpyHtoDAsync(j->d, j->h, j->n, j->s);
	return r == CUDA_SUCCESS ? cuEventRecord(j->ev, j->s) : r;
}

static CUresult do_sync_copy(void *arg)
{
	struct copy_job *j = arg;
	return cuMemcpyHtoD(j->d, j->h, j->n);
}

static void CUDA_CB nop_host_fn(void *arg)
{
	(void)arg;
}

static CUresult do_host_fn(void *arg)
{
	return cuLaunchHostFunc(arg, nop_host_fn, NULL);
}

static CUresult do_host_register(void *arg)
{
	return cuMemHostRegister(arg, 1 << 16, 0);
}

/* A stream of the current context stopped at a wait for *flag >= 1. */
struct blocked_stream {
	volatile uint32_t *flag;
	CUstream s;
};

static void block_stream(struct blocked_stream *b, unsigned stream_flags)
{
	void *fl;
	OK(cuMemHostAlloc(&fl, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
	b->flag = fl;
	*b->flag = 0;
	OK(cuStreamCreate(&b->s, stream_flags));
	OK(cuStreamWaitValue32(b->s, (CUdeviceptr)(uintptr_t)fl, 1, CU_STREAM_WAIT_VALUE_GEQ));
	CK(cuStreamQuery(b->s), CUDA_ERROR_NOT_READY);
}

static void release_stream(struct blocked_stream *b)
{
	__atomic_store_n(b->flag, 1, __ATOMIC_RELEASE);
	OK(cuStreamSynchronize(b->s));
	OK(cuStreamDestroy(b->s));
	OK(cuMemFreeHost((void *)b->flag));
}

/* A waiting writer keeps new readers out; readers share the lock. */
/* A cuMemcpyHtoD from pageable memory returns before its bytes land; they
 * land in order on the legacy stream, and a synchronous copy back waits for
 * them.  From pinned memory it is synchronous. */
static void test_pageable_copy_lands_late(void)
{
	CUdeviceptr p;
	CUstream st;
	char a[64], b[64];
	void *pin;
	OK(cuMemAlloc(&p, 2 * sizeof(a))); /* [0, 64): the late copy; [64, 128): other work */
	OK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	memset(a, 1, sizeof(a));
	OK(cuMemcpyHtoD(p, a, sizeof(a)));
	OK(cuStreamSynchronize(NULL));
	fakecuda_set_pageable_lag_us(1000 * 1000);
	memset(a, 2, sizeof(a));
	OK(cuMemcpyHtoD(p, a, sizeof(a)));
	memset(a, 3, sizeof(a)); /* the staged copy, not the source, lands */
	CK(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
	/* A non-blocking stream is not ordered with it: its copy (of other
	 * bytes: reading the landing bytes now would be a race) is done
	 * while the landing is still pending. */
	OK(cuMemcpyDtoHAsync(b, p + sizeof(a), sizeof(b), st));
	OK(cuStreamSynchronize(st));
	CK(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
	OK(cuMemcpyDtoH(b, p, sizeof(b))); /* ordered behind it */
	CHECK(b[0] == 2 && b[63] == 2);
	OK(cuStreamQuery(NULL));
	OK(cuMemHostAlloc(&pin, sizeof(a), 0));
	memset(pin, 4, sizeof(a));
	OK(cuMemcpyHtoD(p, pin, sizeof(a))); /* pinned: done on return */
	OK(cuStreamQuery(NULL));
	OK(cuMemcpyDtoHAsync(b, p, sizeof(b), st));
	OK(cuStreamSynchronize(st));
	CHECK(b[0] == 4 && b[63] == 4);
	fakecuda_set_pageable_lag_us(1000);
	OK(cuMemFreeHost(pin));
	OK(cuStreamDestroy(st));
	OK(cuMemFree(p));
}

static void test_lock_writer_preference(void)
{
	CUdeviceptr d;
	CUstream l, created = NULL;
	CUevent ev;
	static char h[4096];
	OK(cuMemAlloc(&d, sizeof(h)));
	OK(cuStreamCreate(&l, CU_STREAM_NON_BLOCKING));
	OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	struct copy_job j = {d, h, sizeof(h), l, ev};
	struct call w, r;

	/* This thread holds the read side: another reader gets in. */
	CHECK(fakecuda_lock_take(g_ctx0, 0) == 0);
	CHECK(fakecuda_lock_take(g_ctx0, 0) == -1); /* one side per thread */
	call_start(&r, g_ctx0, do_copy_record, &j);
	CHECK(call_done_within(&r, 2000));
	JOIN_OK(&r);

	/* A writer waits for the reader to leave... */
	call_start(&w, g_ctx0, do_stream_create, &created);
	CHECK(!call_done_within(&w, 150));
	/* ... and while it waits, a new reader does not get in. */
	call_start(&r, g_ctx0, do_copy_record, &j);
	CHECK(!call_done_within(&r, 150));
	CHECK(report_has("fakecuda_lock_take: holds the read side"));
	CHECK(report_has("in cuStreamCreate: waits for the write side"));
	CHECK(report_has("in cuMemcpyHtoDAsync_v2: waits for the read side"));
	/* Calls that take no lock still go through. */
	unsigned mt;
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
	OK(cuEventQuery(ev));
	fakecuda_lock_release();
	JOIN_OK(&w);
	JOIN_OK(&r);
	OK(cuStreamSynchronize(l));
	OK(cuStreamDestroy(created));

	/* Another context's lock is another lock. */
	CHECK(fakecuda_lock_take(g_ctx1, 1) == 0);
	call_start(&w, g_ctx0, do_stream_create, &created);
	CHECK(call_done_within(&w, 2000));
	JOIN_OK(&w);
	fakecuda_lock_release();
	OK(cuStreamDestroy(created));

	OK(cuEventDestroy(ev));
	OK(cuStreamDestroy(l));
	OK(cuMemFree(d));
}

/* cuMemFree waits for a stream blocked in a wait-value holding the write
 * side: a copy and a host-function launch from other threads wait too,
 * until the word is written; then everything completes. */
static void test_lock_free_waits_for_blocked_stream(void)
{
	struct blocked_stream b;
	CUdeviceptr victim, d;
	CUstream l;
	CUevent ev;
	static char h[8192], back[8192];
	memset(h, 0x3c, sizeof(h));
	OK(cuMemAlloc(&victim, 4096));
	OK(cuMemAlloc(&d, 2 * sizeof(h)));
	OK(cuStreamCreate(&l, CU_STREAM_NON_BLOCKING));
	OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	struct copy_job j = {d, h, sizeof(h), l, ev};
	struct copy_job sj = {d + sizeof(h), h, 4096, NULL, NULL}; /* not ordered with j: other bytes */
	struct call f, c, hf, sc;
	block_stream(&b, CU_STREAM_NON_BLOCKING); /* after the creations: they would wait */

	call_start(&f, g_ctx0, do_mem_free, &victim);
	CHECK(!call_done_within(&f, 150));
	call_start(&c, g_ctx0, do_copy_record, &j);
	call_start(&hf, g_ctx0, do_host_fn, l);
	call_start(&sc, g_ctx0, do_sync_copy, &sj);
	CHECK(!call_done_within(&c, 150));
	CHECK(!atomic_load(&hf.done) && !atomic_load(&sc.done));
	CHECK(report_has("in cuMemFree_v2: holds the write side"));
	CHECK(report_has("waits until every stream of its context is idle"));
	CHECK(report_has("at a wait-value 32"));
	/* No lock: pointer queries, context calls, stream and event queries. */
	unsigned mt;
	CUcontext cur;
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
	OK(cuCtxPushCurrent(g_ctx0));
	OK(cuCtxPopCurrent(&cur));
	CK(cuStreamQuery(b.s), CUDA_ERROR_NOT_READY);

	__atomic_store_n(b.flag, 1, __ATOMIC_RELEASE);
	JOIN_OK(&f);
	JOIN_OK(&c);
	JOIN_OK(&hf);
	JOIN_OK(&sc);
	OK(cuEventSynchronize(ev));
	OK(cuMemcpyDtoH(back, d, sizeof(back)));
	CHECK(memcmp(back, h, sizeof(h)) == 0);
	CK(cuMemFree(victim), CUDA_ERROR_INVALID_VALUE); /* freed by the thread */

	/* cuMemFreeHost and cuMemHostUnregister wait the same way. */
	OK(cuStreamWaitValue32(b.s, (CUdeviceptr)(uintptr_t)b.flag, 2, CU_STREAM_WAIT_VALUE_GEQ));
	void *pinned, *reg = aligned_alloc(4096, 1 << 16);
	OK(cuMemHostAlloc(&pinned, 4096, 0));
	OK(cuMemHostRegister(reg, 1 << 16, 0));
	struct call fh, ur;
	call_start(&fh, g_ctx0, cuMemFreeHost, pinned);
	CHECK(!call_done_within(&fh, 150));
	__atomic_store_n(b.flag, 2, __ATOMIC_RELEASE);
	JOIN_OK(&fh);
	OK(cuStreamWaitValue32(b.s, (CUdeviceptr)(uintptr_t)b.flag, 3, CU_STREAM_WAIT_VALUE_GEQ));
	call_start(&ur, g_ctx0, cuMemHostUnregister, reg);
	CHECK(!call_done_within(&ur, 150));
	__atomic_store_n(b.flag, 3, __ATOMIC_RELEASE);
	JOIN_OK(&ur);
	free(reg);

	OK(cuEventDestroy(ev));
	OK(cuStreamDestroy(l));
	OK(cuMemFree(d));
	release_stream(&b);
}

/* cuStreamCreate and cuEventCreate wait while a stream of their context is
 * stopped at a wait-value whose condition does not hold. */
static void test_lock_create_waits_for_blocked_wait(void)
{
	struct blocked_stream b;
	block_stream(&b, CU_STREAM_NON_BLOCKING);
	CUstream s1 = NULL, s2 = NULL;
	CUevent e1 = NULL;
	struct call cs, ce, other;

	call_start(&cs, g_ctx0, do_stream_create, &s1);
	CHECK(!call_done_within(&cs, 150));
	CHECK(report_has("waits while a stream of its context is blocked in a stream wait-value"));
	call_start(&ce, g_ctx0, do_event_create, &e1);
	CHECK(!call_done_within(&ce, 100));
	/* Another context is not concerned. */
	call_start(&other, g_ctx1, do_stream_create, &s2);
	CHECK(call_done_within(&other, 2000));
	JOIN_OK(&other);
	__atomic_store_n(b.flag, 1, __ATOMIC_RELEASE);
	JOIN_OK(&cs);
	JOIN_OK(&ce);
	OK(cuEventDestroy(e1));
	OK(cuStreamDestroy(s1));
	OK(cuStreamDestroy(s2));

	/* A wait whose condition already holds blocks nothing. */
	OK(cuStreamWaitValue32(b.s, (CUdeviceptr)(uintptr_t)b.flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
	OK(cuStreamSynchronize(b.s));
	OK(cuStreamCreate(&s1, 0));
	OK(cuStreamDestroy(s1));
	release_stream(&b);
}

/* A synchronous copy on the legacy stream waits for a blocked blocking
 * stream without holding the lock: a host-function launch (write side)
 * from another thread goes through meanwhile. */
static void test_lock_sync_copy_waits_without_lock(void)
{
	struct blocked_stream b;
	CUdeviceptr d;
	CUstream l;
	static char h[4096];
	OK(cuMemAlloc(&d, sizeof(h)));
	OK(cuStreamCreate(&l, CU_STREAM_NON_BLOCKING));
	block_stream(&b, 0); /* blocking: the legacy stream waits for it */
	struct copy_job sj = {d, h, sizeof(h), NULL, NULL};
	struct call sc, hf;
	call_start(&sc, g_ctx0, do_sync_copy, &sj);
	CHECK(!call_done_within(&sc, 150));
	call_start(&hf, g_ctx0, do_host_fn, l);
	CHECK(call_done_within(&hf, 2000));
	JOIN_OK(&hf);
	__atomic_store_n(b.flag, 1, __ATOMIC_RELEASE);
	JOIN_OK(&sc);
	OK(cuStreamSynchronize(l));
	OK(cuStreamDestroy(l));
	OK(cuMemFree(d));
	release_stream(&b);
}

/* One hardware queue: a stream stopped at a wait holds up later work of
 * other streams; a synchronous copy with pinned memory held up that way
 * keeps the read side, so a host-function launch (write side) waits too.
 * Work queued before the wait, and everything after the release, runs. */
static void test_hwq_stop_holds_other_streams(void)
{
	unsigned old = fakecuda_set_max_connections(1);
	CUdeviceptr d;
	CUstream x;
	void *pin;
	OK(cuMemAlloc(&d, 8192)); /* [0, 4096) for x's copies, [4096, 8192) for the synchronous one */
	OK(cuMemHostAlloc(&pin, 4096, 0));
	OK(cuStreamCreate(&x, CU_STREAM_NON_BLOCKING));
	OK(cuMemcpyHtoDAsync(d, pin, 4096, x)); /* queued before the wait */
	OK(cuStreamSynchronize(x));
	struct blocked_stream b;
	block_stream(&b, CU_STREAM_NON_BLOCKING);
	for (int i = 0; i < 5000 && fakecuda_hwq_stops() == 0; i++)
		sleep_ms(1);
	CHECK(fakecuda_hwq_stops() == 1);
	OK(cuMemcpyHtoDAsync(d, pin, 4096, x)); /* queued after it: held */
	struct copy_job sj = {d + 4096, pin, 4096, NULL, NULL};
	struct call sc, hf;
	call_start(&sc, g_ctx0, do_sync_copy, &sj);
	CHECK(!call_done_within(&sc, 150));
	CK(cuStreamQuery(x), CUDA_ERROR_NOT_READY);
	call_start(&hf, g_ctx0, do_host_fn, x);
	CHECK(!call_done_within(&hf, 150)); /* behind the sync copy's read side */
	CHECK(report_has("synchronous copy with pinned memory"));
	__atomic_store_n(b.flag, 1, __ATOMIC_RELEASE);
	JOIN_OK(&sc);
	JOIN_OK(&hf);
	OK(cuStreamSynchronize(x));
	CHECK(fakecuda_hwq_stops() == 0);
	release_stream(&b);
	OK(cuStreamDestroy(x));
	OK(cuMemFreeHost(pin));
	OK(cuMemFree(d));
	fakecuda_set_max_connections(old);
}

/* FAKECUDA_PIN_SYNCS=1: cuMemHostRegister waits for the streams holding
 * the write side, so a copy from another thread waits too. */
static void test_lock_pin_syncs_under_write_side(void)
{
	struct blocked_stream b;
	CUdeviceptr d;
	CUstream l;
	CUevent ev;
	static char h[4096];
	void *reg = aligned_alloc(4096, 1 << 16);
	OK(cuMemAlloc(&d, sizeof(h)));
	OK(cuStreamCreate(&l, CU_STREAM_NON_BLOCKING));
	OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	block_stream(&b, CU_STREAM_NON_BLOCKING);
	struct copy_job j = {d, h, sizeof(h), l, ev};
	struct call rg, c;
	setenv("FAKECUDA_PIN_SYNCS", "1", 1);
	call_start(&rg, g_ctx0, do_host_register, reg);
	CHECK(!call_done_within(&rg, 150));
	call_start(&c, g_ctx0, do_copy_record, &j);
	CHECK(!call_done_within(&c, 150));
	CHECK(report_has("FAKECUDA_PIN_SYNCS"));
	__atomic_store_n(b.flag, 1, __ATOMIC_RELEASE);
	JOIN_OK(&rg);
	JOIN_OK(&c);
	unsetenv("FAKECUDA_PIN_SYNCS");
	OK(cuMemHostUnregister(reg));
	free(reg);
	OK(cuEventSynchronize(ev));
	OK(cuEventDestroy(ev));
	OK(cuStreamDestroy(l));
	OK(cuMemFree(d));
	release_stream(&b);
}

/* With the model off nothing waits for the blocked stream. */
static void test_lock_model_off(void)
{
	struct blocked_stream b;
	block_stream(&b, CU_STREAM_NON_BLOCKING);
	fakecuda_set_lock_model(0);
	CHECK(fakecuda_lock_take(g_ctx0, 1) == -1);
	CHECK(report_has("lock model: off"));
	CUdeviceptr victim;
	CUstream s1 = NULL;
	CUevent e1 = NULL;
	OK(cuMemAlloc(&victim, 4096));
	struct call cs, ce, f;
	call_start(&cs, g_ctx0, do_stream_create, &s1);
	call_start(&ce, g_ctx0, do_event_create, &e1);
	call_start(&f, g_ctx0, do_mem_free, &victim);
	CHECK(call_done_within(&cs, 2000) && call_done_within(&ce, 2000) && call_done_within(&f, 2000));
	JOIN_OK(&cs);
	JOIN_OK(&ce);
	JOIN_OK(&f);
	CK(cuStreamQuery(b.s), CUDA_ERROR_NOT_READY);
	fakecuda_set_lock_model(1);
	OK(cuEventDestroy(e1));
	OK(cuStreamDestroy(s1));
	release_stream(&b);
}

static void test_lock_model(void)
{
	fakecuda_set_lock_model(1); /* whatever FAKECUDA_LOCK_MODEL says */
	/* Hardware queues off, so that which streams share one does not
	 * decide these cases; test_hwq_stop_holds_other_streams turns them on. */
	unsigned hwq = fakecuda_set_max_connections(0);
	OK(cuCtxSetCurrent(g_ctx0));
	test_lock_writer_preference();
	test_lock_free_waits_for_blocked_stream();
	test_lock_create_waits_for_blocked_wait();
	test_lock_sync_copy_waits_without_lock();
	test_lock_pin_syncs_under_write_side();
	test_lock_model_off();
	fakecuda_set_lock_model(1);
	test_hwq_stop_holds_other_streams();
	fakecuda_set_max_connections(hwq);
	CHECK(report_has("no thread holds or waits for an API lock"));
}

int main(void)
{
	test_init();
	test_devices();
	test_contexts();
	test_device_memory();
	test_segfault();
	test_unknown_memory();
	test_host_memory();
	test_managed();
	test_sync_memops();
	test_vmm();
	test_streams();
	test_faults();
	test_deferred_faults();
	test_pageable_copy_lands_late();
	test_lock_model();
	test_stress();

	CHECK(fakecuda_live_device_allocations() == 0);
	CHECK(fakecuda_live_pinned_allocations() == 0);
	CHECK(fakecuda_live_host_registrations() == 0);
	OK(cuDevicePrimaryCtxRelease(0));
	OK(cuDevicePrimaryCtxRelease(1));
	CK(cuDevicePrimaryCtxRelease(1), CUDA_ERROR_INVALID_CONTEXT);
	if (failures) {
		fprintf(stderr, "fakecuda_selftest: %d failure(s)\n", failures);
		return 1;
	}
	printf("fakecuda_selftest: all passed\n");
	return 0;
}
