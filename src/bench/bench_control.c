/*
 * bench_control.c: 'drover bench control': one controller at the scale of
 * the biggest clusters, with simulated agents and jobs flowing.
 *
 *   drover bench control [--agents N] [--gpus-per-node G] [--procs P]
 *                        [--addresses A] [--pending J] [--rate R]
 *                        [--seconds S] [--job-s S] [--json]
 *
 * It writes a cluster file of N nodes of G H100s under a real topology
 * (one pool, spines of 25 leaves, leaves of 20 nodes: 12,500 nodes are 25
 * spines and 625 leaves), starts a real `drover server` (this binary) on
 * it with an SQLite store and the default heartbeat interval, submits J
 * jobs that stay pending (8 GPUs each in a second pool, dc2, of 20 nodes
 * that no agent plays: they wait for its nodes, and every scheduling pass
 * weighs them), and starts P processes that each play N/P
 * agents over the agent protocol (include/drover/proto.h) with libcurl's
 * multi interface, one connection per agent, their source addresses
 * spread over A loopback addresses (127.0.0.2, 127.0.0.3, ...). A
 * simulated agent registers as the node of its name, then syncs as a
 * real one does (each sync waiting the heartbeat interval at the
 * controller): it reports every task it is given running at once, and
 * ended (exit 0) in its first sync after --job-s seconds.
 *
 * Once every node is up it measures for S seconds while a client submits
 * R one-to-eight-GPU Pods a second (one at a time, each durable before
 * its answer):
 *   heartbeats_per_s         syncs the server took in, from its counter
 *                            drover_agent_heartbeats_total (/metrics)
 *   submit_to_running_p99_ms from sending a submit to its job's transition
 *                            to running arriving on GET /v1/watch (p50 too)
 *   legs_ms                  p50 and p99 of its legs: the submit answered,
 *                            sent to seen scheduled on the watch, seen
 *                            scheduled to seen running
 *   cpu_percent              the server's CPU time (utime + stime of
 *                            /proc/PID/stat) over the window, 100 = a core
 *   rss_mb                   the server's VmRSS at most (sampled 4 a second)
 * and prints one JSON object. "pass" says whether the issue's targets
 * held (cpu_percent < 100, p99 < 100 ms, rss_mb < 1024, every agent up,
 * every streamed job running); the exit status is 1 only when the run
 * itself failed (agents not up, streamed jobs that never ran).
 */
#include "drover/bench.h"
#include "drover/client.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/json.h"
#include "drover/options.h"
#include "drover/proto.h"
#include "bench_int.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CLUSTER_TOKEN "bench-control-cluster-token"
#define ADMIN_TOKEN "bench-control-admin-token"
#define NODES_PER_LEAF 20
#define LEAVES_PER_SPINE 25
#define MAX_PROCS 64
#define MAX_GPUS 16

struct opts {
	int agents, gpus, procs, addrs, pending, rate;
	double seconds, job_s;
};

/* What one process of agents did. */
struct tally {
	long registered, syncs, started, ended, errors;
	long gone;                   /* syncs answered 409: the session was gone */
};

/* The name of node k (0-based) as the cluster file makes it. */
static void node_name(int k, char *buf, size_t n)
{
	int per_spine = NODES_PER_LEAF * LEAVES_PER_SPINE;

	snprintf(buf, n, "sp%02d-lf%02d-n%02d", k / per_spine + 1,
		 k % per_spine / NODES_PER_LEAF + 1, k % NODES_PER_LEAF + 1);
}

/* --- one simulated agent ------------------------------------------------------ */

enum tphase { T_NEW, T_RUNNING, T_DONE };

struct stask {
	char id[48];
	int64_t epoch;
	int64_t started_ms;
	enum tphase phase;
	bool seen;                    /* in the task set just read */
};

struct sim {
	CURL *e;
	char name[48];
	int64_t session, version;
	char *in;
	size_t len, cap;
	int64_t retry_at;
	struct stask *tasks;
	size_t ntasks, tcap;
	struct drv_proto_report *sent;   /* the reports of the request in flight */
	size_t nsent;
};

struct swarm {
	const struct opts *o;
	CURLM *m;
	struct curl_slist *hdrs;
	char url_register[128], url_sync[128], iface[48];
	struct sim *sims;
	int n, first;
	struct tally t;
	int epfd;                    /* curl's sockets (curl_multi_socket_action) */
	long timer_ms;               /* curl's timer: -1 none */
};

/* curl's sockets go into an epoll set, so that a loop turn costs what the
 * sockets with events cost: curl_multi_perform and curl_multi_poll walk
 * every handle each turn, which at 1,500 agents a process made the
 * simulator, not the controller, what a reply waited for */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *cls, void *sockp)
{
	struct swarm *w = cls;
	struct epoll_event ev = { .data.fd = fd };

	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 && errno == ENOENT)
		epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *cls)
{
	struct swarm *w = cls;

	w->timer_ms = timeout_ms;
	return 0;
}

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

