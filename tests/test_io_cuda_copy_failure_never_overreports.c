/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) When a CUDA copy fails in the middle of a cuFileRead
 * into device memory (cuMemcpyHtoDAsync_v2) or a cuFileWrite from device
 * memory (cuMemcpyDtoHAsync_v2), or the stream synchronisation fails, the
 * call returns -CU_FILE_CUDA_DRIVER_ERROR or a smaller byte count — never
 * more bytes than really reached the destination — writes nothing outside
 * the requested range, and the next call works.  Once a failed call has
 * returned, no copy it queued may still land in the caller's memory (the
 * fake's streams are slowed down so that a copy left in flight shows).
 * SQLite-style: fail the 1st, 2nd, ... call until the operation no longer
 * reaches the fault.  Each listed function must be reached at least once:
 * with a small request (one copy) and a large one, and for the stream
 * synchronisation (which drains the staging stream only after a failure
 * stopped the request) with an asynchronous copy refused first.  The
 * library never calls the synchronous cuMemcpyHtoD_v2/cuMemcpyDtoH_v2: on
 * the real driver such a copy holds the context's lock while it waits
 * (docs/reliability.md, "Hangs", cause 4); that is checked first.
 *
 *   test_io_cuda_copy_failure_never_overreports lanes|striped
 *
 * "lanes" runs with the striped path off (OPENCUFILE_STRIPE_MAX_KB=0, set by
 * the ctest entry): the large read is split among participants that each
 * copy and wait for their own chunks, long copies slept for with
 * cuEventSynchronize.  "striped" runs the large read on the striped path
 * (stripe.c): helpers read, the caller queues one copy per stripe and polls
 * its event (cuEventQuery).  Writes take the lanes either way.
 */
#include "test.h"
#include "fakecuda.h"

/* What a failed copy must give when nothing can be reported as done. */
#define EXPECT_COPY_FAILURE (-CU_FILE_CUDA_DRIVER_ERROR)

#define SIZE (9 * T_MIB + 17)
/* One staging chunk, one copy. */
#define SMALL_SIZE 5000
#define FOFF 4095
#define BOFF 3
#define GUARD 4096
#define ALLOC (GUARD + BOFF + SIZE + GUARD)
#define FLEN (10 * T_MIB)
#define MAX_NTH 200
/* Stream delay while faults are injected, and how long to watch memory
 * after a failed call for late writes. */
#define STREAM_DELAY_US 2000
#define WATCH_US 100000

static CUfileHandle_t fh;
static int fd, check_fd;
static bool buf_registered;
static CUdeviceptr dev;
static uint8_t *shadow; /* dev's bytes in the stand-in (fakecuda_shadow) */
static uint8_t *host;

/* One fault loop: `func` fails at its 1st, 2nd ... call during a request of
 * `size` bytes; `stop` (or NULL) is a copy refused at its STOP_NTH-th call
 * in every iteration, so that the request stops and its stream is
 * drained. */
struct fcase {
	const char *func;
	size_t size;
	const char *stop;
	/* A function called while waiting (a polled event) is reached as
	 * often as the wait lasts: its first max_nth calls are faulted in
	 * turn (0: until the read no longer reaches the fault). */
	unsigned long max_nth;
};
#define STOP_NTH 3

/* A lane whose staging stream could not be drained is discarded, and the
 * library makes lanes only when a GPU is brought up (driver open): after a
 * few failed drains no lane is left, and staged I/O fails with
 * CU_FILE_CUDA_DRIVER_ERROR until the driver is reopened.  The stream
 * synchronisation loop therefore checks recovery after a reopen. */
static void reopen(void)
{
	CUdeviceptr d = dev;
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CUFILE_OK(cuFileDriverOpen());
	fh = t_register_fd(fd);
	if (buf_registered)
		T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)d, ALLOC, 0));
}

static void check_error_value(ssize_t r, size_t size)
{
	char b[128];

	if (r < 0 && r != EXPECT_COPY_FAILURE)
		T_FAIL("failed copy gave %s, expected a byte count or %s",
		       t_io_ret_str(r, errno, b, sizeof(b)), CUFILE_ERRSTR(EXPECT_COPY_FAILURE));
	if (r > (ssize_t)size)
		T_FAIL("returned %zd > requested %zu", r, size);
}

