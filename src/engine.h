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

#include <sys/types.h>

#include "buffer.h"

struct ocf_handle;

struct ocf_io {
	struct ocf_handle *h;
	struct ocf_target t;
	off_t off;
	size_t len;
};

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

/* On the calling thread, never copy with the synchronous (legacy default
 * stream) calls; the asynchronous executor's threads need this. */
void engine_thread_no_sync_copies(bool on);

/* The engine in use. */
extern const struct ocf_engine_ops *ocf_engine;
extern const struct ocf_engine_ops ocf_engine_parallel;

#endif /* OCF_ENGINE_H_ */
