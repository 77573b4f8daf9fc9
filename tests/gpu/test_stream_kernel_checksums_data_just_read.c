/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (GPU) A kernel queued right after cuFileReadAsync on the same stream sees
 * exactly the bytes the read delivered.  On each of 4 streams (one of them
 * CU_STREAM_LEGACY, one created blocking) 8 rounds are queued without any
 * synchronisation in between: clobber the buffer (memset), read 1 MiB + 5
 * of the file at a round-specific offset into it, zero a result word, run
 * a checksum kernel (PTX, JIT-compiled by the driver) over the buffer,
 * copy the result out.  Every round's checksum must equal the CPU's over the
 * file range: a kernel that ran before the read finished, or a read that
 * landed before the clobbering memset, gives another sum.  The stand-in
 * driver of the CPU suite runs the two kernels of ptx_kernels.h in C, so
 * this runs there too; skipped (77) where a driver cannot load modules.
 */
#include "async_test_util.h"
#include "gpu/ptx_kernels.h"

#define NSTREAMS 4
#define ROUNDS 8
#define SZ (1 * T_MIB + 5)
#define FLEN (48 * T_MIB)

typedef CUresult (*module_load_fn)(CUmodule *, const void *);
typedef CUresult (*module_get_function_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*module_unload_fn)(CUmodule);
typedef CUresult (*launch_kernel_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				     unsigned, CUstream, void **, void **);

int main(void)
{
	t_cuda_require();
	module_load_fn load = (module_load_fn)t_cu_sym("cuModuleLoadData");
	module_get_function_fn getfn = (module_get_function_fn)t_cu_sym("cuModuleGetFunction");
	module_unload_fn unload = (module_unload_fn)t_cu_sym("cuModuleUnload");
	launch_kernel_fn launch = (launch_kernel_fn)t_cu_sym("cuLaunchKernel");
	if (!load || !getfn || !unload || !launch)
		T_SKIP("the CUDA driver has no module API (stand-in driver)");
	CUmodule mod;
	CUresult cr = load(&mod, ocf_ptx_kernels);
	if (cr != CUDA_SUCCESS)
		T_SKIP("cuModuleLoadData failed (%d): no kernels on this driver", (int)cr);
	CUfunction checksum;
	T_CU(getfn(&checksum, mod, "ocf_checksum"));

	const char *path = t_make_pattern_file(FLEN, 0);
	int fd = t_open(path, O_RDONLY);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = t_register_fd(fd);

	CUstream s[NSTREAMS];
	s[0] = CU_STREAM_LEGACY;
	T_CU(cuStreamCreate(&s[1], 0));
	T_CU(cuStreamCreate(&s[2], CU_STREAM_NON_BLOCKING));
	T_CU(cuStreamCreate(&s[3], CU_STREAM_NON_BLOCKING));
	CUdeviceptr buf[NSTREAMS], out;
	for (int k = 0; k < NSTREAMS; k++)
		buf[k] = t_dev_alloc(SZ + 4096);
	T_CU(cuMemAlloc(&out, NSTREAMS * ROUNDS * sizeof(uint64_t)));
	uint64_t *sums;
	T_CU(cuMemHostAlloc((void **)&sums, NSTREAMS * ROUNDS * sizeof(uint64_t), 0));
	memset(sums, 0, NSTREAMS * ROUNDS * sizeof(uint64_t));
	static size_t size[NSTREAMS][ROUNDS];
	static off_t foff[NSTREAMS][ROUNDS], boff[NSTREAMS][ROUNDS];
	static ssize_t bytes[NSTREAMS][ROUNDS];

	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < NSTREAMS; k++) {
			size[k][r] = SZ;
			foff[k][r] = (off_t)((size_t)(k * ROUNDS + r) * SZ + 17 * (size_t)r);
			boff[k][r] = 0;
			bytes[k][r] = -12345;
			CUdeviceptr slot = out + (size_t)(k * ROUNDS + r) * sizeof(uint64_t);
			T_CU(cuMemsetD8Async(buf[k], (unsigned char)(0xC0 + r), SZ + 4096, s[k]));
			T_CUFILE_OK(cuFileReadAsync(fh, (void *)(uintptr_t)buf[k], &size[k][r], &foff[k][r],
						    &boff[k][r], &bytes[k][r], s[k]));
			T_CU(cuMemsetD8Async(slot, 0, sizeof(uint64_t), s[k]));
			uint64_t n = SZ;
			void *args[] = {&buf[k], &n, &slot};
			T_CU(launch(checksum, 64, 1, 1, 256, 1, 1, 0, s[k], args, NULL));
			T_CU(cuMemcpyDtoHAsync(&sums[k * ROUNDS + r], slot, sizeof(uint64_t), s[k]));
		}
	}
	for (int k = 0; k < NSTREAMS; k++)
		T_CU(cuStreamSynchronize(s[k]));

	uint8_t *data = malloc(SZ);
	T_ASSERT(data != NULL);
	for (int k = 0; k < NSTREAMS; k++) {
		for (int r = 0; r < ROUNDS; r++) {
			t_set_case("stream %d, round %d (file offset %lld)", k, r, (long long)foff[k][r]);
			T_EQ(bytes[k][r], SZ);
			T_EQ_U(t_pread_full(fd, data, SZ, (uint64_t)foff[k][r]), SZ);
			T_EQ_U(sums[k * ROUNDS + r], ocf_checksum_host(data, SZ));
		}
	}
	t_set_case("%s", "");
	free(data);

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	for (int k = 1; k < NSTREAMS; k++)
		T_CU(cuStreamDestroy(s[k]));
	for (int k = 0; k < NSTREAMS; k++)
		T_CU(cuMemFree(buf[k]));
	T_CU(cuMemFree(out));
	T_CU(cuMemFreeHost(sums));
	T_CU(unload(mod));
	close(fd);
	return T_EXIT_PASS;
}
