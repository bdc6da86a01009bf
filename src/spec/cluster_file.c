/*
 * cluster_file.c: YAML cluster files into struct drv_cluster (src/spec,
 * owned by core). libfyaml builds the document; this file walks it,
 * checks every field and builds the tree with the core's building calls.
 * The format is documented in docs/cluster-format.md.
 *
 * Every problem is reported with the file, line and column of the value
 * (or of its key when the value is a collection), the field path and what
 * was expected; checking continues past errors so one run reports them all.
 * Nothing is half-built: on any error the cluster is released.
 */
#include "drover/clusterfile.h"
#include "drover/fsutil.h"
#include "spec_int.h"

#include <errno.h>
#include <libfyaml.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 256

struct node_type {
	char *name;
	int gpus;
	int model;
	int64_t cpu_milli;
	int64_t mem_mib;
	struct drv_label *labels;
	int nlabels;
	bool has_gpus, has_model, has_cpu, has_mem;
};

struct loader {
	struct drv_cluster *c;
	struct drv_diags *d;
	struct node_type *types;
	int ntypes;
	size_t tcap;
	int pool_level;         /* level index named "pool", or -1 */
	int64_t nodes;          /* nodes made so far */
	bool too_big;
};

/* ---- positions and messages ------------------------------------------- */

static const char *kind_of(struct fy_node *n)
{
	if (!n)
		return "nothing";
	if (fy_node_is_mapping(n))
		return "a mapping";
	if (fy_node_is_sequence(n))
		return "a list";
	return "a scalar";
}

/* ---- scalar readers ----------------------------------------------------- */

static bool read_int(struct loader *L, struct fy_node *n, const char *path, int64_t lo,
		     int64_t hi, int64_t *out)
{
	const char *s = drv_yaml_scalar(n);
	char *end;
	long long v;

	if (!s || !*s) {
		drv_yaml_err(L->d, n, path, "found %s, expected an integer from %lld to %lld",
		    s ? "an empty value" : kind_of(n), (long long)lo, (long long)hi);
		return false;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi) {
		drv_yaml_err(L->d, n, path, "found '%s', expected an integer from %lld to %lld", s,
		    (long long)lo, (long long)hi);
		return false;
	}
	*out = v;
	return true;
}

static bool read_bool(struct loader *L, struct fy_node *n, const char *path, bool *out)
{
	const char *s = drv_yaml_scalar(n);

	if (s && (drv_strcaseeq(s, "true") || drv_strcaseeq(s, "yes") || drv_strcaseeq(s, "on"))) {
		*out = true;
		return true;
	}
	if (s && (drv_strcaseeq(s, "false") || drv_strcaseeq(s, "no") || drv_strcaseeq(s, "off"))) {
		*out = false;
		return true;
	}
	drv_yaml_err(L->d, n, path, "found %s%s%s, expected true or false", s ? "'" : "", s ? s : kind_of(n),
	    s ? "'" : "");
	return false;
}

static bool read_str(struct loader *L, struct fy_node *n, const char *path, const char **out)
{
	const char *s = drv_yaml_scalar(n);
	if (!s || !*s) {
		drv_yaml_err(L->d, n, path, "found %s, expected a non-empty string", s ? "an empty value" : kind_of(n));
		return false;
	}
	*out = s;
	return true;
}

/* CPUs: a number of cores ("96", 0.5) or milli-CPUs ("500m"). */
static bool read_cpu(struct loader *L, struct fy_node *n, const char *path, int64_t *out)
{
	const char *s = drv_yaml_scalar(n);
	char *end;
	double v;

	if (s && *s) {
		errno = 0;
		v = strtod(s, &end);
		if (!errno && end != s && isfinite(v) && v > 0) {
			if (!*end && v <= 1e7) {
				*out = (int64_t)llround(v * 1000);
				return true;
			}
			if (!strcmp(end, "m") && v <= 1e10) {
				*out = (int64_t)llround(v);
				return true;
			}
		}
	}
	drv_yaml_err(L->d, n, path, "found '%s', expected a CPU count such as 96 or 500m", s ? s : kind_of(n));
	return false;
}

