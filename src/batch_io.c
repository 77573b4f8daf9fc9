/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batch_io.c - the data path of batch entries.
 *
 * DESIGN
 * A batch of many small entries must keep every CPU reading the page cache
 * and the copy engine busy; running each entry as its own synchronous
 * request (lane, context, pread, copy, event wait, per entry) spends more
 * time waiting for each copy than moving data.  Here one executor thread
 * serves a sequence of entries (its share of a submission, batch.c) with
 * ONE lane, taken once:
 *
 *   - Entries are packed into the lane's staging buffers one after the
 *     other.  Entries of one handle and direction whose file ranges follow
 *     each other form a run: one pread (or pwrite) for the whole run.
 *   - For a read run, after its pread the host-to-device copies are queued
 *     back to back on the lane's stream, one per stretch of entries that
 *     are contiguous in device memory too (gdsio-style batches of
 *     consecutive buffers become one copy).  The thread goes on reading the
 *     next run while they run.
 *   - Stretches of at most 512 KiB are not queued one by one but gathered,
 *     up to 16, and handed to the driver in one cuMemcpyBatchAsync where it
 *     has one (CUDA 13): a paged KV pool's blocks are scattered in device
 *     memory, and separate 64 KiB copies cannot pass 17.4 GB/s on the H200
 *     machine where grouped ones reach 47.6.  The gathered copies are
 *     queued when 16 are gathered, before any other copy on the stream, and
 *     when the buffer is sealed; a refused grouped call falls back to
 *     separate copies.
 *   - When a buffer is full the lane's event of that buffer is recorded and
 *     the next buffer is filled; a buffer is waited for (one event) only
 *     when it is needed again or at the end.  Then all entries staged in it
 *     complete together: one call of done(), i.e. one lock of the batch.
 *   - Writes are the mirror image: device-to-host copies of a run are
 *     queued when the run closes, and its pwrite happens when the buffer is
 *     retired, after the event.
 *
 * Per entry in the common case (device memory of the primary context, same
 * handle and buffer base as the previous entry, file offsets following each
 * other) that costs one atomic claim (batch.c) and no lock, system call or
 * CUDA call of its own: the pread, the copy, the event and the completion
 * lock are shared by its run or buffer.  The lookups of the handle (table
 * lock) and of the buffer (one CUDA call) are cached per thread.  A run's
 * read or write is one use of the handle's files (begin_run): an entry of
 * a handle deregistered after it was taken fails there with EBADF, and one
 * whose number no longer names the file registered goes where it points.
 *
 * Results are exactly what the synchronous path gives each entry alone: the
 * entries a run's pread covers get their bytes from it, and if the merged
 * pread or pwrite fails or is short (end of file included), the entries it
 * did not cover are redone one by one, so each gets its own error or short
 * count.  An entry
 * whose copy cannot be queued or whose buffer's event fails gets
 * CU_FILE_CUDA_DRIVER_ERROR (and a write is then not written).  Entries the
 * fast path does not serve (host memory, other contexts' memory, userspace
 * file systems, entries larger than a staging chunk) first drain and give
 * back the lane, then run through the synchronous engine as before.
 *
 * Staging layout: a run starts at an offset aligned to the handle's
 * O_DIRECT alignment (64 bytes where no transfer of the run can be direct),
 * with the byte at file offset `off` placed at start + off % alignment, the
 * layout fio_read_staged and fio_write require; a read run that may go
 * direct — through an O_DIRECT handle, or a buffered handle's O_DIRECT twin
 * for the bytes the page cache lacks (fio_reads_direct) — takes the aligned
 * range around it.  Staging memory is never copied past a range that was
 * read.  (Buffered handles' runs once started at 64-byte offsets: a run of
 * uncached bytes then went to the twin misaligned and failed with EINVAL.)
 */
#define _GNU_SOURCE
#include "batch_io.h"

#include <limits.h>
#include <string.h>

#include "copygroup.h"
#include "cuda_loader.h"
#include "fileio.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "profile.h"

/* Alignment of runs in a staging buffer for buffered handles. */
#define PACK_ALIGN 64u

