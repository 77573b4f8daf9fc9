/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork() and the library.
 *
 * 1. A child forked before the process's first cuFile call starts clean: it
 *    opens the driver, reads a file with data checked, closes, exits 0.
 * 2. Then the parent uses the library: 8 threads read and verify a file
 *    through one registered handle and buffer (and one runs batches), so
 *    library locks are held at random moments.  While they run, the parent
 *    forks children again and again; each child calls every cuFile entry
 *    point and must get CU_FILE_DRIVER_NOT_INITIALIZED (-5001 from
 *    cuFileRead/cuFileWrite, 0 from cuFileUseCount, nothing from the void
 *    functions; cuFileGetVersion still answers), never a deadlock: a child
 *    that does not finish within 20 s fails the test.  The child's writes
 *    must not reach the file.
 * 3. The parent keeps working throughout and after: the threads' data stays
 *    right, every reader and the batcher completes more work after the last
 *    fork (a role that has not within 60 s, a limit only a hang reaches,
 *    fails the test by name), and the driver closes cleanly at the end.
 */
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>

#define NTHREADS 8
#define FLEN (4 * T_MIB)
#define CHUNK (256 * T_KIB)
#define NFORKS 24
#define PROGRESS_LIMIT_S 60 /* only a hang takes this long */

static CUfileHandle_t fh;
static struct t_mem mem; /* NTHREADS slices of CHUNK */
static atomic_bool stop;
/* Work each thread has completed and verified: readers 0..NTHREADS-1
 * count reads, the batcher (NTHREADS) counts batches. */
static atomic_long progress[NTHREADS + 1];
static int fd;

static void *reader(void *arg)
{
	long id = (long)arg;
	uint8_t *back = malloc(CHUNK);
	unsigned it = 0;

	T_ASSERT(back);
	if (t_mem_is_device(&mem))
		t_cuda_bind_thread();
	while (!atomic_load(&stop)) {
		size_t size = 1 + (it * 7919u + (unsigned)id * 131u) % CHUNK;
		off_t foff = (off_t)((it * 104729u + (unsigned)id * 4099u) % (FLEN - size));
		ssize_t r = cuFileRead(fh, mem.ptr, size, foff, (off_t)(id * CHUNK));
		if (r != (ssize_t)size)
			T_FAIL("parent thread %ld: read returned %zd, expected %zu", id, r, size);
		t_mem_get(&mem, (size_t)id * CHUNK, back, size);
		if (t_check_pattern(back, size, (uint64_t)foff, 0, "parent read"))
			T_FAIL("parent thread %ld: bad data at file offset %lld", id, (long long)foff);
		atomic_fetch_add(&progress[id], 1);
		it++;
	}
	free(back);
	return NULL;
}

/* One thread keeps a batch of 4 reads going. */
static void *batcher(void *arg)
{
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[4];
	CUfileIOEvents_t ev[4];
	uint8_t *host = malloc(4 * 8192);

	(void)arg;
	T_ASSERT(host);
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 4));
	while (!atomic_load(&stop)) {
		memset(io, 0, sizeof(io));
		for (int i = 0; i < 4; i++) {
			io[i].mode = CUFILE_BATCH;
			io[i].fh = fh;
			io[i].opcode = CUFILE_READ;
			io[i].u.batch.devPtr_base = host;
			io[i].u.batch.devPtr_offset = i * 8192;
			io[i].u.batch.file_offset = i * 12345;
			io[i].u.batch.size = 8192;
		}
		T_CUFILE_OK(cuFileBatchIOSubmit(b, 4, io, 0));
		unsigned got = 0;
		while (got < 4) {
			unsigned nr = 4 - got;
			T_CUFILE_OK(cuFileBatchIOGetStatus(b, nr, &nr, ev, NULL));
			for (unsigned i = 0; i < nr; i++)
				T_EQ_U(ev[i].status, CUFILE_COMPLETE);
			got += nr;
		}
		for (int i = 0; i < 4; i++)
			if (t_check_pattern(host + i * 8192, 8192, (uint64_t)i * 12345, 0, "batch read"))
				T_FAIL("parent batch: bad data");
		atomic_fetch_add(&progress[NTHREADS], 1);
	}
	cuFileBatchIODestroy(b);
	free(host);
	return NULL;
}

#define NOT_INIT(expr) T_CUFILE(expr, CU_FILE_DRIVER_NOT_INITIALIZED)

