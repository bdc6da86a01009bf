/*
 * agent_api.c: the agent protocol of docs/api.md: register (inventory),
 * heartbeat (liveness, GPU health, tasks to kill), the level-triggered
 * assignments long-poll, and task reports that move jobs through their
 * lifecycle.
 *
 * Fencing: every register gets a new session; a node declared down loses
 * its session, so its agent must register again. Every job start gets a
 * new epoch; a (task, epoch) the controller no longer wants is answered
 * "kill" in heartbeats, "stale" in reports, and is absent from the
 * node's assignments, which tells the agent to kill it.
 */
#include "server_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The node of a request with its session checked; -1 after setting 409/404. */
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

int srv_agent_register(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	json_t *b = drv_http_req_json(r, o), *gpus, *g, *labels;
	const char *name, *mname = NULL;
	int model = -1, ngpus = 0;
	size_t k;
	int32_t i;
	struct snode *n;

	if (!b)
		return 0;
	name = drv_json_str(b, "name");
	if (!valid_name(name)) {
		drv_http_resp_error(o, 400, "invalid", NULL,
				    "name: \"%s\": expected a node name of letters, digits, '-', '_', '.'",
				    name ? name : "");
		goto out;
	}
	gpus = json_object_get(b, "gpus");
	if (gpus && !json_is_array(gpus)) {
		drv_http_resp_error(o, 400, "invalid", NULL, "gpus: expected a list");
		goto out;
	}
	json_array_foreach(gpus, k, g) {
		const char *m = drv_json_str(g, "model");
		int mi = m ? drv_gpu_model_find(m) : -1;

		if (mi < 0) {
			drv_http_resp_error(o, 400, "invalid", NULL,
					    "gpus[%zu].model: \"%s\" is no GPU model drover knows", k,
					    m ? m : "");
			goto out;
		}
		if (model >= 0 && mi != model) {
			drv_http_resp_error(o, 400, "invalid", NULL,
					    "gpus[%zu].model: %s, but gpus[0] is %s: a node's GPUs must "
					    "be one model", k, m, mname);
			goto out;
		}
		model = mi;
		mname = m;
		ngpus++;
	}
	if (ngpus > DRV_MAX_NODE_GPUS) {
		drv_http_resp_error(o, 400, "invalid", NULL, "gpus: %d GPUs, at most %d on a node",
				    ngpus, DRV_MAX_NODE_GPUS);
		goto out;
	}
	labels = json_object_get(b, "labels");
	if (labels && !json_is_object(labels)) {
		drv_http_resp_error(o, 400, "invalid", NULL, "labels: expected a mapping");
		goto out;
	}
	pthread_mutex_lock(&s->mu);
	i = srv_node_find(s, name);
	if (i < 0) {
		i = srv_node_add(s, name, model, ngpus, drv_json_int(b, "cpu_milli", 0),
			     drv_json_int(b, "mem_mib", 0), labels);
		if (i < 0) {
			drv_http_resp_error(o, 500, "internal", NULL, "cannot add node %s: %s", name,
					    drv_strerror(i));
			goto unlock;
		}
		srv_log(s, "node %s joined: %d x %s in pool %s", name, ngpus,
			model >= 0 ? drv_gpu_model_at(model)->id : "no GPU", s->cfg.default_pool);
	} else {
		const struct drv_node *cn = &s->cluster.nodes[i];

		if (cn->ngpus != ngpus || (ngpus && cn->model != model)) {
			drv_http_resp_error(
				o, 409, "conflict", NULL,
				"node %s is known with %d x %s; this agent has %d x %s (use another "
				"--name, or fix the cluster file)",
				name, cn->ngpus, cn->model >= 0 ? drv_gpu_model_at(cn->model)->id : "no GPU",
				ngpus, model >= 0 ? drv_gpu_model_at(model)->id : "no GPU");
			goto unlock;
		}
		if (labels) {
			json_decref(s->nodes[i].labels);
			s->nodes[i].labels = json_deep_copy(labels);
		}
	}
	n = &s->nodes[i];
	n->session = ++s->session;
	s->meta_dirty = true;
	n->registered = true;
	n->ever_registered = true;
	n->last_hb_ms = srv_now_ms();
	n->last_hb_wall = srv_wall_s();
	n->version = (uint64_t)srv_wall_s() * 1000 + (n->version % 1000) + 1;
	json_decref(n->inventory);
	n->inventory = json_deep_copy(b);
	json_object_del(n->inventory, "running");
	srv_set_str(&n->address, drv_json_str(b, "address") ? drv_json_str(b, "address")
							 : drv_http_req_peer(r));
	srv_set_str(&n->agent_url, drv_json_str(b, "agent_url"));
	n->dirty = true;
	if (n->state == DRV_NODE_DOWN)
		srv_node_set_state(s, i, n->admin_drain ? DRV_NODE_DRAINING : DRV_NODE_UP,
			       n->admin_drain ? n->reason : "agent registered");
	if (srv_flush(s) < 0) {
		drv_http_resp_error(o, 503, "unavailable", NULL, "the state store cannot write (%s)",
				    s->commit_err);
		goto unlock;
	}
	n = &s->nodes[i];   /* nodes[] may have grown while the disk worked */
	drv_http_resp_json(o, 200,
			   json_pack("{s:s,s:I,s:I,s:I,s:s?,s:O}", "node", n->name, "session",
				     (json_int_t)n->session, "heartbeat_interval_s",
				     (json_int_t)s->cfg.heartbeat_interval_s, "heartbeat_timeout_s",
				     (json_int_t)s->cfg.heartbeat_timeout_s, "pool",
				     s->cluster.nodes[i].pool >= 0
					     ? s->cluster.pools[s->cluster.nodes[i].pool].name
					     : NULL,
				     "labels", n->labels));
	pthread_cond_broadcast(&s->cv);
	drv_http_wake(s->http);
unlock:
	pthread_mutex_unlock(&s->mu);
out:
	json_decref(b);
	return 0;
}

