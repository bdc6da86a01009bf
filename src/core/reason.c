/*
 * reason.c: why a job waits, in one place. Two halves:
 *
 *  - What the cluster as configured could ever offer (struct
 *    drv_capacity): every node in any state, elastic pools grown to their
 *    maxNodes, summed per pool and GPU model, once per cluster change. A
 *    job is checked against it in O(groups x pools): it can never run
 *    (DRV_REASON_NEVER, refused at submit), it could run were its down or
 *    draining nodes up (DRV_REASON_NODE_DOWN), or neither.
 *  - The words: the reason code (Slurm's word where Slurm has one) and
 *    the sentence with its numbers, for every pending reason. drover
 *    place, the server and the simulator all print these; times are
 *    durations from now (the core reads no clock).
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- capacity ----------------------------------------------------------- */

#define CAP_ANY DRV_MAX_MODELS      /* the model slot of "any model" */
#define CAP_SLOTS (DRV_MAX_MODELS + 1)
#define CAP_POOLS (DRV_MAX_POOLS + 1) /* the last: nodes in no pool */
#define DOWN_NAMES 4                  /* down nodes remembered by name */

struct cap_cell {
	int32_t max_gpus;   /* most GPUs on one node */
	int64_t max_cpu;    /* most CPU (milli) on one node with a GPU of the model */
	int64_t max_mem;    /* most memory (MiB) on the same */
	int64_t gpus;       /* GPUs in all */
	bool any;           /* some node */
};

/* One view: every node (all) or the up ones (up); elastic growth in both. */
struct cap_view {
	struct cap_cell cell[CAP_POOLS][CAP_SLOTS];
	int32_t level_max[DRV_MAX_LEVELS]; /* most GPUs under one vertex of a level */
	bool unknown[CAP_POOLS];           /* elastic pool of unknown shape: anything fits */
};

struct drv_capacity {
	struct cap_view v[2];   /* 0 = all nodes, 1 = up nodes */
	bool empty;             /* no node, no elastic pool: refuse nothing */
	int32_t ndown;          /* nodes down or draining */
	int32_t down[DOWN_NAMES];
};

struct drv_capacity *drv_capacity_new(void)
{
	return drv_calloc(1, sizeof(struct drv_capacity));
}

void drv_capacity_free(struct drv_capacity *cap)
{
	drv_free(cap);
}

static void cell_add(struct cap_cell *c, int32_t gpus, int64_t cpu, int64_t mem, int64_t count)
{
	c->any = true;
	c->max_gpus = DRV_MAX(c->max_gpus, gpus);
	c->max_cpu = DRV_MAX(c->max_cpu, cpu);
	c->max_mem = DRV_MAX(c->max_mem, mem);
	c->gpus += (int64_t)gpus * count;
}

/* count nodes of this shape in pool slot p of view w. */
static void view_add(struct cap_view *w, int32_t p, int model, int32_t gpus, int64_t cpu,
		     int64_t mem, int64_t count)
{
	cell_add(&w->cell[p][CAP_ANY], gpus, cpu, mem, count);
	if (model >= 0 && model < DRV_MAX_MODELS && gpus > 0)
		cell_add(&w->cell[p][model], gpus, cpu, mem, count);
}

static int32_t pool_slot(const struct drv_cluster *c, int32_t pool)
{
	return pool >= 0 && pool < c->npools && pool < DRV_MAX_POOLS ? pool : DRV_MAX_POOLS;
}

/* Most GPUs under one vertex of each level, over the nodes of a view. */
static void levels_add(struct cap_view *w, const struct drv_cluster *c, bool up_only)
{
	int32_t *sum = drv_calloc((size_t)c->nvertices + 1, sizeof(*sum));
	int32_t i, v;

	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		if (up_only && n->state != DRV_NODE_UP)
			continue;
		for (v = n->vertex; v >= 0 && v < c->nvertices; v = c->vertices[v].parent)
			sum[v] += n->ngpus;
	}
	for (v = 0; v < c->nvertices; v++) {
		int l = c->vertices[v].level;
		if (l >= 0 && l < DRV_MAX_LEVELS)
			w->level_max[l] = DRV_MAX(w->level_max[l], sum[v]);
	}
	drv_free(sum);
}

/* Elastic pools at maxNodes: the nodes they may still add, shaped like
 * their first node, else like the template the caller knows (tmpl_gpus[p]
 * GPUs of tmpl_model[p], CPU and memory unbounded), else unknown. */
