/*
 * server.c: starting and stopping the controller (include/drover/server.h),
 * the route table of docs/api.md and the authentication filter.
 *
 * Start order: the state directory and its lock (state_lock.c: one
 * controller per directory, taken before anything in it is written),
 * config (tokens), the store (migrated), the cluster (file, or an empty
 * default pool), the HTTP server, restore of nodes and unfinished jobs,
 * then the scheduling loop. While the state loads, /healthz answers 503
 * "loading" and every other route 503 too (no request sees a half-built
 * controller), so a supervisor can tell a restart in progress from a dead
 * one. Stop runs it backwards.
 *
 * DROVER_STORE_FAULT=OP:AFTER in the environment wraps the store in the
 * fault backend and arms it (tests break a real server's writes this way);
 * DROVER_STORE_SLOW=OP:MS makes OP sleep first (tests watch a slow load;
 * list_jobs and get_job, the reads, slow the read connection).
 */
#include "server_int.h"
#include "kube_int.h"

#include "drover/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct drv_http_route srv_routes[] = {
	{ "GET", "/healthz", srv_api_healthz, ROUTE_OPEN },
	{ "GET", "/metrics", srv_api_metrics, ROUTE_OPEN },
	{ "POST", "/v1/jobs", srv_api_submit, ROUTE_USER },
	{ "GET", "/v1/jobs", srv_api_jobs, ROUTE_USER },
	{ "POST", "/v1/jobs/batch", srv_api_batch, ROUTE_USER },
	{ "GET", "/v1/jobs/{}", srv_api_job, ROUTE_USER | ROUTE_JOB },
	{ "POST", "/v1/jobs/{}/cancel", srv_api_cancel, ROUTE_USER },
	{ "POST", "/v1/jobs/{}/release", srv_api_release, ROUTE_USER },
	{ "POST", "/v1/jobs/{}/hold", srv_api_hold, ROUTE_USER },
	{ "POST", "/v1/jobs/{}/requeue", srv_api_requeue, ROUTE_USER },
	{ "POST", "/v1/jobs/{}/signal", srv_api_signal, ROUTE_USER },
	{ "PATCH", "/v1/jobs/{}", srv_api_job_patch, ROUTE_USER },
	{ "GET", "/v1/jobs/{}/logs", srv_api_logs, ROUTE_USER | ROUTE_JOB },
	{ "GET", "/v1/jobs/{}/exec", srv_api_exec, ROUTE_USER | ROUTE_JOB },
	{ "POST", "/v1/jobs/{}/steps", srv_api_step_create, ROUTE_USER | ROUTE_JOB },
	{ "GET", "/v1/jobs/{}/steps", srv_api_steps, ROUTE_USER | ROUTE_JOB },
	{ "GET", "/v1/jobs/{}/steps/{}", srv_api_step, ROUTE_USER | ROUTE_JOB },
	{ "POST", "/v1/jobs/{}/steps/{}/cancel", srv_api_step_cancel, ROUTE_USER | ROUTE_JOB },
	{ "GET", "/v1/jobs/{}/steps/{}/attach", srv_api_step_attach, ROUTE_USER | ROUTE_JOB },
	{ "POST", "/v1/apply", srv_api_apply, ROUTE_USER },
	{ "GET", "/v1/queue", srv_api_queue, ROUTE_USER },
	{ "GET", "/v1/nodes", srv_api_nodes, ROUTE_USER },
	{ "GET", "/v1/nodes/{}", srv_api_node, ROUTE_USER },
	{ "POST", "/v1/nodes/{}/drain", srv_api_drain, ROUTE_ADMIN },
	{ "POST", "/v1/nodes/{}/resume", srv_api_resume, ROUTE_ADMIN },
	{ "GET", "/v1/whoami", srv_api_whoami, ROUTE_USER },
	{ "GET", "/v1/cluster", srv_api_cluster, ROUTE_USER },
	{ "GET", "/v1/prometheus/targets", srv_api_prometheus_targets, ROUTE_USER },
	{ "GET", "/v1/watch", srv_api_watch, ROUTE_USER },
	{ "GET", "/v1/acct", srv_api_acct, ROUTE_USER },
	{ "POST", "/v1/agent/register", srv_agent_register, ROUTE_AGENT },
	{ "POST", "/v1/agent/sync", srv_agent_sync, ROUTE_AGENT },
	/* the Kubernetes-compatible API (kube_*.c, docs/kubernetes.md) */
	{ "*", "/version/**", srv_kube_version, ROUTE_USER | ROUTE_KUBE },
	{ "*", "/api/**", srv_kube_api, ROUTE_USER | ROUTE_KUBE },
	{ "*", "/apis/**", srv_kube_api, ROUTE_USER | ROUTE_KUBE },
	{ "*", "/openapi/**", srv_kube_openapi, ROUTE_USER | ROUTE_KUBE },
	{ NULL, NULL, NULL, 0 },
};

