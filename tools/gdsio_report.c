/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_report.c - what gdsio prints: the banner, one result per run in
 * NVIDIA gdsio's line format followed by our "Extra:" line (GB/s, p50/p99,
 * CPU seconds per GB, verification, status), the CSV rows and the SVG
 * chart.  Scripts parse these lines by key: keep their format stable, add
 * keys at the end.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cufile_library.h"
#include "gdsio.h"

const char *const status_name[] = {"ok",      "skipped",  "not_supported", "incomplete",
				   "timeout", "io_error", "setup_error",   "verify_failed"};
const char *const xfer_name[] = {"GPUD",     "CPUONLY", "CPU_GPU", "GPUD_ASYNC", "GPUD_ASYNC_STREAMREG",
				 "GPU_BATCH"};
const char *const mem_name[] = {"DEVICE(cuMemAlloc)", "DEVICE(VMM cuMemCreate)", "PINNED(cuMemHostAlloc)",
				"HOST(malloc)", "HOST(mmap)"};
const char *const io_name[] = {"READ", "WRITE", "RANDREAD", "RANDWRITE"};
const char *const wait_name[] = {"timed", "wait", "poll"};

static void human_size(char *buf, size_t len, uint64_t v)
{
	static const char *const suf[] = {"", "K", "M", "G", "T"};
	int i = 0;
	while (i < 4 && v >= 1024 && v % 1024 == 0)
		v /= 1024, i++;
	snprintf(buf, len, "%llu%s", (unsigned long long)v, suf[i]);
}

static double gbps(const struct result *r)
{
	return r->secs > 0 ? (double)r->bytes / r->secs / 1e9 : 0;
}

void print_result(const struct result *r)
{
	double gib = r->secs > 0 ? (double)r->bytes / r->secs / 1073741824.0 : 0;
	double avg = r->h.count ? (double)r->h.sum_ns / (double)r->h.count / 1e3 : 0;
	double gb = (double)r->bytes / 1e9;
	double cpu = gb > 0 ? (r->cpu_user + r->cpu_sys) / gb : 0;
	if (r->status == ST_SKIPPED || (r->status == ST_SETUP && !r->ops) || r->status == ST_UNSUPPORTED) {
		printf("IoType: %s XferType: %s Threads: %d IOSize: %zu(KiB) %s: %s\n", io_name[o.iotype],
		       xfer_name[o.xfer], r->threads, r->io / 1024,
		       r->status == ST_UNSUPPORTED ? "NOT SUPPORTED by this libcufile" : "ERROR", r->msg);
		printf("Extra: Status: %s\n", status_name[r->status]);
		fflush(stdout);
		return;
	}
	printf("IoType: %s XferType: %s Threads: %d DataSetSize: %llu/%llu(KiB) IOSize: %zu(KiB) Throughput: "
	       "%.3f "
	       "GiB/sec, Avg_Latency: %.3f usecs ops: %llu total_time %.3f secs\n",
	       io_name[o.iotype], xfer_name[o.xfer], r->threads, (unsigned long long)(r->bytes / 1024),
	       (unsigned long long)(r->planned / 1024), r->io / 1024, gib, avg, (unsigned long long)r->ops,
	       r->secs);
	printf("Extra: GB_per_sec: %.3f p50_usecs: %.3f p99_usecs: %.3f CPU_sec_per_GB: %.4f (user %.3f sys "
	       "%.3f s) "
	       "Verify: %s Status: %s",
	       gbps(r), hist_pct_us(&r->h, 0.50), hist_pct_us(&r->h, 0.99), cpu, r->cpu_user, r->cpu_sys,
	       !o.verify		? "off"
	       : r->status == ST_VERIFY ? "FAIL"
	       : r->status == ST_OK	? "PASS"
					: "incomplete",
	       status_name[r->status]);
	/* -x 5: each batch from just before its submit to the collection of
	 * its last completion (the op figures above are per entry). */
	if (o.xfer == X_BATCH)
		printf(" batches: %llu batch_avg_usecs: %.3f batch_p50_usecs: %.3f batch_p99_usecs: %.3f",
		       (unsigned long long)r->bh.count,
		       r->bh.count ? (double)r->bh.sum_ns / (double)r->bh.count / 1e3 : 0,
		       hist_pct_us(&r->bh, 0.50), hist_pct_us(&r->bh, 0.99));
	/* -q: each request from the moment it could start to its last piece
	 * (the op figures above are per piece). */
	if (o.piece)
		printf(" requests: %llu piece_bytes: %zu request_avg_usecs: %.3f request_p50_usecs: %.3f "
		       "request_p99_usecs: %.3f",
		       (unsigned long long)r->bh.count, o.piece,
		       r->bh.count ? (double)r->bh.sum_ns / (double)r->bh.count / 1e3 : 0,
		       hist_pct_us(&r->bh, 0.50), hist_pct_us(&r->bh, 0.99));
	if (o.callers)
		printf(" callers: %d", o.callers);
	/* -e: the phase's rounds, the first one alone and the median of the
	 * others; which phase this line reports. */
	if (o.entries) {
		printf(" entries: %d rounds: %u first_round_usecs: %.3f", o.entries, r->rounds,
		       r->first_round_us);
		if (r->rounds > 1)
			printf(" later_round_usecs: %.3f", r->later_round_us);
		printf(" phase: %s", is_write() ? "write" : "read");
	}
	printf("\n");
	if (r->status != ST_OK)
		printf("ERROR: %s\n", r->msg);
	fflush(stdout);
}

