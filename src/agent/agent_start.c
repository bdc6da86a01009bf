/*
 * agent_start.c: the node agent's entry points: drv_agent_start (the node's
 * GPUs, fabric, cgroups and address, the HTTP listener, then the two
 * threads) and drv_agent_stop (tasks stopped and reported, everything
 * freed; tasks left to their shims unless stop_tasks_on_exit). The
 * threads and what they own: agent_int.h.
 */
#include "drover/fsutil.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Wakes every thread waiting on a->cv and the supervisor in poll(). */
void agent_wake(struct drv_agent *a)
{
	uint64_t one = 1;
	ssize_t n = 0;

	pthread_cond_broadcast(&a->cv);
	if (a->wakefd >= 0)
		n = write(a->wakefd, &one, sizeof(one));
	(void)n;
}

static char *dupe(const char *s)
{
	return s ? drv_strdup(s) : NULL;
}

static void agent_free(struct drv_agent *a)
{
	size_t k;

	if (!a)
		return;
	drv_http_server_stop(a->http);
	drv_http_server_stop(a->mhttp);
	agent_close_job_map(a);
	agent_runtime_release(a);   /* before: it reads the cgroup setup */
	drv_cgroup_release(&a->cg);
	drv_gpu_close(&a->gpus);
	for (k = 0; k < a->ntasks; k++) {
		if (a->tasks[k]->proc.pidfd >= 0)
			close(a->tasks[k]->proc.pidfd);
		drv_free(a->tasks[k]);
	}
	drv_free(a->tasks);
	agent_journal_close(a);
	if (a->lock_fd >= 0) {
		/* a clean stop leaves an empty file: nobody is named as running */
		if (ftruncate(a->lock_fd, 0) != 0)
			drv_log(&a->log, "cannot empty %s/lock: %s", a->state_dir, strerror(errno));
		close(a->lock_fd);
	}
	drv_proto_sync_reply_release(&a->desired);
	drv_http_client_release(&a->ctl);
	drv_proto_seen_free(a->seen);
	drv_free(a->server);
	drv_free(a->tls_ca);
	drv_free(a->token);
	drv_free(a->name);
	drv_free(a->listen);
	drv_free(a->labels);
	drv_free(a->state_dir);
	drv_free(a->nvml_lib);
	drv_free(a->advertise_cfg);
	drv_free(a->sysfs_root);
	drv_free(a->cgroup_parent);
	drv_free(a->fake_gpus);
	drv_free(a->tls_cert);
	drv_free(a->tls_key);
	drv_free(a->metrics_listen);
	drv_free(a->hpc_dir);
	agent_hooks_release(a);
	drv_free(a->prolog);
	drv_free(a->epilog);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	if (a->wakefd >= 0)
		close(a->wakefd);
	drv_free(a);
}

