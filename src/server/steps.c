/*
 * steps.c: job steps (CONTRACTS.md section 7): `srun` inside a running
 * job asks for a step with the job's own credential (DROVER_JOB_TOKEN),
 * POST /v1/jobs/ID/steps; the controller lays its tasks out over the
 * job's allocation (Slurm's block distribution over the job's nodes in
 * Slurm's order, GPUs from what the job holds on each node), adds them to
 * the task sets of the nodes concerned (agent_api.c builds their
 * assignments, slurm_env.c their SLURM_* variables) and follows their
 * reports. GET /v1/jobs/ID/steps/S says how each task stands; POST
 * .../cancel stops them. srun relays their output through
 * GET /v1/jobs/ID/logs?step=S&task=R.
 *
 * Steps share the allocation: two steps at once may use the same GPUs
 * (Slurm's --overlap); a step never holds resources of its own, so it never
 * waits. They are kept with the job's record (state_json.c, restore.c), so
 * a restarted controller carries on with them and a finished job's steps
 * can still be read.
 */
#include "server_int.h"

#include "drover/hostlist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- task ids and reports ------------------------------------------------- */

bool srv_step_task_ref(const char *tid, uint64_t *job, int32_t *step, int32_t *rank)
{
	char *end;
	unsigned long long j;
	long st, r;

	if (!tid)
		return false;
	j = strtoull(tid, &end, 10);
	if (end == tid || end[0] != '.' || end[1] != 's')
		return false;
	st = strtol(end + 2, &end, 10);
	if (*end != '.' || st < 0 || st > INT32_MAX)
		return false;
	r = strtol(end + 1, &end, 10);
	if (*end || r < 0 || r > INT32_MAX)
		return false;
	*job = j;
	*step = (int32_t)st;
	*rank = (int32_t)r;
	return true;
}

static struct srv_step *step_of(struct srv_job *j, int32_t id)
{
	for (int32_t k = 0; j && k < j->nsteps; k++)
		if (j->steps[k]->id == id)
			return j->steps[k];
	return NULL;
}

/* The step task tid names, when it is (epoch, node i)'s; else NULL. */
static struct srv_task *step_task(struct drv_server *s, int32_t i, const char *tid,
				  int64_t epoch, struct srv_job **jp, struct srv_step **stp)
{
	uint64_t jid;
	int32_t sid, rank;
	struct srv_job *j;
	struct srv_step *st;

	if (!srv_step_task_ref(tid, &jid, &sid, &rank))
		return NULL;
	j = srv_job_get(s, jid);
	st = j && j->epoch == epoch ? step_of(j, sid) : NULL;
	if (!st || rank >= st->ntasks || st->tasks[rank].node != i)
		return NULL;
	*jp = j;
	*stp = st;
	return &st->tasks[rank];
}

bool srv_step_wanted(struct drv_server *s, int32_t i, const char *tid, int64_t epoch)
{
	struct srv_job *j;
	struct srv_step *st;
	struct srv_task *t = step_task(s, i, tid, epoch, &j, &st);

	return t && !t->ended;
}

/* Task t of st ended: the step may be done; --kill-on-bad-exit stops the rest. */
static void step_task_ended(struct drv_server *s, struct srv_job *j, struct srv_step *st,
			    struct srv_task *t)
{
	t->ended = true;
	if (!t->end_time)
		t->end_time = drv_wall_s();
	if (t->state == T_FAILED && st->kill_on_bad_exit && !st->stop_reason) {
		char why[160];

		snprintf(why, sizeof(why), "task %d of step %llu.%d failed (--kill-on-bad-exit)",
			 (int)(t - st->tasks), (unsigned long long)j->id, st->id);
		srv_set_str(&st->stop_reason, why);
		for (int32_t r = 0; r < st->ntasks; r++)
			if (!st->tasks[r].ended)
				srv_node_bump(s, st->tasks[r].node);
	}
	st->done = true;
	for (int32_t r = 0; r < st->ntasks; r++)
		st->done &= st->tasks[r].ended;
	if (st->done)
		st->end_time = drv_wall_s();
	srv_job_mark(s, j);
	pthread_cond_broadcast(&s->cv);
	srv_job_released(s, j);   /* the job may have waited for its steps */
}

int srv_step_report(struct drv_server *s, int32_t i, const struct drv_proto_report *rep)
{
	struct srv_job *j;
	struct srv_step *st;
	struct srv_task *t = step_task(s, i, rep->task_id, rep->epoch, &j, &st);

	if (!t)
		return -1;
	if (t->ended)
		return rep->state != DRV_PROTO_RUNNING ? 0 : -1;
	switch (rep->state) {
	case DRV_PROTO_RUNNING:
		if (t->state == T_PENDING) {
			t->state = T_RUNNING;
			t->start_time = drv_wall_s();
			srv_job_mark(s, j);
		}
		break;
	case DRV_PROTO_EXITED:
		t->exit_code = (int)rep->exit_code;
		t->signal = (int)rep->signal;
		t->oom = rep->oom_killed;
		if (!t->start_time)
			t->start_time = drv_wall_s();
		t->state = st->stop_reason || j->stop_reason ? T_CANCELLED
			   : t->exit_code == 0 && t->signal == 0 && !t->oom ? T_SUCCEEDED : T_FAILED;
		if (t->oom)
			srv_set_str(&t->reason, "OOM-killed");
		step_task_ended(s, j, st, t);
		break;
	case DRV_PROTO_FAILED:
		t->state = st->stop_reason || j->stop_reason ? T_CANCELLED : T_FAILED;
		srv_set_str(&t->reason, rep->reason ? rep->reason : "could not start");
		step_task_ended(s, j, st, t);
		break;
	}
	return 0;
}

