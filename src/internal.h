/* SPDX-License-Identifier: Apache-2.0 */
/*
 * internal.h - conventions shared by every file of the library.
 *
 * Error convention: internal functions return 0 (or a byte count) on
 * success and a negative value on failure.  Values in [-4095, -1] are
 * -errno; values <= -CUFILEOP_BASE_ERR are -CUfileOpError.  Internal code
 * never sets errno for the caller; only the public API layer (api_*.c) turns
 * these results into CUfileError_t or the ssize_t + errno contract.
 */
#ifndef OCF_INTERNAL_H_
#define OCF_INTERNAL_H_

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cufile.h"

#define OCF_EXPORT __attribute__((visibility("default")))
#define OCF_UNUSED __attribute__((unused))

/* An internal error for a cuFile status code. */
#define OCF_ERR(code) (-(long)(code))
static inline bool ocf_is_cufile_err(long r) { return r <= -CUFILEOP_BASE_ERR; }

/* Largest file alignment a handle may need (handle.c caps what the file
 * system asks for at this); staging buffers leave this much room around a
 * chunk so that an aligned read covering it fits (gpu.c, stream.c). */
#define OCF_MAX_ALIGN 65536u

#define OCF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OCF_MAX(a, b) ((a) > (b) ? (a) : (b))
#define OCF_ALIGN_DOWN(x, a) ((x) / (a) * (a))
#define OCF_ALIGN_UP(x, a) (((x) + (a)-1) / (a) * (a))

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t ocf_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A pause in a spin loop. */
static inline void ocf_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Polls until `cond` holds or ns nanoseconds have passed, pausing between
 * looks: a thread kept awake for something about to happen. */
#define OCF_POLL_UNTIL(cond, ns)                                              \
	do {                                                                  \
		uint64_t ocf_t0_ = ocf_now_ns();                              \
		do {                                                          \
			for (int ocf_i_ = 0; ocf_i_ < 16; ocf_i_++)           \
				ocf_cpu_relax();                              \
		} while (!(cond) && ocf_now_ns() - ocf_t0_ < (ns));          \
	} while (0)

/* Raises *a to v if v is larger (relaxed: peaks and timestamps for reports). */
static inline void ocf_atomic_max_u64(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);
	while (v > cur && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed, memory_order_relaxed))
		;
}

/* Lowers *a to v if v is smaller (relaxed, as ocf_atomic_max_u64). */
static inline void ocf_atomic_min_u64(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);
	while (v < cur && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed, memory_order_relaxed))
		;
}

/* Polls *flag until it is set or ns nanoseconds have passed: a thread kept
 * awake for work that is about to come (engine helpers, batch executors). */
static inline void ocf_poll_flag(const atomic_bool *flag, uint64_t ns)
{
	OCF_POLL_UNTIL(atomic_load_explicit(flag, memory_order_acquire), ns);
}

/* Sleeps ns nanoseconds by the clock: the calling thread's timer slack
 * (50 us by default, which would dwarf a nap of microseconds) is 1 ns
 * meanwhile, and restored after. */
static inline void ocf_nap_ns(uint64_t ns)
{
	int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (old > 1)
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	nanosleep(&ts, NULL);
	if (old > 1)
		prctl(PR_SET_TIMERSLACK, (unsigned long)old, 0, 0, 0);
}

/* Sleeps while the futex word *w holds v, at most ns nanoseconds (a
 * wake-up may be missed by a waiter that lost a race: the bound is its
 * safety net). */
static inline void ocf_futex_wait(_Atomic uint32_t *w, uint32_t v, long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, v, &ts, NULL, 0);
}

/* Wakes up to n threads sleeping on the futex word *w. */
static inline void ocf_futex_wake(_Atomic uint32_t *w, int n)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

#endif /* OCF_INTERNAL_H_ */
