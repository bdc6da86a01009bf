/*
 * state.c: the controller's jobs in memory: lookup, dirty marks and
 * queued events, new jobs joining memory once written, the scheduler's side
 * of a job (its priority class, the loop's wake-up, why it waits), the
 * lifecycle (transitions, stopping tasks, release, requeue after a node
 * failure), a finished job leaving memory once on disk with the accounting
 * row of each ended attempt, and the ring of committed events. Its siblings: state_json.c
 * (the JSON forms), nodes.c (nodes and the cluster), restore.c (the
 * restart).
 *
 * These four sit at the bottom of the server's files (above util.c and
 * config.c only): commit.c, loop.c, server_metrics.c and the route
 * handlers call them, and they call none of those.
 *
 * The rule: memory changes first (under srv->mu), then srv_flush() writes
 * every dirty job, node and queued event in one store transaction, and
 * only after it succeeded are agents told (node versions) or replies sent.
 * A failed flush keeps everything dirty and is retried by the next one.
 */
#include "server_int.h"

#include "drover/hostlist.h"

#include <stdlib.h>
#include <string.h>

/* --- jobs --------------------------------------------------------------- */

struct srv_job *srv_job_get(struct drv_server *s, uint64_t id)
{
	if (id == 0 || id > s->njobs)
		return NULL;
	return s->jobs[id - 1];
}

void srv_jobs_by_state(struct drv_server *s, int64_t *counts)
{
	memcpy(counts, s->done_counts, sizeof(s->done_counts));
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = srv_job_get(s, id);

		if (j)
			counts[j->state]++;
	}
}

void srv_job_free(struct srv_job *j)
{
	if (!j)
		return;
	drv_jobspec_release(&j->spec);
	json_decref(j->canon);
	drv_free(j->reason);
	for (int32_t i = 0; i < j->ntasks; i++)
		{
		drv_free(j->tasks[i].reason);
		json_decref(j->tasks[i].usage);
		json_decref(j->tasks[i].container);
	}
	drv_free(j->tasks);
	drv_free(j->stop_reason);
	json_decref(j->events);
	drv_free(j->par);
	srv_deps_free(j);
	srv_steps_free(j);
	drv_free(j->steps);
	srv_api_memo_free(j->memo);
	drv_free(j);
}

/* --- the batch step and job steps' lifecycle ------------------------------ */

int32_t srv_job_batch_rank(const struct drv_server *s, const struct srv_job *j)
{
	int32_t best = -1;

	if (j->spec.format != DRV_FMT_SBATCH)
		return -1;
	for (int32_t k = 0; k < j->ntasks; k++)
		if (best < 0 || drv_hostname_cmp(s->nodes[j->tasks[k].node].name,
						 s->nodes[j->tasks[best].node].name) < 0)
			best = k;
	return best;
}

bool srv_task_held(const struct drv_server *s, const struct srv_job *j, int32_t rank)
{
	int32_t b = srv_job_batch_rank(s, j);

	return b >= 0 && rank != b;
}

static void step_free(struct srv_step *st)
{
	for (int32_t k = 0; k < st->ntasks; k++) {
		drv_free(st->tasks[k].reason);
		json_decref(st->tasks[k].usage);
		json_decref(st->tasks[k].container);
	}
	drv_free(st->tasks);
	drv_free(st->local);
	drv_free(st->nodeid);
	for (int32_t k = 0; k < st->nargv; k++)
		drv_free(st->argv[k]);
	drv_free(st->argv);
	for (int32_t k = 0; k < st->nenv; k++) {
		drv_free(st->env[k].name);
		drv_free(st->env[k].value);
	}
	drv_free(st->env);
	drv_free(st->cwd);
	drv_free(st->container_image);
	drv_free(st->container_workdir);
	for (int32_t k = 0; k < st->nmounts; k++) {
		drv_free(st->mounts[k].src);
		drv_free(st->mounts[k].dst);
	}
	drv_free(st->mounts);
	drv_free(st->stop_reason);
	drv_free(st);
}

void srv_steps_free(struct srv_job *j)
{
	for (int32_t k = 0; k < j->nsteps; k++)
		step_free(j->steps[k]);
	j->nsteps = 0;
}

