/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ocf_nap_ns (internal.h), the naps of copy waits (gpu.c) and copy-group
 * members (copygroup.c): it sleeps at least the time asked, and the calling
 * thread's timer slack is what it was before, whether the default 50 us,
 * another value, or already 1 ns.  (How much shorter than the slack the nap
 * is cannot be asserted under load; docs/history/benchmarks.md has the measurement.)
 */
#include <sys/prctl.h>

#include "internal.h"
#include "test.h"

static void nap_keeps(unsigned long slack)
{
	T_ASSERT(prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0) == 0);
	unsigned long want = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	t_set_case("timer slack %lu ns", want);
	static const uint64_t naps[] = {1000, 20000, 150000, 1000000};
	for (size_t i = 0; i < sizeof(naps) / sizeof(naps[0]); i++) {
		uint64_t t0 = ocf_now_ns();
		ocf_nap_ns(naps[i]);
		uint64_t took = ocf_now_ns() - t0;
		T_ASSERT(took >= naps[i]);
		T_EQ((unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), want);
	}
}

int main(void)
{
	nap_keeps(50000);
	nap_keeps(200000);
	nap_keeps(1);
	/* 0 restores the thread's default (its parent's, 50 us unless changed). */
	nap_keeps(0);
	return 0;
}
