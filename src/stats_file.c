/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats_file.c - see stats_file.h.
 *
 * DESIGN: a snapshot names its writer by pid and start time, because a pid
 * alone is reused.  A process that ends without running its exit handlers
 * (a signal's default action, _exit, a crash) leaves its snapshot behind;
 * rather than install signal handlers, which would change how the
 * application's signals behave, every reader treats a snapshot whose
 * writer is gone as stale and the next writer or reader of the directory
 * removes it.  The directory is opened once (O_NOFOLLOW) and checked
 * through that descriptor, and everything in it is reached relative to the
 * descriptor, so a directory swapped in after the check is never used.
 */
#ifndef _GNU_SOURCE /* the tests that compile this file in define it */
#define _GNU_SOURCE
#endif
#include "stats_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A temporary file lives for one write; older than this, its writer is
 * stuck or gone. */
#define TMP_MAX_AGE_S 60

void stats_file_name(pid_t pid, char *buf, size_t len) { snprintf(buf, len, "stats-%d.bin", (int)pid); }

void stats_file_tmp_name(pid_t pid, char *buf, size_t len) { snprintf(buf, len, ".stats-%d.tmp", (int)pid); }

int stats_file_expand(const char *p, pid_t pid, char *buf, size_t len)
{
	size_t o = 0;
	for (; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			int n = snprintf(buf + o, len - o, "%d", (int)pid);
			if (n < 0 || (size_t)n >= len - o)
				return -ENAMETOOLONG;
			o += (size_t)n;
			p++;
		} else {
			if (o + 1 >= len)
				return -ENAMETOOLONG;
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	return 0;
}

int stats_dir_open(const char *xdg, uid_t uid, bool create, char *path, size_t len)
{
	char parent[4096], name[64];
	if (xdg && xdg[0] == '/') {
		if (snprintf(parent, sizeof(parent), "%s", xdg) >= (int)sizeof(parent))
			return -ENAMETOOLONG;
		snprintf(name, sizeof(name), "%s", OCF_STATS_DIR_NAME);
	} else {
		snprintf(parent, sizeof(parent), "/tmp");
		snprintf(name, sizeof(name), OCF_STATS_TMP_DIR_FMT, (unsigned)uid);
	}
	if (path && snprintf(path, len, "%s/%s", parent, name) >= (int)len)
		return -ENAMETOOLONG;
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (create && mkdirat(pfd, name, 0700) != 0 && errno != EEXIST) {
		int e = -errno;
		close(pfd);
		return e;
	}
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int e = fd < 0 ? (errno == ENOTDIR || errno == ELOOP ? -EPERM : -errno) : 0;
	close(pfd);
	if (fd < 0)
		return e;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int stats_file_read(int dirfd, const char *name, struct ocf_stats_file *f)
{
	/* O_NONBLOCK: a FIFO put in the place of a snapshot must not hold
	 * the reader (root's gds_stats reads users' directories). */
	int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (dirfd == AT_FDCWD ? 0 : O_NOFOLLOW);
	int fd = openat(dirfd, name, flags);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	/* One byte more than a snapshot: a longer file is not one. */
	char *buf = malloc(sizeof(*f) + 1);
	size_t got = 0;
	int r = buf ? 0 : -ENOMEM;
	while (r == 0 && got < sizeof(*f) + 1) {
		ssize_t n = read(fd, buf + got, sizeof(*f) + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		else if (n == 0)
			break;
		else
			got += (size_t)n;
	}
	close(fd);
	if (r == 0) {
		memcpy(f, buf, got < sizeof(*f) ? got : sizeof(*f));
		if (got != sizeof(*f) || memcmp(f->magic, OCF_STATS_FILE_MAGIC, sizeof(OCF_STATS_FILE_MAGIC)) != 0 ||
		    f->version != OCF_STATS_FILE_VERSION || f->size != sizeof(*f))
			r = -EINVAL;
	}
	free(buf);
	return r;
}

/* Field 3 (state) and field 22 (start time) of /proc/PID/stat. */
static int proc_stat(pid_t pid, char *state, uint64_t *ticks)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	close(fd);
	if (n <= 0)
		return n < 0 && e != ESRCH ? -e : -ESRCH; /* reaped meanwhile */
	buf[n] = '\0';
	/* The command name (field 2) may hold blanks and parentheses: the
	 * fields after it start past its last ')'. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EINVAL;
	p += 2;
	*state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	char *end;
	*ticks = strtoull(p, &end, 10);
	return end == p ? -EINVAL : 0;
}

int stats_proc_start_ticks(pid_t pid, uint64_t *ticks)
{
	char state;
	int r = proc_stat(pid, &state, ticks);
	/* A zombie has ended; only its parent's wait is missing. */
	return r == 0 && (state == 'Z' || state == 'X') ? -ESRCH : r;
}

int stats_file_stale(const struct ocf_stats_file *f)
{
	uint64_t t;
	int r = f->pid > 0 ? stats_proc_start_ticks(f->pid, &t) : -ESRCH;
	if (r == -ESRCH)
		return 1;
	return r == 0 && t != f->start_ticks;
}

/* The pid in NAME made of prefix, digits and suffix; 0 when it is not. */
static pid_t pid_in(const char *name, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), nl = strlen(name);
	if (nl <= pl + sl || strncmp(name, prefix, pl) != 0 || strcmp(name + nl - sl, suffix) != 0)
		return 0;
	long v = 0;
	for (size_t i = pl; i < nl - sl; i++) {
		if (name[i] < '0' || name[i] > '9' || v > 1 << 26)
			return 0;
		v = v * 10 + (name[i] - '0');
	}
	return (pid_t)v;
}

int stats_dir_sweep(int dirfd, void (*removed)(pid_t pid, void *arg), void *arg)
{
	int fd = dup(dirfd);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	/* fdopendir reads from the descriptor's offset: from the start. */
	rewinddir(d);
	int n = 0;
	struct ocf_stats_file *f = malloc(sizeof(*f));
	struct dirent *e;
	uint64_t ticks;
	while (f && (e = readdir(d)) != NULL) {
		pid_t pid = pid_in(e->d_name, "stats-", ".bin");
		if (pid > 0) {
			int r = stats_file_read(dirfd, e->d_name, f);
			bool stale = r == 0 ? stats_file_stale(f) == 1
					    : r == -EINVAL && stats_proc_start_ticks(pid, &ticks) == -ESRCH;
			if (stale && unlinkat(dirfd, e->d_name, 0) == 0) {
				n++;
				if (removed)
					removed(pid, arg);
			}
			continue;
		}
		pid = pid_in(e->d_name, ".stats-", ".tmp");
		struct stat st;
		if (pid > 0 && fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (stats_proc_start_ticks(pid, &ticks) == -ESRCH || time(NULL) - st.st_mtime > TMP_MAX_AGE_S))
			unlinkat(dirfd, e->d_name, 0);
	}
	free(f);
	closedir(d);
	return n;
}
