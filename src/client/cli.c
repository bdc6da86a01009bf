/*
 * cli.c: the plumbing every client command shares: the common options,
 * resolving where to talk to, one call that turns a failure into one line
 * on stderr and an exit code, and the readers for job objects.
 */
#include "client_int.h"

#include "drover/common.h"
#include "drover/fsutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void cli_err(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_output_cb(const struct drv_option *row, const char *arg)
{
	struct cli *cli = row->value;

	cli->output = arg;
	return drv_output_parse(arg, &cli->out) ? DRV_OPT_BAD : 0;
}

int cli_parse(struct cli *cli, const struct drv_opts *cmd, int argc, char **argv,
	      int *exit_code)
{
	int n;

	memset(cli, 0, sizeof(*cli));
	cli->cmd = cmd->name;
	n = drv_opts_parse(cmd, argc, argv);
	if (n < 0) {
		*exit_code = drv_opts_exit(n);
		return -1;
	}
	cli->nargs = n;
	cli->args = argv;
	return 0;
}

int cli_connect(struct cli *cli)
{
	char err[512], *token = NULL;
	int rc = 0;

	if (cli->token_file)
		rc = drv_secret_file_read(cli->token_file, &token, err, sizeof(err));
	if (rc < 0) {
		cli_err(cli, "--token-file: %s", err);
		return rc == DRV_EIO ? DRV_EXIT_FAIL : DRV_EXIT_USAGE;
	}
	rc = drv_client_conf_resolve(&cli->conf, cli->server, token, cli->tls_ca, err,
				     sizeof(err));
	drv_free(token);
	if (rc < 0) {
		cli_err(cli, "%s", err);
		/* a bad config file is bad input; an unreadable one a failure */
		return rc == DRV_EPARSE ? DRV_EXIT_USAGE : DRV_EXIT_FAIL;
	}
	cli->client = drv_client_new(&cli->conf);
	return 0;
}

void cli_release(struct cli *cli)
{
	drv_client_free(cli->client);
	drv_client_conf_release(&cli->conf);
	cli->client = NULL;
}

int cli_call(struct cli *cli, const char *method, const char *path, const char *ctype,
	     const char *body, size_t len, struct drv_client_reply *reply)
{
	char err[512];

	if (drv_client_call(cli->client, method, path, ctype, body, len, 0, reply, err,
			    sizeof(err))) {
		cli_err(cli, "%s", err);
		return DRV_EXIT_FAIL;
	}
	return cli_reply_check(cli, reply);
}

int cli_reply_check(struct cli *cli, struct drv_client_reply *reply)
{
	char *msg;
	int code;

	if (reply->status >= 200 && reply->status < 300)
		return 0;
	if (cli->keep_error)
		return drv_client_status_exit(reply->status);
	msg = drv_client_reply_error(reply);
	if (reply->status == 401)
		cli_err(cli, "%s (HTTP 401: check --token-file, DROVER_TOKEN or the config file)", msg);
	else
		cli_err(cli, "%s", msg);
	drv_free(msg);
	code = drv_client_status_exit(reply->status);
	drv_client_reply_release(reply);
	return code;
}

/* A fresh Idempotency-Key: 128 random bits as hex. */
static void new_key(char *buf, size_t n)
{
	unsigned char r[16];
	size_t k = 0;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		struct timespec ts;

		/* no entropy source: time and pid still tell this request apart */
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(buf, n, "drover-%lld-%09ld-%d", (long long)ts.tv_sec, ts.tv_nsec,
			 (int)getpid());
		return;
	}
	k = (size_t)snprintf(buf, n, "drover-");
	for (size_t i = 0; i < sizeof(r) && k + 3 <= n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%02x", r[i]);
}

