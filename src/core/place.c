/*
 * place.c: gang placement on the topology tree (src/core).
 *
 * drv_place() finds room for a whole job or explains in one line why there
 * is none. The search reads only the per-vertex aggregates until it is at
 * a node:
 *
 *   search(v): if the gang cannot fit under v by the aggregates, fail;
 *              try v's children that can hold the whole gang, best-fit
 *              first (fewest free GPUs); the first that succeeds wins;
 *              else, unless a required level forbids spreading above it,
 *              place the tasks one by one under v.
 *
 * So the gang lands in the smallest subtree that holds it, and a required
 * level is never broken (no spreading above it). A job cut into slices
 * (drv_job.slice_level/slice_size) spreads above its slice level only
 * slice by slice: each slice in turn goes whole under the fullest vertex
 * of that level that holds it (greedy, no backtracking over slices). Each task descends from
 * that subtree root to the best-fitting node (the one with the fewest free
 * GPUs that still has enough), so big holes stay whole; fractional tasks
 * go to the fullest partly used GPU that still fits. Tasks are marked in
 * the cluster tentatively as they are chosen, so the aggregates stay exact
 * for the next task, and are taken back before returning.
 *
 * No allocation per decision: child lists live on a scratch stack owned by
 * the cluster; the caller's placement buffer grows only when a job has more
 * tasks than any before. Ties break by vertex order: deterministic.
 */
#include "drover/model.h"
#include "core_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_LOCAL_GROUPS 128

struct ctx {
	struct drv_cluster *c;
	const struct drv_job *job;
	const struct drv_place_opts *opts;
	struct drv_placement *out;
	uint64_t pools_ok;
	bool pool_restricted;
	int req_level;            /* -1: none */
	int pref_level;           /* preferred level, -1: none (tried first as if required) */
	int64_t need_gpus;        /* whole GPUs */
	int64_t need_milli;       /* all GPU shares, whole ones as 1000 each */
	int64_t need_cpu, need_mem; /* over all tasks */
	int32_t ntasks;
	int32_t max_task_gpus;
	int32_t min_frac;         /* smallest fractional share; 0 = none */
	int32_t need_by_model[DRV_MAX_MODELS];
	int8_t models[DRV_MAX_MODELS];
	int nmodels;
	const int32_t *order;     /* groups, largest tasks first */
	const int32_t *first;     /* first task index of each group in out */
	int32_t *sp, *send;       /* scratch stack */
	bool fgd;                 /* fragmentation-aware node and GPU choice */
	const struct drv__mix_flat *flat; /* multi-resource choice: its mix; NULL = not */
	int32_t unmarked;         /* the task placed but not marked in the cluster */
	int slice_level;          /* -1: no slices */
	int32_t slice_size;       /* tasks per slice */
	int32_t slice_gpus;       /* most whole GPUs one slice takes */
	int32_t cur_gpus, cur_max; /* the slice being placed: whole GPUs, largest task */
	int64_t cur_milli;
	bool include;             /* the job names nodes it must have (DRV_LABEL_INCLUDE) */
};

/* ---- placement buffers ---------------------------------------------- */

void drv_placement_init(struct drv_placement *p)
{
	memset(p, 0, sizeof(*p));
}

void drv_placement_release(struct drv_placement *p)
{
	drv_free(p->tasks);
	memset(p, 0, sizeof(*p));
}

void drv_placement_copy(struct drv_placement *dst, const struct drv_placement *src)
{
	if (src->ntasks > 0)
		DRV_GROW(dst->tasks, (size_t)src->ntasks, dst->cap);
	if (src->ntasks > 0)
		memcpy(dst->tasks, src->tasks, sizeof(*src->tasks) * (size_t)src->ntasks);
	dst->ntasks = src->ntasks;
}

/* ---- aggregate tests ---------------------------------------------------- */

static bool vertex_allowed(const struct ctx *x, const struct drv_vertex *v)
{
	return v->pool < 0 || ((x->pools_ok >> v->pool) & 1);
}

/* Tasks of the job with exactly m whole GPUs. */
static int32_t tasks_of_size(const struct ctx *x, int32_t m)
{
	int32_t i, n = 0;
	for (i = 0; i < x->job->ngroups; i++)
		if (x->job->groups[i].gpus == m)
			n += x->job->groups[i].count;
	return n;
}

/* Necessary test: can the whole gang fit under v? */
static bool gang_fits(const struct ctx *x, const struct drv_vertex *v)
{
	int k;

	if (!vertex_allowed(x, v))
		return false;
	if (v->free_gpus < x->need_gpus || v->free_milli < x->need_milli)
		return false;
	if (v->node >= 0 && (x->need_cpu > 0 || x->need_mem > 0)) {
		/* the whole gang on one node: its CPU and memory too */
		const struct drv_node *n = &x->c->nodes[v->node];
		if (n->cpu_milli - n->cpu_used < x->need_cpu || n->mem_mib - n->mem_used < x->need_mem)
			return false;
	}
	if (x->max_task_gpus > v->max_node_free)
		return false;
	for (k = 0; k < x->nmodels; k++)
		if (v->free_gpus_by_model[x->models[k]] < x->need_by_model[x->models[k]])
			return false;
	if (x->min_frac > 0 && v->max_part_free < x->min_frac && v->free_gpus <= x->need_gpus)
		return false;
	/* Tasks as large as the largest node below each need a whole free node. */
	if (v->max_node_gpus > 0 && x->max_task_gpus >= v->max_node_gpus &&
	    tasks_of_size(x, v->max_node_gpus) > v->free_nodes)
		return false;
	if (x->req_level >= 0 && v->level <= x->req_level &&
	    v->max_free_at[x->req_level] < x->need_gpus)
		return false;
	if (x->slice_level >= 0 && v->max_free_at[x->slice_level] < x->slice_gpus)
		return false;
	if (x->need_gpus == 0 && x->min_frac == 0 && v->total_nodes == 0)
		return false; /* CPU-only job: needs some up node */
	if (x->job->exclusive && v->free_nodes == 0)
		return false; /* whole nodes: needs an empty one */
	return true;
}

static bool task_fits(const struct ctx *x, const struct drv_vertex *v,
		      const struct drv_task_group *g)
{
	if (!vertex_allowed(x, v))
		return false;
	if (v->node >= 0 && (g->cpu_milli > 0 || g->mem_mib > 0)) {
		/* no vertex aggregate knows CPU or memory: ask the node itself,
		 * before it is scored or descended into */
		const struct drv_node *n = &x->c->nodes[v->node];
		if (n->cpu_milli - n->cpu_used < g->cpu_milli || n->mem_mib - n->mem_used < g->mem_mib)
			return false;
	}
	if (g->gpus > 0) {
		if (v->max_node_free < g->gpus)
			return false;
		if (g->model >= 0 && v->free_gpus_by_model[g->model] < g->gpus)
			return false;
		return true;
	}
	if (g->gpu_milli > 0 || drv_group_mem_share(g)) {
		/* a share by memory takes at least 1 milli on any model */
		if (v->max_part_free >= drv_group_min_milli(g))
			return true;
		if (g->model >= 0)
			return v->free_gpus_by_model[g->model] >= 1;
		return v->free_gpus >= 1;
	}
	return v->total_nodes > 0;
}

/* Best-fit keys: lower is tried first. */
static int32_t gang_key(const struct ctx *x, const struct drv_vertex *v)
{
	if (x->need_gpus > 0 || x->min_frac == 0)
		return v->free_gpus;
	return (v->max_part_free >= x->min_frac ? 0 : (1 << 30)) +
	       (int32_t)DRV_MIN(v->free_milli, (1 << 30) - 1);
}