/* --- the step's JSON ------------------------------------------------------ */

static const char *step_state(const struct srv_step *st)
{
	bool lost = false, failed = false, cancelled = false;

	if (!st->done)
		return "running";
	for (int32_t r = 0; r < st->ntasks; r++) {
		lost |= st->tasks[r].state == T_LOST;
		failed |= st->tasks[r].state == T_FAILED;
		cancelled |= st->tasks[r].state == T_CANCELLED;
	}
	return lost ? "node_fail" : failed ? "failed" : cancelled ? "cancelled" : "succeeded";
}

static json_t *gpu_list(uint64_t mask)
{
	json_t *a = json_array();

	for (int g = 0; g < 64; g++)
		if (mask & (1ull << g))
			json_array_append_new(a, json_integer(g));
	return a;
}

static json_t *step_json(struct drv_server *s, const struct srv_job *j, const struct srv_step *st)
{
	json_t *tasks = json_array();

	for (int32_t r = 0; r < st->ntasks; r++) {
		const struct srv_task *t = &st->tasks[r];
		json_t *o = json_pack("{s:i,s:s,s:i,s:i,s:o,s:s}", "rank", r, "node",
				      s->nodes[t->node].name, "local_id", st->local[r], "node_id",
				      st->nodeid[r], "gpus", gpu_list(t->gpu_mask), "state",
				      srv_tstate_name(t->state));

		json_object_set_new(o, "exit_code", t->ended && t->exit_code >= 0
							 ? json_integer(t->exit_code) : json_null());
		json_object_set_new(o, "signal", json_integer(t->signal));
		json_object_set_new(o, "reason", json_string(t->reason ? t->reason : ""));
		json_array_append_new(tasks, o);
	}
	return json_pack("{s:I,s:i,s:s,s:i,s:i,s:o,s:o,s:o,s:s,s:s*}", "job", (json_int_t)j->id,
			 "step", st->id, "state", step_state(st), "ntasks", st->ntasks, "nnodes",
			 st->nnodes, "start_time", srv_json_time(st->start_time), "end_time",
			 srv_json_time(st->end_time), "tasks", tasks, "stop_reason",
			 st->stop_reason ? st->stop_reason : "", "container_image",
			 st->container_image);
}

/* A step in a job's own JSON (what sacct's ID.N lines read): its name
 * (its command's), state, the worst task's exit code and signal, as
 * Slurm's step ExitCode is, and its times. */
static json_t *step_summary(const struct srv_step *st)
{
	const char *name = st->nargv > 0 && st->argv[0] ? st->argv[0] : "", *sl;
	int code = 0, sig = 0;
	bool any = false;

	if ((sl = strrchr(name, '/')))
		name = sl + 1;
	for (int32_t r = 0; r < st->ntasks; r++) {
		const struct srv_task *t = &st->tasks[r];

		if (!t->ended)
			continue;
		any |= t->exit_code >= 0 || t->signal;
		if (t->exit_code > code)
			code = t->exit_code;
		if (t->signal && !sig)
			sig = t->signal;
	}
	return json_pack("{s:i,s:s,s:s,s:o,s:i,s:i,s:i,s:o,s:o,s:s}", "step", st->id, "name", name,
			 "state", step_state(st), "exit_code",
			 st->done && any ? json_integer(code) : json_null(), "signal", sig, "ntasks",
			 st->ntasks, "nnodes", st->nnodes, "start_time",
			 srv_json_time(st->start_time), "end_time", srv_json_time(st->end_time),
			 "reason", st->stop_reason ? st->stop_reason : "");
}

json_t *srv_steps_summary(const struct srv_job *j)
{
	json_t *a = json_array();

	for (int32_t k = 0; k < j->nsteps; k++)
		json_array_append_new(a, step_summary(j->steps[k]));
	return a;
}

/* --- the layout ----------------------------------------------------------- */

/* What POST /v1/jobs/ID/steps asks (0 / -1 / NULL: not given). */
struct step_req {
	int64_t ntasks, nodes, tpn, cpt, gpt, gpn, het_group;
	const char *gpu_bind;
	const char *nodelist;     /* srun -w: the step's nodes among the job's */
	bool kill_on_bad_exit;
	bool pty;
	int64_t pty_rows, pty_cols;
};

struct layout {
	int32_t nodes[SRV_MAX_JOB_NODES];   /* the allocation's nodes (of the het group) */
	uint64_t mask[SRV_MAX_JOB_NODES];   /* GPUs the job holds on each */
	int count[SRV_MAX_JOB_NODES];       /* the step's tasks on each */
	size_t nn;
	int32_t nstep;                      /* nodes the step uses: the first ones */
	int64_t ntasks;
};

