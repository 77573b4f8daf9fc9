/* SPDX-License-Identifier: Apache-2.0 */
/* With OPENCUFILE_STATS_FILE and a level > 0, the library writes a snapshot
 * ("%p" = pid) during I/O and at close; `gdscheck -s FILE` (argv[1]) prints
 * it with the counts. */
#include <sys/wait.h>

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
	char buf[8192];
	for (int i = 0; i < 7; i++)
		T_IO(cuFileRead(fh, buf, sizeof(buf), 0, 0), 8192);
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());

	struct ocf_stats_file f;
	t_read_stats_file(path, &f);
	T_ASSERT(memcmp(f.magic, OCF_STATS_FILE_MAGIC, sizeof(OCF_STATS_FILE_MAGIC)) == 0);
	T_EQ(f.pid, getpid());
	T_EQ(f.level, 3);
	T_EQ_U(f.stats.detailed.basic.read_ops.ok, 7);
	T_EQ_U(f.stats.detailed.read_size_kb_hist[4], 7);

	const char *txt = t_gdscheck_stats(argv[1], path);
	T_ASSERT(strstr(txt, "read                   ok 7  err 0") != NULL);
	T_ASSERT(strstr(txt, "[8, 16): 7 0") != NULL);
	unlink(path);
	/* Not a stats file: an error, not garbage. */
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "%s -s %s 2>/dev/null", argv[1], data);
	T_NE(system(cmd), 0);
	return T_EXIT_PASS;
}