static json_t *register_body(const struct swarm *w, const struct sim *a)
{
	struct drv_proto_gpu gpus[MAX_GPUS];
	struct drv_proto_register m;
	char uuids[MAX_GPUS][64];

	drv_proto_register_init(&m);
	m.name = a->name;
	m.hostname = a->name;
	m.version = "bench";
	m.backend = "fake";
	m.cpu_milli = 224000;
	m.mem_mib = 2 << 20;
	for (int i = 0; i < w->o->gpus; i++) {
		snprintf(uuids[i], sizeof(uuids[i]), "GPU-%s-%d", a->name, i);
		gpus[i] = (struct drv_proto_gpu){ .index = i, .uuid = uuids[i],
						  .model = "NVIDIA H100 80GB HBM3",
						  .memory_mib = 81559 };
	}
	m.gpus = gpus;
	m.ngpus = (size_t)w->o->gpus;
	return drv_proto_register_encode(&m);
}

/* A sync: the GPUs healthy, the running tasks, and what changed: a new
 * task runs, a task past --job-s ended. */
static json_t *sync_body(const struct swarm *w, struct sim *a)
{
	struct drv_proto_gpu_health gpus[MAX_GPUS];
	struct drv_proto_ref *refs = drv_calloc(a->ntasks + 1, sizeof(*refs));
	struct drv_proto_sync m;
	int64_t now = drv_mono_ms();
	size_t nrefs = 0;
	json_t *j;

	drv_proto_sync_init(&m);
	m.node = a->name;
	m.session = a->session;
	m.version = a->version;
	m.wait_s = -1;   /* the controller's heartbeat interval, as a real agent */
	a->sent = drv_calloc(a->ntasks + 1, sizeof(*a->sent));
	a->nsent = 0;
	for (size_t k = 0; k < a->ntasks; k++) {
		struct stask *t = &a->tasks[k];

		if (t->phase == T_NEW) {
			a->sent[a->nsent++] = (struct drv_proto_report){
				.task_id = t->id, .epoch = t->epoch, .state = DRV_PROTO_RUNNING,
				.pid = 1000 + (int64_t)k, .exit_code = -1 };
			t->phase = T_RUNNING;
			t->started_ms = now;
		} else if (t->phase == T_RUNNING &&
			   now - t->started_ms >= (int64_t)(w->o->job_s * 1000)) {
			a->sent[a->nsent++] = (struct drv_proto_report){
				.task_id = t->id, .epoch = t->epoch, .state = DRV_PROTO_EXITED,
				.exit_code = 0 };
			t->phase = T_DONE;
		} else if (t->phase == T_RUNNING) {
			refs[nrefs++] = (struct drv_proto_ref){ .task_id = t->id, .epoch = t->epoch,
								 .state = "running" };
		}
	}
	for (int i = 0; i < w->o->gpus; i++)
		gpus[i] = (struct drv_proto_gpu_health){ .index = i, .healthy = true, .xid = 0,
							 .ecc_uncorrected = 0, .temperature_c = 40,
							 .utilization = 0, .memory_used_mib = 0,
							 .power_w = 70 };
	m.gpus = gpus;
	m.ngpus = (size_t)w->o->gpus;
	m.tasks = refs;
	m.ntasks = nrefs;
	m.reports = a->sent;
	m.nreports = a->nsent;
	j = drv_proto_sync_encode(&m);
	drv_free(refs);
	return j;
}

static void send_next(struct swarm *w, struct sim *a)
{
	json_t *body = a->session ? sync_body(w, a) : register_body(w, a);
	char *text = json_dumps(body, JSON_COMPACT);

	json_decref(body);
	a->len = 0;
	curl_easy_setopt(a->e, CURLOPT_URL, a->session ? w->url_sync : w->url_register);
	curl_easy_setopt(a->e, CURLOPT_COPYPOSTFIELDS, text);
	free(text);
	curl_multi_add_handle(w->m, a->e);
}

/* The reports of the answered request are taken: ended tasks go. */
static void reports_taken(struct swarm *w, struct sim *a)
{
	size_t keep = 0;

	for (size_t k = 0; k < a->nsent; k++)
		if (a->sent[k].state == DRV_PROTO_RUNNING)
			w->t.started++;
		else
			w->t.ended++;
	for (size_t k = 0; k < a->ntasks; k++)
		if (a->tasks[k].phase != T_DONE)
			a->tasks[keep++] = a->tasks[k];
	a->ntasks = keep;
}

static struct stask *task_of(struct sim *a, const char *id, int64_t epoch)
{
	for (size_t k = 0; k < a->ntasks; k++)
		if (a->tasks[k].epoch == epoch && !strcmp(a->tasks[k].id, id))
			return &a->tasks[k];
	return NULL;
}

/* The task set of a sync reply: new tasks start (reported in the next
 * sync); tasks the controller no longer lists, or wants stopped, go. */
static void take_task_set(struct sim *a, const struct drv_proto_sync_reply *r)
{
	size_t keep = 0;

	for (size_t k = 0; k < a->ntasks; k++)
		a->tasks[k].seen = false;
	for (size_t k = 0; k < r->ntasks; k++) {
		const struct drv_proto_task *x = &r->tasks[k];
		struct stask *t = task_of(a, x->task_id, x->epoch);

		if (x->stop)
			continue;
		if (!t) {
			DRV_GROW(a->tasks, a->ntasks + 1, a->tcap);
			t = &a->tasks[a->ntasks++];
			memset(t, 0, sizeof(*t));
			snprintf(t->id, sizeof(t->id), "%s", x->task_id);
			t->epoch = x->epoch;
			t->phase = T_NEW;
		}
		t->seen = true;
	}
	for (size_t k = 0; k < a->ntasks; k++)
		if (a->tasks[k].seen)
			a->tasks[keep++] = a->tasks[k];
	a->ntasks = keep;
}

