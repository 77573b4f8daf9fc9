/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_stats.c - the statistics entry points.  They work whether or not the
 * driver is open: the level and the counters belong to the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
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

/* The library is built with the 1.19 layout (cufile.h's default). */
_Static_assert(sizeof(CUfileStatsLevel1_t) == 624 && sizeof(CUfileStatsLevel2_t) == 1136 &&
		       sizeof(CUfileStatsLevel3_t) == 5112,
	       "the library's statistics structs are the 1.19 layout");
_Static_assert(sizeof(struct ocf_stats_l2_1150) == 1024 && sizeof(struct ocf_stats_l3_1150) == 5000,
	       "the 1.15 statistics layout");

/* Fills `size` bytes of the caller's struct (never more): the 1.19 layout
 * (v1190) or the 1.15 one. */
static CUfileError_t get(int level, void *out, size_t size, bool v1190)
{
	if (!out)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	CUfileStatsLevel3_t *all = malloc(sizeof(*all));
	int r = all ? stats_get(level, all) : -ENOMEM;
	if (r == -EINVAL)
		log_error("cuFileGetStatsL%d: the statistics level is %d", level, stats_get_level());
	if (r == 0 && v1190) {
		memcpy(out, all, size); /* L1 and L2 are prefixes of L3 */
	} else if (r == 0) {
		/* Its own allocation, so that no path copies from a pointer
		 * that may be NULL (gcc 13 -Wnonnull saw one). */
		struct ocf_stats_l3_1150 *old = malloc(sizeof(*old));
		if (old) {
			stats_to_1150(all, old);
			memcpy(out, old, size);
			free(old);
		} else {
			r = -ENOMEM;
		}
	}
	free(all);
	return api_status(r == -EINVAL ? OCF_ERR(CU_FILE_INVALID_VALUE) : r);
}

/* The unsuffixed names: the 1.15 layout (see cufile.h). */
#undef cuFileGetStatsL1
#undef cuFileGetStatsL2
#undef cuFileGetStatsL3
OCF_EXPORT CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats);
OCF_EXPORT CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats);
OCF_EXPORT CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats);
CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(1, stats, OCF_STATS_L1_1150_SIZE, false);
}
CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(2, stats, sizeof(struct ocf_stats_l2_1150), false);
}
CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(3, stats, sizeof(struct ocf_stats_l3_1150), false);
}

/* The 1.19 layout, for programs built with cufile.h's 1.19 surface. */
OCF_EXPORT CUfileError_t cuFileGetStatsL1_v1190(CUfileStatsLevel1_t *stats);
OCF_EXPORT CUfileError_t cuFileGetStatsL2_v1190(CUfileStatsLevel2_t *stats);
OCF_EXPORT CUfileError_t cuFileGetStatsL3_v1190(CUfileStatsLevel3_t *stats);
CUfileError_t cuFileGetStatsL1_v1190(CUfileStatsLevel1_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(1, stats, sizeof(*stats), true);
}
CUfileError_t cuFileGetStatsL2_v1190(CUfileStatsLevel2_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(2, stats, sizeof(*stats), true);
}
CUfileError_t cuFileGetStatsL3_v1190(CUfileStatsLevel3_t *stats)
{
	API_FORK_GUARD(API_FORK_STATUS);
	return get(3, stats, sizeof(*stats), true);
}
