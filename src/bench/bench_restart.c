/*
 * bench_restart.c: 'drover bench api''s restart figure, restart_1m_jobs_s.
 *
 * It writes a state of N jobs straight into a new state.db through the
 * store API (one transaction; 1M HTTP submits would take the bench's
 * whole budget): 99% finished (succeeded, each with its accounting row)
 * and every hundredth job pending, whose specs load as a submitted 1-GPU
 * Pod's do. It starts 'drover server' on it, waits for /healthz, kills it
 * with SIGKILL, starts it again and times from the kill until /healthz
 * says 200 and the newest job (a finished one, so read from the store)
 * reads back. Returns {"seconds": …, …} or {"error": …}.
 */
#include "drover/bench.h"
#include "drover/client.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/spec.h"
#include "drover/store.h"
#include "bench_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RTOKEN "bench-restart-token"

static const char pod[] =
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: bench-train\nspec:\n  containers:\n"
	"  - name: main\n    image: busybox:1.36\n    command: [\"sh\", \"-c\", \"true\"]\n"
	"    resources:\n      limits:\n        nvidia.com/gpu: 1\n";

/* The canonical spec of the Pod above, as a submit stores it. */
static json_t *pod_spec(void)
{
	struct drv_jobspec spec;
	struct drv_diags d;
	json_t *j = NULL;

	drv_jobspec_init(&spec);
	drv_diags_init(&d, "bench pod");
	if (drv_spec_parse_buffer(pod, sizeof(pod) - 1, "pod.yaml", &spec, &d) == 0 && !d.nerrors) {
		free(spec.job.user);
		spec.job.user = strdup("bench");
		j = drv_jobspec_to_json(&spec);
	}
	drv_diags_release(&d);
	drv_jobspec_release(&spec);
	return j;
}

/* One job's store document, as the server writes one (state_json.c). */
static char *job_doc(json_t *spec, uint64_t id, bool live, int64_t t)
{
	json_t *doc = json_pack(
		"{s:I,s:s,s:s,s:i,s:i,s:I,s:I,s:I,s:I,s:o,s:O,s:n,s:b,s:b,s:[],s:[{s:I,s:n,s:s,s:s}]}",
		"id", (json_int_t)id, "state", live ? "pending" : "succeeded", "reason",
		live ? "submitted by bench" : "every task exited with code 0", "attempt", live ? 0 : 1,
		"requeues", 0, "epoch", (json_int_t)(live ? 0 : id), "submit_time", (json_int_t)t,
		"start_time", (json_int_t)(live ? 0 : t + 1), "end_time", (json_int_t)(live ? 0 : t + 61),
		"exit_code", live ? json_null() : json_integer(0), "spec", spec, "stop_reason",
		"requeue_on_stop", 0, "holding", 0, "tasks", "events", "time", (json_int_t)t, "from",
		"to", "pending", "reason", "submitted by bench");
	char *s;

	json_object_set_new(json_object_get(doc, "spec"), "id", json_integer((json_int_t)id));
	s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return s;
}

static int put_one(struct drv_store *st, json_t *spec, uint64_t id, bool live, int64_t t)
{
	char *doc;
	struct drv_store_job row = { .id = id, .name = "bench-train", .user = "bench",
				     .tenant = "default", .state = live ? "pending" : "succeeded",
				     .submit_time = t, .end_time = live ? 0 : t + 61, .done = !live };
	struct drv_store_acct a = { .job = id, .attempt = 1, .name = "bench-train",
				    .user = "bench", .tenant = "default", .pool = "default",
				    .state = "succeeded", .submit_time = t, .start_time = t + 1,
				    .end_time = t + 61, .has_exit = true, .gpu_milli_s = 60000,
				    .cost_micro = 41667 };
	int rc;

	doc = job_doc(spec, id, live, t);
	row.doc = doc;
	rc = drv_store_put_job(st, &row);
	if (rc == 0 && !live)
		rc = drv_store_put_acct(st, &a);
	free(doc);
	return rc;
}

