/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fake driver; root for the small file systems) A write that fails loses
 * nothing.  Every case runs each path a write can take - stores through
 * the file's mapping (a buffered handle open for reading and writing),
 * pwrite pieces (a buffered handle open write-only), O_DIRECT, a batch
 * entry, a stream operation, cuFileWritev - beside one pwrite of the same
 * bytes from host memory on a twin file, and checks what the library
 * promises (docs/architecture.md, "Writes that fail"):
 *   - a call that returns n leaves exactly its first n bytes changed and
 *     no others, the file as long as that pwrite would leave it (checked
 *     byte for byte against a copy of the file taken before);
 *   - a call that returns -1 for ENOSPC, EFBIG or EROFS changed nothing;
 *   - no call removes bytes another call reported;
 *   - a file system that refuses writes gets -1 and the errno pwrite gets;
 *   - no signal pwrite would not raise.
 * Cases:
 *   read_only      ext4 (errors=remount-ro) that turns itself read-only
 *                  after an error (/sys/fs/ext4/DEV/trigger_fs_error) under
 *                  cached files whose handles were registered before: every
 *                  write fails with EROFS, the page cache and, after a
 *                  remount, the disk hold the old bytes
 *   second_writer  a full disk; a 60 MiB write at 0 and, while it runs, a
 *                  4 MiB write inside its range that succeeds: the first
 *                  comes back short and the second's bytes stay
 *   hole_full      a 2 MiB hole followed by cached data, 512 KiB free: a
 *                  24 MiB write over both leaves exactly what it reports
 *   fsize          RLIMIT_FSIZE inside a cached and a sparse file (SIGXFSZ
 *                  ignored): cut at the limit as pwrite is, nothing past it
 *   sigxfsz        RLIMIT_FSIZE with SIGXFSZ at its default action, in a
 *                  child per path: a write across the limit returns the
 *                  bytes below it and the child lives; one that starts at
 *                  the limit raises the signal, as pwrite does
 *   test_write_failures_leave_exactly_what_they_report CASE
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "async_test_util.h"
#include "test.h"

#define BUF (64 * T_MIB)
#define OCF_TEST_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OCF_TEST_MAX(a, b) ((a) > (b) ? (a) : (b))
static CUdeviceptr dev;
static uint8_t *host;

enum path { P_STORES, P_PWRITE, P_DIRECT, P_BATCH, P_STREAM, P_VEC, NPATHS };
static const char *const path_names[NPATHS] = {"stores", "pwrite", "direct", "batch", "stream", "writev"};

static int path_flags(enum path p)
{
	return p == P_PWRITE ? O_WRONLY : p == P_DIRECT ? O_RDWR | O_DIRECT : O_RDWR;
}

struct target {
	enum path p;
	int fd;
	CUfileHandle_t fh;
};

static void target_open(struct target *t, const char *file, enum path p)
{
	t->p = p;
	t->fd = t_open(file, path_flags(p));
	t->fh = t_register_fd(t->fd);
}

static void target_close(struct target *t)
{
	cuFileHandleDeregister(t->fh);
	close(t->fd);
}

struct res {
	ssize_t r;
	int err; /* errno where the path reports one (0: it does not) */
};

/* The device buffer and the host buffer hold pattern `seed` as for the
 * file range [off, off+n). */
static void source(size_t n, off_t off, uint32_t seed)
{
	T_ASSERT(n <= BUF);
	t_fill_pattern(host, n, (uint64_t)off, seed);
	t_dev_put(dev, host, n);
}

