/*
 * kube_list.c: reads of the Kubernetes face: get and list of every served
 * kind, label selectors (=, ==, !=, in, notin, exists, !exists) and field
 * selectors (=, ==, != on the fields Kubernetes allows per kind), paging
 * with limit/continue only when the client sends limit (Kubernetes lists
 * have no default limit), and the Table form `kubectl get` asks for.
 */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- selectors -------------------------------------------------------------- */

enum sel_op { S_EQ, S_NE, S_IN, S_NOTIN, S_EXISTS, S_NOT_EXISTS };

struct sel_req {
	bool field;
	enum sel_op op;
	char *key;
	char **vals;
	int nvals;
};

struct kube_sel {
	struct sel_req *v;
	int n;
	size_t cap;
};

void kube_sel_free(struct kube_sel *sel)
{
	if (!sel)
		return;
	for (int i = 0; i < sel->n; i++) {
		drv_free(sel->v[i].key);
		for (int k = 0; k < sel->v[i].nvals; k++)
			drv_free(sel->v[i].vals[k]);
		drv_free(sel->v[i].vals);
	}
	drv_free(sel->v);
	drv_free(sel);
}

static char *trim(char *p)
{
	char *e;

	while (*p == ' ')
		p++;
	e = p + strlen(p);
	while (e > p && e[-1] == ' ')
		*--e = '\0';
	return p;
}

static void add_val(struct sel_req *q, const char *v)
{
	q->vals = drv_realloc(q->vals, (size_t)(q->nvals + 1) * sizeof(char *));
	q->vals[q->nvals++] = drv_strdup(v);
}

/* One requirement ("a=b", "a in (x,y)", "!a", "a"); false when malformed. */
static bool parse_req(struct kube_sel *sel, char *t, bool field)
{
	struct sel_req q = { .field = field };
	char *p;

	t = trim(t);
	if (!*t)
		return false;
	if ((p = strstr(t, "!=")) != NULL) {
		q.op = S_NE;
		*p = '\0';
		q.key = drv_strdup(trim(t));
		add_val(&q, trim(p + 2));
	} else if ((p = strstr(t, "==")) != NULL || (p = strchr(t, '=')) != NULL) {
		int w = p[0] == '=' && p[1] == '=' ? 2 : 1;

		q.op = S_EQ;
		*p = '\0';
		q.key = drv_strdup(trim(t));
		add_val(&q, trim(p + w));
	} else if (!field && (p = strstr(t, " notin ")) != NULL) {
		q.op = S_NOTIN;
		goto set;
	} else if (!field && (p = strstr(t, " in ")) != NULL) {
		char *o, *c, *v, *save = NULL;

		q.op = S_IN;
set:
		*p = '\0';
		q.key = drv_strdup(trim(t));
		o = strchr(p + 1, '(');
		c = o ? strchr(o, ')') : NULL;
		if (!o || !c) {
			drv_free(q.key);
			return false;
		}
		*c = '\0';
		for (v = strtok_r(o + 1, ",", &save); v; v = strtok_r(NULL, ",", &save))
			add_val(&q, trim(v));
	} else if (!field && t[0] == '!') {
		q.op = S_NOT_EXISTS;
		q.key = drv_strdup(trim(t + 1));
	} else if (!field) {
		q.op = S_EXISTS;
		q.key = drv_strdup(t);
	} else {
		return false;
	}
	if (!*q.key || strchr(q.key, ' ')) {
		for (int k = 0; k < q.nvals; k++)
			drv_free(q.vals[k]);
		drv_free(q.vals);
		drv_free(q.key);
		return false;
	}
	DRV_GROW(sel->v, (size_t)sel->n + 1, sel->cap);
	sel->v[sel->n++] = q;
	return true;
}

/* Splits on commas outside parentheses. */
static bool parse_sel(struct kube_sel *sel, const char *text, bool field, char *bad, size_t n)
{
	char *buf = drv_strdup(text), *start = buf;
	int depth = 0;
	bool ok = true;

	for (char *p = buf;; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')')
			depth--;
		if ((*p == ',' && depth == 0) || *p == '\0') {
			char end = *p;

			*p = '\0';
			if (!parse_req(sel, start, field)) {
				snprintf(bad, n, "%s", start);
				ok = false;
				break;
			}
			if (!end)
				break;
			start = p + 1;
		}
	}
	drv_free(buf);
	return ok;
}

