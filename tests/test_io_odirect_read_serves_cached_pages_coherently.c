/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads through an O_DIRECT handle on a local file system take the pages
 * the page cache holds by copy and read the rest with O_DIRECT
 * (properties.direct_reads_from_cache, default true):
 *   - a warm file is read without reading the disk (/proc/self/io
 *     read_bytes does not grow), into device memory, malloc'd memory and
 *     page-aligned memory, at aligned and unaligned offsets, with the exact
 *     bytes and nothing written outside them;
 *   - a cold file is read from the disk and stays out of the page cache, as
 *     before (nothing changes for cold data);
 *   - a partly cached file gives its exact bytes across every border;
 *   - bytes written with a buffered write (still dirty in the page cache)
 *     are read back new;
 *   - direct writes racing with reads (and with buffered reads that keep
 *     re-caching the range): every 512-byte sector read holds the old or
 *     the new bytes, never anything else, and once the writes are done
 *     every read returns the new bytes;
 *   - OPENCUFILE_DIRECT_READS_FROM_CACHE=0, or the key false in cufile.json,
 *     sends every read to the disk again; the environment wins over the
 *     file.
 * While disk bytes are counted, the pages meant to be cached are pinned in
 * the page cache (t_pin_cached): the kernel may evict cached pages at any
 * time, and an evicted page must be read from the disk by any reader.
 * "No disk reads" is the library's count of bytes it asked to read through
 * O_DIRECT descriptors (the fault-injection library, which the test links
 * on the stand-in; each such byte comes from the disk): /proc/self/io's
 * read_bytes counts the whole process, a sanitizer's runtime reading a
 * file or a page of the program faulted in included.  Against the real
 * driver (the plain library) read_bytes decides, with two more tries.
 * Needs a local file system with O_DIRECT (the build directory; tmpfs
 * skips) where POSIX_FADV_DONTNEED empties the page cache of the file.
 */
#include <stdatomic.h>

#include "test.h"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#define FLEN (8 * T_MIB + 333)
#define BUFLEN (FLEN + 2 * 4096)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *path;
static int failures;

/* ocf_fault_direct_reads of the fault-injection library, or NULL. */
static unsigned long long (*direct_reads_fn)(unsigned long long *, unsigned long long *);

/* What a check of "no disk reads" compares: the library's O_DIRECT bytes
 * where it counts them, else the process's read_bytes. */
struct disk_mark {
	unsigned long long direct, proc;
};

static struct disk_mark disk_mark(void)
{
	struct disk_mark d = {direct_reads_fn ? direct_reads_fn(NULL, NULL) : 0, t_proc_read_bytes()};
	return d;
}

/* Bytes read from the disk since `since`: through O_DIRECT by the library
 * where that is counted (then also what read_bytes says, and the latest
 * direct read), else read_bytes. */
static unsigned long long disk_bytes_since(struct disk_mark since, const char *what)
{
	struct disk_mark now = disk_mark();
	unsigned long long proc = now.proc - since.proc;
	if (!direct_reads_fn)
		return proc;
	unsigned long long off, len, direct = direct_reads_fn(&off, &len) - since.direct;
	if (direct)
		fprintf(stderr, "%s: %llu bytes read through O_DIRECT (the latest: %llu at %llu)\n", what, direct,
			len, off);
	else if (proc)
		fprintf(stderr, "%s: none read through O_DIRECT; read_bytes of the process grew by %llu\n", what,
			proc);
	return direct;
}

/* Pages of [lo, hi) of the file in the page cache. */
static size_t cached_pages(off_t lo, off_t hi) { return t_cached_pages(path, FLEN, lo, hi); }

static void evict_all(void) { t_evict_file(path, FLEN); }

/* Reads [off, off+len) with buffered pread, without readahead beyond it. */
static void warm(off_t off, size_t len)
{
	int fd = t_open(path, O_RDONLY);
	T_SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM));
	char *tmp = malloc(len);
	T_ASSERT(tmp != NULL);
	T_EQ_U(t_pread_full(fd, tmp, len, (uint64_t)off), len);
	free(tmp);
	close(fd);
}

static ssize_t expected(off_t foff, size_t size)
{
	if (foff >= (off_t)FLEN)
		return 0;
	return (ssize_t)((size_t)(FLEN - foff) < size ? (size_t)(FLEN - foff) : size);
}

struct rcase {
	off_t foff;
	size_t size;
	off_t boff;
};

static void run_case(CUfileHandle_t fh, struct t_mem *m, const struct rcase *c, uint32_t seed)
{
	t_set_case("%s, file offset %lld, size %zu, buffer offset %lld", t_mem_kind_name(m->kind),
		   (long long)c->foff, c->size, (long long)c->boff);
	if (t_read_and_verify_window(fh, m, 0, c->size, c->foff, c->boff, expected(c->foff, c->size), seed, 4096)) {
		fprintf(stderr, "FAIL: %s\n", t_case);
		failures++;
	}
}

