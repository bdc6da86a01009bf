/*
 * cost_metrics.c: the cost part of the controller's /metrics page
 * (server_metrics.c calls srv_cost_metrics): the cost counter per tenant,
 * user and pool, each tenant's spend this month, and one info series per
 * running job that joins per-job GPU series to its user, tenant and pool.
 * Under s->mu.
 */
#include "server_int.h"

static void cost_counter(struct drv_server *s, struct drv_prom *w)
{
	drv_prom_family(w, "drover_cost_dollars_total", "counter",
			"GPU cost accrued by jobs, dollars (GPU-seconds x pool price per GPU-hour / 3600).");
	if (s->ncosts == 0)
		drv_prom_sample(w, "drover_cost_dollars_total",
				DRV_PROM_LABELS("tenant", "default", "user", "", "pool", "default"), 0);
	for (size_t k = 0; k < s->ncosts; k++)
		drv_prom_sample(w, "drover_cost_dollars_total",
				DRV_PROM_LABELS("tenant", s->costs[k].tenant, "user", s->costs[k].user,
						"pool", s->costs[k].pool),
				(double)s->costs[k].micro / 1e6);
}

static void month_spend(struct drv_server *s, struct drv_prom *w)
{
	drv_prom_family(w, "drover_tenant_month_spend_dollars", "gauge",
			"What a tenant's jobs cost in this calendar month (UTC), dollars.");
	for (size_t k = 0; k < s->nmonths; k++)
		drv_prom_sample(w, "drover_tenant_month_spend_dollars",
				DRV_PROM_LABELS("tenant", s->months[k].tenant),
				(double)s->months[k].micro / 1e6);
}

void srv_cost_metrics(struct drv_server *s, struct drv_prom *w)
{
	cost_counter(s, w);
	month_spend(s, w);
}
