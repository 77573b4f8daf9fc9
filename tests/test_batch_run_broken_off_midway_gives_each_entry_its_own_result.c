/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library) Batch read entries whose file ranges follow each
 * other are read with one merged read (batch_io.c).  When that read breaks
 * off midway — it comes back short and the read that would continue it
 * fails, as a disk error inside a large read does — the entries it did not
 * cover each get what a read of that entry alone gives, never a share of
 * the broken count:
 *   - the merged read short, its continuations EIO, each entry alone fine:
 *     every entry completes with all its bytes (none reports a short count
 *     in the middle of the file, none reports 0);
 *   - the same, with each entry alone failing too: the covered entries
 *     complete, every other one fails with EIO and leaves its device bytes
 *     untouched;
 *   - a run across end of file, no fault: full, short and 0-byte entries,
 *     as before;
 *   - O_DIRECT, entries not on block boundaries: an entry's read alone
 *     fails and scribbles over its aligned range, into the block it shares
 *     with the entry before it, which was read already: that entry is read
 *     again, and its device bytes are the file's.
 * One batch executor (OPENCUFILE_BATCH_WORKERS=1), a buffered handle read
 * with pread (no O_DIRECT twin, psync backend), so that the merged read is
 * one pread loop whose calls the fault rules count.  Device memory is
 * compared as a whole with its expected image.
 */
#include "async_test_util.h"
#include "fault.h"

#define SZ (64 * T_KIB)
#define NENT 6
#define FLEN (NENT * SZ)
#define POISON 0xA5

static CUfileBatchHandle_t batch;
static CUdeviceptr dev;
static uint8_t image[NENT * SZ], got[NENT * SZ];

static void poison(void)
{
	memset(image, POISON, sizeof(image));
	t_dev_fill(dev, POISON, sizeof(image));
}

/* Submits NENT reads of esz bytes (at most SZ) at file offset foff0 + i *
 * esz into dev + i * SZ; res[i] gets entry i's result (bytes, or -errno /
 * -CU_FILE_* when it failed). */
static void run_sized(CUfileHandle_t fh, off_t foff0, size_t esz, long *res)
{
	CUfileIOParams_t io[NENT];
	CUfileIOEvents_t ev[NENT];
	for (unsigned i = 0; i < NENT; i++)
		io[i] = t_batch_io(CUFILE_READ, fh, (void *)(uintptr_t)dev, esz, foff0 + (off_t)(i * esz),
				   (off_t)(i * SZ), (void *)(uintptr_t)(i + 1));
	T_CUFILE_OK(cuFileBatchIOSubmit(batch, NENT, io, 0));
	t_batch_collect(batch, NENT, ev);
	for (unsigned k = 0; k < NENT; k++) {
		uintptr_t c = (uintptr_t)ev[k].cookie;
		T_ASSERT(c >= 1 && c <= NENT);
		if (ev[k].status == CUFILE_COMPLETE)
			res[c - 1] = (long)ev[k].ret;
		else if (ev[k].status == CUFILE_FAILED)
			res[c - 1] = (long)(ssize_t)ev[k].ret;
		else
			T_FAIL("entry %lu: status %#x", (unsigned long)c - 1, (unsigned)ev[k].status);
	}
}

static void run(CUfileHandle_t fh, off_t foff0, long *res)
{
	run_sized(fh, foff0, SZ, res);
}

/* The expected image gets entry i's bytes: n bytes of the file from foff. */
static void expect_bytes(unsigned i, off_t foff, size_t n)
{
	for (size_t j = 0; j < n; j++)
		image[i * SZ + j] = t_pat((uint64_t)foff + j, 0);
}

