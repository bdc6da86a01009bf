/*
 * state.c: the controller's jobs and nodes: lifecycle transitions with
 * recorded events, write-through to the store (flush), the scheduler's side
 * of a job (its priority class, the loop's wake-up, why it waits), their
 * JSON forms (for the API and for the store), the cluster the scheduler
 * sees, and the restore after a restart.
 *
 * It sits at the bottom of the server's files (above util.c and config.c
 * only): commit.c, loop.c, server_metrics.c and the route handlers call
 * it, and it calls none of them.
 *
 * The rule: memory changes first (under srv->mu), then srv_flush() writes
 * every dirty job, node and queued event in one store transaction, and
 * only after it succeeded are agents told (node versions) or replies sent.
 * A failed flush keeps everything dirty and is retried by the next one.
 */
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

#include "drover/clusterfile.h"

/* --- jobs --------------------------------------------------------------- */

struct srv_job *srv_job_get(struct drv_server *s, uint64_t id)
{
	if (id == 0 || id > s->njobs)
		return NULL;
	return s->jobs[id - 1];
}

void srv_job_free(struct srv_job *j)
{
	if (!j)
		return;
	drv_jobspec_release(&j->spec);
	json_decref(j->canon);
	drv_free(j->reason);
	for (int32_t i = 0; i < j->ntasks; i++)
		drv_free(j->tasks[i].reason);
	drv_free(j->tasks);
	drv_free(j->stop_reason);
	json_decref(j->events);
	drv_free(j);
}

void srv_job_mark(struct drv_server *s, struct srv_job *j)
{
	if (j->dirty)
		return;
	j->dirty = true;
	DRV_GROW(s->dirty, s->ndirty + 1, s->dcap);
	s->dirty[s->ndirty++] = j->id;
}

struct pend_event srv_make_event(const char *type, struct srv_job *j, const char *node,
				 const char *from, const char *to, const char *reason)
{
	struct pend_event p;
	int64_t t = drv_wall_s();
	json_t *ev = json_pack("{s:o,s:s}", "time", srv_json_time(t), "type", type);

	if (j) {
		json_object_set_new(ev, "job", json_integer((json_int_t)j->id));
		json_object_set_new(ev, "name", json_string(j->spec.job.name ? j->spec.job.name : ""));
		json_object_set_new(ev, "user", json_string(j->spec.job.user ? j->spec.job.user : ""));
	}
	if (node)
		json_object_set_new(ev, "node", json_string(node));
	json_object_set_new(ev, "from", from ? json_string(from) : json_null());
	json_object_set_new(ev, "to", json_string(to));
	json_object_set_new(ev, "reason", json_string(reason ? reason : ""));
	memset(&p, 0, sizeof(p));
	p.ev = ev;
	p.job = j ? j->id : 0;
	p.user = j && j->spec.job.user ? drv_strdup(j->spec.job.user) : NULL;
	p.type = type;
	p.node = node ? drv_strdup(node) : NULL;
	p.from = from ? drv_strdup(from) : NULL;
	p.to = drv_strdup(to);
	p.reason = drv_strdup(reason ? reason : "");
	p.time = t;
	return p;
}

void srv_pend_release(struct pend_event *p)
{
	json_decref(p->ev);
	drv_free(p->user);
	drv_free(p->node);
	drv_free(p->from);
	drv_free(p->to);
	drv_free(p->reason);
	memset(p, 0, sizeof(*p));
}

void srv_queue_event(struct drv_server *s, const char *type, struct srv_job *j, const char *node,
		     const char *from, const char *to, const char *reason)
{
	DRV_GROW(s->pend, s->npend + 1, s->pcap);
	s->pend[s->npend++] = srv_make_event(type, j, node, from, to, reason);
}

void srv_job_transition(struct drv_server *s, struct srv_job *j, enum jstate to, const char *reason)
{
	enum jstate from = j->state;
	bool fresh = !j->events || json_array_size(j->events) == 0;

	j->state = to;
	srv_set_str(&j->reason, reason ? reason : "");
	if (!j->events)
		j->events = json_array();
	json_array_append_new(j->events,
			      json_pack("{s:I,s:o,s:s,s:s}", "time", (json_int_t)drv_wall_s(), "from",
					fresh ? json_null() : json_string(srv_jstate_name(from)), "to",
					srv_jstate_name(to), "reason", reason ? reason : ""));
	if (srv_jstate_final(to) && !j->end_time)
		j->end_time = drv_wall_s();
	s->transitions[to]++;
	srv_queue_event(s, "job", j, NULL, fresh ? NULL : srv_jstate_name(from), srv_jstate_name(to), reason);
	srv_job_mark(s, j);
}

void srv_active_add(struct drv_server *s, uint64_t id)
{
	for (size_t i = 0; i < s->nactive; i++)
		if (s->active[i] == id)
			return;
	DRV_GROW(s->active, s->nactive + 1, s->acap);
	s->active[s->nactive++] = id;
}

void srv_active_remove(struct drv_server *s, uint64_t id)
{
	for (size_t i = 0; i < s->nactive; i++) {
		if (s->active[i] == id) {
			memmove(&s->active[i], &s->active[i + 1],
				(s->nactive - i - 1) * sizeof(s->active[0]));
			s->nactive--;
			return;
		}
	}
}

void srv_node_bump(struct drv_server *s, int32_t node)
{
	if (node >= 0 && node < s->nnodes)
		s->nodes[node].version++;
}