static void read_faults(const struct fcase *c)
{
	void *base = (void *)(uintptr_t)(dev + GUARD);
	const char *func = c->func;
	const size_t size = c->size;
	int hits = 0;

	for (unsigned long nth = 1; nth <= MAX_NTH; nth++) {
		if (c->max_nth && nth > c->max_nth) {
			fprintf(stderr, "%s (%zu bytes): read faults injected: %d (its first %lu calls)\n", func,
				size, hits, c->max_nth);
			return;
		}
		t_set_case("cuFileRead of %zu, fail call %lu of %s%s%s", size, nth, func, c->stop ? " after " : "",
			   c->stop ? c->stop : "");
		t_dev_fill(dev, T_POISON, ALLOC);
		unsigned long before = fakecuda_call_count(func);
		fakecuda_fail_nth(func, nth, CUDA_ERROR_UNKNOWN);
		if (c->stop)
			fakecuda_fail_nth(c->stop, STOP_NTH, CUDA_ERROR_UNKNOWN);
		errno = 0;
		ssize_t r = cuFileRead(fh, base, size, FOFF, BOFF);
		unsigned long calls = fakecuda_call_count(func) - before;
		fakecuda_reset_faults();
		/* The device memory as the call left it, looked at directly: a
		 * copy to it (cuMemcpyDtoH) would first wait for the library's
		 * streams and hide a copy still queued when the call returned. */
		memcpy(host, shadow, ALLOC);

		const uint8_t *dst = host + GUARD + BOFF;
		if (t_check_fill(host, GUARD + BOFF, T_POISON, "guard before") ||
		    t_check_fill(dst + size, ALLOC - GUARD - BOFF - size, T_POISON, "guard after"))
			T_FAIL("bytes outside the range changed");
		if (calls < nth) {
			fprintf(stderr, "%s (%zu bytes%s%s): read faults injected: %d\n", func, size,
				c->stop ? ", after a refused " : "", c->stop ? c->stop : "", hits);
			if (hits == 0)
				T_FAIL("%s: the read never reached it", func);
			if (c->stop) {
				/* The stopping copy failed the call. */
				check_error_value(r, size);
				T_ASSERT(r < (ssize_t)size);
				if (r > 0 && t_check_pattern(dst, (size_t)r, FOFF, 0, "bytes reported as read"))
					T_FAIL("returned %zd but those bytes are not all in device memory", r);
				return;
			}
			/* The fault was not reached: a complete, correct read. */
			T_EQ(r, size);
			if (t_check_pattern(dst, size, FOFF, 0, "data"))
				T_FAIL("bad data");
			return;
		}
		hits++;
		check_error_value(r, size);
		if (r > 0 && t_check_pattern(dst, (size_t)r, FOFF, 0, "bytes reported as read"))
			T_FAIL("returned %zd but those bytes are not all in device memory", r);
		/* Nothing the failed call queued lands after it returned (again
		 * directly: no copy that would wait for the streams first). */
		memset(shadow, T_POISON2, ALLOC);
		usleep(WATCH_US);
		memcpy(host, shadow, ALLOC);
		if (t_check_fill(host, ALLOC, T_POISON2, "device memory after the call returned"))
			T_FAIL("a copy of the failed cuFileRead landed after it returned");
		/* The library recovers. */
		t_set_case("cuFileRead after failing call %lu of %s", nth, func);
		if (c->stop)
			reopen();
		struct t_mem m = { T_MEM_DEVICE, (void *)(uintptr_t)dev, ALLOC };
		if (t_read_and_verify(fh, &m, GUARD, 1 * T_MIB + 3, 1, BOFF, 1 * T_MIB + 3, 0))
			T_FAIL("read after a fault failed");
	}
	T_FAIL("%s: the read still reached the fault after %d calls", func, MAX_NTH);
}

