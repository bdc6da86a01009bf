/*
 * cluster_topology.c: a cluster file's topology: the entries under
 * `topology`, each a vertex (possibly count copies named by a pattern such
 * as rack{i:02}), a pool with its prices at the pool level, or a node with
 * its resources (its nodeType, then inline fields), read recursively into
 * the tree with the core's building calls. Errors as cluster_file.c: every
 * one at its line:col with the field path; the first copy's errors once.
 */
#include "drover/clusterfile.h"
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------- */

/*
 * Expands a name pattern: {i} is the 1-based index within the entry's
 * count, {i:N} the same zero-padded to N digits, {parent} the parent's
 * name. Returns false when the result is empty or too long.
 */
static bool expand_name(const char *pat, int idx, const char *parent, char *out, size_t sz)
{
	size_t len = 0;
	const char *p = pat;

	while (*p) {
		char piece[DRV_NAME_MAX + 16];
		size_t pl;
		if (!strncmp(p, "{parent}", 8)) {
			snprintf(piece, sizeof(piece), "%s", parent);
			p += 8;
		} else if (!strncmp(p, "{i}", 3)) {
			snprintf(piece, sizeof(piece), "%d", idx);
			p += 3;
		} else if (!strncmp(p, "{i:", 3) && p[3] >= '0' && p[3] <= '9') {
			int w = 0;
			const char *q = p + 3;
			while (*q >= '0' && *q <= '9')
				w = w * 10 + (*q++ - '0');
			if (*q != '}' || w > 12)
				return false;
			snprintf(piece, sizeof(piece), "%0*d", w, idx);
			p = q + 1;
		} else {
			piece[0] = *p++;
			piece[1] = 0;
		}
		pl = strlen(piece);
		if (len + pl >= sz)
			return false;
		memcpy(out + len, piece, pl + 1);
		len += pl;
	}
	return len > 0;
}

/* ---- topology ------------------------------------------------------------ */

static const char *const entry_keys[] = { "name", "count", "level", "children", "type", "gpus",
					  "gpuModel", "cpu", "memory", "labels", "state",
					  "provider", "region", "pricePerGpuHour", "spot",
					  "elastic", "maxNodes", NULL };

static bool is_pool_key(const char *k)
{
	return !strcmp(k, "provider") || !strcmp(k, "region") || !strcmp(k, "pricePerGpuHour") ||
	       !strcmp(k, "spot") || !strcmp(k, "elastic") || !strcmp(k, "maxNodes");
}

static bool is_node_key(const char *k)
{
	return !strcmp(k, "type") || !strcmp(k, "gpus") || !strcmp(k, "gpuModel") ||
	       !strcmp(k, "cpu") || !strcmp(k, "memory") || !strcmp(k, "labels") ||
	       !strcmp(k, "state");
}

/* One topology entry being read: what its fields said so far. */
struct entry {
	struct fy_node *e, *name_n, *children;
	const char *path;
	const char *pattern;    /* the name, or "?" */
	int64_t count;
	int level;
	bool is_node, ok;
	struct cf_node_type nt;    /* a node's resources: its type, then inline fields */
	struct drv_pool pool;   /* a pool's fields (at the pool level) */
	int state;
};

/* name (a pattern when count > 1) and count. */
static void entry_name_count(struct cf_loader *L, struct entry *en)
{
	struct fy_node *e = en->e, *v;
	const char *path = en->path;
	char p[CF_PATH_MAX];

	en->name_n = fy_node_mapping_lookup_by_string(e, "name", -1);
	drv_yaml_join(p, sizeof(p), path, "name");
	if (!en->name_n) {
		drv_yaml_err(L->d, e, path, "missing field 'name', expected a vertex name (or pattern with {i})");
		en->ok = false;
	} else if (!cf_read_str(L, en->name_n, p, &en->pattern)) {
		en->ok = false;
	}
	if (!en->pattern)
		en->pattern = "?";
	if (!(v = fy_node_mapping_lookup_by_string(e, "count", -1)))
		return;
	drv_yaml_join(p, sizeof(p), path, "count");
	if (!cf_read_int(L, v, p, 1, DRV_CLUSTER_MAX_COUNT, &en->count)) {
		en->ok = false;
		en->count = 1;
	} else if (!strstr(en->pattern, "{i") && en->name_n) {
		drv_yaml_err(L->d, en->name_n, path,
		    "name '%s' has no {i} but count is %lld; expected a pattern such as node{i:02}",
		    en->pattern, (long long)en->count);
		en->ok = false;
		en->count = 1;
	}
}

/* The entry's level: explicit, or node when it has node fields, else one
 * below its parent's. False when it cannot be read further. */
