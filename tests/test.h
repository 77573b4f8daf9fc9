/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test.h - shared helpers of the opencufile test suite.
 *
 * One test = one C file = one binary.  Exit status: 0 pass, 1 fail, 77 skip.
 * Every assertion prints the expression, both values and file:line, plus the
 * current case description (t_case) when a test loops over a matrix.
 *
 * Data pattern: the byte at file offset i is t_pat(i, seed); seed 0 is the
 * canonical file contents, other seeds give a pattern that differs from it at
 * (almost) every position, used for writes.
 *
 * Device memory is only touched through the CUDA driver API (cuMemcpyHtoD /
 * cuMemcpyDtoH), so the same tests run against the fake driver (whose device
 * memory faults on direct access) and against a real GPU.
 */
#ifndef OCF_TEST_H_
#define OCF_TEST_H_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <cuda.h>
#include <cufile.h>
#ifndef OPENCUFILE_API_VERSION_MAX
#error "the tests build against opencufile's include/cufile.h, not another cufile.h on the include path"
#endif

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

#define T_KIB ((size_t)1024)
#define T_MIB ((size_t)1024 * 1024)
#define T_GIB ((size_t)1024 * 1024 * 1024)

#define T_UNUSED __attribute__((unused))

/* Description of the case being run, printed with every failure. */
static char t_case[512] T_UNUSED;

static inline void t_set_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void t_set_case(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t_case, sizeof(t_case), fmt, ap);
	va_end(ap);
}

static inline void t_print_case(void)
{
	if (t_case[0])
		fprintf(stderr, "    case: %s\n", t_case);
}

/* ------------------------------------------------------------ assertions */

#define T_FAIL(...)                                                                        \
	do {                                                                               \
		fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                      \
		fprintf(stderr, __VA_ARGS__);                                              \
		fputc('\n', stderr);                                                       \
		t_print_case();                                                            \
		exit(T_EXIT_FAIL);                                                         \
	} while (0)

#define T_SKIP(...)                                                                        \
	do {                                                                               \
		fprintf(stderr, "%s:%d: SKIP: ", __FILE__, __LINE__);                      \
		fprintf(stderr, __VA_ARGS__);                                              \
		fputc('\n', stderr);                                                       \
		exit(T_EXIT_SKIP);                                                         \
	} while (0)

