/*
 * kube_objects.c: drover's jobs and nodes as Kubernetes objects
 * (docs/kubernetes.md, "State mapping"): each task of a job is a Pod, a job
 * from a batch/v1 Job manifest is also a Job, each node a Node, the
 * namespaces the jobs use Namespaces, and a job's state changes Events.
 * Everything is rendered from the one state on each request; nothing is
 * kept beside it. Under s->mu.
 */
#include "kube_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- names and identities ------------------------------------------------- */

void kube_dns_name(const char *in, char *out, size_t n)
{
	size_t k = 0;
	bool dash = true;   /* no leading dash */

	for (const char *p = in ? in : ""; *p && k + 1 < n && k < 40; p++) {
		char c = (char)tolower((unsigned char)*p);

		if (isalnum((unsigned char)c)) {
			out[k++] = c;
			dash = false;
		} else if (!dash) {
			out[k++] = '-';
			dash = true;
		}
	}
	while (k > 0 && out[k - 1] == '-')
		k--;
	if (k == 0 && n > 3)
		k = (size_t)snprintf(out, n, "job");
	out[k] = '\0';
}

static const char *annotation(const struct srv_job *j, const char *key)
{
	for (int32_t i = 0; i < j->spec.nannotations; i++)
		if (strcmp(j->spec.annotations[i].key, key) == 0)
			return j->spec.annotations[i].value;
	return NULL;
}

bool kube_job_from_api(const struct srv_job *j)
{
	const char *v = annotation(j, KUBE_ANN_API);

	return v && strcmp(v, "kubernetes-api") == 0;
}

const char *kube_job_ns(const struct srv_job *j)
{
	return j->spec.namespace_ && *j->spec.namespace_ ? j->spec.namespace_ : "default";
}

bool kube_job_is_res(const struct srv_job *j, const struct kube_res *k)
{
	char av[128];

	snprintf(av, sizeof(av), "%s%s%s", k->group, *k->group ? "/" : "", k->version);
	return j->spec.kind && strcmp(j->spec.kind, k->kind) == 0 && j->spec.api_version &&
	       strcmp(j->spec.api_version, av) == 0;
}

bool kube_job_is_batch(const struct srv_job *j)
{
	return j->spec.kind && strcmp(j->spec.kind, "Job") == 0 && j->spec.api_version &&
	       strcmp(j->spec.api_version, "batch/v1") == 0;
}

int32_t kube_job_npods(const struct srv_job *j)
{
	int32_t n = drv_job_tasks(&j->spec.job);

	return j->ntasks > n ? j->ntasks : n;
}

void kube_job_name(const struct srv_job *j, char *out, size_t n)
{
	char d[48];

	if (kube_job_from_api(j)) {
		snprintf(out, n, "%s", j->spec.job.name);
		return;
	}
	kube_dns_name(j->spec.job.name, d, sizeof(d));
	snprintf(out, n, "%s-%llu", d, (unsigned long long)j->id);
}

void kube_pod_name(const struct srv_job *j, int32_t rank, char *out, size_t n)
{
	char base[300];

	kube_job_name(j, base, sizeof(base));
	if (j->parent)   /* an element: its name is its parent's with its index */
		snprintf(out, n, "%s", base);
	else if (kube_job_npods(j) > 1 ||
	    (kube_job_from_api(j) && !(j->spec.kind && strcmp(j->spec.kind, "Pod") == 0)))
		snprintf(out, n, "%s-%d", base, rank);
	else
		snprintf(out, n, "%s", base);
}

void kube_job_uid(const struct srv_job *j, char *out, size_t n)
{
	const char *v = annotation(j, KUBE_ANN_UID);
	uint64_t h = 1469598103934665603ull;

	if (v) {
		snprintf(out, n, "%s", v);
		return;
	}
	/* derived: the job id and submit time, hashed (FNV-1a), UUID-shaped */
	for (int k = 0; k < 2; k++) {
		uint64_t x = k ? (uint64_t)j->submit_time : j->id;

		for (int b = 0; b < 8; b++) {
			h ^= (x >> (8 * b)) & 0xff;
			h *= 1099511628211ull;
		}
	}
	snprintf(out, n, "%08llx-%04llx-4%03llx-8%03llx-%012llx", (unsigned long long)(h >> 32),
		 (unsigned long long)(h >> 16) & 0xffff, (unsigned long long)h & 0xfff,
		 (unsigned long long)(j->id >> 48) & 0xfff,
		 (unsigned long long)j->id & 0xffffffffffffull);
}

static void name_uid(const char *name, char *out, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = name; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ull;
	}
	snprintf(out, n, "%08llx-%04llx-4%03llx-9%03llx-%012llx", (unsigned long long)(h >> 32),
		 (unsigned long long)(h >> 16) & 0xffff, (unsigned long long)h & 0xfff,
		 (unsigned long long)(h >> 52), (unsigned long long)(h * 31) & 0xffffffffffffull);
}

/* --- resource versions ----------------------------------------------------- */

void kube_rvs_build(struct drv_server *s, struct kube_rvs *v)
{
	memset(v, 0, sizeof(*v));
	v->floor = s->ring_n ? s->ring[s->ring_start].seq - 1 : s->last_seq;
	if (v->floor < 1)
		v->floor = 1;
	v->ids = drv_calloc(s->ring_n + 1, sizeof(*v->ids));
	v->seqs = drv_calloc(s->ring_n + 1, sizeof(*v->seqs));
	v->nodes = drv_calloc(s->ring_n + 1, sizeof(*v->nodes));
	v->nseqs = drv_calloc(s->ring_n + 1, sizeof(*v->nseqs));
	/* newest first: the first seen per key is its last change */
	for (size_t k = s->ring_n; k-- > 0;) {
		struct ring_event *e = &s->ring[(s->ring_start + k) % s->ring_cap];
		const char *node = drv_json_str(e->ev, "node");
		bool seen = false;

		if (e->job) {
			for (size_t i = 0; i < v->n && !seen; i++)
				seen = v->ids[i] == e->job;
			if (!seen) {
				v->ids[v->n] = e->job;
				v->seqs[v->n++] = e->seq;
			}
		} else if (node) {
			for (size_t i = 0; i < v->nn && !seen; i++)
				seen = strcmp(v->nodes[i], node) == 0;
			if (!seen) {
				v->nodes[v->nn] = drv_strdup(node);
				v->nseqs[v->nn++] = e->seq;
			}
		}
	}
}

