/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library) Staged reads copy the bytes the page cache
 * holds through a read-only mapping of the file (src/filemap.c), and every
 * way that copy can fail ends in the right bytes or the right short count,
 * never in a dead process:
 *   - warm file, buffered handle, into device memory: the exact bytes,
 *     with a short count at end of file, through the mapping (its calls
 *     counted) and without a single RWF_NOWAIT copy; a read into host
 *     memory is not staged and keeps to preadv2, and so does an O_DIRECT
 *     handle (whose blocks a racing direct write must find whole);
 *   - a range that crosses the mapping's 1 GiB windows (a sparse file);
 *   - a copy the fault library fails: the range read again with preadv2;
 *   - the file shrunk between the copy's size check and the copy (a real
 *     SIGBUS, twice in a row: the first one's recovery leaves SIGBUS
 *     deliverable): the bytes up to the new end, then end of file;
 *   - a SIGBUS that is not the library's (raised by the program) reaches
 *     the handler the program had installed before the library's;
 *   - a thread that blocks SIGBUS reads with preadv2 (a fault there would
 *     kill the process); so does every thread once the program replaces
 *     the library's handler;
 *   - about a second after the last read, POSIX_FADV_DONTNEED can drop
 *     every page the reads copied (the mapping no longer holds them).
 * argv[1]: the copy to use (OPENCUFILE_MAPPED_READS: on, sse2, avx2,
 * plain), so that each copy loop this CPU can run is checked; or "bulk":
 * the chunks of split requests read while more than twice one request's
 * participants run are copied through the mapping with ordinary stores (to
 * preadv2 with OPENCUFILE_MAPPED_BULK=off), a lone caller's with streaming
 * stores; or "ignored": a program that ignores SIGBUS still dies of a
 * fault's.
 */
#include "test.h"
#include "fault.h"

#include <setjmp.h>
#include <signal.h>

#define FLEN (4 * T_MIB + 100)
#define BUFLEN (4 * T_MIB + 3 * 4096)
#define GIB ((off_t)1 << 30)

static const char *shrink_path;
static off_t shrink_to;

/* Run at the mapped copy's fault-library call (after its size check). */
static void shrink_file(void)
{
	ocf_fault_on_call(OCF_FAULT_MAPPED, NULL); /* once */
	T_SYS(truncate(shrink_path, shrink_to));
}

static volatile sig_atomic_t app_bus_calls;

static void app_bus(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	app_bus_calls++;
}

struct counts {
	unsigned long mapped, nowait;
};

static struct counts now(void)
{
	return (struct counts){ocf_fault_calls(OCF_FAULT_MAPPED), ocf_fault_calls(OCF_FAULT_PREADV2)};
}

/* Reads [foff, foff+size) into m at boff and checks the bytes and count. */
static void read_ok(CUfileHandle_t fh, struct t_mem *m, off_t foff, size_t size, off_t boff, ssize_t expect)
{
	T_EQ(t_read_and_verify_window(fh, m, 0, size, foff, boff, expect, 0, 4096), 0);
}

/* Warm file: through the mapping only (device memory, buffered handle),
 * or not at all (host memory; an O_DIRECT handle, whose cached blocks are
 * copied whole by preadv2, as a racing direct write needs). */
static void warm_reads(CUfileHandle_t fh, const char *what, bool mapped)
{
	static const struct {
		off_t foff;
		size_t size;
		off_t boff;
		ssize_t expect;
	} cases[] = {
	    {0, 64 * T_KIB, 0, 64 * T_KIB},
	    {5000, T_MIB + 7, 3, T_MIB + 7},
	    {0, 4 * T_MIB, 0, 4 * T_MIB},					  /* several chunks */
	    {FLEN - 100 - 300 * T_KIB, 300 * T_KIB + 4096, 0, 300 * T_KIB + 100}, /* past end of file */
	};
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, BUFLEN);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t_set_case("warm file, %s handle, device memory, file offset %lld, size %zu", what,
			   (long long)cases[i].foff, cases[i].size);
		struct counts a = now();
		read_ok(fh, &m, cases[i].foff, cases[i].size, cases[i].boff, cases[i].expect);
		struct counts b = now();
		if (mapped) {
			T_GT(b.mapped, a.mapped);
			T_EQ_U(b.nowait, a.nowait);
		} else {
			T_EQ_U(b.mapped, a.mapped);
			T_GT(b.nowait, a.nowait);
		}
	}
	t_mem_free(&m);

	t_mem_alloc(&m, T_MEM_HOST_MMAP, BUFLEN);
	t_set_case("warm file, %s handle, host memory (not staged)", what);
	struct counts a = now();
	read_ok(fh, &m, 5000, T_MIB + 7, 3, T_MIB + 7);
	T_EQ_U(now().mapped, a.mapped);
	t_mem_free(&m);
}

