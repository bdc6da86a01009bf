/*
 * kube_config.c: v1 Secrets and ConfigMaps (docs/kubernetes.md, "Secrets
 * and ConfigMaps"): kept as they are, in memory and in the store's kobjs
 * table (the store file is the controller's alone, mode 0600), served on
 * the Kubernetes API (create, get, list, patch, update, delete), and
 * resolved when a task is launched: a pod's valueFrom.secretKeyRef and
 * configMapKeyRef and envFrom into its env, its secret and configMap
 * volumes into files the agent writes (struct drv_proto_volume).
 *
 * Who sees what: an object belongs to the user who made it; that user and
 * admins see it; a job resolves only objects of its own namespace made by
 * its own user. A pod whose reference (not optional) names an object that
 * is not there waits, pending with reason CreateContainerConfigError, and
 * goes to the scheduler when the object is made.
 *
 * Values are never logged, never in an event, never in drover describe
 * (drv_env_shown: "<secret>"). Everything here runs under s->mu; writes
 * reach the store (under store_mu) before the reply.
 */
#include "kube_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KOBJ_MAX_BYTES (1 << 20)   /* data of one object, as Kubernetes */

/* --- strings an assignment owns --------------------------------------------- */

const char *srv_strs_add(struct srv_strs *ss, char *str)
{
	DRV_GROW(ss->v, ss->n + 1, ss->cap);
	ss->v[ss->n++] = str;
	return str;
}

void srv_strs_release(struct srv_strs *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		drv_free(ss->v[i]);
	drv_free(ss->v);
	memset(ss, 0, sizeof(*ss));
}

/* --- the objects ------------------------------------------------------------ */

static struct srv_kobj *kobj_find(struct drv_server *s, const char *kind, const char *ns,
				  const char *name)
{
	for (size_t i = 0; i < s->nkobjs; i++) {
		struct srv_kobj *k = &s->kobjs[i];

		if (strcmp(k->kind, kind) == 0 && strcmp(k->ns, ns) == 0 &&
		    strcmp(k->name, name) == 0)
			return k;
	}
	return NULL;
}

static int64_t doc_rv(const json_t *doc)
{
	const char *rv = drv_json_str(json_object_get(doc, "metadata"), "resourceVersion");

	return rv ? strtoll(rv, NULL, 10) : 0;
}

static void kobj_set(struct drv_server *s, const char *kind, const char *ns, const char *name,
		     const char *owner, json_t *doc)
{
	struct srv_kobj *k = kobj_find(s, kind, ns, name);

	if (!k) {
		DRV_GROW(s->kobjs, s->nkobjs + 1, s->kobjcap);
		k = &s->kobjs[s->nkobjs++];
		*k = (struct srv_kobj){ drv_strdup(kind), drv_strdup(ns), drv_strdup(name),
					drv_strdup(owner), NULL };
	}
	json_decref(k->doc);
	k->doc = doc;
	if (doc_rv(doc) > s->kobj_rv)
		s->kobj_rv = doc_rv(doc);
}

static void kobj_drop(struct drv_server *s, struct srv_kobj *k)
{
	drv_free(k->kind);
	drv_free(k->ns);
	drv_free(k->name);
	drv_free(k->owner);
	json_decref(k->doc);
	*k = s->kobjs[--s->nkobjs];
}

int srv_kobj_restore(const struct drv_store_kobj *o, void *cls)
{
	struct drv_server *s = cls;
	json_t *doc = json_loads(o->doc, 0, NULL);

	if (!json_is_object(doc)) {
		/* never the object itself in the log: it may hold a Secret's values */
		drv_log(&s->log, "store: %s %s/%s is not a JSON object; skipped", o->kind, o->ns,
			o->name);
		json_decref(doc);
		return 0;
	}
	kobj_set(s, o->kind, o->ns, o->name, o->owner, doc);
	return 0;
}

void srv_kobjs_free(struct drv_server *s)
{
	while (s->nkobjs)
		kobj_drop(s, &s->kobjs[s->nkobjs - 1]);
	drv_free(s->kobjs);
	s->kobjs = NULL;
	s->kobjcap = 0;
}

/* --- what jobs use ------------------------------------------------------------ */

/* The object a job of user in ns may use, or NULL. */
static const struct srv_kobj *usable(struct drv_server *s, const char *kind, const char *ns,
				     const char *user, const char *name)
{
	const struct srv_kobj *k = kobj_find(s, kind, ns, name);

	return k && strcmp(k->owner, user ? user : "") == 0 ? k : NULL;
}

