/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A batch handle cancelled and submitted again without GetStatus ever
 * reaping the cancelled round (a pool of handles, as NIXL's GDS backend
 * keeps) takes SetUp's full n entries again, and the new round's events
 * are exactly its own, repeatedly on the same handles:
 *   - reads and writes of 128 x 64 KiB into one registered device buffer
 *     (devPtr_base the registered base, the entries at its offsets),
 *     cancelled at once, after some events were reaped, or after all had
 *     completed unreaped; the new round reuses the same buffer right after
 *     Cancel succeeds.  Every byte of buffer and file is the new round's:
 *     nothing of the cancelled round lands after its Cancel returned, and
 *     each block a cancelled write touched holds either its old or its new
 *     contents entirely.
 *   - entries still running at the cancel (reads of a userspace file system
 *     held by the test): Cancel gives up after its bound
 *     (OPENCUFILE_BATCH_CANCEL_WAIT_MS) with
 *     CU_FILE_INTERNAL_BATCH_CANCEL_ERROR, the next Submit of 128 entries
 *     is accepted while they still run and its round completes without
 *     them; when they finish they are never reported, they wrote only their
 *     own range, and a Cancel then succeeds.  Last, Destroy with such an
 *     entry held returns only after it finished.
 */
#include "async_test_util.h"

#define N 128
#define SZ (64 * T_KIB)
#define RBLOCKS 256 /* blocks of the read file */
#define ROUNDS 6
#define NH 2 /* batch handles */
#define GSZ 4096
#define GATE_ROUNDS 4

static struct t_gate gate;
static CUfileHandle_t rfh, wfh, gfh;
static int wfd;
static uint8_t *chk; /* N * SZ of host memory to compare with */

static void *cookie(int round, bool cancelled, int i)
{
	return (void *)(uintptr_t)(((uintptr_t)round + 1) << 16 | (cancelled ? 0x8000u : 0) | (unsigned)i);
}

/* Cancel until it reports that nothing submitted before it runs: a slow
 * machine may need longer than the bound for entries that do move. */
static void cancel_until_idle(CUfileBatchHandle_t b)
{
	for (int tries = 0;; tries++) {
		CUfileError_t st = cuFileBatchIOCancel(b);
		if (st.err == CU_FILE_SUCCESS)
			return;
		T_EQ(st.err, CU_FILE_INTERNAL_BATCH_CANCEL_ERROR);
		if (tries == 100)
			T_FAIL("entries still running after 100 cancels");
	}
}

/* How far the round gets before its cancel: 0 at once, 1 after some
 * events were reaped, 2 after all completed (none reaped). */
static void progress(CUfileBatchHandle_t b, int how)
{
	CUfileIOEvents_t ev[N];
	if (how == 1) {
		unsigned nr = 5;
		T_CUFILE_OK(cuFileBatchIOGetStatus(b, 1, &nr, ev, NULL));
		T_ASSERT(nr >= 1 && nr <= 5);
	} else if (how == 2) {
		t_sleep_ms(30);
	}
}

/* Exactly the n events of the round submitted last, then none. */
static void reap_new_round(CUfileBatchHandle_t b, int round, unsigned n, bool reap_by_polling)
{
	CUfileIOEvents_t ev[N];
	bool seen[N] = {false};
	unsigned got = 0;
	if (reap_by_polling) {
		double t0 = t_now_s();
		struct timespec zero = {0, 0};
		while (got < n) {
			unsigned nr = N;
			T_CUFILE_OK(cuFileBatchIOGetStatus(b, 0, &nr, ev + got, &zero));
			T_LE(got + nr, n);
			got += nr;
			if (t_now_s() - t0 > 30)
				T_FAIL("only %u of %u events in 30 s", got, n);
		}
	} else {
		unsigned nr = n;
		T_CUFILE_OK(cuFileBatchIOGetStatus(b, n, &nr, ev, NULL));
		T_EQ(nr, n);
		got = nr;
	}
	for (unsigned k = 0; k < got; k++) {
		uintptr_t c = (uintptr_t)ev[k].cookie;
		unsigned i = (unsigned)(c & 0x7fff);
		t_set_case("round %d, event %u: cookie %#lx status %#x ret %zd", round, k, (unsigned long)c,
			   ev[k].status, (ssize_t)ev[k].ret);
		T_EQ_PTR(ev[k].cookie, cookie(round, false, (int)i));
		T_ASSERT(i < n && !seen[i]);
		seen[i] = true;
		T_EQ(ev[k].status, CUFILE_COMPLETE);
		T_EQ_U(ev[k].ret, SZ);
	}
	t_set_case("%s", "");
	unsigned nr = N;
	struct timespec zero = {0, 0};
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, 0, &nr, ev, &zero));
	T_EQ(nr, 0);
}

