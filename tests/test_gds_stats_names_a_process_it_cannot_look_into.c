/* SPDX-License-Identifier: Apache-2.0 */
/* gds_stats -p PID (argv[1]) says what it could not do, and names the
 * process from /proc/PID/comm:
 *  - a process whose /proc/PID/maps and environ it may not read (one that
 *    made itself non-dumpable, as uid 65534 when the test runs as root,
 *    else as the test's own user; the tool runs as the same user): exit 1,
 *    "process PID (NAME): cannot read /proc/PID/maps: Permission denied",
 *    that whether it uses libcufile cannot be told, where it looked and
 *    that the environment cannot be read either - not "uses  but
 *    publishes no statistics";
 *  - a process it can look into that does not use libcufile: exit 4,
 *    "process PID (sleep) does not use libcufile".
 * Skips (77) only when, as root, the uid cannot be changed. */
#include "stats_reader_util.h"

#define HIDDEN "ocf_hidden"

/* A child that is not dumpable (as T_NOBODY when root), named HIDDEN; it
 * dies with this process.  Returns its pid once it is ready, or -1 when
 * the uid cannot be changed. */
static pid_t spawn_hidden(void)
{
	int ready[2];
	T_SYS(pipe(ready));
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(T_NOBODY) != 0 || setuid(T_NOBODY) != 0))
			_exit(77);
		/* After the uid change, which clears the parent-death signal. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || prctl(PR_SET_NAME, HIDDEN) != 0 ||
		    prctl(PR_SET_DUMPABLE, 0) != 0)
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	char c;
	ssize_t n = read(ready[0], &c, 1);
	close(ready[0]);
	if (n == 1)
		return pid;
	int s = 0;
	T_EQ(waitpid(pid, &s, 0), pid);
	T_ASSERT(WIFEXITED(s) && WEXITSTATUS(s) == 77);
	return -1;
}

int main(int argc, char **argv)
{
	const char *tool = t_stats_test_start(argc, argv);
	const char *out;
	char want[256];

	pid_t h = spawn_hidden();
	if (h < 0)
		T_SKIP("cannot change to uid %d", T_NOBODY);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)h);
	int ex = geteuid() == 0 ? t_run_as_nobody(&out, tool, (const char *[]){"-p", pid, NULL})
				: t_run(&out, "%s -p %d", tool, (int)h);
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	T_EQ(ex, 1);
	snprintf(want, sizeof(want), "process %d (" HIDDEN "): cannot read /proc/%d/maps: Permission denied", (int)h,
		 (int)h);
	T_ASSERT(strstr(out, want) != NULL);
	T_ASSERT(strstr(out, "whether it uses libcufile cannot be told") != NULL);
	T_ASSERT(strstr(out, "No statistics of it in ") != NULL);
	snprintf(want, sizeof(want), "/proc/%d/environ: Permission denied", (int)h);
	T_ASSERT(strstr(out, want) != NULL);
	T_ASSERT(strstr(out, "publishes no statistics") == NULL);

	/* One it can look into: named, and it does not use the library. */
	pid_t sl = t_spawn_sleep(NULL);
	T_EQ(t_run(&out, "%s -p %d", tool, (int)sl), 4);
	snprintf(want, sizeof(want), "process %d (sleep) does not use libcufile", (int)sl);
	T_ASSERT(strstr(out, want) != NULL);
	kill(sl, SIGKILL);
	waitpid(sl, NULL, 0);
	return T_EXIT_PASS;
}
