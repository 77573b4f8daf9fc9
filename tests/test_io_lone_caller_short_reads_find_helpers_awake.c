/* SPDX-License-Identifier: Apache-2.0 */
/*
 * (fault-injection library, for its count of jobs joined by polling helpers)
 * A caller alone in the engine that reads 1 to 2 MiB at a time into device
 * memory takes the striped path (src/stripe.c): the request is cut into one
 * piece per participant, and afterwards up to two engine helpers poll the
 * queue for OPENCUFILE_STRIPE_SPIN_US before they sleep, so that the
 * caller's next request finds them running.
 *   - bursts of eight reads back to back (1 MiB, 1 MiB + 4095, 1.5 MiB,
 *     2 MiB - 4096; file offsets aligned and not; buffer offsets 0 and 3),
 *     each into its own slot of one buffer, then every slot checked: the
 *     file's bytes, and every byte around them still poison;
 *   - with polling on (the ctest entry sets 1000 us), some of those
 *     requests were joined by a helper that was polling, not woken;
 *     When a loaded machine (a sanitizer build beside other tests on two
 *     CPUs) kept every helper off a CPU through those bursts, more bursts
 *     follow on a buffered descriptor, up to EXTRA_ROUNDS, until one joins:
 *     with polling broken none ever does, and the check fails;
 *   - argv[1] "off" (OPENCUFILE_STRIPE_SPIN_US=0): none was.
 * Buffered and O_DIRECT descriptors, registered and unregistered memory.
 * The count comes from the fault-injection library (the stand-in build);
 * against the real driver the test links the plain library and checks the
 * bytes only.
 */
#include "test.h"

#include <dlfcn.h>

#define FLEN (24 * T_MIB + 12345)
#define NSLOT 8
#define GUARD 4096
#define SLOT (GUARD + 4096 + 2 * T_MIB + GUARD)
#define ROUNDS 6
#define EXTRA_ROUNDS 60

/* ocf_fault_polled_joins of the fault-injection library, or NULL. */
static unsigned long (*joins_fn)(void);

static unsigned long joins(void)
{
	return joins_fn ? joins_fn() : 0;
}

static const size_t sizes[] = {T_MIB, T_MIB + 4095, 3 * T_MIB / 2, 2 * T_MIB - 4096};

/* One burst: NSLOT reads back to back, then every slot checked. */
static void burst(CUfileHandle_t fh, struct t_mem *m, unsigned round, const char *what)
{
	size_t size[NSLOT];
	off_t foff[NSLOT], boff[NSLOT];
	t_mem_fill(m, 0, T_POISON, m->len);
	for (unsigned i = 0; i < NSLOT; i++) {
		unsigned k = round * NSLOT + i;
		size[i] = sizes[k % 4];
		/* Scattered offsets, a quarter of them not on a page. */
		foff[i] = (off_t)(((k * 7919u) % 19u) * T_MIB + (k % 4 == 1 ? 4095u : 0u));
		boff[i] = (off_t)(k % 2 ? 3 : 0);
		ssize_t r = cuFileRead(fh, (uint8_t *)m->ptr + (size_t)i * SLOT + GUARD, size[i], foff[i], boff[i]);
		if (r != (ssize_t)size[i])
			T_FAIL("%s: read %u of %zu at %lld returned %zd", what, k, size[i], (long long)foff[i], r);
	}
	t_check_slots(m, NSLOT, SLOT, GUARD, size, foff, boff, what);
}

static void bursts(CUfileHandle_t fh, struct t_mem *m, const char *what)
{
	for (unsigned round = 0; round < ROUNDS; round++)
		burst(fh, m, round, what);
}

int main(int argc, char **argv)
{
	bool off = argc > 1 && !strcmp(argv[1], "off");
	t_cuda_require();
	joins_fn = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "ocf_fault_polled_joins");
	if (!joins_fn)
		printf("note: no count of polled joins (not the fault-injection library)\n");
	const char *path = t_make_pattern_file(FLEN, 0);
	T_CUFILE_OK(cuFileDriverOpen());
	struct t_mem m;
	t_mem_alloc(&m, T_MEM_DEVICE, NSLOT * SLOT);
	unsigned long before = joins();

	bool direct = t_each_descriptor(path, &m, bursts);

	if (joins_fn) {
		unsigned long n = joins() - before;
		printf("requests joined by a polling helper: %lu of %d\n", n, (direct ? 3 : 2) * ROUNDS * NSLOT);
		if (!off && n == 0) {
			int fd = t_open(path, O_RDONLY);
			CUfileHandle_t fh = t_register_fd(fd);
			unsigned extra = 0;
			while (n == 0 && extra < EXTRA_ROUNDS) {
				burst(fh, &m, extra % ROUNDS, "buffered, more bursts");
				extra++;
				n = joins() - before;
			}
			cuFileHandleDeregister(fh);
			close(fd);
			printf("after %u more bursts of %d: %lu joined\n", extra, NSLOT, n);
		}
		t_set_case(off ? "no helper polls with OPENCUFILE_STRIPE_SPIN_US=0" : "helpers polling join requests");
		if (off)
			T_EQ_U(n, 0);
		else
			T_ASSERT(n > 0);
	}
	t_mem_free(&m);
	T_CUFILE_OK(cuFileDriverClose());
	return 0;
}
