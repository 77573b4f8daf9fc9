/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library sizes its threads from the CPUs the process may use, not the
 * host's: run as is, under `taskset -c 0`, and with OPENCUFILE_CPUS=1 (the
 * ctest entries), it must
 *   - log the budget at driver open ("CPU budget N (limited by WHY)") with
 *     the figure this test computes itself (affinity mask, OPENCUFILE_CPUS;
 *     the CFS quota is checked by test_cpu_budget_reads_cgroup_quota.sh);
 *   - start no more engine workers (cufile-io-N) than the budget, with a
 *     large request that asks for every helper it may have;
 *   - start at most max(2, budget) threads per executor (cufile-batch,
 *     cufile-stream) for a batch of many entries;
 *   - and move every byte right.
 * Threads are counted by name in /proc/self/task while they exist (the
 * pools keep their threads until the driver closes).
 */
#include "test.h"
#include "async_test_util.h"

#include <dirent.h>
#include <sched.h>

#define FLEN (64 * T_MIB)

static long expected_budget(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) < n)
		n = CPU_COUNT(&set);
	const char *cap = getenv("OPENCUFILE_CPUS");
	if (cap && atol(cap) > 0 && atol(cap) < n)
		n = atol(cap);
	return n < 1 ? 1 : n;
}

static int count_threads(const char *prefix)
{
	DIR *d = opendir("/proc/self/task");
	T_ASSERT(d != NULL);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], comm[64] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, prefix, strlen(prefix)))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

int main(void)
{
	long budget = expected_budget();
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);

	/* The log line of the open. */
	const char *logp = getenv("CUFILE_LOGFILE_PATH");
	T_ASSERT(logp != NULL);
	FILE *lf = fopen(logp, "r");
	T_ASSERT(lf != NULL);
	char line[1024], want[64];
	long logged = -1;
	snprintf(want, sizeof(want), "CPU budget ");
	while (fgets(line, sizeof(line), lf)) {
		char *p = strstr(line, want);
		if (p)
			logged = atol(p + strlen(want));
	}
	fclose(lf);
	if (logged != budget)
		T_FAIL("the log says CPU budget %ld, expected %ld (the log level must be INFO)", logged, budget);

	/* One large read into host memory: split across every helper the
	 * engine may give it. */
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_HOST_MALLOC, FLEN);
	t_set_case("one 64 MiB read");
	if (t_read_and_verify(fh, &m, 0, FLEN, 0, 0, FLEN, 0))
		T_FAIL("bad read");
	int io = count_threads("cufile-io-");
	fprintf(stderr, "budget %ld: %d engine workers\n", budget, io);
	if (io > budget)
		T_FAIL("%d engine workers for a budget of %ld CPUs", io, budget);
	if (budget > 1 && io < 1)
		T_FAIL("no engine worker at all for a budget of %ld", budget);

	/* A batch of 64 entries: the batch executor starts its threads. */
	enum { N = 64, BS = 64 * 1024 };
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, N));
	CUfileIOParams_t p[N];
	for (int i = 0; i < N; i++)
		p[i] = t_batch_io(CUFILE_READ, fh, m.ptr, BS, (off_t)i * BS, (off_t)i * BS, (void *)(uintptr_t)(i + 1));
	T_CUFILE_OK(cuFileBatchIOSubmit(b, N, p, 0));
	CUfileIOEvents_t ev[N];
	t_batch_collect_untimed(b, N, ev);
	for (unsigned i = 0; i < N; i++)
		T_EQ(ev[i].status, CUFILE_COMPLETE);
	if (t_check_pattern(m.ptr, (size_t)N * BS, 0, 0, "batch data"))
		T_FAIL("bad batch data");
	int batch = count_threads("cufile-batch");
	fprintf(stderr, "budget %ld: %d batch executor threads\n", budget, batch);
	long cap = budget < 2 ? 2 : budget;
	if (batch > cap)
		T_FAIL("%d batch executor threads for a budget of %ld CPUs", batch, budget);
	cuFileBatchIODestroy(b);

	t_mem_free(&m);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
