/*
 * job.c: jobs as the scheduler sees them (src/core): lifecycle, deep
 * copy, building helpers and the sums the scheduler asks for.
 */
#include "drover/model.h"

#include <stdio.h>
#include <string.h>

void drv_job_init(struct drv_job *j)
{
	memset(j, 0, sizeof(*j));
}

void drv_job_release(struct drv_job *j)
{
	int32_t i;

	for (i = 0; i < j->ngroups; i++)
		drv_free(j->groups[i].name);
	drv_free(j->groups);
	for (i = 0; i < j->nregions; i++)
		drv_free(j->regions[i]);
	drv_free(j->regions);
	for (i = 0; i < j->nnode_selector; i++) {
		drv_free(j->node_selector[i].key);
		drv_free(j->node_selector[i].value);
	}
	drv_free(j->node_selector);
	drv_free(j->name);
	drv_free(j->tenant);
	drv_free(j->user);
	drv_free(j->topo_level);
	drv_free(j->slice_level);
	memset(j, 0, sizeof(*j));
}

void drv_job_copy(struct drv_job *dst, const struct drv_job *src)
{
	int32_t i;

	*dst = *src;
	dst->name = drv_strdup(src->name);
	dst->tenant = drv_strdup(src->tenant);
	dst->user = drv_strdup(src->user);
	dst->topo_level = drv_strdup(src->topo_level);
	dst->slice_level = drv_strdup(src->slice_level);
	dst->groups = NULL;
	if (src->ngroups > 0) {
		dst->groups = drv_malloc(sizeof(*dst->groups) * (size_t)src->ngroups);
		for (i = 0; i < src->ngroups; i++) {
			dst->groups[i] = src->groups[i];
			dst->groups[i].name = drv_strdup(src->groups[i].name);
		}
	}
	dst->regions = NULL;
	if (src->nregions > 0) {
		dst->regions = drv_malloc(sizeof(*dst->regions) * (size_t)src->nregions);
		for (i = 0; i < src->nregions; i++)
			dst->regions[i] = drv_strdup(src->regions[i]);
	}
	dst->node_selector = NULL;
	if (src->nnode_selector > 0) {
		dst->node_selector = drv_malloc(sizeof(*dst->node_selector) *
						(size_t)src->nnode_selector);
		for (i = 0; i < src->nnode_selector; i++) {
			dst->node_selector[i].key = drv_strdup(src->node_selector[i].key);
			dst->node_selector[i].value = drv_strdup(src->node_selector[i].value);
		}
	}
}

void drv_job_add_node_label(struct drv_job *j, const char *key, const char *value)
{
	j->node_selector = drv_realloc(j->node_selector, sizeof(*j->node_selector) *
				       ((size_t)j->nnode_selector + 1));
	j->node_selector[j->nnode_selector].key = drv_strdup(key);
	j->node_selector[j->nnode_selector].value = drv_strdup(value);
	j->nnode_selector++;
}

/* The value of label key on node n (its pool's name for drover.io/pool). */
static const char *node_label(const struct drv_cluster *c, const struct drv_node *n,
			      const char *key)
{
	if (strcmp(key, DRV_LABEL_POOL) == 0)
		return n->pool >= 0 && n->pool < c->npools ? c->pools[n->pool].name : NULL;
	if (strcmp(key, DRV_LABEL_HOST) == 0)
		return n->name;
	for (int32_t i = 0; i < n->nlabels; i++)
		if (n->labels[i].key && strcmp(n->labels[i].key, key) == 0)
			return n->labels[i].value;
	return NULL;
}

/* --- Slurm feature expressions (-C) ----------------------------------- */

struct cx {
	const char *s, *p;
	const struct drv_node *n;   /* NULL: check the syntax only */
	bool bad;
};

static bool cx_or(struct cx *x);

static bool feature_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '.' || ch == ':' || ch == '/' || ch == '=' || ch == '-';
}

static bool has_feature(const struct drv_node *n, const char *f, size_t len)
{
	for (int32_t i = 0; n && i < n->nlabels; i++) {
		const char *k = n->labels[i].key, *v = n->labels[i].value;
		size_t kl = k ? strlen(k) : 0;

		if (!k)
			continue;
		if (kl == len && !memcmp(k, f, len))
			return true;
		if (v && kl < len && f[kl] == '=' && !memcmp(k, f, kl) &&
		    strlen(v) == len - kl - 1 && !memcmp(v, f + kl + 1, len - kl - 1))
			return true;
	}
	return false;
}

