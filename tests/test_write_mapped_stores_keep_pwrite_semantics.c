/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver, fault-injection library) Buffered cuFileWrite stores
 * through a writable mapping of the file (fileio.c, "Writes through the
 * mapping") and keeps every promise a pwrite of the same bytes makes:
 *   - the bytes are in the file when the call returns, for pread, for
 *     another process, and for a read-ahead window of this library; the
 *     call raises inotify's IN_MODIFY and changes the file's times;
 *   - the file's size is what the pwrites would leave; holes outside the
 *     written range stay holes;
 *   - only a regular file open for reading and writing, without O_SYNC,
 *     stores through the mapping; bytes of the file on the disk only are
 *     overwritten with pwrite (a store's fault would read them first);
 *   - errors as pwrite gives them: a full file system (a loop-mounted ext4
 *     image of its own), RLIMIT_FSIZE, a reservation refused, a read-only
 *     file system (through the fault-injection library), a copy from the
 *     device failing midway: the call reports the bytes known written and
 *     never more, and the file holds nothing past them;
 *   - concurrency: writers of neighbouring and overlapping ranges, a file
 *     truncated by another thread while it is written, a handle
 *     deregistered while writes run.
 *
 *   test_write_mapped_stores_keep_pwrite_semantics [case]
 * with no case, every case runs.
 */
#include "test.h"
#include "fakecuda.h"
#include "fault.h"

#include <linux/falloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define BUF (32 * T_MIB)

static CUdeviceptr dev;
static uint8_t *host;

/* The device buffer holds pattern `seed` as for file offset `foff`. */
static void dev_pattern(CUdeviceptr d, size_t len, uint64_t foff, uint32_t seed)
{
	struct t_scratch sc = t_scratch_take(len);
	t_fill_pattern(sc.p, len, foff, seed);
	t_dev_put(d, sc.p, len);
	t_scratch_give(sc);
}

/* The file at fd holds pattern `seed` over [off, off+len). */
static void expect_file(int fd, uint64_t off, size_t len, uint32_t seed, const char *what)
{
	struct t_scratch sc = t_scratch_take(len);
	T_EQ(t_pread_full(fd, sc.p, len, off), len);
	if (t_check_pattern(sc.p, len, off, seed, what))
		T_FAIL("%s: wrong bytes in the file", what);
	t_scratch_give(sc);
}

static CUfileHandle_t open_handle(const char *path, int flags, int *fd_out)
{
	int fd = t_open(path, flags);
	*fd_out = fd;
	return t_register_fd(fd);
}

static off_t size_of(int fd)
{
	struct stat st;
	T_SYS(fstat(fd, &st));
	return st.st_size;
}

/* Whether the kernel (and valgrind, where it runs) answers cachestat(2):
 * without it the library cannot tell that pages are cached, and
 * overwrites them with pwrite. */
static bool cachestat_works(int fd)
{
	struct {
		uint64_t off, len;
	} range = {0, 4096};
	uint64_t cs[5];
	return syscall(451, fd, &range, cs, 0) == 0;
}

static ssize_t dwrite(CUfileHandle_t fh, size_t len, off_t foff, off_t boff)
{
	return cuFileWrite(fh, (void *)dev, len, foff, boff);
}

/* ------------------------------------------------------------------ cases */

/* One caller, one 16 MiB call into a new file: stores through the mapping,
 * the size, the bytes for pread and for another process, IN_MODIFY and
 * the times. */
static void case_new_file(void)
{
	const char *path = t_new_file_path();
	int fd;
	CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
	int in = inotify_init1(IN_NONBLOCK);
	T_ASSERT(in >= 0);
	T_ASSERT(inotify_add_watch(in, path, IN_MODIFY) >= 0);
	struct stat before;
	T_SYS(fstat(fd, &before));
	dev_pattern(dev, 16 * T_MIB, 0, 11);
	unsigned long long stored = ocf_fault_mapped_stored();
	T_IO(dwrite(fh, 16 * T_MIB, 0, 0), 16 * T_MIB);
	/* Every piece's body is stored; its last page goes with pwrite. */
	T_GE(ocf_fault_mapped_stored() - stored, 15 * T_MIB);
	T_EQ(size_of(fd), 16 * T_MIB);
	char ev[4096];
	ssize_t got = read(in, ev, sizeof(ev));
	T_GT(got, 0);
	T_ASSERT(((struct inotify_event *)ev)->mask & IN_MODIFY);
	struct stat after;
	T_SYS(fstat(fd, &after));
	T_ASSERT(after.st_mtim.tv_sec != before.st_mtim.tv_sec || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec);
	int check = t_open(path, O_RDONLY);
	expect_file(check, 0, 16 * T_MIB, 11, "new file, read back");
	/* Another process, which never used the library. */
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		uint8_t *b = malloc(16 * T_MIB);
		int f = open(path, O_RDONLY);
		_exit(!b || f < 0 || t_pread_full(f, b, 16 * T_MIB, 0) != 16 * T_MIB ||
		      t_check_pattern(b, 16 * T_MIB, 0, 11, "read by another process"));
	}
	int status;
	T_ASSERT(waitpid(pid, &status, 0) == pid);
	T_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Overwritten while cached, from host memory, at odd offsets. */
	t_fill_pattern(host, 3 * T_MIB + 77, 1 * T_MIB + 5, 12);
	stored = ocf_fault_mapped_stored();
	T_IO(cuFileWrite(fh, host, 3 * T_MIB + 77, 1 * T_MIB + 5, 0), 3 * T_MIB + 77);
	if (cachestat_works(fd))
		T_GT(ocf_fault_mapped_stored(), stored);
	else
		T_EQ_U(ocf_fault_mapped_stored(), stored);
	expect_file(check, 0, 1 * T_MIB + 5, 11, "before the overwrite");
	expect_file(check, 1 * T_MIB + 5, 3 * T_MIB + 77, 12, "the overwrite");
	expect_file(check, 4 * T_MIB + 82, 12 * T_MIB - 82, 11, "after the overwrite");
	T_EQ(size_of(fd), 16 * T_MIB);
	close(check);
	close(in);
	cuFileHandleDeregister(fh);
	close(fd);
}

/* Holes outside the written range stay holes (SEEK_DATA, st_blocks): past
 * end of file and inside the file. */
static void case_holes(void)
{
	const char *path = t_new_file_path();
	int fd;
	CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
	const off_t off = 10 * T_MIB + 12345;
	const size_t len = 5 * T_MIB;
	dev_pattern(dev, len, off, 13);
	unsigned long long stored = ocf_fault_mapped_stored();
	T_IO(dwrite(fh, len, off, 0), len);
	T_GT(ocf_fault_mapped_stored(), stored);
	T_EQ(size_of(fd), off + (off_t)len);
	T_EQ(lseek(fd, 0, SEEK_DATA), off / 4096 * 4096);
	struct stat st;
	T_SYS(fstat(fd, &st));
	T_LE((long long)st.st_blocks * 512, (long long)(len + 2 * 4096));
	expect_file(fd, (uint64_t)off, len, 13, "written past end of file");
	/* Into the hole below it: the rest of the hole stays one.  A write
	 * covering no whole 2 MiB region is one pwrite; one that does stores
	 * the regions it covers. */
	for (int k = 0; k < 2; k++) {
		const off_t mid = k ? 2 * T_MIB + 100 : 8 * T_MIB + 100;
		const size_t mlen = k ? 5 * T_MIB : 1 * T_MIB;
		t_set_case("holes, %zu bytes at %lld", mlen, (long long)mid);
		dev_pattern(dev, mlen, mid, 14 + (uint32_t)k);
		stored = ocf_fault_mapped_stored();
		T_IO(dwrite(fh, mlen, mid, 0), mlen);
		if (k)
			T_GT(ocf_fault_mapped_stored(), stored);
		else
			T_EQ_U(ocf_fault_mapped_stored(), stored);
		T_EQ(lseek(fd, 0, SEEK_DATA), mid / 4096 * 4096);
		T_EQ(lseek(fd, mid + (off_t)mlen, SEEK_HOLE), (mid + (off_t)mlen + 4095) / 4096 * 4096);
		T_EQ(size_of(fd), off + (off_t)len);
		expect_file(fd, (uint64_t)mid, mlen, 14 + (uint32_t)k, "written into a hole");
	}
	T_SYS(fstat(fd, &st));
	T_LE((long long)st.st_blocks * 512, (long long)(11 * T_MIB + 6 * 4096));
	cuFileHandleDeregister(fh);
	close(fd);
}

/* Bytes on the disk only are overwritten with pwrite; handles that may not
 * map (O_WRONLY, O_SYNC) write with pwrite too, and an O_RDONLY one gets
 * EBADF. */
static void case_paths(void)
{
	const char *path = t_new_file_path();
	int fd0 = t_open(path, O_RDWR);
	t_pwrite_pattern(fd0, 0, 8 * T_MIB, 15);
	T_SYS(fsync(fd0));
	T_SYS(posix_fadvise(fd0, 0, 0, POSIX_FADV_DONTNEED));
	close(fd0);
	int fd;
	CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
	if (t_cached_pages(path, 8 * T_MIB, 2 * T_MIB, 6 * T_MIB) == 0) {
		dev_pattern(dev, 4 * T_MIB, 2 * T_MIB, 16);
		unsigned long long stored = ocf_fault_mapped_stored();
		T_IO(dwrite(fh, 4 * T_MIB, 2 * T_MIB, 0), 4 * T_MIB);
		T_EQ_U(ocf_fault_mapped_stored(), stored);
		expect_file(fd, 2 * T_MIB, 4 * T_MIB, 16, "uncached bytes overwritten");
		expect_file(fd, 0, 2 * T_MIB, 15, "before them");
	} else {
		fprintf(stderr, "note: the page cache kept the dropped pages; uncached overwrite not checked\n");
	}
	cuFileHandleDeregister(fh);
	close(fd);
	static const int kinds[] = {O_WRONLY, O_RDWR | O_SYNC, O_RDWR | O_DSYNC};
	for (int k = 0; k < 3; k++) {
		t_set_case("descriptor flags 0x%x", kinds[k]);
		fh = open_handle(path, kinds[k], &fd);
		dev_pattern(dev, 2 * T_MIB, 8 * T_MIB, 17 + (uint32_t)k);
		unsigned long long stored = ocf_fault_mapped_stored();
		T_IO(dwrite(fh, 2 * T_MIB, 8 * T_MIB, 0), 2 * T_MIB);
		T_EQ_U(ocf_fault_mapped_stored(), stored);
		int check = t_open(path, O_RDONLY);
		expect_file(check, 8 * T_MIB, 2 * T_MIB, 17 + (uint32_t)k, "written with pwrite");
		T_EQ(size_of(check), 10 * T_MIB);
		close(check);
		cuFileHandleDeregister(fh);
		close(fd);
	}
	t_set_case("O_RDONLY");
	fh = open_handle(path, O_RDONLY, &fd);
	T_IO_ERRNO(dwrite(fh, 2 * T_MIB, 0, 0), EBADF);
	cuFileHandleDeregister(fh);
	close(fd);
	t_set_case("%s", "");
}

/* A copy from the device that fails midway through an extending write:
 * the call reports a prefix (or the error), the file is no longer than the
 * prefix makes it, and the prefix is right. */
static void case_copy_fails(void)
{
	dev_pattern(dev, 12 * T_MIB, 0, 21);
	for (unsigned long nth = 1;; nth++) {
		T_ASSERT(nth < 100);
		t_set_case("device-to-host copy %lu fails", nth);
		const char *path = t_new_file_path();
		int fd;
		CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
		unsigned long calls = fakecuda_call_count("cuMemcpyDtoHAsync_v2");
		fakecuda_fail_nth("cuMemcpyDtoHAsync_v2", nth, CUDA_ERROR_ECC_UNCORRECTABLE);
		ssize_t r = dwrite(fh, 12 * T_MIB, 0, 0);
		bool reached = fakecuda_call_count("cuMemcpyDtoHAsync_v2") - calls >= nth;
		fakecuda_reset_faults();
		if (r < 0)
			T_EQ(r, -CU_FILE_CUDA_DRIVER_ERROR);
		T_LE(r, (ssize_t)(12 * T_MIB));
		off_t keep = r > 0 ? r : 0;
		T_EQ(size_of(fd), keep);
		if (keep)
			expect_file(fd, 0, (size_t)keep, 21, "the prefix reported");
		cuFileHandleDeregister(fh);
		close(fd);
		unlink(path);
		if (!reached) {
			T_EQ(r, 12 * T_MIB);
			break;
		}
		T_LT(r, (ssize_t)(12 * T_MIB));
	}
	t_set_case("%s", "");
}

/* Reservations refused (ENOSPC from fallocate: the pieces go to pwrite,
 * which succeeds) and a read-only file system (EROFS from fallocate and
 * pwrite: the call fails, the file keeps its size). */
static void case_reservation_refused(void)
{
	const char *path = t_new_file_path();
	int fd;
	CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
	dev_pattern(dev, 8 * T_MIB, 0, 22);
	ocf_fault_fail_nth(OCF_FAULT_FALLOCATE, 1, 0, ENOSPC);
	unsigned long long stored = ocf_fault_mapped_stored();
	T_IO(dwrite(fh, 8 * T_MIB, 0, 0), 8 * T_MIB);
	T_GT(ocf_fault_hits(OCF_FAULT_FALLOCATE), 0);
	T_EQ_U(ocf_fault_mapped_stored(), stored);
	T_EQ(size_of(fd), 8 * T_MIB);
	expect_file(fd, 0, 8 * T_MIB, 22, "written with pwrite after refused reservations");
	ocf_fault_reset();
	ocf_fault_fail_nth(OCF_FAULT_FALLOCATE, 1, 0, EROFS);
	ocf_fault_fail_nth(OCF_FAULT_PWRITE, 1, 0, EROFS);
	T_IO_ERRNO(dwrite(fh, 8 * T_MIB, 8 * T_MIB, 0), EROFS);
	ocf_fault_reset();
	T_EQ(size_of(fd), 8 * T_MIB);
	/* A fault in the stores: pwrite writes the piece again. */
	ocf_fault_fail_nth(OCF_FAULT_MAPPED_STORE, 1, 0, EIO);
	dev_pattern(dev, 8 * T_MIB, 8 * T_MIB, 23);
	T_IO(dwrite(fh, 8 * T_MIB, 8 * T_MIB, 0), 8 * T_MIB);
	T_GT(ocf_fault_hits(OCF_FAULT_MAPPED_STORE), 0);
	ocf_fault_reset();
	expect_file(fd, 8 * T_MIB, 8 * T_MIB, 23, "written with pwrite after a fault in the stores");
	T_EQ(size_of(fd), 16 * T_MIB);
	cuFileHandleDeregister(fh);
	close(fd);
}

/* RLIMIT_FSIZE (SIGXFSZ ignored): written up to the limit, as pwrite
 * writes, then EFBIG. */
static void case_fsize_limit(void)
{
	const char *path = t_new_file_path();
	int fd;
	CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
	const size_t limit = 6 * T_MIB + 100;
	dev_pattern(dev, 16 * T_MIB, 0, 24);
	struct rlimit old, rl;
	T_SYS(getrlimit(RLIMIT_FSIZE, &old));
	rl = old;
	rl.rlim_cur = limit;
	signal(SIGXFSZ, SIG_IGN);
	T_SYS(setrlimit(RLIMIT_FSIZE, &rl));
	ssize_t r = dwrite(fh, 16 * T_MIB, 0, 0);
	int e = errno;
	ssize_t r2 = dwrite(fh, 1 * T_MIB, (off_t)limit, 0);
	int e2 = errno;
	T_SYS(setrlimit(RLIMIT_FSIZE, &old));
	signal(SIGXFSZ, SIG_DFL);
	(void)e;
	T_EQ(r, (ssize_t)limit);
	T_EQ(r2, -1);
	T_EQ(e2, EFBIG);
	T_EQ(size_of(fd), (off_t)limit);
	expect_file(fd, 0, limit, 24, "written up to the limit");
	cuFileHandleDeregister(fh);
	close(fd);
}

/* A full file system: a 24 MiB ext4 image, loop-mounted (root). */
static char mnt[512];
static void unmount_image(void)
{
	if (mnt[0]) {
		umount2(mnt, MNT_DETACH);
		rmdir(mnt);
		mnt[0] = 0;
	}
}

static void case_full_disk(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "note: not root: the full file system is not mounted, that case is not run\n");
		return;
	}
	char img[512], cmd[2200];
	snprintf(img, sizeof(img), "%s/ocf_full_%d.img", t_dir(), (int)getpid());
	snprintf(mnt, sizeof(mnt), "%s/ocf_full_%d.mnt", t_dir(), (int)getpid());
	atexit(unmount_image);
	T_SYS(mkdir(mnt, 0755));
	snprintf(cmd, sizeof(cmd),
		 "truncate -s 24M '%s' && mkfs.ext4 -q -F -O ^has_journal '%s' >/dev/null 2>&1 && mount -o loop '%s' "
		 "'%s'",
		 img, img, img, mnt);
	int rc = system(cmd);
	unlink(img); /* the mount keeps it */
	if (rc != 0)
		T_FAIL("could not make and mount a small ext4 file system (%s)", cmd);
	char path[600];
	snprintf(path, sizeof(path), "%s/f", mnt);
	int fd;
	CUfileHandle_t fh = open_handle(path, O_RDWR | O_CREAT, &fd);
	dev_pattern(dev, 32 * T_MIB, 0, 25);
	ssize_t r = dwrite(fh, 32 * T_MIB, 0, 0);
	int e = errno;
	T_LT(r, (ssize_t)(32 * T_MIB));
	if (r < 0)
		T_EQ(e, ENOSPC);
	off_t keep = r > 0 ? r : 0;
	T_EQ(size_of(fd), keep);
	if (keep)
		expect_file(fd, 0, (size_t)keep, 25, "the bytes reported on a full disk");
	/* Written on until the disk is full: each call reports what it
	 * wrote (pieces written past a failed one were cut off again and
	 * their blocks given back, so a later call may find room), and the
	 * file is exactly that long. */
	int full = 0;
	for (int i = 0; i < 64 && !full; i++) {
		dev_pattern(dev, 1 * T_MIB, (uint64_t)keep, 25);
		r = dwrite(fh, 1 * T_MIB, keep, 0);
		if (r < 0) {
			T_EQ(errno, ENOSPC);
			full = 1;
		} else {
			T_GT(r, 0);
			T_LE(r, (ssize_t)T_MIB);
			keep += r;
		}
		T_EQ(size_of(fd), keep);
	}
	T_ASSERT(full);
	expect_file(fd, 0, (size_t)keep, 25, "every byte reported until the disk was full");
	/* Room again: the same write now fits. */
	T_SYS(ftruncate(fd, 0));
	T_SYS(fsync(fd));
	dev_pattern(dev, 8 * T_MIB, 0, 26);
	T_IO(dwrite(fh, 8 * T_MIB, 0, 0), 8 * T_MIB);
	expect_file(fd, 0, 8 * T_MIB, 26, "written after room was made");
	cuFileHandleDeregister(fh);
	close(fd);
	unmount_image();
}

