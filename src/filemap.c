/* SPDX-License-Identifier: Apache-2.0 */
/*
 * filemap.c - a file's mappings: cached bytes copied into staging through
 * read-only windows, with stores that bypass the CPU caches; buffered
 * writes stored through writable windows.
 *
 * DESIGN: why.  A staged read copies file bytes into pinned memory and the
 * GPU then reads that memory by DMA.  Filled by pread, the staging buffer's
 * last bytes sit modified in the CPU caches, and a DMA read of such lines
 * is slow: on the H200 machine a 1 MiB host-to-device copy of a buffer just
 * filled by pread took 47 µs, of one filled with non-temporal stores 28 µs,
 * and eight threads staging 256 KiB chunks moved 20 GB/s the first way and
 * 31 the second at 0.40 against 0.25 CPU s/GB (docs/history/benchmarks.md).
 * The
 * kernel's copy in pread cannot be told to bypass the caches; a copy of our
 * own can, if it can see the page cache: through a mapping of the file.
 * (Copying pread's output a second time costs more than it saves, and
 * writing the lines back with clwb costs CPU: fileio.c does that only where
 * this path does not run.)
 *
 * DESIGN: where.  A handle's staged reads (device memory, and an O_DIRECT
 * handle's host memory), for the range cachestat found cached (fileio.c).
 * Not a buffered handle's reads into host memory, which the program reads
 * next and wants in its caches.  An O_DIRECT handle's copies only while
 * its file is quiet (fmap_copy_direct): a copy through a mapping is not
 * atomic per page (a direct write that invalidates a page mid-copy leaves
 * the rest of the copy to the page read in again), and a racing direct
 * write must find each block of an O_DIRECT read old or new, as preadv2's
 * whole-page copies keep it.  A direct write updates the file's times when
 * it begins, before it invalidates anything, so a copy that begins when
 * both times are OPENCUFILE_MAPPED_DIRECT_QUIET_MS (10 s) old, and finds
 * them unchanged when it ends, raced no write.  A buffered read racing
 * with a write has no such promise.
 *
 * DESIGN: writes.  A buffered write's pieces that cover whole 2 MiB regions
 * of the file are stored through writable windows (fmap_store; fileio.c
 * decides where, with the blocks reserved first): a store's page fault
 * takes no file lock, so writers of one file move in parallel, where
 * pwrite holds the file's write lock for its whole copy.  Writable windows
 * are placed at addresses aligned like their file offsets to 2 MiB and
 * marked MADV_HUGEPAGE, so that one fault maps a whole folio, and
 * MADV_DONTFORK.
 *
 * DESIGN: how.  Each handle's file is mapped lazily in windows of 1 GiB
 * (PROT_READ, MAP_SHARED: the page cache's own pages, coherent with every read
 * and write of the file as pread is), found by file offset in a table of 256
 * slots: a window is mapped on first use under the table's lock, published with
 * a release store and never replaced or unmapped while the handle's I/O may use
 * it (the windows go when the handle's files are closed: at its deregistration,
 * once the calls using it have left, or with its last reference), so a copy
 * looks its window up without a lock.  A table slot already taken by another
 * window (a file past 256 GiB), or 4096 windows in the process, sends the read
 * to pread.  Windows are MADV_RANDOM: a fault maps the cached pages around it
 * but starts no readahead, so a range the caller leaves uncached stays
 * uncached.  They are mapped PROT_NONE, unlocked, then made readable, so that a
 * process under mlockall(MCL_FUTURE) does not lock and read in a whole window.
 *
 * DESIGN: what stays mapped.  A mapped page is one that posix_fadvise
 * (POSIX_FADV_DONTNEED) and drop_caches leave in the page cache, and one the
 * process's resident size counts.  So a window's page-table entries are dropped
 * (MADV_DONTNEED: the pages stay cached, only our mapping of them goes) once it
 * has served 64 MiB since the last drop, by the copy that crosses that mark,
 * and every second by a ticker thread for any window that served bytes since;
 * and the windows go with the handle's files.  A page a read copied is
 * therefore mapped for at most about a second after the read, and at most 64
 * MiB of a window at any time.  A drop costs one TLB shootdown, an interrupt of
 * every CPU that runs a thread of the process: dropping after every copy cost a
 * lone 64 KiB reader a third of its speed on the H200 machine, and after every
 * 2 MiB cost eight callers of 16 MiB reads a few per cent.  Later copies fault
 * the pages in again, at about the cost of pread's own walk of the page cache.
 *
 * DESIGN: when streaming stores lose.  Streaming pays where a request
 * waits for its copies: one 1-4 MiB call, 16 callers of 1 MiB (27 GB/s with
 * ordinary stores, 43 streaming on the H200 machine), one caller of 16 MiB
 * with eight participants (20 against 28), batches of 64 KiB entries.  It
 * loses where many participants keep the pipelines of large requests full
 * and the bus is the limit (one 4 GiB call, 16 callers of 16 MiB: ~47 GB/s
 * with ordinary stores, 40-46 streaming): the staging buffers then go to
 * memory and back, where ordinary stores leave much of them in the
 * last-level cache for the DMA.  So the engine marks the chunks of a
 * request split among participants, read while more than twice one
 * request's participants run (fio_bulk_reads), and those are copied
 * through the mapping with ordinary stores: level with preadv2 in one
 * process (the mapping's page faults cost what pread's page-cache walk
 * does) at a tenth less CPU, and 10-20 % faster with two processes
 * reading at once on the two-GPU host, where memory bandwidth is shared
 * (docs/history/benchmarks.md, 2026-11-28).  OPENCUFILE_MAPPED_BULK=off leaves
 * them to preadv2.
 *
 * DESIGN: faults.  A mapped page that is no longer backed (the file was
 * truncated between the size check and the copy, or reading an evicted page
 * from the disk failed) raises SIGBUS in the copying thread.  A process-wide
 * handler, installed at the first copy with the previous one saved, jumps back
 * out of the copy when the fault address lies in the range the current thread
 * is copying (a pointer in initial-exec TLS: no allocation in the handler);
 * every other SIGBUS goes to the previous handler or the default action, as it
 * would without us.  The copy then returns -1 and the caller reads the range
 * with preadv2 (a store's piece is written with pwrite), which reports the
 * short count or the error.  A fault can be caught only if our handler is
 * installed and SIGBUS is not blocked in the thread (a blocked SIGBUS from a
 * fault kills the process), so both are checked before every copy: if the
 * application has since installed its own handler, mapped reads stop for the
 * process (said once in the log); a thread that blocks SIGBUS reads with pread.
 */
