/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process that ends while cuFile I/O is in flight on other threads must
 * end: neither hang nor crash, exit status 0.  The test runs itself as a
 * child process (/proc/self/exe SCENARIO) once per scenario and waits at
 * most 30 s for each:
 *
 *   read-exit / read-return   8 threads loop 16 MiB reads (split over the
 *                             engine's workers) and 64 KiB writes; main
 *                             calls exit(0) / returns from main meanwhile
 *   batch-exit                batch entries blocked inside a userspace file
 *                             system read, a thread waiting in GetStatus,
 *                             a second batch on a real file; exit(0)
 *   stream-return             stream reads queued and one blocked in the
 *                             file system (host memory without CUDA: the
 *                             reads are synchronous, so a batch stands in)
 *   close-exit                a thread in cuFileDriverClose waiting for an
 *                             I/O that never finishes; exit(0)
 *
 * The driver is never closed before the process ends.
 */
#include "async_test_util.h"

#include <stdatomic.h>

#define NREADERS 8
#define BIG (16 * T_MIB)
#define FLEN (32 * T_MIB)

static const char *path;
static atomic_int readers_going; /* readers past their first read and write */
/* Set by the scenario right before it ends the process: from then on the
 * CUDA driver's own exit handlers may tear its context down under the
 * readers, and a read that fails with an error (rather than crashing or
 * hanging) is what the library should do. */
static atomic_bool ending;
static struct t_gate gate;
static bool use_gpu; /* set before any thread starts (t_cuda_init is not thread-safe) */

static void *reader(void *arg)
{
	long id = (long)arg;
	struct t_mem m;
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = NULL;

	/* Concurrent first registrations of one file are fine; each thread
	 * has its own descriptor. */
	fh = t_register_fd(fd);
	if (use_gpu)
		t_cuda_bind_thread();
	t_mem_alloc(&m, use_gpu ? T_MEM_DEVICE : T_MEM_HOST_MALLOC, BIG);
	for (unsigned it = 0;; it++) {
		if (it == 1)
			atomic_fetch_add(&readers_going, 1);
		off_t foff = (off_t)(((unsigned)id * 7 + it) % 16) * (off_t)T_MIB;
		ssize_t r = cuFileRead(fh, m.ptr, BIG, foff, 0);
		if (r != (ssize_t)BIG && !atomic_load(&ending))
			T_FAIL("reader %ld: read returned %zd", id, r);
		r = cuFileWrite(fh, m.ptr, 64 * T_KIB, FLEN + (off_t)id * (off_t)(64 * T_KIB), 0);
		if (r != (ssize_t)(64 * T_KIB) && !atomic_load(&ending))
			T_FAIL("reader %ld: write returned %zd", id, r);
	}
	return NULL;
}

static void start_readers(void)
{
	pthread_t th;

	for (long i = 0; i < NREADERS; i++)
		T_EQ(pthread_create(&th, NULL, reader, (void *)i), 0);
	/* Every reader past its set-up (a reader still binding its context
	 * when main ends would find the CUDA driver torn down: the test's
	 * failure, not the library's), and I/O in flight on each. */
	double t0 = t_now_s();
	while (atomic_load(&readers_going) < NREADERS)
		if (t_now_s() - t0 > 20)
			T_FAIL("the readers did not get going");
	t_sleep_ms(5); /* well inside the next round of reads */
}

static void *status_waiter(void *arg)
{
	CUfileBatchHandle_t b = arg;
	CUfileIOEvents_t ev[16];
	unsigned nr = 16;

	/* Waits forever: the gate never opens. */
	cuFileBatchIOGetStatus(b, 16, &nr, ev, NULL);
	return NULL;
}

static void start_blocked_batch(void)
{
	static uint8_t host[16][8192];
	CUfileIOParams_t io[16];
	CUfileBatchHandle_t b;
	pthread_t th;

	CUfileHandle_t gfh = t_gate_open(&gate, T_MIB, 0);
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 16));
	for (int i = 0; i < 16; i++)
		io[i] = t_batch_io(CUFILE_READ, gfh, host[i], 8192, i * 8192, 0, NULL);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 16, io, 0));
	t_gate_wait_entered(&gate, 1);
	T_EQ(pthread_create(&th, NULL, status_waiter, b), 0);
}

