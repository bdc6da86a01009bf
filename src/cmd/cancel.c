/*
 * cancel.c: placeholder for 'drover cancel' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_cancel(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover cancel: not built yet\n");
	return 1;
}
