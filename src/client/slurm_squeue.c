/*
 * slurm_squeue.c: the squeue face. Slurm's default columns and widths
 * ("%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"), state codes as
 * CONTRACTS.md section 1 maps them, -o/--format with Slurm's % letters and
 * -O/--Format with field names, and the filters tools use (-j -u --me -t
 * -p -n). Unfinished jobs come from GET /v1/queue; a job named with -j,
 * or a finished state asked with -t, from GET /v1/jobs: a finished job is
 * shown for the server's min_job_age_s after it ended, as Slurm's
 * MinJobAge; after that (or for an id drover never gave) squeue says
 * "slurm_load_jobs error: Invalid job id specified" and exits 1, which is
 * what tools that poll `squeue -h -j ID` wait for.
 */
#include "slurm_int.h"

#include "drover/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define SQ_DEFAULT "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
#define SQ_START "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %R"

static const struct sl_letter letters[] = {
	{ 'i', "jobid", "JOBID" },        { 'A', "jobid_raw", "JOBID" },
	{ 'F', "array_job_id", "ARRAY_JOB_ID" }, { 'K', "array_task_id", "ARRAY_TASK_ID" },
	{ 'a', "account", "ACCOUNT" },    { 'j', "name", "NAME" },
	{ 'u', "user", "USER" },          { 'T', "state", "STATE" },
	{ 't', "st", "ST" },              { 'M', "time", "TIME" },
	{ 'l', "time_limit", "TIME_LIMIT" }, { 'L', "time_left", "TIME_LEFT" },
	{ 'D', "nodes", "NODES" },        { 'C', "cpus", "CPUS" },
	{ 'b', "tres_per_node", "TRES_PER_NODE" }, { 'R', "reason_list", "NODELIST(REASON)" },
	{ 'r', "reason", "REASON" },      { 'P', "partition", "PARTITION" },
	{ 'N', "nodelist", "NODELIST" },  { 'S', "start", "START_TIME" },
	{ 'V', "submit", "SUBMIT_TIME" }, { 'e', "end", "END_TIME" },
	{ 'Q', "priority", "PRIORITY" },  { 'k', "comment", "COMMENT" },
	{ 0, NULL, NULL },
};

/* -O names: Slurm's, each 20 wide, left-aligned. */
static const struct sl_name names[] = {
	{ "JobID", "jobid_raw", "JOBID", -20 },      { "JobArrayID", "jobid", "JOBID", -20 },
	{ "ArrayJobID", "array_job_id", "ARRAY_JOB_ID", -20 },
	{ "ArrayTaskID", "array_task_id", "ARRAY_TASK_ID", -20 },
	{ "Name", "name", "NAME", -20 },             { "UserName", "user", "USER", -20 },
	{ "State", "state", "STATE", -20 },          { "StateCompact", "st", "ST", -20 },
	{ "TimeUsed", "time", "TIME", -20 },         { "TimeLimit", "time_limit", "TIME_LIMIT", -20 },
	{ "TimeLeft", "time_left", "TIME_LEFT", -20 }, { "NumNodes", "nodes", "NODES", -20 },
	{ "NumCPUs", "cpus", "CPUS", -20 },          { "tres-per-node", "tres_per_node", "TRES_PER_NODE", -20 },
	{ "ReasonList", "reason_list", "NODELIST(REASON)", -20 },
	{ "Reason", "reason", "REASON", -20 },       { "Partition", "partition", "PARTITION", -20 },
	{ "NodeList", "nodelist", "NODELIST", -20 }, { "StartTime", "start", "START_TIME", -20 },
	{ "SubmitTime", "submit", "SUBMIT_TIME", -20 }, { "EndTime", "end", "END_TIME", -20 },
	{ "Priority", "priority", "PRIORITY", -20 }, { "Comment", "comment", "COMMENT", -20 },
	{ "Account", "account", "ACCOUNT", -20 },    { NULL, NULL, NULL, 0 },
};