/* n bytes of the device buffer to [off, off+n) of t's file, by t's path. */
static struct res do_write(struct target *t, size_t n, off_t off)
{
	struct res s = {0, 0};
	switch (t->p) {
	case P_STORES:
	case P_PWRITE:
	case P_DIRECT:
		errno = 0;
		s.r = cuFileWrite(t->fh, (void *)dev, n, off, 0);
		s.err = s.r < 0 ? errno : 0;
		break;
	case P_VEC: {
		CUfileIOVec_t iov[2] = {{(void *)dev, n / 2}, {(void *)(dev + n / 2), n - n / 2}};
		errno = 0;
		s.r = cuFileWritev(t->fh, iov, 2, off, 0);
		s.err = s.r < 0 ? errno : 0;
		break;
	}
	case P_BATCH: {
		CUfileBatchHandle_t b;
		T_CUFILE_OK(cuFileBatchIOSetUp(&b, 1));
		CUfileIOParams_t io = t_batch_io(CUFILE_WRITE, t->fh, (void *)dev, n, off, 0, NULL);
		T_CUFILE_OK(cuFileBatchIOSubmit(b, 1, &io, 0));
		CUfileIOEvents_t ev;
		t_batch_collect(b, 1, &ev);
		cuFileBatchIODestroy(b);
		s.r = ev.status == CUFILE_COMPLETE ? (ssize_t)ev.ret : -1;
		break;
	}
	case P_STREAM: {
		CUstream st;
		T_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
		size_t size = n;
		off_t foff = off, boff = 0;
		ssize_t done = 0;
		T_CUFILE_OK(cuFileWriteAsync(t->fh, (void *)dev, &size, &foff, &boff, &done, st));
		T_CU(cuStreamSynchronize(st));
		T_CU(cuStreamDestroy(st));
		s.r = done < 0 ? -1 : done;
		break;
	}
	default:
		T_FAIL("no path %d", (int)t->p);
	}
	return s;
}

/* The twin's descriptor for path p: the same kind of descriptor (buffered,
 * or O_DIRECT for the O_DIRECT path: the host buffer is aligned). */
static int twin_open(const char *file, enum path p)
{
	return t_open(file, p == P_DIRECT ? O_RDWR | O_DIRECT : O_RDWR);
}

/* One pwrite of the host buffer's n bytes at off: the reference. */
static struct res twin_write(int fd, size_t n, off_t off)
{
	struct res s;
	do {
		errno = 0;
		s.r = pwrite(fd, host, n, off);
	} while (s.r < 0 && errno == EINTR);
	s.err = s.r < 0 ? errno : 0;
	return s;
}

/* ---------------------------------------------------- the file, compared */

struct snap {
	uint8_t *b;
	off_t size;
};

static struct snap snap_take(const char *file)
{
	int fd = t_open(file, O_RDONLY);
	struct snap s = {NULL, (off_t)t_file_size(fd)};
	s.b = malloc(s.size ? (size_t)s.size : 1);
	T_ASSERT(s.b != NULL);
	T_EQ(t_pread_full(fd, s.b, (size_t)s.size, 0), (size_t)s.size);
	close(fd);
	return s;
}

static void snap_free(struct snap *s)
{
	free(s->b);
	s->b = NULL;
}

/* The first byte of [lo, hi) of v that is not what `want` holds there
 * (want NULL: zeros), or hi. */
static off_t first_diff(const uint8_t *v, const uint8_t *want, off_t lo, off_t hi)
{
	static const uint8_t zeros[64 * 1024];
	for (off_t at = lo; at < hi;) {
		size_t k = (size_t)OCF_TEST_MIN(hi - at, (off_t)sizeof(zeros));
		const uint8_t *w = want ? want + (at - lo) : zeros;
		if (memcmp(v + at, w, k) != 0)
			for (size_t j = 0; j < k; j++)
				if (v[at + (off_t)j] != w[j])
					return at + (off_t)j;
		at += (off_t)k;
	}
	return hi;
}

/* The file holds what `before` held with [off, off+r) replaced by the
 * host buffer's first r bytes (r <= 0: nothing), and is as long as a pwrite
 * of those r bytes would leave it. */