static int32_t task_key(const struct drv_vertex *v, const struct drv_task_group *g)
{
	if (g->gpus > 0)
		return g->model >= 0 ? v->free_gpus_by_model[g->model] : v->free_gpus;
	if (g->gpu_milli > 0 || drv_group_mem_share(g)) {
		if (v->max_part_free >= drv_group_min_milli(g))
			return v->max_part_free;
		return DRV_MILLI + (g->model >= 0 ? v->free_gpus_by_model[g->model] : v->free_gpus);
	}
	return v->free_gpus;
}

/* FGD's key for a node: the rise in expected fragmentation, scaled. */
static int32_t fgd_key(const struct ctx *x, int32_t ni, const struct drv_task_group *g)
{
	double d = drv__fgd_delta(&x->c->nodes[ni], g, x->opts, NULL);
	if (d > 1e12)
		return INT32_MAX;
	return (int32_t)(d * 64.0 + (d < 0 ? -0.5 : 0.5));
}

/* Best fit among nodes for one task: fewer free GPUs; for a share, the
 * node whose fullest GPU that still holds it is fullest, before any node
 * where it would open a fresh GPU (as task_key orders subtrees). */
static int32_t node_fit_key(const struct drv_vertex *w, const struct drv_node *n,
			    const struct drv_task_group *g)
{
	int32_t k, best = DRV_MILLI;

	if (g->gpus > 0 || g->gpu_milli <= 0)
		return DRV_MIN(w->free_gpus, 1023);
	for (k = 0; k < n->ngpus; k++) {
		int32_t f = DRV_MILLI - n->gpu_milli_used[k];
		if (f < DRV_MILLI && f >= g->gpu_milli && f < best)
			best = f;
	}
	return best < DRV_MILLI ? best : DRV_MILLI + DRV_MIN(w->free_gpus, 1023);
}

/* multi's key for a node: the rise in expected stranding (a quarter
 * milli-GPU per step), then best fit (node_fit_key) on ties. */
static int32_t multi_key(const struct ctx *x, const struct drv_vertex *w,
			 const struct drv_task_group *g)
{
	const struct drv_node *n = &x->c->nodes[w->node];
	double d = drv__multi_delta(n, g, x->flat, NULL);
	int64_t q;
	int32_t k;

	if (d > 1e12)
		return INT32_MAX;
	q = (int64_t)llround(d * 4.0);
	q = DRV_MAX(DRV_MIN(q, (1 << 18) - 1), -(1 << 18));
	k = node_fit_key(w, n, g);
	return (int32_t)((g->gpus == 0 && g->gpu_milli > 0 && k >= DRV_MILLI ? 1 << 30 : 0) +
			 q * 2048 + k);
}

/* The key of the last empty node scored in one collect(): empty nodes of
 * one shape score alike, and a leaf being filled has many. */
struct empty_memo {
	int32_t key;              /* -1: none yet */
	int16_t ngpus;
	int8_t model;
	int64_t cpu, mem;
};

static int32_t multi_key_memo(const struct ctx *x, const struct drv_vertex *w,
			      const struct drv_task_group *g, struct empty_memo *m)
{
	const struct drv_node *nd = &x->c->nodes[w->node];
	bool empty = w->free_nodes == 1 && nd->cpu_used == 0 && nd->mem_used == 0;

	if (empty && m->key >= 0 && m->ngpus == nd->ngpus && m->model == nd->model &&
	    m->cpu == nd->cpu_milli && m->mem == nd->mem_mib)
		return m->key;
	if (!empty)
		return multi_key(x, w, g);
	*m = (struct empty_memo){ multi_key(x, w, g), nd->ngpus, nd->model, nd->cpu_milli,
				  nd->mem_mib };
	return m->key;
}

/* Whether job names node n as one it must have (DRV_LABEL_INCLUDE). */
static bool included(const struct drv_job *job, const struct drv_node *n)
{
	for (int32_t i = 0; i < job->nnode_selector; i++)
		if (!strcmp(job->node_selector[i].key, DRV_LABEL_INCLUDE) && n->name &&
		    !strcmp(job->node_selector[i].value, n->name))
			return true;
	return false;
}

/* Whether vertex vi is, or lies above, a node the job must have. */
static bool holds_included(const struct ctx *x, int32_t vi)
{
	const struct drv_cluster *c = x->c;

	if (c->vertices[vi].node >= 0)
		return included(x->job, &c->nodes[c->vertices[vi].node]);
	for (int32_t k = 0; k < c->nnodes; k++)
		if (included(x->job, &c->nodes[k]))
			for (int32_t v = c->nodes[k].vertex; v >= 0; v = c->vertices[v].parent)
				if (v == vi)
					return true;
	return false;
}

/* The first node job must have that placement out leaves out, or NULL. */
static const char *include_missing(const struct drv_cluster *c, const struct drv_job *job,
				   const struct drv_placement *out)
{
	for (int32_t i = 0; i < job->nnode_selector; i++) {
		const char *want = job->node_selector[i].value;
		bool have = false;

		if (strcmp(job->node_selector[i].key, DRV_LABEL_INCLUDE) != 0)
			continue;
		for (int32_t t = 0; t < out->ntasks && !have; t++)
			have = out->tasks[t].node >= 0 && c->nodes[out->tasks[t].node].name &&
			       !strcmp(c->nodes[out->tasks[t].node].name, want);
		if (!have)
			return want;
	}
	return NULL;
}

/* The nodes job must have, comma-separated, into buf. */
static void include_list(const struct drv_job *job, char *buf, size_t sz)
{
	size_t n = 0;

	buf[0] = 0;
	for (int32_t i = 0; i < job->nnode_selector && n < sz; i++)
		if (!strcmp(job->node_selector[i].key, DRV_LABEL_INCLUDE))
			n += (size_t)snprintf(buf + n, sz - n, "%s%s", n ? "," : "",
					      job->node_selector[i].value);
}

/*
 * Pushes v's children that pass the test onto the scratch stack with their
 * best-fit keys: ids at base[0..n), keys at base[n..2n). The caller takes
 * them in key order with next_best(); most searches stop at the first, so
 * selecting lazily beats sorting.
 */
static int32_t collect(struct ctx *x, int32_t vi, const struct drv_task_group *g, int32_t **basep)
{
	const struct drv_cluster *c = x->c;
	const struct drv_vertex *v = &c->vertices[vi];
	const int32_t *kid = c->kids + v->kid_first;
	int32_t *base = x->sp, n = 0, nk = v->nkids, i;
	struct empty_memo memo = { -1, 0, 0, 0, 0 };

	/* ask for every child's line at once: the misses overlap */
	for (i = 0; i < nk; i++)
		__builtin_prefetch(&c->vertices[kid[i]]);
	for (i = 0; i < nk; i++) {
		const struct drv_vertex *w = &c->vertices[kid[i]];
		bool ok = g ? task_fits(x, w, g) : gang_fits(x, w);
		if (ok)
			base[n++] = kid[i];
	}
	for (i = 0; i < n; i++) {
		const struct drv_vertex *w = &c->vertices[base[i]];
		/* multi scores a node for one task: a gang tried whole on one node
		 * is ordered best-fit (and refused cheaply) */
		if (x->flat && w->node >= 0 && (g || x->ntasks == 1))
			base[n + i] = multi_key_memo(x, w, g ? g : &x->job->groups[x->order[0]], &memo);
		else if (x->fgd && w->node >= 0)
			base[n + i] = fgd_key(x, w->node, g ? g : &x->job->groups[x->order[0]]);
		else
			base[n + i] = g ? task_key(w, g) : gang_key(x, w);
		if (x->include && holds_included(x, base[i]))
			base[n + i] = INT32_MIN; /* required nodes first */
	}
	x->sp = base + 2 * n;
	*basep = base;
	return n;
}

