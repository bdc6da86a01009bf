/*
 * slurm_sacct.c: the sacct face, from drover's store (GET /v1/jobs pages:
 * finished jobs included). One line a job, and one a step below it unless
 * -X: ID.batch for a job from a batch script once it started, and ID.N
 * for each step the server lists. -o/--format with Slurm's field names
 * (and drover's CostUSD), -P/-p parsable, -n, -j, -S/-E, -s, -u, --name,
 * -a. States in Slurm's words (CANCELLED by UID), ExitCode as code:signal.
 * The column widths and alignment are sacct's (22.05): JobID left in 12,
 * most others right in 10, a value too wide cut with "+".
 */
#include "slurm_int.h"

#include "drover/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define SA_DEFAULT "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"

static const struct sl_name names[] = {
	{ "JobID", "JobID", "JobID", -12 },
	{ "JobIDRaw", "JobIDRaw", "JobIDRaw", -12 },
	{ "JobName", "JobName", "JobName", 10 },
	{ "User", "User", "User", 9 },
	{ "UID", "UID", "UID", 6 },
	{ "Account", "Account", "Account", 10 },
	{ "Partition", "Partition", "Partition", 10 },
	{ "State", "State", "State", 10 },
	{ "ExitCode", "ExitCode", "ExitCode", 8 },
	{ "DerivedExitCode", "DerivedExitCode", "DerivedExitCode", 15 },
	{ "Elapsed", "Elapsed", "Elapsed", 10 },
	{ "ElapsedRaw", "ElapsedRaw", "ElapsedRaw", 10 },
	{ "Start", "Start", "Start", 19 },
	{ "End", "End", "End", 19 },
	{ "Submit", "Submit", "Submit", 19 },
	{ "NNodes", "NNodes", "NNodes", 8 },
	{ "AllocNodes", "NNodes", "AllocNodes", 10 },
	{ "ReqNodes", "ReqNodes", "ReqNodes", 8 },
	{ "NCPUS", "NCPUS", "NCPUS", 10 },
	{ "AllocCPUS", "NCPUS", "AllocCPUS", 10 },
	{ "ReqCPUS", "ReqCPUS", "ReqCPUS", 8 },
	{ "NodeList", "NodeList", "NodeList", -15 },
	{ "AllocTRES", "AllocTRES", "AllocTRES", -10 },
	{ "ReqTRES", "ReqTRES", "ReqTRES", -10 },
	{ "Timelimit", "Timelimit", "Timelimit", 10 },
	{ "Reason", "Reason", "Reason", -20 },
	{ "Priority", "Priority", "Priority", 10 },
	{ "CostUSD", "CostUSD", "CostUSD", 10 },
	{ NULL, NULL, NULL, 0 },
};

/* One line: the job, or one of its steps (step: "batch", "0", ... or NULL). */
struct line {
	const json_t *job;
	const char *step;
	const json_t *st;   /* the step's object when the server listed one */
};

static void exit_code(const json_t *job, char *buf, size_t n)
{
	const json_t *e = json_object_get(job, "exit_code");
	const char *why = drv_json_str(job, "reason"), *k;
	int sig = 0;
	long long code = json_is_integer(e) ? (long long)json_integer_value(e) : 0;

	if (json_is_integer(json_object_get(job, "signal")))
		sig = (int)drv_json_int(job, "signal", 0);
	else if (why && (k = strstr(why, "killed by signal ")))
		sig = atoi(k + 17);
	if (sig && code >= 128)
		code = 0;   /* Slurm: the signal apart, the code 0 */
	snprintf(buf, n, "%lld:%d", code, sig);
}

