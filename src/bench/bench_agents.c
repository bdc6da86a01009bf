/*
 * bench_agents.c: 'drover bench agents': many agents against one real
 * controller, each on one kept-alive connection doing sync exchanges.
 *
 *   drover bench agents [--agents N] [--procs P] [--seconds S] [--wait S]
 *                       [--max-threads N] [--tls]
 *
 * Starts a real `drover server` (this binary), then P processes that each
 * play N/P agents with libcurl's multi interface (one easy handle, so one
 * connection, per agent): register, then sync after sync, each sync
 * waiting at the controller up to --wait seconds (as a real agent waits
 * the heartbeat interval). Messages are built and read with
 * include/drover/proto.h. After S seconds of syncing it reports:
 *   registered, served   agents that registered; that got a sync answered
 *   register_s           how long until every agent had registered
 *   exchanges_per_s      answered syncs per second, all agents together
 *   errors               refused or failed requests
 *   server.threads_max   the server's thread count (/proc/PID/status), at
 *   server.fds_max       most, and open files (/proc/PID/fd), sampled
 *   server.rss_kb_max    every 250 ms, with their values at the end; its
 *                        VmRSS likewise
 * With --tls the server serves https (a CA and certificate made in the
 * bench's folder) and every agent checks it against that CA, so the
 * figures include a TLS session per connection.
 * and passes when every agent was served and the server's threads stayed
 * at most --max-threads (default 16): waiting syncs hold no thread.
 */
#include "drover/bench.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/http.h"
#include "drover/options.h"
#include "drover/proto.h"
#include "bench_int.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "bench-agents-token"
#define NGPUS 8

struct opts {
	int agents, procs, max_threads;
	double seconds, wait;
	bool tls;
	char ca[300];                /* with --tls: the CA the agents trust */
};

/* What one process of agents did. */
struct tally {
	long registered, served, exchanges, errors;
	long register_ms;            /* from the start until all had registered */
};

/* --- one simulated agent --------------------------------------------------- */

struct sim {
	CURL *e;
	char name[48];
	int64_t session, version;
	bool synced;                 /* a sync was answered in the window */
	char *in;                    /* the reply being read */
	size_t len, cap;
	int64_t retry_at;            /* after a failure: not before this */
};

struct swarm {
	const struct opts *o;
	CURLM *m;
	struct curl_slist *hdrs;
	char url_register[128], url_sync[128];
	struct sim *sims;
	int n;
	int64_t window_start, window_end;
	struct tally t;
};

static size_t on_data(char *p, size_t size, size_t nmemb, void *cls)
{
	struct sim *a = cls;
	size_t n = size * nmemb;

	if (a->len + n + 1 > a->cap) {
		a->cap = DRV_MAX(a->cap * 2, a->len + n + 1);
		a->in = drv_realloc(a->in, a->cap);
	}
	memcpy(a->in + a->len, p, n);
	a->len += n;
	a->in[a->len] = '\0';
	return n;
}

/* The register message of agent a: 8 simulated H100s. */
static json_t *register_body(const struct sim *a)
{
	struct drv_proto_gpu gpus[NGPUS];
	struct drv_proto_register m;
	char uuids[NGPUS][64];

	drv_proto_register_init(&m);
	m.name = a->name;
	m.hostname = a->name;
	m.address = "127.0.0.1";
	m.version = "bench";
	m.backend = "fake";
	m.cpu_milli = 64000;
	m.mem_mib = 512000;
	for (int i = 0; i < NGPUS; i++) {
		snprintf(uuids[i], sizeof(uuids[i]), "GPU-%s-%d", a->name, i);
		gpus[i] = (struct drv_proto_gpu){ .index = i, .uuid = uuids[i],
						  .model = "NVIDIA H100 80GB HBM3",
						  .memory_mib = 81559 };
	}
	m.gpus = gpus;
	m.ngpus = NGPUS;
	return drv_proto_register_encode(&m);
}

