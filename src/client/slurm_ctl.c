/*
 * slurm_ctl.c: the scancel, sinfo and scontrol faces.
 *
 * scancel: ids (P_I for an array element), or every job matching -u, -n,
 * -t, -p; POST /v1/jobs/ID/cancel. A finished or unknown id gets Slurm's
 * words and exit 1.
 * sinfo: pools are partitions (the default starred), one line per
 * partition and node state, node lists compressed; -N one line a node;
 * -o with % letters; -l, -h.
 * scontrol: show job|node|partition|hostnames|hostlist, hold/release/
 * requeue, update (TimeLimit; NodeName State=DRAIN|RESUME Reason=).
 */
#include "slurm_int.h"

#include "drover/common.h"
#include "drover/hostlist.h"
#include "drover/spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static bool in_list(const char *v, const char *const *list, int n)
{
	for (int i = 0; i < n; i++)
		if (v && !strcmp(v, list[i]))
			return true;
	return false;
}

/* A POST whose failure is printed in the face's words; 0, or 1. reply
 * kept when out is not NULL. */
static int post(struct cli *cli, const char *path, const char *body, long *status,
		char *msg, size_t msgsz)
{
	struct drv_client_reply r;
	int rc;

	cli->keep_error = true;
	rc = cli_call(cli, "POST", path, body ? "application/json" : NULL, body,
		      body ? strlen(body) : 0, &r);
	*status = r.status;
	msg[0] = '\0';
	if (rc && r.status) {
		char *m = drv_client_reply_error(&r);

		snprintf(msg, msgsz, "%s", m);
		drv_free(m);
	}
	if (r.status)
		drv_client_reply_release(&r);
	return rc ? 1 : 0;
}

/* ---- scancel ---- */

struct sc {
	struct cli *cli;
	const char *users[64], *states[32], *parts[64], *jnames[64];
	int nusers, nstates, nparts, njnames;
	unsigned long long ids[1024];
	int nids;
};

static int sc_match(const json_t *job, void *cls)
{
	struct sc *q = cls;
	const char *st = drv_json_str(job, "state");

	if (q->nusers && !in_list(drv_json_str(job, "user"), q->users, q->nusers))
		return 0;
	if (q->nparts && !in_list(drv_json_str(job, "partition"), q->parts, q->nparts))
		return 0;
	if (q->njnames && !in_list(drv_json_str(job, "name"), q->jnames, q->njnames))
		return 0;
	if (q->nstates && !in_list(st, q->states, q->nstates))
		return 0;
	if (q->nids < (int)DRV_ARRAY_SIZE(q->ids))
		q->ids[q->nids++] = (unsigned long long)drv_json_int(job, "id", 0);
	return 0;
}

/*
 * Slurm 22.05's scancel (measured against slurm-local): a finished or
 * unknown job is no failure (exit 0) and is said only with -v. Other
 * failures are said always and exit 1. What the server answered a POST
 * of a cancel or a signal, in those words; denied: a 403 in Slurm's
 * words (a cancel), else with the server's message.
 */
static int kill_answer(const char *shown, long status, const char *msg, bool verbose,
		       bool denied)
{
	if ((status == 404 || status == 409) && !verbose)
		return 0;
	if (status == 404)
		fprintf(stderr, "scancel: error: Kill job error on job id %s: Invalid job id "
				"specified\n", shown);
	else if (status == 409)
		fprintf(stderr, "scancel: error: Kill job error on job id %s: Job/step already "
				"completing or completed\n", shown);
	if (status == 404 || status == 409)
		return 0;
	if (status == 403 && denied)
		fprintf(stderr, "scancel: error: Kill job error on job id %s: Access/permission "
				"denied\n", shown);
	else if (status)
		fprintf(stderr, "scancel: error: Kill job error on job id %s: %s\n", shown, msg);
	return 1;
}

static int cancel_one(struct cli *cli, const char *shown, unsigned long long id, bool verbose)
{
	char path[96], msg[512];
	long status;

	snprintf(path, sizeof(path), "/v1/jobs/%llu/cancel", id);
	if (!post(cli, path, NULL, &status, msg, sizeof(msg)))
		return 0;
	return kill_answer(shown, status, msg, verbose, true);
}

/* A signal other than a cancel's (scancel -s USR1): to the job's steps,
 * its batch shell (--batch) or both (--full), as Slurm's scancel sends it;
 * errors as cancel_one says them. */
static int signal_one(struct cli *cli, const char *shown, unsigned long long id, int sig,
		      const char *to, bool verbose)
{
	char path[96], body[96], msg[512];
	long status;

	snprintf(path, sizeof(path), "/v1/jobs/%llu/signal", id);
	snprintf(body, sizeof(body), "{\"signal\": %d, \"to\": \"%s\"}", sig, to);
	if (!post(cli, path, body, &status, msg, sizeof(msg)))
		return 0;
	return kill_answer(shown, status, msg, verbose, false);
}

/* An array element "P_I": the element's own id, from the parent's list. */
static int element_id(struct cli *cli, unsigned long long parent, long long index,
		      unsigned long long *out)
{
	struct drv_client_reply r;
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "/v1/jobs/%llu", parent);
	cli->keep_error = true;
	rc = cli_call(cli, "GET", path, NULL, NULL, 0, &r);
	if (rc) {
		if (r.status)
			drv_client_reply_release(&r);
		return -1;
	}
	/* the element of task id index, not the index-th one (--array=1-3) */
	*out = sl_array_element(r.json, index);
	drv_client_reply_release(&r);
	return *out ? 0 : -1;
}

/* SIGUSR1, USR1 or 10: the number; -1 when it names none. */
static int signal_num(const char *s)
{
	char *end;
	long n;

	if (isdigit((unsigned char)*s)) {
		n = strtol(s, &end, 10);
		return *end || n < 1 || n > 64 ? -1 : (int)n;
	}
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int i = 1; i < 32; i++) {
		const char *abbr = sigabbrev_np(i);

		if (abbr && !strcasecmp(s, abbr))
			return i;
	}
	return -1;
}

