/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library where built, for its count of reads served from
 * read-ahead) A caller reads a file in order into device memory - 1 MiB or
 * 4 MiB cuFileReads, through a buffered or an O_DIRECT handle - while
 * another process rewrites the 2 MiB after each read through ONE long-lived
 * shared writable mapping whose every page it had already written before
 * the reader began (dirty pages: a store to them raises no fault, no time
 * update, no event).  After each rewrite the writer flushes it with
 * msync(MS_SYNC) ("msync" cases) or not ("nosync"), then tells the reader
 * through a pipe; the reader's next read must return exactly what the file
 * holds then (pread through its own descriptor).  A stale round is one
 * whose read returned anything else (old bytes, or old and new mixed).
 *
 *   argv[1]  buffered | direct     the handle's descriptor
 *   argv[2]  1M | 4M               the read size
 *   argv[3]  msync | nosync        the writer's flush before its signal
 *   argv[4]  rounds (200)          argv[5]  seed (1)
 *
 * Each round waits a seeded 0-400 us before asking for the rewrite, so that
 * the read-ahead's fills of the next bytes are caught before, during and
 * after the stores.  Every case must see 0 stale rounds; with the
 * fault-injection library the buffered 1 MiB cases also check that reads of
 * a file nobody writes are still served from read-ahead (the check costs no
 * window where nothing is written).
 */
#include "test.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define FLEN (48 * T_MIB)
#define REWRITE (2 * T_MIB)
#define GUARD 4096

struct cmd {
	uint64_t off, len;
	uint32_t seed;
	int flush; /* 1: msync(MS_SYNC) the range before answering; -1: exit */
};

/* The writer: maps the whole file, stores every page once (the pages are
 * dirty from then on), answers "ready", then rewrites what it is told. */
