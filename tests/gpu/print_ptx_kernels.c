/* SPDX-License-Identifier: Apache-2.0 */
/* Prints the PTX text of ptx_kernels.h (the suite feeds it to ptxas). */
#include <stdio.h>

#include "gpu/ptx_kernels.h"

int main(void)
{
	return fputs(ocf_ptx_kernels, stdout) < 0;
}
