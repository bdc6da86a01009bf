/*
 * cmd_queue.c: 'drover queue', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_queue(int argc, char **argv)
{
	return drv_client_cmd_queue(argc, argv);
}