/* A sync of agent a: its GPUs healthy, nothing running, nothing to report. */
static json_t *sync_body(const struct swarm *w, const struct sim *a)
{
	struct drv_proto_gpu_health gpus[NGPUS];
	struct drv_proto_sync m;

	drv_proto_sync_init(&m);
	m.node = a->name;
	m.session = a->session;
	m.version = a->version;
	m.wait_s = (int64_t)w->o->wait;
	for (int i = 0; i < NGPUS; i++)
		gpus[i] = (struct drv_proto_gpu_health){ .index = i, .healthy = true, .xid = 0,
							 .ecc_uncorrected = 0, .temperature_c = 40,
							 .utilization = 0, .memory_used_mib = 0,
							 .power_w = 70 };
	m.gpus = gpus;
	m.ngpus = NGPUS;
	return drv_proto_sync_encode(&m);
}

/* Sends agent a's next request: register until it has a session, then sync. */
static void send_next(struct swarm *w, struct sim *a)
{
	json_t *body = a->session ? sync_body(w, a) : register_body(a);
	char *text = json_dumps(body, JSON_COMPACT);

	json_decref(body);
	a->len = 0;
	curl_easy_setopt(a->e, CURLOPT_URL, a->session ? w->url_sync : w->url_register);
	curl_easy_setopt(a->e, CURLOPT_COPYPOSTFIELDS, text);
	curl_easy_setopt(a->e, CURLOPT_TIMEOUT_MS, (long)(w->o->wait * 1000) + 30000L);
	free(text);
	curl_multi_add_handle(w->m, a->e);
}

/* Reads the answer to agent a's request; false after an error. */
static bool take_reply(struct swarm *w, struct sim *a, long status)
{
	struct drv_proto_dec d = { .peer = "controller" };
	json_t *j = a->len ? json_loadb(a->in, a->len, 0, NULL) : NULL;
	bool ok = false;

	if (status == 409 && a->session) {
		a->session = 0;      /* the session is gone: register again */
	} else if (status == 200 && !a->session) {
		struct drv_proto_registered r;

		ok = drv_proto_registered_decode(j, &r, &d) == 0;
		if (ok) {
			a->session = r.session;
			a->version = 0;
			w->t.registered++;
		}
		drv_proto_registered_release(&r);
	} else if (status == 200) {
		struct drv_proto_sync_reply r;
		int64_t now = drv_mono_ms();

		ok = drv_proto_sync_reply_decode(j, &r, &d) == 0;
		if (ok) {
			a->version = r.version;
			if (now >= w->window_start && now < w->window_end) {
				w->t.exchanges++;
				a->synced = true;
			}
		}
		drv_proto_sync_reply_release(&r);
	}
	json_decref(j);
	return ok;
}

/* --- one process of agents ---------------------------------------------------- */