static void elastic_add(struct drv_capacity *cap, const struct drv_cluster *c,
			const int32_t *tmpl_gpus, const int32_t *tmpl_model)
{
	int32_t p, i;
	for (p = 0; p < c->npools && p < DRV_MAX_POOLS; p++) {
		const struct drv_pool *po = &c->pools[p];
		const struct drv_node *first = NULL;
		int32_t have = 0, more;
		if (!po->elastic || po->max_nodes <= 0)
			continue;
		cap->empty = false;
		for (i = 0; i < c->nnodes; i++)
			if (c->nodes[i].pool == p && have++ == 0)
				first = &c->nodes[i];
		more = po->max_nodes - have;
		if (more <= 0)
			continue;
		for (int k = 0; k < 2; k++) {
			if (first)
				view_add(&cap->v[k], p, first->model, first->ngpus, first->cpu_milli,
					 first->mem_mib, more);
			else if (tmpl_gpus && tmpl_gpus[p] > 0)
				view_add(&cap->v[k], p, tmpl_model ? tmpl_model[p] : -1, tmpl_gpus[p],
					 INT64_MAX, INT64_MAX, more);
			else
				cap->v[k].unknown[p] = true;
		}
	}
}

void drv_capacity_build(struct drv_capacity *cap, const struct drv_cluster *c,
			const int32_t *tmpl_gpus, const int32_t *tmpl_model)
{
	int32_t i;
	memset(cap, 0, sizeof(*cap));
	cap->empty = c->nnodes == 0;
	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		int32_t p = pool_slot(c, n->pool);
		view_add(&cap->v[0], p, n->model, n->ngpus, n->cpu_milli, n->mem_mib, 1);
		if (n->state == DRV_NODE_UP)
			view_add(&cap->v[1], p, n->model, n->ngpus, n->cpu_milli, n->mem_mib, 1);
		else if (cap->ndown++ < DOWN_NAMES)
			cap->down[cap->ndown - 1] = i;
	}
	levels_add(&cap->v[0], c, false);
	levels_add(&cap->v[1], c, true);
	elastic_add(cap, c, tmpl_gpus, tmpl_model);
}

bool drv_capacity_empty(const struct drv_capacity *cap)
{
	return cap->empty;
}

static bool region_ok(const struct drv_job *job, const char *region)
{
	for (int32_t i = 0; i < job->nregions; i++)
		if (region && job->regions[i] && !strcmp(job->regions[i], region))
			return true;
	return job->nregions <= 0;
}

/* Pool slots the job may use (bit DRV_MAX_POOLS: nodes in no pool). */
static void allowed_pools(const struct drv_cluster *c, const struct drv_job *job, bool *ok)
{
	int32_t p;
	for (p = 0; p < CAP_POOLS; p++)
		ok[p] = false;
	for (p = 0; p < c->npools && p < DRV_MAX_POOLS; p++)
		ok[p] = region_ok(job, c->pools[p].region) && (!c->pools[p].spot || job->preemptible);
	ok[DRV_MAX_POOLS] = job->nregions <= 0;
}

/* The best of the allowed pools' cells for model slot m. */
static bool view_cell(const struct cap_view *w, const bool *ok, int m, struct cap_cell *out)
{
	memset(out, 0, sizeof(*out));
	for (int32_t p = 0; p < CAP_POOLS; p++) {
		const struct cap_cell *x = &w->cell[p][m];
		if (!ok[p])
			continue;
		if (w->unknown[p])
			return false;
		if (!x->any)
			continue;
		out->any = true;
		out->max_gpus = DRV_MAX(out->max_gpus, x->max_gpus);
		out->max_cpu = DRV_MAX(out->max_cpu, x->max_cpu);
		out->max_mem = DRV_MAX(out->max_mem, x->max_mem);
		out->gpus += x->gpus;
	}
	return true;
}

static uint32_t models_present(const struct cap_view *w, const bool *ok)
{
	uint32_t mask = 0;
	for (int32_t p = 0; p < CAP_POOLS; p++)
		for (int m = 0; ok[p] && m < DRV_MAX_MODELS; m++)
			if (w->cell[p][m].gpus > 0)
				mask |= 1u << m;
	return mask;
}

static void why_set(struct drv_sched_decision *w, enum drv_never_what what, int model, int64_t need,
		    int64_t have)
{
	w->count = (int32_t)what;
	w->model = model;
	w->n[0] = need;
	w->n[1] = have;
}

/* A group asking for gpu_mem_mib of each GPU: true (and why) when no GPU
 * model present (of its own model, if it names one) has that much. */
static bool gpu_mem_never(const struct cap_view *w, const bool *ok, const struct drv_task_group *g,
			  struct drv_sched_decision *out)
{
	uint32_t present = models_present(w, ok);
	int64_t most = 0;
	int best = -1;

