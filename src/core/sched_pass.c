/*
 * sched_pass.c: the scheduling pass. It walks the pending queue once, in
 * order (priority with aging, then fifo/sjf/las, or the fair-share merge of
 * the tenants' queues), and for each job: checks its tenant's quota (with
 * cohort borrowing), tries to place the whole gang in the pools the policy
 * prefers, else may preempt whole lower-priority gangs (or reclaim lent
 * quota), else leaves it pending with the reason and the numbers. Under
 * strict order the first blocked job stops the rest; under backfill it gets
 * a reservation (the earliest time running jobs free enough room, found by
 * sweeping the running list in order of expected end) and later jobs start
 * only where they cannot delay it; under greedy every job is tried.
 *
 * Reservations are held by "blocking" their GPUs that are free now: the
 * pass commits them into the cluster as synthetic tasks, so the placement
 * engine itself keeps backfilled jobs off them. A job short enough to end
 * before the earliest reservation may use them; the pass lifts the blocks
 * to place it. Every block is lifted before the pass returns.
 *
 * No I/O, no clock, no globals; every choice is ordered by a total key so
 * the decisions are the same byte for byte.
 *
 * This file is the pass itself: the walk over the queue, the decisions
 * list, and stopping early. Its steps live beside it: the queue order and
 * the fair merge (sched_order.c), one job's turn (sched_scan.c), placement
 * in the preferred pools and starting (sched_place.c), quota
 * (sched_quota.c), reservations and their blocks (sched_reserve.c),
 * preemption (sched_preempt.c) and elastic pools (sched_elastic.c).
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- decisions ---------------------------------------------------------- */

struct drv_sched_decision *sched__decision_new(struct pass *p, enum drv_sched_dec_kind kind)
{
	struct drv_sched_decisions *o = p->out;
	struct drv_sched_decision *d;
	DRV_GROW(o->v, (size_t)o->n + 1, o->cap);
	d = &o->v[o->n++];
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->pool = -1;
	d->node = -1;
	d->model = -1;
	d->level = -1;
	return d;
}

/* Sets a pending job's reason for this pass; remembers whether it changed. */
void sched__set_why(struct pass *p, struct sched_job *j, const struct drv_sched_decision *w)
{
	struct drv_sched_decision n = *w;
	n.kind = DRV_DEC_PENDING;
	n.job = j->id;
	n.placement = NULL;
	n.victims = NULL;
	n.nvictims = 0;
	if (memcmp(&n, &j->why, sizeof(n)) != 0) {
		j->why = n;
		j->why_emitted = false;
	}
	j->reason_pass = p->s->pass_no;
	j->quota_seq = 0;
}

/* ---- stopping early ---------------------------------------------------- */

/*
 * A pass may stop before the end of the queue once nothing in it can
 * start, reserve, preempt or ask for nodes any more: then every job left
 * waits for resources, and their reason is the pass's tail reason. The
 * bound is over the whole queue's smallest task, on the cluster's root
 * aggregates, counting reserved GPUs as free (a short job might use them).
 */
struct stopper {
	bool possible;     /* policy and state allow skipping at all */
};

static void stopper_init(struct pass *p, struct stopper *st)
{
	struct drv_sched *s = p->s;
	const struct drv_sched_policy *pol = p->pol;
	int32_t i;
	memset(st, 0, sizeof(*st));
	if (p->c->nvertices == 0)
		return;
	if (pol->grow_wait_s > 0)
		for (i = 0; i < p->c->npools; i++)
			if (p->c->pools[i].elastic)
				return;
	p->min_prio_victim = INT32_MAX;
	/* reclaim may preempt whatever the priority: a job whose tenant may
	 * reclaim is never skipped (sched__bounds_get) */
	for (i = 0; i < s->ntenants; i++)
		if (s->tenants[i].cohort >= 0 && s->tenants[i].has_quota)
			p->reclaim_bounds = true;
	if (pol->preemption) {
		if (pol->order == DRV_ORDER_LAS) {
			/* a job may preempt one of its priority in a higher queue
			 * past its minimum run time: bounds over those */
			sched__las_queues_now(p);
			p->min_prio_victim = p->las_least_prio;
			st->possible = true;
			return;
		}
		for (i = 0; i < s->nrun; i++) {
			const struct sched_job *r = &s->jobs[s->run[i]];
			if (r->preemptible && r->state == DRV_SJ_RUNNING && r->prio < p->min_prio_victim)
				p->min_prio_victim = r->prio;
		}
	}
	st->possible = true;
}

