/*
 * kube_write.c: writes through the Kubernetes face: create (POST) of Pods
 * and batch/v1 Jobs, parsed by src/spec's manifest reader like any other
 * drover job; patch (JSON merge and strategic merge, what kubectl apply
 * sends) and update (PUT) of labels and annotations; delete (cancel, with
 * the grace period asked, then gone from the face); dry-run=All. A job made
 * here keeps metadata.name (annotated drover.dev/created-by:
 * kubernetes-api) and its uid (drover.dev/uid), unique per namespace among
 * live jobs. Unlike drover's own routes, an object that can never be
 * scheduled is created and stays Pending with the reason, as Kubernetes
 * does.
 */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <libfyaml.h>

/* --- finding an object ---------------------------------------------------------- */

/* The job showing q's object (a pod's or a Job's), its rank for a pod;
 * NULL when none. *deleted says it was deleted through this face. */
static struct srv_job *find(struct drv_server *s, struct kube_req *q, struct kube_jobs *js,
			    int32_t *rank, bool *deleted)
{
	for (size_t i = 0; i < js->n; i++) {
		struct srv_job *j = js->v[i];
		char nm[320];

		if (strcmp(kube_job_ns(j), q->ns[0] ? q->ns : "default") != 0)
			continue;
		if (q->c && !q->c->admin && strcmp(q->c->user, j->spec.job.user) != 0)
			continue;
		if (js->deleted[i] && srv_jstate_final(j->state) && !j->holding)
			continue;
		if (strcmp(q->res->type, "Pod") != 0) {
			if (!kube_job_is_res(j, q->res))
				continue;
			kube_job_name(j, nm, sizeof(nm));
			if (strcmp(nm, q->name) == 0) {
				*rank = -1;
				*deleted = js->deleted[i];
				return j;
			}
			continue;
		}
		for (int32_t r = 0; r < kube_job_npods(j); r++) {
			kube_pod_name(j, r, nm, sizeof(nm));
			if (strcmp(nm, q->name) == 0) {
				*rank = r;
				*deleted = js->deleted[i];
				return j;
			}
		}
	}
	return NULL;
}

static void not_found(struct drv_http_resp *o, const struct kube_req *q)
{
	kube_status(o, 404, "NotFound", json_pack("{s:s,s:s}", "name", q->name, "kind", q->res->plural),
		    "%s \"%s\" not found", q->res->plural, q->name);
}

static json_t *render(struct drv_server *s, struct kube_req *q, struct srv_job *j, int32_t rank,
		      bool deleted)
{
	struct kube_rvs rvs;
	json_t *o;
	int64_t rv;

	kube_rvs_build(s, &rvs);
	rv = kube_rvs_job(&rvs, j->id);
	kube_rvs_release(&rvs);
	if (strcmp(q->res->type, "Pod") != 0)
		o = kube_workload_json(s, q->res, j, rv, deleted);
	else
		o = kube_pod_json(s, j, rank < 0 ? 0 : rank, rv, deleted);
	return o;
}

bool kube_dry_run(struct drv_http_req *r)
{
	const char *d = drv_http_req_query(r, "dryRun");

	return d && strcmp(d, "All") == 0;
}

/* --- create ----------------------------------------------------------------- */

static void set_annotation(json_t *obj, const char *key, const char *val)
{
	json_t *md = json_object_get(obj, "metadata");
	json_t *an = json_object_get(md, "annotations");

	if (!json_is_object(an)) {
		an = json_object();
		json_object_set_new(md, "annotations", an);
	}
	json_object_set_new(an, key, json_string(val));
}

void kube_new_uid(char *out, size_t n)
{
	unsigned char b[16] = { 0 };

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)(drv_mono_ms() >> (i % 8));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, n, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

/* 422 Invalid with one cause per diagnostic. */
static void invalid(struct drv_http_resp *o, const struct kube_req *q, const char *name,
		    const struct drv_diags *d)
{
	json_t *causes = json_array();
	char msg[1500] = "";
	size_t l = 0;

	for (int i = 0; i < d->n; i++) {
		const struct drv_diag *g = &d->v[i];

		if (g->sev != DRV_SEV_ERROR)
			continue;
		json_array_append_new(causes, json_pack("{s:s,s:s,s:s}", "reason", "FieldValueInvalid",
							"message", g->msg, "field",
							g->path ? g->path : ""));
		l += (size_t)snprintf(msg + l, l < sizeof(msg) ? sizeof(msg) - l : 0, "%s%s: %s",
				      l ? ", " : "", g->path ? g->path : "(object)", g->msg);
	}
	kube_status(o, 422, "Invalid",
		    json_pack("{s:s,s:s,s:o}", "name", name, "kind", q->res->kind, "causes", causes),
		    "%s \"%s\" is invalid: %s", q->res->kind, name, msg);
}

static bool live_name_taken(struct drv_server *s, const char *ns, const char *name,
			    const struct kube_res *k)
{
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = srv_job_get(s, id);

		if (j && !srv_jstate_final(j->state) && kube_job_from_api(j) &&
		    (strcmp(k->type, "Pod") == 0 ? strcmp(j->spec.kind ? j->spec.kind : "", "Pod") == 0
						 : kube_job_is_res(j, k)) &&
		    strcmp(kube_job_ns(j), ns) == 0 &&
		    strcmp(j->spec.job.name, name) == 0)
			return true;
	}
	return false;
}

