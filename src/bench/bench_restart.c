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
#include "drover/dynbuf.h"
#include "drover/spec.h"
#include "drover/store.h"
#include "bench_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

/* A CSV field: quoted, its quotes doubled. */
static void csv_text(struct drv_dynbuf *b, const char *v)
{
	const char *q;

	drv_dynbuf_add(b, "\"", 1);
	while ((q = strchr(v, '"'))) {
		drv_dynbuf_add(b, v, (size_t)(q - v) + 1);
		drv_dynbuf_add(b, "\"", 1);
		v = q + 1;
	}
	drv_dynbuf_addstr(b, v);
	drv_dynbuf_add(b, "\"", 1);
}

/* Sends b to the COPY in progress on c once it holds more than a chunk
 * (or always, when force); 0 or -1. */
static int copy_send(PGconn *c, struct drv_dynbuf *b, bool force)
{
	if (!force && b->len < (1 << 20))
		return 0;
	if (b->len && PQputCopyData(c, b->buf, (int)b->len) != 1)
		return -1;
	drv_dynbuf_reset(b);
	return 0;
}

/* Runs the COPY statement sql for rows lo..hi; row(i, buf) writes row i's
 * CSV line. */
static int copy_rows(PGconn *c, const char *sql, int lo, int hi,
		     void (*row)(int i, struct drv_dynbuf *b, void *cls), void *cls, char *err,
		     size_t errsz)
{
	struct drv_dynbuf b = DRV_DYNBUF_INIT(64 << 20);
	PGresult *r = PQexec(c, sql);
	int rc = PQresultStatus(r) == PGRES_COPY_IN ? 0 : -1;

	if (rc)
		snprintf(err, errsz, "%s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	for (int i = lo; rc == 0 && i <= hi; i++) {
		row(i, &b, cls);
		rc = copy_send(c, &b, false);
	}
	if (rc == 0)
		rc = copy_send(c, &b, true);
	if (PQputCopyEnd(c, rc ? "the bench gave up" : NULL) != 1)
		rc = -1;
	r = PQgetResult(c);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		snprintf(err, errsz, "%s: %s", sql, PQresultErrorMessage(r));
		rc = -1;
	}
	PQclear(r);
	while ((r = PQgetResult(c)))
		PQclear(r);
	drv_dynbuf_release(&b);
	return rc;
}

struct rows {
	json_t *spec;
	int64_t t0;
};

static bool live_at(int i) { return i % 100 == 1; }

/* The jobs table's row of job i, as put_job writes it. */
static void job_row(int i, struct drv_dynbuf *b, void *cls)
{
	struct rows *R = cls;
	int64_t t = R->t0 + i / 100;
	bool live = live_at(i);
	char *doc = job_doc(R->spec, (uint64_t)i, live, t);

	drv_dynbuf_addf(b, "%d,bench-train,bench,default,%s,%" PRId64 ",", i,
			live ? "pending" : "succeeded", t);
	csv_text(b, doc);
	drv_dynbuf_addf(b, ",%" PRId64 ",%d\n", live ? 0 : t + 61, live ? 0 : 1);
	free(doc);
}

/* The acct row of job i (finished jobs only; an empty line skipped by the caller). */
static void acct_row(int i, struct drv_dynbuf *b, void *cls)
{
	struct rows *R = cls;
	int64_t t = R->t0 + i / 100;

	if (live_at(i))
		return;
	drv_dynbuf_addf(b, "%d,1,bench-train,bench,default,default,succeeded,%" PRId64 ",%" PRId64
			",%" PRId64 ",0,60000,41667\n", i, t, t + 1, t + 61);
}

