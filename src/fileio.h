/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fileio.h - the file side of I/O: POSIX system calls on a handle's
 * descriptors (or the caller's userspace file system), including the
 * O_DIRECT alignment rules.
 */
#ifndef OCF_FILEIO_H_
#define OCF_FILEIO_H_

#include <stddef.h>
#include <sys/types.h>

struct ocf_handle;
struct ocf_slot;

/* Where in a staging slot the byte at file offset `off` is placed: O_DIRECT
 * needs the slot and the file to agree modulo the alignment. */
size_t fio_stage_skew(const struct ocf_handle *h, off_t off);

/* Reads [off, off+n) of the file into memory at dst, with no alignment
 * requirement on dst, off or n: an O_DIRECT range that is not aligned goes
 * through `scratch`, which may be NULL only when no staging is needed.
 * Returns the bytes read (short only at end of file) or an error. */
ssize_t fio_read(struct ocf_handle *h, char *dst, size_t n, off_t off, struct ocf_slot *scratch);

/* Reads [off, off+n) into the slot at slot->buf + fio_stage_skew(h, off);
 * n <= slot->chunk.  Returns bytes read (short only at end of file) or an
 * error. */
ssize_t fio_read_staged(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n);

/* Writes n bytes from src to [off, off+n).  With O_DIRECT, src must satisfy
 * src % align == off % align (as staged data does); the unaligned head and
 * tail go through a buffered descriptor.  Returns the length of the prefix
 * known to be written, or an error when nothing was. */
ssize_t fio_write(struct ocf_handle *h, const char *src, size_t n, off_t off);

/* Is memory at p aligned like file offset off for this handle's O_DIRECT? */
int fio_direct_compatible(const struct ocf_handle *h, const void *p, off_t off);

#endif /* OCF_FILEIO_H_ */
