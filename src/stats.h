/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.h - cuFile statistics (levels 0-3) and the stats snapshot file.
 *
 * The API layer brackets each operation: t0 = stats_io_begin() (0 when
 * statistics are off, which is all a disabled counter costs), then
 * stats_io_done(..., t0, ...).  Histogram bucket i of read_size_kb_hist /
 * write_size_kb_hist counts requests of size s KiB (rounded down) with
 * s == 0 for i == 0 and 2^(i-1) <= s < 2^i for i >= 1; bucket 31 also takes
 * every larger size.  So 4 KiB is bucket 3, 1 MiB bucket 11.
 */
#ifndef OCF_STATS_H_
#define OCF_STATS_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cufile.h"
#include "stats_file.h"

#define OCF_STATS_MAX_GPUS 16

uint64_t stats_io_begin(void);
/* ret: bytes moved or a negative error; gpu: ordinal of device memory, -1
 * for host memory; unaligned: file offset, size or memory address not
 * 4 KiB aligned. */
void stats_io_done(bool write, size_t size, ssize_t ret, uint64_t start_ns, int gpu, bool unaligned);
/* The same for cuFileReadv/cuFileWritev: their own level-1 counters; the
 * level-2 histogram and level-3 per-GPU counters take them as one request
 * of their total size. */
void stats_iov_done(bool write, size_t size, ssize_t ret, uint64_t start_ns, int gpu, bool unaligned);
void stats_handle_register(bool ok);
void stats_handle_deregister(bool ok);
void stats_buf_register(bool ok);
void stats_buf_deregister(bool ok);

/* Batch I/O (L1 batch counters). */
enum stats_batch_call { STATS_BATCH_SETUP, STATS_BATCH_CANCEL, STATS_BATCH_DESTROY };
void stats_batch_call(enum stats_batch_call call, bool ok);
/* start_ns from stats_io_begin() (0: not counting). */
void stats_batch_submit(bool ok, unsigned entries, uint64_t start_ns);
void stats_batch_entry_done(bool write, bool ok, size_t bytes, uint64_t start_ns);
/* A cuFileReadAsync/cuFileWriteAsync operation (on the NULL stream, run at
 * once, too) ended with ret (bytes or an error); its read or write is
 * counted by stats_io_done as well. */
void stats_stream_done(bool write, ssize_t ret);

/* Level from profile.cufile_stats, unless cuFileSetStatsLevel chose one. */
void stats_configure_at_open(int level);

int stats_set_level(int level); /* 0 or -EINVAL */
int stats_get_level(void);
void stats_start(void);
void stats_stop(void);
void stats_reset(void);
/* Fills out up to `level` (1..3); -EINVAL when the current level is lower. */
int stats_get(int level, CUfileStatsLevel3_t *out);

/* The 1.15 layouts (no vectored I/O counters), for the unsuffixed getters
 * that binaries built against a 1.15 header call. */
#define OCF_STATS_L1_1150_SIZE 512
struct ocf_stats_l2_1150 {
	unsigned char basic[OCF_STATS_L1_1150_SIZE];
	uint64_t read_size_kb_hist[CUFILE_HIST_BUCKETS];
	uint64_t write_size_kb_hist[CUFILE_HIST_BUCKETS];
};
struct ocf_stats_l3_1150 {
	struct ocf_stats_l2_1150 detailed;
	uint32_t num_gpus;
	CUfilePerGpuStats_t per_gpu_stats[CUFILE_MAX_GPUS_STATS];
};
/* Converts a snapshot to the 1.15 layout of level 3 (levels 1 and 2 are
 * its prefixes). */
void stats_to_1150(const CUfileStatsLevel3_t *in, struct ocf_stats_l3_1150 *out);

/* The snapshot of the whole process now (stats_file.h); pid, start time
 * and `final` are the publisher's.  may_call_cuda: false where the CUDA
 * driver must not be called (a thread of ours, exit): the GPUs are then
 * those stats_read_gpus() or an earlier snapshot read. */
int stats_fill_snapshot(struct ocf_stats_file *f, bool may_call_cuda);
/* Reads the GPUs' UUIDs for later snapshots (at driver open). */
void stats_read_gpus(void);

/* Publishing the snapshot for gds_stats and gdscheck -s (stats_publish.c):
 * at driver open and close. */
void stats_publish_start(void);
void stats_publish_stop(void);

/* Pinned staging memory accounting (gpu.c): bytes pinned (+) or released
 * (-), and the bound of a GPU pool when it is created (+) or freed (-). */
void stats_pinned_add(int64_t delta);
void stats_pinned_bound_add(int64_t delta);
void stats_pinned_get(uint64_t *now, uint64_t *peak, uint64_t *bound_peak);

#endif /* OCF_STATS_H_ */
