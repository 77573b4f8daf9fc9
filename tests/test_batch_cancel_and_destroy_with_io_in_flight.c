/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cancel reports CUFILE_CANCELED (through later GetStatus calls) for every
 * entry not started, and waits for the entries already running: when they
 * finish within its bound (OPENCUFILE_BATCH_CANCEL_WAIT_MS, 3 s here) it
 * returns success once both reads have returned, and they report
 * CUFILE_COMPLETE; when they are held past the bound it returns
 * CU_FILE_INTERNAL_BATCH_CANCEL_ERROR after the bound, they still complete
 * and report later, and a Cancel after that succeeds at once.  The batch is
 * reusable afterwards.  Destroy with entries running and queued cancels the
 * queued ones and returns once the running ones finished, so the
 * application may free its buffers right after it.  Driver close with a
 * batch in flight cancels what has not started, waits for what runs, and
 * returns.  Two executor threads (OPENCUFILE_ASYNC_THREADS=2) and a
 * userspace file system whose reads wait for the test keep the entries
 * where the test wants them.
 */
#include "async_test_util.h"

#define N 16
#define SZ 4096

static struct t_gate gate;

static void *open_gate_later(void *arg)
{
	t_sleep_ms((long)(uintptr_t)arg);
	t_gate_allow(&gate, -1);
	return NULL;
}

static void submit_all(CUfileBatchHandle_t b, CUfileHandle_t fh, uint8_t *buf)
{
	CUfileIOParams_t io[N];
	for (int i = 0; i < N; i++)
		io[i] = t_batch_io(CUFILE_READ, fh, buf, SZ, (off_t)i * SZ, (off_t)i * SZ, (void *)(uintptr_t)(i + 1));
	T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
}