static int writer_main(const char *path, int cmd_fd, int ack_fd)
{
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return 2;
	uint8_t *map = mmap(NULL, FLEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return 3;
	close(fd);
	t_fill_pattern(map, FLEN, 0, 0x51);
	char c = 'r';
	if (write(ack_fd, &c, 1) != 1)
		return 4;
	for (;;) {
		struct cmd m;
		if (read(cmd_fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
			return 5;
		if (m.flush < 0)
			break;
		t_fill_pattern(map + m.off, m.len, m.off, m.seed);
		if (m.flush && msync(map + m.off, m.len, MS_SYNC) != 0)
			return 6;
		if (write(ack_fd, &c, 1) != 1)
			return 7;
	}
	munmap(map, FLEN);
	return 0;
}

static unsigned long (*served_fn)(void);

int main(int argc, char **argv)
{
	if (argc < 4)
		T_FAIL("usage: %s buffered|direct 1M|4M msync|nosync [rounds] [seed]", argv[0]);
	bool direct = strcmp(argv[1], "direct") == 0;
	size_t len = strcmp(argv[2], "4M") == 0 ? 4 * T_MIB : T_MIB;
	bool flush = strcmp(argv[3], "msync") == 0;
	int rounds = argc > 4 ? atoi(argv[4]) : 200;
	uint32_t x = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 0) : 1;
	t_set_case("%s handle, %zu MiB reads, writer %s", argv[1], len / T_MIB, argv[3]);

	const char *path = t_make_pattern_file(FLEN, 0);
	t_require_local_odirect_fs(path);
	if (direct && !t_odirect_supported(path))
		T_SKIP("O_DIRECT not supported on %s", path);

	/* The writer first: no CUDA, no library in the child. */
	int to_w[2], from_w[2];
	T_SYS(pipe(to_w));
	T_SYS(pipe(from_w));
	pid_t pid = fork();
	T_SYS(pid);
	if (pid == 0) {
		close(to_w[1]);
		close(from_w[0]);
		_exit(writer_main(path, to_w[0], from_w[1]));
	}
	close(to_w[0]);
	close(from_w[1]);
	char c;
	T_EQ(read(from_w[0], &c, 1), 1);

	t_cuda_require();
	served_fn = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "ocf_fault_ra_served");
	int truth_fd = t_open(path, O_RDONLY);
	int fd = t_open(path, O_RDONLY | (direct ? O_DIRECT : 0));
	CUfileHandle_t fh = t_register_fd(fd);
	CUdeviceptr dev = t_dev_alloc(len + GUARD);
	uint8_t *got = malloc(len + GUARD), *truth = malloc(len);
	T_ASSERT(got && truth);

	/* A file nobody writes now (its pages clean after an fsync): read in
	 * order, most reads are served from read-ahead. */
	if (!direct && len == T_MIB && served_fn) {
		int wfd = t_open(path, O_RDONLY);
		T_SYS(fsync(wfd));
		close(wfd);
		unsigned long s0 = served_fn();
		for (off_t off = 0; off < 24 * (off_t)T_MIB; off += (off_t)len) {
			T_IO(cuFileRead(fh, (void *)(uintptr_t)dev, len, off, 0), (ssize_t)len);
			t_dev_get(got, dev, len);
			T_EQ_U(t_pread_full(truth_fd, truth, len, (uint64_t)off), len);
			T_ASSERT(memcmp(got, truth, len) == 0);
		}
		T_GE(served_fn() - s0, 12);
		/* Dirty again, as the writer left them. */
		struct cmd m = {.off = 0, .len = FLEN, .seed = 0x51, .flush = 0};
		T_EQ(write(to_w[1], &m, sizeof(m)), (ssize_t)sizeof(m));
		T_EQ(read(from_w[0], &c, 1), 1);
	}

	int stale = 0, mixed = 0;
	off_t pos = 0;
	for (int round = 0; round < rounds; round++) {
		if (pos + (off_t)len + REWRITE > FLEN)
			pos = 0;
		t_dev_fill(dev, T_POISON, len + GUARD);
		T_IO(cuFileRead(fh, (void *)(uintptr_t)dev, len, pos, 0), (ssize_t)len);
		t_dev_get(got, dev, len + GUARD);
		T_EQ_U(t_pread_full(truth_fd, truth, len, (uint64_t)pos), len);
		if (t_check_fill(got + len, GUARD, T_POISON, "past the request"))
			T_FAIL("round %d: stored past the request", round);
		if (memcmp(got, truth, len) != 0) {
			stale++;
			/* Old and new bytes mixed in one read? */
			size_t old = 0, fresh = 0;
			for (size_t i = 0; i < len; i += 4096) {
				if (memcmp(got + i, truth + i, 4096) == 0)
					fresh++;
				else
					old++;
			}
			if (old && fresh)
				mixed++;
			if (stale <= 3)
				printf("round %d: %zu MiB at %lld stale (%zu of %zu pages old)\n", round, len / T_MIB,
				       (long long)pos, old, len / 4096);
		}
		pos += (off_t)len;
		/* The next reads' fills run now: the rewrite comes before, during
		 * or after them. */
		x = x * 1103515245u + 12345u;
		usleep((x >> 8) % 400);
		struct cmd m = {.off = (uint64_t)pos, .len = REWRITE, .seed = x | 1, .flush = flush};
		T_EQ(write(to_w[1], &m, sizeof(m)), (ssize_t)sizeof(m));
		T_EQ(read(from_w[0], &c, 1), 1);
	}
	printf("%s handle, %zu MiB reads, writer %s: %d of %d rounds stale (%d mixed)%s\n", argv[1], len / T_MIB,
	       argv[3], stale, rounds, mixed,
	       served_fn ? "" : " (no count of reads served: not the fault-injection library)");
	if (served_fn)
		printf("reads served from read-ahead: %lu\n", served_fn());

	struct cmd quit = {.flush = -1};
	T_EQ(write(to_w[1], &quit, sizeof(quit)), (ssize_t)sizeof(quit));
	T_CHILD_OK(t_wait_child(pid, 20000, "writer"), "writer");
	T_EQ(stale, 0);
	T_CU(cuMemFree(dev));
	free(got);
	free(truth);
	cuFileHandleDeregister(fh);
	close(fd);
	close(truth_fd);
	T_CUFILE_OK(cuFileDriverClose());
	t_cleanup_files();
	printf("PASS\n");
	return T_EXIT_PASS;
}
