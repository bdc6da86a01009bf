/*
 * server.c: placeholder for 'drover server' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_server(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover server: not built yet\n");
	return 1;
}
