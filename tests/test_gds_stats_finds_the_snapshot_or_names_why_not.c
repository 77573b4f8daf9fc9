/* SPDX-License-Identifier: Apache-2.0 */
/* gds_stats -p PID (argv[1]) finds a process's snapshot where the process
 * put it, or says why there is none, each cause with its own exit status:
 *  - OPENCUFILE_STATS_FILE with a relative path ("%p" = pid): found from
 *    the process's working directory, whatever the tool's;
 *  - 2: bad usage; 3: no such process; 4: a process that does not use
 *    libcufile (a FIFO in the place of its snapshot does not hold the
 *    tool); 5: statistics off, saying which key and which environment
 *    variable turn them on (a process with profile.cufile_stats 0, and one
 *    that publishes a file at level 0); 127: a command that cannot run. */
#include "stats_reader_util.h"

static void expect_off(const char *out)
{
	T_ASSERT(strstr(out, "profile") != NULL);
	T_ASSERT(strstr(out, "cufile_stats") != NULL);
	T_ASSERT(strstr(out, "OPENCUFILE_STATS_LEVEL") != NULL);
}

int main(int argc, char **argv)
{
	const char *tool = t_stats_test_start(argc, argv);
	const char *xdg = t_private_dir();
	const char *data = t_make_pattern_file(T_DATA_SIZE, 0);
	const char *out;

	/* A file named by the process relative to its working directory
	 * (started in xdg); the tool runs from /. */
	struct t_reader r;
	char file_env[PATH_MAX + 64], file[PATH_MAX + 64], cwd[PATH_MAX], abs_data[PATH_MAX];
	T_ASSERT(getcwd(cwd, sizeof(cwd)) != NULL);
	T_ASSERT(realpath(data, abs_data) != NULL);
	T_SYS(chdir(xdg));
	t_reader_start(&r, t_reader_env(xdg, 1, "OPENCUFILE_STATS_FILE=find_%p.bin"), abs_data);
	T_SYS(chdir(cwd));
	snprintf(file, sizeof(file), "%s/find_%d.bin", xdg, (int)r.pid);
	T_ASSERT(t_exists(file));
	long long reads = t_reader_pause(&r, file);
	T_EQ(t_run(&out, "cd / && %s -p %d", tool, (int)r.pid), 0);
	T_EQ(t_after(out, T_READ_OK, 0), reads);
	T_EQ(t_reader_end(&r, 0), 0);
	/* A file the user named is kept, with the last counts. */
	T_ASSERT(t_exists(file));
	struct ocf_stats_file f;
	T_EQ(stats_file_read(AT_FDCWD, file, &f), 0);
	T_EQ(f.final, 1);
	T_EQ_U(f.stats.detailed.basic.read_ops.ok, (uint64_t)reads);
	unlink(file);

	/* Usage. */
	T_EQ(t_run(&out, "%s -p", tool), 2);
	T_EQ(t_run(&out, "%s -p 1 -l 4", tool), 2);
	T_EQ(t_run(&out, "%s -p 1 -- true", tool), 2);
	T_EQ(t_run(&out, "%s -c 2 -p 1", tool), 2);

	/* No such process: one that has ended and been reaped. */
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	T_EQ(waitpid(gone, NULL, 0), gone);
	T_EQ(t_run(&out, "%s -p %d", tool, (int)gone), 3);
	T_ASSERT(strstr(out, "no process") != NULL);

	/* A process that does not use libcufile, with a FIFO in the place
	 * of its snapshot, which must not hold the tool. */
	pid_t sl = t_spawn_sleep(t_env_with(t_reader_env(xdg, 1, NULL)));
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/opencufile", xdg);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		T_FAIL("mkdir %s: %s", dir, strerror(errno));
	T_SYS(mkfifo(t_snapshot(xdg, sl), 0600));
	T_EQ(t_run(&out, "timeout 20 %s -p %d", tool, (int)sl), 4);
	T_ASSERT(strstr(out, "does not use libcufile") != NULL);
	unlink(t_snapshot(xdg, sl));
	kill(sl, SIGKILL);
	waitpid(sl, NULL, 0);

	/* Statistics off: nothing published. */
	t_reader_start(&r, t_reader_env(xdg, 0, NULL), data);
	T_EQ(t_run(&out, "%s -p %d", tool, (int)r.pid), 5);
	expect_off(out);
	T_ASSERT(!t_exists(t_snapshot(xdg, r.pid)));
	T_EQ(t_reader_end(&r, 0), 0);

	/* A named file at level 0: published (pinned memory figures), but
	 * the statistics are off. */
	snprintf(file_env, sizeof(file_env), "OPENCUFILE_STATS_FILE=%s/level0_%%p.bin", xdg);
	t_reader_start(&r, t_reader_env(xdg, 0, file_env), data);
	T_EQ(t_run(&out, "%s -p %d", tool, (int)r.pid), 5);
	expect_off(out);
	T_ASSERT(strstr(out, "level 0") != NULL);
	T_EQ(t_reader_end(&r, 0), 0);

	/* A command that cannot be run. */
	T_EQ(t_run(&out, "%s -- /nonexistent/command", tool), 127);
	T_ASSERT(strstr(out, "cannot run") != NULL);
	return T_EXIT_PASS;
}
