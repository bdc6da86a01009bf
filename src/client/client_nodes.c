/*
 * client_nodes.c: the client commands about nodes: 'drover nodes' (a summary
 * like sinfo: one line per pool, state and GPU model, or one per node with
 * -N), 'get nodes' and 'describe node'.
 */
#include "client_int.h"

#include "drover/hostlist.h"

#include "drover/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SMALL 256

static int fetch_nodes(struct cli *cli, const char *state, const char *pool,
		       struct drv_client_reply *r)
{
	char q[512] = "", path[600];
	char *e;

	if (state) {
		e = drv_client_urlencode(state);
		snprintf(q, sizeof(q), "?state=%s", e);
		drv_free(e);
	}
	if (pool) {
		size_t k = strlen(q);
		e = drv_client_urlencode(pool);
		snprintf(q + k, sizeof(q) - k, "%cpool=%s", k ? '&' : '?', e);
		drv_free(e);
	}
	snprintf(path, sizeof(path), "/v1/nodes%s", q);
	return cli_call(cli, "GET", path, NULL, NULL, 0, r);
}

static void jobs_list(const json_t *node, char *buf, size_t n)
{
	const json_t *a = json_object_get(node, "jobs"), *x;
	size_t i, k = 0;

	buf[0] = '\0';
	json_array_foreach(a, i, x) {
		char id[32] = "?";
		if (json_is_integer(x))
			snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT, json_integer_value(x));
		else if (json_is_string(x))
			snprintf(id, sizeof(id), "%s", json_string_value(x));
		if (k + strlen(id) + 2 >= n)
			break;
		k += snprintf(buf + k, n - k, k ? ",%s" : "%s", id);
	}
}

/* Per-node rows: get nodes, nodes -N. */
static void print_node_rows(const struct cli *cli, const json_t *items)
{
	static const char *const h[] = { "NAME", "STATE", "POOL", "MODEL", "GPUS", "ALLOC",
					 "FREE", "JOBS", "REASON" };
	static const char *const hw[] = { "NAME", "STATE", "POOL", "MODEL", "GPUS", "ALLOC",
					  "FREE", "JOBS", "ADDRESS", "HEARTBEAT", "LABELS",
					  "REASON" };
	int wide = cli->out == DRV_OUT_WIDE;
	struct drv_table t;
	const json_t *node;
	size_t i;

	drv_table_init(&t, wide ? DRV_ARRAY_SIZE(hw) : DRV_ARRAY_SIZE(h), wide ? hw : h);
	json_array_foreach(items, i, node) {
		char c[12][512];
		const char *key;
		const json_t *v, *labels = json_object_get(node, "labels");
		size_t k = 0;

		drv_json_text(node, "name", c[0], sizeof(c[0]));
		drv_json_text(node, "state", c[1], sizeof(c[1]));
		drv_json_text(node, "pool", c[2], sizeof(c[2]));
		drv_json_text(node, "model", c[3], sizeof(c[3]));
		drv_json_text(node, "gpus", c[4], sizeof(c[4]));
		drv_json_text(node, "gpus_allocated", c[5], sizeof(c[5]));
		drv_json_text(node, "gpus_free", c[6], sizeof(c[6]));
		jobs_list(node, c[7], sizeof(c[7]));
		drv_json_text(node, "address", c[8], sizeof(c[8]));
		drv_json_text(node, "last_heartbeat", c[9], sizeof(c[9]));
		c[10][0] = '\0';
		json_object_foreach((json_t *)labels, key, v) {
			char val[SMALL];
			drv_json_text(labels, key, val, sizeof(val));
			if (k + strlen(key) + strlen(val) + 3 >= sizeof(c[10]))
				break;
			k += snprintf(c[10] + k, sizeof(c[10]) - k, k ? ",%s=%s" : "%s=%s", key, val);
		}
		drv_json_text(node, "reason", c[11], sizeof(c[11]));
		if (wide) {
			const char *row[] = { c[0], c[1], c[2], c[3], c[4], c[5],
					      c[6], c[7], c[8], c[9], c[10], c[11] };
			drv_table_add(&t, row);
		} else {
			const char *row[] = { c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[11] };
			drv_table_add(&t, row);
		}
	}
	drv_table_print(&t, stdout);
	drv_table_release(&t);
}

/* sinfo's summary: one row per (pool, state, model), nodes listed. */
struct group {
	char pool[SMALL], state[32], model[SMALL];
	long long nodes, gpus, alloc, free_, unavail;
	char *list;
	size_t len, cap;
};