struct kube_sel *kube_sel_parse(const char *label, const char *field, struct drv_http_resp *o,
				bool *bad)
{
	struct kube_sel *sel = drv_calloc(1, sizeof(*sel));
	char what[256] = "";

	*bad = false;
	if (label && *label && !parse_sel(sel, label, false, what, sizeof(what))) {
		kube_status(o, 400, "BadRequest", NULL,
			    "labelSelector %s: cannot parse \"%s\" (expected key=value, key!=value, "
			    "key in (a,b), key notin (a,b), key or !key)", label, what);
		*bad = true;
	} else if (field && *field && !parse_sel(sel, field, true, what, sizeof(what))) {
		kube_status(o, 400, "BadRequest", NULL,
			    "fieldSelector %s: cannot parse \"%s\" (expected field=value, "
			    "field==value or field!=value)", field, what);
		*bad = true;
	}
	if (*bad) {
		kube_sel_free(sel);
		return NULL;
	}
	return sel;
}

/* The string at a dotted path of obj ("" when absent; booleans as text). */
static const char *field_value(const json_t *obj, const char *path, char *buf, size_t n)
{
	char tmp[256], *tok, *save = NULL;
	const json_t *x = obj;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (tok = strtok_r(tmp, ".", &save); tok && x; tok = strtok_r(NULL, ".", &save))
		x = json_object_get(x, tok);
	if (json_is_string(x))
		return json_string_value(x);
	if (json_is_boolean(x))
		return json_is_true(x) ? "true" : "false";
	if (json_is_integer(x)) {
		snprintf(buf, n, "%lld", (long long)json_integer_value(x));
		return buf;
	}
	return "";
}

bool kube_sel_match(const struct kube_sel *sel, const json_t *obj)
{
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");

	for (int i = 0; sel && i < sel->n; i++) {
		const struct sel_req *q = &sel->v[i];
		char buf[64];
		const char *v;
		bool has, in = false;

		if (q->field) {
			v = field_value(obj, q->key, buf, sizeof(buf));
			has = true;
		} else {
			const json_t *l = json_object_get(labels, q->key);

			has = json_is_string(l);
			v = has ? json_string_value(l) : "";
		}
		for (int k = 0; k < q->nvals; k++)
			in |= strcmp(v, q->vals[k]) == 0;
		switch (q->op) {
		case S_EQ:
		case S_IN:
			if (!has || !in)
				return false;
			break;
		case S_NE:
		case S_NOTIN:
			if (has && in)
				return false;
			break;
		case S_EXISTS:
			if (!has)
				return false;
			break;
		case S_NOT_EXISTS:
			if (has)
				return false;
			break;
		}
	}
	return true;
}

/* The field selectors Kubernetes serves per kind (others: 400, as there). */
static bool field_ok(const char *kind, const char *key)
{
	static const char *const common[] = { "metadata.name", "metadata.namespace", NULL };
	static const char *const pod[] = { "status.phase", "spec.nodeName", "spec.restartPolicy",
					   "spec.schedulerName", "spec.serviceAccountName",
					   "status.podIP", "status.nominatedNodeName", NULL };
	static const char *const ev[] = { "involvedObject.kind", "involvedObject.namespace",
					  "involvedObject.name", "involvedObject.uid",
					  "involvedObject.apiVersion",
					  "involvedObject.resourceVersion",
					  "involvedObject.fieldPath", "reason", "reportingComponent",
					  "source", "type", NULL };
	static const char *const node[] = { "spec.unschedulable", NULL };
	static const char *const job[] = { "status.successful", NULL };
	static const char *const ns[] = { "status.phase", NULL };
	static const char *const none[] = { NULL };
	const char *const *l = strcmp(kind, "Pod") == 0 ? pod : strcmp(kind, "Event") == 0 ? ev
			     : strcmp(kind, "Node") == 0 ? node : strcmp(kind, "Job") == 0 ? job
			     : strcmp(kind, "Namespace") == 0 ? ns : none;

	for (int i = 0; common[i]; i++)
		if (strcmp(common[i], key) == 0)
			return true;
	for (int i = 0; l[i]; i++)
		if (strcmp(l[i], key) == 0)
			return true;
	return false;
}