/* Does the controller want (task, epoch) on node i? */
static bool wanted(struct drv_server *s, int32_t i, const char *tid, int64_t epoch)
{
	uint64_t jid;
	int32_t rank;
	struct sjob *j;

	if (!parse_task_id(tid, &jid, &rank))
		return false;
	j = srv_job_get(s, jid);
	return j && j->epoch == epoch && rank < j->ntasks && j->tasks[rank].node == i &&
	       !j->tasks[rank].ended;
}

int srv_agent_heartbeat(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	json_t *b = drv_http_req_json(r, o), *tasks, *t, *gpus, *kill;
	size_t k;
	int32_t i;

	if (!b)
		return 0;
	pthread_mutex_lock(&s->mu);
	i = session_node(s, drv_json_str(b, "node"), drv_json_int(b, "session", -1), o);
	if (i < 0)
		goto unlock;
	s->heartbeats++;
	s->nodes[i].last_hb_ms = srv_now_ms();
	s->nodes[i].last_hb_wall = srv_wall_s();
	gpus = json_object_get(b, "gpus");
	if (json_is_array(gpus)) {
		json_decref(s->nodes[i].health);
		s->nodes[i].health = json_deep_copy(gpus);
		json_array_foreach(gpus, k, t) {
			if (json_is_false(json_object_get(t, "healthy")) && !s->nodes[i].health_drain &&
			    s->nodes[i].state == DRV_NODE_UP) {
				char why[160];

				snprintf(why, sizeof(why), "GPU %lld unhealthy (xid %lld, %lld uncorrectable ECC)",
					 (long long)drv_json_int(t, "index", -1),
					 (long long)drv_json_int(t, "xid", 0),
					 (long long)drv_json_int(t, "ecc_uncorrected", 0));
				s->nodes[i].health_drain = true;
				srv_node_set_state(s, i, DRV_NODE_DRAINING, why);
			}
		}
	}
	kill = json_array();
	tasks = json_object_get(b, "tasks");
	json_array_foreach(tasks, k, t) {
		const char *tid = drv_json_str(t, "task_id");
		int64_t ep = drv_json_int(t, "epoch", -1);

		if (tid && !wanted(s, i, tid, ep))
			json_array_append_new(kill, json_pack("{s:s,s:I,s:s}", "task_id", tid, "epoch",
							      (json_int_t)ep, "reason", "stale epoch"));
	}
	srv_enqueue(s);   /* health and state changes: written soon, nobody waits */
	drv_http_resp_json(o, 200, json_pack("{s:o,s:I}", "kill", kill, "heartbeat_interval_s",
					     (json_int_t)s->cfg.heartbeat_interval_s));
unlock:
	pthread_mutex_unlock(&s->mu);
	json_decref(b);
	return 0;
}

