/*
 * agent.c: the node agent's protocol loop (docs/api.md, "Agent protocol")
 * and its HTTP endpoints.
 *
 * Threads:
 *   - the syncer: everything said to the controller, on one kept-alive
 *     connection (messages: include/drover/proto.h). It registers (again
 *     after any 409) and keeps one sync exchange going: task states,
 *     reports and GPU health up; the level-triggered task set down when
 *     it changed, or after the heartbeat interval. It stores the set and
 *     wakes the supervisor. A sync that waits at the controller is cut
 *     short (drv_http_client_interrupt) when a report is owed.
 *   - the supervisor: everything that touches processes. It applies the
 *     desired task set (start what is new, stop what is told to stop, kill
 *     what is absent: fencing by (task_id, epoch)), reaps tasks and
 *     enforces time limits. It sleeps in poll() on the running tasks'
 *     pidfds and an eventfd the other threads write to, so an exit is
 *     reaped and reported as it happens, not at a tick.
 *   - the HTTP server's threads (src/http): /metrics, /healthz and task
 *     logs (GET /v1/tasks/ID/logs with the cluster token).
 * One mutex guards the task table, the GPU set and the desired list.
 *
 * A (task_id, epoch) pair is started at most once: the record of a
 * finished task stays while the controller's list still names it.
 */
#include "drover/agent.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "drover/gpu.h"
#include "drover/http.h"
#include "drover/log.h"
#include "drover/metrics.h"
#include "drover/model.h"
#include "drover/proto.h"
#include "agent_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <netdb.h>
#include <net/if.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#define DRV_AGENT_VERSION "0.1.0"

enum tstate { T_RUNNING, T_EXITED, T_FAILED };

struct task {
	char id[64];
	int64_t epoch;
	char job_id[32];
	int gpus[DRV_GPU_MAX];
	int ngpus;
	enum tstate state;
	struct drv_proc proc;
	bool rep_running;       /* a "running" report is owed */
	bool rep_end;           /* an "exited"/"failed" report is owed */
	bool listed;            /* named by the latest assignment list */
	int64_t deadline_ms;    /* time limit; 0 none */
	int64_t grace_ms;       /* the job's SIGTERM-to-SIGKILL grace (grace_s) */
	unsigned long long starttime; /* of its main process (/proc/PID/stat), to know it again */
	char reason[512];       /* why it failed to start, or why it was stopped */
	char dir[PATH_MAX];
};

struct drv_agent {
	/* configuration (owned copies) */
	char *server, *token, *name, *listen, *labels, *state_dir, *nvml_lib, *advertise_cfg;
	char *sysfs_root, *cgroup_parent, *fake_gpus;
	int fake_hcas;
	bool fake_fallback, run_as_self;
	struct drv_log log;      /* "drover agent: ..."; quiet drops it */
	int64_t grace_ms;

	/* the node */
	struct drv_gpu_set gpus;
	const char *backend;
	struct drv_hca_set hcas;
	char ib_list[256];
	struct drv_cgroup cg;
	char address[128];
	char ifname[IF_NAMESIZE + 1];
	char agent_url[256];
	char hostname[256];

	/* shared state */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int wakefd;             /* eventfd: wakes the supervisor out of poll() */
	bool running_dirty;     /* STATE/running is behind the task table */
	bool stopping;
	struct task **tasks;
	size_t ntasks, tcap;
	struct drv_proto_sync_reply desired; /* the controller's latest task set */
	bool have_desired;
	bool desired_new;
	int64_t session;        /* 0: not registered */
	int64_t version;        /* of the task set applied */
	bool need_register;
	int heartbeat_s;
	struct drv_http_client ctl; /* the syncer's connection to the controller */
	bool sync_waiting;      /* the sync in flight waits at the controller */
	bool interrupted;       /* ... and was cut short (kick_sync) */
	struct drv_proto_seen *seen;

	struct drv_http_server *http;
	pthread_t syncer, super;
	bool syncer_on, super_on;
};

static void agent_free(struct drv_agent *a);

/* Wakes every thread waiting on a->cv and the supervisor in poll(). */
static void wake_all(struct drv_agent *a)
{
	uint64_t one = 1;
	ssize_t n = 0;

	pthread_cond_broadcast(&a->cv);
	if (a->wakefd >= 0)
		n = write(a->wakefd, &one, sizeof(one));
	(void)n;
}

/* --- small helpers --------------------------------------------------------- */

static int valid_task_id(const char *id)
{
	const char *p;

	if (!id || !*id || id[0] == '.' || strlen(id) >= 64)
		return 0;
	for (p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			return 0;
	return 1;
}

static char *dupe(const char *s)
{
	return s ? drv_strdup(s) : NULL;
}

/* --- tasks an earlier agent left running ------------------------------------ */

/* Field 22 of /proc/PID/stat: when the process started (clock ticks since
 * boot); 0 when it is gone. With the pid it names a process for good. */
static unsigned long long proc_starttime(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	for (i = 2; p && i < 22; i++) {
		p = strchr(p + 1, ' ');
	}
	if (p && sscanf(p + 1, "%llu", &v) != 1)
		v = 0;
	return v;
}

/*
 * STATE/running lists the tasks this agent runs ("TASK_ID EPOCH PID
 * STARTTIME CGROUP"), rewritten whenever that changes, so that an agent
 * that was killed and restarted can stop what its predecessor left
 * behind: it cannot supervise processes that are not its children, and
 * the controller has requeued them anyway. It is rewritten once per turn
 * of the supervisor, after the starts and exits of that turn and before
 * they are reported. Caller holds a->mu.
 */
static int put_running(FILE *f, void *arg)
{
	const struct drv_agent *a = arg;

	for (size_t k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];
		if (t->state == T_RUNNING)
			fprintf(f, "%s %lld %d %llu %s\n", t->id, (long long)t->epoch, (int)t->proc.pid,
				t->starttime, t->proc.cgroup[0] ? t->proc.cgroup : "-");
	}
	return 0;
}

static void save_running(struct drv_agent *a)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/running", a->state_dir);
	drv_file_write_atomic(path, 0666, put_running, a); /* best effort, as before */
}

static void kill_leftovers(struct drv_agent *a)
{
	char path[PATH_MAX], line[PATH_MAX + 200], id[64], cg[PATH_MAX];
	unsigned long long st;
	struct task *t;
	long long epoch;
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/running", a->state_dir);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %lld %d %llu %4095s", id, &epoch, &pid, &st, cg) != 5 ||
		    pid <= 1)
			continue;
		t = drv_calloc(1, sizeof(*t));
		snprintf(t->id, sizeof(t->id), "%s", id);
		t->epoch = epoch;
		t->proc.pid = pid;
		t->proc.exit_code = -1;
		t->rep_end = true;
		if (st && proc_starttime(pid) == st) {
			kill(-pid, SIGKILL);
			drv_log(&a->log, "killed task %s (epoch %lld, pid %d), left running by an earlier agent",
			      id, epoch, pid);
			t->state = T_EXITED;
			t->proc.state = DRV_PROC_EXITED;
			t->proc.signal = SIGKILL;
			snprintf(t->reason, sizeof(t->reason), "the agent restarted and cannot watch "
				 "a task it did not start; killed");
		} else {
			t->state = T_FAILED;
			snprintf(t->reason, sizeof(t->reason), "the task ended while its agent was "
				 "down; exit status unknown");
		}
		if (strcmp(cg, "-"))
			drv_cgroup_kill(cg);
		/* remembered, so this (task_id, epoch) is reported and never started again */
		DRV_GROW(a->tasks, a->ntasks + 1, a->tcap);
		a->tasks[a->ntasks++] = t;
	}
	fclose(f);
	unlink(path);
}

