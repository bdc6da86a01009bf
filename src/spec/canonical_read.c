/*
 * canonical_read.c: drover's canonical JSON job read back strictly
 * (drv_jobspec_from_json, drv_spec_parse_canonical): unknown keys, wrong
 * types and values out of range are errors with their field path
 * ("groups[1].gpus: found a string, expected an integer"), every one
 * reported, nesting bounded; what canonical.c writes reads back to the
 * same model.
 */
#include "drover/spec.h"
#include "spec_int.h"

#include <stdio.h>
#include <string.h>

struct rd {
	struct drv_diags *d;
	char path[512];
};

static void rd_err(struct rd *r, const char *key, const char *fmt, const char *found)
{
	char p[640];
	snprintf(p, sizeof(p), "%s%s%s", r->path, r->path[0] && key && key[0] != '[' ? "." : "",
		 key ? key : "");
	drv_diag_err(r->d, 0, 0, p, fmt, found);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* Checks that o has only the allowed keys. */
static void check_keys(struct rd *r, const json_t *o, const char *const *allowed)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v) {
		const char *const *a;
		for (a = allowed; *a; a++)
			if (strcmp(*a, k) == 0)
				break;
		if (!*a)
			rd_err(r, k, "found %s, an unknown field of a drover job", "it");
	}
}

static char *get_str(struct rd *r, const json_t *o, const char *k, bool required)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v)) {
		if (required)
			rd_err(r, k, "found nothing, expected a string%s", "");
		return NULL;
	}
	if (!json_is_string(v)) {
		rd_err(r, k, "found %s, expected a string", type_name(v));
		return NULL;
	}
	if (json_string_length(v) > DRV_SPEC_MAX_STRING) {
		rd_err(r, k, "found a string over the length limit%s", "");
		return NULL;
	}
	return drv_strndup(json_string_value(v), json_string_length(v));
}

static int64_t get_int(struct rd *r, const json_t *o, const char *k, int64_t min, int64_t max,
		       int64_t def)
{
	json_t *v = json_object_get(o, k);
	char buf[96];
	if (!v)
		return def;
	if (!json_is_integer(v)) {
		rd_err(r, k, "found %s, expected an integer", type_name(v));
		return def;
	}
	if (json_integer_value(v) < min || json_integer_value(v) > max) {
		snprintf(buf, sizeof(buf), "%lld, expected %lld..%lld",
			 (long long)json_integer_value(v), (long long)min, (long long)max);
		rd_err(r, k, "found %s", buf);
		return def;
	}
	return json_integer_value(v);
}

static bool get_bool(struct rd *r, const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!v)
		return false;
	if (!json_is_boolean(v)) {
		rd_err(r, k, "found %s, expected true or false", type_name(v));
		return false;
	}
	return json_is_true(v);
}

static char **get_strv(struct rd *r, const json_t *o, const char *k, int32_t *n)
{
	json_t *v = json_object_get(o, k), *e;
	char **out;
	size_t i;
	*n = 0;
	if (!v)
		return NULL;
	if (!json_is_array(v)) {
		rd_err(r, k, "found %s, expected an array of strings", type_name(v));
		return NULL;
	}
	if (json_array_size(v) > DRV_SPEC_MAX_ITEMS) {
		rd_err(r, k, "found an array over the limit of " "%s" " items", "4096");
		return NULL;
	}
	out = drv_calloc(json_array_size(v) + 1, sizeof(char *));
	json_array_foreach(v, i, e) {
		if (!json_is_string(e)) {
			char kk[128];
			snprintf(kk, sizeof(kk), "%s[%zu]", k, i);
			rd_err(r, kk, "found %s, expected a string", type_name(e));
			continue;
		}
		out[(*n)++] = drv_strdup(json_string_value(e));
	}
	return out;
}

static struct drv_label *get_labels(struct rd *r, const json_t *o, const char *k, int32_t *n)
{
	json_t *v = json_object_get(o, k), *e;
	struct drv_label *out;
	const char *key;
	*n = 0;
	if (!v)
		return NULL;
	if (!json_is_object(v)) {
		rd_err(r, k, "found %s, expected an object of strings", type_name(v));
		return NULL;
	}
	if (json_object_size(v) > DRV_SPEC_MAX_ITEMS) {
		rd_err(r, k, "found an object over the limit of %s items", "4096");
		return NULL;
	}
	out = drv_calloc(json_object_size(v) + 1, sizeof(*out));
	json_object_foreach(v, key, e) {
		if (!json_is_string(e)) {
			char kk[300];
			snprintf(kk, sizeof(kk), "%s[\"%.200s\"]", k, key);
			rd_err(r, kk, "found %s, expected a string", type_name(e));
			continue;
		}
		out[*n].key = drv_strdup(key);
		out[*n].value = drv_strdup(json_string_value(e));
		(*n)++;
	}
	return out;
}

