/*
 * place.c: placeholder for 'drover bench place' until its issue lands.
 */
#include "drover/bench.h"
#include <stdio.h>

int drv_bench_place(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover bench place: not built yet\n");
	return 1;
}
