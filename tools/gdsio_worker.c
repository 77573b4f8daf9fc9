/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_worker.c - one worker thread of a run: its setup (CUDA context,
 * file and cuFile handle with -D, buffer, registration, stream, batch),
 * the synchronous loop, and its teardown.
 *
 * DESIGN: everything a worker needs is made before the run's "ready"
 * barrier and undone after its "finished" barrier, so the clock measures
 * only the loops.  A failure is recorded in the worker (worst status wins)
 * and raises the run's stop flag, so the other workers end at their next
 * operation instead of finishing a pass that is already a failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdsio.h"

void worker_fail(struct worker *w, int st, const char *fmt, ...)
{
	if (st > w->status) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->msg, sizeof(w->msg), fmt, ap);
		va_end(ap);
		w->status = st;
	}
	atomic_store_explicit(&w->run->stop, 1, memory_order_relaxed);
}

uint64_t op_offset(struct worker *w, uint64_t k)
{
	size_t io = w->run->io;
	if (!is_random())
		return w->start + (k % w->nops) * io;
	uint64_t span = w->len - io + 1, r = rng_next(&w->rng) % span;
	if (!o.unaligned)
		r &= ~(uint64_t)4095;
	else if (r % 4096 == 0)
		r = r ? r - 1 : (span > 1 ? 1 : 0);
	return w->start + r;
}

/* cuFileReadv/cuFileWritev (1.19) are looked up at run time, so that gdsio
 * also runs with a libcufile that lacks them (NVIDIA's 1.15, the reference
 * in comparison runs); only -v needs them. */
static __typeof__(cuFileReadv) *p_readv;
static __typeof__(cuFileWritev) *p_writev;

int resolve_vector_io(void)
{
	*(void **)&p_readv = dlsym(RTLD_DEFAULT, "cuFileReadv");
	*(void **)&p_writev = dlsym(RTLD_DEFAULT, "cuFileWritev");
	return p_readv && p_writev ? 0 : -1;
}

/* One synchronous op of the selected transfer type, n bytes between file
 * offset `off` and the worker's buffer at byte `at`. */
int do_io(struct worker *w, size_t at, uint64_t off, size_t n)
{
	char eb[160];
	int e;
	CUresult r;
	char *p = (char *)w->buf.ptr + at;
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)w->buf.ptr + at;
	switch (o.xfer) {
	case X_GPUD: {
		ssize_t got;
		if (o.vec) {
			for (unsigned j = 0; j < o.vec; j++) {
				size_t fo, mo, len;
				vec_piece(n, j, &fo, &mo, &len);
				w->iov[j].base = p + mo, w->iov[j].len = len;
			}
			got = is_write() ? p_writev(w->fh, w->iov, o.vec, (off_t)off, 0)
					 : p_readv(w->fh, w->iov, o.vec, (off_t)off, 0);
		} else {
			got = is_write() ? cuFileWrite(w->fh, p, n, (off_t)off, 0)
					 : cuFileRead(w->fh, p, n, (off_t)off, 0);
		}
		if (got == (ssize_t)n)
			return 0;
		worker_fail(w, ST_IOERR, "%s of %zu at %llu returned %s",
			    o.vec ? (is_write() ? "cuFileWritev" : "cuFileReadv")
				  : (is_write() ? "cuFileWrite" : "cuFileRead"),
			    n, (unsigned long long)off, io_ret_str(got, errno, eb, sizeof(eb)));
		return -1;
	}
	case X_CPU:
		e = is_write() ? full_pwrite(w->fd, p, n, off) : full_pread(w->fd, p, n, off);
		if (!e)
			return 0;
		worker_fail(w, ST_IOERR, "%s of %zu at %llu: %s%s", is_write() ? "pwrite" : "pread", n,
			    (unsigned long long)off, strerror(-e),
			    e == -EINVAL && o.odirect ? " (O_DIRECT needs aligned offsets and sizes; try -N)"
						      : "");
		return -1;
	case X_CPU_GPU:
		if (is_write()) {
			r = cu.MemcpyDtoH(w->stage, d, n);
			if (r)
				goto cuda_fail;
			e = full_pwrite(w->fd, w->stage, n, off);
		} else {
			e = full_pread(w->fd, w->stage, n, off);
			if (!e) {
				r = cu.MemcpyHtoD(d, w->stage, n);
				if (r)
					goto cuda_fail;
			}
		}
		if (!e)
			return 0;
		worker_fail(w, ST_IOERR, "%s of %zu at %llu: %s", is_write() ? "pwrite" : "pread", n,
			    (unsigned long long)off, strerror(-e));
		return -1;
	}
	return -1;
cuda_fail:
	worker_fail(w, ST_IOERR, "CUDA copy of %zu: %s (%d)", n, cuda_dl_errstr(&cu, r), (int)r);
	return -1;
}

int keep_going(struct worker *w, uint64_t k, double t)
{
	if (atomic_load_explicit(&w->run->stop, memory_order_relaxed))
		return 0;
	if (o.duration > 0)
		return k == 0 || t < w->run->deadline;
	return o.mix || k < w->nops; /* -M: loop_sync stops at the region's end */
}

