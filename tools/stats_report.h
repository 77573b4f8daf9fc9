/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats_report.h - reading and printing a statistics snapshot
 * (src/stats_file.h), shared by gdscheck -s and gds_stats.
 */
#ifndef OCF_TOOLS_STATS_REPORT_H_
#define OCF_TOOLS_STATS_REPORT_H_

#include <stdio.h>

#include "stats_file.h"

/* Reads the snapshot at path; on failure says why on stderr (prefixed by
 * prog) and returns -errno (-EINVAL: not a snapshot of this version). */
int stats_report_read(const char *prog, const char *path, struct ocf_stats_file *f);

/* Prints f up to `level` (at most f->level).  With prev, an earlier
 * snapshot of the same process, also the figures of the interval between
 * the two: bandwidth, operations, errors and average latency. */
void stats_report_print(FILE *out, const struct ocf_stats_file *f, const struct ocf_stats_file *prev, int level);

#endif /* OCF_TOOLS_STATS_REPORT_H_ */