void srv_job_bump_nodes(struct drv_server *s, struct srv_job *j)
{
	for (int32_t i = 0; i < j->ntasks; i++)
		srv_node_bump(s, j->tasks[i].node);
}

double srv_job_gpus(const struct srv_job *j)
{
	int64_t milli = 0;

	for (int32_t g = 0; g < j->spec.job.ngroups; g++) {
		const struct drv_task_group *tg = &j->spec.job.groups[g];

		milli += (int64_t)tg->count * ((int64_t)tg->gpus * 1000 + tg->gpu_milli);
	}
	return (double)milli / 1000.0;
}

void srv_jobs_adopt(struct drv_server *s, struct srv_job **js, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct srv_job *j = js[i];

		if (j->id > s->njobs) {
			DRV_GROW(s->jobs, j->id, s->jcap);
			for (uint64_t k = s->njobs; k < j->id; k++)
				s->jobs[k] = NULL;
			s->njobs = j->id;
		}
		s->jobs[j->id - 1] = j;
		if (drv_sched_submit(s->sched, &j->spec.job, srv_job_class(s, &j->spec)) == 0)
			j->in_sched = true;
	}
	s->transitions[J_PENDING] += n;
	s->submits += n;
	srv_sched_kick(s);
}

/* --- the scheduler's side of a job -------------------------------------- */

const char *srv_job_class(const struct drv_server *s, const struct drv_jobspec *spec)
{
	const struct drv_tenants *t = &s->cfg.tenants;
	const struct drv_tenant_conf *tc;

	if (!t->nclasses)
		return NULL;
	if (spec->priority_class && *spec->priority_class)
		return drv_tenants_class(t, spec->priority_class) ? spec->priority_class : NULL;
	if (spec->job.priority != 0 || !spec->job.tenant)
		return NULL;
	tc = drv_tenants_tenant(t, spec->job.tenant);
	return tc ? tc->priority_class : NULL;
}

void srv_sched_kick(struct drv_server *s)
{
	if (!s->sched_dirty) {
		s->sched_dirty = true;
		s->dirty_since_ms = drv_mono_ms();
	}
	pthread_cond_signal(&s->loop_cv);
}

const char *srv_pending_text(struct drv_server *s, const struct drv_sched_decision *d, char *buf,
			     size_t n)
{
	const char *colon;

	drv_sched_decision_format(s->sched, d, buf, n);
	if (strncmp(buf, "pending ", 8) == 0 && (colon = strstr(buf, ": ")))
		return colon + 2;
	return buf;
}

const char *srv_job_reason(struct drv_server *s, const struct srv_job *j, char *buf, size_t n)
{
	struct drv_sched_job_info info;

	/* A pass emits a reason only when it changes, and one that stops
	 * early (nothing else can fit) emits none for the jobs after it: the
	 * stored reason may be an older pass's, with older numbers. The
	 * scheduler always knows the current one. */
	if (j->state == J_PENDING && !j->holding &&
	    drv_sched_job_get(s->sched, j->id, &info) == 0 &&
	    info.state == DRV_SJ_PENDING && info.why.reason != DRV_REASON_NONE)
		return srv_pending_text(s, &info.why, buf, n);
	return j->reason ? j->reason : "";
}

/* --- lifecycle ---------------------------------------------------------- */

void srv_job_released(struct drv_server *s, struct srv_job *j)
{
	int64_t now = drv_wall_s();

	if (!j->holding)
		return;
	for (int32_t i = 0; i < j->ntasks; i++)
		if (!j->tasks[i].ended)
			return;
	j->holding = false;
	srv_active_remove(s, j->id);
	if (j->requeue_on_stop && !srv_jstate_final(j->state)) {
		char why[256];

		j->requeue_on_stop = false;
		snprintf(why, sizeof(why), "%s; requeued", j->stop_reason ? j->stop_reason : "stopped");
		srv_set_str(&j->stop_reason, NULL);
		if (j->in_sched)
			drv_sched_requeue(s->sched, j->id, now);
		if (j->requeue_quiet)
			j->requeue_quiet = false;   /* already recorded as pending */
		else
			srv_job_transition(s, j, J_PENDING, why);
	} else if (j->in_sched) {
		drv_sched_finish(s->sched, j->id, now);
		j->in_sched = false;
	}
	srv_job_mark(s, j);
	srv_sched_kick(s);
}

void srv_job_stop_tasks(struct drv_server *s, struct srv_job *j, const char *reason)
{
	if (!j->stop_reason)
		srv_set_str(&j->stop_reason, reason);
	for (int32_t i = 0; i < j->ntasks; i++) {
		struct srv_task *t = &j->tasks[i];

		if (t->ended)
			continue;
		if (t->state == T_PENDING) {
			/* never reported started: nothing to wait for; a late start is
			 * fenced (absent from the assignments, stale in reports) */
			t->ended = true;
			t->state = T_CANCELLED;
			t->end_time = drv_wall_s();
			srv_set_str(&t->reason, reason);
		}
	}
	srv_job_bump_nodes(s, j);
	srv_job_mark(s, j);
	srv_job_released(s, j);
}