static void push(struct rd *r, const char *k, size_t *save)
{
	size_t l = strlen(r->path);
	*save = l;
	if (k[0] == '[')
		snprintf(r->path + l, sizeof(r->path) - l, "%s", k);
	else
		snprintf(r->path + l, sizeof(r->path) - l, "%s%s", l ? "." : "", k);
}

static void pop(struct rd *r, size_t save)
{
	r->path[save] = '\0';
}

static enum drv_spec_format format_of(const char *s)
{
	int f;
	for (f = DRV_FMT_UNKNOWN; f <= DRV_FMT_CLUSTER; f++)
		if (s && strcmp(s, drv_spec_format_name(f)) == 0)
			return f;
	return DRV_FMT_UNKNOWN;
}

/* "mounts": [{name, type, medium, path, mountPath, subPath, readOnly, sizeLimitMiB}] */
static void read_mounts(struct rd *r, const json_t *go, struct drv_task_run *run)
{
	static const char *const keys[] = { "name", "type", "medium", "path", "mountPath",
		"subPath", "readOnly", "sizeLimitMiB", NULL };
	json_t *a = json_object_get(go, "mounts"), *e;
	size_t i;

	if (!a)
		return;
	if (!json_is_array(a)) {
		rd_err(r, "mounts", "found %s, expected a list of mounts", type_name(a));
		return;
	}
	json_array_foreach(a, i, e) {
		struct drv_mount m;
		char k[32];
		size_t save;

		snprintf(k, sizeof(k), "mounts[%zu]", i);
		push(r, k, &save);
		if (!json_is_object(e)) {
			rd_err(r, NULL, "found %s, expected a mount", type_name(e));
			pop(r, save);
			continue;
		}
		check_keys(r, e, keys);
		memset(&m, 0, sizeof(m));
		m.name = get_str(r, e, "name", true);
		m.type = get_str(r, e, "type", true);
		m.medium = get_str(r, e, "medium", false);
		m.host_path = get_str(r, e, "path", false);
		m.mount_path = get_str(r, e, "mountPath", true);
		m.sub_path = get_str(r, e, "subPath", false);
		m.read_only = get_bool(r, e, "readOnly");
		m.size_mib = get_int(r, e, "sizeLimitMiB", 0, INT64_C(1) << 40, 0);
		if (m.type && strcmp(m.type, "hostPath") && strcmp(m.type, "emptyDir"))
			rd_err(r, "type", "found \"%s\", expected hostPath or emptyDir", m.type);
		if (!m.name || !m.type || !m.mount_path) {
			drv_free(m.name), drv_free(m.type), drv_free(m.medium);
			drv_free(m.host_path), drv_free(m.mount_path), drv_free(m.sub_path);
			pop(r, save);
			continue;
		}
		DRV_GROW(run->mounts, (size_t)run->nmounts + 1, run->mounts_cap);
		run->mounts[run->nmounts++] = m;
		pop(r, save);
	}
}

/* A Secret or ConfigMap reference at key, checked by check (kuberefs.c). */
static bool ref_ok(struct rd *r, const json_t *v, const char *key,
		   bool (*check)(const json_t *, char *, size_t, char *, size_t))
{
	char where[300], what[300], k[340];

	if (check(v, where, sizeof(where), what, sizeof(what)))
		return true;
	snprintf(k, sizeof(k), "%s%s", key, where);
	rd_err(r, k, "%s", what);
	return false;
}

