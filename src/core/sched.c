/*
 * sched.c: the scheduler state (struct drv_sched): its jobs as the
 * policies see them (what a job asks for, derived once at submit), tenants
 * with their quota use, priority classes, pools and nodes; the calls a
 * caller makes when the world changes (submit, finish, requeue, cluster
 * changed), its lifecycle and the read-only queries. Its indexes (jobs by
 * id, the sorted pending and running lists) are sched_queue.c; the names
 * and the text of decisions sched_format.c; the pass itself sched_pass.c.
 */
#include "sched_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- cluster view ------------------------------------------------------- */

static int node_model(const struct drv_cluster *c, int32_t node)
{
	return node >= 0 && node < c->nnodes ? c->nodes[node].model : -1;
}

int64_t sched__model_milli(const struct drv_sched *s, const struct drv_placement *p, int model)
{
	int64_t sum = 0;
	int32_t i;
	for (i = 0; i < p->ntasks; i++)
		if (node_model(s->c, p->tasks[i].node) == model)
			sum += (int64_t)p->tasks[i].gpu_milli *
			       __builtin_popcountll(p->tasks[i].gpu_mask);
	return sum;
}

void sched__hist_advance(const struct drv_sched *s, struct sched_tenant *t, int64_t now)
{
	double hl = (double)s->fair_half_life, dt = (double)(now - t->hist_at), k;
	if (hl <= 0 || now <= t->hist_at) {
		if (hl <= 0)
			t->hist_at = now;
		return;
	}
	/* the integral of a constant use over dt, decayed to now */
	k = exp2(-dt / hl);
	t->hist = t->hist * k + (double)t->usage_all * hl / M_LN2 * (1 - k);
	t->hist_at = now;
}

int64_t sched__hist_milli(const struct drv_sched *s, const struct sched_tenant *t)
{
	return s->fair_half_life > 0 ? llround(t->hist * M_LN2 / (double)s->fair_half_life) : 0;
}

void sched__usage(struct drv_sched *s, struct sched_job *j, int sign, int64_t now)
{
	struct sched_tenant *t = &s->tenants[j->tenant];
	int32_t i;
	sched__hist_advance(s, t, now);
	for (i = 0; i < j->pl.ntasks; i++) {
		const struct drv_task_place *tp = &j->pl.tasks[i];
		int m = node_model(s->c, tp->node);
		int64_t milli = (int64_t)tp->gpu_milli * __builtin_popcountll(tp->gpu_mask);
		if (m >= 0 && m < DRV_MAX_MODELS) {
			t->usage[m] += sign * milli;
			/* what a quota check of t (and of its cohort) answers */
			t->quota_changed[m] = ++s->quota_seq;
			if (t->cohort >= 0)
				s->cohort_changed[t->cohort].m[m] = s->quota_seq;
			if (j->user >= 0)
				t->users_changed[m] = s->quota_seq;
		}
		t->usage_all += sign * milli;
		if (j->user >= 0)
			s->users[j->user].milli += sign * milli;
	}
	if (j->user >= 0)
		s->users[j->user].running += sign;
}

/* Adds sign times pl's milli-GPUs per model to j's tenant's promised
 * (or leaving). */
void sched__coming(struct drv_sched *s, const struct sched_job *j,
		   const struct drv_placement *pl, int sign, bool leaving)
{
	struct sched_tenant *t = &s->tenants[j->tenant];
	int32_t i;
	for (i = 0; i < pl->ntasks; i++) {
		const struct drv_task_place *tp = &pl->tasks[i];
		int m = node_model(s->c, tp->node);
		if (m < 0 || m >= DRV_MAX_MODELS)
			continue;
		(leaving ? t->leaving : t->promised)[m] +=
			sign * (int64_t)tp->gpu_milli * __builtin_popcountll(tp->gpu_mask);
		t->quota_changed[m] = ++s->quota_seq;
		if (t->cohort >= 0)
			s->cohort_changed[t->cohort].m[m] = s->quota_seq;
	}
}

