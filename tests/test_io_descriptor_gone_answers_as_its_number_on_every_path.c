/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A registered handle whose descriptor the program closed, or whose number
 * it gave to another file, gives one answer on every path: what pread and
 * pwrite on that number give (docs/compatibility.md).
 *
 *   closed  -1 with errno EBADF from cuFileRead and cuFileWrite (4 KiB to
 *           4 MiB, device and host memory, at the start of the file and
 *           where a read-ahead window opened before the close waits), the
 *           same from cuFileReadv/cuFileWritev, -EBADF in batch entries'
 *           events and in stream operations' *bytes_p; never the bytes the
 *           library's own descriptors and mappings of the file (its twin,
 *           its mapping, the window) still hold; nothing written into the
 *           caller's buffers (a stream read into GPU memory, whose copies
 *           were queued at submission: zeros in its range, nothing around
 *           it), nothing into the file.
 *   reused  the number given to another file right after the close: every
 *           read returns that file's bytes, every write lands in it, the
 *           file registered is left as it was; nothing is written outside
 *           the caller's buffers.
 *
 * For buffered and O_DIRECT handles (the O_DIRECT case's new file is
 * opened O_DIRECT too, and every request is aligned, as pread on it needs).
 * One ctest entry per case: buffered_closed, buffered_reused,
 * odirect_closed, odirect_reused.
 */
#include "async_test_util.h"

#define FLEN (16 * T_MIB)
#define BIG (4 * T_MIB)
#define GUARD (64 * T_KIB)
#define SEED_A 1 /* the file registered */
#define SEED_B 2 /* the file that gets the number */
#define HIGH_FD 500

static const char *path_a, *path_b;
static bool reused;
static CUdeviceptr dev;		/* BIG + GUARD */
static uint8_t *host, *scratch; /* BIG + GUARD each, page-aligned */

static void poison(void)
{
	t_dev_fill(dev, T_POISON, BIG + GUARD);
	memset(host, T_POISON, BIG + GUARD);
}

/* mem (host or device) holds [0, n): the new file's bytes from off when
 * the number was reused, else poison; poison after it. */
static void expect_mem(bool device, size_t n, off_t off, const char *what)
{
	uint8_t *b = host;
	if (device) {
		t_dev_get(scratch, dev, BIG + GUARD);
		b = scratch;
	}
	if (reused ? t_check_pattern(b, n, (uint64_t)off, SEED_B, what) : t_check_fill(b, n, T_POISON, what))
		T_FAIL("%s: %s", what,
		       reused ? "not the new file's bytes" : "the caller's memory was written");
	if (t_check_fill(b + n, BIG + GUARD - n, T_POISON, "after the range"))
		T_FAIL("%s wrote past its range", what);
}

/* The answer of a call: n bytes (the number reused) or -1 with EBADF. */
static void expect_io(ssize_t r, int err, size_t n, const char *what)
{
	if (reused ? r != (ssize_t)n : r != -1 || err != EBADF)
		T_FAIL("%s: returned %zd (errno %d), want %s", what, r, err,
		       reused ? "every byte" : "-1 with EBADF");
}

/* An event's or a stream operation's result: n, or -EBADF. */
static void expect_result(ssize_t r, size_t n, const char *what)
{
	if (r != (reused ? (ssize_t)n : -EBADF))
		T_FAIL("%s: result %zd, want %zd", what, r, reused ? (ssize_t)n : (ssize_t)-EBADF);
}

#define EXPECT_IO(expr, n, what)                                                                             \
	do {                                                                                                 \
		errno = 0;                                                                                   \
		ssize_t r_ = (expr);                                                                         \
		expect_io(r_, errno, n, what);                                                               \
	} while (0)

/* The writes, each into its own range of the file from memory holding the
 * pattern `seed` at the file's offsets; checked at the end. */
