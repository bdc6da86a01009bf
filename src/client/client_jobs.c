/*
 * client_jobs.c: the client commands about jobs: submit, apply, get jobs,
 * queue, describe job, cancel and logs, over the routes of docs/api.md.
 *
 * The client stays thin: a job file goes to the server as it is, with the
 * Content-Type of its format, and the server parses it (Kubernetes YAML,
 * Slurm script, canonical JSON). The one exception is a Slurm script with
 * sbatch options on the command line: those must win over the #SBATCH
 * lines, so the client parses the script with the spec library, applies
 * the options, and sends the canonical JSON (src/client/submit.c).
 */
#include "client_int.h"

#include "drover/common.h"
#include "drover/fsutil.h"
#include "drover/hostlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SMALL 256

/* ---- get jobs / queue tables ---- */

/* A comma list of node names, hostlist-compressed in place ("gpu-[01-04]"). */
static void compress_nodes(char *list, size_t n)
{
	char flat[1024], *p, *save = NULL;
	const char *names[256];
	size_t k = 0;

	snprintf(flat, sizeof(flat), "%s", list);
	for (p = strtok_r(flat, ",", &save); p && k < DRV_ARRAY_SIZE(names);
	     p = strtok_r(NULL, ",", &save))
		names[k++] = p;
	if (k > 1)
		drv_hostlist_compress(names, k, list, n);
}

static const char *reason_or_nodes(const json_t *job, char *buf, size_t n)
{
	char nodes[1024], reason[512];
	const char *state = json_string_value(json_object_get(job, "state"));

	drv_json_text(job, "nodelist", nodes, sizeof(nodes));
	if (!nodes[0])
		job_nodes(job, nodes, sizeof(nodes));
	compress_nodes(nodes, sizeof(nodes));
	drv_json_text(job, "reason", reason, sizeof(reason));
	if (state && (!strcmp(state, "running") || !strcmp(state, "scheduled") ||
		      !strcmp(state, "succeeded")) && nodes[0])
		snprintf(buf, n, "%s", nodes);
	else if (reason[0])
		snprintf(buf, n, "(%s)", reason);
	else
		snprintf(buf, n, "%s", nodes);
	return buf;
}

static void fmt_gpus(const json_t *job, char *buf, size_t n)
{
	const json_t *g = json_object_get(job, "gpus");
	char model[SMALL];

	if (json_is_real(g))
		snprintf(buf, n, "%g", json_real_value(g));
	else
		snprintf(buf, n, "%lld", job_gpus(job));
	drv_json_text(job, "gpu_model", model, sizeof(model));
	if (model[0]) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, "x%s", model);
	}
}

static void fmt_age(long long t, long long now, char *buf, size_t n)
{
	long long d = now - t;

	if (!t) {
		snprintf(buf, n, "-");
		return;
	}
	if (d < 0)
		d = 0;
	if (d < 120)
		snprintf(buf, n, "%llds", d);
	else if (d < 7200)
		snprintf(buf, n, "%lldm", d / 60);
	else if (d < 172800)
		snprintf(buf, n, "%lldh", d / 3600);
	else
		snprintf(buf, n, "%lldd", d / 86400);
}