static bool node_empty(const struct drv_cluster *c, int32_t node)
{
	const struct drv_node *n = &c->nodes[node];
	int g;
	for (g = 0; g < n->ngpus; g++)
		if (n->gpu_milli_used[g])
			return false;
	return n->cpu_used == 0 && n->mem_used == 0;
}

/* After a placement was committed or uncommitted at now: idle clocks. */
void sched__node_touch(struct drv_sched *s, const struct drv_placement *p, int64_t now)
{
	int32_t i;
	for (i = 0; i < p->ntasks; i++) {
		int32_t n = p->tasks[i].node;
		if (n < 0 || n >= s->nnodes_seen)
			continue;
		s->idle_since[n] = node_empty(s->c, n) ? now : -1;
	}
}

static void derive(struct drv_sched *s, struct sched_job *j);

void sched__refresh_cluster(struct drv_sched *s)
{
	struct drv_cluster *c = s->c;
	int32_t i, p;

	s->cluster_stale = false;
	if (c->nnodes > s->nnodes_seen) {
		s->idle_since = drv_realloc(s->idle_since, (size_t)c->nnodes * sizeof(*s->idle_since));
		s->resv_mask = drv_realloc(s->resv_mask, (size_t)c->nnodes * sizeof(*s->resv_mask));
		for (i = s->nnodes_seen; i < c->nnodes; i++) {
			s->idle_since[i] = node_empty(c, i) ? INT64_MIN : -1;
			s->idle_unknown = true;
			s->resv_mask[i] = 0;
		}
		s->nnodes_seen = c->nnodes;
	}
	memset(s->pool_nodes, 0, sizeof(s->pool_nodes));
	for (p = 0; p < SCHED_MAX_POOLS; p++) {
		if (!s->pool_tmpl_gpus[p])
			s->pool_tmpl_model[p] = -1;
	}
	s->max_node_gpus = 0;
	s->only_model = -2;
	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		if (n->ngpus > 0 && n->model >= 0)
			s->only_model = s->only_model == -2 || s->only_model == n->model ? n->model : -1;
		if (n->ngpus > s->max_node_gpus && n->state != DRV_NODE_DOWN)
			s->max_node_gpus = n->ngpus;
		p = n->pool;
		if (p < 0 || p >= SCHED_MAX_POOLS)
			continue;
		if (n->state != DRV_NODE_DOWN)
			s->pool_nodes[p]++;
		if (!s->pool_tmpl_gpus[p] && n->ngpus > 0) {
			s->pool_tmpl_gpus[p] = n->ngpus;
			s->pool_tmpl_model[p] = n->model;
		}
	}
	if (s->only_model == -2)
		s->only_model = -1;
	if (!s->cap)
		s->cap = drv_capacity_new();
	drv_capacity_build(s->cap, c, s->pool_tmpl_gpus, s->pool_tmpl_model);
	s->quota_all_changed = ++s->quota_seq; /* jobs' quota models and needs are derived again */
	s->spot_mask = 0;
	s->all_pools = 0;
	for (p = 0; p < c->npools && p < SCHED_MAX_POOLS; p++) {
		const struct drv_gpu_model *m = drv_gpu_model_at(s->pool_tmpl_model[p]);
		s->all_pools |= 1ull << p;
		if (c->pools[p].spot)
			s->spot_mask |= 1ull << p;
		s->pool_speed[p] = m ? m->speed_rank : 0;
	}
	for (i = 0; i < s->njobs; i++)
		if (s->jobs[i].state != SJ_FREE)
			derive(s, &s->jobs[i]);
	sched__pend_compact_rebuild(s);
}

/* ---- jobs --------------------------------------------------------------- */

static bool region_ok(const struct drv_job *job, const char *region)
{
	int32_t i;
	if (job->nregions <= 0)
		return true;
	for (i = 0; i < job->nregions; i++)
		if (region && job->regions[i] && !strcmp(job->regions[i], region))
			return true;
	return false;
}

