/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batches shaped as NIXL's GDS backend builds them, every byte checked:
 *   - entries over several registered device buffers: the registered base
 *     with devPtr_offset, and (as NIXL passes them) an address inside a
 *     registration as devPtr_base with offset 0 or not;
 *   - reads of two files (one O_DIRECT where the file system allows it) and
 *     writes to two others in one submission, aligned and not;
 *   - entries that fail alone among them: an unknown handle, a deregistered
 *     handle, a read and a write whose range runs past the allocation (from
 *     the base and from an inner address), each with the error cuFileRead or
 *     cuFileWrite gives it alone; a read past end of file (0 bytes) and one
 *     across it (short), which complete;
 *   - then 32 entries over consecutive offsets of one buffer, alternating
 *     the two ways of naming the address (the library serves them as one
 *     run).
 * Afterwards each buffer equals its expected image (data where entries
 * reported bytes, poison elsewhere) and each written file its expected
 * contents; the failed entries touched nothing.  Run also with one executor
 * operation per submission (OPENCUFILE_BATCH_WORKERS=1): longest merged
 * runs.
 */
#include "async_test_util.h"

#define N 128
#define NBUF 6
#define SLOT (80 * T_KIB)
#define BLEN (22 * SLOT) /* N / NBUF slots each */
#define SZ (64 * T_KIB)
#define RLEN (8 * T_MIB + 1000)
#define WLEN (4 * T_MIB)

enum kind { READ_A, READ_B, WRITE_1, WRITE_2, BAD };

struct ent {
	enum kind kind;
	CUfileHandle_t fh;
	int buf;    /* which buffer */
	size_t at;  /* offset in it of devPtr_base */
	off_t boff; /* devPtr_offset */
	size_t size;
	off_t foff;
	uint32_t seed; /* writes: the pattern written; reads: the file's */
	CUfileOpcode_t op;
	ssize_t expect;
};

static struct t_mem buf[NBUF];
static uint8_t *image[NBUF]; /* expected buffer contents */
static uint8_t *wimage[2];   /* expected contents of the written files */
static int wfd[2];
static struct ent e[N];

static void *base_of(const struct ent *x)
{
	return (uint8_t *)buf[x->buf].ptr + x->at;
}

static ssize_t clip(off_t foff, size_t size, uint64_t flen)
{
	if ((uint64_t)foff >= flen)
		return 0;
	return (ssize_t)((uint64_t)foff + size > flen ? flen - (uint64_t)foff : size);
}

/* What cuFileRead/cuFileWrite give the entry alone (only for entries that
 * fail, so nothing is moved). */
static ssize_t alone(const struct ent *x)
{
	errno = 0;
	ssize_t r = x->op == CUFILE_READ ? cuFileRead(x->fh, base_of(x), x->size, x->foff, x->boff)
					 : cuFileWrite(x->fh, base_of(x), x->size, x->foff, x->boff);
	T_ASSERT(r < 0);
	return r == -1 ? -errno : r;
}

static void submit_and_check(CUfileBatchHandle_t b, unsigned n, const char *what)
{
	CUfileIOParams_t io[N];
	CUfileIOEvents_t ev[N];
	for (unsigned i = 0; i < n; i++)
		io[i] = t_batch_io(e[i].op, e[i].fh, base_of(&e[i]), e[i].size, e[i].foff, e[i].boff,
				   (void *)(uintptr_t)(i + 1));
	T_CUFILE_OK(cuFileBatchIOSubmit(b, n, io, 0));
	unsigned nr = n;
	T_CUFILE_OK(cuFileBatchIOGetStatus(b, n, &nr, ev, NULL));
	T_EQ(nr, n);
	bool seen[N + 1] = {false};
	for (unsigned k = 0; k < n; k++) {
		uintptr_t c = (uintptr_t)ev[k].cookie;
		T_ASSERT(c >= 1 && c <= n && !seen[c]);
		seen[c] = true;
		const struct ent *x = &e[c - 1];
		t_set_case(
		    "%s: entry %u (kind %d, buffer %d at %zu + %lld, size %zu, file offset %lld): status %#x "
		    "ret %zd",
		    what, (unsigned)c - 1, x->kind, x->buf, x->at, (long long)x->boff, x->size,
		    (long long)x->foff, ev[k].status, (ssize_t)ev[k].ret);
		T_EQ(ev[k].status, x->expect >= 0 ? CUFILE_COMPLETE : CUFILE_FAILED);
		T_EQ((ssize_t)ev[k].ret, x->expect);
	}
	t_set_case("%s", "");
}

