/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Best-practices pattern 5: buffer offsets (bufPtr_offset) that are not
 * aligned, inside one registered buffer, with aligned and unaligned file
 * offsets.  Bytes of the buffer around each range must stay untouched.
 */
#include "pattern_test_util.h"

#define BUF (4 * T_MIB)

static void body(struct pt *p)
{
	static const off_t boffs[] = {1, 3, 511, 4095, 4097, 65536 + 7, 1048576 + 1};
	static const size_t sizes[] = {1, 4096, 12345, 65536, 1048576 + 17};

	T_CUFILE_OK(cuFileBufRegister(p->mem.ptr, BUF, 0));
	for (unsigned i = 0; i < sizeof(boffs) / sizeof(boffs[0]); i++) {
		for (unsigned j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			off_t foff = (off_t)(j * T_MIB) + ((i % 2) ? 0 : 123);
			pt_read(p, 0, sizes[j], foff, boffs[i]);
			pt_write(p, 0, sizes[j], foff, boffs[i]);
		}
	}
	T_CUFILE_OK(cuFileBufDeregister(p->mem.ptr));
}

int main(void)
{
	pt_run(BUF, body);
	return T_EXIT_PASS;
}
