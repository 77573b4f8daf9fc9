/* SPDX-License-Identifier: Apache-2.0 */
/*
 * With no loadable CUDA driver (run with OPENCUFILE_LIBCUDA pointing at a
 * file that does not exist) the library still works for host memory:
 * cuFileDriverOpen succeeds, handles and host buffers register, reads and
 * writes of host memory move the right bytes, and the driver closes.
 * This test never calls the CUDA driver itself.
 */
#include "test.h"

int main(void)
{
	const char *env = getenv("OPENCUFILE_LIBCUDA");
	if (!env || access(env, F_OK) == 0)
		fprintf(stderr, "NOTE: OPENCUFILE_LIBCUDA=%s is loadable; test is weaker\n",
			env ? env : "(unset)");

	const uint64_t flen = 3 * T_MIB + 5;
	const char *path = t_make_pattern_file(flen, 0);
	int fd = t_open(path, O_RDWR), check_fd = t_open(path, O_RDWR);

	T_CUFILE_OK(cuFileDriverOpen());
	T_GT(cuFileUseCount(), 0);
	CUfileDrvProps_t props;
	memset(&props, 0, sizeof(props));
	T_CUFILE_OK(cuFileDriverGetProperties(&props));
	CUfileHandle_t fh = t_register_fd(fd);

	const enum t_mem_kind kinds[] = { T_MEM_HOST_MALLOC, T_MEM_HOST_MMAP };
	for (int k = 0; k < 2; k++)
	for (int reg = 0; reg < 2; reg++) {
		struct t_mem m;
		t_mem_alloc(&m, kinds[k], 2 * T_MIB + 8192);
		if (reg)
			T_CUFILE_OK(cuFileBufRegister(m.ptr, m.len, 0));
		const size_t sizes[] = { 1, 4097, 2 * T_MIB + 3 };
		for (int s = 0; s < 3; s++) {
			t_set_case("%s %s read size %zu", t_mem_kind_name(kinds[k]),
				   reg ? "registered" : "unregistered", sizes[s]);
			if (t_read_and_verify(fh, &m, 4096, sizes[s], 4095, 3, (ssize_t)sizes[s], 0))
				T_FAIL("bad read");
			t_set_case("%s %s write size %zu", t_mem_kind_name(kinds[k]),
				   reg ? "registered" : "unregistered", sizes[s]);
			if (t_write_and_verify(fh, &m, 4096, sizes[s], 12345, 3, check_fd, flen, 8, 0))
				T_FAIL("bad write");
		}
		t_set_case("%s EOF", t_mem_kind_name(kinds[k]));
		if (t_read_and_verify(fh, &m, 0, 8192, (off_t)flen - 10, 0, 10, 0))
			T_FAIL("bad EOF read");
		if (reg)
			T_CUFILE_OK(cuFileBufDeregister(m.ptr));
		t_mem_free(&m);
	}
	t_set_case("%s", "");

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);
	close(check_fd);
	close(fd);
	return 0;
}
