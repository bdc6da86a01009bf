/*
 * agent_tasks.c: the agent's tasks: starting one from its assignment (GPUs,
 * directory, user, environment, launch), stopping one, applying the
 * controller's level-triggered task set with fencing by (task_id, epoch),
 * and reaping. Every function here runs with a->mu held.
 */
#include "drover/clock.h"
#include "drover/fsutil.h"
#include "agent_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pty.h>
#include <pwd.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int agent_valid_task_id(const char *id)
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

struct task *agent_find_task(struct drv_agent *a, const char *id, int64_t epoch)
{
	size_t k;

	for (k = 0; k < a->ntasks; k++)
		if (!strcmp(a->tasks[k]->id, id) && (epoch < 0 || a->tasks[k]->epoch == epoch))
			return a->tasks[k];
	return NULL;
}

/* Marks t's GPUs busy, or frees them; a GPU another running task shares
 * (fractional GPUs) keeps that task's job. Caller holds a->mu. */
void agent_mark_gpus(struct drv_agent *a, struct task *t, bool busy)
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
	t->pty_master = -1;
	t->proc.cpu_us = t->proc.mem_peak_bytes = -1;
	t->use.cpu_us = t->use.mem_max_bytes = -1;
	t->gpu_milli = agent_share_milli(j->gpu_milli);
	snprintf(t->id, sizeof(t->id), "%s", j->task_id);
	t->epoch = j->epoch;
	snprintf(t->job_id, sizeof(t->job_id), "%lld", (long long)j->job_id);
	t->listed = true;
	t->sig_seen = j->signal_seq;   /* a signal sent before it started is not its */
	t->sig_known = true;
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
	if (drv_mkdir_p(t->dir, 0700) < 0) { /* its user's when chowned (run_as) */
		fail_task(t, "cannot create %s: %s", t->dir, strerror(errno));
		return -1;
	}
	if (j->runtime && !strcmp(j->runtime, "podman"))
		return 0;   /* the image's entrypoint may be what runs */
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

/* Another uid passes through the state directory to the task's own (as
 * open_state_dir makes them for a root agent without --run-as-self:
 * 0711), listing nothing. */
static void state_dir_pass_through(struct drv_agent *a)
{
	char tasks[PATH_MAX + 8];
	const char *dirs[] = { a->state_dir, tasks };
	struct stat st;

	snprintf(tasks, sizeof(tasks), "%s/tasks", a->state_dir);
	for (size_t i = 0; i < DRV_ARRAY_SIZE(dirs); i++)
		if (stat(dirs[i], &st) == 0 && (st.st_mode & 0111) != 0111 &&
		    chmod(dirs[i], (st.st_mode & 07777) | 0111) == 0)
			drv_log(&a->log, "%s is 0%o now: a task's securityContext runs it as "
				"another uid, which passes through to its own directory", dirs[i],
				(unsigned)((st.st_mode & 07777) | 0111));
}

/*
 * securityContext.runAsUser/runAsGroup (the controller let them through:
 * the user's own, or an admin's job): the task runs as that uid and gid,
 * whatever --run-as-self says, since they only narrow what a root agent
 * would do. A gid not given is the uid's primary group in passwd, else 0
 * (as Kubernetes does); supplementary groups are the uid's in passwd, or
 * none. A non-root agent runs only its own uid and gid. -1 after failing.
 */
static int task_run_as(struct drv_agent *a, struct task *t, const struct drv_proto_task *j,
		       struct run_as *ra, struct drv_task_spec *s)
{
	struct passwd *pwp = NULL, *upw = NULL;
	struct passwd upwbuf;
	char ubuf[4096];
	int ng = (int)DRV_ARRAY_SIZE(ra->groups);
	uid_t uid;
	gid_t gid;

