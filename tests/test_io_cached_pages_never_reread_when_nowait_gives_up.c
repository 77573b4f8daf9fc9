/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library) Pages the page cache holds are never read from
 * the disk when preadv2(RWF_NOWAIT) gives up on them, as the kernel does on
 * a page it would have to wait for (another reader's readahead still in
 * flight, compaction moving the page).  Every no-wait copy of a case fails
 * with EAGAIN, or comes back 64 KiB short on a page boundary, and then:
 *   - a warm file read through an O_DIRECT handle into device memory
 *     (staged) and into page-aligned host memory (in place), at aligned and
 *     unaligned offsets, and through a buffered handle (whose uncached part
 *     would go through its O_DIRECT twin), gives the exact bytes with
 *     nothing read from the disk (the library's O_DIRECT reads,
 *     ocf_fault_direct_reads: /proc/self/io read_bytes counts the whole
 *     process, a page of the program faulted in included);
 *   - a file whose first MiB is cached gives that MiB without the disk and
 *     the next from the disk once, directly: the cold MiB is still not
 *     cached afterwards;
 *   - every case reached the injected fault.
 * The cached pages are pinned in the page cache (t_pin_cached) while disk
 * bytes are counted.  Needs a local file system with O_DIRECT (the build
 * directory).
 */
#include "test.h"
#include "fault.h"

#define FLEN (4 * T_MIB + 100)
#define BUFLEN (FLEN + 2 * 4096)

static const char *path;

struct fault {
	const char *what;
	int err;         /* fail with this errno; 0: come back short */
	size_t short_by; /* by this many bytes */
};

static const struct fault faults[] = {
	{"EAGAIN", EAGAIN, 0},
	{"64 KiB short", 0, 64 * T_KIB},
};

struct rcase {
	off_t foff;
	size_t size;
	off_t boff;
	bool aligned; /* the request ends on a page boundary */
};

static const struct rcase cases[] = {
	{0, 2 * T_MIB, 0, true},
	{FLEN - 100 - 2 * T_MIB, 2 * T_MIB + 100, 0, false}, /* to end of file */
	{5000, 1 * T_MIB + 7, 3, false},
	{0, FLEN, 0, false},                                 /* several chunks */
};

/* Reads c through fh into m with every no-wait copy failing as f says;
 * fails the test if the bytes are wrong or the fault was never reached.
 * Returns the bytes read from the disk meanwhile. */
static unsigned long long read_with_fault(CUfileHandle_t fh, struct t_mem *m, const struct rcase *c,
					  const struct fault *f)
{
	unsigned long hits = ocf_fault_hits(OCF_FAULT_PREADV2);
	if (f->err)
		ocf_fault_fail_nth(OCF_FAULT_PREADV2, 1, 0, f->err);
	else
		ocf_fault_short_nth(OCF_FAULT_PREADV2, 1, 0, f->short_by);
	unsigned long long before = ocf_fault_direct_reads(NULL, NULL);
	int bad = t_read_and_verify_window(fh, m, 0, c->size, c->foff, c->boff, (ssize_t)c->size, 0, 4096);
	unsigned long long d = ocf_fault_direct_reads(NULL, NULL) - before;
	ocf_fault_reset();
	T_EQ(bad, 0);
	if (ocf_fault_hits(OCF_FAULT_PREADV2) == hits)
		T_FAIL("no RWF_NOWAIT copy reached the fault");
	return d;
}

/* Every case whose short no-wait copy would end on a page boundary (an
 * injected short count elsewhere is one the kernel never gives: it stops
 * at a page it would wait for, or at end of file). */
static void read_warm(CUfileHandle_t fh, enum t_mem_kind kind, const char *handle)
{
	struct t_mem m;
	t_mem_alloc(&m, kind, BUFLEN);
	for (size_t f = 0; f < sizeof(faults) / sizeof(faults[0]); f++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			const struct rcase *c = &cases[i];
			if (faults[f].short_by && !c->aligned)
				continue;
			t_set_case("warm file, %s handle, %s, no-wait copies %s, file offset %lld, size %zu",
				   handle, t_mem_kind_name(kind), faults[f].what, (long long)c->foff,
				   c->size);
			T_EQ_U(read_with_fault(fh, &m, c, &faults[f]), 0);
		}
	}
	t_mem_free(&m);
}

int main(void)
{
	t_cuda_require();
	path = t_make_pattern_file(FLEN, 0);
	t_require_cache_aware_fs(path, FLEN);
	unsetenv("OPENCUFILE_DIRECT_READS_FROM_CACHE");
	unsetenv("CUFILE_ENV_PATH_JSON");
	/* The no-wait copy, not the copy through the file's mapping, which
	 * takes cached ranges first (and has its own test). */
	setenv("OPENCUFILE_MAPPED_READS", "off", 1);
	int dfd = t_open(path, O_RDONLY | O_DIRECT);
	int bfd = t_open(path, O_RDONLY);
	CUfileHandle_t dfh = t_register_fd(dfd);
	CUfileHandle_t bfh = t_register_fd(bfd);

	/* Warm. */
	struct t_pin pin = t_pin_cached(path, 0, FLEN);
	read_warm(dfh, T_MEM_DEVICE, "O_DIRECT");
	read_warm(dfh, T_MEM_HOST_MMAP, "O_DIRECT");
	read_warm(bfh, T_MEM_DEVICE, "buffered");
	t_unpin_cached(&pin);

	/* The first MiB cached, the second cold. */
	t_evict_file(path, FLEN);
	pin = t_pin_cached(path, 0, 1 * T_MIB);
	T_EQ_U(t_cached_pages(path, FLEN, 1 * T_MIB, 2 * T_MIB), 0);
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_HOST_MMAP, BUFLEN);
	const struct rcase two = {0, 2 * T_MIB, 0, true};
	t_set_case("first MiB cached, O_DIRECT handle, no-wait copies fail with EAGAIN");
	unsigned long long d = read_with_fault(dfh, &m, &two, &faults[0]);
	fprintf(stderr, "%s: %llu bytes read through O_DIRECT\n", t_case, d);
	T_ASSERT(d >= 1 * T_MIB && d <= 1 * T_MIB + 64 * T_KIB);
	T_EQ_U(t_cached_pages(path, FLEN, 1 * T_MIB, 2 * T_MIB), 0);
	t_mem_free(&m);
	t_unpin_cached(&pin);

	cuFileHandleDeregister(dfh);
	cuFileHandleDeregister(bfh);
	close(dfd);
	close(bfd);
	T_CUFILE_OK(cuFileDriverClose());
	printf("cached pages after RWF_NOWAIT gave up: never from the disk\n");
	return T_EXIT_PASS;
}
