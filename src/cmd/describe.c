/*
 * describe.c: placeholder for 'drover describe' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_describe(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover describe: not built yet\n");
	return 1;
}