static bool cx_atom(struct cx *x)
{
	const char *start = x->p;
	bool v;

	if (*x->p == '(' || *x->p == '[') {
		char close = *x->p == '(' ? ')' : ']';

		x->p++;
		v = cx_or(x);
		if (x->bad || *x->p != close) {
			x->bad = true;
			return false;
		}
		x->p++;
		return v;
	}
	while (feature_char(*x->p))
		x->p++;
	if (x->p == start) {
		x->bad = true;
		return false;
	}
	return has_feature(x->n, start, (size_t)(x->p - start));
}

static bool cx_and(struct cx *x)
{
	bool v = cx_atom(x);

	while (!x->bad && *x->p == '&') {
		x->p++;
		v = cx_atom(x) && v;
	}
	return v;
}

static bool cx_or(struct cx *x)
{
	bool v = cx_and(x);

	while (!x->bad && *x->p == '|') {
		x->p++;
		v = cx_and(x) || v;
	}
	return v;
}

int drv_constraint_check(const char *expr, size_t *at)
{
	struct cx x = { expr, expr, NULL, false };

	cx_or(&x);
	if (x.bad || *x.p) {
		*at = (size_t)(x.p - expr);
		return -1;
	}
	return 0;
}

bool drv_constraint_eval(const char *expr, const struct drv_node *n)
{
	struct cx x = { expr, expr, n, false };
	bool v = cx_or(&x);

	return v && !x.bad && !*x.p;
}

/* Whether an entry keyed DRV_LABEL_EXCLUDE names n, or one keyed
 * DRV_LABEL_CONSTRAINT is not met by n. */
static bool slurm_rules_out(const struct drv_job *j, const struct drv_node *n)
{
	for (int32_t i = 0; i < j->nnode_selector; i++) {
		const struct drv_label *l = &j->node_selector[i];

		if (!strcmp(l->key, DRV_LABEL_EXCLUDE) && n->name && !strcmp(l->value, n->name))
			return true;
		if (!strcmp(l->key, DRV_LABEL_CONSTRAINT) && !drv_constraint_eval(l->value, n))
			return true;
	}
	return false;
}

bool drv_job_pool_ok(const struct drv_job *j, const char *pool_name)
{
	bool keyed = false;

	for (int32_t i = 0; i < j->nnode_selector; i++) {
		if (strcmp(j->node_selector[i].key, DRV_LABEL_POOL) != 0)
			continue;
		keyed = true;
		if (pool_name && strcmp(j->node_selector[i].value, pool_name) == 0)
			return true;
	}
	return !keyed;
}

bool drv_job_node_ok(const struct drv_cluster *c, const struct drv_job *j,
		     const struct drv_node *n)
{
	if (slurm_rules_out(j, n))
		return false;
	for (int32_t i = 0; i < j->nnode_selector; i++) {
		const char *key = j->node_selector[i].key, *have;
		bool ok = false, seen = false;

		if (!strcmp(key, DRV_LABEL_EXCLUDE) || !strcmp(key, DRV_LABEL_CONSTRAINT) ||
		    !strcmp(key, DRV_LABEL_INCLUDE))
			continue;

		for (int32_t k = 0; k < i && !seen; k++)
			seen = strcmp(j->node_selector[k].key, key) == 0;
		if (seen)
			continue;   /* this key was judged at its first entry */
		have = node_label(c, n, key);
		for (int32_t k = i; have && !ok && k < j->nnode_selector; k++)
			ok = strcmp(j->node_selector[k].key, key) == 0 &&
			     strcmp(j->node_selector[k].value, have) == 0;
		if (!ok)
			return false;
	}
	return true;
}

struct drv_task_group *drv_job_add_group(struct drv_job *j, const char *name, int32_t count,
					 int32_t gpus, int32_t gpu_milli)
{
	struct drv_task_group *g;

	/* groups has no capacity field: grow one at a time (jobs have few). */
	j->groups = drv_realloc(j->groups, sizeof(*j->groups) * ((size_t)j->ngroups + 1));
	g = &j->groups[j->ngroups++];
	memset(g, 0, sizeof(*g));
	g->name = drv_strdup(name);
	g->count = count;
	g->gpus = gpus;
	g->gpu_milli = gpus > 0 ? 0 : gpu_milli;
	g->model = -1;
	return g;
}

void drv_job_set_topology(struct drv_job *j, enum drv_topo_mode mode, const char *level)
{
	drv_free(j->topo_level);
	j->topo_level = NULL;
	j->topo_mode = level ? mode : DRV_TOPO_NONE;
	if (level && mode != DRV_TOPO_NONE)
		j->topo_level = drv_strdup(level);
	else
		j->topo_mode = DRV_TOPO_NONE;
}

