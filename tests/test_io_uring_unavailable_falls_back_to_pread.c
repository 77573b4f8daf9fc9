/* SPDX-License-Identifier: Apache-2.0 */
/*
 * With OPENCUFILE_IO_BACKEND=uring (set by the ctest entry) in a process
 * whose seccomp filter refuses io_uring_setup, as container runtimes do, I/O
 * still works: staged O_DIRECT writes and reads (split across the engine's
 * workers, so several lanes try to set up a ring) and buffered reads move
 * the right bytes through pread/pwrite, and the fallback is logged exactly
 * once, at INFO, never as an error.
 */
#include "test.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define FLEN (20 * T_MIB + 77)

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif

static void refuse_io_uring_setup(void)
{
#if defined(__x86_64__)
	const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const unsigned arch = AUDIT_ARCH_AARCH64;
#else
	T_SKIP("no seccomp filter for this architecture in the test");
#endif
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		T_SKIP("cannot install a seccomp filter: %s", strerror(errno));
	/* The filter works: io_uring_setup is refused. */
	errno = 0;
	T_EQ(syscall(__NR_io_uring_setup, 4, NULL), -1);
	T_EQ(errno, EPERM);
}

/* Lines of the cufile log that contain `text` and `also` (NULL: any). */
static int log_lines_with(const char *text, const char *also)
{
	const char *p = getenv("CUFILE_LOGFILE_PATH");
	if (!p)
		T_SKIP("CUFILE_LOGFILE_PATH is not set (run through ctest)");
	FILE *f = fopen(p, "r");
	if (!f)
		T_FAIL("cannot open the cufile log %s: %s", p, strerror(errno));
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL && (!also || strstr(line, also) != NULL);
	fclose(f);
	return n;
}

int main(void)
{
	const char *backend = getenv("OPENCUFILE_IO_BACKEND");
	if (!backend || strcmp(backend, "uring") != 0)
		T_SKIP("OPENCUFILE_IO_BACKEND=uring is not set (run through ctest)");
	const char *log = getenv("CUFILE_LOGFILE_PATH");
	if (!log)
		T_SKIP("CUFILE_LOGFILE_PATH is not set (run through ctest)");
	unlink(log); /* the library appends: count this run's lines only */
	refuse_io_uring_setup();
	t_cuda_require();

	const char *path = t_make_pattern_file(FLEN, 0);
	struct t_mem dev;
	t_mem_alloc(&dev, T_MEM_DEVICE, FLEN + 8192);

	/* Buffered: the staged reads would go through a ring in this mode. */
	int bfd = t_open(path, O_RDWR);
	CUfileHandle_t bh = t_register_fd(bfd);
	t_set_case("buffered read of the whole file");
	T_EQ(t_read_and_verify(bh, &dev, 0, FLEN + 4096, 0, 3, FLEN, 0), 0);
	cuFileHandleDeregister(bh);
	close(bfd);

	if (t_odirect_supported(path)) {
		int dfd = t_open(path, O_RDWR | O_DIRECT);
		CUfileHandle_t dh = t_register_fd(dfd);
		/* Write a new pattern over an unaligned range, then read all. */
		const off_t woff = 4096 * 5 + 11;
		const size_t wlen = 12 * T_MIB + 5;
		t_mem_put_pattern(&dev, 0, wlen, (uint64_t)woff, 9);
		t_set_case("O_DIRECT write, split");
		T_EQ(cuFileWrite(dh, dev.ptr, wlen, woff, 0), (ssize_t)wlen);
		uint8_t *back = malloc(FLEN);
		T_ASSERT(back != NULL);
		int rfd = t_open(path, O_RDONLY);
		T_EQ_U(t_pread_full(rfd, back, FLEN, 0), FLEN);
		close(rfd);
		if (t_check_pattern(back, (size_t)woff, 0, 0, "before the write") ||
		    t_check_pattern(back + woff, wlen, (uint64_t)woff, 9, "written") ||
		    t_check_pattern(back + woff + wlen, FLEN - woff - wlen, (uint64_t)woff + wlen, 0, "after the write"))
			T_FAIL("file contents after the O_DIRECT write");
		free(back);
		t_set_case("O_DIRECT read crossing EOF, split");
		T_EQ(t_read_and_verify(dh, &dev, 0, 9 * T_MIB, (off_t)(13 * T_MIB), 3, (ssize_t)(FLEN - 13 * T_MIB), 0),
		     0);
		cuFileHandleDeregister(dh);
		close(dfd);
	} else {
		printf("the file system refuses O_DIRECT: buffered reads only\n");
	}
	t_mem_free(&dev);
	T_CUFILE_OK(cuFileDriverClose());

	t_set_case("cufile log");
	T_EQ(log_lines_with("io_uring unavailable", NULL), 1);
	T_EQ(log_lines_with("io_uring unavailable", " INFO "), 1);
	T_EQ(log_lines_with(" ERROR ", NULL), 0);
	T_EQ(log_lines_with("io_uring: ring of", NULL), 0);
	printf("io_uring refused by seccomp: pread/pwrite used, one INFO line\n");
	return T_EXIT_PASS;
}
