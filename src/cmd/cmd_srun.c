/*
 * cmd_srun.c: 'srun' and 'salloc' (drover called by those names, or
 * 'drover srun'), thin entries into the client (src/client/client_srun.c).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_srun(int argc, char **argv)
{
	return drv_client_cmd_srun(argc, argv);
}

int cmd_salloc(int argc, char **argv)
{
	return drv_client_cmd_salloc(argc, argv);
}
