/*
 * bench_api.c: 'drover bench api': the control plane measured end to end on this
 * machine, and Slurm beside it in the same run.
 *
 * It starts everything itself from this binary, on loopback, in a
 * temporary directory: a 'drover server' with its SQLite store, and (for
 * the second half) 16 'drover agent --fake-gpus 8xH100' processes. Then:
 *
 *   1. durable submits per second, against a server with no nodes (every
 *      job stays pending, so the figure is the API, the store's synced
 *      write and the scheduling pass, not task churn): one client on one
 *      keep-alive connection; 32 concurrent clients (threads, one
 *      connection each); the batch path (POST /v1/jobs/batch); and one
 *      'drover submit' process per job, as sbatch is used;
 *   2. submit-to-running latency of one-GPU jobs on 16 simulated 8-GPU
 *      nodes: the time from sending the submit to the job's transition to
 *      running arriving on the watch stream (long-poll), p50/p99;
 *   3. the workload of ../shared/bench/slurm (500 single-node jobs of
 *      1/2/4/8 GPUs and 20 jobs of 4 nodes x 8 GPUs, each running `true`)
 *      end to end, first by drover's best path (one batch), then with one
 *      'drover submit' process a job; then the same CSV through
 *      slurm-local (`up 16 8`, `run`, `down`), and the ratios.
 *
 * The one JSON object it prints says what was measured and how. Every
 * child is killed on the way out (and on Ctrl-C).
 */
#include "drover/bench.h"
#include "drover/fsutil.h"
#include "drover/store.h"
#include "drover/client.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/dynbuf.h"
#include "drover/options.h"
#include "bench_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define TOKEN "bench-admin-token"
#define USER_TOKEN "bench-user-token"   /* a plain user: authorization applies */
#define CLUSTER_TOKEN "bench-cluster-token"
#define MAX_CHILDREN 256

struct opts {
	int nodes, gpus;
	int serial, clients, concurrent, batch, batch_size, procs, latency, workload;
	int restart_jobs, many;
	int failovers, leader_lease;   /* --failovers N, --leader-lease S (PostgreSQL) */
	bool own_pg;                   /* --store postgres: a PostgreSQL of the bench's own */
	bool slurm;
	const char *slurm_local;
	bool keep;
	const char *store, *store_pw;   /* --store URL, --store-password-file FILE */
};

static const char *store_url, *store_pw;
static struct bench_pg own_pg;   /* --store postgres: started here, stopped on the way out */
static volatile pid_t own_pg_pid;  /* its postmaster, for the signal handler */

static pid_t children[MAX_CHILDREN];
static int nchildren;
static char tmpdir[256];
static char self[4096];

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void kill_children(void)
{
	int i;
	double deadline;

	for (i = 0; i < nchildren; i++)
		if (children[i] > 0)
			kill(-children[i], SIGTERM);
	deadline = drv_mono_s() + 3;
	for (i = 0; i < nchildren; i++) {
		while (children[i] > 0) {
			pid_t r = waitpid(children[i], NULL, WNOHANG);
			if (r == children[i] || (r < 0 && errno == ECHILD)) {
				children[i] = 0;
				break;
			}
			if (drv_mono_s() > deadline) {
				kill(-children[i], SIGKILL);
				waitpid(children[i], NULL, 0);
				children[i] = 0;
				break;
			}
			sleep_ms(20);
		}
	}
	nchildren = 0;
}

static void on_signal(int sig)
{
	int i;
	for (i = 0; i < nchildren; i++)
		if (children[i] > 0)
			kill(-children[i], SIGKILL);
	if (own_pg_pid > 0)
		kill(own_pg_pid, SIGQUIT);   /* PostgreSQL's immediate shutdown */
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Starts argv in its own process group, output to log; returns the pid. */
static pid_t spawn(char *const argv[], const char *log)
{
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "bench api: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int fd;

		setpgid(0, 0);
		bench_child_output(log);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			dup2(fd, 0);
			close(fd);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	if (nchildren < MAX_CHILDREN)
		children[nchildren++] = pid;
	return pid;
}

static void stop_child(pid_t pid)
{
	int i;
	for (i = 0; i < nchildren; i++)
		if (children[i] == pid) {
			kill(-pid, SIGTERM);
			waitpid(pid, NULL, 0);
			children[i] = 0;
		}
}

/* Written 0600: the server's config holds tokens (a looser one is refused). */
static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return DRV_EIO;
	fchmod(fileno(f), 0600);
	fputs(text, f);
	return fclose(f) ? DRV_EIO : 0;
}

/* ---- a server of our own ---- */

struct server {
	pid_t pid;
	int port;
	char url[64];
	char state[512];
};

static struct drv_client *client_as(const char *url, const char *token)
{
	struct drv_client_conf c = { .server = (char *)url, .token = (char *)token };
	return drv_client_new(&c);
}

static struct drv_client *client_for(const char *url)
{
	return client_as(url, TOKEN);
}

/* A fresh Idempotency-Key on c's next calls: the server's key path runs
 * (a lookup, and the key's row in the job's transaction). */
static void fresh_key(struct drv_client *c, const char *who, int i)
{
	static _Atomic unsigned long seq;
	char line[160];

	snprintf(line, sizeof(line), "Idempotency-Key: bench-%d-%s-%d-%lu", (int)getpid(), who, i,
		 (unsigned long)++seq);
	drv_client_set_header(c, line);
}

static int call_json(struct drv_client *c, const char *method, const char *path,
		     const char *ctype, const char *body, size_t len, long timeout_ms,
		     struct drv_client_reply *r)
{
	char err[512];
	int rc = drv_client_call(c, method, path, ctype, body, len, timeout_ms, r, err,
				 sizeof(err));
	if (rc)
		return rc;
	if (r->status < 200 || r->status >= 300) {
		char *m = drv_client_reply_error(r);
		fprintf(stderr, "bench api: %s %s: HTTP %ld: %s\n", method, path, r->status, m);
		drv_free(m);
		drv_client_reply_release(r);
		return DRV_EIO;
	}
	return 0;
}

/* --store postgres://...: each server of the run starts on an empty
 * database (its schema dropped and made again), as each SQLite one does. */
static int empty_database(void)
{
	char err[512];
	PGconn *c = bench_pg_connect(store_url, store_pw, err, sizeof(err));
	PGresult *r;
	int rc = 0;

	if (!c) {
		fprintf(stderr, "bench api: cannot empty the database: %s\n", err);
		return -1;
	}
	r = PQexec(c, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		      "CREATE SCHEMA public");
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		fprintf(stderr, "bench api: cannot empty the database: %s\n",
			PQresultErrorMessage(r));
		rc = -1;
	}
	PQclear(r);
	PQfinish(c);
	return rc;
}

/*
 * The config NAME.yaml (and its tenants file) in the working directory,
 * its path in cfg; extra is appended (YAML lines, or ""). On PostgreSQL
 * the database is emptied first: each config starts on an empty state.
 */
static int server_config(const char *name, const char *extra, char *cfg, size_t cfgsz)
{
	char text[1400], path[600];

	snprintf(cfg, cfgsz, "%s/%s.yaml", tmpdir, name);
	/* the submits go as a plain user whom the tenants file lets use the
	 * default tenant and one class: the authorization check runs */
	snprintf(text, sizeof(text),
		 "tokens:\n  - token: \"%s\"\n    user: bench\n    admin: true\n"
		 "  - token: \"%s\"\n    user: benchuser\n"
		 "cluster_token: \"%s\"\nallow_root_tasks: true\ntenants: %s-tenants.yaml\n%s",
		 TOKEN, USER_TOKEN, CLUSTER_TOKEN, name, extra);
	if (store_url) {
		size_t n = strlen(text);

		if (empty_database())
			return DRV_EIO;
		snprintf(text + n, sizeof(text) - n, "store: \"%s\"\n", store_url);
		n = strlen(text);
		if (store_pw)
			snprintf(text + n, sizeof(text) - n, "store_password_file: \"%s\"\n",
				 store_pw);
	}
	if (write_file(cfg, text))
		return DRV_EIO;
	snprintf(path, sizeof(path), "%s/%s-tenants.yaml", tmpdir, name);
	return write_file(path, "kind: Tenants\npriorityClasses:\n  normal: {value: 0}\n"
				"tenants:\n  default:\n    users: [bench, benchuser]\n"
				"    allowedClasses: [normal]\n");
}

