/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chunking.h - how the engine cuts a request: chunk size and participants
 * (design in chunking.c).
 */
#ifndef OCF_CHUNKING_H
#define OCF_CHUNKING_H

#include <stdbool.h>
#include <stddef.h>

#include "io.h"

/* Participants a request may have, the caller included; `request_max`:
 * the engine's bound per request (execution.max_request_parallelism). */
int chunk_participants(const struct ocf_io *io, int request_max);

/* What chunk_size() needs to know about a request besides the request. */
struct chunk_shape {
	size_t max_chunk; /* the staging buffer's size (at least the file's alignment and 4 KiB) */
	size_t min_chunk; /* the smallest chunk worth a helper (min_chunk_kb); read only with helpers */
	size_t skew0;	  /* the file offset's misalignment (chunk 0 ends there) */
	size_t align;	  /* chunk boundaries' file alignment (fio_piece_align; at most max_chunk) */
	int helpers;	  /* helpers asked for, the caller not counted */
	bool lone;	  /* a device read whose caller is alone in the engine */
};

/* The size of every chunk but the first (which is shorter by skew0). */
size_t chunk_size(const struct ocf_io *io, const struct chunk_shape *s);

#endif
