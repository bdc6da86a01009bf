/*
 * sched_preempt.c: preemption. A blocked job looks for whole running gangs
 * whose removal lets it be placed: of lower priority, of the same priority
 * in a higher LAS queue, or (reclaim) a cohort peer's jobs beyond its
 * nominal quota. The search is memoised per job and per shape within a
 * pass, so a long queue of jobs that cannot preempt costs little.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

struct victim_cand {
	int32_t slot;
	int32_t prio;
	bool reclaim_only;
	int64_t lost;       /* milli-GPU-seconds */
};

static int cmp_victim_cand(const void *a, const void *b, void *arg)
{
	const struct victim_cand *x = a, *y = b;
	const struct drv_sched *s = arg;
	uint64_t ix, iy;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	if (x->lost != y->lost)
		return x->lost < y->lost ? -1 : 1;
	/* then the newest (highest id) first */
	ix = s->jobs[x->slot].id;
	iy = s->jobs[y->slot].id;
	return ix > iy ? -1 : ix < iy;
}

static int32_t placement_model(const struct drv_sched *s, const struct drv_placement *pl)
{
	if (pl->ntasks > 0 && pl->tasks[0].node >= 0 && pl->tasks[0].node < s->c->nnodes)
		return s->c->nodes[pl->tasks[0].node].model;
	return -1;
}

static bool overlaps(const struct drv_placement *a, const struct drv_placement *b)
{
	int32_t i, k;
	for (i = 0; i < a->ntasks; i++)
		for (k = 0; k < b->ntasks; k++)
			if (a->tasks[i].node == b->tasks[k].node &&
			    ((a->tasks[i].gpu_mask & b->tasks[k].gpu_mask) ||
			     b->tasks[k].cpu_milli > 0 || b->tasks[k].mem_mib > 0))
				return true;
	return false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* When a job running since start with attained (milli-GPU-seconds before
 * it) on need milli-GPUs leaves LAS queue q for the next: the first second
 * at which its attained service reaches the queue's end (T_INF: q is the
 * last queue, or it holds no GPU). */
static int64_t las_next_change(const struct drv_sched_policy *pol, int32_t q, int64_t start,
			       int64_t attained, int64_t need)
{
	int64_t end, left;
	if (q >= pol->nlas || need <= 0)
		return T_INF;
	end = pol->las_threshold[q] * DRV_MILLI;
	left = end - attained;
	return left <= 0 ? start : start + (left + need - 1) / need;
}

/* Running jobs' LAS queues as of now, once a pass. A job's queue only
 * grows while it runs, at a time known in advance (las_next in its compact
 * entry), so only the jobs whose queue changed since are recomputed. */
void sched__las_queues_now(struct pass *p)
{
	struct drv_sched *s = p->s;
	const struct drv_sched_policy *pol = p->pol;
	const int64_t now = p->now, min_run = pol->min_run_s;
	int32_t i, least = INT32_MAX, most = INT32_MIN;
	sched__run_sync(s);
	for (i = 0; i < s->nrun; i++) {
		struct run_compact *h = &s->run_compact[i];
		if (now >= h->las_next) {
			struct sched_job *v = &s->jobs[h->slot];
			int64_t att = v->attained + (now - v->start) * v->need_milli;
			v->las_queue = sched__las_queue(pol, att);
			h->las_queue = v->las_queue;
			h->las_next = las_next_change(pol, v->las_queue, v->start, v->attained,
						      v->need_milli);
		}
		if (!h->ok || now - h->start < min_run)
			continue;
		if (h->prio < least) {
			least = h->prio;
			most = h->las_queue;
		} else if (h->prio == least && h->las_queue > most) {
			most = h->las_queue;
		}
	}
	p->las_least_prio = least;
	p->las_most_queue = most;
	p->las_queues_done = true;
	s->victim_bounds.dirty = true;
}

/* Did a job just like j (its shape, its queue jq) fail a search this pass
 * with nothing started since? Then so does j's, and it counts as that one
 * did. */
static bool shape_failed(struct pass *p, const struct sched_job *j, int32_t jq)
{
	const struct drv_sched *s = p->s;
	int32_t i;
	if (j->slice_size > 0)
		return false; /* its slices are no part of the shape */
	for (i = 0; i < p->nfailed; i++) {
		const struct failed_shape *f0 = &p->failed[i];
		if (f0->need_milli == j->need_milli && f0->need_whole == j->need_whole &&
		    f0->max_task == j->max_task && f0->full_tasks == j->full_tasks &&
		    f0->min_frac == j->min_frac && f0->level == j->level && f0->model == j->model &&
		    f0->prio == j->prio && f0->tenant == j->tenant && f0->pool_mask == j->pool_mask &&
		    f0->preempted_by == j->preempted_by && f0->nstarted == p->nstarted &&
		    f0->nresv == s->nresv && f0->nblock == s->block.ntasks && f0->las_queue == jq) {
			if (f0->tried)
				p->tries++;
			return true;
		}
	}
	return false;
}

