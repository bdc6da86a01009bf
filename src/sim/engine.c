/*
 * engine.c: the simulator's discrete-event loop.
 *
 * Virtual time advances from event to event: arrivals (read in order from
 * the sorted workload, not pushed on the heap), completions, the end of a
 * preempted job's grace period, node failures and repairs, provisioned
 * nodes arriving. All events at one time are applied first, then the
 * scheduler (drv_sched_pass, the controller's own code) runs once for that
 * time, and its decisions are applied to the virtual cluster: a START
 * schedules the job's completion, a PREEMPT the end of the victims' grace,
 * a PROVISION the arrival of nodes, a PENDING with reason NEVER rejects
 * the job. Reservations are the scheduler's business.
 *
 * Work model: a job needs `duration` seconds of running. A preempted job
 * keeps running through its grace period (checkpointing) and resumes later
 * with what is left; a job on a failed node loses the whole run (requeued
 * whole, from its last checkpoint, i.e. from where the run started), and
 * the GPU-hours it loses are counted. A job with a time limit is killed
 * when a run reaches it.
 *
 * Metrics are integrated between event times: allocated GPUs while work
 * waits or runs (gpu_alloc_ratio), jobs in the system (Little's law).
 * Per tenant: GPUs held now and at most, GPU-seconds, waits, so that what
 * a quota does is visible.
 *
 * A tenants file (o->tenants) gives the scheduler its classes, quotas,
 * weights and cohorts before the first job arrives; a job naming a class
 * is submitted with it.
 */
#include "drover/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ST_FUTURE = 0, ST_PENDING, ST_RUNNING, ST_TERMINATING, ST_DONE, ST_REJECTED };

struct jst {
	int64_t remaining;   /* seconds of work left when the current run started */
	int64_t run_start;
	int64_t first_start; /* -1 until it starts */
	int64_t end;         /* -1 until it leaves */
	int64_t milli;       /* GPU milli it holds when running */
	int32_t attempt;
	int32_t run;         /* current run record, -1 */
	int32_t rpos;        /* position in the running list, -1 */
	uint32_t token;      /* invalidates stale FINISH/GRACE events */
	uint8_t st;
	bool completed;      /* left having done all its work (not killed) */
};

struct prov {
	int32_t pool, model, ngpus, count;
};

struct engine {
	struct drv_cluster *c;
	struct drv_sim_workload *w;
	const struct drv_sim_opts *o;
	struct drv_sim_result *r;
	struct drv_sched *s;
	struct drv_sched_decisions dec;
	struct drv_sim_heap heap;
	struct drv_rng rng;
	struct jst *js;
	int32_t *running;    /* job indexes of running and terminating jobs */
	int32_t nrunning;
	int64_t live;        /* heap events that can change what runs */
	int64_t alloc_milli;
	int32_t npending;
	int32_t in_system;   /* submitted, not yet left */
	int64_t now;
	int64_t total_milli;
	double alloc_area;   /* GPU-milli-seconds while busy */
	double busy_time;
	double system_area;  /* job-seconds in the system */
	double lost_gpu_s;
	int64_t *t_alloc;    /* per workload tenant: milli-GPUs held now */
	int64_t *t_peak;     /* ... at most */
	double *t_gpu_s;     /* ... GPU-milli-seconds over ended runs */
	int64_t *t_preempted;
	struct prov *prov;   /* provisioning requests, by event */
	size_t nprov, provcap;
	char why[256];
	int progress_last;
};

static inline int32_t job_index(uint64_t id)
{
	return (int32_t)(id - 1);
}

static struct drv_sim_run *new_run(struct engine *e, int32_t j)
{
	struct drv_sim_result *r = e->r;
	struct drv_sim_run *run;
	DRV_GROW(r->runs, r->nruns + 1, r->rcap);
	run = &r->runs[r->nruns++];
	memset(run, 0, sizeof(*run));
	drv_placement_init(&run->place);
	run->job = j;
	run->attempt = e->js[j].attempt;
	run->start = -1;
	run->end = -1;
	return run;
}

static void sample(struct engine *e)
{
	struct drv_sim_result *r = e->r;
	struct drv_sim_sample *sm;
	if (!e->o->record_samples)
		return;
	if (r->nsamples && r->samples[r->nsamples - 1].t == e->now) {
		sm = &r->samples[r->nsamples - 1];
	} else {
		DRV_GROW(r->samples, r->nsamples + 1, r->scap);
		sm = &r->samples[r->nsamples++];
	}
	sm->t = e->now;
	sm->alloc_milli = e->alloc_milli;
	sm->queued = e->npending;
	sm->running = e->nrunning;
}