int drv_client_cmd_scancel(int argc, char **argv)
{
	struct cli cli;
	struct sc q = { .cli = &cli };
	bool batch = false, full = false, quiet = false, verbose = false;
	const char *users = NULL, *states = NULL, *parts = NULL, *jnames = NULL, *sig = NULL;
	int signo = 0;   /* a signal to send, not a cancel */
	const char *to;
	const struct drv_option table[] = {
		DRV_OPT_STRING('u', "user", &users, "USERS", "every job of these users"),
		DRV_OPT_STRING('n', "name", &jnames, "NAMES", "every job of these names"),
		DRV_OPT_STRING('t', "state", &states, "STATES", "only jobs in these states (PENDING, RUNNING)"),
		DRV_OPT_STRING('p', "partition", &parts, "PARTS", "only jobs in these partitions"),
		DRV_OPT_STRING('s', "signal", &sig, "SIGNAL", "KILL: cancel; another (TERM, INT, USR1...): sent to the job's steps, the job is not cancelled"),
		DRV_OPT_FLAG('b', "batch", &batch, "with -s: to the batch shell only (a cancel: the whole job)"),
		DRV_OPT_FLAG('f', "full", &full, "with -s: to the batch shell and the steps"),
		DRV_OPT_FLAG('Q', "quiet", &quiet, "say nothing about finished or unknown jobs, even with -v"),
		DRV_OPT_FLAG('v', "verbose", &verbose, "say each job, and those finished or unknown"),
		DRV_OPT_GROUP("server"),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "scancel",
		.usage = "scancel [-u USERS] [-n NAMES] [-t STATES] [-p PARTS] [-s SIGNAL] [ID...]",
		.about = "Slurm's scancel over drover (docs/slurm.md).",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
	};
	char ubuf[2048], sbuf[512], pbuf[2048], nbuf[2048];
	int code = 0, fails = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return sl_exit(code);
	if (sig) {
		int n = signal_num(sig);

		if (n < 0) {
			fprintf(stderr, "scancel: error: Invalid job signal: %s\n", sig);
			return 1;
		}
		/* as Slurm's: a signal is sent, not a cancel (a TERM the
		 * script traps lets it go on); KILL ends the job as a cancel */
		if (n != 9)
			signo = n;
	}
	to = full ? "all" : batch ? "batch" : "steps";
	if (batch && !signo && !quiet)
		sl_warn("scancel", "--batch: drover cancels the whole job, not the batch step "
			"alone");
	if (!cli.nargs && !users && !states && !parts && !jnames) {
		fprintf(stderr, "scancel: error: No job identification provided\n");
		return 1;
	}
	if ((code = sl_connect(&cli, "scancel")))
		goto out;
	if (users) {
		snprintf(ubuf, sizeof(ubuf), "%s", users);
		q.nusers = sl_split(ubuf, q.users, 64);
	}
	if (parts) {
		snprintf(pbuf, sizeof(pbuf), "%s", parts);
		q.nparts = sl_split(pbuf, q.parts, 64);
	}
	if (jnames) {
		snprintf(nbuf, sizeof(nbuf), "%s", jnames);
		q.njnames = sl_split(nbuf, q.jnames, 64);
	}
	if (states) {
		const char *w[32];
		int n;

		snprintf(sbuf, sizeof(sbuf), "%s", states);
		n = sl_split(sbuf, w, 32);
		for (int i = 0; i < n; i++) {
			bool never;
			const char *d = sl_state_parse(w[i], &never);

			if (!d && !never) {
				fprintf(stderr, "scancel: error: Invalid job state specified: %s\n", w[i]);
				code = 1;
				goto out;
			}
			if (d)
				q.states[q.nstates++] = d;
		}
		if (!q.nstates)
			goto out;   /* SUSPENDED: drover has none */
	}
	for (int i = 0; i < cli.nargs; i++) {
		const char *a = cli.args[i];
		char *end;
		unsigned long long id = strtoull(a, &end, 10);

		if (end == a || (*end && *end != '_' && *end != '.')) {
			fprintf(stderr, "scancel: error: Invalid job id %s\n", a);
			code = 1;
			goto out;
		}
		if (verbose)
			fprintf(stderr, "scancel: Terminating job %s\n", a);
		if (*end == '_' && element_id(&cli, id, strtoll(end + 1, NULL, 10), &id)) {
			if (verbose)
				fprintf(stderr, "scancel: error: Kill job error on job id %s: Invalid "
						"job id specified\n", a);
			continue;
		}
		if (q.nusers || q.nstates || q.nparts || q.njnames) {
			/* ids and filters: the ids that match */
			struct drv_client_reply r;
			char path[64];

			snprintf(path, sizeof(path), "/v1/jobs/%llu", id);
			cli.keep_error = true;
			if (cli_call(&cli, "GET", path, NULL, NULL, 0, &r) == 0) {
				int before = q.nids;

				sc_match(r.json, &q);
				drv_client_reply_release(&r);
				if (q.nids == before)
					continue;
				q.nids = before;
			} else if (r.status) {
				drv_client_reply_release(&r);
			}
		}
		fails += signo ? signal_one(&cli, a, id, signo, to, verbose && !quiet)
			       : cancel_one(&cli, a, id, verbose && !quiet);
	}
	if (!cli.nargs) {
		if ((code = sl_each_job(&cli, "/v1/queue", sc_match, &q)))
			goto out;
		for (int i = 0; i < q.nids; i++) {
			char shown[32];

			snprintf(shown, sizeof(shown), "%llu", q.ids[i]);
			/* a race with its end is no error */
			if (signo)
				signal_one(&cli, shown, q.ids[i], signo, to, false);
			else
				cancel_one(&cli, shown, q.ids[i], false);
			if (verbose)
				fprintf(stderr, "scancel: Terminating job %s\n", shown);
		}
	}
	code = fails ? 1 : 0;
out:
	cli_release(&cli);
	return code;
}