/* Global part: may the pass skip jobs that surely cannot start now? */
static bool skip_allowed(const struct pass *p, const struct stopper *st)
{
	if (!st->possible || p->pol->report_all_pending)
		return false;
	if (p->pol->mode != DRV_MODE_GREEDY &&
	    p->nresv_made < DRV_MAX(1, p->pol->mode == DRV_MODE_BACKFILL ? p->pol->conservative_depth : 1))
		return false;
	return true;
}

void sched__bounds_get(const struct pass *p, struct bounds *b)
{
	const struct drv_vertex *r = &p->c->vertices[0];
	b->gpus = r->free_gpus;
	b->nodes = r->free_nodes;
	b->nodes_loose = b->nodes + p->blocked_gpus;
	b->node_max = r->max_node_free;
	b->part_max = r->max_part_free;
	b->any_reserved = p->blocked_gpus > 0;
	b->short_dur = p->t_min == T_INF ? T_INF : p->t_min - p->now;
	b->gpus_loose = b->gpus + p->blocked_gpus;
	b->node_max_loose = DRV_MIN(b->node_max + p->blocked_max, p->s->max_node_gpus);
	b->preempt = p->pol->preemption && p->tries < p->pol->max_preempt_tries;
	b->least_victim_prio = p->min_prio_victim;
	b->las_most_queue = p->pol->order == DRV_ORDER_LAS ? p->las_most_queue : INT32_MIN;
	b->may_reclaim = p->reclaim_bounds && b->preempt ? sched__may_reclaim(p->s) : NULL;
}

static void set_tail(struct pass *p, enum drv_sched_reason why)
{
	struct drv_sched *s = p->s;
	const struct drv_vertex *r = &p->c->vertices[0];
	sched__why_init(&s->tail_why, why);
	if (why == DRV_REASON_PRIORITY) {
		s->tail_why.n[0] = (int64_t)p->first_blocked;
	} else {
		s->tail_why.n[1] = DRV_MIN((int64_t)r->free_gpus * DRV_MILLI, r->free_milli);
		s->tail_why.n[3] = r->max_node_free;
	}
	s->tail_pass = s->pass_no;
}

/* ---- the pass ----------------------------------------------------------- */

static int check_policy(const struct drv_sched_policy *pol)
{
	int32_t i;
	if ((unsigned)pol->order > DRV_ORDER_FAIR || (unsigned)pol->mode > DRV_MODE_GREEDY ||
	    (unsigned)pol->pools > DRV_POOLS_FASTEST || pol->nlas < 0 ||
	    pol->nlas > DRV_SCHED_MAX_LAS || pol->grace_s < 0 || pol->min_run_s < 0 || pol->las_promote_s < 0 || pol->fair_half_life_s < 0 ||
	    pol->aging_interval_s < 0 || pol->conservative_depth < 0 || pol->max_preempt_tries < 0)
		return DRV_EINVAL;
	for (i = 1; i < pol->nlas; i++)
		if (pol->las_threshold[i] <= pol->las_threshold[i - 1])
			return DRV_EINVAL;
	return 0;
}