void bio_begin(struct bio_worker *w, bio_done_fn done, void *arg)
{
	memset(w, 0, sizeof(*w));
	w->done = done;
	w->arg = arg;
}

static void flush_done(struct bio_worker *w)
{
	if (!w->done_head)
		return;
	struct bio_item *list = w->done_head;
	w->done_head = w->done_tail = NULL;
	w->done(w->arg, list);
}

/* Records an item's result; handed to done() at the next flush. */
static void finish(struct bio_worker *w, struct bio_item *it, ssize_t result)
{
	it->result = result;
	if (result > 0)
		prof_bytes((size_t)result);
	/* Counted by the batch counters, not as a read or write (t0 0). */
	request_done(&it->io, 0, result, it->owns_handle);
	it->owns_handle = false;
	it->next = NULL;
	if (w->done_tail)
		w->done_tail->next = it;
	else
		w->done_head = it;
	w->done_tail = it;
}

static long cuda_error(const char *what, CUresult r)
{
	log_error("batch I/O: %s failed: %s", what, cuda_error_name(r));
	return OCF_ERR(CU_FILE_CUDA_DRIVER_ERROR);
}

/* Where a run may start in a staging buffer: aligned for direct I/O when
 * the handle writes with O_DIRECT, or may read with it (an O_DIRECT handle,
 * or a buffered one whose uncached bytes its O_DIRECT twin reads). */
static size_t run_align(const struct ocf_handle *h, bool write)
{
	return h->odirect || (!write && fio_reads_direct(h)) ? h->align : PACK_ALIGN;
}

/* Bytes of staging a run of len bytes needs from its aligned start. */
static size_t footprint(const struct ocf_handle *h, size_t skew, size_t len, bool write)
{
	if (write || !fio_reads_direct(h))
		return skew + len;
	return OCF_ALIGN_UP(skew + len, (size_t)h->align); /* the widened read */
}

static char *stage_base(const struct bio_worker *w, int j) { return w->lane->bufs[j].buf; }

static void stage_append(struct bio_buf *bb, struct bio_item *it)
{
	it->next = NULL;
	if (bb->tail)
		bb->tail->next = it;
	else
		bb->head = it;
	bb->tail = it;
}

/* A run's file I/O (len bytes, device memory), as request_engine brackets
 * a request's (handle_begin_io): 0 with *use the handle to go through, or
 * -EBADF, each item of [first, last] then failed with it. */
static int begin_run(struct ocf_handle *h, size_t len, bool write, struct ocf_handle *view, struct ocf_handle **use,
		     struct bio_item *first, struct bio_item *last)
{
	int e = handle_begin_io(h, fio_own_files(h, len, write, true), view, use);
	if (e)
		for (struct bio_item *it = first; it != last->next; it = it->next)
			it->result = e;
	return e;
}

/* Staged read of [off, off+n) whose byte off lands at staging offset
 * `stage` of buffer j. */
static ssize_t read_into_stage(struct bio_worker *w, struct ocf_handle *h, size_t stage, off_t off, size_t n)
{
	size_t start = stage - fio_stage_skew(h, off);
	struct ocf_slot view = {
	    .buf = stage_base(w, w->cur) + start,
	    .size = w->lane->bufs[w->cur].size - start,
	    .chunk = w->lane->bufs[w->cur].size - start,
	};
	uint64_t t0 = prof_now();
	ssize_t r = fio_read_staged(h, &view, off, n);
	prof_time(PROF_T_FILE, t0);
	return r;
}

/* Grouped copies: on while the driver has cuMemcpyBatchAsync and has not
 * refused the form (OPENCUFILE_GROUPED_COPIES=0 turns them off). */
static int grouped_state = -1; /* -1 unknown, 0 off, 1 on; relaxed atomics */