static void expect_exactly(const char *file, const struct snap *before, off_t off, ssize_t r, const char *what)
{
	struct snap now = snap_take(file);
	off_t want = before->size, wr = r > 0 ? (off_t)r : 0;
	if (off + wr > want)
		want = off + wr;
	if (now.size != want)
		T_FAIL("%s: the file is %lld bytes, want %lld (was %lld; the call returned %zd at %lld)", what,
		       (long long)now.size, (long long)want, (long long)before->size, r, (long long)off);
	/* The old bytes before the write's range, zeros between the old end
	 * and the range, the range, the old bytes after it. */
	const struct {
		off_t lo, hi;
		const uint8_t *w; /* the bytes wanted at lo (NULL: zeros) */
	} seg[4] = {
	    {0, OCF_TEST_MIN(off, before->size), before->b},
	    {before->size, off, NULL},
	    {off, off + wr, host},
	    {off + wr, before->size, before->b + (off + wr < before->size ? off + wr : 0)},
	};
	off_t bad = want;
	for (int k = 0; k < 4 && bad == want; k++)
		if (seg[k].lo < seg[k].hi && first_diff(now.b, seg[k].w, seg[k].lo, seg[k].hi) < seg[k].hi)
			bad = first_diff(now.b, seg[k].w, seg[k].lo, seg[k].hi);
	if (bad < want) {
		bool reported = bad >= off && bad < off + wr;
		uint8_t w = reported ? host[bad - off] : bad < before->size ? before->b[bad] : 0;
		T_FAIL("%s: byte %lld is 0x%02x, want 0x%02x (the call returned %zd at %lld: %s)", what, (long long)bad,
		       now.b[bad], w, r, (long long)off, reported ? "a byte it reported" : "a byte it did not report");
	}
	snap_free(&now);
}

/* Our result as the twin's: the same count, or both -1 with the same errno
 * (where the path reports one). */
static void expect_as_twin(struct res ours, struct res twin, const char *what)
{
	if (ours.r != twin.r)
		T_FAIL("%s: returned %zd, pwrite %zd (errno %s)", what, ours.r, twin.r, strerror(twin.err));
	if (ours.r < 0 && ours.err && ours.err != twin.err)
		T_FAIL("%s: errno %s, pwrite's %s", what, strerror(ours.err), strerror(twin.err));
}

/* ------------------------------------------------------ small file systems */

struct image {
	char dir[512];
	char dev[64]; /* the block device's name, e.g. loop3 */
};

static struct image *mounted[4];

static void image_unmount(struct image *im)
{
	if (!im->dir[0])
		return;
	if (umount2(im->dir, 0) != 0)
		umount2(im->dir, MNT_DETACH);
	for (int i = 0; i < 4; i++)
		if (mounted[i] == im)
			mounted[i] = NULL;
}

static void unmount_all(void)
{
	for (int i = 0; i < 4; i++)
		if (mounted[i]) {
			image_unmount(mounted[i]);
			rmdir(mounted[i]->dir);
		}
}

static bool root_or_note(const char *what)
{
	if (geteuid() == 0)
		return true;
	fprintf(stderr, "note: not root: no small file system can be mounted, %s is not run\n", what);
	return false;
}

/* Makes and mounts an ext4 image of `size` (mkfs.ext4 `mkfs` options,
 * mount options `opts`): its directory in im->dir. */
static void image_make(struct image *im, const char *name, const char *size, const char *mkfs, const char *opts)
{
	char img[600], cmd[2400];
	snprintf(im->dir, sizeof(im->dir), "%s/ocf_wf_%s_%d.mnt", t_dir(), name, (int)getpid());
	snprintf(img, sizeof(img), "%s/ocf_wf_%s_%d.img", t_dir(), name, (int)getpid());
	T_SYS(mkdir(im->dir, 0755));
	static bool hooked;
	if (!hooked) {
		atexit(unmount_all);
		hooked = true;
	}
	for (int i = 0; i < 4; i++)
		if (!mounted[i]) {
			mounted[i] = im;
			break;
		}
	snprintf(cmd, sizeof(cmd),
		 "truncate -s %s '%s' && mkfs.ext4 -q -F -m 0 %s '%s' >/dev/null 2>&1 && mount -o loop%s%s '%s' '%s'",
		 size, img, mkfs, img, opts[0] ? "," : "", opts, img, im->dir);
	int rc = system(cmd);
	unlink(img); /* the mount keeps it */
	if (rc != 0)
		T_FAIL("could not make and mount an ext4 file system (%s)", cmd);
	struct stat st;
	T_SYS(stat(im->dir, &st));
	char sys[128], link[512];
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	ssize_t k = readlink(sys, link, sizeof(link) - 1);
	T_ASSERT(k > 0);
	link[k] = 0;
	snprintf(im->dev, sizeof(im->dev), "%s", strrchr(link, '/') + 1);
}

