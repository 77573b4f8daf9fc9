/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakecuda.h - control interface of the stand-in CUDA driver used by the CPU
 * test suite.  libfakecuda.so exports the CUDA driver entry points the
 * library and the tests use (with the same symbol names as libcuda.so.1) and,
 * in addition, the fakecuda_* functions below, which only tests call.
 *
 * Kernels: cuModuleLoadData/cuModuleGetFunction/cuLaunchKernel run only the
 * project's known kernels (tests/gpu/ptx_kernels.h: ocf_checksum, ocf_spin),
 * in C, in stream order; any other module is CUDA_ERROR_NOT_SUPPORTED.
 *
 * Model: "device memory" lives in a reserved address range that is mapped
 * PROT_NONE, so any direct load or store through a device pointer faults;
 * its contents live in a shadow mapping that only the fake's copy functions
 * touch.  Every allocation gets a fresh buffer ID; freed ranges are reused
 * first-fit, so a free + realloc can return the same address with a new ID.
 */
#ifndef FAKECUDA_H_
#define FAKECUDA_H_

#include <cuda.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of fake GPUs reported by cuDeviceGetCount (default 2, or the value
 * of FAKECUDA_DEVICE_COUNT).  Takes effect at the next cuInit. */
void fakecuda_set_device_count(int n);

/* Fail the nth call (1 = the very next one) of driver function `func`
 * (exact symbol name, e.g. "cuMemcpyHtoDAsync_v2") with `err`; the call
 * does nothing else.  nth = 0 removes the rule. */
void fakecuda_fail_nth(const char *func, unsigned long nth, CUresult err);
/* Deferred failure of an asynchronous copy or memset (cuMemcpyHtoDAsync_v2,
 * cuMemcpyDtoHAsync_v2, cuMemsetD8Async ...): the nth call returns
 * CUDA_SUCCESS and queues the operation, but when the stream reaches it no
 * byte moves and the stream takes the error `err`, the way a copy fails on
 * a GPU.  Events recorded on that stream complete with `err`
 * (cuEventSynchronize/cuEventQuery return it) until a cuStreamSynchronize or
 * a finished cuStreamQuery reports it, which clears it.  nth = 0 removes
 * the rule. */
void fakecuda_fail_nth_deferred(const char *func, unsigned long nth, CUresult err);
/* Fail every call of `func` from now on with `err` (until reset). */
void fakecuda_fail_always(const char *func, CUresult err);
/* Remove all failure rules. */
void fakecuda_reset_faults(void);
/* Calls made to `func` since the process started (failed calls included). */
unsigned long fakecuda_call_count(const char *func);

/* Live device/managed/VMM allocations and their total bytes. */
size_t fakecuda_live_device_allocations(void);
size_t fakecuda_live_device_bytes(void);
/* Live pinned host allocations (cuMemHostAlloc/cuMemAllocHost) and host
 * registrations (cuMemHostRegister) and their bytes. */
size_t fakecuda_live_pinned_allocations(void);
size_t fakecuda_live_pinned_bytes(void);
size_t fakecuda_live_host_registrations(void);
/* Live streams created with cuStreamCreate*. */
size_t fakecuda_live_streams(void);
/* Live events created with cuEventCreate. */
size_t fakecuda_live_events(void);

/* 1 if CU_POINTER_ATTRIBUTE_SYNC_MEMOPS was set on the allocation that
 * contains `ptr`, 0 if not, -1 if ptr is not fake device memory. */
int fakecuda_sync_memops(CUdeviceptr ptr);

/* Direct access to the bytes behind a fake device pointer, for tests that
 * want to poison or inspect device memory without going through a copy.
 * Returns NULL if [ptr, ptr+len) is not inside one live allocation. */
void *fakecuda_shadow(CUdeviceptr ptr, size_t len);

/* Delay, in microseconds, applied by stream workers before each queued
 * operation (default 0, or FAKECUDA_STREAM_DELAY_US).  A library that
 * forgets to synchronise a stream then reads stale data in tests. */
void fakecuda_set_stream_delay_us(unsigned us);
/* The same for one stream only (us < 0: back to the global delay).  Returns
 * 0, or -1 for an unknown stream. */
int fakecuda_set_stream_delay_us_for(CUstream stream, long us);
/* From now on, every stream that a cuMemcpyBatchAsync is queued on gets
 * this delay of its own (us < 0, the default: streams keep theirs), so that
 * grouped copies can be made to land later than single ones. */
void fakecuda_set_batch_stream_delay_us(long us);
/* From now on, every valid cuMemcpyBatchAsync call first calls fn (NULL:
 * none) with its destinations, on the calling thread, and then takes `us`
 * microseconds (0, the default: no delay) before it queues anything: a
 * driver call that other threads can queue up behind. */
void fakecuda_set_batch_call_hook(void (*fn)(const CUdeviceptr *dsts, size_t count));
void fakecuda_set_batch_call_delay_us(long us);

/* How late, in microseconds, the device bytes of a cuMemcpyHtoD from pageable
 * host memory land (default 1000, or FAKECUDA_PAGEABLE_LAG_US).  As in CUDA,
 * the call returns once the source is staged and the bytes land in order on
 * the legacy stream: work on a non-blocking stream, such as a cuFile write
 * issued right after, may still read the old bytes. */
void fakecuda_set_pageable_lag_us(unsigned us);

/* Hardware work queues that streams share, round-robin in creation order
 * (default 8, or FAKECUDA_MAX_CONNECTIONS; 0: none).  While a stream is
 * stopped at an unsatisfied wait-value, work queued after that wait on
 * another stream of the same queue (and GPU) does not start.  Returns the
 * previous count. */
unsigned fakecuda_set_max_connections(unsigned n);
/* How many streams are stopped at an unsatisfied wait-value now (counted
 * while the queue model is on). */
int fakecuda_hwq_stops(void);

/* The driver lock model (fakecuda.c, DESIGN): each context has a
 * writer-preferring reader/writer API lock that calls queuing stream work
 * take for reading and calls creating or freeing resources take for
 * writing, and some of the latter wait under it for the context's streams,
 * as the real driver was seen to.  On unless FAKECUDA_LOCK_MODEL=0; this
 * switches it for calls made from now on (calls already holding or waiting
 * keep what they took).  A wait of the model that lasts
 * FAKECUDA_LOCK_STALL_S seconds (default 10, 0: never) prints the lock
 * report to stderr, once per process. */
void fakecuda_set_lock_model(int on);
/* Writes into buf (NUL-terminated, truncated to len) who holds and who
 * waits for each context's API lock (thread id, entry point, side, how
 * long, what a holder waits for) and every stream that has work not done
 * (what it is at; a stream wait-value with its word and condition).
 * Returns the length of the whole text, as snprintf does.  For a test's
 * watchdog: it gives up on a lock it cannot take within a fraction of a
 * second, so it can be called from a signal handler (best effort). */
size_t fakecuda_lock_report(char *buf, size_t len);
/* Takes the read side (write = 0) or the write side of ctx's API lock on
 * this thread, as a driver call would, until fakecuda_lock_release: for
 * tests that need a thread "inside the driver".  Returns 0, or -1 when the
 * model is off, ctx is NULL or this thread already holds a side. */
int fakecuda_lock_take(CUcontext ctx, int write);
void fakecuda_lock_release(void);

#ifdef __cplusplus
}
#endif

#endif /* FAKECUDA_H_ */
