/* SPDX-License-Identifier: Apache-2.0 */
/* The cuFileDriverSet* property setters refuse what NVIDIA's libcufile
 * 1.15.1 refuses, with its codes (measured: tests/gpu/differential.c
 * param_values, docs/compatibility.md "Parameter values"), driver closed
 * and open, and the value stays as it was (the getter, the properties, the
 * poll-mode flag of SetPollMode):
 *   SetMaxDirectIOSize  63, 16385, 0, 2^40, SIZE_MAX    UNSUPPORTED_LIMIT
 *   SetMaxCacheSize     268435457, 2^40, SIZE_MAX       INVALID_VALUE
 *   SetMaxPinnedMemSize 63                              UNSUPPORTED_LIMIT
 *                       268435457, 2^40, SIZE_MAX       INVALID_VALUE
 *   SetPollMode(true,)  3, 0, 18014398509481981, SIZE_MAX UNSUPPORTED_LIMIT
 * One ERROR line names the call and the range.  cuFileSetParameterSizeT
 * takes the same values for the same keys (it refuses nothing). */
#include "config_test_util.h"

enum { DIO, CACHE, PINNED, POLL };
static const CUFileSizeTConfigParameter_t param_of[] = {
	[DIO] = CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB,
	[CACHE] = CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB,
	[PINNED] = CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB,
	[POLL] = CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB,
};
/* A value inside each range, set first so that "unchanged" is not just
 * "the default". */
static const size_t inside[] = {[DIO] = 128, [CACHE] = 65536, [PINNED] = 1 << 20, [POLL] = 8};

#define HUGE40 ((size_t)1 << 40)
static const struct {
	int setter;
	size_t value;
	CUfileOpError want;
} refused[] = {
	{DIO, 63, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{DIO, 16385, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{DIO, 0, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{DIO, HUGE40, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{DIO, SIZE_MAX, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{CACHE, 268435457, CU_FILE_INVALID_VALUE},
	{CACHE, HUGE40, CU_FILE_INVALID_VALUE},
	{CACHE, SIZE_MAX, CU_FILE_INVALID_VALUE},
	{PINNED, 63, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{PINNED, 268435457, CU_FILE_INVALID_VALUE},
	{PINNED, HUGE40, CU_FILE_INVALID_VALUE},
	{PINNED, SIZE_MAX, CU_FILE_INVALID_VALUE},
	{POLL, 3, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{POLL, 0, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{POLL, 18014398509481981ull, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
	{POLL, SIZE_MAX, CU_FILE_DRIVER_UNSUPPORTED_LIMIT},
};

static CUfileError_t set(int setter, size_t v)
{
	switch (setter) {
	case DIO: return cuFileDriverSetMaxDirectIOSize(v);
	case CACHE: return cuFileDriverSetMaxCacheSize(v);
	case PINNED: return cuFileDriverSetMaxPinnedMemSize(v);
	default: return cuFileDriverSetPollMode(true, v);
	}
}

/* The property field behind a setter. */
static size_t prop_of(const CUfileDrvProps_t *p, int setter)
{
	switch (setter) {
	case DIO: return p->nvfs.max_direct_io_size;
	case CACHE: return p->max_device_cache_size;
	case PINNED: return p->max_device_pinned_mem_size;
	default: return p->nvfs.poll_thresh_size;
	}
}

static void expect_unchanged(int setter, bool open)
{
	size_t v;
	bool poll = true;
	T_CUFILE_OK(cuFileGetParameterSizeT(param_of[setter], &v));
	T_EQ_U(v, inside[setter]);
	T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, &poll));
	T_ASSERT(!poll); /* a refused SetPollMode(true, ...) does not turn polling on */
	if (open) {
		CUfileDrvProps_t p;
		T_CUFILE_OK(cuFileDriverGetProperties(&p));
		T_EQ_U(prop_of(&p, setter), inside[setter]);
		T_EQ(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE), 0);
	}
}

int main(void)
{
	t_clear_config_env();
	const char *log = t_fresh_log("ERROR");
	for (int open = 0; open < 2; open++) {
		if (open)
			T_CUFILE_OK(cuFileDriverOpen());
		for (int s = DIO; s <= POLL; s++)
			T_CUFILE_OK(s == POLL ? cuFileDriverSetPollMode(false, inside[s]) : set(s, inside[s]));
		for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			t_set_case("%s, setter %d, value %zu", open ? "open" : "closed", refused[i].setter,
				   refused[i].value);
			T_CUFILE(set(refused[i].setter, refused[i].value), refused[i].want);
			expect_unchanged(refused[i].setter, open);
		}
		t_set_case("%s", "");
		if (open)
			T_CUFILE_OK(cuFileDriverClose());
	}
	if (log) {
		const char *txt = t_slurp(log);
		T_ASSERT(strstr(txt, "cuFileDriverSetMaxDirectIOSize(63): 63 is out of range [64, 16384]; the value "
				     "stays as it was") != NULL);
		T_ASSERT(strstr(txt, "cuFileDriverSetMaxPinnedMemSize(268435457): 268435457 is out of range") != NULL);
	}

	/* The same values through the parameter setter: taken and read back. */
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		size_t v;
		t_set_case("cuFileSetParameterSizeT, setter %d, value %zu", refused[i].setter, refused[i].value);
		T_CUFILE_OK(cuFileSetParameterSizeT(param_of[refused[i].setter], refused[i].value));
		T_CUFILE_OK(cuFileGetParameterSizeT(param_of[refused[i].setter], &v));
		T_EQ_U(v, refused[i].value);
	}
	return T_EXIT_PASS;
}
