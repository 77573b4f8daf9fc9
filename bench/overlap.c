/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overlap - file reads into GPU memory while a compute kernel runs.
 *
 *   overlap -f FILE [-s SIZE] [-i IOSIZE] [-x 3|5] [-B N] [-k MS] [-r REPS]
 *           [-g GPU] [-b] [-t SECS] [-V]
 *
 * Frameworks overlap storage with compute: a kernel works on one stream
 * while the next data is loaded on another.  Per repetition this program
 * measures, with the page cache warm:
 *   kernel alone   a spin kernel (PTX text, JIT-compiled by the driver)
 *                  that occupies every SM for MS milliseconds and touches no
 *                  memory (default MS: the I/O-alone time of repetition 0);
 *   I/O alone      SIZE bytes of FILE into device memory, either as
 *                  SIZE/IOSIZE cuFileReadAsync operations queued on one
 *                  stream (-x 3, the default) or as batches of N entries of
 *                  IOSIZE (-x 5, cuFileBatchIO*, -B N, default 128);
 *   both           the kernel launched on its stream, then the same I/O.
 * overlap = (kernel + io - both) / min(kernel, io): 1 when the I/O hides
 * completely behind the kernel (or the reverse), 0 when they serialise.  The
 * last line is "Extra: kernel_ms: .. io_ms: .. both_ms: .. overlap: ..
 * io_GB_per_sec: .. io_GB_per_sec_with_kernel: .. Verify: .. Status: .."
 * with the medians over REPS repetitions (default 3); the data read in the
 * first "both" run is verified against the file's pattern (files made by
 * gdsio -Z).  The buffer is registered with cuFileBufRegister unless -b.
 *
 * Like gdsio it links libcufile by SONAME (RUNPATH) and loads the CUDA
 * driver with dlopen, so LD_PRELOAD or LD_LIBRARY_PATH picks the cuFile
 * library; the "# overlap: cuFile library" line says which one ran.
 * Exit status: 0 ok, 1 failure, 2 usage, 3 no kernels on this driver.
 */
#define _GNU_SOURCE
#include <cufile.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_dl.h"
#include "cufile_library.h"
#include "gpu/ptx_kernels.h"
#include "pattern.h"
#include "size_arg.h"

static struct cuda_dl cu;
static CUcontext ctx;
static CUstream sio, sk;
static CUfunction spin;
static int spin_blocks;
static CUfileHandle_t fh;
static CUdeviceptr dev;
static uint64_t size, iosize;
static int xfer = 3;
static unsigned depth = 128;
static double timeout_s = 30;
static CUfileBatchHandle_t batch;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Prints fmt (one %s: what), the status line, and exits with code. */
static void die(int code, const char *fmt, const char *what)
{
	printf(fmt, what);
	printf("\nExtra: Status: %s\n", code == 3 ? "not_supported" : "io_error");
	exit(code);
}

static void cu_check(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return;
	printf("# overlap: %s failed: %s (%d)\nExtra: Status: io_error\n", what, cuda_dl_errstr(&cu, r), (int)r);
	exit(1);
}

static void launch_spin(double ms)
{
	uint64_t ns = (uint64_t)(ms * 1e6);
	void *args[] = {&ns};
	cu_check(cu.LaunchKernel(spin, (unsigned)spin_blocks, 1, 1, 256, 1, 1, 0, sk, args, NULL), "cuLaunchKernel");
}