static void swarm_init(struct swarm *w, const struct opts *o, const char *url, int proc, int n)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->m = curl_multi_init();
	w->n = n;
	w->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	w->hdrs = curl_slist_append(w->hdrs, "Authorization: Bearer " TOKEN);
	snprintf(w->url_register, sizeof(w->url_register), "%s/v1/agent/register", url);
	snprintf(w->url_sync, sizeof(w->url_sync), "%s/v1/agent/sync", url);
	w->sims = drv_calloc((size_t)n, sizeof(*w->sims));
	for (int i = 0; i < n; i++) {
		struct sim *a = &w->sims[i];

		snprintf(a->name, sizeof(a->name), "sim-%d-%d", proc, i);
		a->e = curl_easy_init();
		curl_easy_setopt(a->e, CURLOPT_HTTPHEADER, w->hdrs);
		curl_easy_setopt(a->e, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(a->e, CURLOPT_WRITEDATA, a);
		curl_easy_setopt(a->e, CURLOPT_PRIVATE, a);
		curl_easy_setopt(a->e, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(a->e, CURLOPT_TCP_NODELAY, 1L);
		if (w->o->tls) {
			curl_easy_setopt(a->e, CURLOPT_CAINFO, w->o->ca);
			curl_easy_setopt(a->e, CURLOPT_CAPATH, NULL);
		}
	}
}

static void swarm_release(struct swarm *w)
{
	for (int i = 0; i < w->n; i++) {
		curl_multi_remove_handle(w->m, w->sims[i].e);
		curl_easy_cleanup(w->sims[i].e);
		drv_free(w->sims[i].in);
	}
	drv_free(w->sims);
	curl_multi_cleanup(w->m);
	curl_slist_free_all(w->hdrs);
}

/* Every finished transfer: read it, and send that agent's next request. */
static void swarm_collect(struct swarm *w)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(w->m, &left))) {
		struct sim *a = NULL;
		long status = 0;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&a);
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
		curl_multi_remove_handle(w->m, a->e);
		if (msg->data.result != CURLE_OK || !take_reply(w, a, status)) {
			w->t.errors += !(status == 409 && !a->session);
			a->retry_at = drv_mono_ms() + 100;
			continue;
		}
		send_next(w, a);
	}
}

/* Agents that failed go again once their pause is over. */
static void swarm_retry(struct swarm *w)
{
	int64_t now = drv_mono_ms();

	for (int i = 0; i < w->n; i++) {
		struct sim *a = &w->sims[i];

		if (a->retry_at && now >= a->retry_at) {
			a->retry_at = 0;
			send_next(w, a);
		}
	}
}

/* Runs n agents until every one registered and then o->seconds more. */
static struct tally swarm_run(const struct opts *o, const char *url, int proc, int n)
{
	struct swarm w;
	int64_t start = drv_mono_ms(), give_up = start + 120000;
	int running = 0;

	swarm_init(&w, o, url, proc, n);
	w.window_start = w.window_end = INT64_MAX;
	for (int i = 0; i < n; i++)
		send_next(&w, &w.sims[i]);
	for (;;) {
		int64_t now = drv_mono_ms();

		if (w.window_start == INT64_MAX && (w.t.registered == n || now > give_up)) {
			w.window_start = now;
			w.window_end = now + (int64_t)(o->seconds * 1000);
			w.t.register_ms = now - start;
		}
		if (now >= w.window_end)
			break;
		curl_multi_perform(w.m, &running);
		swarm_collect(&w);
		swarm_retry(&w);
		curl_multi_poll(w.m, NULL, 0, 50, NULL);
	}
	for (int i = 0; i < n; i++)
		w.t.served += w.sims[i].synced;
	swarm_release(&w);
	return w.t;
}

/* --- the server and its figures -------------------------------------------------- */

/* Starts `drover server` in dir for that many agents (https with a CA
 * made there when tls); its pid, or -1. */
