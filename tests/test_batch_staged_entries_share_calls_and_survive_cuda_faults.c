/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) Batch entries into device memory share the work:
 *   - the same reads into scattered slots of device memory have their
 *     copies grouped (cuMemcpyBatchAsync, at most 16 per call);
 *   - 128 consecutive 64 KiB reads served by 4 executor threads cost at
 *     most two host-to-device copies, event records and preads per claim
 *     of 32 entries (one per staging buffer it touches), one pointer
 *     lookup per thread and at most two at submission (until every GPU
 *     has lanes) — not one of each per entry; registered memory
 *     likewise;
 * and a CUDA failure hurts only the entries it touches.  SQLite-style, the
 * 1st, 2nd, ... call of each CUDA function the staged path uses fails
 * during a batch of reads and writes (contiguous stretches and gaps in
 * device memory) until the batch no longer reaches the fault; every time:
 * an entry reported complete has all its bytes in place (device memory or
 * file), a failed read changed nothing outside its range, a failed write
 * wrote nothing, no copy lands after the events were reported (streams are
 * slowed down; unless the stream cannot be waited for at all), and the
 * next batch works.  At driver close nothing pinned
 * or created is left.
 */
#include "async_test_util.h"
#include "fakecuda.h"

#define BIG 128
#define BSZ (64 * T_KIB)
#define SZ (16 * T_KIB)
#define NR 6
#define NW 6
#define N (NR + NW)
#define WBASE (1 * T_MIB) /* write sources in device memory */
#define DLEN (2 * T_MIB)
#define STREAM_DELAY_US 300
#define WATCH_US 20000
#define MAX_NTH 40

static unsigned long syscr(void)
{
	unsigned long r = 0, w = 0;
	t_proc_io_calls(&r, &w);
	return r;
}

static void big_batch(CUfileBatchHandle_t b, CUfileHandle_t fh, CUdeviceptr d, const char *what, bool count)
{
	static CUfileIOParams_t io[BIG];
	static CUfileIOEvents_t ev[BIG];
	for (int i = 0; i < BIG; i++)
		io[i] = t_batch_io(CUFILE_READ, fh, (void *)(uintptr_t)d, BSZ, (off_t)(i * BSZ), (off_t)(i * BSZ),
				   (void *)(uintptr_t)(i + 1));
	const char *fn[] = {"cuMemcpyHtoDAsync_v2", "cuEventRecord", "cuPointerGetAttributes", "cuPointerGetAttribute"};
	unsigned long before[4];
	for (int k = 0; k < 4; k++)
		before[k] = fakecuda_call_count(fn[k]);
	unsigned long r0 = syscr();
	T_CUFILE_OK(cuFileBatchIOSubmit(b, BIG, io, 0));
	t_batch_collect(b, BIG, ev);
	unsigned long reads = syscr() - r0;
	for (int i = 0; i < BIG; i++) {
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, BSZ);
	}
	unsigned long calls[4];
	for (int k = 0; k < 4; k++)
		calls[k] = fakecuda_call_count(fn[k]) - before[k];
	fprintf(stderr, "%s: %d entries: %lu copies, %lu event records, %lu+%lu pointer lookups, %lu read calls\n", what,
		BIG, calls[0], calls[1], calls[2], calls[3], reads);
	/* 4 claims of 32 entries (however the threads share them); a claim
	 * that starts near the end of a staging buffer continues in the next
	 * one: at most two runs, copies and events per claim. */
	if (count) {
		T_LE_U(calls[0], 8);
		T_LE_U(calls[1], 8);
		/* 4 executor threads, + the submission's check that the
		 * buffer's GPU has lanes (memory type and ordinal; the fake
		 * driver has two GPUs and only one of them has lanes). */
		T_LE_U(calls[2] + calls[3], 4 + 2);
		T_LE_U(reads, 8 + 2); /* + the /proc/self/io reads themselves */
	}
	uint8_t *h = malloc(BIG * BSZ);
	T_ASSERT(h != NULL);
	t_dev_get(h, d, BIG * BSZ);
	T_ASSERT(t_check_pattern(h, BIG * BSZ, 0, 0, what) == 0);
	free(h);
}