/* Fills what the pass needs from the job and the cluster. */
static void derive(struct drv_sched *s, struct sched_job *j)
{
	const struct drv_job *job = j->job;
	const struct drv_cluster *c = s->c;
	int32_t g, p;
	int model = -2;

	j->need_milli = 0;
	j->need_whole = 0;
	j->max_task = 0;
	j->min_frac = 0;
	for (g = 0; g < job->ngroups; g++) {
		const struct drv_task_group *tg = &job->groups[g];
		if (tg->gpus > 0) {
			j->need_milli += (int64_t)tg->count * tg->gpus * DRV_MILLI;
			j->need_whole += tg->count * tg->gpus;
			if (tg->gpus > j->max_task)
				j->max_task = tg->gpus;
		} else if (tg->gpu_milli > 0 || drv_group_mem_share(tg)) {
			/* a share by memory: the least it takes on any model */
			int32_t mm = drv_group_min_milli(tg);
			j->need_milli += (int64_t)tg->count * mm;
			if (!j->min_frac || mm < j->min_frac)
				j->min_frac = mm;
		} else {
			continue;
		}
		if (model == -2)
			model = tg->model;
		else if (model != tg->model)
			model = -1;
	}
	j->full_tasks = 0;
	for (g = 0; g < job->ngroups; g++)
		if (s->max_node_gpus > 0 && job->groups[g].gpus >= s->max_node_gpus)
			j->full_tasks += job->groups[g].count;
	j->model = model >= 0 ? model : -1;
	j->gpuless = j->need_milli == 0;
	j->quota_model = j->model >= 0 ? j->model : s->only_model;
	j->quota_any_model = j->quota_model < 0;
	j->level = -1;
	if (job->topo_mode == DRV_TOPO_REQUIRED && job->topo_level)
		j->level = drv_cluster_level(c, job->topo_level);
	j->slice_level = job->slice_size > 0 ? drv_cluster_level(c, job->slice_level) : -1;
	j->slice_size = j->slice_level >= 0 ? job->slice_size : 0;
	j->dur = job->runtime_estimate > 0 ? job->runtime_estimate : job->time_limit;
	if (j->dur < 0)
		j->dur = 0;

	j->pool_mask = 0;
	j->pools_none = false;
	if (c->npools > 0) {
		uint64_t m = 0;
		for (p = 0; p < c->npools && p < SCHED_MAX_POOLS; p++) {
			if (!region_ok(job, c->pools[p].region) ||
			    !drv_job_pool_ok(job, c->pools[p].name))
				continue;
			if (c->pools[p].spot && !j->preemptible)
				continue;
			if (j->model >= 0 && s->pool_tmpl_model[p] >= 0 &&
			    s->pool_tmpl_model[p] != j->model)
				continue;
			m |= 1ull << p;
		}
		if (!m)
			j->pools_none = true;
		j->pool_mask = m == s->all_pools ? 0 : m;
	}
	/* Never, or not until down nodes return: the cluster as configured. */
	switch (drv_capacity_check(s->cap, c, job, &j->never_why)) {
	case DRV_REASON_NEVER:
	case DRV_REASON_NODE_DOWN:
	case DRV_REASON_REQ_NODE:
		j->never = true;
		break;
	default:
		j->never = false;
		break;
	}
}

static int32_t tenant_find(const struct drv_sched *s, const char *name)
{
	int32_t i;
	for (i = 0; i < s->ntenants; i++)
		if (!strcmp(s->tenants[i].name, name))
			return i;
	return -1;
}

static int32_t tenant_get(struct drv_sched *s, const char *name)
{
	struct drv_sched_tenant t;
	int32_t i;
	if (!name)
		name = "";
	i = tenant_find(s, name);
	if (i >= 0)
		return i;
	drv_sched_tenant_default(&t, name);
	return drv_sched_set_tenant(s, &t);
}

void drv_sched_tenant_default(struct drv_sched_tenant *t, const char *name)
{
	int m;
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->weight = 1;
	for (m = 0; m < DRV_MAX_MODELS; m++) {
		t->quota_milli[m] = -1;
		t->borrow_limit_milli[m] = -1;
	}
}

_Static_assert(DRV_MAX_MODELS <= 32, "stenant.quota_models holds a bit per model");

