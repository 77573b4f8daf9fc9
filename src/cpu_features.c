/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_features.c - which of the CPU's optional instructions the library may
 * run (cpu_features.h): CPUID, less what valgrind cannot run.
 */
#define _GNU_SOURCE
#include "cpu_features.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct ocf_cpu_features features;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Valgrind preloads its core into every process it runs.  Not a setting:
 * read with getenv, as the dynamic loader read it. */
static bool under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");
	return pre && strstr(pre, "vgpreload");
}

static void read_features(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
	unsigned ebx7 = 0;
	if (a >= 7) {
		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
		ebx7 = b;
	}
	if (under_valgrind())
		return;
	features.clwb = ebx7 & (1u << 24);
	features.clflushopt = ebx7 & (1u << 23);
	features.avx512f = __builtin_cpu_supports("avx512f");
	features.avx2 = __builtin_cpu_supports("avx2");
#endif
}

const struct ocf_cpu_features *ocf_cpu_features(void)
{
	pthread_once(&once, read_features);
	return &features;
}
