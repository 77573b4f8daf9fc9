/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdsio_util.c - clocks, error texts, whole-range pread/pwrite, a random
 * number generator and the latency histogram, for every part of gdsio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gdsio.h"

double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *cufile_err(CUfileError_t e, char *buf, size_t len)
{
	if (e.err == CU_FILE_CUDA_DRIVER_ERROR)
		snprintf(buf, len, "%s (%d, CUDA error %d)", cufileop_status_error(e.err), (int)e.err,
			 (int)e.cu_err);
	else
		snprintf(buf, len, "%s (%d)", cufileop_status_error(e.err), (int)e.err);
	return buf;
}

CUfileError_t register_fd(int fd, CUfileHandle_t *fh)
{
	CUfileDescr_t d;
	memset(&d, 0, sizeof(d));
	d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	d.handle.fd = fd;
	return cuFileHandleRegister(fh, &d);
}

/* Text for a cuFileRead/Write result that is not the full size. */
const char *io_ret_str(ssize_t r, int err, char *buf, size_t len)
{
	if (r == -1)
		snprintf(buf, len, "-1, errno %d (%s)", err, strerror(err));
	else if (r < 0)
		snprintf(buf, len, "%zd (%s)", r, CUFILE_ERRSTR((int)r));
	else
		snprintf(buf, len, "%zd bytes (short)", r);
	return buf;
}

int full_pread(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += (size_t)r;
	}
	return 0;
}

int full_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pwrite(fd, (const char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += (size_t)r;
	}
	return 0;
}

uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: fast, good enough to scatter offsets. */
	uint64_t x = *s;
	x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* The histogram's buckets: see struct hist in gdsio.h. */
static int hist_idx(uint64_t ns)
{
	if (ns < 64)
		return (int)ns;
	int msb = 63 - __builtin_clzll(ns);
	int shift = msb - 5;
	return 64 + (msb - 6) * 32 + (int)((ns >> shift) & 31);
}

static double hist_mid(int idx)
{
	if (idx < 64)
		return idx;
	int msb = (idx - 64) / 32 + 6, sub = (idx - 64) % 32;
	double w = (double)(1ull << (msb - 5));
	return (32.0 + sub) * w + w / 2;
}

void hist_add(struct hist *h, uint64_t ns)
{
	h->n[hist_idx(ns)]++;
	h->count++;
	h->sum_ns += ns;
}

void hist_merge(struct hist *to, const struct hist *from)
{
	for (int b = 0; b < HIST_N; b++)
		to->n[b] += from->n[b];
	to->count += from->count, to->sum_ns += from->sum_ns;
}

double hist_pct_us(const struct hist *h, double p)
{
	if (!h->count)
		return 0;
	uint64_t want = (uint64_t)ceil(p * (double)h->count), cum = 0;
	if (want < 1)
		want = 1;
	for (int i = 0; i < HIST_N; i++) {
		cum += h->n[i];
		if (cum >= want)
			return hist_mid(i) / 1e3;
	}
	return 0;
}
