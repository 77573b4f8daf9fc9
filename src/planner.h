/* SPDX-License-Identifier: Apache-2.0 */
/*
 * planner.h - the one place a request's path is chosen (design in
 * planner.c).  Pure functions of values: a request, the facts of its handle
 * and file, a snapshot of the load and the settings in, the whole plan out.
 * Only the snapshot builders read live state (engine.c: plan_snapshot;
 * fileio.c: write_facts); the running code takes the plan's fields and
 * chooses nothing but the fallbacks listed in planner.c.
 */
#ifndef OCF_PLANNER_H_
#define OCF_PLANNER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------- requests */

/* The settings the request planner reads, resolved values. */
struct plan_settings {
	bool parallel_io;	 /* execution.parallel_io */
	size_t split_above;	 /* requests longer than this may get helpers (min_io_threshold_size_kb) */
	size_t min_chunk;	 /* the smallest chunk worth a helper (min_chunk_kb) */
	size_t alone_chunk;	 /* a lone caller's device read in up to three chunks of this (0: off) */
	size_t host_chunk;	 /* chunks of requests that take no lane (staging_chunk_kb) */
	int parallel_max;	 /* participants at once, every request together */
	int request_max;	 /* participants of one request */
	int lane_depth;		 /* staging buffers of a lane */
	size_t max_align;	 /* the largest O_DIRECT alignment a chunk boundary keeps */
	int stripes_max;	 /* stripes of one striped request */
	struct {
		size_t min_bytes, max_bytes; /* requests striped: min_bytes <= len <= max_bytes */
		size_t piece, stripe;	     /* bytes read at a time; copied at once */
		int participants;	     /* of one request, the caller included */
		int callers;		     /* striped while fewer callers than this are busy */
		uint64_t spin_ns;	     /* helpers of a short striped request poll this long after it */
		size_t spin_below_bytes;     /* short: below this */
		int spinners;		     /* helpers polling at once */
	} stripe;
};

/* Where a request's staging memory comes from. */
enum plan_pool {
	PLAN_POOL_NONE,	  /* none: host memory read and written in place, or a stream ring's slots */
	PLAN_POOL_DEVICE, /* the GPU's lanes */
	PLAN_POOL_HOST,	  /* the host pool's lanes (O_DIRECT or scattered host memory) */
};

/* The request and its handle, as values. */
struct plan_request {
	bool write;
	size_t len;
	off_t off;
	bool device;	  /* device memory (else host) */
	bool use_stream;  /* device memory the lanes copy with a stream (not a NULL-stream operation's) */
	bool vectored;	  /* cuFileReadv/cuFileWritev pieces */
	bool vec_staged;  /* vectored host memory that must be staged */
	bool ring;	  /* a stream operation: chunks fixed by its ring */
	size_t ring_chunk, ring_skew0, ring_nchunks;
	bool userspace_fs; /* a userspace file system's callbacks */
	bool odirect;	   /* the handle's descriptor is O_DIRECT */
	size_t align;	   /* the file's O_DIRECT alignment (1: none) */
	size_t piece_align; /* chunk boundaries a write keeps (2 MiB where it may store: fio_piece_align) */
};

/* The load when the request arrives. */
struct plan_load {
	int others;	     /* participants busy before this caller */
	int helpers;	     /* engine workers there are (-1: not asked; the planner says when to ask) */
	bool window_open;    /* a read-ahead window follows the handle */
	size_t lane_room;    /* bytes of one staging buffer of the request's pool (0: not asked) */
};

struct plan_in {
	struct plan_request rq;
	struct plan_load load;
	const struct plan_settings *set;
};

enum plan_path {
	PLAN_RING,    /* a stream operation's chunks, in the slots of its ring */
	PLAN_STRIPED, /* a device read of a few MiB, pieces read by several, copied in stripes */
	PLAN_SPLIT,   /* chunks shared with engine helpers */
	PLAN_ALONE,   /* the caller's own chunks */
};

struct plan_stripes {
	size_t chunk, skew0, nchunks; /* the pieces */
	size_t per_stripe, nstripes;
	bool spin; /* short: its helpers stay awake after it */
};

/* Facts the planner needs and the snapshot did not hold: the builder asks
 * for them and plans again. */
enum {
	PLAN_NEED_ROOM = 1,    /* load.lane_room of the pool named in `pool` */
	PLAN_NEED_HELPERS = 2, /* load.helpers: the engine's workers (the pool starts) */
};

struct plan_out {
	unsigned need;	    /* PLAN_NEED_*: ask, and plan again (nothing else is planned) */
	enum plan_pool pool;
	enum plan_path path;
	int helpers;	    /* engine helpers asked for */
	size_t chunk, skew0, nchunks;
	bool striped_beside; /* striped while other callers were busy */
	struct plan_stripes stripes; /* PLAN_STRIPED */
};

