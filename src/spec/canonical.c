/*
 * canonical.c: drover's canonical JSON job (docs/job-format.md), the form
 * the API and the store speak. drv_jobspec_to_json writes every field the
 * job model and the run description hold; drv_jobspec_from_json
 * (canonical_read.c) reads it back strictly, so that canonical -> model ->
 * canonical is byte-identical.
 *
 * Layout rules: the core's numeric fields are always written; optional
 * strings, lists and sub-objects only when set. Keys are camelCase.
 */
#include "drover/spec.h"
#include "spec_int.h"

#include <stdio.h>
#include <string.h>

/* A JSON string; bytes that are not UTF-8 (only possible from command-line
 * options, every file is checked) become '?', so no field goes missing. */
static json_t *jstr(const char *s)
{
	json_t *j = json_string(s);
	char *c;
	size_t i;
	if (j)
		return j;
	c = drv_strdup(s);
	for (i = 0; c[i]; i++)
		if ((unsigned char)c[i] >= 0x80)
			c[i] = '?';
	j = json_string(c);
	drv_free(c);
	return j;
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v)
		json_object_set_new(o, k, jstr(v));
}

static json_t *strv_json(char *const *v, int32_t n)
{
	json_t *a = json_array();
	int32_t i;
	for (i = 0; i < n; i++)
		json_array_append_new(a, jstr(v[i]));
	return a;
}

static json_t *labels_json(const struct drv_label *l, int32_t n)
{
	json_t *o = json_object();
	int32_t i;
	for (i = 0; i < n; i++)
		json_object_set_new(o, l[i].key, jstr(l[i].value ? l[i].value : ""));
	return o;
}

static const char *topo_mode_name(enum drv_topo_mode m)
{
	return m == DRV_TOPO_REQUIRED ? "required" : m == DRV_TOPO_PREFERRED ? "preferred" : "none";
}

static json_t *group_json(const struct drv_task_group *g, const struct drv_task_run *r)
{
	json_t *o = json_object();
	int32_t i;

	json_object_set_new(o, "name", jstr(g->name ? g->name : ""));
	json_object_set_new(o, "count", json_integer(g->count));
	json_object_set_new(o, "gpus", json_integer(g->gpus));
	json_object_set_new(o, "gpuMilli", json_integer(g->gpu_milli));
	json_object_set_new(o, "gpuMemMiB", json_integer(g->gpu_mem_mib));
	if (g->model >= 0 && drv_gpu_model_at(g->model))
		json_object_set_new(o, "gpuModel", jstr(drv_gpu_model_at(g->model)->id));
	else if (r && r->gpu_model_name)  /* not in the catalog: as written */
		json_object_set_new(o, "gpuModel", jstr(r->gpu_model_name));
	json_object_set_new(o, "cpuMilli", json_integer(g->cpu_milli));
	json_object_set_new(o, "memMiB", json_integer(g->mem_mib));
	if (g->distinct_nodes)
		json_object_set_new(o, "distinctNodes", json_true());
	set_str(o, "container", r->container);
	set_str(o, "image", r->image);
	if (r->ncommand)
		json_object_set_new(o, "command", strv_json(r->command, r->ncommand));
	if (r->nargs)
		json_object_set_new(o, "args", strv_json(r->args, r->nargs));
	if (r->nenv) {
		json_t *a = json_array();
		for (i = 0; i < r->nenv; i++) {
			json_t *e = json_object();
			json_object_set_new(e, "name", jstr(r->env[i].name));
			if (r->env[i].value_from)
				json_object_set(e, "valueFrom", r->env[i].value_from);
			else
				json_object_set_new(e, "value", r->env[i].value ? jstr(r->env[i].value)
									       : json_null());
			json_array_append_new(a, e);
		}
		json_object_set_new(o, "env", a);
	}
	if (r->env_from)
		json_object_set(o, "envFrom", r->env_from);
	if (r->volumes)
		json_object_set(o, "volumes", r->volumes);
	set_str(o, "workingDir", r->working_dir);
	if (r->termination_grace_s >= 0)
		json_object_set_new(o, "terminationGracePeriodSeconds",
				    json_integer(r->termination_grace_s));
	set_str(o, "restartPolicy", r->restart_policy);
	set_str(o, "imagePullPolicy", r->image_pull_policy);
	set_str(o, "runtime", r->runtime);
	if (r->host_ipc)
		json_object_set_new(o, "hostIPC", json_true());
	if (r->run_as_user >= 0)
		json_object_set_new(o, "runAsUser", json_integer(r->run_as_user));
	if (r->run_as_group >= 0)
		json_object_set_new(o, "runAsGroup", json_integer(r->run_as_group));
	if (r->run_as_non_root >= 0)
		json_object_set_new(o, "runAsNonRoot", json_boolean(r->run_as_non_root));
	if (r->nmounts) {
		json_t *a = json_array();

		for (i = 0; i < r->nmounts; i++) {
			const struct drv_mount *m = &r->mounts[i];
			json_t *e = json_object();

			set_str(e, "name", m->name);
			set_str(e, "type", m->type);
			set_str(e, "medium", m->medium);
			set_str(e, "path", m->host_path);
			set_str(e, "mountPath", m->mount_path);
			set_str(e, "subPath", m->sub_path);
			if (m->read_only)
				json_object_set_new(e, "readOnly", json_true());
			if (m->size_mib)
				json_object_set_new(e, "sizeLimitMiB", json_integer(m->size_mib));
			json_array_append_new(a, e);
		}
		json_object_set_new(o, "mounts", a);
	}
	set_str(o, "export", r->export_mode);
	set_str(o, "script", r->script);
	return o;
}