/* Callers are static per token: the filter hands out pointers into these. */
static struct caller agent_caller = { .user = "agent", .agent = true };

static int auth_filter_drover(struct drv_http_req *r, const struct drv_http_route *rt,
			      struct drv_http_resp *o, void *ctx);

/* The Kubernetes face's routes answer refusals with Status objects;
 * /version is open, as the apiserver's is (kubectl asks before its
 * credentials are checked). */
static int auth_filter(struct drv_http_req *r, const struct drv_http_route *rt,
		       struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	int rc;

	if (!(rt->flags & ROUTE_KUBE))
		return auth_filter_drover(r, rt, o, ctx);
	if (rt->fn == srv_kube_version && !__atomic_load_n(&s->loading, __ATOMIC_ACQUIRE))
		return 0;
	if (__atomic_load_n(&s->role, __ATOMIC_ACQUIRE) == SRV_ROLE_STANDBY)
		return auth_filter_drover(r, rt, o, ctx);   /* 307 to the leader */
	rc = auth_filter_drover(r, rt, o, ctx);
	if (rc != 0)
		kube_status_from_error(o);
	else if (((struct caller *)drv_http_req_user(r))->agent || ((struct caller *)drv_http_req_user(r))->job) {
		kube_status(o, 403, "Forbidden", NULL,
			    "the Kubernetes API takes user tokens, not agent or job tokens");
		return 1;
	}
	return rc;
}

static int auth_filter_drover(struct drv_http_req *r, const struct drv_http_route *rt,
			      struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	const char *h = drv_http_req_header(r, "Authorization");
	const char *tok = NULL;
	const struct token *t;

	if (h && strncasecmp(h, "Bearer ", 7) == 0)
		tok = h + 7;
	if (__atomic_load_n(&s->role, __ATOMIC_ACQUIRE) == SRV_ROLE_STANDBY &&
	    rt->fn != srv_api_healthz && rt->fn != srv_api_metrics) {
		srv_ha_redirect(s, r, o);
		return 1;
	}
	if (__atomic_load_n(&s->loading, __ATOMIC_ACQUIRE) && rt->fn != srv_api_healthz &&
	    !(rt->fn == srv_api_metrics && __atomic_load_n(&s->role, __ATOMIC_ACQUIRE) ==
	      SRV_ROLE_STANDBY)) {
		drv_http_resp_error(o, 503, "loading", NULL,
				    "the controller is loading its state; try again shortly");
		return 1;
	}
	if ((rt->flags & ROUTE_OPEN) && s->cfg.open_endpoints)
		return 0;
	if (!tok || !*tok) {
		drv_http_resp_error(o, 401, "unauthorized", NULL,
				    "no token: send Authorization: Bearer TOKEN");
		return 1;
	}
	if (srv_job_token_like(tok))
		return srv_job_auth(s, r, rt, tok, o);
	if (rt->flags & ROUTE_AGENT) {
		if (!drv_http_token_eq(s->cfg.cluster_token, tok)) {
			drv_http_resp_error(o, 401, "unauthorized", NULL,
					    "agent routes need the cluster token");
			return 1;
		}
		drv_http_req_set_user(r, &agent_caller);
		drv_http_req_set_cluster(r);
		return 0;
	}
	t = srv_config_find_token(&s->cfg, tok);
	if (!t) {
		drv_http_resp_error(o, 401, "unauthorized", NULL, "unknown token");
		return 1;
	}
	if ((rt->flags & ROUTE_ADMIN) && !t->admin) {
		drv_http_resp_error(o, 403, "forbidden", NULL, "%s %s: only an admin may do this",
				    drv_http_req_method(r), drv_http_req_path(r));
		return 1;
	}
	/* one caller per token, made at start; it lives as long as the config */
	drv_http_req_set_user(r, &s->callers[t - s->cfg.tokens]);
	return 0;
}