static void check_images(const char *what)
{
	uint8_t *got = malloc(BLEN);
	T_ASSERT(got != NULL);
	for (int k = 0; k < NBUF; k++) {
		t_mem_get(&buf[k], 0, got, BLEN);
		if (memcmp(got, image[k], BLEN) != 0) {
			size_t i = 0;
			while (got[i] == image[k][i])
				i++;
			T_FAIL("%s: buffer %d byte %zu is 0x%02x, expected 0x%02x", what, k, i, got[i],
			       image[k][i]);
		}
	}
	free(got);
	uint8_t *f = malloc(WLEN);
	T_ASSERT(f != NULL);
	for (int w = 0; w < 2; w++) {
		T_EQ_U(t_file_size(wfd[w]), WLEN);
		T_EQ_U(t_pread_full(wfd[w], f, WLEN, 0), WLEN);
		if (memcmp(f, wimage[w], WLEN) != 0) {
			size_t i = 0;
			while (f[i] == wimage[w][i])
				i++;
			T_FAIL("%s: written file %d byte %zu is 0x%02x, expected 0x%02x", what, w + 1, i,
			       f[i], wimage[w][i]);
		}
	}
	free(f);
}

/* Puts what a read entry reported into its buffer's image, or a write
 * entry's data into its buffer (and image) and its file's image. */
static void plan_data(const struct ent *x)
{
	uint8_t *dst = image[x->buf] + x->at + (size_t)x->boff;
	if (x->op == CUFILE_READ) {
		if (x->expect > 0)
			t_fill_pattern(dst, (size_t)x->expect, (uint64_t)x->foff, x->seed);
		return;
	}
	t_fill_pattern(dst, x->size, (uint64_t)x->foff, x->seed);
	t_mem_put(&buf[x->buf], x->at + (size_t)x->boff, dst, x->size);
	if (x->expect > 0)
		memcpy(wimage[x->kind == WRITE_2] + x->foff, dst, x->size);
}

