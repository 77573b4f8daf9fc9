/* SPDX-License-Identifier: Apache-2.0 */
/* Counters kept per thread sum exactly, including those of threads that
 * have exited and of new threads that reuse their counter blocks. */
#include <pthread.h>

#include "config_test_util.h"

static CUfileHandle_t fh;
#define OPS 500

static void *worker(void *arg)
{
	(void)arg;
	char buf[4096];
	for (int i = 0; i < OPS; i++)
		if (cuFileRead(fh, buf, sizeof(buf), 0, 0) != 4096)
			return (void *)1;
	return NULL;
}

int main(void)
{
	t_clear_config_env();
	T_CUFILE_OK(cuFileSetStatsLevel(1));
	const char *path = t_make_pattern_file(4096, 0);
	int fd = t_open(path, O_RDONLY);
	fh = t_register_fd(fd);
	for (int round = 0; round < 3; round++) {
		pthread_t th[4];
		for (int i = 0; i < 4; i++)
			T_EQ(pthread_create(&th[i], NULL, worker, NULL), 0);
		for (int i = 0; i < 4; i++) {
			void *r;
			pthread_join(th[i], &r);
			T_EQ_PTR(r, NULL);
		}
		CUfileStatsLevel1_t s;
		T_CUFILE_OK(cuFileGetStatsL1(&s));
		t_set_case("round %d", round);
		T_EQ_U(s.read_ops.ok, (uint64_t)(round + 1) * 4 * OPS);
		T_EQ_U(s.read_bytes, (uint64_t)(round + 1) * 4 * OPS * 4096);
	}
	cuFileHandleDeregister(fh);
	close(fd);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
