/* SPDX-License-Identifier: Apache-2.0 */
/*
 * USERSPACE_FS handles: registration needs fs_ops with read and write
 * (NULL fs_ops or a NULL read/write op -> IO_NOT_SUPPORTED, as NVIDIA's
 * library says).  cuFileRead and
 * cuFileWrite then call fs_ops->read/write(handle, buf, size, offset, rdma)
 * of a fake in-memory file system: with host memory the op receives the
 * caller's memory itself (base + buf_offset), with device memory the library
 * stages through host memory; the bytes arrive intact either way, the ops'
 * short counts are passed on and their errors give a negative return.
 */
#include "test.h"

#include <pthread.h>

#define EXPECT_NULL_OPS CU_FILE_IO_NOT_SUPPORTED
#define FS_SIZE (3 * T_MIB + 123)

struct memfs {
	uint8_t *data;
	size_t size;
	int fail_next; /* >0: the next op returns -fail_next */
	/* Calls seen. */
	int nreads, nwrites;
	const char *first_buf;
	size_t bytes;
	uint64_t lowest_off;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *expect_base; /* host buffer expected in the ops, or NULL */
static size_t expect_len;
static uint64_t expect_off;

static void note_call(struct memfs *fs, const char *buf, size_t size, loff_t off)
{
	if (!fs->first_buf || buf < fs->first_buf)
		fs->first_buf = buf;
	if (fs->nreads + fs->nwrites == 0 || (uint64_t)off < fs->lowest_off)
		fs->lowest_off = (uint64_t)off;
	fs->bytes += size;
	if (expect_base) {
		/* Host memory goes to the op directly: the op's buffer for file
		 * offset off is base + (off - file_offset). */
		const char *want = expect_base + ((uint64_t)off - expect_off);
		if (buf != want)
			T_FAIL("op got buffer %p for offset %lld, expected %p (caller memory)",
			       (const void *)buf, (long long)off, (const void *)want);
		if ((uint64_t)off < expect_off || (uint64_t)off + size > expect_off + expect_len)
			T_FAIL("op range [%lld, +%zu) outside the request", (long long)off, size);
	}
}

static ssize_t fs_read(const void *h, char *buf, size_t size, loff_t off, const cufileRDMAInfo_t *rdma)
{
	struct memfs *fs = (struct memfs *)h;
	(void)rdma;
	pthread_mutex_lock(&lock);
	if (fs->fail_next) {
		int e = fs->fail_next;
		fs->fail_next = 0;
		pthread_mutex_unlock(&lock);
		return -e;
	}
	note_call(fs, buf, size, off);
	fs->nreads++;
	size_t n = 0;
	if ((uint64_t)off < fs->size)
		n = fs->size - (size_t)off < size ? fs->size - (size_t)off : size;
	memcpy(buf, fs->data + off, n);
	pthread_mutex_unlock(&lock);
	return (ssize_t)n;
}

static ssize_t fs_write(const void *h, const char *buf, size_t size, loff_t off, const cufileRDMAInfo_t *rdma)
{
	struct memfs *fs = (struct memfs *)h;
	(void)rdma;
	pthread_mutex_lock(&lock);
	if (fs->fail_next) {
		int e = fs->fail_next;
		fs->fail_next = 0;
		pthread_mutex_unlock(&lock);
		return -e;
	}
	note_call(fs, buf, size, off);
	fs->nwrites++;
	if ((uint64_t)off + size > fs->size)
		T_FAIL("write past the end of the memfs");
	memcpy(fs->data + off, buf, size);
	pthread_mutex_unlock(&lock);
	return (ssize_t)size;
}

static const char *fs_type(const void *h)
{
	(void)h;
	return "memfs";
}

static void reset_calls(struct memfs *fs)
{
	fs->nreads = fs->nwrites = 0;
	fs->first_buf = NULL;
	fs->bytes = 0;
	fs->lowest_off = 0;
}

static CUfileOpError try_register(CUfileHandle_t *fh, void *h, const CUfileFSOps_t *ops)
{
	CUfileDescr_t d;

	memset(&d, 0, sizeof(d));
	d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
	d.handle.handle = h;
	d.fs_ops = ops;
	return cuFileHandleRegister(fh, &d).err;
}

static void run_mem(CUfileHandle_t fh, struct memfs *fs, enum t_mem_kind kind)
{
	struct t_mem m;
	const size_t sizes[] = { 1, 4096, 4097, 1 * T_MIB + 3, 2 * T_MIB + 17 };
	const off_t foffs[] = { 0, 1, 4095, 12345 };
	const off_t boffs[] = { 0, 3 };
	const size_t guard = 4096, maxsz = 2 * T_MIB + 17;
	const size_t alloc = guard + 8 + maxsz + guard;
	uint8_t *host = malloc(alloc);

	T_ASSERT(host != NULL);
	t_mem_alloc(&m, kind, alloc);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
	for (size_t fi = 0; fi < sizeof(foffs) / sizeof(foffs[0]); fi++)
	for (size_t bi = 0; bi < sizeof(boffs) / sizeof(boffs[0]); bi++) {
		size_t size = sizes[si];
		off_t foff = foffs[fi], boff = boffs[bi];
		void *base = (uint8_t *)m.ptr + guard;

		/* Read. */
		t_set_case("memfs read %s size %zu file_off %lld buf_off %lld",
			   t_mem_kind_name(kind), size, (long long)foff, (long long)boff);
		reset_calls(fs);
		t_mem_fill(&m, 0, T_POISON, alloc);
		if (!t_mem_is_device(&m)) {
			expect_base = (const char *)base + boff;
			expect_len = size;
			expect_off = (uint64_t)foff;
		}
		T_IO(cuFileRead(fh, base, size, foff, boff), size);
		expect_base = NULL;
		T_GE(fs->nreads, 1);
		T_EQ_U(fs->bytes, size);
		T_EQ_U(fs->lowest_off, foff);
		t_mem_get(&m, 0, host, alloc);
		if (t_check_fill(host, guard + (size_t)boff, T_POISON, "guard before") ||
		    t_check_pattern(host + guard + boff, size, (uint64_t)foff, 0, "read data") ||
		    t_check_fill(host + guard + boff + size, alloc - guard - (size_t)boff - size,
				 T_POISON, "guard after"))
			T_FAIL("bad data");

		/* Write (seed 9), then check the memfs and restore it. */
		t_set_case("memfs write %s size %zu file_off %lld buf_off %lld",
			   t_mem_kind_name(kind), size, (long long)foff, (long long)boff);
		reset_calls(fs);
		t_mem_put_pattern(&m, guard + (size_t)boff, size, (uint64_t)foff, 9);
		if (!t_mem_is_device(&m)) {
			expect_base = (const char *)base + boff;
			expect_len = size;
			expect_off = (uint64_t)foff;
		}
		T_IO(cuFileWrite(fh, base, size, foff, boff), size);
		expect_base = NULL;
		T_GE(fs->nwrites, 1);
		T_EQ_U(fs->bytes, size);
		size_t lo = foff > 4096 ? (size_t)foff - 4096 : 0;
		size_t hi = (size_t)foff + size + 4096 < FS_SIZE ? (size_t)foff + size + 4096 : FS_SIZE;
		if (t_check_pattern(fs->data + lo, (size_t)foff - lo, lo, 0, "memfs before") ||
		    t_check_pattern(fs->data + foff, size, (uint64_t)foff, 9, "memfs written") ||
		    t_check_pattern(fs->data + foff + size, hi - (size_t)foff - size,
				    (uint64_t)foff + size, 0, "memfs after"))
			T_FAIL("bad memfs contents");
		t_fill_pattern(fs->data + foff, size, (uint64_t)foff, 0);
	}

	/* Short read at the end of the memfs, and a read past it. */
	t_set_case("memfs EOF %s", t_mem_kind_name(kind));
	t_mem_fill(&m, 0, T_POISON, alloc);
	T_IO(cuFileRead(fh, m.ptr, 8192, FS_SIZE - 100, 0), 100);
	t_mem_get(&m, 0, host, 8192);
	if (t_check_pattern(host, 100, FS_SIZE - 100, 0, "tail") ||
	    t_check_fill(host + 100, 8192 - 100, T_POISON, "past the returned count"))
		T_FAIL("bad EOF data");
	T_IO(cuFileRead(fh, m.ptr, 8192, FS_SIZE, 0), 0);
	T_IO(cuFileRead(fh, m.ptr, 8192, FS_SIZE + 5000, 0), 0);

	/* An op error becomes a negative return. */
	t_set_case("memfs op error %s", t_mem_kind_name(kind));
	fs->fail_next = EIO;
	errno = 0;
	ssize_t r = cuFileRead(fh, m.ptr, 4096, 0, 0);
	if (r >= 0)
		T_FAIL("read with a failing op returned %zd", r);
	fs->fail_next = EIO;
	r = cuFileWrite(fh, m.ptr, 4096, 0, 0);
	if (r >= 0)
		T_FAIL("write with a failing op returned %zd", r);
	fs->fail_next = 0;
	t_set_case("%s", "");

	t_mem_free(&m);
	free(host);
}

int main(void)
{
	struct memfs fs;
	CUfileFSOps_t ops, bad;
	CUfileHandle_t fh = NULL;

	memset(&fs, 0, sizeof(fs));
	fs.size = FS_SIZE;
	fs.data = malloc(FS_SIZE);
	T_ASSERT(fs.data != NULL);
	t_fill_pattern(fs.data, FS_SIZE, 0, 0);

	memset(&ops, 0, sizeof(ops));
	ops.fs_type = fs_type;
	ops.read = fs_read;
	ops.write = fs_write;

	T_CUFILE_OK(cuFileDriverOpen());

	/* Missing ops. */
	T_EQ(try_register(&fh, &fs, NULL), EXPECT_NULL_OPS);
	bad = ops;
	bad.read = NULL;
	T_EQ(try_register(&fh, &fs, &bad), EXPECT_NULL_OPS);
	bad = ops;
	bad.write = NULL;
	T_EQ(try_register(&fh, &fs, &bad), EXPECT_NULL_OPS);

	T_EQ(try_register(&fh, &fs, &ops), CU_FILE_SUCCESS);
	T_ASSERT(fh != NULL);

	run_mem(fh, &fs, T_MEM_HOST_MALLOC);
	if (t_cuda_init() == 0) {
		run_mem(fh, &fs, T_MEM_HOST_PINNED);
		run_mem(fh, &fs, T_MEM_DEVICE);
	} else {
		fprintf(stderr, "NOTE: no CUDA device; device-memory cases skipped\n");
	}

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	free(fs.data);
	return 0;
}