/* Starts 'drover server' on s->port with config cfg, state directory and
 * log named name, and waits (30 s) for /healthz 200. */
static int launch(struct server *s, const char *name, const char *cfg)
{
	char log[600], listen[64];
	struct drv_client *c;
	double deadline;
	int ok = 0;

	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
	snprintf(s->state, sizeof(s->state), "%s/%s", tmpdir, name);
	mkdir(s->state, 0700);
	snprintf(log, sizeof(log), "%s/%s.log", tmpdir, name);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", s->port);
	{
		char *argv[] = { self, "server", "--listen", listen, "--state", s->state,
				 "--config", (char *)cfg, NULL };
		s->pid = spawn(argv, log);
	}
	if (s->pid < 0)
		return DRV_EIO;
	c = client_for(s->url);
	deadline = drv_mono_s() + 30;
	while (drv_mono_s() < deadline) {
		struct drv_client_reply r;
		char err[256];
		if (!drv_client_call(c, "GET", "/healthz", NULL, NULL, 0, 1000, &r, err,
				     sizeof(err))) {
			ok = r.status == 200;
			drv_client_reply_release(&r);
			if (ok)
				break;
		}
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
			break;
		sleep_ms(50);
	}
	drv_client_free(c);
	if (!ok) {
		fprintf(stderr, "bench api: the server did not come up (log %s)\n", log);
		return DRV_EIO;
	}
	return 0;
}

static int start_server(struct server *s, const char *name)
{
	char cfg[600];

	memset(s, 0, sizeof(*s));
	s->port = bench_free_port();
	if (server_config(name, "", cfg, sizeof(cfg)))
		return DRV_EIO;
	return launch(s, name, cfg);
}

static int start_agents(const struct server *s, int n, const char *spec)
{
	struct drv_client *c = client_for(s->url);
	double deadline;
	int i, up = 0;

	setenv("DROVER_AGENT_TOKEN", CLUSTER_TOKEN, 1); /* inherited, never on argv */
	for (i = 0; i < n; i++) {
		char name[64], listen[64], log[600], state[600];
		snprintf(name, sizeof(name), "bench-node-%02d", i + 1);
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", bench_free_port());
		snprintf(log, sizeof(log), "%s/agent-%02d.log", tmpdir, i + 1);
		snprintf(state, sizeof(state), "%s/agent-%02d", tmpdir, i + 1);
		{
			char *argv[] = { self, "agent", "--server", (char *)s->url, "--name",
					 name, "--listen", listen, "--fake-gpus", (char *)spec,
					 "--run-as-self", "--state", state, NULL };
			if (spawn(argv, log) < 0)
				break;
		}
	}
	deadline = drv_mono_s() + 60;
	while (drv_mono_s() < deadline) {
		struct drv_client_reply r;
		const json_t *items, *x;
		size_t k;
		if (!call_json(c, "GET", "/v1/nodes?state=up", NULL, NULL, 0, 5000, &r)) {
			items = json_object_get(r.json, "items");
			up = 0;
			json_array_foreach(items, k, x)
				if (json_is_string(json_object_get(x, "state")) &&
				    !strcmp(json_string_value(json_object_get(x, "state")), "up"))
					up++;
			drv_client_reply_release(&r);
			if (up >= n)
				break;
		}
		sleep_ms(200);
	}
	drv_client_free(c);
	if (up < n) {
		fprintf(stderr, "bench api: only %d of %d agents came up (logs in %s)\n", up, n,
			tmpdir);
		return DRV_EIO;
	}
	return 0;
}

/* ---- job bodies ---- */

static char *pod_yaml(int gpus)
{
	char *b = drv_malloc(512);
	snprintf(b, 512,
		 "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bench-%dgpu\nspec:\n"
		 "  containers:\n  - name: main\n    image: busybox:1.36\n"
		 "    command: [\"true\"]\n    resources:\n      limits:\n"
		 "        nvidia.com/gpu: %d\n",
		 gpus, gpus);
	return b;
}

/* The workload's job as a Slurm script, as slurm-local submits it. */
static char *sbatch_script(int gpn, int nodes)
{
	char *b = drv_malloc(256);
	snprintf(b, 256,
		 "#!/bin/sh\n#SBATCH --job-name=wl-%dx%d\n#SBATCH -N %d\n#SBATCH -n %d\n"
		 "#SBATCH --gres=gpu:%d\ntrue\n",
		 nodes, gpn, nodes, nodes, gpn);
	return b;
}

/* The workload: 500 single-node jobs of 1/2/4/8 GPUs, 20 of 4 x 8 (for
 * 520 jobs; fewer keep the same mix, for a quick run). */
struct wjob {
	int gpn, nodes;
};

/* Nodes of the workload's multi-node jobs: 4, or all when fewer. */
static int gang_nodes = 4;

static int workload(struct wjob *w, int total)
{
	static const int g[] = { 1, 2, 4, 8 };
	int i, n = 0, single = 0;

	for (i = 0; i < total; i++) {
		if (i % 26 == 25) {
			w[n++] = (struct wjob){ 8, gang_nodes };
		} else {
			w[n++] = (struct wjob){ g[single % 4], 1 };
			single++;
		}
	}
	return n;
}

/* Canonical JSON of a job: submit it to the (node-less) server, read "spec". */
static json_t *canonical(struct drv_client *c, const char *ctype, const char *body)
{
	struct drv_client_reply r;
	char path[64];
	json_t *spec = NULL;
	long long id;

	if (call_json(c, "POST", "/v1/jobs", ctype, body, strlen(body), 10000, &r))
		return NULL;
	id = drv_json_int(r.json, "id", 0);
	drv_client_reply_release(&r);
	snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
	if (call_json(c, "GET", path, NULL, NULL, 0, 10000, &r))
		return NULL;
	spec = json_object_get(r.json, "spec");
	if (spec)
		json_incref(spec);
	drv_client_reply_release(&r);
	if (!spec)
		fprintf(stderr, "bench api: GET %s has no \"spec\"\n", path);
	return spec;
}

/* ---- submit rates ---- */

struct rate {
	int jobs, failed;
	double seconds;
};

static json_t *rate_json(const struct rate *r, const char *how)
{
	return json_pack("{s:s,s:i,s:i,s:f,s:f}", "how", how, "jobs", r->jobs, "failed",
			 r->failed, "seconds", r->seconds,
			 "per_s", r->seconds > 0 ? (double)(r->jobs - r->failed) / r->seconds : 0.0);
}

struct worker {
	const char *url;
	const char *body;
	const char *ctype;
	int n, failed;
	pthread_barrier_t *go;
};

static void *submit_worker(void *p)
{
	struct worker *w = p;
	struct drv_client *c = client_as(w->url, USER_TOKEN);
	int i;

	pthread_barrier_wait(w->go);
	for (i = 0; i < w->n; i++) {
		struct drv_client_reply r;
		char err[256];

		fresh_key(c, "submit", i);
		if (drv_client_call(c, "POST", "/v1/jobs", w->ctype, w->body, strlen(w->body),
				    30000, &r, err, sizeof(err))) {
			w->failed++;
			continue;
		}
		if (r.status != 201)
			w->failed++;
		drv_client_reply_release(&r);
	}
	drv_client_free(c);
	return NULL;
}

