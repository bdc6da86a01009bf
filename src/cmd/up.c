/*
 * up.c: placeholder for 'drover up' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_up(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover up: not built yet\n");
	return 1;
}