/* Moves the best remaining candidate (lowest key, then lowest vertex id:
 * sibling order) to position i and returns it. */
static int32_t next_best(int32_t *base, int32_t n, int32_t i)
{
	int32_t *key = base + n, b = i, j, t;

	for (j = i + 1; j < n; j++)
		if (key[j] < key[b] || (key[j] == key[b] && base[j] < base[b]))
			b = j;
	t = base[i], base[i] = base[b], base[b] = t;
	t = key[i], key[i] = key[b], key[b] = t;
	return base[i];
}

/* ---- node level --------------------------------------------------------- */

/* An exclusive job's task goes to a node it already has a task on, or to
 * one with nothing on it (CPU, memory or any GPU). */
static bool excl_node_ok(const struct ctx *x, int32_t ni, const struct drv_task_place *tp)
{
	const struct drv_node *n = &x->c->nodes[ni];
	int32_t i;

	for (i = 0; i < x->out->ntasks; i++)
		if (x->out->tasks[i].node == ni && &x->out->tasks[i] != tp)
			return true;
	return n->cpu_used == 0 && n->mem_used == 0 && x->c->vertices[n->vertex].free_nodes == 1;
}

static bool fit_node(const struct ctx *x, int32_t ni, int32_t gi, struct drv_task_place *tp)
{
	const struct drv_node *n = &x->c->nodes[ni];
	const struct drv_task_group *g = &x->job->groups[gi];
	struct drv_task_group share;
	const struct drv_gpu_model *m = NULL;
	uint64_t mask = 0;
	int k, got = 0, best = -1, bestfree = DRV_MILLI + 1;
	bool fgd_chose = false;

	if (n->state != DRV_NODE_UP || n->excl_tasks > 0)
		return false;
	if (n->cpu_milli - n->cpu_used < g->cpu_milli || n->mem_mib - n->mem_used < g->mem_mib)
		return false;
	if (x->job->exclusive && !excl_node_ok(x, ni, tp))
		return false;
	if (x->job->nnode_selector > 0 && !drv_job_node_ok(x->c, x->job, n))
		return false;
	if (g->distinct_nodes)
		for (k = 0; k < g->count; k++)
			if (x->out->tasks[x->first[gi] + k].node == ni &&
			    &x->out->tasks[x->first[gi] + k] != tp)
				return false;
	if (drv_group_mem_share(g)) {
		/* asked by memory: this node's model sets the share (or rules it out) */
		int32_t milli = n->ngpus > 0 ? drv_gpu_mem_milli(g->gpu_mem_mib, n->model) : -1;
		if (milli < 0)
			return false;
		share = *g;
		share.gpus = milli >= DRV_MILLI ? 1 : 0;
		share.gpu_milli = milli >= DRV_MILLI ? 0 : milli;
		g = &share;
	}
	if (g->gpus > 0 || g->gpu_milli > 0) {
		if (n->ngpus == 0 || (g->model >= 0 && n->model != g->model))
			return false;
		m = drv_gpu_model_at(n->model);
		if (m && g->gpu_mem_mib > m->mem_mib)
			return false;
	}
	if (g->gpus > 0) {
		if (g->gpus > n->ngpus)
			return false;
		for (k = 0; k < n->ngpus && got < g->gpus; k++)
			if (n->gpu_milli_used[k] == 0 && n->gpu_mem_used[k] == 0) {
				mask |= 1ULL << k;
				got++;
			}
		if (got < g->gpus)
			return false;
		tp->gpu_milli = DRV_MILLI;
		tp->gpu_mem_mib = g->gpu_mem_mib;
	} else if (g->gpu_milli > 0) {
		int cap = m ? m->mem_mib : 0;
		if (x->fgd || x->flat) {
			int k2;
			if (x->flat)
				drv__multi_delta(n, g, x->flat, &k2);
			else
				drv__fgd_delta(n, g, x->opts, &k2);
			if (k2 >= 0 && (!cap || n->gpu_mem_used[k2] + g->gpu_mem_mib <= cap)) {
				best = k2;
				fgd_chose = true;
			}
		}
		/* fullest partly used GPU that still fits, else the first free one */
		for (k = 0; !fgd_chose && k < n->ngpus; k++) {
			int used = n->gpu_milli_used[k], fr = DRV_MILLI - used - g->gpu_milli;
			if (used == 0 || fr < 0)
				continue;
			if (cap && n->gpu_mem_used[k] + g->gpu_mem_mib > cap)
				continue;
			if (fr < bestfree) {
				bestfree = fr;
				best = k;
			}
		}
		if (best < 0)
			for (k = 0; k < n->ngpus; k++)
				if (n->gpu_milli_used[k] == 0 &&
				    (!cap || n->gpu_mem_used[k] + g->gpu_mem_mib <= cap)) {
					best = k;
					break;
				}
		if (best < 0)
			return false;
		mask = 1ULL << best;
		tp->gpu_milli = g->gpu_milli;
		tp->gpu_mem_mib = g->gpu_mem_mib;
	} else {
		tp->gpu_milli = 0;
		tp->gpu_mem_mib = 0;
	}
	tp->node = ni;
	tp->group = (int16_t)gi;
	tp->gpu_mask = mask;
	tp->cpu_milli = g->cpu_milli;
	tp->mem_mib = g->mem_mib;
	return true;
}

/* One task under vertex vi: descend best-fit, backtrack on failure. */
static bool place_task(struct ctx *x, int32_t vi, int32_t gi, struct drv_task_place *tp)
{
	const struct drv_vertex *v = &x->c->vertices[vi];
	const struct drv_task_group *g = &x->job->groups[gi];
	int32_t *base, n, i, *saved = x->sp;
	bool ok = false;

	if (v->node >= 0)
		return task_fits(x, v, g) && fit_node(x, v->node, gi, tp);
	n = collect(x, vi, g, &base);
	for (i = 0; i < n && !ok; i++)
		ok = place_task(x, next_best(base, n, i), gi, tp);
	x->sp = saved;
	return ok;
}

static void rollback(struct ctx *x)
{
	int32_t i;
	for (i = 0; i < x->out->ntasks; i++)
		if (x->out->tasks[i].node >= 0) {
			drv__task_apply(x->c, &x->out->tasks[i], -1);
			x->out->tasks[i].node = -1;
		}
}

/* Every task of the job under vi, largest first; all or nothing. */
static bool place_all(struct ctx *x, int32_t vi)
{
	int32_t k, t;

	for (k = 0; k < x->job->ngroups; k++) {
		int32_t gi = x->order[k];
		for (t = 0; t < x->job->groups[gi].count; t++) {
			int32_t idx = x->first[gi] + t;
			struct drv_task_place *tp = &x->out->tasks[idx];
			if (!place_task(x, vi, gi, tp)) {
				rollback(x);
				return false;
			}
			/* The last task is not marked: nothing after it needs the
			 * aggregates to know (drv_place then undoes one mark less). */
			if (k == x->job->ngroups - 1 && t == x->job->groups[gi].count - 1)
				x->unmarked = idx;
			else
				drv__task_apply(x->c, tp, +1);
		}
	}
	return true;
}

/* ---- slices ------------------------------------------------------------- */

/* The group of task index t (tasks are numbered group by group). */
static int32_t group_of(const struct ctx *x, int32_t t)
{
	int32_t gi = 0;
	while (gi + 1 < x->job->ngroups && x->first[gi + 1] <= t)
		gi++;
	return gi;
}

