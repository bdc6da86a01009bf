/*
 * bench_agent.c: 'drover bench agent': the footprint of an idle node agent.
 *
 *   drover bench agent [--json] [--seconds N] [--gpus SPEC] [--server URL] [--tls]
 *
 * Starts a real `drover agent` process (this binary) with 8 simulated
 * H100s, lets it register with a controller, then scrapes its /metrics
 * once a second for N seconds (default 30) and reports, from /proc:
 *   rss_anon_kb   RssAnon at the end: the agent's own memory, without the
 *                 pages of shared libraries it maps
 *   vm_rss_kb     VmRSS at the end (what `ps` shows, libraries included)
 *   vm_hwm_kb     the peak VmRSS
 *   cpu_percent   user+system CPU time over the window / wall time, in % of
 *                 one core (the scrapes' cost included)
 * against the targets RssAnon <= 4 MB and <= 0.5 % of a core.
 *
 * The controller is, unless --server is given, a minimal one inside this
 * process that answers the agent protocol of docs/api.md (register, and
 * one sync every 5 s, the server's default heartbeat interval, with an
 * empty task set), so the figure is the agent's alone. With --server, the
 * real controller's cluster token comes from DROVER_AGENT_TOKEN, which the
 * agent inherits: no token on a command line (CONTRACTS.md §6).
 *
 * --tls: the same over https: a CA and a certificate made in the agent's
 * state directory (drv_tls_init_dir), the stand-in controller and the
 * agent's listener serving with it, the agent checking the controller and
 * the scraper checking the agent against the CA (with --server, the
 * agent's CA comes from DROVER_CA_FILE, which it inherits).
 */
#include "drover/bench.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/http.h"
#include "drover/options.h"
#include "drover/proto.h"
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

static volatile int ctl_stop;
static volatile int ctl_registered;

static int c_register(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_proto_registered a;

	drv_proto_registered_init(&a);
	a.node = "bench-node";
	a.session = 1;
	a.pool = "default";
	ctl_registered = 1;
	drv_http_resp_json(resp, 200, drv_proto_registered_encode(&a));
	return 0;
}

/* A sync: answered at once when the agent has not seen version 1 (an
 * empty task set) or reports, else after the wait it asks for. */
static int c_sync(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_proto_dec d = { .peer = "bench agent" };
	struct drv_proto_sync m;
	struct drv_proto_sync_reply r;
	json_t *b = drv_http_req_json(req, resp);

	if (!b)
		return 0;
	if (drv_proto_sync_decode(b, &m, &d) < 0) {
		drv_http_resp_error(resp, 400, "invalid", NULL, "%s", d.err);
		json_decref(b);
		return 0;
	}
	for (int i = 0; m.version == 1 && !m.nreports && i < m.wait_s * 10 && !ctl_stop; i++)
		usleep(100000);
	drv_proto_sync_reply_init(&r);
	r.version = 1;
	r.heartbeat_interval_s = 5;
	r.has_tasks = m.version != 1;
	drv_http_resp_json(resp, 200, drv_proto_sync_reply_encode(&r));
	drv_proto_sync_release(&m);
	json_decref(b);
	return 0;
}

static const struct drv_http_route ctl_routes[] = {
	{ "POST", "/v1/agent/register", c_register, 0 },
	{ "POST", "/v1/agent/sync", c_sync, 0 },
	{ NULL, NULL, NULL, 0 },
};


static long status_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* One run: what was asked, the processes, what was measured. */
struct run {
	const char *server, *token, *gpus;
	double seconds;
	struct drv_http_server *ctl;        /* the stand-in controller, or NULL */
	char ctl_url[128], listen[64], agent_url[128];
	char state[64];
	bool tls;                           /* --tls */
	char ca[128], cert[128], key[128];  /* with --tls: in state/tls */
	pid_t pid;                          /* the agent */
	struct drv_http_client cl;          /* to the agent's routes */
	/* measured */
	double t0, t1;
	long long c0, c1;
	long rss_anon, vm_rss, hwm, max_anon;
	int scrapes, failed;
	size_t bytes;
};