static void tres(const json_t *job, bool alloc, char *buf, size_t n)
{
	long long cpus = drv_json_int(job, "cpus", 1), g = job_gpus(job);
	long long nodes = drv_json_int(job, "nodes", 0), mem = drv_json_int(job, "mem_mib", 0);
	size_t k;

	buf[0] = '\0';
	if (alloc && !drv_json_time(job, "start_time"))
		return;   /* nothing allocated yet */
	if (!nodes)
		nodes = drv_json_int(job, "nodes_requested", 1);
	k = (size_t)snprintf(buf, n, "billing=%lld,cpu=%lld", cpus, cpus);
	if (g > 0 && k < n)
		k += (size_t)snprintf(buf + k, n - k, ",gres/gpu=%lld", g);
	if (mem > 0 && k < n)
		k += (size_t)snprintf(buf + k, n - k, ",mem=%lldM", mem);
	if (k < n)
		snprintf(buf + k, n - k, ",node=%lld", nodes);
}

static void value(const struct line *l, const char *f, int64_t now, char *buf, size_t n)
{
	const json_t *job = l->job;
	const json_t *src = l->st ? l->st : job;
	int64_t start = drv_json_time(src, "start_time"), end = drv_json_time(src, "end_time");
	char id[64];

	buf[0] = '\0';
	if (!strcmp(f, "JobID") || !strcmp(f, "JobIDRaw")) {
		if (!strcmp(f, "JobID"))
			sl_job_id(job, id, sizeof(id));
		else
			snprintf(id, sizeof(id), "%lld", (long long)drv_json_int(job, "id", 0));
		snprintf(buf, n, l->step ? "%s.%s" : "%s", id, l->step ? l->step : "");
	} else if (!strcmp(f, "JobName")) {
		if (l->step && !strcmp(l->step, "batch"))
			snprintf(buf, n, "batch");
		else if (l->st)
			drv_json_text(l->st, "name", buf, n);
		else
			drv_json_text(job, "name", buf, n);
	} else if (!strcmp(f, "User")) {
		if (!l->step)
			drv_json_text(job, "user", buf, n);
	} else if (!strcmp(f, "UID")) {
		snprintf(buf, n, "%ld", sl_uid_of(drv_json_str(job, "user")));
	} else if (!strcmp(f, "Account")) {
		drv_json_text(job, "account", buf, n);
		if (!buf[0])
			drv_json_text(job, "tenant", buf, n);
	} else if (!strcmp(f, "Partition")) {
		if (!l->step)
			drv_json_text(job, "partition", buf, n);
	} else if (!strcmp(f, "State")) {
		sl_sacct_state(src, buf, n);
	} else if (!strcmp(f, "ExitCode") || !strcmp(f, "DerivedExitCode")) {
		exit_code(src, buf, n);
	} else if (!strcmp(f, "Elapsed")) {
		sl_secs_hms(start ? (end ? end : now) - start : 0, buf, n);
	} else if (!strcmp(f, "ElapsedRaw")) {
		snprintf(buf, n, "%lld", (long long)(start ? (end ? end : now) - start : 0));
	} else if (!strcmp(f, "Start")) {
		sl_time(start, "Unknown", buf, n);
	} else if (!strcmp(f, "End")) {
		sl_time(end, "Unknown", buf, n);
	} else if (!strcmp(f, "Submit")) {
		sl_time(drv_json_time(job, "submit_time"), "Unknown", buf, n);
	} else if (!strcmp(f, "NNodes")) {
		long long nn = drv_json_int(job, "nodes", 0);

		snprintf(buf, n, "%lld", nn ? nn : (long long)drv_json_int(job, "nodes_requested", 1));
	} else if (!strcmp(f, "ReqNodes")) {
		snprintf(buf, n, "%lld", (long long)drv_json_int(job, "nodes_requested", 1));
	} else if (!strcmp(f, "NCPUS")) {
		snprintf(buf, n, "%lld", start ? (long long)drv_json_int(job, "cpus", 1) : 0LL);
	} else if (!strcmp(f, "ReqCPUS")) {
		snprintf(buf, n, "%lld", (long long)drv_json_int(job, "cpus", 1));
	} else if (!strcmp(f, "NodeList")) {
		sl_job_nodelist(job, buf, n);
		if (!buf[0])
			snprintf(buf, n, "None assigned");
	} else if (!strcmp(f, "AllocTRES")) {
		tres(job, true, buf, n);
	} else if (!strcmp(f, "ReqTRES")) {
		if (!l->step)
			tres(job, false, buf, n);
	} else if (!strcmp(f, "Timelimit")) {
		if (!l->step)
			sl_limit(job, true, buf, n);
	} else if (!strcmp(f, "Reason")) {
		const char *c = drv_json_str(job, "reason_code");

		snprintf(buf, n, "%s", c ? c : "None");
	} else if (!strcmp(f, "Priority")) {
		drv_json_text(job, "priority", buf, n);
	} else if (!strcmp(f, "CostUSD")) {
		const json_t *c = json_object_get(job, "cost_usd");

		if (!l->step)
			snprintf(buf, n, "%.2f", json_is_number(c) ? json_number_value(c) : 0.0);
	}
}

