/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stripe.h - the striped path of device reads (stripe.c): a request of a
 * few MiB read by several threads at once into the caller's staging
 * buffers, copied to the GPU by the caller alone, one copy per stripe.
 */
#ifndef OCF_STRIPE_H_
#define OCF_STRIPE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner.h"

struct ocf_io;
struct ocf_job;
struct ocf_lane;

/* Sets the job up for its shape and the caller's lane, before any helper
 * can see it. */
void stripe_setup(struct ocf_job *job, const struct plan_stripes *sh, struct ocf_lane *lane);

/* The caller's part of a striped job: reads chunks, copies each stripe
 * once it is whole, waits for the copies.  Returns false when the lane's
 * stream may still hold a copy (it must then be discarded). */
bool stripe_run_caller(struct ocf_job *job);

/* A helper's part: reads chunks into the caller's stripes until none is
 * left.  No CUDA call. */
void stripe_run_helper(struct ocf_job *job);

#endif /* OCF_STRIPE_H_ */
