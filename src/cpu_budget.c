/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_budget.c - the CPUs this process may use.
 *
 * DESIGN
 * A container limited by a cpuset or a CFS quota, a process pinned with
 * taskset, and one of N processes sharing a host each see all of the host's
 * CPUs in sysconf(_SC_NPROCESSORS_ONLN).  Sizing thread pools from that
 * starts threads for CPUs the process cannot run on, and they then take
 * turns on the few it has.  The budget is the smallest of:
 *   - the CPUs in the process's affinity mask (sched_getaffinity: taskset,
 *     a cpuset cgroup);
 *   - the CFS quota, rounded up to whole CPUs: cgroup v2 cpu.max
 *     ("QUOTA PERIOD", or "max"), v1 cpu.cfs_quota_us / cpu.cfs_period_us
 *     (-1: none), the lowest along the process's cgroup and its ancestors
 *     up to the hierarchy's mount point (a parent's limit binds its
 *     children);
 *   - OPENCUFILE_CPUS, a cap an administrator may set;
 * and at least 1.  The process's cgroup is found in /proc/self/cgroup and
 * mapped to a directory through the mount of its hierarchy in
 * /proc/self/mountinfo (the mount's root is the path the container sees as
 * "/").  It is read at every driver open (a process may have been moved
 * since) and logged at INFO; gdscheck and the profile print the same
 * reading from the same function.
 */
#define _GNU_SOURCE
#include "cpu_budget.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "internal.h"
#include "log.h"

static void path_join(char *out, size_t len, const char *root, const char *path)
{
	snprintf(out, len, "%s%s", root ? root : "", path);
}

/* The CPUs in the affinity mask, or 0 when it cannot be read. */
static long affinity_cpus(void)
{
	for (int n = 1024; n <= 1 << 20; n *= 4) {
		cpu_set_t *set = CPU_ALLOC((size_t)n);
		if (!set)
			return 0;
		size_t sz = CPU_ALLOC_SIZE((size_t)n);
		CPU_ZERO_S(sz, set);
		if (sched_getaffinity(0, sz, set) == 0) {
			long c = CPU_COUNT_S(sz, set);
			CPU_FREE(set);
			return c;
		}
		int e = errno;
		CPU_FREE(set);
		if (e != EINVAL)
			return 0;
	}
	return 0;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p;) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
		    p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 4;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
}

/* Does the comma-separated list hold the word? */
static int has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, w, n))
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

/* The process's cgroup path in hierarchy v2 (v1 = 0) or in the v1
 * hierarchy that has the cpu controller (v1 = 1). */