static struct rate submit_threads(const char *url, int clients, int total, const char *ctype,
				  const char *body)
{
	struct worker *w = drv_calloc((size_t)clients, sizeof(*w));
	pthread_t *t = drv_calloc((size_t)clients, sizeof(*t));
	pthread_barrier_t go;
	struct rate r = { 0 };
	double t0;
	int i;

	pthread_barrier_init(&go, NULL, (unsigned)clients + 1);
	for (i = 0; i < clients; i++) {
		w[i] = (struct worker){ url, body, ctype, total / clients + (i < total % clients),
					0, &go };
		pthread_create(&t[i], NULL, submit_worker, &w[i]);
	}
	pthread_barrier_wait(&go);
	t0 = drv_mono_s();
	for (i = 0; i < clients; i++) {
		pthread_join(t[i], NULL);
		r.failed += w[i].failed;
		r.jobs += w[i].n;
	}
	r.seconds = drv_mono_s() - t0;
	pthread_barrier_destroy(&go);
	drv_free(w);
	drv_free(t);
	return r;
}

static struct rate submit_batches(struct drv_client *c, const json_t *const *specs,
				  int nspecs, int total, int batch_size)
{
	struct rate r = { 0 };
	double t0 = drv_mono_s();
	int done = 0;

	while (done < total) {
		int n = DRV_MIN(batch_size, total - done), i;
		json_t *items = json_array(), *doc;
		struct drv_client_reply rep;
		char *body;

		for (i = 0; i < n; i++)
			json_array_append(items, (json_t *)specs[(done + i) % nspecs]);
		doc = json_pack("{s:o}", "items", items);
		body = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		fresh_key(c, "batch", done);
		if (call_json(c, "POST", "/v1/jobs/batch", "application/json", body, strlen(body),
			      120000, &rep)) {
			r.failed += n;
		} else {
			if (rep.status != 201 || (int)json_array_size(json_object_get(rep.json, "items")) != n)
				r.failed += n;
			drv_client_reply_release(&rep);
		}
		free(body);
		r.jobs += n;
		done += n;
	}
	r.seconds = drv_mono_s() - t0;
	return r;
}

/* One 'drover submit' process a job, one after another, as sbatch is used. */
static struct rate submit_processes(const char *url, char *const *files, int n)
{
	struct rate r = { 0 };
	double t0 = drv_mono_s();
	int i;

	setenv("DROVER_SERVER", url, 1);
	setenv("DROVER_TOKEN", USER_TOKEN, 1);
	for (i = 0; i < n; i++) {
		int st = 0;
		pid_t pid = fork();
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0) {
				dup2(fd, 1);
				close(fd);
			}
			execl(self, self, "submit", "--parsable", files[i], (char *)NULL);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			r.failed++;
		r.jobs++;
	}
	r.seconds = drv_mono_s() - t0;
	return r;
}

/* Waits until no job is unfinished (GET /v1/queue is empty). */
static int wait_drained(struct drv_client *c, double timeout_s)
{
	double deadline = drv_mono_s() + timeout_s;

	while (drv_mono_s() < deadline) {
		struct drv_client_reply r;
		if (!call_json(c, "GET", "/v1/queue?limit=1", NULL, NULL, 0, 10000, &r)) {
			size_t n = json_array_size(json_object_get(r.json, "items"));
			drv_client_reply_release(&r);
			if (n == 0)
				return 0;
		}
		sleep_ms(50);
	}
	return DRV_ETIMEDOUT;
}

/* ---- latency: the watch stream tells when each job runs ---- */

struct watch {
	const char *url;
	pthread_mutex_t mu;
	long long *ids;      /* jobs seen going to running, in arrival order */
	double *at;          /* when each arrived */
	size_t n, cap, cap2;
	volatile int stop;
	int events;
};

static void *watcher(void *p)
{
	struct watch *w = p;
	struct drv_client *c = client_for(w->url);
	long long since = -1;

	while (!w->stop) {
		struct drv_client_reply r;
		char path[128], err[256];
		const json_t *items, *e;
		size_t i;
		if (since < 0)
			snprintf(path, sizeof(path), "/v1/watch?timeout=1");
		else
			snprintf(path, sizeof(path), "/v1/watch?since=%lld&timeout=1", since);
		if (drv_client_call(c, "GET", path, NULL, NULL, 0, 10000, &r, err, sizeof(err))) {
			sleep_ms(50);
			continue;
		}
		if (r.status == 200) {
			double t = drv_mono_s();
			items = json_object_get(r.json, "items");
			pthread_mutex_lock(&w->mu);
			json_array_foreach(items, i, e) {
				const char *to = json_string_value(json_object_get(e, "to"));
				long long id = drv_json_int(e, "job", 0);
				w->events++;
				if (to && !strcmp(to, "running") && id > 0) {
					DRV_GROW(w->ids, w->n + 1, w->cap);
					DRV_GROW(w->at, w->n + 1, w->cap2);
					w->ids[w->n] = id;
					w->at[w->n++] = t;
				}
			}
			pthread_mutex_unlock(&w->mu);
			if (json_is_integer(json_object_get(r.json, "next")))
				since = json_integer_value(json_object_get(r.json, "next"));
		} else {
			sleep_ms(100);
		}
		drv_client_reply_release(&r);
	}
	drv_client_free(c);
	return NULL;
}

/* When job id was first seen running; 0 when not yet. Caller locks. */
static double running_at(const struct watch *w, long long id)
{
	size_t i;
	for (i = 0; i < w->n; i++)
		if (w->ids[i] == id)
			return w->at[i];
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *v, int n, double p)
{
	int k;
	if (n <= 0)
		return 0;
	k = (int)ceil(p * n) - 1;
	if (k < 0)
		k = 0;
	if (k >= n)
		k = n - 1;
	return v[k];
}

static json_t *measure_latency(const struct server *s, int njobs)
{
	struct watch w;
	pthread_t th;
	struct drv_client *c = client_for(s->url);
	char *body = pod_yaml(1);
	long long *ids = drv_calloc((size_t)njobs, sizeof(*ids));
	double *sent = drv_calloc((size_t)njobs, sizeof(*sent));
	double *lat = drv_calloc((size_t)njobs, sizeof(*lat));
	double deadline;
	int i, nlat = 0, failed = 0, seen;
	json_t *out;

	memset(&w, 0, sizeof(w));
	w.url = s->url;
	pthread_mutex_init(&w.mu, NULL);
	pthread_create(&th, NULL, watcher, &w);
	sleep_ms(300);
	for (i = 0; i < njobs; i++) {
		struct drv_client_reply r;
		sent[i] = drv_mono_s();
		if (call_json(c, "POST", "/v1/jobs", "application/yaml", body, strlen(body), 30000,
			      &r)) {
			failed++;
			continue;
		}
		ids[i] = drv_json_int(r.json, "id", 0);
		drv_client_reply_release(&r);
		sleep_ms(10);
	}
	deadline = drv_mono_s() + 60;
	do {
		seen = 0;
		pthread_mutex_lock(&w.mu);
		for (i = 0; i < njobs; i++)
			if (ids[i] > 0 && running_at(&w, ids[i]))
				seen++;
		pthread_mutex_unlock(&w.mu);
		if (seen >= njobs - failed)
			break;
		sleep_ms(50);
	} while (drv_mono_s() < deadline);
	w.stop = 1;
	pthread_join(th, NULL);
	for (i = 0; i < njobs; i++)
		if (ids[i] > 0 && running_at(&w, ids[i]))
			lat[nlat++] = (running_at(&w, ids[i]) - sent[i]) * 1000.0;
	qsort(lat, (size_t)nlat, sizeof(double), cmp_double);
	out = json_pack("{s:s,s:i,s:i,s:i,s:f,s:f,s:f,s:f}", "how",
			"one 1-GPU Pod every 10 ms from one client; latency = submit sent to the "
			"job's transition to running received on GET /v1/watch (long-poll)",
			"jobs", njobs, "failed_submits", failed, "seen_running", nlat, "p50_ms",
			pct(lat, nlat, 0.50), "p99_ms", pct(lat, nlat, 0.99), "max_ms",
			nlat ? lat[nlat - 1] : 0.0, "min_ms", nlat ? lat[0] : 0.0);
	pthread_mutex_destroy(&w.mu);
	drv_free(w.ids);
	drv_free(w.at);
	drv_free(ids);
	drv_free(sent);
	drv_free(lat);
	drv_free(body);
	drv_client_free(c);
	return out;
}

