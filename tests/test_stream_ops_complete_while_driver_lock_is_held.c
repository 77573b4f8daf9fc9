/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stream operations complete while other threads hold the driver's lock
 * waiting for the very stream that waits for them (on the real driver, and
 * on the stand-in with its lock model).
 *
 * The stand-in driver's lock model (tests/fakecuda, on by default) does
 * what the real driver was seen to do (docs/reliability.md, "Hangs"):
 * cuMemFree, cuMemFreeHost, cuMemHostUnregister and cuModuleLoadData wait
 * for every stream of the context while holding a context-wide lock that
 * every copy, event record and host-function launch needs; cuStreamCreate
 * and cuEventCreate wait, holding it, while a stream is blocked in a stream
 * wait.  Scenarios, each with the library's GPU-memory stream reads and
 * writes (16 MiB, split over the engine's helpers, and small ones):
 *
 *   memfree     an application stream holds at its own flag; reads and
 *               writes are queued behind it; another thread calls cuMemFree
 *               (it now waits for that stream, holding the lock); the flag
 *               is released: the operations must complete, then cuMemFree
 *               returns.
 *   create      the same with cuStreamCreate and cuEventCreate calls on
 *               other threads while the operations are pending (a library
 *               that made staging lanes, streams or events on its I/O
 *               threads, as it once did, deadlocks here).
 *   stress      8 threads queue stream reads and writes on their own
 *               streams while 4 threads allocate and free device memory,
 *               pinned memory and streams, for a few seconds; every byte
 *               checked.
 *
 * A watchdog fails the test after 20 s (with the stand-in, with its lock
 * report: who holds and who waits), instead of waiting for ctest's
 * timeout.
 */
#include "async_test_util.h"
#ifdef OPENCUFILE_FAKE_CUDA
#include "fakecuda.h"
#endif

#include <signal.h>
#include <stdatomic.h>

#define BIG (16u << 20)
#define SMALL (200u * 1024)
#define FLEN ((size_t)4 * BIG)

static const char *path;
static CUfileHandle_t fh;
static int check_fd;
static const char *scenario = "";

static void on_alarm(int sig)
{
	(void)sig;
	static char buf[8192];
	int n = snprintf(buf, sizeof(buf), "FAIL: %s: no progress in 20 s (a deadlock against the driver lock)\n",
			 scenario);
	if (n > 0 && write(2, buf, (size_t)n) < 0) {
	}
#ifdef OPENCUFILE_FAKE_CUDA
	size_t len = fakecuda_lock_report(buf, sizeof(buf));
	if (len && write(2, buf, strnlen(buf, sizeof(buf))) < 0) {
	}
#endif
	_exit(1);
}

static void arm(const char *what)
{
	scenario = what;
	alarm(20);
}

static uint32_t *flag;
static CUdeviceptr flag_dev;
static uint32_t flag_val;

struct op {
	bool write;
	size_t size;
	off_t foff, boff;
	ssize_t bytes;
};

/* Queues ops[] on s: reads into dev at boff, writes from dev at boff
 * (the caller filled the write ranges with the file's pattern at foff,
 * seed 7, and the file regions written are disjoint from those read). */
static void queue_ops(CUstream s, CUdeviceptr dev, struct op *ops, int n)
{
	for (int i = 0; i < n; i++) {
		ops[i].bytes = -999;
		void *base = (void *)(uintptr_t)dev;
		if (ops[i].write)
			T_CUFILE_OK(cuFileWriteAsync(fh, base, &ops[i].size, &ops[i].foff, &ops[i].boff, &ops[i].bytes, s));
		else
			T_CUFILE_OK(cuFileReadAsync(fh, base, &ops[i].size, &ops[i].foff, &ops[i].boff, &ops[i].bytes, s));
	}
}

static void check_ops(CUdeviceptr dev, struct op *ops, int n, uint32_t wseed)
{
	uint8_t *h = malloc(BIG);
	T_ASSERT(h != NULL);
	for (int i = 0; i < n; i++) {
		T_EQ(ops[i].bytes, (ssize_t)ops[i].size);
		if (ops[i].write) {
			T_EQ_U(t_pread_full(check_fd, h, ops[i].size, (uint64_t)ops[i].foff), ops[i].size);
			T_ASSERT(t_check_pattern(h, ops[i].size, (uint64_t)ops[i].foff, wseed, "written") == 0);
		} else {
			t_dev_get(h, dev + (CUdeviceptr)ops[i].boff, ops[i].size);
			T_ASSERT(t_check_pattern(h, ops[i].size, (uint64_t)ops[i].foff, 0, "read") == 0);
		}
	}
	free(h);
}

/* ------------------------------------------------------------ blockers */

enum blocker { B_MEMFREE, B_CREATE };

struct blocker_arg {
	enum blocker kind;
	atomic_bool started, done;
};

static void *blocker_main(void *arg)
{
	struct blocker_arg *b = arg;
	t_cuda_bind_thread();
	CUdeviceptr d = 0;
	if (b->kind == B_MEMFREE)
		T_CU(cuMemAlloc(&d, 1u << 20));
	atomic_store(&b->started, true);
	if (b->kind == B_MEMFREE) {
		T_CU(cuMemFree(d));
	} else {
		CUstream st;
		CUevent ev;
		T_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
		T_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
		T_CU(cuEventDestroy(ev));
		T_CU(cuStreamDestroy(st));
	}
	atomic_store(&b->done, true);
	return NULL;
}

/* The stream holds at the application's flag; operations are queued
 * behind it; the blocker starts and (with the lock model) blocks in the
 * driver; the flag is released; everything must finish. */
static void held_scenario(enum blocker kind, const char *name)
{
	arm(name);
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr dev = t_dev_alloc(2 * BIG + SMALL + 4096);
	t_dev_fill(dev, T_POISON, 2 * BIG + SMALL + 4096);
	/* The write source: the pattern of its file range, seed 7. */
	uint8_t *h = malloc(SMALL);
	T_ASSERT(h != NULL);
	t_fill_pattern(h, SMALL, 3 * BIG, 7);
	t_dev_put(dev + 2 * BIG, h, SMALL);
	free(h);
	struct op ops[3] = {
		{false, BIG, 0, 0, 0},
		{false, BIG, BIG + 4096, BIG, 0},
		{true, SMALL, 3 * BIG, 2 * BIG, 0},
	};
	T_CU(cuStreamWaitValue32(s, flag_dev, ++flag_val, CU_STREAM_WAIT_VALUE_GEQ));
	queue_ops(s, dev, ops, 3);
	struct blocker_arg b = {.kind = kind};
	pthread_t th;
	T_EQ(pthread_create(&th, NULL, blocker_main, &b), 0);
	while (!atomic_load(&b.started))
		t_sleep_ms(1);
	t_sleep_ms(50); /* the blocker is inside the driver now (it waits for s) */
	__atomic_store_n(flag, flag_val, __ATOMIC_RELEASE);
	T_EQ(pthread_join(th, NULL), 0);
	T_CU(cuStreamSynchronize(s));
	check_ops(dev, ops, 3, 7);
	T_CU(cuMemFree(dev));
	T_CU(cuStreamDestroy(s));
	alarm(0);
}

/* ------------------------------------------------------------ stress */

static atomic_bool stop;

static void *io_main(void *arg)
{
	long id = (long)arg;
	t_cuda_bind_thread();
	CUstream s;
	T_CU(cuStreamCreate(&s, id % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
	CUdeviceptr dev = t_dev_alloc(BIG + SMALL);
	uint8_t *h = malloc(SMALL);
	T_ASSERT(h != NULL);
	off_t wfoff = (off_t)(3 * BIG) + (off_t)id * (off_t)SMALL;
	for (unsigned it = 0; !atomic_load(&stop); it++) {
		uint32_t seed = (uint32_t)(id * 1000 + it + 1);
		t_fill_pattern(h, SMALL, (uint64_t)wfoff, seed);
		t_dev_put(dev + BIG, h, SMALL);
		struct op ops[2] = {
			{false, it % 2 ? BIG : SMALL, (off_t)((it * 4096u + (unsigned)id * 8192u) % BIG), 0, 0},
			{true, SMALL, wfoff, BIG, 0},
		};
		queue_ops(s, dev, ops, 2);
		T_CU(cuStreamSynchronize(s));
		check_ops(dev, ops, 2, seed);
	}
	free(h);
	T_CU(cuMemFree(dev));
	T_CU(cuStreamDestroy(s));
	return NULL;
}

static void *churn_main(void *arg)
{
	long id = (long)arg;
	t_cuda_bind_thread();
	for (unsigned it = 0; !atomic_load(&stop); it++) {
		switch ((it + (unsigned)id) % 3) {
		case 0: {
			CUdeviceptr d;
			T_CU(cuMemAlloc(&d, 1u << 20));
			T_CU(cuMemFree(d));
			break;
		}
		case 1: {
			void *p;
			T_CU(cuMemHostAlloc(&p, 1u << 20, 0));
			T_CU(cuMemFreeHost(p));
			break;
		}
		default: {
			CUstream st;
			T_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
			T_CU(cuStreamDestroy(st));
			break;
		}
		}
	}
	return NULL;
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	setenv("OPENCUFILE_PREWARM", "0", 1);     /* lanes made on demand: the old hazard */
	setenv("OPENCUFILE_IO_THREADS", "4", 1);  /* 16 MiB requests split over helpers */
	t_cuda_require();
	path = t_make_pattern_file(4 * BIG, 0);
	int fd = t_open(path, O_RDWR);
	check_fd = t_open(path, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	fh = t_register_fd(fd);
	T_CU(cuMemHostAlloc((void **)&flag, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	*flag = 0;
	T_CU(cuMemHostGetDevicePointer(&flag_dev, flag, 0));

	held_scenario(B_MEMFREE, "memfree");
	held_scenario(B_CREATE, "create");

	arm("stress");
	const char *env = getenv("OCF_STRESS_SECONDS");
	int seconds = env && *env ? atoi(env) : 3;
	pthread_t io[8], churn[4];
	for (long i = 0; i < 8; i++)
		T_EQ(pthread_create(&io[i], NULL, io_main, (void *)i), 0);
	for (long i = 0; i < 4; i++)
		T_EQ(pthread_create(&churn[i], NULL, churn_main, (void *)i), 0);
	t_sleep_ms(seconds * 1000L);
	atomic_store(&stop, true);
	for (int i = 0; i < 8; i++)
		T_EQ(pthread_join(io[i], NULL), 0);
	for (int i = 0; i < 4; i++)
		T_EQ(pthread_join(churn[i], NULL), 0);
	alarm(0);

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuMemFreeHost(flag));
	close(fd);
	close(check_fd);
	return T_EXIT_PASS;
}