/* Memory: a Kubernetes quantity ("2Ti", "512Gi", "1536Mi", "2000G"); a bare
 * number is bytes. Stored in MiB; at least 1 MiB. */
static bool read_mem(struct loader *L, struct fy_node *n, const char *path, int64_t *out)
{
	static const struct { const char *suf; double mult; } units[] = {
		{ "", 1.0 }, { "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 },
		{ "Ti", 1099511627776.0 }, { "Pi", 1125899906842624.0 },
		{ "k", 1e3 }, { "K", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 }, { "P", 1e15 },
		{ "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
		{ "TiB", 1099511627776.0 },
	};
	const char *s = drv_yaml_scalar(n);
	char *end;
	double v;
	size_t i;

	if (s && *s) {
		errno = 0;
		v = strtod(s, &end);
		if (!errno && end != s && isfinite(v) && v > 0)
			for (i = 0; i < DRV_ARRAY_SIZE(units); i++)
				if (!strcmp(end, units[i].suf)) {
					double mib = v * units[i].mult / 1048576.0;
					if (mib >= 1 && mib < 9e15) {
						*out = (int64_t)floor(mib);
						return true;
					}
				}
	}
	drv_yaml_err(L->d, n, path, "found '%s', expected a memory size of at least 1Mi such as 2Ti, 512Gi or 1536Mi",
	    s ? s : kind_of(n));
	return false;
}

/* Dollars per GPU-hour as a number, into micro-dollars. */
static bool read_price(struct loader *L, struct fy_node *n, const char *path, int64_t *out)
{
	const char *s = drv_yaml_scalar(n);
	char *end;
	double v;

	if (s && *s) {
		errno = 0;
		v = strtod(s, &end);
		if (!errno && end != s && !*end && isfinite(v) && v >= 0 && v < 1e6) {
			*out = (int64_t)llround(v * 1e6);
			return true;
		}
	}
	drv_yaml_err(L->d, n, path, "found '%s', expected a price in dollars per GPU-hour such as 2.49",
	    s ? s : kind_of(n));
	return false;
}

static bool read_model(struct loader *L, struct fy_node *n, const char *path, int *out)
{
	const char *s = drv_yaml_scalar(n);
	int m = s ? drv_gpu_model_find(s) : -1;

	if (m < 0) {
		char list[512];
		size_t len = 0;
		int i;
		list[0] = 0;
		for (i = 0; i < drv_gpu_model_count() && len < sizeof(list); i++) {
			int k = snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
					 drv_gpu_model_at(i)->short_name);
			if (k > 0)
				len += (size_t)k;
		}
		drv_yaml_err(L->d, n, path, "found '%s', expected a GPU model (%s, or any of their aliases)",
		    s ? s : kind_of(n), list);
		return false;
	}
	*out = m;
	return true;
}

static bool read_labels(struct loader *L, struct fy_node *n, const char *path,
			struct drv_label **out, int *nout)
{
	void *it = NULL;
	struct fy_node_pair *p;
	bool ok = true;

	if (!fy_node_is_mapping(n)) {
		drv_yaml_err(L->d, n, path, "found %s, expected a mapping of label keys to values", kind_of(n));
		return false;
	}
	while ((p = fy_node_mapping_iterate(n, &it))) {
		const char *k = drv_yaml_scalar(fy_node_pair_key(p)), *v = drv_yaml_scalar(fy_node_pair_value(p));
		if (!k || !*k || !v) {
			drv_yaml_err(L->d, fy_node_pair_key(p), path, "labels must be key: value strings");
			ok = false;
			continue;
		}
		*out = drv_realloc(*out, sizeof(**out) * (size_t)(*nout + 1));
		(*out)[*nout].key = drv_strdup(k);
		(*out)[*nout].value = drv_strdup(v);
		(*nout)++;
	}
	return ok;
}

static void free_labels(struct drv_label *l, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		drv_free(l[i].key);
		drv_free(l[i].value);
	}
	drv_free(l);
}