/* What slice s needs, into cur_*: whole GPUs, largest task, milli. */
static void slice_need(struct ctx *x, int32_t s)
{
	int32_t t;
	x->cur_gpus = x->cur_max = 0;
	x->cur_milli = 0;
	for (t = s * x->slice_size; t < (s + 1) * x->slice_size; t++) {
		const struct drv_task_group *g = &x->job->groups[group_of(x, t)];
		x->cur_gpus += g->gpus;
		x->cur_max = DRV_MAX(x->cur_max, g->gpus);
		x->cur_milli += g->gpus > 0 ? (int64_t)g->gpus * DRV_MILLI : drv_group_min_milli(g);
	}
}

/* Necessary test: can the current slice fit under v? */
static bool slice_fits(const struct ctx *x, const struct drv_vertex *v)
{
	return vertex_allowed(x, v) && v->free_gpus >= x->cur_gpus &&
	       v->free_milli >= x->cur_milli && v->max_node_free >= x->cur_max &&
	       v->max_free_at[x->slice_level] >= x->cur_gpus && v->total_nodes > 0;
}

/* Takes back the tasks of slice s placed so far. */
static void slice_undo(struct ctx *x, int32_t s)
{
	int32_t t;
	for (t = s * x->slice_size; t < (s + 1) * x->slice_size; t++)
		if (x->out->tasks[t].node >= 0) {
			drv__task_apply(x->c, &x->out->tasks[t], -1);
			x->out->tasks[t].node = -1;
		}
}

/* Slice s's tasks under vi, one vertex of the slice level (or below). */
static bool slice_tasks(struct ctx *x, int32_t vi, int32_t s)
{
	int32_t t;
	for (t = s * x->slice_size; t < (s + 1) * x->slice_size; t++) {
		struct drv_task_place *tp = &x->out->tasks[t];
		if (!place_task(x, vi, group_of(x, t), tp)) {
			slice_undo(x, s);
			return false;
		}
		drv__task_apply(x->c, tp, +1);
	}
	return true;
}

/* Slice s under vi: under the fullest vertex of the slice level that
 * holds it, trying the next on failure. */
static bool place_slice(struct ctx *x, int32_t vi, int32_t s)
{
	const struct drv_cluster *c = x->c;
	const struct drv_vertex *v = &c->vertices[vi];
	const int32_t *kid;
	int32_t *base = x->sp, n = 0, i, *saved = x->sp;
	bool ok = false;

	if (!slice_fits(x, v))
		return false;
	if (v->level >= x->slice_level || v->node >= 0)
		return slice_tasks(x, vi, s);
	kid = c->kids + v->kid_first;
	for (i = 0; i < v->nkids; i++)
		if (slice_fits(x, &c->vertices[kid[i]]))
			base[n++] = kid[i];
	for (i = 0; i < n; i++)
		base[n + i] = c->vertices[base[i]].free_gpus;
	x->sp = base + 2 * n;
	for (i = 0; i < n && !ok; i++)
		ok = place_slice(x, next_best(base, n, i), s);
	x->sp = saved;
	return ok;
}

/* Every slice under vi in turn; all or nothing. Every task is marked. */
static bool place_slices(struct ctx *x, int32_t vi)
{
	int32_t s;
	for (s = 0; s < x->ntasks / x->slice_size; s++) {
		slice_need(x, s);
		if (!place_slice(x, vi, s)) {
			rollback(x);
			return false;
		}
	}
	return true;
}

static bool search(struct ctx *x, int32_t vi)
{
	const struct drv_vertex *v = &x->c->vertices[vi];
	int32_t *base, n, i, *saved = x->sp;
	bool ok = false;

	if (!gang_fits(x, v))
		return false;
	if (v->node >= 0)
		return place_all(x, vi);
	n = collect(x, vi, NULL, &base);
	for (i = 0; i < n && !ok; i++)
		ok = search(x, next_best(base, n, i));
	x->sp = saved;
	if (ok)
		return true;
	/* one task: the children were every way to place it */
	if (x->ntasks == 1 || (x->req_level >= 0 && v->level < x->req_level))
		return false;
	if (x->slice_level >= 0 && v->level < x->slice_level)
		return place_slices(x, vi);
	return place_all(x, vi);
}

/*
 * A gang that prefers a level is first searched as if it required it: the
 * best-fit descent alone would take the fullest upper vertex that holds the
 * gang and spread it there, although another one had a vertex of the
 * preferred level with room. Only then is it searched as it is.
 */
static bool search_preferring(struct ctx *x)
{
	int req = x->req_level;

	if (x->ntasks > 1 && x->pref_level > req) {
		x->req_level = x->pref_level;
		if (search(x, 0)) {
			x->req_level = req;
			return true;
		}
		x->req_level = req;
	}
	return search(x, 0);
}

/* ---- setup, views and reasons ------------------------------------------- */

struct view {
	int64_t free_gpus, free_milli, total_gpus;
	int32_t free_nodes, total_nodes, max_node_free, max_part_free, max_node_gpus;
	int32_t max_free_at[DRV_MAX_LEVELS];
	int32_t by_model[DRV_MAX_MODELS];
	int32_t total_by_model[DRV_MAX_MODELS];
};

static void view_add(struct view *w, const struct drv_vertex *v, int nl)
{
	int l;
	w->free_gpus += v->free_gpus;
	w->free_milli += v->free_milli;
	w->total_gpus += v->total_gpus;
	w->free_nodes += v->free_nodes;
	w->total_nodes += v->total_nodes;
	w->max_node_free = DRV_MAX(w->max_node_free, v->max_node_free);
	w->max_part_free = DRV_MAX(w->max_part_free, v->max_part_free);
	w->max_node_gpus = DRV_MAX(w->max_node_gpus, v->max_node_gpus);
	for (l = 0; l < nl; l++)
		w->max_free_at[l] = DRV_MAX(w->max_free_at[l], v->max_free_at[l]);
	for (l = 0; l < DRV_MAX_MODELS; l++) {
		w->by_model[l] += v->free_gpus_by_model[l];
		w->total_by_model[l] += v->total_gpus_by_model[l];
	}
}

/* The cluster as the job may use it: the root, or the allowed pools. */
static void make_view(const struct ctx *x, struct view *w)
{
	const struct drv_cluster *c = x->c;
	int32_t p;

	memset(w, 0, sizeof(*w));
	if (!x->pool_restricted) {
		view_add(w, &c->vertices[0], c->nlevels);
		return;
	}
	for (p = 0; p < c->npools; p++)
		if ((x->pools_ok >> p) & 1)
			view_add(w, &c->vertices[c->pools[p].vertex], c->nlevels);
	/* at the root level the allowed pools count together */
	w->max_free_at[0] = (int32_t)w->free_gpus;
}

static bool region_ok(const struct drv_job *j, const char *region)
{
	int32_t i;
	if (j->nregions == 0)
		return true;
	for (i = 0; i < j->nregions; i++)
		if (region && drv_strcaseeq(j->regions[i], region))
			return true;
	return false;
}

static void set_info(const struct ctx *x, enum drv_place_why why, int64_t need, int64_t have,
		     bool never)
{
	struct drv_place_info *info = x->opts ? x->opts->info : NULL;
	if (!info)
		return;
	info->why = why;
	info->need = need;
	info->have = have;
	info->never = never;
}

