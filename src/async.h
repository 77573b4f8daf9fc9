/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async.h - the asynchronous executor shared by batch and stream I/O.
 */
#ifndef OCF_ASYNC_H_
#define OCF_ASYNC_H_

#include <stdbool.h>

/* An executor: a FIFO and the threads that serve it.  Two exist: one for
 * batch entries, whose I/O makes CUDA calls (copies through staging lanes),
 * and one for stream operations, whose threads never call CUDA (everything
 * a stream operation needs from the driver was queued on the application's
 * stream at submission), so that a stream operation never waits behind
 * work that the CUDA driver can block (see stream.c). */
struct async_exec;
extern struct async_exec async_batch_exec;
extern struct async_exec async_stream_exec;

/* One queued operation, embedded in the caller's own structure.  run() is
 * called once on an executor thread; the driver hold (driver_hold) that the
 * submitter took for the operation is released by the executor after run()
 * returns, so run() may free the structure. */
struct async_op {
	struct async_op *prev, *next; /* FIFO links, under the queue lock */
	bool queued;                  /* under the queue lock */
	/* Its thread polls the FIFO afterwards (the batch executor's awake
	 * threads, async.c): set by the submitter for latency-bound work. */
	bool spin_after;
	void (*run)(struct async_op *op);
};

/* Starts the executor threads if they are not running.  Call it inside the
 * driver gate before submitting.  Returns 0 or an error. */
int async_start(struct async_exec *ex);
/* Threads running (after async_start). */
int async_thread_count(struct async_exec *ex);
/* Appends ops (linked through op->next, NULL terminated) to the FIFO in one
 * step.  Each op carries one driver hold.  Never calls CUDA, never blocks
 * for long: it may be called from a CUDA host function. */
void async_submit_list(struct async_exec *ex, struct async_op *first);
void async_submit(struct async_exec *ex, struct async_op *op);
/* Takes op out of the FIFO if it has not been handed to a thread yet; true
 * then (the caller now owns op and its driver hold). */
bool async_remove(struct async_exec *ex, struct async_op *op);
/* Joins the threads of both executors; driver close, once no operation is
 * in flight. */
void async_shutdown(void);

#endif /* OCF_ASYNC_H_ */
