/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Best-practices pattern 4: file offsets that are not 4 KiB aligned (and
 * sizes that are not either), with a registered, aligned buffer.  On an
 * O_DIRECT descriptor the library has to widen reads and split writes
 * into an aligned body and unaligned head and tail; neighbouring file bytes
 * must stay untouched.
 */
#include "pattern_test_util.h"

#define BUF (4 * T_MIB)

static void body(struct pt *p)
{
	static const off_t offs[] = {1, 511, 512, 4095, 4097, 65535, 1048576 + 3, 5 * 1048576 + 2047};
	static const size_t sizes[] = {1, 100, 4095, 4096, 4097, 65537, 1048575, 3 * 1048576 + 5};

	T_CUFILE_OK(cuFileBufRegister(p->mem.ptr, BUF, 0));
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		for (unsigned j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			pt_read(p, 0, sizes[j], offs[i], 0);
			if ((i + j) % 2 == 0)
				pt_write(p, 0, sizes[j], offs[i], 0);
		}
	}
	T_CUFILE_OK(cuFileBufDeregister(p->mem.ptr));
}

int main(void)
{
	pt_run(BUF, body);
	return T_EXIT_PASS;
}