/* Marks st done once every task of it ended. */
static void step_check_done(struct srv_step *st)
{
	for (int32_t k = 0; k < st->ntasks; k++)
		if (!st->tasks[k].ended)
			return;
	if (!st->done)
		st->end_time = drv_wall_s();
	st->done = true;
}

void srv_steps_stop(struct drv_server *s, struct srv_job *j, const char *why)
{
	for (int32_t k = 0; k < j->nsteps; k++) {
		struct srv_step *st = j->steps[k];

		if (st->done)
			continue;
		if (!st->stop_reason)
			srv_set_str(&st->stop_reason, why);
		for (int32_t r = 0; r < st->ntasks; r++) {
			struct srv_task *t = &st->tasks[r];

			if (t->ended)
				continue;
			srv_node_bump(s, t->node);
			if (t->state == T_PENDING) {
				/* never reported started: a late start is fenced */
				t->ended = true;
				t->state = T_CANCELLED;
				t->end_time = drv_wall_s();
				srv_set_str(&t->reason, why);
			}
		}
		step_check_done(st);
	}
}

bool srv_steps_ended(const struct srv_job *j)
{
	for (int32_t k = 0; k < j->nsteps; k++)
		for (int32_t r = 0; r < j->steps[k]->ntasks; r++)
			if (!j->steps[k]->tasks[r].ended)
				return false;
	return true;
}

void srv_steps_node_lost(struct drv_server *s, struct srv_job *j, int32_t node, const char *why)
{
	(void)s;
	for (int32_t k = 0; k < j->nsteps; k++) {
		struct srv_step *st = j->steps[k];

		for (int32_t r = 0; r < st->ntasks; r++) {
			struct srv_task *t = &st->tasks[r];

			if (t->ended || t->node != node)
				continue;
			t->ended = true;
			t->state = T_LOST;
			t->end_time = drv_wall_s();
			srv_set_str(&t->reason, why);
		}
		step_check_done(st);
	}
}

void srv_job_mark(struct drv_server *s, struct srv_job *j)
{
	j->ver++;   /* what the API shows of it may have changed (srv_job_api_text) */
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
	if (srv_jstate_final(to) && !srv_jstate_final(from) && !j->holding)
		srv_acct_attempt_ended(s, j, srv_jstate_name(to));   /* nothing runs: it ends now */
	s->transitions[to]++;
	srv_queue_event(s, "job", j, NULL, fresh ? NULL : srv_jstate_name(from), srv_jstate_name(to), reason);
	srv_job_mark(s, j);
	if (j->par || j->parent)
		srv_elements_transition(s, j, from, to);
}

void srv_active_add(struct drv_server *s, uint64_t id)
{
	for (size_t i = 0; i < s->nactive; i++)
		if (s->active[i] == id)
			return;
	DRV_GROW(s->active, s->nactive + 1, s->acap);
	s->active[s->nactive++] = id;
}

/*
 * A copy of the active list, for a walk whose steps may add to it or take
 * from it (a requeue, a stop). Never NULL; the caller frees it. s->active
 * is NULL until the first job runs, and memcpy from NULL is undefined
 * even for 0 bytes (UBSan stopped a server whose node timed out then).
 */
