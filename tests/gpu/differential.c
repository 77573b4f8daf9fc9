/* SPDX-License-Identifier: Apache-2.0 */
/*
 * differential.c - one table of cuFile behaviours, printed so that the run
 * against NVIDIA's libcufile and the run against ours can be diffed.
 *
 * Built once against include/cufile.h, linked with -lcufile -lcuda and run
 * twice (LD_LIBRARY_PATH=NVIDIA's lib dir, then LD_PRELOAD=our .so.0); see
 * scripts/gpu-check.sh.
 *
 * Usage: differential [--dir DIR] [--list] [--param-jobs N] [CASE...]
 *   --dir DIR  scratch directory on a real disk (default ./gpu-scratch/diff)
 *   --list     print the case names in order and exit (no CUDA, no cuFile)
 *   --param-jobs N  param_values: run N tries at once (default 1)
 *   CASE...    run only these cases, in this order (default: all but
 *              param_values, which runs only when named; see its comment)
 *
 * Output: lines "# ..." are comments; ">> NAME" is printed (and flushed)
 * before each case so a crash shows where it happened; every result line is
 * "NAME: RESULT" or "NAME.sub: RESULT" with no addresses and no timings.
 * The last line of a complete run is "# done".
 *
 * No fork() into a process that goes on using CUDA: forking after CUDA
 * initialisation is unsafe.  (param_values forks only to exec this program
 * afresh.)  A case that kills
 * the process is detected by the script, which reruns the remaining cases.
 */
#define _GNU_SOURCE
#include <cufile.h>
#include <cuda.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)
#define FILL 0xEE
/* Not a multiple of 4096, so EOF cases are unaligned. */
#define DATA_SIZE ((off_t)(MiB + 1000))

static char g_dir[PATH_MAX - 64] = "gpu-scratch/diff";
static char g_data[PATH_MAX];
static CUdevice g_dev;
static CUcontext g_ctx;
static int g_open_by_harness_or_case;
static int init_cuda(void);

/* ------------------------------------------------------------ formatting */

static const char *cf_name(long v)
{
	switch (v) {
#define N(x) case x: return #x;
	N(CU_FILE_SUCCESS)
	N(CU_FILE_DRIVER_NOT_INITIALIZED)
	N(CU_FILE_DRIVER_INVALID_PROPS)
	N(CU_FILE_DRIVER_UNSUPPORTED_LIMIT)
	N(CU_FILE_DRIVER_VERSION_MISMATCH)
	N(CU_FILE_DRIVER_VERSION_READ_ERROR)
	N(CU_FILE_DRIVER_CLOSING)
	N(CU_FILE_PLATFORM_NOT_SUPPORTED)
	N(CU_FILE_IO_NOT_SUPPORTED)
	N(CU_FILE_DEVICE_NOT_SUPPORTED)
	N(CU_FILE_NVFS_DRIVER_ERROR)
	N(CU_FILE_CUDA_DRIVER_ERROR)
	N(CU_FILE_CUDA_POINTER_INVALID)
	N(CU_FILE_CUDA_MEMORY_TYPE_INVALID)
	N(CU_FILE_CUDA_POINTER_RANGE_ERROR)
	N(CU_FILE_CUDA_CONTEXT_MISMATCH)
	N(CU_FILE_INVALID_MAPPING_SIZE)
	N(CU_FILE_INVALID_MAPPING_RANGE)
	N(CU_FILE_INVALID_FILE_TYPE)
	N(CU_FILE_INVALID_FILE_OPEN_FLAG)
	N(CU_FILE_DIO_NOT_SET)
	N(CU_FILE_INVALID_VALUE)
	N(CU_FILE_MEMORY_ALREADY_REGISTERED)
	N(CU_FILE_MEMORY_NOT_REGISTERED)
	N(CU_FILE_PERMISSION_DENIED)
	N(CU_FILE_DRIVER_ALREADY_OPEN)
	N(CU_FILE_HANDLE_NOT_REGISTERED)
	N(CU_FILE_HANDLE_ALREADY_REGISTERED)
	N(CU_FILE_DEVICE_NOT_FOUND)
	N(CU_FILE_INTERNAL_ERROR)
	N(CU_FILE_GETNEWFD_FAILED)
	N(CU_FILE_NVFS_SETUP_ERROR)
	N(CU_FILE_IO_DISABLED)
	N(CU_FILE_BATCH_SUBMIT_FAILED)
	N(CU_FILE_GPU_MEMORY_PINNING_FAILED)
	N(CU_FILE_BATCH_FULL)
	N(CU_FILE_ASYNC_NOT_SUPPORTED)
	N(CU_FILE_INTERNAL_BATCH_SETUP_ERROR)
	N(CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR)
	N(CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR)
	N(CU_FILE_INTERNAL_BATCH_CANCEL_ERROR)
	N(CU_FILE_NOMEM_ERROR)
	N(CU_FILE_IO_ERROR)
	N(CU_FILE_INTERNAL_BUF_REGISTER_ERROR)
	N(CU_FILE_HASH_OPR_ERROR)
	N(CU_FILE_INVALID_CONTEXT_ERROR)
	N(CU_FILE_NVFS_INTERNAL_DRIVER_ERROR)
	N(CU_FILE_BATCH_NOCOMPAT_ERROR)
	N(CU_FILE_IO_MAX_ERROR)
#undef N
	}
	return NULL;
}

/* Formatted results live in a small ring so a line can hold several. */
static char *ring(void)
{
	static char bufs[16][256];
	static unsigned i;
	return bufs[i++ % 16];
}

static const char *E(CUfileError_t e)
{
	char *b = ring();
	const char *n = cf_name((long)e.err);
	int k = snprintf(b, 256, "%s(%d)", n ? n : "UNKNOWN", (int)e.err);
	if (e.cu_err != CUDA_SUCCESS && k > 0 && k < 200)
		snprintf(b + k, 256 - (size_t)k, "/cu_err=%d", (int)e.cu_err);
	return b;
}

static const char *errno_name(int e)
{
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	char *b = ring();
	snprintf(b, 256, "E%d", e); /* not an errno value: show the number */
	return b;
}

/* ssize_t result of cuFileRead/cuFileWrite; errno only where it means something. */
static const char *R(ssize_t r, int err)
{
	char *b = ring();
	if (r == -1)
		snprintf(b, 256, "-1/errno=%s", errno_name(err));
	else if (r < 0) {
		const char *n = cf_name((long)-r);
		snprintf(b, 256, "-%s(%zd)", n ? n : "UNKNOWN", r);
	} else
		snprintf(b, 256, "%zd", r);
	return b;
}

static void out(const char *name, const char *fmt, ...)
{
	va_list ap;
	printf("%s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void sub(const char *name, const char *s, const char *fmt, ...)
{
	va_list ap;
	printf("%s.%s: ", name, s);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* ------------------------------------------------------------- helpers */

static unsigned char pat(off_t o)
{
	return (unsigned char)(((uint64_t)o * 131u) ^ ((uint64_t)o >> 9) ^ 0x5a);
}

static int prepare_data_file(void)
{
	unsigned char *buf = malloc((size_t)DATA_SIZE);
	int fd;
	off_t i;

	if (!buf)
		return -1;
	for (i = 0; i < DATA_SIZE; i++)
		buf[i] = pat(i);
	snprintf(g_data, sizeof(g_data), "%s/data.bin", g_dir);
	fd = open(g_data, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0 || pwrite(fd, buf, (size_t)DATA_SIZE, 0) != DATA_SIZE) {
		printf("# cannot write %s: %s\n", g_data, strerror(errno));
		free(buf);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fsync(fd);
	close(fd);
	free(buf);
	return 0;
}

static CUfileError_t reg_fd_type(int fd, int type, CUfileHandle_t *fh)
{
	CUfileDescr_t d;
	memset(&d, 0, sizeof(d));
	d.type = (enum CUfileFileHandleType)type;
	d.handle.fd = fd;
	d.fs_ops = NULL;
	*fh = NULL;
	return cuFileHandleRegister(fh, &d);
}

static CUfileError_t reg_fd(int fd, CUfileHandle_t *fh)
{
	return reg_fd_type(fd, CU_FILE_HANDLE_TYPE_OPAQUE_FD, fh);
}

/* Open path with flags and register it; on failure of open() prints and returns -1. */
static int open_reg(const char *name, const char *path, int flags, CUfileHandle_t *fh,
		    CUfileError_t *e)
{
	int fd = open(path, flags, 0644);
	if (fd < 0) {
		out(name, "SETUP open(%s) failed errno=%s", path, errno_name(errno));
		return -1;
	}
	*e = reg_fd(fd, fh);
	return fd;
}

static CUdeviceptr dalloc(size_t n)
{
	CUdeviceptr p = 0;
	CUresult r = cuMemAlloc(&p, n);
	if (r != CUDA_SUCCESS) {
		printf("# cuMemAlloc(%zu) failed: %d\n", n, (int)r);
		return 0;
	}
	cuMemsetD8(p, FILL, n);
	cuCtxSynchronize();
	return p;
}

static void dfill(CUdeviceptr p, size_t n)
{
	cuMemsetD8(p, FILL, n);
	cuCtxSynchronize();
}

/*
 * Check `len` bytes of memory at p (device or host): [boff, boff+count)
 * must hold the file pattern from foff, every other byte FILL.
 */
static const char *check_mem(const void *hostp, CUdeviceptr devp, size_t len, size_t boff,
			     off_t foff, ssize_t count)
{
	char *b = ring();
	unsigned char *h;
	size_t i, bad_data = 0, bad_guard = 0;

	if (count < 0)
		count = 0;
	if (hostp) {
		h = (unsigned char *)hostp;
	} else {
		h = malloc(len);
		if (!h) {
			snprintf(b, 256, "data=? guard=?");
			return b;
		}
		cuCtxSynchronize();
		if (cuMemcpyDtoH(h, devp, len) != CUDA_SUCCESS) {
			free(h);
			snprintf(b, 256, "data=copyfail guard=copyfail");
			return b;
		}
	}
	for (i = 0; i < len; i++) {
		if (i >= boff && i < boff + (size_t)count) {
			if (h[i] != pat(foff + (off_t)(i - boff)))
				bad_data++;
		} else if (h[i] != FILL) {
			bad_guard++;
		}
	}
	if (!hostp)
		free(h);
	if (bad_data)
		snprintf(b, 256, "data=bad guard=%s", bad_guard ? "bad" : "ok");
	else
		snprintf(b, 256, "data=ok guard=%s", bad_guard ? "bad" : "ok");
	return b;
}

static const char *check_dev(CUdeviceptr p, size_t len, size_t boff, off_t foff, ssize_t count)
{
	return check_mem(NULL, p, len, boff, foff, count);
}

/* Read 64 KiB at file offset 4096 into [p, p+len) and check. */
static void read_check(const char *name, const char *what, CUfileHandle_t fh, void *base,
		       const void *hostp, CUdeviceptr devp, size_t len)
{
	ssize_t r;
	int err;
	errno = 0;
	r = cuFileRead(fh, base, 64 * KiB, 4096, 0);
	err = errno;
	sub(name, what, "ret=%s %s", R(r, err), check_mem(hostp, devp, len, 0, 4096, r));
}

/* ------------------------------------------------------------ the cases */

#define CASE(fn) static void fn(const char *name)

/* --- before the driver is open */

CASE(version_before_open)
{
	int v = -1;
	CUfileError_t e = cuFileGetVersion(&v);
	out(name, "%s version=%d", E(e), v);
}

CASE(version_null)
{
	CUfileError_t e = cuFileGetVersion(NULL);
	out(name, "%s", E(e));
}

CASE(usecount_before_open)
{
	out(name, "%ld", cuFileUseCount());
}

CASE(close_not_open)
{
	CUfileError_t e = cuFileDriverClose();
	out(name, "%s usecount=%ld", E(e), cuFileUseCount());
}

/* Every value of the three parameter enums, through cuFile 1.19, with the
 * ranges NVIDIA's cuFileGetParameterMinMaxValue reported for the size_t ones
 * (libcufile 1.15.1; PROFILE_STATS has none there, 0..3 is the statistics
 * level).  The param_values case derives its values from these, so both
 * libraries are asked exactly the same thing. */
static const struct {
	const char *name;
	size_t min, max;
} sizet_params[] = {
	{"PROFILE_STATS", 0, 3},
	{"EXECUTION_MAX_IO_QUEUE_DEPTH", 1, 256},
	{"EXECUTION_MAX_IO_THREADS", 0, 32},
	{"EXECUTION_MIN_IO_THRESHOLD_SIZE_KB", 4, 4294967295u},
	{"EXECUTION_MAX_REQUEST_PARALLELISM", 0, 8},
	{"PROPERTIES_MAX_DIRECT_IO_SIZE_KB", 64, 16384},
	{"PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB", 0, 268435456},
	{"PROPERTIES_PER_BUFFER_CACHE_SIZE_KB", 64, 16384},
	{"PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB", 64, 268435456},
	{"PROPERTIES_IO_BATCHSIZE", 1, 256},
	{"POLLTHRESHOLD_SIZE_KB", 4, 18014398509481980ull},
	{"PROPERTIES_BATCH_IO_TIMEOUT_MS", 1, 1000},
};
static const char *bool_names[] = {
	"PROPERTIES_USE_POLL_MODE", "PROPERTIES_ALLOW_COMPAT_MODE", "FORCE_COMPAT_MODE",
	"FS_MISC_API_CHECK_AGGRESSIVE", "EXECUTION_PARALLEL_IO", "PROFILE_NVTX",
	"PROPERTIES_ALLOW_SYSTEM_MEMORY", "USE_PCIP2PDMA", "PREFER_IO_URING",
	"FORCE_ODIRECT_MODE", "SKIP_TOPOLOGY_DETECTION", "STREAM_MEMOPS_BYPASS",
	"PROPERTIES_POSIX_IO_MODE", "GDS_FALLBACK_IO", /* 1.16+ */
};
static const char *string_names[] = {"LOGGING_LEVEL", "ENV_LOGFILE_PATH", "LOG_DIR",
				     "RDMA_TRANSPORT" /* 1.16+ */};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
/* The 1.15 enums: the rows of params_closed/params_open. */
#define N_SIZET_115 12
#define N_BOOL_115 12
#define N_STRING_115 3

static void print_params(const char *name)
{
	size_t i;
	char s[64];
	for (i = 0; i < N_SIZET_115; i++) {
		size_t v = 0, mn = 0, mx = 0;
		CUfileError_t e = cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)i, &v);
		CUfileError_t e2 = cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)i,
								 &mn, &mx);
		snprintf(s, sizeof(s), "sizet.%s", sizet_params[i].name);
		sub(name, s, "%s value=%zu minmax=%s %zu..%zu", E(e), v, E(e2), mn, mx);
	}
	for (i = 0; i < N_BOOL_115; i++) {
		bool v = false;
		CUfileError_t e = cuFileGetParameterBool((CUFileBoolConfigParameter_t)i, &v);
		snprintf(s, sizeof(s), "bool.%s", bool_names[i]);
		sub(name, s, "%s value=%d", E(e), (int)v);
	}
	for (i = 0; i < N_STRING_115; i++) {
		char v[512];
		CUfileError_t e;
		v[0] = '\0';
		e = cuFileGetParameterString((CUFileStringConfigParameter_t)i, v, (int)sizeof(v));
		snprintf(s, sizeof(s), "string.%s", string_names[i]);
		/* paths differ between runs (log file path): print only whether set */
		if (i == 0)
			sub(name, s, "%s value=%s", E(e), v);
		else
			sub(name, s, "%s set=%d", E(e), v[0] != '\0');
	}
}

