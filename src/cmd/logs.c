/*
 * logs.c: placeholder for 'drover logs' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_logs(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover logs: not built yet\n");
	return 1;
}