static bool take_reply(struct swarm *w, struct sim *a, long status)
{
	struct drv_proto_dec d = { .peer = "controller" };
	json_t *j = a->len ? json_loadb(a->in, a->len, 0, NULL) : NULL;
	bool ok = false;

	if (status == 409 && a->session) {
		a->session = 0;
		a->ntasks = 0;
		w->t.gone++;
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

		ok = drv_proto_sync_reply_decode(j, &r, &d) == 0;
		if (ok) {
			w->t.syncs++;
			reports_taken(w, a);
			a->version = r.version;
			if (r.has_tasks)
				take_task_set(a, &r);
		}
		drv_proto_sync_reply_release(&r);
	}
	drv_free(a->sent);
	a->sent = NULL;
	a->nsent = 0;
	json_decref(j);
	return ok;
}

static void swarm_init(struct swarm *w, const struct opts *o, const char *url, int proc, int first,
		       int n)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->m = curl_multi_init();
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->timer_ms = -1;
	curl_multi_setopt(w->m, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(w->m, CURLMOPT_SOCKETDATA, w);
	curl_multi_setopt(w->m, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(w->m, CURLMOPT_TIMERDATA, w);
	w->n = n;
	w->first = first;
	w->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	w->hdrs = curl_slist_append(w->hdrs, "Authorization: Bearer " CLUSTER_TOKEN);
	snprintf(w->url_register, sizeof(w->url_register), "%s/v1/agent/register", url);
	snprintf(w->url_sync, sizeof(w->url_sync), "%s/v1/agent/sync", url);
	/* the source address: processes spread over o->addrs of 127.0.0.2.. */
	snprintf(w->iface, sizeof(w->iface), "host!127.0.0.%d", 2 + proc % o->addrs);
	w->sims = drv_calloc((size_t)n, sizeof(*w->sims));
	for (int i = 0; i < n; i++) {
		struct sim *a = &w->sims[i];

		node_name(first + i, a->name, sizeof(a->name));
		a->e = curl_easy_init();
		curl_easy_setopt(a->e, CURLOPT_HTTPHEADER, w->hdrs);
		curl_easy_setopt(a->e, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(a->e, CURLOPT_WRITEDATA, a);
		curl_easy_setopt(a->e, CURLOPT_PRIVATE, a);
		curl_easy_setopt(a->e, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(a->e, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(a->e, CURLOPT_INTERFACE, w->iface);
		curl_easy_setopt(a->e, CURLOPT_TIMEOUT_MS, 90000L);
	}
}

static void swarm_release(struct swarm *w)
{
	for (int i = 0; i < w->n; i++) {
		curl_multi_remove_handle(w->m, w->sims[i].e);
		curl_easy_cleanup(w->sims[i].e);
		drv_free(w->sims[i].in);
		drv_free(w->sims[i].tasks);
		drv_free(w->sims[i].sent);
	}
	drv_free(w->sims);
	curl_multi_cleanup(w->m);
	close(w->epfd);
	curl_slist_free_all(w->hdrs);
}

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
			/* a connection turned away at accept (the per-address cap
			 * on unauthenticated ones) is tried again, not an error */
			w->t.errors += status != 0 && !(status == 409 && !a->session);
			a->retry_at = drv_mono_ms() + 100 + rand() % 400;
			continue;
		}
		send_next(w, a);
	}
}

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

/* Plays n agents until stop_fd is readable or closed. */
static struct tally swarm_run(const struct opts *o, const char *url, int proc, int first, int n,
			      int stop_fd)
{
	struct swarm w;
	int running = 0;

	srand((unsigned)getpid());
	swarm_init(&w, o, url, proc, first, n);
	for (int i = 0; i < n; i++)
		send_next(&w, &w.sims[i]);
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = stop_fd };

		epoll_ctl(w.epfd, EPOLL_CTL_ADD, stop_fd, &ev);
	}
	for (int64_t next_retry = 0;;) {
		struct epoll_event evs[256];
		int64_t now = drv_mono_ms();
		int wait = w.timer_ms < 0 ? 50 : (int)DRV_MIN(w.timer_ms, 50), nev;
		bool stop = false;

		nev = epoll_wait(w.epfd, evs, 256, wait);
		if (nev == 0 || (w.timer_ms >= 0 && drv_mono_ms() - now >= w.timer_ms)) {
			w.timer_ms = -1;
			curl_multi_socket_action(w.m, CURL_SOCKET_TIMEOUT, 0, &running);
		}
		for (int k = 0; k < nev; k++) {
			int fl = (evs[k].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
				 (evs[k].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
				 (evs[k].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);

			if (evs[k].data.fd == stop_fd) {
				stop = true;
				continue;
			}
			curl_multi_socket_action(w.m, evs[k].data.fd, fl, &running);
		}
		if (stop)
			break;
		swarm_collect(&w);
		/* the retries are few; a walk over them 20 times a second */
		if (drv_mono_ms() >= next_retry) {
			swarm_retry(&w);
			next_retry = drv_mono_ms() + 50;
		}
	}
	swarm_release(&w);
	return w.t;
}

/* --- the cluster, the server -------------------------------------------------- */

static int write_cluster(const char *path, const struct opts *o, int *spines, int *leaves)
{
	FILE *f = fopen(path, "w");
	int left = o->agents, leaf = 0;

	if (!f)
		return -1;
	fprintf(f, "# drover bench control: %d nodes of %d H100s, spines of %d leaves of %d\n"
		"kind: Cluster\nname: bench-control\nlevels: [pool, spine, leaf, node]\n"
		"nvlinkDomain: node\nnodeTypes:\n  hgx:\n    gpus: %d\n"
		"    gpuModel: H100-SXM-80GB\n    cpu: 224\n    memory: 2Ti\n"
		"topology:\n  - name: dc1\n    provider: onprem\n    region: us-east\n"
		"    pricePerGpuHour: 2.10\n    children:\n",
		o->agents, o->gpus, LEAVES_PER_SPINE, NODES_PER_LEAF, o->gpus);
	*spines = 0;
	while (left > 0) {
		int sp = leaf / LEAVES_PER_SPINE + 1, here = DRV_MIN(left, NODES_PER_LEAF);

		if (leaf % LEAVES_PER_SPINE == 0) {
			fprintf(f, "      - name: sp%02d\n        children:\n", sp);
			(*spines)++;
		}
		fprintf(f, "          - name: sp%02d-lf%02d\n            children:\n"
			"              - name: \"{parent}-n{i:02}\"\n                count: %d\n"
			"                type: hgx\n", sp, leaf % LEAVES_PER_SPINE + 1, here);
		left -= here;
		leaf++;
	}
	*leaves = leaf;
	/* the pool the pending jobs wait for: no agent plays its nodes */
	fprintf(f, "  - name: dc2\n    provider: onprem\n    region: us-east\n"
		"    pricePerGpuHour: 2.10\n    children:\n"
		"      - name: dc2-sp01\n        children:\n          - name: dc2-lf01\n"
		"            children:\n              - name: \"{parent}-n{i:02}\"\n"
		"                count: %d\n                type: hgx\n", NODES_PER_LEAF);
	return fclose(f);
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);   /* it holds tokens */
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static pid_t start_server(const char *dir, const char *self, int port)
{
	char cfg[300], log[300], state[300], cluster[300], listen[64], text[512];

	snprintf(cfg, sizeof(cfg), "%s/server.yaml", dir);
	snprintf(log, sizeof(log), "%s/server.log", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(cluster, sizeof(cluster), "%s/cluster.yaml", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	/* defaults everywhere (heartbeat interval, connection caps) but the
	 * tokens, and a longer heartbeat timeout: the first agents must not
	 * be declared down while the last still register */
	snprintf(text, sizeof(text),
		 "tokens:\n  - token: \"%s\"\n    user: bench\n    admin: true\n"
		 "cluster_token: \"%s\"\nheartbeat_timeout_s: 300\nagent_lease_s: 600\n",
		 ADMIN_TOKEN, CLUSTER_TOKEN);
	if (write_text(cfg, text) < 0)
		return -1;
	{
		char *argv[] = { (char *)self, "server", "--listen", listen, "--state", state,
				 "--config", cfg, "--cluster", cluster, NULL };

		return bench_spawn(argv, log);
	}
}

static struct drv_client *client(const char *url)
{
	struct drv_client_conf c = { .server = (char *)url, .token = (char *)ADMIN_TOKEN };

	return drv_client_new(&c);
}

/* GET path as admin; 0 with r filled (2xx), or -1 (message printed). */
static int call(struct drv_client *c, const char *method, const char *path, const char *ctype,
		const char *body, long timeout_ms, struct drv_client_reply *r)
{
	char err[512];

	if (drv_client_call(c, method, path, ctype, body, body ? strlen(body) : 0, timeout_ms, r,
			    err, sizeof(err)))
		return -1;
	if (r->status < 200 || r->status >= 300) {
		char *m = drv_client_reply_error(r);

		fprintf(stderr, "drover bench control: %s %s: HTTP %ld: %s\n", method, path,
			r->status, m);
		drv_free(m);
		drv_client_reply_release(r);
		return -1;
	}
	return 0;
}

static bool server_up(struct drv_client *c, pid_t pid)
{
	int64_t end = drv_mono_ms() + 120000;

	while (drv_mono_ms() < end && waitpid(pid, NULL, WNOHANG) == 0) {
		struct drv_client_reply r;
		char err[256];

		if (!drv_client_call(c, "GET", "/healthz", NULL, NULL, 0, 2000, &r, err, sizeof(err))) {
			bool ok = r.status == 200;

			drv_client_reply_release(&r);
			if (ok)
				return true;
		}
		usleep(100000);
	}
	return false;
}

/* A sample's value in the server's /metrics ("name" or "name{labels}"); -1. */
static double metric(struct drv_client *c, const char *sample)
{
	struct drv_client_reply r;
	double v = -1;
	size_t n = strlen(sample);

	if (call(c, "GET", "/metrics", NULL, NULL, 10000, &r) < 0)
		return -1;
	for (const char *p = r.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, sample, n) && p[n] == ' ') {
			v = strtod(p + n + 1, NULL);
			break;
		}
	drv_client_reply_release(&r);
	return v;
}

/* A Pod of gpus GPUs running `true`; with pool, only there. */
static char *pod(const char *name, int gpus, const char *pool)
{
	char *b = drv_malloc(640);

	snprintf(b, 640,
		 "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n%s%s%s"
		 "  containers:\n  - name: main\n    image: busybox:1.36\n"
		 "    command: [\"true\"]\n    resources:\n      limits:\n"
		 "        nvidia.com/gpu: %d\n",
		 name, pool ? "  nodeSelector:\n    drover.io/pool: " : "",
		 pool ? pool : "", pool ? "\n" : "", gpus);
	return b;
}

/* J jobs that stay pending, in batches of 500 (one transaction each). */
static int submit_pending(struct drv_client *c, int njobs)
{
	struct drv_client_reply r;
	char *body = pod("pending", 8, "dc2"), path[64];
	json_t *spec;
	int done = 1;

	if (call(c, "POST", "/v1/jobs", "application/yaml", body, 30000, &r) < 0) {
		drv_free(body);
		return -1;
	}
	drv_free(body);
	snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)drv_json_int(r.json, "id", 0));
	drv_client_reply_release(&r);
	if (call(c, "GET", path, NULL, NULL, 30000, &r) < 0)
		return -1;
	spec = json_incref(json_object_get(r.json, "spec"));
	drv_client_reply_release(&r);
	while (spec && done < njobs) {
		int n = DRV_MIN(500, njobs - done);
		json_t *items = json_array(), *doc;
		char *text;
		int rc;

		for (int i = 0; i < n; i++)
			json_array_append(items, spec);
		doc = json_pack("{s:o}", "items", items);
		text = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		rc = call(c, "POST", "/v1/jobs/batch", "application/json", text, 120000, &r);
		free(text);
		if (rc < 0)
			break;
		drv_client_reply_release(&r);
		done += n;
	}
	json_decref(spec);
	return done == njobs ? 0 : -1;
}