	if (j->run_as_uid >= 0) {
		uid = (uid_t)j->run_as_uid;
	} else if (j->user && *j->user && geteuid() == 0 && !a->run_as_self) {
		if (getpwnam_r(j->user, &upwbuf, ubuf, sizeof(ubuf), &upw) != 0 || !upw) {
			fail_task(t, "user %s does not exist on node %s", j->user, a->name);
			return -1;
		}
		uid = upw->pw_uid;
	} else {
		uid = geteuid();
	}
	if (getpwuid_r(uid, &ra->pw, ra->buf, sizeof(ra->buf), &pwp) != 0)
		pwp = NULL;
	gid = j->run_as_gid >= 0 ? (gid_t)j->run_as_gid : pwp ? pwp->pw_gid : 0;
	if (geteuid() != 0) {
		if (uid == geteuid() && gid == getegid())
			return 0;
		fail_task(t, "securityContext: runAsUser %u, runAsGroup %u: the agent on node %s "
			  "runs as uid %u gid %u, not as root, and cannot run a task as another "
			  "user", (unsigned)uid, (unsigned)gid, a->name, (unsigned)geteuid(),
			  (unsigned)getegid());
		return -1;
	}
	if (uid == 0 && !a->allow_root_tasks) {
		fail_task(t, "securityContext.runAsUser: 0 would run the task as root on node %s "
			  "and the controller has allow_root_tasks: false", a->name);
		return -1;
	}
	if (uid == 0 && j->run_as_non_root) {
		fail_task(t, "CreateContainerConfigError: container has runAsNonRoot and "
			  "runAsUser 0 would run it as root");
		return -1;
	}
	if (!pwp || getgrouplist(pwp->pw_name, gid, ra->groups, &ng) < 0)
		ng = 0;
	s->set_user = true;
	s->uid = uid;
	s->gid = gid;
	s->groups = ra->groups;
	s->ngroups = ng;
	s->user = pwp ? pwp->pw_name : j->user;
	s->home = pwp ? pwp->pw_dir : "/";
	if (chown(t->dir, uid, gid) < 0)
		drv_log(&a->log, "task %s: cannot hand %s to uid %u: %s", t->id, t->dir,
			(unsigned)uid, strerror(errno));
	state_dir_pass_through(a);
	drv_log(&a->log, "task %s: securityContext: runs as uid %u gid %u", t->id, (unsigned)uid,
		(unsigned)gid);
	return 0;
}

/* The job's user when the agent is root (and not --run-as-self); -1 after
 * failing the task, also when it would run as root and the controller's
 * allow_root_tasks is false, whatever the agent's flags, or when
 * runAsNonRoot asks otherwise (a container's image user is checked by its
 * script, podman.c). */
static int task_user(struct drv_agent *a, struct task *t, const struct drv_proto_task *j,
		     struct run_as *ra, struct drv_task_spec *s)
{
	const char *user = j->user;
	struct passwd *pwp = NULL;
	int ng = (int)DRV_ARRAY_SIZE(ra->groups);
	bool container = j->runtime && !strcmp(j->runtime, "podman");

