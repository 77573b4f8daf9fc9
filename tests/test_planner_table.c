/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The planner's table (src/planner.c, compiled in): every row a case - a
 * request or a write, with the handle's facts, the load and the settings -
 * and the whole plan expected for it.  Among the rows: the shapes client
 * libraries issue (a pool thread's 4 MiB piece of a larger read on an
 * O_DIRECT handle with seven other callers in flight, 16 callers of 64 KiB,
 * one 4 GiB read, a stream operation, NIXL's writes into new files), and
 * rows on both sides of every threshold the planner reads.
 *
 *   test_planner_table             check every row
 *   test_planner_table --markdown  print the table as docs/architecture.md
 *                                  shows it (the ctest entry
 *                                  test_planner_table_matches_the_docs
 *                                  compares the two)
 *
 * Built a second time with OCF_PLAN_MUTATION=k (k = 1..5: one rule of the
 * planner flipped each), the check must fail: the table catches a changed
 * rule (the *_mutation_k entries, expected to fail).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define GIB (KIB * MIB)
#define NO_LIMIT ((off_t)INT64_MAX)

/* The defaults on a machine of 16 CPUs: 16 workers, 16 participants at
 * once, 4 per request (execution.max_request_parallelism), requests above
 * 8 MiB split (min_io_threshold_size_kb), chunks of at least 1 MiB
 * (min_chunk_kb), 2 MiB staging, the striped path's defaults. */
static const struct plan_settings defaults = {
    .parallel_io = true,
    .split_above = 8 * MIB,
    .min_chunk = 1 * MIB,
    .alone_chunk = 256 * KIB,
    .host_chunk = 2 * MIB,
    .parallel_max = 16,
    .request_max = 4,
    .lane_depth = 3,
    .max_align = 64 * KIB,
    .stripes_max = 32,
    .stripe = {.min_bytes = 1 * MIB,
	       .max_bytes = 8 * MIB,
	       .piece = 256 * KIB,
	       .stripe = 2 * MIB,
	       .participants = 8,
	       .callers = 4,
	       .spin_ns = 50000,
	       .spin_below_bytes = 2 * MIB,
	       .spinners = 2},
};

/* Variants of the defaults (main fills them in). */
static struct plan_settings no_parallel, pmax3;

/* ------------------------------------------------------------- requests */

/* A device read through a buffered handle (4 KiB alignment), 16 workers,
 * 2 MiB staging: the request and the load of such a row. */
#define DEV_READ(LEN, OFF, OTHERS, WINDOW)                                                                     \
	{.len = (LEN), .off = (OFF), .device = true, .use_stream = true, .align = 4096, .piece_align = 4096},     \
	{                                                                                                       \
		.others = (OTHERS), .helpers = 16, .window_open = (WINDOW), .lane_room = 2 * MIB                \
	}

struct req_row {
	const char *name;
	struct plan_request rq;
	struct plan_load load;
	const struct plan_settings *set; /* NULL: defaults */
	const char *want;		 /* the whole plan, as print_request_plan writes it */
};

static const char *const pools[] = {"none", "device", "host"};
static const char *const paths[] = {"ring", "striped", "split", "alone"};

static const struct req_row req_rows[] = {
    /* A client library's pool (KvikIO): each thread reads a 4 MiB piece
     * of a larger request, through an O_DIRECT handle. */
    {"pool thread's 4 MiB piece, O_DIRECT, 7 other callers in flight",
     {.len = 4 * MIB, .device = true, .use_stream = true, .odirect = true, .align = 4096, .piece_align = 4096},
     {.others = 7, .helpers = 16, .lane_room = 2 * MIB}, NULL, "alone, staging: device, 2 chunks of 2048 KiB"},
    {"pool thread's 4 MiB piece, O_DIRECT, alone",
     {.len = 4 * MIB, .device = true, .use_stream = true, .odirect = true, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "striped, staging: device, 7 helpers, 16 chunks of 256 KiB, 2 stripes of 8 pieces"},
    /* The striped path: callers busy, a read-ahead window. */
    {"4 MiB read, 3 other callers, no window", DEV_READ(4 * MIB, 0, 3, false), NULL, "striped, staging: device, 7 helpers, 16 chunks of 256 KiB, 2 stripes of 8 pieces, beside other callers"},
    {"4 MiB read, 3 other callers, a window open", DEV_READ(4 * MIB, 0, 3, true), NULL, "alone, staging: device, 2 chunks of 2048 KiB"},
    {"4 MiB read, 4 other callers (stripe.callers)", DEV_READ(4 * MIB, 0, 4, false), NULL, "alone, staging: device, 2 chunks of 2048 KiB"},
    {"4 MiB read, alone, a window open", DEV_READ(4 * MIB, 0, 0, true), NULL, "striped, staging: device, 7 helpers, 16 chunks of 256 KiB, 2 stripes of 8 pieces"},
    {"4 MiB read, 2 other callers, parallel_max 3: no participant left", DEV_READ(4 * MIB, 0, 2, false), &pmax3, "alone, staging: device, 2 chunks of 2048 KiB"},
    /* The striped path's size bounds (1 MiB, 8 MiB) and the split
     * threshold (above 8 MiB). */
    {"1 MiB - 1 read, alone: three even chunks", DEV_READ(1 * MIB - 1, 0, 0, false), NULL, "alone, staging: device, 3 chunks of 344 KiB"},
    {"1 MiB read, alone: striped, short (helpers poll after)", DEV_READ(1 * MIB, 0, 0, false), NULL, "striped, staging: device, 7 helpers, 3 chunks of 344 KiB, 2 stripes of 2 pieces, helpers poll after it"},
    {"8 MiB read, alone: striped", DEV_READ(8 * MIB, 0, 0, false), NULL, "striped, staging: device, 7 helpers, 32 chunks of 256 KiB, 4 stripes of 8 pieces"},
    {"8 MiB + 4 KiB read, alone: split", DEV_READ(8 * MIB + 4 * KIB, 0, 0, false), NULL, "split, staging: device, 3 helpers, 9 chunks of 1024 KiB"},
    {"16 MiB read, alone (a loader thread)", DEV_READ(16 * MIB, 0, 0, false), NULL, "split, staging: device, 7 helpers, 16 chunks of 1024 KiB"},
    {"16 MiB read at 4 KiB + 1, alone", DEV_READ(16 * MIB, 4097, 0, false), NULL, "split, staging: device, 7 helpers, 17 chunks of 1024 KiB (the first 1 byte shorter)"},
    {"16 MiB read, 7 other callers (8 loader threads)", DEV_READ(16 * MIB, 0, 7, false), NULL, "split, staging: device, 7 helpers, 16 chunks of 1024 KiB"},
    {"4 GiB read, alone (one call for the whole file)", DEV_READ(4 * GIB, 0, 0, false), NULL, "split, staging: device, 15 helpers, 2048 chunks of 2048 KiB"},
    {"64 KiB read, 15 other callers (16 callers x 64 KiB)", DEV_READ(64 * KIB, 0, 15, false), NULL, "alone, staging: device, 1 chunk of 2048 KiB"},
    {"64 KiB read, alone", DEV_READ(64 * KIB, 0, 0, false), NULL, "alone, staging: device, 1 chunk of 2048 KiB"},
    {"256 KiB read, alone: the lone chunk's size", DEV_READ(256 * KIB, 0, 0, false), NULL, "alone, staging: device, 1 chunk of 2048 KiB"},
    {"512 KiB read, alone: two lone chunks", DEV_READ(512 * KIB, 0, 0, false), NULL, "alone, staging: device, 2 chunks of 256 KiB"},
    /* Host memory. */
    {"16 MiB host read, buffered handle: in place, split",
     {.len = 16 * MIB, .align = 4096, .piece_align = 4096}, {.others = 0, .helpers = 16}, NULL, "split, staging: none, 7 helpers, 16 chunks of 1024 KiB"},
    {"8 MiB host read, buffered handle: at the split threshold", {.len = 8 * MIB, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16}, NULL, "alone, staging: none, 4 chunks of 2048 KiB"},
    {"8 MiB + 1 host read, buffered handle: above it", {.len = 8 * MIB + 1, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16}, NULL, "split, staging: none, 3 helpers, 9 chunks of 1024 KiB"},
    {"16 MiB host read, O_DIRECT: the host pool",
     {.len = 16 * MIB, .odirect = true, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "split, staging: host, 7 helpers, 16 chunks of 1024 KiB"},
    {"host readv of 4 pieces, 1 MiB, staged",
     {.len = 1 * MIB, .vectored = true, .vec_staged = true, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "alone, staging: host, 1 chunk of 2048 KiB"},
    /* A stream operation: the ring's chunks. */
    {"16 MiB cuFileReadAsync: its ring's 16 chunks",
     {.len = 16 * MIB, .device = true, .use_stream = true, .ring = true, .ring_chunk = 1 * MIB, .ring_nchunks = 16,
      .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16}, NULL, "ring, staging: none, 15 helpers, 16 chunks of 1024 KiB"},
    {"4 MiB cuFileReadAsync: below the split threshold",
     {.len = 4 * MIB, .device = true, .use_stream = true, .ring = true, .ring_chunk = 1 * MIB, .ring_nchunks = 4,
      .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16}, NULL, "ring, staging: none, 4 chunks of 1024 KiB"},
    /* Writes. */
    {"16 MiB device write, alone, may store (2 MiB pieces)",
     {.write = true, .len = 16 * MIB, .device = true, .use_stream = true, .align = 4096, .piece_align = 2 * MIB},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "split, staging: device, 7 helpers, 8 chunks of 2048 KiB"},
    {"16 MiB device write at 1 MiB + 5, alone, may store",
     {.write = true, .len = 16 * MIB, .off = 1 * MIB + 5, .device = true, .use_stream = true, .align = 4096,
      .piece_align = 2 * MIB},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "split, staging: device, 7 helpers, 9 chunks of 2048 KiB (the first 1048581 bytes shorter)"},
    {"16 MiB device write, 7 other callers (8 writers of one file)",
     {.write = true, .len = 16 * MIB, .device = true, .use_stream = true, .align = 4096, .piece_align = 2 * MIB},
     {.others = 7, .helpers = 16, .lane_room = 2 * MIB}, NULL, "split, staging: device, 7 helpers, 8 chunks of 2048 KiB"},
    {"10 MiB device write, O_DIRECT, alone (a new file per entry)",
     {.write = true, .len = 10 * MIB, .device = true, .use_stream = true, .odirect = true, .align = 4096,
      .piece_align = 4096},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "split, staging: device, 4 helpers, 10 chunks of 1024 KiB"},
    {"1 MiB device write, alone", {.write = true, .len = 1 * MIB, .device = true, .use_stream = true, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "alone, staging: device, 1 chunk of 2048 KiB"},
    /* Settings that turn a choice off. */
    {"16 MiB read, a userspace file system", {.len = 16 * MIB, .device = true, .use_stream = true, .userspace_fs = true, .align = 1, .piece_align = 1},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "alone, staging: device, 8 chunks of 2048 KiB"},
    {"16 MiB read, execution.parallel_io false", DEV_READ(16 * MIB, 0, 0, false), &no_parallel, "alone, staging: device, 8 chunks of 2048 KiB"},
    {"a device read on a NULL-stream operation's thread (no stream)",
     {.len = 4 * MIB, .device = true, .use_stream = false, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16, .lane_room = 2 * MIB}, NULL, "alone, staging: device, 3 chunks of 1368 KiB"},
    /* Facts the snapshot lacks: asked for. */
    {"16 MiB read, workers not asked yet", {.len = 16 * MIB, .device = true, .use_stream = true, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = -1, .lane_room = 2 * MIB}, NULL, "ask for the workers, plan again"},
    {"16 MiB read, staging size not asked yet", {.len = 16 * MIB, .device = true, .use_stream = true, .align = 4096, .piece_align = 4096},
     {.others = 0, .helpers = 16, .lane_room = 0}, NULL, "ask for the staging size, plan again"},
};

/* --------------------------------------------------------------- writes */

/* A write's facts: where, how much, split, the handle's mapping, the
 * limit, whether the file system's reservations hold, and the file's size
 * (-1: unknown).  The rest (holes, what the part inside the file holds)
 * the rows add. */
#define W(OFF, N, SPLIT, WMAP, LIMIT, INPLACE, SIZE)                                                         \
	.off = (OFF), .n = (N), .descriptor = true, .wmap = (WMAP), .split = (SPLIT), .limits_known = true,   \
	.limit = (LIMIT), .in_place = (INPLACE), .size_known = (SIZE) >= 0, .size = (SIZE) >= 0 ? (SIZE) : 0

struct write_row {
	const char *name;
	struct plan_wfacts f;
	bool reservation_fails; /* at run time: the plan's fallback */
	const char *want;	/* the whole plan and the facts asked, as print_write_plan writes them */
};

static const struct write_row write_rows[] = {
    {"16 MiB into a new file, one caller (checkpoint save)", {W(0, 16 * MIB, true, true, NO_LIMIT, true, 0)}, false, "parallel, reserve from 0, stores ready over [0, 16 MiB), last 4096 bytes held; asked: limits file"},
    {"16 MiB into a new file, not split (one of 8 writers)", {W(0, 16 * MIB, false, true, NO_LIMIT, true, 0)}, false, "parallel, reserve from 0, stores ready over [0, 16 MiB), last 4096 bytes held; asked: limits file"},
    {"16 MiB at 16 MiB, past the end of a 4 MiB file", {W(16 * MIB, 16 * MIB, false, true, NO_LIMIT, true, 4 * MIB)}, false, "parallel, reserve from 16 MiB, stores ready over [16 MiB, 32 MiB), last 4096 bytes held; asked: limits file"},
    {"16 MiB over cached pages of a 32 MiB file",
     {W(0, 16 * MIB, false, true, NO_LIMIT, true, 32 * MIB), .inside = PLAN_INSIDE_READY}, false, "parallel, stores ready over [0, 16 MiB), last 4096 bytes held, ask the file system first; asked: limits file inside"},
    {"16 MiB over a 32 MiB file, data on the disk only",
     {W(0, 16 * MIB, false, true, NO_LIMIT, true, 32 * MIB), .inside = PLAN_INSIDE_NO}, false, "parallel, stores, last 4096 bytes held, ask the file system first; asked: limits file inside"},
    {"16 MiB over a hole of a 32 MiB file",
     {W(0, 16 * MIB, false, true, NO_LIMIT, true, 32 * MIB), .hole = true, .inside = PLAN_INSIDE_HOLE}, false, "parallel, reserve from 0, stores ready over [0, 16 MiB), last 4096 bytes held; asked: limits file inside"},
    {"24 MiB over a 2 MiB hole then data, all cached (zeros over the hole)",
     {W(0, 24 * MIB, true, true, NO_LIMIT, true, 24 * MIB), .hole = true, .inside = PLAN_INSIDE_READY}, false, "parallel, reserve from 0, stores ready over [0, 24 MiB), last 4096 bytes held; asked: limits file inside"},
    {"24 MiB over a 2 MiB hole then data on the disk",
     {W(0, 24 * MIB, true, true, NO_LIMIT, true, 24 * MIB), .hole = true, .inside = PLAN_INSIDE_NO}, false, "parallel, reserve from 0, stores, last 4096 bytes held; asked: limits file inside"},
    {"the same, the reservation refused (a full disk)",
     {W(0, 24 * MIB, true, true, NO_LIMIT, true, 24 * MIB), .hole = true, .inside = PLAN_INSIDE_NO}, true, "serial; asked: limits file inside"},
    {"16 MiB into a new file, the reservation refused", {W(0, 16 * MIB, true, true, NO_LIMIT, true, 0)}, true, "serial; asked: limits file"},
    {"16 MiB at 0, RLIMIT_FSIZE 8 MiB", {W(0, 16 * MIB, true, true, 8 * MIB, true, 0)}, false, "serial, cut at 8 MiB; asked: limits"},
    {"16 MiB at 0, RLIMIT_FSIZE 16 MiB", {W(0, 16 * MIB, true, true, 16 * MIB, true, 0)}, false, "parallel, reserve from 0, stores ready over [0, 16 MiB), last 4096 bytes held; asked: limits file"},
    {"16 MiB at 0, RLIMIT_FSIZE 16 MiB - 1", {W(0, 16 * MIB, true, true, 16 * MIB - 1, true, 0)}, false, "serial, cut at 16777215; asked: limits"},
    {"16 MiB, split, on btrfs (reservations do not hold)", {W(0, 16 * MIB, true, false, NO_LIMIT, false, 0)}, false, "serial; asked: limits"},
    {"16 MiB, the size unknown (statx failed)", {W(0, 16 * MIB, true, true, NO_LIMIT, true, -1)}, false, "serial; asked: limits file"},
    {"64 KiB at a 2 MiB boundary, the end of file", {W(2 * MIB, 64 * KIB, false, true, NO_LIMIT, true, 2 * MIB)}, false, "parallel, reserve from 2 MiB, stores ready over [2 MiB, 2112 KiB), last 4096 bytes held; asked: limits file"},
    {"64 KiB - 1 at a 2 MiB boundary, the end of file", {W(2 * MIB, 64 * KIB - 1, false, true, NO_LIMIT, true, 2 * MIB)}, false, "nothing to prepare: pieces as they come; asked: nothing"},
    {"64 KiB at a 2 MiB boundary inside a file (a KV block)", {W(2 * MIB, 64 * KIB, false, true, NO_LIMIT, true, GIB)}, false, "parallel; asked: limits file"},
    {"1 MiB at 1 MiB (KV 1 MiB calls), not split", {W(1 * MIB, 1 * MIB, false, true, NO_LIMIT, true, 0)}, false, "nothing to prepare: pieces as they come; asked: nothing"},
    {"2 MiB + 64 KiB from 64 KiB before a boundary, cached, inside",
     {W(2 * MIB - 64 * KIB, 2 * MIB + 64 * KIB, false, true, NO_LIMIT, true, 8 * MIB), .inside = PLAN_INSIDE_READY}, false, "parallel, stores ready over [1984 KiB, 4 MiB), last 4096 bytes held, ask the file system first; asked: limits file inside"},
    {"4 MiB from 64 KiB before a boundary, cached, inside",
     {W(2 * MIB - 64 * KIB, 4 * MIB, false, true, NO_LIMIT, true, 8 * MIB), .inside = PLAN_INSIDE_READY}, false, "parallel, stores ready over [1984 KiB, 6080 KiB), last 4096 bytes held, ask the file system first; asked: limits file inside"},
    {"10 MiB, O_DIRECT, into a new file (NIXL's O_DIRECT mode)", {W(0, 10 * MIB, false, false, NO_LIMIT, true, 0), .odirect = true}, false, "parallel, reserve from 0; asked: limits file"},
    {"16 MiB, O_DIRECT, over written blocks", {W(0, 16 * MIB, false, false, NO_LIMIT, true, 32 * MIB), .odirect = true}, false, "parallel; asked: limits file"},
    {"16 MiB, O_WRONLY (no mapping), split, over written blocks", {W(0, 16 * MIB, true, false, NO_LIMIT, true, 32 * MIB)}, false, "parallel; asked: limits file"},
    {"16 MiB, O_WRONLY (no mapping), not split", {W(0, 16 * MIB, false, false, NO_LIMIT, true, 32 * MIB)}, false, "nothing to prepare: pieces as they come; asked: nothing"},
    {"16 MiB, a userspace file system", {.off = 0, .n = 16 * MIB, .descriptor = false, .split = true}, false, "nothing to prepare: pieces as they come; asked: nothing"},
};

/* -------------------------------------------------------------- checking */

static unsigned failures;

static const struct plan_settings *settings_of(const struct req_row *r)
{
	return r->set ? r->set : &defaults;
}

static void plan_of(const struct req_row *r, struct plan_out *out)
{
	struct plan_in in = {.rq = r->rq, .load = r->load, .set = settings_of(r)};
	plan_request(&in, out);
}

static bool same_request_plan(const struct plan_out *a, const struct plan_out *b)
{
	return a->need == b->need && a->pool == b->pool && a->path == b->path && a->helpers == b->helpers &&
	       a->chunk == b->chunk && a->skew0 == b->skew0 && a->nchunks == b->nchunks &&
	       a->striped_beside == b->striped_beside && a->stripes.chunk == b->stripes.chunk &&
	       a->stripes.skew0 == b->stripes.skew0 && a->stripes.nchunks == b->stripes.nchunks &&
	       a->stripes.per_stripe == b->stripes.per_stripe && a->stripes.nstripes == b->stripes.nstripes &&
	       a->stripes.spin == b->stripes.spin;
}

static void print_request_plan(FILE *f, const struct plan_out *p)
{
	if (p->need) {
		fprintf(f, "ask for%s%s, plan again", p->need & PLAN_NEED_ROOM ? " the staging size" : "",
			p->need & PLAN_NEED_HELPERS ? " the workers" : "");
		return;
	}
	fprintf(f, "%s, staging: %s", paths[p->path], pools[p->pool]);
	if (p->helpers)
		fprintf(f, ", %d helper%s", p->helpers, p->helpers > 1 ? "s" : "");
	fprintf(f, ", %zu chunk%s of %zu KiB", p->nchunks, p->nchunks > 1 ? "s" : "", p->chunk / KIB);
	if (p->chunk % KIB)
		fprintf(f, " + %zu", p->chunk % KIB);
	if (p->skew0)
		fprintf(f, " (the first %zu byte%s shorter)", p->skew0, p->skew0 > 1 ? "s" : "");
	if (p->path == PLAN_STRIPED)
		fprintf(f, ", %zu stripe%s of %zu pieces%s", p->stripes.nstripes, p->stripes.nstripes > 1 ? "s" : "",
			p->stripes.per_stripe, p->stripes.spin ? ", helpers poll after it" : "");
	if (p->striped_beside)
		fprintf(f, ", beside other callers");
}

/* The write's facts as the builder (fileio.c, write_facts) gathers them:
 * only those plan_write_needs asks for, from the row's; which were asked
 * (a bit per kind) in *asked. */
static struct plan_wfacts gathered(const struct plan_wfacts *all, unsigned *asked)
{
	struct plan_wfacts f = {.off = all->off,
				.n = all->n,
				.descriptor = all->descriptor,
				.wmap = all->wmap,
				.odirect = all->odirect,
				.split = all->split,
				.limit = NO_LIMIT};
	*asked = 0;
	for (enum plan_wneed need; (need = plan_write_needs(&f)) != PLAN_WNEED_NONE;) {
		if (*asked & (1u << need)) {
			fprintf(stderr, "FAIL: plan_write_needs asks for %d twice\n", (int)need);
			failures++;
			break;
		}
		*asked |= 1u << need;
		if (need == PLAN_WNEED_LIMITS) {
			f.limits_known = all->limits_known;
			f.limit = all->limit;
			f.in_place = all->in_place;
			if (!f.limits_known)
				break;
		} else if (need == PLAN_WNEED_FILE) {
			f.size_known = all->size_known;
			f.size = all->size;
			f.hole = all->hole;
			if (!f.size_known)
				break;
		} else {
			f.inside_known = true;
			f.inside = all->inside;
		}
	}
	return f;
}

static void write_plan_of(const struct write_row *r, struct plan_write *w, unsigned *asked)
{
	struct plan_wfacts f = gathered(&r->f, asked);
	plan_write(&f, w);
	if (r->reservation_fails && w->reserve)
		plan_write_reservation_failed(w);
}

static bool same_write_plan(const struct plan_write *a, const struct plan_write *b)
{
	return a->prepared == b->prepared && a->serial == b->serial && a->limit == b->limit &&
	       a->reserve == b->reserve && (!a->reserve || a->reserve_lo == b->reserve_lo) && a->stores == b->stores &&
	       a->ask_fs == b->ask_fs && a->ready_lo == b->ready_lo && a->ready_hi == b->ready_hi &&
	       a->tail_off == b->tail_off && a->tail_len == b->tail_len;
}

static void print_bytes(FILE *f, off_t v)
{
	if (v == 0)
		fprintf(f, "0");
	else if (v % (off_t)MIB == 0)
		fprintf(f, "%lld MiB", (long long)(v / (off_t)MIB));
	else if (v % (off_t)KIB == 0)
		fprintf(f, "%lld KiB", (long long)(v / (off_t)KIB));
	else
		fprintf(f, "%lld", (long long)v);
}

static void print_write_plan(FILE *f, const struct plan_write *w, unsigned asked)
{
	if (!w->prepared) {
		fprintf(f, "nothing to prepare: pieces as they come");
	} else {
		fprintf(f, "%s", w->serial ? "serial" : "parallel");
		if (w->limit != NO_LIMIT) {
			fprintf(f, ", cut at ");
			print_bytes(f, w->limit);
		}
		if (w->reserve) {
			fprintf(f, ", reserve from ");
			print_bytes(f, w->reserve_lo);
		}
		if (w->stores) {
			fprintf(f, ", stores");
			if (w->ready_lo < w->ready_hi) {
				fprintf(f, " ready over [");
				print_bytes(f, w->ready_lo);
				fprintf(f, ", ");
				print_bytes(f, w->ready_hi);
				fprintf(f, ")");
			}
			fprintf(f, ", last %zu bytes held", w->tail_len);
		}
		if (w->ask_fs)
			fprintf(f, ", ask the file system first");
	}
	fprintf(f, "; asked:%s%s%s%s", asked & (1u << PLAN_WNEED_LIMITS) ? " limits" : "",
		asked & (1u << PLAN_WNEED_FILE) ? " file" : "", asked & (1u << PLAN_WNEED_INSIDE) ? " inside" : "",
		asked ? "" : " nothing");
}

/* ------------------------------------------------------------------ main */

static void print_string(FILE *f, void (*fn)(FILE *, const void *), const void *arg, char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");
	if (!m) {
		perror("fmemopen");
		exit(2);
	}
	fn(m, arg);
	fclose(m);
	(void)f;
}

struct write_printed {
	const struct plan_write *w;
	unsigned asked;
};

static void request_printer(FILE *f, const void *arg) { print_request_plan(f, arg); }
static void write_printer(FILE *f, const void *arg)
{
	const struct write_printed *p = arg;
	print_write_plan(f, p->w, p->asked);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	no_parallel = defaults;
	no_parallel.parallel_io = false;
	pmax3 = defaults;
	pmax3.parallel_max = 3;
	bool markdown = !strcmp(mode, "--markdown"), emit = !strcmp(mode, "--emit");
	char got[512];
	if (markdown) {
		printf("| request (16 workers, 2 MiB staging, the defaults) | plan |\n| --- | --- |\n");
	}
	for (size_t i = 0; i < sizeof(req_rows) / sizeof(req_rows[0]); i++) {
		const struct req_row *r = &req_rows[i];
		struct plan_out out;
		plan_of(r, &out);
		print_string(stdout, request_printer, &out, got, sizeof(got));
		if (emit)
			printf("R %zu \"%s\"\n", i, got);
		else if (markdown)
			printf("| %s | %s |\n", r->name, got);
		else if (strcmp(got, r->want)) {
			fprintf(stderr, "FAIL request \"%s\":\n  got  %s\n  want %s\n", r->name, got, r->want);
			failures++;
		}
		/* The plan does not depend on anything the row did not give: the
		 * same inputs, the same plan. */
		struct plan_out again;
		plan_of(r, &again);
		if (!same_request_plan(&out, &again)) {
			fprintf(stderr, "FAIL request \"%s\": two plans of the same inputs differ\n", r->name);
			failures++;
		}
	}
	if (markdown)
		printf("\n| write (a buffered handle with a mapping on ext4 unless said) | plan; facts asked |\n| --- | --- |\n");
	for (size_t i = 0; i < sizeof(write_rows) / sizeof(write_rows[0]); i++) {
		const struct write_row *r = &write_rows[i];
		struct plan_write w;
		unsigned asked;
		write_plan_of(r, &w, &asked);
		struct write_printed wp = {&w, asked};
		print_string(stdout, write_printer, &wp, got, sizeof(got));
		if (emit)
			printf("W %zu \"%s\"\n", i, got);
		else if (markdown)
			printf("| %s%s | %s |\n", r->name, r->reservation_fails ? "" : "", got);
		else if (strcmp(got, r->want)) {
			fprintf(stderr, "FAIL write \"%s\":\n  got  %s\n  want %s\n", r->name, got, r->want);
			failures++;
		}
		/* The facts the builder gathers give the plan all the facts give. */
		struct plan_write full;
		plan_write(&r->f, &full);
		if (r->reservation_fails && full.reserve)
			plan_write_reservation_failed(&full);
		if (!same_write_plan(&w, &full)) {
			fprintf(stderr, "FAIL write \"%s\": the facts asked for give another plan than all facts\n", r->name);
			failures++;
		}
	}
	if (emit || markdown)
		return 0;
	size_t rows = sizeof(req_rows) / sizeof(req_rows[0]) + sizeof(write_rows) / sizeof(write_rows[0]);
	printf("%zu rows, %u failing\n", rows, failures);
	return failures ? 1 : 0;
}