/* ---- Slurm, through slurm-local ---- */

static json_t *run_capture(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	char line[4096];
	json_t *last = NULL;

	*status = -1;
	if (!p)
		return NULL;
	while (fgets(line, sizeof(line), p)) {
		json_t *j = line[0] == '{' ? json_loads(line, 0, NULL) : NULL;
		fputs(line, stderr);
		if (j) {
			json_decref(last);
			last = j;
		}
	}
	*status = pclose(p);
	return last;
}

/*
 * slurm-local starts munged only when /run/munge/munge.socket.2 is missing.
 * A socket left by a munged that is gone (a restored machine, a killed
 * daemon) makes every Slurm RPC fail its authentication and retry, and
 * Slurm then runs many times slower than it can: the comparison would be
 * against a crippled peer. Such a socket (nobody listening) is removed so
 * that slurm-local starts munged; the JSON says so.
 */
static bool clear_stale_munge_socket(void)
{
	static const char path[] = "/run/munge/munge.socket.2";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	bool stale;
	int fd;

	if (lstat(path, &st) || !S_ISSOCK(st.st_mode))
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	memcpy(sa.sun_path, path, sizeof(path));
	stale = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == ECONNREFUSED;
	close(fd);
	if (!stale || unlink(path))
		return false;
	fprintf(stderr, "bench api: removed %s: no munged listens on it, and slurm-local starts "
			"munged only when it is missing\n", path);
	return true;
}

static json_t *run_slurm(const struct opts *o, const char *csv)
{
	char cmd[2048];
	json_t *res;
	int st;
	double t0 = drv_mono_s();

	bool munge_cleared;

	if (access(o->slurm_local, X_OK))
		return json_pack("{s:s}", "error", "slurm-local not found; give --slurm-local PATH");
	munge_cleared = clear_stale_munge_socket();
	snprintf(cmd, sizeof(cmd), "'%s' up %d %d >&2", o->slurm_local, o->nodes, o->gpus);
	if (system(cmd)) {
		snprintf(cmd, sizeof(cmd), "'%s' down >/dev/null 2>&1", o->slurm_local);
		if (system(cmd)) {
			/* nothing more to do: it did not come up */
		}
		return json_pack("{s:s}", "error", "slurm-local up failed");
	}
	fprintf(stderr, "bench api: slurm-local up in %.1f s\n", drv_mono_s() - t0);
	snprintf(cmd, sizeof(cmd), "'%s' run '%s'", o->slurm_local, csv);
	res = run_capture(cmd, &st);
	snprintf(cmd, sizeof(cmd), "'%s' down >&2", o->slurm_local);
	if (system(cmd)) {
		/* best effort */
	}
	if (!res || st)
		return json_pack("{s:s}", "error", "slurm-local run failed");
	if (munge_cleared)
		json_object_set_new(res, "note", json_string("a stale munge socket (no munged "
							     "behind it) was removed first"));
	return res;
}

/* ---- main ---- */

/* The options into o; 0, or DRV_OPTS_HELP / DRV_OPTS_ERROR (printed). */
static int parse(int argc, char **argv, struct opts *o)
{
	bool json = true, no_slurm = false;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &json, "print JSON (always)"),
		DRV_OPT_GROUP("sizes (each at least 1)"),
		DRV_OPT_INT(0, "nodes", &o->nodes, 1, INT32_MAX, "N",
			    "fake-GPU agents (default 16)"),
		DRV_OPT_INT(0, "gpus-per-node", &o->gpus, 1, INT32_MAX, "G",
			    "GPUs on each (default 8)"),
		DRV_OPT_INT(0, "serial", &o->serial, 1, INT32_MAX, "N",
			    "submits by one client on one connection (default 1000)"),
		DRV_OPT_INT(0, "clients", &o->clients, 1, INT32_MAX, "C",
			    "concurrent clients, at most 1024 (default 32)"),
		DRV_OPT_INT(0, "concurrent", &o->concurrent, 1, INT32_MAX, "N",
			    "submits by the concurrent clients (default 3200)"),
		DRV_OPT_INT(0, "batch", &o->batch, 1, INT32_MAX, "N",
			    "jobs through POST /v1/jobs/batch (default 10000)"),
		DRV_OPT_INT(0, "batch-size", &o->batch_size, 1, INT32_MAX, "N",
			    "jobs per batch (default 1000)"),
		DRV_OPT_INT(0, "procs", &o->procs, 1, INT32_MAX, "N",
			    "jobs submitted by one 'drover submit' process each (default 200)"),
		DRV_OPT_INT(0, "latency", &o->latency, 1, INT32_MAX, "N",
			    "jobs timed from submit to running (default 300)"),
		DRV_OPT_INT(0, "workload", &o->workload, 1, INT32_MAX, "N",
			    "jobs of the shared workload, at most 520 (default 520)"),
		DRV_OPT_INT(0, "many-clients", &o->many, 0, 10000, "N",
			    "clients held open at once for clients_1000, 0 skips it (default 1000)"),
		DRV_OPT_INT(0, "restart-jobs", &o->restart_jobs, 0, INT32_MAX, "N",
			    "jobs in the state of the restart figure, 0 skips it (default 1000000)"),
		DRV_OPT_STRING(0, "store", &o->store, "URL",
			       "the server's store: sqlite (default), postgres (a PostgreSQL 15 the "
			       "bench starts: initdb as the postgres user, needs root) or "
			       "postgres://USER@HOST:PORT/DB, emptied before each server starts"),
		DRV_OPT_STRING(0, "store-password-file", &o->store_pw, "FILE",
			       "its password (mode 0600; default PGPASSFILE or ~/.pgpass)"),
		DRV_OPT_INT(0, "failovers", &o->failovers, 0, 1000, "N",
			    "PostgreSQL: leader SIGKILLs timed, 0 skips them (default 20)"),
		DRV_OPT_INT(0, "leader-lease", &o->leader_lease, 1, 30, "S",
			    "PostgreSQL: the two controllers' leader_lease_s (default 2)"),
		DRV_OPT_GROUP("Slurm beside it"),
		DRV_OPT_FLAG(0, "no-slurm", &no_slurm, "skip the Slurm half"),
		DRV_OPT_STRING(0, "slurm-local", &o->slurm_local, "PATH",
			       "the slurm-local script (env DROVER_SLURM_LOCAL; default "
			       "../shared/bench/slurm/slurm-local)"),
		DRV_OPT_FLAG(0, "keep", &o->keep, "keep the temporary directory"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench api",
		.usage = "drover bench api [--json] [--nodes N] [--gpus-per-node G] [--serial N]\n"
			 "       [--clients C] [--concurrent N] [--batch N] [--batch-size N] [--procs N]\n"
			 "       [--latency N] [--workload N (at most 520)] [--many-clients N]\n"
			 "       [--restart-jobs N] "
			 "[--no-slurm] [--slurm-local PATH]\n"
			 "       [--store sqlite|postgres|postgres://USER@HOST:PORT/DB "
			 "[--store-password-file FILE]]\n"
			 "       [--failovers N] [--leader-lease S] [--keep]",
		.about = "Durable submits per second and submit-to-running latency, against a "
			 "server and fake-GPU agents this binary starts, and Slurm beside it.",
		.options = table,
	};
	int rc;

	*o = (struct opts){ .nodes = 16, .gpus = 8, .serial = 1000, .clients = 32,
			    .concurrent = 3200, .batch = 10000, .batch_size = 1000, .procs = 200,
			    .latency = 300, .workload = 520, .slurm = true, .restart_jobs = 1000000,
			    .many = 1000, .failovers = 20, .leader_lease = 2,
			    .slurm_local = "../shared/bench/slurm/slurm-local" };
	if (getenv("DROVER_SLURM_LOCAL"))
		o->slurm_local = getenv("DROVER_SLURM_LOCAL");
	else if (access(o->slurm_local, X_OK) &&
		 !access("/work/shared/bench/slurm/slurm-local", X_OK))
		o->slurm_local = "/work/shared/bench/slurm/slurm-local";
	rc = drv_opts_parse(&usage, argc, argv);
	if (rc < 0)
		return rc;
	o->slurm = !no_slurm;
	o->own_pg = o->store && !strcmp(o->store, "postgres");
	if (o->store && strcmp(o->store, "sqlite") && !o->own_pg) {
		if (!drv_store_is_pg_url(o->store)) {
			fprintf(stderr, "drover bench api: --store %s: expected sqlite, postgres or "
				"postgres://USER@HOST:PORT/DB\n", o->store);
			return DRV_EINVAL;
		}
		store_url = o->store;
		store_pw = o->store_pw;
	}
	if (o->clients > 1024)
		o->clients = 1024;
	if (o->workload > 520)
		o->workload = 520;
	return 0;
}

