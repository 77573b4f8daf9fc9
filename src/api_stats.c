/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_stats.c - the statistics entry points.  They work whether or not the
 * driver is open: the level and the counters belong to the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "api.h"
#include "internal.h"
#include "log.h"
#include "stats.h"

OCF_EXPORT CUfileError_t cuFileSetStatsLevel(int level)
{
	API_FORK_GUARD(API_FORK_STATUS);
	int r = stats_set_level(level);
	if (r)
		log_error("cuFileSetStatsLevel(%d): level must be 0 to 3", level);
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileGetStatsLevel(int *level)
{
	API_FORK_GUARD(API_FORK_STATUS);
	if (!level)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	*level = stats_get_level();
	return api_status(0);
}

OCF_EXPORT CUfileError_t cuFileStatsStart(void)
{
	API_FORK_GUARD(API_FORK_STATUS);
	if (stats_get_level() == 0)
		log_warn("cuFileStatsStart: the statistics level is 0; nothing is counted until it is raised");
	stats_start();
	return api_status(0);
}

OCF_EXPORT CUfileError_t cuFileStatsStop(void)
{
	API_FORK_GUARD(API_FORK_STATUS);
	stats_stop();
	return api_status(0);
}

OCF_EXPORT CUfileError_t cuFileStatsReset(void)
{
	API_FORK_GUARD(API_FORK_STATUS);
	stats_reset();
	return api_status(0);
}

static CUfileError_t get(int level, void *out, size_t size)
{
	if (!out)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	CUfileStatsLevel3_t all;
	int r = stats_get(level, &all);
	if (r == -EINVAL) {
		log_error("cuFileGetStatsL%d: the statistics level is %d", level, stats_get_level());
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	}
	if (r == 0)
		memcpy(out, &all, size); /* L1 and L2 are prefixes of L3 */
	return api_status(r);
}

OCF_EXPORT CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(1, stats, sizeof(*stats));
}
OCF_EXPORT CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(2, stats, sizeof(*stats));
}
OCF_EXPORT CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(3, stats, sizeof(*stats));
}