/* 128 file-consecutive 64 KiB reads into the slots of d in a scattered
 * order (no two neighbours in the file are neighbours in memory): one
 * pread per run as before, and the copies of a staging buffer's 32 blocks
 * go to the driver as grouped calls of at most 16 (cuMemcpyBatchAsync),
 * not one call each. */
static void scattered_batch(CUfileBatchHandle_t b, CUfileHandle_t fh, CUdeviceptr d)
{
	static CUfileIOParams_t io[BIG];
	static CUfileIOEvents_t ev[BIG];
	for (int i = 0; i < BIG; i++) {
		int slot = (i * 37 + 11) % BIG; /* 37 is prime to 128: a permutation */
		io[i] = t_batch_io(CUFILE_READ, fh, (void *)(uintptr_t)d, BSZ, (off_t)(i * BSZ), (off_t)(slot * BSZ),
				   (void *)(uintptr_t)(i + 1));
	}
	unsigned long g0 = fakecuda_call_count("cuMemcpyBatchAsync_v2");
	unsigned long c0 = fakecuda_call_count("cuMemcpyHtoDAsync_v2");
	T_CUFILE_OK(cuFileBatchIOSubmit(b, BIG, io, 0));
	t_batch_collect(b, BIG, ev);
	for (int i = 0; i < BIG; i++) {
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, BSZ);
	}
	unsigned long grouped = fakecuda_call_count("cuMemcpyBatchAsync_v2") - g0;
	unsigned long single = fakecuda_call_count("cuMemcpyHtoDAsync_v2") - c0;
	fprintf(stderr, "scattered: %d entries: %lu grouped copy calls, %lu single copies\n", BIG, grouped, single);
	/* 4 claims of 32, each over at most two staging buffers: at most two
	 * groups of 16 and a remainder per buffer. */
	T_ASSERT(grouped >= BIG / 16 / 2);
	T_LE_U(grouped + single, 4 * 2 * 3);
	uint8_t *h = malloc(BIG * BSZ);
	T_ASSERT(h != NULL);
	t_dev_get(h, d, BIG * BSZ);
	for (int i = 0; i < BIG; i++) {
		int slot = (i * 37 + 11) % BIG;
		if (t_check_pattern(h + (size_t)slot * BSZ, BSZ, (uint64_t)i * BSZ, 0, "scattered"))
			T_FAIL("entry %d (slot %d) has the wrong bytes", i, slot);
	}
	free(h);
}

/* Device layout of the fault batch: reads 0-2 contiguous, then gaps;
 * write sources 0-2 contiguous, then gaps. */
static size_t read_at(int i) { return (size_t)i * SZ + (i >= 3 ? (size_t)(i - 2) * 4096 : 0); }
static size_t write_at(int i) { return WBASE + read_at(i); }

static uint8_t *image, *got, *fbuf;