#define _GNU_SOURCE
#include "filemap.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "config.h"
#include "cpu_features.h"
#include "fault.h"
#include "internal.h"
#include "log.h"
#include "ticker.h"

#define WIN_SHIFT 30
#define WIN_SIZE ((size_t)1 << WIN_SHIFT)
#define SLOTS 256		       /* windows a handle maps: 256 GiB of file */
#define MAX_WINDOWS 4096	       /* in the process: 4 TiB of address space */
#define ZAP_BYTES ((uint64_t)64 << 20) /* served by a window between page-table drops */
#define HUGE_ALIGN FMAP_FOLIO_MAX       /* a writable window's address, like its offset */

typedef void (*copy_fn)(char *dst, const char *src, size_t n);

struct ocf_fmap {
	struct ocf_fmap *prev, *next; /* every fmap, under reg_lock */
	int fd;
	bool writable;		/* stores (fmap_store), not copies out */
	copy_fn copy;		/* the copy loop of copies out (OPENCUFILE_MAPPED_READS) */
	pthread_mutex_t lock;	/* serializes mapping windows */
	char *base[SLOTS];	/* atomic: the window's first byte, or NULL */
	uint64_t idx[SLOTS];	/* its window index; written before base is published */
	uint64_t served[SLOTS]; /* atomic: bytes copied since its last page-table drop */
};

/* ---------------------------------------------------------------- copies */

