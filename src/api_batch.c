/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_batch.c - cuFileBatchIO* entry points: the driver gate, statistics
 * and the mapping of internal results to CUfileError_t around batch.c.
 *
 * SetUp opens the driver implicitly, like cuFileHandleRegister; the others
 * need a batch from SetUp, which a close destroys, so they do not.
 */
#define _GNU_SOURCE
#include "api.h"
#include "batch.h"
#include "driver.h"
#include "internal.h"
#include "log.h"
#include "stats.h"

static const char *errstr(int r) { return cufileop_status_error(api_status(r).err); }

OCF_EXPORT CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *batch_idp, unsigned nr)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int r = driver_enter(true);
	if (r)
		return api_status(r);
	r = batch_setup(nr, batch_idp);
	driver_exit();
	stats_batch_call(STATS_BATCH_SETUP, r == 0);
	if (r)
		log_error("cuFileBatchIOSetUp(%u) failed: %s", nr, errstr(r));
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr, CUfileIOParams_t *iocbp,
					     unsigned int flags)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int r = driver_enter(false);
	if (r)
		return api_status(r);
	r = batch_submit(batch_idp, nr, iocbp, flags);
	driver_exit();
	if (r) {
		stats_batch_submit(false, 0, stats_io_begin());
		log_error("cuFileBatchIOSubmit(%p, %u) failed: %s", batch_idp, nr, errstr(r));
	}
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr, unsigned *nr,
						CUfileIOEvents_t *iocbp, struct timespec *timeout)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int r = driver_enter(false);
	if (r)
		return api_status(r);
	r = batch_get_status(batch_idp, min_nr, nr, iocbp, timeout);
	driver_exit();
	if (r)
		log_error("cuFileBatchIOGetStatus(%p) failed: %s", batch_idp, errstr(r));
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int r = driver_enter(false);
	if (r)
		return api_status(r);
	r = batch_cancel(batch_idp);
	driver_exit();
	stats_batch_call(STATS_BATCH_CANCEL, r == 0);
	if (r)
		log_error("cuFileBatchIOCancel(%p) failed: %s", batch_idp, errstr(r));
	return api_status(r);
}

OCF_EXPORT void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp)
{
	API_FORK_GUARD();
	if (driver_enter(false))
		return;
	int r = batch_destroy(batch_idp);
	driver_exit();
	stats_batch_call(STATS_BATCH_DESTROY, r == 0);
	if (r)
		log_error("cuFileBatchIODestroy(%p): unknown batch", batch_idp);
}