static void print_summary(const json_t *items)
{
	static const char *const h[] = { "POOL", "STATE", "NODES", "GPUS(A/F/U/T)", "MODEL",
					 "NODELIST" };
	struct group *g = NULL;
	size_t ng = 0, cap = 0, i, j;
	const json_t *node;
	struct drv_table t;

	json_array_foreach(items, i, node) {
		char pool[SMALL], state[32], model[SMALL], name[SMALL];
		size_t k;

		drv_json_text(node, "pool", pool, sizeof(pool));
		drv_json_text(node, "state", state, sizeof(state));
		drv_json_text(node, "model", model, sizeof(model));
		drv_json_text(node, "name", name, sizeof(name));
		for (j = 0; j < ng; j++)
			if (!strcmp(g[j].pool, pool) && !strcmp(g[j].state, state) &&
			    !strcmp(g[j].model, model))
				break;
		if (j == ng) {
			DRV_GROW(g, ng + 1, cap);
			memset(&g[ng], 0, sizeof(g[ng]));
			snprintf(g[ng].pool, sizeof(g[ng].pool), "%s", pool);
			snprintf(g[ng].state, sizeof(g[ng].state), "%s", state);
			snprintf(g[ng].model, sizeof(g[ng].model), "%s", model);
			ng++;
		}
		g[j].nodes++;
		g[j].gpus += drv_json_int(node, "gpus", 0);
		g[j].alloc += drv_json_int(node, "gpus_allocated", 0);
		g[j].free_ += drv_json_int(node, "gpus_free", 0);
		g[j].unavail += drv_json_int(node, "gpus_unavailable", 0);
		k = strlen(name);
		DRV_GROW(g[j].list, g[j].len + k + 2, g[j].cap);
		if (g[j].len)
			g[j].list[g[j].len++] = ',';
		memcpy(g[j].list + g[j].len, name, k + 1);
		g[j].len += k;
	}
	drv_table_init(&t, DRV_ARRAY_SIZE(h), h);
	for (j = 0; j < ng; j++) {
		char n[32], gp[96];
		const char *row[6];
		snprintf(n, sizeof(n), "%lld", g[j].nodes);
		snprintf(gp, sizeof(gp), "%lld/%lld/%lld/%lld", g[j].alloc, g[j].free_, g[j].unavail,
			 g[j].gpus);
		row[0] = g[j].pool;
		row[1] = g[j].state;
		row[2] = n;
		row[3] = gp;
		row[4] = g[j].model;
		{
			/* the group's names, hostlist-compressed ("gpu-[01-04]") */
			const char **names = drv_calloc(g[j].nodes + 1, sizeof(*names));
			size_t k = 0, need;
			char *p, *save = NULL, *hl;

			for (p = strtok_r(g[j].list, ",", &save); p; p = strtok_r(NULL, ",", &save))
				names[k++] = p;
			need = drv_hostlist_compress(names, k, NULL, 0) + 1;
			hl = drv_malloc(need);
			drv_hostlist_compress(names, k, hl, need);
			row[5] = hl;
			drv_table_add(&t, row);
			drv_free(hl);
			drv_free(names);
		}
		drv_free(g[j].list);
	}
	drv_table_print(&t, stdout);
	drv_table_release(&t);
	drv_free(g);
}

int drv_client_get_nodes(struct cli *cli, int nnames, char **names)
{
	struct drv_client_reply r;
	json_t *items;
	int rc, i;

	if (nnames == 0) {
		rc = fetch_nodes(cli, NULL, NULL, &r);
		if (rc)
			return rc;
		if (!cli_items(r.json)) {
			cli_err(cli, "the server's reply to GET /v1/nodes is not a list");
			rc = DRV_EXIT_FAIL;
		} else if (cli->out == DRV_OUT_JSON || cli->out == DRV_OUT_YAML) {
			rc = cli_print_doc(cli, r.json);
		} else {
			print_node_rows(cli, cli_items(r.json));
		}
		drv_client_reply_release(&r);
		return rc;
	}
	items = json_array();
	rc = 0;
	for (i = 0; i < nnames; i++) {
		char path[SMALL];
		char *e = drv_client_urlencode(names[i]);
		int c;
		snprintf(path, sizeof(path), "/v1/nodes/%s", e);
		drv_free(e);
		c = cli_call(cli, "GET", path, NULL, NULL, 0, &r);
		if (c) {
			rc = DRV_MAX(rc, c);
			continue;
		}
		json_array_append(items, r.json);
		drv_client_reply_release(&r);
	}
	if (json_array_size(items)) {
		if (cli->out == DRV_OUT_JSON || cli->out == DRV_OUT_YAML) {
			if (nnames == 1)
				cli_print_doc(cli, json_array_get(items, 0));
			else {
				json_t *doc = json_pack("{s:O}", "items", items);
				cli_print_doc(cli, doc);
				json_decref(doc);
			}
		} else {
			print_node_rows(cli, items);
		}
	}
	json_decref(items);
	return rc;
}