/* Fails the nth call of func (and every call of `also`, if not NULL). */
static void fault_round(CUfileBatchHandle_t b, CUfileHandle_t rfh, CUfileHandle_t wfh, int wfd, CUdeviceptr d,
			const char *func, const char *also)
{
	CUfileIOParams_t io[N];
	CUfileIOEvents_t ev[N];
	int hits = 0;
	for (unsigned long nth = 1; nth <= MAX_NTH; nth++) {
		t_set_case("fail call %lu of %s", nth, func);
		/* Device: poison, and the write sources (pattern 9). */
		memset(image, T_POISON, DLEN);
		for (int i = 0; i < NW; i++)
			t_fill_pattern(image + write_at(i), SZ, (uint64_t)(i * SZ), 9);
		t_dev_put(d, image, DLEN);
		t_pwrite_pattern(wfd, 0, NW * SZ, 0);
		for (int i = 0; i < NR; i++)
			io[i] = t_batch_io(CUFILE_READ, rfh, (void *)(uintptr_t)d, SZ, (off_t)(i * SZ), (off_t)read_at(i),
					   (void *)(uintptr_t)(i + 1));
		for (int i = 0; i < NW; i++)
			io[NR + i] = t_batch_io(CUFILE_WRITE, wfh, (void *)(uintptr_t)d, SZ, (off_t)(i * SZ),
						(off_t)write_at(i), (void *)(uintptr_t)(NR + i + 1));
		unsigned long before = fakecuda_call_count(func);
		fakecuda_fail_nth(func, nth, CUDA_ERROR_UNKNOWN);
		if (also)
			fakecuda_fail_always(also, CUDA_ERROR_UNKNOWN);
		T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
		t_batch_collect(b, N, ev);
		bool hit = fakecuda_call_count(func) - before >= nth;
		fakecuda_reset_faults();
		CUfileStatus_t st[N];
		for (int k = 0; k < N; k++) {
			int c = (int)(uintptr_t)ev[k].cookie - 1;
			T_ASSERT(c >= 0 && c < N);
			st[c] = ev[k].status;
			if (ev[k].status == CUFILE_COMPLETE)
				T_EQ_U(ev[k].ret, SZ);
			else
				T_EQ((ssize_t)ev[k].ret, -CU_FILE_CUDA_DRIVER_ERROR);
		}
		/* Look twice: nothing may land after the events came.  When
		 * every way to wait fails (also != NULL), nobody can know when
		 * queued copies end: let them end before looking. */
		if (also)
			T_CU(cuCtxSynchronize());
		for (int look = 0; look < 2; look++) {
			if (look)
				usleep(WATCH_US);
			t_dev_get(got, d, DLEN);
			for (int i = 0; i < NR; i++) {
				uint8_t *p = got + read_at(i);
				if (st[i] == CUFILE_COMPLETE) {
					if (t_check_pattern(p, SZ, (uint64_t)(i * SZ), 0, "complete read"))
						T_FAIL("read %d reported complete without its data", i);
				} else {
					/* A failed read may have stored its own bytes, nothing else. */
					for (size_t k = 0; k < SZ; k++)
						if (p[k] != T_POISON && p[k] != t_pat((uint64_t)(i * SZ + k), 0))
							T_FAIL("failed read %d stored a wrong byte at %zu", i, k);
				}
				memcpy(image + read_at(i), p, SZ); /* judged above */
			}
			if (memcmp(got, image, DLEN) != 0)
				T_FAIL("device memory outside the read entries changed");
		}
		T_EQ_U(t_pread_full(wfd, fbuf, NW * SZ, 0), NW * SZ);
		for (int i = 0; i < NW; i++) {
			uint32_t seed = st[NR + i] == CUFILE_COMPLETE ? 9 : 0;
			if (t_check_pattern(fbuf + i * SZ, SZ, (uint64_t)(i * SZ), seed, "written range"))
				T_FAIL("write %d (%s) left the wrong data", i,
				       seed ? "complete" : "failed: must write nothing");
		}
		if (!hit)
			break;
		hits++;
	}
	t_set_case("%s", "");
	if (hits == 0)
		T_FAIL("%s was never called by the batch", func);
	fprintf(stderr, "%s: %d failure points\n", func, hits);
}

/* Reads only (so no write's copy makes the buffer wait anyway), four
 * stretches of device memory: the grouped call fails after queuing its
 * first copy and every single copy fails too.  Every entry fails, and the
 * copy the failed call queued must still be waited for before they are
 * reported: nothing may change in device memory after the events. */
static void partial_group_round(CUfileBatchHandle_t b, CUfileHandle_t rfh, CUdeviceptr d)
{
	CUfileIOParams_t io[NR];
	CUfileIOEvents_t ev[NR];
	t_set_case("%s", "grouped copy fails after queuing one; single copies fail");
	memset(image, T_POISON, DLEN);
	t_dev_put(d, image, DLEN);
	for (int i = 0; i < NR; i++)
		io[i] = t_batch_io(CUFILE_READ, rfh, (void *)(uintptr_t)d, SZ, (off_t)(i * SZ), (off_t)read_at(i),
				   (void *)(uintptr_t)(i + 1));
	unsigned long g0 = fakecuda_call_count("cuMemcpyBatchAsync_v2");
	fakecuda_fail_nth("cuMemcpyBatchAsync_v2", 1, CUDA_ERROR_UNKNOWN);
	fakecuda_fail_always("cuMemcpyHtoDAsync_v2", CUDA_ERROR_UNKNOWN);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, NR, io, 0));
	t_batch_collect(b, NR, ev);
	fakecuda_reset_faults();
	T_ASSERT(fakecuda_call_count("cuMemcpyBatchAsync_v2") - g0 >= 1);
	for (int k = 0; k < NR; k++)
		T_EQ((ssize_t)ev[k].ret, -CU_FILE_CUDA_DRIVER_ERROR);
	t_dev_get(image, d, DLEN);
	for (int i = 0; i < NR; i++) {
		uint8_t *p = image + read_at(i);
		for (size_t k = 0; k < SZ; k++)
			if (p[k] != T_POISON && p[k] != t_pat((uint64_t)(i * SZ + k), 0))
				T_FAIL("failed read %d stored a wrong byte at %zu", i, k);
	}
	usleep(WATCH_US);
	t_dev_get(got, d, DLEN);
	if (memcmp(got, image, DLEN) != 0)
		T_FAIL("a copy landed after the failed entries were reported");
	t_set_case("%s", "");
}