/* Checks that every key of mapping n is one of allowed (NULL-terminated). */
static bool check_keys(struct loader *L, struct fy_node *n, const char *path,
		       const char *const *allowed)
{
	void *it = NULL;
	struct fy_node_pair *p;
	bool ok = true;

	while ((p = fy_node_mapping_iterate(n, &it))) {
		const char *k = drv_yaml_scalar(fy_node_pair_key(p));
		int i;
		bool found = false;
		for (i = 0; k && allowed[i]; i++)
			if (!strcmp(k, allowed[i]))
				found = true;
		if (!found) {
			char list[512];
			size_t len = 0;
			list[0] = 0;
			for (i = 0; allowed[i] && len < sizeof(list); i++) {
				int w = snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
						 allowed[i]);
				if (w > 0)
					len += (size_t)w;
			}
			drv_yaml_err(L->d, fy_node_pair_key(p), path, "unknown field '%s', expected one of: %s",
			    k ? k : "?", list);
			ok = false;
		}
	}
	return ok;
}

/* ---- node types ------------------------------------------------------- */

/* Reads gpus/gpuModel/cpu/memory/labels from mapping n into t (fields set
 * are flagged). Used for nodeTypes entries and inline node fields. */
static bool read_node_fields(struct loader *L, struct fy_node *n, const char *path,
			     struct node_type *t)
{
	struct fy_node *v;
	char p[PATH_MAX_LEN];
	int64_t x;
	bool ok = true;

	if ((v = fy_node_mapping_lookup_by_string(n, "gpus", -1))) {
		drv_yaml_join(p, sizeof(p), path, "gpus");
		if (read_int(L, v, p, 0, DRV_MAX_NODE_GPUS, &x)) {
			t->gpus = (int)x;
			t->has_gpus = true;
		} else {
			ok = false;
		}
	}
	if ((v = fy_node_mapping_lookup_by_string(n, "gpuModel", -1))) {
		drv_yaml_join(p, sizeof(p), path, "gpuModel");
		if (read_model(L, v, p, &t->model))
			t->has_model = true;
		else
			ok = false;
	}
	if ((v = fy_node_mapping_lookup_by_string(n, "cpu", -1))) {
		drv_yaml_join(p, sizeof(p), path, "cpu");
		if (read_cpu(L, v, p, &t->cpu_milli))
			t->has_cpu = true;
		else
			ok = false;
	}
	if ((v = fy_node_mapping_lookup_by_string(n, "memory", -1))) {
		drv_yaml_join(p, sizeof(p), path, "memory");
		if (read_mem(L, v, p, &t->mem_mib))
			t->has_mem = true;
		else
			ok = false;
	}
	if ((v = fy_node_mapping_lookup_by_string(n, "labels", -1))) {
		drv_yaml_join(p, sizeof(p), path, "labels");
		ok = read_labels(L, v, p, &t->labels, &t->nlabels) && ok;
	}
	return ok;
}

static const char *const node_type_keys[] = { "gpus", "gpuModel", "cpu", "memory", "labels",
					      NULL };