/* Copies through a file's mapping are file I/O, not accesses of the
 * program's memory: threads storing into and copying out of one file race
 * there as their pwrite and pread would, unseen by ThreadSanitizer in the
 * kernel.  Under it, those copies (and the stores and loads of the loops
 * below) are not instrumented, so that the races it reports are the
 * program's own. */
#if defined(__SANITIZE_THREAD__)
#define OCF_NO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OCF_NO_TSAN 1
#endif
#endif
#ifdef OCF_NO_TSAN
#define FILE_COPY __attribute__((no_sanitize("thread"), noinline))
FILE_COPY static void raw_copy(char *dst, const char *src, size_t n)
{
	/* Words, then bytes; the empty asm keeps the compiler from turning
	 * the loop back into a call of memcpy, which the runtime intercepts. */
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		__builtin_memcpy(&w, src + i, 8);
		__builtin_memcpy(dst + i, &w, 8);
		__asm__ volatile("" ::: "memory");
	}
	for (; i < n; i++) {
		dst[i] = src[i];
		__asm__ volatile("" ::: "memory");
	}
}
#else
#define FILE_COPY
static inline void raw_copy(char *dst, const char *src, size_t n) { memcpy(dst, src, n); }
#endif

FILE_COPY static void copy_plain(char *dst, const char *src, size_t n)
{
	raw_copy(dst, src, n);
}

#if defined(__x86_64__)
/* Each: ordinary stores up to the first aligned byte of dst, then aligned
 * streaming stores, the tail ordinary; sfence so that the stores are
 * visible before the caller queues the DMA that reads them. */
FILE_COPY static void copy_sse2(char *dst, const char *src, size_t n)
{
	size_t head = OCF_MIN((16 - (uintptr_t)dst % 16) % 16, n);
	raw_copy(dst, src, head);
	dst += head, src += head, n -= head;
	for (; n >= 64; dst += 64, src += 64, n -= 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)src),
			b = _mm_loadu_si128((const __m128i *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + 32)),
			d = _mm_loadu_si128((const __m128i *)(src + 48));
		_mm_stream_si128((__m128i *)dst, a);
		_mm_stream_si128((__m128i *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(dst + 48), d);
	}
	raw_copy(dst, src, n);
	_mm_sfence();
}

FILE_COPY __attribute__((target("avx2"))) static void copy_avx2(char *dst, const char *src, size_t n)
{
	size_t head = OCF_MIN((32 - (uintptr_t)dst % 32) % 32, n);
	raw_copy(dst, src, head);
	dst += head, src += head, n -= head;
	for (; n >= 128; dst += 128, src += 128, n -= 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)src),
			b = _mm256_loadu_si256((const __m256i *)(src + 32));
		__m256i c = _mm256_loadu_si256((const __m256i *)(src + 64)),
			d = _mm256_loadu_si256((const __m256i *)(src + 96));
		_mm256_stream_si256((__m256i *)dst, a);
		_mm256_stream_si256((__m256i *)(dst + 32), b);
		_mm256_stream_si256((__m256i *)(dst + 64), c);
		_mm256_stream_si256((__m256i *)(dst + 96), d);
	}
	raw_copy(dst, src, n);
	_mm_sfence();
}

FILE_COPY __attribute__((target("avx512f"))) static void copy_avx512(char *dst, const char *src, size_t n)
{
	size_t head = OCF_MIN((64 - (uintptr_t)dst % 64) % 64, n);
	raw_copy(dst, src, head);
	dst += head, src += head, n -= head;
	for (; n >= 256; dst += 256, src += 256, n -= 256) {
		__m512i a = _mm512_loadu_si512(src), b = _mm512_loadu_si512(src + 64);
		__m512i c = _mm512_loadu_si512(src + 128), d = _mm512_loadu_si512(src + 192);
		_mm512_stream_si512((void *)dst, a);
		_mm512_stream_si512((void *)(dst + 64), b);
		_mm512_stream_si512((void *)(dst + 128), c);
		_mm512_stream_si512((void *)(dst + 192), d);
	}
	raw_copy(dst, src, n);
	_mm_sfence();
}
#endif