/* The value of key in k (decoded, new string; NULL when absent). */
static char *kobj_value(const struct srv_kobj *k, const char *key)
{
	const json_t *data = json_object_get(k->doc, "data");
	const char *v = drv_json_str(data, key);
	unsigned char *b;
	size_t n;

	if (strcmp(k->kind, "ConfigMap") == 0) {
		if (v)
			return drv_strdup(v);
		v = drv_json_str(json_object_get(k->doc, "binaryData"), key);
	}
	if (!v || drv_base64_decode(v, &b, &n) < 0)
		return NULL;
	return (char *)b;   /* NUL-terminated; an env value ends at its first NUL */
}

static bool has_key(const struct srv_kobj *k, const char *key)
{
	return drv_json_str(json_object_get(k->doc, "data"), key) ||
	       drv_json_str(json_object_get(k->doc, "binaryData"), key);
}

/* The reference {name, key, optional} of kind kind missing for j: its
 * sentence in why. */
static bool ref_missing(struct drv_server *s, const struct srv_job *j, const char *kind,
			const json_t *ref, const char *key, const char *what, char *why, size_t n)
{
	const char *name = drv_json_str(ref, "name");
	const struct srv_kobj *k;

	if (!name || json_is_true(json_object_get(ref, "optional")))
		return false;
	k = usable(s, kind, kube_job_ns(j), j->spec.job.user, name);
	if (!k) {
		snprintf(why, n, "%s: %s \"%s\" not found in namespace %s (made by %s)", what,
			 strcmp(kind, "Secret") == 0 ? "secret" : "configmap", name, kube_job_ns(j),
			 j->spec.job.user ? j->spec.job.user : "?");
		return true;
	}
	if (key && !has_key(k, key)) {
		snprintf(why, n, "%s: couldn't find key %s in %s %s/%s", what, key,
			 kind, kube_job_ns(j), name);
		return true;
	}
	return false;
}

static bool group_missing(struct drv_server *s, const struct srv_job *j,
			  const struct drv_task_run *run, char *why, size_t n)
{
	size_t i;
	json_t *e;

	for (int32_t k = 0; k < run->nenv; k++) {
		const json_t *vf = run->env[k].value_from, *ref;
		char what[300];

		if (!vf)
			continue;
		snprintf(what, sizeof(what), "env %s", run->env[k].name);
		if ((ref = json_object_get(vf, "secretKeyRef")) &&
		    ref_missing(s, j, "Secret", ref, drv_json_str(ref, "key"), what, why, n))
			return true;
		if ((ref = json_object_get(vf, "configMapKeyRef")) &&
		    ref_missing(s, j, "ConfigMap", ref, drv_json_str(ref, "key"), what, why, n))
			return true;
	}
	json_array_foreach(run->env_from, i, e) {
		const json_t *ref;

		if ((ref = json_object_get(e, "secretRef")) &&
		    ref_missing(s, j, "Secret", ref, NULL, "envFrom", why, n))
			return true;
		if ((ref = json_object_get(e, "configMapRef")) &&
		    ref_missing(s, j, "ConfigMap", ref, NULL, "envFrom", why, n))
			return true;
	}
	json_array_foreach(run->volumes, i, e) {
		const json_t *src = json_object_get(e, "secret");
		json_t *ref;
		char what[300];

		snprintf(what, sizeof(what), "volume %s", drv_json_str(e, "name"));
		if (src) {
			ref = json_pack("{s:s,s:O}", "name", drv_json_str(src, "secretName"),
					"optional", json_object_get(src, "optional")
							    ? json_object_get(src, "optional")
							    : json_false());
			if (ref_missing(s, j, "Secret", ref, NULL, what, why, n)) {
				json_decref(ref);
				return true;
			}
			json_decref(ref);
		} else if ((src = json_object_get(e, "configMap")) &&
			   ref_missing(s, j, "ConfigMap", src, NULL, what, why, n)) {
			return true;
		}
	}
	return false;
}

bool srv_kobjs_missing(struct drv_server *s, const struct srv_job *j, char *why, size_t n)
{
	if (!j->spec.run)
		return false;
	for (int32_t g = 0; g < j->spec.job.ngroups; g++)
		if (group_missing(s, j, &j->spec.run[g], why, n))
			return true;
	return false;
}

void srv_kobjs_unhold(struct drv_server *s)
{
	char why[600];

	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = srv_job_get(s, id);

		if (!j || !j->config_held || j->state != J_PENDING || srv_kobjs_missing(s, j, why,
											sizeof(why)))
			continue;
		j->config_held = false;
		srv_job_queue(s, j);
		if (!j->config_held && !j->budget_held)
			srv_job_transition(s, j, J_PENDING,
					   "the Secrets and ConfigMaps it uses are there");
		srv_sched_kick(s);
	}
}

