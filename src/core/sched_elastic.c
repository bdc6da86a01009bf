/*
 * sched_elastic.c: elastic pools. A job that waited long enough asks an
 * elastic pool that can hold its tasks for nodes (one request per pool at
 * a time), and nodes of elastic pools idle long enough are released.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

void sched__consider_provision(struct pass *p, struct sched_job *j)
{
	struct drv_sched *s = p->s;
	const struct drv_cluster *c = p->c;
	int32_t order[SCHED_MAX_POOLS], n, i, po;
	struct drv_sched_decision w;

	if (p->pol->grow_wait_s <= 0 || p->now - j->submit < p->pol->grow_wait_s)
		return;
	n = sched__pool_order(p, j, order);
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
			sched__why_init(&w, DRV_REASON_PROVISIONING);
			w.pool = po;
			w.count = s->pool_inflight[po];
			sched__set_why(p, j, &w);
			return;
		}
		need = (int32_t)((DRV_MAX(j->need_whole * (int64_t)DRV_MILLI, j->need_milli) +
				  (int64_t)per * DRV_MILLI - 1) / ((int64_t)per * DRV_MILLI));
		if (s->pool_nodes[po] + p->prov_add[po] + need > pool->max_nodes)
			continue;
		if (!p->prov_add[po])
			p->prov_job[po] = j->id;
		p->prov_add[po] += need;
		sched__why_init(&w, DRV_REASON_PROVISIONING);
		w.pool = po;
		w.count = need;
		sched__set_why(p, j, &w);
		return;
	}
}

void sched__releases(struct pass *p)
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
		d = sched__decision_new(p, DRV_DEC_RELEASE);
		d->pool = n->pool;
		d->node = i;
		changed++;
	}
	if (changed) {
		s->occ_gen++;
		sched__refresh_cluster(s);
	}
}