/* --- the server's figures -------------------------------------------------------- */


static void counts_max(struct bench_counts *max, pid_t pid)
{
	struct bench_counts c;

	bench_proc_counts(pid, &c);
	max->threads = DRV_MAX(max->threads, c.threads);
	max->fds = DRV_MAX(max->fds, c.fds);
	max->rss_kb = DRV_MAX(max->rss_kb, c.rss_kb);
}

/* --- the submit stream and the watch ------------------------------------------ */

struct stream {
	const char *url;
	const struct opts *o;
	pthread_mutex_t mu;
	long long *ids;
	double *sent, *acked;        /* per submit: when sent, when answered */
	double *sched, *ran;         /* when seen scheduled, running (0: not yet) */
	size_t n, cap;
	long long *seen;             /* jobs seen going to scheduled or running, in order */
	double *seen_at;             /* when */
	bool *seen_run;              /* to running (else to scheduled) */
	size_t nseen, seencap;
	long failed;
	volatile int stop_submit, stop_watch;
};

/* Each submit's times scheduled and running, from the watch's sightings:
 * a job may be seen before its submit's answer is read. Caller locks. */
static void match(struct stream *st)
{
	for (size_t i = 0; i < st->n; i++)
		for (size_t k = 0; !st->ran[i] && k < st->nseen; k++) {
			if (st->seen[k] != st->ids[i])
				continue;
			if (st->seen_run[k])
				st->ran[i] = st->seen_at[k];
			else if (!st->sched[i])
				st->sched[i] = st->seen_at[k];
		}
}

