/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - the cufile.log writer.
 *
 * DESIGN: one file descriptor, opened lazily at the first line that passes
 * the level filter, so a process that never logs never creates a file.  It is
 * opened O_APPEND|O_NOFOLLOW with mode 0644 (never world-writable, never
 * through a symlink planted in its place).  Each line is formatted into a
 * stack buffer and written with one write(2) under log_lock, so lines from
 * many threads do not interleave and a close never races a write.  The
 * level is an atomic int read on every ocf_log() call.  Level and file are
 * the configuration's (config_stage.c, log_set): this file reads no
 * environment.
 */
#define _GNU_SOURCE
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static const char *const level_names[] = {"NOTICE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

/* Relaxed is enough: the level is a filter; a line logged or skipped around
 * a concurrent level change is acceptable. */
static atomic_int cur_level = OCF_LOG_ERROR;

/* log_lock protects log_fd and log_path. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static bool log_open_failed;
static char log_path[PATH_MAX];

int log_level_from_name(const char *name)
{
	if (!name)
		return -1;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcasecmp(name, level_names[i]) == 0)
			return (int)i;
	if (strcasecmp(name, "WARNING") == 0)
		return OCF_LOG_WARN;
	return -1;
}

const char *log_level_name(int level)
{
	if (level < 0 || level > OCF_LOG_TRACE)
		return "UNKNOWN";
	return level_names[level];
}

int log_current_level(void) { return atomic_load_explicit(&cur_level, memory_order_relaxed); }

void log_set(int level, const char *path)
{
	if (level < 0 || level > OCF_LOG_TRACE)
		level = OCF_LOG_ERROR;
	atomic_store_explicit(&cur_level, level, memory_order_relaxed);
	pthread_mutex_lock(&log_lock);
	if (path && *path && strcmp(path, log_path) != 0) {
		if (log_fd >= 0)
			close(log_fd);
		log_fd = -1;
		log_open_failed = false;
		snprintf(log_path, sizeof(log_path), "%s", path);
	}
	pthread_mutex_unlock(&log_lock);
}

void log_close(void)
{
	pthread_mutex_lock(&log_lock);
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
	log_open_failed = false;
	pthread_mutex_unlock(&log_lock);
}

void log_after_fork_child(void)
{
	/* The holder, if any, was another thread of the parent, almost always
	 * in the middle of writing one line; at worst it was switching the log
	 * file, which can only cost this child its own log lines. */
	pthread_mutex_init(&log_lock, NULL);
}

/* Caller holds log_lock.  Opens the file at the first line. */
static int log_fd_locked(void)
{
	if (log_fd < 0 && !log_open_failed) {
		if (!log_path[0])
			snprintf(log_path, sizeof(log_path), "cufile.log");
		log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (log_fd < 0)
			log_open_failed = true; /* do not retry on every line */
	}
	return log_fd;
}

void log_write(int level, const char *file, int line, const char *fmt, ...)
{
	int saved_errno = errno;
	struct timeval tv;
	gettimeofday(&tv, NULL);
	struct tm tm;
	localtime_r(&tv.tv_sec, &tm);

	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	char comp[32];
	size_t n = strcspn(base, ".");
	if (n >= sizeof(comp))
		n = sizeof(comp) - 1;
	memcpy(comp, base, n);
	comp[n] = '\0';

	char buf[1024];
	int len = snprintf(buf, sizeof(buf), " %02d-%02d-%04d %02d:%02d:%02d:%03ld [pid=%d tid=%d] %s %s:%d ",
			   tm.tm_mday, tm.tm_mon + 1, tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec,
			   (long)(tv.tv_usec / 1000), (int)getpid(), (int)gettid(), log_level_name(level), comp,
			   line);
	if (len < 0)
		len = 0;
	if ((size_t)len < sizeof(buf) - 1) {
		va_list ap;
		va_start(ap, fmt);
		int m = vsnprintf(buf + len, sizeof(buf) - (size_t)len, fmt, ap);
		va_end(ap);
		if (m > 0)
			len += OCF_MIN(m, (int)(sizeof(buf) - (size_t)len - 2));
	}
	if ((size_t)len > sizeof(buf) - 2)
		len = (int)sizeof(buf) - 2;
	buf[len++] = '\n';
	/* The write happens under the lock: a concurrent log_close() must not
	 * close the descriptor (which the process could then reuse for a file
	 * of its own) between looking it up and writing to it. */
	pthread_mutex_lock(&log_lock);
	int fd = log_fd_locked();
	if (fd >= 0) {
		ssize_t w = write(fd, buf, (size_t)len);
		(void)w;
	}
	pthread_mutex_unlock(&log_lock);
	errno = saved_errno;
}
