/*
 * cmd_apply.c: 'drover apply', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_apply(int argc, char **argv)
{
	return drv_client_cmd_apply(argc, argv);
}
