/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The batch pool of NIXL's GDS backend (LLM KV-cache offload): 16 handles
 * set up for 128 entries, 4 threads each driving 4 of them, every handle
 * resubmitted with 128 x 64 KiB as soon as its previous round is reaped,
 * rounds of reads and of writes in turn.  Each handle has its own
 * registered device buffer and names every entry NIXL's way (an address
 * inside the registration as devPtr_base, offset 0).  Reaping as NIXL's two
 * generations do, chosen by the argument:
 *   wait: cuFileBatchIOGetStatus(batch, left, &left, events, NULL) — min_nr
 *         equal to what is outstanding, no timeout;
 *   poll: cuFileBatchIOGetStatus(batch, 0, &n, events, {0, 0}) over the
 *         thread's handles until each is done.
 * Every round: exactly 128 events with the round's cookies, each COMPLETE
 * with 64 KiB; every byte read is the file's, every byte written reached
 * the file.  OCF_POOL_ROUNDS sets the rounds per handle (default 4).
 */
#include "async_test_util.h"

#define NT 4
#define HPT 4 /* handles per thread */
#define N 128
#define SZ (64 * T_KIB)
#define BUF ((size_t)N * SZ)
#define RBLOCKS 512

struct ph {
	CUfileBatchHandle_t b;
	struct t_mem m;
	int hl;	       /* index among its thread's handles */
	int h;	       /* index in the pool */
	int r;	       /* round in flight */
	unsigned left; /* its events not reaped yet */
	bool seen[N];
};

static bool polling;
static int rounds = 4;
static uint8_t *fimg; /* the read file's contents */
static CUfileHandle_t rfh;
static CUfileHandle_t wfh[NT];
static int wfd[NT];
static struct ph pool[NT * HPT];

static off_t read_block(const struct ph *p, int j)
{
	return (off_t)((5 * j + 31 * p->h + 7 * p->r) % RBLOCKS);
}
static bool writing(const struct ph *p)
{
	return p->r % 2 == 1;
}
static uint32_t write_seed(const struct ph *p)
{
	return 1000u + (uint32_t)(p->r * 64 + p->h);
}
static off_t write_off(const struct ph *p, int j)
{
	return (off_t)((size_t)(p->hl * N + j) * SZ);
}

static void start_round(struct ph *p, uint8_t *tmp)
{
	CUfileIOParams_t io[N];
	if (writing(p)) {
		t_fill_pattern(tmp, BUF, (uint64_t)write_off(p, 0), write_seed(p));
		t_mem_put(&p->m, 0, tmp, BUF);
	}
	for (int j = 0; j < N; j++) {
		void *base = (uint8_t *)p->m.ptr + (size_t)j * SZ;
		void *cookie = (void *)(uintptr_t)((unsigned)(p->r + 1) << 8 | (unsigned)j);
		int t = p->h / HPT;
		io[j] = writing(p)
			    ? t_batch_io(CUFILE_WRITE, wfh[t], base, SZ, write_off(p, j), 0, cookie)
			    : t_batch_io(CUFILE_READ, rfh, base, SZ, read_block(p, j) * (off_t)SZ, 0, cookie);
	}
	memset(p->seen, 0, sizeof(p->seen));
	p->left = N;
	T_CUFILE_OK(cuFileBatchIOSubmit(p->b, N, io, 0));
}

/* (t_set_case is not for threads: failures name their case themselves.) */
static void verify_round(struct ph *p, uint8_t *tmp)
{
	if (writing(p)) {
		int t = p->h / HPT;
		T_EQ_U(t_pread_full(wfd[t], tmp, BUF, (uint64_t)write_off(p, 0)), BUF);
		if (t_check_pattern(tmp, BUF, (uint64_t)write_off(p, 0), write_seed(p), "written"))
			T_FAIL("handle %d round %d: the file does not hold what was written", p->h, p->r);
	} else {
		t_mem_get(&p->m, 0, tmp, BUF);
		for (int j = 0; j < N; j++)
			if (memcmp(tmp + (size_t)j * SZ, fimg + (size_t)read_block(p, j) * SZ, SZ) != 0)
				T_FAIL("handle %d round %d: entry %d does not hold file block %lld", p->h,
				       p->r, j, (long long)read_block(p, j));
	}
}