static bool grouped_on(void)
{
	int v = __atomic_load_n(&grouped_state, __ATOMIC_RELAXED);
	if (v < 0) {
		int want = cg_form_available();
		/* From unknown only: a refusal's 0 is never overwritten. */
		int unknown = -1;
		__atomic_compare_exchange_n(&grouped_state, &unknown, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		v = __atomic_load_n(&grouped_state, __ATOMIC_RELAXED);
	}
	return v == 1;
}

/* Marks the n items from x on, whose copy into or out of buf[cur] was
 * queued (err 0) or failed with err. */
static void mark_copied(struct bio_worker *w, struct bio_item *x, int n, long err)
{
	for (int i = 0; i < n; i++, x = x->next) {
		x->copied = err == 0;
		if (err)
			x->result = err;
	}
	w->buf[w->cur].copies |= err == 0;
}

/* Queues the gathered copies of buf[cur]: one grouped call, or one copy
 * each where there is only one or the driver refused the group.  A refusal
 * falls back to the separate copies (a copy the failed call may have queued
 * is queued again: the same bytes to the same place), so a grouped call
 * never costs an entry its data; a driver that calls the form invalid
 * (CUDA_ERROR_INVALID_VALUE or _NOT_SUPPORTED) gets separate copies from
 * then on. */
static void group_flush(struct bio_worker *w)
{
	int n = w->ng;
	if (!n)
		return;
	w->ng = 0;
	CUstream s = w->lane->nb_stream;
	if (n > 1 && grouped_on()) {
		uint64_t t0 = prof_now();
		CUresult r = cg_memcpy_batch(w->g_dst, w->g_src, w->g_len, (size_t)n, s);
		prof_time(PROF_T_SUBMIT, t0);
		if (r == CUDA_SUCCESS) {
			for (int k = 0; k < n; k++)
				mark_copied(w, w->g_first[k], w->g_items[k], 0);
			return;
		}
		log_warn("batch I/O: grouped copy of %d blocks failed (%s); copying them one by one", n,
			 cuda_error_name(r));
		/* The failed call may have queued some of its copies: the
		 * buffer's event must follow them (seal) and be waited for
		 * (retire) even if every copy below fails too, so that none
		 * lands after its entry completed. */
		w->buf[w->cur].copies = true;
		if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_SUPPORTED)
			__atomic_store_n(&grouped_state, 0, __ATOMIC_RELAXED);
	}
	for (int k = 0; k < n; k++) {
		uint64_t t0 = prof_now();
		CUresult r = ocf_cu.MemcpyHtoDAsync(w->g_dst[k], (const void *)(uintptr_t)w->g_src[k], w->g_len[k], s);
		prof_time(PROF_T_SUBMIT, t0);
		mark_copied(w, w->g_first[k], w->g_items[k], r == CUDA_SUCCESS ? 0 : cuda_error("staging copy", r));
	}
}

/* Gathers one host-to-device copy of n items from `first` on. */
static void group_add(struct bio_worker *w, CUdeviceptr dev, const char *src, size_t len, struct bio_item *first,
		      int n)
{
	if (w->ng == BIO_GROUP)
		group_flush(w);
	int k = w->ng++;
	w->g_dst[k] = dev;
	w->g_src[k] = (CUdeviceptr)(uintptr_t)src;
	w->g_len[k] = len;
	w->g_first[k] = first;
	w->g_items[k] = n;
}

/* Queues the copies of the items [first, last] of the open run, one per
 * stretch contiguous in device memory.  Reads copy what was read
 * (it->result bytes); writes copy the whole entry.  Read copies are
 * gathered for a grouped call (group_flush) where the driver has one. */
static void queue_copies(struct bio_worker *w, struct bio_item *first, struct bio_item *last)
{
	bool group = !w->run_write && grouped_on();
	CUstream s = w->lane->nb_stream;
	struct bio_item *seg = NULL, *it = first, *stop = last->next;
	CUdeviceptr dev = 0;
	size_t at = 0, len = 0;
	int items = 0; /* in [seg, it) */
	for (;;) {
		bool more = it != stop;
		size_t n = 0;
		if (more && (w->run_write || it->result > 0))
			n = w->run_write ? it->io.len : (size_t)it->result;
		bool joins = seg && n && it->io.t.dev == dev + len && it->stage == at + len &&
			     buf_same_allocation(&it->io.t, &seg->io.t);
		if (seg && !joins && group && len <= OCF_GROUP_COPY_MAX) {
			group_add(w, dev, stage_base(w, w->cur) + at, len, seg, items);
			seg = NULL;
		} else if (seg && !joins) {
			group_flush(w); /* stream order: gathered copies first */
			/* Queue [seg, it). */
			char *src = stage_base(w, w->cur) + at;
			uint64_t t0 = prof_now();
			CUresult r = w->run_write ? ocf_cu.MemcpyDtoHAsync(src, dev, len, s)
						  : ocf_cu.MemcpyHtoDAsync(dev, src, len, s);
			prof_time(PROF_T_SUBMIT, t0);
			mark_copied(w, seg, items, r == CUDA_SUCCESS ? 0 : cuda_error("staging copy", r));
			seg = NULL;
		}
		if (!more)
			break;
		if (n && !seg) {
			seg = it;
			dev = it->io.t.dev;
			at = it->stage;
			len = 0;
			items = 0;
		}
		len += n;
		items += n > 0;
		it = it->next;
	}
}

