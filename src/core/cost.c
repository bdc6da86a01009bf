/*
 * cost.c: the price of GPU time, in integer micro-dollars, one rule for
 * the controller, the simulator and the tools.
 */
#include "drover/model.h"

int64_t drv_cost_micro(int64_t gpu_milli, int64_t price_micro_per_gpu_hour, int64_t secs)
{
	/* milli-GPUs x micro-dollars per hour x seconds overflows 64 bits
	 * for a long run of a big gang (8000 x 1e8 x 1e7): 128-bit product */
	__int128 p = (__int128)gpu_milli * price_micro_per_gpu_hour * secs;

	if (p <= 0)
		return 0;
	return (int64_t)((p + 1800000) / 3600000);
}
