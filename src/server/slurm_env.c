/*
 * slurm_env.c: the SLURM_* variables of the batch step and of the tasks of
 * job steps of a job read from an #SBATCH script (sbatch(1) and srun(1),
 * OUTPUT ENVIRONMENT VARIABLES).
 *
 * The job's nodes are in Slurm's order (drv_hostname_cmp: the order of
 * SLURM_JOB_NODELIST): SLURM_NODEID is a node's place in it and the batch
 * step runs on the first. A variable is set only when Slurm sets it:
 * SLURM_NTASKS only when the job asked for a task count (-n, or
 * --ntasks-per-node, which makes it nodes x that), SLURM_CPUS_PER_TASK only
 * with -c, SLURM_JOB_ACCOUNT only with -A, SLURM_SUBMIT_DIR/_HOST when the
 * client said where it ran (else SLURM_SUBMIT_DIR is --chdir's).
 *
 * The batch step of a job whose client said where it was submitted (the
 * sbatch face does) runs in that directory, or in --chdir taken relative
 * to it, and writes its stdout and stderr to the -o/-e files, Slurm's
 * patterns expanded (srv_slurm_batch_io; default slurm-%j.out, an array
 * element's slurm-%A_%a.out), which the agent opens as the job's user.
 *
 * An element of an array (sbatch --array) also gets SLURM_ARRAY_JOB_ID
 * (the parent's id), SLURM_ARRAY_TASK_ID (its index) and the array's
 * SLURM_ARRAY_TASK_COUNT, _MIN, _MAX and _STEP; SLURM_JOB_ID stays the
 * element's own id, as Slurm's JobIDRaw.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drover/hostlist.h"
#include "server_int.h"

enum { SLURM_NVARS = 96, SLURM_BUF = 16384 };

struct slurm_buf {
	char *p;
	size_t len;
	struct drv_proto_kv *kv;
	size_t n;
};

static void add(struct slurm_buf *b, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add(struct slurm_buf *b, const char *name, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->len >= SLURM_BUF || b->n >= SLURM_NVARS || !name[0])
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, SLURM_BUF - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= SLURM_BUF - b->len)
		return;   /* too long for the buffer: not set rather than cut */
	b->kv[b->n++] = (struct drv_proto_kv){ name, b->p + b->len };
	b->len += (size_t)n + 1;
}

/* A copy of name in b's buffer, for a variable whose name is made at run
 * time (the kv entries point into the buffer); "" when it is full, which
 * add() then leaves unset. */
static const char *het_name(struct slurm_buf *b, const char *name)
{
	size_t n = strlen(name) + 1;
	char *at;

	if (b->len + n > SLURM_BUF - 64)
		return "";
	at = b->p + b->len;
	memcpy(at, name, n);
	b->len += n;
	return at;
}

/* "0,1,5": the GPU indexes of mask, as SLURM_JOB_GPUS lists them. */
static const char *mask_list(uint64_t mask, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int g = 0; g < 64 && len < n; g++)
		if (mask & (1ull << g))
			len += (size_t)snprintf(buf + len, n - len, "%s%d", len ? "," : "", g);
	return buf;
}

static const struct drv_server *sort_srv;

static int node_cmp(const void *x, const void *y)
{
	const int32_t *a = x, *b = y;

	return drv_hostname_cmp(sort_srv->nodes[*a].name, sort_srv->nodes[*b].name);
}

size_t srv_job_nodes(const struct drv_server *s, const struct srv_job *j, int32_t *nodes,
		     size_t cap)
{
	size_t nn = 0, x;

	for (int32_t k = 0; k < j->ntasks; k++) {
		for (x = 0; x < nn && nodes[x] != j->tasks[k].node; x++)
			;
		if (x == nn && nn < cap)
			nodes[nn++] = j->tasks[k].node;
	}
	/* qsort has no context argument; s->mu is held, so one at a time */
	sort_srv = s;
	qsort(nodes, nn, sizeof(*nodes), node_cmp);
	return nn;
}

int32_t srv_job_node_index(const struct drv_server *s, const struct srv_job *j, int32_t node)
{
	int32_t nodes[SRV_MAX_JOB_NODES];
	size_t nn = srv_job_nodes(s, j, nodes, SRV_MAX_JOB_NODES);

	for (size_t x = 0; x < nn; x++)
		if (nodes[x] == node)
			return (int32_t)x;
	return -1;
}