/* A read of `bad` alone that failed may have stored into the staging of the
 * aligned block it shares with the entries before it (a direct read that
 * fails can leave part of its range written), over bytes those entries
 * already hold.  They are read alone again, latest first, as far back as a
 * failed read may have reached; one that fails now gets its error. */
static void restage_before(struct bio_worker *w, struct ocf_handle *h, struct bio_item *first,
			   struct bio_item *bad)
{
	size_t A = fio_align(h);
	off_t lo = (off_t)OCF_ALIGN_DOWN((size_t)bad->io.off, A);
	for (struct bio_item *stop = bad; stop != first;) {
		struct bio_item *e = first;
		while (e->next != stop)
			e = e->next;
		if (e->io.off + (off_t)e->io.len <= lo)
			return;
		if (e->result > 0) {
			e->result = read_into_stage(w, h, e->stage, e->io.off, e->io.len);
			if (e->result < 0)
				lo = OCF_MIN(lo, (off_t)OCF_ALIGN_DOWN((size_t)e->io.off, A));
		}
		stop = e;
	}
}

/* Reads the open run and queues its copies (read runs), or queues the
 * copies that fill its staging (write runs). */
static void close_run(struct bio_worker *w)
{
	struct bio_item *first = w->run_first, *last = w->run_last;
	if (!first)
		return;
	w->run_first = w->run_last = NULL;
	struct ocf_handle *h = w->run_h;
	if (w->run_write) {
		for (struct bio_item *it = first; it != last->next; it = it->next)
			it->result = 0;
		queue_copies(w, first, last);
		return;
	}
	/* The run's reads use the handle's files (handle.c): not once it is
	 * deregistered; only the number once it names another file. */
	struct ocf_handle *real = h, view;
	if (begin_run(real, w->run_len, false, &view, &h, first, last))
		return;
	ssize_t got = read_into_stage(w, h, w->run_pos + w->run_skew, w->run_off, w->run_len);
	prof_step(w->steps, PROF_S_READ);
	size_t staged = 0; /* bytes of the run that hold file data, from its start */
	for (struct bio_item *it = first; it != last->next; it = it->next) {
		size_t rel = (size_t)(it->io.off - w->run_off);
		bool covered = got >= 0 && (size_t)got >= rel + it->io.len;
		if (!covered && first != last) {
			/* The merged read failed or came back short before this
			 * entry's end: a read that broke off midway, or end of
			 * file.  Which it is, and each entry's own result (short
			 * at end of file, its error otherwise), the entry alone
			 * says. */
			it->result = read_into_stage(w, h, it->stage, it->io.off, it->io.len);
			if (it->result < 0 && it != first)
				restage_before(w, h, first, it);
		} else if (got < 0) {
			it->result = got;
		} else {
			size_t n = (size_t)got > rel ? (size_t)got - rel : 0;
			it->result = (ssize_t)OCF_MIN(n, it->io.len);
		}
		if (it->result > 0)
			staged = OCF_MAX(staged, rel + (size_t)it->result);
	}
	handle_end_io(real, h);
	/* Copies this worker queued or gathered before this run's are ahead
	 * of it. */
	if (staged > 0)
		fio_flush_before_copy(stage_base(w, w->cur) + w->run_pos + w->run_skew, staged,
				      w->buf[w->cur].copies || w->ng ? INT_MAX : 0);
	queue_copies(w, first, last);
}

