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
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* Exact placement attempts in a sweep before it starts to gallop. */
#define GALLOP_AFTER 16

struct pass {
	struct drv_sched *s;
	struct drv_cluster *c;
	const struct drv_sched_policy *pol;
	int64_t now;
	struct drv_sched_decisions *out;
	int32_t nblocked;
	uint64_t first_blocked;
	int32_t nresv_made;     /* reservations computed (depth) */
	int64_t t_min;          /* earliest reservation start */
	int32_t tries;
	bool blocked_on;        /* s->block committed */
	int64_t blocked_gpus;   /* GPUs in s->block */
	int32_t blocked_max;    /* most blocked GPUs on one node */
	int32_t min_prio_victim;/* least priority of a preemptible running job */
	int32_t first_resv;     /* index of the earliest reservation */
	bool resv_cached;             /* the first reservation is the cached one */
	int32_t exact_left;     /* exact "would fit but for a reservation" checks left */
	int32_t nfailed;        /* preemption searches that failed this pass, by shape */
	struct failed_shape {
		int64_t need_milli;
		int32_t need_whole, max_task, full_tasks, min_frac, level, model, prio, tenant;
		uint64_t pool_mask, preempted_by;
		int32_t nstarted, nresv, blk, jq;
		bool tried;
	} failed[16];
	bool las_queues_done;         /* running jobs' LAS queues computed this pass */
	int32_t nstarted;
	int32_t prov_add[SCHED_MAX_POOLS];
	uint64_t prov_job[SCHED_MAX_POOLS];
};

/* ---- decisions ---------------------------------------------------------- */

static struct drv_sched_decision *dec_new(struct pass *p, enum drv_sched_dec_kind kind)
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
static void set_why(struct pass *p, struct sched_job *j, const struct drv_sched_decision *w)
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

static void why_init(struct drv_sched_decision *w, enum drv_sched_reason r)
{
	memset(w, 0, sizeof(*w));
	w->kind = DRV_DEC_PENDING;
	w->reason = r;
	w->pool = -1;
	w->node = -1;
	w->model = -1;
	w->level = -1;
}

/* ---- aggregates --------------------------------------------------------- */

struct avail {
	int64_t nodes;     /* nodes with nothing on them */
	int64_t whole;     /* free whole GPUs of the job's model */
	int64_t milli;     /* free milli */
	int32_t maxnode;   /* most free whole GPUs on one node */
	int32_t maxlevel;  /* most free whole GPUs under one vertex of its required level */
	int32_t maxpart;   /* most free milli on one partly used GPU */
};

static void avail_vertex(const struct drv_vertex *v, int model, int level, struct avail *a)
{
	a->whole += model >= 0 ? v->free_gpus_by_model[model] : v->free_gpus;
	a->nodes += v->free_nodes;
	a->milli += v->free_milli;
	if (v->max_node_free > a->maxnode)
		a->maxnode = v->max_node_free;
	if (level >= 0 && level < DRV_MAX_LEVELS && v->max_free_at[level] > a->maxlevel)
		a->maxlevel = v->max_free_at[level];
	if (v->max_part_free > a->maxpart)
		a->maxpart = v->max_part_free;
}

static void job_avail(const struct drv_sched *s, const struct sched_job *j, uint64_t mask,
		      struct avail *a)
{
	const struct drv_cluster *c = s->c;
	int32_t p;
	memset(a, 0, sizeof(*a));
	if (c->nvertices == 0)
		return;
	if (!mask) {
		avail_vertex(&c->vertices[0], j->model, j->level, a);
		return;
	}
	for (p = 0; p < c->npools && p < SCHED_MAX_POOLS; p++)
		if (mask >> p & 1) {
			int32_t v = c->pools[p].vertex;
			if (v >= 0 && v < c->nvertices)
				avail_vertex(&c->vertices[v], j->model, j->level, a);
		}
}

static bool avail_fits(const struct sched_job *j, const struct avail *a)
{
	if ((int64_t)j->need_whole > a->whole || j->max_task > a->maxnode || j->need_milli > a->milli)
		return false;
	if ((int64_t)j->full_tasks > a->nodes)
		return false;
	if (j->level >= 0 && j->need_whole > a->maxlevel)
		return false;
	if (j->min_frac > 0 && a->whole == 0 && j->min_frac > a->maxpart)
		return false;
	return true;
}

/* A necessary condition: may the job fit in these pools now? */
static bool fits_quick(const struct drv_sched *s, const struct sched_job *j, uint64_t mask)
{
	struct avail a;
	job_avail(s, j, mask, &a);
	return avail_fits(j, &a);
}

/* ---- quota -------------------------------------------------------------- */

/*
 * May tenant t take need more milli-GPUs of model m? 0 = within its
 * nominal quota, 1 = by borrowing from its cohort, -1 = no (w filled).
 */
static int quota_check(const struct drv_sched *s, int32_t ti, int m, int64_t need,
		       struct drv_sched_decision *w)
{
	const struct sched_tenant *t = &s->tenants[ti];
	int64_t cq = 0, cu = 0, may;
	int32_t i;

	if (m < 0 || m >= DRV_MAX_MODELS || t->quota[m] < 0)
		return 0;
	if (t->usage[m] + need <= t->quota[m])
		return 0;
	may = 0;
	if (t->cohort >= 0) {
		int64_t head = DRV_MAX(0, t->quota[m] - t->usage[m]);
		for (i = 0; i < s->ntenants; i++) {
			const struct sched_tenant *o = &s->tenants[i];
			if (o->cohort != t->cohort || o->quota[m] < 0)
				continue;
			cq += o->quota[m];
			cu += o->usage[m];
		}
		/* what it may take beyond its own headroom: the cohort's unused
		 * quota, within its borrowing limit */
		may = cq - cu - head;
		if (t->limit[m] >= 0 && t->quota[m] + t->limit[m] - t->usage[m] - head < may)
			may = t->quota[m] + t->limit[m] - t->usage[m] - head;
		if (may < 0)
			may = 0;
		if (need <= head + may)
			return 1;
	}
	if (w) {
		why_init(w, DRV_REASON_QUOTA);
		w->model = m;
		w->n[0] = need;
		w->n[1] = t->usage[m];
		w->n[2] = t->quota[m];
		w->n[3] = may;
	}
	return -1;
}

/* Quota for a placement whose models were not known before (model = any). */
static int quota_check_placement(const struct drv_sched *s, const struct sched_job *j,
				 const struct drv_placement *pl, struct drv_sched_decision *w)
{
	int64_t by[DRV_MAX_MODELS];
	int32_t i;
	int m, rc = 0, r;
	if (!s->tenants[j->tenant].has_quota)
		return 0;
	memset(by, 0, sizeof(by));
	for (i = 0; i < pl->ntasks; i++) {
		int32_t n = pl->tasks[i].node;
		m = n >= 0 && n < s->c->nnodes ? s->c->nodes[n].model : -1;
		if (m >= 0 && m < DRV_MAX_MODELS)
			by[m] += (int64_t)pl->tasks[i].gpu_milli *
				 __builtin_popcountll(pl->tasks[i].gpu_mask);
	}
	for (m = 0; m < DRV_MAX_MODELS; m++) {
		if (!by[m])
			continue;
		r = quota_check(s, j->tenant, m, by[m], w);
		if (r < 0)
			return -1;
		if (r > 0)
			rc = 1;
	}
	return rc;
}

/* ---- reservation blocks ------------------------------------------------- */

static void block_one(struct drv_cluster *c, struct drv_placement *blk, int32_t node,
		      uint64_t mask, int32_t milli)
{
	struct drv_placement one;
	DRV_GROW(blk->tasks, (size_t)blk->ntasks + 1, blk->cap);
	memset(&blk->tasks[blk->ntasks], 0, sizeof(blk->tasks[0]));
	blk->tasks[blk->ntasks].node = node;
	blk->tasks[blk->ntasks].gpu_milli = milli;
	blk->tasks[blk->ntasks].gpu_mask = mask;
	one.tasks = &blk->tasks[blk->ntasks];
	one.ntasks = 1;
	one.cap = 1;
	drv_cluster_commit(c, &one);
	blk->ntasks++;
}

/*
 * Blocks what is free now of the GPUs in mask on node: whole free GPUs as
 * one synthetic task, what is left of partly used ones (fractional tasks)
 * one task each, so no new task lands there. Returns the GPUs touched.
 */
static int block_gpus(struct drv_cluster *c, struct drv_placement *blk, int32_t node,
		      uint64_t mask)
{
	const struct drv_node *nd = &c->nodes[node];
	uint64_t m, whole = 0;
	int n = 0;
	for (m = mask; m; m &= m - 1) {
		int g = __builtin_ctzll(m);
		if (g >= nd->ngpus || nd->gpu_milli_used[g] >= DRV_MILLI)
			continue;
		n++;
		if (nd->gpu_milli_used[g] == 0)
			whole |= 1ull << g;
		else
			block_one(c, blk, node, 1ull << g, DRV_MILLI - nd->gpu_milli_used[g]);
	}
	if (whole)
		block_one(c, blk, node, whole, DRV_MILLI);
	return n;
}