/* The slice level and the most whole GPUs of one slice. */
static int setup_slices(struct ctx *x, const struct drv_cluster *c, const struct drv_job *job,
			char *reason, size_t rsz)
{
	int32_t gi, t = 0, sum = 0;

	x->slice_level = drv_cluster_level(c, job->slice_level);
	if (x->slice_level < 0) {
		snprintf(reason, rsz, "the cluster has no topology level '%s' (slices)",
			 job->slice_level);
		set_info(x, DRV_WHY_INVALID, x->need_gpus, 0, true);
		return DRV_ENOSPACE;
	}
	if (job->slice_size <= 0) {
		snprintf(reason, rsz, "a slice size of %d tasks (at least 1)", (int)job->slice_size);
		set_info(x, DRV_WHY_INVALID, x->need_gpus, 0, true);
		return DRV_ENOSPACE;
	}
	x->slice_size = job->slice_size;
	for (gi = 0; gi < job->ngroups; gi++)
		for (int32_t k = 0; k < job->groups[gi].count; k++) {
			sum += job->groups[gi].gpus;
			if (++t % x->slice_size == 0) {
				x->slice_gpus = DRV_MAX(x->slice_gpus, sum);
				sum = 0;
			}
		}
	return 0;
}

/*
 * Fills the context from the job: sums, largest task, models, pools,
 * required level. Returns 0, or DRV_EINVAL / DRV_ENOSPACE with a reason
 * for jobs that are malformed or name a level or region the cluster lacks.
 */
static int setup(struct ctx *x, const struct drv_cluster *c, const struct drv_job *job,
		 const struct drv_place_opts *opts, char *reason, size_t rsz)
{
	int32_t i, p;
	int rc;

	memset(x, 0, sizeof(*x));
	x->c = (struct drv_cluster *)c; /* tentative marks only; see model.h */
	x->job = job;
	x->opts = opts;
	x->req_level = -1;
	x->pref_level = -1;
	x->slice_level = -1;
	for (i = 0; i < job->nnode_selector && !x->include; i++)
		x->include = !strcmp(job->node_selector[i].key, DRV_LABEL_INCLUDE);
	x->fgd = opts && opts->strategy == DRV_PLACE_FGD;
	rc = drv_job_check(job, reason, rsz);
	if (rc) {
		set_info(x, DRV_WHY_INVALID, 0, 0, true);
		return rc;
	}
	for (i = 0; i < job->ngroups; i++) {
		const struct drv_task_group *g = &job->groups[i];
		x->need_gpus += (int64_t)g->count * g->gpus;
		x->need_milli += (int64_t)g->count * (g->gpus > 0 ? g->gpus * DRV_MILLI
						       : drv_group_min_milli(g));
		x->need_cpu += (int64_t)g->count * g->cpu_milli;
		x->need_mem += (int64_t)g->count * g->mem_mib;
		x->ntasks += g->count;
		if (g->gpus > x->max_task_gpus)
			x->max_task_gpus = g->gpus;
		if (g->gpus == 0 && g->gpu_milli > 0 && (x->min_frac == 0 || g->gpu_milli < x->min_frac))
			x->min_frac = g->gpu_milli;
		else if (drv_group_mem_share(g) &&
			 (x->min_frac == 0 || drv_group_min_milli(g) < x->min_frac))
			x->min_frac = drv_group_min_milli(g);
		if (g->model >= 0 && g->gpus > 0) {
			if (x->need_by_model[g->model] == 0)
				x->models[x->nmodels++] = g->model;
			x->need_by_model[g->model] += g->count * g->gpus;
		}
	}
	x->pools_ok = ~0ULL;
	/* a selector naming pools rules the others out here, at their
	 * vertex, rather than on each of their nodes */
	if ((opts && opts->pool_mask) || job->nregions > 0 || !drv_job_pool_ok(job, NULL)) {
		x->pool_restricted = true;
		x->pools_ok = 0;
		for (p = 0; p < c->npools; p++) {
			if (opts && opts->pool_mask && !((opts->pool_mask >> p) & 1))
				continue;
			if (!region_ok(job, c->pools[p].region) || !drv_job_pool_ok(job, c->pools[p].name))
				continue;
			x->pools_ok |= 1ULL << p;
		}
		if (!x->pools_ok) {
			if (job->nregions > 0)
				snprintf(reason, rsz, "no pool of the cluster is in the allowed region%s %s%s",
					 job->nregions > 1 ? "s" : "", job->regions[0],
					 job->nregions > 1 ? ", ..." : "");
			else
				snprintf(reason, rsz, "no pool of the cluster is allowed for this job");
			set_info(x, DRV_WHY_REGION, x->need_gpus, 0, true);
			return DRV_ENOSPACE;
		}
	}
	if (job->topo_mode == DRV_TOPO_REQUIRED) {
		x->req_level = drv_cluster_level(c, job->topo_level);
		if (x->req_level < 0) {
			snprintf(reason, rsz, "the cluster has no topology level '%s' (required)",
				 job->topo_level);
			set_info(x, DRV_WHY_INVALID, x->need_gpus, 0, true);
			return DRV_ENOSPACE;
		}
	}
	if (job->slice_size > 0) {
		rc = setup_slices(x, c, job, reason, rsz);
		if (rc)
			return rc;
	}
	/* an unknown preferred level is warned about by the callers that read it */
	if (job->topo_mode == DRV_TOPO_PREFERRED && job->topo_level)
		x->pref_level = drv_cluster_level(c, job->topo_level);
	return 0;
}

/* The required level as the job names it, or as the cluster does for a
 * node label. */
static const char *level_word(const struct ctx *x)
{
	const char *w = x->job->topo_level;
	return w && !strchr(w, '/') ? w : x->c->levels[x->req_level];
}

static const char *slice_word(const struct ctx *x)
{
	const char *w = x->job->slice_level;
	return w && !strchr(w, '/') ? w : x->c->levels[x->slice_level];
}

static void gpus_phrase(char *buf, size_t sz, int64_t milli)
{
	if (milli % DRV_MILLI == 0)
		snprintf(buf, sz, "%lld GPU%s", (long long)(milli / DRV_MILLI),
			 milli == DRV_MILLI ? "" : "s");
	else
		snprintf(buf, sz, "%.3g GPUs", (double)milli / DRV_MILLI);
}