static struct drv_server *server_new(const struct drv_server_opts *o)
{
	struct drv_server *s = drv_calloc(1, sizeof(*s));

	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->loop_cv, NULL);
	pthread_mutex_init(&s->store_mu, NULL);
	pthread_mutex_init(&s->rstore_mu, NULL);
	pthread_mutex_init(&s->ha_mu, NULL);
	pthread_cond_init(&s->commit_cv, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	s->log = (struct drv_log){ o->log, "drover server", DRV_LOG_TIME };
	s->lock_fd = -1;
	s->started_ms = drv_mono_ms();
	s->ring_cap = 65536;
	s->ring = drv_calloc(s->ring_cap, sizeof(*s->ring));
	s->proto_seen = drv_proto_seen_new();
	drv_sched_decisions_init(&s->dec);
	drv_histogram_init(&s->pass_hist, drv_prom_latency_buckets, drv_prom_latency_nbuckets);
	return s;
}

/* The state directory and its lock, the config in it (or --config) and one
 * caller per token. */
static int load_config(struct drv_server *s, const struct drv_server_opts *o,
		       const char *listen, char *err, size_t errsz)
{
	char path[1200];
	int rc;

	if (drv_mkdir_p(o->state_dir, 0700) < 0) {
		snprintf(err, errsz, "cannot create the state directory %s: %s", o->state_dir,
			 strerror(errno));
		return DRV_EIO;
	}
	s->state_dir = drv_strdup(o->state_dir);
	rc = srv_state_lock(s, listen, err, errsz);
	if (rc < 0)
		return rc;
	if (o->config_file)
		s->config_path = drv_strdup(o->config_file);
	else {
		snprintf(path, sizeof(path), "%s/config.yaml", o->state_dir);
		s->config_path = drv_strdup(path);
	}
	rc = srv_config_load(s, s->config_path, o, err, errsz);
	if (rc < 0)
		return rc;
	s->callers = drv_calloc((size_t)s->cfg.ntokens + 1, sizeof(struct caller));
	for (int i = 0; i < s->cfg.ntokens; i++) {
		s->callers[i].user = s->cfg.tokens[i].user;
		s->callers[i].admin = s->cfg.tokens[i].admin;
	}
	return 0;
}

/* state.db, wrapped in the fault backend when DROVER_STORE_FAULT asks,
 * and the committer thread that writes it. */
static int open_store(struct drv_server *s, char *err, size_t errsz)
{
	const char *fault = getenv("DROVER_STORE_FAULT"), *slow = getenv("DROVER_STORE_SLOW");
	char path[1200];
	int rc;

	if (s->store_url) {
		rc = drv_store_open_pg(s->store_url, s->store_pw, &s->store, err, errsz);
		if (rc == 0)
			rc = drv_store_open_pg(s->store_url, s->store_pw, &s->rstore, err, errsz);
		if (rc == 0)
			rc = drv_store_fence(s->store, __atomic_load_n(&s->term, __ATOMIC_ACQUIRE));
		if (rc < 0)
			return rc;
	} else {
		snprintf(path, sizeof(path), "%s/state.db", s->state_dir);
		rc = drv_store_open_sqlite(path, &s->store, err, errsz);
		if (rc == 0)
			rc = drv_store_open_sqlite(path, &s->rstore, err, errsz);
		if (rc < 0)
			return rc;
	}
	if (fault && *fault) {
		char op[32] = "";
		int after = 0;
		struct drv_store *w;

		if (sscanf(fault, "%31[^:]:%d", op, &after) < 1) {
			snprintf(err, errsz, "DROVER_STORE_FAULT=%s: expected OP:AFTER", fault);
			return DRV_EINVAL;
		}
		drv_store_fault_wrap(s->store, &w);
		s->store = w;
		drv_store_fault_arm(s->store, op, after, DRV_EIO);
		drv_log(&s->log, "fault injection armed: %s fails after %d more calls", op, after);
	}
	if (slow && *slow) {
		char op[32] = "";
		int ms = 0;
		struct drv_store *w, **sp;
		bool read;

		if (sscanf(slow, "%31[^:]:%d", op, &ms) != 2) {
			snprintf(err, errsz, "DROVER_STORE_SLOW=%s: expected OP:MS", slow);
			return DRV_EINVAL;
		}
		/* reads go to the read connection, the rest to the writer's */
		read = !strcmp(op, "list_jobs") || !strcmp(op, "get_job");
		sp = read ? &s->rstore : &s->store;
		drv_store_fault_wrap(*sp, &w);
		*sp = w;
		drv_store_fault_slow(w, op, ms);
		drv_log(&s->log, "slow store armed: %s sleeps %d ms %s", op, ms,
			read ? "after reading" : "first");
	}
	if (pthread_create(&s->commit_thread, NULL, srv_commit_main, s) != 0) {
		snprintf(err, errsz, "cannot start the store thread");
		return DRV_EIO;
	}
	s->commit_started = true;
	return 0;
}