static bool entry_level(struct cf_loader *L, struct entry *en, int plevel)
{
	struct drv_cluster *c = L->c;
	int nl = c->nlevels;
	struct fy_node *v;
	void *it = NULL;
	struct fy_node_pair *pr;
	char p[CF_PATH_MAX];

	while ((pr = fy_node_mapping_iterate(en->e, &it))) {
		const char *k = drv_yaml_scalar(fy_node_pair_key(pr));
		if (k && is_node_key(k))
			en->is_node = true;
	}
	en->level = en->is_node ? nl - 1 : plevel + 1;
	if ((v = fy_node_mapping_lookup_by_string(en->e, "level", -1))) {
		const char *s = drv_yaml_scalar(v);
		int lx = s && !drv_strcaseeq(s, "nvlink-domain") ? drv_cluster_level(c, s) : -1;

		drv_yaml_join(p, sizeof(p), en->path, "level");
		if (lx < 0) {
			drv_yaml_err(L->d, v, p, "found '%s', expected one of the levels listed in 'levels'",
			    s ? s : drv_yaml_kind(v));
			en->ok = false;
		} else if (lx <= plevel) {
			drv_yaml_err(L->d, v, p, "level '%s' is not below its parent's level '%s'", s,
			    c->levels[plevel]);
			en->ok = false;
		} else if (en->is_node && lx != nl - 1) {
			drv_yaml_err(L->d, v, p, "entry '%s' has node fields but level '%s'; nodes are at level 'node'",
			    en->pattern, s);
			en->ok = false;
		} else {
			en->level = lx;
		}
	}
	if (en->level >= nl - 1 && !en->is_node) {
		drv_yaml_err(L->d, en->e, en->path,
		    "entry '%s' is at the node level but has no 'type' or 'gpus'; expected a node "
		    "(type or gpus/gpuModel/cpu/memory) or a deeper 'levels' list",
		    en->pattern);
		return false;
	}
	return true;
}

/* Pool fields, only at the pool level. */
static void entry_pool(struct cf_loader *L, struct entry *en)
{
	struct drv_pool *pool = &en->pool;
	void *it = NULL;
	struct fy_node_pair *pr;
	char p[CF_PATH_MAX];
	bool ok = en->ok;

	memset(pool, 0, sizeof(*pool));
	while ((pr = fy_node_mapping_iterate(en->e, &it))) {
		const char *k = drv_yaml_scalar(fy_node_pair_key(pr));
		struct fy_node *val = fy_node_pair_value(pr);
		if (!k || !is_pool_key(k))
			continue;
		drv_yaml_join(p, sizeof(p), en->path, k);
		if (en->level != L->pool_level) {
			drv_yaml_err(L->d, fy_node_pair_key(pr), p,
			    "'%s' belongs to a pool; this entry is at level '%s'%s", k,
			    L->c->levels[en->level], L->pool_level < 0 ? " and 'levels' has no pool" : "");
			ok = false;
			continue;
		}
		if (!strcmp(k, "provider"))
			ok = cf_read_str(L, val, p, (const char **)&pool->provider) && ok;
		else if (!strcmp(k, "region"))
			ok = cf_read_str(L, val, p, (const char **)&pool->region) && ok;
		else if (!strcmp(k, "pricePerGpuHour"))
			ok = cf_read_price(L, val, p, &pool->price_micro_per_gpu_hour) && ok;
		else if (!strcmp(k, "spot"))
			ok = cf_read_bool(L, val, p, &pool->spot) && ok;
		else if (!strcmp(k, "elastic"))
			ok = cf_read_bool(L, val, p, &pool->elastic) && ok;
		else if (!strcmp(k, "maxNodes")) {
			int64_t x;
			if (cf_read_int(L, val, p, 0, DRV_CLUSTER_MAX_NODES, &x))
				pool->max_nodes = (int32_t)x;
			else
				ok = false;
		}
	}
	en->ok = ok;
}

/* A copy of type t into nt, labels included. */
static void copy_type(struct cf_node_type *nt, const struct cf_node_type *t)
{
	*nt = *t;
	nt->labels = NULL;
	nt->nlabels = 0;
	for (int i = 0; i < t->nlabels; i++) {
		nt->labels = drv_realloc(nt->labels, sizeof(*nt->labels) * (size_t)(i + 1));
		nt->labels[i].key = drv_strdup(t->labels[i].key);
		nt->labels[i].value = drv_strdup(t->labels[i].value);
		nt->nlabels++;
	}
}

