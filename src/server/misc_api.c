/*
 * misc_api.c: the node routes (list, get, drain, resume), whoami, the
 * cluster summary, /healthz, /metrics and the watch stream (long-poll or
 * Server-Sent Events) of docs/api.md.
 *
 * Watch: events are published to an in-memory ring after they are on disk
 * (flush); a watcher asking for a sequence older than the ring reads the
 * store. Long-polls are deferred replies and SSE streams return "nothing
 * yet" (include/drover/http.h): neither holds a thread while it waits;
 * both look again after each drv_http_wake().
 */
#include "server_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct caller *caller_of(struct drv_http_req *r)
{
	return drv_http_req_user(r);
}

/* --- nodes -------------------------------------------------------------- */

int srv_api_nodes(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	const char *state = drv_http_req_query(r, "state");
	const char *pool = drv_http_req_query(r, "pool");
	json_t *items = json_array();
	int32_t *order;

	if (state && strcmp(state, "up") && strcmp(state, "draining") && strcmp(state, "down")) {
		drv_http_resp_error(o, 400, "invalid", NULL, "state=%s: expected up, draining or down",
				    state);
		json_decref(items);
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	order = drv_calloc((size_t)s->nnodes + 1, sizeof(*order));
	for (int32_t i = 0; i < s->nnodes; i++) {
		int32_t k = i;

		/* insertion sort by name: node counts are small */
		while (k > 0 && strcmp(s->nodes[order[k - 1]].name, s->nodes[i].name) > 0) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = i;
	}
	for (int32_t k = 0; k < s->nnodes; k++) {
		int32_t i = order[k];
		const struct drv_node *cn = &s->cluster.nodes[i];

		if (state && strcmp(state, srv_nstate_name(s->nodes[i].state)) != 0)
			continue;
		if (pool && (cn->pool < 0 || strcmp(s->cluster.pools[cn->pool].name, pool) != 0))
			continue;
		json_array_append_new(items, srv_node_api_json(s, i));
	}
	pthread_mutex_unlock(&s->mu);
	drv_free(order);
	drv_http_resp_json(o, 200, json_pack("{s:o}", "items", items));
	return 0;
}

static int32_t route_node(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o)
{
	const char *name = drv_http_req_param(r, 0);
	int32_t i = name ? srv_node_find(s, name) : -1;

	if (i < 0)
		drv_http_resp_error(o, 404, "not_found", NULL, "node %s not found", name ? name : "");
	return i;
}

int srv_api_node(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	int32_t i;

	pthread_mutex_lock(&s->mu);
	i = route_node(s, r, o);
	if (i >= 0)
		drv_http_resp_json(o, 200, srv_node_api_json(s, i));
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int srv_api_drain(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct caller *c = caller_of(r);
	json_t *body = NULL, *stop, *ids = json_array(), *node;
	size_t len;
	char why[512];
	int32_t i;

	drv_http_req_body(r, &len);
	if (len && !(body = drv_http_req_json(r, o)))
		goto out;
	stop = json_object_get(body, "stop_tasks");
	if (stop && !json_is_boolean(stop)) {
		char *v = json_dumps(stop, JSON_ENCODE_ANY | JSON_COMPACT);

		drv_http_resp_error(o, 400, "invalid", NULL,
				    "stop_tasks: found %.60s, expected true or false", v ? v : "?");
		free(v);   /* jansson's, malloc'd */
		goto out;
	}
	snprintf(why, sizeof(why), "drained by %s%s%s", c->user,
		 drv_json_str(body, "reason") ? ": " : "",
		 drv_json_str(body, "reason") ? drv_json_str(body, "reason") : "");
	pthread_mutex_lock(&s->mu);
	i = route_node(s, r, o);
	if (i >= 0) {
		s->nodes[i].admin_drain = true;
		srv_node_mark(s, i);
		if (s->nodes[i].state == DRV_NODE_DOWN)
			srv_set_str(&s->nodes[i].reason, s->nodes[i].reason);
		else
			srv_node_set_state(s, i, DRV_NODE_DRAINING, why);
		/* a down node's tasks are the lease's business (nodes.c) */
		if ((!stop || json_is_true(stop)) && s->nodes[i].state != DRV_NODE_DOWN)
			srv_node_stop_jobs(s, i, why, ids);
		node = srv_node_api_json(s, i);
		json_object_set(node, "stopping_jobs", ids);
		drv_http_resp_json(o, 200, node);
		srv_reply_when_durable(s, r, srv_enqueue(s), "");
	}
	pthread_mutex_unlock(&s->mu);
out:
	json_decref(ids);
	json_decref(body);
	return 0;
}

int srv_api_resume(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	int32_t i;

	pthread_mutex_lock(&s->mu);
	i = route_node(s, r, o);
	if (i >= 0) {
		if (s->nodes[i].state == DRV_NODE_DOWN) {
			drv_http_resp_error(o, 409, "conflict", NULL,
					    "node %s is down (%s); it comes back when its agent "
					    "heartbeats", s->nodes[i].name, s->nodes[i].reason);
		} else {
			s->nodes[i].admin_drain = false;
			s->nodes[i].health_drain = false;
			srv_node_mark(s, i);
			srv_node_set_state(s, i, DRV_NODE_UP, "");
			drv_http_resp_json(o, 200, srv_node_api_json(s, i));
			srv_reply_when_durable(s, r, srv_enqueue(s), "");
		}
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* --- small routes ------------------------------------------------------- */

int srv_api_whoami(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct caller *c = caller_of(r);

	(void)ctx;
	drv_http_resp_json(o, 200, json_pack("{s:s,s:b}", "user", c->user, "admin", c->admin));
	return 0;
}

/* One pool's entry of /v1/cluster. */
static json_t *pool_json(struct drv_server *s, int32_t p)
{
	struct srv_gpu_count c = { 0 };
	const char *model = NULL;

	for (int32_t i = 0; i < s->nnodes; i++) {
		const struct drv_node *cn = &s->cluster.nodes[i];

		if (cn->pool != p)
			continue;
		if (!model && cn->model >= 0)
			model = drv_gpu_model_at(cn->model)->id;
		srv_node_gpus(s, i, &c);
	}
	return json_pack("{s:s,s:o,s:I,s:I,s:I,s:I,s:f}", "name", s->cluster.pools[p].name,
			 "model", model ? json_string(model) : json_null(), "total",
			 (json_int_t)c.total, "allocated", (json_int_t)c.allocated, "free",
			 (json_int_t)c.free, "unavailable", (json_int_t)c.unavailable,
			 "price_per_gpu_hour",
			 (double)s->cluster.pools[p].price_micro_per_gpu_hour / 1e6);
}

int srv_api_cluster(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	json_t *pools = json_array(), *jobs = json_object(), *nodes, *out;
	const char *part;
	int nst[3] = { 0 };
	struct srv_gpu_count c = { 0 };
	int64_t jc[J_NSTATES] = { 0 };

	(void)r;
	pthread_mutex_lock(&s->mu);
	for (int32_t p = 0; p < s->cluster.npools; p++)
		json_array_append_new(pools, pool_json(s, p));
	for (int32_t i = 0; i < s->nnodes; i++) {
		nst[s->nodes[i].state]++;
		srv_node_gpus(s, i, &c);
	}
	srv_jobs_by_state(s, jc);
	part = srv_default_partition(s);
	pthread_mutex_unlock(&s->mu);
	for (int k = 0; k < J_NSTATES; k++)
		json_object_set_new(jobs, srv_jstate_name((enum jstate)k), json_integer(jc[k]));
	nodes = json_pack("{s:i,s:i,s:i}", "up", nst[DRV_NODE_UP], "draining",
			  nst[DRV_NODE_DRAINING], "down", nst[DRV_NODE_DOWN]);
	out = json_pack("{s:o,s:{s:I,s:I,s:I,s:I},s:o,s:o}", "nodes", nodes, "gpus", "total",
			(json_int_t)c.total, "allocated", (json_int_t)c.allocated, "free",
			(json_int_t)c.free, "unavailable", (json_int_t)c.unavailable, "pools",
			pools, "jobs", jobs);
	/* what the Slurm faces need (docs/slurm.md): squeue's MinJobAge, sinfo's star */
	json_object_set_new(out, "min_job_age_s", json_integer((json_int_t)s->cfg.min_job_age_s));
	json_object_set_new(out, "default_partition", json_string(part));
	drv_http_resp_json(o, 200, out);
	return 0;
}

int srv_api_healthz(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	int64_t v;
	int rc;

	(void)r;
	if (__atomic_load_n(&s->role, __ATOMIC_ACQUIRE) == SRV_ROLE_STANDBY) {
		json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:i}", "status", "ok", "version",
				      "0.1.0", "store", "postgres", "role", "standby", "term",
				      (json_int_t)__atomic_load_n(&s->term, __ATOMIC_ACQUIRE),
				      "uptime_s",
				      (json_int_t)((drv_mono_ms() - s->started_ms) / 1000),
				      "agent_protocol", s->proto);

		pthread_mutex_lock(&s->ha_mu);
		if (s->leader_url[0] && strcmp(s->leader_url, s->advertise))
			json_object_set_new(j, "leader", json_string(s->leader_url));
		pthread_mutex_unlock(&s->ha_mu);
		drv_http_resp_json(o, 200, j);
		return 0;
	}
	if (__atomic_load_n(&s->loading, __ATOMIC_ACQUIRE)) {
		drv_http_resp_json(o, 503, json_pack("{s:s,s:s,s:s,s:I}", "status", "loading",
						     "message", "the controller is loading its state",
						     "role", srv_role_name(s), "term",
						     (json_int_t)__atomic_load_n(&s->term,
										 __ATOMIC_ACQUIRE)));
		return 0;
	}
	pthread_mutex_lock(&s->store_mu);
	rc = drv_store_get_meta(s->store, "epoch", &v);
	pthread_mutex_unlock(&s->store_mu);
	if (rc < 0 && rc != DRV_ENOENT) {
		drv_http_resp_error(o, 503, "unavailable", NULL, "the state store cannot be read: %s",
				    s->store->err);
		return 0;
	}
	drv_http_resp_json(o, 200, json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:i}", "status", "ok",
					     "version", "0.1.0", "store",
					     s->store_url ? "postgres" : "sqlite", "role",
					     srv_role_name(s), "term",
					     (json_int_t)__atomic_load_n(&s->term, __ATOMIC_ACQUIRE),
					     "uptime_s",
					     (json_int_t)((drv_mono_ms() - s->started_ms) / 1000),
					     "agent_protocol", s->proto));
	return 0;
}

