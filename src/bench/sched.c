/*
 * sched.c: placeholder for 'drover bench sched' until its issue lands.
 */
#include "drover/bench.h"
#include <stdio.h>

int drv_bench_sched(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover bench sched: not built yet\n");
	return 1;
}