/* --- node facts ------------------------------------------------------------ */

/* host part of "http://host:port/…" into out */
static void url_host(const char *url, char *out, size_t outsz, char *port, size_t portsz)
{
	const char *p = strstr(url, "://");
	const char *end;

	p = p ? p + 3 : url;
	snprintf(port, portsz, "%s", strncmp(url, "https", 5) ? "80" : "443");
	if (*p == '[') {
		end = strchr(p, ']');
		if (!end)
			end = p + strlen(p);
		snprintf(out, outsz, "%.*s", (int)(end - p - 1), p + 1);
		p = *end ? end + 1 : end;
	} else {
		end = p + strcspn(p, ":/");
		snprintf(out, outsz, "%.*s", (int)(end - p), p);
		p = end;
	}
	if (*p == ':')
		snprintf(port, portsz, "%.*s", (int)strcspn(p + 1, "/"), p + 1);
}

/*
 * The address peers reach this node on: the local address of a (UDP,
 * nothing sent) route to the controller; and the interface that holds it,
 * for NCCL_SOCKET_IFNAME.
 */
static void find_address(struct drv_agent *a)
{
	char host[256], port[16];
	struct addrinfo hints, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct ifaddrs *ifs = NULL, *i;
	int fd;

	if (a->advertise_cfg)
		snprintf(a->address, sizeof(a->address), "%s", a->advertise_cfg);
	if (!a->address[0]) {
		url_host(a->server, host, sizeof(host), port, sizeof(port));
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_DGRAM;
		if (getaddrinfo(host, port, &hints, &res) == 0 && res) {
			fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
			    getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
				getnameinfo((struct sockaddr *)&ss, sl, a->address, sizeof(a->address),
					    NULL, 0, NI_NUMERICHOST);
			if (fd >= 0)
				close(fd);
			freeaddrinfo(res);
		}
	}
	if (!a->address[0])
		snprintf(a->address, sizeof(a->address), "127.0.0.1");
	if (getifaddrs(&ifs) == 0) {
		for (i = ifs; i; i = i->ifa_next) {
			char h[128];
			if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
					     i->ifa_addr->sa_family != AF_INET6))
				continue;
			if (getnameinfo(i->ifa_addr, i->ifa_addr->sa_family == AF_INET ?
					sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6),
					h, sizeof(h), NULL, 0, NI_NUMERICHOST) == 0 &&
			    !strcmp(h, a->address)) {
				snprintf(a->ifname, sizeof(a->ifname), "%s", i->ifa_name);
				break;
			}
		}
		freeifaddrs(ifs);
	}
}

static int64_t mem_mib(void)
{
	struct sysinfo si;

	if (sysinfo(&si) < 0)
		return 0;
	return (int64_t)((uint64_t)si.totalram * si.mem_unit >> 20);
}

/* --- the register message ---------------------------------------------------- */

/* A register message and the storage its strings live in. */
struct reg_msg {
	struct drv_proto_register m;
	char *labels;               /* a copy of --labels, cut in place */
	char (*cells)[16];          /* the gpu_matrix cells */
};

/* --labels "k=v,k2=v2" into the message's labels. */
static void reg_labels(struct drv_agent *a, struct reg_msg *r)
{
	char *save = NULL, *kv;
	size_t n = 1;

	if (!a->labels)
		return;
	for (const char *p = a->labels; *p; p++)
		n += *p == ',';
	r->labels = drv_strdup(a->labels);
	r->m.labels = drv_calloc(n, sizeof(*r->m.labels));
	for (kv = strtok_r(r->labels, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');

		if (!eq)
			continue;
		*eq = '\0';
		r->m.labels[r->m.nlabels++] = (struct drv_proto_kv){ kv, eq + 1 };
	}
}

/* The GPUs and their link matrix. */
static void reg_gpus(struct drv_agent *a, struct reg_msg *r)
{
	size_t n = (size_t)a->gpus.ngpus;

	r->m.gpus = drv_calloc(n, sizeof(*r->m.gpus));
	r->m.gpu_matrix = drv_calloc(n, sizeof(*r->m.gpu_matrix));
	r->m.matrix_len = drv_calloc(n, sizeof(*r->m.matrix_len));
	r->cells = drv_calloc(n * n, sizeof(*r->cells));
	for (size_t i = 0; i < n; i++) {
		const struct drv_gpu_info *g = &a->gpus.gpus[i];
		const char **row = drv_calloc(n, sizeof(*row));

		r->m.gpus[i] = (struct drv_proto_gpu){ .index = (int64_t)i, .uuid = g->uuid,
						       .model = g->name,
						       .memory_mib = g->mem_total_mib,
						       .pci_bus_id = g->pci_bus_id };
		for (size_t j = 0; j < n; j++)
			row[j] = drv_gpu_link_name(a->gpus.link[i][j], a->gpus.nvlinks[i][j],
						   r->cells[i * n + j], sizeof(r->cells[0]));
		r->m.gpu_matrix[i] = row;
		r->m.matrix_len[i] = n;
	}
	r->m.ngpus = r->m.nmatrix = n;
}

/* The HCAs and the GPUs nearest to each. */
static void reg_nics(struct drv_agent *a, struct reg_msg *r)
{
	r->m.nics = drv_calloc((size_t)a->hcas.nhcas, sizeof(*r->m.nics));
	for (int i = 0; i < a->hcas.nhcas; i++) {
		const struct drv_hca *h = &a->hcas.hcas[i];
		struct drv_proto_nic *x = &r->m.nics[r->m.nnics++];

		x->name = h->name;
		x->link_layer = h->nports ? h->ports[0].link_layer : "";
		x->state = h->nports ? h->ports[0].state : "";
		x->rate_gbps = h->nports ? h->ports[0].rate_gbps : 0;
		x->near_gpus = drv_calloc((size_t)a->gpus.ngpus, sizeof(*x->near_gpus));
		for (int j = 0; j < a->gpus.ngpus; j++)
			if (drv_hca_nearest(&a->hcas, &a->gpus, j) == i)
				x->near_gpus[x->nnear++] = j;
	}
}

/* The register message: inventory and the tasks running now. Strings are
 * borrowed from a; free with reg_msg_free. Caller holds a->mu. */
static void reg_msg(struct drv_agent *a, struct reg_msg *r)
{
	memset(r, 0, sizeof(*r));
	drv_proto_register_init(&r->m);
	r->m.name = a->name;
	r->m.hostname = a->hostname;
	r->m.address = a->address;
	r->m.agent_url = a->agent_url[0] ? a->agent_url : NULL;
	r->m.version = DRV_AGENT_VERSION;
	r->m.backend = a->backend;
	r->m.cpu_milli = sysconf(_SC_NPROCESSORS_ONLN) * 1000;
	r->m.mem_mib = mem_mib();
	reg_labels(a, r);
	reg_gpus(a, r);
	reg_nics(a, r);
	r->m.running = drv_calloc(a->ntasks, sizeof(*r->m.running));
	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		if (t->state == T_RUNNING)
			r->m.running[r->m.nrunning++] = (struct drv_proto_ref){
				.task_id = t->id, .epoch = t->epoch, .pid = t->proc.pid };
	}
}

static void reg_msg_free(struct reg_msg *r)
{
	drv_proto_register_release(&r->m);
	drv_free(r->labels);
	drv_free(r->cells);
}

