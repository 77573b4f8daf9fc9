/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile_library.h - which libcufile a benchmark really runs against.
 *
 * Prints "# <tool>: cuFile library <path> (libcufile mapped: N: <paths>)":
 * the file that provides cuFileRead and every libcufile.so* mapped into the
 * process, so a comparison script can check that LD_PRELOAD or
 * LD_LIBRARY_PATH selected the library it meant (scripts/gpu-bench.sh does).
 * No newline: the caller completes the line.
 */
#ifndef OCF_TOOLS_CUFILE_LIBRARY_H_
#define OCF_TOOLS_CUFILE_LIBRARY_H_

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cufile.h>

static inline void print_cufile_library(const char *tool)
{
	Dl_info info;
	const char *lib = "?";
	if (dladdr((void *)cuFileRead, &info) && info.dli_fname)
		lib = info.dli_fname;
	char real[PATH_MAX];
	if (realpath(lib, real))
		lib = real;
	printf("# %s: cuFile library %s", tool, lib);
	FILE *m = fopen("/proc/self/maps", "r");
	if (!m)
		return;
	char line[4608], seen[4][1024];
	int ns = 0;
	while (fgets(line, sizeof(line), m)) {
		char *p = strchr(line, '/');
		if (!p)
			continue;
		p[strcspn(p, "\n")] = 0;
		const char *base = strrchr(p, '/') + 1;
		if (strncmp(base, "libcufile.so", 12) != 0) /* not libcufile_rdma etc. */
			continue;
		int dup = 0;
		for (int i = 0; i < ns; i++)
			dup |= !strcmp(seen[i], p);
		if (!dup && ns < 4)
			snprintf(seen[ns++], sizeof(seen[0]), "%s", p);
	}
	fclose(m);
	printf(" (libcufile mapped: %d:", ns);
	for (int i = 0; i < ns; i++)
		printf(" %s", seen[i]);
	printf(")");
}

#endif /* OCF_TOOLS_CUFILE_LIBRARY_H_ */