static int bad(struct drv_http_resp *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A 400 with the message; returns -1. */
static int bad(struct drv_http_resp *o, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	drv_http_resp_error(o, 400, "invalid", NULL, "%s", msg);
	return -1;
}

/* The job's nodes the step may use: those of het group g, with their GPUs. */
static int alloc_nodes(struct drv_server *s, const struct srv_job *j, int64_t g,
		       struct layout *L, struct drv_http_resp *o)
{
	int32_t all[SRV_MAX_JOB_NODES];
	size_t n = srv_job_nodes(s, j, all, SRV_MAX_JOB_NODES);

	if (g < 0)
		g = 0;
	if (g >= j->spec.job.ngroups)
		return bad(o, "het_group: found %lld, expected 0 to %d (the job's components)",
			   (long long)g, j->spec.job.ngroups - 1);
	L->nn = 0;
	for (size_t x = 0; x < n; x++) {
		uint64_t m = 0;
		bool here = false;

		for (int32_t k = 0; k < j->ntasks; k++)
			if (j->tasks[k].node == all[x] && j->tasks[k].group == g)
				m |= j->tasks[k].gpu_mask, here = true;
		if (!here)
			continue;
		L->nodes[L->nn] = all[x];
		L->mask[L->nn++] = m;
	}
	return 0;
}

/* srun -w: only the nodes of L the list names, in the job's order. */
static int keep_listed(struct drv_server *s, const struct srv_job *j, const char *list,
		       struct layout *L, struct drv_http_resp *o)
{
	char **names = NULL;
	size_t nn = 0, k = 0;
	int rc = 0;

	if (drv_hostlist_expand(list, &names, &nn, SRV_MAX_JOB_NODES) < 0 || !nn) {
		drv_hostlist_free(names, nn);
		return bad(o, "nodelist: found \"%s\", expected a host list (node-[1-4],x)", list);
	}
	for (size_t i = 0; i < nn && !rc; i++) {
		bool in = false;

		for (size_t x = 0; x < L->nn; x++)
			in |= !strcmp(s->nodes[L->nodes[x]].name, names[i]);
		if (!in)
			rc = bad(o, "nodelist: node %s is not one of job %llu's nodes", names[i],
				 (unsigned long long)j->id);
	}
	for (size_t x = 0; x < L->nn && !rc; x++) {
		bool in = false;

		for (size_t i = 0; i < nn; i++)
			in |= !strcmp(s->nodes[L->nodes[x]].name, names[i]);
		if (in) {
			L->nodes[k] = L->nodes[x];
			L->mask[k++] = L->mask[x];
		}
	}
	if (!rc)
		L->nn = k;
	drv_hostlist_free(names, nn);
	return rc;
}

/* srun's defaults inside an allocation, then the task count of each node. */
static int lay_out(struct drv_server *s, const struct srv_job *j, const struct step_req *q,
		   struct layout *L, struct drv_http_resp *o)
{
	int slots[SRV_MAX_JOB_NODES];
	int64_t n = q->ntasks, N = q->nodes;

	if (alloc_nodes(s, j, q->het_group, L, o) < 0 ||
	    (q->nodelist && keep_listed(s, j, q->nodelist, L, o) < 0))
		return -1;
	if (N > (int64_t)L->nn)
		return bad(o, "nodes: found %lld, expected at most %zu (the job's nodes)", (long long)N,
			   L->nn);
	if (N <= 0)
		N = n > 0 && n < (int64_t)L->nn ? n : (int64_t)L->nn;
	if (n <= 0 && q->tpn > 0) {
		n = q->tpn * N;
	} else if (n <= 0 && N == (int64_t)L->nn) {
		int32_t nt;

		srv_job_slots(j, L->nodes, L->nn, slots);
		nt = srv_job_slurm_ntasks(j, slots, L->nn);
		n = nt > 0 ? nt : j->spec.slurm.per_node ? (int64_t)L->nn : 0;
		for (size_t x = 0; n == 0 && x < L->nn; x++)
			n += slots[x] > 0 ? slots[x] : 1;
	} else if (n <= 0) {
		n = N;
	}
	if (n < N)
		return bad(o, "ntasks: found %lld, expected at least the %lld nodes", (long long)n,
			   (long long)N);
	if (n > 100000)
		return bad(o, "ntasks: found %lld, expected at most 100000", (long long)n);
	for (int64_t x = 0; x < N; x++) {
		L->count[x] = (int)(n / N + (x < n % N));
		if (q->tpn > 0 && L->count[x] > q->tpn)
			return bad(o, "ntasks: found %lld tasks over %lld nodes, more than "
				   "ntasks_per_node (%lld) allows", (long long)n, (long long)N,
				   (long long)q->tpn);
	}
	L->nstep = (int32_t)N;
	L->ntasks = n;
	return 0;
}

/* The GPUs (node indexes) of mask, in order, into g; returns how many. */
static int gpus_of(uint64_t mask, int *g)
{
	int n = 0;

	for (int k = 0; k < 64; k++)
		if (mask & (1ull << k))
			g[n++] = k;
	return n;
}

/* Task l (of cnt on the node) of the step: its GPUs among g[0..ng). */
static int task_gpus(const struct step_req *q, const int *g, int ng, int l, int cnt,
		     uint64_t *out, struct drv_http_resp *o, const char *node)
{
	const char *b = q->gpu_bind;
	uint64_t m = 0;

	if (q->gpt >= 0) {
		if ((int64_t)cnt * q->gpt > ng)
			return bad(o, "gpus_per_task: node %s: found %lld GPUs asked for, the job "
				   "holds %d there", node, (long long)cnt * q->gpt, ng);
		for (int64_t k = l * q->gpt; k < (l + 1) * q->gpt; k++)
			m |= 1ull << g[k];
	} else if (!b || !strcmp(b, "none") || !ng) {
		for (int k = 0; k < ng; k++)
			m |= 1ull << g[k];
	} else if (!strcmp(b, "closest")) {
		/* an equal share of the node's GPUs each (one each when fewer) */
		int lo = l * ng / cnt, hi = (l + 1) * ng / cnt;

		if (hi <= lo)
			hi = lo + 1;
		for (int k = lo; k < hi && k < ng; k++)
			m |= 1ull << g[k];
	} else if (!strncmp(b, "single:", 7)) {
		char *end;
		long per = strtol(b + 7, &end, 10);

		if (end == b + 7 || *end || per < 1)
			return bad(o, "gpu_bind: found \"%s\", expected single:N with N >= 1", b);
		m = 1ull << g[(l / per) % ng];
	} else if (!strncmp(b, "map_gpu:", 8)) {
		const char *p = b + 8;
		long ids[64];
		int nids = 0;

		while (*p && nids < 64) {
			char *end;
			long v = strtol(p, &end, 10);

			if (end == p || v < 0 || (*end && *end != ','))
				return bad(o, "gpu_bind: found \"%s\", expected map_gpu:ID[,ID...]", b);
			ids[nids++] = v;
			p = *end ? end + 1 : end;
		}
		if (!nids)
			return bad(o, "gpu_bind: found \"%s\", expected map_gpu:ID[,ID...]", b);
		if (ids[l % nids] >= ng)
			return bad(o, "gpu_bind: map_gpu: node %s: found GPU %ld, the job holds %d "
				   "there (IDs count the job's GPUs on the node from 0)", node,
				   ids[l % nids], ng);
		m = 1ull << g[ids[l % nids]];
	} else {
		return bad(o, "gpu_bind: found \"%s\", expected none, closest, single:N or "
			   "map_gpu:ID[,ID...]", b);
	}
	*out = m;
	return 0;
}

/* The step's tasks from the layout: block order, GPUs per task. */
static int step_tasks(struct drv_server *s, const struct srv_job *j, const struct step_req *q,
		      const struct layout *L, struct srv_step *st, struct drv_http_resp *o)
{
	int32_t r = 0;

	st->ntasks = (int32_t)L->ntasks;
	st->nnodes = L->nstep;
	st->tasks = drv_calloc((size_t)st->ntasks, sizeof(*st->tasks));
	st->local = drv_calloc((size_t)st->ntasks, sizeof(*st->local));
	st->nodeid = drv_calloc((size_t)st->ntasks, sizeof(*st->nodeid));
	for (int32_t x = 0; x < L->nstep; x++) {
		int g[64], ng, n = L->count[x];
		uint64_t avail = L->mask[x];

		if (q->gpn >= 0) {
			uint64_t keep = 0;

			ng = gpus_of(avail, g);
			if (q->gpn > ng)
				return bad(o, "gpus_per_node: node %s: found %lld, the job holds %d there",
					   s->nodes[L->nodes[x]].name, (long long)q->gpn, ng);
			for (int k = 0; k < q->gpn; k++)
				keep |= 1ull << g[k];
			avail = keep;
		}
		ng = gpus_of(avail, g);
		for (int l = 0; l < n; l++, r++) {
			struct srv_task *t = &st->tasks[r];

			if (task_gpus(q, g, ng, l, n, &t->gpu_mask, o, s->nodes[L->nodes[x]].name) < 0)
				return -1;
			t->node = L->nodes[x];
			t->group = (int16_t)(q->het_group > 0 ? q->het_group : 0);
			t->gpu_milli = t->gpu_mask ? 1000 : 0;
			t->cpu_milli = q->cpt > 0 ? q->cpt * 1000 : 0;
			t->state = T_PENDING;
			t->exit_code = -1;
			st->local[r] = l;
			st->nodeid[r] = srv_job_node_index(s, j, t->node);
		}
	}
	return 0;
}

/* --- reading the request -------------------------------------------------- */

static int get_count(const json_t *b, const char *k, int64_t def, int64_t min, int64_t *out,
		     struct drv_http_resp *o)
{
	const json_t *v = json_object_get(b, k);

	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > 1000000)
		return bad(o, "%s: expected an integer from %lld to 1000000", k, (long long)min);
	*out = json_integer_value(v);
	return 0;
}