void srv_task_ended(struct drv_server *s, struct srv_job *j, int32_t rank)
{
	struct srv_task *t = &j->tasks[rank];
	char why[512];
	bool all_ok = true, all_ended = true;

	t->ended = true;
	if (!t->end_time)
		t->end_time = drv_wall_s();
	/* no version bump for the task's own node: its agent reported the end
	 * itself, and a reply just to drop it would cost the agent a wake-up
	 * (it never starts a (task, epoch) twice); the next start bumps it */
	srv_job_mark(s, j);
	if (!j->stop_reason && !srv_jstate_final(j->state)) {
		if (t->state != T_SUCCEEDED) {
			if (t->reason && *t->reason)
				snprintf(why, sizeof(why), "task %llu.%d: %s",
					 (unsigned long long)j->id, rank, t->reason);
			else if (t->oom)
				snprintf(why, sizeof(why), "task %llu.%d was OOM-killed",
					 (unsigned long long)j->id, rank);
			else if (t->signal)
				snprintf(why, sizeof(why), "task %llu.%d killed by signal %d",
					 (unsigned long long)j->id, rank, t->signal);
			else
				snprintf(why, sizeof(why), "task %llu.%d exited with code %d",
					 (unsigned long long)j->id, rank, t->exit_code);
			j->has_exit = t->signal == 0 && t->exit_code >= 0 && !(t->reason && *t->reason);
			j->exit_code = t->exit_code;
			srv_job_transition(s, j, J_FAILED, why);
			srv_job_stop_tasks(s, j, "another task of the job failed");
		} else {
			for (int32_t i = 0; i < j->ntasks; i++) {
				all_ended &= j->tasks[i].ended;
				all_ok &= j->tasks[i].state == T_SUCCEEDED;
			}
			if (all_ended && all_ok) {
				j->has_exit = true;
				j->exit_code = 0;
				srv_job_transition(s, j, J_SUCCEEDED, "every task exited with code 0");
			}
		}
	}
	srv_job_released(s, j);
}

void srv_job_requeue_node_down(struct drv_server *s, struct srv_job *j, const char *node,
			   const char *why)
{
	char reason[512];

	for (int32_t i = 0; i < j->ntasks; i++) {
		struct srv_task *t = &j->tasks[i];

		if (!t->ended && strcmp(s->nodes[t->node].name, node) == 0) {
			t->ended = true;
			t->state = T_LOST;
			t->end_time = drv_wall_s();
			srv_set_str(&t->reason, why);
		}
	}
	srv_job_bump_nodes(s, j);
	srv_job_mark(s, j);
	if (srv_jstate_final(j->state) || j->stop_reason) {
		srv_job_released(s, j);
		return;
	}
	if (j->requeues >= s->cfg.retry_limit) {
		snprintf(reason, sizeof(reason), "node %s %s; retry limit %d reached", node, why,
			 s->cfg.retry_limit);
		srv_job_transition(s, j, J_FAILED, reason);
		srv_job_stop_tasks(s, j, "the job failed: a node went down");
		return;
	}
	/* The whole gang goes back to the queue now. Its tasks on healthy nodes
	 * are told to stop at once (grace 0); their GPUs stay held until their
	 * agents report them gone, so a new start never overlaps a dying task. */
	j->requeues++;
	snprintf(reason, sizeof(reason), "node %s %s; requeued (retry %d of %d)", node, why,
		 j->requeues, s->cfg.retry_limit);
	srv_job_transition(s, j, J_PENDING, reason);
	j->requeue_on_stop = true;
	j->requeue_quiet = true;
	srv_set_str(&j->stop_reason, NULL);
	srv_job_stop_tasks(s, j, "gang requeued after a node failure");
	srv_sched_kick(s);
}

/* --- events ring -------------------------------------------------------- */

void srv_ring_push(struct drv_server *s, int64_t seq, uint64_t job, const char *user, json_t *ev)
{
	struct ring_event *r;

	if (s->ring_n == s->ring_cap) {
		r = &s->ring[s->ring_start];
		drv_free(r->user);
		json_decref(r->ev);
		s->ring_start = (s->ring_start + 1) % s->ring_cap;
		s->ring_n--;
	}
	r = &s->ring[(s->ring_start + s->ring_n) % s->ring_cap];
	r->seq = seq;
	r->job = job;
	r->user = user ? drv_strdup(user) : NULL;
	r->ev = ev;
	s->ring_n++;
	if (seq > s->last_seq)
		s->last_seq = seq;
}

/* --- JSON forms --------------------------------------------------------- */

