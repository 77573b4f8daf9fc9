/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile.h compiles as C++17 (extern "C", no C-only constructs), its
 * declarations link against the C library, and its inline helpers work.
 */
#include <cufile.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(sizeof(CUfileError_t) == 8, "CUfileError_t size");
static_assert(sizeof(CUfileDescr_t) == 24, "CUfileDescr_t size");
static_assert(sizeof(CUfileIOParams_t) == 64, "CUfileIOParams_t size");
static_assert(sizeof(CUfileStatsLevel3_t) == 5000, "CUfileStatsLevel3_t size");
static_assert(std::is_standard_layout<CUfileIOParams_t>::value, "standard layout");
static_assert(std::is_trivially_copyable<CUfileDrvProps_t>::value, "trivially copyable");

int main()
{
	int v = 0;
	CUfileError_t st = cuFileGetVersion(&v);
	if (st.err != CU_FILE_SUCCESS || v != 1150) {
		std::fprintf(stderr, "FAIL: cuFileGetVersion: err %d version %d\n", (int)st.err, v);
		return 1;
	}
	const char *s = CUFILE_ERRSTR(-CU_FILE_INVALID_VALUE);
	if (!s || !*s) {
		std::fprintf(stderr, "FAIL: CUFILE_ERRSTR gave an empty string\n");
		return 1;
	}
	CUfileDescr_t d;
	std::memset(&d, 0, sizeof(d));
	d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	d.handle.fd = -1;
	CUfileHandle_t fh = nullptr;
	st = cuFileHandleRegister(&fh, &d);
	if (st.err == CU_FILE_SUCCESS) {
		std::fprintf(stderr, "FAIL: fd -1 registered\n");
		return 1;
	}
	cuFileDriverClose();
	return 0;
}