static void write_faults(const struct fcase *c)
{
	void *base = (void *)(uintptr_t)(dev + GUARD);
	const char *func = c->func;
	const size_t size = c->size;
	uint8_t *src = malloc(ALLOC), *back = malloc(SIZE);
	int hits = 0;

	T_ASSERT(src && back);
	t_fill_pattern(src + GUARD + BOFF, SIZE, FOFF, 31);
	for (unsigned long nth = 1; nth <= MAX_NTH; nth++) {
		t_set_case("cuFileWrite of %zu, fail call %lu of %s%s%s", size, nth, func, c->stop ? " after " : "",
			   c->stop ? c->stop : "");
		t_dev_put(dev, src, ALLOC);
		unsigned long before = fakecuda_call_count(func);
		fakecuda_fail_nth(func, nth, CUDA_ERROR_UNKNOWN);
		if (c->stop)
			fakecuda_fail_nth(c->stop, STOP_NTH, CUDA_ERROR_UNKNOWN);
		errno = 0;
		ssize_t r = cuFileWrite(fh, base, size, FOFF, BOFF);
		unsigned long calls = fakecuda_call_count(func) - before;
		fakecuda_reset_faults();
		T_EQ_U(t_pread_full(check_fd, back, size, FOFF), size);
		T_EQ_U(t_file_size(check_fd), FLEN);
		if (calls < nth && !c->stop) {
			T_EQ(r, size);
			if (t_check_pattern(back, size, FOFF, 31, "file"))
				T_FAIL("bad write");
			t_pwrite_pattern(check_fd, FOFF, size, 0);
		}
		if (calls < nth) {
			fprintf(stderr, "%s (%zu bytes%s%s): write faults injected: %d\n", func, size,
				c->stop ? ", after a refused " : "", c->stop ? c->stop : "", hits);
			if (hits == 0)
				T_FAIL("%s: the write never reached it", func);
			if (c->stop) {
				check_error_value(r, size);
				T_ASSERT(r < (ssize_t)size);
				if (r > 0 && t_check_pattern(back, (size_t)r, FOFF, 31, "bytes reported as written"))
					T_FAIL("returned %zd but those bytes are not all in the file", r);
				t_pwrite_pattern(check_fd, FOFF, size, 0);
			}
			free(src);
			free(back);
			return;
		}
		hits++;
		check_error_value(r, size);
		if (r > 0 && t_check_pattern(back, (size_t)r, FOFF, 31, "bytes reported as written"))
			T_FAIL("returned %zd but those bytes are not all in the file", r);
		/* Nothing before the range. */
		uint8_t before_buf[4096];
		T_EQ_U(t_pread_full(check_fd, before_buf, sizeof(before_buf), FOFF - 4095), 4095 + 1);
		if (t_check_pattern(before_buf, 4095, 0, 0, "file before the range"))
			T_FAIL("write touched bytes before the range");
		t_pwrite_pattern(check_fd, FOFF, size, 0);
		/* The library recovers: a new write (new pattern) lands intact,
		 * not mixed with staged bytes of the failed one. */
		t_set_case("cuFileWrite after failing call %lu of %s", nth, func);
		if (c->stop)
			reopen();
		struct t_mem m = { T_MEM_DEVICE, (void *)(uintptr_t)dev, ALLOC };
		if (t_write_and_verify(fh, &m, GUARD, SIZE, FOFF, BOFF, check_fd, FLEN, 32, 0))
			T_FAIL("write after a fault failed");
	}
	T_FAIL("%s: the write still reached the fault after %d calls", func, MAX_NTH);
}

