/*
 * client_acct.c: 'drover acct', accounting as sacct's totals give it:
 * jobs, GPU-hours and cost per tenant, user, pool or job over a time
 * window, from GET /v1/acct (docs/api.md). Times are read here (RFC 3339,
 * a date, or an age such as 7d) and sent as seconds since the epoch.
 */
#include "client_int.h"

#include "drover/clock.h"
#include "drover/common.h"
#include "drover/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* T into seconds since the epoch: "now", 2026-12-01T10:00:00Z, 2026-12-01
 * (00:00 UTC), or an age: 90s, 30m, 12h, 7d ago. 0 or -1. */
static int parse_when(const char *v, long long now, long long *out)
{
	char unit = 0, extra;
	long long n;
	int64_t t;

	if (strcmp(v, "now") == 0) {
		*out = now;
		return 0;
	}
	if (sscanf(v, "%lld%c%c", &n, &unit, &extra) == 2 && n >= 0 && strchr("smhd", unit) &&
	    unit) {
		*out = now - n * (unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 86400);
		return 0;
	}
	if (strlen(v) == 10 && v[4] == '-' && v[7] == '-') {
		char full[32];

		snprintf(full, sizeof(full), "%sT00:00:00Z", v);
		if (drv_rfc3339_parse(full, &t) == 0) {
			*out = t;
			return 0;
		}
	}
	if (strchr(v, 'T') && drv_rfc3339_parse(v, &t) == 0) {
		*out = t;
		return 0;
	}
	return -1;
}

/* A percentage or "-" when the figure is null (not reported). */
static void pct(const json_t *o, const char *key, char *out, size_t n)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_number(v))
		snprintf(out, n, "%.1f%%", json_number_value(v));
	else
		snprintf(out, n, "-");
}

/* By job: the efficiency columns (seff's figures) after COST_USD. */
static void eff_cols(const json_t *it, char (*c)[32])
{
	const json_t *e = json_object_get(it, "efficiency");
	const json_t *m = json_object_get(e, "gpu_mem_max_mib");

	pct(e, "gpu_util_pct", c[0], sizeof(c[0]));
	if (json_is_integer(m))
		snprintf(c[1], sizeof(c[1]), "%lldMiB", (long long)json_integer_value(m));
	else
		snprintf(c[1], sizeof(c[1]), "-");
	pct(e, "cpu_efficiency_pct", c[2], sizeof(c[2]));
	pct(e, "mem_efficiency_pct", c[3], sizeof(c[3]));
}

static void print_acct(const json_t *reply)
{
	static const char *const h[] = { "GROUP", "JOBS", "GPU_HOURS", "COST_USD", "GPU_UTIL",
					 "GPU_MEM_MAX", "CPU_EFF", "MEM_EFF" };
	const json_t *items = cli_items(reply), *it, *tot = json_object_get(reply, "total");
	const char *by = drv_json_str(reply, "by");
	bool by_job = by && strcmp(by, "job") == 0;
	struct drv_table t;
	char g[256], jobs[32], hours[64], cost[64], e[4][32];
	size_t i;

	drv_table_init(&t, by_job ? DRV_ARRAY_SIZE(h) : 4, h);
	json_array_foreach(items, i, it) {
		const char *row[] = { g, jobs, hours, cost, e[0], e[1], e[2], e[3] };

		drv_json_text(it, "group", g, sizeof(g));
		drv_json_text(it, "jobs", jobs, sizeof(jobs));
		snprintf(hours, sizeof(hours), "%.4f", drv_json_num(it, "gpu_hours", 0));
		snprintf(cost, sizeof(cost), "%.2f", drv_json_num(it, "cost_usd", 0));
		if (by_job)
			eff_cols(it, e);
		drv_table_add(&t, row);
	}
	if (tot) {
		const char *row[] = { "TOTAL", jobs, hours, cost, "", "", "", "" };

		drv_json_text(tot, "jobs", jobs, sizeof(jobs));
		snprintf(hours, sizeof(hours), "%.4f", drv_json_num(tot, "gpu_hours", 0));
		snprintf(cost, sizeof(cost), "%.2f", drv_json_num(tot, "cost_usd", 0));
		drv_table_add(&t, row);
	}
	drv_table_print(&t, stdout);
	drv_table_release(&t);
}

/* The query string for the window and grouping; -1 after an error. */
static int acct_query(struct cli *cli, const char *since, const char *until, const char *by,
		      char *q, size_t n)
{
	const char *names[2] = { "since", "until" }, *vals[2] = { since, until };
	long long now = (long long)time(NULL), t;
	size_t l;

	if (by && strcmp(by, "tenant") && strcmp(by, "user") && strcmp(by, "pool") &&
	    strcmp(by, "job")) {
		cli_err(cli, "--by %s: expected tenant, user, pool or job", by);
		return -1;
	}
	l = (size_t)snprintf(q, n, "/v1/acct?by=%s", by ? by : "tenant");
	for (int k = 0; k < 2; k++) {
		if (!vals[k])
			continue;
		if (parse_when(vals[k], now, &t) < 0) {
			cli_err(cli, "--%s %s: expected a time: 2026-12-01T10:00:00Z, 2026-12-01, "
				"now, or an age such as 90s, 30m, 12h, 7d", names[k], vals[k]);
			return -1;
		}
		l += (size_t)snprintf(q + l, n > l ? n - l : 0, "&%s=%lld", names[k], t);
	}
	return 0;
}

int drv_client_cmd_acct(int argc, char **argv)
{
	const char *since = NULL, *until = NULL, *by = NULL;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "since", &since, "T",
			       "attempts that ended at or after T (default: the 1st of this "
			       "month, 00:00 UTC)"),
		DRV_OPT_STRING(0, "until", &until, "T", "... and before T (default: now)"),
		DRV_OPT_STRING(0, "by", &by, "tenant|user|pool|job", "group by (default tenant)"),
		CLI_COMMON_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover acct",
		.usage = "drover acct [--since T] [--until T] [--by tenant|user|pool|job] "
			 "[-o json|yaml]\n"
			 "       [--server URL] [--token-file FILE]",
		.about = "Accounting: jobs, GPU-hours and cost by tenant, user, pool or job, "
			 "from one row per ended attempt (and the attempts running now). T is "
			 "RFC 3339, a date (00:00 UTC), now, or an age such as 7d.",
		.options = table,
	};
	struct drv_client_reply r;
	char q[256];
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if (acct_query(&cli, since, until, by, q, sizeof(q)) < 0) {
		cli_release(&cli);
		return DRV_EXIT_USAGE;
	}
	if ((code = cli_connect(&cli)))
		goto out;
	code = cli_call(&cli, "GET", q, NULL, NULL, 0, &r);
	if (code)
		goto out;
	if (cli.out == DRV_OUT_JSON || cli.out == DRV_OUT_YAML)
		code = cli_print_doc(&cli, r.json);
	else
		print_acct(r.json);
	drv_client_reply_release(&r);
out:
	cli_release(&cli);
	return code;
}
