/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakecuda.c - stand-in CUDA driver (libcuda.so.1) for the CPU test suite.
 *
 * DESIGN
 * - Every exported entry point starts with ENTER(): it counts the call under
 *   the real symbol name (__func__, which is the _v2 name after cuda.h's
 *   macro mapping) and applies the failure-injection rules; then it checks
 *   that cuInit succeeded.
 * - One global mutex (g_mu) protects contexts, the allocation table, the
 *   device address space allocator, VMM handles/reservations and the stream
 *   and event registries.  Bulk copies run outside it.
 * - "Device memory" is a PROT_NONE reservation (direct CPU access faults);
 *   its bytes live in an equally sized PROT_READ|PROT_WRITE shadow at the
 *   same offset.  The range is carved first-fit in 2 MiB units, so a free +
 *   same-size alloc returns the same address (with a new buffer ID).
 * - Host-visible memory (pinned, managed) is plain mmap memory; host
 *   registrations just record a range.  All of these live in one sorted
 *   table of disjoint ranges, looked up by binary search.
 * - Each stream owns a worker thread that executes a FIFO of operations,
 *   sleeping the configured delay before each one.  Streams and events are
 *   refcounted (registry + in-flight operations) so that destroy is
 *   asynchronous, as in the real driver.
 * - Kernels: the fake runs no GPU code.  cuModuleLoadData accepts a PTX
 *   text only if it defines one of the project's known kernels
 *   (tests/gpu/ptx_kernels.h), and cuLaunchKernel runs those on the stream
 *   in C: ocf_checksum (sum of buf[i] * (i % 251 + 1) added to *out) and
 *   ocf_spin (sleeps ns).  Anything else is CUDA_ERROR_NOT_SUPPORTED.
 * - Driver lock model (on unless FAKECUDA_LOCK_MODEL=0 or
 *   fakecuda_set_lock_model(0)).  The real driver serialises calls on a
 *   per-context lock and some calls wait for the device holding it; a
 *   library can deadlock there, and did on an H100 while this fake, with no
 *   such lock, let every test pass.  Modelled:
 *   . Each context has a reader/writer API lock, writer-preferring (a
 *     thread waiting for the write side keeps new readers out), like the
 *     glibc rwlock in the H100 hang stacks (I/O threads in
 *     pthread_rwlock_rdlock under cuMemcpyHtoDAsync, the application in
 *     pthread_rwlock_wrlock under cuLaunchHostFunc).  Own mutex + condvar,
 *     not pthread_rwlock_t, so the preference does not depend on glibc.
 *   . Read side: calls that queue stream work (cuMemcpy*Async,
 *     cuMemsetD8Async, cuEventRecord, cuStreamWaitEvent, cuStreamWaitValue
 *     and WriteValue, cuLaunchKernel, cuMemAllocAsync, cuMemFreeAsync), and
 *     the synchronous cuMemcpy* and cuMemsetD8 while they queue only: they
 *     wait for the legacy stream without it (api_pass) -- except
 *     cuMemcpyHtoD/DtoH with pinned host memory, which hold it until the
 *     copy is done (sync_copy_holding_lock: a hang on an H100).
 *   . Hardware work queues (hwq_enter): a stream stopped at a wait-value
 *     holds up later work of the streams sharing its queue
 *     (FAKECUDA_MAX_CONNECTIONS, 8).
 *   . A cuMemcpyHtoD from pageable memory returns before its bytes land
 *     (FAKECUDA_PAGEABLE_LAG_US).
 *   . Write side: cuLaunchHostFunc, cuStreamAddCallback, cuStreamCreate*,
 *     cuStreamDestroy, cuEventCreate, cuEventDestroy, cuMemAlloc,
 *     cuMemAllocManaged, cuMemFree, cuMemHostAlloc, cuMemAllocHost,
 *     cuMemFreeHost, cuMemHostRegister, cuMemHostUnregister,
 *     cuModuleLoadData, cuModuleUnload, cuMemCreate, cuMemMap, cuMemUnmap.
 *   . No lock: pointer queries, context calls, cuStreamQuery, cuEventQuery,
 *     the synchronisations, device queries (in the probe, pointer queries,
 *     context push/pop and event queries went through while the lock was
 *     held, and the synchronisations waited without keeping anyone out).
 *   . The lock is the stream's context's for calls on a stream (the
 *     current context's on the legacy stream), the allocation's context's
 *     for the frees, else the current context's (none: no lock).
 *   . Waits under the write side: cuMemFree, cuMemFreeHost,
 *     cuMemHostUnregister and cuModuleLoadData until every stream of the
 *     context is idle (wait_streams_idle: tests/gpu/probe_driver_waits.c on
 *     an H100, S=nonblock rows); cuStreamCreate* and cuEventCreate while a
 *     stream of the context is stopped at an unsatisfied wait-value
 *     (wait_while_stream_blocked: two hangs on an H100); cuMemHostRegister's
 *     FAKECUDA_PIN_SYNCS wait (an H200).  cuMemAlloc and cuMemHostAlloc do
 *     not wait (measured).
 *   . Stream workers, the "GPU", never take the lock: device progress never
 *     depends on it.  Host functions run on them as before.
 *   fakecuda_lock_report() lists holders and waiters (thread id, entry
 *   point, side, what a holder waits for) and streams with work not done; a
 *   model wait longer than FAKECUDA_LOCK_STALL_S (10) seconds prints it to
 *   stderr once.  tests/gpu/probe_driver_waits.c linked to this library
 *   reproduces the H100 probe's S=nonblock rows, except that here
 *   cuStreamCreate and cuEventCreate always wait (so does its
 *   copies-on-64-streams case, which creates events).
 */
#define _GNU_SOURCE
#include "fakecuda.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FC_EXPORT __attribute__((visibility("default")))

#define FC_MAX_DEV 16
#define FC_GRAN ((size_t)2 << 20)
#define FC_DEV_TOTAL ((size_t)80 << 30)
#define FC_FILL 0xA5
#define FC_MAX_CTX_STACK 64

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static atomic_int g_cfg_ndev = 2;
static atomic_uint g_delay_us = 0;
static atomic_int g_lock_model = 1; /* the driver lock model (below) is on */
static atomic_uint g_stall_s = 10;  /* report a lock-model wait this long (0: never) */
static atomic_uint g_pageable_lag_us = 1000; /* a pageable cuMemcpyHtoD lands this late */
static atomic_uint g_hwq = 8; /* hardware work queues streams share (0: none) */

static void lk_atfork_prepare(void);
static void lk_atfork_parent(void);
static void lk_atfork_child(void);

static void env_init(void)
{
	const char *s = getenv("FAKECUDA_DEVICE_COUNT");
	if (s && *s)
		atomic_store(&g_cfg_ndev, atoi(s));
	s = getenv("FAKECUDA_STREAM_DELAY_US");
	if (s && *s)
		atomic_store(&g_delay_us, (unsigned)strtoul(s, NULL, 10));
	s = getenv("FAKECUDA_LOCK_MODEL");
	if (s && *s)
		atomic_store(&g_lock_model, *s != '0');
	s = getenv("FAKECUDA_PAGEABLE_LAG_US");
	if (s && *s)
		atomic_store(&g_pageable_lag_us, (unsigned)strtoul(s, NULL, 10));
	s = getenv("FAKECUDA_MAX_CONNECTIONS");
	if (s && *s)
		atomic_store(&g_hwq, (unsigned)strtoul(s, NULL, 10));
	s = getenv("FAKECUDA_LOCK_STALL_S");
	if (s && *s)
		atomic_store(&g_stall_s, (unsigned)strtoul(s, NULL, 10));
	pthread_atfork(lk_atfork_prepare, lk_atfork_parent, lk_atfork_child);
}

FC_EXPORT void fakecuda_set_device_count(int n)
{
	pthread_once(&env_once, env_init);
	atomic_store(&g_cfg_ndev, n);
}

FC_EXPORT unsigned fakecuda_set_max_connections(unsigned n)
{
	pthread_once(&env_once, env_init);
	return atomic_exchange(&g_hwq, n);
}


FC_EXPORT void fakecuda_set_pageable_lag_us(unsigned us)
{
	pthread_once(&env_once, env_init);
	atomic_store(&g_pageable_lag_us, us);
}

FC_EXPORT void fakecuda_set_stream_delay_us(unsigned us)
{
	pthread_once(&env_once, env_init);
	atomic_store(&g_delay_us, us);
}

FC_EXPORT void fakecuda_set_lock_model(int on)
{
	pthread_once(&env_once, env_init);
	atomic_store(&g_lock_model, on != 0);
}

/* ------------------------------------------------------------------ */
/* Call counting and failure injection                                 */
/* ------------------------------------------------------------------ */

#define FC_MAX_FN 256
struct fc_fn {
	char name[64];
	unsigned long calls;
	unsigned long nth_target; /* 0: no rule */
	CUresult nth_err;
	bool always;
	CUresult always_err;
	unsigned long defer_target; /* 0: no deferred rule */
	CUresult defer_err;
};

/* Set by fc_enter when a deferred rule hits this call: the operation the
 * call enqueues is accepted but fails when its stream runs it. */
static __thread CUresult fc_deferred;
/* The entry point this thread is in (its counted name), for the lock report. */
static __thread const char *tls_entry;

static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fc_fn fn_tab[FC_MAX_FN];
static int fn_n;

static struct fc_fn *fn_find_locked(const char *name, bool create)
{
	for (int i = 0; i < fn_n; i++)
		if (strcmp(fn_tab[i].name, name) == 0)
			return &fn_tab[i];
	if (!create || fn_n == FC_MAX_FN)
		return NULL;
	struct fc_fn *f = &fn_tab[fn_n++];
	snprintf(f->name, sizeof(f->name), "%s", name);
	return f;
}

static CUresult fc_enter(struct fc_fn **slot, const char *name)
{
	CUresult r = CUDA_SUCCESS;
	fc_deferred = CUDA_SUCCESS;
	tls_entry = name;
	pthread_mutex_lock(&fault_mu);
	if (!*slot)
		*slot = fn_find_locked(name, true);
	struct fc_fn *f = *slot;
	if (f) {
		f->calls++;
		if (f->nth_target && f->calls == f->nth_target) {
			r = f->nth_err;
			f->nth_target = 0;
		} else if (f->always) {
			r = f->always_err;
		} else if (f->defer_target && f->calls == f->defer_target) {
			fc_deferred = f->defer_err;
			f->defer_target = 0;
		}
	}
	pthread_mutex_unlock(&fault_mu);
	return r;
}

FC_EXPORT void fakecuda_fail_nth(const char *func, unsigned long nth, CUresult err)
{
	pthread_mutex_lock(&fault_mu);
	struct fc_fn *f = fn_find_locked(func, true);
	if (f) {
		f->nth_target = nth ? f->calls + nth : 0;
		f->nth_err = err;
	}
	pthread_mutex_unlock(&fault_mu);
}

FC_EXPORT void fakecuda_fail_nth_deferred(const char *func, unsigned long nth, CUresult err)
{
	pthread_mutex_lock(&fault_mu);
	struct fc_fn *f = fn_find_locked(func, true);
	if (f) {
		f->defer_target = nth ? f->calls + nth : 0;
		f->defer_err = err;
	}
	pthread_mutex_unlock(&fault_mu);
}

FC_EXPORT void fakecuda_fail_always(const char *func, CUresult err)
{
	pthread_mutex_lock(&fault_mu);
	struct fc_fn *f = fn_find_locked(func, true);
	if (f) {
		f->always = err != CUDA_SUCCESS;
		f->always_err = err;
	}
	pthread_mutex_unlock(&fault_mu);
}

FC_EXPORT void fakecuda_reset_faults(void)
{
	pthread_mutex_lock(&fault_mu);
	for (int i = 0; i < fn_n; i++) {
		fn_tab[i].nth_target = 0;
		fn_tab[i].always = false;
		fn_tab[i].defer_target = 0;
	}
	pthread_mutex_unlock(&fault_mu);
}

FC_EXPORT unsigned long fakecuda_call_count(const char *func)
{
	unsigned long n = 0;
	pthread_mutex_lock(&fault_mu);
	struct fc_fn *f = fn_find_locked(func, false);
	if (f)
		n = f->calls;
	pthread_mutex_unlock(&fault_mu);
	return n;
}

static atomic_int g_inited;

#define ENTER_NOINIT()                                                                                       \
	static struct fc_fn *fc_slot_;                                                                       \
	do {                                                                                                 \
		CUresult fc_r_ = fc_enter(&fc_slot_, __func__);                                              \
		if (fc_r_ != CUDA_SUCCESS)                                                                   \
			return fc_r_;                                                                        \
	} while (0)

#define ENTER()                                                                                              \
	ENTER_NOINIT();                                                                                      \
	do {                                                                                                 \
		if (!atomic_load(&g_inited))                                                                 \
			return CUDA_ERROR_NOT_INITIALIZED;                                                   \
	} while (0)

/* ------------------------------------------------------------------ */
/* Global state                                                        */
/* ------------------------------------------------------------------ */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_ndev;

/* A context's API lock (the driver lock model, below); under g_lk_mu. */
struct fc_apilock {
	int readers;	     /* threads holding the read side */
	bool writer;	     /* a thread holds the write side */
	int writers_waiting; /* threads waiting for the write side */
};

struct CUctx_st {
	int device;
	bool primary;
	int refs;	       /* primary: retain count */
	bool alive;	       /* created: not destroyed */
	struct CUctx_st *next; /* list of created contexts (kept forever) */
	struct fc_apilock lk;
	uint64_t legacy_enq; /* legacy stream enqueue count after this context's last op (its mu) */
};

static struct CUctx_st g_primary[FC_MAX_DEV];
static struct CUctx_st *g_created;

/* Fake memory pools: only their addresses matter. */
struct CUmemPoolHandle_st {
	int device;
};
static struct CUmemPoolHandle_st g_pools[FC_MAX_DEV];

static __thread CUcontext tls_stack[FC_MAX_CTX_STACK];
static __thread int tls_depth;

static bool ctx_live_locked(CUcontext c)
{
	if (!c)
		return false;
	return c->primary ? c->refs > 0 : c->alive;
}

/* Is c a context handle this driver handed out (live or not)? */
static bool ctx_known(CUcontext c)
{
	if (c >= &g_primary[0] && c < &g_primary[FC_MAX_DEV])
		return ((uintptr_t)c - (uintptr_t)&g_primary[0]) % sizeof(g_primary[0]) == 0;
	bool found = false;
	pthread_mutex_lock(&g_mu);
	for (struct CUctx_st *x = g_created; x && !found; x = x->next)
		found = x == c;
	pthread_mutex_unlock(&g_mu);
	return found;
}

/* Current context, validated.  Returns CUDA_ERROR_INVALID_CONTEXT if none. */
static CUresult cur_ctx(CUcontext *out)
{
	CUcontext c = tls_depth ? tls_stack[tls_depth - 1] : NULL;
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&g_mu);
	bool ok = ctx_live_locked(c);
	pthread_mutex_unlock(&g_mu);
	if (!ok)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = c;
	return CUDA_SUCCESS;
}