/* Writers of neighbouring ranges (unaligned boundaries) and of one range
 * (each byte ends up one writer's), from device and host memory. */
#define WRITERS 8
#define REGION (2 * T_MIB + 777)
struct writer {
	CUfileHandle_t fh;
	int id;
	bool overlap;
	CUdeviceptr d;
	uint8_t *h;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	t_cuda_bind_thread();
	size_t piece = 512 * T_KIB + 3;
	for (int round = 0; round < (w->overlap ? 6 : 1); round++) {
		off_t base = w->overlap ? 0 : (off_t)w->id * (off_t)REGION;
		for (size_t at = 0; at < REGION; at += piece) {
			size_t n = piece < REGION - at ? piece : REGION - at;
			ssize_t r = w->id % 2 ? cuFileWrite(w->fh, w->h, n, base + (off_t)at, (off_t)at)
					      : cuFileWrite(w->fh, (void *)w->d, n, base + (off_t)at, (off_t)at);
			if (r != (ssize_t)n)
				T_FAIL("writer %d: %zd of %zu bytes at %lld", w->id, r, n, (long long)(base + (off_t)at));
		}
	}
	return NULL;
}

static void case_writers(bool overlap)
{
	const char *path = t_new_file_path();
	int fd;
	CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
	struct writer w[WRITERS];
	pthread_t th[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		uint32_t seed = overlap ? 30 + (uint32_t)i : 30;
		off_t base = overlap ? 0 : (off_t)i * (off_t)REGION;
		w[i] = (struct writer){.fh = fh, .id = i, .overlap = overlap};
		if (i % 2) {
			w[i].h = malloc(REGION);
			T_ASSERT(w[i].h != NULL);
			t_fill_pattern(w[i].h, REGION, (uint64_t)base, seed);
		} else {
			w[i].d = t_dev_alloc(REGION);
			dev_pattern(w[i].d, REGION, (uint64_t)base, seed);
		}
	}
	for (int i = 0; i < WRITERS; i++)
		T_ASSERT(pthread_create(&th[i], NULL, writer_main, &w[i]) == 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	size_t len = overlap ? REGION : WRITERS * REGION;
	T_EQ(size_of(fd), (off_t)len);
	uint8_t *b = malloc(len);
	T_ASSERT(b != NULL);
	T_EQ(t_pread_full(fd, b, len, 0), len);
	if (!overlap) {
		if (t_check_pattern(b, len, 0, 30, "neighbouring writers"))
			T_FAIL("neighbouring writers lost bytes");
	} else {
		for (size_t i = 0; i < len; i++) {
			bool ok = false;
			for (int k = 0; k < WRITERS && !ok; k++)
				ok = b[i] == t_pat(i, 30 + (uint32_t)k);
			if (!ok)
				T_FAIL("byte %zu (0x%02x) is no writer's", i, b[i]);
		}
	}
	free(b);
	for (int i = 0; i < WRITERS; i++) {
		free(w[i].h);
		if (w[i].d)
			cuMemFree(w[i].d);
	}
	cuFileHandleDeregister(fh);
	close(fd);
}

/* A file truncated by another thread again and again while it is written:
 * no signal reaches the program, no call reports more than it asked for,
 * and once the truncation stops, a write is whole. */
static atomic_bool stop_truncating;
static void *truncator(void *arg)
{
	int fd = *(int *)arg;
	while (!atomic_load(&stop_truncating)) {
		(void)ftruncate(fd, (off_t)(rand() % 8) * (off_t)T_MIB);
		usleep(200);
	}
	return NULL;
}

static void case_truncated(void)
{
	const char *path = t_new_file_path();
	int fd;
	CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
	int tfd = t_open(path, O_RDWR);
	dev_pattern(dev, 8 * T_MIB, 0, 40);
	atomic_store(&stop_truncating, false);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, truncator, &tfd) == 0);
	for (int i = 0; i < 10; i++) {
		ssize_t r = dwrite(fh, 8 * T_MIB, 0, 0);
		T_ASSERT(r == -1 || (r >= 0 && r <= (ssize_t)(8 * T_MIB)));
	}
	atomic_store(&stop_truncating, true);
	pthread_join(th, NULL);
	close(tfd);
	T_IO(dwrite(fh, 8 * T_MIB, 0, 0), 8 * T_MIB);
	expect_file(fd, 0, 8 * T_MIB, 40, "written once the truncation stopped");
	cuFileHandleDeregister(fh);
	close(fd);
}

