/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Many threads opening and closing the driver at the same time never crash,
 * never get an error from a balanced open/close pair, and leave a consistent
 * count: > 0 while the main thread still holds its open, 0 after its close.
 * A second phase runs the pairs with nobody else holding the driver, so the
 * count goes through 0 repeatedly, while other threads do I/O in between.
 */
#include "test.h"

#include <pthread.h>

#define NTHREADS 16
#define ROUNDS 100

static const char *path;
static pthread_barrier_t barrier;

static void *open_close_thread(void *arg)
{
	long id = (long)arg;

	pthread_barrier_wait(&barrier);
	for (int i = 0; i < ROUNDS; i++) {
		CUfileError_t st = cuFileDriverOpen();
		if (st.err != CU_FILE_SUCCESS)
			T_FAIL("thread %ld round %d: open returned %d", id, i, (int)st.err);
		if (cuFileUseCount() <= 0)
			T_FAIL("thread %ld round %d: use count %ld while open", id, i,
			       cuFileUseCount());
		st = cuFileDriverClose();
		if (st.err != CU_FILE_SUCCESS)
			T_FAIL("thread %ld round %d: close returned %d", id, i, (int)st.err);
	}
	return NULL;
}

/* Opens, registers a handle, reads, deregisters, closes. */
static void *io_thread(void *arg)
{
	long id = (long)arg;
	int fd = t_open(path, O_RDONLY);
	uint8_t buf[4096];

	pthread_barrier_wait(&barrier);
	for (int i = 0; i < ROUNDS / 4; i++) {
		T_CUFILE_OK(cuFileDriverOpen());
		CUfileHandle_t fh = t_register_fd(fd);
		off_t off = (off_t)((id * 7919 + i * 104729) % (60 * 4096));
		T_IO(cuFileRead(fh, buf, sizeof(buf), off, 0), sizeof(buf));
		if (t_check_pattern(buf, sizeof(buf), (uint64_t)off, 0, "concurrent read"))
			T_FAIL("thread %ld round %d: bad data", id, i);
		cuFileHandleDeregister(fh);
		T_CUFILE_OK(cuFileDriverClose());
	}
	close(fd);
	return NULL;
}

static void run_threads(int with_io)
{
	pthread_t th[NTHREADS];

	T_EQ(pthread_barrier_init(&barrier, NULL, NTHREADS), 0);
	for (long i = 0; i < NTHREADS; i++)
		T_EQ(pthread_create(&th[i], NULL, (with_io && i % 4 == 0) ? io_thread
									    : open_close_thread,
				    (void *)i),
		     0);
	for (int i = 0; i < NTHREADS; i++)
		T_EQ(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&barrier);
}

int main(void)
{
	path = t_make_pattern_file(64 * 4096, 0);

	/* Phase 1: the main thread holds the driver open throughout. */
	T_CUFILE_OK(cuFileDriverOpen());
	run_threads(0);
	T_GT(cuFileUseCount(), 0);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);
	T_CUFILE(cuFileDriverClose(), CU_FILE_DRIVER_NOT_INITIALIZED);

	/* Phase 2: nobody else holds it; the count crosses zero. */
	run_threads(1);
	T_EQ(cuFileUseCount(), 0);
	T_CUFILE(cuFileDriverClose(), CU_FILE_DRIVER_NOT_INITIALIZED);

	/* Still usable afterwards. */
	T_CUFILE_OK(cuFileDriverOpen());
	int fd = t_open(path, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	uint8_t buf[512];
	T_IO(cuFileRead(fh, buf, sizeof(buf), 3, 0), sizeof(buf));
	if (t_check_pattern(buf, sizeof(buf), 3, 0, "read after the storm"))
		T_FAIL("bad data");
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);
	return 0;
}
