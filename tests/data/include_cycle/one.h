/* SPDX-License-Identifier: Apache-2.0 */
/* A module graph with a circle (one -> two -> one), for
 * test_include_graph_reports_a_cycle: never compiled. */
#include "two.h"
