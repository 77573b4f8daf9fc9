/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the statistics file (OPENCUFILE_STATS_FILE) in tests: the raw
 * record, and what `gdscheck -s` prints of it. */
#ifndef OCF_STATS_TEST_UTIL_H_
#define OCF_STATS_TEST_UTIL_H_

#include "config_test_util.h"
#include "stats.h"

/* Reads the whole record at `path` into *f (fails the test when short). */
static inline void t_read_stats_file(const char *path, struct ocf_stats_file *f)
{
	int sfd = t_open(path, O_RDONLY);
	T_EQ(read(sfd, f, sizeof(*f)), (long)sizeof(*f));
	close(sfd);
}

/* Runs `gdscheck -s path` (gdscheck at `tool`), echoes its output to
 * stderr and returns it; the text file is removed again. */
static inline const char *t_gdscheck_stats(const char *tool, const char *path)
{
	char cmd[1400], out[700];
	snprintf(out, sizeof(out), "%s.txt", path);
	snprintf(cmd, sizeof(cmd), "%s -s %s > %s", tool, path, out);
	T_EQ(system(cmd), 0);
	const char *txt = t_slurp(out);
	fputs(txt, stderr);
	unlink(out);
	return txt;
}

#endif /* OCF_STATS_TEST_UTIL_H_ */
