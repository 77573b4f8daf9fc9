/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device memory of every allocation kind registers and carries reads and
 * writes with correct data: cuMemAlloc, VMM (cuMemCreate + cuMemMap),
 * stream-ordered pool memory (cuMemAllocAsync) and managed memory
 * (cuMemAllocManaged).  The less common entry points are looked up at run
 * time.  A driver without one cannot show that kind works: the kinds it has
 * are still exercised (any failure fails the test), then the test exits 77
 * (skipped) naming the missing kinds, rather than passing on fewer kinds.
 */
#include "test.h"

#define LEN (2 * T_MIB)

static const char *path;
static CUfileHandle_t fh;
static int check_fd;
static uint64_t flen;
static int kinds_run;
static char missing[256]; /* kinds the driver lacks, for the skip message */

/* Register, read with offsets, write, deregister; device bytes checked with
 * cuMemcpyDtoH only. */
static void exercise(CUdeviceptr d, size_t len, const char *what)
{
	uint8_t *host = malloc(len), *pois = malloc(len);
	void *p = (void *)(uintptr_t)d;

	T_ASSERT(host && pois);
	memset(pois, T_POISON, len);
	for (int reg = 0; reg < 2; reg++) {
		t_set_case("%s %s", what, reg ? "registered" : "unregistered");
		if (reg)
			T_CUFILE_OK(cuFileBufRegister(p, len, 0));
		/* read [100, len - 100) of the buffer from file offset 4095 */
		t_dev_put(d, pois, len);
		T_IO(cuFileRead(fh, p, len - 200, 4095, 100), len - 200);
		t_dev_get(host, d, len);
		if (t_check_fill(host, 100, T_POISON, "guard before") ||
		    t_check_pattern(host + 100, len - 200, 4095, 0, "data") ||
		    t_check_fill(host + len - 100, 100, T_POISON, "guard after"))
			T_FAIL("bad read");
		/* write it back shifted, with a new pattern */
		uint8_t *src = malloc(len);
		T_ASSERT(src != NULL);
		t_fill_pattern(src, len, 0, 11);
		t_dev_put(d, src, len);
		T_IO(cuFileWrite(fh, p, len - 7, 1, 7), len - 7);
		uint8_t *back = malloc(len);
		T_ASSERT(back != NULL);
		T_EQ_U(t_pread_full(check_fd, back, len - 7, 1), len - 7);
		if (t_check_pattern(back, len - 7, 7, 11, "file after write"))
			T_FAIL("bad write");
		t_pwrite_pattern(check_fd, 1, len - 7, 0);
		free(back);
		free(src);
		if (reg)
			T_CUFILE_OK(cuFileBufDeregister(p));
	}
	t_set_case("%s", "");
	kinds_run++;
	free(host);
	free(pois);
}

static void note_missing(const char *kind)
{
	size_t n = strlen(missing);
	snprintf(missing + n, sizeof(missing) - n, "%s%s", n ? ", " : "", kind);
}

#define SYM(var, name)                                                                     \
	__typeof__(&name) var = (__typeof__(&name))t_cu_sym(#name)

static void vmm(void)
{
	SYM(create, cuMemCreate);
	SYM(reserve, cuMemAddressReserve);
	SYM(map, cuMemMap);
	SYM(set_access, cuMemSetAccess);
	SYM(unmap, cuMemUnmap);
	SYM(addr_free, cuMemAddressFree);
	SYM(release, cuMemRelease);
	SYM(granularity, cuMemGetAllocationGranularity);
	if (!create || !reserve || !map || !set_access || !unmap || !addr_free || !release ||
	    !granularity) {
		note_missing("VMM (cuMemCreate/cuMemMap)");
		return;
	}
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = (int)t_cu_dev;
	size_t gran = 0;
	T_CU(granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	if (gran == 0)
		gran = 2 * T_MIB;
	size_t size = (LEN + gran - 1) / gran * gran;
	CUmemGenericAllocationHandle h;
	T_CU(create(&h, size, &prop, 0));
	CUdeviceptr va = 0;
	T_CU(reserve(&va, size, 0, 0, 0));
	T_CU(map(va, size, 0, h, 0));
	CUmemAccessDesc acc;
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	T_CU(set_access(va, size, &acc, 1));
	exercise(va, size, "VMM cuMemCreate+cuMemMap");
	T_CU(unmap(va, size));
	T_CU(addr_free(va, size));
	T_CU(release(h));
}

static void pool(void)
{
	SYM(alloc_async, cuMemAllocAsync);
	SYM(free_async, cuMemFreeAsync);
	SYM(sync, cuStreamSynchronize);
	if (!alloc_async || !free_async || !sync) {
		note_missing("pool (cuMemAllocAsync)");
		return;
	}
	CUdeviceptr d = 0;
	T_CU(alloc_async(&d, LEN, NULL));
	T_CU(sync(NULL));
	exercise(d, LEN, "pool cuMemAllocAsync");
	T_CU(free_async(d, NULL));
	T_CU(sync(NULL));
}

static void managed(void)
{
	SYM(alloc_managed, cuMemAllocManaged);
	if (!alloc_managed) {
		note_missing("managed (cuMemAllocManaged)");
		return;
	}
	CUdeviceptr d = 0;
	T_CU(alloc_managed(&d, LEN, CU_MEM_ATTACH_GLOBAL));
	exercise(d, LEN, "managed cuMemAllocManaged");
	T_CU(cuMemFree(d));
}

int main(void)
{
	t_cuda_require();
	flen = 4 * T_MIB;
	path = t_make_pattern_file(flen, 0);
	int fd = t_open(path, O_RDWR);
	check_fd = t_open(path, O_RDWR);

	T_CUFILE_OK(cuFileDriverOpen());
	fh = t_register_fd(fd);

	CUdeviceptr d = t_dev_alloc(LEN);
	exercise(d, LEN, "cuMemAlloc");
	T_CU(cuMemFree(d));
	vmm();
	pool();
	managed();
	fprintf(stderr, "%d memory kinds exercised\n", kinds_run);

	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	close(check_fd);
	close(fd);
	if (missing[0])
		T_SKIP("the driver lacks %s; only %d of 4 memory kinds exercised", missing, kinds_run);
	T_EQ(kinds_run, 4);
	return 0;
}