/* In the child: every entry point fails at once, with no lock touched. */
static void child_calls_everything(const char *path)
{
	CUfileDrvProps_t props;
	CUfileHandle_t h2 = NULL;
	CUfileBatchHandle_t b = NULL;
	CUfileIOParams_t io;
	CUfileIOEvents_t ev;
	CUfileStatsLevel3_t st;
	uint8_t host[4096];
	size_t sz = 4096, mn, mx, sizes[1], counts[1];
	off_t zero = 0;
	ssize_t bytes = 12345;
	unsigned nr = 1;
	bool bv;
	int v = 0, level;
	char str[64];

	alarm(20); /* a deadlock becomes SIGALRM, which the parent reports */
	T_CUFILE_OK(cuFileGetVersion(&v));
	T_EQ(v, OPENCUFILE_API_VERSION_MAX);
	NOT_INIT(cuFileDriverOpen());
	NOT_INIT(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);
	NOT_INIT(cuFileDriverGetProperties(&props));
	NOT_INIT(cuFileDriverSetPollMode(false, 4));
	NOT_INIT(cuFileDriverSetMaxDirectIOSize(1024));
	NOT_INIT(cuFileDriverSetMaxCacheSize(1024));
	NOT_INIT(cuFileDriverSetMaxPinnedMemSize(1024));
	int fd2 = t_open(path, O_RDWR);
	T_EQ(t_try_register_fd(fd2, &h2), CU_FILE_DRIVER_NOT_INITIALIZED);
	close(fd2);
	cuFileHandleDeregister(fh); /* void: must return, and change nothing */
	NOT_INIT(cuFileBufRegister(host, sizeof(host), 0));
	NOT_INIT(cuFileBufDeregister(mem.ptr));
	T_IO(cuFileRead(fh, host, sizeof(host), 0, 0), -CU_FILE_DRIVER_NOT_INITIALIZED);
	memset(host, 0xEE, sizeof(host));
	T_IO(cuFileWrite(fh, host, sizeof(host), 0, 0), -CU_FILE_DRIVER_NOT_INITIALIZED);
	NOT_INIT(cuFileBatchIOSetUp(&b, 1));
	memset(&io, 0, sizeof(io));
	io.mode = CUFILE_BATCH;
	io.fh = fh;
	io.opcode = CUFILE_WRITE;
	io.u.batch.devPtr_base = host;
	io.u.batch.size = sizeof(host);
	NOT_INIT(cuFileBatchIOSubmit(b, 1, &io, 0));
	NOT_INIT(cuFileBatchIOGetStatus(b, 0, &nr, &ev, NULL));
	NOT_INIT(cuFileBatchIOCancel(b));
	cuFileBatchIODestroy(b);
	NOT_INIT(cuFileReadAsync(fh, host, &sz, &zero, &zero, &bytes, NULL));
	NOT_INIT(cuFileWriteAsync(fh, host, &sz, &zero, &zero, &bytes, NULL));
	T_EQ(bytes, 12345); /* not written */
	NOT_INIT(cuFileStreamRegister(NULL, 0));
	NOT_INIT(cuFileStreamDeregister(NULL));
	NOT_INIT(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, &sz));
	NOT_INIT(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, &bv));
	NOT_INIT(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, str, (int)sizeof(str)));
	NOT_INIT(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, &mn, &mx));
	NOT_INIT(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, 1));
	NOT_INIT(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, false));
	NOT_INIT(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "ERROR"));
	sizes[0] = 4096;
	counts[0] = 4;
	NOT_INIT(cuFileSetParameterPosixPoolSlabArray(sizes, counts, 1));
	NOT_INIT(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 1));
	NOT_INIT(cuFileSetStatsLevel(1));
	NOT_INIT(cuFileGetStatsLevel(&level));
	NOT_INIT(cuFileStatsStart());
	NOT_INIT(cuFileStatsStop());
	NOT_INIT(cuFileStatsReset());
	NOT_INIT(cuFileGetStatsL1(&st.detailed.basic));
	NOT_INIT(cuFileGetStatsL2(&st.detailed));
	NOT_INIT(cuFileGetStatsL3(&st));
	NOT_INIT(cuFileGetBARSizeInKB(0, &sz));
	/* The 1.16-1.19 calls too. */
	CUfileP2PFlags_t p2p;
	NOT_INIT(cuFileDriverSetP2PFlags(CU_FILE_NVME_SUPPORTED, (CUfileP2PFlags_t)0));
	NOT_INIT(cuFileDriverGetP2PFlags(CU_FILE_NVME_SUPPORTED, &p2p));
	NOT_INIT(cuFileSetParameterGpuBounceBufferSlabArray(sizes, counts, 1));
	NOT_INIT(cuFileGetParameterGpuBounceBufferSlabArray(sizes, counts, 1));
	NOT_INIT(cuFileExportPCIeTopology("topology-child.json"));
	CUfileIOVec_t iov = {&level, sizeof(level)};
	T_IO(cuFileReadv(fh, &iov, 1, 0, 0), -CU_FILE_DRIVER_NOT_INITIALIZED);
	T_IO(cuFileWritev(fh, &iov, 1, 0, 0), -CU_FILE_DRIVER_NOT_INITIALIZED);
	/* Still the same answer the second time round. */
	NOT_INIT(cuFileDriverOpen());
}

