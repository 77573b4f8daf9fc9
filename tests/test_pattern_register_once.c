/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Best-practices pattern 2: register the buffer once, then reuse it for many
 * reads and writes at different buffer offsets (bufPtr_offset within the
 * registration), and deregister it at the end.
 */
#include "pattern_test_util.h"

#define BUF (8 * T_MIB)

static void body(struct pt *p)
{
	T_CUFILE_OK(cuFileBufRegister(p->mem.ptr, BUF, 0));
	for (unsigned it = 0; it < 32; it++) {
		size_t size = (size_t)(4 * T_KIB) << (it % 10); /* 4 KiB .. 2 MiB */
		off_t boff = (off_t)((it * 5) % 16) * (off_t)(256 * T_KIB);
		off_t foff = (off_t)((it * 7) % 56) * (off_t)(256 * T_KIB);
		pt_read(p, 0, size, foff, boff);
		pt_write(p, 0, size, foff, boff);
	}
	/* The whole registration in one call. */
	pt_read(p, 0, BUF, (off_t)(4 * T_MIB), 0);
	T_CUFILE_OK(cuFileBufDeregister(p->mem.ptr));
}

int main(void)
{
	pt_run(BUF, body);
	return T_EXIT_PASS;
}
