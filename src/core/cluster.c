/*
 * cluster.c: the cluster as a topology tree with exact per-vertex
 * aggregates (src/core). Building the tree (levels, vertices, pools,
 * nodes), node state changes, applying and undoing placements, and a full
 * recount for tests.
 *
 * Every change to one node is pushed up its path to the root: sums by
 * delta, maxima by a rescan of each ancestor's children (fan-out times the
 * levels below it), so a change costs O(depth x fan-out) and "does this fit
 * under this vertex" is a comparison. Aggregates count only up nodes;
 * draining and down nodes keep their usage but offer nothing.
 */
#include "drover/model.h"
#include "core_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- small helpers --------------------------------------------------- */

const char *drv_node_state_name(enum drv_node_state st)
{
	switch (st) {
	case DRV_NODE_UP: return "up";
	case DRV_NODE_DRAINING: return "draining";
	case DRV_NODE_DOWN: return "down";
	}
	return "unknown";
}

int drv_node_state_parse(const char *s)
{
	if (!s)
		return -1;
	if (drv_strcaseeq(s, "up"))
		return DRV_NODE_UP;
	if (drv_strcaseeq(s, "draining") || drv_strcaseeq(s, "drain"))
		return DRV_NODE_DRAINING;
	if (drv_strcaseeq(s, "down"))
		return DRV_NODE_DOWN;
	return -1;
}

static int node_level(const struct drv_cluster *c)
{
	return c->nlevels - 1;
}