static int parse(int argc, char **argv, struct run *R)
{
	bool json = true;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &json, "print JSON (always)"),
		DRV_OPT_DOUBLE(0, "seconds", &R->seconds, -1e9, 1e9, "N",
			       "how long to watch the idle agent (default 30, at least 1)"),
		DRV_OPT_STRING(0, "gpus", &R->gpus, "SPEC", "the agent's fake GPUs (default 8xH100)"),
		DRV_OPT_STRING(0, "server", &R->server, "URL",
			       "a real controller instead of the bench's own stand-in (its "
			       "cluster token in DROVER_AGENT_TOKEN)"),
		DRV_OPT_FLAG(0, "tls", &R->tls,
			     "https everywhere: the controller, the agent's listener, the scrapes"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench agent",
		.usage = "drover bench agent [--json] [--seconds N] [--gpus SPEC] "
			 "[--server URL] [--tls]",
		.about = "An idle agent's memory (RssAnon) and CPU while it is scraped.",
		.options = table,
	};
	int i = drv_opts_parse(&usage, argc, argv);

	if (R->seconds < 1)
		R->seconds = 1;
	return i;
}

/* The stand-in controller, unless --server names a real one. */
static int start_controller(struct run *R)
{
	char err[256];

	struct drv_http_server_opts o = { 0 };
	char dir[96];

	if (R->tls) {
		snprintf(dir, sizeof(dir), "%s/tls", R->state);
		snprintf(R->ca, sizeof(R->ca), "%s/ca.pem", dir);
		snprintf(R->cert, sizeof(R->cert), "%s/server.pem", dir);
		snprintf(R->key, sizeof(R->key), "%s/server-key.pem", dir);
		o = (struct drv_http_server_opts){ R->cert, R->key };
		if (drv_tls_init_dir(dir, "localhost,127.0.0.1", NULL, err, sizeof(err)) < 0) {
			fprintf(stderr, "drover bench agent: %s\n", err);
			return DRV_EIO;
		}
	}
	if (R->server)
		return 0;
	if (drv_http_server_start_opts("127.0.0.1:0", &o, ctl_routes, NULL, NULL, &R->ctl, err,
				       sizeof(err)) < 0) {
		fprintf(stderr, "drover bench agent: %s\n", err);
		return DRV_EIO;
	}
	snprintf(R->ctl_url, sizeof(R->ctl_url), "%s://127.0.0.1:%d", R->tls ? "https" : "http",
		 drv_http_server_port(R->ctl));
	R->server = R->ctl_url;
	return 0;
}

/* `drover agent` (this binary) with fake GPUs, its output to /dev/null. */
static int spawn_agent(struct run *R)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int port = bench_free_port();

	if (n <= 0) {
		fprintf(stderr, "drover bench agent: cannot find this binary\n");
		return DRV_EIO;
	}
	self[n] = '\0';
	snprintf(R->listen, sizeof(R->listen), "127.0.0.1:%d", port);
	snprintf(R->agent_url, sizeof(R->agent_url), "%s://127.0.0.1:%d",
		 R->tls ? "https" : "http", port);
	setenv("DROVER_AGENT_TOKEN", R->token, 1); /* inherited: not on argv */
	R->pid = fork();
	if (R->pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (R->tls && R->ctl)
			setenv("DROVER_CA_FILE", R->ca, 1);
		if (R->tls)
			execl(self, self, "agent", "--server", R->server, "--name", "bench-node",
			      "--fake-gpus", R->gpus, "--listen", R->listen, "--state", R->state,
			      "--run-as-self", "--tls-cert", R->cert, "--tls-key", R->key,
			      (char *)NULL);
		else
			execl(self, self, "agent", "--server", R->server, "--name", "bench-node",
			      "--fake-gpus", R->gpus, "--listen", R->listen, "--state", R->state,
			      "--run-as-self", (char *)NULL);
		_exit(127);
	}
	if (R->pid < 0) {
		fprintf(stderr, "drover bench agent: fork: %s\n", strerror(errno));
		return DRV_EIO;
	}
	return 0;
}

/* Until the agent answers /healthz and (stand-in) has registered. */
static int wait_agent_up(struct run *R)
{
	for (int i = 0; i < 100; i++) {
		struct drv_http_reply r;
		bool up;

		drv_http_reply_init(&r);
		up = drv_http_request(&R->cl, "GET", "/healthz", NULL, NULL, 0, -1, &r) == 0 &&
		     r.status == 200 && (!R->ctl || ctl_registered);
		drv_http_reply_release(&r);
		if (up)
			return 0;
		usleep(100000);
	}
	fprintf(stderr, "drover bench agent: the agent did not come up at %s\n", R->agent_url);
	return DRV_ETIMEDOUT;
}