/* Moves the clock to t, integrating the metrics over [now, t). */
static void advance(struct engine *e, int64_t t)
{
	double dt = (double)(t - e->now);
	if (dt <= 0)
		return;
	if (e->npending || e->nrunning) {
		e->alloc_area += dt * (double)e->alloc_milli;
		e->busy_time += dt;
	}
	e->system_area += dt * e->in_system;
	e->now = t;
}

/* micro-dollars of a run of p lasting secs */
static int64_t run_cost(const struct drv_cluster *c, const struct drv_placement *p, int64_t secs)
{
	double micro = 0;
	int32_t t;
	for (t = 0; t < p->ntasks; t++) {
		const struct drv_task_place *tp = &p->tasks[t];
		int pool = c->nodes[tp->node].pool;
		double gpus = (double)__builtin_popcountll(tp->gpu_mask) * tp->gpu_milli / 1000.0;
		if (pool >= 0 && pool < c->npools)
			micro += gpus * (double)c->pools[pool].price_micro_per_gpu_hour * secs / 3600.0;
	}
	return (int64_t)llround(micro);
}

static void running_add(struct engine *e, int32_t j)
{
	e->js[j].rpos = e->nrunning;
	e->running[e->nrunning++] = j;
}

static void running_del(struct engine *e, int32_t j)
{
	int32_t pos = e->js[j].rpos, last = e->running[--e->nrunning];
	e->running[pos] = last;
	e->js[last].rpos = pos;
	e->js[j].rpos = -1;
}

/* Ends job j's current run at now with outcome o. */
static void end_run(struct engine *e, int32_t j, enum drv_sim_outcome o)
{
	struct jst *s = &e->js[j];
	struct drv_sim_run *run = &e->r->runs[s->run];
	run->end = e->now;
	run->outcome = o;
	run->cost_micro = run_cost(e->c, &run->place, e->now - s->run_start);
	e->alloc_milli -= s->milli;
	e->t_alloc[e->w->jobs[j].tenant] -= s->milli;
	e->t_gpu_s[e->w->jobs[j].tenant] += (double)s->milli * (double)(e->now - s->run_start);
	running_del(e, j);
	s->run = -1;
	s->token++;
}

static void leave(struct engine *e, int32_t j)
{
	e->js[j].st = ST_DONE;
	e->js[j].end = e->now;
	e->in_system--;
}

static void schedule_finish(struct engine *e, int32_t j)
{
	struct jst *s = &e->js[j];
	const struct drv_sim_job *sj = &e->w->jobs[j];
	int64_t left = s->remaining;
	if (sj->duration == DRV_SIM_SERVICE)
		left = -1;
	if (sj->job.time_limit > 0 && (left < 0 || left > sj->job.time_limit))
		left = sj->job.time_limit; /* killed at its limit */
	if (left < 0)
		return;
	drv_sim_heap_push(&e->heap, e->now + left, DRV_SIM_EV_FINISH, j, s->token);
	e->live++;
}

static int apply_start(struct engine *e, const struct drv_sched_decision *d)
{
	int32_t j = job_index(d->job);
	struct jst *s;
	struct drv_sim_run *run;

	if (j < 0 || j >= e->w->njobs || e->js[j].st != ST_PENDING || !d->placement)
		return DRV_ESTATE;
	s = &e->js[j];
	run = new_run(e, j);
	run->start = e->now;
	drv_placement_copy(&run->place, d->placement);
	s->run = (int32_t)(run - e->r->runs);
	s->st = ST_RUNNING;
	s->run_start = e->now;
	if (s->first_start < 0)
		s->first_start = e->now;
	s->milli = 0;
	{
		int32_t t;
		for (t = 0; t < d->placement->ntasks; t++)
			s->milli += (int64_t)__builtin_popcountll(d->placement->tasks[t].gpu_mask) *
				    d->placement->tasks[t].gpu_milli;
	}
	e->alloc_milli += s->milli;
	{
		int32_t t = e->w->jobs[j].tenant;
		e->t_alloc[t] += s->milli;
		if (e->t_alloc[t] > e->t_peak[t])
			e->t_peak[t] = e->t_alloc[t];
	}
	e->npending--;
	running_add(e, j);
	schedule_finish(e, j);
	return 0;
}