/* fieldValidation: Strict refuses fields Kubernetes does not know (400);
 * Warn (the default) and Ignore let them through, Warn with a header. */
bool kube_check_unknown(struct drv_http_req *r, struct drv_http_resp *o, const char *kind,
			  const json_t *obj)
{
	const char *fv = drv_http_req_query(r, "fieldValidation");
	json_t *bad = json_array();
	size_t i;
	json_t *b;

	if (fv && strcasecmp(fv, "Ignore") == 0) {
		json_decref(bad);
		return true;
	}
	kube_schema_unknown(kind, obj, bad);
	if (json_array_size(bad) && fv && strcasecmp(fv, "Strict") == 0) {
		char msg[1024] = "";
		size_t l = 0;

		json_array_foreach(bad, i, b)
			l += (size_t)snprintf(msg + l, l < sizeof(msg) ? sizeof(msg) - l : 0,
					      "%sunknown field \"%s\"", l ? ", " : "",
					      json_string_value(b));
		kube_status(o, 400, "BadRequest", NULL, "strict decoding error: %s", msg);
		json_decref(bad);
		return false;
	}
	json_array_foreach(bad, i, b) {
		char w[400];

		snprintf(w, sizeof(w), "unknown field \"%s\"", json_string_value(b));
		kube_warn(o, w);
	}
	json_decref(bad);
	return true;
}

static json_t *applied_fields(const json_t *obj);

/* Creates q's object obj (taken); manager: made by server-side apply of
 * that field manager (NULL: POST). */
static int create_obj(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		      struct drv_http_resp *o, json_t *obj, const char *manager,
		      const json_error_t *jerr)
{
	json_error_t je = *jerr;
	json_t *md;
	const char *kind, *av, *ns, *name;
	char want_av[64], nbuf[254], uid[64];
	struct drv_jobspec spec;
	struct drv_diags d;
	bool batch = strcmp(q->res->type, "Pod") != 0;   /* a workload: Job, PyTorchJob... */
	char *text = NULL;

	drv_jobspec_init(&spec);
	drv_diags_init(&d, "object");
	if (!obj || !json_is_object(obj)) {
		kube_status(o, 400, "BadRequest", NULL, "the body is not a JSON object%s%s",
			    obj ? "" : ": ", obj ? "" : je.text);
		goto out;
	}
	kind = drv_json_str(obj, "kind");
	av = drv_json_str(obj, "apiVersion");
	snprintf(want_av, sizeof(want_av), "%s%s%s", q->res->group, *q->res->group ? "/" : "",
		 q->res->version);
	if (!kind || strcmp(kind, q->res->kind) != 0 || !av || strcmp(av, want_av) != 0) {
		kube_status(o, 400, "BadRequest", NULL,
			    "the object is %s %s; %s takes apiVersion %s, kind %s",
			    av ? av : "(no apiVersion)", kind ? kind : "(no kind)", q->res->plural,
			    want_av, q->res->kind);
		goto out;
	}
	md = json_object_get(obj, "metadata");
	if (!json_is_object(md)) {
		md = json_object();
		json_object_set_new(obj, "metadata", md);
	}
	ns = drv_json_str(md, "namespace");
	if (ns && q->ns[0] && strcmp(ns, q->ns) != 0) {
		kube_status(o, 400, "BadRequest", NULL,
			    "the namespace of the provided object (%s) does not match the namespace "
			    "sent on the request (%s)", ns, q->ns);
		goto out;
	}
	if (!ns)
		json_object_set_new(md, "namespace", json_string(q->ns[0] ? q->ns : "default"));
	ns = drv_json_str(md, "namespace");
	name = drv_json_str(md, "name");
	if ((!name || !*name) && drv_json_str(md, "generateName")) {
		char sfx[8];

		kube_new_uid(uid, sizeof(uid));
		snprintf(sfx, sizeof(sfx), "%.5s", uid);
		snprintf(nbuf, sizeof(nbuf), "%.240s%s", drv_json_str(md, "generateName"), sfx);
		json_object_set_new(md, "name", json_string(nbuf));
		name = drv_json_str(md, "name");
	}
	if (!name || !*name) {
		drv_diag_err(&d, 0, 0, "metadata.name", "Required value: name or generateName is required");
		invalid(o, q, "", &d);
		goto out;
	}
	snprintf(nbuf, sizeof(nbuf), "%s", name);
	if (!kube_check_unknown(r, o, q->res->type, obj))
		goto out;
	kube_new_uid(uid, sizeof(uid));
	set_annotation(obj, KUBE_ANN_API, "kubernetes-api");
	set_annotation(obj, KUBE_ANN_UID, uid);
	if (manager) {
		json_t *mf = json_object();
		char *t;

		json_object_set_new(mf, manager, applied_fields(obj));
		t = json_dumps(mf, JSON_COMPACT | JSON_SORT_KEYS);
		set_annotation(obj, KUBE_ANN_MANAGED, t);
		free(t);
		json_decref(mf);
	}
	text = json_dumps(obj, JSON_COMPACT);
	if (drv_spec_parse_buffer(text, strlen(text), "object", &spec, &d) < 0 || d.nerrors) {
		if (!d.nerrors)
			drv_diag_err(&d, 0, 0, "", "not a job drover can run");
		invalid(o, q, nbuf, &d);
		goto out;
	}
	if (drv_job_tasks(&spec.job) <= 0) {
		drv_diag_err(&d, 0, 0, "spec", "the object has no tasks");
		invalid(o, q, nbuf, &d);
		goto out;
	}
	for (int32_t i = 0; i < spec.nwarnings; i++)
		kube_warn(o, spec.warnings[i]);
	if (srv_job_own(s, q->c, &spec, o) < 0) {
		kube_status_from_error(o);
		goto out;
	}
	srv_set_str(&spec.job.name, nbuf);   /* metadata.name, kept */
	pthread_mutex_lock(&s->mu);
	if (live_name_taken(s, ns, nbuf, q->res)) {
		pthread_mutex_unlock(&s->mu);
		kube_status(o, 409, "AlreadyExists",
			    json_pack("{s:s,s:s}", "name", nbuf, "kind", q->res->plural),
			    "%s \"%s\" already exists", q->res->plural, nbuf);
		goto out;
	}
	{
		struct srv_job *j = srv_job_new(&spec);
		json_t *out;

		if (kube_dry_run(r)) {
			j->state = J_PENDING;
			j->submit_time = drv_wall_s();
			j->reason = drv_strdup("dry run: not created");
			out = batch ? kube_workload_json(s, q->res, j, s->last_seq, false)
				    : kube_pod_json(s, j, 0, s->last_seq, false);
			pthread_mutex_unlock(&s->mu);
			srv_job_free(j);
			kube_reply(o, 201, out);
			goto out;
		}
		{
			/* a batch/v1 Job: its parent and one job per pod (elements.c) */
			struct srv_job **js = NULL;
			size_t n = j->spec.job.ngroups ? srv_elements_expand(s, &j->spec, &js) : 0;
			uint64_t ticket;

			if (n) {
				srv_job_free(j);
				j = js[0];
			} else {
				js = drv_calloc(1, sizeof(*js));
				js[0] = j;
				n = 1;
			}
			ticket = srv_jobs_add(s, js, n, q->c->user);
			drv_free(js);

			out = batch ? kube_workload_json(s, q->res, j, s->last_seq + 1, false)
				    : kube_pod_json(s, j, 0, s->last_seq + 1, false);
			kube_reply(o, 201, out);
			srv_reply_when_durable(s, r, ticket, "the object was not created: ");
		}
	}
	pthread_mutex_unlock(&s->mu);
out:
	free(text);
	json_decref(obj);
	drv_diags_release(&d);
	drv_jobspec_release(&spec);
	return 0;
}