	for (int m = 0; m < DRV_MAX_MODELS; m++) {
		const struct drv_gpu_model *x = drv_gpu_model_at(m);
		if (!(present & (1u << m)) || !x || (g->model >= 0 && m != g->model))
			continue;
		if (x->mem_mib > most) {
			most = x->mem_mib;
			best = m;
		}
	}
	if (best < 0 || most >= g->gpu_mem_mib)
		return false;
	why_set(out, DRV_NEVER_GPU_MEM, best, g->gpu_mem_mib, most);
	return true;
}

/* One task group against a view; true when it can never fit there. */
static bool group_never(const struct cap_view *w, const bool *ok, const struct drv_task_group *g,
			struct drv_sched_decision *out)
{
	bool gpus = g->gpus > 0 || g->gpu_milli > 0 || drv_group_mem_share(g);
	int m = gpus && g->model >= 0 && g->model < DRV_MAX_MODELS ? g->model : CAP_ANY;
	int model = m == CAP_ANY ? -1 : m;
	struct cap_cell x;

	if (!view_cell(w, ok, m, &x))
		return false;
	if (gpus && m != CAP_ANY && x.gpus == 0) {
		why_set(out, DRV_NEVER_MODEL, model, 0, 0);
		out->n[2] = models_present(w, ok);
		return true;
	}
	if (!x.any) {
		why_set(out, DRV_NEVER_POOLS, -1, 2, 0);
		return true;
	}
	if (g->gpu_mem_mib > 0 && gpus && gpu_mem_never(w, ok, g, out))
		return true;
	if (g->gpus > x.max_gpus || ((g->gpu_milli > 0 || drv_group_mem_share(g)) && x.max_gpus == 0)) {
		why_set(out, DRV_NEVER_TASK_GPUS, model, DRV_MAX(g->gpus, 1), x.max_gpus);
		return true;
	}
	if (g->cpu_milli > x.max_cpu) {
		why_set(out, DRV_NEVER_TASK_CPU, model, g->cpu_milli, x.max_cpu);
		return true;
	}
	if (g->mem_mib > x.max_mem) {
		why_set(out, DRV_NEVER_TASK_MEM, model, g->mem_mib, x.max_mem);
		return true;
	}
	return false;
}

/* The most whole GPUs one of the job's slices takes; 0 without slices. */
static int64_t slice_gpus(const struct drv_job *job)
{
	int64_t best = 0, sum = 0, t = 0;
	int32_t g, k;

	if (job->slice_size <= 0)
		return 0;
	for (g = 0; g < job->ngroups; g++)
		for (k = 0; k < job->groups[g].count; k++) {
			sum += job->groups[g].gpus;
			if (++t % job->slice_size == 0) {
				best = DRV_MAX(best, sum);
				sum = 0;
			}
		}
	return best;
}

/* A slice larger than any vertex of its level (n[2] = tasks per slice). */
static bool slice_never(const struct cap_view *w, const struct drv_cluster *c,
			const struct drv_job *job, const bool *ok, struct drv_sched_decision *out)
{
	int64_t need = slice_gpus(job);
	int l, m;

	if (need == 0 || (l = drv_cluster_level(c, job->slice_level)) < 0 || l >= DRV_MAX_LEVELS ||
	    need <= w->level_max[l])
		return false;
	for (m = 0; m < CAP_POOLS; m++)
		if (ok[m] && w->unknown[m])
			return false;
	why_set(out, DRV_NEVER_LEVEL, -1, need, w->level_max[l]);
	out->level = l;
	out->n[2] = job->slice_size;
	return true;
}

/* The job against a view: its groups, its whole GPUs by model, its level. */
static bool view_never(const struct cap_view *w, const struct drv_cluster *c,
		       const struct drv_job *job, const bool *ok, struct drv_sched_decision *out)
{
	int64_t need[CAP_SLOTS] = { 0 };
	int32_t g, l;
	int m;

	for (g = 0; g < job->ngroups; g++) {
		const struct drv_task_group *tg = &job->groups[g];
		if (group_never(w, ok, tg, out))
			return true;
		m = tg->model >= 0 && tg->model < DRV_MAX_MODELS ? tg->model : CAP_ANY;
		need[m] += (int64_t)tg->count * tg->gpus;
		if (m != CAP_ANY)
			need[CAP_ANY] += (int64_t)tg->count * tg->gpus;
	}
	for (m = 0; m < CAP_SLOTS; m++) {
		struct cap_cell x;
		if (need[m] == 0 || !view_cell(w, ok, m, &x))
			continue;
		if (need[m] > x.gpus) {
			why_set(out, DRV_NEVER_GPUS, m == CAP_ANY ? -1 : m, need[m], x.gpus);
			return true;
		}
	}
	if (job->topo_mode == DRV_TOPO_REQUIRED && job->topo_level &&
	    (l = drv_cluster_level(c, job->topo_level)) >= 0 && l < DRV_MAX_LEVELS &&
	    need[CAP_ANY] > w->level_max[l]) {
		for (m = 0; m < CAP_POOLS; m++)
			if (ok[m] && w->unknown[m])
				return false;
		why_set(out, DRV_NEVER_LEVEL, -1, need[CAP_ANY], w->level_max[l]);
		out->level = l;
		return true;
	}
	return slice_never(w, c, job, ok, out);
}