uint64_t *srv_active_copy(const struct drv_server *s, size_t *n)
{
	uint64_t *ids = drv_calloc(s->nactive + 1, sizeof(*ids));

	if (s->nactive)
		memcpy(ids, s->active, s->nactive * sizeof(*ids));
	*n = s->nactive;
	return ids;
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

/*
 * A desired-state version for node i that no earlier session or life of
 * the controller handed out: the wall clock in microseconds, or one more
 * than now if that is not ahead. An agent keeps the version it last got
 * across a controller restart (its session is restored); a restored node
 * that started again at 0 could reach that same number while its task
 * set differed, and the agent, told "unchanged", never got the tasks
 * placed on it (bench soak: 8 jobs scheduled, never started). One life
 * bumps a node far less than once a microsecond, so the next life's
 * first version is above every one of the last. Caller holds s->mu.
 */
void srv_node_fresh_version(struct drv_server *s, int32_t i)
{
	struct timespec now = drv_realtime_after_ms(0);
	uint64_t us = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;

	s->nodes[i].version = DRV_MAX(s->nodes[i].version + 1, us);
}

void srv_node_bump(struct drv_server *s, int32_t node)
{
	if (node >= 0 && node < s->nnodes) {
		s->nodes[node].version++;
		drv_http_wake_key(s->http, SRV_KEY_NODE(node));
	}
}

void srv_job_bump_nodes(struct drv_server *s, struct srv_job *j)
{
	for (int32_t i = 0; i < j->ntasks; i++)
		srv_node_bump(s, j->tasks[i].node);
}

double srv_job_gpus(const struct srv_job *j)
{
	int64_t milli = 0;
	bool by_mem = false;

	if (j->par)
		return 0;   /* a parent holds nothing: its elements do */
	for (int32_t g = 0; g < j->spec.job.ngroups; g++) {
		const struct drv_task_group *tg = &j->spec.job.groups[g];

		by_mem |= drv_group_mem_share(tg);
		milli += (int64_t)tg->count * ((int64_t)tg->gpus * 1000 + tg->gpu_milli);
	}
	/* a share by GPU memory has its size once placed: the placement's */
	if (by_mem && j->ntasks > 0) {
		milli = 0;
		for (int32_t i = 0; i < j->ntasks; i++)
			milli += (int64_t)__builtin_popcountll(j->tasks[i].gpu_mask) *
				 j->tasks[i].gpu_milli;
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
		srv_deps_gate(s, j);
		srv_job_queue(s, j);
	}
	s->transitions[J_PENDING] += n;
	s->submits += n;
	srv_sched_kick(s);
}

/* --- the scheduler's side of a job -------------------------------------- */

static bool runtime_hold(struct drv_server *s, struct srv_job *j);

void srv_job_queue(struct drv_server *s, struct srv_job *j)
{
	char why[320];

	/* a parent never runs; a gated element waits its turn; a job with
	 * dependencies waits for them */
	if (j->par || j->gated || j->dep_wait || j->hold) {
		j->in_sched = false;
		return;
	}
	if (srv_budget_spent(s, j->spec.job.tenant, why, sizeof(why))) {
		if (!j->budget_held) {
			j->budget_held = true;
			DRV_GROW(s->held, s->nheld + 1, s->heldcap);
			s->held[s->nheld++] = j->id;
			srv_job_transition(s, j, J_PENDING, why);
		}
		return;
	}
	j->budget_held = false;
	if (srv_kobjs_missing(s, j, why, sizeof(why))) {
		/* a Secret or ConfigMap it uses is not there yet (kube_config.c) */
		if (!j->config_held || !j->reason || strcmp(j->reason, why) != 0) {
			j->config_held = true;
			srv_job_transition(s, j, J_PENDING, why);
		}
		return;
	}
	j->config_held = false;
	if (runtime_hold(s, j))
		return;
	j->in_sched = drv_sched_submit(s->sched, &j->spec.job, srv_job_class(s, &j->spec)) == 0;
}

bool srv_run_needs_container(const struct drv_task_run *run)
{
	if (!run || !run->image || run->script)
		return false;
	/* volumes are mounted only into a container */
	return run->ncommand == 0 || run->nmounts > 0 ||
	       (run->runtime && !strcmp(run->runtime, "podman"));
}

static const char *job_needs_container(const struct srv_job *j)
{
	for (int32_t g = 0; j->spec.run && g < j->spec.job.ngroups; g++)
		if (srv_run_needs_container(&j->spec.run[g]))
			return j->spec.run[g].image;
	return NULL;
}

static bool some_node_runs_containers(const struct drv_server *s)
{
	for (int32_t i = 0; i < s->cluster.nnodes; i++) {
		const struct drv_node *n = &s->cluster.nodes[i];

		for (int32_t k = 0; k < n->nlabels; k++)
			if (!strcmp(n->labels[k].key, SRV_RUNTIME_LABEL) &&
			    !strcmp(n->labels[k].value, "podman"))
				return true;
	}
	return false;
}

/*
 * A job that needs a container runs only where the label says podman
 * (the requirement is added to its node selector once); while no node has
 * it, the job is held: true then.
 */
static bool runtime_hold(struct drv_server *s, struct srv_job *j)
{
	const char *image = job_needs_container(j);
	bool has = false, was = j->runtime_held;
	char why[512];

	j->runtime_held = false;
	if (!image)
		return false;
	for (int32_t k = 0; k < j->spec.job.nnode_selector && !has; k++)
		has = !strcmp(j->spec.job.node_selector[k].key, SRV_RUNTIME_LABEL);
	if (!has)
		drv_job_add_node_label(&j->spec.job, SRV_RUNTIME_LABEL, "podman");
	if (some_node_runs_containers(s))
		return false;
	j->runtime_held = true;
	if (was)
		return true;
	DRV_GROW(s->rt_held, s->nrt_held + 1, s->rt_heldcap);
	s->rt_held[s->nrt_held++] = j->id;
	snprintf(why, sizeof(why), "needs a container runtime (image %s and no command): no node "
		 "runs one (every agent runs --runtime host; start one with --runtime podman)",
		 image);
	srv_job_transition(s, j, J_PENDING, why);
	return true;
}

void srv_runtime_release(struct drv_server *s)
{
	size_t n = s->nrt_held;

	if (!n || !some_node_runs_containers(s))
		return;
	s->nrt_held = 0;
	for (size_t k = 0; k < n; k++) {
		struct srv_job *j = srv_job_get(s, s->rt_held[k]);

		if (!j || !j->runtime_held || j->state != J_PENDING)
			continue;
		srv_job_queue(s, j);
		srv_job_transition(s, j, J_PENDING, "a node runs containers now");
	}
	srv_sched_kick(s);
}

void srv_budget_release(struct drv_server *s)
{
	size_t k = 0;
	char why[320];

	while (k < s->nheld) {
		struct srv_job *j = srv_job_get(s, s->held[k]);

		if (j && j->budget_held && j->state == J_PENDING &&
		    srv_budget_spent(s, j->spec.job.tenant, why, sizeof(why))) {
			k++;
			continue;
		}
		s->held[k] = s->held[--s->nheld];
		if (!j || !j->budget_held || j->state != J_PENDING)
			continue;
		j->budget_held = false;
		srv_job_queue(s, j);
		srv_job_transition(s, j, J_PENDING, "budget hold released: the tenant may spend again");
		srv_sched_kick(s);
	}
}

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
	drv_sched_reason_text(&s->cluster, d, drv_wall_s(), buf, n);
	return buf;
}

