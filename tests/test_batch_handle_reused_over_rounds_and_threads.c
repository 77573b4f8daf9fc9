/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One batch handle serves many Submit/GetStatus rounds, with partial
 * reaping (GetStatus with min_nr 1 and a small capacity) so that a later
 * Submit refills exactly the entries already reported; several threads run
 * their own batches on shared handles at once.  Every round's data and
 * cookies are right.
 */
#include "async_test_util.h"

#define NB 16
#define SZ (16 * T_KIB + 3)
#define FLEN (4 * T_MIB)
#define ROUNDS 40
#define THREADS 4

static CUfileHandle_t fh;

struct slot {
	uint8_t *buf;
	off_t foff;
	bool busy;
};

static void check_event(const CUfileIOEvents_t *e, struct slot *slots)
{
	uintptr_t c = (uintptr_t)e->cookie;
	T_ASSERT(c >= 1 && c <= NB);
	struct slot *s = &slots[c - 1];
	T_ASSERT(s->busy);
	T_EQ(e->status, CUFILE_COMPLETE);
	T_EQ_U(e->ret, SZ);
	if (t_check_pattern(s->buf, SZ, (uint64_t)s->foff, 0, "batch read"))
		T_FAIL("entry %u: wrong data", (unsigned)c);
	s->busy = false;
}

static void *worker(void *arg)
{
	unsigned seedv = (unsigned)(uintptr_t)arg;
	struct slot slots[NB];
	for (int i = 0; i < NB; i++) {
		slots[i].buf = malloc(SZ);
		T_ASSERT(slots[i].buf != NULL);
		slots[i].busy = false;
	}
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, NB));
	unsigned outstanding = 0;
	for (int round = 0; round < ROUNDS; round++) {
		/* Refill every free entry with a new offset. */
		CUfileIOParams_t io[NB];
		unsigned n = 0;
		for (int i = 0; i < NB; i++) {
			if (slots[i].busy)
				continue;
			slots[i].foff = (off_t)(rand_r(&seedv) % (FLEN - SZ));
			slots[i].busy = true;
			memset(slots[i].buf, T_POISON, SZ);
			io[n++] = t_batch_io(CUFILE_READ, fh, slots[i].buf, SZ, slots[i].foff, 0,
					     (void *)(uintptr_t)(i + 1));
		}
		T_EQ(n + outstanding, NB);
		if (n)
			T_CUFILE_OK(cuFileBatchIOSubmit(b, n, io, 0));
		outstanding = NB;
		/* The batch is full now: one more entry does not fit. */
		CUfileIOParams_t extra = t_batch_io(CUFILE_READ, fh, slots[0].buf, SZ, 0, 0, NULL);
		T_CUFILE(cuFileBatchIOSubmit(b, 1, &extra, 0), CU_FILE_BATCH_FULL);
		/* Reap a few (at least one), leave the rest for later rounds. */
		CUfileIOEvents_t ev[NB];
		unsigned nr = 1 + (unsigned)(rand_r(&seedv) % 5);
		T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, NULL));
		T_ASSERT(nr >= 1 && nr <= 5);
		for (unsigned i = 0; i < nr; i++)
			check_event(&ev[i], slots);
		outstanding -= nr;
	}
	CUfileIOEvents_t ev[NB];
	t_batch_collect(b, outstanding, ev);
	for (unsigned i = 0; i < outstanding; i++)
		check_event(&ev[i], slots);
	/* Nothing is left: GetStatus with min_nr > 0 returns at once. */
	unsigned nr = NB;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, NB, &nr, ev, NULL));
	T_EQ(nr, 0);
	cuFileBatchIODestroy(b);
	for (int i = 0; i < NB; i++)
		free(slots[i].buf);
	return NULL;
}

int main(void)
{
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	fh = t_register_fd(fd);

	worker((void *)(uintptr_t)1); /* alone first */

	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		T_ASSERT(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 2)) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	close(fd);
	return T_EXIT_PASS;
}
