/*
 * queue.c: placeholder for 'drover queue' until its issue lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_queue(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover queue: not built yet\n");
	return 1;
}
