/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pattern_test_util.h - shared set-up of the programs for the I/O patterns
 * of the GPUDirect Storage best-practices guide (test_pattern_*.c).
 *
 * A pattern program runs its body twice: on a buffered descriptor and, where
 * the file system allows it, on an O_DIRECT descriptor of the same file.  The
 * file holds pattern seed 0 (PT_FLEN bytes); the buffer is device memory
 * when a CUDA device is there (host memory otherwise).  Every read is checked
 * byte for byte, with guard bytes around the range still poison; every write
 * is read back through the kernel with the bytes around it unchanged, then
 * undone (test.h: t_read_and_verify_window, t_write_and_verify).
 */
#ifndef OCF_PATTERN_TEST_UTIL_H_
#define OCF_PATTERN_TEST_UTIL_H_

#include "test.h"

#define PT_FLEN (16 * T_MIB)

struct pt {
	const char *path;
	int fd;       /* the descriptor registered with cuFile */
	int check_fd; /* a plain buffered descriptor to check writes */
	bool odirect;
	CUfileHandle_t fh;
	struct t_mem mem;
	unsigned seed; /* next write seed */
};

/* Reads [foff, +size) into mem at base_off + boff and checks it. */
static inline void pt_read(struct pt *p, size_t base_off, size_t size, off_t foff, off_t boff)
{
	t_set_case("%s fd, read %zu bytes at file offset %lld, buffer %zu + %lld", p->odirect ? "O_DIRECT" : "buffered",
		   size, (long long)foff, base_off, (long long)boff);
	if (t_read_and_verify_window(p->fh, &p->mem, base_off, size, foff, boff, (ssize_t)size, 0, 8192))
		T_FAIL("read verification failed");
}

/* Writes a new pattern over [foff, +size) from mem at base_off + boff,
 * checks the file, and restores it. */
static inline void pt_write(struct pt *p, size_t base_off, size_t size, off_t foff, off_t boff)
{
	t_set_case("%s fd, write %zu bytes at file offset %lld, buffer %zu + %lld", p->odirect ? "O_DIRECT" : "buffered",
		   size, (long long)foff, base_off, (long long)boff);
	if (t_write_and_verify(p->fh, &p->mem, base_off, size, foff, boff, p->check_fd, PT_FLEN, ++p->seed, 0))
		T_FAIL("write verification failed");
}

/* Runs body(p) on a buffered fd and on an O_DIRECT fd (where supported),
 * with a buffer of buf_len bytes. */
static inline void pt_run(size_t buf_len, void (*body)(struct pt *p))
{
	const char *path = t_make_pattern_file(PT_FLEN, 0);
	bool gpu = t_cuda_init() == 0;

	T_CUFILE_OK(cuFileDriverOpen());

	for (int direct = 0; direct < 2; direct++) {
		struct pt p = {.path = path, .odirect = direct != 0};
		if (direct && !t_odirect_supported(path)) {
			fprintf(stderr, "O_DIRECT not supported here: buffered descriptor only\n");
			break;
		}
		p.fd = t_open(path, O_RDWR | (direct ? O_DIRECT : 0));
		p.check_fd = t_open(path, O_RDWR);
		p.fh = t_register_fd(p.fd);
		t_mem_alloc(&p.mem, gpu ? T_MEM_DEVICE : T_MEM_HOST_MALLOC, buf_len);
		fprintf(stderr, "--- %s fd, %s\n", direct ? "O_DIRECT" : "buffered", t_mem_kind_name(p.mem.kind));
		body(&p);
		cuFileHandleDeregister(p.fh);
		t_mem_free(&p.mem);
		close(p.fd);
		close(p.check_fd);
	}
	t_set_case("after the runs");
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);
}

#endif /* OCF_PATTERN_TEST_UTIL_H_ */
