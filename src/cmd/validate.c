/*
 * validate.c: placeholder for 'drover validate' until the scheduling-core work lands.
 */
#include "drover/cmd.h"
#include <stdio.h>

int cmd_validate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "drover validate: not built yet\n");
	return 1;
}
