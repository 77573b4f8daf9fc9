/* SPDX-License-Identifier: Apache-2.0 */
/*
 * driver.h - the driver lifecycle: reference-counted open/close and the
 * gate every API call passes.
 */
#ifndef OCF_DRIVER_H_
#define OCF_DRIVER_H_

#include <stdbool.h>

/* Enters an API call that needs the driver open.  With implicit_open, a
 * closed driver is opened first (as cuFileHandleRegister, cuFileBufRegister,
 * cuFileRead and cuFileWrite do).  Returns 0 (then driver_exit() must
 * follow) or an error. */
int driver_enter(bool implicit_open);
void driver_exit(void);

/* The first thing every public entry point does (before any lock): 0, or
 * CU_FILE_DRIVER_NOT_INITIALIZED in the child of a fork() made after the
 * process had used the library, where nothing may be touched. */
int driver_process_check(void);

int driver_open(void);
int driver_close(void);
long driver_use_count(void);
bool driver_is_open(void);
/* Runs fn(is_open, arg) under the driver's state lock (no open or close can
 * happen meanwhile); returns fn's result. */
int driver_with_state_locked(int (*fn)(bool is_open, void *arg), void *arg);

/* Asynchronous operations: driver_hold(n) (called inside the gate, never
 * under a subsystem lock: a close tears down under the driver's lock) takes
 * n in-flight references that outlive the API call, each released by
 * driver_release() when its operation completes; a close waits for them.  The
 * thread running such an operation brackets it with driver_adopt() /
 * driver_unadopt(), so that API calls it makes nest in the held reference. */
void driver_hold(unsigned n);
void driver_release(void);
void driver_adopt(void);
void driver_unadopt(void);

#endif /* OCF_DRIVER_H_ */