static void ensure_scratch(struct drv_cluster *c)
{
	/* drv_place keeps up to three nested stacks of child lists with their
	 * keys (search, a slice's, a task's: each at most every vertex once,
	 * twice with keys): six times. */
	size_t need = 6 * (size_t)c->nvertices + 64;
	if (c->scratch_cap < need) {
		size_t cap = c->scratch_cap ? c->scratch_cap : 64;
		while (cap < need)
			cap *= 2;
		c->scratch = drv_realloc(c->scratch, cap * sizeof(*c->scratch));
		c->scratch_cap = cap;
	}
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static void index_put(int32_t *tab, size_t cap, const struct drv_node *nodes, int32_t ni)
{
	size_t k = name_hash(nodes[ni].name) & (cap - 1);
	while (tab[k] >= 0)
		k = (k + 1) & (cap - 1);
	tab[k] = ni;
}

/* Adds node ni to the name index, growing it to keep it at most half full. */
static void index_add(struct drv_cluster *c, int32_t ni)
{
	if ((size_t)(c->nnodes + 1) * 2 > c->name_icap) {
		size_t cap = c->name_icap ? c->name_icap * 2 : 64, k;
		int32_t i;
		while ((size_t)(c->nnodes + 1) * 2 > cap)
			cap *= 2;
		drv_free(c->name_index);
		c->name_index = drv_malloc(cap * sizeof(int32_t));
		for (k = 0; k < cap; k++)
			c->name_index[k] = -1;
		c->name_icap = cap;
		for (i = 0; i < c->nnodes; i++)
			if (i != ni)
				index_put(c->name_index, cap, c->nodes, i);
	}
	index_put(c->name_index, c->name_icap, c->nodes, ni);
}

static int32_t new_vertex(struct drv_cluster *c, int32_t parent, const char *name, int level)
{
	struct drv_vertex *v;
	int32_t id = c->nvertices;
	int l;

	if ((size_t)id + 1 > c->vcap) {
		/* cache-line aligned storage (struct drv_vertex is 64-aligned) */
		size_t cap = c->vcap ? c->vcap * 2 : 16;
		struct drv_vertex *nv = aligned_alloc(64, cap * sizeof(*nv));
		if (!nv)
			abort();
		if (id)
			memcpy(nv, c->vertices, (size_t)id * sizeof(*nv));
		free(c->vertices);
		c->vertices = nv;
		c->vcap = cap;
	}
	v = &c->vertices[id];
	memset(v, 0, sizeof(*v));
	v->name = drv_strdup(name ? name : "");
	v->parent = parent;
	v->first_child = -1;
	v->next_sibling = -1;
	v->last_child = -1;
	v->level = (int16_t)level;
	v->node = -1;
	v->pool = parent >= 0 ? c->vertices[parent].pool : -1;
	for (l = 0; l < DRV_MAX_LEVELS; l++)
		v->max_free_at[l] = 0;
	c->nvertices++;
	if (parent >= 0) {
		struct drv_vertex *p = &c->vertices[parent];
		if (p->last_child < 0)
			p->first_child = id;
		else
			c->vertices[p->last_child].next_sibling = id;
		p->last_child = id;
	}
	ensure_scratch(c);
	return id;
}

void drv_cluster_init(struct drv_cluster *c, const char *name)
{
	memset(c, 0, sizeof(*c));
	c->name = drv_strdup(name ? name : "cluster");
	c->levels[0] = drv_strdup("cluster");
	c->nlevels = 1;
	c->nvl_level = -1;
	new_vertex(c, -1, c->name, 0);
}

void drv_cluster_release(struct drv_cluster *c)
{
	int32_t i;
	int l;

	for (i = 0; i < c->nvertices; i++)
		drv_free(c->vertices[i].name);
	for (i = 0; i < c->nnodes; i++) {
		struct drv_node *n = &c->nodes[i];
		int k;
		drv_free(n->name);
		for (k = 0; k < n->nlabels; k++) {
			drv_free(n->labels[k].key);
			drv_free(n->labels[k].value);
		}
		drv_free(n->labels);
		drv_free(n->gpu_milli_used);
		drv_free(n->gpu_mem_used);
	}
	for (i = 0; i < c->npools; i++) {
		drv_free(c->pools[i].name);
		drv_free(c->pools[i].provider);
		drv_free(c->pools[i].region);
	}
	for (l = 0; l < c->nlevels; l++) {
		drv_free(c->levels[l]);
		drv_free(c->level_labels[l]);
	}
	free(c->vertices); /* aligned_alloc'd */
	drv_free(c->nodes);
	drv_free(c->pools);
	drv_free(c->scratch);
	drv_free(c->name_index);
	drv_free(c->kids);
	drv_free(c->name);
	memset(c, 0, sizeof(*c));
}

int drv_cluster_set_levels(struct drv_cluster *c, const char *const *names, int n)
{
	int l;

	if (n < 2 || n > DRV_MAX_LEVELS)
		return DRV_EINVAL;
	if (c->nvertices > 1)
		return DRV_ESTATE;
	for (l = 0; l < n; l++)
		if (!names[l] || !*names[l])
			return DRV_EINVAL;
	for (l = 0; l < c->nlevels; l++) {
		drv_free(c->levels[l]);
		c->levels[l] = NULL;
	}
	for (l = 0; l < n; l++)
		c->levels[l] = drv_strdup(names[l]);
	c->nlevels = n;
	if (c->nvl_level >= n)
		c->nvl_level = -1;
	return 0;
}

int drv_cluster_level(const struct drv_cluster *c, const char *name)
{
	const char *plain;
	int l;

	if (!name)
		return -1;
	if (drv_strcaseeq(name, "nvlink-domain") || drv_strcaseeq(name, "nvlink"))
		return c->nvl_level >= 0 ? c->nvl_level : node_level(c);
	if (drv_strcaseeq(name, "node"))
		return node_level(c);
	for (l = 0; l < c->nlevels; l++)
		if (drv_strcaseeq(name, c->levels[l]))
			return l;
	for (l = 0; l < c->nlevels; l++)   /* a Kueue topology label the cluster file names */
		if (c->level_labels[l] && strcmp(name, c->level_labels[l]) == 0)
			return l;
	/* only then the name rules: "...-rack" is the leaf unless the file says
	 * which level carries that label (an NVL72 rack is the NVLink domain) */
	if (strchr(name, '/') && (plain = drv_topo_label_level(name)))
		return drv_cluster_level(c, plain);
	return -1;
}

const char *drv_topo_label_level(const char *key)
{
	static const struct {
		const char *needle;
		const char *level;
	} map[] = {
		{ "nvlink-domain", "nvlink-domain" }, { "nvlink", "nvlink-domain" },
		{ "gpu.clique", "nvlink-domain" }, { "clique", "nvlink-domain" },
		{ "hostname", "node" }, { "subblock", "leaf" }, { "rack", "leaf" },
		{ "leaf", "leaf" }, { "block", "spine" }, { "spine", "spine" },
		{ "superpod", "spine" }, { "zone", "pool" }, { "region", "pool" },
		{ "pool", "pool" },
	};
	static const char *const plain[] = { "nvlink-domain", "node", "leaf", "spine", "pool",
					     "cluster" };
	size_t i;
	const char *base;

	if (!key || !*key)
		return NULL;
	for (i = 0; i < DRV_ARRAY_SIZE(plain); i++)
		if (drv_strcaseeq(key, plain[i]))
			return plain[i];
	base = strrchr(key, '/');
	base = base ? base + 1 : key;
	for (i = 0; i < DRV_ARRAY_SIZE(map); i++)
		if (strstr(base, map[i].needle))
			return map[i].level;
	return NULL;
}

int drv_cluster_add_vertex(struct drv_cluster *c, int32_t parent, const char *name)
{
	int level;

	if (parent < 0 || parent >= c->nvertices || c->vertices[parent].node >= 0)
		return DRV_EINVAL;
	level = c->vertices[parent].level + 1;
	if (level >= node_level(c))
		return DRV_EINVAL;
	return new_vertex(c, parent, name, level);
}

int drv_cluster_add_vertex_at(struct drv_cluster *c, int32_t parent, const char *name, int level)
{
	if (parent < 0 || parent >= c->nvertices || c->vertices[parent].node >= 0)
		return DRV_EINVAL;
	if (level <= c->vertices[parent].level || level >= node_level(c))
		return DRV_EINVAL;
	return new_vertex(c, parent, name, level);
}

int drv_cluster_add_pool(struct drv_cluster *c, const struct drv_pool *p)
{
	struct drv_pool *q;
	int32_t id = c->npools;

	if (id >= DRV_MAX_POOLS)
		return DRV_ELIMIT;
	if (p->vertex < 0 || p->vertex >= c->nvertices)
		return DRV_EINVAL;
	DRV_GROW(c->pools, (size_t)id + 1, c->pcap);
	q = &c->pools[id];
	*q = *p;
	q->name = drv_strdup(p->name ? p->name : c->vertices[p->vertex].name);
	q->provider = drv_strdup(p->provider ? p->provider : "onprem");
	q->region = drv_strdup(p->region ? p->region : "");
	c->npools++;
	/* The pool vertex and everything already below it belong to the pool. */
	{
		int32_t v, root = p->vertex;
		for (v = root; v < c->nvertices; v++) {
			int32_t a = v;
			while (a >= 0 && a != root)
				a = c->vertices[a].parent;
			if (a == root) {
				c->vertices[v].pool = id;
				if (c->vertices[v].node >= 0)
					c->nodes[c->vertices[v].node].pool = id;
			}
		}
	}
	return id;
}

/* ---- aggregates ------------------------------------------------------- */

/* What one node offers, from its usage (all zero unless it is up). */
struct node_offer {
	int32_t total_gpus, free_gpus, total_nodes, free_nodes, part_free;
	int64_t free_milli;
};

static void node_offer(const struct drv_node *n, struct node_offer *o)
{
	int g;

	memset(o, 0, sizeof(*o));
	if (n->state != DRV_NODE_UP)
		return;
	o->total_gpus = n->ngpus;
	o->total_nodes = 1;
	for (g = 0; g < n->ngpus; g++) {
		int used = n->gpu_milli_used[g];
		if (used == 0)
			o->free_gpus++;
		else if (used < DRV_MILLI && DRV_MILLI - used > o->part_free)
			o->part_free = DRV_MILLI - used;
		o->free_milli += DRV_MILLI - used;
	}
	if (n->ngpus > 0)
		o->free_nodes = o->free_gpus == n->ngpus;
	else
		o->free_nodes = n->cpu_used == 0 && n->mem_used == 0;
}

/*
 * The most of field l (-1: max_part_free) over vi's children, knowing none
 * exceeds ceiling: stops at the first child that reaches it.
 */
static int32_t rescan(const struct drv_cluster *c, int32_t vi, int l, int32_t ceiling)
{
	const struct drv_vertex *v = &c->vertices[vi];
	bool fresh = c->kids_n == c->nvertices && c->kids;
	int32_t ch, best = 0, k = 0;
	for (ch = fresh ? (v->nkids ? c->kids[v->kid_first] : -1) : v->first_child; ch >= 0;
	     ch = fresh ? (++k < v->nkids ? c->kids[v->kid_first + k] : -1)
			: c->vertices[ch].next_sibling) {
		const struct drv_vertex *w = &c->vertices[ch];
		int32_t x = l < 0 ? w->max_part_free : w->max_free_at[l];
		if (x > best) {
			best = x;
			if (best >= ceiling)
				break;
		}
	}
	return best;
}

/*
 * Brings node ni's vertex and every ancestor up to date with the node's
 * usage and state. The node vertex holds the node's last offer, so the
 * deltas to push up are the difference. Maxima are kept incrementally: a
 * child's value that grew raises the parent's; one that fell lowers it only
 * when that child held the maximum, and then a rescan of the children
 * stops at the first that still reaches the old value.
 */
static void node_refresh(struct drv_cluster *c, int32_t ni)
{
	const struct drv_node *n = &c->nodes[ni];
	struct drv_vertex *nv = &c->vertices[n->vertex];
	struct node_offer o;
	int32_t d_total, d_free, d_tn, d_fn, a;
	int32_t oldc[DRV_MAX_LEVELS], newc[DRV_MAX_LEVELS], olda[DRV_MAX_LEVELS];
	int32_t oldc_part, newc_part, olda_part;
	int64_t d_milli;
	int l, nl = c->nlevels;

	node_offer(n, &o);
	d_total = o.total_gpus - nv->total_gpus;
	d_free = o.free_gpus - nv->free_gpus;
	d_milli = o.free_milli - nv->free_milli;
	d_tn = o.total_nodes - nv->total_nodes;
	d_fn = o.free_nodes - nv->free_nodes;
	if (!d_total && !d_free && !d_milli && !d_tn && !d_fn && nv->max_part_free == o.part_free)
		return; /* nothing any aggregate sees has changed */
	memcpy(oldc, nv->max_free_at, sizeof(oldc));
	oldc_part = nv->max_part_free;
	nv->total_gpus = o.total_gpus;
	nv->free_gpus = o.free_gpus;
	nv->free_milli = o.free_milli;
	nv->total_nodes = o.total_nodes;
	nv->free_nodes = o.free_nodes;
	nv->max_node_free = o.free_gpus;
	nv->max_part_free = o.part_free;
	for (l = 0; l < nl; l++)
		nv->max_free_at[l] = o.free_gpus;
	if (n->model >= 0)
		nv->free_gpus_by_model[n->model] = o.free_gpus;
	if (n->model >= 0)
		nv->total_gpus_by_model[n->model] = o.total_gpus;
	memcpy(newc, nv->max_free_at, sizeof(newc));
	newc_part = nv->max_part_free;
	for (a = nv->parent; a >= 0; a = c->vertices[a].parent) {
		struct drv_vertex *av = &c->vertices[a];
		int lv = av->level;
		memcpy(olda, av->max_free_at, sizeof(olda));
		olda_part = av->max_part_free;
		av->total_gpus += d_total;
		av->free_gpus += d_free;
		av->free_milli += d_milli;
		av->total_nodes += d_tn;
		av->free_nodes += d_fn;
		if (n->model >= 0)
			av->free_gpus_by_model[n->model] += d_free;
		if (n->model >= 0)
			av->total_gpus_by_model[n->model] += d_total;
		for (l = 0; l <= lv && l < nl; l++)
			av->max_free_at[l] = av->free_gpus;
		for (l = lv + 1; l < nl; l++) {
			if (newc[l] >= av->max_free_at[l])
				av->max_free_at[l] = newc[l];
			else if (oldc[l] == av->max_free_at[l] && newc[l] < oldc[l])
				av->max_free_at[l] = rescan(c, a, l, oldc[l]);
		}
		if (newc_part >= av->max_part_free)
			av->max_part_free = newc_part;
		else if (oldc_part == av->max_part_free && newc_part < oldc_part)
			av->max_part_free = rescan(c, a, -1, oldc_part);
		av->max_node_free = av->max_free_at[nl - 1];
		memcpy(oldc, olda, sizeof(oldc));
		memcpy(newc, av->max_free_at, sizeof(newc));
		oldc_part = olda_part;
		newc_part = av->max_part_free;
	}
}

int drv_cluster_add_node(struct drv_cluster *c, int32_t parent, const char *name,
			 int model, int ngpus, int64_t cpu_milli, int64_t mem_mib)
{
	struct drv_node *n;
	int32_t ni, vi, a;

	if (parent < 0 || parent >= c->nvertices || c->vertices[parent].node >= 0)
		return DRV_EINVAL;
	if (c->vertices[parent].level >= node_level(c))
		return DRV_EINVAL;
	if (ngpus < 0 || ngpus > DRV_MAX_NODE_GPUS || cpu_milli < 0 || mem_mib < 0)
		return DRV_EINVAL;
	if (ngpus > 0 && (model < 0 || model >= drv_gpu_model_count()))
		return DRV_EINVAL;
	if (name && drv_cluster_find_node(c, name) >= 0)
		return DRV_EEXIST;
	vi = new_vertex(c, parent, name, node_level(c));
	ni = c->nnodes;
	DRV_GROW(c->nodes, (size_t)ni + 1, c->ncap);
	n = &c->nodes[ni];
	memset(n, 0, sizeof(*n));
	n->name = drv_strdup(name ? name : "");
	n->vertex = vi;
	n->pool = c->vertices[vi].pool;
	n->model = (int8_t)(ngpus > 0 ? model : -1);
	n->ngpus = (int16_t)ngpus;
	n->cpu_milli = cpu_milli;
	n->mem_mib = mem_mib;
	n->state = DRV_NODE_UP;
	n->gpu_milli_used = drv_calloc((size_t)(ngpus ? ngpus : 1), sizeof(uint16_t));
	n->gpu_mem_used = drv_calloc((size_t)(ngpus ? ngpus : 1), sizeof(int32_t));
	c->nnodes++;
	index_add(c, ni);
	c->vertices[vi].node = ni;
	/* NVLink domain: the nearest ancestor at the NVLink level, else the node. */
	n->nvl_domain = vi;
	if (c->nvl_level >= 0 && c->nvl_level < node_level(c))
		for (a = parent; a >= 0; a = c->vertices[a].parent)
			if (c->vertices[a].level == c->nvl_level) {
				n->nvl_domain = a;
				break;
			}
	for (a = vi; a >= 0; a = c->vertices[a].parent) {
		struct drv_vertex *av = &c->vertices[a];
		av->nodes_all++;
		if (ngpus > av->max_node_gpus)
			av->max_node_gpus = ngpus;
	}
	node_refresh(c, ni);
	return ni;
}

void drv__cluster_kids(struct drv_cluster *c)
{
	int32_t i, off = 0;

	if (c->kids_n == c->nvertices && c->kids)
		return;
	drv_free(c->kids);
	c->kids = drv_malloc(sizeof(int32_t) * (size_t)(c->nvertices + 1));
	for (i = 0; i < c->nvertices; i++) {
		c->vertices[i].nkids = 0;
		c->vertices[i].kid_first = 0;
	}
	for (i = 1; i < c->nvertices; i++)
		c->vertices[c->vertices[i].parent].nkids++;
	for (i = 0; i < c->nvertices; i++) {
		c->vertices[i].kid_first = off;
		off += c->vertices[i].nkids;
		c->vertices[i].nkids = 0;
	}
	/* ids grow in creation order, which is sibling order */
	for (i = 1; i < c->nvertices; i++) {
		struct drv_vertex *p = &c->vertices[c->vertices[i].parent];
		c->kids[p->kid_first + p->nkids++] = i;
	}
	c->kids_n = c->nvertices;
}

int drv_cluster_find_node(const struct drv_cluster *c, const char *name)
{
	size_t k;

	if (!name || !c->name_icap)
		return -1;
	k = name_hash(name) & (c->name_icap - 1);
	while (c->name_index[k] >= 0) {
		if (!strcmp(c->nodes[c->name_index[k]].name, name))
			return c->name_index[k];
		k = (k + 1) & (c->name_icap - 1);
	}
	return -1;
}

void drv_cluster_set_node_state(struct drv_cluster *c, int32_t node, enum drv_node_state st)
{
	if (node < 0 || node >= c->nnodes)
		return;
	c->nodes[node].state = st;
	node_refresh(c, node);
}

/* ---- usage ------------------------------------------------------------ */

void drv__task_apply(struct drv_cluster *c, const struct drv_task_place *t, int sign)
{
	struct drv_node *n;
	uint64_t m;

	if (t->node < 0 || t->node >= c->nnodes)
		return;
	n = &c->nodes[t->node];
	n->cpu_used += sign * t->cpu_milli;
	n->mem_used += sign * t->mem_mib;
	n->excl_tasks += sign * t->exclusive;
	for (m = t->gpu_mask; m; m &= m - 1) {
		int g = __builtin_ctzll(m);
		if (g >= n->ngpus)
			break;
		n->gpu_milli_used[g] = (uint16_t)(n->gpu_milli_used[g] + sign * t->gpu_milli);
		n->gpu_mem_used[g] += sign * t->gpu_mem_mib;
	}
	node_refresh(c, t->node);
}

void drv_cluster_commit(struct drv_cluster *c, const struct drv_placement *p)
{
	int32_t i;
	for (i = 0; i < p->ntasks; i++)
		drv__task_apply(c, &p->tasks[i], +1);
}

void drv_cluster_uncommit(struct drv_cluster *c, const struct drv_placement *p)
{
	int32_t i;
	for (i = p->ntasks - 1; i >= 0; i--)
		drv__task_apply(c, &p->tasks[i], -1);
}

/* ---- checking ----------------------------------------------------------- */

/* Usage never exceeds capacity: 0 or DRV_ESTATE. */
static int check_usage(const struct drv_cluster *c)
{
	int32_t i;
	int rc = 0;
	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		const struct drv_gpu_model *m = drv_gpu_model_at(n->model);
		int g;
		if (n->cpu_used < 0 || n->mem_used < 0 || n->cpu_used > n->cpu_milli ||
		    n->mem_used > n->mem_mib)
			rc = DRV_ESTATE;
		for (g = 0; g < n->ngpus; g++) {
			if (n->gpu_milli_used[g] > DRV_MILLI || n->gpu_mem_used[g] < 0)
				rc = DRV_ESTATE;
			if (m && n->gpu_mem_used[g] > m->mem_mib)
				rc = DRV_ESTATE;
		}
	}
	return rc;
}

