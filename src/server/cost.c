/*
 * cost.c: what jobs cost, and the counters made of it.
 *
 * A task costs its GPUs (whole GPUs in its mask times its share of each,
 * in milli-GPUs) times its pool's price per GPU-hour times the seconds it
 * ran (from its reported start to its end, or to now while it runs), in
 * integer micro-dollars (drv_cost_micro). A job costs its earlier attempts
 * (folded into cost_prev_micro when it is placed again) plus its current
 * tasks: live while they run, final once they have all ended.
 *
 * The counters (drover_cost_dollars_total{tenant,user,pool}) and each
 * tenant's spend in the current calendar month (UTC) grow by what jobs
 * accrued since the last look: each task remembers how much of its cost is
 * already counted (counted_micro). The loop looks once a second and a job
 * is looked at once more when its last task ends, so the counters equal
 * the sum of the jobs' costs. After a restart the month's spend is summed
 * again from the jobs (earlier attempts count in the month they ended in).
 * Under s->mu. Below state.c (it reads jobs, never looks them up), so
 * the lifecycle can count a job's final cost.
 */
#include "server_int.h"

#include <string.h>
#include <time.h>

int64_t srv_task_cost_micro(const struct drv_server *s, const struct srv_task *t, int64_t now,
			    int64_t since)
{
	const struct drv_node *cn;
	int64_t from = t->start_time, to = t->end_time ? t->end_time : now;

	if (!t->start_time || t->node < 0 || t->node >= s->cluster.nnodes)
		return 0;
	cn = &s->cluster.nodes[t->node];
	if (cn->pool < 0 || cn->pool >= s->cluster.npools)
		return 0;
	if (from < since)
		from = since;
	if (to <= from)
		return 0;
	return drv_cost_micro((int64_t)__builtin_popcountll(t->gpu_mask) * t->gpu_milli,
			      s->cluster.pools[cn->pool].price_micro_per_gpu_hour, to - from);
}

/* What j cost from since (wall s) to now; since 0: all of it. */
static int64_t job_cost_since(const struct drv_server *s, const struct srv_job *j, int64_t now,
			      int64_t since)
{
	int64_t c = j->cost_prev_time >= since ? j->cost_prev_micro : 0;

	for (int32_t i = 0; i < j->ntasks; i++)
		c += srv_task_cost_micro(s, &j->tasks[i], now, since);
	return c;
}

int64_t srv_job_cost_micro(const struct drv_server *s, const struct srv_job *j, int64_t now)
{
	return job_cost_since(s, j, now, 0);
}

const char *srv_task_pool(const struct drv_server *s, const struct srv_task *t)
{
	const struct drv_node *cn;

	if (t->node < 0 || t->node >= s->cluster.nnodes)
		return "";
	cn = &s->cluster.nodes[t->node];
	return cn->pool >= 0 && cn->pool < s->cluster.npools ? s->cluster.pools[cn->pool].name : "";
}

int64_t srv_month_start(int64_t now)
{
	time_t t = (time_t)now;
	struct tm tm;

	gmtime_r(&t, &tm);
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	return (int64_t)timegm(&tm);
}

static struct cost_cell *cost_cell(struct drv_server *s, const char *tenant, const char *user,
				   const char *pool)
{
	struct cost_cell *c;

	for (size_t k = 0; k < s->ncosts; k++)
		if (!strcmp(s->costs[k].tenant, tenant) && !strcmp(s->costs[k].user, user) &&
		    !strcmp(s->costs[k].pool, pool))
			return &s->costs[k];
	DRV_GROW(s->costs, s->ncosts + 1, s->costcap);
	c = &s->costs[s->ncosts++];
	c->tenant = drv_strdup(tenant);
	c->user = drv_strdup(user);
	c->pool = drv_strdup(pool);
	c->micro = 0;
	return c;
}

struct month_cell *srv_month_cell(struct drv_server *s, const char *tenant)
{
	struct month_cell *m;