static int read_req(const json_t *b, struct step_req *q, struct drv_http_resp *o)
{
	const json_t *v;

	memset(q, 0, sizeof(*q));
	if (get_count(b, "ntasks", 0, 1, &q->ntasks, o) < 0 ||
	    get_count(b, "nodes", 0, 1, &q->nodes, o) < 0 ||
	    get_count(b, "ntasks_per_node", 0, 1, &q->tpn, o) < 0 ||
	    get_count(b, "cpus_per_task", 0, 1, &q->cpt, o) < 0 ||
	    get_count(b, "gpus_per_task", -1, 0, &q->gpt, o) < 0 ||
	    get_count(b, "gpus_per_node", -1, 0, &q->gpn, o) < 0 ||
	    get_count(b, "het_group", -1, 0, &q->het_group, o) < 0)
		return -1;
	v = json_object_get(b, "gpu_bind");
	if (v && !json_is_null(v) && !json_is_string(v))
		return bad(o, "gpu_bind: expected a string");
	q->gpu_bind = v ? json_string_value(v) : NULL;
	v = json_object_get(b, "kill_on_bad_exit");
	if (v && !json_is_boolean(v))
		return bad(o, "kill_on_bad_exit: expected true or false");
	q->kill_on_bad_exit = v && json_is_true(v);
	v = json_object_get(b, "nodelist");
	if (v && !json_is_null(v) && (!json_is_string(v) || !*json_string_value(v)))
		return bad(o, "nodelist: expected a host list (a string)");
	q->nodelist = v && json_is_string(v) ? json_string_value(v) : NULL;
	v = json_object_get(b, "pty");
	if (v && !json_is_boolean(v))
		return bad(o, "pty: expected true or false");
	q->pty = v && json_is_true(v);
	if (get_count(b, "pty_rows", 0, 0, &q->pty_rows, o) < 0 ||
	    get_count(b, "pty_cols", 0, 0, &q->pty_cols, o) < 0)
		return -1;
	if (q->pty_rows > 65535 || q->pty_cols > 65535)
		return bad(o, "pty_rows, pty_cols: expected at most 65535");
	return 0;
}