/* Skips the test where no read can copy through a mapping: not a local
 * file system of handle.c's list, or no cachestat(2) (Linux 6.5), whose
 * count of cached pages the copies serve; valgrind, for one, does not pass
 * the call through. */
static void require_mapped_reads(const char *path)
{
	t_require_local_odirect_fs(path);
	struct {
		uint64_t off, len;
	} range = {0, 4096};
	uint64_t cs[5];
	int fd = t_open(path, O_RDONLY);
	long r = syscall(451, fd, &range, cs, 0);
	int e = errno;
	close(fd);
	if (r != 0)
		T_SKIP("no cachestat here (%s): reads never copy through the mapping", strerror(e));
}

/* "bulk": one participant per request (execution.max_request_parallelism
 * 1; a lone caller's request takes a helper all the same), so that three
 * callers of split requests (16 MiB), started together, are more than twice
 * a request's participants whenever all three are in a read, helpers or not
 * (on a loaded machine a helper may join late or never: two callers and a
 * helper were not always enough): their chunks are bulk (fileio.h,
 * fio_bulk_reads), copied through the mapping with ordinary stores, or left
 * to preadv2 with OPENCUFILE_MAPPED_BULK=off; a lone caller's are copied
 * with streaming stores (x86: every copy this library picks there
 * streams). */
#define BULK_LEN (16 * T_MIB)
#define BULK_READERS 3

static CUfileHandle_t bulk_fh;
static struct t_mem bulk_mem[BULK_READERS];
static pthread_barrier_t bulk_start;

static void *bulk_reader(void *arg)
{
	struct t_mem *m = &bulk_mem[(long)arg];
	pthread_barrier_wait(&bulk_start);
	for (int i = 0; i < 12; i++)
		T_EQ(cuFileRead(bulk_fh, m->ptr, BULK_LEN, 0, 0), BULK_LEN);
	return NULL;
}

static int bulk_main(void)
{
	T_CUFILE_OK(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, 1));
	unsetenv("OPENCUFILE_MAPPED_READS"); /* the best copy: streaming, on x86 */
	t_cuda_require();
	const char *path = t_make_pattern_file(BULK_LEN, 0);
	require_mapped_reads(path);
	struct t_pin pin = t_pin_cached(path, 0, BULK_LEN);
	int fd = t_open(path, O_RDONLY);
	bulk_fh = t_register_fd(fd);
	struct t_mem *m = bulk_mem;
	for (int i = 0; i < BULK_READERS; i++)
		t_mem_alloc(&m[i], T_MEM_DEVICE, BULK_LEN + 8192);

	const char *e = getenv("OPENCUFILE_MAPPED_BULK");
	bool bulk_mapped = !(e && (!strcmp(e, "off") || !strcmp(e, "0")));
	t_set_case("a lone caller's split request: through the mapping");
	struct counts a = now();
	unsigned long s0 = ocf_fault_mapped_streamed();
	T_EQ(t_read_and_verify_window(bulk_fh, &m[0], 0, BULK_LEN, 0, 0, BULK_LEN, 0, 4096), 0);
	T_GT(now().mapped, a.mapped);
	T_EQ_U(now().nowait, a.nowait);
#if defined(__x86_64__)
	T_EQ_U(ocf_fault_mapped_streamed() - s0, now().mapped - a.mapped);
