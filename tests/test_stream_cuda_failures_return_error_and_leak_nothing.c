/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) When queuing a stream operation fails in the CUDA
 * driver — cuLaunchHostFunc, or cuStreamWaitValue32_v2 after the host
 * function was queued — cuFileReadAsync returns CU_FILE_CUDA_DRIVER_ERROR
 * and leaves nothing behind: the operation either never runs or has
 * finished by the time the call returns (never writes the caller's memory
 * later), the next operation works, and after the driver closes no pinned
 * memory of the library is left (the flag pages are freed).
 */
#include "async_test_util.h"
#include "fakecuda.h"

#define SZ (64 * T_KIB)

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(4 * SZ, 0);
	int fd = t_open(path, O_RDONLY);
	size_t pinned0 = fakecuda_live_pinned_allocations();
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);
	CUstream s;
	T_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	uint8_t *host = malloc(SZ);
	T_ASSERT(host != NULL);

	for (int delay = 0; delay <= 1; delay++) {
		fakecuda_set_stream_delay_us(delay ? 5000 : 0);
		/* The host function cannot be queued. */
		memset(host, T_POISON, SZ);
		size_t size = SZ;
		off_t foff = 0, boff = 0;
		ssize_t bytes = -4242;
		fakecuda_fail_nth("cuLaunchHostFunc", 1, CUDA_ERROR_LAUNCH_FAILED);
		T_CUFILE(cuFileReadAsync(fh, host, &size, &foff, &boff, &bytes, s), CU_FILE_CUDA_DRIVER_ERROR);
		T_CU(cuStreamSynchronize(s));
		T_EQ(bytes, -4242);
		T_ASSERT(t_check_fill(host, SZ, T_POISON, "buffer after a failed submission") == 0);

		/* The wait cannot be queued after the host function was. */
		fakecuda_fail_nth("cuStreamWaitValue32_v2", 1, CUDA_ERROR_LAUNCH_FAILED);
		T_CUFILE(cuFileReadAsync(fh, host, &size, &foff, &boff, &bytes, s), CU_FILE_CUDA_DRIVER_ERROR);
		ssize_t at_return = __atomic_load_n(&bytes, __ATOMIC_ACQUIRE);
		T_CU(cuStreamSynchronize(s));
		t_sleep_ms(20);
		/* Either it never ran, or it had finished before the call returned. */
		T_EQ(bytes, at_return);
		if (bytes == -4242)
			T_ASSERT(t_check_fill(host, SZ, T_POISON, "abandoned operation") == 0);
		else
			T_EQ(bytes, SZ);

		/* The next operation works. */
		memset(host, T_POISON, SZ);
		foff = SZ;
		T_CUFILE_OK(cuFileReadAsync(fh, host, &size, &foff, &boff, &bytes, s));
		T_CU(cuStreamSynchronize(s));
		T_EQ(bytes, SZ);
		T_ASSERT(t_check_pattern(host, SZ, SZ, 0, "read after the failures") == 0);
	}
	fakecuda_set_stream_delay_us(0);
	fakecuda_reset_faults();

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ_U(fakecuda_live_pinned_allocations(), pinned0);
	T_CU(cuStreamDestroy(s));
	free(host);
	close(fd);
	return T_EXIT_PASS;
}
