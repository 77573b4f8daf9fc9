/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Closing the driver deregisters every handle and buffer still registered:
 * a handle from before the close is unknown afterwards (cuFileRead and
 * cuFileWrite return -1 with errno EBADF, as NVIDIA's library does), the same fd and the same buffers can be
 * registered again after reopening, and deregistering a buffer that the
 * close already dropped reports MEMORY_NOT_REGISTERED.
 */
#include "test.h"

#define EXPECT_STALE_HANDLE_ERRNO EBADF /* with return value -1 */
#define EXPECT_DEREG_DROPPED_BUF CU_FILE_MEMORY_NOT_REGISTERED

int main(void)
{
	const char *path = t_make_pattern_file(256 * T_KIB, 0);
	int fd = t_open(path, O_RDWR);
	bool have_cuda = t_cuda_init() == 0;
	uint8_t *host = malloc(64 * T_KIB);
	CUdeviceptr dev = 0;

	T_ASSERT(host != NULL);
	if (have_cuda)
		dev = t_dev_alloc(64 * T_KIB);

	for (int round = 0; round < 3; round++) {
		t_set_case("round %d", round);
		T_CUFILE_OK(cuFileDriverOpen());
		CUfileHandle_t fh = t_register_fd(fd);
		T_CUFILE_OK(cuFileBufRegister(host, 64 * T_KIB, 0));
		if (have_cuda)
			T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)dev, 64 * T_KIB, 0));
		T_IO(cuFileRead(fh, host, 4096, 0, 0), 4096);
		T_CUFILE_OK(cuFileDriverClose());
		T_EQ(cuFileUseCount(), 0);

		/* The old handle is gone (this call also reopens the driver). */
		T_IO_ERRNO(cuFileRead(fh, host, 4096, 0, 0), EXPECT_STALE_HANDLE_ERRNO);
		T_IO_ERRNO(cuFileWrite(fh, host, 4096, 0, 0), EXPECT_STALE_HANDLE_ERRNO);
		t_driver_close_all(8);

		T_CUFILE_OK(cuFileDriverOpen());
		/* Buffers dropped by the close: deregistering fails, registering works. */
		T_CUFILE(cuFileBufDeregister(host), EXPECT_DEREG_DROPPED_BUF);
		T_CUFILE_OK(cuFileBufRegister(host, 64 * T_KIB, 0));
		T_CUFILE_OK(cuFileBufDeregister(host));
		if (have_cuda) {
			T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)dev, 64 * T_KIB, 0));
			T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)dev));
		}
		/* The fd can be registered again. */
		CUfileHandle_t fh2 = t_register_fd(fd);
		memset(host, T_POISON, 4096);
		T_IO(cuFileRead(fh2, host, 4096, 8192, 0), 4096);
		if (t_check_pattern(host, 4096, 8192, 0, "read through the new handle"))
			T_FAIL("bad data");
		/* Leave fh2 and a buffer registered: the next close must drop them. */
		T_CUFILE_OK(cuFileBufRegister(host, 64 * T_KIB, 0));
		T_CUFILE_OK(cuFileDriverClose());
		T_EQ(cuFileUseCount(), 0);
		T_IO_ERRNO(cuFileRead(fh2, host, 4096, 0, 0), EXPECT_STALE_HANDLE_ERRNO);
		t_driver_close_all(8);
		T_CUFILE_OK(cuFileDriverOpen());
		T_CUFILE(cuFileBufDeregister(host), EXPECT_DEREG_DROPPED_BUF);
		T_CUFILE_OK(cuFileDriverClose());
		T_EQ(cuFileUseCount(), 0);
	}

	if (have_cuda)
		T_CU(cuMemFree(dev));
	free(host);
	close(fd);
	return 0;
}