static json_t *gpus_array(uint64_t mask)
{
	json_t *a = json_array();

	for (int i = 0; i < 64; i++)
		if (mask & (1ull << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

static uint64_t gpus_mask(const json_t *a)
{
	uint64_t m = 0;
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v) {
		json_int_t x = json_integer_value(v);

		if (x >= 0 && x < 64)
			m |= 1ull << x;
	}
	return m;
}

json_t *srv_job_store_doc(struct drv_server *s, struct srv_job *j)
{
	json_t *tasks = json_array(), *doc;

	for (int32_t i = 0; i < j->ntasks; i++) {
		struct srv_task *t = &j->tasks[i];

		json_array_append_new(
			tasks,
			json_pack("{s:s,s:i,s:o,s:i,s:I,s:I,s:s,s:b,s:i,s:i,s:b,s:s,s:I,s:I}", "node",
				  s->nodes[t->node].name, "group", t->group, "gpus",
				  gpus_array(t->gpu_mask), "gpu_milli", t->gpu_milli, "cpu_milli",
				  (json_int_t)t->cpu_milli, "mem_mib", (json_int_t)t->mem_mib, "state",
				  srv_tstate_name(t->state), "ended", t->ended, "exit_code", t->exit_code,
				  "signal", t->signal, "oom", t->oom, "reason",
				  t->reason ? t->reason : "", "start_time", (json_int_t)t->start_time,
				  "end_time", (json_int_t)t->end_time));
	}
	doc = json_pack("{s:I,s:s,s:s,s:i,s:i,s:I,s:I,s:I,s:I,s:o,s:O,s:o,s:b,s:b,s:o,s:O}",
			 "id", (json_int_t)j->id, "state", srv_jstate_name(j->state), "reason",
			 j->reason ? j->reason : "", "attempt", j->attempt, "requeues", j->requeues,
			 "epoch", (json_int_t)j->epoch, "submit_time", (json_int_t)j->submit_time,
			 "start_time", (json_int_t)j->start_time, "end_time",
			 (json_int_t)j->end_time, "exit_code",
			 j->has_exit ? json_integer(j->exit_code) : json_null(), "spec", j->canon,
			 "stop_reason", j->stop_reason ? json_string(j->stop_reason) : json_null(),
			 "requeue_on_stop", j->requeue_on_stop, "holding", j->holding, "tasks", tasks,
			 "events", j->events ? j->events : json_null());
	json_object_set_new(doc, "requeue_quiet", json_boolean(j->requeue_quiet));
	return doc;
}

static const char *job_image(const struct srv_job *j)
{
	for (int32_t g = 0; g < j->spec.job.ngroups; g++)
		if (j->spec.run && j->spec.run[g].image)
			return j->spec.run[g].image;
	return NULL;
}

json_t *srv_job_api_json(struct drv_server *s, struct srv_job *j, bool detail)
{
	const struct drv_job *jb = &j->spec.job;
	json_t *o, *pl = json_array();
	const char *model = NULL;
	char nodelist[1024] = "", why[512];
	size_t nl = 0;
	int nnodes = 0;

	for (int32_t g = 0; g < jb->ngroups; g++) {
		if (jb->groups[g].model >= 0) {
			const struct drv_gpu_model *m = drv_gpu_model_at(jb->groups[g].model);

			model = m ? m->id : NULL;
			break;
		}
	}
	for (int32_t i = 0; i < j->ntasks; i++) {
		struct srv_task *t = &j->tasks[i];
		const char *nn = s->nodes[t->node].name;
		char tid[48];
		bool seen = false;

		snprintf(tid, sizeof(tid), "%llu.%d", (unsigned long long)j->id, i);
		json_array_append_new(pl, json_pack("{s:s,s:i,s:s,s:o}", "task", tid, "rank", i,
						    "node", nn, "gpus", gpus_array(t->gpu_mask)));
		for (int32_t k = 0; k < i; k++)
			seen |= j->tasks[k].node == t->node;
		if (!seen) {
			nnodes++;
			if (nl < sizeof(nodelist))
				nl += (size_t)snprintf(nodelist + nl, sizeof(nodelist) - nl, "%s%s",
						       nl ? "," : "", nn);
		}
	}
	o = json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:f,s:o,s:i,s:i,s:i,s:b,s:s,s:o,s:i}", "id",
		      (json_int_t)j->id, "name", jb->name ? jb->name : "", "user",
		      jb->user ? jb->user : "", "tenant", jb->tenant ? jb->tenant : "default",
		      "state", srv_jstate_name(j->state), "reason",
		      srv_job_reason(s, j, why, sizeof(why)), "gpus",
		      srv_job_gpus(j), "gpu_model", model ? json_string(model) : json_null(), "tasks",
		      drv_job_tasks(jb), "nodes", nnodes, "priority", jb->priority, "preemptible",
		      jb->preemptible, "runtime", "host", "image",
		      job_image(j) ? json_string(job_image(j)) : json_null(), "attempt",
		      j->attempt);
	/* whole GPU counts print as integers */
	if (srv_job_gpus(j) == (double)(int64_t)srv_job_gpus(j))
		json_object_set_new(o, "gpus", json_integer((json_int_t)srv_job_gpus(j)));
	json_object_set_new(o, "submit_time", srv_json_time(j->submit_time));
	json_object_set_new(o, "start_time", srv_json_time(j->start_time));
	json_object_set_new(o, "end_time", srv_json_time(j->end_time));
	json_object_set_new(o, "exit_code", j->has_exit ? json_integer(j->exit_code) : json_null());
	json_object_set_new(o, "placement", pl);
	json_object_set_new(o, "nodelist", json_string(nodelist));
	if (detail) {
		json_t *env = json_object(), *ts = json_array(), *evs = json_array();
		size_t i;
		json_t *e;

		for (int32_t g = 0; g < jb->ngroups && j->spec.run; g++)
			for (int32_t k = 0; k < j->spec.run[g].nenv; k++)
				if (j->spec.run[g].env[k].value)
					json_object_set_new(env, j->spec.run[g].env[k].name,
							    json_string(j->spec.run[g].env[k].value));
		for (int32_t r = 0; r < j->ntasks; r++) {
			struct srv_task *t = &j->tasks[r];
			char tid[48];

			snprintf(tid, sizeof(tid), "%llu.%d", (unsigned long long)j->id, r);
			json_array_append_new(
				ts, json_pack("{s:s,s:i,s:s,s:s,s:I,s:o,s:o,s:b,s:s,s:o,s:o}", "task",
					      tid, "rank", r, "node", s->nodes[t->node].name, "state",
					      srv_tstate_name(t->state), "epoch", (json_int_t)j->epoch,
					      "exit_code",
					      t->exit_code >= 0 && t->ended ? json_integer(t->exit_code)
									    : json_null(),
					      "signal", t->signal ? json_integer(t->signal) : json_null(),
					      "oom_killed", t->oom, "reason", t->reason ? t->reason : "",
					      "start_time", srv_json_time(t->start_time), "end_time",
					      srv_json_time(t->end_time)));
		}
		json_array_foreach(j->events, i, e) {
			json_t *c = json_deep_copy(e);

			json_object_set_new(c, "time",
					    srv_json_time(json_integer_value(json_object_get(e, "time"))));
			json_array_append_new(evs, c);
		}
		json_object_set(o, "spec", j->canon);
		json_object_set_new(o, "env", env);
		json_object_set_new(o, "task_states", ts);
		json_object_set_new(o, "events", evs);
	}
	return o;
}