void drv_job_set_slice(struct drv_job *j, const char *level, int32_t size)
{
	drv_free(j->slice_level);
	j->slice_level = level && size > 0 ? drv_strdup(level) : NULL;
	j->slice_size = level && size > 0 ? size : 0;
}

void drv_job_add_region(struct drv_job *j, const char *region)
{
	j->regions = drv_realloc(j->regions, sizeof(*j->regions) * ((size_t)j->nregions + 1));
	j->regions[j->nregions++] = drv_strdup(region);
}

int32_t drv_job_tasks(const struct drv_job *j)
{
	int32_t i, n = 0;
	for (i = 0; i < j->ngroups; i++)
		n += j->groups[i].count;
	return n;
}

int64_t drv_job_gpu_milli(const struct drv_job *j)
{
	int32_t i;
	int64_t m = 0;
	for (i = 0; i < j->ngroups; i++) {
		const struct drv_task_group *g = &j->groups[i];
		m += (int64_t)g->count * (g->gpus > 0 ? (int64_t)g->gpus * DRV_MILLI : g->gpu_milli);
	}
	return m;
}

int64_t drv_job_whole_gpus(const struct drv_job *j)
{
	int32_t i;
	int64_t n = 0;
	for (i = 0; i < j->ngroups; i++)
		n += (int64_t)j->groups[i].count * j->groups[i].gpus;
	return n;
}

/* Kueue's rule: slices of one size that cut the tasks evenly. */
static int check_slice(const struct drv_job *j, char *why, size_t whysz)
{
	int32_t n = drv_job_tasks(j);

	if (!j->slice_level || !*j->slice_level || j->slice_size < 1) {
		snprintf(why, whysz, "topology slices need a level and a size of at least 1");
		return DRV_EINVAL;
	}
	if (n % j->slice_size != 0) {
		snprintf(why, whysz, "topology slice size %d does not divide the job's %d tasks",
			 (int)j->slice_size, (int)n);
		return DRV_EINVAL;
	}
	return 0;
}

int drv_job_check(const struct drv_job *j, char *why, size_t whysz)
{
	int32_t i;
	char dummy[8];

	if (!why) {
		why = dummy;
		whysz = sizeof(dummy);
	}
	if (j->ngroups <= 0) {
		snprintf(why, whysz, "the job has no task groups");
		return DRV_EINVAL;
	}
	for (i = 0; i < j->ngroups; i++) {
		const struct drv_task_group *g = &j->groups[i];
		const char *gn = g->name ? g->name : "";
		if (g->count <= 0) {
			snprintf(why, whysz, "task group %d (%s): count %d, expected at least 1",
				 (int)i, gn, (int)g->count);
			return DRV_EINVAL;
		}
		if (g->gpus < 0 || g->gpus > DRV_MAX_NODE_GPUS) {
			snprintf(why, whysz, "task group %d (%s): %d GPUs per task, expected 0..%d",
				 (int)i, gn, (int)g->gpus, DRV_MAX_NODE_GPUS);
			return DRV_EINVAL;
		}
		if (g->gpus > 0 && g->gpu_milli != 0) {
			snprintf(why, whysz, "task group %d (%s): both whole GPUs and a GPU share",
				 (int)i, gn);
			return DRV_EINVAL;
		}
		if (g->gpus == 0 && (g->gpu_milli < 0 || g->gpu_milli >= DRV_MILLI)) {
			snprintf(why, whysz,
				 "task group %d (%s): GPU share %d milli, expected 1..999 (or whole GPUs)",
				 (int)i, gn, (int)g->gpu_milli);
			return DRV_EINVAL;
		}
		if (g->model < -1 || g->model >= drv_gpu_model_count()) {
			snprintf(why, whysz, "task group %d (%s): unknown GPU model index %d", (int)i,
				 gn, (int)g->model);
			return DRV_EINVAL;
		}
		if (g->cpu_milli < 0 || g->mem_mib < 0 || g->gpu_mem_mib < 0) {
			snprintf(why, whysz, "task group %d (%s): negative CPU or memory", (int)i, gn);
			return DRV_EINVAL;
		}
	}
	if (j->topo_mode != DRV_TOPO_NONE && (!j->topo_level || !*j->topo_level)) {
		snprintf(why, whysz, "a topology constraint needs a level");
		return DRV_EINVAL;
	}
	if (j->slice_size != 0 || j->slice_level)
		return check_slice(j, why, whysz);
	return 0;
}
