/* SPDX-License-Identifier: Apache-2.0 */
/* With profile.cufile_stats > 0 and no OPENCUFILE_STATS_FILE the library
 * publishes its snapshot in a directory only its user can enter:
 *  - without XDG_RUNTIME_DIR: /tmp/opencufile-UID, a directory of mode
 *    0700 owned by the user, created on first use, the file mode 0600;
 *    gds_stats (argv[1]) reads it; removed at exit;
 *  - a directory open to others (0755), a symbolic link in place of the
 *    directory, or (as root) one owned by another user is refused: nothing
 *    is written there, one ERROR line in cufile.log says why, and gds_stats
 *    finds nothing (statistics off, 5); once the directory is fixed the
 *    snapshot appears within the next seconds. */
#include "stats_reader_util.h"

static const char *tool, *data;

/* Starts a reader publishing under xdg with its own log; the log's path
 * goes to log. */
static void start(struct t_reader *r, const char *xdg, char *log, size_t len)
{
	static char log_env[PATH_MAX + 32];
	snprintf(log, len, "%s/cufile.log", xdg);
	snprintf(log_env, sizeof(log_env), "CUFILE_LOGFILE_PATH=%s", log);
	t_reader_start(r, t_reader_env(xdg, 1, log_env), data);
}

static int count(const char *text, const char *what)
{
	int n = 0;
	for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

/* A reader under xdg, whose xdg/opencufile is unsafe, publishes nothing. */
static void refused(const char *xdg)
{
	struct t_reader r;
	char log[PATH_MAX + 32];
	start(&r, xdg, log, sizeof(log));
	t_sleep_ms(1500); /* a periodic write too */
	const char *out;
	T_EQ(t_run(&out, "%s -p %d", tool, (int)r.pid), 5);
	T_ASSERT(!t_exists(t_snapshot(xdg, r.pid)));
	T_EQ(count(t_slurp(log), "statistics are not published"), 1);
	T_EQ(t_reader_end(&r, 0), 0);
}

int main(int argc, char **argv)
{
	tool = t_stats_test_start(argc, argv);
	data = t_make_pattern_file(T_DATA_SIZE, 0);
	struct stat st;
	const char *out;

	/* No XDG_RUNTIME_DIR: /tmp/opencufile-UID. */
	char tmpdir[64], snap[128];
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/opencufile-%u", (unsigned)geteuid());
	if (lstat(tmpdir, &st) == 0 && (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))) {
		fprintf(stderr, "%s exists and is not private: the /tmp case is not tested\n", tmpdir);
	} else {
		struct t_reader r;
		t_reader_start(&r, t_reader_env(NULL, 1, NULL), data);
		snprintf(snap, sizeof(snap), "%s/stats-%d.bin", tmpdir, (int)r.pid);
		T_SYS(lstat(tmpdir, &st));
		T_ASSERT(S_ISDIR(st.st_mode));
		T_EQ(st.st_uid, geteuid());
		T_EQ(st.st_mode & 0777, 0700);
		T_SYS(lstat(snap, &st));
		T_ASSERT(S_ISREG(st.st_mode));
		T_EQ(st.st_uid, geteuid());
		T_EQ(st.st_mode & 0777, 0600);
		long long reads = t_reader_pause(&r, snap);
		T_EQ(t_run(&out, "env -u XDG_RUNTIME_DIR %s -p %d", tool, (int)r.pid), 0);
		T_EQ(t_after(out, T_READ_OK, 0), reads);
		T_EQ(t_reader_end(&r, 0), 0);
		T_ASSERT(!t_exists(snap));
	}

	/* Open to others: refused; fixed: used. */
	const char *xdg = t_private_dir();
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/opencufile", xdg);
	T_SYS(mkdir(dir, 0700));
	T_SYS(chmod(dir, 0755));
	refused(xdg);
	struct t_reader r;
	char log[PATH_MAX + 32];
	start(&r, xdg, log, sizeof(log));
	T_ASSERT(!t_exists(t_snapshot(xdg, r.pid)));
	T_SYS(chmod(dir, 0700));
	for (int i = 0; i < 60 && !t_exists(t_snapshot(xdg, r.pid)); i++)
		t_sleep_ms(50);
	T_ASSERT(t_exists(t_snapshot(xdg, r.pid)));
	T_EQ(t_reader_end(&r, 0), 0);
	T_ASSERT(!t_exists(t_snapshot(xdg, r.pid)));

	/* A symbolic link to a private directory in its place. */
	xdg = t_private_dir();
	const char *target = t_private_dir();
	snprintf(dir, sizeof(dir), "%s/opencufile", xdg);
	T_SYS(symlink(target, dir));
	refused(xdg);
	T_EQ(t_dir_entries(target, ""), 0);

	/* Owned by another user (only root can make one). */
	if (geteuid() == 0) {
		xdg = t_private_dir();
		snprintf(dir, sizeof(dir), "%s/opencufile", xdg);
		T_SYS(mkdir(dir, 0700));
		T_SYS(chown(dir, 65534, 65534));
		refused(xdg);
	}
	return T_EXIT_PASS;
}
