/* SPDX-License-Identifier: Apache-2.0 */
/*
 * malloc_fault.h - fail the Nth memory allocation made by the library under
 * test, and count the library's live blocks.  Include it in exactly one
 * file of a test binary: it defines malloc, calloc, realloc, free,
 * posix_memalign, aligned_alloc and memalign, which the dynamic linker then
 * binds for the whole process, the library included (glibc's __libc_*
 * entry points do the real work).
 *
 * Why an interposer rather than an allocation wrapper inside the library:
 * the library under test stays exactly the code that ships, every
 * allocation site is covered without touching it, and no allocation hook
 * exists in any built library.  Only allocations whose caller (the return
 * address) lies in the code of a loaded object named libcufile* count and
 * can fail: the test's own allocations, the fake CUDA driver's and libc's
 * internal ones (fopen, pthread_create) never do.  Blocks the library
 * allocated are remembered (a fixed open-addressing table, no allocation of
 * its own) until freed by anyone, so t_malloc_live() is the library's
 * outstanding blocks.
 *
 * Not available with a sanitizer's allocator (OCF_SANITIZE builds):
 * T_MALLOC_FAULT is then 0 and the functions below do nothing.
 */
#ifndef OCF_MALLOC_FAULT_H_
#define OCF_MALLOC_FAULT_H_

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(OCF_NO_MALLOC_INTERPOSER)
#define T_MALLOC_FAULT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define T_MALLOC_FAULT 0
#endif
#endif
#ifndef T_MALLOC_FAULT
#define T_MALLOC_FAULT 1
#endif

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if T_MALLOC_FAULT

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

#define TMF_MAX_RANGES 16
#define TMF_TABLE (1u << 17)

static struct {
	uintptr_t lo, hi;
} tmf_ranges[TMF_MAX_RANGES];
static int tmf_nranges;
/* tmf_lock protects the counters, the rule and the table. */
static pthread_mutex_t tmf_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long tmf_calls, tmf_fail_at;
static size_t tmf_live;
static uintptr_t tmf_table[TMF_TABLE]; /* live library blocks; 0 = empty */

static int tmf_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *slash = strrchr(info->dlpi_name, '/');
	const char *base = slash ? slash + 1 : info->dlpi_name;
	if (strncmp(base, "libcufile", 9) != 0)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && tmf_nranges < TMF_MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			tmf_ranges[tmf_nranges].lo = info->dlpi_addr + ph->p_vaddr;
			tmf_ranges[tmf_nranges].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			tmf_nranges++;
		}
	}
	return 0;
}

static bool tmf_from_library(const void *ret_addr)
{
	uintptr_t a = (uintptr_t)ret_addr;
	for (int i = 0; i < tmf_nranges; i++)
		if (a >= tmf_ranges[i].lo && a < tmf_ranges[i].hi)
			return true;
	return false;
}

static size_t tmf_slot(uintptr_t p) { return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> 47) & (TMF_TABLE - 1); }

/* Caller holds tmf_lock. */
static void tmf_add_locked(uintptr_t p)
{
	if (tmf_live >= TMF_TABLE - 1) {
		static const char msg[] = "malloc_fault.h: block table full\n";
		fwrite(msg, 1, sizeof(msg) - 1, stderr);
		abort();
	}
	size_t i = tmf_slot(p);
	while (tmf_table[i])
		i = (i + 1) & (TMF_TABLE - 1);
	tmf_table[i] = p;
	tmf_live++;
}

/* Caller holds tmf_lock.  Linear probing with backward-shift deletion. */
static void tmf_remove_locked(uintptr_t p)
{
	size_t i = tmf_slot(p);
	while (tmf_table[i] && tmf_table[i] != p)
		i = (i + 1) & (TMF_TABLE - 1);
	if (!tmf_table[i])
		return;
	tmf_table[i] = 0;
	tmf_live--;
	size_t j = i;
	for (;;) {
		j = (j + 1) & (TMF_TABLE - 1);
		if (!tmf_table[j])
			break;
		size_t home = tmf_slot(tmf_table[j]);
		/* Move j back to i unless its home lies cyclically in (i, j]. */
		bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			tmf_table[i] = tmf_table[j];
			tmf_table[j] = 0;
			i = j;
		}
	}
}

