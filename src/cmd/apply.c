/*
 * apply.c: placeholder for 'drover apply' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_apply(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover apply: not built yet\n");
	return 1;
}
