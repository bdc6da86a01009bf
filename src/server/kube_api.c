/*
 * kube_api.c: the front of the Kubernetes-compatible API (docs/kubernetes.md):
 * /version, discovery (legacy /api, /apis and aggregated discovery v2 and
 * v2beta1), the routing of resource paths to kube_list.c, kube_write.c and
 * kube_watch.c, Status objects for errors, and SelfSubjectReview (kubectl
 * auth whoami).
 *
 * One table (kube_resources) is what is served: discovery, routing and the
 * OpenAPI documents read it, so a kind is served everywhere or nowhere.
 */
#include "kube_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct kube_res kube_resources[] = {
	{ "", "v1", "namespaces", "namespace", "Namespace", false, "get,list,watch", "ns", "",
	  "Namespace" },
	{ "", "v1", "pods", "pod", "Pod", true,
	  "create,delete,get,list,patch,update,watch", "po", "log,status,exec,attach,portforward", "Pod" },
	{ "", "v1", "nodes", "node", "Node", false, "get,list,watch", "no", "status", "Node" },
	{ "", "v1", "events", "event", "Event", true, "get,list,watch", "ev", "", "Event" },
	{ "", "v1", "secrets", "secret", "Secret", true, "create,delete,get,list,patch,update", "",
	  "", "Secret" },
	{ "", "v1", "configmaps", "configmap", "ConfigMap", true,
	  "create,delete,get,list,patch,update", "cm", "", "ConfigMap" },
	{ "batch", "v1", "jobs", "job", "Job", true,
	  "create,delete,get,list,patch,update,watch", "", "status", "Job" },
	{ "kubeflow.org", "v1", "pytorchjobs", "pytorchjob", "PyTorchJob", true,
	  "create,delete,get,list,patch,update,watch", "", "status", "PyTorchJob" },
	{ "batch.volcano.sh", "v1alpha1", "jobs", "job", "Job", true,
	  "create,delete,get,list,patch,update,watch", "vcjob,vj", "status", "VolcanoJob" },
	{ "scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", false,
	  "get,list,watch", "pc", "", "PriorityClass" },
	{ "authentication.k8s.io", "v1", "selfsubjectreviews", "selfsubjectreview",
	  "SelfSubjectReview", false, "create", "", "", "" },
	{ NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL },
};

static const char *const groups[] = { "batch", "kubeflow.org", "batch.volcano.sh",
				      "scheduling.k8s.io", "authentication.k8s.io", NULL };

/* The one version drover serves of group g. */
static const char *group_version(const char *g)
{
	for (const struct kube_res *k = kube_resources; k->plural; k++)
		if (strcmp(k->group, g) == 0)
			return k->version;
	return "v1";
}

const struct kube_res *kube_res_find(const char *group, const char *version, const char *plural)
{
	for (const struct kube_res *k = kube_resources; k->plural; k++)
		if (strcmp(k->group, group) == 0 && strcmp(k->version, version) == 0 &&
		    strcmp(k->plural, plural) == 0)
			return k;
	return NULL;
}

/* --- replies --------------------------------------------------------------- */

void kube_reply(struct drv_http_resp *o, int code, json_t *obj)
{
	drv_http_resp_json(o, code, obj);
}

void kube_status(struct drv_http_resp *o, int code, const char *reason, json_t *details,
		 const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	json_t *st;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
		       "metadata", "status", code < 400 ? "Success" : "Failure", "message", msg,
		       "reason", reason, "code", code);
	if (details)
		json_object_set_new(st, "details", details);
	drv_http_resp_json(o, code, st);
}

void kube_status_from_error(struct drv_http_resp *o)
{
	json_t *e = o->body ? json_loadb(o->body, o->len, 0, NULL) : NULL;
	const char *msg = e ? drv_json_str(json_object_get(e, "error"), "message") : NULL;
	int code = o->status;
	char *m = drv_strdup(msg ? msg : "refused");
	const char *reason = code == 401 ? "Unauthorized" : code == 403 ? "Forbidden"
			   : code == 503 ? "ServiceUnavailable" : code == 404 ? "NotFound"
			   : code == 405 ? "MethodNotAllowed" : "BadRequest";

	json_decref(e);
	kube_status(o, code, reason, NULL, "%s", m);
	drv_free(m);
}

