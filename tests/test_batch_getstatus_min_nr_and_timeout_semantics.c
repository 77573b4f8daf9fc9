/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileBatchIOGetStatus waits until min_nr events are available or the
 * timeout passes, whichever comes first: with fewer done it returns what
 * there is when the timeout expires (success, possibly 0 events); a NULL
 * timeout waits; min_nr 0 never waits; min_nr above what is outstanding
 * waits only for what is outstanding; *nr on input caps the events
 * returned.  Out-of-range timespec fields (tv_nsec >= 1e9, negative values,
 * all bits set) are tolerated, not an error.  Entries are held in a
 * userspace file system whose reads wait for the test's permission.
 */
#include "async_test_util.h"

#define N 8
#define SZ 4096

static struct t_gate gate;

static void *open_gate_later(void *arg)
{
	t_sleep_ms((long)(uintptr_t)arg);
	t_gate_allow(&gate, -1);
	return NULL;
}

int main(void)
{
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_gate_open(&gate, 1 * T_MIB, 3);
	uint8_t *buf = malloc(N * SZ);
	T_ASSERT(buf != NULL);
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, N));
	CUfileIOParams_t io[N];
	for (int i = 0; i < N; i++)
		io[i] = t_batch_io(CUFILE_READ, fh, buf, SZ, (off_t)i * SZ, (off_t)i * SZ, (void *)(uintptr_t)(i + 1));
	T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
	CUfileIOEvents_t ev[N];

	/* Nothing can complete: the timeout expires with 0 events. */
	struct timespec to = {0, 100 * 1000 * 1000};
	unsigned nr = N;
	double t0 = t_now_s();
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, &to));
	double dt = t_now_s() - t0;
	T_EQ(nr, 0);
	T_ASSERT(dt >= 0.09 && dt < 5);

	/* min_nr 0: no wait at all. */
	nr = N;
	t0 = t_now_s();
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 0, &nr, ev, NULL));
	T_EQ(nr, 0);
	T_ASSERT(t_now_s() - t0 < 1);

	/* Out-of-range fields are not an error: negative -> 0, all bits set
	 * (as when a caller passes a pointer to something else). */
	struct timespec neg = {-5, -7};
	nr = N;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, &neg));
	T_EQ(nr, 0);
	struct timespec junk;
	memset(&junk, 0xff, sizeof(junk));
	nr = N;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, &junk));
	T_EQ(nr, 0);

	/* Two entries may finish; min_nr 3 with a timeout: returns the two
	 * when the timeout passes. */
	t_gate_allow(&gate, 2);
	nr = N;
	t0 = t_now_s();
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 3, &nr, ev, &to));
	/* Both had time to finish within 100 ms (the file system is memory). */
	T_EQ(nr, 2);
	T_ASSERT(t_now_s() - t0 >= 0.09);
	for (unsigned i = 0; i < nr; i++) {
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, SZ);
	}

	/* tv_nsec = 5e9 is five seconds, not an error; min_nr is met first. */
	t_gate_allow(&gate, 1);
	struct timespec big = {0, 5000000000L};
	nr = N;
	t0 = t_now_s();
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, &big));
	T_EQ(nr, 1);
	T_ASSERT(t_now_s() - t0 < 4);

	/* *nr caps the events returned; min_nr above *nr waits for *nr only. */
	t_gate_allow(&gate, 2);
	nr = 1;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 4, &nr, ev, NULL));
	T_EQ(nr, 1);
	nr = 1;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, NULL));
	T_EQ(nr, 1);

	/* NULL timeout waits: the rest are let through after 150 ms; min_nr
	 * (100) above what is outstanding (3) waits for those 3. */
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, open_gate_later, (void *)(uintptr_t)150) == 0);
	nr = N;
	t0 = t_now_s();
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 100, &nr, ev, NULL));
	dt = t_now_s() - t0;
	T_EQ(nr, 3);
	T_ASSERT(dt >= 0.1);
	pthread_join(th, NULL);
	for (unsigned i = 0; i < nr; i++)
		T_EQ(ev[i].status, CUFILE_COMPLETE);
	for (int i = 0; i < N; i++)
		if (t_check_pattern(buf + (size_t)i * SZ, SZ, (uint64_t)i * SZ, 3, "entry data"))
			T_FAIL("entry %d", i);

	cuFileBatchIODestroy(b);
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	free(buf);
	return T_EXIT_PASS;
}
