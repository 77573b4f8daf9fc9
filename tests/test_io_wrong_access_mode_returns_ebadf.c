/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OS errors come back as -1 with errno: cuFileRead through an O_WRONLY fd
 * and cuFileWrite through an O_RDONLY fd return -1 with errno EBADF (host
 * and device buffers, registered or not), and nothing is moved: the read's
 * buffer still holds the poison it was filled with, the write's buffer its
 * pattern, and the file its contents.
 */
#include "test.h"

#define EXPECT_RET (-1)
#define EXPECT_ERRNO EBADF

static void expect_ebadf(ssize_t r, int e, const char *what)
{
	char b[128];

	if (r != EXPECT_RET || e != EXPECT_ERRNO)
		T_FAIL("%s returned %s, expected -1 with errno %d (%s)", what,
		       t_io_ret_str(r, e, b, sizeof(b)), EXPECT_ERRNO, strerror(EXPECT_ERRNO));
}

/* The whole buffer must still hold `byte` (seed < 0) or pattern `seed` of
 * file offsets 0... */
static void expect_untouched(const struct t_mem *m, int seed, const char *what)
{
	uint8_t *v = malloc(m->len);
	T_ASSERT(v != NULL);
	t_mem_get(m, 0, v, m->len);
	if (seed < 0 ? t_check_fill(v, m->len, T_POISON, what)
		     : t_check_pattern(v, m->len, 0, (uint32_t)seed, what))
		T_FAIL("a failed call changed the buffer");
	free(v);
}

static void run(CUfileHandle_t wo, CUfileHandle_t ro, int check_fd, enum t_mem_kind kind, int reg)
{
	struct t_mem m;
	const size_t len = 256 * T_KIB;
	ssize_t r;
	int e;

	t_set_case("%s %s", t_mem_kind_name(kind), reg ? "registered" : "unregistered");
	t_mem_alloc(&m, kind, len);
	if (reg)
		T_CUFILE_OK(cuFileBufRegister(m.ptr, len, 0));
	t_mem_fill(&m, 0, T_POISON, len);

	errno = 0;
	r = cuFileRead(wo, m.ptr, 4096, 0, 0);
	e = errno;
	expect_ebadf(r, e, "cuFileRead on O_WRONLY, 4 KiB");
	errno = 0;
	r = cuFileRead(wo, m.ptr, len - 1, 1, 1);
	e = errno;
	expect_ebadf(r, e, "cuFileRead on O_WRONLY, unaligned");
	expect_untouched(&m, -1, "buffer after the failed reads");

	t_mem_put_pattern(&m, 0, len, 0, 13);
	errno = 0;
	r = cuFileWrite(ro, m.ptr, 4096, 0, 0);
	e = errno;
	expect_ebadf(r, e, "cuFileWrite on O_RDONLY, 4 KiB");
	errno = 0;
	r = cuFileWrite(ro, m.ptr, len - 3, 5, 3);
	e = errno;
	expect_ebadf(r, e, "cuFileWrite on O_RDONLY, unaligned");
	expect_untouched(&m, 13, "buffer after the failed writes");

	uint8_t *b = malloc(len);
	T_ASSERT(b != NULL);
	T_EQ_U(t_pread_full(check_fd, b, len, 0), len);
	if (t_check_pattern(b, len, 0, 0, "file"))
		T_FAIL("a failed write changed the file");
	free(b);
	if (reg)
		T_CUFILE_OK(cuFileBufDeregister(m.ptr));
	t_mem_free(&m);
	t_set_case("%s", "");
}

int main(void)
{
	const char *path = t_make_pattern_file(T_MIB, 0);
	int wfd = t_open(path, O_WRONLY), rfd = t_open(path, O_RDONLY), cfd = t_open(path, O_RDONLY);

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t wo = t_register_fd(wfd), ro = t_register_fd(rfd);
	for (int reg = 0; reg < 2; reg++) {
		run(wo, ro, cfd, T_MEM_HOST_MALLOC, reg);
		if (t_cuda_init() == 0) {
			run(wo, ro, cfd, T_MEM_DEVICE, reg);
			run(wo, ro, cfd, T_MEM_HOST_PINNED, reg);
		}
	}
	/* The handles still work in their own direction. */
	uint8_t buf[4096];
	T_IO(cuFileRead(ro, buf, sizeof(buf), 10, 0), sizeof(buf));
	if (t_check_pattern(buf, sizeof(buf), 10, 0, "read through O_RDONLY"))
		T_FAIL("bad data");
	T_IO(cuFileWrite(wo, buf, sizeof(buf), 10, 0), sizeof(buf));
	cuFileHandleDeregister(wo);
	cuFileHandleDeregister(ro);
	T_CUFILE_OK(cuFileDriverClose());
	close(cfd);
	close(rfd);
	close(wfd);
	return 0;
}
