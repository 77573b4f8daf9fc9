/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_sweep.c - runs: one (IO size x thread count) combination at a time,
 * over every combination the -i and -w lists give.
 *
 * DESIGN: each run starts N worker threads.  Every worker binds the GPU's
 * primary context itself, allocates its own buffer of the requested memory
 * type, registers it (unless -b), and then waits at a barrier; the clock
 * and getrusage start when all are ready and stop when the last one has
 * finished its I/O, so setup and teardown are outside the figures.  With -f
 * all workers share one fd and one cuFile handle and each owns a disjoint
 * region of the file; with -D each has its own file.  The main thread only
 * sleeps and prints the progress line while the workers run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gdsio.h"

static double cpu_secs(const struct rusage *ru, int sys)
{
	const struct timeval *tv = sys ? &ru->ru_stime : &ru->ru_utime;
	return (double)tv->tv_sec + (double)tv->tv_usec * 1e-6;
}

static void progress_line(struct run *run, double t, int final)
{
	if (!is_tty)
		return;
	if (final) {
		printf("\r%-78s\r", "");
		fflush(stdout);
		return;
	}
	uint64_t b = 0;
	for (int i = 0; i < run->nthreads; i++)
		b += atomic_load_explicit(&run->w[i].progress, memory_order_relaxed);
	double dt = t - run->t0;
	printf("\r[gdsio] %6.1f s  %10.3f GiB  %8.3f GB/s", dt, (double)b / 1073741824.0,
	       dt > 0 ? (double)b / dt / 1e9 : 0.0);
	fflush(stdout);
}

void file_for_thread(char *buf, size_t len, int t)
{
	snprintf(buf, len, "%s/gdsio.%d.dat", o.dir, t);
}