/* ---- sinfo ---- */

/* A node's state in sinfo's words: short (%t) and long (%T). */
static void node_state(const json_t *node, bool lng, char *buf, size_t n)
{
	const char *st = drv_json_str(node, "state");
	long long g = drv_json_int(node, "gpus", 0), ga = drv_json_int(node, "gpus_allocated", 0);
	size_t jobs = json_array_size(json_object_get(node, "jobs"));
	const char *w;

	if (st && !strcmp(st, "down"))
		w = lng ? "down" : "down";
	else if (st && !strcmp(st, "draining"))
		w = jobs ? (lng ? "draining" : "drng") : (lng ? "drained" : "drain");
	else if (!jobs)
		w = "idle";
	else if (g > 0 && ga < g)
		w = lng ? "mixed" : "mix";
	else
		w = lng ? "allocated" : "alloc";
	snprintf(buf, n, "%s", w);
}

struct si {
	json_t *nodes;      /* every node */
	const char *def;    /* the default partition */
	struct sl_fmt fmt;
	bool node_lines, noheader;
	const char *parts[64];
	int nparts;
	const char *only_nodes;
};

static const struct sl_letter si_letters[] = {
	{ 'P', "partition", "PARTITION" }, { 'R', "partition_name", "PARTITION" },
	{ 'a', "avail", "AVAIL" },         { 'l', "timelimit", "TIMELIMIT" },
	{ 'D', "nodes", "NODES" },         { 't', "state", "STATE" },
	{ 'T', "state_long", "STATE" },    { 'N', "nodelist", "NODELIST" },
	{ 'G', "gres", "GRES" },           { 'c', "cpus", "CPUS" },
	{ 'm', "memory", "MEMORY" },       { 'e', "free_mem", "FREE_MEM" },
	{ 's', "job_size", "JOB_SIZE" },   { 'r', "root", "ROOT" },
	{ 'h', "oversubscribe", "OVERSUBSCRIBE" }, { 'g', "groups", "GROUPS" },
	{ 'n', "hostnames", "HOSTNAMES" }, { 'o', "hostnames", "NODE_ADDR" },
	{ 'E', "reason", "REASON" },       { 0, NULL, NULL },
};

static const char *pool_of(const json_t *node)
{
	const char *p = drv_json_str(node, "pool");

	return p ? p : "default";
}

/* One line: a group of nodes (same partition, same state, or one node). */
static void si_line(struct si *q, const char *part, json_t *group)
{
	const json_t *first = json_array_get(group, 0);
	const char *names[4096];
	size_t i, n = 0;
	const json_t *nd;
	char v[8192], hl[8192];

	json_array_foreach(group, i, nd)
		if (n < DRV_ARRAY_SIZE(names))
			names[n++] = drv_json_str(nd, "name");
	drv_hostlist_compress(names, n, hl, sizeof(hl));
	for (int c = 0; c < q->fmt.ncols; c++) {
		const char *f = q->fmt.cols[c].field;

		if (!strcmp(f, "partition"))
			snprintf(v, sizeof(v), "%s%s", part, !strcmp(part, q->def) ? "*" : "");
		else if (!strcmp(f, "partition_name"))
			snprintf(v, sizeof(v), "%s", part);
		else if (!strcmp(f, "avail"))
			snprintf(v, sizeof(v), "up");
		else if (!strcmp(f, "timelimit"))
			snprintf(v, sizeof(v), "infinite");
		else if (!strcmp(f, "nodes"))
			snprintf(v, sizeof(v), "%zu", n);
		else if (!strcmp(f, "state") || !strcmp(f, "state_long"))
			node_state(first, !strcmp(f, "state_long"), v, sizeof(v));
		else if (!strcmp(f, "nodelist") || !strcmp(f, "hostnames"))
			snprintf(v, sizeof(v), "%s", hl);
		else if (!strcmp(f, "gres")) {
			long long g = drv_json_int(first, "gpus", 0);

			if (g > 0)
				snprintf(v, sizeof(v), "gpu:%lld", g);
			else
				snprintf(v, sizeof(v), "(null)");
		} else if (!strcmp(f, "cpus"))
			snprintf(v, sizeof(v), "%lld", (long long)(drv_json_int(first, "cpu_milli", 0) / 1000));
		else if (!strcmp(f, "memory"))
			snprintf(v, sizeof(v), "%lld", (long long)drv_json_int(first, "mem_mib", 0));
		else if (!strcmp(f, "free_mem"))
			snprintf(v, sizeof(v), "N/A");
		else if (!strcmp(f, "job_size"))
			snprintf(v, sizeof(v), "1-infinite");
		else if (!strcmp(f, "root"))
			snprintf(v, sizeof(v), "no");
		else if (!strcmp(f, "oversubscribe"))
			snprintf(v, sizeof(v), "NO");
		else if (!strcmp(f, "groups"))
			snprintf(v, sizeof(v), "all");
		else if (!strcmp(f, "reason")) {
			drv_json_text(first, "reason", v, sizeof(v));
			if (!v[0])
				snprintf(v, sizeof(v), "none");
		} else
			v[0] = '\0';
		sl_cell(stdout, &q->fmt.cols[c], v, true);
	}
	fputs(q->fmt.suffix, stdout);
	fputc('\n', stdout);
}

