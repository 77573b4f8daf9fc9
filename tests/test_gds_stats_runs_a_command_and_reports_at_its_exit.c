/* SPDX-License-Identifier: Apache-2.0 */
/* gds_stats [-l N] -- COMMAND (argv[1]) runs a command that reads exactly
 * 37 times and exits without closing the driver, with no statistics in
 * its configuration: the tool turns them on for it, waits, and reports the
 * snapshot the command wrote at exit (final) with its 37 reads, at the
 * level asked for (-l 2: the size histogram, no GPU); the tool exits with
 * the command's status, and leaves no directory behind.  With -i 1, a
 * command that runs for a few seconds gets interim reports as well. */
#include "stats_reader_util.h"

#define READS 37

int main(int argc, char **argv)
{
	const char *tool = t_stats_test_start(argc, argv);
	const char *xdg = t_private_dir(), *self = t_self();
	const char *data = t_make_pattern_file(T_DATA_SIZE, 0);
	const char *out;

	T_EQ(t_run(&out, "XDG_RUNTIME_DIR=%s %s -l 2 -- %s reader-count %d %s 0", xdg, tool, self, READS, data), 0);
	T_ASSERT(strstr(out, "(final)") != NULL);
	T_EQ(t_after(out, T_READ_OK, 0), READS);
	T_EQ(t_after(out, "[64, 128): ", 0), READS);
	T_ASSERT(strstr(out, "GPU 0") == NULL);
	T_EQ(t_after(out, T_READ_OK, 1), -1); /* one process, one report */
	T_EQ(t_dir_entries(xdg, "gds_stats."), 0);

	/* The command's status is the tool's. */
	T_EQ(t_run(&out, "XDG_RUNTIME_DIR=%s %s -- %s reader-count %d %s 9", xdg, tool, self, READS, data), 9);
	T_EQ(t_after(out, T_READ_OK, 0), READS);
	T_EQ(t_dir_entries(xdg, "gds_stats."), 0);

	/* Interim reports while it runs (about 3 s of reads), then the last. */
	T_EQ(t_run(&out, "XDG_RUNTIME_DIR=%s %s -l 1 -i 1 -- %s reader-count 2500 %s 0", xdg, tool, self, data),
	     0);
	int reports = 0;
	while (t_after(out, T_READ_OK, reports) >= 0)
		reports++;
	T_GE(reports, 2);
	T_EQ(t_after(out, T_READ_OK, reports - 1), 2500);
	T_EQ(t_dir_entries(xdg, "gds_stats."), 0);
	return T_EXIT_PASS;
}
