/*
 * bench_soak.c: 'drover bench soak': exactly-once under faults, at size.
 *
 * It starts real processes from this binary in a temporary directory: a
 * 'drover server' and --agents 'drover agent --fake-gpus 8xH100' (or, with
 * --up, one 'drover up'), submits --jobs one-GPU jobs in batches, and
 * meanwhile SIGKILLs the controller --controller-kills times and an agent
 * --agent-kills times (with --up, each kill is of drover up, controller
 * and agent at once), restarting each at once on the same state. Every
 * task appends "JOB TASK EPOCH" to one file when it starts, then sleeps
 * --task-ms. At the end it waits for every answered job to finish and
 * prints one JSON object:
 *
 *   answered       jobs whose submit was answered 201
 *   lost           answered jobs the controller no longer knows
 *   started_twice  (job, task, epoch) starts seen more than once, from the
 *                  tasks' own lines: a task started twice in one attempt
 *   stuck          answered jobs not finished --timeout s after the last
 *                  submit
 *   succeeded, failed (with up to 5 reasons), stuck_jobs (up to 5 stuck
 *   jobs: state, reason and nodes, to tell where they sat), requeued
 *   (jobs that ran under more than one epoch), seconds, and the kills done.
 *
 * It exits 0 when lost, started_twice and stuck are 0 and no job failed.
 */
#include "drover/bench.h"
#include "drover/client.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/options.h"
#include "bench_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "soak-admin-token"
#define CLUSTER_TOKEN "soak-cluster-token"
#define MAX_AGENTS 64
#define BATCH 100

struct soak {
	int jobs, ckills, akills, nagents, task_ms, lease_s, timeout_s;
	bool up, keep;
	char tmp[256], self[4096], url[80], listen[64], starts[512];
	pid_t ctl;                   /* the server, or drover up */
	pid_t agents[MAX_AGENTS];
	long long *answered;
	size_t nanswered, acap;
	int ckills_done, akills_done;
	struct drv_client *c;
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Written 0600: the server's config holds tokens (a looser one is refused). */
static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return DRV_EIO;
	fchmod(fileno(f), 0600);
	fputs(text, f);
	return fclose(f) ? DRV_EIO : 0;
}

/* GET path; 0 and r filled on a 2xx answer. */
static int get(struct soak *S, const char *path, struct drv_client_reply *r)
{
	char err[256];

	if (drv_client_call(S->c, "GET", path, NULL, NULL, 0, 5000, r, err, sizeof(err)))
		return DRV_ECONN;
	if (r->status / 100 == 2)
		return 0;
	drv_client_reply_release(r);
	return DRV_EIO;
}

static bool healthy(struct soak *S)
{
	struct drv_client_reply r;

	if (get(S, "/healthz", &r))
		return false;
	drv_client_reply_release(&r);
	return true;
}

static int wait_healthy(struct soak *S, double seconds)
{
	double end = drv_mono_s() + seconds;

	while (drv_mono_s() < end) {
		if (healthy(S))
			return 0;
		sleep_ms(50);
	}
	fprintf(stderr, "bench soak: the controller did not come back (logs in %s)\n", S->tmp);
	return DRV_ETIMEDOUT;
}

/* --- the processes ------------------------------------------------------ */

static int start_ctl(struct soak *S)
{
	char state[600], cfg[600], log[600];

	snprintf(state, sizeof(state), "%s/state", S->tmp);
	snprintf(cfg, sizeof(cfg), "%s/state/config.yaml", S->tmp);
	snprintf(log, sizeof(log), "%s/%s.log", S->tmp, S->up ? "up" : "server");
	if (S->up) {
		char *argv[] = { S->self, "up", "--state", state, "--listen", S->listen,
				 "--agent-listen", "127.0.0.1:0", "--fake-gpus", "8xH100",
				 "--name", "box", NULL };
		S->ctl = bench_spawn(argv, log);
	} else {
		char *argv[] = { S->self, "server", "--listen", S->listen, "--state", state,
				 "--config", cfg, NULL };
		S->ctl = bench_spawn(argv, log);
	}
	return S->ctl < 0 ? DRV_EIO : wait_healthy(S, 60);
}

static int start_agent(struct soak *S, int i)
{
	char name[32], state[600], log[600];
	char *argv[] = { S->self, "agent", "--server", S->url, "--name", name, "--listen",
			 "none", "--fake-gpus", "8xH100", "--run-as-self", "--state", state, NULL };

	snprintf(name, sizeof(name), "soak-%02d", i + 1);
	snprintf(state, sizeof(state), "%s/agent-%02d", S->tmp, i + 1);
	snprintf(log, sizeof(log), "%s/agent-%02d.log", S->tmp, i + 1);
	S->agents[i] = bench_spawn(argv, log);
	return S->agents[i] < 0 ? DRV_EIO : 0;
}