#define T_ASSERT(cond)                                                                     \
	do {                                                                               \
		if (!(cond))                                                               \
			T_FAIL("assertion `%s' is false", #cond);                         \
	} while (0)

#define T_CMP_(a, op, b, type, fmt)                                                        \
	do {                                                                               \
		type a_ = (type)(a);                                                       \
		type b_ = (type)(b);                                                       \
		if (!(a_ op b_))                                                           \
			T_FAIL("`%s %s %s': " fmt " vs " fmt, #a, #op, #b, a_, b_);        \
	} while (0)

/* Signed comparisons (int, long, ssize_t, off_t ...). */
#define T_EQ(a, b) T_CMP_(a, ==, b, long long, "%lld")
#define T_NE(a, b) T_CMP_(a, !=, b, long long, "%lld")
#define T_LT(a, b) T_CMP_(a, <, b, long long, "%lld")
#define T_LE(a, b) T_CMP_(a, <=, b, long long, "%lld")
#define T_GT(a, b) T_CMP_(a, >, b, long long, "%lld")
#define T_GE(a, b) T_CMP_(a, >=, b, long long, "%lld")
/* Unsigned comparisons (size_t, uint64_t). */
#define T_EQ_U(a, b) T_CMP_(a, ==, b, unsigned long long, "%llu")
#define T_LE_U(a, b) T_CMP_(a, <=, b, unsigned long long, "%llu")
/* Pointers. */
#define T_EQ_PTR(a, b) T_CMP_(a, ==, b, const void *, "%p")
#define T_NE_PTR(a, b) T_CMP_(a, !=, b, const void *, "%p")

/* A cuFile call returning CUfileError_t must give `expected`. */
#define T_CUFILE(expr, expected)                                                           \
	do {                                                                               \
		CUfileError_t st_ = (expr);                                                \
		CUfileOpError ex_ = (expected);                                            \
		if (st_.err != ex_)                                                        \
			T_FAIL("`%s' returned %d (%s, cu_err %d), expected %d (%s)", #expr, \
			       (int)st_.err, cufileop_status_error(st_.err), (int)st_.cu_err, \
			       (int)ex_, cufileop_status_error(ex_));                      \
	} while (0)
#define T_CUFILE_OK(expr) T_CUFILE(expr, CU_FILE_SUCCESS)

/* Describes a cuFileRead/cuFileWrite return value. */
static inline const char *t_io_ret_str(ssize_t r, int err, char *buf, size_t len)
{
	if (r >= 0)
		snprintf(buf, len, "%zd bytes", r);
	else if (r == -1)
		snprintf(buf, len, "-1, errno %d (%s)", err, strerror(err));
	else if (r > -100000 && IS_CUFILE_ERR((int)r))
		snprintf(buf, len, "-%lld (%s)", -(long long)r, CUFILE_ERRSTR((int)r));
	else
		snprintf(buf, len, "%zd (unexpected negative value)", r);
	return buf;
}

/* A cuFileRead/cuFileWrite call must return exactly `expected`. */
#define T_IO(expr, expected)                                                               \
	do {                                                                               \
		errno = 0;                                                                 \
		ssize_t r_ = (expr);                                                       \
		int e_ = errno;                                                            \
		ssize_t x_ = (ssize_t)(expected);                                          \
		if (r_ != x_) {                                                            \
			char b1_[128], b2_[128];                                           \
			T_FAIL("`%s' returned %s, expected %s", #expr,                     \
			       t_io_ret_str(r_, e_, b1_, sizeof(b1_)),                     \
			       t_io_ret_str(x_, 0, b2_, sizeof(b2_)));                     \
		}                                                                          \
	} while (0)

/* A cuFileRead/cuFileWrite call must return exactly `expected`; when that is
 * -1 (an argument error), errno must also be `expected_errno`. */
#define T_IO_E(expr, expected, expected_errno)                                             \
	do {                                                                               \
		errno = 0;                                                                 \
		ssize_t r_ = (expr);                                                       \
		int e_ = errno;                                                            \
		ssize_t x_ = (ssize_t)(expected);                                          \
		int xe_ = (expected_errno);                                                \
		if (r_ != x_ || (x_ == -1 && e_ != xe_)) {                                 \
			char b1_[128], b2_[128];                                           \
			T_FAIL("`%s' returned %s, expected %s", #expr,                     \
			       t_io_ret_str(r_, e_, b1_, sizeof(b1_)),                     \
			       t_io_ret_str(x_, xe_, b2_, sizeof(b2_)));                   \
		}                                                                          \
	} while (0)

/* A cuFileRead/cuFileWrite call must fail with -1 and errno `expected_errno`. */
#define T_IO_ERRNO(expr, expected_errno) T_IO_E(expr, -1, expected_errno)

/* A CUDA driver call must succeed. */
#define T_CU(expr)                                                                         \
	do {                                                                               \
		CUresult cr_ = (expr);                                                     \
		if (cr_ != CUDA_SUCCESS) {                                                 \
			const char *n_ = NULL;                                             \
			cuGetErrorName(cr_, &n_);                                          \
			T_FAIL("`%s' returned CUresult %d (%s)", #expr, (int)cr_,          \
			       n_ ? n_ : "?");                                             \
		}                                                                          \
	} while (0)

/* A libc call returning -1 on error must not fail. */
#define T_SYS(expr)                                                                        \
	do {                                                                               \
		if ((expr) == -1)                                                          \
			T_FAIL("`%s' failed: %s", #expr, strerror(errno));                 \
	} while (0)

/* --------------------------------------------------------------- pattern */

static inline uint8_t t_pat(uint64_t i, uint32_t seed)
{
	uint64_t x = i + (uint64_t)seed * 0x9E3779B1u;

	return (uint8_t)((uint8_t)((x * 2654435761u) >> 13) ^ (uint8_t)(x >> 20) ^
			 (uint8_t)(seed ? (seed * 37u) | 1u : 0u));
}

/* The fill and check helpers below run over every byte the tests move
 * (hundreds of MiB in the larger tests, under the sanitizers and valgrind
 * too).  Their loops (t_fast_*) work 8 bytes at a time from a table, and gcc
 * optimises them even in a Debug build (clang has no optimize attribute;
 * there they build as the rest of the test).  Under TSan the loops are not
 * instrumented (each word would be an unaligned access, checked as a range
 * of 8 bytes): the helper makes one range access over the whole buffer
 * before, which TSan checks the same way.  What a check reports is
 * unchanged: when the fast pass finds a difference, the byte-by-byte loop
 * with t_pat counts and names it. */
#if defined(__GNUC__) && !defined(__clang__)
#define T_FAST_OPT __attribute__((optimize("O2")))
#else
#define T_FAST_OPT
#endif
#if defined(__SANITIZE_THREAD__)
#define T_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define T_TSAN 1
#endif
#endif
#ifdef T_TSAN
void __tsan_read_range(void *addr, long size);
void __tsan_write_range(void *addr, long size);
#define T_FAST T_FAST_OPT __attribute__((no_sanitize_thread))
#define t_tsan_read_range(p, n) __tsan_read_range((void *)(p), (long)(n))
#define t_tsan_write_range(p, n) __tsan_write_range((void *)(p), (long)(n))
#else
#define T_FAST T_FAST_OPT
#define t_tsan_read_range(p, n) ((void)(p), (void)(n))
#define t_tsan_write_range(p, n) ((void)(p), (void)(n))
#endif
/* A -O0 build inlines nothing on its own. */
#define T_FAST_INLINE T_FAST __attribute__((always_inline))

/* 8 bytes at any address, read or written as one access. */
typedef uint64_t __attribute__((may_alias, aligned(1))) t_u64_unaligned;

/* t_pat 8 bytes at a time.  With x = i + seed * 0x9E3779B1 = h * 8192 + l
 * (l < 8192), the product's bits 13..20 are (l * 2654435761) >> 13 plus
 * h * 2654435761, mod 256: a table of the 8192 values of l, and in each
 * 8 KiB-aligned run of x one byte added to every byte of it (x >> 20 is
 * the same all through such a run too). */
static uint8_t t_pat_low[8192];

__attribute__((constructor)) static void t_pat_low_init(void)
{
	for (uint64_t l = 0; l < 8192; l++)
		t_pat_low[l] = (uint8_t)((l * 2654435761u) >> 13);
}

/* The pattern over x .. x + n - 1, one 8 KiB-aligned run of x: byte j is
 * (low[j] + add) ^ flip, in each of a word's bytes for the *8 fields. */
struct t_pat_seg {
	const uint8_t *low;
	size_t n;
	uint8_t add, flip;
	uint64_t add8, flip8;
};

T_FAST_INLINE static inline struct t_pat_seg t_pat_seg(uint64_t x, uint32_t seed, size_t left)
{
	struct t_pat_seg s;
	size_t l = (size_t)(x & 8191);

	s.low = t_pat_low + l;
	s.n = 8192 - l < left ? 8192 - l : left;
	s.add = (uint8_t)((x >> 13) * 2654435761u);
	s.flip = (uint8_t)((uint8_t)(x >> 20) ^ (uint8_t)(seed ? (seed * 37u) | 1u : 0u));
	s.add8 = s.add * 0x0101010101010101ull;
	s.flip8 = s.flip * 0x0101010101010101ull;
	return s;
}

/* Bytes j .. j + 7 of the run, in memory order (a byte-wise add: no carry
 * crosses from one byte into the next). */
T_FAST_INLINE static inline uint64_t t_pat_seg_word(const struct t_pat_seg *s, size_t j)
{
	const uint64_t lo7 = 0x7F7F7F7F7F7F7F7Full, hi1 = 0x8080808080808080ull;
	uint64_t w = *(const t_u64_unaligned *)(s->low + j);

	return (((w & lo7) + (s->add8 & lo7)) ^ ((w ^ s->add8) & hi1)) ^ s->flip8;
}

T_FAST_INLINE static inline uint8_t t_pat_seg_byte(const struct t_pat_seg *s, size_t j)
{
	return (uint8_t)((uint8_t)(s->low[j] + s->add) ^ s->flip);
}

T_FAST static inline void t_fast_fill_pattern(uint8_t *p, size_t len, uint64_t file_off, uint32_t seed)
{
	uint64_t x = file_off + (uint64_t)seed * 0x9E3779B1u;

	for (size_t i = 0; i < len;) {
		struct t_pat_seg s = t_pat_seg(x + i, seed, len - i);
		size_t j = 0;
		for (; j + 8 <= s.n; j += 8)
			*(t_u64_unaligned *)(p + i + j) = t_pat_seg_word(&s, j);
		for (; j < s.n; j++)
			p[i + j] = t_pat_seg_byte(&s, j);
		i += s.n;
	}
}

/* true when p[0..len) holds the pattern. */
T_FAST static inline bool t_fast_is_pattern(const uint8_t *p, size_t len, uint64_t file_off, uint32_t seed)
{
	uint64_t x = file_off + (uint64_t)seed * 0x9E3779B1u;

	for (size_t i = 0; i < len;) {
		struct t_pat_seg s = t_pat_seg(x + i, seed, len - i);
		size_t j = 0;
		while (j + 8 <= s.n && *(const t_u64_unaligned *)(p + i + j) == t_pat_seg_word(&s, j))
			j += 8;
		while (j < s.n && p[i + j] == t_pat_seg_byte(&s, j))
			j++;
		if (j < s.n)
			return false;
		i += s.n;
	}
	return true;
}

/* true when p[0..len) is all `byte`. */
T_FAST static inline bool t_fast_is_fill(const uint8_t *p, size_t len, uint8_t byte)
{
	const uint64_t all = byte * 0x0101010101010101ull;
	size_t i = 0;

	for (; i + 8 <= len; i += 8)
		if (*(const t_u64_unaligned *)(p + i) != all)
			return false;
	for (; i < len; i++)
		if (p[i] != byte)
			return false;
	return true;
}

static inline void t_fill_pattern(void *buf, size_t len, uint64_t file_off, uint32_t seed)
{
	t_tsan_write_range(buf, len);
	t_fast_fill_pattern(buf, len, file_off, seed);
}

/* Returns 0 when buf[0..len) holds the pattern of file offsets file_off...;
 * otherwise prints the first mismatches (prefixed by `what`) and returns -1. */
static inline int t_check_pattern(const void *buf, size_t len, uint64_t file_off, uint32_t seed,
				  const char *what)
{
	const uint8_t *p = buf;
	size_t bad = 0, first = 0;

	t_tsan_read_range(buf, len);
	if (t_fast_is_pattern(p, len, file_off, seed))
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (p[i] != t_pat(file_off + i, seed)) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	if (!bad)
		return 0;
	fprintf(stderr, "    %s: %zu of %zu bytes differ; first at index %zu (file offset %llu): "
			"got 0x%02x, expected 0x%02x\n",
		what, bad, len, first, (unsigned long long)(file_off + first), p[first],
		t_pat(file_off + first, seed));
	return -1;
}

/* Returns 0 when buf[0..len) is all `byte`, else prints and returns -1. */
static inline int t_check_fill(const void *buf, size_t len, uint8_t byte, const char *what)
{
	const uint8_t *p = buf;
	size_t bad = 0, first = 0;

	t_tsan_read_range(buf, len);
	if (t_fast_is_fill(p, len, byte))
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (p[i] != byte) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	if (!bad)
		return 0;
	fprintf(stderr, "    %s: %zu of %zu bytes changed; first at index %zu: got 0x%02x, "
			"expected 0x%02x\n",
		what, bad, len, first, p[first], byte);
	return -1;
}

#define T_POISON 0xA5
#define T_POISON2 0x5A

/* Returns 0 when the window v[0..wlen) holds the file's bytes (pattern
 * `seed` from file offset foff) at [start, start + len) and poison
 * (T_POISON) everywhere else, else prints and returns -1. */
static inline int t_check_guarded(const uint8_t *v, size_t wlen, size_t start, size_t len, uint64_t foff,
				  uint32_t seed)
{
	return t_check_fill(v, start, T_POISON, "guard before the range") ||
			       t_check_pattern(v + start, len, foff, seed, "data read") ||
			       t_check_fill(v + start + len, wlen - start - len, T_POISON, "guard after the range")
		   ? -1
		   : 0;
}

/* -------------------------------------------------------------- scratch */

/* Scratch memory of the helpers below, each of which writes all of it that
 * it reads.  The main thread keeps its last buffer (up to 64 MiB) for the
 * next: a test's thousands of checks then do not map and unmap megabytes
 * each time (under TSan each new mapping's shadow faults in again, page by
 * page).  Other threads allocate and free each time: a buffer handed from
 * one thread to another would order the two for TSan. */
struct t_scratch {
	void *p;
	size_t cap;
};
#define T_SCRATCH_KEEP (64 * T_MIB)
static struct t_scratch t_scratch_kept;
static pthread_t t_main_thread;

__attribute__((constructor)) static void t_main_thread_init(void)
{
	t_main_thread = pthread_self();
}

static inline struct t_scratch t_scratch_take(size_t len)
{
	struct t_scratch s = {NULL, len ? len : 1};
	bool main_thread = pthread_equal(pthread_self(), t_main_thread);

	if (main_thread && t_scratch_kept.p && t_scratch_kept.cap >= s.cap) {
		s = t_scratch_kept;
		t_scratch_kept.p = NULL;
		return s;
	}
	if (main_thread && t_scratch_kept.p) {
		free(t_scratch_kept.p);
		t_scratch_kept.p = NULL;
	}
	s.p = malloc(s.cap);
	T_ASSERT(s.p != NULL);
	return s;
}

static inline void t_scratch_give(struct t_scratch s)
{
	if (pthread_equal(pthread_self(), t_main_thread) && !t_scratch_kept.p && s.cap <= T_SCRATCH_KEEP) {
		t_scratch_kept = s;
		return;
	}
	free(s.p);
}

/* ------------------------------------------------------------------ files */

/* Directory for test files: $OPENCUFILE_TEST_DIR, else the working
 * directory (the build directory under ctest; never /tmp, which is often
 * tmpfs and refuses O_DIRECT). */
static inline const char *t_dir(void)
{
	const char *d = getenv("OPENCUFILE_TEST_DIR");

	return d && *d ? d : ".";
}

#define T_MAX_FILES 32
static char t_files[T_MAX_FILES][512] T_UNUSED;
static int t_nfiles T_UNUSED;

static inline void t_cleanup_files(void)
{
	for (int i = 0; i < t_nfiles; i++)
		unlink(t_files[i]);
	t_nfiles = 0;
}

/* Creates a new empty file in t_dir() (removed at exit); returns its path. */
static inline const char *t_new_file_path(void)
{
	static int counter;
	static bool hooked;

	if (t_nfiles == T_MAX_FILES)
		T_FAIL("too many test files");
	if (!hooked) {
		atexit(t_cleanup_files);
		hooked = true;
	}
	char *path = t_files[t_nfiles];
	snprintf(path, sizeof(t_files[0]), "%s/ocf_%s_%d_%d.dat", t_dir(),
		 program_invocation_short_name, (int)getpid(), counter++);
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0)
		T_FAIL("cannot create %s: %s", path, strerror(errno));
	close(fd);
	t_nfiles++;
	return path;
}

/* Writes the pattern `seed` over [off, off+len) of fd with plain pwrite. */
static inline void t_pwrite_pattern(int fd, uint64_t off, uint64_t len, uint32_t seed)
{
	size_t chunk = 4 * T_MIB;
	struct t_scratch sc = t_scratch_take(chunk);
	uint8_t *buf = sc.p;

	while (len) {
		size_t n = len < chunk ? (size_t)len : chunk;
		t_fill_pattern(buf, n, off, seed);
		size_t done = 0;
		while (done < n) {
			ssize_t w = pwrite(fd, buf + done, n - done, (off_t)(off + done));
			if (w <= 0)
				T_FAIL("pwrite at %llu: %s", (unsigned long long)(off + done),
				       strerror(errno));
			done += (size_t)w;
		}
		off += n;
		len -= n;
	}
	t_scratch_give(sc);
}

/* Creates a file of `len` bytes holding pattern `seed`; returns its path. */
static inline const char *t_make_pattern_file(uint64_t len, uint32_t seed)
{
	const char *path = t_new_file_path();
	int fd = open(path, O_RDWR);

	T_SYS(fd);
	t_pwrite_pattern(fd, 0, len, seed);
	T_SYS(fsync(fd));
	close(fd);
	return path;
}

/* Every 512-byte sector of buf (file offset off, len bytes) holds the
 * pattern of seed_old or of seed_new (a read racing direct writes of the
 * one over the other); returns how many hold the new one. */
static inline size_t t_sectors_old_or_new(const uint8_t *buf, size_t len, off_t off, uint32_t seed_old,
					  uint32_t seed_new, const char *what)
{
	uint8_t a[512], b[512];
	size_t news = 0;
	/* Sectors of the file: the first and last may be cut by the range. */
	for (size_t at = 0, k; at < len; at += k) {
		k = 512 - (size_t)(off + (off_t)at) % 512;
		if (k > len - at)
			k = len - at;
		t_fill_pattern(a, k, (uint64_t)off + at, seed_old);
		t_fill_pattern(b, k, (uint64_t)off + at, seed_new);
		if (memcmp(buf + at, b, k) == 0)
			news++;
		else if (memcmp(buf + at, a, k) != 0)
			T_FAIL("%s: the sector at file offset %lld holds neither the old nor the new bytes", what,
			       (long long)(off + (off_t)at));
	}
	return news;
}

/* Full pread (loops over short reads); returns bytes read (short at EOF). */
static inline size_t t_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (r < 0)
			T_FAIL("pread at %llu: %s", (unsigned long long)(off + done), strerror(errno));
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return done;
}

static inline uint64_t t_file_size(int fd)
{
	struct stat st;

	T_SYS(fstat(fd, &st));
	return (uint64_t)st.st_size;
}

/* 1 when the file system of `path` does O_DIRECT I/O (tmpfs, for one,
 * refuses O_DIRECT opens), 0 when not. */
static inline int t_odirect_supported(const char *path)
{
	int fd = open(path, O_RDWR | O_DIRECT);
	void *buf = NULL;
	int ok = 0;

	if (fd < 0)
		return 0;
	if (posix_memalign(&buf, 4096, 4096) == 0) {
		ssize_t r = pread(fd, buf, 4096, 0);
		ok = r >= 0;
		free(buf);
	}
	close(fd);
	return ok;
}

/* Pages of [lo, hi) of the file at path (flen bytes long) that the page
 * cache holds (mincore of a shared mapping). */
static inline size_t t_cached_pages(const char *path, size_t flen, off_t lo, off_t hi)
{
	int fd = open(path, O_RDONLY);
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	if (fd < 0)
		T_FAIL("open(%s): %s", path, strerror(errno));
	void *m = mmap(NULL, flen, PROT_READ, MAP_SHARED, fd, 0);
	T_ASSERT(m != MAP_FAILED);
	size_t pages = (flen + ps - 1) / ps;
	unsigned char *vec = malloc(pages);
	T_ASSERT(vec != NULL);
	if (mincore(m, flen, vec) != 0)
		T_FAIL("mincore: %s", strerror(errno));
	size_t n = 0;
	for (size_t p = (size_t)lo / ps; p < (size_t)(hi + (off_t)ps - 1) / ps && p < pages; p++)
		n += vec[p] & 1;
	free(vec);
	munmap(m, flen);
	close(fd);
	return n;
}

/*
 * Keeps [off, off+len) of the file at path in the page cache until
 * t_unpin_cached: a shared mapping of the range, locked with mlock where
 * RLIMIT_MEMLOCK (raised to its hard limit if need be) or CAP_IPC_LOCK
 * allows, else with every page touched once.  The kernel may evict a
 * cached page at any moment, also with no memory pressure at all:
 * proactive reclaim of unmapped page cache (DAMON's pageout scheme, which
 * some virtual machines run) takes pages of a file that was read a second
 * ago, and any reader must then read them from the disk again.  Tests that
 * count what reads of cached pages take from the disk (bytes, or the
 * system calls that depend on it) pin those pages first, so that the count
 * measures the library and not the reclaim.  Locked pages are never
 * reclaimed; mapped ones are left alone by reclaim of unmapped cache and
 * are the kernel's last choice otherwise.  Pinning reads in any page
 * evicted since the caller cached it.  off is a multiple of the page size
 * and the range lies inside the file.  mlock is made as a system call:
 * ASan's and TSan's runtimes replace the C library's mlock with one that
 * locks nothing and returns 0, which left the pages of the sanitizer
 * stages' tests neither locked nor even mapped in.
 */
struct t_pin {
	void *addr;
	size_t len;
};

static inline int t_mlock(const void *addr, size_t len) { return (int)syscall(SYS_mlock, addr, len); }

static inline struct t_pin t_pin_cached(const char *path, off_t off, size_t len)
{
	struct t_pin p = {NULL, len};
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		T_FAIL("open(%s): %s", path, strerror(errno));
	/* Read in whatever is missing, ahead of mlock, and nothing else. */
	(void)posix_fadvise(fd, off, (off_t)len, POSIX_FADV_WILLNEED);
	p.addr = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
	close(fd);
	T_ASSERT(p.addr != MAP_FAILED);
	/* A page read in here is read alone: no read-around into pages
	 * outside the range, which a test may need uncached. */
	(void)madvise(p.addr, len, MADV_RANDOM);
	if (t_mlock(p.addr, len) == 0)
		return p;
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_MEMLOCK, &rl) == 0 && t_mlock(p.addr, len) == 0)
			return p;
	}
	fprintf(stderr, "note: %zu bytes of %s mapped, not locked (mlock: %s)\n", len, path, strerror(errno));
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	for (size_t at = 0; at < len; at += ps)
		(void)((volatile const char *)p.addr)[at];
	return p;
}

