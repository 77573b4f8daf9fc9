/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.c - CPU accounting per thread role (OPENCUFILE_PROFILE).
 *
 * DESIGN
 * The question it answers: of the CPU a process spends moving data through
 * the library, how much is the kernel's page-cache copy (system time in
 * file reads) and how much is ours (submitting copies, waiting for them,
 * handing work between threads), and which threads spend it.  Sampling
 * profilers are not available on every machine the library runs on (the
 * GPU machine has neither perf nor nsys), so the library measures itself.
 *
 * Each thread owns a block of counters (found through a thread-local
 * pointer, registered once in a global list, reused by a later thread
 * after this one exits, as the statistics blocks are: only the owner
 * writes it, relaxed atomics make the report's concurrent reads defined).
 * prof_begin/prof_end bracket a stretch of work for the library: the
 * outermost pair reads getrusage(RUSAGE_THREAD) at both ends and adds the
 * difference (user and system separately) and the wall time to the role
 * of that bracket.  Library threads bracket each job they take (idle time
 * is not work); application threads bracket their calls.  Inside a
 * bracket, the data path adds the wall time of file system calls, of
 * queuing copies, of waiting for a lane or for helpers, each wait for a
 * copy by how it waited, and the bytes it moved.
 *
 * Off (the default) every hook costs one relaxed load of prof_enabled (a
 * batch step: a call and a load of its job's t0).  On,
 * a bracket costs two getrusage calls and the hooks a clock read each: a
 * profile of 4 KiB reads measures a slightly slower library.
 */
#define _GNU_SOURCE
#include "profile.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cpu_budget.h"
#include "internal.h"

bool prof_enabled;

struct pblock {
	struct pblock *next; /* immutable once listed */
	bool in_use;	     /* under blocks_lock */
	/* The owner's bracket state (only the owner touches it). */
	int depth;
	int role;
	uint64_t u0, s0, w0;
	/* Counters, per role; written by the owner only. */
	_Atomic uint64_t user_ns[PROF_NROLES], sys_ns[PROF_NROLES], work_ns[PROF_NROLES];
	_Atomic uint64_t brackets[PROF_NROLES];
	_Atomic uint64_t t_ns[PROF_NROLES][PROF_NTIMES];
	_Atomic uint64_t waits[PROF_NROLES][PROF_NWAITS], wait_ns[PROF_NROLES][PROF_NWAITS];
	_Atomic uint64_t bytes[PROF_NROLES];
};

/* blocks_lock protects the list's membership and in_use. */
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pblock *blocks;
static pthread_key_t block_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct pblock *mine;
static uint64_t opened_ns;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void release_block(void *p)
{
	struct pblock *b = p;
	pthread_mutex_lock(&blocks_lock);
	b->in_use = false;
	pthread_mutex_unlock(&blocks_lock);
}

static void make_key(void)
{
	pthread_key_create(&block_key, release_block);
}

static struct pblock *block(void)
{
	if (mine)
		return mine;
	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&blocks_lock);
	struct pblock *b;
	for (b = blocks; b && b->in_use; b = b->next)
		;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (b) {
			b->next = blocks;
			blocks = b;
		}
	}
	if (b) {
		b->in_use = true;
		b->depth = 0;
	}
	pthread_mutex_unlock(&blocks_lock);
	if (b)
		pthread_setspecific(block_key, b);
	mine = b;
	return b;
}

static void add(_Atomic uint64_t *c, uint64_t v)
{
	/* Owner-only writes: a load and a store, no locked instruction. */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

static void thread_cpu(uint64_t *user, uint64_t *sys)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0) {
		*user = *sys = 0;
		return;
	}
	*user = (uint64_t)ru.ru_utime.tv_sec * 1000000000u + (uint64_t)ru.ru_utime.tv_usec * 1000u;
	*sys = (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u;
}