/* --- collecting ---------------------------------------------------------- */

static bool may_see(const struct caller *c, const struct srv_job *j)
{
	return !c || c->admin || strcmp(c->user, j->spec.job.user ? j->spec.job.user : "") == 0;
}

static int by_key(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	const json_t *mx = json_object_get(x, "metadata"), *my = json_object_get(y, "metadata");
	const char *nx = drv_json_str(mx, "namespace"), *ny = drv_json_str(my, "namespace");
	int c = strcmp(nx ? nx : "", ny ? ny : "");

	return c ? c : strcmp(drv_json_str(mx, "name"), drv_json_str(my, "name"));
}

static json_t *sorted(json_t *arr)
{
	size_t n = json_array_size(arr);
	json_t **v = drv_calloc(n + 1, sizeof(*v));
	json_t *out = json_array();

	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(arr, i);
	if (n)
		qsort(v, n, sizeof(*v), by_key);
	for (size_t i = 0; i < n; i++)
		json_array_append(out, v[i]);
	drv_free(v);
	json_decref(arr);
	return out;
}

static void add_if(json_t *arr, json_t *obj, const struct kube_req *q, const struct kube_sel *sel)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *ns = drv_json_str(md, "namespace");

	if ((q->ns[0] && (!ns || strcmp(ns, q->ns) != 0)) ||
	    (q->name[0] && strcmp(drv_json_str(md, "name"), q->name) != 0) ||
	    !kube_sel_match(sel, obj)) {
		json_decref(obj);
		return;
	}
	json_array_append_new(arr, obj);
}

json_t *kube_job_objects(struct drv_server *s, const struct kube_req *q,
			 const struct kube_sel *sel, struct srv_job *j, bool deleted, int64_t rv)
{
	const char *kind = q->res->type;
	json_t *arr = json_array();

	if (!may_see(q->c, j) || (deleted && srv_jstate_final(j->state) && !j->holding) ||
	    kube_job_ttl_gone(s, j))
		return arr;
	/* a parent's pods are its elements (CONTRACTS.md section 2): the
	 * parent is the Job and has no pod of its own; an element is a pod of
	 * its parent's Job, never a Job of its own */
	if (strcmp(kind, "Pod") != 0 && strcmp(kind, "Event") != 0) {
		if (kube_job_is_res(j, q->res) && !j->parent)
			add_if(arr, kube_workload_json(s, q->res, j, rv, deleted), q, sel);
		return arr;
	}
	for (int32_t r = 0; !j->par && r < kube_job_npods(j); r++) {
		if (strcmp(kind, "Pod") == 0) {
			if (j->par)
				break;   /* a parent never runs: its elements are the pods */
			add_if(arr, kube_pod_json(s, j, r, rv, deleted), q, sel);
		} else if (strcmp(kind, "Event") == 0) {
			json_t *evs = json_array();
			size_t k;
			json_t *e;

			kube_job_events(s, j, r, evs);
			json_array_foreach(evs, k, e)
				add_if(arr, json_incref(e), q, sel);
			json_decref(evs);
		}
	}
	return arr;
}

