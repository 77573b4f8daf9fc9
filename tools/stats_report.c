/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats_report.c - see stats_report.h.
 *
 * The totals are the process's counters as cuFileGetStatsL1/L2/L3 return
 * them.  The interval figures are differences between two snapshots over
 * the time between their writes (CLOCK_MONOTONIC, the same clock in every
 * process): bandwidth is bytes moved per second of that interval, average
 * latency the time spent in the calls over the calls made.  A counter
 * smaller than before was reset (cuFileStatsReset): it counts from zero.
 */
#define _GNU_SOURCE
#include "stats_report.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>

typedef unsigned long long ull;

int stats_report_read(const char *prog, const char *path, struct ocf_stats_file *f)
{
	int r = stats_file_read(AT_FDCWD, path, f);
	if (r == -EINVAL)
		fprintf(stderr, "%s: %s is not an opencufile statistics file of this version (%d)\n", prog, path,
			OCF_STATS_FILE_VERSION);
	else if (r)
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(-r));
	return r;
}

static void print_op(FILE *o, const char *name, const CUfileOpCounter_t *c)
{
	fprintf(o, "  %-22s ok %llu  err %llu\n", name, (ull)c->ok, (ull)c->err);
}

/* The level-1 figures of one kind of call. */
struct kind {
	const char *name;
	CUfileOpCounter_t ops;
	uint64_t bytes, lat_sum_us;
};

static void kinds_of(const CUfileStatsLevel1_t *s, struct kind k[4])
{
	k[0] = (struct kind){"read", s->read_ops, s->read_bytes, s->read_lat_sum_us};
	k[1] = (struct kind){"write", s->write_ops, s->write_bytes, s->write_lat_sum_us};
	k[2] = (struct kind){"readv", s->readv_ops, s->readv_bytes, s->readv_lat_sum_us};
	k[3] = (struct kind){"writev", s->writev_ops, s->writev_bytes, s->writev_lat_sum_us};
}

/* now - before; a counter that went back was reset and counts from 0. */
static uint64_t d(uint64_t now, uint64_t before) { return now >= before ? now - before : now; }

static double gib_per_s(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 1e9 / (double)ns / 1073741824.0 : 0;
}

static void print_totals(FILE *o, const struct ocf_stats_file *f)
{
	const CUfileStatsLevel1_t *s = &f->stats.detailed.basic;
	fprintf(o, "Totals\n");
	print_op(o, "read", &s->read_ops);
	print_op(o, "write", &s->write_ops);
	print_op(o, "readv", &s->readv_ops);
	print_op(o, "writev", &s->writev_ops);
	print_op(o, "handle register", &s->hdl_register_ops);
	print_op(o, "handle deregister", &s->hdl_deregister_ops);
	print_op(o, "buffer register", &s->buf_register_ops);
	print_op(o, "buffer deregister", &s->buf_deregister_ops);
	fprintf(o, "  read  bytes %llu  bw %llu B/s  avg latency %llu us  ops/s %llu\n", (ull)s->read_bytes,
		(ull)s->read_bw_bytes_per_sec, (ull)s->read_lat_avg_us, (ull)s->read_ops_per_sec);
	fprintf(o, "  write bytes %llu  bw %llu B/s  avg latency %llu us  ops/s %llu\n", (ull)s->write_bytes,
		(ull)s->write_bw_bytes_per_sec, (ull)s->write_lat_avg_us, (ull)s->write_ops_per_sec);
	fprintf(o, "  readv bytes %llu  writev bytes %llu  avg latency %llu / %llu us\n", (ull)s->readv_bytes,
		(ull)s->writev_bytes, (ull)s->readv_lat_avg_us, (ull)s->writev_lat_avg_us);
	print_op(o, "batch setup", &s->batch_setup_ops);
	print_op(o, "batch submit", &s->batch_submit_ops);
	print_op(o, "batch entries", &s->batch_complete_ops);
	print_op(o, "batch cancel", &s->batch_cancel_ops);
	print_op(o, "batch destroy", &s->batch_destroy_ops);
	fprintf(o, "  batch read bytes %llu  write bytes %llu  avg submit latency %llu us  avg completion latency %llu us\n",
		(ull)s->batch_read_bytes, (ull)s->batch_write_bytes, (ull)s->batch_submit_lat_avg_us,
		(ull)s->batch_completion_lat_avg_us);
	for (int w = 0; w < 2; w++)
		fprintf(o, "  %-22s ok %llu  err %llu  bytes %llu\n", w ? "stream write" : "stream read",
			(ull)f->stream.ok[w], (ull)f->stream.err[w], (ull)f->stream.bytes[w]);
}