json_t *srv_node_store_doc(struct drv_server *s, int32_t i)
{
	struct srv_node *n = &s->nodes[i];

	return json_pack("{s:s,s:O,s:O,s:I,s:b,s:b,s:s,s:o,s:o}", "name", n->name, "labels",
			 n->labels ? n->labels : json_object(), "inventory",
			 n->inventory ? n->inventory : json_null(), "session",
			 (json_int_t)n->session, "ever_registered", n->ever_registered,
			 "admin_drain", n->admin_drain, "reason", n->reason ? n->reason : "",
			 "address", n->address ? json_string(n->address) : json_null(), "agent_url",
			 n->agent_url ? json_string(n->agent_url) : json_null());
}

json_t *srv_node_api_json(struct drv_server *s, int32_t i)
{
	struct srv_node *n = &s->nodes[i];
	const struct drv_node *cn = &s->cluster.nodes[i];
	const struct drv_gpu_model *m = cn->model >= 0 ? drv_gpu_model_at(cn->model) : NULL;
	json_t *path = json_array(), *jobs = json_array(), *o;
	int32_t alloc = 0, v;
	int32_t chain[DRV_MAX_LEVELS + 1], nchain = 0;

	for (v = cn->vertex; v >= 0 && nchain <= DRV_MAX_LEVELS; v = s->cluster.vertices[v].parent)
		chain[nchain++] = v;
	while (nchain > 0)
		json_array_append_new(path, json_string(s->cluster.vertices[chain[--nchain]].name));
	for (int g = 0; g < cn->ngpus; g++)
		if (cn->gpu_milli_used && cn->gpu_milli_used[g] > 0)
			alloc++;
	for (size_t k = 0; k < s->nactive; k++) {
		struct srv_job *j = srv_job_get(s, s->active[k]);

		if (!j)
			continue;
		for (int32_t t = 0; t < j->ntasks; t++) {
			if (j->tasks[t].node == i && !j->tasks[t].ended) {
				json_array_append_new(jobs, json_integer((json_int_t)j->id));
				break;
			}
		}
	}
	o = json_pack("{s:s,s:s,s:s,s:s?,s:o,s:o,s:i,s:i,s:i,s:I,s:I,s:o,s:o,s:o,s:o,s:b,s:o,s:o}",
		      "name", n->name, "state", srv_nstate_name(n->state), "reason",
		      n->reason ? n->reason : "", "pool",
		      cn->pool >= 0 && cn->pool < s->cluster.npools ? s->cluster.pools[cn->pool].name
								     : NULL,
		      "path", path, "model", m ? json_string(m->id) : json_null(), "gpus",
		      cn->ngpus, "gpus_allocated", alloc, "gpus_free", cn->ngpus - alloc,
		      "cpu_milli", (json_int_t)cn->cpu_milli, "mem_mib", (json_int_t)cn->mem_mib,
		      "labels", n->labels ? json_incref(n->labels) : json_object(), "address",
		      n->address ? json_string(n->address) : json_null(), "agent_url",
		      n->agent_url ? json_string(n->agent_url) : json_null(), "last_heartbeat",
		      srv_json_time(n->last_hb_wall), "registered", n->registered, "jobs", jobs,
		      "gpu_health", n->health ? json_incref(n->health) : json_array());
	if (!json_object_get(o, "pool"))
		json_object_set_new(o, "pool", json_null());
	json_object_set_new(o, "backend", drv_json_str(n->inventory, "backend")
					      ? json_string(drv_json_str(n->inventory, "backend"))
					      : json_null());
	return o;
}

/* --- nodes and the cluster --------------------------------------------- */

int32_t srv_node_find(struct drv_server *s, const char *name)
{
	for (int32_t i = 0; i < s->nnodes; i++)
		if (strcmp(s->nodes[i].name, name) == 0)
			return i;
	return -1;
}

void srv_node_set_state(struct drv_server *s, int32_t i, enum drv_node_state st, const char *reason)
{
	struct srv_node *n = &s->nodes[i];
	enum drv_node_state from = n->state;

	srv_set_str(&n->reason, reason ? reason : "");
	n->dirty = true;
	if (from == st)
		return;
	n->state = st;
	drv_cluster_set_node_state(&s->cluster, i, st);
	if (s->sched)
		drv_sched_cluster_changed(s->sched, drv_wall_s());
	srv_queue_event(s, "node", NULL, n->name, srv_nstate_name(from), srv_nstate_name(st), reason);
	drv_log(&s->log, "node %s: %s -> %s%s%s", n->name, srv_nstate_name(from), srv_nstate_name(st),
		reason && *reason ? ": " : "", reason ? reason : "");
	srv_sched_kick(s);
}