/* Inline fields override the type's; own's labels move to nt. */
static void merge_own(struct cf_node_type *nt, struct cf_node_type *own)
{
	if (own->has_gpus) {
		nt->gpus = own->gpus;
		nt->has_gpus = true;
	}
	if (own->has_model) {
		nt->model = own->model;
		nt->has_model = true;
	}
	if (own->has_cpu) {
		nt->cpu_milli = own->cpu_milli;
		nt->has_cpu = true;
	}
	if (own->has_mem) {
		nt->mem_mib = own->mem_mib;
		nt->has_mem = true;
	}
	for (int i = 0; i < own->nlabels; i++) {
		nt->labels = drv_realloc(nt->labels, sizeof(*nt->labels) * (size_t)(nt->nlabels + 1));
		nt->labels[nt->nlabels++] = own->labels[i];
	}
	drv_free(own->labels);
}

/* A node's GPUs, CPU and memory are all known, from its type or inline. */
static bool node_complete(struct cf_loader *L, struct entry *en)
{
	const struct cf_node_type *nt = &en->nt;
	bool ok = true;

	if (!nt->has_gpus) {
		drv_yaml_err(L->d, en->e, en->path, "node '%s' has no 'gpus' (from its type or inline); expected a count of GPUs, 0 for none", en->pattern);
		ok = false;
	} else if (nt->gpus > 0 && !nt->has_model) {
		drv_yaml_err(L->d, en->e, en->path, "node '%s' has %d GPUs but no 'gpuModel'", en->pattern, nt->gpus);
		ok = false;
	}
	if (!nt->has_cpu || !nt->has_mem) {
		drv_yaml_err(L->d, en->e, en->path, "node '%s' needs 'cpu' and 'memory' (from its type or inline)",
		    en->pattern);
		ok = false;
	}
	return ok;
}

/* Node fields: type first, inline fields override; then state. */
static void entry_node(struct cf_loader *L, struct entry *en)
{
	struct fy_node *e = en->e, *v;
	struct cf_node_type own;
	const char *s;
	char p[CF_PATH_MAX];

	memset(&own, 0, sizeof(own));
	own.model = -1;
	if ((v = fy_node_mapping_lookup_by_string(e, "type", -1))) {
		struct cf_node_type *t;
		drv_yaml_join(p, sizeof(p), en->path, "type");
		s = drv_yaml_scalar(v);
		t = s ? cf_find_type(L, s) : NULL;
		if (!t) {
			drv_yaml_err(L->d, v, p, "found '%s', expected a name defined under nodeTypes",
			    s ? s : drv_yaml_kind(v));
			en->ok = false;
		} else {
			copy_type(&en->nt, t);
		}
	}
	en->ok = cf_read_node_fields(L, e, en->path, &own) && en->ok;
	merge_own(&en->nt, &own);
	if ((v = fy_node_mapping_lookup_by_string(e, "state", -1))) {
		drv_yaml_join(p, sizeof(p), en->path, "state");
		s = drv_yaml_scalar(v);
		en->state = s ? drv_node_state_parse(s) : -1;
		if (en->state < 0) {
			drv_yaml_err(L->d, v, p, "found '%s', expected up, draining or down",
			    s ? s : drv_yaml_kind(v));
			en->ok = false;
		}
	}
	if (en->ok)
		en->ok = node_complete(L, en);
}

/* One copy of a node entry named name. False: stop making copies. */
static bool add_node(struct cf_loader *L, struct entry *en, int32_t parent, const char *name)
{
	struct drv_cluster *c = L->c;
	const struct cf_node_type *nt = &en->nt;
	int32_t id;

	id = drv_cluster_add_node(c, parent, name, nt->gpus > 0 ? nt->model : -1, nt->gpus,
				  nt->cpu_milli, nt->mem_mib);
	if (id == DRV_EEXIST) {
		drv_yaml_err(L->d, en->name_n, en->path, "node name '%s' is used twice; node names must be unique",
		    name);
		return false;
	}
	if (id < 0) {
		drv_yaml_err(L->d, en->e, en->path, "cannot add node '%s': %s", name, drv_strerror(id));
		return false;
	}
	L->nodes++;
	if (nt->nlabels) {
		struct drv_node *n = &c->nodes[id];
		n->labels = drv_malloc(sizeof(*n->labels) * (size_t)nt->nlabels);
		for (int k = 0; k < nt->nlabels; k++) {
			n->labels[k].key = drv_strdup(nt->labels[k].key);
			n->labels[k].value = drv_strdup(nt->labels[k].value);
		}
		n->nlabels = nt->nlabels;
	}
	if (en->state != DRV_NODE_UP)
		drv_cluster_set_node_state(c, id, (enum drv_node_state)en->state);
	return true;
}

