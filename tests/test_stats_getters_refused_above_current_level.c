/* SPDX-License-Identifier: Apache-2.0 */
/* Levels 0..3: cuFileGetStatsLN fails (CU_FILE_INVALID_VALUE) when the level
 * is below N; cuFileSetStatsLevel refuses levels outside 0..3; the level
 * comes from profile.cufile_stats at open unless set by the API. */
#include "config_test_util.h"

int main(void)
{
	t_clear_config_env();
	t_use_config(t_write_text_file("{ \"profile\": { \"cufile_stats\": 2 } }"));
	CUfileStatsLevel1_t l1;
	CUfileStatsLevel2_t l2;
	CUfileStatsLevel3_t *l3 = malloc(sizeof(*l3));
	int level = -1;
	T_CUFILE_OK(cuFileGetStatsLevel(&level));
	T_EQ(level, 0);
	T_CUFILE(cuFileGetStatsL1(&l1), CU_FILE_INVALID_VALUE);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileGetStatsLevel(&level));
	T_EQ(level, 2);
	T_CUFILE_OK(cuFileGetStatsL1(&l1));
	T_CUFILE_OK(cuFileGetStatsL2(&l2));
	T_CUFILE(cuFileGetStatsL3(l3), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetStatsL1(NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileGetStatsLevel(NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetStatsLevel(4), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileSetStatsLevel(-1), CU_FILE_INVALID_VALUE);
	T_CUFILE_OK(cuFileSetStatsLevel(3));
	T_CUFILE_OK(cuFileGetStatsL3(l3));
	T_CUFILE_OK(cuFileSetStatsLevel(1));
	T_CUFILE(cuFileGetStatsL2(&l2), CU_FILE_INVALID_VALUE);
	T_CUFILE_OK(cuFileDriverClose());
	/* The API's choice outlives a reopen (the file says 2). */
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileGetStatsLevel(&level));
	T_EQ(level, 1);
	T_CUFILE_OK(cuFileDriverClose());
	free(l3);
	return T_EXIT_PASS;
}
