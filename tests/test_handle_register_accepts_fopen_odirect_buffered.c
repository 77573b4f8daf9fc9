/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Regular-file fds register and work whatever way they were opened:
 * fileno(fopen()), O_DIRECT, buffered, O_RDONLY, O_WRONLY, O_RDWR.
 */
#include "test.h"

static void read_check(CUfileHandle_t fh, off_t off, const char *what)
{
	uint8_t buf[8192];

	memset(buf, T_POISON, sizeof(buf));
	T_IO(cuFileRead(fh, buf, 5000, off, 7), 5000);
	if (t_check_pattern(buf + 7, 5000, (uint64_t)off, 0, what) ||
	    t_check_fill(buf, 7, T_POISON, "guard before") ||
	    t_check_fill(buf + 5007, sizeof(buf) - 5007, T_POISON, "guard after"))
		T_FAIL("%s: bad data", what);
}

static void write_check(CUfileHandle_t fh, const char *path, off_t off, uint32_t seed)
{
	uint8_t buf[3000], back[3000];

	t_fill_pattern(buf, sizeof(buf), (uint64_t)off, seed);
	T_IO(cuFileWrite(fh, buf, sizeof(buf), off, 0), sizeof(buf));
	int fd = t_open(path, O_RDWR);
	T_EQ_U(t_pread_full(fd, back, sizeof(back), (uint64_t)off), sizeof(back));
	if (t_check_pattern(back, sizeof(back), (uint64_t)off, seed, "written bytes"))
		T_FAIL("bad file contents");
	t_pwrite_pattern(fd, (uint64_t)off, sizeof(back), 0); /* restore */
	close(fd);
}

int main(void)
{
	const char *path = t_make_pattern_file(256 * T_KIB, 0);
	CUfileHandle_t fh;

	T_CUFILE_OK(cuFileDriverOpen());

	FILE *f = fopen(path, "r+");
	T_ASSERT(f != NULL);
	fh = t_register_fd(fileno(f));
	read_check(fh, 12345, "fopen r+");
	write_check(fh, path, 100000, 1);
	cuFileHandleDeregister(fh);
	fclose(f);

	f = fopen(path, "r");
	T_ASSERT(f != NULL);
	fh = t_register_fd(fileno(f));
	read_check(fh, 1, "fopen r");
	cuFileHandleDeregister(fh);
	fclose(f);

	int fd = t_open(path, O_RDONLY);
	fh = t_register_fd(fd);
	read_check(fh, 3, "O_RDONLY");
	cuFileHandleDeregister(fh);
	close(fd);

	fd = t_open(path, O_WRONLY);
	fh = t_register_fd(fd);
	write_check(fh, path, 4097, 2);
	cuFileHandleDeregister(fh);
	close(fd);

	fd = t_open(path, O_RDWR);
	fh = t_register_fd(fd);
	read_check(fh, 0, "O_RDWR");
	write_check(fh, path, 50001, 3);
	cuFileHandleDeregister(fh);
	close(fd);

	if (t_odirect_supported(path)) {
		fd = t_open(path, O_RDWR | O_DIRECT);
		fh = t_register_fd(fd);
		read_check(fh, 4095, "O_DIRECT O_RDWR");
		write_check(fh, path, 8191, 4);
		cuFileHandleDeregister(fh);
		close(fd);
		fd = t_open(path, O_RDONLY | O_DIRECT);
		fh = t_register_fd(fd);
		read_check(fh, 65536, "O_DIRECT O_RDONLY");
		cuFileHandleDeregister(fh);
		close(fd);
	} else {
		fprintf(stderr, "NOTE: %s refuses O_DIRECT; O_DIRECT cases skipped\n", t_dir());
	}

	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
