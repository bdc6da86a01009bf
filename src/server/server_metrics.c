/*
 * server_metrics.c: the controller's /metrics page (docs/api.md): jobs by
 * state, pending jobs by queue and priority, GPUs by pool, model and
 * status, nodes by state, the wait and pass histograms, and the counters
 * the rest of the server keeps in struct drv_server (passes, preemptions,
 * transitions, submits, cost, heartbeats).
 *
 * It only reads: the caller holds s->mu, and every figure is computed from
 * the jobs, nodes and cluster as they are at that moment. The route
 * handler (misc_api.c) turns the writer's text into the reply.
 */
#include "server_int.h"

#include <stdio.h>
#include <string.h>

static void jobs_by_state(struct drv_server *s, struct drv_prom *w)
{
	int64_t jc[J_NSTATES];

	srv_jobs_by_state(s, jc);
	drv_prom_family(w, "drover_jobs", "gauge", "Jobs by state.");
	for (int k = 0; k < J_NSTATES; k++)
		drv_prom_sample(w, "drover_jobs", DRV_PROM_LABELS("state", srv_jstate_name((enum jstate)k)),
				(double)jc[k]);
}

/* Pending jobs counted by queue (tenant) and priority, in first-seen order. */
static void queue_depth(struct drv_server *s, struct drv_prom *w)
{
	struct qd {
		const char *q;
		int32_t prio;
		int64_t n;
	} *v = NULL;
	size_t nv = 0, cap = 0;
	char a[32];

	drv_prom_family(w, "drover_queue_depth", "gauge", "Pending jobs by queue and priority.");
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = srv_job_get(s, id);
		size_t k;

		if (!j || j->state != J_PENDING)
			continue;
		for (k = 0; k < nv; k++)
			if (v[k].prio == j->spec.job.priority && strcmp(v[k].q, j->spec.job.tenant) == 0)
				break;
		if (k == nv) {
			DRV_GROW(v, nv + 1, cap);
			v[nv++] = (struct qd){ j->spec.job.tenant, j->spec.job.priority, 0 };
		}
		v[k].n++;
	}
	if (nv == 0)
		drv_prom_sample(w, "drover_queue_depth",
				DRV_PROM_LABELS("queue", "default", "priority", "0"), 0);
	for (size_t k = 0; k < nv; k++) {
		snprintf(a, sizeof(a), "%d", v[k].prio);
		drv_prom_sample(w, "drover_queue_depth", DRV_PROM_LABELS("queue", v[k].q, "priority", a),
				(double)v[k].n);
	}
	drv_free(v);
}

/* Pending jobs counted by tenant and reason code (CONTRACTS.md §3: the
 * scheduler's current reason, as GET /v1/jobs/ID says it), first-seen
 * order; one zero sample when nothing pends, so the family is there. */
static void pending_reasons(struct drv_server *s, struct drv_prom *w)
{
	struct pr {
		const char *tenant, *code;
		int64_t n;
	} *v = NULL;
	size_t nv = 0, cap = 0, k;

	drv_prom_family(w, "drover_pending_jobs", "gauge",
			"Pending jobs by tenant and the reason code they wait for.");
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = srv_job_get(s, id);
		const char *code;

		if (!j || j->state != J_PENDING)
			continue;
		code = srv_job_reason_code(s, j);
		code = code ? code : "None";
		for (k = 0; k < nv; k++)
			if (!strcmp(v[k].code, code) && !strcmp(v[k].tenant, j->spec.job.tenant))
				break;
		if (k == nv) {
			DRV_GROW(v, nv + 1, cap);
			v[nv++] = (struct pr){ j->spec.job.tenant, code, 0 };
		}
		v[k].n++;
	}
	if (nv == 0)
		drv_prom_sample(w, "drover_pending_jobs",
				DRV_PROM_LABELS("tenant", "default", "reason_code", "None"), 0);
	for (k = 0; k < nv; k++)
		drv_prom_sample(w, "drover_pending_jobs",
				DRV_PROM_LABELS("tenant", v[k].tenant, "reason_code", v[k].code),
				(double)v[k].n);
	drv_free(v);
}

/* Total, allocated, free and unavailable GPUs of one pool and model;
 * nothing when the pool has no node of that model. */
static void gpus_of(struct drv_server *s, struct drv_prom *w, int32_t p, int m)
{
	static const char *const st[] = { "total", "allocated", "free", "unavailable" };
	struct srv_gpu_count c = { 0 };
	bool any = false;
	const char *pn, *mn;

	for (int32_t i = 0; i < s->nnodes; i++) {
		const struct drv_node *cn = &s->cluster.nodes[i];

		if (cn->pool != p || cn->model != m || m < 0)
			continue;
		any = true;
		srv_node_gpus(s, i, &c);
	}
	if (!any)
		return;
	pn = s->cluster.pools[p].name;
	mn = drv_gpu_model_at(m)->id;
	const int64_t v[] = { c.total, c.allocated, c.free, c.unavailable };
	for (size_t k = 0; k < DRV_ARRAY_SIZE(st); k++)
		drv_prom_sample(w, "drover_gpus",
				DRV_PROM_LABELS("pool", pn, "model", mn, "status", st[k]),
				(double)v[k]);
}