static void *watcher(void *p)
{
	struct stream *st = p;
	struct drv_client *c = client(st->url);
	long long since = -1;
	struct drv_client_reply r;

	/* where the stream is now: only what follows counts */
	if (call(c, "GET", "/v1/watch?timeout=0", NULL, NULL, 10000, &r) == 0) {
		if (json_is_integer(json_object_get(r.json, "next")))
			since = json_integer_value(json_object_get(r.json, "next"));
		drv_client_reply_release(&r);
	}
	while (!st->stop_watch) {
		char path[128];
		const json_t *e;
		size_t i;
		double t;

		snprintf(path, sizeof(path), since < 0 ? "/v1/watch?timeout=1"
						      : "/v1/watch?since=%lld&timeout=1", since);
		if (call(c, "GET", path, NULL, NULL, 10000, &r) < 0) {
			usleep(50000);
			continue;
		}
		t = drv_mono_s();
		pthread_mutex_lock(&st->mu);
		json_array_foreach(json_object_get(r.json, "items"), i, e) {
			const char *to = json_string_value(json_object_get(e, "to"));

			if (!to || (strcmp(to, "running") && strcmp(to, "scheduled")))
				continue;
			if (st->nseen == st->seencap) {
				DRV_GROW(st->seen, st->nseen + 1, st->seencap);
				st->seen_at = drv_realloc(st->seen_at,
							  st->seencap * sizeof(*st->seen_at));
				st->seen_run = drv_realloc(st->seen_run,
							   st->seencap * sizeof(*st->seen_run));
			}
			st->seen[st->nseen] = drv_json_int(e, "job", 0);
			st->seen_run[st->nseen] = strcmp(to, "running") == 0;
			st->seen_at[st->nseen++] = t;
		}
		pthread_mutex_unlock(&st->mu);
		if (json_is_integer(json_object_get(r.json, "next")))
			since = json_integer_value(json_object_get(r.json, "next"));
		drv_client_reply_release(&r);
	}
	drv_client_free(c);
	return NULL;
}