/* Variables the agent sets for each task itself: srun's copies (the batch
 * step's values) are left out so that the step task gets its own. */
static bool agent_owned(const char *name)
{
	static const char *const own[] = { "RANK", "WORLD_SIZE", "LOCAL_RANK",
		"LOCAL_WORLD_SIZE", "NODE_RANK", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
		"DROVER_TASK_ID", "DROVER_JOB_TOKEN", "DROVER_EPOCH", "DROVER_NODE",
		"JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "TF_CONFIG",
		"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_STEP_ID", "SLURM_STEPID",
		"SLURMD_NODENAME", "SLURM_GPUS_ON_NODE", "SLURM_JOB_GPUS", "SLURM_CPUS_ON_NODE",
		NULL };

	for (int k = 0; own[k]; k++)
		if (!strcmp(name, own[k]))
			return true;
	return false;
}

static int read_run(const json_t *b, struct srv_step *st, struct drv_http_resp *o)
{
	const json_t *argv = json_object_get(b, "argv"), *env = json_object_get(b, "env"), *v;
	const char *k;
	size_t i;

	if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > 4096)
		return bad(o, "argv: expected a list of 1 to 4096 strings (the command)");
	st->argv = drv_calloc(json_array_size(argv), sizeof(*st->argv));
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v))
			return bad(o, "argv[%zu]: expected a string", i);
		st->argv[st->nargv++] = drv_strdup(json_string_value(v));
	}
	if (env && !json_is_object(env))
		return bad(o, "env: expected an object of strings");
	st->env = drv_calloc(json_object_size(env) + 1, sizeof(*st->env));
	json_object_foreach((json_t *)env, k, v) {
		if (!json_is_string(v))
			return bad(o, "env.%s: expected a string", k);
		if (agent_owned(k))
			continue;
		st->env[st->nenv++] = (struct drv_env){ drv_strdup(k),
							drv_strdup(json_string_value(v)), NULL };
	}
	v = json_object_get(b, "cwd");
	if (v && !json_is_null(v) && (!json_is_string(v) || json_string_value(v)[0] != '/'))
		return bad(o, "cwd: expected an absolute path");
	st->cwd = v && json_is_string(v) ? drv_strdup(json_string_value(v)) : NULL;
	return 0;
}

/* --- container steps (pyxis' srun options) --------------------------------- */

/*
 * pyxis names an image [USER@][REGISTRY#]IMAGE[:TAG]; podman wants
 * REGISTRY/IMAGE, and an image without a registry is Docker Hub's, as
 * enroot and docker read it (ubuntu:22.04 is docker.io/library/ubuntu:22.04).
 * The USER@ of a registry's credentials is dropped: the node's podman
 * holds them; so is enroot's docker:// in front. NULL and *why set when
 * it is no image name.
 */
