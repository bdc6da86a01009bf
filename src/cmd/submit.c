/*
 * submit.c: placeholder for 'drover submit' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_submit(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover submit: not built yet\n");
	return 1;
}