/* state.db in dir with n jobs, every hundredth pending (the newest is finished). */
static int write_state(const char *dir, int n, char *err, size_t errsz)
{
	char path[700];
	struct drv_store *st;
	json_t *spec = pod_spec();
	int64_t t0 = drv_wall_s() - n / 100 - 3600;
	int rc;

	if (!spec) {
		snprintf(err, errsz, "cannot make the Pod's canonical spec");
		return DRV_EINVAL;
	}
	snprintf(path, sizeof(path), "%s/state.db", dir);
	rc = drv_store_open_sqlite(path, &st, err, errsz);
	if (rc == 0)
		rc = drv_store_begin(st);
	for (int i = 1; rc == 0 && i <= n; i++)
		rc = put_one(st, spec, (uint64_t)i, i % 100 == 1, t0 + i / 100);
	if (rc == 0)
		rc = drv_store_commit(st);
	if (rc < 0)
		snprintf(err, errsz, "%s", st->err);
	drv_store_close(st);
	json_decref(spec);
	return rc;
}

static pid_t start(const char *self, const char *dir, const char *cfg, int port)
{
	char listen[64], log[600];
	pid_t pid;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s.log", dir);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execl(self, self, "server", "--listen", listen, "--state", dir, "--config", cfg,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* GET path answers 200 (one try). */
static bool ok(struct drv_client *c, const char *path)
{
	struct drv_client_reply r;
	char err[256];
	bool good = false;

	if (!drv_client_call(c, "GET", path, NULL, NULL, 0, 2000, &r, err, sizeof(err))) {
		good = r.status == 200;
		drv_client_reply_release(&r);
	}
	return good;
}

/* Seconds until /healthz and path answer 200; < 0 after timeout_s. */
static double until_ready(struct drv_client *c, const char *path, double t0, double timeout_s)
{
	struct timespec ms = { 0, 5 * 1000000L };

	while (drv_mono_s() - t0 < timeout_s) {
		if (ok(c, "/healthz") && ok(c, path))
			return drv_mono_s() - t0;
		nanosleep(&ms, NULL);
	}
	return -1;
}

json_t *bench_restart(const char *self, const char *tmp, int njobs)
{
	char dir[600], cfg[700], path[64], err[512], url[64];
	struct drv_client_conf cc = { .token = RTOKEN };
	struct drv_client *c;
	int port = bench_free_port();
	double first, t0, secs;
	pid_t pid;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/restart", tmp);
	snprintf(cfg, sizeof(cfg), "%s/restart.yaml", tmp);
	mkdir(dir, 0700);
	f = fopen(cfg, "w");
	if (!f)
		return json_pack("{s:s}", "error", "cannot write the config");
	fchmod(fileno(f), 0600);   /* it holds a token */
	fprintf(f, "tokens:\n  - token: \"%s\"\n    user: bench\n    admin: true\n", RTOKEN);
	fclose(f);
	fprintf(stderr, "bench api: writing a state of %d jobs\n", njobs);
	t0 = drv_mono_s();
	if (write_state(dir, njobs, err, sizeof(err)) < 0)
		return json_pack("{s:s}", "error", err);
	fprintf(stderr, "bench api: state written in %.1f s; restart from SIGKILL\n",
		drv_mono_s() - t0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	snprintf(path, sizeof(path), "/v1/jobs/%d", njobs);
	cc.server = url;
	c = drv_client_new(&cc);
	t0 = drv_mono_s();
	pid = start(self, dir, cfg, port);
	first = until_ready(c, path, t0, 300);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	t0 = drv_mono_s();
	pid = start(self, dir, cfg, port);
	secs = first < 0 ? -1 : until_ready(c, path, t0, 120);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	drv_client_free(c);
	if (secs < 0)
		return json_pack("{s:s}", "error", "the server did not come back (see restart.log)");
	return json_pack("{s:f,s:f,s:i,s:i,s:f,s:s}", "seconds", secs, "first_start_s", first,
			 "finished_jobs", njobs - (njobs + 99) / 100, "unfinished_jobs",
			 (njobs + 99) / 100, "target_s", 2.0, "how",
			 "SIGKILL, then a new 'drover server' on the same state until /healthz is 200 "
			 "and GET /v1/jobs/NEWEST (finished: read from the store) is 200");
}