/* The register message as JSON. Caller holds a->mu. */
static json_t *register_body(struct drv_agent *a)
{
	struct reg_msg r;
	json_t *o;

	reg_msg(a, &r);
	o = drv_proto_register_encode(&r.m);
	reg_msg_free(&r);
	return o;
}

/* --- tasks ----------------------------------------------------------------- */

static struct task *find_task(struct drv_agent *a, const char *id, int64_t epoch)
{
	size_t k;

	for (k = 0; k < a->ntasks; k++)
		if (!strcmp(a->tasks[k]->id, id) && (epoch < 0 || a->tasks[k]->epoch == epoch))
			return a->tasks[k];
	return NULL;
}

/* Marks t's GPUs busy, or frees them; a GPU another running task shares
 * (fractional GPUs) keeps that task's job. Caller holds a->mu. */
static void mark_gpus(struct drv_agent *a, struct task *t, bool busy)
{
	int64_t now = drv_mono_ms();
	size_t i;
	int k, q;

	for (k = 0; k < t->ngpus; k++) {
		const char *job = busy ? t->job_id : NULL;
		for (i = 0; !job && i < a->ntasks; i++) {
			struct task *o = a->tasks[i];
			if (o == t || o->state != T_RUNNING)
				continue;
			for (q = 0; q < o->ngpus; q++)
				if (o->gpus[q] == t->gpus[k])
					job = o->job_id;
		}
		drv_gpu_set_use(&a->gpus, t->gpus[k], job, now);
	}
}

static void fail_task(struct task *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_task(struct task *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->reason, sizeof(t->reason), fmt, ap);
	va_end(ap);
	t->state = T_FAILED;
	t->rep_end = true;
}

static void strv_free(char **v)
{
	char **p;

	for (p = v; p && *p; p++)
		drv_free(*p);
	drv_free(v);
}

/* A new record for the task j describes, in the table. Caller holds a->mu. */
static struct task *task_add(struct drv_agent *a, const struct drv_proto_task *j)
{
	struct task *t = drv_calloc(1, sizeof(*t));

	t->proc.pidfd = -1;
	snprintf(t->id, sizeof(t->id), "%s", j->task_id);
	t->epoch = j->epoch;
	snprintf(t->job_id, sizeof(t->job_id), "%lld", (long long)j->job_id);
	t->listed = true;
	DRV_GROW(a->tasks, a->ntasks + 1, a->tcap);
	a->tasks[a->ntasks++] = t;
	return t;
}

/* The task's GPUs, checked against the node's; -1 after failing it. */
static int task_gpus(struct drv_agent *a, struct task *t, const struct drv_proto_task *j,
		     struct drv_task_spec *s)
{
	for (size_t i = 0; i < j->ngpus && t->ngpus < DRV_GPU_MAX; i++) {
		int64_t g = j->gpus[i];

		if (g < 0 || g >= a->gpus.ngpus) {
			fail_task(t, "GPU %lld is not on node %s (it has %d)", (long long)g, a->name,
				  a->gpus.ngpus);
			return -1;
		}
		t->gpus[t->ngpus] = (int)g;
		s->gpus[t->ngpus++] = (int)g;
	}
	s->ngpus = t->ngpus;
	return 0;
}

/* Its directory, and something to run; -1 after failing it. */
static int task_dir_and_command(struct drv_agent *a, struct task *t,
				const struct drv_proto_task *j)
{
	snprintf(t->dir, sizeof(t->dir), "%s/tasks/%s", a->state_dir, t->id);
	if (drv_mkdir_p(t->dir, 0755) < 0) {
		fail_task(t, "cannot create %s: %s", t->dir, strerror(errno));
		return -1;
	}
	if (!j->nargv && !j->script) {
		fail_task(t, "container \"%s\" names no command; runtime host runs only a given "
			  "command (image %s)", j->container ? j->container : "",
			  j->image ? j->image : "none");
		return -1;
	}
	return 0;
}

/* Who a task runs as: the storage getpwnam_r and getgrouplist fill. */
struct run_as {
	struct passwd pw;
	char buf[4096];
	gid_t groups[256];
};

/* The job's user when the agent is root (and not --run-as-self); -1 after
 * failing the task. */
static int task_user(struct drv_agent *a, struct task *t, const char *user, struct run_as *ra,
		     struct drv_task_spec *s)
{
	struct passwd *pwp = NULL;
	int ng = (int)DRV_ARRAY_SIZE(ra->groups);

	if (a->run_as_self || geteuid() != 0 || !user || !*user || !strcmp(user, "root"))
		return 0;
	if (getpwnam_r(user, &ra->pw, ra->buf, sizeof(ra->buf), &pwp) != 0 || !pwp) {
		fail_task(t, "user %s does not exist on node %s", user, a->name);
		return -1;
	}
	if (getgrouplist(user, ra->pw.pw_gid, ra->groups, &ng) < 0)
		ng = 0;
	s->set_user = true;
	s->uid = ra->pw.pw_uid;
	s->gid = ra->pw.pw_gid;
	s->groups = ra->groups;
	s->ngroups = ng;
	s->user = user;
	s->home = ra->pw.pw_dir;
	if (chown(t->dir, ra->pw.pw_uid, ra->pw.pw_gid) < 0)
		drv_log(&a->log, "task %s: cannot hand %s to %s: %s", t->id, t->dir, user, strerror(errno));
	return 0;
}

/* argv, NULL-terminated, borrowing j's strings; free the array only. */
static char **task_argv(const struct drv_proto_task *j)
{
	char **v = drv_calloc(j->nargv + 1, sizeof(*v));

	for (size_t i = 0; i < j->nargv; i++)
		v[i] = (char *)j->argv[i];
	return v;
}

/* The job's env as "K=V" strings, NULL-terminated; free with strv_free. */
static char **task_env(const struct drv_proto_task *j)
{
	char **v = drv_calloc(j->nenv + 1, sizeof(*v));

	for (size_t i = 0; i < j->nenv; i++) {
		size_t len = strlen(j->env[i].name) + strlen(j->env[i].value) + 2;

		v[i] = drv_malloc(len);
		snprintf(v[i], len, "%s=%s", j->env[i].name, j->env[i].value);
	}
	return v;
}

/* Each rank's node address, rank order; NULL when the gang is unknown. */
static const char **task_rank_addrs(const struct drv_proto_task *j)
{
	const char **v;

	if (!j->npeers || j->world_size <= 0 || j->world_size > 65536)
		return NULL;
	v = drv_calloc((size_t)j->world_size, sizeof(*v));
	for (size_t i = 0; i < j->npeers; i++)
		if (j->peers[i].rank >= 0 && j->peers[i].rank < j->world_size)
			v[j->peers[i].rank] = j->peers[i].address;
	return v;
}

/* The launch spec's placement and gang fields from j. */
static void task_spec(struct drv_agent *a, struct task *t, const struct drv_proto_task *j,
		      struct drv_task_spec *s)
{
	s->job_id = t->job_id;
	s->task_id = t->id;
	s->script = j->script;
	s->workdir = j->workdir;
	s->log_dir = t->dir;
	s->node_name = a->name;
	s->image = j->image;
	s->rank = (int)j->rank;
	s->world_size = (int)j->world_size;
	s->local_rank = (int)j->local_rank;
	s->local_world_size = (int)j->local_world_size;
	s->node_rank = (int)j->node_rank;
	s->nnodes = (int)j->nnodes;
	s->master_addr = j->master_addr ? j->master_addr : a->address;
	s->master_port = (int)j->master_port;
	s->nccl_ib_hca = a->ib_list;
	s->nccl_socket_ifname = a->ifname;
	s->mem_limit_mib = j->mem_mib;
	s->cpu_milli = j->cpu_milli;
}

