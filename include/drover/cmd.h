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

/* One declaration per command; each lives in src/cmd/<name>.c */
int cmd_validate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_place(int argc, char **argv);

#endif
