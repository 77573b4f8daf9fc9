/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats_publish.c - the statistics snapshot, published for other processes
 * (gds_stats -p PID, gdscheck -s FILE).
 *
 * DESIGN: while the driver is open, a thread of ours (ticker.c) writes the
 * whole process's snapshot (stats_file.h) once a second, and once more at
 * driver open (so a tool can attach at once); the I/O path pays nothing for
 * it.
 * Each write goes to a temporary file renamed over the snapshot, so a
 * reader sees a whole one.  Where:
 *   - OPENCUFILE_STATS_FILE names a file: there, at every level (the pinned
 *     memory figures are kept at level 0 too); the last snapshot, written at
 *     driver close and at exit, stays for gdscheck -s;
 *   - otherwise, with profile.cufile_stats > 0: the default directory
 *     (stats_file.h), file stats-PID.bin, mode 0600; removed at driver close
 *     and at exit (atexit).  A level set only by cuFileSetStatsLevel is not
 *     published there: the configuration decides, as for NVIDIA's gds_stats.
 * A process that dies without running exit handlers (SIGKILL, or SIGTERM /
 * SIGINT with their default action) leaves its snapshot: the library
 * installs no signal handler, which would change how the application's
 * signals behave; the snapshot names its writer by pid and start time, so
 * the next publisher (at its driver open) and gds_stats recognise it as
 * stale and remove it.  A child of fork() never publishes or removes its
 * parent's snapshot (the pid is checked).
 *
 * The snapshot is filled without calling the CUDA driver (the GPUs' UUIDs
 * are read once at open): this thread must not wait for the driver's locks
 * and at exit the driver may be gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "internal.h"
#include "log.h"
#include "stats.h"
#include "ticker.h"

enum pub_mode { PUB_NONE, PUB_PATH, PUB_DEFAULT };

/* pub_lock protects mode, where, start_ticks and failed.  It is held while
 * a snapshot is written (a small file, once a second), so that no write
 * starts after close or exit has removed the file. */
static pthread_mutex_t pub_lock = PTHREAD_MUTEX_INITIALIZER;
static enum pub_mode mode;
/* PUB_PATH: the file; PUB_DEFAULT: $XDG_RUNTIME_DIR as read at open ("":
 * none), so that this thread never reads the environment. */
static char where[4096];
static uint64_t start_ticks;
static bool failed; /* a write failed since open: logged once */
/* The publishing process; read without the lock at exit, where a child of
 * fork() must not touch a lock a parent thread may have held.  Relaxed: it
 * is set at open, before the thread starts and before exit can run it. */
static atomic_int pub_pid;

static int write_all(int fd, const void *p, size_t n)
{
	ssize_t w = write(fd, p, n);
	return w == (ssize_t)n ? 0 : w < 0 ? -errno : -EIO;
}

/* Writes f as `name` in dirfd (AT_FDCWD: a path) through `tmp`. */
static int write_renamed(int dirfd, const char *tmp, const char *name, mode_t perm, const struct ocf_stats_file *f)
{
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, perm);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, f, sizeof(*f));
	close(fd);
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) != 0)
		r = -errno;
	if (r)
		unlinkat(dirfd, tmp, 0);
	return r;
}

static int open_default_dir(char *path, size_t len)
{
	return stats_dir_open(where[0] ? where : NULL, geteuid(), true, path, len);
}

/* Caller holds pub_lock. */
static void publish_locked(bool final, bool may_call_cuda)
{
	struct ocf_stats_file *f = malloc(sizeof(*f));
	int r = f ? stats_fill_snapshot(f, may_call_cuda) : -ENOMEM;
	char dir[4200] = "", name[64], tmp[4300];
	if (r == 0) {
		f->start_ticks = start_ticks;
		f->final = final;
	}
	if (r == 0 && mode == PUB_PATH) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", where, (int)getpid());
		r = write_renamed(AT_FDCWD, tmp, where, 0644, f);
	} else if (r == 0 && mode == PUB_DEFAULT) {
		int dfd = open_default_dir(dir, sizeof(dir));
		if (dfd == -EPERM && !failed)
			log_error("statistics are not published: %s is not a directory owned by uid %u with "
				  "mode 0700; remove it or fix its owner and mode",
				  dir, (unsigned)geteuid());
		failed |= dfd == -EPERM;
		r = dfd < 0 ? dfd : 0;
		if (dfd >= 0) {
			stats_file_name(getpid(), name, sizeof(name));
			stats_file_tmp_name(getpid(), tmp, sizeof(tmp));
			r = write_renamed(dfd, tmp, name, 0600, f);
			close(dfd);
		}
	}
	if (r && !failed)
		log_error("cannot write the statistics snapshot (%s%s%s): %s", mode == PUB_PATH ? where : dir,
			  mode == PUB_PATH ? "" : "/", mode == PUB_PATH ? "" : name, strerror(-r));
	failed |= r != 0;
	free(f);
}

