/* SPDX-License-Identifier: Apache-2.0 */
/* A planner header of values. */