/* Makes sure nodes[] covers every cluster node (nodes from a file). */
static void nodes_sync(struct drv_server *s)
{
	while (s->nnodes < s->cluster.nnodes) {
		struct srv_node *n;

		DRV_GROW(s->nodes, (size_t)s->nnodes + 1, s->ncap);
		n = &s->nodes[s->nnodes];
		memset(n, 0, sizeof(*n));
		n->name = drv_strdup(s->cluster.nodes[s->nnodes].name);
		n->state = s->cluster.nodes[s->nnodes].state;
		n->labels = json_object();
		for (int32_t k = 0; k < s->cluster.nodes[s->nnodes].nlabels; k++)
			json_object_set_new(n->labels, s->cluster.nodes[s->nnodes].labels[k].key,
					    json_string(s->cluster.nodes[s->nnodes].labels[k].value));
		s->nnodes++;
	}
}

static int32_t child_named(struct drv_cluster *c, int32_t parent, const char *name)
{
	for (int32_t v = c->vertices[parent].first_child; v >= 0; v = c->vertices[v].next_sibling)
		if (strcmp(c->vertices[v].name, name) == 0)
			return v;
	return -1;
}

/* The pool and leaf where agents the cluster file does not name land. */
static int default_place(struct drv_server *s)
{
	struct drv_cluster *c = &s->cluster;
	int32_t v = 0;
	int pool_level = drv_cluster_level(c, "pool");

	for (int lvl = 1; lvl < c->nlevels - 1; lvl++) {
		const char *name = lvl == pool_level ? s->cfg.default_pool
				   : lvl == c->nlevels - 2 ? s->cfg.default_leaf : "default";
		int32_t w = child_named(c, v, name);

		if (w < 0) {
			w = drv_cluster_add_vertex(c, v, name);
			if (w < 0)
				return w;
		}
		v = w;
		if (lvl == pool_level) {
			int32_t p = -1;

			for (int32_t k = 0; k < c->npools; k++)
				if (strcmp(c->pools[k].name, name) == 0)
					p = k;
			if (p < 0) {
				struct drv_pool pool = { .name = (char *)name, .provider = (char *)"onprem",
							 .region = (char *)"local", .vertex = v };

				p = drv_cluster_add_pool(c, &pool);
				if (p < 0)
					return p;
			}
			s->default_pool_index = p;
		}
	}
	s->default_leaf_vertex = v;
	return 0;
}

int srv_node_add(struct drv_server *s, const char *name, int model, int ngpus, int64_t cpu,
	     int64_t mem, json_t *labels)
{
	int idx, rc;

	if (s->default_leaf_vertex < 0) {
		rc = default_place(s);
		if (rc < 0)
			return rc;
	}
	idx = drv_cluster_add_node(&s->cluster, s->default_leaf_vertex, name, model, ngpus, cpu,
				   mem);
	if (idx < 0)
		return idx;
	if (labels && json_object_size(labels)) {
		struct drv_node *cn = &s->cluster.nodes[idx];
		const char *k;
		json_t *v;

		cn->labels = drv_calloc(json_object_size(labels), sizeof(*cn->labels));
		json_object_foreach(labels, k, v) {
			cn->labels[cn->nlabels].key = drv_strdup(k);
			cn->labels[cn->nlabels].value =
				drv_strdup(json_is_string(v) ? json_string_value(v) : "");
			cn->nlabels++;
		}
	}
	nodes_sync(s);
	json_decref(s->nodes[idx].labels);
	s->nodes[idx].labels = labels ? json_deep_copy(labels) : json_object();
	s->nodes[idx].dirty = true;
	if (s->sched)
		drv_sched_cluster_changed(s->sched, drv_wall_s());
	return idx;
}

int srv_cluster_setup(struct drv_server *s, const char *cluster_file, char *err, size_t errsz)
{
	static const char *const levels[] = { "cluster", "pool", "leaf", "node" };
	int rc;

	s->default_leaf_vertex = -1;
	s->default_pool_index = -1;
	if (cluster_file) {
		struct drv_diags d;

		drv_diags_init(&d, cluster_file);
		rc = drv_cluster_load_file(cluster_file, &s->cluster, &d);
		if (rc < 0) {
			drv_diags_print(&d, s->log.out ? s->log.out : stderr);
			snprintf(err, errsz, "%s: not a valid cluster file (%d error%s above)",
				 cluster_file, d.nerrors, d.nerrors == 1 ? "" : "s");
			drv_diags_release(&d);
			return rc == DRV_EIO ? DRV_EIO : DRV_EINVAL;
		}
		drv_diags_release(&d);
	} else {
		drv_cluster_init(&s->cluster, "cluster");
		rc = drv_cluster_set_levels(&s->cluster, levels, 4);
		if (rc < 0) {
			snprintf(err, errsz, "cannot set up the cluster: %s", drv_strerror(rc));
			return rc;
		}
	}
	nodes_sync(s);
	/* nodes named by the file are down until their agent registers */
	for (int32_t i = 0; i < s->nnodes; i++) {
		s->nodes[i].state = DRV_NODE_DOWN;
		drv_cluster_set_node_state(&s->cluster, i, DRV_NODE_DOWN);
		srv_set_str(&s->nodes[i].reason, "no agent has registered");
	}
	return 0;
}

/* --- restore ------------------------------------------------------------ */