/* The scheduler's current reason for pending job j; false when it has none. */
static bool sched_why(struct drv_server *s, const struct srv_job *j, struct drv_sched_decision *w)
{
	struct drv_sched_job_info info;

	/* A pass emits a reason only when it changes, and one that stops
	 * early (nothing else can fit) emits none for the jobs after it: the
	 * stored reason may be an older pass's, with older numbers. The
	 * scheduler always knows the current one. */
	if (j->state == J_PENDING && !j->holding &&
	    drv_sched_job_get(s->sched, j->id, &info) == 0 &&
	    info.state == DRV_SJ_PENDING && info.why.reason != DRV_REASON_NONE) {
		*w = info.why;
		return true;
	}
	return false;
}

const char *srv_job_reason(struct drv_server *s, const struct srv_job *j, char *buf, size_t n)
{
	struct drv_sched_decision w;
	struct srv_job *e;

	if (j->par && j->state == J_PENDING && (e = srv_parent_first_pending(s, j))) {
		char eb[512];   /* a parent waits for its pods: the first one's reason */

		snprintf(buf, n, "%s %llu (index %d): %s", j->par->array ? "array task" : "pod",
			 (unsigned long long)e->id, e->index, srv_job_reason(s, e, eb, sizeof(eb)));
		return buf;
	}
	if (sched_why(s, j, &w))
		return srv_pending_text(s, &w, buf, n);
	return j->reason ? j->reason : "";
}