/* A new agent holding copies of cfg; nothing opened yet but its eventfd. */
static struct drv_agent *agent_new(const struct drv_agent_config *cfg)
{
	struct drv_agent *a = drv_calloc(1, sizeof(*a));

	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	a->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	drv_http_client_init(&a->ctl, cfg->server_url, cfg->token);
	drv_http_client_set_ca(&a->ctl, cfg->tls_ca);
	a->tls_cert = dupe(cfg->tls_cert);
	a->tls_ca = dupe(cfg->tls_ca);
	a->tls_key = dupe(cfg->tls_key);
	a->seen = drv_proto_seen_new();
	a->server = dupe(cfg->server_url);
	a->token = dupe(cfg->token);
	a->name = dupe(cfg->name);
	a->listen = dupe(cfg->listen ? cfg->listen : "0.0.0.0:9400");
	a->labels = dupe(cfg->labels);
	a->nvml_lib = dupe(cfg->nvml_lib);
	a->advertise_cfg = dupe(cfg->advertise);
	a->sysfs_root = dupe(cfg->sysfs_root);
	a->cgroup_parent = dupe(cfg->cgroup_parent);
	a->fake_gpus = dupe(cfg->fake_gpus);
	a->metrics_listen = dupe(cfg->metrics_listen ? cfg->metrics_listen : "");
	a->hpc_dir = dupe(cfg->hpc_job_mapping_dir);
	a->prolog = dupe(cfg->prolog);
	a->epilog = dupe(cfg->epilog);
	a->hook_timeout_ms = (cfg->hook_timeout_s > 0 ? cfg->hook_timeout_s : 300) * 1000;
	a->gpu_metrics = !cfg->no_gpu_metrics;
	a->fake_hcas = cfg->fake_hcas;
	a->fake_fallback = cfg->fake_fallback;
	a->log = (struct drv_log){ NULL, "drover agent", cfg->quiet ? DRV_LOG_QUIET : 0 };
	a->run_as_self = cfg->run_as_self;
	a->shim_exe = cfg->shim_exe;
	a->stop_tasks_on_exit = cfg->stop_tasks_on_exit;
	a->journal_fd = -1;
	a->lock_fd = -1;
	a->grace_ms = cfg->grace_ms > 0 ? cfg->grace_ms : 10000;
	a->task_retention_ms = (cfg->task_retention_s > 0 ? cfg->task_retention_s : 7 * 86400) * 1000;
	a->heartbeat_s = 5;
	if (gethostname(a->hostname, sizeof(a->hostname) - 1) < 0)
		snprintf(a->hostname, sizeof(a->hostname), "%s", a->name);
	return a;
}

/*
 * STATE: --state, else $XDG_STATE_HOME/drover/agent-NAME (or ~/.local/state),
 * and STATE/tasks: the agent's alone (0700), since they hold every task's
 * logs and the list of what runs. A root agent that starts tasks as their
 * users hands each task its own directory (0700, chowned), so these two
 * are 0711 there: the users pass through to their own, and list nothing.
 */
static int open_state_dir(struct drv_agent *a, const char *dir, char *err, size_t errsz)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	mode_t mode = a->run_as_self || geteuid() != 0 ? 0700 : 0711;
	char d[PATH_MAX], tasks[PATH_MAX + 8];

	if (dir)
		snprintf(d, sizeof(d), "%s", dir);
	else if (xdg && *xdg)
		snprintf(d, sizeof(d), "%s/drover/agent-%s", xdg, a->name);
	else
		snprintf(d, sizeof(d), "%s/.local/state/drover/agent-%s", home ? home : "/tmp",
			 a->name);
	a->state_dir = drv_strdup(d);
	snprintf(a->lease_path, sizeof(a->lease_path), "%s/lease", d);
	snprintf(tasks, sizeof(tasks), "%s/tasks", d);
	if (drv_mkdir_p(a->state_dir, mode) < 0 || drv_mkdir_p(tasks, mode) < 0) {
		snprintf(err, errsz, "cannot create the agent's state directory %s: %s", a->state_dir,
			 strerror(errno));
		return DRV_EIO;
	}
	return 0;
}

/*
 * STATE/slurm-bin (0755): links named as Slurm's commands to the drover
 * this agent runs, which agent_tasks.c puts first in the PATH of a Slurm
 * job's host tasks, so that a batch script's `srun` is drover's srun
 * whether or not the node has drover's links installed, and never a real
 * Slurm's /usr/bin/srun, which knows nothing of drover's allocation. A
 * failure is logged, and such tasks keep their PATH.
 */
