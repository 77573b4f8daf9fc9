/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host memory of every kind registers and carries I/O: malloc, anonymous
 * mmap, a file-backed MAP_SHARED mapping, and (with a CUDA driver) pinned
 * cuMemHostAlloc memory, with both RDMA flag values.
 */
#include "test.h"

static void io_check(CUfileHandle_t fh, int check_fd, uint64_t flen, struct t_mem *m,
		     const char *what)
{
	t_set_case("%s read", what);
	if (t_read_and_verify(fh, m, 0, m->len - 5, 999, 5, (ssize_t)(m->len - 5), 0))
		T_FAIL("bad read");
	t_set_case("%s write", what);
	if (t_write_and_verify(fh, m, 0, m->len - 8, 4097, 8, check_fd, flen, 3, 0))
		T_FAIL("bad write");
}

static void run(CUfileHandle_t fh, int check_fd, uint64_t flen, enum t_mem_kind kind, int flags)
{
	struct t_mem m;
	char what[128];

	snprintf(what, sizeof(what), "%s flags %d", t_mem_kind_name(kind), flags);
	t_mem_alloc(&m, kind, 1 * T_MIB + 4096);
	t_set_case("%s register", what);
	T_CUFILE_OK(cuFileBufRegister(m.ptr, m.len, flags));
	io_check(fh, check_fd, flen, &m, what);
	T_CUFILE_OK(cuFileBufDeregister(m.ptr));
	/* Unregistered, the same memory works too. */
	io_check(fh, check_fd, flen, &m, what);
	t_mem_free(&m);
}

int main(void)
{
	const uint64_t flen = 2 * T_MIB;
	const char *path = t_make_pattern_file(flen, 0);
	int fd = t_open(path, O_RDWR);
	int check_fd = t_open(path, O_RDWR);

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	for (int flags = 0; flags <= CU_FILE_RDMA_REGISTER; flags++) {
		run(fh, check_fd, flen, T_MEM_HOST_MALLOC, flags);
		run(fh, check_fd, flen, T_MEM_HOST_MMAP, flags);
	}

	/* File-backed shared mapping as the buffer. */
	const char *mpath = t_make_pattern_file(T_MIB, 7);
	int mfd = t_open(mpath, O_RDWR);
	void *map = mmap(NULL, T_MIB, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	T_ASSERT(map != MAP_FAILED);
	t_set_case("file-backed mmap");
	T_CUFILE_OK(cuFileBufRegister(map, T_MIB, 0));
	T_IO(cuFileRead(fh, map, T_MIB - 100, 12345, 100), T_MIB - 100);
	if (t_check_pattern((uint8_t *)map + 100, T_MIB - 100, 12345, 0, "read into the mapping") ||
	    t_check_pattern(map, 100, 0, 7, "mapping before the range"))
		T_FAIL("bad data");
	T_CUFILE_OK(cuFileBufDeregister(map));
	munmap(map, T_MIB);
	close(mfd);

	if (t_cuda_init() == 0) {
		run(fh, check_fd, flen, T_MEM_HOST_PINNED, 0);
		run(fh, check_fd, flen, T_MEM_HOST_PINNED, CU_FILE_RDMA_REGISTER);
	} else {
		fprintf(stderr, "NOTE: no CUDA device; cuMemHostAlloc case skipped\n");
	}
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	close(check_fd);
	close(fd);
	return 0;
}