CASE(params_closed)
{
	print_params(name);
	out(name, "usecount=%ld", cuFileUseCount());
}

/* --- opening */

CASE(driver_open)
{
	CUfileError_t e = cuFileDriverOpen();
	if (e.err == CU_FILE_SUCCESS)
		g_open_by_harness_or_case = 1;
	out(name, "%s usecount=%ld", E(e), cuFileUseCount());
}

CASE(driver_open_nested)
{
	long n0 = cuFileUseCount();
	CUfileError_t e1 = cuFileDriverOpen();
	long n1 = cuFileUseCount();
	CUfileError_t e2 = cuFileDriverClose();
	long n2 = cuFileUseCount();
	out(name, "before=%ld open=%s after_open=%ld close=%s after_close=%ld", n0, E(e1), n1,
	    E(e2), n2);
}

CASE(props)
{
	CUfileDrvProps_t p;
	CUfileError_t e;
	memset(&p, 0, sizeof(p));
	e = cuFileDriverGetProperties(&p);
	out(name, "%s", E(e));
	sub(name, "nvfs.major_version", "%u", p.nvfs.major_version);
	sub(name, "nvfs.minor_version", "%u", p.nvfs.minor_version);
	sub(name, "nvfs.poll_thresh_size", "%zu", p.nvfs.poll_thresh_size);
	sub(name, "nvfs.max_direct_io_size", "%zu", p.nvfs.max_direct_io_size);
	sub(name, "nvfs.dstatusflags", "0x%x", p.nvfs.dstatusflags);
	sub(name, "nvfs.dcontrolflags", "0x%x", p.nvfs.dcontrolflags);
	sub(name, "fflags", "0x%x", p.fflags);
	sub(name, "max_device_cache_size", "%u", p.max_device_cache_size);
	sub(name, "per_buffer_cache_size", "%u", p.per_buffer_cache_size);
	sub(name, "max_device_pinned_mem_size", "%u", p.max_device_pinned_mem_size);
	sub(name, "max_batch_io_size", "%u", p.max_batch_io_size);
	sub(name, "max_batch_io_timeout_msecs", "%u", p.max_batch_io_timeout_msecs);
}

CASE(props_null)
{
	out(name, "%s", E(cuFileDriverGetProperties(NULL)));
}

CASE(version_after_open)
{
	int v = -1;
	CUfileError_t e = cuFileGetVersion(&v);
	out(name, "%s version=%d", E(e), v);
}

CASE(params_open)
{
	print_params(name);
}

CASE(set_param_while_open)
{
	CUfileError_t e1 = cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 4);
	CUfileError_t e2 = cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, false);
	out(name, "sizet=%s bool=%s", E(e1), E(e2));
}

CASE(stats_level)
{
	int lvl = -1;
	CUfileError_t e = cuFileGetStatsLevel(&lvl);
	CUfileError_t e2 = cuFileSetStatsLevel(99);
	out(name, "get=%s level=%d set99=%s", E(e), lvl, E(e2));
}

/* --- handle registration */

static void report_reg(const char *name, CUfileError_t e, CUfileHandle_t fh)
{
	out(name, "%s", E(e));
	if (e.err == CU_FILE_SUCCESS && fh)
		cuFileHandleDeregister(fh);
}

CASE(reg_null_fh)
{
	int fd = open(g_data, O_RDONLY);
	CUfileDescr_t d;
	memset(&d, 0, sizeof(d));
	d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	d.handle.fd = fd;
	out(name, "%s", E(cuFileHandleRegister(NULL, &d)));
	close(fd);
}

CASE(reg_null_descr)
{
	CUfileHandle_t fh = NULL;
	CUfileError_t e = cuFileHandleRegister(&fh, NULL);
	report_reg(name, e, fh);
}

static void reg_type_case(const char *name, int type)
{
	CUfileHandle_t fh;
	int fd = open(g_data, O_RDONLY);
	CUfileError_t e = reg_fd_type(fd, type, &fh);
	report_reg(name, e, fh);
	close(fd);
}

CASE(reg_type0) { reg_type_case(name, 0); }
CASE(reg_type_win32) { reg_type_case(name, CU_FILE_HANDLE_TYPE_OPAQUE_WIN32); }
CASE(reg_type99) { reg_type_case(name, 99); }
CASE(reg_userspace_fs_null_ops) { reg_type_case(name, CU_FILE_HANDLE_TYPE_USERSPACE_FS); }

CASE(reg_fd_neg)
{
	CUfileHandle_t fh;
	CUfileError_t e = reg_fd(-1, &fh);
	report_reg(name, e, fh);
}

CASE(reg_fd_closed)
{
	CUfileHandle_t fh;
	int fd = open(g_data, O_RDONLY);
	CUfileError_t e;
	close(fd);
	e = reg_fd(fd, &fh);
	report_reg(name, e, fh);
}

static void reg_path_case(const char *name, const char *path, int flags)
{
	CUfileHandle_t fh;
	CUfileError_t e;
	int fd = open_reg(name, path, flags, &fh, &e);
	if (fd < 0)
		return;
	report_reg(name, e, fh);
	close(fd);
}

CASE(reg_dir) { reg_path_case(name, g_dir, O_RDONLY | O_DIRECTORY); }
CASE(reg_devnull) { reg_path_case(name, "/dev/null", O_RDWR); }
CASE(reg_append) { reg_path_case(name, g_data, O_WRONLY | O_APPEND); }
CASE(reg_nonblock) { reg_path_case(name, g_data, O_RDONLY | O_NONBLOCK); }
CASE(reg_opath) { reg_path_case(name, g_data, O_PATH); }
CASE(reg_rdonly) { reg_path_case(name, g_data, O_RDONLY); }
CASE(reg_wronly) { reg_path_case(name, g_data, O_WRONLY); }
CASE(reg_rdwr) { reg_path_case(name, g_data, O_RDWR); }
CASE(reg_odirect) { reg_path_case(name, g_data, O_RDWR | O_DIRECT); }
CASE(reg_odirect_rdonly) { reg_path_case(name, g_data, O_RDONLY | O_DIRECT); }

CASE(reg_pipe)
{
	int p[2];
	CUfileHandle_t fh;
	CUfileError_t e;
	if (pipe(p) != 0) {
		out(name, "SETUP pipe failed");
		return;
	}
	e = reg_fd(p[0], &fh);
	report_reg(name, e, fh);
	close(p[0]);
	close(p[1]);
}

CASE(reg_socket)
{
	int s[2];
	CUfileHandle_t fh;
	CUfileError_t e;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) {
		out(name, "SETUP socketpair failed");
		return;
	}
	e = reg_fd(s[0], &fh);
	report_reg(name, e, fh);
	close(s[0]);
	close(s[1]);
}

CASE(reg_fopen)
{
	FILE *f = fopen(g_data, "r");
	CUfileHandle_t fh;
	CUfileError_t e;
	if (!f) {
		out(name, "SETUP fopen failed");
		return;
	}
	e = reg_fd(fileno(f), &fh);
	report_reg(name, e, fh);
	fclose(f);
}

CASE(reg_same_fd_twice)
{
	CUfileHandle_t fh1, fh2;
	CUfileError_t e1, e2;
	int fd = open_reg(name, g_data, O_RDONLY, &fh1, &e1);
	if (fd < 0)
		return;
	e2 = reg_fd(fd, &fh2);
	out(name, "first=%s second=%s same_handle=%d", E(e1), E(e2),
	    e2.err == CU_FILE_SUCCESS ? fh1 == fh2 : -1);
	if (e2.err == CU_FILE_SUCCESS && fh2 != fh1)
		cuFileHandleDeregister(fh2);
	if (e1.err == CU_FILE_SUCCESS)
		cuFileHandleDeregister(fh1);
	close(fd);
}

CASE(reg_dup_fd)
{
	CUfileHandle_t fh1, fh2;
	CUfileError_t e1, e2;
	int fd = open_reg(name, g_data, O_RDONLY, &fh1, &e1);
	int fd2;
	if (fd < 0)
		return;
	fd2 = dup(fd);
	e2 = reg_fd(fd2, &fh2);
	out(name, "first=%s dup=%s", E(e1), E(e2));
	if (e2.err == CU_FILE_SUCCESS)
		cuFileHandleDeregister(fh2);
	if (e1.err == CU_FILE_SUCCESS)
		cuFileHandleDeregister(fh1);
	close(fd2);
	close(fd);
}

CASE(dereg_null)
{
	cuFileHandleDeregister(NULL);
	out(name, "ok");
}

CASE(dereg_twice)
{
	CUfileHandle_t fh;
	CUfileError_t e;
	int fd = open_reg(name, g_data, O_RDONLY, &fh, &e);
	if (fd < 0)
		return;
	if (e.err == CU_FILE_SUCCESS) {
		cuFileHandleDeregister(fh);
		cuFileHandleDeregister(fh);
	}
	out(name, "reg=%s ok", E(e));
	close(fd);
}

CASE(reg_after_dereg)
{
	CUfileHandle_t fh, fh2;
	CUfileError_t e, e2;
	int fd = open_reg(name, g_data, O_RDONLY, &fh, &e);
	if (fd < 0)
		return;
	if (e.err == CU_FILE_SUCCESS)
		cuFileHandleDeregister(fh);
	e2 = reg_fd(fd, &fh2);
	out(name, "first=%s again=%s", E(e), E(e2));
	if (e2.err == CU_FILE_SUCCESS)
		cuFileHandleDeregister(fh2);
	close(fd);
}

/* --- buffer registration */

CASE(buf_null)
{
	out(name, "%s", E(cuFileBufRegister(NULL, 4096, 0)));
}

CASE(buf_len0)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e = cuFileBufRegister((void *)p, 0, 0);
	out(name, "%s", E(e));
	if (e.err == CU_FILE_SUCCESS)
		cuFileBufDeregister((void *)p);
	cuMemFree(p);
}

CASE(buf_bad_flags)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e = cuFileBufRegister((void *)p, MiB, 0x100);
	out(name, "%s", E(e));
	if (e.err == CU_FILE_SUCCESS)
		cuFileBufDeregister((void *)p);
	cuMemFree(p);
}

CASE(buf_dev_ok)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e = cuFileBufRegister((void *)p, MiB, 0);
	CUfileError_t d = cuFileBufDeregister((void *)p);
	out(name, "reg=%s dereg=%s", E(e), E(d));
	cuMemFree(p);
}

CASE(buf_unaligned_base)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e = cuFileBufRegister((void *)(p + 3), 64 * KiB, 0);
	CUfileError_t d = cuFileBufDeregister((void *)(p + 3));
	out(name, "reg=%s dereg=%s", E(e), E(d));
	cuMemFree(p);
}

CASE(buf_interior)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e = cuFileBufRegister((void *)(p + 64 * KiB), 128 * KiB, 0);
	CUfileError_t d = cuFileBufDeregister((void *)(p + 64 * KiB));
	out(name, "reg=%s dereg=%s", E(e), E(d));
	cuMemFree(p);
}

CASE(buf_len_past)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e = cuFileBufRegister((void *)p, MiB + 4096, 0);
	out(name, "%s", E(e));
	if (e.err == CU_FILE_SUCCESS)
		cuFileBufDeregister((void *)p);
	cuMemFree(p);
}

CASE(buf_twice)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e1 = cuFileBufRegister((void *)p, MiB, 0);
	CUfileError_t e2 = cuFileBufRegister((void *)p, MiB, 0);
	CUfileError_t d1 = cuFileBufDeregister((void *)p);
	CUfileError_t d2 = cuFileBufDeregister((void *)p);
	out(name, "first=%s second=%s dereg1=%s dereg2=%s", E(e1), E(e2), E(d1), E(d2));
	cuMemFree(p);
}