static inline void t_unpin_cached(struct t_pin *p)
{
	if (p->addr)
		munmap(p->addr, p->len);
	p->addr = NULL;
}

/* open() that fails the test on error. */
static inline int t_open(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		T_FAIL("open(%s, 0x%x): %s", path, flags, strerror(errno));
	return fd;
}

/* Read and write system calls this process has made so far (syscr and
 * syscw of /proc/self/io; io_uring operations are not counted there).
 * Skips the test where the file is missing. */
static inline void t_proc_io_calls(unsigned long *reads, unsigned long *writes)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	if (!f)
		T_SKIP("no /proc/self/io");
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "syscr: %lu", reads);
		sscanf(line, "syscw: %lu", writes);
	}
	fclose(f);
}

/* Bytes this process has caused to be read from storage (read_bytes of
 * /proc/self/io, all threads).  Skips the test where the file is missing. */
static inline unsigned long long t_proc_read_bytes(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	unsigned long long v = 0;
	if (!f)
		T_SKIP("no /proc/self/io");
	while (fgets(line, sizeof(line), f))
		sscanf(line, "read_bytes: %llu", &v);
	fclose(f);
	return v;
}

/* Drops the file at path (flen bytes) from the page cache; skips the test
 * where POSIX_FADV_DONTNEED leaves pages of it cached.  The library's
 * mapped reads keep the pages they copied mapped (which the advice skips)
 * for up to about a second: tried again for three. */