/* Scrapes /metrics once a second for R->seconds; CPU and memory from /proc. */
static int measure(struct run *R)
{
	double next;

	R->c0 = bench_cpu_ticks(R->pid);
	R->t0 = next = drv_mono_s();
	while (drv_mono_s() - R->t0 < R->seconds) {
		struct drv_http_reply r;

		drv_http_reply_init(&r);
		if (drv_http_request(&R->cl, "GET", "/metrics", NULL, NULL, 0, -1, &r) == 0 &&
		    r.status == 200) {
			R->scrapes++;
			R->bytes = r.len;
		} else {
			R->failed++;
		}
		drv_http_reply_release(&r);
		R->max_anon = DRV_MAX(R->max_anon, status_kb(R->pid, "RssAnon"));
		next += 1.0;
		while (drv_mono_s() < next && drv_mono_s() - R->t0 < R->seconds)
			usleep(20000);
	}
	R->t1 = drv_mono_s();
	R->c1 = bench_cpu_ticks(R->pid);
	R->rss_anon = status_kb(R->pid, "RssAnon");
	R->vm_rss = status_kb(R->pid, "VmRSS");
	R->hwm = status_kb(R->pid, "VmHWM");
	R->max_anon = DRV_MAX(R->max_anon, R->rss_anon);
	if (R->c0 < 0 || R->c1 < 0 || R->rss_anon < 0) {
		fprintf(stderr, "drover bench agent: the agent died during the run\n");
		return DRV_EIO;
	}
	return 0;
}

static void print_result(const struct run *R)
{
	double cpu = (double)(R->c1 - R->c0) / (double)sysconf(_SC_CLK_TCK) / (R->t1 - R->t0) *
		     100.0;
	int pass = R->rss_anon <= 4096 && R->max_anon <= 4096 && cpu <= 0.5 && !R->failed;

	printf("{\"bench\":\"agent\",\"gpus\":\"%s\",\"controller\":\"%s\",\"tls\":%s,"
	       "\"scrape_interval_s\":1,\"seconds\":%.1f,\"scrapes\":%d,\"scrape_failures\":%d,"
	       "\"metrics_bytes\":%zu,\"rss_anon_kb\":%ld,\"rss_anon_max_kb\":%ld,"
	       "\"vm_rss_kb\":%ld,\"vm_hwm_kb\":%ld,\"cpu_percent\":%.3f,"
	       "\"targets\":{\"rss_anon_kb\":4096,\"cpu_percent\":0.5},\"pass\":%s}\n",
	       R->gpus, R->ctl ? "builtin" : R->server, R->tls ? "true" : "false", R->t1 - R->t0, R->scrapes, R->failed,
	       R->bytes, R->rss_anon, R->max_anon, R->vm_rss, R->hwm, cpu,
	       pass ? "true" : "false");
}

/* Stops the agent (SIGTERM, then SIGKILL after 5 s), the stand-in, the state. */
static void finish(struct run *R)
{
	char cmd[128];
	int i, st;

	if (R->pid > 0) {
		kill(R->pid, SIGTERM);
		for (i = 0; i < 50 && waitpid(R->pid, &st, WNOHANG) == 0; i++)
			usleep(100000);
		if (i == 50) {
			kill(R->pid, SIGKILL);
			waitpid(R->pid, &st, 0);
		}
	}
	ctl_stop = 1;
	drv_http_server_stop(R->ctl);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", R->state);
	if (system(cmd) != 0)
		fprintf(stderr, "drover bench agent: could not remove %s\n", R->state);
}

int drv_bench_agent(int argc, char **argv)
{
	struct run R = { .token = "bench-token", .gpus = "8xH100", .seconds = 30,
			 .state = "/tmp/drover-bench-agent-XXXXXX" };
	const char *env_token = getenv("DROVER_AGENT_TOKEN");
	int i = parse(argc, argv, &R), rc = DRV_EXIT_FAIL;

	if (env_token && *env_token)
		R.token = env_token;
	if (i < 0)
		return drv_opts_exit(i);
	if (!mkdtemp(R.state)) {
		fprintf(stderr, "drover bench agent: mkdtemp: %s\n", strerror(errno));
		return DRV_EXIT_FAIL;
	}
	drv_http_client_init(&R.cl, "http://127.0.0.1", NULL);
	if (start_controller(&R) < 0 || spawn_agent(&R) < 0)
		goto out;
	drv_http_client_release(&R.cl);
	drv_http_client_init(&R.cl, R.agent_url, NULL);
	drv_http_client_set_ca(&R.cl, R.tls ? R.ca : NULL);
	R.cl.timeout_ms = 2000;
	if (wait_agent_up(&R) < 0)
		goto out;
	sleep(2); /* settle: registered, first sync */
	if (measure(&R) < 0)
		goto out;
	print_result(&R);
	rc = DRV_EXIT_OK;
out:
	drv_http_client_release(&R.cl);
	finish(&R);
	return rc;
}