/* One table for both 'get jobs' and 'queue'. */
static void print_jobs(const struct cli *cli, const json_t *items)
{
	static const char *const h_table[] = { "ID", "NAME", "USER", "PARTITION", "STATE", "TIME",
					       "GPUS", "NODES", "NODELIST(REASON)" };
	static const char *const h_wide[] = { "ID", "NAME", "USER", "PARTITION", "TENANT", "STATE", "TIME",
					      "GPUS", "NODES", "PRIO", "ATTEMPT", "AGE", "EXIT",
					      "IMAGE", "NODELIST(REASON)" };
	struct drv_table t;
	long long now = (long long)time(NULL);
	size_t i;
	const json_t *job;
	int wide = cli->out == DRV_OUT_WIDE;

	drv_table_init(&t, wide ? DRV_ARRAY_SIZE(h_wide) : DRV_ARRAY_SIZE(h_table),
		       wide ? h_wide : h_table);
	json_array_foreach(items, i, job) {
		char id[32], name[SMALL], user[SMALL], tenant[SMALL], state[32], tm[32],
			gpus[SMALL], nn[32], prio[32], att[32], age[32], ex[32], image[SMALL],
			rn[2048], part[SMALL];
		const char *st;

		drv_json_text(job, "id", id, sizeof(id));
		drv_json_text(job, "name", name, sizeof(name));
		drv_json_text(job, "user", user, sizeof(user));
		drv_json_text(job, "tenant", tenant, sizeof(tenant));
		st = drv_json_text(job, "state", state, sizeof(state));
		drv_fmt_duration(job_elapsed(job, now), tm, sizeof(tm));
		fmt_gpus(job, gpus, sizeof(gpus));
		drv_json_text(job, "nodes", nn, sizeof(nn));
		if (!strcmp(nn, "0") || !nn[0])   /* pending: the nodes it asks for */
			drv_json_text(job, "nodes_requested", nn, sizeof(nn));
		drv_json_text(job, "partition", part, sizeof(part));
		drv_json_text(job, "priority", prio, sizeof(prio));
		drv_json_text(job, "attempt", att, sizeof(att));
		fmt_age(drv_json_time(job, "submit_time"), now, age, sizeof(age));
		drv_json_text(job, "exit_code", ex, sizeof(ex));
		drv_json_text(job, "image", image, sizeof(image));
		reason_or_nodes(job, rn, sizeof(rn));
		if (wide) {
			const char *row[] = { id, name, user, part, tenant, st, tm, gpus, nn,
					      prio, att, age, ex, image, rn };
			drv_table_add(&t, row);
		} else {
			const char *row[] = { id, name, user, part, st, tm, gpus, nn, rn };
			drv_table_add(&t, row);
		}
	}
	drv_table_print(&t, stdout);
	drv_table_release(&t);
}

/* Appends "&key=value" (or "?key=value" first) to a query string. */
static void query_add(char *q, size_t n, const char *key, const char *value)
{
	char *v;
	size_t k = strlen(q);

	if (!value)
		return;
	v = drv_client_urlencode(value);
	snprintf(q + k, n - k, "%c%s=%s", k ? '&' : '?', key, v);
	drv_free(v);
}

static int list_jobs(struct cli *cli, const char *route, const char *state, const char *user,
		     const char *tenant, const char *name)
{
	char path[2048], q[1536] = "";
	json_t *all;
	int rc;

	query_add(q, sizeof(q), "state", state);
	query_add(q, sizeof(q), "user", user);
	query_add(q, sizeof(q), "tenant", tenant);
	query_add(q, sizeof(q), "name", name);
	snprintf(path, sizeof(path), "%s%s", route, q);
	rc = cli_get_all(cli, path, &all);
	if (rc)
		return rc;
	if (cli->out == DRV_OUT_JSON || cli->out == DRV_OUT_YAML)
		rc = cli_print_doc(cli, all);
	else
		print_jobs(cli, cli_items(all));
	json_decref(all);
	return rc;
}

static int get_one_job(struct cli *cli, const char *id)
{
	struct drv_client_reply r;
	char path[SMALL];
	char *e = drv_client_urlencode(id);
	int rc;

	snprintf(path, sizeof(path), "/v1/jobs/%s", e);
	drv_free(e);
	rc = cli_call(cli, "GET", path, NULL, NULL, 0, &r);
	if (rc)
		return rc;
	if (cli->out == DRV_OUT_JSON || cli->out == DRV_OUT_YAML) {
		rc = cli_print_doc(cli, r.json);
	} else {
		json_t *one = json_pack("{s:[O]}", "items", r.json);
		print_jobs(cli, json_object_get(one, "items"));
		json_decref(one);
	}
	drv_client_reply_release(&r);
	return rc;
}

int drv_client_get_nodes(struct cli *cli, int nnames, char **names);