CASE(buf_overlap)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e1 = cuFileBufRegister((void *)p, 512 * KiB, 0);
	CUfileError_t e2 = cuFileBufRegister((void *)(p + 256 * KiB), 512 * KiB, 0);
	CUfileError_t d2 = cuFileBufDeregister((void *)(p + 256 * KiB));
	CUfileError_t d1 = cuFileBufDeregister((void *)p);
	out(name, "first=%s overlap=%s dereg_overlap=%s dereg_first=%s", E(e1), E(e2), E(d2),
	    E(d1));
	cuMemFree(p);
}

/* Register [ptr, len), read 64 KiB into it, check, deregister. */
static void reg_read_case(const char *name, void *ptr, int is_host, size_t len)
{
	CUfileHandle_t fh;
	CUfileError_t e, d, he;
	int fd;

	if (is_host) {
		memset(ptr, FILL, len);
	} else {
		dfill((CUdeviceptr)ptr, len);
	}
	e = cuFileBufRegister(ptr, len, 0);
	out(name, "reg=%s", E(e));
	fd = open_reg(name, g_data, O_RDONLY, &fh, &he);
	if (fd >= 0 && he.err == CU_FILE_SUCCESS) {
		read_check(name, "read", fh, ptr, is_host ? ptr : NULL, is_host ? 0 : (CUdeviceptr)ptr,
			   len);
		cuFileHandleDeregister(fh);
	} else if (fd >= 0) {
		sub(name, "read", "SETUP handle %s", E(he));
	}
	if (fd >= 0)
		close(fd);
	d = cuFileBufDeregister(ptr);
	sub(name, "dereg", "%s", E(d));
}

CASE(buf_host_malloc)
{
	void *h = malloc(MiB);
	reg_read_case(name, h, 1, 256 * KiB);
	free(h);
}

CASE(buf_host_pinned)
{
	void *h = NULL;
	CUresult r = cuMemHostAlloc(&h, MiB, 0);
	if (r != CUDA_SUCCESS) {
		out(name, "SETUP cuMemHostAlloc failed %d", (int)r);
		return;
	}
	reg_read_case(name, h, 1, 256 * KiB);
	cuMemFreeHost(h);
}

CASE(buf_managed)
{
	CUdeviceptr p = 0;
	CUresult r = cuMemAllocManaged(&p, MiB, CU_MEM_ATTACH_GLOBAL);
	if (r != CUDA_SUCCESS) {
		out(name, "SETUP cuMemAllocManaged failed %d", (int)r);
		return;
	}
	reg_read_case(name, (void *)p, 0, 256 * KiB);
	cuMemFree(p);
}

CASE(buf_vmm)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc ad;
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr p = 0;
	size_t gran = 0, size = 2 * MiB;
	CUresult r;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = g_dev;
	r = cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r == CUDA_SUCCESS && gran > 0)
		size = (size + gran - 1) / gran * gran;
	if (r == CUDA_SUCCESS)
		r = cuMemCreate(&h, size, &prop, 0);
	if (r == CUDA_SUCCESS)
		r = cuMemAddressReserve(&p, size, 0, 0, 0);
	if (r == CUDA_SUCCESS)
		r = cuMemMap(p, size, 0, h, 0);
	if (r == CUDA_SUCCESS) {
		memset(&ad, 0, sizeof(ad));
		ad.location = prop.location;
		ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		r = cuMemSetAccess(p, size, &ad, 1);
	}
	if (r != CUDA_SUCCESS) {
		out(name, "SETUP VMM failed %d", (int)r);
	} else {
		reg_read_case(name, (void *)p, 0, 256 * KiB);
	}
	if (p) {
		cuMemUnmap(p, size);
		cuMemAddressFree(p, size);
	}
	if (h)
		cuMemRelease(h);
}

CASE(buf_pool)
{
	CUstream s = NULL;
	CUdeviceptr p = 0;
	CUresult r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
	if (r == CUDA_SUCCESS)
		r = cuMemAllocAsync(&p, MiB, s);
	if (r == CUDA_SUCCESS)
		r = cuStreamSynchronize(s);
	if (r != CUDA_SUCCESS) {
		out(name, "SETUP cuMemAllocAsync failed %d", (int)r);
	} else {
		reg_read_case(name, (void *)p, 0, 256 * KiB);
		cuMemFreeAsync(p, s);
		cuStreamSynchronize(s);
	}
	if (s)
		cuStreamDestroy(s);
}

/* --- buffer deregistration */

CASE(bufdereg_unknown)
{
	CUdeviceptr p = dalloc(MiB);
	out(name, "%s", E(cuFileBufDeregister((void *)p)));
	cuMemFree(p);
}

CASE(bufdereg_host_unknown)
{
	void *h = calloc(1, 4096);
	out(name, "%s", E(cuFileBufDeregister(h)));
	free(h);
}

CASE(bufdereg_interior)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e = cuFileBufRegister((void *)p, MiB, 0);
	CUfileError_t d1 = cuFileBufDeregister((void *)(p + 4096));
	CUfileError_t d2 = cuFileBufDeregister((void *)p);
	out(name, "reg=%s interior=%s base=%s", E(e), E(d1), E(d2));
	cuMemFree(p);
}

CASE(bufdereg_null)
{
	out(name, "%s", E(cuFileBufDeregister(NULL)));
}

CASE(bufdereg_twice)
{
	CUdeviceptr p = dalloc(MiB);
	CUfileError_t e = cuFileBufRegister((void *)p, MiB, 0);
	CUfileError_t d1 = cuFileBufDeregister((void *)p);
	CUfileError_t d2 = cuFileBufDeregister((void *)p);
	out(name, "reg=%s first=%s second=%s", E(e), E(d1), E(d2));
	cuMemFree(p);
}

/* --- read / write */

/* One handle on the data file and one 1 MiB device buffer, for the rw cases. */
struct rw {
	int fd;
	CUfileHandle_t fh;
	CUdeviceptr p;
	size_t len;
	int ok;
};

static struct rw rw_setup(const char *name, int flags, size_t len)
{
	struct rw s;
	CUfileError_t e;
	memset(&s, 0, sizeof(s));
	s.len = len;
	s.fd = open_reg(name, g_data, flags, &s.fh, &e);
	if (s.fd < 0)
		return s;
	if (e.err != CU_FILE_SUCCESS) {
		out(name, "SETUP handle %s", E(e));
		close(s.fd);
		s.fd = -1;
		return s;
	}
	s.p = dalloc(len);
	s.ok = s.p != 0;
	return s;
}

static void rw_teardown(struct rw *s)
{
	if (s->fd >= 0) {
		cuFileHandleDeregister(s->fh);
		close(s->fd);
	}
	if (s->p)
		cuMemFree(s->p);
}

/* Statistics: levels, start/stop/reset, the counters after two device reads
 * and one failed read, and getters above the level. */
CASE(stats_counters)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (!s.ok) {
		rw_teardown(&s);
		return;
	}
	CUfileError_t set1 = cuFileSetStatsLevel(1);
	CUfileError_t start = cuFileStatsStart();
	CUfileError_t reset = cuFileStatsReset();
	ssize_t r1 = cuFileRead(s.fh, (void *)s.p, 65536, 0, 0);
	ssize_t r2 = cuFileRead(s.fh, (void *)s.p, 4096, 4096, 0);
	ssize_t r3 = cuFileRead(s.fh, (void *)s.p, 4096, -1, 0);
	(void)r3;
	CUfileStatsLevel1_t l1;
	memset(&l1, 0, sizeof(l1));
	CUfileError_t g1 = cuFileGetStatsL1(&l1);
	out(name, "set1=%s start=%s reset=%s reads=%zd,%zd", E(set1), E(start), E(reset), r1, r2);
	sub(name, "l1", "%s read_ok=%llu read_err=%llu read_bytes=%llu", E(g1),
	    (unsigned long long)l1.read_ops.ok, (unsigned long long)l1.read_ops.err,
	    (unsigned long long)l1.read_bytes);
	CUfileStatsLevel2_t l2;
	sub(name, "l2_at_level1", "%s", E(cuFileGetStatsL2(&l2)));
	CUfileStatsLevel3_t *l3 = calloc(1, sizeof(*l3));
	CUfileError_t set3 = cuFileSetStatsLevel(3);
	ssize_t r4 = cuFileRead(s.fh, (void *)s.p, 65536, 0, 0);
	CUfileError_t g3 = l3 ? cuFileGetStatsL3(l3) : (CUfileError_t){CU_FILE_NOMEM_ERROR, CUDA_SUCCESS};
	sub(name, "l3", "set3=%s read=%zd get=%s num_gpus=%u gpu0_read_bytes_nonzero=%d", E(set3), r4, E(g3),
	    l3 ? l3->num_gpus : 0u, l3 ? l3->per_gpu_stats[0].read_bytes > 0 : -1);
	int lvl = -1;
	CUfileError_t gl = cuFileGetStatsLevel(&lvl);
	sub(name, "stop", "%s level=%s/%d", E(cuFileStatsStop()), E(gl), lvl);
	sub(name, "null", "l1=%s", E(cuFileGetStatsL1(NULL)));
	cuFileSetStatsLevel(0);
	free(l3);
	rw_teardown(&s);
}

/* Read and report ret + data check with buffer offset boff from base p+base_off. */
static void rw_read_report(const char *name, struct rw *s, size_t base_off, size_t size,
			   off_t foff, off_t boff)
{
	ssize_t r;
	int err;
	dfill(s->p, s->len);
	errno = 0;
	r = cuFileRead(s->fh, (void *)(s->p + base_off), size, foff, boff);
	err = errno;
	out(name, "ret=%s %s", R(r, err),
	    check_dev(s->p, s->len, base_off + (size_t)boff, foff, r));
}

CASE(rw_null_handle)
{
	CUdeviceptr p = dalloc(MiB);
	ssize_t r;
	int err;
	errno = 0;
	r = cuFileRead(NULL, (void *)p, 4096, 0, 0);
	err = errno;
	out(name, "ret=%s", R(r, err));
	cuMemFree(p);
}

CASE(rw_dereg_handle)
{
	CUfileHandle_t fh;
	CUfileError_t e;
	CUdeviceptr p;
	ssize_t r;
	int err;
	int fd = open_reg(name, g_data, O_RDONLY, &fh, &e);
	if (fd < 0)
		return;
	p = dalloc(MiB);
	if (e.err == CU_FILE_SUCCESS)
		cuFileHandleDeregister(fh);
	errno = 0;
	r = cuFileRead(fh, (void *)p, 4096, 0, 0);
	err = errno;
	out(name, "reg=%s ret=%s", E(e), R(r, err));
	close(fd);
	cuMemFree(p);
}

CASE(rw_null_buf)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	ssize_t r;
	int err;
	if (!s.ok)
		goto done;
	errno = 0;
	r = cuFileRead(s.fh, NULL, 4096, 0, 0);
	err = errno;
	out(name, "ret=%s", R(r, err));
done:
	rw_teardown(&s);
}

CASE(rw_size0)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 0, 0, 0);
	rw_teardown(&s);
}

CASE(rw_basic_unregistered)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, MiB, 0, 0);
	rw_teardown(&s);
}

CASE(rw_basic_registered)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileError_t e;
	if (!s.ok)
		goto done;
	e = cuFileBufRegister((void *)s.p, s.len, 0);
	sub(name, "reg", "%s", E(e));
	rw_read_report(name, &s, 0, MiB, 0, 0);
	if (e.err == CU_FILE_SUCCESS)
		cuFileBufDeregister((void *)s.p);
done:
	rw_teardown(&s);
}

CASE(rw_neg_file_off)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 4096, -4096, 0);
	rw_teardown(&s);
}

CASE(rw_neg_buf_off)
{
	/* Base is 64 KiB inside the allocation, so -4096 still lands in memory. */
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileError_t e;
	if (!s.ok)
		goto done;
	e = cuFileBufRegister((void *)(s.p + 64 * KiB), 512 * KiB, 0);
	sub(name, "reg", "%s", E(e));
	rw_read_report(name, &s, 64 * KiB, 4096, 0, -4096);
	if (e.err == CU_FILE_SUCCESS)
		cuFileBufDeregister((void *)(s.p + 64 * KiB));
done:
	rw_teardown(&s);
}

CASE(rw_neg_buf_off_unregistered)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 64 * KiB, 4096, 0, -4096);
	rw_teardown(&s);
}

CASE(rw_reg_past)
{
	/* Registered 64 KiB; read 64 KiB at buffer offset 32 KiB: past the
	 * registration but inside the 1 MiB allocation. */
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileError_t e;
	if (!s.ok)
		goto done;
	e = cuFileBufRegister((void *)s.p, 64 * KiB, 0);
	sub(name, "reg", "%s", E(e));
	rw_read_report(name, &s, 0, 64 * KiB, 0, 32 * KiB);
	if (e.err == CU_FILE_SUCCESS)
		cuFileBufDeregister((void *)s.p);
done:
	rw_teardown(&s);
}

CASE(rw_read_wronly)
{
	struct rw s = rw_setup(name, O_WRONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 4096, 0, 0);
	rw_teardown(&s);
}

CASE(rw_write_rdonly)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	ssize_t r;
	int err;
	if (!s.ok)
		goto done;
	errno = 0;
	r = cuFileWrite(s.fh, (void *)s.p, 4096, 0, 0);
	err = errno;
	out(name, "ret=%s", R(r, err));
done:
	rw_teardown(&s);
}

CASE(rw_read_at_eof)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 4096, DATA_SIZE, 0);
	rw_teardown(&s);
}

CASE(rw_read_cross_eof)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 4096, DATA_SIZE - 1000, 0);
	rw_teardown(&s);
}

