/*
 * cmd_agent.c: 'drover agent', the node agent in the foreground.
 *
 *   drover agent --server URL --token TOKEN --name NODE [--listen ADDR:PORT]
 *                [--fake-gpus SPEC] [--labels k=v,...] [--fake-hcas N]
 *                [--state DIR] [--sysfs-root DIR] [--cgroup DIR]
 *                [--advertise ADDR] [--grace SECONDS] [--nvml-lib PATH]
 *
 * Everything happens in src/agent/agent.c; this file parses flags, starts
 * the agent, waits for SIGINT or SIGTERM and stops it cleanly.
 */
#include "drover/agent.h"
#include "drover/cmd.h"
#include "drover/common.h"
#include "drover/gpu.h"
#include "drover/http.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: drover agent --server URL --token TOKEN --name NODE [--listen ADDR:PORT]\n"
		"                    [--fake-gpus SPEC] [--labels k=v,...]\n"
		"  --server URL        the controller, e.g. http://10.0.0.1:8080 (env DROVER_SERVER)\n"
		"  --token TOKEN       the cluster token agents join with (env DROVER_AGENT_TOKEN)\n"
		"  --name NODE         this node's name (default: the host name)\n"
		"  --listen ADDR:PORT  /metrics and task logs (default 0.0.0.0:9400; 'none': off)\n"
		"  --fake-gpus SPEC    simulate GPUs instead of NVML: 8xH100, 4xA100-40GB, ...\n"
		"  --fake-hcas N       with simulated GPUs, N simulated InfiniBand HCAs (default 0)\n"
		"  --labels k=v,...    node labels\n"
		"  --state DIR         task logs (default $XDG_STATE_HOME/drover/agent-NODE)\n"
		"  --advertise ADDR    the address other nodes reach this one on (default: found)\n"
		"  --grace SECONDS     SIGTERM-to-SIGKILL grace when the agent stops (default 10)\n"
		"  --sysfs-root DIR    read /sys/class/infiniband under DIR (tests)\n"
		"  --cgroup DIR        the cgroup v2 directory to make task cgroups under\n"
		"  --nvml-lib PATH     the NVML library to load (default libnvidia-ml.so.1)\n"
		"  --run-as-self       run every task as this agent's user, not the job's user\n"
		"                      (single-user and test setups)\n");
}

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

int cmd_agent(int argc, char **argv)
{
	struct drv_agent_config cfg;
	struct drv_agent *a = NULL;
	char err[1024], host[256], name[256];
	sigset_t set;
	int i, sig, port;

	memset(&cfg, 0, sizeof(cfg));
	cfg.server_url = getenv("DROVER_SERVER");
	cfg.token = getenv("DROVER_AGENT_TOKEN");
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;
		const char *eq = strchr(arg, '=');
		char flag[64];
		size_t fl = eq ? (size_t)(eq - arg) : strlen(arg);

		if (!strcmp(arg, "--run-as-self")) {
			cfg.run_as_self = true;
			continue;
		}
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			usage(stdout);
			return DRV_EXIT_OK;
		}
		if (fl >= sizeof(flag) || strncmp(arg, "--", 2)) {
			fprintf(stderr, "drover agent: unexpected argument '%s'\n", arg);
			usage(stderr);
			return DRV_EXIT_USAGE;
		}
		memcpy(flag, arg, fl);
		flag[fl] = '\0';
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else {
			fprintf(stderr, "drover agent: %s needs a value\n", flag);
			return DRV_EXIT_USAGE;
		}
		if (!strcmp(flag, "--server"))
			cfg.server_url = val;
		else if (!strcmp(flag, "--token"))
			cfg.token = val;
		else if (!strcmp(flag, "--name"))
			cfg.name = val;
		else if (!strcmp(flag, "--listen"))
			cfg.listen = val;
		else if (!strcmp(flag, "--fake-gpus"))
			cfg.fake_gpus = val;
		else if (!strcmp(flag, "--fake-hcas"))
			cfg.fake_hcas = atoi(val);
		else if (!strcmp(flag, "--labels"))
			cfg.labels = val;
		else if (!strcmp(flag, "--state"))
			cfg.state_dir = val;
		else if (!strcmp(flag, "--sysfs-root"))
			cfg.sysfs_root = val;
		else if (!strcmp(flag, "--cgroup"))
			cfg.cgroup_parent = val;
		else if (!strcmp(flag, "--advertise"))
			cfg.advertise = val;
		else if (!strcmp(flag, "--nvml-lib"))
			cfg.nvml_lib = val;
		else if (!strcmp(flag, "--grace")) {
			char *end;
			long g = strtol(val, &end, 10);
			if (*end || g < 0) {
				fprintf(stderr, "drover agent: --grace: '%s', expected seconds\n", val);
				return DRV_EXIT_USAGE;
			}
			cfg.grace_ms = g * 1000;
		} else {
			fprintf(stderr, "drover agent: unknown flag %s\n", flag);
			usage(stderr);
			return DRV_EXIT_USAGE;
		}
	}
	if (!cfg.server_url || !*cfg.server_url) {
		fprintf(stderr, "drover agent: --server URL is required (or DROVER_SERVER)\n");
		return DRV_EXIT_USAGE;
	}
	if (!cfg.token || !*cfg.token) {
		fprintf(stderr, "drover agent: --token TOKEN is required: the cluster token from the "
			"server's config (cluster_token)\n");
		return DRV_EXIT_USAGE;
	}
	if (!cfg.name) {
		if (gethostname(name, sizeof(name) - 1) < 0)
			snprintf(name, sizeof(name), "node");
		name[strcspn(name, ".")] = '\0';
		cfg.name = name;
	}
	if (cfg.fake_gpus) {
		int n, m;
		if (drv_gpu_parse_fake_spec(cfg.fake_gpus, &n, &m, err, sizeof(err)) < 0) {
			fprintf(stderr, "drover agent: --fake-gpus: %s\n", err);
			return DRV_EXIT_USAGE;
		}
	}
	if (cfg.listen && strcmp(cfg.listen, "none") &&
	    drv_http_parse_addr(cfg.listen, host, sizeof(host), &port) < 0) {
		fprintf(stderr, "drover agent: --listen: '%s', expected ADDR:PORT such as "
			"0.0.0.0:9400\n", cfg.listen);
		return DRV_EXIT_USAGE;
	}
	if (cfg.labels && check_labels(cfg.labels) < 0)
		return DRV_EXIT_USAGE;

	/* few threads, little memory: one malloc arena per pair of threads is plenty */
	mallopt(M_ARENA_MAX, 2);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (drv_agent_start(&cfg, &a, err, sizeof(err)) < 0) {
		fprintf(stderr, "drover agent: %s\n", err);
		return DRV_EXIT_FAIL;
	}
	sigwait(&set, &sig);
	fprintf(stderr, "drover agent: %s: stopping tasks and leaving\n",
		sig == SIGINT ? "interrupted" : "terminated");
	drv_agent_stop(a);
	return DRV_EXIT_OK;
}