struct wrange {
	off_t off;
	size_t len;
	uint32_t seed;
};
static const struct wrange writes[] = {
    {0, 64 * T_KIB, 11},			/* cuFileWrite from host memory */
    {128 * (off_t)T_KIB, 4 * T_KIB, 12},	/* ... of 4 KiB */
    {2 * (off_t)T_MIB, BIG, 13},		/* ... of 4 MiB from device memory */
    {8 * (off_t)T_MIB, 64 * T_KIB + T_MIB, 14}, /* cuFileWritev: host then device */
    {12 * (off_t)T_MIB, 64 * T_KIB, 15},	/* batch, device memory */
    {13 * (off_t)T_MIB, 64 * T_KIB, 16},	/* batch, host memory */
    {14 * (off_t)T_MIB, T_MIB, 17},		/* stream, device memory */
};

static void reads(CUfileHandle_t fh, CUstream s)
{
	static const size_t sizes[] = {4 * T_KIB, 64 * T_KIB, T_MIB, BIG};
	/* At 0, and where the read-ahead window opened before the close
	 * waits for the next read (3 MiB). */
	static const off_t offs[] = {0, 3 * (off_t)T_MIB};
	char what[160];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t j = 0; j < 2; j++) {
			size_t n = sizes[i];
			off_t off = offs[j];
			snprintf(what, sizeof(what), "cuFileRead of %zu KiB at %lld into device memory",
				 n / 1024, (long long)off);
			poison();
			EXPECT_IO(cuFileRead(fh, (void *)dev, n, off, 0), n, what);
			expect_mem(true, n, off, what);
			snprintf(what, sizeof(what), "cuFileRead of %zu KiB at %lld into host memory",
				 n / 1024, (long long)off);
			EXPECT_IO(cuFileRead(fh, host, n, off, 0), n, what);
			expect_mem(false, n, off, what);
		}
	}

	poison();
	CUfileIOVec_t iov[2] = {{host, 64 * T_KIB}, {(void *)dev, T_MIB}};
	EXPECT_IO(cuFileReadv(fh, iov, 2, 4 * (off_t)T_MIB, 0), 64 * T_KIB + T_MIB, "cuFileReadv");
	expect_mem(false, 64 * T_KIB, 4 * (off_t)T_MIB, "cuFileReadv's host piece");
	expect_mem(true, T_MIB, 4 * (off_t)T_MIB + 64 * (off_t)T_KIB, "cuFileReadv's device piece");

	/* A batch: device entries of one run and of another, a host entry. */
	poison();
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 3));
	CUfileIOParams_t io[3] = {
	    t_batch_io(CUFILE_READ, fh, (void *)dev, 64 * T_KIB, 0, 0, (void *)1),
	    t_batch_io(CUFILE_READ, fh, (void *)dev, 64 * T_KIB, 64 * (off_t)T_KIB, 64 * (off_t)T_KIB,
		       (void *)2),
	    t_batch_io(CUFILE_READ, fh, host, T_MIB, 0, 0, (void *)3),
	};
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 3, io, 0));
	CUfileIOEvents_t ev[3];
	t_batch_collect(b, 3, ev);
	for (int k = 0; k < 3; k++) {
		size_t n = (uintptr_t)ev[k].cookie == 3 ? T_MIB : 64 * T_KIB;
		if (reused ? ev[k].status != CUFILE_COMPLETE : ev[k].status != CUFILE_FAILED)
			T_FAIL("batch read %p: status %d", ev[k].cookie, (int)ev[k].status);
		expect_result((ssize_t)ev[k].ret, n, "a batch read");
	}
	cuFileBatchIODestroy(b);
	expect_mem(true, 128 * T_KIB, 0, "batch reads into device memory");
	expect_mem(false, T_MIB, 0, "a batch read into host memory");

	/* Stream reads into device and host memory. */
	poison();
	size_t size = T_MIB, hsize = 64 * T_KIB;
	off_t foff = 3 * (off_t)T_MIB, boff = 4096, hfoff = 0, hboff = 0;
	ssize_t bytes = 1, hbytes = 1;
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)dev, &size, &foff, &boff, &bytes, s));
	T_CUFILE_OK(cuFileReadAsync(fh, host, &hsize, &hfoff, &hboff, &hbytes, s));
	T_CU(cuStreamSynchronize(s));
	expect_result(bytes, T_MIB, "a stream read into device memory");
	expect_result(hbytes, 64 * T_KIB, "a stream read into host memory");
	expect_mem(false, 64 * T_KIB, 0, "a stream read into host memory");
	/* The device read's range [4096, +1 MiB): the bytes, or zeros (its
	 * copies were queued at submission); nothing around it. */
	t_dev_get(scratch, dev, BIG + GUARD);
	if (t_check_fill(scratch, 4096, T_POISON, "before the range") ||
	    (reused ? t_check_pattern(scratch + 4096, T_MIB, (uint64_t)foff, SEED_B, "the range")
		    : t_check_fill(scratch + 4096, T_MIB, 0, "the range")) ||
	    t_check_fill(scratch + 4096 + T_MIB, BIG + GUARD - 4096 - T_MIB, T_POISON, "after the range"))
		T_FAIL("a stream read into GPU memory: wrong bytes in its range, or some outside it");
}

