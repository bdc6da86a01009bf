/*
 * cli.c: the plumbing every client command shares: the common flags,
 * resolving where to talk to, one call that turns a failure into one line
 * on stderr and an exit code, and the readers for job objects.
 */
#include "client_int.h"

#include "drover/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OPT_SERVER = 1000, OPT_TOKEN, OPT_EXTRA = 2000 };

void cli_err(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_parse(struct cli *cli, const char *cmd, const char *usage, int argc, char **argv,
	      const struct cli_opt *opts, int *exit_code)
{
	struct option *lo;
	char shorts[128] = "o:h";
	size_t nopt = 0, i, k;
	int c, rc = 0;

	memset(cli, 0, sizeof(*cli));
	cli->cmd = cmd;
	for (i = 0; opts && opts[i].name; i++)
		nopt++;
	/* GNU getopt permutes, so flags may follow the positional arguments:
	 * "drover get jobs -o json". */
	lo = drv_calloc(nopt + 5, sizeof(*lo));
	lo[0] = (struct option){ "server", required_argument, NULL, OPT_SERVER };
	lo[1] = (struct option){ "token", required_argument, NULL, OPT_TOKEN };
	lo[2] = (struct option){ "output", required_argument, NULL, 'o' };
	lo[3] = (struct option){ "help", no_argument, NULL, 'h' };
	for (i = 0; i < nopt; i++) {
		lo[4 + i] = (struct option){ opts[i].name, opts[i].has_arg, NULL,
					     OPT_EXTRA + (int)i };
		if (opts[i].short_name) {
			k = strlen(shorts);
			if (k + 3 < sizeof(shorts)) {
				shorts[k++] = (char)opts[i].short_name;
				if (opts[i].has_arg)
					shorts[k++] = ':';
				shorts[k] = '\0';
			}
		}
	}
	optind = 0; /* GNU: full reinitialisation, so a second parse works */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == 'h') {
			printf("usage: drover %s\n", usage);
			*exit_code = DRV_EXIT_OK;
			rc = -1;
			goto out;
		}
		if (c == 'o') {
			cli->output = optarg;
			if (drv_output_parse(optarg, &cli->out)) {
				cli_err(cli, "-o %s: expected json, yaml or wide", optarg);
				*exit_code = DRV_EXIT_USAGE;
				rc = -1;
				goto out;
			}
			continue;
		}
		if (c == OPT_SERVER) {
			cli->server = optarg;
			continue;
		}
		if (c == OPT_TOKEN) {
			cli->token = optarg;
			continue;
		}
		if (c >= OPT_EXTRA && c < OPT_EXTRA + (int)nopt) {
			const struct cli_opt *o = &opts[c - OPT_EXTRA];
			if (o->has_arg && o->value)
				*o->value = optarg;
			if (!o->has_arg && o->flag)
				*o->flag = 1;
			continue;
		}
		for (i = 0; i < nopt; i++)
			if (opts[i].short_name && c == opts[i].short_name) {
				if (opts[i].has_arg && opts[i].value)
					*opts[i].value = optarg;
				if (!opts[i].has_arg && opts[i].flag)
					*opts[i].flag = 1;
				break;
			}
		if (i < nopt)
			continue;
		if (c == '?') {
			if (optopt)
				cli_err(cli, "unknown option '-%c'", optopt);
			else
				cli_err(cli, "unknown option '%s'", argv[optind - 1]);
		} else if (c == ':') {
			cli_err(cli, "option '%s' needs a value", argv[optind - 1]);
		}
		fprintf(stderr, "usage: drover %s\n", usage);
		*exit_code = DRV_EXIT_USAGE;
		rc = -1;
		goto out;
	}
	cli->nargs = argc - optind;
	cli->args = argv + optind;
out:
	drv_free(lo);
	return rc;
}

int cli_connect(struct cli *cli)
{
	char err[512];

	int rc = drv_client_conf_resolve(&cli->conf, cli->server, cli->token, err, sizeof(err));

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
	char *msg;
	int code;

	if (drv_client_call(cli->client, method, path, ctype, body, len, 0, reply, err,
			    sizeof(err))) {
		cli_err(cli, "%s", err);
		return DRV_EXIT_FAIL;
	}
	if (reply->status >= 200 && reply->status < 300)
		return 0;
	msg = drv_client_reply_error(reply);
	if (reply->status == 401)
		cli_err(cli, "%s (HTTP 401: check --token, DROVER_TOKEN or the config file)", msg);
	else
		cli_err(cli, "%s", msg);
	drv_free(msg);
	code = drv_client_status_exit(reply->status);
	drv_client_reply_release(reply);
	return code;
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

long long job_gpus(const json_t *job)
{
	const json_t *g = json_object_get(job, "gpus");

	if (json_is_object(g)) /* {"count":8,...} or {"total":8} */
		return drv_jint(g, "count", drv_jint(g, "total", 0));
	return drv_jint(job, "gpus", 0);
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
	long long start = drv_jtime(job, "start_time");
	long long end = drv_jtime(job, "end_time");

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
		{ "preempted", "PR" },
	};
	size_t i;

	for (i = 0; i < DRV_ARRAY_SIZE(m); i++)
		if (!strcmp(s, m[i].l))
			return m[i].s;
	return s;
}
