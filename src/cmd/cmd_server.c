/*
 * cmd_server.c: 'drover server --listen ADDR:PORT --state DIR [--cluster FILE]
 * [--config FILE]': the controller in the foreground until SIGINT or
 * SIGTERM, then a clean stop (state flushed, store closed).
 */
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/options.h"
#include "drover/server.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

int cmd_server(int argc, char **argv)
{
	struct drv_server_opts o = { 0 };
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "listen", &o.listen, "ADDR:PORT",
			       "where the API listens (default 127.0.0.1:8080)"),
		DRV_OPT_STRING(0, "state", &o.state_dir, "DIR",
			       "durable state (SQLite); created when absent",
			       .flags = DRV_OPTF_REQUIRED),
		DRV_OPT_STRING(0, "cluster", &o.cluster_file, "FILE",
			       "pools, topology and prices of the nodes (docs/cluster-format.md)"),
		DRV_OPT_STRING(0, "config", &o.config_file, "FILE",
			       "tokens and settings (docs/api.md); default DIR/config.yaml, written "
			       "with fresh tokens on first start"),
		DRV_OPT_STRING(0, "store", &o.store, "URL",
			       "sqlite (STATE_DIR/state.db, the default) or postgres://USER@HOST:PORT/DB "
			       "(no password: store_password_file, PGPASSFILE or ~/.pgpass); "
			       "default: the config's store:"),
		DRV_OPT_STRING(0, "advertise", &o.advertise, "URL",
			       "where standbys send clients to this controller when it leads "
			       "(default: the config's advertise_url, else the listen URL)"),
		DRV_OPT_STRING(0, "tls-cert", &o.tls_cert, "FILE",
			       "serve https with this PEM certificate (default: the config's "
			       "tls.cert_file)"),
		DRV_OPT_STRING(0, "tls-key", &o.tls_key, "FILE",
			       "its PEM private key, mode 0600 (default: tls.key_file)"),
		DRV_OPT_STRING(0, "tls-ca", &o.tls_ca, "FILE",
			       "the CA that agents' https certificates are checked against "
			       "(default: tls.ca_file, else the system's)"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover server",
		.usage = "drover server --state DIR [--listen ADDR:PORT] [--cluster FILE] "
			 "[--config FILE]\n"
			 "                     [--store sqlite|postgres://USER@HOST:PORT/DB] "
			 "[--advertise URL]\n"
			 "                     [--tls-cert FILE --tls-key FILE] [--tls-ca FILE]",
		.about = "The controller in the foreground until SIGINT or SIGTERM, then a clean "
			 "stop.",
		.options = table,
	};
	struct drv_server *srv = NULL;
	char err[4096];
	sigset_t set;
	int sig = 0, rc;

	rc = drv_opts_parse(&cmd, argc, argv);
	if (rc < 0)
		return drv_opts_exit(rc);
	/* the server's threads inherit this mask; this thread takes the signals */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = drv_server_start(&o, &srv, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "drover server: %s\n", err);
		return rc == DRV_EINVAL || rc == DRV_EPARSE || rc == DRV_EEXIST ? DRV_EXIT_USAGE
										 : DRV_EXIT_FAIL;
	}
	printf("drover server: API on %s, state in %s, config %s, role %s\n", drv_server_url(srv),
	       o.state_dir, drv_server_config_path(srv), drv_server_role(srv));
	fflush(stdout);
	sigwait(&set, &sig);
	fprintf(stderr, "drover server: %s received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	drv_server_stop(srv);
	return DRV_EXIT_OK;
}
