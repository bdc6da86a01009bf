/*
 * cmd_agent.c: 'drover agent', the node agent in the foreground.
 *
 *   drover agent --server URL --token-file FILE --name NODE [--listen ADDR:PORT]
 *                [--metrics-listen ADDR:PORT|none] [--gpu-metrics on|off]
 *                [--hpc-job-mapping-dir DIR]
 *                [--fake-gpus SPEC] [--labels k=v,...] [--fake-hcas N]
 *                [--state DIR] [--sysfs-root DIR] [--cgroup DIR]
 *                [--advertise ADDR] [--grace SECONDS] [--nvml-lib PATH]
 *                [--tls-cert FILE --tls-key FILE] [--tls-ca FILE]
 *                [--prolog PROGRAM] [--epilog PROGRAM] [--prolog-epilog-timeout S]
 *
 * Everything happens in src/agent/agent.c; this file parses the options
 * (one table, include/drover/options.h), starts the agent, waits for
 * SIGINT or SIGTERM and stops it cleanly.
 *
 * The cluster token never comes from the command line, where every job on
 * the node could read it in /proc (CONTRACTS.md §6): --token-file FILE
 * (owner-only, else refused with exit 2) or DROVER_AGENT_TOKEN.
 */
#include "drover/agent.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "drover/gpu.h"
#include "drover/http.h"
#include "drover/options.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_labels(const char *l)
{
	const char *p = l;

	while (*p) {
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		if (!eq || eq == p) {
			fprintf(stderr, "drover agent: --labels: '%.*s' is not key=value\n", (int)n, p);
			return -1;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static const struct drv_opt_choice on_off[] = { { "on", 1 }, { "off", 0 }, { NULL, 0 } };

/* The options into cfg (the environment's defaults first); 0, or
 * DRV_OPTS_HELP / DRV_OPTS_ERROR (printed). */
static int parse_args(int argc, char **argv, struct drv_agent_config *cfg,
		      const char **token_file)
{
	int grace = -1, gpu_metrics = 1, retention = 0, nofile = 0, nproc = 0, gc = 0;
	int hook_timeout = 0;
	const struct drv_option table[] = {
		DRV_OPT_STRING(0, "server", &cfg->server_url, "URL",
			       "the controller, e.g. http://10.0.0.1:8080 (env DROVER_SERVER)"),
		DRV_OPT_STRING(0, "token-file", token_file, "FILE",
			       "the cluster token agents join with, from a file of mode 0600 "
			       "(default: env DROVER_AGENT_TOKEN)"),
		DRV_OPT_STRING(0, "name", &cfg->name, "NODE",
			       "this node's name (default: the host name)"),
		DRV_OPT_STRING(0, "listen", &cfg->listen, "ADDR:PORT",
			       "task logs, inventory and (without --metrics-listen) /metrics "
			       "(default 0.0.0.0:9400; 'none': off)"),
		DRV_OPT_STRING(0, "metrics-listen", &cfg->metrics_listen, "ADDR:PORT|none",
			       "/metrics on a listener of its own, apart from task logs; 'none': "
			       "no /metrics (default: on --listen)"),
		DRV_OPT_ENUM(0, "gpu-metrics", &gpu_metrics, on_off,
			     "dcgm-exporter's GPU series on /metrics (default on; off beside a "
			     "site's own dcgm-exporter)"),
		DRV_OPT_STRING(0, "hpc-job-mapping-dir", &cfg->hpc_job_mapping_dir, "DIR",
			       "write dcgm-exporter's HPC job mapping files there (a file per GPU "
			       "index listing the jobs on it)"),
		DRV_OPT_STRING(0, "fake-gpus", &cfg->fake_gpus, "SPEC",
			       "simulate GPUs instead of NVML: 8xH100, 4xA100-40GB, ..."),
		DRV_OPT_INT(0, "fake-hcas", &cfg->fake_hcas, 0, 1024, "N",
			    "with simulated GPUs, N simulated InfiniBand HCAs (default 0)"),
		DRV_OPT_STRING(0, "labels", &cfg->labels, "k=v,...", "node labels"),
		DRV_OPT_STRING(0, "state", &cfg->state_dir, "DIR",
			       "task logs (default $XDG_STATE_HOME/drover/agent-NODE)"),
		DRV_OPT_STRING(0, "advertise", &cfg->advertise, "ADDR",
			       "the address other nodes reach this one on (default: found)"),
		DRV_OPT_INT(0, "grace", &grace, 0, 86400 * 365, "SECONDS",
			    "SIGTERM-to-SIGKILL grace for tasks with none of their own (default 10)",
			    .expect = "seconds"),
		DRV_OPT_INT(0, "task-retention", &retention, 1, INT32_MAX, "SECONDS",
			    "keep a finished task's directory (its logs) this long after its last "
			    "output (default 604800: 7 days)", .expect = "seconds"),
		DRV_OPT_STRING(0, "prolog", &cfg->prolog, "PROGRAM",
			       "run PROGRAM (as the agent's user) before a job's first task on "
			       "this node; a failure drains the node and requeues the job"),
		DRV_OPT_STRING(0, "epilog", &cfg->epilog, "PROGRAM",
			       "run PROGRAM once none of a job's tasks runs here; the job's end "
			       "waits for it; a failure drains the node"),
		DRV_OPT_INT(0, "prolog-epilog-timeout", &hook_timeout, 1, 86400, "SECONDS",
			    "kill a prolog or epilog running longer, as a failure (default 300)",
			    .expect = "seconds"),
		DRV_OPT_FLAG(0, "stop-tasks-on-exit", &cfg->stop_tasks_on_exit,
			     "on SIGINT/SIGTERM stop the tasks and report them (default: leave "
			     "them running for the next agent to adopt)"),
		DRV_OPT_STRING(0, "sysfs-root", &cfg->sysfs_root, "DIR",
			       "read /sys/class/infiniband under DIR (tests)"),
		DRV_OPT_STRING(0, "cgroup", &cfg->cgroup_parent, "DIR",
			       "the cgroup (v2, or v1 memory) directory to make task cgroups "
			       "under"),
		DRV_OPT_STRING(0, "nvml-lib", &cfg->nvml_lib, "PATH",
			       "the NVML library to load (default libnvidia-ml.so.1)"),
		DRV_OPT_STRING(0, "tls-cert", &cfg->tls_cert, "FILE",
			       "serve --listen over https with this PEM certificate"),
		DRV_OPT_STRING(0, "tls-key", &cfg->tls_key, "FILE",
			       "its PEM private key, mode 0600"),
		DRV_OPT_STRING(0, "tls-ca", &cfg->tls_ca, "FILE",
			       "check the server's https certificate against this CA (default: "
			       "the system's; env DROVER_CA_FILE)"),
		DRV_OPT_STRING(0, "runtime", &cfg->runtime, "host|podman|auto",
			       "how tasks run: host processes (default), podman containers (the "
			       "start check must pass), or auto (podman when it passes)"),
		DRV_OPT_STRING(0, "podman-root", &cfg->podman.root, "DIR",
			       "podman's image and container store in DIR/storage, DIR/run "
			       "(default: podman's own)"),
		DRV_OPT_STRING(0, "podman-storage-driver", &cfg->podman.storage_driver, "DRIVER",
			       "podman's storage driver (overlay, vfs; default: podman's)"),
		DRV_OPT_STRING(0, "registries-conf", &cfg->podman.registries_conf, "FILE",
			       "a registries.conf for podman: mirrors and registry mappings "
			       "(default: /etc/containers/registries.conf)"),
		DRV_OPT_STRING(0, "registry-auth-file", &cfg->podman.auth_file, "FILE",
			       "registry credentials for image pulls (podman's auth.json format)"),
		DRV_OPT_INT(0, "ulimit-nofile", &nofile, 1, INT32_MAX, "N",
			    "containers' open-file limit (default: the agent's own soft limit)"),
		DRV_OPT_INT(0, "ulimit-nproc", &nproc, 1, 32768, "N",
			    "containers' process limit (default and podman's cap: 32768)"),
		DRV_OPT_INT(0, "image-gc-percent", &gc, 1, 100, "PERCENT",
			    "prune unused images when the image store's disk is fuller (default 85)"),
		DRV_OPT_FLAG(0, "run-as-self", &cfg->run_as_self,
			     "run every task as this agent's user, not the job's user (single-user "
			     "and test setups)"),
		DRV_OPT_END(),
	};
	const struct drv_opts cmd = {
		.name = "drover agent",
		.usage = "drover agent --server URL --token-file FILE --name NODE\n"
			 "                    [--listen ADDR:PORT] [--fake-gpus SPEC] [options]",
		.about = "The node agent in the foreground until SIGINT or SIGTERM: GPUs, "
			 "launching tasks, node and GPU metrics.",
		.options = table,
	};
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->server_url = getenv("DROVER_SERVER");
	cfg->token = getenv("DROVER_AGENT_TOKEN");
	cfg->tls_ca = getenv("DROVER_CA_FILE");
	rc = drv_opts_parse(&cmd, argc, argv);
	if (rc < 0)
		return rc;
	if (grace >= 0)
		cfg->grace_ms = grace * 1000LL;
	cfg->task_retention_s = retention;
	cfg->hook_timeout_s = hook_timeout;
	cfg->podman.nofile = nofile;
	cfg->podman.nproc = nproc;
	cfg->podman.image_gc_percent = gc;
	if (cfg->runtime && strcmp(cfg->runtime, "host") && strcmp(cfg->runtime, "podman") &&
	    strcmp(cfg->runtime, "auto")) {
		fprintf(stderr, "drover agent: --runtime: found \"%s\", expected host, podman or "
			"auto\n", cfg->runtime);
		return DRV_OPTS_ERROR;
	}
	cfg->no_gpu_metrics = !gpu_metrics;
	cfg->shim_exe = drv_agent_shim_exe();   /* each task runs under drover task-shim */
	return 0;
}

/* The token from --token-file (which wins over DROVER_AGENT_TOKEN) into
 * cfg->token, a copy in *owned (freed by the caller); 0 or the exit code,
 * printed: 2 for a lax mode or an empty file, 1 for an unreadable one. */
static int read_token(struct drv_agent_config *cfg, const char *token_file, char **owned)
{
	char err[1024];
	int rc;

	if (token_file) {
		rc = drv_secret_file_read(token_file, owned, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "drover agent: --token-file: %s\n", err);
			return rc == DRV_EIO ? DRV_EXIT_FAIL : DRV_EXIT_USAGE;
		}
		cfg->token = *owned;
	} else if (cfg->token) {
		/* a copy, and out of the environment every child would inherit */
		*owned = drv_strdup(cfg->token);
		cfg->token = *owned;
	}
	unsetenv("DROVER_AGENT_TOKEN");
	if (!cfg->token || !*cfg->token) {
		fprintf(stderr, "drover agent: the cluster token is required: --token-file FILE or "
			"DROVER_AGENT_TOKEN (the server's cluster_token)\n");
		return DRV_EXIT_USAGE;
	}
	return 0;
}

/* --tls-cert and --tls-key go together; the CA file must be readable. The
 * pair itself is checked when the listener starts. */
static int check_tls(const struct drv_agent_config *cfg)
{
	if (!cfg->tls_cert != !cfg->tls_key) {
		fprintf(stderr, "drover agent: %s needs %s too\n",
			cfg->tls_cert ? "--tls-cert" : "--tls-key",
			cfg->tls_cert ? "--tls-key" : "--tls-cert");
		return DRV_EXIT_USAGE;
	}
	if (cfg->tls_ca && access(cfg->tls_ca, R_OK) != 0) {
		fprintf(stderr, "drover agent: --tls-ca %s: %s\n", cfg->tls_ca, strerror(errno));
		return DRV_EXIT_USAGE;
	}
	return 0;
}

/* What the options must say together; fills the default name into name. */
static int check_config(struct drv_agent_config *cfg, char *name, size_t namesz)
{
	char err[1024], host[256];
	int n, m, port;

	if (!cfg->server_url || !*cfg->server_url) {
		fprintf(stderr, "drover agent: --server URL is required (or DROVER_SERVER)\n");
		return DRV_EXIT_USAGE;
	}
	if (!cfg->name) {
		if (gethostname(name, namesz - 1) < 0)
			snprintf(name, namesz, "node");
		name[strcspn(name, ".")] = '\0';
		cfg->name = name;
	}
	if (cfg->fake_gpus &&
	    drv_gpu_parse_fake_spec(cfg->fake_gpus, &n, &m, err, sizeof(err)) < 0) {
		fprintf(stderr, "drover agent: --fake-gpus: %s\n", err);
		return DRV_EXIT_USAGE;
	}
	if (cfg->listen && strcmp(cfg->listen, "none") &&
	    drv_http_parse_addr(cfg->listen, host, sizeof(host), &port) < 0) {
		fprintf(stderr, "drover agent: --listen: '%s', expected ADDR:PORT such as "
			"0.0.0.0:9400\n", cfg->listen);
		return DRV_EXIT_USAGE;
	}
	if (cfg->metrics_listen && strcmp(cfg->metrics_listen, "none") &&
	    drv_http_parse_addr(cfg->metrics_listen, host, sizeof(host), &port) < 0) {
		fprintf(stderr, "drover agent: --metrics-listen: '%s', expected ADDR:PORT such as "
			"0.0.0.0:9401, or none\n", cfg->metrics_listen);
		return DRV_EXIT_USAGE;
	}
	if (cfg->hpc_job_mapping_dir && !*cfg->hpc_job_mapping_dir) {
		fprintf(stderr, "drover agent: --hpc-job-mapping-dir: empty, expected a directory\n");
		return DRV_EXIT_USAGE;
	}
	if (cfg->labels && check_labels(cfg->labels) < 0)
		return DRV_EXIT_USAGE;
	/* a site hook that cannot run would fail every job here: say so now */
	for (int h = 0; h < 2; h++) {
		const char *prog = h ? cfg->epilog : cfg->prolog;

		if (prog && (prog[0] != '/' || access(prog, X_OK) < 0)) {
			fprintf(stderr, "drover agent: --%s: '%s': %s, expected the absolute path of "
				"an executable program\n", h ? "epilog" : "prolog", prog,
				prog[0] != '/' ? "not an absolute path" : strerror(errno));
			return DRV_EXIT_USAGE;
		}
	}
	return check_tls(cfg);
}

int cmd_agent(int argc, char **argv)
{
	struct drv_agent_config cfg;
	struct drv_agent *a = NULL;
	const char *token_file = NULL;
	char err[1024], name[256] = "", *token = NULL;
	sigset_t set;
	int sig, rc;

	rc = parse_args(argc, argv, &cfg, &token_file);
	if (rc < 0)
		return drv_opts_exit(rc);
	rc = check_config(&cfg, name, sizeof(name));
	if (rc == 0)
		rc = read_token(&cfg, token_file, &token);
	if (rc) {
		drv_free(token);
		return rc;
	}

	/* few threads, little memory: one malloc arena per pair of threads is plenty */
	mallopt(M_ARENA_MAX, 2);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	rc = drv_agent_start(&cfg, &a, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "drover agent: %s\n", err);
		drv_free(token);
		/* a TLS file that is not usable (a lax key, not PEM), a taken port,
		 * an unusable directory or one another agent holds is a setting
		 * that cannot work here, as a bad flag is: systemd's
		 * RestartPreventExitStatus=2 stops the restarts */
		return rc == DRV_EPERM || rc == DRV_EEXIST || rc == DRV_EINVAL || rc == DRV_ESTATE
			       ? DRV_EXIT_USAGE : DRV_EXIT_FAIL;
	}
	sigwait(&set, &sig);
	fprintf(stderr, "drover agent: %s: %s\n", sig == SIGINT ? "interrupted" : "terminated",
		cfg.stop_tasks_on_exit ? "stopping tasks and leaving"
				       : "leaving; tasks keep running for the next agent to adopt");
	drv_agent_stop(a);
	drv_free(token);
	return DRV_EXIT_OK;
}

/* The hidden `drover task-shim`: the agent's launcher runs it as each
 * task's parent (src/agent/shim.c). */
int cmd_task_shim(int argc, char **argv)
{
	return drv_task_shim_main(argc, argv);
}
