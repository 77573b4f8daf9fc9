/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileHandleRegister, cuFileBufRegister, cuFileRead and cuFileWrite open
 * the driver implicitly when it is closed (cuFileUseCount() becomes > 0), and
 * a later close brings the count back to 0.  Also: 16 threads registering
 * handles at the same moment on a closed driver all succeed.
 */
#include "test.h"

#include <pthread.h>

#define NTHREADS 16

static const char *path;
static pthread_barrier_t barrier;

/* Closes whatever implicit/explicit opens are outstanding; the count must
 * then be 0. */
static void close_all(void)
{
	int n = t_driver_close_all(64);
	T_GE(n, 1);
	T_EQ(cuFileUseCount(), 0);
}

static void *register_thread(void *arg)
{
	(void)arg;
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = NULL;
	pthread_barrier_wait(&barrier);
	CUfileOpError e = t_try_register_fd(fd, &fh);
	if (e != CU_FILE_SUCCESS)
		T_FAIL("concurrent implicit-open registration returned %d (%s)", (int)e,
		       cufileop_status_error(e));
	T_GT(cuFileUseCount(), 0);
	uint8_t buf[512];
	T_IO(cuFileRead(fh, buf, sizeof(buf), 100, 0), sizeof(buf));
	if (t_check_pattern(buf, sizeof(buf), 100, 0, "read after implicit open"))
		T_FAIL("bad data");
	pthread_barrier_wait(&barrier);
	cuFileHandleDeregister(fh);
	close(fd);
	return NULL;
}

int main(void)
{
	path = t_make_pattern_file(1 * T_MIB, 0);
	int fd = t_open(path, O_RDWR);
	uint8_t *host = malloc(T_MIB);
	T_ASSERT(host != NULL);

	/* cuFileHandleRegister */
	T_EQ(cuFileUseCount(), 0);
	CUfileHandle_t fh = t_register_fd(fd);
	T_GT(cuFileUseCount(), 0);
	cuFileHandleDeregister(fh);
	close_all();

	/* cuFileBufRegister */
	T_CUFILE_OK(cuFileBufRegister(host, T_MIB, 0));
	T_GT(cuFileUseCount(), 0);
	T_CUFILE_OK(cuFileBufDeregister(host));
	close_all();

	/* cuFileRead / cuFileWrite: no handle can be registered while the
	 * driver is closed, so call them with an unknown handle; they must
	 * open the driver even though they then fail on the handle. */
	int dummy = 0;
	T_EQ(cuFileUseCount(), 0);
	(void)cuFileRead((CUfileHandle_t)&dummy, host, 16, 0, 0);
	T_GT(cuFileUseCount(), 0);
	close_all();
	(void)cuFileWrite((CUfileHandle_t)&dummy, host, 16, 0, 0);
	T_GT(cuFileUseCount(), 0);
	close_all();

	/* Explicit open on top of an implicit one. */
	fh = t_register_fd(fd);
	T_CUFILE_OK(cuFileDriverOpen());
	T_GT(cuFileUseCount(), 0);
	T_IO(cuFileRead(fh, host, 4096, 0, 0), 4096);
	if (t_check_pattern(host, 4096, 0, 0, "read"))
		T_FAIL("bad data");
	cuFileHandleDeregister(fh);
	close_all();

	/* Concurrent implicit open. */
	pthread_t th[NTHREADS];
	T_EQ(pthread_barrier_init(&barrier, NULL, NTHREADS), 0);
	for (int i = 0; i < NTHREADS; i++)
		T_EQ(pthread_create(&th[i], NULL, register_thread, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		T_EQ(pthread_join(th[i], NULL), 0);
	T_GT(cuFileUseCount(), 0);
	close_all();

	close(fd);
	free(host);
	return 0;
}