static void image_file(const struct image *im, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", im->dir, name);
}

/* Bytes the file system has free for this (root) process. */
static uint64_t image_free(const struct image *im)
{
	struct statvfs sv;
	T_SYS(statvfs(im->dir, &sv));
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* A file that takes every byte but `left` of the free space (fallocate,
 * shrunk or grown until the free space is within 64 KiB above it). */
static void image_leave_free(const struct image *im, uint64_t left)
{
	char fill[600];
	image_file(im, "filler", fill, sizeof(fill));
	int fd = t_open(fill, O_RDWR | O_CREAT);
	for (int i = 0; i < 16; i++) {
		T_SYS(fsync(fd));
		sync();
		uint64_t fr = image_free(im);
		if (fr >= left && fr <= left + 64 * T_KIB)
			break;
		off_t have = (off_t)t_file_size(fd);
		off_t want = fr > left ? have + (off_t)(fr - left) : have - (off_t)(left - fr);
		if (want < 0)
			want = 0;
		T_SYS(ftruncate(fd, want / 4096 * 4096));
		if (want > have)
			T_SYS(fallocate(fd, 0, have, want / 4096 * 4096 - have));
	}
	close(fd);
}

/* Writes the pattern seed over [off, off+len) of a file and waits for it to
 * be on the disk; its pages stay cached. */
static void prepare(const char *file, off_t off, size_t len, uint32_t seed)
{
	int fd = t_open(file, O_RDWR | O_CREAT);
	t_pwrite_pattern(fd, (uint64_t)off, len, seed);
	T_SYS(fsync(fd));
	close(fd);
}

/* ------------------------------------------------------------------ cases */

static void case_read_only(void)
{
	if (!root_or_note("the read-only case"))
		return;
	struct image im = {0};
	image_make(&im, "ro", "256M", "", "errors=remount-ro");
	const size_t old = 24 * T_MIB;
	char files[NPATHS + 1][600];
	struct target t[NPATHS];
	for (int p = 0; p <= NPATHS; p++) {
		char name[32];
		snprintf(name, sizeof(name), "f%d", p);
		image_file(&im, name, files[p], sizeof(files[p]));
		prepare(files[p], 0, old, 1);
		/* Cached, as a file just read is. */
		struct snap s = snap_take(files[p]);
		snap_free(&s);
	}
	/* Handles (and the mappings they store through) made before the
	 * turn; the twin is files[NPATHS]. */
	for (int p = 0; p < NPATHS; p++)
		target_open(&t[p], files[p], (enum path)p);
	int twin[2] = {twin_open(files[NPATHS], P_STORES), twin_open(files[NPATHS], P_DIRECT)};
	char trig[256];
	snprintf(trig, sizeof(trig), "/sys/fs/ext4/%s/trigger_fs_error", im.dev);
	int tf = open(trig, O_WRONLY);
	if (tf < 0) {
		fprintf(stderr, "note: %s: %s: the read-only case is not run\n", trig, strerror(errno));
		for (int p = 0; p < NPATHS; p++)
			target_close(&t[p]);
		close(twin[0]);
		close(twin[1]);
		image_unmount(&im);
		return;
	}
	T_ASSERT(write(tf, "1\n", 2) == 2);
	close(tf);
	static const struct {
		size_t n;
		off_t off;
	} w[] = {{16 * T_MIB, 0}, {16 * T_MIB, 4 * T_MIB}, {8 * T_MIB, 6 * T_MIB}, {1 * T_MIB, 3 * T_MIB},
		 {8 * T_MIB, 20 * T_MIB}, {64 * T_KIB, 8 * T_MIB}, {4 * T_MIB + 5, 12 * T_MIB + 3}};
	for (int p = 0; p < NPATHS; p++) {
		for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
			t_set_case("read_only, %s, %zu bytes at %lld", path_names[p], w[i].n, (long long)w[i].off);
			source(w[i].n, w[i].off, 100 + (uint32_t)i);
			struct snap before = snap_take(files[p]);
			struct res twin_r = twin_write(twin[p == P_DIRECT], w[i].n, w[i].off);
			T_EQ(twin_r.r, -1);
			struct res r = do_write(&t[p], w[i].n, w[i].off);
			expect_as_twin(r, twin_r, "a write to a file system turned read-only");
			expect_exactly(files[p], &before, w[i].off, r.r, "the page cache after the refused write");
			snap_free(&before);
		}
	}
	t_set_case("read_only: the disk after a remount");
	for (int p = 0; p < NPATHS; p++)
		target_close(&t[p]);
	close(twin[0]);
	close(twin[1]);
	image_unmount(&im);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "mount -o ro /dev/%s '%s'", im.dev, im.dir);
	/* The loop device went with the unmount: mount the image again from
	 * its device where it is still there, else skip the disk check. */
	if (system(cmd) == 0) {
		for (int p = 0; p < NPATHS; p++) {
			struct snap s = snap_take(files[p]);
			T_EQ(s.size, (off_t)old);
			if (t_check_pattern(s.b, old, 0, 1, "on the disk after the refused writes"))
				T_FAIL("%s: bytes of a refused write reached the disk", path_names[p]);
			snap_free(&s);
		}
		image_unmount(&im);
	} else {
		fprintf(stderr, "note: the image could not be mounted again: the disk is not checked\n");
	}
	t_set_case("%s", "");
}