/* Whether job names nodes, excludes some or asks for features (Slurm's
 * -w, -x, -C): the nodes it may use are then checked one by one. */
static bool names_nodes(const struct drv_job *job)
{
	for (int32_t i = 0; i < job->nnode_selector; i++) {
		const char *k = job->node_selector[i].key;

		if (!strcmp(k, DRV_LABEL_HOST) || !strcmp(k, DRV_LABEL_EXCLUDE) ||
		    !strcmp(k, DRV_LABEL_CONSTRAINT) || !strcmp(k, DRV_LABEL_INCLUDE))
			return true;
	}
	return false;
}

/* Whether too few of the nodes the job may use (only those up, with
 * up_only) can take a task of group tg: one node, or count of them for
 * distinct nodes; *fit and *need say how many. */
static bool too_few_nodes(const struct drv_cluster *c, const struct drv_job *job,
			  const struct drv_task_group *tg, bool up_only, int64_t *fit, int64_t *need)
{
	*fit = 0;
	*need = tg->distinct_nodes ? tg->count : 1;
	for (int32_t i = 0; i < c->nnodes && *fit < *need; i++) {
		const struct drv_node *n = &c->nodes[i];

		if ((up_only && n->state != DRV_NODE_UP) || !drv_job_node_ok(c, job, n) ||
		    n->ngpus < tg->gpus || n->cpu_milli < tg->cpu_milli || n->mem_mib < tg->mem_mib ||
		    (tg->model >= 0 && (tg->gpus > 0 || tg->gpu_milli > 0) && n->model != tg->model))
			continue;
		(*fit)++;
	}
	return *fit < *need;
}

/* Whether job names node n with key (a node-selector entry's value). */
static bool named(const struct drv_job *job, const char *key, const struct drv_node *n)
{
	for (int32_t i = 0; n->name && i < job->nnode_selector; i++)
		if (!strcmp(job->node_selector[i].key, key) &&
		    !strcmp(job->node_selector[i].value, n->name))
			return true;
	return false;
}

/* Slurm's ReqNodeNotAvail: nodes the job names (-w: required ones,
 * DRV_LABEL_INCLUDE, or the only ones it may use, DRV_LABEL_HOST) are down
 * or draining, and it cannot run without them: a required one among them,
 * or too few of the named nodes up. True with w's n[] and count set. */
static bool req_nodes_down(const struct drv_cluster *c, const struct drv_job *job,
			   struct drv_sched_decision *w)
{
	bool required = false, host = false, short_up = false;
	int64_t nd = 0, fit, need;

	for (int32_t k = 0; k < c->nnodes; k++) {
		const struct drv_node *n = &c->nodes[k];
		bool inc = named(job, DRV_LABEL_INCLUDE, n), hst = named(job, DRV_LABEL_HOST, n);

		host |= hst;
		if ((!inc && !hst) || n->state == DRV_NODE_UP)
			continue;
		required |= inc;
		if (nd < 3)
			w->n[nd] = k;
		nd++;
	}
	for (int32_t g = 0; host && !required && nd && g < job->ngroups && !short_up; g++)
		short_up = too_few_nodes(c, job, &job->groups[g], true, &fit, &need);
	if (!nd || (!required && !short_up))
		return false;
	for (int64_t i = nd; i < 3; i++)
		w->n[i] = -1;
	w->n[3] = nd;
	w->node = (int32_t)w->n[0];
	w->count = required;
	return true;
}

/* True (and why) when too few of the nodes the job may use can take a
 * task of one of its groups (one node; count of them for distinct nodes). */
