/*
 * cmd_server.c: 'drover server --listen ADDR:PORT --state DIR [--cluster FILE]
 * [--config FILE]': the controller in the foreground until SIGINT or
 * SIGTERM, then a clean stop (state flushed, store closed).
 */
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/server.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: drover server --state DIR [--listen ADDR:PORT] [--cluster FILE] "
		   "[--config FILE]\n"
		   "  --listen ADDR:PORT  where the API listens (default 127.0.0.1:8080)\n"
		   "  --state DIR         durable state (SQLite); created when absent\n"
		   "  --cluster FILE      pools, topology and prices of the nodes (docs/cluster-format.md)\n"
		   "  --config FILE       tokens and settings (docs/api.md); default DIR/config.yaml,\n"
		   "                      written with fresh tokens on first start\n");
}

int cmd_server(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "state", required_argument, NULL, 's' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "config", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct drv_server_opts o;
	struct drv_server *srv = NULL;
	char err[4096];
	sigset_t set;
	int c, sig = 0, rc;

	memset(&o, 0, sizeof(o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'l': o.listen = optarg; break;
		case 's': o.state_dir = optarg; break;
		case 'c': o.cluster_file = optarg; break;
		case 'C': o.config_file = optarg; break;
		case 'h': usage(stdout); return DRV_EXIT_OK;
		default: usage(stderr); return DRV_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drover server: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return DRV_EXIT_USAGE;
	}
	if (!o.state_dir) {
		fprintf(stderr, "drover server: --state DIR is required\n");
		usage(stderr);
		return DRV_EXIT_USAGE;
	}
	/* the server's threads inherit this mask; this thread takes the signals */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = drv_server_start(&o, &srv, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "drover server: %s\n", err);
		return rc == DRV_EINVAL || rc == DRV_EPARSE ? DRV_EXIT_USAGE : DRV_EXIT_FAIL;
	}
	printf("drover server: API on %s, state in %s, config %s\n", drv_server_url(srv),
	       o.state_dir, drv_server_config_path(srv));
	fflush(stdout);
	sigwait(&set, &sig);
	fprintf(stderr, "drover server: %s received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	drv_server_stop(srv);
	return DRV_EXIT_OK;
}
