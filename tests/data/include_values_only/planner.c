/* SPDX-License-Identifier: Apache-2.0 */
/* A planner that reads the engine: the include-graph check must refuse it. */
#include "planner.h"
#include "engine.h"
