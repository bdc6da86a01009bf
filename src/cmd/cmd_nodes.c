/*
 * cmd_nodes.c: 'drover nodes', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_nodes(int argc, char **argv)
{
	return drv_client_cmd_nodes(argc, argv);
}