static inline void t_evict_file(const char *path, size_t flen)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		T_FAIL("open(%s): %s", path, strerror(errno));
	T_SYS(fdatasync(fd));
	for (int i = 0;; i++) {
		T_SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		if (t_cached_pages(path, flen, 0, (off_t)flen) == 0)
			break;
		if (i == 30) {
			close(fd);
			T_SKIP("POSIX_FADV_DONTNEED left pages of %s cached", path);
		}
		usleep(100 * 1000);
	}
	close(fd);
}

/* Skips the test unless the file at path is on ext4, xfs or btrfs with
 * O_DIRECT: a local file system of handle.c's list, whose page cache is
 * the one mappings and reads share. */
static inline void t_require_local_odirect_fs(const char *path)
{
	if (!t_odirect_supported(path))
		T_SKIP("the file system of %s refuses O_DIRECT", path);
	struct statfs sfs;
	T_SYS(statfs(path, &sfs));
	if (sfs.f_type != 0xEF53 && sfs.f_type != 0x58465342 && sfs.f_type != 0x9123683E)
		T_SKIP("%s is not on ext4, xfs or btrfs (f_type %#lx)", path, (unsigned long)sfs.f_type);
}

/* Skips the test unless the file at path (flen bytes, at least 64 KiB) is
 * on a local file system whose O_DIRECT handles read cached pages by copy
 * (ext4, xfs, btrfs: handle.c's list; tmpfs refuses O_DIRECT) and whose
 * reads /proc/self/io counts (some kernels and containers do not).  Leaves
 * the file out of the page cache. */