void kube_warn(struct drv_http_resp *o, const char *msg)
{
	char buf[1200];
	size_t k = 0;

	/* a quoted-string: no quotes, backslashes or line breaks inside */
	for (const char *p = msg; *p && k + 1 < 1000; p++)
		buf[k++] = (*p == '"' || *p == '\\' || *p == '\n' || *p == '\r') ? '\'' : *p;
	buf[k] = '\0';
	{
		char v[1210];

		snprintf(v, sizeof(v), "299 - \"%s\"", buf);
		drv_http_resp_header(o, "Warning", v);
	}
}

/* --- /version ---------------------------------------------------------------- */

int srv_kube_version(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	if (strcmp(drv_http_req_path(r), "/version") != 0 &&
	    strcmp(drv_http_req_path(r), "/version/") != 0) {
		kube_status(o, 404, "NotFound", NULL, "the server could not find the requested resource");
		return 0;
	}
	if (strcmp(drv_http_req_method(r), "GET") != 0) {
		kube_status(o, 405, "MethodNotAllowed", NULL, "%s is not supported on /version",
			    drv_http_req_method(r));
		return 0;
	}
	kube_reply(o, 200,
		   json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "major", "1", "minor",
			     KUBE_MINOR, "gitVersion", KUBE_GIT_VERSION, "gitCommit", "",
			     "gitTreeState", "clean", "buildDate", "1970-01-01T00:00:00Z",
			     "goVersion", "none (drover, C)", "compiler", "cc", "platform",
			     "linux/amd64"));
	return 0;
}

/* --- discovery ----------------------------------------------------------- */

static json_t *split_list(const char *csv)
{
	json_t *a = json_array();
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", csv);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		json_array_append_new(a, json_string(tok));
	return a;
}

/* The verbs of subresource tok. */
static const char *sub_verbs(const char *tok)
{
	if (strcmp(tok, "log") == 0)
		return "get";
	if (strcmp(tok, "exec") == 0 || strcmp(tok, "attach") == 0 ||
	    strcmp(tok, "portforward") == 0)
		return "create,get";
	return "get,patch,update";
}

static json_t *resource_list(const char *group, const char *version)
{
	json_t *rs = json_array();
	char gv[128];

	for (const struct kube_res *k = kube_resources; k->plural; k++) {
		char buf[256], *tok, *save = NULL;
		json_t *e;

		if (strcmp(k->group, group) != 0 || strcmp(k->version, version) != 0)
			continue;
		e = json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", k->plural, "singularName",
			      k->singular, "namespaced", k->namespaced, "kind", k->kind, "verbs",
			      split_list(k->verbs));
		if (*k->short_names)
			json_object_set_new(e, "shortNames", split_list(k->short_names));
		json_array_append_new(rs, e);
		snprintf(buf, sizeof(buf), "%s", k->subresources);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char nm[96];

			snprintf(nm, sizeof(nm), "%s/%s", k->plural, tok);
			json_array_append_new(
				rs, json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", nm, "singularName", "",
					      "namespaced", k->namespaced, "kind", k->kind, "verbs",
					      split_list(sub_verbs(tok))));
		}
	}
	snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
	return json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
			 "groupVersion", gv, "resources", rs);
}

static json_t *api_group(const char *g)
{
	char gv[128];
	const char *v = group_version(g);

	snprintf(gv, sizeof(gv), "%s/%s", g, v);
	return json_pack("{s:s,s:s,s:s,s:[{s:s,s:s}],s:{s:s,s:s}}", "kind", "APIGroup",
			 "apiVersion", "v1", "name", g, "versions", "groupVersion", gv, "version",
			 v, "preferredVersion", "groupVersion", gv, "version", v);
}