/* One run: what it was asked, the workload, and the results so far. */
struct run {
	struct opts o;
	struct wjob w[600];
	int nw;
	char csv[600];
	char **files;          /* [nw] the workload's scripts, one a job */
	char *pod;             /* the 1-GPU Pod of the submit figures */
	json_t *spec1;         /* its canonical form, for the batch path */
	json_t *shapes[5];     /* canonical 1, 2, 4, 8 GPUs and the gang */
	json_t *out, *submit, *wl;
};

/* The sbatch shapes of the workload: GPUs per node, nodes. */
static void shape_of(int i, int *gpn, int *nodes)
{
	const int shape[5][2] = { { 1, 1 }, { 2, 1 }, { 4, 1 }, { 8, 1 }, { 8, 0 } };

	*gpn = shape[i][0];
	*nodes = shape[i][1] ? shape[i][1] : gang_nodes;
}

/* Finds this binary (children run it) and makes the working directory. */
static int make_workdir(void)
{
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		fprintf(stderr, "bench api: cannot find my own binary\n");
		return -1;
	}
	self[n] = '\0';
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/drover-bench-api.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "bench api: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "bench api: working in %s\n", tmpdir);
	return 0;
}

/* The workload, as CSV for slurm-local and as scripts for drover. */
static int write_workload(struct run *R)
{
	FILE *f;
	int i;

	gang_nodes = DRV_MIN(4, R->o.nodes);
	R->nw = workload(R->w, R->o.workload);
	snprintf(R->csv, sizeof(R->csv), "%s/workload.csv", tmpdir);
	f = fopen(R->csv, "w");
	if (!f)
		return -1;
	fprintf(f, "gpus_per_node,nodes,seconds\n");
	for (i = 0; i < R->nw; i++)
		fprintf(f, "%d,%d,0\n", R->w[i].gpn, R->w[i].nodes);
	fclose(f);
	R->files = drv_calloc((size_t)R->nw, sizeof(*R->files));
	for (i = 0; i < 5; i++) {
		char path[600], *script;
		int gpn, nodes;

		shape_of(i, &gpn, &nodes);
		script = sbatch_script(gpn, nodes);
		snprintf(path, sizeof(path), "%s/wl-%dx%d.sh", tmpdir, nodes, gpn);
		write_file(path, script);
		drv_free(script);
	}
	for (i = 0; i < R->nw; i++) {
		char path[600];

		snprintf(path, sizeof(path), "%s/wl-%dx%d.sh", tmpdir, R->w[i].nodes, R->w[i].gpn);
		R->files[i] = drv_strdup(path);
	}
	return 0;
}

/* The Pod and the five sbatch shapes in canonical JSON, asked of the server. */
static int canonical_specs(struct run *R, struct drv_client *c)
{
	R->pod = pod_yaml(1);
	R->spec1 = canonical(c, "application/yaml", R->pod);
	for (int i = 0; i < 5; i++) {
		int gpn, nodes;
		char *script;

		shape_of(i, &gpn, &nodes);
		script = sbatch_script(gpn, nodes);
		R->shapes[i] = canonical(c, "text/x-slurm", script);
		drv_free(script);
	}
	if (!R->spec1) {
		fprintf(stderr, "bench api: cannot get a canonical job from the server\n");
		return -1;
	}
	for (int i = 0; i < 5; i++)
		if (!R->shapes[i])
			return -1;
	return 0;
}

/* The four submit rates against a server at url. */
static void submit_rates(struct run *R, struct drv_client *c, const char *url)
{
	const struct opts *o = &R->o;
	const json_t *one[1] = { R->spec1 };
	struct rate r;

	fprintf(stderr, "bench api: one client, %d submits\n", o->serial);
	r = submit_threads(url, 1, o->serial, "application/yaml", R->pod);
	json_object_set_new(R->submit, "one_client", rate_json(&r,
		"POST /v1/jobs (a 1-GPU Pod, YAML), one client, one keep-alive connection, "
		"each answered 201 after the job is synced to disk"));
	fprintf(stderr, "bench api: %d clients, %d submits\n", o->clients, o->concurrent);
	r = submit_threads(url, o->clients, o->concurrent, "application/yaml", R->pod);
	json_object_set_new(R->submit, "concurrent", rate_json(&r,
		"POST /v1/jobs, concurrent clients (threads), one connection each"));
	json_object_set_new(json_object_get(R->submit, "concurrent"), "clients",
			    json_integer(o->clients));
	fprintf(stderr, "bench api: batch path, %d jobs in batches of %d\n", o->batch, o->batch_size);
	{
		struct drv_client *uc = client_as(url, USER_TOKEN);

		r = submit_batches(uc, one, 1, o->batch, o->batch_size);
		drv_client_free(uc);
	}
	json_object_set_new(R->submit, "batch", rate_json(&r,
		"POST /v1/jobs/batch (canonical JSON), one transaction and one sync per batch"));
	json_object_set_new(json_object_get(R->submit, "batch"), "batch_size",
			    json_integer(o->batch_size));
	fprintf(stderr, "bench api: one drover submit process per job, %d jobs\n", o->procs);
	r = submit_processes(url, R->files, DRV_MIN(o->procs, R->nw));
	json_object_set_new(R->submit, "process_per_job", rate_json(&r,
		"one 'drover submit FILE' process per job (the workload's Slurm scripts), one after another"));
	json_object_set_new(R->submit, "server", json_string("no nodes registered: every job stays pending"));
}

/* ---- many clients at once ---- */

/*
 * The 1,000 clients are driven by this thread alone, over non-blocking
 * sockets and epoll, with plain HTTP/1.1 requests written here: a thread and
 * a libcurl handle per client cost more CPU than the server they measure
 * (1.9 s against 0.7 s), on the same two cores, so the figure was the
 * bench's own. What a client does is unchanged: one keep-alive connection,
 * authenticated before the start, then GET /v1/jobs and a POST /v1/jobs.
 */
struct many {
	int fd;
	int phase;        /* 0 the GET, 1 the POST, 2 done */
	double t0;        /* when the current request was written */
	const char *req;  /* what is left to write of it */
	size_t req_left;
	char *post;       /* this client's POST, with its own Idempotency-Key */
	struct drv_dynbuf in;
};

/* Where the reply in b ends (its length), 0 while incomplete, -1 when it is
 * not HTTP; *status gets its code. Content-Length or chunked bodies. */
static long reply_end(const char *b, size_t n, int *status)
{
	const char *he = memmem(b, n, "\r\n\r\n", 4), *h, *p;
	size_t body;

	if (!he)
		return 0;
	if (n < 12 || memcmp(b, "HTTP/1.", 7) || sscanf(b + 9, "%3d", status) != 1)
		return -1;
	body = (size_t)(he - b) + 4;
	for (h = strstr(b, "\r\n"); h && h < he; h = strstr(h + 2, "\r\n")) {
		if (!strncasecmp(h + 2, "Content-Length:", 15)) {
			size_t len = strtoul(h + 17, NULL, 10);

			return n >= body + len ? (long)(body + len) : 0;
		}
		if (!strncasecmp(h + 2, "Transfer-Encoding:", 18) && strstr(h + 20, "chunked") &&
		    strstr(h + 20, "chunked") < he) {
			p = b + body;
			for (;;) {   /* size CRLF data CRLF ..., 0 CRLF CRLF (no trailers) */
				char *e;
				size_t len = strtoul(p, &e, 16);
				const char *eol = memmem(p, (size_t)(b + n - p), "\r\n", 2);

				if (!eol)
					return 0;
				if (len == 0)
					return b + n >= eol + 4 ? (long)(eol + 4 - b) : 0;
				p = eol + 2 + len + 2;
				if (p > b + n)
					return 0;
			}
		}
	}
	return (long)body;   /* no body: a 204 or a HEAD-like answer */
}