static int load_node(const struct drv_store_node *row, void *cls)
{
	struct drv_server *s = cls;
	json_t *doc = json_loads(row->doc, 0, NULL);
	json_t *inv = doc ? json_object_get(doc, "inventory") : NULL;
	int32_t i = srv_node_find(s, row->name);
	struct srv_node *n;

	if (!doc)
		return 0;
	if (i < 0) {
		json_t *gpus = json_object_get(inv, "gpus");
		const char *mname = json_is_array(gpus) && json_array_size(gpus)
					    ? drv_json_str(json_array_get(gpus, 0), "model") : NULL;
		int model = mname ? drv_gpu_model_find(mname) : -1;

		i = srv_node_add(s, row->name, model, model >= 0 ? (int)json_array_size(gpus) : 0,
			     drv_json_int(inv, "cpu_milli", 0), drv_json_int(inv, "mem_mib", 0),
			     json_object_get(doc, "labels"));
		if (i < 0) {
			drv_log(&s->log, "cannot restore node %s: %s", row->name, drv_strerror(i));
			json_decref(doc);
			return 0;
		}
	}
	n = &s->nodes[i];
	if (json_is_object(inv)) {
		json_decref(n->inventory);
		n->inventory = json_incref(inv);
	}
	n->session = drv_json_int(doc, "session", 0);
	n->ever_registered = drv_json_bool(doc, "ever_registered", 0);
	n->admin_drain = drv_json_bool(doc, "admin_drain", 0);
	srv_set_str(&n->address, drv_json_str(doc, "address"));
	srv_set_str(&n->agent_url, drv_json_str(doc, "agent_url"));
	if (n->ever_registered) {
		/* a fresh heartbeat timeout to come back in */
		n->registered = true;
		n->last_hb_ms = drv_mono_ms();
		n->last_hb_wall = drv_wall_s();
		n->state = n->admin_drain ? DRV_NODE_DRAINING : DRV_NODE_UP;
		drv_cluster_set_node_state(&s->cluster, i, n->state);
		srv_set_str(&n->reason, n->admin_drain ? drv_json_str(doc, "reason") : "");
	}
	json_decref(doc);
	return 0;
}

static enum tstate tstate_parse(const char *n)
{
	for (int i = 0; i < T_NSTATES; i++)
		if (n && strcmp(srv_tstate_name((enum tstate)i), n) == 0)
			return (enum tstate)i;
	return T_PENDING;
}

static int load_job(const struct drv_store_job *row, void *cls)
{
	struct drv_server *s = cls;
	json_t *doc = json_loads(row->doc, 0, NULL), *tasks, *t;
	struct srv_job *j;
	struct drv_diags d;
	size_t i;
	int st;

	if (!doc) {
		drv_log(&s->log, "job %llu: its stored record is not JSON; skipped",
			(unsigned long long)row->id);
		return 0;
	}
	j = drv_calloc(1, sizeof(*j));
	j->id = row->id;
	drv_jobspec_init(&j->spec);
	drv_diags_init(&d, "stored job");
	if (drv_jobspec_from_json(json_object_get(doc, "spec"), &j->spec, &d) < 0) {
		drv_log(&s->log, "job %llu: its stored spec does not load; skipped",
			(unsigned long long)row->id);
		drv_diags_print(&d, s->log.out ? s->log.out : stderr);
		drv_diags_release(&d);
		srv_job_free(j);
		json_decref(doc);
		return 0;
	}
	drv_diags_release(&d);
	j->canon = json_incref(json_object_get(doc, "spec"));
	j->spec.job.id = j->id;
	srv_set_str(&j->spec.job.user, row->user);
	if (!j->spec.job.tenant)
		srv_set_str(&j->spec.job.tenant, row->tenant);
	st = srv_jstate_parse(row->state);
	j->state = st < 0 ? J_PENDING : (enum jstate)st;
	srv_set_str(&j->reason, drv_json_str(doc, "reason"));
	j->attempt = (int32_t)drv_json_int(doc, "attempt", 0);
	j->requeues = (int32_t)drv_json_int(doc, "requeues", 0);
	j->epoch = drv_json_int(doc, "epoch", 0);
	j->durable_epoch = j->epoch;
	j->submit_time = drv_json_int(doc, "submit_time", row->submit_time);
	j->spec.job.submit_time = j->submit_time;
	j->start_time = drv_json_int(doc, "start_time", 0);
	j->end_time = drv_json_int(doc, "end_time", 0);
	j->has_exit = json_is_integer(json_object_get(doc, "exit_code"));
	j->exit_code = (int)drv_json_int(doc, "exit_code", 0);
	srv_set_str(&j->stop_reason, drv_json_str(doc, "stop_reason"));
	j->requeue_on_stop = drv_json_bool(doc, "requeue_on_stop", 0);
	j->requeue_quiet = drv_json_bool(doc, "requeue_quiet", 0);
	j->holding = drv_json_bool(doc, "holding", 0);
	j->events = json_incref(json_object_get(doc, "events"));
	if (!json_is_array(j->events)) {
		json_decref(j->events);
		j->events = json_array();
	}
	tasks = json_object_get(doc, "tasks");
	if (json_array_size(tasks)) {
		j->tasks = drv_calloc(json_array_size(tasks), sizeof(*j->tasks));
		json_array_foreach(tasks, i, t) {
			struct srv_task *k = &j->tasks[j->ntasks++];
			const char *nn = drv_json_str(t, "node");

			k->node = nn ? srv_node_find(s, nn) : -1;
			if (k->node < 0) {
				/* its node left the cluster file: keep the name, as a node
				 * without GPUs that is down */
				k->node = srv_node_add(s, nn ? nn : "unknown", -1, 0, 0, 0, NULL);
				if (k->node >= 0)
					srv_node_set_state(s, k->node, DRV_NODE_DOWN,
							   "not in the cluster any more");
			}
			k->group = (int16_t)drv_json_int(t, "group", 0);
			k->gpu_mask = gpus_mask(json_object_get(t, "gpus"));
			k->gpu_milli = (int32_t)drv_json_int(t, "gpu_milli", 1000);
			k->cpu_milli = drv_json_int(t, "cpu_milli", 0);
			k->mem_mib = drv_json_int(t, "mem_mib", 0);
			k->state = tstate_parse(drv_json_str(t, "state"));
			k->ended = drv_json_bool(t, "ended", 0);
			k->exit_code = (int)drv_json_int(t, "exit_code", -1);
			k->signal = (int)drv_json_int(t, "signal", 0);
			k->oom = drv_json_bool(t, "oom", 0);
			srv_set_str(&k->reason, drv_json_str(t, "reason"));
			k->start_time = drv_json_int(t, "start_time", 0);
			k->end_time = drv_json_int(t, "end_time", 0);
			if (k->node < 0 || s->cluster.nodes[k->node].ngpus == 0) {
				/* its node is gone from the cluster: the task is lost */
				if (k->node < 0)
					k->node = 0;
				if (!k->ended) {
					k->ended = true;
					k->state = T_LOST;
					srv_set_str(&k->reason, "its node is no longer in the cluster");
				}
			}
		}
	}
	json_decref(doc);
	if (j->id > s->njobs) {
		DRV_GROW(s->jobs, j->id, s->jcap);
		for (uint64_t k = s->njobs; k < j->id; k++)
			s->jobs[k] = NULL;
		s->njobs = j->id;
	}
	s->jobs[j->id - 1] = j;
	return 0;
}