int kube_create(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		struct drv_http_resp *o)
{
	size_t len;
	const char *body = drv_http_req_body(r, &len);
	json_error_t je;

	return create_obj(s, q, r, o, json_loadb(body, len, 0, &je), NULL, &je);
}

/* --- server-side apply -------------------------------------------------------- */

/* The fields server-side apply tracks: whole top-level fields. */
static const char *const ssa_fields[] = { "metadata.labels", "metadata.annotations", "spec", NULL };

static json_t *field_at(const json_t *obj, const char *f)
{
	return strncmp(f, "metadata.", 9) == 0
		       ? json_object_get(json_object_get(obj, "metadata"), f + 9)
		       : json_object_get(obj, f);
}

/* The tracked fields obj sets (new array). */
static json_t *applied_fields(const json_t *obj)
{
	json_t *a = json_array();
	json_t *an = json_object_get(json_object_get(obj, "metadata"), "annotations");
	const char *k;
	json_t *v;
	bool user_ann = false;

	json_object_foreach(an, k, v)
		user_ann |= strncmp(k, "drover.dev/", 11) != 0;
	for (int i = 0; ssa_fields[i]; i++)
		if (field_at(obj, ssa_fields[i]) &&
		    (strcmp(ssa_fields[i], "metadata.annotations") != 0 || user_ann))
			json_array_append_new(a, json_string(ssa_fields[i]));
	return a;
}

static bool has_str(const json_t *arr, const char *s)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e)
		if (json_is_string(e) && strcmp(json_string_value(e), s) == 0)
			return true;
	return false;
}

static void del_str(json_t *arr, const char *s)
{
	for (size_t i = json_array_size(arr); i-- > 0;)
		if (strcmp(json_string_value(json_array_get(arr, i)), s) == 0)
			json_array_remove(arr, i);
}

/* A map of obj's metadata without the keys drover sets itself. */
static json_t *user_keys(const json_t *obj, const char *field)
{
	json_t *m = json_object_get(json_object_get(obj, "metadata"), field);
	json_t *c = json_object();
	const char *k;
	json_t *v;

	json_object_foreach(m, k, v)
		if (strncmp(k, "drover.dev/", 11) != 0)
			json_object_set(c, k, v);
	return c;
}

/* The managers of cur (from its annotation; new object). */
static json_t *managers_of(const json_t *cur)
{
	const char *t = drv_json_str(json_object_get(json_object_get(cur, "metadata"), "annotations"),
				     KUBE_ANN_MANAGED);
	json_t *m = t ? json_loads(t, 0, NULL) : NULL;

	return json_is_object(m) ? m : (json_decref(m), json_object());
}