/* Writes the staged items [first, last] (file-contiguous, copies done) with
 * one pwrite; entries it did not cover are written again one by one. */
static void write_stretch(struct bio_worker *w, int j, struct bio_item *first, struct bio_item *last)
{
	struct ocf_handle *h = first->io.h;
	size_t total = (size_t)(last->io.off - first->io.off) + last->io.len;
	char *base = stage_base(w, j);
	struct ocf_handle *real = h, view;
	if (begin_run(real, total, true, &view, &h, first, last)) /* as a read run's (close_run) */
		return;
	uint64_t t0 = prof_now();
	ssize_t wr = fio_write(h, base + first->stage, total, first->io.off, NULL, NULL);
	prof_time(PROF_T_FILE, t0);
	for (struct bio_item *it = first; it != last->next; it = it->next) {
		size_t rel = (size_t)(it->io.off - first->io.off);
		if (wr >= 0 && (size_t)wr >= rel + it->io.len)
			it->result = (ssize_t)it->io.len;
		else if (first == last)
			it->result = wr;
		else
			it->result = fio_write(h, base + it->stage, it->io.len, it->io.off, NULL, NULL);
	}
	handle_end_io(real, h);
}

/* Waits for buffer j's copies, writes its write runs and completes every
 * item staged in it. */
static void retire(struct bio_worker *w, int j)
{
	struct bio_buf *bb = &w->buf[j];
	if (bb->copies) {
		CUstream s = w->lane->nb_stream;
		CUresult r = bb->recorded ? gpu_event_wait_prompt(bb->ev, bb->used) : ocf_cu.StreamSynchronize(s);
		prof_step(w->steps, PROF_S_COPIED);
		if (r != CUDA_SUCCESS) {
			long err = cuda_error("waiting for staging copies", r);
			/* A failed wait does not cancel the copies: none may land
			 * after its entry completed, and the buffer must be idle.
			 * A stream that cannot be drained costs the lane (drain). */
			if (!bb->recorded || ocf_cu.StreamSynchronize(s) != CUDA_SUCCESS)
				w->dirty = true;
			for (struct bio_item *it = bb->head; it; it = it->next)
				if (it->copied) {
					it->copied = false;
					it->result = err;
				}
		}
	}
	/* Writes: stretches of items whose copies arrived, within one run. */
	struct bio_item *it = bb->head;
	while (it) {
		if (!it->write || !it->copied) {
			it = it->next;
			continue;
		}
		struct bio_item *last = it;
		while (last->next && !last->next->run_head && last->next->copied)
			last = last->next;
		write_stretch(w, j, it, last);
		it = last->next;
	}
	for (it = bb->head; it;) {
		struct bio_item *next = it->next;
		finish(w, it, it->result);
		it = next;
	}
	memset(bb, 0, sizeof(*bb));
	flush_done(w);
}

/* Hands buffer cur to the GPU: its event marks the end of its copies. */
static void seal(struct bio_worker *w)
{
	close_run(w);
	group_flush(w);
	struct bio_buf *bb = &w->buf[w->cur];
	if (!bb->head)
		return;
	bb->busy = true;
	if (bb->copies) {
		bb->ev = gpu_lane_event(w->lane, w->cur, bb->used);
		CUresult r = ocf_cu.EventRecord(bb->ev, w->lane->nb_stream);
		/* Without the event, retire() synchronises the stream instead. */
		bb->recorded = r == CUDA_SUCCESS;
		prof_step(w->steps, PROF_S_QUEUED);
		if (!bb->recorded)
			log_warn("batch I/O: cuEventRecord failed (%s); synchronising the stream", cuda_error_name(r));
	}
}

static void next_buffer(struct bio_worker *w)
{
	seal(w);
	w->cur = (w->cur + 1) % w->lane->depth;
	if (w->buf[w->cur].busy)
		retire(w, w->cur);
}

