/*
 * bench.c: placeholder for 'drover bench' until the scheduling-core work lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_bench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover bench: not built yet\n");
	return 1;
}