json_t *kube_collect(struct drv_server *s, struct kube_req *q, const struct kube_sel *sel,
		     int64_t *rv)
{
	const char *kind = q->res->type;
	json_t *arr = json_array();
	struct kube_rvs rvs;
	struct kube_jobs js = { 0 };

	if (strcmp(kind, "Node") != 0 && strcmp(kind, "PriorityClass") != 0 &&
	    strcmp(kind, "Secret") != 0 && strcmp(kind, "ConfigMap") != 0)
		kube_jobs_collect(s, &js);
	kube_rvs_build(s, &rvs);
	*rv = s->last_seq > 0 ? s->last_seq : 1;
	if (strcmp(kind, "Node") == 0) {
		for (int32_t i = 0; i < s->nnodes; i++)
			add_if(arr, kube_node_json(s, i, kube_rvs_node(&rvs, s->nodes[i].name)), q,
			       sel);
	} else if (strcmp(kind, "PriorityClass") == 0) {
		for (int32_t i = 0; i < s->cfg.tenants.nclasses; i++)
			add_if(arr, kube_priorityclass_json(s, i), q, sel);
	} else if (strcmp(kind, "Secret") == 0 || strcmp(kind, "ConfigMap") == 0) {
		json_t *objs = json_array();
		size_t i;
		json_t *x;

		kube_config_collect(s, q, objs);
		json_array_foreach(objs, i, x)
			add_if(arr, json_incref(x), q, sel);
		json_decref(objs);
		if (s->kobj_rv > *rv)
			*rv = s->kobj_rv;
	} else if (strcmp(kind, "Namespace") == 0) {
		json_t *seen = json_object();
		const char *k;
		json_t *v;

		json_object_set_new(seen, "default", json_integer(s->started_ms ? drv_wall_s() -
						   (drv_mono_ms() - s->started_ms) / 1000 : 0));
		for (size_t i = 0; i < js.n; i++) {
			const char *ns = kube_job_ns(js.v[i]);
			json_t *t = json_object_get(seen, ns);

			if (!may_see(q->c, js.v[i]))
				continue;
			if (!t || json_integer_value(t) > js.v[i]->submit_time)
				json_object_set_new(seen, ns, json_integer(js.v[i]->submit_time));
		}
		json_object_foreach(seen, k, v)
			add_if(arr, kube_namespace_json(k, json_integer_value(v)), q, sel);
		json_decref(seen);
	} else {
		for (size_t i = 0; i < js.n; i++) {
			json_t *objs = kube_job_objects(s, q, sel, js.v[i], js.deleted[i],
							kube_rvs_job(&rvs, js.v[i]->id));

			json_array_extend(arr, objs);
			json_decref(objs);
		}
	}
	kube_rvs_release(&rvs);
	kube_jobs_release(&js);
	return sorted(arr);
}

/* --- tables ----------------------------------------------------------------- */

static void human_age(int64_t secs, char *b, size_t n)
{
	if (secs < 0)
		secs = 0;
	if (secs < 120)
		snprintf(b, n, "%llds", (long long)secs);
	else if (secs < 600)
		snprintf(b, n, "%lldm%llds", (long long)secs / 60, (long long)secs % 60);
	else if (secs < 3 * 3600)
		snprintf(b, n, "%lldm", (long long)secs / 60);
	else if (secs < 8 * 3600)
		snprintf(b, n, "%lldh%lldm", (long long)secs / 3600, (long long)(secs % 3600) / 60);
	else if (secs < 48 * 3600)
		snprintf(b, n, "%lldh", (long long)secs / 3600);
	else if (secs < 8 * 86400)
		snprintf(b, n, "%lldd%lldh", (long long)secs / 86400, (long long)(secs % 86400) / 3600);
	else
		snprintf(b, n, "%lldd", (long long)secs / 86400);
}

static json_t *age_of(const json_t *obj, const char *field)
{
	const char *t = drv_json_str(json_object_get(obj, "metadata"), field);
	int64_t when = 0;
	char b[32];

	if (!t || drv_rfc3339_parse(t, &when) < 0)
		return json_string("<unknown>");
	human_age(drv_wall_s() - when, b, sizeof(b));
	return json_string(b);
}

static json_t *col(const char *name, const char *type, const char *fmt, int prio,
		   const char *desc)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", name, "type", type, "format", fmt,
			 "description", desc, "priority", prio);
}

