/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileHandleDeregister of NULL, of a pointer that was never a handle, and
 * of a handle already deregistered returns without crashing and leaves the
 * other registered handles working (I/O through the deregistered handle is
 * -1 with errno EBADF); with the driver closed it is harmless too.
 */
#include "test.h"

#define EXPECT_IO_DEREGISTERED_ERRNO EBADF /* cuFileRead returns -1 */

int main(void)
{
	const char *path = t_make_pattern_file(64 * T_KIB, 0);
	int fd1 = t_open(path, O_RDONLY), fd2 = t_open(path, O_RDONLY);
	uint8_t buf[4096];
	long junk[16];

	cuFileHandleDeregister(NULL); /* driver not open yet */
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t keep = t_register_fd(fd1);
	CUfileHandle_t gone = t_register_fd(fd2);

	cuFileHandleDeregister(NULL);
	memset(junk, 0x5c, sizeof(junk));
	cuFileHandleDeregister((CUfileHandle_t)junk);
	cuFileHandleDeregister((CUfileHandle_t)(uintptr_t)0x1000);
	cuFileHandleDeregister(gone);
	cuFileHandleDeregister(gone);
	cuFileHandleDeregister(gone);

	T_IO_ERRNO(cuFileRead(gone, buf, sizeof(buf), 0, 0), EXPECT_IO_DEREGISTERED_ERRNO);
	T_IO_ERRNO(cuFileWrite(gone, buf, sizeof(buf), 0, 0), EXPECT_IO_DEREGISTERED_ERRNO);
	T_IO_ERRNO(cuFileRead((CUfileHandle_t)junk, buf, sizeof(buf), 0, 0),
		   EXPECT_IO_DEREGISTERED_ERRNO);
	T_IO(cuFileRead(keep, buf, sizeof(buf), 777, 0), sizeof(buf));
	if (t_check_pattern(buf, sizeof(buf), 777, 0, "read through the kept handle"))
		T_FAIL("bad data");

	/* The deregistered fd can be registered again. */
	gone = t_register_fd(fd2);
	T_IO(cuFileRead(gone, buf, sizeof(buf), 0, 0), sizeof(buf));
	cuFileHandleDeregister(gone);
	cuFileHandleDeregister(keep);
	T_CUFILE_OK(cuFileDriverClose());

	/* After close: deregistering stale handles is harmless. */
	cuFileHandleDeregister(keep);
	cuFileHandleDeregister(NULL);
	t_driver_close_all(4);
	close(fd1);
	close(fd2);
	return 0;
}