int64_t kube_rvs_job(const struct kube_rvs *v, uint64_t id)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->ids[i] == id)
			return v->seqs[i];
	return v->floor;
}

int64_t kube_rvs_node(const struct kube_rvs *v, const char *name)
{
	for (size_t i = 0; i < v->nn; i++)
		if (strcmp(v->nodes[i], name) == 0)
			return v->nseqs[i];
	return v->floor;
}

void kube_rvs_release(struct kube_rvs *v)
{
	for (size_t i = 0; i < v->nn; i++)
		drv_free(v->nodes[i]);
	drv_free(v->nodes);
	drv_free(v->nseqs);
	drv_free(v->ids);
	drv_free(v->seqs);
}

/* --- pods ------------------------------------------------------------------ */

static json_t *rv_str(int64_t rv)
{
	return json_sprintf("%lld", (long long)rv);
}

static json_t *labels_obj(const struct drv_label *l, int32_t n)
{
	json_t *o = json_object();

	for (int32_t i = 0; i < n; i++)
		json_object_set_new(o, l[i].key, json_string(l[i].value ? l[i].value : ""));
	return o;
}

static int32_t rank_group(const struct srv_job *j, int32_t rank)
{
	int32_t r = rank;

	if (rank < j->ntasks)
		return j->tasks[rank].group;
	for (int32_t g = 0; g < j->spec.job.ngroups; g++) {
		if (r < j->spec.job.groups[g].count)
			return g;
		r -= j->spec.job.groups[g].count;
	}
	return 0;
}

static json_t *metadata(struct drv_server *s, struct srv_job *j, const char *name, int64_t rv,
			bool deleted, int32_t rank)
{
	char uid[64];
	json_t *labels = labels_obj(j->spec.labels, j->spec.nlabels);
	json_t *md;
	char idb[32];

	kube_job_uid(j, uid, sizeof(uid));
	if (rank >= 0 && kube_job_npods(j) > 1) {
		/* one uid per pod: the job's, its last part the rank */
		size_t l = strlen(uid);

		if (l > 4)
			snprintf(uid + l - 4, sizeof(uid) - (l - 4), "%04x", (unsigned)rank & 0xffff);
	}
	snprintf(idb, sizeof(idb), "%llu", (unsigned long long)j->id);
	json_object_set_new(labels, KUBE_LABEL_JOB, json_string(idb));
	if (rank >= 0 && kube_job_npods(j) > 1) {
		snprintf(idb, sizeof(idb), "%d", rank);
		json_object_set_new(labels, KUBE_LABEL_RANK, json_string(idb));
	}
	md = json_pack("{s:s,s:s,s:s,s:o,s:i,s:o,s:o}", "name", name, "namespace", kube_job_ns(j),
		       "uid", uid, "resourceVersion", rv_str(rv), "generation", 1,
		       "creationTimestamp", srv_json_time(j->submit_time), "labels", labels);
	if (j->spec.nannotations)
		json_object_set_new(md, "annotations",
				    labels_obj(j->spec.annotations, j->spec.nannotations));
	{
		/* server-side apply's owners (drover.dev/managed-fields) as managedFields */
		const char *mt = annotation(j, KUBE_ANN_MANAGED);
		json_t *mf = mt ? json_loads(mt, 0, NULL) : NULL, *out = json_array(), *v;
		const char *k;

		json_object_foreach(mf, k, v) {
			json_t *f = json_object();
			size_t i;
			json_t *e;

			json_array_foreach(v, i, e) {
				const char *p = json_string_value(e);

				if (p && strncmp(p, "metadata.", 9) == 0) {
					char fk[64];

					if (!json_object_get(f, "f:metadata"))
						json_object_set_new(f, "f:metadata", json_object());
					snprintf(fk, sizeof(fk), "f:%s", p + 9);
					json_object_set_new(json_object_get(f, "f:metadata"), fk, json_object());
				} else if (p) {
					char fk[64];

					snprintf(fk, sizeof(fk), "f:%s", p);
					json_object_set_new(f, fk, json_object());
				}
			}
			json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:o}", "manager", k,
							     "operation", "Apply", "apiVersion",
							     j->spec.api_version ? j->spec.api_version : "v1",
							     "fieldsType", "FieldsV1", "fieldsV1", f));
		}
		if (json_array_size(out))
			json_object_set_new(md, "managedFields", out);
		else
			json_decref(out);
		json_decref(mf);
	}
	if (deleted || (kube_job_from_api(j) && j->stop_reason && j->holding))
		json_object_set_new(md, "deletionTimestamp",
				    srv_json_time(j->end_time ? j->end_time : drv_wall_s()));
	return md;
}

static json_t *quantity_milli(int64_t milli)
{
	if (milli % 1000 == 0)
		return json_sprintf("%lld", (long long)(milli / 1000));
	return json_sprintf("%lldm", (long long)milli);
}

/* The secret and configMap volumes group g mounts, as spec.volumes. */
static void set_volumes(json_t *spec, const struct srv_job *j, int32_t g)
{
	const struct drv_task_run *run = j->spec.run ? &j->spec.run[g] : NULL;
	json_t *a, *v;
	size_t i;

	if (!run || !json_array_size(run->volumes))
		return;
	a = json_array();
	json_array_foreach(run->volumes, i, v) {
		const char *src = json_object_get(v, "secret") ? "secret" : "configMap";

		json_array_append_new(a, json_pack("{s:O,s:O}", "name", json_object_get(v, "name"),
						   src, json_object_get(v, src)));
	}
	json_object_set_new(spec, "volumes", a);
}

