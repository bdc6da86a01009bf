/*
 * client_int.h: what the client command files (src/client/client_*.c) share and
 * nobody else uses: the common flags (--server, --token, -o), one call
 * that prints the server's error and maps it to an exit code, and the
 * readers for the job and node objects of docs/api.md.
 */
#ifndef DROVER_CLIENT_INTERNAL_H
#define DROVER_CLIENT_INTERNAL_H

#include "drover/client.h"

#include <getopt.h>

/* One extra option of a command: a flag (has_arg 0) sets *flag to 1;
 * otherwise *value points at the argument (borrowed from argv). */
struct cli_opt {
	const char *name;
	int short_name;      /* 0 for none */
	int has_arg;         /* no_argument, required_argument */
	const char **value;
	int *flag;
};

struct cli {
	const char *cmd;     /* "drover queue" */
	const char *server, *token, *output;
	enum drv_output out;
	struct drv_client_conf conf;
	struct drv_client *client;
	int nargs;           /* positional arguments */
	char **args;
};

/*
 * Parses argv: the common options (--server URL, --token T,
 * -o/--output json|yaml|wide, -h/--help) plus opts (terminated by a
 * zeroed row). Prints usage (usage: the text after "usage: drover ") to
 * stdout on --help and returns -1 with *exit_code 0; on a bad option to
 * stderr, returns -1 with *exit_code 2. Positional arguments are left in
 * cli->args.
 */
int cli_parse(struct cli *cli, const char *cmd, const char *usage, int argc, char **argv,
	      const struct cli_opt *opts, int *exit_code);

/* Resolves conf and makes the client: 0, or on error prints it and returns
 * the exit code: 2 for a bad config file, 1 for an unreadable one. */
int cli_connect(struct cli *cli);
void cli_release(struct cli *cli);

/*
 * One call; on a transport failure or a non-2xx reply prints
 * "drover CMD: message" to stderr and returns 1 or 2 (the reply is
 * released); on 2xx returns 0 and the caller releases reply.
 */
int cli_call(struct cli *cli, const char *method, const char *path, const char *ctype,
	     const char *body, size_t len, struct drv_client_reply *reply);

/* Prints "drover CMD: " and the message to stderr. */
void cli_err(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints v in cli->out format (json/yaml); returns 0 or 1. */
int cli_print_doc(const struct cli *cli, const json_t *v);

/* The items of a list reply ({"items":[...]}, or a bare array). */
const json_t *cli_items(const json_t *reply);

/* ---- job and node readers (fields per docs/api.md) ---- */

/* Number of whole GPUs a job asks for (its "gpus" field; 0 when absent). */
long long job_gpus(const json_t *job);
/* The node names of a job's placement, comma-separated, deduplicated,
 * in order; "" when not placed. Writes into buf. */
const char *job_nodes(const json_t *job, char *buf, size_t n);
/* squeue's TIME: how long it has run (or ran), now = the local clock. */
long long job_elapsed(const json_t *job, long long now);
/* Short state as squeue prints it (PD, R, CD, F, CA, S, PR) for -o table. */
const char *job_state_short(const char *state);

#endif
