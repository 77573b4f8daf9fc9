/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats_file.h - the statistics snapshot file: its layout, where a process
 * publishes it, and how a reader tells a live one from a stale one.
 *
 * Shared by the library (stats_publish.c writes it) and the tools (gdscheck
 * -s and gds_stats read it), which compile stats_file.c in: it depends on
 * libc and cufile.h only.  Functions return 0 (or a count / descriptor) or
 * -errno and never set errno for the caller.
 *
 * Locations:
 *   - OPENCUFILE_STATS_FILE=PATH ("%p" = pid): PATH, kept after the process
 *     ends (the last snapshot, for gdscheck -s);
 *   - otherwise, while profile.cufile_stats > 0: the default directory of
 *     the process's effective uid, $XDG_RUNTIME_DIR/opencufile when
 *     XDG_RUNTIME_DIR is set, else /tmp/opencufile-UID; the file
 *     stats-PID.bin in it is removed when the process closes the driver or
 *     exits.
 * The default directory is used only when it is a real directory (not a
 * link) owned by that uid with no permission for group or others; files in
 * it are 0600.
 */
#ifndef OCF_STATS_FILE_H_
#define OCF_STATS_FILE_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cufile.h"

#define OCF_STATS_FILE_MAGIC "OCFSTAT"
/* 3: the 1.19 statistics layout; 4: start time, monotonic time, final
 * flag and the stream counters. */
#define OCF_STATS_FILE_VERSION 4

/* Stream operations (cuFile*Async), also counted among reads and writes;
 * [0] reads, [1] writes. */
struct ocf_stats_stream {
	uint64_t ok[2];
	uint64_t err[2];
	uint64_t bytes[2];
};

struct ocf_stats_file {
	char magic[8]; /* OCF_STATS_FILE_MAGIC, NUL padded */
	uint32_t version;
	uint32_t level; /* the process's statistics level when written */
	int32_t pid;
	uint32_t size; /* sizeof(struct ocf_stats_file) */
	uint64_t written_unix_ns;
	uint64_t window_ns; /* since the last start/reset */
	CUfileStatsLevel3_t stats;
	/* Pinned staging memory of the library (all GPUs), at any level and
	 * over the life of the process: held now, the most held at once, and
	 * the largest bound the configuration set (the sum of the bounds of
	 * the GPU pools that existed at once). */
	uint64_t pinned_bytes;
	uint64_t pinned_peak_bytes;
	uint64_t pinned_bound_bytes;
	/* The writer's start time (field 22 of /proc/PID/stat, clock ticks
	 * after boot): with pid, names the process even once the pid is
	 * reused. */
	uint64_t start_ticks;
	uint64_t written_mono_ns; /* CLOCK_MONOTONIC: intervals between snapshots */
	uint32_t final;           /* 1: written at driver close or exit */
	uint32_t reserved;
	struct ocf_stats_stream stream;
};

/* The default directory: OCF_STATS_DIR_NAME in $XDG_RUNTIME_DIR, else
 * OCF_STATS_TMP_DIR_FMT (with the uid) in /tmp. */
#define OCF_STATS_DIR_NAME "opencufile"
#define OCF_STATS_TMP_DIR_FMT "opencufile-%u"
/* The name of pid's snapshot in the default directory. */
void stats_file_name(pid_t pid, char *buf, size_t len);
/* The temporary file a snapshot is written to before it is renamed. */
void stats_file_tmp_name(pid_t pid, char *buf, size_t len);

/* pattern with "%p" replaced by pid; -ENAMETOOLONG when it does not fit. */
int stats_file_expand(const char *pattern, pid_t pid, char *buf, size_t len);

/* The default directory of uid: xdg_runtime_dir/opencufile when xdg is an
 * absolute path, else /tmp/opencufile-UID.  Opens it (O_DIRECTORY,
 * O_NOFOLLOW), creating it with mode 0700 when `create`; returns the
 * descriptor, -ENOENT when absent, -EPERM when it is not a directory owned
 * by uid with mode 0700 or narrower (it is then left alone), or -errno.
 * path (when not NULL) receives its path. */
int stats_dir_open(const char *xdg_runtime_dir, uid_t uid, bool create, char *path, size_t len);

/* Reads a snapshot (name relative to dirfd, or a path with AT_FDCWD):
 * 0, -ENOENT, -EINVAL when it is not a snapshot of this version, -errno. */
int stats_file_read(int dirfd, const char *name, struct ocf_stats_file *f);

/* Start time of a process (see start_ticks); -ESRCH when it does not
 * exist. */
int stats_proc_start_ticks(pid_t pid, uint64_t *ticks);

/* Whether the snapshot's writer is gone: its pid is not alive, or is alive
 * with another start time (reused).  1 stale, 0 live. */
int stats_file_stale(const struct ocf_stats_file *f);

/* Removes from the directory the snapshots of processes that are gone
 * (stats_file_stale, or a file that is not a snapshot and whose pid is
 * gone) and temporary files left by a writer that died mid-write.  Calls
 * removed(pid, arg) for each snapshot removed (may be NULL).  Returns the
 * number of snapshots removed. */
int stats_dir_sweep(int dirfd, void (*removed)(pid_t pid, void *arg), void *arg);

#endif /* OCF_STATS_FILE_H_ */
