/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library, for its counts of polled operations and waits)
 * An application that submits a small batch as soon as the last one
 * completed (a KV-cache offload's shape) meets no sleeping thread: after an
 * operation of a small job (no more entries than executor threads: the
 * ctest entries start 8 for batches of 8), up to OPENCUFILE_BATCH_SPINNERS
 * executor threads poll the FIFO for OPENCUFILE_BATCH_SPIN_US before they
 * sleep (async.c), each thread reads one entry before it claims another
 * (batch.c), and a
 * cuFileBatchIOGetStatus that must wait polls the batch's completions for
 * OPENCUFILE_BATCH_WAIT_SPIN_US first (batch.c).
 *   - rounds of batches of 8 reads back to back (1 byte to 300 KiB, file
 *     offsets aligned and not, scattered into slots of one device buffer
 *     at offsets 0 and 3), each batch collected with GetStatus(min_nr = 8,
 *     no timeout) and its events checked, then every slot of the round
 *     checked: the file's bytes, and every byte around them still poison;
 *   - one batch with a bad entry (an unregistered handle's offset past the
 *     end of the file: a short read) keeps its own result among good ones;
 *   - with polling on (the ctest entry sets 1000 us for both), some
 *     operations were taken by a polling thread and some waits ended while
 *     polling; when a loaded machine (a sanitizer build beside other tests
 *     on two CPUs) kept every polling thread off a CPU through those
 *     rounds, more rounds follow on a buffered descriptor, up to
 *     EXTRA_ROUNDS, until both counts move: with polling broken they never
 *     do, and the check fails;
 *   - argv[1] "off" (both set to 0): none were.
 * Buffered and O_DIRECT descriptors, registered and unregistered memory.
 * The counts come from the fault-injection library (the stand-in build);
 * against the real driver the test links the plain library and checks the
 * bytes only.
 */
#include "async_test_util.h"

#include <dlfcn.h>

#define FLEN (8 * T_MIB + 12345)
#define NE 8
#define BATCHES 6
#define GUARD 4096
#define MAXSZ (300 * T_KIB)
#define SLOT (GUARD + 4096 + MAXSZ + GUARD)
#define ROUNDS 4
#define EXTRA_ROUNDS 40

static unsigned long (*polled_ops_fn)(void), (*polled_waits_fn)(void);

static unsigned long count(unsigned long (*fn)(void))
{
	return fn ? fn() : 0;
}

static const size_t sizes[] = {64 * T_KIB, 1, 4096, 64 * T_KIB + 17, 300 * T_KIB, 12345, 256 * T_KIB, 100};

/* One round: BATCHES batches of NE entries back to back, then every slot
 * checked. */
static void round_of_batches(CUfileBatchHandle_t b, CUfileHandle_t fh, struct t_mem *m, unsigned round,
			     const char *what)
{
	size_t size[BATCHES * NE];
	off_t foff[BATCHES * NE], boff[BATCHES * NE];
	t_mem_fill(m, 0, T_POISON, m->len);
	for (unsigned k = 0; k < BATCHES; k++) {
		CUfileIOParams_t io[NE];
		for (unsigned i = 0; i < NE; i++) {
			unsigned s = k * NE + i, q = round * BATCHES * NE + s;
			size[s] = sizes[(q + round) % 8];
			/* Scattered offsets, a quarter of them not on a page. */
			foff[s] = (off_t)(((q * 7919u) % 31u) * 256 * T_KIB + (q % 4 == 1 ? 4095u : 0u));
			boff[s] = (off_t)(q % 2 ? 3 : 0);
			io[i] = t_batch_io(CUFILE_READ, fh, m->ptr, size[s], foff[s],
					   (off_t)((size_t)s * SLOT + GUARD) + boff[s], (void *)(uintptr_t)(s + 1));
		}
		T_CUFILE_OK(cuFileBatchIOSubmit(b, NE, io, 0));
		CUfileIOEvents_t ev[NE];
		t_batch_collect_untimed(b, NE, ev);
		for (unsigned i = 0; i < NE; i++) {
			uintptr_t c = (uintptr_t)ev[i].cookie;
			T_ASSERT(c >= k * NE + 1 && c <= (k + 1) * NE);
			t_set_case("%s: entry of %zu at %lld", what, size[c - 1], (long long)foff[c - 1]);
			T_EQ(ev[i].status, CUFILE_COMPLETE);
			T_EQ_U(ev[i].ret, size[c - 1]);
		}
	}
	t_check_slots(m, BATCHES * NE, SLOT, GUARD, size, foff, boff, what);
}

/* A batch whose middle entry runs past the end of the file: a short read
 * for it, full ones for the rest. */
static void short_entry(CUfileBatchHandle_t b, CUfileHandle_t fh, struct t_mem *m, const char *what)
{
	t_set_case("%s: an entry past the end of the file", what);
	t_mem_fill(m, 0, T_POISON, m->len);
	CUfileIOParams_t io[3];
	io[0] = t_batch_io(CUFILE_READ, fh, m->ptr, 64 * T_KIB, 0, GUARD, (void *)1);
	io[1] = t_batch_io(CUFILE_READ, fh, m->ptr, 64 * T_KIB, FLEN - 100, SLOT + GUARD, (void *)2);
	io[2] = t_batch_io(CUFILE_READ, fh, m->ptr, 64 * T_KIB, 64 * T_KIB, 2 * SLOT + GUARD, (void *)3);
	T_CUFILE_OK(cuFileBatchIOSubmit(b, 3, io, 0));
	CUfileIOEvents_t ev[3];
	t_batch_collect(b, 3, ev);
	for (unsigned i = 0; i < 3; i++) {
		T_EQ(ev[i].status, CUFILE_COMPLETE);
		T_EQ_U(ev[i].ret, (uintptr_t)ev[i].cookie == 2 ? 100u : 64 * T_KIB);
	}
	uint8_t *v = malloc(SLOT);
	T_ASSERT(v != NULL);
	t_mem_get(m, SLOT, v, SLOT);
	if (t_check_guarded(v, SLOT, GUARD, 100, FLEN - 100, 0))
		T_FAIL("bad short entry");
	free(v);
}

static void rounds(CUfileHandle_t fh, struct t_mem *m, const char *what)
{
	CUfileBatchHandle_t b;
	T_CUFILE_OK(cuFileBatchIOSetUp(&b, NE));
	for (unsigned r = 0; r < ROUNDS; r++)
		round_of_batches(b, fh, m, r, what);
	short_entry(b, fh, m, what);
	cuFileBatchIODestroy(b);
}

int main(int argc, char **argv)
{
	bool off = argc > 1 && !strcmp(argv[1], "off");
	t_cuda_require();
	polled_ops_fn = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "ocf_fault_polled_batch_ops");
	polled_waits_fn = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "ocf_fault_polled_status_waits");
	if (!polled_ops_fn || !polled_waits_fn)
		printf("note: no counts of polled operations (not the fault-injection library)\n");
	const char *path = t_make_pattern_file(FLEN, 0);
	T_CUFILE_OK(cuFileDriverOpen());
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, BATCHES * NE * SLOT);
	unsigned long ops0 = count(polled_ops_fn), waits0 = count(polled_waits_fn);

	t_each_descriptor(path, &m, rounds);

	if (polled_ops_fn && polled_waits_fn) {
		unsigned long ops = count(polled_ops_fn) - ops0, waits = count(polled_waits_fn) - waits0;
		printf("operations taken by a polling thread: %lu; waits ended while polling: %lu\n", ops, waits);
		if (!off && (ops == 0 || waits == 0)) {
			int fd = t_open(path, O_RDONLY);
			CUfileHandle_t fh = t_register_fd(fd);
			CUfileBatchHandle_t b;
			T_CUFILE_OK(cuFileBatchIOSetUp(&b, NE));
			unsigned extra = 0;
			while ((ops == 0 || waits == 0) && extra < EXTRA_ROUNDS) {
				round_of_batches(b, fh, &m, extra % ROUNDS, "buffered, more rounds");
				extra++;
				ops = count(polled_ops_fn) - ops0;
				waits = count(polled_waits_fn) - waits0;
			}
			cuFileBatchIODestroy(b);
			cuFileHandleDeregister(fh);
			close(fd);
			printf("after %u more rounds: %lu operations, %lu waits\n", extra, ops, waits);
		}
		t_set_case(off ? "nothing polls with both spins at 0" : "threads polling take operations");
		if (off) {
			T_EQ_U(ops, 0);
			T_EQ_U(waits, 0);
		} else {
			T_ASSERT(ops > 0);
			T_ASSERT(waits > 0);
		}
	}
	t_mem_free(&m);
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
