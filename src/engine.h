/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h - the interface between the API layer and the data path.
 *
 * One request: move [off, off+len) of a file from/to a resolved target.
 * The engine returns the bytes moved (short only at end of file, or when a
 * later piece failed after earlier ones succeeded) or an error.
 */
#ifndef OCF_ENGINE_H_
#define OCF_ENGINE_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "io.h"

struct ocf_engine_ops {
	const char *name;
	ssize_t (*read)(const struct ocf_io *io);
	ssize_t (*write)(const struct ocf_io *io);
	/* Stops worker threads; called by the driver close with no I/O in
	 * flight. */
	void (*shutdown)(void);
};

/* Threads that may work on requests at once: workers plus one caller. */
int engine_participants(void);

/* On the calling thread, submit requests whose copies go on the lanes'
 * non-blocking streams, not ordered with the legacy default stream; the
 * asynchronous executor's threads need this (engine.c). */
void engine_thread_nonblocking_copies(bool on);
/* On the calling thread, refuse requests that would call CUDA (device
 * memory without a ring plan) with CU_FILE_CUDA_MEMORY_TYPE_INVALID: the
 * stream executor's threads must never call the driver. */
void engine_thread_no_cuda(bool on);

/* Tasks: work for the engine's helper threads that belongs to no request
 * (read-ahead fills, readahead.c).  job->task, job->lock, job->cv and
 * job->active must be set up (active 0); each helper that takes the job
 * runs job->task(job) with no lane and without counting as a busy
 * participant.  engine_task_post asks for `helpers` more helpers (starting
 * the pool if need be): false when there are none to ask (no helper
 * threads, or the engine is stopping); the job stays queued until that
 * many helpers took it.  engine_task_quiesce takes the job off the queue
 * and waits until no helper runs it: after it, the job's memory may go. */
struct ocf_job;
bool engine_task_post(struct ocf_job *job, int helpers);
void engine_task_quiesce(struct ocf_job *job);

/* A first look at each synchronous device read of a caller (not of an
 * executor thread; primary-context memory, no vector, no stream plan),
 * `others` being the engine's busy participants besides the caller: fn
 * returns the request's result, or ENGINE_NOT_SERVED for the engine to
 * read it (the read-ahead, readahead.c, sets it). */
#define ENGINE_NOT_SERVED (-1000000)
void engine_set_read_hook(ssize_t (*fn)(const struct ocf_io *io, int others));

/* The engine in use. */
extern const struct ocf_engine_ops *ocf_engine;
extern const struct ocf_engine_ops ocf_engine_parallel;

#endif /* OCF_ENGINE_H_ */