char *srv_step_image_name(const char *in, const char **why)
{
	const char *hash, *at, *slash;
	char *out;

	*why = NULL;
	if (!strncmp(in, "docker://", 9))   /* enroot's URI form */
		in += 9;
	hash = strchr(in, '#');
	/* no control characters, spaces or quotes: the name goes into the
	 * agent's podman script (quoted, and in its comment line) */
	for (const char *p = in; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '\\' || *p == '\'' ||
		    *p == '"') {
			*why = "expected an image name (no spaces, quotes or control characters)";
			return NULL;
		}
	if (in[0] == '/' || in[0] == '.' || strstr(in, ".sqsh")) {
		*why = "expected an image of a registry ([REGISTRY#]IMAGE[:TAG]); squashfs files "
		       "are not supported";
		return NULL;
	}
	if (hash) {
		at = memchr(in, '@', (size_t)(hash - in));
		if (at)
			in = at + 1;
		if (in == hash || !hash[1] || strchr(hash + 1, '#')) {
			*why = "expected REGISTRY#IMAGE[:TAG]";
			return NULL;
		}
		out = drv_strdup(in);
		out[hash - in] = '/';
		return out;
	}
	if (!*in) {
		*why = "expected an image name";
		return NULL;
	}
	slash = strchr(in, '/');
	if (slash && (memchr(in, '.', (size_t)(slash - in)) || memchr(in, ':', (size_t)(slash - in)) ||
		      !strncmp(in, "localhost/", 10)))
		return drv_strdup(in);   /* a registry host first */
	{
		size_t n = strlen(in) + sizeof("docker.io/library/");

		out = drv_malloc(n);
		snprintf(out, n, "docker.io/%s%s", slash ? "" : "library/", in);
	}
	return out;
}

/* An absolute path without a ".." component or a control character. */
static bool clean_path(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f)
			return false;
	for (const char *c = p; (c = strstr(c, "..")) != NULL; c += 2)
		if (c[-1] == '/' && (c[2] == '/' || c[2] == '\0'))
			return false;
	return true;
}

/* --container-mounts SRC[:DST[:FLAGS]][,...]: FLAGS ro or rw (pyxis joins
 * flags with +). Each SRC under the server's host_path_allow. */
static int read_mounts(struct drv_server *s, const char *text, struct srv_step *st,
		       struct drv_http_resp *o)
{
	char *copy = drv_strdup(text), *save = NULL, *item;
	int rc = 0;

	for (item = strtok_r(copy, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save)) {
		char *dst = strchr(item, ':'), *flags = NULL;
		bool ro = false, ok = false;

		if (dst) {
			*dst++ = '\0';
			flags = strchr(dst, ':');
			if (flags)
				*flags++ = '\0';
		}
		if (!dst || !*dst)
			dst = item;
		if (!clean_path(item) || !clean_path(dst)) {
			rc = bad(o, "container_mounts: '%s': expected SRC[:DST[:ro|rw]] with absolute "
				 "paths and no '..'", item);
			break;
		}
		for (char *f = flags, *fs = NULL, *w = f ? strtok_r(f, "+", &fs) : NULL; w;
		     w = strtok_r(NULL, "+", &fs)) {
			if (!strcmp(w, "ro")) {
				ro = true;
			} else if (strcmp(w, "rw")) {
				rc = bad(o, "container_mounts: %s: flag '%s' is not supported; expected ro "
					 "or rw", item, w);
				break;
			}
		}
		if (rc)
			break;
		for (size_t i = 0; i < s->cfg.nhost_path_allow && !ok; i++)
			ok = srv_path_under(item, s->cfg.host_path_allow[i]);
		if (!ok) {
			drv_http_resp_error(o, 403, "forbidden", NULL,
					    "container_mounts: %s is not under the server's "
					    "host_path_allow (%s)", item, s->cfg.nhost_path_allow
					    ? "see GET /v1/config" : "none allowed");
			rc = -1;
			break;
		}
		DRV_GROW(st->mounts, (size_t)st->nmounts + 1, st->mountcap);
		st->mounts[st->nmounts++] = (struct srv_step_mount){ drv_strdup(item), drv_strdup(dst),
								     ro };
	}
	drv_free(copy);
	return rc;
}

static int read_container(struct drv_server *s, const json_t *b, struct srv_step *st,
			  struct drv_http_resp *o)
{
	const json_t *img = json_object_get(b, "container_image");
	const json_t *mnt = json_object_get(b, "container_mounts");
	const json_t *wd = json_object_get(b, "container_workdir");
	const char *why;

	if (img && json_is_null(img))
		img = NULL;
	if (mnt && json_is_null(mnt))
		mnt = NULL;
	if (wd && json_is_null(wd))
		wd = NULL;
	if (!img) {
		if (mnt || wd)
			return bad(o, "%s: needs container_image (the step runs on the host)",
				   mnt ? "container_mounts" : "container_workdir");
		return 0;
	}
	if (!json_is_string(img))
		return bad(o, "container_image: expected a string");
	if (json_is_true(json_object_get(b, "pty")))
		return bad(o, "pty: a container step gets no terminal; drop --pty or "
			   "--container-image");
	st->container_image = srv_step_image_name(json_string_value(img), &why);
	if (!st->container_image)
		return bad(o, "container_image: '%s': %s", json_string_value(img), why);
	if (wd && (!json_is_string(wd) || !clean_path(json_string_value(wd))))
		return bad(o, "container_workdir: expected an absolute path");
	st->container_workdir = wd ? drv_strdup(json_string_value(wd)) : NULL;
	if (mnt && !json_is_string(mnt))
		return bad(o, "container_mounts: expected a string, SRC[:DST[:ro]][,...]");
	return mnt ? read_mounts(s, json_string_value(mnt), st, o) : 0;
}

