/* SPDX-License-Identifier: Apache-2.0 */
/* See one.h. */
#include <stddef.h>