/* Run one (IO size, thread count) combination. */
static void run_one(size_t io, int nthreads, struct result *res)
{
	struct run run;
	char eb[160];
	int pool_ok = 0;
	memset(&run, 0, sizeof(run));
	memset(res, 0, sizeof(*res));
	res->threads = nthreads, res->io = io;
	run.io = io, run.nthreads = nthreads, run.fd = -1, run.vfd = -1;

	/* Split the data set: -f shares -s among threads, -D gives each -s. */
	uint64_t per_file_ops = o.size / io;
	uint64_t total_ops = o.dir ? per_file_ops * (uint64_t)nthreads : per_file_ops;
	/* -q: the threads share the pieces of each request, one request is
	 * enough for any number of them. */
	if (per_file_ops == 0 || (!o.dir && !o.piece && total_ops < (uint64_t)nthreads)) {
		res->status = ST_SKIPPED;
		snprintf(res->msg, sizeof(res->msg),
			 "data set %llu bytes too small for %d thread(s) of %zu-byte IOs",
			 (unsigned long long)o.size, nthreads, io);
		return;
	}
	res->planned = total_ops * io;
	/* -x 5 with -T goes round each thread's region again and again: the
	 * entries in flight (-H x -B) must fit in it, or two of them would
	 * move the same bytes of the file at once. */
	uint64_t thread_ops = o.dir ? per_file_ops : total_ops / (uint64_t)nthreads;
	if (o.xfer == X_BATCH && o.duration > 0 && !is_random() &&
	    thread_ops < (uint64_t)o.depth * o.batches) {
		res->status = ST_SKIPPED;
		snprintf(res->msg, sizeof(res->msg),
			 "data set %llu bytes too small for %u x %u entries of %zu bytes in flight per "
			 "thread (-H x -B) with -T",
			 (unsigned long long)o.size, o.batches, o.depth, io);
		return;
	}
	if (o.xfer == X_CPU_GPU && effective_mem() != M_DEVICE && effective_mem() != M_VMM) {
		res->status = ST_SETUP;
		snprintf(res->msg, sizeof(res->msg), "-x 2 (CPU_GPU) needs device memory (-m 0 or 1)");
		return;
	}

	if (!o.dir) {
		int flags = (is_write() ? O_RDWR : O_RDONLY) | (o.odirect ? O_DIRECT : 0) |
			    (o.newfile ? O_CREAT | O_TRUNC : 0);
		run.fd = open(o.file, flags, 0644);
		run.vfd = o.verify ? open(o.file, O_RDONLY) : -1;
		if (run.fd < 0 || (o.verify && run.vfd < 0)) {
			res->status = ST_SETUP;
			snprintf(res->msg, sizeof(res->msg), "open %s: %s", o.file, strerror(errno));
			goto close_fds;
		}
		if (uses_cufile(o.xfer)) {
			CUfileError_t e = register_fd(run.fd, &run.fh);
			if (e.err) {
				res->status = ST_SETUP;
				snprintf(res->msg, sizeof(res->msg), "cuFileHandleRegister(%s): %s", o.file,
					 cufile_err(e, eb, sizeof(eb)));
				goto close_fds;
			}
			run.fh_ok = 1;
		}
	}

	if (run_buffer() && !o.callers) {
		/* The fastsafetensors shape (-A): one buffer of the data set's
		 * size, registered once, each thread reading its own part of it.
		 * The pool shape (-q): one buffer of a request, each piece read
		 * into its part by whichever thread takes it (-Q: one buffer per
		 * caller, callers_init). */
		char why[512];
		size_t len = o.shared ? (size_t)o.size : io;
		const char *opt = o.shared ? "-A" : "-q";
		if (buffer_alloc(&run.shared, effective_mem(), len, o.gpu, why, sizeof(why))) {
			res->status = ST_SETUP;
			snprintf(res->msg, sizeof(res->msg), "shared buffer (%s): %.400s", opt, why);
			goto close_fh;
		}
		if (uses_cufile(o.xfer) && !o.skip_reg) {
			CUfileError_t e = cuFileBufRegister(run.shared.ptr, len, 0);
			if (e.err) {
				res->status = ST_SETUP;
				snprintf(res->msg, sizeof(res->msg),
					 "cuFileBufRegister(%s, %zu) of the shared buffer (%s): %s (use -b to "
					 "run unregistered)",
					 mem_name[run.shared.kind], len, opt, cufile_err(e, eb, sizeof(eb)));
				goto close_fh;
			}
			run.shared_registered = 1;
		}
	}
	if (o.piece) {
		if (pool_init(&run)) {
			res->status = ST_SETUP;
			snprintf(res->msg, sizeof(res->msg), "cannot make the pool's queue");
			goto close_fh;
		}
		pool_ok = 1;
		if (o.callers && callers_init(&run, res->msg, sizeof(res->msg))) {
			res->status = ST_SETUP;
			goto close_fh;
		}
	}
	run.w = calloc((size_t)nthreads, sizeof(*run.w));
	char(*paths)[4096] = o.dir ? calloc((size_t)nthreads, sizeof(*paths)) : NULL;
	if (!run.w || (o.dir && !paths)) {
		res->status = ST_SETUP;
		snprintf(res->msg, sizeof(res->msg), "out of memory");
		free(paths);
		goto close_fh;
	}
	uint64_t next = o.offset;
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &run.w[i];
		w->run = &run, w->id = i, w->fd = -1, w->vfd = -1;
		if (o.dir) {
			file_for_thread(paths[i], sizeof(paths[i]), i);
			w->path = paths[i];
			w->nops = per_file_ops, w->start = o.offset;
		} else {
			w->path = o.file;
			w->nops =
			    total_ops / (uint64_t)nthreads + ((uint64_t)i < total_ops % (uint64_t)nthreads);
			w->start = next;
			next += w->nops * io;
		}
		w->len = w->nops * io;
	}
	/* -Q: the callers wait at the ready and go barriers too. */
	int ncallers = run.pool.ncallers;
	pthread_barrier_init(&run.ready, NULL, (unsigned)(nthreads + ncallers) + 1);
	pthread_barrier_init(&run.go, NULL, (unsigned)(nthreads + ncallers) + 1);
	pthread_barrier_init(&run.finished, NULL, (unsigned)nthreads + 1);
	int started = 0, cstarted = 0;
	for (; started < nthreads; started++)
		if (pthread_create(&run.w[started].th, NULL, worker_main, &run.w[started]))
			break;
	for (; started == nthreads && cstarted < ncallers; cstarted++)
		if (pthread_create(&run.pool.callers[cstarted].th, NULL, caller_main,
				   &run.pool.callers[cstarted]))
			break;
	if (started < nthreads || cstarted < ncallers) {
		fprintf(stderr, "gdsio: cannot start %d threads\n", nthreads + ncallers);
		exit(EXIT_FAIL); /* barriers cannot be satisfied: nothing sane to unwind */
	}

	pthread_barrier_wait(&run.ready);
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	run.t0 = now();
	run.deadline = run.t0 + o.duration;
	run.pool.t_start_ns = now_ns(); /* -q: request 0 is available from the start */
	pthread_barrier_wait(&run.go);
	double last = run.t0;
	while (atomic_load_explicit(&run.done, memory_order_acquire) < nthreads) {
		usleep(20000);
		double t = now();
		if (t - last >= 0.5) {
			progress_line(&run, t, 0);
			last = t;
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	progress_line(&run, 0, 1);
	/* -Q: the callers are past their last request once the pool threads
	 * are done (the last caller closed the queue). */
	for (int i = 0; i < ncallers; i++) {
		pthread_join(run.pool.callers[i].th, NULL);
		hist_merge(&res->bh, run.pool.callers[i].rhist);
	}
	double t_end = run.t0;
	for (int i = 0; i < nthreads; i++)
		if (run.w[i].t_end > t_end)
			t_end = run.w[i].t_end;
	res->secs = t_end - run.t0;
	res->cpu_user = cpu_secs(&ru1, 0) - cpu_secs(&ru0, 0);
	res->cpu_sys = cpu_secs(&ru1, 1) - cpu_secs(&ru0, 1);
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &run.w[i];
		res->bytes += w->bytes, res->ops += w->ops;
		if (w->hist)
			hist_merge(&res->h, w->hist);
		if (w->bhist)
			hist_merge(&res->bh, w->bhist);
		if (w->status > res->status) {
			res->status = w->status;
			snprintf(res->msg, sizeof(res->msg), "thread %d: %.480s", i, w->msg);
		}
	}
	if (atomic_load(&abandon))
		return; /* the caller prints and leaves without teardown */
	pthread_barrier_wait(&run.finished);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(run.w[i].th, NULL);
		free(run.w[i].hist);
		free(run.w[i].bhist);
	}
	pthread_barrier_destroy(&run.ready);
	pthread_barrier_destroy(&run.go);
	pthread_barrier_destroy(&run.finished);
	free(paths);
	free(run.w);