void agent_slurm_bin(struct drv_agent *a)
{
	static const char *const names[] = { "srun", "salloc", "sbatch", "squeue", "sacct",
					     "scancel", "sinfo", "scontrol" };
	char exe[PATH_MAX], link[PATH_MAX + 16], cur[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	a->slurm_bin[0] = '\0';
	if (n <= 0) {
		drv_log(&a->log, "cannot read /proc/self/exe: %s; Slurm jobs' PATH is left as it is",
			strerror(errno));
		return;
	}
	exe[n] = '\0';
	snprintf(link, sizeof(link), "%s/slurm-bin", a->state_dir);
	if (drv_mkdir_p(link, 0755) < 0 || chmod(link, 0755) < 0) {
		drv_log(&a->log, "cannot create %s: %s; Slurm jobs' PATH is left as it is", link,
			strerror(errno));
		return;
	}
	for (size_t i = 0; i < DRV_ARRAY_SIZE(names); i++) {
		snprintf(link, sizeof(link), "%s/slurm-bin/%s", a->state_dir, names[i]);
		n = readlink(link, cur, sizeof(cur) - 1);
		if (n > 0 && (size_t)n == strlen(exe) && !memcmp(cur, exe, (size_t)n))
			continue;
		if ((unlink(link) < 0 && errno != ENOENT) || symlink(exe, link) < 0) {
			drv_log(&a->log, "cannot link %s to %s: %s; Slurm jobs' PATH is left as it is",
				link, exe, strerror(errno));
			return;
		}
	}
	snprintf(a->slurm_bin, sizeof(a->slurm_bin), "%s/slurm-bin", a->state_dir);
}

/*
 * One agent per state directory: two would both adopt the journal's tasks,
 * report each end twice and rewrite one journal. The first holds an
 * exclusive flock(2) on STATE/lock (0600, close-on-exec: no task or shim
 * inherits it) while it runs, the file saying "pid PID" and "node NAME";
 * a second refuses, naming the holder (DRV_ESTATE). The lock, not the
 * file, decides: one killed with SIGKILL leaves the file, not the lock.
 */
static int lock_state_dir(struct drv_agent *a, char *err, size_t errsz)
{
	char path[PATH_MAX + 8], buf[400], node[300] = "";
	long pid = 0;
	ssize_t n = 0;
	int fd, e;

	snprintf(path, sizeof(path), "%s/lock", a->state_dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errsz, "cannot open %s: %s", path, strerror(errno));
		return DRV_EIO;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		n = snprintf(buf, sizeof(buf), "pid %ld\nnode %.300s\n", (long)getpid(), a->name);
		/* new content first, then the cut: a reader never sees it empty */
		if (pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n) != 0)
			drv_log(&a->log, "cannot write %s: %s", path, strerror(errno));
		a->lock_fd = fd;
		return 0;
	}
	e = errno;
	/* the holder may be between its flock and its write: a second's retries */
	for (int i = 0; e == EWOULDBLOCK && i < 100 && n <= 0; i++) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (e != EWOULDBLOCK)
		snprintf(err, errsz, "cannot lock %s: %s", path, strerror(e));
	else if (sscanf(buf, "pid %ld node %299s", &pid, node) >= 1 && pid > 0)
		snprintf(err, errsz, "state directory %s is in use by another agent, pid %ld "
			 "(node %s); stop it first, or give this one another --state", a->state_dir,
			 pid, node[0] ? node : "not yet written");
	else
		snprintf(err, errsz, "state directory %s is in use by another agent (see %s); "
			 "stop it first, or give this one another --state", a->state_dir, path);
	return e == EWOULDBLOCK ? DRV_ESTATE : DRV_EIO;
}

/* The GPUs: --fake-gpus, else NVML, else (with fake_fallback) 8 fake H100s. */
static int open_gpus(struct drv_agent *a, char *err, size_t errsz)
{
	char nverr[512];
	int rc;

	a->backend = "fake";
	if (a->fake_gpus)
		return drv_gpu_open(&a->gpus, "fake", a->fake_gpus, err, errsz);
	rc = drv_gpu_open(&a->gpus, "nvml", a->nvml_lib, nverr, sizeof(nverr));
	if (rc == 0) {
		a->backend = "nvml";
		return 0;
	}
	if (!a->fake_fallback) {
		snprintf(err, errsz, "%s; no GPUs to offer: give --fake-gpus 8xH100 to run "
			 "with simulated GPUs", nverr);
		return rc;
	}
	drv_log(&a->log, "%s; simulating 8 H100 GPUs instead (as --fake-gpus 8xH100 would)", nverr);
	return drv_gpu_open(&a->gpus, "fake", "8xH100", err, errsz);
}