static json_t *columns(const char *kind)
{
	json_t *c = json_array();

	json_array_append_new(c, col("Name", "string", "name", 0,
				     "Name must be unique within a namespace."));
	if (strcmp(kind, "Pod") == 0) {
		json_array_append_new(c, col("Ready", "string", "", 0, "Ready containers of all."));
		json_array_append_new(c, col("Status", "string", "", 0, "The pod's state."));
		json_array_append_new(c, col("Restarts", "string", "", 0,
					     "Restarts (drover: requeued attempts)."));
		json_array_append_new(c, col("Age", "string", "", 0, "Time since creation."));
		json_array_append_new(c, col("IP", "string", "", 1, "The node's address."));
		json_array_append_new(c, col("Node", "string", "", 1, "The node it runs on."));
		json_array_append_new(c, col("GPUs", "string", "", 1, "GPUs of this task."));
		json_array_append_new(c, col("Job", "string", "", 1, "drover's job id."));
	} else if (strcmp(kind, "Node") == 0) {
		json_array_append_new(c, col("Status", "string", "", 0, "Ready or NotReady."));
		json_array_append_new(c, col("Roles", "string", "", 0, "node-role labels."));
		json_array_append_new(c, col("Age", "string", "", 0, "Time since creation."));
		json_array_append_new(c, col("Version", "string", "", 0, "The agent's version."));
		json_array_append_new(c, col("Internal-IP", "string", "", 1, "The agent's address."));
		json_array_append_new(c, col("GPU-Model", "string", "", 1, "GPU model."));
		json_array_append_new(c, col("GPUs", "string", "", 1, "GPUs on the node."));
		json_array_append_new(c, col("GPUs-Free", "string", "", 1, "GPUs nothing uses."));
		json_array_append_new(c, col("Pool", "string", "", 1, "drover pool."));
	} else if (strcmp(kind, "Job") == 0) {
		json_array_append_new(c, col("Status", "string", "", 0, "Complete, Failed or Running."));
		json_array_append_new(c, col("Completions", "string", "", 0, "Succeeded of desired."));
		json_array_append_new(c, col("Duration", "string", "", 0, "Run time."));
		json_array_append_new(c, col("Age", "string", "", 0, "Time since creation."));
	} else if (strcmp(kind, "PyTorchJob") == 0 || strcmp(kind, "VolcanoJob") == 0) {
		json_array_append_new(c, col("Status", "string", "", 0, "Created, Running, Succeeded or Failed."));
		json_array_append_new(c, col("Age", "string", "", 0, "Time since creation."));
	} else if (strcmp(kind, "PriorityClass") == 0) {
		json_array_append_new(c, col("Value", "integer", "", 0, "The priority."));
		json_array_append_new(c, col("Global-Default", "boolean", "", 0, "Never: drover has tenants' default classes."));
		json_array_append_new(c, col("Age", "string", "", 0, "Time since the server started."));
		json_array_append_new(c, col("PreemptionPolicy", "string", "", 0, "PreemptLowerPriority or Never."));
	} else if (strcmp(kind, "Secret") == 0) {
		json_array_append_new(c, col("Type", "string", "", 0, "The secret's type."));
		json_array_append_new(c, col("Data", "integer", "", 0, "How many keys."));
		json_array_append_new(c, col("Age", "string", "", 0, "Time since creation."));
	} else if (strcmp(kind, "ConfigMap") == 0) {
		json_array_append_new(c, col("Data", "integer", "", 0, "How many keys."));
		json_array_append_new(c, col("Age", "string", "", 0, "Time since creation."));
	} else if (strcmp(kind, "Event") == 0) {
		json_array_insert_new(c, 0, col("Last Seen", "string", "", 0, "When."));
		json_array_insert_new(c, 1, col("Type", "string", "", 0, "Normal or Warning."));
		json_array_insert_new(c, 2, col("Reason", "string", "", 0, "Why."));
		json_array_insert_new(c, 3, col("Object", "string", "", 0, "About what."));
		json_array_remove(c, 4);
		json_array_append_new(c, col("Message", "string", "", 0, "What happened."));
	} else {
		json_array_append_new(c, col("Status", "string", "", 0, "The namespace's phase."));
		json_array_append_new(c, col("Age", "string", "", 0, "Time since creation."));
	}
	return c;
}

static const char *pod_status_text(const json_t *pod)
{
	const json_t *st = json_object_get(pod, "status");
	const json_t *cs = json_array_get(json_object_get(st, "containerStatuses"), 0);
	const json_t *state = json_object_get(cs, "state");
	const char *r;

	if (drv_json_str(json_object_get(pod, "metadata"), "deletionTimestamp"))
		return "Terminating";
	if ((r = drv_json_str(st, "reason")) != NULL)
		return r;
	if ((r = drv_json_str(json_object_get(state, "terminated"), "reason")) != NULL)
		return r;
	if ((r = drv_json_str(json_object_get(state, "waiting"), "reason")) != NULL &&
	    strcmp(r, "Pending") != 0)
		return r;
	return drv_json_str(st, "phase");
}

