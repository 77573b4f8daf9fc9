/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileDriverOpen is reference counted: cuFileUseCount() stays > 0 until the
 * matching number of closes, is 0 afterwards, a close when not open fails
 * with DRIVER_NOT_INITIALIZED, the driver reopens after a close, and the old
 * symbol cuFileDriverClose (without _v2) is exported and works too.
 */
#include "test.h"

#define EXPECT_CLOSE_NOT_OPEN CU_FILE_DRIVER_NOT_INITIALIZED

typedef CUfileError_t (*close_fn)(void);

int main(void)
{
	T_EQ(cuFileUseCount(), 0);
	T_CUFILE(cuFileDriverClose(), EXPECT_CLOSE_NOT_OPEN);
	T_EQ(cuFileUseCount(), 0);

	/* Nesting. */
	T_CUFILE_OK(cuFileDriverOpen());
	T_GT(cuFileUseCount(), 0);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileDriverOpen());
	T_GT(cuFileUseCount(), 0);
	T_CUFILE_OK(cuFileDriverClose());
	T_GT(cuFileUseCount(), 0);
	T_CUFILE_OK(cuFileDriverClose());
	T_GT(cuFileUseCount(), 0);
	T_CUFILE_OK(cuFileDriverClose());
	T_EQ(cuFileUseCount(), 0);
	T_CUFILE(cuFileDriverClose(), EXPECT_CLOSE_NOT_OPEN);
	T_EQ(cuFileUseCount(), 0);

	/* Reopen, and the driver is usable again. */
	for (int round = 0; round < 3; round++) {
		t_set_case("reopen round %d", round);
		T_CUFILE_OK(cuFileDriverOpen());
		T_GT(cuFileUseCount(), 0);
		CUfileDrvProps_t props;
		memset(&props, 0, sizeof(props));
		T_CUFILE_OK(cuFileDriverGetProperties(&props));
		T_CUFILE_OK(cuFileDriverClose());
		T_EQ(cuFileUseCount(), 0);
	}
	t_set_case("%s", "");

	/* The old symbol. */
	close_fn old_close = (close_fn)dlsym(RTLD_DEFAULT, "cuFileDriverClose");
	T_ASSERT(old_close != NULL);
	T_CUFILE(old_close(), EXPECT_CLOSE_NOT_OPEN);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(old_close());
	T_GT(cuFileUseCount(), 0);
	T_CUFILE_OK(cuFileDriverClose_v2());
	T_EQ(cuFileUseCount(), 0);
	T_CUFILE(old_close(), EXPECT_CLOSE_NOT_OPEN);
	return 0;
}
