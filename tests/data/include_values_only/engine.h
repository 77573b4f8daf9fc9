/* SPDX-License-Identifier: Apache-2.0 */
/* An engine header. */