static json_t *container_json(const struct srv_job *j, int32_t g)
{
	const struct drv_task_run *run = j->spec.run ? &j->spec.run[g] : NULL;
	const struct drv_task_group *tg = &j->spec.job.groups[g];
	json_t *c = json_object(), *res = json_object(), *lim = json_object();

	json_object_set_new(c, "name",
			    json_string(run && run->container ? run->container
				       : tg->name && *tg->name ? tg->name : "main"));
	json_object_set_new(c, "image", json_string(run && run->image ? run->image : "host"));
	if (run && run->ncommand) {
		json_t *a = json_array();

		for (int32_t i = 0; i < run->ncommand; i++)
			json_array_append_new(a, json_string(run->command[i]));
		json_object_set_new(c, "command", a);
	}
	if (run && run->nargs) {
		json_t *a = json_array();

		for (int32_t i = 0; i < run->nargs; i++)
			json_array_append_new(a, json_string(run->args[i]));
		json_object_set_new(c, "args", a);
	}
	if (run && run->nenv) {
		json_t *a = json_array();

		for (int32_t i = 0; i < run->nenv; i++) {
			json_t *e = json_pack("{s:s}", "name", run->env[i].name);

			if (run->env[i].value_from)
				json_object_set(e, "valueFrom", run->env[i].value_from);
			else if (run->env[i].value)
				json_object_set_new(e, "value", json_string(run->env[i].value));
			json_array_append_new(a, e);
		}
		json_object_set_new(c, "env", a);
	}
	if (run && run->env_from)
		json_object_set(c, "envFrom", run->env_from);
	if (run && json_array_size(run->volumes)) {
		json_t *a = json_array();
		size_t i;
		json_t *v;

		json_array_foreach(run->volumes, i, v) {
			json_t *m = json_deep_copy(v);

			json_object_del(m, "secret");
			json_object_del(m, "configMap");
			json_array_append_new(a, m);
		}
		json_object_set_new(c, "volumeMounts", a);
	}
	if (run && run->working_dir)
		json_object_set_new(c, "workingDir", json_string(run->working_dir));
	if (tg->gpus > 0)
		json_object_set_new(lim, "nvidia.com/gpu", json_sprintf("%d", tg->gpus));
	if (tg->cpu_milli > 0)
		json_object_set_new(lim, "cpu", quantity_milli(tg->cpu_milli));
	if (tg->mem_mib > 0)
		json_object_set_new(lim, "memory", json_sprintf("%lldMi", (long long)tg->mem_mib));
	json_object_set(res, "limits", lim);
	json_object_set_new(res, "requests", lim);
	json_object_set_new(c, "resources", res);
	json_object_set_new(c, "terminationMessagePolicy", json_string("File"));
	json_object_set_new(c, "imagePullPolicy",
			    json_string(run && run->image_pull_policy ? run->image_pull_policy
					: drv_pull_policy_default(run ? run->image : NULL)));
	return c;
}

/* Sets obj's field at path ("spec.containers[0].ports") to v when absent
 * there (consumes v). */
static void set_path(json_t *obj, const char *path, json_t *v)
{
	char buf[512], *seg, *save = NULL;
	json_t *x = obj;
	char *segs[32];
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", path);
	for (seg = strtok_r(buf, ".", &save); seg && n < 32; seg = strtok_r(NULL, ".", &save))
		segs[n++] = seg;
	for (int i = 0; i < n && x; i++) {
		char *br = strchr(segs[i], '[');
		long idx = br ? strtol(br + 1, NULL, 10) : -1;
		bool last = i == n - 1;
		json_t *next;

		if (br)
			*br = '\0';
		next = json_object_get(x, segs[i]);
		if (idx >= 0) {
			x = json_is_array(next) ? json_array_get(next, (size_t)idx) : NULL;
			if (last)
				x = NULL;   /* whole list items are not set */
			continue;
		}
		if (last) {
			if (!next && json_is_object(x)) {
				json_object_set_new(x, segs[i], v);
				return;
			}
			break;
		}
		if (!next && json_is_object(x)) {
			next = json_object();
			json_object_set_new(x, segs[i], next);
		}
		x = next;
	}
	json_decref(v);
}

/* The fields drover kept without acting on, where the manifest had them
 * (prefix "spec." of a Pod; "spec.template.spec." of a Job's pods), so
 * that what was applied reads back. */
static void put_ignored(json_t *obj, const struct srv_job *j, const char *from, const char *to)
{
	const char *k;
	json_t *v;
	size_t lf = strlen(from);

	if (!j->spec.ignored || j->spec.job.ngroups != 1)
		return;
	json_object_foreach(j->spec.ignored, k, v) {
		char path[512];

		if (strncmp(k, from, lf) != 0 || (strcmp(from, "spec.") == 0 &&
						   strncmp(k, "spec.template.", 14) == 0))
			continue;
		snprintf(path, sizeof(path), "%s%s", to, k + lf);
		set_path(obj, path, json_deep_copy(v));
	}
}

/* The pod's phase and the containerStatuses state of task rank. */
struct pod_view {
	const char *phase;        /* Pending, Running, Succeeded, Failed */
	const char *reason;       /* status.reason, or NULL */
	const char *message;
	bool scheduled, running, ready;
	const char *sched_reason; /* PodScheduled=False: Unschedulable, SchedulingGated */
	json_t *state;            /* containerStatuses[].state */
	bool has_task;
	struct srv_task *t;
};