#endif

	t_set_case("three callers of split requests: over twice a request's participants, %s",
		   bulk_mapped ? "ordinary stores through the mapping" : "by preadv2");
	a = now();
	s0 = ocf_fault_mapped_streamed();
	t_run_numbered_threads(BULK_READERS, bulk_reader, &bulk_start);
	if (bulk_mapped) {
		T_EQ_U(now().nowait, a.nowait);
#if defined(__x86_64__)
		/* Some copies did not stream: the bulk chunks'. */
		T_GT(now().mapped - a.mapped, ocf_fault_mapped_streamed() - s0);
#endif
	} else {
		T_GT(now().nowait, a.nowait);
	}
	for (int i = 0; i < BULK_READERS; i++) {
		T_EQ(t_read_and_verify_window(bulk_fh, &m[i], 0, BULK_LEN, 0, 0, BULK_LEN, 0, 4096), 0);
		t_mem_free(&m[i]);
	}
	t_unpin_cached(&pin);
	cuFileHandleDeregister(bulk_fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	printf("mapped reads: bulk chunks %s\n", bulk_mapped ? "with ordinary stores" : "by preadv2");
	return T_EXIT_PASS;
}

/* "ignored": a program that ignores SIGBUS and faults on a mapping of its
 * own dies of SIGBUS, as it would without the library (the kernel does not
 * let a fault's SIGBUS be ignored), instead of faulting forever in the
 * library's handler.  Run in a child, which the parent watches. */
