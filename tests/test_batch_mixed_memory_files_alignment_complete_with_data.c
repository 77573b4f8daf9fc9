/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A batch of 128 x 64 KiB reads mixing two files (one opened O_DIRECT when
 * the file system allows it), four memory kinds (malloc, pinned host,
 * device, registered device), aligned and unaligned file and buffer
 * offsets, completes: every event carries its entry's cookie, status
 * CUFILE_COMPLETE and ret = 64 KiB, and every byte landed where it should,
 * nothing around it changed.  Then a batch of writes from the same kinds
 * reaches the file exactly.  The L1 batch counters count it all.
 */
#include "async_test_util.h"

#define N 128
#define SZ (64 * T_KIB)
#define SLOT (SZ + 2 * T_KIB) /* per entry: room for a buffer offset and guards */
#define FLEN (N * SZ + 8 * T_KIB)

enum { K_MALLOC, K_PINNED, K_DEVICE, K_DEVICE_REG, K_COUNT };

static struct t_mem mem[K_COUNT];

static void *entry_buf(int i, off_t *boff, struct t_mem **m)
{
	*m = &mem[i % K_COUNT];
	*boff = (i / K_COUNT) % 2 ? 7 : 0; /* unaligned buffer offset for half */
	return (uint8_t *)(*m)->ptr + (size_t)(i / K_COUNT) * SLOT + 1024;
}

static off_t entry_foff(int i)
{
	return (off_t)i * SZ + ((i % 3) == 0 ? 513 : 0); /* unaligned file offset for a third */
}

