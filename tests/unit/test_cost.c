/*
 * test_cost.c: the price of GPU time (drv_cost_micro) against cases
 * computed by hand.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "drover/model.h"

Test(cost, whole_gpus_hand_computed)
{
	/* 1 GPU x $2.50/h x 60 s = $0.0416666.. -> 41667 micro-dollars */
	cr_assert(eq(i64, drv_cost_micro(1000, 2500000, 60), 41667));
	/* 2 GPUs x $3.60/h x 4 s = $0.008 exactly */
	cr_assert(eq(i64, drv_cost_micro(2000, 3600000, 4), 8000));
	/* 8 GPUs x $2.00/h x 1 h = $16 */
	cr_assert(eq(i64, drv_cost_micro(8000, 2000000, 3600), 16000000));
}

Test(cost, fractions_and_rounding)
{
	/* half a GPU x $1.00/h x 1 s = 138.888.. -> 139 */
	cr_assert(eq(i64, drv_cost_micro(500, 1000000, 1), 139));
	/* 1 milli-GPU x $1.00/h x 1 s = 0.277.. -> 0; x 2 s = 0.555.. -> 1 */
	cr_assert(eq(i64, drv_cost_micro(1, 1000000, 1), 0));
	cr_assert(eq(i64, drv_cost_micro(1, 1000000, 2), 1));
	/* exactly half a micro-dollar rounds up: 1 milli-GPU x 0.9 $/h x 2 s = 0.5 */
	cr_assert(eq(i64, drv_cost_micro(1, 900000, 2), 1));
}

Test(cost, nothing_and_no_overflow)
{
	cr_assert(eq(i64, drv_cost_micro(0, 2500000, 60), 0));
	cr_assert(eq(i64, drv_cost_micro(1000, 0, 60), 0));
	cr_assert(eq(i64, drv_cost_micro(1000, 2500000, 0), 0));
	cr_assert(eq(i64, drv_cost_micro(1000, 2500000, -5), 0));
	/* 1024 GPUs x $100/h x a year: 8.97e14 micro-dollars; the product
	 * 1.024e6 x 1e8 x 3.15e7 is past 2^63 */
	cr_assert(eq(i64, drv_cost_micro(1024000, 100000000, 31536000),
		     (int64_t)1024 * 100 * 8760 * 1000000));
}