/* Reaps what the handle has; true when its round is complete. */
static bool reap(struct ph *p)
{
	CUfileIOEvents_t ev[N];
	unsigned nr;
	if (polling) {
		nr = N;
		struct timespec zero = {0, 0};
		T_CUFILE_OK(cuFileBatchIOGetStatus(p->b, 0, &nr, ev, &zero));
	} else {
		nr = p->left;
		T_CUFILE_OK(cuFileBatchIOGetStatus(p->b, nr, &nr, ev, NULL));
		if (nr != p->left)
			T_FAIL("handle %d round %d: %u events of the %u outstanding", p->h, p->r, nr,
			       p->left);
	}
	if (nr > p->left)
		T_FAIL("handle %d round %d: %u events, only %u outstanding", p->h, p->r, nr, p->left);
	for (unsigned k = 0; k < nr; k++) {
		uintptr_t c = (uintptr_t)ev[k].cookie;
		unsigned j = (unsigned)(c & 0xff);
		if (c >> 8 != (uintptr_t)p->r + 1 || j >= N || p->seen[j] ||
		    ev[k].status != CUFILE_COMPLETE || ev[k].ret != SZ)
			T_FAIL("handle %d round %d: event cookie %#lx%s status %#x ret %zd", p->h, p->r,
			       (unsigned long)c, j < N && p->seen[j] ? " (again)" : "", ev[k].status,
			       (ssize_t)ev[k].ret);
		p->seen[j] = true;
	}
	p->left -= nr;
	return p->left == 0;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	t_cuda_bind_thread();
	uint8_t *tmp = malloc(BUF);
	T_ASSERT(tmp != NULL);
	struct ph *mine = &pool[t * HPT];
	for (int i = 0; i < HPT; i++)
		start_round(&mine[i], tmp);
	int active = HPT;
	double t0 = t_now_s();
	while (active) {
		bool moved = false;
		for (int i = 0; i < HPT; i++) {
			struct ph *p = &mine[i];
			if (p->r == rounds)
				continue;
			unsigned before = p->left;
			bool done = reap(p);
			moved |= p->left != before;
			if (!done)
				continue;
			verify_round(p, tmp);
			if (++p->r == rounds)
				active--;
			else
				start_round(p, tmp); /* back into use at once */
		}
		if (!moved) {
			/* Nothing new: let the executor threads have the CPUs. */
			struct timespec pause = {0, 100 * 1000};
			nanosleep(&pause, NULL);
		}
		if (t_now_s() - t0 > 300)
			T_FAIL("thread %d: rounds not done in 300 s", t);
	}
	free(tmp);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "wait") != 0 && strcmp(argv[1], "poll") != 0)) {
		fprintf(stderr, "usage: %s wait|poll\n", argv[0]);
		return T_EXIT_FAIL;
	}
	polling = strcmp(argv[1], "poll") == 0;
	const char *env = getenv("OCF_POOL_ROUNDS");
	if (env && atoi(env) > 0)
		rounds = atoi(env);
	t_cuda_require();
	const char *rpath = t_make_pattern_file((uint64_t)RBLOCKS * SZ, 0);
	int rfd = t_open(rpath, O_RDONLY);
	fimg = malloc((size_t)RBLOCKS * SZ);
	T_ASSERT(fimg != NULL);
	t_fill_pattern(fimg, (size_t)RBLOCKS * SZ, 0, 0);
	T_CUFILE_OK(cuFileDriverOpen());
	rfh = t_register_fd(rfd);
	for (int t = 0; t < NT; t++) {
		wfd[t] = t_open(t_new_file_path(), O_RDWR);
		wfh[t] = t_register_fd(wfd[t]);
	}
	for (int h = 0; h < NT * HPT; h++) {
		struct ph *p = &pool[h];
		p->h = h;
		p->hl = h % HPT;
		T_CUFILE_OK(cuFileBatchIOSetUp(&p->b, N));
		t_mem_alloc(&p->m, T_MEM_DEVICE, BUF);
		T_CUFILE_OK(cuFileBufRegister(p->m.ptr, BUF, 0));
	}

	pthread_t th[NT];
	for (int t = 0; t < NT; t++)
		T_ASSERT(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
	for (int t = 0; t < NT; t++)
		pthread_join(th[t], NULL);

	/* Every handle is idle and empty. */
	for (int h = 0; h < NT * HPT; h++) {
		CUfileIOEvents_t ev[1];
		unsigned nr = 1;
		struct timespec zero = {0, 0};
		T_CUFILE_OK(cuFileBatchIOGetStatus(pool[h].b, 1, &nr, ev, &zero));
		T_EQ(nr, 0);
		cuFileBatchIODestroy(pool[h].b);
		T_CUFILE_OK(cuFileBufDeregister(pool[h].m.ptr));
		t_mem_free(&pool[h].m);
	}
	for (int t = 0; t < NT; t++) {
		cuFileHandleDeregister(wfh[t]);
		close(wfd[t]);
	}
	cuFileHandleDeregister(rfh);
	T_CUFILE_OK(cuFileDriverClose());
	close(rfd);
	free(fimg);
	return T_EXIT_PASS;
}