/* The task started: its limits, its GPUs busy. Caller holds a->mu. */
static void task_started(struct drv_agent *a, struct task *t, const struct drv_proto_task *j)
{
	t->state = T_RUNNING;
	t->rep_running = true;
	t->grace_ms = j->grace_s >= 0 ? j->grace_s * 1000 : a->grace_ms / 1000 * 1000;
	t->deadline_ms = j->time_limit_s > 0 ? t->proc.started_ms + j->time_limit_s * 1000 : 0;
	t->starttime = proc_starttime(t->proc.pid);
	mark_gpus(a, t, true);
	a->running_dirty = true;
	drv_log(&a->log, "task %s (epoch %lld) started: pid %d, GPUs %d", t->id, (long long)t->epoch,
	      (int)t->proc.pid, t->ngpus);
}

/* Starts the task the controller describes in j. Caller holds a->mu. */
static void start_task(struct drv_agent *a, const struct drv_proto_task *j)
{
	struct drv_task_spec s;
	struct task *t = task_add(a, j);
	struct run_as ra;
	char **argv = task_argv(j), **envv = NULL;
	const char **rank_addrs = NULL;

	memset(&s, 0, sizeof(s));
	if (task_gpus(a, t, j, &s) < 0 || task_dir_and_command(a, t, j) < 0 ||
	    task_user(a, t, j->user, &ra, &s) < 0)
		goto out;
	envv = task_env(j);
	rank_addrs = task_rank_addrs(j);
	task_spec(a, t, j, &s);
	s.argv = j->nargv ? argv : NULL;
	s.env = envv;
	s.rank_addrs = rank_addrs;
	if (drv_proc_start(&t->proc, &s, &a->cg, drv_mono_ms()) < 0) {
		fail_task(t, "%s", t->proc.error);
		goto out;
	}
	task_started(a, t, j);
out:
	if (t->state == T_FAILED)
		drv_log(&a->log, "task %s (epoch %lld) failed to start: %s", t->id, (long long)t->epoch,
		      t->reason);
	drv_free(argv);
	strv_free(envv);
	drv_free(rank_addrs);
}

static void stop_task(struct drv_agent *a, struct task *t, int64_t grace_ms, const char *why)
{
	if (t->state != T_RUNNING || t->proc.terminating)
		return;
	snprintf(t->reason, sizeof(t->reason), "%s", why);
	drv_log(&a->log, "task %s (epoch %lld): stopping (%s), grace %lld ms", t->id, (long long)t->epoch,
	      why, (long long)grace_ms);
	drv_proc_terminate(&t->proc, grace_ms, drv_mono_ms());
}

/* One task of the controller's list: stop it, start it, or leave it be. */
static void apply_one(struct drv_agent *a, const struct drv_proto_task *j)
{
	struct task *t;

	if (!valid_task_id(j->task_id)) {
		drv_log(&a->log, "ignoring an assignment with a bad task_id");
		return;
	}
	t = find_task(a, j->task_id, j->epoch);
	if (t)
		t->listed = true;
	if (j->stop) {
		if (t)
			stop_task(a, t, j->grace_s >= 0 ? j->grace_s * 1000 : a->grace_ms / 1000 * 1000,
				  j->stop_reason ? j->stop_reason : "stopped by the controller");
		return;
	}
	if (!t) {
		/* a task of the same id with an older epoch must go first */
		struct task *old = find_task(a, j->task_id, -1);

		if (old && old->state == T_RUNNING)
			stop_task(a, old, 0, "superseded by a newer epoch");
		start_task(a, j);
	}
}

/* Applies the latest desired list. Caller holds a->mu. */
static void apply_desired(struct drv_agent *a)
{
	size_t k;

	if (!a->have_desired)
		return;
	for (k = 0; k < a->ntasks; k++)
		a->tasks[k]->listed = false;
	for (k = 0; k < a->desired.ntasks; k++)
		apply_one(a, &a->desired.tasks[k]);
	/* fencing: what the controller does not list must not run */
	for (k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];
		if (!t->listed && t->state == T_RUNNING)
			stop_task(a, t, 0, "not assigned to this node (fenced)");
	}
	/* forget finished tasks the controller no longer lists and that owe nothing */
	for (k = 0; k < a->ntasks;) {
		struct task *t = a->tasks[k];
		if (!t->listed && t->state != T_RUNNING && !t->rep_running && !t->rep_end) {
			drv_free(t);
			a->tasks[k] = a->tasks[--a->ntasks];
			continue;
		}
		k++;
	}
}

/* Reaps and enforces limits. Caller holds a->mu. Returns running count. */
static int reap(struct drv_agent *a)
{
	int64_t now = drv_mono_ms();
	int running = 0;
	size_t k;

	for (k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];
		char sn[16];
		if (t->state != T_RUNNING)
			continue;
		if (t->deadline_ms && now >= t->deadline_ms && !t->proc.terminating)
			stop_task(a, t, t->grace_ms > 0 ? t->grace_ms : a->grace_ms, "time limit");
		if (!drv_proc_poll(&t->proc, now)) {
			running++;
			continue;
		}
		t->state = T_EXITED;
		t->rep_end = true;
		mark_gpus(a, t, false);
		a->running_dirty = true;
		drv_proc_cleanup(&t->proc);
		if (t->proc.signal)
			drv_log(&a->log, "task %s (epoch %lld) killed by %s%s", t->id, (long long)t->epoch,
			      drv_signal_name(t->proc.signal, sn, sizeof(sn)),
			      t->proc.oom_killed ? " (out of memory)" : "");
		else
			drv_log(&a->log, "task %s (epoch %lld) exited with code %d", t->id,
			      (long long)t->epoch, t->proc.exit_code);
	}
	return running;
}


/* --- waiting -------------------------------------------------------------- */

static void wait_ms(struct drv_agent *a, int64_t ms)
{
	struct timespec ts = drv_realtime_after_ms(ms);

	pthread_cond_timedwait(&a->cv, &a->mu, &ts);
}

/*
 * The supervisor's sleep: until a running task exits (its pidfd turns
 * readable), another thread calls wake_all, or ms pass. A task without a
 * pidfd caps the sleep at 100 ms, as polling did. Caller holds a->mu.
 */
static void wait_events(struct drv_agent *a, int64_t ms)
{
	struct pollfd stackfds[64], *fds = stackfds;
	size_t k, n = 0, cap = DRV_ARRAY_SIZE(stackfds);
	uint64_t v;
	ssize_t r = 0;

	if (a->wakefd < 0) {
		wait_ms(a, DRV_MIN(ms, 100));
		return;
	}
	if (a->ntasks + 1 > cap)
		fds = drv_calloc(a->ntasks + 1, sizeof(*fds));
	fds[n++] = (struct pollfd){ .fd = a->wakefd, .events = POLLIN };
	for (k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];
		if (t->state != T_RUNNING)
			continue;
		if (t->proc.pidfd < 0)
			ms = DRV_MIN(ms, 100);
		else
			fds[n++] = (struct pollfd){ .fd = t->proc.pidfd, .events = POLLIN };
	}
	pthread_mutex_unlock(&a->mu);
	poll(fds, (nfds_t)n, (int)DRV_MAX(ms, 0));
	if (fds[0].revents & POLLIN)
		r = read(a->wakefd, &v, sizeof(v));
	(void)r;
	pthread_mutex_lock(&a->mu);
	if (fds != stackfds)
		drv_free(fds);
}

/* The next time something running is due: a time limit or a SIGKILL after
 * a grace period. INT64_MAX when nothing is. Caller holds a->mu. */
