/*
 * agent.c: placeholder for 'drover agent' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_agent(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover agent: not built yet\n");
	return 1;
}