/* One blocking request on fd and its whole reply; its status, or -1. */
static int many_blocking(int fd, const char *req)
{
	struct drv_dynbuf in = DRV_DYNBUF_INIT(64 << 20);
	size_t left = strlen(req);
	int status = -1;
	long end = 0;

	while (left) {
		ssize_t w = write(fd, req, left);

		if (w <= 0)
			return -1;
		req += w;
		left -= (size_t)w;
	}
	while (end == 0) {
		char tmp[16384];
		ssize_t r = read(fd, tmp, sizeof(tmp));

		if (r <= 0)
			break;
		if (drv_dynbuf_add(&in, tmp, (size_t)r))
			break;
		end = reply_end(in.buf, in.len, &status);
	}
	drv_dynbuf_release(&in);
	return end > 0 ? status : -1;
}

static int many_connect(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Writes what is left of c's request; 0, or -1 when the socket failed. */
static int many_write(struct many *c, int ep)
{
	while (c->req_left) {
		ssize_t w = write(c->fd, c->req, c->req_left);

		if (w < 0 && errno == EAGAIN) {
			struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
			return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) ? -1 : 0;
		}
		if (w <= 0)
			return -1;
		c->req += w;
		c->req_left -= (size_t)w;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) ? -1 : 0;
}

static void many_start(struct many *c, const char *req, int ep)
{
	c->req = req;
	c->req_left = strlen(req);
	c->t0 = drv_mono_s();
}

/*
 * n clients (one keep-alive connection each, as the plain user) held open
 * at once, then released together: each does `rounds` times a GET /v1/jobs
 * with the default page and a durable POST /v1/jobs with an
 * Idempotency-Key. The server (server_pid) already holds the submit
 * figures' jobs; its own CPU time over the run is reported beside the
 * latencies, a figure the machine's other load does not move.
 */
static json_t *measure_many(const char *url, pid_t server_pid, const char *pod, int n,
			    int rounds)
{
	struct many *m = drv_calloc((size_t)n, sizeof(*m));
	double *get_ms = drv_calloc((size_t)n * (size_t)rounds, sizeof(double));
	double *post_ms = drv_calloc((size_t)n * (size_t)rounds, sizeof(double));
	char get[512], auth[256];
	int errors = 0, port = 0, ep, live = 0, ng = 0, np = 0;
	long long c0, c1;
	double t0, secs, g50, g99, p50, p99, hz = (double)sysconf(_SC_CLK_TCK);
	struct epoll_event evs[256];

	bench_raise_nofile();
	if (sscanf(url, "http://127.0.0.1:%d", &port) != 1)
		return json_pack("{s:s}", "error", "clients_1000 needs a plain http loopback server");
	snprintf(auth, sizeof(auth), "Host: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n", port,
		 USER_TOKEN);
	snprintf(get, sizeof(get), "GET /v1/jobs HTTP/1.1\r\n%s\r\n", auth);
	ep = epoll_create1(EPOLL_CLOEXEC);
	/* connect and authenticate one at a time: before its first request
	 * passes, a connection counts against max_unauthenticated_per_client
	 * (64 from one address); once it has, it stays open and counts no more */
	for (int i = 0; i < n; i++) {
		char who[512];
		struct many *c = &m[i];

		snprintf(who, sizeof(who), "GET /v1/whoami HTTP/1.1\r\n%s\r\n", auth);
		c->fd = many_connect(port);
		if (c->fd < 0 || many_blocking(c->fd, who) != 200) {
			errors++;
			c->phase = 2;
			continue;
		}
		struct drv_dynbuf post = DRV_DYNBUF_INIT(1 << 20);

		drv_dynbuf_addf(&post,
				"POST /v1/jobs HTTP/1.1\r\n%sContent-Type: application/yaml\r\n"
				"Idempotency-Key: bench-%d-many-%d\r\nContent-Length: %zu\r\n\r\n%s",
				auth, (int)getpid(), i, strlen(pod), pod);
		c->post = drv_dynbuf_take(&post, NULL);
		drv_dynbuf_init(&c->in, 64 << 20);
		fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
		epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
	}
	c0 = bench_cpu_ticks(server_pid);
	t0 = drv_mono_s();
	for (int i = 0; i < n; i++) {
		if (m[i].phase == 2)
			continue;
		live++;
		many_start(&m[i], get, ep);
		if (many_write(&m[i], ep)) {
			errors++;
			m[i].phase = 2;
			live--;
		}
	}
	(void)rounds;   /* one round: a GET and a POST per client */
	while (live > 0) {
		int k = epoll_wait(ep, evs, 256, 60000);

		if (k <= 0)
			break;   /* a minute without a byte: the rest count as errors */
		for (int e = 0; e < k; e++) {
			struct many *c = evs[e].data.ptr;
			int status = 0;
			long end;

			if (c->phase == 2)
				continue;
			if ((evs[e].events & EPOLLOUT) && many_write(c, ep))
				goto failed;
			if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
				continue;
			for (;;) {
				char tmp[65536];
				ssize_t r = read(c->fd, tmp, sizeof(tmp));

				if (r < 0 && errno == EAGAIN)
					break;
				if (r <= 0)
					goto failed;
				if (drv_dynbuf_add(&c->in, tmp, (size_t)r))
					goto failed;
			}
			end = reply_end(c->in.buf, c->in.len, &status);
			if (end == 0)
				continue;
			if (end < 0 || status < 200 || status >= 300)
				goto failed;
			double ms = (drv_mono_s() - c->t0) * 1000.0;

			drv_dynbuf_reset(&c->in);
			if (c->phase == 0) {
				get_ms[ng++] = ms;
				c->phase = 1;
				many_start(c, c->post, ep);
				if (many_write(c, ep))
					goto failed;
				continue;
			}
			post_ms[np++] = ms;
			c->phase = 2;
			live--;
			continue;
failed:
			errors++;
			c->phase = 2;
			live--;
		}
	}
	secs = drv_mono_s() - t0;
	c1 = bench_cpu_ticks(server_pid);
	for (int i = 0; i < n; i++)
		if (m[i].phase != 2)
			errors++;   /* still waiting when the minute ran out */
	qsort(get_ms, (size_t)ng, sizeof(double), cmp_double);
	qsort(post_ms, (size_t)np, sizeof(double), cmp_double);
	g50 = pct(get_ms, ng, 0.50);
	g99 = pct(get_ms, ng, 0.99);
	p50 = pct(post_ms, np, 0.50);
	p99 = pct(post_ms, np, 0.99);
	for (int i = 0; i < n; i++) {
		if (m[i].fd >= 0)
			close(m[i].fd);
		drv_free(m[i].post);
		drv_dynbuf_release(&m[i].in);
	}
	close(ep);
	drv_free(m);
	drv_free(get_ms);
	drv_free(post_ms);
	double cpu_ms = c0 >= 0 && c1 >= 0 ? (double)(c1 - c0) * 1000.0 / hz : -1;
	return json_pack("{s:f,s:f,s:f,s:f,s:i,s:i,s:i,s:f,s:f,s:f,s:s}", "get_p50_ms", g50,
			 "get_p99_ms", g99, "post_p50_ms", p50, "post_p99_ms", p99, "errors", errors,
			 "clients", n, "requests", ng + np, "seconds", secs, "server_cpu_ms", cpu_ms,
			 "server_cpu_ms_per_request", ng + np ? cpu_ms / (ng + np) : -1, "how",
			 "clients held open at once (one keep-alive connection each, a plain user, "
			 "authenticated one at a time), then released together: each does GET "
			 "/v1/jobs (the default page) and a durable POST /v1/jobs (a 1-GPU Pod with an "
			 "Idempotency-Key), once each; driven by one thread over epoll, so the bench "
			 "takes little of the CPU it measures; server_cpu_ms: the server's own CPU "
			 "time over the run; errors: failed or non-2xx calls");
}

