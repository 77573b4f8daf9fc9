/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library, for its count of reads striped while other
 * callers were busy) While fewer than OPENCUFILE_STRIPE_CALLERS (4) callers
 * are busy, a device read of 1 to 8 MiB whose handle has no read-ahead
 * window open takes the striped path too (engine.c plan_request):
 *   - two threads reading 4 MiB at random offsets through one handle, and
 *     a pool of three threads taking the 1 MiB pieces of 3 MiB requests
 *     out of order from one counter, buffered and O_DIRECT descriptors,
 *     registered and unregistered memory: every byte the file's, nothing
 *     past a buffer, and some reads striped while another caller was busy
 *     (more rounds follow, up to EXTRA_ROUNDS, while a loaded machine kept
 *     the callers from overlapping);
 *   - argv[1] "one" (OPENCUFILE_STRIPE_CALLERS=1, the ctest entry): the
 *     same reads, none striped beside another caller.
 * Against the real driver (the plain library) the bytes are checked.
 */
#include <stdatomic.h>

#include "test.h"

#include <dlfcn.h>
#include <pthread.h>

#define FLEN (48 * T_MIB)
#define GUARD 4096
#define ROUNDS 24
#define EXTRA_ROUNDS 200

static const char *path;
static uint8_t *truth;
static CUfileHandle_t fh;
static unsigned long (*striped_fn)(void);
static unsigned long striped(void) { return striped_fn ? striped_fn() : 0; }

struct t_arg {
	int id;
	bool registered, pool;
	uint32_t seed;
};

/* The pool's pieces: request r, piece p of 3, taken from one counter. */
static atomic_uint next_piece;
static unsigned pieces_total;

static void read_check(CUdeviceptr dev, size_t len, off_t off, const char *what)
{
	uint8_t *got = malloc(len + GUARD);
	T_ASSERT(got != NULL);
	t_dev_fill(dev, T_POISON, len + GUARD);
	T_IO(cuFileRead(fh, (void *)(uintptr_t)dev, len, off, 0), (ssize_t)len);
	t_dev_get(got, dev, len + GUARD);
	if (memcmp(got, truth + off, len) != 0)
		T_FAIL("%s: %zu bytes at %lld differ from the file", what, len, (long long)off);
	if (t_check_fill(got + len, GUARD, T_POISON, "past the request"))
		T_FAIL("%s: stored past the request", what);
	free(got);
}

static void *reader(void *p)
{
	struct t_arg *a = p;
	t_cuda_bind_thread();
	size_t max = 4 * T_MIB;
	CUdeviceptr dev = t_dev_alloc(max + GUARD);
	if (a->registered)
		T_CUFILE_OK(cuFileBufRegister((void *)(uintptr_t)dev, max + GUARD, 0));
	uint32_t x = a->seed;
	if (a->pool) {
		for (unsigned k; (k = atomic_fetch_add(&next_piece, 1)) < pieces_total;) {
			/* Pieces of 3 MiB requests, in order of the counter, so
			 * that each thread's own reads are out of order. */
			off_t off = (off_t)(k / 3) * 3 * (off_t)T_MIB % (FLEN - 3 * T_MIB) + (off_t)(k % 3) * (off_t)T_MIB;
			read_check(dev, T_MIB, off, "a pool's piece");
		}
	} else {
		for (int i = 0; i < 6; i++) {
			x = x * 1103515245u + 12345u;
			off_t off = (off_t)((x >> 4) % ((FLEN - max) / 4096)) * 4096 + (i % 2 ? 1000 : 0);
			read_check(dev, max - (i % 2 ? 4096 : 0), off, "4 MiB at random");
		}
	}
	if (a->registered)
		T_CUFILE_OK(cuFileBufDeregister((void *)(uintptr_t)dev));
	T_CU(cuMemFree(dev));
	return NULL;
}

static void round_of(int round, bool pool, bool registered)
{
	int n = pool ? 3 : 2;
	struct t_arg a[3];
	pthread_t th[3];
	pieces_total = 18;
	atomic_store(&next_piece, 0);
	for (int i = 0; i < n; i++) {
		a[i] = (struct t_arg){.id = i, .registered = registered, .pool = pool,
				      .seed = 97u * (uint32_t)round + (uint32_t)i};
		T_EQ(pthread_create(&th[i], NULL, reader, &a[i]), 0);
	}
	for (int i = 0; i < n; i++)
		T_EQ(pthread_join(th[i], NULL), 0);
}

int main(int argc, char **argv)
{
	bool one = argc > 1 && strcmp(argv[1], "one") == 0;
	/* Helpers whatever the CPU count, and no read-ahead window can open
	 * on the random readers' handle anyway. */
	setenv("OPENCUFILE_IO_THREADS", "6", 0);
	setenv("OPENCUFILE_PARALLEL", "8", 0);
	t_cuda_require();
	striped_fn = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "ocf_fault_striped_beside_others");
	if (!striped_fn)
		printf("note: no count of striped reads (not the fault-injection library)\n");
	path = t_make_pattern_file(FLEN, 5);
	t_require_local_odirect_fs(path);
	truth = malloc(FLEN);
	T_ASSERT(truth != NULL);
	int tfd = t_open(path, O_RDONLY);
	T_EQ_U(t_pread_full(tfd, truth, FLEN, 0), FLEN);
	close(tfd);
	bool odirect_ok = t_odirect_supported(path);
	unsigned long s0 = striped();
	int round = 0;
	for (; round < ROUNDS || (!one && striped_fn && striped() == s0 && round < ROUNDS + EXTRA_ROUNDS); round++) {
		bool direct = odirect_ok && round % 2, pool = round % 4 >= 2, registered = round % 3 == 0;
		t_set_case("round %d: %s, %s descriptor, %s memory", round, pool ? "pool of 3" : "2 at random",
			   direct ? "O_DIRECT" : "buffered", registered ? "registered" : "unregistered");
		int fd = t_open(path, O_RDONLY | (direct ? O_DIRECT : 0));
		fh = t_register_fd(fd);
		round_of(round, pool, registered);
		cuFileHandleDeregister(fh);
		close(fd);
	}
	unsigned long got = striped() - s0;
	printf("%d rounds: %lu reads striped while another caller was busy%s\n", round, got,
	       one ? " (OPENCUFILE_STRIPE_CALLERS=1)" : "");
	if (striped_fn) {
		t_set_case(one ? "OPENCUFILE_STRIPE_CALLERS=1: none striped beside another caller"
			       : "some reads striped beside another caller");
		if (one)
			T_EQ_U(got, 0);
		else
			T_GT(got, 0);
	}
	free(truth);
	T_CUFILE_OK(cuFileDriverClose());
	t_cleanup_files();
	printf("PASS\n");
	return T_EXIT_PASS;
}