	if (j->run_as_uid >= 0 || j->run_as_gid >= 0)
		return task_run_as(a, t, j, ra, s);
	if (geteuid() != 0)
		return 0;
	if (a->run_as_self || !user || !*user || !strcmp(user, "root")) {
		if (j->run_as_non_root && !container) {
			fail_task(t, "CreateContainerConfigError: runAsNonRoot and the task would "
				  "run as root on node %s (%s)", a->name, a->run_as_self ?
				  "the agent runs as root with --run-as-self" : "user root");
			return -1;
		}
		if (a->allow_root_tasks)
			return 0;
		fail_task(t, "the task would run as root on node %s (%s) and the controller has "
			  "allow_root_tasks: false", a->name,
			  a->run_as_self ? "the agent runs as root with --run-as-self" : "user root");
		return -1;
	}
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

/* A volume's variable: DROVER_VOLUME_<NAME>, '-' and '.' as '_'. */
static void volume_var(const char *name, char *out, size_t n)
{
	size_t k = (size_t)snprintf(out, n, "DROVER_VOLUME_");

	for (const char *p = name; *p && k + 1 < n; p++)
		out[k++] = *p == '-' || *p == '.' ? '_' : (char)toupper((unsigned char)*p);
	out[k] = '\0';
}

/* The job's env as "K=V" strings, NULL-terminated; free with strv_free.
 * A Slurm job's host task (SLURM_JOB_ID set) gets the agent's slurm-bin
 * first in its PATH (agent_slurm_bin), or as PATH before the usual
 * directories when the job sets none. Then, for the host runtime, where
 * each volume's files are (its directory, or with subPath that one file). */
static char **task_env(struct drv_agent *a, const struct drv_proto_task *j, const struct task *t)
{
	char **v = drv_calloc(j->nenv + j->nvolumes + 2, sizeof(*v));
	bool slurm = false, path = false;
	size_t i, n;

	for (i = 0; i < j->nenv; i++)
		slurm |= !strcmp(j->env[i].name, "SLURM_JOB_ID");
	slurm = slurm && a->slurm_bin[0] && !(j->runtime && !strcmp(j->runtime, "podman"));
	for (i = 0; i < j->nenv; i++) {
		bool p = slurm && !strcmp(j->env[i].name, "PATH");
		size_t len = strlen(j->env[i].name) + strlen(j->env[i].value) + 2;

		/* srun hands a step its own environment: the batch step's PATH,
		 * which already starts with slurm-bin */
		if (p && !strncmp(j->env[i].value, a->slurm_bin, strlen(a->slurm_bin)) &&
		    (j->env[i].value[strlen(a->slurm_bin)] == ':' ||
		     !j->env[i].value[strlen(a->slurm_bin)]))
			p = false, path = true;
		if (p)
			len += strlen(a->slurm_bin) + 1;
		v[i] = drv_malloc(len);
		if (p)
			snprintf(v[i], len, "PATH=%s%s%s", a->slurm_bin, j->env[i].value[0] ? ":" : "",
				 j->env[i].value);
		else
			snprintf(v[i], len, "%s=%s", j->env[i].name, j->env[i].value);
		path |= p;
	}
	n = i;
	if (slurm && !path) {
		size_t len = strlen(a->slurm_bin) + 64;

		v[n] = drv_malloc(len);
		snprintf(v[n++], len, "PATH=%s:/usr/local/bin:/usr/bin:/bin", a->slurm_bin);
	}
	for (i = 0; i < j->nvolumes; i++) {
		const struct drv_proto_volume *vol = &j->volumes[i];
		char var[160];
		size_t len;

		volume_var(vol->name, var, sizeof(var));
		len = strlen(var) + strlen(t->dir) + strlen(vol->name) +
		      (vol->sub_path ? strlen(vol->sub_path) : 0) + 16;
		v[n] = drv_malloc(len);
		snprintf(v[n++], len, "%s=%s/volumes/%s%s%s", var, t->dir, vol->name,
			 vol->sub_path ? "/" : "", vol->sub_path ? vol->sub_path : "");
	}
	return v;
}

/* Whether a volume's name or a file's path stays below its directory. */
static bool below(const char *p, bool one_segment)
{
	const char *s = p;

	if (!*p || *p == '/' || (one_segment && strchr(p, '/')))
		return false;
	while (*s) {
		const char *e = strchr(s, '/');
		size_t l = e ? (size_t)(e - s) : strlen(s);

		if (l == 0 || (l == 2 && s[0] == '.' && s[1] == '.') || (l == 1 && s[0] == '.'))
			return false;
		s += l + (e ? 1 : 0);
	}
	return true;
}

/* One file of a volume under dir, owned by the task's user; -1 (errno) when not made. */
static int volume_file(const char *dir, const struct drv_proto_file *f, bool secret,
		       const struct drv_task_spec *s, char *err, size_t errsz)
{
	char path[PATH_MAX];
	unsigned char *data;
	size_t n;
	mode_t mode = (mode_t)(f->mode >= 0 ? f->mode : secret ? 0600 : 0644);
	int fd, rc = 0;

	if (secret)
		mode &= 0700;
	if (drv_base64_decode(f->data, &data, &n) < 0) {
		snprintf(err, errsz, "file %s: its data is not base64", f->path);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, f->path);
	if (strchr(f->path, '/')) {
		char sub[PATH_MAX];

		snprintf(sub, sizeof(sub), "%s", path);
		*strrchr(sub, '/') = '\0';
		if (drv_mkdir_p(sub, secret ? 0700 : 0755) < 0)
			rc = -1;
	}
	fd = rc < 0 ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, n) != (ssize_t)n ||
	    (s->set_user && fchown(fd, s->uid, s->gid) < 0) || fchmod(fd, mode) < 0) {
		snprintf(err, errsz, "cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	drv_free(data);
	return rc;
}

/* The task's volumes (Secrets and ConfigMaps) as files under its
 * directory, volumes/NAME/, the task's user's; a Secret's directory and
 * files for that user alone. -1 after failing the task. */
static int task_volumes(struct drv_agent *a, struct task *t, const struct drv_proto_task *j,
			const struct drv_task_spec *s)
{
	char dir[PATH_MAX], err[PATH_MAX + 200];

	for (size_t i = 0; i < j->nvolumes; i++) {
		const struct drv_proto_volume *v = &j->volumes[i];

		if (!below(v->name, true)) {
			fail_task(t, "volume \"%s\": not a name for a directory", v->name);
			return -1;
		}
		snprintf(dir, sizeof(dir), "%s/volumes", t->dir);
		if (drv_mkdir_p(dir, 0711) < 0 ||
		    (snprintf(dir, sizeof(dir), "%s/volumes/%s", t->dir, v->name),
		     drv_mkdir_p(dir, v->secret ? 0700 : 0755) < 0) ||
		    (s->set_user && chown(dir, s->uid, s->gid) < 0)) {
			fail_task(t, "volume %s: cannot create %s: %s", v->name, dir, strerror(errno));
			return -1;
		}
		for (size_t k = 0; k < v->nfiles; k++) {
			if (!below(v->files[k].path, false)) {
				fail_task(t, "volume %s: file \"%s\" is not below its directory",
					  v->name, v->files[k].path);
				return -1;
			}
			if (volume_file(dir, &v->files[k], v->secret, s, err, sizeof(err)) < 0) {
				fail_task(t, "volume %s: %s", v->name, err);
				return -1;
			}
		}
	}
	(void)a;
	return 0;
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
	s->epoch = t->epoch;
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
	s->server_url = a->server;
	s->ca_file = a->tls_ca;
	s->nccl_socket_ifname = a->ifname;
	s->mem_limit_mib = j->mem_mib;
	s->cpu_milli = j->cpu_milli;
	s->stdout_file = j->stdout_file;
	s->stderr_file = j->stderr_file;
	s->open_append = j->open_append;
	s->set_umask = j->umask >= 0;
	s->umask = j->umask >= 0 ? (mode_t)j->umask : 0;
}

/* The task started: its limits, its GPUs busy. Caller holds a->mu. */
static void task_started(struct drv_agent *a, struct task *t, const struct drv_proto_task *j)
{
	t->state = T_RUNNING;
	t->rep_running = true;
	t->starttime = agent_proc_starttime(t->proc.pid);
	agent_mark_gpus(a, t, true);
	a->running_dirty = true;
	drv_log(&a->log, "task %s (epoch %lld) started: pid %d, GPUs %d", t->id, (long long)t->epoch,
	      (int)t->proc.pid, t->ngpus);
}

/* Records the start durably before it happens (agent_journal.c): a task
 * not in the journal is never started, so a new agent never starts it
 * twice. The shim's part of the spec too. -1 after failing the task. */
static int task_journal(struct drv_agent *a, struct task *t, const struct drv_proto_task *j,
			struct drv_task_spec *s)
{
	int64_t now = drv_mono_ms();

	t->grace_ms = j->grace_s >= 0 ? j->grace_s * 1000 : a->grace_ms / 1000 * 1000;
	t->deadline_ms = j->time_limit_s > 0 ? now + j->time_limit_s * 1000 : 0;
	/* a batch step writing to the job's own -o/-e files is not capped:
	 * they are the user's, as under Slurm (docs/agent.md) */
	t->output_max = j->output_max_bytes > 0 && !j->stdout_file ? j->output_max_bytes : 0;
	if (agent_journal_start(a, t) < 0) {
		fail_task(t, "cannot record the task in the agent's journal: %s", strerror(errno));
		return -1;
	}
	s->shim_exe = a->shim_exe;
	s->epoch = t->epoch;
	s->launch_key = t->key;
	s->lease_file = a->lease_path;
	s->lease_grace_ms = DRV_MIN(t->grace_ms, AGENT_LEASE_GRACE_MS);
	s->output_max = t->output_max;
	return 0;
}

/* srun --pty: a terminal of the size asked for, the slave for the task,
 * the master kept for GET /v1/tasks/ID/attach. -1 after failing it. */
static int task_pty(struct task *t, const struct drv_proto_task *j, struct drv_task_spec *s)
{
	struct winsize ws = { .ws_row = (unsigned short)j->pty_rows,
			      .ws_col = (unsigned short)j->pty_cols };
	int m, sl;

	if (j->runtime && !strcmp(j->runtime, "podman")) {
		fail_task(t, "--pty: a terminal for a container task is not supported");
		return -1;
	}
	if (openpty(&m, &sl, NULL, NULL, ws.ws_row && ws.ws_col ? &ws : NULL) < 0) {
		fail_task(t, "--pty: openpty: %s", strerror(errno));
		return -1;
	}
	fcntl(m, F_SETFD, FD_CLOEXEC);
	fcntl(sl, F_SETFD, FD_CLOEXEC);
	t->pty_master = m;
	s->pty = true;
	s->pty_slave = sl;
	return 0;
}

void agent_task_pty_close(struct task *t)
{
	if (t->pty_master >= 0 && !t->pty_attached)
		close(t->pty_master);
	t->pty_master = -1;
}

/* Starts the task the controller describes in j. Caller holds a->mu. */
static void start_task(struct drv_agent *a, const struct drv_proto_task *j)
{
	struct drv_task_spec s;
	struct task *t = task_add(a, j);
	struct run_as ra;
	char **argv = task_argv(j), **envv = NULL, *script = NULL;
	const char **rank_addrs = NULL;

	memset(&s, 0, sizeof(s));
	if (task_gpus(a, t, j, &s) < 0 || task_dir_and_command(a, t, j) < 0 ||
	    task_user(a, t, j, &ra, &s) < 0 || task_volumes(a, t, j, &s) < 0)
		goto out;
	envv = task_env(a, j, t);
	rank_addrs = task_rank_addrs(j);
	task_spec(a, t, j, &s);
	s.argv = j->nargv ? argv : NULL;
	s.env = envv;
	s.rank_addrs = rank_addrs;
	if (task_journal(a, t, j, &s) < 0)
		goto out;
	if (j->runtime && !strcmp(j->runtime, "podman") &&
	    agent_container_prepare(a, t, j, &s, &script) < 0)
		goto out;
	if (j->pty && task_pty(t, j, &s) < 0)
		goto out;
	if (drv_proc_start(&t->proc, &s, &a->cg, drv_mono_ms()) < 0) {
		fail_task(t, "%s", t->proc.error);
		agent_task_pty_close(t);
		goto out;
	}
	task_started(a, t, j);
out:
	if (t->state == T_FAILED)
		drv_log(&a->log, "task %s (epoch %lld) failed to start: %s", t->id, (long long)t->epoch,
		      t->reason);
	if (s.pty)
		close(s.pty_slave);   /* the task has it */
	drv_free(argv);
	strv_free(envv);
	drv_free(rank_addrs);
	drv_free(script);
}

void agent_stop_task(struct drv_agent *a, struct task *t, int64_t grace_ms, const char *why)
{
	if (t->state != T_RUNNING || t->proc.terminating)
		return;
	snprintf(t->reason, sizeof(t->reason), "%s", why);
	drv_log(&a->log, "task %s (epoch %lld): stopping (%s), grace %lld ms", t->id, (long long)t->epoch,
	      why, (long long)grace_ms);
	if (t->container)
		agent_container_stop(a, t, grace_ms);
	else
		drv_proc_terminate(&t->proc, grace_ms, drv_mono_ms());
}

/* A signal the controller sent the task (scancel -s, sbatch --signal) that
 * it has not had yet. Caller holds a->mu. */
static void signal_task(struct drv_agent *a, struct task *t, const struct drv_proto_task *j)
{
	char sn[16];

	if (!t->sig_known) {   /* adopted: whatever was sent, it was delivered */
		t->sig_known = true;
		t->sig_seen = j->signal_seq;
		return;
	}
	if (j->signal_seq <= t->sig_seen)
		return;
	t->sig_seen = j->signal_seq;
	if (j->signal <= 0 || t->state != T_RUNNING || t->proc.terminating)
		return;
	if (drv_proc_signal(&t->proc, (int)j->signal, j->signal_group) == 0)
		drv_log(&a->log, "task %s (epoch %lld): sent %s to %s", t->id, (long long)t->epoch,
			drv_signal_name((int)j->signal, sn, sizeof(sn)),
			j->signal_group ? "its processes" : "its main process");
}

/* One task of the controller's list: stop it, start it, or leave it be. */
static void apply_one(struct drv_agent *a, const struct drv_proto_task *j)
{
	struct task *t;

	if (!agent_valid_task_id(j->task_id)) {
		drv_log(&a->log, "ignoring an assignment with a bad task_id");
		return;
	}
	t = agent_find_task(a, j->task_id, j->epoch);
	if (t) {
		t->listed = true;
		/* the controller's share stands (an older agent's journal had none) */
		t->gpu_milli = agent_share_milli(j->gpu_milli);
		signal_task(a, t, j);
	}
	if (j->stop) {
		if (t)
			agent_stop_task(a, t, j->grace_s >= 0 ? j->grace_s * 1000 : a->grace_ms / 1000 * 1000,
				  j->stop_reason ? j->stop_reason : "stopped by the controller");
		return;
	}
	if (!t) {
		/* a task of the same id with an older epoch must go first */
		struct task *old = agent_find_task(a, j->task_id, -1);

		char why[320];
		int gate;

		if (old && old->state == T_RUNNING)
			agent_stop_task(a, old, 0, "superseded by a newer epoch");
		gate = agent_prolog_gate(a, j, why, sizeof(why));
		if (gate == 0)
			return;   /* the job's prolog (or last epilog) runs: applied again after */
		if (gate < 0) {
			t = task_add(a, j);
			fail_task(t, "%s", why);
			t->requeue = true;
			snprintf(t->drain, sizeof(t->drain), "%s", why);
			drv_log(&a->log, "task %s (epoch %lld) not started: %s", t->id,
				(long long)t->epoch, why);
			return;
		}
		start_task(a, j);
	}
}

/* Applies the latest desired list. Caller holds a->mu. */
void agent_apply_desired(struct drv_agent *a)
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
			agent_stop_task(a, t, 0, "not assigned to this node (fenced)");
	}
	/* forget finished tasks the controller no longer lists and that owe nothing */
	for (k = 0; k < a->ntasks;) {
		struct task *t = a->tasks[k];
		if (!t->listed && t->state != T_RUNNING && !t->rep_running && !t->rep_end &&
		    !t->pty_attached) {
			agent_task_pty_close(t);
			drv_free(t);
			a->tasks[k] = a->tasks[--a->ntasks];
			continue;
		}
		k++;
	}
}