/* Every vertex's counts recounted from the nodes into want, bottom-up. */
static void recount_from_nodes(const struct drv_cluster *c, struct drv_vertex *want)
{
	int32_t i, a;
	for (i = 0; i < c->nvertices; i++) {
		want[i].level = c->vertices[i].level;
		want[i].first_child = c->vertices[i].first_child;
		want[i].next_sibling = c->vertices[i].next_sibling;
	}
	for (i = 0; i < c->nnodes; i++) {
		struct node_offer o;
		const struct drv_node *n = &c->nodes[i];
		node_offer(n, &o);
		for (a = n->vertex; a >= 0; a = c->vertices[a].parent) {
			struct drv_vertex *w = &want[a];
			w->total_gpus += o.total_gpus;
			w->free_gpus += o.free_gpus;
			w->free_milli += o.free_milli;
			w->total_nodes += o.total_nodes;
			w->free_nodes += o.free_nodes;
			if (n->model >= 0)
				w->free_gpus_by_model[n->model] += o.free_gpus;
			if (n->model >= 0)
				w->total_gpus_by_model[n->model] += o.total_gpus;
			if (o.part_free > w->max_part_free)
				w->max_part_free = o.part_free;
			if (o.free_gpus > w->max_node_free)
				w->max_node_free = o.free_gpus;
			if (n->ngpus > w->max_node_gpus)
				w->max_node_gpus = n->ngpus;
			w->nodes_all++;
		}
	}
}

