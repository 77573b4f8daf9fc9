/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fileio.h - the file side of I/O: system calls on a handle's descriptors
 * (or the caller's userspace file system), the O_DIRECT alignment rules and
 * the page-cache-aware reads of buffered descriptors.
 */
#ifndef OCF_FILEIO_H_
#define OCF_FILEIO_H_

#include <stddef.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>

struct ocf_handle;
struct ocf_ring;
struct ocf_slot;

/* Where in a staging slot the byte at file offset `off` is placed: direct
 * I/O needs the slot and the file to agree modulo the alignment. */
size_t fio_stage_skew(const struct ocf_handle *h, off_t off);

/* Alignment that chunk boundaries keep for this handle (1: none needed). */
size_t fio_align(const struct ocf_handle *h);
/* The same for the pieces of a write (write) or a read: a buffered write
 * stored through the file's mapping cuts its pieces at 2 MiB boundaries of
 * the file, so that each piece's stores cover whole regions of the size of
 * the largest folio (fio_write). */
size_t fio_piece_align(const struct ocf_handle *h, bool write);

/* Whether a staged read of this handle may go to the disk with O_DIRECT:
 * an O_DIRECT handle, or a buffered one whose uncached bytes are read
 * through its O_DIRECT twin.  Such a read needs its slot aligned to
 * fio_align(h) (the byte at off then at fio_stage_skew(h, off)) and room
 * for the aligned range around the request. */
bool fio_reads_direct(const struct ocf_handle *h);

/* Reads [off, off+n) of the file into memory at dst, with no alignment
 * requirement on dst, off or n: an O_DIRECT range that is not aligned goes
 * through `scratch`, which may be NULL only when no staging is needed.
 * Returns the bytes read (short only at end of file) or an error. */
ssize_t fio_read(struct ocf_handle *h, char *dst, size_t n, off_t off, struct ocf_slot *scratch);

/* A staged read, split so that its one long transfer can go through
 * io_uring: fio_stage_read() does what has to be synchronous (the part the
 * page cache holds, a userspace file system) and describes the transfer
 * left in `op`; the caller runs it (fio_op_run, or a ring when
 * fio_op_wants_ring) and hands its result to fio_stage_read_done(). */
struct fio_op {
	int fd;
	bool write;
	bool direct;     /* fd is an O_DIRECT descriptor */
	unsigned align;  /* its alignment */
	char *buf;
	size_t len;      /* 0: nothing left to transfer */
	off_t off;
	/* The read it belongs to. */
	off_t req_off;
	size_t req_n;
	size_t prefix;   /* bytes of the request already in the slot */
};

/* The calling thread's next staged reads are bulk (on): chunks of a request
 * split among participants while more than twice one request's
 * participants run, so that the bus, not the wait for a copy, is the limit.
 * Their cached bytes are then copied through the file's mapping with
 * ordinary stores, not streaming ones (filemap.c, "When streaming stores
 * lose"). */
void fio_bulk_reads(bool on);

/* Plans the read of [off, off+n) into the slot at slot->buf +
 * fio_stage_skew(h, off); n <= slot->chunk.  Returns 0 or an error. */
int fio_stage_read(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n, struct fio_op *op);
/* The bytes of the request in the slot (short only at end of file) or an
 * error, given the transfer's result (bytes, or -errno; ignored when
 * op->len is 0).  A transfer that came back short or with EAGAIN is
 * completed here with pread. */
ssize_t fio_stage_read_done(const struct fio_op *op, ssize_t res);
/* Does the transfer belong on an io_uring ring?  Direct I/O does, unless
 * the backend is psync; buffered I/O only with the uring backend
 * (OPENCUFILE_IO_BACKEND=uring or properties.prefer_iouring): page-cache
 * copies are faster with pread on the calling thread. */
bool fio_op_wants_ring(const struct fio_op *op);
/* Runs the transfer with pread/pwrite: bytes moved, or -errno. */
ssize_t fio_op_run(const struct fio_op *op);

/* Whether the page cache holds a dirty page of [off, off+len) of the file
 * of fd (cachestat's count: a page written and not yet written back, by a
 * write or a store through a shared mapping): 1 dirty (or cachestat
 * failed), 0 none, -1 this kernel cannot tell (no cachestat: before Linux
 * 6.5, or a filter refuses it). */
int fio_range_dirty(int fd, off_t off, size_t len);

/* fio_stage_read, the transfer with pread, and fio_stage_read_done. */
ssize_t fio_read_staged(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n);
/* The same for a piece of a larger request read by several threads
 * (stripe.c): the page cache is probed however short the piece, so that
 * the request's uncached blocks go around the cache as one staged read of
 * its size would send them. */
ssize_t fio_read_staged_part(struct ocf_handle *h, struct ocf_slot *slot, off_t off, size_t n);

/* Before the host-to-device copy of bytes a file read has just put into
 * staging: writes their cache lines back to memory (clwb) when the copy is
 * likely to wait behind others, `busy` being how many copies may be queued
 * or running beside it (the engine's busy participants; a batch worker's
 * copies queued before this one), and the bytes are few (at most
 * OPENCUFILE_FLUSH_MAX_KB, 512).  A DMA read of lines the CPU holds
 * modified is slow, and when copies queue the copy engine is what limits
 * the rate: the CPU's write-back, done while the copy would wait anyway,
 * is cheaper (docs/architecture.md, "Staged bytes written back").  With
 * few copies queued the write-back would only lengthen the request.
 * OPENCUFILE_FLUSH_STAGED: "off", "clwb" (the default where the CPU has
 * it), "clflushopt"; OPENCUFILE_FLUSH_BUSY: the smallest `busy` that
 * flushes (8).  x86-64 only; elsewhere a no-op. */
void fio_flush_before_copy(const void *p, size_t n, int busy);
/* Logs (DEBUG) the write-back this open's settings give. */
void fio_log_settings(void);

/* A write's place among the writes of this process to its file
 * (fileio.c, wtrack). */
struct fio_wtrack {
	int slot;     /* -1: not counted */
	int stripe;   /* the word of the slot it is counted in */
	bool counted; /* first and seq hold (wtrack_snapshot) */
	bool first;   /* no other write of the file was in flight then */
	uint64_t seq; /* writes of the file ever started then */
};

/* What a write request did before its pieces (fio_write_begin): the file's
 * size then (-1: nothing known, nothing to undo) and the range of it its
 * pieces may store into without asking (ready_lo < ready_hi: cached, or
 * reserved, the file extended over it). */
struct fio_wprep {
	off_t size;
	off_t req_off, req_end; /* where the request starts and ends */
	off_t ready_lo, ready_hi;
	/* Its pieces must run one after another, in file order, none stored,
	 * the first that comes back short ending the request (the engine
	 * then asks no helper): what one pwrite of the range does. */
	bool serial;
	bool stores; /* its pieces may store through the mapping (else: pwrite) */
	bool extended; /* it made the file longer before its pieces (a reservation) */
	off_t limit; /* RLIMIT_FSIZE where the request crosses it: no later piece starts there */
	struct fio_wtrack wt;
	/* A buffered handle's request: its last bytes [tail_off, req_end)
	 * (tail_len > 0, at most 4 KiB) are written once every piece is done,
	 * by fio_write_end: the call that signals the whole write to readers
	 * (IN_MODIFY, the times).  The piece that ends the request copies them
	 * here. */
	off_t tail_off;
	size_t tail_len;
	off_t held_off; /* the held bytes: [held_off, req_end), from the piece that ends the request */
	char tail[4096];
};

/* Before the pieces of a write of [off, off+n) (split: the engine means to
 * give them to several participants at once).  Pieces in parallel, or
 * stored through the mapping, run only where nothing the file system
 * refuses can happen once the first byte moves: below RLIMIT_FSIZE, on a
 * file system whose reservations hold (fallocate), every block the range
 * lacks reserved and the file extended to its end at once - a full disk
 * or quota refuses the reservation, not a piece - and, for stores, the
 * file system still taking writes.  Otherwise the pieces are serial
 * (p->serial), as one pwrite is.  Returns 0, or -errno: the file system
 * refuses writes (EROFS), nothing was written and fio_write_end is not to
 * be called.  "Writes that fail" in docs/architecture.md. */
int fio_write_begin(struct ocf_handle *h, off_t off, size_t n, bool split, struct fio_wprep *p);
/* After them, with the request's result: writes the request's last page
 * when every piece was written (a buffered handle's: held for the end),
 * and a write that went wrong after it extended the file leaves it no
 * longer than what it reports makes it, where no other write of this
 * process to the file ran meanwhile.  Returns the request's result. */
ssize_t fio_write_end(struct ocf_handle *h, struct fio_wprep *p, off_t off, size_t n, ssize_t result);

/* Writes n bytes from src to [off, off+n).  With O_DIRECT, src must satisfy
 * src % align == off % align (as staged data does); the unaligned head and
 * tail go through a buffered descriptor.  The aligned body goes through
 * `ring` when it is not NULL and fio_op_wants_ring says so.  A buffered
 * piece of 64 KiB or more may be stored through the file's mapping
 * ("Writes through the mapping", fileio.c).  prep: the request's
 * fio_write_begin, or NULL.  Returns the length of the prefix known to be
 * written, or an error when nothing was. */
ssize_t fio_write(struct ocf_handle *h, const char *src, size_t n, off_t off, struct ocf_ring *ring,
		  struct fio_wprep *prep);

/* Whether a request of n bytes (a write, into or from device memory) may
 * be served by what the library opened of the file itself - a twin
 * descriptor, the file's mapping, a read-ahead window - from its start:
 * an O_DIRECT handle's with a buffered twin, a buffered handle's reads of
 * PROBE_MIN (64 KiB) or more into device memory.  Its caller asks
 * handle_same_file() first (handle.c).  A buffered handle's other requests
 * use the caller's number alone, except where fio_read sends uncached
 * bytes to the O_DIRECT twin and where a write stores through the mapping:
 * those ask there. */
bool fio_own_files(const struct ocf_handle *h, size_t n, bool write, bool device);

/* Is memory at p aligned like file offset off for this handle's O_DIRECT? */
int fio_direct_compatible(const struct ocf_handle *h, const void *p, off_t off);

#endif /* OCF_FILEIO_H_ */