int main(void)
{
	t_cuda_require();
	const char *p0 = t_make_pattern_file(FLEN, 0);
	const char *p1 = t_make_pattern_file(FLEN, 7);
	int fd0 = open(p0, O_RDWR | O_DIRECT);
	if (fd0 < 0)
		fd0 = t_open(p0, O_RDWR);
	int fd1 = t_open(p1, O_RDWR);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileSetStatsLevel(1));
	T_CUFILE_OK(cuFileStatsReset());
	CUfileHandle_t fh[2] = {t_register_fd(fd0), t_register_fd(fd1)};
	uint32_t seed[2] = {0, 7};

	size_t len = (size_t)(N / K_COUNT) * SLOT + 4096;
	t_mem_alloc(&mem[K_MALLOC], T_MEM_HOST_MALLOC, len);
	t_mem_alloc(&mem[K_PINNED], T_MEM_HOST_PINNED, len);
	t_mem_alloc(&mem[K_DEVICE], T_MEM_DEVICE, len);
	t_mem_alloc(&mem[K_DEVICE_REG], T_MEM_DEVICE, len);
	T_CUFILE_OK(cuFileBufRegister(mem[K_DEVICE_REG].ptr, len, 0));
	for (int k = 0; k < K_COUNT; k++)
		t_mem_fill(&mem[k], 0, T_POISON, len);

	CUfileDrvProps_t props;
	T_CUFILE_OK(cuFileDriverGetProperties(&props));
	T_ASSERT(props.fflags & (1u << CU_FILE_BATCH_IO_SUPPORTED));
	T_ASSERT(props.max_batch_io_size >= N);

	/* ---- reads */
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, N));
	CUfileIOParams_t io[N];
	for (int i = 0; i < N; i++) {
		off_t boff;
		struct t_mem *m;
		void *base = entry_buf(i, &boff, &m);
		io[i] = t_batch_io(CUFILE_READ, fh[i % 2], base, SZ, entry_foff(i), boff,
				   (void *)(uintptr_t)(0x1000 + i));
	}
	T_CUFILE_OK(cuFileBatchIOSubmit(b, N, io, 0));
	CUfileIOEvents_t ev[N];
	unsigned nr = N;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, N, &nr, ev, NULL)); /* NULL: wait for all */
	T_EQ(nr, N);
	bool seen[N] = {false};
	for (int i = 0; i < N; i++) {
		uintptr_t c = (uintptr_t)ev[i].cookie;
		T_ASSERT(c >= 0x1000 && c < 0x1000 + N);
		T_ASSERT(!seen[c - 0x1000]);
		seen[c - 0x1000] = true;
		t_set_case("event %d (entry %d)", i, (int)(c - 0x1000));
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, SZ);
	}
	uint8_t *chk = malloc(SLOT);
	T_ASSERT(chk != NULL);
	for (int i = 0; i < N; i++) {
		off_t boff;
		struct t_mem *m;
		uint8_t *base = entry_buf(i, &boff, &m);
		size_t at = (size_t)(base - (uint8_t *)m->ptr);
		t_set_case("entry %d: %s, file %d, foff %lld, boff %lld", i, t_mem_kind_name(m->kind), i % 2,
			   (long long)entry_foff(i), (long long)boff);
		t_mem_get(m, at - 1024, chk, SLOT);
		if (t_check_fill(chk, 1024 + (size_t)boff, T_POISON, "bytes before") ||
		    t_check_pattern(chk + 1024 + boff, SZ, (uint64_t)entry_foff(i), seed[i % 2], "data") ||
		    t_check_fill(chk + 1024 + boff + SZ, SLOT - 1024 - (size_t)boff - SZ, T_POISON, "bytes after"))
			T_FAIL("read data wrong");
	}
	t_set_case("%s", "");

	/* ---- writes, same handle reused: new pattern over the first 32 blocks */
	const int NW = 32;
	for (int i = 0; i < NW; i++) {
		off_t boff;
		struct t_mem *m;
		uint8_t *base = entry_buf(i, &boff, &m);
		size_t at = (size_t)(base - (uint8_t *)m->ptr) + (size_t)boff;
		t_fill_pattern(chk, SZ, (uint64_t)i * SZ, 99);
		t_mem_put(m, at, chk, SZ);
		io[i] = t_batch_io(CUFILE_WRITE, fh[0], base, SZ, (off_t)i * SZ, boff, (void *)(uintptr_t)(0x5000 + i));
	}
	T_CUFILE_OK(cuFileBatchIOSubmit(b, (unsigned)NW, io, 0));
	t_batch_collect(b, (unsigned)NW, ev);
	for (int i = 0; i < NW; i++) {
		t_set_case("write event %d", i);
		T_ASSERT((uintptr_t)ev[i].cookie >= 0x5000 && (uintptr_t)ev[i].cookie < 0x5000 + (uintptr_t)NW);
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, SZ);
	}
	int rfd = t_open(p0, O_RDONLY);
	uint8_t *back = malloc((size_t)NW * SZ + SZ);
	T_ASSERT(back != NULL);
	T_EQ_U(t_pread_full(rfd, back, (size_t)NW * SZ + SZ, 0), (size_t)NW * SZ + SZ);
	T_ASSERT(t_check_pattern(back, (size_t)NW * SZ, 0, 99, "written range") == 0);
	T_ASSERT(t_check_pattern(back + (size_t)NW * SZ, SZ, (uint64_t)NW * SZ, 0, "after the written range") == 0);
	close(rfd);
	t_set_case("%s", "");

	/* ---- statistics */
	CUfileStatsLevel1_t st;
	T_CUFILE_OK(cuFileGetStatsL1(&st));
	T_EQ(st.batch_setup_ops.ok, 1);
	T_EQ(st.batch_submit_ops.ok, 2);
	T_EQ(st.batch_complete_ops.ok, N + NW);
	T_EQ(st.batch_complete_ops.err, 0);
	T_EQ(st.batch_enqueued_ops.ok, N + NW);
	T_EQ_U(st.batch_read_bytes, (uint64_t)N * SZ);
	T_EQ_U(st.batch_write_bytes, (uint64_t)NW * SZ);
	/* Batch entries are not cuFileRead/cuFileWrite calls. */
	T_EQ(st.read_ops.ok, 0);
	T_EQ(st.write_ops.ok, 0);

	cuFileBatchIODestroy(b);
	CUfileStatsLevel1_t st2;
	T_CUFILE_OK(cuFileGetStatsL1(&st2));
	T_EQ(st2.batch_destroy_ops.ok, 1);

	T_CUFILE_OK(cuFileBufDeregister(mem[K_DEVICE_REG].ptr));
	for (int k = 0; k < K_COUNT; k++)
		t_mem_free(&mem[k]);
	free(chk);
	free(back);
	cuFileHandleDeregister(fh[0]);
	cuFileHandleDeregister(fh[1]);
	T_CUFILE_OK(cuFileDriverClose());
	close(fd0);
	close(fd1);
	return T_EXIT_PASS;
}
