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

/* Lets (intptr_t)arg more reads finish (-1: all) after a pause that gives
 * the caller time to start waiting; no result depends on its length. */
static void *release_later(void *arg)
{
	t_sleep_ms(50);
	t_gate_allow(&gate, (long)(intptr_t)arg);
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
	/* The timeout is the behaviour under test: the call must have waited
	 * it out (a lower bound, which load cannot break), and returned; the
	 * upper bound is generous (50 times the timeout) so that only a call
	 * that ignored the timeout fails it. */
	T_ASSERT(dt >= 0.09 && dt < 5);

	/* min_nr 0: no wait at all.  No timeout is given and the gate is shut,
	 * so a call that waited for anything would never return. */
	nr = N;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 0, &nr, ev, NULL));
	T_EQ(nr, 0);

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

	/* Two entries may finish; min_nr 3 with a timeout: each call returns
	 * what there is (fewer than 3) once the timeout passes.  The two are
	 * collected over as many calls as they take to complete, however
	 * slowly; every call must have waited its timeout, as fewer than
	 * min_nr were ready (a lower bound: load only lengthens it). */
	t_gate_allow(&gate, 2);
	unsigned got = 0;
	for (int calls = 0; got < 2; calls++) {
		if (calls == 300)
			T_FAIL("only %u of 2 released entries completed in 300 calls", got);
		nr = N - got;
		t0 = t_now_s();
		T_CUFILE_OK(cuFileBatchIOGetStatus(b, 3, &nr, ev + got, &to));
		T_ASSERT(t_now_s() - t0 >= 0.09);
		got += nr;
		T_LE_U(got, 2);
	}
	for (unsigned i = 0; i < got; i++) {
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, SZ);
	}
	T_EQ(t_gate_done(&gate), 2);

	/* tv_nsec = 5e9 is five seconds, not an error: the call waits for the
	 * entry, let through only while it waits (or before, under load).  A
	 * timeout taken as 0 would return no event.  min_nr ends the wait
	 * before the timeout: here the time bound is the behaviour under test,
	 * and any bound under 5 s tells the two apart; 4 s leaves the margin. */
	struct timespec big = {0, 5000000000L};
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, release_later, (void *)(intptr_t)1) == 0);
	nr = N;
	t0 = t_now_s();
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, &big));
	T_EQ(nr, 1);
	T_ASSERT(t_now_s() - t0 < 4);
	pthread_join(th, NULL);

	/* *nr caps the events returned; min_nr above *nr waits for *nr only. */
	t_gate_allow(&gate, 2);
	nr = 1;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 4, &nr, ev, NULL));
	T_EQ(nr, 1);
	nr = 1;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, NULL));
	T_EQ(nr, 1);

	/* NULL timeout waits: the rest are let through later, from another
	 * thread; min_nr (100) above what is outstanding (3) waits for those
	 * 3.  When the call starts, the gate holds all 3 (unless the other
	 * thread was faster), so returning all 3 shows that it waited. */
	T_ASSERT(pthread_create(&th, NULL, release_later, (void *)(intptr_t)-1) == 0);
	nr = N;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 100, &nr, ev, NULL));
	T_EQ(nr, 3);
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
