/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver only) After a session of the usual calls — open, register
 * handles and buffers, read and write host and device memory through
 * buffered and O_DIRECT fds — closing the driver gives back everything the
 * library took: pinned host allocations, host registrations, streams and
 * device allocations are back to their starting counts, and so is the
 * number of open file descriptors.  Three rounds, so a reopen is checked too.
 */
#include "test.h"
#include "fakecuda.h"

struct counts {
	size_t pinned, host_reg, streams, dev_allocs;
	int fds;
};

static void snap(struct counts *c)
{
	c->pinned = fakecuda_live_pinned_allocations();
	c->host_reg = fakecuda_live_host_registrations();
	c->streams = fakecuda_live_streams();
	c->dev_allocs = fakecuda_live_device_allocations();
	c->fds = t_count_fds();
}

static void compare(const struct counts *a, const struct counts *b)
{
	T_EQ_U(b->pinned, a->pinned);
	T_EQ_U(b->host_reg, a->host_reg);
	T_EQ_U(b->streams, a->streams);
	T_EQ_U(b->dev_allocs, a->dev_allocs);
	t_expect_fds(b->fds, a->fds);
}

static void session(const char *path, bool odirect, struct t_mem *dev, struct t_mem *host)
{
	int fd = t_open(path, O_RDWR), dfd = odirect ? t_open(path, O_RDWR | O_DIRECT) : -1;
	int check_fd = t_open(path, O_RDWR);
	uint64_t flen = t_file_size(check_fd);

	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fhs[2] = { t_register_fd(fd), dfd >= 0 ? t_register_fd(dfd) : NULL };
	struct t_mem *ms[2] = { dev, host };
	for (int reg = 0; reg < 2; reg++) {
		/* Round reg=1 registers the buffers and leaves them for the close. */
		for (int k = 0; k < 2 && reg; k++)
			T_CUFILE_OK(cuFileBufRegister(ms[k]->ptr, ms[k]->len, 0));
		for (int f = 0; f < 2; f++) {
			if (!fhs[f])
				continue;
			for (int k = 0; k < 2; k++) {
				t_set_case("fd %d reg %d %s", f, reg, t_mem_kind_name(ms[k]->kind));
				if (t_read_and_verify(fhs[f], ms[k], 0, 3 * T_MIB + 1, 4095, 3,
						      3 * T_MIB + 1, 0))
					T_FAIL("bad read");
				if (t_write_and_verify(fhs[f], ms[k], 0, 1 * T_MIB + 5, 1, 3, check_fd,
						       flen, 4, 0))
					T_FAIL("bad write");
			}
		}
	}
	/* Deregister one handle, leave the other and the buffers registered. */
	cuFileHandleDeregister(fhs[0]);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);
	t_set_case("%s", "");
	close(check_fd);
	if (dfd >= 0)
		close(dfd);
	close(fd);
}

int main(void)
{
	t_cuda_require();
	const char *path = t_make_pattern_file(8 * T_MIB, 0);
	bool odirect = t_odirect_supported(path);
	struct t_mem dev, host;

	t_mem_alloc(&dev, T_MEM_DEVICE, 4 * T_MIB);
	t_mem_alloc(&host, T_MEM_HOST_MALLOC, 4 * T_MIB);

	struct counts start, now;
	snap(&start);
	fprintf(stderr, "start: pinned %zu host_reg %zu streams %zu dev %zu fds %d\n",
		start.pinned, start.host_reg, start.streams, start.dev_allocs, start.fds);
	for (int round = 0; round < 3; round++) {
		session(path, odirect, &dev, &host);
		snap(&now);
		fprintf(stderr, "round %d: pinned %zu host_reg %zu streams %zu dev %zu fds %d\n",
			round, now.pinned, now.host_reg, now.streams, now.dev_allocs, now.fds);
		t_set_case("after round %d", round);
		compare(&start, &now);
	}
	t_mem_free(&dev);
	t_mem_free(&host);
	return 0;
}
