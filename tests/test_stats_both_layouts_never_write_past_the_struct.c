/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The statistics getters never write past the caller's struct: the
 * unsuffixed cuFileGetStatsL1/L2/L3 (what a binary built against a 1.15
 * header calls) fill exactly the 1.15 sizes, 512/1024/5000 bytes, in the
 * 1.15 layout; the _v1190 entry points (what this header maps the names to
 * by default) fill exactly 624/1136/5112 bytes in the 1.19 layout, with the
 * readv/writev counters.  Both report the same counts.
 */
#include "test.h"

#undef cuFileGetStatsL1
#undef cuFileGetStatsL2
#undef cuFileGetStatsL3
CUfileError_t cuFileGetStatsL1(void *stats);
CUfileError_t cuFileGetStatsL2(void *stats);
CUfileError_t cuFileGetStatsL3(void *stats);

#define GUARD 256
static unsigned char buf[8192];

typedef CUfileError_t (*getter)(void *);

static void check_size(getter fn, size_t size, const char *what)
{
	memset(buf, T_POISON, sizeof(buf));
	t_set_case("%s", what);
	T_CUFILE_OK(fn(buf));
	if (t_check_fill(buf + size, GUARD, T_POISON, "bytes after the struct"))
		T_FAIL("%s wrote past %zu bytes", what, size);
}

int main(void)
{
	T_CUFILE_OK(cuFileSetStatsLevel(3));
	T_CUFILE_OK(cuFileDriverOpen());
	const char *path = t_make_pattern_file(T_MIB, 1);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);
	static char mem[65536];
	CUfileIOVec_t iov[3] = {{mem, 100}, {mem + 1000, 4096}, {mem + 9000, 5}};
	T_IO(cuFileReadv(fh, iov, 3, 0, 0), 4201);
	T_IO(cuFileWritev(fh, iov, 3, 0, 0), 4201);
	T_IO(cuFileRead(fh, mem, 4096, 0, 0), 4096);
	T_IO(cuFileRead(fh, mem, 4096, 0, 0), 4096);

	check_size((getter)cuFileGetStatsL1, 512, "L1, 1.15 layout");
	check_size((getter)cuFileGetStatsL2, 1024, "L2, 1.15 layout");
	check_size((getter)cuFileGetStatsL3, 5000, "L3, 1.15 layout");
	/* 1.15 L3: num_gpus at 1024, the histograms at 512 and 768. */
	uint32_t ngpu;
	memcpy(&ngpu, buf + 1024, sizeof(ngpu));
	int dc = 0;
	if (t_cuda_init() == 0)
		T_ASSERT(cuDeviceGetCount(&dc) == CUDA_SUCCESS);
	T_EQ(ngpu, dc > 16 ? 16 : dc);
	uint64_t reads_1150;
	memcpy(&reads_1150, buf + 0, sizeof(reads_1150)); /* read_ops.ok */
	T_EQ_U(reads_1150, 2);
	uint64_t hist_1150[32];
	memcpy(hist_1150, buf + 512, sizeof(hist_1150));
	T_EQ_U(hist_1150[3], 3); /* two 4 KiB reads and the 4201-byte readv */

	check_size((getter)cuFileGetStatsL1_v1190, 624, "L1, 1.19 layout");
	check_size((getter)cuFileGetStatsL2_v1190, 1136, "L2, 1.19 layout");
	check_size((getter)cuFileGetStatsL3_v1190, 5112, "L3, 1.19 layout");
	CUfileStatsLevel3_t s;
	memcpy(&s, buf, sizeof(s));
	T_EQ_U(s.detailed.basic.read_ops.ok, 2);
	T_EQ_U(s.detailed.basic.readv_ops.ok, 1);
	T_EQ_U(s.detailed.basic.writev_ops.ok, 1);
	T_EQ_U(s.detailed.basic.readv_bytes, 4201);
	T_EQ_U(s.detailed.basic.writev_bytes, 4201);
	T_EQ_U(s.detailed.read_size_kb_hist[3], 3);
	T_EQ(s.num_gpus, dc > 16 ? 16 : dc);

	T_CUFILE(cuFileGetStatsL1(NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetStatsL1_v1190(NULL), CU_FILE_INVALID_VALUE);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
