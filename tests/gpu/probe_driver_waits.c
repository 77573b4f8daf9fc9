/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_driver_waits.c - what the real CUDA driver does while a stream is
 * blocked in cuStreamWaitValue32 on a word only the host will write.
 *
 * That is the state every application stream is in while a cuFileReadAsync
 * of ours is pending.  For each "blocker" call X (cuStreamCreate,
 * cuMemFree, cuMemHostAlloc, ...) one child process:
 *   1. makes the primary context current, creates what the case needs, and
 *      queues cuStreamWaitValue32(S, flag, 1, GEQ) on stream S;
 *   2. calls X on a thread, and after 300 ms notes whether X returned
 *      ("X waits for the blocked stream");
 *   3. then, on other threads, issues the calls the library's I/O threads
 *      make (an asynchronous copy + event record on a non-blocking stream,
 *      a host-function launch on another stream, a pointer query, a context
 *      push/pop, an event query, a 4 KiB synchronous copy) and after 300 ms
 *      notes which of them returned and whether the copy completed
 *      ("while X is blocked, does the driver still take our calls?");
 *   4. writes the flag and notes whether everything then finishes
 *      ("recovers"), or the process stays wedged.
 * One line per case; the parent kills a wedged child after a few seconds.
 *
 *   probe_driver_waits [case-name ...]      (default: every case, twice:
 *                                            S non-blocking and S blocking)
 *
 * Build: cc -O2 -I$CUDA/include probe_driver_waits.c -lcuda -lpthread
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptx_kernels.h"

#define MIB (1u << 20)

static CUcontext ctx;
static CUdevice dev;
static CUstream S;          /* the "application" stream that waits */
static CUstream S2;         /* another application stream */
static CUstream L;          /* "our" lane stream (non-blocking) */
static CUstream spare_stream;
static CUevent E, E_done, spare_event, E_after_wait;
static CUdeviceptr D, D_spare;
static void *H, *H_spare, *H_reg, *H_malloc;
static void *F_map, *F_reg; /* 16 MiB read-only mappings of a warm file */
static volatile uint32_t *flag;
static CUdeviceptr flag_dev;
static CUmodule mod;
static CUfunction spin_fn;
static CUstream many[64];

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