static json_t *deps_json(const struct drv_jobspec *s)
{
	json_t *x = json_array();

	for (int32_t i = 0; i < s->ndeps; i++) {
		json_t *e = json_object();
		json_object_set_new(e, "type", jstr(s->deps[i].type));
		set_str(e, "job", s->deps[i].job);
		if (s->deps[i].delay_s)
			json_object_set_new(e, "delay", json_integer(s->deps[i].delay_s));
		json_array_append_new(x, e);
	}
	return x;
}

/* Sets key to x in o when x has members, else drops x. */
static void set_nonempty(json_t *o, const char *key, json_t *x)
{
	if (json_object_size(x))
		json_object_set_new(o, key, x);
	else
		json_decref(x);
}

static json_t *slurm_json(const struct drv_slurm_extra *e)
{
	json_t *x = json_object();

	set_str(x, "partition", e->partition);
	set_str(x, "qos", e->qos);
	set_str(x, "account", e->account);
	if (e->requeue)
		json_object_set_new(x, "requeue", json_true());
	if (e->no_requeue)
		json_object_set_new(x, "noRequeue", json_true());
	if (e->hold)
		json_object_set_new(x, "hold", json_true());
	set_str(x, "begin", e->begin);
	if (e->signal) {
		json_object_set_new(x, "signal", json_integer(e->signal));
		json_object_set_new(x, "signalSeconds", json_integer(e->signal_secs));
		json_object_set_new(x, "signalBatchOnly", json_boolean(e->signal_batch_only));
	}
	if (e->switches) {
		json_object_set_new(x, "switches", json_integer(e->switches));
		json_object_set_new(x, "switchesWait", json_integer(e->switches_wait_s));
	}
	if (e->segment)
		json_object_set_new(x, "segment", json_integer(e->segment));
	if (e->ntasks)
		json_object_set_new(x, "ntasks", json_integer(e->ntasks));
	if (e->ntasks_per_node)
		json_object_set_new(x, "ntasksPerNode", json_integer(e->ntasks_per_node));
	if (e->cpus_per_task)
		json_object_set_new(x, "cpusPerTask", json_integer(e->cpus_per_task));
	if (e->per_node)
		json_object_set_new(x, "perNode", json_true());
	set_str(x, "output", e->output);
	set_str(x, "error", e->error);
	set_str(x, "input", e->input);
	set_str(x, "openMode", e->open_mode);
	set_str(x, "submitDir", e->submit_dir);
	set_str(x, "submitHost", e->submit_host);
	set_str(x, "umask", e->umask);
	return x;
}

static json_t *k8s_json(const struct drv_k8s_extra *e)
{
	json_t *x = json_object();

	if (e->parallelism >= 0)
		json_object_set_new(x, "parallelism", json_integer(e->parallelism));
	if (e->completions >= 0)
		json_object_set_new(x, "completions", json_integer(e->completions));
	if (e->backoff_limit >= 0)
		json_object_set_new(x, "backoffLimit", json_integer(e->backoff_limit));
	if (e->active_deadline_s >= 0)
		json_object_set_new(x, "activeDeadlineSeconds", json_integer(e->active_deadline_s));
	if (e->min_available >= 0)
		json_object_set_new(x, "minAvailable", json_integer(e->min_available));
	if (e->indexed >= 0)
		json_object_set_new(x, "completionMode", json_string(e->indexed ? "Indexed"
										: "NonIndexed"));
	if (e->suspend >= 0)
		json_object_set_new(x, "suspend", json_boolean(e->suspend));
	if (e->ttl_after_finished_s >= 0)
		json_object_set_new(x, "ttlSecondsAfterFinished",
				    json_integer(e->ttl_after_finished_s));
	return x;
}

static json_t *classes_json(const struct drv_jobspec *s)
{
	json_t *x = json_array();

	for (int32_t i = 0; i < s->nclasses; i++) {
		const struct drv_priority_class *c = &s->classes[i];
		json_t *e = json_object();
		json_object_set_new(e, "name", jstr(c->name ? c->name : ""));
		json_object_set_new(e, "value", json_integer(c->value));
		json_object_set_new(e, "globalDefault", json_boolean(c->global_default));
		set_str(e, "preemptionPolicy", c->preemption_policy);
		set_str(e, "description", c->description);
		json_array_append_new(x, e);
	}
	return x;
}

