/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileHandleRegister rejects bad arguments and returns no handle:
 *   NULL fh pointer, NULL descr, negative or closed fds
 *                                                -> INVALID_VALUE
 *   type OPAQUE_WIN32, unknown types             -> IO_NOT_SUPPORTED
 *                                                   (as NVIDIA's library)
 *   directory, pipe, socket, /dev/null           -> INVALID_FILE_TYPE
 *   fd opened with O_APPEND, O_PATH fd           -> INVALID_FILE_OPEN_FLAG
 *   an fd that is already registered             -> HANDLE_ALREADY_REGISTERED
 * and after each rejection the library still works.  A rejected call returns
 * no handle: the specification gives the handle only to a successful
 * registration, so the caller's variable (pre-filled with a sentinel) must
 * come back unchanged or NULL, never as something that looks like a handle.
 */
#include "test.h"

#include <sys/socket.h>

/* Expected codes, one place. */
#define EXPECT_NULL_ARG CU_FILE_INVALID_VALUE
#define EXPECT_BAD_TYPE CU_FILE_IO_NOT_SUPPORTED
#define EXPECT_BAD_FD CU_FILE_INVALID_VALUE
#define EXPECT_NOT_REGULAR CU_FILE_INVALID_FILE_TYPE
#define EXPECT_APPEND CU_FILE_INVALID_FILE_OPEN_FLAG
#define EXPECT_OPATH CU_FILE_INVALID_FILE_OPEN_FLAG
#define EXPECT_TWICE CU_FILE_HANDLE_ALREADY_REGISTERED

/* What the handle variable holds before a call that must be rejected. */
#define SENTINEL ((CUfileHandle_t)(uintptr_t)0x5e5e5e5e5e5e5e5eull)

/* The handle variable after a rejected call: unchanged, or NULL. */
#define EXPECT_NO_HANDLE(fh)                                                               \
	do {                                                                               \
		if ((fh) != SENTINEL && (fh) != NULL)                                      \
			T_FAIL("a rejected cuFileHandleRegister set the handle to %p",     \
			       (void *)(fh));                                              \
	} while (0)

static void expect_reject(int type, int fd, CUfileOpError expected, const char *what)
{
	CUfileDescr_t d;
	CUfileHandle_t fh = SENTINEL;

	t_set_case("%s", what);
	memset(&d, 0, sizeof(d));
	d.type = (enum CUfileFileHandleType)type;
	d.handle.fd = fd;
	T_CUFILE(cuFileHandleRegister(&fh, &d), expected);
	EXPECT_NO_HANDLE(fh);
	t_set_case("%s", "");
}

int main(void)
{
	const char *path = t_make_pattern_file(64 * T_KIB, 0);
	int good = t_open(path, O_RDWR);
	CUfileDescr_t d;
	CUfileHandle_t fh = NULL;

	T_CUFILE_OK(cuFileDriverOpen());

	/* NULL arguments. */
	memset(&d, 0, sizeof(d));
	d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	d.handle.fd = good;
	T_CUFILE(cuFileHandleRegister(NULL, &d), EXPECT_NULL_ARG);
	fh = SENTINEL;
	T_CUFILE(cuFileHandleRegister(&fh, NULL), EXPECT_NULL_ARG);
	EXPECT_NO_HANDLE(fh);

	/* Handle types. */
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_WIN32, good, EXPECT_BAD_TYPE, "type OPAQUE_WIN32");
	expect_reject(0, good, EXPECT_BAD_TYPE, "type 0");
	expect_reject(4, good, EXPECT_BAD_TYPE, "type 4");
	expect_reject(-1, good, EXPECT_BAD_TYPE, "type -1");
	expect_reject(0x7fffffff, good, EXPECT_BAD_TYPE, "type INT_MAX");

	/* Bad fds. */
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, -1, EXPECT_BAD_FD, "fd -1");
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, -12345, EXPECT_BAD_FD, "fd -12345");
	int closed = t_open(path, O_RDONLY);
	close(closed);
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, closed, EXPECT_BAD_FD, "closed fd");
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, 1000000, EXPECT_BAD_FD, "fd 1000000");

	/* Not regular files. */
	int dir = t_open(t_dir(), O_RDONLY | O_DIRECTORY);
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, dir, EXPECT_NOT_REGULAR, "directory");
	close(dir);
	int p[2];
	T_SYS(pipe(p));
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, p[0], EXPECT_NOT_REGULAR, "pipe read end");
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, p[1], EXPECT_NOT_REGULAR, "pipe write end");
	close(p[0]);
	close(p[1]);
	int sv[2];
	T_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, sv[0], EXPECT_NOT_REGULAR, "socket");
	close(sv[0]);
	close(sv[1]);
	int null = t_open("/dev/null", O_RDWR);
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, null, EXPECT_NOT_REGULAR, "/dev/null");
	close(null);

	/* Open flags. */
	int app = t_open(path, O_WRONLY | O_APPEND);
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, app, EXPECT_APPEND, "O_WRONLY|O_APPEND");
	close(app);
	app = t_open(path, O_RDWR | O_APPEND);
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, app, EXPECT_APPEND, "O_RDWR|O_APPEND");
	close(app);
	int opath = t_open(path, O_PATH);
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, opath, EXPECT_OPATH, "O_PATH");
	close(opath);

	/* The same fd twice; after deregistration it registers again. */
	fh = t_register_fd(good);
	expect_reject(CU_FILE_HANDLE_TYPE_OPAQUE_FD, good, EXPECT_TWICE, "same fd twice");
	/* The first handle still works after the rejected second attempt. */
	uint8_t buf[4096];
	T_IO(cuFileRead(fh, buf, sizeof(buf), 1, 0), sizeof(buf));
	if (t_check_pattern(buf, sizeof(buf), 1, 0, "read through the first handle"))
		T_FAIL("bad data");
	cuFileHandleDeregister(fh);
	fh = t_register_fd(good);
	T_IO(cuFileRead(fh, buf, sizeof(buf), 4096, 0), sizeof(buf));
	if (t_check_pattern(buf, sizeof(buf), 4096, 0, "read after re-registration"))
		T_FAIL("bad data");
	/* A dup() of a registered fd is a different fd. */
	int dupfd = dup(good);
	T_SYS(dupfd);
	CUfileHandle_t fh3 = t_register_fd(dupfd);
	T_NE_PTR(fh3, fh);
	cuFileHandleDeregister(fh3);
	close(dupfd);
	cuFileHandleDeregister(fh);

	T_CUFILE_OK(cuFileDriverClose());
	close(good);
	return 0;
}
