/*
 * cmd_exec.c: 'drover exec', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_exec(int argc, char **argv)
{
	return drv_client_cmd_exec(argc, argv);
}
