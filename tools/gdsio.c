/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio - opencufile's counterpart of NVIDIA's gdsio benchmark.
 *
 * It calls only the cuFile API and the CUDA driver API (loaded with dlopen,
 * OPENCUFILE_LIBCUDA overrides the path), so the same binary measures any
 * libcufile.so.0 the dynamic loader gives it: ours (LD_PRELOAD) or NVIDIA's
 * (LD_LIBRARY_PATH).  The banner says which library is mapped.  Run with -h
 * for the options; docs/benchmarks.md describes how the comparison runs.
 *
 * This file holds the options, their checks and main; gdsio.h lists the
 * other parts.  The design of a run is in gdsio_sweep.c.  Latencies go
 * into a log-linear histogram per worker (3 % buckets), merged for p50/p99;
 * the average is exact.  Verification (-V) is outside each op's latency but
 * inside the wall time; the comparison script therefore runs a verified
 * repetition separately from the timed ones.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdsio.h"
#include "size_arg.h"

struct opts o = {.gpu = 0,
		 .mem = M_DEVICE,
		 .xfer = X_GPUD,
		 .iotype = IO_READ,
		 .odirect = 1,
		 .seed = 1,
		 .depth = 8,
		 .batches = 1,
		 .wait_style = WAIT_TIMED,
		 .batch_timeout = 10.0};

struct cuda_dl cu;
int have_cuda;
char cuda_why[512];
int is_tty;
atomic_int abandon;

static void die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "gdsio: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (-h for help)\n");
	va_end(ap);
	exit(EXIT_USAGE);
}

/* The number of option -flag: 1..max. */
static unsigned parse_count(const char *arg, char flag, long max)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end || v < 1 || v > max)
		die_usage("-%c must be 1..%ld", flag, max);
	return (unsigned)v;
}

