/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library: the counts of src/fault.h)
 * Processes of the library filling read-ahead windows at the same time on
 * one host share a number of fillers for the host (src/hostshare.c,
 * OPENCUFILE_READAHEAD_HOST_FILLERS), through a table in
 * OPENCUFILE_SHM_DIR (here a directory of the test's own):
 *   - a peer process reads a file in order, through its read-ahead; this
 *     process, started while the peer fills, counts two processes and
 *     reads the file in order with at most max(1, 2 / 2) = 1 helper filling
 *     a window at once (a process alone had 3 at once on the stand-in),
 *     every byte right;
 *   - the peer closes the driver: its slot is given back at once, and this
 *     process counts itself alone again;
 *   - a peer killed while it counts (no driver close) stops being counted
 *     once its stamp is stale (OPENCUFILE_HOST_SHARE_ACTIVE_MS, 500 ms for
 *     it);
 *   - a table that is a symbolic link, writable by others, or not ours
 *     (another magic) is not used - the process counts itself alone, the
 *     link's target is untouched - and reads still return every byte.
 */
#include "test.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fault.h"

#define FLEN (24 * T_MIB + 4321)
#define REQ T_MIB
#define GUARD 4096

static const char *path;

struct reader {
	CUfileHandle_t fh;
	int fd;
	CUdeviceptr dev;
	uint8_t *got, *truth;
};

static struct reader reader_open(void)
{
	struct reader r = {.fd = t_open(path, O_RDONLY)};
	r.fh = t_register_fd(r.fd);
	r.dev = t_dev_alloc(4 * REQ + GUARD);
	r.got = malloc(4 * REQ + GUARD);
	r.truth = malloc(4 * REQ);
	T_ASSERT(r.got && r.truth);
	return r;
}

static void reader_close(struct reader *r)
{
	T_CU(cuMemFree(r->dev));
	cuFileHandleDeregister(r->fh);
	close(r->fd);
	free(r->got);
	free(r->truth);
}

/* Reads the whole file in order, `len` at a time; every byte checked. */
static void read_all(struct reader *r, size_t len, const char *what)
{
	for (off_t off = 0; off < (off_t)FLEN; off += (off_t)len) {
		t_set_case("%s: %zu bytes at %lld", what, len, (long long)off);
		size_t left = (size_t)FLEN - (size_t)off, expect = len < left ? len : left;
		t_dev_fill(r->dev, T_POISON, len + GUARD);
		T_IO(cuFileRead(r->fh, (void *)(uintptr_t)r->dev, len, off, 0), (ssize_t)expect);
		t_dev_get(r->got, r->dev, len + GUARD);
		T_EQ_U(t_pread_full(r->fd, r->truth, expect, (uint64_t)off), expect);
		if (memcmp(r->got, r->truth, expect) != 0)
			T_FAIL("the read differs from the file");
		if (t_check_fill(r->got + expect, len - expect + GUARD, T_POISON, "past the bytes read"))
			T_FAIL("stored past the bytes read");
	}
}

/* Waits up to 300 s (under valgrind a pass over the file is slow) for a
 * byte on fd; returns it (0 on end of file). */
static char wait_byte(int fd, const char *what)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = poll(&p, 1, 300000);
	if (n <= 0)
		T_FAIL("%s: no word from the other process in 300 s", what);
	char c = 0;
	return read(fd, &c, 1) == 1 ? c : 0;
}

static bool byte_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) > 0;
}

static void say(int fd, char c)
{
	T_EQ(write(fd, &c, 1), 1);
}

/* The first peer: reads the file in order until told to stop, then closes
 * the driver (giving its slot back). */
static void peer_reader(int up, int down)
{
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	struct reader r = reader_open();
	read_all(&r, REQ, "peer");
	T_ASSERT(ocf_fault_host_share_peers(true) >= 1);
	say(up, 'a');
	while (!byte_ready(down))
		read_all(&r, REQ, "peer, while the other reads");
	reader_close(&r);
	T_CUFILE_OK(cuFileDriverClose());
	_exit(0);
}

/* The second peer: stamps itself once, says so, and waits to be killed. */
static void peer_stamper(int up, int down)
{
	setenv("OPENCUFILE_HOST_SHARE_ACTIVE_MS", "500", 1);
	char c = 0;
	if (read(down, &c, 1) != 1 || c != 'g') /* the test ended early */
		_exit(0);
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	T_ASSERT(ocf_fault_host_share_peers(true) >= 1);
	say(up, 'a');
	for (;;)
		pause();
}

static pid_t spawn(void (*fn)(int, int), int *up, int *down)
{
	int u[2], d[2];
	T_SYS(pipe(u));
	T_SYS(pipe(d));
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		close(u[0]);
		close(d[1]);
		fn(u[1], d[0]);
		_exit(0);
	}
	close(u[1]);
	close(d[0]);
	*up = u[0];
	*down = d[1];
	return pid;
}

/* Reopens the driver with the table at `dir` and says how many processes
 * it counts (-1: sharing off). */
