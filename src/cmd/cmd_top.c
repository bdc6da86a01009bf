/*
 * cmd_top.c: 'drover top', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_top(int argc, char **argv)
{
	return drv_client_cmd_top(argc, argv);
}
