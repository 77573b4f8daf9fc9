/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batch_io.h - the data path of batch entries: one thread serves a
 * sequence of reads and writes through one staging lane, merging and
 * pipelining them (batch_io.c explains how).
 */
#ifndef OCF_BATCH_IO_H_
#define OCF_BATCH_IO_H_

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cufile.h"
#include "engine.h"
#include "gpu.h"
#include "profile.h"
#include "request.h"

/* One request.  The caller fills the first group of fields before
 * bio_add(); `result` is set (bytes, or -errno / -CU_FILE_*, as the
 * synchronous path would return) before the item is handed to done(). */
struct bio_item {
	CUfileHandle_t fh;
	void *base;
	size_t size;
	off_t file_offset, buf_offset;
	bool write;

	ssize_t result;
	struct bio_item *next; /* in done()'s list; the data path's link before */

	/* The data path's own. */
	struct ocf_io io;
	bool owns_handle; /* io.h must be put (the lookup cache was full) */
	bool run_head;    /* starts a file-contiguous run in its buffer */
	bool copied;      /* a copy was queued for it and not known to fail */
	size_t stage;     /* offset in its staging buffer of the byte at io.off */
};

/* Called with finished items (linked through next), in batches: one call
 * per staging buffer retired, so a caller can complete them under one lock. */
typedef void (*bio_done_fn)(void *arg, struct bio_item *list);

/* What one staging buffer of the lane holds. */
struct bio_buf {
	struct bio_item *head, *tail; /* staged items, in order */
	size_t used;                  /* bytes of the buffer taken */
	bool copies;                  /* copies were queued for its items */
	bool recorded;                /* ev was recorded after its copies */
	CUevent ev;                   /* gpu_lane_event() of this buffer */
	bool busy;                    /* handed to the GPU; retire before reuse */
};

/* One thread's state; on its stack, between bio_begin() and bio_end(). */
/* Copies gathered into one grouped call at most (16 x 64 KiB copies in one
 * call: 47.6 GB/s on the H200 machine, against 17.4 as separate copies). */
#define BIO_GROUP 16

struct bio_worker {
	bio_done_fn done;
	void *arg;
	struct prof_steps *steps; /* the profile's timeline of the items' job, or NULL */
	struct request_cache cache;
	struct ocf_lane *lane; /* held while device items are staged */
	struct ocf_gpu *gpu;   /* the lane's GPU; its primary context is current */
	bool dirty;            /* a CUDA failure: the lane's stream may hold copies */
	int cur;               /* buffer being filled */
	struct bio_buf buf[OCF_LANE_DEPTH];
	/* The run being staged in buf[cur]: items with one handle and
	 * direction whose file ranges follow each other; one pread or pwrite. */
	struct bio_item *run_first, *run_last;
	struct ocf_handle *run_h;
	bool run_write;
	off_t run_off;
	size_t run_len, run_pos, run_skew;
	/* Host-to-device copies of buf[cur] gathered for one grouped call
	 * (cuMemcpyBatchAsync): each copies the bytes of g_items[k] items
	 * from g_first[k] on. */
	int ng;
	CUdeviceptr g_dst[BIO_GROUP], g_src[BIO_GROUP];
	size_t g_len[BIO_GROUP];
	struct bio_item *g_first[BIO_GROUP];
	int g_items[BIO_GROUP];
	struct bio_item *done_head, *done_tail;
};

void bio_begin(struct bio_worker *w, bio_done_fn done, void *arg);
/* Takes one request; it completes (done()) now or later, at the latest in
 * bio_end().  The caller is an executor thread inside the driver gate. */
void bio_add(struct bio_worker *w, struct bio_item *it);
/* Reads what was taken since the last call now: the current run is closed
 * (its read done, its copies queued or gathered), so requests taken next
 * start a run of their own.  A batch thread calls it after each claim
 * (batch.c), so that it never goes on merging entries that other threads
 * could be reading meanwhile. */
void bio_close(struct bio_worker *w);
/* Finishes every request taken, releases the lane and the lookups. */
void bio_end(struct bio_worker *w);

#endif /* OCF_BATCH_IO_H_ */