/* What the walk over the queue keeps besides the pass. */
struct walk {
	struct stopper stop;
	int32_t nvis;           /* slots in s->visited */
	int32_t nquota_held;    /* slots in s->quota_held_seen */
	bool skipped;           /* hopeless jobs were passed over */
	/* A job held at its tenant's quota, with nothing that check reads
	 * changed since, would get the same reason again and do nothing
	 * else: the pass passes over it from its compact entry, without
	 * touching the job (unless every reason is to be reported). */
	bool quota_skip;
};

/* Sets up the pass and the state for it: the clock, the cluster view,
 * idle times, last pass's reservations forgotten and the preemptors'
 * nominations held first (their victims' GPUs must not go to a third
 * job), the queue keyed and its compact copy current. */
static void pass_begin(struct pass *p, struct drv_sched *s, int64_t now,
		       const struct drv_sched_policy *pol, struct drv_sched_decisions *out)
{
	int32_t i, k;
	out->n = 0;
	out->nids = 0;
	memset(p, 0, sizeof(*p));
	p->s = s;
	p->c = s->c;
	p->pol = pol;
	p->now = now;
	p->out = out;
	p->t_min = T_INF;
	p->exact_left = 4;
	s->pass_no++;
	s->last_now = now;
	sched__run_sync(s);
	s->fair_half_life = pol->fair_half_life_s;
	if (s->cluster_stale || s->c->nnodes != s->nnodes_seen)
		sched__refresh_cluster(s);
	if (s->idle_unknown) {
		for (i = 0; i < s->nnodes_seen; i++)
			if (s->idle_since[i] == INT64_MIN)
				s->idle_since[i] = now;
		s->idle_unknown = false;
	}
	for (i = 0; i < s->nresv; i++)
		for (k = 0; k < s->resv[i].pl.ntasks; k++) {
			int32_t node = s->resv[i].pl.tasks[k].node;
			if (node >= 0 && node < s->nnodes_seen)
				s->resv_mask[node] = 0;
		}
	s->nresv = 0;
	s->block.ntasks = 0;
	p->blocked_on = true; /* nothing blocked yet; reservations add as they come */
	for (i = 0; i < s->npreemptors; i++) {
		struct sched_job *nj = &s->jobs[s->preemptors[i]];
		sched__resv_add(p, s->preemptors[i], DRV_MAX(nj->nomination_deadline, now),
				&nj->nomination, true);
		p->nresv_made++;
	}
	s->mix.half_life = pol->mix_half_life > 0 ? pol->mix_half_life : DRV_MIX_HALF_LIFE;
	if (s->last_place != (int32_t)pol->place || s->last_pools != (int32_t)pol->pools) {
		s->last_place = (int32_t)pol->place;
		s->last_pools = (int32_t)pol->pools;
		s->rel_gen++;
	}
	sched__rekey(p);
	if (s->pend_compact_stale) {
		sched__pend_compact_rebuild(s);
		s->pend_compact_stale = false;
	}
}

/* Strict order with a blocked job ends the walk: the rest wait behind it. */
static bool strict_stop(struct pass *p)
{
	if (p->pol->mode == DRV_MODE_STRICT && p->nblocked > 0 && !p->pol->report_all_pending) {
		set_tail(p, DRV_REASON_PRIORITY);
		return true;
	}
	return false;
}

/* The job at queue position pos takes its turn, unless it is held at
 * quota as it was (passed over) or no longer pending. True when it took
 * it (what the pass may assume can have changed). */
static inline bool visit(struct pass *p, struct walk *wk, int32_t pos)
{
	struct drv_sched *s = p->s;
	int32_t slot = s->pend[pos];
	if (wk->quota_skip && sched__quota_held(s, &s->pend_compact[pos])) {
		s->quota_held_seen[wk->nquota_held++] = slot;
		return false;
	}
	if (s->jobs[slot].state != DRV_SJ_PENDING)
		return false;
	s->visited[wk->nvis++] = slot;
	sched__scan_one(p, slot);
	s->pend_compact[pos].quota_seq = s->jobs[slot].quota_seq;
	s->pend_compact[pos].quota_vid = s->jobs[slot].quota_vid;
	return true;
}