int main(void)
{
	setenv("OPENCUFILE_ASYNC_THREADS", "4", 1);
	t_cuda_require();
	const char *path = t_make_pattern_file(BIG * BSZ, 0);
	const char *wpath = t_make_pattern_file(NW * SZ, 0);
	int fd = t_open(path, O_RDONLY);
	int wfd = t_open(wpath, O_RDWR);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	CUfileHandle_t wfh = t_register_fd(wfd);
	CUdeviceptr d = t_dev_alloc(BIG * BSZ);
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, BIG));

	/* ---- shared calls; the file stays cached (a page evicted meanwhile
	 * would be read with a system call of its own) */
	struct t_pin pin = t_pin_cached(path, 0, BIG * BSZ);
	big_batch(b, fh, d, "warm-up", false); /* lanes created, threads started */
	big_batch(b, fh, d, "unregistered", true);
	T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)d, BIG * BSZ, 0));
	big_batch(b, fh, d, "registered", true);
	scattered_batch(b, fh, d);
	T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)d));
	t_unpin_cached(&pin);
	T_CU(cuMemFree(d));

	/* ---- CUDA failures, one executor thread so the order is known */
	setenv("OPENCUFILE_BATCH_WORKERS", "1", 1);
	fakecuda_set_stream_delay_us(STREAM_DELAY_US);
	d = t_dev_alloc(DLEN);
	image = malloc(DLEN);
	got = malloc(DLEN);
	fbuf = malloc(NW * SZ);
	T_ASSERT(image && got && fbuf);
	/* A staging buffer of these entries holds a short copy: its event is
	 * polled with cuEventQuery (a long copy's is slept for in
	 * cuEventSynchronize after one query). */
	/* The reads' copies (one run, four stretches of device memory) go
	 * as one grouped call; a failed grouped call (the stand-in queues its
	 * first copy before it fails) falls back to single copies, which the
	 * first round makes fail in turn; partial_group_round fails both. */
	const char *funcs[] = {"cuMemcpyHtoDAsync_v2", "cuMemcpyBatchAsync_v2", "cuMemcpyDtoHAsync_v2",
			       "cuEventRecord",        "cuEventQuery",          "cuCtxPushCurrent_v2",
			       "cuStreamSynchronize"};
	for (size_t k = 0; k < sizeof(funcs) / sizeof(funcs[0]); k++) {
		/* The stream is synchronised after a failed wait. */
		bool sync = !strcmp(funcs[k], "cuStreamSynchronize");
		bool single = !strcmp(funcs[k], "cuMemcpyHtoDAsync_v2");
		fault_round(b, fh, wfh, wfd, d, funcs[k],
			    sync ? "cuEventQuery" : single ? "cuMemcpyBatchAsync_v2" : NULL);
	}
	partial_group_round(b, fh, d);

	cuFileBatchIODestroy(b);
	cuFileHandleDeregister(fh);
	cuFileHandleDeregister(wfh);
	T_CUFILE_OK(cuFileDriverClose());
	fakecuda_set_stream_delay_us(0);
	T_CU(cuMemFree(d));
	T_EQ_U(fakecuda_live_pinned_allocations(), 0);
	T_EQ_U(fakecuda_live_streams(), 0);
	free(image);
	free(got);
	free(fbuf);
	close(fd);
	close(wfd);
	return T_EXIT_PASS;
}