static void remember_failed_shape(struct pass *p, const struct sched_job *j, int32_t jq)
{
	struct failed_shape *f0;
	if (p->nfailed >= (int32_t)DRV_ARRAY_SIZE(p->failed) || j->slice_size > 0)
		return;
	f0 = &p->failed[p->nfailed++];
	f0->need_milli = j->need_milli;
	f0->need_whole = j->need_whole;
	f0->max_task = j->max_task;
	f0->full_tasks = j->full_tasks;
	f0->min_frac = j->min_frac;
	f0->level = j->level;
	f0->model = j->model;
	f0->prio = j->prio;
	f0->tenant = j->tenant;
	f0->pool_mask = j->pool_mask;
	f0->preempted_by = j->preempted_by;
	f0->nstarted = p->nstarted;
	f0->nresv = p->s->nresv;
	f0->nblock = p->s->block.ntasks;
	f0->tried = true;
	f0->las_queue = jq;
}

/* Did j's own last search fail in this same situation (nothing freed or
 * started, no job came of age since)? Then it fails again and counts as
 * it did. Else the memo starts over for this search. */
static bool memo_says_fails(struct pass *p, struct sched_job *j)
{
	const struct drv_sched *s = p->s;
	struct preempt_memo *m = &j->preempt_memo;
	if (m->valid && m->rel_gen == s->rel_gen && m->start_gen == s->start_gen && p->now < m->until &&
	    m->nresv == s->nresv && m->nblock == s->block.ntasks && m->t_min == p->t_min &&
	    p->pol->order != DRV_ORDER_LAS) {
		if (m->tried)
			p->tries++;
		return true;
	}
	m->valid = true;
	m->tried = false;
	m->rel_gen = s->rel_gen;
	m->start_gen = s->start_gen;
	m->until = T_INF;
	m->nresv = s->nresv;
	m->nblock = s->block.ntasks;
	m->t_min = p->t_min;
	return false;
}

/* The possible victims past the minimum run time, once a pass. */
static void eligible_now(struct pass *p)
{
	struct drv_sched *s = p->s;
	int32_t i;
	DRV_GROW(s->el_tenant, (size_t)s->ntenants + 1, s->el_tenant_cap);
	memset(s->el_tenant, 0, (size_t)s->ntenants);
	p->el_least_prio = INT32_MAX;
	for (i = 0; i < s->nrun; i++) {
		const struct run_compact *h = &s->run_compact[i];
		if (!h->ok || p->now - h->start < p->pol->min_run_s)
			continue;
		s->el_tenant[h->tenant] = 1;
		if (h->prio < p->el_least_prio)
			p->el_least_prio = h->prio;
	}
	p->el_done = true;
}

/* Without reclaim a victim must be of lower priority, or (LAS) of the same
 * priority in a higher queue: true when the bounds over running jobs say
 * none is, so the scan would find none (most searches under LAS with a
 * long queue end here). */
static bool no_victim_by_bounds(struct pass *p, struct sched_job *j, int quota_rc, int32_t jq)
{
	struct drv_sched *s = p->s;
	const struct sched_tenant *jt = &s->tenants[j->tenant];
	bool aged = p->pol->min_run_s > 0;
	if (aged && !p->el_done)
		eligible_now(p);
	if (quota_rc == 0 && jt->cohort >= 0 &&
	    sched__reclaim_possible(s, j, aged ? s->el_tenant : NULL))
		return false;
	if (aged && (p->el_least_prio > j->prio ||
		     (p->el_least_prio == j->prio && p->pol->order != DRV_ORDER_LAS))) {
		/* no victim past its minimum run of a priority <= its */
		j->preempt_memo.valid = false;
		return true;
	}
	if (p->pol->order == DRV_ORDER_LAS) {
		/* LAS bounds count only jobs past their minimum run time */
		if (p->las_least_prio < j->prio ||
		    (p->las_least_prio == j->prio && p->las_most_queue > jq))
			return false;
		j->preempt_memo.valid = false;
		return true;
	}
	sched__victim_bounds_refresh(s);
	if (s->victim_bounds.least_prio < j->prio ||
	    (s->victim_bounds.least_prio == j->prio && p->pol->order == DRV_ORDER_LAS &&
	     s->victim_bounds.most_las_queue > jq))
		return false;
	/* the scan would have lowered preempt_memo.until for young jobs of
	 * the same priority under LAS (of any priority where reclaim could
	 * apply); the memo is dropped then, so no later search reads a memo
	 * the scan would not have left. (Without it the next search comes
	 * here again and fails without counting a try, as a memo hit would.) */
	if (p->pol->order == DRV_ORDER_LAS || (quota_rc == 0 && jt->cohort >= 0))
		j->preempt_memo.valid = false;
	return true;
}

