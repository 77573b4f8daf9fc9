/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pinning host memory may wait until the device's queued work drains (a
 * real driver was seen to), and an application stream waiting in
 * cuStreamWaitValue32 for a cuFileReadAsync never drains until that read
 * is done.  So the library must never pin staging memory on the threads
 * that serve such reads: here the fake driver's pinning waits for every
 * stream (FAKECUDA_PIN_SYNCS=1), nothing is pre-pinned at open, and reads
 * of 16 MiB (split across engine helpers) are queued on one stream.  They
 * must all complete, with the right data, well within the watchdog.
 */
#include <signal.h>

#include "test.h"

#define IO (16u << 20)
#define NOPS 8
#define FLEN ((size_t)NOPS * IO)

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: stream reads did not complete in 60 s (pinning while a stream waits?)\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	_exit(1);
}

int main(void)
{
	setenv("FAKECUDA_PIN_SYNCS", "1", 1);
	setenv("OPENCUFILE_PREWARM", "0", 1);
	setenv("OPENCUFILE_IO_THREADS", "4", 1);
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr dev = t_dev_alloc(FLEN);
	t_dev_fill(dev, T_POISON, FLEN);

	size_t size[NOPS];
	off_t foff[NOPS], boff[NOPS];
	ssize_t got[NOPS];
	signal(SIGALRM, on_alarm);
	alarm(60);
	for (int i = 0; i < NOPS; i++) {
		size[i] = IO;
		foff[i] = boff[i] = (off_t)i * IO;
		got[i] = -12345;
		T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &size[i], &foff[i], &boff[i], &got[i], s));
	}
	T_CU(cuStreamSynchronize(s));
	alarm(0);
	for (int i = 0; i < NOPS; i++)
		T_EQ(got[i], (long)IO);
	uint8_t *h = malloc(FLEN);
	T_ASSERT(h != NULL);
	t_dev_get(h, dev, FLEN);
	T_EQ(t_check_pattern(h, FLEN, 0, 0, "read data"), 0);
	free(h);
	T_CU(cuStreamDestroy(s));
	T_CU(cuMemFree(dev));
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