/* Counts a library allocation; false when it must fail. */
static bool tmf_allow(const void *caller)
{
	if (!tmf_from_library(caller))
		return true;
	pthread_mutex_lock(&tmf_lock);
	unsigned long n = ++tmf_calls;
	bool fail = tmf_fail_at && n == tmf_fail_at;
	pthread_mutex_unlock(&tmf_lock);
	return !fail;
}

static void tmf_track(const void *caller, void *p)
{
	if (!p || !tmf_from_library(caller))
		return;
	pthread_mutex_lock(&tmf_lock);
	tmf_add_locked((uintptr_t)p);
	pthread_mutex_unlock(&tmf_lock);
}

static void tmf_untrack(void *p)
{
	if (!p || !tmf_nranges)
		return;
	pthread_mutex_lock(&tmf_lock);
	tmf_remove_locked((uintptr_t)p);
	pthread_mutex_unlock(&tmf_lock);
}

/* The body of an allocation function: count (and maybe fail) the call,
 * allocate with `expr`, remember a library block.  A macro, so that the
 * return address is the caller of the function it expands in. */
#define TMF_ALLOCATE(expr)                                                                                   \
	do {                                                                                                 \
		const void *caller_ = __builtin_return_address(0);                                            \
		if (!tmf_allow(caller_)) {                                                                   \
			errno = ENOMEM;                                                                      \
			return NULL;                                                                         \
		}                                                                                            \
		void *p_ = (expr);                                                                           \
		tmf_track(caller_, p_);                                                                      \
		return p_;                                                                                   \
	} while (0)

void *malloc(size_t n) { TMF_ALLOCATE(__libc_malloc(n)); }

void *calloc(size_t n, size_t m) { TMF_ALLOCATE(__libc_calloc(n, m)); }

void *memalign(size_t align, size_t n) { TMF_ALLOCATE(__libc_memalign(align, n)); }

void *aligned_alloc(size_t align, size_t n) { TMF_ALLOCATE(__libc_memalign(align, n)); }

void *realloc(void *old, size_t n)
{
	const void *caller = __builtin_return_address(0);
	if (n && !tmf_allow(caller)) {
		errno = ENOMEM;
		return NULL; /* old stays valid */
	}
	void *p = __libc_realloc(old, n);
	if (p || !n) {
		tmf_untrack(old);
		tmf_track(caller, p);
	}
	return p;
}

void free(void *p)
{
	tmf_untrack(p);
	__libc_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	const void *caller = __builtin_return_address(0);
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	if (!tmf_allow(caller))
		return ENOMEM;
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	tmf_track(caller, p);
	*out = p;
	return 0;
}

/* Finds the library's code; call once the library is loaded (it is linked
 * in, so at the start of main).  Returns 0, or -1 if it was not found. */
static inline int t_malloc_init(void)
{
	dl_iterate_phdr(tmf_phdr_cb, NULL);
	return tmf_nranges ? 0 : -1;
}

/* The nth library allocation from now (1 = the next) fails; 0: no rule. */
static inline void t_malloc_fail_nth(unsigned long nth)
{
	pthread_mutex_lock(&tmf_lock);
	tmf_fail_at = nth ? tmf_calls + nth : 0;
	pthread_mutex_unlock(&tmf_lock);
}

/* Library allocations so far (failed ones included). */
static inline unsigned long t_malloc_calls(void)
{
	pthread_mutex_lock(&tmf_lock);
	unsigned long n = tmf_calls;
	pthread_mutex_unlock(&tmf_lock);
	return n;
}

/* Blocks the library allocated and nobody freed yet. */
static inline size_t t_malloc_live(void)
{
	pthread_mutex_lock(&tmf_lock);
	size_t n = tmf_live;
	pthread_mutex_unlock(&tmf_lock);
	return n;
}

#else /* a sanitizer owns the allocator */

static inline int t_malloc_init(void) { return -1; }
static inline void t_malloc_fail_nth(unsigned long nth) { (void)nth; }
static inline unsigned long t_malloc_calls(void) { return 0; }
static inline size_t t_malloc_live(void) { return 0; }

#endif /* T_MALLOC_FAULT */

#endif /* OCF_MALLOC_FAULT_H_ */