void srv_job_slots(const struct srv_job *j, const int32_t *nodes, size_t nn, int *slots)
{
	const struct drv_slurm_extra *e = &j->spec.slurm;

	for (size_t x = 0; x < nn; x++) {
		int dt = 0;

		for (int32_t k = 0; k < j->ntasks; k++)
			dt += j->tasks[k].node == nodes[x];
		if (e->per_node && e->ntasks_per_node > 0)
			slots[x] = e->ntasks_per_node * dt;
		else if (e->per_node && e->ntasks > 0)
			slots[x] = e->ntasks / (int)nn + ((int)x < e->ntasks % (int)nn);
		else
			slots[x] = dt;
	}
}

int32_t srv_job_slurm_ntasks(const struct srv_job *j, const int *slots, size_t nn)
{
	int32_t sum = 0;

	if (j->spec.slurm.ntasks > 0)
		return j->spec.slurm.ntasks;
	if (j->spec.slurm.ntasks_per_node <= 0)
		return 0;
	for (size_t x = 0; x < nn; x++)
		sum += slots[x];
	return sum;
}

/* A heterogeneous job's (#SBATCH hetjob): SLURM_HET_SIZE and each
 * component's variables with the _HET_GROUP_<n> suffix, as Slurm sets them
 * (scripts read SLURM_JOB_NODELIST_HET_GROUP_1; srun --het-group=N takes
 * its default counts from them). drover's job has one id: every component
 * names it, where Slurm gives components consecutive ids. nodes: the job's,
 * in Slurm's order. At most 8 components get their variables (the buffer). */
static void het_vars(struct slurm_buf *b, struct drv_server *s, const struct srv_job *j,
		     const int32_t *nodes, size_t nn)
{
	char name[64], list[4096];
	const char *names[SRV_MAX_JOB_NODES];

	add(b, "SLURM_HET_SIZE", "%d", j->spec.job.ngroups);
	for (int g = 0; g < j->spec.job.ngroups && g < 8; g++) {
		size_t gn = 0;

		for (size_t x = 0; x < nn; x++) {
			bool here = false;

			for (int32_t k = 0; k < j->ntasks && !here; k++)
				here = j->tasks[k].node == nodes[x] && j->tasks[k].group == g;
			if (here)
				names[gn++] = s->nodes[nodes[x]].name;
		}
		drv_hostlist_compress(names, gn, list, sizeof(list));
		snprintf(name, sizeof(name), "SLURM_JOB_ID_HET_GROUP_%d", g);
		add(b, het_name(b, name), "%llu", (unsigned long long)j->id);
		snprintf(name, sizeof(name), "SLURM_JOB_NODELIST_HET_GROUP_%d", g);
		add(b, het_name(b, name), "%s", list);
		snprintf(name, sizeof(name), "SLURM_NODELIST_HET_GROUP_%d", g);
		add(b, het_name(b, name), "%s", list);
		snprintf(name, sizeof(name), "SLURM_JOB_NUM_NODES_HET_GROUP_%d", g);
		add(b, het_name(b, name), "%zu", gn);
		snprintf(name, sizeof(name), "SLURM_NNODES_HET_GROUP_%d", g);
		add(b, het_name(b, name), "%zu", gn);
	}
}

