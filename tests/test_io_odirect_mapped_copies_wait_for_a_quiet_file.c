/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library where built, for its count of copies through
 * the mapping) An O_DIRECT handle's cached bytes are copied through the
 * file's mapping only while no write can be racing (fmap_copy_direct): the
 * file's times unchanged for OPENCUFILE_MAPPED_DIRECT_QUIET_MS (this test's
 * entry sets 400 ms) when a copy begins, and the same when it ends.
 *   - a quiet, warm file: reads of 64 KiB to 8 MiB into device and host
 *     memory, aligned and not, return the exact bytes, nothing stored past
 *     them, and are copied through the mapping;
 *   - right after a pwrite through another descriptor: the exact bytes, no
 *     copy through the mapping; once the file is quiet again, copies again;
 *   - direct writes racing with the reads, beginning after the first reads
 *     of a quiet file were copied through the mapping: every 512-byte
 *     sector of every read holds the old or the new bytes, never a mix;
 *     once the writes are done, the region cached again and the file quiet,
 *     reads return the new bytes through the mapping.
 * Against the real driver (the plain library) the bytes are checked, not
 * the count.
 */
#include <stdatomic.h>

#include "test.h"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#define FLEN (24 * T_MIB)
#define QUIET_US 450000 /* past the entry's 400 ms */
#define RLO ((off_t)4 * T_MIB)
#define RLEN (2 * T_MIB)
#define SEED_NEW 9
#define GUARD 4096

static unsigned long (*copies_fn)(void);
static unsigned long copies(void) { return copies_fn ? copies_fn() : 0; }

static const char *path;
static CUfileHandle_t fh;
static int truth_fd;

/* Reads [off, off+len) into m at buffer offset b and checks it against
 * the file and the guard after it. */
static void read_check(struct t_mem *m, size_t len, off_t off, size_t b, const char *what)
{
	t_set_case("%s: %zu bytes at %lld into %s", what, len, (long long)off, t_mem_kind_name(m->kind));
	uint8_t *got = malloc(len + GUARD), *truth = malloc(len);
	T_ASSERT(got && truth);
	t_mem_fill(m, 0, T_POISON, m->len);
	T_IO(cuFileRead(fh, m->ptr, len, off, (off_t)b), (ssize_t)len);
	t_mem_get(m, b, got, len + GUARD);
	T_EQ_U(t_pread_full(truth_fd, truth, len, (uint64_t)off), len);
	if (memcmp(got, truth, len) != 0)
		T_FAIL("the bytes read differ from the file");
	if (t_check_fill(got + len, GUARD, T_POISON, "past the request"))
		T_FAIL("stored past the request");
	free(got);
	free(truth);
}

static atomic_int race_go, race_stop;

/* Alternates the region between the old (seed 0) and new pattern with
 * aligned O_DIRECT writes of 64 KiB, starting when told; ends on new. */
static void *race_writer(void *arg)
{
	(void)arg;
	int fd = t_open(path, O_RDWR | O_DIRECT);
	char *old = NULL, *new = NULL;
	T_ASSERT(posix_memalign((void **)&old, 4096, RLEN) == 0 && posix_memalign((void **)&new, 4096, RLEN) == 0);
	t_fill_pattern(old, RLEN, (uint64_t)RLO, 0);
	t_fill_pattern(new, RLEN, (uint64_t)RLO, SEED_NEW);
	while (!atomic_load(&race_go))
		usleep(100);
	for (unsigned g = 0; g < 25; g++) { /* 0, 2, ..., 24: new */
		const char *src = g % 2 == 0 ? new : old;
		for (size_t at = 0; at < RLEN; at += 64 * T_KIB)
			T_EQ(pwrite(fd, src + at, 64 * T_KIB, RLO + (off_t)at), (ssize_t)(64 * T_KIB));
	}
	T_SYS(fsync(fd));
	atomic_store(&race_stop, 1);
	free(old);
	free(new);
	close(fd);
	return NULL;
}