/*
 * The object after manager applies body to cur: its labels, annotations
 * and spec where body has them (drover's own annotations kept), and the
 * ownership that results, in the drover.dev/managed-fields annotation.
 * changed[i] says whether field i changes; spec_changed is decided later,
 * by what the spec means (the caller passes it in a second call).
 */
static json_t *ssa_merge(const json_t *cur, const json_t *body, const char *manager,
			 bool spec_changed, bool force, json_t **conflicts)
{
	json_t *out = json_deep_copy(cur), *md = json_object_get(out, "metadata");
	json_t *mf = managers_of(cur), *mine = json_object_get(mf, manager);
	json_t *fields = applied_fields(body);
	char *t;

	*conflicts = json_array();
	if (!json_is_array(mine)) {
		mine = json_array();
		json_object_set_new(mf, manager, mine);
	}
	for (int i = 0; ssa_fields[i]; i++) {
		const char *f = ssa_fields[i];
		bool sets = has_str(fields, f), changed;
		const char *k;
		json_t *v;

		if (strcmp(f, "spec") == 0) {
			changed = sets && spec_changed;
			if (sets)
				json_object_set(out, "spec", json_object_get(body, "spec"));
		} else {
			json_t *cv = user_keys(cur, f + 9), *bv = user_keys(body, f + 9);
			json_t *nv;

			if (!sets && has_str(mine, f))
				json_object_clear(bv);   /* no longer applied: removed */
			changed = (sets || has_str(mine, f)) && !json_equal(cv, bv);
			nv = json_object_get(md, f + 9);
			if (sets || has_str(mine, f)) {
				json_t *keep = json_object();

				json_object_foreach(nv, k, v)
					if (strncmp(k, "drover.dev/", 11) == 0)
						json_object_set(keep, k, v);
				json_object_update(keep, bv);
				json_object_set_new(md, f + 9, keep);
			}
			json_decref(cv);
			json_decref(bv);
		}
		if (!sets) {
			del_str(mine, f);
			continue;
		}
		json_object_foreach(mf, k, v) {
			if (strcmp(k, manager) == 0 || !has_str(v, f) || !changed)
				continue;
			if (force)
				del_str(v, f);
			else
				json_array_append_new(*conflicts,
						      json_pack("{s:s,s:o,s:o}", "type",
								"FieldManagerConflict", "message",
								json_sprintf("conflict with \"%s\"", k),
								"field", json_sprintf(".%s", f)));
		}
		if (!has_str(mine, f))
			json_array_append_new(mine, json_string(f));
	}
	{
		void *it, *tmp;
		const char *k;
		json_t *v;

		json_object_foreach_safe(mf, tmp, k, v)
			if (!json_array_size(v))
				json_object_del(mf, k);
		(void)it;
	}
	t = json_dumps(mf, JSON_COMPACT | JSON_SORT_KEYS);
	set_annotation(out, KUBE_ANN_MANAGED, t);
	free(t);
	json_decref(mf);
	json_decref(fields);
	return out;
}

/* A body as JSON, or else as YAML (server-side apply sends either). */
json_t *kube_load_body(const char *body, size_t len, json_error_t *je)
{
	json_t *j = json_loadb(body, len, 0, je);
	struct drv_diags d;
	struct fy_document *doc = NULL;

	if (j || len == 0)
		return j;
	drv_diags_init(&d, "body");
	if (drv_yaml_load(body, len, &d, &doc) == 0 && doc) {
		j = drv_yaml_node_json(fy_document_root(doc));
		fy_document_destroy(doc);
	}
	drv_diags_release(&d);
	return j;
}

/* --- patches ---------------------------------------------------------------- */

json_t *kube_merge_patch(const json_t *target, const json_t *patch)
{
	json_t *res;
	const char *k;
	json_t *v;

	if (!json_is_object(patch))
		return json_deep_copy(patch);
	res = json_is_object(target) ? json_deep_copy(target) : json_object();
	json_object_foreach((json_t *)patch, k, v) {
		if (json_is_null(v)) {
			json_object_del(res, k);
		} else {
			json_t *m = kube_merge_patch(json_object_get(res, k), v);

			json_object_set_new(res, k, m);
		}
	}
	return res;
}

/* The merge key of a list field under strategic merge (Kubernetes' types), or NULL: replace. */
static const char *merge_key(const char *field)
{
	static const char *const t[][2] = {
		{ "containers", "name" }, { "initContainers", "name" },
		{ "ephemeralContainers", "name" }, { "env", "name" }, { "volumes", "name" },
		{ "imagePullSecrets", "name" }, { "ports", "containerPort" },
		{ "volumeMounts", "mountPath" }, { "volumeDevices", "devicePath" },
		{ "conditions", "type" }, { "ownerReferences", "uid" }, { "hostAliases", "ip" },
		{ "resourceClaims", "name" },
	};

	for (size_t i = 0; i < DRV_ARRAY_SIZE(t); i++)
		if (strcmp(t[i][0], field) == 0)
			return t[i][1];
	return NULL;
}

static bool same_key(const json_t *a, const json_t *b, const char *key)
{
	const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);

	return x && y && json_equal(x, y);
}