static inline void t_require_cache_aware_fs(const char *path, size_t flen)
{
	t_require_local_odirect_fs(path);
	t_evict_file(path, flen);
	int fd = open(path, O_RDONLY);
	char *tmp = malloc(64 * 1024);
	T_ASSERT(fd >= 0 && tmp != NULL);
	unsigned long long before = t_proc_read_bytes();
	T_ASSERT(pread(fd, tmp, 64 * 1024, 0) == 64 * 1024);
	unsigned long long after = t_proc_read_bytes();
	free(tmp);
	close(fd);
	if (after == before)
		T_SKIP("/proc/self/io read_bytes does not count the reads of %s", path);
	t_evict_file(path, flen);
}

/* What the last t_count_fds() saw: each descriptor and what it pointed at,
 * and the process's threads, so that a leak report shows the descriptors
 * that were counted, not those open when the report is printed. */
static char t_fds_seen[8192];

static inline void t_fds_seen_add(const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(t_fds_seen);
	if (n < sizeof(t_fds_seen))
		snprintf(t_fds_seen + n, sizeof(t_fds_seen) - n, fmt, a, b);
}

/* Calls fn for each descriptor of this process (not the directory stream
 * that lists them) with its /proc/self/fd path and its link's target. */
static inline void t_each_fd(void (*fn)(const char *proc_path, const char *target, void *arg), void *arg)
{
	DIR *d = opendir("/proc/self/fd");
	T_ASSERT(d != NULL);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		char name[300], target[PATH_MAX + 1];
		snprintf(name, sizeof(name), "/proc/self/fd/%s", e->d_name);
		ssize_t k = readlink(name, target, PATH_MAX);
		target[k > 0 ? k : 0] = 0;
		fn(name, target, arg);
	}
	closedir(d);
}

struct t_fds_of_path_arg {
	char want[PATH_MAX];
	int n;
};

static inline void t_fds_of_path_one(const char *proc_path, const char *target, void *arg)
{
	(void)proc_path;
	struct t_fds_of_path_arg *a = arg;
	a->n += strcmp(target, a->want) == 0;
}

/* Descriptors of this process open on the file at path (what a handle of
 * that file may hold; the library's own rings and pipes are not counted). */
static inline int t_fds_of_path(const char *path)
{
	struct t_fds_of_path_arg a = {.n = 0};
	T_ASSERT(realpath(path, a.want) != NULL);
	t_each_fd(t_fds_of_path_one, &a);
	return a.n;
}

/* Number of open file descriptors of this process. */
static inline int t_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		T_FAIL("opendir /proc/self/fd: %s", strerror(errno));
	t_fds_seen[0] = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		char lp[300], target[512];
		snprintf(lp, sizeof(lp), "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(lp, target, sizeof(target) - 1);
		target[len > 0 ? len : 0] = 0;
		t_fds_seen_add("    fd %s -> %s\n", e->d_name, target);
	}
	closedir(d);
	d = opendir("/proc/self/task");
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char cp[300], comm[64] = "";
		snprintf(cp, sizeof(cp), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(cp, "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = 0;
		t_fds_seen_add("    thread %s %s\n", e->d_name, comm);
	}
	if (d)
		closedir(d);
	return n - 1; /* the directory stream itself */
}

/* A descriptor count that differs from `want` is counted again for up to
 * a second: a leak stays, while a descriptor some other code of the
 * process (glibc, a driver) holds only for a moment goes.  Returns the
 * last count; when the difference went away, says so on stderr with what
 * the first count saw, threads included, so the moment is not lost. */
static inline int t_fds_settle(int counted, int want)
{
	if (counted == want)
		return counted;
	static char first[sizeof(t_fds_seen)];
	memcpy(first, t_fds_seen, sizeof(first));
	for (int i = 0; i < 200 && counted != want; i++) {
		usleep(5000);
		counted = t_count_fds();
	}
	if (counted == want)
		fprintf(stderr, "note: a descriptor count differed for a moment (want %d); the first count saw:\n%s", want,
			first);
	return counted;
}

/* Prints what the last t_count_fds() counted (descriptors and threads)
 * and what is open now (for leak reports). */
static inline void t_dump_fds(void)
{
	fprintf(stderr, "  at the count:\n%s", t_fds_seen);
	t_count_fds();
	fprintf(stderr, "  now:\n%s", t_fds_seen);
}

/* Fails the test when `counted` descriptors, once settled (t_fds_settle),
 * are not the `want` open before, listing what was counted. */
static inline void t_expect_fds(int counted, int want)
{
	counted = t_fds_settle(counted, want);
	if (counted != want) {
		t_dump_fds();
		T_FAIL("%d descriptors open, %d before", counted, want);
	}
}

/* Registers an fd with cuFile, failing the test on error. */
static inline CUfileHandle_t t_register_fd(int fd)
{
	CUfileDescr_t descr;
	CUfileHandle_t fh = NULL;

	memset(&descr, 0, sizeof(descr));
	descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	descr.handle.fd = fd;
	T_CUFILE_OK(cuFileHandleRegister(&fh, &descr));
	T_ASSERT(fh != NULL);
	return fh;
}