#define NEED_CTX(var)                                                                                        \
	CUcontext var;                                                                                       \
	do {                                                                                                 \
		CUresult nc_r_ = cur_ctx(&var);                                                              \
		if (nc_r_ != CUDA_SUCCESS)                                                                   \
			return nc_r_;                                                                        \
	} while (0)

/* The current context for the lock model, NULL if none (no lock then). */
static CUcontext cur_ctx_or_null(void)
{
	CUcontext c = NULL;
	return cur_ctx(&c) == CUDA_SUCCESS ? c : NULL;
}

static bool dev_valid(CUdevice d)
{
	return d >= 0 && d < atomic_load(&g_ndev);
}

/* ------------------------------------------------------------------ */
/* Driver lock model: the per-context API lock                         */
/* ------------------------------------------------------------------ */

/* See DESIGN.  g_lk_mu protects every context's fc_apilock and the list of
 * lock records; g_lk_cv is broadcast whenever a side is released.  Stream
 * workers (the "GPU") never come here. */
static pthread_mutex_t g_lk_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_lk_cv = PTHREAD_COND_INITIALIZER;

enum lk_mode { LK_READ, LK_WRITE };

/* What one thread does with an API lock: one per thread, linked into
 * g_lk_recs while it waits for or holds a side (ctx != NULL), written only
 * under g_lk_mu from then on.  A call holds at most one side of one lock. */
struct lk_rec {
	struct lk_rec *next, *prev;
	pid_t tid;
	const char *entry; /* the entry point */
	CUcontext ctx;
	enum lk_mode mode;
	bool holding;	       /* false: waiting for the side */
	struct timespec since; /* when it started waiting, or took the side */
	const char *doing;     /* holding: what it waits for meanwhile, or NULL */
	struct timespec doing_since;
};
static struct lk_rec *g_lk_recs;
static __thread struct lk_rec tls_lk;

static struct timespec mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t;
}

static double secs_since(const struct timespec *t)
{
	struct timespec n = mono_now();
	return (double)(n.tv_sec - t->tv_sec) + (double)(n.tv_nsec - t->tv_nsec) / 1e9;
}

/* A wait of the model that lasts FAKECUDA_LOCK_STALL_S seconds (10 by
 * default) prints the lock report to stderr, once per process, so a test
 * that hangs in the model says where even without a watchdog of its own.
 * Callers hold no lock of the fake. */
static atomic_int g_stall_reported;

static bool stall_due(const struct timespec *since)
{
	unsigned lim = atomic_load(&g_stall_s);
	return lim && !atomic_load(&g_stall_reported) && secs_since(since) >= lim;
}

static void stall_report(void)
{
	static char buf[1 << 16];
	if (atomic_exchange(&g_stall_reported, 1))
		return;
	fakecuda_lock_report(buf, sizeof(buf));
	dprintf(2,
		"fakecuda: a call has waited %u s in the driver lock model (off: FAKECUDA_LOCK_MODEL=0)\n%s",
		atomic_load(&g_stall_s), buf);
}

static void lk_link(struct lk_rec *r)
{
	r->prev = NULL;
	r->next = g_lk_recs;
	if (g_lk_recs)
		g_lk_recs->prev = r;
	g_lk_recs = r;
}

static void lk_unlink(struct lk_rec *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		g_lk_recs = r->next;
	if (r->next)
		r->next->prev = r->prev;
}

/* Takes one side of c's API lock for the rest of the call (api_unlock).
 * Writer-preferring, like the driver's: a thread waiting for the write side
 * keeps new readers out.  Nothing when the model is off or c is NULL. */
static void api_lock(CUcontext c, enum lk_mode m)
{
	if (!c || !atomic_load(&g_lock_model))
		return;
	struct lk_rec *r = &tls_lk;
	if (r->ctx) {
		fprintf(stderr, "fakecuda: %s takes the API lock again (held by %s)\n", tls_entry, r->entry);
		abort();
	}
	struct fc_apilock *l = &c->lk;
	pthread_mutex_lock(&g_lk_mu);
	r->tid = (pid_t)syscall(SYS_gettid);
	r->entry = tls_entry;
	r->ctx = c;
	r->mode = m;
	r->holding = false;
	r->doing = NULL;
	r->since = mono_now();
	lk_link(r);
	if (m == LK_WRITE)
		l->writers_waiting++;
	while (l->writer || (m == LK_READ ? l->writers_waiting > 0 : l->readers > 0)) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 1;
		pthread_cond_timedwait(&g_lk_cv, &g_lk_mu, &dl);
		if (stall_due(&r->since)) {
			pthread_mutex_unlock(&g_lk_mu);
			stall_report();
			pthread_mutex_lock(&g_lk_mu);
		}
	}
	if (m == LK_WRITE) {
		l->writers_waiting--;
		l->writer = true;
	} else {
		l->readers++;
	}
	r->holding = true;
	r->since = mono_now();
	pthread_mutex_unlock(&g_lk_mu);
}

/* Releases what api_lock took (nothing if it took nothing). */
static void api_unlock(void)
{
	struct lk_rec *r = &tls_lk;
	if (!r->ctx)
		return;
	pthread_mutex_lock(&g_lk_mu);
	if (r->mode == LK_WRITE)
		r->ctx->lk.writer = false;
	else
		r->ctx->lk.readers--;
	lk_unlink(r);
	r->ctx = NULL;
	pthread_cond_broadcast(&g_lk_cv);
	pthread_mutex_unlock(&g_lk_mu);
}

/* The read side for a moment: a synchronous call queues its work under it
 * and waits for its stream without it. */
static void api_pass(CUcontext c)
{
	api_lock(c, LK_READ);
	api_unlock();
}

/* Does this call hold the write side (so the model is on for it)? */
static bool api_write_held(void)
{
	return tls_lk.ctx && tls_lk.mode == LK_WRITE;
}

FC_EXPORT int fakecuda_lock_take(CUcontext ctx, int write)
{
	if (!ctx || !atomic_load(&g_lock_model) || tls_lk.ctx)
		return -1;
	tls_entry = "fakecuda_lock_take";
	api_lock(ctx, write ? LK_WRITE : LK_READ);
	return 0;
}

FC_EXPORT void fakecuda_lock_release(void)
{
	api_unlock();
}

/* For the report: what the write side's holder waits for (NULL: nothing). */
static void lk_doing(const char *what)
{
	pthread_mutex_lock(&g_lk_mu);
	tls_lk.doing = what;
	tls_lk.doing_since = mono_now();
	pthread_mutex_unlock(&g_lk_mu);
}

/* fork: the child has only the forking thread, which holds no API lock. */
static void lk_atfork_prepare(void)
{
	pthread_mutex_lock(&g_lk_mu);
}

static void lk_atfork_parent(void)
{
	pthread_mutex_unlock(&g_lk_mu);
}

static void lk_atfork_child(void)
{
	static const pthread_cond_t fresh = PTHREAD_COND_INITIALIZER;
	for (int i = 0; i < FC_MAX_DEV; i++)
		memset(&g_primary[i].lk, 0, sizeof(g_primary[i].lk));
	for (struct CUctx_st *c = g_created; c; c = c->next)
		memset(&c->lk, 0, sizeof(c->lk));
	g_lk_recs = NULL;
	tls_lk.ctx = NULL;
	g_lk_cv = fresh;
	pthread_mutex_unlock(&g_lk_mu);
}

/* ------------------------------------------------------------------ */
/* Device address space                                                */
/* ------------------------------------------------------------------ */

static uintptr_t g_dev_base;
static char *g_shadow;
static size_t g_va_size;

struct ext {
	uintptr_t start;
	size_t len;
};
static struct ext *g_free;
static size_t g_nfree, g_capfree;

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fprintf(stderr, "fakecuda: out of memory\n");
		abort();
	}
	return q;
}

static bool va_init_locked(void)
{
	if (g_dev_base)
		return true;
	size_t gib = 256;
	const char *s = getenv("FAKECUDA_VA_GIB");
	if (s && *s && atol(s) > 0)
		gib = (size_t)atol(s);
	size_t size = gib << 30;
	/* Over-reserve so the device base can be aligned to FC_GRAN. */
	void *d = mmap(NULL, size + FC_GRAN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (d == MAP_FAILED)
		return false;
	void *sh =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh == MAP_FAILED) {
		munmap(d, size + FC_GRAN);
		return false;
	}
	uintptr_t base = ((uintptr_t)d + FC_GRAN - 1) & ~(FC_GRAN - 1);
	g_dev_base = base;
	g_shadow = sh;
	g_va_size = size;
	g_capfree = 16;
	g_free = xrealloc(NULL, g_capfree * sizeof(*g_free));
	g_free[0].start = base;
	g_free[0].len = size;
	g_nfree = 1;
	return true;
}

static bool in_va(uintptr_t p)
{
	return g_dev_base && p >= g_dev_base && p - g_dev_base < g_va_size;
}

static void *shadow_of(uintptr_t p)
{
	return g_shadow + (p - g_dev_base);
}

static void ext_insert(size_t i, struct ext e)
{
	if (g_nfree == g_capfree) {
		g_capfree *= 2;
		g_free = xrealloc(g_free, g_capfree * sizeof(*g_free));
	}
	memmove(&g_free[i + 1], &g_free[i], (g_nfree - i) * sizeof(*g_free));
	g_free[i] = e;
	g_nfree++;
}

static void ext_remove(size_t i)
{
	memmove(&g_free[i], &g_free[i + 1], (g_nfree - i - 1) * sizeof(*g_free));
	g_nfree--;
}

static void ext_carve(size_t i, uintptr_t s, size_t len)
{
	struct ext e = g_free[i];
	size_t left = s - e.start;
	size_t right = e.start + e.len - (s + len);
	if (left && right) {
		g_free[i].len = left;
		ext_insert(i + 1, (struct ext){s + len, right});
	} else if (left) {
		g_free[i].len = left;
	} else if (right) {
		g_free[i].start = s + len;
		g_free[i].len = right;
	} else {
		ext_remove(i);
	}
}

/* len and align are multiples of FC_GRAN.  hint: preferred address or 0. */
static int va_alloc_locked(size_t len, size_t align, uintptr_t hint, uintptr_t *out)
{
	if (!va_init_locked())
		return -1;
	if (align < FC_GRAN)
		align = FC_GRAN;
	if (hint && hint % align == 0) {
		for (size_t i = 0; i < g_nfree; i++) {
			struct ext e = g_free[i];
			if (hint >= e.start && hint + len <= e.start + e.len && hint + len > hint) {
				ext_carve(i, hint, len);
				*out = hint;
				return 0;
			}
		}
	}
	for (size_t i = 0; i < g_nfree; i++) {
		struct ext e = g_free[i];
		uintptr_t s = (e.start + align - 1) & ~(uintptr_t)(align - 1);
		if (s >= e.start && s + len <= e.start + e.len) {
			ext_carve(i, s, len);
			*out = s;
			return 0;
		}
	}
	return -1;
}

static void va_free_locked(uintptr_t s, size_t len)
{
	size_t i = 0;
	while (i < g_nfree && g_free[i].start < s)
		i++;
	bool merge_prev = i > 0 && g_free[i - 1].start + g_free[i - 1].len == s;
	bool merge_next = i < g_nfree && s + len == g_free[i].start;
	if (merge_prev && merge_next) {
		g_free[i - 1].len += len + g_free[i].len;
		ext_remove(i);
	} else if (merge_prev) {
		g_free[i - 1].len += len;
	} else if (merge_next) {
		g_free[i].start = s;
		g_free[i].len += len;
	} else {
		ext_insert(i, (struct ext){s, len});
	}
}

/* ------------------------------------------------------------------ */
/* Allocation table                                                    */
/* ------------------------------------------------------------------ */

enum fc_kind { FK_DEVICE, FK_POOL, FK_MANAGED, FK_VMM, FK_PINNED, FK_REGISTERED };

struct fc_handle {
	unsigned long long value;
	size_t size;
	int device;
	unsigned handle_types;
	int refs; /* 1 until released + 1 per mapping */
	bool released;
	struct fc_handle *next;
};

struct fc_resv {
	uintptr_t start;
	size_t size;
	struct fc_resv *next;
};

struct fc_alloc {
	uintptr_t start;
	size_t size; /* as requested (bounds of valid access) */
	size_t span; /* VA or mmap bytes held */
	enum fc_kind kind;
	CUcontext ctx;
	int device;
	unsigned long long id;
	unsigned sync_memops;
	unsigned access;
	bool free_pending;
	struct fc_handle *handle;
	struct fc_slab *slab; /* a small cuMemAlloc block: the slab it shares */
};

/* Small cuMemAlloc blocks share 2 MiB slabs, back to back, the way the real
 * driver sub-allocates them (on an H100 two 64 KiB allocations came out
 * 64 KiB apart).  The driver refuses a copy that spans two allocations, even
 * adjacent ones, and so does dev_range() here: a library that merged the
 * copies of neighbouring buffers failed on the GPU, and would pass here with
 * every allocation on its own 2 MiB boundary.  A slab is bump-allocated and
 * returned when its last block is freed.  FAKECUDA_SUBALLOC=0: every
 * allocation gets its own 2 MiB-aligned range. */
#define FC_SUB_ALIGN ((size_t)512)
struct fc_slab {
	uintptr_t start;
	size_t used; /* bytes handed out from start */
	int live;    /* blocks not freed yet */
	CUcontext ctx;
	int device;
	struct fc_slab *next;
};
static struct fc_slab *g_slabs;

static struct fc_alloc **g_tab;
static size_t g_ntab, g_captab;
static unsigned long long g_next_id = 1;
static size_t g_dev_used[FC_MAX_DEV];
static struct fc_handle *g_handles;
static struct fc_resv *g_resvs;
static unsigned long long g_next_handle = 0x1000;

