/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads and writes whose file range ends at or just below LLONG_MAX (the
 * largest offset the API can express) are legal arguments, but no file
 * system stores data there: a read returns 0 (end of file) or fails, a
 * write fails with -1 and errno (EFBIG, EINVAL), and nothing is written
 * anywhere — not the caller's buffer around the range, not the file.  On
 * O_DIRECT descriptors the library rounds such ranges out to whole blocks;
 * the rounding must not overflow off_t (the API fuzzer found that it did,
 * which UBSan builds report).  A range that would pass LLONG_MAX is EINVAL.
 */
#include "test.h"

#define GUARD 4096
#define MAXLEN 9000

static const long long back[] = {0, 1, 100, 4095, 4096, 5000, 8191, 1 << 20};
static const size_t sizes[] = {1, 100, 4096, 5000, 8192};

static void one(int fd, struct t_mem *m, bool write, off_t foff, size_t size, const char *what)
{
	t_set_case("%s, %s, offset LLONG_MAX-%lld, size %zu", what, write ? "write" : "read",
		   (long long)(LLONG_MAX - foff), size);
	CUfileHandle_t fh = t_register_fd(fd);
	uint8_t *h = malloc(m->len);
	T_ASSERT(h != NULL);
	t_mem_fill(m, 0, T_POISON, m->len);
	uint64_t len0 = t_file_size(fd);
	void *base = (uint8_t *)m->ptr + GUARD;
	errno = 0;
	ssize_t r = write ? cuFileWrite(fh, base, size, foff, 0) : cuFileRead(fh, base, size, foff, 0);
	int e = errno;
	bool past = (unsigned long long)foff + size > (unsigned long long)LLONG_MAX;
	if (past) {
		if (r != -1 || e != EINVAL)
			T_FAIL("returned %zd (errno %d) for a range past LLONG_MAX, expected -1 with EINVAL", r, e);
	} else if (r == -1) {
		if (e != EINVAL && e != EFBIG)
			T_FAIL("-1 with errno %d (%s), expected EINVAL or EFBIG", e, strerror(e));
	} else if (r != 0 || write) {
		char b[128];
		T_FAIL("returned %s where no byte can be stored", t_io_ret_str(r, e, b, sizeof(b)));
	}
	t_mem_get(m, 0, h, m->len);
	if (t_check_fill(h, m->len, T_POISON, "buffer"))
		T_FAIL("the buffer changed");
	T_EQ_U(t_file_size(fd), len0);
	cuFileHandleDeregister(fh);
	free(h);
}

int main(void)
{
	const char *path = t_make_pattern_file(64 * T_KIB, 0);
	bool direct = t_odirect_supported(path) == 1;
	struct t_mem mem[2];
	int nmem = 0;
	t_mem_alloc(&mem[nmem++], T_MEM_HOST_MMAP, GUARD + MAXLEN + GUARD);
	if (t_cuda_init() == 0)
		t_mem_alloc(&mem[nmem++], T_MEM_DEVICE, GUARD + MAXLEN + GUARD);
	for (int odirect = 0; odirect <= (direct ? 1 : 0); odirect++) {
		int fd = t_open(path, O_RDWR | (odirect ? O_DIRECT : 0));
		for (int k = 0; k < nmem; k++) {
			char what[128];
			snprintf(what, sizeof(what), "%s, %s", odirect ? "O_DIRECT" : "buffered",
				 t_mem_kind_name(mem[k].kind));
			for (size_t b = 0; b < sizeof(back) / sizeof(back[0]); b++)
				for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
					for (int w = 0; w <= 1; w++)
						one(fd, &mem[k], w, (off_t)(LLONG_MAX - back[b]), sizes[s], what);
		}
		close(fd);
	}
	for (int k = 0; k < nmem; k++)
		t_mem_free(&mem[k]);
	T_EQ(t_driver_close_all(4), 1);
	return T_EXIT_PASS;
}