int main(void)
{
	t_cuda_require();
	const char *pa = t_make_pattern_file(RLEN, 0);
	const char *pb = t_make_pattern_file(RLEN, 7);
	const char *pw1 = t_make_pattern_file(WLEN, 0);
	const char *pw2 = t_make_pattern_file(WLEN, 0);
	int fa = t_open(pa, O_RDONLY);
	int fb = t_odirect_supported(pb) ? t_open(pb, O_RDONLY | O_DIRECT) : t_open(pb, O_RDONLY);
	wfd[0] = t_open(pw1, O_RDWR);
	wfd[1] = t_open(pw2, O_RDWR);
	int fgone = t_open(pa, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fha = t_register_fd(fa), fhb = t_register_fd(fb);
	CUfileHandle_t fhw[2] = {t_register_fd(wfd[0]), t_register_fd(wfd[1])};
	CUfileHandle_t gone = t_register_fd(fgone);
	cuFileHandleDeregister(gone);
	CUfileHandle_t forged = (CUfileHandle_t)(uintptr_t)0x7777777;
	for (int k = 0; k < NBUF; k++) {
		t_mem_alloc(&buf[k], T_MEM_DEVICE, BLEN);
		T_CUFILE_OK(cuFileBufRegister(buf[k].ptr, BLEN, 0));
		t_mem_fill(&buf[k], 0, T_POISON, BLEN);
		image[k] = malloc(BLEN);
		T_ASSERT(image[k] != NULL);
		memset(image[k], T_POISON, BLEN);
	}
	for (int w = 0; w < 2; w++) {
		wimage[w] = malloc(WLEN);
		T_ASSERT(wimage[w] != NULL);
		t_fill_pattern(wimage[w], WLEN, 0, 0);
	}
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, N));

	/* ---- one submission: four files, six buffers, both directions */
	unsigned nw[2] = {0, 0};
	for (int i = 0; i < N; i++) {
		struct ent *x = &e[i];
		x->buf = i % NBUF;
		size_t slot = (size_t)(i / NBUF) * SLOT;
		x->kind = (enum kind)(i % 4);
		x->size = SZ;
		switch (i % 8) {
		case 0: /* registered base, offset to the slot */
		case 7:
			x->at = 0;
			x->boff = (off_t)slot;
			break;
		case 1: /* NIXL: an inner address, offset 0 */
		case 2:
			x->at = slot;
			x->boff = 0;
			break;
		case 4: /* odd size, unaligned buffer offset */
			x->at = 0;
			x->boff = (off_t)slot + 7;
			x->size = SZ - 100;
			break;
		default: /* inner address and an offset */
			x->at = slot + 4096;
			x->boff = 3;
			break;
		}
		if (x->kind == READ_A || x->kind == READ_B) {
			x->op = CUFILE_READ;
			x->fh = x->kind == READ_A ? fha : fhb;
			x->seed = x->kind == READ_A ? 0 : 7;
			x->foff = (off_t)((i * 37 % 120) * SZ + (i % 3 == 0 ? 513 : 0));
		} else {
			int w = x->kind == WRITE_2;
			x->op = CUFILE_WRITE;
			x->fh = fhw[w];
			x->seed = 100 + (uint32_t)i;
			/* Own range per write; every other one unaligned. */
			x->foff = (off_t)(nw[w]++ * SZ + (i % 8 == 6 ? 513 : 0));
			if (i % 8 == 6)
				x->size = SZ - 1024;
		}
		x->expect = (ssize_t)x->size;
	}
	/* Reads at and across end of file. */
	T_EQ(e[32].op, CUFILE_READ);
	T_EQ(e[33].op, CUFILE_READ);
	e[32].foff = RLEN + 4096;
	e[32].expect = 0;
	e[33].foff = RLEN - 1000;
	e[33].expect = clip(e[33].foff, e[33].size, RLEN);
	T_EQ(e[33].expect, 1000);
	/* Entries that fail alone: unknown and deregistered handles, ranges
	 * past the allocation (reads from an inner address, from an inner
	 * address with offset 0 and from the base; a write). */
	const int bad[] = {10, 13, 20, 21, 40, 43};
	T_EQ(e[10].op, CUFILE_WRITE);
	e[10].fh = forged;
	T_EQ(e[13].op, CUFILE_READ);
	e[13].fh = gone;
	T_EQ(e[20].op, CUFILE_READ);
	e[20].at = SLOT;
	e[20].boff = (off_t)(BLEN - SLOT - SZ / 2);
	e[20].size = SZ;
	T_EQ(e[21].op, CUFILE_READ);
	e[21].at = BLEN - SZ / 2;
	e[21].boff = 0;
	T_EQ(e[40].op, CUFILE_READ);
	e[40].at = 0;
	e[40].boff = (off_t)(BLEN - 100);
	T_EQ(e[43].op, CUFILE_WRITE);
	e[43].at = BLEN - 4096;
	e[43].boff = 3;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct ent *x = &e[bad[k]];
		x->kind = BAD;
		t_set_case("entry %d alone", bad[k]);
		x->expect = alone(x);
	}
	t_set_case("%s", "");
	T_EQ(e[10].expect, -EBADF);
	T_EQ(e[13].expect, -EBADF);
	for (int k = 2; k < 6; k++) /* past the end of a registration */
		T_EQ(e[bad[k]].expect, -EINVAL);
	for (int i = 0; i < N; i++)
		if (e[i].kind != BAD)
			plan_data(&e[i]);
	submit_and_check(b, N, "mixed");
	check_images("mixed");

	/* ---- one buffer, consecutive offsets, named both ways */
	for (int k = 0; k < NBUF; k++) {
		t_mem_fill(&buf[k], 0, T_POISON, BLEN);
		memset(image[k], T_POISON, BLEN);
	}
	const unsigned NC = 24; /* 1.5 MiB of the buffer */
	for (unsigned i = 0; i < NC; i++) {
		struct ent *x = &e[i];
		*x = (struct ent){.kind = READ_A,
				  .fh = fha,
				  .buf = 2,
				  .size = SZ,
				  .op = CUFILE_READ,
				  .seed = 0,
				  .foff = (off_t)(1000 + i * SZ),
				  .expect = SZ};
		if (i % 2) {
			x->at = i * SZ;
			x->boff = 0;
		} else {
			x->at = 0;
			x->boff = (off_t)(i * SZ);
		}
		plan_data(x);
	}
	submit_and_check(b, NC, "consecutive");
	check_images("consecutive");

	cuFileBatchIODestroy(b);
	for (int k = 0; k < NBUF; k++) {
		T_CUFILE_OK(cuFileBufDeregister(buf[k].ptr));
		t_mem_free(&buf[k]);
		free(image[k]);
	}
	free(wimage[0]);
	free(wimage[1]);
	cuFileHandleDeregister(fha);
	cuFileHandleDeregister(fhb);
	cuFileHandleDeregister(fhw[0]);
	cuFileHandleDeregister(fhw[1]);
	T_CUFILE_OK(cuFileDriverClose());
	close(fa);
	close(fb);
	close(wfd[0]);
	close(wfd[1]);
	close(fgone);
	return T_EXIT_PASS;
}
