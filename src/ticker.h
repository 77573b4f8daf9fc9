/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ticker.h - a thread that calls a function once a second while the driver
 * is open: each user has its own (the watchdog's scan, the statistics
 * snapshot, the file mappings' page-table drops, idle read-ahead windows).
 *
 * Started by its user (at driver open, or at first use) and stopped
 * (joined) at close; tick() runs on the
 * ticker's thread without the ticker's lock, so it may take its own.  A
 * ticker is a static object:
 *   static struct ocf_ticker t = OCF_TICKER_INIT(my_tick);
 */
#ifndef OCF_TICKER_H_
#define OCF_TICKER_H_

#include <pthread.h>
#include <stdbool.h>

struct ocf_ticker {
	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t cv;    /* CLOCK_MONOTONIC; made at the first start */
	bool cv_ready;
	bool stop, running;
	pthread_t thread;
	void (*tick)(void);
};

#define OCF_TICKER_INIT(fn) {.lock = PTHREAD_MUTEX_INITIALIZER, .tick = (fn)}

/* 0, or -errno when the thread cannot be created.  Starting a running
 * ticker does nothing. */
int ticker_start(struct ocf_ticker *t);
/* Stops the thread and waits for it; a tick in progress finishes first. */
void ticker_stop(struct ocf_ticker *t);

#endif /* OCF_TICKER_H_ */
