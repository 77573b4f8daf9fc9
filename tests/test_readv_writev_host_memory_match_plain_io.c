/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileReadv/cuFileWritev on host memory move exactly the bytes that
 * cuFileRead/cuFileWrite of the same file range would, scattered to and
 * gathered from many small pieces (1 to 3000 bytes, gaps between them, so
 * none merge), on buffered and O_DIRECT descriptors, at unaligned file
 * offsets, registered or not:
 *   - every piece gets its bytes; the gaps between pieces are untouched;
 *   - at end of file the result is the bytes up to it, and pieces past it
 *     are untouched;
 *   - 1000 pieces over a buffered descriptor cost a handful of system calls,
 *     not one per piece (/proc/self/io);
 *   - the level-1 statistics count them as readv/writev operations.
 */
#include "vec_test_util.h"

#define NPIECES 1000
#define ARENA (4 * T_MIB)
#define FLEN (8 * T_MIB)

static char *arena;
static CUfileIOVec_t iov[NPIECES];

static void check_read(CUfileHandle_t fh, off_t off, size_t total, const char *what)
{
	memset(arena, T_POISON, ARENA);
	t_set_case("%s: readv of %d pieces at %lld", what, NPIECES, (long long)off);
	T_IO(cuFileReadv(fh, iov, NPIECES, off, 0), (ssize_t)total);
	uint64_t at = (uint64_t)off;
	for (size_t i = 0; i < NPIECES; i++) {
		if (t_check_pattern(iov[i].base, iov[i].len, at, 1, "piece"))
			T_FAIL("piece %zu (%zu bytes) holds wrong bytes", i, iov[i].len);
		at += iov[i].len;
		char *gap = (char *)iov[i].base + iov[i].len;
		if (i + 1 < NPIECES && gap < (char *)iov[i + 1].base &&
		    t_check_fill(gap, (size_t)((char *)iov[i + 1].base - gap), T_POISON, "gap"))
			T_FAIL("the gap after piece %zu was written", i);
	}
}

static void check_eof(CUfileHandle_t fh, size_t total)
{
	memset(arena, T_POISON, ARENA);
	off_t off = (off_t)FLEN - (off_t)(total / 2) - 7;
	t_set_case("readv across end of file at %lld", (long long)off);
	T_IO(cuFileReadv(fh, iov, NPIECES, off, 0), (ssize_t)(FLEN - (size_t)off));
	uint64_t at = (uint64_t)off;
	for (size_t i = 0; i < NPIECES; i++) {
		size_t have = at >= FLEN ? 0 : (iov[i].len < FLEN - at ? iov[i].len : FLEN - at);
		if (t_check_pattern(iov[i].base, have, at, 1, "piece before end of file") ||
		    t_check_fill((char *)iov[i].base + have, iov[i].len - have, T_POISON, "piece past end of file"))
			T_FAIL("piece %zu wrong around end of file", i);
		at += iov[i].len;
	}
}

static void check_write(CUfileHandle_t fh, int fd, off_t off, size_t total, const char *what)
{
	t_vec_fill(iov, NPIECES, (uint64_t)off, 2);
	t_set_case("%s: writev of %d pieces at %lld", what, NPIECES, (long long)off);
	T_IO(cuFileWritev(fh, iov, NPIECES, off, 0), (ssize_t)total);
	char *back = malloc(total);
	T_ASSERT(back != NULL);
	T_EQ_U(t_pread_full(fd, back, total, (uint64_t)off), total);
	if (t_check_pattern(back, total, (uint64_t)off, 2, "file after writev"))
		T_FAIL("the file does not hold the gathered pieces");
	free(back);
}

int main(void)
{
	T_ASSERT(posix_memalign((void **)&arena, 4096, ARENA) == 0);
	size_t total = t_vec_layout(iov, NPIECES, arena, ARENA, 3000, 7);
	T_CUFILE_OK(cuFileSetStatsLevel(1));
	T_CUFILE_OK(cuFileDriverOpen());

	const char *path = t_make_pattern_file(FLEN, 1);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);
	check_read(fh, 12345, total, "buffered");
	check_read(fh, 0, total, "buffered");
	check_eof(fh, total);

	/* Not one system call per piece. */
	unsigned long r0 = 0, w0 = 0, r1 = 0, w1 = 0;
	t_proc_io_calls(&r0, &w0);
	T_IO(cuFileReadv(fh, iov, NPIECES, 4096, 0), (ssize_t)total);
	t_proc_io_calls(&r1, &w1);
	t_set_case("system calls of one readv of %d pieces", NPIECES);
	T_LE_U(r1 - r0, 8);
	const char *wpath = t_make_pattern_file(FLEN, 0);
	int wfd = t_open(wpath, O_RDWR);
	CUfileHandle_t wfh = t_register_fd(wfd);
	t_proc_io_calls(&r0, &w0);
	check_write(wfh, wfd, 777, total, "buffered");
	t_proc_io_calls(&r1, &w1);
	t_set_case("system calls of one writev of %d pieces", NPIECES);
	T_LE_U(w1 - w0, 8);

	/* Registered arena: the same results. */
	T_CUFILE_OK(cuFileBufRegister(arena, ARENA, 0));
	check_read(fh, 999, total, "buffered, registered");
	check_write(wfh, wfd, 5000, total, "buffered, registered");
	T_CUFILE_OK(cuFileBufDeregister(arena));

	CUfileStatsLevel1_t st;
	T_CUFILE_OK(cuFileGetStatsL1(&st));
	t_set_case("%s", "statistics");
	T_EQ_U(st.readv_ops.ok, 5);
	T_EQ_U(st.writev_ops.ok, 2);
	T_EQ_U(st.writev_bytes, 2 * total);
	T_EQ_U(st.read_ops.ok, 0);

	/* O_DIRECT descriptors: staged, same bytes. */
	if (t_odirect_supported(path)) {
		int dfd = t_open(path, O_RDWR | O_DIRECT);
		CUfileHandle_t dfh = t_register_fd(dfd);
		check_read(dfh, 12345, total, "O_DIRECT");
		check_read(dfh, 65536, total, "O_DIRECT");
		check_eof(dfh, total);
		int dwfd = t_open(wpath, O_RDWR | O_DIRECT);
		CUfileHandle_t dwfh = t_register_fd(dwfd);
		check_write(dwfh, wfd, 4097, total, "O_DIRECT");
		check_write(dwfh, wfd, 8192, total, "O_DIRECT");
		cuFileHandleDeregister(dwfh);
		cuFileHandleDeregister(dfh);
		close(dwfd);
		close(dfd);
	}

	cuFileHandleDeregister(wfh);
	cuFileHandleDeregister(fh);
	close(wfd);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	free(arena);
	return T_EXIT_PASS;
}