static void read_group(struct rd *r, const json_t *go, struct drv_jobspec *s)
{
	static const char *const keys[] = { "name", "count", "gpus", "gpuMilli", "gpuMemMiB",
		"gpuModel", "cpuMilli", "memMiB", "container", "image", "command", "args", "env",
		"envFrom", "volumes", "workingDir",
		"terminationGracePeriodSeconds", "restartPolicy", "imagePullPolicy", "runtime", "export",
		"script", "hostIPC", "mounts", "distinctNodes", "runAsUser", "runAsGroup",
		"runAsNonRoot", NULL };
	char *name, *model;
	struct drv_task_group *g;
	struct drv_task_run *run;
	json_t *env;
	int gi;

	if (!json_is_object(go)) {
		rd_err(r, NULL, "found %s, expected an object", type_name(go));
		return;
	}
	check_keys(r, go, keys);
	name = get_str(r, go, "name", true);
	gi = drv_jobspec_add_group(s, name ? name : "");
	drv_free(name);
	if (gi < 0) {
		rd_err(r, NULL, "found too many groups, expected at most %s", "64");
		return;
	}
	g = &s->job.groups[gi];
	run = &s->run[gi];
	g->count = (int32_t)get_int(r, go, "count", 0, DRV_SPEC_MAX_TASKS, 1);
	g->gpus = (int32_t)get_int(r, go, "gpus", 0, DRV_MAX_NODE_GPUS, 0);
	g->gpu_milli = (int32_t)get_int(r, go, "gpuMilli", 0, 999, 0);
	if (g->gpus && g->gpu_milli)
		rd_err(r, "gpuMilli", "found both whole GPUs and a fraction%s, expected one of them", "");
	g->gpu_mem_mib = (int32_t)get_int(r, go, "gpuMemMiB", 0, INT32_MAX, 0);
	g->distinct_nodes = get_bool(r, go, "distinctNodes");
	model = get_str(r, go, "gpuModel", false);
	if (model) {
		g->model = (int8_t)drv_gpu_model_find(model);
		if (g->model < 0) {
			/* not in the catalog: kept as written, with a warning */
			char p[640];
			snprintf(p, sizeof(p), "%s%sgpuModel", r->path, r->path[0] ? "." : "");
			drv_diag_warn(r->d, 0, 0, p, "GPU model \"%s\" is not in drover's catalog: "
				      "kept; the job runs only where a node has it", model);
			run->gpu_model_name = model;
			model = NULL;
		} else if (strcmp(drv_gpu_model_at(g->model)->id, model) != 0) {
			rd_err(r, "gpuModel", "found \"%s\", expected the catalog id", model);
		}
		drv_free(model);
	}
	g->cpu_milli = get_int(r, go, "cpuMilli", 0, INT64_MAX / 2, 0);
	g->mem_mib = get_int(r, go, "memMiB", 0, INT64_MAX / 2, 0);
	run->container = get_str(r, go, "container", false);
	run->image = get_str(r, go, "image", false);
	for (const char *p = run->image; p && *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			char what[96];

			snprintf(what, sizeof(what), "%s (0x%02x) at byte %d",
				 *p == ' ' ? "a space" : "a control character",
				 (unsigned)(unsigned char)*p, (int)(p - run->image) + 1);
			rd_err(r, "image", "found %s, expected an image reference such as "
			       "registry/name:tag", what);
			break;
		}
	run->command = get_strv(r, go, "command", &run->ncommand);
	run->args = get_strv(r, go, "args", &run->nargs);
	env = json_object_get(go, "env");
	if (env && !json_is_array(env)) {
		rd_err(r, "env", "found %s, expected an array of {name, value}", type_name(env));
	} else if (env && json_array_size(env) > DRV_SPEC_MAX_ITEMS) {
		rd_err(r, "env", "found more entries than the limit of %s", "4096");
	} else if (env) {
		size_t i;
		json_t *e;
		json_array_foreach(env, i, e) {
			static const char *const ekeys[] = { "name", "value", "valueFrom", NULL };
			char k[32], *en, *ev;
			size_t save;
			snprintf(k, sizeof(k), "env[%zu]", i);
			push(r, k, &save);
			if (!json_is_object(e)) {
				rd_err(r, NULL, "found %s, expected {name, value}", type_name(e));
				pop(r, save);
				continue;
			}
			check_keys(r, e, ekeys);
			en = get_str(r, e, "name", true);
			ev = get_str(r, e, "value", false);
			if (en && json_object_get(e, "valueFrom")) {
				json_t *vf = json_object_get(e, "valueFrom");

				if (ref_ok(r, vf, "valueFrom", drv_spec_check_value_from))
					drv_jobspec_add_env_from(s, gi, en, json_incref(vf));
			} else if (en) {
				drv_jobspec_add_env(s, gi, en, ev);
			}
			drv_free(en);
			drv_free(ev);
			pop(r, save);
		}
	}
	if (json_object_get(go, "envFrom") &&
	    ref_ok(r, json_object_get(go, "envFrom"), "envFrom", drv_spec_check_env_from))
		run->env_from = json_incref(json_object_get(go, "envFrom"));
	if (json_object_get(go, "volumes") &&
	    ref_ok(r, json_object_get(go, "volumes"), "volumes", drv_spec_check_volumes))
		run->volumes = json_incref(json_object_get(go, "volumes"));
	run->working_dir = get_str(r, go, "workingDir", false);
	run->termination_grace_s = get_int(r, go, "terminationGracePeriodSeconds", 0,
					   INT32_MAX, -1);
	run->restart_policy = get_str(r, go, "restartPolicy", false);
	run->image_pull_policy = get_str(r, go, "imagePullPolicy", false);
	run->runtime = get_str(r, go, "runtime", false);
	run->host_ipc = get_bool(r, go, "hostIPC");
	run->run_as_user = get_int(r, go, "runAsUser", 0, INT32_MAX, -1);
	run->run_as_group = get_int(r, go, "runAsGroup", 0, INT32_MAX, -1);
	if (json_object_get(go, "runAsNonRoot"))
		run->run_as_non_root = get_bool(r, go, "runAsNonRoot");
	read_mounts(r, go, run);
	run->export_mode = get_str(r, go, "export", false);
	run->script = get_str(r, go, "script", false);
}