/* One group of aggregated discovery (its one version, v1). */
static json_t *agg_group(const char *group)
{
	json_t *rs = json_array();

	for (const struct kube_res *k = kube_resources; k->plural; k++) {
		char buf[256], *tok, *save = NULL;
		json_t *e, *subs;

		if (strcmp(k->group, group) != 0)
			continue;
		subs = json_array();
		e = json_pack("{s:s,s:{s:s,s:s,s:s},s:s,s:s,s:o}", "resource", k->plural,
			      "responseKind", "group", k->group, "version", k->version, "kind",
			      k->kind, "scope", k->namespaced ? "Namespaced" : "Cluster",
			      "singularResource", k->singular, "verbs", split_list(k->verbs));
		if (*k->short_names)
			json_object_set_new(e, "shortNames", split_list(k->short_names));
		snprintf(buf, sizeof(buf), "%s", k->subresources);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			json_array_append_new(
				subs, json_pack("{s:s,s:{s:s,s:s,s:s},s:o}", "subresource", tok,
						"responseKind", "group", k->group, "version",
						k->version, "kind", k->kind, "verbs",
						split_list(sub_verbs(tok))));
		if (json_array_size(subs))
			json_object_set_new(e, "subresources", subs);
		else
			json_decref(subs);
		json_array_append_new(rs, e);
	}
	return json_pack("{s:{s:s},s:[{s:s,s:o,s:s}]}", "metadata", "name", group, "versions",
			 "version", *group ? group_version(group) : "v1", "resources", rs,
			 "freshness", "Current");
}

/*
 * The aggregated discovery version the client asks for first in Accept
 * ("v2", "v2beta1"), or NULL for the legacy form. The media ranges are
 * in the client's order of preference.
 */
static const char *agg_version(const char *accept)
{
	char buf[1024], *range, *save = NULL;

	if (!accept)
		return NULL;
	snprintf(buf, sizeof(buf), "%s", accept);
	for (range = strtok_r(buf, ",", &save); range; range = strtok_r(NULL, ",", &save)) {
		bool g = false, as = false;
		const char *v = NULL;
		char *p, *s2 = NULL;

		for (p = strtok_r(range, ";", &s2); p; p = strtok_r(NULL, ";", &s2)) {
			while (*p == ' ')
				p++;
			if (strcmp(p, "g=apidiscovery.k8s.io") == 0)
				g = true;
			else if (strcmp(p, "as=APIGroupDiscoveryList") == 0)
				as = true;
			else if (strcmp(p, "v=v2") == 0)
				v = "v2";
			else if (strcmp(p, "v=v2beta1") == 0)
				v = "v2beta1";
		}
		if (g && as && v)
			return v;
		if (!g)  /* a plain range first: the client prefers the legacy form */
			return NULL;
	}
	return NULL;
}

static void agg_reply(struct drv_http_resp *o, const char *ver, bool core)
{
	json_t *items = json_array();
	char av[64];

	if (core) {
		json_t *g = agg_group("");

		json_object_set_new(g, "metadata", json_object());
		json_array_append_new(items, g);
	} else {
		for (int i = 0; groups[i]; i++)
			json_array_append_new(items, agg_group(groups[i]));
	}
	snprintf(av, sizeof(av), "apidiscovery.k8s.io/%s", ver);
	drv_http_resp_json(o, 200, json_pack("{s:s,s:s,s:{},s:o}", "kind", "APIGroupDiscoveryList",
					     "apiVersion", av, "metadata", "items", items));
	snprintf(o->content_type, sizeof(o->content_type),
		 "application/json;g=apidiscovery.k8s.io;v=%.8s;as=APIGroupDiscoveryList", ver);
}

