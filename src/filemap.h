/* SPDX-License-Identifier: Apache-2.0 */
/*
 * filemap.h - cached file bytes copied into staging through a read-only
 * mapping of the file, with stores that bypass the CPU caches.
 */
#ifndef OCF_FILEMAP_H_
#define OCF_FILEMAP_H_

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct ocf_fmap;

/* The mapping state of one handle's file, read through descriptor fd (not
 * owned), or NULL where mapped reads are off (OPENCUFILE_MAPPED_READS) or
 * memory is short.  Nothing is mapped until the first copy. */
struct ocf_fmap *fmap_create(int fd);
/* Unmaps everything; no copy may be running (the handle's last reference). */
void fmap_destroy(struct ocf_fmap *m);
/* Stops the thread that drops idle windows' page-table entries (driver
 * close, after every handle is gone); the next fmap_create starts it. */
void fmap_stop(void);

/* Copies [off, off+n) of the file into dst, stopping at end of file.
 * Meant for bytes the page cache holds (a page that is not cached is read
 * from the disk by the page fault, one page at a time).  Returns the bytes
 * copied, or -1 where the mapping cannot serve the range (nothing can be
 * mapped there, SIGBUS could not be caught safely, or a page fault failed:
 * the file shrank under the copy or the disk returned an error); the
 * caller then reads the range with a system call, which reports what
 * happened.  dst may have been written in part when -1 comes back. */
ssize_t fmap_copy(struct ocf_fmap *m, char *dst, off_t off, size_t n);

/* The calling thread's next copies are bulk (fio_bulk_reads: on) and are
 * left to preadv2 (fmap_copy returns -1), or not (off). */
void fmap_bulk(bool on);

/* A staged read of this thread begins (fileio.c): fmap_streamed says no
 * until an fmap_copy streams its bytes. */
void fmap_streamed_forget(void);

/* Whether an fmap_copy of this thread since its last fmap_streamed_forget
 * filled [p, p+n) with stores that bypass the caches (nothing of it is
 * left in them to write back). */
bool fmap_streamed(const void *p, size_t n);

#endif /* OCF_FILEMAP_H_ */
