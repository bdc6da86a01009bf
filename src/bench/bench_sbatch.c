/*
 * bench_sbatch.c: 'drover bench sbatch': jobs submitted a second by the
 * sbatch face, one process a job as tools call it, beside Slurm's sbatch
 * in the same run (issue 16's guard; tests/integration/slurm_side_by_side.sh
 * holds it).
 *
 *   drover bench sbatch [--json] [--jobs N] [--rounds R] [--no-slurm]
 *                       [--slurm-local PATH]
 *
 * It starts a `drover server` and one agent (2 fake H100s) from this
 * binary on loopback in a temporary directory, and, unless --no-slurm,
 * Debian's Slurm through slurm-local (`up 2 2`, holding the tests'
 * "slurm" lock; skipped, saying why, where it does not start). Then R
 * rounds (default 3), alternating, of N (default 60) processes each of
 * `sbatch -o /dev/null --wrap true`: drover-slurm (the light binary beside
 * this one), `drover sbatch` (this binary) and Slurm's /usr/bin/sbatch.
 * Each system's figure is its best round (the machine is shared), with
 * every round's and the CPU its processes took a job (getrusage of the
 * children: less noisy than the wall clock). The JSON says the load
 * average before and after.
 */
#include "drover/bench.h"
#include "drover/client.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "drover/options.h"
#include "bench_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "bench-sbatch-admin"
#define CLUSTER_TOKEN "bench-sbatch-cluster"

struct sys {
	const char *name;
	char path[4096];
	bool on;
	double best, runs[16], cpu_ms;
	int failed;
	char why[4608];   /* when not measured */
};

static char self[4096], tmp[256];
static pid_t server_pid = -1, agent_pid = -1;

static void loadavg(char *buf, size_t n)
{
	char *s = NULL;
	size_t len = 0;

	snprintf(buf, n, "?");
	if (drv_file_read("/proc/loadavg", 4096, &s, &len) == 0) {
		char *sp = s;

		for (int k = 0; k < 3 && sp; k++)
			sp = strchr(sp + 1, ' ');
		snprintf(buf, n, "%.*s", sp ? (int)(sp - s) : (int)len, s);
		drv_free(s);
	}
}

static int start_drover(char *url, size_t urlsz)
{
	char cfg[512], state[512], log[512], listen[64], alisten[64], astate[512];
	struct drv_client_conf conf = { 0 };
	struct drv_client *c;
	int port = bench_free_port(), fd, up = 0;
	static const char text[] = "tokens:\n  - token: \"" TOKEN "\"\n    user: bench\n"
				   "    admin: true\ncluster_token: \"" CLUSTER_TOKEN "\"\n"
				   "allow_root_tasks: true\n";

	snprintf(cfg, sizeof(cfg), "%s/server.yaml", tmp);
	fd = open(cfg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, sizeof(text) - 1) != (ssize_t)sizeof(text) - 1) {
		fprintf(stderr, "drover bench sbatch: cannot write %s\n", cfg);
		return DRV_EIO;
	}
	close(fd);
	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(log, sizeof(log), "%s/server.log", tmp);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(url, urlsz, "http://%s", listen);
	{
		char *argv[] = { self, "server", "--listen", listen, "--state", state, "--config",
				 cfg, NULL };
		server_pid = bench_spawn(argv, log);
	}
	setenv("DROVER_AGENT_TOKEN", CLUSTER_TOKEN, 1);   /* inherited, never on argv */
	snprintf(alisten, sizeof(alisten), "127.0.0.1:%d", bench_free_port());
	snprintf(astate, sizeof(astate), "%s/agent", tmp);
	snprintf(log, sizeof(log), "%s/agent.log", tmp);
	{
		char *argv[] = { self, "agent", "--server", url, "--name", "bench-node",
				 "--listen", alisten, "--fake-gpus", "2xH100", "--run-as-self",
				 "--state", astate, NULL };
		agent_pid = bench_spawn(argv, log);
	}
	conf.server = url;
	conf.token = TOKEN;
	c = drv_client_new(&conf);
	for (double end = drv_mono_s() + 30; drv_mono_s() < end && !up;) {
		struct drv_client_reply r;
		char err[256];

		if (!drv_client_call(c, "GET", "/v1/nodes", NULL, NULL, 0, 1000, &r, err,
				     sizeof(err))) {
			up = r.status == 200 && r.json &&
			     json_array_size(json_object_get(r.json, "items")) > 0;
			drv_client_reply_release(&r);
		}
		if (!up)
			usleep(100 * 1000);
	}
	drv_client_free(c);
	if (!up) {
		fprintf(stderr, "drover bench sbatch: the server and its agent did not come up "
				"(logs in %s)\n", tmp);
		return DRV_EIO;
	}
	setenv("DROVER_SERVER", url, 1);
	setenv("DROVER_TOKEN", TOKEN, 1);
	return 0;
}