/* apiVersion and kind: drover/v1 Job. */
static void read_type(struct rd *r, const json_t *o)
{
	char *t = get_str(r, o, "apiVersion", true);

	if (t && strcmp(t, "drover/v1") != 0)
		rd_err(r, "apiVersion", "found \"%s\", expected \"drover/v1\"", t);
	drv_free(t);
	t = get_str(r, o, "kind", true);
	if (t && strcmp(t, "Job") != 0)
		rd_err(r, "kind", "found \"%s\", expected \"Job\"", t);
	drv_free(t);
}

/* source: {format, apiVersion, kind}; canonical when absent. */
static void read_source(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	static const char *const sk[] = { "format", "apiVersion", "kind", NULL };
	const json_t *x = json_object_get(o, "source");
	size_t save;
	char *t;

	if (!x) {
		s->format = DRV_FMT_CANONICAL;
		return;
	}
	if (!json_is_object(x)) {
		rd_err(r, "source", "found %s, expected an object", type_name(x));
		return;
	}
	push(r, "source", &save);
	check_keys(r, x, sk);
	t = get_str(r, x, "format", true);
	s->format = format_of(t);
	if (t && s->format == DRV_FMT_UNKNOWN && strcmp(t, "unknown") != 0)
		rd_err(r, "format", "found \"%s\", expected manifest, sbatch or canonical", t);
	drv_free(t);
	s->api_version = get_str(r, x, "apiVersion", false);
	s->kind = get_str(r, x, "kind", false);
	pop(r, save);
}

/* topology.slice: {level, size}, both required. */
static void read_slice(struct rd *r, const json_t *x, struct drv_jobspec *s)
{
	static const char *const sk[] = { "level", "size", NULL };
	const json_t *y = json_object_get(x, "slice");
	size_t save;

	if (!y)
		return;
	if (!json_is_object(y)) {
		rd_err(r, "slice", "found %s, expected an object {level, size}", type_name(y));
		return;
	}
	push(r, "slice", &save);
	check_keys(r, y, sk);
	s->job.slice_level = get_str(r, y, "level", true);
	s->job.slice_size = (int32_t)get_int(r, y, "size", 1, DRV_SPEC_MAX_TASKS, 0);
	if (!json_object_get(y, "size"))
		rd_err(r, "size", "found nothing, expected the tasks per slice%s", "");
	pop(r, save);
}