/* cuFileHandleRegister for an fd, returning the status (for error tests). */
static inline CUfileOpError t_try_register_fd(int fd, CUfileHandle_t *fh)
{
	CUfileDescr_t descr;

	memset(&descr, 0, sizeof(descr));
	descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	descr.handle.fd = fd;
	return cuFileHandleRegister(fh, &descr).err;
}

/* ------------------------------------------------------------------- CUDA */

static CUdevice t_cu_dev T_UNUSED;
static CUcontext t_cu_ctx T_UNUSED;

/* cuInit + primary context of device 0, made current.  Returns 0 or -1
 * (no driver / no device). */
static inline int t_cuda_init(void)
{
	static int state; /* 0 not tried, 1 ok, -1 failed */
	int n = 0;

	if (state)
		return state > 0 ? 0 : -1;
	state = -1;
	if (cuInit(0) != CUDA_SUCCESS)
		return -1;
	if (cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1)
		return -1;
	if (cuDeviceGet(&t_cu_dev, 0) != CUDA_SUCCESS)
		return -1;
	if (cuDevicePrimaryCtxRetain(&t_cu_ctx, t_cu_dev) != CUDA_SUCCESS)
		return -1;
	if (cuCtxSetCurrent(t_cu_ctx) != CUDA_SUCCESS)
		return -1;
	state = 1;
	return 0;
}

/* Skips the test (77) without a usable CUDA device. */
static inline void t_cuda_require(void)
{
	if (t_cuda_init())
		T_SKIP("no usable CUDA driver/device");
}

/* Makes the test's context current on the calling thread. */
static inline void t_cuda_bind_thread(void)
{
	T_CU(cuCtxSetCurrent(t_cu_ctx));
}

/* Looks a driver entry point up at run time (for the less common APIs, so
 * that the suite links against any driver); NULL when absent. */
static inline void *t_cu_sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static inline CUdeviceptr t_dev_alloc(size_t len)
{
	CUdeviceptr p = 0;

	T_CU(cuMemAlloc(&p, len));
	return p;
}

/* cuMemcpyHtoD from pageable memory returns once the source is staged; the
 * device bytes land later, on the legacy stream.  cuFile I/O is not ordered
 * with any stream, so the data must have landed before the library reads it.
 * A synchronous copy back to pageable memory returns only when it is done,
 * and it is queued on the legacy stream behind the first: read one byte back
 * (the same two synchronous functions, so tests that fault the library's
 * stream and event calls do not fault this). */
static inline void t_dev_put(CUdeviceptr dst, const void *src, size_t len)
{
	uint8_t last;

	T_CU(cuMemcpyHtoD(dst, src, len));
	if (len)
		T_CU(cuMemcpyDtoH(&last, dst + len - 1, 1));
}

static inline void t_dev_get(void *dst, CUdeviceptr src, size_t len)
{
	T_CU(cuMemcpyDtoH(dst, src, len));
}

static inline void t_dev_fill(CUdeviceptr dst, uint8_t byte, size_t len)
{
	size_t chunk = len < 4 * T_MIB ? len : 4 * T_MIB;
	struct t_scratch sc = t_scratch_take(chunk);
	uint8_t *buf = sc.p;

	memset(buf, byte, chunk);
	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		t_dev_put(dst + off, buf, n);
	}
	t_scratch_give(sc);
}

/* ------------------------------------------------- memory of several kinds */

enum t_mem_kind {
	T_MEM_DEVICE,      /* cuMemAlloc */
	T_MEM_HOST_MALLOC, /* malloc */
	T_MEM_HOST_PINNED, /* cuMemHostAlloc */
	T_MEM_HOST_MMAP,   /* anonymous mmap */
};

static inline const char *t_mem_kind_name(enum t_mem_kind k)
{
	switch (k) {
	case T_MEM_DEVICE: return "device(cuMemAlloc)";
	case T_MEM_HOST_MALLOC: return "host(malloc)";
	case T_MEM_HOST_PINNED: return "host(cuMemHostAlloc)";
	case T_MEM_HOST_MMAP: return "host(mmap)";
	}
	return "?";
}

/* A buffer of one kind; ptr is what goes to cuFile (for device memory the
 * device address as a pointer). */
struct t_mem {
	enum t_mem_kind kind;
	void *ptr;
	size_t len;
};

static inline void t_mem_alloc(struct t_mem *m, enum t_mem_kind kind, size_t len)
{
	m->kind = kind;
	m->len = len;
	switch (kind) {
	case T_MEM_DEVICE:
		t_cuda_require();
		m->ptr = (void *)(uintptr_t)t_dev_alloc(len);
		break;
	case T_MEM_HOST_MALLOC:
		m->ptr = malloc(len);
		T_ASSERT(m->ptr != NULL);
		break;
	case T_MEM_HOST_PINNED:
		t_cuda_require();
		T_CU(cuMemHostAlloc(&m->ptr, len, 0));
		break;
	case T_MEM_HOST_MMAP:
		m->ptr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_ASSERT(m->ptr != MAP_FAILED);
		break;
	}
}

static inline void t_mem_free(struct t_mem *m)
{
	switch (m->kind) {
	case T_MEM_DEVICE: T_CU(cuMemFree((CUdeviceptr)(uintptr_t)m->ptr)); break;
	case T_MEM_HOST_MALLOC: free(m->ptr); break;
	case T_MEM_HOST_PINNED: T_CU(cuMemFreeHost(m->ptr)); break;
	case T_MEM_HOST_MMAP: munmap(m->ptr, m->len); break;
	}
	m->ptr = NULL;
}

/* Runs fn through a buffered descriptor of path into m unregistered, then
 * registered, then through an O_DIRECT descriptor (where the file system
 * has it) into m registered; m is deregistered again at the end.  Returns
 * whether the O_DIRECT round ran. */