/*
 * One tenant left in the merge (most of a long fair queue, once the others
 * ran out or dropped out): its chain in queue order, as sched__fair_next
 * gives it (its use orders nothing any more: no tenant comes back), with
 * the same drops, and without the merge's bookkeeping for every job.
 */
static void walk_lone(struct pass *p, struct walk *wk, struct fair_merge *fm, struct bounds *b,
		      bool may, bool fresh)
{
	struct drv_sched *s = p->s;
	int32_t t = fm->act[0], head = fm->head[t], hpos = fm->hpos[t];
	bool reclaims = p->reclaim_bounds && s->tenants[t].cohort >= 0 && s->tenants[t].has_quota;
	bool last = false;
	while (!last) {
		int32_t pos;
		if (!fresh) {
			may = skip_allowed(p, &wk->stop);
			if (may)
				sched__bounds_get(p, b);
			fresh = true;
		}
		if (strict_stop(p))
			break;
		if (may && fm->swept_at != wk->nvis) {
			/* the cluster changed since the last look */
			fm->swept_at = wk->nvis;
			if (!reclaims && sched__rest_hopeless(b, &fm->suf[head])) {
				wk->skipped = true;
				break;
			}
		}
		pos = hpos;
		head = fm->next[head];
		if (head < 0) {
			last = true;
		} else if (may && sched__rest_hopeless(b, &fm->suf[head])) {
			wk->skipped = true; /* this one still takes its turn */
			last = true;
		} else {
			hpos = sched__fair_pos_after(s, head, pos);
		}
		if (may && sched__hopeless(b, &s->pend_compact[pos]))
			wk->skipped = true;
		else if (visit(p, wk, pos))
			fresh = false;
	}
	fm->nact = 0;
}

/* The walk in fair-share order: the tenants' queues merged lazily. What
 * skipping may assume changes only when a job takes its turn, so the
 * bounds are taken again after a visit, not for every job passed over. */
static void walk_fair(struct pass *p, struct walk *wk)
{
	struct fair_merge fm;
	struct bounds b;
	bool may = false, fresh = false;
	sched__fair_setup(p, &fm);
	for (;;) {
		int32_t pos;
		if (!fresh) {
			may = skip_allowed(p, &wk->stop);
			if (may)
				sched__bounds_get(p, &b);
			fresh = true;
		}
		if (strict_stop(p))
			break;
		if (fm.nact == 1) {
			walk_lone(p, wk, &fm, &b, may, fresh);
			break;
		}
		pos = sched__fair_next(p, &fm, may ? &b : NULL, wk->nvis, &wk->skipped);
		if (pos < 0)
			break;
		if (may && sched__hopeless(&b, &p->s->pend_compact[pos])) {
			wk->skipped = true;
			continue;
		}
		if (visit(p, wk, pos))
			fresh = false;
	}
}

/* True when every entry of the block is hopeless (sched__hopeless) by
 * its bounds: what any entry might use, it is given (the loose limits if
 * one might be short), and the least it needs still does not fit. */
static bool block_hopeless(const struct bounds *b, const struct pend_block *k)
{
	int64_t w, n;
	int32_t m;
	if (k->stop)
		return false;
	if (!k->whole && !k->frac)
		return true; /* all never */
	if (b->preempt && b->may_reclaim)
		return false;
	if (b->preempt && (k->max_prio > b->least_victim_prio ||
			   (k->max_prio == b->least_victim_prio && k->min_las_q < b->las_most_queue)))
		return false;
	sched__limits(b, k->min_dur <= b->short_dur, &w, &m, &n);
	if (k->whole && !(k->min_need > w || k->min_task > m || k->min_full > n))
		return false;
	if (k->frac && !(w == 0 && k->min_frac > b->part_max))
		return false;
	return true;
}

/* From queue position k, the first position whose job is not hopeless
 * (or nall): whole blocks by their bounds, else entry by entry. */
