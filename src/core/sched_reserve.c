/*
 * sched_reserve.c: reservations. A blocked job's reservation is the
 * earliest time running jobs free enough room for it, found by sweeping
 * the running list in order of expected end (galloping, then halving, when
 * exact attempts keep failing); the first one is cached across passes
 * while nothing could move it. Reservations are held by "blocking" their
 * GPUs that are free now: synthetic tasks committed into the cluster, so
 * placement keeps backfilled jobs off them, lifted before the pass ends.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

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

void sched__blocks_off(struct pass *p)
{
	if (!p->blocked_on)
		return;
	drv_cluster_uncommit(p->c, &p->s->block);
	p->s->block.ntasks = 0;
	p->blocked_on = false;
	p->blocked_gpus = 0;
	p->blocked_max = 0;
}

void sched__blocks_on(struct pass *p)
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

void sched__resv_add(struct pass *p, int32_t slot, int64_t at, const struct drv_placement *pl,
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
void sched__resv_drop(struct pass *p, int32_t slot)
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
		sched__blocks_off(p);
		sched__blocks_on(p);
	}
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

	sched__run_sync(s);
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
		if (!sched__fits_quick(s, j, j->pool_mask))
			continue;
		if (skip > 0) {
			skip--;
			skipped = true;
			continue;
		}
		if (sched__try_place(p, j, pl, &pool, &f) == 0) {
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
			if (sched__fits_quick(s, j, j->pool_mask) && sched__try_place(p, j, pl, &pool, &f) == 0) {
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
int64_t sched__earliest_cached(struct pass *p, const struct sched_job *j, struct drv_placement *pl)
{
	struct drv_sched *s = p->s;
	struct resv_cache *cache = &s->resv_cache;
	int64_t at;
	bool cacheable = s->nresv == 0;
	if (cacheable && cache->valid && cache->id == j->id && cache->occ == s->occ_gen &&
	    cache->free == s->free_gen && cache->at >= p->now &&
	    cache->default_runtime == p->pol->default_runtime_s &&
	    cache->place == (int32_t)p->pol->place && cache->pools == (int32_t)p->pol->pools) {
		drv_placement_copy(pl, &cache->pl);
		p->resv_cached = true;
		return cache->at;
	}
	at = earliest(p, j, pl);
	cache->valid = cacheable && at != T_INF;
	if (cache->valid) {
		cache->id = j->id;
		cache->at = at;
		cache->occ = s->occ_gen;
		cache->free = s->free_gen;
		cache->default_runtime = p->pol->default_runtime_s;
		cache->place = (int32_t)p->pol->place;
		cache->pools = (int32_t)p->pol->pools;
		drv_placement_copy(&cache->pl, pl);
		p->resv_cached = true;
	}
	return at;
}
