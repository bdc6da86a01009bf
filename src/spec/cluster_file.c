/*
 * cluster_file.c: YAML cluster files into struct drv_cluster (src/spec,
 * owned by core). libfyaml builds the document; this file walks it,
 * checks every field and builds the tree with the core's building calls:
 * the scalar readers, node types and the top level here, the topology
 * entries in cluster_topology.c (shared declarations in spec_int.h). The
 * format is documented in docs/cluster-format.md.
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

/* ---- scalar readers ----------------------------------------------------- */

bool cf_read_int(struct cf_loader *L, struct fy_node *n, const char *path, int64_t lo,
		 int64_t hi, int64_t *out)
{
	const char *s = drv_yaml_scalar(n);
	char *end;
	long long v;

	if (!s || !*s) {
		drv_yaml_err(L->d, n, path, "found %s, expected an integer from %lld to %lld",
		    s ? "an empty value" : drv_yaml_kind(n), (long long)lo, (long long)hi);
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

bool cf_read_bool(struct cf_loader *L, struct fy_node *n, const char *path, bool *out)
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
	drv_yaml_err(L->d, n, path, "found %s%s%s, expected true or false", s ? "'" : "", s ? s : drv_yaml_kind(n),
	    s ? "'" : "");
	return false;
}

bool cf_read_str(struct cf_loader *L, struct fy_node *n, const char *path, const char **out)
{
	const char *s = drv_yaml_scalar(n);
	if (!s || !*s) {
		drv_yaml_err(L->d, n, path, "found %s, expected a non-empty string", s ? "an empty value" : drv_yaml_kind(n));
		return false;
	}
	*out = s;
	return true;
}

/* CPUs: a number of cores ("96", 0.5) or milli-CPUs ("500m"). */
static bool read_cpu(struct cf_loader *L, struct fy_node *n, const char *path, int64_t *out)
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
	drv_yaml_err(L->d, n, path, "found '%s', expected a CPU count such as 96 or 500m", s ? s : drv_yaml_kind(n));
	return false;
}

/* Memory: a Kubernetes quantity ("2Ti", "512Gi", "1536Mi", "2000G"); a bare
 * number is bytes. Stored in MiB; at least 1 MiB. */
static bool read_mem(struct cf_loader *L, struct fy_node *n, const char *path, int64_t *out)
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
	    s ? s : drv_yaml_kind(n));
	return false;
}

/* Dollars per GPU-hour as a number, into micro-dollars. */
bool cf_read_price(struct cf_loader *L, struct fy_node *n, const char *path, int64_t *out)
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
	    s ? s : drv_yaml_kind(n));
	return false;
}

static bool read_model(struct cf_loader *L, struct fy_node *n, const char *path, int *out)
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
		    s ? s : drv_yaml_kind(n), list);
		return false;
	}
	*out = m;
	return true;
}

static bool read_labels(struct cf_loader *L, struct fy_node *n, const char *path,
			struct drv_label **out, int *nout)
{
	void *it = NULL;
	struct fy_node_pair *p;
	bool ok = true;

