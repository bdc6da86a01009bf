/*
 * loop.c: the controller's own thread: the scheduling pass, batched; node
 * liveness (nodes.c: heartbeat timeout -> node down; lease over -> gangs
 * requeued whole); and cost accrual (cost.c; rendered by cost_metrics.c).
 *
 * Batching: a submit, a finished job or a node change only sets
 * sched_dirty; the loop runs one pass sched_delay_ms after the first such
 * change, so a burst of 10,000 submits costs a handful of passes, and
 * never sooner after the last pass than that pass took (passes hold the
 * big lock at most half the time). A change that comes after a quiet
 * spell (no pass for sched_delay_ms) is passed at once: it has no burst to
 * wait for, and a lone submit should not wait out a window nobody shares;
 * what follows it within the window is batched as before. A pass also
 * runs every 5 s while jobs wait (reservations, aging).
 *
 * Decisions are applied in memory, flushed to the store, and only then
 * announced to agents (node versions bumped): written before acted on.
 */
#include "server_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static void apply_start(struct drv_server *s, const struct drv_sched_decision *d)
{
	struct srv_job *j = srv_job_get(s, d->job);
	const struct drv_placement *p = d->placement;
	char where[512], why[600];

	if (!j || !p)
		return;
	for (int32_t i = 0; i < j->ntasks; i++)
		{
		drv_free(j->tasks[i].reason);
		json_decref(j->tasks[i].usage);
		json_decref(j->tasks[i].container);
	}
	srv_cost_fold(s, j, drv_wall_s());
	srv_steps_free(j);   /* a new attempt starts with no steps */
	drv_free(j->tasks);
	j->tasks = drv_calloc((size_t)p->ntasks + 1, sizeof(*j->tasks));
	j->ntasks = p->ntasks;
	for (int32_t i = 0; i < p->ntasks; i++) {
		struct srv_task *t = &j->tasks[i];
		const struct drv_task_place *tp = &p->tasks[i];

		t->node = tp->node;
		t->group = tp->group;
		t->gpu_mask = tp->gpu_mask;
		t->gpu_milli = tp->gpu_milli;
		t->cpu_milli = tp->cpu_milli;
		t->mem_mib = tp->mem_mib;
		t->state = T_PENDING;
		t->exit_code = -1;
	}
	j->epoch = ++s->epoch;
	s->meta_dirty = true;
	j->attempt++;
	j->holding = true;
	j->has_exit = false;
	j->start_time = 0;
	j->end_time = 0;
	srv_set_str(&j->stop_reason, NULL);
	j->requeue_on_stop = false;
	j->requeue_quiet = false;
	srv_active_add(s, j->id);
	drv_placement_format(&s->cluster, p, where, sizeof(where));
	snprintf(why, sizeof(why), "placed on %s", where);
	srv_job_transition(s, j, J_SCHEDULED, why);
	DRV_GROW(s->announce, s->nannounce + 1, s->anncap);
	s->announce[s->nannounce++] = j->id;
}

static void apply_preempt(struct drv_server *s, const struct drv_sched_decision *d)
{
	char why[160];

	snprintf(why, sizeof(why), "preempted by job %llu", (unsigned long long)d->job);
	for (int32_t k = 0; k < d->nvictims; k++) {
		struct srv_job *v = srv_job_get(s, d->victims[k]);

		if (!v || srv_jstate_final(v->state) || v->state == J_PREEMPTED)
			continue;
		s->preemptions++;
		v->requeue_on_stop = true;
		srv_job_transition(s, v, J_PREEMPTED, why);
		srv_set_str(&v->stop_reason, NULL);
		srv_job_stop_tasks(s, v, why);
	}
}

static void apply_pending(struct drv_server *s, const struct drv_sched_decision *d)
{
	struct srv_job *j = srv_job_get(s, d->job);
	char buf[512];

	if (!j)
		return;
	srv_set_str(&j->reason, srv_pending_text(s, d, buf, sizeof(buf)));
}

