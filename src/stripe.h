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

struct ocf_io;
struct ocf_job;
struct ocf_lane;

/* Whether a request of this kind and size takes the striped path, given
 * the helpers it could have. */
bool stripe_wanted(const struct ocf_io *io, bool write, int helpers);

/* A striped request's pieces and stripes, for lanes of `depth` buffers of
 * `room` bytes (every lane of the pool is such). */
struct stripe_shape {
	size_t chunk, skew0, nchunks; /* the pieces */
	size_t per_stripe, nstripes;
	bool spin; /* short: its helpers stay awake after it (ocf_stripe_tuning) */
};

/* The request's shape; false when it does not fit the path (the request
 * then takes another). */
bool stripe_shape(const struct ocf_io *io, size_t room, int depth, struct stripe_shape *sh);
/* Sets the job up for its shape and the caller's lane, before any helper
 * can see it. */
void stripe_setup(struct ocf_job *job, const struct stripe_shape *sh, struct ocf_lane *lane);

/* The caller's part of a striped job: reads chunks, copies each stripe
 * once it is whole, waits for the copies.  Returns false when the lane's
 * stream may still hold a copy (it must then be discarded). */
bool stripe_run_caller(struct ocf_job *job);

/* A helper's part: reads chunks into the caller's stripes until none is
 * left.  No CUDA call. */
void stripe_run_helper(struct ocf_job *job);

#endif /* OCF_STRIPE_H_ */