static int apply_preempt(struct engine *e, const struct drv_sched_decision *d)
{
	int32_t i;
	for (i = 0; i < d->nvictims; i++) {
		int32_t v = job_index(d->victims[i]);
		struct jst *s;
		if (v < 0 || v >= e->w->njobs || e->js[v].st != ST_RUNNING)
			return DRV_ESTATE;
		s = &e->js[v];
		s->st = ST_TERMINATING;
		e->r->sum.preemptions++;
		e->t_preempted[e->w->jobs[v].tenant]++;
		/* it stops at the grace deadline, or sooner if it completes */
		drv_sim_heap_push(&e->heap, d->at > e->now ? d->at : e->now, DRV_SIM_EV_GRACE, v,
				  s->token);
		e->live++;
	}
	return 0;
}

static int apply_provision(struct engine *e, const struct drv_sched_decision *d)
{
	struct prov *pv;
	if (d->pool < 0 || d->pool >= e->c->npools || d->count <= 0 || d->n[0] <= 0)
		return DRV_ESTATE;
	DRV_GROW(e->prov, e->nprov + 1, e->provcap);
	pv = &e->prov[e->nprov];
	pv->pool = d->pool;
	pv->model = d->model;
	pv->ngpus = (int32_t)d->n[0];
	pv->count = d->count;
	/* the nodes arrive after the provisioning delay */
	drv_sim_heap_push(&e->heap, e->now + e->o->provision_delay_s, DRV_SIM_EV_PROVISION,
			  (int32_t)e->nprov++, 0);
	e->live++;
	return 0;
}

static void reject(struct engine *e, const struct drv_sched_decision *d)
{
	int32_t j = job_index(d->job);
	struct drv_sim_job *sj;
	struct drv_sim_run *run;
	if (j < 0 || j >= e->w->njobs || e->js[j].st != ST_PENDING)
		return;
	sj = &e->w->jobs[j];
	drv_sched_reason_text(e->c, d, e->now, e->why, sizeof(e->why));
	drv_free(sj->reject);
	sj->reject = drv_strdup(e->why);
	drv_sched_finish(e->s, d->job, e->now);
	e->js[j].st = ST_REJECTED;
	e->js[j].end = e->now;
	e->npending--;
	e->in_system--;
	run = new_run(e, j);
	run->outcome = DRV_SIM_REJECTED;
	e->r->sum.rejected++;
}

static int pass(struct engine *e)
{
	int n, i, rc;
	n = drv_sched_pass(e->s, e->now, e->o->policy, &e->dec);
	e->r->sum.passes++;
	if (n < 0)
		return n;
	for (i = 0; i < e->dec.n; i++) {
		const struct drv_sched_decision *d = &e->dec.v[i];
		rc = 0;
		switch (d->kind) {
		case DRV_DEC_START:
			rc = apply_start(e, d);
			break;
		case DRV_DEC_PREEMPT:
			rc = apply_preempt(e, d);
			break;
		case DRV_DEC_PROVISION:
			rc = apply_provision(e, d);
			break;
		case DRV_DEC_PENDING:
			if (d->reason == DRV_REASON_NEVER)
				reject(e, d);
			break;
		case DRV_DEC_RESERVE:
		case DRV_DEC_RELEASE:
			break;
		}
		if (rc)
			return rc;
	}
	return 0;
}

static void on_finish(struct engine *e, int32_t j)
{
	struct jst *s = &e->js[j];
	const struct drv_sim_job *sj = &e->w->jobs[j];
	int64_t ran = e->now - s->run_start;
	bool timeout = sj->duration == DRV_SIM_SERVICE || ran < s->remaining;
	drv_sched_finish(e->s, sj->job.id, e->now);
	if (s->st == ST_RUNNING || s->st == ST_TERMINATING)
		e->r->sum.completed += !timeout;
	s->completed = !timeout;
	end_run(e, j, timeout ? DRV_SIM_TIMEOUT : DRV_SIM_COMPLETED);
	leave(e, j);
}

static void on_grace(struct engine *e, int32_t j)
{
	struct jst *s = &e->js[j];
	int64_t ran = e->now - s->run_start;
	int64_t lost = DRV_MIN(ran, e->o->preempt_cost_s);
	/* checkpointed but for the last preempt_cost_s: that work is redone */
	s->remaining -= ran - lost;
	e->lost_gpu_s += (double)s->milli / 1000.0 * (double)lost;
	if (s->remaining < 0)
		s->remaining = 0;
	drv_sched_requeue(e->s, e->w->jobs[j].job.id, e->now);
	end_run(e, j, DRV_SIM_PREEMPTED);
	s->st = ST_PENDING;
	s->attempt++;
	e->npending++;
	e->r->sum.requeues++;
}

