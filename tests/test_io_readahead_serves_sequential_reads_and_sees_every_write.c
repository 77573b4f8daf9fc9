/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library, for its count of reads served from read-ahead)
 * A caller that reads a file in order into device memory is served from
 * bytes the engine's helpers read ahead (src/readahead.c), and nothing a
 * write did before a read began is ever hidden from it:
 *   - 1 MiB and 256 KiB reads in order, through to a short read at end of
 *     file and one past it: the exact bytes, nothing stored past the
 *     request, most reads served from the window;
 *   - a pwrite through another descriptor into the range read ahead, a
 *     cuFileWrite through the same handle, a write through Linux AIO
 *     (which raises no inotify event), and a truncation (shrinking, then
 *     growing the file again) while a window is open: every read after
 *     them returns the file as it is then;
 *   - reads at shuffled offsets never open a window;
 *   - two threads reading the file in order through two handles while a
 *     third reads at random offsets through a third: every byte right;
 *   - four threads reading their own quarters in order through one handle:
 *     a window for each, every byte right;
 *   - a handle deregistered while its window's fills are in flight;
 *   - argv[1] "off" (OPENCUFILE_READAHEAD=off): no read is served from a
 *     window;
 *   - with OPENCUFILE_READAHEAD_FILLERS set (the _one_filler entry), never
 *     more engine helpers fill one window at once (the fault-injection
 *     library's peak count).
 * Each read is checked against what pread returns at that moment.  The
 * counts of reads served from a window come from the fault-injection
 * library (the stand-in build); against the real driver the test links the
 * plain library and checks the bytes only.
 */
#include "test.h"

#include <dlfcn.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <sys/syscall.h>

/* Writes `len` bytes of pattern `seed` at `off` with Linux AIO (io_submit),
 * which queues no inotify event, and waits for the write to complete. */
static void aio_pwrite_pattern(int fd, off_t off, size_t len, uint32_t seed)
{
	uint8_t *buf = malloc(len);
	T_ASSERT(buf != NULL);
	t_fill_pattern(buf, len, (uint64_t)off, seed);
	aio_context_t ctx = 0;
	if (syscall(SYS_io_setup, 1, &ctx) != 0)
		T_SKIP("io_setup: %s", strerror(errno));
	struct iocb cb = {.aio_fildes = (uint32_t)fd,
			  .aio_lio_opcode = IOCB_CMD_PWRITE,
			  .aio_buf = (uint64_t)(uintptr_t)buf,
			  .aio_nbytes = len,
			  .aio_offset = off};
	struct iocb *cbs[1] = {&cb};
	T_EQ(syscall(SYS_io_submit, ctx, 1, cbs), 1);
	struct io_event ev;
	T_EQ(syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL), 1);
	T_EQ((long long)ev.res, (long long)len);
	syscall(SYS_io_destroy, ctx);
	free(buf);
}

/* ocf_fault_ra_served and ocf_fault_ra_fill_peak of the fault-injection
 * library, or NULL. */
static unsigned long (*served_fn)(void);
static int (*peak_fn)(void);

static unsigned long served(void)
{
	return served_fn ? served_fn() : 0;
}

#define FLEN (40 * T_MIB + 12345)
#define MAXREQ (8 * T_MIB)
#define GUARD 4096

static const char *path;
static __thread bool in_thread;

struct reader {
	CUfileHandle_t fh;
	CUdeviceptr dev;
	uint8_t *got, *truth;
	int fd; /* for the truth */
};

static struct reader reader_new(CUfileHandle_t fh, int fd)
{
	struct reader r = {.fh = fh, .fd = fd};
	r.dev = t_dev_alloc(MAXREQ + GUARD);
	r.got = malloc(MAXREQ + GUARD);
	r.truth = malloc(MAXREQ);
	T_ASSERT(r.got && r.truth);
	return r;
}

static void reader_free(struct reader *r)
{
	T_CU(cuMemFree(r->dev));
	free(r->got);
	free(r->truth);
}

/* Reads [off, off+len) and checks it against the file as it is now. */
static void read_check(struct reader *r, size_t len, off_t off, const char *what)
{
	if (!in_thread) /* the case text is one global */
		t_set_case("%s: %zu bytes at %lld", what, len, (long long)off);
	t_dev_fill(r->dev, T_POISON, len + GUARD);
	uint64_t size = t_file_size(r->fd);
	size_t expect =
	    (uint64_t)off >= size ? 0 : (size_t)(len < size - (uint64_t)off ? len : size - (uint64_t)off);
	T_IO(cuFileRead(r->fh, (void *)(uintptr_t)r->dev, len, off, 0), (ssize_t)expect);
	t_dev_get(r->got, r->dev, len + GUARD);
	T_EQ_U(t_pread_full(r->fd, r->truth, expect, (uint64_t)off), expect);
	if (memcmp(r->got, r->truth, expect) != 0) {
		size_t i = 0;
		while (r->got[i] == r->truth[i])
			i++;
		T_FAIL("byte %zu of the read differs from the file: %#x, not %#x", i, r->got[i], r->truth[i]);
	}
	if (t_check_fill(r->got + len, GUARD, T_POISON, "past the request"))
		T_FAIL("stored past the request");
}