	for (size_t k = 0; k < s->nmonths; k++)
		if (!strcmp(s->months[k].tenant, tenant))
			return &s->months[k];
	DRV_GROW(s->months, s->nmonths + 1, s->monthcap);
	m = &s->months[s->nmonths++];
	m->tenant = drv_strdup(tenant);
	m->micro = 0;
	return m;
}

/* A new calendar month: every tenant's spend starts again from zero. */
void srv_month_roll(struct drv_server *s, int64_t now)
{
	int64_t ms = srv_month_start(now);

	if (ms == s->month_start)
		return;
	s->month_start = ms;
	for (size_t k = 0; k < s->nmonths; k++)
		s->months[k].micro = 0;
}

static const char *job_tenant(const struct srv_job *j)
{
	return j->spec.job.tenant && *j->spec.job.tenant ? j->spec.job.tenant : "default";
}

void srv_cost_accrue_job(struct drv_server *s, struct srv_job *j, int64_t now)
{
	const char *tenant = job_tenant(j), *user = j->spec.job.user ? j->spec.job.user : "";

	srv_month_roll(s, now);
	for (int32_t i = 0; i < j->ntasks; i++) {
		struct srv_task *t = &j->tasks[i];
		int64_t c = srv_task_cost_micro(s, t, now, 0), d = c - t->counted_micro;

		if (d <= 0)
			continue;
		t->counted_micro = c;
		cost_cell(s, tenant, user, srv_task_pool(s, t))->micro += d;
		srv_month_cell(s, tenant)->micro += d;
	}
}

void srv_cost_fold(struct drv_server *s, struct srv_job *j, int64_t now)
{
	int64_t c = 0;

	srv_cost_accrue_job(s, j, now);
	for (int32_t i = 0; i < j->ntasks; i++)
		c += srv_task_cost_micro(s, &j->tasks[i], now, 0);
	if (c > 0) {
		j->cost_prev_micro += c;
		j->cost_prev_time = now;
	}
}

const struct drv_tenant_conf *srv_tenant_conf(const struct drv_server *s, const char *tenant)
{
	return drv_tenants_tenant(&s->cfg.tenants, tenant ? tenant : "default");
}

bool srv_budget_spent(struct drv_server *s, const char *tenant, char *buf, size_t n)
{
	const struct drv_tenant_conf *tc = srv_tenant_conf(s, tenant);
	int64_t spent;

	if (!tc || tc->budget_micro < 0 || !tc->budget_hold)
		return false;
	srv_month_roll(s, drv_wall_s());
	spent = srv_month_cell(s, tc->name)->micro;
	if (spent < tc->budget_micro)
		return false;
	snprintf(buf, n,
		 "held: tenant %s has spent $%.2f of its $%.2f budget this month (UTC); "
		 "the hold lifts on the 1st or when the budget is raised",
		 tc->name, (double)spent / 1e6, (double)tc->budget_micro / 1e6);
	return true;
}

void srv_cost_restore(struct drv_server *s)
{
	int64_t now = drv_wall_s();

	s->month_start = srv_month_start(now);
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = s->jobs[id - 1];
		int64_t m;

		if (!j)
			continue;
		for (int32_t i = 0; i < j->ntasks; i++)
			j->tasks[i].counted_micro = srv_task_cost_micro(s, &j->tasks[i], now, 0);
		m = job_cost_since(s, j, now, s->month_start);
		if (m > 0)
			srv_month_cell(s, job_tenant(j))->micro += m;
	}
}

void srv_cost_release(struct drv_server *s)
{
	for (size_t k = 0; k < s->ncosts; k++) {
		drv_free(s->costs[k].tenant);
		drv_free(s->costs[k].user);
		drv_free(s->costs[k].pool);
	}
	drv_free(s->costs);
	for (size_t k = 0; k < s->nmonths; k++)
		drv_free(s->months[k].tenant);
	drv_free(s->months);
	drv_free(s->held);
	drv_free(s->rt_held);
}
