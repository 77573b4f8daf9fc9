/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileGetVersion works before the driver is opened (and does not open it),
 * reports 1190 (the newest interface implemented, cuFile 1.19), and rejects a NULL pointer.
 */
#include "test.h"

#define EXPECTED_VERSION 1190
#define EXPECT_NULL_VERSION CU_FILE_INVALID_VALUE

int main(void)
{
	int v = -1;

	T_CUFILE_OK(cuFileGetVersion(&v));
	T_EQ(v, EXPECTED_VERSION);
	T_EQ(cuFileUseCount(), 0);

	T_CUFILE(cuFileGetVersion(NULL), EXPECT_NULL_VERSION);

	/* Same answer while open and after close. */
	T_CUFILE_OK(cuFileDriverOpen());
	v = -1;
	T_CUFILE_OK(cuFileGetVersion(&v));
	T_EQ(v, EXPECTED_VERSION);
	T_CUFILE_OK(cuFileDriverClose());
	v = -1;
	T_CUFILE_OK(cuFileGetVersion(&v));
	T_EQ(v, EXPECTED_VERSION);
	return 0;
}
