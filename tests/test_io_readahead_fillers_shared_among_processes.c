/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library: the counts of src/fault.h)
 * Processes of the library filling read-ahead windows at the same time on
 * one host share a number of fillers for the host (src/hostshare.c,
 * OPENCUFILE_READAHEAD_HOST_FILLERS, 2 here), through a table in
 * OPENCUFILE_SHM_DIR (a directory of the test's own).  This process reads
 * a file in order (1 MiB and 4 MiB calls, every byte and the bytes past
 * each request checked) through these phases:
 *   - alone: it counts one process and its windows fill with no bound
 *     (the most helpers filling one window at once is printed: 3 on the
 *     stand-in, where the bound below is 1);
 *   - a peer process starts stamping while this one fills: the count
 *     becomes two and, once the helpers that were filling have given their
 *     places up (a pass over the file later), at most max(1, 2 / 2) = 1
 *     helper fills a window at once;
 *   - the peer is killed (no driver close): it stops being counted once
 *     its stamp is stale (OPENCUFILE_HOST_SHARE_ACTIVE_MS, 3 s for it: a
 *     peer that stamps every 20 ms stays counted while a loaded machine
 *     keeps it off a CPU for a second or two);
 *   - a second peer reads the same file in order through its own
 *     read-ahead: two processes counted, at most one helper a window here;
 *     the peer closes the driver and its slot is given back at once;
 *   - tables that are a symbolic link, a hard link, writable by others,
 *     of another size or not ours (another magic) are not used: the
 *     process counts itself alone (-1: sharing off), nothing is written
 *     into them, and reads still return every byte.
 * The peers are forked before this process touches CUDA and die with it.
 */
#include "test.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
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

static bool byte_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return fd >= 0 && poll(&p, 1, 0) > 0;
}

/* Reads the whole file in order, `len` at a time, every byte checked;
 * stops early (false) once a byte waits on `stop` (-1: never). */
static bool read_all(struct reader *r, size_t len, int stop, const char *what)
{
	for (off_t off = 0; off < (off_t)FLEN; off += (off_t)len) {
		if (byte_ready(stop))
			return false;
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
	return true;
}

static void pass(struct reader *r, int stop, const char *what)
{
	if (read_all(r, REQ, stop, what))
		read_all(r, 4 * REQ, stop, what);
}

/* Waits up to 300 s (a pass over the file is slow under valgrind) for a
 * byte on fd; returns it (0 on end of file). */
static char wait_byte(int fd, const char *what)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 300000) <= 0)
		T_FAIL("%s: no word from the other process in 300 s", what);
	char c = 0;
	return read(fd, &c, 1) == 1 ? c : 0;
}

static void say(int fd, char c)
{
	T_EQ(write(fd, &c, 1), 1);
}

/* A peer's start: waits for 'g' (end of file: the test ended early). */
static void peer_wait_go(int down)
{
	char c = 0;
	if (read(down, &c, 1) != 1 || c != 'g')
		_exit(0);
}

/* The stamping peer: stamps itself every 20 ms (its stamps last 3 s),
 * says so after the first, until it is killed. */
static void peer_stamper(int up, int down)
{
	setenv("OPENCUFILE_HOST_SHARE_ACTIVE_MS", "3000", 1);
	peer_wait_go(down);
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	T_ASSERT(ocf_fault_host_share_peers(true) >= 1);
	say(up, 'a');
	for (;;) {
		ocf_fault_host_share_peers(true);
		usleep(20000);
	}
}

/* The reading peer: reads the file in order; says so after its first pass
 * and reads on until told to stop, then closes the driver (giving its
 * slot back). */
static void peer_reader(int up, int down)
{
	peer_wait_go(down);
	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	struct reader r = reader_open();
	read_all(&r, REQ, -1, "peer");
	T_ASSERT(ocf_fault_host_share_peers(true) >= 1);
	say(up, 'a');
	while (read_all(&r, REQ, down, "peer, while the other reads"))
		;
	reader_close(&r);
	T_CUFILE_OK(cuFileDriverClose());
	_exit(0);
}

static pid_t spawn(void (*fn)(int, int), int *up, int *down)
{
	int u[2], d[2];
	T_SYS(pipe(u));
	T_SYS(pipe(d));
	pid_t parent = getpid(), pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		t_nfiles = 0; /* the parent's files are the parent's to remove */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
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

static void child_done(pid_t pid, const char *what)
{
	int st = t_wait_child(pid, 300000, what);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		T_SKIP("%s skipped", what);
	T_CHILD_OK(st, what);
}

/* Reads passes over the file until the word `c` comes on `from`. */
static void read_until(struct reader *r, int from, char c, const char *what)
{
	while (!byte_ready(from))
		pass(r, from, what);
	T_EQ(wait_byte(from, what), c);
}

/* With a peer counted: a pass over the file for the helpers above the
 * bound to give their places up, then a pass with at most one helper
 * filling a window at once (2 fillers for the host, two processes), most
 * reads served from the windows, the peer counted throughout. */
static void bounded_passes(struct reader *r, const char *what)
{
	t_set_case("%s", what);
	T_EQ(ocf_fault_host_share_peers(true), 2);
	pass(r, -1, "helpers above the bound leaving");
	ocf_fault_ra_fill_peak_reset();
	unsigned long s0 = ocf_fault_ra_served();
	pass(r, -1, what);
	t_set_case("%s", what);
	T_EQ(ocf_fault_host_share_peers(true), 2);
	printf("%s: most helpers filling one window at once %d, reads served %lu\n", what, ocf_fault_ra_fill_peak(),
	       ocf_fault_ra_served() - s0);
	T_GT(ocf_fault_ra_served() - s0, 10);
	T_ASSERT(ocf_fault_ra_fill_peak() <= 1);
}

/* Tables the library must not use (hostshare.c), each made afresh. */
static const struct unusable_table {
	const char *what;
	enum { NO_LINK, SYMBOLIC, HARD } link; /* the table a link to a file "other" */
	size_t len;
	uint8_t byte;
	mode_t mode;
} unusable[] = {
	{"is a symbolic link", SYMBOLIC, 100, 0x5a, 0600},
	{"is a hard link", HARD, 0, 0, 0600},
	{"is writable by others", NO_LINK, 8192, 0, 0622},
	{"has another size", NO_LINK, 4096, 0, 0600},
	{"is not ours", NO_LINK, 8192, 0xab, 0600},
};

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
	uint8_t *b = malloc(len ? len : 1);
	T_ASSERT(b);
	memset(b, byte, len);
	T_EQ(write(fd, b, len), (long long)len);
	free(b);
	T_SYS(fchmod(fd, mode));
	close(fd);
}