static const enum t_mem_kind kinds[] = {T_MEM_DEVICE, T_MEM_HOST_MALLOC, T_MEM_HOST_MMAP};

/* Whole-file and unaligned reads of a warm file: no disk reads. */
static const struct rcase warm_cases[] = {
	{0, FLEN + 4096, 0},          /* whole file, short at end of file */
	{4096, 2 * T_MIB, 0},         /* aligned: in place into page-aligned memory */
	{1 * T_MIB + 5, 3 * T_MIB + 7, 3},
	{FLEN - 1000, 64 * T_KIB, 0}, /* crossing end of file */
	{3 * 4096 + 1, 100, 0},       /* tiny */
	{FLEN, 4096, 0},              /* at end of file */
};

/* The file partly cached: `parts` warmed after an eviction. */
static const struct rcase parts[] = {{0, 1 * T_MIB, 0}, {3 * T_MIB, 1 * T_MIB, 0}, {6 * T_MIB, 512 * T_KIB, 0}};
static const struct rcase partial_cases[] = {
	{0, FLEN, 0},                   /* cached, cold, cached, cold, cached, cold */
	{1 * T_MIB - 100, 3 * T_MIB, 1},/* end of a cached part into the next */
	{2 * T_MIB + 7, 2 * T_MIB, 4096},
	{3 * T_MIB, 64 * T_KIB, 0},     /* cached only */
	{6 * T_MIB - 3, 700 * T_KIB, 5},
	{FLEN - 200 * T_KIB - 7, 300 * T_KIB, 5},
};

static void read_all(CUfileHandle_t fh, const struct rcase *cs, size_t n, uint32_t seed)
{
	for (size_t k = 0; k < N(kinds); k++) {
		struct t_mem m;
		t_mem_alloc(&m, kinds[k], BUFLEN);
		for (size_t i = 0; i < n; i++)
			run_case(fh, &m, &cs[i], seed);
		t_mem_free(&m);
	}
}

/* Disk bytes read by one whole-file read through a new O_DIRECT handle of
 * the warm file, in the session the current configuration opens. */
static unsigned long long warm_read_disk_bytes(const char *what)
{
	warm(0, FLEN);
	struct t_pin pin = t_pin_cached(path, 0, FLEN);
	T_EQ_U(cached_pages(0, FLEN), (FLEN + 4095) / 4096);
	int fd = t_open(path, O_RDONLY | O_DIRECT);
	CUfileHandle_t fh = t_register_fd(fd);
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, BUFLEN);
	t_set_case("%s", what);
	struct disk_mark before = disk_mark();
	T_EQ(t_read_and_verify_window(fh, &m, 0, FLEN, 0, 0, FLEN, 0, 4096), 0);
	unsigned long long d = disk_bytes_since(before, what);
	t_unpin_cached(&pin);
	t_mem_free(&m);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	fprintf(stderr, "%s: %llu bytes read from the disk for %zu\n", what, d, (size_t)FLEN);
	return d;
}

/* ------------------------------------------------- racing direct writes */

#define RLO ((off_t)2 * T_MIB)
#define RLEN (1 * T_MIB)
#define SEED_NEW 7
#define RACE_MS 1500

static CUfileHandle_t race_fh;
static atomic_int race_stop;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Alternates the region between the old (0) and new pattern with aligned
 * writes through the O_DIRECT handle (direct), 64 KiB at a time; ends on
 * the new pattern. */
static void *race_writer(void *arg)
{
	(void)arg;
	char *old = NULL, *new = NULL;
	T_ASSERT(posix_memalign((void **)&old, 4096, RLEN) == 0 && posix_memalign((void **)&new, 4096, RLEN) == 0);
	t_fill_pattern(old, RLEN, (uint64_t)RLO, 0);
	t_fill_pattern(new, RLEN, (uint64_t)RLO, SEED_NEW);
	double end = now_ms() + RACE_MS;
	for (unsigned g = 0;; g++) {
		bool last = now_ms() >= end && g % 2 == 0;
		const char *src = g % 2 == 0 ? new : old;
		for (size_t at = 0; at < RLEN; at += 64 * T_KIB)
			T_IO(cuFileWrite(race_fh, src + at, 64 * T_KIB, RLO + (off_t)at, 0), (ssize_t)(64 * T_KIB));
		if (last)
			break;
	}
	atomic_store(&race_stop, 1);
	free(old);
	free(new);
	return NULL;
}