void csv_header(FILE *f)
{
	fprintf(f, "io_type,xfer_type,memory,threads,io_size,bytes,seconds,gib_per_s,gb_per_s,avg_"
		   "lat_us,p50_us,"
		   "p99_us,ops,cpu_s_per_gb,status\n");
}

void csv_row(FILE *f, const struct result *r)
{
	double gb = (double)r->bytes / 1e9;
	fprintf(f, "%s,%s,%s,%d,%zu,%llu,%.6f,%.4f,%.4f,%.3f,%.3f,%.3f,%llu,%.5f,%s\n", io_name[o.iotype],
		xfer_name[o.xfer], mem_name[effective_mem()], r->threads, r->io, (unsigned long long)r->bytes,
		r->secs, r->secs > 0 ? (double)r->bytes / r->secs / 1073741824.0 : 0, gbps(r),
		r->h.count ? (double)r->h.sum_ns / (double)r->h.count / 1e3 : 0, hist_pct_us(&r->h, 0.5),
		hist_pct_us(&r->h, 0.99), (unsigned long long)r->ops,
		gb > 0 ? (r->cpu_user + r->cpu_sys) / gb : 0, status_name[r->status]);
	fflush(f);
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* Throughput (GB/s) against IO size (log2 axis), one line per thread count. */
int write_svg(const char *path, const struct result *res, int nres)
{
	static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
					     "#9467bd", "#8c564b", "#e377c2", "#17becf"};
	const double W = 960, H = 560, L = 90, R = 190, T = 60, B = 80;
	const double pw = W - L - R, ph = H - T - B;
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	double lmin = 1e9, lmax = -1e9, vmax = 0;
	for (int i = 0; i < nres; i++) {
		if (res[i].status != ST_OK)
			continue;
		double l = log2((double)res[i].io);
		lmin = fmin(lmin, l), lmax = fmax(lmax, l), vmax = fmax(vmax, gbps(&res[i]));
	}
	if (lmin > lmax)
		lmin = 12, lmax = 24;
	if (lmax - lmin < 1)
		lmin -= 1, lmax += 1;
	if (vmax <= 0)
		vmax = 1;
	double raw = vmax / 5, mag = pow(10, floor(log10(raw))), step = mag;
	if (raw > 5 * mag)
		step = 10 * mag;
	else if (raw > 2 * mag)
		step = 5 * mag;
	else if (raw > mag)
		step = 2 * mag;
	double ymax = ceil(vmax / step) * step;
#define XP(l) (L + ((l)-lmin) / (lmax - lmin) * pw)
#define YP(v) (T + ph - (v) / ymax * ph)
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
		"%.0f\" "
		"font-family=\"sans-serif\" font-size=\"13\">\n",
		W, H, W, H);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
	char title[512];
	snprintf(title, sizeof(title), "gdsio %s %s, %s, %s fd: throughput vs IO size", io_name[o.iotype],
		 xfer_name[o.xfer], mem_name[effective_mem()], o.odirect ? "O_DIRECT" : "buffered");
	fprintf(f, "<text x=\"%.1f\" y=\"30\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">",
		L + pw / 2);
	xml_text(f, title);
	fprintf(f, "</text>\n");
	/* Grid and y ticks. */
	for (double v = 0; v <= ymax + step / 2; v += step) {
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", L,
			YP(v), L + pw, YP(v));
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 8, YP(v) + 4,
			v);
	}
	/* x ticks at powers of two. */
	int nt = (int)(floor(lmax) - ceil(lmin)) + 1, every = nt > 12 ? 2 : 1;
	for (int l = (int)ceil(lmin), k = 0; l <= (int)floor(lmax); l++, k++) {
		char lab[32];
		human_size(lab, sizeof(lab), 1ull << l);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eeeeee\"/>\n",
			XP(l), T, XP(l), T + ph);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
			XP(l), T + ph, XP(l), T + ph + 5);
		if (k % every == 0)
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", XP(l),
				T + ph + 20, lab);
	}
	fprintf(
	    f,
	    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n",
	    L, T, pw, ph);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">IO size (bytes, log scale)</text>\n",
		L + pw / 2, H - 25);
	fprintf(
	    f,
	    "<text x=\"25\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 25 %.1f)\">Throughput "
	    "(GB/s, 10^9 bytes/s)</text>\n",
	    T + ph / 2, T + ph / 2);
	/* One line per thread count, in the order given. */
	int ncol = 0;
	for (int ti = 0; ti < o.nthreads; ti++) {
		int th = o.threads[ti];
		const char *c = colors[ncol % 8];
		int npts = 0;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
		for (int i = 0; i < nres; i++)
			if (res[i].threads == th && res[i].status == ST_OK) {
				fprintf(f, "%s%.1f,%.1f", npts ? " " : "", XP(log2((double)res[i].io)),
					YP(gbps(&res[i])));
				npts++;
			}
		fprintf(f, "\"/>\n");
		for (int i = 0; i < nres; i++)
			if (res[i].threads == th && res[i].status == ST_OK)
				fprintf(f,
					"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%d "
					"thread(s), %zu "
					"bytes: %.3f GB/s</title></circle>\n",
					XP(log2((double)res[i].io)), YP(gbps(&res[i])), c, th, res[i].io,
					gbps(&res[i]));
		double ly = T + 10 + ncol * 24;
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"3\"/>\n",
			L + pw + 20, ly, L + pw + 50, ly, c);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%d thread%s</text>\n", L + pw + 58, ly + 4, th,
			th == 1 ? "" : "s");
		ncol++;
	}
	fprintf(f, "</svg>\n");