static void loop_sync(struct worker *w)
{
	size_t io = w->run->io;
	double t = 0;
	uint64_t pos = 0; /* -M: where in the region the next op starts */
	for (uint64_t k = 0; keep_going(w, k, t); k++) {
		uint64_t off = op_offset(w, k);
		if (o.mix) {
			/* The sizes in turn, through the region in order (again
			 * from its start with -T). */
			if (pos >= w->len) {
				if (o.duration <= 0)
					break;
				pos = 0;
			}
			io = o.ios[k % (uint64_t)o.nios];
			if (io > w->len - pos)
				io = (size_t)(w->len - pos);
			off = w->start + pos;
			pos += io;
		}
		/* -A: the shared buffer mirrors the data set, op at file offset
		 * off goes to buffer byte off - -o. */
		size_t at = o.shared ? (size_t)(off - o.offset) : 0;
		if (o.verify && (is_write() ? per_op(fill_buffer, w, at, off, io) : poison_buffer(w, at, io)))
			return;
		uint64_t t0 = now_ns();
		if (do_io(w, at, off, io))
			return;
		uint64_t t1 = now_ns();
		hist_add(w->hist, t1 - t0);
		w->bytes += io, w->ops++;
		atomic_fetch_add_explicit(&w->progress, io, memory_order_relaxed);
		if (o.verify && (is_write() ? verify_write(w, off, io) : per_op(verify_read, w, at, off, io)))
			return;
		t = (double)t1 * 1e-9;
	}
}

static void worker_setup(struct worker *w)
{
	struct run *run = w->run;
	size_t io = run->io;
	size_t buflen = worker_buflen(io);
	char eb[160];
	w->rng = ((uint64_t)o.seed << 32) ^ (0x9E3779B97F4A7C15ull * (uint64_t)(w->id + 1));
	if (!w->rng)
		w->rng = 1;
	w->hist = calloc(1, sizeof(*w->hist));
	if (o.xfer == X_BATCH || o.piece)
		w->bhist = calloc(1, sizeof(*w->bhist));
	if (!w->hist || ((o.xfer == X_BATCH || o.piece) && !w->bhist)) {
		worker_fail(w, ST_SETUP, "out of memory");
		return;
	}
	if (have_cuda) {
		cu.Init(0);
		CUresult r = cuda_dl_bind(&cu, o.gpu, &w->ctx);
		if (r) {
			worker_fail(w, ST_SETUP, "binding GPU %d: %s (%d)", o.gpu, cuda_dl_errstr(&cu, r),
				    (int)r);
			return;
		}
		w->ctx_held = 1;
	}
	if (o.dir) {
		w->own_fd = 1;
		int flags = (is_write() ? O_RDWR : O_RDONLY) | (o.odirect ? O_DIRECT : 0) |
			    (o.newfile ? O_CREAT | O_TRUNC : 0);
		w->fd = open(w->path, flags, 0644);
		w->vfd = o.verify ? open(w->path, O_RDONLY) : -1;
		if (w->fd < 0 || (o.verify && w->vfd < 0)) {
			worker_fail(w, ST_SETUP, "open %s: %s", w->path, strerror(errno));
			return;
		}
		if (uses_cufile(o.xfer)) {
			CUfileError_t e = register_fd(w->fd, &w->fh);
			if (e.err) {
				worker_fail(w, ST_SETUP, "cuFileHandleRegister(%s): %s", w->path,
					    cufile_err(e, eb, sizeof(eb)));
				return;
			}
			w->own_fh = 1;
		}
	} else {
		w->fd = run->fd, w->vfd = run->vfd, w->fh = run->fh;
	}
	char why[512];
	if (run_buffer()) {
		/* Registered (or not) once by run_one; with -Q each piece goes
		 * to its caller's buffer, all of one kind. */
		w->buf = o.callers ? run->pool.callers[0].buf : run->shared;
	} else if (buffer_alloc(&w->buf, effective_mem(), buflen, o.gpu, why, sizeof(why))) {
		worker_fail(w, ST_SETUP, "%s", why);
		return;
	}
	if (o.vec && !(w->iov = calloc(o.vec, sizeof(*w->iov)))) {
		worker_fail(w, ST_SETUP, "out of memory");
		return;
	}
	if (uses_cufile(o.xfer) && !o.skip_reg && !run_buffer()) {
		CUfileError_t e = cuFileBufRegister(w->buf.ptr, buflen, 0);
		if (e.err) {
			worker_fail(w, ST_SETUP,
				    "cuFileBufRegister(%s, %zu): %s (use -b to run unregistered)",
				    mem_name[w->buf.kind], buflen, cufile_err(e, eb, sizeof(eb)));
			return;
		}
		w->registered = 1;
	}
	if (o.xfer == X_CPU_GPU) {
		if (!w->buf.on_device) {
			worker_fail(w, ST_SETUP, "-x 2 (CPU_GPU) needs device memory (-m 0 or 1)");
			return;
		}
		size_t slen = o.piece ? o.piece : io; /* -q: one piece at a time */
		if (cu.MemHostAlloc(&w->stage, slen, CU_MEMHOSTALLOC_PORTABLE)) {
			worker_fail(w, ST_SETUP, "cuMemHostAlloc(%zu) for the staging buffer failed", slen);
			return;
		}
		w->stage_pinned = 1;
	}
	if (o.verify || w->buf.on_device) {
		w->vhost_len = buflen < VERIFY_CHUNK ? buflen : VERIFY_CHUNK;
		w->vhost = scratch_alloc(w->vhost_len, &w->vhost_pinned);
		if (!w->vhost) {
			worker_fail(w, ST_SETUP, "out of memory for the verification scratch");
			return;
		}
	}
	if (o.xfer == X_ASYNC || o.xfer == X_ASYNC_REG) {
		if (!have_cuda || !cu.StreamCreate || !cu.StreamSynchronize) {
			worker_fail(w, ST_SETUP, "async transfers need the CUDA driver (streams): %s",
				    cuda_why);
			return;
		}
		CUresult r = cu.StreamCreate(&w->stream, CU_STREAM_NON_BLOCKING);
		if (r) {
			worker_fail(w, ST_SETUP, "cuStreamCreate: %s", cuda_dl_errstr(&cu, r));
			return;
		}
		if (o.xfer == X_ASYNC_REG) {
			unsigned flags = 0;
			if (!is_random() && io % 4096 == 0 && o.offset % 4096 == 0 &&
			    (uintptr_t)w->buf.ptr % 4096 == 0)
				flags = CU_FILE_STREAM_PAGE_ALIGNED_INPUTS;
			CUfileError_t e = cuFileStreamRegister(w->stream, flags);
			if (e.err) {
				worker_fail(w, ST_UNSUPPORTED, "cuFileStreamRegister(flags %u): %s", flags,
					    cufile_err(e, eb, sizeof(eb)));
				return;
			}
			w->stream_registered = 1;
		}
	}
	if (o.xfer == X_BATCH) {
		w->batch = calloc(o.batches, sizeof(*w->batch));
		if (!w->batch) {
			worker_fail(w, ST_SETUP, "out of memory");
			return;
		}
		for (; w->nbatch < o.batches; w->nbatch++) {
			CUfileError_t e = cuFileBatchIOSetUp(&w->batch[w->nbatch], o.depth);
			if (e.err) {
				/* The first refused: batches are not supported. */
				worker_fail(w, w->nbatch ? ST_SETUP : ST_UNSUPPORTED,
					    "cuFileBatchIOSetUp(%u), handle %u of %u: %s", o.depth,
					    w->nbatch + 1, o.batches, cufile_err(e, eb, sizeof(eb)));
				return;
			}
		}
	}
	/* Writes without -V send the pattern of the first op's offsets (with
	 * -A: of the worker's whole region). */
	if (is_write() && !o.verify) {
		if (o.shared)
			fill_buffer(w, (size_t)(w->start - o.offset), w->start, (size_t)w->len);
		else
			fill_buffer(w, 0, w->start, buflen);
	}
}