/* Buffered reads of the region, so that the reads find pages cached. */
static void *race_warmer(void *arg)
{
	(void)arg;
	int fd = t_open(path, O_RDONLY);
	char *tmp = malloc(RLEN);
	T_ASSERT(tmp != NULL);
	while (!atomic_load(&race_stop))
		T_EQ_U(t_pread_full(fd, tmp, RLEN, (uint64_t)RLO), RLEN);
	free(tmp);
	close(fd);
	return NULL;
}

static void race(void)
{
	int fd = t_open(path, O_RDWR | O_DIRECT);
	race_fh = t_register_fd(fd);
	warm(RLO, RLEN);
	pthread_t w, c;
	atomic_store(&race_stop, 0);
	T_ASSERT(pthread_create(&w, NULL, race_writer, NULL) == 0);
	T_ASSERT(pthread_create(&c, NULL, race_warmer, NULL) == 0);
	struct t_mem dev, host;
	t_mem_alloc(&dev, T_MEM_DEVICE, RLEN + 4096);
	t_mem_alloc(&host, T_MEM_HOST_MALLOC, RLEN + 4096);
	uint8_t *back = malloc(RLEN);
	T_ASSERT(back != NULL);
	unsigned reads = 0;
	size_t news = 0, sectors = 0;
	while (!atomic_load(&race_stop)) {
		/* Unaligned in the file and in memory, alternating memory kinds. */
		struct t_mem *m = reads % 2 ? &host : &dev;
		off_t o = RLO + 1000, b = reads % 3;
		size_t len = RLEN - 3000;
		t_set_case("read %u racing direct writes, %s", reads, t_mem_kind_name(m->kind));
		T_IO(cuFileRead(race_fh, m->ptr, len, o, b), (ssize_t)len);
		t_mem_get(m, (size_t)b, back, len);
		news += t_sectors_old_or_new(back, len, o, 0, SEED_NEW, "read racing direct writes");
		sectors += (len + 511) / 512;
		reads++;
	}
	pthread_join(w, NULL);
	pthread_join(c, NULL);
	fprintf(stderr, "race: %u reads, %zu of %zu sectors new\n", reads, news, sectors);
	/* Done: every read returns the new bytes, cold or re-cached. */
	for (int i = 0; i < 2; i++) {
		t_set_case("after the racing writes%s", i ? ", region re-cached" : "");
		if (i)
			warm(RLO, RLEN);
		T_EQ(t_read_and_verify_window(race_fh, &dev, 0, RLEN, RLO, 0, RLEN, SEED_NEW, 4096), 0);
		T_EQ(t_read_and_verify_window(race_fh, &host, 0, RLEN - 5, RLO + 5, 3, RLEN - 5, SEED_NEW, 4096),
		     0);
	}
	/* Put the old bytes back for the other checks. */
	int bfd = t_open(path, O_RDWR);
	t_pwrite_pattern(bfd, (uint64_t)RLO, RLEN, 0);
	T_SYS(fdatasync(bfd));
	close(bfd);
	free(back);
	t_mem_free(&dev);
	t_mem_free(&host);
	cuFileHandleDeregister(race_fh);
	close(fd);
}

/* ----------------------------------------------------------------- main */