/*
 * The output cap: a task's stdout or stderr past output_max bytes is cut
 * back to them and a line saying so follows (once); what the task writes
 * later is cut again at the next look (every second while it runs, and
 * when it ends). The task's files are opened O_APPEND, so after a cut its
 * writes land at the new end, not past a hole. The shim (shim.c) already
 * stops at the cap, writing the same line, so this finds a file of the
 * cap and that line and rewrites the same bytes: it is what holds for a
 * task started by an older agent's shim, and it says so in the log.
 */
static void cap_file(struct drv_agent *a, struct task *t, int which, const char *path)
{
	char mark[160];
	struct stat st;
	int n, fd;

	n = snprintf(mark, sizeof(mark), "\n[drover: output capped at %lld bytes "
		     "(task_output_max_bytes); later output is dropped]\n", (long long)t->output_max);
	/* a link is a Slurm batch step's own file (launch.c): the user's, never cut */
	if (lstat(path, &st) < 0 || S_ISLNK(st.st_mode) ||
	    st.st_size <= t->output_max + (t->capped[which] ? n : 0))
		return;
	if (t->capped[which]) {
		if (truncate(path, t->output_max + n) < 0)
			drv_log(&a->log, "task %s: cannot cap %s: %s", t->id, path, strerror(errno));
		return;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ftruncate(fd, t->output_max) < 0 ||
	    pwrite(fd, mark, (size_t)n, t->output_max) != n) {
		drv_log(&a->log, "task %s: cannot cap %s: %s", t->id, path, strerror(errno));
	} else {
		t->capped[which] = true;
		drv_log(&a->log, "task %s: %s capped at %lld bytes (task_output_max_bytes)", t->id,
			which ? "stderr" : "stdout", (long long)t->output_max);
	}
	if (fd >= 0)
		close(fd);
}

