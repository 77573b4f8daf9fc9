/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gds_stats - the cuFile statistics of a running process, or of a command
 * run under it.
 *
 *   gds_stats -p PID [-l LEVEL] [-i SECONDS [-c COUNT]]
 *   gds_stats [-l LEVEL] [-i SECONDS] -- COMMAND [ARGS...]
 *
 * DESIGN: the library publishes its snapshot (src/stats_file.h) once a
 * second; this program only reads files, so it needs no privilege of its
 * own, no ptrace and no library of the target's.  For -p it finds the
 * snapshot from the process's environment (/proc/PID/environ:
 * OPENCUFILE_STATS_FILE, else XDG_RUNTIME_DIR, as the library chose it),
 * falling back to the usual directories of the process's uid; it takes a
 * snapshot only when its pid and start time are those of the live process,
 * and removes stale ones (writers gone) from the directories it looks in.
 * The interval figures come from two snapshots: the first read, and the
 * next one the process writes after the interval.  With a command, it runs
 * the command with OPENCUFILE_STATS_FILE in a private directory of its own
 * and OPENCUFILE_STATS_LEVEL set, so the command publishes whatever its
 * configuration says, waits for it, and reports the last snapshot of every
 * process of the command that used the library (written at exit).
 *
 * Exit status: 0, 1 (error, also: the process's /proc/PID/maps cannot be
 * read, so whether it uses the library is not known), 2 (usage), 3 (no
 * such process), 4 (the process does not use libcufile), 5 (statistics off
 * in the process), 6 (another user's process, refused unless root); with a
 * command, its own status (128 + N when signal N ended it; 127 when it could
 * not be run).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stats_report.h"

enum {
	EX_OK = 0,
	EX_ERR = 1,
	EX_USAGE = 2,
	EX_NO_PROCESS = 3,
	EX_NOT_USING = 4,
	EX_STATS_OFF = 5,
	EX_OTHER_USER = 6,
	EX_CANNOT_RUN = 127,
};

#define PROG "gds_stats"
/* The library writes a snapshot every second: a newer one is this late at
 * most, with margin for a loaded machine. */
#define NEWER_WAIT_MS 3000
#define POLL_MS 50

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void usage(FILE *to)
{
	fprintf(to, "usage: gds_stats -p PID [-l LEVEL] [-i SECONDS [-c COUNT]]\n"
		    "       gds_stats [-l LEVEL] [-i SECONDS] -- COMMAND [ARGS...]\n"
		    "  -p PID      the process to report on (it must run with profile.cufile_stats > 0)\n"
		    "  -l LEVEL    1: totals and the last interval, 2: + size histogram, 3: + per GPU\n"
		    "              (default: the process's level; with a command 3, also the level it counts at)\n"
		    "  -i SECONDS  report every SECONDS seconds (default: once, over about one second)\n"
		    "  -c COUNT    number of reports with -i (default: until the process ends)\n");
}

/* ------------------------------------------------------------ processes */

/* Effective uid of pid (from /proc/PID/status); -ESRCH when there is no
 * such process. */
static int proc_euid(pid_t pid, uid_t *uid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	int r = -EINVAL;
	while (fgets(line, sizeof(line), f)) {
		unsigned ruid, euid;
		if (sscanf(line, "Uid: %u %u", &ruid, &euid) == 2) {
			*uid = (uid_t)euid;
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

/* The value of NAME in pid's initial environment, in buf; false when
 * absent or unreadable. */
static bool proc_env(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t cap = 1 << 16, n = 0;
	char *env = malloc(cap + 1);
	ssize_t got;
	while (env && (got = read(fd, env + n, cap - n)) > 0) {
		n += (size_t)got;
		if (n == cap) {
			char *more = realloc(env, cap * 2 + 1);
			if (!more)
				break;
			env = more;
			cap *= 2;
		}
	}
	close(fd);
	bool found = false;
	size_t nl = strlen(name);
	if (env)
		env[n] = '\0'; /* the last entry's end, whatever was read */
	for (size_t i = 0; env && i < n && !found; i += strlen(env + i) + 1)
		if (strncmp(env + i, name, nl) == 0 && env[i + nl] == '=')
			found = snprintf(buf, len, "%s", env + i + nl + 1) < (int)len;
	free(env);
	return found;
}

/* " (NAME)", pid's command name from /proc/PID/comm, in buf; "" when it
 * cannot be read. */
static void proc_name(pid_t pid, char *buf, size_t len)
{
	char path[64], name[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	if (f && fgets(name, sizeof(name), f))
		name[strcspn(name, "\n")] = '\0';
	if (f)
		fclose(f);
	snprintf(buf, len, name[0] ? " (%s)" : "%s", name);
}

/* 0 when /proc/PID/WHAT can be opened for reading, else errno. */
static int proc_unreadable(pid_t pid, const char *what)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* The path of a libcufile mapped by pid in buf ("" when none); -errno
 * when its mappings cannot be read. */
static int proc_libcufile(pid_t pid, char *buf, size_t len)
{
	char path[64], line[PATH_MAX + 256];
	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!buf[0] && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');
		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		const char *base = strrchr(file, '/') + 1;
		if (strncmp(base, "libcufile", 9) == 0)
			snprintf(buf, len, "%s", file);
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------- sources */

/* Where a process's snapshot is: a file it was told to write (path), or
 * the default directory (dir, with the file name). */
struct source {
	pid_t pid;
	uid_t uid;
	uint64_t start;
	bool is_path;
	char path[PATH_MAX + 64];
	char xdg[PATH_MAX]; /* the directory's parent ("": /tmp) */
};

static void removed_stale(pid_t pid, void *arg)
{
	const char *dir = arg;
	fprintf(stderr, PROG ": removed the stale statistics of process %d in %s (written by a process that has ended)\n",
		(int)pid, dir);
}

/* Removes stale snapshots from the default directory of uid under xdg. */
static void sweep(const char *xdg, uid_t uid)
{
	char dir[PATH_MAX + 64];
	int dfd = stats_dir_open(xdg[0] ? xdg : NULL, uid, false, dir, sizeof(dir));
	if (dfd < 0)
		return;
	stats_dir_sweep(dfd, removed_stale, dir);
	close(dfd);
}

/* Reads the source's snapshot: 0, or -ENOENT when there is none of this
 * process (absent, or another process's). */
static int source_read(const struct source *s, struct ocf_stats_file *f)
{
	int r;
	if (s->is_path) {
		r = stats_file_read(AT_FDCWD, s->path, f);
	} else {
		char name[64];
		int dfd = stats_dir_open(s->xdg[0] ? s->xdg : NULL, s->uid, false, NULL, 0);
		if (dfd < 0)
			return -ENOENT;
		stats_file_name(s->pid, name, sizeof(name));
		r = stats_file_read(dfd, name, f);
		close(dfd);
	}
	if (r == 0 && (f->pid != s->pid || f->start_ticks != s->start))
		r = -ENOENT;
	return r == -EINVAL ? -ENOENT : r;
}

/* Whether the process of s's snapshot has exec'd another program since it
 * wrote it (same pid, same start time, no libcufile mapped any more: exec
 * runs no exit handler); the snapshot is then removed. */
static bool exec_left(const struct source *s)
{
	char lib[PATH_MAX], dir[PATH_MAX + 64], name[64];
	if (proc_libcufile(s->pid, lib, sizeof(lib)) != 0 || lib[0])
		return false;
	int dfd = stats_dir_open(s->xdg[0] ? s->xdg : NULL, s->uid, false, dir, sizeof(dir));
	if (dfd < 0)
		return false;
	stats_file_name(s->pid, name, sizeof(name));
	if (unlinkat(dfd, name, 0) == 0)
		removed_stale(s->pid, dir);
	close(dfd);
	return true;
}

/* The candidate parents of the default directory of a process of uid. */
static int default_parents(pid_t pid, uid_t uid, char out[][PATH_MAX], int max)
{
	int n = 0;
	char x[PATH_MAX];
	if (proc_env(pid, "XDG_RUNTIME_DIR", x, sizeof(x)) && x[0] == '/')
		snprintf(out[n++], PATH_MAX, "%s", x);
	else
		out[n++][0] = '\0'; /* what the library chose: /tmp */
	/* The process may have changed its environment after it started. */
	snprintf(x, sizeof(x), "/run/user/%u", (unsigned)uid);
	const char *more[] = {x, ""};
	for (int i = 0; i < 2 && n < max; i++) {
		bool dup = false;
		for (int j = 0; j < n; j++)
			dup |= strcmp(out[j], more[i]) == 0;
		if (!dup)
			snprintf(out[n++], PATH_MAX, "%s", more[i]);
	}
	return n;
}

static void how_to_turn_on(void)
{
	fprintf(stderr, "  Statistics are off: set \"profile\": { \"cufile_stats\": 1 } (2, 3 for more) in its\n"
			"  cufile.json (CUFILE_ENV_PATH_JSON, else /etc/cufile.json) or OPENCUFILE_STATS_LEVEL=1 in its\n"
			"  environment, and restart it.\n");
}

/* Finds pid's snapshot: 0 with *s and *f filled, or the exit status. */
static int find(pid_t pid, struct source *s, struct ocf_stats_file *f)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	int r = proc_euid(pid, &s->uid);
	if (r == 0)
		r = stats_proc_start_ticks(pid, &s->start);
	if (r == -ESRCH) {
		/* Its snapshot may be left behind: the directories of our own
		 * uid are the only ones known without the process. */
		char x[PATH_MAX] = "";
		const char *own = getenv("XDG_RUNTIME_DIR");
		if (own && own[0] == '/')
			sweep(own, geteuid());
		snprintf(x, sizeof(x), "/run/user/%u", (unsigned)geteuid());
		sweep(x, geteuid());
		sweep("", geteuid());
		fprintf(stderr, PROG ": no process %d\n", (int)pid);
		return EX_NO_PROCESS;
	}
	if (r) {
		fprintf(stderr, PROG ": process %d: %s\n", (int)pid, strerror(-r));
		return EX_ERR;
	}
	if (s->uid != geteuid() && geteuid() != 0) {
		fprintf(stderr,
			PROG ": process %d belongs to uid %u: only its owner or root may read its statistics\n",
			(int)pid, (unsigned)s->uid);
		return EX_OTHER_USER;
	}
	char p[PATH_MAX], looked[3 * (PATH_MAX + 64)] = "";
	if (proc_env(pid, "OPENCUFILE_STATS_FILE", p, sizeof(p)) && p[0]) {
		char e[PATH_MAX];
		s->is_path = true;
		/* A relative path is the process's, from its working directory. */
		if (stats_file_expand(p, pid, e, sizeof(e)) == 0 && e[0] == '/')
			snprintf(s->path, sizeof(s->path), "%s", e);
		else if (stats_file_expand(p, pid, e, sizeof(e)) == 0)
			snprintf(s->path, sizeof(s->path), "/proc/%d/cwd/%s", (int)pid, e);
		if (s->path[0] && source_read(s, f) == 0)
			return EX_OK;
	} else {
		char parents[3][PATH_MAX];
		int n = default_parents(pid, s->uid, parents, 3);
		for (int i = 0; i < n; i++) {
			int w = snprintf(s->xdg, sizeof(s->xdg), "%s", parents[i]);
			if (w < 0 || (size_t)w >= sizeof(s->xdg))
				continue; /* a directory name too long to be ours */
			sweep(s->xdg, s->uid);
			if (source_read(s, f) == 0 && !exec_left(s))
				return EX_OK;
			char d[PATH_MAX + 64];
			int dfd = stats_dir_open(s->xdg[0] ? s->xdg : NULL, s->uid, false, d, sizeof(d)); /* its name */
			if (dfd >= 0)
				close(dfd);
			size_t used = strlen(looked);
			snprintf(looked + used, sizeof(looked) - used, "%s%s", used ? ", " : "", d);
		}
	}
	char lib[PATH_MAX], name[80];
	proc_name(pid, name, sizeof(name));
	int maps = proc_libcufile(pid, lib, sizeof(lib));
	int env = proc_unreadable(pid, "environ");
	if (maps < 0) {
		/* Without its mappings nothing says whether it uses the library
		 * at all (the kernel's ptrace access check refused us). */
		fprintf(stderr,
			PROG ": process %d%s: cannot read /proc/%d/maps: %s,\n"
			     "  so whether it uses libcufile cannot be told.\n"
			     "  No statistics of it in %s",
			(int)pid, name, (int)pid, strerror(-maps), s->is_path ? s->path : looked);
		if (env)
			fprintf(stderr, ";\n  its environment, which may name another file (OPENCUFILE_STATS_FILE), cannot be read\n"
					"  either (/proc/%d/environ: %s)",
				(int)pid, strerror(env));
		fprintf(stderr, ".\n  %s ptrace access to the process: being its owner or root is not always enough\n"
				"  (a process that made itself non-dumpable, or one of another user namespace, refuses it).\n",
			env ? "Both need" : "Its maps need");
		return EX_ERR;
	}
	if (!lib[0]) {
		fprintf(stderr, PROG ": process %d%s does not use libcufile\n", (int)pid, name);
		return EX_NOT_USING;
	}
	fprintf(stderr, PROG ": process %d%s uses %s but publishes no statistics%s%s.\n", (int)pid, name, lib,
		s->is_path ? " in " : "", s->is_path ? s->path : "");
	if (env)
		fprintf(stderr, "  (Its environment cannot be read, /proc/%d/environ: %s: looked in %s only.)\n", (int)pid,
			strerror(env), looked);
	how_to_turn_on();
	fprintf(stderr, "  A process that has not opened the driver yet publishes nothing either, nor does a\n"
			"  libcufile other than opencufile's.\n");
	return EX_STATS_OFF;
}

/* Waits for a snapshot newer than prev: 0, 1 when none came (the last one
 * stays in *f), -ENOENT when the snapshot is gone (driver closed or the
 * process ended). */
static int wait_newer(const struct source *s, const struct ocf_stats_file *prev, struct ocf_stats_file *f)
{
	for (int waited = 0;; waited += POLL_MS) {
		int r = source_read(s, f);
		if (r)
			return r;
		if (f->written_mono_ns > prev->written_mono_ns)
			return 0;
		if (waited >= NEWER_WAIT_MS)
			return 1;
		sleep_ms(POLL_MS);
	}
}

static int attach(pid_t pid, int level, int interval, long count)
{
	struct source s;
	struct ocf_stats_file *f = malloc(sizeof(*f)), *prev = malloc(sizeof(*prev));
	if (!f || !prev) {
		fprintf(stderr, PROG ": out of memory\n");
		return EX_ERR;
	}
	int ex = find(pid, &s, prev);
	if (ex == EX_OK && prev->level == 0) {
		fprintf(stderr, PROG ": process %d publishes its statistics at level 0.\n", (int)pid);
		how_to_turn_on();
		fprintf(stderr, "  (Or the program set the level to 0 with cuFileSetStatsLevel.)\n");
		ex = EX_STATS_OFF;
	}
	if (ex == EX_OK && level > (int)prev->level)
		fprintf(stderr, PROG ": process %d counts at level %u; level %d figures are not counted\n", (int)pid,
			prev->level, level);
	for (long k = 0; ex == EX_OK && (count == 0 || k < count); k++) {
		if (k > 0)
			printf("\n");
		if (interval > 1)
			sleep_ms(interval * 1000L - 1000);
		int r = prev->final ? 1 : wait_newer(&s, prev, f);
		if (r == -ENOENT) {
			uint64_t t;
			bool alive = stats_proc_start_ticks(pid, &t) == 0 && t == s.start;
			printf("process %d %s: no more statistics\n", (int)pid, alive ? "closed the driver" : "ended");
			break;
		}
		if (r == 1) {
			/* No newer snapshot: the last one alone. */
			stats_report_print(stdout, prev, NULL, level ? level : (int)prev->level);
			if (prev->final)
				printf("process %d closed the driver: no more statistics\n", (int)pid);
			else
				printf("(no newer snapshot in %d s)\n", NEWER_WAIT_MS / 1000);
			break;
		}
		stats_report_print(stdout, f, prev, level ? level : (int)f->level);
		fflush(stdout);
		struct ocf_stats_file *t = prev;
		prev = f;
		f = t;
		if (interval == 0)
			break;
	}
	free(f);
	free(prev);
	return ex;
}

/* -------------------------------------------------------------- command */

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* The snapshots in dir, in pid order, each reported; prev_of keeps the
 * previous one per process for the interval figures (interim reports). */
struct tracked {
	pid_t pid;
	struct ocf_stats_file f;
};
#define MAX_TRACKED 64

static int by_pid(const void *a, const void *b)
{
	return (int)((const struct tracked *)a)->pid - (int)((const struct tracked *)b)->pid;
}

/* Reads every snapshot in dir into t (sorted by pid); returns the count. */
static int read_all(const char *dir, struct tracked *t, int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while (n < max && (e = readdir(d)) != NULL) {
		int pid;
		char end;
		if (sscanf(e->d_name, "stats-%d.bi%c", &pid, &end) != 2 || end != 'n')
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stats_file_read(AT_FDCWD, path, &t[n].f) == 0) {
			t[n].pid = (pid_t)pid;
			n++;
		}
	}
	closedir(d);
	qsort(t, (size_t)n, sizeof(*t), by_pid);
	return n;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL)
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

static int run_command(char **argv, int level, int interval)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	char dir[PATH_MAX], pattern[PATH_MAX + 32], lvl[16];
	snprintf(dir, sizeof(dir), "%s/gds_stats.XXXXXX", x && x[0] == '/' ? x : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, PROG ": cannot make a directory for the statistics (%s): %s\n", dir, strerror(errno));
		return EX_ERR;
	}
	snprintf(pattern, sizeof(pattern), "%s/stats-%%p.bin", dir);
	snprintf(lvl, sizeof(lvl), "%d", level ? level : 3);
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		remove_dir(dir);
		return EX_ERR;
	}
	/* Ctrl-C and Ctrl-\ reach the command from the terminal: the command
	 * decides, we report.  A SIGTERM sent to us is passed on. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward}, old_int, old_quit;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, NULL);
	pid_t pid = fork();
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		signal(SIGTERM, SIG_DFL);
		close(pfd[0]);
		setenv("OPENCUFILE_STATS_FILE", pattern, 1);
		setenv("OPENCUFILE_STATS_LEVEL", lvl, 1);
		execvp(argv[0], argv);
		int e = errno;
		(void)!write(pfd[1], &e, sizeof(e));
		_exit(EX_CANNOT_RUN);
	}
	close(pfd[1]);
	if (pid < 0) {
		fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
		close(pfd[0]);
		remove_dir(dir);
		return EX_ERR;
	}
	child_pid = pid;
	int e = 0;
	ssize_t got;
	while ((got = read(pfd[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	struct tracked *now = calloc(MAX_TRACKED, sizeof(*now)), *before = calloc(MAX_TRACKED, sizeof(*before));
	int nbefore = 0, status = 0;
	if (got == (ssize_t)sizeof(e))
		fprintf(stderr, PROG ": cannot run %s: %s\n", argv[0], strerror(e));
	for (long waited = 0;; waited += 100) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (interval && now && before && waited > 0 && waited % (interval * 1000L) == 0) {
			/* Interim reports, over the interval since the last; a
			 * snapshot seen before, or a final one (reported at the
			 * end), is not repeated. */
			int n = read_all(dir, now, MAX_TRACKED);
			for (int i = 0; i < n; i++) {
				const struct ocf_stats_file *p = NULL;
				for (int j = 0; j < nbefore; j++)
					if (before[j].pid == now[i].pid)
						p = &before[j].f;
				if (now[i].f.final || (p && p->written_mono_ns >= now[i].f.written_mono_ns))
					continue;
				stats_report_print(stdout, &now[i].f, p, level ? level : 3);
				printf("\n");
			}
			fflush(stdout);
			struct tracked *t = before;
			before = now;
			now = t;
			nbefore = n;
		}
		sleep_ms(100);
	}
	child_pid = 0;
	int n = now && got != (ssize_t)sizeof(e) ? read_all(dir, now, MAX_TRACKED) : 0;
	for (int i = 0; i < n; i++) {
		stats_report_print(stdout, &now[i].f, NULL, level ? level : 3);
		if (!now[i].f.final)
			printf("(the last snapshot of process %d: it ended without its exit handlers)\n", (int)now[i].pid);
		printf("\n");
	}
	if (n == 0 && got != (ssize_t)sizeof(e))
		fprintf(stderr,
			PROG ": %s published no statistics: it did not use libcufile, never opened the driver, or "
			     "its libcufile is not opencufile's\n",
			argv[0]);
	free(now);
	free(before);
	remove_dir(dir);
	if (got == (ssize_t)sizeof(e))
		return EX_CANNOT_RUN;
	return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : EX_ERR;
}

