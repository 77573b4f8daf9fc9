/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batch entries that the library serves together (file ranges that follow
 * each other are read or written with one system call, buffers that follow
 * each other copied at once) still each get exactly their own result and
 * their own bytes:
 *   - 96 consecutive 64 KiB reads into consecutive device memory;
 *   - a run of reads across end of file: full, short, then 0-byte entries,
 *     nothing stored past what each entry reports;
 *   - O_DIRECT reads with unaligned offsets and odd sizes, with gaps in
 *     device memory every few entries;
 *   - 128 tiny reads with gaps in the file and in memory;
 *   - an entry larger than a staging buffer among small ones;
 *   - bad entries inside a run (unknown handle, range past the allocation)
 *     fail alone;
 *   - reads and writes in one submission; an O_DIRECT unaligned write run;
 *   - a write run that crosses the file size limit (RLIMIT_FSIZE): entries
 *     before it complete, the one across it is short, the rest fail with
 *     EFBIG, as cuFileWrite would return for each alone;
 *   - entries alternating between two GPUs (when there are two).
 * Device memory is compared as a whole with its expected image (poison
 * wherever no entry reported bytes).
 */
#include <signal.h>
#include <sys/resource.h>

#include "async_test_util.h"

#define SZ (64 * T_KIB)
#define FLEN (100 * SZ + 1000)
#define DLEN (12 * T_MIB)
#define MAXN 128

struct ent {
	CUfileOpcode_t op;
	CUfileHandle_t fh;
	CUdeviceptr base;
	size_t size;
	off_t foff, boff;
	ssize_t expect; /* the result cuFileRead/cuFileWrite gives it alone */
};

static CUfileBatchHandle_t batch;
static uint8_t *image, *got; /* expected and actual device contents */

/* Submits n entries, collects their events and checks each result. */
static void run(const char *what, struct ent *e, unsigned n)
{
	CUfileIOParams_t io[MAXN];
	CUfileIOEvents_t ev[MAXN];
	T_ASSERT(n <= MAXN);
	for (unsigned i = 0; i < n; i++)
		io[i] = t_batch_io(e[i].op, e[i].fh, (void *)(uintptr_t)e[i].base, e[i].size, e[i].foff, e[i].boff,
				   (void *)(uintptr_t)(i + 1));
	T_CUFILE_OK(cuFileBatchIOSubmit(batch, n, io, 0));
	t_batch_collect(batch, n, ev);
	bool seen[MAXN + 1] = {false};
	for (unsigned k = 0; k < n; k++) {
		uintptr_t c = (uintptr_t)ev[k].cookie;
		T_ASSERT(c >= 1 && c <= n && !seen[c]);
		seen[c] = true;
		struct ent *x = &e[c - 1];
		t_set_case("%s: entry %u (foff %lld size %zu): status %#x ret %zd", what, (unsigned)c - 1,
			   (long long)x->foff, x->size, ev[k].status, (ssize_t)ev[k].ret);
		T_EQ(ev[k].status, x->expect >= 0 ? CUFILE_COMPLETE : CUFILE_FAILED);
		T_EQ((ssize_t)ev[k].ret, x->expect);
	}
	t_set_case("%s", "");
}

/* Poisons the device buffer and its image. */
static void poison(CUdeviceptr d)
{
	t_dev_fill(d, T_POISON, DLEN);
	memset(image, T_POISON, DLEN);
}

/* Records in the image what a read entry stored. */
static void expect_read(const struct ent *x, CUdeviceptr d, uint32_t seed)
{
	if (x->expect > 0)
		t_fill_pattern(image + (x->base - d) + (size_t)x->boff, (size_t)x->expect, (uint64_t)x->foff, seed);
}

static void check_image(const char *what, CUdeviceptr d)
{
	t_dev_get(got, d, DLEN);
	if (memcmp(got, image, DLEN) != 0) {
		size_t i = 0;
		while (got[i] == image[i])
			i++;
		T_FAIL("%s: device byte %zu is 0x%02x, expected 0x%02x", what, i, got[i], image[i]);
	}
}

static ssize_t eof_clip(off_t foff, size_t size, uint64_t flen)
{
	if ((uint64_t)foff >= flen)
		return 0;
	uint64_t left = flen - (uint64_t)foff;
	return (ssize_t)(left < size ? left : size);
}