struct sa {
	struct sl_fmt fmt;
	const char *fields[64];   /* the names as the user wrote them: the headers */
	bool noheader, X, parsable, parsable2;
	const char *users[64], *states[32], *jnames[64];
	unsigned long long ids[256];
	long long tasks[256];       /* ID_N: the array element N of ID only; -1 all */
	int nusers, nstates, njnames, nids;
	int64_t since, until, now;
	int printed;
};

static bool in_list(const char *v, const char *const *list, int n)
{
	for (int i = 0; i < n; i++)
		if (v && !strcmp(v, list[i]))
			return true;
	return false;
}

static void print_line(struct sa *q, const struct line *l)
{
	char v[4096];

	for (int c = 0; c < q->fmt.ncols; c++) {
		struct sl_col *col = &q->fmt.cols[c];

		value(l, col->field, q->now, v, sizeof(v));
		if (q->parsable || q->parsable2) {
			fputs(v, stdout);
			if (q->parsable || c + 1 < q->fmt.ncols)
				fputc('|', stdout);
			continue;
		}
		if ((int)strlen(v) > col->width) {
			v[col->width > 0 ? col->width - 1 : 0] = '+';
			v[col->width] = '\0';
		}
		printf(col->right ? "%*s " : "%-*s ", col->width, v);
	}
	fputc('\n', stdout);
}

static void print_header(struct sa *q)
{
	if (q->noheader)
		return;
	for (int c = 0; c < q->fmt.ncols; c++) {
		struct sl_col *col = &q->fmt.cols[c];
		char h[128];

		snprintf(h, sizeof(h), "%s", q->fields[c]);
		if (q->parsable || q->parsable2) {
			fputs(h, stdout);
			if (q->parsable || c + 1 < q->fmt.ncols)
				fputc('|', stdout);
			continue;
		}
		if ((int)strlen(h) > col->width)
			h[col->width] = '\0';
		printf(col->right ? "%*s " : "%-*s ", col->width, h);
	}
	fputc('\n', stdout);
	if (q->parsable || q->parsable2)
		return;
	for (int c = 0; c < q->fmt.ncols; c++) {
		for (int k = 0; k < q->fmt.cols[c].width; k++)
			fputc('-', stdout);
		fputc(' ', stdout);
	}
	fputc('\n', stdout);
}