const char *srv_job_reason_code(struct drv_server *s, const struct srv_job *j)
{
	struct drv_sched_decision w;

	if (j->state != J_PENDING)
		return NULL;
	if (j->budget_held)
		return "Budget";
	if (j->hold)
		return j->hold == SRV_HOLD_ADMIN ? "JobHeldAdmin" : "JobHeldUser";
	if (j->dep_wait)
		return j->begin_wait ? "BeginTime" : j->dep_never ? "DependencyNeverSatisfied"
								    : "Dependency";
	if (j->runtime_held)
		return "RuntimeUnavailable";
	if (j->config_held)
		return "CreateContainerConfigError";
	if (j->par) {
		const struct srv_job *e = srv_parent_first_pending(s, j);

		return e ? srv_job_reason_code(s, e) : "None";
	}
	if (j->gated) {
		const struct srv_job *p = srv_job_get(s, j->parent);

		return p && p->par && p->par->suspended ? "JobHeldUser" : "JobArrayTaskLimit";
	}
	return sched_why(s, j, &w) ? drv_sched_reason_code(&w) : "None";
}

/* A walk over the capacity's inputs: it appends them to out, or (out
 * NULL) compares them with what old holds, in place. */
struct cap_walk {
	struct drv_dynbuf *out;
	const struct drv_dynbuf *old;
	size_t pos;
	bool same;
};

/* n inputs at once (inlined: n is a constant at each call). */
static inline void cap_inputs(struct cap_walk *w, const int64_t *v, size_t n)
{
	if (w->out) {
		drv_dynbuf_add(w->out, v, n * sizeof(*v));
		return;
	}
	if (w->pos + n * sizeof(*v) > w->old->len) {
		w->same = false;
		return;
	}
	for (size_t k = 0; k < n; k++) {
		int64_t was;

		memcpy(&was, w->old->buf + w->pos + k * sizeof(was), sizeof(was));
		if (was != v[k])
			w->same = false;
	}
	w->pos += n * sizeof(*v);
}

/* Whether the walk must go on: a copy takes everything, a comparison
 * stops at the first difference. */
static inline bool cap_more(const struct cap_walk *w)
{
	return w->out || w->same;
}

/* Every field of the cluster that drv_capacity_build reads, in order. */
static void capacity_inputs(const struct drv_cluster *c, struct cap_walk *w)
{
	int64_t head[3] = { c->nnodes, c->npools, c->nvertices };

	cap_inputs(w, head, 3);
	for (int32_t i = 0; i < c->nnodes && cap_more(w); i++) {
		const struct drv_node *n = &c->nodes[i];
		int64_t v[7] = { n->pool, n->model, n->ngpus, n->cpu_milli, n->mem_mib, n->state,
				 n->vertex };

		cap_inputs(w, v, 7);
	}
	for (int32_t i = 0; i < c->nvertices && cap_more(w); i++) {
		int64_t v[2] = { c->vertices[i].parent, c->vertices[i].level };

		cap_inputs(w, v, 2);
	}
	for (int32_t p = 0; p < c->npools && cap_more(w); p++) {
		int64_t v[2] = { c->pools[p].elastic, c->pools[p].max_nodes };

		cap_inputs(w, v, 2);
	}
}

/* Rebuilt only when the cluster changed: a build clears some 100 KB (a
 * cell per pool slot and model, twice), 14% of a submit's instructions,
 * while reading what it is made of costs a few per node. The inputs are
 * compared where they lie: copying them first (56 bytes a node, 700 KB at
 * 12,500 nodes) cost each submit an allocation of that size, under the
 * big lock. */
void srv_capacity_refresh(struct drv_server *s)
{
	struct drv_dynbuf in = DRV_DYNBUF_INIT(SIZE_MAX);
	struct cap_walk w = { .old = &s->cap_inputs, .same = true };

	if (s->capacity) {
		capacity_inputs(&s->cluster, &w);
		if (w.same && w.pos == s->cap_inputs.len)
			return;
	}
	w.out = &in;
	capacity_inputs(&s->cluster, &w);
	if (!s->capacity)
		s->capacity = drv_capacity_new();
	drv_capacity_build(s->capacity, &s->cluster, NULL, NULL);
	s->capacity_builds++;
	drv_dynbuf_release(&s->cap_inputs);
	s->cap_inputs = in;
}