static const char *final_reason(enum jstate st)
{
	switch (st) {
	case J_CANCELLED: return "Cancelled";
	case J_PREEMPTED: return "Preempted";
	case J_TIMEOUT: return "DeadlineExceeded";
	case J_OUT_OF_MEMORY: return "OOMKilled";
	case J_NODE_FAIL: return "NodeLost";
	default: return "Error";
	}
}

/* A container whose image could not be pulled (or whose securityContext
 * its image breaks) never ran: kubelet shows it waiting with the reason's
 * code (ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
 * CreateContainerConfigError) and the rest as the message. NULL otherwise. */
static json_t *waiting_for_image(const struct srv_task *t)
{
	static const char *const codes[] = { "ErrImagePull", "ImagePullBackOff",
		"ErrImageNeverPull", "CreateContainerConfigError" };
	const char *r = t && t->reason ? t->reason : "";

	for (size_t i = 0; i < DRV_ARRAY_SIZE(codes); i++) {
		size_t n = strlen(codes[i]);

		if (!strncmp(r, codes[i], n) && r[n] == ':')
			return json_pack("{s:{s:s,s:s}}", "waiting", "reason", codes[i], "message",
					 r + n + 1 + (r[n + 1] == ' '));
	}
	return NULL;
}

/* A container task still pulling its image (what its agent last said). */
static bool pulling(const struct srv_task *t)
{
	const char *p = t && t->container ? json_string_value(json_object_get(t->container,
								      "image_pull")) : NULL;

	return p && !strncmp(p, "pulling", 7);
}

static void pod_view(struct drv_server *s, struct srv_job *j, int32_t rank, struct pod_view *v,
		     char *why, size_t whysz)
{
	struct srv_task *t = rank < j->ntasks ? &j->tasks[rank] : NULL;
	enum jstate st = j->state;

	memset(v, 0, sizeof(*v));
	v->t = t;
	v->has_task = t != NULL;
	if (st == J_PENDING || st == J_PREEMPTED) {
		v->phase = "Pending";
		v->sched_reason = j->budget_held ? "SchedulingGated" : "Unschedulable";
		v->message = srv_job_reason(s, j, why, whysz);
		v->state = json_pack("{s:{s:s}}", "waiting", "reason", "ContainerCreating");
		json_object_set_new(json_object_get(v->state, "waiting"), "reason",
				    json_string(j->budget_held ? "SchedulingGated"
						: j->config_held ? "CreateContainerConfigError"
								 : "Pending"));
		if (j->config_held)
			json_object_set_new(json_object_get(v->state, "waiting"), "message",
					    json_string(v->message));
		return;
	}
	v->scheduled = true;
	if (st == J_SCHEDULED || (st == J_RUNNING && t && (t->state == T_PENDING || t->state == T_STARTING))) {
		v->phase = "Pending";
		v->state = json_pack("{s:{s:s}}", "waiting", "reason", "ContainerCreating");
		return;
	}
	if (st == J_RUNNING && pulling(t) && !t->ended) {
		v->phase = "Pending";
		v->state = json_pack("{s:{s:s,s:s}}", "waiting", "reason", "ContainerCreating",
				     "message", json_string_value(json_object_get(t->container,
									  "image_pull")));
		return;
	}
	if (st == J_RUNNING && (!t || !t->ended)) {
		v->phase = "Running";
		v->running = v->ready = true;
		v->state = json_pack("{s:{s:o}}", "running", "startedAt",
				     srv_json_time(t && t->start_time ? t->start_time : j->start_time));
		return;
	}
	/* final, or this task ended while others run */
	{
		int code = t && t->ended && t->exit_code >= 0 ? t->exit_code
			 : j->has_exit ? j->exit_code : (st == J_SUCCEEDED ? 0 : 1);
		bool ok = st == J_SUCCEEDED || (st == J_RUNNING && code == 0);
		const char *tr = t && t->oom ? "OOMKilled" : ok ? "Completed"
			       : st == J_CANCELLED || st == J_TIMEOUT ? final_reason(st) : "Error";
		json_t *term = json_pack("{s:i,s:s,s:o,s:o}", "exitCode", code, "reason", tr,
					 "startedAt",
					 srv_json_time(t && t->start_time ? t->start_time : j->start_time),
					 "finishedAt",
					 srv_json_time(t && t->end_time ? t->end_time
						       : j->end_time ? j->end_time : j->submit_time));

		if (t && t->signal)
			json_object_set_new(term, "signal", json_integer(t->signal));
		if (t && t->reason && *t->reason)
			json_object_set_new(term, "message", json_string(t->reason));
		if (json_is_null(json_object_get(term, "startedAt")))
			json_object_del(term, "startedAt");
		v->state = waiting_for_image(t);
		if (v->state)
			json_decref(term);
		else
			v->state = json_pack("{s:o}", "terminated", term);
		if (st == J_RUNNING) {
			v->phase = "Running";
			return;
		}
		v->phase = ok ? "Succeeded" : "Failed";
		if (!ok) {
			v->reason = final_reason(st);
			v->message = j->reason;
		}
	}
}

static json_t *condition(const char *type, bool ok, const char *reason, const char *msg,
			 int64_t t)
{
	json_t *c = json_pack("{s:s,s:s,s:o,s:n}", "type", type, "status", ok ? "True" : "False",
			      "lastTransitionTime", srv_json_time(t), "lastProbeTime");

	if (reason)
		json_object_set_new(c, "reason", json_string(reason));
	if (msg && *msg)
		json_object_set_new(c, "message", json_string(msg));
	return c;
}