/* What every task of the job sees, batch and steps alike. node: the task's. */
static void job_vars(struct slurm_buf *b, struct drv_server *s, const struct srv_job *j,
		     int32_t node)
{
	int32_t nodes[SRV_MAX_JOB_NODES];
	const char *names[SRV_MAX_JOB_NODES];
	int slots[SRV_MAX_JOB_NODES], cpus[SRV_MAX_JOB_NODES];
	size_t nn = srv_job_nodes(s, j, nodes, SRV_MAX_JOB_NODES);
	const struct drv_slurm_extra *e = &j->spec.slurm;
	const struct drv_task_run *run = j->spec.run;
	const char *part = e->partition ? e->partition : j->spec.queue;
	int32_t pool = s->cluster.nodes[node].pool;
	/* where sbatch ran; a job whose client did not say: its --chdir */
	const char *dir = e->submit_dir ? e->submit_dir : run ? run->working_dir : NULL;
	char list[4096], gl[256];
	uint64_t mask = 0;
	int32_t nt;

	for (size_t x = 0; x < nn; x++) {
		names[x] = s->nodes[nodes[x]].name;
		cpus[x] = 0;
		for (int32_t k = 0; k < j->ntasks; k++)
			if (j->tasks[k].node == nodes[x])
				cpus[x] += (int)((j->tasks[k].cpu_milli + 999) / 1000);
	}
	for (int32_t k = 0; k < j->ntasks; k++)
		if (j->tasks[k].node == node)
			mask |= j->tasks[k].gpu_mask;
	srv_job_slots(j, nodes, nn, slots);
	/* an exclusive job without a task count: as many tasks as its CPUs
	 * there hold, as Slurm counts them */
	if (j->spec.job.exclusive && e->ntasks <= 0 && e->ntasks_per_node <= 0)
		for (size_t x = 0; x < nn; x++)
			slots[x] = cpus[x] / (e->cpus_per_task > 0 ? e->cpus_per_task : 1);
	add(b, "SLURM_JOB_ID", "%llu", (unsigned long long)j->id);
	add(b, "SLURM_JOBID", "%llu", (unsigned long long)j->id);
	add(b, "SLURM_JOB_NAME", "%s", j->spec.job.name ? j->spec.job.name : "");
	add(b, "SLURM_JOB_NUM_NODES", "%zu", nn);
	add(b, "SLURM_NNODES", "%zu", nn);
	drv_hostlist_compress(names, nn, list, sizeof(list));
	add(b, "SLURM_JOB_NODELIST", "%s", list);
	add(b, "SLURM_NODELIST", "%s", list);
	nt = srv_job_slurm_ntasks(j, slots, nn);
	if (nt > 0) {
		add(b, "SLURM_NTASKS", "%d", nt);
		add(b, "SLURM_NPROCS", "%d", nt);
	}
	if (e->ntasks_per_node > 0)
		add(b, "SLURM_NTASKS_PER_NODE", "%d", e->ntasks_per_node);
	drv_counts_compress(slots, nn, list, sizeof(list));
	add(b, "SLURM_TASKS_PER_NODE", "%s", list);
	drv_counts_compress(cpus, nn, list, sizeof(list));
	add(b, "SLURM_JOB_CPUS_PER_NODE", "%s", list);
	if (e->cpus_per_task > 0)
		add(b, "SLURM_CPUS_PER_TASK", "%d", e->cpus_per_task);
	/* only with GPUs, as Slurm's */
	if (mask) {
		add(b, "SLURM_GPUS_ON_NODE", "%d", __builtin_popcountll(mask));
		add(b, "SLURM_JOB_GPUS", "%s", mask_list(mask, gl, sizeof(gl)));
	}
	if (dir)
		add(b, "SLURM_SUBMIT_DIR", "%s", dir);
	if (e->submit_host)
		add(b, "SLURM_SUBMIT_HOST", "%s", e->submit_host);
	/* without -p: the partition (pool) it runs in, as Slurm's default one */
	if (!part && pool >= 0 && pool < s->cluster.npools)
		part = s->cluster.pools[pool].name;
	if (part)
		add(b, "SLURM_JOB_PARTITION", "%s", part);
	if (e->account)
		add(b, "SLURM_JOB_ACCOUNT", "%s", e->account);
	if (e->qos)
		add(b, "SLURM_JOB_QOS", "%s", e->qos);
	add(b, "SLURM_CLUSTER_NAME", "%s", s->cfg.cluster_name ? s->cfg.cluster_name : "drover");
	if (j->spec.job.user)
		add(b, "SLURM_JOB_USER", "%s", j->spec.job.user);
	add(b, "SLURMD_NODENAME", "%s", s->nodes[node].name);
	add(b, "SLURM_TOPOLOGY_ADDR", "%s", s->nodes[node].name);
	add(b, "SLURM_TOPOLOGY_ADDR_PATTERN", "node");
	if (j->spec.job.ngroups > 1)
		het_vars(b, s, j, nodes, nn);
	if (j->parent) {
		const struct srv_job *p = srv_job_get(s, j->parent);

		add(b, "SLURM_ARRAY_JOB_ID", "%llu", (unsigned long long)j->parent);
		add(b, "SLURM_ARRAY_TASK_ID", "%d", j->index);
		if (p && p->par && p->par->array) {
			const struct drv_array *ar = &p->spec.array;

			add(b, "SLURM_ARRAY_TASK_COUNT", "%d", ar->count);
			add(b, "SLURM_ARRAY_TASK_MIN", "%d", drv_array_min(ar));
			add(b, "SLURM_ARRAY_TASK_MAX", "%d", drv_array_max(ar));
			add(b, "SLURM_ARRAY_TASK_STEP", "%d", drv_array_step(ar));
		}
	}
}

