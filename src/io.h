/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io.h - what the data path is asked to do: one request (struct ocf_io) -
 * move [off, off+len) of a file from/to a resolved target - with its
 * vector pieces or its stream operation's staging plan, and how a request
 * is cut into chunks.  Shared by the engine (engine.c), its striped path
 * (stripe.c, job.h) and the layers that build requests.
 */
#ifndef OCF_IO_H_
#define OCF_IO_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buffer.h"
#include "cufile.h"

struct ocf_handle;

/* A stream operation's staging plan (stream.c).  Its copies between GPU
 * memory and a ring of pinned slots were queued on the application's stream
 * at submission; the engine only moves file data.  Chunk k of the request
 * lives in slot (q0 + k) % nslots, use number g = (q0 + k) / nslots + 1 of
 * that slot, at byte fio_stage_skew(h, foff0 + start of chunk k) of it (where
 * the queued copy expects it).  Reads: wait until free[slot] >= g - 1 (the
 * GPU copied the slot's previous use out), fill, store fill[slot] = g.
 * Writes: wait until fill[slot] >= g (the GPU copied the data in), write,
 * store free[slot] = g.  Every chunk is signalled exactly once, also after
 * a failure (read slots are then zero-filled), or the stream would wait
 * forever. */
struct ocf_ringplan {
	char *mem;
	size_t slot_bytes;
	unsigned nslots;
	uint32_t *fill, *free;
	uint64_t q0;
	size_t chunk, skew0, nchunks;
	off_t foff0; /* the file offset the copies were planned for */
	bool skip;   /* release every chunk without file I/O (a bad offset) */
	/* Waits, for chunk k, until the cyclic value at w reaches val: 0, or
	 * an error when the stream can no longer get there (its context
	 * failed, or the chunk's commands could not be queued). */
	int (*wait)(const struct ocf_ringplan *p, size_t k, const uint32_t *w, uint32_t val);
	/* Waits until chunk k's commands are queued (the submitter may still
	 * be queuing them while the stream runs the first ones): true, or
	 * false when queuing failed before them (the chunk is then skipped;
	 * anything of it that was queued has been released). */
	bool (*queued)(const struct ocf_ringplan *p, size_t k);
	void *owner;
};

/* One piece of a vectored request (cuFileReadv/cuFileWritev): len > 0
 * bytes of memory at `mem` (a host address, or a device pointer when the
 * request's target is device memory) that hold bytes [at, at + len) of the
 * request.  Pieces are in request order and cover it without gaps. */
struct ocf_seg {
	size_t at;
	size_t len;
	uintptr_t mem;
};

/* A single-range request's arguments as its caller gave them (what its
 * statistics and its failure log name): set by request_prepare. */
struct ocf_call {
	CUfileHandle_t fh;
	const void *base;
	size_t size;
	off_t file_offset, buf_offset;
	bool write;
};

struct ocf_io {
	struct ocf_handle *h;
	/* Where the bytes go.  For a vectored request (segs != NULL) only its
	 * kind of memory (host, or device with gpu/ctx/use_stream) counts: all
	 * its pieces share it; host and dev are unused. */
	struct ocf_target t;
	off_t off;
	size_t len;
	const struct ocf_ringplan *plan; /* stream operations on GPU memory */
	const struct ocf_seg *segs;      /* vectored: nsegs >= 2 pieces */
	size_t nsegs;
	struct ocf_call call; /* a single-range request's own arguments */
};

/* Chunk i of a request of len bytes whose chunk 0 is skew0 bytes shorter
 * than the others (so that later chunks start on the file's alignment):
 * where it starts in the request, and its length. */
static inline size_t ocf_chunk_start(size_t chunk, size_t skew0, size_t i)
{
	return i == 0 ? 0 : i * chunk - skew0;
}
static inline size_t ocf_chunk_len(size_t chunk, size_t skew0, size_t len, size_t i)
{
	size_t end = (i + 1) * chunk - skew0;
	if (end > len)
		end = len;
	return end - ocf_chunk_start(chunk, skew0, i);
}

#endif /* OCF_IO_H_ */
