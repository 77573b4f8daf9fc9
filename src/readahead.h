/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readahead.h - the next bytes of a file that one caller reads in order,
 * read into staging by the engine's helpers before the caller asks for
 * them (readahead.c says how, and how the copy is kept true to the file).
 */
#ifndef OCF_READAHEAD_H_
#define OCF_READAHEAD_H_

/* Driver open: the engine's reads and the pools' waits come here from now
 * on, unless read-ahead is off (OPENCUFILE_READAHEAD=off). */
void ra_start(void);

/* Driver close, after every handle is gone: stops the thread that gives
 * back idle windows. */
void ra_stop(void);

#endif /* OCF_READAHEAD_H_ */