/* The fabric, the cgroup tree, the address; tasks a killed agent left. */
static void open_node(struct drv_agent *a)
{
	struct passwd *me = getpwuid(geteuid());

	if (a->fake_hcas > 0)
		drv_hca_fake(&a->hcas, a->fake_hcas);
	else
		drv_hca_scan(&a->hcas, a->sysfs_root);
	drv_hca_active_list(&a->hcas, a->ib_list, sizeof(a->ib_list));
	drv_cgroup_setup(&a->cg, a->cgroup_parent);
	if (!a->cg.enabled)
		drv_log(&a->log, "%s", a->cg.why);
	else if (a->cg.version == 1)
		drv_log(&a->log, "task memory limits through the cgroup v1 memory controller (%s); "
			"task CPU limits need cgroup v2 and are not enforced", a->cg.base);
	agent_find_address(a);
	/* what an earlier agent started: adopted, or its end reported */
	a->lease_deadline = drv_lease_read(a->lease_path);
	agent_endpoints_load(a);
	if (agent_journal_open(a) < 0)
		drv_log(&a->log, "cannot open the journal in %s: %s; tasks cannot start", a->state_dir,
			strerror(errno));
	if (a->run_as_self)
		drv_log(&a->log, "every task runs as %s (uid %d), whoever submitted it",
			me ? me->pw_name : "?", (int)geteuid());
	else if (geteuid() != 0)
		drv_log(&a->log, "not root: every task runs as %s (uid %d)", me ? me->pw_name : "?",
			(int)geteuid());
}

/*
 * One listener on addr (the flag that set it, for messages) serving
 * routes; its URL as peers reach it into url: the listen host, or our
 * address when listening on every interface. A taken port is a setting
 * that cannot work on this node: DRV_EEXIST with a sentence that says so.
 */
