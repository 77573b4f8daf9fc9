/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileHandleDeregister returns after every descriptor and mapping the
 * library opened for the handle is closed (its twins, its file mappings,
 * its read-ahead windows and their watches), whatever the library's
 * threads did with the handle before: a client that counts its open
 * descriptors right after the call (NIXL's GDS backend does) must find
 * what it had before it registered.  One ctest entry per case:
 *
 *   loop      300 rounds (T_DEREG_ROUNDS: 30 in loop_short) alternating
 *             buffered and O_DIRECT descriptors of one file: register, six
 *             1 MiB sequential reads into device memory (the read-ahead
 *             opens a window), a stream read, a batch of four 64 KiB reads
 *             (last: GetStatus sees its completion at once), deregister;
 *             then, at once, no descriptor of the file but the test's own
 *             and no mapping of it, and the process's descriptor count as
 *             before.  Two threads read another file through their own
 *             handles all the while.
 *   inflight  a call using the handle when it is deregistered: a 4 MiB
 *             cuFileRead, a batch entry, a stream read, each held inside
 *             its file read (the fault library's hook) while another
 *             thread deregisters.  The deregistration waits for it; the
 *             read completes with its bytes; nothing of the file is open
 *             when the call returns.  Work queued and not started (a
 *             stream read behind a host function that holds the stream,
 *             batch entries behind another handle's entry) does not hold
 *             the call back: it runs later and fails with EBADF, writing
 *             nothing outside its buffer.
 *   bound     OPENCUFILE_DEREGISTER_WAIT_MS=200 and a read held for 1.5 s:
 *             the call returns after the bound; the library's descriptors
 *             of the file are closed when that read ends, before it
 *             returns to its caller, and the read has its bytes.
 */
#include <stdatomic.h>

#include "async_test_util.h"
#include "fault.h"

#define FLEN (16 * T_MIB)
#define READ_LEN T_MIB
#define SEQ_READS 6
#define BATCH_N 4
#define BATCH_LEN (64 * T_KIB)
#define STREAM_LEN (256 * T_KIB)
#define ROUNDS 300

static const char *path_a; /* the file the rounds register */
static struct stat st_a;
static char real_a[PATH_MAX];

/* The process's descriptors but io_uring instances, which the library
 * makes for staging lanes as threads first use them, whatever handle they
 * read (the other threads' reads make them while a round runs); and in
 * *of_a (when not NULL) those that name file A. */
struct scan {
	int n, *of_a;
};

static void scan_one(const char *proc_path, const char *target, void *arg)
{
	struct scan *sc = arg;
	if (strcmp(target, "anon_inode:[io_uring]") != 0)
		sc->n++;
	struct stat st;
	if (sc->of_a && stat(proc_path, &st) == 0 && st.st_dev == st_a.st_dev && st.st_ino == st_a.st_ino)
		(*sc->of_a)++;
}

static int scan_fds(int *of_a)
{
	struct scan sc = {0, of_a};
	t_each_fd(scan_one, &sc);
	return sc.n;
}

static int count_fds(void)
{
	return scan_fds(NULL);
}

static int fds_of_a(void)
{
	int n = 0;
	scan_fds(&n);
	return n;
}

/* The count is `want`, or comes back to it within a second: another
 * thread may hold a descriptor for a moment (the statistics snapshot's
 * writer, once a second). */
static void expect_count(int want, const char *when)
{
	int n = count_fds();
	for (int i = 0; i < 200 && n != want; i++) {
		t_sleep_ms(5);
		n = count_fds();
	}
	if (n != want) {
		t_count_fds();
		t_dump_fds();
		T_FAIL("%s: %d descriptors open (io_uring instances not counted), %d before", when, n, want);
	}
}

/* Mappings of file A in this process. */
static int maps_of_a(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	T_ASSERT(f != NULL);
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long ino = 0;
		if (sscanf(line, "%*s %*s %*s %*s %llu", &ino) == 1 &&
		    ino == (unsigned long long)st_a.st_ino && strstr(line, real_a))
			n++;
	}
	fclose(f);
	return n;
}

/* Nothing of file A is open but the test's own `own` descriptors. */
static void expect_a_closed(int own, const char *when)
{
	int fds = fds_of_a(), maps = maps_of_a();
	if (fds != own || maps != 0) {
		t_count_fds();
		t_dump_fds();
		T_FAIL("%s: %d descriptors of the file open (the test's own: %d), %d mappings of it", when,
		       fds, own, maps);
	}
}

/* A case's handle: the test's descriptor of file A, the process's count
 * before the handle was registered, the handle. */
struct subject {
	int fd, total0;
	CUfileHandle_t fh;
};

static struct subject subject_open(int flags)
{
	struct subject sj;
	sj.fd = t_open(path_a, flags);
	sj.total0 = count_fds();
	sj.fh = t_register_fd(sj.fd);
	return sj;
}

/* Once everything of the case finished (the handle deregistered): the
 * process's count as before, the test's descriptor closed. */
static void subject_done(struct subject *sj)
{
	expect_count(sj->total0, "once everything finished");
	close(sj->fd);
}

static void check_dev(CUdeviceptr d, size_t len, off_t foff, const char *what)
{
	uint8_t *b = malloc(len);
	T_ASSERT(b != NULL);
	t_dev_get(b, d, len);
	if (t_check_pattern(b, len, (uint64_t)foff, 1, what))
		T_FAIL("%s: wrong bytes", what);
	free(b);
}

/* ------------------------------------------------------------ the loop */

struct reader {
	CUfileHandle_t fh;
	int fd;
	atomic_bool *stop;
	long reads;
};

/* Reads file C in order, 1 MiB at a time, through its own handle. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	t_cuda_bind_thread();
	CUdeviceptr d = t_dev_alloc(READ_LEN);
	off_t at = 0;
	while (!atomic_load(r->stop)) {
		ssize_t got = cuFileRead(r->fh, (void *)d, READ_LEN, at, 0);
		if (got != (ssize_t)READ_LEN)
			T_FAIL("reader: %zd at %lld (errno %d)", got, (long long)at, errno);
		at = (at + (off_t)READ_LEN) % (off_t)FLEN;
		r->reads++;
	}
	cuMemFree(d);
	return NULL;
}

static void one_round(int i, CUdeviceptr dev, CUstream s, bool check, bool warm)
{
	bool direct = i % 2;
	int fd = t_open(path_a, direct ? O_RDONLY | O_DIRECT : O_RDONLY);
	int total0 = count_fds();
	t_set_case("round %d (%s)", i, direct ? "O_DIRECT" : "buffered");
	CUfileHandle_t fh = t_register_fd(fd);
	/* In order, from a different place each round: the second read
	 * opens a window, the later ones are served from it. */
	off_t base = (off_t)(i % 8) * (off_t)T_MIB;
	for (int k = 0; k < SEQ_READS; k++)
		T_IO(cuFileRead(fh, (void *)dev, READ_LEN, base + (off_t)k * (off_t)READ_LEN, 0), READ_LEN);
	if (check)
		check_dev(dev, READ_LEN, base + (SEQ_READS - 1) * (off_t)READ_LEN, "last sequential read");
	/* A stream read: its operation drops its reference after the stream
	 * has passed it. */
	size_t size = STREAM_LEN;
	off_t foff = 5 * (off_t)T_MIB, boff = 0;
	ssize_t bytes = -12345;
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)dev, &size, &foff, &boff, &bytes, s));
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, (ssize_t)STREAM_LEN);
	if (check)
		check_dev(dev, STREAM_LEN, foff, "stream read");

	/* A batch, last: the executor's thread holds the handle in its
	 * lookup cache past the entries' completion, which GetStatus (polling)
	 * sees at once. */
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, BATCH_N));
	CUfileIOParams_t io[BATCH_N];
	for (int k = 0; k < BATCH_N; k++)
		io[k] = t_batch_io(CUFILE_READ, fh, (void *)dev, BATCH_LEN, (off_t)(k * 3) * (off_t)BATCH_LEN,
				   (off_t)k * (off_t)BATCH_LEN, NULL);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, BATCH_N, io, 0));
	CUfileIOEvents_t ev[BATCH_N];
	t_batch_collect(b, BATCH_N, ev);
	cuFileHandleDeregister(fh);
	/* At once: no settling for what the library holds. */
	expect_a_closed(1, "right after cuFileHandleDeregister");
	for (int k = 0; k < BATCH_N; k++) {
		T_EQ(ev[k].status, CUFILE_COMPLETE);
		T_EQ_U(ev[k].ret, BATCH_LEN);
	}
	cuFileBatchIODestroy(b);
	/* The process's count, allowed to settle for descriptors other code
	 * holds for a moment (the statistics snapshot's writer); not in the
	 * first rounds, which make what the process keeps. */
	if (!warm)
		expect_count(total0, "after cuFileHandleDeregister");
	close(fd);
}