/* A container step runs only where the agent runs podman. */
static int container_nodes(struct drv_server *s, const struct srv_step *st, struct drv_http_resp *o)
{
	for (int32_t k = 0; st->container_image && k < st->ntasks; k++) {
		const struct drv_node *n = &s->cluster.nodes[st->tasks[k].node];
		bool podman = false;

		for (int32_t l = 0; l < n->nlabels && !podman; l++)
			podman = !strcmp(n->labels[l].key, SRV_RUNTIME_LABEL) &&
				 !strcmp(n->labels[l].value, "podman");
		if (!podman) {
			drv_http_resp_error(o, 400, "unsupported", NULL,
					    "container_image: node %s runs no container runtime (its "
					    "agent runs --runtime host); run the step without "
					    "--container-image, or on nodes whose agents run --runtime "
					    "podman", n->name);
			return -1;
		}
	}
	return 0;
}

/* --- routes --------------------------------------------------------------- */

/* The job of r's first {}, when the caller may act on it; else 404 set.
 * tmp: a finished job may be read from the store (*tmp, caller frees);
 * NULL: only jobs in memory (those that may still start steps). */
static struct srv_job *step_job(struct drv_server *s, struct drv_http_req *r,
				struct drv_http_resp *o, struct srv_job **tmp)
{
	const char *v = drv_http_req_param(r, 0);
	struct caller *c = drv_http_req_user(r);
	char *end;
	unsigned long long id = strtoull(v ? v : "", &end, 10);
	struct srv_job *j = NULL;

	if (v && *v && !*end)
		j = tmp ? srv_job_lookup(s, id, tmp) : srv_job_get(s, id);
	if (!j || !(c->admin || (j->spec.job.user && !strcmp(c->user, j->spec.job.user)))) {
		drv_http_resp_error(o, 404, "not_found", NULL, "job %s not found%s", v ? v : "",
				    j || tmp ? "" : " among the running jobs");
		return NULL;
	}
	return j;
}

static struct srv_step *route_step(struct drv_server *s, struct drv_http_req *r,
				   struct drv_http_resp *o, struct srv_job **jp,
				   struct srv_job **tmp)
{
	struct srv_job *j = step_job(s, r, o, tmp);
	const char *v = drv_http_req_param(r, 1);
	char *end;
	long id = strtol(v ? v : "", &end, 10);
	struct srv_step *st = j && v && *v && !*end && id >= 0 ? step_of(j, (int32_t)id) : NULL;

	if (j && !st)
		drv_http_resp_error(o, 404, "not_found", NULL, "job %llu has no step %s (in this "
				    "attempt)", (unsigned long long)j->id, v ? v : "");
	*jp = j;
	return st;
}