static void print_interval(FILE *o, const struct ocf_stats_file *f, const struct ocf_stats_file *p)
{
	uint64_t ns = d(f->written_mono_ns, p->written_mono_ns);
	const CUfileStatsLevel1_t *s = &f->stats.detailed.basic, *b = &p->stats.detailed.basic;
	fprintf(o, "Last %.3f s\n", (double)ns / 1e9);
	struct kind now[4], before[4];
	kinds_of(s, now);
	kinds_of(b, before);
	for (int i = 0; i < 4; i++) {
		uint64_t ok = d(now[i].ops.ok, before[i].ops.ok), err = d(now[i].ops.err, before[i].ops.err);
		uint64_t lat = d(now[i].lat_sum_us, before[i].lat_sum_us);
		fprintf(o, "  %-7s ops %llu  err %llu  %.3f GiB/s  avg latency %llu us\n", now[i].name, (ull)ok,
			(ull)err, gib_per_s(d(now[i].bytes, before[i].bytes), ns), (ull)(ok + err ? lat / (ok + err) : 0));
	}
	uint64_t subs = d(s->batch_submit_ops.ok + s->batch_submit_ops.err, b->batch_submit_ops.ok + b->batch_submit_ops.err);
	uint64_t done = d(s->batch_complete_ops.ok + s->batch_complete_ops.err,
			  b->batch_complete_ops.ok + b->batch_complete_ops.err);
	uint64_t sub_lat = d(s->batch_submit_lat_sum_us, b->batch_submit_lat_sum_us);
	uint64_t done_lat = d(s->batch_completion_lat_sum_us, b->batch_completion_lat_sum_us);
	fprintf(o,
		"  batch   entries %llu  err %llu  read %.3f GiB/s  write %.3f GiB/s  avg submit latency %llu us  "
		"avg completion latency %llu us\n",
		(ull)done, (ull)d(s->batch_complete_ops.err, b->batch_complete_ops.err),
		gib_per_s(d(s->batch_read_bytes, b->batch_read_bytes), ns),
		gib_per_s(d(s->batch_write_bytes, b->batch_write_bytes), ns), (ull)(subs ? sub_lat / subs : 0),
		(ull)(done ? done_lat / done : 0));
	uint64_t sops = 0, serr = 0;
	for (int w = 0; w < 2; w++) {
		sops += d(f->stream.ok[w], p->stream.ok[w]) + d(f->stream.err[w], p->stream.err[w]);
		serr += d(f->stream.err[w], p->stream.err[w]);
	}
	fprintf(o, "  stream  ops %llu  err %llu  read %.3f GiB/s  write %.3f GiB/s\n", (ull)sops, (ull)serr,
		gib_per_s(d(f->stream.bytes[0], p->stream.bytes[0]), ns),
		gib_per_s(d(f->stream.bytes[1], p->stream.bytes[1]), ns));
}

static void print_histogram(FILE *o, const struct ocf_stats_file *f)
{
	fprintf(o, "  size histogram (KiB bucket: reads writes)\n");
	for (int i = 0; i < CUFILE_HIST_BUCKETS; i++) {
		uint64_t r = f->stats.detailed.read_size_kb_hist[i], w = f->stats.detailed.write_size_kb_hist[i];
		if (!r && !w)
			continue;
		if (i == 0)
			fprintf(o, "    [0, 1)");
		else
			fprintf(o, "    [%llu, %llu)", 1ull << (i - 1), 1ull << i);
		fprintf(o, ": %llu %llu\n", (ull)r, (ull)w);
	}
}

static void print_gpus(FILE *o, const struct ocf_stats_file *f, const struct ocf_stats_file *prev)
{
	uint64_t ns = prev ? d(f->written_mono_ns, prev->written_mono_ns) : 0;
	for (uint32_t g = 0; g < f->stats.num_gpus && g < CUFILE_MAX_GPUS_STATS; g++) {
		const CUfilePerGpuStats_t *p = &f->stats.per_gpu_stats[g];
		fprintf(o, "  GPU %u uuid ", g);
		for (int i = 0; i < CUFILE_GPU_UUID_LEN; i++)
			fprintf(o, "%02x", (unsigned char)p->uuid[i]);
		fprintf(o, "\n    reads %llu (posix %llu, unaligned %llu, err %llu) bytes %llu\n", (ull)p->n_total_reads,
			(ull)p->n_posix_reads, (ull)p->n_unaligned_reads, (ull)p->n_reads_err, (ull)p->read_bytes);
		fprintf(o, "    writes %llu (posix %llu, unaligned %llu, err %llu) bytes %llu\n", (ull)p->n_total_writes,
			(ull)p->n_posix_writes, (ull)p->n_unaligned_writes, (ull)p->n_writes_err, (ull)p->writes_bytes);
		if (!ns || g >= prev->stats.num_gpus)
			continue;
		const CUfilePerGpuStats_t *q = &prev->stats.per_gpu_stats[g];
		/* Utilization: the share of the interval spent in I/O to this
		 * GPU, summed over threads (so above 100 % with several). */
		fprintf(o, "    last %.3f s: read %.3f GiB/s util %llu %%, write %.3f GiB/s util %llu %%\n",
			(double)ns / 1e9, gib_per_s(d(p->read_bytes, q->read_bytes), ns),
			(ull)(d(p->read_duration_us, q->read_duration_us) * 100000 / ns),
			gib_per_s(d(p->writes_bytes, q->writes_bytes), ns),
			(ull)(d(p->write_duration_us, q->write_duration_us) * 100000 / ns));
	}
}

void stats_report_print(FILE *o, const struct ocf_stats_file *f, const struct ocf_stats_file *prev, int level)
{
	if (level > (int)f->level)
		level = (int)f->level;
	time_t t = (time_t)(f->written_unix_ns / 1000000000u);
	char when[64];
	struct tm tm;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	fprintf(o, "opencufile statistics of pid %d, written %s, level %u, window %.3f s%s\n", f->pid, when, f->level,
		(double)f->window_ns / 1e9, f->final ? " (final)" : "");
	fprintf(o, "  pinned staging memory  now %.1f MiB  peak %.1f MiB  bound %.1f MiB\n",
		(double)f->pinned_bytes / 1048576.0, (double)f->pinned_peak_bytes / 1048576.0,
		(double)f->pinned_bound_bytes / 1048576.0);
	if (level < 1)
		return;
	print_totals(o, f);
	if (prev)
		print_interval(o, f, prev);
	if (level >= 2)
		print_histogram(o, f);
	if (level >= 3)
		print_gpus(o, f, prev);
}
