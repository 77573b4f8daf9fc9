/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ptx_kernels.h - two small GPU kernels as PTX text, JIT-compiled by the
 * driver (cuModuleLoadData), so GPU tests and benchmarks need no CUDA
 * compiler:
 *
 *   ocf_checksum(const uint8_t *buf, uint64_t n, uint64_t *out)
 *       *out += sum over i < n of buf[i] * (i % 251 + 1)   (grid-stride
 *       loop, one atomic add per thread; position-sensitive, so a buffer
 *       that is stale, shifted or partly written gives another sum)
 *   ocf_spin(uint64_t ns)
 *       every thread spins until the GPU's global timer advanced by ns
 *       (a compute kernel of known length that uses no memory)
 *
 * ocf_checksum_host() is the same sum on the CPU.
 */
#ifndef OCF_PTX_KERNELS_H_
#define OCF_PTX_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

static const char ocf_ptx_kernels[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry ocf_checksum(\n"
    "	.param .u64 p_buf,\n"
    "	.param .u64 p_n,\n"
    "	.param .u64 p_out\n"
    ")\n"
    "{\n"
    "	.reg .pred %p<2>;\n"
    "	.reg .b32 %r<6>;\n"
    "	.reg .b64 %rd<12>;\n"
    "\n"
    "	ld.param.u64 %rd1, [p_buf];\n"
    "	ld.param.u64 %rd2, [p_n];\n"
    "	ld.param.u64 %rd3, [p_out];\n"
    "	cvta.to.global.u64 %rd1, %rd1;\n"
    "	cvta.to.global.u64 %rd3, %rd3;\n"
    "	mov.u32 %r1, %ctaid.x;\n"
    "	mov.u32 %r2, %ntid.x;\n"
    "	mov.u32 %r3, %tid.x;\n"
    "	mul.wide.u32 %rd4, %r1, %r2;\n"
    "	cvt.u64.u32 %rd5, %r3;\n"
    "	add.u64 %rd4, %rd4, %rd5;\n"
    "	mov.u32 %r4, %nctaid.x;\n"
    "	mul.wide.u32 %rd6, %r4, %r2;\n"
    "	mov.u64 %rd7, 0;\n"
    "$L_loop:\n"
    "	setp.ge.u64 %p1, %rd4, %rd2;\n"
    "	@%p1 bra $L_done;\n"
    "	add.u64 %rd8, %rd1, %rd4;\n"
    "	ld.global.u8 %r5, [%rd8];\n"
    "	cvt.u64.u32 %rd9, %r5;\n"
    "	rem.u64 %rd10, %rd4, 251;\n"
    "	add.u64 %rd10, %rd10, 1;\n"
    "	mad.lo.u64 %rd7, %rd9, %rd10, %rd7;\n"
    "	add.u64 %rd4, %rd4, %rd6;\n"
    "	bra $L_loop;\n"
    "$L_done:\n"
    "	atom.global.add.u64 %rd11, [%rd3], %rd7;\n"
    "	ret;\n"
    "}\n"
    "\n"
    ".visible .entry ocf_spin(\n"
    "	.param .u64 p_ns\n"
    ")\n"
    "{\n"
    "	.reg .pred %p<2>;\n"
    "	.reg .b64 %rd<6>;\n"
    "\n"
    "	ld.param.u64 %rd1, [p_ns];\n"
    "	mov.u64 %rd2, %globaltimer;\n"
    "$L_spin:\n"
    "	mov.u64 %rd3, %globaltimer;\n"
    "	sub.u64 %rd4, %rd3, %rd2;\n"
    "	setp.lt.u64 %p1, %rd4, %rd1;\n"
    "	@%p1 bra $L_spin;\n"
    "	ret;\n"
    "}\n";

static inline uint64_t ocf_checksum_host(const uint8_t *buf, size_t n)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (uint64_t)buf[i] * (i % 251 + 1);
	return sum;
}

#endif /* OCF_PTX_KERNELS_H_ */