/* The whole plan of a request.  Where it needs a fact the snapshot lacks
 * (the staging size of the pool it chose, the number of workers), it says
 * so in `need` with the pool and plans nothing else: the caller asks for
 * them and plans again. */
void plan_request(const struct plan_in *in, struct plan_out *out);

/* Participants a request may have, the caller included. */
int plan_participants(const struct plan_request *rq, int request_max);

/* What the chunk size depends on besides the request's length. */
struct plan_chunk_shape {
	size_t max_chunk; /* the staging buffer's size (at least the alignment and 4 KiB) */
	size_t min_chunk; /* the smallest chunk worth a helper; read only with helpers */
	size_t skew0;	  /* the file offset's misalignment (chunk 0 ends there) */
	size_t align;	  /* chunk boundaries' alignment (at most max_chunk) */
	int helpers;	  /* helpers asked for, the caller not counted */
	bool lone;	  /* a device read whose caller is alone in the engine */
	size_t alone_chunk;
	int lane_depth;
};

/* The size of every chunk but the first (which is shorter by skew0). */
size_t plan_chunk(size_t len, const struct plan_chunk_shape *s);

/* --------------------------------------------------------------- writes */

/* What a write request finds (fileio.c, write_facts), as values. */
struct plan_wfacts {
	off_t off;
	size_t n;
	bool descriptor;     /* a handle of a descriptor (not a userspace file system) */
	bool wmap;	     /* the handle has a writable mapping of its file */
	bool odirect;	     /* the handle's descriptor is O_DIRECT */
	bool split;	     /* the engine means to give its pieces to several participants */
	bool limits_known;   /* the next two are known */
	off_t limit;	     /* RLIMIT_FSIZE (INT64_MAX: none) */
	bool in_place;	     /* the file system's reservations hold (a write then needs no block more) */
	bool size_known;     /* the rest are known only with it */
	off_t size;	     /* the file's size */
	bool hole;	     /* [off, min(end, size)) holds a hole somewhere */
	bool inside_known;   /* the next one is known */
	enum plan_inside {
		PLAN_INSIDE_NO,	   /* data on the disk only somewhere: a store's fault would read it */
		PLAN_INSIDE_READY, /* every page cached */
		PLAN_INSIDE_HOLE,  /* no data at all (or nothing inside the file) */
	} inside;	     /* of [off, min(end, size)) */
};

/* The facts a write's plan needs next, given those known so far: the
 * builder asks for them in this order and stops where it may. */
enum plan_wneed {
	PLAN_WNEED_NONE,   /* nothing more */
	PLAN_WNEED_LIMITS, /* limit and in_place */
	PLAN_WNEED_FILE,   /* the size and holes */
	PLAN_WNEED_INSIDE, /* what the part inside the file holds: cached, a hole, data on the disk */
};

/* What a write request does before its pieces, and how they run. */
struct plan_write {
	bool prepared;	   /* anything below applies (else: pieces as they come, nothing to undo) */
	bool serial;	   /* one piece after another in file order, none stored, no helper */
	off_t limit;	   /* where the request crosses RLIMIT_FSIZE (INT64_MAX: it does not) */
	bool reserve;	   /* reserve [reserve_lo, end) and extend the file to end first */
	off_t reserve_lo;
	bool stores;	   /* pieces may store through the mapping */
	bool ask_fs;	   /* before any store, ask whether the file system takes writes */
	off_t ready_lo, ready_hi; /* where pieces may store without asking (empty: lo >= hi) */
	off_t tail_off;	   /* the last bytes [tail_off, end) wait for the end (stores only) */
	size_t tail_len;
};

enum plan_wneed plan_write_needs(const struct plan_wfacts *f);
/* The write's plan from its facts.  If the reservation fails at run time,
 * the pieces are serial (plan_write_reservation_failed). */
void plan_write(const struct plan_wfacts *f, struct plan_write *w);
void plan_write_reservation_failed(struct plan_write *w);

/* Stores go only into the 2 MiB regions of the file a request writes
 * whole (and past end of file): the largest folio the page cache makes,
 * which a store's fault dirties whole. */
#define PLAN_FOLIO_MAX ((size_t)2 << 20)
/* Pieces of a buffered write below this size are one pwrite. */
#define PLAN_STORE_MIN ((size_t)64 << 10)
/* The request's last bytes held for the end, at most. */
#define PLAN_TAIL_MAX ((size_t)4096)

#endif /* OCF_PLANNER_H_ */
