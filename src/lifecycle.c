/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lifecycle.c - what every subsystem does when the driver opens, when it
 * closes and when the process exits: one ordered table (driver.h), read
 * top to bottom within a phase.
 *
 * DESIGN: the driver (driver.c) owns the moments (the open under its state
 * lock; the close's cancel step, in-flight wait and teardown; the exit
 * handler) and this table owns what happens at them.  So the driver is the
 * floor: it includes no subsystem, and the subsystems that call it back
 * (async.c, batch.c, stream.c: driver_hold/driver_release/driver_adopt) do
 * so without an include circle.  Subsystems that start lazily (executor
 * threads, engine helpers, stream rings, batches) have no open row; every
 * subsystem with state that outlives a call has a close row.  A new
 * subsystem adds its rows here, with the reason for their place.
 */
#define _GNU_SOURCE
#include "driver.h"

#include "async.h"
#include "batch.h"
#include "buffer.h"
#include "config.h"
#include "cpu_budget.h"
#include "cuda_loader.h"
#include "engine.h"
#include "fileio.h"
#include "filemap.h"
#include "readahead.h"
#include "gpu.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "profile.h"
#include "stats.h"
#include "stream.h"
#include "watchdog.h"

#include <dlfcn.h>

#ifndef OCF_VERSION_STRING /* the build gives the project's version */
#define OCF_VERSION_STRING "unknown"
#endif

static void load_cuda(void);
static void arm_exit_after_cuinit(void);
static void prewarm_gpus(void);
static void configure_profile(void);
static void log_file_side(void);
static void log_opened(void);
static void stop_engine(void);
static void log_closed(void);

