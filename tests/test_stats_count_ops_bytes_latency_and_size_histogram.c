/* SPDX-License-Identifier: Apache-2.0 */
/* Level 2 counters after known I/O: ops ok/err, bytes, latency sums and
 * averages (the average is the sum over the operations; a userspace file
 * system whose calls sleep a known time bounds the sums from below),
 * bandwidth, registration counters (a read rejected as an argument
 * error, -1 with errno EINVAL, is an error op), the size histogram buckets
 * ([2^(i-1), 2^i) KiB in bucket i, < 1 KiB in bucket 0); Stop freezes the
 * counters, Reset zeroes them. */
#include "config_test_util.h"

/* A userspace file system whose every call takes at least SLOW_US. */
#define SLOW_US 3000

static void sleep_slow(void)
{
	struct timespec ts = {0, SLOW_US * 1000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static ssize_t slow_read(const void *h, char *buf, size_t n, loff_t off, const cufileRDMAInfo_t *rdma)
{
	(void)h, (void)off, (void)rdma;
	sleep_slow();
	memset(buf, 0, n);
	return (ssize_t)n;
}

static ssize_t slow_write(const void *h, const char *buf, size_t n, loff_t off, const cufileRDMAInfo_t *rdma)
{
	(void)h, (void)buf, (void)off, (void)rdma;
	sleep_slow();
	return (ssize_t)n;
}

static const char *slow_type(const void *h)
{
	(void)h;
	return "slowfs";
}

int main(void)
{
	t_clear_config_env();
	T_CUFILE_OK(cuFileSetStatsLevel(2));
	const char *path = t_make_pattern_file(4 * T_MIB, 0);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);
	char *buf = malloc(2 * T_MIB);
	T_CUFILE_OK(cuFileBufRegister(buf, 2 * T_MIB, 0));
	T_CUFILE(cuFileBufRegister(buf, 2 * T_MIB, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);

	T_IO(cuFileRead(fh, buf, 4096, 0, 0), 4096);       /* bucket 3 */
	T_IO(cuFileRead(fh, buf, 512, 0, 0), 512);         /* bucket 0 */
	T_IO(cuFileRead(fh, buf, T_MIB, 0, 0), T_MIB);     /* bucket 11 */
	T_IO(cuFileRead(fh, buf, 8192, 4 * T_MIB - 4096, 0), 4096); /* short: bucket 4 */
	T_IO(cuFileWrite(fh, buf, 3000, 0, 0), 3000);      /* bucket 2 */
	/* An argument error (-1, errno EINVAL) still counts as a failed read,
	 * with no bytes and no histogram entry. */
	T_IO_ERRNO(cuFileRead(fh, buf, 4096, -1, 0), EINVAL);

	CUfileStatsLevel2_t s;
	T_CUFILE_OK(cuFileGetStatsL2(&s));
	CUfileStatsLevel1_t *b = &s.basic;
	T_EQ_U(b->read_ops.ok, 4);
	T_EQ_U(b->read_ops.err, 1);
	T_EQ_U(b->write_ops.ok, 1);
	T_EQ_U(b->read_bytes, 4096 + 512 + T_MIB + 4096);
	T_EQ_U(b->write_bytes, 3000);
	T_EQ_U(b->hdl_register_ops.ok, 1);
	T_EQ_U(b->buf_register_ops.ok, 1);
	T_EQ_U(b->buf_register_ops.err, 1);
	/* Average latency = sum / operations (the failed read included). */
	T_EQ_U(b->read_lat_avg_us, b->read_lat_sum_us / 5);
	T_EQ_U(b->write_lat_avg_us, b->write_lat_sum_us / 1);
	T_ASSERT(b->read_bw_bytes_per_sec > 0);
	T_EQ_U(s.read_size_kb_hist[0], 1);
	T_EQ_U(s.read_size_kb_hist[3], 1);
	T_EQ_U(s.read_size_kb_hist[4], 1);
	T_EQ_U(s.read_size_kb_hist[11], 1);
	T_EQ_U(s.write_size_kb_hist[2], 1);
	uint64_t total = 0;
	for (int i = 0; i < 32; i++)
		total += s.read_size_kb_hist[i];
	T_EQ_U(total, 4);

	T_CUFILE_OK(cuFileStatsStop());
	T_IO(cuFileRead(fh, buf, 4096, 0, 0), 4096);
	T_CUFILE_OK(cuFileGetStatsL2(&s));
	T_EQ_U(s.basic.read_ops.ok, 4);
	T_CUFILE_OK(cuFileStatsStart());
	T_CUFILE_OK(cuFileStatsReset());
	T_CUFILE_OK(cuFileGetStatsL2(&s));
	T_EQ_U(s.basic.read_ops.ok, 0);
	T_EQ_U(s.basic.read_bytes, 0);
	T_EQ_U(s.read_size_kb_hist[11], 0);
	T_IO(cuFileRead(fh, buf, 4096, 0, 0), 4096);
	T_CUFILE_OK(cuFileGetStatsL2(&s));
	T_EQ_U(s.basic.read_ops.ok, 1);
	T_EQ_U(s.read_size_kb_hist[3], 1);

	T_CUFILE_OK(cuFileBufDeregister(buf));
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileGetStatsL2(&s));
	T_EQ_U(s.basic.buf_deregister_ops.ok, 1);
	T_EQ_U(s.basic.hdl_deregister_ops.ok, 1);
	/* Latency: 3 reads and 2 writes of at least SLOW_US each. */
	static CUfileFSOps_t ops = {.fs_type = slow_type, .read = slow_read, .write = slow_write};
	CUfileDescr_t d;
	memset(&d, 0, sizeof(d));
	d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
	d.handle.handle = &ops;
	d.fs_ops = &ops;
	CUfileHandle_t slow;
	T_CUFILE_OK(cuFileHandleRegister(&slow, &d));
	T_CUFILE_OK(cuFileStatsReset());
	for (int i = 0; i < 3; i++)
		T_IO(cuFileRead(slow, buf, 4096, 0, 0), 4096);
	for (int i = 0; i < 2; i++)
		T_IO(cuFileWrite(slow, buf, 4096, 0, 0), 4096);
	T_CUFILE_OK(cuFileGetStatsL2(&s));
	T_EQ_U(s.basic.read_ops.ok, 3);
	T_EQ_U(s.basic.write_ops.ok, 2);
	T_LE_U(3 * SLOW_US, s.basic.read_lat_sum_us);
	T_LE_U(2 * SLOW_US, s.basic.write_lat_sum_us);
	T_EQ_U(s.basic.read_lat_avg_us, s.basic.read_lat_sum_us / 3);
	T_EQ_U(s.basic.write_lat_avg_us, s.basic.write_lat_sum_us / 2);
	T_LE_U(SLOW_US, s.basic.read_lat_avg_us);
	T_LE_U(SLOW_US, s.basic.write_lat_avg_us);
	cuFileHandleDeregister(slow);

	close(fd);
	free(buf);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