/* The assignment object of task rank of j (on node i). */
static json_t *assignment(struct drv_server *s, struct sjob *j, int32_t rank)
{
	struct stask *t = &j->tasks[rank];
	const struct drv_task_run *run = j->spec.run ? &j->spec.run[t->group] : NULL;
	json_t *argv = json_array(), *env = json_object(), *peers = json_array(), *a;
	int32_t node_order[256], nn = 0, node_rank = 0, local_rank = 0, local_ws = 0;
	char tid[48];

	for (int32_t k = 0; k < j->ntasks; k++) {
		int32_t nd = j->tasks[k].node, x;

		for (x = 0; x < nn; x++)
			if (node_order[x] == nd)
				break;
		if (x == nn && nn < 256)
			node_order[nn++] = nd;
		if (nd == t->node) {
			node_rank = x;
			if (k < rank)
				local_rank++;
			local_ws++;
		}
		json_array_append_new(peers, json_pack("{s:i,s:s,s:s}", "rank", k, "node",
						       s->nodes[nd].name, "address",
						       s->nodes[nd].address ? s->nodes[nd].address
									    : s->nodes[nd].name));
	}
	if (run) {
		for (int32_t k = 0; k < run->ncommand; k++)
			json_array_append_new(argv, json_string(run->command[k]));
		for (int32_t k = 0; k < run->nargs; k++)
			json_array_append_new(argv, json_string(run->args[k]));
		for (int32_t k = 0; k < run->nenv; k++)
			if (run->env[k].value)
				json_object_set_new(env, run->env[k].name, json_string(run->env[k].value));
	}
	snprintf(tid, sizeof(tid), "%llu.%d", (unsigned long long)j->id, rank);
	{
		struct snode *m = &s->nodes[j->tasks[0].node];
		char gpus_str[200];

		(void)gpus_str;
		a = json_pack("{s:s,s:I,s:s,s:I,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "task_id", tid,
			      "job_id", (json_int_t)j->id, "job_name", j->spec.job.name, "epoch",
			      (json_int_t)j->epoch, "desired", j->stop_reason ? "stop" : "run", "user",
			      j->spec.job.user, "runtime", "host", "image",
			      run && run->image ? json_string(run->image) : json_null(), "container",
			      run && run->container ? json_string(run->container) : json_null(),
			      "argv", argv, "script",
			      run && run->script ? json_string(run->script) : json_null(), "workdir",
			      run && run->working_dir ? json_string(run->working_dir) : json_null(),
			      "env", env);
		json_object_set_new(a, "gpus", json_array());
		for (int g = 0; g < 64; g++)
			if (t->gpu_mask & (1ull << g))
				json_array_append_new(json_object_get(a, "gpus"), json_integer(g));
		json_object_set_new(a, "gpu_milli", json_integer(t->gpu_milli));
		json_object_set_new(a, "cpu_milli", json_integer(t->cpu_milli));
		json_object_set_new(a, "mem_mib", json_integer(t->mem_mib));
		json_object_set_new(a, "rank", json_integer(rank));
		json_object_set_new(a, "world_size", json_integer(j->ntasks));
		json_object_set_new(a, "local_rank", json_integer(local_rank));
		json_object_set_new(a, "local_world_size", json_integer(local_ws));
		json_object_set_new(a, "node_rank", json_integer(node_rank));
		json_object_set_new(a, "nnodes", json_integer(nn));
		json_object_set_new(a, "master_addr",
				    json_string(m->address ? m->address : m->name));
		json_object_set_new(a, "master_port", json_integer(29500 + j->epoch % 10000));
		json_object_set_new(a, "peers", peers);
		json_object_set_new(a, "time_limit_s", json_integer(j->spec.job.time_limit));
		json_object_set_new(a, "grace_s",
				    json_integer(j->requeue_quiet ? 0
						 : run && run->termination_grace_s >= 0
							 ? run->termination_grace_s : 30));
		if (j->stop_reason)
			json_object_set_new(a, "stop_reason", json_string(j->stop_reason));
	}
	return a;
}