int drv_client_cmd_get(int argc, char **argv)
{
	const char *state = NULL, *user = NULL, *tenant = NULL, *name = NULL;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_GROUP("which jobs (get jobs)"),
		DRV_OPT_STRING(0, "state", &state, "S",
			       "only jobs in state S (pending, running, ...)"),
		DRV_OPT_STRING(0, "user", &user, "U", "only user U's jobs"),
		DRV_OPT_STRING(0, "tenant", &tenant, "T", "only tenant T's jobs"),
		DRV_OPT_STRING(0, "name", &name, "N", "only jobs named N"),
		CLI_COMMON_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover get",
		.usage = "drover get jobs|nodes [ID|NAME...] [--state S] [--user U] [--tenant T] "
			 "[--name N]\n"
			 "       [-o json|yaml|wide] [--server URL] [--token-file FILE]",
		.about = "Lists jobs (yours; admins see all) or nodes, or some of them by id or "
			 "name.",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
	};
	const char *what;
	int code = 0, i;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if (cli.nargs < 1)
		return drv_opts_usage_error(&cmd, "what to get? 'jobs' or 'nodes'");
	what = cli.args[0];
	if (strcmp(what, "jobs") && strcmp(what, "job") && strcmp(what, "nodes") &&
	    strcmp(what, "node")) {
		cli_err(&cli, "'%s': expected 'jobs' or 'nodes'", what);
		return DRV_EXIT_USAGE;
	}
	if ((code = cli_connect(&cli)))
		return code;
	if (!strncmp(what, "node", 4)) {
		code = drv_client_get_nodes(&cli, cli.nargs - 1, cli.args + 1);
	} else if (cli.nargs == 1) {
		code = list_jobs(&cli, "/v1/jobs", state, user, tenant, name);
	} else {
		for (i = 1; i < cli.nargs; i++) {
			int c = get_one_job(&cli, cli.args[i]);
			if (c > code)
				code = c;
		}
	}
	cli_release(&cli);
	return code;
}

int drv_client_cmd_queue(int argc, char **argv)
{
	const char *state = NULL, *user = NULL, *tenant = NULL;
	bool me = false;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_STRING('t', "state", &state, "S[,S...]",
			       "only jobs in these states (default: the unfinished ones)"),
		DRV_OPT_STRING('u', "user", &user, "U", "only user U's jobs"),
		DRV_OPT_STRING(0, "tenant", &tenant, "T", "only tenant T's jobs"),
		DRV_OPT_FLAG(0, "me", &me, "only my jobs (the token's user)"),
		CLI_COMMON_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover queue",
		.usage = "drover queue [--state S[,S...]] [--user U] [--tenant T] [--me] "
			 "[-o json|yaml|wide]\n"
			 "       [--server URL] [--token-file FILE]",
		.about = "The queue, like squeue: unfinished jobs, pending first in queue order, "
			 "with their state, GPUs, nodes or pending reason.",
		.options = table,
	};
	char whoami[SMALL] = "";
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if ((code = cli_connect(&cli)))
		return code;
	if (me && !user) {
		struct drv_client_reply r;
		code = cli_call(&cli, "GET", "/v1/whoami", NULL, NULL, 0, &r);
		if (code)
			goto out;
		drv_json_text(r.json, "user", whoami, sizeof(whoami));
		drv_client_reply_release(&r);
		user = whoami;
	}
	code = list_jobs(&cli, "/v1/queue", state, user, tenant, NULL);
out:
	cli_release(&cli);
	return code;
}

/* ---- submit / apply ---- */

/*
 * The Content-Type for a job file, told from its content: canonical JSON
 * starts with '{' (a JSON Kubernetes manifest too, so JSON with "kind"
 * and "apiVersion" other than drover/v1 is sent as YAML, which JSON is);
 * a script with a "#!" line or #SBATCH lines is Slurm; the rest is YAML.
 */
