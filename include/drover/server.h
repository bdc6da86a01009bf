/*
 * server.h: the controller (src/server/): the HTTP API and agent protocol
 * of docs/api.md, durable state through the store (store.h), the
 * scheduling loop around drv_sched_pass (sched.h), node liveness and
 * fencing, metrics. Owned by the server engineer (issue 6).
 *
 * `drover server` and `drover up` (src/cmd/) start one with
 * drv_server_start() and stop it with drv_server_stop(); everything runs on
 * the server's own threads (one per HTTP connection, one scheduling loop).
 */
#ifndef DROVER_SERVER_H
#define DROVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "drover/common.h"

struct drv_server_opts {
	const char *listen;        /* "ADDR:PORT"; NULL = "127.0.0.1:8080" */
	const char *state_dir;     /* required; created when absent */
	const char *cluster_file;  /* NULL: none (agents make the cluster) */
	const char *config_file;   /* NULL: STATE_DIR/config.yaml, created when absent */
	/* TLS (--tls-cert, --tls-key, --tls-ca); each, when set, wins over the
	 * config's tls.cert_file, tls.key_file, tls.ca_file */
	const char *tls_cert, *tls_key, *tls_ca;
	/* --store (wins over the config's store:): "sqlite" or a postgres:// URL */
	const char *store;
	/* --advertise (wins over advertise_url): where standbys send clients */
	const char *advertise;
	/* Used only when the config file is created now: */
	const char *admin_user;    /* the admin token's user; NULL = "admin" */
	bool allow_root_tasks;     /* allow_root_tasks written into it */
	FILE *log;                 /* one line per notable event; NULL = stderr */
};

struct drv_server;

/*
 * Opens the state (migrating it), loads the cluster file and the config,
 * restores jobs and nodes, starts the scheduling loop and the HTTP server.
 * Returns 0 and *out, or a negative drv_err with a line for a person in
 * err: DRV_EINVAL/DRV_EPARSE for bad files or flags (exit 2), DRV_EIO for
 * what the system refused (exit 1), DRV_ESTATE when another process holds
 * the state directory's lock (STATE_DIR/lock; err names its pid and
 * address; exit 1). The lock is held until drv_server_stop().
 */
int drv_server_start(const struct drv_server_opts *o, struct drv_server **out, char *err,
		     size_t errsz);
/* The port it listens on. */
int drv_server_port(const struct drv_server *s);
/* "http://HOST:PORT" (https with TLS) as a client on this machine reaches it. */
const char *drv_server_url(const struct drv_server *s);
/* The first admin token of the config, and the cluster token (borrowed). */
const char *drv_server_admin_token(const struct drv_server *s);
const char *drv_server_cluster_token(const struct drv_server *s);
/* "leader", "standby" (PostgreSQL, docs/ha.md) or "standalone" (SQLite),
 * as of now. */
const char *drv_server_role(const struct drv_server *s);
/* The config file in use (borrowed). */
const char *drv_server_config_path(const struct drv_server *s);
/* Stops serving, finishes the loop, closes the store. NULL is a no-op. */
void drv_server_stop(struct drv_server *s);

#endif
