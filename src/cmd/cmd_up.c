/*
 * cmd_up.c: 'drover up': the all-in-one setup on one machine, in the
 * foreground until Ctrl-C: the controller (include/drover/server.h) plus a
 * local agent (include/drover/agent.h) in the same process, real GPUs
 * through NVML when there are any, else a simulated 8-GPU H100 node, said
 * clearly. It writes the client's config (server address and token) so
 * that `drover submit` on this machine needs no flags, and prints the URL
 * and three commands to try.
 *
 * A single-user setup: tasks run as the user who started it, root
 * included, and it says so.
 */
#include "drover/agent.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "drover/http.h"
#include "drover/server.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: drover up [--state DIR] [--listen ADDR:PORT] [--agent-listen ADDR:PORT]\n"
		"                 [--fake-gpus SPEC] [--cluster FILE] [--name NODE]\n"
		"  --state DIR              state (SQLite, config, task logs); default\n"
		"                           $XDG_STATE_HOME/drover (~/.local/state/drover)\n"
		"  --listen ADDR:PORT       the API (default 127.0.0.1:8080)\n"
		"  --agent-listen ADDR:PORT the local agent's /metrics and logs (default 127.0.0.1:9400)\n"
		"  --fake-gpus SPEC         simulated GPUs even when NVIDIA's are present (8xH100, ...)\n"
		"  --cluster FILE           a cluster file for the controller (docs/cluster-format.md)\n"
		"  --name NODE              the local node's name (default: the host name)\n");
}

/* $VAR or $HOME/fallback, joined with leaf. */
static void xdg_dir(const char *var, const char *fallback, const char *leaf, char *out,
		    size_t n)
{
	const char *v = getenv(var);
	const char *home = getenv("HOME");

	if (v && *v)
		snprintf(out, n, "%s/%s", v, leaf);
	else
		snprintf(out, n, "%s/%s/%s", home && *home ? home : "/tmp", fallback, leaf);
}

struct client_config {
	const char *url, *token;
};

static int put_client_config(FILE *f, void *arg)
{
	const struct client_config *cc = arg;

	fprintf(f, "# written by drover up: the local controller and its admin token\n"
		   "server: %s\ntoken: %s\n", cc->url, cc->token ? cc->token : "");
	return 0;
}

/* Writes the client's config file (docs/client.md): server and token. */
static int write_client_config(const char *url, const char *token, char *path, size_t n)
{
	struct client_config cc = { url, token };
	char dir[900];

	xdg_dir("XDG_CONFIG_HOME", ".config", "drover", dir, sizeof(dir));
	if (drv_mkdir_p(dir, 0700) < 0)
		return -1;
	snprintf(path, n, "%s/config", dir);
	return drv_file_write_atomic(path, 0600, put_client_config, &cc) < 0 ? -1 : 0;
}

/* Waits (up to secs) for the node to be up; prints what it has. */
static void report_node(const char *url, const char *token, const char *name, int secs)
{
	struct drv_http_client c;
	char path[256];
	long st = 0;
	json_t *n = NULL;
	char *esc = drv_http_escape(name);

	drv_http_client_init(&c, url, token);
	snprintf(path, sizeof(path), "/v1/nodes/%s", esc);
	drv_free(esc);
	for (int i = 0; i < secs * 10; i++) {
		json_decref(n);
		n = NULL;
		if (drv_http_json(&c, "GET", path, NULL, 2000, &st, &n) == 0 && st == 200 &&
		    n && strcmp(drv_json_str(n, "state") ? drv_json_str(n, "state") : "", "up") == 0)
			break;
		usleep(100 * 1000);
	}
	if (n && st == 200 && drv_json_str(n, "state") && strcmp(drv_json_str(n, "state"), "up") == 0) {
		const char *backend = drv_json_str(n, "backend");

		printf("node %s: %lld x %s, up%s\n", name, (long long)drv_json_int(n, "gpus", 0),
		       drv_json_str(n, "model") ? drv_json_str(n, "model") : "no GPU",
		       backend && strcmp(backend, "fake") == 0
			       ? " (SIMULATED GPUs: no NVIDIA GPU found here, or --fake-gpus)"
			       : backend ? " (real GPUs, through NVML)" : "");
	} else {
		printf("warning: the local node %s did not come up within %d s (see the agent's "
		       "messages above)\n", name, secs);
	}
	json_decref(n);
	drv_http_client_release(&c);
}