/* --- at launch ------------------------------------------------------------------ */

static void env_add(struct drv_proto_task *a, bool *lit, const char *name, const char *value,
		    bool literal)
{
	for (size_t i = 0; i < a->nenv; i++)
		if (strcmp(a->env[i].name, name) == 0) {  /* a later one wins */
			a->env[i].value = value;
			lit[i] = literal;
			return;
		}
	a->env[a->nenv] = (struct drv_proto_kv){ name, value };
	lit[a->nenv++] = literal;
}

/* Every key of the envFrom entries' objects. */
static size_t env_from_count(struct drv_server *s, const struct srv_job *j,
			     const struct drv_task_run *run)
{
	size_t i, n = 0;
	json_t *e;

	json_array_foreach(run->env_from, i, e) {
		const json_t *ref = json_object_get(e, "secretRef");
		const char *kind = ref ? "Secret" : "ConfigMap";
		const struct srv_kobj *k;

		if (!ref)
			ref = json_object_get(e, "configMapRef");
		k = usable(s, kind, kube_job_ns(j), j->spec.job.user, drv_json_str(ref, "name"));
		if (k)
			n += json_object_size(json_object_get(k->doc, "data")) +
			     json_object_size(json_object_get(k->doc, "binaryData"));
	}
	return n;
}

static void env_from(struct drv_server *s, const struct srv_job *j, const struct drv_task_run *run,
		     struct drv_proto_task *a, bool *lit, struct srv_strs *own)
{
	size_t i;
	json_t *e;

	json_array_foreach(run->env_from, i, e) {
		const json_t *ref = json_object_get(e, "secretRef");
		const char *kind = ref ? "Secret" : "ConfigMap", *prefix = drv_json_str(e, "prefix");
		const struct srv_kobj *k;
		const char *key;
		json_t *v;

		if (!ref)
			ref = json_object_get(e, "configMapRef");
		k = usable(s, kind, kube_job_ns(j), j->spec.job.user, drv_json_str(ref, "name"));
		if (!k)
			continue;
		for (int pass = 0; pass < 2; pass++)
			json_object_foreach(json_object_get(k->doc, pass ? "binaryData" : "data"), key,
					    v) {
				char *val = kobj_value(k, key), *name;
				size_t l = strlen(key) + (prefix ? strlen(prefix) : 0) + 1;

				if (!val)
					continue;
				name = drv_malloc(l);
				snprintf(name, l, "%s%s", prefix ? prefix : "", key);
				env_add(a, lit, srv_strs_add(own, name), srv_strs_add(own, val), true);
			}
	}
}

/* valueFrom of one env entry: its value (own's), or NULL. */
static const char *value_from(struct drv_server *s, const struct srv_job *j, const json_t *vf,
			      struct srv_strs *own)
{
	const json_t *ref = json_object_get(vf, "secretKeyRef");
	const char *kind = ref ? "Secret" : "ConfigMap";
	const struct srv_kobj *k;
	char *v;

	if (!ref)
		ref = json_object_get(vf, "configMapKeyRef");
	k = usable(s, kind, kube_job_ns(j), j->spec.job.user, drv_json_str(ref, "name"));
	v = k ? kobj_value(k, drv_json_str(ref, "key")) : NULL;
	return v ? srv_strs_add(own, v) : NULL;
}

/* A volume's files: its items, else every key. */
static void volume_files(const struct srv_kobj *k, const json_t *src, bool secret,
			 struct drv_proto_volume *v, struct srv_strs *own)
{
	const json_t *items = json_object_get(src, "items");
	json_t *dm = json_object_get(src, "defaultMode");
	int64_t dmode = dm ? json_integer_value(dm) : secret ? 0600 : 0644;
	size_t n = json_array_size(items) ? json_array_size(items)
		 : json_object_size(json_object_get(k->doc, "data")) +
		   json_object_size(json_object_get(k->doc, "binaryData"));
	size_t i;
	json_t *it;

