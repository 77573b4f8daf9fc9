/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio.h - what the parts of gdsio share (private to the tool).
 *
 *   gdsio.c          options, usage, main, cuFileDriverOpen timing (-L)
 *   gdsio_sweep.c    one run (IO size x thread count): threads, clock, CPU
 *                    time; the sweep over every combination
 *   gdsio_worker.c   a worker's setup and teardown, the synchronous loop
 *                    (cuFileRead/Write, cuFileReadv/Writev, pread/pwrite)
 *   gdsio_batch.c    the grouped loops: cuFile*Async on a stream, cuFileBatchIO
 *   gdsio_pool.c     the pool loop (-q): requests cut into pieces that the
 *                    threads take from one shared queue, issued by the
 *                    threads themselves or by -Q caller threads
 *   gdsio_entries.c  the entries shape (-e): each entry its own new file and
 *                    buffer, moved in batches or by a pool of threads, in
 *                    rounds and phases (-I 1,0)
 *   gdsio_verify.c   the file pattern: test files, filling, checking
 *   gdsio_buffer.c   the memory types (-m) and host scratch
 *   gdsio_report.c   the banner, result lines, CSV and SVG
 *   gdsio_util.c     clocks, error texts, full pread/pwrite, histograms
 *
 * The options (o), the CUDA driver table (cu) and the names are set by main
 * before any worker starts and only read afterwards, so workers share them
 * without a lock.
 */
#ifndef OCF_TOOLS_GDSIO_H_
#define OCF_TOOLS_GDSIO_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cufile.h"
#include "cuda_dl.h"

enum xfer { X_GPUD = 0, X_CPU = 1, X_CPU_GPU = 2, X_ASYNC = 3, X_ASYNC_REG = 4, X_BATCH = 5 };
enum mem { M_DEVICE = 0, M_VMM = 1, M_PINNED = 2, M_MALLOC = 3, M_MMAP = 4 };
enum iotype { IO_READ = 0, IO_WRITE = 1, IO_RANDREAD = 2, IO_RANDWRITE = 3 };
/* -W: how a batch's completions are collected (cuFileBatchIOGetStatus). */
enum wait_style {
	WAIT_TIMED = 0, /* min_nr = outstanding, 100 ms timeouts until -t */
	WAIT_BLOCK,	/* min_nr = outstanding, NULL timeout: block until done */
	WAIT_POLL	/* min_nr 0, zero timeout: ask, never block */
};
/* Worker and run status, worst wins (ordered by severity). */
enum status {
	ST_OK = 0,
	ST_SKIPPED,
	ST_UNSUPPORTED,
	ST_INCOMPLETE,
	ST_TIMEOUT,
	ST_IOERR,
	ST_SETUP,
	ST_VERIFY
};
/* Exit statuses: 0 all runs ok, 1 a failure (I/O, verification, timeout,
 * incomplete), 2 usage, 3 the library does not support the transfer type. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_UNSUPPORTED = 3 };

extern const char *const status_name[];
extern const char *const xfer_name[];
extern const char *const mem_name[];
extern const char *const io_name[];
extern const char *const wait_name[];

#define MAX_LIST 64
#define VERIFY_CHUNK ((size_t)64 << 20)
#define POISON 0x5a

struct opts {
	const char *file, *dir;
	int gpu, mem, xfer, iotype;
	uint64_t size, offset;
	size_t ios[MAX_LIST];
	int nios;
	int threads[MAX_LIST];
	int nthreads;
	int skip_reg, verify, unaligned, odirect, sweep, prepare_only;
	int shared;   /* -A: one buffer of the data set's size shared by all threads */
	unsigned vec; /* -v: each op is a cuFileReadv/Writev of this many pieces (0: off) */
	size_t piece; /* -q: pool mode, each -i request cut into pieces of this size (0: off) */
	double duration, batch_timeout;
	unsigned seed;
	unsigned depth;	  /* -B: operations per async group / batch */
	unsigned batches; /* -H: batch handles in flight per thread */
	int wait_style;	  /* -W: enum wait_style */
	int scatter;	  /* -R: batch entries scattered in the file and in the buffer pool */
	const char *csv, *svg;
	int driver_open_runs;
	int newfile;	 /* -n: writes into a file made empty before each run */
	int mix;	 /* -M: one run whose ops take the -i sizes in turn */
	int fsync_end;	 /* -F: each worker fsyncs its file after its last op, inside the timing */
	int callers;	 /* -Q: caller threads issuing requests into the pool (0: the pool's own) */
	int entries;	 /* -e: entries, each its own new file in -D DIR and buffer (0: off) */
	unsigned rounds; /* -r: rounds of the entries (default 1) */
	int phases[2];	 /* -I with -e: the phases in order (e.g. 1,0: writes, then reads) */
	int nphases;
	double fresh_wait; /* -Y: seconds between writing the file and the timed reads */
	int fresh;	   /* -Y given */
};
extern struct opts o;

extern struct cuda_dl cu;
extern int have_cuda;
extern char cuda_why[512];
extern int is_tty;
/* Set when a batch or async group is abandoned with I/O still in flight:
 * the process then exits without tearing anything down. */
