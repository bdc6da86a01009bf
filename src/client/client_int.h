/*
 * client_int.h: what the client command files (src/client/client_*.c) share and
 * nobody else uses: the common options (--server, --token-file, -o) as rows of
 * each command's option table (include/drover/options.h), one call
 * that prints the server's error and maps it to an exit code, and the
 * readers for the job and node objects of docs/api.md.
 */
#ifndef DROVER_CLIENT_INTERNAL_H
#define DROVER_CLIENT_INTERNAL_H

#include "drover/client.h"

#include "drover/options.h"

struct cli {
	const char *cmd;     /* "drover queue" */
	const char *server, *token_file, *tls_ca, *output;
	enum drv_output out;
	struct drv_client_conf conf;
	struct drv_client *client;
	int nargs;           /* positional arguments */
	char **args;
	/* a non-2xx reply is neither printed nor released by cli_call and
	 * cli_call_create: the caller reads it (the Slurm faces' own words) */
	bool keep_error;
};

/* Whether an sbatch option as written ("-N", "--time", "--exclusive")
 * takes the next argument as its value (client_submit.c). */
bool cli_sbatch_takes_value(const char *arg);

/* The -o/--output callback: json, yaml or wide (or table) into
 * ((struct cli *)row->value)->out. */
int cli_output_cb(const struct drv_option *row, const char *arg);

/* The rows every client command's option table ends with (before
 * DRV_OPT_END()): -o/--output FMT, --server URL, --token-file FILE, --tls-ca FILE. A command
 * that prints no reply (logs, top) keeps -o as a hidden row. */
#define CLI_SERVER_OPTS(cli)                                                              \
	DRV_OPT_STRING(0, "server", &(cli)->server, "URL",                                 \
		       "the drover server (default: DROVER_SERVER, the config file, "      \
		       "http://127.0.0.1:8080)"),                                          \
	DRV_OPT_STRING(0, "token-file", &(cli)->token_file, "FILE",                        \
		       "read the API token from FILE, mode 0600 (default: DROVER_TOKEN, the " \
		       "config file)"),                                                     \
	DRV_OPT_STRING(0, "tls-ca", &(cli)->tls_ca, "FILE",                                \
		       "https: check the server against this CA (default: DROVER_CA_FILE, " \
		       "the config file's ca_file, the system's CAs)")
#define CLI_OUTPUT_OPT(cli, FLAGS)                                                        \
	DRV_OPT_CALLBACK('o', "output", (cli), cli_output_cb, "json|yaml|wide",            \
			 "print the reply as JSON or YAML, or a wider table (default: a "   \
			 "table)", .expect = "json, yaml or wide", .flags = (FLAGS))
#define CLI_COMMON_OPTS(cli)                                                              \
	DRV_OPT_GROUP("output and server"), CLI_OUTPUT_OPT(cli, 0), CLI_SERVER_OPTS(cli)

/*
 * Parses argv against cmd (its table ends with CLI_COMMON_OPTS(cli) rows,
 * so the values land in cli, which this zeroes first, and its name becomes
 * cli->cmd). Returns 0 with the positional arguments in cli->args; or -1
 * after the help (*exit_code 0) or an error (*exit_code 2) was printed.
 */
int cli_parse(struct cli *cli, const struct drv_opts *cmd, int argc, char **argv,
	      int *exit_code);

/* Resolves conf (the token from --token-file first) and makes the client:
 * 0, or on error prints it and returns the exit code: 2 for a bad config
 * file or a token file others may read, 1 for an unreadable one. */
int cli_connect(struct cli *cli);
void cli_release(struct cli *cli);

/*
 * One call; on a transport failure or a non-2xx reply prints
 * "drover CMD: message" to stderr and returns 1 or 2 (the reply is
 * released); on 2xx returns 0 and the caller releases reply.
 */
int cli_call(struct cli *cli, const char *method, const char *path, const char *ctype,
	     const char *body, size_t len, struct drv_client_reply *reply);

/*
 * A create (POST path: submit, apply) with a fresh Idempotency-Key, sent
 * again with the same key after a connection error or timeout (up to 4
 * more times, 0.5 to 4 s apart, each said on stderr): a job the server
 * took before the reply was lost is answered again, not made twice.
 * Returns as cli_call.
 */
int cli_call_create(struct cli *cli, const char *path, const char *ctype, const char *body,
		    size_t len, struct drv_client_reply *reply);
/* cli_call's verdict on a reply that came: 0 on 2xx, else prints and
 * returns 1 or 2 (the reply released). */
int cli_reply_check(struct cli *cli, struct drv_client_reply *reply);

/* Prints "drover CMD: " and the message to stderr. */
void cli_err(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints v in cli->out format (json/yaml); returns 0 or 1. */
int cli_print_doc(const struct cli *cli, const json_t *v);

/* The items of a list reply ({"items":[...]}, or a bare array). */
const json_t *cli_items(const json_t *reply);
/*
 * GET path and every page after it (next_cursor of GET /v1/queue,
 * next_after of GET /v1/jobs) into *out: {"items": [all of them]} with the
 * first page's "total" when it has one (caller frees). Returns as cli_call
 * (errors printed; *out NULL then).
 */
int cli_get_all(struct cli *cli, const char *path, json_t **out);

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

/* ---- exec's and srun --pty's WebSocket (client_exec.c) ---- */

struct drv_ws;
struct termios;
/* Relays w (v5.channel.k8s.io frames) to our stdout/stderr, and our stdin
 * to it with in; with tty our terminal's size goes too (and again on
 * SIGWINCH, once drv_client_tty_raw set the handler). Returns the remote
 * command's exit code, 1 when it could not run (said as "WHO: why"). */
int drv_client_ws_relay(const char *who, struct drv_ws *w, bool in, bool tty);
/* Puts our stdin's terminal in raw mode, the old settings in *saved
 * (restore with tcsetattr); false when it is none. */
bool drv_client_tty_raw(struct termios *saved);

#endif