/* Reads SIZE bytes into dev; 0, or -1 after printing why. */
static int run_io(void)
{
	uint64_t n = size / iosize;
	if (xfer == 3) {
		static size_t *sz;
		static off_t *fo, *bo;
		static ssize_t *res;
		if (!sz) {
			sz = calloc(n, sizeof(*sz)), fo = calloc(n, sizeof(*fo)), bo = calloc(n, sizeof(*bo));
			res = calloc(n, sizeof(*res));
			if (!sz || !fo || !bo || !res)
				die(1, "# overlap: %s", "out of memory");
		}
		for (uint64_t i = 0; i < n; i++) {
			sz[i] = iosize, fo[i] = bo[i] = (off_t)(i * iosize), res[i] = -12345;
			CUfileError_t e = cuFileReadAsync(fh, (void *)(uintptr_t)dev, &sz[i], &fo[i], &bo[i], &res[i], sio);
			if (e.err != CU_FILE_SUCCESS) {
				printf("# overlap: cuFileReadAsync %llu: error %d\n", (unsigned long long)i, (int)e.err);
				return -1;
			}
		}
		cu_check(cu.StreamSynchronize(sio), "cuStreamSynchronize");
		for (uint64_t i = 0; i < n; i++)
			if (res[i] != (ssize_t)iosize) {
				printf("# overlap: read %llu of %llu returned %zd\n", (unsigned long long)i,
				       (unsigned long long)n, res[i]);
				return -1;
			}
		return 0;
	}
	CUfileIOParams_t *io = calloc(depth, sizeof(*io));
	CUfileIOEvents_t *ev = calloc(depth, sizeof(*ev));
	if (!io || !ev)
		die(1, "# overlap: %s", "out of memory");
	int rc = 0;
	for (uint64_t k = 0; k < n && rc == 0;) {
		unsigned g = (unsigned)(n - k < depth ? n - k : depth);
		for (unsigned i = 0; i < g; i++) {
			memset(&io[i], 0, sizeof(io[i]));
			io[i].mode = CUFILE_BATCH;
			io[i].fh = fh;
			io[i].opcode = CUFILE_READ;
			io[i].u.batch.devPtr_base = (void *)(uintptr_t)dev;
			io[i].u.batch.file_offset = (off_t)((k + i) * iosize);
			io[i].u.batch.devPtr_offset = (off_t)((k + i) * iosize);
			io[i].u.batch.size = iosize;
		}
		CUfileError_t e = cuFileBatchIOSubmit(batch, g, io, 0);
		if (e.err != CU_FILE_SUCCESS) {
			printf("# overlap: cuFileBatchIOSubmit: error %d\n", (int)e.err);
			rc = -1;
			break;
		}
		double t0 = now_ms();
		for (unsigned got = 0; got < g;) {
			unsigned nr = g - got;
			struct timespec ts = {0, 100 * 1000 * 1000};
			e = cuFileBatchIOGetStatus(batch, nr, &nr, ev, &ts);
			if (e.err != CU_FILE_SUCCESS) {
				printf("# overlap: cuFileBatchIOGetStatus: error %d\n", (int)e.err);
				exit(1); /* entries may still be in flight: no teardown */
			}
			for (unsigned j = 0; j < nr; j++)
				if (ev[j].status != CUFILE_COMPLETE || ev[j].ret != iosize) {
					printf("# overlap: batch entry status %#x ret %zu\n", (unsigned)ev[j].status,
					       ev[j].ret);
					rc = -1;
				}
			got += nr;
			if (got < g && now_ms() - t0 > timeout_s * 1e3) {
				printf("# overlap: batch: %u of %u entries in %.0f s\nExtra: Status: timeout\n", got, g,
				       timeout_s);
				exit(1);
			}
		}
		k += g;
	}
	free(io);
	free(ev);
	return rc;
}