/* The first aggregate test the view fails, as a reason; false when none. */
static bool explain_view(const struct ctx *x, const struct view *w, char *reason, size_t rsz,
			 bool set)
{
	const struct drv_job *j = x->job;
	const char *where = x->pool_restricted ? " in the allowed pools" : "";
	char a[48], b[48];
	int32_t i;
	int k;

	for (i = 0; i < j->ngroups; i++)
		if (j->groups[i].gpus > w->max_node_gpus) {
			snprintf(reason, rsz, "a task needs %d GPUs on one node; the largest node%s has %d",
				 (int)j->groups[i].gpus, where, (int)w->max_node_gpus);
			if (set)
				set_info(x, DRV_WHY_INVALID, j->groups[i].gpus, w->max_node_gpus, true);
			return true;
		}
	for (k = 0; k < x->nmodels; k++) {
		int mi = x->models[k];
		const char *mn = drv_gpu_model_at(mi)->short_name;
		int32_t need = x->need_by_model[mi];
		if (w->total_by_model[mi] == 0) {
			char have[160];
			size_t hl = 0;
			int q;
			have[0] = 0;
			for (q = 0; q < drv_gpu_model_count() && hl < sizeof(have); q++)
				if (w->total_by_model[q] > 0) {
					int n = snprintf(have + hl, sizeof(have) - hl, "%s%s", hl ? ", " : "",
							 drv_gpu_model_at(q)->short_name);
					if (n > 0)
						hl += (size_t)n;
				}
			snprintf(reason, rsz, "needs %d %s GPU%s; %s none (only %s)", (int)need, mn,
				 need == 1 ? "" : "s",
				 x->pool_restricted ? "the allowed pools have" : "the cluster has",
				 hl ? have : "nodes without GPUs up");
			if (set)
				set_info(x, DRV_WHY_MODEL, need, 0, true);
			return true;
		}
		if (w->by_model[mi] < need) {
			snprintf(reason, rsz, "needs %d %s GPU%s; %d are free%s", (int)need, mn,
				 need == 1 ? "" : "s", (int)w->by_model[mi], where);
			if (set)
				set_info(x, DRV_WHY_MODEL, need, w->by_model[mi], false);
			return true;
		}
	}
	if (w->free_gpus < x->need_gpus) {
		snprintf(reason, rsz, "needs %lld GPU%s; %lld %s free%s", (long long)x->need_gpus,
			 x->need_gpus == 1 ? "" : "s", (long long)w->free_gpus,
			 w->free_gpus == 1 ? "is" : "are", where);
		if (set)
			set_info(x, DRV_WHY_CAPACITY, x->need_gpus, w->free_gpus, false);
		return true;
	}
	if (w->free_milli < x->need_milli) {
		gpus_phrase(a, sizeof(a), x->need_milli);
		gpus_phrase(b, sizeof(b), w->free_milli);
		snprintf(reason, rsz, "needs %s; %s are free%s", a, b, where);
		if (set)
			set_info(x, DRV_WHY_CAPACITY, x->need_milli, w->free_milli, false);
		return true;
	}
	if (x->req_level >= 0 && w->max_free_at[x->req_level] < x->need_gpus) {
		snprintf(reason, rsz, "needs %lld GPUs under one %s; the emptiest %s has %d free",
			 (long long)x->need_gpus, level_word(x), level_word(x),
			 (int)w->max_free_at[x->req_level]);
		if (set)
			set_info(x, DRV_WHY_TOPOLOGY, x->need_gpus, w->max_free_at[x->req_level], false);
		return true;
	}
	if (x->slice_level >= 0 && w->max_free_at[x->slice_level] < x->slice_gpus) {
		snprintf(reason, rsz, "needs %d GPUs in a slice of %d tasks under one %s; the emptiest %s has %d free",
			 (int)x->slice_gpus, (int)x->slice_size, slice_word(x), slice_word(x),
			 (int)w->max_free_at[x->slice_level]);
		if (set)
			set_info(x, DRV_WHY_TOPOLOGY, x->slice_gpus, w->max_free_at[x->slice_level], false);
		return true;
	}
	if (x->max_task_gpus > w->max_node_free) {
		snprintf(reason, rsz, "a task needs %d free GPUs on one node; the emptiest node%s has %d",
			 (int)x->max_task_gpus, where, (int)w->max_node_free);
		if (set)
			set_info(x, DRV_WHY_FRAGMENTED, x->max_task_gpus, w->max_node_free, false);
		return true;
	}
	if (w->max_node_gpus > 0 && x->max_task_gpus >= w->max_node_gpus &&
	    tasks_of_size(x, w->max_node_gpus) > w->free_nodes) {
		int32_t t = tasks_of_size(x, w->max_node_gpus);
		snprintf(reason, rsz, "needs %d whole free nodes of %d GPUs; %d are free%s", (int)t,
			 (int)w->max_node_gpus, (int)w->free_nodes, where);
		if (set)
			set_info(x, DRV_WHY_FRAGMENTED, t, w->free_nodes, false);
		return true;
	}
	return false;
}

/*
 * The most whole free nodes of node_gpus GPUs under one allowed vertex of
 * level L (the topmost at level >= L on each path). Visits the vertices
 * above L only: for explaining refusals, not for searching.
 */
static int32_t best_free_nodes_at(const struct ctx *x, int32_t vi, int L)
{
	const struct drv_vertex *v = &x->c->vertices[vi];
	int32_t ch, best = 0;

	if (!vertex_allowed(x, v))
		return 0;
	if (v->level >= L)
		return v->free_nodes;
	for (ch = v->first_child; ch >= 0; ch = x->c->vertices[ch].next_sibling) {
		int32_t b = best_free_nodes_at(x, ch, L);
		if (b > best)
			best = b;
	}
	return best;
}

/* Slices of per whole GPUs that fit under the slice-level vertices below vi
 * (each on its own; for explaining refusals only). */
static int64_t slice_room(const struct ctx *x, int32_t vi, int32_t per)
{
	const struct drv_vertex *v = &x->c->vertices[vi];
	int32_t ch;
	int64_t n = 0;

	if (!vertex_allowed(x, v))
		return 0;
	if (v->level >= x->slice_level || v->node >= 0)
		return v->free_gpus / per;
	for (ch = v->first_child; ch >= 0; ch = x->c->vertices[ch].next_sibling)
		n += slice_room(x, ch, per);
	return n;
}

/* The same under the one vertex of the required level with the most. */
static int64_t slice_room_req(const struct ctx *x, int32_t vi, int32_t per)
{
	const struct drv_vertex *v = &x->c->vertices[vi];
	int32_t ch;
	int64_t best = 0;

	if (x->req_level < 0 || v->level >= x->req_level || v->node >= 0)
		return slice_room(x, vi, per);
	for (ch = v->first_child; ch >= 0; ch = x->c->vertices[ch].next_sibling)
		best = DRV_MAX(best, slice_room_req(x, ch, per));
	return best;
}

/* A sliced job that found no placement though the aggregates allowed it. */
static bool explain_slices(const struct ctx *x, const struct view *w, char *reason, size_t rsz)
{
	int32_t nslices;
	int64_t room;

	if (x->slice_level < 0 || x->slice_size <= 0 ||
	    (x->req_level >= 0 && x->slice_level <= x->req_level))
		return false;
	nslices = x->ntasks / x->slice_size;
	room = x->slice_gpus > 0 ? slice_room_req(x, 0, x->slice_gpus) : -1;
	if (room >= 0 && room < nslices)
		snprintf(reason, rsz,
			 "needs %d slices of %d tasks (%d GPUs each), each under one %s; %s%s%sthere is room for %lld (%lld GPUs free in all)",
			 (int)nslices, (int)x->slice_size, (int)x->slice_gpus, slice_word(x),
			 x->req_level >= 0 ? "under the best " : "",
			 x->req_level >= 0 ? level_word(x) : "", x->req_level >= 0 ? " " : "",
			 (long long)room, (long long)w->free_gpus);
	else
		snprintf(reason, rsz,
			 "needs %d slices of %d tasks, each under one %s; no %s has free GPUs, CPU and memory that fit a slice",
			 (int)nslices, (int)x->slice_size, slice_word(x), slice_word(x));
	set_info(x, DRV_WHY_TOPOLOGY, nslices, room < 0 ? 0 : room, false);
	return true;
}

