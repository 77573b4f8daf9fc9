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

/* Copies at most this large may be grouped: the per-copy cost that grouping
 * saves is small beside a larger transfer (batches of 1 MiB entries went no
 * faster grouped on the H200 machine).  The batch path's bound too. */
#define OCF_GROUP_COPY_MAX ((size_t)512 << 10)

/* Whether grouped copies may be used at all: the driver has
 * cuMemcpyBatchAsync and OPENCUFILE_GROUPED_COPIES is not 0. */
bool cg_form_available(void);
/* One cuMemcpyBatchAsync of the k copies dst[i] <- src[i] (len[i] bytes)
 * on `stream`, ordered after the stream's earlier work; used by the
 * groups below and by the batch path (batch_io.c). */
CUresult cg_memcpy_batch(CUdeviceptr *dst, CUdeviceptr *src, size_t *len, size_t k, CUstream stream);

/* Makes the groups of a context, with it current: `n` events (at least as
 * many as copies that can wait at once: a group in flight has at least one
 * member's copy), polled for, and the streams the groups go on.  NULL when grouping is off
 * (OPENCUFILE_GROUPED_COPIES=0, OPENCUFILE_CALLER_GROUPS=0), the driver
 * lacks cuMemcpyBatchAsync, or nothing could be made. */
struct ocf_copy_groups *cg_create(int n);
/* No copy may be in flight; the context current if it can be (the events
 * and streams are destroyed by handle either way). */
void cg_destroy(struct ocf_copy_groups *cg);

/* Whether `busy` engine participants are enough to try grouping. */
bool cg_wanted(const struct ocf_copy_groups *cg, int busy);

enum cg_result {
	CG_ALONE,   /* not grouped: the caller queues its copy itself */
	CG_GROUPED, /* queued in a group: wait for *ev, then cg_release */
	CG_FAILED,  /* failed (*err); nothing of it is in flight */
};

/* Queues the copy of n bytes from pinned src to dst, with other threads'
 * copies where several are waiting at once, on one of the set's blocking
 * streams, with the context current (cg_wanted said to try).  `nap_ok`: the caller has nothing to do but wait for this
 * copy (the copy is its request's only chunk), so it may sleep for it
 * (copygroup.c, "Napping"); otherwise it returns as soon as the copy is
 * queued, to read its next chunk meanwhile.  For CG_GROUPED, *ev, *grp and
 * *wait_bytes (the wait's polling budget) are set. */
enum cg_result cg_copy(struct ocf_copy_groups *cg, CUdeviceptr dst, const void *src, size_t n, bool nap_ok,
		       CUevent *ev, struct ocf_copy_group **grp, size_t *wait_bytes, CUresult *err);
/* After a failed wait for the group's event: waits for the stream the group
 * went on, so that no copy of it can still land (CUDA_SUCCESS), or says it
 * cannot be known. */
CUresult cg_drain(struct ocf_copy_group *grp);
/* A member is done waiting for its group's event. */
void cg_release(struct ocf_copy_groups *cg, struct ocf_copy_group *grp);

#endif