static int load_state(struct drv_server *s, char *err, size_t errsz);

/* --store (or `store:`): SQLite in the state directory, or PostgreSQL,
 * whose controllers share the database under the leader lease (ha.c). */
static int pick_store(struct drv_server *s, const struct drv_server_opts *o, char *err,
		      size_t errsz)
{
	const char *st = o->store ? o->store : s->cfg.store;
	int rc;

	if (!st || !strcmp(st, "sqlite"))
		return 0;
	if (!drv_store_is_pg_url(st)) {
		snprintf(err, errsz, "--store %s: expected sqlite or a postgres://USER@HOST:PORT/DB "
			 "URL", st);
		return DRV_EINVAL;
	}
	s->store_url = drv_strdup(st);
	s->store_pw = s->cfg.store_password_file ? drv_strdup(s->cfg.store_password_file) : NULL;
	rc = drv_store_open_pg(s->store_url, s->store_pw, &s->lease_store, err, errsz);
	if (rc == 0)
		drv_log(&s->log, "store: PostgreSQL (schema version %d)",
			drv_store_pg_schema_version());
	return rc;
}

/* Taking the lease (now or as a standby later): the stores fenced with
 * the term, then the state loaded as a restart loads it. */
static int promote(struct drv_server *s, char *err, size_t errsz)
{
	int rc = open_store(s, err, errsz);

	return rc < 0 ? rc : load_state(s, err, errsz);
}

/* The cluster and the scheduler with the tenants file. */
static int setup_scheduler(struct drv_server *s, const struct drv_server_opts *o, char *err,
			   size_t errsz)
{
	int rc;

	rc = srv_cluster_setup(s, o->cluster_file, err, errsz);
	if (rc < 0)
		return rc;
	s->sched = drv_sched_new(&s->cluster);
	rc = drv_tenants_apply(&s->cfg.tenants, s->sched);
	if (rc < 0) {
		snprintf(err, errsz, "%s: cannot apply to the scheduler: %s", s->cfg.tenants_path,
			 drv_strerror(rc));
		return DRV_EINVAL;
	}
	return 0;
}

/* The restored nodes and unfinished jobs (written back), then the
 * scheduling loop with a pass due; the routes open when it is done. */
