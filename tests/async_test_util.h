/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_test_util.h - helpers of the batch and stream I/O tests.
 *
 * A "gate" file: a USERSPACE_FS handle whose reads hold until the test
 * grants permits, so tests can keep batch entries or stream operations
 * pending or running for as long as they need, deterministically.  Its
 * contents are pattern seed `seed` over `size` bytes; the read callback
 * counts callers that entered (running) and calls completed.
 */
#ifndef OCF_ASYNC_TEST_UTIL_H_
#define OCF_ASYNC_TEST_UTIL_H_

#include <pthread.h>
#include <time.h>

#include "test.h"

struct t_gate {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	long permits; /* reads allowed to finish; < 0: unlimited */
	int entered;  /* read calls that started */
	int done;     /* read calls that returned */
	uint64_t size;
	uint32_t seed;
};

static inline ssize_t t_gate_read(const void *h, char *buf, size_t size, loff_t off, const cufileRDMAInfo_t *rdma)
{
	struct t_gate *g = (struct t_gate *)h;
	(void)rdma;
	pthread_mutex_lock(&g->lock);
	g->entered++;
	pthread_cond_broadcast(&g->cv);
	while (g->permits == 0)
		pthread_cond_wait(&g->cv, &g->lock);
	if (g->permits > 0)
		g->permits--;
	pthread_mutex_unlock(&g->lock);
	size_t n = 0;
	if ((uint64_t)off < g->size)
		n = g->size - (uint64_t)off < size ? (size_t)(g->size - (uint64_t)off) : size;
	t_fill_pattern(buf, n, (uint64_t)off, g->seed);
	pthread_mutex_lock(&g->lock);
	g->done++;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->lock);
	return (ssize_t)n;
}

static inline ssize_t t_gate_write(const void *h, const char *buf, size_t size, loff_t off, const cufileRDMAInfo_t *rdma)
{
	(void)h, (void)buf, (void)off, (void)rdma;
	return (ssize_t)size;
}

static const CUfileFSOps_t t_gate_ops T_UNUSED = {
	.read = t_gate_read,
	.write = t_gate_write,
};

static inline CUfileHandle_t t_gate_open(struct t_gate *g, uint64_t size, uint32_t seed)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->permits = 0;
	g->entered = g->done = 0;
	g->size = size;
	g->seed = seed;
	CUfileDescr_t d;
	memset(&d, 0, sizeof(d));
	d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
	d.handle.handle = g;
	d.fs_ops = &t_gate_ops;
	CUfileHandle_t fh;
	T_CUFILE_OK(cuFileHandleRegister(&fh, &d));
	return fh;
}

/* Lets n more reads finish (n < 0: all, from now on). */
static inline void t_gate_allow(struct t_gate *g, long n)
{
	pthread_mutex_lock(&g->lock);
	if (n < 0 || g->permits < 0)
		g->permits = -1;
	else
		g->permits += n;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->lock);
}

/* Waits until at least n reads entered the callback (fails after 10 s). */
static inline void t_gate_wait_entered(struct t_gate *g, int n)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	pthread_mutex_lock(&g->lock);
	while (g->entered < n)
		if (pthread_cond_timedwait(&g->cv, &g->lock, &dl) != 0)
			T_FAIL("only %d of %d reads reached the file system in 10 s", g->entered, n);
	pthread_mutex_unlock(&g->lock);
}

static inline int t_gate_entered(struct t_gate *g)
{
	pthread_mutex_lock(&g->lock);
	int n = g->entered;
	pthread_mutex_unlock(&g->lock);
	return n;
}

/* Read calls that have returned from the callback so far. */
static inline int t_gate_done(struct t_gate *g)
{
	pthread_mutex_lock(&g->lock);
	int n = g->done;
	pthread_mutex_unlock(&g->lock);
	return n;
}

static inline double t_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void t_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* A batch read entry. */
static inline CUfileIOParams_t t_batch_io(CUfileOpcode_t op, CUfileHandle_t fh, void *base, size_t size,
					  off_t foff, off_t boff, void *cookie)
{
	CUfileIOParams_t p;
	memset(&p, 0, sizeof(p));
	p.mode = CUFILE_BATCH;
	p.fh = fh;
	p.opcode = op;
	p.cookie = cookie;
	p.u.batch.devPtr_base = base;
	p.u.batch.size = size;
	p.u.batch.file_offset = foff;
	p.u.batch.devPtr_offset = boff;
	return p;
}

/* Collects exactly n events (fails after 30 s). */
static inline void t_batch_collect(CUfileBatchHandle_t b, unsigned n, CUfileIOEvents_t *ev)
{
	unsigned got = 0;
	double t0 = t_now_s();
	while (got < n) {
		unsigned nr = n - got;
		struct timespec to = {1, 0};
		T_CUFILE_OK(cuFileBatchIOGetStatus(b, nr, &nr, ev + got, &to));
		got += nr;
		if (t_now_s() - t0 > 30)
			T_FAIL("only %u of %u batch events in 30 s", got, n);
	}
}

/* Collects exactly n events, each GetStatus call with min_nr = what is
 * left and no timeout (the wait of gdsio -W wait): a lost completion hangs
 * here, until the test's own timeout. */
static inline void t_batch_collect_untimed(CUfileBatchHandle_t b, unsigned n, CUfileIOEvents_t *ev)
{
	unsigned got = 0;
	while (got < n) {
		unsigned nr = n - got;
		T_CUFILE_OK(cuFileBatchIOGetStatus(b, nr, &nr, ev + got, NULL));
		got += nr;
	}
}

/* Host functions queued before and after an asynchronous operation on a
 * stream: they record the order they ran in and what *watch (the
 * operation's *bytes_p) held when the one after ran. */
struct t_marks {
	int counter;
	int before, after;
	ssize_t seen_after;
	ssize_t *watch;
};

static inline void CUDA_CB t_mark_before(void *arg)
{
	struct t_marks *m = arg;
	m->before = __atomic_add_fetch(&m->counter, 1, __ATOMIC_SEQ_CST);
}

static inline void CUDA_CB t_mark_after(void *arg)
{
	struct t_marks *m = arg;
	m->after = __atomic_add_fetch(&m->counter, 1, __ATOMIC_SEQ_CST);
	m->seen_after = __atomic_load_n(m->watch, __ATOMIC_ACQUIRE);
}

#endif /* OCF_ASYNC_TEST_UTIL_H_ */