/* One Pod of 1, 2, 4 or 8 GPUs every 1/rate s, each answered before the next. */
static void *submitter(void *p)
{
	struct stream *st = p;
	struct drv_client *c = client(st->url);
	char *bodies[4];
	double next = drv_mono_s();

	for (int g = 0; g < 4; g++)
		bodies[g] = pod("stream", 1 << g, NULL);
	for (long i = 0; !st->stop_submit; i++) {
		struct drv_client_reply r;
		double sent, acked, wait;
		long long id;

		next += 1.0 / st->o->rate;
		sent = drv_mono_s();
		if (call(c, "POST", "/v1/jobs", "application/yaml", bodies[i % 4], 30000, &r) < 0) {
			st->failed++;
		} else {
			acked = drv_mono_s();
			id = drv_json_int(r.json, "id", 0);
			drv_client_reply_release(&r);
			pthread_mutex_lock(&st->mu);
			DRV_GROW(st->ids, st->n + 1, st->cap);
			st->sent = drv_realloc(st->sent, st->cap * sizeof(*st->sent));
			st->acked = drv_realloc(st->acked, st->cap * sizeof(*st->acked));
			st->sched = drv_realloc(st->sched, st->cap * sizeof(*st->sched));
			st->ran = drv_realloc(st->ran, st->cap * sizeof(*st->ran));
			st->ids[st->n] = id;
			st->sent[st->n] = sent;
			st->acked[st->n] = acked;
			st->sched[st->n] = 0;
			st->ran[st->n++] = 0;
			pthread_mutex_unlock(&st->mu);
		}
		wait = next - drv_mono_s();
		if (wait > 0)
			usleep((useconds_t)(wait * 1e6));
	}
	for (int g = 0; g < 4; g++)
		drv_free(bodies[g]);
	drv_client_free(c);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	long k = (long)ceil(p * (double)n) - 1;

	return n ? v[DRV_MAX(0, DRV_MIN(k, (long)n - 1))] : 0;
}

/* --- the bench ------------------------------------------------------------------------ */

static int parse(int argc, char **argv, struct opts *o)
{
	bool json = true;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &json, "print JSON (always)"),
		DRV_OPT_INT(0, "agents", &o->agents, 1, 100000, "N",
			    "simulated agents, one node each (default 12500)"),
		DRV_OPT_INT(0, "gpus-per-node", &o->gpus, 1, MAX_GPUS, "G",
			    "H100s on each node (default 8)"),
		DRV_OPT_INT(0, "procs", &o->procs, 1, MAX_PROCS, "P",
			    "processes playing the agents (default 8)"),
		DRV_OPT_INT(0, "addresses", &o->addrs, 1, 200, "A",
			    "loopback source addresses 127.0.0.2.. they spread over (default 8)"),
		DRV_OPT_INT(0, "pending", &o->pending, 1, 1000000, "J",
			    "jobs that stay pending during the run (default 10000)"),
		DRV_OPT_INT(0, "rate", &o->rate, 1, 1000, "R",
			    "streamed submits per second while measuring (default 10)"),
		DRV_OPT_DOUBLE(0, "seconds", &o->seconds, 1, 3600, "S",
			       "how long to measure once every node is up (default 30)"),
		DRV_OPT_DOUBLE(0, "job-s", &o->job_s, 0, 3600, "S",
			       "how long a streamed job's tasks run (default 10)"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench control",
		.usage = "drover bench control [--agents N] [--gpus-per-node G] [--procs P] "
			 "[--addresses A] [--pending J] [--rate R] [--seconds S] [--job-s S] [--json]",
		.about = "One controller, N simulated agents heartbeating over the agent protocol, "
			 "J jobs pending and a submit stream: heartbeats/s, submit-to-running p99, "
			 "the server's CPU and RSS.",
		.options = table,
	};
	int i = drv_opts_parse(&usage, argc, argv);

	if (o->procs > o->agents)
		o->procs = o->agents;
	return i;
}

struct run {
	struct opts o;
	char dir[64], url[64], self[4096];
	pid_t server, kids[MAX_PROCS];
	int stop[2], res[2];
	int spines, leaves;
	double register_s;
	struct bench_counts max;
};

static int start_swarms(struct run *R)
{
	int first = 0;

	for (int p = 0; p < R->o.procs; p++) {
		int n = R->o.agents / R->o.procs + (p < R->o.agents % R->o.procs);

		R->kids[p] = fork();
		if (R->kids[p] == 0) {
			struct tally t;
			ssize_t w;

			close(R->stop[1]);
			close(R->res[0]);
			t = swarm_run(&R->o, R->url, p, first, n, R->stop[0]);
			w = write(R->res[1], &t, sizeof(t));
			_exit(w == sizeof(t) ? 0 : 1);
		}
		if (R->kids[p] < 0)
			return -1;
		first += n;
	}
	return 0;
}

/* Until every node is up (sampling the server meanwhile); false on timeout. */
static bool wait_up(struct run *R, struct drv_client *c)
{
	int64_t start = drv_mono_ms(), end = start + 600000;
	double up = 0;

	while (drv_mono_ms() < end && waitpid(R->server, NULL, WNOHANG) == 0) {
		counts_max(&R->max, R->server);
		up = metric(c, "drover_nodes{state=\"up\"}");
		if (up >= R->o.agents) {
			R->register_s = (double)(drv_mono_ms() - start) / 1000.0;
			return true;
		}
		usleep(500000);
	}
	fprintf(stderr, "drover bench control: %.0f of %d nodes up (logs in %s)\n", up,
		R->o.agents, R->dir);
	return false;
}

