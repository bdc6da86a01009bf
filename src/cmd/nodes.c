/*
 * nodes.c: placeholder for 'drover nodes' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_nodes(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover nodes: not built yet\n");
	return 1;
}