static int one_job(const json_t *job, void *cls)
{
	struct sa *q = cls;
	struct line l = { .job = job };
	const json_t *src = json_object_get(job, "source");
	int64_t submit = drv_json_time(job, "submit_time"), end = drv_json_time(job, "end_time");
	const json_t *steps = json_object_get(job, "steps"), *st;
	char state[64];
	size_t i;

	(void)src;
	if (json_is_object(json_object_get(job, "elements")))
		return 0;   /* a parent: its elements have the lines */
	if (q->nids) {
		bool want = false;
		long long id = drv_json_int(job, "id", 0);
		const json_t *a = json_object_get(job, "array_job_id");

		for (int k = 0; k < q->nids; k++)
			want |= (q->ids[k] == (unsigned long long)id && q->tasks[k] < 0) ||
				(json_is_integer(a) &&
				 q->ids[k] == (unsigned long long)json_integer_value(a) &&
				 (q->tasks[k] < 0 ||
				  q->tasks[k] == drv_json_int(job, "array_task_id", -1)));
		if (!want)
			return 0;
	}
	if (q->nusers && !in_list(drv_json_str(job, "user"), q->users, q->nusers))
		return 0;
	if (q->njnames && !in_list(drv_json_str(job, "name"), q->jnames, q->njnames))
		return 0;
	if (q->nstates) {
		sl_sacct_state(job, state, sizeof(state));
		if (!strncmp(state, "CANCELLED", 9))
			state[9] = '\0';
		if (!in_list(state, q->states, q->nstates))
			return 0;
	}
	if (q->since > 0 && end && end < q->since)
		return 0;
	if (q->until > 0 && submit > q->until)
		return 0;
	print_line(q, &l);
	q->printed++;
	if (q->X)
		return 0;
	if (drv_json_time(job, "start_time") && json_is_true(json_object_get(job, "batch_step"))) {
		struct line b = { .job = job, .step = "batch" };

		print_line(q, &b);
	}
	json_array_foreach(steps, i, st) {
		char sid[32];
		struct line s = { .job = job, .st = st };

		drv_json_text(st, "step", sid, sizeof(sid));
		s.step = sid;
		print_line(q, &s);
	}
	return 0;
}

