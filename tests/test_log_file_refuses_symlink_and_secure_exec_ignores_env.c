/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The log file is opened safely, and environment variables are not
 * trusted in a privileged process:
 *
 * 1. A symlink planted where the log goes is not followed: neither the
 *    existing file it points to nor a file at a dangling target is written.
 * 2. Created under umask 0, the log file is mode 0644: never group- or
 *    world-writable.
 * 3. In a process started with AT_SECURE (here: effective gid differs from
 *    the real one at exec, as in a set-gid program), CUFILE_LOGFILE_PATH is
 *    ignored (secure_getenv): the log goes to cufile.log in the working
 *    directory.  Needs root to change the effective gid; skipped otherwise.
 */
#include "test.h"

#include <grp.h>
#include <sys/auxv.h>

static char dir[600];

static void log_an_error(void)
{
	CUfileHandle_t fh;

	T_CUFILE_OK(cuFileDriverOpen());
	/* A directory is refused, and the refusal is logged at ERROR. */
	int fd = t_open(".", O_RDONLY | O_DIRECTORY);
	T_EQ(t_try_register_fd(fd, &fh), CU_FILE_INVALID_FILE_TYPE);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
}

static off_t size_of(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0 ? st.st_size : -1;
}

/* The child of case 3, exec'd with AT_SECURE. */
static int secure_child(void)
{
	if (getauxval(AT_SECURE) == 0) {
		fprintf(stderr, "child: AT_SECURE is not set\n");
		return 2;
	}
	if (chdir(dir) != 0)
		return 3;
	log_an_error();
	return 0;
}

int main(int argc, char **argv)
{
	char path[700], victim[700], dangling[700], target[700];

	if (argc == 3 && strcmp(argv[1], "secure-child") == 0) {
		snprintf(dir, sizeof(dir), "%s", argv[2]);
		return secure_child();
	}
	char *base = realpath(t_dir(), NULL); /* symlink targets must be absolute */
	T_ASSERT(base != NULL);
	snprintf(dir, sizeof(dir), "%s/ocf_logsafety_%d", base, (int)getpid());
	free(base);
	T_SYS(mkdir(dir, 0755));
	setenv("CUFILE_LOGGING_LEVEL", "INFO", 1);

	/* 1a. A symlink to an existing file. */
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(path, sizeof(path), "%s/cufile_link.log", dir);
	int v = t_open(victim, O_CREAT | O_WRONLY);
	T_EQ(write(v, "precious\n", 9), 9);
	close(v);
	T_SYS(symlink(victim, path));
	setenv("CUFILE_LOGFILE_PATH", path, 1);
	log_an_error();
	T_EQ(size_of(victim), 9);
	/* 1b. A dangling symlink: its target must not be created. */
	snprintf(dangling, sizeof(dangling), "%s/cufile_dangling.log", dir);
	snprintf(target, sizeof(target), "%s/created_through_link", dir);
	T_SYS(symlink(target, dangling));
	setenv("CUFILE_LOGFILE_PATH", dangling, 1);
	log_an_error();
	T_EQ(size_of(target), -1);

	/* 2. Mode 0644 even under umask 0, and the line is there. */
	snprintf(path, sizeof(path), "%s/cufile_mode.log", dir);
	setenv("CUFILE_LOGFILE_PATH", path, 1);
	mode_t old = umask(0);
	log_an_error();
	umask(old);
	struct stat st;
	T_SYS(stat(path, &st));
	T_EQ(st.st_mode & 07777, 0644);
	T_GT(st.st_size, 0);

	/* 3. AT_SECURE: the environment's log path is ignored. */
	int rc = T_EXIT_PASS;
	char envlog[700], cwdlog[700];
	snprintf(envlog, sizeof(envlog), "%s/from_env.log", dir);
	snprintf(cwdlog, sizeof(cwdlog), "%s/cufile.log", dir);
	setenv("CUFILE_LOGFILE_PATH", envlog, 1);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: the AT_SECURE case is skipped\n");
		rc = T_EXIT_SKIP;
	} else {
		pid_t pid = fork();
		T_SYS(pid);
		if (pid == 0) {
			/* Real gid 0, effective gid 65534: exec sets AT_SECURE. */
			if (setresgid(0, 65534, 65534) != 0)
				_exit(4);
			execl(t_self_exe(argv[0]), argv[0], "secure-child", dir, (char *)NULL);
			_exit(127);
		}
		T_CHILD_OK(t_wait_child(pid, 30000, "AT_SECURE child"), "AT_SECURE child");
		T_EQ(size_of(envlog), -1);
		T_GT(size_of(cwdlog), 0);
	}

	/* Clean up. */
	const char *names[] = {"victim", "cufile_link.log", "cufile_dangling.log", "cufile_mode.log",
			       "cufile.log", "from_env.log", "created_through_link"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
	return rc;
}