const char *drv_client_content_type(const char *buf, size_t len)
{
	size_t i = 0;
	const char *p;

	while (i < len && strchr(" \t\r\n", buf[i]))
		i++;
	if (i < len && buf[i] == '{') {
		json_t *j = json_loadb(buf, len, 0, NULL);
		const char *av = j ? json_string_value(json_object_get(j, "apiVersion")) : NULL;
		int k8s = av && strncmp(av, "drover/", 7);
		json_decref(j);
		return k8s ? "application/yaml" : "application/json";
	}
	if (len >= 2 && buf[0] == '#' && buf[1] == '!')
		return "text/x-slurm";
	for (p = buf; p && p < buf + len; p = memchr(p, '\n', buf + len - p), p = p ? p + 1 : p)
		if (buf + len - p >= 7 && !strncmp(p, "#SBATCH", 7))
			return "text/x-slurm";
	return "application/yaml";
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Reads path ("-" for stdin) whole; returns 0 or prints and returns 1/2. */
int drv_client_read_job_file(const struct cli *cli, const char *path, char **buf,
			     size_t *len)
{
	int rc = drv_file_read(path, 16u << 20, buf, len);

	if (rc == DRV_ELIMIT)
		cli_err(cli, "%s: over 16 MiB, the server's limit", path);
	else if (rc)
		cli_err(cli, "%s: cannot read: %s", path, strerror(errno));
	return rc ? DRV_EXIT_USAGE : 0;
}

/* POSTs a job body; prints the result; used by submit and apply. */
int drv_client_post_job(struct cli *cli, const char *route, const char *file,
			const char *ctype, const char *body, size_t len, int parsable)
{
	struct drv_client_reply r;
	char path[1024], id[32], name[SMALL], action[32];
	char *fn = drv_client_urlencode(strcmp(file, "-") ? base_name(file) : "<stdin>");
	const json_t *job;
	int rc;

	snprintf(path, sizeof(path), "%s?filename=%s", route, fn);
	drv_free(fn);
	rc = cli_call_create(cli, path, ctype, body, len, &r);
	if (rc)
		return rc;
	job = json_object_get(r.json, "job");
	if (!job)
		job = r.json;
	drv_json_text(r.json, "action", action, sizeof(action));
	drv_json_text(job, "id", id, sizeof(id));
	drv_json_text(job, "name", name, sizeof(name));
	if (cli->out == DRV_OUT_JSON || cli->out == DRV_OUT_YAML)
		rc = cli_print_doc(cli, r.json);
	else if (parsable)
		printf("%s\n", id);
	else if (action[0])
		printf(name[0] ? "job %s (%s) %s\n" : "job %s%s %s\n", id, name, action);
	else
		printf(name[0] ? "submitted job %s (%s)\n" : "submitted job %s%s\n", id, name);
	drv_client_reply_release(&r);
	return rc;
}

int drv_client_cmd_apply(int argc, char **argv)
{
	const char *file = NULL;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_STRING('f', "filename", &file, "FILE",
			       "the job file (Kubernetes YAML, Slurm script, drover JSON); - for "
			       "stdin"),
		CLI_COMMON_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover apply",
		.usage = "drover apply -f FILE [-o json|yaml] [--server URL] [--token-file FILE]",
		.about = "Creates or updates the job with the file's name, as kubectl apply -f "
			 "does: created, configured (a pending job's spec replaced, same id) or "
			 "unchanged.",
		.options = table,
	};
	char *buf = NULL;
	size_t len = 0;
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if (!file)
		return drv_opts_usage_error(&cmd, "which file? -f FILE");
	code = drv_client_read_job_file(&cli, file, &buf, &len);
	if (code)
		return code;
	if ((code = cli_connect(&cli))) {
		drv_free(buf);
		return code;
	}
	code = drv_client_post_job(&cli, "/v1/apply", file, drv_client_content_type(buf, len),
				   buf, len, 0);
	drv_free(buf);
	cli_release(&cli);
	return code;
}

/* ---- describe ---- */

static void print_kv(const char *k, const char *v)
{
	printf("%-12s %s\n", k, v && *v ? v : "-");
}

/* "87.5%", or "-" when the figure is null. */
static const char *fmt_pct(const json_t *o, const char *key, char *buf, size_t n)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_number(v))
		snprintf(buf, n, "%.1f%%", json_number_value(v));
	else
		snprintf(buf, n, "-");
	return buf;
}

static const char *fmt_mib(const json_t *o, const char *key, char *buf, size_t n)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		snprintf(buf, n, "%lld MiB", (long long)json_integer_value(v));
	else
		snprintf(buf, n, "-");
	return buf;
}

/* seff's lines: GPU utilisation and memory per GPU and in all, CPU and
 * memory efficiency (docs/client.md). */
/* Each container task's container, image pull and the podman command
 * that made it (env values are in its env file, not here). */
static void print_containers(const json_t *tasks)
{
	const json_t *x;
	size_t i;
	bool any = false;

	json_array_foreach(tasks, i, x) {
		const json_t *c = json_object_get(x, "container");
		const char *v;

		if (!json_is_object(c))
			continue;
		if (!any)
			printf("Containers:\n");
		any = true;
		v = drv_json_str(c, "name");
		printf("  task %s: %s\n", drv_json_str(x, "task") ? drv_json_str(x, "task") : "?",
		       v ? v : "(unnamed)");
		if ((v = drv_json_str(c, "image_pull")))
			printf("    image:   %s\n", v);
		if ((v = drv_json_str(c, "command")))
			printf("    command: %s\n", v);
	}
}

