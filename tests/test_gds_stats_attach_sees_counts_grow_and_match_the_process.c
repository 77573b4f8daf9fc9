/* SPDX-License-Identifier: Apache-2.0 */
/* gds_stats -p PID (argv[1]) attached to a process that reads in a loop
 * with profile.cufile_stats 3 and no OPENCUFILE_STATS_FILE (so it publishes
 * in its default directory, here under a private XDG_RUNTIME_DIR):
 *  - with -i 1 -c 3 it prints three reports whose read counts grow, each
 *    with reads in its last interval;
 *  - once the process has paused, the totals it prints equal what
 *    cuFileGetStatsL1 returns inside the process;
 *  - -l 1 shows no histogram and no GPU, -l 2 the size histogram (every
 *    read in the 64 KiB bucket) and no GPU, -l 3 the reads of GPU 0 (with
 *    device memory);
 *  - a process counting at level 1 shown with -l 3: a note, and level 1. */
#include "stats_reader_util.h"

static bool device;

static void check_levels(const char *tool, pid_t pid, long long reads)
{
	const char *out;
	T_EQ(t_run(&out, "%s -p %d -l 1", tool, (int)pid), 0);
	T_EQ(t_after(out, T_READ_OK, 0), reads);
	T_ASSERT(strstr(out, "size histogram") == NULL);
	T_ASSERT(strstr(out, "GPU 0") == NULL);

	T_EQ(t_run(&out, "%s -p %d -l 2", tool, (int)pid), 0);
	T_EQ(t_after(out, T_READ_OK, 0), reads);
	T_EQ(t_after(out, "[64, 128): ", 0), reads);
	T_ASSERT(strstr(out, "GPU 0") == NULL);

	T_EQ(t_run(&out, "%s -p %d -l 3", tool, (int)pid), 0);
	T_EQ(t_after(out, T_READ_OK, 0), reads);
	T_EQ(t_after(out, "[64, 128): ", 0), reads);
	if (device) {
		T_ASSERT(strstr(out, "GPU 0 uuid") != NULL);
		T_EQ(t_after(out, "\n    reads ", 0), reads);
	}
}

int main(int argc, char **argv)
{
	const char *tool = t_stats_test_start(argc, argv);
	device = t_cuda_init() == 0;
	const char *xdg = t_private_dir();
	const char *data = t_make_pattern_file(T_DATA_SIZE, 0);
	struct t_reader r;
	t_reader_start(&r, t_reader_env(xdg, 3, NULL), data);
	T_ASSERT(t_exists(t_snapshot(xdg, r.pid)));

	/* Growing counts, three reports about a second apart. */
	const char *out;
	T_EQ(t_run(&out, "%s -p %d -i 1 -c 3", tool, (int)r.pid), 0);
	long long prev = 0;
	for (int i = 0; i < 3; i++) {
		long long n = t_after(out, T_READ_OK, i);
		T_GT(n, prev);
		T_GT(t_after(out, "\n  read    ops ", i), 0);
		prev = n;
	}
	T_EQ(t_after(out, T_READ_OK, 3), -1);

	/* Paused: the tool agrees with the process, at every level. */
	long long reads = t_reader_pause(&r, t_snapshot(xdg, r.pid));
	T_GE(reads, prev);
	check_levels(tool, r.pid, reads);
	/* Nothing read meanwhile: the last interval shows no read. */
	T_EQ(t_run(&out, "%s -p %d", tool, (int)r.pid), 0);
	T_EQ(t_after(out, "\n  read    ops ", 0), 0);
	T_EQ(t_reader_end(&r, 0), 0);
	T_ASSERT(!t_exists(t_snapshot(xdg, r.pid)));

	/* A process counting at level 1, asked for level 3. */
	t_reader_start(&r, t_reader_env(xdg, 1, NULL), data);
	reads = t_reader_pause(&r, t_snapshot(xdg, r.pid));
	T_EQ(t_run(&out, "%s -p %d -l 3", tool, (int)r.pid), 0);
	T_ASSERT(strstr(out, "counts at level 1") != NULL);
	T_EQ(t_after(out, T_READ_OK, 0), reads);
	T_ASSERT(strstr(out, "size histogram") == NULL);
	T_ASSERT(strstr(out, "GPU 0") == NULL);
	T_EQ(t_reader_end(&r, 0), 0);
	return T_EXIT_PASS;
}
