/* SPDX-License-Identifier: Apache-2.0 */
/* Staging memory of a GPU is placed on the GPU's NUMA node: with a node
 * (forced here through OPENCUFILE_NUMA_NODE=0, since sysfs of a test
 * machine has no GPU), the arenas are mappings with a "prefer:0" policy in
 * /proc/self/numa_maps, reads through them deliver the right data, and
 * driver close unmaps them.  Without a node on a one-node machine, staging
 * memory comes from cuMemHostAlloc and carries no such policy. */
#include "test.h"

/* Number of mappings whose NUMA policy prefers node 0. */
static int preferring_node0(void)
{
	FILE *f = fopen("/proc/self/numa_maps", "re");
	if (!f)
		return -1;
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " prefer:0 ") || strstr(line, " prefer (many):0 "))
			n++;
	fclose(f);
	return n;
}

static void read_some(const char *data)
{
	int fd = t_open(data, O_RDONLY);
	CUfileHandle_t fh = t_register_fd(fd);
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, 3u << 20);
	T_EQ(t_read_and_verify(fh, &m, 0, 3u << 20, 4096, 0, 3u << 20, 0), 0);
	T_EQ(t_read_and_verify(fh, &m, 4096, 8192, 100, 0, 8192, 0), 0);
	t_mem_free(&m);
	cuFileHandleDeregister(fh);
	close(fd);
}

int main(void)
{
	t_cuda_require();
	if (preferring_node0() < 0)
		return T_EXIT_SKIP; /* kernel without NUMA support: nothing to observe */
	const char *data = t_make_pattern_file(4u << 20, 0);
	int before = preferring_node0();

	setenv("OPENCUFILE_NUMA_NODE", "0", 1);
	T_CUFILE_OK(cuFileDriverOpen());
	read_some(data);
	int during = preferring_node0();
	T_CUFILE_OK(cuFileDriverClose());
	T_GT(during, before);
	T_EQ(preferring_node0(), before);

	unsetenv("OPENCUFILE_NUMA_NODE");
	char online[64] = "";
	FILE *f = fopen("/sys/devices/system/node/online", "re");
	if (f) {
		if (!fgets(online, sizeof(online), f))
			online[0] = '\0';
		fclose(f);
	}
	T_CUFILE_OK(cuFileDriverOpen());
	read_some(data);
	if (!strpbrk(online, ",-")) /* one node: nothing to place */
		T_EQ(preferring_node0(), before);
	T_CUFILE_OK(cuFileDriverClose());
	return T_EXIT_PASS;
}
