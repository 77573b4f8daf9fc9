/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h - the interface between the API layer and the data path.
 *
 * One request: move [off, off+len) of a file from/to a resolved target.
 * The engine returns the bytes moved (short only at end of file, or when a
 * later piece failed after earlier ones succeeded) or an error.
 */
#ifndef OCF_ENGINE_H_
#define OCF_ENGINE_H_

#include <stdint.h>
#include <sys/types.h>

#include "buffer.h"

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
};

struct ocf_engine_ops {
	const char *name;
	ssize_t (*read)(const struct ocf_io *io);
	ssize_t (*write)(const struct ocf_io *io);
	/* Stops worker threads; called by the driver close with no I/O in
	 * flight. */
	void (*shutdown)(void);
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

/* Threads that may work on requests at once: workers plus one caller. */
int engine_participants(void);

/* On the calling thread, submit requests whose copies go on the lanes'
 * non-blocking streams, not ordered with the legacy default stream; the
 * asynchronous executor's threads need this (engine.c). */
void engine_thread_nonblocking_copies(bool on);
/* On the calling thread, refuse requests that would call CUDA (device
 * memory without a ring plan) with CU_FILE_CUDA_MEMORY_TYPE_INVALID: the
 * stream executor's threads must never call the driver. */
void engine_thread_no_cuda(bool on);

/* The engine in use. */
extern const struct ocf_engine_ops *ocf_engine;
extern const struct ocf_engine_ops ocf_engine_parallel;

#endif /* OCF_ENGINE_H_ */