int cmd_up(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "agent-listen", required_argument, NULL, 'a' },
		{ "fake-gpus", required_argument, NULL, 'f' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL, *listen = "127.0.0.1:8080", *agent_listen = "127.0.0.1:9400";
	const char *fake = NULL, *cluster = NULL, *name = NULL;
	char state_buf[900], agent_state[1000], host[256], err[4096], cfgpath[1000];
	struct passwd *pw = getpwuid(getuid());
	const char *me = pw && pw->pw_name ? pw->pw_name : "user";
	struct drv_server_opts so;
	struct drv_agent_config ac;
	struct drv_server *srv = NULL;
	struct drv_agent *agent = NULL;
	sigset_t set;
	int c, sig = 0, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': state = optarg; break;
		case 'l': listen = optarg; break;
		case 'a': agent_listen = optarg; break;
		case 'f': fake = optarg; break;
		case 'c': cluster = optarg; break;
		case 'n': name = optarg; break;
		case 'h': usage(stdout); return DRV_EXIT_OK;
		default: usage(stderr); return DRV_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drover up: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return DRV_EXIT_USAGE;
	}
	if (!state) {
		xdg_dir("XDG_STATE_HOME", ".local/state", "drover", state_buf, sizeof(state_buf));
		state = state_buf;
	}
	if (!name) {
		if (gethostname(host, sizeof(host)) != 0 || !host[0])
			snprintf(host, sizeof(host), "local");
		host[sizeof(host) - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		name = host;
	}
	if (drv_mkdir_p(state, 0700) < 0) {
		fprintf(stderr, "drover up: cannot create the state directory %s: %s\n", state,
			strerror(errno));
		return DRV_EXIT_FAIL;
	}

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&so, 0, sizeof(so));
	so.listen = listen;
	so.state_dir = state;
	so.cluster_file = cluster;
	so.admin_user = me;
	so.allow_root_tasks = true;
	rc = drv_server_start(&so, &srv, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "drover up: %s%s\n", err,
			strstr(err, "in use") ? " (is another drover running? pick another with --listen)"
					      : "");
		return rc == DRV_EINVAL || rc == DRV_EPARSE ? DRV_EXIT_USAGE : DRV_EXIT_FAIL;
	}
	if (write_client_config(drv_server_url(srv), drv_server_admin_token(srv), cfgpath,
				sizeof(cfgpath)) < 0) {
		fprintf(stderr, "drover up: warning: cannot write the client config (%s); use "
				"--server %s --token from %s\n", strerror(errno), drv_server_url(srv),
			drv_server_config_path(srv));
		cfgpath[0] = '\0';
	}

	memset(&ac, 0, sizeof(ac));
	snprintf(agent_state, sizeof(agent_state), "%s/agent", state);
	ac.server_url = drv_server_url(srv);
	ac.token = drv_server_cluster_token(srv);
	ac.name = name;
	ac.listen = agent_listen;
	ac.fake_gpus = fake;
	ac.fake_fallback = true;
	ac.state_dir = agent_state;
	ac.run_as_self = true;
	rc = drv_agent_start(&ac, &agent, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "drover up: the local agent did not start: %s\n", err);
		drv_server_stop(srv);
		return rc == DRV_EINVAL ? DRV_EXIT_USAGE : DRV_EXIT_FAIL;
	}

	printf("\ndrover is up: %s   (stop with Ctrl-C)\n", drv_server_url(srv));
	printf("state in %s; server config (tokens) %s\n", state, drv_server_config_path(srv));
	if (cfgpath[0])
		printf("client config written to %s: drover commands here need no flags\n", cfgpath);
	printf("tasks run as %s (uid %d), who started drover up: a single-user setup\n", me,
	       (int)getuid());
	report_node(drv_server_url(srv), drv_server_admin_token(srv), name, 10);
	{
		char ahost[256];
		int aport = 0;

		if (drv_http_parse_addr(agent_listen, ahost, sizeof(ahost), &aport) < 0 || !ahost[0] ||
		    strcmp(ahost, "0.0.0.0") == 0)
			snprintf(ahost, sizeof(ahost), "127.0.0.1");
		if (drv_agent_metrics_port(agent) > 0)
			aport = drv_agent_metrics_port(agent);
		printf("agent metrics: http://%s:%d/metrics\n", ahost, aport);
	}
	printf("\nTry:\n"
	       "  printf '#!/bin/sh\\n#SBATCH --gpus=1\\necho hello from GPU $CUDA_VISIBLE_DEVICES\\n' | drover submit -\n"
	       "  drover queue\n"
	       "  drover nodes\n\n");
	fflush(stdout);

	sigwait(&set, &sig);
	fprintf(stderr, "\ndrover up: %s: stopping the agent (its tasks get SIGTERM) and the "
			"controller\n", sig == SIGINT ? "Ctrl-C" : "SIGTERM");
	drv_agent_stop(agent);
	drv_server_stop(srv);
	fprintf(stderr, "drover up: stopped; state kept in %s\n", state);
	return DRV_EXIT_OK;
}
