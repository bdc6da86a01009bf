/*
 * top.c: placeholder for 'drover top' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_top(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover top: not built yet\n");
	return 1;
}
