/*
 * sched.c: the scheduler state (struct drv_sched): jobs by id, the sorted
 * pending queue, the running list sorted by expected end, tenants with
 * their quota use, priority classes, pools and nodes as the policies see
 * them; the calls a caller makes when the world changes (submit, finish,
 * requeue, cluster changed), the read-only queries, the policy names and
 * the one-line formatting of decisions. The pass itself is sched_pass.c.
 *
 * Everything here keeps the two lists sorted as it goes (binary search and
 * memmove), so a pass finds the queue in order without sorting it again
 * unless the keys themselves moved (aging, a policy change).
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- policy ------------------------------------------------------------- */

void drv_sched_policy_default(struct drv_sched_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->order = DRV_ORDER_FIFO;
	p->mode = DRV_MODE_BACKFILL;
	p->preemption = false;
	p->pools = DRV_POOLS_CHEAPEST;
	p->place = DRV_PLACE_BESTFIT;
	p->aging_step = 1;
	p->las_threshold[0] = 3200;
	p->las_threshold[1] = 25600;
	p->nlas = 2;
	p->grace_s = 30;
	p->max_preempt_tries = 16;
}

static const char *const order_names[] = { "fifo", "sjf", "las", "fair" };
static const char *const mode_names[] = { "strict", "backfill", "greedy" };
static const char *const pools_names[] = { "cheapest", "fastest" };

const char *drv_sched_order_name(enum drv_sched_order o)
{
	return (unsigned)o < DRV_ARRAY_SIZE(order_names) ? order_names[o] : "?";
}

const char *drv_sched_mode_name(enum drv_sched_mode m)
{
	return (unsigned)m < DRV_ARRAY_SIZE(mode_names) ? mode_names[m] : "?";
}

const char *drv_sched_pools_name(enum drv_sched_pools p)
{
	return (unsigned)p < DRV_ARRAY_SIZE(pools_names) ? pools_names[p] : "?";
}

static int parse_name(const char *s, const char *const *names, int n)
{
	int i;
	if (!s)
		return -1;
	for (i = 0; i < n; i++)
		if (drv_strcaseeq(s, names[i]))
			return i;
	return -1;
}

int drv_sched_order_parse(const char *s, enum drv_sched_order *out)
{
	int i = parse_name(s, order_names, (int)DRV_ARRAY_SIZE(order_names));
	if (i < 0)
		return DRV_EINVAL;
	*out = (enum drv_sched_order)i;
	return 0;
}

int drv_sched_mode_parse(const char *s, enum drv_sched_mode *out)
{
	int i = parse_name(s, mode_names, (int)DRV_ARRAY_SIZE(mode_names));
	if (i < 0)
		return DRV_EINVAL;
	*out = (enum drv_sched_mode)i;
	return 0;
}

int drv_sched_pools_parse(const char *s, enum drv_sched_pools *out)
{
	int i = parse_name(s, pools_names, (int)DRV_ARRAY_SIZE(pools_names));
	if (i < 0)
		return DRV_EINVAL;
	*out = (enum drv_sched_pools)i;
	return 0;
}

int drv_preempt_policy_parse(const char *s, enum drv_preempt_policy *out)
{
	if (s && drv_strcaseeq(s, "PreemptLowerPriority")) {
		*out = DRV_PREEMPT_LOWER;
		return 0;
	}
	if (s && drv_strcaseeq(s, "Never")) {
		*out = DRV_PREEMPT_NEVER;
		return 0;
	}
	return DRV_EINVAL;
}

/* ---- id hash ------------------------------------------------------------ */

#define H_EMPTY (-1)
#define H_DEL (-2)

static size_t hslot(uint64_t id, size_t cap)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & (cap - 1);
}

int32_t sched__lookup(const struct drv_sched *s, uint64_t id)
{
	size_t i;
	if (!s->hcap)
		return -1;
	for (i = hslot(id, s->hcap);; i = (i + 1) & (s->hcap - 1)) {
		if (s->id_slots[i] == H_EMPTY)
			return -1;
		if (s->id_slots[i] >= 0 && s->id_keys[i] == id)
			return s->id_slots[i];
	}
}