/* ---- second_writer */

struct writer_arg {
	struct target *t;
	CUdeviceptr src;
	size_t n;
	off_t off;
	unsigned delay_us;
	struct res r;
};

static void *writer_main(void *arg)
{
	struct writer_arg *a = arg;
	t_cuda_bind_thread();
	if (a->delay_us)
		usleep(a->delay_us);
	if (a->t->p == P_STORES) {
		errno = 0;
		a->r.r = cuFileWrite(a->t->fh, (void *)a->src, a->n, a->off, 0);
		a->r.err = a->r.r < 0 ? errno : 0;
	} else {
		a->r = do_write(a->t, a->n, a->off);
	}
	return NULL;
}

static void case_second_writer(void)
{
	if (!root_or_note("the second-writer case"))
		return;
	struct image im = {0};
	image_make(&im, "sw", "48M", "", "");
	char file[600];
	image_file(&im, "f", file, sizeof(file));
	const size_t an = 60 * T_MIB, bn = 4 * T_MIB;
	const off_t boff = 36 * T_MIB;
	CUdeviceptr bsrc = t_dev_alloc(bn);
	uint8_t *bhost = malloc(bn);
	T_ASSERT(bhost != NULL);
	t_fill_pattern(bhost, bn, (uint64_t)boff, 7);
	t_dev_put(bsrc, bhost, bn);
	source(an, 0, 6);
	int b_ok = 0;
	for (int p = 0; p < NPATHS; p++) {
		for (int round = 0; round < 4; round++) {
			t_set_case("second_writer, %s, round %d", path_names[p], round);
			unlink(file);
			sync();
			int fd = t_open(file, O_RDWR | O_CREAT);
			close(fd);
			struct target a, b;
			target_open(&a, file, (enum path)p);
			target_open(&b, file, P_STORES);
			struct writer_arg wa = {.t = &a, .src = dev, .n = an, .off = 0};
			struct writer_arg wb = {.t = &b, .src = bsrc, .n = bn, .off = boff,
						.delay_us = (unsigned)round * 1500};
			pthread_t ta, tb;
			T_ASSERT(pthread_create(&ta, NULL, writer_main, &wa) == 0);
			T_ASSERT(pthread_create(&tb, NULL, writer_main, &wb) == 0);
			pthread_join(ta, NULL);
			pthread_join(tb, NULL);
			target_close(&a);
			target_close(&b);
			ssize_t ra = wa.r.r, rb = wb.r.r;
			T_LT(ra, (ssize_t)an);
			if (ra < 0 && wa.r.err)
				T_EQ(wa.r.err, ENOSPC);
			struct snap s = snap_take(file);
			if (rb == (ssize_t)bn) {
				b_ok++;
				if (s.size < boff + (off_t)bn)
					T_FAIL("the file was cut to %lld bytes: the second writer's reported bytes at %lld "
					       "are gone (the first returned %zd)",
					       (long long)s.size, (long long)boff, ra);
			}
			/* Each byte: the first writer's where it reported it, the
			 * second's where that reported it (inside its range
			 * either, in the order they ran), nothing (zero) else. */
			off_t A = OCF_TEST_MIN(ra > 0 ? (off_t)ra : 0, s.size), B = rb > 0 ? (off_t)rb : 0;
			off_t bend = OCF_TEST_MIN(boff + (off_t)bn, s.size), bad = s.size;
			const struct {
				off_t lo, hi;
				const uint8_t *w;
			} seg[4] = {
			    {0, OCF_TEST_MIN(A, boff), host},
			    {OCF_TEST_MIN(A, boff), OCF_TEST_MIN(boff, s.size), NULL},
			    {bend, OCF_TEST_MAX(A, bend), host + bend},
			    {OCF_TEST_MAX(A, bend), s.size, NULL},
			};
			for (int k = 0; k < 4 && bad == s.size; k++)
				if (seg[k].lo < seg[k].hi && first_diff(s.b, seg[k].w, seg[k].lo, seg[k].hi) < seg[k].hi)
					bad = first_diff(s.b, seg[k].w, seg[k].lo, seg[k].hi);
			for (off_t i = boff; i < bend && bad == s.size; i++) {
				bool in_a = i < A, in_b = i < boff + B;
				uint8_t v = s.b[i];
				if (!((in_a && v == host[i]) || (in_b && v == bhost[i - boff]) || (!in_a && !in_b && v == 0)))
					bad = i;
			}
			if (bad < s.size)
				T_FAIL("byte %lld is 0x%02x: the first writer returned %zd, the second %zd", (long long)bad,
				       s.b[bad], ra, rb);
			if (ra > 0 && s.size < ra)
				T_FAIL("the file is %lld bytes, shorter than the first writer's %zd", (long long)s.size, ra);
			snap_free(&s);
		}
	}
	t_set_case("%s", "");
	printf("second_writer: the second writer's call succeeded in %d rounds\n", b_ok);
	free(bhost);
	cuMemFree(bsrc);
	unlink(file);
	image_unmount(&im);
}

