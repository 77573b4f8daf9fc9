/* SPDX-License-Identifier: Apache-2.0 */
/*
 * size_arg.h - command-line sizes for the tools: "4096", "4K", "16M", "4G",
 * "1T", "64KiB", "1MB" (binary multiples).
 */
#ifndef OCF_TOOLS_SIZE_ARG_H_
#define OCF_TOOLS_SIZE_ARG_H_

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static inline int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	uint64_t mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	default: break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	*out = (uint64_t)(v * (double)mul);
	return 0;
}

#endif /* OCF_TOOLS_SIZE_ARG_H_ */