close_fh:
	callers_fini(&run);
	if (pool_ok)
		pool_fini(&run);
	if (run.shared_registered)
		cuFileBufDeregister(run.shared.ptr);
	buffer_free(&run.shared);
	if (run.fh_ok)
		cuFileHandleDeregister(run.fh);
close_fds:
	if (run.fd >= 0)
		close(run.fd);
	if (run.vfd >= 0)
		close(run.vfd);
}

/* Every -w thread count x every -i IO size, in that order, each result
 * printed (and written to -C) as it comes, the chart (-G) at the end.
 * Returns the worst status of the runs (skipped ones do not count), or -1
 * when the CSV file cannot be made. */
int sweep(void)
{
	FILE *csv = NULL;
	if (o.csv) {
		csv = fopen(o.csv, "w");
		if (!csv) {
			fprintf(stderr, "gdsio: %s: %s\n", o.csv, strerror(errno));
			return -1;
		}
		csv_header(csv);
	}
	int nres = o.nios * o.nthreads;
	struct result *res = calloc((size_t)nres, sizeof(*res));
	if (!res)
		return -1;
	int worst = ST_OK, k = 0;
	for (int ti = 0; ti < o.nthreads; ti++) {
		for (int ii = 0; ii < o.nios; ii++, k++) {
			/* -M: one run, its ops of every size (the buffer of the
			 * largest). */
			size_t io = o.ios[ii];
			for (int j = 0; o.mix && j < o.nios; j++)
				io = o.ios[j] > io ? o.ios[j] : io;
			run_one(io, o.threads[ti], &res[k]);
			print_result(&res[k]);
			if (csv)
				csv_row(csv, &res[k]);
			if (res[k].status > worst && res[k].status != ST_SKIPPED)
				worst = res[k].status;
			if (atomic_load(&abandon)) {
				/* I/O the library never completed may still target our
				 * buffers: leave without tearing anything down. */
				fflush(NULL);
				_exit(EXIT_FAIL);
			}
			if (res[k].status == ST_UNSUPPORTED || o.mix) {
				k++;
				goto done;
			}
		}
	}
done:
	if (csv)
		fclose(csv);
	if (o.svg) {
		if (write_svg(o.svg, res, k))
			fprintf(stderr, "gdsio: writing %s failed\n", o.svg);
		else
			printf("# chart: %s\n", o.svg);
	}
	free(res);
	return worst;
}