int drv_sched_set_tenant(struct drv_sched *s, const struct drv_sched_tenant *t)
{
	struct sched_tenant *x;
	int32_t i, co = -1;
	int m;
	if (!t || !t->name || t->weight <= 0)
		return DRV_EINVAL;
	if (t->cohort && t->cohort[0]) {
		for (co = 0; co < s->ncohorts; co++)
			if (!strcmp(s->cohorts[co], t->cohort))
				break;
		if (co == s->ncohorts) {
			DRV_GROW(s->cohorts, (size_t)s->ncohorts + 1, s->cocap);
			DRV_GROW(s->cohort_changed, (size_t)s->ncohorts + 1, s->cohort_changed_cap);
			memset(&s->cohort_changed[s->ncohorts], 0, sizeof(*s->cohort_changed));
			s->cohorts[s->ncohorts++] = drv_strdup(t->cohort);
		}
	}
	i = tenant_find(s, t->name);
	if (i < 0) {
		DRV_GROW(s->tenants, (size_t)s->ntenants + 1, s->tcap);
		i = s->ntenants++;
		x = &s->tenants[i];
		memset(x, 0, sizeof(*x));
		x->name = drv_strdup(t->name);
	}
	x = &s->tenants[i];
	s->quota_all_changed = ++s->quota_seq; /* every quota answer may differ now */
	x->cohort = co;
	x->weight = t->weight;
	x->has_quota = false;
	x->quota_models = 0;
	for (m = 0; m < DRV_MAX_MODELS; m++) {
		x->quota[m] = t->quota_milli[m];
		x->limit[m] = t->borrow_limit_milli[m];
		if (x->quota[m] >= 0) {
			x->has_quota = true;
			x->quota_models |= 1u << m;
		}
	}
	return i;
}

int drv_sched_set_user(struct drv_sched *s, const struct drv_sched_user *u)
{
	struct sched_user *x;
	int32_t i;
	if (!u || !u->name || !u->name[0])
		return DRV_EINVAL;
	for (i = 0; i < s->nusers; i++)
		if (!strcmp(s->users[i].name, u->name))
			break;
	if (i == s->nusers) {
		DRV_GROW(s->users, (size_t)s->nusers + 1, s->ucap);
		memset(&s->users[i], 0, sizeof(s->users[i]));
		s->users[i].name = drv_strdup(u->name);
		s->nusers++;
	}
	x = &s->users[i];
	x->max_running = u->max_running;
	x->max_milli = u->max_milli;
	x->max_submitted = u->max_submitted;
	return i;
}

/* The user's index, and whether the job counts within max_submitted. */
static void user_admit(struct drv_sched *s, struct sched_job *j, const char *name)
{
	int32_t i;
	j->user = -1;
	j->admitted = true;
	for (i = 0; name && i < s->nusers; i++)
		if (!strcmp(s->users[i].name, name))
			j->user = i;
	if (j->user < 0)
		return;
	j->admitted = s->users[j->user].max_submitted < 0 ||
		      s->users[j->user].admitted < s->users[j->user].max_submitted;
	if (j->admitted)
		s->users[j->user].admitted++;
}

int drv_sched_add_class(struct drv_sched *s, const char *name, int32_t value,
			enum drv_preempt_policy policy)
{
	int32_t i;
	if (!name || !name[0] || (policy != DRV_PREEMPT_LOWER && policy != DRV_PREEMPT_NEVER))
		return DRV_EINVAL;
	for (i = 0; i < s->nclasses; i++)
		if (!strcmp(s->classes[i].name, name))
			return DRV_EEXIST;
	DRV_GROW(s->classes, (size_t)s->nclasses + 1, s->ccap);
	s->classes[s->nclasses].name = drv_strdup(name);
	s->classes[s->nclasses].value = value;
	s->classes[s->nclasses].policy = policy;
	return s->nclasses++;
}

