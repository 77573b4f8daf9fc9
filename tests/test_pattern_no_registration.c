/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Best-practices pattern 3: no buffer registration at all.  Reads and
 * writes of small and large sizes go straight from an unregistered buffer,
 * addressed both by base pointer + bufPtr_offset and by an interior
 * pointer.
 */
#include "pattern_test_util.h"

#define BUF (8 * T_MIB)

static void body(struct pt *p)
{
	static const size_t sizes[] = {4096, 65536, 1048576, 3 * 1048576, 8 * 1048576};

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = sizes[i];
		off_t foff = (off_t)(i * T_MIB);
		pt_read(p, 0, size, foff, 0);
		pt_write(p, 0, size, foff, 0);
		if (size <= BUF / 2) {
			/* Interior pointer, and base + offset. */
			pt_read(p, BUF / 2, size, foff + 4096, 0);
			pt_write(p, 0, size, foff + 8192, (off_t)(BUF / 2));
		}
	}
}

int main(void)
{
	pt_run(BUF, body);
	return T_EXIT_PASS;
}
