/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileBufRegister / cuFileBufDeregister argument checking, host and device:
 *   register NULL or length 0, or flags other than combinations of
 *   CU_FILE_RDMA_REGISTER | CU_FILE_RDMA_RELAXED_ORDERING -> INVALID_VALUE
 *   a range overlapping an existing registration (same base, inside, across
 *   either end) -> MEMORY_ALREADY_REGISTERED
 *   deregister NULL -> INVALID_VALUE; an unknown pointer or an interior
 *   pointer of a registration -> MEMORY_NOT_REGISTERED; twice -> NOT_REGISTERED
 * and rejected calls leave the existing registration intact.
 */
#include "test.h"

#define EXPECT_NULL CU_FILE_INVALID_VALUE
#define EXPECT_ZERO_LEN CU_FILE_INVALID_VALUE
#define EXPECT_BAD_FLAGS CU_FILE_INVALID_VALUE
#define EXPECT_OVERLAP CU_FILE_MEMORY_ALREADY_REGISTERED
#define EXPECT_DEREG_NULL CU_FILE_INVALID_VALUE
#define EXPECT_DEREG_UNKNOWN CU_FILE_MEMORY_NOT_REGISTERED
#define EXPECT_DEREG_INTERIOR CU_FILE_MEMORY_NOT_REGISTERED

static void run(enum t_mem_kind kind)
{
	struct t_mem m;
	const size_t len = 1 * T_MIB;
	uint8_t *p;

	t_set_case("%s", t_mem_kind_name(kind));
	t_mem_alloc(&m, kind, len);
	p = m.ptr;

	T_CUFILE(cuFileBufRegister(p, 0, 0), EXPECT_ZERO_LEN);
	const int bad_flags[] = { 4, 8, 5, 7, 0x100, -1, 0x7fffffff };
	for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
		t_set_case("%s flags 0x%x", t_mem_kind_name(kind), bad_flags[i]);
		T_CUFILE(cuFileBufRegister(p, 4096, bad_flags[i]), EXPECT_BAD_FLAGS);
	}
	/* Every valid flag combination works. */
	const int good_flags[] = { 0, CU_FILE_RDMA_REGISTER, CU_FILE_RDMA_RELAXED_ORDERING,
				   CU_FILE_RDMA_REGISTER | CU_FILE_RDMA_RELAXED_ORDERING };
	for (size_t i = 0; i < 4; i++) {
		t_set_case("%s flags 0x%x", t_mem_kind_name(kind), good_flags[i]);
		T_CUFILE_OK(cuFileBufRegister(p, len, good_flags[i]));
		T_CUFILE_OK(cuFileBufDeregister(p));
	}

	/* Register the middle [256K, 768K). */
	t_set_case("%s overlap", t_mem_kind_name(kind));
	uint8_t *mid = p + 256 * T_KIB;
	T_CUFILE_OK(cuFileBufRegister(mid, 512 * T_KIB, 0));
	T_CUFILE(cuFileBufRegister(mid, 512 * T_KIB, 0), EXPECT_OVERLAP);      /* same */
	T_CUFILE(cuFileBufRegister(mid, 4096, 0), EXPECT_OVERLAP);             /* same base */
	T_CUFILE(cuFileBufRegister(mid + 4096, 4096, 0), EXPECT_OVERLAP);      /* inside */
	T_CUFILE(cuFileBufRegister(mid + 1, 1, 0), EXPECT_OVERLAP);            /* inside */
	T_CUFILE(cuFileBufRegister(p, 256 * T_KIB + 1, 0), EXPECT_OVERLAP);    /* across start */
	T_CUFILE(cuFileBufRegister(p, len, 0), EXPECT_OVERLAP);                /* covering */
	T_CUFILE(cuFileBufRegister(mid + 512 * T_KIB - 1, 4096, 0), EXPECT_OVERLAP); /* across end */
	/* Adjacent ranges do not overlap. */
	T_CUFILE_OK(cuFileBufRegister(p, 256 * T_KIB, 0));
	T_CUFILE_OK(cuFileBufRegister(mid + 512 * T_KIB, 256 * T_KIB, 0));

	/* Deregistration errors. */
	t_set_case("%s deregister", t_mem_kind_name(kind));
	T_CUFILE(cuFileBufDeregister(NULL), EXPECT_DEREG_NULL);
	T_CUFILE(cuFileBufDeregister(mid + 4096), EXPECT_DEREG_INTERIOR);
	T_CUFILE(cuFileBufDeregister(mid + 1), EXPECT_DEREG_INTERIOR);
	T_CUFILE(cuFileBufDeregister(p + len + 4096 * 1000), EXPECT_DEREG_UNKNOWN);
	static char unknown[64];
	T_CUFILE(cuFileBufDeregister(unknown), EXPECT_DEREG_UNKNOWN);
	T_CUFILE_OK(cuFileBufDeregister(mid));
	T_CUFILE(cuFileBufDeregister(mid), EXPECT_DEREG_UNKNOWN);
	T_CUFILE_OK(cuFileBufDeregister(p));
	T_CUFILE_OK(cuFileBufDeregister(mid + 512 * T_KIB));
	/* Everything is free again: the whole range registers. */
	T_CUFILE_OK(cuFileBufRegister(p, len, 0));
	T_CUFILE_OK(cuFileBufDeregister(p));
	t_set_case("%s", "");
	t_mem_free(&m);
}

int main(void)
{
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE(cuFileBufRegister(NULL, 4096, 0), EXPECT_NULL);
	T_CUFILE(cuFileBufRegister(NULL, 0, 0), EXPECT_NULL);
	T_CUFILE(cuFileBufDeregister(NULL), EXPECT_DEREG_NULL);

	run(T_MEM_HOST_MALLOC);
	run(T_MEM_HOST_MMAP);
	if (t_cuda_init() == 0) {
		run(T_MEM_HOST_PINNED);
		run(T_MEM_DEVICE);
	} else {
		fprintf(stderr, "NOTE: no CUDA device; device cases skipped\n");
	}
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
