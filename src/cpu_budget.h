/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_budget.h - the CPUs this process may use: what every thread pool of
 * the library is sized from (cpu_budget.c says how it is read).
 */
#ifndef OCF_CPU_BUDGET_H_
#define OCF_CPU_BUDGET_H_

#include <stddef.h>

struct ocf_cpu_budget {
	long online;	  /* sysconf(_SC_NPROCESSORS_ONLN) */
	long affinity;	  /* CPUs in the process's affinity mask (sched_getaffinity) */
	double quota;	  /* CPUs the lowest CFS quota allows (0: no quota) */
	char quota_from[512]; /* the cgroup file that set it ("" when none) */
	long cap;	  /* OPENCUFILE_CPUS (0: not set) */
	long budget;	  /* min(affinity, ceil(quota), cap), at least 1 */
	const char *limited_by; /* "affinity", "cgroup quota", "OPENCUFILE_CPUS" or "online CPUs" */
};

/* Reads the budget now.  `root` prefixes every /proc and /sys path (tests
 * point it at a made-up tree; NULL or "" for the real one); the affinity
 * mask is always the calling process's own. */
void ocf_cpu_budget_read(struct ocf_cpu_budget *b, const char *root);

/* The budget as read by the last ocf_cpu_budget_refresh() (the driver
 * open); read once on first use before any open.  At least 1. */
long ocf_cpu_budget(void);
/* Reads it again (the driver open: a process may have been moved to
 * another cgroup or CPU set since) and logs it at INFO. */
void ocf_cpu_budget_refresh(void);
/* The last reading, for reports (the profile). */
void ocf_cpu_budget_get(struct ocf_cpu_budget *out);

#endif /* OCF_CPU_BUDGET_H_ */