static json_t *pod_row(const json_t *p)
{
	const json_t *st = json_object_get(p, "status"), *sp = json_object_get(p, "spec");
	const json_t *cs = json_array_get(json_object_get(st, "containerStatuses"), 0);
	const json_t *lim = json_object_get(json_object_get(json_array_get(json_object_get(sp, "containers"), 0), "resources"), "limits");
	const char *gpus = drv_json_str(lim, "nvidia.com/gpu");

	return json_pack("[s,o,s,o,o,s,s,s,s]", drv_json_str(json_object_get(p, "metadata"), "name"),
			 json_sprintf("%d/1", json_is_true(json_object_get(cs, "ready")) ? 1 : 0),
			 pod_status_text(p),
			 json_sprintf("%lld", (long long)json_integer_value(json_object_get(cs, "restartCount"))),
			 age_of(p, "creationTimestamp"),
			 drv_json_str(st, "hostIP") ? drv_json_str(st, "hostIP") : "<none>",
			 drv_json_str(sp, "nodeName") ? drv_json_str(sp, "nodeName") : "<none>",
			 gpus ? gpus : "0",
			 drv_json_str(json_object_get(json_object_get(p, "metadata"), "labels"),
				      KUBE_LABEL_JOB));
}

static json_t *node_row(struct drv_server *s, const json_t *n)
{
	const json_t *st = json_object_get(n, "status");
	const json_t *md = json_object_get(n, "metadata");
	const json_t *labels = json_object_get(md, "labels");
	const json_t *ready = json_array_get(json_object_get(st, "conditions"), 0);
	const char *ip = NULL, *model = drv_json_str(labels, "drover.dev/gpu-model");
	const char *pool = drv_json_str(labels, "drover.dev/pool");
	char status[64], roles[256] = "";
	size_t i;
	json_t *a;
	const char *k;
	json_t *v;
	int32_t idx = srv_node_find(s, drv_json_str(md, "name"));
	struct srv_gpu_count c = { 0 };

	if (idx >= 0)
		srv_node_gpus(s, idx, &c);
	json_array_foreach(json_object_get(st, "addresses"), i, a)
		if (strcmp(drv_json_str(a, "type"), "InternalIP") == 0)
			ip = drv_json_str(a, "address");
	json_object_foreach((json_t *)labels, k, v) {
		if (strncmp(k, "node-role.kubernetes.io/", 24) == 0) {
			size_t l = strlen(roles);

			snprintf(roles + l, sizeof(roles) - l, "%s%s", l ? "," : "", k + 24);
		}
	}
	snprintf(status, sizeof(status), "%s%s",
		 strcmp(drv_json_str(ready, "status"), "True") == 0 ? "Ready" : "NotReady",
		 json_is_true(json_object_get(json_object_get(n, "spec"), "unschedulable"))
			 ? ",SchedulingDisabled" : "");
	return json_pack("[s,s,s,o,s,s,s,s,o,s]", drv_json_str(md, "name"), status,
			 roles[0] ? roles : "<none>", age_of(n, "creationTimestamp"),
			 drv_json_str(json_object_get(st, "nodeInfo"), "kubeletVersion"),
			 ip ? ip : "<none>", model ? model : "<none>",
			 drv_json_str(json_object_get(st, "capacity"), "nvidia.com/gpu"),
			 json_sprintf("%lld", (long long)c.free), pool ? pool : "<none>");
}

static json_t *job_row(const json_t *j)
{
	const json_t *st = json_object_get(j, "status");
	const json_t *cond = json_array_get(json_object_get(st, "conditions"), 0);
	const char *start = drv_json_str(st, "startTime"), *end = drv_json_str(st, "completionTime");
	int64_t ts = 0, te = drv_wall_s();
	char dur[32] = "";

	if (start && drv_rfc3339_parse(start, &ts) == 0) {
		if (end)
			drv_rfc3339_parse(end, &te);
		human_age(te - ts, dur, sizeof(dur));
	}
	return json_pack("[s,s,o,s,o]", drv_json_str(json_object_get(j, "metadata"), "name"),
			 cond ? drv_json_str(cond, "type") : json_object_get(st, "active") ? "Running"
										: "Pending",
			 json_sprintf("%lld/%lld",
				      (long long)json_integer_value(json_object_get(st, "succeeded")),
				      (long long)json_integer_value(json_object_get(
					      json_object_get(j, "spec"), "completions"))),
			 dur, age_of(j, "creationTimestamp"));
}

