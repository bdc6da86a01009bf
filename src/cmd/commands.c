/*
 * commands.c: the table of drover's subcommands. Adding a command is one
 * row here, one declaration in include/drover/cmd.h and one file in
 * src/cmd/. Called by a name in drv_commands_by_name (a link named srun),
 * drover runs the row of that name (src/cmd/main.c), as git runs git-NAME.
 */
#include "drover/cmd.h"

#include <stddef.h>

const struct drv_command drv_commands[] = {
	{ "up", cmd_up, "all-in-one: controller + a local agent, state in SQLite" },
	{ "server", cmd_server, "the controller: API, durable state, scheduling loop, metrics" },
	{ "agent", cmd_agent, "the node agent: GPUs, launching tasks, node and GPU metrics" },
	{ "submit", cmd_submit, "submit a job file (Kubernetes YAML, Slurm script, drover JSON)" },
	{ "apply", cmd_apply, "create or update a job by name, as kubectl apply -f does" },
	{ "get", cmd_get, "list jobs or nodes (get jobs|nodes)" },
	{ "queue", cmd_queue, "the queue, like squeue: state, GPUs, nodes or pending reason" },
	{ "nodes", cmd_nodes, "the nodes, like sinfo" },
	{ "describe", cmd_describe, "one job in full: placement, env, events, why pending" },
	{ "cancel", cmd_cancel, "cancel a job" },
	{ "logs", cmd_logs, "a job's task output" },
	{ "exec", cmd_exec, "run a command in a running task of a job (-i stdin, -t a terminal)" },
	{ "srun", cmd_srun, "Slurm's srun: a job step inside a job, or an allocation and its step" },
	{ "salloc", cmd_salloc, "Slurm's salloc: an allocation and a shell in which srun uses it" },
	{ "top", cmd_top, "a live terminal view of GPUs and jobs" },
	{ "acct", cmd_acct, "accounting: jobs, GPU-hours and cost by tenant, user, pool or job" },
	{ "sim", cmd_sim, "replay a trace through the scheduler on a virtual clock" },
	{ "validate", cmd_validate, "check a cluster or job file; print a summary or (--json) the canonical form" },
	{ "cost", cmd_cost, "on-prem versus cloud: monthly costs, break-even month, price per GPU-hour" },
	{ "place", cmd_place, "place a job on a cluster file and print the placement or the reason it cannot" },
	{ "kubeconfig", cmd_kubeconfig, "a kubeconfig for kubectl against this server (docs/kubernetes.md)" },
	{ "backup", cmd_backup, "an online copy of the SQLite state (PostgreSQL: pg_dump)" },
	{ "tls", cmd_tls, "certificates for https: a CA and certificates it signs" },
	{ "bench", cmd_bench, "run a benchmark (place, sched, api, agent) and print JSON" },
	{ "version", cmd_version, "the release and the commit it is built from" },
	{ "completion", cmd_completion, "a bash or zsh completion script (completion bash|zsh)" },
	{ "slurm-path", cmd_slurm_path, "the directory of the Slurm command links (docs/slurm.md)" },
	/* the Slurm faces (docs/slurm.md): `drover sbatch`, or a link named sbatch */
	{ "sbatch", cmd_sbatch, "Slurm's sbatch: submit a batch script" },
	{ "squeue", cmd_squeue, "Slurm's squeue: the queue in Slurm's columns" },
	{ "sacct", cmd_sacct, "Slurm's sacct: jobs from drover's store" },
	{ "scancel", cmd_scancel, "Slurm's scancel: cancel jobs" },
	{ "sinfo", cmd_sinfo, "Slurm's sinfo: partitions (pools) and nodes" },
	{ "scontrol", cmd_scontrol, "Slurm's scontrol: show, hold, release, update" },
	/* internal: the parent of each task, started by the agent (src/agent/shim.c) */
	{ "task-shim", cmd_task_shim, NULL },
	{ NULL, NULL, NULL },
};

/* Called by one of these names (a link made by make install), drover is
 * that command: the Slurm faces. */
const char *const drv_commands_by_name[] = {
	"sbatch", "squeue", "sacct", "scancel", "sinfo", "scontrol", "srun", "salloc", NULL,
};
