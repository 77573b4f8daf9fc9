/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.h - where the library's CPU time goes, per thread role
 * (OPENCUFILE_PROFILE, or profile.cpu_profile in cufile.json).
 *
 * Off, every hook is one relaxed load.  On, each thread accounts its own
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

/* Names the calling thread (pthread_setname_np; at most 15 characters). */
void prof_name_thread(const char *fmt, int index);

#endif /* OCF_PROFILE_H_ */