extern atomic_int abandon;

/* ---------------------------------------------------------- gdsio_util.c */

double now(void);
uint64_t now_ns(void);
const char *cufile_err(CUfileError_t e, char *buf, size_t len);
/* cuFileHandleRegister of descriptor fd (an OPAQUE_FD handle). */
CUfileError_t register_fd(int fd, CUfileHandle_t *fh);
const char *io_ret_str(ssize_t r, int err, char *buf, size_t len);
int full_pread(int fd, void *buf, size_t n, uint64_t off);
int full_pwrite(int fd, const void *buf, size_t n, uint64_t off);
uint64_t rng_next(uint64_t *s);

/* Latencies in ns.  Below 64 one bucket per ns; above, 32 buckets per power
 * of two (error under 3.2 %). */
#define HIST_N (64 + 58 * 32)

struct hist {
	uint64_t n[HIST_N];
	uint64_t count, sum_ns;
};

void hist_add(struct hist *h, uint64_t ns);
void hist_merge(struct hist *to, const struct hist *from);
double hist_pct_us(const struct hist *h, double p);

/* -------------------------------------------------------- gdsio_buffer.c */

struct buffer {
	int kind;  /* enum mem actually allocated */
	void *ptr; /* device address (as a pointer) or host address */
	size_t len;
	int on_device;
	CUmemGenericAllocationHandle vmm;
	size_t vmm_len;
};

int buffer_alloc(struct buffer *b, int kind, size_t len, int gpu, char *why, size_t whylen);
void buffer_free(struct buffer *b);
void *scratch_alloc(size_t len, int *pinned);
void scratch_free(void *p, int pinned);

/* ------------------------------------------------------ workers and runs */

struct run;

struct worker {
	struct run *run;
	int id;
	pthread_t th;
	const char *path;
	int fd, vfd, own_fd;
	CUfileHandle_t fh;
	int own_fh;
	uint64_t start, len, nops; /* region of the file and ops in one pass */
	struct buffer buf;	   /* with -A: a copy of the run's shared buffer */
	int registered;
	CUfileIOVec_t *iov; /* -v: the vector of one op */
	void *stage;	    /* -x 2: pinned bounce buffer */
	void *vhost;	    /* -V: host scratch */
	size_t vhost_len;
	int vhost_pinned, stage_pinned;
	CUcontext ctx;
	int ctx_held;
	CUstream stream;
	int stream_registered;
	CUfileBatchHandle_t *batch; /* -x 5: -H handles */
	unsigned nbatch;	    /* handles set up */
	uint64_t rng;
	uint64_t pattern_at; /* -e: file offset X holds the pattern of X + pattern_at */
	struct hist *hist;   /* per op */
	struct hist *bhist;  /* -x 5: per batch, submit to last completion; -q: per request */
	uint64_t bytes, ops;
	double t_end;
	_Atomic uint64_t progress; /* relaxed: only read for the progress line */
	int status;
	char msg[512];
};

/* -q: the shared queue of a run.  Piece tickets are drawn from `next` in
 * order; ticket g is piece g % npieces of request g / npieces.  Request r
 * may start once `avail` has reached r (every piece of the requests before
 * it done); `limit` is the number of requests that run (a pass, or with -T
 * set when the first request after the deadline would start). */
struct pool {
	uint64_t nreq;		   /* requests in one pass over the data set */
	uint64_t npieces;	   /* pieces per request */
	atomic_ullong next;	   /* relaxed: hands out tickets */
	atomic_ullong pieces_done; /* acq/rel: pieces completed, all requests */
	atomic_ullong avail;	   /* release by the finisher, acquire by takers */
	atomic_ullong limit;	   /* as avail */
	uint64_t t_start_ns;	   /* when request `avail` became available */
	pthread_mutex_t mu;	   /* with cv: takers wait here for `avail` (-Q: for pieces) */
	pthread_cond_t cv;
	/* -Q: the pieces the callers queued, first in first out (under mu). */
	struct qpiece *q;
	size_t qcap, qhead, qlen;
	int closed; /* under mu: every caller is done; takers leave once q is empty */
	struct caller *callers;
	int ncallers;
	atomic_int callers_left; /* acq/rel: callers still issuing requests */
};

/* -Q: a piece in the queue: PIECE bytes at file offset `off` into the
 * caller's buffer at byte `at`. */
struct qpiece {
	struct caller *c;
	uint64_t off;
	size_t at;
};

/* -Q: one caller thread.  It issues the requests of its own region of the
 * data set in order, each cut into pieces that it queues for the pool,
 * and waits until the pool has done them all (a pool's pread().get()). */
struct caller {
	struct run *run;
	int id;
	pthread_t th;
	struct buffer buf; /* one request's size, its own */
	int registered;
	uint64_t start, nreq; /* its region: nreq requests of the IO size from start */
	atomic_uint left;     /* acq/rel: pieces of its request not yet done */
	int done;	      /* under mu: the last piece of its request is done */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct hist *rhist; /* per request, from queueing to its last piece */
};