static int new_job(struct drv_sched *s, const struct drv_job *job, const char *cls, int32_t *out)
{
	struct sched_job *j;
	int32_t slot, ci = -1, i;

	if (!job)
		return DRV_EINVAL;
	if (sched__lookup(s, job->id) >= 0)
		return DRV_EEXIST;
	if (cls) {
		for (i = 0; i < s->nclasses; i++)
			if (!strcmp(s->classes[i].name, cls))
				ci = i;
		if (ci < 0)
			return DRV_ENOENT;
	}
	if (s->nfree > 0) {
		slot = s->free_slots[--s->nfree];
	} else {
		DRV_GROW(s->jobs, (size_t)s->njobs + 1, s->jcap);
		slot = s->njobs++;
	}
	j = &s->jobs[slot];
	memset(j, 0, sizeof(*j));
	drv_placement_init(&j->pl);
	drv_placement_init(&j->nomination);
	j->job = job;
	j->id = job->id;
	j->preemptible = job->preemptible;
	j->prio = ci >= 0 ? s->classes[ci].value : job->priority;
	j->never_preempts = ci >= 0 && s->classes[ci].policy == DRV_PREEMPT_NEVER;
	j->tenant = tenant_get(s, job->tenant);
	user_admit(s, j, job->user);
	j->submit = job->submit_time;
	j->queued_at = job->submit_time;
	j->pool = -1;
	j->end = T_INF;
	j->fail_gen = UINT64_MAX;
	derive(s, j);
	sched__id_put(s, job->id, slot);
	drv_place_mix_observe(&s->mix, job);
	*out = slot;
	return 0;
}

static void free_job(struct drv_sched *s, int32_t slot)
{
	struct sched_job *j = &s->jobs[slot];
	if (j->user >= 0 && j->admitted)
		s->users[j->user].admitted--;
	sched__id_del(s, j->id);
	drv_placement_release(&j->pl);
	drv_placement_release(&j->nomination);
	j->state = SJ_FREE;
	j->job = NULL;
	DRV_GROW(s->free_slots, (size_t)s->nfree + 1, s->fcap);
	s->free_slots[s->nfree++] = slot;
}

int drv_sched_submit(struct drv_sched *s, const struct drv_job *job, const char *priority_class)
{
	int32_t slot;
	int rc = new_job(s, job, priority_class, &slot);
	if (rc)
		return rc;
	s->jobs[slot].state = DRV_SJ_PENDING;
	sched__pend_insert(s, slot);
	return 0;
}

static int64_t run_end(const struct drv_sched *s, const struct sched_job *j)
{
	int64_t d = j->dur > 0 ? j->dur : s->keyed_pol.default_runtime_s;
	return d > 0 ? j->start + d : T_INF;
}

void sched__nomination_drop(struct drv_sched *s, int32_t slot)
{
	int32_t i;
	if (s->jobs[slot].nomination.ntasks)
		sched__coming(s, &s->jobs[slot], &s->jobs[slot].nomination, -1, false);
	s->jobs[slot].nomination.ntasks = 0;
	s->jobs[slot].victims_left = 0;
	if (s->jobs[slot].state == DRV_SJ_PENDING)
		sched__pend_compact_refresh(s, slot);
	for (i = 0; i < s->npreemptors; i++)
		if (s->preemptors[i] == slot) {
			memmove(&s->preemptors[i], &s->preemptors[i + 1],
				(size_t)(s->npreemptors - i - 1) * sizeof(*s->preemptors));
			s->npreemptors--;
			return;
		}
}

void sched__start(struct drv_sched *s, int32_t slot, const struct drv_placement *p, int64_t now)
{
	struct sched_job *j = &s->jobs[slot];
	if (j->state == DRV_SJ_PENDING)
		sched__pend_remove(s, slot);
	if (p != &j->pl)
		drv_placement_copy(&j->pl, p);
	drv_cluster_commit(s->c, &j->pl);
	j->state = DRV_SJ_RUNNING;
	j->start = now;
	j->end = run_end(s, j);
	j->grace = 0;
	j->pool = j->pl.ntasks > 0 && j->pl.tasks[0].node >= 0 ?
			  s->c->nodes[j->pl.tasks[0].node].pool : -1;
	j->place_model = j->pl.ntasks > 0 && j->pl.tasks[0].node >= 0 ?
			    s->c->nodes[j->pl.tasks[0].node].model : -1;
	if (j->nomination.ntasks)
		sched__nomination_drop(s, slot);
	j->quota_seq = 0;
	sched__usage(s, j, +1, now);
	sched__node_touch(s, &j->pl, now);
	sched__run_insert(s, slot);
	s->occ_gen++;
	s->start_gen++;
}