bool srv_job_never(struct drv_server *s, const struct drv_job *job, char *buf, size_t n)
{
	struct drv_sched_decision w;

	if (drv_capacity_check(s->capacity, &s->cluster, job, &w) != DRV_REASON_NEVER)
		return false;
	drv_sched_reason_text(&s->cluster, &w, 0, buf, n);
	return true;
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
	if (!srv_steps_ended(j))
		return;
	j->holding = false;
	srv_cost_accrue_job(s, j, now);   /* its final cost, counted */
	srv_active_remove(s, j->id);
	srv_acct_attempt_ended(s, j, j->requeue_on_stop && !srv_jstate_final(j->state)
					     ? "requeued" : srv_jstate_name(j->state));
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
	} else {
		if (j->in_sched) {
			drv_sched_finish(s->sched, j->id, now);
			j->in_sched = false;
		}
		/* completing ends (CONTRACTS.md: CG to its final state in squeue,
		 * a deleted pod gone): a change every face shows, so an event a
		 * watch from an earlier version is told of */
		if (srv_jstate_final(j->state))
			srv_queue_event(s, "job", j, NULL, srv_jstate_name(j->state),
					srv_jstate_name(j->state), "completing ended: every task is gone");
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
		if (t->state == T_PENDING || srv_task_held(s, j, i)) {
			/* never reported started (or a share held for steps, which
			 * runs nothing): nothing to wait for; a late start is
			 * fenced (absent from the assignments, stale in reports) */
			t->ended = true;
			t->state = T_CANCELLED;
			t->end_time = drv_wall_s();
			srv_set_str(&t->reason, reason);
		}
	}
	srv_steps_stop(s, j, reason);
	srv_job_bump_nodes(s, j);
	srv_job_mark(s, j);
	srv_job_released(s, j);
}

/*
 * The batch task of an #SBATCH job ended: the job is over (Slurm's job
 * ends with its batch script), so the shares held for steps end with it
 * (as it did), and steps still running are stopped.
 */
static void batch_ended(struct drv_server *s, struct srv_job *j, const struct srv_task *b)
{
	for (int32_t i = 0; i < j->ntasks; i++) {
		struct srv_task *t = &j->tasks[i];

		if (t == b || t->ended)
			continue;
		t->ended = true;
		t->state = b->state == T_SUCCEEDED ? T_SUCCEEDED : T_CANCELLED;
		if (!t->start_time)
			t->start_time = b->start_time;
		t->end_time = b->end_time;
	}
}