CASE(rw_read_cross_eof_odirect)
{
	struct rw s = rw_setup(name, O_RDONLY | O_DIRECT, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 8192, DATA_SIZE - 1000, 0);
	rw_teardown(&s);
}

CASE(rw_read_past_eof)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 4096, DATA_SIZE + 8192, 0);
	rw_teardown(&s);
}

CASE(rw_odirect_aligned)
{
	struct rw s = rw_setup(name, O_RDONLY | O_DIRECT, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 256 * KiB, 4096, 0);
	rw_teardown(&s);
}

CASE(rw_odirect_unaligned_off)
{
	struct rw s = rw_setup(name, O_RDONLY | O_DIRECT, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 8192, 100, 0);
	rw_teardown(&s);
}

CASE(rw_odirect_unaligned_size)
{
	struct rw s = rw_setup(name, O_RDONLY | O_DIRECT, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 5000, 4096, 0);
	rw_teardown(&s);
}

CASE(rw_unaligned_buf_off)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 8192, 0, 3);
	rw_teardown(&s);
}

CASE(rw_odirect_unaligned_buf_off)
{
	struct rw s = rw_setup(name, O_RDONLY | O_DIRECT, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 8192, 0, 3);
	rw_teardown(&s);
}

CASE(rw_1byte)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		rw_read_report(name, &s, 0, 1, 12345, 0);
	rw_teardown(&s);
}

CASE(rw_reg_interior)
{
	/* Register [p+64K, +256K); read 128K at buffer offset 4K, file offset 8K. */
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileError_t e;
	if (!s.ok)
		goto done;
	e = cuFileBufRegister((void *)(s.p + 64 * KiB), 256 * KiB, 0);
	sub(name, "reg", "%s", E(e));
	rw_read_report(name, &s, 64 * KiB, 128 * KiB, 8192, 4096);
	if (e.err == CU_FILE_SUCCESS)
		cuFileBufDeregister((void *)(s.p + 64 * KiB));
done:
	rw_teardown(&s);
}

CASE(rw_host_pinned_read)
{
	void *h = NULL;
	CUfileHandle_t fh;
	CUfileError_t e;
	int fd;
	if (cuMemHostAlloc(&h, MiB, 0) != CUDA_SUCCESS) {
		out(name, "SETUP cuMemHostAlloc failed");
		return;
	}
	fd = open_reg(name, g_data, O_RDONLY, &fh, &e);
	if (fd >= 0 && e.err == CU_FILE_SUCCESS) {
		memset(h, FILL, MiB);
		read_check(name, "unregistered", fh, h, h, 0, MiB);
		cuFileHandleDeregister(fh);
	} else if (fd >= 0) {
		out(name, "SETUP handle %s", E(e));
	}
	if (fd >= 0)
		close(fd);
	cuMemFreeHost(h);
}

/* Write `size` pattern bytes (pattern of offset foff) at foff, then check the file. */
static void write_case(const char *name, int flags, size_t size, off_t foff)
{
	char path[PATH_MAX];
	CUfileHandle_t fh;
	CUfileError_t e;
	unsigned char *h = malloc(size + 1), *back = malloc(size + 1);
	CUdeviceptr p = dalloc(size + 4096);
	ssize_t r, rb;
	int fd, err, fd2;
	size_t i, bad = 0;
	struct stat st;

	snprintf(path, sizeof(path), "%s/write-%s.bin", g_dir, name);
	unlink(path);
	if (!h || !back || !p) {
		out(name, "SETUP alloc failed");
		goto done;
	}
	for (i = 0; i < size; i++)
		h[i] = pat(foff + (off_t)i);
	cuMemcpyHtoD(p, h, size);
	cuStreamSynchronize(NULL); /* pageable source: wait until it landed */
	fd = open_reg(name, path, flags | O_CREAT | O_TRUNC, &fh, &e);
	if (fd < 0)
		goto done;
	if (e.err != CU_FILE_SUCCESS) {
		out(name, "SETUP handle %s", E(e));
		close(fd);
		goto done;
	}
	errno = 0;
	r = cuFileWrite(fh, (void *)p, size, foff, 0);
	err = errno;
	cuFileHandleDeregister(fh);
	close(fd);
	fd2 = open(path, O_RDONLY);
	rb = fd2 >= 0 ? pread(fd2, back, size, foff) : -1;
	if (fd2 >= 0 && fstat(fd2, &st) != 0)
		st.st_size = -1;
	if (fd2 >= 0)
		close(fd2);
	for (i = 0; rb > 0 && i < (size_t)rb; i++)
		if (back[i] != h[i])
			bad++;
	out(name, "ret=%s file_size=%lld readback=%zd file=%s", R(r, err),
	    fd2 >= 0 ? (long long)st.st_size : -1LL, rb,
	    (r > 0 && rb >= r && bad == 0) ? "ok" : (bad ? "bad" : "n/a"));
done:
	unlink(path);
	free(h);
	free(back);
	if (p)
		cuMemFree(p);
}

CASE(rw_write_basic) { write_case(name, O_RDWR, 100000, 0); }
CASE(rw_write_offset) { write_case(name, O_WRONLY, 5000, 12345); }
CASE(rw_write_odirect_aligned) { write_case(name, O_RDWR | O_DIRECT, 256 * KiB, 4096); }
CASE(rw_write_odirect_unaligned) { write_case(name, O_RDWR | O_DIRECT, 5000, 100); }

CASE(rw_realloc_same_addr)
{
	/* Register, free, reallocate (often the same address), read without
	 * deregistering first. */
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUdeviceptr old, q = 0;
	CUfileError_t e, d1, d2;
	if (!s.ok)
		goto done;
	old = s.p;
	e = cuFileBufRegister((void *)old, MiB, 0);
	cuMemFree(old);
	s.p = 0;
	if (cuMemAlloc(&q, MiB) != CUDA_SUCCESS) {
		out(name, "SETUP realloc failed");
		goto done;
	}
	s.p = q;
	sub(name, "reg", "%s same_addr=%s", E(e), q == old ? "yes" : "no");
	rw_read_report(name, &s, 0, 64 * KiB, 4096, 0);
	d1 = cuFileBufDeregister((void *)q);
	d2 = q == old ? d1 : cuFileBufDeregister((void *)old);
	sub(name, "dereg", "new=%s old=%s", E(d1), E(d2));
done:
	rw_teardown(&s);
}

CASE(rw_unreg_past_alloc)
{
	/* Unregistered 64 KiB allocation, 128 KiB read: runs past the end of
	 * the allocation (may scribble over neighbouring memory if accepted). */
	struct rw s = rw_setup(name, O_RDONLY, 64 * KiB);
	ssize_t r;
	int err;
	if (!s.ok)
		goto done;
	errno = 0;
	r = cuFileRead(s.fh, (void *)s.p, 128 * KiB, 0, 0);
	err = errno;
	out(name, "ret=%s", R(r, err));
done:
	rw_teardown(&s);
}

/* --- lifecycle: must stay last */

CASE(lifecycle)
{
	CUfileHandle_t fh, fh2;
	CUfileError_t e;
	CUdeviceptr p;
	ssize_t r;
	int fd, err;

	sub(name, "usecount_start", "%ld", cuFileUseCount());
	e = cuFileDriverOpen();
	sub(name, "open_nested", "%s usecount=%ld", E(e), cuFileUseCount());

	fd = open(g_data, O_RDONLY);
	e = reg_fd(fd, &fh);
	sub(name, "handle_reg", "%s", E(e));
	p = dalloc(MiB);
	e = cuFileBufRegister((void *)p, MiB, 0);
	sub(name, "buf_reg", "%s", E(e));

	e = cuFileDriverClose();
	sub(name, "close1", "%s usecount=%ld", E(e), cuFileUseCount());
	e = cuFileDriverClose();
	sub(name, "close2", "%s usecount=%ld", E(e), cuFileUseCount());
	g_open_by_harness_or_case = 0;

	dfill(p, MiB);
	errno = 0;
	r = cuFileRead(fh, (void *)p, 64 * KiB, 4096, 0);
	err = errno;
	sub(name, "read_old_handle_after_close", "ret=%s %s usecount=%ld", R(r, err),
	    check_dev(p, MiB, 0, 4096, r), cuFileUseCount());
	e = cuFileDriverClose();
	sub(name, "close3", "%s usecount=%ld", E(e), cuFileUseCount());

	e = cuFileDriverOpen();
	sub(name, "reopen", "%s usecount=%ld", E(e), cuFileUseCount());
	e = cuFileBufRegister((void *)p, MiB, 0);
	sub(name, "buf_reg_again", "%s", E(e));
	e = reg_fd(fd, &fh2);
	sub(name, "handle_reg_again", "%s", E(e));
	if (e.err == CU_FILE_SUCCESS) {
		dfill(p, MiB);
		errno = 0;
		r = cuFileRead(fh2, (void *)p, 64 * KiB, 4096, 0);
		err = errno;
		sub(name, "read_after_reopen", "ret=%s %s", R(r, err),
		    check_dev(p, MiB, 0, 4096, r));
		cuFileHandleDeregister(fh2);
	}
	sub(name, "buf_dereg", "%s", E(cuFileBufDeregister((void *)p)));
	e = cuFileDriverClose();
	sub(name, "final_close", "%s usecount=%ld", E(e), cuFileUseCount());
	close(fd);
	cuMemFree(p);
}

/* ------------------------------------------------- batch and stream I/O */

#define BSZ (64 * KiB)

static const char *status_name(CUfileStatus_t st)
{
	switch (st) {
	case CUFILE_WAITING: return "WAITING";
	case CUFILE_PENDING: return "PENDING";
	case CUFILE_INVALID: return "INVALID";
	case CUFILE_CANCELED: return "CANCELED";
	case CUFILE_COMPLETE: return "COMPLETE";
	case CUFILE_TIMEOUT: return "TIMEOUT";
	case CUFILE_FAILED: return "FAILED";
	}
	char *b = ring();
	snprintf(b, 256, "status%#x", (unsigned)st);
	return b;
}

static CUfileIOParams_t bio(CUfileOpcode_t op, CUfileHandle_t fh, CUdeviceptr base, size_t size, off_t foff,
			    off_t boff, int cookie)
{
	CUfileIOParams_t p;
	memset(&p, 0, sizeof(p));
	p.mode = CUFILE_BATCH;
	p.fh = fh;
	p.opcode = op;
	p.cookie = (void *)(uintptr_t)cookie;
	p.u.batch.devPtr_base = (void *)base;
	p.u.batch.size = size;
	p.u.batch.file_offset = foff;
	p.u.batch.devPtr_offset = boff;
	return p;
}

/* A batch event's ret or an asynchronous *bytes_p: bytes, -errno, or
 * -CU_FILE_* (-1 keeps its own form: it may mean "see errno"). */
static const char *RV(ssize_t r, int err)
{
	if (r < -1 && r > -4096) {
		char *b = ring();
		snprintf(b, 256, "-%s", errno_name((int)-r));
		return b;
	}
	return R(r, err);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Collects events of cookies 1..n for up to `secs`; prints one row per
 * cookie (status, ret as a signed number) and a row with the count seen. */
static void batch_collect_report(const char *name, CUfileBatchHandle_t b, int n, double secs)
{
	CUfileIOEvents_t ev[64];
	CUfileStatus_t st[65];
	ssize_t ret[65];
	int seen[65] = {0}, got = 0, stray = 0, i;
	double t0 = mono_s();
	CUfileError_t last = {CU_FILE_SUCCESS, CUDA_SUCCESS};
	while (got < n && mono_s() - t0 < secs) {
		unsigned nr = 64;
		struct timespec to = {0, 100 * 1000 * 1000};
		last = cuFileBatchIOGetStatus(b, 1, &nr, ev, &to);
		if (last.err != CU_FILE_SUCCESS)
			break;
		for (unsigned k = 0; k < nr && k < 64; k++) {
			int c = (int)(uintptr_t)ev[k].cookie;
			if (c < 1 || c > n || seen[c]) {
				stray++;
				continue;
			}
			seen[c] = 1;
			st[c] = ev[k].status;
			ret[c] = (ssize_t)ev[k].ret;
			got++;
		}
	}
	for (i = 1; i <= n; i++) {
		char what[16];
		snprintf(what, sizeof(what), "entry%d", i);
		if (seen[i])
			sub(name, what, "%s ret=%s", status_name(st[i]), RV(ret[i], 0));
		else
			sub(name, what, "not reported");
	}
	sub(name, "events", "%d of %d stray=%d last_getstatus=%s", got, n, stray, E(last));
}

CASE(batch_setup_limits)
{
	CUfileDrvProps_t props;
	CUfileBatchHandle_t b = NULL;
	memset(&props, 0, sizeof(props));
	cuFileDriverGetProperties(&props);
	unsigned max = props.max_batch_io_size;
	sub(name, "zero", "%s", E(cuFileBatchIOSetUp(&b, 0)));
	CUfileError_t e = cuFileBatchIOSetUp(&b, max);
	sub(name, "max", "%s", E(e));
	if (e.err == CU_FILE_SUCCESS)
		cuFileBatchIODestroy(b);
	sub(name, "max_plus_1", "%s", E(cuFileBatchIOSetUp(&b, max + 1)));
	sub(name, "null_handle_ptr", "%s", E(cuFileBatchIOSetUp(NULL, 4)));
}

CASE(batch_read_basic)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[4];
	int i;
	if (!s.ok)
		goto done;
	CUfileError_t e = cuFileBatchIOSetUp(&b, 4);
	if (e.err != CU_FILE_SUCCESS) {
		out(name, "SETUP batch %s", E(e));
		goto done;
	}
	for (i = 0; i < 4; i++)
		io[i] = bio(CUFILE_READ, s.fh, s.p, BSZ, (off_t)(i * BSZ + 4096), (off_t)(i * BSZ), i + 1);
	sub(name, "submit", "%s", E(cuFileBatchIOSubmit(b, 4, io, 0)));
	batch_collect_report(name, b, 4, 5);
	sub(name, "data", "%s", check_dev(s.p, 4 * BSZ + 4096, 0, 4096, 4 * BSZ));
	cuFileBatchIODestroy(b);
done:
	rw_teardown(&s);
}