static int self_cgroup(const char *root, int v1, char *out, size_t len)
{
	char path[PATH_MAX], line[4096];
	path_join(path, sizeof(path), root, "/proc/self/cgroup");
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int found = -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		const char *ctrls = c1 + 1, *cg = c2 + 1;
		if ((!v1 && !strcmp(line, "0") && !*ctrls) || (v1 && has_word(ctrls, "cpu"))) {
			snprintf(out, len, "%s", cg);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

/* The mount of the v2 hierarchy, or of the v1 one with the cpu controller:
 * its root inside the hierarchy and its mount point. */
static int hierarchy_mount(const char *root, int v1, char *mroot, size_t rlen, char *mpoint, size_t plen)
{
	char path[PATH_MAX], line[8192];
	path_join(path, sizeof(path), root, "/proc/self/mountinfo");
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int found = -1;
	while (found && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
		char *fields[6] = {0}, *save = NULL, *tok = strtok_r(line, " \n", &save);
		int nf = 0;
		while (tok && nf < 6) {
			fields[nf++] = tok;
			tok = strtok_r(NULL, " \n", &save);
		}
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " \n", &save);
		char *fstype = tok ? strtok_r(NULL, " \n", &save) : NULL;
		char *src = fstype ? strtok_r(NULL, " \n", &save) : NULL;
		char *sopts = src ? strtok_r(NULL, " \n", &save) : NULL;
		if (nf < 5 || !fstype)
			continue;
		if ((!v1 && !strcmp(fstype, "cgroup2")) || (v1 && !strcmp(fstype, "cgroup") && sopts && has_word(sopts, "cpu"))) {
			unescape(fields[3]);
			unescape(fields[4]);
			snprintf(mroot, rlen, "%s", fields[3]);
			snprintf(mpoint, plen, "%s", fields[4]);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int r = fgets(buf, (int)len, f) ? 0 : -1;
	fclose(f);
	return r;
}

/* The CPUs a directory's quota allows, or 0 for none. */
static double dir_quota(const char *dir, int v1)
{
	char path[PATH_MAX + 32], a[128], b[128];
	/* A path too long for the buffer would name another file: no quota. */
	if (!v1) {
		if (snprintf(path, sizeof(path), "%s/cpu.max", dir) >= (int)sizeof(path) ||
		    read_line(path, a, sizeof(a)))
			return 0;
		char q[64] = "", p[64] = "";
		if (sscanf(a, "%63s %63s", q, p) < 1 || !strcmp(q, "max"))
			return 0;
		double qv = strtod(q, NULL), pv = *p ? strtod(p, NULL) : 100000.0;
		return qv > 0 && pv > 0 ? qv / pv : 0;
	}
	if (snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir) >= (int)sizeof(path) ||
	    read_line(path, a, sizeof(a)))
		return 0;
	if (snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir) >= (int)sizeof(path) ||
	    read_line(path, b, sizeof(b)))
		return 0;
	double qv = strtod(a, NULL), pv = strtod(b, NULL);
	return qv > 0 && pv > 0 ? qv / pv : 0;
}

/* The lowest quota along the process's cgroup and its ancestors in one
 * hierarchy; 0 for none. */
static double hierarchy_quota(const char *root, int v1, char *from, size_t flen)
{
	char cg[PATH_MAX], mroot[PATH_MAX], mpoint[PATH_MAX];
	if (self_cgroup(root, v1, cg, sizeof(cg)) || hierarchy_mount(root, v1, mroot, sizeof(mroot), mpoint, sizeof(mpoint)))
		return 0;
	/* The cgroup relative to the mount's root. */
	const char *rel = cg;
	size_t rl = strlen(mroot);
	if (strcmp(mroot, "/") && !strncmp(cg, mroot, rl) && (cg[rl] == '/' || cg[rl] == '\0'))
		rel = cg + rl;
	char base[PATH_MAX], dir[2 * PATH_MAX];
	path_join(base, sizeof(base), root, mpoint);
	if (snprintf(dir, sizeof(dir), "%s%s", base, strcmp(rel, "/") ? rel : "") >= (int)sizeof(dir))
		return 0; /* a cgroup path longer than any path: none found */
	size_t blen = strlen(base);
	double best = 0;
	for (;;) {
		double q = dir_quota(dir, v1);
		if (q > 0 && (best == 0 || q < best)) {
			best = q;
			/* For the log line: a name too long ends in "...". */
			if (snprintf(from, flen, "%s/%s", dir, v1 ? "cpu.cfs_quota_us" : "cpu.max") >= (int)flen &&
			    flen > 4)
				memcpy(from + flen - 4, "...", 4);
		}
		char *slash = strrchr(dir, '/');
		if (strlen(dir) <= blen || !slash || (size_t)(slash - dir) < blen)
			break;
		*slash = '\0';
	}
	return best;
}

void ocf_cpu_budget_read(struct ocf_cpu_budget *b, const char *root)
{
	memset(b, 0, sizeof(*b));
	if (root && !*root)
		root = NULL;
	b->online = sysconf(_SC_NPROCESSORS_ONLN);
	if (b->online < 1)
		b->online = 1;
	b->affinity = affinity_cpus();
	char f2[sizeof(b->quota_from)] = "", f1[sizeof(b->quota_from)] = "";
	double q2 = hierarchy_quota(root, 0, f2, sizeof(f2));
	double q1 = hierarchy_quota(root, 1, f1, sizeof(f1));
	if (q2 > 0 && (q1 == 0 || q2 <= q1)) {
		b->quota = q2;
		snprintf(b->quota_from, sizeof(b->quota_from), "%s", f2);
	} else if (q1 > 0) {
		b->quota = q1;
		snprintf(b->quota_from, sizeof(b->quota_from), "%s", f1);
	}
	b->cap = (long)config_env(OCF_E_CPUS);
	b->budget = b->online;
	b->limited_by = "online CPUs";
	if (b->affinity > 0 && b->affinity < b->budget) {
		b->budget = b->affinity;
		b->limited_by = "affinity";
	}
	/* Rounded up: 1.5 CPUs of quota keep two threads busy part time. */
	long qcpus = (long)b->quota + (b->quota > (double)(long)b->quota);
	if (b->quota > 0 && qcpus < b->budget) {
		b->budget = qcpus;
		b->limited_by = "cgroup quota";
	}
	if (b->cap > 0 && b->cap < b->budget) {
		b->budget = b->cap;
		b->limited_by = "OPENCUFILE_CPUS";
	}
	if (b->budget < 1)
		b->budget = 1;
}

/* lock protects cur and have. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ocf_cpu_budget cur;
static int have;
/* The budget, for the hot paths: 0 until first read.  Relaxed: every
 * reader only needs some recent reading. */
static long budget_now;

void ocf_cpu_budget_refresh(void)
{
	struct ocf_cpu_budget b;
	ocf_cpu_budget_read(&b, NULL);
	pthread_mutex_lock(&lock);
	cur = b;
	have = 1;
	pthread_mutex_unlock(&lock);
	__atomic_store_n(&budget_now, b.budget, __ATOMIC_RELAXED);
	char q[64] = "none";
	if (b.quota > 0)
		snprintf(q, sizeof(q), "%.2f", b.quota);
	log_info("CPU budget %ld (limited by %s): online %ld, affinity %ld, cgroup quota %s%s%s, OPENCUFILE_CPUS %ld",
		 b.budget, b.limited_by, b.online, b.affinity, q, b.quota > 0 ? " from " : "", b.quota > 0 ? b.quota_from : "",
		 b.cap);
}

long ocf_cpu_budget(void)
{
	long v = __atomic_load_n(&budget_now, __ATOMIC_RELAXED);
	if (v > 0)
		return v;
	struct ocf_cpu_budget b;
	ocf_cpu_budget_read(&b, NULL);
	pthread_mutex_lock(&lock);
	if (!have) {
		cur = b;
		have = 1;
	}
	v = cur.budget;
	pthread_mutex_unlock(&lock);
	__atomic_store_n(&budget_now, v, __ATOMIC_RELAXED);
	return v;
}

void ocf_cpu_budget_get(struct ocf_cpu_budget *out)
{
	(void)ocf_cpu_budget();
	pthread_mutex_lock(&lock);
	*out = cur;
	pthread_mutex_unlock(&lock);
}