/* PyTorchJob: its last condition; Volcano Job: status.state.phase. */
static json_t *workload_row(const json_t *w)
{
	const json_t *st = json_object_get(w, "status");
	const json_t *conds = json_object_get(st, "conditions");
	const char *phase = drv_json_str(json_object_get(st, "state"), "phase");

	if (!phase && json_array_size(conds))
		phase = drv_json_str(json_array_get(conds, json_array_size(conds) - 1), "type");
	return json_pack("[s,s,o]", drv_json_str(json_object_get(w, "metadata"), "name"),
			 phase ? phase : "Created", age_of(w, "creationTimestamp"));
}

static json_t *event_row(const json_t *e)
{
	const json_t *io = json_object_get(e, "involvedObject");
	const char *t = drv_json_str(e, "lastTimestamp");
	int64_t when = 0;
	char age[32] = "<unknown>";

	if (t && drv_rfc3339_parse(t, &when) == 0)
		human_age(drv_wall_s() - when, age, sizeof(age));
	return json_pack("[s,s,s,o,s]", age, drv_json_str(e, "type"), drv_json_str(e, "reason"),
			 json_sprintf("pod/%s", drv_json_str(io, "name")), drv_json_str(e, "message"));
}

json_t *kube_table(struct drv_server *s, const struct kube_req *q, json_t *objs, bool wide,
		   int64_t rv, bool headers)
{
	const char *kind = q->res->type;
	json_t *rows = json_array();
	size_t i;
	json_t *o;

	json_array_foreach(objs, i, o) {
		json_t *cells;
		json_t *pom;

		if (strcmp(kind, "Pod") == 0)
			cells = pod_row(o);
		else if (strcmp(kind, "Node") == 0)
			cells = node_row(s, o);
		else if (strcmp(kind, "Job") == 0)
			cells = job_row(o);
		else if (strcmp(kind, "Event") == 0)
			cells = event_row(o);
		else if (strcmp(kind, "PyTorchJob") == 0 || strcmp(kind, "VolcanoJob") == 0)
			cells = workload_row(o);
		else if (strcmp(kind, "Secret") == 0)
			cells = json_pack("[s,s,I,o]", drv_json_str(json_object_get(o, "metadata"), "name"),
					  drv_json_str(o, "type"),
					  (json_int_t)json_object_size(json_object_get(o, "data")),
					  age_of(o, "creationTimestamp"));
		else if (strcmp(kind, "ConfigMap") == 0)
			cells = json_pack("[s,I,o]", drv_json_str(json_object_get(o, "metadata"), "name"),
					  (json_int_t)(json_object_size(json_object_get(o, "data")) +
						       json_object_size(json_object_get(o, "binaryData"))),
					  age_of(o, "creationTimestamp"));
		else if (strcmp(kind, "PriorityClass") == 0)
			cells = json_pack("[s,O,b,o,s]", drv_json_str(json_object_get(o, "metadata"), "name"),
					  json_object_get(o, "value"), false, age_of(o, "creationTimestamp"),
					  drv_json_str(o, "preemptionPolicy"));
		else
			cells = json_pack("[s,s,o]", drv_json_str(json_object_get(o, "metadata"), "name"),
					  "Active", age_of(o, "creationTimestamp"));
		pom = json_pack("{s:s,s:s,s:O}", "kind", "PartialObjectMetadata", "apiVersion",
				"meta.k8s.io/v1", "metadata", json_object_get(o, "metadata"));
		json_array_append_new(rows, json_pack("{s:o,s:o}", "cells", cells, "object", pom));
	}
	(void)wide;
	return json_pack("{s:s,s:s,s:{s:o},s:o,s:o}", "kind", "Table", "apiVersion",
			 "meta.k8s.io/v1", "metadata", "resourceVersion",
			 json_sprintf("%lld", (long long)rv), "columnDefinitions",
			 headers ? columns(kind) : json_array(), "rows", rows);
}

/* --- get and list ------------------------------------------------------------ */