int main(void)
{
	setenv("OPENCUFILE_ASYNC_THREADS", "2", 1);
	setenv("OPENCUFILE_BATCH_CANCEL_WAIT_MS", "3000", 1);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileSetStatsLevel(1));
	T_CUFILE_OK(cuFileStatsReset());
	CUfileHandle_t fh = t_gate_open(&gate, 1 * T_MIB, 5);
	uint8_t *buf = malloc(N * SZ);
	T_ASSERT(buf != NULL);
	CUfileIOEvents_t ev[N];

	/* ---- cancel: 2 running and held past the bound, 14 queued */
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, N));
	submit_all(b, fh, buf);
	t_gate_wait_entered(&gate, 2);
	double t0 = t_now_s();
	T_CUFILE(cuFileBatchIOCancel(b), CU_FILE_INTERNAL_BATCH_CANCEL_ERROR);
	T_GE((long)((t_now_s() - t0) * 1000), 2900); /* it waited for them */
	t_batch_collect(b, N - 2, ev);
	for (int i = 0; i < N - 2; i++) {
		T_EQ(ev[i].status, CUFILE_CANCELED);
		T_EQ_U(ev[i].ret, 0);
	}
	T_EQ(t_gate_entered(&gate), 2); /* cancelled entries never reached the file */
	unsigned nr = N;
	struct timespec zero = {0, 0};
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, &zero));
	T_EQ(nr, 0); /* the running two are still running */
	t_gate_allow(&gate, 2);
	t_batch_collect(b, 2, ev);
	for (int i = 0; i < 2; i++) {
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, SZ);
	}
	/* Nothing runs any more: a second Cancel says so at once. */
	t0 = t_now_s();
	T_CUFILE_OK(cuFileBatchIOCancel(b));
	T_LT((long)((t_now_s() - t0) * 1000), 1000);
	CUfileStatsLevel1_t st;
	T_CUFILE_OK(cuFileGetStatsL1(&st));
	T_EQ(st.batch_cancel_ops.ok, 1);
	T_EQ(st.batch_cancel_ops.err, 1);
	T_EQ(st.batch_complete_ops.ok, 2);
	T_EQ(st.batch_complete_ops.err, N - 2);

	/* ---- cancel: 2 running that finish while Cancel waits, 14 queued */
	pthread_mutex_lock(&gate.lock);
	gate.entered = gate.done = 0;
	pthread_mutex_unlock(&gate.lock);
	memset(buf, T_POISON, N * SZ);
	submit_all(b, fh, buf);
	t_gate_wait_entered(&gate, 2);
	pthread_t opener;
	T_ASSERT(pthread_create(&opener, NULL, open_gate_later, (void *)(uintptr_t)100) == 0);
	T_CUFILE_OK(cuFileBatchIOCancel(b));
	/* It returned only after both reads returned: the buffers of the whole
	 * round may be reused now.  A cancel that did not wait would find them
	 * held (the gate opens 100 ms later, from the other thread). */
	T_EQ(t_gate_done(&gate), 2);
	pthread_join(opener, NULL);
	t_batch_collect(b, N, ev);
	int canceled = 0;
	for (int i = 0; i < N; i++) {
		unsigned c = (unsigned)(uintptr_t)ev[i].cookie;
		T_ASSERT(c >= 1 && c <= N);
		if (ev[i].status == CUFILE_CANCELED) {
			T_EQ_U(ev[i].ret, 0);
			canceled++;
			continue;
		}
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, SZ);
		if (t_check_pattern(buf + (size_t)(c - 1) * SZ, SZ, (uint64_t)(c - 1) * SZ, 5,
				    "ran before the cancel"))
			T_FAIL("entry %u", c);
	}
	T_EQ(canceled, N - 2);
	T_EQ(t_gate_entered(&gate), 2);

	/* The batch works again after a cancel. */
	t_gate_allow(&gate, -1);
	submit_all(b, fh, buf);
	t_batch_collect(b, N, ev);
	for (int i = 0; i < N; i++)
		T_EQ(ev[i].status, CUFILE_COMPLETE);
	for (int i = 0; i < N; i++)
		if (t_check_pattern(buf + (size_t)i * SZ, SZ, (uint64_t)i * SZ, 5, "entry data"))
			T_FAIL("entry %d", i);

	/* ---- destroy with entries running and queued */
	pthread_mutex_lock(&gate.lock);
	gate.permits = 0;
	gate.entered = gate.done = 0;
	pthread_mutex_unlock(&gate.lock);
	CUfileBatchHandle_t d;
	T_CUFILE_OK(cuFileBatchIOSetUp(&d, N));
	submit_all(d, fh, buf);
	t_gate_wait_entered(&gate, 2);
	T_ASSERT(pthread_create(&opener, NULL, open_gate_later, (void *)(uintptr_t)100) == 0);
	cuFileBatchIODestroy(d);
	/* It returned only after the running two finished (their buffers may
	 * be freed now): both reads have returned.  The gate opens from the
	 * other thread while destroy waits, so a destroy that did not wait
	 * would find them still held.  The rest were cancelled and never
	 * reached the file. */
	T_EQ(t_gate_done(&gate), 2);
	pthread_join(opener, NULL);
	T_CUFILE(cuFileBatchIOCancel(d), CU_FILE_INVALID_VALUE);
	t_sleep_ms(50);
	T_EQ(t_gate_entered(&gate), 2);

	/* ---- driver close with a batch in flight */
	pthread_mutex_lock(&gate.lock);
	gate.permits = 0;
	gate.entered = gate.done = 0;
	pthread_mutex_unlock(&gate.lock);
	CUfileBatchHandle_t c;
	T_CUFILE_OK(cuFileBatchIOSetUp(&c, N));
	submit_all(c, fh, buf);
	t_gate_wait_entered(&gate, 2);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, open_gate_later, (void *)(uintptr_t)100) == 0);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(t_gate_done(&gate), 2); /* it waited for the running reads */
	pthread_join(th, NULL);
	T_EQ(t_gate_entered(&gate), 2);
	T_EQ(cuFileUseCount(), 0);
	/* The batch went with the driver. */
	T_CUFILE_OK(cuFileDriverOpen());
	nr = N;
	T_CUFILE(cuFileBatchIOGetStatus(c, 0, &nr, ev, NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE_OK(cuFileDriverClose());

	free(buf);
	return T_EXIT_PASS;
}
