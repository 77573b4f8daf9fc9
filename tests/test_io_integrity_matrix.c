/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The integrity matrix: every combination of
 *   memory        device (cuMemAlloc) | host malloc | host pinned (cuMemHostAlloc)
 *   registration  registered | unregistered
 *   fd            O_DIRECT | buffered
 *   file offset   0, 4096, 1, 4095, 12345
 *   buffer offset 0, 4096, 3
 *   size          1, 511, 4096, 4097, 1 MiB, 1 MiB + 3, 9 MiB + 17
 * moves exactly the right bytes:
 *   reads:  the destination window (range + guard zones) is poisoned first;
 *           afterwards the range holds the file's bytes and the guards are
 *           still poison; reads crossing EOF return the exact short count
 *           and leave the bytes past it untouched; reads at/after EOF give 0.
 *   writes: a new pattern is written into the file (pre-filled with the
 *           canonical pattern); plain pread then shows the new bytes in the
 *           range and the old bytes around it (unaligned O_DIRECT writes must
 *           not clobber neighbours); writes that extend the file give the
 *           exact new length.
 * argv[1] selects the memory kind (device | malloc | pinned | mmap); none =
 * all.  mmap (page-aligned pageable host memory) is an extra kind: like
 * pinned memory it is aligned, so O_DIRECT can use it in place.
 * Failures are counted and listed (up to a limit) rather than stopping at
 * the first.  O_DIRECT cases are skipped (noted) only where the file system
 * refuses O_DIRECT.
 */
#include "test.h"

#define GUARD 4096
#define MAX_BOFF 4096
#define MAX_SIZE (9 * T_MIB + 17)
#define REG_LEN (MAX_BOFF + MAX_SIZE)
#define ALLOC (GUARD + REG_LEN + GUARD)
#define FLEN (10 * T_MIB + 777) /* unaligned EOF */
#define MAX_FAILURES 25

static const off_t foffs[] = { 0, 4096, 1, 4095, 12345 };
static const off_t boffs[] = { 0, 4096, 3 };
static const size_t sizes[] = { 1, 511, 4096, 4097, 1 * T_MIB, 1 * T_MIB + 3, MAX_SIZE };
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* EOF-crossing and past-EOF reads: {file offset, size, buffer offset, expected}. */
static const struct {
	off_t foff;
	size_t size;
	off_t boff;
	ssize_t expect;
} eof_reads[] = {
	{ FLEN - 100, 4096, 0, 100 },
	{ FLEN - 100, 4096, 3, 100 },
	{ FLEN - 1, 1, 0, 1 },
	{ FLEN - 1, 4096, 4096, 1 },
	{ FLEN - 777, 4096, 0, 777 },           /* aligned start, unaligned EOF */
	{ FLEN - 777, 1 * T_MIB + 3, 3, 777 },
	{ FLEN - 5000, 1 * T_MIB, 0, 5000 },
	{ FLEN - 8193, MAX_SIZE, 3, 8193 },
	{ FLEN - 4097 - 4096 * 300, MAX_SIZE, 4096, 4097 + 4096 * 300 },
	{ 12345, MAX_SIZE + 4096 - 12345 + 1, 0, MAX_SIZE + 4096 - 12345 + 1 }, /* in range */
	{ FLEN, 4096, 0, 0 },
	{ FLEN, 1, 3, 0 },
	{ FLEN + 1, 4096, 0, 0 },
	{ FLEN + 12345, 4097, 3, 0 },
	{ FLEN + 1 * T_MIB, MAX_SIZE, 0, 0 },
};

/* Writes that extend the file: {file offset, size, buffer offset}. */
static const struct {
	off_t foff;
	size_t size;
	off_t boff;
} extend_writes[] = {
	{ FLEN - 100, 4097, 0 },
	{ FLEN - 777, 4096 + 5, 3 },
	{ FLEN, 4096, 0 },
	{ FLEN, 1, 3 },
	{ FLEN - 1, 1 * T_MIB + 3, 4096 },
};

static int failures, cases;
static uint32_t next_seed = 1;

static void failed(void)
{
	fprintf(stderr, "  FAILED: %s\n", t_case);
	if (++failures >= MAX_FAILURES) {
		fprintf(stderr, "too many failures; stopping\n");
		exit(T_EXIT_FAIL);
	}
}

static uint32_t new_seed(void)
{
	next_seed = next_seed % 250 + 1; /* never 0, the file's own pattern */
	return next_seed;
}