/* Slurm through slurm-local, under the tests' lock; false with why. */
static bool start_slurm(const char *sl, char *why, size_t n)
{
	char cmd[8192], dir[512], conf[600];
	int fd;

	if (access(sl, X_OK)) {
		snprintf(why, n, "no slurm-local at %s (--slurm-local PATH, DROVER_SLURM_LOCAL)", sl);
		return false;
	}
	if (access("/usr/bin/sbatch", X_OK) || access("/usr/sbin/slurmctld", X_OK)) {
		snprintf(why, n, "Debian's Slurm is not installed (slurmctld, slurm-client)");
		return false;
	}
	mkdir("/tmp/drover-test-locks", 01777);
	fd = open("/tmp/drover-test-locks/slurm.lock", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		  0666);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {   /* held while this process lives */
		snprintf(why, n, "cannot take /tmp/drover-test-locks/slurm.lock");
		return false;
	}
	snprintf(dir, sizeof(dir), "%s/slurm", tmp);
	setenv("SLURM_LOCAL_DIR", dir, 1);
	snprintf(cmd, sizeof(cmd), "timeout 150 '%s' up 2 2 >'%s/slurm-up.log' 2>&1", sl, tmp);
	if (system(cmd) != 0) {
		snprintf(why, n, "slurm-local did not start (log %s/slurm-up.log)", tmp);
		return false;
	}
	snprintf(conf, sizeof(conf), "%s/slurm.conf", dir);
	setenv("SLURM_CONF", conf, 1);
	return true;
}

static void stop_slurm(const char *sl)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "timeout 30 '%s' down >/dev/null 2>&1", sl);
	if (system(cmd)) {
		/* said by the next start's log; nothing to do here */
	}
}

/* One round: n processes of s, one after another; jobs a second. */
static double round_of(struct sys *s, int n, const char *log)
{
	struct rusage a, b;
	double t0 = drv_mono_s(), dt;

	getrusage(RUSAGE_CHILDREN, &a);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int st = 0;

		if (pid == 0) {
			int out = open("/dev/null", O_WRONLY), err = open(log, O_WRONLY | O_CREAT |
									  O_APPEND, 0644);
			char *argv[] = { s->path, "sbatch", "-o", "/dev/null", "--wrap", "true",
					 NULL };

			dup2(out, 1);
			dup2(err, 2);
			/* drover-slurm and drover take the face as their first word */
			execv(s->path, strcmp(s->name, "slurm") ? argv : argv + 1);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			s->failed++;
	}
	dt = drv_mono_s() - t0;
	getrusage(RUSAGE_CHILDREN, &b);
	s->cpu_ms += ((b.ru_utime.tv_sec - a.ru_utime.tv_sec) + (b.ru_stime.tv_sec - a.ru_stime.tv_sec)) *
			     1e3 + ((b.ru_utime.tv_usec - a.ru_utime.tv_usec) +
				    (b.ru_stime.tv_usec - a.ru_stime.tv_usec)) / 1e3;
	return dt > 0 ? n / dt : 0;
}

static void cleanup(void)
{
	if (agent_pid > 0)
		kill(-agent_pid, SIGTERM), waitpid(agent_pid, NULL, 0);
	if (server_pid > 0)
		kill(-server_pid, SIGTERM), waitpid(server_pid, NULL, 0);
	agent_pid = server_pid = -1;
}