static json_t *merge_list(const json_t *target, const json_t *patch, const char *key,
			  const char *path)
{
	json_t *res = json_is_array(target) ? json_deep_copy(target) : json_array();
	size_t i, k;
	json_t *pe, *te;

	json_array_foreach(patch, i, pe) {
		const char *dir = drv_json_str(pe, "$patch");
		bool found = false;

		if (!json_is_object(pe)) {
			json_array_append(res, pe);
			continue;
		}
		json_array_foreach(res, k, te) {
			if (!same_key(te, pe, key))
				continue;
			found = true;
			if (dir && strcmp(dir, "delete") == 0)
				json_array_remove(res, k);
			else
				json_array_set_new(res, k, kube_strategic_patch(te, pe, path));
			break;
		}
		if (!found && !(dir && strcmp(dir, "delete") == 0))
			json_array_append_new(res, kube_strategic_patch(NULL, pe, path));
	}
	return res;
}

json_t *kube_strategic_patch(const json_t *target, const json_t *patch, const char *path)
{
	json_t *res, *retain;
	const char *k, *dir;
	json_t *v;

	if (!json_is_object(patch))
		return json_deep_copy(patch);
	dir = drv_json_str(patch, "$patch");
	if (dir && strcmp(dir, "replace") == 0) {
		res = json_deep_copy(patch);
		json_object_del(res, "$patch");
		return res;
	}
	res = json_is_object(target) ? json_deep_copy(target) : json_object();
	json_object_foreach((json_t *)patch, k, v) {
		const char *mk;

		if (k[0] == '$') {
			if (strncmp(k, "$deleteFromPrimitiveList/", 25) == 0) {
				json_t *l = json_object_get(res, k + 25);
				size_t i, x;
				json_t *e, *d;

				json_array_foreach(v, i, d)
					for (x = json_array_size(l); x-- > 0;)
						if ((e = json_array_get(l, x)) && json_equal(e, d))
							json_array_remove(l, x);
			}
			continue;   /* $setElementOrder, $retainKeys (below), $patch */
		}
		if (json_is_null(v))
			json_object_del(res, k);
		else if (json_is_object(v))
			json_object_set_new(res, k, kube_strategic_patch(json_object_get(res, k), v, k));
		else if (json_is_array(v) && (mk = merge_key(k)) != NULL)
			json_object_set_new(res, k, merge_list(json_object_get(res, k), v, mk, k));
		else if (json_is_array(v) && strcmp(k, "finalizers") == 0) {
			json_t *l = json_object_get(res, k);
			size_t i;
			json_t *e;

			if (!json_is_array(l)) {
				l = json_array();
				json_object_set_new(res, k, l);
			}
			json_array_foreach(v, i, e) {
				bool have = false;
				size_t x;
				json_t *f;

				json_array_foreach(l, x, f)
					have |= json_equal(f, e);
				if (!have)
					json_array_append(l, e);
			}
		} else
			json_object_set(res, k, v);
	}
	retain = json_object_get(patch, "$retainKeys");
	if (json_is_array(retain)) {
		void *it = json_object_iter(res);

		while (it) {
			const char *key = json_object_iter_key(it);
			bool keep = false;
			size_t i;
			json_t *e;

			json_array_foreach(retain, i, e)
				keep |= json_is_string(e) && strcmp(json_string_value(e), key) == 0;
			it = json_object_iter_next(res, it);
			if (!keep)
				json_object_del(res, key);
		}
	}
	(void)path;
	return res;
}

static void set_labels(struct drv_label **l, int32_t *n, const json_t *m)
{
	const char *k;
	json_t *v;

	for (int32_t i = 0; i < *n; i++) {
		drv_free((*l)[i].key);
		drv_free((*l)[i].value);
	}
	drv_free(*l);
	*l = NULL;
	*n = 0;
	if (!json_object_size(m))
		return;
	*l = drv_calloc(json_object_size(m), sizeof(**l));
	json_object_foreach((json_t *)m, k, v) {
		(*l)[*n].key = drv_strdup(k);
		(*l)[*n].value = drv_strdup(json_is_string(v) ? json_string_value(v) : "");
		(*n)++;
	}
}

/* The canonical job of spec as compared across a patch: what drover acts
 * on, without identity, metadata and what it keeps without acting on. */
static char *spec_key(const json_t *canon)
{
	json_t *c = json_deep_copy(canon);
	static const char *const drop[] = { "id", "user", "tenant", "submitTime", "labels",
					    "annotations", "ignored", "warnings", "source", NULL };
	char *k;

	json_t *groups = json_object_get(c, "groups"), *g;
	size_t gi;

	for (int i = 0; drop[i]; i++)
		json_object_del(c, drop[i]);
	/* an imagePullPolicy equal to Kubernetes' default for the image is the
	 * same as none: the API shows the default, and kubectl replace sends
	 * back what it read */
	json_array_foreach(groups, gi, g) {
		const char *pp = drv_json_str(g, "imagePullPolicy");

		if (pp && strcmp(pp, drv_pull_policy_default(drv_json_str(g, "image"))) == 0)
			json_object_del(g, "imagePullPolicy");
	}
	k = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(c);
	return k;
}

/* patched as a manifest to parse: what the server renders and the
 * manifest reader would only keep (status, server-set metadata) left out. */
