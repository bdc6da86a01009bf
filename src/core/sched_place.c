/*
 * sched_place.c: placement under the pool policy. The aggregate tests
 * (what is free under a vertex, and whether a job may fit in some pools
 * now: O(pools), no scan of nodes), the order in which a job's pools are
 * tried (cheapest or fastest first), one placement attempt through
 * drv_place in those pools, and starting a job with its decision.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- aggregates --------------------------------------------------------- */

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

void sched__job_avail(const struct drv_sched *s, const struct sched_job *j, uint64_t mask,
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

/* A necessary condition: may the job fit in these pools now? */
bool sched__fits_quick(const struct drv_sched *s, const struct sched_job *j, uint64_t mask)
{
	struct avail a;
	sched__job_avail(s, j, mask, &a);
	return sched__avail_fits(j, &a);
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
int32_t sched__pool_order(const struct pass *p, const struct sched_job *j, int32_t *out)
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


/*
 * Tries to place j now; 0 and pl/pool filled, or DRV_ENOSPACE with f
 * filled. Tries the job's pools in policy order, each behind a cheap
 * aggregate test.
 */
int sched__try_place(struct pass *p, const struct sched_job *j, struct drv_placement *pl,
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
	o.mix = &s->mix;
	o.info = &info;
	n = sched__pool_order(p, j, order);
	if (n == 0) {
		if (!sched__fits_quick(s, j, j->pool_mask)) {
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
		if (!sched__fits_quick(s, j, m))
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

void sched__pass_start(struct pass *p, int32_t slot, const struct drv_placement *pl,
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
	d = sched__decision_new(p, DRV_DEC_START);
	d->job = j->id;
	d->placement = &j->pl;
	d->pool = j->pool;
	d->at = j->end == T_INF ? 0 : j->end;
	d->n[0] = placement_price(s, &j->pl);
	d->flags = flags;
	p->nstarted++;
}
