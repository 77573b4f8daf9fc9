/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Several disjoint interior sub-ranges of one allocation (device and host)
 * register side by side, I/O through each of them (with buffer offsets
 * inside the sub-range) lands exactly there, and a range overlapping two of
 * them is refused.
 */
#include "test.h"

#define EXPECT_OVERLAP CU_FILE_MEMORY_ALREADY_REGISTERED

static void run(CUfileHandle_t fh, int check_fd, uint64_t flen, enum t_mem_kind kind)
{
	struct t_mem m;
	const size_t len = 4 * T_MIB;
	/* [offset, length) of the sub-ranges inside the allocation. */
	const size_t sub[][2] = {
		{ 4096, 256 * T_KIB },
		{ 4096 + 256 * T_KIB, 64 * T_KIB },   /* adjacent to the first */
		{ 1 * T_MIB + 3, 1 * T_MIB },         /* unaligned start */
		{ 3 * T_MIB, 1 * T_MIB - 4096 },
	};
	const size_t nsub = sizeof(sub) / sizeof(sub[0]);

	t_mem_alloc(&m, kind, len);
	uint8_t *p = m.ptr;
	for (size_t i = 0; i < nsub; i++) {
		t_set_case("%s register sub-range %zu", t_mem_kind_name(kind), i);
		T_CUFILE_OK(cuFileBufRegister(p + sub[i][0], sub[i][1], 0));
	}
	t_set_case("%s overlap", t_mem_kind_name(kind));
	T_CUFILE(cuFileBufRegister(p + sub[0][0] + sub[0][1] - 1, 2, 0), EXPECT_OVERLAP);
	T_CUFILE(cuFileBufRegister(p, len, 0), EXPECT_OVERLAP);

	for (size_t i = 0; i < nsub; i++) {
		size_t base = sub[i][0], sublen = sub[i][1];
		const off_t boffs[] = { 0, 1, 4096 };
		for (size_t b = 0; b < 3; b++) {
			size_t size = sublen - (size_t)boffs[b];
			off_t foff = (off_t)(i * 77777 + b);
			t_set_case("%s read sub-range %zu buf_off %lld size %zu", t_mem_kind_name(kind),
				   i, (long long)boffs[b], size);
			if (t_read_and_verify(fh, &m, base, size, foff, boffs[b], (ssize_t)size, 0))
				T_FAIL("bad read");
			t_set_case("%s write sub-range %zu buf_off %lld size %zu",
				   t_mem_kind_name(kind), i, (long long)boffs[b], size);
			if (t_write_and_verify(fh, &m, base, size, foff, boffs[b], check_fd, flen, 5, 0))
				T_FAIL("bad write");
		}
	}
	for (size_t i = 0; i < nsub; i++)
		T_CUFILE_OK(cuFileBufDeregister(p + sub[i][0]));
	t_set_case("%s", "");
	t_mem_free(&m);
}

int main(void)
{
	const uint64_t flen = 2 * T_MIB + 555;
	const char *path = t_make_pattern_file(flen, 0);
	int fd = t_open(path, O_RDWR);
	int check_fd = t_open(path, O_RDWR);

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	run(fh, check_fd, flen, T_MEM_HOST_MALLOC);
	if (t_cuda_init() == 0) {
		run(fh, check_fd, flen, T_MEM_DEVICE);
		run(fh, check_fd, flen, T_MEM_HOST_PINNED);
	} else {
		fprintf(stderr, "NOTE: no CUDA device; device cases skipped\n");
	}
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	close(check_fd);
	close(fd);
	return 0;
}
