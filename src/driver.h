/* SPDX-License-Identifier: Apache-2.0 */
/*
 * driver.h - the driver lifecycle: reference-counted open/close and the
 * gate every API call passes.  The driver is the floor of the library: it
 * calls no subsystem by name (the lifecycle table below says what each one
 * does at open, close and exit), and every subsystem may call it.
 */
#ifndef OCF_DRIVER_H_
#define OCF_DRIVER_H_

#include <stdbool.h>
#include <stddef.h>

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

/* The lifecycle table: what the subsystems do when the driver opens, when
 * it closes and when the process exits.  The driver runs the rows of a
 * phase in table order.  The table is defined in lifecycle.c, the one file
 * that knows every subsystem, with the reason for each row's place. */
enum driver_phase {
	/* The open that makes the driver usable (the first open, or the first
	 * call after a close), under the state lock: no other open, close or
	 * call runs meanwhile. */
	DRIVER_OPEN,
	/* The last close, once new calls are held back and before it waits
	 * for the calls and operations in flight.  Without the state lock, so
	 * that a row may drop in-flight references (driver_release). */
	DRIVER_CLOSE_BEGIN,
	/* The last close, once nothing is in flight and nothing can start,
	 * under the state lock. */
	DRIVER_CLOSE,
	/* Process exit, from the handler driver_arm_exit() registers.  Other
	 * threads may still be inside calls and hold locks: rows only try
	 * locks and free nothing that such threads use. */
	DRIVER_EXIT,
};

struct driver_step {
	enum driver_phase phase;
	void (*run)(void);
};

extern const struct driver_step driver_lifecycle[];
extern const size_t driver_lifecycle_len;

/* Registers the exit handler that runs the DRIVER_EXIT rows, once per
 * process (later calls do nothing).  Exit handlers run in the reverse order
 * of their registration: called by a DRIVER_OPEN row right after the CUDA
 * driver was initialised, so that ours runs before the CUDA driver's own
 * exit teardown. */
void driver_arm_exit(void);

#endif /* OCF_DRIVER_H_ */