int srv_api_metrics(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct drv_prom w;
	size_t len;
	char *text;

	(void)r;
	drv_prom_init(&w);
	srv_ha_metrics(s, &w);
	/* a standby (or a leader still loading) has nothing else of its own */
	if (__atomic_load_n(&s->role, __ATOMIC_ACQUIRE) != SRV_ROLE_STANDBY &&
	    !__atomic_load_n(&s->loading, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&s->mu);
		srv_render_metrics(s, &w);
		pthread_mutex_unlock(&s->mu);
	}
	text = drv_prom_take(&w, &len);
	drv_http_resp_bytes(o, 200, DRV_PROM_CONTENT_TYPE, text, len);
	drv_free(text);
	drv_prom_release(&w);
	return 0;
}

/* --- watch -------------------------------------------------------------- */

struct watch {
	struct drv_server *s;
	int64_t since;
	uint64_t job;
	const char *user;      /* NULL = admin (all) */
	int64_t deadline_ms;   /* long-poll */
	int64_t last_write_ms; /* SSE keepalive */
	char *pending;         /* SSE bytes not yet handed out */
	size_t plen, poff;
};

static bool visible(const struct watch *w, uint64_t job, const char *user)
{
	if (w->job && job != w->job)
		return false;
	if (w->user && job && (!user || strcmp(user, w->user) != 0))
		return false;
	return true;
}