/* b's variables into a's env at position at (the rest moved up). */
static void splice(struct drv_proto_task *a, size_t at, const struct slurm_buf *b)
{
	a->env = drv_realloc(a->env, (a->nenv + b->n + 1) * sizeof(*a->env));
	memmove(a->env + at + b->n, a->env + at, (a->nenv - at) * sizeof(*a->env));
	memcpy(a->env + at, b->kv, b->n * sizeof(*b->kv));
	a->nenv += b->n;
}

char *srv_slurm_env(struct drv_server *s, const struct srv_job *j, int32_t rank,
		    struct drv_proto_task *a)
{
	struct drv_proto_kv kv[SLURM_NVARS];
	struct slurm_buf b = { drv_calloc(1, SLURM_BUF), 0, kv, 0 };
	int32_t node = j->tasks[rank].node;
	int cpus = 0;

	job_vars(&b, s, j, node);
	for (int32_t k = 0; k < j->ntasks; k++)
		if (j->tasks[k].node == node)
			cpus += (int)((j->tasks[k].cpu_milli + 999) / 1000);
	/* the batch step is task 0 of the first node */
	add(&b, "SLURM_NODEID", "%d", srv_job_node_index(s, j, node));
	add(&b, "SLURM_PROCID", "0");
	add(&b, "SLURM_LOCALID", "0");
	add(&b, "SLURM_GTIDS", "0");
	add(&b, "SLURM_CPUS_ON_NODE", "%d", cpus);
	/* before the job's own env, so that it may replace them */
	splice(a, 0, &b);
	return b.p;
}

static bool job_has_gpus_on(const struct srv_job *j, int32_t node)
{
	for (int32_t k = 0; k < j->ntasks; k++)
		if (j->tasks[k].node == node && j->tasks[k].gpu_mask)
			return true;
	return false;
}

/* A step task's SLURM_GTIDS (the step's ranks on its node) and
 * SLURM_CPUS_ON_NODE (the job's CPUs there), as srun sets them. */
static void step_node_vars(struct slurm_buf *b, const struct srv_job *j,
			   const struct srv_step *st, int32_t node, char *list, size_t n)
{
	size_t len = 0;
	int cpus = 0;

	list[0] = '\0';
	for (int32_t k = 0; k < st->ntasks && len < n; k++)
		if (st->tasks[k].node == node)
			len += (size_t)snprintf(list + len, n - len, "%s%d", len ? "," : "", k);
	add(b, "SLURM_GTIDS", "%s", list);
	for (int32_t k = 0; k < j->ntasks; k++)
		if (j->tasks[k].node == node)
			cpus += (int)((j->tasks[k].cpu_milli + 999) / 1000);
	add(b, "SLURM_CPUS_ON_NODE", "%d", cpus);
}