/* Blocks pl's GPUs as far as they are free now, appending to blk. */
static void block_add(struct drv_cluster *c, struct drv_placement *blk,
		      const struct drv_placement *pl, int64_t *gpus, int32_t *maxt)
{
	int32_t i;
	for (i = 0; i < pl->ntasks; i++) {
		const struct drv_task_place *t = &pl->tasks[i];
		int n;
		if (t->node < 0 || t->node >= c->nnodes)
			continue;
		n = block_gpus(c, blk, t->node, t->gpu_mask);
		*gpus += n;
		if (n > *maxt)
			*maxt = n;
	}
}

static void blocks_off(struct pass *p)
{
	if (!p->blocked_on)
		return;
	drv_cluster_uncommit(p->c, &p->s->block);
	p->s->block.ntasks = 0;
	p->blocked_on = false;
	p->blocked_gpus = 0;
	p->blocked_max = 0;
}

static void blocks_on(struct pass *p)
{
	struct drv_sched *s = p->s;
	int32_t i;
	if (p->blocked_on)
		return;
	s->block.ntasks = 0;
	for (i = 0; i < s->nresv; i++)
		block_add(p->c, &s->block, &s->resv[i].pl, &p->blocked_gpus, &p->blocked_max);
	p->blocked_on = true;
}

static void resv_add(struct pass *p, int32_t slot, int64_t at, const struct drv_placement *pl,
		     bool nominated)
{
	struct drv_sched *s = p->s;
	struct reservation *r;
	int32_t i;
	if ((size_t)s->nresv + 1 > s->resvcap) {
		size_t old = s->resvcap;
		DRV_GROW(s->resv, (size_t)s->nresv + 1, s->resvcap);
		for (i = (int32_t)old; i < (int32_t)s->resvcap; i++)
			drv_placement_init(&s->resv[i].pl);
	}
	r = &s->resv[s->nresv++];
	r->job = slot;
	r->at = at;
	r->nominated = nominated;
	drv_placement_copy(&r->pl, pl);
	for (i = 0; i < pl->ntasks; i++)
		if (pl->tasks[i].node >= 0 && pl->tasks[i].node < s->nnodes_seen)
			s->resv_mask[pl->tasks[i].node] |= pl->tasks[i].gpu_mask;
	if (at < p->t_min) {
		p->t_min = at;
		p->first_resv = s->nresv - 1;
	}
	if (p->blocked_on)
		block_add(p->c, &s->block, &r->pl, &p->blocked_gpus, &p->blocked_max);
}

/* Removes slot's reservation (a nomination it may now use itself). */
static void resv_drop(struct pass *p, int32_t slot)
{
	struct drv_sched *s = p->s;
	int32_t i, k, r;
	for (i = 0; i < s->nresv; i++) {
		struct reservation t;
		if (s->resv[i].job != slot)
			continue;
		t = s->resv[i];
		memmove(&s->resv[i], &s->resv[i + 1], (size_t)(s->nresv - i - 1) * sizeof(*s->resv));
		s->resv[s->nresv - 1] = t; /* keep its buffer for reuse */
		s->nresv--;
		/* its GPUs are no longer reserved (a later sweep must not keep
		 * them out of reach): rebuild the masks of its nodes */
		for (k = 0; k < t.pl.ntasks; k++)
			if (t.pl.tasks[k].node >= 0 && t.pl.tasks[k].node < s->nnodes_seen)
				s->resv_mask[t.pl.tasks[k].node] = 0;
		for (r = 0; r < s->nresv; r++)
			for (k = 0; k < s->resv[r].pl.ntasks; k++) {
				const struct drv_task_place *tp = &s->resv[r].pl.tasks[k];
				if (tp->node >= 0 && tp->node < s->nnodes_seen)
					s->resv_mask[tp->node] |= tp->gpu_mask;
			}
		break;
	}
	p->t_min = T_INF;
	for (i = 0; i < s->nresv; i++)
		if (s->resv[i].at < p->t_min) {
			p->t_min = s->resv[i].at;
			p->first_resv = i;
		}
	if (p->blocked_on) {
		blocks_off(p);
		blocks_on(p);
	}
}

/* ---- placement with the pool policy ------------------------------------- */