static json_t *desired_set(struct drv_server *s, int32_t i)
{
	json_t *tasks = json_array();

	for (size_t k = 0; k < s->nactive; k++) {
		struct sjob *j = srv_job_get(s, s->active[k]);

		/* a start is announced only once it is on disk */
		if (!j || j->durable_epoch != j->epoch)
			continue;
		for (int32_t t = 0; t < j->ntasks; t++)
			if (j->tasks[t].node == i && !j->tasks[t].ended)
				json_array_append_new(tasks, assignment(s, j, t));
	}
	return tasks;
}

/* An agent's assignments long-poll, waiting for its node's version to move. */
struct assign_wait {
	struct drv_server *s;
	char *node;
	int64_t session, version, deadline_ms;
};

static void assign_wait_free(void *cls)
{
	struct assign_wait *a = cls;

	drv_free(a->node);
	drv_free(a);
}

static int assignments_ready(void *cls, struct drv_http_resp *o, int timed_out)
{
	struct assign_wait *a = cls;
	struct drv_server *s = a->s;
	int32_t i;

	pthread_mutex_lock(&s->mu);
	i = session_node(s, a->node, a->session, o);
	if (i >= 0) {
		if ((int64_t)s->nodes[i].version == a->version && !s->stopping && !timed_out &&
		    srv_now_ms() < a->deadline_ms) {
			pthread_mutex_unlock(&s->mu);
			return DRV_HTTP_AGAIN;
		}
		drv_http_resp_json(o, 200, json_pack("{s:I,s:o}", "version",
						     (json_int_t)s->nodes[i].version, "tasks",
						     desired_set(s, i)));
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int srv_agent_assignments(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	const char *name = drv_http_req_query(r, "node");
	int64_t session, version, wait;
	struct assign_wait *a;

	if (drv_http_req_query_int(r, "session", -1, -1, INT64_MAX, &session, o) < 0 ||
	    drv_http_req_query_int(r, "version", 0, 0, INT64_MAX, &version, o) < 0 ||
	    drv_http_req_query_int(r, "wait", 30, 0, 60, &wait, o) < 0)
		return 0;
	a = drv_calloc(1, sizeof(*a));
	a->s = s;
	a->node = name ? drv_strdup(name) : NULL;
	a->session = session;
	a->version = version;
	a->deadline_ms = srv_now_ms() + wait * 1000;
	drv_http_defer(r, assignments_ready, a, assign_wait_free, wait * 1000);
	return 0;
}

static void job_maybe_running(struct drv_server *s, struct sjob *j)
{
	if (j->state != J_SCHEDULED)
		return;
	for (int32_t k = 0; k < j->ntasks; k++)
		if (j->tasks[k].state == T_PENDING || j->tasks[k].state == T_STARTING)
			return;
	j->start_time = srv_wall_s();
	drv_histogram_observe(&s->wait_hist, (double)(j->start_time - j->submit_time));
	srv_job_transition(s, j, J_RUNNING, "every task started");
}

int srv_agent_report(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	json_t *b = drv_http_req_json(r, o), *reps, *rep, *stale;
	size_t k;
	int32_t i;

	if (!b)
		return 0;
	reps = json_object_get(b, "reports");
	if (!json_is_array(reps)) {
		drv_http_resp_error(o, 400, "invalid", NULL, "reports: expected a list");
		json_decref(b);
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	i = session_node(s, drv_json_str(b, "node"), drv_json_int(b, "session", -1), o);
	if (i < 0)
		goto unlock;
	stale = json_array();
	json_array_foreach(reps, k, rep) {
		const char *tid = drv_json_str(rep, "task_id");
		const char *st = drv_json_str(rep, "state");
		int64_t ep = drv_json_int(rep, "epoch", -1);
		uint64_t jid;
		int32_t rank;
		struct sjob *j;
		struct stask *t;

		if (!tid || !st || !parse_task_id(tid, &jid, &rank))
			continue;
		j = srv_job_get(s, jid);
		if (!j || j->epoch != ep || rank >= j->ntasks || j->tasks[rank].node != i) {
			json_array_append_new(stale, json_pack("{s:s,s:I}", "task_id", tid, "epoch",
							       (json_int_t)ep));
			continue;
		}
		t = &j->tasks[rank];
		if (t->ended) {
			if (strcmp(st, "running") == 0)
				json_array_append_new(stale, json_pack("{s:s,s:I}", "task_id", tid,
								       "epoch", (json_int_t)ep));
			continue;
		}
		if (strcmp(st, "running") == 0) {
			if (t->state == T_PENDING || t->state == T_STARTING) {
				t->state = T_RUNNING;
				t->start_time = srv_wall_s();
				srv_job_mark(s, j);
				if (!j->stop_reason)
					job_maybe_running(s, j);
			}
		} else if (strcmp(st, "exited") == 0) {
			t->exit_code = (int)drv_json_int(rep, "exit_code", -1);
			t->signal = (int)drv_json_int(rep, "signal", 0);
			t->oom = drv_json_bool(rep, "oom_killed", 0);
			if (!t->start_time)
				t->start_time = srv_wall_s();
			if (j->stop_reason)
				t->state = T_CANCELLED;
			else if (t->exit_code == 0 && t->signal == 0 && !t->oom)
				t->state = T_SUCCEEDED;
			else
				t->state = T_FAILED;
			if (t->oom)
				srv_set_str(&t->reason, "OOM-killed");
			if (!j->stop_reason) {
				/* it ran: the job was running, however briefly */
				bool all_started = true;

				for (int32_t x = 0; x < j->ntasks; x++)
					all_started &= x == rank || j->tasks[x].state != T_PENDING;
				if (all_started && j->state == J_SCHEDULED) {
					enum tstate keep = t->state;

					t->state = T_RUNNING;
					job_maybe_running(s, j);
					t->state = keep;
				}
			}
			srv_task_ended(s, j, rank);
		} else if (strcmp(st, "failed") == 0) {
			t->state = j->stop_reason ? T_CANCELLED : T_FAILED;
			srv_set_str(&t->reason, drv_json_str(rep, "reason") ? drv_json_str(rep, "reason")
									 : "could not start");
			srv_task_ended(s, j, rank);
		}
	}
	if (srv_flush(s) < 0) {
		json_decref(stale);
		drv_http_resp_error(o, 503, "unavailable", NULL,
				    "the reports are not on disk: the state store cannot write (%s)",
				    s->commit_err);
		goto unlock;
	}
	drv_http_resp_json(o, 200, json_pack("{s:o}", "stale", stale));
unlock:
	pthread_mutex_unlock(&s->mu);
	json_decref(b);
	return 0;
}
