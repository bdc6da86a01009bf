/*
 * cmd_acct.c: 'drover acct', a thin entry into the client (src/client/).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_acct(int argc, char **argv)
{
	return drv_client_cmd_acct(argc, argv);
}
