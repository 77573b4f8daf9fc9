/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileDriverSetP2PFlags / cuFileDriverGetP2PFlags with no peer-to-peer
 * data path: every type reads back 0; clearing succeeds; the one flag valid
 * on this architecture is refused with CU_FILE_PLATFORM_NOT_SUPPORTED (it
 * cannot take effect) and a log line; internal or foreign flags, unknown
 * types (10, 14 and beyond) and a NULL pointer are CU_FILE_INVALID_VALUE;
 * all of it with the driver closed and open; the driver properties never
 * claim CU_FILE_P2P_SUPPORTED.
 */
#include "test.h"

static void round_trip(void)
{
	for (unsigned t = 0; t < 16; t++) {
		bool valid = t <= CU_FILE_VIRTIOFS_SUPPORTED && t != 10;
		CUfileP2PFlags_t f = (CUfileP2PFlags_t)77;
		t_set_case("type %u", t);
		T_CUFILE(cuFileDriverGetP2PFlags((CUfileDriverStatusFlags_t)t, &f),
			 valid ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
		if (valid)
			T_EQ(f, 0);
		T_CUFILE(cuFileDriverSetP2PFlags((CUfileDriverStatusFlags_t)t, (CUfileP2PFlags_t)0),
			 valid ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
	}
	t_set_case("%s", "NULL");
	T_CUFILE(cuFileDriverGetP2PFlags(CU_FILE_NVME_SUPPORTED, NULL), CU_FILE_INVALID_VALUE);
#if defined(__aarch64__)
	CUfileP2PFlags_t mine = CU_FILE_P2P_FLAG_C2C, foreign = CU_FILE_P2P_FLAG_PCI_P2PDMA;
#else
	CUfileP2PFlags_t mine = CU_FILE_P2P_FLAG_PCI_P2PDMA, foreign = CU_FILE_P2P_FLAG_C2C;
#endif
	t_set_case("%s", "the architecture's flag");
	T_CUFILE(cuFileDriverSetP2PFlags(CU_FILE_NVME_SUPPORTED, mine), CU_FILE_PLATFORM_NOT_SUPPORTED);
	unsigned bad[] = {(unsigned)foreign, (unsigned)CU_FILE_P2P_FLAG_NVFS, (unsigned)CU_FILE_P2P_FLAG_DMABUF,
			  16, 15, (unsigned)mine | 2};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t_set_case("flags %#x", bad[i]);
		T_CUFILE(cuFileDriverSetP2PFlags(CU_FILE_NVME_SUPPORTED, (CUfileP2PFlags_t)bad[i]),
			 CU_FILE_INVALID_VALUE);
	}
	CUfileP2PFlags_t f = (CUfileP2PFlags_t)77;
	t_set_case("%s", "still 0 after refused sets");
	T_CUFILE_OK(cuFileDriverGetP2PFlags(CU_FILE_NVME_SUPPORTED, &f));
	T_EQ(f, 0);
}

int main(void)
{
	round_trip();
	T_EQ(cuFileUseCount(), 0);
	T_CUFILE_OK(cuFileDriverOpen());
	round_trip();
	CUfileDrvProps_t p;
	T_CUFILE_OK(cuFileDriverGetProperties(&p));
	t_set_case("%s", "properties");
	T_EQ(p.fflags & (1u << CU_FILE_P2P_SUPPORTED), 0);
	T_EQ(p.nvfs.dstatusflags & (1u << CU_FILE_VIRTIOFS_SUPPORTED), 0);
	T_CUFILE_OK(cuFileDriverClose());
	/* Parameters can still be set after P2P calls with the driver closed. */
	T_CUFILE_OK(cuFileDriverSetP2PFlags(CU_FILE_NVME_SUPPORTED, (CUfileP2PFlags_t)0));
	T_CUFILE_OK(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE, true));
	bool b = false;
	T_CUFILE_OK(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE, &b));
	T_ASSERT(b);
	return T_EXIT_PASS;
}