int drv_bench_sbatch(int argc, char **argv)
{
	int jobs = 60, rounds = 3, rc = 0;
	bool json = true, no_slurm = false;
	const char *sl = NULL;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &json, "print JSON (always)"),
		DRV_OPT_INT(0, "jobs", &jobs, 1, 100000, "N", "sbatch processes a round (default 60)"),
		DRV_OPT_INT(0, "rounds", &rounds, 1, 16, "R", "rounds a system (default 3)"),
		DRV_OPT_FLAG(0, "no-slurm", &no_slurm, "drover's faces only"),
		DRV_OPT_STRING(0, "slurm-local", &sl, "PATH",
			       "Slurm's starter (default $DROVER_SLURM_LOCAL, else "
			       "../shared/bench/slurm/slurm-local beside this binary)"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench sbatch",
		.usage = "drover bench sbatch [--json] [--jobs N] [--rounds R] [--no-slurm] "
			 "[--slurm-local PATH]",
		.about = "Jobs a second of sbatch, one process a job: drover-slurm, drover and "
			 "Slurm's sbatch side by side.",
		.options = table,
	};
	struct sys sys[3] = { { .name = "drover_slurm" }, { .name = "drover" },
			      { .name = "slurm" } };
	char url[128], load0[64], load1[64], log[512], slpath[4600], dir[4096];
	bool slurm = false;
	json_t *out, *systems;
	ssize_t k;
	int n = drv_opts_parse(&usage, argc, argv);

	if (n < 0)
		return drv_opts_exit(n);
	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k <= 0) {
		fprintf(stderr, "drover bench sbatch: cannot read /proc/self/exe\n");
		return DRV_EXIT_FAIL;
	}
	self[k] = '\0';
	snprintf(dir, sizeof(dir), "%s", self);
	snprintf(sys[0].path, sizeof(sys[0].path), "%s/drover-slurm", dirname(dir));
	snprintf(sys[1].path, sizeof(sys[1].path), "%s", self);
	snprintf(sys[2].path, sizeof(sys[2].path), "/usr/bin/sbatch");
	sys[0].on = access(sys[0].path, X_OK) == 0;
	if (!sys[0].on)
		snprintf(sys[0].why, sizeof(sys[0].why), "no drover-slurm beside %s", self);
	sys[1].on = true;
	snprintf(tmp, sizeof(tmp), "/tmp/drover-bench-sbatch.XXXXXX");
	if (!mkdtemp(tmp)) {
		fprintf(stderr, "drover bench sbatch: mkdtemp: %s\n", strerror(errno));
		return DRV_EXIT_FAIL;
	}
	snprintf(log, sizeof(log), "%s/sbatch.log", tmp);
	loadavg(load0, sizeof(load0));
	if (start_drover(url, sizeof(url))) {
		rc = DRV_EXIT_FAIL;
		goto out;
	}
	if (!sl)
		sl = getenv("DROVER_SLURM_LOCAL");
	if (!sl) {
		snprintf(slpath, sizeof(slpath), "%s/../shared/bench/slurm/slurm-local", dir);
		sl = slpath;
	}
	if (no_slurm)
		snprintf(sys[2].why, sizeof(sys[2].why), "--no-slurm");
	else
		slurm = sys[2].on = start_slurm(sl, sys[2].why, sizeof(sys[2].why));
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < 3; i++) {
			if (!sys[i].on)
				continue;
			sys[i].runs[r] = round_of(&sys[i], jobs, log);
			sys[i].best = DRV_MAX(sys[i].best, sys[i].runs[r]);
		}
	loadavg(load1, sizeof(load1));
	out = json_pack("{s:s,s:i,s:i,s:s,s:s}", "benchmark", "sbatch", "jobs_per_round", jobs,
			"rounds", rounds, "loadavg_before", load0, "loadavg_after", load1);
	systems = json_object();
	for (int i = 0; i < 3; i++) {
		json_t *o, *runs;

		if (!sys[i].on) {
			json_object_set_new(systems, sys[i].name, json_pack("{s:s}", "skipped",
									     sys[i].why));
			continue;
		}
		runs = json_array();
		for (int r = 0; r < rounds; r++)
			json_array_append_new(runs, json_real((double)(long)(sys[i].runs[r] * 10) / 10));
		o = json_pack("{s:f,s:o,s:f,s:i,s:s}", "jobs_per_s",
			      (double)(long)(sys[i].best * 10) / 10, "rounds", runs, "cpu_ms_per_job",
			      (double)(long)(sys[i].cpu_ms / (jobs * rounds) * 10) / 10, "failed",
			      sys[i].failed, "binary", sys[i].path);
		json_object_set_new(systems, sys[i].name, o);
		if (sys[i].failed)
			rc = DRV_EXIT_FAIL;
	}
	json_object_set_new(out, "systems", systems);
	if (sys[0].on && sys[2].on && sys[2].best > 0)
		json_object_set_new(out, "drover_slurm_over_slurm",
				    json_real((double)(long)(sys[0].best / sys[2].best * 100) / 100));
	json_dumpf(out, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	putchar('\n');
	json_decref(out);
	if (rc)
		fprintf(stderr, "drover bench sbatch: some submits failed (stderr in %s)\n", log);
out:
	cleanup();
	if (slurm)
		stop_slurm(sl);
	if (!rc)
		bench_remove_tree(tmp);
	return rc;
}