static void kill_wait(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The settings the fault tests use: fast heartbeats, a short lease, and
 * requeues that never fail a job. */
static int write_config(struct soak *S)
{
	char dir[600], path[700], text[1024];

	snprintf(dir, sizeof(dir), "%s/state", S->tmp);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	snprintf(text, sizeof(text),
		 "tokens:\n  - token: \"%s\"\n    user: soak\n    admin: true\n"
		 "cluster_token: \"%s\"\nallow_root_tasks: true\nheartbeat_interval_s: 1\n"
		 "heartbeat_timeout_s: 3\nagent_lease_s: %d\nretry_limit: 1000\n"
		 "sched_delay_ms: 10\n", TOKEN, CLUSTER_TOKEN, S->lease_s);
	return write_text(path, text);
}

/* SIGKILL of the controller (or drover up), restarted at once. */
static int kill_ctl(struct soak *S)
{
	kill_wait(S->ctl);
	S->ckills_done++;
	return start_ctl(S);
}

/* SIGKILL of one agent, restarted at once (with --up: of drover up). */
static int kill_agent(struct soak *S)
{
	int i;

	if (S->up) {
		S->akills_done++;
		kill_wait(S->ctl);
		return start_ctl(S);
	}
	i = S->akills_done++ % S->nagents;
	kill_wait(S->agents[i]);
	return start_agent(S, i);
}

/* --- submitting ----------------------------------------------------------- */

static char *batch_body(const struct soak *S, int first, int n)
{
	json_t *items = json_array(), *body;
	char cmd[1024], name[32], *s;

	snprintf(cmd, sizeof(cmd), "echo \"$DROVER_JOB_ID $DROVER_TASK_ID $DROVER_EPOCH\" >>%s; "
		 "sleep %d.%03d", S->starts, S->task_ms / 1000, S->task_ms % 1000);
	for (int k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "soak-%d", first + k);
		json_array_append_new(items, json_pack(
			"{s:s, s:s, s:s, s:[{s:s, s:i, s:i, s:[s,s,s]}]}", "apiVersion", "drover/v1",
			"kind", "Job", "name", name, "groups", "name", "main", "count", 1, "gpus", 1,
			"command", "sh", "-c", cmd));
	}
	body = json_pack("{s:o}", "items", items);
	s = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	return s;
}

/* One batch; its ids join the answered ones on a 201. */
static int submit_batch(struct soak *S, int first, int n)
{
	struct drv_client_reply r;
	char *body = batch_body(S, first, n), err[256];
	const json_t *x;
	size_t k;
	int rc = drv_client_call(S->c, "POST", "/v1/jobs/batch", "application/json", body,
				 strlen(body), 30000, &r, err, sizeof(err));

	free(body);
	if (rc)
		return DRV_ECONN;
	if (r.status != 201) {
		drv_client_reply_release(&r);
		return DRV_EIO;
	}
	json_array_foreach(json_object_get(r.json, "items"), k, x) {
		DRV_GROW(S->answered, S->nanswered + 1, S->acap);
		S->answered[S->nanswered++] = json_integer_value(json_object_get(x, "id"));
	}
	drv_client_reply_release(&r);
	return 0;
}

/* Submits every job, a kill due after each share of them. */
static int submit_all(struct soak *S)
{
	int kills = S->ckills + S->akills, done = 0, k = 0;
	int every = kills ? DRV_MAX(S->jobs / (kills + 1), 1) : S->jobs + 1;

	while (done < S->jobs) {
		int n = DRV_MIN(DRV_MIN(BATCH, S->jobs - done), every);

		if (submit_batch(S, done, n) == 0)
			done += n;
		else if (!healthy(S) && wait_healthy(S, 60))
			return DRV_EIO;
		while (k < kills && done >= (k + 1) * every) {
			/* alternate the kinds, so each spreads over the run */
			bool ctl = S->ckills_done < S->ckills &&
				   (S->akills_done >= S->akills ||
				    S->ckills_done * S->akills <= S->akills_done * S->ckills);
			if ((ctl ? kill_ctl(S) : kill_agent(S)) < 0)
				return DRV_EIO;
			k++;
		}
	}
	return 0;
}

/* --- checking -------------------------------------------------------------- */

struct tally {
	int lost, stuck, succeeded, failed;
	json_t *reasons, *stuck_jobs;
};

/* Every job, by pages, into states (index: id). */
static int read_states(struct soak *S, json_t **states)
{
	long long after = 0;

	*states = json_object();
	for (;;) {
		struct drv_client_reply r;
		char path[96];
		const json_t *x;
		size_t k;

		snprintf(path, sizeof(path), "/v1/jobs?limit=10000&after=%lld", after);
		if (get(S, path, &r))
			return DRV_EIO;
		json_array_foreach(json_object_get(r.json, "items"), k, x) {
			char id[24];

			snprintf(id, sizeof(id), "%lld",
				 (long long)json_integer_value(json_object_get(x, "id")));
			json_object_set(*states, id, (json_t *)x);
		}
		after = json_integer_value(json_object_get(r.json, "next_after"));
		drv_client_reply_release(&r);
		if (!after)
			return 0;
	}
}