char *srv_slurm_step_env(struct drv_server *s, const struct srv_job *j,
			 const struct srv_step *st, int32_t rank, struct drv_proto_task *a)
{
	struct drv_proto_kv kv[SLURM_NVARS];
	struct slurm_buf b = { drv_calloc(1, SLURM_BUF), 0, kv, 0 };
	int32_t nodes[SRV_MAX_JOB_NODES], node = st->tasks[rank].node;
	const char *names[SRV_MAX_JOB_NODES];
	int counts[SRV_MAX_JOB_NODES];
	size_t nn = 0, x;
	char list[4096];

	job_vars(&b, s, j, node);
	/* the step's own: srun replaces the job's counts with the step's */
	for (int32_t k = 0; k < st->ntasks; k++) {
		for (x = 0; x < nn && nodes[x] != st->tasks[k].node; x++)
			;
		if (x == nn && nn < SRV_MAX_JOB_NODES)
			nodes[nn] = st->tasks[k].node, counts[nn++] = 0;
		if (x < nn)
			counts[x]++;
	}
	for (x = 0; x < nn; x++)
		names[x] = s->nodes[nodes[x]].name;
	add(&b, "SLURM_STEP_ID", "%d", st->id);
	add(&b, "SLURM_STEPID", "%d", st->id);
	add(&b, "SLURM_STEP_NUM_TASKS", "%d", st->ntasks);
	add(&b, "SLURM_STEP_NUM_NODES", "%zu", nn);
	drv_hostlist_compress(names, nn, list, sizeof(list));
	add(&b, "SLURM_STEP_NODELIST", "%s", list);
	drv_counts_compress(counts, nn, list + 2048, 2048);
	add(&b, "SLURM_STEP_TASKS_PER_NODE", "%s", list + 2048);
	add(&b, "SLURM_NTASKS", "%d", st->ntasks);
	add(&b, "SLURM_NPROCS", "%d", st->ntasks);
	add(&b, "SLURM_NNODES", "%zu", nn);
	add(&b, "SLURM_NODELIST", "%s", list);
	add(&b, "SLURM_TASKS_PER_NODE", "%s", list + 2048);
	if (st->cpus_per_task > 0)
		add(&b, "SLURM_CPUS_PER_TASK", "%d", st->cpus_per_task);
	add(&b, "SLURM_PROCID", "%d", rank);
	add(&b, "SLURM_LOCALID", "%d", st->local[rank]);
	add(&b, "SLURM_NODEID", "%d", st->nodeid[rank]);
	step_node_vars(&b, j, st, node, list, sizeof(list));
	if (st->tasks[rank].gpu_mask || job_has_gpus_on(j, node))
		add(&b, "SLURM_GPUS_ON_NODE", "%d", __builtin_popcountll(st->tasks[rank].gpu_mask));
	/* after srun's environment: these are the step's, whatever srun saw */
	splice(a, a->nenv, &b);
	return b.p;
}

/* pat expanded for the batch step of j on node, made absolute against wd
 * (out holds PATH_MAX). */
static void batch_path(const struct srv_job *j, const char *pat, const char *node,
		       const char *wd, char *out)
{
	struct drv_slurm_pattern v = {
		.job_id = j->id, .array_job_id = j->parent, .array_task_id = j->parent ? j->index : -1,
		.job_name = j->spec.job.name, .user = j->spec.job.user, .node = node,
		.node_id = 0, .task_id = 0, .step_id = -1 };
	char name[PATH_MAX];

	drv_slurm_pattern_expand(pat, &v, name, sizeof(name));
	if (name[0] == '/')
		snprintf(out, PATH_MAX, "%s", name);
	else if (snprintf(out, PATH_MAX, "%s/%s", wd, name) >= PATH_MAX)
		out[0] = '\0';
}

char *srv_slurm_batch_io(struct drv_server *s, const struct srv_job *j, int32_t rank,
			 struct drv_proto_task *a)
{
	const struct drv_slurm_extra *e = &j->spec.slurm;
	const struct drv_task_run *run = j->spec.run ? &j->spec.run[j->tasks[rank].group] : NULL;
	const char *wd = run ? run->working_dir : NULL, *node = s->nodes[j->tasks[rank].node].name;
	char *buf, *out, *err;

	if (!e->submit_dir || rank != srv_job_batch_rank(s, j))
		return NULL;
	buf = drv_calloc(3, PATH_MAX);
	out = buf + PATH_MAX;
	err = buf + 2 * PATH_MAX;
	if (!wd)
		snprintf(buf, PATH_MAX, "%s", e->submit_dir);
	else if (wd[0] == '/')
		snprintf(buf, PATH_MAX, "%s", wd);
	else
		snprintf(buf, PATH_MAX, "%s/%s", e->submit_dir, wd);
	a->workdir = buf;
	batch_path(j, e->output ? e->output : j->parent ? "slurm-%A_%a.out" : "slurm-%j.out", node,
		   buf, out);
	a->stdout_file = out[0] ? out : NULL;
	if (e->error) {
		batch_path(j, e->error, node, buf, err);
		a->stderr_file = err[0] && strcmp(err, out) ? err : NULL;
	}
	/* Slurm appends after a requeue unless told to truncate */
	a->open_append = e->open_mode ? !strcmp(e->open_mode, "append") : j->attempt > 1;
	if (e->umask)
		a->umask = strtol(e->umask, NULL, 8);
	return buf;
}