void prof_configure(bool from_config)
{
	const char *env = config_env_text(OCF_E_PROFILE);
	bool on = from_config;
	if (env)
		on = config_env_switch(env) != 0; /* on, or a file */
	if (on)
		opened_ns = mono_ns();
	__atomic_store_n(&prof_enabled, on, __ATOMIC_RELAXED);
}

static bool on(void)
{
	return __atomic_load_n(&prof_enabled, __ATOMIC_RELAXED);
}

void prof_begin(enum prof_role role)
{
	if (!on())
		return;
	struct pblock *b = block();
	if (!b || b->depth++ > 0)
		return;
	b->role = role;
	thread_cpu(&b->u0, &b->s0);
	b->w0 = mono_ns();
}

void prof_end(void)
{
	struct pblock *b = mine;
	if (!b || b->depth == 0 || --b->depth > 0)
		return;
	uint64_t u, s;
	thread_cpu(&u, &s);
	int r = b->role;
	add(&b->user_ns[r], u - b->u0);
	add(&b->sys_ns[r], s - b->s0);
	add(&b->work_ns[r], mono_ns() - b->w0);
	add(&b->brackets[r], 1);
}

uint64_t prof_now(void)
{
	return on() ? mono_ns() : 0;
}

/* The role the calling thread works in now (a caller outside a bracket:
 * time it spends in the library anyway, e.g. the lookup of its buffer). */
static int cur_role(struct pblock *b)
{
	return b->depth ? b->role : PROF_CALLER;
}

void prof_time(enum prof_time what, uint64_t t0)
{
	if (!t0)
		return;
	struct pblock *b = block();
	if (b)
		add(&b->t_ns[cur_role(b)][what], mono_ns() - t0);
}

void prof_wait(enum prof_wait how, uint64_t t0)
{
	if (!t0)
		return;
	struct pblock *b = block();
	if (!b)
		return;
	add(&b->waits[cur_role(b)][how], 1);
	add(&b->wait_ns[cur_role(b)][how], mono_ns() - t0);
}

void prof_bytes(size_t n)
{
	if (!on())
		return;
	struct pblock *b = block();
	if (b)
		add(&b->bytes[cur_role(b)], n);
}

void prof_name_thread(const char *fmt, int index)
{
	char name[16];
	snprintf(name, sizeof(name), fmt, index);
	pthread_setname_np(pthread_self(), name);
}

/* The batch timeline's sums: [0] small jobs, [1] the others. */
static struct {
	_Atomic uint64_t jobs, reaped, reaped_ns;
	_Atomic uint64_t n[PROF_NSTEPS], first_ns[PROF_NSTEPS], last_ns[PROF_NSTEPS];
} steps_sum[2];

void prof_steps_init(struct prof_steps *s, uint64_t t0)
{
	s->t0 = t0;
	for (int k = 0; k < PROF_NSTEPS; k++) {
		atomic_init(&s->first[k], UINT64_MAX);
		atomic_init(&s->last[k], 0);
	}
}

void prof_step(struct prof_steps *s, enum prof_step k)
{
	if (!s || !s->t0)
		return;
	uint64_t now = mono_ns();
	ocf_atomic_min_u64(&s->first[k], now);
	ocf_atomic_max_u64(&s->last[k], now);
}

void prof_steps_end(const struct prof_steps *s, bool small)
{
	if (!s->t0)
		return;
	int c = small ? 0 : 1;
	atomic_fetch_add_explicit(&steps_sum[c].jobs, 1, memory_order_relaxed);
	for (int k = 0; k < PROF_NSTEPS; k++) {
		uint64_t a = atomic_load_explicit(&s->first[k], memory_order_relaxed);
		uint64_t b = atomic_load_explicit(&s->last[k], memory_order_relaxed);
		if (a == UINT64_MAX || a < s->t0)
			continue;
		atomic_fetch_add_explicit(&steps_sum[c].n[k], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&steps_sum[c].first_ns[k], a - s->t0, memory_order_relaxed);
		atomic_fetch_add_explicit(&steps_sum[c].last_ns[k], b - s->t0, memory_order_relaxed);
	}
}

