/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileBufRegister / cuFileBufDeregister argument checking, host and device,
 * as NVIDIA's library does it: invalid arguments and the same base twice are
 * rejected, while ranges that overlap a registration at another base are
 * accepted (each assertion below names the status it requires, so a library
 * that refused an overlap, or accepted a second registration of one base,
 * fails):
 *   register NULL or length 0 -> INVALID_VALUE
 *   flag bits other than CU_FILE_RDMA_REGISTER | CU_FILE_RDMA_RELAXED_ORDERING
 *   are accepted and ignored (the registration is an ordinary one)
 *   the same base twice (any length) -> MEMORY_ALREADY_REGISTERED
 *   a range overlapping an existing registration with a different base
 *   (inside, across either end, covering) is accepted; each registration is
 *   deregistered by its own base, exactly once
 *   deregister NULL -> INVALID_VALUE; an unknown pointer or an interior
 *   pointer of a registration -> MEMORY_NOT_REGISTERED; twice -> NOT_REGISTERED
 * and rejected calls leave the existing registration intact.
 */
#include "test.h"

#define EXPECT_NULL CU_FILE_INVALID_VALUE
#define EXPECT_ZERO_LEN CU_FILE_INVALID_VALUE
#define EXPECT_UNKNOWN_FLAGS CU_FILE_SUCCESS
#define EXPECT_SAME_BASE CU_FILE_MEMORY_ALREADY_REGISTERED
#define EXPECT_OVERLAP_OTHER_BASE CU_FILE_SUCCESS
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
	/* Unknown flag bits are ignored: the registration is made, is keyed by
	 * its base like any other, and deregisters once. */
	const int odd_flags[] = { 4, 8, 5, 7, 0x100, -1, 0x7fffffff };
	for (size_t i = 0; i < sizeof(odd_flags) / sizeof(odd_flags[0]); i++) {
		t_set_case("%s flags 0x%x", t_mem_kind_name(kind), odd_flags[i]);
		T_CUFILE(cuFileBufRegister(p, 4096, odd_flags[i]), EXPECT_UNKNOWN_FLAGS);
		T_CUFILE(cuFileBufRegister(p, 4096, 0), EXPECT_SAME_BASE);
		T_CUFILE_OK(cuFileBufDeregister(p));
		T_CUFILE(cuFileBufDeregister(p), EXPECT_DEREG_UNKNOWN);
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
	/* The same base again is refused, whatever the length. */
	T_CUFILE(cuFileBufRegister(mid, 512 * T_KIB, 0), EXPECT_SAME_BASE);       /* same */
	T_CUFILE(cuFileBufRegister(mid, 4096, 0), EXPECT_SAME_BASE);              /* shorter */
	T_CUFILE(cuFileBufRegister(mid, 768 * T_KIB, 0), EXPECT_SAME_BASE);       /* longer */
	/* Overlapping ranges with other bases are accepted, side by side. */
	const struct {
		size_t off, len;
		const char *what;
	} ov[] = {
		{ 256 * T_KIB + 4096, 4096, "inside" },
		{ 256 * T_KIB + 1, 1, "inside, unaligned" },
		{ 0, 256 * T_KIB + 1, "across the start" },
		{ 768 * T_KIB - 1, 4096, "across the end" },
	};
	const size_t nov = sizeof(ov) / sizeof(ov[0]);
	for (size_t i = 0; i < nov; i++) {
		t_set_case("%s overlap %s", t_mem_kind_name(kind), ov[i].what);
		T_CUFILE(cuFileBufRegister(p + ov[i].off, ov[i].len, 0), EXPECT_OVERLAP_OTHER_BASE);
		T_CUFILE(cuFileBufRegister(p + ov[i].off, ov[i].len, 0), EXPECT_SAME_BASE);
	}
	/* Covering everything, but at the base of "across the start". */
	t_set_case("%s overlap covering", t_mem_kind_name(kind));
	T_CUFILE(cuFileBufRegister(p, len, 0), EXPECT_SAME_BASE);
	/* Each deregisters by its own base, exactly once; mid stays. */
	for (size_t i = 0; i < nov; i++) {
		t_set_case("%s deregister overlap %s", t_mem_kind_name(kind), ov[i].what);
		T_CUFILE_OK(cuFileBufDeregister(p + ov[i].off));
		T_CUFILE(cuFileBufDeregister(p + ov[i].off), EXPECT_DEREG_UNKNOWN);
	}
	t_set_case("%s overlap covering", t_mem_kind_name(kind));
	T_CUFILE(cuFileBufRegister(p, len, 0), EXPECT_OVERLAP_OTHER_BASE);
	T_CUFILE(cuFileBufRegister(mid, 4096, 0), EXPECT_SAME_BASE); /* mid is still there */
	T_CUFILE_OK(cuFileBufDeregister(p));
	T_CUFILE(cuFileBufDeregister(p), EXPECT_DEREG_UNKNOWN);
	t_set_case("%s adjacent", t_mem_kind_name(kind));
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