static inline bool t_each_descriptor(const char *path, struct t_mem *m,
				     void (*fn)(CUfileHandle_t fh, struct t_mem *m, const char *what))
{
	int fd = t_open(path, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	fn(fh, m, "buffered, unregistered");
	T_CUFILE_OK(cuFileBufRegister(m->ptr, m->len, 0));
	fn(fh, m, "buffered, registered");
	cuFileHandleDeregister(fh);
	close(fd);
	bool direct = t_odirect_supported(path);
	if (direct) {
		fd = t_open(path, O_RDONLY | O_DIRECT);
		fh = t_register_fd(fd);
		fn(fh, m, "O_DIRECT, registered");
		cuFileHandleDeregister(fh);
		close(fd);
	} else {
		fprintf(stderr, "O_DIRECT not supported here: the direct cases are not run\n");
	}
	T_CUFILE_OK(cuFileBufDeregister(m->ptr));
	return direct;
}

static inline bool t_mem_is_device(const struct t_mem *m)
{
	return m->kind == T_MEM_DEVICE;
}

/* Copies [off, off+len) of the buffer into host memory dst. */
static inline void t_mem_get(const struct t_mem *m, size_t off, void *dst, size_t len)
{
	T_ASSERT(off + len <= m->len);
	if (t_mem_is_device(m))
		t_dev_get(dst, (CUdeviceptr)(uintptr_t)m->ptr + off, len);
	else
		memcpy(dst, (uint8_t *)m->ptr + off, len);
}

/* Checks n reads that landed in slots of `slot` bytes of m: slot i holds
 * the file's bytes (pattern 0 from file offset foff[i]), size[i] of them,
 * at guard + boff[i], and poison everywhere else; fails the test if not. */
static inline void t_check_slots(const struct t_mem *m, unsigned n, size_t slot, size_t guard, const size_t *size,
				 const off_t *foff, const off_t *boff, const char *what)
{
	uint8_t *v = malloc(slot);
	T_ASSERT(v != NULL);
	for (unsigned i = 0; i < n; i++) {
		t_set_case("%s: read of %zu at file offset %lld into buffer offset %lld", what, size[i],
			   (long long)foff[i], (long long)boff[i]);
		t_mem_get(m, (size_t)i * slot, v, slot);
		if (t_check_guarded(v, slot, guard + (size_t)boff[i], size[i], (uint64_t)foff[i], 0))
			T_FAIL("bad read");
	}
	free(v);
}

/* Copies host memory src into [off, off+len) of the buffer. */
static inline void t_mem_put(struct t_mem *m, size_t off, const void *src, size_t len)
{
	T_ASSERT(off + len <= m->len);
	if (t_mem_is_device(m))
		t_dev_put((CUdeviceptr)(uintptr_t)m->ptr + off, src, len);
	else
		memcpy((uint8_t *)m->ptr + off, src, len);
}

static inline void t_mem_fill(struct t_mem *m, size_t off, uint8_t byte, size_t len)
{
	T_ASSERT(off + len <= m->len);
	if (t_mem_is_device(m))
		t_dev_fill((CUdeviceptr)(uintptr_t)m->ptr + off, byte, len);
	else
		memset((uint8_t *)m->ptr + off, byte, len);
}

/* Writes pattern `seed` for file offsets file_off... into [off, off+len). */
static inline void t_mem_put_pattern(struct t_mem *m, size_t off, size_t len, uint64_t file_off,
				     uint32_t seed)
{
	if (len == 0)
		return; /* and no copy from a buffer nothing was written to */
	if (!t_mem_is_device(m)) {
		t_fill_pattern((uint8_t *)m->ptr + off, len, file_off, seed);
		return;
	}
	struct t_scratch sc = t_scratch_take(len);
	t_fill_pattern(sc.p, len, file_off, seed);
	t_mem_put(m, off, sc.p, len);
	t_scratch_give(sc);
}

/* ------------------------------------------------------ read/write checks */

/*
 * Poisons a window of m, then cuFileRead(fh, m->ptr + base_off, size, foff,
 * boff) and checks: the return value is `expect`; when expect > 0 the first
 * `expect` bytes at base_off + boff hold pattern `seed` of file offsets
 * foff...; every other byte of the window (guard zones before and after, and
 * the requested bytes past a short count) is still poison.  The window is
 * the requested range plus `guard` bytes on each side, clipped to m
 * (guard = SIZE_MAX: all of m).
 * Returns 0, or -1 after printing what is wrong.
 */
static inline int t_read_and_verify_window(CUfileHandle_t fh, struct t_mem *m, size_t base_off,
					   size_t size, off_t foff, off_t boff, ssize_t expect,
					   uint32_t seed, size_t guard)
{
	size_t start = base_off + (size_t)boff;
	size_t wlo = start > guard ? start - guard : 0;
	size_t whi = (m->len - start - size) > guard ? start + size + guard : m->len;
	size_t wlen = whi - wlo;
	struct t_scratch sc = {NULL, 0};
	const uint8_t *v;
	char b1[128], b2[128];
	int rc = 0;

	T_ASSERT(start + size <= m->len);
	t_mem_fill(m, wlo, T_POISON, wlen);
	errno = 0;
	ssize_t r = cuFileRead(fh, (uint8_t *)m->ptr + base_off, size, foff, boff);
	int e = errno;
	if (r != expect) {
		fprintf(stderr, "    cuFileRead returned %s, expected %s\n",
			t_io_ret_str(r, e, b1, sizeof(b1)), t_io_ret_str(expect, 0, b2, sizeof(b2)));
		rc = -1;
		if (r < 0 || (size_t)r > size)
			r = 0; /* still check that nothing was written */
	}
	size_t done = (size_t)r;
	if (t_mem_is_device(m)) {
		sc = t_scratch_take(wlen);
		t_mem_get(m, wlo, sc.p, wlen);
		v = sc.p;
	} else {
		v = (const uint8_t *)m->ptr + wlo;
	}
	/* v[0] is byte wlo of m. */
	if (t_check_fill(v, start - wlo, T_POISON, "guard before the range") ||
	    t_check_pattern(v + (start - wlo), done, (uint64_t)foff, seed, "data read") ||
	    t_check_fill(v + (start - wlo) + done, whi - start - done, T_POISON,
			 "bytes after the returned count"))
		rc = -1;
	if (sc.p)
		t_scratch_give(sc);
	return rc;
}

/*
 * Reads from `threads` threads at once (at most 16), each into its own
 * slice of one device buffer: `iters` reads of min_size + a pseudo-random
 * part of size_range bytes at random file offsets below flen - size, into
 * random buffer offsets below 4096, each checked like
 * t_read_and_verify_window with `guard` bytes (slices of 4096 + the largest
 * read + 2 guard bytes).  Fails the test on any bad read.
 */
struct t_slice_reads {
	CUfileHandle_t fh;
	size_t min_size, size_range, guard;
	off_t flen;
	int iters;
};

struct t_slice_reader {
	const struct t_slice_reads *p;
	struct t_mem slice;
	int id;
};

static inline void *t_slice_reader_main(void *arg)
{
	struct t_slice_reader *a = arg;
	const struct t_slice_reads *p = a->p;
	t_cuda_bind_thread();
	uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(a->id + 1);
	for (int it = 0; it < p->iters; it++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t size = p->min_size + (size_t)(rng >> 33) % (p->size_range ? p->size_range : 1);
		off_t foff = (off_t)((rng >> 13) % (uint64_t)(p->flen - (off_t)size));
		off_t boff = (off_t)((rng >> 7) % 4096);
		/* No t_set_case here: t_case is one buffer for the process. */
		if (t_read_and_verify_window(p->fh, &a->slice, p->guard, size, foff, boff, (ssize_t)size, 0, p->guard))
			T_FAIL("thread %d, iteration %d: bad read of %zu at %lld into offset %lld", a->id, it, size,
			       (long long)foff, (long long)boff);
	}
	return NULL;
}

/* Runs fn on n threads at once, thread i given (void *)(long)i, with
 * *barrier set up for the n of them before (each worker waits on it, so
 * that they start together) and destroyed after; returns once all ended. */
static inline void t_run_numbered_threads(int n, void *(*fn)(void *), pthread_barrier_t *barrier)
{
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	T_ASSERT(th != NULL);
	T_EQ(pthread_barrier_init(barrier, NULL, (unsigned)n), 0);
	for (long i = 0; i < n; i++)
		T_EQ(pthread_create(&th[i], NULL, fn, (void *)i), 0);
	for (int i = 0; i < n; i++)
		T_EQ(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(barrier);
	free(th);
}

static inline void t_threads_read_slices(const struct t_slice_reads *p, int threads)
{
	size_t slice = 2 * p->guard + 4096 + p->min_size + p->size_range;
	struct t_mem m;
	pthread_t th[16];
	struct t_slice_reader r[16];
	T_ASSERT(threads > 0 && threads <= 16);
	t_mem_alloc(&m, T_MEM_DEVICE, (size_t)threads * slice);
	for (int i = 0; i < threads; i++) {
		r[i] = (struct t_slice_reader){p, {m.kind, (char *)m.ptr + (size_t)i * slice, slice}, i};
		T_EQ(pthread_create(&th[i], NULL, t_slice_reader_main, &r[i]), 0);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	t_mem_free(&m);
}

/* t_read_and_verify_window over all of m. */
static inline int t_read_and_verify(CUfileHandle_t fh, struct t_mem *m, size_t base_off,
				    size_t size, off_t foff, off_t boff, ssize_t expect,
				    uint32_t seed)
{
	return t_read_and_verify_window(fh, m, base_off, size, foff, boff, expect, seed, SIZE_MAX);
}

/*
 * Writes pattern `seed_new` for file offsets foff... from m->ptr + base_off
 * (+ boff) with cuFileWrite into a file that holds pattern `seed_old`, and
 * checks with plain pread on check_fd: the return value is `size`, the file
 * holds seed_new over the written range and seed_old for `margin` bytes
 * around it (clipped to old_len, the file length before the write).  Then
 * restores the old bytes and the file length.  Returns 0 or -1.
 */
static inline int t_write_and_verify(CUfileHandle_t fh, struct t_mem *m, size_t base_off,
				     size_t size, off_t foff, off_t boff, int check_fd,
				     uint64_t old_len, uint32_t seed_new, uint32_t seed_old)
{
	const size_t margin = 8192;
	char b1[128], b2[128];
	int rc = 0;

	t_mem_put_pattern(m, base_off + (size_t)boff, size, (uint64_t)foff, seed_new);
	errno = 0;
	ssize_t r = cuFileWrite(fh, (uint8_t *)m->ptr + base_off, size, foff, boff);
	int e = errno;
	if (r != (ssize_t)size) {
		fprintf(stderr, "    cuFileWrite returned %s, expected %s\n",
			t_io_ret_str(r, e, b1, sizeof(b1)),
			t_io_ret_str((ssize_t)size, 0, b2, sizeof(b2)));
		rc = -1;
	}
	uint64_t lo = (uint64_t)foff > margin ? (uint64_t)foff - margin : 0;
	uint64_t end = (uint64_t)foff + size;
	uint64_t hi = end + margin;
	uint64_t expect_len = end > old_len ? end : old_len;
	if (hi > expect_len)
		hi = expect_len;
	uint64_t flen = t_file_size(check_fd);
	if (rc == 0 && flen != expect_len) {
		fprintf(stderr, "    file length %llu after the write, expected %llu\n",
			(unsigned long long)flen, (unsigned long long)expect_len);
		rc = -1;
	}
	struct t_scratch sc = t_scratch_take((size_t)(hi - lo) + 1);
	uint8_t *back = sc.p;
	size_t got = t_pread_full(check_fd, back, (size_t)(hi - lo), lo);
	if (got != hi - lo) {
		fprintf(stderr, "    file too short: read %zu of %llu bytes back\n", got,
			(unsigned long long)(hi - lo));
		rc = -1;
	} else if (t_check_pattern(back, (size_t)((uint64_t)foff - lo), lo, seed_old,
				   "file bytes before the written range") ||
		   t_check_pattern(back + ((uint64_t)foff - lo), size, (uint64_t)foff, seed_new,
				   "written range") ||
		   (hi > end && t_check_pattern(back + (end - lo), (size_t)(hi - end), end,
						seed_old, "file bytes after the written range"))) {
		rc = -1;
	}
	t_scratch_give(sc);
	/* Restore. */
	if (old_len > (uint64_t)foff) {
		uint64_t n = end < old_len ? size : old_len - (uint64_t)foff;
		t_pwrite_pattern(check_fd, (uint64_t)foff, n, seed_old);
	}
	if (t_file_size(check_fd) != old_len)
		T_SYS(ftruncate(check_fd, (off_t)old_len));
	return rc;
}

/* ------------------------------------------------------- child processes */

/* Waits up to timeout_ms for child `pid`.  Returns its wait status; on
 * timeout kills it (SIGKILL), reaps it and fails the test with `what`. */
static inline int t_wait_child(pid_t pid, int timeout_ms, const char *what)
{
	int status = 0;

	for (int waited = 0;; waited += 10) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			return status;
		if (w < 0)
			T_FAIL("waitpid(%d): %s", (int)pid, strerror(errno));
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			T_FAIL("%s: child %d still running after %d ms (hang)", what, (int)pid, timeout_ms);
		}
		usleep(10000);
	}
}

/* The path to exec this test program again: argv[0] when it names a file
 * (ctest passes the absolute path), else /proc/self/exe -- which under
 * valgrind is valgrind's own tool binary. */
static inline const char *t_self_exe(const char *argv0)
{
	return argv0 && strchr(argv0, '/') && access(argv0, X_OK) == 0 ? argv0 : "/proc/self/exe";
}

/* A wait status must be a normal exit with code 0. */
#define T_CHILD_OK(status, what)                                                           \
	do {                                                                               \
		int s_ = (status);                                                         \
		if (WIFSIGNALED(s_))                                                       \
			T_FAIL("%s: child killed by signal %d (%s)", (what), WTERMSIG(s_),   \
			       strsignal(WTERMSIG(s_)));                                   \
		if (!WIFEXITED(s_) || WEXITSTATUS(s_) != 0)                                \
			T_FAIL("%s: child exited with status %d", (what), WEXITSTATUS(s_));   \
	} while (0)

/* ------------------------------------------------------------ cuFile misc */

/* Closes the driver until it reports it is not open (at most `max` closes);
 * returns the number of successful closes. */
static inline int t_driver_close_all(int max)
{
	int n = 0;

	while (n < max && cuFileDriverClose().err == CU_FILE_SUCCESS)
		n++;
	return n;
}

#endif /* OCF_TEST_H_ */