static bool check_fields(const struct kube_req *q, const char *field, struct drv_http_resp *o)
{
	char buf[512], *t, *save = NULL;

	if (!field || !*field)
		return true;
	snprintf(buf, sizeof(buf), "%s", field);
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char key[256];

		snprintf(key, sizeof(key), "%.*s", (int)strcspn(t, "!="), t);
		if (!field_ok(q->res->type, trim(key))) {
			kube_status(o, 400, "BadRequest", NULL,
				    "\"%s\" is not a known field selector: only \"metadata.name\", "
				    "\"metadata.namespace\" and the fields Kubernetes serves for %s",
				    trim(key), q->res->plural);
			return false;
		}
	}
	return true;
}

int kube_get(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	     struct drv_http_resp *o)
{
	const char *label = drv_http_req_query(r, "labelSelector");
	const char *field = drv_http_req_query(r, "fieldSelector");
	const char *cont = drv_http_req_query(r, "continue");
	const char *inc = drv_http_req_query(r, "includeObject");
	struct kube_sel *sel;
	json_t *items;
	int64_t rv, limit = 0;
	bool bad;

	if (!check_fields(q, field, o))
		return 0;
	sel = kube_sel_parse(label, field, o, &bad);
	if (bad)
		return 0;
	if (drv_http_req_query(r, "limit") &&
	    drv_http_req_query_int(r, "limit", 0, 0, 1000000, &limit, o) < 0) {
		kube_status(o, 400, "BadRequest", NULL, "limit=%s: expected a whole number >= 0",
			    drv_http_req_query(r, "limit"));
		kube_sel_free(sel);
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	items = kube_collect(s, q, sel, &rv);
	if (q->name[0]) {
		if (json_array_size(items) == 0) {
			kube_status(o, 404, "NotFound",
				    json_pack("{s:s,s:s}", "name", q->name, "kind", q->res->plural),
				    "%s \"%s\" not found", q->res->plural, q->name);
		} else if (q->table) {
			kube_reply(o, 200, kube_table(s, q, items, true, rv, true));
		} else {
			kube_reply(o, 200, json_incref(json_array_get(items, 0)));
		}
		pthread_mutex_unlock(&s->mu);
		json_decref(items);
		kube_sel_free(sel);
		return 0;
	}
	{
		json_t *page = json_array(), *md = json_object();
		size_t i, n = json_array_size(items), from = 0, to = n;
		json_t *x;

		if (cont && *cont) {
			/* the continue token is the last key returned: namespace/name */
			for (from = 0; from < n; from++) {
				const json_t *m = json_object_get(json_array_get(items, from), "metadata");
				char key[600];

				snprintf(key, sizeof(key), "%s/%s",
					 drv_json_str(m, "namespace") ? drv_json_str(m, "namespace") : "",
					 drv_json_str(m, "name"));
				if (strcmp(key, cont) > 0)
					break;
			}
		}
		if (limit > 0 && from + (size_t)limit < n)
			to = from + (size_t)limit;
		for (i = from; i < to; i++)
			json_array_append(page, json_array_get(items, i));
		json_object_set_new(md, "resourceVersion", json_sprintf("%lld", (long long)rv));
		if (to < n) {
			const json_t *m = json_object_get(json_array_get(items, to - 1), "metadata");

			json_object_set_new(md, "continue",
					    json_sprintf("%s/%s",
							 drv_json_str(m, "namespace")
								 ? drv_json_str(m, "namespace") : "",
							 drv_json_str(m, "name")));
			json_object_set_new(md, "remainingItemCount", json_integer((json_int_t)(n - to)));
		}
		if (q->table) {
			x = kube_table(s, q, page, true, rv, true);
			json_object_set_new(x, "metadata", md);
			if (inc && strcmp(inc, "Object") == 0) {
				json_t *row;

				json_array_foreach(json_object_get(x, "rows"), i, row)
					json_object_set(row, "object", json_array_get(page, i));
			}
			json_decref(page);
		} else {
			char lk[96], av[96];

			snprintf(lk, sizeof(lk), "%sList", q->res->kind);
			snprintf(av, sizeof(av), "%s%s%s", q->res->group, *q->res->group ? "/" : "",
				 q->res->version);
			x = json_pack("{s:s,s:s,s:o,s:o}", "kind", lk, "apiVersion", av, "metadata",
				      md, "items", page);
		}
		kube_reply(o, 200, x);
	}
	pthread_mutex_unlock(&s->mu);
	json_decref(items);
	kube_sel_free(sel);
	return 0;
}