static void read_node_types(struct loader *L, struct fy_node *n)
{
	void *it = NULL;
	struct fy_node_pair *p;

	if (!fy_node_is_mapping(n)) {
		drv_yaml_err(L->d, n, "nodeTypes", "found %s, expected a mapping of type names to node fields",
		    kind_of(n));
		return;
	}
	while ((p = fy_node_mapping_iterate(n, &it))) {
		const char *name = drv_yaml_scalar(fy_node_pair_key(p));
		struct fy_node *v = fy_node_pair_value(p);
		struct node_type *t;
		char path[PATH_MAX_LEN];

		snprintf(path, sizeof(path), "nodeTypes.%s", name ? name : "?");
		if (!name || !*name)
			continue;
		if (!fy_node_is_mapping(v)) {
			drv_yaml_err(L->d, v ? v : fy_node_pair_key(p), path,
			    "found %s, expected a mapping with gpus, gpuModel, cpu, memory", kind_of(v));
			continue;
		}
		check_keys(L, v, path, node_type_keys);
		DRV_GROW(L->types, (size_t)L->ntypes + 1, L->tcap);
		t = &L->types[L->ntypes++];
		memset(t, 0, sizeof(*t));
		t->name = drv_strdup(name);
		t->model = -1;
		read_node_fields(L, v, path, t);
	}
}

static struct node_type *find_type(struct loader *L, const char *name)
{
	int i;
	for (i = 0; i < L->ntypes; i++)
		if (!strcmp(L->types[i].name, name))
			return &L->types[i];
	return NULL;
}

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

static void read_entries(struct loader *L, struct fy_node *seq, int32_t parent, const char *path);

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
	struct node_type nt;    /* a node's resources: its type, then inline fields */
	struct drv_pool pool;   /* a pool's fields (at the pool level) */
	int state;
};