/* ----------------------------------------------------------------- main */

static bool parse_num(const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	long pid = 0, level = 0, interval = 0, count = 0;
	int opt;
	/* '+': options end at the first non-option (the command). */
	while ((opt = getopt(argc, argv, "+p:l:i:c:h")) != -1) {
		bool ok = true;
		switch (opt) {
		case 'p':
			ok = parse_num(optarg, 1, INT_MAX, &pid);
			break;
		case 'l':
			ok = parse_num(optarg, 1, 3, &level);
			break;
		case 'i':
			ok = parse_num(optarg, 1, 86400, &interval);
			break;
		case 'c':
			ok = parse_num(optarg, 1, LONG_MAX, &count);
			break;
		case 'h':
			usage(stdout);
			return EX_OK;
		default:
			ok = false;
		}
		if (!ok) {
			if (opt != '?')
				fprintf(stderr, PROG ": bad value for -%c: %s\n", opt, optarg);
			usage(stderr);
			return EX_USAGE;
		}
	}
	bool command = optind < argc;
	if (command == (pid != 0) || (count && !interval) || (command && count)) {
		usage(stderr);
		return EX_USAGE;
	}
	if (command)
		return run_command(argv + optind, (int)level, (int)interval);
	return attach((pid_t)pid, (int)level, (int)interval, count);
}