/* Before any cuFile call: the child is a fresh user of the library. */
static void clean_child(const char *path)
{
	uint8_t *buf = malloc(FLEN);

	alarm(20);
	T_ASSERT(buf);
	T_CUFILE_OK(cuFileDriverOpen());
	int f = t_open(path, O_RDONLY);
	CUfileHandle_t h = t_register_fd(f);
	T_IO(cuFileRead(h, buf, FLEN, 0, 0), FLEN);
	if (t_check_pattern(buf, FLEN, 0, 0, "clean child read"))
		exit(T_EXIT_FAIL);
	cuFileHandleDeregister(h);
	close(f);
	T_CUFILE_OK(cuFileDriverClose());
	free(buf);
}

/* The parent still works after the forks: every thread completes at least
 * one more verified read or batch.  Waits for that, not for a time; the
 * limit only turns a hang (a lock left held across fork()) into a failure
 * that names the threads that stopped. */
static void parent_threads_progress(void)
{
	long before[NTHREADS + 1];
	for (int i = 0; i <= NTHREADS; i++)
		before[i] = atomic_load(&progress[i]);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int stuck = 0;
		for (int i = 0; i <= NTHREADS; i++)
			stuck += atomic_load(&progress[i]) == before[i];
		if (!stuck)
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= PROGRESS_LIMIT_S)
			break;
		usleep(1000);
	}
	for (int i = 0; i <= NTHREADS; i++) {
		if (atomic_load(&progress[i]) != before[i])
			continue;
		if (i < NTHREADS)
			fprintf(stderr, "reader %d: no read completed after the last fork (%ld before it)\n", i,
				before[i]);
		else
			fprintf(stderr, "batcher: no batch completed after the last fork (%ld before it)\n",
				before[i]);
	}
	T_FAIL("parent threads stopped making progress after the forks (%d s)", PROGRESS_LIMIT_S);
}

int main(void)
{
	const char *path = t_make_pattern_file(FLEN, 0);
	pthread_t th[NTHREADS + 1];

	/* 1. Fork before the first call. */
	pid_t pid = fork();
	T_SYS(pid);
	if (pid == 0) {
		t_nfiles = 0; /* the parent's test files are not the child's to remove */
		clean_child(path);
		exit(0);
	}
	T_CHILD_OK(t_wait_child(pid, 30000, "clean child"), "child forked before any cuFile call");

	/* 2. The parent uses the library from many threads and forks. */
	enum t_mem_kind kind = t_cuda_init() == 0 ? T_MEM_DEVICE : T_MEM_HOST_MALLOC;
	t_mem_alloc(&mem, kind, NTHREADS * CHUNK);
	fprintf(stderr, "buffer: %s\n", t_mem_kind_name(kind));
	T_CUFILE_OK(cuFileDriverOpen());
	fd = t_open(path, O_RDWR);
	fh = t_register_fd(fd);
	T_CUFILE_OK(cuFileBufRegister(mem.ptr, mem.len, 0));
	for (long i = 0; i < NTHREADS; i++)
		T_EQ(pthread_create(&th[i], NULL, reader, (void *)i), 0);
	T_EQ(pthread_create(&th[NTHREADS], NULL, batcher, NULL), 0);

	for (int k = 0; k < NFORKS; k++) {
		usleep(20000 + 3000 * (unsigned)k); /* land at different moments */
		pid = fork();
		T_SYS(pid);
		if (pid == 0) {
			t_nfiles = 0;
			child_calls_everything(path);
			/* _exit, the usual end of a child of a threaded process:
			 * exit handlers and leak checkers (LSan) would run on the
			 * parent's state, whose threads are not here. */
			_exit(0);
		}
		char what[64];
		snprintf(what, sizeof(what), "child %d forked with I/O running", k);
		T_CHILD_OK(t_wait_child(pid, 30000, what), what);
	}
	parent_threads_progress();
	atomic_store(&stop, true);
	for (int i = 0; i <= NTHREADS; i++)
		T_EQ(pthread_join(th[i], NULL), 0);
	long reads = 0;
	for (int i = 0; i < NTHREADS; i++)
		reads += atomic_load(&progress[i]);
	fprintf(stderr, "%d children; parent did %ld reads and %ld batches meanwhile\n", NFORKS, reads,
		atomic_load(&progress[NTHREADS]));

	/* The children's writes did not reach the file. */
	uint8_t *all = malloc(FLEN);
	T_ASSERT(all);
	T_EQ_U(t_pread_full(fd, all, FLEN, 0), FLEN);
	if (t_check_pattern(all, FLEN, 0, 0, "file after the children"))
		T_FAIL("a child changed the file");
	/* And the parent's library is intact: I/O, deregistration, close. */
	T_IO(cuFileRead(fh, mem.ptr, CHUNK, 4096, 0), CHUNK);
	T_CUFILE_OK(cuFileBufDeregister(mem.ptr));
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);
	close(fd);
	t_mem_free(&mem);
	free(all);
	return T_EXIT_PASS;
}