/* A handle deregistered while writes through it run: they finish or fail
 * cleanly, and nothing of the file stays mapped or open. */
#define DEREG_WRITES 12
struct dwriter {
	CUfileHandle_t fh;
	CUdeviceptr d;
	atomic_int *ok;
};

static void *dereg_writer(void *arg)
{
	struct dwriter *w = arg;
	t_cuda_bind_thread();
	for (int i = 0; i < DEREG_WRITES; i++) {
		ssize_t r = cuFileWrite(w->fh, (void *)w->d, 4 * T_MIB, (off_t)(i % 4) * 4 * (off_t)T_MIB, 0);
		if (r == (ssize_t)(4 * T_MIB))
			atomic_fetch_add(w->ok, 1);
		else if (r != -1 || errno != EBADF)
			T_FAIL("write through a handle being deregistered returned %zd (errno %d)", r, errno);
	}
	return NULL;
}

static bool maps_path(const char *path)
{
	char real[PATH_MAX], line[4096];
	T_ASSERT(realpath(path, real) != NULL);
	FILE *f = fopen("/proc/self/maps", "r");
	T_ASSERT(f != NULL);
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, real) != NULL;
	fclose(f);
	return found;
}

/* Four writers through fh; the handle deregistered after `dereg_us` (0:
 * after they finish). */