/* Completes everything staged and gives the lane back. */
static void drain(struct bio_worker *w)
{
	if (!w->lane) {
		flush_done(w);
		return;
	}
	seal(w);
	int depth = w->lane->depth;
	for (int k = 1; k <= depth; k++) { /* oldest first */
		int j = (w->cur + k) % depth;
		if (w->buf[j].busy)
			retire(w, j);
	}
	bool clean = true;
	if (w->dirty) {
		/* A stream retire() could not drain: one more try before the
		 * lane is given back, else it is discarded. */
		CUresult r = ocf_cu.StreamSynchronize(w->lane->nb_stream);
		if (r != CUDA_SUCCESS) {
			log_error("batch I/O: staging stream could not be drained (%s): lane discarded",
				  cuda_error_name(r));
			clean = false;
		}
	}
	cuda_ctx_pop();
	if (clean)
		pool_put(w->lane);
	else
		pool_discard(w->lane);
	w->lane = NULL;
	w->gpu = NULL;
	w->dirty = false;
	flush_done(w);
}

/* A lane of gpu's pool, with its primary context current. */
static int take_lane(struct bio_worker *w, struct ocf_gpu *gpu)
{
	if (w->lane && w->gpu == gpu)
		return 0;
	drain(w);
	struct ocf_lane *lane;
	int r = pool_get(&gpu->pool, &lane);
	if (r)
		return r;
	CUresult cr = ocf_cu.CtxPushCurrent(gpu->primary);
	if (cr != CUDA_SUCCESS) {
		pool_put(lane);
		return cuda_error("cuCtxPushCurrent", cr);
	}
	w->lane = lane;
	w->gpu = gpu;
	w->cur = 0;
	memset(w->buf, 0, sizeof(w->buf));
	return 0;
}

static bool staged_path(const struct ocf_io *io)
{
	return io->t.device && io->t.use_stream && io->h->type != CU_FILE_HANDLE_TYPE_USERSPACE_FS &&
	       io->len <= pool_chunk(&io->t.gpu->pool);
}

/* Places a device item in the staging buffers, extending the open run when
 * its file range follows. */
static void stage(struct bio_worker *w, struct bio_item *it)
{
	struct ocf_handle *h = it->io.h;
	off_t off = it->io.off;
	size_t n = it->io.len;
	size_t bsize = w->lane->bufs[w->cur].size;
	if (w->run_first && w->run_h == h && w->run_write == it->write && w->run_off + (off_t)w->run_len == off) {
		size_t end = w->run_pos + footprint(h, w->run_skew, w->run_len + n, it->write);
		if (end <= bsize) {
			it->stage = w->run_pos + w->run_skew + w->run_len;
			it->run_head = false;
			w->run_len += n;
			w->run_last = it;
			w->buf[w->cur].used = end;
			stage_append(&w->buf[w->cur], it);
			return;
		}
	}
	close_run(w);
	size_t skew = fio_stage_skew(h, off);
	size_t foot = footprint(h, skew, n, it->write);
	size_t pos = OCF_ALIGN_UP(w->buf[w->cur].used, run_align(h, it->write));
	if (pos + foot > bsize) {
		next_buffer(w);
		pos = 0;
	}
	w->run_first = w->run_last = it;
	w->run_h = h;
	w->run_write = it->write;
	w->run_off = off;
	w->run_len = n;
	w->run_pos = pos;
	w->run_skew = skew;
	it->stage = pos + skew;
	it->run_head = true;
	w->buf[w->cur].used = pos + foot;
	stage_append(&w->buf[w->cur], it);
}

void bio_add(struct bio_worker *w, struct bio_item *it)
{
	it->copied = false;
	ssize_t r = request_prepare(it->fh, it->base, it->size, it->file_offset, it->buf_offset, it->write,
				    &w->cache, &it->io, &it->owns_handle);
	if (r || it->size == 0) {
		finish(w, it, r);
		return;
	}
	if (!staged_path(&it->io)) {
		/* The synchronous engine, with no lane held here (it may need
		 * one of the same pool). */
		drain(w);
		r = request_engine(&it->io, it->write);
		finish(w, it, r);
		flush_done(w);
		return;
	}
	r = take_lane(w, it->io.t.gpu);
	if (r) {
		finish(w, it, r);
		return;
	}
	prof_step(w->steps, PROF_S_STAGED);
	stage(w, it);
}

void bio_close(struct bio_worker *w)
{
	close_run(w);
}

void bio_end(struct bio_worker *w)
{
	drain(w);
	request_cache_drop(&w->cache);
}