static int64_t next_task_due(const struct drv_agent *a, int64_t now)
{
	int64_t due = INT64_MAX;
	size_t k;

	for (k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];
		if (t->state != T_RUNNING)
			continue;
		if (t->proc.terminating) /* past it: SIGKILL again every 100 ms */
			due = DRV_MIN(due, DRV_MAX(t->proc.kill_at_ms, now + 100));
		else if (t->deadline_ms)
			due = DRV_MIN(due, t->deadline_ms);
	}
	return due;
}

/* Whether any task owes the controller a report. Caller holds a->mu. */
static bool reports_owed(const struct drv_agent *a)
{
	size_t k;

	for (k = 0; k < a->ntasks; k++)
		if (a->tasks[k]->rep_running || a->tasks[k]->rep_end)
			return true;
	return false;
}

/* --- talking to the controller: register, and the sync exchange ---------------- */

static void proto_log(void *cls, const char *line)
{
	struct drv_agent *a = cls;

	drv_log(&a->log, "%s", line);
}

static void dec_init(struct drv_agent *a, struct drv_proto_dec *d)
{
	memset(d, 0, sizeof(*d));
	d->peer = "controller";
	d->seen = a->seen;
	d->log = proto_log;
	d->log_cls = a;
}

/* A register answered with an error: DRV_EPERM (refused) or DRV_EIO. */
static int register_refused(struct drv_agent *a, long status, json_t *reply)
{
	struct drv_http_reply r = { .status = status };
	char msg[512];

	r.body = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
	r.len = r.body ? strlen(r.body) : 0;
	drv_log(&a->log, "register refused (HTTP %ld): %s", status,
	      drv_http_error_message(&r, msg, sizeof(msg)));
	free(r.body);
	return status == 401 || status == 400 || status == 409 ? DRV_EPERM : DRV_EIO;
}

/* Registers (again). 0, or DRV_EPERM/DRV_EIO (refused), DRV_ECONN (unreachable). */
static int do_register(struct drv_agent *a)
{
	struct drv_proto_registered ok;
	struct drv_proto_dec d;
	json_t *body, *reply = NULL;
	long status = 0;
	int rc;

	pthread_mutex_lock(&a->mu);
	body = register_body(a);
	pthread_mutex_unlock(&a->mu);
	rc = drv_http_json(&a->ctl, "POST", "/v1/agent/register", body, 10000, &status, &reply);
	json_decref(body);
	if (rc == 0 && status != 200)
		rc = register_refused(a, status, reply);
	dec_init(a, &d);
	if (rc == 0 && drv_proto_registered_decode(reply, &ok, &d) < 0) {
		drv_log(&a->log, "register: the controller's answer is not understood: %s", d.err);
		rc = DRV_EIO;
	}
	json_decref(reply);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&a->mu);
	a->session = ok.session;
	a->heartbeat_s = (int)DRV_MAX(ok.heartbeat_interval_s, 1);
	a->version = 0;
	a->need_register = false;
	wake_all(a);
	pthread_mutex_unlock(&a->mu);
	drv_log(&a->log, "registered with %s as %s (session %lld, %d GPUs, backend %s)", a->server, a->name,
	      (long long)ok.session, a->gpus.ngpus, a->backend);
	drv_proto_registered_release(&ok);
	return 0;
}

static void session_gone(struct drv_agent *a)
{
	if (!a->need_register)
		drv_log(&a->log, "sync: the controller no longer knows session %lld; registering again",
		      (long long)a->session);
	a->need_register = true;
	wake_all(a);
}

static int gpu_healthy(const struct drv_gpu_sample *s)
{
	/* XIDs that mean the GPU needs a reset or is gone (not app faults) */
	static const int bad[] = { 48, 63, 64, 74, 79, 92, 94, 95, 119, 120 };
	size_t i;

	if (s->ecc_dbe > 0)
		return 0;
	for (i = 0; i < DRV_ARRAY_SIZE(bad); i++)
		if (s->xid_last == bad[i])
			return 0;
	return 1;
}

/* The GPUs' health now, into m. Caller holds a->mu. */
static void sync_health(struct drv_agent *a, struct drv_proto_sync *m)
{
	int64_t now = drv_mono_ms();

	m->gpus = drv_calloc((size_t)a->gpus.ngpus, sizeof(*m->gpus));
	for (int g = 0; g < a->gpus.ngpus; g++) {
		struct drv_gpu_sample s;

		if (drv_gpu_sample(&a->gpus, g, now, &s) < 0)
			continue;
		m->gpus[m->ngpus++] = (struct drv_proto_gpu_health){
			.index = g, .healthy = gpu_healthy(&s), .xid = s.xid_last,
			.ecc_uncorrected = s.ecc_dbe > 0 ? s.ecc_dbe : 0,
			.temperature_c = s.temp_c >= 0 ? s.temp_c : -1,
			.utilization = s.util_pct >= 0 ? s.util_pct : -1,
			.memory_used_mib = s.fb_used_mib >= 0 ? s.fb_used_mib : -1,
			.power_w = s.power_w };
	}
}

/* A sync being made: the message, and which reports it carries. */
struct sync_out {
	struct drv_proto_sync m;
	struct sent { struct task *t; bool running, end; } *sent;
	size_t nsent;
	char now[32];
	char (*signames)[16];
};

/* The reports task t owes, into x. */
static void sync_reports(struct task *t, struct sync_out *x)
{
	struct drv_proto_report *r;

	if (t->rep_running && t->proc.pid)
		x->m.reports[x->m.nreports++] = (struct drv_proto_report){
			.task_id = t->id, .epoch = t->epoch, .state = DRV_PROTO_RUNNING,
			.pid = t->proc.pid, .time = x->now, .exit_code = -1 };
	if (t->rep_end) {
		r = &x->m.reports[x->m.nreports++];
		*r = (struct drv_proto_report){ .task_id = t->id, .epoch = t->epoch,
						.state = DRV_PROTO_FAILED, .time = x->now,
						.exit_code = -1, .reason = t->reason };
		if (t->state != T_FAILED) {
			r->state = DRV_PROTO_EXITED;
			r->signal = t->proc.signal;
			r->signal_name = t->proc.signal ? drv_signal_name(t->proc.signal,
					 x->signames[x->nsent], sizeof(x->signames[0])) : NULL;
			r->exit_code = t->proc.signal ? -1 : t->proc.exit_code;
			r->oom_killed = t->proc.oom_killed;
			r->reason = t->reason[0] ? t->reason : NULL;
		}
	}
	x->sent[x->nsent++] = (struct sent){ t, t->rep_running, t->rep_end };
}

/* The sync to send now: task states, owed reports, GPU health. It waits
 * at the controller unless it carries reports. Caller holds a->mu. */
static void sync_build(struct drv_agent *a, struct sync_out *x)
{
	memset(x, 0, sizeof(*x));
	drv_proto_sync_init(&x->m);
	x->m.node = a->name;
	x->m.session = a->session;
	x->m.version = a->version;
	drv_rfc3339(drv_wall_s(), x->now, sizeof(x->now));
	x->m.tasks = drv_calloc(a->ntasks, sizeof(*x->m.tasks));
	x->m.reports = drv_calloc(2 * a->ntasks, sizeof(*x->m.reports));
	x->sent = drv_calloc(a->ntasks, sizeof(*x->sent));
	x->signames = drv_calloc(a->ntasks, sizeof(*x->signames));
	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		if (t->state == T_RUNNING)
			x->m.tasks[x->m.ntasks++] = (struct drv_proto_ref){
				.task_id = t->id, .epoch = t->epoch, .state = "running" };
		if (t->rep_running || t->rep_end)
			sync_reports(t, x);
	}
	sync_health(a, &x->m);
	x->m.wait_s = x->m.nreports || a->stopping ? 0 : a->heartbeat_s;
	a->sync_waiting = x->m.wait_s > 0;
}