static void print_efficiency(const json_t *job)
{
	const json_t *e = json_object_get(job, "efficiency"), *g;
	char a[32], b[32], c[32], d[32], n[64];
	size_t i;

	if (!json_is_object(e)) {
		print_kv("Efficiency:", "(nothing reported yet)");
		return;
	}
	printf("%-12s GPU utilisation %s, GPU memory high-water %s (GPUs: %zu)\n", "Efficiency:",
	       fmt_pct(e, "gpu_util_pct", a, sizeof(a)), fmt_mib(e, "gpu_mem_max_mib", b, sizeof(b)),
	       json_array_size(json_object_get(e, "gpus")));
	if (drv_json_num(e, "cpus", 0) > 0)
		printf("%-12s CPU efficiency %s (%.2f s of CPU over %.3g CPUs x %lld s)\n", "",
		       fmt_pct(e, "cpu_efficiency_pct", a, sizeof(a)), drv_json_num(e, "cpu_s", 0),
		       drv_json_num(e, "cpus", 0), (long long)drv_json_int(e, "elapsed_s", 0));
	else
		printf("%-12s CPU efficiency - (%.2f s of CPU in %lld s; no CPUs requested)\n", "",
		       drv_json_num(e, "cpu_s", 0), (long long)drv_json_int(e, "elapsed_s", 0));
	printf("%-12s memory efficiency %s (high-water %s of %s requested)\n", "",
	       fmt_pct(e, "mem_efficiency_pct", a, sizeof(a)), fmt_mib(e, "mem_max_mib", b, sizeof(b)),
	       fmt_mib(e, "mem_request_mib", c, sizeof(c)));
	json_array_foreach(json_object_get(e, "gpus"), i, g) {
		snprintf(n, sizeof(n), "%s/%lld", drv_json_str(g, "node") ? drv_json_str(g, "node") : "",
			 (long long)drv_json_int(g, "gpu", 0));
		printf("  GPU %-20s rank %-4lld utilisation %-7s memory high-water %s\n", n,
		       (long long)drv_json_int(g, "rank", 0), fmt_pct(g, "util_pct", d, sizeof(d)),
		       fmt_mib(g, "mem_max_mib", c, sizeof(c)));
	}
}

static const char *fmt_time(const json_t *o, const char *key, long long now, char *buf,
			    size_t n)
{
	char raw[64], ago[32];
	long long t = drv_json_time(o, key);

	drv_json_text(o, key, raw, sizeof(raw));
	if (!raw[0])
		return "";
	fmt_age(t, now, ago, sizeof(ago));
	snprintf(buf, n, "%s (%s ago)", raw, ago);
	return buf;
}

/* GPU index list as ranges: [0,1,2,3,6] -> "0-3,6". */
static void fmt_indexes(const json_t *a, char *buf, size_t n)
{
	size_t i = 0, cnt = json_array_size(a), k = 0;

	buf[0] = '\0';
	while (i < cnt && k + 24 < n) {
		long long s = json_integer_value(json_array_get(a, i)), e = s;
		while (i + 1 < cnt && json_integer_value(json_array_get(a, i + 1)) == e + 1) {
			e++;
			i++;
		}
		k += snprintf(buf + k, n - k, k ? ",%lld" : "%lld", s);
		if (e != s)
			k += snprintf(buf + k, n - k, "-%lld", e);
		i++;
	}
}

static long long queue_position(struct cli *cli, const char *id)
{
	const json_t *items, *j;
	json_t *all = NULL;
	char jid[32];
	long long pos = 0;
	size_t i;

	if (cli_get_all(cli, "/v1/queue?state=pending", &all))
		return 0;
	items = cli_items(all);
	json_array_foreach(items, i, j) if (!strcmp(drv_json_text(j, "id", jid, sizeof(jid)), id))
		pos = drv_json_int(j, "position", 0);
	json_decref(all);
	return pos;
}