static void case_loop(void)
{
	const char *path_c = t_make_pattern_file(FLEN, 2);
	atomic_bool stop = false;
	struct reader r[2];
	pthread_t th[2];
	for (int k = 0; k < 2; k++) {
		r[k] =
		    (struct reader){.fd = t_open(path_c, k ? O_RDONLY | O_DIRECT : O_RDONLY), .stop = &stop};
		r[k].fh = t_register_fd(r[k].fd);
	}
	CUdeviceptr dev = t_dev_alloc(4 * T_MIB);
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < 2; k++)
		T_ASSERT(pthread_create(&th[k], NULL, reader_main, &r[k]) == 0);
	/* Twice before counting: what the library makes once per process
	 * (the inotify instance, executor threads, the log). */
	one_round(0, dev, s, true, true);
	one_round(1, dev, s, true, true);
	unsigned long served0 = ocf_fault_ra_served();
	int rounds = ROUNDS;
	const char *env = getenv("T_DEREG_ROUNDS");
	if (env && atoi(env) > 0)
		rounds = atoi(env);
	for (int i = 0; i < rounds; i++)
		one_round(i, dev, s, i % 16 == 0, false);
	atomic_store(&stop, true);
	for (int k = 0; k < 2; k++) {
		pthread_join(th[k], NULL);
		T_GT(r[k].reads, 0);
		cuFileHandleDeregister(r[k].fh);
		close(r[k].fd);
	}
	/* The rounds' reads were served by read-ahead windows (a window
	 * the handle's deregistration had to close). */
	T_GT(ocf_fault_ra_served(), served0);
	T_CU(cuStreamDestroy(s));
	cuMemFree(dev);
}