static bool nodes_never(const struct drv_cluster *c, const struct drv_job *job,
			struct drv_sched_decision *out)
{
	for (int32_t i = 0; i < job->nnode_selector; i++) {
		int32_t k;

		if (strcmp(job->node_selector[i].key, DRV_LABEL_INCLUDE) != 0)
			continue;
		for (k = 0; k < c->nnodes; k++)
			if (c->nodes[k].name && !strcmp(c->nodes[k].name, job->node_selector[i].value))
				break;
		if (k == c->nnodes || !drv_job_node_ok(c, job, &c->nodes[k])) {
			why_set(out, DRV_NEVER_INCLUDE, -1, 0, 0);
			return true;
		}
	}
	for (int32_t g = 0; g < job->ngroups; g++) {
		int64_t fit, need;

		if (too_few_nodes(c, job, &job->groups[g], false, &fit, &need)) {
			why_set(out, DRV_NEVER_NODES, -1, need, fit);
			return true;
		}
	}
	return false;
}

/* Whether an allowed pool may still grow (elastic, below its maxNodes):
 * then the nodes it will have are not known one by one. */
static bool may_grow(const struct drv_cluster *c, const bool *ok)
{
	for (int32_t p = 0; p < c->npools && p < DRV_MAX_POOLS; p++)
		if (ok[p] && c->pools[p].elastic && c->pools[p].max_nodes > 0)
			return true;
	return false;
}

/* True (and why) when a group that wants its tasks on distinct nodes (-N,
 * --ntasks-per-node) has more tasks than the cluster has nodes that fit
 * one, every node counted whatever its state. */
static bool distinct_never(const struct drv_cluster *c, const struct drv_job *job,
			   struct drv_sched_decision *out)
{
	for (int32_t g = 0; g < job->ngroups; g++) {
		int64_t fit, need;

		if (job->groups[g].distinct_nodes && job->groups[g].count > 1 &&
		    too_few_nodes(c, job, &job->groups[g], false, &fit, &need)) {
			why_set(out, DRV_NEVER_DISTINCT, -1, need, fit);
			return true;
		}
	}
	return false;
}

int drv_capacity_check(const struct drv_capacity *cap, const struct drv_cluster *c,
		       const struct drv_job *job, struct drv_sched_decision *w)
{
	bool ok[CAP_POOLS];
	bool any = false;

	memset(w, 0, sizeof(*w));
	w->kind = DRV_DEC_PENDING;
	w->job = job->id;
	w->pool = w->node = w->model = w->level = -1;
	if (cap->empty)
		return 0;
	allowed_pools(c, job, ok);
	for (int32_t p = 0; p < CAP_POOLS; p++)
		any = any || ok[p];
	if (!any) {
		w->reason = DRV_REASON_NEVER;
		why_set(w, DRV_NEVER_POOLS, -1, job->nregions > 0, 0);
		return DRV_REASON_NEVER;
	}
	if (view_never(&cap->v[0], c, job, ok, w) || (names_nodes(job) && nodes_never(c, job, w)) ||
	    (!names_nodes(job) && !may_grow(c, ok) && distinct_never(c, job, w))) {
		w->reason = DRV_REASON_NEVER;
		return DRV_REASON_NEVER;
	}
	if (cap->ndown > 0 && names_nodes(job) && req_nodes_down(c, job, w)) {
		w->reason = DRV_REASON_REQ_NODE;
		return DRV_REASON_REQ_NODE;
	}
	if (cap->ndown > 0 && view_never(&cap->v[1], c, job, ok, w)) {
		w->reason = DRV_REASON_NODE_DOWN;
		w->node = cap->down[0];
		w->n[3] = cap->ndown;
		return DRV_REASON_NODE_DOWN;
	}
	memset(w, 0, sizeof(*w));
	w->pool = w->node = w->model = w->level = -1;
	return 0;
}

/* ---- words -------------------------------------------------------------- */

static const char *const codes[] = {
	[DRV_REASON_NONE] = "None",
	[DRV_REASON_RESOURCES] = "Resources",
	[DRV_REASON_TOPOLOGY] = "Resources",
	[DRV_REASON_QUOTA] = "Quota",
	[DRV_REASON_RESERVATION] = "Priority",
	[DRV_REASON_PRIORITY] = "Priority",
	[DRV_REASON_PREEMPTING] = "Preempting",
	[DRV_REASON_PROVISIONING] = "Provisioning",
	[DRV_REASON_NEVER] = "BadConstraints",
	[DRV_REASON_RESERVED] = "Reservation",
	[DRV_REASON_NODE_DOWN] = "NodeDown",
	[DRV_REASON_USER_JOBS] = "QOSMaxJobsPerUserLimit",
	[DRV_REASON_USER_GPUS] = "QOSMaxGRESPerUser",
	[DRV_REASON_USER_SUBMIT] = "QOSMaxSubmitJobPerUserLimit",
	[DRV_REASON_REQ_NODE] = "ReqNodeNotAvail",
};

