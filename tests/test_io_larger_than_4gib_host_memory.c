/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One cuFileRead and one cuFileWrite of 4 GiB + 4097 bytes (more than any
 * single pread/pwrite moves, and more than 32 bits) with host memory from
 * mmap(MAP_NORESERVE) on a buffered fd return the full count and move the
 * right bytes, checked at a sample of positions (around 2 GiB, 4 GiB and
 * the tail).  The file is sparse: only the sampled blocks hold data.
 * Skips when the machine lacks the memory or disk space.
 */
#include "test.h"

#include <sys/statvfs.h>

#define SIZE ((size_t)4 * T_GIB + 4097)
#define FOFF 4093 /* unaligned */
#define BOFF 5
#define BLK 4096

static size_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* Buffer-relative positions sampled (each BLK long, inside [0, SIZE)). */
static size_t samples[64];
static int nsamples;

static void make_samples(void)
{
	const size_t fixed[] = { 0,
				 1,
				 T_MIB - 3,
				 (size_t)2 * T_GIB - BLK / 2,
				 (size_t)2 * T_GIB + 7,
				 (size_t)3 * T_GIB + 12345,
				 (size_t)4 * T_GIB - BLK - 1,
				 (size_t)4 * T_GIB - BLK / 2,
				 (size_t)4 * T_GIB,
				 SIZE - BLK };
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		samples[nsamples++] = fixed[i];
	for (int i = 0; i < 20; i++)
		samples[nsamples++] = ((size_t)i * 2654435761u * 97) % (SIZE - BLK);
}

int main(void)
{
	if (mem_available() < (size_t)6 * T_GIB)
		T_SKIP("needs ~6 GiB of available memory (have %zu MiB)", mem_available() / T_MIB);
	struct statvfs vfs;
	T_SYS(statvfs(t_dir(), &vfs));
	if ((uint64_t)vfs.f_bavail * vfs.f_frsize < (uint64_t)10 * T_GIB)
		T_SKIP("needs ~10 GiB free in %s", t_dir());

	make_samples();
	const char *path = t_new_file_path();
	int fd = t_open(path, O_RDWR);
	/* Sparse file: length FOFF + SIZE + 100, pattern only at the samples. */
	T_SYS(ftruncate(fd, (off_t)(FOFF + SIZE + 100)));
	for (int i = 0; i < nsamples; i++)
		t_pwrite_pattern(fd, FOFF + samples[i], BLK, 0);

	size_t maplen = BOFF + SIZE + BLK;
	uint8_t *buf = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	T_ASSERT(buf != MAP_FAILED);
	memset(buf, T_POISON, BLK);
	memset(buf + BOFF + SIZE, T_POISON, BLK);

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);

	/* Read. */
	t_set_case("read of %zu bytes", SIZE);
	T_IO(cuFileRead(fh, buf, SIZE, FOFF, BOFF), SIZE);
	if (t_check_fill(buf, BOFF, T_POISON, "before the range") ||
	    t_check_fill(buf + BOFF + SIZE, BLK, T_POISON, "after the range"))
		T_FAIL("bytes outside the range changed");
	for (int i = 0; i < nsamples; i++) {
		char what[64];
		snprintf(what, sizeof(what), "sample at %zu", samples[i]);
		if (t_check_pattern(buf + BOFF + samples[i], BLK, FOFF + samples[i], 0, what))
			T_FAIL("bad data");
	}
	/* A hole right after a sample reads as zeros (unless another sample
	 * happens to cover it). */
	size_t hole = (size_t)3 * T_GIB + 12345 + BLK;
	bool covered = false;
	for (int i = 0; i < nsamples; i++)
		if (samples[i] < hole + 100 && samples[i] + BLK > hole)
			covered = true;
	if (!covered && t_check_fill(buf + BOFF + hole, 100, 0, "hole"))
		T_FAIL("hole is not zero");

	/* Write the buffer (samples now hold pattern 0 for FOFF + i) to another
	 * file at a different offset, then check the samples there. */
	t_set_case("write of %zu bytes", SIZE);
	const char *path2 = t_new_file_path();
	int fd2 = t_open(path2, O_RDWR);
	CUfileHandle_t fh2 = t_register_fd(fd2);
	const off_t WOFF = 1;
	T_IO(cuFileWrite(fh2, buf, SIZE, WOFF, BOFF), SIZE);
	T_EQ_U(t_file_size(fd2), WOFF + SIZE);
	uint8_t blk[BLK];
	for (int i = 0; i < nsamples; i++) {
		char what[64];
		snprintf(what, sizeof(what), "written sample at %zu", samples[i]);
		T_EQ_U(t_pread_full(fd2, blk, BLK, WOFF + samples[i]), BLK);
		if (t_check_pattern(blk, BLK, FOFF + samples[i], 0, what))
			T_FAIL("bad data in the written file");
	}

	cuFileHandleDeregister(fh2);
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	munmap(buf, maplen);
	close(fd2);
	close(fd);
	t_cleanup_files();
	return 0;
}