/* Entry 2 of 3 has a NULL file handle. */
CASE(batch_entry_null_handle)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[3];
	if (!s.ok)
		goto done;
	if (cuFileBatchIOSetUp(&b, 3).err != CU_FILE_SUCCESS) {
		out(name, "SETUP batch failed");
		goto done;
	}
	io[0] = bio(CUFILE_READ, s.fh, s.p, BSZ, 0, 0, 1);
	io[1] = bio(CUFILE_READ, NULL, s.p, BSZ, 0, BSZ, 2);
	io[2] = bio(CUFILE_READ, s.fh, s.p, BSZ, BSZ, 2 * BSZ, 3);
	CUfileError_t e = cuFileBatchIOSubmit(b, 3, io, 0);
	sub(name, "submit", "%s", E(e));
	if (e.err == CU_FILE_SUCCESS)
		batch_collect_report(name, b, 3, 5);
	cuFileBatchIODestroy(b);
done:
	rw_teardown(&s);
}

/* Entry 2 of 3 uses a handle deregistered before the submission. */
CASE(batch_entry_deregistered_handle)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[3];
	CUfileHandle_t gone;
	CUfileError_t e;
	int fd2 = -1;
	if (!s.ok)
		goto done;
	fd2 = open_reg(name, g_data, O_RDONLY, &gone, &e);
	if (fd2 < 0 || e.err != CU_FILE_SUCCESS || cuFileBatchIOSetUp(&b, 3).err != CU_FILE_SUCCESS) {
		out(name, "SETUP failed");
		goto done;
	}
	cuFileHandleDeregister(gone);
	io[0] = bio(CUFILE_READ, s.fh, s.p, BSZ, 0, 0, 1);
	io[1] = bio(CUFILE_READ, gone, s.p, BSZ, 0, BSZ, 2);
	io[2] = bio(CUFILE_READ, s.fh, s.p, BSZ, BSZ, 2 * BSZ, 3);
	e = cuFileBatchIOSubmit(b, 3, io, 0);
	sub(name, "submit", "%s", E(e));
	if (e.err == CU_FILE_SUCCESS)
		batch_collect_report(name, b, 3, 5);
	cuFileBatchIODestroy(b);
done:
	if (fd2 >= 0)
		close(fd2);
	rw_teardown(&s);
}

/* Malformed submissions: nothing may be queued. */
CASE(batch_submit_bad_args)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[5], bad;
	int i;
	if (!s.ok)
		goto done;
	if (cuFileBatchIOSetUp(&b, 4).err != CU_FILE_SUCCESS) {
		out(name, "SETUP batch failed");
		goto done;
	}
	for (i = 0; i < 5; i++)
		io[i] = bio(CUFILE_READ, s.fh, s.p, 4096, 0, 0, i + 1);
	sub(name, "nr0", "%s", E(cuFileBatchIOSubmit(b, 0, io, 0)));
	sub(name, "nr_above_setup", "%s", E(cuFileBatchIOSubmit(b, 5, io, 0)));
	sub(name, "null_params", "%s", E(cuFileBatchIOSubmit(b, 1, NULL, 0)));
	bad = io[0];
	bad.mode = (CUfileBatchMode_t)0;
	sub(name, "bad_mode", "%s", E(cuFileBatchIOSubmit(b, 1, &bad, 0)));
	bad = io[0];
	bad.opcode = (CUfileOpcode_t)7;
	sub(name, "bad_opcode", "%s", E(cuFileBatchIOSubmit(b, 1, &bad, 0)));
	unsigned nr = 4;
	struct timespec to = {0, 200 * 1000 * 1000};
	CUfileIOEvents_t ev[4];
	CUfileError_t e = cuFileBatchIOGetStatus(b, 0, &nr, ev, &to);
	sub(name, "queued_after", "%s nr=%u", E(e), nr);
	/* 3 outstanding + 2 more than the set-up size of 4 */
	sub(name, "submit3", "%s", E(cuFileBatchIOSubmit(b, 3, io, 0)));
	sub(name, "submit2_full", "%s", E(cuFileBatchIOSubmit(b, 2, io, 0)));
	batch_collect_report(name, b, 3, 5);
	cuFileBatchIODestroy(b);
done:
	rw_teardown(&s);
}

/* GetStatus with min_nr above *nr and above what was submitted; bad
 * arguments; out-of-range timeouts. */
CASE(batch_getstatus_semantics)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[2];
	CUfileIOEvents_t ev[8];
	unsigned nr;
	double t0;
	if (!s.ok)
		goto done;
	if (cuFileBatchIOSetUp(&b, 8).err != CU_FILE_SUCCESS) {
		out(name, "SETUP batch failed");
		goto done;
	}
	io[0] = bio(CUFILE_READ, s.fh, s.p, BSZ, 0, 0, 1);
	io[1] = bio(CUFILE_READ, s.fh, s.p, BSZ, BSZ, BSZ, 2);
	cuFileBatchIOSubmit(b, 2, io, 0);
	/* min_nr 4 > submitted 2, room 8, 2 s: returns both, early? */
	nr = 8;
	struct timespec two = {2, 0};
	t0 = mono_s();
	CUfileError_t e = cuFileBatchIOGetStatus(b, 4, &nr, ev, &two);
	sub(name, "min_above_submitted", "%s nr=%u waited=%s", E(e), nr, mono_s() - t0 > 1.5 ? "timeout" : "early");
	if (nr < 2) {
		unsigned more = 8 - nr;
		cuFileBatchIOGetStatus(b, 2 - nr, &more, ev + nr, NULL);
	}
	/* min_nr 2 > *nr 1 */
	cuFileBatchIOSubmit(b, 2, io, 0);
	nr = 1;
	t0 = mono_s();
	e = cuFileBatchIOGetStatus(b, 2, &nr, ev, &two);
	sub(name, "min_above_nr", "%s nr=%u waited=%s", E(e), nr, mono_s() - t0 > 1.5 ? "timeout" : "early");
	nr = 8;
	cuFileBatchIOGetStatus(b, 1, &nr, ev, &two);
	/* NULL timeout with everything done: returns at once */
	cuFileBatchIOSubmit(b, 2, io, 0);
	nr = 8;
	e = cuFileBatchIOGetStatus(b, 2, &nr, ev, NULL);
	sub(name, "null_timeout", "%s nr=%u", E(e), nr);
	/* timeouts with out-of-range fields, nothing outstanding */
	struct timespec negs = {-1, 0}, bign = {0, 2000000000L}, negn = {0, -5};
	nr = 8;
	sub(name, "neg_sec", "%s nr=%u", E(cuFileBatchIOGetStatus(b, 0, &nr, ev, &negs)), nr);
	nr = 8;
	sub(name, "nsec_2e9", "%s nr=%u", E(cuFileBatchIOGetStatus(b, 0, &nr, ev, &bign)), nr);
	nr = 8;
	sub(name, "neg_nsec", "%s nr=%u", E(cuFileBatchIOGetStatus(b, 0, &nr, ev, &negn)), nr);
	/* argument errors */
	sub(name, "null_nr", "%s", E(cuFileBatchIOGetStatus(b, 0, NULL, ev, &two)));
	nr = 8;
	sub(name, "null_events", "%s", E(cuFileBatchIOGetStatus(b, 0, &nr, NULL, &two)));
	cuFileBatchIODestroy(b);
done:
	rw_teardown(&s);
}

/* Sets up a batch of 16, submits 16 reads (cookies cookie0..cookie0 + 15)
 * and cancels it at once; false when the batch cannot be set up. */
static bool batch16_submit_cancel(const char *name, const struct rw *s, CUfileBatchHandle_t *b, int cookie0)
{
	CUfileIOParams_t io[16];
	if (cuFileBatchIOSetUp(b, 16).err != CU_FILE_SUCCESS) {
		out(name, "SETUP batch failed");
		return false;
	}
	for (int i = 0; i < 16; i++)
		io[i] = bio(CUFILE_READ, s->fh, s->p, BSZ / 2, (off_t)(i * BSZ / 2), (off_t)(i * BSZ / 2),
			    cookie0 + i);
	sub(name, "submit", "%s", E(cuFileBatchIOSubmit(*b, 16, io, 0)));
	sub(name, "cancel", "%s", E(cuFileBatchIOCancel(*b)));
	return true;
}

/* Cancel right after Submit: every entry is reported, as COMPLETE or
 * CANCELED; the batch works again afterwards. */
CASE(batch_cancel)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[1];
	CUfileIOEvents_t ev[16];
	int got = 0, complete = 0, canceled = 0, other = 0;
	if (!s.ok || !batch16_submit_cancel(name, &s, &b, 1))
		goto done;
	double t0 = mono_s();
	while (got < 16 && mono_s() - t0 < 5) {
		unsigned nr = 16;
		struct timespec to = {0, 100 * 1000 * 1000};
		if (cuFileBatchIOGetStatus(b, 1, &nr, ev, &to).err != CU_FILE_SUCCESS)
			break;
		for (unsigned k = 0; k < nr; k++) {
			got++;
			if (ev[k].status == CUFILE_COMPLETE && ev[k].ret == BSZ / 2)
				complete++;
			else if (ev[k].status == CUFILE_CANCELED)
				canceled++;
			else
				other++;
		}
	}
	sub(name, "reported", "%d of 16, other than COMPLETE/CANCELED: %d", got, other);
	sub(name, "cancel_again", "%s", E(cuFileBatchIOCancel(b)));
	io[0] = bio(CUFILE_READ, s.fh, s.p, BSZ, 0, 0, 1);
	sub(name, "resubmit", "%s", E(cuFileBatchIOSubmit(b, 1, io, 0)));
	batch_collect_report(name, b, 1, 5);
	cuFileBatchIODestroy(b);
	(void)complete, (void)canceled;
done:
	rw_teardown(&s);
}

/* NIXL's batch pool: Submit, Cancel, then Submit the full size again
 * without reaping the cancelled round.  Cookies of the cancelled round are
 * 101..116, so any of its events reported afterwards count as stray. */
CASE(batch_cancel_resubmit_unreaped)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[16];
	if (!s.ok || !batch16_submit_cancel(name, &s, &b, 101))
		goto done;
	for (int i = 0; i < 16; i++)
		io[i] = bio(CUFILE_READ, s.fh, s.p, BSZ / 2, (off_t)((15 - i) * BSZ / 2),
			    (off_t)(i * BSZ / 2), i + 1);
	sub(name, "resubmit_full", "%s", E(cuFileBatchIOSubmit(b, 16, io, 0)));
	batch_collect_report(name, b, 16, 5);
	cuFileBatchIODestroy(b);
done:
	rw_teardown(&s);
}

/* Destroy with entries in flight, then calls on the destroyed ID. */
CASE(batch_destroy_in_flight_and_twice)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[8];
	CUfileIOEvents_t ev[8];
	int i;
	if (!s.ok)
		goto done;
	if (cuFileBatchIOSetUp(&b, 8).err != CU_FILE_SUCCESS) {
		out(name, "SETUP batch failed");
		goto done;
	}
	for (i = 0; i < 8; i++)
		io[i] = bio(CUFILE_READ, s.fh, s.p, BSZ, (off_t)(i * BSZ), (off_t)(i * BSZ), i + 1);
	sub(name, "submit", "%s", E(cuFileBatchIOSubmit(b, 8, io, 0)));
	cuFileBatchIODestroy(b);
	sub(name, "destroy", "returned");
	cuFileBatchIODestroy(b);
	sub(name, "destroy_twice", "returned");
	unsigned nr = 8;
	struct timespec to = {0, 0};
	sub(name, "getstatus_after", "%s", E(cuFileBatchIOGetStatus(b, 0, &nr, ev, &to)));
	sub(name, "submit_after", "%s", E(cuFileBatchIOSubmit(b, 1, io, 0)));
	sub(name, "cancel_after", "%s", E(cuFileBatchIOCancel(b)));
done:
	rw_teardown(&s);
}

/* Per-entry results at and past end of file, on a write-only descriptor,
 * past the allocation. */
CASE(batch_entry_results_on_errors)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUfileBatchHandle_t b;
	CUfileIOParams_t io[5];
	CUfileHandle_t wfh;
	CUfileError_t e;
	int wfd = -1;
	if (!s.ok)
		goto done;
	wfd = open_reg(name, g_data, O_WRONLY, &wfh, &e);
	if (wfd < 0 || e.err != CU_FILE_SUCCESS || cuFileBatchIOSetUp(&b, 5).err != CU_FILE_SUCCESS) {
		out(name, "SETUP failed");
		goto done;
	}
	io[0] = bio(CUFILE_READ, s.fh, s.p, BSZ, DATA_SIZE - 1000, 0, 1);   /* across EOF */
	io[1] = bio(CUFILE_READ, s.fh, s.p, BSZ, DATA_SIZE + 4096, BSZ, 2); /* past EOF */
	io[2] = bio(CUFILE_READ, wfh, s.p, BSZ, 0, 2 * BSZ, 3);             /* write-only fd */
	io[3] = bio(CUFILE_READ, s.fh, s.p, BSZ, 0, MiB - BSZ / 2, 4);      /* past the allocation */
	io[4] = bio(CUFILE_WRITE, s.fh, s.p, BSZ, 0, 0, 5);                 /* write on O_RDONLY */
	e = cuFileBatchIOSubmit(b, 5, io, 0);
	sub(name, "submit", "%s", E(e));
	if (e.err == CU_FILE_SUCCESS)
		batch_collect_report(name, b, 5, 5);
	cuFileBatchIODestroy(b);
	cuFileHandleDeregister(wfh);
