/*
 * manifest.c: Kubernetes manifests to drover jobs. Reads a YAML (or JSON)
 * stream with libfyaml, document by document, and turns each object into
 * jobs:
 *
 *   v1 Pod                         one group of one task
 *   batch/v1 Job                   one group of `parallelism` tasks
 *   batch.volcano.sh/v1alpha1 Job  one group per spec.tasks[], gang of minAvailable
 *   scheduling.volcano.sh/v1beta1 PodGroup
 *                                  gangs the Pods of the stream that name it
 *   kubeflow.org/v1 PyTorchJob     Master and Worker groups, one gang
 *   scheduling.k8s.io/v1 PriorityClass
 *                                  resolves priorityClassName in the stream
 *   v1 List                        its items, each as above
 *
 * Every field is either acted on, or kept in spec->ignored with a warning:
 * nothing is dropped silently. Errors carry the node's line:col and field
 * path. YAML aliases are refused (their expansion is unbounded).
 */
#include "drover/spec.h"
#include "spec_int.h"

#include <libfyaml.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Annotations drover reads (docs/job-format.md). */
#define ANN_GPU_FRACTION "drover.io/gpu-fraction"
#define ANN_KAI_FRACTION "gpu-fraction"
#define ANN_GPU_MEMORY "drover.io/gpu-memory"
#define ANN_KAI_MEMORY "gpu-memory"
#define ANN_PREEMPTIBLE "drover.io/preemptible"
#define ANN_TENANT "drover.io/tenant"
#define ANN_RUNTIME "drover.io/runtime-estimate"
#define ANN_TOPO_REQUIRED "kueue.x-k8s.io/podset-required-topology"
#define ANN_TOPO_PREFERRED "kueue.x-k8s.io/podset-preferred-topology"
#define ANN_VOLCANO_GROUP "scheduling.k8s.io/group-name"
#define ANN_DEFAULT_CONTAINER "kubectl.kubernetes.io/default-container"
#define LABEL_KUEUE_QUEUE "kueue.x-k8s.io/queue-name"
#define SEL_GPU_PRODUCT "nvidia.com/gpu.product"
#define SEL_REGION "topology.kubernetes.io/region"
#define RES_GPU "nvidia.com/gpu"

struct mctx {
	struct drv_diags *d;
	struct drv_specset *set;
	int errs;
};

/* ------------------------------------------------------------------------
 * Node helpers.
 */

