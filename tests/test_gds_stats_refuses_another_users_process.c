/* SPDX-License-Identifier: Apache-2.0 */
/* gds_stats (argv[1]) run by a user who is not root refuses another user's
 * process with exit status 6, before looking for its statistics.
 *
 * As root: a reader publishing its statistics runs as root, and a child
 * that has changed to uid/gid 65534 runs the tool (a copy in a directory
 * any user may enter) against it; as root the same tool reads them.  As
 * another user: the tool is run against pid 1, a process of root's.  Skips
 * (77) only when the uid cannot be changed (or, not root, pid 1 is ours). */
#include "stats_reader_util.h"

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

	const char *xdg = t_private_dir();
	const char *data = t_make_pattern_file(T_DATA_SIZE, 0);
	struct t_reader r;
	t_reader_start(&r, t_reader_env(xdg, 1, NULL), data);
	T_ASSERT(t_exists(t_snapshot(xdg, r.pid)));

	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)r.pid);
	int ex = t_run_as_nobody(&out, arg_tool, (const char *[]){"-p", pid, NULL});
	if (ex == 77) {
		t_reader_end(&r, 0);
		T_SKIP("cannot change to uid %d", T_NOBODY);
	}
	T_EQ(ex, 6);
	T_ASSERT(strstr(out, "only its owner or root") != NULL);
	/* Its snapshot is untouched, and root reads it. */
	T_ASSERT(t_exists(t_snapshot(xdg, r.pid)));
	long long reads = t_reader_pause(&r, t_snapshot(xdg, r.pid));
	T_EQ(t_run(&out, "%s -p %d", arg_tool, (int)r.pid), 0);
	T_EQ(t_after(out, T_READ_OK, 0), reads);
	T_EQ(t_reader_end(&r, 0), 0);
	return T_EXIT_PASS;
}
