/*
 * cmd_logs.c: 'drover logs', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_logs(int argc, char **argv)
{
	return drv_client_cmd_logs(argc, argv);
}
