/*
 * commands.c: the table of drover's subcommands. Adding a command is one
 * row here, one declaration in include/drover/cmd.h and one file in
 * src/cmd/.
 */
#include "drover/cmd.h"

#include <stddef.h>

const struct drv_command drv_commands[] = {
	{ "validate", cmd_validate, "check a cluster or job file; print a summary or (--json) the canonical form" },
	{ "place", cmd_place, "place a job on a cluster file and print the placement or the reason it cannot" },
	{ "bench", cmd_bench, "run a benchmark (place, ...) and print JSON" },
	{ NULL, NULL, NULL },
};