int main(void)
{
	t_cuda_require();
	copies_fn = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "ocf_fault_mapped_direct_copies");
	if (!copies_fn)
		printf("note: no count of copies through the mapping (not the fault-injection library)\n");
	path = t_make_pattern_file(FLEN, 0);
	t_require_local_odirect_fs(path);
	if (!t_odirect_supported(path))
		T_SKIP("O_DIRECT not supported on %s", path);
	truth_fd = t_open(path, O_RDONLY);
	uint8_t *warm = malloc(FLEN);
	T_ASSERT(warm != NULL);
	T_EQ_U(t_pread_full(truth_fd, warm, FLEN, 0), FLEN); /* cached */
	free(warm);
	int fd = t_open(path, O_RDWR | O_DIRECT);
	fh = t_register_fd(fd);
	struct t_mem dev, host;
	t_mem_alloc(&dev, T_MEM_DEVICE, 8 * T_MIB + 2 * GUARD);
	t_mem_alloc(&host, T_MEM_HOST_MALLOC, 8 * T_MIB + 2 * GUARD);
	struct t_mem *mems[2] = {&dev, &host};
	static const size_t sizes[] = {64 * T_KIB, 256 * T_KIB + 512, T_MIB, 4 * T_MIB - 4096, 8 * T_MIB};

	/* A quiet warm file: through the mapping. */
	usleep(QUIET_US);
	unsigned long c0 = copies();
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			read_check(mems[k], sizes[i], (off_t)(i * 2 * T_MIB), 0, "quiet file, aligned");
			read_check(mems[k], sizes[i] - 100, (off_t)(i * 2 * T_MIB) + 1000, 3, "quiet file, unaligned");
		}
	if (copies_fn) {
		t_set_case("quiet file: copies through the mapping");
		T_GE(copies() - c0, 10);
	}

	/* Just written: preadv2, the new bytes; quiet again: the mapping. */
	int wfd = t_open(path, O_RDWR);
	t_pwrite_pattern(wfd, 3 * T_MIB + 5, 300 * T_KIB, 5);
	c0 = copies();
	for (int k = 0; k < 2; k++)
		read_check(mems[k], 2 * T_MIB, 2 * T_MIB, 0, "just written");
	if (copies_fn) {
		t_set_case("just written: no copy through the mapping");
		T_EQ_U(copies(), c0);
	}
	usleep(QUIET_US);
	for (int k = 0; k < 2; k++)
		read_check(mems[k], 2 * T_MIB, 2 * T_MIB, 0, "quiet again");
	if (copies_fn) {
		t_set_case("quiet again: copies through the mapping");
		T_GT(copies(), c0);
	}
	/* The racing region holds the old pattern again, at rest. */
	t_pwrite_pattern(wfd, (uint64_t)RLO, RLEN, 0);
	T_SYS(fsync(wfd));
	close(wfd);

	/* Direct writes racing with the reads of a quiet file. */
	usleep(QUIET_US);
	pthread_t w;
	atomic_store(&race_go, 0);
	atomic_store(&race_stop, 0);
	T_ASSERT(pthread_create(&w, NULL, race_writer, NULL) == 0);
	uint8_t *back = malloc(RLEN);
	T_ASSERT(back != NULL);
	c0 = copies();
	unsigned reads = 0;
	size_t news = 0;
	while (!atomic_load(&race_stop) || reads < 4) {
		struct t_mem *m = mems[reads % 2];
		off_t o = RLO + 1000;
		size_t len = RLEN - 3000, b = reads % 3;
		t_set_case("read %u racing direct writes into %s", reads, t_mem_kind_name(m->kind));
		T_IO(cuFileRead(fh, m->ptr, len, o, (off_t)b), (ssize_t)len);
		t_mem_get(m, b, back, len);
		news += t_sectors_old_or_new(back, len, o, 0, SEED_NEW, "read racing direct writes");
		if (++reads == 2)
			atomic_store(&race_go, 1); /* after reads of the quiet file */
	}
	pthread_join(w, NULL);
	printf("race: %u reads, %zu sectors new, %lu copies through the mapping\n", reads, news, copies() - c0);
	if (copies_fn) {
		t_set_case("race: the reads of the quiet file went through the mapping");
		T_GE(copies() - c0, 2);
	}
	/* The direct writes dropped the region's pages: cached again. */
	T_EQ_U(t_pread_full(truth_fd, back, RLEN, (uint64_t)RLO), RLEN);
	usleep(QUIET_US);
	c0 = copies();
	for (int k = 0; k < 2; k++) {
		t_set_case("after the race, quiet, %s", t_mem_kind_name(mems[k]->kind));
		T_EQ(t_read_and_verify_window(fh, mems[k], 0, RLEN, RLO, 0, RLEN, SEED_NEW, 4096), 0);
	}
	if (copies_fn) {
		t_set_case("after the race, quiet: through the mapping");
		T_GT(copies(), c0);
	}
	free(back);
	t_mem_free(&dev);
	t_mem_free(&host);
	cuFileHandleDeregister(fh);
	close(fd);
	close(truth_fd);
	T_CUFILE_OK(cuFileDriverClose());
	t_cleanup_files();
	printf("PASS\n");
	return T_EXIT_PASS;
}