struct collect {
	struct watch *w;
	json_t *items;
	int64_t last;
	int max;
};

static int from_store(const struct drv_store_event *e, void *cls)
{
	struct collect *c = cls;
	json_t *ev;

	c->last = e->seq;
	ev = json_loads(e->doc, 0, NULL);
	if (!ev)
		return 0;
	if (!visible(c->w, e->job, drv_json_str(ev, "user"))) {
		json_decref(ev);
		return 0;
	}
	json_object_set_new(ev, "seq", json_integer(e->seq));
	json_array_append_new(c->items, ev);
	return (int)json_array_size(c->items) >= c->max;
}

/* Events after w->since visible to w, at most max; under s->mu. Returns
 * the last seq examined (so a caller can move past invisible ones). */
static int64_t collect(struct drv_server *s, struct watch *w, json_t *items, int max)
{
	struct collect c = { w, items, w->since, max };
	int64_t oldest = s->ring_n ? s->ring[s->ring_start].seq : s->last_seq + 1;

	/* older than the ring: read the log up to where the ring starts */
	while (c.last + 1 < oldest && (int)json_array_size(items) < max) {
		int64_t before = c.last;

		pthread_mutex_lock(&s->store_mu);
		s->store->ops->load_events(s->store, c.last, 0, 1000, from_store, &c);
		pthread_mutex_unlock(&s->store_mu);
		if (c.last == before)
			break;
	}
	if ((int)json_array_size(items) >= max)
		return c.last;
	for (size_t k = 0; k < s->ring_n; k++) {
		struct ring_event *e = &s->ring[(s->ring_start + k) % s->ring_cap];

		if (e->seq <= c.last)
			continue;
		c.last = e->seq;
		if (visible(w, e->job, e->user))
			json_array_append(items, e->ev);
		if ((int)json_array_size(items) >= max)
			break;
	}
	return c.last;
}