done:
	if (wfd >= 0)
		close(wfd);
	rw_teardown(&s);
}

/* cuFileReadAsync: one read on `stream`, reporting the call, *bytes_p after
 * synchronising, errno when *bytes_p is -1, and the data. */
static void async_read_report(const char *name, const char *what, CUfileHandle_t fh, CUdeviceptr p, size_t len,
			      size_t size, off_t foff, off_t boff, CUstream stream)
{
	size_t sz = size;
	off_t fo = foff, bo = boff;
	ssize_t bytes = -12345;
	dfill(p, len);
	errno = 0;
	CUfileError_t e = cuFileReadAsync(fh, (void *)p, &sz, &fo, &bo, &bytes, stream);
	int err = errno;
	CUresult cr = stream ? cuStreamSynchronize(stream) : CUDA_SUCCESS;
	sub(name, what, "%s bytes=%s sync=%d %s", E(e), bytes == -12345 ? "unwritten" : RV(bytes, err), (int)cr,
	    check_dev(p, len, (size_t)boff, foff, bytes > 0 ? bytes : 0));
}

CASE(async_null_stream)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	struct rw w = rw_setup(name, O_WRONLY, 4096);
	if (s.ok)
		async_read_report(name, "read", s.fh, s.p, MiB, BSZ, 4096, 100, NULL);
	if (s.ok)
		async_read_report(name, "across_eof", s.fh, s.p, MiB, BSZ, DATA_SIZE - 1000, 0, NULL);
	if (w.ok)
		async_read_report(name, "wronly", w.fh, w.p, 4096, 4096, 0, 0, NULL);
	rw_teardown(&w);
	rw_teardown(&s);
}

CASE(async_unregistered_stream)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	struct rw w = rw_setup(name, O_WRONLY, 4096);
	CUstream st;
	if (cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
		out(name, "SETUP stream failed");
		goto done;
	}
	if (s.ok) {
		async_read_report(name, "read", s.fh, s.p, MiB, BSZ, 4096, 100, st);
		async_read_report(name, "across_eof", s.fh, s.p, MiB, BSZ, DATA_SIZE - 1000, 0, st);
		async_read_report(name, "past_eof", s.fh, s.p, MiB, BSZ, DATA_SIZE + 4096, 0, st);
		async_read_report(name, "past_alloc", s.fh, s.p, MiB, BSZ, 0, MiB - BSZ / 2, st);
	}
	if (w.ok)
		async_read_report(name, "wronly", w.fh, w.p, 4096, 4096, 0, 0, st);
	cuStreamDestroy(st);
done:
	rw_teardown(&w);
	rw_teardown(&s);
}

CASE(async_legacy_stream)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	if (s.ok)
		async_read_report(name, "read", s.fh, s.p, MiB, BSZ, 4096, 100, CU_STREAM_LEGACY);
	rw_teardown(&s);
}

/* Eight 64 KiB reads queued back to back on one stream. */
CASE(async_many_on_one_stream)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUstream st;
	size_t sz[8];
	off_t fo[8], bo[8];
	ssize_t bytes[8];
	int i, full = 0, unwritten = 0;
	if (!s.ok || cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
		out(name, "SETUP failed");
		goto done;
	}
	CUfileError_t first_err = {CU_FILE_SUCCESS, CUDA_SUCCESS};
	for (i = 0; i < 8; i++) {
		sz[i] = BSZ, fo[i] = bo[i] = (off_t)(i * BSZ), bytes[i] = -12345;
		CUfileError_t e = cuFileReadAsync(s.fh, (void *)s.p, &sz[i], &fo[i], &bo[i], &bytes[i], st);
		if (e.err != CU_FILE_SUCCESS && first_err.err == CU_FILE_SUCCESS)
			first_err = e;
	}
	cuStreamSynchronize(st);
	for (i = 0; i < 8; i++) {
		full += bytes[i] == BSZ;
		unwritten += bytes[i] == -12345;
	}
	out(name, "calls=%s full=%d of 8 unwritten=%d %s", E(first_err), full, unwritten,
	    check_dev(s.p, MiB, 0, 0, 8 * BSZ));
	cuStreamDestroy(st);
done:
	rw_teardown(&s);
}

/* Registered with all FIXED flags: values changed after the call. */
CASE(async_fixed_stream)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUstream st;
	if (!s.ok || cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
		out(name, "SETUP failed");
		goto done;
	}
	unsigned all = CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET |
		       CU_FILE_STREAM_FIXED_FILE_SIZE;
	sub(name, "register", "%s", E(cuFileStreamRegister(st, all)));
	size_t sz = BSZ;
	off_t fo = 4096, bo = 100;
	ssize_t bytes = -12345;
	dfill(s.p, MiB);
	CUfileError_t e = cuFileReadAsync(s.fh, (void *)s.p, &sz, &fo, &bo, &bytes, st);
	sz = 4096, fo = 0, bo = 0; /* must not matter */
	cuStreamSynchronize(st);
	sub(name, "read", "%s bytes=%s %s", E(e), RV(bytes, 0), check_dev(s.p, MiB, 100, 4096, bytes));
	sub(name, "deregister", "%s", E(cuFileStreamDeregister(st)));
	cuStreamDestroy(st);
done:
	rw_teardown(&s);
}

CASE(async_stream_register_args)
{
	CUstream st;
	if (cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
		out(name, "SETUP stream failed");
		return;
	}
	sub(name, "flags0", "%s", E(cuFileStreamRegister(st, 0)));
	sub(name, "flags15", "%s", E(cuFileStreamRegister(st, 15)));
	sub(name, "flags_0x100", "%s", E(cuFileStreamRegister(st, 0x100)));
	sub(name, "deregister", "%s", E(cuFileStreamDeregister(st)));
	sub(name, "deregister_twice", "%s", E(cuFileStreamDeregister(st)));
	sub(name, "null_stream", "%s", E(cuFileStreamRegister(NULL, 0)));
	cuStreamDestroy(st);
}

CASE(async_null_args)
{
	struct rw s = rw_setup(name, O_RDONLY, MiB);
	CUstream st;
	size_t sz = BSZ;
	off_t fo = 0, bo = 0;
	ssize_t bytes = -12345;
	if (!s.ok || cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
		out(name, "SETUP failed");
		goto done;
	}
	void *p = (void *)s.p;
	sub(name, "null_size", "%s", E(cuFileReadAsync(s.fh, p, NULL, &fo, &bo, &bytes, st)));
	sub(name, "null_foff", "%s", E(cuFileReadAsync(s.fh, p, &sz, NULL, &bo, &bytes, st)));
	sub(name, "null_boff", "%s", E(cuFileReadAsync(s.fh, p, &sz, &fo, NULL, &bytes, st)));
	sub(name, "null_bytes", "%s", E(cuFileReadAsync(s.fh, p, &sz, &fo, &bo, NULL, st)));
	sub(name, "null_buf", "%s", E(cuFileReadAsync(s.fh, NULL, &sz, &fo, &bo, &bytes, st)));
	sub(name, "null_handle", "%s", E(cuFileReadAsync(NULL, p, &sz, &fo, &bo, &bytes, st)));
	cuStreamSynchronize(st);
	sub(name, "bytes_after", "%s", bytes == -12345 ? "unwritten" : RV(bytes, 0));
	cuStreamDestroy(st);
done:
	rw_teardown(&s);
}

/* ------------------------------------------------------- parameter values
 *
 * param_values: every size_t, bool and string parameter (every enum value,
 * through 1.19, and two past the end), both slab-array setters and the four
 * cuFileDriverSet* property setters, each tried with values below the
 * minimum, above the maximum, 0 and huge (property setters also: the ends
 * of the range, 1, 1001 and one above an H100's BAR1; strings: empty, an
 * unknown word, a path that does not exist, long ones; arrays: the shapes a
 * pool can and cannot have), once with the driver closed and once with it
 * open.
 *
 * Every try runs in a fresh process (this program again, with --param-try
 * N), so no try sees another's staged value and a crash or a hang costs one
 * row.  A closed try: set, read back while closed, open, read back while
 * open, the driver properties, a 1 MiB cuFileRead into GPU memory (verified,
 * unregistered buffer: it goes through the bounce buffers the slab arrays
 * size), close.  An open try: open, set, read back, properties, the read,
 * close.  One tab-separated row per try:
 *
 *   param KIND NAME TRY STATE value=... set=... get=... [open=... get_open=...] props=... io=...
 *
 * The first five fields are the row's key; scripts/param-diff.sh runs this
 * against both libraries and prints the rows that differ.  A try writes its
 * row on a descriptor of its own; what the library prints to stdout goes to
 * stderr instead.  Not in the
 * default run (about 300 driver opens): name it, `differential param_values`.
 */
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

enum pkind { PK_SIZE, PK_BOOL, PK_STRING, PK_ARRAY, PK_PROP };
static const char *const pkind_names[] = {"size_t", "bool", "string", "array", "property"};

#define ARR_MAX 24
struct arr_case {
	const char *name;
	int len;         /* passed to the setter */
	int null_sizes;  /* pass NULL for the sizes */
	size_t sizes[ARR_MAX], counts[ARR_MAX];
};