static off_t cancelled_block(int r, int i)
{
	return (off_t)((i + 17 * r) % RBLOCKS);
}
/* Never the block the cancelled round read into the same place (the
 * difference 2i + 5 + 14r is odd). */
static off_t new_block(int r, int i)
{
	return (off_t)((3 * i + 5 + 31 * r) % RBLOCKS);
}

static void read_rounds(CUfileBatchHandle_t b, struct t_mem *m, int h)
{
	CUfileIOParams_t io[N];
	for (int r = 0; r < ROUNDS; r++) {
		int round = h * 100 + r;
		t_mem_fill(m, 0, T_POISON, m->len);
		for (int i = 0; i < N; i++)
			io[i] = t_batch_io(CUFILE_READ, rfh, m->ptr, SZ, cancelled_block(r, i) * (off_t)SZ,
					   (off_t)i * SZ, cookie(round, true, i));
		T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
		progress(b, r % 3);
		cancel_until_idle(b);
		/* The same buffer, other file blocks, the full size, nothing reaped. */
		for (int i = 0; i < N; i++)
			io[i] = t_batch_io(CUFILE_READ, rfh, m->ptr, SZ, new_block(r, i) * (off_t)SZ,
					   (off_t)i * SZ, cookie(round, false, i));
		T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
		reap_new_round(b, round, N, r % 2);
		t_mem_get(m, 0, chk, (size_t)N * SZ);
		for (int i = 0; i < N; i++)
			if (t_check_pattern(chk + (size_t)i * SZ, SZ, (uint64_t)new_block(r, i) * SZ, 0,
					    "read entry"))
				T_FAIL("handle %d round %d: entry %d holds other data than its read", h, r,
				       i);
		t_mem_get(m, (size_t)N * SZ, chk, m->len - (size_t)N * SZ);
		if (t_check_fill(chk, m->len - (size_t)N * SZ, T_POISON, "after the entries"))
			T_FAIL("handle %d round %d: written past the last entry", h, r);
	}
}

static uint32_t wseed; /* the write file's contents: pattern wseed */

/* Every block of the write file holds pattern a, or (when b_ok) pattern b,
 * entirely. */
static void check_write_file(uint32_t a, uint32_t b, bool b_ok, const char *what)
{
	T_EQ_U(t_file_size(wfd), (uint64_t)N * SZ);
	T_EQ_U(t_pread_full(wfd, chk, (size_t)N * SZ, 0), (size_t)N * SZ);
	uint8_t *want = malloc(SZ);
	T_ASSERT(want != NULL);
	for (int i = 0; i < N; i++) {
		const uint8_t *p = chk + (size_t)i * SZ;
		uint64_t off = (uint64_t)i * SZ;
		t_fill_pattern(want, SZ, off, a);
		if (memcmp(p, want, SZ) == 0)
			continue;
		if (!b_ok || t_check_pattern(p, SZ, off, b, what))
			T_FAIL("%s: block %d is neither the old nor the new contents entirely", what, i);
	}
	free(want);
}