/* ---- hole_full */

static void case_hole_full(void)
{
	if (!root_or_note("the full-disk case"))
		return;
	struct image im = {0};
	image_make(&im, "hf", "64M", "", "");
	char file[600], twin_file[600];
	image_file(&im, "f", file, sizeof(file));
	image_file(&im, "twin", twin_file, sizeof(twin_file));
	const size_t n = 24 * T_MIB;
	source(n, 0, 9);
	for (int p = 0; p < NPATHS; p++) {
		t_set_case("hole_full, %s", path_names[p]);
		/* [0, 2 MiB) a hole, [2, 24) MiB data, every page cached (the
		 * hole's too: it was read). */
		const char *f[2] = {twin_file, file};
		char fill[600];
		image_file(&im, "filler", fill, sizeof(fill));
		unlink(fill);
		for (int k = 0; k < 2; k++) {
			unlink(f[k]);
			prepare(f[k], 2 * T_MIB, 22 * T_MIB, 8);
			struct snap s = snap_take(f[k]);
			snap_free(&s);
		}
		image_leave_free(&im, 512 * T_KIB);
		struct snap tb = snap_take(twin_file);
		int tfd = twin_open(twin_file, (enum path)p);
		struct res twin_r = twin_write(tfd, n, 0);
		close(tfd);
		expect_exactly(twin_file, &tb, 0, twin_r.r, "pwrite's own twin");
		snap_free(&tb);
		unlink(twin_file);
		image_leave_free(&im, 512 * T_KIB);
		struct target t;
		target_open(&t, file, (enum path)p);
		struct snap before = snap_take(file);
		struct res r = do_write(&t, n, 0);
		target_close(&t);
		printf("hole_full: %s returned %zd (%s), pwrite %zd (%s)\n", path_names[p], r.r,
		       r.r < 0 ? strerror(r.err) : "-", twin_r.r, twin_r.r < 0 ? strerror(twin_r.err) : "-");
		if (r.r < 0 && r.err)
			T_EQ(r.err, ENOSPC);
		/* A direct write allocates its range whole or not at all: how
		 * far pieces get depends on their size, where one pwrite of the
		 * range fails whole.  Either leaves exactly what it reports. */
		if (p != P_DIRECT && (r.r < 0) != (twin_r.r < 0))
			T_FAIL("returned %zd where pwrite returned %zd", r.r, twin_r.r);
		expect_exactly(file, &before, 0, r.r, "a write that ran out of room");
		snap_free(&before);
	}
	t_set_case("%s", "");
	unlink(file);
	image_unmount(&im);
}

