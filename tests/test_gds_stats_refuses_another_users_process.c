/* SPDX-License-Identifier: Apache-2.0 */
/* gds_stats (argv[1]) run by a user who is not root refuses another user's
 * process with exit status 6, before looking for its statistics.
 *
 * As root: a reader publishing its statistics runs as root, and a child
 * that has changed to uid/gid 65534 runs the tool (a copy in a directory
 * any user may enter) against it; as root the same tool reads them.  As
 * another user: the tool is run against pid 1, a process of root's.  Skips
 * (77) only when the uid cannot be changed (or, not root, pid 1 is ours). */
#include <grp.h>

#include "stats_reader_util.h"

#define NOBODY 65534

int main(int argc, char **argv)
{
	const char *arg_tool = t_stats_test_start(argc, argv);
	const char *out;
	if (geteuid() != 0) {
		struct stat st;
		T_SYS(stat("/proc/1", &st));
		if (st.st_uid == geteuid())
			T_SKIP("pid 1 is this user's process");
		T_EQ(t_run(&out, "%s -p 1", arg_tool), 6);
		T_ASSERT(strstr(out, "only its owner or root") != NULL);
		return T_EXIT_PASS;
	}

	/* A copy of the tool that uid 65534 can run, wherever the build is. */
	const char *dir = t_temp_dir("/tmp/ocf_gds_stats_XXXXXX");
	char tool[64];
	snprintf(tool, sizeof(tool), "%s/gds_stats", dir);
	T_EQ(t_run(&out, "cp '%s' %s && chmod 755 %s %s", arg_tool, tool, dir, tool), 0);

	const char *xdg = t_private_dir();
	const char *data = t_make_pattern_file(T_DATA_SIZE, 0);
	struct t_reader r;
	t_reader_start(&r, t_reader_env(xdg, 1, NULL), data);
	T_ASSERT(t_exists(t_snapshot(xdg, r.pid)));

	char outfile[PATH_MAX];
	snprintf(outfile, sizeof(outfile), "%s/out.txt", dir);
	int fd = open(outfile, O_CREAT | O_WRONLY | O_TRUNC, 0666);
	T_ASSERT(fd >= 0);
	T_SYS(fchmod(fd, 0666));
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(77);
		dup2(fd, 1);
		dup2(fd, 2);
		char pid[16];
		snprintf(pid, sizeof(pid), "%d", (int)r.pid);
		execl(tool, tool, "-p", pid, (char *)NULL);
		_exit(126);
	}
	close(fd);
	int s = 0;
	T_EQ(waitpid(c, &s, 0), c);
	out = t_slurp(outfile);
	fprintf(stderr, "as uid %d: %s", NOBODY, out);
	if (WIFEXITED(s) && WEXITSTATUS(s) == 77) {
		t_reader_end(&r, 0);
		T_SKIP("cannot change to uid %d", NOBODY);
	}
	T_ASSERT(WIFEXITED(s));
	T_EQ(WEXITSTATUS(s), 6);
	T_ASSERT(strstr(out, "only its owner or root") != NULL);
	/* Its snapshot is untouched, and root reads it. */
	T_ASSERT(t_exists(t_snapshot(xdg, r.pid)));
	long long reads = t_reader_pause(&r, t_snapshot(xdg, r.pid));
	T_EQ(t_run(&out, "%s -p %d", tool, (int)r.pid), 0);
	T_EQ(t_after(out, T_READ_OK, 0), reads);
	T_EQ(t_reader_end(&r, 0), 0);
	return T_EXIT_PASS;
}