/* -i: SIZE, MIN:MAX (powers of two), MIN:MAX:STEP (arithmetic). */
static void parse_io_list(const char *arg)
{
	char tmp[256], *parts[3] = {0};
	int n = 0;
	snprintf(tmp, sizeof(tmp), "%s", arg);
	if (strchr(tmp, ',')) { /* SIZE,SIZE,...: exactly these */
		o.nios = 0;
		for (char *save, *p = strtok_r(tmp, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
			uint64_t v;
			if (parse_size(p, &v) || v == 0 || o.nios >= MAX_LIST)
				die_usage("bad IO size '%s'", p);
			o.ios[o.nios++] = v;
		}
		return;
	}
	for (char *save, *p = strtok_r(tmp, ":", &save); p && n < 3; p = strtok_r(NULL, ":", &save))
		parts[n++] = p;
	uint64_t v[3] = {0};
	for (int i = 0; i < n; i++)
		if (parse_size(parts[i], &v[i]) || v[i] == 0)
			die_usage("bad IO size '%s'", arg);
	o.nios = 0;
	if (n == 1) {
		o.ios[o.nios++] = v[0];
		return;
	}
	if (v[1] < v[0])
		die_usage("IO size range '%s': max below min", arg);
	if (n == 2) {
		for (uint64_t s = v[0]; s <= v[1] && o.nios < MAX_LIST; s *= 2)
			o.ios[o.nios++] = s;
	} else {
		for (uint64_t s = v[0]; s <= v[1] && o.nios < MAX_LIST; s += v[2])
			o.ios[o.nios++] = s;
	}
}

static void parse_thread_list(const char *arg)
{
	char tmp[256];
	snprintf(tmp, sizeof(tmp), "%s", arg);
	o.nthreads = 0;
	for (char *save, *p = strtok_r(tmp, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		char *end;
		long t = strtol(p, &end, 10);
		if (*end || t < 1 || t > 4096 || o.nthreads >= MAX_LIST)
			die_usage("bad thread count '%s'", p);
		o.threads[o.nthreads++] = (int)t;
	}
}

/* ------------------------------------------------------------- driver open */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int measure_driver_open(int n)
{
	double *ms = calloc((size_t)n, sizeof(double));
	char eb[160];
	if (!ms)
		return EXIT_FAIL;
	for (int i = 0; i < n; i++) {
		double t0 = now();
		CUfileError_t e = cuFileDriverOpen();
		double t1 = now();
		if (e.err) {
			printf("cuFileDriverOpen: %s\n", cufile_err(e, eb, sizeof(eb)));
			free(ms);
			return EXIT_FAIL;
		}
		cuFileDriverClose();
		ms[i] = (t1 - t0) * 1e3;
	}
	double first = ms[0];
	qsort(ms, (size_t)n, sizeof(double), cmp_double);
	printf("DriverOpen: runs %d min %.3f ms median %.3f ms max %.3f ms first %.3f ms (CUDA context %s)\n",
	       n, ms[0], ms[n / 2], ms[n - 1], first, have_cuda ? "current" : "not available");
	free(ms);
	return EXIT_OK;
}

/* ------------------------------------------------------------------ usage */

static void usage(FILE *f)
{
	fprintf(f, "gdsio - cuFile I/O benchmark (opencufile); measures whatever libcufile.so.0 it loads\n"
		   "\n"
		   "usage: gdsio -f FILE | -D DIR  [options]\n"
		   "       gdsio -L N              time cuFileDriverOpen (open+close N times)\n"
		   "\n"
		   "  -f FILE   one file shared by all threads (one fd, one cuFile handle), each\n"
		   "            thread a disjoint region of -s/threads bytes\n"
		   "  -D DIR    one file per thread: DIR/gdsio.<thread>.dat, -s bytes each\n"
		   "  -d GPU    GPU index (default 0)\n"
		   "  -m TYPE   memory: 0 cuMemAlloc (default), 1 VMM cuMemCreate+cuMemMap,\n"
		   "            2 pinned cuMemHostAlloc, 3 malloc, 4 mmap (0-2 need a GPU; without\n"
		   "            one, give 3 or 4)\n"
		   "  -w N[,N]  threads (a list runs each; default 1)\n"
		   "  -s SIZE   data set size (K/M/G/T suffixes, binary); default: the file's size\n"
		   "  -o OFF    start offset in the file (default 0)\n"
		   "  -i SIZE   IO size (default 1M); MIN:MAX runs powers of two, MIN:MAX:STEP steps,\n"
		   "            A,B,C exactly those sizes\n"
		   "  -x TYPE   transfer: 0 GPU_DIRECT cuFileRead/Write (default), 1 CPU_ONLY pread/\n"
		   "            pwrite into host memory, 2 CPU_GPU pread into pinned memory then\n"
		   "            cuMemcpyHtoD (no cuFile), 3 cuFileReadAsync/WriteAsync, -B ops per\n"
		   "            stream then cuStreamSynchronize, 4 the same on a stream registered\n"
		   "            with cuFileStreamRegister, 5 cuFileBatchIO with -B entries per batch\n"
		   "  -B N      operations per async group or batch (default 8)\n"
		   "  -H N      -x 5: N batch handles per thread, each with a batch of -B entries\n"
		   "            in flight (default 1): a thread submits them all, then collects\n"
		   "            them in turn and submits each again as soon as it is complete\n"
		   "  -W STYLE  -x 5: how cuFileBatchIOGetStatus collects completions:\n"
		   "            timed  min_nr = entries outstanding, 100 ms timeouts up to -t (default)\n"
		   "            wait   min_nr = entries outstanding, NULL timeout (blocks; no -t)\n"
		   "            poll   min_nr 0, zero timeout, each handle in turn (never blocks)\n"
		   "  -R        -x 5: scatter the entries as a paged KV-cache pool does: entry k\n"
		   "            reads/writes block p(k) of the thread's region of the file (p a\n"
		   "            random permutation of its IO-size blocks) and uses a slot of the\n"
		   "            thread's pool of -H x -B buffers taken at random (a fixed random\n"
		   "            permutation), so that neighbouring entries are neighbours neither\n"
		   "            in the file nor in memory (default: contiguous on both sides)\n"
		   "  -t SECS   give up on a batch after SECS without all completions (default 10)\n"
		   "  -I TYPE   0 read (default), 1 write, 2 random read, 3 random write\n"
		   "  -T SECS   run for SECS seconds (default: one pass over the data set)\n"
		   "  -k SEED   random seed (default 1)\n"
		   "  -U        unaligned random offsets (not 4 KiB multiples)\n"
		   "  -O        open with O_DIRECT (default; NVIDIA's gdsio always does)\n"
		   "  -N        open without O_DIRECT (buffered, page cache)\n"
		   "  -b        do not register buffers with cuFileBufRegister (default: register)\n"
		   "  -V        verify every byte: reads are checked against the file pattern,\n"
		   "            writes write the pattern and are read back and checked\n"
		   "  -A        all threads share ONE buffer of the data set's size (-s), registered\n"
		   "            once (unless -b); an op at file offset F uses buffer byte F - -o\n"
		   "            (the fastsafetensors shape); needs -f and -x 0, 1 or 2\n"
		   "  -q PIECE  pool: each -i request is cut into pieces of PIECE bytes that the\n"
		   "            -w threads take from one shared queue (a thread pool's pread:\n"
		   "            KvikIO), each piece one cuFileRead into its part of ONE buffer of\n"
		   "            the request's size (registered unless -b); the next request, the\n"
		   "            next -i bytes of the file, starts when all its pieces are done;\n"
		   "            needs -f, -x 0, 1 or 2, -I 0, PIECE dividing every -i size\n"
		   "  -Q N      -q fed by N caller threads (a pool under several threads of an\n"
		   "            application: KvikIO): caller c goes through its own part of the\n"
		   "            data set (-s/N, whole requests) in order, one request at a time\n"
		   "            into its own buffer of the request's size (registered unless\n"
		   "            -b): it queues the request's pieces and waits until the -w pool\n"
		   "            threads have done them all; the pool threads take pieces first in\n"
		   "            first out, whoever queued them (-q equal to -i: one piece each)\n"
		   "  -e N      entries (NIXL's GDS test): N entries, each its own new file\n"
		   "            DIR/gdsio.e<k>.dat (-D DIR) and buffer of the -i size (registered\n"
		   "            unless -b), all made before the clock starts; a round moves each\n"
		   "            entry once, whole, at file offset 0: -x 5 in batches of up to -B\n"
		   "            entries, all submitted, then collected (-W), or -x 0 by the -w\n"
		   "            threads, one cuFileWrite/cuFileRead per entry; files removed at\n"
		   "            the end\n"
		   "  -r N      -e: N rounds (default 1); 'Extra:' ends with rounds, the first\n"
		   "            round's time (first_round_usecs) and the others' median\n"
		   "            (later_round_usecs)\n"
		   "  -I 1,0    -e: a phase of writes, then one of reads of the same files and\n"
		   "            buffers; each phase its result ('Extra:' ends with phase: write\n"
		   "            or phase: read)\n"
		   "  -Y SECS   fresh file: write -f anew through cuFileWrite (buffered fd, 16 MiB\n"
		   "            pieces), wait SECS, then run the timed reads (a file this process\n"
		   "            finished writing SECS before)\n"
		   "  -v N      issue each op as cuFileReadv/cuFileWritev of N pieces: one\n"
		   "            contiguous file range, the pieces laid out in the buffer in\n"
		   "            reverse order (never adjacent in memory); needs -x 0\n"
		   "  -n        writes into a new file: the file (-f, or each of -D) is made\n"
		   "            empty (O_TRUNC) before each run, and the writes extend it\n"
		   "  -M        one run whose ops take the -i sizes in turn, each thread going\n"
		   "            through its region in order (a checkpoint's tensors of mixed\n"
		   "            sizes: -i 1M,16M,4M,64M -M)\n"
		   "  -F        each thread fsyncs its file after its last op, inside the timing\n"
		   "            (a write that lasts until its bytes are on the disk)\n"
		   "  -S        sweep: every -i size x every -w thread count (what any list\n"
		   "            does); use with -C/-G, and -T for a fixed time per cell\n"
		   "  -C FILE   write results as CSV\n"
		   "  -G FILE   write an SVG chart (GB/s vs IO size, one line per thread count)\n"
		   "  -Z        only create/extend the test file(s) with the pattern, then exit\n"
		   "  -L N      measure cuFileDriverOpen N times (min/median)\n"
		   "  -P        print opencufile's CPU profile per thread role at the end\n"
		   "            (sets OPENCUFILE_PROFILE=1; NVIDIA's library ignores it)\n"
		   "  -h        this help\n"
		   "\n"
		   "Files missing or shorter than needed are written with the pattern\n"
		   "byte(i) = (uint8_t)(((i * 2654435761u) >> 13) ^ (i >> 20)) before timing.\n"
		   "Writes without -V overwrite with the pattern of each thread's first offsets:\n"
		   "the file then no longer holds the pattern; run writes on a separate file.\n"
		   "Result: NVIDIA's line, then 'Extra:' with GB/s (10^9), p50/p99 latency and\n"
		   "CPU seconds (user+sys, whole process) per GB moved.  Async latency is the\n"
		   "time from enqueueing a group to its stream synchronisation; batch (-x 5)\n"
		   "latency the time from a batch's submit to the collection of each entry, and\n"
		   "'Extra:' ends with the batches and the time from each one's submit to its\n"
		   "last completion: batch_avg_usecs, batch_p50_usecs, batch_p99_usecs.  With\n"
		   "-q ops and latency are per piece, and 'Extra:' ends with the requests, the\n"
		   "piece size and each request's time from its start to its last piece:\n"
		   "requests, piece_bytes, request_avg_usecs, request_p50_usecs, request_p99_usecs\n"
		   "(with -Q, then callers).  With -e 'Extra:' ends with entries, rounds,\n"
		   "first_round_usecs, later_round_usecs (more than one round) and phase.\n"
		   "Exit status: 0 ok, 1 I/O or verification failure, 2 usage, 3 not supported\n"
		   "by the library (async/batch).  OPENCUFILE_LIBCUDA overrides libcuda.so.1.\n");
}

int main(int argc, char **argv)
{
	int opt, batch_opts = 0;
	o.ios[0] = 1 << 20, o.nios = 1;
	o.threads[0] = 1, o.nthreads = 1;
	while ((opt = getopt(argc, argv,
			     "f:D:d:m:w:s:o:i:x:B:H:W:t:I:T:k:UONbVSC:G:ZL:PAv:q:RnMFQ:e:r:Y:h")) != -1) {
		switch (opt) {
		case 'f':
			o.file = optarg;
			break;
		case 'D':
			o.dir = optarg;
			break;
		case 'd':
			o.gpu = atoi(optarg);
			break;
		case 'm':
			o.mem = atoi(optarg);
			if (o.mem < 0 || o.mem > 4)
				die_usage("-m must be 0..4");
			break;
		case 'w':
			parse_thread_list(optarg);
			break;
		case 's':
			if (parse_size(optarg, &o.size) || !o.size)
				die_usage("bad size '%s'", optarg);
			break;
		case 'o':
			if (parse_size(optarg, &o.offset))
				die_usage("bad offset '%s'", optarg);
			break;
		case 'i':
			parse_io_list(optarg);
			break;
		case 'x':
			o.xfer = atoi(optarg);
			if (o.xfer < 0 || o.xfer > 5)
				die_usage("-x must be 0..5");
			break;
		case 'B':
			o.depth = (unsigned)atoi(optarg);
			if (o.depth < 1 || o.depth > 65536)
				die_usage("-B must be 1..65536");
			break;
		case 'H':
			o.batches = parse_count(optarg, 'H', 1024);
			batch_opts = 1;
			break;
		case 'W':
			for (o.wait_style = WAIT_POLL; o.wait_style >= 0; o.wait_style--)
				if (!strcmp(optarg, wait_name[o.wait_style]))
					break;
			if (o.wait_style < 0)
				die_usage("-W must be timed, wait or poll");
			batch_opts = 1;
			break;
		case 't':
			o.batch_timeout = atof(optarg);
			break;
		case 'I': {
			/* TYPE, or with -e the phases in order: 1,0 writes then reads. */
			char tmp[64], *save;
			snprintf(tmp, sizeof(tmp), "%s", optarg);
			o.nphases = 0;
			for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				char *end;
				long v = strtol(t, &end, 10);
				if (*end || v < 0 || v > 3 || o.nphases == 2)
					die_usage("-I must be 0..3 (with -e: two of them, e.g. 1,0)");
				o.phases[o.nphases++] = (int)v;
			}
			if (!o.nphases)
				die_usage("-I must be 0..3");
			o.iotype = o.phases[0];
			break;
		}
		case 'T':
			o.duration = atof(optarg);
			break;
		case 'k':
			o.seed = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'U':
			o.unaligned = 1;
			break;
		case 'O':
			o.odirect = 1;
			break;
		case 'N':
			o.odirect = 0;
			break;
		case 'b':
			o.skip_reg = 1;
			break;
		case 'V':
			o.verify = 1;
			break;
		case 'S':
			o.sweep = 1;
			break;
		case 'C':
			o.csv = optarg;
			break;
		case 'G':
			o.svg = optarg;
			break;
		case 'Z':
			o.prepare_only = 1;
			break;
		case 'L':
			o.driver_open_runs = atoi(optarg);
			if (o.driver_open_runs < 1)
				die_usage("-L needs a count >= 1");
			break;
		case 'A':
			o.shared = 1;
			break;
		case 'P':
			/* Read by the library at cuFileDriverOpen, which comes
			 * later; it prints the profile at cuFileDriverClose. */
			setenv("OPENCUFILE_PROFILE", "1", 1);
			break;
		case 'v':
			o.vec = parse_count(optarg, 'v', 1024);
			break;
		case 'q': {
			uint64_t v;
			if (parse_size(optarg, &v) || !v)
				die_usage("bad piece size '%s' for -q", optarg);
			o.piece = (size_t)v;
			break;
		}
		case 'R':
			o.scatter = 1;
			batch_opts = 1;
			break;
		case 'n':
			o.newfile = 1;
			break;
		case 'M':
			o.mix = 1;
			break;
		case 'F':
			o.fsync_end = 1;
			break;
		case 'Q':
			o.callers = (int)parse_count(optarg, 'Q', 1024);
			break;
		case 'e':
			o.entries = (int)parse_count(optarg, 'e', 65536);
			break;
		case 'r':
			o.rounds = parse_count(optarg, 'r', 1000000);
			break;
		case 'Y': {
			char *end;
			o.fresh_wait = strtod(optarg, &end);
			if (*end || end == optarg || o.fresh_wait < 0 || o.fresh_wait > 3600)
				die_usage("-Y must be 0..3600 seconds");
			o.fresh = 1;
			break;
		}
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	is_tty = isatty(STDOUT_FILENO);

	have_cuda = cuda_dl_load(&cu, cuda_why, sizeof(cuda_why)) == 0;
	if (have_cuda) {
		/* The main thread holds a context too: cuFileDriverOpen and the
		 * banner run here. */
		CUcontext ctx;
		CUresult r = cuda_dl_bind(&cu, o.gpu, &ctx);
		if (r) {
			snprintf(cuda_why, sizeof(cuda_why), "GPU %d: %s (%d)", o.gpu, cuda_dl_errstr(&cu, r),
				 (int)r);
			have_cuda = 0;
		}
	}
	if (o.driver_open_runs)
		return measure_driver_open(o.driver_open_runs);

	if (!o.file == !o.dir)
		die_usage("give exactly one of -f FILE or -D DIR");
	if (o.xfer == X_CPU_GPU && o.mem != M_DEVICE && o.mem != M_VMM)
		die_usage("-x 2 (CPU_GPU) needs device memory (-m 0 or 1)");
	if (o.shared && (o.dir || group_mode()))
		die_usage("-A (one shared buffer) needs -f and a synchronous transfer (-x 0, 1 or 2)");
	if (batch_opts && o.xfer != X_BATCH)
		die_usage("-H, -W and -R are for batches (-x 5)");
	for (int i = 0; i < o.nios; i++)
		if (o.ios[i] > SIZE_MAX / o.depth / o.batches)
			die_usage("IO size %zu x -B %u x -H %u does not fit in memory", o.ios[i], o.depth,
				  o.batches);
	if (o.vec && o.xfer != X_GPUD)
		die_usage("-v (cuFileReadv/Writev) needs -x 0");
	if (o.piece) {
		/* The pool shape reads one file in order, with plain synchronous
		 * calls; the other shapes have their own buffers and loops. */
		if (o.dir)
			die_usage("-q (pool) reads one file through one handle: give -f, not -D");
		if (group_mode())
			die_usage("-q (pool) issues synchronous calls: -x 0, 1 or 2 (not async or batch modes)");
		if (o.iotype != IO_READ)
			die_usage("-q (pool) reads the file in order: it needs -I 0 (writes and random reads "
				  "are not supported)");
		if (o.shared || o.vec || o.mix)
			die_usage("-q (pool) has its own buffer and ops: not with -A, -v or -M");
		for (int i = 0; i < o.nios; i++)
			if (o.ios[i] % o.piece)
				die_usage("-q %zu: the piece must divide every request size (-i), not %zu",
					  o.piece, o.ios[i]);
	}
	if (o.callers && !o.piece)
		die_usage(
		    "-Q (callers) feeds the pool: give -q PIECE as well (-q equal to -i: each request one "
		    "piece)");
	if (o.nphases > 1 && !o.entries)
		die_usage("-I takes two phases (e.g. 1,0) only with -e");
	if (o.rounds && !o.entries)
		die_usage("-r (rounds) is for the entries shape (-e)");
	if (!o.rounds)
		o.rounds = 1;
	if (o.entries) {
		/* Each entry its own file and buffer: one transfer of its size,
		 * by a batch entry or a pool thread, in rounds. */
		if (!o.dir || o.file)
			die_usage(
			    "-e (entries) makes one new file per entry in a directory: give -D DIR, not -f");
		if (o.xfer != X_GPUD && o.xfer != X_BATCH)
			die_usage(
			    "-e (entries) moves each entry with cuFileWrite/cuFileRead (-x 0, a pool of -w "
			    "threads) or in batches (-x 5)");
		for (int i = 0; i < o.nphases; i++)
			if (o.phases[i] != IO_READ && o.phases[i] != IO_WRITE)
				die_usage(
				    "-e (entries) moves each entry whole: -I 0, 1, or both in turn (1,0)");
		if (o.nphases == 2 && o.phases[0] == o.phases[1])
			die_usage("-e: -I %d,%d names the same phase twice", o.phases[0], o.phases[1]);
		if (o.nios > 1 || o.nthreads > 1 || o.sweep)
			die_usage("-e (entries) runs one IO size (-i) and one thread count (-w)");
		if (o.duration > 0 || o.shared || o.piece || o.callers || o.vec || o.mix || o.scatter ||
		    o.newfile || o.fsync_end || o.fresh || o.unaligned || o.batches > 1 || o.prepare_only ||
		    o.csv || o.svg)
			die_usage("-e (entries) runs rounds (-r) of its own files and buffers: not with -T, "
				  "-A, -q, -Q, -v, -M, -R, -n, -F, -Y, -U, -H, -Z, -C or -G");
		if (o.xfer == X_GPUD && o.depth != 8)
			die_usage("-e with -x 0: the -w threads take the entries; -B is for batches (-x 5)");
	}
	if (o.fresh) {
		if (!o.file || o.dir)
			die_usage("-Y (a freshly written file) writes one file: give -f, not -D");
		if (is_write() || o.newfile || o.prepare_only)
			die_usage("-Y writes the file first, then times reads: -I 0 or 2, not -Z");
	}
	if (o.vec && resolve_vector_io() != 0) {
		fprintf(stderr,
			"gdsio: -v: the libcufile in use has no cuFileReadv/cuFileWritev (cuFile 1.19)\n");
		return 2;
	}
	for (int i = 0; o.vec && i < o.nios; i++)
		if (o.ios[i] < o.vec)
			die_usage("-v %u: IO size %zu has fewer bytes than pieces", o.vec, o.ios[i]);
	if (o.unaligned && o.odirect && !uses_cufile(o.xfer))
		fprintf(stderr,
			"gdsio: warning: -U with O_DIRECT and pread/pwrite will fail with EINVAL (use -N)\n");
	if (!o.size && !o.entries) {
		struct stat st;
		if (o.file && stat(o.file, &st) == 0 && (uint64_t)st.st_size > o.offset)
			o.size = (uint64_t)st.st_size - o.offset;
		else
			die_usage("-s SIZE is needed (the file does not exist yet)");
	}
	int maxthreads = 1;
	for (int i = 0; i < o.nthreads; i++)
		if (o.threads[i] > maxthreads)
			maxthreads = o.threads[i];
	if (o.newfile && !is_write())
		die_usage("-n (a new file) is for writes (-I 1 or 3)");
	if (o.mix && (o.sweep || o.nthreads > 1 || group_mode() || is_random() || o.shared))
		die_usage("-M needs one thread count, sequential synchronous ops (-x 0, 1 or 2, -I 0 or 1), no -S or -A");
	if (o.newfile || o.entries || o.fresh) {
		/* run_one and the workers create the file(s) empty; -e makes
		 * its own files; -Y writes the file through the library once
		 * the driver is open. */
	} else if (o.file) {
		if (prepare_file(o.file, o.offset + o.size))
			return EXIT_FAIL;
	} else {
		for (int t = 0; t < maxthreads; t++) {
			char p[4096];
			file_for_thread(p, sizeof(p), t);
			if (prepare_file(p, o.offset + o.size))
				return EXIT_FAIL;
		}
	}
	if (o.prepare_only)
		return EXIT_OK;

	char eb[160];
	int driver_open = 0;
	double t_open = 0;
	if (uses_cufile(o.xfer) || o.fresh) {
		double t0 = now();
		CUfileError_t e = cuFileDriverOpen();
		t_open = now() - t0;
		if (e.err) {
			printf("# cuFileDriverOpen: %s\n", cufile_err(e, eb, sizeof(eb)));
			return EXIT_FAIL;
		}
		driver_open = 1;
	}
	print_banner();
	if (driver_open)
		printf("# cuFileDriverOpen took %.3f ms\n", t_open * 1e3);

	if (o.fresh && write_fresh())
		return EXIT_FAIL;
	int worst = o.entries ? entries_run() : sweep();
	if (worst < 0)
		return EXIT_FAIL;
	if (driver_open)
		cuFileDriverClose();
	if (worst == ST_UNSUPPORTED)
		return EXIT_UNSUPPORTED;
	return worst == ST_OK ? EXIT_OK : EXIT_FAIL;
}