static void sync_out_free(struct sync_out *x)
{
	drv_proto_sync_release(&x->m);
	drv_free(x->sent);
	drv_free(x->signames);
}

/* The controller answered x with r: clear what it has, kill what it does
 * not want, keep its new task set. Caller holds a->mu. */
static void sync_done(struct drv_agent *a, struct sync_out *x, struct drv_proto_sync_reply *r)
{
	for (size_t k = 0; k < x->nsent; k++) {
		size_t i;

		/* the tasks may have moved on meanwhile: clear only what was sent */
		for (i = 0; i < a->ntasks && a->tasks[i] != x->sent[k].t; i++)
			;
		if (i == a->ntasks)
			continue;
		if (x->sent[k].running)
			a->tasks[i]->rep_running = false;
		if (x->sent[k].end)
			a->tasks[i]->rep_end = false;
	}
	for (size_t k = 0; k < r->nstale; k++) {
		struct task *t = find_task(a, r->stale[k].task_id, r->stale[k].epoch);

		if (t)
			stop_task(a, t, 0, r->stale[k].reason ? r->stale[k].reason : "stale epoch");
	}
	a->heartbeat_s = (int)DRV_MAX(r->heartbeat_interval_s, 1);
	if (r->has_tasks && a->session == x->m.session) {
		drv_proto_sync_reply_release(&a->desired);
		a->desired = *r;
		memset(r, 0, sizeof(*r));
		a->have_desired = true;
		a->desired_new = true;
		a->version = a->desired.version;
	}
	wake_all(a);
}

/* The answer to a sync, decoded and applied; <0 when refused. Caller
 * holds a->mu. */
static int sync_answer(struct drv_agent *a, struct sync_out *x, long status, json_t *reply)
{
	struct drv_proto_sync_reply r;
	struct drv_proto_dec d;

	if (status == 409) {
		session_gone(a);
		return 0;
	}
	if (status != 200) {
		drv_log(&a->log, "sync refused (HTTP %ld)", status);
		return DRV_EIO;
	}
	dec_init(a, &d);
	if (drv_proto_sync_reply_decode(reply, &r, &d) < 0) {
		drv_log(&a->log, "sync: the controller's answer is not understood: %s", d.err);
		return DRV_EIO;
	}
	sync_done(a, x, &r);
	drv_proto_sync_reply_release(&r);
	return 0;
}

/* One sync exchange. 0, or <0 after a transport error or a refusal. */
static int sync_once(struct drv_agent *a)
{
	struct sync_out x;
	json_t *body, *reply = NULL;
	long status = 0, timeout;
	int rc;

	pthread_mutex_lock(&a->mu);
	sync_build(a, &x);
	body = drv_proto_sync_encode(&x.m);
	timeout = (long)(x.m.wait_s + 10) * 1000;
	pthread_mutex_unlock(&a->mu);
	rc = drv_http_json(&a->ctl, "POST", "/v1/agent/sync", body, timeout, &status, &reply);
	json_decref(body);
	pthread_mutex_lock(&a->mu);
	a->sync_waiting = false;
	if (rc < 0 && !a->interrupted && !a->stopping)
		drv_log(&a->log, "sync: %s", a->ctl.err);
	if (rc == 0)
		rc = sync_answer(a, &x, status, reply);
	pthread_mutex_unlock(&a->mu);
	json_decref(reply);
	sync_out_free(&x);
	return rc;
}

/* Cuts a sync that waits at the controller short: the agent has
 * something to say. Caller holds a->mu. */
static void kick_sync(struct drv_agent *a)
{
	if (!a->sync_waiting)
		return;
	a->sync_waiting = false;
	a->interrupted = true;
	drv_http_client_interrupt(&a->ctl);
}

/*
 * The syncer: registers (again after a 409) and keeps one sync going.
 * It never sleeps between syncs (the controller holds each one until it
 * has news or the heartbeat interval passed), only after failures.
 */