/* Discovery paths: true when answered. */
static bool discovery(struct drv_http_req *r, struct drv_http_resp *o, char **seg, int nseg,
		      bool apis)
{
	const char *agg = agg_version(drv_http_req_header(r, "Accept"));

	if (!apis && nseg == 0) {
		if (agg) {
			agg_reply(o, agg, true);
			return true;
		}
		kube_reply(o, 200, json_pack("{s:s,s:[s],s:[{s:s,s:s}]}", "kind", "APIVersions",
					     "versions", "v1", "serverAddressByClientCIDRs",
					     "clientCIDR", "0.0.0.0/0", "serverAddress", ""));
		return true;
	}
	if (!apis && nseg == 1 && strcmp(seg[0], "v1") == 0) {
		kube_reply(o, 200, resource_list("", "v1"));
		return true;
	}
	if (apis && nseg == 0) {
		json_t *gs;

		if (agg) {
			agg_reply(o, agg, false);
			return true;
		}
		gs = json_array();
		for (int i = 0; groups[i]; i++) {
			json_t *g = api_group(groups[i]);

			json_object_del(g, "kind");
			json_object_del(g, "apiVersion");
			json_array_append_new(gs, g);
		}
		kube_reply(o, 200, json_pack("{s:s,s:s,s:o}", "kind", "APIGroupList", "apiVersion",
					     "v1", "groups", gs));
		return true;
	}
	for (int i = 0; apis && groups[i]; i++) {
		if (strcmp(seg[0], groups[i]) != 0)
			continue;
		if (nseg == 1) {
			kube_reply(o, 200, api_group(groups[i]));
			return true;
		}
		if (nseg == 2 && strcmp(seg[1], group_version(groups[i])) == 0) {
			kube_reply(o, 200, resource_list(groups[i], seg[1]));
			return true;
		}
	}
	return false;
}

/* --- SelfSubjectReview ------------------------------------------------------ */

static int whoami(struct drv_http_req *r, struct drv_http_resp *o, struct caller *c)
{
	json_t *gr = json_array();

	json_array_append_new(gr, json_string("system:authenticated"));
	if (c->admin)
		json_array_append_new(gr, json_string("system:masters"));
	kube_reply(o, 201,
		   json_pack("{s:s,s:s,s:{s:o},s:{s:{s:s,s:o}}}", "kind", "SelfSubjectReview",
			     "apiVersion", "authentication.k8s.io/v1", "metadata",
			     "creationTimestamp", srv_json_time(drv_wall_s()), "status", "userInfo",
			     "username", c->user, "groups", gr));
	return 0;
}

/* --- routing ------------------------------------------------------------- */

/* Splits path (after its prefix) into at most 8 segments in place. */
static int split_path(char *p, char **seg)
{
	int n = 0;

	while (*p == '/')
		p++;
	while (*p && n < 8) {
		char *e = strchr(p, '/');

		seg[n++] = p;
		if (!e)
			break;
		*e = '\0';
		p = e + 1;
		while (*p == '/')
			p++;
	}
	return n;
}

static bool accept_table(const char *accept)
{
	return accept && strstr(accept, "as=Table") != NULL;
}

static void copy_seg(char *dst, size_t n, const char *src, bool *bad)
{
	if (strlen(src) >= n)
		*bad = true;
	snprintf(dst, n, "%s", src);
}