const struct driver_step driver_lifecycle[] = {
	/* ---- open (under the driver's state lock) ---- */

	/* cufile.json, the environment and staged parameter values become
	 * ocf_cfg, and the log gets its level and file: first, because every
	 * later row reads the configuration and may log. */
	{DRIVER_OPEN, config_apply_at_open},
	/* The CPU profile's switch (OPENCUFILE_PROFILE); before any row that
	 * starts a thread, so every thread's work is counted. */
	{DRIVER_OPEN, configure_profile},
	/* The CPUs this process may use (affinity, cgroup quota,
	 * OPENCUFILE_CPUS), read again and logged: before any row that sizes
	 * or starts a thread pool from it (prewarm: lanes per participant). */
	{DRIVER_OPEN, ocf_cpu_budget_refresh},
	/* dlopen libcuda.so.1 and cuInit, once per process; without it the
	 * library runs in host-memory mode (cuda_loader.h). */
	{DRIVER_OPEN, load_cuda},
	/* The exit handler (the DRIVER_EXIT rows), registered right after
	 * cuInit: exit handlers run in the reverse order of registration, and
	 * the CUDA driver sets up its own exit teardown, which waits for every
	 * stream, when it is loaded and initialised.  Registered later, ours
	 * runs first and releases the stream waits that teardown would wait
	 * for forever.  Only with CUDA (no stream of ours exists without). */
	{DRIVER_OPEN, arm_exit_after_cuinit},
	/* Every staging lane of the GPUs the application already uses, now,
	 * on the opening thread: lanes are made only at a GPU's bring-up,
	 * never once asynchronous work of ours can be waiting (creating a
	 * stream or event can then wait inside the CUDA driver, holding the
	 * lock every copy needs; docs/architecture.md, "Staging memory").
	 * Needs the configuration (pool sizes) and CUDA. */
	{DRIVER_OPEN, prewarm_gpus},
	/* The thread that logs a wait that lasts; reads the configuration
	 * (execution.wait_watchdog_s, 0: not started). */
	{DRIVER_OPEN, watchdog_start},
	/* Read-ahead for sequential readers (readahead.c): the engine's read
	 * hook and the pools' lane reclaim, or neither where it is off. */
	{DRIVER_OPEN, ra_start},
	/* The statistics snapshot for gds_stats (profile.cufile_stats, or
	 * OPENCUFILE_STATS_FILE): its file written now and every second by
	 * a thread of its own; reads the configuration. */
	{DRIVER_OPEN, stats_publish_start},
	/* What the file side's tuning (ocf_cfg.tuning, new at each open) gives
	 * on this CPU: the staged write-back and the mapped copies (DEBUG). */
	{DRIVER_OPEN, log_file_side},
	/* Last: the line says what the open found. */
	{DRIVER_OPEN, log_opened},

	/* ---- close, before waiting for what is in flight (no lock) ---- */

	/* Batch entries not started yet complete as CUFILE_CANCELED instead
	 * of running, and drop the in-flight references they hold
	 * (driver_release, which takes the state lock: hence this phase).
	 * Before the wait, or the close would first run every queued entry. */
	{DRIVER_CLOSE_BEGIN, batch_cancel_all},

	/* ---- close, nothing in flight (under the driver's state lock) ---- */

	/* The subsystems that hand work to the executors go before the
	 * executors stop, so that no work can reach a stopped executor (with
	 * nothing in flight none does; the order keeps that true without
	 * relying on it).  Batches: every job has run or been cancelled, so
	 * only the table and the entries remain. */
	{DRIVER_CLOSE, batch_teardown},
	/* Stream registrations, rings and flag pages.  Waits (at most 10 s)
	 * for each stream to pass its last command on our memory before
	 * freeing it, and frees it in the primary context it was pinned in:
	 * before gpu_teardown_all releases those contexts. */
	{DRIVER_CLOSE, stream_teardown},
	/* Joins the batch and stream executor threads (they are idle: every
	 * operation has run).  They are engine callers: before the engine's
	 * helpers stop. */
	{DRIVER_CLOSE, async_shutdown},
	/* Joins the engine's helper threads, once no caller is left; they
	 * hold no lane between requests. */
	{DRIVER_CLOSE, stop_engine},
	/* Handles, after every thread and operation that could hold a handle
	 * reference (executors, stream operations, lookup caches) is gone. */
	{DRIVER_CLOSE, handle_deregister_all},
	/* The thread that drops idle file mappings' page-table entries:
	 * every handle's mapping went with its handle. */
	{DRIVER_CLOSE, fmap_stop},
	/* The thread that closes idle read-ahead windows: every window went
	 * with its handle. */
	{DRIVER_CLOSE, ra_stop},
	/* Buffer registrations; the order with handles is free. */
	{DRIVER_CLOSE, buf_deregister_all},
	/* Staging pools (lanes, their streams, events and io_uring rings),
	 * liveness events, and the primary contexts retained at bring-up:
	 * after everything above that may use a lane or free memory in a
	 * primary context. */
	{DRIVER_CLOSE, gpu_teardown_all},
	/* The statistics snapshot: its last version in OPENCUFILE_STATS_FILE,
	 * or the published one (gds_stats) removed; and the thread that
	 * writes it every second stopped.  After every teardown above, so
	 * that its "pinned now" figure shows only what the close could not
	 * free (a ring a stream never let go of). */
	{DRIVER_CLOSE, stats_publish_stop},
	/* The CPU profile's report: after every thread of ours has stopped,
	 * so that each one's last job is in it. */
	{DRIVER_CLOSE, prof_report},
	/* The watchdog's thread.  It reads only the configuration and its
	 * own static table, so its place in the teardown is free; it ran
	 * through the close's in-flight wait, which it watches. */
	{DRIVER_CLOSE, watchdog_stop},
	/* The next parameter preview reads cufile.json again: after every row
	 * that reads the configuration (stats_publish_stop: the file's path). */
	{DRIVER_CLOSE, config_forget_preview},
	/* Last: the line, then the log file is closed (no descriptor outlives
	 * the driver; reopened at the next line). */
	{DRIVER_CLOSE, log_closed},

	/* ---- process exit (registered at the first open with CUDA) ---- */

	/* Stores into every ring and flag word a stream may be waiting on the
	 * value it waits for, so that the CUDA driver's exit teardown, which
	 * waits for every stream, finds streams that can drain.  Frees
	 * nothing: threads may still be inside calls. */
	{DRIVER_EXIT, stream_release_all_at_exit},
};

const size_t driver_lifecycle_len = sizeof(driver_lifecycle) / sizeof(driver_lifecycle[0]);

static void load_cuda(void) { (void)cuda_load(); /* no driver is a mode, not an error */ }

static void arm_exit_after_cuinit(void)
{
	if (cuda_available())
		driver_arm_exit();
}

static void prewarm_gpus(void) { gpu_prewarm_start(engine_participants()); }

static void configure_profile(void) { prof_configure(ocf_cfg.cpu_profile); }

static void log_file_side(void)
{
	fio_log_settings();
	fmap_log_settings();
}

/* Names this library and its file, so that a log says which libcufile.so.0
 * a client ran with (the Python wheel's, a package's, a build's). */
static void log_opened(void)
{
	Dl_info self;
	const char *file = dladdr((void *)log_opened, &self) && self.dli_fname ? self.dli_fname : "?";
	log_info("opencufile %s (%s): driver opened (%s)", OCF_VERSION_STRING, file,
		 cuda_available() ? "CUDA available" : "host memory only");
}

static void stop_engine(void) { ocf_engine->shutdown(); }

static void log_closed(void)
{
	log_info("driver closed");
	log_close();
}
