/*
 * cmd_submit.c: 'drover submit', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_submit(int argc, char **argv)
{
	return drv_client_cmd_submit(argc, argv);
}
