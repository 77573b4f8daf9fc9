/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watchdog.h - one ERROR line for a wait that lasts.
 *
 * Every place where the library waits for something it does not control
 * (the GPU, a staging lane, the driver's locks inside a CUDA call, the
 * threads helping a request, a close waiting for operations) brackets the
 * wait with watchdog_wait_begin/end.  A wait that lasts longer than
 * execution.wait_watchdog_s (OPENCUFILE_WAIT_WATCHDOG_S; default 30 s; 0:
 * off) is logged once, naming the operation, the file, the GPU and what it
 * is waiting for.  Nothing else changes: the wait goes on.
 */
#ifndef OCF_WATCHDOG_H_
#define OCF_WATCHDOG_H_

/* A wait for a file served by userspace callbacks (no descriptor). */
#define WATCHDOG_USERSPACE_FS (-2)

/* op: the operation ("cuFileRead"); fd: its file's descriptor, whose path
 * is printed (-1: no file; WATCHDOG_USERSPACE_FS; handle_watch_fd() gives
 * it for a handle); gpu: its ordinal (-1: none); what: what it waits for.
 * The watchdog takes only what it prints, so it depends on no subsystem.
 * The strings must be static.  Waits on one thread nest: only the
 * outermost counts. */
void watchdog_wait_begin(const char *op, int fd, int gpu, const char *what);
void watchdog_wait_end(void);

/* Driver open / close: the thread that watches. */
void watchdog_start(void);
void watchdog_stop(void);

#endif /* OCF_WATCHDOG_H_ */