/* ----------------------------------------------------------- configuration
 *
 * OPENCUFILE_MAPPED_* are ocf_cfg.tuning's (config.h): resolved at driver
 * open, constant until the close, by which every mapping is gone (each
 * goes with its handle).  A mapping takes its copy loop when it is made. */

/* OPENCUFILE_MAPPED_READS's words (config.c), in order. */
enum { MAPPED_BEST, MAPPED_OFF, MAPPED_AVX512, MAPPED_AVX2, MAPPED_SSE2, MAPPED_PLAIN };

/* The copy loop OPENCUFILE_MAPPED_READS asks for ("on": the best one the
 * CPU runs), and its name. */
static copy_fn stream_copy(const char **name)
{
	int want = ocf_cfg.tuning.mapped_reads;
	*name = "plain";
#if defined(__x86_64__)
	const struct ocf_cpu_features *cpu = ocf_cpu_features();
	if ((want == MAPPED_BEST || want == MAPPED_AVX512) && cpu->avx512f) {
		*name = "avx512";
		return copy_avx512;
	}
	if ((want == MAPPED_BEST || want == MAPPED_AVX512 || want == MAPPED_AVX2) && cpu->avx2) {
		*name = "avx2";
		return copy_avx2;
	}
	if (want != MAPPED_PLAIN && want != MAPPED_OFF) {
		*name = "sse2";
		return copy_sse2;
	}
#else
	(void)want;
#endif
	return copy_plain;
}

void fmap_log_settings(void)
{
	const struct ocf_tuning *t = &ocf_cfg.tuning;
	const char *name;
	stream_copy(&name);
	if (t->mapped_reads == MAPPED_OFF)
		log_debug("mapped reads: off (OPENCUFILE_MAPPED_READS)");
	else
		log_debug("mapped reads: on, %s copies; bulk chunks %s", name,
			  t->mapped_bulk ? "with ordinary stores" : "by preadv2");
}

/* ------------------------------------------------------------------ SIGBUS */

struct guard {
	sigjmp_buf env;
	const char *lo, *hi; /* the window range being copied from or stored to */
};

/* Initial-exec: the handler reads it without a call that could allocate
 * (8 bytes of the static TLS that a dlopen'ed library may take). */
static __thread struct guard *cur_guard __attribute__((tls_model("initial-exec")));
static __thread const char *streamed_lo, *streamed_hi;

static struct sigaction prev_bus;
static bool handler_ok;	  /* installed; relaxed atomic, true until the handler is found replaced */
static bool handler_lost; /* said in the log once */
static pthread_once_t handler_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct guard *g = __atomic_load_n(&cur_guard, __ATOMIC_RELAXED);
	if (g && si && si->si_code > 0 && (const char *)si->si_addr >= g->lo &&
	    (const char *)si->si_addr < g->hi)
		siglongjmp(g->env, 1);
	/* Not a fault of ours: what would have happened without us. */
	if (prev_bus.sa_flags & SA_SIGINFO) {
		if (prev_bus.sa_sigaction) {
			prev_bus.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (prev_bus.sa_handler == SIG_IGN) {
		/* Ignored: a raised SIGBUS is dropped, but the kernel turns a
		 * fault's into the default action, which returning would
		 * replace with the same fault forever. */
		if (!si || si->si_code <= 0)
			return;
	} else if (prev_bus.sa_handler != SIG_DFL) {
		prev_bus.sa_handler(sig);
		return;
	}
	/* The default action: blocked while this handler runs, the raised
	 * signal is delivered on return (a fault would also recur). */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
}

static void install_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	/* No SA_ONSTACK: the jump out of the handler skips sigreturn, which
	 * would leave an SS_AUTODISARM alternate stack disarmed; the faults
	 * the handler catches are not stack overflows. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	/* The previous action first: a SIGBUS between the two calls finds it
	 * already saved. */
	if (sigaction(SIGBUS, NULL, &prev_bus) != 0 || sigaction(SIGBUS, &sa, NULL) != 0) {
		log_info("mapped reads off: SIGBUS handler not installed (%s)", strerror(errno));
		return;
	}
	__atomic_store_n(&handler_ok, true, __ATOMIC_RELEASE);
}

