/*
 * agent.c: placeholder for 'drover bench agent' until its issue lands.
 */
#include "drover/bench.h"
#include <stdio.h>

int drv_bench_agent(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover bench agent: not built yet\n");
	return 1;
}
