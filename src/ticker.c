/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ticker.c - see ticker.h.
 *
 * The wait is on CLOCK_MONOTONIC, so a change of the wall clock neither
 * stalls nor hurries the ticks; a stop wakes the thread at once.
 */
#define _GNU_SOURCE
#include "ticker.h"

#include <errno.h>
#include <time.h>

#include "profile.h"

#define PERIOD_S 1

static void *ticker_main(void *arg)
{
	prof_name_thread("cufile-ticker", 0);
	struct ocf_ticker *t = arg;
	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		struct timespec dl;
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += PERIOD_S;
		while (!t->stop && pthread_cond_timedwait(&t->cv, &t->lock, &dl) != ETIMEDOUT)
			;
		if (t->stop)
			break;
		pthread_mutex_unlock(&t->lock);
		t->tick();
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int ticker_start(struct ocf_ticker *t)
{
	pthread_mutex_lock(&t->lock);
	if (!t->cv_ready) {
		pthread_condattr_t a;
		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
		pthread_cond_init(&t->cv, &a);
		pthread_condattr_destroy(&a);
		t->cv_ready = true;
	}
	int r = 0;
	if (!t->running) {
		t->stop = false;
		r = -pthread_create(&t->thread, NULL, ticker_main, t);
		t->running = r == 0;
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

void ticker_stop(struct ocf_ticker *t)
{
	pthread_mutex_lock(&t->lock);
	bool join = t->running;
	t->stop = true;
	t->running = false;
	if (t->cv_ready)
		pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
	if (join)
		pthread_join(t->thread, NULL);
}