/* want[].max_free_at[l]: free of the topmost vertices at level >= l below. */
static void recount_max_free_at(const struct drv_cluster *c, struct drv_vertex *want)
{
	int32_t *st = drv_malloc(sizeof(int32_t) * ((size_t)c->nvertices + 1));
	int32_t i;
	int l;
	for (i = 0; i < c->nvertices; i++) {
		int lv = c->vertices[i].level;
		for (l = 0; l < c->nlevels; l++) {
			int32_t best = 0, top = 0, ch;
			if (l <= lv) {
				want[i].max_free_at[l] = want[i].free_gpus;
				continue;
			}
			for (ch = want[i].first_child; ch >= 0; ch = want[ch].next_sibling)
				st[top++] = ch;
			while (top > 0) {
				int32_t x = st[--top];
				if (want[x].level >= l) {
					if (want[x].free_gpus > best)
						best = want[x].free_gpus;
					continue;
				}
				for (ch = want[x].first_child; ch >= 0; ch = want[ch].next_sibling)
					st[top++] = ch;
			}
			want[i].max_free_at[l] = best;
		}
	}
	drv_free(st);
}

static bool vertex_counts_differ(const struct drv_cluster *c, const struct drv_vertex *v,
				 const struct drv_vertex *w)
{
	int k, l;
	if (v->total_gpus != w->total_gpus || v->free_gpus != w->free_gpus ||
	    v->free_milli != w->free_milli || v->total_nodes != w->total_nodes ||
	    v->free_nodes != w->free_nodes || v->max_node_free != w->max_node_free ||
	    v->max_part_free != w->max_part_free || v->max_node_gpus != w->max_node_gpus ||
	    v->nodes_all != w->nodes_all)
		return true;
	for (k = 0; k < DRV_MAX_MODELS; k++)
		if (v->free_gpus_by_model[k] != w->free_gpus_by_model[k] ||
		    v->total_gpus_by_model[k] != w->total_gpus_by_model[k])
			return true;
	for (l = 0; l < c->nlevels; l++)
		if (v->max_free_at[l] != w->max_free_at[l])
			return true;
	return false;
}