static int32_t skip_hopeless(struct drv_sched *s, const struct bounds *b, int32_t k, int32_t nall)
{
	const struct pend_compact *ph = s->pend_compact;
	while (k < nall) {
		if (((s->pend_off + k) & (SCHED_PBLK - 1)) == 0 && k + SCHED_PBLK <= nall &&
		    block_hopeless(b, sched__pend_block(s, k))) {
			k += SCHED_PBLK;
			continue;
		}
		if (!sched__hopeless(b, &ph[k]))
			break;
		k++;
	}
	return k;
}

/* The walk in queue order, passing over runs of hopeless jobs from their
 * compact entries alone once skipping is allowed (the tight part). */
static void walk_queue(struct pass *p, struct walk *wk, int32_t nall)
{
	int32_t k = 0;
	while (k < nall) {
		if (strict_stop(p))
			break;
		if (skip_allowed(p, &wk->stop)) {
			struct bounds b;
			int32_t kk;
			sched__bounds_get(p, &b);
			kk = skip_hopeless(p->s, &b, k, nall);
			if (kk > k)
				wk->skipped = true;
			k = kk;
			if (k >= nall)
				break;
		}
		visit(p, wk, k++);
	}
}

/* Strict order stopped the pass: preemptors behind the blocked job whose
 * victims are gone still start on the GPUs held for them (else those stay
 * idle until the blocked job starts). */
static void start_freed_preemptors(struct pass *p, struct walk *wk)
{
	struct drv_sched *s = p->s;
	int32_t i, n = s->npreemptors;
	DRV_GROW(s->scratch_slots2, (size_t)n + 1, s->scratch_slots2_cap);
	if (n > 0) /* preemptors is NULL until the first nomination */
		memcpy(s->scratch_slots2, s->preemptors, (size_t)n * sizeof(*s->preemptors));
	for (i = 0; i < n; i++) {
		int32_t slot = s->scratch_slots2[i];
		struct sched_job *nj = &s->jobs[slot];
		if (nj->state != DRV_SJ_PENDING || nj->victims_left > 0 ||
		    nj->reason_pass == s->pass_no)
			continue;
		s->visited[wk->nvis++] = slot;
		sched__scan_one(p, slot);
		sched__pend_compact_refresh(s, slot);
	}
}

/* Sets or clears the start marks of the jobs the pass started. */
static void mark_started(struct drv_sched *s, const struct drv_sched_decisions *out, uint8_t v)
{
	int32_t i;
	for (i = 0; i < out->n; i++)
		if (out->v[i].kind == DRV_DEC_START)
			s->start_mark[sched__lookup(s, out->v[i].job)] = v;
}

/* Takes the jobs the pass started out of the pending list: a few one by
 * one, many in one sweep over the list that reads a byte a job by its
 * slot rather than the jobs themselves (far apart in memory once the
 * queue was sorted). */
static void drop_started(struct pass *p)
{
	struct drv_sched *s = p->s;
	const struct drv_sched_decisions *out = p->out;
	int32_t i, n;
	if (p->nstarted == 0)
		return;
	if (p->nstarted <= 32) {
		for (i = 0; i < out->n; i++)
			if (out->v[i].kind == DRV_DEC_START)
				sched__pend_remove(s, sched__lookup(s, out->v[i].job));
		return;
	}
	if (s->start_mark_cap < (size_t)s->njobs) {
		size_t old = s->start_mark_cap;
		DRV_GROW(s->start_mark, (size_t)s->njobs, s->start_mark_cap);
		memset(s->start_mark + old, 0, s->start_mark_cap - old);
	}
	mark_started(s, out, 1);
	for (i = 0, n = 0; i < s->npend; i++) {
		if (!s->start_mark[s->pend[i]]) {
			s->pend_compact[n] = s->pend_compact[i];
			s->pend[n++] = s->pend[i];
		}
	}
	mark_started(s, out, 0);
	sched__pend_touch(s, 0, n);
	s->npend = n;
}