static void *closer(void *arg)
{
	(void)arg;
	cuFileDriverClose(); /* waits for the blocked I/O: forever */
	return NULL;
}

static int scenario(const char *name)
{
	if (strcmp(name, "read-exit") == 0) {
		start_readers();
		atomic_store(&ending, true);
		exit(0);
	}
	if (strcmp(name, "read-return") == 0) {
		start_readers();
		atomic_store(&ending, true);
		return 0;
	}
	if (strcmp(name, "batch-exit") == 0) {
		start_blocked_batch();
		/* A second batch that does real file I/O. */
		static uint8_t host[32][65536];
		CUfileIOParams_t io[32];
		CUfileBatchHandle_t b;
		int fd = t_open(path, O_RDONLY);
		CUfileHandle_t fh = t_register_fd(fd);
		T_CUFILE_OK(cuFileBatchIOSetUp(&b, 32));
		for (int i = 0; i < 32; i++)
			io[i] = t_batch_io(CUFILE_READ, fh, host[i], 65536, (off_t)i * 65536, 0, NULL);
		T_CUFILE_OK(cuFileBatchIOSubmit(b, 32, io, 0));
		exit(0);
	}
	if (strcmp(name, "stream-return") == 0) {
		if (!use_gpu) {
			start_blocked_batch();
			return 0;
		}
		CUstream s;
		static size_t size = 8192;
		static off_t offs[8], zero;
		static ssize_t bytes[8];
		struct t_mem m;
		t_mem_alloc(&m, T_MEM_DEVICE, 8 * 8192);
		CUfileHandle_t gfh = t_gate_open(&gate, T_MIB, 0);
		T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		/* The readers get going first: a GPU-memory stream read queues
		 * its copies at submission, behind a wait for its file data,
		 * and on the real driver copies of other streams can queue
		 * behind those until the data comes (never, here). */
		start_readers();
		for (int i = 0; i < 8; i++) {
			offs[i] = i * 8192;
			T_CUFILE_OK(cuFileReadAsync(gfh, (uint8_t *)m.ptr + i * 8192, &size, &offs[i], &zero,
						    &bytes[i], s));
			/* The stream now sits in the first operation's wait for
			 * data that never comes, and the readers' copies meet
			 * it: the other submissions come after that (on an
			 * H100 the second one waited forever for the driver's
			 * lock while a library thread held it in a synchronous
			 * copy held up behind the wait). */
			if (i == 0) {
				t_gate_wait_entered(&gate, 1);
				t_sleep_ms(50);
			}
		}
		atomic_store(&ending, true);
		return 0;
	}
	if (strcmp(name, "close-exit") == 0) {
		pthread_t th;
		T_CUFILE_OK(cuFileDriverOpen());
		start_blocked_batch();
		T_EQ(pthread_create(&th, NULL, closer, NULL), 0);
		t_sleep_ms(50);
		exit(0);
	}
	T_FAIL("unknown scenario %s", name);
}

int main(int argc, char **argv)
{
	static const char *const scenarios[] = {"read-exit", "read-return", "batch-exit", "stream-return",
						 "close-exit"};

	if (argc == 3) {
		path = argv[2];
		use_gpu = t_cuda_init() == 0;
		return scenario(argv[1]);
	}
	path = t_make_pattern_file(FLEN + NREADERS * 64 * T_KIB, 0);
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		double t0 = t_now_s();
		pid_t pid = fork();
		T_SYS(pid);
		if (pid == 0) {
			execl(t_self_exe(argv[0]), argv[0], scenarios[i], path, (char *)NULL);
			_exit(127);
		}
		T_CHILD_OK(t_wait_child(pid, 30000, scenarios[i]), scenarios[i]);
		fprintf(stderr, "%-14s exited 0 after %.2f s\n", scenarios[i], t_now_s() - t0);
	}
	/* The children wrote only past FLEN: the rest is unchanged. */
	int fd = t_open(path, O_RDONLY);
	uint8_t *buf = malloc(FLEN);
	T_ASSERT(buf);
	T_EQ_U(t_pread_full(fd, buf, FLEN, 0), FLEN);
	if (t_check_pattern(buf, FLEN, 0, 0, "file after the scenarios"))
		T_FAIL("the file changed");
	free(buf);
	close(fd);
	return T_EXIT_PASS;
}
