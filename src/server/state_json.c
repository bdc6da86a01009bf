/*
 * state_json.c: the JSON forms of jobs and nodes: the documents the store
 * keeps (srv_job_store_doc, srv_node_store_doc, read back by restore.c)
 * and what the API shows (srv_job_api_json, srv_node_api_json; fields as
 * docs/api.md says). Under s->mu; each returns a new reference.
 */
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

static json_t *gpus_array(uint64_t mask)
{
	json_t *a = json_array();

	for (int i = 0; i < 64; i++)
		if (mask & (1ull << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

static json_t *task_doc(struct drv_server *s, const struct srv_task *t)
{
	json_t *o = json_pack("{s:s,s:i,s:o,s:i,s:I,s:I,s:s,s:b,s:i,s:i,s:b,s:s,s:I,s:I}", "node",
			 s->nodes[t->node].name, "group", t->group, "gpus",
			 gpus_array(t->gpu_mask), "gpu_milli", t->gpu_milli, "cpu_milli",
			 (json_int_t)t->cpu_milli, "mem_mib", (json_int_t)t->mem_mib, "state",
			 srv_tstate_name(t->state), "ended", t->ended, "exit_code", t->exit_code,
			 "signal", t->signal, "oom", t->oom, "reason", t->reason ? t->reason : "",
			 "start_time", (json_int_t)t->start_time, "end_time",
			 (json_int_t)t->end_time);

	if (t->usage)
		json_object_set(o, "usage", t->usage);
	if (t->container)
		json_object_set(o, "container", t->container);
	return o;
}

/* j's steps as stored (restore.c's srv_steps_load reads them back). */
static json_t *steps_doc(struct drv_server *s, const struct srv_job *j)
{
	json_t *a = json_array();

	for (int32_t k = 0; k < j->nsteps; k++) {
		const struct srv_step *st = j->steps[k];
		json_t *tasks = json_array(), *argv = json_array(), *env = json_array();
		json_t *local = json_array(), *nodeid = json_array();

		for (int32_t r = 0; r < st->ntasks; r++) {
			json_array_append_new(tasks, task_doc(s, &st->tasks[r]));
			json_array_append_new(local, json_integer(st->local[r]));
			json_array_append_new(nodeid, json_integer(st->nodeid[r]));
		}
		for (int32_t x = 0; x < st->nargv; x++)
			json_array_append_new(argv, json_string(st->argv[x]));
		for (int32_t x = 0; x < st->nenv; x++)
			json_array_append_new(env, json_pack("[s,s]", st->env[x].name,
							     st->env[x].value));
		json_t *doc;

		json_array_append_new(
			a, doc = json_pack("{s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:s*,s:i,s:b,s:s*,s:b,s:I,s:I}",
				     "id", st->id, "nnodes", st->nnodes, "tasks", tasks, "local",
				     local, "node_id", nodeid, "argv", argv, "env", env, "cwd",
				     st->cwd, "cpus_per_task", st->cpus_per_task, "kill_on_bad_exit",
				     st->kill_on_bad_exit, "stop_reason", st->stop_reason, "done",
				     st->done, "start_time", (json_int_t)st->start_time, "end_time",
				     (json_int_t)st->end_time));
		if (st->container_image) {
			json_t *m = json_array();

			for (int32_t x = 0; x < st->nmounts; x++)
				json_array_append_new(m, json_pack("[s,s,b]", st->mounts[x].src,
								   st->mounts[x].dst,
								   st->mounts[x].read_only));
			json_object_set_new(doc, "container_image", json_string(st->container_image));
			if (st->container_workdir)
				json_object_set_new(doc, "container_workdir",
						    json_string(st->container_workdir));
			json_object_set_new(doc, "container_mounts", m);
		}
	}
	return a;
}

json_t *srv_job_store_doc(struct drv_server *s, struct srv_job *j)
{
	json_t *tasks = json_array(), *doc;

	for (int32_t i = 0; i < j->ntasks; i++)
		json_array_append_new(tasks, task_doc(s, &j->tasks[i]));
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
	json_object_set_new(doc, "cost_prev_micro", json_integer((json_int_t)j->cost_prev_micro));
	json_object_set_new(doc, "cost_prev_time", json_integer((json_int_t)j->cost_prev_time));
	json_object_set_new(doc, "budget_held", json_boolean(j->budget_held));
	if (j->sig_seq || j->sig_timer_epoch)
		json_object_set_new(doc, "signal",
				    json_pack("{s:I,s:i,s:i,s:I}", "seq", (json_int_t)j->sig_seq,
					      "num", j->sig_num, "to", j->sig_to, "timer_epoch",
					      (json_int_t)j->sig_timer_epoch));
	if (j->nsteps)
		json_object_set_new(doc, "steps", steps_doc(s, j));
	if (j->parent) {
		json_object_set_new(doc, "parent", json_integer((json_int_t)j->parent));
		json_object_set_new(doc, "index", json_integer(j->index));
		json_object_set_new(doc, "gated", json_boolean(j->gated));
	}
	if (j->hold)
		json_object_set_new(doc, "hold", json_integer(j->hold));
	if (j->begin_time)
		json_object_set_new(doc, "begin_time", json_integer((json_int_t)j->begin_time));
	if (j->par)
		json_object_set_new(doc, "elements",
				    json_pack("{s:I,s:i,s:i,s:i,s:i,s:i,s:I,s:b}", "first",
					      (json_int_t)j->par->first, "n", j->par->n, "parallelism",
					      j->par->parallelism, "backoff_limit",
					      j->par->backoff_limit, "succeeded", j->par->succeeded,
					      "failed", j->par->failed, "deadline_s",
					      (json_int_t)j->par->deadline_s, "indexed",
					      j->par->indexed));
	if (j->par) {
		json_t *el = json_object_get(doc, "elements");

		json_object_set_new(el, "suspended", json_boolean(j->par->suspended));
		if (j->par->array)
			json_object_set_new(el, "array", json_true());
		json_object_set_new(el, "active_since", json_integer((json_int_t)j->par->active_since));
	}
	return doc;
}

static const char *job_image(const struct srv_job *j)
{
	for (int32_t g = 0; g < j->spec.job.ngroups; g++)
		if (j->spec.run && j->spec.run[g].image)
			return j->spec.run[g].image;
	return NULL;
}

/* "podman" when a task group needs a container, else "host". */
static const char *job_runtime(const struct srv_job *j)
{
	for (int32_t g = 0; j->spec.run && g < j->spec.job.ngroups; g++)
		if (srv_run_needs_container(&j->spec.run[g]))
			return "podman";
	return "host";
}

/* The default partition of the Slurm faces: the server's default_pool when
 * the cluster has it, else its first pool ("default" without any). */
const char *srv_default_partition(struct drv_server *s)
{
	for (int32_t p = 0; p < s->cluster.npools; p++)
		if (s->cfg.default_pool && !strcmp(s->cluster.pools[p].name, s->cfg.default_pool))
			return s->cluster.pools[p].name;
	return s->cluster.npools ? s->cluster.pools[0].name : "default";
}

/* The partition the Slurm faces show: the one asked for, else the pool of
 * the job's first node, else the default. */
static const char *job_partition(struct drv_server *s, const struct srv_job *j)
{
	const char *part = j->spec.slurm.partition;

	if ((!part || !*part) && j->ntasks > 0) {
		const struct drv_node *cn = &s->cluster.nodes[j->tasks[0].node];

		if (cn->pool >= 0 && cn->pool < s->cluster.npools)
			part = s->cluster.pools[cn->pool].name;
	}
	return part && *part ? part : srv_default_partition(s);
}

/*
 * What the Slurm faces show beside drover's own fields (docs/api.md):
 * the partition (the one asked for, else the pool of the job's first
 * node, else the default), the time limit, the CPUs (Slurm's NCPUS: the
 * tasks' CPU requests, at least one per task), the node count (placed, or
 * asked for while pending: one node per task group member, as drover
 * places Slurm's per-node tasks), the hold, and Slurm's output paths.
 */
static void slurm_fields(struct drv_server *s, struct srv_job *j, json_t *o, int nnodes)
{
	const struct drv_job *jb = &j->spec.job;
	const char *part = job_partition(s, j);
	int64_t cpu_milli = 0;
	int32_t ntasks = drv_job_tasks(jb);

	for (int32_t g = 0; g < jb->ngroups; g++) {
		int64_t c = jb->groups[g].cpu_milli > 0 ? jb->groups[g].cpu_milli : 1000;

		cpu_milli += (int64_t)jb->groups[g].count * ((c + 999) / 1000 * 1000);
	}
	json_object_set_new(o, "partition", json_string(part));
	json_object_set_new(o, "time_limit_s",
			    jb->time_limit > 0 ? json_integer((json_int_t)jb->time_limit)
					       : json_null());
	json_object_set_new(o, "cpus", json_integer((json_int_t)(cpu_milli / 1000)));
	json_object_set_new(o, "nodes_requested",
			    json_integer(nnodes ? nnodes : (ntasks > 0 ? ntasks : 1)));
	json_object_set_new(o, "account", j->spec.slurm.account
					       ? json_string(j->spec.slurm.account) : json_null());
	{
		int64_t mem = 0;
		int sig = 0;

		for (int32_t g = 0; g < jb->ngroups; g++)
			mem += (int64_t)jb->groups[g].count * jb->groups[g].mem_mib;
		for (int32_t i = 0; i < j->ntasks; i++)
			if (j->tasks[i].ended && j->tasks[i].signal && !sig)
				sig = j->tasks[i].signal;
		json_object_set_new(o, "mem_mib", json_integer((json_int_t)mem));
		json_object_set_new(o, "signal", sig ? json_integer(sig) : json_null());
	}
	json_object_set_new(o, "batch_step", json_boolean(j->spec.format == DRV_FMT_SBATCH ||
						(j->spec.kind && !strcmp(j->spec.kind, "BatchScript"))));
	json_object_set_new(o, "completing", json_boolean(srv_jstate_final(j->state) && j->holding));
	if (j->nsteps)
		json_object_set_new(o, "steps", srv_steps_summary(j));
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
		      jb->preemptible, "runtime", job_runtime(j), "image",
		      job_image(j) ? json_string(job_image(j)) : json_null(), "attempt",
		      j->attempt);
	{
		const char *code = srv_job_reason_code(s, j);

		json_object_set_new(o, "reason_code", code ? json_string(code) : json_null());
	}
	/* whole GPU counts print as integers */
	if (srv_job_gpus(j) == (double)(int64_t)srv_job_gpus(j))
		json_object_set_new(o, "gpus", json_integer((json_int_t)srv_job_gpus(j)));
	json_object_set_new(o, "submit_time", srv_json_time(j->submit_time));
	json_object_set_new(o, "start_time", srv_json_time(j->start_time));
	json_object_set_new(o, "end_time", srv_json_time(j->end_time));
	json_object_set_new(o, "exit_code", j->has_exit ? json_integer(j->exit_code) : json_null());
	json_object_set_new(o, "begin_time", srv_json_time(j->begin_time));
	json_object_set_new(o, "time_limit_s", j->spec.job.time_limit
				       ? json_integer(j->spec.job.time_limit) : json_null());
	json_object_set_new(o, "cost_usd", srv_json_usd(srv_job_cost_micro(s, j, drv_wall_s())));
	{
		json_t *eff = srv_job_efficiency(s, j, drv_wall_s());

		json_object_set_new(o, "efficiency", eff ? eff : json_null());
	}
	json_object_set_new(o, "hold", j->hold == SRV_HOLD_USER ? json_string("user")
				       : j->hold == SRV_HOLD_ADMIN ? json_string("admin")
				       : j->budget_held ? json_string("budget")
				       : j->par && j->par->suspended ? json_string("suspend")
				       : json_null());
	json_object_set_new(o, "placement", pl);
	srv_elements_json(s, j, o);
	json_object_set_new(o, "nodelist", json_string(nodelist));
	slurm_fields(s, j, o, nnodes);
	if (detail) {
		json_t *env = json_object(), *ts = json_array(), *evs = json_array();
		size_t i;
		json_t *e;

		for (int32_t g = 0; g < jb->ngroups && j->spec.run; g++)
			for (int32_t k = 0; k < j->spec.run[g].nenv; k++) {
				char b[600];
				const char *v = drv_env_shown(&j->spec.run[g].env[k], b, sizeof(b));

				if (v)   /* a Secret's: "<secret>", never its value */
					json_object_set_new(env, j->spec.run[g].env[k].name,
							    json_string(v));
			}
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
			if (t->container)
				json_object_set(json_array_get(ts, json_array_size(ts) - 1),
						"container", t->container);
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

/*
 * The list form's text, kept. Listing a page of jobs is mostly building
 * and dumping jansson objects (at 1,000 clients asking for the default
 * page of 100 at once, 2 ms of CPU a page, nearly all of it that), and a
 * queue of pending jobs shows the same text page after page. So a pending
 * job that has never been placed keeps the text it was last shown with,
 * with what it was made of: its version (srv_job_mark bumps it at every
 * change that is stored), the fields that change without a store write
 * or that the text reads besides the spec, and the two texts that come
 * from elsewhere (the scheduler's reason, the partition the Slurm faces
 * show). Nothing in such a job's list form reads the clock other than
 * through the reason: no task has run, so its cost is its earlier
 * attempts' and it has no efficiency. A parent (its counts are its
 * elements') and a job with tasks are built every time, and drop their
 * memo.
 */
struct memo_key {
	uint64_t ver;
	int64_t begin_time, start_time, end_time, cost_prev_micro, time_limit;
	int32_t attempt, priority, exit_code, ntasks;
	uint32_t state;
	uint8_t hold;
	bool budget_held, holding, has_exit, gated;
	const char *code;   /* the reason code: a static string */
};

struct srv_api_memo {
	struct memo_key k;
	char *reason, *part;   /* the texts it was made with */
	char *text;
	size_t len;
};

void srv_api_memo_free(struct srv_api_memo *m)
{
	if (!m)
		return;
	drv_free(m->reason);
	drv_free(m->part);
	free(m->text);
	drv_free(m);
}

static void memo_key_of(struct drv_server *s, struct srv_job *j, struct memo_key *k)
{
	memset(k, 0, sizeof(*k));   /* the padding too: keys compare with memcmp */
	k->ver = j->ver;
	k->begin_time = j->begin_time;
	k->start_time = j->start_time;
	k->end_time = j->end_time;
	k->cost_prev_micro = j->cost_prev_micro;
	k->time_limit = j->spec.job.time_limit;
	k->attempt = j->attempt;
	k->priority = j->spec.job.priority;
	k->exit_code = j->exit_code;
	k->ntasks = j->ntasks;
	k->state = (uint32_t)j->state;
	k->hold = j->hold;
	k->budget_held = j->budget_held;
	k->holding = j->holding;
	k->has_exit = j->has_exit;
	k->gated = j->gated;
	k->code = srv_job_reason_code(s, j);
}

static bool memo_holds(struct drv_server *s, struct srv_job *j, const struct memo_key *k)
{
	const struct srv_api_memo *m = j->memo;
	char why[512];

	return m && memcmp(&m->k, k, sizeof(*k)) == 0 &&
	       strcmp(m->reason, srv_job_reason(s, j, why, sizeof(why))) == 0 &&
	       strcmp(m->part, job_partition(s, j)) == 0;
}

static char *dump_api(json_t *o, size_t *len)
{
	char *t = json_dumps(o, DRV_HTTP_JSON_FLAGS);

	if (!t)
		t = strdup("{}");
	*len = strlen(t);
	return t;
}

void srv_job_api_text(struct drv_server *s, struct srv_job *j, struct drv_dynbuf *b)
{
	struct memo_key k;
	struct srv_api_memo *m;
	json_t *o;

	if (j->state != J_PENDING || j->ntasks || j->par) {
		size_t len;
		char *t;

		srv_api_memo_free(j->memo);
		j->memo = NULL;
		o = srv_job_api_json(s, j, false);
		t = dump_api(o, &len);
		json_decref(o);
		drv_dynbuf_add(b, t, len);
		free(t);
		return;
	}
	memo_key_of(s, j, &k);
	if (!memo_holds(s, j, &k)) {
		srv_api_memo_free(j->memo);
		m = j->memo = drv_calloc(1, sizeof(*m));
		o = srv_job_api_json(s, j, false);
		m->k = k;
		/* the texts as the object has them, not as asked again */
		m->reason = drv_strdup(drv_json_str(o, "reason") ? drv_json_str(o, "reason") : "");
		m->part = drv_strdup(drv_json_str(o, "partition") ? drv_json_str(o, "partition") : "");
		m->text = dump_api(o, &m->len);
		json_decref(o);
	}
	drv_dynbuf_add(b, j->memo->text, j->memo->len);
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
	struct srv_gpu_count c = { 0 };
	int32_t v;
	int32_t chain[DRV_MAX_LEVELS + 1], nchain = 0;

	for (v = cn->vertex; v >= 0 && nchain <= DRV_MAX_LEVELS; v = s->cluster.vertices[v].parent)
		chain[nchain++] = v;
	while (nchain > 0)
		json_array_append_new(path, json_string(s->cluster.vertices[chain[--nchain]].name));
	srv_node_gpus(s, i, &c);
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
	o = json_pack("{s:s,s:s,s:s,s:s?,s:o,s:o,s:i,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:b,s:o,s:o}",
		      "name", n->name, "state", srv_nstate_name(n->state), "reason",
		      n->reason ? n->reason : "", "pool",
		      cn->pool >= 0 && cn->pool < s->cluster.npools ? s->cluster.pools[cn->pool].name
								     : NULL,
		      "path", path, "model", m ? json_string(m->id) : json_null(), "gpus",
		      cn->ngpus, "gpus_allocated", (json_int_t)c.allocated, "gpus_free",
		      (json_int_t)c.free, "gpus_unavailable", (json_int_t)c.unavailable,
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
	/* which agents a rolling upgrade has reached (docs/ha.md) */
	json_object_set_new(o, "agent_protocol", json_is_integer(json_object_get(n->inventory,
								 "protocol"))
			    ? json_incref(json_object_get(n->inventory, "protocol")) : json_null());
	return o;
}