static size_t tab_upper(uintptr_t a)
{
	size_t lo = 0, hi = g_ntab;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (g_tab[mid]->start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First index whose start is >= a. */
static size_t tab_lower(uintptr_t a)
{
	size_t lo = 0, hi = g_ntab;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (g_tab[mid]->start < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct fc_alloc *tab_find(uintptr_t a)
{
	size_t i = tab_upper(a);
	if (i == 0)
		return NULL;
	struct fc_alloc *x = g_tab[i - 1];
	return a - x->start < x->size ? x : NULL;
}

static bool tab_overlaps(uintptr_t s, size_t n)
{
	size_t i = tab_upper(s + n - 1);
	if (i == 0)
		return false;
	struct fc_alloc *x = g_tab[i - 1];
	return x->start + x->size > s;
}

static void tab_insert(struct fc_alloc *a)
{
	if (g_ntab == g_captab) {
		g_captab = g_captab ? g_captab * 2 : 64;
		g_tab = xrealloc(g_tab, g_captab * sizeof(*g_tab));
	}
	size_t i = tab_upper(a->start);
	memmove(&g_tab[i + 1], &g_tab[i], (g_ntab - i) * sizeof(*g_tab));
	g_tab[i] = a;
	g_ntab++;
}

static void tab_remove(struct fc_alloc *a)
{
	size_t i = tab_upper(a->start);
	if (i == 0 || g_tab[i - 1] != a)
		abort();
	i--;
	memmove(&g_tab[i], &g_tab[i + 1], (g_ntab - i - 1) * sizeof(*g_tab));
	g_ntab--;
}

static struct fc_alloc *alloc_new_locked(uintptr_t start, size_t size, size_t span, enum fc_kind kind,
					 CUcontext ctx, int dev)
{
	struct fc_alloc *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->start = start;
	a->size = size;
	a->span = span;
	a->kind = kind;
	a->ctx = ctx;
	a->device = dev;
	a->id = g_next_id++;
	a->access = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
	tab_insert(a);
	return a;
}

static bool is_va_kind(enum fc_kind k)
{
	return k == FK_DEVICE || k == FK_POOL || k == FK_VMM;
}

static void handle_put_locked(struct fc_handle *h)
{
	if (--h->refs > 0)
		return;
	g_dev_used[h->device] -= h->size;
	for (struct fc_handle **pp = &g_handles; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	}
	free(h);
}

/* A block of slab sl was freed; the slab goes back with its last block. */
static void slab_put_locked(struct fc_slab *sl)
{
	if (--sl->live > 0)
		return;
	for (struct fc_slab **pp = &g_slabs; *pp; pp = &(*pp)->next)
		if (*pp == sl) {
			*pp = sl->next;
			break;
		}
	madvise(shadow_of(sl->start), FC_GRAN, MADV_DONTNEED);
	va_free_locked(sl->start, FC_GRAN);
	g_dev_used[sl->device] -= FC_GRAN;
	free(sl);
}

/* A small block of `len` bytes (a multiple of FC_SUB_ALIGN) in a slab of
 * context ctx: *out and its slab, or -1 when memory ran out. */
static int slab_alloc_locked(size_t len, CUcontext ctx, int dev, uintptr_t *out, struct fc_slab **slab)
{
	struct fc_slab *sl;
	for (sl = g_slabs; sl; sl = sl->next)
		if (sl->ctx == ctx && sl->device == dev && FC_GRAN - sl->used >= len)
			break;
	if (!sl) {
		uintptr_t p;
		if (g_dev_used[dev] + FC_GRAN > FC_DEV_TOTAL || va_alloc_locked(FC_GRAN, FC_GRAN, 0, &p) != 0)
			return -1;
		sl = calloc(1, sizeof(*sl));
		if (!sl) {
			va_free_locked(p, FC_GRAN);
			return -1;
		}
		*sl = (struct fc_slab){.start = p, .ctx = ctx, .device = dev, .next = g_slabs};
		g_slabs = sl;
		g_dev_used[dev] += FC_GRAN;
	}
	*out = sl->start + sl->used;
	sl->used += len;
	sl->live++;
	*slab = sl;
	return 0;
}

static bool suballoc_on(void)
{
	const char *e = getenv("FAKECUDA_SUBALLOC");
	return !(e && *e == '0');
}

/* Removes a from the table and releases its backing. */
static void alloc_destroy_locked(struct fc_alloc *a)
{
	tab_remove(a);
	switch (a->kind) {
	case FK_DEVICE:
	case FK_POOL:
		if (a->slab) {
			slab_put_locked(a->slab);
			break;
		}
		madvise(shadow_of(a->start), a->span, MADV_DONTNEED);
		va_free_locked(a->start, a->span);
		g_dev_used[a->device] -= a->span;
		break;
	case FK_VMM:
		madvise(shadow_of(a->start), a->span, MADV_DONTNEED);
		handle_put_locked(a->handle);
		break;
	case FK_MANAGED:
	case FK_PINNED:
		munmap((void *)a->start, a->span);
		break;
	case FK_REGISTERED:
		break;
	}
	free(a);
}

/* Frees everything a context owned (context destroy / primary reset). */
static void ctx_free_allocs_locked(CUcontext c)
{
	size_t i = 0;
	while (i < g_ntab) {
		struct fc_alloc *a = g_tab[i];
		if (a->ctx == c && a->kind != FK_VMM)
			alloc_destroy_locked(a);
		else
			i++;
	}
}

/* Translate a device-side range to CPU-accessible bytes.  The range must lie
 * inside one live allocation. */
static CUresult dev_range(CUdeviceptr p, size_t n, void **out)
{
	uintptr_t a = (uintptr_t)p;
	if (!a || a + n < a)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *x = tab_find(a);
	if (x && a + n <= x->start + x->size) {
		*out = is_va_kind(x->kind) ? shadow_of(a) : (void *)a;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

/* Unified-address range: a live allocation, or plain host memory. */
static CUresult any_range(CUdeviceptr p, size_t n, void **out)
{
	uintptr_t a = (uintptr_t)p;
	if (!a || a + n < a)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *x = tab_find(a);
	if (x) {
		if (a + n <= x->start + x->size)
			*out = is_va_kind(x->kind) ? shadow_of(a) : (void *)a;
		else
			r = CUDA_ERROR_INVALID_VALUE;
	} else if (in_va(a) || (n && tab_overlaps(a, n))) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		*out = (void *)a;
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

static size_t round_up(size_t n, size_t g)
{
	return (n + g - 1) / g * g;
}

/* ------------------------------------------------------------------ */
/* Leak accounting                                                     */
/* ------------------------------------------------------------------ */

static size_t count_kind(unsigned mask, bool bytes)
{
	size_t n = 0;
	pthread_mutex_lock(&g_mu);
	for (size_t i = 0; i < g_ntab; i++) {
		struct fc_alloc *a = g_tab[i];
		if (mask & (1u << a->kind))
			n += bytes ? a->size : 1;
	}
	if (mask & (1u << FK_VMM)) {
		/* VMM memory is accounted per physical handle, not per mapping. */
		for (size_t i = 0; i < g_ntab; i++)
			if (g_tab[i]->kind == FK_VMM)
				n -= bytes ? g_tab[i]->size : 1;
		for (struct fc_handle *h = g_handles; h; h = h->next)
			n += bytes ? h->size : 1;
	}
	pthread_mutex_unlock(&g_mu);
	return n;
}

#define DEV_MASK ((1u << FK_DEVICE) | (1u << FK_POOL) | (1u << FK_MANAGED) | (1u << FK_VMM))

FC_EXPORT size_t fakecuda_live_device_allocations(void)
{
	return count_kind(DEV_MASK, false);
}

FC_EXPORT size_t fakecuda_live_device_bytes(void)
{
	return count_kind(DEV_MASK, true);
}

FC_EXPORT size_t fakecuda_live_pinned_allocations(void)
{
	return count_kind(1u << FK_PINNED, false);
}

FC_EXPORT size_t fakecuda_live_pinned_bytes(void)
{
	return count_kind(1u << FK_PINNED, true);
}

FC_EXPORT size_t fakecuda_live_host_registrations(void)
{
	return count_kind(1u << FK_REGISTERED, false);
}

FC_EXPORT int fakecuda_sync_memops(CUdeviceptr ptr)
{
	int r = -1;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)ptr);
	if (a && (DEV_MASK & (1u << a->kind)))
		r = a->sync_memops ? 1 : 0;
	pthread_mutex_unlock(&g_mu);
	return r;
}

FC_EXPORT void *fakecuda_shadow(CUdeviceptr ptr, size_t len)
{
	void *p = NULL;
	if (dev_range(ptr, len ? len : 1, &p) != CUDA_SUCCESS)
		return NULL;
	return p;
}

/* ------------------------------------------------------------------ */
/* Init, version, errors                                               */
/* ------------------------------------------------------------------ */

static pthread_once_t primary_once = PTHREAD_ONCE_INIT;

static void primary_init(void)
{
	pthread_mutex_lock(&g_mu);
	for (int i = 0; i < FC_MAX_DEV; i++) {
		g_primary[i].device = i;
		g_primary[i].primary = true;
		g_pools[i].device = i;
	}
	pthread_mutex_unlock(&g_mu);
}

FC_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags)
{
	ENTER_NOINIT();
	pthread_once(&env_once, env_init);
	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	int n = atomic_load(&g_cfg_ndev);
	if (n < 0)
		n = 0;
	if (n > FC_MAX_DEV)
		n = FC_MAX_DEV;
	/* The primaries' constant fields are set once: a later cuInit on one
	 * thread must not rewrite what another thread's cuMemAlloc reads. */
	pthread_once(&primary_once, primary_init);
	pthread_mutex_lock(&g_mu);
	atomic_store(&g_ndev, n);
	atomic_store(&g_inited, n > 0);
	pthread_mutex_unlock(&g_mu);
	return n > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

FC_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	ENTER_NOINIT();
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = 13000;
	return CUDA_SUCCESS;
}

struct fc_err {
	CUresult code;
	const char *name;
	const char *desc;
};

#define E(c, d)                                                                                              \
	{                                                                                                    \
		c, #c, d                                                                                     \
	}
static const struct fc_err fc_errs[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"),
    E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    E(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    E(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    E(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    E(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    E(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    E(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    E(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array"),
    E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer"),
    E(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
    E(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"),
    E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread"),
    E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"),
    E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"),
    E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution"),
    E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
    E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
    E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    E(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    E(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
      "part or all of the requested memory range is already mapped"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"),
    E(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    E(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

static const struct fc_err *err_find(CUresult e)
{
	for (size_t i = 0; i < sizeof(fc_errs) / sizeof(fc_errs[0]); i++)
		if (fc_errs[i].code == e)
			return &fc_errs[i];
	return NULL;
}

FC_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	ENTER_NOINIT();
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	const struct fc_err *e = err_find(error);
	*pStr = e ? e->desc : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
	ENTER_NOINIT();
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	const struct fc_err *e = err_find(error);
	*pStr = e ? e->name : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

FC_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	ENTER();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = atomic_load(&g_ndev);
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	ENTER();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dev_valid(ordinal))
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	ENTER();
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dev_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if ((int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	int v = 0;
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		v = 9;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		v = dev + 1;
		break;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING:
		v = 100;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		v = 132;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		v = 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		v = 32;
		break;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
		v = 2;
		break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
		v = 5120;
		break;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
		v = 50 << 20;
		break;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
		v = 1980000;
		break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
		v = 2619000;
		break;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
		v = 65536;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		v = 49152;
		break;
	default:
		v = 0;
		break;
	}
	*pi = v;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	ENTER();
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dev_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "Fake GPU %d", dev);
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	ENTER();
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dev_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	static const char tmpl[16] = {'f',  'a',  'k',	'e',  'c',  'u',  'd',	'a',
				      0x5a, 0x17, 0x42, 0x00, 0x00, 0x00, 0x00, 0x00};
	memcpy(uuid->bytes, tmpl, 16);
	uuid->bytes[15] = (char)dev;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	ENTER();
	if (!pciBusId || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dev_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", dev + 1);
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Contexts                                                            */
/* ------------------------------------------------------------------ */

FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	ENTER();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dev_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_mu);
	g_primary[dev].refs++;
	pthread_mutex_unlock(&g_mu);
	*pctx = &g_primary[dev];
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	ENTER();
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dev_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_mu);
	*active = g_primary[dev].refs > 0;
	pthread_mutex_unlock(&g_mu);
	*flags = 0;
	return CUDA_SUCCESS;
}

static void ctx_kill_objects(CUcontext c);

/* The last release destroys the primary context: its memory, streams and
 * events die with it, and later calls on them fail (a new retain makes a
 * fresh context with none of them). */
FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	ENTER();
	if (!dev_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	CUresult r = CUDA_SUCCESS;
	bool dead = false;
	pthread_mutex_lock(&g_mu);
	if (g_primary[dev].refs <= 0)
		r = CUDA_ERROR_INVALID_CONTEXT;
	else if (--g_primary[dev].refs == 0) {
		ctx_free_allocs_locked(&g_primary[dev]);
		dead = true;
	}
	pthread_mutex_unlock(&g_mu);
	if (dead)
		ctx_kill_objects(&g_primary[dev]);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
				       CUdevice dev)
{
	ENTER();
	(void)params;
	(void)flags;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!dev_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (tls_depth == FC_MAX_CTX_STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	struct CUctx_st *c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->device = dev;
	c->alive = true;
	pthread_mutex_lock(&g_mu);
	c->next = g_created;
	g_created = c;
	pthread_mutex_unlock(&g_mu);
	tls_stack[tls_depth++] = c;
	*pctx = c;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	ENTER();
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	bool known = false;
	for (struct CUctx_st *c = g_created; c; c = c->next)
		if (c == ctx)
			known = true;
	if (!known || !ctx->alive) {
		pthread_mutex_unlock(&g_mu);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	ctx->alive = false;
	ctx_free_allocs_locked(ctx);
	pthread_mutex_unlock(&g_mu);
	ctx_kill_objects(ctx);
	/* Drop it from this thread's stack (other threads see it as dead). */
	for (int i = 0; i < tls_depth; i++) {
		if (tls_stack[i] == ctx) {
			memmove(&tls_stack[i], &tls_stack[i + 1],
				(size_t)(tls_depth - i - 1) * sizeof(tls_stack[0]));
			tls_depth--;
			i--;
		}
	}
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	ENTER();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = tls_depth ? tls_stack[tls_depth - 1] : NULL;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	ENTER();
	if (!ctx) {
		if (tls_depth)
			tls_depth--;
		return CUDA_SUCCESS;
	}
	if (!ctx_known(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (tls_depth)
		tls_stack[tls_depth - 1] = ctx;
	else
		tls_stack[tls_depth++] = ctx;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
	ENTER();
	if (!ctx || !ctx_known(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (tls_depth == FC_MAX_CTX_STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	tls_stack[tls_depth++] = ctx;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
	ENTER();
	if (!tls_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	CUcontext c = tls_stack[--tls_depth];
	if (pctx)
		*pctx = c;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
	ENTER();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	NEED_CTX(c);
	*device = c->device;
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Streams and events                                                  */
/* ------------------------------------------------------------------ */

enum op_kind {
	OP_COPY,
	OP_MEMSET,
	OP_HOSTFN,
	OP_CALLBACK,
	OP_WAIT32,
	OP_WAIT64,
	OP_WRITE32,
	OP_WRITE64,
	OP_EVREC,
	OP_EVWAIT,
	OP_FREE,
	OP_STREAMWAIT, /* implicit synchronisation with another stream (ud, gen) */
	OP_CHECKSUM,   /* emulated kernel ocf_checksum(src, n, dst) */
	OP_SPIN,       /* emulated kernel ocf_spin(val ns) */
	OP_STAGED,     /* a pageable cuMemcpyHtoD landing: sleeps val us, copies, frees src */
};

struct fc_op {
	struct fc_op *next;
	enum op_kind kind;
	void *dst;
	const void *src;
	size_t n;
	CUhostFn fn;
	CUstreamCallback cb;
	void *ud;
	uint64_t val;
	unsigned flags;
	CUevent ev;
	uint64_t gen;
	CUdeviceptr ptr;
	CUresult fail; /* a deferred failure: the copy does not happen */
	CUcontext ctx; /* the context it was queued in (the legacy stream serves them all) */
	uint64_t gseq; /* order of queuing among all streams (g_order_mu) */
};

struct CUstream_st {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fc_op *head, *tail;
	uint64_t enq, done;
	bool dying;
	bool is_default;
	long delay_us; /* this stream's delay before each operation; < 0: the global one */
	CUresult err; /* a failed operation's error, until a stream sync reports it */
	struct fc_op *cur; /* the operation the worker has taken, until it is done */
	struct timespec cur_since;
	int refs; /* under g_mu */
	CUcontext ctx;
	unsigned flags;
	int prio;
	unsigned hwq; /* the hardware work queue it shares with others */
	struct CUstream_st *next; /* registry, under g_mu */
};

struct CUevent_st {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned flags;
	uint64_t rec_gen, done_gen;
	CUresult done_err; /* the stream's error when the last record completed */
	struct timespec t;
	CUcontext ctx; /* where it was created */
	int refs; /* under g_mu */
	struct CUevent_st *next;
};

static struct CUstream_st *g_streams;
static size_t g_nstreams;
static struct CUstream_st *g_default;
static struct CUevent_st *g_events;
static size_t g_nevents;

static void stream_put(struct CUstream_st *s)
{
	pthread_mutex_lock(&g_mu);
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&g_mu);
	if (last) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		free(s);
	}
}

static void event_put(struct CUevent_st *e)
{
	pthread_mutex_lock(&g_mu);
	bool last = --e->refs == 0;
	pthread_mutex_unlock(&g_mu);
	if (last) {
		pthread_mutex_destroy(&e->mu);
		pthread_cond_destroy(&e->cv);
		free(e);
	}
}

static void sleep_us(unsigned us)
{
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static bool wait_cond_holds(uint64_t cur, uint64_t val, unsigned flags, bool is64)
{
	switch (flags & 0x3) {
	case CU_STREAM_WAIT_VALUE_GEQ:
		return is64 ? (int64_t)(cur - val) >= 0 : (int32_t)(uint32_t)(cur - val) >= 0;
	case CU_STREAM_WAIT_VALUE_EQ:
		return cur == val;
	case CU_STREAM_WAIT_VALUE_AND:
		return (cur & val) != 0;
	default: /* NOR */
		return is64 ? ~(cur | val) != 0 : (uint32_t) ~(cur | val) != 0;
	}
}

static bool is_wait_op(const struct fc_op *op)
{
	return op->kind == OP_WAIT32 || op->kind == OP_WAIT64;
}

static uint64_t wait_op_word(const struct fc_op *op)
{
	return op->kind == OP_WAIT32 ? __atomic_load_n((uint32_t *)op->dst, __ATOMIC_ACQUIRE)
				     : __atomic_load_n((uint64_t *)op->dst, __ATOMIC_ACQUIRE);
}

static bool wait_op_holds(const struct fc_op *op)
{
	return wait_cond_holds(wait_op_word(op), op->val, op->flags, op->kind == OP_WAIT64);
}

/*
 * Hardware work queues.  The GPU has a few queues (CUDA_DEVICE_MAX_CONNECTIONS,
 * 8 by default) and streams are spread over them; a stream stopped at an
 * unsatisfied wait-value stops the work queued after it on its queue, from
 * every stream sharing it (CUDA's documentation of cuStreamWaitValue32 warns
 * that the scheduler may serialise work that the wait orders invisibly).
 * Seen on an H100: an application stream blocked in a wait for a read that
 * never ended held up the library's copies on its own streams and a
 * synchronous cuMemcpyDtoH (test_exit_with_io_in_flight_neither_hangs_nor_
 * crashes, stream-return).  Modelled: streams take queues round-robin in
 * creation order (FAKECUDA_MAX_CONNECTIONS, 8; 0: off; the legacy stream
 * takes one too); while a stream's worker sits in such a wait, an operation
 * of another stream on the same queue, queued after the wait, does not
 * start.
 */
struct hwq_stop {
	const struct CUstream_st *s;
	unsigned q;
	uint64_t gseq;
	struct hwq_stop *next;
};
#define OCF_MAXU(a, b) ((a) > (b) ? (a) : (b))
static pthread_mutex_t hwq_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hwq_cv = PTHREAD_COND_INITIALIZER;
static struct hwq_stop *hwq_stops;
static atomic_uint hwq_next;
static atomic_uint_fast64_t g_gseq;

static bool hwq_held(const struct CUstream_st *s, uint64_t gseq)
{
	unsigned nq = atomic_load(&g_hwq);
	for (const struct hwq_stop *w = hwq_stops; w; w = w->next)
		if (nq && w->s != s && w->q % nq == s->hwq % nq && w->gseq < gseq &&
		    (!w->s->ctx || !s->ctx || w->s->ctx->device == s->ctx->device))
			return true;
	return false;
}

/* Before op runs on s: waits while its queue is stopped ahead of it. */
static void hwq_enter(const struct CUstream_st *s, const struct fc_op *op)
{
	if (!atomic_load(&g_hwq))
		return;
	pthread_mutex_lock(&hwq_mu);
	struct timespec t0 = mono_now();
	bool noted = false;
	while (hwq_held(s, op->gseq)) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&hwq_cv, &hwq_mu, &until);
		if (!noted && stall_due(&t0)) {
			noted = true;
			fprintf(stderr,
				"fakecuda: an operation of stream %p has waited %u s behind a stream wait-value "
				"of another stream on hardware queue %u\n",
				(const void *)s, atomic_load(&g_stall_s), s->hwq % OCF_MAXU(atomic_load(&g_hwq), 1));
		}
	}
	pthread_mutex_unlock(&hwq_mu);
}

static bool hwq_stop_begin(struct hwq_stop *w)
{
	if (!atomic_load(&g_hwq))
		return false;
	pthread_mutex_lock(&hwq_mu);
	w->next = hwq_stops;
	hwq_stops = w;
	pthread_mutex_unlock(&hwq_mu);
	return true;
}

static void hwq_stop_end(struct hwq_stop *w)
{
	pthread_mutex_lock(&hwq_mu);
	for (struct hwq_stop **pp = &hwq_stops; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	pthread_cond_broadcast(&hwq_cv);
	pthread_mutex_unlock(&hwq_mu);
}

FC_EXPORT int fakecuda_hwq_stops(void)
{
	int n = 0;
	pthread_mutex_lock(&hwq_mu);
	for (const struct hwq_stop *w = hwq_stops; w; w = w->next)
		n++;
	pthread_mutex_unlock(&hwq_mu);
	return n;
}

static void op_run(struct CUstream_st *s, struct fc_op *op)
{
	if (op->kind == OP_STAGED) {
		if (op->val)
			sleep_us((unsigned)op->val);
		if (!op->fail)
			memmove(op->dst, op->src, op->n);
		free((void *)op->src);
		if (!op->fail)
			return;
	}
	if (op->fail && (op->kind == OP_COPY || op->kind == OP_MEMSET || op->kind == OP_STAGED)) {
		pthread_mutex_lock(&s->mu);
		s->err = op->fail;
		pthread_mutex_unlock(&s->mu);
		return;
	}
	switch (op->kind) {
	case OP_STAGED: /* done above */
		break;
	case OP_COPY:
		memmove(op->dst, op->src, op->n);
		break;
	case OP_MEMSET:
		memset(op->dst, (int)op->val, op->n);
		break;
	case OP_HOSTFN:
		op->fn(op->ud);
		break;
	case OP_CALLBACK:
		op->cb(s->is_default ? NULL : s, CUDA_SUCCESS, op->ud);
		break;
	case OP_WAIT32:
	case OP_WAIT64:
		if (!wait_op_holds(op)) {
			struct hwq_stop w = {.s = s, .q = s->hwq, .gseq = op->gseq};
			bool stopped = hwq_stop_begin(&w);
			while (!wait_op_holds(op))
				sleep_us(20);
			if (stopped)
				hwq_stop_end(&w);
		}
		break;
	case OP_WRITE32:
		__atomic_store_n((uint32_t *)op->dst, (uint32_t)op->val, __ATOMIC_RELEASE);
		break;
	case OP_WRITE64:
		__atomic_store_n((uint64_t *)op->dst, op->val, __ATOMIC_RELEASE);
		break;
	case OP_EVREC: {
		struct CUevent_st *e = op->ev;
		pthread_mutex_lock(&s->mu);
		CUresult serr = s->err;
		pthread_mutex_unlock(&s->mu);
		pthread_mutex_lock(&e->mu);
		if (op->gen > e->done_gen) {
			e->done_gen = op->gen;
			e->done_err = serr;
			clock_gettime(CLOCK_MONOTONIC, &e->t);
		}
		pthread_cond_broadcast(&e->cv);
		pthread_mutex_unlock(&e->mu);
		event_put(e);
		break;
	}
	case OP_EVWAIT: {
		struct CUevent_st *e = op->ev;
		pthread_mutex_lock(&e->mu);
		while (e->done_gen < op->gen)
			pthread_cond_wait(&e->cv, &e->mu);
		pthread_mutex_unlock(&e->mu);
		event_put(e);
		break;
	}
	case OP_CHECKSUM: {
		const uint8_t *b = op->src;
		uint64_t sum = 0;
		for (size_t i = 0; i < op->n; i++)
			sum += (uint64_t)b[i] * (i % 251 + 1);
		__atomic_fetch_add((uint64_t *)op->dst, sum, __ATOMIC_RELAXED);
		break;
	}
	case OP_SPIN:
		sleep_us((unsigned)(op->val / 1000));
		break;
	case OP_STREAMWAIT: {
		struct CUstream_st *t = op->ud;
		pthread_mutex_lock(&t->mu);
		while (t->done < op->gen)
			pthread_cond_wait(&t->cv, &t->mu);
		pthread_mutex_unlock(&t->mu);
		stream_put(t);
		break;
	}
	case OP_FREE: {
		pthread_mutex_lock(&g_mu);
		struct fc_alloc *a = tab_find((uintptr_t)op->ptr);
		if (a && a->start == (uintptr_t)op->ptr && a->free_pending)
			alloc_destroy_locked(a);
		pthread_mutex_unlock(&g_mu);
		break;
	}
	}
}

static void *stream_worker(void *arg)
{
	struct CUstream_st *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!s->head && !s->dying)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		struct fc_op *op = s->head;
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		s->cur = op;
		s->cur_since = mono_now();
		pthread_mutex_unlock(&s->mu);

		long own = __atomic_load_n(&s->delay_us, __ATOMIC_RELAXED);
		unsigned d = own >= 0 ? (unsigned)own : atomic_load(&g_delay_us);
		if (d)
			sleep_us(d);
		hwq_enter(s, op);
		op_run(s, op);

		pthread_mutex_lock(&s->mu);
		s->cur = NULL;
		s->done++;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		free(op);
	}
	stream_put(s);
	return NULL;
}

static struct CUstream_st *stream_new(CUcontext ctx, unsigned flags, int prio, bool is_default)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->ctx = ctx;
	s->flags = flags;
	s->prio = prio;
	s->is_default = is_default;
	s->delay_us = -1;
	s->refs = 2; /* owner + worker */
	s->hwq = atomic_fetch_add(&hwq_next, 1); /* its queue: modulo the count */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t thr;
	int rc = pthread_create(&thr, &attr, stream_worker, s);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		free(s);
		return NULL;
	}
	return s;
}

static bool is_default_handle(CUstream h)
{
	return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

/* Resolves a stream handle and takes a reference (stream_put when done).
 * The default stream needs a current context. */
static CUresult stream_get(CUstream h, struct CUstream_st **out, CUcontext *ctx_out)
{
	if (is_default_handle(h)) {
		CUcontext c;
		CUresult r = cur_ctx(&c);
		if (r != CUDA_SUCCESS)
			return r;
		pthread_mutex_lock(&g_mu);
		if (!g_default) {
			g_default = stream_new(NULL, 0, 0, true);
			if (!g_default) {
				pthread_mutex_unlock(&g_mu);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
		}
		g_default->refs++;
		*out = g_default;
		pthread_mutex_unlock(&g_mu);
		if (ctx_out)
			*ctx_out = c;
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&g_mu);
	struct CUstream_st *s;
	for (s = g_streams; s; s = s->next)
		if (s == h)
			break;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&g_mu);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = s;
	if (ctx_out)
		*ctx_out = s->ctx;
	return CUDA_SUCCESS;
}

static void stream_push(struct CUstream_st *s, struct fc_op *op)
{
	op->next = NULL;
	op->gseq = atomic_fetch_add(&g_gseq, 1) + 1;
	pthread_mutex_lock(&s->mu);
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	s->enq++;
	if (s->is_default && op->ctx)
		op->ctx->legacy_enq = s->enq;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void stream_sync(struct CUstream_st *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t target = s->enq;
	while (s->done < target)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

/*
 * The legacy default stream's implicit synchronisation, as CUDA does it:
 * work queued on the legacy stream waits for the work queued before it on
 * every blocking stream (created without CU_STREAM_NON_BLOCKING) of the
 * context, and work queued on a blocking stream waits for the work queued
 * before it on the legacy stream.  Non-blocking streams take no part.  A
 * barrier op (OP_STREAMWAIT) snapshots the other stream's enqueue counter;
 * g_order_mu makes snapshots and pushes one step, so two streams can never
 * wait for each other's later work.  (The fake has one legacy stream for all
 * contexts; the per-thread default stream is the legacy one.)
 */
static pthread_mutex_t g_order_mu = PTHREAD_MUTEX_INITIALIZER;

static bool is_blocking(const struct CUstream_st *s)
{
	return !s->is_default && !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* Created streams of ctx (NULL: every context), only the blocking ones if
 * blocking_only, each with a reference; the caller puts them and frees the
 * array.  *n = 0 when none (or OOM). */
static struct CUstream_st **streams_of(CUcontext ctx, bool blocking_only, size_t *n)
{
	pthread_mutex_lock(&g_mu);
	size_t k = 0;
	for (struct CUstream_st *t = g_streams; t; t = t->next)
		k += (!blocking_only || is_blocking(t)) && (!ctx || t->ctx == ctx);
	struct CUstream_st **v = k ? malloc(k * sizeof(*v)) : NULL;
	*n = 0;
	if (v)
		for (struct CUstream_st *t = g_streams; t; t = t->next)
			if ((!blocking_only || is_blocking(t)) && (!ctx || t->ctx == ctx)) {
				t->refs++;
				v[(*n)++] = t;
			}
	pthread_mutex_unlock(&g_mu);
	return v;
}

static struct CUstream_st **blocking_streams(CUcontext ctx, size_t *n)
{
	return streams_of(ctx, true, n);
}

/* The legacy stream with a reference, or NULL if it was never used. */
static struct CUstream_st *default_stream_ref(void)
{
	pthread_mutex_lock(&g_mu);
	struct CUstream_st *d = g_default;
	if (d)
		d->refs++;
	pthread_mutex_unlock(&g_mu);
	return d;
}

/* Caller holds g_order_mu.  Makes s wait for what is queued on t now. */
static void push_barrier(struct CUstream_st *s, struct CUstream_st *t)
{
	pthread_mutex_lock(&t->mu);
	uint64_t target = t->enq;
	bool pending = t->done < target;
	pthread_mutex_unlock(&t->mu);
	if (!pending)
		return;
	struct fc_op *op = calloc(1, sizeof(*op));
	if (!op)
		return;
	pthread_mutex_lock(&g_mu);
	t->refs++; /* put by the barrier */
	pthread_mutex_unlock(&g_mu);
	op->kind = OP_STREAMWAIT;
	op->ud = t;
	op->gen = target;
	stream_push(s, op);
}

/* Caller holds g_order_mu; s is about to receive work in context ctx. */
static void implicit_barriers(struct CUstream_st *s, CUcontext ctx)
{
	if (s->is_default) {
		size_t n;
		struct CUstream_st **v = blocking_streams(ctx, &n);
		for (size_t i = 0; i < n; i++) {
			push_barrier(s, v[i]);
			stream_put(v[i]);
		}
		free(v);
	} else if (is_blocking(s)) {
		struct CUstream_st *d = default_stream_ref();
		if (d) {
			push_barrier(s, d);
			stream_put(d);
		}
	}
}

/* The error of a failed operation (deferred fault), reported once. */
static CUresult stream_take_error(struct CUstream_st *s)
{
	pthread_mutex_lock(&s->mu);
	CUresult r = s->err;
	s->err = CUDA_SUCCESS;
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* Synchronous operations run on the legacy stream: they wait for it and,
 * through it, for every blocking stream of the context. */
static void drain_default(void)
{
	CUcontext c = NULL;
	cur_ctx(&c);
	struct CUstream_st *s = default_stream_ref();
	size_t n;
	struct CUstream_st **v = blocking_streams(c, &n);
	for (size_t i = 0; i < n; i++) {
		stream_sync(v[i]);
		stream_put(v[i]);
	}
	free(v);
	if (s) {
		stream_sync(s);
		stream_put(s);
	}
}

/* What enqueue_op() leaves to a caller that waits for its operation: the
 * stream (referenced) and how many operations it will have done once that
 * one is. */
struct fc_queued {
	struct CUstream_st *s;
	uint64_t target;
};

/* Enqueues a copy of op on stream h, holding side m of the stream's
 * context's API lock (the current context's for the legacy stream).  With
 * `held`, a successful call returns with the lock still held and the stream
 * referenced: the caller waits for held->target (a synchronous call that
 * keeps the lock while it waits), then api_unlock() and
 * stream_put(held->s). */
static CUresult enqueue_op(CUstream h, const struct fc_op *tmpl, enum lk_mode m, struct fc_queued *held)
{
	struct CUstream_st *s;
	CUcontext ctx = NULL;
	CUresult r = stream_get(h, &s, &ctx);
	if (r != CUDA_SUCCESS)
		return r;
	struct fc_op *op = malloc(sizeof(*op));
	if (!op) {
		stream_put(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*op = *tmpl;
	op->fail = fc_deferred;
	op->ctx = ctx;
	fc_deferred = CUDA_SUCCESS;
	api_lock(ctx, m);
	pthread_mutex_lock(&g_order_mu);
	implicit_barriers(s, ctx);
	stream_push(s, op);
	if (held) {
		pthread_mutex_lock(&s->mu);
		held->target = s->enq;
		pthread_mutex_unlock(&s->mu);
		held->s = s;
	}
	pthread_mutex_unlock(&g_order_mu);
	if (held)
		return CUDA_SUCCESS;
	api_unlock();
	stream_put(s);
	return CUDA_SUCCESS;
}

static CUresult enqueue(CUstream h, const struct fc_op *tmpl, enum lk_mode m)
{
	return enqueue_op(h, tmpl, m, NULL);
}

/* ------------------------------------------------------------------ */
/* Driver lock model: what some calls wait for under the write side     */
/* ------------------------------------------------------------------ */

/* Waits until s has done `target` operations; reports a stall. */
static void stream_wait_done(struct CUstream_st *s, uint64_t target, const struct timespec *since)
{
	pthread_mutex_lock(&s->mu);
	while (s->done < target) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 1;
		pthread_cond_timedwait(&s->cv, &s->mu, &dl);
		if (stall_due(since)) {
			pthread_mutex_unlock(&s->mu);
			stall_report();
			pthread_mutex_lock(&s->mu);
		}
	}
	pthread_mutex_unlock(&s->mu);
}

/*
 * Observed with tests/gpu/probe_driver_waits.c (H100, driver 580.159,
 * CUDA 13.0, the S=nonblock rows): while a non-blocking stream of the
 * context waits in cuStreamWaitValue32 for a word nobody writes yet,
 * cuMemFree, cuMemFreeHost, cuMemHostUnregister and cuModuleLoadData do
 * not return until the word is written, and meanwhile asynchronous copies,
 * event records, cuLaunchHostFunc and synchronous copies of other threads
 * do not return either: the call waits for the device to go idle holding
 * the lock those take.  Here: every created stream of c, and the legacy
 * stream up to c's last operation on it, run dry while this call holds the
 * write side.
 */
static void wait_streams_idle(CUcontext c)
{
	if (!api_write_held())
		return;
	lk_doing("waits until every stream of its context is idle");
	struct timespec t0 = mono_now();
	size_t n;
	struct CUstream_st **v = streams_of(c, false, &n);
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&v[i]->mu);
		uint64_t target = v[i]->enq;
		pthread_mutex_unlock(&v[i]->mu);
		stream_wait_done(v[i], target, &t0);
		stream_put(v[i]);
	}
	free(v);
	struct CUstream_st *d = default_stream_ref();
	if (d) {
		pthread_mutex_lock(&d->mu);
		uint64_t target = c->legacy_enq;
		pthread_mutex_unlock(&d->mu);
		stream_wait_done(d, target, &t0);
		stream_put(d);
	}
	lk_doing(NULL);
}

/* Is s (of context c) stopped at a stream wait-value whose condition does
 * not hold?  A wait that is next in line counts before the worker has taken
 * it: on a GPU a stream reaches it at once. */
static bool stream_blocked_in_wait(struct CUstream_st *s, CUcontext c)
{
	pthread_mutex_lock(&s->mu);
	const struct fc_op *op = s->cur ? s->cur : s->head;
	bool b = op && is_wait_op(op) && (!s->is_default || op->ctx == c) && !wait_op_holds(op);
	pthread_mutex_unlock(&s->mu);
	return b;
}

/*
 * Observed in two hangs on an H100 (driver 580.159, CUDA 13.0; stacks in
 * shared/evidence/gpu-hang-stream-lane-create.txt and the ovl3 hang of
 * d81c512): a library thread sat in cuStreamCreate while an application
 * stream of the same context was blocked in a stream wait for the
 * library's I/O, the I/O threads sat in cuMemcpyHtoDAsync on the driver's
 * reader/writer lock (read side) and the application thread in
 * cuLaunchHostFunc (write side).  The probe did not catch cuStreamCreate
 * waiting, so the driver does not always wait; the model always does, and
 * cuEventCreate likewise: while this call holds the write side, it waits as
 * long as any stream of c is stopped at an unsatisfied wait-value.
 */
static void wait_while_stream_blocked(CUcontext c)
{
	if (!api_write_held())
		return;
	struct timespec t0 = mono_now();
	bool noted = false;
	for (;;) {
		size_t n;
		bool blocked = false;
		struct CUstream_st **v = streams_of(c, false, &n);
		for (size_t i = 0; i < n; i++) {
			blocked = blocked || stream_blocked_in_wait(v[i], c);
			stream_put(v[i]);
		}
		free(v);
		struct CUstream_st *d = default_stream_ref();
		if (d) {
			blocked = blocked || stream_blocked_in_wait(d, c);
			stream_put(d);
		}
		if (!blocked)
			break;
		if (!noted) {
			lk_doing("waits while a stream of its context is blocked in a stream wait-value");
			noted = true;
		}
		sleep_us(100);
		if (stall_due(&t0))
			stall_report();
	}
	if (noted)
		lk_doing(NULL);
}

/* ------------------------------------------------------------------ */
/* Driver lock model: the report                                        */
/* ------------------------------------------------------------------ */

struct sbuf {
	char *p;
	size_t len, n; /* n: what the whole text needs */
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = b->n < b->len ? b->len - b->n : 0;
	int k = vsnprintf(room ? b->p + b->n : NULL, room, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->n += (size_t)k;
}

/* Takes m, giving up after about `ms` milliseconds (the report may run in a
 * watchdog's signal handler, on a thread that holds m). */
static bool lock_bounded(pthread_mutex_t *m, int ms)
{
	for (int i = 0; i <= ms; i++) {
		if (pthread_mutex_trylock(m) == 0)
			return true;
		sleep_us(1000);
	}
	return false;
}

static const char *const op_names[] = {
    [OP_COPY] = "copy",
    [OP_MEMSET] = "memset",
    [OP_HOSTFN] = "host function",
    [OP_CALLBACK] = "stream callback",
    [OP_WAIT32] = "wait-value 32",
    [OP_WAIT64] = "wait-value 64",
    [OP_WRITE32] = "write-value 32",
    [OP_WRITE64] = "write-value 64",
    [OP_EVREC] = "event record",
    [OP_EVWAIT] = "event wait",
    [OP_FREE] = "stream-ordered free",
    [OP_STREAMWAIT] = "legacy-stream barrier",
    [OP_CHECKSUM] = "kernel ocf_checksum",
    [OP_SPIN] = "kernel ocf_spin",
    [OP_STAGED] = "pageable copy landing",
};

static void report_ctx_locked(struct sbuf *b, CUcontext c)
{
	const struct fc_apilock *l = &c->lk;
	sb_printf(b, "context %p (device %d%s): %s, %d reader(s), %d writer(s) waiting\n", (void *)c,
		  c->device, c->primary ? ", primary" : "", l->writer ? "write side held" : "write side free",
		  l->readers, l->writers_waiting);
	for (int pass = 0; pass < 2; pass++)
		for (const struct lk_rec *r = g_lk_recs; r; r = r->next) {
			if (r->ctx != c || r->holding != (pass == 0))
				continue;
			const char *side = r->mode == LK_WRITE ? "write" : "read";
			sb_printf(b, "  tid %d in %s: %s the %s side for %.1f s", (int)r->tid, r->entry,
				  r->holding ? "holds" : "waits for", side, secs_since(&r->since));
			if (r->holding && r->doing)
				sb_printf(b, "; %s (%.1f s)", r->doing, secs_since(&r->doing_since));
			sb_printf(b, "\n");
		}
}

static void report_stream_locked(struct sbuf *b, struct CUstream_st *s)
{
	if (!lock_bounded(&s->mu, 20)) {
		sb_printf(b, "stream %p: busy\n", (void *)s);
		return;
	}
	const struct fc_op *op = s->cur;
	if (op || s->head) {
		if (s->is_default)
			sb_printf(b, "legacy stream");
		else
			sb_printf(b, "stream %p (device %d, %s)", (void *)s, s->ctx->device,
				  is_blocking(s) ? "blocking" : "non-blocking");
		sb_printf(b, ": %llu operation(s) not done", (unsigned long long)(s->enq - s->done));
		if (op && is_wait_op(op)) {
			uint64_t w = wait_op_word(op);
			bool holds = wait_cond_holds(w, op->val, op->flags, op->kind == OP_WAIT64);
			static const char *const cmp[] = {"GEQ", "EQ", "AND", "NOR"};
			sb_printf(b, "; at a %s for %.1f s: word %p is %llu, waits %s %llu%s",
				  op_names[op->kind], secs_since(&s->cur_since), op->dst,
				  (unsigned long long)w, cmp[op->flags & 3], (unsigned long long)op->val,
				  holds ? " (now holds)" : "");
		} else if (op) {
			sb_printf(b, "; at a %s for %.1f s", op_names[op->kind], secs_since(&s->cur_since));
		}
		sb_printf(b, "\n");
	}
	pthread_mutex_unlock(&s->mu);
}

FC_EXPORT size_t fakecuda_lock_report(char *buf, size_t len)
{
	struct sbuf b = {buf, len, 0};
	if (len)
		buf[0] = '\0';
	sb_printf(&b, "fakecuda driver lock model: %s\n", atomic_load(&g_lock_model) ? "on" : "off");
	if (!lock_bounded(&g_lk_mu, 200)) {
		sb_printf(&b, "(lock state busy)\n");
	} else {
		CUcontext seen[64];
		size_t ns = 0;
		for (const struct lk_rec *r = g_lk_recs; r; r = r->next) {
			size_t i = 0;
			while (i < ns && seen[i] != r->ctx)
				i++;
			if (i == ns && ns < sizeof(seen) / sizeof(seen[0]))
				seen[ns++] = r->ctx;
		}
		for (size_t i = 0; i < ns; i++)
			report_ctx_locked(&b, seen[i]);
		if (!ns)
			sb_printf(&b, "no thread holds or waits for an API lock\n");
		pthread_mutex_unlock(&g_lk_mu);
	}
	if (!lock_bounded(&g_mu, 200)) {
		sb_printf(&b, "(stream registry busy)\n");
	} else {
		for (struct CUstream_st *s = g_streams; s; s = s->next)
			report_stream_locked(&b, s);
		if (g_default)
			report_stream_locked(&b, g_default);
		pthread_mutex_unlock(&g_mu);
	}
	return b.n;
}

static CUresult stream_create_common(CUstream *ph, unsigned flags, int prio)
{
	if (!ph)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)
		return CUDA_ERROR_INVALID_VALUE;
	NEED_CTX(c);
	api_lock(c, LK_WRITE);
	wait_while_stream_blocked(c);
	struct CUstream_st *s = stream_new(c, flags, prio, false);
	if (s) {
		pthread_mutex_lock(&g_mu);
		s->next = g_streams;
		g_streams = s;
		g_nstreams++;
		pthread_mutex_unlock(&g_mu);
		*ph = s;
	}
	api_unlock();
	return s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FC_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	ENTER();
	return stream_create_common(phStream, Flags, 0);
}

FC_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	ENTER();
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	return stream_create_common(phStream, flags, priority);
}

FC_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	ENTER();
	if (is_default_handle(hStream))
		return CUDA_ERROR_INVALID_HANDLE;
	struct CUstream_st *ref;
	CUcontext sc = NULL;
	if (stream_get(hStream, &ref, &sc) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_HANDLE;
	api_lock(sc, LK_WRITE);
	pthread_mutex_lock(&g_mu);
	struct CUstream_st **pp;
	for (pp = &g_streams; *pp; pp = &(*pp)->next)
		if (*pp == hStream)
			break;
	struct CUstream_st *s = *pp;
	if (s) {
		*pp = s->next;
		g_nstreams--;
	}
	pthread_mutex_unlock(&g_mu);
	if (s) {
		pthread_mutex_lock(&s->mu);
		s->dying = true;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		stream_put(s);
	}
	api_unlock();
	stream_put(ref);
	return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FC_EXPORT int fakecuda_set_stream_delay_us_for(CUstream h, long us)
{
	struct CUstream_st *s;
	if (stream_get(h, &s, NULL) != CUDA_SUCCESS)
		return -1;
	__atomic_store_n(&s->delay_us, us, __ATOMIC_RELAXED);
	stream_put(s);
	return 0;
}

FC_EXPORT size_t fakecuda_live_events(void)
{
	pthread_mutex_lock(&g_mu);
	size_t n = g_nevents;
	pthread_mutex_unlock(&g_mu);
	return n;
}

FC_EXPORT size_t fakecuda_live_streams(void)
{
	pthread_mutex_lock(&g_mu);
	size_t n = g_nstreams;
	pthread_mutex_unlock(&g_mu);
	return n;
}

FC_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	ENTER();
	struct CUstream_st *s;
	CUresult r = stream_get(hStream, &s, NULL);
	if (r != CUDA_SUCCESS)
		return r;
	stream_sync(s);
	r = stream_take_error(s);
	stream_put(s);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
	ENTER();
	struct CUstream_st *s;
	CUresult r = stream_get(hStream, &s, NULL);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&s->mu);
	r = s->done == s->enq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
	pthread_mutex_unlock(&s->mu);
	if (r == CUDA_SUCCESS)
		r = stream_take_error(s);
	stream_put(s);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
	ENTER();
	NEED_CTX(c);
	drain_default();
	/* Snapshot this context's streams with references, then wait. */
	pthread_mutex_lock(&g_mu);
	size_t n = 0;
	for (struct CUstream_st *s = g_streams; s; s = s->next)
		if (s->ctx == c)
			n++;
	struct CUstream_st **v = n ? malloc(n * sizeof(*v)) : NULL;
	size_t k = 0;
	if (v) {
		for (struct CUstream_st *s = g_streams; s; s = s->next)
			if (s->ctx == c) {
				s->refs++;
				v[k++] = s;
			}
	}
	pthread_mutex_unlock(&g_mu);
	for (size_t i = 0; i < k; i++) {
		stream_sync(v[i]);
		stream_put(v[i]);
	}
	free(v);
	return n && !v ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

/* A context died: its streams and events leave the registries (later calls
 * with their handles fail with CUDA_ERROR_INVALID_HANDLE, as on the real
 * driver once a primary context was released to zero) and are torn down as
 * cuStreamDestroy / cuEventDestroy would. */
static void ctx_kill_objects(CUcontext c)
{
	struct CUstream_st *dead_s = NULL;
	struct CUevent_st *dead_e = NULL;
	pthread_mutex_lock(&g_mu);
	for (struct CUstream_st **pp = &g_streams; *pp;) {
		struct CUstream_st *x = *pp;
		if (x->ctx != c) {
			pp = &x->next;
			continue;
		}
		*pp = x->next;
		g_nstreams--;
		x->next = dead_s;
		dead_s = x;
	}
	for (struct CUevent_st **pp = &g_events; *pp;) {
		struct CUevent_st *x = *pp;
		if (x->ctx != c) {
			pp = &x->next;
			continue;
		}
		*pp = x->next;
		g_nevents--;
		x->next = dead_e;
		dead_e = x;
	}
	pthread_mutex_unlock(&g_mu);
	while (dead_s) {
		struct CUstream_st *x = dead_s;
		dead_s = x->next;
		pthread_mutex_lock(&x->mu);
		x->dying = true;
		pthread_cond_broadcast(&x->cv);
		pthread_mutex_unlock(&x->mu);
		stream_put(x);
	}
	while (dead_e) {
		struct CUevent_st *x = dead_e;
		dead_e = x->next;
		event_put(x);
	}
}

static CUresult event_get(CUevent h, struct CUevent_st **out)
{
	if (!h)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&g_mu);
	struct CUevent_st *e;
	for (e = g_events; e; e = e->next)
		if (e == h)
			break;
	if (e)
		e->refs++;
	pthread_mutex_unlock(&g_mu);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = e;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	ENTER();
	if (!phEvent)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned ok = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	if (Flags & ~ok)
		return CUDA_ERROR_INVALID_VALUE;
	if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_VALUE;
	NEED_CTX(c);
	struct CUevent_st *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	e->flags = Flags;
	e->ctx = c;
	e->refs = 1;
	api_lock(c, LK_WRITE);
	wait_while_stream_blocked(c);
	pthread_mutex_lock(&g_mu);
	e->next = g_events;
	g_events = e;
	g_nevents++;
	pthread_mutex_unlock(&g_mu);
	api_unlock();
	*phEvent = e;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
	ENTER();
	struct CUevent_st *ref;
	if (event_get(hEvent, &ref) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_HANDLE;
	api_lock(ref->ctx, LK_WRITE);
	pthread_mutex_lock(&g_mu);
	struct CUevent_st **pp;
	for (pp = &g_events; *pp; pp = &(*pp)->next)
		if (*pp == hEvent)
			break;
	struct CUevent_st *e = *pp;
	if (e) {
		*pp = e->next;
		g_nevents--;
	}
	pthread_mutex_unlock(&g_mu);
	if (e)
		event_put(e);
	api_unlock();
	event_put(ref);
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FC_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
	ENTER();
	struct CUevent_st *e;
	CUresult r = event_get(hEvent, &e);
	if (r != CUDA_SUCCESS)
		return r;
	struct CUstream_st *s;
	CUcontext sc = NULL;
	r = stream_get(hStream, &s, &sc);
	if (r != CUDA_SUCCESS) {
		event_put(e);
		return r;
	}
	struct fc_op *op = calloc(1, sizeof(*op));
	if (!op) {
		stream_put(s);
		event_put(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	op->kind = OP_EVREC;
	op->ev = e; /* the op owns the reference taken by event_get */
	op->ctx = sc;
	api_lock(sc, LK_READ);
	pthread_mutex_lock(&e->mu);
	op->gen = ++e->rec_gen;
	/* Push while holding e->mu so generations reach streams in order. */
	stream_push(s, op);
	pthread_mutex_unlock(&e->mu);
	api_unlock();
	stream_put(s);
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	ENTER();
	if (Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUevent_st *e;
	CUresult r = event_get(hEvent, &e);
	if (r != CUDA_SUCCESS)
		return r;
	struct CUstream_st *s;
	CUcontext sc = NULL;
	r = stream_get(hStream, &s, &sc);
	if (r != CUDA_SUCCESS) {
		event_put(e);
		return r;
	}
	struct fc_op *op = calloc(1, sizeof(*op));
	if (!op) {
		stream_put(s);
		event_put(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	api_lock(sc, LK_READ);
	pthread_mutex_lock(&e->mu);
	uint64_t gen = e->rec_gen;
	pthread_mutex_unlock(&e->mu);
	if (gen == 0) {
		free(op);
		event_put(e);
	} else {
		op->kind = OP_EVWAIT;
		op->ev = e;
		op->gen = gen;
		op->ctx = sc;
		stream_push(s, op);
	}
	api_unlock();
	stream_put(s);
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
	ENTER();
	struct CUevent_st *e;
	CUresult r = event_get(hEvent, &e);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&e->mu);
	uint64_t target = e->rec_gen;
	while (e->done_gen < target)
		pthread_cond_wait(&e->cv, &e->mu);
	r = e->done_err;
	pthread_mutex_unlock(&e->mu);
	event_put(e);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
	ENTER();
	struct CUevent_st *e;
	CUresult r = event_get(hEvent, &e);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&e->mu);
	r = e->done_gen >= e->rec_gen ? e->done_err : CUDA_ERROR_NOT_READY;
	pthread_mutex_unlock(&e->mu);
	event_put(e);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	ENTER();
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUevent_st *a, *b;
	CUresult r = event_get(hStart, &a);
	if (r != CUDA_SUCCESS)
		return r;
	r = event_get(hEnd, &b);
	if (r != CUDA_SUCCESS) {
		event_put(a);
		return r;
	}
	struct timespec ta = {0, 0}, tb = {0, 0};
	bool ready = true, valid = true;
	struct CUevent_st *ev[2] = {a, b};
	struct timespec *tv[2] = {&ta, &tb};
	for (int i = 0; i < 2; i++) {
		pthread_mutex_lock(&ev[i]->mu);
		if (ev[i]->rec_gen == 0 || (ev[i]->flags & CU_EVENT_DISABLE_TIMING))
			valid = false;
		else if (ev[i]->done_gen < ev[i]->rec_gen)
			ready = false;
		*tv[i] = ev[i]->t;
		pthread_mutex_unlock(&ev[i]->mu);
	}
	event_put(a);
	event_put(b);
	if (!valid)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!ready)
		return CUDA_ERROR_NOT_READY;
	*pMilliseconds =
	    (float)((double)(tb.tv_sec - ta.tv_sec) * 1e3 + (double)(tb.tv_nsec - ta.tv_nsec) / 1e6);
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	ENTER();
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	struct fc_op op = {.kind = OP_HOSTFN, .fn = fn, .ud = userData};
	return enqueue(hStream, &op, LK_WRITE);
}

FC_EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
					       unsigned int flags)
{
	ENTER();
	if (!callback || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	struct fc_op op = {.kind = OP_CALLBACK, .cb = callback, .ud = userData};
	return enqueue(hStream, &op, LK_WRITE);
}

/* Memory operations address either device memory or pinned/registered host
 * memory (any live allocation). */
static CUresult memop_addr(CUdeviceptr addr, size_t n, void **out)
{
	if (addr % n)
		return CUDA_ERROR_INVALID_VALUE;
	return dev_range(addr, n, out);
}

static CUresult wait_value(CUstream s, CUdeviceptr addr, uint64_t value, unsigned flags, bool is64)
{
	unsigned ok = 0x3 | CU_STREAM_WAIT_VALUE_FLUSH;
	if (flags & ~ok)
		return CUDA_ERROR_INVALID_VALUE;
	void *p;
	CUresult r = memop_addr(addr, is64 ? 8 : 4, &p);
	if (r != CUDA_SUCCESS)
		return r;
	struct fc_op op = {.kind = is64 ? OP_WAIT64 : OP_WAIT32, .dst = p, .val = value, .flags = flags};
	return enqueue(s, &op, LK_READ);
}

static CUresult write_value(CUstream s, CUdeviceptr addr, uint64_t value, unsigned flags, bool is64)
{
	if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
		return CUDA_ERROR_INVALID_VALUE;
	void *p;
	CUresult r = memop_addr(addr, is64 ? 8 : 4, &p);
	if (r != CUDA_SUCCESS)
		return r;
	struct fc_op op = {.kind = is64 ? OP_WRITE64 : OP_WRITE32, .dst = p, .val = value};
	return enqueue(s, &op, LK_READ);
}

FC_EXPORT CUresult CUDAAPI cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
					       unsigned int flags)
{
	ENTER();
	return wait_value(stream, addr, value, flags, false);
}

FC_EXPORT CUresult CUDAAPI cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
					       unsigned int flags)
{
	ENTER();
	return wait_value(stream, addr, value, flags, true);
}

FC_EXPORT CUresult CUDAAPI cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
						unsigned int flags)
{
	ENTER();
	return write_value(stream, addr, value, flags, false);
}

FC_EXPORT CUresult CUDAAPI cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
						unsigned int flags)
{
	ENTER();
	return write_value(stream, addr, value, flags, true);
}

/* ------------------------------------------------------------------ */
/* Memory allocation                                                   */
/* ------------------------------------------------------------------ */

static CUresult dev_alloc(CUdeviceptr *dptr, size_t size, enum fc_kind kind, CUcontext ctx, int dev)
{
	if (!dptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	size_t span = round_up(size, FC_GRAN);
	if (span < size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t p;
	if (kind == FK_DEVICE && size < FC_GRAN && suballoc_on()) {
		struct fc_slab *sl;
		pthread_mutex_lock(&g_mu);
		struct fc_alloc *a = NULL;
		if (slab_alloc_locked(round_up(size, FC_SUB_ALIGN), ctx, dev, &p, &sl) == 0) {
			a = alloc_new_locked(p, size, 0, kind, ctx, dev);
			if (a)
				a->slab = sl;
			else
				slab_put_locked(sl);
		}
		pthread_mutex_unlock(&g_mu);
		if (!a)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memset(shadow_of(p), FC_FILL, size);
		*dptr = (CUdeviceptr)p;
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&g_mu);
	if (g_dev_used[dev] + span > FC_DEV_TOTAL || va_alloc_locked(span, FC_GRAN, 0, &p) != 0) {
		pthread_mutex_unlock(&g_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	struct fc_alloc *a = alloc_new_locked(p, size, span, kind, ctx, dev);
	if (!a) {
		va_free_locked(p, span);
		pthread_mutex_unlock(&g_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	g_dev_used[dev] += span;
	pthread_mutex_unlock(&g_mu);
	/* The range is not yet visible to the caller; fill outside the lock. */
	memset(shadow_of(p), FC_FILL, size);
	*dptr = (CUdeviceptr)p;
	return CUDA_SUCCESS;
}

/* cuMemAlloc and cuMemHostAlloc take the write side but wait for nothing:
 * both returned at once in the probe (H100, S=nonblock rows). */
FC_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	ENTER();
	NEED_CTX(c);
	api_lock(c, LK_WRITE);
	CUresult r = dev_alloc(dptr, bytesize, FK_DEVICE, c, c->device);
	api_unlock();
	return r;
}

static CUresult host_alloc(void **pp, size_t size, enum fc_kind kind, CUcontext c)
{
	if (!pp || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	size_t span = round_up(size, (size_t)sysconf(_SC_PAGESIZE));
	void *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(p, FC_FILL, size);
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = alloc_new_locked((uintptr_t)p, size, span, kind, c, c->device);
	pthread_mutex_unlock(&g_mu);
	if (!a) {
		munmap(p, span);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	ENTER();
	NEED_CTX(c);
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	void *p = NULL;
	api_lock(c, LK_WRITE);
	CUresult r = host_alloc(dptr ? &p : NULL, bytesize, FK_MANAGED, c);
	api_unlock();
	if (r == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return r;
}

/* FAKECUDA_PIN_SYNCS=1: cuMemHostRegister first waits until every stream
 * has drained, as the real driver was seen to do on an H200 (its
 * cuMemHostAlloc does not): a library that registers memory while an
 * application stream waits for its I/O then deadlocks here too.  With the
 * lock model on it waits holding the write side of its context. */
static void pin_syncs_device(void)
{
	const char *e = getenv("FAKECUDA_PIN_SYNCS");
	if (!e || *e != '1')
		return;
	if (api_write_held())
		lk_doing("waits until every stream has drained (FAKECUDA_PIN_SYNCS=1)");
	struct timespec t0 = mono_now();
	size_t n;
	struct CUstream_st **v = streams_of(NULL, false, &n);
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&v[i]->mu);
		uint64_t target = v[i]->enq;
		pthread_mutex_unlock(&v[i]->mu);
		stream_wait_done(v[i], target, &t0);
		stream_put(v[i]);
	}
	free(v);
	if (api_write_held())
		lk_doing(NULL);
}

FC_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	ENTER();
	NEED_CTX(c);
	if (Flags &
	    ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
		return CUDA_ERROR_INVALID_VALUE;
	api_lock(c, LK_WRITE);
	CUresult r = host_alloc(pp, bytesize, FK_PINNED, c);
	api_unlock();
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize)
{
	ENTER();
	NEED_CTX(c);
	api_lock(c, LK_WRITE);
	CUresult r = host_alloc(pp, bytesize, FK_PINNED, c);
	api_unlock();
	return r;
}

/* The context that owns the allocation at p (exactly its start), else dflt:
 * the lock a free takes. */
static CUcontext alloc_ctx(uintptr_t p, CUcontext dflt)
{
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find(p);
	CUcontext c = a && a->start == p && a->ctx ? a->ctx : dflt;
	pthread_mutex_unlock(&g_mu);
	return c;
}

/* cuMemFreeHost, cuMemFree, cuMemHostUnregister: the write side of the
 * allocation's context, and wait_streams_idle under it (see there). */
FC_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
	ENTER();
	NEED_CTX(c);
	CUcontext lc = alloc_ctx((uintptr_t)p, c);
	api_lock(lc, LK_WRITE);
	wait_streams_idle(lc);
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)p);
	if (p && a && a->kind == FK_PINNED && a->start == (uintptr_t)p) {
		alloc_destroy_locked(a);
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&g_mu);
	api_unlock();
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
	ENTER();
	NEED_CTX(c);
	if (dptr == 0)
		return CUDA_SUCCESS;
	CUcontext lc = alloc_ctx((uintptr_t)dptr, c);
	api_lock(lc, LK_WRITE);
	if (api_write_held())
		wait_streams_idle(lc);
	else
		drain_default();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)dptr);
	if (a && a->start == (uintptr_t)dptr && !a->free_pending &&
	    (a->kind == FK_DEVICE || a->kind == FK_POOL || a->kind == FK_MANAGED)) {
		alloc_destroy_locked(a);
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&g_mu);
	api_unlock();
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	ENTER();
	NEED_CTX(c);
	unsigned ok = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
		      CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	if (!p || bytesize == 0 || (Flags & ~ok) || (uintptr_t)p + bytesize < (uintptr_t)p)
		return CUDA_ERROR_INVALID_VALUE;
	/* No wait of its own in the probe (H100); FAKECUDA_PIN_SYNCS is the
	 * H200 observation. */
	api_lock(c, LK_WRITE);
	pin_syncs_device();
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&g_mu);
	if (in_va((uintptr_t)p))
		r = CUDA_ERROR_INVALID_VALUE;
	else if (tab_overlaps((uintptr_t)p, bytesize))
		r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	else if (!alloc_new_locked((uintptr_t)p, bytesize, bytesize, FK_REGISTERED, c, c->device))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_unlock(&g_mu);
	api_unlock();
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	ENTER();
	NEED_CTX(c);
	CUcontext lc = alloc_ctx((uintptr_t)p, c);
	api_lock(lc, LK_WRITE);
	wait_streams_idle(lc);
	CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)p);
	if (p && a && a->kind == FK_REGISTERED && a->start == (uintptr_t)p) {
		alloc_destroy_locked(a);
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&g_mu);
	api_unlock();
	return r;
}

/* Unified addressing: the device address of pinned or registered host
 * memory is its host address.  Flags must be 0, as the real driver says. */
FC_EXPORT CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	ENTER();
	NEED_CTX(c);
	(void)c;
	if (!pdptr || !p || Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)p);
	if (a && (a->kind == FK_PINNED || a->kind == FK_REGISTERED)) {
		*pdptr = (CUdeviceptr)(uintptr_t)p;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemGetInfo(size_t *free_, size_t *total)
{
	ENTER();
	NEED_CTX(c);
	pthread_mutex_lock(&g_mu);
	size_t used = g_dev_used[c->device];
	pthread_mutex_unlock(&g_mu);
	if (free_)
		*free_ = used > FC_DEV_TOTAL ? 0 : FC_DEV_TOTAL - used;
	if (total)
		*total = FC_DEV_TOTAL;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	ENTER();
	NEED_CTX(c);
	(void)c;
	CUresult r = CUDA_ERROR_NOT_FOUND;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)dptr);
	if (a) {
		if (pbase)
			*pbase = (CUdeviceptr)a->start;
		if (psize)
			*psize = a->size;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

/* Stream-ordered allocator */

FC_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	ENTER();
	NEED_CTX(cur);
	(void)cur;
	struct CUstream_st *s;
	CUcontext sc;
	CUresult r = stream_get(hStream, &s, &sc);
	if (r != CUDA_SUCCESS)
		return r;
	api_lock(sc, LK_READ);
	r = dev_alloc(dptr, bytesize, FK_POOL, sc, sc->device);
	api_unlock();
	stream_put(s);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	ENTER();
	NEED_CTX(cur);
	(void)cur;
	struct CUstream_st *s;
	CUcontext sc = NULL;
	CUresult r = stream_get(hStream, &s, &sc);
	if (r != CUDA_SUCCESS)
		return r;
	struct fc_op *op = calloc(1, sizeof(*op));
	if (!op) {
		stream_put(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	api_lock(sc, LK_READ);
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)dptr);
	if (a && a->start == (uintptr_t)dptr && !a->free_pending &&
	    (a->kind == FK_POOL || a->kind == FK_DEVICE))
		a->free_pending = true;
	else
		r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&g_mu);
	if (r == CUDA_SUCCESS) {
		op->kind = OP_FREE;
		op->ptr = dptr;
		op->ctx = sc;
		stream_push(s, op);
	} else {
		free(op);
	}
	api_unlock();
	stream_put(s);
	return r;
}

/* ------------------------------------------------------------------ */
/* Virtual memory management                                           */
/* ------------------------------------------------------------------ */

static struct fc_handle *handle_find_locked(CUmemGenericAllocationHandle v)
{
	for (struct fc_handle *h = g_handles; h; h = h->next)
		if (h->value == v)
			return h;
	return NULL;
}

static bool prop_valid(const CUmemAllocationProp *prop)
{
	return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
	       prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && dev_valid(prop->location.id);
}

FC_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
							 CUmemAllocationGranularity_flags option)
{
	ENTER();
	if (!granularity || !prop_valid(prop) ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = FC_GRAN;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
				       const CUmemAllocationProp *prop, unsigned long long flags)
{
	ENTER();
	if (!handle || !prop_valid(prop) || flags != 0 || size == 0 || size % FC_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	struct fc_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	api_lock(cur_ctx_or_null(), LK_WRITE);
	pthread_mutex_lock(&g_mu);
	if (g_dev_used[prop->location.id] + size > FC_DEV_TOTAL) {
		pthread_mutex_unlock(&g_mu);
		api_unlock();
		free(h);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->value = g_next_handle++;
	h->size = size;
	h->device = prop->location.id;
	h->handle_types = (unsigned)prop->requestedHandleTypes;
	h->refs = 1;
	h->next = g_handles;
	g_handles = h;
	g_dev_used[h->device] += size;
	*handle = h->value;
	pthread_mutex_unlock(&g_mu);
	api_unlock();
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	ENTER();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	struct fc_handle *h = handle_find_locked(handle);
	if (h && !h->released) {
		h->released = true;
		handle_put_locked(h);
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
					       CUdeviceptr addr, unsigned long long flags)
{
	ENTER();
	if (!ptr || size == 0 || size % FC_GRAN || flags != 0 || (alignment & (alignment - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	struct fc_resv *rv = calloc(1, sizeof(*rv));
	if (!rv)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t p;
	pthread_mutex_lock(&g_mu);
	if (va_alloc_locked(size, alignment, (uintptr_t)addr, &p) != 0) {
		pthread_mutex_unlock(&g_mu);
		free(rv);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rv->start = p;
	rv->size = size;
	rv->next = g_resvs;
	g_resvs = rv;
	pthread_mutex_unlock(&g_mu);
	*ptr = (CUdeviceptr)p;
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	ENTER();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	for (struct fc_resv **pp = &g_resvs; *pp; pp = &(*pp)->next) {
		struct fc_resv *rv = *pp;
		if (rv->start == (uintptr_t)ptr && rv->size == size) {
			if (!tab_overlaps(rv->start, rv->size)) {
				*pp = rv->next;
				va_free_locked(rv->start, rv->size);
				free(rv);
				r = CUDA_SUCCESS;
			}
			break;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

static bool in_resv_locked(uintptr_t p, size_t n)
{
	for (struct fc_resv *rv = g_resvs; rv; rv = rv->next)
		if (p >= rv->start && p + n <= rv->start + rv->size && p + n > p)
			return true;
	return false;
}

FC_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
				    CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	ENTER();
	uintptr_t p = (uintptr_t)ptr;
	if (flags != 0 || size == 0 || p % FC_GRAN || size % FC_GRAN || offset % FC_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	api_lock(cur_ctx_or_null(), LK_WRITE);
	pthread_mutex_lock(&g_mu);
	struct fc_handle *h = handle_find_locked(handle);
	if (!h || h->released || offset + size > h->size || offset + size < size)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (h->refs > 1) /* already mapped: not supported by the fake */
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!in_resv_locked(p, size) || tab_overlaps(p, size))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		struct fc_alloc *a = alloc_new_locked(p, size, size, FK_VMM, NULL, h->device);
		if (!a) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			a->handle = h;
			a->access = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
			h->refs++;
		}
	}
	pthread_mutex_unlock(&g_mu);
	if (r == CUDA_SUCCESS)
		memset(shadow_of(p), FC_FILL, size);
	api_unlock();
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	ENTER();
	uintptr_t p = (uintptr_t)ptr;
	if (size == 0 || p + size < p)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	api_lock(cur_ctx_or_null(), LK_WRITE);
	pthread_mutex_lock(&g_mu);
	if (!in_resv_locked(p, size)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		/* Every mapping touching the range must lie fully inside it. */
		size_t found = 0;
		for (size_t i = tab_upper(p) ? tab_upper(p) - 1 : 0; i < g_ntab; i++) {
			struct fc_alloc *a = g_tab[i];
			if (a->start >= p + size)
				break;
			if (a->start + a->size <= p)
				continue;
			if (a->kind != FK_VMM || a->start < p || a->start + a->size > p + size) {
				r = CUDA_ERROR_INVALID_VALUE;
				break;
			}
			found++;
		}
		if (r == CUDA_SUCCESS && !found)
			r = CUDA_ERROR_INVALID_VALUE;
		if (r == CUDA_SUCCESS) {
			size_t i = tab_lower(p);
			while (i < g_ntab && g_tab[i]->start < p + size)
				alloc_destroy_locked(g_tab[i]);
		}
	}
	pthread_mutex_unlock(&g_mu);
	api_unlock();
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
					  size_t count)
{
	ENTER();
	uintptr_t p = (uintptr_t)ptr;
	if (!desc || count == 0 || size == 0 || p + size < p)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
	for (size_t i = 0; i < count; i++) {
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
			return CUDA_ERROR_INVALID_VALUE;
		if (!dev_valid(desc[i].location.id))
			return CUDA_ERROR_INVALID_DEVICE;
		if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
		    desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		    desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_INVALID_VALUE;
		if (desc[i].flags > flags)
			flags = desc[i].flags;
	}
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&g_mu);
	/* The whole range must be covered by VMM mappings. */
	uintptr_t cur = p;
	size_t i = tab_upper(p);
	if (i)
		i--;
	size_t first = i;
	for (; i < g_ntab && cur < p + size; i++) {
		struct fc_alloc *a = g_tab[i];
		if (a->start + a->size <= cur)
			continue;
		if (a->kind != FK_VMM || a->start > cur)
			break;
		cur = a->start + a->size;
	}
	if (cur < p + size) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		for (i = first; i < g_ntab && g_tab[i]->start < p + size; i++)
			if (g_tab[i]->start + g_tab[i]->size > p)
				g_tab[i]->access = flags;
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

/* ------------------------------------------------------------------ */
/* Copies                                                              */
/* ------------------------------------------------------------------ */

/* The synchronous calls run on the legacy stream: they queue their work
 * under the read side (api_pass) and wait for the stream without holding
 * it, so one that waits for a blocked stream keeps nobody else out.  (On
 * the GPU, in the probe's S=blocking rows, asynchronous copies on a
 * non-blocking stream did not return while a synchronous copy waited for a
 * blocked stream, but launches did: not the API lock; not modelled.) */

/* Is p inside pinned or registered host memory (or any allocation)? */
static bool host_pinned(const void *p)
{
	pthread_mutex_lock(&g_mu);
	bool pinned = tab_find((uintptr_t)p) != NULL;
	pthread_mutex_unlock(&g_mu);
	return pinned;
}

/* A synchronous copy with pinned host memory: a copy on the legacy stream
 * that the caller waits for holding the read side of the context's API
 * lock (seen on an H100: a thread in cuMemcpyDtoH to pinned memory, its
 * copy held up behind a blocked stream wait on a shared hardware queue,
 * kept a cuLaunchHostFunc of another thread waiting for the write side,
 * and with it every asynchronous copy behind that writer).  The pageable
 * variants wait for the legacy stream without the lock (probe). */
static CUresult sync_copy_holding_lock(void *dst, const void *src, size_t n)
{
	struct timespec t0 = mono_now();
	struct fc_op op = {.kind = OP_COPY, .dst = dst, .src = src, .n = n};
	struct fc_queued q;
	CUresult r = enqueue_op(CU_STREAM_LEGACY, &op, LK_READ, &q);
	if (r != CUDA_SUCCESS)
		return r;
	lk_doing("a synchronous copy with pinned memory, waiting for it to finish");
	stream_wait_done(q.s, q.target, &t0);
	api_unlock();
	r = stream_take_error(q.s);
	stream_put(q.s);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	ENTER();
	NEED_CTX(c);
	if (ByteCount == 0)
		return CUDA_SUCCESS;
	void *d;
	if (!srcHost || dev_range(dstDevice, ByteCount, &d) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	if (host_pinned(srcHost))
		return sync_copy_holding_lock(d, srcHost, ByteCount);
	api_pass(c);
	drain_default();
	/* Pageable: CUDA returns once the source is staged; the device
	 * memory changes later, in order on the legacy stream (seen on an
	 * H100: a cuFileWrite of device memory right after it read the old
	 * bytes through the library's non-blocking stream). */
	void *stage = malloc(ByteCount);
	if (!stage)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(stage, srcHost, ByteCount);
	struct fc_op op = {.kind = OP_STAGED, .dst = d, .src = stage, .n = ByteCount,
			   .val = atomic_load(&g_pageable_lag_us)};
	CUresult r = enqueue(CU_STREAM_LEGACY, &op, LK_READ);
	if (r != CUDA_SUCCESS)
		free(stage);
	return r;
}

FC_EXPORT CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	ENTER();
	NEED_CTX(c);
	if (ByteCount == 0)
		return CUDA_SUCCESS;
	void *s;
	if (!dstHost || dev_range(srcDevice, ByteCount, &s) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	if (host_pinned(dstHost))
		return sync_copy_holding_lock(dstHost, s, ByteCount);
	api_pass(c);
	drain_default();
	memmove(dstHost, s, ByteCount);
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	ENTER();
	NEED_CTX(c);
	if (ByteCount == 0)
		return CUDA_SUCCESS;
	void *d, *s;
	if (dev_range(dstDevice, ByteCount, &d) != CUDA_SUCCESS ||
	    dev_range(srcDevice, ByteCount, &s) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	api_pass(c);
	drain_default();
	memmove(d, s, ByteCount);
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	ENTER();
	NEED_CTX(c);
	if (ByteCount == 0)
		return CUDA_SUCCESS;
	void *d, *s;
	if (any_range(dst, ByteCount, &d) != CUDA_SUCCESS || any_range(src, ByteCount, &s) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	api_pass(c);
	drain_default();
	memmove(d, s, ByteCount);
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	ENTER();
	NEED_CTX(c);
	if (N == 0)
		return CUDA_SUCCESS;
	void *d;
	if (dev_range(dstDevice, N, &d) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	api_pass(c);
	drain_default();
	memset(d, uc, N);
	return CUDA_SUCCESS;
}

static CUresult enqueue_copy(CUstream h, void *d, const void *s, size_t n)
{
	if (n == 0) {
		struct CUstream_st *st;
		CUresult r = stream_get(h, &st, NULL);
		if (r == CUDA_SUCCESS)
			stream_put(st);
		return r;
	}
	struct fc_op op = {.kind = OP_COPY, .dst = d, .src = s, .n = n};
	return enqueue(h, &op, LK_READ);
}

FC_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
					     CUstream hStream)
{
	ENTER();
	NEED_CTX(c);
	(void)c;
	void *d = NULL;
	if (ByteCount && (!srcHost || dev_range(dstDevice, ByteCount, &d) != CUDA_SUCCESS))
		return CUDA_ERROR_INVALID_VALUE;
	return enqueue_copy(hStream, d, srcHost, ByteCount);
}

/* CUDA 13's cuMemcpyBatchAsync (symbol cuMemcpyBatchAsync_v2): each copy
 * pointer to pointer, device or host on either side, queued in order on
 * the stream (the real driver promises no order within the batch).  The
 * argument rules of the driver's documentation: count copies, numAttrs
 * attributes whose first index is 0 and whose indexes rise and stay below
 * count, a valid source access order each, not the legacy stream; a copy
 * that is invalid fails the call before anything is queued. */
static atomic_long g_batch_stream_delay_us = -1;

FC_EXPORT void fakecuda_set_batch_stream_delay_us(long us) { atomic_store(&g_batch_stream_delay_us, us); }

static atomic_long g_batch_call_delay_us;
static void (*_Atomic g_batch_call_hook)(const CUdeviceptr *dsts, size_t count);

FC_EXPORT void fakecuda_set_batch_call_delay_us(long us) { atomic_store(&g_batch_call_delay_us, us); }
FC_EXPORT void fakecuda_set_batch_call_hook(void (*fn)(const CUdeviceptr *dsts, size_t count))
{
	atomic_store(&g_batch_call_hook, fn);
}

FC_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
					      CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
					      CUstream hStream)
{
	/* An injected failure is returned after the first copy was queued:
	 * a failing call may have queued some of its copies (CUDA 12.8's
	 * form reported the index of the copy that failed), and the library
	 * must not let such a copy land after the entry completed. */
	static struct fc_fn *fc_slot_;
	CUresult fault = fc_enter(&fc_slot_, __func__);
	if (!atomic_load(&g_inited))
		return CUDA_ERROR_NOT_INITIALIZED;
	NEED_CTX(c);
	(void)c;
	if (!count || !dsts || !srcs || !sizes || !attrs || !attrsIdxs || !numAttrs || numAttrs > count ||
	    attrsIdxs[0] != 0 || hStream == NULL || hStream == CU_STREAM_LEGACY)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t k = 0; k < numAttrs; k++) {
		if (attrs[k].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
		    attrs[k].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
			return CUDA_ERROR_INVALID_VALUE;
		if (k && (attrsIdxs[k] <= attrsIdxs[k - 1] || attrsIdxs[k] >= count))
			return CUDA_ERROR_INVALID_VALUE;
	}
	/* Each side device or host memory, as cuMemcpyAsync: a copy that
	 * leaves its allocation, or touches freed or unmapped device address
	 * space, fails the call. */
	for (size_t i = 0; i < count; i++) {
		void *p;
		if (any_range(dsts[i], sizes[i], &p) != CUDA_SUCCESS || any_range(srcs[i], sizes[i], &p) != CUDA_SUCCESS)
			return CUDA_ERROR_INVALID_VALUE;
	}
	void (*hook)(const CUdeviceptr *, size_t) = atomic_load(&g_batch_call_hook);
	if (hook)
		hook(dsts, count);
	long cd = atomic_load(&g_batch_call_delay_us);
	if (cd > 0)
		usleep((useconds_t)cd);
	long bd = atomic_load(&g_batch_stream_delay_us);
	if (bd >= 0)
		(void)fakecuda_set_stream_delay_us_for(hStream, bd);
	for (size_t i = 0; i < count; i++) {
		void *d = NULL, *src = NULL;
		if (fault != CUDA_SUCCESS && i == 1)
			return fault;
		if (any_range(dsts[i], sizes[i], &d) != CUDA_SUCCESS || any_range(srcs[i], sizes[i], &src) != CUDA_SUCCESS)
			return CUDA_ERROR_INVALID_VALUE;
		CUresult r = enqueue_copy(hStream, d, src, sizes[i]);
		if (r != CUDA_SUCCESS)
			return r;
	}
	return fault;
}

FC_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
					     CUstream hStream)
{
	ENTER();
	NEED_CTX(c);
	(void)c;
	void *s = NULL;
	if (ByteCount && (!dstHost || dev_range(srcDevice, ByteCount, &s) != CUDA_SUCCESS))
		return CUDA_ERROR_INVALID_VALUE;
	return enqueue_copy(hStream, dstHost, s, ByteCount);
}

FC_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
					     CUstream hStream)
{
	ENTER();
	NEED_CTX(c);
	(void)c;
	void *d = NULL, *s = NULL;
	if (ByteCount && (dev_range(dstDevice, ByteCount, &d) != CUDA_SUCCESS ||
			  dev_range(srcDevice, ByteCount, &s) != CUDA_SUCCESS))
		return CUDA_ERROR_INVALID_VALUE;
	return enqueue_copy(hStream, d, s, ByteCount);
}

FC_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	ENTER();
	NEED_CTX(c);
	(void)c;
	void *d = NULL, *s = NULL;
	if (ByteCount &&
	    (any_range(dst, ByteCount, &d) != CUDA_SUCCESS || any_range(src, ByteCount, &s) != CUDA_SUCCESS))
		return CUDA_ERROR_INVALID_VALUE;
	return enqueue_copy(hStream, d, s, ByteCount);
}

FC_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
					   CUstream hStream)
{
	ENTER();
	NEED_CTX(c);
	(void)c;
	if (N == 0)
		return enqueue_copy(hStream, NULL, NULL, 0);
	void *d;
	if (dev_range(dstDevice, N, &d) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	struct fc_op op = {.kind = OP_MEMSET, .dst = d, .n = N, .val = uc};
	return enqueue(hStream, &op, LK_READ);
}

/* ------------------------------------------------------------------ */
/* Pointer attributes                                                  */
/* ------------------------------------------------------------------ */

struct ptrinfo {
	bool found;
	enum fc_kind kind;
	CUcontext ctx;
	int device;
	unsigned long long id;
	uintptr_t start;
	size_t size;
	unsigned sync_memops;
	unsigned access;
	unsigned handle_types;
};

static void ptr_lookup(CUdeviceptr ptr, struct ptrinfo *pi)
{
	memset(pi, 0, sizeof(*pi));
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)ptr);
	if (a) {
		pi->found = true;
		pi->kind = a->kind;
		pi->ctx = a->ctx;
		pi->device = a->device;
		pi->id = a->id;
		pi->start = a->start;
		pi->size = a->size;
		pi->sync_memops = a->sync_memops;
		pi->access = a->access;
		pi->handle_types = a->handle ? a->handle->handle_types : 0;
	}
	pthread_mutex_unlock(&g_mu);
}

/* Writes one attribute.  strict: cuPointerGetAttribute (errors for
 * unknown memory / attributes not applicable); otherwise zero values. */
static CUresult attr_write(CUpointer_attribute attr, void *data, const struct ptrinfo *pi, CUdeviceptr ptr,
			   bool strict)
{
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	bool f = pi->found;
	if (strict && !f)
		return CUDA_ERROR_INVALID_VALUE;
	bool host = f && (pi->kind == FK_PINNED || pi->kind == FK_REGISTERED);
	bool hostvis = host || (f && pi->kind == FK_MANAGED);
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = f ? pi->ctx : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = !f ? 0 : host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = f ? ptr : 0;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (strict && !hostvis)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = hostvis ? (void *)(uintptr_t)ptr : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_P2P_TOKENS: {
		if (strict && pi->kind != FK_DEVICE)
			return CUDA_ERROR_INVALID_VALUE;
		CUDA_POINTER_ATTRIBUTE_P2P_TOKENS *t = data;
		t->p2pToken = f && pi->kind == FK_DEVICE ? pi->id : 0;
		t->vaSpaceToken = f && pi->kind == FK_DEVICE ? 1 : 0;
		break;
	}
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(unsigned int *)data = f ? pi->sync_memops : 0;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = f ? pi->id : 0;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned int *)data = f && pi->kind == FK_MANAGED;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = f ? pi->device : 0;
		break;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		*(unsigned int *)data = f && pi->kind == FK_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(CUdeviceptr *)data = f ? (CUdeviceptr)pi->start : 0;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = f ? pi->size : 0;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned int *)data = f;
		break;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned int *)data = f ? pi->handle_types : 0;
		break;
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
		*(unsigned int *)data = f && is_va_kind(pi->kind);
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned int *)data = f ? pi->access : 0;
		break;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = f && pi->kind == FK_POOL ? &g_pools[pi->device] : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		*(unsigned long long *)data = f ? pi->id : 0;
		break;
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		*(unsigned int *)data = 0;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	ENTER();
	struct ptrinfo pi;
	ptr_lookup(ptr, &pi);
	CUresult r = attr_write(attribute, data, &pi, ptr, true);
	if (r == CUDA_SUCCESS && attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS) {
		/* Documented side effect: sets SYNC_MEMOPS. */
		pthread_mutex_lock(&g_mu);
		struct fc_alloc *a = tab_find((uintptr_t)ptr);
		if (a)
			a->sync_memops = 1;
		pthread_mutex_unlock(&g_mu);
	}
	return r;
}

FC_EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
						  void **data, CUdeviceptr ptr)
{
	ENTER();
	if (numAttributes == 0 || !attributes || !data)
		return CUDA_ERROR_INVALID_VALUE;
	struct ptrinfo pi;
	ptr_lookup(ptr, &pi);
	for (unsigned i = 0; i < numAttributes; i++) {
		CUresult r = attr_write(attributes[i], data[i], &pi, ptr, false);
		if (r != CUDA_SUCCESS)
			return r;
	}
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuPointerSetAttribute(const void *value, CUpointer_attribute attribute,
						 CUdeviceptr ptr)
{
	ENTER();
	if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	struct fc_alloc *a = tab_find((uintptr_t)ptr);
	if (a) {
		a->sync_memops = *(const unsigned int *)value ? 1 : 0;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

/* ------------------------------------------------------------------ */
/* Modules and kernels (the project's known kernels only)              */
/* ------------------------------------------------------------------ */

enum fc_kernel { FK_CHECKSUM, FK_SPIN, FK_NKERNELS };
static const char *const fc_kernel_name[FK_NKERNELS] = {"ocf_checksum", "ocf_spin"};

struct CUfunc_st {
	enum fc_kernel kind;
};
static struct CUfunc_st fc_funcs[FK_NKERNELS] = {{FK_CHECKSUM}, {FK_SPIN}};

struct CUmod_st {
	bool has[FK_NKERNELS];
};

FC_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	ENTER();
	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUmod_st m = {{false}};
	bool any = false;
	for (int k = 0; k < FK_NKERNELS; k++) {
		char entry[64];
		snprintf(entry, sizeof(entry), ".entry %s(", fc_kernel_name[k]);
		m.has[k] = strstr(image, entry) != NULL;
		any |= m.has[k];
	}
	if (!any)
		return CUDA_ERROR_NOT_SUPPORTED; /* the fake runs no other code */
	struct CUmod_st *p = malloc(sizeof(*p));
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Waits for the context's streams under the write side, like a
	 * free: see wait_streams_idle. */
	CUcontext c = cur_ctx_or_null();
	api_lock(c, LK_WRITE);
	wait_streams_idle(c);
	*p = m;
	*module = p;
	api_unlock();
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	ENTER();
	if (!hfunc || !hmod || !name)
		return CUDA_ERROR_INVALID_VALUE;
	for (int k = 0; k < FK_NKERNELS; k++)
		if (hmod->has[k] && !strcmp(name, fc_kernel_name[k])) {
			*hfunc = &fc_funcs[k];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

FC_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	ENTER();
	if (!hmod)
		return CUDA_ERROR_INVALID_HANDLE;
	api_lock(cur_ctx_or_null(), LK_WRITE);
	free(hmod);
	api_unlock();
	return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
					  unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
					  unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
					  void **kernelParams, void **extra)
{
	ENTER();
	(void)sharedMemBytes;
	if (!f || !kernelParams || extra || !gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY ||
	    !blockDimZ)
		return CUDA_ERROR_INVALID_VALUE;
	struct fc_op op = {0};
	if (f->kind == FK_SPIN) {
		op.kind = OP_SPIN;
		op.val = *(uint64_t *)kernelParams[0];
		return enqueue(hStream, &op, LK_READ);
	}
	CUdeviceptr buf = *(CUdeviceptr *)kernelParams[0], out = *(CUdeviceptr *)kernelParams[2];
	uint64_t n = *(uint64_t *)kernelParams[1];
	void *src = NULL, *dst;
	if ((n && dev_range(buf, (size_t)n, &src) != CUDA_SUCCESS) || dev_range(out, 8, &dst) != CUDA_SUCCESS ||
	    out % 8)
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	op.kind = OP_CHECKSUM;
	op.src = src;
	op.n = (size_t)n;
	op.dst = dst;
	return enqueue(hStream, &op, LK_READ);
}
