/*
 * test_costmodel.c: `drover cost`'s arithmetic (src/spec/costmodel.c)
 * against cases worked by hand, and its assumptions file
 * (src/spec/cost_file.c): unknown keys and bad values refused at their
 * line:col, PUE from the cooling type when not given.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "drover/costmodel.h"

/* 2 servers of 8 GPUs at $240,000, 4 years; 10 kW, PUE 1.5, $0.10/kWh;
 * $1,000 colo + $500 network per server; $10,000 staff; 50% used. */
static struct drv_cost_in hand(void)
{
	struct drv_cost_in in;
	memset(&in, 0, sizeof(in));
	in.servers = 2;
	in.gpus_per_server = 8;
	in.server_price_usd = 240000;
	in.depreciation_years = 4;
	in.power_kw = 10;
	in.pue = 1.5;
	in.usd_per_kwh = 0.10;
	in.colo_usd_month = 1000;
	in.network_usd_month = 500;
	in.staff_usd_month = 10000;
	in.utilisation = 0.5;
	in.cloud_usd_gpuh[DRV_CLOUD_ONDEMAND] = 10;
	in.cloud_usd_gpuh[DRV_CLOUD_RESERVED] = 5;
	in.cloud_usd_gpuh[DRV_CLOUD_SPOT] = 2;
	return in;
}

Test(costmodel, monthly_costs_by_hand)
{
	struct drv_cost_in in = hand();
	struct drv_cost_out o;

	drv_cost_compute(&in, &o);
	cr_assert(eq(dbl, o.gpus, 16));
	cr_assert(eq(dbl, o.used_gpuh_month, 16 * 730 * 0.5));   /* 5,840 */
	cr_assert(eq(dbl, o.capex_usd, 480000));
	cr_assert(eq(dbl, o.capex_month, 10000));                 /* 480,000 / 48 */
	cr_assert(ieee_ulp_eq(dbl, o.power_month, 2190, 8));       /* 2 x 10 x 1.5 x 730 x 0.1 */
	cr_assert(ieee_ulp_eq(dbl, o.opex_month, 2190 + 2000 + 1000 + 10000, 8));
	cr_assert(ieee_ulp_eq(dbl, o.onprem_month, 25190, 8));
	cr_assert(ieee_ulp_eq(dbl, o.onprem_usd_gpuh, 25190.0 / 5840.0, 8));
	cr_assert(eq(dbl, o.cloud_month[DRV_CLOUD_ONDEMAND], 58400));
	/* on-demand: 480,000 + m x 15,190 <= m x 58,400 from m = 11.11 -> 12 */
	cr_assert(eq(int, o.break_even[DRV_CLOUD_ONDEMAND], 12));
	/* reserved: 29,200 - 15,190 = 14,010 a month: 480,000 / 14,010 = 34.3 -> 35 */
	cr_assert(eq(int, o.break_even[DRV_CLOUD_RESERVED], 35));
	/* spot: $11,680 a month is less than the opex alone: never */
	cr_assert(eq(int, o.break_even[DRV_CLOUD_SPOT], -1));
}

Test(costmodel, break_even_edges)
{
	cr_assert(eq(int, drv_cost_break_even(100, 0, 100), 1));   /* exactly equal counts */
	cr_assert(eq(int, drv_cost_break_even(100, 0, 99.99), 2));
	cr_assert(eq(int, drv_cost_break_even(1200, 0, 10), 120)); /* the last month searched */
	cr_assert(eq(int, drv_cost_break_even(1201, 0, 10), -1));
	cr_assert(eq(int, drv_cost_break_even(0, 5, 5), 1));
}

static const char good[] =
	"servers: 2\n"
	"serverPriceUsd: 240000\n"
	"gpusPerServer: 8\n"
	"depreciationYears: 4\n"
	"powerKwPerServer: 10\n"
	"cooling: liquid\n"
	"pricePerKwh: 0.10\n"
	"coloUsdPerServerMonth: 1000\n"
	"networkUsdPerServerMonth: 500\n"
	"staffUsdPerMonth: 10000\n"
	"utilisation: 0.5\n"
	"cloud: {onDemand: 10, reserved: 5, spot: 2, compareWith: onDemand}\n";

static int load(const char *text, struct drv_cost_in *in, struct drv_diags *d)
{
	drv_diags_init(d, "c.yaml");
	return drv_cost_load_buffer(text, strlen(text), in, d);
}

Test(cost_file, good_file_and_pue_from_cooling)
{
	struct drv_cost_in in;
	struct drv_diags d;

	cr_assert(eq(int, load(good, &in, &d), 0));
	cr_assert(eq(int, d.nerrors, 0));
	cr_assert(eq(int, in.servers, 2));
	cr_assert(in.liquid);
	cr_assert(eq(dbl, in.pue, 1.2)); /* not given: liquid cooling's default */
	cr_assert(eq(int, (int)in.compare, (int)DRV_CLOUD_ONDEMAND));
	cr_assert(eq(dbl, in.cloud_usd_gpuh[DRV_CLOUD_SPOT], 2));
	drv_diags_release(&d);
}

static void expect_error(const char *text, const char *want)
{
	struct drv_cost_in in;
	struct drv_diags d;
	char buf[600];

	cr_assert(ne(int, load(text, &in, &d), 0));
	cr_assert(ge(int, d.nerrors, 1));
	snprintf(buf, sizeof(buf), "%d:%d: %s: %s", d.v[0].line, d.v[0].col,
		 d.v[0].path ? d.v[0].path : "", d.v[0].msg);
	cr_assert(eq(str, buf, (char *)want));
	drv_diags_release(&d);
}

Test(cost_file, errors_at_line_col)
{
	char text[1200];

	snprintf(text, sizeof(text), "%spowerPrice: 3\n", good);
	expect_error(text, "13:1: powerPrice: found the unknown key 'powerPrice', expected one of: "
			   "servers, serverPriceUsd, gpusPerServer, depreciationYears, "
			   "powerKwPerServer, pue, pricePerKwh, cooling, coloUsdPerServerMonth, "
			   "networkUsdPerServerMonth, staffUsdPerMonth, utilisation, cloud");
	expect_error("servers: 2.5\n", "1:10: servers: found '2.5', expected a whole number from 1 to 1e+06");
	snprintf(text, sizeof(text), "%s", good);
	memcpy(strstr(text, "utilisation: 0.5"), "utilisation: 1.5", 16);
	expect_error(text, "11:14: utilisation: found '1.5', expected a number from 0 to 1");
	snprintf(text, sizeof(text), "%s", good);
	memcpy(strstr(text, "liquid"), "water ", 6);
	expect_error(text, "6:10: cooling: found 'water', expected air or liquid");
	snprintf(text, sizeof(text), "%s", good);
	memcpy(strstr(text, "spot: 2"), "spit: 2", 7);
	expect_error(text, "12:36: cloud.spit: found the unknown key 'spit', expected one of: "
			   "onDemand, reserved, spot, compareWith");
}