/* name (a pattern when count > 1) and count. */
static void entry_name_count(struct loader *L, struct entry *en)
{
	struct fy_node *e = en->e, *v;
	const char *path = en->path;
	char p[PATH_MAX_LEN];

	en->name_n = fy_node_mapping_lookup_by_string(e, "name", -1);
	drv_yaml_join(p, sizeof(p), path, "name");
	if (!en->name_n) {
		drv_yaml_err(L->d, e, path, "missing field 'name', expected a vertex name (or pattern with {i})");
		en->ok = false;
	} else if (!read_str(L, en->name_n, p, &en->pattern)) {
		en->ok = false;
	}
	if (!en->pattern)
		en->pattern = "?";
	if (!(v = fy_node_mapping_lookup_by_string(e, "count", -1)))
		return;
	drv_yaml_join(p, sizeof(p), path, "count");
	if (!read_int(L, v, p, 1, DRV_CLUSTER_MAX_COUNT, &en->count)) {
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
static bool entry_level(struct loader *L, struct entry *en, int plevel)
{
	struct drv_cluster *c = L->c;
	int nl = c->nlevels;
	struct fy_node *v;
	void *it = NULL;
	struct fy_node_pair *pr;
	char p[PATH_MAX_LEN];

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
			    s ? s : kind_of(v));
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
static void entry_pool(struct loader *L, struct entry *en)
{
	struct drv_pool *pool = &en->pool;
	void *it = NULL;
	struct fy_node_pair *pr;
	char p[PATH_MAX_LEN];
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
			ok = read_str(L, val, p, (const char **)&pool->provider) && ok;
		else if (!strcmp(k, "region"))
			ok = read_str(L, val, p, (const char **)&pool->region) && ok;
		else if (!strcmp(k, "pricePerGpuHour"))
			ok = read_price(L, val, p, &pool->price_micro_per_gpu_hour) && ok;
		else if (!strcmp(k, "spot"))
			ok = read_bool(L, val, p, &pool->spot) && ok;
		else if (!strcmp(k, "elastic"))
			ok = read_bool(L, val, p, &pool->elastic) && ok;
		else if (!strcmp(k, "maxNodes")) {
			int64_t x;
			if (read_int(L, val, p, 0, DRV_CLUSTER_MAX_NODES, &x))
				pool->max_nodes = (int32_t)x;
			else
				ok = false;
		}
	}
	en->ok = ok;
}

/* A copy of type t into nt, labels included. */
static void copy_type(struct node_type *nt, const struct node_type *t)
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
static void merge_own(struct node_type *nt, struct node_type *own)
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
static bool node_complete(struct loader *L, struct entry *en)
{
	const struct node_type *nt = &en->nt;
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
static void entry_node(struct loader *L, struct entry *en)
{
	struct fy_node *e = en->e, *v;
	struct node_type own;
	const char *s;
	char p[PATH_MAX_LEN];

	memset(&own, 0, sizeof(own));
	own.model = -1;
	if ((v = fy_node_mapping_lookup_by_string(e, "type", -1))) {
		struct node_type *t;
		drv_yaml_join(p, sizeof(p), en->path, "type");
		s = drv_yaml_scalar(v);
		t = s ? find_type(L, s) : NULL;
		if (!t) {
			drv_yaml_err(L->d, v, p, "found '%s', expected a name defined under nodeTypes",
			    s ? s : kind_of(v));
			en->ok = false;
		} else {
			copy_type(&en->nt, t);
		}
	}
	en->ok = read_node_fields(L, e, en->path, &own) && en->ok;
	merge_own(&en->nt, &own);
	if ((v = fy_node_mapping_lookup_by_string(e, "state", -1))) {
		drv_yaml_join(p, sizeof(p), en->path, "state");
		s = drv_yaml_scalar(v);
		en->state = s ? drv_node_state_parse(s) : -1;
		if (en->state < 0) {
			drv_yaml_err(L->d, v, p, "found '%s', expected up, draining or down",
			    s ? s : kind_of(v));
			en->ok = false;
		}
	}
	if (en->ok)
		en->ok = node_complete(L, en);
}

/* One copy of a node entry named name. False: stop making copies. */
static bool add_node(struct loader *L, struct entry *en, int32_t parent, const char *name)
{
	struct drv_cluster *c = L->c;
	const struct node_type *nt = &en->nt;
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
static bool add_vertex(struct loader *L, struct entry *en, int32_t parent, const char *name)
{
	struct drv_cluster *c = L->c;
	char cpath[PATH_MAX_LEN];
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
		read_entries(L, en->children, id, cpath);
	}
	return true;
}

/* The entry's count copies under parent; the first copy's errors once. */
static void add_copies(struct loader *L, struct entry *en, int32_t parent, int errs_before)
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
static void read_entry(struct loader *L, struct fy_node *e, int32_t parent, const char *path)
{
	struct entry en = { .e = e, .path = path, .count = 1, .ok = true, .state = DRV_NODE_UP };
	int errs_before = L->d->nerrors;

	en.nt.model = -1;
	if (!fy_node_is_mapping(e)) {
		drv_yaml_err(L->d, e, path, "found %s, expected a mapping with a name", kind_of(e));
		return;
	}
	if (!check_keys(L, e, path, entry_keys))
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
		free_labels(en.nt.labels, en.nt.nlabels);
		return;
	}
	if (!en.ok)
		en.count = 1; /* still look at the children once, to report their errors */
	if (en.is_node && L->nodes + en.count > DRV_CLUSTER_MAX_NODES) {
		drv_yaml_err(L->d, e, path, "the file expands to more than %d nodes", DRV_CLUSTER_MAX_NODES);
		L->too_big = true;
		free_labels(en.nt.labels, en.nt.nlabels);
		return;
	}
	add_copies(L, &en, parent, errs_before);
	free_labels(en.nt.labels, en.nt.nlabels);
}

static void read_entries(struct loader *L, struct fy_node *seq, int32_t parent, const char *path)
{
	void *it = NULL;
	struct fy_node *e;
	int i = 0;

	if (!fy_node_is_sequence(seq)) {
		drv_yaml_err(L->d, seq, path, "found %s, expected a list of entries", kind_of(seq));
		return;
	}
	while ((e = fy_node_sequence_iterate(seq, &it))) {
		char p[PATH_MAX_LEN];
		snprintf(p, sizeof(p), "%s[%d]", path, i++);
		read_entry(L, e, parent, p);
		if (L->too_big)
			return;
	}
}

/* ---- top level ------------------------------------------------------------ */

static const char *const top_keys[] = { "apiVersion", "kind", "name", "description", "levels",
					"nvlinkDomain", "nodeTypes", "topology", NULL };

static void read_cluster(struct loader *L, struct fy_node *root)
{
	struct drv_cluster *c = L->c;
	struct fy_node *v, *topo;
	const char *s;
	const char *names[DRV_MAX_LEVELS];
	int n = 0, i;

	if (!fy_node_is_mapping(root)) {
		drv_yaml_err(L->d, root, NULL, "found %s at the top, expected a mapping with kind: Cluster",
		    kind_of(root));
		return;
	}
	check_keys(L, root, NULL, top_keys);
	v = fy_node_mapping_lookup_by_string(root, "kind", -1);
	s = drv_yaml_scalar(v);
	if (!s || strcmp(s, "Cluster")) {
		drv_yaml_err(L->d, v ? v : root, "kind", "found %s%s%s, expected Cluster", s ? "'" : "",
		    s ? s : (v ? kind_of(v) : "no kind"), s ? "'" : "");
		return;
	}
	v = fy_node_mapping_lookup_by_string(root, "name", -1);
	if (!v)
		drv_yaml_err(L->d, root, "name", "missing field 'name', expected the cluster's name");
	else if (read_str(L, v, "name", &s)) {
		drv_free(c->name);
		c->name = drv_strdup(s);
		drv_free(c->vertices[0].name);
		c->vertices[0].name = drv_strdup(s);
	}
	/* levels: below the root; the last is node */
	names[n++] = "cluster";
	v = fy_node_mapping_lookup_by_string(root, "levels", -1);
	if (v) {
		void *it = NULL;
		struct fy_node *e;
		bool bad = false;
		if (!fy_node_is_sequence(v)) {
			drv_yaml_err(L->d, v, "levels", "found %s, expected a list such as [pool, leaf, node]",
			    kind_of(v));
			return;
		}
		while ((e = fy_node_sequence_iterate(v, &it))) {
			s = drv_yaml_scalar(e);
			if (s && !strcmp(s, "cluster") && n == 1)
				continue; /* the root, named anyway */
			if (!s || !*s) {
				drv_yaml_err(L->d, e, "levels", "found %s, expected a level name", kind_of(e));
				bad = true;
				continue;
			}
			for (i = 0; i < n; i++)
				if (drv_strcaseeq(names[i], s)) {
					drv_yaml_err(L->d, e, "levels", "level '%s' is listed twice", s);
					bad = true;
				}
			if (drv_strcaseeq(s, "nvlink-domain")) {
				drv_yaml_err(L->d, e, "levels",
				    "'nvlink-domain' is not a level name; name the level (rack, node) and set nvlinkDomain");
				bad = true;
			}
			if (n >= DRV_MAX_LEVELS) {
				drv_yaml_err(L->d, e, "levels", "more than %d levels", DRV_MAX_LEVELS - 1);
				return;
			}
			names[n++] = s;
		}
		if (bad)
			return;
		if (n < 2 || strcmp(names[n - 1], "node")) {
			drv_yaml_err(L->d, v, "levels", "the last level must be 'node', found '%s'",
			    n >= 2 ? names[n - 1] : "none");
			return;
		}
	} else {
		names[n++] = "pool";
		names[n++] = "node";
	}
	drv_cluster_set_levels(c, names, n);
	L->pool_level = -1;
	for (i = 1; i < n; i++)
		if (!strcmp(names[i], "pool"))
			L->pool_level = i;
	v = fy_node_mapping_lookup_by_string(root, "nvlinkDomain", -1);
	if (v) {
		s = drv_yaml_scalar(v);
		i = -1;
		if (s)
			for (i = n - 1; i >= 1; i--)
				if (drv_strcaseeq(names[i], s))
					break;
		if (i < 1) {
			drv_yaml_err(L->d, v, "nvlinkDomain", "found '%s', expected one of the levels (such as node or rack)",
			    s ? s : kind_of(v));
			return;
		}
		c->nvl_level = i == n - 1 ? -1 : i;
	}
	v = fy_node_mapping_lookup_by_string(root, "nodeTypes", -1);
	if (v)
		read_node_types(L, v);
	topo = fy_node_mapping_lookup_by_string(root, "topology", -1);
	if (!topo) {
		drv_yaml_err(L->d, root, "topology", "missing field 'topology', expected a list of pools or vertices");
		return;
	}
	read_entries(L, topo, 0, "topology");
	if (!L->d->nerrors && c->nnodes == 0)
		drv_yaml_err(L->d, topo, "topology", "the cluster has no nodes");
}

int drv_cluster_load_buffer(const char *buf, size_t len, struct drv_cluster *c,
			    struct drv_diags *diags)
{
	struct fy_document *fyd = NULL;
	struct loader L;
	int rc = 0, i, before = diags->nerrors;

	drv_cluster_init(c, "cluster");
	memset(&L, 0, sizeof(L));
	/* the shared reader: libfyaml 0.7 mishandles some invalid UTF-8 and tabs,
	 * so the text is checked first; syntax errors come with positions (spec.h) */
	rc = drv_yaml_load(buf, len, diags, &fyd);
	if (rc < 0)
		goto out;
	L.c = c;
	L.d = diags;
	L.pool_level = -1;
	if (!fyd || !fy_document_root(fyd)) {
		if (fyd)
			drv_diag_err(diags, 1, 1, NULL, "the file is empty; expected kind: Cluster");
		else
			drv_diag_err(diags, 0, 0, NULL, "YAML syntax error");
		rc = fyd ? DRV_EINVAL : DRV_EPARSE;
		goto out;
	}
	read_cluster(&L, fy_document_root(fyd));
	if (diags->nerrors > before)
		rc = L.too_big ? DRV_ELIMIT : DRV_EINVAL;
out:
	if (fyd)
		fy_document_destroy(fyd);
	for (i = 0; i < L.ntypes; i++) {
		drv_free(L.types[i].name);
		free_labels(L.types[i].labels, L.types[i].nlabels);
	}
	drv_free(L.types);
	if (rc)
		drv_cluster_release(c); /* leaves it zeroed: safe to release again */
	return rc;
}

int drv_cluster_load_file(const char *path, struct drv_cluster *c, struct drv_diags *diags)
{
	char *buf;
	size_t len;
	int rc = drv_file_read(path, (size_t)256 << 20, &buf, &len);

	if (rc) {
		if (rc == DRV_ELIMIT)
			drv_diag_err(diags, 0, 0, NULL, "file larger than 256 MiB");
		else
			drv_diag_err(diags, 0, 0, NULL, "cannot read: %s", strerror(errno));
		memset(c, 0, sizeof(*c));
		return rc;
	}
	rc = drv_cluster_load_buffer(buf, len, c, diags);
	drv_free(buf);
	return rc;
}

bool drv_cluster_file_sniff(const char *buf, size_t len)
{
	size_t i = 0;

	/* a line starting (column 1) with kind: Cluster, optionally quoted */
	while (i < len) {
		size_t e = i;
		while (e < len && buf[e] != '\n')
			e++;
		if (e - i >= 5 && !strncmp(buf + i, "kind:", 5)) {
			size_t k = i + 5;
			while (k < e && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '"' || buf[k] == '\''))
				k++;
			if (e - k >= 7 && !strncmp(buf + k, "Cluster", 7)) {
				size_t r = k + 7;
				while (r < e && (buf[r] == '"' || buf[r] == '\'' || buf[r] == ' ' ||
						 buf[r] == '\t' || buf[r] == '\r'))
					r++;
				if (r == e || buf[r] == '#')
					return true;
			}
		}
		i = e + 1;
	}
	return false;
}