struct window {
	double seconds, heartbeats, cpu_s, passes, pass_s;
	size_t submits, ran;
	long failed;
	double p50, p99, max;
	/* where the time went, p50 and p99 of each leg: the submit's answer,
	 * sent to seen scheduled, seen scheduled to seen running */
	double ack[2], to_sched[2], sched_run[2];
};

/* p50 and p99 of to[i] - from[i] in ms over the submits that have both. */
static void leg(const double *from, const double *to, size_t n, double out[2])
{
	double *v = drv_calloc(n + 1, sizeof(*v));
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (from[i] > 0 && to[i] > 0)
			v[m++] = (to[i] - from[i]) * 1000.0;
	qsort(v, m, sizeof(*v), cmp_double);
	out[0] = pct(v, m, 0.50);
	out[1] = pct(v, m, 0.99);
	drv_free(v);
}

static void measure(struct run *R, struct drv_client *c, struct window *w)
{
	struct stream st = { .url = R->url, .o = &R->o };
	pthread_t wt, sb;
	double t0, hb0, hb1, *lat;
	long long c0, c1;
	int64_t end;

	pthread_mutex_init(&st.mu, NULL);
	pthread_create(&wt, NULL, watcher, &st);
	usleep(300000);
	hb0 = metric(c, "drover_agent_heartbeats_total");
	w->passes = -metric(c, "drover_sched_pass_seconds_count");
	w->pass_s = -metric(c, "drover_sched_pass_seconds_sum");
	c0 = bench_cpu_ticks(R->server);
	t0 = drv_mono_s();
	pthread_create(&sb, NULL, submitter, &st);
	end = drv_mono_ms() + (int64_t)(R->o.seconds * 1000);
	while (drv_mono_ms() < end) {
		counts_max(&R->max, R->server);
		usleep(250000);
	}
	c1 = bench_cpu_ticks(R->server);
	hb1 = metric(c, "drover_agent_heartbeats_total");
	w->passes += metric(c, "drover_sched_pass_seconds_count");
	w->pass_s += metric(c, "drover_sched_pass_seconds_sum");
	w->seconds = drv_mono_s() - t0;
	st.stop_submit = 1;
	pthread_join(sb, NULL);
	/* the last submits may still start */
	for (end = drv_mono_ms() + 15000; drv_mono_ms() < end;) {
		size_t ran = 0;

		pthread_mutex_lock(&st.mu);
		match(&st);
		for (size_t i = 0; i < st.n; i++)
			ran += st.ran[i] > 0;
		pthread_mutex_unlock(&st.mu);
		if (ran == st.n)
			break;
		usleep(100000);
	}
	st.stop_watch = 1;
	pthread_join(wt, NULL);
	match(&st);
	w->heartbeats = hb1 - hb0;
	w->cpu_s = (double)(c1 - c0) / (double)sysconf(_SC_CLK_TCK);
	w->submits = st.n;
	w->failed = st.failed;
	lat = drv_calloc(st.n + 1, sizeof(*lat));
	w->ran = 0;
	for (size_t i = 0; i < st.n; i++)
		if (st.ran[i] > 0)
			lat[w->ran++] = (st.ran[i] - st.sent[i]) * 1000.0;
	qsort(lat, w->ran, sizeof(*lat), cmp_double);
	w->p50 = pct(lat, w->ran, 0.50);
	w->p99 = pct(lat, w->ran, 0.99);
	w->max = w->ran ? lat[w->ran - 1] : 0;
	leg(st.sent, st.acked, st.n, w->ack);
	leg(st.sent, st.sched, st.n, w->to_sched);
	leg(st.sched, st.ran, st.n, w->sched_run);
	drv_free(lat);
	drv_free(st.ids);
	drv_free(st.sent);
	drv_free(st.acked);
	drv_free(st.sched);
	drv_free(st.ran);
	drv_free(st.seen);
	drv_free(st.seen_at);
	drv_free(st.seen_run);
	pthread_mutex_destroy(&st.mu);
}

static struct tally stop_swarms(struct run *R)
{
	struct tally sum = { 0 }, t;

	close(R->stop[1]);
	R->stop[1] = -1;
	for (int p = 0; p < R->o.procs; p++)
		if (R->kids[p] > 0)
			waitpid(R->kids[p], NULL, 0);
	fcntl(R->res[0], F_SETFL, O_NONBLOCK);   /* a process that died wrote nothing */
	/* one tally from each process that wrote one (the parent's copy of
	 * the write end stays open: read no more than there are) */
	for (int p = 0; p < R->o.procs && read(R->res[0], &t, sizeof(t)) == sizeof(t); p++) {
		sum.registered += t.registered;
		sum.syncs += t.syncs;
		sum.started += t.started;
		sum.ended += t.ended;
		sum.errors += t.errors;
		sum.gone += t.gone;
	}
	return sum;
}