int main(void)
{
	t_cuda_require();
	signal(SIGXFSZ, SIG_IGN);
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDWR);
	int dfd = t_odirect_supported(path) ? t_open(path, O_RDWR | O_DIRECT) : -1;
	const char *wpath = t_make_pattern_file(40 * SZ, 0);
	int wfd = t_open(wpath, O_RDWR);
	int wdfd = t_odirect_supported(wpath) ? t_open(wpath, O_RDWR | O_DIRECT) : -1;
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	CUfileHandle_t dfh = dfd >= 0 ? t_register_fd(dfd) : fh;
	CUfileHandle_t wfh = t_register_fd(wfd);
	CUfileHandle_t wdfh = wdfd >= 0 ? t_register_fd(wdfd) : wfh;
	CUdeviceptr d = t_dev_alloc(DLEN);
	image = malloc(DLEN);
	got = malloc(DLEN);
	T_ASSERT(image && got);
	T_CUFILE_OK(cuFileBatchIOSetUp(&batch, MAXN));
	static struct ent e[MAXN];
	unsigned n;

	/* ---- 96 consecutive reads into consecutive memory */
	poison(d);
	for (n = 0; n < 96; n++)
		e[n] = (struct ent){CUFILE_READ, fh, d, SZ, (off_t)(n * SZ), (off_t)(n * SZ), SZ};
	run("consecutive", e, n);
	for (unsigned i = 0; i < n; i++)
		expect_read(&e[i], d, 0);
	check_image("consecutive", d);

	/* ---- a run across end of file */
	poison(d);
	for (n = 0; n < 16; n++) {
		off_t foff = (off_t)((92 + n) * SZ);
		e[n] = (struct ent){CUFILE_READ, fh, d, SZ, foff, (off_t)(n * SZ), eof_clip(foff, SZ, FLEN)};
	}
	T_EQ(e[7].expect, SZ);
	T_EQ(e[8].expect, 1000);
	T_EQ(e[9].expect, 0);
	run("end of file", e, n);
	for (unsigned i = 0; i < n; i++)
		expect_read(&e[i], d, 0);
	check_image("end of file", d);

	/* ---- O_DIRECT, unaligned offsets, odd sizes, gaps every 5 entries */
	poison(d);
	size_t odd = SZ - 100;
	size_t at = 7;
	for (n = 0; n < 64; n++) {
		off_t foff = (off_t)(513 + n * odd);
		if (n % 5 == 4)
			at += 4096 + 3;
		e[n] = (struct ent){CUFILE_READ, dfh, d, odd, foff, (off_t)at, eof_clip(foff, odd, FLEN)};
		at += odd;
	}
	run("O_DIRECT unaligned", e, n);
	for (unsigned i = 0; i < n; i++)
		expect_read(&e[i], d, 0);
	check_image("O_DIRECT unaligned", d);

	/* ---- 128 tiny reads with gaps in file and memory */
	poison(d);
	for (n = 0; n < 128; n++)
		e[n] = (struct ent){CUFILE_READ, n % 2 ? dfh : fh, d, 100, (off_t)(n * 150 + 1), (off_t)(n * 128), 100};
	run("tiny", e, n);
	for (unsigned i = 0; i < n; i++)
		expect_read(&e[i], d, 0);
	check_image("tiny", d);

	/* ---- an entry larger than a staging buffer among small ones */
	poison(d);
	for (n = 0; n < 8; n++)
		e[n] = (struct ent){CUFILE_READ, fh, d, 4096, (off_t)(n * 4096), (off_t)(n * 4096), 4096};
	e[n++] = (struct ent){CUFILE_READ, fh, d, 5 * T_MIB + 3, 32768, 32768 + 11, 5 * T_MIB + 3};
	for (; n < 16; n++)
		e[n] = (struct ent){CUFILE_READ, fh, d, 4096, (off_t)(6 * T_MIB + n * 4096),
				    (off_t)(6 * T_MIB + n * 4096), 4096};
	run("large among small", e, n);
	for (unsigned i = 0; i < n; i++)
		expect_read(&e[i], d, 0);
	check_image("large among small", d);

	/* ---- bad entries inside a run */
	poison(d);
	for (n = 0; n < 8; n++)
		e[n] = (struct ent){CUFILE_READ, fh, d, SZ, (off_t)(n * SZ), (off_t)(n * SZ), SZ};
	e[3].boff = (off_t)(DLEN - SZ / 2); /* past the allocation */
	e[3].expect = -CU_FILE_CUDA_POINTER_RANGE_ERROR;
	e[5].fh = (CUfileHandle_t)(uintptr_t)0x7777777;
	e[5].expect = -EBADF;
	run("bad entries", e, n);
	for (unsigned i = 0; i < n; i++)
		expect_read(&e[i], d, 0);
	check_image("bad entries", d);

	/* ---- reads and writes in one submission, O_DIRECT unaligned writes */
	poison(d);
	for (unsigned i = 0; i < 24; i++) /* the data to write: pattern 9 */
		t_fill_pattern(image + 4 * T_MIB + i * SZ, SZ, (uint64_t)(100 + i * SZ), 9);
	t_dev_put(d + 4 * T_MIB, image + 4 * T_MIB, 24 * SZ);
	for (n = 0; n < 24; n++) {
		CUfileHandle_t h = n < 12 ? wfh : wdfh;
		e[n] = (struct ent){CUFILE_WRITE, h, d, SZ, (off_t)(100 + n * SZ), (off_t)(4 * T_MIB + n * SZ), SZ};
	}
	for (; n < 40; n++)
		e[n] = (struct ent){CUFILE_READ, fh, d, SZ, (off_t)(n * SZ), (off_t)(n * SZ), SZ};
	run("reads and writes", e, n);
	for (unsigned i = 24; i < n; i++)
		expect_read(&e[i], d, 0);
	check_image("reads and writes", d);
	uint8_t *fbuf = malloc(40 * SZ);
	T_ASSERT(fbuf != NULL);
	T_EQ_U(t_pread_full(wfd, fbuf, 40 * SZ, 0), 40 * SZ);
	T_ASSERT(t_check_pattern(fbuf, 100, 0, 0, "before the writes") == 0);
	T_ASSERT(t_check_pattern(fbuf + 100, 24 * SZ, 100, 9, "written") == 0);
	T_ASSERT(t_check_pattern(fbuf + 100 + 24 * SZ, 16 * SZ - 100, 100 + 24 * SZ, 0, "after the writes") == 0);

	/* ---- a write run across the file size limit */
	const char *lpath = t_new_file_path();
	int lfd = t_open(lpath, O_RDWR);
	CUfileHandle_t lfh = t_register_fd(lfd);
	struct rlimit old, lim;
	T_SYS(getrlimit(RLIMIT_FSIZE, &old));
	lim = old;
	lim.rlim_cur = 2 * SZ + SZ / 2;
	T_SYS(setrlimit(RLIMIT_FSIZE, &lim));
	for (n = 0; n < 8; n++) {
		ssize_t x = n < 2 ? (ssize_t)SZ : n == 2 ? (ssize_t)SZ / 2 : -EFBIG;
		e[n] = (struct ent){CUFILE_WRITE, lfh, d, SZ, (off_t)(n * SZ), (off_t)(4 * T_MIB + n * SZ), x};
	}
	run("file size limit", e, n);
	T_SYS(setrlimit(RLIMIT_FSIZE, &old));
	T_EQ_U(t_file_size(lfd), 2 * SZ + SZ / 2);
	T_EQ_U(t_pread_full(lfd, fbuf, 2 * SZ + SZ / 2, 0), 2 * SZ + SZ / 2);
	T_ASSERT(t_check_pattern(fbuf, 2 * SZ + SZ / 2, 100, 9, "written below the limit") == 0);
	cuFileHandleDeregister(lfh);
	close(lfd);

	/* ---- entries alternating between two GPUs */
	int ngpu = 0;
	T_CU(cuDeviceGetCount(&ngpu));
	if (ngpu >= 2) {
		CUdevice dev1;
		CUcontext ctx1;
		T_CU(cuDeviceGet(&dev1, 1));
		T_CU(cuDevicePrimaryCtxRetain(&ctx1, dev1));
		T_CU(cuCtxSetCurrent(ctx1));
		CUdeviceptr d1 = t_dev_alloc(64 * SZ);
		t_dev_fill(d1, T_POISON, 64 * SZ);
		T_CU(cuCtxSetCurrent(t_cu_ctx));
		poison(d);
		for (n = 0; n < 64; n++)
			e[n] = (struct ent){CUFILE_READ, fh, n % 2 ? d1 : d, SZ, (off_t)(n * SZ), (off_t)(n * SZ), SZ};
		run("two GPUs", e, n);
		for (unsigned i = 0; i < n; i += 2)
			expect_read(&e[i], d, 0);
		check_image("two GPUs, GPU 0", d);
		T_CU(cuCtxSetCurrent(ctx1));
		t_dev_get(got, d1, 64 * SZ);
		for (unsigned i = 0; i < n; i++) {
			size_t o = i * SZ;
			if (i % 2 ? t_check_pattern(got + o, SZ, o, 0, "GPU 1 entry")
				  : t_check_fill(got + o, SZ, T_POISON, "GPU 1 between entries"))
				T_FAIL("GPU 1 memory wrong at entry %u", i);
		}
		T_CU(cuMemFree(d1));
		T_CU(cuCtxSetCurrent(t_cu_ctx));
		T_CU(cuDevicePrimaryCtxRelease(dev1));
	}

	cuFileBatchIODestroy(batch);
	cuFileHandleDeregister(fh);
	if (dfh != fh)
		cuFileHandleDeregister(dfh);
	cuFileHandleDeregister(wfh);
	if (wdfh != wfh)
		cuFileHandleDeregister(wdfh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuMemFree(d));
	free(image);
	free(got);
	free(fbuf);
	return T_EXIT_PASS;
}