const char *drv_sched_reason_code(const struct drv_sched_decision *d)
{
	unsigned r = (unsigned)d->reason;
	return r < DRV_ARRAY_SIZE(codes) && codes[r] ? codes[r] : "None";
}

static void fput_gpus(struct fbuf *f, int64_t milli)
{
	if (milli % DRV_MILLI == 0)
		fput(f, "%" PRId64 " GPU%s", milli / DRV_MILLI, milli == DRV_MILLI ? "" : "s");
	else
		fput(f, "%" PRId64 ".%03" PRId64 " GPUs", milli / DRV_MILLI, milli % DRV_MILLI);
}

static void fput_cpus(struct fbuf *f, int64_t milli)
{
	if (milli % DRV_MILLI == 0)
		fput(f, "%" PRId64 " CPU%s", milli / DRV_MILLI, milli == DRV_MILLI ? "" : "s");
	else
		fput(f, "%" PRId64 ".%03" PRId64 " CPUs", milli / DRV_MILLI, milli % DRV_MILLI);
}

static void fput_mem(struct fbuf *f, int64_t mib)
{
	if (mib >= 1024 && mib % 1024 == 0)
		fput(f, "%" PRId64 " GiB", mib / 1024);
	else
		fput(f, "%" PRId64 " MiB", mib);
}

/* "2h13m", "1m40s", "30s", "3d4h": a duration from now. */
static void fput_in(struct fbuf *f, int64_t at, int64_t now)
{
	int64_t d = at - now;
	if (d <= 0) {
		fput(f, "now");
		return;
	}
	fput(f, "in ");
	if (d >= 86400)
		fput(f, "%" PRId64 "d%" PRId64 "h", d / 86400, d % 86400 / 3600);
	else if (d >= 3600)
		fput(f, "%" PRId64 "h%" PRId64 "m", d / 3600, d % 3600 / 60);
	else if (d >= 60)
		fput(f, "%" PRId64 "m%" PRId64 "s", d / 60, d % 60);
	else
		fput(f, "%" PRId64 "s", d);
}

static const char *model_name(int m)
{
	const struct drv_gpu_model *gm = drv_gpu_model_at(m);
	return gm ? gm->short_name : "GPU";
}

static const char *level_name(const struct drv_cluster *c, int32_t l)
{
	return c && l >= 0 && l < c->nlevels ? c->levels[l] : "required level";
}

static void fput_models(struct fbuf *f, uint32_t mask)
{
	bool first = true;
	if (!mask) {
		fput(f, "no GPUs");
		return;
	}
	fput(f, "only ");
	for (int m = 0; m < DRV_MAX_MODELS; m++)
		if (mask >> m & 1) {
			fput(f, "%s%s", first ? "" : ", ", model_name(m));
			first = false;
		}
}

/* The sentence of a never-fits (up = false) or a node-down (up = true)
 * shortfall: what one task or the job needs, what the cluster has. */
