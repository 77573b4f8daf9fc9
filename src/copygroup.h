/* SPDX-License-Identifier: Apache-2.0 */
/*
 * copygroup.h - small host-to-device copies of several threads handed to
 * the driver as one grouped call (copygroup.c has the design).
 */
#ifndef OCF_COPYGROUP_H_
#define OCF_COPYGROUP_H_

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* The copy groups of one GPU's primary context. */
struct ocf_copy_groups;
/* One group in flight: its event, waited for by every member. */
struct ocf_copy_group;

/* Copies at most this large may be grouped. */
#define OCF_GROUP_COPY_MAX ((size_t)512 << 10)

/* Makes the groups of a context with `n` events (at least as many as the
 * threads that can copy at once: one group in flight per member at most),
 * with ctx current.  NULL when grouping is off (OPENCUFILE_GROUPED_COPIES=0,
 * OPENCUFILE_CALLER_GROUPS=0), the driver lacks cuMemcpyBatchAsync, or
 * nothing could be made. */
struct ocf_copy_groups *cg_create(int n);
/* With the context current; no copy may be in flight. */
void cg_destroy(struct ocf_copy_groups *cg);

/* Whether `busy` engine participants are enough to try grouping. */
bool cg_wanted(const struct ocf_copy_groups *cg, int busy);

enum cg_result {
	CG_ALONE,   /* not grouped: the caller queues its copy itself */
	CG_GROUPED, /* queued in a group: wait for *ev, then cg_release */
	CG_FAILED,  /* failed (*err); nothing of it is in flight */
};

/* Queues the copy of n bytes from pinned src to dst, with other threads'
 * copies where several are waiting at once, on `stream` (a blocking stream
 * of the context) when this thread submits the group.  For CG_GROUPED,
 * *ev, *grp and *wait_bytes (the group's bytes: the wait's polling budget)
 * are set. */
enum cg_result cg_copy(struct ocf_copy_groups *cg, CUstream stream, CUdeviceptr dst, const void *src, size_t n,
		       CUevent *ev, struct ocf_copy_group **grp, size_t *wait_bytes, CUresult *err);
/* A member is done waiting for its group's event. */
void cg_release(struct ocf_copy_groups *cg, struct ocf_copy_group *grp);

#endif
