/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Failures of single entries (unknown handle, NULL buffer, a read on a
 * write-only descriptor) are reported in that entry's event (CUFILE_FAILED,
 * ret = the negative error as size_t) while the other entries complete;
 * reads at and across end of file complete short.  Submit itself only
 * fails for malformed requests (wrong mode or opcode, nr 0 or above the
 * set-up size, too many entries in flight), SetUp for sizes outside
 * 1..io_batchsize, and every call for a destroyed, forged or stale batch.
 */
#include "async_test_util.h"

#define FLEN (100 * T_KIB)
#define SZ (64 * T_KIB)

int main(void)
{
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	int wfd = t_open(path, O_WRONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	CUfileHandle_t wfh = t_register_fd(wfd);
	uint8_t *buf[6];
	for (int i = 0; i < 6; i++) {
		buf[i] = malloc(SZ);
		T_ASSERT(buf[i] != NULL);
		memset(buf[i], T_POISON, SZ);
	}

	/* ---- SetUp limits */
	CUfileDrvProps_t props;
	T_CUFILE_OK(cuFileDriverGetProperties(&props));
	CUfileBatchHandle_t b;
	T_CUFILE(cuFileBatchIOSetUp(&b, 0), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileBatchIOSetUp(&b, props.max_batch_io_size + 1), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileBatchIOSetUp(NULL, 4), CU_FILE_INVALID_VALUE);
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, props.max_batch_io_size));
	cuFileBatchIODestroy(b);

	/* ---- per-entry failures */
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 6));
	CUfileHandle_t forged = (CUfileHandle_t)(uintptr_t)0x7777777;
	CUfileIOParams_t io[6] = {
	    t_batch_io(CUFILE_READ, fh, buf[0], SZ, 0, 0, (void *)1),         /* fine */
	    t_batch_io(CUFILE_READ, forged, buf[1], SZ, 0, 0, (void *)2),     /* unknown handle */
	    t_batch_io(CUFILE_READ, fh, NULL, SZ, 0, 0, (void *)3),           /* NULL buffer */
	    t_batch_io(CUFILE_READ, fh, buf[3], SZ, 64 * T_KIB, 0, (void *)4), /* across EOF */
	    t_batch_io(CUFILE_READ, fh, buf[4], SZ, 200 * T_KIB, 0, (void *)5), /* past EOF */
	    t_batch_io(CUFILE_READ, wfh, buf[5], SZ, 0, 0, (void *)6),        /* write-only fd */
	};
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 6, io, 0));
	CUfileIOEvents_t ev[6];
	t_batch_collect(b, 6, ev);
	bool seen[7] = {false};
	for (int i = 0; i < 6; i++) {
		uintptr_t c = (uintptr_t)ev[i].cookie;
		T_ASSERT(c >= 1 && c <= 6 && !seen[c]);
		seen[c] = true;
		t_set_case("entry %u: status %#x ret %zd", (unsigned)c, ev[i].status, (ssize_t)ev[i].ret);
		switch (c) {
		case 1:
			T_EQ(ev[i].status, CUFILE_COMPLETE);
			T_EQ_U(ev[i].ret, SZ);
			T_ASSERT(t_check_pattern(buf[0], SZ, 0, 0, "entry 1") == 0);
			break;
		case 2:
			T_EQ(ev[i].status, CUFILE_FAILED);
			T_EQ((ssize_t)ev[i].ret, -EBADF);
			T_ASSERT(t_check_fill(buf[1], SZ, T_POISON, "entry 2") == 0);
			break;
		case 3:
			T_EQ(ev[i].status, CUFILE_FAILED);
			T_EQ((ssize_t)ev[i].ret, -EINVAL);
			break;
		case 4:
			T_EQ(ev[i].status, CUFILE_COMPLETE);
			T_EQ_U(ev[i].ret, FLEN - 64 * T_KIB);
			T_ASSERT(t_check_pattern(buf[3], FLEN - 64 * T_KIB, 64 * T_KIB, 0, "entry 4") == 0);
			T_ASSERT(t_check_fill(buf[3] + FLEN - 64 * T_KIB, SZ - (FLEN - 64 * T_KIB), T_POISON,
					      "entry 4 past EOF") == 0);
			break;
		case 5:
			T_EQ(ev[i].status, CUFILE_COMPLETE);
			T_EQ_U(ev[i].ret, 0);
			break;
		case 6:
			T_EQ(ev[i].status, CUFILE_FAILED);
			T_EQ((ssize_t)ev[i].ret, -EBADF);
			break;
		}
	}
	t_set_case("%s", "");

	/* ---- malformed submissions fail as a whole and queue nothing */
	CUfileIOParams_t bad = io[0];
	bad.mode = (CUfileBatchMode_t)0;
	T_CUFILE(cuFileBatchIOSubmit(b, 1, &bad, 0), CU_FILE_INVALID_VALUE);
	bad = io[0];
	bad.opcode = (CUfileOpcode_t)5;
	CUfileIOParams_t two[2] = {io[0], bad};
	T_CUFILE(cuFileBatchIOSubmit(b, 2, two, 0), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileBatchIOSubmit(b, 0, io, 0), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileBatchIOSubmit(b, 1, NULL, 0), CU_FILE_INVALID_VALUE);
	CUfileIOParams_t seven[7];
	for (int i = 0; i < 7; i++)
		seven[i] = io[0];
	T_CUFILE(cuFileBatchIOSubmit(b, 7, seven, 0), CU_FILE_INVALID_VALUE);
	unsigned nr = 6;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 0, &nr, ev, NULL));
	T_EQ(nr, 0); /* nothing was queued by the failed submissions */
	/* 4 + 3 > 6 entries not yet reported: BATCH_FULL, even if done. */
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 4, seven, 0));
	T_CUFILE(cuFileBatchIOSubmit(b, 3, seven, 0), CU_FILE_BATCH_FULL);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 2, seven, 0));
	t_batch_collect(b, 6, ev);
	for (int i = 0; i < 6; i++)
		T_EQ(ev[i].status, CUFILE_COMPLETE);

	/* ---- GetStatus argument errors */
	T_CUFILE(cuFileBatchIOGetStatus(b, 0, NULL, ev, NULL), CU_FILE_INVALID_VALUE);
	nr = 2;
	T_CUFILE(cuFileBatchIOGetStatus(b, 0, &nr, NULL, NULL), CU_FILE_INVALID_VALUE);

	/* ---- stale and forged batch IDs */
	cuFileBatchIODestroy(b);
	cuFileBatchIODestroy(b); /* twice: no crash */
	T_CUFILE(cuFileBatchIOSubmit(b, 1, io, 0), CU_FILE_INVALID_VALUE);
	nr = 1;
	T_CUFILE(cuFileBatchIOGetStatus(b, 0, &nr, ev, NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileBatchIOCancel(b), CU_FILE_INVALID_VALUE);
	CUfileBatchHandle_t b2;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b2, 2)); /* may reuse the slot: new generation */
	T_ASSERT(b2 != b);
	T_CUFILE(cuFileBatchIOCancel(b), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileBatchIOCancel((CUfileBatchHandle_t)(uintptr_t)0xdeadbeef), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileBatchIOCancel(NULL), CU_FILE_INVALID_VALUE);
	cuFileBatchIODestroy((CUfileBatchHandle_t)(uintptr_t)0xdeadbeef);
	cuFileBatchIODestroy(NULL);
	T_CUFILE_OK(cuFileBatchIOCancel(b2)); /* nothing to cancel: fine */
	cuFileBatchIODestroy(b2);

	for (int i = 0; i < 6; i++)
		free(buf[i]);
	cuFileHandleDeregister(fh);
	cuFileHandleDeregister(wfh);
	T_CUFILE_OK(cuFileDriverClose());
	/* Driver closed: the batch calls say so. */
	T_CUFILE(cuFileBatchIOCancel(b2), CU_FILE_DRIVER_NOT_INITIALIZED);
	close(fd);
	close(wfd);
	return T_EXIT_PASS;
}