static void write_rounds(CUfileBatchHandle_t b, struct t_mem *m, int h)
{
	CUfileIOParams_t io[N];
	for (int r = 0; r < ROUNDS; r++) {
		int round = 50 + h * 100 + r;
		uint32_t cseed = wseed + 1, nseed = wseed + 2;
		t_mem_put_pattern(m, 0, (size_t)N * SZ, 0, cseed);
		for (int i = 0; i < N; i++)
			io[i] = t_batch_io(CUFILE_WRITE, wfh, m->ptr, SZ, (off_t)i * SZ, (off_t)i * SZ,
					   cookie(round, true, i));
		T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
		progress(b, r % 3);
		cancel_until_idle(b);
		check_write_file(wseed, cseed, true, "after the cancelled writes");
		/* New contents in the same buffer right away, nothing reaped. */
		t_mem_put_pattern(m, 0, (size_t)N * SZ, 0, nseed);
		for (int i = 0; i < N; i++)
			io[i] = t_batch_io(CUFILE_WRITE, wfh, m->ptr, SZ, (off_t)i * SZ, (off_t)i * SZ,
					   cookie(round, false, i));
		T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
		reap_new_round(b, round, N, r % 2);
		check_write_file(nseed, 0, false, "after the new round");
		wseed = nseed;
	}
}

/* Rounds with entries held in the userspace file system at the cancel. */
static void straggler_rounds(CUfileBatchHandle_t b, struct t_mem *m)
{
	const size_t glen = 2 * GATE_ROUNDS * 2 * GSZ;
	uint8_t *gbuf = malloc(glen);
	T_ASSERT(gbuf != NULL);
	memset(gbuf, T_POISON, glen);
	CUfileIOParams_t io[N];
	for (int k = 0; k < GATE_ROUNDS; k++) {
		int round = 300 + k;
		pthread_mutex_lock(&gate.lock);
		gate.permits = 0;
		gate.entered = gate.done = 0;
		pthread_mutex_unlock(&gate.lock);
		/* Entries 0 and 64 start the claims of two executor threads
		 * (4 threads, 32 entries a claim) and hold them; two threads stay
		 * free.  Each held read has its own 4 KiB, with a gap after it. */
		for (int i = 0; i < N; i++) {
			if (i == 0 || i == 64) {
				size_t at = (size_t)(k * 2 + (i == 64)) * 2 * GSZ;
				io[i] = t_batch_io(CUFILE_READ, gfh, gbuf, GSZ, (off_t)(at / 2), (off_t)at,
						   cookie(round, true, i));
			} else {
				io[i] = t_batch_io(CUFILE_READ, rfh, m->ptr, SZ,
						   cancelled_block(k, i) * (off_t)SZ, (off_t)i * SZ,
						   cookie(round, true, i));
			}
		}
		T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
		t_gate_wait_entered(&gate, 2);
		T_CUFILE(cuFileBatchIOCancel(b), CU_FILE_INTERNAL_BATCH_CANCEL_ERROR);
		/* The full size again while the two still run, in other memory
		 * than theirs. */
		t_mem_fill(m, 0, T_POISON, m->len);
		for (int i = 0; i < N; i++)
			io[i] = t_batch_io(CUFILE_READ, rfh, m->ptr, SZ, new_block(k, i) * (off_t)SZ,
					   (off_t)i * SZ, cookie(round, false, i));
		T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
		if (k % 2) {
			/* They finish while the new round runs. */
			t_gate_allow(&gate, 2);
			reap_new_round(b, round, N, k % 4 == 3);
		} else {
			/* The new round completes without them. */
			reap_new_round(b, round, N, k % 4 == 2);
			T_EQ(t_gate_done(&gate), 0);
			t_gate_allow(&gate, 2);
		}
		/* Once they are done a Cancel succeeds; they were never reported. */
		cancel_until_idle(b);
		T_EQ(t_gate_done(&gate), 2);
		T_EQ(t_gate_entered(&gate), 2);
		unsigned nr = N;
		CUfileIOEvents_t ev[N];
		struct timespec zero = {0, 0};
		T_CUFILE_OK(cuFileBatchIOGetStatus(b, 0, &nr, ev, &zero));
		T_EQ(nr, 0);
		t_mem_get(m, 0, chk, (size_t)N * SZ);
		for (int i = 0; i < N; i++)
			if (t_check_pattern(chk + (size_t)i * SZ, SZ, (uint64_t)new_block(k, i) * SZ, 0,
					    "new round"))
				T_FAIL("gate round %d: entry %d", k, i);
	}
	/* Each held read stored its own 4 KiB and nothing else. */
	for (int s = 0; s < 2 * GATE_ROUNDS; s++) {
		size_t at = (size_t)s * 2 * GSZ;
		if (t_check_pattern(gbuf + at, GSZ, at / 2, 5, "held read") ||
		    t_check_fill(gbuf + at + GSZ, GSZ, T_POISON, "after a held read"))
			T_FAIL("held read %d", s);
	}
	free(gbuf);
}

