/* SPDX-License-Identifier: Apache-2.0 */
/* Level 3: per-GPU entries carry the GPU's UUID; device-memory I/O is
 * counted on its GPU (all of it POSIX here), with unaligned requests split
 * out; host-memory I/O is not counted on any GPU. */
#include "config_test_util.h"

int main(void)
{
	t_clear_config_env();
	t_cuda_require();
	T_CUFILE_OK(cuFileSetStatsLevel(3));
	const char *path = t_make_pattern_file(T_MIB, 0);
	int fd = t_open(path, O_RDWR);
	CUfileHandle_t fh = t_register_fd(fd);
	struct t_mem dev;
	t_mem_alloc(&dev, T_MEM_DEVICE, T_MIB);
	T_IO(cuFileRead(fh, dev.ptr, 65536, 0, 0), 65536);
	T_IO(cuFileRead(fh, dev.ptr, 1000, 4096, 0), 1000);   /* unaligned size */
	T_IO(cuFileWrite(fh, dev.ptr, 4096, 4096, 100), 4096); /* unaligned memory */
	char host[4096];
	T_IO(cuFileRead(fh, host, sizeof(host), 0, 0), 4096);

	CUfileStatsLevel3_t *s = malloc(sizeof(*s));
	T_CUFILE_OK(cuFileGetStatsL3(s));
	int n = 0;
	T_CU(cuDeviceGetCount(&n));
	T_EQ(s->num_gpus, n > 16 ? 16 : n);
	for (int i = 0; i < (int)s->num_gpus; i++) {
		CUuuid u;
		CUdevice d;
		T_CU(cuDeviceGet(&d, i));
		T_CU(cuDeviceGetUuid(&u, d));
		t_set_case("gpu %d", i);
		T_ASSERT(memcmp(u.bytes, s->per_gpu_stats[i].uuid, 16) == 0);
	}
	t_set_case("%s", "");
	const CUfilePerGpuStats_t *g = &s->per_gpu_stats[t_cu_dev];
	T_EQ_U(g->n_total_reads, 2);
	T_EQ_U(g->n_posix_reads, 2);
	T_EQ_U(g->n_unaligned_reads, 1);
	T_EQ_U(g->read_bytes, 65536 + 1000);
	T_EQ_U(g->n_total_writes, 1);
	T_EQ_U(g->n_unaligned_writes, 1);
	T_EQ_U(g->writes_bytes, 4096);
	T_EQ_U(g->n_p2p_reads + g->n_nvfs_reads, 0);
	T_EQ_U(s->detailed.basic.read_ops.ok, 3); /* the host read is counted globally */
	free(s);
	cuFileHandleDeregister(fh);
	close(fd);
	t_mem_free(&dev);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
