/*
 * client.h: the client side of drover's control plane (src/client/): where
 * the client talks to (flags, environment, config file), one HTTP call to the
 * controller with errors a person can read, and the output formats shared by
 * the client commands (tables like squeue/sinfo, -o json|yaml|wide).
 *
 * The commands themselves (submit, apply, get, queue, nodes, describe,
 * cancel, logs, top) are drv_client_cmd_*(): each takes argv with argv[0] =
 * its name and returns the process exit code: 0 ok, 1 runtime failure (the
 * server cannot be reached, refused, a job failed), 2 bad usage or input
 * (unknown flag, a file the server rejects as invalid).
 *
 * Owner: client (issue 6, part 2). Memory: every char * a function here
 * returns or stores in a struct is malloc'd and owned by the caller (or by
 * the struct, freed by its _release); every const char * argument is
 * borrowed for the call only.
 */
#ifndef DROVER_CLIENT_H
#define DROVER_CLIENT_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "drover/json.h" /* the getters the commands read replies with */

#define DRV_CLIENT_DEFAULT_SERVER "http://127.0.0.1:8080"

/* ---- where to talk to ------------------------------------------------- */

struct drv_client_conf {
	char *server;      /* base URL, no trailing '/'; never NULL once resolved */
	char *token;       /* bearer token, or NULL for none */
	char *ca_file;     /* https: the CA to check the server against; NULL: the
	                      system's trust store */
	char *source;      /* where server came from: "--server", "DROVER_SERVER",
	                      the config file's path, or "default" */
};

/*
 * The config file's path: $XDG_CONFIG_HOME/drover/config, else
 * $HOME/.config/drover/config; NULL when neither variable is set.
 * Caller frees.
 */
char *drv_client_config_path(void);

/*
 * Parses the config file's text: a YAML mapping with the keys `server`,
 * `token` and `ca_file` (all optional; other keys are ignored, for later
 * use) into out's fields of those names (malloc'd, or NULL when absent;
 * source is left NULL). Returns 0, or DRV_EPARSE with "line:col: error:
 * message" in err (the caller puts "file:" before it).
 */
int drv_client_conf_parse(const char *text, size_t len, struct drv_client_conf *out,
			  char *err, size_t errsz);

/*
 * Resolves server, token and CA file, each independently, by precedence:
 * the flag (flag_server, flag_token as read from --token-file, flag_ca
 * from --tls-ca; NULL when not given), then DROVER_SERVER / DROVER_TOKEN
 * / DROVER_CA_FILE, then the config file (a relative ca_file there is
 * relative to the file's folder; the file is not read at all when server
 * and token both come from flags or the environment), then the default server, no token and
 * the system's CAs. A server without a scheme gets "http://". Returns 0,
 * or DRV_EPARSE ("file:line:col: error: ..." in err: bad input, exit 2)
 * or DRV_EIO (unreadable file, exit 1): an unreadable or invalid config
 * file is an error, not silently skipped. Release with _release.
 */
int drv_client_conf_resolve(struct drv_client_conf *conf, const char *flag_server,
			    const char *flag_token, const char *flag_ca, char *err, size_t errsz);
void drv_client_conf_release(struct drv_client_conf *conf);

/* ---- one HTTP call ---------------------------------------------------- */

struct drv_client;

struct drv_client_reply {
	long status;   /* HTTP status code */
	char *body;    /* NUL-terminated body (possibly empty); owned */
	size_t len;
	json_t *json;  /* the body parsed as JSON, or NULL when it is not JSON */
	long long next_offset; /* X-Drover-Next-Offset header, -1 when absent */
};

/* A client for conf (copied). Reuses one connection across calls. */
struct drv_client *drv_client_new(const struct drv_client_conf *conf);
void drv_client_free(struct drv_client *c);
const char *drv_client_server(const struct drv_client *c);

/*
 * Sends METHOD server+path with body (may be NULL) of content type ctype
 * (NULL for none) and the bearer token, waits up to timeout_ms (0: 30 s).
 * Returns 0 when a reply came back (any status; see reply->status), or
 * DRV_ECONN / DRV_ETIMEDOUT / DRV_EIO with a human message in err, such as
 * "cannot reach drover at http://127.0.0.1:8080: connection refused".
 * Release the reply with drv_client_reply_release.
 */
int drv_client_call(struct drv_client *c, const char *method, const char *path,
		    const char *ctype, const char *body, size_t len, long timeout_ms,
		    struct drv_client_reply *reply, char *err, size_t errsz);
void drv_client_reply_release(struct drv_client_reply *reply);
/* One more header line sent with every later call of c (copied; NULL: none). */
void drv_client_set_header(struct drv_client *c, const char *line);