static const char *header_of(const char *field)
{
	for (const struct sl_letter *l = letters; l->letter; l++)
		if (!strcmp(l->field, field))
			return l->header;
	return field;
}

/* squeue's %b: the GPUs each node of the job holds, "gres:gpu:4". */
static void tres_per_node(const json_t *job, char *buf, size_t n)
{
	long long g = job_gpus(job), tasks = drv_json_int(job, "tasks", 1);

	if (g <= 0 || tasks <= 0)
		snprintf(buf, n, "N/A");
	else
		snprintf(buf, n, "gres:gpu:%lld", g / tasks ? g / tasks : g);
}

static bool pending(const json_t *job)
{
	const char *st = drv_json_str(job, "state");

	return st && !strcmp(st, "pending");
}

static void value(const json_t *job, const char *f, int64_t now, char *buf, size_t n)
{
	const char *st = drv_json_str(job, "state");
	bool cg = sl_job_completing(job);
	int64_t start = drv_json_time(job, "start_time"), lim = drv_json_int(job, "time_limit_s", 0);

	buf[0] = '\0';
	if (!strcmp(f, "jobid") && drv_json_str(job, "_pending_tasks")) {
		snprintf(buf, n, "%lld_[%s]", (long long)drv_json_int(job, "array_job_id", 0),
			 drv_json_str(job, "_pending_tasks"));
	} else if (!strcmp(f, "array_task_id") && drv_json_str(job, "_pending_tasks")) {
		snprintf(buf, n, "%s", drv_json_str(job, "_pending_tasks"));
	} else if (!strcmp(f, "jobid")) {
		sl_job_id(job, buf, n);
	} else if (!strcmp(f, "jobid_raw")) {
		snprintf(buf, n, "%lld", (long long)drv_json_int(job, "id", 0));
	} else if (!strcmp(f, "array_job_id")) {
		const json_t *a = json_object_get(job, "array_job_id");

		snprintf(buf, n, "%lld", json_is_integer(a) ? (long long)json_integer_value(a)
							     : (long long)drv_json_int(job, "id", 0));
	} else if (!strcmp(f, "array_task_id")) {
		if (json_is_integer(json_object_get(job, "array_task_id")))
			snprintf(buf, n, "%lld", (long long)drv_json_int(job, "array_task_id", 0));
		else
			snprintf(buf, n, "N/A");
	} else if (!strcmp(f, "name") || !strcmp(f, "user") || !strcmp(f, "partition") ||
		   !strcmp(f, "priority")) {
		drv_json_text(job, f, buf, n);
	} else if (!strcmp(f, "account")) {
		drv_json_text(job, "account", buf, n);
		if (!buf[0])
			drv_json_text(job, "tenant", buf, n);
	} else if (!strcmp(f, "state")) {
		snprintf(buf, n, "%s", sl_state_name(st, cg));
	} else if (!strcmp(f, "st")) {
		snprintf(buf, n, "%s", sl_state_code(st, cg));
	} else if (!strcmp(f, "time")) {
		sl_secs_short(job_elapsed(job, now), buf, n);
	} else if (!strcmp(f, "time_limit")) {
		sl_limit(job, false, buf, n);
	} else if (!strcmp(f, "time_left")) {
		if (lim <= 0)
			snprintf(buf, n, "UNLIMITED");
		else
			sl_secs_short(lim - job_elapsed(job, now), buf, n);
	} else if (!strcmp(f, "nodes")) {
		long long nn = drv_json_int(job, "nodes", 0);

		snprintf(buf, n, "%lld", nn ? nn : (long long)drv_json_int(job, "nodes_requested", 1));
	} else if (!strcmp(f, "cpus")) {
		snprintf(buf, n, "%lld", (long long)drv_json_int(job, "cpus", 1));
	} else if (!strcmp(f, "tres_per_node")) {
		tres_per_node(job, buf, n);
	} else if (!strcmp(f, "reason")) {
		const char *code = drv_json_str(job, "reason_code");

		snprintf(buf, n, "%s", pending(job) && code ? code : "None");
	} else if (!strcmp(f, "reason_list")) {
		char why[1200];

		if (pending(job))
			snprintf(buf, n, "(%s)", sl_job_reason(job, why, sizeof(why)));
		else
			sl_job_nodelist(job, buf, n);
	} else if (!strcmp(f, "nodelist")) {
		sl_job_nodelist(job, buf, n);
	} else if (!strcmp(f, "start")) {
		sl_time(start, "N/A", buf, n);
	} else if (!strcmp(f, "submit")) {
		sl_time(drv_json_time(job, "submit_time"), "N/A", buf, n);
	} else if (!strcmp(f, "end")) {
		int64_t end = drv_json_time(job, "end_time");

		sl_time(end ? end : start && lim > 0 ? start + lim : 0, "N/A", buf, n);
	} else if (!strcmp(f, "comment")) {
		snprintf(buf, n, "(null)");
	}
}

