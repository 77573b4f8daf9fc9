/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_entries.c - the entries shape (-e N -D DIR): what a transfer
 * library makes of one request of many descriptors, each with a buffer of
 * its own and a file of its own (NIXL's GDS and GDS_MT backends and their
 * test: 250 entries of 10 MiB, each written into a new file).
 *
 * Entry k is the file DIR/gdsio.e<k>.dat, opened with -O/-N and registered
 * with cuFileHandleRegister, and a buffer of -i bytes of the -m kind,
 * registered unless -b; all of them are made before the clock starts.  A
 * file whose first phase writes is made new (any old one removed first);
 * one that is read first is written with its pattern.  A round moves every
 * entry once, whole, at file offset 0: with -x 5 as ceil(N / -B) batches
 * of up to -B entries, all submitted before any is collected (batch after
 * batch, cuFileBatchIOGetStatus in the -W style); with -x 0 by the -w
 * threads, which take the entries in turn from one counter, one
 * cuFileWrite/cuFileRead each.  -r rounds make a phase; -I 1,0 runs a phase
 * of writes, then one of reads of the same files into the same buffers,
 * each reported on its own (the Extra line ends with "phase: write" or
 * "phase: read").  The first round of the process is timed on its own
 * (first_round_usecs: the first I/O after the registrations), beside the
 * median of the others (later_round_usecs).  The files are removed at the
 * end.
 *
 * Entry k's file holds the pattern of the offsets from k x -i on, so that
 * an entry moved to or from another's file fails -V.  -V checks every entry
 * after each round: reads against the pattern (the buffers poisoned before
 * each round), writes read back through a buffered descriptor; the checks
 * are outside the round times but inside the phase's total.
 *
 * DESIGN: the main thread sets everything up, runs the batches itself and
 * does every fill, poison and check (it holds the GPU's context).  The pool
 * threads, each with the context bound, are made before the first round
 * and meet the main thread at two barriers per round (start, done), so a
 * round's time is the main thread's from the one to the other.  A batch
 * not complete within -t (timed and poll styles) is abandoned as in the
 * batch loop: the files are removed and the process exits without tearing
 * anything else down, since I/O may still be moving into the buffers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gdsio.h"
#include "pattern.h"

struct entry {
	char path[4096];
	int fd, vfd;
	CUfileHandle_t fh;
	int fh_ok;
	struct buffer buf;
	int registered;
};

/* The run: one per process, set up by entries_run. */
static struct {
	struct entry *e;
	int n; /* entries made (all of them once set up) */
	size_t io;
	struct run run;	    /* its stop flag and IO size, for the shared helpers */
	struct worker main; /* the main thread: batches, fills, poison, checks */
	struct worker *pw;  /* -x 0: the pool threads */
	int npw;
	pthread_barrier_t start, done;
	int barriers;
	atomic_int next;    /* -x 0: the next entry to take (relaxed: indexes only) */
	int quit;	    /* -x 0: written before a start barrier */
	struct slot *slots; /* -x 5: one per batch of a round */
	int nslots;
	CUfileIOEvents_t *events;
	uint64_t *round_ns;
} S;

static double cpu_secs(const struct rusage *ru, int sys)
{
	const struct timeval *tv = sys ? &ru->ru_stime : &ru->ru_utime;
	return (double)tv->tv_sec + (double)tv->tv_usec * 1e-6;
}

/* Name the entry's file in front of the worker's message. */
static void name_entry(struct worker *w, const struct entry *e)
{
	char tmp[sizeof(w->msg)];
	const char *base = strrchr(e->path, '/');
	snprintf(tmp, sizeof(tmp), "%.64s: %.440s", base ? base + 1 : e->path, w->msg);
	memcpy(w->msg, tmp, sizeof(tmp));
}

static void *pool_thread(void *arg)
{
	struct worker *w = arg;
	if (have_cuda) {
		cu.Init(0);
		CUresult r = cuda_dl_bind(&cu, o.gpu, &w->ctx);
		if (r)
			worker_fail(w, ST_SETUP, "binding GPU %d: %s (%d)", o.gpu, cuda_dl_errstr(&cu, r),
				    (int)r);
		else
			w->ctx_held = 1;
	}
	pthread_barrier_wait(&S.done); /* ready */
	for (;;) {
		pthread_barrier_wait(&S.start);
		if (S.quit)
			break;
		while (!w->status && !atomic_load_explicit(&S.run.stop, memory_order_relaxed)) {
			int k = atomic_fetch_add_explicit(&S.next, 1, memory_order_relaxed);
			if (k >= S.n)
				break;
			struct entry *e = &S.e[k];
			w->buf = e->buf, w->fh = e->fh, w->fd = e->fd;
			uint64_t t0 = now_ns();
			if (do_io(w, 0, 0, S.io)) {
				name_entry(w, e);
				break;
			}
			hist_add(w->hist, now_ns() - t0);
			w->bytes += S.io, w->ops++;
		}
		pthread_barrier_wait(&S.done);
	}
	if (w->ctx_held) {
		CUdevice dev;
		if (cu.PrimaryCtxRelease && cu.DeviceGet(&dev, o.gpu) == CUDA_SUCCESS)
			cu.PrimaryCtxRelease(dev);
	}
	return NULL;
}

/* -x 5: a round as batches of up to -B entries, all submitted, then each
 * collected in turn (poll: asked in turn until all are complete).  0, or
 * -1 when a batch was abandoned. */
static int batch_round(struct worker *w, int first)
{
	unsigned depth = o.depth;
	int submitted = 0;
	char eb[160];
	for (int b = 0; b < S.nslots && !w->status; b++) {
		struct slot *s = &S.slots[b];
		unsigned from = (unsigned)b * depth,
			 g = (unsigned)S.n - from < depth ? (unsigned)S.n - from : depth;
		for (unsigned i = 0; i < g; i++) {
			struct entry *e = &S.e[from + i];
			CUfileIOParams_t *p = &s->params[i];
			memset(p, 0, sizeof(*p));
			p->mode = CUFILE_BATCH;
			p->u.batch.devPtr_base = e->buf.ptr;
			p->u.batch.file_offset = 0;
			p->u.batch.devPtr_offset = 0;
			p->u.batch.size = S.io;
			p->fh = e->fh;
			p->opcode = is_write() ? CUFILE_WRITE : CUFILE_READ;
			p->cookie = (void *)(uintptr_t)(i + 1);
			s->rets[i] = -1, s->offs[i] = 0;
		}
		s->t0 = now_ns();
		CUfileError_t err = cuFileBatchIOSubmit(s->batch, g, s->params, 0);
		if (err.err) {
			worker_fail(w, first && b == 0 ? ST_UNSUPPORTED : ST_IOERR,
				    "cuFileBatchIOSubmit(%u entries), batch %d of %d: %s", g, b + 1, S.nslots,
				    cufile_err(err, eb, sizeof(eb)));
			break;
		}
		s->n = g, s->got = 0;
		submitted++;
	}
	/* Every batch submitted is collected, also after a failure: nothing may
	 * be left moving data when the buffers are used again. */
	for (int left = submitted; left;) {
		for (int b = 0; b < submitted; b++) {
			struct slot *s = &S.slots[b];
			if (!s->n || s->got == s->n)
				continue;
			do {
				if (batch_collect(w, s, S.events))
					return -1;
			} while (s->got < s->n && o.wait_style != WAIT_POLL);
			if (s->got == s->n)
				left--;
		}
	}
	for (int b = 0; b < submitted; b++) {
		struct slot *s = &S.slots[b];
		for (unsigned i = 0; i < s->n; i++)
			if (s->rets[i] == (ssize_t)S.io)
				w->bytes += S.io, w->ops++;
		s->n = 0;
	}
	return 0;
}

/* -x 0: a round taken by the pool threads. */
static void pool_round(void)
{
	atomic_store_explicit(&S.next, 0, memory_order_relaxed);
	pthread_barrier_wait(&S.start);
	pthread_barrier_wait(&S.done);
}

/* The fill, poison or check of every entry (fn), by the main thread. */
static int each_entry(int (*fn)(struct worker *, struct entry *))
{
	for (int k = 0; k < S.n; k++) {
		S.main.buf = S.e[k].buf, S.main.vfd = S.e[k].vfd;
		S.main.pattern_at = (uint64_t)k * S.io;
		if (fn(&S.main, &S.e[k])) {
			name_entry(&S.main, &S.e[k]);
			return -1;
		}
	}
	return 0;
}
static int fill_entry(struct worker *w, struct entry *e)
{
	(void)e;
	return fill_buffer(w, 0, 0, S.io);
}
static int poison_entry(struct worker *w, struct entry *e)
{
	(void)e;
	return poison_buffer(w, 0, S.io);
}
static int check_entry(struct worker *w, struct entry *e)
{
	(void)e;
	return is_write() ? verify_write(w, 0, S.io) : verify_read(w, 0, 0, S.io);
}

/* The files, handles, buffers, batches and pool threads, before any clock.
 * 0, or -1 with the reason in S.main.msg. */
static int setup(void)
{
	struct worker *w = &S.main;
	char why[512], eb[160];
	size_t io = S.io;
	int write_first = o.phases[0] == IO_WRITE;
	void *pat = NULL;
	w->hist = calloc(1, sizeof(*w->hist));
	w->bhist = calloc(1, sizeof(*w->bhist));
	S.e = calloc((size_t)o.entries, sizeof(*S.e));
	S.round_ns = calloc(o.rounds, sizeof(*S.round_ns));
	w->vhost_len = io < VERIFY_CHUNK ? io : VERIFY_CHUNK;
	w->vhost = scratch_alloc(w->vhost_len, &w->vhost_pinned);
	if (!w->hist || !w->bhist || !S.e || !S.round_ns || !w->vhost ||
	    (!write_first && posix_memalign(&pat, 4096, io))) {
		worker_fail(w, ST_SETUP, "out of memory");
		return -1;
	}
	for (int k = 0; k < o.entries; k++) {
		struct entry *e = &S.e[k];
		e->fd = e->vfd = -1;
		S.n = k + 1;
		snprintf(e->path, sizeof(e->path), "%s/gdsio.e%d.dat", o.dir, k);
		if (unlink(e->path) && errno != ENOENT) {
			worker_fail(w, ST_SETUP, "removing the old %s: %s", e->path, strerror(errno));
			goto failed;
		}
		if (!write_first) {
			/* Read first: the file holds its part of the pattern. */
			int fd = open(e->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			pattern_fill(pat, (uint64_t)k * io, io);
			int err = fd < 0 ? -errno : full_pwrite(fd, pat, io, 0);
			if (fd >= 0)
				close(fd);
			if (err) {
				worker_fail(w, ST_SETUP, "writing %s: %s", e->path, strerror(-err));
				goto failed;
			}
		}
		e->fd = open(e->path, O_RDWR | O_CREAT | (o.odirect ? O_DIRECT : 0), 0644);
		if (o.verify)
			e->vfd = open(e->path, O_RDONLY);
		if (e->fd < 0 || (o.verify && e->vfd < 0)) {
			worker_fail(w, ST_SETUP, "open %s: %s", e->path, strerror(errno));
			goto failed;
		}
		CUfileError_t err = register_fd(e->fd, &e->fh);
		if (err.err) {
			worker_fail(w, ST_SETUP, "cuFileHandleRegister(%s): %s", e->path,
				    cufile_err(err, eb, sizeof(eb)));
			goto failed;
		}
		e->fh_ok = 1;
		if (buffer_alloc(&e->buf, effective_mem(), io, o.gpu, why, sizeof(why))) {
			worker_fail(w, ST_SETUP, "entry %d's buffer: %.400s", k, why);
			goto failed;
		}
		if (!o.skip_reg) {
			err = cuFileBufRegister(e->buf.ptr, io, 0);
			if (err.err) {
				worker_fail(
				    w, ST_SETUP,
				    "cuFileBufRegister(%s, %zu) of entry %d: %s (use -b to run unregistered)",
				    mem_name[e->buf.kind], io, k, cufile_err(err, eb, sizeof(eb)));
				goto failed;
			}
			e->registered = 1;
		}
	}
	free(pat);
	pat = NULL;
	if (o.xfer == X_BATCH) {
		S.nslots = (int)((o.entries + o.depth - 1) / o.depth);
		S.slots = calloc((size_t)S.nslots, sizeof(*S.slots));
		S.events = calloc(o.depth, sizeof(*S.events));
		if (!S.slots || !S.events) {
			worker_fail(w, ST_SETUP, "out of memory");
			return -1;
		}
		for (int b = 0; b < S.nslots; b++) {
			struct slot *s = &S.slots[b];
			s->offs = calloc(o.depth, sizeof(*s->offs));
			s->rets = calloc(o.depth, sizeof(*s->rets));
			s->params = calloc(o.depth, sizeof(*s->params));
			if (!s->offs || !s->rets || !s->params) {
				worker_fail(w, ST_SETUP, "out of memory");
				return -1;
			}
			CUfileError_t err = cuFileBatchIOSetUp(&s->batch, o.depth);
			if (err.err) {
				/* The first refused: batches are not supported. */
				worker_fail(w, b ? ST_SETUP : ST_UNSUPPORTED,
					    "cuFileBatchIOSetUp(%u), handle %d of %d: %s", o.depth, b + 1,
					    S.nslots, cufile_err(err, eb, sizeof(eb)));
				S.nslots = b;
				return -1;
			}
		}
	} else {
		S.pw = calloc((size_t)o.threads[0], sizeof(*S.pw));
		if (!S.pw) {
			worker_fail(w, ST_SETUP, "out of memory");
			return -1;
		}
		for (int i = 0; i < o.threads[0]; i++) {
			struct worker *p = &S.pw[i];
			p->run = &S.run, p->id = i, p->fd = p->vfd = -1;
			if (!(p->hist = calloc(1, sizeof(*p->hist)))) {
				worker_fail(w, ST_SETUP, "out of memory");
				return -1;
			}
		}
		pthread_barrier_init(&S.start, NULL, (unsigned)o.threads[0] + 1);
		pthread_barrier_init(&S.done, NULL, (unsigned)o.threads[0] + 1);
		S.barriers = 1;
		for (; S.npw < o.threads[0]; S.npw++)
			if (pthread_create(&S.pw[S.npw].th, NULL, pool_thread, &S.pw[S.npw])) {
				fprintf(stderr, "gdsio: cannot start %d threads\n", o.threads[0]);
				exit(EXIT_FAIL); /* the barriers cannot be met: nothing sane to unwind */
			}
		pthread_barrier_wait(&S.done); /* every thread has its context */
		for (int i = 0; i < S.npw; i++)
			if (S.pw[i].status) {
				worker_fail(w, S.pw[i].status, "thread %d: %.480s", i, S.pw[i].msg);
				return -1;
			}
	}
	return 0;
failed:
	free(pat);
	return -1;
}

static void teardown(void)
{
	if (S.barriers) {
		S.quit = 1;
		pthread_barrier_wait(&S.start);
		for (int i = 0; i < S.npw; i++)
			pthread_join(S.pw[i].th, NULL);
		pthread_barrier_destroy(&S.start);
		pthread_barrier_destroy(&S.done);
	}
	for (int i = 0; S.pw && i < o.threads[0]; i++)
		free(S.pw[i].hist);
	free(S.pw);
	for (int b = 0; b < S.nslots; b++)
		cuFileBatchIODestroy(S.slots[b].batch);
	for (int b = 0; S.slots && b < (int)((o.entries + o.depth - 1) / o.depth); b++)
		free(S.slots[b].offs), free(S.slots[b].rets), free(S.slots[b].params);
	free(S.slots), free(S.events);
	for (int k = 0; k < S.n; k++) {
		struct entry *e = &S.e[k];
		if (e->registered)
			cuFileBufDeregister(e->buf.ptr);
		buffer_free(&e->buf);
		if (e->fh_ok)
			cuFileHandleDeregister(e->fh);
		if (e->fd >= 0)
			close(e->fd);
		if (e->vfd >= 0)
			close(e->vfd);
		unlink(e->path);
	}
	free(S.e);
	scratch_free(S.main.vhost, S.main.vhost_pinned);
	free(S.main.hist), free(S.main.bhist), free(S.round_ns);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* One phase (o.iotype): its rounds, then its result line.  Returns the
 * phase's status, or -1 when a batch was abandoned. */
static int phase(int first_phase, struct result *res)
{
	struct worker *w = &S.main;
	memset(res, 0, sizeof(*res));
	memset(w->hist, 0, sizeof(*w->hist));
	memset(w->bhist, 0, sizeof(*w->bhist));
	w->bytes = w->ops = 0;
	for (int i = 0; i < S.npw; i++) {
		memset(S.pw[i].hist, 0, sizeof(*S.pw[i].hist));
		S.pw[i].bytes = S.pw[i].ops = 0;
	}
	if (is_write() && each_entry(fill_entry))
		goto report;
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	double t0 = now();
	unsigned r;
	int abandoned = 0;
	for (r = 0; r < o.rounds && !atomic_load(&S.run.stop); r++) {
		if (o.verify && !is_write() && each_entry(poison_entry))
			break;
		uint64_t a = now_ns();
		if (o.xfer == X_BATCH)
			abandoned = batch_round(w, first_phase && r == 0) != 0;
		else
			pool_round();
		S.round_ns[r] = now_ns() - a;
		if (abandoned) {
			r++;
			break;
		}
		if (atomic_load(&S.run.stop))
			continue; /* a failed round is not checked */
		if (o.verify && each_entry(check_entry))
			break;
	}
	res->secs = now() - t0;
	getrusage(RUSAGE_SELF, &ru1);
	res->cpu_user = cpu_secs(&ru1, 0) - cpu_secs(&ru0, 0);
	res->cpu_sys = cpu_secs(&ru1, 1) - cpu_secs(&ru0, 1);
	res->rounds = r;
	if (r) {
		res->first_round_us = (double)S.round_ns[0] / 1e3;
		if (r > 1) {
			qsort(S.round_ns + 1, r - 1, sizeof(*S.round_ns), cmp_u64);
			res->later_round_us = (double)S.round_ns[1 + (r - 1) / 2] / 1e3;
			if ((r - 1) % 2 == 0)
				res->later_round_us =
				    ((double)S.round_ns[r / 2] + (double)S.round_ns[r / 2 + 1]) / 2e3;
		}
	}
	if (abandoned)
		atomic_store(&abandon, 1);
report:
	res->threads = o.xfer == X_BATCH ? 1 : S.npw;
	res->io = S.io;
	res->planned = (uint64_t)S.n * S.io * o.rounds;
	res->bytes = w->bytes, res->ops = w->ops;
	hist_merge(&res->h, w->hist);
	hist_merge(&res->bh, w->bhist);
	res->status = w->status;
	snprintf(res->msg, sizeof(res->msg), "%.500s", w->msg);
	for (int i = 0; i < S.npw; i++) {
		struct worker *p = &S.pw[i];
		res->bytes += p->bytes, res->ops += p->ops;
		hist_merge(&res->h, p->hist);
		if (p->status > res->status) {
			res->status = p->status;
			snprintf(res->msg, sizeof(res->msg), "thread %d: %.480s", i, p->msg);
		}
	}
	print_result(res);
	return atomic_load(&abandon) ? -1 : res->status;
}

int entries_run(void)
{
	struct result res;
	int worst = ST_OK;
	if (!o.nphases)
		o.phases[0] = o.iotype, o.nphases = 1;
	S.io = o.ios[0];
	S.run.io = S.io;
	S.main.run = &S.run, S.main.fd = S.main.vfd = -1;
	o.iotype = o.phases[0];
	if (setup()) {
		memset(&res, 0, sizeof(res));
		res.threads = o.xfer == X_BATCH ? 1 : o.threads[0], res.io = S.io;
		res.status = S.main.status;
		snprintf(res.msg, sizeof(res.msg), "%.500s", S.main.msg);
		print_result(&res);
		teardown();
		return res.status;
	}
	for (int ph = 0; ph < o.nphases; ph++) {
		o.iotype = o.phases[ph];
		int st = phase(ph == 0, &res);
		if (st < 0) {
			/* A batch never completed: its I/O may still move data. */
			for (int k = 0; k < S.n; k++)
				unlink(S.e[k].path);
			fflush(NULL);
			_exit(EXIT_FAIL);
		}
		if (st > worst)
			worst = st;
		if (st != ST_OK)
			break;
	}
	teardown();
	return worst;
}
