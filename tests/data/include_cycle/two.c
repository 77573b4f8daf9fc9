/* SPDX-License-Identifier: Apache-2.0 */
/* See one.h: two.c and two.h are one module, which includes one.h. */
#include "two.h"
#include "one.h"