	v->files = drv_calloc(n + 1, sizeof(*v->files));
	if (secret)   /* the task's user alone: at most 0700 of the mode asked */
		dmode &= 0700;
	if (json_array_size(items)) {
		json_array_foreach(items, i, it) {
			const char *key = drv_json_str(it, "key");
			json_t *m = json_object_get(it, "mode");
			const char *d = drv_json_str(json_object_get(k->doc, "data"), key);
			const char *bd = drv_json_str(json_object_get(k->doc, "binaryData"), key);

			if (!d && !bd)
				continue;
			v->files[v->nfiles++] = (struct drv_proto_file){
				drv_json_str(it, "path"),
				m ? (secret ? json_integer_value(m) & 0700 : json_integer_value(m)) : dmode,
				secret || bd ? (d ? d : bd)
					     : srv_strs_add(own, drv_base64_encode(d, strlen(d))) };
		}
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		const char *key;
		json_t *x;

		json_object_foreach(json_object_get(k->doc, pass ? "binaryData" : "data"), key, x) {
			const char *d = json_string_value(x);

			v->files[v->nfiles++] = (struct drv_proto_file){
				key, dmode, secret || pass ? d
					    : srv_strs_add(own, drv_base64_encode(d, strlen(d))) };
		}
	}
}

static void volumes(struct drv_server *s, const struct srv_job *j, const struct drv_task_run *run,
		    struct drv_proto_task *a, struct srv_strs *own)
{
	size_t i;
	json_t *e;

	if (!json_array_size(run->volumes))
		return;
	a->volumes = drv_calloc(json_array_size(run->volumes), sizeof(*a->volumes));
	json_array_foreach(run->volumes, i, e) {
		const json_t *src = json_object_get(e, "secret");
		bool secret = src != NULL;
		const struct srv_kobj *k;
		struct drv_proto_volume *v = &a->volumes[a->nvolumes];
		json_t *ro = json_object_get(e, "readOnly");

		if (!src)
			src = json_object_get(e, "configMap");
		k = usable(s, secret ? "Secret" : "ConfigMap", kube_job_ns(j), j->spec.job.user,
			   drv_json_str(src, secret ? "secretName" : "name"));
		*v = (struct drv_proto_volume){ .name = drv_json_str(e, "name"),
						.mount_path = drv_json_str(e, "mountPath"),
						.sub_path = drv_json_str(e, "subPath"),
						.read_only = !ro || json_is_true(ro),
						.secret = secret };
		if (k)
			volume_files(k, src, secret, v, own);
		a->nvolumes++;   /* optional and missing: an empty directory */
	}
}

void srv_kobjs_task(struct drv_server *s, const struct srv_job *j,
		     const struct drv_task_run *run, struct drv_proto_task *a, size_t extra,
		     bool **lit, struct srv_strs *own)
{
	size_t cap = (size_t)run->nenv + env_from_count(s, j, run) + extra + 1;

	a->env = drv_calloc(cap, sizeof(*a->env));
	*lit = drv_calloc(cap, sizeof(**lit));
	a->nenv = 0;
	env_from(s, j, run, a, *lit, own);
	for (int32_t k = 0; k < run->nenv; k++) {
		const char *v = run->env[k].value_from ? value_from(s, j, run->env[k].value_from, own)
						       : run->env[k].value;

		if (v)
			env_add(a, *lit, run->env[k].name, v, run->env[k].value_from != NULL);
	}
	volumes(s, j, run, a, own);
}

void srv_kobjs_task_release(struct drv_proto_task *a)
{
	for (size_t i = 0; i < a->nvolumes; i++)
		drv_free(a->volumes[i].files);
	drv_free(a->volumes);
	a->volumes = NULL;
	a->nvolumes = 0;
}

/* --- the API --------------------------------------------------------------------- */

static bool is_secret(const struct kube_req *q)
{
	return strcmp(q->res->type, "Secret") == 0;
}

static bool may_see(const struct kube_req *q, const struct srv_kobj *k)
{
	return q->c && (q->c->admin || strcmp(q->c->user, k->owner) == 0);
}

void kube_config_collect(struct drv_server *s, const struct kube_req *q, json_t *arr)
{
	for (size_t i = 0; i < s->nkobjs; i++) {
		const struct srv_kobj *k = &s->kobjs[i];

		if (strcmp(k->kind, q->res->type) == 0 && may_see(q, k))
			json_array_append_new(arr, json_deep_copy(k->doc));
	}
}

/* Key names Kubernetes allows in data: [-._a-zA-Z0-9]+, at most 253. */
static bool key_ok(const char *k)
{
	size_t n = strlen(k);

	if (n == 0 || n > 253 || strcmp(k, ".") == 0 || strcmp(k, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '-' || k[i] == '_' || k[i] == '.'))
			return false;
	return true;
}

static bool dns_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '.'))
			return false;
	return true;
}