static void fill_host(size_t at, const struct wrange *w, size_t len, off_t foff)
{
	t_fill_pattern(host + at, len, (uint64_t)foff, w->seed);
}

static void fill_dev(size_t at, const struct wrange *w, size_t len, off_t foff)
{
	t_fill_pattern(scratch, len, (uint64_t)foff, w->seed);
	t_dev_put(dev + at, scratch, len);
}

static void do_writes(CUfileHandle_t fh, CUstream s)
{
	const struct wrange *w = writes;
	fill_host(0, &w[0], w[0].len, w[0].off);
	EXPECT_IO(cuFileWrite(fh, host, w[0].len, w[0].off, 0), w[0].len,
		  "cuFileWrite of 64 KiB from host memory");
	fill_host(0, &w[1], w[1].len, w[1].off);
	EXPECT_IO(cuFileWrite(fh, host, w[1].len, w[1].off, 0), w[1].len,
		  "cuFileWrite of 4 KiB from host memory");
	fill_dev(0, &w[2], w[2].len, w[2].off);
	EXPECT_IO(cuFileWrite(fh, (void *)dev, w[2].len, w[2].off, 0), w[2].len,
		  "cuFileWrite of 4 MiB from device memory");
	fill_host(0, &w[3], 64 * T_KIB, w[3].off);
	fill_dev(0, &w[3], T_MIB, w[3].off + 64 * (off_t)T_KIB);
	CUfileIOVec_t iov[2] = {{host, 64 * T_KIB}, {(void *)dev, T_MIB}};
	EXPECT_IO(cuFileWritev(fh, iov, 2, w[3].off, 0), w[3].len, "cuFileWritev");

	fill_dev(0, &w[4], w[4].len, w[4].off);
	fill_host(0, &w[5], w[5].len, w[5].off);
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 2));
	CUfileIOParams_t io[2] = {
	    t_batch_io(CUFILE_WRITE, fh, (void *)dev, w[4].len, w[4].off, 0, NULL),
	    t_batch_io(CUFILE_WRITE, fh, host, w[5].len, w[5].off, 0, NULL),
	};
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 2, io, 0));
	CUfileIOEvents_t ev[2];
	t_batch_collect(b, 2, ev);
	for (int k = 0; k < 2; k++) {
		if (reused ? ev[k].status != CUFILE_COMPLETE : ev[k].status != CUFILE_FAILED)
			T_FAIL("batch write: status %d", (int)ev[k].status);
		expect_result((ssize_t)ev[k].ret, 64 * T_KIB, "a batch write");
	}
	cuFileBatchIODestroy(b);

	fill_dev(BIG - T_MIB, &w[6], w[6].len, w[6].off);
	size_t size = w[6].len;
	off_t foff = w[6].off, boff = (off_t)(BIG - T_MIB);
	ssize_t bytes = 1;
	T_CUFILE_OK(cuFileWriteAsync(fh, (void *)dev, &size, &foff, &boff, &bytes, s));
	T_CU(cuStreamSynchronize(s));
	expect_result(bytes, w[6].len, "a stream write");
}

/* The file registered holds its pattern; the new one its own, with the
 * writes in it when the number was reused. */