static void explain(const struct ctx *x, char *reason, size_t rsz)
{
	struct view w;
	char a[48];
	int32_t whole;

	make_view(x, &w);
	if (explain_view(x, &w, reason, rsz, true) || explain_slices(x, &w, reason, rsz))
		return;
	if (x->job->exclusive) {
		snprintf(reason, rsz, "needs whole nodes (exclusive) for %d tasks; %d node%s%s %s nothing on %s",
			 (int)drv_job_tasks(x->job), (int)w.free_nodes, w.free_nodes == 1 ? "" : "s",
			 x->pool_restricted ? " in the allowed pools" : "",
			 w.free_nodes == 1 ? "has" : "have", w.free_nodes == 1 ? "it" : "them");
		set_info(x, DRV_WHY_FRAGMENTED, drv_job_tasks(x->job), w.free_nodes, false);
		return;
	}
	if (x->need_milli == 0) {
		snprintf(reason, rsz, "needs %d CPU-only tasks; no %s has the CPU and memory free for them",
			 (int)drv_job_tasks(x->job), x->req_level >= 0 ? level_word(x) : "node");
		set_info(x, DRV_WHY_CAPACITY, 0, 0, false);
		return;
	}
	gpus_phrase(a, sizeof(a), x->need_milli);
	whole = w.max_node_gpus > 0 ? tasks_of_size(x, w.max_node_gpus) : 0;
	if (x->req_level >= 0 && whole > 0) {
		int32_t best = best_free_nodes_at(x, 0, x->req_level);
		if (best < whole) {
			snprintf(reason, rsz,
				 "needs %d whole free nodes under one %s; the best %s has %d (%lld GPUs free in all)",
				 (int)whole, level_word(x), level_word(x), (int)best,
				 (long long)w.free_gpus);
			set_info(x, DRV_WHY_TOPOLOGY, whole, best, false);
			return;
		}
	}
	if (x->req_level >= 0)
		snprintf(reason, rsz,
			 "needs %s as %d tasks under one %s; no %s has free GPUs, CPU and memory that fit every task",
			 a, (int)drv_job_tasks(x->job), level_word(x), level_word(x));
	else
		snprintf(reason, rsz,
			 "needs %s as %d tasks; %lld GPUs are free but not on nodes that fit every task (GPUs, GPU memory, CPU or memory per node%s)",
			 a, (int)drv_job_tasks(x->job), (long long)w.free_gpus,
			 x->job->nnode_selector > 0 ? ", the node labels it asks for" : "");
	set_info(x, x->req_level >= 0 ? DRV_WHY_TOPOLOGY : DRV_WHY_FRAGMENTED, x->need_gpus,
		 w.free_gpus, false);
}

/* ---- the entry points ------------------------------------------------- */

/*
 * An exclusive job, placed: on each of its nodes one task (the first that
 * holds whole GPUs or none) also takes what the job left free there, every
 * GPU, CPU and MiB, and every task is marked exclusive so that no other
 * job's task fits while it runs. The last task is marked first, so all
 * are; without keep all are taken back again.
 */
static void claim_nodes(struct ctx *x, bool keep)
{
	struct drv_placement *out = x->out;
	int32_t i, j;

	if (x->unmarked >= 0) /* slices leave every task marked */
		drv__task_apply(x->c, &out->tasks[x->unmarked], +1);
	for (i = 0; i < out->ntasks; i++) {
		struct drv_task_place *tp = &out->tasks[i];
		const struct drv_node *n = &x->c->nodes[tp->node];
		uint64_t all = n->ngpus >= 64 ? ~0ULL : (1ULL << n->ngpus) - 1, free = 0;
		int k;

		for (j = 0; j < i; j++)
			if (out->tasks[j].node == tp->node && out->tasks[j].exclusive)
				break;
		if (j < i || (tp->gpu_mask && tp->gpu_milli != DRV_MILLI))
			continue; /* the node has its claimer, or this one holds a share */
		drv__task_apply(x->c, tp, -1);
		for (k = 0; k < n->ngpus; k++)
			if (n->gpu_milli_used[k] == 0 && n->gpu_mem_used[k] == 0)
				free |= 1ULL << k;
		tp->gpu_mask |= free & all;
		if (tp->gpu_mask)
			tp->gpu_milli = DRV_MILLI;
		tp->cpu_milli = n->cpu_milli - n->cpu_used;
		tp->mem_mib = n->mem_mib - n->mem_used;
		tp->exclusive = 1;
		drv__task_apply(x->c, tp, +1);
	}
	for (i = 0; i < out->ntasks; i++)
		if (!out->tasks[i].exclusive) {
			out->tasks[i].exclusive = 1;
			x->c->nodes[out->tasks[i].node].excl_tasks++;
		}
	if (!keep)
		for (i = out->ntasks - 1; i >= 0; i--)
			drv__task_apply(x->c, &out->tasks[i], -1);
}

static int place(const struct drv_cluster *c, const struct drv_job *job,
		 const struct drv_place_opts *opts, struct drv_placement *out, char *reason,
		 size_t reasonsz, bool keep)
{
	struct ctx x;
	struct view w;
	struct drv__mix_flat flat;
	int32_t order_local[MAX_LOCAL_GROUPS], first_local[MAX_LOCAL_GROUPS];
	int32_t *order = order_local, *first = first_local;
	int32_t ntasks, i, j;
	char dummy[4];
	bool ok;
	int rc;

	if (!reason) {
		reason = dummy;
		reasonsz = sizeof(dummy);
	}
	if (reasonsz)
		reason[0] = 0;
	out->ntasks = 0;
	rc = setup(&x, c, job, opts, reason, reasonsz);
	if (rc)
		return rc;
	x.out = out;
	if (opts && opts->info)
		memset(opts->info, 0, sizeof(*opts->info));

	/* Quick refusal from the root aggregates: the common failure is cheap. */
	make_view(&x, &w);
	if (explain_view(&x, &w, reason, reasonsz, true))
		return DRV_ENOSPACE;

	ntasks = drv_job_tasks(job);
	DRV_GROW(out->tasks, (size_t)ntasks, out->cap);
	out->ntasks = ntasks;
	if (job->ngroups > MAX_LOCAL_GROUPS) {
		order = drv_malloc(sizeof(int32_t) * (size_t)job->ngroups);
		first = drv_malloc(sizeof(int32_t) * (size_t)job->ngroups);
	}
	for (i = 0, j = 0; i < job->ngroups; i++) {
		first[i] = j;
		j += job->groups[i].count;
	}
	for (i = 0; i < ntasks; i++) {
		memset(&out->tasks[i], 0, sizeof(out->tasks[i]));
		out->tasks[i].node = -1;
	}
	/* Largest tasks first: whole GPUs descending, then shares, then CPU-only. */
	for (i = 0; i < job->ngroups; i++) {
		const struct drv_task_group *g = &job->groups[i];
		int64_t k = (int64_t)g->gpus * DRV_MILLI + g->gpu_milli;
		for (j = i - 1; j >= 0; j--) {
			const struct drv_task_group *h = &job->groups[order[j]];
			if ((int64_t)h->gpus * DRV_MILLI + h->gpu_milli >= k)
				break;
			order[j + 1] = order[j];
		}
		order[j + 1] = i;
	}
	x.order = order;
	x.first = first;
	drv__cluster_kids(x.c);
	x.sp = x.c->scratch;
	x.send = x.c->scratch + x.c->scratch_cap;

	x.unmarked = -1;
	if (opts && opts->strategy == DRV_PLACE_MULTI) {
		drv__mix_flatten(opts, &flat);
		x.flat = &flat;
	}
	ok = search_preferring(&x);
	if (ok && x.include && include_missing(x.c, job, out)) {
		char names[256];

		for (i = ntasks - 1; i >= 0; i--)
			if (i != x.unmarked)
				drv__task_apply(x.c, &out->tasks[i], -1);
		out->ntasks = 0;
		include_list(job, names, sizeof(names));
		snprintf(reason, reasonsz, "waiting for required nodes %s (--nodelist) to have room",
			 names);
		set_info(&x, DRV_WHY_FRAGMENTED, x.need_gpus, 0, false);
		rc = DRV_ENOSPACE;
	} else if (ok && job->exclusive) {
		claim_nodes(&x, keep);
		rc = 0;
	} else if (ok) {
		if (keep) {
			if (x.unmarked >= 0) /* slices leave every task marked */
				drv__task_apply(x.c, &out->tasks[x.unmarked], +1);
		} else
			for (i = ntasks - 1; i >= 0; i--)
				if (i != x.unmarked)
					drv__task_apply(x.c, &out->tasks[i], -1);
		rc = 0;
	} else {
		out->ntasks = 0;
		explain(&x, reason, reasonsz);
		rc = DRV_ENOSPACE;
	}
	if (order != order_local) {
		drv_free(order);
		drv_free(first);
	}
	return rc;
}