static bool print_result(const struct run *R, const struct window *w, const struct tally *t,
			 double pending)
{
	double hb_s = w->heartbeats / w->seconds, cpu = 100.0 * w->cpu_s / w->seconds;
	double rss = (double)R->max.rss_kb / 1024.0;
	bool ok = w->ran == w->submits && w->submits > 0;
	bool pass = ok && cpu < 100 && w->p99 < 100 && rss < 1024;

	printf("{\"bench\":\"control\",\"agents\":%d,\"gpus_per_node\":%d,\"gpus\":%lld,"
	       "\"cluster\":{\"spines\":%d,\"leaves\":%d,\"nodes\":%d},\"procs\":%d,"
	       "\"addresses\":%d,\"register_s\":%.1f,\"pending\":%.0f,\"seconds\":%.1f,"
	       "\"heartbeats_per_s\":%.1f,\"heartbeats_expected_per_s\":%.1f,"
	       "\"submit_rate\":%d,\"submits\":%zu,\"failed_submits\":%ld,\"ran\":%zu,"
	       "\"submit_to_running_p50_ms\":%.1f,\"submit_to_running_p99_ms\":%.1f,"
	       "\"submit_to_running_max_ms\":%.1f,"
	       "\"legs_ms\":{\"answered_p50\":%.1f,\"answered_p99\":%.1f,"
	       "\"scheduled_p50\":%.1f,\"scheduled_p99\":%.1f,"
	       "\"scheduled_to_running_p50\":%.1f,\"scheduled_to_running_p99\":%.1f},"
	       "\"cpu_percent\":%.1f,\"rss_mb\":%.1f,"
	       "\"server\":{\"threads_max\":%ld,\"fds_max\":%ld,\"passes\":%.0f,"
	       "\"pass_mean_ms\":%.1f},"
	       "\"agents_side\":{\"registered\":%ld,\"syncs\":%ld,\"tasks_started\":%ld,"
	       "\"tasks_ended\":%ld,\"sessions_gone\":%ld,\"errors\":%ld},"
	       "\"targets\":{\"cpu_percent\":100,\"submit_to_running_p99_ms\":100,"
	       "\"rss_mb\":1024},\"pass\":%s}\n",
	       R->o.agents, R->o.gpus, (long long)R->o.agents * R->o.gpus, R->spines, R->leaves,
	       R->o.agents, R->o.procs, R->o.addrs, R->register_s, pending, w->seconds, hb_s,
	       R->o.agents / 5.0, R->o.rate, w->submits, w->failed, w->ran, w->p50, w->p99,
	       w->max, w->ack[0], w->ack[1], w->to_sched[0], w->to_sched[1], w->sched_run[0],
	       w->sched_run[1], cpu, rss, R->max.threads, R->max.fds, w->passes,
	       w->passes > 0 ? 1000.0 * w->pass_s / w->passes : 0.0, t->registered, t->syncs,
	       t->started, t->ended, t->gone, t->errors, pass ? "true" : "false");
	return ok;
}

static int run_bench(struct run *R)
{
	struct drv_client *c = client(R->url);
	struct window w = { 0 };
	struct tally t;
	double pending;
	bool ok = false;

	if (!server_up(c, R->server)) {
		fprintf(stderr, "drover bench control: the server did not come up (log %s/server.log)\n",
			R->dir);
		goto out;
	}
	if (submit_pending(c, R->o.pending) < 0)
		goto out;
	if (start_swarms(R) < 0) {
		fprintf(stderr, "drover bench control: fork: %s\n", strerror(errno));
		goto out;
	}
	if (!wait_up(R, c)) {
		stop_swarms(R);
		goto out;
	}
	measure(R, c, &w);
	pending = metric(c, "drover_jobs{state=\"pending\"}");
	t = stop_swarms(R);
	ok = print_result(R, &w, &t, pending);
out:
	drv_client_free(c);
	return ok ? 0 : -1;
}

int drv_bench_control(int argc, char **argv)
{
	struct run R = { .o = { .agents = 12500, .gpus = 8, .procs = 8, .addrs = 8,
				.pending = 10000, .rate = 10, .seconds = 30, .job_s = 10 },
			 .stop = { -1, -1 }, .res = { -1, -1 } };
	char path[128];
	ssize_t n;
	int i, rc = DRV_EXIT_FAIL;

	i = parse(argc, argv, &R.o);
	if (i < 0)
		return drv_opts_exit(i);
	n = readlink("/proc/self/exe", R.self, sizeof(R.self) - 1);
	snprintf(R.dir, sizeof(R.dir), "/tmp/drover-bench-control-XXXXXX");
	if (n <= 0 || !mkdtemp(R.dir) || pipe2(R.stop, O_CLOEXEC) < 0 ||
	    pipe2(R.res, O_CLOEXEC) < 0) {
		fprintf(stderr, "drover bench control: %s\n", strerror(errno));
		return DRV_EXIT_FAIL;
	}
	R.self[n] = '\0';
	bench_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(path, sizeof(path), "%s/cluster.yaml", R.dir);
	if (write_cluster(path, &R.o, &R.spines, &R.leaves) < 0) {
		fprintf(stderr, "drover bench control: %s: %s\n", path, strerror(errno));
		goto out;
	}
	snprintf(R.url, sizeof(R.url), "http://127.0.0.1:%d", bench_free_port());
	R.server = start_server(R.dir, R.self, atoi(strrchr(R.url, ':') + 1));
	if (R.server > 0 && run_bench(&R) == 0)
		rc = DRV_EXIT_OK;
out:
	if (R.stop[1] >= 0)
		close(R.stop[1]);
	if (R.server > 0) {
		kill(R.server, SIGTERM);
		waitpid(R.server, NULL, 0);
	}
	close(R.stop[0]);
	close(R.res[0]);
	close(R.res[1]);
	if (rc == DRV_EXIT_OK)
		bench_remove_tree(R.dir);
	return rc;
}
