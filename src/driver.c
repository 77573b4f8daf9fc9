/* SPDX-License-Identifier: Apache-2.0 */
/*
 * driver.c - driver lifecycle.
 *
 * DESIGN: one mutex and condition variable guard the driver state
 * {open_count, is_open, closing, inflight}.  Every API call that uses
 * driver state enters (inflight++) and exits (inflight--).  The close that
 * drops open_count to zero sets `closing`, which holds back new calls, waits
 * until inflight reaches zero, and only then tears down handles, buffers,
 * staging pools and contexts, so no call ever sees half-destroyed state.
 * Calls nest on one thread (a userspace file system callback may call the
 * API again): a thread-local depth makes only the outermost call count.
 * An implicit open (from register/read/write) is an ordinary open whose
 * reference is taken by the library; a later cuFileDriverClose releases it.
 *
 * fork(): the child of a process that has used the library inherits its
 * state but not its threads, and any lock another thread held at the fork
 * stays held forever in the child (state_lock during an open or close, a
 * handle or buffer table lock during I/O, ...).  So every entry point first
 * calls driver_process_check(): the first call marks the process as a user
 * of the library, and a pthread_atfork child handler turns that mark into
 * "unusable here" in the child.  From then on every call in the child fails
 * at once with CU_FILE_DRIVER_NOT_INITIALIZED, before touching any lock:
 * a clear error instead of a deadlock.  The parent is not affected (no
 * prepare handler, so fork never waits for the library).  A child forked
 * before the first call starts clean, like a new process.
 */
#define _GNU_SOURCE
#include "driver.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <unistd.h>

#include "async.h"
#include "batch.h"
#include "buffer.h"
#include "config.h"
#include "cuda_loader.h"
#include "engine.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "stats.h"
#include "stream.h"
#include "watchdog.h"

/* state_lock protects open_count, is_open, closing and inflight. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t state_cv = PTHREAD_COND_INITIALIZER;
static long open_count;
static bool is_open;
static bool closing;
static long inflight;
static __thread int depth;

/* Set by the first entry point that runs in this process (see the design
 * note); seq_cst store, so it is in memory before that thread takes any of
 * the library's locks, and a fork that copies a held lock also copies it. */
static atomic_bool used;
/* Set in the child of a fork made after `used`; never cleared.  Relaxed
 * loads: it only changes in a single-threaded child, before any call. */
static atomic_bool forked_child;
static pid_t parent_pid;

static void atfork_child(void)
{
	if (!atomic_load_explicit(&used, memory_order_relaxed))
		return; /* nothing inherited: the child starts clean */
	parent_pid = getppid();
	atomic_store_explicit(&forked_child, true, memory_order_relaxed);
	/* Another parent thread may have been writing a log line. */
	log_after_fork_child();
}

__attribute__((constructor)) static void driver_init_once(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

int driver_process_check(void)
{
	if (atomic_load_explicit(&forked_child, memory_order_relaxed)) {
		static atomic_bool told;
		if (!atomic_exchange_explicit(&told, true, memory_order_relaxed))
			log_error("cuFile called in a child process after fork(); the library was in use in "
				  "the parent (pid %d) and cannot be used in this process: every call fails "
				  "with CU_FILE_DRIVER_NOT_INITIALIZED",
				  (int)parent_pid);
		return OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED);
	}
	if (!atomic_load_explicit(&used, memory_order_relaxed))
		atomic_store_explicit(&used, true, memory_order_seq_cst);
	return 0;
}

/* Caller holds state_lock; state is closed and not closing. */
static int open_locked(void)
{
	/* cufile.json, environment and staged parameters; configures the log. */
	config_apply_at_open();
	cuda_load();
	/* After cuInit, so that it runs before the driver's own teardown. */
	static bool exit_hook;
	if (cuda_available() && !exit_hook) {
		exit_hook = true;
		atexit(stream_release_all_at_exit);
	}
	/* Every staging lane of the GPUs already in use, now: no lane is
	 * created once asynchronous work of ours can be waiting. */
	gpu_prewarm_start(engine_participants());
	watchdog_start();
	stats_publish_start();
	is_open = true;
	open_count = 1;
	log_info("driver opened (%s)", cuda_available() ? "CUDA available" : "host memory only");
	return 0;
}

int driver_open(void)
{
	if (depth > 0) {
		/* Inside another API call on this thread: the driver is open. */
		pthread_mutex_lock(&state_lock);
		open_count++;
		pthread_mutex_unlock(&state_lock);
		return 0;
	}
	pthread_mutex_lock(&state_lock);
	while (closing)
		pthread_cond_wait(&state_cv, &state_lock);
	int r = 0;
	if (is_open)
		open_count++;
	else
		r = open_locked();
	pthread_mutex_unlock(&state_lock);
	return r;
}

