/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A batch of reads through a buffered handle of a file the page cache does
 * not hold: the library reads the bytes the cache lacks through the
 * handle's O_DIRECT twin, straight into staging, which needs each run of
 * entries placed there at the direct alignment (batch_io.c, "Staging
 * layout").  With runs packed at 64-byte offsets such a read was refused
 * (EINVAL) for every run but the first of a staging buffer.
 *   - batches of 16 entries of odd sizes (1 byte to 300 KiB) at file
 *     offsets aligned and not, scattered in the file (a run each) and in
 *     pairs that follow each other (merged runs), into device memory,
 *     registered and not, each entry checked: its event COMPLETE with its
 *     size, its bytes the file's, every byte around it poison;
 *   - the file dropped from the page cache before each batch (skipped
 *     where the file system refuses O_DIRECT or keeps the pages);
 *   - with one executor operation per batch (OPENCUFILE_BATCH_WORKERS=1,
 *     the _one_thread entry: the longest sequence of runs per staging
 *     buffer) and with the default.
 */
#include "async_test_util.h"

#define FLEN (24 * T_MIB + 777)
#define NE 16
#define GUARD 4096
#define MAXSZ (300 * T_KIB)
#define SLOT (GUARD + 4096 + MAXSZ + GUARD)
#define ROUNDS 6

static const size_t sizes[] = {100000, 1, 4097, 300 * T_KIB, 65536 + 3, 12345, 256 * T_KIB - 1, 777};

static void one_batch(CUfileBatchHandle_t b, CUfileHandle_t fh, struct t_mem *m, unsigned round, const char *path)
{
	size_t size[NE];
	off_t foff[NE], at[NE];
	CUfileIOParams_t io[NE];
	t_mem_fill(m, 0, T_POISON, m->len);
	t_evict_file(path, FLEN);
	for (unsigned i = 0; i < NE; i++) {
		unsigned k = round * NE + i;
		size[i] = sizes[k % 8];
		if (i % 4 == 1) /* follows the entry before it in the file: one run */
			foff[i] = foff[i - 1] + (off_t)size[i - 1];
		else
			foff[i] = (off_t)(((k * 7919u) % 83u) * 256 * T_KIB + (k % 3 ? 4095u * (k % 5) : 0u));
		at[i] = (off_t)((size_t)i * SLOT + GUARD + (k % 2 ? 3 : 0));
		io[i] = t_batch_io(CUFILE_READ, fh, m->ptr, size[i], foff[i], at[i], (void *)(uintptr_t)(i + 1));
	}
	T_CUFILE_OK(cuFileBatchIOSubmit(b, NE, io, 0));
	CUfileIOEvents_t ev[NE];
	t_batch_collect(b, NE, ev);
	for (unsigned e = 0; e < NE; e++) {
		unsigned i = (unsigned)(uintptr_t)ev[e].cookie - 1;
		T_ASSERT(i < NE);
		t_set_case("round %u, entry %u: %zu bytes at file offset %lld: status %#x ret %zd", round, i, size[i],
			   (long long)foff[i], ev[e].status, (ssize_t)ev[e].ret);
		T_EQ(ev[e].status, CUFILE_COMPLETE);
		T_EQ_U(ev[e].ret, size[i]);
	}
	uint8_t *v = malloc(SLOT);
	T_ASSERT(v != NULL);
	for (unsigned i = 0; i < NE; i++) {
		t_set_case("round %u, entry %u: %zu bytes at file offset %lld", round, i, size[i], (long long)foff[i]);
		t_mem_get(m, (size_t)i * SLOT, v, SLOT);
		if (t_check_guarded(v, SLOT, (size_t)at[i] - (size_t)i * SLOT, size[i], (uint64_t)foff[i], 0))
			T_FAIL("bad entry");
	}
	free(v);
}

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	t_require_local_odirect_fs(path);
	T_CUFILE_OK(cuFileDriverOpen());
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, (size_t)NE * SLOT);
	int fd = t_open(path, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, NE));
	for (unsigned r = 0; r < ROUNDS; r++)
		one_batch(b, fh, &m, r, path);
	T_CUFILE_OK(cuFileBufRegister(m.ptr, m.len, 0));
	for (unsigned r = ROUNDS; r < 2 * ROUNDS; r++)
		one_batch(b, fh, &m, r, path);
	T_CUFILE_OK(cuFileBufDeregister(m.ptr));
	cuFileBatchIODestroy(b);
	cuFileHandleDeregister(fh);
	close(fd);
	t_mem_free(&m);
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