/* topology: {mode, level, slice}; level required unless mode is none. */
static void read_topology(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	static const char *const tk[] = { "mode", "level", "slice", NULL };
	const json_t *x = json_object_get(o, "topology");
	size_t save;
	char *t;

	if (!x)
		return;
	if (!json_is_object(x)) {
		rd_err(r, "topology", "found %s, expected an object", type_name(x));
		return;
	}
	push(r, "topology", &save);
	check_keys(r, x, tk);
	t = get_str(r, x, "mode", true);
	if (t && strcmp(t, "required") == 0)
		s->job.topo_mode = DRV_TOPO_REQUIRED;
	else if (t && strcmp(t, "preferred") == 0)
		s->job.topo_mode = DRV_TOPO_PREFERRED;
	else if (t && strcmp(t, "none") != 0)
		rd_err(r, "mode", "found \"%s\", expected required, preferred or none", t);
	drv_free(t);
	s->job.topo_level = get_str(r, x, "level", s->job.topo_mode != DRV_TOPO_NONE);
	if (s->job.topo_mode == DRV_TOPO_NONE) {
		drv_free(s->job.topo_level);
		s->job.topo_level = NULL;
	}
	read_slice(r, x, s);
	pop(r, save);
}

/* The scalar fields of the job, from id to runtimeEstimate. */
static void read_job_fields(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	s->job.id = (uint64_t)get_int(r, o, "id", 0, INT64_MAX, 0);
	s->job.name = get_str(r, o, "name", true);
	s->job.tenant = get_str(r, o, "tenant", false);
	s->job.user = get_str(r, o, "user", false);
	s->namespace_ = get_str(r, o, "namespace", false);
	read_source(r, o, s);
	s->queue = get_str(r, o, "queue", false);
	s->priority_class = get_str(r, o, "priorityClassName", false);
	s->job.priority = (int32_t)get_int(r, o, "priority", INT32_MIN, INT32_MAX, 0);
	s->job.preemptible = get_bool(r, o, "preemptible");
	s->job.gang_min = (int32_t)get_int(r, o, "gangMin", 0, DRV_SPEC_MAX_TASKS, 0);
	s->job.exclusive = get_bool(r, o, "exclusive");
	read_topology(r, o, s);
	s->job.regions = get_strv(r, o, "regions", &s->job.nregions);
	{
		const json_t *ns = json_object_get(o, "nodeSelector"), *e;
		size_t i;

		if (ns && (!json_is_array(ns) || json_array_size(ns) > DRV_SPEC_MAX_ITEMS))
			rd_err(r, "nodeSelector", "found %s, expected an array of {key, value}",
			       type_name(ns));
		else if (ns)
			json_array_foreach(ns, i, e) {
				const char *k = json_string_value(json_object_get(e, "key"));
				const char *v = json_string_value(json_object_get(e, "value"));
				if (!k || !v || json_object_size(e) != 2) {
					rd_err(r, "nodeSelector", "found %s, expected {key, value} strings",
					       "an entry of another shape");
					break;
				}
				drv_job_add_node_label(&s->job, k, v);
			}
	}
	s->job.submit_time = get_int(r, o, "submitTime", INT64_MIN / 2, INT64_MAX / 2, 0);
	s->job.time_limit = get_int(r, o, "timeLimit", 0, INT64_MAX / 2, 0);
	s->job.runtime_estimate = get_int(r, o, "runtimeEstimate", 0, INT64_MAX / 2, 0);
}

/* groups: a non-empty array, at most DRV_SPEC_MAX_TASKS tasks in all. */
static void read_groups(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	const json_t *x = json_object_get(o, "groups");
	json_t *g;
	int64_t tasks = 0;
	size_t i, save;

	if (!x || !json_is_array(x) || json_array_size(x) == 0) {
		rd_err(r, "groups", "found %s, expected a non-empty array of task groups",
		       x ? type_name(x) : "nothing");
		return;
	}
	json_array_foreach(x, i, g) {
		char k[48];
		snprintf(k, sizeof(k), "groups[%zu]", i);
		push(r, k, &save);
		read_group(r, g, s);
		pop(r, save);
	}
	for (i = 0; i < (size_t)s->job.ngroups; i++)
		tasks += s->job.groups[i].count;
	if (tasks > DRV_SPEC_MAX_TASKS)
		rd_err(r, "groups", "found %s tasks in all, over the limit of 100000", "more");
}

