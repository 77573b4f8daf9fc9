/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) Stream operations wait on flag words that are reused
 * from one operation to the next.  A stream that is slow to reach its wait
 * must not share a flag with a later operation on a fast stream: the fast
 * one would mark the flag passed first and the slow one overwrite that with
 * its older value, after which the close could never see the page as
 * passed (it waited 10 s, then left the page allocated).  Here one stream
 * is slowed down, an operation on it completes (its flag goes back to the
 * library) before the stream reaches its wait, and the next operation runs
 * on a fast stream: both deliver their data, the close returns promptly,
 * and no pinned memory is left.
 *
 * "Promptly" is checked as a state, not a time: both streams are
 * synchronised before the close, so a close with the flags right finds
 * every page passed at once, and the only way for it to be slow is to
 * wait out its pass limit, after which it always logs "has not passed"
 * and leaves the page (or ring) pinned.  So the test requires the pinned
 * allocation count back where it started and no such line in the log, and
 * a machine that is merely slow cannot fail it.
 */
#include "async_test_util.h"
#include "fakecuda.h"

#define SZ (8 * T_KIB)

/* Lines of the cufile log (NULL when the log is not set) that say a close
 * gave up on a stream. */
static int not_passed_lines(const char *log)
{
	if (!log)
		return 0;
	FILE *f = fopen(log, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0; /* nothing logged */
		T_FAIL("cannot open the cufile log %s: %s", log, strerror(errno));
	}
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "has not passed") != NULL;
	fclose(f);
	return n;
}

int main(void)
{
	t_cuda_require();
	const char *log = getenv("CUFILE_LOGFILE_PATH"); /* set by ctest */
	if (log)
		unlink(log); /* the library appends: read this run's lines only */
	else
		fprintf(stderr, "CUFILE_LOGFILE_PATH is not set: the log is not checked\n");
	const char *path = t_make_pattern_file(2 * SZ, 0);
	int fd = t_open(path, O_RDONLY);
	size_t pinned0 = fakecuda_live_pinned_allocations();
	CUstream slow, fast;
	T_CU(cuStreamCreate(&slow, CU_STREAM_NON_BLOCKING));
	T_CU(cuStreamCreate(&fast, CU_STREAM_NON_BLOCKING));
	T_EQ(fakecuda_set_stream_delay_us_for(slow, 100000), 0);
	uint8_t *a = malloc(SZ), *b = malloc(SZ);
	T_ASSERT(a && b);

	for (int round = 0; round < 2; round++) {
		T_CUFILE_OK(cuFileDriverOpen());
		CUfileHandle_t fh = t_register_fd(fd);
		size_t size_a = SZ, size_b = SZ;
		off_t foff_a = 0, foff_b = SZ, boff = 0;
		ssize_t bytes_a = -4242, bytes_b = -4242;
		memset(a, T_POISON, SZ);
		memset(b, T_POISON, SZ);
		T_CUFILE_OK(cuFileReadAsync(fh, a, &size_a, &foff_a, &boff, &bytes_a, slow));
		/* Done for the library (its flag is free again), but the slow
		 * stream reaches its wait only later. */
		for (int i = 0; i < 5000 && __atomic_load_n(&bytes_a, __ATOMIC_ACQUIRE) == -4242; i++)
			t_sleep_ms(1);
		T_EQ(bytes_a, SZ);
		T_CUFILE_OK(cuFileReadAsync(fh, b, &size_b, &foff_b, &boff, &bytes_b, fast));
		T_CU(cuStreamSynchronize(fast));
		T_EQ(bytes_b, SZ);
		T_CU(cuStreamSynchronize(slow));
		T_ASSERT(t_check_pattern(a, SZ, 0, 0, "first operation") == 0);
		T_ASSERT(t_check_pattern(b, SZ, SZ, 0, "second operation") == 0);
		cuFileHandleDeregister(fh);
		T_CUFILE_OK(cuFileDriverClose());
		if (not_passed_lines(log))
			T_FAIL("round %d: the close gave up waiting for a synchronised stream (see %s)", round, log);
		T_EQ_U(fakecuda_live_pinned_allocations(), pinned0);
	}
	T_CU(cuStreamDestroy(slow));
	T_CU(cuStreamDestroy(fast));
	free(a);
	free(b);
	close(fd);
	return T_EXIT_PASS;
}