#define CK(x)                                                                                         \
	do {                                                                                          \
		CUresult r_ = (x);                                                                    \
		if (r_ != CUDA_SUCCESS) {                                                             \
			const char *s_ = "?";                                                         \
			cuGetErrorName(r_, &s_);                                                      \
			printf("setup-failed %s: %s\n", #x, s_);                                      \
			fflush(stdout);                                                               \
			_exit(1);                                                                     \
		}                                                                                     \
	} while (0)

/* ------------------------------------------------------------ blockers */

static void CUDA_CB nop_fn(void *arg) { (void)arg; }

static CUresult do_blocker(const char *name)
{
	if (!strcmp(name, "none"))
		return CUDA_SUCCESS;
	if (!strcmp(name, "cuStreamCreate")) {
		CUstream s;
		return cuStreamCreate(&s, CU_STREAM_DEFAULT);
	}
	if (!strcmp(name, "cuStreamCreate-nonblocking")) {
		CUstream s;
		return cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
	}
	if (!strcmp(name, "cuStreamDestroy"))
		return cuStreamDestroy(spare_stream);
	if (!strcmp(name, "cuEventCreate")) {
		CUevent e;
		return cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
	}
	if (!strcmp(name, "cuEventDestroy"))
		return cuEventDestroy(spare_event);
	if (!strcmp(name, "cuMemAlloc")) {
		CUdeviceptr p;
		return cuMemAlloc(&p, MIB);
	}
	if (!strcmp(name, "cuMemFree"))
		return cuMemFree(D_spare);
	if (!strcmp(name, "cuMemHostAlloc")) {
		void *p;
		return cuMemHostAlloc(&p, 16 * MIB, CU_MEMHOSTALLOC_PORTABLE);
	}
	if (!strcmp(name, "cuMemFreeHost"))
		return cuMemFreeHost(H_spare);
	if (!strcmp(name, "cuMemHostRegister"))
		return cuMemHostRegister(H_malloc, 16 * MIB, CU_MEMHOSTREGISTER_PORTABLE);
	if (!strcmp(name, "cuMemHostUnregister"))
		return cuMemHostUnregister(H_reg);
	/* A window of a file's page cache: its read-only mapping pinned
	 * (the zero-copy idea of docs/history/benchmarks.md), and one pinned before
	 * the stream was blocked, unpinned. */
	if (!strcmp(name, "cuMemHostRegister-file-ro"))
		return cuMemHostRegister(F_map, 16 * MIB, CU_MEMHOSTREGISTER_READ_ONLY);
	if (!strcmp(name, "cuMemHostUnregister-file-ro"))
		return cuMemHostUnregister(F_reg);
	if (!strcmp(name, "cuCtxSynchronize"))
		return cuCtxSynchronize();
	if (!strcmp(name, "cuStreamSynchronize"))
		return cuStreamSynchronize(S);
	if (!strcmp(name, "cuEventSynchronize"))
		return cuEventSynchronize(E_after_wait);
	if (!strcmp(name, "cuModuleLoadData")) {
		CUmodule m;
		return cuModuleLoadData(&m, ocf_ptx_kernels);
	}
	if (!strcmp(name, "cuMemcpyHtoD")) /* legacy default stream, synchronous */
		return cuMemcpyHtoD(D, H, 4096);
	if (!strcmp(name, "cuLaunchHostFunc"))
		return cuLaunchHostFunc(S2, nop_fn, NULL);
	if (!strcmp(name, "cuStreamWaitValue32"))
		return cuStreamWaitValue32(S2, flag_dev, 0, CU_STREAM_WAIT_VALUE_GEQ);
	if (!strcmp(name, "cuLaunchKernel")) {
		uint64_t ns = 1000000;
		void *args[] = {&ns};
		return cuLaunchKernel(spin_fn, 1, 1, 1, 32, 1, 1, 0, S2, args, NULL);
	}
	if (!strcmp(name, "cuMemsetD8Async"))
		return cuMemsetD8Async(D, 0, 4096, S2);
	if (!strcmp(name, "cuStreamQuery")) {
		CUresult r = cuStreamQuery(S);
		return r == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : r;
	}
	if (!strcmp(name, "cuPointerGetAttribute")) {
		unsigned t;
		return cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, D);
	}
	if (!strcmp(name, "copies-on-64-streams")) {
		/* Not a blocker: 64 other streams each get a copy; all must
		 * complete while S waits (no false dependency on S). */
		CUevent ev[64];
		for (int i = 0; i < 64; i++) {
			CUresult r = cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING);
			if (r == CUDA_SUCCESS)
				r = cuMemcpyHtoDAsync(D + (CUdeviceptr)(i * 65536), H, 65536, many[i]);
			if (r == CUDA_SUCCESS)
				r = cuEventRecord(ev[i], many[i]);
			if (r != CUDA_SUCCESS)
				return r;
		}
		for (int i = 0; i < 64; i++) {
			CUresult r = cuEventSynchronize(ev[i]);
			if (r != CUDA_SUCCESS)
				return r;
		}
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static const char *const all_cases[] = {
	"none", "cuStreamCreate", "cuStreamCreate-nonblocking", "cuStreamDestroy", "cuEventCreate",
	"cuEventDestroy", "cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister",
	"cuMemHostUnregister", "cuMemHostRegister-file-ro", "cuMemHostUnregister-file-ro", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuModuleLoadData",
	"cuMemcpyHtoD", "cuLaunchHostFunc", "cuStreamWaitValue32", "cuLaunchKernel", "cuMemsetD8Async",
	"cuStreamQuery", "cuPointerGetAttribute", "copies-on-64-streams",
};

/* ------------------------------------------------------------ threads */

struct job {
	const char *what;
	pthread_t th;
	atomic_bool started, returned;
	CUresult rc;
	double t_ret;
};

static const char *blocker_name;
static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cv = PTHREAD_COND_INITIALIZER;
static int go_phase;

static void wait_phase(int ph)
{
	pthread_mutex_lock(&go_lock);
	while (go_phase < ph)
		pthread_cond_wait(&go_cv, &go_lock);
	pthread_mutex_unlock(&go_lock);
}

static void set_phase(int ph)
{
	pthread_mutex_lock(&go_lock);
	go_phase = ph;
	pthread_cond_broadcast(&go_cv);
	pthread_mutex_unlock(&go_lock);
}

/* Observers: the calls the library's I/O threads make. */
enum { OBS_COPY, OBS_HOSTFN, OBS_PTRQ, OBS_PUSHPOP, OBS_EVQUERY, OBS_SYNCCOPY, NOBS };
static const char *const obs_names[NOBS] = {"copyAsync+record", "launchHostFunc", "pointerQuery", "ctxPushPop",
					   "eventQuery", "syncCopy4K"};
static struct job blocker, obs[NOBS];
static atomic_bool copy_completed;

static void *blocker_main(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(ctx);
	wait_phase(1);
	atomic_store(&blocker.started, true);
	blocker.rc = do_blocker(blocker_name);
	blocker.t_ret = now_ms();
	atomic_store(&blocker.returned, true);
	return NULL;
}

static void *obs_main(void *arg)
{
	struct job *j = arg;
	int k = (int)(j - obs);
	cuCtxSetCurrent(ctx);
	wait_phase(2);
	atomic_store(&j->started, true);
	CUresult r = CUDA_SUCCESS;
	switch (k) {
	case OBS_COPY:
		r = cuMemcpyHtoDAsync(D, H, MIB, L);
		if (r == CUDA_SUCCESS)
			r = cuEventRecord(E, L);
		break;
	case OBS_HOSTFN:
		r = cuLaunchHostFunc(L, nop_fn, NULL);
		break;
	case OBS_PTRQ: {
		unsigned t;
		r = cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, D);
		break;
	}
	case OBS_PUSHPOP: {
		CUcontext c;
		r = cuCtxPushCurrent(ctx);
		if (r == CUDA_SUCCESS)
			r = cuCtxPopCurrent(&c);
		break;
	}
	case OBS_EVQUERY:
		r = cuEventQuery(E_done);
		break;
	case OBS_SYNCCOPY:
		r = cuMemcpyHtoD(D + 2 * MIB, H, 4096);
		break;
	}
	j->rc = r;
	j->t_ret = now_ms();
	atomic_store(&j->returned, true);
	if (k == OBS_COPY && r == CUDA_SUCCESS) {
		while (cuEventQuery(E) == CUDA_ERROR_NOT_READY)
			sleep_ms(1);
		atomic_store(&copy_completed, true);
	}
	return NULL;
}