int drv_client_cmd_nodes(int argc, char **argv)
{
	const char *state = NULL, *pool = NULL;
	bool per_node = false;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_FLAG('N', "node-oriented", &per_node, "one row per node"),
		DRV_OPT_STRING('t', "state", &state, "S", "only nodes in state S (up, down, ...)"),
		DRV_OPT_STRING('p', "pool", &pool, "P", "only pool P's nodes"),
		CLI_COMMON_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover nodes",
		.usage = "drover nodes [-N|--node-oriented] [--state S] [--pool P] "
			 "[-o json|yaml|wide]\n"
			 "       [--server URL] [--token-file FILE]",
		.about = "The nodes, like sinfo: a row per pool, state and model (allocated, free "
			 "and total GPUs), or per node with -N.",
		.options = table,
	};
	struct drv_client_reply r;
	const json_t *items;
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if ((code = cli_connect(&cli)))
		return code;
	code = fetch_nodes(&cli, state, pool, &r);
	if (code)
		goto out;
	items = cli_items(r.json);
	if (!items) {
		cli_err(&cli, "the server's reply to GET /v1/nodes is not a list");
		code = DRV_EXIT_FAIL;
	} else if (cli.out == DRV_OUT_JSON || cli.out == DRV_OUT_YAML) {
		code = cli_print_doc(&cli, r.json);
	} else if (per_node || cli.out == DRV_OUT_WIDE) {
		print_node_rows(&cli, items);
	} else {
		print_summary(items);
	}
	drv_client_reply_release(&r);
out:
	cli_release(&cli);
	return code;
}

int drv_client_describe_node(struct cli *cli, const char *name)
{
	struct drv_client_reply r;
	char path[SMALL], b[1024];
	char *e = drv_client_urlencode(name);
	const json_t *node, *a, *x, *v;
	const char *key;
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "/v1/nodes/%s", e);
	drv_free(e);
	rc = cli_call(cli, "GET", path, NULL, NULL, 0, &r);
	if (rc)
		return rc;
	node = r.json;
	if (cli->out == DRV_OUT_JSON || cli->out == DRV_OUT_YAML) {
		rc = cli_print_doc(cli, node);
		drv_client_reply_release(&r);
		return rc;
	}
	printf("%-12s %s\n", "Node:", drv_json_text(node, "name", b, sizeof(b)));
	printf("%-12s %s\n", "State:", drv_json_text(node, "state", b, sizeof(b)));
	drv_json_text(node, "reason", b, sizeof(b));
	printf("%-12s %s\n", "Reason:", b[0] ? b : "-");
	printf("%-12s %s\n", "Pool:", drv_json_text(node, "pool", b, sizeof(b)));
	printf("%-12s %s\n", "Model:", drv_json_text(node, "model", b, sizeof(b)));
	printf("%-12s %lld total, %lld allocated, %lld free, %lld unavailable\n",
	       "GPUs:", (long long)drv_json_int(node, "gpus", 0),
	       (long long)drv_json_int(node, "gpus_allocated", 0),
	       (long long)drv_json_int(node, "gpus_free", 0),
	       (long long)drv_json_int(node, "gpus_unavailable", 0));
	drv_json_text(node, "address", b, sizeof(b));
	printf("%-12s %s\n", "Address:", b[0] ? b : "-");
	drv_json_text(node, "agent_url", b, sizeof(b));
	printf("%-12s %s\n", "Agent:", b[0] ? b : "-");
	drv_json_text(node, "last_heartbeat", b, sizeof(b));
	printf("%-12s %s\n", "Heartbeat:", b[0] ? b : "-");
	jobs_list(node, b, sizeof(b));
	printf("%-12s %s\n", "Jobs:", b[0] ? b : "-");
	a = json_object_get(node, "labels");
	printf("Labels:%s\n", json_object_size(a) ? "" : "      (none)");
	json_object_foreach((json_t *)a, key, v)
		printf("  %s=%s\n", key, drv_json_text(a, key, b, sizeof(b)));
	a = json_object_get(node, "gpu_health");
	if (json_array_size(a)) {
		printf("GPU health:\n");
		json_array_foreach(a, i, x) {
			printf("  gpu %-2lld %-9s util %3lld%%  mem %6lld MiB  %3lld C  %4lld W  "
			       "xid %lld  ecc %lld\n",
			       (long long)drv_json_int(x, "index", 0),
			       json_is_false(json_object_get(x, "healthy")) ? "UNHEALTHY"
									    : "healthy",
			       (long long)drv_json_int(x, "utilization", 0),
			       (long long)drv_json_int(x, "memory_used_mib", 0),
			       (long long)drv_json_int(x, "temperature_c", 0),
			       (long long)drv_json_int(x, "power_w", 0),
			       (long long)drv_json_int(x, "xid", 0),
			       (long long)drv_json_int(x, "ecc_uncorrected", 0));
		}
	}
	drv_client_reply_release(&r);
	return 0;
}