static bool on_node(const struct drv_placement *p, int32_t node)
{
	int32_t t;
	for (t = 0; t < p->ntasks; t++)
		if (p->tasks[t].node == node)
			return true;
	return false;
}

static void on_fail(struct engine *e, int32_t node)
{
	int32_t i;
	if (node >= e->c->nnodes || e->c->nodes[node].state == DRV_NODE_DOWN)
		return;
	e->r->sum.failures++;
	/* every gang with a task there is requeued whole; the run's work is lost */
	for (i = 0; i < e->nrunning;) {
		int32_t j = e->running[i];
		struct jst *s = &e->js[j];
		if (!on_node(&e->r->runs[s->run].place, node)) {
			i++;
			continue;
		}
		e->lost_gpu_s += (double)s->milli / 1000.0 * (double)(e->now - s->run_start);
		drv_sched_requeue(e->s, e->w->jobs[j].job.id, e->now);
		end_run(e, j, DRV_SIM_FAILED); /* swaps another job into slot i */
		s->st = ST_PENDING;
		s->attempt++;
		e->npending++;
		e->r->sum.requeues++;
	}
	drv_cluster_set_node_state(e->c, node, DRV_NODE_DOWN);
	drv_sched_cluster_changed(e->s, e->now);
	drv_sim_heap_push(&e->heap, e->now + (int64_t)ceil(drv_rng_exp(&e->rng,
				e->o->repair_hours * 3600.0)), DRV_SIM_EV_REPAIR, node, 0);
	e->live++;
}

static void on_repair(struct engine *e, int32_t node)
{
	drv_cluster_set_node_state(e->c, node, DRV_NODE_UP);
	drv_sched_cluster_changed(e->s, e->now);
	drv_sim_heap_push(&e->heap, e->now + (int64_t)ceil(drv_rng_exp(&e->rng,
				e->o->mtbf_hours * 3600.0)), DRV_SIM_EV_FAIL, node, 0);
}

static void on_provision(struct engine *e, const struct drv_sim_event *ev)
{
	const struct prov *pv = &e->prov[ev->a];
	char name[DRV_NAME_MAX];
	int32_t k, added = 0;

	for (k = 0; k < pv->count; k++) {
		snprintf(name, sizeof(name), "%s-elastic-%d", e->c->pools[pv->pool].name,
			 e->c->nnodes);
		if (drv_cluster_add_node(e->c, e->c->pools[pv->pool].vertex, name, pv->model,
					 pv->ngpus, 0, 0) < 0)
			break;
		e->total_milli += (int64_t)pv->ngpus * DRV_MILLI;
		added++;
	}
	drv_sched_pool_grown(e->s, pv->pool, added, e->now);
}

static bool has_elastic(const struct drv_cluster *c)
{
	int32_t i;
	for (i = 0; i < c->npools; i++)
		if (c->pools[i].elastic)
			return true;
	return false;
}

static void progress(struct engine *e, int32_t arrived)
{
	int pct = e->w->njobs ? (int)((int64_t)arrived * 100 / e->w->njobs) : 100;
	int i;
	if (pct == e->progress_last)
		return;
	e->progress_last = pct;
	fprintf(stderr, "\r[");
	for (i = 0; i < 40; i++)
		fputc(i < pct * 40 / 100 ? '#' : ' ', stderr);
	fprintf(stderr, "] %3d%% %d/%d jobs, day %.1f", pct, arrived, e->w->njobs,
		(double)e->now / 86400.0);
	if (pct == 100)
		fputc('\n', stderr);
	fflush(stderr);
}

/* Orders the runs by (job, attempt) in O(runs): a job's runs were made in
 * attempt order, so a stable counting sort by job is enough. */
static void sort_runs(struct drv_sim_result *r, int32_t njobs)
{
	size_t *start = drv_calloc((size_t)njobs + 1, sizeof(size_t)), i;
	struct drv_sim_run *out = drv_malloc(sizeof(*out) * (r->nruns ? r->nruns : 1));
	int32_t j;

	for (i = 0; i < r->nruns; i++)
		start[r->runs[i].job + 1]++;
	for (j = 0; j < njobs; j++)
		start[j + 1] += start[j];
	for (i = 0; i < r->nruns; i++)
		out[start[r->runs[i].job]++] = r->runs[i];
	drv_free(r->runs);
	r->runs = out;
	r->rcap = r->nruns ? r->nruns : 1;
	drv_free(start);
}

