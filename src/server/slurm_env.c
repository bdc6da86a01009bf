/*
 * slurm_env.c: the SLURM_* variables of a task of a job read from an
 * #SBATCH script (sbatch(1), OUTPUT ENVIRONMENT VARIABLES), added to its
 * assignment before the job's own env (which may replace them).
 *
 * Nodes are in the order of the job's ranks (the node of rank 0 first):
 * SLURM_NODEID and SLURM_TASKS_PER_NODE follow it; SLURM_JOB_NODELIST is
 * hostlist-compressed and sorted, as Slurm writes it.
 *
 * An element of an array (sbatch --array) also gets SLURM_ARRAY_JOB_ID
 * (the parent's id), SLURM_ARRAY_TASK_ID (its index) and the array's
 * SLURM_ARRAY_TASK_COUNT, _MIN, _MAX and _STEP; SLURM_JOB_ID stays the
 * element's own id, as Slurm's JobIDRaw.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "drover/hostlist.h"
#include "server_int.h"

enum { SLURM_NVARS = 24, SLURM_BUF = 8192 };

struct slurm_buf {
	char *p;
	size_t len;
	struct drv_proto_task *a;
};

static void add(struct slurm_buf *b, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add(struct slurm_buf *b, const char *name, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->len >= SLURM_BUF)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, SLURM_BUF - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= SLURM_BUF - b->len)
		return;   /* too long for the buffer: not set rather than cut */
	b->a->env[b->a->nenv++] = (struct drv_proto_kv){ name, b->p + b->len };
	b->len += (size_t)n + 1;
}

/* The job's nodes in rank order and their task counts; returns how many. */
static size_t job_nodes(const struct srv_job *j, int32_t *nodes, int *counts, size_t cap)
{
	size_t nn = 0, x;

	for (int32_t k = 0; k < j->ntasks; k++) {
		for (x = 0; x < nn && nodes[x] != j->tasks[k].node; x++)
			;
		if (x == nn && nn < cap)
			nodes[nn] = j->tasks[k].node, counts[nn++] = 0;
		if (x < nn)
			counts[x]++;
	}
	return nn;
}

char *srv_slurm_env(struct drv_server *s, const struct srv_job *j, int32_t rank,
		    struct drv_proto_task *a)
{
	int32_t nodes[256];
	int counts[256], gpus = 0;
	const char *names[256];
	const struct drv_task_run *run = j->spec.run;
	struct slurm_buf b = { drv_calloc(1, SLURM_BUF), 0, a };
	size_t nn = job_nodes(j, nodes, counts, 256), njob = a->nenv, i;
	char list[4096];
	const char *part = j->spec.slurm.partition ? j->spec.slurm.partition : j->spec.queue;

	a->env = drv_realloc(a->env, (a->nenv + SLURM_NVARS + 1) * sizeof(*a->env));
	/* before the job's own env, so that it may replace them */
	memmove(a->env + SLURM_NVARS, a->env, njob * sizeof(*a->env));
	a->nenv = 0;
	for (i = 0; i < nn; i++)
		names[i] = s->nodes[nodes[i]].name;
	for (int32_t k = 0; k < j->ntasks; k++)
		if (j->tasks[k].node == j->tasks[rank].node)
			gpus += __builtin_popcountll(j->tasks[k].gpu_mask);
	add(&b, "SLURM_JOB_ID", "%llu", (unsigned long long)j->id);
	add(&b, "SLURM_JOBID", "%llu", (unsigned long long)j->id);
	add(&b, "SLURM_JOB_NAME", "%s", j->spec.job.name ? j->spec.job.name : "");
	add(&b, "SLURM_JOB_NUM_NODES", "%zu", nn);
	add(&b, "SLURM_NNODES", "%zu", nn);
	drv_hostlist_compress(names, nn, list, sizeof(list));
	add(&b, "SLURM_JOB_NODELIST", "%s", list);
	add(&b, "SLURM_NODELIST", "%s", list);
	add(&b, "SLURM_NTASKS", "%d", j->ntasks);
	add(&b, "SLURM_NPROCS", "%d", j->ntasks);
	add(&b, "SLURM_PROCID", "%d", rank);
	add(&b, "SLURM_LOCALID", "%lld", (long long)a->local_rank);
	add(&b, "SLURM_NODEID", "%lld", (long long)a->node_rank);
	drv_counts_compress(counts, nn, list, sizeof(list));
	add(&b, "SLURM_TASKS_PER_NODE", "%s", list);
	add(&b, "SLURM_GPUS_ON_NODE", "%d", gpus);
	if (run && run->working_dir)
		add(&b, "SLURM_SUBMIT_DIR", "%s", run->working_dir);
	if (part)
		add(&b, "SLURM_JOB_PARTITION", "%s", part);
	if (j->spec.job.user)
		add(&b, "SLURM_JOB_USER", "%s", j->spec.job.user);
	if (j->parent) {
		const struct srv_job *p = srv_job_get(s, j->parent);

		add(&b, "SLURM_ARRAY_JOB_ID", "%llu", (unsigned long long)j->parent);
		add(&b, "SLURM_ARRAY_TASK_ID", "%d", j->index);
		if (p && p->par && p->par->array) {
			const struct drv_array *ar = &p->spec.array;

			add(&b, "SLURM_ARRAY_TASK_COUNT", "%d", ar->count);
			add(&b, "SLURM_ARRAY_TASK_MIN", "%d", drv_array_min(ar));
			add(&b, "SLURM_ARRAY_TASK_MAX", "%d", drv_array_max(ar));
			add(&b, "SLURM_ARRAY_TASK_STEP", "%d", drv_array_step(ar));
		}
	}
	/* the job's own env after them; unused slots closed up */
	memmove(a->env + a->nenv, a->env + SLURM_NVARS, njob * sizeof(*a->env));
	a->nenv += njob;
	return b.p;
}