static void *open_gate_later(void *arg)
{
	(void)arg;
	t_sleep_ms(100);
	t_gate_allow(&gate, -1);
	return NULL;
}

/* Destroy with an entry of a cancelled, resubmitted round still held. */
static void destroy_with_straggler(struct t_mem *m)
{
	pthread_mutex_lock(&gate.lock);
	gate.permits = 0;
	gate.entered = gate.done = 0;
	pthread_mutex_unlock(&gate.lock);
	uint8_t *g = malloc(GSZ);
	T_ASSERT(g != NULL);
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, N));
	CUfileIOParams_t io[N];
	io[0] = t_batch_io(CUFILE_READ, gfh, g, GSZ, 0, 0, NULL);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 1, io, 0));
	t_gate_wait_entered(&gate, 1);
	T_CUFILE(cuFileBatchIOCancel(b), CU_FILE_INTERNAL_BATCH_CANCEL_ERROR);
	for (int i = 0; i < N; i++)
		io[i] = t_batch_io(CUFILE_READ, rfh, m->ptr, SZ, (off_t)i * SZ, (off_t)i * SZ, NULL);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, open_gate_later, NULL) == 0);
	cuFileBatchIODestroy(b);
	T_EQ(t_gate_done(&gate), 1); /* it waited for the held read */
	pthread_join(th, NULL);
	free(g);
}

int main(void)
{
	setenv("OPENCUFILE_ASYNC_THREADS", "4", 1);
	setenv("OPENCUFILE_BATCH_CANCEL_WAIT_MS", "300", 1);
	t_cuda_require();
	const char *rpath = t_make_pattern_file((uint64_t)RBLOCKS * SZ, 0);
	const char *wpath = t_make_pattern_file((uint64_t)N * SZ, 0);
	int rfd = t_open(rpath, O_RDONLY);
	wfd = t_open(wpath, O_RDWR);
	T_CUFILE_OK(cuFileDriverOpen());
	rfh = t_register_fd(rfd);
	wfh = t_register_fd(wfd);
	gfh = t_gate_open(&gate, 1 * T_MIB, 5);
	chk = malloc((size_t)N * SZ);
	T_ASSERT(chk != NULL);

	CUfileBatchHandle_t b[NH];
	struct t_mem m[NH];
	for (int h = 0; h < NH; h++) {
		T_CUFILE_OK(cuFileBatchIOSetUp(&b[h], N));
		t_mem_alloc(&m[h], T_MEM_DEVICE, (size_t)N * SZ + 4096);
		T_CUFILE_OK(cuFileBufRegister(m[h].ptr, m[h].len, 0));
	}
	for (int h = 0; h < NH; h++)
		read_rounds(b[h], &m[h], h);
	for (int h = 0; h < NH; h++)
		write_rounds(b[h], &m[h], h);
	straggler_rounds(b[0], &m[0]);
	/* The handle that had stragglers serves plain rounds as before. */
	read_rounds(b[0], &m[0], 0);
	destroy_with_straggler(&m[1]);

	for (int h = 0; h < NH; h++) {
		cuFileBatchIODestroy(b[h]);
		T_CUFILE_OK(cuFileBufDeregister(m[h].ptr));
		t_mem_free(&m[h]);
	}
	free(chk);
	cuFileHandleDeregister(rfh);
	cuFileHandleDeregister(wfh);
	cuFileHandleDeregister(gfh);
	T_CUFILE_OK(cuFileDriverClose());
	close(rfd);
	close(wfd);
	return T_EXIT_PASS;
}
