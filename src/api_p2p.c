/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_p2p.c - cuFileDriverSetP2PFlags / cuFileDriverGetP2PFlags (1.16).
 *
 * The flags choose, per file-system or device type, a peer-to-peer
 * transport the I/O would try instead of nvidia-fs.  This library has no
 * peer-to-peer data path at all: every transfer is staged through pinned
 * host memory.  So no flag can take effect, and the calls say so: clearing
 * (0) succeeds, every type reads back 0, and a bit that would be valid on
 * this architecture (PCI P2PDMA on x86-64, C2C on aarch64) is refused with
 * CU_FILE_PLATFORM_NOT_SUPPORTED and a log line naming the reason, while
 * bits no caller may set (NVFS, DMABUF, the other architecture's, unknown
 * ones) are refused with CU_FILE_INVALID_VALUE, as NVIDIA's library refuses
 * them.  Both calls work with the driver open or closed.
 */
#define _GNU_SOURCE
#include "api.h"
#include "internal.h"
#include "log.h"

/* The status flags name types 0..13; 10 was never assigned. */
static bool status_flag_ok(unsigned f) { return f <= (unsigned)CU_FILE_VIRTIOFS_SUPPORTED && f != 10; }

#if defined(__aarch64__)
#define OCF_P2P_ARCH_FLAG ((unsigned)CU_FILE_P2P_FLAG_C2C)
#define OCF_P2P_ARCH_NAME "C2C"
#else
#define OCF_P2P_ARCH_FLAG ((unsigned)CU_FILE_P2P_FLAG_PCI_P2PDMA)
#define OCF_P2P_ARCH_NAME "PCI P2PDMA"
#endif

OCF_EXPORT CUfileError_t cuFileDriverSetP2PFlags(CUfileDriverStatusFlags_t status_flag, CUfileP2PFlags_t p2p_flags)
{
	API_FORK_GUARD(API_FORK_STATUS);
	unsigned f = (unsigned)p2p_flags;
	if (!status_flag_ok((unsigned)status_flag)) {
		log_error("cuFileDriverSetP2PFlags: %u is not a file-system or device type", (unsigned)status_flag);
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	}
	if (f == 0)
		return api_status(0); /* nothing enabled: the only state here */
	if (f & ~OCF_P2P_ARCH_FLAG) {
		log_error("cuFileDriverSetP2PFlags: flags %#x: only " OCF_P2P_ARCH_NAME " (%#x) may be set on this "
			  "architecture", f, OCF_P2P_ARCH_FLAG);
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	}
	log_error("cuFileDriverSetP2PFlags: opencufile has no " OCF_P2P_ARCH_NAME
		  " data path; I/O of type %u stays staged through host memory. Clear the flag (0) to silence this",
		  (unsigned)status_flag);
	return api_status(OCF_ERR(CU_FILE_PLATFORM_NOT_SUPPORTED));
}

OCF_EXPORT CUfileError_t cuFileDriverGetP2PFlags(CUfileDriverStatusFlags_t status_flag, CUfileP2PFlags_t *p2p_flags)
{
	API_FORK_GUARD(API_FORK_STATUS);
	if (!p2p_flags || !status_flag_ok((unsigned)status_flag))
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	*p2p_flags = (CUfileP2PFlags_t)0;
	return api_status(0);
}