/* Runs sql on c; 0, or -1 with the reason in err. */
static int exec_ok(PGconn *c, const char *sql, char *err, size_t errsz)
{
	PGresult *r = PQexec(c, sql);
	int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;

	if (rc)
		snprintf(err, errsz, "%.60s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	return rc;
}

/*
 * PostgreSQL: the schema made by opening the store (its migrations), then
 * write_state's rows with COPY, in one transaction. The store's pipelined
 * put_job and put_acct took 191 s for the million; COPY with the tables'
 * triggers on was slower still: each row's trigger updates the one row
 * of done_counts (or acct_month), and within one transaction each update
 * walks the versions made before it. So the triggers are off for the
 * COPY and the two summaries are filled once from the rows, as the
 * triggers would have left them. The columns and the month expression are
 * the store's (store_pg.c: schema, MONTH_OF); a change there shows here as
 * a failed COPY or a wrong month cost.
 */
static int write_state_pg(const char *url, const char *pw, int n, struct rows *R, char *err,
			  size_t errsz)
{
	static const char *const before[] = {
		"BEGIN", "ALTER TABLE jobs DISABLE TRIGGER jobs_count",
		"ALTER TABLE acct DISABLE TRIGGER acct_month", NULL };
	static const char *const after[] = {
		"INSERT INTO done_counts SELECT state, COUNT(*) FROM jobs WHERE done = 1"
		" GROUP BY state ON CONFLICT (state) DO UPDATE SET n = done_counts.n + EXCLUDED.n",
		"INSERT INTO acct_month SELECT CAST(extract(epoch FROM date_trunc('month',"
		" to_timestamp(end_time) AT TIME ZONE 'UTC')) AS BIGINT), tenant, SUM(cost_micro)"
		" FROM acct GROUP BY 1, 2 ON CONFLICT (month, tenant)"
		" DO UPDATE SET micro = acct_month.micro + EXCLUDED.micro",
		"ALTER TABLE jobs ENABLE TRIGGER jobs_count",
		"ALTER TABLE acct ENABLE TRIGGER acct_month", "COMMIT", "VACUUM (ANALYZE) jobs, acct", NULL };
	struct drv_store *st = NULL;
	PGconn *c;
	int rc;

	rc = drv_store_open_pg(url, pw, &st, err, errsz);
	drv_store_close(st);
	if (rc < 0)
		return rc;
	c = bench_pg_connect(url, pw, err, errsz);
	if (!c)
		return DRV_EIO;
	for (int i = 0; rc == 0 && before[i]; i++)
		rc = exec_ok(c, before[i], err, errsz);
	if (rc == 0)
		rc = copy_rows(c, "COPY jobs(id,name,uname,tenant,state,submit_time,doc,end_time,"
				  "done) FROM STDIN (FORMAT csv)", 1, n, job_row, R, err, errsz);
	if (rc == 0)
		rc = copy_rows(c, "COPY acct(job,attempt,name,uname,tenant,pool,state,submit_time,"
				  "start_time,end_time,exit_code,gpu_milli_s,cost_micro)"
				  " FROM STDIN (FORMAT csv)", 1, n, acct_row, R, err, errsz);
	for (int i = 0; rc == 0 && after[i]; i++)
		rc = exec_ok(c, after[i], err, errsz);
	PQfinish(c);   /* a failure above: the transaction is rolled back */
	return rc < 0 ? DRV_EIO : 0;
}

/* The state of n jobs, every hundredth pending (the newest is finished):
 * in dir/state.db through the store API in one transaction, or on
 * PostgreSQL (url) with COPY. */
static int write_state(const char *dir, int n, const char *url, const char *pw, char *err,
		       size_t errsz)
{
	char path[700];
	struct drv_store *st = NULL;
	struct rows R = { pod_spec(), drv_wall_s() - n / 100 - 3600 };
	int rc;

	if (!R.spec) {
		snprintf(err, errsz, "cannot make the Pod's canonical spec");
		return DRV_EINVAL;
	}
	if (url) {
		rc = write_state_pg(url, pw, n, &R, err, errsz);
		json_decref(R.spec);
		return rc;
	}
	snprintf(path, sizeof(path), "%s/state.db", dir);
	rc = drv_store_open_sqlite(path, &st, err, errsz);
	if (rc == 0)
		rc = drv_store_begin(st);
	for (int i = 1; rc == 0 && i <= n; i++)
		rc = put_one(st, R.spec, (uint64_t)i, live_at(i), R.t0 + i / 100);
	if (rc == 0)
		rc = drv_store_commit(st);
	if (rc < 0 && st)
		snprintf(err, errsz, "%s", st->err);
	drv_store_close(st);
	json_decref(R.spec);
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
		bench_child_output(log);
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

json_t *bench_restart(const char *self, const char *tmp, int njobs, const char *url,
		      const char *pw)
{
	char dir[600], cfg[700], path[64], err[512], base[64];
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
	if (url)
		fprintf(f, "store: \"%s\"\n", url);
	if (url && pw)
		fprintf(f, "store_password_file: \"%s\"\n", pw);
	fclose(f);
	fprintf(stderr, "bench api: writing a state of %d jobs\n", njobs);
	t0 = drv_mono_s();
	if (write_state(dir, njobs, url, pw, err, sizeof(err)) < 0)
		return json_pack("{s:s}", "error", err);
	fprintf(stderr, "bench api: state written in %.1f s; restart from SIGKILL\n",
		drv_mono_s() - t0);
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
	snprintf(path, sizeof(path), "/v1/jobs/%d", njobs);
	cc.server = base;
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
