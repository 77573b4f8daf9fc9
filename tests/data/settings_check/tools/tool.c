/* SPDX-License-Identifier: Apache-2.0 */
/* A tool that reads a variable docs/configuration.md does not name, for
 * test_settings_check_finds_an_undocumented_variable: never compiled. */
#include <stdlib.h>

const char *tool_dir(void) { return getenv("OPENCUFILE_UNDOCUMENTED_TOOL_DIR"); }