static void run_kind(enum t_mem_kind kind, CUfileHandle_t fhs[2], const char *fd_names[2],
		     int check_fd)
{
	struct t_mem m;

	t_mem_alloc(&m, kind, ALLOC);
	for (int reg = 0; reg < 2; reg++) {
		const char *rs = reg ? "registered" : "unregistered";
		if (reg) {
			t_set_case("%s register", t_mem_kind_name(kind));
			T_CUFILE_OK(cuFileBufRegister((uint8_t *)m.ptr + GUARD, REG_LEN, 0));
		}
		for (int f = 0; f < 2; f++) {
			if (!fhs[f])
				continue;
			/* Reads. */
			for (size_t si = 0; si < N(sizes); si++)
			for (size_t fi = 0; fi < N(foffs); fi++)
			for (size_t bi = 0; bi < N(boffs); bi++) {
				cases++;
				t_set_case("read %s %s %s file_off %lld buf_off %lld size %zu",
					   t_mem_kind_name(kind), rs, fd_names[f], (long long)foffs[fi],
					   (long long)boffs[bi], sizes[si]);
				if (t_read_and_verify_window(fhs[f], &m, GUARD, sizes[si], foffs[fi],
							     boffs[bi], (ssize_t)sizes[si], 0, GUARD))
					failed();
			}
			for (size_t i = 0; i < N(eof_reads); i++) {
				cases++;
				t_set_case("EOF read %s %s %s file_off FLEN%+lld buf_off %lld size %zu",
					   t_mem_kind_name(kind), rs, fd_names[f],
					   (long long)(eof_reads[i].foff - FLEN),
					   (long long)eof_reads[i].boff, eof_reads[i].size);
				if (t_read_and_verify_window(fhs[f], &m, GUARD, eof_reads[i].size,
							     eof_reads[i].foff, eof_reads[i].boff,
							     eof_reads[i].expect, 0, GUARD))
					failed();
			}
			/* Writes (the largest size with fewer offsets, to bound disk traffic). */
			for (size_t si = 0; si < N(sizes); si++)
			for (size_t fi = 0; fi < N(foffs); fi++)
			for (size_t bi = 0; bi < N(boffs); bi++) {
				if (sizes[si] == MAX_SIZE && (fi % 2 || bi == 1))
					continue;
				cases++;
				t_set_case("write %s %s %s file_off %lld buf_off %lld size %zu",
					   t_mem_kind_name(kind), rs, fd_names[f], (long long)foffs[fi],
					   (long long)boffs[bi], sizes[si]);
				if (t_write_and_verify(fhs[f], &m, GUARD, sizes[si], foffs[fi], boffs[bi],
						       check_fd, FLEN, new_seed(), 0))
					failed();
			}
			for (size_t i = 0; i < N(extend_writes); i++) {
				cases++;
				t_set_case("extending write %s %s %s file_off FLEN%+lld buf_off %lld "
					   "size %zu",
					   t_mem_kind_name(kind), rs, fd_names[f],
					   (long long)(extend_writes[i].foff - FLEN),
					   (long long)extend_writes[i].boff, extend_writes[i].size);
				if (t_write_and_verify(fhs[f], &m, GUARD, extend_writes[i].size,
						       extend_writes[i].foff, extend_writes[i].boff,
						       check_fd, FLEN, new_seed(), 0))
					failed();
			}
		}
		if (reg)
			T_CUFILE_OK(cuFileBufDeregister((uint8_t *)m.ptr + GUARD));
	}
	t_set_case("%s", "");
	t_mem_free(&m);
}

int main(int argc, char **argv)
{
	enum t_mem_kind kinds[4];
	int nkinds = 0;

	if (argc < 2 || !strcmp(argv[1], "all")) {
		kinds[nkinds++] = T_MEM_DEVICE;
		kinds[nkinds++] = T_MEM_HOST_MALLOC;
		kinds[nkinds++] = T_MEM_HOST_PINNED;
		kinds[nkinds++] = T_MEM_HOST_MMAP;
	} else if (!strcmp(argv[1], "device")) {
		kinds[nkinds++] = T_MEM_DEVICE;
	} else if (!strcmp(argv[1], "malloc")) {
		kinds[nkinds++] = T_MEM_HOST_MALLOC;
	} else if (!strcmp(argv[1], "pinned")) {
		kinds[nkinds++] = T_MEM_HOST_PINNED;
	} else if (!strcmp(argv[1], "mmap")) {
		kinds[nkinds++] = T_MEM_HOST_MMAP;
	} else {
		T_FAIL("usage: %s [device|malloc|pinned|mmap|all]", argv[0]);
	}
	for (int k = 0; k < nkinds; k++)
		if (kinds[k] == T_MEM_DEVICE || kinds[k] == T_MEM_HOST_PINNED)
			t_cuda_require();

	const char *path = t_make_pattern_file(FLEN, 0);
	int check_fd = t_open(path, O_RDWR);
	int bfd = t_open(path, O_RDWR);
	int dfd = -1;
	if (t_odirect_supported(path))
		dfd = t_open(path, O_RDWR | O_DIRECT);
	else
		fprintf(stderr, "NOTE: %s refuses O_DIRECT; O_DIRECT cases skipped\n", t_dir());

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fhs[2] = { NULL, NULL };
	const char *fd_names[2] = { "O_DIRECT", "buffered" };
	if (dfd >= 0)
		fhs[0] = t_register_fd(dfd);
	fhs[1] = t_register_fd(bfd);

	for (int k = 0; k < nkinds; k++)
		run_kind(kinds[k], fhs, fd_names, check_fd);

	for (int f = 0; f < 2; f++)
		if (fhs[f])
			cuFileHandleDeregister(fhs[f]);
	T_CUFILE_OK(cuFileDriverClose());
	if (dfd >= 0)
		close(dfd);
	close(bfd);
	close(check_fd);
	fprintf(stderr, "%d cases, %d failed\n", cases, failures);
	return failures ? T_EXIT_FAIL : T_EXIT_PASS;
}