/* -------------------------------------------------- calls in flight */

/* The hook on the file side's read calls: armed, the first call to come
 * sleeps hook_ms, after saying it entered. */
static atomic_int hook_armed, hook_entered;
static long hook_ms;

static void hold_hook(void)
{
	if (atomic_exchange(&hook_armed, 0)) {
		atomic_store(&hook_entered, 1);
		t_sleep_ms(hook_ms);
	}
}

static void arm_hook(long ms)
{
	hook_ms = ms;
	atomic_store(&hook_entered, 0);
	atomic_store(&hook_armed, 1);
}

static void wait_entered(void)
{
	double t0 = t_now_s();
	while (!atomic_load(&hook_entered)) {
		if (t_now_s() - t0 > 10)
			T_FAIL("the held read never reached the file");
		t_sleep_ms(1);
	}
}

struct sync_read {
	CUfileHandle_t fh;
	CUdeviceptr d;
	size_t len;
	ssize_t got;
	int err;
};

static void *sync_read_main(void *arg)
{
	struct sync_read *r = arg;
	t_cuda_bind_thread();
	r->got = cuFileRead(r->fh, (void *)r->d, r->len, 0, 0);
	r->err = errno;
	return NULL;
}

/* Deregisters fh now; returns how long the call took (s). */
static double timed_deregister(CUfileHandle_t fh)
{
	double t0 = t_now_s();
	cuFileHandleDeregister(fh);
	return t_now_s() - t0;
}

#define HOLD_MS 300