static void expect_untouched(const char *p, size_t len, uint8_t byte)
{
	uint8_t b[8192];
	int fd = t_open(p, O_RDONLY);
	T_EQ_U(t_file_size(fd), len);
	T_EQ_U(t_pread_full(fd, b, len, 0), len);
	close(fd);
	if (t_check_fill(b, len, byte, "a table not used"))
		T_FAIL("a table that must not be used was written");
}

int main(void)
{
	setenv("OPENCUFILE_IO_THREADS", "8", 0);
	setenv("OPENCUFILE_READAHEAD_HOST_FILLERS", "2", 1);
	setenv("OPENCUFILE_HOST_SHARE_ACTIVE_MS", "60000", 1);
	unsetenv("OPENCUFILE_READAHEAD_FILLERS");
	char dir[512], bad[512], table[600], other[600];
	snprintf(dir, sizeof(dir), "%s/ocf_hostshare_%d", t_dir(), (int)getpid());
	snprintf(bad, sizeof(bad), "%s/ocf_hostshare_bad_%d", t_dir(), (int)getpid());
	T_SYS(mkdir(dir, 0700));
	T_SYS(mkdir(bad, 0700));
	setenv("OPENCUFILE_SHM_DIR", dir, 1);
	path = t_make_pattern_file(FLEN, 0);
	t_require_local_odirect_fs(path);

	/* Both peers are forked before this process touches CUDA. */
	int up1, down1, up2, down2;
	pid_t stamper = spawn(peer_stamper, &up1, &down1);
	pid_t reader = spawn(peer_reader, &up2, &down2);

	t_cuda_require();
	T_CUFILE_OK(cuFileDriverOpen());
	struct reader r = reader_open();
	t_set_case("alone");
	T_EQ(ocf_fault_host_share_peers(true), 1);
	unsigned long s0 = ocf_fault_ra_served();
	pass(&r, -1, "alone");
	T_GT(ocf_fault_ra_served() - s0, 10);
	int alone_peak = ocf_fault_ra_fill_peak();
	printf("alone: most helpers filling one window at once %d\n", alone_peak);
	T_EQ(ocf_fault_host_share_peers(true), 1);

	/* The bound shrinks while this process fills. */
	say(down1, 'g');
	read_until(&r, up1, 'a', "alone, a peer starting");
	bounded_passes(&r, "a peer stamping");

	t_set_case("the stamping peer killed");
	T_SYS(kill(stamper, SIGKILL));
	int st;
	T_EQ(waitpid(stamper, &st, 0), stamper);
	int n = 2;
	for (int waited = 0; waited < 30000 && (n = ocf_fault_host_share_peers(true)) != 1; waited += 20)
		usleep(20000);
	T_EQ(n, 1);

	/* Two processes reading at once. */
	say(down2, 'g');
	read_until(&r, up2, 'a', "a peer reading its first pass");
	bounded_passes(&r, "two processes reading");
	t_set_case("the reading peer closes the driver");
	say(down2, 's');
	child_done(reader, "reading peer");
	T_EQ(ocf_fault_host_share_peers(true), 1);
	read_all(&r, REQ, -1, "alone again");
	reader_close(&r);

	/* Tables that are not used. */
	snprintf(table, sizeof(table), "%s/opencufile-readahead-v2-%u", bad, (unsigned)geteuid());
	snprintf(other, sizeof(other), "%s/other", bad);
	const size_t n_unusable = sizeof(unusable) / sizeof(unusable[0]);
	for (size_t i = 0; i < n_unusable; i++) {
		const struct unusable_table *u = &unusable[i];
		/* A link's target is the file written, and must stay as it was. */
		const char *file = u->link == NO_LINK ? table : other;
		t_set_case("the table %s", u->what);
		write_file(file, u->len, u->byte, u->mode);
		if (u->link == SYMBOLIC)
			T_SYS(symlink(other, table));
		else if (u->link == HARD)
			T_SYS(link(other, table));
		T_EQ(reopen_with(bad), -1);
		expect_untouched(file, u->len, u->byte);
		/* The last stays for the reads below (sharing off). */
		if (i + 1 < n_unusable)
			T_SYS(unlink(table));
	}
	r = reader_open();
	read_all(&r, REQ, -1, "sharing off");
	reader_close(&r);
	t_set_case("a good table again");
	T_EQ(reopen_with(dir), 1);

	T_CUFILE_OK(cuFileDriverClose());
	unlink(table);
	unlink(other);
	rmdir(bad);
	snprintf(table, sizeof(table), "%s/opencufile-readahead-v2-%u", dir, (unsigned)geteuid());
	unlink(table);
	rmdir(dir);
	t_cleanup_files();
	printf("PASS\n");
	return T_EXIT_PASS;
}
