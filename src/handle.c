/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handle.c - the table of registered file handles.
 *
 * DESIGN: a CUfileHandle_t is not a pointer but a key: (generation << 24) |
 * (slot index + 1).  Lookups go through the table, so a forged, stale or
 * double-freed handle is refused instead of dereferenced, and a slot reused
 * by a new registration gets a new generation.  Each handle is reference
 * counted: I/O holds a reference for its duration, so the struct of a handle
 * deregistered while another thread uses it is freed when that I/O ends.
 *
 * DESIGN: what the handle opened goes with the deregistration, not with the
 * last reference.  References outlive the calls that use the file: a batch
 * thread's lookup cache keeps its handles until its share of a submission
 * ends, after the entries completed; a stream operation drops its own after
 * the stream passed it; an operation queued keeps one until it runs.  A
 * client counting its descriptors right after cuFileHandleDeregister
 * (NIXL's GDS backend) must not find the library's twins, mappings or
 * read-ahead still open on one of those threads.  So a reference is only
 * the struct's life; a use of the files is counted apart: every request
 * brackets its file I/O with handle_enter/handle_exit (request_engine, a
 * batch thread's runs), and the read-ahead fills, which run between
 * requests, belong to windows that the release closes (waiting for a fill
 * in progress).  The deregistration marks the handle dead, so that no
 * request enters any more (one that has not yet touched the file fails
 * with EBADF; a stream operation's queued copies then copy zeros), waits
 * for the users counted to leave, and closes everything itself.  The wait
 * is for I/O in progress only, and bounded (OPENCUFILE_DEREGISTER_WAIT_MS,
 * 10 s): a read of a hung network file system must not hang the caller.
 * Past the bound, closing would pull the descriptors from under a read that
 * still uses them (and their numbers could go to files the application
 * opens next), so the call logs it and returns, and the last user closes
 * them as it leaves, before its own call returns.
 *
 * DESIGN: a descriptor that is gone.  The library reads and writes through
 * the caller's number and through its own descriptors and mappings of the
 * file registered (twins, windows of the file, read-ahead).  Once the
 * caller closed the number, or gave it to another file, the two would
 * disagree: the old file's bytes through what the library opened, the new
 * one's (or EBADF) through the number.  One answer: what the number names,
 * as pread and pwrite on it give - EBADF once it is closed, the other
 * file's bytes once it names one.  That answer costs nothing where a
 * request uses the number alone (a buffered handle's reads and writes
 * below 64 KiB, and its reads into host memory of cached bytes: no
 * question is asked, the system answers), where an identity check would
 * cost a system call more than the request's own one or two (a 4 KiB
 * cuFileRead into host memory, 1.0 us on the development machine, took
 * 1.7 us with one statx per request).  Before the library's own files
 * serve a request (fio_own_files: an O_DIRECT handle's requests, a
 * buffered handle's reads of 64 KiB or more into device memory; at the
 * later places where a buffered handle's uncached bytes go to its O_DIRECT
 * twin, or a write's to its mapping), handle_same_file asks whether the
 * number still names the file registered: statx of the inode, with the
 * device (no times asked, which would make the file's next time updates
 * fine-grained, fileio.c "size_of").  A closed number fails the request
 * with EBADF; one that names another file runs the request through a view
 * of the handle with the number alone (handle_begin_io), never through
 * what the library opened of the old file (docs/compatibility.md).
 *
 * Filesystem facts come from fstatfs() and the mount table (st_dev matched
 * against /proc/self/mountinfo), never from udev, so the library works in
 * VMs and containers without a udev database.
 */
#define _GNU_SOURCE
#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config.h"
#include "fault.h"
#include "filemap.h"
#include "internal.h"
#include "log.h"
#include "watchdog.h"

#define SLOT_BITS 24
#define SLOT_MASK ((1ull << SLOT_BITS) - 1)

/* table_lock protects slots[], cap, next_gen and every handle's refs/dead. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ocf_handle **slots;
static size_t cap;
static uint64_t next_gen = 1;

/* Where the release of what a handle opened stands (h->files). */
enum {
	HF_OPEN,      /* in use, or not yet deregistered */
	HF_WAITING,   /* the deregistration waits for the users to leave */
	HF_ABANDONED, /* it gave up waiting: the last user to leave closes */
	HF_CLOSED,    /* closed (by whoever moved it here) */
};

/* Closes the read-ahead windows, the mappings and the twin descriptors: no
 * request uses them (none can enter any more, or the handle's last
 * reference).  The descriptor fields keep their numbers (a batch thread
 * may still read fd_direct to lay out an entry it will not run); nothing
 * uses them after this. */
static void close_files(struct ocf_handle *h)
{
	struct ocf_ra *ra = __atomic_load_n(&h->ra, __ATOMIC_ACQUIRE);
	if (ra) {
		h->ra_free(ra); /* its windows closed, their fills waited for */
		__atomic_store_n(&h->ra, NULL, __ATOMIC_RELEASE);
	}
	fmap_destroy(h->fmap);
	fmap_destroy(h->wmap);
	h->fmap = h->wmap = NULL;
	if (h->fd_buffered >= 0)
		close(h->fd_buffered);
	if (h->fd_direct >= 0)
		close(h->fd_direct);
}

static void handle_free(struct ocf_handle *h)
{
	/* Not released by a deregistration (a registration that failed, the
	 * driver's close): with the last reference no user is left. */
	if (atomic_load(&h->files) != HF_CLOSED)
		close_files(h);
	pthread_mutex_destroy(&h->toggle_lock);
	free(h);
}

static void fs_type_from_mounts(dev_t dev, char *out, size_t outlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		/* id parent major:minor root mountpoint options ... - fstype src */
		if (sscanf(line, "%*u %*u %u:%u", &maj, &min) != 2)
			continue;
		if (makedev(maj, min) != dev)
			continue;
		char *sep = strstr(line, " - ");
		if (!sep)
			continue;
		char type[64];
		if (sscanf(sep + 3, "%63s", type) == 1) {
			snprintf(out, outlen, "%s", type);
			break;
		}
	}
	fclose(f);
}

static const char *fs_type_from_magic(long magic)
{
	switch ((unsigned long)magic) {
	case 0xEF53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x01021994: return "tmpfs";
	case 0x6969: return "nfs";
	case 0x0BD00BD0: return "lustre";
	case 0x47504653: return "gpfs";
	case 0x19830326: return "beegfs";
	case 0x794C7630: return "overlay";
	case 0x62656572: return "sysfs";
	default: return "unknown";
	}
}

/* File alignment for O_DIRECT: what statx reports, at least a page (so an
 * unaligned head or tail never shares a page with the aligned body). */
static unsigned direct_alignment(int fd)
{
	unsigned a = 4096;
#ifdef STATX_DIOALIGN
	struct statx stx;
	if (!fault_errno(OCF_FAULT_STATX) && statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		a = OCF_MAX(a, stx.stx_dio_offset_align);
		a = OCF_MAX(a, stx.stx_dio_mem_align);
	}
#endif
	if (a > OCF_MAX_ALIGN)
		a = OCF_MAX_ALIGN;
	return a;
}

/* A second descriptor of the same file through /proc/self/fd/N with
 * `flags`: the same inode is verified, so a path that now names something
 * else is refused.  Returns the descriptor, or -errno. */
static int open_twin(int fd, int flags)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int nfd = fault_open(path, flags | O_CLOEXEC | O_NOCTTY);
	if (nfd < 0)
		return -errno;
	struct stat a, b;
	if (fault_fstat(fd, &a) != 0 || fault_fstat(nfd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		close(nfd);
		return -ESTALE;
	}
	return nfd;
}

/* A second descriptor of the same file without O_DIRECT, for the unaligned
 * head and tail of writes.  Flags that change semantics (O_TRUNC, O_CREAT)
 * are not repeated. */
static int open_buffered_twin(int fd, int flags)
{
	int nfd = open_twin(fd, flags & (O_ACCMODE | O_SYNC | O_DSYNC));
	if (nfd < 0)
		log_info("no buffered twin for fd %d (%s): unaligned writes toggle O_DIRECT", fd, strerror(-nfd));
	return nfd < 0 ? -1 : nfd;
}

/* For a buffered descriptor that can be read: an O_DIRECT descriptor of the
 * same file, so that reads take what the page cache holds by copy and the
 * rest straight from the disk (fileio.c).  None where the file system
 * refuses O_DIRECT (tmpfs), or with OPENCUFILE_BUFFERED_DIRECT=0. */
static int open_direct_twin(int fd, int flags)
{
	int acc = flags & O_ACCMODE;
	if (acc != O_RDONLY && acc != O_RDWR)
		return -1;
	if (!ocf_cfg.tuning.buffered_direct)
		return -1;
	int nfd = open_twin(fd, O_RDONLY | O_DIRECT);
	if (nfd < 0)
		log_debug("no O_DIRECT twin for fd %d (%s): reads are buffered", fd, strerror(-nfd));
	return nfd < 0 ? -1 : nfd;
}

/* File systems whose page cache the kernel keeps coherent with O_DIRECT
 * I/O of the same host: a direct write writes back and invalidates the
 * cached pages it covers (before and after the write), and a direct read
 * writes back dirty cached pages first.  Serving a direct read from cached
 * pages there returns what the direct read would.  Network and parallel
 * file systems (nfs, cifs, lustre, gpfs, beegfs, fuse...) are not listed:
 * another node's writes do not invalidate this node's cache, and O_DIRECT
 * there is how a program asks for the server's current bytes. */
static bool fs_cache_coherent_with_direct(const char *type)
{
	static const char *const local[] = {"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "bcachefs", "tmpfs"};
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		if (strcmp(type, local[i]) == 0)
			return true;
	return false;
}

/* File systems whose fallocate reserves the blocks a later store through a
 * mapping fills, in place: writeback never needs a block that the
 * reservation did not give, so a full disk is an error of the call, never
 * a fault at writeback.  Not copy-on-write ones (btrfs; xfs with reflink,
 * which it has by default, writes shared blocks elsewhere), nor the ones
 * not measured. */
static bool mapped_write_fs(const char *fs)
{
	return !strcmp(fs, "ext4") || !strcmp(fs, "ext3") || !strcmp(fs, "ext2");
}

/* Whether buffered writes through h may store through a mapping of the
 * file, and why not in `why` when they may not. */
static bool mapped_writes_allowed(const struct ocf_handle *h, const char **why)
{
	if (h->odirect)
		*why = "O_DIRECT";
	else if (h->type != CU_FILE_HANDLE_TYPE_OPAQUE_FD || h->fd_direct < 0)
		*why = "not a regular file of a local file system";
	else if ((h->open_flags & O_ACCMODE) != O_RDWR)
		*why = "not open for reading and writing (a mapping needs both)";
	else if (h->open_flags & (O_SYNC | O_DSYNC))
		*why = "O_SYNC or O_DSYNC";
	else if (!mapped_write_fs(h->fs_type))
		*why = "not a file system known to reserve blocks in place (ext2, ext3, ext4)";
	else
		return true;
	return false;
}

/* Whether reads through the O_DIRECT handle h take cached pages, and why
 * not in `why` when they do not. */
static bool direct_reads_from_cache(const struct ocf_handle *h, const char **why)
{
	int acc = h->open_flags & O_ACCMODE;
	if (!ocf_cfg.direct_reads_from_cache)
		*why = "properties.direct_reads_from_cache is false";
	else if (acc != O_RDONLY && acc != O_RDWR)
		*why = "not open for reading";
	else if (!fs_cache_coherent_with_direct(h->fs_type))
		*why = "not a local file system known to keep its page cache coherent with O_DIRECT";
	else if (h->fd_buffered < 0)
		*why = "no buffered descriptor";
	else
		return true;
	return false;
}

static int check_fd(struct ocf_handle *h, int fd)
{
	if (fd < 0)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	int flags = fault_fcntl(fd, F_GETFL, 0);
	if (flags < 0)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
#ifdef O_PATH
	if (flags & O_PATH)
		return OCF_ERR(CU_FILE_INVALID_FILE_OPEN_FLAG);
#endif
	struct stat st;
	/* A descriptor that is not open is an invalid argument; any other
	 * failure (EIO, ENOMEM...) is the system's error. */
	if (fault_fstat(fd, &st) != 0)
		return errno == EBADF ? OCF_ERR(CU_FILE_INVALID_VALUE) : -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return OCF_ERR(CU_FILE_INVALID_FILE_TYPE);
	if (flags & (O_APPEND | O_NONBLOCK))
		return OCF_ERR(CU_FILE_INVALID_FILE_OPEN_FLAG);

	h->fd = fd;
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	h->open_flags = flags;
	h->odirect = (flags & O_DIRECT) != 0;
	h->align = h->odirect ? direct_alignment(fd) : 1;
	snprintf(h->fs_type, sizeof(h->fs_type), "unknown");
	struct statfs sfs;
	if (fstatfs(fd, &sfs) == 0)
		snprintf(h->fs_type, sizeof(h->fs_type), "%s", fs_type_from_magic(sfs.f_type));
	if (S_ISREG(st.st_mode))
		fs_type_from_mounts(st.st_dev, h->fs_type, sizeof(h->fs_type));
	else
		snprintf(h->fs_type, sizeof(h->fs_type), "block");
	return 0;
}

int handle_register(const CUfileDescr_t *descr, CUfileHandle_t *out)
{
	if (!descr || !out)
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct ocf_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return OCF_ERR(CU_FILE_NOMEM_ERROR);
	h->fd = -1;
	h->fd_buffered = -1;
	h->fd_direct = -1;
	h->align = 1;
	pthread_mutex_init(&h->toggle_lock, NULL);
	int r;
	switch (descr->type) {
	case CU_FILE_HANDLE_TYPE_OPAQUE_FD:
		r = check_fd(h, descr->handle.fd);
		if (r)
			goto fail;
		break;
	case CU_FILE_HANDLE_TYPE_USERSPACE_FS:
		if (!descr->fs_ops || !descr->fs_ops->read || !descr->fs_ops->write) {
			r = OCF_ERR(CU_FILE_IO_NOT_SUPPORTED);
			goto fail;
		}
		h->fs_handle = descr->handle.handle;
		h->fs_ops = descr->fs_ops;
		snprintf(h->fs_type, sizeof(h->fs_type), "userspace");
		break;
	default: /* OPAQUE_WIN32 and unknown types, as NVIDIA's library says */
		r = OCF_ERR(CU_FILE_IO_NOT_SUPPORTED);
		goto fail;
	}
	h->type = descr->type;

	pthread_mutex_lock(&table_lock);
	size_t free_idx = cap;
	for (size_t i = 0; i < cap; i++) {
		struct ocf_handle *o = slots[i];
		if (!o) {
			if (free_idx == cap)
				free_idx = i;
			continue;
		}
		bool same = h->type == CU_FILE_HANDLE_TYPE_OPAQUE_FD ? (o->type == h->type && o->fd == h->fd)
								     : (o->type == h->type && o->fs_handle == h->fs_handle);
		if (same) {
			pthread_mutex_unlock(&table_lock);
			r = OCF_ERR(CU_FILE_HANDLE_ALREADY_REGISTERED);
			goto fail;
		}
	}
	if (free_idx == cap) {
		size_t ncap = cap ? cap * 2 : 64;
		if (ncap > SLOT_MASK) {
			pthread_mutex_unlock(&table_lock);
			r = OCF_ERR(CU_FILE_NOMEM_ERROR);
			goto fail;
		}
		struct ocf_handle **n = realloc(slots, ncap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&table_lock);
			r = OCF_ERR(CU_FILE_NOMEM_ERROR);
			goto fail;
		}
		memset(n + cap, 0, (ncap - cap) * sizeof(*n));
		slots = n;
		cap = ncap;
	}
	h->key = (next_gen++ << SLOT_BITS) | (free_idx + 1);
	h->refs = 1; /* the table's reference */
	slots[free_idx] = h;
	pthread_mutex_unlock(&table_lock);

	/* Outside the lock: opening the twin is a system call. It is only read
	 * by I/O on this handle, which cannot start before *out is returned. */
	if (h->odirect) {
		h->fd_buffered = open_buffered_twin(h->fd, h->open_flags);
		const char *why = NULL;
		h->cache_reads = direct_reads_from_cache(h, &why);
		if (!h->cache_reads)
			log_debug("fd %d: O_DIRECT reads never take cached pages (fs %s): %s", h->fd, h->fs_type, why);
	} else if (h->type == CU_FILE_HANDLE_TYPE_OPAQUE_FD) {
		h->fd_direct = open_direct_twin(h->fd, h->open_flags);
		if (h->fd_direct >= 0)
			h->align = direct_alignment(h->fd_direct);
	}
	/* A buffered handle's staged reads copy cached bytes through a mapping
	 * of the file (filemap.c): a regular file of a local file system,
	 * where the mapping is the page cache that read() copies, probed by
	 * fileio.c (an O_DIRECT twin exists).  An O_DIRECT handle's too, where
	 * its reads take cached pages (cache_reads), but only while no write
	 * can be racing (fmap_copy_direct): a copy through a mapping is not
	 * atomic per page, so a direct write racing with it could leave a
	 * block of the read half old, half new, which a direct read never
	 * returns (preadv2 copies each page whole).  A block device's fs_type
	 * is "block", never on the list. */
	if (((!h->odirect && h->fd_direct >= 0) || (h->odirect && h->cache_reads)) &&
	    fs_cache_coherent_with_direct(h->fs_type))
		h->fmap = fmap_create(h->fd);
	/* Buffered writes store through a writable mapping of the file
	 * (fileio.c, "Writes through the mapping"): a regular file open for
	 * reading and writing (a mapping needs both), not O_SYNC or O_DSYNC
	 * (durable when the call returns: pwrite), on a file system that
	 * reserves blocks in place with fallocate and never copies them on
	 * write (mapped_write_fs). */
	const char *wwhy = NULL;
	if (mapped_writes_allowed(h, &wwhy))
		h->wmap = fmap_create_writable(h->fd);
	else
		log_debug("fd %d: buffered writes with pwrite: %s", h->fd, wwhy);
	/* Read-ahead only where every writer of the file is on this machine
	 * (an inotify watch sees only local writes): the local file systems,
	 * but tmpfs, whose pages keep no dirty state (a store through a shared
	 * mapping would go unseen: readahead.c). */
	h->ra_ok = h->type == CU_FILE_HANDLE_TYPE_OPAQUE_FD && fs_cache_coherent_with_direct(h->fs_type) &&
		   strcmp(h->fs_type, "tmpfs") != 0;
	*out = (CUfileHandle_t)(uintptr_t)h->key;
	log_debug("handle %#llx registered: fd %d, %s, fs %s, align %u", (unsigned long long)h->key, h->fd,
		  h->cache_reads ? "O_DIRECT, cached pages by copy"
		  : h->odirect ? "O_DIRECT"
		  : h->fd_direct >= 0 ? "buffered with O_DIRECT twin" : "buffered",
		  h->fs_type, h->align);
	return 0;

fail:
	handle_free(h);
	return r;
}

/* Caller holds table_lock. */
static struct ocf_handle *lookup_locked(CUfileHandle_t fh, size_t *idx)
{
	uint64_t key = (uint64_t)(uintptr_t)fh;
	uint64_t i = key & SLOT_MASK;
	if (i == 0 || i > cap)
		return NULL;
	struct ocf_handle *h = slots[i - 1];
	if (!h || h->key != key)
		return NULL;
	*idx = i - 1;
	return h;
}

struct ocf_handle *handle_get(CUfileHandle_t fh)
{
	size_t idx;
	pthread_mutex_lock(&table_lock);
	struct ocf_handle *h = lookup_locked(fh, &idx);
	if (h)
		h->refs++;
	pthread_mutex_unlock(&table_lock);
	return h;
}

void handle_put(struct ocf_handle *h)
{
	pthread_mutex_lock(&table_lock);
	bool last = --h->refs == 0;
	pthread_mutex_unlock(&table_lock);
	if (last)
		handle_free(h);
}

/* statx refused (ENOSYS, or EPERM from a seccomp filter): fstat instead. */
static bool no_statx; /* relaxed atomic */

/* statx is asked for the inode only: the device comes with every answer,
 * and no time is asked (a query of the times makes the file's next time
 * update fine-grained, which writers through its mapping would pay). */
int handle_same_file(const struct ocf_handle *h)
{
	dev_t dev;
	ino_t ino;
	struct statx sx;
	if (!__atomic_load_n(&no_statx, __ATOMIC_RELAXED) &&
	    statx(h->fd, "", AT_EMPTY_PATH, STATX_INO, &sx) == 0) {
		dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
		ino = (ino_t)sx.stx_ino;
	} else {
		if (errno == EBADF)
			return -EBADF;
		if (errno == ENOSYS || errno == EPERM)
			__atomic_store_n(&no_statx, true, __ATOMIC_RELAXED);
		struct stat st;
		if (fstat(h->fd, &st) != 0)
			return errno == EBADF ? -EBADF : 0; /* no answer: the I/O says what it finds */
		dev = st.st_dev;
		ino = st.st_ino;
	}
	return dev == h->dev && ino == h->ino ? 0 : 1;
}

/* A view of h with the number alone (handle_begin_io). */
static void plain_view(const struct ocf_handle *h, struct ocf_handle *v)
{
	memset(v, 0, sizeof(*v));
	v->type = h->type;
	v->fd = h->fd;
	v->fd_buffered = v->fd_direct = -1;
	v->open_flags = h->open_flags;
	v->align = 1;
	v->dev = h->dev;
	v->ino = h->ino;
	v->key = h->key;
	snprintf(v->fs_type, sizeof(v->fs_type), "unknown");
	pthread_mutex_init(&v->toggle_lock, NULL);
}

int handle_enter(struct ocf_handle *h)
{
	/* seq_cst, like the deregistration's store of dead and its loads of
	 * users: either it sees this user, or this sees the handle dead. */
	atomic_fetch_add(&h->users, 1);
	if (!atomic_load(&h->dead))
		return 0;
	handle_exit(h);
	return -EBADF;
}

void handle_exit(struct ocf_handle *h)
{
	if (atomic_fetch_sub(&h->users, 1) != 1 || !atomic_load(&h->dead))
		return;
	/* The last user of a dead handle. */
	int st = atomic_load(&h->files);
	if (st == HF_WAITING) {
		ocf_futex_wake(&h->users, INT_MAX);
	} else if (st == HF_ABANDONED && atomic_compare_exchange_strong(&h->files, &st, HF_CLOSED)) {
		close_files(h);
		log_info("fd %d: the library's descriptors and mappings of the file closed by the last call "
			 "that used the handle after its deregistration",
			 h->fd);
	}
}

int handle_begin_io(struct ocf_handle *h, bool own, struct ocf_handle *view, struct ocf_handle **use)
{
	*use = h;
	int e = handle_enter(h);
	if (e || !own)
		return e;
	int same = handle_same_file(h);
	if (same < 0) {
		handle_exit(h);
		return same;
	}
	if (same > 0) {
		plain_view(h, view);
		*use = view;
	}
	return 0;
}

void handle_end_io(struct ocf_handle *h, struct ocf_handle *use)
{
	if (use != h)
		pthread_mutex_destroy(&use->toggle_lock);
	handle_exit(h);
}

/* How long a deregistration waits for the requests using the handle. */
static uint64_t release_wait_ns(void)
{
	return config_env(OCF_E_DEREGISTER_WAIT_MS) * 1000000ull;
}

/* The deregistration's release of what h (dead) opened: waits for the
 * users to leave, at most release_wait_ns(), and closes everything; past
 * the bound, leaves that to the last user (handle_exit). */
static void release_files(struct ocf_handle *h)
{
	/* A userspace file system's handle opened nothing. */
	if (h->type != CU_FILE_HANDLE_TYPE_OPAQUE_FD) {
		atomic_store(&h->files, HF_CLOSED);
		return;
	}
	atomic_store(&h->files, HF_WAITING);
	uint32_t u = atomic_load(&h->users);
	if (u) {
		uint64_t bound = release_wait_ns(), t0 = ocf_now_ns(), waited = 0;
		watchdog_wait_begin("cuFileHandleDeregister", h->fd, -1, "the calls using the handle");
		while (u && waited < bound) {
			/* The last user to leave wakes this; the slices only
			 * bound a wake-up missed. */
			ocf_futex_wait(&h->users, u, (long)OCF_MIN(bound - waited, 100000000ull));
			u = atomic_load(&h->users);
			waited = ocf_now_ns() - t0;
		}
		watchdog_wait_end();
	}
	if (u == 0) {
		/* A user that comes now finds the handle dead and leaves. */
		atomic_store(&h->files, HF_CLOSED);
		close_files(h);
		return;
	}
	atomic_store(&h->files, HF_ABANDONED);
	if (atomic_load(&h->users) == 0) {
		/* The last user left before it could see that: whoever moves
		 * the state on closes. */
		int st = HF_ABANDONED;
		if (atomic_compare_exchange_strong(&h->files, &st, HF_CLOSED))
			close_files(h);
		return;
	}
	log_warn("cuFileHandleDeregister: fd %d: calls still use the handle after %llu ms "
		 "(OPENCUFILE_DEREGISTER_WAIT_MS): the library's descriptors and mappings of the file are "
		 "closed when the last of them ends",
		 h->fd, (unsigned long long)(release_wait_ns() / 1000000ull));
}

int handle_deregister(CUfileHandle_t fh)
{
	size_t idx;
	pthread_mutex_lock(&table_lock);
	struct ocf_handle *h = lookup_locked(fh, &idx);
	if (!h) {
		pthread_mutex_unlock(&table_lock);
		return OCF_ERR(CU_FILE_HANDLE_NOT_REGISTERED);
	}
	slots[idx] = NULL;
	atomic_store(&h->dead, true);
	pthread_mutex_unlock(&table_lock);
	/* With the table's reference, dropped after. */
	release_files(h);
	handle_put(h);
	return 0;
}

int handle_watch_fd(const struct ocf_handle *h)
{
	if (!h)
		return -1;
	return h->type == CU_FILE_HANDLE_TYPE_USERSPACE_FS ? WATCHDOG_USERSPACE_FS : h->fd;
}

void handle_deregister_all(void)
{
	pthread_mutex_lock(&table_lock);
	for (size_t i = 0; i < cap; i++) {
		struct ocf_handle *h = slots[i];
		if (!h)
			continue;
		slots[i] = NULL;
		atomic_store(&h->dead, true);
		if (--h->refs == 0)
			handle_free(h);
	}
	free(slots);
	slots = NULL;
	cap = 0;
	pthread_mutex_unlock(&table_lock);
}