static void inflight_sync(bool direct)
{
	t_set_case("cuFileRead in flight (%s)", direct ? "O_DIRECT" : "buffered");
	struct subject sj = subject_open(direct ? O_RDONLY | O_DIRECT : O_RDONLY);
	CUfileHandle_t fh = sj.fh;
	struct sync_read r = {.fh = fh, .d = t_dev_alloc(4 * T_MIB), .len = 4 * T_MIB};
	pthread_t th;
	arm_hook(HOLD_MS);
	T_ASSERT(pthread_create(&th, NULL, sync_read_main, &r) == 0);
	wait_entered();
	double took = timed_deregister(fh);
	expect_a_closed(1, "right after deregistering a handle with a read in flight");
	pthread_join(th, NULL);
	/* It waited for the read, which finished with its bytes. */
	if (took < HOLD_MS / 2000.0)
		T_FAIL("cuFileHandleDeregister returned after %.3f s, before the read in flight ended", took);
	if (r.got != (ssize_t)(4 * T_MIB))
		T_FAIL("the read in flight returned %zd (errno %d)", r.got, r.err);
	check_dev(r.d, 4 * T_MIB, 0, "read in flight");
	/* And the handle is gone for the next call. */
	T_IO_ERRNO(cuFileRead(fh, (void *)r.d, T_MIB, 0, 0), EBADF);
	cuMemFree(r.d);
	subject_done(&sj);
}

static void inflight_batch(void)
{
	t_set_case("batch entry in flight");
	struct subject sj = subject_open(O_RDONLY);
	CUfileHandle_t fh = sj.fh;
	CUdeviceptr d = t_dev_alloc(T_MIB);
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 2));
	/* Two entries that do not follow each other in the file: two reads. */
	CUfileIOParams_t io[2] = {
	    t_batch_io(CUFILE_READ, fh, (void *)d, 256 * T_KIB, 0, 0, (void *)1),
	    t_batch_io(CUFILE_READ, fh, (void *)d, 256 * T_KIB, 4 * (off_t)T_MIB, 512 * (off_t)T_KIB,
		       (void *)2),
	};
	arm_hook(HOLD_MS);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 2, io, 0));
	wait_entered();
	double took = timed_deregister(fh);
	expect_a_closed(1, "right after deregistering a handle with a batch entry in flight");
	CUfileIOEvents_t ev[2];
	t_batch_collect(b, 2, ev);
	if (took < HOLD_MS / 2000.0)
		T_FAIL("cuFileHandleDeregister returned after %.3f s, before the entry in flight ended",
		       took);
	/* The entry in flight completes; the other completed before the
	 * deregistration or fails with EBADF. */
	int complete = 0;
	for (int k = 0; k < 2; k++) {
		if (ev[k].status == CUFILE_COMPLETE && ev[k].ret == 256 * T_KIB) {
			uintptr_t c = (uintptr_t)ev[k].cookie;
			check_dev(d + (c == 1 ? 0 : 512 * T_KIB), 256 * T_KIB, c == 1 ? 0 : 4 * (off_t)T_MIB,
				  "batch entry");
			complete++;
		} else if (ev[k].status != CUFILE_FAILED || (ssize_t)ev[k].ret != -EBADF) {
			T_FAIL("batch entry %p: status %d ret %zd", ev[k].cookie, (int)ev[k].status,
			       (ssize_t)ev[k].ret);
		}
	}
	T_GE(complete, 1);
	cuFileBatchIODestroy(b);
	cuMemFree(d);
	subject_done(&sj);
}

static void inflight_stream(CUstream s)
{
	t_set_case("stream read in flight");
	struct subject sj = subject_open(O_RDONLY | O_DIRECT);
	CUfileHandle_t fh = sj.fh;
	CUdeviceptr d = t_dev_alloc(T_MIB);
	size_t size = T_MIB;
	off_t foff = 2 * (off_t)T_MIB, boff = 0;
	ssize_t bytes = -12345;
	arm_hook(HOLD_MS);
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)d, &size, &foff, &boff, &bytes, s));
	wait_entered();
	double took = timed_deregister(fh);
	expect_a_closed(1, "right after deregistering a handle with a stream read in flight");
	T_CU(cuStreamSynchronize(s));
	if (took < HOLD_MS / 2000.0)
		T_FAIL("cuFileHandleDeregister returned after %.3f s, before the stream read ended", took);
	T_EQ(bytes, (ssize_t)T_MIB);
	check_dev(d, T_MIB, foff, "stream read in flight");
	cuMemFree(d);
	subject_done(&sj);
}