int drv_client_cmd_sacct(int argc, char **argv)
{
	struct cli cli;
	struct sa q = { 0 };
	bool all = false, X = false, noheader = false, P = false, p = false, allusers = false;
	const char *jobs = NULL, *users = NULL, *states = NULL, *jnames = NULL, *format = NULL,
		   *since = NULL, *until = NULL;
	const struct drv_option table[] = {
		DRV_OPT_STRING('j', "jobs", &jobs, "IDS", "these jobs (comma list)"),
		DRV_OPT_FLAG('X', "allocations", &X, "jobs only, no steps"),
		DRV_OPT_FLAG('n', "noheader", &noheader, "no header lines"),
		DRV_OPT_FLAG('P', "parsable2", &P, "fields separated by |"),
		DRV_OPT_FLAG('p', "parsable", &p, "each field followed by |"),
		DRV_OPT_STRING('o', "format", &format, "FIELDS", "the fields (Name[%width],...)"),
		DRV_OPT_STRING('S', "starttime", &since, "TIME", "jobs still running or ended after TIME (default: midnight, without -j)"),
		DRV_OPT_STRING('E', "endtime", &until, "TIME", "jobs submitted before TIME"),
		DRV_OPT_STRING('s', "state", &states, "STATES", "these states (comma list)"),
		DRV_OPT_STRING('u', "user", &users, "USERS", "these users' jobs (comma list)"),
		DRV_OPT_STRING(0, "name", &jnames, "NAMES", "jobs of these names"),
		DRV_OPT_FLAG('a', "allusers", &allusers, "every user's jobs (as far as the token may see)"),
		DRV_OPT_FLAG('D', "duplicates", &all, "every attempt (drover shows the last)"),
		DRV_OPT_GROUP("server"),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "sacct",
		.usage = "sacct [-j IDS] [-X] [-n] [-P|-p] [-o FIELDS] [-S TIME] [-E TIME] "
			 "[-s STATES] [-u USERS] [--name NAMES] [-a]",
		.about = "Slurm's sacct over drover's store (docs/slurm.md).",
		.options = table,
	};
	char err[256], ubuf[2048], sbuf[512], nbuf[2048], jbuf[4096], fbuf[2048];
	char path[256] = "/v1/jobs";
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return sl_exit(code);
	q.now = (int64_t)time(NULL);
	q.noheader = noheader, q.X = X, q.parsable = p, q.parsable2 = P;
	if (sl_fmt_names(format ? format : SA_DEFAULT, names, ',', &q.fmt, err, sizeof(err))) {
		fprintf(stderr, "sacct: error: %s\n", err);
		return 1;
	}
	snprintf(fbuf, sizeof(fbuf), "%s", format ? format : SA_DEFAULT);
	{
		const char *f[64];
		int nf = sl_split(fbuf, f, 64);

		for (int i = 0; i < nf; i++) {
			char *pc = strchr(f[i], '%');

			if (pc)
				*pc = '\0';
			q.fields[i] = f[i];
		}
	}
	if (users) {
		snprintf(ubuf, sizeof(ubuf), "%s", users);
		q.nusers = sl_split(ubuf, q.users, 64);
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

			if (!d && !never && strcasecmp(w[i], "REQUEUED") && strcasecmp(w[i], "RQ")) {
				fprintf(stderr, "sacct: error: Invalid state: %s\n", w[i]);
				return 1;
			}
			if (d && !strcmp(d, "scheduled"))
				d = "running";
			q.states[q.nstates++] = d ? sl_state_name(d, false) : "REQUEUED";
		}
	}
	if (jobs) {
		const char *l[256];
		int n;

		snprintf(jbuf, sizeof(jbuf), "%s", jobs);
		n = sl_split(jbuf, l, 256);
		for (int i = 0; i < n; i++) {
			char *end;

			q.ids[q.nids] = strtoull(l[i], &end, 10);
			if (end == l[i] || (*end && *end != '.' && *end != '_')) {
				fprintf(stderr, "sacct: error: Invalid job id: %s\n", l[i]);
				return 1;
			}
			q.tasks[q.nids] = *end == '_' && end[1] >= '0' && end[1] <= '9'
					  ? strtoll(end + 1, NULL, 10) : -1;
			q.nids++;
		}
	}
	if (since) {
		q.since = sl_parse_when(since, q.now);
		if (q.since < 0) {
			fprintf(stderr, "sacct: error: Invalid time specification: %s\n", since);
			return 1;
		}
	} else if (!jobs) {
		struct tm tm;
		time_t t = (time_t)q.now;

		localtime_r(&t, &tm);
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		q.since = (int64_t)mktime(&tm);   /* sacct's default: since midnight */
	}
	if (until && (q.until = sl_parse_when(until, q.now)) < 0) {
		fprintf(stderr, "sacct: error: Invalid time specification: %s\n", until);
		return 1;
	}
	(void)all;
	(void)allusers;
	if ((code = sl_connect(&cli, "sacct")))
		goto out;
	print_header(&q);
	if (q.nids == 1) {
		/* one job: read it (and its elements) without paging the store */
		snprintf(path, sizeof(path), "/v1/jobs/%llu", q.ids[0]);
		{
			struct drv_client_reply r;

			cli.keep_error = true;
			code = cli_call(&cli, "GET", path, NULL, NULL, 0, &r);
			if (code && r.status == 404) {
				drv_client_reply_release(&r);
				code = 0;
				goto out;
			}
			if (code) {
				if (r.status) {
					char *m = drv_client_reply_error(&r);

					fprintf(stderr, "sacct: error: %s\n", m);
					drv_free(m);
					drv_client_reply_release(&r);
				}
				code = 1;
				goto out;
			}
			if (!json_is_object(json_object_get(r.json, "elements"))) {
				one_job(r.json, &q);
				drv_client_reply_release(&r);
				goto out;
			}
			drv_client_reply_release(&r);
		}
	}
	code = sl_each_job(&cli, "/v1/jobs", one_job, &q);
out:
	cli_release(&cli);
	return sl_exit(code);
}
