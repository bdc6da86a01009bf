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
 * included, and it says so. With --tls both serve https with a CA and a
 * certificate it makes in STATE/tls (kept for later starts).
 */
#include "drover/agent.h"
#include "drover/client.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "drover/http.h"
#include "drover/options.h"
#include "drover/server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
	const char *url, *token, *ca;
};

static int put_client_config(FILE *f, void *arg)
{
	const struct client_config *cc = arg;

	fprintf(f, "# written by drover up: the local controller and its admin token\n"
		   "server: %s\ntoken: %s\n", cc->url, cc->token ? cc->token : "");
	if (cc->ca)
		fprintf(f, "ca_file: %s\n", cc->ca);
	return 0;
}

/* Writes the client's config file (docs/client.md): server, token, CA. */
static int write_client_config(const char *url, const char *token, const char *ca, char *path,
			       size_t n)
{
	struct client_config cc = { url, token, ca };
	char dir[900];

	xdg_dir("XDG_CONFIG_HOME", ".config", "drover", dir, sizeof(dir));
	if (drv_mkdir_p(dir, 0700) < 0)
		return -1;
	snprintf(path, n, "%s/config", dir);
	return drv_file_write_atomic(path, 0600, put_client_config, &cc) < 0 ? -1 : 0;
}

/* Waits (up to secs) for the node to be up; prints what it has. */
static void report_node(const char *url, const char *token, const char *ca, const char *name,
			int secs)
{
	struct drv_http_client c;
	char path[256];
	long st = 0;
	json_t *n = NULL;
	char *esc = drv_http_escape(name);

	drv_http_client_init(&c, url, token);
	drv_http_client_set_ca(&c, ca);
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

/* What the command line says, defaults filled in. */
struct up_args {
	const char *state, *listen, *agent_listen, *fake, *cluster, *name;
	const char *runtime, *registries_conf, *podman_root;
	bool tls;
	int fake_hcas;
	char state_buf[900], host[256];
	/* with --tls: STATE/tls/ (absolute) and its files */
	char ca[PATH_MAX + 32], cert[PATH_MAX + 32], key[PATH_MAX + 32];
};

/* 0, or DRV_OPTS_HELP / DRV_OPTS_ERROR (printed). */
static int parse_args(int argc, char **argv, struct up_args *a)
{
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "state", &a->state, "DIR",
			       "state (SQLite, config, task logs); default $XDG_STATE_HOME/drover "
			       "(~/.local/state/drover)"),
		DRV_OPT_STRING(0, "listen", &a->listen, "ADDR:PORT",
			       "the API (default 127.0.0.1:8080)"),
		DRV_OPT_STRING(0, "agent-listen", &a->agent_listen, "ADDR:PORT",
			       "the local agent's /metrics and logs (default 127.0.0.1:9400)"),
		DRV_OPT_STRING(0, "fake-gpus", &a->fake, "SPEC",
			       "simulated GPUs even when NVIDIA's are present (8xH100, ...)"),
		DRV_OPT_INT(0, "fake-hcas", &a->fake_hcas, 0, DRV_HCA_MAX, "N",
			    "N simulated 400 Gb/s InfiniBand HCAs on the local node (default 0)"),
		DRV_OPT_STRING(0, "cluster", &a->cluster, "FILE",
			       "a cluster file for the controller (docs/cluster-format.md)"),
		DRV_OPT_STRING(0, "name", &a->name, "NODE",
			       "the local node's name (default: the host name)"),
		DRV_OPT_STRING(0, "runtime", &a->runtime, "host|podman|auto",
			       "the local agent's runtime (default host; auto: podman when its "
			       "start check passes; docs/agent.md, \"Runtimes\")"),
		DRV_OPT_STRING(0, "registries-conf", &a->registries_conf, "FILE",
			       "the local agent's registries.conf for podman (mirrors)"),
		DRV_OPT_STRING(0, "podman-root", &a->podman_root, "DIR",
			       "the local agent's podman store (default: podman's own)"),
		DRV_OPT_FLAG(0, "tls", &a->tls,
			     "https for the API and the agent: a CA and a certificate made in "
			     "STATE/tls on first use (kept after), named in the client config"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover up",
		.usage = "drover up [--state DIR] [--listen ADDR:PORT] [--agent-listen ADDR:PORT]\n"
			 "                 [--fake-gpus SPEC] [--fake-hcas N] [--cluster FILE] [--name NODE]\n"
			 "                 [--tls] [--runtime host|podman|auto]",
		.about = "The controller and a local agent in one process, in the foreground "
			 "until Ctrl-C; writes the client's config so that drover commands here "
			 "need no flags.",
		.options = table,
	};
	int rc;

	a->listen = "127.0.0.1:8080";
	a->agent_listen = "127.0.0.1:9400";
	rc = drv_opts_parse(&cmd, argc, argv);
	if (rc < 0)
		return rc;
	if (a->runtime && strcmp(a->runtime, "host") && strcmp(a->runtime, "podman") &&
	    strcmp(a->runtime, "auto")) {
		fprintf(stderr, "drover up: --runtime: found \"%s\", expected host, podman or "
			"auto\n", a->runtime);
		return DRV_OPTS_ERROR;
	}
	if (!a->state) {
		xdg_dir("XDG_STATE_HOME", ".local/state", "drover", a->state_buf,
			sizeof(a->state_buf));
		a->state = a->state_buf;
	}
	if (!a->name) {
		if (gethostname(a->host, sizeof(a->host)) != 0 || !a->host[0])
			snprintf(a->host, sizeof(a->host), "local");
		a->host[sizeof(a->host) - 1] = '\0';
		a->host[strcspn(a->host, ".")] = '\0';
		a->name = a->host;
	}
	return 0;
}