/* A host function that holds its stream until the test lets it go. */
static atomic_int stream_gate;

static void CUDA_CB hold_stream(void *arg)
{
	(void)arg;
	while (!atomic_load(&stream_gate))
		t_sleep_ms(1);
}

static void queued_stream(CUstream s)
{
	t_set_case("stream read queued behind a held stream");
	struct subject sj = subject_open(O_RDONLY);
	CUfileHandle_t fh = sj.fh;
	const size_t guard = 64 * T_KIB;
	CUdeviceptr d = t_dev_alloc(T_MIB + guard);
	t_dev_fill(d, T_POISON, T_MIB + guard);
	size_t size = T_MIB - 4096;
	off_t foff = 3 * (off_t)T_MIB, boff = 4096;
	ssize_t bytes = -12345;
	atomic_store(&stream_gate, 0);
	T_CU(cuLaunchHostFunc(s, hold_stream, NULL));
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)d, &size, &foff, &boff, &bytes, s));
	double took = timed_deregister(fh);
	/* Not waited for: the stream has not reached it. */
	if (took > 2.0)
		T_FAIL("cuFileHandleDeregister waited %.3f s for an operation the stream had not reached",
		       took);
	expect_a_closed(1, "right after deregistering a handle with a stream read queued");
	atomic_store(&stream_gate, 1);
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, -EBADF);
	/* Its range holds zeros (the copies were queued at submission);
	 * nothing before or after it was written. */
	uint8_t *b = malloc(T_MIB + guard);
	T_ASSERT(b != NULL);
	t_dev_get(b, d, T_MIB + guard);
	if (t_check_fill(b, 4096, T_POISON, "before the range") ||
	    t_check_fill(b + 4096, size, 0, "the range") ||
	    t_check_fill(b + 4096 + size, T_MIB + guard - 4096 - size, T_POISON, "after the range"))
		T_FAIL("a failed stream read wrote outside its range");
	free(b);
	cuMemFree(d);
	subject_done(&sj);
}

/* Batch entries of the handle queued behind another handle's entry that
 * holds the (one) executor thread. */
static void queued_batch(void)
{
	t_set_case("batch entries queued behind another handle's");
	struct subject sj = subject_open(O_RDONLY);
	CUfileHandle_t fh = sj.fh;
	struct t_gate g;
	CUfileHandle_t gfh = t_gate_open(&g, FLEN, 1);
	uint8_t *host = malloc(3 * 64 * T_KIB);
	T_ASSERT(host != NULL);
	memset(host, T_POISON, 3 * 64 * T_KIB);
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 3));
	CUfileIOParams_t io[3] = {
	    t_batch_io(CUFILE_READ, gfh, host, 64 * T_KIB, 0, 0, (void *)1),
	    t_batch_io(CUFILE_READ, fh, host, 64 * T_KIB, 0, 64 * (off_t)T_KIB, (void *)2),
	    t_batch_io(CUFILE_READ, fh, host, 64 * T_KIB, T_MIB, 128 * (off_t)T_KIB, (void *)3),
	};
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 3, io, 0));
	t_gate_wait_entered(&g, 1);
	double took = timed_deregister(fh);
	if (took > 2.0)
		T_FAIL("cuFileHandleDeregister waited %.3f s for entries not started", took);
	expect_a_closed(1, "right after deregistering a handle with batch entries queued");
	t_gate_allow(&g, -1);
	CUfileIOEvents_t ev[3];
	t_batch_collect(b, 3, ev);
	for (int k = 0; k < 3; k++) {
		uintptr_t c = (uintptr_t)ev[k].cookie;
		if (c == 1) {
			T_EQ(ev[k].status, CUFILE_COMPLETE);
			continue;
		}
		T_EQ(ev[k].status, CUFILE_FAILED);
		T_EQ((ssize_t)ev[k].ret, -EBADF);
	}
	if (t_check_fill(host + 64 * T_KIB, 128 * T_KIB, T_POISON, "the failed entries' buffers"))
		T_FAIL("a failed batch entry wrote into its buffer");
	cuFileBatchIODestroy(b);
	cuFileHandleDeregister(gfh);
	free(host);
	subject_done(&sj);
}

