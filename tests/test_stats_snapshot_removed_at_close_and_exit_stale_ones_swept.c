/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot a process publishes in its default directory (here under a
 * private XDG_RUNTIME_DIR) leaves nothing behind:
 *  - it is removed when the process closes the driver (while it lives on),
 *    and when it exits without closing the driver;
 *  - a process ended by SIGTERM, SIGINT or SIGKILL (default actions: no
 *    exit handler runs, and the library installs no signal handler) leaves
 *    its snapshot, which is never taken for a live one: gds_stats -p
 *    (argv[1]) says "no process" (3) and removes it, and so does the next
 *    process that publishes, each signal tried both ways;
 *  - a snapshot naming a live pid with another start time (the pid was
 *    reused) is stale as well: gds_stats removes it and reports on the
 *    live process (here one that does not use libcufile: 4), and the next
 *    publisher removes such a file too;
 *  - so is the snapshot of a process that has exec'd a program without
 *    libcufile (same pid and start time, no exit handler ran): gds_stats
 *    removes it and says the process does not use libcufile (4);
 *  - in the end the directory holds no file, temporary ones included. */
#include "stats_reader_util.h"

static const char *tool, *xdg, *data;
static const char **env;

/* A reader ended by sig leaves its snapshot; the tool or the next reader
 * removes it. */
static void killed(int sig, bool by_tool)
{
	t_set_case("signal %d, removed by %s", sig, by_tool ? "gds_stats" : "the next process");
	struct t_reader r;
	t_reader_start(&r, env, data);
	const char *snap = t_snapshot(xdg, r.pid);
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s", snap);
	int s = t_reader_end(&r, sig);
	T_ASSERT(WIFSIGNALED(s) && WTERMSIG(s) == sig);
	T_ASSERT(t_exists(path));
	if (by_tool) {
		const char *out;
		T_EQ(t_run(&out, "XDG_RUNTIME_DIR=%s %s -p %d", xdg, tool, (int)r.pid), 3);
		T_ASSERT(strstr(out, "removed the stale statistics") != NULL);
		T_ASSERT(!t_exists(path));
	} else {
		struct t_reader next;
		t_reader_start(&next, env, data);
		T_ASSERT(!t_exists(path));
		T_EQ(t_reader_end(&next, 0), 0);
	}
}

/* Puts `f` as the snapshot of pid (a live process that did not write it). */
static void plant(const struct ocf_stats_file *f, pid_t pid)
{
	struct ocf_stats_file g = *f;
	g.pid = pid;
	int fd = open(t_snapshot(xdg, pid), O_CREAT | O_WRONLY | O_TRUNC, 0600);
	T_ASSERT(fd >= 0);
	T_EQ(write(fd, &g, sizeof(g)), (long)sizeof(g));
	close(fd);
}

int main(int argc, char **argv)
{
	tool = t_stats_test_start(argc, argv);
	xdg = t_private_dir();
	data = t_make_pattern_file(T_DATA_SIZE, 0);
	env = t_reader_env(xdg, 1, NULL);
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/opencufile", xdg);

	/* Driver closed: removed while the process lives on. */
	struct t_reader r;
	t_reader_start(&r, env, data);
	T_ASSERT(t_exists(t_snapshot(xdg, r.pid)));
	T_ASSERT(strncmp(t_reader_cmd(&r, 'c'), "closed", 6) == 0);
	T_ASSERT(!t_exists(t_snapshot(xdg, r.pid)));
	T_EQ(t_reader_end(&r, 0), 0);

	/* Exit without closing the driver: removed at exit. */
	t_reader_start(&r, env, data);
	pid_t pid = r.pid;
	T_ASSERT(t_exists(t_snapshot(xdg, pid)));
	T_EQ(t_reader_end(&r, 0), 0);
	T_ASSERT(!t_exists(t_snapshot(xdg, pid)));

	const int sigs[] = {SIGTERM, SIGINT, SIGKILL};
	for (int i = 0; i < 3; i++) {
		killed(sigs[i], true);
		killed(sigs[i], false);
	}
	t_set_case("reused pid");

	/* A reused pid: a snapshot of a live reader planted under the pid of
	 * a live process that did not write it. */
	t_reader_start(&r, env, data);
	struct ocf_stats_file f;
	T_EQ(stats_file_read(AT_FDCWD, t_snapshot(xdg, r.pid), &f), 0);
	T_EQ(f.pid, r.pid);
	/* Of the same user, with the same XDG_RUNTIME_DIR. */
	pid_t sl = t_spawn_sleep(t_env_with(env));
	plant(&f, sl);
	const char *out;
	T_EQ(t_run(&out, "%s -p %d", tool, (int)sl), 4);
	T_ASSERT(strstr(out, "removed the stale statistics") != NULL);
	T_ASSERT(!t_exists(t_snapshot(xdg, sl)));
	plant(&f, sl);
	struct t_reader next;
	t_reader_start(&next, env, data);
	T_ASSERT(!t_exists(t_snapshot(xdg, sl)));
	/* The live readers' snapshots stay. */
	T_ASSERT(t_exists(t_snapshot(xdg, r.pid)));
	T_ASSERT(t_exists(t_snapshot(xdg, next.pid)));
	T_EQ(t_reader_end(&next, 0), 0);
	T_EQ(t_reader_end(&r, 0), 0);
	kill(sl, SIGKILL);
	waitpid(sl, NULL, 0);

	/* A reader that execs sleep. */
	t_set_case("exec");
	t_reader_start(&r, env, data);
	char snap[PATH_MAX + 64];
	snprintf(snap, sizeof(snap), "%s", t_snapshot(xdg, r.pid));
	t_reader_cmd(&r, 'e');
	char comm[64];
	snprintf(comm, sizeof(comm), "/proc/%d/comm", (int)r.pid);
	for (int i = 0; i < 200 && strncmp(t_slurp(comm), "sleep", 5) != 0; i++)
		t_sleep_ms(10);
	T_ASSERT(t_exists(snap));
	T_EQ(t_run(&out, "%s -p %d", tool, (int)r.pid), 4);
	T_ASSERT(strstr(out, "removed the stale statistics") != NULL);
	T_ASSERT(!t_exists(snap));
	T_ASSERT(WIFSIGNALED(t_reader_end(&r, SIGKILL)));

	T_EQ(t_dir_entries(dir, ""), 0);
	return T_EXIT_PASS;
}