static void cap_output(struct drv_agent *a, struct task *t)
{
	if (t->output_max <= 0)
		return;
	cap_file(a, t, 0, t->proc.stdout_path);
	cap_file(a, t, 1, t->proc.stderr_path);
}

/* A container task's script gave up before its container ran: its image,
 * or kubelet's runAsNonRoot check (podman.c's reasons). */
static bool image_failure(const char *reason)
{
	return !strncmp(reason, "ErrImagePull", 12) || !strncmp(reason, "ImagePullBackOff", 16) ||
	       !strncmp(reason, "ErrImageNeverPull", 17) ||
	       !strncmp(reason, "CreateContainerConfigError", 26);
}

/* Reaps and enforces limits. Caller holds a->mu. Returns running count. */
int agent_reap(struct drv_agent *a)
{
	int64_t now = drv_mono_ms();
	int running = 0;
	size_t k;

	for (k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];
		char sn[16];
		if (t->state != T_RUNNING)
			continue;
		if (t->deadline_ms && now >= t->deadline_ms && !t->proc.terminating) {
			agent_stop_task(a, t, t->grace_ms > 0 ? t->grace_ms : a->grace_ms,
					"time limit reached");
			t->timed_out = true;
		}
		if (!drv_proc_poll(&t->proc, now)) {
			running++;
			cap_output(a, t);
			continue;
		}
		cap_output(a, t);   /* its last words too */
		t->state = T_EXITED;
		t->rep_end = true;
		agent_mark_gpus(a, t, false);
		a->running_dirty = true;
		agent_container_ended(a, t);
		drv_proc_cleanup(&t->proc);
		if (t->proc.error[0] && !t->reason[0])   /* the shim says why it stopped it */
			snprintf(t->reason, sizeof(t->reason), "%s", t->proc.error);
		if (t->container && image_failure(t->reason))
			t->state = T_FAILED;   /* it never ran: the job's reason says why */
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