int drv_place(const struct drv_cluster *c, const struct drv_job *job,
	      const struct drv_place_opts *opts, struct drv_placement *out, char *reason,
	      size_t reasonsz)
{
	return place(c, job, opts, out, reason, reasonsz, false);
}

int drv_place_commit(struct drv_cluster *c, const struct drv_job *job,
		     const struct drv_place_opts *opts, struct drv_placement *out, char *reason,
		     size_t reasonsz)
{
	return place(c, job, opts, out, reason, reasonsz, true);
}

int drv_place_may_fit(const struct drv_cluster *c, const struct drv_job *job,
		      const struct drv_place_opts *opts)
{
	struct ctx x;
	struct view w;
	char r[8];
	int rc = setup(&x, c, job, opts, r, sizeof(r));

	if (rc)
		return rc == DRV_EINVAL ? DRV_EINVAL : DRV_ENOSPACE;
	make_view(&x, &w);
	return explain_view(&x, &w, r, sizeof(r), false) ? DRV_ENOSPACE : 0;
}

/* The largest total under one topmost allowed vertex at level >= L. */
static void static_level_max(const struct ctx *x, struct view *w, int L)
{
	const struct drv_cluster *c = x->c;
	int32_t i;

	if (L < 0)
		return;
	for (i = 0; i < c->nvertices; i++) {
		const struct drv_vertex *v = &c->vertices[i];
		if (v->level < L)
			continue;
		if (v->parent >= 0 && c->vertices[v->parent].level >= L)
			continue;
		if (v->pool >= 0 && !((x->pools_ok >> v->pool) & 1))
			continue;
		w->max_free_at[L] = DRV_MAX(w->max_free_at[L], v->total_gpus);
	}
}

int drv_place_check_static(const struct drv_cluster *c, const struct drv_job *job,
			   const struct drv_place_opts *opts, char *reason, size_t reasonsz)
{
	struct ctx x;
	struct view w;
	int32_t i;
	char dummy[4];
	int rc;

	if (!reason) {
		reason = dummy;
		reasonsz = sizeof(dummy);
	}
	rc = setup(&x, c, job, opts, reason, reasonsz);
	if (rc)
		return rc;
	/* Every node the job must have exists (Slurm refuses the job otherwise). */
	for (i = 0; x.include && i < job->nnode_selector; i++) {
		const char *want = job->node_selector[i].value;
		int32_t k;

		if (strcmp(job->node_selector[i].key, DRV_LABEL_INCLUDE) != 0)
			continue;
		for (k = 0; k < c->nnodes; k++)
			if (c->nodes[k].name && !strcmp(c->nodes[k].name, want))
				break;
		if (k == c->nnodes || !drv_job_node_ok(c, job, &c->nodes[k])) {
			snprintf(reason, reasonsz, "Invalid node name specified: %s (--nodelist) %s",
				 want, k == c->nnodes ? "is not a node of this cluster"
						      : "is ruled out by the job's other node rules");
			set_info(&x, DRV_WHY_INVALID, 0, 0, true);
			return DRV_ENOSPACE;
		}
	}
	/* The view of an empty cluster: totals of the up nodes in allowed pools. */
	memset(&w, 0, sizeof(w));
	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		if (n->state != DRV_NODE_UP)
			continue;
		if (n->pool >= 0 && !((x.pools_ok >> n->pool) & 1))
			continue;
		if (n->pool < 0 && x.pool_restricted)
			continue;
		if (job->nnode_selector > 0 && !drv_job_node_ok(c, job, n))
			continue;
		w.free_gpus += n->ngpus;
		w.free_milli += (int64_t)n->ngpus * DRV_MILLI;
		w.total_gpus += n->ngpus;
		w.free_nodes++;
		w.total_nodes++;
		w.max_node_free = DRV_MAX(w.max_node_free, n->ngpus);
		w.max_node_gpus = DRV_MAX(w.max_node_gpus, n->ngpus);
		if (n->model >= 0)
			w.by_model[n->model] += n->ngpus, w.total_by_model[n->model] += n->ngpus;
	}
	static_level_max(&x, &w, x.req_level);
	static_level_max(&x, &w, x.slice_level);
	if (explain_view(&x, &w, reason, reasonsz, true)) {
		if (opts && opts->info)
			opts->info->never = true;
		return DRV_ENOSPACE;
	}
	return 0;
}

/* ---- text form -------------------------------------------------------- */

size_t drv_placement_format(const struct drv_cluster *c, const struct drv_placement *p,
			    char *buf, size_t bufsz)
{
	size_t len = 0;
	int32_t i;

#define PUT(...)                                                                   \
	do {                                                                       \
		int n_ = snprintf(bufsz > len ? buf + len : NULL,                  \
				  bufsz > len ? bufsz - len : 0, __VA_ARGS__);     \
		if (n_ > 0)                                                        \
			len += (size_t)n_;                                         \
	} while (0)

	if (bufsz)
		buf[0] = 0;
	for (i = 0; i < p->ntasks; i++) {
		const struct drv_task_place *t = &p->tasks[i];
		uint64_t m;
		bool firstg = true;
		const char *name = t->node >= 0 && t->node < c->nnodes ? c->nodes[t->node].name : "?";
		PUT("%s%s", i ? ";" : "", name);
		if (t->gpu_mask)
			PUT(":");
		for (m = t->gpu_mask; m; m &= m - 1) {
			PUT("%s%d", firstg ? "" : ",", __builtin_ctzll(m));
			firstg = false;
		}
	}
#undef PUT
	return len;
}

int drv_placement_parse(const struct drv_cluster *c, const char *s, int32_t gpu_milli,
			struct drv_placement *out)
{
	const char *p = s;

	out->ntasks = 0;
	if (!s || !*s)
		return 0;
	while (*p) {
		const char *e = p;
		char name[DRV_NAME_MAX * 2];
		struct drv_task_place *t;
		int32_t ni;
		size_t nl;

		while (*e && *e != ':' && *e != ';')
			e++;
		nl = (size_t)(e - p);
		if (nl == 0 || nl >= sizeof(name))
			return DRV_EINVAL;
		memcpy(name, p, nl);
		name[nl] = 0;
		ni = drv_cluster_find_node(c, name);
		if (ni < 0)
			return DRV_EINVAL;
		DRV_GROW(out->tasks, (size_t)out->ntasks + 1, out->cap);
		t = &out->tasks[out->ntasks++];
		memset(t, 0, sizeof(*t));
		t->node = ni;
		t->gpu_milli = gpu_milli;
		p = e;
		if (*p == ':') {
			p++;
			for (;;) {
				int g = 0, digits = 0;
				while (*p >= '0' && *p <= '9' && digits < 3) {
					g = g * 10 + (*p++ - '0');
					digits++;
				}
				if (!digits || g >= c->nodes[ni].ngpus)
					return DRV_EINVAL;
				t->gpu_mask |= 1ULL << g;
				if (*p != ',')
					break;
				p++;
			}
		}
		if (*p == ';')
			p++;
		else if (*p)
			return DRV_EINVAL;
	}
	return 0;
}