/* The controller, and the client config pointing at it. */
static int start_server(const struct up_args *a, const char *me, struct drv_server **srv,
			char *cfgpath, size_t cfgsz)
{
	struct drv_server_opts so;
	char err[4096];
	int rc;

	memset(&so, 0, sizeof(so));
	so.listen = a->listen;
	so.state_dir = a->state;
	so.cluster_file = a->cluster;
	so.admin_user = me;
	so.allow_root_tasks = true;
	if (a->tls) {
		so.tls_cert = a->cert;
		so.tls_key = a->key;
		so.tls_ca = a->ca;
	}
	rc = drv_server_start(&so, srv, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "drover up: %s\n", err);
		return rc == DRV_EINVAL || rc == DRV_EPARSE || rc == DRV_EEXIST ? DRV_EXIT_USAGE
										 : DRV_EXIT_FAIL;
	}
	if (write_client_config(drv_server_url(*srv), drv_server_admin_token(*srv),
				a->tls ? a->ca : NULL, cfgpath, cfgsz) < 0) {
		fprintf(stderr, "drover up: warning: cannot write the client config (%s); use "
				"--server %s and DROVER_TOKEN or --token-file with the admin token "
				"from %s\n", strerror(errno), drv_server_url(*srv),
			drv_server_config_path(*srv));
		cfgpath[0] = '\0';
	} else {
		/* kubectl's, beside it (docs/kubernetes.md) */
		char kc[1100];
		char *slash;

		snprintf(kc, sizeof(kc), "%s", cfgpath);
		slash = strrchr(kc, '/');
		if (slash)
			snprintf(slash + 1, sizeof(kc) - (size_t)(slash + 1 - kc), "kubeconfig");
		if (drv_kubeconfig_write(kc, drv_server_url(*srv), drv_server_admin_token(*srv),
					 a->tls ? a->ca : NULL) == 0)
			printf("kubeconfig written to %s: KUBECONFIG=%s kubectl get nodes%s\n", kc, kc,
			       a->tls ? "" : " (kubectl sends its token over https only: use --tls)");
	}
	return 0;
}

/* The in-process agent, run-as-self, fake GPUs when NVML is missing. */
static int start_agent(const struct up_args *a, struct drv_server *srv, struct drv_agent **agent)
{
	struct drv_agent_config ac;
	char agent_state[1000], err[4096];
	int rc;

	memset(&ac, 0, sizeof(ac));
	snprintf(agent_state, sizeof(agent_state), "%s/agent", a->state);
	ac.server_url = drv_server_url(srv);
	ac.token = drv_server_cluster_token(srv);
	ac.name = a->name;
	ac.listen = a->agent_listen;
	ac.fake_gpus = a->fake;
	ac.fake_hcas = a->fake_hcas;
	ac.fake_fallback = true;
	ac.state_dir = agent_state;
	ac.run_as_self = true;
	ac.runtime = a->runtime;
	ac.podman.registries_conf = a->registries_conf;
	ac.podman.root = a->podman_root;
	if (a->tls) {
		ac.tls_cert = a->cert;
		ac.tls_key = a->key;
		ac.tls_ca = a->ca;
	}
	ac.shim_exe = drv_agent_shim_exe();
	ac.stop_tasks_on_exit = true;   /* Ctrl-C stops drover up's own tasks */
	rc = drv_agent_start(&ac, agent, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "drover up: the local agent did not start: %s\n", err);
		return rc == DRV_EINVAL || rc == DRV_EEXIST ? DRV_EXIT_USAGE : DRV_EXIT_FAIL;
	}
	return 0;
}

