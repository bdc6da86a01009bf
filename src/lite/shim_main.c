/*
 * shim_main.c: drover-shim, the task shim (src/agent/shim.c) as a binary
 * of its own that links libc only. The agent runs it as each task's parent
 * when it lies beside drover (drv_agent_shim_exe); its command line is
 * drover's, `drover task-shim ...`, so an agent adopts a task whichever
 * of the two started it.
 */
#include "drover/agent.h"
#include "drover/common.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "task-shim")) {
		fprintf(stderr, "drover-shim: internal: run by drover agent as "
			"'drover task-shim ...'\n");
		return DRV_EXIT_USAGE;
	}
	return drv_task_shim_main(argc - 1, argv + 1);
}
