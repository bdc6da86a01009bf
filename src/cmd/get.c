/*
 * get.c: placeholder for 'drover get' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_get(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover get: not built yet\n");
	return 1;
}
