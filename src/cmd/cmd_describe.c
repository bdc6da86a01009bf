/*
 * cmd_describe.c: 'drover describe', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_describe(int argc, char **argv)
{
	return drv_client_cmd_describe(argc, argv);
}