int cli_call_create(struct cli *cli, const char *path, const char *ctype, const char *body,
		    size_t len, struct drv_client_reply *reply)
{
	static const long wait_ms[] = { 500, 1000, 2000, 4000 };
	char key[64], line[96], err[512];
	size_t tries = 0;
	int rc;

	new_key(key, sizeof(key));
	snprintf(line, sizeof(line), "Idempotency-Key: %s", key);
	drv_client_set_header(cli->client, line);
	for (;;) {
		struct timespec ts;

		rc = drv_client_call(cli->client, "POST", path, ctype, body, len, 0, reply, err,
				     sizeof(err));
		/* a controller still loading, or a failover under way (docs/ha.md),
		 * answers 503: as good as unreachable for now */
		if (rc == 0 && reply->status == 503 && tries < DRV_ARRAY_SIZE(wait_ms)) {
			rc = DRV_ECONN;
			snprintf(err, sizeof(err), "the controller answered 503 (%s)",
				 reply->body && strstr(reply->body, "loading") ? "loading its state"
										: "no leader yet");
			drv_client_reply_release(reply);
		} else if ((rc != DRV_ECONN && rc != DRV_ETIMEDOUT) ||
			   tries == DRV_ARRAY_SIZE(wait_ms)) {
			break;
		}
		fprintf(stderr, "%s: %s; sending it again in %.1f s (Idempotency-Key %s: a job "
				"the server already took is not made twice)\n", cli->cmd, err,
			wait_ms[tries] / 1000.0, key);
		ts = (struct timespec){ wait_ms[tries] / 1000, (wait_ms[tries] % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		tries++;
	}
	drv_client_set_header(cli->client, NULL);
	if (rc) {
		cli_err(cli, "%s", err);
		return DRV_EXIT_FAIL;
	}
	return cli_reply_check(cli, reply);
}

int cli_print_doc(const struct cli *cli, const json_t *v)
{
	int rc = cli->out == DRV_OUT_YAML ? drv_emit_yaml(stdout, v) : drv_emit_json(stdout, v);
	return rc ? DRV_EXIT_FAIL : 0;
}

const json_t *cli_items(const json_t *reply)
{
	const json_t *items;

	if (json_is_array(reply))
		return reply;
	items = json_object_get(reply, "items");
	return json_is_array(items) ? items : NULL;
}

/*
 * Follows a list route's pages to the end: next_cursor (GET /v1/queue) as
 * cursor=, next_after (GET /v1/jobs) as after=. The first page's "total"
 * is kept. A page that names no next one, or names the one just read,
 * ends the walk.
 */
int cli_get_all(struct cli *cli, const char *path, json_t **out)
{
	char page[4096], prev[128] = "";
	json_t *items = json_array(), *total = NULL;
	int rc = 0;

	snprintf(page, sizeof(page), "%s", path);
	for (;;) {
		struct drv_client_reply r;
		const json_t *got, *nc, *na;
		char next[128] = "", *e;

		rc = cli_call(cli, "GET", page, NULL, NULL, 0, &r);
		if (rc)
			break;
		got = cli_items(r.json);
		if (!got) {
			cli_err(cli, "the server's reply to GET %s is not a list", path);
			drv_client_reply_release(&r);
			rc = DRV_EXIT_FAIL;
			break;
		}
		json_array_extend(items, (json_t *)got);
		if (!total && json_object_get(r.json, "total"))
			total = json_incref(json_object_get(r.json, "total"));
		nc = json_object_get(r.json, "next_cursor");
		na = json_object_get(r.json, "next_after");
		if (json_is_string(nc)) {
			e = drv_client_urlencode(json_string_value(nc));
			snprintf(next, sizeof(next), "cursor=%s", e);
			drv_free(e);
		} else if (json_is_integer(na)) {
			snprintf(next, sizeof(next), "after=%lld", (long long)json_integer_value(na));
		}
		drv_client_reply_release(&r);
		if (!*next || !strcmp(next, prev))
			break;
		snprintf(prev, sizeof(prev), "%s", next);
		snprintf(page, sizeof(page), "%s%c%s", path, strchr(path, '?') ? '&' : '?', next);
	}
	if (rc) {
		json_decref(items);
		json_decref(total);
		*out = NULL;
		return rc;
	}
	*out = json_pack("{s:o}", "items", items);
	if (total)
		json_object_set_new(*out, "total", total);
	return 0;
}

long long job_gpus(const json_t *job)
{
	const json_t *g = json_object_get(job, "gpus");

	if (json_is_object(g)) /* {"count":8,...} or {"total":8} */
		return drv_json_int(g, "count", drv_json_int(g, "total", 0));
	return drv_json_int(job, "gpus", 0);
}

static void add_node(char *buf, size_t n, const char *name)
{
	size_t len = strlen(buf), k = strlen(name);
	const char *p = buf;

	if (!*name)
		return;
	/* dedupe: is name already in the comma list? */
	while (*p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == k && !strncmp(p, name, k))
			return;
		p += l + (e ? 1 : 0);
	}
	if (len + k + 2 > n)
		return;
	if (len)
		buf[len++] = ',';
	memcpy(buf + len, name, k + 1);
}

static void nodes_of(const json_t *v, char *buf, size_t n)
{
	size_t i;
	const json_t *x;

	if (json_is_string(v)) {
		add_node(buf, n, json_string_value(v));
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			nodes_of(x, buf, n);
	} else if (json_is_object(v)) {
		const json_t *node = json_object_get(v, "node");
		if (json_is_string(node)) {
			add_node(buf, n, json_string_value(node));
			return;
		}
		nodes_of(json_object_get(v, "tasks"), buf, n);
		nodes_of(json_object_get(v, "nodes"), buf, n);
	}
}

const char *job_nodes(const json_t *job, char *buf, size_t n)
{
	buf[0] = '\0';
	nodes_of(json_object_get(job, "placement"), buf, n);
	return buf;
}

long long job_elapsed(const json_t *job, long long now)
{
	long long start = drv_json_time(job, "start_time");
	long long end = drv_json_time(job, "end_time");

	if (!start)
		return 0;
	if (!end)
		end = now;
	return end - start;
}

const char *job_state_short(const char *s)
{
	static const struct { const char *l, *s; } m[] = {
		{ "pending", "PD" },   { "scheduled", "S" },  { "running", "R" },
		{ "succeeded", "CD" }, { "failed", "F" },      { "cancelled", "CA" },
		{ "preempted", "PR" }, { "out_of_memory", "OOM" },
		{ "timeout", "TO" },   { "node_fail", "NF" },
	};
	size_t i;

	for (i = 0; i < DRV_ARRAY_SIZE(m); i++)
		if (!strcmp(s, m[i].l))
			return m[i].s;
	return s;
}