static void hput(struct drv_sched *s, uint64_t id, int32_t slot);

static void hgrow(struct drv_sched *s)
{
	uint64_t *ok = s->id_keys;
	int32_t *ov = s->id_slots;
	size_t ocap = s->hcap, i;
	s->hcap = ocap ? ocap * 2 : 1024;
	s->id_keys = drv_calloc(s->hcap, sizeof(*s->id_keys));
	s->id_slots = drv_malloc(s->hcap * sizeof(*s->id_slots));
	for (i = 0; i < s->hcap; i++)
		s->id_slots[i] = H_EMPTY;
	s->hused = 0;
	for (i = 0; i < ocap; i++)
		if (ov[i] >= 0)
			hput(s, ok[i], ov[i]);
	drv_free(ok);
	drv_free(ov);
}

static void hput(struct drv_sched *s, uint64_t id, int32_t slot)
{
	size_t i;
	if ((s->hused + 1) * 2 > s->hcap)
		hgrow(s);
	for (i = hslot(id, s->hcap); s->id_slots[i] >= 0; i = (i + 1) & (s->hcap - 1))
		;
	if (s->id_slots[i] == H_EMPTY)
		s->hused++;
	s->id_keys[i] = id;
	s->id_slots[i] = slot;
}

static void hdel(struct drv_sched *s, uint64_t id)
{
	size_t i;
	for (i = hslot(id, s->hcap);; i = (i + 1) & (s->hcap - 1)) {
		if (s->id_slots[i] == H_EMPTY)
			return;
		if (s->id_slots[i] >= 0 && s->id_keys[i] == id) {
			s->id_slots[i] = H_DEL;
			return;
		}
	}
}

/* ---- order keys and the pending list ------------------------------------ */

int32_t sched__las_queue(const struct drv_sched_policy *pol, int64_t attained_milli_s)
{
	int32_t q = 0;
	while (q < pol->nlas && attained_milli_s >= pol->las_threshold[q] * DRV_MILLI)
		q++;
	return q;
}

void sched__key(const struct drv_sched *s, struct sched_job *j, int64_t now,
		const struct drv_sched_policy *pol)
{
	int64_t bonus = 0;
	j->next_age = T_INF;
	if (pol->aging_interval_s > 0 && pol->aging_step > 0) {
		int64_t waited = now > j->submit ? now - j->submit : 0;
		int64_t steps = waited / pol->aging_interval_s;
		bonus = steps * pol->aging_step;
		if (pol->aging_max > 0 && bonus >= pol->aging_max)
			bonus = pol->aging_max;
		else
			j->next_age = j->submit + (steps + 1) * pol->aging_interval_s;
	}
	j->key_prio = (int64_t)j->prio + bonus;
	switch (pol->order) {
	case DRV_ORDER_SJF:
		j->key_policy = j->dur > 0 ? j->dur : T_INF;
		break;
	case DRV_ORDER_LAS:
		j->key_policy = sched__las_queue(pol, j->attained);
		break;
	default:
		j->key_policy = 0;
		break;
	}
	(void)s;
}