static void dereg_round(CUfileHandle_t fh, unsigned dereg_us)
{
	atomic_int ok = 0;
	struct dwriter w[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct dwriter){.fh = fh, .d = t_dev_alloc(4 * T_MIB), .ok = &ok};
		dev_pattern(w[i].d, 4 * T_MIB, 0, 41);
		T_ASSERT(pthread_create(&th[i], NULL, dereg_writer, &w[i]) == 0);
	}
	if (dereg_us) {
		usleep(dereg_us);
		cuFileHandleDeregister(fh);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cuMemFree(w[i].d);
	}
	if (!dereg_us) {
		T_EQ(atomic_load(&ok), 4 * DEREG_WRITES);
		cuFileHandleDeregister(fh);
	}
}

static void case_deregister(void)
{
	const char *path = t_new_file_path();
	int fd;
	/* Lanes (and their rings) are made by the first writers, and stay. */
	CUfileHandle_t fh = open_handle(path, O_RDWR, &fd);
	dereg_round(fh, 0);
	close(fd);
	/* A write through a handle that is gone fails, and the failure log
	 * (opened at its first line) stays open too. */
	T_IO_ERRNO(dwrite(fh, 4 * T_MIB, 0, 0), EBADF);
	fh = open_handle(path, O_RDWR, &fd);
	dereg_round(fh, 20000);
	T_ASSERT(!maps_path(path));
	close(fd);
	/* cuFileHandleDeregister returned: nothing of the handle is open. */
	T_EQ(t_fds_of_path(path), 0);
}