/* May running job v be a victim for j, and as what: by priority, by LAS
 * queue, or (*reclaim) as a cohort peer's job beyond its nominal quota? */
static bool victim_for(struct pass *p, struct sched_job *j, const struct run_compact *v,
		       int quota_rc, int32_t jq, bool *reclaim)
{
	const struct drv_sched *s = p->s;
	const struct sched_tenant *jt = &s->tenants[j->tenant];
	uint64_t mask = j->pool_mask;
	int32_t vm;
	*reclaim = false;
	if ((quota_rc != 0 || jt->cohort < 0) &&
	    (v->prio > j->prio || (v->prio == j->prio && p->pol->order != DRV_ORDER_LAS)))
		return false; /* can be neither a priority, a LAS nor a reclaim victim */
	if (p->now - v->start < p->pol->min_run_s) {
		if (v->start + p->pol->min_run_s < j->preempt_memo.until)
			j->preempt_memo.until = v->start + p->pol->min_run_s;
		return false;
	}
	if (j->preempted_by && v->id == j->preempted_by)
		return false; /* no ping-pong */
	if (mask && (v->pool < 0 || !(mask >> v->pool & 1)))
		return false;
	vm = v->place_model;
	if (j->model >= 0 && vm != j->model)
		return false;
	if (v->prio < j->prio)
		return true;
	if (p->pol->order == DRV_ORDER_LAS && v->prio <= j->prio && v->las_queue > jq)
		return true;
	if (quota_rc == 0 && jt->cohort >= 0 && v->tenant != j->tenant &&
	    s->tenants[v->tenant].cohort == jt->cohort && vm >= 0 && vm < DRV_MAX_MODELS) {
		const struct sched_tenant *vt = &s->tenants[v->tenant];
		*reclaim = vt->quota[vm] >= 0 && sched__reclaim_use(vt, vm) > vt->quota[vm] &&
			   jt->quota[vm] >= 0;
	}
	return *reclaim;
}

static inline void add_cand(struct victim_cand *c, const struct run_compact *v, bool reclaim,
			    int64_t now, int64_t *room)
{
	c->slot = v->slot;
	c->prio = reclaim ? INT32_MIN : v->prio;
	c->reclaim_only = reclaim;
	c->lost = (now - v->start) * v->need_milli;
	*room += v->need_milli;
}

/* LAS: the running jobs that may be victims by age (ok, past the minimum
 * run time), as indices into run_compact; made once for a run list and a
 * time, then read by every search until either changes. */
static void las_eligible(struct pass *p)
{
	struct drv_sched *s = p->s;
	const int64_t now = p->now, min_run = p->pol->min_run_s;
	int32_t i, n = 0;
	if (s->las_elig_gen == s->run_gen && s->las_elig_now == now && s->las_elig)
		return;
	DRV_GROW(s->las_elig, (size_t)s->nrun + 1, s->las_elig_cap);
	for (i = 0; i < s->nrun; i++) {
		const struct run_compact *h = &s->run_compact[i];
		if (h->ok && now - h->start >= min_run)
			s->las_elig[n++] = i;
	}
	s->nlas_elig = n;
	s->las_elig_gen = s->run_gen;
	s->las_elig_now = now;
}

/* The possible victims for slot into cands (room: the milli-GPUs they
 * hold); returns how many. The common refusals (of a priority or LAS queue
 * that cannot be a victim, younger than the minimum run) are decided here
 * from locals, as victim_for would decide them, so that the scan over
 * every running job reads little besides its compact entries. */
