/*
 * agent_api.c: the controller's side of the agent protocol of docs/api.md
 * (messages: include/drover/proto.h): register (inventory, a new session)
 * and the one sync exchange each agent keeps going on its connection
 * (GPU health, task states and reports up; the level-triggered task set
 * down when its version changed, else after the heartbeat interval). A
 * waiting sync is a deferred reply (include/drover/http.h): it holds its
 * connection, no thread; so does a register or a report waiting for the
 * disk.
 *
 * Fencing: every register gets a new session; a node declared down loses
 * its session, so its agent must register again. Every job start gets a
 * new epoch; a (task, epoch) the controller no longer wants comes back in
 * a sync's "stale" list (the agent kills it) and is absent from the
 * node's task set, which tells the agent to kill it too.
 */
#include "server_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYNC_WAIT_MAX_S 60

static bool valid_name(const char *n)
{
	if (!n || !*n || strlen(n) >= DRV_NAME_MAX)
		return false;
	for (const char *p = n; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return false;
	return true;
}

/* "42.3" -> job 42, rank 3. */
static bool parse_task_id(const char *tid, uint64_t *job, int32_t *rank)
{
	char *end;
	unsigned long long j;
	long r;

	if (!tid)
		return false;
	j = strtoull(tid, &end, 10);
	if (*end != '.' || end == tid)
		return false;
	r = strtol(end + 1, &end, 10);
	if (*end || r < 0)
		return false;
	*job = j;
	*rank = (int32_t)r;
	return true;
}

/* The node of a request with its session checked; -1 after setting 409. */
static int32_t session_node(struct drv_server *s, const char *name, int64_t session,
			    struct drv_http_resp *o)
{
	int32_t i = name ? srv_node_find(s, name) : -1;

	if (i < 0) {
		drv_http_resp_error(o, 409, "conflict", NULL,
				    "node %s is not registered; register again", name ? name : "");
		return -1;
	}
	if (!s->nodes[i].registered || s->nodes[i].session != session) {
		drv_http_resp_error(o, 409, "conflict", NULL,
				    "node %s: session %lld is gone (current %lld%s); register again",
				    name, (long long)session, (long long)s->nodes[i].session,
				    s->nodes[i].registered ? "" : ", node declared down");
		return -1;
	}
	return i;
}

static void proto_log(void *cls, const char *line)
{
	struct drv_server *s = cls;

	drv_log(&s->log, "%s", line);
}

/* Reads the request's body as JSON into a message with decode(); 0, or -1
 * after a 400 naming the key. */
static int read_message(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
			int (*decode)(json_t *, void *, struct drv_proto_dec *), void *msg)
{
	struct drv_proto_dec d = { .peer = drv_http_req_peer(r), .seen = s->proto_seen,
				   .log = proto_log, .log_cls = s };
	json_t *b = drv_http_req_json(r, o);
	int rc;

	if (!b)
		return -1;
	rc = decode(b, msg, &d);
	json_decref(b);
	if (rc < 0)
		drv_http_resp_error(o, 400, "invalid", NULL, "%s", d.err);
	return rc < 0 ? -1 : 0;
}

static int decode_register(json_t *j, void *m, struct drv_proto_dec *d)
{
	return drv_proto_register_decode(j, m, d);
}

static int decode_sync(json_t *j, void *m, struct drv_proto_dec *d)
{
	return drv_proto_sync_decode(j, m, d);
}

/* --- register ---------------------------------------------------------------- */

/* The inventory's GPU model (-1 without GPUs); -2 after a 400. */
static int inventory_model(const struct drv_proto_register *m, struct drv_http_resp *o)
{
	int model = -1;

	for (size_t k = 0; k < m->ngpus; k++) {
		int mi = drv_gpu_model_find(m->gpus[k].model);

		if (mi < 0) {
			drv_http_resp_error(o, 400, "invalid", NULL,
					    "gpus[%zu].model: \"%s\" is no GPU model drover knows", k,
					    m->gpus[k].model);
			return -2;
		}
		if (model >= 0 && mi != model) {
			drv_http_resp_error(o, 400, "invalid", NULL,
					    "gpus[%zu].model: %s, but gpus[0] is %s: a node's GPUs must "
					    "be one model", k, m->gpus[k].model, m->gpus[0].model);
			return -2;
		}
		model = mi;
	}
	return model;
}

/* What can be refused before looking at the cluster; the model or -2. */
static int register_check(const struct drv_server *s, const struct drv_proto_register *m,
			  struct drv_http_resp *o)
{
	char msg[200];

	if (!valid_name(m->name)) {
		drv_http_resp_error(o, 400, "invalid", NULL,
				    "name: \"%s\": expected a node name of letters, digits, '-', '_', '.'",
				    m->name);
		return -2;
	}
	if (drv_proto_versions_check(s->proto, m->protocol, "agent", "controller", msg,
				     sizeof(msg)) < 0) {
		drv_http_resp_error(o, 409, "conflict", NULL, "node %s: %s", m->name, msg);
		return -2;
	}
	if (m->ngpus > DRV_MAX_NODE_GPUS) {
		drv_http_resp_error(o, 400, "invalid", NULL, "gpus: %zu GPUs, at most %d on a node",
				    m->ngpus, DRV_MAX_NODE_GPUS);
		return -2;
	}
	return inventory_model(m, o);
}

static const char *model_id(int model)
{
	return model >= 0 ? drv_gpu_model_at(model)->id : "no GPU";
}

/* Finds or adds the node; -1 after a 409/500. Caller holds s->mu. */
static int32_t register_node(struct drv_server *s, const struct drv_proto_register *m, int model,
			     struct drv_http_resp *o)
{
	json_t *labels = drv_proto_kv_encode(m->labels, m->nlabels);
	int ngpus = (int)m->ngpus;
	int32_t i = srv_node_find(s, m->name);

	if (i < 0) {
		i = srv_node_add(s, m->name, model, ngpus, m->cpu_milli, m->mem_mib, labels);
		if (i < 0)
			drv_http_resp_error(o, 500, "internal", NULL, "cannot add node %s: %s", m->name,
					    drv_strerror(i));
		else
			drv_log(&s->log, "node %s joined: %d x %s in pool %s", m->name, ngpus,
				model_id(model), s->cfg.default_pool);
	} else if (s->cluster.nodes[i].ngpus != ngpus ||
		   (ngpus && s->cluster.nodes[i].model != model)) {
		drv_http_resp_error(o, 409, "conflict", NULL,
				    "node %s is known with %d x %s; this agent has %d x %s (use "
				    "another --name, or fix the cluster file)", m->name,
				    s->cluster.nodes[i].ngpus, model_id(s->cluster.nodes[i].model),
				    ngpus, model_id(model));
		i = -1;
	} else {
		json_decref(s->nodes[i].labels);
		s->nodes[i].labels = json_incref(labels);
	}
	if (i >= 0)
		srv_node_runtime_label(s, i, labels);
	json_decref(labels);
	return i;
}

/* A new session for node i, its inventory and addresses. Caller holds s->mu. */
static void open_session(struct drv_server *s, int32_t i, const struct drv_proto_register *m,
			 struct drv_http_req *r)
{
	struct srv_node *n = &s->nodes[i];

	n->session = ++s->session;
	s->meta_dirty = true;
	n->registered = true;
	n->ever_registered = true;
	n->last_hb_ms = drv_mono_ms();
	n->last_reply_ms = n->last_hb_ms;
	n->last_hb_wall = drv_wall_s();
	n->lease_wait = false;
	srv_node_fresh_version(s, i);   /* not one the agent may hold */
	json_decref(n->inventory);
	n->inventory = drv_proto_register_encode(m);
	json_object_del(n->inventory, "running");
	srv_set_str(&n->address, m->address ? m->address : drv_http_req_peer(r));
	srv_set_str(&n->agent_url, m->agent_url);
	srv_node_mark(s, i);
	if (n->state == DRV_NODE_DOWN)
		srv_node_set_state(s, i, n->admin_drain ? DRV_NODE_DRAINING : DRV_NODE_UP,
			       n->admin_drain ? n->reason : "agent registered");
}

static json_t *registered_reply(struct drv_server *s, int32_t i)
{
	struct drv_proto_registered a;
	int32_t pool = s->cluster.nodes[i].pool;
	json_t *o;

	drv_proto_registered_init(&a);
	a.node = s->nodes[i].name;
	a.session = s->nodes[i].session;
	a.heartbeat_interval_s = s->cfg.heartbeat_interval_s;
	a.heartbeat_timeout_s = s->cfg.heartbeat_timeout_s;
	a.agent_lease_s = s->cfg.agent_lease_s;
	a.allow_root_tasks = s->cfg.allow_root_tasks;
	a.endpoints_closed = !s->cfg.open_endpoints;
	a.pool = pool >= 0 ? s->cluster.pools[pool].name : NULL;
	a.protocol = s->proto >= 2 ? s->proto : 0;   /* version 1 did not say */
	o = drv_proto_registered_encode(&a);
	json_object_set(o, "labels", s->nodes[i].labels ? s->nodes[i].labels : json_object());
	return o;
}

/* The entry of (tid, epoch) in the register's task list, or NULL. */
static const struct drv_proto_ref *listed(const struct drv_proto_register *m, const char *tid,
					  int64_t epoch)
{
	for (size_t k = 0; k < m->nrunning; k++)
		if (m->running[k].epoch == epoch && strcmp(m->running[k].task_id, tid) == 0)
			return &m->running[k];
	return NULL;
}

static void report_running(struct drv_server *s, struct srv_job *j, struct srv_task *t);

/*
 * A registering agent lists every task it knows of (its journal): those
 * still running, and those that ended and whose end it has yet to report
 * (that report follows in its next sync). What the controller assigned
 * to this node is reconciled with the list: a listed running task is
 * adopted (it runs, whatever the controller heard before); a task the
 * controller knew started but the agent does not know is lost (the
 * node's journal is gone), and its gang is requeued; a task never
 * reported started and not listed is still to start (it stays in the
 * task set). What the agent lists and the controller no longer wants is
 * absent from the task set and stale in the next sync: the agent stops
 * it. Caller holds s->mu.
 */
static void reconcile(struct drv_server *s, int32_t i, const struct drv_proto_register *m)
{
	size_t nids;
	uint64_t *ids = srv_active_copy(s, &nids);

	for (size_t k = 0; k < nids; k++) {
		struct srv_job *j = srv_job_get(s, ids[k]);
		const char *lost = NULL;
		char tid[48];

		for (int32_t t = 0; j && t < j->ntasks; t++) {
			const struct drv_proto_ref *x;

			if (j->tasks[t].node != i || j->tasks[t].ended || srv_task_held(s, j, t))
				continue;
			snprintf(tid, sizeof(tid), "%llu.%d", (unsigned long long)j->id, t);
			x = listed(m, tid, j->epoch);
			if (x && (!x->state || !strcmp(x->state, "running")))
				report_running(s, j, &j->tasks[t]);
			else if (!x && j->tasks[t].state == T_RUNNING)
				lost = "restarted without a record of the job's task (its journal is gone)";
		}
		if (lost)
			srv_job_requeue_node_down(s, j, m->name, lost);
	}
	drv_free(ids);
}

int srv_agent_register(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct drv_proto_register m;
	uint64_t ticket;
	int model;
	int32_t i;

	if (read_message(s, r, o, decode_register, &m) < 0)
		return 0;
	model = register_check(s, &m, o);
	if (model < -1)
		goto out;
	pthread_mutex_lock(&s->mu);
	i = register_node(s, &m, model, o);
	if (i < 0)
		goto unlock;
	open_session(s, i, &m, r);
	reconcile(s, i, &m);
	ticket = srv_enqueue(s);
	drv_http_resp_json(o, 200, registered_reply(s, i));
	pthread_cond_broadcast(&s->cv);
	drv_http_wake(s->http);
	drv_http_wake_key(s->http, SRV_KEY_NODE(i));   /* a new session */
	srv_reply_when_durable(s, r, ticket, "");
unlock:
	pthread_mutex_unlock(&s->mu);
out:
	drv_proto_register_release(&m);
	return 0;
}

/* --- the sync's way up: health, task states, reports ---------------------------- */

/* Does the controller want (task, epoch) on node i? */
static bool wanted(struct drv_server *s, int32_t i, const char *tid, int64_t epoch)
{
	uint64_t jid;
	int32_t rank;
	struct srv_job *j;

	if (!parse_task_id(tid, &jid, &rank))
		return srv_step_wanted(s, i, tid, epoch);
	j = srv_job_get(s, jid);
	return j && j->epoch == epoch && rank < j->ntasks && j->tasks[rank].node == i &&
	       !j->tasks[rank].ended && !srv_task_held(s, j, rank);
}

/* Whether GPU index was healthy in a health array (the last sync's); -1
 * when it was not there. */
static int was_healthy(const json_t *health, int64_t index)
{
	size_t k;
	json_t *g;

	json_array_foreach(health, k, g)
		if (drv_json_int(g, "index", -1) == index)
			return drv_json_bool(g, "healthy", 1);
	return -1;
}

/* An event for each GPU whose health changed since the last sync (one
 * first seen unhealthy too), so that /v1/watch shows a GPU that fails or
 * comes back even when the node's state does not change. */
static void health_events(struct drv_server *s, struct srv_node *n,
			  const struct drv_proto_sync *m)
{
	for (size_t k = 0; k < m->ngpus; k++) {
		const struct drv_proto_gpu_health *g = &m->gpus[k];
		int was = n->health ? was_healthy(n->health, g->index) : -1;
		char why[160];

		if (was == (int)g->healthy || (was < 0 && g->healthy))
			continue;
		snprintf(why, sizeof(why), "GPU %lld %s (xid %lld, %lld uncorrectable ECC)",
			 (long long)g->index, g->healthy ? "healthy again" : "unhealthy",
			 (long long)DRV_MAX(g->xid, 0), (long long)DRV_MAX(g->ecc_uncorrected, 0));
		srv_queue_event(s, "gpu_health", NULL, n->name,
				was < 0 ? "unknown" : was ? "healthy" : "unhealthy",
				g->healthy ? "healthy" : "unhealthy", why);
	}
}

/* Liveness and GPU health; an unhealthy GPU drains the node. */
static void sync_health(struct drv_server *s, int32_t i, const struct drv_proto_sync *m)
{
	struct srv_node *n = &s->nodes[i];

	s->heartbeats++;
	/* the agent renews its lease from when it sent this sync, which is
	 * before now: counting from now, the controller never ends the lease
	 * early */
	n->last_hb_ms = drv_mono_ms();
	n->last_reply_ms = n->last_hb_ms;
	n->last_hb_wall = drv_wall_s();
	if (!m->ngpus)
		return;
	health_events(s, n, m);
	json_decref(n->health);
	n->health = drv_proto_gpu_health_encode(m->gpus, m->ngpus);
	for (size_t k = 0; k < m->ngpus; k++) {
		const struct drv_proto_gpu_health *g = &m->gpus[k];
		char why[160];

		if (g->healthy || n->health_drain || n->state != DRV_NODE_UP)
			continue;
		snprintf(why, sizeof(why), "GPU %lld unhealthy (xid %lld, %lld uncorrectable ECC)",
			 (long long)g->index, (long long)DRV_MAX(g->xid, 0),
			 (long long)DRV_MAX(g->ecc_uncorrected, 0));
		n->health_drain = true;
		srv_node_set_state(s, i, DRV_NODE_DRAINING, why);
	}
}

/* What a sync carries and what its answer will say; it outlives the
 * handler once the wait is deferred. */
struct sync_call {
	struct drv_server *s;
	struct drv_proto_sync m;
	uint64_t ticket;             /* its reports' write; 0 none */
	int32_t node;                /* its index (nodes are never removed) */
	int64_t deadline_ms;
	bool at_once;                /* reports or stale pairs: answer now */
	struct drv_proto_ref *stale;
	size_t nstale, stale_cap;
};

static void add_stale(struct sync_call *c, const char *tid, int64_t epoch)
{
	DRV_GROW(c->stale, c->nstale + 1, c->stale_cap);
	c->stale[c->nstale++] = (struct drv_proto_ref){ .task_id = tid, .epoch = epoch,
							 .reason = "stale epoch" };
	c->at_once = true;
}

static void job_maybe_running(struct drv_server *s, struct srv_job *j)
{
	if (j->state != J_SCHEDULED)
		return;
	for (int32_t k = 0; k < j->ntasks; k++)
		if ((j->tasks[k].state == T_PENDING || j->tasks[k].state == T_STARTING) &&
		    !srv_task_held(s, j, k))
			return;
	j->start_time = drv_wall_s();
	srv_wait_observe(s, j->spec.job.tenant, (double)(j->start_time - j->submit_time));
	srv_job_transition(s, j, J_RUNNING, "every task started");
}

static void report_running(struct drv_server *s, struct srv_job *j, struct srv_task *t)
{
	if (t->state != T_PENDING && t->state != T_STARTING)
		return;
	t->state = T_RUNNING;
	t->start_time = drv_wall_s();
	if (t - j->tasks == srv_job_batch_rank(s, j))
		/* the batch script runs: the shares held for its steps run too */
		for (int32_t k = 0; k < j->ntasks; k++)
			if (!j->tasks[k].ended && j->tasks[k].state == T_PENDING) {
				j->tasks[k].state = T_RUNNING;
				j->tasks[k].start_time = t->start_time;
			}
	srv_job_mark(s, j);
	if (!j->stop_reason)
		job_maybe_running(s, j);
}

static void report_exited(struct drv_server *s, struct srv_job *j, int32_t rank,
			  const struct drv_proto_report *rep)
{
	struct srv_task *t = &j->tasks[rank];

	t->exit_code = (int)rep->exit_code;
	t->signal = (int)rep->signal;
	t->oom = rep->oom_killed;
	if (rep->usage)
		srv_task_set_usage(t, rep->usage);
	if (!t->start_time)
		t->start_time = drv_wall_s();
	if (j->stop_reason)
		t->state = T_CANCELLED;
	else if (t->exit_code == 0 && t->signal == 0 && !t->oom)
		t->state = T_SUCCEEDED;
	else
		t->state = T_FAILED;
	t->timed_out = rep->timed_out && !t->oom && !j->stop_reason;
	if (t->oom)
		srv_set_str(&t->reason, "OOM-killed");
	if (t->timed_out) {
		char why[96];

		snprintf(why, sizeof(why), "stopped at the job's time limit (%lld s)",
			 (long long)j->spec.job.time_limit);
		srv_set_str(&t->reason, why);
	}
	if (!j->stop_reason) {
		/* it ran: the job was running, however briefly */
		bool all_started = true;

		for (int32_t x = 0; x < j->ntasks; x++)
			all_started &= x == rank || j->tasks[x].state != T_PENDING ||
				       srv_task_held(s, j, x);
		if (all_started && j->state == J_SCHEDULED) {
			enum tstate keep = t->state;

			t->state = T_RUNNING;
			job_maybe_running(s, j);
			t->state = keep;
		}
	}
	srv_task_ended(s, j, rank);
}

/* A report's "drain": the node's prolog or epilog failed. The node drains
 * (new work goes elsewhere; what runs there keeps running) until an admin
 * resumes it, as Slurm drains a node whose Prolog or Epilog fails. */
static void hook_drain(struct drv_server *s, int32_t i, const char *why)
{
	struct srv_node *n = &s->nodes[i];

	if (n->health_drain || n->admin_drain || n->state != DRV_NODE_UP)
		return;
	n->health_drain = true;
	n->dirty = true;
	srv_node_set_state(s, i, DRV_NODE_DRAINING, why);
}

/* Applies one report from node i; false when its (task, epoch) is stale. */
static bool apply_report(struct drv_server *s, int32_t i, const struct drv_proto_report *rep)
{
	uint64_t jid;
	int32_t rank;
	struct srv_job *j;
	struct srv_task *t;

	if (rep->drain)   /* the node's, whatever the task's fate */
		hook_drain(s, i, rep->drain);
	if (!parse_task_id(rep->task_id, &jid, &rank))
		return srv_step_report(s, i, rep) == 0;
	j = srv_job_get(s, jid);
	if (!j || j->epoch != rep->epoch || rank >= j->ntasks || j->tasks[rank].node != i)
		return false;
	t = &j->tasks[rank];
	srv_task_set_container(t, &rep->container);
	if (t->ended)
		return rep->state != DRV_PROTO_RUNNING;
	switch (rep->state) {
	case DRV_PROTO_RUNNING:
		report_running(s, j, t);
		break;
	case DRV_PROTO_EXITED:
		if (rep->fenced && !j->stop_reason && !srv_jstate_final(j->state)) {
			/* the lease stopped it, not the task: the node was lost */
			srv_job_requeue_node_down(s, j, s->nodes[i].name,
						  "stopped the job's task when its agent's lease ran "
						  "out (no exchange with the controller)");
			break;
		}
		report_exited(s, j, rank, rep);
		break;
	case DRV_PROTO_FAILED:
		if (rep->requeue && !j->stop_reason && !srv_jstate_final(j->state)) {
			char why[600];

			snprintf(why, sizeof(why), "could not start the job's task: %s",
				 rep->reason ? rep->reason : "no reason given");
			srv_job_requeue_node_down(s, j, s->nodes[i].name, why);
			break;
		}
		t->state = j->stop_reason ? T_CANCELLED : T_FAILED;
		srv_set_str(&t->reason, rep->reason ? rep->reason : "could not start");
		srv_task_ended(s, j, rank);
		break;
	}
	return true;
}

/* What a running task used so far: kept in memory (the job's record is
 * written when something else changes; the end report's figures are
 * written with the end). */
static void live_usage(struct drv_server *s, const struct drv_proto_ref *r)
{
	uint64_t jid;
	int32_t rank;
	struct srv_job *j;

	if (parse_task_id(r->task_id, &jid, &rank) && (j = srv_job_get(s, jid)) &&
	    rank < j->ntasks) {
		srv_task_set_usage(&j->tasks[rank], r->usage);
		srv_task_set_container(&j->tasks[rank], &r->container);
	}
}

/* Task states and reports of the sync; the stale ones go to c. */
static void sync_tasks(struct drv_server *s, int32_t i, struct sync_call *c)
{
	for (size_t k = 0; k < c->m.ntasks; k++)
		if (!wanted(s, i, c->m.tasks[k].task_id, c->m.tasks[k].epoch))
			add_stale(c, c->m.tasks[k].task_id, c->m.tasks[k].epoch);
		else if (c->m.tasks[k].usage)
			live_usage(s, &c->m.tasks[k]);
	for (size_t k = 0; k < c->m.nreports; k++)
		if (!apply_report(s, i, &c->m.reports[k]))
			add_stale(c, c->m.reports[k].task_id, c->m.reports[k].epoch);
	c->at_once |= c->m.nreports > 0;
}

/* --- the sync's way down: the node's task set ----------------------------------- */

/* Where rank stands in its gang: peers, node ranks, local ranks. */
static void gang_position(struct drv_server *s, struct srv_job *j, int32_t rank,
			  struct drv_proto_task *a)
{
	int32_t node_order[256], nn = 0, here = j->tasks[rank].node;

	a->peers = drv_calloc((size_t)j->ntasks, sizeof(*a->peers));
	a->local_world_size = 0;
	for (int32_t k = 0; k < j->ntasks; k++) {
		int32_t nd = j->tasks[k].node, x;

		for (x = 0; x < nn && node_order[x] != nd; x++)
			;
		if (x == nn && nn < 256)
			node_order[nn++] = nd;
		if (nd == here) {
			a->node_rank = x;
			a->local_rank += k < rank;
			a->local_world_size++;
		}
		a->peers[a->npeers++] = (struct drv_proto_peer){
			.rank = k, .node = s->nodes[nd].name,
			.address = s->nodes[nd].address ? s->nodes[nd].address : s->nodes[nd].name };
	}
	a->nnodes = nn;
}

/* An assignment's own strings, which it borrows until it is encoded. */
struct task_strs {
	char tid[48];
	char token[SRV_JOB_TOKEN_MAX];   /* DROVER_JOB_TOKEN (job_token.c) */
	char *slurm;                     /* SLURM_* values (slurm_env.c); NULL none */
	char *batch_io;                  /* the batch step's files (slurm_env.c); NULL none */
	char **own;                      /* $(VAR)-expanded strings (k8s_expand) */
	size_t nown;
	bool *lit;                       /* env[i] is literal: a resolved Secret's value */
	struct srv_strs res;             /* resolved values and volume files */
};

/* ts empty: every pointer NULL. The array ts lives in grows by realloc,
 * so each entry is set here before anything may free it (a step's entry
 * too: sync_answer frees lit and res for every one). */
static void task_strs_init(struct task_strs *ts)
{
	memset(ts, 0, sizeof(*ts));
}

/* What task rank of j runs: command, script, env (Secrets and ConfigMaps
 * resolved: kube_config.c), volumes, image. */
static void task_run(struct drv_server *s, const struct srv_job *j, const struct drv_task_run *run,
		     struct drv_proto_task *a, struct task_strs *ts)
{
	if (!run)
		return;
	a->image = run->image;
	a->container = run->container;
	a->script = run->script;
	a->workdir = run->working_dir;
	a->runtime = srv_run_needs_container(run) ? "podman" : "host";
	a->pull_policy = run->image_pull_policy;
	a->command_len = run->ncommand;
	a->host_ipc = run->host_ipc;
	a->run_as_uid = run->run_as_user;
	a->run_as_gid = run->run_as_group;
	a->run_as_non_root = run->run_as_non_root == 1;
	a->mounts = drv_calloc((size_t)run->nmounts + 1, sizeof(*a->mounts));
	for (int32_t k = 0; k < run->nmounts; k++) {
		const struct drv_mount *m = &run->mounts[k];
		bool mem = m->medium && !strcmp(m->medium, "Memory");

		if (mem && !strcmp(m->mount_path, "/dev/shm")) {
			a->shm_mib = m->size_mib;   /* 0: the agent's default */
			continue;
		}
		a->mounts[a->nmounts++] = (struct drv_proto_mount){
			.name = m->name, .type = m->type, .host_path = m->host_path,
			.container_path = m->mount_path, .sub_path = m->sub_path,
			.read_only = m->read_only, .memory = mem, .size_mib = m->size_mib };
	}
	a->argv = drv_calloc((size_t)(run->ncommand + run->nargs), sizeof(*a->argv));
	for (int32_t k = 0; k < run->ncommand; k++)
		a->argv[a->nargv++] = run->command[k];
	for (int32_t k = 0; k < run->nargs; k++)
		a->argv[a->nargv++] = run->args[k];
	srv_kobjs_task(s, j, run, a, 1 /* the job token */, &ts->lit, &ts->res);
}


/*
 * A manifest's command, args and env with $(VAR) expanded as kubelet does
 * (drv_k8s_expand): each env value sees the entries before it, command and
 * args see all of them. a's strings are replaced by ones ts owns.
 */
static void k8s_expand(const struct drv_task_run *run, struct drv_proto_task *a,
		       struct task_strs *ts)
{
	struct drv_env *env;
	int32_t n = 0;

	if (!run)
		return;
	ts->own = drv_calloc(a->nenv + a->nargv + 1, sizeof(*ts->own));
	env = drv_calloc(a->nenv + 1, sizeof(*env));
	for (size_t k = 0; k < a->nenv; k++) {
		char *v = ts->lit && ts->lit[k] ? drv_strdup(a->env[k].value)
			: drv_k8s_expand(a->env[k].value, env, n);

		ts->own[ts->nown++] = v;
		a->env[k].value = v;
		env[n++] = (struct drv_env){ (char *)a->env[k].name, v, NULL };
	}
	for (size_t k = 0; k < a->nargv; k++) {
		char *v = drv_k8s_expand(a->argv[k], env, n);

		ts->own[ts->nown++] = v;
		a->argv[k] = v;
	}
	drv_free(env);
}

/* The GPUs, CPU and memory task rank runs with: its own; for the batch
 * step of an #SBATCH job, the job's whole share of the node (Slurm's batch
 * step sees every GPU the job holds on its node). */
static void batch_share(struct drv_server *s, struct srv_job *j, int32_t rank,
			struct drv_proto_task *a)
{
	struct srv_task *t = &j->tasks[rank];
	uint64_t mask = t->gpu_mask;

	a->gpu_milli = t->gpu_milli;
	a->cpu_milli = t->cpu_milli;
	a->mem_mib = t->mem_mib;
	if (rank == srv_job_batch_rank(s, j))
		for (int32_t k = 0; k < j->ntasks; k++) {
			if (k == rank || j->tasks[k].node != t->node)
				continue;
			mask |= j->tasks[k].gpu_mask;
			a->cpu_milli += j->tasks[k].cpu_milli;
			a->mem_mib += j->tasks[k].mem_mib;
		}
	a->gpus = drv_calloc(64, sizeof(*a->gpus));
	for (int g = 0; g < 64; g++)
		if (mask & (1ull << g))
			a->gpus[a->ngpus++] = g;
}

/* The assignment of task rank of j; strings borrowed from s (hold s->mu
 * until it is encoded) and from ts, arrays freed by assignment_release. */
static void assignment(struct drv_server *s, struct srv_job *j, int32_t rank,
		       struct drv_proto_task *a, struct task_strs *ts)
{
	struct srv_task *t = &j->tasks[rank];
	const struct drv_task_run *run = j->spec.run ? &j->spec.run[t->group] : NULL;
	struct srv_node *m = &s->nodes[j->tasks[0].node];

	drv_proto_task_init(a);
	task_strs_init(ts);
	snprintf(ts->tid, sizeof(ts->tid), "%llu.%d", (unsigned long long)j->id, rank);
	a->task_id = ts->tid;
	a->job_id = (int64_t)j->id;
	a->job_name = j->spec.job.name;
	a->epoch = j->epoch;
	a->stop = j->stop_reason != NULL;
	a->stop_reason = j->stop_reason;
	a->user = j->spec.job.user;
	task_run(s, j, run, a, ts);
	if (j->spec.format == DRV_FMT_MANIFEST)
		k8s_expand(run, a, ts);
	/* last, so that the job's own env cannot replace it */
	srv_job_token(s, j->id, j->attempt, ts->token, sizeof(ts->token));
	if (!a->env)
		a->env = drv_calloc(1, sizeof(*a->env));
	a->env[a->nenv++] = (struct drv_proto_kv){ "DROVER_JOB_TOKEN", ts->token };
	batch_share(s, j, rank, a);
	a->rank = rank;
	a->world_size = j->ntasks;
	gang_position(s, j, rank, a);
	ts->slurm = j->spec.format == DRV_FMT_SBATCH ? srv_slurm_env(s, j, rank, a) : NULL;
	ts->batch_io = j->spec.format == DRV_FMT_SBATCH ? srv_slurm_batch_io(s, j, rank, a) : NULL;
	a->master_addr = m->address ? m->address : m->name;
	a->master_port = 29500 + j->epoch % 10000;
	a->time_limit_s = j->spec.job.time_limit;
	a->output_max_bytes = s->cfg.task_output_max_bytes;
	/* an #SBATCH job's own task is its batch shell; others' tasks are the job */
	if (j->sig_seq && (j->spec.format != DRV_FMT_SBATCH || (j->sig_to & SRV_SIG_BATCH))) {
		a->signal = j->sig_num;
		a->signal_seq = j->sig_seq;
		a->signal_group = j->spec.format != DRV_FMT_SBATCH;
	}
	a->grace_s = j->requeue_quiet ? 0
		     : run && run->termination_grace_s >= 0 ? run->termination_grace_s : 30;
}

/* The assignment of task rank of step st of j, as assignment() above. */
static void step_assignment(struct drv_server *s, struct srv_job *j, struct srv_step *st,
			    int32_t rank, struct drv_proto_task *a, struct task_strs *ts)
{
	struct srv_task *t = &st->tasks[rank];
	struct srv_node *m = &s->nodes[st->tasks[0].node];
	const struct drv_task_run *run = j->spec.run ? &j->spec.run[t->group] : NULL;
	int32_t nodes = 0, last = -1;

	drv_proto_task_init(a);
	task_strs_init(ts);
	snprintf(ts->tid, sizeof(ts->tid), "%llu.s%d.%d", (unsigned long long)j->id, st->id, rank);
	a->task_id = ts->tid;
	a->job_id = (int64_t)j->id;
	a->job_name = j->spec.job.name;
	a->epoch = j->epoch;
	a->stop = j->stop_reason || st->stop_reason;
	a->stop_reason = j->stop_reason ? j->stop_reason : st->stop_reason;
	a->user = j->spec.job.user;
	a->argv = drv_calloc((size_t)st->nargv, sizeof(*a->argv));
	for (int32_t k = 0; k < st->nargv; k++)
		a->argv[a->nargv++] = st->argv[k];
	a->workdir = st->cwd ? st->cwd : run ? run->working_dir : NULL;
	a->env = drv_calloc((size_t)st->nenv + 1, sizeof(*a->env));
	for (int32_t k = 0; k < st->nenv; k++) {
		/* in a container the image's PATH stands, as under pyxis */
		if (st->container_image && !strcmp(st->env[k].name, "PATH"))
			continue;
		a->env[a->nenv++] = (struct drv_proto_kv){ st->env[k].name, st->env[k].value };
	}
	if (st->container_image) {   /* srun --container-image: argv is the command */
		a->image = st->container_image;
		a->runtime = "podman";
		a->pull_policy = "IfNotPresent";
		a->command_len = st->nargv;
		a->workdir = st->container_workdir;   /* NULL: the image's */
		a->mounts = drv_calloc((size_t)st->nmounts + 1, sizeof(*a->mounts));
		for (int32_t k = 0; k < st->nmounts; k++)
			a->mounts[a->nmounts++] = (struct drv_proto_mount){
				.name = "container-mount", .type = "hostPath",
				.host_path = st->mounts[k].src, .container_path = st->mounts[k].dst,
				.read_only = st->mounts[k].read_only };
	}
	a->gpus = drv_calloc(64, sizeof(*a->gpus));
	for (int g = 0; g < 64; g++)
		if (t->gpu_mask & (1ull << g))
			a->gpus[a->ngpus++] = g;
	a->gpu_milli = t->gpu_milli ? t->gpu_milli : 1000;
	a->cpu_milli = t->cpu_milli;
	a->rank = rank;
	a->world_size = st->ntasks;
	a->local_rank = st->local[rank];
	a->local_world_size = 0;
	for (int32_t k = 0; k < st->ntasks; k++) {
		a->local_world_size += st->tasks[k].node == t->node;
		if (st->tasks[k].node != last)
			nodes++, last = st->tasks[k].node;
		if (k == rank)
			a->node_rank = nodes - 1;
	}
	a->nnodes = nodes;
	ts->slurm = srv_slurm_step_env(s, j, st, rank, a);
	srv_job_token(s, j->id, j->attempt, ts->token, sizeof(ts->token));
	a->env = drv_realloc(a->env, (a->nenv + 1) * sizeof(*a->env));
	a->env[a->nenv++] = (struct drv_proto_kv){ "DROVER_JOB_TOKEN", ts->token };
	a->master_addr = m->address ? m->address : m->name;
	a->master_port = 29500 + j->epoch % 10000;
	a->output_max_bytes = s->cfg.task_output_max_bytes;
	if (j->sig_seq && (j->sig_to & SRV_SIG_STEPS)) {
		a->signal = j->sig_num;
		a->signal_seq = j->sig_seq;
		a->signal_group = true;
	}
	a->grace_s = run && run->termination_grace_s >= 0 ? run->termination_grace_s : 30;
	if (st->pty && rank == 0) {   /* srun --pty: task 0's terminal */
		a->pty = true;
		a->pty_rows = st->pty_rows;
		a->pty_cols = st->pty_cols;
	}
}

static void assignment_release(struct drv_proto_task *a)
{
	drv_free(a->mounts);
	srv_kobjs_task_release(a);
	drv_free(a->argv);
	drv_free(a->env);
	drv_free(a->gpus);
	drv_free(a->peers);
}

/* The tasks node i should run now, into r (ids in tids). */
static void desired_set(struct drv_server *s, int32_t i, struct drv_proto_sync_reply *r,
			struct task_strs **tids)
{
	size_t cap = 0;

	for (size_t k = 0; k < s->nactive; k++) {
		struct srv_job *j = srv_job_get(s, s->active[k]);

		/* a start is announced only once it is on disk */
		if (!j || j->durable_epoch != j->epoch)
			continue;
		for (int32_t t = 0; t < j->ntasks; t++) {
			if (j->tasks[t].node != i || j->tasks[t].ended || srv_task_held(s, j, t))
				continue;
			if (r->ntasks == cap) {
				size_t c2 = cap;

				DRV_GROW(r->tasks, r->ntasks + 1, cap);
				DRV_GROW(*tids, r->ntasks + 1, c2);
			}
			assignment(s, j, t, &r->tasks[r->ntasks], &(*tids)[r->ntasks]);
			r->ntasks++;
		}
		for (int32_t q = 0; q < j->nsteps; q++)
			for (int32_t t = 0; t < j->steps[q]->ntasks; t++) {
				struct srv_task *x = &j->steps[q]->tasks[t];

				if (x->node != i || x->ended)
					continue;
				if (r->ntasks == cap) {
					size_t c2 = cap;

					DRV_GROW(r->tasks, r->ntasks + 1, cap);
					DRV_GROW(*tids, r->ntasks + 1, c2);
				}
				step_assignment(s, j, j->steps[q], t, &r->tasks[r->ntasks],
						&(*tids)[r->ntasks]);
				r->ntasks++;
			}
	}
}

/* --- the sync exchange ---------------------------------------------------------- */

/* Whether c can be answered now: cheap, a waiting sync is asked after
 * every drv_http_wake(). Caller holds s->mu. */
static bool sync_ready(struct drv_server *s, const struct sync_call *c)
{
	const struct srv_node *n = &s->nodes[c->node];

	return c->at_once || s->stopping || drv_mono_ms() >= c->deadline_ms || !n->registered ||
	       n->session != c->m.session || (int64_t)n->version != c->m.version;
}

/* The answer: the task set when its version moved, the stale pairs.
 * Caller holds s->mu. */
static void sync_answer(struct drv_server *s, const struct sync_call *c, struct drv_http_resp *o)
{
	struct drv_proto_sync_reply r;
	struct task_strs *tids = NULL;
	int32_t i = session_node(s, c->m.node, c->m.session, o);

	if (i < 0)
		return;
	drv_proto_sync_reply_init(&r);
	r.version = (int64_t)s->nodes[i].version;
	r.heartbeat_interval_s = s->cfg.heartbeat_interval_s;
	r.agent_lease_s = s->cfg.agent_lease_s;
	r.allow_root_tasks = s->cfg.allow_root_tasks;
	r.endpoints_closed = !s->cfg.open_endpoints;
	r.has_tasks = r.version != c->m.version;
	if (r.has_tasks)
		desired_set(s, i, &r, &tids);
	r.stale = c->stale;
	r.nstale = c->nstale;
	drv_http_resp_json(o, 200, drv_proto_sync_reply_encode(&r));
	for (size_t k = 0; k < r.ntasks; k++) {
		assignment_release(&r.tasks[k]);
		drv_free(tids[k].slurm);
		drv_free(tids[k].batch_io);
		for (size_t x = 0; x < tids[k].nown; x++)
			drv_free(tids[k].own[x]);
		drv_free(tids[k].own);
		drv_free(tids[k].lit);
		srv_strs_release(&tids[k].res);
	}
	drv_free(r.tasks);
	drv_free(tids);
}

/*
 * The deferred reply of a sync (include/drover/http.h): called after the
 * handler, after each wake of the key it waits on (its commit, then its
 * node: a pass over thousands of waiting agents calls only the few whose
 * node changed) and at the deadline. It answers
 * once the sync's reports are on disk and it is ready, holding no thread
 * meanwhile.
 */
static int sync_reply_fn(void *cls, struct drv_http_resp *o, int timed_out)
{
	struct sync_call *c = cls;
	struct drv_server *s = c->s;
	int st;

	pthread_mutex_lock(&s->mu);
	st = c->ticket ? srv_ticket_state(s, c->ticket) : 0;
	if (!timed_out && (st > 0 || !sync_ready(s, c))) {
		/* only its commit, or its own node, can make it ready */
		drv_http_wait_on(st > 0 ? SRV_KEY_COMMIT : SRV_KEY_NODE(c->node));
		pthread_mutex_unlock(&s->mu);
		return DRV_HTTP_AGAIN;
	}
	if (st > 0)   /* deadline or stop before its commit: one fsync at most */
		st = srv_wait(s, c->ticket);
	if (st < 0)
		drv_http_resp_error(o, 503, "unavailable", NULL,
				    "the reports are not on disk: the state store cannot write (%s)",
				    s->commit_err);
	else
		sync_answer(s, c, o);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* Takes in what the agent says; -1 after an error reply. Caller holds s->mu. */
static int sync_up(struct drv_server *s, struct sync_call *c, struct drv_http_resp *o)
{
	int32_t i = session_node(s, c->m.node, c->m.session, o);

	if (i < 0)
		return -1;
	c->node = i;
	sync_health(s, i, &c->m);
	sync_tasks(s, i, c);
	/* reports are answered once on disk; a drain for health is written
	 * soon, and nobody waits for it */
	if (c->m.nreports)
		c->ticket = srv_enqueue(s);
	else if (s->nodes[i].dirty)
		srv_enqueue(s);
	return 0;
}

static void sync_call_free(void *cls)
{
	struct sync_call *c = cls;

	drv_proto_sync_release(&c->m);
	drv_free(c->stale);
	drv_free(c);
}

int srv_agent_sync(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct sync_call *c = drv_calloc(1, sizeof(*c));
	int64_t wait_ms;
	int rc;

	c->s = s;
	if (read_message(s, r, o, decode_sync, &c->m) < 0) {
		sync_call_free(c);
		return 0;
	}
	wait_ms = DRV_MIN(c->m.wait_s >= 0 ? c->m.wait_s : s->cfg.heartbeat_interval_s,
			  SYNC_WAIT_MAX_S) * 1000;
	c->deadline_ms = drv_mono_ms() + wait_ms;
	pthread_mutex_lock(&s->mu);
	rc = sync_up(s, c, o);
	pthread_mutex_unlock(&s->mu);
	if (rc < 0)
		sync_call_free(c);
	else
		drv_http_defer(r, sync_reply_fn, c, sync_call_free, wait_ms);
	return 0;
}