#undef XP
#undef YP
	return fclose(f);
}

/* -e: the entries, their files and buffers, the rounds and phases. */
static void entries_banner(void)
{
	const char *phases =
	    o.nphases > 1 ? (o.phases[0] == IO_WRITE ? "writes, then of reads" : "reads, then of writes")
	    : is_write()  ? "writes"
			  : "reads";
	printf("# entries (-e): %d of %zu bytes, each its own new file %s/gdsio.e<k>.dat (%s fd, ", o.entries,
	       o.ios[0], o.dir, o.odirect ? "O_DIRECT" : "buffered");
	printf("one cuFile handle each) and buffer (memory %s, %s); ", mem_name[effective_mem()],
	       o.skip_reg ? "not registered (-b)" : "registered with cuFileBufRegister");
	printf("%u round(s) of %s; each round %s%s\n", o.rounds, phases,
	       o.xfer == X_BATCH ? "in batches of up to -B entries, all submitted at once"
				 : "taken by the -w threads, one cuFileWrite/cuFileRead per entry",
	       o.verify ? ", verify every byte (-V)" : "");
}

void print_banner(void)
{
	print_cufile_library("gdsio");
	int ver = 0;
	cuFileGetVersion(&ver);
	printf(" version %d\n", ver);
	if (have_cuda) {
		char name[128] = "?";
		CUdevice dev;
		if (cu.DeviceGetName && cu.DeviceGet(&dev, o.gpu) == CUDA_SUCCESS)
			cu.DeviceGetName(name, sizeof(name), dev);
		printf("# CUDA driver %s, GPU %d: %s\n", cu.path, o.gpu, name);
	} else {
		printf("# CUDA driver not available (%s)\n", cuda_why);
	}
	if (o.entries)
		entries_banner();
	else
		printf(
		    "# %s %s, %s fd, memory %s, buffer %s, %s, data set %llu bytes%s from offset %llu%s%s\n",
		    o.dir ? "dir" : "file", o.dir ? o.dir : o.file,
		    o.odirect ? "O_DIRECT" : "buffered (no O_DIRECT)", mem_name[effective_mem()],
		    !uses_cufile(o.xfer) ? "not used by cuFile"
		    : o.skip_reg	 ? "not registered (-b)"
					 : "registered with cuFileBufRegister",
		    o.dir ? "one file and handle per thread"
			  : "one fd and cuFile handle shared by all threads",
		    (unsigned long long)o.size, o.dir ? " per thread" : "", (unsigned long long)o.offset,
		    o.verify ? ", verify every byte (-V; timings include verification)" : "",
		    o.duration > 0 ? ", timed (-T)" : "");
	if (o.shared)
		printf("# ONE buffer of %llu bytes shared by all threads (-A)\n", (unsigned long long)o.size);
	if (o.xfer == X_BATCH && o.entries)
		printf("# batches of up to %u entries, completions collected with cuFileBatchIOGetStatus %s "
		       "(-W %s)\n",
		       o.depth,
		       o.wait_style == WAIT_POLL    ? "(min_nr 0, zero timeout)"
		       : o.wait_style == WAIT_BLOCK ? "(min_nr = outstanding, NULL timeout)"
						    : "(min_nr = outstanding, 100 ms timeouts up to -t)",
		       wait_name[o.wait_style]);
	else if (o.xfer == X_BATCH)
		printf("# %u batch handle(s) per thread of %u entries each, completions collected with "
		       "cuFileBatchIOGetStatus %s (-W %s)\n",
		       o.batches, o.depth,
		       o.wait_style == WAIT_POLL    ? "(min_nr 0, zero timeout)"
		       : o.wait_style == WAIT_BLOCK ? "(min_nr = outstanding, NULL timeout)"
						    : "(min_nr = outstanding, 100 ms timeouts up to -t)",
		       wait_name[o.wait_style]);
	if (o.vec)
		printf("# each op is one %s of %u pieces in reverse buffer order (-v)\n",
		       is_write() ? "cuFileWritev" : "cuFileReadv", o.vec);
	if (o.piece && !o.callers)
		printf("# pool (-q): each request of the IO size cut into pieces of %zu bytes, taken by the "
		       "threads from one shared queue into ONE buffer of the request's size; the next "
		       "request starts when all its pieces are done\n",
		       o.piece);
	if (o.callers)
		printf(
		    "# pool (-q): each request of the IO size cut into pieces of %zu bytes, taken by the -w "
		    "threads from one shared queue, first in first out\n",
		    o.piece);
	if (o.callers)
		printf(
		    "# callers (-Q): %d threads, each issuing the requests of its own part of the data set "
		    "into its own buffer, one at a time, into the pool of the -w threads\n",
		    o.callers);
	if (o.fresh)
		printf("# fresh (-Y): the file is first written anew through cuFileWrite (buffered fd), the "
		       "timed reads begin %.1f s after\n",
		       o.fresh_wait);
	fflush(stdout);
}