static int cmp_jobs(const struct sched_job *x, const struct sched_job *y)
{
	if (x->key_prio != y->key_prio)
		return x->key_prio > y->key_prio ? -1 : 1;
	if (x->key_policy != y->key_policy)
		return x->key_policy < y->key_policy ? -1 : 1;
	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

int sched__cmp_pend(const struct drv_sched *s, int32_t a, int32_t b)
{
	return cmp_jobs(&s->jobs[a], &s->jobs[b]);
}

/* First position whose job does not sort before slot's. */
static int32_t pend_lower_bound(const struct drv_sched *s, int32_t slot)
{
	int32_t lo = 0, hi = s->npend;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (sched__cmp_pend(s, s->pend[mid], slot) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void sched__demand(struct drv_sched *s, const struct sched_job *j, int d)
{
	if (j->gpuless)
		s->cnt_gpuless += d;
	if (j->need_whole > 0 && j->max_task > 0 && j->max_task <= DRV_MAX_NODE_GPUS)
		s->cnt_task[j->max_task] += d;
	if (j->min_frac > 0 && j->min_frac < DRV_MILLI)
		s->cnt_frac[j->min_frac] += d;
}

void sched__pend_compact_fill(struct drv_sched *s, int32_t pos)
{
	const struct sched_job *j = &s->jobs[s->pend[pos]];
	struct pend_compact *h = &s->pend_compact[pos];
	h->key_prio = j->key_prio;
	h->need_milli = j->need_milli;
	h->tenant = j->tenant;
	h->need_whole = j->need_whole;
	h->full_tasks = j->full_tasks;
	h->max_task = (int16_t)j->max_task;
	h->min_frac = (int16_t)j->min_frac;
	h->prio = j->prio;
	h->never = j->never;
	h->gpuless = j->gpuless;
	h->held = j->nomination.ntasks > 0;
	h->quota_model = (int8_t)j->quota_model;
	h->dur = j->dur;
	h->quota_seq = j->quota_seq;
}

void sched__pend_compact_rebuild(struct drv_sched *s)
{
	int32_t i;
	DRV_GROW(s->pend_compact, (size_t)s->npend + 1, s->pend_compact_cap);
	for (i = 0; i < s->npend; i++)
		sched__pend_compact_fill(s, i);
}

/* Where pending job slot sits in s->pend, or -1: by binary search while the
 * keys are valid, else by a scan. */
static int32_t pend_find(const struct drv_sched *s, int32_t slot)
{
	int32_t pos = -1, i;
	if (s->keys_valid) {
		pos = pend_lower_bound(s, slot);
		if (pos < s->npend && s->pend[pos] == slot)
			return pos;
	}
	for (i = 0; i < s->npend; i++)
		if (s->pend[i] == slot)
			return i;
	return -1;
}

/* Refills the compact entry of a pending job whose fields it copies changed
 * (a nomination made or dropped); nothing when slot is not pending. */
void sched__pend_compact_refresh(struct drv_sched *s, int32_t slot)
{
	int32_t pos = pend_find(s, slot);
	if (pos >= 0)
		sched__pend_compact_fill(s, pos);
}

void sched__pend_insert(struct drv_sched *s, int32_t slot)
{
	int32_t pos;
	sched__demand(s, &s->jobs[slot], +1);
	s->jobs[slot].added_pass = s->pass_no;
	DRV_GROW(s->pend, (size_t)s->npend + 1, s->pcap);
	if (s->keys_valid) {
		sched__key(s, &s->jobs[slot], s->keys_at, &s->keyed_pol);
		if (s->jobs[slot].next_age < s->next_age)
			s->next_age = s->jobs[slot].next_age;
		pos = pend_lower_bound(s, slot);
	} else {
		pos = s->npend;
	}
	DRV_GROW(s->pend_compact, (size_t)s->npend + 1, s->pend_compact_cap);
	memmove(&s->pend[pos + 1], &s->pend[pos], (size_t)(s->npend - pos) * sizeof(*s->pend));
	memmove(&s->pend_compact[pos + 1], &s->pend_compact[pos], (size_t)(s->npend - pos) * sizeof(*s->pend_compact));
	s->pend[pos] = slot;
	s->npend++;
	sched__pend_compact_fill(s, pos);
}

void sched__pend_remove(struct drv_sched *s, int32_t slot)
{
	int32_t pos = pend_find(s, slot);
	if (pos < 0)
		return;
	sched__demand(s, &s->jobs[slot], -1);
	memmove(&s->pend[pos], &s->pend[pos + 1], (size_t)(s->npend - pos - 1) * sizeof(*s->pend));
	memmove(&s->pend_compact[pos], &s->pend_compact[pos + 1], (size_t)(s->npend - pos - 1) * sizeof(*s->pend_compact));
	s->npend--;
}

/* ---- the running list, sorted by (end, id) ------------------------------- */

static int cmp_run(const struct sched_job *x, const struct sched_job *y)
{
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

static int32_t run_lower_bound(const struct drv_sched *s, int32_t slot)
{
	int32_t lo = 0, hi = s->nrun;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (cmp_run(&s->jobs[s->run[mid]], &s->jobs[slot]) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void run_compact_fill(struct drv_sched *s, int32_t pos)
{
	const struct sched_job *j = &s->jobs[s->run[pos]];
	struct run_compact *h = &s->run_compact[pos];
	h->start = j->start;
	h->need_milli = j->need_milli;
	h->id = j->id;
	h->slot = s->run[pos];
	h->prio = j->prio;
	h->las_queue = j->las_queue;
	h->place_model = j->place_model;
	h->pool = j->pool;
	h->tenant = j->tenant;
	h->ok = j->state == DRV_SJ_RUNNING && j->preemptible;
}

void sched__run_compact_rebuild(struct drv_sched *s)
{
	int32_t i;
	DRV_GROW(s->run_compact, (size_t)s->nrun + 1, s->run_compact_cap);
	for (i = 0; i < s->nrun; i++)
		run_compact_fill(s, i);
	s->victim_bounds.dirty = true;
}

/* Merges one entry into the summary of possible victims. */
void sched__victim_bounds_add(struct drv_sched *s, const struct run_compact *h)
{
	if (!h->ok)
		return;
	if (h->prio < s->victim_bounds.least_prio) {
		s->victim_bounds.least_prio = h->prio;
		s->victim_bounds.most_las_queue = h->las_queue;
	} else if (h->prio == s->victim_bounds.least_prio && h->las_queue > s->victim_bounds.most_las_queue) {
		s->victim_bounds.most_las_queue = h->las_queue;
	}
}

void sched__victim_bounds_refresh(struct drv_sched *s)
{
	int32_t i;
	if (!s->victim_bounds.dirty)
		return;
	s->victim_bounds.least_prio = INT32_MAX;
	s->victim_bounds.most_las_queue = INT32_MIN;
	for (i = 0; i < s->nrun; i++)
		sched__victim_bounds_add(s, &s->run_compact[i]);
	s->victim_bounds.dirty = false;
}

void sched__run_insert(struct drv_sched *s, int32_t slot)
{
	int32_t pos;
	DRV_GROW(s->run, (size_t)s->nrun + 1, s->rcap);
	DRV_GROW(s->run_compact, (size_t)s->nrun + 1, s->run_compact_cap);
	pos = run_lower_bound(s, slot);
	memmove(&s->run[pos + 1], &s->run[pos], (size_t)(s->nrun - pos) * sizeof(*s->run));
	memmove(&s->run_compact[pos + 1], &s->run_compact[pos], (size_t)(s->nrun - pos) * sizeof(*s->run_compact));
	s->run[pos] = slot;
	s->nrun++;
	run_compact_fill(s, pos);
	if (!s->victim_bounds.dirty)
		sched__victim_bounds_add(s, &s->run_compact[pos]);
}

void sched__run_remove(struct drv_sched *s, int32_t slot)
{
	int32_t pos = run_lower_bound(s, slot), i;
	if (pos >= s->nrun || s->run[pos] != slot) {
		pos = -1;
		for (i = 0; i < s->nrun; i++)
			if (s->run[i] == slot) {
				pos = i;
				break;
			}
		if (pos < 0)
			return;
	}
	memmove(&s->run[pos], &s->run[pos + 1], (size_t)(s->nrun - pos - 1) * sizeof(*s->run));
	memmove(&s->run_compact[pos], &s->run_compact[pos + 1], (size_t)(s->nrun - pos - 1) * sizeof(*s->run_compact));
	s->nrun--;
	s->victim_bounds.dirty = true;
}

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

void sched__usage(struct drv_sched *s, struct sched_job *j, int sign)
{
	struct sched_tenant *t = &s->tenants[j->tenant];
	int32_t i;
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
		}
		t->usage_all += sign * milli;
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
		if (s->jobs[i].state != SJ_FREE) {
			bool pend = s->jobs[i].state == DRV_SJ_PENDING;
			if (pend)
				sched__demand(s, &s->jobs[i], -1);
			derive(s, &s->jobs[i]);
			if (pend)
				sched__demand(s, &s->jobs[i], +1);
		}
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
	int64_t cap = 0;

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
		} else if (tg->gpu_milli > 0) {
			j->need_milli += (int64_t)tg->count * tg->gpu_milli;
			if (!j->min_frac || tg->gpu_milli < j->min_frac)
				j->min_frac = tg->gpu_milli;
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
	j->dur = job->runtime_estimate > 0 ? job->runtime_estimate : job->time_limit;
	if (j->dur < 0)
		j->dur = 0;

	j->pool_mask = 0;
	j->pools_none = false;
	if (c->npools > 0) {
		uint64_t m = 0;
		for (p = 0; p < c->npools && p < SCHED_MAX_POOLS; p++) {
			if (!region_ok(job, c->pools[p].region))
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
	/* Capacity it could ever use: the allowed pools' GPUs (up nodes). */
	if (c->nvertices > 0) {
		if (!j->pool_mask) {
			cap = c->vertices[0].total_gpus;
		} else {
			for (p = 0; p < c->npools && p < SCHED_MAX_POOLS; p++)
				if (j->pool_mask >> p & 1) {
					int32_t v = c->pools[p].vertex;
					if (v >= 0 && v < c->nvertices)
						cap += c->vertices[v].total_gpus;
				}
		}
	}
	j->cap_milli = cap * DRV_MILLI;
	j->never = j->pools_none || (int64_t)j->need_whole > cap || j->max_task > s->max_node_gpus ||
		   (j->need_milli > 0 && cap == 0);
	/* An elastic pool may still grow to host it. */
	if (j->never && !j->pools_none && j->max_task <= s->max_node_gpus) {
		for (p = 0; p < c->npools && p < SCHED_MAX_POOLS; p++)
			if ((!j->pool_mask || j->pool_mask >> p & 1) && c->pools[p].elastic &&
			    c->pools[p].max_nodes > 0)
				j->never = false;
	}
	if (j->never && !j->pools_none && j->max_task > s->max_node_gpus) {
		for (p = 0; p < c->npools && p < SCHED_MAX_POOLS; p++)
			if ((!j->pool_mask || j->pool_mask >> p & 1) && c->pools[p].elastic &&
			    c->pools[p].max_nodes > 0 && s->pool_tmpl_gpus[p] >= j->max_task)
				j->never = false;
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
	j->submit = job->submit_time;
	j->pool = -1;
	j->end = T_INF;
	j->fail_gen = UINT64_MAX;
	derive(s, j);
	hput(s, job->id, slot);
	*out = slot;
	return 0;
}

static void free_job(struct drv_sched *s, int32_t slot)
{
	struct sched_job *j = &s->jobs[slot];
	hdel(s, j->id);
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
	s->jobs[slot].nomination.ntasks = 0;
	s->jobs[slot].victims_left = 0;
	if (s->jobs[slot].state == DRV_SJ_PENDING)
		sched__pend_compact_refresh(s, slot);
	for (i = 0; i < s->npreemptors; i++)
		if (s->preemptors[i] == slot) {
			memmove(&s->preemptors[i], &s->preemptors[i + 1], (size_t)(s->npreemptors - i - 1) * sizeof(*s->preemptors));
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
	sched__usage(s, j, +1);
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
	sched__start(s, slot, p, start_time);
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
	sched__run_remove(s, slot);
	sched__usage(s, j, -1);
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
	hgrow(s);
	sched__refresh_cluster(s);
	return s;
}

void drv_sched_free(struct drv_sched *s)
{
	int32_t i;
	if (!s)
		return;
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
	drv_free(s->pend);
	drv_free(s->preemptors);
	drv_free(s->pend_compact);
	drv_free(s->visited);
	drv_free(s->run);
	drv_free(s->run_compact);
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

static void why_never(const struct sched_job *j, struct drv_sched_decision *w)
{
	memset(w, 0, sizeof(*w));
	w->reason = DRV_REASON_NEVER;
	w->pool = w->node = w->model = w->level = -1;
	w->n[0] = j->need_milli;
	w->n[1] = j->cap_milli;
}

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
	if (j->state == DRV_SJ_PENDING && j->never && j->why.reason != DRV_REASON_NEVER) {
		why_never(j, &out->why);
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
	return s->nrun;
}

/* ---- formatting --------------------------------------------------------- */

struct fbuf {
	char *buf;
	size_t sz;
	size_t len;
};

static void fput(struct fbuf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fput(struct fbuf *f, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(f->len < f->sz ? f->buf + f->len : NULL, f->len < f->sz ? f->sz - f->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		f->len += (size_t)n;
}

static void fput_gpus(struct fbuf *f, int64_t milli)
{
	if (milli % DRV_MILLI == 0)
		fput(f, "%" PRId64 " GPU%s", milli / DRV_MILLI, milli == DRV_MILLI ? "" : "s");
	else
		fput(f, "%" PRId64 ".%03" PRId64 " GPUs", milli / DRV_MILLI, milli % DRV_MILLI);
}

static void fput_place(struct fbuf *f, const struct drv_sched *s, const struct drv_placement *p)
{
	size_t need;
	if (!p || p->ntasks == 0) {
		fput(f, "-");
		return;
	}
	need = drv_placement_format(s->c, p, f->len < f->sz ? f->buf + f->len : NULL,
				    f->len < f->sz ? f->sz - f->len : 0);
	f->len += need;
}

static const char *pool_name(const struct drv_sched *s, int32_t p)
{
	return p >= 0 && p < s->c->npools ? s->c->pools[p].name : "-";
}

static const char *level_name(const struct drv_sched *s, int32_t l)
{
	return l >= 0 && l < s->c->nlevels ? s->c->levels[l] : "required level";
}

size_t drv_sched_decision_format(const struct drv_sched *s, const struct drv_sched_decision *d,
				 char *buf, size_t bufsz)
{
	struct fbuf f = { buf, bufsz, 0 };
	const struct drv_gpu_model *gm;
	int32_t i;

	if (bufsz)
		buf[0] = '\0';
	switch (d->kind) {
	case DRV_DEC_START:
		fput(&f, "start %" PRIu64 " on ", d->job);
		fput_place(&f, s, d->placement);
		if (d->pool >= 0)
			fput(&f, " pool %s", pool_name(s, d->pool));
		if (d->n[0] > 0)
			fput(&f, " $%" PRId64 ".%02" PRId64 "/h", d->n[0] / 1000000,
			     d->n[0] % 1000000 / 10000);
		if (d->flags & DRV_DEC_BACKFILLED)
			fput(&f, " backfilled");
		if (d->flags & DRV_DEC_BORROWING)
			fput(&f, " borrowing");
		if (d->flags & DRV_DEC_SPOT)
			fput(&f, " spot");
		break;
	case DRV_DEC_PREEMPT:
		fput(&f, "preempt");
		for (i = 0; i < d->nvictims; i++)
			fput(&f, "%s%" PRIu64, i ? "," : " ", d->victims[i]);
		fput(&f, " for %" PRIu64 " grace until %" PRId64 " (lost %" PRId64
			 " GPU-s, top victim priority %" PRId64 "%s) then on ",
		     d->job, d->at, d->n[0], d->n[1],
		     (d->flags & DRV_DEC_RECLAIM) ? ", reclaiming quota" : "");
		fput_place(&f, s, d->placement);
		break;
	case DRV_DEC_RESERVE:
		fput(&f, "reserve for %" PRIu64 " at %" PRId64 " on ", d->job, d->at);
		fput_place(&f, s, d->placement);
		break;
	case DRV_DEC_PROVISION:
		gm = drv_gpu_model_at(d->model);
		fput(&f, "provision %d node%s of %" PRId64 " %s in pool %s for %" PRIu64, d->count,
		     d->count == 1 ? "" : "s", d->n[0], gm ? gm->short_name : "GPUs",
		     pool_name(s, d->pool), d->job);
		break;
	case DRV_DEC_RELEASE:
		fput(&f, "release node %s of pool %s",
		     d->node >= 0 && d->node < s->c->nnodes ? s->c->nodes[d->node].name : "?",
		     pool_name(s, d->pool));
		break;
	case DRV_DEC_PENDING:
		fput(&f, "pending %" PRIu64 ": ", d->job);
		switch (d->reason) {
		case DRV_REASON_RESOURCES:
			fput(&f, "resources: needs ");
			fput_gpus(&f, d->n[0]);
			if (d->n[2] > 1)
				fput(&f, " (%" PRId64 " per task)", d->n[2]);
			fput(&f, "; ");
			fput_gpus(&f, d->n[1]);
			fput(&f, " free where it may run");
			if (d->n[2] > 1)
				fput(&f, ", at most %" PRId64 " on one node", d->n[3] < 0 ? 0 : d->n[3]);
			if (d->flags & DRV_DEC_NO_VICTIMS)
				fput(&f, "; no preemption frees enough");
			if (d->flags & DRV_DEC_CLASS_NEVER)
				fput(&f, "; its priority class never preempts");
			break;
		case DRV_REASON_TOPOLOGY:
			fput(&f, "topology: needs ");
			fput_gpus(&f, d->n[0]);
			fput(&f, " within one %s; ", level_name(s, d->level));
			fput_gpus(&f, d->n[1]);
			fput(&f, " free in all, not together");
			if (d->flags & DRV_DEC_NO_VICTIMS)
				fput(&f, "; no preemption frees enough");
			if (d->flags & DRV_DEC_CLASS_NEVER)
				fput(&f, "; its priority class never preempts");
			break;
		case DRV_REASON_QUOTA:
			gm = drv_gpu_model_at(d->model);
			fput(&f, "quota: needs ");
			fput_gpus(&f, d->n[0]);
			fput(&f, " of %s; tenant uses ", gm ? gm->short_name : "GPUs");
			fput_gpus(&f, d->n[1]);
			fput(&f, " of its ");
			fput_gpus(&f, d->n[2]);
			fput(&f, ", may borrow ");
			fput_gpus(&f, d->n[3] < 0 ? 0 : d->n[3]);
			break;
		case DRV_REASON_RESERVATION:
			fput(&f, "reservation: would delay %" PRIu64 " reserved from %" PRId64,
			     (uint64_t)d->n[0], d->at);
			break;
		case DRV_REASON_PRIORITY:
			fput(&f, "priority: strict order, behind blocked %" PRIu64, (uint64_t)d->n[0]);
			break;
		case DRV_REASON_PREEMPTING:
			fput(&f, "preempting: %" PRId64 " victim%s still stopping, grace until %" PRId64,
			     d->n[0], d->n[0] == 1 ? "" : "s", d->at);
			break;
		case DRV_REASON_PROVISIONING:
			fput(&f, "provisioning: %d node%s coming in pool %s", d->count,
			     d->count == 1 ? "" : "s", pool_name(s, d->pool));
			break;
		case DRV_REASON_NEVER:
			fput(&f, "never fits: needs ");
			fput_gpus(&f, d->n[0]);
			fput(&f, "; ");
			fput_gpus(&f, d->n[1]);
			fput(&f, " in the pools, regions and models it may use");
			break;
		case DRV_REASON_RESERVED:
			fput(&f, "reserved: holds a reservation from %" PRId64, d->at);
			break;
		default:
			fput(&f, "not considered yet");
			break;
		}
		break;
	default:
		fput(&f, "?");
		break;
	}
	return f.len;
}
