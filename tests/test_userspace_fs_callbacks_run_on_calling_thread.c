/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A userspace file system's read/write callbacks run on the thread that
 * called cuFileRead/cuFileWrite, also for requests large enough that the
 * engine would split them across its worker threads (callbacks may keep
 * thread-local state, and may call the API again).
 */
#include <sys/syscall.h>

#include "test.h"

#define LEN (24 * T_MIB + 5) /* well above the 8 MiB split threshold */

static uint8_t *g_file;
static pid_t g_caller;
static int g_foreign;

static pid_t tid(void) { return (pid_t)syscall(SYS_gettid); }

static ssize_t fs_read(const void *h, char *buf, size_t n, loff_t off, const cufileRDMAInfo_t *info)
{
	(void)h, (void)info;
	if (tid() != g_caller)
		__atomic_add_fetch(&g_foreign, 1, __ATOMIC_RELAXED);
	if ((uint64_t)off >= LEN)
		return 0;
	if (n > LEN - (size_t)off)
		n = LEN - (size_t)off;
	memcpy(buf, g_file + off, n);
	return (ssize_t)n;
}

static ssize_t fs_write(const void *h, const char *buf, size_t n, loff_t off, const cufileRDMAInfo_t *info)
{
	(void)h, (void)info;
	if (tid() != g_caller)
		__atomic_add_fetch(&g_foreign, 1, __ATOMIC_RELAXED);
	if ((uint64_t)off + n > LEN)
		return -1;
	memcpy(g_file + off, buf, n);
	return (ssize_t)n;
}

int main(void)
{
	static const CUfileFSOps_t ops = {.read = fs_read, .write = fs_write};
	g_file = malloc(LEN);
	uint8_t *buf = malloc(LEN);
	T_ASSERT(g_file && buf);
	t_fill_pattern(g_file, LEN, 0, 3);
	g_caller = tid();

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileDescr_t d = {.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS, .handle.handle = g_file, .fs_ops = &ops};
	CUfileHandle_t fh;
	T_CUFILE_OK(cuFileHandleRegister(&fh, &d));

	memset(buf, 0, LEN);
	T_IO(cuFileRead(fh, buf, LEN, 0, 0), LEN);
	if (t_check_pattern(buf, LEN, 0, 3, "read through the userspace fs"))
		T_FAIL("bad data");
	t_fill_pattern(buf, LEN, 0, 4);
	T_IO(cuFileWrite(fh, buf, LEN, 0, 0), LEN);
	if (t_check_pattern(g_file, LEN, 0, 4, "written through the userspace fs"))
		T_FAIL("bad data");
	T_EQ(__atomic_load_n(&g_foreign, __ATOMIC_RELAXED), 0);

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	free(buf);
	free(g_file);
	return 0;
}