int drv_sched_add_running(struct drv_sched *s, const struct drv_job *job,
			  const char *priority_class, const struct drv_placement *p,
			  int64_t start_time, int64_t attained_gpu_s)
{
	int32_t slot;
	int rc;
	if (!p)
		return DRV_EINVAL;
	rc = new_job(s, job, priority_class, &slot);
	if (rc)
		return rc;
	s->jobs[slot].attained = attained_gpu_s * DRV_MILLI;
	s->jobs[slot].state = DRV_SJ_RUNNING; /* not in the pending list */
	drv_placement_copy(&s->jobs[slot].pl, p);
	/* a placement read back (a restart) keeps other jobs off an exclusive
	 * job's nodes as the one drv_place made did */
	for (int32_t i = 0; i < s->jobs[slot].pl.ntasks; i++)
		s->jobs[slot].pl.tasks[i].exclusive = job->exclusive;
	sched__start(s, slot, &s->jobs[slot].pl, start_time);
	return 0;
}

/* A victim stopped (finish or requeue): its preemptor waits for one fewer. */
static void victim_gone(struct drv_sched *s, struct sched_job *j)
{
	int32_t ps;
	if (j->state != DRV_SJ_TERMINATING || !j->preempted_by)
		return;
	ps = sched__lookup(s, j->preempted_by);
	if (ps >= 0 && s->jobs[ps].state == DRV_SJ_PENDING && s->jobs[ps].victims_left > 0)
		s->jobs[ps].victims_left--;
}

static void stop_running(struct drv_sched *s, int32_t slot, int64_t now)
{
	struct sched_job *j = &s->jobs[slot];
	if (now > j->start)
		j->attained += (now - j->start) * j->need_milli;
	victim_gone(s, j);
	if (j->state == DRV_SJ_TERMINATING)
		sched__coming(s, j, &j->pl, -1, true);
	sched__run_remove(s, slot);
	sched__usage(s, j, -1, now);
	drv_cluster_uncommit(s->c, &j->pl);
	sched__node_touch(s, &j->pl, now);
	j->pl.ntasks = 0;
	/* a job that ends when it was expected to changes no reservation (the
	 * sweep already counted it free from then on); an early end may */
	if (now < j->end)
		s->free_gen++;
	s->rel_gen++;
}

int drv_sched_finish(struct drv_sched *s, uint64_t id, int64_t now)
{
	int32_t slot = sched__lookup(s, id);
	if (slot < 0)
		return DRV_ENOENT;
	if (s->jobs[slot].state == DRV_SJ_PENDING) {
		sched__pend_remove(s, slot);
		if (s->jobs[slot].nomination.ntasks)
			sched__nomination_drop(s, slot);
	} else {
		stop_running(s, slot, now);
	}
	free_job(s, slot);
	return 0;
}

int drv_sched_requeue(struct drv_sched *s, uint64_t id, int64_t now)
{
	int32_t slot = sched__lookup(s, id);
	struct sched_job *j;
	if (slot < 0)
		return DRV_ENOENT;
	j = &s->jobs[slot];
	if (j->state == DRV_SJ_PENDING)
		return DRV_ESTATE;
	stop_running(s, slot, now);
	j->state = DRV_SJ_PENDING;
	j->queued_at = now;
	j->end = T_INF;
	j->grace = 0;
	j->reason_pass = 0;
	j->why_emitted = false;
	j->quota_seq = 0;
	memset(&j->why, 0, sizeof(j->why));
	sched__pend_insert(s, slot);
	return 0;
}

