/*
 * restore.c: the controller after a restart: nodes, then the unfinished
 * jobs, loaded from the store (their store documents, state_json.c),
 * pending jobs back in the queue, jobs holding GPUs re-added running on
 * their placement, and every known node given a fresh heartbeat timeout to
 * come back. Finished jobs stay in the store (only their counts by state
 * are read), so a restart's time follows the unfinished jobs; reads of
 * finished ones build a job from its row the same way (srv_job_from_row).
 */
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

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
	srv_node_fresh_version(s, i);   /* its agent may hold the last life's */
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

/* One stored task into k; a task whose node left the cluster is lost.
 * false: not restoring, and its node is not known (k is left unset). */
static bool load_task(struct drv_server *s, struct srv_task *k, const json_t *t, bool restoring)
{
	const char *nn = drv_json_str(t, "node");

	k->node = nn ? srv_node_find(s, nn) : -1;
	if (k->node < 0 && !restoring)
		return false;
	if (k->node < 0) {
		/* its node left the cluster file: keep the name, as a node
		 * without GPUs that is down */
		k->node = srv_node_add(s, nn ? nn : "unknown", -1, 0, 0, 0, NULL);
		if (k->node >= 0)
			srv_node_set_state(s, k->node, DRV_NODE_DOWN, "not in the cluster any more");
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
	if (json_is_object(json_object_get(t, "usage")))
		k->usage = json_incref(json_object_get(t, "usage"));
	if (json_is_object(json_object_get(t, "container")))
		k->container = json_incref(json_object_get(t, "container"));
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
	return true;
}

/* The job's own fields from its stored document and row. */
static void load_job_fields(struct srv_job *j, const json_t *doc, const struct drv_store_job *row)
{
	int st;

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
	{
		json_t *sg = json_object_get(doc, "signal");

		j->sig_seq = drv_json_int(sg, "seq", 0);
		j->sig_num = (int32_t)drv_json_int(sg, "num", 0);
		j->sig_to = (uint8_t)drv_json_int(sg, "to", 0);
		j->sig_timer_epoch = drv_json_int(sg, "timer_epoch", 0);
	}
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
	j->cost_prev_micro = drv_json_int(doc, "cost_prev_micro", 0);
	j->cost_prev_time = drv_json_int(doc, "cost_prev_time", 0);
	j->budget_held = drv_json_bool(doc, "budget_held", 0);
	j->parent = (uint64_t)drv_json_int(doc, "parent", 0);
	j->index = (int32_t)drv_json_int(doc, "index", 0);
	j->gated = drv_json_bool(doc, "gated", 0);
	j->hold = (uint8_t)drv_json_int(doc, "hold", 0);
	j->begin_time = drv_json_int(doc, "begin_time", 0);
	{
		const json_t *el = json_object_get(doc, "elements");

		if (json_is_object(el)) {
			j->par = drv_calloc(1, sizeof(*j->par));
			j->par->first = (uint64_t)drv_json_int(el, "first", 0);
			j->par->n = (int32_t)drv_json_int(el, "n", 0);
			j->par->parallelism = (int32_t)drv_json_int(el, "parallelism", 1);
			j->par->backoff_limit = (int32_t)drv_json_int(el, "backoff_limit", 6);
			j->par->succeeded = (int32_t)drv_json_int(el, "succeeded", 0);
			j->par->failed = (int32_t)drv_json_int(el, "failed", 0);
			j->par->deadline_s = drv_json_int(el, "deadline_s", 0);
			j->par->indexed = drv_json_bool(el, "indexed", 0);
			j->par->suspended = drv_json_bool(el, "suspended", 0);
			j->par->array = drv_json_bool(el, "array", 0);
			j->par->active_since = drv_json_int(el, "active_since", j->submit_time);
		}
	}
	j->events = json_incref(json_object_get(doc, "events"));
	if (!json_is_array(j->events)) {
		json_decref(j->events);
		j->events = json_array();
	}
}

/* The steps srv_job_store_doc wrote (state_json.c) into j. */
static void load_steps(struct drv_server *s, struct srv_job *j, const json_t *a, bool restoring)
{
	const json_t *x, *v;
	size_t i, k;

	json_array_foreach(a, i, x) {
		struct srv_step *st = drv_calloc(1, sizeof(*st));
		const json_t *tasks = json_object_get(x, "tasks"), *env = json_object_get(x, "env");
		const json_t *argv = json_object_get(x, "argv");

		st->id = (int32_t)drv_json_int(x, "id", 0);
		st->nnodes = (int32_t)drv_json_int(x, "nnodes", 0);
		st->tasks = drv_calloc(json_array_size(tasks) + 1, sizeof(*st->tasks));
		st->local = drv_calloc(json_array_size(tasks) + 1, sizeof(*st->local));
		st->nodeid = drv_calloc(json_array_size(tasks) + 1, sizeof(*st->nodeid));
		json_array_foreach(tasks, k, v) {
			if (!load_task(s, &st->tasks[st->ntasks], v, restoring))
				continue;
			st->local[st->ntasks] = (int32_t)json_integer_value(
				json_array_get(json_object_get(x, "local"), k));
			st->nodeid[st->ntasks] = (int32_t)json_integer_value(
				json_array_get(json_object_get(x, "node_id"), k));
			st->ntasks++;
		}
		st->argv = drv_calloc(json_array_size(argv) + 1, sizeof(*st->argv));
		json_array_foreach(argv, k, v)
			st->argv[st->nargv++] = drv_strdup(json_string_value(v) ? json_string_value(v)
										 : "");
		st->env = drv_calloc(json_array_size(env) + 1, sizeof(*st->env));
		json_array_foreach(env, k, v) {
			const char *n = json_string_value(json_array_get(v, 0));
			const char *val = json_string_value(json_array_get(v, 1));

			if (n && val)
				st->env[st->nenv++] = (struct drv_env){ drv_strdup(n), drv_strdup(val), NULL };
		}
		st->cwd = drv_json_str(x, "cwd") ? drv_strdup(drv_json_str(x, "cwd")) : NULL;
		if (drv_json_str(x, "container_image")) {
			const json_t *ms = json_object_get(x, "container_mounts"), *m;
			size_t q;

			st->container_image = drv_strdup(drv_json_str(x, "container_image"));
			if (drv_json_str(x, "container_workdir"))
				st->container_workdir = drv_strdup(drv_json_str(x, "container_workdir"));
			json_array_foreach(ms, q, m) {
				const char *src = json_string_value(json_array_get(m, 0));
				const char *dst = json_string_value(json_array_get(m, 1));

				if (!src || !dst)
					continue;
				DRV_GROW(st->mounts, (size_t)st->nmounts + 1, st->mountcap);
				st->mounts[st->nmounts++] = (struct srv_step_mount){
					drv_strdup(src), drv_strdup(dst),
					json_is_true(json_array_get(m, 2)) };
			}
		}
		st->cpus_per_task = (int32_t)drv_json_int(x, "cpus_per_task", 0);
		st->kill_on_bad_exit = drv_json_bool(x, "kill_on_bad_exit", 0);
		st->stop_reason = drv_json_str(x, "stop_reason")
					  ? drv_strdup(drv_json_str(x, "stop_reason")) : NULL;
		st->done = drv_json_bool(x, "done", 0);
		st->start_time = drv_json_int(x, "start_time", 0);
		st->end_time = drv_json_int(x, "end_time", 0);
		DRV_GROW(j->steps, (size_t)j->nsteps + 1, j->stepcap);
		j->steps[j->nsteps++] = st;
	}
}

struct srv_job *srv_job_from_row(struct drv_server *s, const struct drv_store_job *row,
				 bool restoring)
{
	json_t *doc = json_loads(row->doc, 0, NULL), *tasks, *t;
	struct srv_job *j;
	struct drv_diags d;
	size_t i;

	if (!doc) {
		drv_log(&s->log, "job %llu: its stored record is not JSON; skipped",
			(unsigned long long)row->id);
		return NULL;
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
		return NULL;
	}
	drv_diags_release(&d);
	load_job_fields(j, doc, row);
	tasks = json_object_get(doc, "tasks");
	if (json_array_size(tasks)) {
		j->tasks = drv_calloc(json_array_size(tasks), sizeof(*j->tasks));
		json_array_foreach(tasks, i, t)
			if (load_task(s, &j->tasks[j->ntasks], t, restoring))
				j->ntasks++;
	}
	load_steps(s, j, json_object_get(doc, "steps"), restoring);
	json_decref(doc);
	return j;
}

static int load_job(const struct drv_store_job *row, void *cls)
{
	struct drv_server *s = cls;
	struct srv_job *j = srv_job_from_row(s, row, true);

	if (!j)
		return 0;
	if (j->id > s->njobs) {
		DRV_GROW(s->jobs, j->id, s->jcap);
		for (uint64_t k = s->njobs; k < j->id; k++)
			s->jobs[k] = NULL;
		s->njobs = j->id;
	}
	s->jobs[j->id - 1] = j;
	return 0;
}

static int add_count(const char *state, int64_t n, void *cls)
{
	int64_t *c = cls;
	int st = srv_jstate_parse(state);

	if (st >= 0)
		c[st] += n;
	return 0;
}

int srv_store_count_done(struct drv_store *st, int64_t *counts)
{
	memset(counts, 0, J_NSTATES * sizeof(*counts));
	return st->ops->count_done(st, add_count, counts);
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
		if (j->par) {          /* a parent is never scheduled */
			srv_elements_restored(s, j);
			continue;
		}
		if (j->state == J_PENDING)
			srv_deps_gate(s, j);   /* found waiting again; the loop judges it */
		if (j->gated && j->state == J_PENDING)
			continue;      /* waits for its turn under the parent's parallelism */
		if (j->dep_wait || (j->hold && j->state == J_PENDING))
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
		} else if (j->budget_held && j->state == J_PENDING) {
			/* still held; the loop lifts it if the tenant may spend */
			DRV_GROW(s->held, s->nheld + 1, s->heldcap);
			s->held[s->nheld++] = j->id;
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
	int64_t maxseq = 0, v, t0 = drv_mono_ms(), nlive = 0, ndone = 0;
	int rc;

	/* Secrets and ConfigMaps first: a restored pending job that uses a
	 * missing one is held (srv_job_queue) */
	rc = s->store->ops->load_kobjs(s->store, srv_kobj_restore, s);
	if (rc == 0)
		rc = s->store->ops->load_nodes(s->store, load_node, s);
	if (rc == 0)
		rc = s->store->ops->load_live_jobs(s->store, load_job, s);
	if (rc == 0)
		rc = srv_store_count_done(s->store, s->done_counts);
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
	/* load_node set the states of nodes the cluster file names without
	 * telling the scheduler (it existed already): it would keep them down */
	drv_sched_cluster_changed(s->sched, drv_wall_s());
	restore_sched(s);
	for (uint64_t id = 1; id <= s->njobs; id++)
		nlive += s->jobs[id - 1] != NULL;
	for (int k = 0; k < J_NSTATES; k++)
		ndone += s->done_counts[k];
	drv_log(&s->log, "state loaded in %lld ms: %lld unfinished jobs in memory, %lld finished "
		"jobs left in the store", (long long)(drv_mono_ms() - t0), (long long)nlive,
		(long long)ndone);
	return 0;
}