/* Puts the SSE form of items ("id:", "event:", "data:" lines) in w->pending. */
static void sse_encode(struct watch *w, json_t *items)
{
	size_t i, cap = 0;
	json_t *ev;

	drv_free(w->pending);
	w->pending = NULL;
	w->plen = w->poff = 0;
	json_array_foreach(items, i, ev) {
		char head[96], *text = json_dumps(ev, JSON_COMPACT);
		size_t hl, tl;

		hl = (size_t)snprintf(head, sizeof(head), "id: %lld\nevent: %s\ndata: ",
				      (long long)json_integer_value(json_object_get(ev, "seq")),
				      drv_json_str(ev, "type") ? drv_json_str(ev, "type") : "job");
		tl = strlen(text);
		DRV_GROW(w->pending, w->plen + hl + tl + 3, cap);
		memcpy(w->pending + w->plen, head, hl);
		memcpy(w->pending + w->plen + hl, text, tl);
		memcpy(w->pending + w->plen + hl + tl, "\n\n", 2);
		w->plen += hl + tl + 2;
		free(text);
	}
}

/*
 * Refills w->pending with the next events, or a keepalive comment when
 * 15 s passed without a write. Returns 1, 0 when there is nothing yet,
 * -1 when the server stops. Under s->mu.
 */
static int sse_refill(struct drv_server *s, struct watch *w)
{
	json_t *items;

	if (s->stopping)
		return -1;
	items = json_array();
	w->since = collect(s, w, items, 100);
	if (json_array_size(items)) {
		sse_encode(w, items);
	} else if (drv_mono_ms() - w->last_write_ms >= 15000) {
		drv_free(w->pending);
		w->pending = drv_strdup(": keepalive\n\n");
		w->plen = strlen(w->pending);
		w->poff = 0;
	} else {
		json_decref(items);
		return 0;
	}
	json_decref(items);
	w->last_write_ms = drv_mono_ms();
	return 1;
}

/* The stream's reader: never waits; 0 (nothing yet) suspends the stream
 * until the next wake (drv_http_resp_stream). */
static ssize_t sse_read(void *cls, char *buf, size_t max)
{
	struct watch *w = cls;
	struct drv_server *s = w->s;
	size_t n;

	if (w->poff >= w->plen) {
		int rc;

		pthread_mutex_lock(&s->mu);
		rc = sse_refill(s, w);
		pthread_mutex_unlock(&s->mu);
		if (rc <= 0)
			return rc;
	}
	n = DRV_MIN(max, w->plen - w->poff);
	memcpy(buf, w->pending + w->poff, n);
	w->poff += n;
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct watch *w = cls;

	drv_free(w->pending);
	drv_free((char *)w->user);
	drv_free(w);
}

/* The long-poll's deferred reply: the events after w->since, once there
 * are any, or none at the deadline. */
static int watch_ready(void *cls, struct drv_http_resp *resp, int timed_out)
{
	struct watch *w = cls;
	struct drv_server *s = w->s;
	json_t *items = json_array();
	bool answer;

	pthread_mutex_lock(&s->mu);
	w->since = collect(s, w, items, 1000);
	answer = json_array_size(items) || s->stopping || timed_out ||
		 drv_mono_ms() >= w->deadline_ms;
	pthread_mutex_unlock(&s->mu);
	if (!answer) {
		json_decref(items);
		return DRV_HTTP_AGAIN;
	}
	drv_http_resp_json(resp, 200, json_pack("{s:o,s:I}", "items", items, "next",
						(json_int_t)w->since));
	return 0;
}

int srv_api_watch(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct caller *c = caller_of(r);
	const char *accept = drv_http_req_header(r, "Accept");
	const char *lei = drv_http_req_header(r, "Last-Event-ID");
	int64_t since, job, timeout;
	struct watch *w;

	if (drv_http_req_query_int(r, "since", -1, -1, INT64_MAX, &since, o) < 0 ||
	    drv_http_req_query_int(r, "job", 0, 0, INT64_MAX, &job, o) < 0 ||
	    drv_http_req_query_int(r, "timeout", 30, 0, 300, &timeout, o) < 0)
		return 0;
	if (since < 0 && lei && *lei)
		since = strtoll(lei, NULL, 10);
	w = drv_calloc(1, sizeof(*w));
	w->s = s;
	w->job = (uint64_t)job;
	w->user = c->admin ? NULL : drv_strdup(c->user);
	pthread_mutex_lock(&s->mu);
	w->since = since < 0 ? s->last_seq : since;
	pthread_mutex_unlock(&s->mu);
	if (accept && strstr(accept, "text/event-stream")) {
		w->last_write_ms = drv_mono_ms();
		/* the first bytes go out at once, so the client sees the stream open */
		w->pending = drv_strdup(": drover watch\n\n");
		w->plen = strlen(w->pending);
		drv_http_resp_stream(o, 200, "text/event-stream", sse_read, w, sse_free);
		return 0;
	}
	w->deadline_ms = drv_mono_ms() + timeout * 1000;
	drv_http_defer(r, watch_ready, w, sse_free, timeout * 1000);
	return 0;
}