/*
 * The message a non-2xx reply carries: `{"error":"..."}`,
 * `{"error":{"message":"..."}}` (with any "diagnostics"/"details" lines
 * appended), or the raw body, or the status line. Caller frees.
 */
char *drv_client_reply_error(const struct drv_client_reply *reply);

/* The exit code for a non-2xx status: 2 for 400/413/415/422, else 1. */
int drv_client_status_exit(long status);

/* Percent-encodes s for a URL path segment or query value. Caller frees. */
char *drv_client_urlencode(const char *s);

/*
 * The Content-Type a job file is sent with, told from its content:
 * "application/json" (drover's canonical JSON), "text/x-slurm" (a script
 * with "#!" or #SBATCH lines) or "application/yaml" (Kubernetes; a JSON
 * manifest with an apiVersion other than drover/... is sent as YAML).
 */
const char *drv_client_content_type(const char *buf, size_t len);

/* ---- output ----------------------------------------------------------- */

enum drv_output { DRV_OUT_TABLE, DRV_OUT_WIDE, DRV_OUT_JSON, DRV_OUT_YAML };

/* "json", "yaml", "wide" (or "table"/"") -> *out. Returns 0 or DRV_EINVAL. */
int drv_output_parse(const char *s, enum drv_output *out);

/* Prints v as indented JSON (keys in the server's order) and a newline. */
int drv_emit_json(FILE *f, const json_t *v);
/*
 * Prints v as a YAML block document through libfyaml's emitter; strings
 * that would read back as another type ("42", "true", "") stay quoted, so
 * the YAML says exactly what the JSON says.
 */
int drv_emit_yaml(FILE *f, const json_t *v);

/* A text table: columns padded to their widest cell, two spaces apart. */
struct drv_table {
	size_t ncols;
	char **cells;  /* row-major, header row first; owned */
	size_t nrows;  /* including the header */
	size_t cap;
};

void drv_table_init(struct drv_table *t, size_t ncols, const char *const *headers);
/* Adds one row of ncols cells (NULL prints as "-"); cells are copied. */
void drv_table_add(struct drv_table *t, const char *const *cells);
void drv_table_print(const struct drv_table *t, FILE *f);
/* The same, every line indented by indent spaces. */
void drv_table_print_indent(const struct drv_table *t, FILE *f, int indent);
void drv_table_release(struct drv_table *t);

/*
 * Formats a duration in seconds as squeue does: "M:SS", "H:MM:SS",
 * "D-HH:MM:SS"; negative as "0:00". Returns buf.
 */
char *drv_fmt_duration(long long secs, char *buf, size_t n);

/* ---- the commands ----------------------------------------------------- */

int drv_client_cmd_submit(int argc, char **argv);
int drv_client_cmd_apply(int argc, char **argv);
int drv_client_cmd_get(int argc, char **argv);
int drv_client_cmd_queue(int argc, char **argv);
int drv_client_cmd_nodes(int argc, char **argv);
int drv_client_cmd_describe(int argc, char **argv);
int drv_client_cmd_cancel(int argc, char **argv);
int drv_client_cmd_logs(int argc, char **argv);
/* exec (client_exec.c): exits with the command's exit code. */
int drv_client_cmd_exec(int argc, char **argv);
/* srun and salloc (client_srun.c, docs/slurm.md): argv[0] is the name they
 * were called by; exit codes as Slurm's (the worst task's status). */
int drv_client_cmd_srun(int argc, char **argv);
int drv_client_cmd_salloc(int argc, char **argv);
int drv_client_cmd_kubeconfig(int argc, char **argv);

/*
 * Writes a kubeconfig (one cluster, user and context named "drover":
 * server, bearer token, CA file; token and ca_file may be NULL) to path,
 * mode 0600 through a temporary file, or to stdout when path is NULL.
 * 0, or DRV_EIO (errno set).
 */
int drv_kubeconfig_write(const char *path, const char *server, const char *token,
			 const char *ca_file);
int drv_client_cmd_top(int argc, char **argv);
int drv_client_cmd_acct(int argc, char **argv);
/* The Slurm faces (src/client/slurm_*.c, docs/slurm.md): argv[0] is the
 * name; exit codes as Slurm's commands' (0, else 1). */
int drv_client_cmd_sbatch(int argc, char **argv);
int drv_client_cmd_squeue(int argc, char **argv);
int drv_client_cmd_sacct(int argc, char **argv);
int drv_client_cmd_scancel(int argc, char **argv);
int drv_client_cmd_sinfo(int argc, char **argv);
int drv_client_cmd_scontrol(int argc, char **argv);

#endif
