/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wakeup - how long a sleeping thread takes to start running once another
 * thread hands it work: the floor under any design that splits a short
 * request among helper threads.  No GPU, no cuFile.
 *
 *   wakeup [ITERATIONS] [HELPERS] [SLEEP_US (timer; 20)] [BUSY]
 *
 * For each way of waiting, ITERATIONS rounds: the main thread waits a
 * little (so that the helpers are really asleep, as between calls), takes
 * the time, hands one round to HELPERS helpers, and each helper records
 * when it ran; printed: p50 / p99 / max of the first helper's and the last
 * helper's delay, in microseconds.
 *   condvar   each helper sleeps on its own condition variable, signalled
 *             one by one (what the engine's pool does)
 *   futex     each helper sleeps in FUTEX_WAIT on its own word, woken by
 *             FUTEX_WAKE one by one
 *   spin      each helper polls its word (pause) - the lower bound, bought
 *             with a CPU per helper
 *   timer     each helper sleeps until a deadline SLEEP_US after the round
 *             starts (clock_nanosleep, timer slack 1 ns); printed is how
 *             late it ran past the deadline - what a waiter that sleeps
 *             for a copy's expected time, instead of being woken, pays
 *
 * BUSY threads spin on their own CPUs throughout, as the callers of a busy
 * process do: woken threads then find fewer idle CPUs.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum mode { M_CONDVAR, M_FUTEX, M_SPIN, M_TIMER };
static const char *const mode_name[] = {"condvar", "futex", "spin", "timer"};

static uint64_t sleep_ns = 20000;
static _Atomic int busy_quit;

static void *busy_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&busy_quit))
		__builtin_ia32_pause();
	return NULL;
}

#define MAXH 16

struct helper {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	_Atomic uint32_t word; /* round number handed to it */
	_Atomic uint64_t ran;  /* ns when it saw that round */
	_Atomic uint64_t due;  /* timer: the round's deadline */
	_Atomic uint32_t done; /* last round it finished */
	int mode;
	_Atomic int quit;
};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *helper_main(void *arg)
{
	struct helper *h = arg;
	uint32_t seen = 0;
	if (h->mode == M_TIMER)
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	for (;;) {
		uint32_t w;
		if (h->mode == M_CONDVAR) {
			pthread_mutex_lock(&h->mu);
			while ((w = atomic_load(&h->word)) == seen && !atomic_load(&h->quit))
				pthread_cond_wait(&h->cv, &h->mu);
			pthread_mutex_unlock(&h->mu);
		} else if (h->mode == M_FUTEX) {
			while ((w = atomic_load(&h->word)) == seen && !atomic_load(&h->quit))
				syscall(SYS_futex, &h->word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		} else {
			while ((w = atomic_load(&h->word)) == seen && !atomic_load(&h->quit))
				__builtin_ia32_pause();
		}
		if (atomic_load(&h->quit))
			return NULL;
		if (h->mode == M_TIMER) {
			uint64_t due = atomic_load(&h->due);
			struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
				;
		}
		atomic_store(&h->ran, now_ns());
		seen = w;
		atomic_store(&h->done, w);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	printf("  %-14s p50 %7.1f us  p99 %7.1f us  max %8.1f us\n", what, (double)v[n / 2] / 1e3,
	       (double)v[n * 99 / 100] / 1e3, (double)v[n - 1] / 1e3);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000;
	int nh = argc > 2 ? atoi(argv[2]) : 3;
	if (argc > 3)
		sleep_ns = (uint64_t)atoi(argv[3]) * 1000u;
	int nbusy = argc > 4 ? atoi(argv[4]) : 0;
	pthread_t busy[64];
	if (nbusy < 0 || nbusy > 64)
		return 2;
	for (int i = 0; i < nbusy; i++)
		pthread_create(&busy[i], NULL, busy_main, NULL);
	if (iters < 10 || nh < 1 || nh > MAXH) {
		fprintf(stderr, "usage: wakeup [ITERATIONS >= 10] [HELPERS 1..%d]\n", MAXH);
		return 2;
	}
	uint64_t *first = calloc((size_t)iters, sizeof(uint64_t)), *last = calloc((size_t)iters, sizeof(uint64_t));
	if (!first || !last)
		return 2;
	printf("wakeup: %d rounds, %d helper(s), %d busy, timer %llu us, %ld CPUs online\n", iters, nh, nbusy,
	       (unsigned long long)(sleep_ns / 1000), sysconf(_SC_NPROCESSORS_ONLN));
	for (int m = M_CONDVAR; m <= M_TIMER; m++) {
		struct helper hs[MAXH];
		memset(hs, 0, sizeof(hs));
		for (int i = 0; i < nh; i++) {
			pthread_mutex_init(&hs[i].mu, NULL);
			pthread_cond_init(&hs[i].cv, NULL);
			hs[i].mode = m;
			pthread_create(&hs[i].th, NULL, helper_main, &hs[i]);
		}
		for (int r = 1; r <= iters; r++) {
			/* Let the helpers fall asleep, as between two calls. */
			struct timespec gap = {0, 200 * 1000};
			nanosleep(&gap, NULL);
			uint64_t t0 = now_ns();
			for (int i = 0; i < nh; i++) {
				struct helper *h = &hs[i];
				if (m == M_TIMER) {
					/* Handed over by spinning (the helper polls), then the
					 * helper sleeps to the deadline; measured from it. */
					atomic_store(&h->due, t0 + sleep_ns);
					atomic_store(&h->word, (uint32_t)r);
				} else if (m == M_CONDVAR) {
					pthread_mutex_lock(&h->mu);
					atomic_store(&h->word, (uint32_t)r);
					pthread_cond_signal(&h->cv);
					pthread_mutex_unlock(&h->mu);
				} else {
					atomic_store(&h->word, (uint32_t)r);
					if (m == M_FUTEX)
						syscall(SYS_futex, &h->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
				}
			}
			uint64_t lo = UINT64_MAX, hi = 0;
			for (int i = 0; i < nh; i++) {
				while (atomic_load(&hs[i].done) != (uint32_t)r)
					__builtin_ia32_pause();
				uint64_t d = atomic_load(&hs[i].ran) - t0 - (m == M_TIMER ? sleep_ns : 0);
				lo = d < lo ? d : lo;
				hi = d > hi ? d : hi;
			}
			first[r - 1] = lo, last[r - 1] = hi;
		}
		for (int i = 0; i < nh; i++) {
			atomic_store(&hs[i].quit, 1);
			pthread_mutex_lock(&hs[i].mu);
			atomic_fetch_add(&hs[i].word, 1);
			pthread_cond_signal(&hs[i].cv);
			pthread_mutex_unlock(&hs[i].mu);
			syscall(SYS_futex, &hs[i].word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
			pthread_join(hs[i].th, NULL);
		}
		printf("%s:\n", mode_name[m]);
		report("first helper", first, iters);
		report("last helper", last, iters);
	}
	atomic_store(&busy_quit, 1);
	for (int i = 0; i < nbusy; i++)
		pthread_join(busy[i], NULL);
	free(first), free(last);
	return 0;
}
