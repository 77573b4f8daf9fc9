/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_batch.c - the grouped transfer types: -x 3/4, up to -B
 * cuFileReadAsync/cuFileWriteAsync on the worker's stream then one
 * cuStreamSynchronize; -x 5, -B entries in one cuFileBatchIOSubmit then
 * cuFileBatchIOGetStatus until every entry has completed or -t has passed.
 *
 * DESIGN: a batch the library does not finish within -t, or that reports an
 * event it was never given, may still be moving data into the worker's
 * buffer: the worker sets `abandon` and the process exits without freeing
 * anything.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdsio.h"

/* Async (-x 3/4) and batch (-x 5): groups of up to -B operations. */
void loop_group(struct worker *w)
{
	size_t io = w->run->io;
	unsigned depth = o.depth;
	size_t *sizes = calloc(depth, sizeof(*sizes));
	off_t *foffs = calloc(depth, sizeof(*foffs)), *boffs = calloc(depth, sizeof(*boffs));
	ssize_t *rets = calloc(depth, sizeof(*rets));
	uint64_t *offs = calloc(depth, sizeof(*offs));
	CUfileIOParams_t *params = calloc(depth, sizeof(*params));
	CUfileIOEvents_t *events = calloc(depth, sizeof(*events));
	char eb[160];
	double t = 0;
	int first = 1;
	if (!sizes || !foffs || !boffs || !rets || !offs || !params || !events) {
		worker_fail(w, ST_SETUP, "out of memory");
		goto out;
	}
	for (uint64_t k = 0; keep_going(w, k, t);) {
		unsigned g = depth;
		if (o.duration <= 0 && w->nops - k < g)
			g = (unsigned)(w->nops - k);
		for (unsigned i = 0; i < g; i++) {
			offs[i] = op_offset(w, k + i);
			if (o.verify &&
			    (is_write() ? fill_buffer(w, i * io, offs[i], io) : poison_buffer(w, i * io, io)))
				goto out;
		}
		uint64_t t0 = now_ns();
		unsigned good = 0;
		if (o.xfer == X_BATCH) {
			for (unsigned i = 0; i < g; i++) {
				memset(&params[i], 0, sizeof(params[i]));
				params[i].mode = CUFILE_BATCH;
				params[i].u.batch.devPtr_base = w->buf.ptr;
				params[i].u.batch.file_offset = (off_t)offs[i];
				params[i].u.batch.devPtr_offset = (off_t)(i * io);
				params[i].u.batch.size = io;
				params[i].fh = w->fh;
				params[i].opcode = is_write() ? CUFILE_WRITE : CUFILE_READ;
				params[i].cookie = (void *)(uintptr_t)(i + 1);
				rets[i] = -1;
			}
			CUfileError_t e = cuFileBatchIOSubmit(w->batch, g, params, 0);
			if (e.err) {
				worker_fail(w, first ? ST_UNSUPPORTED : ST_IOERR,
					    "cuFileBatchIOSubmit(%u entries): %s", g,
					    cufile_err(e, eb, sizeof(eb)));
				goto out;
			}
			unsigned got = 0;
			while (got < g) {
				unsigned nr = g - got;
				struct timespec ts = {0, 100 * 1000 * 1000};
				e = cuFileBatchIOGetStatus(w->batch, g - got, &nr, events, &ts);
				uint64_t tn = now_ns();
				if (e.err) {
					worker_fail(w, ST_IOERR, "cuFileBatchIOGetStatus: %s",
						    cufile_err(e, eb, sizeof(eb)));
					atomic_store(&abandon, 1);
					goto out;
				}
				for (unsigned j = 0; j < nr && j < g; j++) {
					uintptr_t c = (uintptr_t)events[j].cookie;
					if (c < 1 || c > g || rets[c - 1] != -1) {
						worker_fail(w, ST_IOERR, "batch event with unknown cookie %p",
							    events[j].cookie);
						atomic_store(&abandon, 1);
						goto out;
					}
					rets[c - 1] =
					    events[j].status == CUFILE_COMPLETE ? (ssize_t)events[j].ret : -2;
					if (events[j].status != CUFILE_COMPLETE || events[j].ret != io)
						worker_fail(w, ST_IOERR,
							    "batch entry %lu at %llu: status 0x%x ret %zu",
							    (unsigned long)c - 1,
							    (unsigned long long)offs[c - 1],
							    (unsigned)events[j].status, events[j].ret);
					else
						hist_add(w->hist, tn - t0);
					got++;
				}
				if (got < g && (double)(tn - t0) * 1e-9 > o.batch_timeout) {
					worker_fail(
					    w, ST_TIMEOUT,
					    "batch: %u of %u entries completed within %.1f s (GetStatus "
					    "min_nr=%u)",
					    got, g, o.batch_timeout, g);
					atomic_store(&abandon, 1);
					goto out;
				}
			}
			for (unsigned i = 0; i < g; i++)
				good += rets[i] == (ssize_t)io;
		} else {
			unsigned queued = 0;
			for (unsigned i = 0; i < g; i++) {
				sizes[i] = io, foffs[i] = (off_t)offs[i], boffs[i] = (off_t)(i * io),
				rets[i] = -12345;
				CUfileError_t e =
				    is_write() ? cuFileWriteAsync(w->fh, w->buf.ptr, &sizes[i], &foffs[i],
								  &boffs[i], &rets[i], w->stream)
					       : cuFileReadAsync(w->fh, w->buf.ptr, &sizes[i], &foffs[i],
								 &boffs[i], &rets[i], w->stream);
				if (e.err) {
					worker_fail(w, first && i == 0 ? ST_UNSUPPORTED : ST_IOERR, "%s: %s",
						    is_write() ? "cuFileWriteAsync" : "cuFileReadAsync",
						    cufile_err(e, eb, sizeof(eb)));
					break;
				}
				queued++;
			}
			CUresult r = cu.StreamSynchronize(w->stream);
			uint64_t t1 = now_ns();
			if (r) {
				worker_fail(w, ST_IOERR, "cuStreamSynchronize: %s", cuda_dl_errstr(&cu, r));
				goto out;
			}
			if (queued < g)
				goto out;
			int first_bad = -1;
			for (unsigned i = 0; i < g; i++) {
				if (rets[i] == (ssize_t)io) {
					good++;
					hist_add(w->hist, t1 - t0);
				} else if (first_bad < 0) {
					first_bad = (int)i;
				}
			}
			if (first_bad >= 0)
				worker_fail(
				    w, ST_INCOMPLETE,
				    "async: %u of %u operations on one stream completed in full; op %d: %s",
				    good, g, first_bad,
				    rets[first_bad] == -12345
					? "result never written"
					: io_ret_str(rets[first_bad], 0, eb, sizeof(eb)));
		}
		first = 0;
		w->bytes += (uint64_t)good * io, w->ops += good;
		atomic_fetch_add_explicit(&w->progress, (uint64_t)good * io, memory_order_relaxed);
		if (o.verify)
			for (unsigned i = 0; i < g; i++)
				if (rets[i] == (ssize_t)io &&
				    (is_write() ? verify_write(w, offs[i], io)
						: verify_read(w, i * io, offs[i], io)))
					goto out;
		if (good < g)
			goto out;
		k += g;
		t = (double)now_ns() * 1e-9;
	}
out:
	free(sizes), free(foffs), free(boffs), free(rets), free(offs), free(params), free(events);
}
