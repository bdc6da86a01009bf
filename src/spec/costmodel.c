/*
 * costmodel.c: the arithmetic of `drover cost` (include/drover/costmodel.h,
 * docs/cost.md). Plain doubles in dollars: these are planning figures
 * from stated assumptions, not accounting (that is src/core/cost.c).
 */
#include "drover/costmodel.h"

const char *const drv_cost_cloud_names[DRV_CLOUD_N] = { "onDemand", "reserved", "spot" };

int drv_cost_break_even(double capex, double opex_month, double cloud_month)
{
	int m;

	for (m = 1; m <= DRV_COST_HORIZON_MONTHS; m++)
		if (capex + m * opex_month <= m * cloud_month)
			return m;
	return -1;
}

void drv_cost_compute(const struct drv_cost_in *in, struct drv_cost_out *out)
{
	double n = in->servers;
	int c;

	out->gpus = n * in->gpus_per_server;
	out->used_gpuh_month = out->gpus * DRV_COST_HOURS_PER_MONTH * in->utilisation;
	out->capex_usd = n * in->server_price_usd;
	out->capex_month = out->capex_usd / (in->depreciation_years * 12.0);
	/* the servers draw power whether busy or not: no utilisation here */
	out->power_month = n * in->power_kw * in->pue * DRV_COST_HOURS_PER_MONTH * in->usd_per_kwh;
	out->colo_month = n * in->colo_usd_month;
	out->network_month = n * in->network_usd_month;
	out->staff_month = in->staff_usd_month;
	out->opex_month = out->power_month + out->colo_month + out->network_month + out->staff_month;
	out->onprem_month = out->capex_month + out->opex_month;
	out->onprem_usd_gpuh = out->used_gpuh_month > 0 ? out->onprem_month / out->used_gpuh_month : 0;
	for (c = 0; c < DRV_CLOUD_N; c++) {
		out->cloud_month[c] = out->used_gpuh_month * in->cloud_usd_gpuh[c];
		out->break_even[c] = drv_cost_break_even(out->capex_usd, out->opex_month,
							 out->cloud_month[c]);
	}
}
