/*
 * cost_metrics.c: the cost part of the controller's /metrics page
 * (server_metrics.c calls srv_cost_metrics): the cost counter per tenant,
 * user and pool, each tenant's spend this month, and one info series per
 * running job that joins per-job GPU series to its user, tenant and pool;
 * budgets: each tenant's budget, burn rate, the month's spend forecast at
 * that rate, and a warning when the forecast passes the budget.
 * Under s->mu.
 */
#include "server_int.h"

#include <string.h>
#include <time.h>

/* A tenant's figures for one page. */
struct tenant_burn {
	const char *tenant;
	int64_t micro_per_hour;   /* what its running tasks cost per hour now */
};

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

/* What t costs per hour while it runs, in micro-dollars. */
static int64_t task_rate(const struct drv_server *s, const struct srv_task *t)
{
	const struct drv_node *cn = &s->cluster.nodes[t->node];

	if (t->ended || !t->start_time || cn->pool < 0 || cn->pool >= s->cluster.npools)
		return 0;
	return drv_cost_micro((int64_t)__builtin_popcountll(t->gpu_mask) * t->gpu_milli,
			      s->cluster.pools[cn->pool].price_micro_per_gpu_hour, 3600);
}

static const char *tenant_of(const struct srv_job *j)
{
	return j->spec.job.tenant && *j->spec.job.tenant ? j->spec.job.tenant : "default";
}

static void add_burn(struct tenant_burn **b, size_t *n, size_t *cap, const char *tenant,
		     int64_t rate)
{
	for (size_t k = 0; k < *n; k++) {
		if (!strcmp((*b)[k].tenant, tenant)) {
			(*b)[k].micro_per_hour += rate;
			return;
		}
	}
	DRV_GROW(*b, *n + 1, *cap);
	(*b)[(*n)++] = (struct tenant_burn){ tenant, rate };
}

/* 00:00 UTC on the 1st of the next month */
static int64_t month_end(int64_t now)
{
	time_t t = (time_t)now;
	struct tm tm;

	gmtime_r(&t, &tm);
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_mon++;
	return (int64_t)timegm(&tm);
}

static void budget_sample(struct drv_prom *w, const char *name, const char *tenant, int64_t micro)
{
	drv_prom_sample(w, name, DRV_PROM_LABELS("tenant", tenant), (double)micro / 1e6);
}

/* Burn rate and forecast for every tenant that spends or runs; budget and
 * warning for every tenant of the tenants file with a budget. */
static void budgets(struct drv_server *s, struct drv_prom *w)
{
	struct tenant_burn *b = NULL;
	size_t nb = 0, cap = 0;
	int64_t now = drv_wall_s(), left = month_end(now) - now;
	const struct drv_tenants *ts = &s->cfg.tenants;

	for (size_t k = 0; k < s->nmonths; k++)
		add_burn(&b, &nb, &cap, s->months[k].tenant, 0);
	for (size_t k = 0; k < s->nactive; k++) {
		struct srv_job *j = srv_job_get(s, s->active[k]);

		for (int32_t t = 0; j && t < j->ntasks; t++)
			add_burn(&b, &nb, &cap, tenant_of(j), task_rate(s, &j->tasks[t]));
	}
	drv_prom_family(w, "drover_tenant_burn_rate_dollars_per_hour", "gauge",
			"What a tenant's running jobs cost per hour now, dollars.");
	for (size_t k = 0; k < nb; k++)
		budget_sample(w, "drover_tenant_burn_rate_dollars_per_hour", b[k].tenant,
			      b[k].micro_per_hour);
	drv_prom_family(w, "drover_tenant_month_forecast_dollars", "gauge",
			"This month's spend plus the current burn rate to the month's end (UTC), dollars.");
	for (size_t k = 0; k < nb; k++)
		budget_sample(w, "drover_tenant_month_forecast_dollars", b[k].tenant,
			      srv_month_cell(s, b[k].tenant)->micro +
				      b[k].micro_per_hour * left / 3600);
	drv_prom_family(w, "drover_tenant_budget_dollars", "gauge",
			"A tenant's monthly budget (tenants file budget.monthlyUsd), dollars.");
	for (int32_t i = 0; i < ts->ntenants; i++)
		if (ts->tenants[i].budget_micro >= 0)
			budget_sample(w, "drover_tenant_budget_dollars", ts->tenants[i].name,
				      ts->tenants[i].budget_micro);
	drv_prom_family(w, "drover_tenant_budget_warning", "gauge",
			"1 when a tenant's forecast for this month passes its budget, else 0.");
	for (int32_t i = 0; i < ts->ntenants; i++) {
		const struct drv_tenant_conf *tc = &ts->tenants[i];
		int64_t rate = 0;

		if (tc->budget_micro < 0)
			continue;
		for (size_t k = 0; k < nb; k++)
			if (!strcmp(b[k].tenant, tc->name))
				rate = b[k].micro_per_hour;
		drv_prom_sample(w, "drover_tenant_budget_warning", DRV_PROM_LABELS("tenant", tc->name),
				srv_month_cell(s, tc->name)->micro + rate * left / 3600 >
					tc->budget_micro);
	}
	drv_free(b);
}

/* One series per running job, value 1, so that per-job and per-GPU series
 * labelled hpc_job join to who runs it and where; never a `job` label
 * (Prometheus owns that one). And what each running job has cost so far. */
static void job_info(struct drv_server *s, struct drv_prom *w)
{
	int64_t now = drv_wall_s();

	drv_prom_family(w, "drover_job_info", "gauge",
			"A running job: its id (hpc_job), user, tenant, pool, name and, for "
			"Kubernetes manifests, namespace, pod and container; value 1.");
	for (size_t k = 0; k < s->nactive; k++) {
		struct srv_job *j = srv_job_get(s, s->active[k]);
		const struct drv_jobspec *sp;
		bool k8s;
		char id[24];

		if (!j || j->state != J_RUNNING || j->ntasks == 0)
			continue;
		sp = &j->spec;
		k8s = sp->format == DRV_FMT_MANIFEST;
		snprintf(id, sizeof(id), "%llu", (unsigned long long)j->id);
		drv_prom_sample(
			w, "drover_job_info",
			DRV_PROM_LABELS("hpc_job", id, "user", sp->job.user ? sp->job.user : "",
					"tenant", tenant_of(j), "pool", srv_task_pool(s, &j->tasks[0]),
					"name", sp->job.name ? sp->job.name : "", "namespace",
					k8s ? (sp->namespace_ ? sp->namespace_ : "default") : "", "pod",
					k8s && sp->job.name ? sp->job.name : "", "container",
					k8s && sp->run && sp->run[0].container ? sp->run[0].container : ""),
			1);
	}
	drv_prom_family(w, "drover_job_cost_dollars", "gauge",
			"What a running job has cost so far (its cost_usd), dollars.");
	for (size_t k = 0; k < s->nactive; k++) {
		struct srv_job *j = srv_job_get(s, s->active[k]);
		char id[24];

		if (!j || j->state != J_RUNNING)
			continue;
		snprintf(id, sizeof(id), "%llu", (unsigned long long)j->id);
		drv_prom_sample(w, "drover_job_cost_dollars",
				DRV_PROM_LABELS("hpc_job", id, "user",
						j->spec.job.user ? j->spec.job.user : "", "tenant",
						tenant_of(j)),
				(double)srv_job_cost_micro(s, j, now) / 1e6);
	}
}

void srv_cost_metrics(struct drv_server *s, struct drv_prom *w)
{
	cost_counter(s, w);
	month_spend(s, w);
	budgets(s, w);
	job_info(s, w);
}
