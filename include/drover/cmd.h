/*
 * cmd.h: the table of drover's subcommands (src/cmd/commands.c). Each
 * command is one row: its name, its handler, and one line of help. A
 * handler gets argv with argv[0] = the command name and returns the
 * process exit code (0 ok, 1 runtime failure, 2 bad usage or input).
 */
#ifndef DROVER_CMD_H
#define DROVER_CMD_H

struct drv_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

extern const struct drv_command drv_commands[];
/* The commands also run when the binary is called by their name
 * (git-style: a link named sbatch to drover is `drover sbatch`): the Slurm
 * faces. NULL-terminated. */
extern const char *const drv_commands_by_name[];

/* One handler per command; each lives in src/cmd/<name>.c */
int cmd_up(int argc, char **argv);
int cmd_server(int argc, char **argv);
int cmd_backup(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_task_shim(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_describe(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_srun(int argc, char **argv);
int cmd_salloc(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_acct(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_cost(int argc, char **argv);
int cmd_place(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* "word place pack ...": the benchmarks, as completion offers them */
const char *cmd_bench_words(void);
int cmd_tls(int argc, char **argv);
int cmd_kubeconfig(int argc, char **argv);
int cmd_slurm_path(int argc, char **argv);
int cmd_completion(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_sbatch(int argc, char **argv);
int cmd_squeue(int argc, char **argv);
int cmd_sacct(int argc, char **argv);
int cmd_scancel(int argc, char **argv);
int cmd_sinfo(int argc, char **argv);
int cmd_scontrol(int argc, char **argv);

#endif
