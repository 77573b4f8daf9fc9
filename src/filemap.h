/* SPDX-License-Identifier: Apache-2.0 */
/*
 * filemap.h - a file's mappings: cached bytes copied into staging through
 * read-only windows, with stores that bypass the CPU caches; buffered
 * writes stored through writable windows.
 */
#ifndef OCF_FILEMAP_H_
#define OCF_FILEMAP_H_

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct ocf_fmap;

/* The largest folio the page cache makes (a PMD: 2 MiB on x86-64): a store's
 * fault dirties the whole folio it lands in, so stores that must dirty only
 * what they write stay inside regions of this size that they cover. */
#define FMAP_FOLIO_MAX ((size_t)2 << 20)

/* The mapping state of one handle's file, read through descriptor fd (not
 * owned), or NULL where mapped reads are off (OPENCUFILE_MAPPED_READS) or
 * memory is short.  Nothing is mapped until the first copy. */
struct ocf_fmap *fmap_create(int fd);
/* The same for buffered writes through descriptor fd (open for reading and
 * writing): windows that stores go through (fmap_store), or NULL where
 * mapped writes are off (OPENCUFILE_MAPPED_WRITES). */
struct ocf_fmap *fmap_create_writable(int fd);
/* Unmaps everything; no copy or store may be running (the handle's files
 * closed: its deregistration once its calls have left, or its last
 * reference). */
void fmap_destroy(struct ocf_fmap *m);
/* Stops the thread that drops idle windows' page-table entries (driver
 * close, after every handle is gone); the next fmap_create starts it. */
void fmap_stop(void);
/* Logs (DEBUG) the copies this open's settings give. */
void fmap_log_settings(void);

/* Copies [off, off+n) of the file into dst, stopping at end of file.
 * Meant for bytes the page cache holds (a page that is not cached is read
 * from the disk by the page fault, one page at a time).  Returns the bytes
 * copied, or -1 where the mapping cannot serve the range (nothing can be
 * mapped there, SIGBUS could not be caught safely, or a page fault failed:
 * the file shrank under the copy or the disk returned an error); the
 * caller then reads the range with a system call, which reports what
 * happened.  dst may have been written in part when -1 comes back. */
ssize_t fmap_copy(struct ocf_fmap *m, char *dst, off_t off, size_t n);

/* fmap_copy for an O_DIRECT handle, which owes a reader racing a direct
 * writer each block old or new (preadv2 copies each cached page whole; a
 * direct write that invalidates a page mid-copy would leave the rest of a
 * mapped copy to the page read in again).  A direct write updates the
 * file's change time when it begins, before it invalidates anything, and
 * is done long before OPENCUFILE_MAPPED_DIRECT_QUIET_MS (10 s) pass: the
 * copy runs only if the file's times are that old when it begins and are
 * the same when it ends; else -1, and the caller uses preadv2. */
ssize_t fmap_copy_direct(struct ocf_fmap *m, char *dst, off_t off, size_t n);

/* Stores the n bytes at src into [off, off+n) of the file through a
 * writable window (fmap_create_writable).  The file must already be at
 * least off+n long, and the range's blocks should be reserved (or cached):
 * a store's fault into an unreserved block reserves it, and one into an
 * uncached block with data reads it from the disk first.  Returns n, or -1
 * where the mapping cannot take the range (nothing can be mapped there,
 * SIGBUS could not be caught safely, or a fault failed: the file shrank
 * under the stores, no block could be reserved, the disk returned an
 * error); part of the bytes may have been stored then, and the caller
 * writes the range with a system call, which reports what happens. */
ssize_t fmap_store(struct ocf_fmap *m, off_t off, const char *src, size_t n);

/* The calling thread's next copies are bulk (fio_bulk_reads: on), copied
 * with ordinary stores (or left to preadv2, fmap_copy returning -1, with
 * OPENCUFILE_MAPPED_BULK=off), or not (off). */
void fmap_bulk(bool on);

/* A staged read of this thread begins (fileio.c): fmap_streamed says no
 * until an fmap_copy streams its bytes. */
void fmap_streamed_forget(void);

/* Whether an fmap_copy of this thread since its last fmap_streamed_forget
 * filled [p, p+n) with stores that bypass the caches (nothing of it is
 * left in them to write back). */
bool fmap_streamed(const void *p, size_t n);

#endif /* OCF_FILEMAP_H_ */