int drv_sched_update_estimate(struct drv_sched *s, uint64_t id, int64_t estimate_s)
{
	int32_t slot = sched__lookup(s, id);
	struct sched_job *j;
	if (slot < 0)
		return DRV_ENOENT;
	j = &s->jobs[slot];
	if (j->state == DRV_SJ_PENDING) {
		sched__pend_remove(s, slot);
		j->dur = estimate_s > 0 ? estimate_s : j->job->time_limit;
		sched__pend_insert(s, slot);
		return 0;
	}
	sched__run_remove(s, slot);
	s->occ_gen++;
	j->dur = estimate_s > 0 ? estimate_s : j->job->time_limit;
	j->end = run_end(s, j);
	if (j->state == DRV_SJ_TERMINATING && j->grace < j->end)
		j->end = j->grace;
	sched__run_insert(s, slot);
	return 0;
}

void drv_sched_cluster_changed(struct drv_sched *s, int64_t now)
{
	int32_t i;
	int32_t old = s->nnodes_seen;
	s->occ_gen++;
	s->rel_gen++;
	if (s->c->nnodes == old) {
		/* Only states changed: the refresh (capacity and every job's
		 * derived fields, O(nodes + jobs)) waits for the next pass, so
		 * 12,500 agents registering cost one, not 12,500. */
		s->cluster_stale = true;
		return;
	}
	sched__refresh_cluster(s);
	for (i = old; i < s->nnodes_seen; i++)
		if (s->idle_since[i] == INT64_MIN)
			s->idle_since[i] = now;
	/* Pending keys may depend on derived fields (sjf duration does not;
	 * keep them), but pool masks changed: nothing to re-sort. */
}

int drv_sched_pool_grown(struct drv_sched *s, int32_t pool, int32_t count, int64_t now)
{
	if (pool < 0 || pool >= SCHED_MAX_POOLS || pool >= s->c->npools)
		return DRV_EINVAL;
	s->pool_inflight[pool] = 0;
	(void)count;
	drv_sched_cluster_changed(s, now);
	return 0;
}

int drv_sched_set_pool_template(struct drv_sched *s, int32_t pool, int model, int ngpus)
{
	if (pool < 0 || pool >= SCHED_MAX_POOLS || ngpus <= 0 || !drv_gpu_model_at(model))
		return DRV_EINVAL;
	s->pool_tmpl_model[pool] = model;
	s->pool_tmpl_gpus[pool] = ngpus;
	s->occ_gen++;
	s->rel_gen++;
	sched__refresh_cluster(s);
	return 0;
}

/* ---- lifecycle ---------------------------------------------------------- */

struct drv_sched *drv_sched_new(struct drv_cluster *c)
{
	struct drv_sched *s = drv_calloc(1, sizeof(*s));
	drv_seqtree_init(&s->fair_seq);
	int p;
	s->c = c;
	for (p = 0; p < SCHED_MAX_POOLS; p++)
		s->pool_tmpl_model[p] = -1;
	drv_placement_init(&s->block);
	drv_placement_init(&s->resv_cache.pl);
	drv_placement_init(&s->scratch);
	drv_placement_init(&s->scratch2);
	drv_placement_init(&s->scratch3);
	drv_sched_policy_default(&s->keyed_pol);
	s->last_now = INT64_MIN;
	s->victim_bounds.dirty = true;
	s->quota_seq = 1;
	drv_place_mix_init(&s->mix, 0);
	sched__id_grow(s);
	sched__refresh_cluster(s);
	return s;
}