static void sequential(struct reader *r, off_t from, off_t to, size_t len, const char *what)
{
	for (off_t off = from; off < to; off += (off_t)len)
		read_check(r, len, off, what);
}

struct thread_arg {
	struct reader r;
	bool random;
	uint32_t seed;
	int quarter; /* 1-4: read that quarter of the file in 256 KiB calls */
};

static void *reader_thread(void *p)
{
	struct thread_arg *a = p;
	in_thread = true;
	t_cuda_bind_thread();
	if (a->quarter) {
		off_t q = (off_t)(FLEN / 4) / (off_t)T_MIB * (off_t)T_MIB;
		sequential(&a->r, q * (a->quarter - 1), q * a->quarter, 256 * T_KIB, "quarter, in order");
		return NULL;
	}
	if (!a->random) {
		sequential(&a->r, 0, FLEN, T_MIB, "thread, in order");
		return NULL;
	}
	uint32_t x = a->seed;
	for (int i = 0; i < 40; i++) {
		x = x * 1103515245u + 12345u;
		read_check(&a->r, 512 * T_KIB, (off_t)((x >> 4) % (FLEN / 4096)) * 4096, "thread, random");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	bool off_mode = argc > 1 && strcmp(argv[1], "off") == 0;
	if (off_mode)
		setenv("OPENCUFILE_READAHEAD", "off", 1);
	/* Eight helpers and nine lanes whatever the CPU count, so that four
	 * callers and their windows find lanes. */
	setenv("OPENCUFILE_IO_THREADS", "8", 0);
	t_cuda_require();
	served_fn = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "ocf_fault_ra_served");
	peak_fn = (int (*)(void))dlsym(RTLD_DEFAULT, "ocf_fault_ra_fill_peak");
	if (!served_fn)
		printf("note: no count of reads served from read-ahead (not the fault-injection library)\n");
	path = t_make_pattern_file(FLEN, 0);
	t_require_local_odirect_fs(path);
	int wfd = t_open(path, O_RDWR);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);
	struct reader r = reader_new(fh, wfd);

	/* In order, 1 MiB: through the end of the file. */
	unsigned long s0 = served();
	sequential(&r, 0, FLEN + T_MIB, T_MIB, "1 MiB in order");
	unsigned long s1 = served();
	if (off_mode) {
		T_EQ_U(s1, s0);
		goto done;
	}
	if (served_fn)
		T_GE(s1 - s0, 30);

	/* 256 KiB in order, a pwrite through another descriptor ahead of the
	 * reader while its window is open. */
	sequential(&r, 0, 4 * T_MIB, 256 * T_KIB, "256 KiB in order");
	t_pwrite_pattern(wfd, 5 * T_MIB + 1000, 100 * T_KIB, 7);
	sequential(&r, 4 * T_MIB, 12 * T_MIB, 256 * T_KIB, "after a pwrite ahead");
	unsigned long s2 = served();
	sequential(&r, 12 * T_MIB, 20 * T_MIB, 256 * T_KIB, "after the pwrite, on");
	if (served_fn)
		T_GT(served() - s2, 10); /* the window opened again */

	/* cuFileWrite through the same handle, ahead of the reader. */
	{
		uint8_t *src = malloc(300 * T_KIB);
		T_ASSERT(src != NULL);
		t_fill_pattern(src, 300 * T_KIB, 0, 9);
		CUdeviceptr d = t_dev_alloc(300 * T_KIB);
		t_dev_put(d, src, 300 * T_KIB);
		sequential(&r, 20 * T_MIB, 22 * T_MIB, T_MIB, "before a cuFileWrite");
		t_set_case("cuFileWrite ahead of the reader");
		T_IO(cuFileWrite(fh, (void *)(uintptr_t)d, 300 * T_KIB, 23 * T_MIB + 5, 0), 300 * T_KIB);
		sequential(&r, 22 * T_MIB, 28 * T_MIB, T_MIB, "after a cuFileWrite");
		T_CU(cuMemFree(d));
		free(src);
	}

	/* A write through Linux AIO ahead of the reader (no inotify event:
	 * the file's times tell). */
	sequential(&r, 20 * T_MIB, 22 * T_MIB, T_MIB, "before an AIO write");
	usleep(50000); /* the window's fills done: the write comes after them */
	aio_pwrite_pattern(wfd, 23 * T_MIB + 4096, 200 * T_KIB, 13);
	sequential(&r, 22 * T_MIB, 26 * T_MIB, T_MIB, "after an AIO write");

	/* Truncated below the window, then grown back (zeros) while the
	 * reader goes on. */
	sequential(&r, 28 * T_MIB, 30 * T_MIB, T_MIB, "before a truncation");
	T_SYS(ftruncate(wfd, 31 * T_MIB + 77));
	sequential(&r, 30 * T_MIB, 33 * T_MIB, T_MIB, "after shrinking");
	T_SYS(ftruncate(wfd, FLEN));
	sequential(&r, 28 * T_MIB, FLEN, T_MIB, "after growing");

	/* At rest from here: the writes above leave dirty pages, and ranges
	 * with dirty pages are not read ahead (the counts below need windows). */
	T_SYS(fsync(wfd));

	/* Shuffled offsets: no window. */
	{
		unsigned long before = served();
		uint32_t x = 5;
		for (int i = 0; i < 24; i++) {
			x = x * 1103515245u + 12345u;
			read_check(&r, T_MIB, (off_t)((x >> 4) % 36) * (off_t)T_MIB + 4096, "shuffled");
		}
		T_EQ_U(served(), before);
	}

	/* Two readers in order and one at random, at once, each its own
	 * handle. */
	{
		struct thread_arg a[3];
		pthread_t th[3];
		int fds[3];
		for (int i = 0; i < 3; i++) {
			fds[i] = t_open(path, O_RDONLY);
			a[i] = (struct thread_arg){.r = reader_new(t_register_fd(fds[i]), fds[i]),
						   .random = i == 2,
						   .seed = 11u + (uint32_t)i};
			T_EQ(pthread_create(&th[i], NULL, reader_thread, &a[i]), 0);
		}
		for (int i = 0; i < 3; i++) {
			T_EQ(pthread_join(th[i], NULL), 0);
			cuFileHandleDeregister(a[i].r.fh);
			reader_free(&a[i].r);
			close(fds[i]);
		}
	}

	/* Four threads through ONE handle, each reading its own quarter of
	 * the file in order (gdsio's shape): a window for each stream. */
	{
		int fd4 = t_open(path, O_RDONLY);
		CUfileHandle_t fh4 = t_register_fd(fd4);
		struct thread_arg a[4];
		pthread_t th[4];
		unsigned long before = served();
		for (int i = 0; i < 4; i++) {
			a[i] = (struct thread_arg){.r = reader_new(fh4, fd4), .quarter = i + 1};
			T_EQ(pthread_create(&th[i], NULL, reader_thread, &a[i]), 0);
		}
		for (int i = 0; i < 4; i++) {
			T_EQ(pthread_join(th[i], NULL), 0);
			reader_free(&a[i].r);
		}
		if (served_fn)
			T_GT(served() - before, 40);
		cuFileHandleDeregister(fh4);
		close(fd4);
	}

	/* Deregistered while its window fills. */
	for (int round = 0; round < 4; round++) {
		int fd2 = t_open(path, O_RDONLY);
		struct reader r2 = reader_new(t_register_fd(fd2), fd2);
		sequential(&r2, 0, 3 * (off_t)MAXREQ / 4, MAXREQ / 4, "before deregistering");
		cuFileHandleDeregister(r2.fh);
		reader_free(&r2);
		close(fd2);
	}

	/* 8 MiB reads in order (the window's largest request). */
	sequential(&r, 0, FLEN, MAXREQ, "8 MiB in order");

done:
	if (peak_fn) {
		/* With a bound, never more helpers filling one window at once. */
		const char *fill = getenv("OPENCUFILE_READAHEAD_FILLERS");
		int bound = fill && *fill ? atoi(fill) : 0;
		printf("most helpers filling one window at once: %d\n", peak_fn());
		t_set_case("helpers filling one window, OPENCUFILE_READAHEAD_FILLERS=%d", bound);
		if (bound > 0)
			T_ASSERT(peak_fn() <= bound);
		if (!off_mode)
			T_ASSERT(peak_fn() >= 1);
	}
	reader_free(&r);
	cuFileHandleDeregister(fh);
	close(fd);
	close(wfd);
	T_CUFILE_OK(cuFileDriverClose());
	t_cleanup_files();
	printf("PASS\n");
	return T_EXIT_PASS;
}
