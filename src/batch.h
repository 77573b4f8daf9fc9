/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batch.h - batch I/O: sets of reads and writes submitted at once and
 * completed asynchronously.
 */
#ifndef OCF_BATCH_H_
#define OCF_BATCH_H_

#include <time.h>

#include "cufile.h"

/* All return 0 or an error (-errno / -CUfileOpError); callers are inside
 * the driver gate. */
int batch_setup(unsigned nr, CUfileBatchHandle_t *out);
int batch_submit(CUfileBatchHandle_t id, unsigned nr, const CUfileIOParams_t *params, unsigned flags);
int batch_get_status(CUfileBatchHandle_t id, unsigned min_nr, unsigned *nr, CUfileIOEvents_t *events,
		     const struct timespec *timeout);
int batch_cancel(CUfileBatchHandle_t id);
int batch_destroy(CUfileBatchHandle_t id);

/* Driver close: cancels every entry not started yet (before waiting for
 * in-flight operations), then frees every batch (after). */
void batch_cancel_all(void);
void batch_teardown(void);

#endif /* OCF_BATCH_H_ */
