/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Several disjoint interior sub-ranges of one allocation (device and host)
 * register side by side; a range overlapping two of them and one covering
 * the whole allocation (other bases) are accepted too, as NVIDIA's library
 * accepts them, while the same base twice is refused; with all of them
 * registered, I/O through each sub-range (with buffer offsets inside it)
 * lands exactly there; each registration deregisters once by its own base.
 */
#include "test.h"

#define EXPECT_OVERLAP_OTHER_BASE CU_FILE_SUCCESS
#define EXPECT_SAME_BASE CU_FILE_MEMORY_ALREADY_REGISTERED
#define EXPECT_DEREG_TWICE CU_FILE_MEMORY_NOT_REGISTERED

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
	uint8_t *across = p + sub[0][0] + sub[0][1] - 1; /* last byte of 0, first of 1 */
	T_CUFILE(cuFileBufRegister(across, 2, 0), EXPECT_OVERLAP_OTHER_BASE);
	T_CUFILE(cuFileBufRegister(p, len, 0), EXPECT_OVERLAP_OTHER_BASE);
	for (size_t i = 0; i < nsub; i++) {
		t_set_case("%s sub-range %zu again", t_mem_kind_name(kind), i);
		T_CUFILE(cuFileBufRegister(p + sub[i][0], 4096, 0), EXPECT_SAME_BASE);
	}

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
	for (size_t i = 0; i < nsub; i++) {
		t_set_case("%s deregister sub-range %zu", t_mem_kind_name(kind), i);
		T_CUFILE_OK(cuFileBufDeregister(p + sub[i][0]));
		T_CUFILE(cuFileBufDeregister(p + sub[i][0]), EXPECT_DEREG_TWICE);
	}
	t_set_case("%s deregister the overlapping ones", t_mem_kind_name(kind));
	T_CUFILE_OK(cuFileBufDeregister(across));
	T_CUFILE_OK(cuFileBufDeregister(p));
	T_CUFILE(cuFileBufDeregister(across), EXPECT_DEREG_TWICE);
	T_CUFILE(cuFileBufDeregister(p), EXPECT_DEREG_TWICE);
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
