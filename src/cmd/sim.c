/*
 * sim.c: placeholder for 'drover sim' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_sim(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover sim: not built yet\n");
	return 1;
}