static void fput_never(struct fbuf *f, const struct drv_cluster *c,
		       const struct drv_sched_decision *d, bool up)
{
	const char *node = up ? "largest node up" : "largest node";
	char mnode[64];
	if (d->model >= 0) {
		snprintf(mnode, sizeof(mnode), "largest %s node%s", model_name(d->model),
			 up ? " up" : "");
		node = mnode;
	}
	switch ((enum drv_never_what)d->count) {
	case DRV_NEVER_POOLS:
		fput(f, "%s%s", d->n[0] == 1 ? "no pool of the cluster is in the regions it allows" :
			d->n[0] == 2 ? "no node in the pools it may use" :
			"no pool it may use (spot pools take only preemptible jobs)", up ? " is up" : "");
		break;
	case DRV_NEVER_MODEL:
		fput(f, "needs %s; the cluster has ", model_name(d->model));
		fput_models(f, (uint32_t)d->n[2]);
		if (up)
			fput(f, " up");
		break;
	case DRV_NEVER_TASK_GPUS:
		fput(f, "a task needs %" PRId64 " GPU%s on one node; the %s has %" PRId64, d->n[0],
		     d->n[0] == 1 ? "" : "s", node, d->n[1]);
		break;
	case DRV_NEVER_TASK_CPU:
		fput(f, "a task needs ");
		fput_cpus(f, d->n[0]);
		if (d->n[1] % DRV_MILLI == 0)
			fput(f, "; the %s has %" PRId64, node, d->n[1] / DRV_MILLI);
		else
			fput(f, "; the %s has %" PRId64 ".%03" PRId64, node, d->n[1] / DRV_MILLI,
			     d->n[1] % DRV_MILLI);
		break;
	case DRV_NEVER_TASK_MEM:
		fput(f, "a task needs ");
		fput_mem(f, d->n[0]);
		fput(f, " of memory; the %s has ", node);
		fput_mem(f, d->n[1]);
		break;
	case DRV_NEVER_GPUS:
		fput(f, "needs %" PRId64 " %s%sGPUs; the cluster has %" PRId64 "%s", d->n[0],
		     d->model >= 0 ? model_name(d->model) : "", d->model >= 0 ? " " : "", d->n[1],
		     up ? " up" : "");
		break;
	case DRV_NEVER_GPU_MEM:
		fput(f, "a task needs ");
		fput_mem(f, d->n[0]);
		fput(f, " of one GPU's memory; the largest GPU%s (%s) has ", up ? " up" : "",
		     model_name(d->model));
		fput_mem(f, d->n[1]);
		break;
	case DRV_NEVER_NODES:
		if (d->n[1] == 0)
			fput(f, "no node of the cluster is one it may use (its node list, exclusions "
			     "and features: -w, -x, -C) and fits a task");
		else
			fput(f, "needs %" PRId64 " nodes it may use (its node list, exclusions and "
			     "features: -w, -x, -C) that fit a task; the cluster has %" PRId64, d->n[0],
			     d->n[1]);
		break;
	case DRV_NEVER_DISTINCT:
		fput(f, "needs %" PRId64 " distinct nodes that fit a task; the cluster has %" PRId64,
		     d->n[0], d->n[1]);
		break;
	case DRV_NEVER_INCLUDE:
		fput(f, "Invalid node name specified: a node its node list requires (-w with a "
		     "larger -N) is not a node of the cluster, or -x/-C rule it out");
		break;
	case DRV_NEVER_LEVEL:
		fput(f, "needs %" PRId64 " GPUs under one %s", d->n[0], level_name(c, d->level));
		if (d->n[2] > 0)
			fput(f, " for each slice of %" PRId64 " tasks", d->n[2]);
		fput(f, "; the largest %s%s has %" PRId64, level_name(c, d->level), up ? " up" : "",
		     d->n[1]);
		break;
	default:
		fput(f, "can never run on this cluster");
		break;
	}
}

static void fput_down(struct fbuf *f, const struct drv_cluster *c,
		      const struct drv_sched_decision *d)
{
	const char *name = c && d->node >= 0 && d->node < c->nnodes ? c->nodes[d->node].name : "?";
	fput_never(f, c, d, true);
	fput(f, "; fits when nodes down or draining return: %s", name);
	if (d->n[3] > 1)
		fput(f, " and %" PRId64 " more", d->n[3] - 1);
}

/* ReqNodeNotAvail: Slurm's "UnavailableNodes:a,b" first (squeue's %R
 * shows that part), then why in drover's words. */
static void fput_req_node(struct fbuf *f, const struct drv_cluster *c,
			  const struct drv_sched_decision *d)
{
	fput(f, "UnavailableNodes:");
	for (int i = 0; i < 3 && d->n[i] >= 0; i++)
		fput(f, "%s%s", i ? "," : "",
		     c && d->n[i] < c->nnodes && c->nodes[d->n[i]].name ? c->nodes[d->n[i]].name : "?");
	if (d->n[3] > 3)
		fput(f, " and %" PRId64 " more", d->n[3] - 3);
	fput(f, d->count ? ": a node it requires (-w/--nodelist) is down or draining"
			 : ": too few of the nodes it may use (-w/--nodelist) are up");
}

static void fput_no_preempt(struct fbuf *f, const struct drv_cluster *c,
			    const struct drv_sched_decision *d)
{
	if (d->flags & DRV_DEC_REQ_NODE)
		fput(f, "; it requires node %s (-w/--nodelist)",
		     c && d->node >= 0 && d->node < c->nnodes && c->nodes[d->node].name
		     ? c->nodes[d->node].name : "?");
	if (d->flags & DRV_DEC_NO_VICTIMS)
		fput(f, "; no preemption frees enough");
	if (d->flags & DRV_DEC_CLASS_NEVER)
		fput(f, "; its priority class never preempts");
}

