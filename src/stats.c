/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.c - statistics counters.
 *
 * DESIGN: every thread that counts gets its own block of counters, found
 * through a thread-local pointer and registered once in a global list; only
 * the owner thread ever writes a block, so a count is a plain load and
 * store (no locked instruction, no shared cache line on the I/O path).  The
 * getters sum all blocks.  A block outlives its thread: at thread exit it is
 * marked free and the next new thread takes it over, counts included (the
 * getters want sums, so whose block holds a count does not matter).
 *
 * Reset cannot clear blocks other threads write, so it records the current
 * sums as a baseline that the getters subtract.
 *
 * Memory order: the counters are independent statistics.  Relaxed atomic
 * loads/stores make the concurrent reads by the getters well defined and
 * compile to plain moves; a snapshot may see an operation counted in one
 * field and not yet in the next, which is acceptable for statistics.
 */
#define _GNU_SOURCE
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_loader.h"
#include "internal.h"
#include "log.h"

enum {
	C_READ_OK,
	C_READ_ERR,
	C_WRITE_OK,
	C_WRITE_ERR,
	C_HREG_OK,
	C_HREG_ERR,
	C_HDEREG_OK,
	C_HDEREG_ERR,
	C_BREG_OK,
	C_BREG_ERR,
	C_BDEREG_OK,
	C_BDEREG_ERR,
	C_READ_BYTES,
	C_WRITE_BYTES,
	C_READ_NS,
	C_WRITE_NS,
	/* batch I/O (batch.c): calls, entries and their bytes and latency */
	C_BSETUP_OK,
	C_BSETUP_ERR,
	C_BSUBMIT_OK,
	C_BSUBMIT_ERR,
	C_BCANCEL_OK,
	C_BCANCEL_ERR,
	C_BDESTROY_OK,
	C_BDESTROY_ERR,
	C_BCOMPLETE_OK, /* entries completed (short at EOF included) */
	C_BCOMPLETE_ERR, /* entries failed or cancelled */
	C_BENQUEUED,
	C_BREAD_BYTES,
	C_BWRITE_BYTES,
	C_BSUBMIT_NS,
	C_BCOMPLETE_NS, /* submission to completion, summed over entries */
	/* cuFileReadv/cuFileWritev */
	C_READV_OK,
	C_READV_ERR,
	C_WRITEV_OK,
	C_WRITEV_ERR,
	C_READV_BYTES,
	C_WRITEV_BYTES,
	C_READV_NS,
	C_WRITEV_NS,
	/* stream operations (also counted as reads and writes) */
	C_SREAD_OK,
	C_SREAD_ERR,
	C_SWRITE_OK,
	C_SWRITE_ERR,
	C_SREAD_BYTES,
	C_SWRITE_BYTES,
	C_COUNT
};

enum {
	G_READ_BYTES,
	G_READ_NS,
	G_READS,
	G_READS_ERR,
	G_READS_UNALIGNED,
	G_WRITE_BYTES,
	G_WRITE_NS,
	G_WRITES,
	G_WRITES_ERR,
	G_WRITES_UNALIGNED,
	G_COUNT
};

struct sums {
	uint64_t c[C_COUNT];
	uint64_t rhist[32], whist[32];
	uint64_t g[OCF_STATS_MAX_GPUS][G_COUNT];
};

struct block {
	struct block *next; /* immutable once listed */
	bool in_use;        /* protected by blocks_lock */
	struct sums s;
};

/* blocks_lock protects the list's membership, in_use, baseline and
 * window_start. */
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *blocks;
static struct sums baseline;
static uint64_t window_start;
static pthread_key_t block_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct block *my_block;

/* Relaxed: a filter read on every I/O; a change takes effect within a few
 * operations, which is all statistics need. */
static atomic_int cur_level;
static atomic_bool running = true;
static atomic_bool level_from_api;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void release_block(void *p)
{
	struct block *b = p;
	pthread_mutex_lock(&blocks_lock);
	b->in_use = false;
	pthread_mutex_unlock(&blocks_lock);
}

static bool key_made;
static void make_key(void) { key_made = pthread_key_create(&block_key, release_block) == 0; }

static struct block *get_block(void)
{
	struct block *b = my_block;
	if (b)
		return b;
	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&blocks_lock);
	for (b = blocks; b; b = b->next)
		if (!b->in_use)
			break;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (b) {
			b->next = blocks;
			blocks = b;
		}
	}
	if (b)
		b->in_use = true;
	pthread_mutex_unlock(&blocks_lock);
	if (b) {
		pthread_setspecific(block_key, b);
		my_block = b;
	}
	return b;
}

