/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile.h compiles as C++17 (extern "C", no C-only constructs), its
 * declarations link against the C library, and its inline helpers work.
 *
 * Built twice against the same library: as a program written for cuFile
 * 1.15 (-DOPENCUFILE_API_VERSION=1150: the 1.15 statistics layout and
 * file-system callbacks with non-const pointers, which C++ accepts only
 * there) and with the header's default, newest surface (const callbacks,
 * the 1.19 statistics layout, cuFileReadv/cuFileWritev).
 */
#include <cufile.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(sizeof(CUfileError_t) == 8, "CUfileError_t size");
static_assert(sizeof(CUfileDescr_t) == 24, "CUfileDescr_t size");
static_assert(sizeof(CUfileIOParams_t) == 64, "CUfileIOParams_t size");
#if OPENCUFILE_API_VERSION >= 1190
static_assert(sizeof(CUfileStatsLevel1_t) == 624, "CUfileStatsLevel1_t size (1.19)");
static_assert(sizeof(CUfileStatsLevel3_t) == 5112, "CUfileStatsLevel3_t size (1.19)");
static_assert(sizeof(CUfileIOVec_t) == 16, "CUfileIOVec_t size");
#define FS_CONST const
#else
static_assert(sizeof(CUfileStatsLevel1_t) == 512, "CUfileStatsLevel1_t size (1.15)");
static_assert(sizeof(CUfileStatsLevel3_t) == 5000, "CUfileStatsLevel3_t size");
#define FS_CONST
#endif

/* File-system callbacks as a program of that version writes them. */
static const char *my_fs_type(FS_CONST void *) { return "memfs"; }
static ssize_t my_read(FS_CONST void *, char *, size_t, loff_t, FS_CONST cufileRDMAInfo_t *) { return 0; }
static ssize_t my_write(FS_CONST void *, const char *, size_t n, loff_t, FS_CONST cufileRDMAInfo_t *)
{
	return (ssize_t)n;
}
static_assert(std::is_standard_layout<CUfileIOParams_t>::value, "standard layout");
static_assert(std::is_trivially_copyable<CUfileDrvProps_t>::value, "trivially copyable");

int main()
{
	int v = 0;
	CUfileError_t st = cuFileGetVersion(&v);
	if (st.err != CU_FILE_SUCCESS || v != OPENCUFILE_API_VERSION_MAX) {
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
	CUfileFSOps_t ops;
	std::memset(&ops, 0, sizeof(ops));
	ops.fs_type = my_fs_type;
	ops.read = my_read;
	ops.write = my_write;
	if (std::strcmp(ops.fs_type(nullptr), "memfs") != 0)
		return 1;

	/* The statistics getter this program's header selects fills exactly
	 * its struct: the guard bytes after it stay untouched. */
	if (cuFileSetStatsLevel(1).err != CU_FILE_SUCCESS)
		return 1;
	struct {
		CUfileStatsLevel1_t s;
		unsigned char guard[128];
	} l1;
	std::memset(&l1, 0xa5, sizeof(l1));
	st = cuFileGetStatsL1(&l1.s);
	if (st.err != CU_FILE_SUCCESS) {
		std::fprintf(stderr, "FAIL: cuFileGetStatsL1: %d\n", (int)st.err);
		return 1;
	}
	for (unsigned char g : l1.guard)
		if (g != 0xa5) {
			std::fprintf(stderr, "FAIL: cuFileGetStatsL1 wrote past the struct\n");
			return 1;
		}
#if OPENCUFILE_API_VERSION >= 1190
	if (l1.s.readv_ops.ok != 0 || l1.s.writev_ops.err != 0) {
		std::fprintf(stderr, "FAIL: vectored counters not filled\n");
		return 1;
	}
	CUfileIOVec_t iov[1] = {{nullptr, 0}};
	errno = 0;
	if (cuFileReadv(nullptr, iov, 1, 0, 0) != -1 || errno != EINVAL) {
		std::fprintf(stderr, "FAIL: cuFileReadv with a NULL handle\n");
		return 1;
	}
#endif
	cuFileDriverClose();
	return 0;
}