/* ---- fsize, sigxfsz */

/* A new file for the limit cases: on an ext4 image of its own where one
 * can be mounted, else in the test directory. */
static struct image limit_im;
static void limit_file(char *out, size_t len, const char *name)
{
	if (!limit_im.dir[0] && geteuid() == 0)
		image_make(&limit_im, "lim", "128M", "", "");
	if (limit_im.dir[0])
		image_file(&limit_im, name, out, len);
	else
		snprintf(out, len, "%s", t_new_file_path());
}

static void set_limit(rlim_t cur)
{
	struct rlimit rl;
	T_SYS(getrlimit(RLIMIT_FSIZE, &rl));
	rl.rlim_cur = cur;
	T_SYS(setrlimit(RLIMIT_FSIZE, &rl));
}

static void case_fsize(void)
{
	const size_t limit = 8 * T_MIB, n = 16 * T_MIB;
	char file[600], twin_file[600];
	limit_file(file, sizeof(file), "f");
	limit_file(twin_file, sizeof(twin_file), "twin");
	signal(SIGXFSZ, SIG_IGN);
	for (int p = 0; p < NPATHS; p++) {
		for (int sparse = 0; sparse < 2; sparse++) {
			static const struct {
				size_t n;
				off_t off;
			} w[] = {{16 * T_MIB, 0}, {4 * T_MIB, 6 * T_MIB}, {4 * T_MIB, 10 * T_MIB}, {2 * T_MIB, 8 * T_MIB}};
			for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
				t_set_case("fsize, %s, %s file, %zu bytes at %lld", path_names[p], sparse ? "sparse" : "cached",
					   w[i].n, (long long)w[i].off);
				const char *f[2] = {twin_file, file};
				for (int k = 0; k < 2; k++) {
					set_limit(RLIM_INFINITY);
					unlink(f[k]);
					int fd = t_open(f[k], O_RDWR | O_CREAT);
					if (sparse)
						T_SYS(ftruncate(fd, (off_t)n));
					close(fd);
					if (!sparse)
						prepare(f[k], 0, n, 10);
				}
				source(w[i].n, w[i].off, 11 + (uint32_t)i);
				struct target t;
				target_open(&t, file, (enum path)p);
				struct snap before = snap_take(file), tb = snap_take(twin_file);
				int tfd = twin_open(twin_file, (enum path)p);
				set_limit(limit);
				struct res twin_r = twin_write(tfd, w[i].n, w[i].off);
				struct res r = do_write(&t, w[i].n, w[i].off);
				set_limit(RLIM_INFINITY);
				close(tfd);
				target_close(&t);
				expect_exactly(twin_file, &tb, w[i].off, twin_r.r, "pwrite's own twin");
				expect_as_twin(r, twin_r, "a write at RLIMIT_FSIZE");
				expect_exactly(file, &before, w[i].off, r.r, "a write at RLIMIT_FSIZE");
				snap_free(&before);
				snap_free(&tb);
			}
		}
	}
	signal(SIGXFSZ, SIG_DFL);
	t_set_case("%s", "");
	if (limit_im.dir[0])
		image_unmount(&limit_im);
}