/* The k-th smallest (0-based) of v[n], reordering v: quickselect with a
 * median-of-three pivot, O(n) expected. */
static int64_t select_k(int64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		int64_t a = v[lo], b = v[mid], c = v[hi], p, t;
		p = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		while (i <= j) {
			while (v[i] < p)
				i++;
			while (v[j] > p)
				j--;
			if (i <= j) {
				t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

/* nearest-rank percentile of v[n] (reorders v) */
static double pct(int64_t *v, size_t n, double p)
{
	size_t k;
	if (!n)
		return 0;
	k = (size_t)ceil(p * (double)n);
	if (k < 1)
		k = 1;
	return (double)select_k(v, n, k - 1);
}

/* Per tenant: counts, waits (mean, p99), JCT, GPU-hours, peak GPUs. */
static void summarize_tenants(struct engine *e, int64_t makespan)
{
	struct drv_sim_workload *w = e->w;
	struct drv_sim_result *r = e->r;
	int32_t nt = w->ntenants, i, t;
	size_t *start = drv_calloc((size_t)nt + 2, sizeof(size_t)), *fill;
	int64_t *wait = drv_malloc(sizeof(int64_t) * ((size_t)w->njobs + 1));
	double *jct = drv_calloc((size_t)nt + 1, sizeof(double));
	int64_t model_gpus[DRV_MAX_MODELS] = { 0 };

	r->tenants = drv_calloc((size_t)nt + 1, sizeof(*r->tenants));
	r->ntenants = nt;
	for (i = 0; i < e->c->nnodes; i++)
		if (e->c->nodes[i].model >= 0 && e->c->nodes[i].model < DRV_MAX_MODELS)
			model_gpus[e->c->nodes[i].model] += e->c->nodes[i].ngpus;
	/* waits grouped by tenant: counting sort */
	for (i = 0; i < w->njobs; i++)
		if (e->js[i].first_start >= 0)
			start[w->jobs[i].tenant + 1]++;
	for (t = 0; t < nt; t++)
		start[t + 1] += start[t];
	fill = drv_malloc(sizeof(size_t) * ((size_t)nt + 1));
	memcpy(fill, start, sizeof(size_t) * (size_t)nt);
	for (i = 0; i < w->njobs; i++) {
		const struct jst *s = &e->js[i];
		struct drv_sim_tenant_sum *ts = &r->tenants[w->jobs[i].tenant];
		ts->jobs++;
		if (s->st == ST_REJECTED)
			ts->rejected++;
		else if (s->first_start < 0)
			ts->never_started++;
		if (s->first_start >= 0)
			wait[fill[w->jobs[i].tenant]++] = s->first_start - w->jobs[i].job.submit_time;
		if (s->st == ST_DONE && s->completed) {
			ts->completed++;
			jct[w->jobs[i].tenant] += (double)(s->end - w->jobs[i].job.submit_time);
		}
	}
	for (t = 0; t < nt; t++) {
		struct drv_sim_tenant_sum *ts = &r->tenants[t];
		size_t n = start[t + 1] - start[t], k;
		double sw = 0;
		const struct drv_tenant_conf *tc =
			e->o->tenants ? drv_tenants_tenant(e->o->tenants, w->tenants[t]) : NULL;
		int m;

		for (k = start[t]; k < start[t + 1]; k++)
			sw += (double)wait[k];
		ts->avg_wait_s = n ? sw / (double)n : 0;
		ts->p99_wait_s = pct(wait + start[t], n, 0.99);
		ts->avg_jct_s = ts->completed ? jct[t] / (double)ts->completed : 0;
		ts->gpu_hours = e->t_gpu_s[t] / 1000.0 / 3600.0;
		ts->avg_gpus = makespan > 0 ? e->t_gpu_s[t] / 1000.0 / (double)makespan : 0;
		ts->peak_gpus = (double)e->t_peak[t] / 1000.0;
		ts->preempted = e->t_preempted[t];
		ts->quota_gpus = -1;
		for (m = 0; tc && m < DRV_MAX_MODELS; m++)
			if (model_gpus[m] > 0 && tc->quota_milli[m] >= 0)
				ts->quota_gpus = (ts->quota_gpus < 0 ? 0 : ts->quota_gpus) +
						 (double)tc->quota_milli[m] / 1000.0;
	}
	drv_free(fill);
	drv_free(start);
	drv_free(wait);
	drv_free(jct);
}

static void summarize(struct engine *e)
{
	struct drv_sim_summary *sum = &e->r->sum;
	struct drv_sim_workload *w = e->w;
	int64_t *jct = drv_malloc(sizeof(int64_t) * (size_t)(w->njobs + 1));
	int64_t *wait = drv_malloc(sizeof(int64_t) * (size_t)(w->njobs + 1));
	size_t nj = 0, nw = 0;
	double sj = 0, swt = 0, soj = 0;
	int64_t end = e->now, makespan = 0;
	int32_t i;

	sum->jobs = w->njobs;
	for (i = 0; i < w->njobs; i++) {
		const struct jst *s = &e->js[i];
		if (w->jobs[i].duration == DRV_SIM_SERVICE)
			sum->services++;
		if (s->first_start >= 0) {
			wait[nw++] = s->first_start - w->jobs[i].job.submit_time;
			swt += (double)(s->first_start - w->jobs[i].job.submit_time);
		} else if (s->st != ST_REJECTED) {
			sum->never_started++;
		}
		if (s->st == ST_DONE && s->end >= 0) {
			makespan = DRV_MAX(makespan, s->end);
			if (s->completed) {
				jct[nj++] = s->end - w->jobs[i].job.submit_time;
				sj += (double)(s->end - w->jobs[i].job.submit_time);
			}
		}
		/* time in system, capped at the end of the run */
		soj += (double)((s->end >= 0 ? s->end : end) - w->jobs[i].job.submit_time);
	}
	sum->avg_jct_s = nj ? sj / nj : 0;
	sum->p50_jct_s = pct(jct, nj, 0.50);
	sum->p99_jct_s = pct(jct, nj, 0.99);
	sum->avg_wait_s = nw ? swt / nw : 0;
	sum->p99_wait_s = pct(wait, nw, 0.99);
	sum->makespan_s = makespan ? makespan : end;
	sum->gpu_alloc_ratio =
		e->busy_time > 0 && e->total_milli > 0
			? e->alloc_area / (e->busy_time * (double)e->total_milli)
			: 0;
	sum->lost_gpu_hours = e->lost_gpu_s / 3600.0;
	sum->cost_usd = 0;
	for (size_t k = 0; k < e->r->nruns; k++)
		sum->cost_usd += (double)e->r->runs[k].cost_micro / 1e6;
	if (end > 0) {
		sum->mean_in_system = e->system_area / (double)end;
		sum->arrival_rate = (double)w->njobs / (double)end;
	}
	sum->mean_sojourn_s = w->njobs ? soj / w->njobs : 0;
	drv_free(jct);
	drv_free(wait);
	summarize_tenants(e, sum->makespan_s);
}

static void engine_init(struct engine *e, struct drv_cluster *c, struct drv_sim_workload *w,
			const struct drv_sim_opts *o, struct drv_sim_result *r)
{
	int32_t i;

	memset(e, 0, sizeof(*e));
	e->c = c;
	e->w = w;
	e->o = o;
	e->r = r;
	e->progress_last = -1;
	e->js = drv_calloc((size_t)w->njobs + 1, sizeof(*e->js));
	e->running = drv_malloc(sizeof(int32_t) * ((size_t)w->njobs + 1));
	e->t_alloc = drv_calloc((size_t)w->ntenants + 1, sizeof(int64_t));
	e->t_peak = drv_calloc((size_t)w->ntenants + 1, sizeof(int64_t));
	e->t_gpu_s = drv_calloc((size_t)w->ntenants + 1, sizeof(double));
	e->t_preempted = drv_calloc((size_t)w->ntenants + 1, sizeof(int64_t));
	for (i = 0; i < w->njobs; i++) {
		e->js[i].first_start = -1;
		e->js[i].end = -1;
		e->js[i].run = -1;
		e->js[i].rpos = -1;
		e->js[i].remaining = w->jobs[i].duration;
	}
	for (i = 0; i < c->nnodes; i++)
		e->total_milli += (int64_t)c->nodes[i].ngpus * DRV_MILLI;
	r->total_gpus = e->total_milli / DRV_MILLI;
	drv_sim_heap_init(&e->heap);
	drv_sched_decisions_init(&e->dec);
	/* failures draw from their own stream: the workload does not move */
	drv_rng_seed(&e->rng, o->seed ^ 0x6661696c75726573ULL);
}

static void engine_release(struct engine *e)
{
	if (e->s)
		drv_sched_free(e->s);
	drv_sched_decisions_release(&e->dec);
	drv_sim_heap_release(&e->heap);
	drv_free(e->js);
	drv_free(e->running);
	drv_free(e->t_alloc);
	drv_free(e->t_peak);
	drv_free(e->t_gpu_s);
	drv_free(e->t_preempted);
	drv_free(e->prov);
}

/*
 * Jobs that can never run on the cluster as loaded (every node, elastic
 * pools at their maxNodes: drv_capacity_check, the server's submit-time
 * test) are rejected on arrival with that reason, in the words of drover
 * place and the server.
 */
static void reject_static(struct engine *e)
{
	struct drv_sim_workload *w = e->w;
	struct drv_capacity *cap = drv_capacity_new();
	struct drv_sched_decision why;

	drv_capacity_build(cap, e->c, NULL, NULL);
	for (int32_t i = 0; i < w->njobs; i++) {
		char text[256];
		if (drv_capacity_check(cap, e->c, &w->jobs[i].job, &why) != DRV_REASON_NEVER)
			continue;
		drv_sched_reason_text(e->c, &why, 0, text, sizeof(text));
		drv_free(w->jobs[i].reject);
		w->jobs[i].reject = drv_strdup(text);
	}
	drv_capacity_free(cap);
}

/*
 * Skipping passes. Between events nothing the pass reads changes but
 * the clock and the queue. With preemption off, no elastic pool and
 * no job that needs no GPU, a pass when every GPU is taken cannot
 * start anything, whatever arrived (an arrival may change the order
 * and the reservations, not the free GPUs). So a time whose only
 * events are arrivals onto a full cluster skips its pass, unless an
 * arrival is to be rejected. The next event that frees a GPU (a
 * completion, a repair, a grace end) runs one. And when no job waits,
 * there is nothing to start: no pass either.
 */
static bool may_skip_passes(const struct engine *e)
{
	bool may_skip = !e->o->every_pass && !e->o->policy->preemption;
	int32_t i;

	for (i = 0; i < e->w->njobs && may_skip; i++)
		if (drv_job_gpu_milli(&e->w->jobs[i].job) == 0)
			may_skip = false;
	for (i = 0; i < e->c->npools; i++)
		if (e->c->pools[i].elastic)
			may_skip = false;
	return may_skip;
}

/* Applies every heap event of time t; true when there was one. */
static bool heap_events(struct engine *e, int64_t t)
{
	const struct drv_sim_event *top;
	struct drv_sim_event ev;
	bool changed = false;

	while ((top = drv_sim_heap_peek(&e->heap)) && top->time == t) {
		drv_sim_heap_pop(&e->heap, &ev);
		changed = true;
		switch (ev.type) {
		case DRV_SIM_EV_FINISH:
			e->live--;
			if ((e->js[ev.a].st == ST_RUNNING || e->js[ev.a].st == ST_TERMINATING) &&
			    e->js[ev.a].token == (uint32_t)ev.b) {
				on_finish(e, ev.a);
				e->r->sum.events++;
			}
			break;
		case DRV_SIM_EV_GRACE:
			e->live--;
			if (e->js[ev.a].st == ST_TERMINATING && e->js[ev.a].token == (uint32_t)ev.b) {
				on_grace(e, ev.a);
				e->r->sum.events++;
			}
			break;
		case DRV_SIM_EV_FAIL:
			on_fail(e, ev.a);
			e->r->sum.events++;
			break;
		case DRV_SIM_EV_REPAIR:
			e->live--;
			on_repair(e, ev.a);
			e->r->sum.events++;
			break;
		case DRV_SIM_EV_PROVISION:
			e->live--;
			on_provision(e, &ev);
			e->r->sum.events++;
			break;
		case DRV_SIM_EV_TICK:
			e->live--;
			break;
		}
	}
	return changed;
}

/* Job j arrives at t: rejected if found impossible before the run, else
 * submitted (and rejected at once when the state knows it can never fit). */
static int arrive(struct engine *e, int32_t j, int64_t t, bool grow)
{
	struct drv_sim_workload *w = e->w;
	struct drv_sched_job_info info;
	int rc;

	if (w->jobs[j].reject) {
		/* found impossible before the run: never reaches the queue */
		struct drv_sim_run *run = new_run(e, j);
		run->outcome = DRV_SIM_REJECTED;
		e->js[j].st = ST_REJECTED;
		e->js[j].end = t;
		e->r->sum.rejected++;
		return 0;
	}
	rc = drv_sched_submit(e->s, &w->jobs[j].job,
			      w->jobs[j].pclass >= 0 ? w->classes[w->jobs[j].pclass] : NULL);
	if (rc)
		return rc;
	/* the pass decides to grow a pool only when it runs: make it run
	 * once the job has waited long enough */
	if (grow) {
		drv_sim_heap_push(&e->heap, t + e->o->policy->grow_wait_s, DRV_SIM_EV_TICK, j, 0);
		e->live++;
	}
	e->js[j].st = ST_PENDING;
	e->npending++;
	e->in_system++;
	if (drv_sched_job_get(e->s, w->jobs[j].job.id, &info) == 0 &&
	    info.state == DRV_SJ_PENDING && info.why.reason == DRV_REASON_NEVER) {
		info.why.kind = DRV_DEC_PENDING;
		info.why.job = w->jobs[j].job.id;
		reject(e, &info.why);
	}
	return 0;
}

/* The runs still open at the end: running (services) or never started. */
static void close_runs(struct engine *e)
{
	struct drv_sim_workload *w = e->w;

	for (int32_t i = 0; i < w->njobs; i++) {
		struct jst *s = &e->js[i];
		if (s->st == ST_RUNNING || s->st == ST_TERMINATING) {
			struct drv_sim_run *run = &e->r->runs[s->run];
			run->outcome = DRV_SIM_RUNNING;
			run->cost_micro = run_cost(e->c, &run->place, e->now - s->run_start);
			e->t_gpu_s[w->jobs[i].tenant] +=
				(double)s->milli * (double)(e->now - s->run_start);
		} else if (s->st == ST_PENDING) {
			struct drv_sim_run *run = new_run(e, i);
			run->outcome = DRV_SIM_NEVER;
		}
	}
}

/* The event loop: each time, heap events, then arrivals, then one pass
 * (unless it may be skipped). */
static int run_events(struct engine *e, bool grow, bool may_skip)
{
	struct drv_sim_workload *w = e->w;
	int32_t next = 0;
	int rc;

	while (next < w->njobs || e->live > 0) {
		const struct drv_sim_event *top = drv_sim_heap_peek(&e->heap);
		int64_t t;
		bool changed;
		if (next < w->njobs && (!top || w->jobs[next].job.submit_time <= top->time))
			t = w->jobs[next].job.submit_time;
		else
			t = top->time;
		advance(e, t);
		/* heap events first (completions free room), then arrivals */
		changed = heap_events(e, t);
		while (next < w->njobs && w->jobs[next].job.submit_time == t) {
			/* an arrival onto a cluster with a free GPU needs the pass (one
			 * found impossible before the run is rejected passless) */
			if (!changed && e->c->vertices[0].free_milli > 0)
				changed = true;
			e->r->sum.events++;
			if ((rc = arrive(e, next, t, grow)))
				return rc;
			next++;
		}
		/* nothing waits: a pass would have nothing to start */
		if (may_skip && e->npending == 0)
			changed = false;
		if ((changed || !may_skip) && (rc = pass(e)))
			return rc;
		sample(e);
		if (e->o->progress)
			progress(e, next);
	}
	return 0;
}

int drv_sim_run(struct drv_cluster *c, struct drv_sim_workload *w, const struct drv_sim_opts *o,
		struct drv_sim_result *r)
{
	struct engine e;
	int rc = 0;
	bool grow;

	engine_init(&e, c, w, o, r);
	e.s = drv_sched_new(c);
	if (!e.s) {
		rc = DRV_EINVAL;
		goto out;
	}
	if (o->tenants && (rc = drv_tenants_apply(o->tenants, e.s)) < 0)
		goto out;
	if (o->mtbf_hours > 0)
		for (int32_t i = 0; i < c->nnodes; i++)
			drv_sim_heap_push(&e.heap,
					  (int64_t)ceil(drv_rng_exp(&e.rng, o->mtbf_hours * 3600.0)),
					  DRV_SIM_EV_FAIL, i, 0);
	if (w->njobs)
		e.now = w->jobs[0].job.submit_time;
	grow = o->policy->grow_wait_s > 0 && has_elastic(c);
	reject_static(&e);
	rc = run_events(&e, grow, may_skip_passes(&e));
	if (rc)
		goto out;
	close_runs(&e);
	sort_runs(r, w->njobs);
	summarize(&e);
out:
	engine_release(&e);
	return rc;
}