int srv_api_step_create(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	size_t len;
	const char *text = drv_http_req_body(r, &len);
	json_error_t jerr;
	json_t *b = len ? json_loadb(text, len, 0, &jerr) : NULL;
	struct srv_step *st = NULL;
	struct step_req q;
	struct layout L;
	struct srv_job *j;

	if (!json_is_object(b)) {
		drv_http_resp_error(o, 400, "invalid", NULL, "expected a JSON object (the step: "
				    "argv, env, cwd, ntasks, ...)%s%s", b ? "" : ": ",
				    b ? "" : len ? jerr.text : "no body");
		json_decref(b);
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	j = step_job(s, r, o, NULL);
	if (!j)
		goto out;
	/* a batch script's first srun may come before its start is reported:
	 * the job holds its allocation from scheduled on, as Slurm's runs */
	if ((j->state != J_RUNNING &&
	     !(j->state == J_SCHEDULED && j->holding && srv_job_batch_rank(s, j) >= 0)) ||
	    j->stop_reason) {
		drv_http_resp_error(o, 409, "conflict", NULL, "job %llu is %s%s: a step starts only "
				    "in a running job", (unsigned long long)j->id,
				    srv_jstate_name(j->state), j->stop_reason ? " and stopping" : "");
		goto out;
	}
	st = drv_calloc(1, sizeof(*st));
	if (read_req(b, &q, o) < 0 || read_run(b, st, o) < 0 || read_container(s, b, st, o) < 0 ||
	    lay_out(s, j, &q, &L, o) < 0 || step_tasks(s, j, &q, &L, st, o) < 0 ||
	    container_nodes(s, st, o) < 0)
		goto out;
	st->id = j->nsteps ? j->steps[j->nsteps - 1]->id + 1 : 0;
	st->kill_on_bad_exit = q.kill_on_bad_exit;
	st->pty = q.pty;
	st->pty_rows = (int32_t)q.pty_rows;
	st->pty_cols = (int32_t)q.pty_cols;
	st->cpus_per_task = (int32_t)q.cpt;
	st->start_time = drv_wall_s();
	DRV_GROW(j->steps, (size_t)j->nsteps + 1, j->stepcap);
	j->steps[j->nsteps++] = st;
	for (int32_t k = 0; k < st->ntasks; k++)
		srv_node_bump(s, st->tasks[k].node);
	drv_log(&s->log, "job %llu: step %d: %d task(s) on %d node(s): %s",
		(unsigned long long)j->id, st->id, st->ntasks, st->nnodes, st->argv[0]);
	srv_job_mark(s, j);
	drv_http_resp_json(o, 201, step_json(s, j, st));
	st = NULL;
out:
	pthread_mutex_unlock(&s->mu);
	if (st) {
		j = NULL;
		/* not kept: freed as a job's steps are */
		struct srv_job tmp = { .steps = &st, .nsteps = 1 };

		srv_steps_free(&tmp);
	}
	json_decref(b);
	return 0;
}

int srv_api_step(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_job *j, *tmp = NULL;
	struct srv_step *st;

	pthread_mutex_lock(&s->mu);
	st = route_step(s, r, o, &j, &tmp);
	if (st)
		drv_http_resp_json(o, 200, step_json(s, j, st));
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	return 0;
}

int srv_api_steps(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_job *j, *tmp = NULL;
	json_t *items;

	pthread_mutex_lock(&s->mu);
	j = step_job(s, r, o, &tmp);
	if (j) {
		items = json_array();
		for (int32_t k = 0; k < j->nsteps; k++)
			json_array_append_new(items, step_json(s, j, j->steps[k]));
		drv_http_resp_json(o, 200, json_pack("{s:o}", "items", items));
	}
	pthread_mutex_unlock(&s->mu);
	srv_job_free(tmp);
	return 0;
}

int srv_api_step_cancel(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_job *j;
	struct srv_step *st;
	struct caller *c = drv_http_req_user(r);
	char why[160];

	pthread_mutex_lock(&s->mu);
	st = route_step(s, r, o, &j, NULL);
	if (st) {
		snprintf(why, sizeof(why), "step cancelled by %s", c->user);
		if (!st->done && !st->stop_reason) {
			srv_set_str(&st->stop_reason, why);
			for (int32_t k = 0; k < st->ntasks; k++) {
				struct srv_task *t = &st->tasks[k];

				if (t->ended)
					continue;
				srv_node_bump(s, t->node);
				if (t->state == T_PENDING) {
					t->ended = true;
					t->state = T_CANCELLED;
					t->end_time = drv_wall_s();
				}
			}
			st->done = true;
			for (int32_t k = 0; k < st->ntasks; k++)
				st->done &= st->tasks[k].ended;
			srv_job_mark(s, j);
			srv_job_released(s, j);
		}
		drv_http_resp_json(o, 200, step_json(s, j, st));
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/*
 * GET /v1/jobs/ID/steps/S/attach: the terminal of task 0 of a step made
 * with pty (srun --pty), a WebSocket with exec's frames (v5.channel.k8s.io:
 * 0 typed bytes, 1 output, 4 the size, 3 the end with the exit code),
 * relayed to the agent's GET /v1/tasks/TASK/attach on the task's node. The
 * step is made before its task starts there, so the agent's "not there
 * yet" is retried for a while.
 */
int srv_api_step_attach(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct srv_job *j;
	struct srv_step *st;
	struct srv_task *t;
	char what[96], *path;
	size_t n;

	pthread_mutex_lock(&s->mu);
	st = route_step(s, r, o, &j, NULL);
	if (!st)
		goto out;
	t = &st->tasks[0];
	if (!srv_exec_proto(r) || strcmp(srv_exec_proto(r), "v5.channel.k8s.io")) {
		drv_http_resp_error(o, 400, "invalid", NULL, "attach is a WebSocket with the "
				    "subprotocol v5.channel.k8s.io (srun --pty)");
	} else if (!st->pty) {
		drv_http_resp_error(o, 409, "conflict", NULL, "step %llu.%d has no terminal (it "
				    "was not made with pty: srun --pty)", (unsigned long long)j->id,
				    st->id);
	} else if (t->ended || st->stop_reason || !s->nodes[t->node].agent_url) {
		drv_http_resp_error(o, 409, "conflict", NULL, "step %llu.%d: task 0 is %s",
				    (unsigned long long)j->id, st->id,
				    t->ended ? srv_tstate_name(t->state) : "stopping");
	} else if (s->stopping) {
		drv_http_resp_error(o, 503, "unavailable", NULL, "the server is stopping");
	} else {
		n = 96;
		path = drv_malloc(n);
		snprintf(path, n, "/v1/tasks/%llu.s%d.0/attach?epoch=%lld",
			 (unsigned long long)j->id, st->id, (long long)j->epoch);
		snprintf(what, sizeof(what), "step %llu.%d", (unsigned long long)j->id, st->id);
		srv_agent_ws_answer(s, r, o, t->node, what, path, true, 30000);
	}
out:
	pthread_mutex_unlock(&s->mu);
	return 0;
}

const struct srv_task *srv_step_log_task(struct drv_server *s, struct srv_job *j, int64_t step,
					 int64_t rank)
{
	struct srv_step *st = step_of(j, (int32_t)step);

	(void)s;
	if (!st || rank >= st->ntasks)
		return NULL;
	return &st->tasks[rank];
}
