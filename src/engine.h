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

/* The engine in use. */
extern const struct ocf_engine_ops *ocf_engine;
extern const struct ocf_engine_ops ocf_engine_parallel;

#endif /* OCF_ENGINE_H_ */