struct sq {
	struct sl_fmt fmt;
	const char *users[64], *states[32], *parts[64], *jnames[64];
	int nusers, nstates, nparts, njnames;
	bool never;        /* -t S: matches nothing drover shows */
	bool noheader;
	int64_t now, min_age;
	json_t *rows;      /* the jobs to print, in order */
	json_t *throttle;  /* array parent id -> its %N limit, from the listing */
};

static bool in_list(const char *v, const char *const *list, int n)
{
	for (int i = 0; i < n; i++)
		if (v && !strcmp(v, list[i]))
			return true;
	return false;
}

static bool match(const struct sq *q, const json_t *job, bool by_id)
{
	const char *st = drv_json_str(job, "state");
	bool final = st && strcmp(st, "pending") && strcmp(st, "scheduled") && strcmp(st, "running");

	if (json_is_object(json_object_get(job, "elements")))
		return false;   /* a parent: its elements are the jobs (CONTRACTS.md section 2) */
	if (q->never)
		return false;
	if (q->nusers && !in_list(drv_json_str(job, "user"), q->users, q->nusers))
		return false;
	if (q->nparts && !in_list(drv_json_str(job, "partition"), q->parts, q->nparts))
		return false;
	if (q->njnames && !in_list(drv_json_str(job, "name"), q->jnames, q->njnames))
		return false;
	if (q->nstates) {
		const char *s = sl_job_completing(job) ? "completing" : st;

		if (!in_list(s, q->states, q->nstates))
			return false;
	} else if (final && !by_id && !sl_job_completing(job)) {
		return false;   /* squeue's default: pending, running, completing */
	}
	if (final && !sl_job_completing(job) &&
	    drv_json_time(job, "end_time") + q->min_age < q->now)
		return false;   /* past MinJobAge: gone from squeue */
	return true;
}

static int add_row(const json_t *job, void *cls)
{
	struct sq *q = cls;
	const char *spec = drv_json_str(json_object_get(job, "elements"), "array");

	if (spec && strchr(spec, '%')) {
		char key[32];

		snprintf(key, sizeof(key), "%lld", (long long)drv_json_int(job, "id", 0));
		json_object_set_new(q->throttle, key, json_string(strchr(spec, '%')));
	}
	if (match(q, job, false))
		json_array_append(q->rows, (json_t *)job);
	return 0;
}