#define HUGE40 ((size_t)1 << 40)
static const struct arr_case arr_cases[] = {
	{"client", 4, 0, {4096, 65536, 1048576, 16777216}, {10, 5, 3, 2}},
	{"posix_defaults", 3, 0, {4, 1024, 16384}, {128, 64, 64}},
	{"gpu_defaults", 4, 0, {1024, 8192, 16384, 65536}, {128, 8, 4, 2}},
	{"zero_counts", 2, 0, {1024, 8192}, {0, 0}},
	{"zero_size", 2, 0, {0, 1024}, {4, 4}},
	{"below_4k", 2, 0, {1, 2}, {1, 1}},
	{"unaligned", 2, 0, {1000, 8195}, {4, 4}},
	{"descending", 2, 0, {16384, 1024}, {4, 8}},
	{"equal_sizes", 2, 0, {1024, 1024}, {2, 2}},
	{"huge_size", 1, 0, {HUGE40}, {1}},
	{"huge_count", 1, 0, {1024}, {HUGE40}},
	{"size_max", 1, 0, {SIZE_MAX}, {SIZE_MAX}},
	{"len17", 17, 0, {4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68},
	 {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	{"len0", 0, 0, {1024}, {1}},
	{"len_negative", -1, 0, {1024}, {1}},
	{"null_sizes", 1, 1, {1024}, {1}},
};

/* The property setters and the size_t parameter each one shows up in. */
static const struct {
	const char *name;
	int param; /* CUFileSizeTConfigParameter_t */
} prop_setters[] = {
	{"SetMaxDirectIOSize", CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB},
	{"SetMaxCacheSize", CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB},
	{"SetMaxPinnedMemSize", CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB},
	{"SetPollMode", CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB},
};

struct ptry {
	enum pkind kind;
	int param;         /* enum value; arrays: 0 POSIX pool, 1 GPU bounce buffers; properties: index */
	const char *pname;
	char tname[32];
	int open_first;    /* 0: closed try, 1: open try */
	size_t value;      /* size_t, bool */
	const char *str;   /* string */
	const struct arr_case *arr;
};

#define MAX_TRIES 512
static struct ptry g_tries[MAX_TRIES];
static size_t g_ntries;
static char g_long255[256], g_long5000[5001];

static void add_try(struct ptry t, const char *tname)
{
	int s;
	if (g_ntries + 2 > MAX_TRIES)
		return;
	snprintf(t.tname, sizeof(t.tname), "%s", tname);
	for (s = 0; s < 2; s++) {
		t.open_first = s;
		g_tries[g_ntries++] = t;
	}
}

/* below_min (when min > 0), above_max, zero, 2^40, SIZE_MAX. */
static void add_size_values(struct ptry t, size_t min, size_t max)
{
	if (min > 0) {
		t.value = min - 1;
		add_try(t, "below_min");
	}
	t.value = max + 1;
	add_try(t, "above_max");
	t.value = 0;
	add_try(t, "zero");
	t.value = HUGE40;
	add_try(t, "huge_2^40");
	t.value = SIZE_MAX;
	add_try(t, "size_max");
}

static void build_tries(void)
{
	static char oob_names[2][16];
	const int oob[2] = {-1, 1000}; /* -1: one past the last enum value */
	struct ptry t;
	size_t i, j;

	memset(g_long255, 'x', sizeof(g_long255) - 1);
	memset(g_long5000, 'x', sizeof(g_long5000) - 1);
	g_ntries = 0;
	for (i = 0; i < N_OF(sizet_params); i++) {
		memset(&t, 0, sizeof(t));
		t.kind = PK_SIZE;
		t.param = (int)i;
		t.pname = sizet_params[i].name;
		add_size_values(t, sizet_params[i].min, sizet_params[i].max);
		if (i == CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS) {
			t.value = 5000; /* what cuda-python's tests set */
			add_try(t, "5000");
		}
	}
	for (i = 0; i < N_OF(bool_names); i++) {
		memset(&t, 0, sizeof(t));
		t.kind = PK_BOOL;
		t.param = (int)i;
		t.pname = bool_names[i];
		t.value = 0;
		add_try(t, "false");
		t.value = 1;
		add_try(t, "true");
	}
	for (i = 0; i < N_OF(string_names); i++) {
		static const struct {
			const char *tname, *s;
		} sv[] = {{"empty", ""},
			  {"word", "BOGUS_VALUE"},
			  {"lowercase", "info"},
			  {"nonexistent_path", "/nonexistent/opencufile-param-diff/dir"},
			  {"long_255", g_long255},
			  {"long_5000", g_long5000}};
		memset(&t, 0, sizeof(t));
		t.kind = PK_STRING;
		t.param = (int)i;
		t.pname = string_names[i];
		for (j = 0; j < N_OF(sv); j++) {
			t.str = sv[j].s;
			add_try(t, sv[j].tname);
		}
	}
	/* Enum values that do not exist: one past the last, and 1000. */
	for (j = 0; j < 2; j++) {
		snprintf(oob_names[j], sizeof(oob_names[j]), "ENUM_%s", j ? "1000" : "PAST_END");
		memset(&t, 0, sizeof(t));
		t.pname = oob_names[j];
		t.kind = PK_SIZE;
		t.param = oob[j] < 0 ? (int)N_OF(sizet_params) : oob[j];
		t.value = 1;
		add_try(t, "one");
		t.kind = PK_BOOL;
		t.param = oob[j] < 0 ? (int)N_OF(bool_names) : oob[j];
		add_try(t, "true");
		t.kind = PK_STRING;
		t.param = oob[j] < 0 ? (int)N_OF(string_names) : oob[j];
		t.str = "ERROR";
		add_try(t, "word");
	}
	for (i = 0; i < 2; i++) {
		for (j = 0; j < N_OF(arr_cases); j++) {
			memset(&t, 0, sizeof(t));
			t.kind = PK_ARRAY;
			t.param = (int)i;
			t.pname = i ? "GPU_BOUNCE_BUFFER_SLAB" : "POSIX_POOL_SLAB";
			t.arr = &arr_cases[j];
			add_try(t, arr_cases[j].name);
		}
	}
	for (i = 0; i < N_OF(prop_setters); i++) {
		size_t min = sizet_params[prop_setters[i].param].min, max = sizet_params[prop_setters[i].param].max;
		memset(&t, 0, sizeof(t));
		t.kind = PK_PROP;
		t.param = (int)i;
		t.pname = prop_setters[i].name;
		add_size_values(t, min, max);
		/* Where the measured refusals leave the rule open: the ends of
		 * the range, 1, a size that is not a multiple of 4 KiB, and one
		 * above an H100's BAR1 (128 GiB: NVIDIA's cache and pinned-memory
		 * setters compare with the smallest BAR1) but inside the range. */
		t.value = min;
		add_try(t, "min");
		t.value = max;
		add_try(t, "max");
		t.value = 1;
		add_try(t, "one");
		t.value = 1001;
		add_try(t, "unaligned_1001");
		t.value = 134217729;
		add_try(t, "above_h100_bar");
	}
}

/* Where a try writes its row: the pipe to the parent, on a descriptor of
 * its own; the try's stdout goes to stderr, so that what the library under
 * test prints there (NVIDIA's logs errors to stdout) cannot land inside a
 * row. */
static FILE *g_row;

/* Fields of a row go straight to the parent, each flushed, so that what a
 * crashing try printed before it crashed reaches it. */
static void field(const char *fmt, ...)
{
	va_list ap;
	fputc('\t', g_row);
	va_start(ap, fmt);
	vfprintf(g_row, fmt, ap);
	va_end(ap);
	fflush(g_row);
}

static int put_size(char *b, size_t cap, size_t v)
{
	return v == SIZE_MAX ? snprintf(b, cap, "SIZE_MAX") : snprintf(b, cap, "%zu", v);
}

static const char *fmt_size(size_t v)
{
	char *b = ring();
	put_size(b, 256, v);
	return b;
}

/* A string for a row: up to 40 bytes, control bytes and tabs escaped, and
 * its length when cut. */
static const char *fmt_str(const char *s)
{
	char *b = ring();
	size_t n = strlen(s), i, o = 0;
	b[o++] = '"';
	for (i = 0; i < n && i < 40 && o < 200; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f)
			o += (size_t)snprintf(b + o, 256 - o, "\\x%02x", c);
		else
			b[o++] = (char)c;
	}
	b[o++] = '"';
	b[o] = '\0';
	if (n > 40)
		snprintf(b + o, 256 - o, "...(len=%zu)", n);
	return b;
}

/* "[s0,s1,...]/[c0,c1,...]" (fmt_size's ring is not used: 2n numbers would
 * go round it). */
static const char *fmt_arrays(const size_t *sizes, const size_t *counts, int n)
{
	char *b = ring();
	const size_t *a[2] = {sizes, counts};
	int i, k, o = 0;
	for (k = 0; k < 2; k++) {
		o += snprintf(b + o, 256 - (size_t)o, "%s[", k ? "/" : "");
		for (i = 0; i < n && o < 220; i++) {
			if (i)
				b[o++] = ',';
			o += put_size(b + o, 256 - (size_t)o, a[k][i]);
		}
		o += snprintf(b + o, 256 - (size_t)o, "%s", i < n ? "...]" : "]");
	}
	return b;
}

typedef CUfileError_t (*slab_set_fn)(const size_t *, const size_t *, int);
typedef CUfileError_t (*slab_get_fn)(size_t *, size_t *, int);

/* The slab-array functions by name: the GPU bounce-buffer pair is 1.17 and
 * NVIDIA's 1.15 library lacks it. */
static void slab_fns(int gpu, slab_set_fn *set, slab_get_fn *get)
{
	*set = (slab_set_fn)dlsym(RTLD_DEFAULT, gpu ? "cuFileSetParameterGpuBounceBufferSlabArray"
						    : "cuFileSetParameterPosixPoolSlabArray");
	*get = (slab_get_fn)dlsym(RTLD_DEFAULT, gpu ? "cuFileGetParameterGpuBounceBufferSlabArray"
						    : "cuFileGetParameterPosixPoolSlabArray");
}

static const char *try_set(const struct ptry *t)
{
	CUfileError_t e;
	switch (t->kind) {
	case PK_SIZE:
		e = cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)t->param, t->value);
		break;
	case PK_BOOL:
		e = cuFileSetParameterBool((CUFileBoolConfigParameter_t)t->param, t->value != 0);
		break;
	case PK_STRING:
		e = cuFileSetParameterString((CUFileStringConfigParameter_t)t->param, t->str);
		break;
	case PK_ARRAY: {
		slab_set_fn set;
		slab_get_fn get;
		slab_fns(t->param, &set, &get);
		if (!set)
			return "absent";
		e = set(t->arr->null_sizes ? NULL : t->arr->sizes, t->arr->counts, t->arr->len);
		break;
	}
	case PK_PROP:
		switch (t->param) {
		case 0: e = cuFileDriverSetMaxDirectIOSize(t->value); break;
		case 1: e = cuFileDriverSetMaxCacheSize(t->value); break;
		case 2: e = cuFileDriverSetMaxPinnedMemSize(t->value); break;
		default: e = cuFileDriverSetPollMode(true, t->value); break;
		}
		break;
	default:
		return "?";
	}
	return E(e);
}

static const char *try_get(const struct ptry *t)
{
	char *b = ring();
	CUfileError_t e;
	switch (t->kind) {
	case PK_SIZE:
	case PK_PROP: {
		size_t v = 0;
		int p = t->kind == PK_PROP ? prop_setters[t->param].param : t->param;
		e = cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)p, &v);
		snprintf(b, 256, "%s:%s", E(e), fmt_size(v));
		break;
	}
	case PK_BOOL: {
		bool v = false;
		e = cuFileGetParameterBool((CUFileBoolConfigParameter_t)t->param, &v);
		snprintf(b, 256, "%s:%d", E(e), (int)v);
		break;
	}
	case PK_STRING: {
		static char v[8192];
		memset(v, 0, sizeof(v));
		e = cuFileGetParameterString((CUFileStringConfigParameter_t)t->param, v, (int)sizeof(v));
		v[sizeof(v) - 1] = '\0';
		snprintf(b, 256, "%s:%s%s", E(e), fmt_str(v),
			 t->str && !strcmp(v, t->str) ? "=set" : "");
		break;
	}
	case PK_ARRAY: {
		size_t sizes[ARR_MAX + 8], counts[ARR_MAX + 8];
		int n = t->arr->len > 0 ? t->arr->len : 4, i;
		slab_set_fn set;
		slab_get_fn get;
		slab_fns(t->param, &set, &get);
		if (!get)
			return "absent";
		for (i = 0; i < n; i++)
			sizes[i] = counts[i] = 0xdead;
		e = get(sizes, counts, n);
		snprintf(b, 256, "%s:%s", E(e), e.err == CU_FILE_SUCCESS ? fmt_arrays(sizes, counts, n) : "-");
		break;
	}
	default:
		return "?";
	}
	return b;
}

static const char *try_props(void)
{
	char *b = ring();
	CUfileDrvProps_t p;
	CUfileError_t e;
	memset(&p, 0, sizeof(p));
	e = cuFileDriverGetProperties(&p);
	snprintf(b, 256, "%s:poll=%zu,dio=%zu,cache=%u,pbc=%u,pin=%u,batch=%u,timeout=%u,ctl=0x%x", E(e),
		 p.nvfs.poll_thresh_size, p.nvfs.max_direct_io_size, p.max_device_cache_size,
		 p.per_buffer_cache_size, p.max_device_pinned_mem_size, p.max_batch_io_size,
		 p.max_batch_io_timeout_msecs, p.nvfs.dcontrolflags);
	return b;
}

/* A 1 MiB read of the data file into unregistered GPU memory (so through
 * the library's bounce buffers), 64 KiB of guard after it. */
static const char *try_io(void)
{
	char *b = ring();
	CUfileHandle_t fh;
	CUfileError_t e;
	CUdeviceptr p;
	ssize_t r;
	int fd, err;

	if (init_cuda() != 0)
		return "cuda_init_failed";
	p = dalloc(MiB + 64 * KiB);
	if (!p)
		return "cuMemAlloc_failed";
	fd = open(g_data, O_RDONLY);
	if (fd < 0) {
		cuMemFree(p);
		return "open_failed";
	}
	e = reg_fd(fd, &fh);
	if (e.err != CU_FILE_SUCCESS) {
		snprintf(b, 256, "reg=%s", E(e));
	} else {
		errno = 0;
		r = cuFileRead(fh, (void *)p, MiB, 0, 0);
		err = errno;
		snprintf(b, 256, "%s %s", R(r, err), check_dev(p, MiB + 64 * KiB, 0, 0, r));
		cuFileHandleDeregister(fh);
	}
	close(fd);
	cuMemFree(p);
	return b;
}

static int param_try(size_t idx)
{
	const struct ptry *t;
	CUfileError_t e;
	int rowfd;

	build_tries();
	if (idx >= g_ntries)
		return 2;
	t = &g_tries[idx];
	snprintf(g_data, sizeof(g_data), "%s/data.bin", g_dir);
	fflush(stdout);
	rowfd = dup(STDOUT_FILENO);
	g_row = rowfd >= 0 ? fdopen(rowfd, "w") : NULL;
	if (g_row && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		fclose(g_row);
		g_row = NULL;
	}
	if (!g_row)
		g_row = stdout;
	fprintf(g_row, "param\t%s\t%s\t%s\t%s", pkind_names[t->kind], t->pname, t->tname,
		t->open_first ? "open" : "closed");
	switch (t->kind) {
	case PK_STRING: field("value=%s", fmt_str(t->str)); break;
	case PK_ARRAY: field("value=%s len=%d%s", fmt_arrays(t->arr->sizes, t->arr->counts,
							     t->arr->len > 0 ? t->arr->len : 1),
			     t->arr->len, t->arr->null_sizes ? " sizes=NULL" : ""); break;
	default: field("value=%s", fmt_size(t->value)); break;
	}
	if (t->open_first) {
		e = cuFileDriverOpen();
		field("open=%s", E(e));
		if (e.err != CU_FILE_SUCCESS) {
			fputc('\n', g_row);
			return 0;
		}
		field("set=%s", try_set(t));
		field("get=%s", try_get(t));
	} else {
		field("set=%s", try_set(t));
		field("get=%s", try_get(t));
		e = cuFileDriverOpen();
		field("open=%s", E(e));
		if (e.err != CU_FILE_SUCCESS) {
			fputc('\n', g_row);
			return 0;
		}
		field("get_open=%s", try_get(t));
	}
	field("props=%s", try_props());
	field("io=%s", try_io());
	field("close=%s", E(cuFileDriverClose()));
	fputc('\n', g_row);
	fflush(g_row);
	return 0;
}

/* One running try: its process and what it printed so far. */
struct ptrun {
	pid_t pid;
	int fd;
	size_t idx;
	char *buf;
	size_t len, cap;
	double start;
	int done, status, timed_out;
};

#define TRY_TIMEOUT_S 60.0

