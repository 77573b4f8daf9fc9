/* SPDX-License-Identifier: Apache-2.0 */
/* With OPENCUFILE_STATS_FILE and a level > 0, the library writes a snapshot
 * ("%p" = pid) while the driver is open and at close (marked final);
 * `gdscheck -s FILE` (argv[1]) prints it with the counts: plain reads,
 * stream reads (also counted as reads) and batch entries (not). */
#include <sys/wait.h>

#include "async_test_util.h"
#include "stats_test_util.h"

int main(int argc, char **argv)
{
	t_clear_config_env();
	if (argc < 2)
		T_FAIL("usage: %s GDSCHECK", argv[0]);
	char pattern[600], path[600];
	snprintf(pattern, sizeof(pattern), "%s/ocf_stats_%%p.bin", t_dir());
	snprintf(path, sizeof(path), "%s/ocf_stats_%d.bin", t_dir(), (int)getpid());
	unlink(path);
	setenv("OPENCUFILE_STATS_FILE", pattern, 1);
	t_use_config(t_write_text_file("{ \"profile\": { \"cufile_stats\": 3 } }"));
	const char *data = t_make_pattern_file(65536, 0);
	int fd = t_open(data, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	char buf[3 * 4096]; /* three batch entries, each its own 4 KiB */
	for (int i = 0; i < 7; i++)
		T_IO(cuFileRead(fh, buf, 8192, 0, 0), 8192);
	/* Published at open already. */
	struct ocf_stats_file f;
	t_read_stats_file(path, &f);
	T_EQ(f.final, 0);
	/* Two stream reads: on the NULL stream (synchronous) and on a
	 * stream. */
	t_cuda_require();
	CUstream st;
	T_CU(cuStreamCreate(&st, 0));
	size_t sz = 8192;
	off_t foff = 0, boff = 0;
	ssize_t bytes[2] = {-1, -1};
	T_CUFILE_OK(cuFileReadAsync(fh, buf, &sz, &foff, &boff, &bytes[0], NULL));
	T_CUFILE_OK(cuFileReadAsync(fh, buf, &sz, &foff, &boff, &bytes[1], st));
	T_CU(cuStreamSynchronize(st));
	T_CU(cuStreamDestroy(st));
	T_EQ(bytes[0], 8192);
	T_EQ(bytes[1], 8192);
	/* A batch of three reads. */
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[3];
	CUfileIOEvents_t ev[3];
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, 3));
	for (int i = 0; i < 3; i++)
		io[i] = t_batch_io(CUFILE_READ, fh, buf, 4096, 4096 * i, 4096 * i, NULL);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 3, io, 0));
	t_batch_collect(b, 3, ev);
	cuFileBatchIODestroy(b);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());

	t_read_stats_file(path, &f);
	T_ASSERT(memcmp(f.magic, OCF_STATS_FILE_MAGIC, sizeof(OCF_STATS_FILE_MAGIC)) == 0);
	T_EQ(f.pid, getpid());
	T_EQ(f.level, 3);
	T_EQ(f.final, 1);
	T_EQ_U(f.stats.detailed.basic.read_ops.ok, 9);
	T_EQ_U(f.stats.detailed.read_size_kb_hist[4], 9);
	T_EQ_U(f.stream.ok[0], 2);
	T_EQ_U(f.stream.bytes[0], 16384);
	T_EQ_U(f.stats.detailed.basic.batch_complete_ops.ok, 3);
	T_EQ_U(f.stats.detailed.basic.batch_read_bytes, 12288);

	const char *txt = t_gdscheck_stats(argv[1], path);
	T_ASSERT(strstr(txt, "read                   ok 9  err 0") != NULL);
	T_ASSERT(strstr(txt, "[8, 16): 9 0") != NULL);
	T_ASSERT(strstr(txt, "stream read            ok 2  err 0  bytes 16384") != NULL);
	T_ASSERT(strstr(txt, "batch entries          ok 3  err 0") != NULL);
	T_ASSERT(strstr(txt, "batch read bytes 12288") != NULL);
	unlink(path);
	/* Not a stats file: an error, not garbage. */
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "%s -s %s 2>/dev/null", argv[1], data);
	T_NE(system(cmd), 0);
	return T_EXIT_PASS;
}