static bool final_state(const char *st)
{
	return st && strcmp(st, "pending") && strcmp(st, "scheduled") && strcmp(st, "running") &&
	       strcmp(st, "preempted");
}

static void tally_release(struct tally *t)
{
	json_decref(t->reasons);
	json_decref(t->stuck_jobs);
	t->reasons = t->stuck_jobs = NULL;
}

/* Counts the answered jobs by where they are; 1 when all are final. */
static int tally(struct soak *S, struct tally *t)
{
	json_t *states;

	memset(t, 0, sizeof(*t));
	t->reasons = json_array();
	t->stuck_jobs = json_array();
	if (read_states(S, &states) < 0) {
		tally_release(t);
		return DRV_EIO;
	}
	for (size_t k = 0; k < S->nanswered; k++) {
		char id[24];
		const json_t *j;
		const char *st;

		snprintf(id, sizeof(id), "%lld", S->answered[k]);
		j = json_object_get(states, id);
		st = json_string_value(json_object_get(j, "state"));
		if (!j)
			t->lost++;
		else if (!final_state(st)) {
			if (t->stuck++ < 5)
				json_array_append_new(t->stuck_jobs, json_sprintf(
					"job %s %s, attempt %lld, on '%s': %s", id, st ? st : "?",
					(long long)json_integer_value(json_object_get(j, "attempt")),
					json_string_value(json_object_get(j, "nodelist")),
					json_string_value(json_object_get(j, "reason"))));
		}
		else if (!strcmp(st, "succeeded"))
			t->succeeded++;
		else if (t->failed++ < 5)
			json_array_append_new(t->reasons, json_sprintf("job %s %s: %s", id, st,
				json_string_value(json_object_get(j, "reason"))));
	}
	json_decref(states);
	return t->stuck == 0;
}

/* From the tasks' own start lines: starts of one (job, task, epoch) seen
 * more than once, and jobs that ran under more than one epoch. */
static void count_starts(const struct soak *S, int *twice, int *requeued, int *lines)
{
	char line[96], (*seen)[96] = NULL;
	size_t n = 0, cap = 0;
	FILE *f = fopen(S->starts, "r");

	*twice = *requeued = *lines = 0;
	while (f && fgets(line, sizeof(line), f)) {
		DRV_GROW(seen, n + 1, cap);
		snprintf(seen[n++], sizeof(seen[0]), "%s", line);
	}
	if (f)
		fclose(f);
	*lines = (int)n;
	qsort(seen, n, sizeof(seen[0]), (int (*)(const void *, const void *))strcmp);
	for (size_t k = 1; k < n; k++) {
		long long j1 = atoll(seen[k - 1]), j2 = atoll(seen[k]);

		if (!strcmp(seen[k], seen[k - 1]))
			(*twice)++;
		else if (j1 == j2)
			(*requeued)++;
	}
	drv_free(seen);
}

/* --- the run ------------------------------------------------------------------ */