static void install_hooks(void)
{
	/* Whichever call the read makes first: pread (direct and small
	 * reads), preadv2 (cached bytes), a copy through the mapping. */
	ocf_fault_on_call(OCF_FAULT_PREAD, hold_hook);
	ocf_fault_on_call(OCF_FAULT_PREADV2, hold_hook);
	ocf_fault_on_call(OCF_FAULT_MAPPED, hold_hook);
	ocf_fault_on_call(OCF_FAULT_URING, hold_hook); /* an io_uring completion */
}

static void case_inflight(void)
{
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	/* Warm: lanes, executor threads, the stream's ring. */
	int fd = t_open(path_a, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	CUdeviceptr d = t_dev_alloc(T_MIB);
	size_t size = T_MIB;
	off_t foff = 0, boff = 0;
	ssize_t bytes;
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)d, &size, &foff, &boff, &bytes, s));
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, (ssize_t)T_MIB);
	cuFileHandleDeregister(fh);
	/* The log, opened at its first line (a failure's), stays open. */
	T_IO_ERRNO(cuFileRead(fh, (void *)d, T_MIB, 0, 0), EBADF);
	close(fd);
	cuMemFree(d);

	install_hooks();
	inflight_sync(false);
	inflight_sync(true);
	inflight_batch();
	inflight_stream(s);
	ocf_fault_reset();
	queued_stream(s);
	queued_batch();
	T_CU(cuStreamDestroy(s));
}

/* ---------------------------------------------------------- the bound */

static void case_bound(void)
{
	t_set_case("a read that outlasts the bound");
	/* The log, opened at its first line, stays open. */
	char c;
	T_IO_ERRNO(cuFileRead((CUfileHandle_t)(uintptr_t)0x1000, &c, 1, 0, 0), EBADF);
	struct subject sj = subject_open(O_RDONLY);
	CUfileHandle_t fh = sj.fh;
	struct sync_read r = {.fh = fh, .d = t_dev_alloc(4 * T_MIB), .len = 4 * T_MIB};
	install_hooks();
	arm_hook(1500);
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, sync_read_main, &r) == 0);
	wait_entered();
	double took = timed_deregister(fh);
	/* Back after the bound (200 ms), long before the read ends. */
	if (took < 0.15 || took > 1.2)
		T_FAIL("cuFileHandleDeregister took %.3f s with a bound of 0.2 s and a read of 1.5 s", took);
	/* The read still has its descriptors; it closes them as it ends. */
	pthread_join(th, NULL);
	expect_a_closed(1, "once the read in flight returned");
	if (r.got != (ssize_t)(4 * T_MIB))
		T_FAIL("the read in flight returned %zd (errno %d)", r.got, r.err);
	check_dev(r.d, 4 * T_MIB, 0, "read that outlasted the bound");
	ocf_fault_reset();
	cuMemFree(r.d);
	subject_done(&sj);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "loop";
	t_cuda_require();
	path_a = t_make_pattern_file(FLEN, 1);
	if (!t_odirect_supported(path_a))
		T_SKIP("the test directory's file system refuses O_DIRECT");
	T_SYS(stat(path_a, &st_a));
	T_ASSERT(realpath(path_a, real_a) != NULL);
	if (!strcmp(which, "bound"))
		setenv("OPENCUFILE_DEREGISTER_WAIT_MS", "200", 1);
	T_CUFILE_OK(cuFileDriverOpen());
	if (!strcmp(which, "loop"))
		case_loop();
	else if (!strcmp(which, "inflight"))
		case_inflight();
	else if (!strcmp(which, "bound"))
		case_bound();
	else
		T_FAIL("unknown case %s", which);
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