/* What is up, where, and three commands to try. */
static void print_banner(const struct up_args *a, struct drv_server *srv, struct drv_agent *agent,
			 const char *me, const char *cfgpath)
{
	char ahost[256];
	int aport = 0;

	printf("\ndrover is up: %s   (stop with Ctrl-C)\n", drv_server_url(srv));
	printf("state in %s; server config (tokens) %s\n", a->state, drv_server_config_path(srv));
	if (cfgpath[0])
		printf("client config written to %s: drover commands here need no flags\n", cfgpath);
	printf("tasks run as %s (uid %d), who started drover up: a single-user setup\n", me,
	       (int)getuid());
	if (a->tls)
		printf("TLS: the API and the agent serve https; CA %s\n", a->ca);
	report_node(drv_server_url(srv), drv_server_admin_token(srv), a->tls ? a->ca : NULL,
		    a->name, 10);
	if (drv_http_parse_addr(a->agent_listen, ahost, sizeof(ahost), &aport) < 0 || !ahost[0] ||
	    strcmp(ahost, "0.0.0.0") == 0)
		snprintf(ahost, sizeof(ahost), "127.0.0.1");
	if (drv_agent_metrics_port(agent) > 0)
		aport = drv_agent_metrics_port(agent);
	printf("agent metrics: %s://%s:%d/metrics\n", a->tls ? "https" : "http", ahost, aport);
	printf("\nTry:\n"
	       "  printf '#!/bin/sh\\n#SBATCH --gpus=1\\necho hello from GPU $CUDA_VISIBLE_DEVICES\\n' | drover submit -\n"
	       "  drover queue\n"
	       "  drover nodes\n\n");
	fflush(stdout);
}

/*
 * --tls: STATE/tls with a CA and a server certificate for this machine's
 * names (drv_tls_init_dir: made on first use, kept after), which the
 * controller and the agent serve with and the client config names.
 */
static int make_tls(struct up_args *a)
{
	char dir[1000], abs[PATH_MAX], names[600], err[1024] = "";
	bool made = false;

	snprintf(dir, sizeof(dir), "%s/tls", a->state);
	if (drv_tls_init_dir(dir, drv_tls_local_names(names, sizeof(names)), &made, err,
			     sizeof(err)) < 0 || !realpath(dir, abs)) {
		fprintf(stderr, "drover up: --tls: %s\n", err[0] ? err : strerror(errno));
		return DRV_EXIT_FAIL;
	}
	snprintf(a->ca, sizeof(a->ca), "%s/ca.pem", abs);
	snprintf(a->cert, sizeof(a->cert), "%s/server.pem", abs);
	snprintf(a->key, sizeof(a->key), "%s/server-key.pem", abs);
	if (made)
		printf("TLS: made a CA and a certificate for %s in %s\n", names, abs);
	return 0;
}

int cmd_up(int argc, char **argv)
{
	struct up_args a = { 0 };
	char cfgpath[1000];
	struct passwd *pw = getpwuid(getuid());
	const char *me = pw && pw->pw_name ? pw->pw_name : "user";
	struct drv_server *srv = NULL;
	struct drv_agent *agent = NULL;
	sigset_t set;
	int sig = 0, rc;

	rc = parse_args(argc, argv, &a);
	if (rc < 0)
		return drv_opts_exit(rc);
	if (drv_mkdir_p(a.state, 0700) < 0) {
		fprintf(stderr, "drover up: cannot create the state directory %s: %s\n", a.state,
			strerror(errno));
		return DRV_EXIT_FAIL;
	}
	if (a.tls && (rc = make_tls(&a)))
		return rc;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = start_server(&a, me, &srv, cfgpath, sizeof(cfgpath));
	if (rc)
		return rc;
	rc = start_agent(&a, srv, &agent);
	if (rc) {
		drv_server_stop(srv);
		return rc;
	}
	print_banner(&a, srv, agent, me, cfgpath);

	sigwait(&set, &sig);
	fprintf(stderr, "\ndrover up: %s: stopping the agent (its tasks get SIGTERM) and the "
			"controller\n", sig == SIGINT ? "Ctrl-C" : "SIGTERM");
	drv_agent_stop(agent);
	drv_server_stop(srv);
	fprintf(stderr, "drover up: stopped; state kept in %s\n", a.state);
	return DRV_EXIT_OK;
}