struct run {
	size_t io;
	int nthreads;
	struct worker *w;
	pthread_barrier_t ready, go, finished;
	atomic_int stop; /* relaxed: a hint to stop early, checked between ops */
	atomic_int done; /* acq/rel: counts workers past their last op */
	double t0, deadline;
	int fd, vfd;
	CUfileHandle_t fh;
	int fh_ok;
	struct buffer shared; /* -A, -q: allocated and registered once, for all threads */
	int shared_registered;
	struct pool pool; /* -q */
};

struct result {
	int threads;
	size_t io;
	uint64_t bytes, planned, ops;
	double secs, cpu_user, cpu_sys;
	struct hist h, bh; /* per op; per batch (-x 5) or request (-q) */
	int status;
	char msg[512];
	/* -e: the rounds of one phase, the first round's time and the median
	 * of the others' (0 with one round). */
	unsigned rounds;
	double first_round_us, later_round_us;
};

static inline int uses_cufile(int x)
{
	return x == X_GPUD || x == X_ASYNC || x == X_ASYNC_REG || x == X_BATCH;
}
static inline int is_write(void)
{
	return o.iotype == IO_WRITE || o.iotype == IO_RANDWRITE;
}
static inline int is_random(void)
{
	return o.iotype == IO_RANDREAD || o.iotype == IO_RANDWRITE;
}
static inline int group_mode(void)
{
	return o.xfer == X_ASYNC || o.xfer == X_ASYNC_REG || o.xfer == X_BATCH;
}
/* One buffer for the whole run instead of one per worker: -A (the data
 * set's size) or -q (one request's size; with -Q, each caller's own). */
static inline int run_buffer(void)
{
	return o.shared || o.piece;
}
/* A worker's buffer: one IO size per op it may have in flight (-q: one
 * piece, its part of the run's buffer). */
static inline size_t worker_buflen(size_t io)
{
	if (o.piece)
		return o.piece;
	if (!group_mode())
		return io;
	return io * o.depth * (o.xfer == X_BATCH ? o.batches : 1);
}

/* The memory type actually used: -x 1 moves bytes between the file and host
 * memory only, so device types fall back to malloc there. */
static inline int effective_mem(void)
{
	if (o.xfer == X_CPU && (o.mem == M_DEVICE || o.mem == M_VMM))
		return M_MALLOC;
	return o.mem;
}

/* -------------------------------------------------------- gdsio_worker.c */

void worker_fail(struct worker *w, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
uint64_t op_offset(struct worker *w, uint64_t k);
int keep_going(struct worker *w, uint64_t k, double t);
int do_io(struct worker *w, size_t at, uint64_t off, size_t n);
int resolve_vector_io(void);
void *worker_main(void *arg);

/* --------------------------------------------------------- gdsio_batch.c */

void loop_group(struct worker *w);

/* -x 5: one batch handle and the group it has in flight (loop_batch, and
 * each batch of a round of entries, gdsio_entries.c). */
struct slot {
	CUfileBatchHandle_t batch;
	size_t *ats;	 /* byte of the worker's buffer where each entry's buffer starts */
	unsigned n, got; /* entries submitted (0: idle), events collected */
	uint64_t k;	 /* the group's first op */
	int ready;	 /* complete and checked, its next group held back (would_lap) */
	uint64_t t0;	 /* ns, just before cuFileBatchIOSubmit */
	uint64_t *offs;
	ssize_t *rets;
	CUfileIOParams_t *params;
};

int batch_collect(struct worker *w, struct slot *s, CUfileIOEvents_t *events);

/* ------------------------------------------------------- gdsio_entries.c */

int entries_run(void);

/* ---------------------------------------------------------- gdsio_pool.c */

int pool_init(struct run *run);
void pool_fini(struct run *run);
void loop_pool(struct worker *w);
int callers_init(struct run *run, char *why, size_t whylen);
void callers_fini(struct run *run);
void *caller_main(void *arg);

/* -------------------------------------------------------- gdsio_verify.c */

int fill_buffer(struct worker *w, size_t at, uint64_t off, size_t len);
int poison_buffer(struct worker *w, size_t at, size_t len);
int verify_read(struct worker *w, size_t at, uint64_t off, size_t len);
int verify_write(struct worker *w, uint64_t off, size_t len);
void vec_piece(size_t io, unsigned j, size_t *foff, size_t *moff, size_t *len);
int write_fresh(void);
int per_op(int (*fn)(struct worker *, size_t, uint64_t, size_t), struct worker *w, size_t at, uint64_t off,
	   size_t n);
int prepare_file(const char *path, uint64_t need);

/* --------------------------------------------------------- gdsio_sweep.c */

void file_for_thread(char *buf, size_t len, int t);
int sweep(void);

/* -------------------------------------------------------- gdsio_report.c */

void print_banner(void);
void print_result(const struct result *r);
void csv_header(FILE *f);
void csv_row(FILE *f, const struct result *r);
int write_svg(const char *path, const struct result *res, int nres);

#endif /* OCF_TOOLS_GDSIO_H_ */
