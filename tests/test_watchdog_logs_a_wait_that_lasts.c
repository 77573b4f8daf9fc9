/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) A wait that lasts longer than execution.wait_watchdog_s
 * (here OPENCUFILE_WAIT_WATCHDOG_S=1) is logged as one ERROR line naming the
 * operation, the file, the GPU and what it waits for; the operation itself
 * is not disturbed.
 *
 * A stream read of 9 staging chunks (more than the stream ring's 8 slots)
 * is queued on a stream whose every command the stand-in delays by 1.5 s:
 * the executor fills the 8 slots, then waits for the GPU to copy the first
 * one out before it can reuse it.  That wait is logged; then the delay is
 * removed and the read completes with the right data.  Then the same with
 * the watchdog off (0): no such line.
 */
#include "async_test_util.h"
#include "fakecuda.h"

#define CHUNK (2u << 20) /* the staging chunk (properties: staging_chunk_kb) */
#define SIZE (9 * (size_t)CHUNK)

static size_t count_lines(const char *log, const char *needle, char *last, size_t lastlen)
{
	FILE *f = fopen(log, "re");
	if (!f)
		return 0;
	char line[2048];
	size_t n = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle)) {
			n++;
			snprintf(last, lastlen, "%s", line);
		}
	fclose(f);
	return n;
}

static void one_read(const char *path, CUfileHandle_t fh, CUdeviceptr dev, CUstream s, const char *log, bool watched)
{
	t_set_case("watchdog %s", watched ? "on" : "off");
	T_EQ(fakecuda_set_stream_delay_us_for(s, 1500000), 0);
	size_t size = SIZE;
	off_t foff = 0, boff = 0;
	ssize_t bytes = -999;
	T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)dev, &size, &foff, &boff, &bytes, s));
	char last[2048] = "";
	const char *needle = "watchdog: cuFileReadAsync has been waiting";
	if (watched) {
		double t0 = t_now_s();
		while (count_lines(log, needle, last, sizeof(last)) == 0) {
			if (t_now_s() - t0 > 20)
				T_FAIL("no watchdog line in %s after 20 s", log);
			t_sleep_ms(50);
		}
		fprintf(stderr, "logged: %s", last);
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		if (!strstr(last, " ERROR ") || !strstr(last, base) || !strstr(last, "GPU 0") ||
		    !strstr(last, "staging slot") || !strstr(last, "thread "))
			T_FAIL("the line does not name the level, file, GPU, thread and what it waits for: %s", last);
	} else {
		t_sleep_ms(3000); /* as long as the logged case needed, and more */
	}
	T_EQ(fakecuda_set_stream_delay_us_for(s, 0), 0);
	T_CU(cuStreamSynchronize(s));
	T_EQ(bytes, (ssize_t)SIZE);
	uint8_t *h = malloc(SIZE);
	T_ASSERT(h != NULL);
	t_dev_get(h, dev, SIZE);
	T_ASSERT(t_check_pattern(h, SIZE, 0, 0, "read") == 0);
	free(h);
	if (!watched)
		T_EQ_U(count_lines(log, needle, last, sizeof(last)), 0);
}

int main(int argc, char **argv)
{
	bool watched = !(argc > 1 && strcmp(argv[1], "off") == 0);
	t_cuda_require();
	char log[512];
	snprintf(log, sizeof(log), "%s/watchdog-%d.log", t_dir(), (int)getpid());
	unlink(log);
	setenv("CUFILE_LOGFILE_PATH", log, 1);
	setenv("CUFILE_LOGGING_LEVEL", "ERROR", 1);
	setenv("OPENCUFILE_WAIT_WATCHDOG_S", watched ? "1" : "0", 1);
	const char *path = t_make_pattern_file(SIZE, 0);
	int fd = t_open(path, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	CUdeviceptr dev = t_dev_alloc(SIZE);
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	one_read(path, fh, dev, s, log, watched);
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_CU(cuStreamDestroy(s));
	T_CU(cuMemFree(dev));
	close(fd);
	unlink(log);
	return T_EXIT_PASS;
}