json_t *kube_pod_json(struct drv_server *s, struct srv_job *j, int32_t rank, int64_t rv,
		      bool deleted)
{
	char name[320], why[512];
	struct pod_view v;
	int32_t g = rank_group(j, rank);
	json_t *spec, *status, *conds, *cs, *c;
	int64_t tstart = j->start_time ? j->start_time : j->submit_time;

	kube_pod_name(j, rank, name, sizeof(name));
	pod_view(s, j, rank, &v, why, sizeof(why));
	c = container_json(j, g);
	spec = json_pack("{s:[o],s:s,s:i,s:s}", "containers", c, "schedulerName", "drover",
			 "priority", j->spec.job.priority, "dnsPolicy", "ClusterFirst");
	/* only as given: drover runs a task once whatever it says, and a default
	 * shown here would read back as a change of spec */
	if (j->spec.run && j->spec.run[g].restart_policy)
		json_object_set_new(spec, "restartPolicy", json_string(j->spec.run[g].restart_policy));
	set_volumes(spec, j, g);
	if (j->spec.priority_class && *j->spec.priority_class)
		json_object_set_new(spec, "priorityClassName", json_string(j->spec.priority_class));
	if (j->spec.run && j->spec.run[g].termination_grace_s >= 0)
		json_object_set_new(spec, "terminationGracePeriodSeconds",
				    json_integer(j->spec.run[g].termination_grace_s));
	if (j->spec.job.time_limit > 0)
		json_object_set_new(spec, "activeDeadlineSeconds",
				    json_integer(j->spec.job.time_limit));
	if (v.t)
		json_object_set_new(spec, "nodeName", json_string(s->nodes[v.t->node].name));
	conds = json_array();
	json_array_append_new(conds, condition("PodScheduled", v.scheduled,
					       v.scheduled ? NULL : v.sched_reason,
					       v.scheduled ? NULL : v.message,
					       v.scheduled ? tstart : j->submit_time));
	if (v.scheduled) {
		json_array_append_new(conds, condition("Initialized", true, NULL, NULL, tstart));
		json_array_append_new(conds, condition("ContainersReady", v.ready,
						       v.ready ? NULL : "ContainersNotReady", NULL,
						       tstart));
		json_array_append_new(conds, condition("Ready", v.ready,
						       v.ready ? NULL : "ContainersNotReady", NULL,
						       tstart));
	}
	cs = json_pack("{s:s,s:s,s:s,s:b,s:b,s:i,s:o}", "name",
		       json_string_value(json_object_get(c, "name")), "image",
		       json_string_value(json_object_get(c, "image")), "imageID", "",
		       "ready", v.ready, "started", v.running, "restartCount",
		       j->attempt > 1 ? j->attempt - 1 : 0, "state", v.state);
	status = json_pack("{s:s,s:o,s:s}", "phase", v.phase, "conditions", conds, "qosClass",
			   "Guaranteed");
	if (v.scheduled || j->config_held)   /* held: what kubectl shows as its STATUS */
		json_object_set_new(status, "containerStatuses", json_pack("[o]", cs));
	else
		json_decref(cs);
	if (v.reason)
		json_object_set_new(status, "reason", json_string(v.reason));
	if (v.message && *v.message && strcmp(v.phase, "Failed") == 0)
		json_object_set_new(status, "message", json_string(v.message));
	if (v.t) {
		struct srv_node *n = &s->nodes[v.t->node];

		if (n->address) {
			char host[256];
			const char *colon = strrchr(n->address, ':');
			size_t l = colon ? (size_t)(colon - n->address) : strlen(n->address);

			snprintf(host, sizeof(host), "%.*s", (int)l, n->address);
			json_object_set_new(status, "hostIP", json_string(host));
		}
		if (v.t->start_time)
			json_object_set_new(status, "startTime", srv_json_time(v.t->start_time));
	}
	{
		json_t *pod = json_pack("{s:s,s:s,s:o,s:o,s:o}", "apiVersion", "v1", "kind", "Pod",
					"metadata", metadata(s, j, name, rv, deleted, rank), "spec",
					spec, "status", status);

		if (kube_job_is_batch(j))
			put_ignored(pod, j, "spec.template.spec.", "spec.");
		else
			put_ignored(pod, j, "spec.", "spec.");
		return pod;
	}
}

/* --- batch/v1 Jobs ---------------------------------------------------------- */

json_t *kube_batchjob_json(struct drv_server *s, struct srv_job *j, int64_t rv, bool deleted)
{
	char name[300];
	int32_t n = kube_job_npods(j), active = 0, ok = 0, bad = 0;
	const struct drv_k8s_extra *k = &j->spec.k8s;
	json_t *spec, *status, *conds = json_array(), *tmpl;

	kube_job_name(j, name, sizeof(name));
	for (int32_t r = 0; r < n; r++) {
		struct pod_view v;
		char why[256];

		pod_view(s, j, r, &v, why, sizeof(why));
		if (strcmp(v.phase, "Succeeded") == 0)
			ok++;
		else if (strcmp(v.phase, "Failed") == 0)
			bad++;
		else if (!srv_jstate_final(j->state))
			active++;
		json_decref(v.state);
	}
	if (j->par) {
		/* a Job with elements: they are its pods (the parent never runs) */
		active = 0;
		for (uint64_t id = j->par->first; id < j->par->first + (uint64_t)j->par->n; id++) {
			const struct srv_job *e = srv_job_get(s, id);

			if (e && e->parent == j->id && !srv_jstate_final(e->state) &&
			    e->state != J_PENDING)
				active++;
		}
		ok = j->par->succeeded;
		bad = j->par->failed;
	}
	tmpl = json_pack("{s:{},s:{s:o,s:s}}", "metadata", "spec", "containers", json_array(),
			 "restartPolicy", "Never");
	for (int32_t g = 0; g < j->spec.job.ngroups; g++)
		json_array_append_new(json_object_get(json_object_get(tmpl, "spec"), "containers"),
				      container_json(j, g));
	set_volumes(json_object_get(tmpl, "spec"), j, 0);
	spec = json_pack("{s:i,s:i,s:i,s:b,s:o}", "parallelism", k->parallelism >= 0 ? k->parallelism : n,
			 "completions", k->completions >= 0 ? k->completions : n, "backoffLimit",
			 k->backoff_limit >= 0 ? k->backoff_limit : 6, "suspend",
			 j->par ? j->par->suspended : k->suspend == 1, "template", tmpl);
	json_object_set_new(spec, "completionMode", json_string(k->indexed == 1 ? "Indexed"
								 : "NonIndexed"));
	if (k->active_deadline_s >= 0)
		json_object_set_new(spec, "activeDeadlineSeconds",
				    json_integer(k->active_deadline_s));
	status = json_object();
	if (active)
		json_object_set_new(status, "active", json_integer(active));
	if (ok)
		json_object_set_new(status, "succeeded", json_integer(ok));
	if (bad)
		json_object_set_new(status, "failed", json_integer(bad));
	if (j->start_time)
		json_object_set_new(status, "startTime", srv_json_time(j->start_time));
	if (j->state == J_SUCCEEDED) {
		json_object_set_new(status, "completionTime", srv_json_time(j->end_time));
		json_array_append_new(conds, condition("Complete", true, NULL, NULL, j->end_time));
	} else if (srv_jstate_final(j->state)) {
		json_array_append_new(conds, condition("Failed", true,
						       j->state == J_TIMEOUT ? "DeadlineExceeded"
									    : "BackoffLimitExceeded",
						       j->reason, j->end_time));
	}
	if (json_array_size(conds))
		json_object_set_new(status, "conditions", conds);
	else
		json_decref(conds);
	{
		json_t *job = json_pack("{s:s,s:s,s:o,s:o,s:o}", "apiVersion", "batch/v1", "kind",
					"Job", "metadata", metadata(s, j, name, rv, deleted, -1),
					"spec", spec, "status", status);

		put_ignored(job, j, "spec.", "spec.");
		return job;
	}
}

