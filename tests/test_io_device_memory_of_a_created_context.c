/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device memory allocated in a context the application created
 * (cuCtxCreate), not the GPU's primary one, carries reads and writes with
 * the right bytes: small, unaligned and multi-chunk requests (which engine
 * helpers share), registered or not, through a buffered and an O_DIRECT
 * descriptor.  The staging lanes' streams belong to the primary context,
 * so the library copies such memory on its own context's legacy stream and
 * waits for it there.
 */
#include "test.h"

#define FLEN (12 * T_MIB)
#define DLEN (11 * T_MIB)

struct req {
	size_t base_off, size;
	off_t foff, boff;
};

static const struct req reqs[] = {
	{0, 4 * T_KIB, 0, 0},                 /* one small chunk */
	{4096, 5000, 123, 77},                /* unaligned everything */
	/* Above execution.min_io_threshold_size_kb (8 MiB): many chunks,
	 * shared with engine helpers. */
	{0, 10 * T_MIB, 4096, 0},
	{1 * T_MIB, 9 * T_MIB + 3, 65535, 9}, /* unaligned */
};

static void run(CUfileHandle_t fh, int check_fd, struct t_mem *m, const char *what)
{
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		const struct req *q = &reqs[i];
		t_set_case("%s: read %zu bytes at file offset %lld into +%zu+%lld", what, q->size,
			   (long long)q->foff, q->base_off, (long long)q->boff);
		if (t_read_and_verify_window(fh, m, q->base_off, q->size, q->foff, q->boff, (ssize_t)q->size,
					     0, 64 * T_KIB))
			T_FAIL("bad read");
		t_set_case("%s: write %zu bytes at file offset %lld from +%zu+%lld", what, q->size,
			   (long long)q->foff, q->base_off, (long long)q->boff);
		if (t_write_and_verify(fh, m, q->base_off, q->size, q->foff, q->boff, check_fd, FLEN, 5, 0))
			T_FAIL("bad write");
	}
	t_set_case("%s", "");
}

int main(void)
{
	t_cuda_require();
	CUcontext mine = NULL;
	T_CU(cuCtxCreate(&mine, NULL, 0, t_cu_dev)); /* current on this thread */
	T_ASSERT(mine != t_cu_ctx);
	CUdeviceptr d = t_dev_alloc(DLEN);
	CUcontext owner = NULL;
	T_CU(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
	T_EQ_PTR(owner, mine);
	struct t_mem m = {.kind = T_MEM_DEVICE, .ptr = (void *)(uintptr_t)d, .len = DLEN};

	T_CUFILE_OK(cuFileDriverOpen());
	const char *path = t_make_pattern_file(FLEN, 0);
	int check_fd = t_open(path, O_RDWR);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);
	run(fh, check_fd, &m, "buffered");
	T_CUFILE_OK(cuFileBufRegister(m.ptr, DLEN, 0));
	run(fh, check_fd, &m, "buffered, registered");
	T_CUFILE_OK(cuFileBufDeregister(m.ptr));
	cuFileHandleDeregister(fh);
	close(fd);

	if (t_odirect_supported(path)) {
		fd = t_open(path, O_RDWR | O_DIRECT);
		fh = t_register_fd(fd);
		run(fh, check_fd, &m, "O_DIRECT");
		cuFileHandleDeregister(fh);
		close(fd);
	}
	close(check_fd);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuMemFree(d));
	T_CU(cuCtxDestroy(mine));
	return T_EXIT_PASS;
}