/* One copy of an inner entry named name (a pool at the pool level), then
 * its children. False: stop making copies. */
static bool add_vertex(struct cf_loader *L, struct entry *en, int32_t parent, const char *name)
{
	struct drv_cluster *c = L->c;
	char cpath[CF_PATH_MAX];
	int32_t id;

	if (c->nvertices >= 2 * DRV_CLUSTER_MAX_NODES) {
		drv_yaml_err(L->d, en->e, en->path, "the file expands to too many vertices");
		L->too_big = true;
		return false;
	}
	/* a vertex at an explicit deeper level: insert it directly */
	id = drv_cluster_add_vertex_at(c, parent, name, en->level);
	if (id < 0) {
		drv_yaml_err(L->d, en->e, en->path, "cannot add '%s': %s", name, drv_strerror(id));
		return false;
	}
	if (en->level == L->pool_level) {
		int pi;
		en->pool.name = (char *)name;
		en->pool.vertex = id;
		pi = drv_cluster_add_pool(c, &en->pool);
		if (pi < 0) {
			drv_yaml_err(L->d, en->e, en->path, "cannot add pool '%s': %s (at most %d pools)", name,
			    drv_strerror(pi), DRV_MAX_POOLS);
			return false;
		}
	}
	if (en->children) {
		drv_yaml_join(cpath, sizeof(cpath), en->path, "children");
		cf_read_entries(L, en->children, id, cpath);
	}
	return true;
}

/* The entry's count copies under parent; the first copy's errors once. */
static void add_copies(struct cf_loader *L, struct entry *en, int32_t parent, int errs_before)
{
	struct drv_cluster *c = L->c;

	for (int i = 1; i <= en->count; i++) {
		char name[DRV_NAME_MAX];
		if (!expand_name(en->pattern, i, c->vertices[parent].name, name, sizeof(name))) {
			drv_yaml_err(L->d, en->name_n, en->path, "name pattern '%s' gives an empty name or one longer than %d",
			    en->pattern, DRV_NAME_MAX - 1);
			break;
		}
		if (en->is_node) {
			if (!add_node(L, en, parent, name))
				break;
			continue;
		}
		if (!add_vertex(L, en, parent, name))
			break;
		if (L->d->nerrors > errs_before)
			break; /* report the first copy's errors once, not count times */
	}
}

/* One topology entry (possibly count copies) under parent. */
static void read_entry(struct cf_loader *L, struct fy_node *e, int32_t parent, const char *path)
{
	struct entry en = { .e = e, .path = path, .count = 1, .ok = true, .state = DRV_NODE_UP };
	int errs_before = L->d->nerrors;

	en.nt.model = -1;
	if (!fy_node_is_mapping(e)) {
		drv_yaml_err(L->d, e, path, "found %s, expected a mapping with a name", drv_yaml_kind(e));
		return;
	}
	if (!cf_check_keys(L, e, path, entry_keys))
		en.ok = false;
	entry_name_count(L, &en);
	if (!entry_level(L, &en, L->c->vertices[parent].level))
		return;
	en.children = fy_node_mapping_lookup_by_string(e, "children", -1);
	if (en.children && en.is_node) {
		drv_yaml_err(L->d, en.children, path, "a node cannot have children");
		en.ok = false;
	}
	entry_pool(L, &en);
	if (en.is_node)
		entry_node(L, &en);
	if (L->too_big || (!en.ok && en.is_node)) {
		cf_free_labels(en.nt.labels, en.nt.nlabels);
		return;
	}
	if (!en.ok)
		en.count = 1; /* still look at the children once, to report their errors */
	if (en.is_node && L->nodes + en.count > DRV_CLUSTER_MAX_NODES) {
		drv_yaml_err(L->d, e, path, "the file expands to more than %d nodes", DRV_CLUSTER_MAX_NODES);
		L->too_big = true;
		cf_free_labels(en.nt.labels, en.nt.nlabels);
		return;
	}
	add_copies(L, &en, parent, errs_before);
	cf_free_labels(en.nt.labels, en.nt.nlabels);
}

void cf_read_entries(struct cf_loader *L, struct fy_node *seq, int32_t parent, const char *path)
{
	void *it = NULL;
	struct fy_node *e;
	int i = 0;

	if (!fy_node_is_sequence(seq)) {
		drv_yaml_err(L->d, seq, path, "found %s, expected a list of entries", drv_yaml_kind(seq));
		return;
	}
	while ((e = fy_node_sequence_iterate(seq, &it))) {
		char p[CF_PATH_MAX];
		snprintf(p, sizeof(p), "%s[%d]", path, i++);
		read_entry(L, e, parent, p);
		if (L->too_big)
			return;
	}
}