static void merr(struct mctx *c, struct fy_node *n, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void merr(struct mctx *c, struct fy_node *n, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	drv_yaml_verr(c->d, n, path, fmt, ap);
	va_end(ap);
}

static const char *ntype(struct fy_node *n)
{
	if (!n)
		return "nothing";
	if (fy_node_is_mapping(n))
		return "a mapping";
	if (fy_node_is_sequence(n))
		return "a list";
	return "a scalar";
}

/* The scalar text of n, or NULL when n is not a scalar. */
static const char *scal(struct fy_node *n)
{
	if (!n || !fy_node_is_scalar(n) || fy_node_is_alias(n))
		return NULL;
	return fy_node_get_scalar0(n);
}

/* Value of key in mapping m, or NULL. */
static struct fy_node *field(struct fy_node *m, const char *key)
{
	void *it = NULL;
	struct fy_node_pair *p;
	if (!m || !fy_node_is_mapping(m))
		return NULL;
	while ((p = fy_node_mapping_iterate(m, &it))) {
		const char *k = scal(fy_node_pair_key(p));
		if (k && strcmp(k, key) == 0)
			return fy_node_pair_value(p);
	}
	return NULL;
}

static void join(char *out, size_t sz, const char *path, const char *key)
{
	bool plain = true;
	const char *k;
	for (k = key; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_'))
			plain = false;
	if (plain)
		snprintf(out, sz, "%s%s%s", path, *path ? "." : "", key);
	else
		snprintf(out, sz, "%s[\"%s\"]", path, key);
}

/* A node as JSON, for spec->ignored; reference returned. Not through
 * libfyaml's JSON emitter, which crashes on some valid input (yaml.c). */
static json_t *node_json(struct fy_node *n)
{
	return drv_yaml_node_json(n);
}

void drv_spec_keep_ignored(struct drv_jobspec *s, const char *path, json_t *value)
{
	if (!s->ignored)
		s->ignored = json_object();
	json_object_set_new(s->ignored, path, value);
	drv_jobspec_warn(s, "%s: kept, not acted on by drover", path);
}

/* Keeps every key of mapping m not in known[] as ignored. */
static void keep_unknown(struct drv_jobspec *s, struct fy_node *m, const char *path,
			 const char *const *known)
{
	void *it = NULL;
	struct fy_node_pair *p;
	char fp[512];
	if (!m || !fy_node_is_mapping(m))
		return;
	while ((p = fy_node_mapping_iterate(m, &it))) {
		const char *k = scal(fy_node_pair_key(p));
		const char *const *a;
		if (!k)
			continue;
		for (a = known; *a; a++)
			if (strcmp(*a, k) == 0)
				break;
		if (*a)
			continue;
		join(fp, sizeof(fp), path, k);
		drv_spec_keep_ignored(s, fp, node_json(fy_node_pair_value(p)));
	}
}

/* Reads a non-negative integer (plain or quoted). */
static bool get_int(struct mctx *c, struct fy_node *n, const char *path, int64_t max,
		    int64_t *out)
{
	const char *t = scal(n), *p;
	int64_t v = 0;
	if (!t || !*t) {
		merr(c, n, path, "found %s, expected a non-negative integer", t ? "an empty value" : ntype(n));
		return false;
	}
	for (p = t; *p; p++) {
		if (*p < '0' || *p > '9') {
			merr(c, n, path, "found \"%.64s\", expected a non-negative integer", t);
			return false;
		}
		v = v * 10 + (*p - '0');
		if (v > max) {
			merr(c, n, path, "found %.64s, expected at most %lld", t, (long long)max);
			return false;
		}
	}
	*out = v;
	return true;
}

static char *get_str(struct mctx *c, struct fy_node *n, const char *path)
{
	const char *t = scal(n);
	if (!t) {
		merr(c, n, path, "found %s, expected a string", ntype(n));
		return NULL;
	}
	if (strlen(t) > DRV_SPEC_MAX_STRING) {
		merr(c, n, path, "found a string of %zu bytes, over the limit of %d", strlen(t),
		     DRV_SPEC_MAX_STRING);
		return NULL;
	}
	return drv_strdup(t);
}

static char **get_strv(struct mctx *c, struct fy_node *n, const char *path, int32_t *count)
{
	void *it = NULL;
	struct fy_node *e;
	char **v;
	int i = 0;
	*count = 0;
	if (!fy_node_is_sequence(n)) {
		merr(c, n, path, "found %s, expected a list of strings", ntype(n));
		return NULL;
	}
	if (fy_node_sequence_item_count(n) > DRV_SPEC_MAX_ITEMS) {
		merr(c, n, path, "found %d items, over the limit of %d",
		     fy_node_sequence_item_count(n), DRV_SPEC_MAX_ITEMS);
		return NULL;
	}
	v = drv_calloc((size_t)fy_node_sequence_item_count(n) + 1, sizeof(char *));
	while ((e = fy_node_sequence_iterate(n, &it))) {
		char p[560];
		char *s;
		snprintf(p, sizeof(p), "%s[%d]", path, i++);
		if ((s = get_str(c, e, p)))
			v[(*count)++] = s;
	}
	return v;
}

static struct drv_label *get_labels(struct mctx *c, struct fy_node *n, const char *path,
				    int32_t *count)
{
	void *it = NULL;
	struct fy_node_pair *p;
	struct drv_label *v;
	*count = 0;
	if (!fy_node_is_mapping(n)) {
		merr(c, n, path, "found %s, expected a mapping of strings", ntype(n));
		return NULL;
	}
	if (fy_node_mapping_item_count(n) > DRV_SPEC_MAX_ITEMS) {
		merr(c, n, path, "found too many entries, over the limit of %d", DRV_SPEC_MAX_ITEMS);
		return NULL;
	}
	v = drv_calloc((size_t)fy_node_mapping_item_count(n) + 1, sizeof(*v));
	while ((p = fy_node_mapping_iterate(n, &it))) {
		const char *k = scal(fy_node_pair_key(p));
		char fp[560];
		char *val;
		if (!k) {
			merr(c, fy_node_pair_key(p), path, "found a complex key, expected a string");
			continue;
		}
		join(fp, sizeof(fp), path, k);
		if (!(val = get_str(c, fy_node_pair_value(p), fp)))
			continue;
		v[*count].key = drv_strdup(k);
		v[*count].value = val;
		(*count)++;
	}
	return v;
}

static const char *label_get(const struct drv_label *l, int32_t n, const char *key)
{
	int32_t i;
	for (i = 0; i < n; i++)
		if (strcmp(l[i].key, key) == 0)
			return l[i].value;
	return NULL;
}

/* ------------------------------------------------------------------------
 * Topology levels: Kueue names node labels; drover names levels.
 */
const char *drv_spec_topo_level(const char *key)
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

/* ------------------------------------------------------------------------
 * Metadata and annotations.
 */

static void read_metadata(struct mctx *c, struct drv_jobspec *s, struct fy_node *md,
			  const char *path)
{
	static const char *const known[] = { "name", "generateName", "namespace", "labels",
		"annotations", NULL };
	struct fy_node *n;
	char fp[512];

	if (!md) {
		merr(c, NULL, path, "found nothing, expected metadata with a name");
		return;
	}
	if (!fy_node_is_mapping(md)) {
		merr(c, md, path, "found %s, expected a mapping", ntype(md));
		return;
	}
	if ((n = field(md, "name"))) {
		join(fp, sizeof(fp), path, "name");
		s->job.name = get_str(c, n, fp);
	} else if ((n = field(md, "generateName"))) {
		join(fp, sizeof(fp), path, "generateName");
		s->job.name = get_str(c, n, fp);
	} else {
		merr(c, md, path, "found no name, expected metadata.name");
	}
	if ((n = field(md, "namespace"))) {
		join(fp, sizeof(fp), path, "namespace");
		s->namespace_ = get_str(c, n, fp);
	}
	if ((n = field(md, "labels"))) {
		join(fp, sizeof(fp), path, "labels");
		s->labels = get_labels(c, n, fp, &s->nlabels);
	}
	if ((n = field(md, "annotations"))) {
		join(fp, sizeof(fp), path, "annotations");
		s->annotations = get_labels(c, n, fp, &s->nannotations);
	}
	keep_unknown(s, md, path, known);
}

/* Annotations that act on the job (from object or pod template metadata). */
static void apply_annotations(struct mctx *c, struct drv_jobspec *s, int g,
			      struct fy_node *anns, const char *path)
{
	void *it = NULL;
	struct fy_node_pair *p;
	if (!anns || !fy_node_is_mapping(anns))
		return;
	while ((p = fy_node_mapping_iterate(anns, &it))) {
		const char *k = scal(fy_node_pair_key(p));
		struct fy_node *vn = fy_node_pair_value(p);
		const char *v = scal(vn);
		char fp[560];
		if (!k || !v)
			continue;
		join(fp, sizeof(fp), path, k);
		if (strcmp(k, ANN_GPU_FRACTION) == 0 || strcmp(k, ANN_KAI_FRACTION) == 0) {
			int64_t m;
			int i;
			if (drv_quantity_parse(v, 1000, &m) || m < 1 || m > 999) {
				merr(c, vn, fp, "found \"%.64s\", expected a fraction of one GPU "
				     "between 0.001 and 0.999 (or 1m..999m)", v);
				continue;
			}
			for (i = (g < 0 ? 0 : g); i < (g < 0 ? s->job.ngroups : g + 1); i++) {
				if (s->job.groups[i].gpus > 1 ||
				    (s->job.groups[i].gpus == 1 && m != 1000)) {
					merr(c, vn, fp, "found a GPU fraction and a whole-GPU request "
					     "of %d, expected one of them", s->job.groups[i].gpus);
					continue;
				}
				s->job.groups[i].gpus = 0;
				s->job.groups[i].gpu_milli = (int32_t)m;
			}
		} else if (strcmp(k, ANN_GPU_MEMORY) == 0 || strcmp(k, ANN_KAI_MEMORY) == 0) {
			int64_t mib;
			int i, rc;
			/* KAI's gpu-memory is a plain number of MiB; ours is a quantity */
			rc = strcmp(k, ANN_KAI_MEMORY) == 0 && strspn(v, "0123456789") == strlen(v)
				? drv_quantity_parse(v, 1, &mib) : drv_quantity_mib(v, &mib);
			if (rc || mib > INT32_MAX) {
				merr(c, vn, fp, "found \"%.64s\", expected a memory quantity such as 20Gi", v);
				continue;
			}
			for (i = (g < 0 ? 0 : g); i < (g < 0 ? s->job.ngroups : g + 1); i++)
				s->job.groups[i].gpu_mem_mib = (int32_t)mib;
		} else if (strcmp(k, ANN_TOPO_REQUIRED) == 0 || strcmp(k, ANN_TOPO_PREFERRED) == 0) {
			const char *lvl = drv_spec_topo_level(v);
			bool req = strcmp(k, ANN_TOPO_REQUIRED) == 0;
			if (!lvl) {
				merr(c, vn, fp, "found \"%.128s\", expected a topology label drover maps "
				     "to a level (kubernetes.io/hostname, ...-rack, ...-block, "
				     "nvidia.com/gpu.clique) or a level name", v);
				continue;
			}
			if (s->job.topo_mode == DRV_TOPO_REQUIRED && !req)
				continue; /* required wins over preferred */
			drv_free(s->job.topo_level);
			s->job.topo_level = drv_strdup(lvl);
			s->job.topo_mode = req ? DRV_TOPO_REQUIRED : DRV_TOPO_PREFERRED;
		} else if (strcmp(k, ANN_PREEMPTIBLE) == 0) {
			if (strcmp(v, "true") == 0)
				s->job.preemptible = true;
			else if (strcmp(v, "false") == 0)
				s->job.preemptible = false;
			else
				merr(c, vn, fp, "found \"%.64s\", expected \"true\" or \"false\"", v);
		} else if (strcmp(k, ANN_TENANT) == 0) {
			drv_free(s->job.tenant);
			s->job.tenant = drv_strdup(v);
		} else if (strcmp(k, ANN_RUNTIME) == 0) {
			int64_t secs;
			if (drv_slurm_time_parse(v, &secs))
				merr(c, vn, fp, "found \"%.64s\", expected a time such as 2:00:00 or 1-12", v);
			else
				s->job.runtime_estimate = secs;
		}
	}
}

/* ------------------------------------------------------------------------
 * Pod spec -> one task group.
 */

struct res {
	int64_t gpus;      /* -1 = not given */
	int64_t cpu_milli;
	int64_t mem_mib;
};

static void read_resources(struct mctx *c, struct drv_jobspec *s, struct fy_node *rn,
			   const char *path, struct res *out)
{
	static const char *const known[] = { "limits", "requests", NULL };
	static const char *const kinds[] = { "limits", "requests" };
	int64_t gpu[2] = { -1, -1 }, cpu[2] = { -1, -1 }, mem[2] = { -1, -1 };
	int i;

	out->gpus = -1;
	out->cpu_milli = out->mem_mib = 0;
	if (!rn)
		return;
	if (!fy_node_is_mapping(rn)) {
		merr(c, rn, path, "found %s, expected limits and requests", ntype(rn));
		return;
	}
	keep_unknown(s, rn, path, known);
	for (i = 0; i < 2; i++) {
		struct fy_node *m = field(rn, kinds[i]);
		void *it = NULL;
		struct fy_node_pair *p;
		char mp[512];
		join(mp, sizeof(mp), path, kinds[i]);
		if (!m)
			continue;
		if (!fy_node_is_mapping(m)) {
			merr(c, m, mp, "found %s, expected a mapping of resource quantities", ntype(m));
			continue;
		}
		while ((p = fy_node_mapping_iterate(m, &it))) {
			const char *k = scal(fy_node_pair_key(p));
			struct fy_node *vn = fy_node_pair_value(p);
			const char *v = scal(vn);
			char fp[600];
			int64_t x;
			if (!k)
				continue;
			join(fp, sizeof(fp), mp, k);
			if (strcmp(k, RES_GPU) == 0) {
				if (!v || drv_quantity_parse(v, 1000, &x) || x % 1000) {
					merr(c, vn, fp, "found %s%.64s%s, expected a whole number of GPUs "
					     "(for a share of one GPU use the annotation "
					     ANN_GPU_FRACTION ")", v ? "\"" : "", v ? v : ntype(vn),
					     v ? "\"" : "");
					continue;
				}
				if (x / 1000 > DRV_MAX_NODE_GPUS) {
					merr(c, vn, fp, "found %lld GPUs, expected at most %d per task",
					     (long long)(x / 1000), DRV_MAX_NODE_GPUS);
					continue;
				}
				gpu[i] = x / 1000;
			} else if (strcmp(k, "cpu") == 0) {
				if (!v || drv_quantity_parse(v, 1000, &x)) {
					merr(c, vn, fp, "found \"%.64s\", expected a CPU quantity such as "
					     "500m or 2", v ? v : ntype(vn));
					continue;
				}
				cpu[i] = x;
			} else if (strcmp(k, "memory") == 0) {
				if (!v || drv_quantity_mib(v, &x)) {
					merr(c, vn, fp, "found \"%.64s\", expected a memory quantity such "
					     "as 16Gi, 129M or 128974848", v ? v : ntype(vn));
					continue;
				}
				mem[i] = x;
			} else {
				drv_spec_keep_ignored(s, fp, node_json(vn));
			}
		}
	}
	if (gpu[0] >= 0 && gpu[1] >= 0 && gpu[0] != gpu[1]) {
		char rp[560], fp[600];
		join(rp, sizeof(rp), path, "requests");
		join(fp, sizeof(fp), rp, RES_GPU);
		merr(c, field(field(rn, "requests"), RES_GPU), fp,
		     "found %lld GPUs requested and %lld as the limit, expected them equal",
		     (long long)gpu[1], (long long)gpu[0]);
	}
	out->gpus = gpu[0] >= 0 ? gpu[0] : gpu[1];
	out->cpu_milli = cpu[1] >= 0 ? cpu[1] : (cpu[0] >= 0 ? cpu[0] : 0);
	out->mem_mib = mem[1] >= 0 ? mem[1] : (mem[0] >= 0 ? mem[0] : 0);
}

static void read_env(struct mctx *c, struct drv_jobspec *s, int g, struct fy_node *en,
		     const char *path)
{
	void *it = NULL;
	struct fy_node *e;
	int i = 0;
	if (!fy_node_is_sequence(en)) {
		merr(c, en, path, "found %s, expected a list of {name, value}", ntype(en));
		return;
	}
	if (fy_node_sequence_item_count(en) > DRV_SPEC_MAX_ITEMS) {
		merr(c, en, path, "found more than %d entries", DRV_SPEC_MAX_ITEMS);
		return;
	}
	while ((e = fy_node_sequence_iterate(en, &it))) {
		static const char *const known[] = { "name", "value", NULL };
		char ep[560], fp[600];
		const char *name, *value;
		snprintf(ep, sizeof(ep), "%.500s[%d]", path, i++);
		if (!fy_node_is_mapping(e)) {
			merr(c, e, ep, "found %s, expected {name, value}", ntype(e));
			continue;
		}
		join(fp, sizeof(fp), ep, "name");
		name = scal(field(e, "name"));
		if (!name || !*name) {
			merr(c, e, fp, "found %s, expected a variable name",
			     name ? "an empty name" : ntype(field(e, "name")));
			continue;
		}
		if (field(e, "valueFrom")) {
			join(fp, sizeof(fp), ep, "valueFrom");
			drv_spec_keep_ignored(s, fp, node_json(field(e, "valueFrom")));
			continue;
		}
		keep_unknown(s, e, ep, known);
		value = "";
		if (field(e, "value")) {
			join(fp, sizeof(fp), ep, "value");
			value = scal(field(e, "value"));
			if (!value) {
				merr(c, field(e, "value"), fp, "found %s, expected a string",
				     ntype(field(e, "value")));
				continue;
			}
		}
		drv_jobspec_add_env(s, g, name, value);
	}
}

/* The main container (the first, or the one kubectl.kubernetes.io/default-container
 * names) runs the task; the others count toward resources and are kept. */
static void read_container(struct mctx *c, struct drv_jobspec *s, int g, struct fy_node *cn,
			   const char *path, bool main, struct res *sum)
{
	static const char *const known[] = { "name", "image", "command", "args", "env",
		"workingDir", "resources", NULL };
	struct drv_task_run *r = &s->run[g];
	struct fy_node *n;
	struct res res;
	char fp[560];

	if (!fy_node_is_mapping(cn)) {
		merr(c, cn, path, "found %s, expected a container", ntype(cn));
		return;
	}
	join(fp, sizeof(fp), path, "resources");
	read_resources(c, s, field(cn, "resources"), fp, &res);
	if (res.gpus > 0)
		sum->gpus = (sum->gpus > 0 ? sum->gpus : 0) + res.gpus;
	else if (res.gpus == 0 && sum->gpus < 0)
		sum->gpus = 0;
	sum->cpu_milli += res.cpu_milli;
	sum->mem_mib += res.mem_mib;
	if (!main) {
		/* a sidecar: its resources count, the rest is kept */
		static const char *const sk[] = { "resources", NULL };
		keep_unknown(s, cn, path, sk);
		return;
	}
	if ((n = field(cn, "name"))) {
		join(fp, sizeof(fp), path, "name");
		r->container = get_str(c, n, fp);
	}
	if ((n = field(cn, "image"))) {
		join(fp, sizeof(fp), path, "image");
		r->image = get_str(c, n, fp);
	} else {
		join(fp, sizeof(fp), path, "image");
		merr(c, cn, fp, "found nothing, expected a container image");
	}
	if ((n = field(cn, "command"))) {
		join(fp, sizeof(fp), path, "command");
		r->command = get_strv(c, n, fp, &r->ncommand);
	}
	if ((n = field(cn, "args"))) {
		join(fp, sizeof(fp), path, "args");
		r->args = get_strv(c, n, fp, &r->nargs);
	}
	if ((n = field(cn, "env"))) {
		join(fp, sizeof(fp), path, "env");
		read_env(c, s, g, n, fp);
	}
	if ((n = field(cn, "workingDir"))) {
		join(fp, sizeof(fp), path, "workingDir");
		r->working_dir = get_str(c, n, fp);
	}
	keep_unknown(s, cn, path, known);
}

/*
 * Pod spec at path into group g (already added, count set): containers,
 * nodeSelector, restart policy, grace period, priority.
 */
static void read_pod_spec(struct mctx *c, struct drv_jobspec *s, int g, struct fy_node *ps,
			  const char *path, struct fy_node *md)
{
	static const char *const known[] = { "containers", "nodeSelector", "restartPolicy",
		"terminationGracePeriodSeconds", "priorityClassName", "priority",
		"activeDeadlineSeconds", NULL };
	struct drv_task_group *tg = &s->job.groups[g];
	struct drv_task_run *r = &s->run[g];
	struct fy_node *n;
	struct res sum = { -1, 0, 0 };
	char fp[560];
	int64_t v;

	if (!ps || !fy_node_is_mapping(ps)) {
		merr(c, ps, path, "found %s, expected a pod spec with containers", ntype(ps));
		return;
	}
	join(fp, sizeof(fp), path, "containers");
	n = field(ps, "containers");
	if (!n || !fy_node_is_sequence(n) || fy_node_sequence_item_count(n) == 0) {
		merr(c, n ? n : ps, fp, "found %s, expected a list of at least one container",
		     n && fy_node_is_sequence(n) ? "an empty list" : ntype(n));
	} else {
		void *it = NULL;
		struct fy_node *cn;
		int i = 0, main_i = 0;
		/* kubectl's default-container annotation names the main container */
		const char *dflt = scal(field(field(md, "annotations"), ANN_DEFAULT_CONTAINER));
		if (dflt) {
			while ((cn = fy_node_sequence_iterate(n, &it))) {
				const char *cname = scal(field(cn, "name"));
				if (cname && strcmp(cname, dflt) == 0) {
					main_i = i;
					break;
				}
				i++;
			}
			it = NULL;
			i = 0;
		}
		while ((cn = fy_node_sequence_iterate(n, &it))) {
			char cp[600];
			snprintf(cp, sizeof(cp), "%s[%d]", fp, i);
			read_container(c, s, g, cn, cp, i == main_i, &sum);
			i++;
		}
	}
	tg->gpus = sum.gpus > 0 ? (int32_t)sum.gpus : 0;
	if (sum.gpus > DRV_MAX_NODE_GPUS)
		merr(c, n, fp, "found %lld GPUs in one pod, expected at most %d",
		     (long long)sum.gpus, DRV_MAX_NODE_GPUS);
	tg->cpu_milli = sum.cpu_milli;
	tg->mem_mib = sum.mem_mib;

	if ((n = field(ps, "nodeSelector"))) {
		void *it = NULL;
		struct fy_node_pair *p;
		char sp[560];
		join(sp, sizeof(sp), path, "nodeSelector");
		if (!fy_node_is_mapping(n))
			merr(c, n, sp, "found %s, expected a mapping of labels", ntype(n));
		while (fy_node_is_mapping(n) && (p = fy_node_mapping_iterate(n, &it))) {
			const char *k = scal(fy_node_pair_key(p));
			struct fy_node *vn = fy_node_pair_value(p);
			const char *val = scal(vn);
			char kp[600];
			if (!k)
				continue;
			join(kp, sizeof(kp), sp, k);
			if (strcmp(k, SEL_GPU_PRODUCT) == 0) {
				int m = val ? drv_gpu_model_find(val) : -1;
				if (m < 0)
					merr(c, vn, kp, "found \"%.64s\", expected a GPU model drover "
					     "knows (such as NVIDIA-H100-80GB-HBM3 or H100)",
					     val ? val : ntype(vn));
				else
					tg->model = (int8_t)m;
			} else if (strcmp(k, SEL_REGION) == 0 && val) {
				s->job.regions = drv_realloc(s->job.regions, sizeof(char *) *
							     (size_t)(s->job.nregions + 1));
				s->job.regions[s->job.nregions++] = drv_strdup(val);
			} else {
				drv_spec_keep_ignored(s, kp, node_json(vn));
			}
		}
	}
	if ((n = field(ps, "restartPolicy"))) {
		join(fp, sizeof(fp), path, "restartPolicy");
		drv_free(r->restart_policy);
		r->restart_policy = get_str(c, n, fp);
	}
	if ((n = field(ps, "terminationGracePeriodSeconds"))) {
		join(fp, sizeof(fp), path, "terminationGracePeriodSeconds");
		if (get_int(c, n, fp, INT32_MAX, &v))
			r->termination_grace_s = v;
	}
	if ((n = field(ps, "priorityClassName"))) {
		join(fp, sizeof(fp), path, "priorityClassName");
		if (!s->priority_class)
			s->priority_class = get_str(c, n, fp);
	}
	if ((n = field(ps, "priority"))) {
		join(fp, sizeof(fp), path, "priority");
		if (get_int(c, n, fp, INT32_MAX, &v))
			s->job.priority = (int32_t)v;
	}
	if ((n = field(ps, "activeDeadlineSeconds"))) {
		join(fp, sizeof(fp), path, "activeDeadlineSeconds");
		if (get_int(c, n, fp, INT32_MAX, &v)) {
			s->job.time_limit = v;
			s->k8s.active_deadline_s = v;
		}
	}
	keep_unknown(s, ps, path, known);
}

/* A pod template {metadata, spec} into group g. */
static void read_template(struct mctx *c, struct drv_jobspec *s, int g, struct fy_node *tn,
			  const char *path)
{
	static const char *const known[] = { "metadata", "spec", NULL };
	static const char *const mknown[] = { "labels", "annotations", NULL };
	struct fy_node *md;
	char fp[560];

	if (!tn || !fy_node_is_mapping(tn)) {
		merr(c, tn, path, "found %s, expected a pod template {metadata, spec}", ntype(tn));
		return;
	}
	join(fp, sizeof(fp), path, "spec");
	read_pod_spec(c, s, g, field(tn, "spec"), fp, field(tn, "metadata"));
	join(fp, sizeof(fp), path, "metadata");
	if ((md = field(tn, "metadata"))) {
		char ap[600];
		join(ap, sizeof(ap), fp, "annotations");
		apply_annotations(c, s, g, field(md, "annotations"), ap);
		if (field(md, "labels")) {
			const char *q = scal(field(field(md, "labels"), LABEL_KUEUE_QUEUE));
			if (q && !s->queue)
				s->queue = drv_strdup(q);
		}
		keep_unknown(s, md, fp, mknown);
		/* template labels/annotations other than the ones acted on are kept */
		if (field(md, "labels")) {
			join(ap, sizeof(ap), fp, "labels");
			drv_spec_keep_ignored(s, ap, node_json(field(md, "labels")));
		}
	}
	keep_unknown(s, tn, path, known);
}

/* ------------------------------------------------------------------------
 * Kinds.
 */

struct obj {
	struct fy_node *root;
	const char *api, *kind;
	char path[64];  /* "" or "items[3]" */
};

static void fp_of(char *out, size_t sz, const struct obj *o, const char *rest)
{
	join(out, sz, o->path, rest);
}

/* Common start: a new spec with source, metadata, job-level annotations. */
static struct drv_jobspec *begin_job(struct mctx *c, const struct obj *o)
{
	struct drv_jobspec *s = drv_specset_add(c->set);
	char fp[128];
	s->format = DRV_FMT_MANIFEST;
	s->api_version = drv_strdup(o->api);
	s->kind = drv_strdup(o->kind);
	fp_of(fp, sizeof(fp), o, "metadata");
	read_metadata(c, s, field(o->root, "metadata"), fp);
	if (!s->job.name)
		s->job.name = drv_strdup("");
	{
		const char *q = label_get(s->labels, s->nlabels, LABEL_KUEUE_QUEUE);
		if (q)
			s->queue = drv_strdup(q);
	}
	return s;
}

/* Job-level annotations apply to every group: call after the groups exist. */
static void end_job(struct mctx *c, struct drv_jobspec *s, const struct obj *o)
{
	char fp[160];
	int64_t tasks = 0;
	int i;
	fp_of(fp, sizeof(fp), o, "metadata.annotations");
	apply_annotations(c, s, -1, field(field(o->root, "metadata"), "annotations"), fp);
	for (i = 0; i < s->job.ngroups; i++)
		tasks += s->job.groups[i].count;
	if (tasks > DRV_SPEC_MAX_TASKS)
		merr(c, o->root, o->path, "found %lld tasks, over the limit of %d", (long long)tasks,
		     DRV_SPEC_MAX_TASKS);
	if (s->job.ngroups == 0)
		merr(c, o->root, o->path, "found no task groups, expected at least one");
}

static int add_group(struct mctx *c, struct drv_jobspec *s, struct fy_node *n, const char *path,
		     const char *name)
{
	int g = drv_jobspec_add_group(s, name);
	if (g < 0)
		merr(c, n, path, "found more than %d task groups", DRV_SPEC_MAX_GROUPS);
	return g;
}

static void kind_pod(struct mctx *c, const struct obj *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	struct drv_jobspec *s = begin_job(c, o);
	char fp[128];
	int g = add_group(c, s, o->root, o->path, s->job.name);
	if (g < 0)
		return;
	s->job.groups[g].count = 1;
	fp_of(fp, sizeof(fp), o, "spec");
	read_pod_spec(c, s, g, field(o->root, "spec"), fp, field(o->root, "metadata"));
	keep_unknown(s, o->root, o->path, known);
	end_job(c, s, o);
}

static void kind_batch_job(struct mctx *c, const struct obj *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const sknown[] = { "parallelism", "completions", "backoffLimit",
		"activeDeadlineSeconds", "template", NULL };
	struct drv_jobspec *s = begin_job(c, o);
	struct fy_node *spec = field(o->root, "spec"), *n;
	char fp[128], sp[128];
	int64_t v;
	int g;

	fp_of(sp, sizeof(sp), o, "spec");
	if (!spec || !fy_node_is_mapping(spec)) {
		merr(c, spec ? spec : o->root, sp, "found %s, expected a Job spec", ntype(spec));
		return;
	}
	if ((g = add_group(c, s, spec, sp, s->job.name)) < 0)
		return;
	s->job.groups[g].count = 1;
	join(fp, sizeof(fp), sp, "template");
	read_template(c, s, g, field(spec, "template"), fp);
	if ((n = field(spec, "parallelism"))) {
		join(fp, sizeof(fp), sp, "parallelism");
		if (get_int(c, n, fp, DRV_SPEC_MAX_TASKS, &v))
			s->k8s.parallelism = (int32_t)v;
	}
	if ((n = field(spec, "completions"))) {
		join(fp, sizeof(fp), sp, "completions");
		if (get_int(c, n, fp, INT32_MAX, &v))
			s->k8s.completions = (int32_t)v;
	}
	if ((n = field(spec, "backoffLimit"))) {
		join(fp, sizeof(fp), sp, "backoffLimit");
		if (get_int(c, n, fp, INT32_MAX, &v))
			s->k8s.backoff_limit = (int32_t)v;
	}
	if ((n = field(spec, "activeDeadlineSeconds"))) {
		join(fp, sizeof(fp), sp, "activeDeadlineSeconds");
		if (get_int(c, n, fp, INT32_MAX, &v)) {
			s->k8s.active_deadline_s = v;
			s->job.time_limit = v;
		}
	}
	/* pods running at once: parallelism, capped by completions (both default 1) */
	v = s->k8s.parallelism >= 0 ? s->k8s.parallelism : 1;
	if (s->k8s.completions >= 0 && s->k8s.completions < v)
		v = s->k8s.completions;
	s->job.groups[g].count = (int32_t)v;
	/* a plain Job's pods start independently; Kueue admits the whole Job at once */
	s->job.gang_min = s->queue ? 0 : (v > 1 ? 1 : 0);
	keep_unknown(s, spec, sp, sknown);
	keep_unknown(s, o->root, o->path, known);
	end_job(c, s, o);
}

static void kind_volcano_job(struct mctx *c, const struct obj *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const sknown[] = { "minAvailable", "queue", "priorityClassName",
		"tasks", NULL };
	struct drv_jobspec *s = begin_job(c, o);
	struct fy_node *spec = field(o->root, "spec"), *n;
	char fp[128], sp[128];
	int64_t v, total = 0;

	fp_of(sp, sizeof(sp), o, "spec");
	if (!spec || !fy_node_is_mapping(spec)) {
		merr(c, spec ? spec : o->root, sp, "found %s, expected a Volcano Job spec", ntype(spec));
		return;
	}
	join(fp, sizeof(fp), sp, "tasks");
	n = field(spec, "tasks");
	if (!n || !fy_node_is_sequence(n) || fy_node_sequence_item_count(n) == 0) {
		merr(c, n ? n : spec, fp, "found %s, expected a list of tasks", ntype(n));
	} else {
		void *it = NULL;
		struct fy_node *t;
		int i = 0;
		while ((t = fy_node_sequence_iterate(n, &it))) {
			static const char *const tk[] = { "name", "replicas", "template", NULL };
			char tp[160], xp[200];
			const char *name;
			int g;
			snprintf(tp, sizeof(tp), "%s[%d]", fp, i++);
			if (!fy_node_is_mapping(t)) {
				merr(c, t, tp, "found %s, expected a task", ntype(t));
				continue;
			}
			name = scal(field(t, "name"));
			if ((g = add_group(c, s, t, tp, name ? name : "task")) < 0)
				break;
			s->job.groups[g].count = 1;
			join(xp, sizeof(xp), tp, "replicas");
			if (field(t, "replicas") && get_int(c, field(t, "replicas"), xp,
							   DRV_SPEC_MAX_TASKS, &v))
				s->job.groups[g].count = (int32_t)v;
			total += s->job.groups[g].count;
			join(xp, sizeof(xp), tp, "template");
			read_template(c, s, g, field(t, "template"), xp);
			keep_unknown(s, t, tp, tk);
		}
	}
	if ((n = field(spec, "minAvailable"))) {
		join(fp, sizeof(fp), sp, "minAvailable");
		if (get_int(c, n, fp, DRV_SPEC_MAX_TASKS, &v)) {
			if (v > total)
				merr(c, n, fp, "found %lld, expected at most the %lld replicas of all tasks",
				     (long long)v, (long long)total);
			s->k8s.min_available = (int32_t)v;
			s->job.gang_min = v == total ? 0 : (int32_t)v;
		}
	}
	if ((n = field(spec, "queue"))) {
		join(fp, sizeof(fp), sp, "queue");
		drv_free(s->queue);
		s->queue = get_str(c, n, fp);
	}
	if ((n = field(spec, "priorityClassName"))) {
		join(fp, sizeof(fp), sp, "priorityClassName");
		drv_free(s->priority_class);
		s->priority_class = get_str(c, n, fp);
	}
	keep_unknown(s, spec, sp, sknown);
	keep_unknown(s, o->root, o->path, known);
	end_job(c, s, o);
}

static void kind_pytorchjob(struct mctx *c, const struct obj *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const sknown[] = { "pytorchReplicaSpecs", "runPolicy", NULL };
	static const char *const roles[] = { "Master", "Worker" };
	struct drv_jobspec *s = begin_job(c, o);
	struct fy_node *spec = field(o->root, "spec"), *rs, *rp;
	char fp[128], sp[128];
	int64_t v;
	size_t i;

	fp_of(sp, sizeof(sp), o, "spec");
	if (!spec || !fy_node_is_mapping(spec)) {
		merr(c, spec ? spec : o->root, sp, "found %s, expected a PyTorchJob spec", ntype(spec));
		return;
	}
	join(fp, sizeof(fp), sp, "pytorchReplicaSpecs");
	rs = field(spec, "pytorchReplicaSpecs");
	if (!rs || !fy_node_is_mapping(rs)) {
		merr(c, rs ? rs : spec, fp, "found %s, expected Master and Worker replica specs",
		     ntype(rs));
	} else {
		for (i = 0; i < DRV_ARRAY_SIZE(roles); i++) {
			static const char *const rk[] = { "replicas", "template", "restartPolicy", NULL };
			struct fy_node *r = field(rs, roles[i]);
			char rp2[200], xp[240];
			char lname[16];
			int g;
			size_t k;
			if (!r)
				continue;
			join(rp2, sizeof(rp2), fp, roles[i]);
			if (!fy_node_is_mapping(r)) {
				merr(c, r, rp2, "found %s, expected a replica spec", ntype(r));
				continue;
			}
			for (k = 0; roles[i][k] && k < sizeof(lname) - 1; k++)
				lname[k] = (char)(roles[i][k] | 0x20);
			lname[k] = '\0';
			if ((g = add_group(c, s, r, rp2, lname)) < 0)
				break;
			s->job.groups[g].count = 1;
			join(xp, sizeof(xp), rp2, "replicas");
			if (field(r, "replicas") && get_int(c, field(r, "replicas"), xp,
							   DRV_SPEC_MAX_TASKS, &v))
				s->job.groups[g].count = (int32_t)v;
			join(xp, sizeof(xp), rp2, "template");
			read_template(c, s, g, field(r, "template"), xp);
			if (field(r, "restartPolicy")) {
				join(xp, sizeof(xp), rp2, "restartPolicy");
				drv_free(s->run[g].restart_policy);
				s->run[g].restart_policy = get_str(c, field(r, "restartPolicy"), xp);
			}
			keep_unknown(s, r, rp2, rk);
		}
		{
			static const char *const rk2[] = { "Master", "Worker", NULL };
			keep_unknown(s, rs, fp, rk2);
		}
		if (s->job.ngroups == 0)
			merr(c, rs, fp, "found no Master or Worker, expected at least one");
	}
	/* one gang unless runPolicy.schedulingPolicy.minAvailable says less */
	s->job.gang_min = 0;
	join(fp, sizeof(fp), sp, "runPolicy");
	if ((rp = field(spec, "runPolicy"))) {
		static const char *const pk[] = { "backoffLimit", "activeDeadlineSeconds",
			"schedulingPolicy", NULL };
		struct fy_node *n, *sch;
		char xp[200];
		if ((n = field(rp, "backoffLimit"))) {
			join(xp, sizeof(xp), fp, "backoffLimit");
			if (get_int(c, n, xp, INT32_MAX, &v))
				s->k8s.backoff_limit = (int32_t)v;
		}
		if ((n = field(rp, "activeDeadlineSeconds"))) {
			join(xp, sizeof(xp), fp, "activeDeadlineSeconds");
			if (get_int(c, n, xp, INT32_MAX, &v)) {
				s->k8s.active_deadline_s = v;
				s->job.time_limit = v;
			}
		}
		if ((sch = field(rp, "schedulingPolicy"))) {
			static const char *const sk[] = { "minAvailable", "queue", "priorityClass", NULL };
			char yp[240];
			join(xp, sizeof(xp), fp, "schedulingPolicy");
			if ((n = field(sch, "minAvailable"))) {
				join(yp, sizeof(yp), xp, "minAvailable");
				if (get_int(c, n, yp, DRV_SPEC_MAX_TASKS, &v)) {
					s->k8s.min_available = (int32_t)v;
					s->job.gang_min = (int32_t)v;
				}
			}
			if ((n = field(sch, "queue"))) {
				join(yp, sizeof(yp), xp, "queue");
				drv_free(s->queue);
				s->queue = get_str(c, n, yp);
			}
			if ((n = field(sch, "priorityClass"))) {
				join(yp, sizeof(yp), xp, "priorityClass");
				drv_free(s->priority_class);
				s->priority_class = get_str(c, n, yp);
			}
			keep_unknown(s, sch, xp, sk);
		}
		keep_unknown(s, rp, fp, pk);
	}
	{
		int64_t tasks = 0;
		int g;
		for (g = 0; g < s->job.ngroups; g++)
			tasks += s->job.groups[g].count;
		if (s->job.gang_min >= tasks)
			s->job.gang_min = 0;
	}
	keep_unknown(s, spec, sp, sknown);
	keep_unknown(s, o->root, o->path, known);
	end_job(c, s, o);
}

static void kind_priority_class(struct mctx *c, const struct obj *o)
{
	static const char *const known[] = { "apiVersion", "kind", "metadata", "value",
		"globalDefault", "preemptionPolicy", "description", NULL };
	struct drv_specset *set = c->set;
	struct drv_priority_class *pc;
	struct fy_node *n;
	char fp[128];
	const char *t;

	DRV_GROW(set->classes, (size_t)set->nclasses + 1, set->ccap);
	pc = &set->classes[set->nclasses++];
	memset(pc, 0, sizeof(*pc));
	fp_of(fp, sizeof(fp), o, "metadata.name");
	t = scal(field(field(o->root, "metadata"), "name"));
	if (!t)
		merr(c, o->root, fp, "found nothing, expected the PriorityClass name");
	pc->name = drv_strdup(t ? t : "");
	fp_of(fp, sizeof(fp), o, "value");
	n = field(o->root, "value");
	t = scal(n);
	if (!t) {
		merr(c, n ? n : o->root, fp, "found %s, expected an integer value", ntype(n));
	} else {
		char *end;
		long long x = strtoll(t, &end, 10);
		if (!*t || *end || x < -2147483647LL || x > 1000000000LL)
			merr(c, n, fp, "found \"%.32s\", expected an integer up to 1000000000", t);
		else
			pc->value = (int32_t)x;
	}
	if ((n = field(o->root, "globalDefault")))
		pc->global_default = scal(n) && strcmp(scal(n), "true") == 0;
	if ((n = field(o->root, "preemptionPolicy"))) {
		fp_of(fp, sizeof(fp), o, "preemptionPolicy");
		t = scal(n);
		if (!t || (strcmp(t, "PreemptLowerPriority") && strcmp(t, "Never")))
			merr(c, n, fp, "found \"%.64s\", expected PreemptLowerPriority or Never",
			     t ? t : ntype(n));
		else
			pc->preemption_policy = drv_strdup(t);
	}
	if ((n = field(o->root, "description")))
		pc->description = drv_strdup(scal(n) ? scal(n) : "");
	{
		/* a PriorityClass has no job to warn on: unknown fields are diagnostics */
		void *it = NULL;
		struct fy_node_pair *p;
		while ((p = fy_node_mapping_iterate(o->root, &it))) {
			const char *k = scal(fy_node_pair_key(p));
			const char *const *a;
			for (a = known; k && *a; a++)
				if (strcmp(*a, k) == 0)
					break;
			if (k && !*a) {
				fp_of(fp, sizeof(fp), o, k);
				drv_diag_warn(c->d, 0, 0, fp, "kept, not acted on by drover");
			}
		}
	}
}

/* Volcano PodGroup: recorded, joined with its Pods after the stream. */
struct podgroup {
	char *name;
	char *queue;
	char *priority_class;
	int64_t min_member;
	int line, col;
	struct drv_jobspec kept; /* its fields drover does not act on */
};

struct pgset {
	struct podgroup *v;
	int n;
	size_t cap;
};

static void kind_podgroup(struct mctx *c, const struct obj *o, struct pgset *pgs)
{
	struct fy_node *spec = field(o->root, "spec"), *n;
	struct podgroup *pg;
	char fp[128];
	const char *t;
	int64_t v;

	DRV_GROW(pgs->v, (size_t)pgs->n + 1, pgs->cap);
	pg = &pgs->v[pgs->n++];
	memset(pg, 0, sizeof(*pg));
	drv_spec_node_mark(o->root, &pg->line, &pg->col);
	t = scal(field(field(o->root, "metadata"), "name"));
	fp_of(fp, sizeof(fp), o, "metadata.name");
	if (!t)
		merr(c, o->root, fp, "found nothing, expected the PodGroup name");
	pg->name = drv_strdup(t ? t : "");
	pg->min_member = -1;
	if ((n = field(spec, "minMember"))) {
		fp_of(fp, sizeof(fp), o, "spec.minMember");
		if (get_int(c, n, fp, DRV_SPEC_MAX_TASKS, &v))
			pg->min_member = v;
	}
	if ((t = scal(field(spec, "queue"))))
		pg->queue = drv_strdup(t);
	if ((t = scal(field(spec, "priorityClassName"))))
		pg->priority_class = drv_strdup(t);
	{
		static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
		static const char *const mknown[] = { "name", NULL };
		static const char *const sknown[] = { "minMember", "queue", "priorityClassName", NULL };
		char p[128];
		drv_jobspec_init(&pg->kept);
		keep_unknown(&pg->kept, o->root, o->path, known);
		fp_of(p, sizeof(p), o, "metadata");
		keep_unknown(&pg->kept, field(o->root, "metadata"), p, mknown);
		fp_of(p, sizeof(p), o, "spec");
		keep_unknown(&pg->kept, spec, p, sknown);
	}
}

/* Merges the Pods naming a PodGroup into one gang job (the first Pod's). */
static void join_podgroups(struct mctx *c, struct pgset *pgs)
{
	int i, j;
	for (i = 0; i < pgs->n; i++) {
		struct podgroup *pg = &pgs->v[i];
		struct drv_jobspec *first = NULL;
		int members = 0;
		for (j = 0; j < c->set->njobs; j++) {
			struct drv_jobspec *s = &c->set->jobs[j];
			const char *gname = label_get(s->annotations, s->nannotations, ANN_VOLCANO_GROUP);
			int g;
			if (!gname || strcmp(gname, pg->name) != 0 || s->kind == NULL ||
			    strcmp(s->kind, "Pod") != 0)
				continue;
			if (!first) {
				json_t *ign = json_object();
				const char *k;
				json_t *v;
				first = s;
				/* name what each kept field belongs to: the group is several pods */
				for (g = 0; g < s->nwarnings; g++) {
					char *old = s->warnings[g];
					size_t n = strlen(old) + strlen(s->job.name) + 3;
					s->warnings[g] = drv_malloc(n);
					snprintf(s->warnings[g], n, "%s: %s", s->job.name, old);
					drv_free(old);
				}
				json_object_foreach(s->ignored, k, v) {
					char key[600];
					snprintf(key, sizeof(key), "%s: %s", s->job.name, k);
					json_object_set(ign, key, v);
				}
				json_decref(s->ignored);
				s->ignored = ign;
				members += s->job.ngroups ? s->job.groups[0].count : 0;
				drv_free(first->kind);
				first->kind = drv_strdup("PodGroup");
				drv_free(first->api_version);
				first->api_version = drv_strdup("scheduling.volcano.sh/v1beta1");
				drv_free(first->job.name);
				first->job.name = drv_strdup(pg->name);
				continue;
			}
			/* move s's single group into first */
			for (g = 0; g < s->job.ngroups; g++) {
				int ng = drv_jobspec_add_group(first, s->job.groups[g].name);
				char *nm;
				if (ng < 0) {
					drv_diag_err(c->d, pg->line, pg->col, pg->name,
						     "found more than %d pods in the PodGroup",
						     DRV_SPEC_MAX_GROUPS);
					break;
				}
				nm = first->job.groups[ng].name;
				first->job.groups[ng] = s->job.groups[g];
				first->job.groups[ng].name = nm;
				drv_spec_run_release(&first->run[ng]);
				first->run[ng] = s->run[g];
				memset(&s->run[g], 0, sizeof(s->run[g]));
				members += s->job.groups[g].count;
			}
			for (g = 0; g < s->nwarnings; g++)
				drv_jobspec_warn(first, "%s: %s", s->job.name, s->warnings[g]);
			{
				const char *k;
				json_t *v;
				json_object_foreach(s->ignored, k, v) {
					char key[600];
					snprintf(key, sizeof(key), "%s: %s", s->job.name, k);
					json_object_set(first->ignored, key, v);
				}
			}
			drv_jobspec_release(s);
			memmove(s, s + 1, sizeof(*s) * (size_t)(c->set->njobs - j - 1));
			c->set->njobs--;
			j--;
		}
		if (!first) {
			drv_diag_warn(c->d, pg->line, pg->col, pg->name,
				      "PodGroup has no Pods in this file; nothing to run");
			continue;
		}
		if (pg->min_member > members)
			drv_diag_err(c->d, pg->line, pg->col, pg->name,
				     "found minMember %lld, expected at most the %d pods of the group",
				     (long long)pg->min_member, members);
		{
			const char *k;
			json_t *v;
			int w;
			for (w = 0; w < pg->kept.nwarnings; w++)
				drv_jobspec_warn(first, "PodGroup %s: %s", pg->name, pg->kept.warnings[w]);
			json_object_foreach(pg->kept.ignored, k, v) {
				char key[600];
				snprintf(key, sizeof(key), "PodGroup %s: %s", pg->name, k);
				json_object_set(first->ignored, key, v);
			}
		}
		first->k8s.min_available = (int32_t)pg->min_member;
		first->job.gang_min = pg->min_member < 0 || pg->min_member >= members
			? 0 : (int32_t)pg->min_member;
		if (pg->queue) {
			drv_free(first->queue);
			first->queue = drv_strdup(pg->queue);
		}
		if (pg->priority_class) {
			drv_free(first->priority_class);
			first->priority_class = drv_strdup(pg->priority_class);
		}
	}
}

static void one_object(struct mctx *c, struct fy_node *root, const char *path,
		       struct pgset *pgs, int depth);

static void kind_list(struct mctx *c, const struct obj *o, struct pgset *pgs, int depth)
{
	struct fy_node *items = field(o->root, "items"), *it;
	void *iter = NULL;
	int i = 0;
	char fp[64];
	fp_of(fp, sizeof(fp), o, "items");
	if (!items || !fy_node_is_sequence(items)) {
		merr(c, items ? items : o->root, fp, "found %s, expected a list of objects", ntype(items));
		return;
	}
	while ((it = fy_node_sequence_iterate(items, &iter))) {
		char ip[64];
		snprintf(ip, sizeof(ip), "items[%d]", i++);
		one_object(c, it, ip, pgs, depth + 1);
	}
}

static void one_object(struct mctx *c, struct fy_node *root, const char *path,
		       struct pgset *pgs, int depth)
{
	struct obj o;
	char fp[96];

	if (!root) /* an empty document */
		return;
	memset(&o, 0, sizeof(o));
	snprintf(o.path, sizeof(o.path), "%s", path);
	o.root = root;
	if (!fy_node_is_mapping(root)) {
		merr(c, root, path[0] ? path : NULL, "found %s, expected a Kubernetes object",
		     ntype(root));
		return;
	}
	o.api = scal(field(root, "apiVersion"));
	o.kind = scal(field(root, "kind"));
	if (!o.api || !o.kind) {
		fp_of(fp, sizeof(fp), &o, o.api ? "kind" : "apiVersion");
		merr(c, root, fp, "found nothing, expected apiVersion and kind");
		return;
	}
	fp_of(fp, sizeof(fp), &o, "kind");
	if (strcmp(o.api, "v1") == 0 && strcmp(o.kind, "Pod") == 0)
		kind_pod(c, &o);
	else if (strcmp(o.api, "batch/v1") == 0 && strcmp(o.kind, "Job") == 0)
		kind_batch_job(c, &o);
	else if (strncmp(o.api, "batch.volcano.sh/", 17) == 0 && strcmp(o.kind, "Job") == 0)
		kind_volcano_job(c, &o);
	else if (strncmp(o.api, "scheduling.volcano.sh/", 22) == 0 &&
		 strcmp(o.kind, "PodGroup") == 0)
		kind_podgroup(c, &o, pgs);
	else if (strcmp(o.api, "kubeflow.org/v1") == 0 && strcmp(o.kind, "PyTorchJob") == 0)
		kind_pytorchjob(c, &o);
	else if (strncmp(o.api, "scheduling.k8s.io/", 18) == 0 &&
		 strcmp(o.kind, "PriorityClass") == 0)
		kind_priority_class(c, &o);
	else if (strcmp(o.api, "v1") == 0 && strcmp(o.kind, "List") == 0 && depth == 0)
		kind_list(c, &o, pgs, depth);
	else
		drv_diag_warn(c->d, 0, 0, fp, "%s %s is not a job: skipped (drover runs v1 Pod, "
			      "batch/v1 Job, Volcano Job/PodGroup, Kubeflow PyTorchJob)",
			      o.api, o.kind);
}

/* Resolves priorityClassName against the stream's PriorityClasses. */
static void resolve_priorities(struct mctx *c)
{
	int i, k;
	for (i = 0; i < c->set->njobs; i++) {
		struct drv_jobspec *s = &c->set->jobs[i];
		for (k = 0; k < c->set->nclasses; k++) {
			const struct drv_priority_class *pc = &c->set->classes[k];
			bool hit = s->priority_class ? strcmp(pc->name, s->priority_class) == 0
						     : pc->global_default;
			if (!hit)
				continue;
			s->job.priority = pc->value;
			if (!s->priority_class)
				s->priority_class = drv_strdup(pc->name);
		}
		/* every job carries the classes it was defined with */
		if (c->set->nclasses && !s->nclasses) {
			s->classes = drv_calloc((size_t)c->set->nclasses, sizeof(*s->classes));
			for (k = 0; k < c->set->nclasses; k++) {
				const struct drv_priority_class *pc = &c->set->classes[k];
				s->classes[k].name = drv_strdup(pc->name);
				s->classes[k].value = pc->value;
				s->classes[k].global_default = pc->global_default;
				s->classes[k].preemption_policy = drv_strdup(pc->preemption_policy);
				s->classes[k].description = drv_strdup(pc->description);
			}
			s->nclasses = c->set->nclasses;
		}
	}
}

/* 0: fine; 1: holds an alias; 2: nested deeper than the limit. */
static int check_tree(struct fy_node *n, int depth)
{
	void *it = NULL;
	int rc;
	if (!n)
		return 0;
	if (depth > DRV_SPEC_MAX_DEPTH)
		return 2;
	if (fy_node_is_scalar(n))
		return fy_node_is_alias(n) ? 1 : 0;
	if (fy_node_is_sequence(n)) {
		struct fy_node *e;
		while ((e = fy_node_sequence_iterate(n, &it)))
			if ((rc = check_tree(e, depth + 1)))
				return rc;
	} else {
		struct fy_node_pair *p;
		while ((p = fy_node_mapping_iterate(n, &it))) {
			if ((rc = check_tree(fy_node_pair_key(p), depth + 1)) ||
			    (rc = check_tree(fy_node_pair_value(p), depth + 1)))
				return rc;
		}
	}
	return 0;
}

int drv_spec_parse_manifest(const char *buf, size_t len, const char *name,
			    struct drv_specset *set, struct drv_diags *d)
{
	struct fy_diag_cfg dcfg;
	struct fy_diag *diag = NULL;
	struct fy_parse_cfg cfg;
	struct fy_parser *fyp = NULL;
	struct fy_document *fyd;
	struct mctx c = { .d = d, .set = set };
	struct pgset pgs = { 0 };
	int ndocs = 0, rc = 0, i;

	/* YAML text is printable Unicode (YAML 1.2, 5.1); checking first also keeps
	 * what libfyaml 0.7 mishandles (invalid UTF-8 in a directive, some tabs)
	 * away from it */
	if (!drv_yaml_guard(buf, len, d))
		return DRV_EPARSE;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.output_fn = NULL;
	diag = fy_diag_create(&dcfg);
	if (!diag)
		return DRV_EIO;
	fy_diag_set_collect_errors(diag, true);
	memset(&cfg, 0, sizeof(cfg));
	{
		/* JSON manifests (kubectl -o json) are read as JSON, not as YAML flow */
		size_t k = 0;
		while (k < len && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\n' || buf[k] == '\r'))
			k++;
		cfg.flags = FYPCF_QUIET | (k < len && buf[k] == '{' ? FYPCF_JSON_FORCE : FYPCF_JSON_NONE);
	}
	cfg.diag = diag;
	fyp = fy_parser_create(&cfg);
	if (!fyp || fy_parser_set_string(fyp, buf, len)) {
		rc = DRV_EIO;
		goto out;
	}
	while ((fyd = fy_parse_load_document(fyp))) {
		struct fy_node *root = fy_document_root(fyd);
		if (++ndocs > DRV_SPEC_MAX_DOCS) {
			drv_diag_err(d, 0, 0, NULL, "found more than %d documents, over the limit",
				     DRV_SPEC_MAX_DOCS);
			fy_document_destroy(fyd);
			rc = DRV_ELIMIT;
			goto out;
		}
		i = check_tree(root, 1);
		if (i == 1) {
			merr(&c, root, NULL, "found a YAML alias (*name), expected values written out "
			     "(drover does not expand aliases)");
		} else if (i == 2) {
			drv_diag_err(d, 0, 0, NULL, "found nesting deeper than the limit of %d levels",
				     DRV_SPEC_MAX_DEPTH);
			fy_document_destroy(fyd);
			rc = DRV_ELIMIT;
			goto out;
		} else {
			one_object(&c, root, "", &pgs, 0);
		}
		fy_document_destroy(fyd);
	}
	if (fy_parser_get_stream_error(fyp)) {
		void *it = NULL;
		struct fy_diag_error *e;
		int n = 0;
		while ((e = fy_diag_errors_iterate(diag, &it))) {
			if (e->type < FYET_ERROR)
				continue;
			drv_diag_err(d, e->line, e->column, NULL, "%s", e->msg); /* libfyaml: 1-based */
			n++;
		}
		if (!n)
			drv_diag_err(d, 0, 0, NULL, "found YAML that does not parse");
		rc = DRV_EPARSE;
		goto out;
	}
	join_podgroups(&c, &pgs);
	resolve_priorities(&c);
	if (set->njobs == 0 && set->nclasses == 0 && d->nerrors == 0)
		drv_diag_err(d, 0, 0, NULL, "found no job in the manifest, expected a Pod, Job, "
			     "Volcano Job, PodGroup with Pods or PyTorchJob");
out:
	for (i = 0; i < pgs.n; i++) {
		drv_free(pgs.v[i].name);
		drv_free(pgs.v[i].queue);
		drv_free(pgs.v[i].priority_class);
		drv_jobspec_release(&pgs.v[i].kept);
	}
	drv_free(pgs.v);
	if (fyp)
		fy_parser_destroy(fyp);
	fy_diag_destroy(diag);
	DRV_UNUSED(name);
	if (!rc && d->nerrors)
		rc = DRV_EPARSE;
	return rc;
}