/* json_equal, with two absent values equal. */
static bool same(const json_t *a, const json_t *b)
{
	return (!a && !b) || (a && b && json_equal(a, b));
}

struct causes {
	json_t *v;
	char msg[1500];
	size_t l;
};

static void cause(struct causes *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void cause(struct causes *c, const char *field, const char *fmt, ...)
{
	char m[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (!c->v)
		c->v = json_array();
	json_array_append_new(c->v, json_pack("{s:s,s:s,s:s}", "reason", "FieldValueInvalid",
					      "message", m, "field", field));
	c->l += (size_t)snprintf(c->msg + c->l, c->l < sizeof(c->msg) ? sizeof(c->msg) - c->l : 0,
				 "%s%s: %s", c->l ? ", " : "", field, m);
}

/* A map of strings at field of obj, its keys checked; base64 values when b64. */
static size_t check_map(struct causes *c, const json_t *obj, const char *field, bool b64)
{
	const json_t *m = json_object_get(obj, field);
	const char *k;
	json_t *v;
	size_t bytes = 0;

	if (!m)
		return 0;
	if (!json_is_object(m)) {
		cause(c, field, "found %s, expected a map of strings",
		      json_is_array(m) ? "a list" : "a scalar");
		return 0;
	}
	json_object_foreach((json_t *)m, k, v) {
		char f[400];

		snprintf(f, sizeof(f), "%s[%.300s]", field, k);
		if (!key_ok(k))
			cause(c, f, "a valid config key must consist of alphanumeric characters, "
			      "'-', '_' or '.'");
		if (!json_is_string(v)) {
			cause(c, f, "found %s, expected a string", json_is_null(v) ? "null"
				  : "a value that is not a string");
			continue;
		}
		bytes += json_string_length(v);
		if (b64) {
			unsigned char *b;
			size_t n;

			if (drv_base64_decode(json_string_value(v), &b, &n) < 0)
				cause(c, f, "found a value that is not base64, expected base64 "
				      "(use stringData for plain text)");
			drv_free(b);
		}
	}
	return bytes;
}

/*
 * The object to keep from body (a Secret or ConfigMap as sent): checked
 * (422 in o, NULL), stringData folded into data, metadata cut to what is
 * kept. cur: the object it replaces, or NULL.
 */
static json_t *normalize(const struct kube_req *q, const json_t *body, const json_t *cur,
			 const char *name, struct drv_http_resp *o)
{
	bool secret = is_secret(q);
	struct causes c = { 0 };
	const json_t *md = json_object_get(body, "metadata");
	json_t *out, *omd, *x;
	size_t bytes;

	bytes = check_map(&c, body, "data", secret);
	bytes += check_map(&c, body, secret ? "stringData" : "binaryData", !secret);
	if (bytes > KOBJ_MAX_BYTES)
		cause(&c, "data", "Too long: must have at most %d bytes", KOBJ_MAX_BYTES);
	if ((x = json_object_get(body, "immutable")) && !json_is_boolean(x))
		cause(&c, "immutable", "found a value that is not a boolean, expected true or false");
	if (secret && (x = json_object_get(body, "type")) && !json_is_string(x))
		cause(&c, "type", "found a value that is not a string, expected a Secret type");
	if (!secret && json_is_object(json_object_get(body, "data")) &&
	    json_is_object(json_object_get(body, "binaryData"))) {
		const char *k;
		json_t *v;

		json_object_foreach(json_object_get(body, "data"), k, v)
			if (json_object_get(json_object_get(body, "binaryData"), k))
				cause(&c, "binaryData", "duplicate of key %s present in data", k);
	}
	if (cur && !c.v) {
		const json_t *cmd = json_object_get(cur, "metadata");

		if (json_is_true(json_object_get(cur, "immutable")) &&
		    (!same(json_object_get(cur, "data"), json_object_get(body, "data")) ||
		     json_object_get(body, "stringData") ||
		     !same(json_object_get(cur, "binaryData"),
				 json_object_get(body, "binaryData")) ||
		     !json_is_true(json_object_get(body, "immutable"))))
			cause(&c, "data", "field is immutable when `immutable` is set");
		if (secret && drv_json_str(body, "type") && *drv_json_str(body, "type") &&
		    strcmp(drv_json_str(body, "type"), drv_json_str(cur, "type")) != 0)
			cause(&c, "type", "field is immutable");
		(void)cmd;
	}
	if (c.v) {
		kube_status(o, 422, "Invalid",
			    json_pack("{s:s,s:s,s:o}", "name", name, "kind", q->res->kind, "causes",
				      c.v),
			    "%s \"%s\" is invalid: %s", q->res->kind, name, c.msg);
		return NULL;
	}
	omd = json_object();
	json_object_set_new(omd, "name", json_string(name));
	json_object_set_new(omd, "namespace", json_string(q->ns));
	if (json_is_object(json_object_get(md, "labels")) &&
	    json_object_size(json_object_get(md, "labels")))
		json_object_set(omd, "labels", json_object_get(md, "labels"));
	if (json_is_object(json_object_get(md, "annotations")) &&
	    json_object_size(json_object_get(md, "annotations")))
		json_object_set(omd, "annotations", json_object_get(md, "annotations"));
	out = json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", q->res->kind, "metadata", omd);
	json_object_set_new(out, "data", json_is_object(json_object_get(body, "data"))
					       ? json_deep_copy(json_object_get(body, "data"))
					       : json_object());
	if (secret) {
		const char *k;
		json_t *v;

		json_object_foreach(json_object_get(body, "stringData"), k, v) {
			char *b = drv_base64_encode(json_string_value(v), json_string_length(v));

			json_object_set_new(json_object_get(out, "data"), k, json_string(b));
			drv_free(b);
		}
		const char *t = drv_json_str(body, "type");

		json_object_set_new(out, "type", json_string(t && *t ? t
							     : cur ? drv_json_str(cur, "type") : "Opaque"));
	} else if (json_object_size(json_object_get(body, "binaryData"))) {
		json_object_set(out, "binaryData", json_object_get(body, "binaryData"));
	}
	if (!json_object_size(json_object_get(out, "data")))
		json_object_del(out, "data");
	if (json_is_true(json_object_get(body, "immutable")))
		json_object_set_new(out, "immutable", json_true());
	return out;
}

/* The metadata drover sets: uid, creation time (kept from cur), version. */
static void stamp(struct drv_server *s, json_t *obj, const json_t *cur)
{
	json_t *md = json_object_get(obj, "metadata");
	const json_t *cmd = json_object_get(cur, "metadata");
	char uid[48];

	if (cmd) {
		json_object_set(md, "uid", json_object_get(cmd, "uid"));
		json_object_set(md, "creationTimestamp", json_object_get(cmd, "creationTimestamp"));
	} else {
		kube_new_uid(uid, sizeof(uid));
		json_object_set_new(md, "uid", json_string(uid));
		json_object_set_new(md, "creationTimestamp", srv_json_time(drv_wall_s()));
	}
	json_object_set_new(md, "resourceVersion",
			    json_sprintf("%lld", (long long)(s->kobj_rv > s->last_seq
							     ? s->kobj_rv + 1 : s->last_seq + 1)));
}

/* Into the store, then memory; false after a 500 in o. */
static bool save(struct drv_server *s, const struct kube_req *q, const char *name,
		 const char *owner, json_t *obj, struct drv_http_resp *o)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	struct drv_store_kobj k = { q->res->type, q->ns, name, owner, text };
	int rc;

	pthread_mutex_lock(&s->store_mu);
	rc = s->store->ops->put_kobj(s->store, &k);
	pthread_mutex_unlock(&s->store_mu);
	drv_free(text);
	if (rc < 0) {
		kube_status(o, 500, "InternalError", NULL, "cannot write %s %s/%s: %s",
			    q->res->kind, q->ns, name, s->store->err);
		return false;
	}
	kobj_set(s, q->res->type, q->ns, name, owner, json_incref(obj));
	srv_kobjs_unhold(s);
	return true;
}

/* Fields of body Kubernetes' kind does not have (fieldValidation). */
static bool fields_ok(struct drv_http_req *r, struct drv_http_resp *o, const struct kube_req *q,
		      const json_t *body)
{
	return kube_check_unknown(r, o, q->res->type, body);
}

static bool body_kind_ok(const struct kube_req *q, const json_t *body, struct drv_http_resp *o)
{
	const char *kind = drv_json_str(body, "kind"), *av = drv_json_str(body, "apiVersion");
	const char *ns = drv_json_str(json_object_get(body, "metadata"), "namespace");

	if ((kind && strcmp(kind, q->res->kind) != 0) || (av && strcmp(av, "v1") != 0)) {
		kube_status(o, 400, "BadRequest", NULL, "the body is a %s %s, expected a v1 %s",
			    av ? av : "", kind ? kind : "", q->res->kind);
		return false;
	}
	if (ns && *ns && strcmp(ns, q->ns) != 0) {
		kube_status(o, 400, "BadRequest", NULL,
			    "the namespace of the provided object (%s) does not match the namespace "
			    "sent on the request (%s)", ns, q->ns);
		return false;
	}
	return true;
}

static int create(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		  struct drv_http_resp *o, const json_t *body)
{
	const json_t *md = json_object_get(body, "metadata");
	const char *gen = drv_json_str(md, "generateName");
	char name[254];
	json_t *obj;

	snprintf(name, sizeof(name), "%s", drv_json_str(md, "name") ? drv_json_str(md, "name") : "");
	if (!name[0] && gen && *gen) {
		static const char al[] = "bcdfghjklmnpqrstvwxz2456789";
		char uid[48];

		kube_new_uid(uid, sizeof(uid));
		snprintf(name, sizeof(name), "%.200s%c%c%c%c%c", gen, al[uid[0] % 27],
			 al[uid[1] % 27], al[uid[2] % 27], al[uid[3] % 27], al[uid[4] % 27]);
	}
	if (!dns_name(name)) {
		kube_status(o, 422, "Invalid",
			    json_pack("{s:s,s:s,s:[{s:s,s:s,s:s}]}", "name", name, "kind",
				      q->res->kind, "causes", "reason", "FieldValueInvalid", "message",
				      name[0] ? "a lowercase RFC 1123 subdomain is expected"
					      : "name or generateName is required",
				      "field", "metadata.name"),
			    "%s \"%s\" is invalid: metadata.name: %s", q->res->kind, name,
			    name[0] ? "a lowercase RFC 1123 subdomain is expected"
				    : "name or generateName is required");
		return 0;
	}
	if (kobj_find(s, q->res->type, q->ns, name)) {
		kube_status(o, 409, "AlreadyExists",
			    json_pack("{s:s,s:s}", "name", name, "kind", q->res->plural),
			    "%s \"%s\" already exists", q->res->plural, name);
		return 0;
	}
	if (!(obj = normalize(q, body, NULL, name, o)))
		return 0;
	stamp(s, obj, NULL);
	if (kube_dry_run(r) || save(s, q, name, q->c->user, obj, o))
		kube_reply(o, 201, obj);
	else
		json_decref(obj);
	return 0;
}

int kube_config_create(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		       struct drv_http_resp *o)
{
	size_t len;
	const char *text = drv_http_req_body(r, &len);
	const char *ct = drv_http_req_header(r, "Content-Type");
	json_error_t je;
	json_t *body;

	if (ct && strncasecmp(ct, "application/vnd.kubernetes.protobuf", 35) == 0) {
		char err[300];

		if (!(body = kube_pb_object(text, len, err, sizeof(err)))) {
			kube_status(o, 415, "UnsupportedMediaType", NULL, "%s", err);
			return 0;
		}
	} else {
		body = kube_load_body(text, len, &je);
	}
	if (!json_is_object(body)) {
		kube_status(o, 400, "BadRequest", NULL, "the body is not a JSON or YAML object%s%s "
			    "(Content-Type %s, %zu bytes)", body ? "" : ": ", body ? "" : je.text,
			    drv_http_req_header(r, "Content-Type") ? drv_http_req_header(r, "Content-Type")
								   : "none", len);
		json_decref(body);
		return 0;
	}
	if (!q->ns[0])
		snprintf(q->ns, sizeof(q->ns), "default");
	pthread_mutex_lock(&s->mu);
	if (body_kind_ok(q, body, o) && fields_ok(r, o, q, body))
		create(s, q, r, o, body);
	pthread_mutex_unlock(&s->mu);
	json_decref(body);
	return 0;
}

static void not_found(struct drv_http_resp *o, const struct kube_req *q)
{
	kube_status(o, 404, "NotFound", json_pack("{s:s,s:s}", "name", q->name, "kind",
						  q->res->plural),
		    "%s \"%s\" not found", q->res->plural, q->name);
}

int kube_config_patch(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		      struct drv_http_resp *o, bool replace)
{
	const char *ct = drv_http_req_header(r, "Content-Type");
	size_t len;
	const char *text = drv_http_req_body(r, &len);
	bool ssa = !replace && ct && strncasecmp(ct, "application/apply-patch+yaml", 28) == 0;
	json_t *body, *patched = NULL, *obj;
	struct srv_kobj *k;
	json_error_t je;

	if (q->sub[0]) {
		kube_status(o, 404, "NotFound", NULL, "%s have no subresource %s", q->res->plural,
			    q->sub);
		return 0;
	}
	if (!replace && !ssa &&
	    (!ct || (strncasecmp(ct, "application/merge-patch+json", 28) != 0 &&
		     strncasecmp(ct, "application/strategic-merge-patch+json", 38) != 0))) {
		kube_status(o, 415, "UnsupportedMediaType", NULL,
			    "Content-Type %s: drover takes application/merge-patch+json, "
			    "application/strategic-merge-patch+json and application/apply-patch+yaml "
			    "(no JSON patch)", ct ? ct : "(none)");
		return 0;
	}
	body = ssa ? kube_load_body(text, len, &je) : json_loadb(text, len, 0, &je);
	if (!json_is_object(body)) {
		kube_status(o, 400, "BadRequest", NULL, "the body is not a JSON object: %s",
			    body ? "" : je.text);
		json_decref(body);
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	k = kobj_find(s, q->res->type, q->ns, q->name);
	if (k && !may_see(q, k))
		k = NULL;
	if (!k && ssa) {   /* server-side apply creates */
		if (body_kind_ok(q, body, o) && fields_ok(r, o, q, body))
			create(s, q, r, o, body);
		goto out;
	}
	if (!k) {
		not_found(o, q);
		goto out;
	}
	if (replace) {
		const char *rv = drv_json_str(json_object_get(body, "metadata"), "resourceVersion");

		if (rv && *rv && doc_rv(k->doc) != strtoll(rv, NULL, 10)) {
			kube_status(o, 409, "Conflict",
				    json_pack("{s:s,s:s}", "name", q->name, "kind", q->res->plural),
				    "Operation cannot be fulfilled on %s \"%s\": the object has been "
				    "modified; please apply your changes to the latest version and try "
				    "again", q->res->plural, q->name);
			goto out;
		}
		patched = json_incref(body);
	} else {
		patched = kube_merge_patch(k->doc, body);
	}
	if (!body_kind_ok(q, patched, o) || !fields_ok(r, o, q, patched))
		goto out;
	{
		const char *pn = drv_json_str(json_object_get(patched, "metadata"), "name");

		if (pn && strcmp(pn, q->name) != 0) {
			kube_status(o, 400, "BadRequest", NULL,
				    "the name of the object (%s) does not match the name on the URL "
				    "(%s)", pn, q->name);
			goto out;
		}
	}
	if (!(obj = normalize(q, patched, k->doc, q->name, o)))
		goto out;
	if (same(json_object_get(obj, "data"), json_object_get(k->doc, "data")) &&
	    same(json_object_get(obj, "binaryData"), json_object_get(k->doc, "binaryData")) &&
	    same(json_object_get(obj, "type"), json_object_get(k->doc, "type")) &&
	    same(json_object_get(obj, "immutable"), json_object_get(k->doc, "immutable")) &&
	    same(json_object_get(json_object_get(obj, "metadata"), "labels"),
		       json_object_get(json_object_get(k->doc, "metadata"), "labels")) &&
	    same(json_object_get(json_object_get(obj, "metadata"), "annotations"),
		       json_object_get(json_object_get(k->doc, "metadata"), "annotations"))) {
		json_decref(obj);   /* nothing changes: the same version */
		kube_reply(o, 200, json_deep_copy(k->doc));
		goto out;
	}
	stamp(s, obj, k->doc);
	{
		char *owner = drv_strdup(k->owner);

		if (kube_dry_run(r) || save(s, q, q->name, owner, obj, o))
			kube_reply(o, 200, obj);
		else
			json_decref(obj);
		drv_free(owner);
	}
out:
	pthread_mutex_unlock(&s->mu);
	json_decref(patched);
	json_decref(body);
	return 0;
}

int kube_config_delete(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		       struct drv_http_resp *o)
{
	struct srv_kobj *k;
	int rc;

	pthread_mutex_lock(&s->mu);
	k = kobj_find(s, q->res->type, q->ns, q->name);
	if (!k || !may_see(q, k)) {
		not_found(o, q);
		goto out;
	}
	if (kube_dry_run(r)) {
		kube_reply(o, 200, json_deep_copy(k->doc));
		goto out;
	}
	pthread_mutex_lock(&s->store_mu);
	rc = s->store->ops->del_kobj(s->store, k->kind, k->ns, k->name);
	pthread_mutex_unlock(&s->store_mu);
	if (rc < 0 && rc != DRV_ENOENT) {
		kube_status(o, 500, "InternalError", NULL, "cannot delete %s %s/%s: %s",
			    q->res->kind, q->ns, q->name, s->store->err);
		goto out;
	}
	kube_reply(o, 200, json_deep_copy(k->doc));
	kobj_drop(s, k);
out:
	pthread_mutex_unlock(&s->mu);
	return 0;
}