void prof_reaped(uint64_t t0, bool small)
{
	if (!t0 || !on())
		return;
	uint64_t now = mono_ns();
	if (now < t0)
		return;
	int c = small ? 0 : 1;
	atomic_fetch_add_explicit(&steps_sum[c].reaped, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&steps_sum[c].reaped_ns, now - t0, memory_order_relaxed);
}

/* The batch timeline (prof_report), and its sums cleared. */
static void report_steps(FILE *f)
{
	static const char *const names[PROF_NSTEPS] = {"posted", "started", "claimed", "staged",
						       "read",	 "queued",  "copied",  "done"};
	bool any = false;
	for (int c = 0; c < 2; c++)
		any |= atomic_load_explicit(&steps_sum[c].jobs, memory_order_relaxed) > 0;
	if (any) {
		fprintf(f, "batch timeline: us after Submit began; each step: the first / last of a job's entries "
			   "(operations for started, staging buffers for queued and copied) to get there, mean over "
			   "the jobs that got there; reaped: mean over entries returned by GetStatus (small: at most "
			   "an entry per executor thread)\n");
		fprintf(f, "%-6s %9s", "jobs", "count");
		for (int k = 0; k < PROF_NSTEPS; k++)
			fprintf(f, " %15s", names[k]);
		fprintf(f, " %9s\n", "reaped");
	}
	for (int c = 0; any && c < 2; c++) {
		uint64_t jobs = atomic_load_explicit(&steps_sum[c].jobs, memory_order_relaxed);
		if (!jobs)
			continue;
		fprintf(f, "%-6s %9llu", c ? "large" : "small", (unsigned long long)jobs);
		for (int k = 0; k < PROF_NSTEPS; k++) {
			uint64_t n = atomic_load_explicit(&steps_sum[c].n[k], memory_order_relaxed);
			char cell[32];
			if (!n)
				snprintf(cell, sizeof(cell), "-");
			else
				snprintf(cell, sizeof(cell), "%.1f/%.1f",
					 (double)atomic_load_explicit(&steps_sum[c].first_ns[k], memory_order_relaxed) /
					     (double)n / 1e3,
					 (double)atomic_load_explicit(&steps_sum[c].last_ns[k], memory_order_relaxed) /
					     (double)n / 1e3);
			fprintf(f, " %15s", cell);
		}
		uint64_t rn = atomic_load_explicit(&steps_sum[c].reaped, memory_order_relaxed);
		if (rn)
			fprintf(f, " %9.1f\n",
				(double)atomic_load_explicit(&steps_sum[c].reaped_ns, memory_order_relaxed) / (double)rn /
				    1e3);
		else
			fprintf(f, " %9s\n", "-");
	}
	memset(steps_sum, 0, sizeof(steps_sum));
}

static const char *const role_names[PROF_NROLES] = {"callers", "engine", "batch", "stream"};

