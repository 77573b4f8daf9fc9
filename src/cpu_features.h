/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_features.h - the CPU's optional instructions the library may run:
 * the write-back of staged bytes (clwb, clflushopt; fileio.c) and the copy
 * loops of mapped reads (AVX-512, AVX2; filemap.c).
 *
 * What the CPU reports, less what the process cannot run: valgrind passes
 * the host's CPUID through but cannot run every instruction it reports
 * (clwb and clflushopt: SIGILL in valgrind 3.19; AVX-512, and in some
 * versions AVX2 streaming stores), so under valgrind none of them is
 * offered.  Valgrind always preloads its core (LD_PRELOAD names
 * vgpreload), which is how a process under it is told.
 */
#ifndef OCF_CPU_FEATURES_H_
#define OCF_CPU_FEATURES_H_

#include <stdbool.h>

struct ocf_cpu_features {
	bool clwb, clflushopt; /* cache-line write-back */
	bool avx512f, avx2;    /* wide streaming stores */
};

/* Read at the first call (x86-64; elsewhere every feature is false). */
const struct ocf_cpu_features *ocf_cpu_features(void);

#endif /* OCF_CPU_FEATURES_H_ */