int main(void)
{
	t_cuda_require();
	direct_reads_fn = (unsigned long long (*)(unsigned long long *, unsigned long long *))dlsym(
		RTLD_DEFAULT, "ocf_fault_direct_reads");
	if (!direct_reads_fn)
		printf("note: no count of O_DIRECT reads (not the fault-injection library): read_bytes decides\n");
	path = t_make_pattern_file(FLEN, 0);
	t_require_cache_aware_fs(path, FLEN);
	unsetenv("OPENCUFILE_DIRECT_READS_FROM_CACHE");
	unsetenv("CUFILE_ENV_PATH_JSON");

	/* Warm: no disk reads at all. */
	int fd = t_open(path, O_RDONLY | O_DIRECT);
	CUfileHandle_t fh = t_register_fd(fd);
	warm(0, FLEN);
	struct t_pin pin = t_pin_cached(path, 0, FLEN);
	struct disk_mark mark = disk_mark();
	read_all(fh, warm_cases, N(warm_cases), 0);
	unsigned long long from_disk = disk_bytes_since(mark, "warm file");
	/* read_bytes (the plain library) counts the whole process: a page of
	 * the program faulted in by any thread, or megabytes under a full
	 * run's load.  Up to two more tries: a library that re-read the
	 * cached pages would do it on every one. */
	for (int again = 0; from_disk && !direct_reads_fn && again < 2; again++) {
		fprintf(stderr, "warm file: %llu bytes from the disk; the reads once more\n", from_disk);
		mark = disk_mark();
		read_all(fh, warm_cases, N(warm_cases), 0);
		from_disk = disk_bytes_since(mark, "warm file, again");
	}
	t_unpin_cached(&pin);
	t_set_case("warm file");
	T_EQ_U(from_disk, 0);

	/* Cold: from the disk, and still not cached afterwards. */
	evict_all();
	mark = disk_mark();
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, BUFLEN);
	t_set_case("cold file");
	T_EQ(t_read_and_verify_window(fh, &m, 0, FLEN, 0, 0, FLEN, 0, 4096), 0);
	T_ASSERT(disk_bytes_since(mark, "cold file") >= FLEN / 4096 * 4096);
	T_EQ_U(cached_pages(0, FLEN), 0);

	/* Partly cached: the cached parts pinned, so that every border is one. */
	struct t_pin part_pins[N(parts)];
	for (size_t i = 0; i < N(parts); i++) {
		warm(parts[i].foff, parts[i].size);
		part_pins[i] = t_pin_cached(path, parts[i].foff, parts[i].size);
	}
	T_EQ_U(cached_pages(1 * T_MIB, 3 * T_MIB), 0);
	read_all(fh, partial_cases, N(partial_cases), 0);
	/* A read starting in a cached part takes that part from the cache. */
	mark = disk_mark();
	t_set_case("partly cached, from a cached part");
	T_EQ(t_read_and_verify_window(fh, &m, 0, 2 * T_MIB, 3 * T_MIB, 0, 2 * T_MIB, 0, 4096), 0);
	T_ASSERT(disk_bytes_since(mark, "partly cached, from a cached part") <= 1 * T_MIB);
	for (size_t i = 0; i < N(parts); i++)
		t_unpin_cached(&part_pins[i]);

	/* A buffered write still dirty in the page cache is read back new,
	 * inside a cached part and inside an uncached one. */
	int bfd = t_open(path, O_RDWR);
	const off_t woff[] = {3 * T_MIB + 100, 5 * T_MIB + 100};
	for (size_t i = 0; i < N(woff); i++) {
		t_pwrite_pattern(bfd, (uint64_t)woff[i], 5000, SEED_NEW);
		t_set_case("buffered write at %lld, then a read", (long long)woff[i]);
		uint8_t *back = malloc(64 * T_KIB);
		T_ASSERT(back != NULL);
		off_t ro = woff[i] - 100;
		T_IO(cuFileRead(fh, m.ptr, 64 * T_KIB, ro, 0), (ssize_t)(64 * T_KIB));
		t_mem_get(&m, 0, back, 64 * T_KIB);
		if (t_check_pattern(back, 100, (uint64_t)ro, 0, "before the written bytes") ||
		    t_check_pattern(back + 100, 5000, (uint64_t)woff[i], SEED_NEW, "the written bytes") ||
		    t_check_pattern(back + 5100, 64 * T_KIB - 5100, (uint64_t)woff[i] + 5000, 0,
				    "after the written bytes"))
			failures++;
		free(back);
		t_pwrite_pattern(bfd, (uint64_t)woff[i], 5000, 0);
	}
	T_SYS(fdatasync(bfd));
	close(bfd);
	t_mem_free(&m);
	cuFileHandleDeregister(fh);
	close(fd);

	race();
	T_CUFILE_OK(cuFileDriverClose());

	/* Turned off, by the environment or the file; the environment wins. */
	char json[600];
	snprintf(json, sizeof(json), "%s/ocf_direct_reads_%d.json", t_dir(), (int)getpid());
	FILE *f = fopen(json, "w");
	T_ASSERT(f != NULL);
	fputs("{ \"properties\": { \"direct_reads_from_cache\": false } }\n", f);
	fclose(f);
	setenv("OPENCUFILE_DIRECT_READS_FROM_CACHE", "0", 1);
	T_ASSERT(warm_read_disk_bytes("environment 0") >= FLEN / 4096 * 4096);
	unsetenv("OPENCUFILE_DIRECT_READS_FROM_CACHE");
	setenv("CUFILE_ENV_PATH_JSON", json, 1);
	T_ASSERT(warm_read_disk_bytes("file false") >= FLEN / 4096 * 4096);
	setenv("OPENCUFILE_DIRECT_READS_FROM_CACHE", "1", 1);
	/* read_bytes (the plain library) counts the whole process (a
	 * sanitizer's runtime reading a file, once 684,032 bytes under TSan):
	 * once more before failing; a library that read the disk would do it
	 * again. */
	unsigned long long d = warm_read_disk_bytes("file false, environment 1");
	if (d && !direct_reads_fn)
		d = warm_read_disk_bytes("file false, environment 1, again");
	t_set_case("file false, environment 1");
	T_EQ_U(d, 0);
	unlink(json);

	if (failures)
		T_FAIL("%d case(s) failed", failures);
	printf("O_DIRECT reads of cached pages: ok\n");
	return T_EXIT_PASS;
}