static void *sync_main(void *arg)
{
	struct drv_agent *a = arg;
	int64_t backoff = 0;
	bool said_unreachable = false;

	pthread_mutex_lock(&a->mu);
	while (!a->stopping) {
		bool reg = !a->session || a->need_register;
		int rc;

		pthread_mutex_unlock(&a->mu);
		rc = reg ? do_register(a) : sync_once(a);
		pthread_mutex_lock(&a->mu);
		if (rc == 0 || a->interrupted) {
			a->interrupted = false;
			backoff = 0;
			said_unreachable = false;
			continue;
		}
		if (reg && !said_unreachable && rc != DRV_EPERM && rc != DRV_EIO)
			drv_log(&a->log, "%s; retrying", a->ctl.err);
		said_unreachable |= reg;
		backoff = backoff ? DRV_MIN(backoff * 2, reg ? 10000 : 5000) : 500;
		if (!a->stopping)
			wait_ms(a, backoff);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/*
 * The supervisor: applies the controller's task set, reaps, enforces
 * limits, and tells the syncer when there is something to report. It
 * sleeps in poll() on the tasks' pidfds and the wake eventfd.
 */
static void *super_main(void *arg)
{
	struct drv_agent *a = arg;
	size_t k;

	pthread_mutex_lock(&a->mu);
	while (!a->stopping) {
		int running;

		if (a->desired_new) {
			a->desired_new = false;
			apply_desired(a);
		}
		running = reap(a);
		if (a->running_dirty) {
			a->running_dirty = false;
			save_running(a);
		}
		if (reports_owed(a))
			kick_sync(a);
		if (a->stopping)
			break;
		/* sleep until a task exits, another thread wakes us, or a time
		 * limit or a SIGKILL after a grace period is due */
		if (!a->desired_new) {
			int64_t now = drv_mono_ms();
			int64_t due = running ? next_task_due(a, now) : INT64_MAX;

			wait_events(a, DRV_MAX(DRV_MIN(due - now, 60000), 1));
		}
	}

	/* stopping: terminate what runs, wait for it; drv_agent_stop reports it */
	for (k = 0; k < a->ntasks; k++)
		stop_task(a, a->tasks[k], a->grace_ms, "the agent is stopping");
	{
		int64_t end = drv_mono_ms() + a->grace_ms + 2000;
		while (reap(a) > 0 && drv_mono_ms() < end)
			wait_ms(a, 50);
		save_running(a);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* --- HTTP endpoints ---------------------------------------------------------- */

static const char *const xid_help = "Value of the last XID error encountered.";

void drv_agent_render_metrics(struct drv_agent *a, struct drv_prom *w, int64_t now_ms)
{
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)." },
		{ "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)." },
		{ "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)." },
		{ "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)." },
		{ "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)." },
		{ "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)." },
		{ "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)." },
		{ "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
		  "Total energy consumption since boot (in mJ)." },
		{ "DCGM_FI_DEV_XID_ERRORS", "gauge", NULL },
	};
	struct drv_gpu_sample s[DRV_GPU_MAX];
	bool ok[DRV_GPU_MAX];
	char idx[DRV_GPU_MAX][8], dev[DRV_GPU_MAX][16], port[8];
	int g, busy = 0, running = 0, exited = 0, failed = 0;
	size_t f, k;

	pthread_mutex_lock(&a->mu);
	for (g = 0; g < a->gpus.ngpus; g++) {
		ok[g] = drv_gpu_sample(&a->gpus, g, now_ms, &s[g]) == 0;
		busy += a->gpus.use[g].job[0] != '\0';
		snprintf(idx[g], sizeof(idx[g]), "%d", g);
		snprintf(dev[g], sizeof(dev[g]), "nvidia%d", g);
	}
	for (f = 0; f < DRV_ARRAY_SIZE(fam); f++) {
		bool any = false;
		for (g = 0; g < a->gpus.ngpus; g++) {
			double v;
			if (!ok[g])
				continue;
			switch (f) {
			case 0: v = s[g].util_pct; break;
			case 1: v = (double)s[g].fb_used_mib; break;
			case 2: v = (double)s[g].fb_free_mib; break;
			case 3: v = s[g].temp_c; break;
			case 4: v = s[g].power_w == s[g].power_w ? s[g].power_w : -1; break;
			case 5: v = s[g].sm_clock_mhz; break;
			case 6: v = s[g].mem_clock_mhz; break;
			case 7: v = (double)s[g].energy_mj; break;
			default: v = (double)s[g].xid_last; break;
			}
			if (v < 0)
				continue;
			if (!any)
				drv_prom_family(w, fam[f].name, fam[f].type,
						fam[f].help ? fam[f].help : xid_help);
			any = true;
			drv_prom_sample(w, fam[f].name,
					DRV_PROM_LABELS("gpu", idx[g], "UUID", a->gpus.gpus[g].uuid,
							"device", dev[g], "modelName",
							a->gpus.gpus[g].name, "Hostname", a->name,
							"hpc_job", a->gpus.use[g].job[0] ?
							a->gpus.use[g].job : NULL),
					v);
		}
	}

	drv_hca_refresh(&a->hcas, busy);
	for (f = 0; f < 3; f++) {
		static const char *const names[] = { "drover_ib_port_receive_bytes_total",
			"drover_ib_port_transmit_bytes_total", "drover_ib_port_active" };
		static const char *const helps[] = {
			"Bytes received on an InfiniBand/RoCE port (port_rcv_data x 4).",
			"Bytes sent on an InfiniBand/RoCE port (port_xmit_data x 4).",
			"1 when the InfiniBand/RoCE port is ACTIVE." };
		int h, p;
		for (h = 0; h < a->hcas.nhcas; h++) {
			const struct drv_hca *hc = &a->hcas.hcas[h];
			for (p = 0; p < hc->nports; p++) {
				const struct drv_hca_port *pp = &hc->ports[p];
				double v = f == 0 ? (double)pp->rx_bytes : f == 1 ? (double)pp->tx_bytes :
					   !strcmp(pp->state, "ACTIVE");
				drv_prom_family(w, names[f], f < 2 ? "counter" : "gauge", helps[f]);
				snprintf(port, sizeof(port), "%d", pp->port);
				drv_prom_sample(w, names[f],
						DRV_PROM_LABELS("Hostname", a->name, "hca", hc->name,
								"port", port, "link_layer",
								pp->link_layer),
						v);
			}
		}
	}

	for (k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];
		running += t->state == T_RUNNING;
		exited += t->state == T_EXITED;
		failed += t->state == T_FAILED;
		if (t->state == T_FAILED)
			continue;
		drv_prom_family(w, "drover_task_oom_kills_total", "counter",
				"OOM kills of a task's processes (cgroup memory.events).");
		drv_prom_sample(w, "drover_task_oom_kills_total",
				DRV_PROM_LABELS("Hostname", a->name, "hpc_job", t->job_id, "task",
						t->id),
				t->proc.oom_killed ? 1 : 0);
	}
	drv_prom_family(w, "drover_agent_tasks", "gauge", "Tasks the agent knows, by state.");
	drv_prom_sample(w, "drover_agent_tasks", DRV_PROM_LABELS("Hostname", a->name, "state",
								 "running"), running);
	drv_prom_sample(w, "drover_agent_tasks", DRV_PROM_LABELS("Hostname", a->name, "state",
								 "exited"), exited);
	drv_prom_sample(w, "drover_agent_tasks", DRV_PROM_LABELS("Hostname", a->name, "state",
								 "failed"), failed);
	drv_prom_metric(w, "drover_agent_registered", "gauge",
			"1 while the agent holds a session with the controller.",
			DRV_PROM_LABELS("Hostname", a->name),
			a->session && !a->need_register ? 1 : 0);
	drv_prom_metric(w, "drover_agent_cgroup_limits", "gauge",
			"1 when task memory/CPU limits are enforced with cgroup v2.",
			DRV_PROM_LABELS("Hostname", a->name), a->cg.enabled ? 1 : 0);
	pthread_mutex_unlock(&a->mu);
}

static int h_metrics(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_prom w;

	drv_prom_init(&w);
	drv_agent_render_metrics(ctx, &w, drv_mono_ms());
	drv_http_resp_bytes(resp, 200, DRV_PROM_CONTENT_TYPE, drv_prom_text(&w), drv_prom_len(&w));
	drv_prom_release(&w);
	return 0;
}

static int h_healthz(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	json_t *o;

	pthread_mutex_lock(&a->mu);
	o = json_pack("{s:s, s:s, s:s, s:i, s:b}", "status", "ok", "version", DRV_AGENT_VERSION,
		      "backend", a->backend, "gpus", a->gpus.ngpus, "registered",
		      a->session && !a->need_register);
	pthread_mutex_unlock(&a->mu);
	drv_http_resp_json(resp, 200, o);
	return 0;
}

static int h_logs(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	const char *id = drv_http_req_param(req, 0);
	const char *auth = drv_http_req_header(req, "Authorization");
	const char *stream = drv_http_req_query(req, "stream");
	int64_t offset, limit;
	char path[PATH_MAX], next[32];
	struct stat st;
	char *buf;
	ssize_t n;
	int fd;

	if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, a->token)) {
		drv_http_resp_error(resp, 401, "unauthorized", NULL,
				    "task logs need the cluster token");
		return 0;
	}
	if (!stream)
		stream = "stdout";
	if (strcmp(stream, "stdout") && strcmp(stream, "stderr")) {
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "stream: '%s', expected stdout or stderr", stream);
		return 0;
	}
	if (drv_http_req_query_int(req, "offset", 0, 0, INT64_MAX, &offset, resp) < 0 ||
	    drv_http_req_query_int(req, "limit", 1 << 20, 0, 16 << 20, &limit, resp) < 0)
		return 0;
	if (!valid_task_id(id)) {
		drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s",
				    id ? id : "", a->name);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/tasks/%s/%s.%s", a->state_dir, id, id,
		 strcmp(stream, "stdout") ? "err" : "out");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s", id,
				    a->name);
		return 0;
	}
	if (offset > st.st_size)
		offset = st.st_size;
	if (limit > st.st_size - offset)
		limit = st.st_size - offset;
	buf = drv_malloc((size_t)limit + 1);
	n = pread(fd, buf, (size_t)limit, offset);
	close(fd);
	if (n < 0)
		n = 0;
	drv_http_resp_bytes(resp, 200, "text/plain; charset=utf-8", buf, (size_t)n);
	snprintf(next, sizeof(next), "%lld", (long long)(offset + n));
	drv_http_resp_header(resp, "X-Drover-Next-Offset", next);
	drv_free(buf);
	return 0;
}

/* What the agent tells the controller at register: GPUs, matrix, HCAs. */
static int h_inventory(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	json_t *o;

	pthread_mutex_lock(&a->mu);
	o = register_body(a);
	json_object_set_new(o, "cgroup_limits", json_boolean(a->cg.enabled));
	if (!a->cg.enabled)
		json_object_set_new(o, "cgroup_why", json_string(a->cg.why));
	json_object_set_new(o, "driver_version", json_string(a->gpus.driver_version));
	pthread_mutex_unlock(&a->mu);
	drv_http_resp_json(resp, 200, o);
	return 0;
}