/* What the scheduler acts on, from id to runtimeEstimate. */
static void job_fields(json_t *o, const struct drv_jobspec *s)
{
	const struct drv_job *j = &s->job;
	json_t *x;

	json_object_set_new(o, "id", json_integer((json_int_t)j->id));
	json_object_set_new(o, "name", jstr(j->name ? j->name : ""));
	set_str(o, "tenant", j->tenant);
	set_str(o, "user", j->user);
	set_str(o, "namespace", s->namespace_);
	x = json_object();
	json_object_set_new(x, "format", jstr(drv_spec_format_name(s->format)));
	set_str(x, "apiVersion", s->api_version);
	set_str(x, "kind", s->kind);
	json_object_set_new(o, "source", x);
	set_str(o, "queue", s->queue);
	set_str(o, "priorityClassName", s->priority_class);
	json_object_set_new(o, "priority", json_integer(j->priority));
	json_object_set_new(o, "preemptible", json_boolean(j->preemptible));
	json_object_set_new(o, "gangMin", json_integer(j->gang_min));
	if (j->exclusive)
		json_object_set_new(o, "exclusive", json_true());
	if (j->topo_mode != DRV_TOPO_NONE || j->slice_size > 0) {
		x = json_object();
		json_object_set_new(x, "mode", jstr(topo_mode_name(j->topo_mode)));
		if (j->topo_mode != DRV_TOPO_NONE)
			json_object_set_new(x, "level", jstr(j->topo_level ? j->topo_level : ""));
		if (j->slice_size > 0)
			json_object_set_new(x, "slice", json_pack("{s:s,s:i}", "level",
				j->slice_level ? j->slice_level : "", "size", (int)j->slice_size));
		json_object_set_new(o, "topology", x);
	}
	if (j->nregions)
		json_object_set_new(o, "regions", strv_json(j->regions, j->nregions));
	if (j->nnode_selector) {
		/* [{key, value}]: per key, the node's label is one of its values */
		json_t *ns = json_array();
		for (int32_t i = 0; i < j->nnode_selector; i++)
			json_array_append_new(ns, json_pack("{s:s,s:s}", "key", j->node_selector[i].key,
							   "value", j->node_selector[i].value));
		json_object_set_new(o, "nodeSelector", ns);
	}
	json_object_set_new(o, "submitTime", json_integer(j->submit_time));
	json_object_set_new(o, "timeLimit", json_integer(j->time_limit));
	json_object_set_new(o, "runtimeEstimate", json_integer(j->runtime_estimate));
}

json_t *drv_jobspec_to_json(const struct drv_jobspec *s)
{
	const struct drv_job *j = &s->job;
	json_t *o = json_object(), *x;
	int32_t i;

	json_object_set_new(o, "apiVersion", jstr("drover/v1"));
	json_object_set_new(o, "kind", jstr("Job"));
	job_fields(o, s);
	x = json_array();
	for (i = 0; i < j->ngroups; i++)
		json_array_append_new(x, group_json(&j->groups[i], &s->run[i]));
	json_object_set_new(o, "groups", x);
	if (s->array.spec) {
		x = json_object();
		json_object_set_new(x, "spec", jstr(s->array.spec));
		json_object_set_new(x, "count", json_integer(s->array.count));
		json_object_set_new(x, "maxParallel", json_integer(s->array.max_parallel));
		json_object_set_new(o, "array", x);
	}
	if (s->ndeps) {
		json_object_set_new(o, "dependencies", deps_json(s));
		json_object_set_new(o, "dependencyAny", json_boolean(s->deps_any));
	}
	if (s->nlabels)
		json_object_set_new(o, "labels", labels_json(s->labels, s->nlabels));
	if (s->nannotations)
		json_object_set_new(o, "annotations", labels_json(s->annotations, s->nannotations));
	set_nonempty(o, "slurm", slurm_json(&s->slurm));
	set_nonempty(o, "kubernetes", k8s_json(&s->k8s));
	if (s->nclasses)
		json_object_set_new(o, "priorityClasses", classes_json(s));
	if (s->ignored && json_object_size(s->ignored))
		json_object_set(o, "ignored", s->ignored);
	if (s->nwarnings)
		json_object_set_new(o, "warnings", strv_json(s->warnings, s->nwarnings));
	return o;
}

char *drv_jobspec_dumps(const struct drv_jobspec *s, int indent)
{
	json_t *o = drv_jobspec_to_json(s);
	char *txt = json_dumps(o, JSON_INDENT(indent) | JSON_PRESERVE_ORDER);
	char *out = drv_strdup(txt);
	free(txt);
	json_decref(o);
	return out;
}
