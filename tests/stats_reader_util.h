/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats_reader_util.h - the tests of the published statistics and of
 * gds_stats: a process that reads in a loop (the test binary itself, run
 * again with "reader" as its first argument), driven through two pipes,
 * and helpers to run gds_stats and read its output.
 *
 * The reader is started with execve, so its /proc/PID/environ (where
 * gds_stats looks for XDG_RUNTIME_DIR and OPENCUFILE_STATS_FILE) is the
 * environment it was given.  It reads 64 KiB at a time (into device memory
 * where there is a GPU, else host memory), about a thousand times a second,
 * and answers one-byte commands between reads:
 *   'p'  pause; answers "paused OK BYTES NS" (cuFileGetStatsL1: read_ops.ok
 *        and read_bytes, -1 -1 at level 0; CLOCK_MONOTONIC after the last
 *        read) and waits for the next command
 *   'g'  go on reading
 *   'c'  cuFileDriverClose; answers "closed" and waits
 *   'x'  exit(0) without closing the driver
 *   'e'  exec `sleep 60` (no exit handler runs; same pid and start time)
 * "reader-count N DATA STATUS" instead reads N times (a millisecond apart)
 * and exits with STATUS without closing the driver (for gds_stats --
 * COMMAND).
 */
#ifndef OCF_STATS_READER_UTIL_H_
#define OCF_STATS_READER_UTIL_H_

#include <grp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <time.h>

#include "config_test_util.h"
#include "stats_file.h"

#define T_READ_SIZE (64 * 1024)
#define T_DATA_SIZE (1024 * 1024)

extern char **environ;

/* ----------------------------------------------------------- the reader */

struct t_reader_io {
	CUfileHandle_t fh;
	struct t_mem m;
	long n;
};

static inline void t_reader_open(struct t_reader_io *io, const char *data)
{
	t_mem_alloc(&io->m, t_cuda_init() == 0 ? T_MEM_DEVICE : T_MEM_HOST_MALLOC, T_READ_SIZE);
	int fd = t_open(data, O_RDONLY);
	io->fh = t_register_fd(fd);
	io->n = 0;
}

static inline void t_reader_read(struct t_reader_io *io)
{
	off_t off = (off_t)(io->n++ % (T_DATA_SIZE / T_READ_SIZE)) * T_READ_SIZE;
	T_IO(cuFileRead(io->fh, io->m.ptr, T_READ_SIZE, off, 0), T_READ_SIZE);
}

static inline void t_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The reader process's main; returns its exit status. */
static inline int t_reader_main(int argc, char **argv)
{
	struct t_reader_io io;
	if (strcmp(argv[1], "reader-count") == 0) {
		if (argc < 5)
			T_FAIL("usage: reader-count N DATA STATUS");
		t_reader_open(&io, argv[3]);
		for (long i = atol(argv[2]); i > 0; i--) {
			t_reader_read(&io);
			t_sleep_ms(1);
		}
		return atoi(argv[4]);
	}
	if (argc < 5)
		T_FAIL("usage: reader CMD_FD STATUS_FD DATA");
	int cmd = atoi(argv[2]), st = atoi(argv[3]);
	t_reader_open(&io, argv[4]);
	t_reader_read(&io);
	dprintf(st, "ready %d\n", (int)getpid());
	fcntl(cmd, F_SETFL, O_NONBLOCK);
	bool paused = false;
	for (;;) {
		char c;
		ssize_t n = read(cmd, &c, 1);
		if (n == 0)
			return 0;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			T_FAIL("reader: command pipe: %s", strerror(errno));
		if (n == 1 && c == 'p') {
			CUfileStatsLevel1_t s;
			int level = 0;
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			unsigned long long ns = (unsigned long long)ts.tv_sec * 1000000000ull;
			ns += (unsigned long long)ts.tv_nsec;
			cuFileGetStatsLevel(&level);
			if (level > 0 && cuFileGetStatsL1(&s).err == CU_FILE_SUCCESS)
				dprintf(st, "paused %llu %llu %llu\n", (unsigned long long)s.read_ops.ok,
					(unsigned long long)s.read_bytes, ns);
			else
				dprintf(st, "paused -1 -1 %llu\n", ns);
			paused = true;
		} else if (n == 1 && c == 'g') {
			paused = false;
		} else if (n == 1 && c == 'c') {
			T_CUFILE_OK(cuFileDriverClose());
			dprintf(st, "closed\n");
			paused = true;
		} else if (n == 1 && c == 'x') {
			exit(0);
		} else if (n == 1 && c == 'e') {
			execl("/bin/sleep", "sleep", "60", (char *)NULL);
			T_FAIL("reader: exec sleep: %s", strerror(errno));
		}
		if (!paused)
			t_reader_read(&io);
		t_sleep_ms(paused ? 5 : 1);
	}
}

