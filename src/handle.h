/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handle.h - registered file handles.
 */
#ifndef OCF_HANDLE_H_
#define OCF_HANDLE_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cufile.h"

struct ocf_handle {
	int type;               /* CU_FILE_HANDLE_TYPE_OPAQUE_FD or _USERSPACE_FS */
	int fd;                 /* the caller's descriptor (not owned) */
	int fd_buffered;        /* our own non-O_DIRECT descriptor, or -1 */
	int fd_direct;          /* buffered fd: our own O_DIRECT read descriptor, or -1 */
	void *fs_handle;        /* USERSPACE_FS: the caller's handle */
	const CUfileFSOps_t *fs_ops;
	int open_flags;         /* F_GETFL of fd at registration */
	bool odirect;
	/* O_DIRECT fd on a file system whose page cache is coherent with
	 * direct I/O: reads copy what the page cache holds through
	 * fd_buffered and read the rest with O_DIRECT (fileio.c). */
	bool cache_reads;
	unsigned align;         /* file offset/length alignment O_DIRECT needs
				 * (of fd, or of fd_direct; 1: neither) */
	/* Cached bytes of staged reads are copied through a mapping of the
	 * file (filemap.c); NULL: with preadv2. */
	struct ocf_fmap *fmap;
	/* Buffered writes of a piece of at least 64 KiB store through a
	 * writable mapping of the file (fileio.c); NULL: with pwrite. */
	struct ocf_fmap *wmap;
	/* A sequential reader's next bytes read ahead (readahead.c): allowed
	 * (a local file system, a descriptor), and the state, made at the
	 * first device read (atomic), with the function that frees it. */
	bool ra_ok;
	struct ocf_ra *ra;
	void (*ra_free)(struct ocf_ra *ra);
	/* Read-ahead windows open on the handle now (readahead.c keeps it;
	 * the engine reads it as a hint: relaxed). */
	int ra_windows;
	char fs_type[64];       /* from the mount table, e.g. "ext4" */
	/* toggle_lock protects toggle_count: unaligned O_DIRECT writes without
	 * a buffered descriptor clear O_DIRECT on fd while count > 0. */
	pthread_mutex_t toggle_lock;
	int toggle_count;
	/* The file the descriptor named at registration (handle_same_file). */
	dev_t dev;
	ino_t ino;
	/* Table bookkeeping, protected by the table lock. */
	uint64_t key;
	int refs;
	/* Deregistered (set under the table lock, read by handle_enter). */
	_Atomic bool dead;
	/* Requests using the handle's files now (handle_enter/handle_exit;
	 * a futex word the deregistration waits on), and where the release
	 * of what the handle opened stands (handle.c, HF_*). */
	_Atomic uint32_t users;
	_Atomic int files;
};

/* Validates the descriptor and adds a handle.  Returns 0 or an error. */
int handle_register(const CUfileDescr_t *descr, CUfileHandle_t *out);
/* Removes a handle: new requests through it fail, the requests using its
 * files now are waited for (at most OPENCUFILE_DEREGISTER_WAIT_MS), then
 * every descriptor, mapping and read-ahead window the library opened for
 * it is closed before it returns; past the bound, by the last of those
 * requests as it ends (handle.c).  The struct lives on while references
 * remain.  Returns 0 or an error (unknown handle). */
int handle_deregister(CUfileHandle_t fh);
/* Looks a handle up and takes a reference; NULL if fh is unknown, stale or
 * forged (it is never dereferenced before it is found in the table). */
struct ocf_handle *handle_get(CUfileHandle_t fh);
void handle_put(struct ocf_handle *h);
/* Brackets every use of the handle's files by a request (its reads and
 * writes, the read-ahead it opens), with a reference held: 0, or -EBADF
 * when the handle was deregistered; then nothing may touch the files, and
 * handle_exit is not called. */
int handle_enter(struct ocf_handle *h);
void handle_exit(struct ocf_handle *h);
/* Whether the caller's descriptor still names the file registered: 0;
 * -EBADF, closed; 1, its number now names another file.  One system call
 * (statx).  Asked before the library's own descriptors, mappings or
 * read-ahead of the file serve a request (fio_own_files, fileio.c): I/O
 * through a handle follows what its number names, as pread and pwrite on
 * it would (handle.c, "A descriptor that is gone"). */
int handle_same_file(const struct ocf_handle *h);
/* A request's or a batch run's I/O: handle_enter, then, where what the
 * library opened of the file may serve it (own: fio_own_files), whether
 * the number still names that file.  0, with *use the handle to do the I/O
 * through: h, or *view when the number names another file (the number
 * alone, buffered: no twin, mapping or read-ahead); or -EBADF (deregistered,
 * or the number closed), and nothing to end.  handle_end_io(h, *use)
 * after. */
int handle_begin_io(struct ocf_handle *h, bool own, struct ocf_handle *view, struct ocf_handle **use);
void handle_end_io(struct ocf_handle *h, struct ocf_handle *use);

/* The file of h as watchdog_wait_begin() takes it: the descriptor, -1 for
 * no handle, or WATCHDOG_USERSPACE_FS. */
int handle_watch_fd(const struct ocf_handle *h);
/* Deregisters every handle (driver close). */
void handle_deregister_all(void);

#endif /* OCF_HANDLE_H_ */
