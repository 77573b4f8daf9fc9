/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) A stream operation is done for the library when its
 * I/O has run and the flag is set, but the application's stream reads the
 * flag word (its wait) only when it gets there.  An application that closes
 * the driver as soon as *bytes_p is written, without synchronising the
 * stream, must not leave the stream reading freed pinned memory: the close
 * waits until every stream has passed its wait (the fake's streams are
 * slowed down so that the wait comes well after the I/O), and only then
 * frees the flag pages.  Then nothing is left: pinned memory is back to
 * where it was, and the stream synchronises cleanly.
 */
#include "async_test_util.h"
#include "fakecuda.h"

#define SZ (16 * T_KIB)

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(SZ, 0);
	int fd = t_open(path, O_RDONLY);
	size_t pinned0 = fakecuda_live_pinned_allocations();
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	uint8_t *host = malloc(SZ);
	T_ASSERT(host != NULL);

	for (int round = 0; round < 3; round++) {
		T_CUFILE_OK(cuFileDriverOpen());
		CUfileHandle_t fh = t_register_fd(fd);
		memset(host, T_POISON, SZ);
		size_t size = SZ;
		off_t foff = 0, boff = 0;
		ssize_t bytes = -4242;
		fakecuda_set_stream_delay_us(50000);
		T_CUFILE_OK(cuFileReadAsync(fh, host, &size, &foff, &boff, &bytes, s));
		/* The operation completes (the executor wrote *bytes_p) long
		 * before the slowed stream evaluates its wait. */
		for (int i = 0; i < 5000 && __atomic_load_n(&bytes, __ATOMIC_ACQUIRE) == -4242; i++)
			t_sleep_ms(1);
		T_EQ(bytes, SZ);
		cuFileHandleDeregister(fh);
		T_CUFILE_OK(cuFileDriverClose());
		T_EQ(cuFileUseCount(), 0);
		T_CU(cuStreamSynchronize(s));
		fakecuda_set_stream_delay_us(0);
		T_EQ_U(fakecuda_live_pinned_allocations(), pinned0);
		T_ASSERT(t_check_pattern(host, SZ, 0, 0, "data") == 0);
	}
	T_CU(cuStreamDestroy(s));
	free(host);
	close(fd);
	return T_EXIT_PASS;
}