static void check_image(const char *what)
{
	t_dev_get(got, dev, sizeof(got));
	for (size_t j = 0; j < sizeof(got); j++)
		if (got[j] != image[j])
			T_FAIL("%s: device byte %zu (entry %zu) is %#x, expected %#x", what, j, j / SZ,
			       got[j], image[j]);
}

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDWR);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	dev = t_dev_alloc(sizeof(image));
	T_CUFILE_OK(cuFileBatchIOSetUp(&batch, NENT));
	long res[NENT];

	/* ---- broken off midway, each entry alone fine.  The merged read
	 * of 384 KiB comes back 200 KiB short: entries 0 and 1 covered,
	 * entry 2 in part, 3-5 not at all. */
	poison();
	unsigned long calls0 = ocf_fault_calls(OCF_FAULT_PREAD), hits0 = ocf_fault_hits(OCF_FAULT_PREAD);
	ocf_fault_short_then_fail_nth(OCF_FAULT_PREAD, 1, 200 * T_KIB, EIO, 2);
	run(fh, 0, res);
	ocf_fault_reset();
	for (unsigned i = 0; i < NENT; i++) {
		T_EQ(res[i], (long)SZ);
		expect_bytes(i, (off_t)(i * SZ), SZ);
	}
	check_image("broken off, alone fine");
	/* The fault was reached (the short read and at least one failed
	 * continuation: the file layer retries a short transfer once), and
	 * each of the four uncovered entries was read again alone. */
	unsigned long hits = ocf_fault_hits(OCF_FAULT_PREAD) - hits0;
	T_ASSERT(hits >= 2);
	T_ASSERT(ocf_fault_calls(OCF_FAULT_PREAD) - calls0 >= hits + 4);

	/* ---- broken off midway, and each uncovered entry alone fails too:
	 * the short read, then every later pread fails.  Entries 0 and 1
	 * complete; 2-5 fail with EIO and their device bytes stay as they
	 * were. */
	poison();
	hits0 = ocf_fault_hits(OCF_FAULT_PREAD);
	ocf_fault_short_then_fail_nth(OCF_FAULT_PREAD, 1, 200 * T_KIB, EIO, 0);
	run(fh, 0, res);
	ocf_fault_reset();
	T_ASSERT(ocf_fault_hits(OCF_FAULT_PREAD) - hits0 >= 2 + 4); /* the four entries alone failed too */
	for (unsigned i = 0; i < NENT; i++) {
		if (i < 2) {
			T_EQ(res[i], (long)SZ);
			expect_bytes(i, (off_t)(i * SZ), SZ);
		} else {
			T_EQ(res[i], -(long)EIO);
		}
	}
	check_image("broken off, alone failing");

	/* ---- the next submission, no fault: every byte */
	poison();
	run(fh, 0, res);
	for (unsigned i = 0; i < NENT; i++) {
		T_EQ(res[i], (long)SZ);
		expect_bytes(i, (off_t)(i * SZ), SZ);
	}
	check_image("after the faults");

	/* ---- a run across end of file: 2.5 entries of file, no fault */
	poison();
	run(fh, (off_t)(FLEN - 5 * SZ / 2), res);
	for (unsigned i = 0; i < NENT; i++) {
		off_t foff = (off_t)(FLEN - 5 * SZ / 2) + (off_t)(i * SZ);
		size_t want = foff >= (off_t)FLEN	   ? 0
			      : (size_t)(FLEN - foff) < SZ ? (size_t)(FLEN - foff)
							   : SZ;
		T_EQ(res[i], (long)want);
		expect_bytes(i, foff, want);
	}
	check_image("across end of file");

	/* ---- O_DIRECT, entries not on block boundaries, every read direct
	 * (OPENCUFILE_DIRECT_READS_FROM_CACHE=0): the merged read breaks off
	 * after entries 0 and 1, entry 2's read alone fails and leaves its
	 * aligned range scribbled over — the block it shares with entry 1
	 * included.  Entry 1, already read, is read again alone, so its bytes
	 * on the device are the file's; entry 2 fails; the others complete. */
	int dfd = t_odirect_supported(path) ? t_open(path, O_RDONLY | O_DIRECT) : -1;
	if (dfd >= 0) {
		const size_t esz = 60 * T_KIB + 100;
		const off_t foff0 = 300;
		CUfileHandle_t dfh = t_register_fd(dfd);
		poison();
		hits0 = ocf_fault_hits(OCF_FAULT_PREAD);
		ocf_fault_scribble_failed_reads(1);
		/* The merged read: 364 KiB of blocks, 200 KiB short (whole
		 * blocks: 164 KiB, entries 0 and 1 and part of 2); its
		 * continuation and the retry of the short transfer fail, and so
		 * does entry 2's read alone. */
		ocf_fault_short_then_fail_nth(OCF_FAULT_PREAD, 1, 200 * T_KIB, EIO, 3);
		run_sized(dfh, foff0, esz, res);
		ocf_fault_reset();
		T_ASSERT(ocf_fault_hits(OCF_FAULT_PREAD) - hits0 == 4);
		for (unsigned i = 0; i < NENT; i++) {
			if (i == 2) {
				T_EQ(res[i], -(long)EIO);
			} else {
				T_EQ(res[i], (long)esz);
				expect_bytes(i, foff0 + (off_t)(i * esz), esz);
			}
		}
		check_image("O_DIRECT, an entry's read alone failing over the block it shares");
		cuFileHandleDeregister(dfh);
		close(dfd);
	} else {
		fprintf(stderr, "no O_DIRECT here: the O_DIRECT case not run\n");
	}

	cuFileBatchIODestroy(batch);
	T_CU(cuMemFree(dev));
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