static void describe_job(struct cli *cli, const json_t *job)
{
	long long now = (long long)time(NULL);
	char b[2048], b2[256], id[32], state[32];
	const json_t *a, *x, *env;
	const char *key;
	size_t i;

	drv_json_text(job, "id", id, sizeof(id));
	print_kv("Job:", id);
	print_kv("Name:", drv_json_text(job, "name", b, sizeof(b)));
	print_kv("User:", drv_json_text(job, "user", b, sizeof(b)));
	print_kv("Tenant:", drv_json_text(job, "tenant", b, sizeof(b)));
	drv_json_text(job, "state", state, sizeof(state));
	print_kv("State:", state);
	drv_json_text(job, "reason", b, sizeof(b));
	if (!strcmp(state, "pending")) {
		long long pos = queue_position(cli, id);
		if (pos)
			snprintf(b2, sizeof(b2), "%lld in the queue", pos);
		print_kv("Why pending:", b[0] ? b : "waiting for the next scheduling pass");
		if (pos)
			print_kv("Position:", b2);
	} else {
		print_kv("Reason:", b);
	}
	fmt_gpus(job, b, sizeof(b));
	print_kv("GPUs:", b);
	snprintf(b, sizeof(b), "%lld task(s) on %lld node(s)",
		 (long long)drv_json_int(job, "tasks", 0),
		 (long long)drv_json_int(job, "nodes", 0));
	print_kv("Tasks:", b);
	{
		/* a Kubernetes Job: a parent of one job per pod (docs/api.md) */
		const json_t *el = json_object_get(job, "elements");

		if (json_is_object(el)) {
			snprintf(b, sizeof(b), "%lld-%lld: %lld active, %lld pending, %lld of %lld "
				 "succeeded, %lld failures (parallelism %lld, backoffLimit %lld, %s)",
				 (long long)drv_json_int(el, "first", 0),
				 (long long)(drv_json_int(el, "first", 0) + drv_json_int(el, "count", 0) - 1),
				 (long long)drv_json_int(el, "active", 0),
				 (long long)drv_json_int(el, "pending", 0),
				 (long long)drv_json_int(el, "succeeded", 0),
				 (long long)drv_json_int(el, "count", 0),
				 (long long)drv_json_int(el, "failed", 0),
				 (long long)drv_json_int(el, "parallelism", 0),
				 (long long)drv_json_int(el, "backoff_limit", 0),
				 drv_json_str(el, "completion_mode") ? drv_json_str(el, "completion_mode") : "");
			print_kv("Pods:", b);
		} else if (json_is_integer(json_object_get(job, "array_job_id"))) {
			snprintf(b, sizeof(b), "index %lld of Job %lld",
				 (long long)drv_json_int(job, "completion_index", 0),
				 (long long)drv_json_int(job, "array_job_id", 0));
			print_kv("Pod of:", b);
		}
	}
	print_kv("Priority:", drv_json_text(job, "priority", b, sizeof(b)));
	print_kv("Preemptible:", drv_json_text(job, "preemptible", b, sizeof(b)));
	print_kv("Runtime:", drv_json_text(job, "runtime", b, sizeof(b)));
	print_kv("Image:", drv_json_text(job, "image", b, sizeof(b)));
	print_kv("Attempt:", drv_json_text(job, "attempt", b, sizeof(b)));
	print_kv("Submitted:", fmt_time(job, "submit_time", now, b, sizeof(b)));
	print_kv("Started:", fmt_time(job, "start_time", now, b, sizeof(b)));
	print_kv("Ended:", fmt_time(job, "end_time", now, b, sizeof(b)));
	if (drv_json_time(job, "start_time")) {
		print_kv("Run time:", drv_fmt_duration(job_elapsed(job, now), b, sizeof(b)));
	}
	print_kv("Exit code:", drv_json_text(job, "exit_code", b, sizeof(b)));
	if (json_is_number(json_object_get(job, "cost_usd"))) {
		snprintf(b, sizeof(b), "$%.6f%s", json_number_value(json_object_get(job, "cost_usd")),
			 !strcmp(state, "running") ? " so far" : "");
		print_kv("Cost:", b);
	}
	print_efficiency(job);

	a = json_object_get(job, "placement");
	printf("Placement:%s\n", json_array_size(a) ? "" : "   (not placed)");
	json_array_foreach(a, i, x) {
		char task[64], node[SMALL];
		fmt_indexes(json_object_get(x, "gpus"), b2, sizeof(b2));
		printf("  task %-8s rank %-4lld node %-16s GPUs %s\n",
		       drv_json_text(x, "task", task, sizeof(task)),
		       (long long)drv_json_int(x, "rank", 0),
		       drv_json_text(x, "node", node, sizeof(node)), b2[0] ? b2 : "-");
	}
	a = json_object_get(job, "task_states");
	if (json_array_size(a)) {
		struct drv_table t;
		static const char *const h[] = { "TASK", "NODE", "STATE", "EPOCH", "EXIT",
						 "SIGNAL", "OOM", "REASON" };
		printf("Tasks:\n");
		drv_table_init(&t, DRV_ARRAY_SIZE(h), h);
		json_array_foreach(a, i, x) {
			char c[8][512];
			const char *row[8];
			int k;
			drv_json_text(x, "task", c[0], sizeof(c[0]));
			drv_json_text(x, "node", c[1], sizeof(c[1]));
			drv_json_text(x, "state", c[2], sizeof(c[2]));
			drv_json_text(x, "epoch", c[3], sizeof(c[3]));
			drv_json_text(x, "exit_code", c[4], sizeof(c[4]));
			drv_json_text(x, "signal", c[5], sizeof(c[5]));
			snprintf(c[6], sizeof(c[6]), "%s",
				 json_is_true(json_object_get(x, "oom_killed")) ? "yes" : "no");
			drv_json_text(x, "reason", c[7], sizeof(c[7]));
			for (k = 0; k < 8; k++)
				row[k] = c[k];
			drv_table_add(&t, row);
		}
		drv_table_print_indent(&t, stdout, 2);
		drv_table_release(&t);
	}
	print_containers(json_object_get(job, "task_states"));
	env = json_object_get(job, "env");
	printf("Env:%s\n", json_object_size(env) ? "" : "         (none)");
	json_object_foreach((json_t *)env, key, x) {
		drv_json_text(env, key, b, sizeof(b));
		printf("  %s=%s\n", key, b);
	}
	a = json_object_get(job, "events");
	printf("Events:%s\n", json_array_size(a) ? "" : "      (none)");
	json_array_foreach(a, i, x) {
		char t[64], from[32], to[32], reason[1024];
		drv_json_text(x, "time", t, sizeof(t));
		drv_json_text(x, "from", from, sizeof(from));
		drv_json_text(x, "to", to, sizeof(to));
		drv_json_text(x, "reason", reason, sizeof(reason));
		printf("  %-20s  %-9s -> %-9s  %s\n", t, from[0] ? from : "", to, reason);
	}
}

