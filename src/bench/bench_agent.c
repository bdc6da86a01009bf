/*
 * bench_agent.c: 'drover bench agent': the footprint of an idle node agent.
 *
 *   drover bench agent [--json] [--seconds N] [--gpus SPEC] [--server URL --token T]
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
 * empty task set), so the figure is the agent's alone.
 */
#include "drover/bench.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/http.h"
#include "drover/options.h"
#include "drover/proto.h"

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

/* utime + stime of pid in clock ticks; -1 when it is gone */
static long long cpu_ticks(pid_t pid)
{
	char path[64], buf[2048], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p += 2; /* fields from 3 (state) on */
	for (i = 3; i < 14 && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu %llu", &ut, &st) != 2)
		return -1;
	return (long long)(ut + st);
}

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

static int free_port(void)
{
	struct drv_http_server *s;
	static const struct drv_http_route none[] = { { NULL, NULL, NULL, 0 } };
	int port;

	if (drv_http_server_start("127.0.0.1:0", none, NULL, NULL, &s, NULL, 0) < 0)
		return 0;
	port = drv_http_server_port(s);
	drv_http_server_stop(s);
	return port;
}

int drv_bench_agent(int argc, char **argv)
{
	const char *server = NULL, *token = "bench-token", *gpus = "8xH100";
	struct drv_http_server *ctl = NULL;
	struct drv_http_client cl;
	char ctl_url[128], listen[64], state[] = "/tmp/drover-bench-agent-XXXXXX", self[4096];
	char err[256], agent_url[128];
	double seconds = 30, t0, t1, next;
	long long c0, c1;
	long rss_anon = -1, vm_rss = -1, hwm = -1, max_anon = 0;
	int scrapes = 0, failed = 0, rc = DRV_EXIT_FAIL, i, port, st;
	size_t bytes = 0;
	ssize_t n;
	pid_t pid = -1;

	bool json = true;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &json, "print JSON (always)"),
		DRV_OPT_DOUBLE(0, "seconds", &seconds, -1e9, 1e9, "N",
			       "how long to watch the idle agent (default 30, at least 1)"),
		DRV_OPT_STRING(0, "gpus", &gpus, "SPEC", "the agent's fake GPUs (default 8xH100)"),
		DRV_OPT_STRING(0, "server", &server, "URL",
			       "a real controller instead of the bench's own stand-in"),
		DRV_OPT_STRING(0, "token", &token, "TOKEN", "its cluster token"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench agent",
		.usage = "drover bench agent [--json] [--seconds N] [--gpus SPEC] "
			 "[--server URL --token TOKEN]",
		.about = "An idle agent's memory (RssAnon) and CPU while it is scraped.",
		.options = table,
	};

	i = drv_opts_parse(&usage, argc, argv);
	if (i < 0)
		return drv_opts_exit(i);
	if (seconds < 1)
		seconds = 1;
	if (!mkdtemp(state)) {
		fprintf(stderr, "drover bench agent: mkdtemp: %s\n", strerror(errno));
		return DRV_EXIT_FAIL;
	}
	if (!server) {
		if (drv_http_server_start("127.0.0.1:0", ctl_routes, NULL, NULL, &ctl, err,
					  sizeof(err)) < 0) {
			fprintf(stderr, "drover bench agent: %s\n", err);
			return DRV_EXIT_FAIL;
		}
		snprintf(ctl_url, sizeof(ctl_url), "http://127.0.0.1:%d", drv_http_server_port(ctl));
		server = ctl_url;
	}
	port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(agent_url, sizeof(agent_url), "http://127.0.0.1:%d", port);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		fprintf(stderr, "drover bench agent: cannot find this binary\n");
		goto out;
	}
	self[n] = '\0';

	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(self, self, "agent", "--server", server, "--token", token, "--name",
		      "bench-node", "--fake-gpus", gpus, "--listen", listen, "--state", state,
		      "--run-as-self", (char *)NULL);
		_exit(127);
	}
	if (pid < 0) {
		fprintf(stderr, "drover bench agent: fork: %s\n", strerror(errno));
		goto out;
	}

	drv_http_client_init(&cl, agent_url, NULL);
	cl.timeout_ms = 2000;
	for (i = 0; i < 100; i++) {
		struct drv_http_reply r;
		drv_http_reply_init(&r);
		if (drv_http_request(&cl, "GET", "/healthz", NULL, NULL, 0, -1, &r) == 0 &&
		    r.status == 200 && (!ctl || ctl_registered)) {
			drv_http_reply_release(&r);
			break;
		}
		drv_http_reply_release(&r);
		usleep(100000);
	}
	if (i == 100) {
		fprintf(stderr, "drover bench agent: the agent did not come up at %s\n", agent_url);
		goto out_client;
	}
	sleep(2); /* settle: first heartbeat, first long-poll */

	c0 = cpu_ticks(pid);
	t0 = drv_mono_s();
	next = t0;
	while (drv_mono_s() - t0 < seconds) {
		struct drv_http_reply r;
		long a;
		drv_http_reply_init(&r);
		if (drv_http_request(&cl, "GET", "/metrics", NULL, NULL, 0, -1, &r) == 0 &&
		    r.status == 200) {
			scrapes++;
			bytes = r.len;
		} else {
			failed++;
		}
		drv_http_reply_release(&r);
		a = status_kb(pid, "RssAnon");
		if (a > max_anon)
			max_anon = a;
		next += 1.0;
		while (drv_mono_s() < next && drv_mono_s() - t0 < seconds)
			usleep(20000);
	}
	t1 = drv_mono_s();
	c1 = cpu_ticks(pid);
	rss_anon = status_kb(pid, "RssAnon");
	vm_rss = status_kb(pid, "VmRSS");
	hwm = status_kb(pid, "VmHWM");
	if (rss_anon > max_anon)
		max_anon = rss_anon;
	if (c0 < 0 || c1 < 0 || rss_anon < 0) {
		fprintf(stderr, "drover bench agent: the agent died during the run\n");
		goto out_client;
	}
	{
		double cpu = (double)(c1 - c0) / (double)sysconf(_SC_CLK_TCK) / (t1 - t0) * 100.0;
		int pass = rss_anon <= 4096 && max_anon <= 4096 && cpu <= 0.5 && !failed;
		printf("{\"bench\":\"agent\",\"gpus\":\"%s\",\"controller\":\"%s\","
		       "\"scrape_interval_s\":1,\"seconds\":%.1f,\"scrapes\":%d,\"scrape_failures\":%d,"
		       "\"metrics_bytes\":%zu,\"rss_anon_kb\":%ld,\"rss_anon_max_kb\":%ld,"
		       "\"vm_rss_kb\":%ld,\"vm_hwm_kb\":%ld,\"cpu_percent\":%.3f,"
		       "\"targets\":{\"rss_anon_kb\":4096,\"cpu_percent\":0.5},\"pass\":%s}\n",
		       gpus, ctl ? "builtin" : server, t1 - t0, scrapes, failed, bytes, rss_anon,
		       max_anon, vm_rss, hwm, cpu, pass ? "true" : "false");
	}
	rc = DRV_EXIT_OK;
out_client:
	drv_http_client_release(&cl);
out:
	if (pid > 0) {
		kill(pid, SIGTERM);
		for (i = 0; i < 50 && waitpid(pid, &st, WNOHANG) == 0; i++)
			usleep(100000);
		if (i == 50) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
	}
	ctl_stop = 1;
	drv_http_server_stop(ctl);
	{
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
		if (system(cmd) != 0)
			fprintf(stderr, "drover bench agent: could not remove %s\n", state);
	}
	return rc;
}