static uint64_t ld(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

void prof_report(void)
{
	if (!on())
		return;
	const char *env = config_env_text(OCF_E_PROFILE);
	FILE *f = stderr;
	bool close_it = false;
	if (env && config_env_switch(env) < 0) { /* a file */
		FILE *g = fopen(env, "ae");
		if (g) {
			f = g;
			close_it = true;
		}
	}
	struct {
		uint64_t threads, user, sys, work, brackets, bytes, t[PROF_NTIMES], waits[PROF_NWAITS],
		    wait_ns[PROF_NWAITS];
	} sum[PROF_NROLES + 1];
	memset(sum, 0, sizeof(sum));
	pthread_mutex_lock(&blocks_lock);
	for (struct pblock *b = blocks; b; b = b->next) {
		for (int r = 0; r < PROF_NROLES; r++) {
			if (!ld(&b->brackets[r]) && !ld(&b->bytes[r]) && !ld(&b->waits[r][PROF_WAIT_SLEEP]))
				continue;
			for (int k = 0; k < 2; k++) {
				int i = k ? PROF_NROLES : r; /* the role's row, then the total */
				sum[i].threads++;
				sum[i].user += ld(&b->user_ns[r]);
				sum[i].sys += ld(&b->sys_ns[r]);
				sum[i].work += ld(&b->work_ns[r]);
				sum[i].brackets += ld(&b->brackets[r]);
				sum[i].bytes += ld(&b->bytes[r]);
				for (int t = 0; t < PROF_NTIMES; t++)
					sum[i].t[t] += ld(&b->t_ns[r][t]);
				for (int w = 0; w < PROF_NWAITS; w++) {
					sum[i].waits[w] += ld(&b->waits[r][w]);
					sum[i].wait_ns[w] += ld(&b->wait_ns[r][w]);
				}
			}
		}
		/* Cleared for the next session; the owners may still run
		 * (a report races only with threads outside the library). */
		memset((char *)b + offsetof(struct pblock, user_ns), 0,
		       sizeof(*b) - offsetof(struct pblock, user_ns));
	}
	pthread_mutex_unlock(&blocks_lock);
	double el = (double)(mono_ns() - opened_ns) / 1e9;
	struct ocf_cpu_budget cb;
	ocf_cpu_budget_get(&cb);
	fprintf(f, "opencufile CPU profile: pid %d, %.3f s since the driver opened, CPU budget %ld (limited by %s)\n",
		(int)getpid(), el, cb.budget, cb.limited_by ? cb.limited_by : "online CPUs");
	fprintf(f, "%-8s %7s %9s %8s %8s %8s %8s %8s %8s %8s %8s %8s %22s %19s %9s %8s\n", "role", "threads",
		"jobs", "work_s", "user_s", "sys_s", "file_s", "lookup_s", "submit_s", "lane_s", "helper_s",
		"start_s", "waits done/spin/sleep", "wait_s spin/sleep", "GB", "cpu_s/GB");
	for (int i = 0; i <= PROF_NROLES; i++) {
		if (i < PROF_NROLES && !sum[i].threads)
			continue;
		double gb = (double)sum[i].bytes / 1e9;
		char waits[32], wt[32], cpg[16];
		snprintf(waits, sizeof(waits), "%llu/%llu/%llu",
			 (unsigned long long)sum[i].waits[PROF_WAIT_DONE],
			 (unsigned long long)sum[i].waits[PROF_WAIT_SPIN],
			 (unsigned long long)sum[i].waits[PROF_WAIT_SLEEP]);
		snprintf(wt, sizeof(wt), "%.3f/%.3f", sum[i].wait_ns[PROF_WAIT_SPIN] / 1e9,
			 sum[i].wait_ns[PROF_WAIT_SLEEP] / 1e9);
		if (gb > 0)
			snprintf(cpg, sizeof(cpg), "%.3f", (double)(sum[i].user + sum[i].sys) / 1e9 / gb);
		else
			snprintf(cpg, sizeof(cpg), "-");
		fprintf(
		    f,
		    "%-8s %7llu %9llu %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %22s %19s %9.3f %8s\n",
		    i < PROF_NROLES ? role_names[i] : "total", (unsigned long long)sum[i].threads,
		    (unsigned long long)sum[i].brackets, sum[i].work / 1e9, sum[i].user / 1e9,
		    sum[i].sys / 1e9, sum[i].t[PROF_T_FILE] / 1e9, sum[i].t[PROF_T_LOOKUP] / 1e9,
		    sum[i].t[PROF_T_SUBMIT] / 1e9, sum[i].t[PROF_T_LANE] / 1e9,
		    sum[i].t[PROF_T_HELPERS] / 1e9, sum[i].t[PROF_T_START] / 1e9, waits, wt, gb, cpg);
	}
	fprintf(f, "(user_s/sys_s: CPU time of the threads while they worked for the library; GB: bytes each "
		   "role moved itself)\n");
	report_steps(f);
	fflush(f);
	if (close_it)
		fclose(f);
}