static int32_t collect_victims(struct pass *p, int32_t slot, int quota_rc, int32_t jq,
			       struct victim_cand *cands, int64_t *room)
{
	struct drv_sched *s = p->s;
	struct sched_job *j = &s->jobs[slot];
	const int64_t now = p->now, min_run = p->pol->min_run_s;
	const int32_t jprio = j->prio, n = s->nrun;
	const bool las = p->pol->order == DRV_ORDER_LAS;
	const bool no_reclaim = quota_rc != 0 || s->tenants[j->tenant].cohort < 0;
	const struct run_compact *rc = s->run_compact;
	int64_t until = j->preempt_memo.until;
	int32_t i, nc = 0;
	if (las) {
		/* only those past the minimum run can be victims; the memo's
		 * until, which the young would lower, is never read under LAS
		 * (memo_says_fails) */
		las_eligible(p);
		for (i = 0; i < s->nlas_elig; i++) {
			const struct run_compact *v = &rc[s->las_elig[i]];
			bool reclaim;
			if (v->slot == slot || (no_reclaim && v->prio > jprio) ||
			    !victim_for(p, j, v, quota_rc, jq, &reclaim))
				continue;
			add_cand(&cands[nc++], v, reclaim, now, room);
		}
		return nc;
	}
	for (i = 0; i < n; i++) {
		const struct run_compact *v = &rc[i];
		bool reclaim;
		if (!v->ok || v->slot == slot)
			continue;
		if (no_reclaim && (v->prio > jprio || (v->prio == jprio && !las)))
			continue; /* neither a priority, a LAS nor a reclaim victim */
		if (now - v->start < min_run) {
			if (v->start + min_run < until)
				until = v->start + min_run;
			continue;
		}
		if (!victim_for(p, j, v, quota_rc, jq, &reclaim))
			continue;
		add_cand(&cands[nc++], v, reclaim, now, room);
	}
	j->preempt_memo.until = until;
	return nc;
}

/* Frees the candidates in order (skipping reclaim victims of a tenant back
 * within its quota) until j can be placed, into pl; galloping past
 * placement attempts once they keep failing. The freed ones are moved to
 * the front of cands (*taken of them), and everything is put back. */
static bool free_until_fits(struct pass *p, const struct sched_job *j, struct victim_cand *cands,
			    int32_t nc, int32_t *taken, struct drv_placement *pl)
{
	struct drv_sched *s = p->s;
	int32_t i, pool, gap = 1, skip = 0, fails = 0;
	int64_t borrowed[64];
	struct place_fail f;
	bool found = false;

	memset(borrowed, 0, sizeof(borrowed));
	*taken = 0;
	for (i = 0; i < nc; i++) {
		struct sched_job *v = &s->jobs[cands[i].slot];
		if (cands[i].reclaim_only) {
			int32_t vt = v->tenant, vm = placement_model(s, &v->pl);
			int64_t over = sched__reclaim_use(&s->tenants[vt], vm) - s->tenants[vt].quota[vm];
			if (vt < 64 && over - borrowed[vt] <= 0)
				continue; /* that tenant is back within its quota */
			if (vt < 64)
				borrowed[vt] += v->need_milli;
		}
		drv_cluster_uncommit(p->c, &v->pl);
		cands[(*taken)++] = cands[i];
		if (!sched__fits_quick(s, j, j->pool_mask))
			continue;
		if (skip > 0 && i + 1 < nc) {
			skip--;
			continue;
		}
		if (sched__try_place(p, j, pl, &pool, &f) == 0) {
			found = true;
			break;
		}
		if (f.never)
			break;
		if (++fails > GALLOP_AFTER) {
			skip = gap;
			gap *= 2;
		}
	}
	for (i = *taken - 1; i >= 0; i--)
		drv_cluster_commit(p->c, &s->jobs[cands[i].slot].pl);
	return found;
}

/* Victim vslot stops for j: terminating until its grace ends, which may
 * move it up the running list. */
static void victim_stops(struct pass *p, const struct sched_job *j, int32_t vslot)
{
	struct drv_sched *s = p->s;
	struct sched_job *v = &s->jobs[vslot];
	v->state = DRV_SJ_TERMINATING;
	sched__coming(s, v, &v->pl, +1, true);
	v->grace = p->now + p->pol->grace_s;
	v->preempted_by = j->id;
	if (v->grace < v->end) {
		sched__run_remove(s, vslot);
		v->end = v->grace;
		sched__run_insert(s, vslot);
	}
	s->occ_gen++;
}

/* Applies a found preemption: keeps only the freed candidates the
 * placement pl overlaps as victims, stops them, and nominates slot on pl
 * with a PREEMPT decision (victim ids sorted, in the decisions' id arena). */
