/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU profile (OPENCUFILE_PROFILE=FILE) reports, besides its table of
 * roles, the timeline of batch jobs: for small jobs (at most one entry per
 * executor thread) and large ones, the mean time after Submit began at
 * which the first and the last entry of a job reached each step (posted,
 * started, claimed, staged, read, queued, copied, done) and when GetStatus
 * returned the entries (reaped).  Here, with four executor threads
 * (OPENCUFILE_ASYNC_THREADS=4) and the stand-in's copies landing 300 us
 * late:
 *   - five batches of 2 reads (small jobs) and three of 16 (large: four
 *     entries a claim), every read's bytes checked, each batch collected
 *     whole by one GetStatus;
 *   - the report counts 5 small and 3 large jobs; in each row every step's
 *     first entry got there no earlier than the step before's first, each
 *     step's last no earlier than its first, the copy was seen done at
 *     least 250 us after it was queued, and the entries were reaped no
 *     earlier than the last was published;
 *   - the roles table has a batch row.
 */
#include "test.h"
#include "async_test_util.h"
#include "fakecuda.h"

#define FLEN (4 * T_MIB)
#define ENTRY (64 * T_KIB)
#define SMALL_JOBS 5
#define LARGE_JOBS 3
#define SMALL_N 2
#define LARGE_N 16
#define NSTEPS 8

static const char *const steps[NSTEPS] = {"posted", "started", "claimed", "staged",
					  "read",   "queued",  "copied",  "done"};

struct row {
	unsigned long jobs;
	double first[NSTEPS], last[NSTEPS], reaped;
};

/* Submits one batch of n reads of ENTRY bytes into mem, collects it whole,
 * and checks every entry's bytes. */
static void one_batch(CUfileBatchHandle_t b, CUfileHandle_t fh, struct t_mem *mem, unsigned n, unsigned k)
{
	CUfileIOParams_t io[LARGE_N];
	CUfileIOEvents_t ev[LARGE_N];
	off_t foff[LARGE_N];
	t_mem_fill(mem, 0, T_POISON, mem->len);
	for (unsigned i = 0; i < n; i++) {
		/* Scattered in the file: no two entries form one run. */
		foff[i] = (off_t)((((k * 7 + i) * 5u) % (FLEN / ENTRY - 1)) * ENTRY);
		io[i] = t_batch_io(CUFILE_READ, fh, mem->ptr, ENTRY, foff[i], (off_t)(i * ENTRY),
				   (void *)(uintptr_t)(i + 1));
	}
	T_CUFILE_OK(cuFileBatchIOSubmit(b, n, io, 0));
	t_batch_collect_untimed(b, n, ev);
	uint8_t *host = malloc(ENTRY);
	T_ASSERT(host != NULL);
	for (unsigned e = 0; e < n; e++) {
		unsigned i = (unsigned)(uintptr_t)ev[e].cookie - 1;
		T_ASSERT(i < n);
		T_EQ(ev[e].status, CUFILE_COMPLETE);
		T_EQ_U(ev[e].ret, ENTRY);
		t_mem_get(mem, (size_t)i * ENTRY, host, ENTRY);
		if (t_check_pattern(host, ENTRY, (uint64_t)foff[i], 0, "batch entry"))
			T_FAIL("batch %u entry %u: wrong bytes", k, i);
	}
	free(host);
}

/* Parses the timeline row `name` of the report; false if it is missing. */
static bool parse_row(const char *report, const char *name, struct row *r)
{
	const char *p = strstr(report, "batch timeline:");
	T_ASSERT(p != NULL);
	char key[16];
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(p, key);
	if (!p)
		return false;
	p += strlen(key);
	char *end;
	r->jobs = strtoul(p, &end, 10);
	p = end;
	for (int k = 0; k < NSTEPS; k++) {
		r->first[k] = strtod(p, &end);
		T_ASSERT(end != p && *end == '/');
		p = end + 1;
		r->last[k] = strtod(p, &end);
		T_ASSERT(end != p);
		p = end;
	}
	r->reaped = strtod(p, &end);
	T_ASSERT(end != p);
	return true;
}

static void check_row(const struct row *r, const char *name, unsigned long jobs)
{
	t_set_case("%s jobs", name);
	fprintf(stderr, "%s: %lu jobs;", name, r->jobs);
	for (int k = 0; k < NSTEPS; k++)
		fprintf(stderr, " %s %.1f/%.1f", steps[k], r->first[k], r->last[k]);
	fprintf(stderr, "; reaped %.1f us\n", r->reaped);
	T_EQ_U(r->jobs, jobs);
	/* Printed to 0.1 us: each comparison allows the rounding. */
	for (int k = 0; k < NSTEPS; k++) {
		t_set_case("%s jobs, step %s", name, steps[k]);
		T_ASSERT(r->first[k] >= 0);
		T_ASSERT(r->last[k] + 0.2 >= r->first[k]);
		if (k > 0)
			T_ASSERT(r->first[k] + 0.2 >= r->first[k - 1]);
	}
	t_set_case("%s jobs: copies 300 us late", name);
	T_ASSERT(r->first[6] - r->first[5] >= 250);
	t_set_case("%s jobs: reaped after done", name);
	T_ASSERT(r->reaped + 0.2 >= r->last[7]);
}

int main(void)
{
	char report_path[512];
	snprintf(report_path, sizeof(report_path), "%s/ocf_profile_%d.txt", t_dir(), (int)getpid());
	unlink(report_path);
	setenv("OPENCUFILE_PROFILE", report_path, 1);
	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	struct t_mem mem;
	t_mem_alloc(&mem, T_MEM_DEVICE, (size_t)LARGE_N * ENTRY);
	T_CUFILE_OK(cuFileBufRegister(mem.ptr, mem.len, 0));
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, LARGE_N));

	fakecuda_set_stream_delay_us(300);
	for (unsigned k = 0; k < SMALL_JOBS; k++)
		one_batch(b, fh, &mem, SMALL_N, k);
	for (unsigned k = 0; k < LARGE_JOBS; k++)
		one_batch(b, fh, &mem, LARGE_N, SMALL_JOBS + k);
	fakecuda_set_stream_delay_us(0);

	cuFileBatchIODestroy(b);
	T_CUFILE_OK(cuFileBufDeregister(mem.ptr));
	t_mem_free(&mem);
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	close(fd);

	FILE *f = fopen(report_path, "r");
	T_ASSERT(f != NULL);
	static char report[16384];
	size_t len = fread(report, 1, sizeof(report) - 1, f);
	fclose(f);
	unlink(report_path);
	report[len] = '\0';
	fprintf(stderr, "%s", report);
	T_ASSERT(strstr(report, "\nbatch ") != NULL);
	struct row small, large;
	T_ASSERT(parse_row(report, "small", &small));
	T_ASSERT(parse_row(report, "large", &large));
	check_row(&small, "small", SMALL_JOBS);
	check_row(&large, "large", LARGE_JOBS);
	return 0;
}