static void worker_teardown(struct worker *w)
{
	if (atomic_load(&abandon))
		return; /* I/O may still be in flight into these buffers */
	for (unsigned i = 0; i < w->nbatch; i++)
		cuFileBatchIODestroy(w->batch[i]);
	free(w->batch);
	if (w->stream_registered)
		cuFileStreamDeregister(w->stream);
	if (w->stream)
		cu.StreamDestroy(w->stream);
	if (w->registered)
		cuFileBufDeregister(w->buf.ptr);
	if (!run_buffer())
		buffer_free(&w->buf);
	free(w->iov);
	scratch_free(w->vhost, w->vhost_pinned);
	scratch_free(w->stage, w->stage_pinned);
	if (w->own_fh)
		cuFileHandleDeregister(w->fh);
	if (w->own_fd) {
		if (w->fd >= 0)
			close(w->fd);
		if (w->vfd >= 0)
			close(w->vfd);
	}
	if (w->ctx_held) {
		CUdevice dev;
		if (cu.PrimaryCtxRelease && cu.DeviceGet(&dev, o.gpu) == CUDA_SUCCESS)
			cu.PrimaryCtxRelease(dev);
	}
}

void *worker_main(void *arg)
{
	struct worker *w = arg;
	worker_setup(w);
	pthread_barrier_wait(&w->run->ready);
	pthread_barrier_wait(&w->run->go);
	if (!w->status) {
		if (group_mode())
			loop_group(w);
		else if (o.piece)
			loop_pool(w);
		else
			loop_sync(w);
		if (o.fsync_end && !w->status && fsync(w->fd) != 0)
			worker_fail(w, ST_IOERR, "fsync: %s", strerror(errno));
	}
	w->t_end = now();
	atomic_fetch_add_explicit(&w->run->done, 1, memory_order_release);
	pthread_barrier_wait(&w->run->finished);
	worker_teardown(w);
	return NULL;
}