static const struct drv_http_route agent_routes[] = {
	{ "GET", "/metrics", h_metrics, 0 },
	{ "GET", "/v1/inventory", h_inventory, 0 },
	{ "GET", "/healthz", h_healthz, 0 },
	{ "GET", "/v1/tasks/{}/logs", h_logs, 0 },
	{ NULL, NULL, NULL, 0 },
};

/* --- start and stop --------------------------------------------------------- */

static void agent_free(struct drv_agent *a)
{
	size_t k;

	if (!a)
		return;
	drv_http_server_stop(a->http);
	drv_gpu_close(&a->gpus);
	for (k = 0; k < a->ntasks; k++) {
		if (a->tasks[k]->proc.pidfd >= 0)
			close(a->tasks[k]->proc.pidfd);
		drv_free(a->tasks[k]);
	}
	drv_free(a->tasks);
	drv_proto_sync_reply_release(&a->desired);
	drv_http_client_release(&a->ctl);
	drv_proto_seen_free(a->seen);
	drv_free(a->server);
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
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	if (a->wakefd >= 0)
		close(a->wakefd);
	drv_free(a);
}

int drv_agent_start(const struct drv_agent_config *cfg, struct drv_agent **out, char *err,
		    size_t errsz)
{
	struct drv_agent *a;
	char nverr[512];
	int rc;

	*out = NULL;
	if (!cfg->server_url || !cfg->name || !*cfg->name || !cfg->token) {
		snprintf(err, errsz, "the agent needs a server URL, a token and a node name");
		return DRV_EINVAL;
	}
	a = drv_calloc(1, sizeof(*a));
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	a->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	drv_http_client_init(&a->ctl, cfg->server_url, cfg->token);
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
	a->fake_hcas = cfg->fake_hcas;
	a->fake_fallback = cfg->fake_fallback;
	a->log = (struct drv_log){ NULL, "drover agent", cfg->quiet ? DRV_LOG_QUIET : 0 };
	a->run_as_self = cfg->run_as_self;
	a->grace_ms = cfg->grace_ms > 0 ? cfg->grace_ms : 10000;
	a->heartbeat_s = 5;
	if (gethostname(a->hostname, sizeof(a->hostname) - 1) < 0)
		snprintf(a->hostname, sizeof(a->hostname), "%s", a->name);
	if (cfg->state_dir) {
		a->state_dir = drv_strdup(cfg->state_dir);
	} else {
		const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
		char d[PATH_MAX];
		if (xdg && *xdg)
			snprintf(d, sizeof(d), "%s/drover/agent-%s", xdg, a->name);
		else
			snprintf(d, sizeof(d), "%s/.local/state/drover/agent-%s", home ? home : "/tmp",
				 a->name);
		a->state_dir = drv_strdup(d);
	}
	if (drv_mkdir_p(a->state_dir, 0755) < 0) {
		snprintf(err, errsz, "cannot create the agent's state directory %s: %s", a->state_dir,
			 strerror(errno));
		rc = DRV_EIO;
		goto fail;
	}

	/* GPUs */
	if (a->fake_gpus) {
		rc = drv_gpu_open(&a->gpus, "fake", a->fake_gpus, err, errsz);
		if (rc < 0)
			goto fail;
		a->backend = "fake";
	} else {
		rc = drv_gpu_open(&a->gpus, "nvml", a->nvml_lib, nverr, sizeof(nverr));
		if (rc < 0 && !a->fake_fallback) {
			snprintf(err, errsz, "%s; no GPUs to offer: give --fake-gpus 8xH100 to run "
				 "with simulated GPUs", nverr);
			goto fail;
		}
		if (rc < 0) {
			drv_log(&a->log, "%s; simulating 8 H100 GPUs instead (as --fake-gpus 8xH100 would)",
			      nverr);
			rc = drv_gpu_open(&a->gpus, "fake", "8xH100", err, errsz);
			if (rc < 0)
				goto fail;
			a->backend = "fake";
		} else {
			a->backend = "nvml";
		}
	}
	/* fabric */
	if (a->fake_hcas > 0)
		drv_hca_fake(&a->hcas, a->fake_hcas);
	else
		drv_hca_scan(&a->hcas, a->sysfs_root);
	drv_hca_active_list(&a->hcas, a->ib_list, sizeof(a->ib_list));
	/* limits */
	drv_cgroup_setup(&a->cg, a->cgroup_parent);
	if (!a->cg.enabled)
		drv_log(&a->log, "%s", a->cg.why);
	find_address(a);
	kill_leftovers(a);
	{
		struct passwd *me = getpwuid(geteuid());
		if (a->run_as_self)
			drv_log(&a->log, "every task runs as %s (uid %d), whoever submitted it",
			      me ? me->pw_name : "?", (int)geteuid());
		else if (geteuid() != 0)
			drv_log(&a->log, "not root: every task runs as %s (uid %d)", me ? me->pw_name : "?",
			      (int)geteuid());
	}

	if (strcmp(a->listen, "none")) {
		char host[256];
		int port;
		rc = drv_http_server_start(a->listen, agent_routes, NULL, a, &a->http, err, errsz);
		if (rc < 0)
			goto fail;
		/* peers and the controller reach us on the listen host, or on our
		 * address when listening on every interface */
		if (drv_http_parse_addr(a->listen, host, sizeof(host), &port) < 0 || !host[0] ||
		    !strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
			snprintf(host, sizeof(host), "%s", a->address);
		port = drv_http_server_port(a->http);
		if (strchr(host, ':'))
			snprintf(a->agent_url, sizeof(a->agent_url), "http://[%s]:%d", host, port);
		else
			snprintf(a->agent_url, sizeof(a->agent_url), "http://%s:%d", host, port);
	}
	drv_log(&a->log, "node %s: %d GPUs (%s%s%s), %d HCAs%s%s, address %s%s%s", a->name, a->gpus.ngpus,
	      a->backend, a->gpus.ngpus ? ", " : "", a->gpus.ngpus ? a->gpus.gpus[0].name : "",
	      a->hcas.nhcas, a->ib_list[0] ? " active: " : "", a->ib_list, a->address,
	      a->agent_url[0] ? ", metrics and logs at " : "", a->agent_url);

	if (pthread_create(&a->super, NULL, super_main, a) != 0) {
		snprintf(err, errsz, "cannot start the agent's thread");
		rc = DRV_EIO;
		goto fail;
	}
	a->super_on = true;
	if (pthread_create(&a->syncer, NULL, sync_main, a) != 0) {
		snprintf(err, errsz, "cannot start the agent's thread");
		rc = DRV_EIO;
		goto fail;
	}
	a->syncer_on = true;
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
	kick_sync(a);
	wake_all(a);
	pthread_mutex_unlock(&a->mu);
	if (a->syncer_on)
		pthread_join(a->syncer, NULL);
	if (a->super_on)
		pthread_join(a->super, NULL);
	drv_http_server_stop(a->http);
	a->http = NULL;
	/* the last reports: what the supervisor stopped (an interrupt the
	 * syncer left unspent fails the first try) */
	if (a->session && !a->need_register && a->syncer_on && sync_once(a) == DRV_ECONN)
		sync_once(a);
	agent_free(a);
}

int drv_agent_metrics_port(const struct drv_agent *a)
{
	return a && a->http ? drv_http_server_port(a->http) : 0;
}