static int run_case(const char *name, bool blocking_s)
{
	blocker_name = name;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&S, blocking_s ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&S2, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&L, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&spare_stream, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < 64; i++)
		CK(cuStreamCreate(&many[i], CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&E, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&E_done, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&spare_event, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&E_after_wait, CU_EVENT_DISABLE_TIMING));
	CK(cuMemAlloc(&D, 8 * MIB));
	CK(cuMemAlloc(&D_spare, MIB));
	CK(cuMemHostAlloc(&H, 16 * MIB, CU_MEMHOSTALLOC_PORTABLE));
	CK(cuMemHostAlloc(&H_spare, MIB, CU_MEMHOSTALLOC_PORTABLE));
	H_reg = aligned_alloc(4096, 16 * MIB);
	H_malloc = aligned_alloc(4096, 16 * MIB);
	memset(H_reg, 1, 16 * MIB);
	memset(H_malloc, 1, 16 * MIB);
	CK(cuMemHostRegister(H_reg, 16 * MIB, CU_MEMHOSTREGISTER_PORTABLE));
	{
		/* A 32 MiB file in the working directory, written (so cached)
		 * and mapped read-only in two halves; the second pinned now. */
		char path[64];
		snprintf(path, sizeof(path), "probe-waits-%d.dat", (int)getpid());
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, 32 * MIB) != 0) {
			perror("probe file");
			exit(2);
		}
		for (size_t o = 0; o < 32 * MIB; o += 16 * MIB)
			if (pwrite(fd, H_malloc, 16 * MIB, (off_t)o) != 16 * MIB) {
				perror("probe file write");
				exit(2);
			}
		F_map = mmap(NULL, 16 * MIB, PROT_READ, MAP_SHARED, fd, 0);
		F_reg = mmap(NULL, 16 * MIB, PROT_READ, MAP_SHARED, fd, 16 * MIB);
		close(fd);
		unlink(path);
		if (F_map == MAP_FAILED || F_reg == MAP_FAILED) {
			perror("probe file mmap");
			exit(2);
		}
		CK(cuMemHostRegister(F_reg, 16 * MIB, CU_MEMHOSTREGISTER_READ_ONLY));
	}
	void *fl;
	CK(cuMemHostAlloc(&fl, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
	flag = fl;
	*flag = 0;
	CK(cuMemHostGetDevicePointer(&flag_dev, fl, 0));
	CK(cuModuleLoadData(&mod, ocf_ptx_kernels));
	CK(cuModuleGetFunction(&spin_fn, mod, "ocf_spin"));
	/* Warm every path once. */
	CK(cuMemcpyHtoDAsync(D, H, MIB, L));
	CK(cuEventRecord(E_done, L));
	CK(cuLaunchHostFunc(L, nop_fn, NULL));
	CK(cuMemsetD8Async(D, 0, 4096, S2));
	CK(cuCtxSynchronize());

	pthread_create(&blocker.th, NULL, blocker_main, NULL);
	for (int i = 0; i < NOBS; i++)
		pthread_create(&obs[i].th, NULL, obs_main, &obs[i]);
	sleep_ms(50);

	/* The application stream waits for a word only we write. */
	CK(cuStreamWaitValue32(S, flag_dev, 1, CU_STREAM_WAIT_VALUE_GEQ));
	CK(cuEventRecord(E_after_wait, S));
	double t0 = now_ms();
	set_phase(1);
	sleep_ms(300);
	bool x_blocks = !atomic_load(&blocker.returned);
	set_phase(2);
	sleep_ms(300);
	bool obs_ret[NOBS];
	for (int i = 0; i < NOBS; i++)
		obs_ret[i] = atomic_load(&obs[i].returned);
	bool copy_done = atomic_load(&copy_completed);
	/* Release the stream. */
	__atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
	double t_release = now_ms();
	bool recovered = false;
	for (int k = 0; k < 3000 && !recovered; k++) {
		recovered = atomic_load(&blocker.returned) && atomic_load(&copy_completed);
		for (int i = 0; i < NOBS; i++)
			recovered = recovered && atomic_load(&obs[i].returned);
		if (!recovered)
			sleep_ms(1);
	}
	const char *rcname = "-";
	if (atomic_load(&blocker.returned))
		cuGetErrorName(blocker.rc, &rcname);
	printf("%-28s %-12s X:%-8s", name, blocking_s ? "S=blocking" : "S=nonblock",
	       x_blocks ? (atomic_load(&blocker.returned) ? "WAITS" : "STUCK") : "returns");
	for (int i = 0; i < NOBS; i++)
		printf(" %s:%s", obs_names[i], obs_ret[i] ? "ok" : "BLOCKED");
	printf(" copyDone:%s", copy_done ? "yes" : "NO");
	if (x_blocks && atomic_load(&blocker.returned))
		printf(" X-returned-after-release:%.0fms", blocker.t_ret - t_release);
	printf(" rc:%s %s (t=%.0fms)\n", rcname, recovered ? "recovers" : "WEDGED", now_ms() - t0);
	fflush(stdout);
	_exit(recovered ? 0 : 3);
}

int main(int argc, char **argv)
{
	const char *const *cases = all_cases;
	size_t ncases = sizeof(all_cases) / sizeof(all_cases[0]);
	if (argc > 1) {
		cases = (const char *const *)argv + 1;
		ncases = (size_t)argc - 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int wedged = 0;
	for (int b = 0; b < 2; b++) {
		for (size_t i = 0; i < ncases; i++) {
			pid_t pid = fork();
			if (pid == 0) {
				alarm(20);
				return run_case(cases[i], b == 1);
			}
			int st = 0;
			double t0 = now_ms();
			while (waitpid(pid, &st, WNOHANG) == 0) {
				if (now_ms() - t0 > 8000) {
					printf("%-28s %-12s child wedged past 8 s: killed\n", cases[i],
					       b ? "S=blocking" : "S=nonblock");
					kill(pid, SIGKILL);
					waitpid(pid, &st, 0);
					wedged++;
					break;
				}
				sleep_ms(20);
			}
			if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
				wedged++;
		}
	}
	printf("probe done: %d case(s) wedged\n", wedged);
	return 0;
}