static void expect_files(void)
{
	uint8_t *b = malloc(FLEN);
	T_ASSERT(b != NULL);
	int fd = t_open(path_a, O_RDONLY);
	T_EQ_U(t_file_size(fd), FLEN);
	T_EQ_U(t_pread_full(fd, b, FLEN, 0), FLEN);
	if (t_check_pattern(b, FLEN, 0, SEED_A, "the file registered"))
		T_FAIL("a write through a handle whose descriptor is gone changed the file registered");
	close(fd);
	fd = t_open(path_b, O_RDONLY);
	T_EQ_U(t_file_size(fd), FLEN);
	T_EQ_U(t_pread_full(fd, b, FLEN, 0), FLEN);
	off_t at = 0;
	for (size_t i = 0; i <= sizeof(writes) / sizeof(writes[0]); i++) {
		/* In file order: the writes are. */
		off_t end = i < sizeof(writes) / sizeof(writes[0]) ? writes[i].off : (off_t)FLEN;
		if (t_check_pattern(b + at, (size_t)(end - at), (uint64_t)at, SEED_B,
				    "the new file between writes"))
			T_FAIL("the new file changed outside the writes");
		if (i == sizeof(writes) / sizeof(writes[0]))
			break;
		const struct wrange *w = &writes[i];
		if (t_check_pattern(b + w->off, w->len, (uint64_t)w->off, reused ? w->seed : SEED_B,
				    "a write's range"))
			T_FAIL("the write at %lld %s", (long long)w->off,
			       reused ? "did not land in the new file" : "changed the new file");
		at = w->off + (off_t)w->len;
	}
	close(fd);
	free(b);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "buffered_closed";
	bool direct = !strncmp(which, "odirect", 7);
	reused = strstr(which, "reused") != NULL;
	if (!direct && strncmp(which, "buffered", 8))
		T_FAIL("unknown case %s", which);
	t_cuda_require();
	path_a = t_make_pattern_file(FLEN, SEED_A);
	path_b = t_make_pattern_file(FLEN, SEED_B);
	if (direct && !t_odirect_supported(path_a))
		T_SKIP("the test directory's file system refuses O_DIRECT");
	T_CUFILE_OK(cuFileDriverOpen());
	dev = t_dev_alloc(BIG + GUARD);
	host = aligned_alloc(4096, BIG + GUARD);
	scratch = aligned_alloc(4096, BIG + GUARD);
	T_ASSERT(host && scratch);
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	/* The log, opened at its first line (a failure's), so that it does
	 * not take the number closed below. */
	T_IO_ERRNO(cuFileRead((CUfileHandle_t)(uintptr_t)0x1000, host, 1, 0, 0), EBADF);

	/* A number far above those the process uses: a descriptor the library
	 * opens later (an io_uring instance, the statistics snapshot) takes
	 * the lowest free one, never this, so "closed" stays closed. */
	int flags = (direct ? O_DIRECT : 0) | O_RDWR;
	int fd = HIGH_FD, ofd = t_open(path_a, flags);
	T_SYS(dup2(ofd, fd));
	close(ofd);
	CUfileHandle_t fh = t_register_fd(fd);
	/* What the handle has opened by now: its twin, its mapping (cached
	 * bytes into device memory), a read-ahead window (reads in order),
	 * the stream's ring, the batch executor. */
	for (int k = 0; k < 3; k++)
		T_IO(cuFileRead(fh, (void *)dev, T_MIB, (off_t)k * (off_t)T_MIB, 0), T_MIB);
	T_IO(cuFileRead(fh, host, 64 * T_KIB, 0, 0), 64 * T_KIB);
	size_t size = T_MIB;
	off_t foff = 0, boff = 0;
	ssize_t bytes = 0;
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)dev, &size, &foff, &boff, &bytes, s));
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, (ssize_t)T_MIB);

	T_SYS(close(fd));
	int nfd = -1;
	if (reused) {
		int bfd = t_open(path_b, flags);
		T_SYS(dup2(bfd, fd));
		close(bfd);
		nfd = fd;
	} else {
		T_EQ(fcntl(fd, F_GETFD), -1);
	}
	t_set_case("%s", which);
	reads(fh, s);
	do_writes(fh, s);
	expect_files();
	if (!reused)
		T_EQ(fcntl(fd, F_GETFD), -1); /* nothing took the number meanwhile */

	cuFileHandleDeregister(fh);
	if (nfd >= 0)
		close(nfd);
	T_CU(cuStreamDestroy(s));
	cuMemFree(dev);
	free(host);
	free(scratch);
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
