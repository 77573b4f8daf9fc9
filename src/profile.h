/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.h - where the library's CPU time goes, per thread role
 * (OPENCUFILE_PROFILE, or profile.cpu_profile in cufile.json).
 *
 * Off, every hook is one relaxed load (a batch step's: a call and a load
 * of its job's t0).  On, each thread accounts its own
 * user and system CPU time (getrusage(RUSAGE_THREAD)) while it works for
 * the library, the wall time it spends in file system calls, submitting
 * copies, and waiting for copies (by how it waited), and the bytes it
 * moved; the report at cuFileDriverClose sums them per role.
 */
#ifndef OCF_PROFILE_H_
#define OCF_PROFILE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum prof_role {
	PROF_CALLER, /* application threads inside cuFileRead/Write/... */
	PROF_ENGINE, /* engine helper threads */
	PROF_BATCH,  /* batch executor threads */
	PROF_STREAM, /* stream executor threads */
	PROF_NROLES
};

/* How a wait for a copy ended up waiting. */
enum prof_wait {
	PROF_WAIT_DONE,	 /* already complete at the first look */
	PROF_WAIT_SPIN,	 /* polled without giving up the CPU */
	PROF_WAIT_SLEEP, /* slept (blocking-sync event or timed sleep) */
	PROF_NWAITS
};

enum prof_time {
	PROF_T_FILE,	/* file system calls (read, write, io_uring waits) */
	PROF_T_SUBMIT,	/* queuing copies and event records */
	PROF_T_LANE,	/* waiting for a free staging lane */
	PROF_T_HELPERS, /* a caller waiting for the helpers of its request */
	PROF_T_LOOKUP,	/* resolving a handle and a buffer (pointer queries) */
	PROF_T_START,	/* a helper: from its request being queued to joining it */
	PROF_NTIMES
};

/* The steps of a batch job's entries (batch.c, batch_io.c), for the
 * report's timeline: when each happened after the job's Submit began. */
enum prof_step {
	PROF_S_POSTED,	/* Submit about to hand the job to the executor threads */
	PROF_S_STARTED, /* an executor thread began serving the job */
	PROF_S_CLAIMED, /* an entry claimed by a thread */
	PROF_S_STAGED,	/* its handle and buffer resolved, a staging lane held */
	PROF_S_READ,	/* its file read done */
	PROF_S_QUEUED,	/* its copy and the buffer's event queued */
	PROF_S_COPIED,	/* its copy seen complete */
	PROF_S_DONE,	/* its completion published to GetStatus (not for a job a
			 * later Submit flushed: see batch.c, Rounds) */
	PROF_NSTEPS
};

/* One job's steps: the first and the last time each was reached by any of
 * its entries (for "started" by any of its executor operations, for
 * "queued" and "copied" by any of its staging buffers; t0 0: not profiled,
 * every call a no-op). */
struct prof_steps {
	uint64_t t0;
	_Atomic uint64_t first[PROF_NSTEPS], last[PROF_NSTEPS];
};

extern bool prof_enabled; /* read relaxed; set at driver open */

/* Driver open: reads OPENCUFILE_PROFILE / the configuration. */
void prof_configure(bool from_config);
/* Driver close: prints the report (stderr, or the file OPENCUFILE_PROFILE
 * names) and clears the counters. */
void prof_report(void);

/* Brackets a stretch of library work on the calling thread: CPU time is
 * accounted to `role` between them.  Nests (only the outermost counts). */
void prof_begin(enum prof_role role);
void prof_end(void);

uint64_t prof_now(void); /* monotonic ns, 0 when profiling is off */
/* Adds the time since `t0` (prof_now()) to a counter of the thread. */
void prof_time(enum prof_time what, uint64_t t0);
void prof_wait(enum prof_wait how, uint64_t t0);
void prof_bytes(size_t n);

/* A job's steps from `t0` (prof_now() when its Submit began; 0: off). */
void prof_steps_init(struct prof_steps *s, uint64_t t0);
/* Step k of one of the job's entries happened now; s may be NULL. */
void prof_step(struct prof_steps *s, enum prof_step k);
/* The job is over: its steps join the report's means, as a small job (at
 * most one entry per executor thread) or a large one. */
void prof_steps_end(const struct prof_steps *s, bool small);
/* GetStatus returned an entry whose job's steps began at t0 (0: none),
 * a small job's or not. */
void prof_reaped(uint64_t t0, bool small);

/* Names the calling thread (pthread_setname_np; at most 15 characters). */
void prof_name_thread(const char *fmt, int index);

#endif /* OCF_PROFILE_H_ */