static char *manifest_text(const json_t *patched, const json_t *cur)
{
	json_t *m = json_deep_copy(patched), *md = json_object_get(m, "metadata");
	const json_t *can = json_object_get(json_object_get(cur, "metadata"), "annotations");
	static const char *const drop[] = { "resourceVersion", "uid", "creationTimestamp",
					    "generation", "deletionTimestamp", "managedFields",
					    "deletionGracePeriodSeconds", NULL };
	char *t;

	json_object_del(m, "status");
	for (int i = 0; drop[i]; i++)
		json_object_del(md, drop[i]);
	if (json_object_get(can, KUBE_ANN_API)) {
		set_annotation(m, KUBE_ANN_API, drv_json_str(can, KUBE_ANN_API));
		if (drv_json_str(can, KUBE_ANN_UID))
			set_annotation(m, KUBE_ANN_UID, drv_json_str(can, KUBE_ANN_UID));
	}
	{
		json_t *l = json_object_get(md, "labels");

		json_object_del(l, KUBE_LABEL_JOB);
		json_object_del(l, KUBE_LABEL_RANK);
	}
	t = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	return t;
}

static void forbidden(struct drv_http_resp *o, const struct kube_req *q, const char *field,
		      const char *why)
{
	kube_status(o, 422, "Invalid",
		    json_pack("{s:s,s:s,s:[{s:s,s:s,s:s}]}", "name", q->name, "kind", q->res->kind,
			      "causes", "reason", "FieldValueForbidden", "message", why, "field",
			      field),
		    "%s \"%s\" is invalid: %s: Forbidden: %s", q->res->kind, q->name, field, why);
}

/* Replaces pending job j's spec by spec (taken), as drover apply does. */
static void replace_spec(struct drv_server *s, struct srv_job *j, struct drv_jobspec *spec)
{
	spec->job.id = j->id;
	spec->job.submit_time = j->submit_time;
	if (j->in_sched)
		drv_sched_finish(s->sched, j->id, drv_wall_s());
	drv_jobspec_release(&j->spec);
	j->spec = *spec;
	drv_jobspec_init(spec);
	json_decref(j->canon);
	j->canon = drv_jobspec_to_json(&j->spec);
	j->in_sched = false;
	srv_job_queue(s, j);
	srv_job_transition(s, j, J_PENDING, "spec updated through the Kubernetes API");
	srv_sched_kick(s);
}

static void copy_labels(struct drv_label **dst, int32_t *nd, const struct drv_label *src, int32_t n)
{
	json_t *m = json_object();

	for (int32_t i = 0; i < n; i++)
		json_object_set_new(m, src[i].key, json_string(src[i].value ? src[i].value : ""));
	set_labels(dst, nd, m);
	json_decref(m);
}

static json_t *labels_json(const struct drv_label *l, int32_t n)
{
	json_t *m = json_object();

	for (int32_t i = 0; i < n; i++)
		json_object_set_new(m, l[i].key, json_string(l[i].value ? l[i].value : ""));
	return m;
}

static bool labels_equal(const struct drv_label *a, int32_t na, const struct drv_label *b, int32_t nb)
{
	json_t *x = labels_json(a, na), *y = labels_json(b, nb);
	bool eq = json_equal(x, y);

	json_decref(x);
	json_decref(y);
	return eq;
}

/*
 * A batch/v1 Job's spec as patched (spec, taken): of its spec only
 * suspend and parallelism change, in any state (srv_elements_update;
 * suspending stops the pods that run); anything else is 422. Caller holds
 * s->mu.
 */
static void patch_job(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		      struct drv_http_resp *o, struct srv_job *j, struct drv_jobspec *spec,
		      json_t *patched, int32_t rank, bool deleted)
{
	char why[320];
	json_t *canon;

	spec->job.id = j->id;
	spec->job.submit_time = j->submit_time;
	srv_set_str(&spec->job.user, j->spec.job.user);
	srv_set_str(&spec->job.tenant, j->spec.job.tenant);
	srv_set_str(&spec->job.name, j->spec.job.name);
	canon = drv_jobspec_to_json(spec);
	if (kube_dry_run(r)) {
		json_decref(canon);
		kube_reply(o, 200, json_incref(patched));
		return;
	}
	if (srv_elements_update(s, j, spec, canon, why, sizeof(why)) < 0) {
		json_decref(canon);
		forbidden(o, q, "spec", why);
		return;
	}
	kube_reply(o, 200, render(s, q, j, rank, deleted));
	srv_reply_when_durable(s, r, srv_enqueue(s), "the change is not on disk yet: ");
}