void drv_sched_free(struct drv_sched *s)
{
	int32_t i;
	if (!s)
		return;
	sched__run_sync(s);
	for (i = s->nrun - 1; i >= 0; i--)
		drv_cluster_uncommit(s->c, &s->jobs[s->run[i]].pl);
	for (i = 0; i < s->njobs; i++) {
		drv_placement_release(&s->jobs[i].pl);
		drv_placement_release(&s->jobs[i].nomination);
	}
	for (i = 0; i < s->nresv; i++)
		drv_placement_release(&s->resv[i].pl);
	for (i = 0; i < (int32_t)s->resvcap; i++)
		if (i >= s->nresv)
			drv_placement_release(&s->resv[i].pl);
	for (i = 0; i < s->nclasses; i++)
		drv_free(s->classes[i].name);
	for (i = 0; i < s->ntenants; i++)
		drv_free(s->tenants[i].name);
	for (i = 0; i < s->ncohorts; i++)
		drv_free(s->cohorts[i]);
	drv_placement_release(&s->block);
	drv_placement_release(&s->resv_cache.pl);
	drv_placement_release(&s->scratch);
	drv_placement_release(&s->scratch2);
	drv_placement_release(&s->scratch3);
	drv_free(s->jobs);
	drv_free(s->free_slots);
	drv_free(s->id_keys);
	drv_free(s->id_slots);
	drv_free(s->pend_buf);
	drv_free(s->preemptors);
	drv_free(s->pend_compact_buf);
	drv_free(s->pblk);
	drv_free(s->sort_rec);
	drv_free(s->sort_u64);
	drv_free(s->sort_pend);
	drv_free(s->start_mark);
	drv_free(s->visited);
	drv_free(s->run);
	drv_free(s->run_compact);
	drv_free(s->las_elig);
	drv_free(s->run_add);
	drv_free(s->run_add_compact);
	drv_free(s->classes);
	drv_free(s->tenants);
	drv_free(s->cohorts);
	drv_free(s->cohort_changed);
	drv_free(s->quota_held_seen);
	drv_free(s->idle_since);
	drv_free(s->resv_mask);
	drv_free(s->resv);
	drv_free(s->scratch_slots);
	drv_free(s->scratch_slots2);
	drv_free(s->fair_suffix);
	drv_free(s->fair_first);
	drv_free(s->fair_next);
	drv_free(s->fair_prev);
	drv_free(s->fair_own);
	drv_free(s->fair_at);
	drv_seqtree_release(&s->fair_seq);
	drv_free(s->el_tenant);
	drv_free(s->may_reclaim);
	for (int32_t u = 0; u < s->nusers; u++)
		drv_free(s->users[u].name);
	drv_free(s->users);
	drv_capacity_free(s->cap);
	drv_free(s);
}

/* ---- decisions list ----------------------------------------------------- */

void drv_sched_decisions_init(struct drv_sched_decisions *d)
{
	memset(d, 0, sizeof(*d));
}

void drv_sched_decisions_release(struct drv_sched_decisions *d)
{
	drv_free(d->v);
	drv_free(d->ids);
	memset(d, 0, sizeof(*d));
}

/* ---- queries ------------------------------------------------------------ */

int drv_sched_job_get(const struct drv_sched *s, uint64_t id, struct drv_sched_job_info *out)
{
	int32_t slot = sched__lookup(s, id);
	const struct sched_job *j;
	if (slot < 0)
		return DRV_ENOENT;
	j = &s->jobs[slot];
	memset(out, 0, sizeof(*out));
	out->state = (enum drv_sched_job_state)j->state;
	out->priority = j->prio;
	out->tenant = j->tenant;
	out->start_time = j->start;
	out->attained_gpu_s = j->attained / DRV_MILLI;
	if (j->state != DRV_SJ_PENDING && s->last_now > j->start)
		out->attained_gpu_s = (j->attained + (s->last_now - j->start) * j->need_milli) /
				      DRV_MILLI;
	out->grace_deadline = j->grace;
	out->preempted_by = j->preempted_by;
	out->placement = j->state != DRV_SJ_PENDING ? &j->pl : NULL;
	out->why = j->why;
	if (j->state == DRV_SJ_PENDING && j->never) {
		out->why = j->never_why;
	} else if (j->state == DRV_SJ_PENDING && s->tail_pass && s->tail_pass == s->pass_no &&
	    j->reason_pass != s->pass_no && j->added_pass < s->pass_no) {
		/* the last pass stopped before it: nothing could fit */
		out->why = s->tail_why;
		if (out->why.reason == DRV_REASON_RESOURCES) {
			out->why.n[0] = j->need_milli;
			out->why.n[2] = j->max_task;
		}
	}
	out->why.kind = DRV_DEC_PENDING;
	out->why.job = j->id;
	return 0;
}

int32_t drv_sched_pending_count(const struct drv_sched *s)
{
	return s->npend;
}

int32_t drv_sched_running_count(const struct drv_sched *s)
{
	return s->nrun + s->nrun_add;
}