static int reopen_with(const char *dir)
{
	T_CUFILE_OK(cuFileDriverClose());
	setenv("OPENCUFILE_SHM_DIR", dir, 1);
	T_CUFILE_OK(cuFileDriverOpen());
	return ocf_fault_host_share_peers(true);
}

static void write_file(const char *p, size_t len, uint8_t byte, mode_t mode)
{
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, mode);
	T_ASSERT(fd >= 0);
	uint8_t *b = malloc(len);
	T_ASSERT(b);
	memset(b, byte, len);
	T_EQ(write(fd, b, len), (long long)len);
	free(b);
	T_SYS(fchmod(fd, mode));
	close(fd);
}

int main(void)
{
	setenv("OPENCUFILE_IO_THREADS", "8", 0);
	setenv("OPENCUFILE_READAHEAD_HOST_FILLERS", "2", 1);
	setenv("OPENCUFILE_HOST_SHARE_ACTIVE_MS", "60000", 1);
	unsetenv("OPENCUFILE_READAHEAD_FILLERS");
	char dir[512], bad[512], table[600], target[600];
	snprintf(dir, sizeof(dir), "%s/ocf_hostshare_%d", t_dir(), (int)getpid());
	snprintf(bad, sizeof(bad), "%s/ocf_hostshare_bad_%d", t_dir(), (int)getpid());
	T_SYS(mkdir(dir, 0700));
	T_SYS(mkdir(bad, 0700));
	setenv("OPENCUFILE_SHM_DIR", dir, 1);
	path = t_make_pattern_file(FLEN, 0);
	t_require_local_odirect_fs(path);

	/* Both peers are forked before this process touches CUDA. */
	int up1, down1, up2, down2;
	pid_t reader = spawn(peer_reader, &up1, &down1);
	pid_t stamper = spawn(peer_stamper, &up2, &down2);

	t_set_case("the first peer reads, alone");
	T_EQ(wait_byte(up1, "the first peer's first pass"), 'a');
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	t_set_case("this process starts while the peer fills");
	T_EQ(ocf_fault_host_share_peers(true), 2);
	ocf_fault_ra_fill_peak_reset();
	unsigned long s0 = ocf_fault_ra_served();
	struct reader r = reader_open();
	read_all(&r, REQ, "two processes, 1 MiB in order");
	read_all(&r, 4 * REQ, "two processes, 4 MiB in order");
	t_set_case("two processes fill: at most one helper a window");
	T_EQ(ocf_fault_host_share_peers(true), 2);
	printf("two processes filling: most helpers on one window %d, reads served %lu\n", ocf_fault_ra_fill_peak(),
	       ocf_fault_ra_served() - s0);
	T_GT(ocf_fault_ra_served() - s0, 10);
	T_ASSERT(ocf_fault_ra_fill_peak() >= 1);
	T_ASSERT(ocf_fault_ra_fill_peak() <= 1);

	t_set_case("the first peer closes the driver");
	say(down1, 's');
	T_CHILD_OK(t_wait_child(reader, 120000, "first peer"), "first peer");
	T_EQ(ocf_fault_host_share_peers(true), 1);
	read_all(&r, REQ, "alone again");

	t_set_case("a peer killed while it counts");
	say(down2, 'g');
	T_EQ(wait_byte(up2, "the stamper"), 'a');
	T_EQ(ocf_fault_host_share_peers(true), 2);
	T_SYS(kill(stamper, SIGKILL));
	int st;
	T_EQ(waitpid(stamper, &st, 0), stamper);
	int n = 2;
	for (int waited = 0; waited < 30000 && (n = ocf_fault_host_share_peers(true)) != 1; waited += 20)
		usleep(20000);
	T_EQ(n, 1);
	reader_close(&r);

	/* Tables that are not used. */
	snprintf(table, sizeof(table), "%s/opencufile-readahead-v1-%u", bad, (unsigned)geteuid());
	snprintf(target, sizeof(target), "%s/target", bad);
	t_set_case("the table is a symbolic link");
	write_file(target, 100, 0x5a, 0600);
	T_SYS(symlink(target, table));
	T_EQ(reopen_with(bad), -1);
	struct stat sb;
	T_SYS(stat(target, &sb));
	T_EQ(sb.st_size, 100);
	T_SYS(unlink(table));
	t_set_case("the table is writable by others");
	write_file(table, 8192, 0, 0622);
	T_EQ(reopen_with(bad), -1);
	T_SYS(unlink(table));
	t_set_case("the table is not ours");
	write_file(table, 8192, 0xab, 0600);
	T_EQ(reopen_with(bad), -1);
	r = reader_open();
	read_all(&r, REQ, "sharing off");
	reader_close(&r);
	t_set_case("a good table again");
	T_EQ(reopen_with(dir), 1);

	T_CUFILE_OK(cuFileDriverClose());
	unlink(table);
	unlink(target);
	rmdir(bad);
	snprintf(table, sizeof(table), "%s/opencufile-readahead-v1-%u", dir, (unsigned)geteuid());
	unlink(table);
	rmdir(dir);
	t_cleanup_files();
	printf("PASS\n");
	return T_EXIT_PASS;
}