/* A read-ahead window of this library, reading the file in order on
 * another handle, sees what cuFileWrite stored ahead of it. */
static void case_readahead_sees_writes(void)
{
	const char *path = t_new_file_path();
	int wfd;
	CUfileHandle_t wfh = open_handle(path, O_RDWR, &wfd);
	dev_pattern(dev, 32 * T_MIB, 0, 50);
	T_IO(dwrite(wfh, 32 * T_MIB, 0, 0), 32 * T_MIB);
	int rfd;
	CUfileHandle_t rfh = open_handle(path, O_RDONLY, &rfd);
	CUdeviceptr rd = t_dev_alloc(T_MIB);
	unsigned long long stored = ocf_fault_mapped_stored();
	uint8_t *b = malloc(T_MIB);
	T_ASSERT(b != NULL);
	for (int i = 0; i < 32; i++) {
		off_t at = (off_t)i * (off_t)T_MIB;
		uint32_t seed = i >= 8 ? 51 : 50;
		if (i == 6) {
			/* The reader's window now holds the next bytes: rewrite
			 * them (the last page of each piece with pwrite). */
			t_fill_pattern(host, 24 * T_MIB, 8 * T_MIB, 51);
			T_IO(cuFileWrite(wfh, host, 24 * T_MIB, 8 * T_MIB, 0), 24 * T_MIB);
		}
		T_IO(cuFileRead(rfh, (void *)rd, T_MIB, at, 0), T_MIB);
		t_dev_get(b, rd, T_MIB);
		if (t_check_pattern(b, T_MIB, (uint64_t)at, seed, "read in order"))
			T_FAIL("read %d at %lld returned stale bytes", i, (long long)at);
	}
	/* The rewrite, over cached pages, stored where cachestat tells them. */
	if (cachestat_works(wfd))
		T_GT(ocf_fault_mapped_stored(), stored);
	free(b);
	cuMemFree(rd);
	cuFileHandleDeregister(rfh);
	cuFileHandleDeregister(wfh);
	close(rfd);
	close(wfd);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	dev = t_dev_alloc(BUF);
	host = malloc(BUF);
	T_ASSERT(host != NULL);
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
	    {"new_file", case_new_file},
	    {"holes", case_holes},
	    {"paths", case_paths},
	    {"copy_fails", case_copy_fails},
	    {"reservation_refused", case_reservation_refused},
	    {"fsize_limit", case_fsize_limit},
	    {"full_disk", case_full_disk},
	    {"neighbours", NULL},
	    {"overlap", NULL},
	    {"truncated", case_truncated},
	    {"deregister", case_deregister},
	    {"readahead", case_readahead_sees_writes},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		t_set_case("%s", cases[i].name);
		if (!strcmp(cases[i].name, "neighbours"))
			case_writers(false);
		else if (!strcmp(cases[i].name, "overlap"))
			case_writers(true);
		else
			cases[i].fn();
		printf("ok %s\n", cases[i].name);
	}
	cuMemFree(dev);
	free(host);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
