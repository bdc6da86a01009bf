/*
 * cmd_get.c: 'drover get', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_get(int argc, char **argv)
{
	return drv_client_cmd_get(argc, argv);
}