/* 1. Durable submits per second: a server without nodes. */
static int measure_submits(struct run *R)
{
	struct server s1;
	struct drv_client *c;
	int rc;

	if (start_server(&s1, "submit"))
		return -1;
	c = client_for(s1.url);
	rc = canonical_specs(R, c);
	if (rc == 0)
		submit_rates(R, c, s1.url);
	if (rc == 0 && R->o.many) {
		fprintf(stderr, "bench api: %d clients at once, GET and POST\n", R->o.many);
		json_object_set_new(R->out, "clients_1000", measure_many(s1.url, s1.pid, R->pod, R->o.many, 1));
	}
	drv_client_free(c);
	stop_child(s1.pid);
	return rc;
}

/* Submits the workload one way (a batch, or a process a job), then waits
 * for the queue to drain; the figures go in R->wl under key. */
static int timed_workload(struct run *R, struct drv_client *c, const char *url, bool batch,
			  const char *key, const char *how)
{
	double t0 = drv_mono_s(), t1, t2;
	int nw = R->nw;
	struct rate r;

	if (batch) {
		const json_t *wspecs[600];

		for (int i = 0; i < nw; i++) {
			const struct wjob *w = &R->w[i];
			int k = w->nodes > 1 ? 4 : w->gpn == 1 ? 0 : w->gpn == 2 ? 1 : w->gpn == 4 ? 2 : 3;

			wspecs[i] = R->shapes[k];
		}
		r = submit_batches(c, wspecs, nw, nw, nw);
	} else {
		r = submit_processes(url, R->files, nw);
	}
	t1 = drv_mono_s();
	if (wait_drained(c, 600)) {
		fprintf(stderr, "bench api: the workload did not finish in 600 s\n");
		return -1;
	}
	t2 = drv_mono_s();
	json_object_set_new(R->wl, key, json_pack("{s:s,s:i,s:i,s:f,s:f,s:f,s:f}",
		"how", how, "jobs", nw, "failed", r.failed, "submit_s", t1 - t0, "submit_per_s",
		nw / (t1 - t0), "all_done_s", t2 - t0, "jobs_per_s", nw / (t2 - t0)));
	return 0;
}

/* 2. and 3.: latency and the workload on a server with 16 simulated 8-GPU nodes. */
static int measure_cluster(struct run *R)
{
	struct server s2;
	struct drv_client *c;
	char spec[32];
	int rc = -1;

	if (start_server(&s2, "cluster"))
		return -1;
	snprintf(spec, sizeof(spec), "%dxH100", R->o.gpus);
	fprintf(stderr, "bench api: starting %d agents with --fake-gpus %s\n", R->o.nodes, spec);
	if (start_agents(&s2, R->o.nodes, spec))
		return -1;
	c = client_for(s2.url);
	fprintf(stderr, "bench api: submit-to-running latency, %d jobs\n", R->o.latency);
	json_object_set_new(R->out, "latency_submit_to_running", measure_latency(&s2, R->o.latency));
	if (wait_drained(c, 120)) {
		fprintf(stderr, "bench api: the latency jobs did not finish\n");
		goto out;
	}
	fprintf(stderr, "bench api: workload (%d jobs) through the batch path\n", R->nw);
	if (timed_workload(R, c, s2.url, true, "drover_batch",
			   "the workload in one POST /v1/jobs/batch, then until GET /v1/queue is empty"))
		goto out;
	fprintf(stderr, "bench api: workload with one drover submit process per job\n");
	if (timed_workload(R, c, s2.url, false, "drover_process_per_job",
			   "one 'drover submit' process per job, one after another, then until the queue is empty"))
		goto out;
	rc = 0;
out:
	drv_client_free(c);
	kill_children();
	return rc;
}

/* ---- failover: two controllers on one PostgreSQL ---- */

/* SIGKILLs pid's process group and reaps it. */
static void kill_now(pid_t pid)
{
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < nchildren; i++)
		if (children[i] == pid)
			children[i] = 0;
}

/* Whether the server at c answers /healthz 200 as the serving leader
 * (role "leader", status "ok": not still loading the state). */
static bool leads(struct drv_client *c)
{
	struct drv_client_reply r;
	char err[256];
	bool yes = false;

	if (drv_client_call(c, "GET", "/healthz", NULL, NULL, 0, 1000, &r, err, sizeof(err)))
		return false;
	if (r.status == 200) {
		const char *role = json_string_value(json_object_get(r.json, "role"));
		const char *st = json_string_value(json_object_get(r.json, "status"));

		yes = role && st && !strcmp(role, "leader") && !strcmp(st, "ok");
	}
	drv_client_reply_release(&r);
	return yes;
}

/* One durable submit answered 201 by c. */
static bool submits(struct drv_client *c, const char *pod)
{
	struct drv_client_reply r;
	char err[256];
	bool yes;

	if (drv_client_call(c, "POST", "/v1/jobs", "application/yaml", pod, strlen(pod), 2000, &r,
			    err, sizeof(err)))
		return false;
	yes = r.status == 201;
	drv_client_reply_release(&r);
	return yes;
}

/* Polls every 10 ms until ok(c) or deadline (mono s); the time, or -1. */
static double poll_until(struct drv_client *c, bool (*ok)(struct drv_client *, const char *),
			 const char *arg, double deadline)
{
	while (drv_mono_s() < deadline) {
		if (ok(c, arg))
			return drv_mono_s();
		sleep_ms(10);
	}
	return -1;
}

static bool leads_(struct drv_client *c, const char *unused)
{
	(void)unused;
	return leads(c);
}

static json_t *failover_json(double *lead, double *sub, int n, int want, int lease_s)
{
	qsort(lead, (size_t)n, sizeof(double), cmp_double);
	qsort(sub, (size_t)n, sizeof(double), cmp_double);
	return json_pack("{s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:s}", "failovers", want, "measured", n,
		"leader_lease_s", lease_s, "failover_p50_s", pct(sub, n, 0.50), "failover_p99_s",
		pct(sub, n, 0.99), "failover_max_s", n ? sub[n - 1] : 0.0, "leader_p50_s",
		pct(lead, n, 0.50), "leader_p99_s", pct(lead, n, 0.99), "how",
		"two 'drover server's on one PostgreSQL; the leader SIGKILLed, then the time until "
		"the standby answers /healthz 200 as leader (\"status\": \"ok\") (leader_*) and a "
		"durable POST /v1/jobs to it answers 201 (failover_*); the killed one is started "
		"again as the standby before the next kill (over 20, p99 is the largest)");
}

/*
 * Two controllers (leader_lease_s lease_s) on the run's PostgreSQL; n
 * times the leader SIGKILLed and timed until the standby leads and takes
 * a submit, the killed one started again (as the standby) each time.
 */