static int ignored_main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	require_mapped_reads(path);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		alarm(20); /* a fault loop ends as SIGALRM, which the parent reports */
		signal(SIGBUS, SIG_IGN);
		int fd = open(path, O_RDWR);
		CUfileDescr_t d = {.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD};
		d.handle.fd = fd;
		CUfileHandle_t fh;
		CUdeviceptr dp;
		if (fd < 0 || cuFileHandleRegister(&fh, &d).err != CU_FILE_SUCCESS ||
		    cuMemAlloc(&dp, T_MIB) != 0 ||
		    cuFileRead(fh, (void *)dp, T_MIB, 0, 0) != (ssize_t)T_MIB ||
		    ocf_fault_calls(OCF_FAULT_MAPPED) == 0)
			_exit(3); /* the library's handler is installed only by a mapped copy */
		volatile char *p = mmap(NULL, FLEN, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || ftruncate(fd, 4096) != 0)
			_exit(4);
		(void)p[2 * T_MIB]; /* past the end of the file: SIGBUS */
		_exit(5);
	}
	int st;
	T_SYS(waitpid(pid, &st, 0));
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS)
		T_FAIL("child: %s %d (expected death by SIGBUS)", WIFSIGNALED(st) ? "signal" : "exit",
		       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	printf("mapped reads: a fault's SIGBUS the program ignores still ends it\n");
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	const char *copy = argc > 1 ? argv[1] : "on";
	if (!strcmp(copy, "bulk"))
		return bulk_main();
	if (!strcmp(copy, "ignored"))
		return ignored_main();
	setenv("OPENCUFILE_MAPPED_READS", copy, 1);
	/* Every copy on the calling thread (no helpers): the faults below
	 * land where the test can tell which thread recovered. */
	setenv("OPENCUFILE_PARALLEL", "1", 1);
	unsetenv("OPENCUFILE_DIRECT_READS_FROM_CACHE");
	unsetenv("CUFILE_ENV_PATH_JSON");
	/* The program's own SIGBUS handler, before the library's first copy. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_bus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	T_SYS(sigaction(SIGBUS, &sa, NULL));

	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	require_mapped_reads(path);
	struct t_pin pin = t_pin_cached(path, 0, FLEN);
	int dfd = t_open(path, O_RDONLY | O_DIRECT);
	int bfd = t_open(path, O_RDONLY);
	CUfileHandle_t dfh = t_register_fd(dfd);
	CUfileHandle_t bfh = t_register_fd(bfd);
	warm_reads(bfh, "buffered", true);
	warm_reads(dfh, "O_DIRECT", false);
	t_unpin_cached(&pin);

	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, BUFLEN);

	/* Across two windows: pattern around 1 GiB of a sparse file. */
	{
		const char *sp = t_new_file_path();
		int fd = t_open(sp, O_RDWR);
		t_pwrite_pattern(fd, (uint64_t)(GIB - 512 * T_KIB), T_MIB, 0);
		T_SYS(ftruncate(fd, GIB + T_MIB));
		CUfileHandle_t fh = t_register_fd(fd);
		t_set_case("range across the 1 GiB windows");
		struct counts a = now();
		read_ok(fh, &m, GIB - 300 * T_KIB, 600 * T_KIB, 0, 600 * T_KIB);
		T_GT(now().mapped, a.mapped);
		T_EQ_U(now().nowait, a.nowait);
		cuFileHandleDeregister(fh);
		close(fd);
		unlink(sp);
	}

	/* A copy that fails: read again with preadv2. */
	t_set_case("mapped copy failed by the fault library");
	struct counts a = now();
	ocf_fault_fail_nth(OCF_FAULT_MAPPED, 1, 0, EFAULT);
	read_ok(bfh, &m, 5000, T_MIB + 7, 3, T_MIB + 7);
	ocf_fault_reset();
	T_GT(ocf_fault_hits(OCF_FAULT_MAPPED), 0);
	T_GT(now().nowait, a.nowait);

	/* The file shrinks under the copy: a real SIGBUS, caught, twice. */
	for (int round = 0; round < 2; round++) {
		shrink_path = t_make_pattern_file(FLEN, 0);
		int fd = t_open(shrink_path, O_RDONLY);
		CUfileHandle_t fh = t_register_fd(fd);
		shrink_to = 256 * T_KIB + 4096 * round;
		t_set_case("file shrunk to %lld under the copy, round %d", (long long)shrink_to, round + 1);
		a = now();
		unsigned long caught = ocf_fault_mapped_caught();
		ocf_fault_on_call(OCF_FAULT_MAPPED, shrink_file);
		read_ok(fh, &m, 64 * T_KIB, 2 * T_MIB, 0, (ssize_t)(shrink_to - 64 * T_KIB));
		ocf_fault_on_call(OCF_FAULT_MAPPED, NULL);
		/* One SIGBUS caught, on this thread (the only one that
		 * copies): in round 2 only if round 1 left it deliverable. */
		T_EQ_U(ocf_fault_mapped_caught() - caught, 1);
		T_GT(now().nowait, a.nowait);
		T_EQ(app_bus_calls, 0);
		cuFileHandleDeregister(fh);
		close(fd);
	}

	/* A SIGBUS that is not the library's goes to the program's handler. */
	t_set_case("the program's own SIGBUS");
	T_SYS(raise(SIGBUS));
	T_EQ(app_bus_calls, 1);

	/* A thread that blocks SIGBUS. */
	t_set_case("SIGBUS blocked in the reading thread");
	sigset_t bus, old;
	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	T_EQ(pthread_sigmask(SIG_BLOCK, &bus, &old), 0);
	a = now();
	read_ok(bfh, &m, 5000, T_MIB + 7, 3, T_MIB + 7);
	T_EQ_U(now().mapped, a.mapped);
	T_GT(now().nowait, a.nowait);
	T_EQ(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	a = now();
	read_ok(bfh, &m, 5000, T_MIB + 7, 3, T_MIB + 7);
	T_GT(now().mapped, a.mapped);

	/* Within about a second of the last read nothing stays mapped. */
	t_set_case("pages dropped from the mapping after the reads");
	int fd = t_open(path, O_RDONLY);
	size_t left = 0;
	for (int i = 0; i < 30; i++) {
		T_SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		left = t_cached_pages(path, FLEN, 0, FLEN);
		if (left == 0)
			break;
		usleep(100 * 1000);
	}
	close(fd);
	T_EQ_U(left, 0);

	/* The program replaces the library's handler: pread from then on. */
	t_set_case("the program's handler installed after the library's");
	T_SYS(sigaction(SIGBUS, &sa, NULL));
	pin = t_pin_cached(path, 0, FLEN); /* cached again */
	a = now();
	read_ok(bfh, &m, 5000, T_MIB + 7, 3, T_MIB + 7);
	read_ok(dfh, &m, 0, 4 * T_MIB, 0, 4 * T_MIB);
	T_EQ_U(now().mapped, a.mapped);
	T_GT(now().nowait, a.nowait);
	t_unpin_cached(&pin);

	t_mem_free(&m);
	cuFileHandleDeregister(dfh);
	cuFileHandleDeregister(bfh);
	close(dfd);
	close(bfd);
	T_CUFILE_OK(cuFileDriverClose());
	printf("mapped reads (%s): bytes right, faults recovered\n", copy);
	return T_EXIT_PASS;
}
