/* SPDX-License-Identifier: Apache-2.0 */
/*
 * properties.prefer_iouring (CUFILE_PARAM_PREFER_IO_URING) decides how the
 * staged transfers of a buffered fd reach the file, counted through
 * /proc/self/io (pread/pwrite count as read/write system calls, io_uring
 * operations do not):
 *   - false (the default): a 64 MiB device-memory read and write of a
 *     cached buffered file take one pread/pwrite per chunk;
 *   - true: the same calls go through the lanes' io_uring rings and make
 *     (almost) no read or write system calls;
 *   - either way every byte arrives, in device memory and in the file;
 *   - argument "psync" (the ctest entry sets OPENCUFILE_IO_BACKEND=psync):
 *     the environment variable wins over the setting, and both rounds use
 *     pread/pwrite.
 * Skips where io_uring cannot be set up (the fallback has its own test).
 */
#include "test.h"

#include <sys/syscall.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif

#define FLEN (64 * T_MIB)

static bool io_uring_works(void)
{
	/* io_uring_params is 120 bytes; a zeroed one asks for defaults. */
	unsigned char params[120] = {0};
	long fd = syscall(__NR_io_uring_setup, 4, params);
	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}

/* One round: read the file into device memory, write it back to a second
 * file; returns the read and write system calls the two calls made beyond
 * the counting's own. */
static void round_trip(const char *src, bool prefer, unsigned long *reads, unsigned long *writes)
{
	T_CUFILE_OK(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, prefer));
	T_CUFILE_OK(cuFileDriverOpen());
	bool got = !prefer;
	T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_PREFER_IO_URING, &got));
	T_EQ(got, prefer);
	int rfd = t_open(src, O_RDONLY);
	const char *dst = t_new_file_path();
	int wfd = t_open(dst, O_RDWR | O_CREAT | O_TRUNC);
	CUfileDescr_t d = {.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD};
	CUfileHandle_t rfh, wfh;
	d.handle.fd = rfd;
	T_CUFILE_OK(cuFileHandleRegister(&rfh, &d));
	d.handle.fd = wfd;
	T_CUFILE_OK(cuFileHandleRegister(&wfh, &d));
	CUdeviceptr dev;
	T_CU(cuMemAlloc(&dev, FLEN));
	t_dev_fill(dev, T_POISON, FLEN);
	/* Warm up: lanes, rings, the GPU's first use (sysfs reads). */
	T_IO(cuFileRead(rfh, (void *)(uintptr_t)dev, 4 * T_MIB, 0, 0), (ssize_t)(4 * T_MIB));
	T_IO(cuFileWrite(wfh, (void *)(uintptr_t)dev, 4 * T_MIB, 0, 0), (ssize_t)(4 * T_MIB));

	unsigned long r0 = 0, w0 = 0, r1 = 0, w1 = 0, r2 = 0, w2 = 0;
	t_proc_io_calls(&r0, &w0);
	t_proc_io_calls(&r1, &w1); /* what counting costs */
	T_IO(cuFileRead(rfh, (void *)(uintptr_t)dev, FLEN, 0, 0), (ssize_t)FLEN);
	T_IO(cuFileWrite(wfh, (void *)(uintptr_t)dev, FLEN, 0, 0), (ssize_t)FLEN);
	t_proc_io_calls(&r2, &w2);
	*reads = (r2 - r1) - (r1 - r0);
	*writes = (w2 - w1) - (w1 - w0);

	uint8_t *h = malloc(FLEN);
	T_ASSERT(h != NULL);
	t_dev_get(h, dev, FLEN);
	T_ASSERT(t_check_pattern(h, FLEN, 0, 7, "device memory") == 0);
	memset(h, 0, FLEN);
	T_EQ_U(t_pread_full(wfd, h, FLEN, 0), FLEN);
	T_ASSERT(t_check_pattern(h, FLEN, 0, 7, "written file") == 0);
	free(h);

	cuFileHandleDeregister(rfh);
	cuFileHandleDeregister(wfh);
	T_CU(cuMemFree(dev));
	close(rfd);
	close(wfd);
	T_CUFILE_OK(cuFileDriverClose());
}

/* Before failing: one more round with the library's log at DEBUG (log
 * lines are write system calls, so not in the counted rounds), and what it
 * says about the rings, to tell why transfers did not use them. */
static void explain_failure(const char *src)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/prefer-iouring-%d.log", t_dir(), (int)getpid());
	setenv("CUFILE_LOGGING_LEVEL", "DEBUG", 1);
	setenv("CUFILE_LOGFILE_PATH", path, 1);
	unsigned long rd, wr;
	round_trip(src, true, &rd, &wr);
	fprintf(stderr, "again with the log at DEBUG: %lu read, %lu write system calls; the log says:\n", rd, wr);
	FILE *f = fopen(path, "r");
	char line[1024];
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "uring") || strstr(line, "ring ") || strstr(line, "engine") || strstr(line, "cached"))
			fputs(line, stderr);
	if (f)
		fclose(f);
	unlink(path);
}

int main(int argc, char **argv)
{
	bool psync = argc > 1 && strcmp(argv[1], "psync") == 0;
	/* Counted are the process's read and write system calls; on the real
	 * driver a wait on a BLOCKING_SYNC event makes some of its own (the
	 * library sleeps on long copies that way): wait by spinning here. */
	setenv("OPENCUFILE_EVENT_WAIT", "spin", 1);
	/* Buffered reads as system calls (ring or not): the cached file's
	 * bytes would otherwise be copied through its mapping, with none. */
	setenv("OPENCUFILE_MAPPED_READS", "off", 1);
	/* And buffered writes as system calls: stored through the file's
	 * mapping, they would make none either. */
	setenv("OPENCUFILE_MAPPED_WRITES", "off", 1);
	t_cuda_require();
	if (!psync && !io_uring_works())
		T_SKIP("io_uring cannot be set up here");
	const char *src = t_make_pattern_file(FLEN, 7); /* buffered: in the page cache */
	/* And kept there: a page evicted meanwhile would be read with a
	 * system call of its own, whatever the setting. */
	struct t_pin pin = t_pin_cached(src, 0, FLEN);
	unsigned long rd, wr;

	t_set_case("prefer_iouring false");
	round_trip(src, false, &rd, &wr);
	fprintf(stderr, "prefer_iouring false: %lu read, %lu write system calls\n", rd, wr);
	T_GE(rd, 4); /* chunks of at most 16 MiB */
	T_GE(wr, 4);

	t_set_case("prefer_iouring true%s", psync ? ", OPENCUFILE_IO_BACKEND=psync" : "");
	round_trip(src, true, &rd, &wr);
	fprintf(stderr, "prefer_iouring true: %lu read, %lu write system calls\n", rd, wr);
	if (psync) {
		T_GE(rd, 4);
		T_GE(wr, 4);
	} else {
		/* A transfer that comes back short is finished with pread or
		 * pwrite; a cached file gives none, but allow one each. */
		if (rd > 1 || wr > 1)
			explain_failure(src);
		T_LE_U(rd, 1);
		T_LE_U(wr, 1);
	}
	t_unpin_cached(&pin);
	t_cleanup_files();
	return T_EXIT_PASS;
}