static int verify(void)
{
	size_t chunk = 64 << 20;
	uint8_t *h = malloc(chunk);
	if (!h)
		return -1;
	int rc = 0;
	for (uint64_t off = 0; off < size && rc == 0; off += chunk) {
		size_t m = size - off < chunk ? (size_t)(size - off) : chunk;
		cu_check(cu.MemcpyDtoH(h, dev + off, m), "cuMemcpyDtoH");
		long long bad = pattern_check(h, off, m);
		if (bad >= 0) {
			printf("# overlap: verify: first bad byte at file offset %llu\n", (unsigned long long)(off + bad));
			rc = -1;
		}
	}
	free(h);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(void)
{
	fprintf(stderr, "usage: overlap -f FILE [-s SIZE(1G)] [-i IOSIZE(16M)] [-x 3|5] [-B N(128)] [-k MS] "
			"[-r REPS(3)] [-g GPU] [-b] [-t SECS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	int gpu = 0, reps = 3, reg = 1, c;
	double kernel_ms = 0;
	size = 1ull << 30;
	iosize = 16ull << 20;
	while ((c = getopt(argc, argv, "f:s:i:x:B:k:r:g:bt:Vh")) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 's': if (parse_size(optarg, &size)) usage(); break;
		case 'i': if (parse_size(optarg, &iosize)) usage(); break;
		case 'x': xfer = atoi(optarg); break;
		case 'B': depth = (unsigned)atoi(optarg); break;
		case 'k': kernel_ms = atof(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 'g': gpu = atoi(optarg); break;
		case 'b': reg = 0; break;
		case 't': timeout_s = atof(optarg); break;
		case 'V': break; /* accepted like gdsio's: the first "both" run is always verified */
		default: usage();
		}
	}
	if (!file || (xfer != 3 && xfer != 5) || !iosize || size < iosize || !depth || reps < 1 || reps > 100)
		usage();
	size -= size % iosize;
	pattern_init();

	char why[512];
	if (cuda_dl_load(&cu, why, sizeof(why)))
		die(3, "# overlap: no CUDA driver: %s", why);
	if (!cu.ModuleLoadData || !cu.ModuleGetFunction || !cu.LaunchKernel || !cu.StreamCreate ||
	    !cu.StreamSynchronize)
		die(3, "# overlap: %s", "the CUDA driver cannot load kernels");
	cu_check(cuda_dl_bind(&cu, gpu, &ctx), "binding the GPU");
	CUmodule mod;
	if (cu.ModuleLoadData(&mod, ocf_ptx_kernels) != CUDA_SUCCESS)
		die(3, "# overlap: %s", "cuModuleLoadData failed: no kernels on this driver");
	cu_check(cu.ModuleGetFunction(&spin, mod, "ocf_spin"), "cuModuleGetFunction");
	CUdevice d;
	int sms = 0;
	cu_check(cu.DeviceGet(&d, gpu), "cuDeviceGet");
	if (!cu.DeviceGetAttribute ||
	    cu.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) != CUDA_SUCCESS || sms < 1)
		sms = 132;
	spin_blocks = sms * 8; /* 8 x 256 threads per SM: every SM fully busy */
	cu_check(cu.StreamCreate(&sio, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	cu_check(cu.StreamCreate(&sk, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

	print_cufile_library("overlap");
	int ver = 0;
	cuFileGetVersion(&ver);
	printf(" version %d\n", ver);
	printf("# GPU %d (%d SMs), file %s, %llu bytes as %s of %llu bytes%s, buffer %s, %d repetitions\n", gpu, sms,
	       file, (unsigned long long)size, xfer == 3 ? "cuFileReadAsync operations on one stream" : "batch entries",
	       (unsigned long long)iosize, xfer == 5 ? " (batches of -B)" : "", reg ? "registered" : "not registered",
	       reps);

	int fd = open(file, O_RDONLY);
	if (fd < 0)
		die(1, "# overlap: cannot open %s", file);
	CUfileDescr_t desc;
	memset(&desc, 0, sizeof(desc));
	desc.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	desc.handle.fd = fd;
	if (cuFileHandleRegister(&fh, &desc).err != CU_FILE_SUCCESS)
		die(1, "# overlap: %s", "cuFileHandleRegister failed");
	cu_check(cu.MemAlloc(&dev, size), "cuMemAlloc");
	if (reg && cuFileBufRegister((void *)(uintptr_t)dev, size, 0).err != CU_FILE_SUCCESS)
		die(1, "# overlap: %s", "cuFileBufRegister failed");
	if (xfer == 5 && cuFileBatchIOSetUp(&batch, depth).err != CU_FILE_SUCCESS)
		die(3, "# overlap: %s", "cuFileBatchIOSetUp failed");

	/* Warm-up (page cache, staging, threads), then the repetitions. */
	if (run_io())
		die(1, "# overlap: %s", "the warm-up I/O failed");
	double *k = calloc((size_t)reps, sizeof(double)), *io = calloc((size_t)reps, sizeof(double));
	double *both = calloc((size_t)reps, sizeof(double)), *iok = calloc((size_t)reps, sizeof(double));
	const char *verified = "off";
	for (int r = 0; r < reps; r++) {
		double t0 = now_ms();
		if (run_io())
			die(1, "# overlap: %s", "I/O alone failed");
		io[r] = now_ms() - t0;
		if (r == 0 && kernel_ms <= 0)
			kernel_ms = io[0];
		t0 = now_ms();
		launch_spin(kernel_ms);
		cu_check(cu.StreamSynchronize(sk), "cuStreamSynchronize");
		k[r] = now_ms() - t0;
		cu_check(cu.MemsetD8 ? cu.MemsetD8(dev, 0x5a, size) : CUDA_SUCCESS, "cuMemsetD8"); /* for verify() */
		t0 = now_ms();
		launch_spin(kernel_ms);
		int bad = run_io();
		iok[r] = now_ms() - t0;
		cu_check(cu.StreamSynchronize(sk), "cuStreamSynchronize");
		both[r] = now_ms() - t0;
		if (bad)
			die(1, "# overlap: %s", "I/O with the kernel running failed");
		if (r == 0) {
			verified = verify() ? "FAIL" : "PASS";
			if (verified[0] == 'F') {
				printf("Extra: Verify: FAIL Status: verify_failed\n");
				return 1;
			}
		}
		printf("# rep %d: kernel %.2f ms, io %.2f ms, both %.2f ms (io done after %.2f ms)\n", r, k[r], io[r],
		       both[r], iok[r]);
	}
	double km = median(k, reps), im = median(io, reps), bm = median(both, reps), ikm = median(iok, reps);
	double lo = km < im ? km : im;
	printf("Extra: kernel_ms: %.3f io_ms: %.3f both_ms: %.3f io_ms_with_kernel: %.3f overlap: %.3f "
	       "io_GB_per_sec: %.3f io_GB_per_sec_with_kernel: %.3f Verify: %s Status: ok\n",
	       km, im, bm, ikm, lo > 0 ? (km + im - bm) / lo : 0, (double)size / im / 1e6, (double)size / ikm / 1e6,
	       verified);
	if (xfer == 5)
		cuFileBatchIODestroy(batch);
	if (reg)
		cuFileBufDeregister((void *)(uintptr_t)dev);
	cuFileHandleDeregister(fh);
	cu.MemFree(dev);
	close(fd);
	return 0;
}