/* array: {spec, count, maxParallel}, count and maxParallel as spec says. */
static void read_array(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	static const char *const ak[] = { "spec", "count", "maxParallel", NULL };
	const json_t *x = json_object_get(o, "array");
	size_t save;
	char *t;

	if (!x)
		return;
	push(r, "array", &save);
	if (!json_is_object(x)) {
		rd_err(r, NULL, "found %s, expected an object", type_name(x));
	} else {
		check_keys(r, x, ak);
		t = get_str(r, x, "spec", true);
		if (t && drv_array_parse(t, &s->array))
			rd_err(r, "spec", "found \"%s\", expected a Slurm array "
			       "specification such as 0-15%%4", t);
		else if (t && (get_int(r, x, "count", 0, INT32_MAX, 0) != s->array.count ||
			       get_int(r, x, "maxParallel", 0, INT32_MAX, 0) !=
				       s->array.max_parallel))
			rd_err(r, NULL, "found count or maxParallel not matching spec \"%s\"", t);
		drv_free(t);
	}
	pop(r, save);
}

/* dependencies: [{type, job, delay}], at most DRV_SPEC_MAX_ITEMS. */
static void read_deps(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	static const char *const dk[] = { "type", "job", "delay", NULL };
	const json_t *x = json_object_get(o, "dependencies");
	json_t *e;
	size_t i, save;

	if (!x)
		return;
	if (!json_is_array(x)) {
		rd_err(r, "dependencies", "found %s, expected an array", type_name(x));
		return;
	}
	if (json_array_size(x) > DRV_SPEC_MAX_ITEMS)
		rd_err(r, "dependencies", "found more than %s", "4096");
	else
		s->deps = drv_calloc(json_array_size(x) + 1, sizeof(*s->deps));
	json_array_foreach(x, i, e) {
		char k[48];
		if (!s->deps)
			break;
		snprintf(k, sizeof(k), "dependencies[%zu]", i);
		push(r, k, &save);
		if (!json_is_object(e)) {
			rd_err(r, NULL, "found %s, expected an object", type_name(e));
		} else {
			check_keys(r, e, dk);
			s->deps[s->ndeps].type = get_str(r, e, "type", true);
			s->deps[s->ndeps].job = get_str(r, e, "job", false);
			s->deps[s->ndeps].delay_s = get_int(r, e, "delay", 1, INT32_MAX, 0);
			if (s->deps[s->ndeps].type)
				s->ndeps++;
			else
				drv_free(s->deps[s->ndeps].job);
		}
		pop(r, save);
	}
}

/* slurm: the sbatch options drover keeps but does not act on. */
static void read_slurm(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	static const char *const sk[] = { "partition", "qos", "account", "requeue", "noRequeue", "hold", "begin", "signal",
		"signalSeconds", "signalBatchOnly", "switches", "switchesWait", "segment", "ntasks",
		"ntasksPerNode", "cpusPerTask", "perNode", "output", "error", "input", "openMode",
		"submitDir", "submitHost", "umask", NULL };
	const json_t *x = json_object_get(o, "slurm");
	struct drv_slurm_extra *e = &s->slurm;
	size_t save;

	if (!x)
		return;
	if (!json_is_object(x)) {
		rd_err(r, "slurm", "found %s, expected an object", type_name(x));
		return;
	}
	push(r, "slurm", &save);
	check_keys(r, x, sk);
	e->partition = get_str(r, x, "partition", false);
	e->qos = get_str(r, x, "qos", false);
	e->account = get_str(r, x, "account", false);
	e->requeue = get_bool(r, x, "requeue");
	e->no_requeue = get_bool(r, x, "noRequeue");
	e->hold = get_bool(r, x, "hold");
	e->begin = get_str(r, x, "begin", false);
	if (e->begin && drv_slurm_begin_parse(e->begin, 0, &(int64_t){ 0 }) < 0)
		rd_err(r, "begin", "found \"%s\", expected a Slurm --begin time such as now+1hour",
		       e->begin);
	e->signal = (int32_t)get_int(r, x, "signal", 1, 64, 0);
	e->signal_secs = (int32_t)get_int(r, x, "signalSeconds", 0, 65535, 0);
	e->signal_batch_only = get_bool(r, x, "signalBatchOnly");
	e->switches = (int32_t)get_int(r, x, "switches", 1, INT32_MAX, 0);
	e->switches_wait_s = get_int(r, x, "switchesWait", 0, INT32_MAX, 0);
	e->segment = (int32_t)get_int(r, x, "segment", 1, INT32_MAX, 0);
	e->ntasks = (int32_t)get_int(r, x, "ntasks", 1, INT32_MAX, 0);
	e->ntasks_per_node = (int32_t)get_int(r, x, "ntasksPerNode", 1, INT32_MAX, 0);
	e->cpus_per_task = (int32_t)get_int(r, x, "cpusPerTask", 1, INT32_MAX, 0);
	e->per_node = get_bool(r, x, "perNode");
	e->output = get_str(r, x, "output", false);
	e->error = get_str(r, x, "error", false);
	e->input = get_str(r, x, "input", false);
	e->open_mode = get_str(r, x, "openMode", false);
	if (e->open_mode && strcmp(e->open_mode, "append") && strcmp(e->open_mode, "truncate"))
		rd_err(r, "openMode", "found \"%s\", expected append or truncate", e->open_mode);
	e->submit_dir = get_str(r, x, "submitDir", false);
	e->submit_host = get_str(r, x, "submitHost", false);
	e->umask = get_str(r, x, "umask", false);
	if (e->umask && (strlen(e->umask) != 4 || strspn(e->umask, "01234567") != 4 ||
			 e->umask[0] != '0'))
		rd_err(r, "umask", "found \"%s\", expected 4 octal digits such as 0022", e->umask);
	if (e->submit_dir && e->submit_dir[0] != '/')
		rd_err(r, "submitDir", "found \"%s\", expected an absolute path", e->submit_dir);
	pop(r, save);
}

