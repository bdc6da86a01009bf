/*
 * cmd_kubeconfig.c: 'drover kubeconfig', a thin entry into the client
 * (src/client/kubeconfig.c).
 */
#include "drover/client.h"
#include "drover/cmd.h"

int cmd_kubeconfig(int argc, char **argv)
{
	return drv_client_cmd_kubeconfig(argc, argv);
}