	if (!fy_node_is_mapping(n)) {
		drv_yaml_err(L->d, n, path, "found %s, expected a mapping of label keys to values", drv_yaml_kind(n));
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

void cf_free_labels(struct drv_label *l, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		drv_free(l[i].key);
		drv_free(l[i].value);
	}
	drv_free(l);
}

/* Checks that every key of mapping n is one of allowed (NULL-terminated). */
bool cf_check_keys(struct cf_loader *L, struct fy_node *n, const char *path,
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
bool cf_read_node_fields(struct cf_loader *L, struct fy_node *n, const char *path,
			 struct cf_node_type *t)
{
	struct fy_node *v;
	char p[CF_PATH_MAX];
	int64_t x;
	bool ok = true;

	if ((v = fy_node_mapping_lookup_by_string(n, "gpus", -1))) {
		drv_yaml_join(p, sizeof(p), path, "gpus");
		if (cf_read_int(L, v, p, 0, DRV_MAX_NODE_GPUS, &x)) {
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

static void read_node_types(struct cf_loader *L, struct fy_node *n)
{
	void *it = NULL;
	struct fy_node_pair *p;

	if (!fy_node_is_mapping(n)) {
		drv_yaml_err(L->d, n, "nodeTypes", "found %s, expected a mapping of type names to node fields",
		    drv_yaml_kind(n));
		return;
	}
	while ((p = fy_node_mapping_iterate(n, &it))) {
		const char *name = drv_yaml_scalar(fy_node_pair_key(p));
		struct fy_node *v = fy_node_pair_value(p);
		struct cf_node_type *t;
		char path[CF_PATH_MAX];

		snprintf(path, sizeof(path), "nodeTypes.%s", name ? name : "?");
		if (!name || !*name)
			continue;
		if (!fy_node_is_mapping(v)) {
			drv_yaml_err(L->d, v ? v : fy_node_pair_key(p), path,
			    "found %s, expected a mapping with gpus, gpuModel, cpu, memory", drv_yaml_kind(v));
			continue;
		}
		cf_check_keys(L, v, path, node_type_keys);
		DRV_GROW(L->types, (size_t)L->ntypes + 1, L->tcap);
		t = &L->types[L->ntypes++];
		memset(t, 0, sizeof(*t));
		t->name = drv_strdup(name);
		t->model = -1;
		cf_read_node_fields(L, v, path, t);
	}
}

struct cf_node_type *cf_find_type(struct cf_loader *L, const char *name)
{
	int i;
	for (i = 0; i < L->ntypes; i++)
		if (!strcmp(L->types[i].name, name))
			return &L->types[i];
	return NULL;
}

/* ---- top level ------------------------------------------------------------ */

static const char *const top_keys[] = { "apiVersion", "kind", "name", "description", "levels",
					"levelLabels", "nvlinkDomain", "nodeTypes", "topology", NULL };

/* levelLabels: {level: Kubernetes node label}, so that Kueue's topology
 * annotations naming that label mean that level. */
static void read_level_labels(struct cf_loader *L, struct fy_node *v)
{
	struct drv_cluster *c = L->c;
	struct fy_node_pair *p;
	void *it = NULL;

	if (!fy_node_is_mapping(v)) {
		drv_yaml_err(L->d, v, "levelLabels", "found %s, expected a mapping of level: label",
			     drv_yaml_kind(v));
		return;
	}
	while ((p = fy_node_mapping_iterate(v, &it))) {
		const char *k = fy_node_get_scalar0(fy_node_pair_key(p));
		const char *lab = NULL;
		char path[CF_PATH_MAX];
		int l = k ? drv_cluster_level(c, k) : -1;

		snprintf(path, sizeof(path), "levelLabels.%s", k ? k : "?");
		if (l < 0 || (k && (drv_strcaseeq(k, "nvlink-domain") || drv_strcaseeq(k, "nvlink")))) {
			drv_yaml_err(L->d, fy_node_pair_key(p), path, "found level '%s', expected "
				     "one of the cluster's levels", k ? k : "?");
			continue;
		}
		if (!cf_read_str(L, fy_node_pair_value(p), path, &lab))
			continue;
		drv_free(c->level_labels[l]);
		c->level_labels[l] = drv_strdup(lab);
	}
}

/* levels: below the root, the last node; pool and node when absent. The
 * names (borrowed from the document) into names[]; their count, or -1. */
static int read_levels(struct cf_loader *L, struct fy_node *v, const char **names)
{
	void *it = NULL;
	struct fy_node *e;
	bool bad = false;
	const char *s;
	int n = 0;

	names[n++] = "cluster";
	if (!v) {
		names[n++] = "pool";
		names[n++] = "node";
		return n;
	}
	if (!fy_node_is_sequence(v)) {
		drv_yaml_err(L->d, v, "levels", "found %s, expected a list such as [pool, leaf, node]",
		    drv_yaml_kind(v));
		return -1;
	}
	while ((e = fy_node_sequence_iterate(v, &it))) {
		s = drv_yaml_scalar(e);
		if (s && !strcmp(s, "cluster") && n == 1)
			continue; /* the root, named anyway */
		if (!s || !*s) {
			drv_yaml_err(L->d, e, "levels", "found %s, expected a level name", drv_yaml_kind(e));
			bad = true;
			continue;
		}
		for (int i = 0; i < n; i++)
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
			return -1;
		}
		names[n++] = s;
	}
	if (bad)
		return -1;
	if (n < 2 || strcmp(names[n - 1], "node")) {
		drv_yaml_err(L->d, v, "levels", "the last level must be 'node', found '%s'",
		    n >= 2 ? names[n - 1] : "none");
		return -1;
	}
	return n;
}

/* nvlinkDomain: one of the n levels (the node level means "the node"). */
static bool read_nvlink(struct cf_loader *L, struct fy_node *v, const char **names, int n)
{
	const char *s = drv_yaml_scalar(v);
	int i = -1;

	if (s)
		for (i = n - 1; i >= 1; i--)
			if (drv_strcaseeq(names[i], s))
				break;
	if (i < 1) {
		drv_yaml_err(L->d, v, "nvlinkDomain", "found '%s', expected one of the levels (such as node or rack)",
		    s ? s : drv_yaml_kind(v));
		return false;
	}
	L->c->nvl_level = i == n - 1 ? -1 : i;
	return true;
}

/* kind: Cluster and the cluster's name. False when it is not a cluster. */
static bool read_kind_name(struct cf_loader *L, struct fy_node *root)
{
	struct drv_cluster *c = L->c;
	struct fy_node *v = fy_node_mapping_lookup_by_string(root, "kind", -1);
	const char *s = drv_yaml_scalar(v);

	if (!s || strcmp(s, "Cluster")) {
		drv_yaml_err(L->d, v ? v : root, "kind", "found %s%s%s, expected Cluster", s ? "'" : "",
		    s ? s : (v ? drv_yaml_kind(v) : "no kind"), s ? "'" : "");
		return false;
	}
	v = fy_node_mapping_lookup_by_string(root, "name", -1);
	if (!v)
		drv_yaml_err(L->d, root, "name", "missing field 'name', expected the cluster's name");
	else if (cf_read_str(L, v, "name", &s)) {
		drv_free(c->name);
		c->name = drv_strdup(s);
		drv_free(c->vertices[0].name);
		c->vertices[0].name = drv_strdup(s);
	}
	return true;
}

static void read_cluster(struct cf_loader *L, struct fy_node *root)
{
	struct drv_cluster *c = L->c;
	struct fy_node *v, *topo;
	const char *names[DRV_MAX_LEVELS];
	int n;

	if (!fy_node_is_mapping(root)) {
		drv_yaml_err(L->d, root, NULL, "found %s at the top, expected a mapping with kind: Cluster",
		    drv_yaml_kind(root));
		return;
	}
	cf_check_keys(L, root, NULL, top_keys);
	if (!read_kind_name(L, root))
		return;
	n = read_levels(L, fy_node_mapping_lookup_by_string(root, "levels", -1), names);
	if (n < 0)
		return;
	drv_cluster_set_levels(c, names, n);
	L->pool_level = -1;
	for (int i = 1; i < n; i++)
		if (!strcmp(names[i], "pool"))
			L->pool_level = i;
	v = fy_node_mapping_lookup_by_string(root, "levelLabels", -1);
	if (v)
		read_level_labels(L, v);
	v = fy_node_mapping_lookup_by_string(root, "nvlinkDomain", -1);
	if (v && !read_nvlink(L, v, names, n))
		return;
	v = fy_node_mapping_lookup_by_string(root, "nodeTypes", -1);
	if (v)
		read_node_types(L, v);
	topo = fy_node_mapping_lookup_by_string(root, "topology", -1);
	if (!topo) {
		drv_yaml_err(L->d, root, "topology", "missing field 'topology', expected a list of pools or vertices");
		return;
	}
	cf_read_entries(L, topo, 0, "topology");
	if (!L->d->nerrors && c->nnodes == 0)
		drv_yaml_err(L->d, topo, "topology", "the cluster has no nodes");
}

int drv_cluster_load_buffer(const char *buf, size_t len, struct drv_cluster *c,
			    struct drv_diags *diags)
{
	struct fy_document *fyd = NULL;
	struct cf_loader L;
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
		cf_free_labels(L.types[i].labels, L.types[i].nlabels);
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