/* Only the owner thread writes *p, so load + store loses nothing. */
static inline void add(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static inline bool counting(void)
{
	return atomic_load_explicit(&cur_level, memory_order_relaxed) > 0 &&
	       atomic_load_explicit(&running, memory_order_relaxed);
}

uint64_t stats_io_begin(void) { return counting() ? now_ns() | 1 : 0; }

static unsigned hist_bucket(size_t bytes)
{
	size_t kb = bytes / 1024;
	if (kb == 0)
		return 0;
	unsigned b = (unsigned)(64 - __builtin_clzll((unsigned long long)kb)); /* floor(log2)+1 */
	return b > 31 ? 31 : b;
}

/* The level-1 counters of one kind of call: cuFileRead/cuFileWrite or the
 * vectored calls. */
struct io_counters {
	int ok[2], err[2], bytes[2], ns[2]; /* [write] */
};
static const struct io_counters plain_io = {{C_READ_OK, C_WRITE_OK}, {C_READ_ERR, C_WRITE_ERR},
					    {C_READ_BYTES, C_WRITE_BYTES}, {C_READ_NS, C_WRITE_NS}};
static const struct io_counters vec_io = {{C_READV_OK, C_WRITEV_OK}, {C_READV_ERR, C_WRITEV_ERR},
					  {C_READV_BYTES, C_WRITEV_BYTES}, {C_READV_NS, C_WRITEV_NS}};

static void io_done(const struct io_counters *k, bool write, size_t size, ssize_t ret, uint64_t start_ns, int gpu,
		    bool unaligned)
{
	if (!start_ns)
		return;
	struct block *b = get_block();
	if (!b)
		return;
	uint64_t now = now_ns();
	uint64_t ns = now > start_ns ? now - start_ns : 0;
	bool ok = ret >= 0;
	uint64_t *c = b->s.c;
	add(&c[ok ? k->ok[write] : k->err[write]], 1);
	if (ok)
		add(&c[k->bytes[write]], (uint64_t)ret);
	add(&c[k->ns[write]], ns);
	int level = atomic_load_explicit(&cur_level, memory_order_relaxed);
	if (level >= 2 && ok)
		add(&(write ? b->s.whist : b->s.rhist)[hist_bucket(size)], 1);
	if (level >= 3 && gpu >= 0 && gpu < OCF_STATS_MAX_GPUS) {
		uint64_t *g = b->s.g[gpu];
		add(&g[write ? G_WRITES : G_READS], 1);
		add(&g[write ? G_WRITE_NS : G_READ_NS], ns);
		if (ok)
			add(&g[write ? G_WRITE_BYTES : G_READ_BYTES], (uint64_t)ret);
		else
			add(&g[write ? G_WRITES_ERR : G_READS_ERR], 1);
		if (unaligned)
			add(&g[write ? G_WRITES_UNALIGNED : G_READS_UNALIGNED], 1);
	}
}

void stats_io_done(bool write, size_t size, ssize_t ret, uint64_t start_ns, int gpu, bool unaligned)
{
	io_done(&plain_io, write, size, ret, start_ns, gpu, unaligned);
}

void stats_iov_done(bool write, size_t size, ssize_t ret, uint64_t start_ns, int gpu, bool unaligned)
{
	io_done(&vec_io, write, size, ret, start_ns, gpu, unaligned);
}

static void count_op(int ok_idx, bool ok)
{
	if (!counting())
		return;
	struct block *b = get_block();
	if (b)
		add(&b->s.c[ok ? ok_idx : ok_idx + 1], 1);
}

void stats_handle_register(bool ok) { count_op(C_HREG_OK, ok); }
void stats_handle_deregister(bool ok) { count_op(C_HDEREG_OK, ok); }
void stats_buf_register(bool ok) { count_op(C_BREG_OK, ok); }
void stats_buf_deregister(bool ok) { count_op(C_BDEREG_OK, ok); }

void stats_stream_done(bool write, ssize_t ret)
{
	if (!counting())
		return;
	struct block *b = get_block();
	if (!b)
		return;
	add(&b->s.c[write ? (ret >= 0 ? C_SWRITE_OK : C_SWRITE_ERR) : (ret >= 0 ? C_SREAD_OK : C_SREAD_ERR)], 1);
	if (ret > 0)
		add(&b->s.c[write ? C_SWRITE_BYTES : C_SREAD_BYTES], (uint64_t)ret);
}

void stats_batch_call(enum stats_batch_call call, bool ok)
{
	static const int idx[] = {
	    [STATS_BATCH_SETUP] = C_BSETUP_OK,
	    [STATS_BATCH_CANCEL] = C_BCANCEL_OK,
	    [STATS_BATCH_DESTROY] = C_BDESTROY_OK,
	};
	count_op(idx[call], ok);
}

/* The calling thread's block for a timed batch event, and the nanoseconds
 * since start_ns; NULL when not counting (start_ns 0: counting was off when
 * the event began). */
static struct block *timed_block(uint64_t start_ns, uint64_t *elapsed)
{
	if (!start_ns || !counting())
		return NULL;
	struct block *b = get_block();
	uint64_t now = now_ns();
	*elapsed = now > start_ns ? now - start_ns : 0;
	return b;
}

void stats_batch_submit(bool ok, unsigned entries, uint64_t start_ns)
{
	uint64_t ns;
	struct block *b = timed_block(start_ns, &ns);
	if (!b)
		return;
	add(&b->s.c[ok ? C_BSUBMIT_OK : C_BSUBMIT_ERR], 1);
	if (ok)
		add(&b->s.c[C_BENQUEUED], entries);
	add(&b->s.c[C_BSUBMIT_NS], ns);
}

void stats_batch_entry_done(bool write, bool ok, size_t bytes, uint64_t start_ns)
{
	uint64_t ns;
	struct block *b = timed_block(start_ns, &ns);
	if (!b)
		return;
	add(&b->s.c[ok ? C_BCOMPLETE_OK : C_BCOMPLETE_ERR], 1);
	if (ok)
		add(&b->s.c[write ? C_BWRITE_BYTES : C_BREAD_BYTES], bytes);
	add(&b->s.c[C_BCOMPLETE_NS], ns);
}

/* Caller holds blocks_lock. */
static void sum_locked(struct sums *out)
{
	memset(out, 0, sizeof(*out));
	const uint64_t *src;
	uint64_t *dst = (uint64_t *)out;
	size_t n = sizeof(*out) / sizeof(uint64_t);
	for (struct block *b = blocks; b; b = b->next) {
		src = (const uint64_t *)&b->s;
		for (size_t i = 0; i < n; i++)
			dst[i] += __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	}
	const uint64_t *base = (const uint64_t *)&baseline;
	for (size_t i = 0; i < n; i++)
		dst[i] -= base[i];
}

void stats_reset(void)
{
	pthread_mutex_lock(&blocks_lock);
	struct sums now;
	memset(&baseline, 0, sizeof(baseline));
	sum_locked(&now);
	baseline = now;
	window_start = now_ns();
	pthread_mutex_unlock(&blocks_lock);
}

int stats_set_level(int level)
{
	if (level < 0 || level > 3)
		return -EINVAL;
	atomic_store_explicit(&cur_level, level, memory_order_relaxed);
	atomic_store_explicit(&level_from_api, true, memory_order_relaxed);
	pthread_mutex_lock(&blocks_lock);
	if (!window_start)
		window_start = now_ns();
	pthread_mutex_unlock(&blocks_lock);
	return 0;
}

int stats_get_level(void) { return atomic_load_explicit(&cur_level, memory_order_relaxed); }

void stats_configure_at_open(int level)
{
	if (!atomic_load_explicit(&level_from_api, memory_order_relaxed) && level >= 0 && level <= 3)
		atomic_store_explicit(&cur_level, level, memory_order_relaxed);
	pthread_mutex_lock(&blocks_lock);
	if (!window_start)
		window_start = now_ns();
	pthread_mutex_unlock(&blocks_lock);
}

void stats_start(void)
{
	atomic_store_explicit(&running, true, memory_order_relaxed);
	pthread_mutex_lock(&blocks_lock);
	if (!window_start)
		window_start = now_ns();
	pthread_mutex_unlock(&blocks_lock);
}

void stats_stop(void) { atomic_store_explicit(&running, false, memory_order_relaxed); }

static uint64_t per_sec(uint64_t n, uint64_t ns) { return ns ? (uint64_t)((double)n * 1e9 / (double)ns) : 0; }

static void fill_op(CUfileOpCounter_t *o, const uint64_t *c, int ok_idx)
{
	o->ok = c[ok_idx];
	o->err = c[ok_idx + 1];
}

/* Where one kind of call's level-1 figures go: [0] reads, [1] writes. */
struct io_figures {
	CUfileOpCounter_t *ops[2];
	uint64_t *bytes[2], *bw[2], *lat_sum[2], *lat_avg[2], *ops_per_sec[2];
};
/* The members RD_* and WR_* of the level-1 struct *l1: read and write, or
 * readv and writev, which CUfileStatsLevel1_t names alike. */
#define IO_FIGURES(l1, rd, wr)                                                                         \
	(&(struct io_figures){                                                                          \
	    .ops = {&(l1)->rd##_ops, &(l1)->wr##_ops},                                                  \
	    .bytes = {&(l1)->rd##_bytes, &(l1)->wr##_bytes},                                            \
	    .bw = {&(l1)->rd##_bw_bytes_per_sec, &(l1)->wr##_bw_bytes_per_sec},                         \
	    .lat_sum = {&(l1)->rd##_lat_sum_us, &(l1)->wr##_lat_sum_us},                                \
	    .lat_avg = {&(l1)->rd##_lat_avg_us, &(l1)->wr##_lat_avg_us},                                \
	    .ops_per_sec = {&(l1)->rd##_ops_per_sec, &(l1)->wr##_ops_per_sec},                          \
	})

static void fill_io(const uint64_t *c, const struct io_counters *k, uint64_t window, const struct io_figures *f)
{
	for (int w = 0; w < 2; w++) {
		uint64_t ok = c[k->ok[w]], err = c[k->err[w]], ns = c[k->ns[w]], bytes = c[k->bytes[w]];
		f->ops[w]->ok = ok;
		f->ops[w]->err = err;
		*f->bytes[w] = bytes;
		/* Bandwidth is per call: bytes over the time spent inside the calls. */
		*f->bw[w] = per_sec(bytes, ns);
		*f->lat_sum[w] = ns / 1000;
		*f->lat_avg[w] = ok + err ? ns / 1000 / (ok + err) : 0;
		/* Operations per second over the window since start/reset. */
		*f->ops_per_sec[w] = per_sec(ok + err, window);
	}
}

/* The GPUs and their UUIDs, read from the CUDA driver once it is loaded
 * and kept: the snapshot written at exit must not call a driver that may
 * have been torn down already, and the publishing thread makes no CUDA
 * call (it would wait for the driver's locks).  gpus_lock protects them. */
static pthread_mutex_t gpus_lock = PTHREAD_MUTEX_INITIALIZER;
static int gpus_n = -1; /* -1: not read yet */
static char gpus_uuid[OCF_STATS_MAX_GPUS][CUFILE_GPU_UUID_LEN];

static void gpus_read_locked(void)
{
	if (gpus_n >= 0 || !cuda_available())
		return;
	int n = OCF_MIN(cuda_device_count(), OCF_STATS_MAX_GPUS);
	for (int i = 0; i < n; i++) {
		CUdevice dev;
		CUuuid u;
		if (ocf_cu.DeviceGet(&dev, i) == CUDA_SUCCESS && ocf_cu.DeviceGetUuid(&u, dev) == CUDA_SUCCESS)
			memcpy(gpus_uuid[i], u.bytes, sizeof(gpus_uuid[i]));
	}
	gpus_n = n > 0 ? n : 0;
}

void stats_read_gpus(void)
{
	pthread_mutex_lock(&gpus_lock);
	gpus_read_locked();
	pthread_mutex_unlock(&gpus_lock);
}

/* Sets num_gpus and the UUIDs; returns num_gpus. */
static int gpus_get(bool may_call_cuda, CUfileStatsLevel3_t *out)
{
	pthread_mutex_lock(&gpus_lock);
	if (may_call_cuda)
		gpus_read_locked();
	int n = gpus_n > 0 ? gpus_n : 0;
	for (int i = 0; i < n; i++)
		memcpy(out->per_gpu_stats[i].uuid, gpus_uuid[i], sizeof(gpus_uuid[i]));
	pthread_mutex_unlock(&gpus_lock);
	out->num_gpus = (uint32_t)n;
	return n;
}

static void fill(const struct sums *s, uint64_t window, int level, bool may_call_cuda, CUfileStatsLevel3_t *out)
{
	CUfileStatsLevel1_t *l1 = &out->detailed.basic;
	const uint64_t *c = s->c;
	fill_op(&l1->hdl_register_ops, c, C_HREG_OK);
	fill_op(&l1->hdl_deregister_ops, c, C_HDEREG_OK);
	fill_op(&l1->buf_register_ops, c, C_BREG_OK);
	fill_op(&l1->buf_deregister_ops, c, C_BDEREG_OK);
	fill_io(c, &plain_io, window, IO_FIGURES(l1, read, write));
	/* Vectored I/O (the 1.19 members), figured like plain reads/writes. */
	fill_io(c, &vec_io, window, IO_FIGURES(l1, readv, writev));
	/* Batch I/O.  Every entry takes the POSIX path here (no nvidia-fs). */
	fill_op(&l1->batch_setup_ops, c, C_BSETUP_OK);
	fill_op(&l1->batch_submit_ops, c, C_BSUBMIT_OK);
	fill_op(&l1->batch_cancel_ops, c, C_BCANCEL_OK);
	fill_op(&l1->batch_destroy_ops, c, C_BDESTROY_OK);
	fill_op(&l1->batch_complete_ops, c, C_BCOMPLETE_OK);
	l1->batch_enqueued_ops.ok = c[C_BENQUEUED];
	l1->batch_posix_enqueued_ops.ok = c[C_BENQUEUED];
	l1->batch_processed_ops.ok = c[C_BCOMPLETE_OK] + c[C_BCOMPLETE_ERR];
	l1->batch_posix_processed_ops.ok = l1->batch_processed_ops.ok;
	l1->batch_total_submit_ops = l1->batch_submit_ops;
	l1->batch_read_bytes = c[C_BREAD_BYTES];
	l1->batch_write_bytes = c[C_BWRITE_BYTES];
	uint64_t bsubmits = c[C_BSUBMIT_OK] + c[C_BSUBMIT_ERR];
	uint64_t bdone = c[C_BCOMPLETE_OK] + c[C_BCOMPLETE_ERR];
	l1->batch_submit_lat_sum_us = c[C_BSUBMIT_NS] / 1000;
	l1->batch_completion_lat_sum_us = c[C_BCOMPLETE_NS] / 1000;
	l1->batch_submit_lat_avg_us = bsubmits ? l1->batch_submit_lat_sum_us / bsubmits : 0;
	l1->batch_completion_lat_avg_us = bdone ? l1->batch_completion_lat_sum_us / bdone : 0;
	/* Bandwidth over the window (entries overlap, so per-entry time would
	 * understate it). */
	l1->batch_read_bw_bytes = per_sec(c[C_BREAD_BYTES], window);
	l1->batch_write_bw_bytes = per_sec(c[C_BWRITE_BYTES], window);
	l1->batch_submit_ops_per_sec = per_sec(bsubmits, window);
	l1->batch_complete_ops_per_sec = per_sec(bdone, window);
	if (level < 2)
		return;
	memcpy(out->detailed.read_size_kb_hist, s->rhist, sizeof(s->rhist));
	memcpy(out->detailed.write_size_kb_hist, s->whist, sizeof(s->whist));
	if (level < 3)
		return;
	int n = gpus_get(may_call_cuda, out);
	for (int i = 0; i < n; i++) {
		CUfilePerGpuStats_t *p = &out->per_gpu_stats[i];
		const uint64_t *g = s->g[i];
		p->read_bytes = g[G_READ_BYTES];
		p->read_bw_bytes_per_sec = per_sec(g[G_READ_BYTES], g[G_READ_NS]);
		p->read_duration_us = g[G_READ_NS] / 1000;
		p->read_utilization = window ? g[G_READ_NS] * 100 / window : 0;
		p->n_total_reads = g[G_READS];
		p->n_posix_reads = g[G_READS]; /* every read takes the POSIX path here */
		p->n_unaligned_reads = g[G_READS_UNALIGNED];
		p->n_reads_err = g[G_READS_ERR];
		p->writes_bytes = g[G_WRITE_BYTES];
		p->write_bw_bytes_per_sec = per_sec(g[G_WRITE_BYTES], g[G_WRITE_NS]);
		p->write_duration_us = g[G_WRITE_NS] / 1000;
		p->write_utilization = window ? g[G_WRITE_NS] * 100 / window : 0;
		p->n_total_writes = g[G_WRITES];
		p->n_posix_writes = g[G_WRITES];
		p->n_unaligned_writes = g[G_WRITES_UNALIGNED];
		p->n_writes_err = g[G_WRITES_ERR];
	}
}

/* The sums at `level` into out (and the window and the stream counters
 * when asked for). */
static int snapshot(int level, bool may_call_cuda, CUfileStatsLevel3_t *out, uint64_t *window_out,
		    struct ocf_stats_stream *stream)
{
	struct sums *s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&blocks_lock);
	sum_locked(s);
	uint64_t now = now_ns();
	uint64_t window = window_start && now > window_start ? now - window_start : 0;
	pthread_mutex_unlock(&blocks_lock);
	memset(out, 0, sizeof(*out));
	fill(s, window, level, may_call_cuda, out);
	if (window_out)
		*window_out = window;
	if (stream) {
		const uint64_t *c = s->c;
		*stream = (struct ocf_stats_stream){
		    .ok = {c[C_SREAD_OK], c[C_SWRITE_OK]},
		    .err = {c[C_SREAD_ERR], c[C_SWRITE_ERR]},
		    .bytes = {c[C_SREAD_BYTES], c[C_SWRITE_BYTES]},
		};
	}
	free(s);
	return 0;
}

int stats_get(int level, CUfileStatsLevel3_t *out)
{
	if (level < 1 || level > 3 || stats_get_level() < level)
		return -EINVAL;
	return snapshot(level, true, out, NULL, NULL);
}

/* Pinned staging memory.  Relaxed atomics: each is a counter read only for
 * reporting; the peak is a CAS-maximum over the values `pinned` took. */
static atomic_int_fast64_t pinned, pinned_bound;
static _Atomic uint64_t pinned_peak, pinned_bound_peak;

static void raise_to(_Atomic uint64_t *max, int64_t v)
{
	if (v > 0)
		ocf_atomic_max_u64(max, (uint64_t)v);
}

void stats_pinned_add(int64_t delta)
{
	raise_to(&pinned_peak, atomic_fetch_add_explicit(&pinned, delta, memory_order_relaxed) + delta);
}

void stats_pinned_bound_add(int64_t delta)
{
	raise_to(&pinned_bound_peak,
		 atomic_fetch_add_explicit(&pinned_bound, delta, memory_order_relaxed) + delta);
}

void stats_pinned_get(uint64_t *now, uint64_t *peak, uint64_t *bound_peak)
{
	int64_t n = atomic_load_explicit(&pinned, memory_order_relaxed);
	*now = n > 0 ? (uint64_t)n : 0;
	*peak = atomic_load_explicit(&pinned_peak, memory_order_relaxed);
	*bound_peak = atomic_load_explicit(&pinned_bound_peak, memory_order_relaxed);
}

int stats_fill_snapshot(struct ocf_stats_file *f, bool may_call_cuda)
{
	int level = stats_get_level();
	memset(f, 0, sizeof(*f));
	memcpy(f->magic, OCF_STATS_FILE_MAGIC, sizeof(OCF_STATS_FILE_MAGIC));
	f->version = OCF_STATS_FILE_VERSION;
	f->level = (uint32_t)level;
	f->pid = (int32_t)getpid();
	f->size = (uint32_t)sizeof(*f);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	f->written_unix_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	f->written_mono_ns = now_ns();
	stats_pinned_get(&f->pinned_bytes, &f->pinned_peak_bytes, &f->pinned_bound_bytes);
	/* The counters are zero at level 0; the pinned figures are kept at
	 * every level. */
	return level > 0 ? snapshot(level, may_call_cuda, &f->stats, &f->window_ns, &f->stream) : 0;
}

__attribute__((destructor)) static void stats_fini(void)
{
	/* The key's destructor lives in this library; a thread that exits
	 * after the library is unloaded must not call it. */
	if (key_made)
		pthread_key_delete(block_key);
}

void stats_to_1150(const CUfileStatsLevel3_t *in, struct ocf_stats_l3_1150 *out)
{
	memset(out, 0, sizeof(*out));
	/* The 1.15 level-1 struct is the 1.19 one without its tail. */
	memcpy(out->detailed.basic, &in->detailed.basic, OCF_STATS_L1_1150_SIZE);
	memcpy(out->detailed.read_size_kb_hist, in->detailed.read_size_kb_hist, sizeof(out->detailed.read_size_kb_hist));
	memcpy(out->detailed.write_size_kb_hist, in->detailed.write_size_kb_hist,
	       sizeof(out->detailed.write_size_kb_hist));
	out->num_gpus = in->num_gpus;
	memcpy(out->per_gpu_stats, in->per_gpu_stats, sizeof(out->per_gpu_stats));
}
