/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library, for its counts) A setting of tier tuning
 * (docs/configuration.md, "Tiers") is resolved at each driver open: set or
 * unset between a close and the next open, it takes effect at that open,
 * in the same process; changed while the driver is open, it takes effect
 * only at the next one.
 *   - The striped path (src/stripe.c): a lone caller's 4 MiB read into
 *     device memory through an O_DIRECT handle is read in pieces of
 *     OPENCUFILE_PIECE_KB, so its last direct read is one piece: 256 KiB
 *     at the default; still 256 KiB with the variable set to 512 while the
 *     driver is open; 512 KiB after a reopen; and, after a reopen with
 *     OPENCUFILE_STRIPE_MAX_KB=0 (no striped path), a chunk of a third of
 *     the request, more than either.
 *   - Mapped reads (src/filemap.c): a buffered handle's warm bytes read
 *     into device memory are copied through the file's mapping and never
 *     by preadv2; after a reopen with OPENCUFILE_MAPPED_READS=off, by
 *     preadv2 and never through the mapping; after a reopen without the
 *     variable, through the mapping again.
 * Every read's bytes are checked.  The ctest entry sets
 * OPENCUFILE_DIRECT_READS_FROM_CACHE=0 (every byte of an O_DIRECT read
 * goes to the disk, so its pieces are direct reads) and enough helpers
 * whatever the CPU count.
 */
#include "test.h"
#include "fault.h"

#define FLEN (8 * T_MIB)
#define READ_LEN (4 * T_MIB)

/* One driver open: reads READ_LEN at 0 through an O_DIRECT handle into
 * device memory and returns the length of its last direct read; between
 * the read and the close, `while_open` (if any) runs. */
static unsigned long long striped_read(const char *path, const char *what, void (*while_open)(void))
{
	t_set_case("%s", what);
	T_CUFILE_OK(cuFileDriverOpen());
	int fd = t_open(path, O_RDONLY | O_DIRECT);
	CUfileHandle_t fh = t_register_fd(fd);
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, READ_LEN + 2 * 4096);
	if (while_open)
		while_open();
	unsigned long long before = ocf_fault_direct_reads(NULL, NULL), off = 0, len = 0;
	T_EQ(t_read_and_verify_window(fh, &m, 4096, READ_LEN, 0, 0, (ssize_t)READ_LEN, 0, 4096), 0);
	unsigned long long bytes = ocf_fault_direct_reads(&off, &len) - before;
	printf("%s: %llu bytes read direct, the last %llu at %llu\n", what, bytes, len, off);
	T_EQ_U(bytes, READ_LEN);
	t_mem_free(&m);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	return len;
}

static void set_piece_512(void) { setenv("OPENCUFILE_PIECE_KB", "512", 1); }

struct counts {
	unsigned long mapped, nowait;
};

/* Copies through a file's mapping and by preadv2 since the process began. */
static struct counts calls(void)
{
	return (struct counts){ocf_fault_calls(OCF_FAULT_MAPPED), ocf_fault_calls(OCF_FAULT_PREADV2)};
}

/* One driver open: reads 64 KiB of the warm file at 4096 through a
 * buffered handle into device memory; the calls it made of each kind. */
static struct counts warm_read(const char *path, const char *what)
{
	t_set_case("%s", what);
	T_CUFILE_OK(cuFileDriverOpen());
	int fd = t_open(path, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, 256 * T_KIB);
	struct counts a = calls();
	T_EQ(t_read_and_verify_window(fh, &m, 4096, 64 * T_KIB, 4096, 3, (ssize_t)(64 * T_KIB), 0, 4096), 0);
	struct counts b = calls(), c = {b.mapped - a.mapped, b.nowait - a.nowait};
	printf("%s: %lu copies through the mapping, %lu by preadv2\n", what, c.mapped, c.nowait);
	t_mem_free(&m);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	return c;
}

int main(void)
{
	t_cuda_require();
	unsetenv("OPENCUFILE_PIECE_KB");
	unsetenv("OPENCUFILE_STRIPE_MAX_KB");
	unsetenv("OPENCUFILE_MAPPED_READS");
	const char *path = t_make_pattern_file(FLEN, 0);

	struct counts c = warm_read(path, "mapped reads at the default");
	T_GT(c.mapped, 0);
	T_EQ_U(c.nowait, 0);
	setenv("OPENCUFILE_MAPPED_READS", "off", 1);
	c = warm_read(path, "mapped reads off after a reopen");
	T_EQ_U(c.mapped, 0);
	T_GT(c.nowait, 0);
	unsetenv("OPENCUFILE_MAPPED_READS");
	c = warm_read(path, "mapped reads on again after a reopen");
	T_GT(c.mapped, 0);
	T_EQ_U(c.nowait, 0);

	if (!t_odirect_supported(path))
		T_SKIP("the test directory's file system refuses O_DIRECT (the mapped reads passed)");
	T_EQ_U(striped_read(path, "pieces at the default", NULL), 256 * T_KIB);
	T_EQ_U(striped_read(path, "pieces, OPENCUFILE_PIECE_KB set while open", set_piece_512), 256 * T_KIB);
	T_EQ_U(striped_read(path, "pieces after a reopen with OPENCUFILE_PIECE_KB=512", NULL), 512 * T_KIB);
	setenv("OPENCUFILE_STRIPE_MAX_KB", "0", 1);
	T_GT(striped_read(path, "not striped after a reopen, OPENCUFILE_STRIPE_MAX_KB=0", NULL), 512 * T_KIB);
	unsetenv("OPENCUFILE_STRIPE_MAX_KB");
	unsetenv("OPENCUFILE_PIECE_KB");
	T_EQ_U(striped_read(path, "pieces at the default again after a reopen", NULL), 256 * T_KIB);
	t_cleanup_files();
	return 0;
}