/* --- nodes ---------------------------------------------------------------- */

json_t *kube_node_json(struct drv_server *s, int32_t i, int64_t rv)
{
	struct srv_node *n = &s->nodes[i];
	const struct drv_node *cn = &s->cluster.nodes[i];
	const struct drv_gpu_model *m = cn->model >= 0 ? drv_gpu_model_at(cn->model) : NULL;
	json_t *labels = json_object(), *cap, *alloc, *conds, *addrs, *md, *spec;
	const char *pool = cn->pool >= 0 && cn->pool < s->cluster.npools
				   ? s->cluster.pools[cn->pool].name : NULL;
	struct srv_gpu_count c = { 0 };
	char uid[64];
	bool up = n->state != DRV_NODE_DOWN;
	const char *key;
	json_t *val;

	srv_node_gpus(s, i, &c);
	for (int32_t k = 0; k < cn->nlabels; k++)
		json_object_set_new(labels, cn->labels[k].key, json_string(cn->labels[k].value));
	if (n->labels)
		json_object_foreach(n->labels, key, val)
			if (json_is_string(val))
				json_object_set(labels, key, val);
	json_object_set_new(labels, "kubernetes.io/hostname", json_string(n->name));
	json_object_set_new(labels, "kubernetes.io/os", json_string("linux"));
	if (m) {
		json_object_set_new(labels, "nvidia.com/gpu.product", json_string(m->gfd_product));
		json_object_set_new(labels, "nvidia.com/gpu.count", json_sprintf("%d", cn->ngpus));
		json_object_set_new(labels, "nvidia.com/gpu.memory", json_sprintf("%d", m->mem_mib));
		json_object_set_new(labels, "drover.dev/gpu-model", json_string(m->id));
	}
	if (pool)
		json_object_set_new(labels, "drover.dev/pool", json_string(pool));
	cap = json_pack("{s:o,s:o,s:s,s:s}", "cpu", quantity_milli(cn->cpu_milli), "memory",
			json_sprintf("%lldMi", (long long)cn->mem_mib), "pods", "110",
			"nvidia.com/gpu", "0");
	json_object_set_new(cap, "nvidia.com/gpu", json_sprintf("%d", cn->ngpus));
	alloc = json_deep_copy(cap);
	/* what can still be asked for: the GPUs neither down nor draining */
	json_object_set_new(alloc, "nvidia.com/gpu",
			    json_sprintf("%lld", (long long)(c.allocated + c.free)));
	conds = json_array();
	{
		json_t *rc = condition("Ready", up, up ? "AgentReady" : "AgentNotReady",
				       n->reason && *n->reason ? n->reason : srv_nstate_name(n->state),
				       n->last_hb_wall ? n->last_hb_wall : drv_wall_s());

		json_object_set_new(rc, "lastHeartbeatTime", srv_json_time(n->last_hb_wall));
		if (!n->registered) {
			json_object_set_new(rc, "status", json_string("Unknown"));
			json_object_set_new(rc, "reason", json_string("NodeStatusUnknown"));
		}
		json_array_append_new(conds, rc);
	}
	addrs = json_pack("[{s:s,s:s}]", "type", "Hostname", "address", n->name);
	if (n->address) {
		char host[256];
		const char *colon = strrchr(n->address, ':');
		size_t l = colon ? (size_t)(colon - n->address) : strlen(n->address);

		snprintf(host, sizeof(host), "%.*s", (int)l, n->address);
		json_array_insert_new(addrs, 0, json_pack("{s:s,s:s}", "type", "InternalIP", "address", host));
	}
	name_uid(n->name, uid, sizeof(uid));
	md = json_pack("{s:s,s:s,s:o,s:o,s:o}", "name", n->name, "uid", uid, "resourceVersion",
		       rv_str(rv), "creationTimestamp",
		       srv_json_time(s->started_ms ? drv_wall_s() - (drv_mono_ms() - s->started_ms) / 1000
						 : drv_wall_s()),
		       "labels", labels);
	spec = json_object();
	if (n->admin_drain || n->health_drain || n->state == DRV_NODE_DRAINING) {
		json_object_set_new(spec, "unschedulable", json_true());
		json_object_set_new(spec, "taints",
				    json_pack("[{s:s,s:s}]", "key",
					      "node.kubernetes.io/unschedulable", "effect",
					      "NoSchedule"));
	}
	return json_pack("{s:s,s:s,s:o,s:o,s:{s:o,s:o,s:o,s:o,s:{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}}}",
			 "apiVersion", "v1", "kind", "Node", "metadata", md, "spec", spec, "status",
			 "capacity", cap, "allocatable", alloc, "conditions", conds, "addresses",
			 addrs, "nodeInfo", "kubeletVersion", KUBE_GIT_VERSION, "kubeProxyVersion",
			 "", "operatingSystem", "linux", "architecture", "amd64",
			 "containerRuntimeVersion", "drover://" DRV_VERSION, "osImage", "",
			 "kernelVersion", "", "machineID", "", "systemUUID", "", "bootID", "");
}