/* "3-5,7,9-10" from the sorted ids v (n of them) into buf. */
static void id_ranges(const long long *v, size_t n, char *buf, size_t bn)
{
	size_t len = 0, i = 0;

	buf[0] = '\0';
	while (i < n && len < bn) {
		size_t k = i;

		while (k + 1 < n && v[k + 1] == v[k] + 1)
			k++;
		len += (size_t)snprintf(buf + len, bn - len, k > i ? "%s%lld-%lld" : "%s%lld",
					len ? "," : "", v[i], v[k]);
		i = k + 1;
	}
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/*
 * Slurm's squeue shows the pending tasks of an array as one line,
 * P_[3-15%4] (%K: 3-15%4), where the started ones have a line each; -r
 * (and --array-unique) asks for a line each. The line stands where the
 * first of them would.
 */
static void collapse_pending(struct sq *q)
{
	json_t *out = json_array(), *at = json_object(), *job;
	size_t i;

	json_array_foreach(q->rows, i, job) {
		const json_t *p = json_object_get(job, "array_job_id");
		char key[32];
		json_t *ids;

		if (!pending(job) || !json_is_integer(p) ||
		    !json_is_integer(json_object_get(job, "array_task_id"))) {
			json_array_append(out, job);
			continue;
		}
		snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(p));
		ids = json_object_get(at, key);
		if (!ids) {
			ids = json_array();
			json_object_set_new(at, key, ids);
			json_array_append_new(out, json_pack("{s:O,s:O}", "row", job, "ids", ids));
		}
		json_array_append_new(ids, json_integer(drv_json_int(job, "array_task_id", 0)));
	}
	json_array_foreach(out, i, job) {
		const json_t *row = json_object_get(job, "row"), *ids = json_object_get(job, "ids");
		size_t n = json_array_size(ids);
		long long *v;
		char list[2048], key[32];
		const char *thr;
		json_t *r;

		if (!row)
			continue;
		if (n < 2) {
			json_array_set(out, i, (json_t *)row);
			continue;
		}
		v = drv_calloc(n, sizeof(*v));
		for (size_t k = 0; k < n; k++)
			v[k] = (long long)json_integer_value(json_array_get(ids, k));
		qsort(v, n, sizeof(*v), cmp_ll);
		id_ranges(v, n, list, sizeof(list) - 16);
		drv_free(v);
		snprintf(key, sizeof(key), "%lld", (long long)drv_json_int(row, "array_job_id", 0));
		thr = drv_json_str(q->throttle, key);
		if (thr)
			snprintf(list + strlen(list), 16, "%s", thr);
		r = json_copy((json_t *)row);
		json_object_set_new(r, "_pending_tasks", json_string(list));
		json_array_set_new(out, i, r);
	}
	json_decref(at);
	json_decref(q->rows);
	q->rows = out;
}

static void print(const struct sq *q)
{
	char v[4096];
	size_t i;
	const json_t *job;

	if (!q->noheader) {
		for (int c = 0; c < q->fmt.ncols; c++)
			sl_cell(stdout, &q->fmt.cols[c], header_of(q->fmt.cols[c].field), true);
		fputs(q->fmt.suffix, stdout);
		fputc('\n', stdout);
	}
	json_array_foreach(q->rows, i, job) {
		for (int c = 0; c < q->fmt.ncols; c++) {
			value(job, q->fmt.cols[c].field, q->now, v, sizeof(v));
			sl_cell(stdout, &q->fmt.cols[c], v, true);
		}
		fputs(q->fmt.suffix, stdout);
		fputc('\n', stdout);
	}
}