static int ptrun_start(struct ptrun *r, size_t idx)
{
	int pfd[2];
	char idxs[32];
	memset(r, 0, sizeof(*r));
	r->idx = idx;
	r->fd = -1;
	if (pipe(pfd) != 0)
		return -1;
	snprintf(idxs, sizeof(idxs), "%zu", idx);
	fflush(stdout);
	r->pid = fork();
	if (r->pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (r->pid == 0) {
		char *args[] = {"differential", "--dir", g_dir, "--param-try", idxs, NULL};
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(pfd[1]);
	r->fd = pfd[0];
	r->start = mono_s();
	return 0;
}

/* Reads what is there; returns 1 once the try's process has ended. */
static int ptrun_poll(struct ptrun *r)
{
	char tmp[4096];
	ssize_t n;
	if (r->done)
		return 1;
	n = read(r->fd, tmp, sizeof(tmp));
	if (n > 0) {
		if (r->len + (size_t)n + 1 > r->cap) {
			size_t cap = (r->len + (size_t)n + 1) * 2;
			char *nb = realloc(r->buf, cap);
			if (!nb)
				return 0;
			r->buf = nb;
			r->cap = cap;
		}
		memcpy(r->buf + r->len, tmp, (size_t)n);
		r->len += (size_t)n;
		r->buf[r->len] = '\0';
		return 0;
	}
	if (n < 0 && errno == EINTR)
		return 0;
	/* EOF (or a read error): the process is gone or going. */
	close(r->fd);
	r->fd = -1;
	waitpid(r->pid, &r->status, 0);
	r->done = 1;
	return 1;
}

static void ptrun_print(struct ptrun *r)
{
	const struct ptry *t = &g_tries[r->idx];
	size_t n = r->len;
	while (n && r->buf[n - 1] == '\n')
		n--;
	if (n)
		printf("%.*s", (int)n, r->buf);
	else
		printf("param\t%s\t%s\t%s\t%s", pkind_names[t->kind], t->pname, t->tname,
		       t->open_first ? "open" : "closed");
	if (r->timed_out)
		printf("\tresult=TIMEOUT(%.0fs)", TRY_TIMEOUT_S);
	else if (WIFSIGNALED(r->status))
		printf("\tresult=CRASH(signal %d)", WTERMSIG(r->status));
	else if (WIFEXITED(r->status) && WEXITSTATUS(r->status) != 0)
		printf("\tresult=EXIT(%d)", WEXITSTATUS(r->status));
	putchar('\n');
	fflush(stdout);
	free(r->buf);
}

static int g_param_jobs = 1;

CASE(param_values)
{
	struct ptrun *run;
	struct pollfd *pf;
	size_t next = 0, printed = 0, i;
	int jobs = g_param_jobs < 1 ? 1 : g_param_jobs > 64 ? 64 : g_param_jobs;

	build_tries();
	printf("# %s: %zu tries, %d at a time\n", name, g_ntries, jobs);
	run = calloc(g_ntries, sizeof(*run));
	pf = calloc((size_t)jobs, sizeof(*pf));
	if (!run || !pf) {
		out(name, "SETUP out of memory");
		free(run);
		free(pf);
		return;
	}
	while (printed < g_ntries) {
		size_t np = 0, running = 0, map[64];
		for (i = printed; i < next; i++)
			running += !run[i].done;
		while (next < g_ntries && running < (size_t)jobs) {
			if (ptrun_start(&run[next], next) != 0) {
				run[next].done = 1;
				run[next].status = 127 << 8;
			} else {
				running++;
			}
			next++;
		}
		for (i = printed; i < next && np < (size_t)jobs && np < 64; i++) {
			if (run[i].done)
				continue;
			pf[np].fd = run[i].fd;
			pf[np].events = POLLIN;
			map[np++] = i;
		}
		if (np)
			poll(pf, (nfds_t)np, 1000);
		for (i = 0; i < np; i++) {
			struct ptrun *r = &run[map[i]];
			if (pf[i].revents)
				ptrun_poll(r);
			if (!r->done && mono_s() - r->start > TRY_TIMEOUT_S) {
				kill(r->pid, SIGKILL);
				r->timed_out = 1;
			}
		}
		while (printed < next && run[printed].done)
			ptrun_print(&run[printed++]);
	}
	free(run);
	free(pf);
	out(name, "%zu tries", g_ntries);
}

/* ------------------------------------------------------------- the table */

/* EXPLICIT: run only when named (neither listed nor in the default run). */
enum { PRE_OPEN = 0, NEEDS_OPEN = 1, OPENS = 2, EXPLICIT = 3 };

static const struct tcase {
	const char *name;
	void (*fn)(const char *);
	int mode;
} cases[] = {
#define C(fn, mode) {#fn, fn, mode},
	C(version_before_open, PRE_OPEN)
	C(version_null, PRE_OPEN)
	C(usecount_before_open, PRE_OPEN)
	C(close_not_open, PRE_OPEN)
	C(params_closed, PRE_OPEN)
	C(driver_open, OPENS)
	C(driver_open_nested, NEEDS_OPEN)
	C(props, NEEDS_OPEN)
	C(props_null, NEEDS_OPEN)
	C(version_after_open, NEEDS_OPEN)
	C(params_open, NEEDS_OPEN)
	C(set_param_while_open, NEEDS_OPEN)
	C(stats_level, NEEDS_OPEN)
	C(stats_counters, NEEDS_OPEN)
	C(reg_null_fh, NEEDS_OPEN)
	C(reg_null_descr, NEEDS_OPEN)
	C(reg_type0, NEEDS_OPEN)
	C(reg_type_win32, NEEDS_OPEN)
	C(reg_type99, NEEDS_OPEN)
	C(reg_fd_neg, NEEDS_OPEN)
	C(reg_fd_closed, NEEDS_OPEN)
	C(reg_dir, NEEDS_OPEN)
	C(reg_pipe, NEEDS_OPEN)
	C(reg_socket, NEEDS_OPEN)
	C(reg_devnull, NEEDS_OPEN)
	C(reg_append, NEEDS_OPEN)
	C(reg_nonblock, NEEDS_OPEN)
	C(reg_opath, NEEDS_OPEN)
	C(reg_rdonly, NEEDS_OPEN)
	C(reg_wronly, NEEDS_OPEN)
	C(reg_rdwr, NEEDS_OPEN)
	C(reg_odirect, NEEDS_OPEN)
	C(reg_odirect_rdonly, NEEDS_OPEN)
	C(reg_fopen, NEEDS_OPEN)
	C(reg_same_fd_twice, NEEDS_OPEN)
	C(reg_dup_fd, NEEDS_OPEN)
	C(reg_after_dereg, NEEDS_OPEN)
	C(dereg_null, NEEDS_OPEN)
	C(dereg_twice, NEEDS_OPEN)
	C(reg_userspace_fs_null_ops, NEEDS_OPEN)
	C(buf_null, NEEDS_OPEN)
	C(buf_len0, NEEDS_OPEN)
	C(buf_bad_flags, NEEDS_OPEN)
	C(buf_dev_ok, NEEDS_OPEN)
	C(buf_unaligned_base, NEEDS_OPEN)
	C(buf_interior, NEEDS_OPEN)
	C(buf_len_past, NEEDS_OPEN)
	C(buf_twice, NEEDS_OPEN)
	C(buf_overlap, NEEDS_OPEN)
	C(buf_host_malloc, NEEDS_OPEN)
	C(buf_host_pinned, NEEDS_OPEN)
	C(buf_managed, NEEDS_OPEN)
	C(buf_vmm, NEEDS_OPEN)
	C(buf_pool, NEEDS_OPEN)
	C(bufdereg_unknown, NEEDS_OPEN)
	C(bufdereg_host_unknown, NEEDS_OPEN)
	C(bufdereg_interior, NEEDS_OPEN)
	C(bufdereg_null, NEEDS_OPEN)
	C(bufdereg_twice, NEEDS_OPEN)
	C(rw_null_handle, NEEDS_OPEN)
	C(rw_dereg_handle, NEEDS_OPEN)
	C(rw_null_buf, NEEDS_OPEN)
	C(rw_size0, NEEDS_OPEN)
	C(rw_basic_unregistered, NEEDS_OPEN)
	C(rw_basic_registered, NEEDS_OPEN)
	C(rw_neg_file_off, NEEDS_OPEN)
	C(rw_neg_buf_off, NEEDS_OPEN)
	C(rw_neg_buf_off_unregistered, NEEDS_OPEN)
	C(rw_reg_past, NEEDS_OPEN)
	C(rw_read_wronly, NEEDS_OPEN)
	C(rw_write_rdonly, NEEDS_OPEN)
	C(rw_read_at_eof, NEEDS_OPEN)
	C(rw_read_cross_eof, NEEDS_OPEN)
	C(rw_read_cross_eof_odirect, NEEDS_OPEN)
	C(rw_read_past_eof, NEEDS_OPEN)
	C(rw_odirect_aligned, NEEDS_OPEN)
	C(rw_odirect_unaligned_off, NEEDS_OPEN)
	C(rw_odirect_unaligned_size, NEEDS_OPEN)
	C(rw_unaligned_buf_off, NEEDS_OPEN)
	C(rw_odirect_unaligned_buf_off, NEEDS_OPEN)
	C(rw_1byte, NEEDS_OPEN)
	C(rw_reg_interior, NEEDS_OPEN)
	C(rw_host_pinned_read, NEEDS_OPEN)
	C(rw_write_basic, NEEDS_OPEN)
	C(rw_write_offset, NEEDS_OPEN)
	C(rw_write_odirect_aligned, NEEDS_OPEN)
	C(rw_write_odirect_unaligned, NEEDS_OPEN)
	C(rw_realloc_same_addr, NEEDS_OPEN)
	C(rw_unreg_past_alloc, NEEDS_OPEN)
	C(batch_setup_limits, NEEDS_OPEN)
	C(batch_read_basic, NEEDS_OPEN)
	C(batch_entry_null_handle, NEEDS_OPEN)
	C(batch_entry_deregistered_handle, NEEDS_OPEN)
	C(batch_submit_bad_args, NEEDS_OPEN)
	C(batch_getstatus_semantics, NEEDS_OPEN)
	C(batch_cancel, NEEDS_OPEN)
	C(batch_cancel_resubmit_unreaped, NEEDS_OPEN)
	C(batch_destroy_in_flight_and_twice, NEEDS_OPEN)
	C(batch_entry_results_on_errors, NEEDS_OPEN)
	C(async_null_stream, NEEDS_OPEN)
	C(async_unregistered_stream, NEEDS_OPEN)
	C(async_legacy_stream, NEEDS_OPEN)
	C(async_many_on_one_stream, NEEDS_OPEN)
	C(async_fixed_stream, NEEDS_OPEN)
	C(async_stream_register_args, NEEDS_OPEN)
	C(async_null_args, NEEDS_OPEN)
	C(lifecycle, NEEDS_OPEN)
	C(param_values, EXPLICIT)
#undef C
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void print_mapped_libcufile(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096], seen[8][PATH_MAX];
	int nseen = 0, i;
	if (!f) {
		puts("# libcufile: cannot read /proc/self/maps");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		char real[PATH_MAX];
		if (!path || !strstr(path, "libcufile"))
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (!realpath(path, real))
			snprintf(real, sizeof(real), "%s", path);
		for (i = 0; i < nseen; i++)
			if (!strcmp(seen[i], real))
				break;
		if (i == nseen && nseen < 8) {
			snprintf(seen[nseen++], PATH_MAX, "%s", real);
			printf("# libcufile: %s\n", real);
		}
	}
	if (nseen == 0)
		puts("# libcufile: NONE MAPPED");
	fclose(f);
	fflush(stdout);
}

static int init_cuda(void)
{
	CUresult r = cuInit(0);
	if (r == CUDA_SUCCESS)
		r = cuDeviceGet(&g_dev, 0);
	if (r == CUDA_SUCCESS)
		r = cuDevicePrimaryCtxRetain(&g_ctx, g_dev);
	if (r == CUDA_SUCCESS)
		r = cuCtxSetCurrent(g_ctx);
	if (r != CUDA_SUCCESS) {
		printf("# cuda_init: FAILED %d\n", (int)r);
		return -1;
	}
	return 0;
}

static const struct tcase *find_case(const char *n)
{
	size_t i;
	for (i = 0; i < NCASES; i++)
		if (!strcmp(cases[i].name, n))
			return &cases[i];
	return NULL;
}

static void run_case(const struct tcase *c)
{
	if (c->mode == NEEDS_OPEN && !g_open_by_harness_or_case) {
		CUfileError_t e = cuFileDriverOpen();
		printf("# harness_open: %s\n", E(e));
		if (e.err == CU_FILE_SUCCESS)
			g_open_by_harness_or_case = 1;
	}
	printf(">> %s\n", c->name);
	fflush(stdout);
	c->fn(c->name);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const struct tcase *sel[NCASES * 2];
	size_t nsel = 0, i;
	int a;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--list")) {
			for (i = 0; i < NCASES; i++)
				if (cases[i].mode != EXPLICIT)
					puts(cases[i].name);
			return 0;
		} else if (!strcmp(argv[a], "--dir") && a + 1 < argc) {
			snprintf(g_dir, sizeof(g_dir), "%s", argv[++a]);
		} else if (!strcmp(argv[a], "--param-try") && a + 1 < argc) {
			return param_try(strtoul(argv[a + 1], NULL, 10));
		} else if (!strcmp(argv[a], "--param-jobs") && a + 1 < argc) {
			g_param_jobs = atoi(argv[++a]);
		} else {
			const struct tcase *c = find_case(argv[a]);
			if (!c) {
				fprintf(stderr, "unknown case %s (see --list)\n", argv[a]);
				return 2;
			}
			if (nsel < NCASES * 2)
				sel[nsel++] = c;
		}
	}
	if (nsel == 0)
		for (i = 0; i < NCASES; i++)
			if (cases[i].mode != EXPLICIT)
				sel[nsel++] = &cases[i];

	print_mapped_libcufile();
	mkdir(g_dir, 0755);
	if (prepare_data_file() != 0)
		return 2;
	if (init_cuda() != 0)
		return 2;
	for (i = 0; i < nsel; i++)
		run_case(sel[i]);
	if (g_open_by_harness_or_case && cuFileUseCount() > 0) {
		CUfileError_t e = cuFileDriverClose();
		printf("# final_close: %s\n", E(e));
	}
	puts("# done");
	return 0;
}