json_t *kube_namespace_json(const char *name, int64_t created)
{
	char uid[64], key[300];

	snprintf(key, sizeof(key), "namespace/%s", name);
	name_uid(key, uid, sizeof(uid));
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:o,s:{s:s}},s:{s:[s]},s:{s:s}}", "apiVersion",
			 "v1", "kind", "Namespace", "metadata", "name", name, "uid", uid,
			 "resourceVersion", "1", "creationTimestamp", srv_json_time(created),
			 "labels", "kubernetes.io/metadata.name", name, "spec", "finalizers",
			 "kubernetes", "status", "phase", "Active");
}

/* --- events --------------------------------------------------------------- */

static const char *event_reason(const char *to)
{
	if (!to)
		return "Unknown";
	if (strcmp(to, "pending") == 0)
		return "Pending";
	if (strcmp(to, "scheduled") == 0)
		return "Scheduled";
	if (strcmp(to, "running") == 0)
		return "Started";
	if (strcmp(to, "succeeded") == 0)
		return "Completed";
	if (strcmp(to, "failed") == 0)
		return "Failed";
	if (strcmp(to, "cancelled") == 0)
		return "Killing";
	if (strcmp(to, "preempted") == 0)
		return "Preempted";
	if (strcmp(to, "timeout") == 0)
		return "DeadlineExceeded";
	if (strcmp(to, "out_of_memory") == 0)
		return "OOMKilled";
	return "StateChanged";
}

static json_t *event_obj(struct srv_job *j, const char *pod, const char *uid, int k,
			 const char *type, const char *reason, const char *msg, int64_t t,
			 int64_t rv)
{
	char name[400];

	snprintf(name, sizeof(name), "%s.%llx%04x", pod, (unsigned long long)j->id, k & 0xffff);
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o},s:{s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,"
			 "s:o,s:o,s:o,s:i,s:{s:s},s:s,s:s}",
			 "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
			 kube_job_ns(j), "resourceVersion", rv_str(rv), "creationTimestamp",
			 srv_json_time(t), "involvedObject", "kind", "Pod", "apiVersion", "v1",
			 "name", pod, "namespace", kube_job_ns(j), "uid", uid, "reason", reason,
			 "message", msg ? msg : "", "type", type, "firstTimestamp",
			 srv_json_time(t), "lastTimestamp", srv_json_time(t), "eventTime",
			 json_null(), "count", 1, "source", "component", "drover-scheduler",
			 "reportingComponent", "drover", "reportingInstance", "drover");
}

void kube_job_events(struct drv_server *s, struct srv_job *j, int32_t rank, json_t *arr)
{
	char pod[320], uid[64], why[512];
	size_t i;
	json_t *e;
	json_t *pm;

	kube_pod_name(j, rank, pod, sizeof(pod));
	pm = kube_pod_json(s, j, rank, 1, false);
	snprintf(uid, sizeof(uid), "%s",
		 json_string_value(json_object_get(json_object_get(pm, "metadata"), "uid")));
	json_decref(pm);
	json_array_foreach(j->events, i, e) {
		const char *to = drv_json_str(e, "to");
		const char *reason = drv_json_str(e, "reason");
		bool warn = to && (strcmp(to, "failed") == 0 || strcmp(to, "preempted") == 0 ||
				   strcmp(to, "timeout") == 0 || strcmp(to, "out_of_memory") == 0);

		json_array_append_new(arr, event_obj(j, pod, uid, (int)i, warn ? "Warning" : "Normal",
						     event_reason(to), reason,
						     json_integer_value(json_object_get(e, "time")),
						     (int64_t)i + 1));
	}
	if (j->state == J_PENDING) {
		/* the scheduler's current reason, as kube-scheduler's FailedScheduling */
		const char *msg = srv_job_reason(s, j, why, sizeof(why));

		json_array_append_new(arr, event_obj(j, pod, uid, 0xfff, "Warning",
						     "FailedScheduling", msg,
						     s->last_pass_now ? s->last_pass_now : drv_wall_s(),
						     (int64_t)json_array_size(j->events) + 1));
	}
}

json_t *kube_priorityclass_json(struct drv_server *s, int32_t i)
{
	const struct drv_tenant_class *c = &s->cfg.tenants.classes[i];
	char uid[64], key[300];
	int64_t created = s->started_ms ? drv_wall_s() - (drv_mono_ms() - s->started_ms) / 1000 : 0;

	snprintf(key, sizeof(key), "priorityclass/%s", c->name);
	name_uid(key, uid, sizeof(uid));
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:o},s:i,s:b,s:s,s:s}", "apiVersion",
			 "scheduling.k8s.io/v1", "kind", "PriorityClass", "metadata", "name", c->name,
			 "uid", uid, "resourceVersion", "1", "creationTimestamp",
			 srv_json_time(created), "value", c->value, "globalDefault", false,
			 "preemptionPolicy",
			 c->policy == DRV_PREEMPT_NEVER ? "Never" : "PreemptLowerPriority",
			 "description", "a class of the server's tenants file");
}