/* The decisions that come after the walk: backfill reservations, node
 * requests to elastic pools, and the pending reasons that changed (all of
 * them with report_all_pending); then the victims' ids are pointed at. */
static void emit_rest(struct pass *p, const struct walk *wk)
{
	struct drv_sched *s = p->s;
	struct drv_sched_decisions *out = p->out;
	struct drv_sched_decision *d;
	int32_t i;
	for (i = 0; i < s->nresv; i++) {
		if (s->resv[i].nominated)
			continue;
		d = sched__decision_new(p, DRV_DEC_RESERVE);
		d->job = s->jobs[s->resv[i].job].id;
		d->at = s->resv[i].at;
		d->placement = &s->resv[i].pl;
	}
	for (i = 0; i < SCHED_MAX_POOLS && i < s->c->npools; i++) {
		if (!p->prov_add[i])
			continue;
		s->pool_inflight[i] = p->prov_add[i];
		d = sched__decision_new(p, DRV_DEC_PROVISION);
		d->pool = i;
		d->count = p->prov_add[i];
		d->model = s->pool_tmpl_model[i];
		d->n[0] = s->pool_tmpl_gpus[i];
		d->job = p->prov_job[i];
	}
	for (i = 0; i < wk->nvis; i++) {
		struct sched_job *j = &s->jobs[s->visited[i]];
		if (j->state != DRV_SJ_PENDING || j->reason_pass != s->pass_no)
			continue;
		if (!p->pol->report_all_pending && j->why_emitted)
			continue;
		d = sched__decision_new(p, DRV_DEC_PENDING);
		*d = j->why;
		j->why_emitted = true;
	}
	/* victims' ids: the arena is final now */
	for (i = 0; i < out->n; i++)
		if (out->v[i].kind == DRV_DEC_PREEMPT) {
			out->v[i].victims = &out->ids[out->v[i].count];
			out->v[i].count = 0;
		}
}

int drv_sched_pass(struct drv_sched *s, int64_t now, const struct drv_sched_policy *pol,
		   struct drv_sched_decisions *out)
{
	struct pass P, *p = &P;
	struct walk wk;
	int32_t i, nall;
	int rc;

	if (!s || !pol || !out)
		return DRV_EINVAL;
	rc = check_policy(pol);
	if (rc)
		return rc;
	if (s->last_now != INT64_MIN && now < s->last_now)
		return DRV_EINVAL;
	pass_begin(p, s, now, pol, out);
	nall = s->npend;
	memset(&wk, 0, sizeof(wk));
	stopper_init(p, &wk.stop);
	wk.quota_skip = !pol->report_all_pending;
	s->tail_pass = 0;
	DRV_GROW(s->visited, (size_t)nall + 1, s->vcap);
	DRV_GROW(s->quota_held_seen, (size_t)nall + 1, s->quota_held_seen_cap);
	if (pol->order == DRV_ORDER_FAIR)
		walk_fair(p, &wk);
	else
		walk_queue(p, &wk, nall);
	if (wk.skipped && !s->tail_pass)
		set_tail(p, DRV_REASON_RESOURCES);
	if (pol->mode == DRV_MODE_STRICT && p->nblocked > 0)
		start_freed_preemptors(p, &wk);
	/* the jobs passed over as held at quota count as visited when the
	 * pass left others unvisited (drv_sched_job_get tells them apart) */
	if (s->tail_pass == s->pass_no)
		for (i = 0; i < wk.nquota_held; i++)
			s->jobs[s->quota_held_seen[i]].reason_pass = s->pass_no;
	drop_started(p);
	if (pol->idle_release_s > 0) /* the common case is none: no call */
		sched__releases(p);
	sched__blocks_off(p);
	emit_rest(p, &wk);
	sched__run_sync(s); /* sorted between passes */
	return out->n;
}
