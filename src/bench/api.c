/*
 * api.c: placeholder for 'drover bench api' until its issue lands.
 */
#include "drover/bench.h"
#include <stdio.h>

int drv_bench_api(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover bench api: not built yet\n");
	return 1;
}