/* After "/api/v1" or "/apis/G/V": the resource path segments. */
static int resource(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		    const char *group, const char *version, char **seg, int nseg)
{
	struct kube_req q = { .c = drv_http_req_user(r) };
	const char *m = drv_http_req_method(r);
	const char *w = drv_http_req_query(r, "watch");
	bool bad = false;
	int i = 0;

	if (nseg >= 2 && strcmp(seg[0], "namespaces") == 0 && nseg >= 3) {
		copy_seg(q.ns, sizeof(q.ns), seg[1], &bad);
		i = 2;
	}
	q.res = kube_res_find(group, version, seg[i]);
	if (!q.res) {
		kube_status(o, 404, "NotFound", NULL,
			    "the server could not find the requested resource (%s %s): drover "
			    "serves %s only (docs/kubernetes.md)", m, drv_http_req_path(r),
			    "namespaces, pods, nodes, events, secrets, configmaps, batch/v1 jobs, "
			    "kubeflow.org/v1 pytorchjobs, batch.volcano.sh/v1alpha1 jobs, "
			    "scheduling.k8s.io/v1 priorityclasses");
		return 0;
	}
	if (q.ns[0] && !q.res->namespaced) {
		kube_status(o, 404, "NotFound", NULL, "%s is not a namespaced resource",
			    q.res->plural);
		return 0;
	}
	if (nseg > i + 1)
		copy_seg(q.name, sizeof(q.name), seg[i + 1], &bad);
	if (nseg > i + 2)
		copy_seg(q.sub, sizeof(q.sub), seg[i + 2], &bad);
	if (nseg > i + 3 || bad) {
		kube_status(o, 404, "NotFound", NULL, "the server could not find the requested resource");
		return 0;
	}
	if (q.sub[0]) {
		char subs[64];

		snprintf(subs, sizeof(subs), ",%s,", q.res->subresources);
		{
			char want[40];

			snprintf(want, sizeof(want), ",%s,", q.sub);
			if (!strstr(subs, want)) {
				kube_status(o, 404, "NotFound", NULL,
					    "%s has no subresource %s served by drover",
					    q.res->plural, q.sub);
				return 0;
			}
		}
	}
	q.table = accept_table(drv_http_req_header(r, "Accept"));
	q.watch = w && (strcmp(w, "true") == 0 || strcmp(w, "1") == 0);
	if (q.res == kube_res_find("authentication.k8s.io", "v1", "selfsubjectreviews")) {
		if (strcmp(m, "POST") != 0 || q.name[0]) {
			kube_status(o, 405, "MethodNotAllowed", NULL,
				    "selfsubjectreviews: only create (POST) is served");
			return 0;
		}
		return whoami(r, o, q.c);
	}
	if (strcmp(q.res->type, "Secret") == 0 || strcmp(q.res->type, "ConfigMap") == 0) {
		if (strcmp(m, "GET") == 0 && q.watch) {
			kube_status(o, 405, "MethodNotAllowed", NULL,
				    "drover does not serve watch on %s", q.res->plural);
			return 0;
		}
		if (strcmp(m, "POST") == 0 && !q.name[0])
			return kube_config_create(s, &q, r, o);
		if ((strcmp(m, "PATCH") == 0 || strcmp(m, "PUT") == 0) && q.name[0])
			return kube_config_patch(s, &q, r, o, strcmp(m, "PUT") == 0);
		if (strcmp(m, "DELETE") == 0 && q.name[0])
			return kube_config_delete(s, &q, r, o);
	}
	if ((strcmp(m, "GET") == 0 || strcmp(m, "POST") == 0) && q.name[0] &&
	    strcmp(q.sub, "exec") == 0)
		return kube_exec(s, &q, r, o);
	if ((strcmp(m, "GET") == 0 || strcmp(m, "POST") == 0) && q.name[0] &&
	    strcmp(q.sub, "attach") == 0)
		return kube_attach(s, &q, r, o);
	if ((strcmp(m, "GET") == 0 || strcmp(m, "POST") == 0) && q.name[0] &&
	    strcmp(q.sub, "portforward") == 0)
		return kube_portforward(s, &q, r, o);
	if (strcmp(m, "GET") == 0) {
		if (q.sub[0] && strcmp(q.sub, "log") == 0)
			return kube_logs(s, &q, r, o);
		if (q.watch)
			return kube_watch(s, &q, r, o);
		return kube_get(s, &q, r, o);
	}
	if (strcmp(m, "POST") == 0 && !q.name[0] && strstr(q.res->verbs, "create"))
		return kube_create(s, &q, r, o);
	if (strcmp(m, "PATCH") == 0 && q.name[0] && strstr(q.res->verbs, "patch") &&
	    (!q.sub[0] || strcmp(q.sub, "status") == 0))
		return kube_patch(s, &q, r, o, false);
	if (strcmp(m, "PUT") == 0 && q.name[0] && strstr(q.res->verbs, "update") &&
	    (!q.sub[0] || strcmp(q.sub, "status") == 0))
		return kube_patch(s, &q, r, o, true);
	if (strcmp(m, "DELETE") == 0 && q.name[0] && !q.sub[0] && strstr(q.res->verbs, "delete"))
		return kube_delete(s, &q, r, o);
	kube_status(o, 405, "MethodNotAllowed", NULL,
		    "%s %s: drover serves %s on %s%s", m, drv_http_req_path(r), q.res->verbs,
		    q.res->plural,
		    strcmp(q.res->type, "PriorityClass") == 0
			    ? " (they come from the server's tenants file, priorityClasses:)"
			    : q.name[0] ? "" : " (no deletecollection)");
	return 0;
}