int kube_patch(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	       struct drv_http_resp *o, bool replace)
{
	const char *ct = drv_http_req_header(r, "Content-Type");
	size_t len;
	const char *body = drv_http_req_body(r, &len);
	json_t *patch = NULL, *cur = NULL, *patched = NULL;
	struct kube_jobs js = { 0 };
	struct srv_job *j;
	int32_t rank = 0;
	bool deleted = false, smp = false, ssa = false, spec_touched, locked = false;
	const char *manager = drv_http_req_query(r, "fieldManager");
	const char *force = drv_http_req_query(r, "force");
	json_t *conflicts = NULL;
	struct drv_jobspec spec;
	struct drv_diags d;
	char *text = NULL, *k1 = NULL, *k2 = NULL;
	json_error_t je;

	drv_jobspec_init(&spec);
	drv_diags_init(&d, "object");
	if (q->sub[0]) {
		kube_status(o, 405, "MethodNotAllowed", NULL,
			    "%s/%s: drover sets the status itself", q->res->plural, q->sub);
		goto out;
	}
	if (!replace) {
		if (ct && strncasecmp(ct, "application/strategic-merge-patch+json", 38) == 0)
			smp = true;
		else if (ct && strncasecmp(ct, "application/apply-patch+yaml", 28) == 0)
			ssa = true;
		else if (!ct || strncasecmp(ct, "application/merge-patch+json", 28) != 0) {
			kube_status(o, 415, "UnsupportedMediaType", NULL,
				    "Content-Type %s: drover takes application/merge-patch+json, "
				    "application/strategic-merge-patch+json and "
				    "application/apply-patch+yaml (no JSON patch)", ct ? ct : "(none)");
			goto out;
		}
	}
	if (ssa && (!manager || !*manager)) {
		kube_status(o, 400, "BadRequest", NULL,
			    "PATCH with Content-Type application/apply-patch+yaml needs fieldManager");
		goto out;
	}
	patch = ssa ? kube_load_body(body, len, &je) : json_loadb(body, len, 0, &je);
	if (!json_is_object(patch)) {
		kube_status(o, 400, "BadRequest", NULL, "the body is not a JSON object: %s",
			    patch ? "" : je.text);
		goto out;
	}
	pthread_mutex_lock(&s->mu);
	locked = true;
	kube_jobs_collect(s, &js);
	j = find(s, q, &js, &rank, &deleted);
	if (!j && ssa) {
		/* server-side apply creates what is not there */
		const char *nm = drv_json_str(json_object_get(patch, "metadata"), "name");

		kube_jobs_release(&js);
		pthread_mutex_unlock(&s->mu);
		locked = false;
		if (!nm || strcmp(nm, q->name) != 0) {
			kube_status(o, 400, "BadRequest", NULL,
				    "the name of the object (%s) does not match the name on the URL (%s)",
				    nm ? nm : "none", q->name);
			goto out;
		}
		create_obj(s, q, r, o, patch, manager, &je);
		patch = NULL;   /* taken */
		goto out;
	}
	if (!j) {
		not_found(o, q);
		goto out;
	}
	cur = render(s, q, j, rank, deleted);
	patched = replace ? json_deep_copy(patch)
		: ssa ? ssa_merge(cur, patch, manager, false, true, &conflicts)
		: smp ? kube_strategic_patch(cur, patch, "") : kube_merge_patch(cur, patch);
	json_decref(conflicts);
	conflicts = NULL;
	if (!kube_check_unknown(r, o, q->res->type, patched))
		goto out;
	if (!json_equal(json_object_get(json_object_get(cur, "metadata"), "name"),
			json_object_get(json_object_get(patched, "metadata"), "name"))) {
		forbidden(o, q, "metadata.name", "field is immutable");
		goto out;
	}
	/* what the patched object means, as a job */
	text = manifest_text(patched, cur);
	if (drv_spec_parse_buffer(text, strlen(text), "object", &spec, &d) < 0 || d.nerrors) {
		if (!d.nerrors)
			drv_diag_err(&d, 0, 0, "", "not a job drover can run");
		invalid(o, q, q->name, &d);
		goto out;
	}
	spec_touched = replace || json_object_get(patch, "spec") != NULL;
	if (spec_touched) {
		k1 = spec_key(j->canon);
		json_t *c = drv_jobspec_to_json(&spec);

		k2 = spec_key(c);
		json_decref(c);
		spec_touched = strcmp(k1, k2) != 0;
		if (spec_touched && getenv("DROVER_KUBE_DEBUG"))
			drv_log(&s->log, "kubernetes api: %s: spec %s -> %s", q->name, k1, k2);
	}
	if (ssa) {
		/* ownership, now that what the spec means is known */
		json_decref(patched);
		patched = ssa_merge(cur, patch, manager, spec_touched,
				    force && strcmp(force, "true") == 0, &conflicts);
		if (json_array_size(conflicts)) {
			char msg[1024] = "";
			size_t l = 0, i;
			json_t *c;

			json_array_foreach(conflicts, i, c)
				l += (size_t)snprintf(msg + l, l < sizeof(msg) ? sizeof(msg) - l : 0,
						      "%s%s: %s", l ? ", " : "", drv_json_str(c, "message"),
						      drv_json_str(c, "field"));
			kube_status(o, 409, "Conflict",
				    json_pack("{s:s,s:s,s:O}", "name", q->name, "kind", q->res->plural,
					      "causes", conflicts),
				    "Apply failed with %zu conflict%s: %s", json_array_size(conflicts),
				    json_array_size(conflicts) == 1 ? "" : "s", msg);
			goto out;
		}
		/* the annotation of ownership comes with the labels and annotations */
		drv_jobspec_release(&spec);
		drv_jobspec_init(&spec);
		drv_diags_release(&d);
		drv_diags_init(&d, "object");
		free(text);
		text = manifest_text(patched, cur);
		if (drv_spec_parse_buffer(text, strlen(text), "object", &spec, &d) < 0 || d.nerrors) {
			invalid(o, q, q->name, &d);
			goto out;
		}
	}
	if (spec_touched && j->par && !j->par->array && srv_job_get(s, j->id) == j) {
		/* a batch/v1 Job: suspend and parallelism change in any state */
		patch_job(s, q, r, o, j, &spec, patched, rank, deleted);
		goto out;
	}
	if (spec_touched && (srv_job_get(s, j->id) != j || j->state != J_PENDING || j->holding)) {
		char why[200];

		snprintf(why, sizeof(why), "the job is %s: only metadata.labels and "
			 "metadata.annotations may change (docs/kubernetes.md)",
			 srv_jstate_name(j->state));
		forbidden(o, q, "spec", why);
		goto out;
	}
	if (!spec_touched && labels_equal(spec.labels, spec.nlabels, j->spec.labels, j->spec.nlabels) &&
	    labels_equal(spec.annotations, spec.nannotations, j->spec.annotations,
			 j->spec.nannotations)) {
		kube_reply(o, 200, json_incref(cur));
		goto out;
	}
	if (kube_dry_run(r)) {
		kube_reply(o, 200, json_incref(patched));
		goto out;
	}
	if (srv_job_get(s, j->id) != j) {
		forbidden(o, q, "metadata", "the job has finished; its record is final");
		goto out;
	}
	if (spec_touched) {
		if (srv_job_own(s, q->c, &spec, o) < 0) {
			kube_status_from_error(o);
			goto out;
		}
		srv_set_str(&spec.job.name, j->spec.job.name);
		replace_spec(s, j, &spec);
	} else {
		copy_labels(&j->spec.labels, &j->spec.nlabels, spec.labels, spec.nlabels);
		copy_labels(&j->spec.annotations, &j->spec.nannotations, spec.annotations,
			    spec.nannotations);
		json_decref(j->canon);
		j->canon = drv_jobspec_to_json(&j->spec);
		srv_queue_event(s, "job", j, NULL, srv_jstate_name(j->state),
				srv_jstate_name(j->state),
				"metadata changed through the Kubernetes API");
		srv_job_mark(s, j);
	}
	kube_reply(o, 200, render(s, q, j, rank, deleted));
	srv_reply_when_durable(s, r, srv_enqueue(s), "the change is not on disk yet: ");
out:
	if (locked) {
		kube_jobs_release(&js);
		pthread_mutex_unlock(&s->mu);
	}
	free(text);
	free(k1);
	free(k2);
	drv_diags_release(&d);
	drv_jobspec_release(&spec);
	json_decref(cur);
	json_decref(patched);
	json_decref(patch);
	json_decref(conflicts);
	return 0;
}

