/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostshare.h - read-ahead fillers shared out among the library's
 * processes on one host (hostshare.c).
 */
#ifndef OCF_HOSTSHARE_H_
#define OCF_HOSTSHARE_H_

/* Reads the settings (at driver open, before any fill). */
void hs_start(void);
/* Gives this process's slot back and unmaps the table (driver close, no
 * fill running). */
void hs_stop(void);
/* The most helpers one window of this process may fill with now: 0 (no
 * bound) while no other process fills, else max(1, host fillers / the
 * processes filling).  Marks this process as filling.  Called at every
 * fill decision: costs a clock read except once per period. */
int hs_fill_bound(void);

#endif /* OCF_HOSTSHARE_H_ */
