/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Overlapping registrations with different bases (a tensor and a view into
 * it), as NVIDIA's library accepts them: a device buffer A and a range B
 * that starts inside A (unaligned) and runs past A's end are both
 * registered.  I/O through each base, with buffer offsets inside it, moves
 * exactly the requested bytes (guards around stay poison) and is bounded by
 * that base's own registration: up to B's end through B works although it is
 * past A's end, one byte past either registration is -1 with errno EINVAL.
 * Deregistering needs the exact base (an interior pointer is
 * MEMORY_NOT_REGISTERED); each deregisters exactly once, and B keeps serving
 * I/O after A is gone.  Pinned and malloc host memory run the same steps.
 */
#include "test.h"

#define EXPECT_PAST_OWN_REGISTRATION EINVAL /* errno, return -1 */
#define EXPECT_DEREG_INTERIOR CU_FILE_MEMORY_NOT_REGISTERED
#define EXPECT_DEREG_TWICE CU_FILE_MEMORY_NOT_REGISTERED

#define ALLOC (3 * T_MIB)
/* A = [A_OFF, A_OFF + A_LEN), B = [B_OFF, B_OFF + B_LEN) of the allocation. */
#define A_OFF ((size_t)4096)
#define A_LEN (1 * T_MIB)
#define B_OFF (A_OFF + 256 * T_KIB + 3)
#define B_LEN (1 * T_MIB + 8192)
#define FLEN (2 * T_MIB + 555)

/* Reads through the registration at base_off (length reg_len) with several
 * buffer offsets, each up to the registration's end, and checks the data and
 * that every other byte of the allocation stays poison. */
static void read_through(CUfileHandle_t fh, struct t_mem *m, size_t base_off, size_t reg_len,
			 const char *name)
{
	const off_t boffs[] = { 0, 1, 4096, 300 * T_KIB };

	for (size_t i = 0; i < sizeof(boffs) / sizeof(boffs[0]); i++) {
		size_t size = reg_len - (size_t)boffs[i];
		off_t foff = (off_t)(FLEN - size - i * 1001);
		t_set_case("%s read through %s, buf_off %lld size %zu file_off %lld",
			   t_mem_kind_name(m->kind), name, (long long)boffs[i], size, (long long)foff);
		if (t_read_and_verify(fh, m, base_off, size, foff, boffs[i], (ssize_t)size, 0))
			T_FAIL("bad read");
		/* A short piece in the middle too. */
		if (t_read_and_verify(fh, m, base_off, 8191, foff + 3, boffs[i] + 5, 8191, 0))
			T_FAIL("bad short read");
	}
}

/* One byte past the registration at base_off: refused, nothing moves. */
static void past_end(CUfileHandle_t fh, struct t_mem *m, size_t base_off, size_t reg_len,
		     const char *name)
{
	uint8_t *v = malloc(m->len);

	T_ASSERT(v != NULL);
	t_set_case("%s past the end of %s", t_mem_kind_name(m->kind), name);
	t_mem_fill(m, 0, T_POISON, m->len);
	void *base = (uint8_t *)m->ptr + base_off;
	T_IO_ERRNO(cuFileRead(fh, base, reg_len + 1, 0, 0), EXPECT_PAST_OWN_REGISTRATION);
	T_IO_ERRNO(cuFileRead(fh, base, 4096, 0, (off_t)reg_len - 4095),
		   EXPECT_PAST_OWN_REGISTRATION);
	T_IO_ERRNO(cuFileWrite(fh, base, 4096, 0, (off_t)reg_len - 4095),
		   EXPECT_PAST_OWN_REGISTRATION);
	t_mem_get(m, 0, v, m->len);
	if (t_check_fill(v, m->len, T_POISON, "buffer after rejected reads"))
		T_FAIL("a rejected read changed the buffer");
	free(v);
}

static void run(CUfileHandle_t fh, int check_fd, enum t_mem_kind kind)
{
	struct t_mem m;

	t_mem_alloc(&m, kind, ALLOC);
	uint8_t *a = (uint8_t *)m.ptr + A_OFF, *b = (uint8_t *)m.ptr + B_OFF;

	t_set_case("%s register", t_mem_kind_name(kind));
	T_CUFILE_OK(cuFileBufRegister(a, A_LEN, 0));
	T_CUFILE_OK(cuFileBufRegister(b, B_LEN, 0));

	read_through(fh, &m, A_OFF, A_LEN, "A");
	read_through(fh, &m, B_OFF, B_LEN, "B (inside A, past its end)");
	past_end(fh, &m, A_OFF, A_LEN, "A");
	past_end(fh, &m, B_OFF, B_LEN, "B");

	/* Writes through each base send the right bytes. */
	t_set_case("%s write through A", t_mem_kind_name(kind));
	if (t_write_and_verify(fh, &m, A_OFF, A_LEN - 7, 12345, 7, check_fd, FLEN, 3, 0))
		T_FAIL("bad write");
	t_set_case("%s write through B", t_mem_kind_name(kind));
	if (t_write_and_verify(fh, &m, B_OFF, B_LEN - 1, 1, 1, check_fd, FLEN, 4, 0))
		T_FAIL("bad write");

	/* Deregistration needs the exact base. */
	t_set_case("%s deregister", t_mem_kind_name(kind));
	T_CUFILE(cuFileBufDeregister(a + 1), EXPECT_DEREG_INTERIOR);
	T_CUFILE(cuFileBufDeregister(b + 1), EXPECT_DEREG_INTERIOR);
	T_CUFILE(cuFileBufDeregister(b - 3), EXPECT_DEREG_INTERIOR); /* aligned, inside A */
	T_CUFILE_OK(cuFileBufDeregister(a));
	T_CUFILE(cuFileBufDeregister(a), EXPECT_DEREG_TWICE);

	/* B is untouched by A's deregistration. */
	read_through(fh, &m, B_OFF, B_LEN, "B after A's deregistration");
	past_end(fh, &m, B_OFF, B_LEN, "B after A's deregistration");
	t_set_case("%s deregister B", t_mem_kind_name(kind));
	T_CUFILE_OK(cuFileBufDeregister(b));
	T_CUFILE(cuFileBufDeregister(b), EXPECT_DEREG_TWICE);
	T_CUFILE(cuFileBufDeregister(a), EXPECT_DEREG_TWICE);

	/* Nothing registered any more: both bases register afresh. */
	T_CUFILE_OK(cuFileBufRegister(b, B_LEN, 0));
	T_CUFILE_OK(cuFileBufRegister(a, A_LEN, 0));
	T_CUFILE_OK(cuFileBufDeregister(b));
	T_CUFILE_OK(cuFileBufDeregister(a));
	t_set_case("%s", "");
	t_mem_free(&m);
}

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDWR), check_fd = t_open(path, O_RDWR);

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	run(fh, check_fd, T_MEM_DEVICE);
	run(fh, check_fd, T_MEM_HOST_PINNED);
	run(fh, check_fd, T_MEM_HOST_MALLOC);
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	close(check_fd);
	close(fd);
	return 0;
}