/* In a child: the driver opened, RLIMIT_FSIZE at `limit` with SIGXFSZ at
 * its default action, one write by path p (p < 0: pwrite) of n bytes at
 * off into a new file.  The child exits 0 when the call returned `want`. */
static pid_t limit_child(int p, const char *file, size_t limit, size_t n, off_t off, ssize_t want)
{
	fflush(NULL);
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid)
		return pid;
	signal(SIGXFSZ, SIG_DFL);
	int fd = t_open(file, O_RDWR | O_CREAT | O_TRUNC);
	close(fd);
	ssize_t r;
	if (p < 0) {
		t_fill_pattern(host, n, (uint64_t)off, 12);
		fd = t_open(file, O_RDWR);
		set_limit(limit);
		r = twin_write(fd, n, off).r;
	} else {
		t_cuda_require();
		T_CUFILE_OK(cuFileDriverOpen());
		dev = t_dev_alloc(n);
		source(n, off, 12);
		struct target t;
		target_open(&t, file, (enum path)p);
		set_limit(limit);
		r = do_write(&t, n, off).r;
	}
	if (r != want)
		fprintf(stderr, "%s: %zd bytes at %lld with the limit at %zu returned %zd, want %zd\n",
			p < 0 ? "pwrite" : path_names[p], n, (long long)off, limit, r, want);
	_exit(r == want ? 0 : 1);
}

static void case_sigxfsz(void)
{
	const size_t limit = 8 * T_MIB;
	char file[600];
	limit_file(file, sizeof(file), "f");
	for (int p = -1; p < NPATHS; p++) {
		const char *name = p < 0 ? "pwrite itself" : path_names[p];
		/* Across the limit: the bytes below it, no signal. */
		t_set_case("sigxfsz, %s, across the limit", name);
		int st;
		pid_t pid = limit_child(p, file, limit, 16 * T_MIB, 0, (ssize_t)limit);
		T_ASSERT(waitpid(pid, &st, 0) == pid);
		if (WIFSIGNALED(st))
			T_FAIL("%s: killed by signal %d where pwrite returns the bytes below the limit", name, WTERMSIG(st));
		T_EQ(WEXITSTATUS(st), 0);
		/* From the limit: SIGXFSZ, as pwrite raises it. */
		t_set_case("sigxfsz, %s, from the limit", name);
		pid = limit_child(p, file, limit, 1 * T_MIB, (off_t)limit, -1);
		T_ASSERT(waitpid(pid, &st, 0) == pid);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGXFSZ)
			T_FAIL("%s: a write from the limit did not raise SIGXFSZ (status %#x)", name, st);
	}
	t_set_case("%s", "");
	unlink(file);
	if (limit_im.dir[0])
		image_unmount(&limit_im);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	static const struct {
		const char *name;
		void (*fn)(void);
		bool in_process; /* the driver opened here (else: in children) */
	} cases[] = {
	    /* First: its children open the driver, which a child of a process
	     * that has it open may not. */
	    {"sigxfsz", case_sigxfsz, false},
	    {"read_only", case_read_only, true},
	    {"second_writer", case_second_writer, true},
	    {"hole_full", case_hole_full, true},
	    {"fsize", case_fsize, true},
	};
	T_ASSERT(posix_memalign((void **)&host, 4096, BUF) == 0);
	bool open = false;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		if (cases[i].in_process && !open) {
			t_cuda_require();
			T_CUFILE_OK(cuFileDriverOpen());
			dev = t_dev_alloc(BUF);
			open = true;
		}
		t_set_case("%s", cases[i].name);
		cases[i].fn();
		printf("ok %s\n", cases[i].name);
	}
	if (open) {
		cuMemFree(dev);
		T_CUFILE_OK(cuFileDriverClose());
	}
	free(host);
	return T_EXIT_PASS;
}
