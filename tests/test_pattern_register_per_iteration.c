/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Best-practices pattern 1: register the buffer on every iteration.
 * Each iteration registers one 4 MiB buffer, reads a block of the file into
 * it, writes a block from it, and deregisters it again; sizes and offsets
 * change from one iteration to the next.  Data checked every time.
 */
#include "pattern_test_util.h"

#define BUF (4 * T_MIB)

static void body(struct pt *p)
{
	for (unsigned it = 0; it < 24; it++) {
		size_t size = (size_t)(64 * T_KIB) << (it % 6); /* 64 KiB .. 2 MiB */
		off_t foff = (off_t)((it * 3 + 1) % 8) * (off_t)T_MIB;
		T_CUFILE_OK(cuFileBufRegister(p->mem.ptr, BUF, 0));
		pt_read(p, 0, size, foff, (off_t)((it % 4) * 4096));
		pt_write(p, 0, size, foff + (off_t)T_MIB, 0);
		T_CUFILE_OK(cuFileBufDeregister(p->mem.ptr));
	}
	/* Deregistered means deregistered. */
	T_CUFILE(cuFileBufDeregister(p->mem.ptr), CU_FILE_MEMORY_NOT_REGISTERED);
}

int main(void)
{
	pt_run(BUF, body);
	return T_EXIT_PASS;
}