static pid_t start_server(const char *dir, int port, bool tls, int agents)
{
	char cfg[300], log[300], state[300], listen[64], self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	FILE *f;
	pid_t pid;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	snprintf(cfg, sizeof(cfg), "%s/server.yaml", dir);
	snprintf(log, sizeof(log), "%s/server.log", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	f = fopen(cfg, "w");
	if (!f)
		return -1;
	fchmod(fileno(f), 0600);   /* it holds the cluster token */
	/* every agent of the bench connects at once from one address, as no
	 * real cluster does (NAT apart): none is turned away unauthenticated */
	fprintf(f, "cluster_token: \"%s\"\nheartbeat_timeout_s: 120\n"
		"max_unauthenticated_per_client: %d\n", TOKEN, agents + 64);
	if (tls)
		fprintf(f, "tls: {cert_file: %s/tls/server.pem, key_file: %s/tls/server-key.pem}\n",
			dir, dir);
	fclose(f);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(self, self, "server", "--listen", listen, "--state", state, "--config", cfg,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

static bool server_up(const char *url, const char *ca, pid_t pid)
{
	struct drv_http_client c;
	struct drv_http_reply r;
	int64_t end = drv_mono_ms() + 30000;
	bool ok = false;

	drv_http_client_init(&c, url, NULL);
	drv_http_client_set_ca(&c, ca);
	drv_http_reply_init(&r);
	while (!ok && drv_mono_ms() < end && waitpid(pid, NULL, WNOHANG) == 0) {
		ok = drv_http_request(&c, "GET", "/healthz", NULL, NULL, 0, 1000, &r) == 0 &&
		     r.status == 200;
		if (!ok)
			usleep(50000);
	}
	drv_http_reply_release(&r);
	drv_http_client_release(&c);
	return ok;
}

/* --- the bench ------------------------------------------------------------------------ */

/* Forks the agent processes; each writes its tally to the pipe. */
static int start_swarms(const struct opts *o, const char *url, pid_t *kids, int rfd, int wfd)
{
	for (int p = 0; p < o->procs; p++) {
		int n = o->agents / o->procs + (p < o->agents % o->procs);

		kids[p] = fork();
		if (kids[p] == 0) {
			struct tally t;
			ssize_t w;

			close(rfd);
			t = swarm_run(o, url, p, n);
			w = write(wfd, &t, sizeof(t));
			_exit(w == sizeof(t) ? 0 : 1);
		}
		if (kids[p] < 0)
			return -1;
	}
	return 0;
}

/* Samples the server every 250 ms until the agent processes are done. */
static void watch(pid_t server, pid_t *kids, int nkids, struct bench_counts *max)
{
	int done = 0;

	while (done < nkids) {
		struct bench_counts c;

		bench_proc_counts(server, &c);
		max->threads = DRV_MAX(max->threads, c.threads);
		max->fds = DRV_MAX(max->fds, c.fds);
		max->rss_kb = DRV_MAX(max->rss_kb, c.rss_kb);
		usleep(250000);
		for (int p = 0; p < nkids; p++)
			if (kids[p] > 0 && waitpid(kids[p], NULL, WNOHANG) == kids[p]) {
				done++;
				kids[p] = -1;
			}
	}
}

/* rm -rf dir (a temporary directory of ours). */
static void print_result(const struct opts *o, const struct tally *t, const struct bench_counts *max,
			 const struct bench_counts *end)
{
	bool pass = t->served == o->agents && max->threads <= o->max_threads;

	printf("{\"bench\":\"agents\",\"agents\":%d,\"procs\":%d,\"tls\":%s,\"seconds\":%.1f,"
	       "\"wait_s\":%.0f,\"registered\":%ld,\"register_s\":%.1f,\"served\":%ld,"
	       "\"exchanges\":%ld,\"exchanges_per_s\":%.1f,\"errors\":%ld,"
	       "\"server\":{\"threads_max\":%ld,\"fds_max\":%ld,\"rss_kb_max\":%ld,"
	       "\"threads_end\":%ld,\"fds_end\":%ld,\"rss_kb_end\":%ld},\"max_threads\":%d,"
	       "\"pass\":%s}\n",
	       o->agents, o->procs, o->tls ? "true" : "false", o->seconds, o->wait, t->registered,
	       t->register_ms / 1000.0, t->served, t->exchanges, t->exchanges / o->seconds,
	       t->errors, max->threads, max->fds, max->rss_kb, end->threads, end->fds, end->rss_kb,
	       o->max_threads, pass ? "true" : "false");
}

static int parse(int argc, char **argv, struct opts *o)
{
	bool json = true;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &json, "print JSON (always)"),
		DRV_OPT_INT(0, "agents", &o->agents, 1, 20000, "N", "simulated agents (default 2000)"),
		DRV_OPT_INT(0, "procs", &o->procs, 1, 64, "P", "processes playing them (default 4)"),
		DRV_OPT_DOUBLE(0, "seconds", &o->seconds, 1, 3600, "S",
			       "how long they sync once all registered (default 10)"),
		DRV_OPT_DOUBLE(0, "wait", &o->wait, 0, 60, "S",
			       "how long each sync may wait at the controller (default 1)"),
		DRV_OPT_INT(0, "max-threads", &o->max_threads, 1, 100000, "N",
			    "the server's threads at most, to pass (default 16)"),
		DRV_OPT_FLAG(0, "tls", &o->tls, "https: the server with a CA made here, agents checking it"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench agents",
		.usage = "drover bench agents [--agents N] [--procs P] [--seconds S] [--wait S] "
			 "[--max-threads N] [--tls]",
		.about = "Many agents, one connection each, syncing with a real drover server: "
			 "exchanges/s and the server's threads and open files.",
		.options = table,
	};
	int i = drv_opts_parse(&usage, argc, argv);

	if (o->procs > o->agents)
		o->procs = o->agents;
	return i;
}

/* --tls: a CA and the server's certificate in dir/tls; o->ca names the CA. */
static int make_tls(const char *dir, struct opts *o)
{
	char tdir[200], err[512];

	snprintf(tdir, sizeof(tdir), "%s/tls", dir);
	snprintf(o->ca, sizeof(o->ca), "%s/ca.pem", tdir);
	if (drv_tls_init_dir(tdir, "127.0.0.1", NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "drover bench agents: %s\n", err);
		return -1;
	}
	return 0;
}

int drv_bench_agents(int argc, char **argv)
{
	struct opts o = { .agents = 2000, .procs = 4, .seconds = 10, .wait = 1,
			  .max_threads = 16 };
	char dir[] = "/tmp/drover-bench-agents-XXXXXX", url[64];
	struct tally sum = { 0 }, t;
	struct bench_counts max = { 0 }, end;
	int pipefd[2] = { -1, -1 }, port, rc = DRV_EXIT_FAIL, i;
	pid_t server = -1, kids[64];

	i = parse(argc, argv, &o);
	if (i < 0)
		return drv_opts_exit(i);
	bench_raise_nofile();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* the server must not hold the pipe open: close-on-exec */
	if (!mkdtemp(dir) || pipe2(pipefd, O_CLOEXEC) < 0) {
		fprintf(stderr, "drover bench agents: %s\n", strerror(errno));
		return DRV_EXIT_FAIL;
	}
	port = bench_free_port();
	snprintf(url, sizeof(url), "%s://127.0.0.1:%d", o.tls ? "https" : "http", port);
	if (o.tls && make_tls(dir, &o) < 0)
		goto out;
	server = start_server(dir, port, o.tls, o.agents);
	if (server < 0 || !server_up(url, o.tls ? o.ca : NULL, server)) {
		fprintf(stderr, "drover bench agents: the server did not come up (log %s/server.log)\n",
			dir);
		goto out;
	}
	if (start_swarms(&o, url, kids, pipefd[0], pipefd[1]) < 0) {
		fprintf(stderr, "drover bench agents: fork: %s\n", strerror(errno));
		goto out;
	}
	close(pipefd[1]);
	watch(server, kids, o.procs, &max);
	while (read(pipefd[0], &t, sizeof(t)) == sizeof(t)) {
		sum.registered += t.registered;
		sum.served += t.served;
		sum.exchanges += t.exchanges;
		sum.errors += t.errors;
		sum.register_ms = DRV_MAX(sum.register_ms, t.register_ms);
	}
	bench_proc_counts(server, &end);
	print_result(&o, &sum, &max, &end);
	rc = sum.served == o.agents && max.threads <= o.max_threads ? DRV_EXIT_OK : DRV_EXIT_FAIL;
out:
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
	}
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (rc == DRV_EXIT_OK)
		bench_remove_tree(dir);
	return rc;
}