int drv_client_describe_node(struct cli *cli, const char *name);

int drv_client_cmd_describe(int argc, char **argv)
{
	struct cli cli;
	const struct drv_option table[] = {
		CLI_COMMON_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover describe",
		.usage = "drover describe job ID | describe node NAME [-o json|yaml] [--server URL] "
			 "[--token-file FILE]",
		.about = "One job in full (placement, tasks, env, events, why pending), or one "
			 "node (GPUs, health, labels, jobs).",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
	};
	struct drv_client_reply r;
	char path[SMALL];
	char *e;
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if (cli.nargs != 2 || (strcmp(cli.args[0], "job") && strcmp(cli.args[0], "node") &&
			       strcmp(cli.args[0], "jobs") && strcmp(cli.args[0], "nodes")))
		return drv_opts_usage_error(&cmd, "expected 'job ID' or 'node NAME'");
	if ((code = cli_connect(&cli)))
		return code;
	if (!strncmp(cli.args[0], "node", 4)) {
		code = drv_client_describe_node(&cli, cli.args[1]);
		goto out;
	}
	e = drv_client_urlencode(cli.args[1]);
	snprintf(path, sizeof(path), "/v1/jobs/%s", e);
	drv_free(e);
	code = cli_call(&cli, "GET", path, NULL, NULL, 0, &r);
	if (code)
		goto out;
	if (cli.out == DRV_OUT_JSON || cli.out == DRV_OUT_YAML)
		code = cli_print_doc(&cli, r.json);
	else
		describe_job(&cli, r.json);
	drv_client_reply_release(&r);
out:
	cli_release(&cli);
	return code;
}

/* ---- cancel ---- */

