/*
 * cmd_cancel.c: 'drover cancel', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_cancel(int argc, char **argv)
{
	return drv_client_cmd_cancel(argc, argv);
}