/* Can a fault in a copy by this thread be caught now? */
static bool faults_catchable(void)
{
	pthread_once(&handler_once, install_handler);
	if (!__atomic_load_n(&handler_ok, __ATOMIC_ACQUIRE))
		return false;
	struct sigaction cur;
	if (sigaction(SIGBUS, NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) ||
	    cur.sa_sigaction != on_sigbus) {
		__atomic_store_n(&handler_ok, false, __ATOMIC_RELAXED);
		if (!__atomic_exchange_n(&handler_lost, true, __ATOMIC_RELAXED))
			log_info(
			    "mapped reads off: the application replaced the SIGBUS handler; reads use pread");
		return false;
	}
	sigset_t mask;
	if (pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0 || sigismember(&mask, SIGBUS))
		return false;
	return true;
}

/* Copies n bytes from src to dst with `copy`, one of the two inside a
 * window (`in`, the range whose faults are caught); false if a page fault
 * there raised SIGBUS (dst may hold part of the bytes). */
static bool guarded_copy(copy_fn copy, char *dst, const char *src, size_t n, const char *in)
{
	struct guard g;
	g.lo = in;
	g.hi = in + n;
	if (sigsetjmp(g.env, 0)) {
		__atomic_store_n(&cur_guard, NULL, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		/* The handler ran with SIGBUS blocked and did not return. */
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGBUS);
		pthread_sigmask(SIG_UNBLOCK, &s, NULL);
		return false;
	}
	__atomic_store_n(&cur_guard, &g, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	copy(dst, src, n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&cur_guard, NULL, __ATOMIC_RELAXED);
	return true;
}

/* ----------------------------------------------------------------- windows */

static unsigned windows_total; /* atomic: windows mapped in the process */

/* reg_lock protects the list of fmaps; the tick holds it while it drops
 * page-table entries, so fmap_destroy cannot unmap a window under it. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ocf_fmap *reg_head;

/* Drops the page-table entries of window `slot` if it served bytes since
 * the last drop and `at_least` of them (or anything, at 0). */
static void drop_if_served(struct ocf_fmap *m, int slot, uint64_t at_least)
{
	char *b = __atomic_load_n(&m->base[slot], __ATOMIC_ACQUIRE);
	uint64_t s = __atomic_load_n(&m->served[slot], __ATOMIC_RELAXED);
	if (!b || !s || s < at_least)
		return;
	if (!__atomic_compare_exchange_n(&m->served[slot], &s, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return; /* another copy or the tick got there first */
	madvise(b, WIN_SIZE, MADV_DONTNEED);
}

static void tick(void)
{
	pthread_mutex_lock(&reg_lock);
	for (struct ocf_fmap *m = reg_head; m; m = m->next)
		for (int i = 0; i < SLOTS; i++)
			drop_if_served(m, i, 0);
	pthread_mutex_unlock(&reg_lock);
}

static struct ocf_ticker drop_ticker = OCF_TICKER_INIT(tick);

void fmap_stop(void)
{
	ticker_stop(&drop_ticker);
}

static struct ocf_fmap *fmap_new(int fd, bool writable)
{
	struct ocf_fmap *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->fd = fd;
	m->writable = writable;
	const char *name;
	m->copy = stream_copy(&name);
	pthread_mutex_init(&m->lock, NULL);
	if (ticker_start(&drop_ticker) != 0) {
		log_debug("mapped %s off for fd %d: no thread to drop idle mappings", writable ? "writes" : "reads", fd);
		pthread_mutex_destroy(&m->lock);
		free(m);
		return NULL;
	}
	pthread_mutex_lock(&reg_lock);
	m->next = reg_head;
	if (reg_head)
		reg_head->prev = m;
	reg_head = m;
	pthread_mutex_unlock(&reg_lock);
	return m;
}

struct ocf_fmap *fmap_create(int fd)
{
	if (ocf_cfg.tuning.mapped_reads == MAPPED_OFF || fd < 0)
		return NULL;
	return fmap_new(fd, false);
}

struct ocf_fmap *fmap_create_writable(int fd)
{
	if (!ocf_cfg.tuning.mapped_writes || fd < 0)
		return NULL;
	return fmap_new(fd, true);
}

void fmap_destroy(struct ocf_fmap *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&reg_lock);
	if (m->prev)
		m->prev->next = m->next;
	else
		reg_head = m->next;
	if (m->next)
		m->next->prev = m->prev;
	pthread_mutex_unlock(&reg_lock);
	for (int i = 0; i < SLOTS; i++)
		if (m->base[i]) {
			munmap(m->base[i], WIN_SIZE);
			__atomic_fetch_sub(&windows_total, 1, __ATOMIC_RELAXED);
		}
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* Maps window `idx` of m's file; MAP_FAILED (errno set) if it cannot be.
 * PROT_NONE first, then munlock, then accessible: under mlockall
 * (MCL_FUTURE) an accessible mapping would be locked and read in whole
 * (1 GiB from the disk) by mmap itself, and locked pages cannot be
 * dropped.  A read window is MADV_RANDOM (a fault starts no readahead).  A
 * writable one is placed at an address aligned like its file offset to
 * 2 MiB and marked MADV_HUGEPAGE, so that a store's fault can bring in and
 * map a whole 2 MiB folio of blocks reserved beforehand: 8 threads storing
 * into such blocks moved 15-16 GB/s on the H200 machine, 1.4-1.7 with
 * 4 KiB faults (bench/ceilings -t writes, docs/history/benchmarks.md); and
 * MADV_DONTFORK, so that a child of the process gets no writable mapping
 * of the application's file. */
static void *map_window(struct ocf_fmap *m, uint64_t idx)
{
	off_t foff = (off_t)(idx << WIN_SHIFT);
	char *at = NULL;
	if (m->writable) {
		/* An aligned hole in the address space, the slack around it
		 * given back. */
		char *res = mmap(NULL, WIN_SIZE + HUGE_ALIGN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0);
		if (res == MAP_FAILED)
			return MAP_FAILED;
		at = (char *)OCF_ALIGN_UP((uintptr_t)res, (uintptr_t)HUGE_ALIGN);
		if (at > res)
			munmap(res, (size_t)(at - res));
		if (res + WIN_SIZE + HUGE_ALIGN > at + WIN_SIZE)
			munmap(at + WIN_SIZE, (size_t)(res + WIN_SIZE + HUGE_ALIGN - (at + WIN_SIZE)));
	}
	void *p = mmap(at, WIN_SIZE, PROT_NONE, MAP_SHARED | (at ? MAP_FIXED : 0), m->fd, foff);
	if (p == MAP_FAILED) {
		int e = errno;
		if (at)
			munmap(at, WIN_SIZE);
		errno = e;
		return MAP_FAILED;
	}
	(void)munlock(p, WIN_SIZE);
	if (mprotect(p, WIN_SIZE, m->writable ? PROT_READ | PROT_WRITE : PROT_READ) != 0) {
		int e = errno;
		munmap(p, WIN_SIZE);
		errno = e;
		return MAP_FAILED;
	}
	if (m->writable) {
		(void)madvise(p, WIN_SIZE, MADV_HUGEPAGE); /* where THP is off: 4 KiB faults */
		(void)madvise(p, WIN_SIZE, MADV_DONTFORK);
	} else {
		madvise(p, WIN_SIZE, MADV_RANDOM);
	}
	return p;
}

/* Window `idx` of the file, mapped now if need be; NULL if it cannot be. */
static char *window(struct ocf_fmap *m, uint64_t idx, int *slot_out)
{
	int slot = (int)(idx % SLOTS);
	*slot_out = slot;
	char *b = __atomic_load_n(&m->base[slot], __ATOMIC_ACQUIRE);
	if (b)
		return m->idx[slot] == idx ? b : NULL;
	if (idx > (uint64_t)INT64_MAX >> WIN_SHIFT)
		return NULL;
	pthread_mutex_lock(&m->lock);
	b = m->base[slot];
	if (!b) {
		if (__atomic_add_fetch(&windows_total, 1, __ATOMIC_RELAXED) > MAX_WINDOWS) {
			__atomic_fetch_sub(&windows_total, 1, __ATOMIC_RELAXED);
		} else {
			void *p = map_window(m, idx);
			if (p == MAP_FAILED) {
				__atomic_fetch_sub(&windows_total, 1, __ATOMIC_RELAXED);
				log_debug("fd %d: window %llu not mapped (%s): %s with a system call", m->fd,
					  (unsigned long long)idx, strerror(errno), m->writable ? "written" : "read");
			} else {
				m->idx[slot] = idx;
				b = p;
				__atomic_store_n(&m->base[slot], b, __ATOMIC_RELEASE);
			}
		}
	}
	pthread_mutex_unlock(&m->lock);
	return b && m->idx[slot] == idx ? b : NULL;
}

/* After a window served n more bytes. */
static void served(struct ocf_fmap *m, int slot, size_t n)
{
	if (__atomic_add_fetch(&m->served[slot], n, __ATOMIC_RELAXED) >= ZAP_BYTES)
		drop_if_served(m, slot, ZAP_BYTES);
}

static __thread bool bulk;	    /* this thread's reads are bulk (fio_bulk_reads) */
static unsigned long faults_caught; /* atomic: SIGBUS caught in copies */
static unsigned long streamed;	    /* atomic: copies with streaming stores */

#ifdef OCF_FAULT_INJECTION
/* fault.h's test controls: defined here, where the counts are. */
OCF_EXPORT unsigned long ocf_fault_mapped_caught(void)
{
	return __atomic_load_n(&faults_caught, __ATOMIC_RELAXED);
}

OCF_EXPORT unsigned long ocf_fault_mapped_streamed(void)
{
	return __atomic_load_n(&streamed, __ATOMIC_RELAXED);
}
#endif

void fmap_bulk(bool on)
{
	bulk = on;
}

static ssize_t copy_windows(struct ocf_fmap *m, copy_fn copy, char *mem, off_t off, size_t n, bool store);

static ssize_t copy_sized(struct ocf_fmap *m, char *dst, off_t off, size_t n, const struct stat *st);

ssize_t fmap_copy(struct ocf_fmap *m, char *dst, off_t off, size_t n)
{
	if (!m || off < 0 || (bulk && !ocf_cfg.tuning.mapped_bulk))
		return -1;
	if (!faults_catchable())
		return -1;
	struct stat st; /* not fault_fstat: the tests count the read path's own */
	if (fstat(m->fd, &st) != 0)
		return -1;
	return copy_sized(m, dst, off, n, &st);
}

static unsigned long direct_copies; /* atomic: fmap_copy_direct's copies */

#ifdef OCF_FAULT_INJECTION
OCF_EXPORT unsigned long ocf_fault_mapped_direct_copies(void)
{
	return __atomic_load_n(&direct_copies, __ATOMIC_RELAXED);
}
#endif

static bool same_times(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Whether time t lies more than ns before now (a clock set back: no). */
static bool quiet_since(struct timespec t, const struct timespec *now, uint64_t ns)
{
	int64_t d = ((int64_t)now->tv_sec - (int64_t)t.tv_sec) * 1000000000 + (now->tv_nsec - t.tv_nsec);
	return d >= 0 && (uint64_t)d >= ns;
}

ssize_t fmap_copy_direct(struct ocf_fmap *m, char *dst, off_t off, size_t n)
{
	if (!m || off < 0 || (bulk && !ocf_cfg.tuning.mapped_bulk) || !faults_catchable())
		return -1;
	struct stat a, b;
	struct timespec now;
	if (fstat(m->fd, &a) != 0 || clock_gettime(CLOCK_REALTIME, &now) != 0)
		return -1;
	uint64_t quiet_ns = ocf_cfg.tuning.mapped_direct_quiet_ns;
	if (!quiet_since(a.st_ctim, &now, quiet_ns) || !quiet_since(a.st_mtim, &now, quiet_ns))
		return -1;
	ssize_t r = copy_sized(m, dst, off, n, &a);
	if (r > 0 && (fstat(m->fd, &b) != 0 || !same_times(&a, &b)))
		return -1; /* a write began during the copy */
	if (r > 0)
		__atomic_fetch_add(&direct_copies, 1, __ATOMIC_RELAXED);
	return r;
}

/* fmap_copy once fstat told the file's size (st). */
static ssize_t copy_sized(struct ocf_fmap *m, char *dst, off_t off, size_t n, const struct stat *st)
{
	if (off >= st->st_size || n == 0)
		return 0;
	n = (size_t)OCF_MIN((uint64_t)n, (uint64_t)(st->st_size - off));
	if (fault_errno(OCF_FAULT_MAPPED))
		return -1; /* a test's stand-in for a fault in the copy */
	copy_fn copy = bulk ? copy_plain : m->copy;
	ssize_t r = copy_windows(m, copy, dst, off, n, false);
	if (r > 0 && copy != copy_plain) {
		__atomic_fetch_add(&streamed, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&streamed_lo, dst, __ATOMIC_RELAXED);
		__atomic_store_n(&streamed_hi, dst + n, __ATOMIC_RELAXED);
	}
	return r;
}

/* Copies between mem and [off, off+n) of the file (n > 0), window by
 * window: out of the windows into mem, or into them from mem (store).
 * Returns n, or -1 where a window cannot be mapped or a fault was caught. */
static ssize_t copy_windows(struct ocf_fmap *m, copy_fn copy, char *mem, off_t off, size_t n, bool store)
{
	size_t done = 0;
	while (done < n) {
		uint64_t at = (uint64_t)off + done;
		int slot;
		char *b = window(m, at >> WIN_SHIFT, &slot);
		if (!b)
			return -1;
		size_t in = (size_t)(at & (WIN_SIZE - 1));
		size_t k = OCF_MIN(n - done, WIN_SIZE - in);
		if (!(store ? guarded_copy(copy, b + in, mem + done, k, b + in)
			    : guarded_copy(copy, mem + done, b + in, k, b + in))) {
			__atomic_fetch_add(&faults_caught, 1, __ATOMIC_RELAXED);
			log_debug("fd %d: fault %s %zu bytes at %llu through the mapping: %s", m->fd,
				  store ? "storing" : "copying", k, (unsigned long long)at,
				  store ? "written with pwrite" : "read with pread");
			return -1;
		}
		served(m, slot, k);
		done += k;
	}
	return (ssize_t)n;
}

static unsigned long long stored_bytes; /* atomic: bytes stored through writable windows */

#ifdef OCF_FAULT_INJECTION
OCF_EXPORT unsigned long long ocf_fault_mapped_stored(void)
{
	return __atomic_load_n(&stored_bytes, __ATOMIC_RELAXED);
}
#endif

ssize_t fmap_store(struct ocf_fmap *m, off_t off, const char *src, size_t n)
{
	if (!m || !m->writable || off < 0 || n == 0 || (uint64_t)off + n > (uint64_t)INT64_MAX)
		return -1;
	if (!faults_catchable())
		return -1;
	if (fault_errno(OCF_FAULT_MAPPED_STORE))
		return -1; /* a test's stand-in for a fault in the stores */
	if (copy_windows(m, copy_plain, (char *)src, off, n, true) < 0)
		return -1;
	__atomic_fetch_add(&stored_bytes, n, __ATOMIC_RELAXED);
	return (ssize_t)n;
}

void fmap_streamed_forget(void)
{
	__atomic_store_n(&streamed_hi, NULL, __ATOMIC_RELAXED);
}

bool fmap_streamed(const void *p, size_t n)
{
	const char *lo = __atomic_load_n(&streamed_lo, __ATOMIC_RELAXED);
	const char *hi = __atomic_load_n(&streamed_hi, __ATOMIC_RELAXED);
	return hi && (const char *)p >= lo && (const char *)p + n <= hi;
}