int drv_client_cmd_cancel(int argc, char **argv)
{
	const char *reason = NULL;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "reason", &reason, "TEXT", "why, kept in the job's events"),
		CLI_COMMON_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover cancel",
		.usage = "drover cancel ID... [--reason TEXT] [-o json|yaml] [--server URL] "
			 "[--token-file FILE]",
		.about = "Cancels jobs; their processes are stopped.",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
	};
	int code = 0, i;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if (cli.nargs < 1)
		return drv_opts_usage_error(&cmd, "which job? give its id");
	if ((code = cli_connect(&cli)))
		return code;
	for (i = 0; i < cli.nargs; i++) {
		struct drv_client_reply r;
		char path[SMALL], name[SMALL];
		char *e = drv_client_urlencode(cli.args[i]);
		char *body = NULL;
		int c;

		snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", e);
		drv_free(e);
		if (reason) {
			json_t *b = json_pack("{s:s}", "reason", reason);
			body = json_dumps(b, JSON_COMPACT);
			json_decref(b);
		}
		c = cli_call(&cli, "POST", path, body ? "application/json" : NULL, body,
			     body ? strlen(body) : 0, &r);
		free(body);
		if (c) {
			if (c > code)
				code = c;
			continue;
		}
		if (cli.out == DRV_OUT_JSON || cli.out == DRV_OUT_YAML)
			cli_print_doc(&cli, r.json);
		else
			printf("cancelled job %s (%s)\n", cli.args[i],
			       drv_json_text(r.json, "name", name, sizeof(name)));
		drv_client_reply_release(&r);
	}
	cli_release(&cli);
	return code;
}

/* ---- logs ---- */

static int job_finished(struct cli *cli, const char *id)
{
	struct drv_client_reply r;
	char path[SMALL], state[32], err[256];
	int done = 0;

	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	if (drv_client_call(cli->client, "GET", path, NULL, NULL, 0, 0, &r, err, sizeof(err)))
		return 0;
	drv_json_text(r.json, "state", state, sizeof(state));
	done = !strcmp(state, "succeeded") || !strcmp(state, "failed") ||
	       !strcmp(state, "cancelled") || !strcmp(state, "out_of_memory") ||
	       !strcmp(state, "timeout") || !strcmp(state, "node_fail");
	drv_client_reply_release(&r);
	return done;
}

int drv_client_cmd_logs(int argc, char **argv)
{
	const char *task = "0";
	bool err_stream = false, follow = false;
	struct cli cli;
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "task", &task, "RANK", "the task's rank in the job (default 0)"),
		DRV_OPT_FLAG(0, "stderr", &err_stream, "its stderr (default: stdout)"),
		DRV_OPT_FLAG('f', "follow", &follow, "follow the output until the job ends"),
		DRV_OPT_GROUP("server"),
		CLI_OUTPUT_OPT(&cli, DRV_OPTF_HIDDEN),
		CLI_SERVER_OPTS(&cli),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover logs",
		.usage = "drover logs ID [--task RANK] [--stderr] [-f|--follow] [--server URL] "
			 "[--token-file FILE]",
		.about = "A job's task output.",
		.options = table,
		.args_max = DRV_OPTS_ANY_ARGS,
	};
	long long offset = 0;
	char *id;
	int code = 0;

	if (cli_parse(&cli, &cmd, argc, argv, &code))
		return code;
	if (cli.nargs != 1)
		return drv_opts_usage_error(&cmd, cli.nargs ? "one job id at a time"
							    : "which job? give its id");
	if ((code = cli_connect(&cli)))
		return code;
	id = drv_client_urlencode(cli.args[0]);
	for (;;) {
		struct drv_client_reply r;
		char path[512];
		char *t = drv_client_urlencode(task);
		int finished;

		snprintf(path, sizeof(path), "/v1/jobs/%s/logs?task=%s&stream=%s&offset=%lld", id,
			 t, err_stream ? "stderr" : "stdout", offset);
		drv_free(t);
		/* Ask whether the job is over before reading, so that the last
		 * read after it ended catches everything it wrote. */
		finished = follow ? job_finished(&cli, id) : 1;
		if (follow && !finished) {
			/* Following a job whose task has not started yet (404) or
			 * whose node is briefly unreachable (503): wait for it. */
			char err[512];
			if (drv_client_call(cli.client, "GET", path, NULL, NULL, 0, 0, &r, err,
					    sizeof(err)) == 0 &&
			    (r.status == 404 || r.status == 503)) {
				drv_client_reply_release(&r);
				usleep(500 * 1000);
				continue;
			}
			if (r.body)
				drv_client_reply_release(&r);
		}
		code = cli_call(&cli, "GET", path, NULL, NULL, 0, &r);
		if (code)
			break;
		fwrite(r.body, 1, r.len, stdout);
		fflush(stdout);
		if (r.next_offset >= 0)
			offset = r.next_offset;
		else
			offset += (long long)r.len;
		drv_client_reply_release(&r);
		if (!follow || finished)
			break;
		usleep(500 * 1000);
	}
	drv_free(id);
	cli_release(&cli);
	return code;
}