static int load_state(struct drv_server *s, char *err, size_t errsz)
{
	int rc = srv_restore(s, err, errsz);

	if (rc < 0)
		return rc;
	srv_cost_restore(s);
	rc = srv_acct_month_restore(s);
	if (rc < 0) {
		snprintf(err, errsz, "cannot read the accounting rows: %s", s->store->err);
		return rc;
	}
	pthread_mutex_lock(&s->mu);
	rc = srv_flush(s);
	pthread_mutex_unlock(&s->mu);
	if (rc < 0) {
		snprintf(err, errsz, "cannot write the state: %s", s->commit_err);
		return rc;
	}
	srv_sched_kick(s);
	if (pthread_create(&s->loop_thread, NULL, srv_loop_main, s) != 0) {
		snprintf(err, errsz, "cannot start the scheduling thread");
		return DRV_EIO;
	}
	s->loop_started = true;
	pthread_mutex_lock(&s->mu);
	__atomic_store_n(&s->loading, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/*
 * The API listener: https when a certificate and key are given (the flags
 * win over the config's tls:), else plain HTTP, said in a warning when it
 * is bound beyond loopback. The CA (flag or config) checks agents' https.
 */
static int start_http(struct drv_server *s, const struct drv_server_opts *o, const char *listen,
		      char *err, size_t errsz)
{
	struct drv_http_server_opts ho = {
		.tls_cert_file = o->tls_cert ? o->tls_cert : s->cfg.tls_cert_file,
		.tls_key_file = o->tls_key ? o->tls_key : s->cfg.tls_key_file,
	};
	int rc;

	if (o->tls_ca)
		srv_set_str(&s->cfg.tls_ca_file, o->tls_ca);
	if (s->cfg.tls_ca_file && access(s->cfg.tls_ca_file, R_OK) != 0) {
		snprintf(err, errsz, "TLS CA file %s: %s", s->cfg.tls_ca_file, strerror(errno));
		return DRV_EINVAL;
	}
	drv_http_raise_nofile();   /* room for every agent's connection */
	rc = drv_http_server_start_opts(listen, &ho, srv_routes, auth_filter, s, &s->http, err,
					errsz);
	if (rc == DRV_EPERM)
		rc = DRV_EINVAL;   /* a key others may read: bad input, exit 2 */
	if (rc == DRV_EEXIST)  /* a setting that cannot work here: exit 2 */
		snprintf(err, errsz, "listen %s: the port is taken by another process (another "
			 "drover?); pick another with --listen or the config's listen", listen);
	if (rc == 0) {
		drv_http_server_set_client_limit(s->http, (unsigned)s->cfg.max_unauth_per_client);
		drv_http_server_set_auth_limits(s->http, (unsigned)s->cfg.max_user_conns_per_client,
						(unsigned)s->cfg.max_cluster_conns_per_client);
	}
	if (rc == 0 && !drv_http_server_tls(s->http) && !drv_http_addr_loopback(listen))
		drv_log(&s->log, "warning: plain HTTP on %s, which is not loopback: tokens, job "
			"commands and environments cross the network unencrypted; set tls.cert_file "
			"and tls.key_file (or --tls-cert/--tls-key)", listen);
	return rc;
}

int drv_server_start(const struct drv_server_opts *o, struct drv_server **out, char *err,
		     size_t errsz)
{
	struct drv_server *s = server_new(o);
	char host[256], addr[300];
	const char *listen = o->listen ? o->listen : "127.0.0.1:8080";
	int port, rc;

	if (!o->state_dir || !*o->state_dir) {
		snprintf(err, errsz, "--state DIR is required");
		rc = DRV_EINVAL;
		goto fail;
	}
	if (drv_http_parse_addr(listen, host, sizeof(host), &port) < 0) {
		snprintf(err, errsz, "--listen %s: expected ADDR:PORT, e.g. 127.0.0.1:8080", listen);
		rc = DRV_EINVAL;
		goto fail;
	}
	s->proto = drv_proto_speaks(err, errsz);
	if (s->proto < 0) {
		rc = s->proto;
		goto fail;
	}
	rc = load_config(s, o, listen, err, errsz);
	if (rc == 0)
		rc = srv_job_key_load(s, err, errsz);
	if (rc < 0)
		goto fail;
	rc = pick_store(s, o, err, errsz);
	if (rc < 0)
		goto fail;
	if (!s->store_url) {
		rc = open_store(s, err, errsz);
		if (rc < 0)
			goto fail;
	}
	rc = setup_scheduler(s, o, err, errsz);
	if (rc < 0)
		goto fail;
	s->loading = 1;
	rc = start_http(s, o, listen, err, errsz);
	if (rc < 0)
		goto fail;
	snprintf(s->url, sizeof(s->url), "%s://%s:%d", drv_http_server_tls(s->http) ? "https" : "http",
		 host[0] == '\0' || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "*") == 0
			 ? "127.0.0.1" : host,
		 drv_http_server_port(s->http));
	if (s->store_url) {
		snprintf(s->advertise, sizeof(s->advertise), "%s",
			 o->advertise ? o->advertise : s->cfg.advertise_url ? s->cfg.advertise_url
									  : s->url);
		rc = srv_ha_start(s, promote, err, errsz);
	} else {
		rc = load_state(s, err, errsz);
	}
	if (rc < 0)
		goto fail;
	snprintf(addr, sizeof(addr), "%s:%d", host[0] ? host : "0.0.0.0",
		 drv_http_server_port(s->http));
	srv_state_lock_listening(s, addr);
	drv_log(&s->log, "listening on %s (state %s, %llu jobs, %d nodes)", s->url, s->state_dir,
		(unsigned long long)s->njobs, s->nnodes);
	*out = s;
	return 0;
fail:
	drv_server_stop(s);
	return rc;
}

int drv_server_port(const struct drv_server *s)
{
	return s->http ? drv_http_server_port(s->http) : 0;
}

const char *drv_server_url(const struct drv_server *s)
{
	return s->url;
}

const char *drv_server_admin_token(const struct drv_server *s)
{
	for (int i = 0; i < s->cfg.ntokens; i++)
		if (s->cfg.tokens[i].admin)
			return s->cfg.tokens[i].token;
	return NULL;
}

const char *drv_server_cluster_token(const struct drv_server *s)
{
	return s->cfg.cluster_token;
}

const char *drv_server_role(const struct drv_server *s)
{
	return srv_role_name(s);
}

const char *drv_server_config_path(const struct drv_server *s)
{
	return s->config_path;
}

void drv_server_stop(struct drv_server *s)
{
	struct drv_http_server *http;

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	pthread_cond_broadcast(&s->cv);
	pthread_cond_broadcast(&s->loop_cv);
	/* no thread may wake the HTTP server once it is being freed; its stop
	 * answers every waiting reply without a wake */
	http = s->http;
	s->http = NULL;
	pthread_mutex_unlock(&s->mu);
	srv_ha_stop(s);   /* the lease thread and a takeover's load end first */
	drv_http_server_stop(http);
	srv_logs_drain(s);
	if (s->loop_started)
		pthread_join(s->loop_thread, NULL);
	if (s->commit_started) {
		pthread_mutex_lock(&s->mu);
		srv_flush(s);
		s->commit_stop = true;
		pthread_cond_signal(&s->commit_cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->commit_thread, NULL);
	}
	srv_ha_release(s);
	if (s->sched)
		drv_sched_free(s->sched);
	drv_capacity_free(s->capacity);
	drv_dynbuf_release(&s->cap_inputs);
	drv_sched_decisions_release(&s->dec);
	for (uint64_t i = 0; i < s->njobs; i++)
		srv_job_free(s->jobs[i]);
	drv_free(s->jobs);
	drv_free(s->evict_later);
	for (int32_t i = 0; i < s->nnodes; i++) {
		struct srv_node *n = &s->nodes[i];

		drv_free(n->name);
		drv_free(n->reason);
		drv_free(n->address);
		drv_free(n->agent_url);
		json_decref(n->inventory);
		json_decref(n->health);
		json_decref(n->labels);
	}
	drv_free(s->nodes);
	drv_free(s->node_index);
	if (s->cluster.nlevels)
		drv_cluster_release(&s->cluster);
	drv_store_close(s->store);
	drv_store_close(s->rstore);
	drv_store_close(s->lease_store);
	drv_free(s->store_url);
	drv_free(s->store_pw);
	for (size_t k = 0; k < s->ring_n; k++) {
		struct ring_event *e = &s->ring[(s->ring_start + k) % s->ring_cap];

		drv_free(e->user);
		json_decref(e->ev);
	}
	drv_free(s->ring);
	srv_kobjs_free(s);
	for (size_t k = 0; k < s->npend; k++)
		srv_pend_release(&s->pend[k]);
	drv_free(s->pend);
	srv_cost_release(s);
	drv_free(s->active);
	drv_free(s->parents);
	drv_free(s->dirty);
	drv_free(s->dirty_nodes);
	drv_free(s->announce);
	drv_free(s->callers);
	srv_waits_release(s);
	srv_idem_release(s);
	drv_proto_seen_free(s->proto_seen);
	drv_histogram_release(&s->pass_hist);
	srv_config_release(&s->cfg);
	srv_job_callers_free(s);
	drv_free(s->config_path);
	srv_state_unlock(s); /* last: the store is closed */
	drv_free(s->state_dir);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->loop_cv);
	pthread_mutex_destroy(&s->store_mu);
	pthread_mutex_destroy(&s->rstore_mu);
	pthread_mutex_destroy(&s->ha_mu);
	pthread_cond_destroy(&s->commit_cv);
	pthread_cond_destroy(&s->done_cv);
	drv_free(s);
}