/* kubernetes: the Job fields drover keeps (-1 when absent). */
static void read_k8s(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	static const char *const kk[] = { "parallelism", "completions", "backoffLimit",
		"activeDeadlineSeconds", "minAvailable", "completionMode", "suspend",
		"ttlSecondsAfterFinished", NULL };
	const json_t *x = json_object_get(o, "kubernetes");
	struct drv_k8s_extra *e = &s->k8s;
	size_t save;

	if (!x)
		return;
	if (!json_is_object(x)) {
		rd_err(r, "kubernetes", "found %s, expected an object", type_name(x));
		return;
	}
	push(r, "kubernetes", &save);
	check_keys(r, x, kk);
	e->parallelism = (int32_t)get_int(r, x, "parallelism", 0, INT32_MAX, -1);
	e->completions = (int32_t)get_int(r, x, "completions", 0, INT32_MAX, -1);
	e->backoff_limit = (int32_t)get_int(r, x, "backoffLimit", 0, INT32_MAX, -1);
	e->active_deadline_s = get_int(r, x, "activeDeadlineSeconds", 0, INT64_MAX / 2, -1);
	e->min_available = (int32_t)get_int(r, x, "minAvailable", 0, INT32_MAX, -1);
	e->ttl_after_finished_s = get_int(r, x, "ttlSecondsAfterFinished", 0, INT64_MAX / 2, -1);
	{
		const json_t *m = json_object_get(x, "completionMode"), *su = json_object_get(x, "suspend");

		if (m && json_is_string(m) && strcmp(json_string_value(m), "Indexed") == 0)
			e->indexed = 1;
		else if (m && json_is_string(m) && strcmp(json_string_value(m), "NonIndexed") == 0)
			e->indexed = 0;
		else if (m)
			rd_err(r, "completionMode", "found %s, expected \"Indexed\" or \"NonIndexed\"",
			       json_is_string(m) ? json_string_value(m) : type_name(m));
		if (su && json_is_boolean(su))
			e->suspend = json_is_true(su);
		else if (su)
			rd_err(r, "suspend", "found %s, expected true or false", type_name(su));
	}
	pop(r, save);
}

/* priorityClasses: the classes the job was defined with. */
static void read_classes(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	static const char *const ck[] = { "name", "value", "globalDefault", "preemptionPolicy",
		"description", NULL };
	const json_t *x = json_object_get(o, "priorityClasses");
	json_t *e;
	size_t i, save;

	if (!x)
		return;
	if (!json_is_array(x) || json_array_size(x) > DRV_SPEC_MAX_ITEMS) {
		rd_err(r, "priorityClasses", "found %s, expected an array", type_name(x));
		return;
	}
	s->classes = drv_calloc(json_array_size(x) + 1, sizeof(*s->classes));
	json_array_foreach(x, i, e) {
		struct drv_priority_class *c = &s->classes[s->nclasses];
		char k[48];
		snprintf(k, sizeof(k), "priorityClasses[%zu]", i);
		push(r, k, &save);
		if (!json_is_object(e)) {
			rd_err(r, NULL, "found %s, expected an object", type_name(e));
		} else {
			check_keys(r, e, ck);
			c->name = get_str(r, e, "name", true);
			c->value = (int32_t)get_int(r, e, "value", INT32_MIN, INT32_MAX, 0);
			c->global_default = get_bool(r, e, "globalDefault");
			c->preemption_policy = get_str(r, e, "preemptionPolicy", false);
			c->description = get_str(r, e, "description", false);
			s->nclasses++;
		}
		pop(r, save);
	}
}