static int listen_on(struct drv_agent *a, const char *flag, const char *addr,
		     const struct drv_http_route *routes, struct drv_http_server **out,
		     char *url, size_t urlsz, char *err, size_t errsz)
{
	char host[256];
	int port, rc;
	struct drv_http_server_opts ho = { a->tls_cert, a->tls_key };
	const char *scheme;

	rc = drv_http_server_start_opts(addr, &ho, routes, NULL, a, out, err, errsz);
	if (rc == DRV_EEXIST)
		snprintf(err, errsz, "%s %s: the port is taken by another process (dcgm-exporter "
			 "uses 9400 by default); give %s another port, or run beside dcgm-exporter "
			 "with --metrics-listen none or --gpu-metrics off", flag, addr, flag);
	if (rc < 0)
		return rc;
	scheme = drv_http_server_tls(*out) ? "https" : "http";
	if (!drv_http_server_tls(*out) && !drv_http_addr_loopback(addr) &&
	    routes != agent_metrics_routes)
		drv_log(&a->log, "warning: plain HTTP on %s, which is not loopback: task logs and "
			"the cluster token cross the network unencrypted; give --tls-cert and "
			"--tls-key", addr);
	if (drv_http_parse_addr(addr, host, sizeof(host), &port) < 0 || !host[0] ||
	    !strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
		snprintf(host, sizeof(host), "%s", a->address);
	port = drv_http_server_port(*out);
	if (strchr(host, ':'))
		snprintf(url, urlsz, "%s://[%s]:%d", scheme, host, port);
	else
		snprintf(url, urlsz, "%s://%s:%d", scheme, host, port);
	return 0;
}

/* The agent's own routes: --listen (agent_url: how the controller reaches
 * them), and /metrics apart when --metrics-listen says so. */
static int start_listener(struct drv_agent *a, char *err, size_t errsz)
{
	bool apart = a->metrics_listen[0] != '\0';
	int rc = 0;

	if (strcmp(a->listen, "none"))
		rc = listen_on(a, "--listen", a->listen,
			       apart ? agent_private_routes : agent_http_routes, &a->http,
			       a->agent_url, sizeof(a->agent_url), err, errsz);
	if (rc == 0 && apart && strcmp(a->metrics_listen, "none"))
		rc = listen_on(a, "--metrics-listen", a->metrics_listen, agent_metrics_routes,
			       &a->mhttp, a->metrics_url, sizeof(a->metrics_url), err, errsz);
	return rc;
}

static int start_threads(struct drv_agent *a, char *err, size_t errsz)
{
	if (pthread_create(&a->super, NULL, agent_super_main, a) != 0)
		goto fail;
	a->super_on = true;
	if (pthread_create(&a->syncer, NULL, agent_sync_main, a) != 0)
		goto fail;
	a->syncer_on = true;
	return 0;
fail:
	snprintf(err, errsz, "cannot start the agent's thread");
	return DRV_EIO;
}

int drv_agent_start(const struct drv_agent_config *cfg, struct drv_agent **out, char *err,
		    size_t errsz)
{
	struct drv_agent *a;
	int rc;

	*out = NULL;
	if (!cfg->server_url || !cfg->name || !*cfg->name || !cfg->token) {
		snprintf(err, errsz, "the agent needs a server URL, a token and a node name");
		return DRV_EINVAL;
	}
	a = agent_new(cfg);
	a->proto = drv_proto_speaks(err, errsz);
	rc = a->proto < 0 ? a->proto : open_state_dir(a, cfg->state_dir, err, errsz);
	if (rc == 0)
		rc = lock_state_dir(a, err, errsz);
	if (rc == 0)
		rc = open_gpus(a, err, errsz);
	if (rc < 0)
		goto fail;
	open_node(a);
	agent_slurm_bin(a);
	rc = agent_runtime_setup(a, cfg, err, errsz);
	if (rc == 0)
		agent_containers_adopt(a);
	if (rc == 0)
		rc = agent_open_job_map(a, err, errsz);
	if (rc == 0)
		rc = start_listener(a, err, errsz);
	if (rc < 0)
		goto fail;
	if (a->proto != DRV_PROTO_VERSION)
		drv_log(&a->log, "speaks agent protocol %d (DROVER_PROTO_VERSION; this build: %d)",
			a->proto, DRV_PROTO_VERSION);
	drv_log(&a->log, "node %s: %d GPUs (%s%s%s), %d HCAs%s%s, address %s%s%s%s%s", a->name,
		a->gpus.ngpus, a->backend, a->gpus.ngpus ? ", " : "",
		a->gpus.ngpus ? a->gpus.gpus[0].name : "", a->hcas.nhcas,
		a->ib_list[0] ? " active: " : "", a->ib_list, a->address,
		!a->agent_url[0] ? "" : a->metrics_listen[0] ? ", logs at " : ", metrics and logs at ",
		a->agent_url, a->metrics_url[0] ? ", metrics at " : "", a->metrics_url);
	rc = start_threads(a, err, errsz);
	if (rc < 0)
		goto fail;
	*out = a;
	return 0;
fail:
	drv_agent_stop(a);
	return rc;
}

void drv_agent_stop(struct drv_agent *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stopping = true;
	agent_kick_sync(a);
	agent_wake(a);
	pthread_mutex_unlock(&a->mu);
	if (a->syncer_on)
		pthread_join(a->syncer, NULL);
	if (a->super_on)
		pthread_join(a->super, NULL);
	drv_http_server_stop(a->http);
	drv_http_server_stop(a->mhttp);
	a->http = a->mhttp = NULL;
	/* the last reports: what the supervisor stopped (an interrupt the
	 * syncer left unspent fails the first try) */
	if (a->session && !a->need_register && a->syncer_on && agent_sync_once(a) == DRV_ECONN)
		agent_sync_once(a);
	agent_free(a);
}

int drv_agent_metrics_port(const struct drv_agent *a)
{
	if (a && a->mhttp)
		return drv_http_server_port(a->mhttp);
	return a && a->http && !a->metrics_listen[0] ? drv_http_server_port(a->http) : 0;
}