static void si_print(struct si *q)
{
	const char *parts[256];
	size_t np = 0, i, k;
	const json_t *nd;

	if (!q->noheader) {
		for (int c = 0; c < q->fmt.ncols; c++) {
			const char *f = q->fmt.cols[c].field, *h = f;

			for (const struct sl_letter *l = si_letters; l->letter; l++)
				if (!strcmp(l->field, f)) {
					h = l->header;
					break;
				}
			sl_cell(stdout, &q->fmt.cols[c], h, true);
		}
		fputs(q->fmt.suffix, stdout);
		fputc('\n', stdout);
	}
	/* partitions in order of first appearance, the default first */
	parts[np++] = q->def;
	json_array_foreach(q->nodes, i, nd) {
		const char *p = pool_of(nd);
		bool seen = false;

		for (k = 0; k < np; k++)
			seen |= !strcmp(parts[k], p);
		if (!seen && np < DRV_ARRAY_SIZE(parts))
			parts[np++] = p;
	}
	for (k = 0; k < np; k++) {
		static const char *const order[] = { "idle", "mix", "alloc", "drng", "drain", "down" };
		bool any = false;

		if (q->nparts && !in_list(parts[k], q->parts, q->nparts))
			continue;
		for (size_t s = 0; s < DRV_ARRAY_SIZE(order); s++) {
			json_t *group = json_array();

			json_array_foreach(q->nodes, i, nd) {
				char st[32];

				if (strcmp(pool_of(nd), parts[k]))
					continue;
				node_state(nd, false, st, sizeof(st));
				if (strcmp(st, order[s]))
					continue;
				if (q->node_lines) {
					json_t *one = json_pack("[O]", nd);

					si_line(q, parts[k], one);
					json_decref(one);
					any = true;
					continue;
				}
				json_array_append(group, (json_t *)nd);
			}
			if (json_array_size(group)) {
				si_line(q, parts[k], group);
				any = true;
			}
			json_decref(group);
		}
		if (!any && !q->node_lines && k == 0 && np == 1) {
			/* a partition with no nodes: Slurm prints it with 0 nodes, n/a */
		}
	}
}

static int get_nodes(struct cli *cli, json_t **out)
{
	struct drv_client_reply r;
	int rc = cli_call(cli, "GET", "/v1/nodes", NULL, NULL, 0, &r);
	const json_t *items;

	if (rc)
		return 1;
	items = cli_items(r.json);
	*out = items ? json_incref((json_t *)items) : json_array();
	drv_client_reply_release(&r);
	return 0;
}

static int get_default_partition(struct cli *cli, char *buf, size_t n)
{
	json_t *c = NULL;

	if (sl_cluster(cli, &c))
		return 1;
	drv_json_text(c, "default_partition", buf, n);
	if (!buf[0])
		snprintf(buf, n, "default");
	json_decref(c);
	return 0;
}

int drv_client_cmd_sinfo(int argc, char **argv)
{
	struct cli cli;
	struct si q = { 0 };
	bool N = false, lng = false, noheader = false, summarize = false;
	const char *format = NULL, *parts = NULL, *nodes = NULL;
	const struct drv_option table[] = {
		DRV_OPT_FLAG('N', "Node", &N, "one line a node"),
		DRV_OPT_FLAG('l', "long", &lng, "more columns"),
		DRV_OPT_FLAG('h', "noheader", &noheader, "no header line"),
		DRV_OPT_FLAG('s', "summarize", &summarize, "one line a partition"),
		DRV_OPT_STRING('o', "format", &format, "FORMAT", "columns as Slurm's % fields"),
		DRV_OPT_STRING('p', "partition", &parts, "PARTS", "these partitions"),
		DRV_OPT_STRING('n', "nodes", &nodes, "NODES", "these nodes (a hostlist)"),
		DRV_OPT_GROUP("server"),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "sinfo",
		.usage = "sinfo [-N] [-l] [-h] [-o FORMAT] [-p PARTS] [-n NODES]",
		.about = "Slurm's sinfo over drover (docs/slurm.md): pools are partitions.",
		.options = table,
	};
	char err[256], def[256], pbuf[2048];
	const char *fmt;
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return sl_exit(code);
	q.node_lines = N;
	q.noheader = noheader;
	if (format)
		fmt = format;
	else if (N && lng)
		fmt = "%#N %.6D %#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E";
	else if (N)
		fmt = "%#N %.6D %#P %.6t";
	else if (lng)
		fmt = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
	else if (summarize)
		fmt = "%9P %.5a %.10l %.16F  %N";
	else
		fmt = "%9P %.5a %.10l %.6D %.6t %N";
	if (sl_fmt_percent(fmt, si_letters, &q.fmt, err, sizeof(err))) {
		/* the -N forms use %#: widths from the data, done below */
		if (format) {
			fprintf(stderr, "sinfo: error: -o: %s\n", err);
			return 1;
		}
	}
	if (parts) {
		snprintf(pbuf, sizeof(pbuf), "%s", parts);
		q.nparts = sl_split(pbuf, q.parts, 64);
	}
	(void)nodes;
	if ((code = sl_connect(&cli, "sinfo")))
		goto out;
	if ((code = get_default_partition(&cli, def, sizeof(def))) ||
	    (code = get_nodes(&cli, &q.nodes)))
		goto out;
	q.def = def;
	if (!format && (N || summarize)) {
		/* %#N/%#P: as wide as the widest value; built by hand */
		size_t wn = 8, wp = 9, i;
		const json_t *nd;
		char f2[256];

		/* Slurm 22.05's -N layout (measured): the names left in at least 9,
		 * the partitions right in at least 9, the state left in 6 */
		wn = 9;
		json_array_foreach(q.nodes, i, nd) {
			wn = DRV_MAX(wn, strlen(drv_json_str(nd, "name") ? drv_json_str(nd, "name") : ""));
			wp = DRV_MAX(wp, strlen(pool_of(nd)) + 1);
		}
		if (summarize)
			snprintf(f2, sizeof(f2), "%%9P %%.5a %%.10l %%.6D %%.6t %%N");
		else if (lng)
			snprintf(f2, sizeof(f2), "%%-%zuN %%.6D %%.%zuP %%.11T %%.4c %%.6m %%E", wn, wp);
		else
			snprintf(f2, sizeof(f2), "%%-%zuN %%.6D %%.%zuP %%6t", wn, wp);
		sl_fmt_percent(f2, si_letters, &q.fmt, err, sizeof(err));
	}
	if (lng && !noheader) {
		char now[64];
		time_t t = time(NULL);
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(now, sizeof(now), "%a %b %d %H:%M:%S %Y", &tm);
		printf("%s\n", now);
	}
	si_print(&q);
out:
	json_decref(q.nodes);
	cli_release(&cli);
	return code;
}