/* --- kubeflow.org/v1 PyTorchJobs and batch.volcano.sh/v1alpha1 Jobs --------------- */

struct counts {
	int32_t active, ok, bad;
};

static void group_counts(struct drv_server *s, struct srv_job *j, int32_t g, struct counts *c)
{
	for (int32_t r = 0; r < kube_job_npods(j); r++) {
		struct pod_view v;
		char why[256];

		if (g >= 0 && rank_group(j, r) != g)
			continue;
		pod_view(s, j, r, &v, why, sizeof(why));
		if (strcmp(v.phase, "Succeeded") == 0)
			c->ok++;
		else if (strcmp(v.phase, "Failed") == 0)
			c->bad++;
		else if (!srv_jstate_final(j->state))
			c->active++;
		json_decref(v.state);
	}
}

static json_t *template_of(const struct srv_job *j, int32_t g)
{
	const char *rp = j->spec.run && j->spec.run[g].restart_policy ? j->spec.run[g].restart_policy
								      : NULL;
	json_t *t = json_pack("{s:{},s:{s:[o]}}", "metadata", "spec", "containers",
			      container_json(j, g));

	if (rp)
		json_object_set_new(json_object_get(t, "spec"), "restartPolicy", json_string(rp));
	set_volumes(json_object_get(t, "spec"), j, g);
	return t;
}

json_t *kube_workload_json(struct drv_server *s, const struct kube_res *k, struct srv_job *j,
			   int64_t rv, bool deleted)
{
	char name[300], av[128];
	json_t *spec, *status, *obj;
	struct counts all = { 0 };

	if (strcmp(k->type, "Job") == 0)
		return kube_batchjob_json(s, j, rv, deleted);
	spec = json_object();
	status = json_object();
	kube_job_name(j, name, sizeof(name));
	snprintf(av, sizeof(av), "%s/%s", k->group, k->version);
	group_counts(s, j, -1, &all);
	if (strcmp(k->type, "PyTorchJob") == 0) {
		json_t *rs = json_object(), *rst = json_object(), *conds = json_array();

		for (int32_t g = 0; g < j->spec.job.ngroups; g++) {
			const char *gn = j->spec.job.groups[g].name ? j->spec.job.groups[g].name : "worker";
			char rt[64];
			struct counts c = { 0 };
			json_t *e = json_pack("{s:i,s:o}", "replicas", j->spec.job.groups[g].count,
					      "template", template_of(j, g));

			snprintf(rt, sizeof(rt), "%s", gn);
			rt[0] = (char)toupper((unsigned char)rt[0]);
			if (j->spec.run && j->spec.run[g].restart_policy)
				json_object_set_new(e, "restartPolicy",
						    json_string(j->spec.run[g].restart_policy));
			json_object_set_new(rs, rt, e);
			group_counts(s, j, g, &c);
			json_object_set_new(rst, rt, json_pack("{s:i,s:i,s:i}", "active", c.active,
							       "succeeded", c.ok, "failed", c.bad));
		}
		json_object_set_new(spec, "pytorchReplicaSpecs", rs);
		json_array_append_new(conds, condition("Created", true, "PyTorchJobCreated", NULL,
						       j->submit_time));
		if (j->start_time)
			json_array_append_new(conds, condition("Running", !srv_jstate_final(j->state),
							       "PyTorchJobRunning", NULL, j->start_time));
		if (srv_jstate_final(j->state))
			json_array_append_new(conds, condition(j->state == J_SUCCEEDED ? "Succeeded"
									 : "Failed",
							       true, j->state == J_SUCCEEDED
									 ? "PyTorchJobSucceeded"
									 : "PyTorchJobFailed",
							       j->reason, j->end_time));
		json_object_set_new(status, "conditions", conds);
		json_object_set_new(status, "replicaStatuses", rst);
	} else {
		json_t *tasks = json_array();
		const char *phase = j->state == J_SUCCEEDED ? "Completed"
				  : srv_jstate_final(j->state) ? (j->state == J_CANCELLED ? "Aborted" : "Failed")
				  : j->state == J_RUNNING ? "Running" : "Pending";

		for (int32_t g = 0; g < j->spec.job.ngroups; g++)
			json_array_append_new(tasks, json_pack("{s:s,s:i,s:o}", "name",
							       j->spec.job.groups[g].name
								       ? j->spec.job.groups[g].name : "task",
							       "replicas", j->spec.job.groups[g].count,
							       "template", template_of(j, g)));
		json_object_set_new(spec, "minAvailable",
				    json_integer(j->spec.k8s.min_available >= 0 ? j->spec.k8s.min_available
										 : kube_job_npods(j)));
		if (j->spec.queue)
			json_object_set_new(spec, "queue", json_string(j->spec.queue));
		if (j->spec.priority_class)
			json_object_set_new(spec, "priorityClassName", json_string(j->spec.priority_class));
		json_object_set_new(spec, "tasks", tasks);
		json_object_set_new(status, "state", json_pack("{s:s}", "phase", phase));
		json_object_set_new(status, "minAvailable", json_object_get(spec, "minAvailable")
								    ? json_incref(json_object_get(spec, "minAvailable"))
								    : json_integer(0));
		json_object_set_new(status, "running", json_integer(all.active));
		json_object_set_new(status, "succeeded", json_integer(all.ok));
		json_object_set_new(status, "failed", json_integer(all.bad));
	}
	obj = json_pack("{s:s,s:s,s:o,s:o,s:o}", "apiVersion", av, "kind", k->kind, "metadata",
			metadata(s, j, name, rv, deleted, -1), "spec", spec, "status", status);
	put_ignored(obj, j, "spec.", "spec.");
	return obj;
}