/* Resources: GPUs (count 0), or what a node lacks beside them. */
static void fput_resources(struct fbuf *f, const struct drv_cluster *c,
			   const struct drv_sched_decision *d)
{
	switch (d->count) {
	case DRV_SHORT_CPU:
		fput(f, "a task needs ");
		fput_cpus(f, d->n[0]);
		fput(f, "; at most ");
		fput_cpus(f, d->n[1]);
		fput(f, " free on one node");
		break;
	case DRV_SHORT_MEM:
		fput(f, "a task needs ");
		fput_mem(f, d->n[0]);
		fput(f, " of memory; at most ");
		fput_mem(f, d->n[1]);
		fput(f, " free on one node");
		break;
	default:
		fput(f, "needs ");
		fput_gpus(f, d->n[0]);
		if (d->n[2] > 1)
			fput(f, " (%" PRId64 " per task)", d->n[2]);
		fput(f, "; ");
		fput_gpus(f, d->n[1]);
		fput(f, " free where it may run");
		if (d->n[2] > 1)
			fput(f, ", at most %" PRId64 " on one node", d->n[3] < 0 ? 0 : d->n[3]);
		break;
	}
	fput_no_preempt(f, c, d);
}

static void fput_quota(struct fbuf *f, const struct drv_sched_decision *d)
{
	const struct drv_gpu_model *gm = drv_gpu_model_at(d->model);
	fput(f, "needs ");
	fput_gpus(f, d->n[0]);
	fput(f, " of %s; tenant uses ", gm ? gm->short_name : "GPUs");
	fput_gpus(f, d->n[1]);
	fput(f, " of its quota of ");
	fput_gpus(f, d->n[2]);
	fput(f, ", may borrow ");
	fput_gpus(f, d->n[3] < 0 ? 0 : d->n[3]);
}

static void fput_reason(struct fbuf *f, const struct drv_cluster *c,
			const struct drv_sched_decision *d, int64_t now)
{
	switch (d->reason) {
	case DRV_REASON_RESOURCES:
		fput_resources(f, c, d);
		break;
	case DRV_REASON_TOPOLOGY:
		fput(f, "needs ");
		fput_gpus(f, d->n[0]);
		if (d->count > 0)
			fput(f, " in slices of %d tasks, each", (int)d->count);
		fput(f, " within one %s; ", level_name(c, d->level));
		fput_gpus(f, d->n[1]);
		fput(f, " free in all, not together");
		fput_no_preempt(f, c, d);
		break;
	case DRV_REASON_QUOTA:
		fput_quota(f, d);
		break;
	case DRV_REASON_NEVER:
		fput_never(f, c, d, false);
		break;
	case DRV_REASON_NODE_DOWN:
		fput_down(f, c, d);
		break;
	case DRV_REASON_REQ_NODE:
		fput_req_node(f, c, d);
		break;
	case DRV_REASON_RESERVATION:
		fput(f, "would delay job %" PRIu64 ", whose reservation starts ", (uint64_t)d->n[0]);
		fput_in(f, d->at, now);
		break;
	case DRV_REASON_PRIORITY:
		fput(f, "strict order: behind blocked job %" PRIu64, (uint64_t)d->n[0]);
		break;
	case DRV_REASON_PREEMPTING:
		fput(f, "%" PRId64 " preempted job%s still stopping; grace ends ", d->n[0],
		     d->n[0] == 1 ? "" : "s");
		fput_in(f, d->at, now);
		break;
	case DRV_REASON_PROVISIONING:
		fput(f, "%d node%s coming in pool %s", d->count, d->count == 1 ? "" : "s",
		     c && d->pool >= 0 && d->pool < c->npools ? c->pools[d->pool].name : "-");
		break;
	case DRV_REASON_USER_JOBS:
		fput(f, "its user runs %" PRId64 " job%s; the limit per user is %" PRId64, d->n[0],
		     d->n[0] == 1 ? "" : "s", d->n[1]);
		break;
	case DRV_REASON_USER_GPUS:
		fput(f, "needs ");
		fput_gpus(f, d->n[0]);
		fput(f, "; its user holds ");
		fput_gpus(f, d->n[1]);
		fput(f, " of a limit per user of ");
		fput_gpus(f, d->n[2]);
		break;
	case DRV_REASON_USER_SUBMIT:
		fput(f, "its user has %" PRId64 " earlier job%s queued or running, the limit per user",
		     d->n[0], d->n[0] == 1 ? "" : "s");
		break;
	case DRV_REASON_RESERVED:
		fput(f, "holds a reservation; starts ");
		fput_in(f, d->at, now);
		break;
	default:
		fput(f, "not considered yet");
		break;
	}
}

size_t drv_sched_reason_text(const struct drv_cluster *c, const struct drv_sched_decision *d,
			     int64_t now, char *buf, size_t bufsz)
{
	struct fbuf f = { buf, bufsz, 0 };
	if (bufsz)
		buf[0] = '\0';
	fput_reason(&f, c, d, now);
	return f.len;
}