static int parse(int argc, char **argv, struct soak *S)
{
	bool json = false;
	const struct drv_option table[] = {
		DRV_OPT_INT(0, "jobs", &S->jobs, 1, 1000000, "N", "jobs to submit (default 10000)"),
		DRV_OPT_INT(0, "controller-kills", &S->ckills, 0, 100000, "N",
			    "SIGKILLs of the controller, spread over the run (default 100)"),
		DRV_OPT_INT(0, "agent-kills", &S->akills, 0, 100000, "N",
			    "SIGKILLs of an agent (with --up: of drover up) (default 20)"),
		DRV_OPT_INT(0, "agents", &S->nagents, 1, MAX_AGENTS, "N",
			    "agents of 8 simulated GPUs (default 4)"),
		DRV_OPT_FLAG(0, "up", &S->up, "one drover up instead of a server and agents"),
		DRV_OPT_INT(0, "task-ms", &S->task_ms, 0, 600000, "MS",
			    "how long each task sleeps (default 200)"),
		DRV_OPT_INT(0, "lease", &S->lease_s, 2, 3600, "SECONDS",
			    "the server's agent_lease_s (default 6)"),
		DRV_OPT_INT(0, "timeout", &S->timeout_s, 1, 86400, "SECONDS",
			    "how long jobs may take to finish after the last submit (default 600)"),
		DRV_OPT_FLAG(0, "keep", &S->keep, "keep the temporary directory"),
		DRV_OPT_FLAG(0, "json", &json, "JSON output (the only output)"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover bench soak",
		.usage = "drover bench soak [--jobs N] [--controller-kills N] [--agent-kills N] "
			 "[--agents N | --up] [--json]",
		.about = "Exactly-once under faults: jobs submitted while the controller and agents "
			 "are SIGKILLed and restarted; counts answered jobs lost, tasks started "
			 "twice, jobs stuck.",
		.options = table,
	};

	*S = (struct soak){ .jobs = 10000, .ckills = 100, .akills = 20, .nagents = 4,
			    .task_ms = 200, .lease_s = 6, .timeout_s = 600 };
	return drv_opts_parse(&cmd, argc, argv);
}

static int setup(struct soak *S)
{
	struct drv_client_conf cc = { .server = S->url, .token = TOKEN };
	ssize_t n = readlink("/proc/self/exe", S->self, sizeof(S->self) - 1);

	if (n <= 0)
		return DRV_EIO;
	S->self[n] = '\0';
	snprintf(S->tmp, sizeof(S->tmp), "%s/drover-soak-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(S->tmp))
		return DRV_EIO;
	snprintf(S->starts, sizeof(S->starts), "%s/starts", S->tmp);
	snprintf(S->listen, sizeof(S->listen), "127.0.0.1:%d", bench_free_port());
	snprintf(S->url, sizeof(S->url), "http://%s", S->listen);
	setenv("DROVER_AGENT_TOKEN", CLUSTER_TOKEN, 1);   /* inherited, never on argv */
	setenv("XDG_CONFIG_HOME", S->tmp, 1);             /* drover up's client config */
	S->c = drv_client_new(&cc);
	if (write_config(S) < 0 || start_ctl(S) < 0)
		return DRV_EIO;
	for (int i = 0; !S->up && i < S->nagents; i++)
		if (start_agent(S, i) < 0)
			return DRV_EIO;
	return 0;
}

static void teardown(struct soak *S)
{
	char cmd[400];

	/* drover up's Ctrl-C stops its tasks; agents leave theirs to the lease */
	if (S->up && S->ctl > 0) {
		kill(S->ctl, SIGINT);
		waitpid(S->ctl, NULL, 0);
	} else {
		kill_wait(S->ctl);
	}
	for (int i = 0; !S->up && i < S->nagents; i++)
		if (S->agents[i] > 0) {
			kill(S->agents[i], SIGINT);
			waitpid(S->agents[i], NULL, 0);
		}
	if (!S->keep) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", S->tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "bench soak: could not remove %s\n", S->tmp);
	}
	drv_client_free(S->c);
	drv_free(S->answered);
}

static json_t *result(struct soak *S, const struct tally *t, double seconds)
{
	int twice, requeued, lines;

	count_starts(S, &twice, &requeued, &lines);
	return json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:O,"
			 " s:O, s:i, s:f, s:b}",
			 "mode", S->up ? "up" : "server+agents", "jobs", S->jobs,
			 "answered", (int)S->nanswered, "lost", t->lost, "started_twice", twice,
			 "stuck", t->stuck, "succeeded", t->succeeded, "failed", t->failed,
			 "requeued", requeued, "task_starts", lines,
			 "controller_kills", S->ckills_done, "agent_kills", S->akills_done,
			 "agents", S->up ? 1 : S->nagents, "failed_reasons", t->reasons,
			 "stuck_jobs", t->stuck_jobs,
			 "lease_s", S->lease_s, "seconds", seconds,
			 "ok", !t->lost && !twice && !t->stuck && !t->failed);
}

int drv_bench_soak(int argc, char **argv)
{
	struct soak S;
	struct tally t = { 0 };
	double t0 = drv_mono_s(), end;
	json_t *out;
	int rc = parse(argc, argv, &S);

	if (rc < 0)
		return drv_opts_exit(rc);
	signal(SIGPIPE, SIG_IGN);
	rc = setup(&S);
	if (rc == 0)
		rc = submit_all(&S);
	end = drv_mono_s() + S.timeout_s;
	while (rc == 0) {
		int r = tally(&S, &t);

		if (r == 1 || drv_mono_s() > end)
			break;
		tally_release(&t);
		sleep_ms(r < 0 ? 200 : 1000);
	}
	if (rc < 0) {
		fprintf(stderr, "bench soak: the run broke off (files in %s)\n", S.tmp);
		S.keep = true;
		teardown(&S);
		return DRV_EXIT_FAIL;
	}
	out = result(&S, &t, drv_mono_s() - t0);
	tally_release(&t);
	rc = json_is_true(json_object_get(out, "ok")) ? DRV_EXIT_OK : DRV_EXIT_FAIL;
	if (rc)
		S.keep = true;
	teardown(&S);
	json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	putchar('\n');
	json_decref(out);
	return rc;
}