static int by_ids(struct cli *cli, struct sq *q, char *ids)
{
	const char *list[256];
	int n = sl_split(ids, list, 256), found = 0;

	for (int i = 0; i < n; i++) {
		struct drv_client_reply r;
		char path[128], *us = strchr(list[i], '_');
		char *end;
		unsigned long long id = strtoull(list[i], &end, 10);
		int rc;

		if (end == list[i] || (*end && *end != '_')) {
			fprintf(stderr, "squeue: error: Invalid job id: %s\n", list[i]);
			return 1;
		}
		(void)us;
		snprintf(path, sizeof(path), "/v1/jobs/%llu", id);
		cli->keep_error = true;
		rc = cli_call(cli, "GET", path, NULL, NULL, 0, &r);
		if (rc && r.status == 404) {
			drv_client_reply_release(&r);
			continue;
		}
		if (rc && r.status) {
			char *m = drv_client_reply_error(&r);

			fprintf(stderr, "squeue: error: %s\n", m);
			drv_free(m);
			drv_client_reply_release(&r);
			return 1;
		}
		if (rc)
			return 1;
		if (*end == '_' && json_is_object(json_object_get(r.json, "elements"))) {
			/* an array element by its parent's id: P_I */
			unsigned long long e = sl_array_element(r.json, strtoll(end + 1, NULL, 10));

			drv_client_reply_release(&r);
			if (!e)
				continue;
			snprintf(path, sizeof(path), "/v1/jobs/%llu", e);
			cli->keep_error = true;
			rc = cli_call(cli, "GET", path, NULL, NULL, 0, &r);
			if (rc) {
				long st = r.status;

				drv_client_reply_release(&r);
				if (st == 404)
					continue;
				return 1;
			}
		}
		if (*end == '_') {
			const json_t *a = json_object_get(r.json, "array_job_id");

			if (!json_is_integer(a) || drv_json_int(r.json, "array_task_id", -1) !=
							   strtoll(end + 1, NULL, 10)) {
				drv_client_reply_release(&r);
				continue;
			}
		}
		{
			const char *st = drv_json_str(r.json, "state");
			bool final = st && strcmp(st, "pending") && strcmp(st, "scheduled") &&
				     strcmp(st, "running");

			if (final && q->min_age < 0) {
				json_t *c = NULL;

				if (sl_cluster(cli, &c)) {
					drv_client_reply_release(&r);
					return 1;
				}
				q->min_age = drv_json_int(c, "min_job_age_s", 300);
				json_decref(c);
			}
			if (final && !sl_job_completing(r.json) &&
			    drv_json_time(r.json, "end_time") + q->min_age < q->now) {
				drv_client_reply_release(&r);
				continue;
			}
		}
		found++;
		if (match(q, r.json, true))
			json_array_append(q->rows, r.json);
		drv_client_reply_release(&r);
	}
	if (!found) {
		fprintf(stderr, "slurm_load_jobs error: Invalid job id specified\n");
		return 1;
	}
	return 0;
}