/* ---------------------------------------------------------- test side */

/* The start of each of these tests: run as the reader, the process does
 * its loop and exits here; otherwise returns gds_stats's path (argv[1]). */
static inline const char *t_stats_test_start(int argc, char **argv)
{
	if (argc > 1 && strncmp(argv[1], "reader", 6) == 0)
		exit(t_reader_main(argc, argv));
	if (argc < 2)
		T_FAIL("usage: %s GDS_STATS", argv[0]);
	t_clear_config_env();
	return argv[1];
}

/* The environment changes for a reader (see t_env_with): XDG_RUNTIME_DIR
 * (NULL: unset), a configuration file with profile.cufile_stats = level,
 * and one more entry (NULL: none).  Eight of them stay valid at once. */
static inline const char **t_reader_env(const char *xdg, int level, const char *extra)
{
	static char vals[8][2][PATH_MAX + 32];
	static const char *envs[8][4];
	static int next;
	int i = next++ % 8;
	char json[64];
	snprintf(json, sizeof(json), "{ \"profile\": { \"cufile_stats\": %d } }", level);
	snprintf(vals[i][0], sizeof(vals[i][0]), "XDG_RUNTIME_DIR%s%s", xdg ? "=" : "", xdg ? xdg : "");
	snprintf(vals[i][1], sizeof(vals[i][1]), "CUFILE_ENV_PATH_JSON=%s", t_write_text_file(json));
	envs[i][0] = vals[i][0];
	envs[i][1] = vals[i][1];
	envs[i][2] = extra;
	envs[i][3] = NULL;
	return envs[i];
}

/* The entries of dir whose names start with prefix ("": all), each
 * printed; returns their number. */