static void vertex_counts_repair(struct drv_vertex *v, const struct drv_vertex *w)
{
	v->total_gpus = w->total_gpus;
	v->free_gpus = w->free_gpus;
	v->free_milli = w->free_milli;
	v->total_nodes = w->total_nodes;
	v->free_nodes = w->free_nodes;
	v->max_node_free = w->max_node_free;
	v->max_part_free = w->max_part_free;
	v->max_node_gpus = w->max_node_gpus;
	v->nodes_all = w->nodes_all;
	memcpy(v->free_gpus_by_model, w->free_gpus_by_model, sizeof(v->free_gpus_by_model));
	memcpy(v->total_gpus_by_model, w->total_gpus_by_model, sizeof(v->total_gpus_by_model));
	memcpy(v->max_free_at, w->max_free_at, sizeof(v->max_free_at));
}

int drv_cluster_check(struct drv_cluster *c)
{
	struct drv_vertex *want;
	int32_t i;
	int rc = check_usage(c);

	/* Recount every aggregate from the nodes, bottom-up. */
	want = aligned_alloc(64, (size_t)(c->nvertices ? c->nvertices : 1) * sizeof(*want));
	if (!want)
		abort();
	memset(want, 0, (size_t)c->nvertices * sizeof(*want));
	recount_from_nodes(c, want);
	recount_max_free_at(c, want);
	for (i = 0; i < c->nvertices; i++) {
		if (vertex_counts_differ(c, &c->vertices[i], &want[i]))
			rc = DRV_ESTATE;
		/* once anything was wrong, repair so later steps start from the truth */
		if (rc)
			vertex_counts_repair(&c->vertices[i], &want[i]);
	}
	free(want);
	return rc;
}