int main(int argc, char **argv)
{
	bool striped = argc > 1 && !strcmp(argv[1], "striped");
	const char *max = getenv("OPENCUFILE_STRIPE_MAX_KB");
	if (striped != !(max && !strcmp(max, "0")))
		T_FAIL("run as 'striped' with the striped path on, or 'lanes' with OPENCUFILE_STRIPE_MAX_KB=0");
	t_cuda_require();
	const char *path = t_make_pattern_file(FLEN, 0);
	fd = t_open(path, O_RDWR);
	check_fd = t_open(path, O_RDWR);
	host = malloc(ALLOC);
	T_ASSERT(host != NULL);

	T_CUFILE_OK(cuFileDriverOpen());
	fh = t_register_fd(fd);
	dev = t_dev_alloc(ALLOC);
	shadow = fakecuda_shadow(dev, ALLOC);
	T_ASSERT(shadow != NULL);

	static const struct fcase lane_read_funcs[] = {
		{"cuMemcpyHtoDAsync_v2", SIZE, NULL, 0},
		{"cuMemcpyHtoDAsync_v2", SMALL_SIZE, NULL, 0},
		{"cuEventRecord", SIZE, NULL, 0},
		{"cuEventSynchronize", SIZE, NULL, 0},
		{"cuStreamSynchronize", SIZE, "cuMemcpyHtoDAsync_v2", 0},
	};
	/* The striped read's copies are 1 MiB stripes, whose events are
	 * polled. */
	static const struct fcase striped_read_funcs[] = {
		{"cuMemcpyHtoDAsync_v2", SIZE, NULL, 0},
		{"cuEventRecord", SIZE, NULL, 0},
		{"cuEventQuery", SIZE, NULL, 12},
		{"cuStreamSynchronize", SIZE, "cuMemcpyHtoDAsync_v2", 0},
	};
	const struct fcase *read_funcs = striped ? striped_read_funcs : lane_read_funcs;
	size_t nread = striped ? sizeof(striped_read_funcs) / sizeof(striped_read_funcs[0])
			       : sizeof(lane_read_funcs) / sizeof(lane_read_funcs[0]);
	static const struct fcase write_funcs[] = {
		{"cuMemcpyDtoHAsync_v2", SIZE, NULL, 0},
		{"cuMemcpyDtoHAsync_v2", SMALL_SIZE, NULL, 0},
		{"cuEventRecord", SIZE, NULL, 0},
		{"cuEventSynchronize", SIZE, NULL, 0},
		{"cuStreamSynchronize", SIZE, "cuMemcpyDtoHAsync_v2", 0},
	};
	/* No synchronous copy, small request or large; the write puts back
	 * the bytes just read, so the file keeps its pattern. */
	static const size_t no_sync_sizes[] = {SMALL_SIZE, SIZE};
	for (size_t i = 0; i < 2; i++) {
		size_t n = no_sync_sizes[i];
		void *base = (void *)(uintptr_t)(dev + GUARD);
		unsigned long h2d = fakecuda_call_count("cuMemcpyHtoD_v2"), d2h = fakecuda_call_count("cuMemcpyDtoH_v2");
		T_EQ(cuFileRead(fh, base, n, FOFF, BOFF), (ssize_t)n);
		T_EQ(cuFileWrite(fh, base, n, FOFF, BOFF), (ssize_t)n);
		T_EQ_U(fakecuda_call_count("cuMemcpyHtoD_v2") - h2d, 0);
		T_EQ_U(fakecuda_call_count("cuMemcpyDtoH_v2") - d2h, 0);
	}
	for (int reg = 0; reg < 2; reg++) {
		fprintf(stderr, "--- %s buffer\n", reg ? "registered" : "unregistered");
		if (reg)
			T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)dev, ALLOC, 0));
		buf_registered = reg;
		/* Slow streams, so that a copy left in flight by a failed call
		 * lands after the call returned and is seen. */
		fakecuda_set_stream_delay_us(STREAM_DELAY_US);
		unsigned long copies = fakecuda_call_count("cuMemcpyHtoDAsync_v2") +
				       fakecuda_call_count("cuMemcpyHtoD_v2");
		for (size_t i = 0; i < nread; i++)
			read_faults(&read_funcs[i]);
		if (fakecuda_call_count("cuMemcpyHtoDAsync_v2") +
			    fakecuda_call_count("cuMemcpyHtoD_v2") == copies)
			T_FAIL("reads into device memory never called cuMemcpyHtoD(Async)_v2");
		copies = fakecuda_call_count("cuMemcpyDtoHAsync_v2") +
			 fakecuda_call_count("cuMemcpyDtoH_v2");
		for (size_t i = 0; !striped && i < sizeof(write_funcs) / sizeof(write_funcs[0]); i++)
			write_faults(&write_funcs[i]);
		if (!striped && fakecuda_call_count("cuMemcpyDtoHAsync_v2") +
					    fakecuda_call_count("cuMemcpyDtoH_v2") ==
				    copies)
			T_FAIL("writes from device memory never called cuMemcpyDtoH(Async)_v2");
		fakecuda_set_stream_delay_us(0);
		if (reg)
			T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)dev));
	}

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuMemFree(dev));
	free(host);
	close(check_fd);
	close(fd);
	return 0;
}