static int cmp_pool_cheap(const struct drv_sched *s, int32_t a, int32_t b)
{
	const struct drv_pool *x = &s->c->pools[a], *y = &s->c->pools[b];
	if (x->price_micro_per_gpu_hour != y->price_micro_per_gpu_hour)
		return x->price_micro_per_gpu_hour < y->price_micro_per_gpu_hour ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int cmp_pool_fast(const struct drv_sched *s, int32_t a, int32_t b)
{
	if (s->pool_speed[a] != s->pool_speed[b])
		return s->pool_speed[a] > s->pool_speed[b] ? -1 : 1;
	return cmp_pool_cheap(s, a, b);
}

/* The job's candidate pools in policy order; returns how many (0 = use the
 * whole cluster in one attempt). */
static int32_t pool_order(const struct pass *p, const struct sched_job *j, int32_t *out)
{
	const struct drv_sched *s = p->s;
	int32_t n = 0, i, k, np = DRV_MIN(s->c->npools, SCHED_MAX_POOLS);
	uint64_t mask = j->pool_mask ? j->pool_mask : s->all_pools;
	if (np <= 1)
		return 0;
	for (i = 0; i < np; i++) {
		if (!(mask >> i & 1))
			continue;
		/* insertion sort: a handful of pools */
		for (k = n; k > 0; k--) {
			int c = p->pol->pools == DRV_POOLS_FASTEST ? cmp_pool_fast(s, out[k - 1], i) :
								      cmp_pool_cheap(s, out[k - 1], i);
			if (c <= 0)
				break;
			out[k] = out[k - 1];
		}
		out[k] = i;
		n++;
	}
	return n;
}

struct place_fail {
	bool quick;        /* the aggregates said no */
	bool never;
	bool topology;
};

/*
 * Tries to place j now; 0 and pl/pool filled, or DRV_ENOSPACE with f
 * filled. Tries the job's pools in policy order, each behind a cheap
 * aggregate test.
 */
static int try_place(struct pass *p, const struct sched_job *j, struct drv_placement *pl,
		     int32_t *pool, struct place_fail *f)
{
	struct drv_sched *s = p->s;
	struct drv_place_opts o;
	struct drv_place_info info;
	int32_t order[SCHED_MAX_POOLS], n, i;
	bool any_quick = false;

	memset(f, 0, sizeof(*f));
	*pool = -1;
	memset(&o, 0, sizeof(o));
	o.strategy = p->pol->place;
	o.info = &info;
	n = pool_order(p, j, order);
	if (n == 0) {
		if (!fits_quick(s, j, j->pool_mask)) {
			f->quick = true;
			return DRV_ENOSPACE;
		}
		o.pool_mask = j->pool_mask;
		memset(&info, 0, sizeof(info));
		if (drv_place(s->c, j->job, &o, pl, NULL, 0) == 0) {
			*pool = pl->ntasks > 0 && pl->tasks[0].node >= 0 ?
					s->c->nodes[pl->tasks[0].node].pool : -1;
			return 0;
		}
		f->never = info.never;
		f->topology = info.why == DRV_WHY_TOPOLOGY || info.why == DRV_WHY_FRAGMENTED;
		return DRV_ENOSPACE;
	}
	for (i = 0; i < n; i++) {
		uint64_t m = 1ull << order[i];
		if (!fits_quick(s, j, m))
			continue;
		any_quick = true;
		o.pool_mask = m;
		memset(&info, 0, sizeof(info));
		if (drv_place(s->c, j->job, &o, pl, NULL, 0) == 0) {
			*pool = order[i];
			return 0;
		}
		if (info.why == DRV_WHY_TOPOLOGY || info.why == DRV_WHY_FRAGMENTED)
			f->topology = true;
	}
	f->quick = !any_quick;
	return DRV_ENOSPACE;
}

/* ---- starting ----------------------------------------------------------- */

static int64_t placement_price(const struct drv_sched *s, const struct drv_placement *pl)
{
	int64_t sum = 0;
	int32_t i;
	for (i = 0; i < pl->ntasks; i++) {
		int32_t n = pl->tasks[i].node, po;
		if (n < 0 || n >= s->c->nnodes)
			continue;
		po = s->c->nodes[n].pool;
		if (po < 0 || po >= s->c->npools)
			continue;
		sum += s->c->pools[po].price_micro_per_gpu_hour *
		       (int64_t)pl->tasks[i].gpu_milli * __builtin_popcountll(pl->tasks[i].gpu_mask) /
		       DRV_MILLI;
	}
	return sum;
}

static void do_start(struct pass *p, int32_t slot, const struct drv_placement *pl,
		     uint32_t flags)
{
	struct drv_sched *s = p->s;
	struct sched_job *j = &s->jobs[slot];
	struct drv_sched_decision *d;
	uint64_t occ = s->occ_gen;

	j->state = DRV_SJ_RUNNING; /* stays in s->pend until the pass compacts it */
	sched__start(s, slot, pl, p->now);
	/* a start that respects this pass's reservations (it comes after them,
	 * on unreserved GPUs or ending before they start) does not move them */
	if (s->nresv > 0 && p->resv_cached)
		s->occ_gen = occ;
	if (j->pool >= 0 && j->pool < s->c->npools && s->c->pools[j->pool].spot)
		flags |= DRV_DEC_SPOT;
	d = dec_new(p, DRV_DEC_START);
	d->job = j->id;
	d->placement = &j->pl;
	d->pool = j->pool;
	d->at = j->end == T_INF ? 0 : j->end;
	d->n[0] = placement_price(s, &j->pl);
	d->flags = flags;
	p->nstarted++;
}

/* ---- reservations: the earliest time j fits ---------------------------- */

/*
 * Sweeps the running list in order of expected end, freeing each job's
 * resources (while keeping GPUs reserved for others blocked), until j can
 * be placed. Restores the cluster exactly. Returns the start time, or
 * T_INF when running jobs never free enough (unknown ends).
 */
static bool group_end(const struct drv_sched *s, int32_t i)
{
	return i + 1 >= s->nrun || s->jobs[s->run[i + 1]].end != s->jobs[s->run[i]].end;
}

static int64_t earliest(struct pass *p, const struct sched_job *j, struct drv_placement *pl)
{
	struct drv_sched *s = p->s;
	struct drv_cluster *c = p->c;
	struct drv_placement *sw = &s->scratch2; /* extra blocks made while sweeping */
	int64_t at = T_INF;
	int32_t i, k, n = 0, gap = 1, skip = 0, pool, fails = 0, lastfail = -1;
	bool skipped = false;
	struct place_fail f;

	sw->ntasks = 0;
	for (i = 0; i < s->nrun; i++) {
		struct sched_job *r = &s->jobs[s->run[i]];
		if (r->end == T_INF)
			break;
		drv_cluster_uncommit(c, &r->pl);
		n = i + 1;
		/* keep other reservations' GPUs out of reach */
		if (p->blocked_on)
			for (k = 0; k < r->pl.ntasks; k++) {
				const struct drv_task_place *t = &r->pl.tasks[k];
				if (t->node < 0 || t->node >= s->nnodes_seen ||
				    !(s->resv_mask[t->node] & t->gpu_mask))
					continue;
				block_gpus(c, sw, t->node, t->gpu_mask & s->resv_mask[t->node]);
			}
		/* jobs ending together free together */
		if (!group_end(s, i))
			continue;
		if (!fits_quick(s, j, j->pool_mask))
			continue;
		if (skip > 0) {
			skip--;
			skipped = true;
			continue;
		}
		if (try_place(p, j, pl, &pool, &f) == 0) {
			at = r->end > p->now ? r->end : p->now;
			break;
		}
		if (f.never)
			break;
		lastfail = i;
		skipped = false;
		/* after many exact tries, gallop: placement is dearer than
		 * freeing, so look less often the longer it keeps failing */
		if (++fails > GALLOP_AFTER) {
			skip = gap;
			gap *= 2;
		}
	}
	if (at != T_INF && skipped && lastfail >= 0 && sw->ntasks == 0) {
		/* galloped past points never tried: find the earliest between
		 * the last failure and the success, by halving */
		struct drv_placement *best = &s->scratch3;
		int32_t lo = lastfail, hi = i, cur = i;
		drv_placement_copy(best, pl);
		for (;;) {
			/* strictly between lo (failed) and hi (fits): else the
			 * same failing point is tried forever once hi = lo + 1 */
			int32_t m = lo + DRV_MAX(1, (hi - lo) / 2);
			while (m < hi && !group_end(s, m))
				m++;
			if (m >= hi) {
				m = lo + (hi - lo) / 2;
				while (m > lo && !group_end(s, m))
					m--;
				if (m <= lo)
					break;
			}
			for (; cur > m; cur--)
				drv_cluster_commit(c, &s->jobs[s->run[cur]].pl);
			for (; cur < m; cur++)
				drv_cluster_uncommit(c, &s->jobs[s->run[cur + 1]].pl);
			if (fits_quick(s, j, j->pool_mask) && try_place(p, j, pl, &pool, &f) == 0) {
				hi = m;
				drv_placement_copy(best, pl);
			} else {
				lo = m;
			}
		}
		for (; cur > hi; cur--)
			drv_cluster_commit(c, &s->jobs[s->run[cur]].pl);
		for (; cur < hi; cur++)
			drv_cluster_uncommit(c, &s->jobs[s->run[cur + 1]].pl);
		n = hi + 1;
		at = DRV_MAX(s->jobs[s->run[hi]].end, p->now);
		drv_placement_copy(pl, best);
	}
	drv_cluster_uncommit(c, sw);
	sw->ntasks = 0;
	for (i = n - 1; i >= 0; i--)
		drv_cluster_commit(c, &s->jobs[s->run[i]].pl);
	return at;
}

/*
 * The first reservation of a pass, reused from the last pass when nothing
 * that could move it happened since: the same job, no start, no end moved,
 * nothing freed, no node changed, the same placement settings. (Anything
 * freed could make it earlier, so that recomputes too.)
 */
static int64_t earliest_cached(struct pass *p, const struct sched_job *j, struct drv_placement *pl)
{
	struct drv_sched *s = p->s;
	int64_t at;
	bool cacheable = s->nresv == 0;
	if (cacheable && s->resv_cache.valid && s->resv_cache.id == j->id && s->resv_cache.occ == s->occ_gen &&
	    s->resv_cache.free == s->free_gen && s->resv_cache.at >= p->now &&
	    s->resv_cache.default_runtime == p->pol->default_runtime_s &&
	    s->resv_cache.place == (int32_t)p->pol->place && s->resv_cache.pools == (int32_t)p->pol->pools) {
		drv_placement_copy(pl, &s->resv_cache.pl);
		p->resv_cached = true;
		return s->resv_cache.at;
	}
	at = earliest(p, j, pl);
	s->resv_cache.valid = cacheable && at != T_INF;
	if (s->resv_cache.valid) {
		s->resv_cache.id = j->id;
		s->resv_cache.at = at;
		s->resv_cache.occ = s->occ_gen;
		s->resv_cache.free = s->free_gen;
		s->resv_cache.default_runtime = p->pol->default_runtime_s;
		s->resv_cache.place = (int32_t)p->pol->place;
		s->resv_cache.pools = (int32_t)p->pol->pools;
		drv_placement_copy(&s->resv_cache.pl, pl);
		p->resv_cached = true;
	}
	return at;
}

/* ---- preemption --------------------------------------------------------- */

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

/*
 * Looks for whole gangs whose removal lets j be placed: candidates in
 * order of least priority then least work lost; frees them one by one
 * (on a scratch basis: everything is put back) until j fits, then keeps
 * only those the found placement actually overlaps. Returns true and
 * applies the preemption (victims terminating, j nominated) when found.
 */
/* May any running job be a reclaim victim for j (a job within its nominal
 * quota, of a tenant with a cohort)? Only if a cohort peer uses more than
 * its nominal quota of a model j's tenant has a quota of. */
static bool reclaim_possible(const struct drv_sched *s, const struct sched_job *j)
{
	const struct sched_tenant *jt = &s->tenants[j->tenant];
	int32_t i;
	for (i = 0; i < s->ntenants; i++) {
		const struct sched_tenant *o = &s->tenants[i];
		uint32_t both = o->quota_models & jt->quota_models;
		if (i == j->tenant || o->cohort != jt->cohort)
			continue;
		while (both) {
			int m = __builtin_ctz(both);
			both &= both - 1;
			if (o->usage[m] > o->quota[m])
				return true;
		}
	}
	return false;
}

static bool try_preempt(struct pass *p, int32_t slot, int quota_rc)
{
	struct drv_sched *s = p->s;
	struct drv_cluster *c = p->c;
	struct sched_job *j = &s->jobs[slot];
	struct victim_cand *cands;
	struct drv_placement *pl = &s->scratch;
	int32_t i, nc = 0, taken = 0, pool, gap = 1, skip = 0, nv = 0, fails = 0;
	int64_t room = 0, borrowed[64];
	struct avail a;
	struct place_fail f;
	bool found = false, reclaim = false;
	int32_t jq = p->pol->order == DRV_ORDER_LAS ? sched__las_queue(p->pol, j->attained) : 0;
	const struct sched_tenant *jt = &s->tenants[j->tenant];
	uint64_t mask = j->pool_mask;
	struct drv_sched_decision *d;
	int64_t lost = 0, topprio = INT64_MIN;

	if (j->never_preempts || s->nrun == 0)
		return false;
	if (p->pol->order == DRV_ORDER_LAS && !p->las_queues_done) {
		/* running jobs' LAS queues as of now, once a pass */
		for (i = 0; i < s->nrun; i++) {
			struct sched_job *v = &s->jobs[s->run[i]];
			v->las_queue = sched__las_queue(p->pol, v->attained + (p->now - v->start) * v->need_milli);
			s->run_compact[i].las_queue = v->las_queue;
		}
		p->las_queues_done = true;
		s->victim_bounds.dirty = true;
	}
	for (i = 0; i < p->nfailed; i++) {
		const struct failed_shape *f0 = &p->failed[i];
		if (f0->need_milli == j->need_milli && f0->need_whole == j->need_whole &&
		    f0->max_task == j->max_task && f0->full_tasks == j->full_tasks &&
		    f0->min_frac == j->min_frac && f0->level == j->level && f0->model == j->model &&
		    f0->prio == j->prio && f0->tenant == j->tenant && f0->pool_mask == j->pool_mask &&
		    f0->preempted_by == j->preempted_by && f0->nstarted == p->nstarted &&
		    f0->nresv == s->nresv && f0->blk == s->block.ntasks && f0->jq == jq &&
		    quota_rc == 0) {
			/* a job just like it failed this pass and nothing started
			 * since: so does this one */
			if (f0->tried)
				p->tries++;
			return false;
		}
	}
	if (j->preempt_memo.valid && j->preempt_memo.rel == s->rel_gen && j->preempt_memo.start == s->start_gen &&
	    p->now < j->preempt_memo.until && j->preempt_memo.nresv == s->nresv && j->preempt_memo.blk == s->block.ntasks &&
	    j->preempt_memo.t_min == p->t_min && p->pol->order != DRV_ORDER_LAS) {
		/* nothing was freed or started and no job came of age since the
		 * same search failed: it fails again (and counts as it did) */
		if (j->preempt_memo.tried)
			p->tries++;
		return false;
	}
	j->preempt_memo.valid = true;
	j->preempt_memo.tried = false;
	j->preempt_memo.rel = s->rel_gen;
	j->preempt_memo.start = s->start_gen;
	j->preempt_memo.until = T_INF;
	j->preempt_memo.nresv = s->nresv;
	j->preempt_memo.blk = s->block.ntasks;
	j->preempt_memo.t_min = p->t_min;
	if (quota_rc != 0 || jt->cohort < 0 || !reclaim_possible(s, j)) {
		/* no reclaim: a victim must be of lower priority, or (LAS) of
		 * the same priority in a higher queue; when no running job is,
		 * the scan below would find none (most searches under LAS with
		 * a long queue end here) */
		sched__victim_bounds_refresh(s);
		if (s->victim_bounds.least_prio > j->prio ||
		    (s->victim_bounds.least_prio == j->prio &&
		     (p->pol->order != DRV_ORDER_LAS || s->victim_bounds.most_las_queue <= jq))) {
			/* the scan would have lowered preempt_memo.until for young jobs of
			 * the same priority under LAS (of any priority where
			 * reclaim could apply); the memo is dropped then, so no
			 * later search reads a memo the scan would not have left.
			 * (Without it the next search comes here again and fails
			 * without counting a try, as a memo hit would.) */
			if (p->pol->order == DRV_ORDER_LAS || (quota_rc == 0 && jt->cohort >= 0))
				j->preempt_memo.valid = false;
			return false;
		}
	}
	DRV_GROW(s->scratch_slots, (size_t)s->nrun * (sizeof(struct victim_cand) / sizeof(int32_t) + 1), s->scratch_slots_cap);
	cands = (struct victim_cand *)(void *)s->scratch_slots;
	memset(borrowed, 0, sizeof(borrowed));

	for (i = 0; i < s->nrun; i++) {
		const struct run_compact *v = &s->run_compact[i];
		bool by_prio, by_las = false, by_reclaim = false;
		int32_t vm;
		if (!v->ok || v->slot == slot)
			continue;
		if ((quota_rc != 0 || jt->cohort < 0) &&
		    (v->prio > j->prio || (v->prio == j->prio && p->pol->order != DRV_ORDER_LAS)))
			continue; /* can be neither a priority, a LAS nor a reclaim victim */
		if (p->now - v->start < p->pol->min_run_s) {
			if (v->start + p->pol->min_run_s < j->preempt_memo.until)
				j->preempt_memo.until = v->start + p->pol->min_run_s;
			continue;
		}
		if (j->preempted_by && v->id == j->preempted_by)
			continue; /* no ping-pong */
		if (mask && (v->pool < 0 || !(mask >> v->pool & 1)))
			continue;
		vm = v->place_model;
		if (j->model >= 0 && vm != j->model)
			continue;
		by_prio = v->prio < j->prio;
		if (!by_prio && p->pol->order == DRV_ORDER_LAS && v->prio <= j->prio)
			by_las = v->las_queue > jq;
		if (!by_prio && !by_las && quota_rc == 0 && jt->cohort >= 0 && v->tenant != j->tenant &&
		    s->tenants[v->tenant].cohort == jt->cohort && vm >= 0 && vm < DRV_MAX_MODELS) {
			const struct sched_tenant *vt = &s->tenants[v->tenant];
			by_reclaim = vt->quota[vm] >= 0 && vt->usage[vm] > vt->quota[vm] &&
				     jt->quota[vm] >= 0;
		}
		if (!by_prio && !by_las && !by_reclaim)
			continue;
		cands[nc].slot = v->slot;
		cands[nc].prio = by_reclaim ? INT32_MIN : v->prio;
		cands[nc].reclaim_only = by_reclaim;
		cands[nc].lost = (p->now - v->start) * v->need_milli;
		room += v->need_milli;
		nc++;
	}
	if (nc == 0)
		return false;
	job_avail(s, j, mask, &a);
	if (a.milli + room < j->need_milli)
		return false;
	/* a total order: (priority, work lost, id) */
	qsort_r(cands, (size_t)nc, sizeof(*cands), cmp_victim_cand, s);
	p->tries++;
	j->preempt_memo.tried = true;
	for (i = 0; i < nc; i++) {
		struct sched_job *v = &s->jobs[cands[i].slot];
		if (cands[i].reclaim_only) {
			int32_t vt = v->tenant, vm = placement_model(s, &v->pl);
			int64_t over = s->tenants[vt].usage[vm] - s->tenants[vt].quota[vm];
			if (vt < 64 && over - borrowed[vt] <= 0)
				continue; /* that tenant is back within its quota */
			if (vt < 64)
				borrowed[vt] += v->need_milli;
		}
		drv_cluster_uncommit(c, &v->pl);
		cands[taken++] = cands[i];
		if (!fits_quick(s, j, mask))
			continue;
		if (skip > 0 && i + 1 < nc) {
			skip--;
			continue;
		}
		if (try_place(p, j, pl, &pool, &f) == 0) {
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
	/* put everything back */
	for (i = taken - 1; i >= 0; i--)
		drv_cluster_commit(c, &s->jobs[cands[i].slot].pl);
	if (!found) {
		if (p->nfailed < (int32_t)DRV_ARRAY_SIZE(p->failed) && quota_rc == 0) {
			struct failed_shape *f0 = &p->failed[p->nfailed++];
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
			f0->nresv = s->nresv;
			f0->blk = s->block.ntasks;
			f0->tried = true;
			f0->jq = jq;
		}
		return false;
	}
	j->preempt_memo.valid = false;

	/* keep only the victims the placement needs */
	d = dec_new(p, DRV_DEC_PREEMPT);
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
		v->state = DRV_SJ_TERMINATING;
		v->grace = p->now + p->pol->grace_s;
		v->preempted_by = j->id;
		if (v->grace < v->end) {
			sched__run_remove(s, cands[i].slot);
			v->end = v->grace;
			sched__run_insert(s, cands[i].slot);
		}
		s->occ_gen++;
	}
	sched__run_compact_rebuild(s); /* victims are terminating now */
	qsort(&p->out->ids[p->out->nids], (size_t)nv, sizeof(uint64_t), cmp_u64);
	/* d may have moved if dec_new grew; it did not: ids are a separate array */
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
	drv_placement_copy(&j->nomination, pl);
	d->placement = &j->nomination;
	j->victims_left = nv;
	j->nomination_deadline = d->at;
	sched__pend_compact_refresh(s, slot); /* a preemptor is never skipped */
	return true;
}

/* ---- elastic pools ------------------------------------------------------ */

static void consider_provision(struct pass *p, struct sched_job *j)
{
	struct drv_sched *s = p->s;
	const struct drv_cluster *c = p->c;
	int32_t order[SCHED_MAX_POOLS], n, i, po;
	struct drv_sched_decision w;

	if (p->pol->grow_wait_s <= 0 || p->now - j->submit < p->pol->grow_wait_s)
		return;
	n = pool_order(p, j, order);
	if (n == 0) {
		for (po = 0; po < c->npools && po < SCHED_MAX_POOLS; po++)
			if (!j->pool_mask || (j->pool_mask >> po & 1))
				order[n++] = po;
	}
	for (i = 0; i < n; i++) {
		const struct drv_pool *pool;
		int32_t per, need;
		po = order[i];
		pool = &c->pools[po];
		if (!pool->elastic || pool->max_nodes <= 0)
			continue;
		per = s->pool_tmpl_gpus[po];
		if (per <= 0 || per < j->max_task ||
		    (j->model >= 0 && s->pool_tmpl_model[po] != j->model))
			continue;
		if (s->pool_inflight[po] > 0) {
			why_init(&w, DRV_REASON_PROVISIONING);
			w.pool = po;
			w.count = s->pool_inflight[po];
			set_why(p, j, &w);
			return;
		}
		need = (int32_t)((DRV_MAX(j->need_whole * (int64_t)DRV_MILLI, j->need_milli) +
				  (int64_t)per * DRV_MILLI - 1) / ((int64_t)per * DRV_MILLI));
		if (s->pool_nodes[po] + p->prov_add[po] + need > pool->max_nodes)
			continue;
		if (!p->prov_add[po])
			p->prov_job[po] = j->id;
		p->prov_add[po] += need;
		why_init(&w, DRV_REASON_PROVISIONING);
		w.pool = po;
		w.count = need;
		set_why(p, j, &w);
		return;
	}
}

static void releases(struct pass *p)
{
	struct drv_sched *s = p->s;
	struct drv_cluster *c = p->c;
	int32_t i, changed = 0;
	if (p->pol->idle_release_s <= 0)
		return;
	for (i = 0; i < c->nnodes && i < s->nnodes_seen; i++) {
		const struct drv_node *n = &c->nodes[i];
		struct drv_sched_decision *d;
		int g;
		bool busy = false;
		if (n->pool < 0 || n->pool >= c->npools || !c->pools[n->pool].elastic ||
		    n->state != DRV_NODE_UP)
			continue;
		if (s->idle_since[i] < 0 || p->now - s->idle_since[i] < p->pol->idle_release_s)
			continue;
		for (g = 0; g < n->ngpus; g++)
			if (n->gpu_milli_used[g])
				busy = true;
		if (busy || n->cpu_used || n->mem_used || s->resv_mask[i])
			continue;
		drv_cluster_set_node_state(c, i, DRV_NODE_DOWN);
		d = dec_new(p, DRV_DEC_RELEASE);
		d->pool = n->pool;
		d->node = i;
		changed++;
	}
	if (changed) {
		s->occ_gen++;
		sched__refresh_cluster(s);
	}
}

/* ---- the queue ---------------------------------------------------------- */

/* The sort key, copied out so a full sort does not chase pointers. */
struct pend_sort_key {
	int64_t key_prio;
	int64_t key_policy;
	int64_t submit;
	uint64_t id;
	int32_t slot;
};

static int cmp_sort_key(const void *a, const void *b)
{
	const struct pend_sort_key *x = a, *y = b;
	if (x->key_prio != y->key_prio)
		return x->key_prio > y->key_prio ? -1 : 1;
	if (x->key_policy != y->key_policy)
		return x->key_policy < y->key_policy ? -1 : 1;
	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void sort_pending(struct drv_sched *s)
{
	struct pend_sort_key *k = drv_malloc((size_t)s->npend * sizeof(*k) + 1);
	int32_t i;
	for (i = 0; i < s->npend; i++) {
		const struct sched_job *j = &s->jobs[s->pend[i]];
		k[i].key_prio = j->key_prio;
		k[i].key_policy = j->key_policy;
		k[i].submit = j->submit;
		k[i].id = j->id;
		k[i].slot = s->pend[i];
	}
	qsort(k, (size_t)s->npend, sizeof(*k), cmp_sort_key);
	for (i = 0; i < s->npend; i++)
		s->pend[i] = k[i].slot;
	drv_free(k);
}

/* Re-keys every pending job at now and re-sorts when the keys moved. */
static void rekey(struct pass *p)
{
	struct drv_sched *s = p->s;
	const struct drv_sched_policy *pol = p->pol;
	const struct drv_sched_policy *kp = &s->keyed_pol;
	bool same = s->keys_valid && kp->order == pol->order &&
		    kp->aging_interval_s == pol->aging_interval_s &&
		    kp->aging_step == pol->aging_step && kp->aging_max == pol->aging_max &&
		    kp->nlas == pol->nlas &&
		    !memcmp(kp->las_threshold, pol->las_threshold, sizeof(pol->las_threshold));
	int32_t i, moved = 0;
	int64_t next = T_INF;

	if (kp->default_runtime_s != pol->default_runtime_s) {
		s->keyed_pol.default_runtime_s = pol->default_runtime_s;
		s->occ_gen++;
		for (i = 0; i < s->nrun; i++) {
			struct sched_job *r = &s->jobs[s->run[i]];
			int64_t d = r->dur > 0 ? r->dur : pol->default_runtime_s;
			r->end = d > 0 ? r->start + d : T_INF;
			if (r->state == DRV_SJ_TERMINATING && r->grace < r->end)
				r->end = r->grace;
		}
		/* re-sort the running list by (end, id) */
		for (i = 1; i < s->nrun; i++) {
			int32_t k = i, x = s->run[i];
			while (k > 0) {
				const struct sched_job *a = &s->jobs[s->run[k - 1]], *b = &s->jobs[x];
				if (a->end < b->end || (a->end == b->end && a->id < b->id))
					break;
				s->run[k] = s->run[k - 1];
				k--;
			}
			s->run[k] = x;
		}
		sched__run_compact_rebuild(s);
	}
	if (same && p->now < s->next_age)
		return;
	s->keyed_pol = *pol;
	s->keys_at = p->now;
	s->keys_valid = true;
	for (i = 0; i < s->npend; i++) {
		struct sched_job *j = &s->jobs[s->pend[i]];
		sched__key(s, j, p->now, pol);
		if (j->next_age < next)
			next = j->next_age;
	}
	s->next_age = next;
	s->pend_compact_stale = true; /* the compact copies hold the keys too */
	for (i = 1; i < s->npend; i++)
		if (sched__cmp_pend(s, s->pend[i - 1], s->pend[i]) > 0)
			moved++;
	if (!moved)
		return;
	s->pend_compact_stale = true;
	if (moved < 64) {
		/* a few moved: insertion sort is linear-ish */
		for (i = 1; i < s->npend; i++) {
			int32_t k = i, x = s->pend[i];
			while (k > 0 && sched__cmp_pend(s, s->pend[k - 1], x) > 0) {
				s->pend[k] = s->pend[k - 1];
				k--;
			}
			s->pend[k] = x;
		}
		return;
	}
	sort_pending(s);
}

/* ---- one job ------------------------------------------------------------ */

/* Upper bound: could j fit if the reserved GPUs were free? */
static bool fits_with_blocked(const struct pass *p, const struct sched_job *j)
{
	struct avail a;
	job_avail(p->s, j, j->pool_mask, &a);
	a.whole += p->blocked_gpus;
	a.nodes += p->blocked_gpus;
	a.milli += p->blocked_gpus * DRV_MILLI;
	a.maxnode = DRV_MIN(a.maxnode + p->blocked_max, p->s->max_node_gpus);
	a.maxlevel += (int32_t)DRV_MIN(p->blocked_gpus, INT32_MAX - a.maxlevel);
	return avail_fits(j, &a);
}

static void count_blocked(struct pass *p, const struct sched_job *j)
{
	if (p->nblocked++ == 0)
		p->first_blocked = j->id;
}

/* Exact: would j fit now without the reservations' blocks? */
static bool fits_unblocked(struct pass *p, const struct sched_job *j)
{
	struct place_fail f;
	int32_t pool;
	int rc;
	blocks_off(p);
	rc = try_place(p, j, &p->s->scratch2, &pool, &f);
	blocks_on(p);
	return rc == 0;
}

static void resources_why(struct pass *p, const struct sched_job *j, const struct place_fail *f,
			  struct drv_sched_decision *w)
{
	struct avail a;
	job_avail(p->s, j, j->pool_mask, &a);
	why_init(w, f->topology ? DRV_REASON_TOPOLOGY : DRV_REASON_RESOURCES);
	w->n[0] = j->need_milli;
	w->n[1] = j->need_whole > 0 ? DRV_MIN(a.whole * DRV_MILLI, a.milli) : a.milli;
	w->n[2] = j->max_task;
	w->n[3] = a.maxnode;
	w->level = j->level;
	if (f->topology)
		w->n[2] = w->n[3] = 0;
	/* It would fit now if reserved GPUs were free: say so. */
	if (p->s->nresv > 0 && p->blocked_gpus > 0 && p->exact_left > 0 && fits_with_blocked(p, j) &&
	    (p->exact_left--, fits_unblocked(p, j))) {
		const struct reservation *r = &p->s->resv[p->first_resv];
		why_init(w, DRV_REASON_RESERVATION);
		w->n[0] = (int64_t)p->s->jobs[r->job].id;
		w->at = r->at;
	}
}

static void scan_one(struct pass *p, int32_t slot)
{
	struct drv_sched *s = p->s;
	const struct drv_sched_policy *pol = p->pol;
	struct sched_job *j = &s->jobs[slot];
	struct drv_placement *pl = &s->scratch;
	struct drv_sched_decision w;
	struct place_fail f;
	int32_t pool;
	int qrc = 0, rc;
	bool reason_blocks, own_nom = false;

	if (j->victims_left > 0) {
		/* its nominated placement is already held (pass start) */
		why_init(&w, DRV_REASON_PREEMPTING);
		w.n[0] = j->victims_left;
		w.at = j->nomination_deadline;
		set_why(p, j, &w);
		count_blocked(p, j);
		return;
	}
	if (j->nomination.ntasks > 0) {
		/* its victims are gone: the held placement is its own to use;
		 * it no longer stands as the pass's reservation, so the next
		 * blocked job gets one (and skipping waits for that) */
		resv_drop(p, slot);
		sched__nomination_drop(s, slot);
		if (p->nresv_made > 0)
			p->nresv_made--;
		own_nom = true;
	}
	if (j->never) {
		why_init(&w, DRV_REASON_NEVER);
		w.n[0] = j->need_milli;
		w.n[1] = j->cap_milli;
		set_why(p, j, &w);
		return;
	}
	if (pol->mode == DRV_MODE_STRICT && p->nblocked > 0 && !own_nom) {
		/* (a preemptor whose victims are gone was granted its GPUs
		 * when it preempted: no blocked job could use them) */
		why_init(&w, DRV_REASON_PRIORITY);
		w.n[0] = (int64_t)p->first_blocked;
		set_why(p, j, &w);
		return;
	}
	if (s->tenants[j->tenant].has_quota && !j->quota_any_model) {
		qrc = quota_check(s, j->tenant, j->quota_model, j->need_milli, &w);
		if (qrc < 0) {
			set_why(p, j, &w);
			j->quota_seq = s->quota_seq; /* the same answer until quota_seq moves */
			return;
		}
	}

	if (j->fail_gen == s->rel_gen) {
		/* nothing was freed since it last failed with nothing reserved:
		 * it fails again (placement only gets harder as the cluster fills) */
		rc = DRV_ENOSPACE;
		memset(&f, 0, sizeof(f));
		f.topology = j->fail_topo;
	} else {
		rc = try_place(p, j, pl, &pool, &f);
		if (rc && !f.never && s->block.ntasks == 0) {
			j->fail_gen = s->rel_gen;
			j->fail_topo = f.topology;
		}
	}
	if (rc && s->nresv > 0 && p->blocked_gpus > 0 && j->dur > 0 &&
	    p->now + j->dur <= p->t_min && fits_with_blocked(p, j)) {
		/* short enough to be gone before any reservation starts */
		struct place_fail f2;
		blocks_off(p);
		rc = try_place(p, j, pl, &pool, &f2);
		if (rc == 0 && j->quota_any_model)
			qrc = quota_check_placement(s, j, pl, &w);
		if (rc == 0 && qrc >= 0)
			do_start(p, slot, pl,
				 (p->nblocked && !own_nom ? DRV_DEC_BACKFILLED : 0) |
					 (qrc > 0 ? DRV_DEC_BORROWING : 0));
		blocks_on(p);
		if (rc == 0) {
			if (qrc < 0)
				set_why(p, j, &w);
			return;
		}
	} else if (rc == 0) {
		if (j->quota_any_model) {
			qrc = quota_check_placement(s, j, pl, &w);
			if (qrc < 0) {
				set_why(p, j, &w);
				return;
			}
		}
		do_start(p, slot, pl,
			 (p->nblocked && !own_nom ? DRV_DEC_BACKFILLED : 0) |
				 (qrc > 0 ? DRV_DEC_BORROWING : 0));
		return;
	}

	if (f.never) {
		j->never = true;
		why_init(&w, DRV_REASON_NEVER);
		w.n[0] = j->need_milli;
		w.n[1] = j->cap_milli;
		set_why(p, j, &w);
		return;
	}
	resources_why(p, j, &f, &w);
	if (pol->preemption && !j->never_preempts && p->tries < pol->max_preempt_tries &&
	    try_preempt(p, slot, qrc)) {
		why_init(&w, DRV_REASON_PREEMPTING);
		w.n[0] = j->victims_left;
		w.at = j->nomination_deadline;
		set_why(p, j, &w);
		resv_add(p, slot, j->nomination_deadline, &j->nomination, true);
		count_blocked(p, j);
		return;
	}
	if (pol->preemption && !j->never_preempts &&
	    (w.reason == DRV_REASON_RESOURCES || w.reason == DRV_REASON_TOPOLOGY))
		w.flags |= DRV_DEC_NO_VICTIMS;
	if (pol->preemption && j->never_preempts &&
	    (w.reason == DRV_REASON_RESOURCES || w.reason == DRV_REASON_TOPOLOGY))
		w.flags |= DRV_DEC_CLASS_NEVER;
	reason_blocks = w.reason == DRV_REASON_RESOURCES || w.reason == DRV_REASON_TOPOLOGY ||
			w.reason == DRV_REASON_RESERVATION;
	if (reason_blocks && pol->mode != DRV_MODE_GREEDY) {
		int32_t depth = pol->mode == DRV_MODE_BACKFILL && pol->conservative_depth > 1 ?
					pol->conservative_depth : 1;
		if (p->nresv_made < depth) {
			int64_t at;
			p->nresv_made++;
			at = earliest_cached(p, j, pl);
			if (at != T_INF) {
				resv_add(p, slot, at, pl, false);
				why_init(&w, DRV_REASON_RESERVED);
				w.at = at;
			}
		}
		count_blocked(p, j);
	}
	set_why(p, j, &w);
	if (reason_blocks || w.reason == DRV_REASON_RESERVED)
		consider_provision(p, j);
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
	if (pol->preemption) {
		if (pol->order == DRV_ORDER_LAS)
			return;
		for (i = 0; i < s->ntenants; i++)
			if (s->tenants[i].cohort >= 0 && s->tenants[i].has_quota)
				return; /* reclaim may preempt whatever the priority */
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

/* What the tight skip loop compares the compact entries with. */
struct bounds {
	int64_t ns, nl;    /* free whole nodes: strict, and counting reserved ones */
	int64_t ws, wl;    /* free whole GPUs: strict, and counting reserved ones */
	int32_t ms, ml;    /* most free on one node: the same two ways */
	int32_t part;      /* most free milli on a partly used GPU */
	int64_t short_d;   /* a job this short may use reserved GPUs */
	bool loosen;
	bool preempt;      /* preemption searches left */
	int32_t minprio;   /* least priority of a preemptible running job */
};

static void bounds_get(const struct pass *p, struct bounds *b)
{
	const struct drv_vertex *r = &p->c->vertices[0];
	b->ws = r->free_gpus;
	b->ns = r->free_nodes;
	b->nl = b->ns + p->blocked_gpus;
	b->ms = r->max_node_free;
	b->part = r->max_part_free;
	b->loosen = p->blocked_gpus > 0;
	b->short_d = p->t_min == T_INF ? T_INF : p->t_min - p->now;
	b->wl = b->ws + p->blocked_gpus;
	b->ml = DRV_MIN(b->ms + p->blocked_max, p->s->max_node_gpus);
	b->preempt = p->pol->preemption && p->tries < p->pol->max_preempt_tries;
	b->minprio = p->min_prio_victim;
}

/* What a job may count on: free GPUs (w), the most on one node (m) and
 * whole free nodes (n); with the reserved ones when it is short enough to
 * end before their reservation starts. */
static inline void limits(const struct bounds *b, bool short_job, int64_t *w, int32_t *m,
			  int64_t *n)
{
	bool loose = b->loosen && short_job;
	*w = loose ? b->wl : b->ws;
	*m = loose ? b->ml : b->ms;
	*n = loose ? b->nl : b->ns;
}

/* True when the job surely can neither start (even on reserved GPUs, if it
 * is short) nor preempt, nor is anything but "resources". */
static inline bool skip_h(const struct bounds *b, const struct pend_compact *h)
{
	int64_t w, n;
	int32_t m;
	if (h->never)
		return true;
	if (h->gpuless || h->held)
		return false; /* a preemptor: its held placement frees no root GPU */
	if (b->preempt && h->prio > b->minprio)
		return false;
	limits(b, h->dur > 0 && h->dur <= b->short_d, &w, &m, &n);
	if (h->need_whole > w || h->max_task > m || h->full_tasks > n)
		return true;
	if (h->min_frac > 0 && w == 0 && h->min_frac > b->part)
		return true;
	return false;
}

static void set_tail(struct pass *p, enum drv_sched_reason why)
{
	struct drv_sched *s = p->s;
	const struct drv_vertex *r = &p->c->vertices[0];
	why_init(&s->tail_why, why);
	if (why == DRV_REASON_PRIORITY) {
		s->tail_why.n[0] = (int64_t)p->first_blocked;
	} else {
		s->tail_why.n[1] = DRV_MIN((int64_t)r->free_gpus * DRV_MILLI, r->free_milli);
		s->tail_why.n[3] = r->max_node_free;
	}
	s->tail_pass = s->pass_no;
}

/* ---- fair share: merging the tenants' queues --------------------------- */

/*
 * Fair share: merge the tenants' queues (each in priority, then submit
 * order) taking next the job whose tenant has the least weighted use,
 * counting what it holds and what the merge already took for it.
 *
 * The merge is lazy: the pass asks for the next job. Once the pass may skip
 * hopeless jobs, a tenant whose every remaining job cannot fit even the
 * cluster as it was when the pass began (nothing in a pass frees more) drops
 * out of the merge at once; the order of the others does not depend on it.
 */
/* What every job from one merge slot on, in its tenant's queue, asks for at
 * least: enough to tell that none of them can start now. */
struct queue_rest {
	int32_t need_w, task_w, full_w;  /* over whole-GPU jobs; INT32_MAX: none */
	int32_t frac;                    /* over fractional-only jobs; INT32_MAX: none */
	int32_t max_prio;
	int64_t min_dur;                 /* over jobs with a known duration */
	bool gpuless;
	bool held;                       /* a preemptor holding its placement */
};

struct fair_merge {
	int32_t *cnt, *head, *act, *idx;
	struct queue_rest *suf;
	int32_t nact;
	int32_t swept_at;   /* visits when the active tenants were last checked */
};

static void fair_setup(struct pass *p, struct fair_merge *fm)
{
	struct drv_sched *s = p->s;
	int32_t nt = s->ntenants, i, t;
	DRV_GROW(s->scratch_slots2, (size_t)s->npend + 3 * (size_t)nt + 3, s->scratch_slots2_cap);
	DRV_GROW(s->fair_suffix, (size_t)s->npend + 1, s->fair_suffix_cap);
	fm->cnt = s->scratch_slots2;
	fm->head = s->scratch_slots2 + nt + 1;
	fm->act = s->scratch_slots2 + 2 * nt + 2;
	fm->idx = s->scratch_slots2 + 3 * nt + 3;
	fm->suf = s->fair_suffix;
	fm->nact = 0;
	fm->swept_at = -1;
	memset(fm->cnt, 0, (size_t)(nt + 1) * sizeof(*fm->cnt));
	for (i = 0; i < s->npend; i++)
		fm->cnt[s->pend_compact[i].tenant + 1]++;
	for (i = 0; i < nt; i++)
		fm->cnt[i + 1] += fm->cnt[i];
	for (i = 0; i < nt; i++) {
		fm->head[i] = fm->cnt[i];
		s->tenants[i].fair_use = s->tenants[i].usage_all;
	}
	for (i = 0; i < s->npend; i++)
		fm->idx[fm->head[s->pend_compact[i].tenant]++] = i;
	for (t = 0; t < nt; t++) {
		struct queue_rest a = { INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MIN, T_INF, false,
				    false };
		for (i = fm->cnt[t + 1] - 1; i >= fm->cnt[t]; i--) {
			const struct pend_compact *h = &s->pend_compact[fm->idx[i]];
			if (!h->never) {
				if (h->gpuless)
					a.gpuless = true;
				if (h->held)
					a.held = true;
				if (h->need_whole > 0) {
					a.need_w = DRV_MIN(a.need_w, h->need_whole);
					a.task_w = DRV_MIN(a.task_w, h->max_task);
					a.full_w = DRV_MIN(a.full_w, h->full_tasks);
				} else if (h->min_frac > 0) {
					a.frac = DRV_MIN(a.frac, h->min_frac);
				}
				a.max_prio = DRV_MAX(a.max_prio, h->prio);
				if (h->dur > 0)
					a.min_dur = DRV_MIN(a.min_dur, h->dur);
			}
			fm->suf[i] = a;
		}
		fm->head[t] = fm->cnt[t];
		if (fm->cnt[t] < fm->cnt[t + 1])
			fm->act[fm->nact++] = t;
	}
}

/* True when no job of the tenant from merge slot i on can start now. */
static bool suf_skip(const struct bounds *b, const struct queue_rest *a)
{
	int64_t w, n;
	int32_t m;
	if (a->gpuless || a->held || (b->preempt && a->max_prio > b->minprio))
		return false;
	limits(b, a->min_dur <= b->short_d, &w, &m, &n);
	if (a->need_w != INT32_MAX && a->need_w <= w && a->task_w <= m && a->full_w <= n)
		return false;
	if (a->frac != INT32_MAX && (w > 0 || a->frac <= b->part))
		return false;
	return true;
}

/* Next queue position in fair order, or -1. *dropped: jobs were left out. */
static int32_t fair_next(struct pass *p, struct fair_merge *fm, bool may_drop, int32_t visits,
			 bool *dropped)
{
	struct drv_sched *s = p->s;
	int32_t a, best, bi, pos;
	struct bounds b;
	if (may_drop)
		bounds_get(p, &b);
	if (may_drop && fm->swept_at != visits) {
		/* the cluster changed since the last look: drop every tenant
		 * none of whose remaining jobs can start */
		fm->swept_at = visits;
		for (a = 0; a < fm->nact;) {
			int32_t t = fm->act[a];
			if (suf_skip(&b, &fm->suf[fm->head[t]])) {
				fm->act[a] = fm->act[--fm->nact];
				*dropped = true;
			} else {
				a++;
			}
		}
	}
	if (fm->nact == 0)
		return -1;
	best = fm->act[0];
	bi = 0;
	for (a = 1; a < fm->nact; a++) {
		int32_t t = fm->act[a];
		int32_t ht = fm->idx[fm->head[t]], hb = fm->idx[fm->head[best]];
		int64_t hk = s->pend_compact[ht].key_prio, bk = s->pend_compact[hb].key_prio;
		__int128 x, y;
		if (hk != bk) {
			if (hk > bk) {
				best = t;
				bi = a;
			}
			continue;
		}
		x = (__int128)s->tenants[t].fair_use * s->tenants[best].weight;
		y = (__int128)s->tenants[best].fair_use * s->tenants[t].weight;
		/* equal shares: the one ahead in the queue (its total order) */
		if (x < y || (x == y && ht < hb)) {
			best = t;
			bi = a;
		}
	}
	pos = fm->idx[fm->head[best]++];
	s->tenants[best].fair_use += s->pend_compact[pos].need_milli;
	if (fm->head[best] >= fm->cnt[best + 1]) {
		fm->act[bi] = fm->act[--fm->nact];
	} else if (may_drop && suf_skip(&b, &fm->suf[fm->head[best]])) {
		fm->act[bi] = fm->act[--fm->nact];
		*dropped = true;
	}
	return pos;
}

/* ---- the pass ----------------------------------------------------------- */

static int check_policy(const struct drv_sched_policy *pol)
{
	int32_t i;
	if ((unsigned)pol->order > DRV_ORDER_FAIR || (unsigned)pol->mode > DRV_MODE_GREEDY ||
	    (unsigned)pol->pools > DRV_POOLS_FASTEST || pol->nlas < 0 ||
	    pol->nlas > DRV_SCHED_MAX_LAS || pol->grace_s < 0 || pol->min_run_s < 0 ||
	    pol->aging_interval_s < 0 || pol->conservative_depth < 0 || pol->max_preempt_tries < 0)
		return DRV_EINVAL;
	for (i = 1; i < pol->nlas; i++)
		if (pol->las_threshold[i] <= pol->las_threshold[i - 1])
			return DRV_EINVAL;
	return 0;
}

int drv_sched_pass(struct drv_sched *s, int64_t now, const struct drv_sched_policy *pol,
		   struct drv_sched_decisions *out)
{
	struct pass P, *p = &P;
	struct stopper stop;
	struct fair_merge fm;
	int32_t i, k, n, nall, nd, nvis, nquota_held;
	const struct pend_compact *ph;
	bool skipped, qskip;
	int rc;

	if (!s || !pol || !out)
		return DRV_EINVAL;
	rc = check_policy(pol);
	if (rc)
		return rc;
	if (s->last_now != INT64_MIN && now < s->last_now)
		return DRV_EINVAL;
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
	if (s->c->nnodes != s->nnodes_seen)
		sched__refresh_cluster(s);
	if (s->idle_unknown) {
		for (i = 0; i < s->nnodes_seen; i++)
			if (s->idle_since[i] == INT64_MIN)
				s->idle_since[i] = now;
		s->idle_unknown = false;
	}
	/* last pass's reservations are recomputed */
	for (i = 0; i < s->nresv; i++)
		for (k = 0; k < s->resv[i].pl.ntasks; k++) {
			int32_t nd2 = s->resv[i].pl.tasks[k].node;
			if (nd2 >= 0 && nd2 < s->nnodes_seen)
				s->resv_mask[nd2] = 0;
		}
	s->nresv = 0;
	s->block.ntasks = 0;
	p->blocked_on = true; /* nothing blocked yet; reservations add as they come */
	/* preemptors' nominated placements are held before anyone else is
	 * considered (their victims' GPUs must not go to a third job) */
	for (i = 0; i < s->npreemptors; i++) {
		struct sched_job *nj = &s->jobs[s->preemptors[i]];
		resv_add(p, s->preemptors[i], DRV_MAX(nj->nomination_deadline, now), &nj->nomination, true);
		p->nresv_made++;
	}

	if (s->last_place != (int32_t)pol->place || s->last_pools != (int32_t)pol->pools) {
		s->last_place = (int32_t)pol->place;
		s->last_pools = (int32_t)pol->pools;
		s->rel_gen++;
	}
	rekey(p);
	if (s->pend_compact_stale) {
		sched__pend_compact_rebuild(s);
		s->pend_compact_stale = false;
	}
	nall = s->npend;
	stopper_init(p, &stop);
	s->tail_pass = 0;
	nvis = 0;
	DRV_GROW(s->visited, (size_t)nall + 1, s->vcap);
	DRV_GROW(s->quota_held_seen, (size_t)nall + 1, s->quota_held_seen_cap);
	nquota_held = 0;
	skipped = false;
	/* A job held at its tenant's quota, with nothing that check reads
	 * changed since, would get the same reason again and do nothing
	 * else: the pass passes over it from its compact entry, without
	 * touching the job (unless every reason is to be reported). */
	qskip = !pol->report_all_pending;
	ph = s->pend_compact;
	if (pol->order == DRV_ORDER_FAIR) {
		fair_setup(p, &fm);
		for (;;) {
			int32_t pos, slot;
			bool may = skip_allowed(p, &stop);
			if (pol->mode == DRV_MODE_STRICT && p->nblocked > 0 && !pol->report_all_pending) {
				set_tail(p, DRV_REASON_PRIORITY);
				break;
			}
			pos = fair_next(p, &fm, may, nvis, &skipped);
			if (pos < 0)
				break;
			if (may) {
				struct bounds b;
				bounds_get(p, &b);
				if (skip_h(&b, &ph[pos])) {
					skipped = true;
					continue;
				}
			}
			slot = s->pend[pos];
			if (qskip && sched__quota_held(s, &ph[pos])) {
				s->quota_held_seen[nquota_held++] = slot;
				continue;
			}
			if (s->jobs[slot].state != DRV_SJ_PENDING)
				continue;
			s->visited[nvis++] = slot;
			scan_one(p, slot);
			s->pend_compact[pos].quota_seq = s->jobs[slot].quota_seq;
		}
	}
	k = 0;
	while (pol->order != DRV_ORDER_FAIR && k < nall) {
		int32_t slot;
		if (pol->mode == DRV_MODE_STRICT && p->nblocked > 0 && !pol->report_all_pending) {
			set_tail(p, DRV_REASON_PRIORITY);
			break;
		}
		if (skip_allowed(p, &stop)) {
			/* the tight part: jobs that surely cannot start, from the
			 * compact entries alone */
			struct bounds b;
			int32_t kk = k;
			bounds_get(p, &b);
			while (kk < nall && skip_h(&b, &ph[kk]))
				kk++;
			if (kk > k)
				skipped = true;
			k = kk;
			if (k >= nall)
				break;
		}
		slot = s->pend[k];
		if (qskip && sched__quota_held(s, &ph[k])) {
			s->quota_held_seen[nquota_held++] = slot;
			k++;
			continue;
		}
		k++;
		if (s->jobs[slot].state != DRV_SJ_PENDING)
			continue;
		s->visited[nvis++] = slot;
		scan_one(p, slot);
		s->pend_compact[k - 1].quota_seq = s->jobs[slot].quota_seq;
	}
	if (skipped && !s->tail_pass)
		set_tail(p, DRV_REASON_RESOURCES);
	if (pol->mode == DRV_MODE_STRICT && p->nblocked > 0) {
		/* strict order stopped the pass: preemptors behind the blocked
		 * job whose victims are gone still start on the GPUs held for
		 * them (else those stay idle until the blocked job starts) */
		DRV_GROW(s->scratch_slots2, (size_t)s->npreemptors + 1, s->scratch_slots2_cap);
		n = s->npreemptors;
		if (n > 0) /* preemptors is NULL until the first nomination */
			memcpy(s->scratch_slots2, s->preemptors, (size_t)n * sizeof(*s->preemptors));
		for (i = 0; i < n; i++) {
			struct sched_job *nj = &s->jobs[s->scratch_slots2[i]];
			if (nj->state != DRV_SJ_PENDING || nj->victims_left > 0 ||
			    nj->reason_pass == s->pass_no)
				continue;
			s->visited[nvis++] = s->scratch_slots2[i];
			scan_one(p, s->scratch_slots2[i]);
			sched__pend_compact_refresh(s, s->scratch_slots2[i]);
		}
	}
	/* the jobs passed over as held at quota count as visited when the
	 * pass left others unvisited (drv_sched_job_get tells them apart) */
	if (s->tail_pass == s->pass_no)
		for (i = 0; i < nquota_held; i++)
			s->jobs[s->quota_held_seen[i]].reason_pass = s->pass_no;

	/* take the started jobs out of the queue */
	if (p->nstarted > 0) {
		if (p->nstarted <= 32) {
			for (k = 0; k < out->n; k++)
				if (out->v[k].kind == DRV_DEC_START)
					sched__pend_remove(s, sched__lookup(s, out->v[k].job));
		} else {
			for (i = 0, n = 0; i < s->npend; i++) {
				if (s->jobs[s->pend[i]].state == DRV_SJ_PENDING) {
					s->pend_compact[n] = s->pend_compact[i];
					s->pend[n++] = s->pend[i];
				} else {
					sched__demand(s, &s->jobs[s->pend[i]], -1);
				}
			}
			s->npend = n;
		}
	}
	releases(p);
	blocks_off(p);

	for (i = 0; i < s->nresv; i++) {
		struct drv_sched_decision *d;
		if (s->resv[i].nominated)
			continue;
		d = dec_new(p, DRV_DEC_RESERVE);
		d->job = s->jobs[s->resv[i].job].id;
		d->at = s->resv[i].at;
		d->placement = &s->resv[i].pl;
	}
	for (i = 0; i < SCHED_MAX_POOLS && i < s->c->npools; i++) {
		struct drv_sched_decision *d;
		if (!p->prov_add[i])
			continue;
		s->pool_inflight[i] = p->prov_add[i];
		d = dec_new(p, DRV_DEC_PROVISION);
		d->pool = i;
		d->count = p->prov_add[i];
		d->model = s->pool_tmpl_model[i];
		d->n[0] = s->pool_tmpl_gpus[i];
		d->job = p->prov_job[i];
	}
	for (k = 0; k < nvis; k++) {
		struct sched_job *j = &s->jobs[s->visited[k]];
		struct drv_sched_decision *d;
		if (j->state != DRV_SJ_PENDING || j->reason_pass != s->pass_no)
			continue;
		if (!pol->report_all_pending && j->why_emitted)
			continue;
		d = dec_new(p, DRV_DEC_PENDING);
		*d = j->why;
		j->why_emitted = true;
	}
	/* victims' ids: the arena is final now */
	nd = out->n;
	for (k = 0; k < nd; k++)
		if (out->v[k].kind == DRV_DEC_PREEMPT) {
			out->v[k].victims = &out->ids[out->v[k].count];
			out->v[k].count = 0;
		}
	return out->n;
}