static void nodes_by_state(struct drv_server *s, struct drv_prom *w)
{
	int nst[3] = { 0 };

	for (int32_t i = 0; i < s->nnodes; i++)
		nst[s->nodes[i].state]++;
	drv_prom_family(w, "drover_nodes", "gauge", "Nodes by state.");
	drv_prom_sample(w, "drover_nodes", DRV_PROM_LABELS("state", "up"), nst[DRV_NODE_UP]);
	drv_prom_sample(w, "drover_nodes", DRV_PROM_LABELS("state", "draining"),
			nst[DRV_NODE_DRAINING]);
	drv_prom_sample(w, "drover_nodes", DRV_PROM_LABELS("state", "down"), nst[DRV_NODE_DOWN]);
}

/* Queue waits run from under a second to days, and past a day on a busy
 * cluster: the last buckets are two days and a week. */
static const double wait_buckets[] = { 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600,
				       7200, 21600, 86400, 172800, 604800 };

void srv_wait_observe(struct drv_server *s, const char *tenant, double secs)
{
	size_t k;

	if (!tenant || !*tenant)
		tenant = "default";
	for (k = 0; k < s->nwaits && strcmp(s->waits[k].tenant, tenant); k++)
		;
	if (k == s->nwaits) {
		DRV_GROW(s->waits, s->nwaits + 1, s->waits_cap);
		s->waits[k].tenant = drv_strdup(tenant);
		drv_histogram_init(&s->waits[k].h, wait_buckets, (int)DRV_ARRAY_SIZE(wait_buckets));
		s->nwaits++;
	}
	drv_histogram_observe(&s->waits[k].h, secs);
}

void srv_waits_release(struct drv_server *s)
{
	for (size_t k = 0; k < s->nwaits; k++) {
		drv_free(s->waits[k].tenant);
		drv_histogram_release(&s->waits[k].h);
	}
	drv_free(s->waits);
	s->waits = NULL;
	s->nwaits = s->waits_cap = 0;
}

/* The waits from submit to running, per tenant; an empty "default" one
 * before any job started, so that the family is never missing. */
static void waits(struct drv_server *s, struct drv_prom *w)
{
	drv_prom_family(w, "drover_job_wait_seconds", "histogram",
			"Time from submit to running, seconds, by tenant.");
	if (s->nwaits == 0) {
		struct drv_histogram none;

		drv_histogram_init(&none, wait_buckets, (int)DRV_ARRAY_SIZE(wait_buckets));
		drv_prom_histogram(w, "drover_job_wait_seconds", DRV_PROM_LABELS("tenant", "default"),
				   &none);
		drv_histogram_release(&none);
	}
	for (size_t k = 0; k < s->nwaits; k++)
		drv_prom_histogram(w, "drover_job_wait_seconds",
				   DRV_PROM_LABELS("tenant", s->waits[k].tenant), &s->waits[k].h);
}

/* The histograms and counters, in the page's order. */
static void counters(struct drv_server *s, struct drv_prom *w)
{
	waits(s, w);
	drv_prom_family(w, "drover_sched_pass_seconds", "histogram",
			"Duration of one scheduling pass, seconds.");
	drv_prom_histogram(w, "drover_sched_pass_seconds", NULL, &s->pass_hist);

	drv_prom_metric(w, "drover_sched_passes_total", "counter", "Scheduling passes run.", NULL,
			(double)s->passes);
	drv_prom_metric(w, "drover_preemptions_total", "counter", "Jobs preempted.", NULL,
			(double)s->preemptions);
	drv_prom_metric(w, "drover_capacity_builds_total", "counter",
			"Builds of the tables that tell a job that can never run; one per change "
			"of the cluster's nodes, pools or topology seen by a submit.", NULL,
			(double)s->capacity_builds);
	drv_prom_family(w, "drover_job_transitions_total", "counter",
			"Job state transitions by new state.");
	for (int k = 0; k < J_NSTATES; k++)
		drv_prom_sample(w, "drover_job_transitions_total",
				DRV_PROM_LABELS("to", srv_jstate_name((enum jstate)k)),
				(double)s->transitions[k]);
	drv_prom_metric(w, "drover_submits_total", "counter", "Jobs accepted.", NULL,
			(double)s->submits);
	srv_cost_metrics(s, w);   /* cost_metrics.c */
	drv_prom_metric(w, "drover_agent_heartbeats_total", "counter", "Agent syncs received (each is a heartbeat).",
			NULL, (double)s->heartbeats);
}

void srv_render_metrics(struct drv_server *s, struct drv_prom *w)
{
	jobs_by_state(s, w);
	queue_depth(s, w);
	pending_reasons(s, w);
	drv_prom_family(w, "drover_gpus", "gauge", "GPUs by pool, model and status.");
	for (int32_t p = 0; p < s->cluster.npools; p++)
		for (int m = -1; m < drv_gpu_model_count(); m++)
			gpus_of(s, w, p, m);
	nodes_by_state(s, w);
	counters(s, w);
}
