/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OCF_TOOLS_WHICH_LIBCUFILE_H_
#define OCF_TOOLS_WHICH_LIBCUFILE_H_

/* Prints gdscheck's "Library" section: which libcufile.so.0 this process
 * loaded, whether it is opencufile, and why ld.so chose it. */
void report_libcufile(void);

#endif /* OCF_TOOLS_WHICH_LIBCUFILE_H_ */