int drv_client_cmd_squeue(int argc, char **argv)
{
	struct cli cli;
	struct sq q = { .min_age = -1 };
	bool noheader = false, me = false, start = false, array = false, raw = false, lng = false;
	const char *jobs = NULL, *users = NULL, *states = NULL, *parts = NULL, *jnames = NULL,
		   *format = NULL, *Format = NULL;
	const struct drv_option table[] = {
		DRV_OPT_FLAG('h', "noheader", &noheader, "no header line"),
		DRV_OPT_STRING('j', "jobs", &jobs, "IDS", "these jobs (comma list; P_I for an array element)"),
		DRV_OPT_STRING('u', "user", &users, "USERS", "these users' jobs (comma list)"),
		DRV_OPT_FLAG(0, "me", &me, "my jobs"),
		DRV_OPT_STRING('t', "states", &states, "STATES", "these states (codes or names, comma list; all)"),
		DRV_OPT_STRING('p', "partition", &parts, "PARTS", "these partitions (comma list)"),
		DRV_OPT_STRING('n', "name", &jnames, "NAMES", "jobs of these names (comma list)"),
		DRV_OPT_FLAG(0, "start", &start, "pending jobs with their expected start"),
		DRV_OPT_STRING('o', "format", &format, "FORMAT", "columns as Slurm's % fields"),
		DRV_OPT_STRING('O', "Format", &Format, "FIELDS", "columns by name (Name[:width],...)"),
		DRV_OPT_FLAG('r', "array", &array, "one line per array element (pending ones too)"),
		DRV_OPT_FLAG(0, "array-unique", &raw, "the same as -r"),
		DRV_OPT_FLAG('l', "long", &lng, "more columns"),
		DRV_OPT_GROUP("server"),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "squeue",
		.usage = "squeue [-h] [-j IDS] [-u USERS|--me] [-t STATES] [-p PARTS] [-n NAMES] "
			 "[--start] [-o FORMAT|-O FIELDS]",
		.about = "Slurm's squeue over drover (docs/slurm.md).",
		.options = table,
	};
	char err[256], ubuf[2048], sbuf[512], pbuf[2048], nbuf[2048], jbuf[4096];
	int code = 0, rc;
	const char *qpath = "/v1/queue";

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return sl_exit(code);
	q.noheader = noheader;
	q.now = (int64_t)time(NULL);
	q.rows = json_array();
	q.throttle = json_object();
	if (Format)
		rc = sl_fmt_names(Format, names, ',', &q.fmt, err, sizeof(err));
	else
		rc = sl_fmt_percent(format ? format : start ? SQ_START
					    : lng ? "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
						  : SQ_DEFAULT,
				    letters, &q.fmt, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "squeue: error: %s: %s\n", Format ? "-O" : "-o", err);
		code = 1;
		goto out;
	}
	if (users) {
		snprintf(ubuf, sizeof(ubuf), "%s", users);
		q.nusers = sl_split(ubuf, q.users, 64);
	}
	if (me) {
		const char *u = getenv("USER");

		if (u && q.nusers < 64)
			q.users[q.nusers++] = u;
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
		const char *words[32];
		bool any_never = false;
		int n;

		snprintf(sbuf, sizeof(sbuf), "%s", states);
		n = sl_split(sbuf, words, 32);
		for (int i = 0; i < n; i++) {
			bool never;
			const char *s = !strcasecmp(words[i], "all") ? NULL : sl_state_parse(words[i], &never);

			if (!strcasecmp(words[i], "all")) {
				static const char *const every[] = {
					"pending", "scheduled", "running", "completing", "succeeded",
					"failed", "cancelled", "preempted", "timeout", "out_of_memory",
					"node_fail" };
				for (size_t k = 0; k < DRV_ARRAY_SIZE(every) && q.nstates < 32; k++)
					q.states[q.nstates++] = every[k];
				continue;
			}
			if (!s && !never) {
				fprintf(stderr, "squeue: error: Invalid job state specified: %s\n"
						"squeue: error: Valid job states include: PENDING,RUNNING,"
						"SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL,"
						"PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,"
						"CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,"
						"REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,"
						"STOPPED\n", words[i]);
				code = 1;
				goto out;
			}
			any_never |= never;
			if (s)
				q.states[q.nstates++] = s;
		}
		/* only states drover never shows (S, SUSPENDED): nothing matches */
		if (any_never && !q.nstates)
			q.never = true;
	}
	if (start && !q.nstates)
		q.states[q.nstates++] = "pending";
	if ((code = sl_connect(&cli, "squeue")))
		goto out;
	if (jobs) {
		snprintf(jbuf, sizeof(jbuf), "%s", jobs);
		code = by_ids(&cli, &q, jbuf);
		if (!code)
			print(&q);
		goto out;
	}
	code = sl_each_job(&cli, qpath, add_row, &q);
	if (!code && !array && !raw)
		collapse_pending(&q);
	if (!code && q.nstates) {
		/* finished states: the store's recent ones */
		bool fin = false;

		for (int i = 0; i < q.nstates; i++)
			fin |= strcmp(q.states[i], "pending") && strcmp(q.states[i], "scheduled") &&
			       strcmp(q.states[i], "running") && strcmp(q.states[i], "preempted") &&
			       strcmp(q.states[i], "completing");
		if (fin) {
			json_t *c = NULL;

			if ((code = sl_cluster(&cli, &c)))
				goto out;
			q.min_age = drv_json_int(c, "min_job_age_s", 300);
			json_decref(c);
			code = sl_each_job(&cli, "/v1/jobs?state=succeeded,failed,cancelled,timeout,"
						 "out_of_memory,node_fail", add_row, &q);
		}
	}
	if (!code)
		print(&q);
out:
	json_decref(q.rows);
	json_decref(q.throttle);
	cli_release(&cli);
	return code;
}