static json_t *measure_failover(struct run *R, int n, int lease_s)
{
	struct server s[2] = { { 0 } };
	struct drv_client *c[2];
	char cfg[600], extra[64], name[2][16] = { "ha-a", "ha-b" };
	double *lead = drv_calloc((size_t)n, sizeof(double)), *sub = drv_calloc((size_t)n, sizeof(double));
	int k = 0, l = 0;
	json_t *out = NULL;

	snprintf(extra, sizeof(extra), "leader_lease_s: %d\n", lease_s);
	s[0].port = bench_free_port();
	s[1].port = bench_free_port();
	if (server_config("ha", extra, cfg, sizeof(cfg)) || launch(&s[0], name[0], cfg))
		return json_pack("{s:s}", "error", "the first controller did not start");
	c[0] = client_for(s[0].url);
	c[1] = NULL;
	if (poll_until(c[0], leads_, NULL, drv_mono_s() + 30) < 0 || launch(&s[1], name[1], cfg)) {
		out = json_pack("{s:s}", "error", "the controllers did not come up, one leading");
		goto out;
	}
	c[1] = client_for(s[1].url);
	for (k = 0; k < n; k++) {
		int sb = 1 - l;
		double t0, t1, t2;

		kill_now(s[l].pid);
		t0 = drv_mono_s();
		t1 = poll_until(c[sb], leads_, NULL, t0 + 60);
		t2 = t1 < 0 ? -1 : poll_until(c[sb], submits, R->pod, t0 + 60);
		if (t2 < 0) {
			fprintf(stderr, "bench api: failover %d: the standby did not lead and take a "
					"submit in 60 s (logs in %s)\n", k + 1, tmpdir);
			break;
		}
		lead[k] = t1 - t0;
		sub[k] = t2 - t0;
		fprintf(stderr, "bench api: failover %d: leads after %.2f s, submit after %.2f s\n",
			k + 1, lead[k], sub[k]);
		if (launch(&s[l], name[l], cfg))
			break;
		l = sb;
	}
	out = failover_json(lead, sub, k, n, lease_s);
out:
	for (int i = 0; i < 2; i++) {
		if (c[i])
			drv_client_free(c[i]);
		if (s[i].pid > 0)
			stop_child(s[i].pid);
	}
	drv_free(lead);
	drv_free(sub);
	return out;
}

/* Slurm on the same workload, and the workload's description. */
static void measure_slurm(struct run *R)
{
	if (R->o.slurm) {
		fprintf(stderr, "bench api: Slurm through %s\n", R->o.slurm_local);
		json_object_set_new(R->wl, "slurm", run_slurm(&R->o, R->csv));
	} else {
		json_object_set_new(R->wl, "slurm", json_pack("{s:s}", "error", "skipped (--no-slurm)"));
	}
	json_object_set_new(R->wl, "description", json_pack("{s:i,s:s,s:i,s:i}", "jobs", R->nw,
		"jobs_desc", "slurm-local's README mix: every 26th job 4 nodes x 8 GPUs, the others one node with 1, 2, 4, 8 GPUs in turn (520 jobs: 500 + 20); each runs true",
		"nodes", R->o.nodes, "gpus_per_node", R->o.gpus));
}

/* 4. PostgreSQL: failover time, two controllers, the leader SIGKILLed. */
static void measure_failovers(struct run *R)
{
	if (!store_url || !R->o.failovers)
		return;
	fprintf(stderr, "bench api: %d failovers, leader_lease_s %d\n", R->o.failovers,
		R->o.leader_lease);
	json_object_set_new(R->out, "failover",
			    measure_failover(R, R->o.failovers, R->o.leader_lease));
}

/* A PostgreSQL of the bench's own for --store postgres; 0, or -1 (said why). */
static int start_own_pg(void)
{
	char err[600], pidfile[200];
	FILE *f;

	if (bench_pg_start(&own_pg, tmpdir, err, sizeof(err))) {
		fprintf(stderr, "bench api: --store postgres: %s\n", err);
		return -1;
	}
	snprintf(pidfile, sizeof(pidfile), "%s/data/postmaster.pid", own_pg.dir);
	f = fopen(pidfile, "r");
	if (f) {
		int pid = 0;

		if (fscanf(f, "%d", &pid) == 1)
			own_pg_pid = pid;
		fclose(f);
	}
	store_url = own_pg.url;
	store_pw = own_pg.password_file;
	fprintf(stderr, "bench api: PostgreSQL started at %s (%s)\n", store_url, own_pg.dir);
	return 0;
}

/* 5. From SIGKILL to answering again with a million jobs in the state. */
static void measure_restart(struct run *R)
{
	json_t *r;

	if (!R->o.restart_jobs)
		return;
	if (store_url && empty_database()) {
		json_object_set_new(R->out, "restart_1m_jobs", json_pack("{s:s}", "error",
			"cannot empty the database"));
		return;
	}
	r = bench_restart(self, tmpdir, R->o.restart_jobs, store_url, store_pw);
	json_object_set_new(R->out, "restart_1m_jobs_s", json_is_number(json_object_get(r, "seconds"))
				    ? json_incref(json_object_get(r, "seconds")) : json_null());
	json_object_set_new(R->out, "restart_1m_jobs", r);
}

/* drover over Slurm, end to end and per submit process. */
static json_t *ratios_of(const json_t *wl)
{
	const json_t *sl = json_object_get(wl, "slurm");
	double s_e2e = drv_json_num(sl, "jobs_per_s", 0), s_sub = drv_json_num(sl, "submit_per_s", 0);
	double d_e2e = json_real_value(json_object_get(json_object_get(wl, "drover_batch"), "jobs_per_s"));
	double d_sub = json_real_value(json_object_get(json_object_get(wl, "drover_process_per_job"), "submit_per_s"));
	json_t *ratios = json_object();

	if (s_e2e > 0) {
		json_object_set_new(ratios, "end_to_end_jobs_per_s_drover_batch_over_slurm",
				    json_real(d_e2e / s_e2e));
		json_object_set_new(ratios, "end_to_end_target", json_integer(10));
	}
	if (s_sub > 0) {
		json_object_set_new(ratios, "process_per_job_submit_per_s_drover_over_sbatch",
				    json_real(d_sub / s_sub));
		json_object_set_new(ratios, "process_per_job_target", json_integer(1));
	}
	return ratios;
}

static void print_result(struct run *R)
{
	json_t *ratios = ratios_of(R->wl);

	json_object_set_new(R->out, "bench", json_string("api"));
	json_object_set_new(R->out, "store", json_string(store_url ? "postgres" : "sqlite"));
	if (own_pg.url[0])
		json_object_set_new(R->out, "postgres", json_string(
			"PostgreSQL 15 started by the bench (initdb, pg_ctl as postgres), loopback, "
			"fsync and synchronous_commit on"));
	json_object_set_new(R->out, "durable_submits", R->submit);
	R->submit = NULL;
	json_object_set_new(R->out, "workload", R->wl);
	R->wl = NULL;
	json_object_set_new(R->out, "ratios", ratios);
	json_dumpf(R->out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	fputc('\n', stdout);
}

/* Frees the run; removes the working directory after a success (unless --keep). */
static void run_release(struct run *R, int rc)
{
	kill_children();
	json_decref(R->out);
	json_decref(R->submit);
	json_decref(R->wl);
	json_decref(R->spec1);
	for (int i = 0; i < 5; i++)
		json_decref(R->shapes[i]);
	drv_free(R->pod);
	if (R->files) {
		for (int i = 0; i < R->nw; i++)
			drv_free(R->files[i]);
		drv_free(R->files);
	}
	bench_pg_stop(&own_pg);
	own_pg_pid = 0;
	if (!R->o.keep && rc == 0) {
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd)) {
			/* leave it */
		}
	} else {
		fprintf(stderr, "bench api: files kept in %s\n", tmpdir);
	}
}

int drv_bench_api(int argc, char **argv)
{
	struct opts o;
	struct run R = { 0 };
	int rc;

	rc = parse(argc, argv, &o);
	if (rc < 0)
		return drv_opts_exit(rc);
	if (make_workdir() < 0)
		return DRV_EXIT_FAIL;
	if (o.own_pg && start_own_pg()) {
		bench_pg_stop(&own_pg);
		return DRV_EXIT_FAIL;
	}
	R.o = o;
	R.out = json_object();
	R.submit = json_object();
	R.wl = json_object();
	rc = DRV_EXIT_FAIL;
	if (write_workload(&R) == 0 && measure_submits(&R) == 0 && measure_cluster(&R) == 0) {
		measure_slurm(&R);
		measure_failovers(&R);
		measure_restart(&R);
		print_result(&R);
		rc = 0;
	}
	run_release(&R, rc);
	return rc;
}