/* --- delete ------------------------------------------------------------------ */

int kube_delete(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		struct drv_http_resp *o)
{
	size_t len;
	const char *body = drv_http_req_body(r, &len);
	json_t *opts = len ? json_loadb(body, len, 0, NULL) : NULL;
	int64_t grace = -1;
	const char *gq = drv_http_req_query(r, "gracePeriodSeconds");
	struct kube_jobs js;
	struct srv_job *j;
	int32_t rank = 0;
	bool deleted = false, dry = kube_dry_run(r);
	uint64_t id;
	char why[300];

	if (gq)
		grace = strtoll(gq, NULL, 10);
	else if (json_is_integer(json_object_get(opts, "gracePeriodSeconds")))
		grace = json_integer_value(json_object_get(opts, "gracePeriodSeconds"));
	if (json_is_array(json_object_get(opts, "dryRun")) &&
	    json_array_size(json_object_get(opts, "dryRun")))
		dry = true;
	pthread_mutex_lock(&s->mu);
	kube_jobs_collect(s, &js);
	j = find(s, q, &js, &rank, &deleted);
	if (!j) {
		not_found(o, q);
		kube_jobs_release(&js);
		goto out;
	}
	id = j->id;
	if (dry) {
		kube_reply(o, 200, render(s, q, j, rank, true));
		kube_jobs_release(&js);
		goto out;
	}
	kube_jobs_release(&js);
	if (kube_job_mark_deleted(s, id) < 0) {
		kube_status(o, 503, "ServiceUnavailable", NULL,
			    "the state store cannot write: the object is not deleted");
		goto out;
	}
	j = srv_job_get(s, id);
	if (j && !srv_jstate_final(j->state)) {
		snprintf(why, sizeof(why), "deleted through the Kubernetes API by %s", q->c->user);
		if (grace >= 0 && j->spec.run)
			for (int32_t g = 0; g < j->spec.job.ngroups; g++)
				j->spec.run[g].termination_grace_s = grace;
		j->requeue_on_stop = false;
		j->requeue_quiet = false;
		srv_job_transition(s, j, J_CANCELLED, why);
		if (j->holding) {
			srv_job_stop_tasks(s, j, "deleted");
		} else if (j->in_sched) {
			drv_sched_finish(s->sched, j->id, drv_wall_s());
			j->in_sched = false;
			srv_sched_kick(s);
		}
		kube_reply(o, 200, render(s, q, j, rank, true));
		srv_reply_when_durable(s, r, srv_enqueue(s), "the delete is not on disk yet: ");
		drv_http_wake(s->http);
		goto out;
	}
	drv_http_wake(s->http);
	kube_status(o, 200, "Deleted", json_pack("{s:s,s:s}", "name", q->name, "kind", q->res->plural),
		    "%s \"%s\" deleted", q->res->plural, q->name);
	{
		json_t *st = json_loadb(o->body, o->len, 0, NULL);

		json_object_set_new(st, "status", json_string("Success"));
		json_object_del(st, "reason");
		kube_reply(o, 200, st);
	}
out:
	pthread_mutex_unlock(&s->mu);
	json_decref(opts);
	return 0;
}