/* ignored (merged into s->ignored) and warnings, as a reader left them. */
static void read_kept(struct rd *r, const json_t *o, struct drv_jobspec *s)
{
	const json_t *x = json_object_get(o, "ignored");

	if (x && json_is_object(x)) {
		if (!s->ignored)
			s->ignored = json_object();
		json_object_update(s->ignored, (json_t *)x);
	} else if (x) {
		rd_err(r, "ignored", "found %s, expected an object", type_name(x));
	}
	if (json_object_get(o, "warnings")) {
		int32_t n;
		char **w = get_strv(r, o, "warnings", &n);
		s->warnings = w;
		s->nwarnings = n;
	}
}

int drv_jobspec_from_json(const json_t *o, struct drv_jobspec *s, struct drv_diags *d)
{
	static const char *const keys[] = { "apiVersion", "kind", "id", "name", "tenant", "user",
		"namespace", "source", "queue", "priorityClassName", "priority", "preemptible",
		"gangMin", "exclusive", "topology", "regions", "nodeSelector", "submitTime", "timeLimit", "runtimeEstimate",
		"groups", "array", "dependencies", "dependencyAny", "labels", "annotations",
		"slurm", "kubernetes", "priorityClasses", "ignored", "warnings", NULL };
	struct rd r = { .d = d };
	int errs0 = d->nerrors;

	if (!json_is_object(o)) {
		drv_diag_err(d, 0, 0, NULL, "found %s, expected a drover job object", type_name(o));
		return DRV_EPARSE;
	}
	check_keys(&r, o, keys);
	read_type(&r, o);
	read_job_fields(&r, o, s);
	read_groups(&r, o, s);
	read_array(&r, o, s);
	read_deps(&r, o, s);
	s->deps_any = get_bool(&r, o, "dependencyAny");
	s->labels = get_labels(&r, o, "labels", &s->nlabels);
	s->annotations = get_labels(&r, o, "annotations", &s->nannotations);
	read_slurm(&r, o, s);
	read_k8s(&r, o, s);
	read_classes(&r, o, s);
	read_kept(&r, o, s);
	if (d->nerrors == errs0 && s->job.slice_size > 0 &&
	    drv_job_tasks(&s->job) % s->job.slice_size != 0)
		drv_diag_err(d, 0, 0, "topology.slice.size",
			     "found %d, expected a size that divides the job's %d tasks",
			     (int)s->job.slice_size, (int)drv_job_tasks(&s->job));
	if (d->nerrors == errs0) {
		char why[256];
		if (drv_job_check(&s->job, why, sizeof(why)) != 0)
			drv_diag_err(d, 0, 0, "groups", "%s", why);
	}
	return d->nerrors > errs0 ? DRV_EPARSE : 0;
}

static int depth_ok(const json_t *v, int depth)
{
	size_t i;
	const char *k;
	json_t *e;
	if (depth > DRV_SPEC_MAX_DEPTH)
		return 0;
	if (json_is_array(v)) {
		json_array_foreach((json_t *)v, i, e)
			if (!depth_ok(e, depth + 1))
				return 0;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, e)
			if (!depth_ok(e, depth + 1))
				return 0;
	}
	return 1;
}

int drv_spec_parse_canonical(const char *buf, size_t len, struct drv_specset *set,
			     struct drv_diags *d)
{
	json_error_t err;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	struct drv_jobspec *s;
	int rc;

	if (!root) {
		drv_diag_err(d, err.line, err.column, NULL, "%s", err.text);
		return DRV_EPARSE;
	}
	if (!depth_ok(root, 1)) {
		drv_diag_err(d, 0, 0, NULL, "found nesting deeper than the limit of %d levels",
			     DRV_SPEC_MAX_DEPTH);
		json_decref(root);
		return DRV_ELIMIT;
	}
	s = drv_specset_add(set);
	rc = drv_jobspec_from_json(root, s, d);
	json_decref(root);
	return rc;
}