static bool gv_served(const char *g, const char *v)
{
	for (const struct kube_res *k = kube_resources; k->plural; k++)
		if (*g && strcmp(k->group, g) == 0 && strcmp(k->version, v) == 0)
			return true;
	return false;
}

int srv_kube_api(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	char *path = drv_strdup(drv_http_req_path(r));
	char *seg[8];
	bool apis = strncmp(path, "/apis", 5) == 0;
	int nseg = split_path(path + (apis ? 5 : 4), seg);
	const char *m = drv_http_req_method(r);

	if (nseg <= 2 && !(nseg == 2 && !apis)) {
		/* /api, /api/v1, /apis, /apis/G, /apis/G/V */
		if ((nseg < 2 || apis) && strcmp(m, "GET") == 0 && discovery(r, o, seg, nseg, apis))
			goto out;
		if (nseg == 1 && !apis && strcmp(m, "GET") == 0) {
			kube_status(o, 404, "NotFound", NULL, "API version %s is not served", seg[0]);
			goto out;
		}
	}
	if (!apis && nseg >= 2 && strcmp(seg[0], "v1") == 0) {
		resource(s, r, o, "", "v1", seg + 1, nseg - 1);
		goto out;
	}
	if (apis && nseg >= 3 && gv_served(seg[0], seg[1])) {
		resource(s, r, o, seg[0], seg[1], seg + 2, nseg - 2);
		goto out;
	}
	if (strcmp(m, "GET") != 0 && nseg <= 2)
		kube_status(o, 405, "MethodNotAllowed", NULL, "%s %s: discovery is read only", m,
			    drv_http_req_path(r));
	else
		kube_status(o, 404, "NotFound", NULL,
			    "the server could not find the requested resource (%s %s)", m,
			    drv_http_req_path(r));
out:
	drv_free(path);
	return 0;
}

/* --- /openapi ------------------------------------------------------------ */

int srv_kube_openapi(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	const char *p = drv_http_req_path(r);
	json_t *doc;

	if (strcmp(drv_http_req_method(r), "GET") != 0) {
		kube_status(o, 405, "MethodNotAllowed", NULL, "the OpenAPI documents are read only");
		return 0;
	}
	if (strncmp(p, "/openapi/v3", 11) != 0) {
		/* v2 is Protocol Buffers for kubectl; drover serves v3 (JSON), which
		 * kubectl 1.27+ prefers for explain, apply and validation */
		kube_status(o, 404, "NotFound", NULL,
			    "%s: drover serves OpenAPI v3 (/openapi/v3), not v2", p);
		return 0;
	}
	p += 11;
	while (*p == '/')
		p++;
	{
		char gv[128];
		size_t l;

		snprintf(gv, sizeof(gv), "%s", p);
		l = strlen(gv);
		while (l && gv[l - 1] == '/')
			gv[--l] = '\0';
		doc = kube_openapi_v3(gv);
	}
	if (!doc) {
		kube_status(o, 404, "NotFound", NULL, "no OpenAPI document at %s",
			    drv_http_req_path(r));
		return 0;
	}
	kube_reply(o, 200, doc);
	drv_http_resp_header(o, "Cache-Control", "no-cache, private");
	return 0;
}