void srv_task_ended(struct drv_server *s, struct srv_job *j, int32_t rank)
{
	struct srv_task *t = &j->tasks[rank];
	char why[512];
	bool all_ok = true, all_ended = true;

	t->ended = true;
	if (!t->end_time)
		t->end_time = drv_wall_s();
	if (rank == srv_job_batch_rank(s, j))
		batch_ended(s, j, t);
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
				snprintf(why, sizeof(why), "task %llu.%d killed by signal %d (%s), "
					 "not sent by drover", (unsigned long long)j->id, rank,
					 t->signal, sigabbrev_np(t->signal) ? sigabbrev_np(t->signal)
									    : "?");
			else
				snprintf(why, sizeof(why), "task %llu.%d exited with code %d",
					 (unsigned long long)j->id, rank, t->exit_code);
			j->has_exit = t->signal == 0 && t->exit_code >= 0 && !(t->reason && *t->reason);
			j->exit_code = t->exit_code;
			if (j->parent && srv_element_retry(s, j, why)) {
				srv_job_released(s, j);
				return;
			}
			/* CONTRACTS.md §1: OUT_OF_MEMORY / TIMEOUT in sacct, OOMKilled /
			 * DeadlineExceeded in Kubernetes */
			srv_job_transition(s, j, t->oom ? J_OUT_OF_MEMORY
						: t->timed_out ? J_TIMEOUT : J_FAILED, why);
			srv_job_stop_tasks(s, j, "another task of the job failed");
		} else {
			for (int32_t i = 0; i < j->ntasks; i++) {
				all_ended &= j->tasks[i].ended;
				all_ok &= j->tasks[i].state == T_SUCCEEDED;
			}
			if (all_ended && all_ok) {
				j->has_exit = true;
				j->exit_code = 0;
				srv_job_transition(s, j, J_SUCCEEDED,
						   srv_job_batch_rank(s, j) >= 0
							   ? "the batch script exited with code 0"
							   : "every task exited with code 0");
				if (!srv_steps_ended(j))
					srv_job_stop_tasks(s, j, "the batch script ended");
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
	for (int32_t i = 0; i < s->nnodes; i++)
		if (strcmp(s->nodes[i].name, node) == 0)
			srv_steps_node_lost(s, j, i, why);
	srv_job_bump_nodes(s, j);
	srv_job_mark(s, j);
	if (srv_jstate_final(j->state) || j->stop_reason) {
		srv_job_released(s, j);
		return;
	}
	if (j->spec.format == DRV_FMT_SBATCH && j->spec.slurm.no_requeue) {
		/* Slurm's --no-requeue: the node failure ends it (NODE_FAIL) */
		snprintf(reason, sizeof(reason), "node %s %s; not requeued (--no-requeue)", node,
			 why);
		srv_job_transition(s, j, J_NODE_FAIL, reason);
		srv_job_stop_tasks(s, j, "the job ended: a node went down (--no-requeue)");
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

/* --- leaving memory, accounting rows ------------------------------------- */

void srv_job_evict(struct drv_server *s, struct srv_job *j)
{
	if (!srv_jstate_final(j->state) || j->holding || j->dirty || j->in_sched ||
	    srv_job_get(s, j->id) != j)
		return;
	if (s->page_readers > 0) {
		DRV_GROW(s->evict_later, s->nevict_later + 1, s->evict_later_cap);
		s->evict_later[s->nevict_later++] = j->id;
		return;
	}
	s->jobs[j->id - 1] = NULL;
	s->done_counts[j->state]++;
	srv_job_free(j);
}

void srv_job_evict_deferred(struct drv_server *s)
{
	size_t n = s->nevict_later;

	s->nevict_later = 0;
	for (size_t i = 0; i < n; i++) {
		struct srv_job *j = srv_job_get(s, s->evict_later[i]);

		if (j)
			srv_job_evict(s, j);   /* checked again: it may be held anew */
	}
}

/* --- accounting rows ----------------------------------------------------- */

static int popcount64(uint64_t m)
{
	return __builtin_popcountll(m);
}

void srv_acct_row(struct drv_server *s, struct srv_job *j, const char *state, int64_t now,
		  struct drv_store_acct *a)
{
	memset(a, 0, sizeof(*a));
	a->job = j->id;
	a->attempt = j->attempt;
	a->name = j->spec.job.name;
	a->user = j->spec.job.user;
	a->tenant = j->spec.job.tenant;
	a->pool = "";
	a->state = state;
	a->submit_time = j->submit_time;
	a->start_time = j->start_time;
	a->end_time = now;
	a->has_exit = j->has_exit;
	a->exit_code = j->exit_code;
	for (int32_t i = 0; i < j->ntasks; i++) {
		const struct srv_task *t = &j->tasks[i];
		int64_t end = t->end_time ? t->end_time : now;

		if (!*a->pool)
			a->pool = srv_task_pool(s, t);
		if (t->start_time && end > t->start_time)
			a->gpu_milli_s += (int64_t)popcount64(t->gpu_mask) * t->gpu_milli *
					  (end - t->start_time);
		a->cost_micro += srv_task_cost_micro(s, t, now, 0);   /* as the job's cost_usd */
	}
	{
		json_t *eff = srv_job_efficiency(s, j, now);

		a->efficiency = eff ? json_dumps(eff, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
		json_decref(eff);
	}
}

void srv_wacct_release(struct wacct *w)
{
	drv_free((char *)w->a.name);
	drv_free((char *)w->a.user);
	drv_free((char *)w->a.tenant);
	drv_free((char *)w->a.pool);
	drv_free((char *)w->a.state);
	free((char *)w->a.efficiency);   /* json_dumps' */
	memset(w, 0, sizeof(*w));
}

void srv_acct_attempt_ended(struct drv_server *s, struct srv_job *j, const char *state)
{
	struct wacct *w;

	DRV_GROW(s->acct_pend, s->nacct + 1, s->acctcap);
	w = &s->acct_pend[s->nacct++];
	srv_acct_row(s, j, state, drv_wall_s(), &w->a);
	w->a.name = drv_strdup(w->a.name ? w->a.name : "");
	w->a.user = drv_strdup(w->a.user ? w->a.user : "");
	w->a.tenant = drv_strdup(w->a.tenant ? w->a.tenant : "default");
	w->a.pool = drv_strdup(w->a.pool);
	w->a.state = drv_strdup(state);
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