/* Hands the restored jobs to the scheduler: pending ones queue, jobs that
 * hold GPUs are added running on their placement. */
static void restore_sched(struct drv_server *s)
{
	struct drv_placement p;

	drv_placement_init(&p);
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = srv_job_get(s, id);
		int rc;

		if (!j)
			continue;
		if (j->holding) {
			bool lost = false;

			p.ntasks = 0;
			for (int32_t i = 0; i < j->ntasks; i++) {
				struct drv_task_place *tp;

				lost |= j->tasks[i].state == T_LOST && !srv_jstate_final(j->state);
				if (j->tasks[i].ended)
					continue;
				DRV_GROW(p.tasks, (size_t)p.ntasks + 1, p.cap);
				tp = &p.tasks[p.ntasks++];
				memset(tp, 0, sizeof(*tp));
				tp->node = j->tasks[i].node;
				tp->group = j->tasks[i].group;
				tp->gpu_milli = j->tasks[i].gpu_milli;
				tp->gpu_mask = j->tasks[i].gpu_mask;
				tp->cpu_milli = j->tasks[i].cpu_milli;
				tp->mem_mib = j->tasks[i].mem_mib;
			}
			rc = drv_sched_add_running(s->sched, &j->spec.job, srv_job_class(s, &j->spec), &p,
						   j->start_time ? j->start_time : j->submit_time, 0);
			if (rc < 0) {
				drv_log(&s->log, "job %llu: cannot restore it running (%s); requeued",
					(unsigned long long)j->id, drv_strerror(rc));
				j->holding = false;
				rc = drv_sched_submit(s->sched, &j->spec.job, srv_job_class(s, &j->spec));
				j->in_sched = rc == 0;
				srv_job_transition(s, j, J_PENDING, "could not be restored running after a restart");
				continue;
			}
			j->in_sched = true;
			srv_active_add(s, j->id);
			if (lost)
				srv_job_requeue_node_down(s, j, s->nodes[j->tasks[0].node].name,
						      "left the cluster");
		} else if (j->state == J_PENDING || j->state == J_PREEMPTED) {
			rc = drv_sched_submit(s->sched, &j->spec.job, srv_job_class(s, &j->spec));
			j->in_sched = rc == 0;
			if (j->state == J_PREEMPTED)
				srv_job_transition(s, j, J_PENDING, "requeued after a restart");
		}
	}
	drv_placement_release(&p);
}

int srv_restore(struct drv_server *s, char *err, size_t errsz)
{
	uint64_t maxjob = 0;
	int64_t maxseq = 0, v;
	int rc;

	rc = s->store->ops->load_nodes(s->store, load_node, s);
	if (rc == 0)
		rc = s->store->ops->load_jobs(s->store, load_job, s);
	if (rc == 0)
		rc = s->store->ops->max_ids(s->store, &maxjob, &maxseq);
	if (rc < 0) {
		snprintf(err, errsz, "cannot read the state: %s", s->store->err);
		return rc;
	}
	if (drv_store_get_meta(s->store, "epoch", &v) == 0)
		s->epoch = v;
	if (drv_store_get_meta(s->store, "session", &v) == 0)
		s->session = v;
	s->last_seq = maxseq;
	s->next_id = maxjob;
	if (maxjob > s->njobs) {
		DRV_GROW(s->jobs, maxjob, s->jcap);
		for (uint64_t k = s->njobs; k < maxjob; k++)
			s->jobs[k] = NULL;
		s->njobs = maxjob;
	}
	restore_sched(s);
	return 0;
}