static void run_pass(struct drv_server *s)
{
	int64_t t0 = drv_mono_ms(), now = drv_wall_s();
	int n;

	if (now < s->last_pass_now)
		now = s->last_pass_now;
	s->last_pass_now = now;
	s->sched_dirty = false;
	n = drv_sched_pass(s->sched, now, &s->cfg.policy, &s->dec);
	s->passes++;
	if (n < 0) {
		drv_log(&s->log, "scheduling pass failed: %s", drv_strerror(n));
		return;
	}
	for (int32_t i = 0; i < s->dec.n; i++) {
		const struct drv_sched_decision *d = &s->dec.v[i];

		switch (d->kind) {
		case DRV_DEC_START:
			apply_start(s, d);
			break;
		case DRV_DEC_PREEMPT:
			apply_preempt(s, d);
			break;
		case DRV_DEC_PENDING:
			apply_pending(s, d);
			break;
		default:
			break;
		}
	}
	s->last_pass_end_ms = drv_mono_ms();
	s->last_pass_ms = s->last_pass_end_ms - t0;
	drv_histogram_observe(&s->pass_hist, (double)(drv_mono_ms() - t0) / 1000.0);
}

static void announce(struct drv_server *s)
{
	for (size_t k = 0; k < s->nannounce; k++) {
		struct srv_job *j = srv_job_get(s, s->announce[k]);

		if (j)
			srv_job_bump_nodes(s, j);
	}
	s->nannounce = 0;
	pthread_cond_broadcast(&s->cv);
	drv_http_wake(s->http);
}

/* Once a second: what every job holding GPUs accrued, into the counters. */
static void cost_tick(struct drv_server *s)
{
	int64_t now = drv_wall_s();

	for (size_t k = 0; k < s->nactive; k++) {
		struct srv_job *j = srv_job_get(s, s->active[k]);

		if (j)
			srv_cost_accrue_job(s, j, now);
	}
	srv_month_roll(s, now);
	srv_budget_release(s);
	srv_elements_tick(s, now);
	srv_deps_tick(s, now);
	srv_signal_tick(s, now);
}

/* A tenth of the retention time, between a second and ten minutes. */
static int64_t purge_every_ms(const struct drv_server *s)
{
	return DRV_MAX(1000, DRV_MIN(600000, s->cfg.job_retention_s * 100));
}

/* The same for idempotency keys and their time to live. */
static int64_t idem_purge_every_ms(const struct drv_server *s)
{
	return DRV_MAX(1000, DRV_MIN(600000, s->cfg.idempotency_ttl_s * 100));
}

/* When the pending change is passed (see the top of this file). */
static int64_t pass_due_ms(const struct drv_server *s)
{
	int64_t at = s->dirty_since_ms;

	if (at < s->last_pass_end_ms + s->cfg.sched_delay_ms)
		at += s->cfg.sched_delay_ms;   /* passes are recent: a burst */
	return DRV_MAX(at, s->last_pass_end_ms + s->last_pass_ms);
}

void *srv_loop_main(void *arg)
{
	struct drv_server *s = arg;

	pthread_mutex_lock(&s->mu);
	s->last_cost_ms = drv_mono_ms();
	while (!s->stopping) {
		int64_t now = drv_mono_ms(), wake = now + 500;
		struct timespec ts;

		/* at least as long between passes as the last one took: a pass
		 * holds s->mu, and during a storm of changes (12,500 agents
		 * registering) back-to-back passes would starve every handler */
		if (s->sched_dirty && now >= pass_due_ms(s)) {
			run_pass(s);
			s->last_periodic_pass_ms = now;
		} else if (!s->sched_dirty && drv_sched_pending_count(s->sched) > 0 &&
			   now - s->last_periodic_pass_ms >= 5000) {
			run_pass(s);
			s->last_periodic_pass_ms = now;
		}
		if (now - s->last_hb_check_ms >= 500) {
			s->last_hb_check_ms = now;
			srv_nodes_check_liveness(s);
		}
		if (now - s->last_cost_ms >= 1000) {
			s->last_cost_ms = now;
			cost_tick(s);
		}
		if (now - s->last_purge_ms >= purge_every_ms(s)) {
			s->last_purge_ms = now;
			srv_purge_old_jobs(s);
		}
		if (now - s->last_idem_purge_ms >= idem_purge_every_ms(s)) {
			s->last_idem_purge_ms = now;
			srv_idem_purge(s);
		}
		if (srv_flush(s) == 0 && s->nannounce)
			announce(s);
		if (s->sched_dirty)
			wake = DRV_MIN(wake, pass_due_ms(s));
		now = drv_mono_ms();
		if (wake > now) {
			ts = drv_realtime_after_ms(wake - now);
			pthread_cond_timedwait(&s->loop_cv, &s->mu, &ts);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}