static void apply_preemption(struct pass *p, int32_t slot, const struct victim_cand *cands,
			     int32_t taken, const struct drv_placement *pl)
{
	struct drv_sched *s = p->s;
	struct sched_job *j = &s->jobs[slot];
	struct drv_sched_decision *d = sched__decision_new(p, DRV_DEC_PREEMPT);
	int64_t lost = 0, topprio = INT64_MIN;
	int32_t i, nv = 0;
	bool reclaim = false;

	DRV_GROW(p->out->ids, p->out->nids + (size_t)taken, p->out->idcap);
	for (i = 0; i < taken; i++) {
		struct sched_job *v = &s->jobs[cands[i].slot];
		if (!overlaps(&v->pl, pl))
			continue;
		p->out->ids[p->out->nids + (size_t)nv++] = v->id;
		lost += cands[i].lost / DRV_MILLI;
		if (v->prio > topprio)
			topprio = v->prio;
		if (cands[i].reclaim_only)
			reclaim = true;
		victim_stops(p, j, cands[i].slot);
	}
	sched__run_compact_rebuild(s); /* victims are terminating now */
	qsort(&p->out->ids[p->out->nids], (size_t)nv, sizeof(uint64_t), cmp_u64);
	/* d stays valid: the ids are a separate array */
	d->job = j->id;
	d->victims = NULL; /* pointed at after the pass (ids may still grow) */
	d->count = (int32_t)p->out->nids; /* offset, fixed up at the end */
	d->nvictims = nv;
	d->at = p->now + p->pol->grace_s;
	d->n[0] = lost;
	d->n[1] = topprio == INT64_MIN ? 0 : topprio;
	d->flags = reclaim ? DRV_DEC_RECLAIM : 0;
	p->out->nids += (size_t)nv;
	if (!j->nomination.ntasks) {
		DRV_GROW(s->preemptors, (size_t)s->npreemptors + 1, s->preemptors_cap);
		s->preemptors[s->npreemptors++] = slot;
	}
	if (j->nomination.ntasks)
		sched__coming(s, j, &j->nomination, -1, false);
	drv_placement_copy(&j->nomination, pl);
	sched__coming(s, j, &j->nomination, +1, false);
	d->placement = &j->nomination;
	j->victims_left = nv;
	j->nomination_deadline = d->at;
	sched__pend_compact_refresh(s, slot); /* a preemptor is never skipped */
}

/*
 * Looks for whole gangs whose removal lets j be placed: candidates in
 * order of least priority then least work lost; frees them one by one
 * (on a scratch basis: everything is put back) until j fits, then keeps
 * only those the found placement actually overlaps. Returns true and
 * applies the preemption (victims terminating, j nominated) when found.
 */
bool sched__try_preempt(struct pass *p, int32_t slot, int quota_rc)
{
	struct drv_sched *s = p->s;
	struct sched_job *j = &s->jobs[slot];
	struct drv_placement *pl = &s->scratch;
	struct victim_cand *cands;
	int32_t nc, taken;
	int64_t room = 0;
	struct avail a;
	int32_t jq = p->pol->order == DRV_ORDER_LAS ? (int32_t)j->key_policy : 0;

	sched__run_sync(s);
	if (j->never_preempts || s->nrun == 0)
		return false;
	if (p->pol->order == DRV_ORDER_LAS && !p->las_queues_done)
		sched__las_queues_now(p);
	if (quota_rc == 0 && shape_failed(p, j, jq))
		return false;
	if (memo_says_fails(p, j))
		return false;
	if (no_victim_by_bounds(p, j, quota_rc, jq))
		return false;
	DRV_GROW(s->scratch_slots, (size_t)s->nrun * (sizeof(struct victim_cand) / sizeof(int32_t) + 1),
		 s->scratch_slots_cap);
	cands = (struct victim_cand *)(void *)s->scratch_slots;
	nc = collect_victims(p, slot, quota_rc, jq, cands, &room);
	if (nc == 0)
		return false;
	sched__job_avail(s, j, j->pool_mask, &a);
	if (a.milli + room < j->need_milli)
		return false;
	/* a total order: (priority, work lost, id) */
	qsort_r(cands, (size_t)nc, sizeof(*cands), cmp_victim_cand, s);
	p->tries++;
	j->preempt_memo.tried = true;
	if (!free_until_fits(p, j, cands, nc, &taken, pl)) {
		if (quota_rc == 0)
			remember_failed_shape(p, j, jq);
		return false;
	}
	j->preempt_memo.valid = false;
	apply_preemption(p, slot, cands, taken, pl);
	return true;
}