int driver_close(void)
{
	pthread_mutex_lock(&state_lock);
	while (closing)
		pthread_cond_wait(&state_cv, &state_lock);
	if (!is_open) {
		pthread_mutex_unlock(&state_lock);
		return OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED);
	}
	if (open_count > 1) {
		open_count--;
		pthread_mutex_unlock(&state_lock);
		return 0;
	}
	if (depth > 0) {
		/* Closing from inside an API call on this thread would wait
		 * for that very call. */
		pthread_mutex_unlock(&state_lock);
		log_error("cuFileDriverClose called from inside a cuFile call");
		return OCF_ERR(CU_FILE_DRIVER_CLOSING);
	}
	closing = true;
	/* Batch entries not started yet are cancelled rather than run; the
	 * wait below then also covers asynchronous operations, which hold an
	 * in-flight reference until they complete (driver_hold). */
	pthread_mutex_unlock(&state_lock);
	batch_cancel_all();
	pthread_mutex_lock(&state_lock);
	if (inflight > 0) {
		watchdog_wait_begin("cuFileDriverClose", NULL, -1,
				    "the calls and the batch and stream operations still in flight to finish");
		while (inflight > 0)
			pthread_cond_wait(&state_cv, &state_lock);
		watchdog_wait_end();
	}
	/* No call is in flight and none can start: tear down. */
	batch_teardown();
	stream_teardown();
	async_shutdown();
	ocf_engine->shutdown();
	handle_deregister_all();
	buf_deregister_all();
	gpu_teardown_all();
	stats_publish_stop(); /* the last snapshot, or none in the default directory */
	watchdog_stop();
	config_forget_preview();
	open_count = 0;
	is_open = false;
	closing = false;
	log_info("driver closed");
	log_close(); /* no descriptor outlives the driver; reopened on demand */
	pthread_cond_broadcast(&state_cv);
	pthread_mutex_unlock(&state_lock);
	return 0;
}

int driver_enter(bool implicit_open)
{
	if (depth > 0) {
		depth++;
		return 0;
	}
	pthread_mutex_lock(&state_lock);
	while (closing)
		pthread_cond_wait(&state_cv, &state_lock);
	if (!is_open) {
		if (!implicit_open) {
			pthread_mutex_unlock(&state_lock);
			return OCF_ERR(CU_FILE_DRIVER_NOT_INITIALIZED);
		}
		int r = open_locked();
		if (r) {
			pthread_mutex_unlock(&state_lock);
			return r;
		}
	}
	inflight++;
	pthread_mutex_unlock(&state_lock);
	depth = 1;
	return 0;
}

void driver_exit(void)
{
	if (--depth > 0)
		return;
	pthread_mutex_lock(&state_lock);
	if (--inflight == 0 && closing)
		pthread_cond_broadcast(&state_cv);
	pthread_mutex_unlock(&state_lock);
}

long driver_use_count(void)
{
	pthread_mutex_lock(&state_lock);
	long n = is_open ? open_count : 0;
	pthread_mutex_unlock(&state_lock);
	return n;
}

bool driver_is_open(void)
{
	pthread_mutex_lock(&state_lock);
	bool o = is_open;
	pthread_mutex_unlock(&state_lock);
	return o;
}

/* For the parameter API (api_params.c): runs fn under state_lock, after any
 * close in progress has finished, so that "is the driver open?" and the
 * setter's staging (or the getter's read of the live configuration) form one
 * step that no concurrent open or close can split.  fn must not call back
 * into the driver. */
int driver_with_state_locked(int (*fn)(bool is_open, void *arg), void *arg)
{
	pthread_mutex_lock(&state_lock);
	while (closing)
		pthread_cond_wait(&state_cv, &state_lock);
	int r = fn(is_open, arg);
	pthread_mutex_unlock(&state_lock);
	return r;
}

/* Asynchronous operations (async.c).  An operation submitted by an API call
 * takes its own in-flight reference, so a close waits for it like for a
 * call; the executor thread that runs it "adopts" that reference (depth),
 * so the synchronous path's driver_enter nests instead of waiting behind a
 * close that is itself waiting for this very operation. */
void driver_hold(unsigned n)
{
	pthread_mutex_lock(&state_lock);
	inflight += n;
	pthread_mutex_unlock(&state_lock);
}

void driver_release(void)
{
	pthread_mutex_lock(&state_lock);
	if (--inflight == 0 && closing)
		pthread_cond_broadcast(&state_cv);
	pthread_mutex_unlock(&state_lock);
}

void driver_adopt(void) { depth++; }

void driver_unadopt(void) { depth--; }