static inline int t_dir_entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (!d)
		T_FAIL("opendir %s: %s", dir, strerror(errno));
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		fprintf(stderr, "in %s: %s\n", dir, e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

/* environ with the entries of `over` applied: "NAME=VALUE" sets, "NAME"
 * removes.  Static storage: valid until the next call. */
static inline char **t_env_with(const char *const *over)
{
	static char *env[512];
	int n = 0;
	for (char **e = environ; *e && n < 400; e++) {
		bool replaced = false;
		for (const char *const *o = over; o && *o; o++) {
			size_t k = strcspn(*o, "=");
			if (strncmp(*e, *o, k) == 0 && (*e)[k] == '=')
				replaced = true;
		}
		if (!replaced)
			env[n++] = *e;
	}
	for (const char *const *o = over; o && *o && n < 510; o++)
		if (strchr(*o, '='))
			env[n++] = (char *)*o;
	env[n] = NULL;
	return env;
}

struct t_reader {
	pid_t pid;
	int cmd; /* write end */
	FILE *st;
};

/* This test binary's path, for execve (not /proc/self/exe, which names
 * valgrind's tool under valgrind). */
static inline const char *t_self(void)
{
	static char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		T_FAIL("readlink /proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	return self;
}

/* Starts a reader of `data` with the environment changes `over`; returns
 * once it has read (its "ready" line).  When it dies first, returns with
 * r->pid = -1 and its exit status in *status (status may be NULL: fail). */
static inline void t_reader_start_or_fail(struct t_reader *r, const char *const *over, const char *data,
					  int *status)
{
	int cp[2], sp[2];
	T_SYS(pipe(cp));
	T_SYS(pipe(sp));
	char cfd[16], sfd[16];
	snprintf(cfd, sizeof(cfd), "%d", cp[0]);
	snprintf(sfd, sizeof(sfd), "%d", sp[1]);
	const char *self = t_self();
	char **env = t_env_with(over);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		close(cp[1]);
		close(sp[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* no reader outlives a failed test */
		execve(self, (char *[]){(char *)self, "reader", cfd, sfd, (char *)data, NULL}, env);
		_exit(127);
	}
	close(cp[0]);
	close(sp[1]);
	r->pid = pid;
	r->cmd = cp[1];
	r->st = fdopen(sp[0], "r");
	char line[128];
	if (!fgets(line, sizeof(line), r->st) || strncmp(line, "ready ", 6) != 0) {
		int s = 0;
		waitpid(pid, &s, 0);
		if (!status)
			T_FAIL("reader %d did not start (status 0x%x)", (int)pid, s);
		*status = s;
		fclose(r->st);
		close(r->cmd);
		r->pid = -1;
	}
}

static inline void t_reader_start(struct t_reader *r, const char *const *over, const char *data)
{
	t_reader_start_or_fail(r, over, data, NULL);
}

/* Sends a command; for 'p' and 'c' returns the answer line. */
static inline const char *t_reader_cmd(struct t_reader *r, char c)
{
	static char line[128];
	T_EQ(write(r->cmd, &c, 1), 1);
	if (c != 'p' && c != 'c')
		return "";
	if (!fgets(line, sizeof(line), r->st))
		T_FAIL("reader %d: no answer to '%c'", (int)r->pid, c);
	return line;
}

/* Pauses the reader; returns its read_ops.ok (-1 at level 0) once its
 * snapshot at `snapshot` was filled after the pause (so a tool started now
 * sees every read; a snapshot filled before it but renamed later could
 * otherwise be the newer one a tool waits for). */
static inline long long t_reader_pause(struct t_reader *r, const char *snapshot)
{
	long long ok = -2, bytes;
	unsigned long long ns = 0;
	if (sscanf(t_reader_cmd(r, 'p'), "paused %lld %lld %llu", &ok, &bytes, &ns) != 3)
		T_FAIL("reader %d: bad answer to 'p'", (int)r->pid);
	struct ocf_stats_file f;
	for (int waited = 0;; waited += 20) {
		if (stats_file_read(AT_FDCWD, snapshot, &f) == 0 && f.written_mono_ns > ns)
			return ok;
		if (waited > 10000)
			T_FAIL("reader %d: no snapshot in %s after its pause", (int)r->pid, snapshot);
		t_sleep_ms(20);
	}
}

/* Sends sig (0: the 'x' command) and waits; returns the wait status. */
static inline int t_reader_end(struct t_reader *r, int sig)
{
	if (sig)
		kill(r->pid, sig);
	else
		t_reader_cmd(r, 'x');
	int s = 0;
	T_EQ(waitpid(r->pid, &s, 0), r->pid);
	close(r->cmd);
	fclose(r->st);
	return s;
}

/* Starts `sleep 60` (a process that does not use libcufile) with env
 * (NULL: this one's); it dies with this process.  Returns once it runs
 * sleep. */
static inline pid_t t_spawn_sleep(char **env)
{
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execve("/bin/sleep", (char *[]){"sleep", "60", NULL}, env ? env : environ);
		_exit(127);
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	for (int i = 0; i < 200 && strncmp(t_slurp(path), "sleep", 5) != 0; i++)
		t_sleep_ms(10);
	return pid;
}

/* Directories removed with their contents at exit; t_private_dir: a new
 * one (mode 0700, absolute path) in the test directory. */
static char t_private_dirs[8][PATH_MAX] T_UNUSED;
static int t_nprivate T_UNUSED;
static inline void t_remove_private_dirs(void)
{
	for (int i = 0; i < t_nprivate; i++) {
		char cmd[PATH_MAX + 32];
		int w = snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t_private_dirs[i]);
		if (w < 0 || (size_t)w >= sizeof(cmd) || system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", t_private_dirs[i]);
	}
}
/* A new directory made from tmpl (mkdtemp), removed with its contents at
 * exit. */
static inline const char *t_temp_dir(const char *tmpl)
{
	if (t_nprivate == 8)
		T_FAIL("too many private directories");
	char *d = t_private_dirs[t_nprivate];
	snprintf(d, PATH_MAX, "%s", tmpl);
	if (!mkdtemp(d))
		T_FAIL("mkdtemp %s: %s", tmpl, strerror(errno));
	if (t_nprivate++ == 0)
		atexit(t_remove_private_dirs);
	return d;
}

static inline const char *t_private_dir(void)
{
	char tmpl[PATH_MAX];
	if (!realpath(t_dir(), tmpl))
		T_FAIL("realpath %s: %s", t_dir(), strerror(errno));
	strncat(tmpl, "/ocf_stats_XXXXXX", sizeof(tmpl) - strlen(tmpl) - 1);
	return t_temp_dir(tmpl);
}

/* The snapshot of pid in the default directory under xdg. */
static inline const char *t_snapshot(const char *xdg, pid_t pid)
{
	static char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/opencufile/stats-%d.bin", xdg, (int)pid);
	return path;
}

static inline bool t_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* Runs a shell command line (printf format) with stdout and stderr into
 * *out (static storage, echoed to stderr); returns its exit status. */
static inline int t_run(const char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int t_run(const char **out, const char *fmt, ...)
{
	char cmd[4096], dir[PATH_MAX], file[PATH_MAX + 32];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	/* Absolute: the command may change directory. */
	if (!realpath(t_dir(), dir))
		T_FAIL("realpath %s: %s", t_dir(), strerror(errno));
	snprintf(file, sizeof(file), "%s/ocf_run_%d.txt", dir, (int)getpid());
	char full[4096 + PATH_MAX + 64];
	snprintf(full, sizeof(full), "{ %s; } > %s 2>&1", cmd, file);
	int s = system(full);
	*out = t_slurp(file);
	unlink(file);
	fprintf(stderr, "$ %s\n%s(exit %d)\n", cmd, *out, WIFEXITED(s) ? WEXITSTATUS(s) : -1);
	return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

#define T_NOBODY 65534

/* Runs tool (a copy in a directory any user may enter, wherever the build
 * is) with args (NULL-terminated) as uid and gid T_NOBODY, with stdout and
 * stderr into *out (static storage, echoed to stderr); returns its exit
 * status, 77 when the uid cannot be changed.  Needs root. */
static inline int t_run_as_nobody(const char **out, const char *tool, const char *const *args)
{
	const char *dir = t_temp_dir("/tmp/ocf_gds_stats_XXXXXX");
	char copy[64], outfile[PATH_MAX];
	snprintf(copy, sizeof(copy), "%s/%s", dir, strrchr(tool, '/') ? strrchr(tool, '/') + 1 : tool);
	T_EQ(t_run(out, "cp '%s' %s && chmod 755 %s %s", tool, copy, dir, copy), 0);
	snprintf(outfile, sizeof(outfile), "%s/out.txt", dir);
	int fd = open(outfile, O_CREAT | O_WRONLY | O_TRUNC, 0666);
	T_ASSERT(fd >= 0);
	T_SYS(fchmod(fd, 0666));
	const char *argv[16] = {copy};
	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		if (setgroups(0, NULL) != 0 || setgid(T_NOBODY) != 0 || setuid(T_NOBODY) != 0)
			_exit(77);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(copy, (char *const *)argv);
		_exit(126);
	}
	close(fd);
	int s = 0;
	T_EQ(waitpid(c, &s, 0), c);
	*out = t_slurp(outfile);
	fprintf(stderr, "as uid %d: %s", T_NOBODY, *out);
	T_ASSERT(WIFEXITED(s));
	return WEXITSTATUS(s);
}

/* The number after the n-th (from 0) occurrence of key in text; -1 when
 * there is none. */
static inline long long t_after(const char *text, const char *key, int n)
{
	const char *p = text;
	for (int i = 0; p && i <= n; i++) {
		p = strstr(p, key);
		if (p && i < n)
			p += strlen(key);
	}
	long long v;
	return p && sscanf(p + strlen(key), "%lld", &v) == 1 ? v : -1;
}

#define T_READ_OK "\n  read                   ok "

#endif /* OCF_STATS_READER_UTIL_H_ */
