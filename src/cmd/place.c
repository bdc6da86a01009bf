/*
 * place.c: placeholder for 'drover place' until the scheduling-core work lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_place(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover place: not built yet\n");
	return 1;
}