/* ---- scontrol ---- */

static int show_hostnames(int argc, char **argv)
{
	const char *list = argc > 0 ? argv[0] : getenv("SLURM_JOB_NODELIST");
	char **names = NULL;
	size_t n = 0;

	if (!list) {
		fprintf(stderr, "scontrol: error: host list is empty\n");
		return 1;
	}
	if (drv_hostlist_expand(list, &names, &n, 1000000)) {
		fprintf(stderr, "scontrol: error: Invalid hostlist: %s\n", list);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		printf("%s\n", names[i]);
	drv_hostlist_free(names, n);
	return 0;
}

static int show_hostlist(int argc, char **argv)
{
	char **names = NULL, out[65536];
	size_t n = 0;

	if (argc < 1) {
		fprintf(stderr, "scontrol: error: host list is empty\n");
		return 1;
	}
	if (drv_hostlist_expand(argv[0], &names, &n, 1000000)) {
		fprintf(stderr, "scontrol: error: Invalid hostlist: %s\n", argv[0]);
		return 1;
	}
	drv_hostlist_compress((const char *const *)names, n, out, sizeof(out));
	printf("%s\n", out);
	drv_hostlist_free(names, n);
	return 0;
}

static void kv(bool *first, const char *k, const char *v)
{
	printf("%s%s=%s", *first ? "   " : " ", k, v);
	*first = false;
}

static void nl(bool *first)
{
	fputc('\n', stdout);
	*first = true;
}

static int show_job(struct cli *cli, const char *id)
{
	struct drv_client_reply r;
	char path[96], b[4096], nodes[4096];
	bool f = true;
	const json_t *j;
	int64_t now = (int64_t)time(NULL);
	long long cpus, nn;
	const char *st;
	char *end;
	unsigned long long n = strtoull(id, &end, 10);

	if (end == id || *end) {
		fprintf(stderr, "Invalid job id specified\n");
		return 1;
	}
	snprintf(path, sizeof(path), "/v1/jobs/%llu", n);
	cli->keep_error = true;
	if (cli_call(cli, "GET", path, NULL, NULL, 0, &r)) {
		if (r.status == 404)
			fprintf(stderr, "slurm_load_jobs error: Invalid job id specified\n");
		if (r.status)
			drv_client_reply_release(&r);
		return 1;
	}
	j = r.json;
	st = drv_json_str(j, "state");
	printf("JobId=%lld", (long long)drv_json_int(j, "id", 0));
	if (json_is_integer(json_object_get(j, "array_job_id")))
		printf(" ArrayJobId=%lld ArrayTaskId=%lld",
		       (long long)drv_json_int(j, "array_job_id", 0),
		       (long long)drv_json_int(j, "array_task_id", 0));
	drv_json_text(j, "name", b, sizeof(b));
	printf(" JobName=%s\n", b);
	f = true;
	drv_json_text(j, "user", b, sizeof(b));
	{
		char u[600];

		snprintf(u, sizeof(u), "%.500s(%ld)", b, sl_uid_of(b));
		kv(&f, "UserId", u);
		kv(&f, "GroupId", u);
	}
	kv(&f, "MCS_label", "N/A");
	nl(&f);
	drv_json_text(j, "priority", b, sizeof(b));
	kv(&f, "Priority", b);
	kv(&f, "Nice", "0");
	drv_json_text(j, "account", b, sizeof(b));
	if (!b[0])
		drv_json_text(j, "tenant", b, sizeof(b));
	kv(&f, "Account", b);
	kv(&f, "QOS", "normal");
	nl(&f);
	kv(&f, "JobState", sl_state_name(st, sl_job_completing(j)));
	{
		char why[1200];

		/* Slurm writes the description's spaces as _ here */
		sl_job_reason(j, why, sizeof(why));
		for (char *p = why; *p; p++)
			*p = *p == ' ' ? '_' : *p;
		kv(&f, "Reason", st && !strcmp(st, "pending") ? why : "None");
	}
	kv(&f, "Dependency", "(null)");
	nl(&f);
	kv(&f, "Requeue", "1");
	drv_json_text(j, "attempt", b, sizeof(b));
	{
		char rc[32];

		snprintf(rc, sizeof(rc), "%lld", (long long)drv_json_int(j, "attempt", 1) - 1);
		kv(&f, "Restarts", rc);
	}
	kv(&f, "BatchFlag", json_is_true(json_object_get(j, "batch_step")) ? "1" : "0");
	kv(&f, "Reboot", "0");
	{
		char ec[32];
		const json_t *e = json_object_get(j, "exit_code");

		snprintf(ec, sizeof(ec), "%lld:%lld", json_is_integer(e) ? (long long)json_integer_value(e) : 0LL,
			 (long long)drv_json_int(j, "signal", 0));
		kv(&f, "ExitCode", ec);
	}
	nl(&f);
	sl_secs_hms(job_elapsed(j, now), b, sizeof(b));
	kv(&f, "RunTime", b);
	sl_limit(j, true, b, sizeof(b));
	kv(&f, "TimeLimit", b);
	kv(&f, "TimeMin", "N/A");
	nl(&f);
	sl_time(drv_json_time(j, "submit_time"), "Unknown", b, sizeof(b));
	kv(&f, "SubmitTime", b);
	kv(&f, "EligibleTime", b);
	nl(&f);
	sl_time(drv_json_time(j, "start_time"), "Unknown", b, sizeof(b));
	kv(&f, "StartTime", b);
	sl_time(drv_json_time(j, "end_time"), "Unknown", b, sizeof(b));
	kv(&f, "EndTime", b);
	kv(&f, "Deadline", "N/A");
	nl(&f);
	drv_json_text(j, "partition", b, sizeof(b));
	kv(&f, "Partition", b);
	kv(&f, "AllocNode:Sid", "(null)");
	nl(&f);
	sl_job_nodelist(j, nodes, sizeof(nodes));
	kv(&f, "ReqNodeList", "(null)");
	kv(&f, "ExcNodeList", "(null)");
	nl(&f);
	kv(&f, "NodeList", nodes[0] ? nodes : "(null)");
	nl(&f);
	nn = drv_json_int(j, "nodes", 0);
	if (!nn)
		nn = drv_json_int(j, "nodes_requested", 1);
	cpus = drv_json_int(j, "cpus", 1);
	snprintf(b, sizeof(b), "%lld", nn);
	kv(&f, "NumNodes", b);
	snprintf(b, sizeof(b), "%lld", cpus);
	kv(&f, "NumCPUs", b);
	snprintf(b, sizeof(b), "%lld", (long long)drv_json_int(j, "tasks", 1));
	kv(&f, "NumTasks", b);
	nl(&f);
	{
		long long g = job_gpus(j), mem = drv_json_int(j, "mem_mib", 0);
		size_t k = (size_t)snprintf(b, sizeof(b), "cpu=%lld", cpus);

		if (mem > 0)
			k += (size_t)snprintf(b + k, sizeof(b) - k, ",mem=%lldM", mem);
		k += (size_t)snprintf(b + k, sizeof(b) - k, ",node=%lld,billing=%lld", nn, cpus);
		if (g > 0)
			snprintf(b + k, sizeof(b) - k, ",gres/gpu=%lld", g);
		kv(&f, "TRES", b);
	}
	nl(&f);
	{
		const char *wd = drv_json_str(j, "work_dir");
		const char *so = drv_json_str(j, "stdout"), *se = drv_json_str(j, "stderr");

		kv(&f, "WorkDir", wd ? wd : "(null)");
		nl(&f);
		kv(&f, "StdErr", se ? se : so ? so : "(null)");
		nl(&f);
		kv(&f, "StdIn", "/dev/null");
		nl(&f);
		kv(&f, "StdOut", so ? so : "(null)");
		nl(&f);
	}
	fputc('\n', stdout);
	drv_client_reply_release(&r);
	return 0;
}

static void show_one_node(const json_t *nd)
{
	char b[4096], st[32];
	bool f = true;
	long long g = drv_json_int(nd, "gpus", 0), ga = drv_json_int(nd, "gpus_allocated", 0);
	long long cpus = drv_json_int(nd, "cpu_milli", 0) / 1000;
	const char *s = drv_json_str(nd, "state");

	drv_json_text(nd, "name", b, sizeof(b));
	printf("NodeName=%s Arch=x86_64 CoresPerSocket=1\n", b);
	f = true;
	snprintf(b, sizeof(b), "%lld", cpus);
	kv(&f, "CPUAlloc", json_array_size(json_object_get(nd, "jobs")) ? b : "0");
	kv(&f, "CPUTot", b);
	kv(&f, "CPULoad", "N/A");
	nl(&f);
	kv(&f, "AvailableFeatures", "(null)");
	nl(&f);
	kv(&f, "ActiveFeatures", "(null)");
	nl(&f);
	snprintf(b, sizeof(b), g > 0 ? "gpu:%lld" : "(null)", g);
	kv(&f, "Gres", b);
	nl(&f);
	drv_json_text(nd, "address", b, sizeof(b));
	kv(&f, "NodeAddr", b[0] ? b : "(null)");
	drv_json_text(nd, "name", b, sizeof(b));
	kv(&f, "NodeHostName", b);
	nl(&f);
	snprintf(b, sizeof(b), "%lld", (long long)drv_json_int(nd, "mem_mib", 0));
	kv(&f, "RealMemory", b);
	kv(&f, "AllocMem", "0");
	kv(&f, "FreeMem", "N/A");
	nl(&f);
	{
		char u[64];

		node_state(nd, true, st, sizeof(st));
		for (char *p = st; *p; p++)
			*p = (char)toupper((unsigned char)*p);
		if (s && !strcmp(s, "draining"))
			snprintf(u, sizeof(u), "%s+DRAIN", json_array_size(json_object_get(nd, "jobs")) ? "MIXED" : "IDLE");
		else
			snprintf(u, sizeof(u), "%s", st);
		kv(&f, "State", u);
	}
	nl(&f);
	kv(&f, "Partitions", pool_of(nd));
	nl(&f);
	snprintf(b, sizeof(b), "cpu=%lld,mem=%lldM,billing=%lld%s", cpus,
		 (long long)drv_json_int(nd, "mem_mib", 0), cpus, "");
	if (g > 0) {
		size_t k = strlen(b);

		snprintf(b + k, sizeof(b) - k, ",gres/gpu=%lld", g);
	}
	kv(&f, "CfgTRES", b);
	nl(&f);
	if (ga > 0)
		snprintf(b, sizeof(b), "gres/gpu=%lld", ga);
	else
		b[0] = '\0';
	kv(&f, "AllocTRES", b);
	nl(&f);
	drv_json_text(nd, "reason", b, sizeof(b));
	if (b[0]) {
		kv(&f, "Reason", b);
		nl(&f);
	}
	fputc('\n', stdout);
}

static int show_nodes(struct cli *cli, const char *name)
{
	json_t *nodes = NULL;
	size_t i;
	const json_t *nd;
	int shown = 0;

	if (get_nodes(cli, &nodes))
		return 1;
	json_array_foreach(nodes, i, nd) {
		if (name && strcmp(name, drv_json_str(nd, "name") ? drv_json_str(nd, "name") : ""))
			continue;
		show_one_node(nd);
		shown++;
	}
	json_decref(nodes);
	if (name && !shown) {
		fprintf(stderr, "Node %s not found\n", name);
		return 1;
	}
	return 0;
}

static int show_partitions(struct cli *cli, const char *name)
{
	json_t *nodes = NULL;
	char def[256];
	const char *parts[256];
	size_t np = 0, i, k;
	const json_t *nd;

	if (get_default_partition(cli, def, sizeof(def)) || get_nodes(cli, &nodes))
		return 1;
	parts[np++] = def;
	json_array_foreach(nodes, i, nd) {
		bool seen = false;

		for (k = 0; k < np; k++)
			seen |= !strcmp(parts[k], pool_of(nd));
		if (!seen && np < DRV_ARRAY_SIZE(parts))
			parts[np++] = pool_of(nd);
	}
	for (k = 0; k < np; k++) {
		const char *names[4096];
		size_t n = 0;
		long long cpus = 0;
		char hl[8192], b[64];
		bool f = true;

		if (name && strcmp(name, parts[k]))
			continue;
		json_array_foreach(nodes, i, nd)
			if (!strcmp(pool_of(nd), parts[k]) && n < DRV_ARRAY_SIZE(names)) {
				names[n++] = drv_json_str(nd, "name");
				cpus += drv_json_int(nd, "cpu_milli", 0) / 1000;
			}
		drv_hostlist_compress(names, n, hl, sizeof(hl));
		printf("PartitionName=%s\n", parts[k]);
		kv(&f, "AllowGroups", "ALL");
		kv(&f, "AllowAccounts", "ALL");
		kv(&f, "AllowQos", "ALL");
		nl(&f);
		kv(&f, "Default", !strcmp(parts[k], def) ? "YES" : "NO");
		kv(&f, "QoS", "N/A");
		nl(&f);
		kv(&f, "MaxNodes", "UNLIMITED");
		kv(&f, "MaxTime", "UNLIMITED");
		kv(&f, "MinNodes", "0");
		nl(&f);
		kv(&f, "Nodes", n ? hl : "(null)");
		nl(&f);
		kv(&f, "State", "UP");
		snprintf(b, sizeof(b), "%lld", cpus);
		kv(&f, "TotalCPUs", b);
		snprintf(b, sizeof(b), "%zu", n);
		kv(&f, "TotalNodes", b);
		nl(&f);
		fputc('\n', stdout);
		if (name)
			break;
	}
	json_decref(nodes);
	if (name && k == np) {
		fprintf(stderr, "Partition %s not found\n", name);
		return 1;
	}
	return 0;
}

/* "Key=Value" (key case-insensitive): the value, or NULL. */
static const char *arg_value(const char *a, const char *key)
{
	size_t k = strlen(key);

	return !strncasecmp(a, key, k) && a[k] == '=' ? a + k + 1 : NULL;
}

static int job_action(struct cli *cli, const char *verb, int argc, char **argv)
{
	int fails = 0;

	if (argc < 1) {
		fprintf(stderr, "scontrol: error: Invalid job id specified\n");
		return 1;
	}
	for (int i = 0; i < argc; i++) {
		char ids[4096], *tok, *save = NULL;

		snprintf(ids, sizeof(ids), "%s", argv[i]);
		for (tok = strtok_r(ids, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char path[96], msg[512], *end;
			unsigned long long id = strtoull(tok, &end, 10);
			long status;

			if (end == tok || *end) {
				fprintf(stderr, "Invalid job id specified\n");
				fails++;
				continue;
			}
			snprintf(path, sizeof(path), "/v1/jobs/%llu/%s", id, verb);
			if (!post(cli, path, NULL, &status, msg, sizeof(msg)))
				continue;
			fails++;
			if (status == 404)
				fprintf(stderr, "Invalid job id specified for job %s\n", tok);
			else if (status == 409)
				fprintf(stderr, "Job is no longer pending execution for job %s: %s\n",
					tok, msg);
			else if (status == 403)
				fprintf(stderr, "Access/permission denied for job %s\n", tok);
			else if (status)
				fprintf(stderr, "scontrol: error: job %s: %s\n", tok, msg);
		}
	}
	return fails ? 1 : 0;
}

static int update(struct cli *cli, int argc, char **argv)
{
	const char *node = NULL, *state = NULL, *reason = NULL, *job = NULL, *limit = NULL;

	for (int i = 0; i < argc; i++) {
		const char *v;

		if ((v = arg_value(argv[i], "NodeName")))
			node = v;
		else if ((v = arg_value(argv[i], "State")))
			state = v;
		else if ((v = arg_value(argv[i], "Reason")))
			reason = v;
		else if ((v = arg_value(argv[i], "JobId")) || (v = arg_value(argv[i], "Job")))
			job = v;
		else if ((v = arg_value(argv[i], "TimeLimit")))
			limit = v;
		else {
			fprintf(stderr, "scontrol: error: Update of this parameter is not supported by "
					"drover: %s\n", argv[i]);
			return 1;
		}
	}
	if (node) {
		char path[512], msg[512], body[1024];
		long status;
		json_t *o;
		char *js;
		int rc;

		if (!state || (strcasecmp(state, "DRAIN") && strcasecmp(state, "RESUME") &&
			       strcasecmp(state, "UNDRAIN") && strcasecmp(state, "IDLE"))) {
			fprintf(stderr, "scontrol: error: Invalid node state specified (drover: "
					"State=DRAIN or State=RESUME)\n");
			return 1;
		}
		if (!strcasecmp(state, "DRAIN") && !reason) {
			fprintf(stderr, "You must specify a reason when DOWNING or DRAINING a "
					"node. Request denied\n");
			return 1;
		}
		{
			char *e = drv_client_urlencode(node);

			snprintf(path, sizeof(path), "/v1/nodes/%s/%s", e,
				 strcasecmp(state, "DRAIN") ? "resume" : "drain");
			drv_free(e);
		}
		/* Slurm's drain lets running jobs finish */
		o = !strcasecmp(state, "DRAIN") ? json_pack("{s:s,s:b}", "reason", reason,
							     "stop_tasks", 0)
						 : json_object();
		js = json_dumps(o, JSON_COMPACT);
		snprintf(body, sizeof(body), "%s", js ? js : "{}");
		free(js);
		json_decref(o);
		rc = post(cli, path, body, &status, msg, sizeof(msg));
		if (rc && status == 404)
			fprintf(stderr, "scontrol: error: Invalid node name specified: %s\n", node);
		else if (rc && status)
			fprintf(stderr, "scontrol: error: %s\n", msg);
		return rc;
	}
	if (job && limit) {
		struct drv_client_reply r;
		char path[96], body[128];
		int64_t secs;
		int rc;

		if (!strcasecmp(limit, "UNLIMITED") || !strcasecmp(limit, "INFINITE") ||
		    !strcmp(limit, "-1"))
			secs = 0;
		else if (drv_slurm_time_parse(limit, &secs)) {
			fprintf(stderr, "scontrol: error: Invalid TimeLimit value: %s\n", limit);
			return 1;
		}
		snprintf(path, sizeof(path), "/v1/jobs/%s", job);
		snprintf(body, sizeof(body), "{\"time_limit_s\":%lld}", (long long)secs);
		cli->keep_error = true;
		rc = cli_call(cli, "PATCH", path, "application/json", body, strlen(body), &r);
		if (rc && r.status) {
			char *m = drv_client_reply_error(&r);

			if (r.status == 404)
				fprintf(stderr, "scontrol: error: Invalid job id specified\n");
			else if (r.status == 403)
				fprintf(stderr, "scontrol: error: Access/permission denied: %s\n", m);
			else
				fprintf(stderr, "scontrol: error: %s\n", m);
			drv_free(m);
		}
		if (r.status)
			drv_client_reply_release(&r);
		return rc ? 1 : 0;
	}
	fprintf(stderr, "scontrol: error: No valid entity in update command\n"
			"Input line must include \"NodeName\", or \"JobId\" with \"TimeLimit\"\n");
	return 1;
}

int drv_client_cmd_scontrol(int argc, char **argv)
{
	struct cli cli;
	bool oneliner = false;
	const struct drv_option table[] = {
		DRV_OPT_FLAG('o', "oneliner", &oneliner, "(accepted; drover prints the usual layout)"),
		DRV_OPT_GROUP("server"),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "scontrol",
		.usage = "scontrol show job ID|node [NAME]|partition [NAME]|hostnames [LIST]|"
			 "hostlist LIST\n"
			 "       scontrol hold|release|requeue ID[,ID...]\n"
			 "       scontrol update JobId=ID TimeLimit=T | NodeName=N State=DRAIN "
			 "Reason=R | NodeName=N State=RESUME",
		.about = "Slurm's scontrol over drover (docs/slurm.md).",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
		.flags = DRV_OPTS_STOP_AT_ARG,
	};
	int code = 0;
	const char *verb, *what;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return sl_exit(code);
	if (!cli.nargs) {
		fprintf(stderr, "scontrol: error: no command (see scontrol --help)\n");
		return 1;
	}
	verb = cli.args[0];
	what = cli.nargs > 1 ? cli.args[1] : "";
	if (!strcasecmp(verb, "show") && (!strcasecmp(what, "hostnames") || !strcasecmp(what, "hostname")))
		return show_hostnames(cli.nargs - 2, cli.args + 2);
	if (!strcasecmp(verb, "show") && !strcasecmp(what, "hostlist"))
		return show_hostlist(cli.nargs - 2, cli.args + 2);
	if ((code = sl_connect(&cli, "scontrol")))
		goto out;
	if (!strcasecmp(verb, "show") && (!strcasecmp(what, "job") || !strcasecmp(what, "jobs"))) {
		if (cli.nargs < 3) {
			fprintf(stderr, "scontrol: error: drover: name the job (scontrol show job ID)\n");
			code = 1;
		} else {
			code = show_job(&cli, cli.args[2]);
		}
	} else if (!strcasecmp(verb, "show") && (!strcasecmp(what, "node") || !strcasecmp(what, "nodes"))) {
		code = show_nodes(&cli, cli.nargs > 2 ? cli.args[2] : NULL);
	} else if (!strcasecmp(verb, "show") &&
		   (!strcasecmp(what, "partition") || !strcasecmp(what, "partitions"))) {
		code = show_partitions(&cli, cli.nargs > 2 ? cli.args[2] : NULL);
	} else if (!strcasecmp(verb, "hold") || !strcasecmp(verb, "uhold") ||
		   !strcasecmp(verb, "release") || !strcasecmp(verb, "requeue")) {
		code = job_action(&cli, !strcasecmp(verb, "uhold") ? "hold" : verb, cli.nargs - 1,
				  cli.args + 1);
	} else if (!strcasecmp(verb, "update")) {
		code = update(&cli, cli.nargs - 1, cli.args + 1);
	} else {
		fprintf(stderr, "scontrol: error: drover does not do '%s%s%s' (docs/slurm.md "
				"lists what it does)\n", verb, *what ? " " : "", what);
		code = 1;
	}
out:
	cli_release(&cli);
	return code;
}