/* Caller holds pub_lock: the last snapshot (a file named by the user) or
 * none (the default directory). */
static void unpublish_locked(bool may_call_cuda)
{
	if (mode == PUB_PATH) {
		publish_locked(true, may_call_cuda);
	} else if (mode == PUB_DEFAULT) {
		int dfd = open_default_dir(NULL, 0);
		char name[64];
		stats_file_name(getpid(), name, sizeof(name));
		if (dfd >= 0) {
			unlinkat(dfd, name, 0);
			close(dfd);
		}
	}
	mode = PUB_NONE;
}

static void pub_tick(void)
{
	pthread_mutex_lock(&pub_lock);
	if (mode != PUB_NONE)
		publish_locked(false, false);
	pthread_mutex_unlock(&pub_lock);
}

static struct ocf_ticker pub_ticker = OCF_TICKER_INIT(pub_tick);

static void at_exit(void)
{
	if (atomic_load_explicit(&pub_pid, memory_order_relaxed) != (int)getpid())
		return;
	/* The ticker is not joined (exit may run on any thread, and the
	 * process ends anyway): under the lock it sees no mode and writes no
	 * more. */
	pthread_mutex_lock(&pub_lock);
	unpublish_locked(false);
	pthread_mutex_unlock(&pub_lock);
}

static void removed_stale(pid_t pid, void *arg)
{
	(void)arg;
	log_info("statistics: removed the snapshot of process %d, which ended without removing it", (int)pid);
}

void stats_publish_start(void)
{
	const char *p = config_env_text(OCF_E_STATS_FILE);
	enum pub_mode m = p ? PUB_PATH : ocf_cfg.cufile_stats > 0 ? PUB_DEFAULT : PUB_NONE;
	if (m == PUB_NONE)
		return;
	static bool exit_hook;
	stats_read_gpus();
	pthread_mutex_lock(&pub_lock);
	if (m == PUB_PATH && stats_file_expand(p, getpid(), where, sizeof(where)) != 0) {
		log_error("OPENCUFILE_STATS_FILE is too long; statistics are not published");
		pthread_mutex_unlock(&pub_lock);
		return;
	}
	if (m == PUB_DEFAULT) {
		const char *x = config_env_text(OCF_E_XDG_RUNTIME_DIR);
		snprintf(where, sizeof(where), "%s", x && x[0] == '/' ? x : "");
	}
	mode = m;
	failed = false;
	uint64_t t = 0;
	stats_proc_start_ticks(getpid(), &t);
	start_ticks = t;
	atomic_store_explicit(&pub_pid, (int)getpid(), memory_order_relaxed);
	if (!exit_hook)
		exit_hook = atexit(at_exit) == 0;
	if (m == PUB_DEFAULT) {
		char dir[4200] = "";
		int dfd = open_default_dir(dir, sizeof(dir));
		if (dfd >= 0) {
			stats_dir_sweep(dfd, removed_stale, NULL);
			close(dfd);
			log_info("statistics published in %s/stats-%d.bin (gds_stats -p %d)", dir, (int)getpid(),
				 (int)getpid());
		}
	}
	publish_locked(false, true);
	pthread_mutex_unlock(&pub_lock);
	if (ticker_start(&pub_ticker) != 0)
		log_warn("statistics thread not started: the snapshot is written at open and close only");
}

void stats_publish_stop(void)
{
	ticker_stop(&pub_ticker);
	pthread_mutex_lock(&pub_lock);
	unpublish_locked(false);
	pthread_mutex_unlock(&pub_lock);
}
