/*
 * launch.c: starting, watching and stopping one task.
 *
 * A task is a process in a session and process group of its own (setsid
 * in the child), so one kill(-pgid) reaches it and every descendant that
 * stayed in the group; where cgroup v2 limits are on, the task's cgroup
 * also catches descendants that left the group (cgroup.kill). The agent
 * is multi-threaded, so between fork and execve the child makes only
 * async-signal-safe calls; everything else (the environment, the
 * executable's path, log files, the cgroup) is prepared before.
 *
 * The child is made with clone(CLONE_VM | CLONE_VFORK), as posix_spawn
 * does, not fork: it runs on a stack of its own (in the starting thread's
 * frame) in the agent's memory until execve, so no page table is copied and no copy-on-write fault
 * follows in the agent's threads (fork cost a multi-threaded agent about
 * as much CPU as running `true` itself). The calling thread sleeps until
 * the child has exec'd or died; the child leaves which step failed and
 * its errno in memory the two share, so "command not found" and "no such
 * working directory" are reported as what they are. Because the memory is
 * shared, the child switches user with raw system calls: glibc's setuid
 * would try to reach every thread of the agent.
 *
 * The environment is built from the placement (drv_task_env): GPUs,
 * PyTorch, JAX, TensorFlow and NCCL variables, then the job's own env on
 * top. Nothing is ever passed through a shell unless the job is a script.
 */
#include "drover/agent.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sched.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *drv_signal_name(int sig, char *buf, size_t bufsz)
{
	const char *abbr = sigabbrev_np(sig);

	if (abbr)
		snprintf(buf, bufsz, "SIG%s", abbr);
	else
		snprintf(buf, bufsz, "SIG%d", sig);
	return buf;
}

/* --- environment -------------------------------------------------------- */

struct envb {
	char **v;
	size_t n, cap;
};

static void env_set(struct envb *e, const char *key, const char *val)
{
	size_t klen = strlen(key), i, len = klen + strlen(val) + 2;
	char *kv = drv_malloc(len);

	snprintf(kv, len, "%s=%s", key, val);
	for (i = 0; i < e->n; i++) {
		if (!strncmp(e->v[i], key, klen) && e->v[i][klen] == '=') {
			drv_free(e->v[i]);
			e->v[i] = kv;
			return;
		}
	}
	DRV_GROW(e->v, e->n + 2, e->cap);
	e->v[e->n++] = kv;
	e->v[e->n] = NULL;
}

static void env_setf(struct envb *e, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void env_setf(struct envb *e, const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	env_set(e, key, buf);
}

const char *drv_env_get(char *const *env, const char *key)
{
	size_t klen = strlen(key);

	for (; env && *env; env++)
		if (!strncmp(*env, key, klen) && (*env)[klen] == '=')
			return *env + klen + 1;
	return NULL;
}

void drv_env_free(char **env)
{
	char **p;

	for (p = env; p && *p; p++)
		drv_free(*p);
	drv_free(env);
}

/* "host:port", with IPv6 literals in brackets. */
static void hostport(char *buf, size_t bufsz, const char *host, int port)
{
	if (strchr(host, ':'))
		snprintf(buf, bufsz, "[%s]:%d", host, port);
	else
		snprintf(buf, bufsz, "%s:%d", host, port);
}

/*
 * TF_CONFIG as MultiWorkerMirroredStrategy reads it. Each worker needs a
 * port of its own: rank r listens on master_port + 1 + (the number of
 * lower ranks on the same host), so ranks sharing a node never collide
 * and every task computes the same list.
 */
static char *tf_config(const struct drv_task_spec *t)
{
	json_t *root = json_object(), *cluster = json_object(), *workers = json_array();
	json_t *task = json_object();
	const char *master = t->master_addr ? t->master_addr : "127.0.0.1";
	char hp[300], *s;
	int r, q;

	for (r = 0; r < t->world_size && r < 65536; r++) {
		const char *h = t->rank_addrs && t->rank_addrs[r] ? t->rank_addrs[r] : master;
		int before = 0;
		for (q = 0; q < r; q++) {
			const char *hq = t->rank_addrs && t->rank_addrs[q] ? t->rank_addrs[q] : master;
			before += !strcmp(hq, h);
		}
		hostport(hp, sizeof(hp), h, t->master_port + 1 + before);
		json_array_append_new(workers, json_string(hp));
	}
	json_object_set_new(cluster, "worker", workers);
	json_object_set_new(root, "cluster", cluster);
	json_object_set_new(task, "type", json_string("worker"));
	json_object_set_new(task, "index", json_integer(t->rank));
	json_object_set_new(root, "task", task);
	s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	return s;
}

char **drv_task_env(const struct drv_task_spec *t)
{
	static const char *const inherit[] = { "PATH", "HOME", "USER", "LOGNAME", "SHELL",
		"LANG", "LC_ALL", "TZ", "TMPDIR", "LD_LIBRARY_PATH" };
	struct envb e = { 0 };
	char gpus[DRV_GPU_MAX * 4 + 1] = "", hp[300];
	size_t i, len = 0;
	char *tf;
	int k;

	DRV_GROW(e.v, 1, e.cap);
	e.v[0] = NULL;
	for (i = 0; i < DRV_ARRAY_SIZE(inherit); i++) {
		const char *v = getenv(inherit[i]);
		if (v)
			env_set(&e, inherit[i], v);
	}
	if (!drv_env_get(e.v, "PATH"))
		env_set(&e, "PATH", "/usr/local/bin:/usr/bin:/bin");

	if (t->set_user) {
		if (t->user)
			env_set(&e, "USER", t->user), env_set(&e, "LOGNAME", t->user);
		if (t->home)
			env_set(&e, "HOME", t->home);
	}
	env_set(&e, "DROVER_JOB_ID", t->job_id ? t->job_id : "");
	env_set(&e, "DROVER_TASK_ID", t->task_id ? t->task_id : "");
	if (t->epoch > 0)   /* one per start of the job: tells attempts apart */
		env_setf(&e, "DROVER_EPOCH", "%lld", (long long)t->epoch);
	if (t->node_name)
		env_set(&e, "DROVER_NODE", t->node_name);
	if (t->image && *t->image)
		env_set(&e, "DROVER_IMAGE", t->image);
	if (t->server_url && *t->server_url) {
		const char *comma = strchr(t->server_url, ',');

		if (comma) {
			char *first = drv_strndup(t->server_url, (size_t)(comma - t->server_url));

			env_set(&e, "DROVER_SERVER", first);
			drv_free(first);
		} else {
			env_set(&e, "DROVER_SERVER", t->server_url);
		}
	}
	if (t->ca_file && *t->ca_file)
		env_set(&e, "DROVER_CA_FILE", t->ca_file);

	for (k = 0; k < t->ngpus && k < DRV_GPU_MAX; k++)
		len += (size_t)snprintf(gpus + len, sizeof(gpus) - len, "%s%d", k ? "," : "",
					t->gpus[k]);
	env_set(&e, "CUDA_VISIBLE_DEVICES", gpus);
	env_set(&e, "NVIDIA_VISIBLE_DEVICES", t->ngpus ? gpus : "void");

	if (t->world_size > 0) {
		const char *master = t->master_addr ? t->master_addr : "127.0.0.1";
		/* PyTorch (torchrun's names) */
		env_set(&e, "MASTER_ADDR", master);
		env_setf(&e, "MASTER_PORT", "%d", t->master_port);
		env_setf(&e, "WORLD_SIZE", "%d", t->world_size);
		env_setf(&e, "RANK", "%d", t->rank);
		env_setf(&e, "LOCAL_RANK", "%d", t->local_rank);
		env_setf(&e, "LOCAL_WORLD_SIZE", "%d", t->local_world_size);
		env_setf(&e, "NODE_RANK", "%d", t->node_rank);
		/* JAX (jax.distributed.initialize() reads these) */
		hostport(hp, sizeof(hp), master, t->master_port);
		env_set(&e, "JAX_COORDINATOR_ADDRESS", hp);
		env_setf(&e, "JAX_NUM_PROCESSES", "%d", t->world_size);
		env_setf(&e, "JAX_PROCESS_ID", "%d", t->rank);
		/* TensorFlow */
		tf = tf_config(t);
		env_set(&e, "TF_CONFIG", tf);
		free(tf);
	}
	/* NCCL from the placement: InfiniBand only between nodes that have it */
	if (t->nnodes <= 1 || !t->nccl_ib_hca || !*t->nccl_ib_hca)
		env_set(&e, "NCCL_IB_DISABLE", "1");
	else
		env_set(&e, "NCCL_IB_HCA", t->nccl_ib_hca);
	if (t->nccl_socket_ifname && *t->nccl_socket_ifname)
		env_set(&e, "NCCL_SOCKET_IFNAME", t->nccl_socket_ifname);

	/* the job's own env wins */
	for (i = 0; t->env && t->env[i]; i++) {
		const char *eq = strchr(t->env[i], '=');
		char *key;
		if (!eq || eq == t->env[i])
			continue;
		key = drv_strndup(t->env[i], (size_t)(eq - t->env[i]));
		env_set(&e, key, eq + 1);
		drv_free(key);
	}
	return e.v;
}

/* --- starting ------------------------------------------------------------ */

enum { STAGE_CGROUP = 1, STAGE_CHDIR, STAGE_EXEC, STAGE_SETSID, STAGE_USER, STAGE_STDOUT,
       STAGE_STDERR };

/* What the child needs, prepared by the parent; stage and err come back. */
struct child_args {
	const char *exe, *workdir;
	char *const *argv;
	char *const *env;
	int out, errfd, devnull, procs;
	const struct drv_task_spec *t;
	volatile int stage;
	volatile int err;
};

/* A batch step's -o/-e files, opened as the task's user (after the
 * switch) with its umask, into a->out and a->errfd; -1 with a->stage. */
static int child_user_files(struct child_args *a)
{
	const struct drv_task_spec *t = a->t;
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (t->open_append ? O_APPEND : O_TRUNC);

	if (!t->stdout_file)
		return 0;
	a->out = open(t->stdout_file, flags, 0666);
	if (a->out < 0) {
		a->stage = STAGE_STDOUT;
		return -1;
	}
	a->errfd = t->stderr_file ? open(t->stderr_file, flags, 0666) : a->out;
	if (a->errfd < 0) {
		a->stage = STAGE_STDERR;
		return -1;
	}
	return 0;
}

/* The child, until execve: system calls only, nothing that locks or
 * allocates, and every write to memory goes to a (the parent reads it). */
static int child_main(void *arg)
{
	struct child_args *a = arg;
	const struct drv_task_spec *t = a->t;
	struct sigaction sa;
	sigset_t none;
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	if (setsid() < 0) {
		a->stage = STAGE_SETSID;
		goto fail;
	}
	/* srun --pty: the terminal is the new session's */
	if (t->pty && ioctl(a->devnull, TIOCSCTTY, 0) < 0) {
		a->stage = STAGE_SETSID;
		goto fail;
	}
	if (a->procs >= 0 && write(a->procs, "0", 1) < 0) {
		a->stage = STAGE_CGROUP;
		goto fail;
	}
	if (t->set_umask)
		umask(t->umask);
	if (t->set_user) {
		if (syscall(SYS_setgroups, (size_t)t->ngroups, t->groups) < 0 ||
		    syscall(SYS_setgid, t->gid) < 0 || syscall(SYS_setuid, t->uid) < 0) {
			a->stage = STAGE_USER;
			goto fail;
		}
	}
	if (chdir(a->workdir) < 0) {
		a->stage = STAGE_CHDIR;
		goto fail;
	}
	if (child_user_files(a) < 0)
		goto fail;
	dup2(a->devnull, 0);
	dup2(a->out, 1);
	dup2(a->errfd, 2);
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(a->exe, a->argv, a->env);
	a->stage = STAGE_EXEC;
fail:
	a->err = errno;
	_exit(127);
}

/* The child's stack lives in the parent's frame: the parent's thread is
 * suspended (CLONE_VFORK) until the child has exec'd or died, so nothing
 * else uses it, and no mmap/munmap (a TLB shootdown across the agent's
 * threads) is paid per task. The child's calls need a few KiB. */
#define CHILD_STACK (64 * 1024)

/* Looks cmd up in path ("a:b:c"); writes the executable's path to out. */
static int find_in_path(const char *cmd, const char *path, char *out, size_t outsz)
{
	const char *p = path;

	while (p && *p) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		struct stat st;
		if (n == 0)
			snprintf(out, outsz, "./%s", cmd);
		else
			snprintf(out, outsz, "%.*s/%s", (int)n, p, cmd);
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		p = colon ? colon + 1 : NULL;
	}
	return -1;
}

/*
 * The script is the task's own: 0700 and, when the task runs as another
 * user, owned by that user, who must read it (and execute it, for a #!
 * script) after the switch.
 */
static int write_script(const char *path, const struct drv_task_spec *t, char *err,
			size_t errsz)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	const char *body = t->script;
	size_t len = strlen(body), off = 0;

	if (fd < 0) {
		snprintf(err, errsz, "cannot write the job script %s: %s", path, strerror(errno));
		return DRV_EIO;
	}
	fchmod(fd, 0700);
	if (t->set_user && fchown(fd, t->uid, t->gid) < 0) {
		snprintf(err, errsz, "cannot give the job script %s to uid %d: %s", path,
			 (int)t->uid, strerror(errno));
		close(fd);
		return DRV_EIO;
	}
	while (off < len) {
		ssize_t n = write(fd, body + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errsz, "cannot write the job script %s: %s", path,
				 strerror(errno));
			close(fd);
			return DRV_EIO;
		}
		off += (size_t)n;
	}
	close(fd);
	return 0;
}

/* The task's files: stdout, stderr, /dev/null for stdin, and the
 * cgroup's cgroup.procs the child joins (-1 without a cgroup). */
struct task_fds {
	int out, err, devnull, procs;
};

static void task_fds_close(struct task_fds *f)
{
	int *all[] = { &f->out, &f->err, &f->devnull, &f->procs };

	for (size_t i = 0; i < DRV_ARRAY_SIZE(all); i++)
		if (*all[i] >= 0)
			close(*all[i]);
}

/*
 * What to execute: the script (written to LOG_DIR/ID.script, run by its #!
 * line or /bin/sh) or argv, with argv[0] looked up in the task's PATH into
 * exe. Returns 0 and *argvp, or an error with p->error set.
 */
static int task_command(struct drv_proc *p, const struct drv_task_spec *t, char **env,
			const char *log_dir, char *script_path, char **script_argv,
			char *exe, size_t exesz, char *const **argvp)
{
	char *const *argv = t->argv;
	int rc;

	if (t->script) {
		snprintf(script_path, PATH_MAX, "%s/%s.script", log_dir, t->task_id);
		rc = write_script(script_path, t, p->error, sizeof(p->error));
		if (rc < 0)
			return rc;
		script_argv[0] = !strncmp(t->script, "#!", 2) ? script_path : (char *)"/bin/sh";
		script_argv[1] = !strncmp(t->script, "#!", 2) ? NULL : script_path;
		script_argv[2] = NULL;
		argv = script_argv;
	}
	if (!argv || !argv[0] || !argv[0][0]) {
		snprintf(p->error, sizeof(p->error), "the task has no command to run");
		return DRV_EINVAL;
	}
	if (strchr(argv[0], '/')) {
		snprintf(exe, exesz, "%s", argv[0]);
	} else if (find_in_path(argv[0], drv_env_get(env, "PATH"), exe, exesz) < 0) {
		snprintf(p->error, sizeof(p->error), "command not found: %s (PATH=%s)", argv[0],
			 drv_env_get(env, "PATH"));
		return DRV_ENOENT;
	}
	*argvp = argv;
	return 0;
}

/*
 * link -> target, owned by the task's user: the logs route reads through
 * it only a regular file that this user owns (agent_routes.c), so a link
 * the user turns towards another's file shows nothing.
 */
static int user_file_link(const struct drv_task_spec *t, const char *target, const char *link)
{
	if (unlink(link) < 0 && errno != ENOENT)
		return -1;
	if (symlink(target, link) < 0)
		return -1;
	if (t->set_user && lchown(link, t->uid, t->gid) < 0)
		return -1;
	return 0;
}

/* Opens the task's log files and its cgroup; an error with p->error set. */
static int task_open_files(struct drv_proc *p, const struct drv_task_spec *t,
			   const struct drv_cgroup *cg, const char *log_dir, struct task_fds *f)
{
	char cgerr[512], procs_path[PATH_MAX + 16];

	/* the agent's copies, its alone (0600 from the start, never widened);
	 * O_APPEND: after the output cap cuts a file, writes go on at its end.
	 * A batch step's own files: links to them (the child opens them) */
	if (t->stdout_file) {
		if (user_file_link(t, t->stdout_file, p->stdout_path) < 0 ||
		    (t->stderr_file && user_file_link(t, t->stderr_file, p->stderr_path) < 0)) {
			snprintf(p->error, sizeof(p->error), "cannot link the job's output file in "
				 "%s: %s", log_dir, strerror(errno));
			return DRV_EIO;
		}
		f->out = open("/dev/null", O_WRONLY | O_CLOEXEC);
	} else {
		f->out = open(p->stdout_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
			      0600);
	}
	f->err = t->stderr_file ? open("/dev/null", O_WRONLY | O_CLOEXEC)
		 : open(p->stderr_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	f->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (f->out < 0 || f->err < 0 || f->devnull < 0) {
		snprintf(p->error, sizeof(p->error), "cannot open the task's log files in %s: %s",
			 log_dir, strerror(errno));
		return DRV_EIO;
	}
	cgerr[0] = '\0';
	if (drv_cgroup_make_task(cg, t->task_id, t->mem_limit_mib, t->cpu_milli, p->cgroup,
				 sizeof(p->cgroup), cgerr, sizeof(cgerr)) < 0) {
		snprintf(p->error, sizeof(p->error), "%s", cgerr);
		return DRV_EIO;
	}
	if (!p->cgroup[0])
		return 0;
	snprintf(procs_path, sizeof(procs_path), "%s/cgroup.procs", p->cgroup);
	f->procs = open(procs_path, O_WRONLY | O_CLOEXEC);
	if (f->procs < 0) {
		snprintf(p->error, sizeof(p->error), "cannot open %s: %s", procs_path,
			 strerror(errno));
		return DRV_EIO;
	}
	return 0;
}

/* The child says which step failed: p->error names it. */
static void child_failed(struct drv_proc *p, const struct drv_task_spec *t,
			 const struct child_args *ca)
{
	switch (ca->stage) {
	case STAGE_CHDIR:
		snprintf(p->error, sizeof(p->error), "cannot enter working directory %s: %s",
			 ca->workdir, strerror(ca->err));
		break;
	case STAGE_CGROUP:
		snprintf(p->error, sizeof(p->error), "cannot join cgroup %s: %s", p->cgroup,
			 strerror(ca->err));
		break;
	case STAGE_USER:
		snprintf(p->error, sizeof(p->error), "cannot switch to user %s (uid %d): %s",
			 t->user ? t->user : "?", (int)t->uid, strerror(ca->err));
		break;
	case STAGE_SETSID:
		snprintf(p->error, sizeof(p->error), "setsid: %s", strerror(ca->err));
		break;
	case STAGE_STDOUT:
	case STAGE_STDERR:
		snprintf(p->error, sizeof(p->error), "cannot open the job's %s file %s: %s",
			 ca->stage == STAGE_STDOUT ? "output" : "error",
			 ca->stage == STAGE_STDOUT ? t->stdout_file : t->stderr_file,
			 strerror(ca->err));
		break;
	default:
		snprintf(p->error, sizeof(p->error), "cannot execute %s: %s", ca->exe,
			 strerror(ca->err));
	}
}

/* clone(CLONE_VM|CLONE_VFORK): returns once the child exec'd or failed
 * (ca->stage says where); the pid, or -1 with ca->err. */
static pid_t task_clone(struct child_args *ca)
{
	char stack[CHILD_STACK] __attribute__((aligned(64)));
	sigset_t all, old;
	pid_t pid;

	/* no handler of the agent's may run on the child's stack */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(child_main, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, ca);
	if (pid < 0)
		ca->err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pid;
}

/* The shim's argv around the task's (docs: src/agent/shim.c); the
 * numbers live in nums. Free the array only. */
static char **shim_argv(struct drv_proc *p, const struct drv_task_spec *t, const char *log_dir,
			const char *exe, char *const *argv, char nums[3][48])
{
	size_t n = 0, k;
	char **v;

	for (k = 0; argv[k]; k++)
		;
	v = drv_calloc(k + 12, sizeof(*v));
	snprintf(nums[0], 48, "%s", t->launch_key ? t->launch_key : "0");
	snprintf(nums[1], 48, "%lld", (long long)t->lease_grace_ms);
	snprintf(nums[2], 48, "%lld", (long long)(t->output_max > 0 ? t->output_max : 0));
	v[n++] = (char *)"drover";
	v[n++] = (char *)"task-shim";
	v[n++] = (char *)t->task_id;
	v[n++] = nums[0];
	v[n++] = (char *)log_dir;
	v[n++] = (char *)(t->lease_file ? t->lease_file : "-");
	v[n++] = nums[1];
	v[n++] = p->cgroup[0] ? p->cgroup : (char *)"-";
	v[n++] = nums[2];
	v[n++] = (char *)"--";
	v[n++] = (char *)exe;
	for (k = 0; argv[k]; k++)
		v[n++] = argv[k];
	return v;
}

int drv_proc_start(struct drv_proc *p, const struct drv_task_spec *t,
		   const struct drv_cgroup *cg, int64_t now_ms)
{
	char exe[PATH_MAX], task_exe[PATH_MAX], script_path[PATH_MAX], *script_argv[3];
	const char *log_dir = t->log_dir ? t->log_dir : ".";
	struct task_fds f = { -1, -1, -1, -1 };
	struct child_args ca;
	char *const *argv = NULL;
	char **env = NULL, **sargv = NULL, nums[3][48];
	pid_t pid;
	int rc;

	memset(p, 0, sizeof(*p));
	p->exit_code = -1;
	p->cpu_us = p->mem_peak_bytes = -1;
	p->pidfd = -1;
	p->state = DRV_PROC_FAILED;
	if (drv_mkdir_p(log_dir, 0700) < 0) {
		snprintf(p->error, sizeof(p->error), "cannot create log directory %s: %s", log_dir,
			 strerror(errno));
		return DRV_EIO;
	}
	snprintf(p->stdout_path, sizeof(p->stdout_path), "%s/%s.out", log_dir, t->task_id);
	snprintf(p->stderr_path, sizeof(p->stderr_path), "%s/%s.err", log_dir, t->task_id);
	env = drv_task_env(t);
	rc = task_command(p, t, env, log_dir, script_path, script_argv, exe, sizeof(exe), &argv);
	if (rc == 0)
		rc = task_open_files(p, t, cg, log_dir, &f);
	if (rc < 0)
		goto out;
	if (t->shim_exe) {
		char pidfile[PATH_MAX];

		p->shim = true;
		drv_shim_paths(log_dir, t->task_id, t->launch_key ? t->launch_key : "0",
			       p->status_path, pidfile, PATH_MAX);
		snprintf(task_exe, sizeof(task_exe), "%s", exe);
		sargv = shim_argv(p, t, log_dir, task_exe, argv, nums);
		argv = sargv;
		snprintf(exe, sizeof(exe), "%s", t->shim_exe);
	}
	ca = (struct child_args){ .exe = exe, .workdir = t->workdir && *t->workdir ? t->workdir
									       : log_dir,
				  .argv = argv, .env = env, .out = f.out, .errfd = f.err,
				  .devnull = f.devnull, .procs = f.procs, .t = t };
	if (t->pty)
		ca.out = ca.errfd = ca.devnull = t->pty_slave;
	pid = task_clone(&ca);
	if (pid < 0) {
		snprintf(p->error, sizeof(p->error), "clone: %s", strerror(ca.err));
		rc = DRV_EIO;
		goto out;
	}
	p->pid = pid;
	p->started_ms = now_ms;
	if (ca.stage) {
		int st;

		waitpid(pid, &st, 0);
		child_failed(p, t, &ca);
		p->pid = 0;
		drv_proc_cleanup(p);
		rc = ca.err == ENOENT ? DRV_ENOENT : DRV_EIO;
		goto out;
	}
	p->state = DRV_PROC_RUNNING;
	/* lets a supervisor sleep until the exit instead of polling for it;
	 * without one (Linux before 5.3) the caller polls */
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd >= 0)
		fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
out:
	task_fds_close(&f);
	drv_env_free(env);
	drv_free(sargv);
	return rc;
}

int drv_proc_adopt(struct drv_proc *p, pid_t pid, const char *status_path, const char *cgroup,
		   int64_t now_ms)
{
	memset(p, 0, sizeof(*p));
	p->exit_code = -1;
	p->cpu_us = p->mem_peak_bytes = -1;
	p->pid = pid;
	p->shim = p->adopted = true;
	p->state = DRV_PROC_RUNNING;
	p->started_ms = now_ms;
	snprintf(p->status_path, sizeof(p->status_path), "%s", status_path);
	snprintf(p->cgroup, sizeof(p->cgroup), "%s", cgroup ? cgroup : "");
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd >= 0)
		fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
	else if (errno == ESRCH)
		return DRV_ENOENT;
	return 0;
}

/* --- watching and stopping ---------------------------------------------- */

static void kill_group(struct drv_proc *p, int sig)
{
	if (p->pid > 0)
		kill(-p->pid, sig);
}

/* Whether an adopted shim (not our child: no waitpid) has ended. */
static bool adopted_ended(const struct drv_proc *p)
{
	struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

	if (p->pidfd >= 0)
		return poll(&pf, 1, 0) > 0;
	return kill(p->pid, 0) < 0 && errno == ESRCH;
}

void rusage_into(struct drv_proc *p, const struct rusage *ru)
{
	int64_t us = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec +
		     (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;

	p->cpu_us = DRV_MAX(p->cpu_us, us);
	p->mem_peak_bytes = DRV_MAX(p->mem_peak_bytes, (int64_t)ru->ru_maxrss * 1024);
}

/* Whether the task ended: 1 (with *st from waitpid when have_st), 0 not
 * yet, -1 when the status is lost (reaped by someone else). */
static int proc_ended(struct drv_proc *p, int *st, bool *have_st)
{
	struct rusage ru;
	pid_t r;

	*have_st = false;
	if (p->adopted)
		return adopted_ended(p) ? 1 : 0;
	r = wait4(p->pid, st, WNOHANG, &ru);
	if (r > 0 && !p->shim)    /* a shim's own rusage is not the task's */
		rusage_into(p, &ru);
	if (r == 0 || (r < 0 && errno == EINTR))
		return 0;
	if (r < 0)
		return -1;
	*have_st = true;
	return 1;
}

/* How the task ended, from the shim's status file; without one, from
 * the shim's own end (a SIGKILL to the group ends it with the task). */
static void read_end(struct drv_proc *p, int st, bool have_st)
{
	if (have_st && WIFEXITED(st))
		p->exit_code = WEXITSTATUS(st);
	else if (have_st && WIFSIGNALED(st))
		p->signal = WTERMSIG(st);
	if (p->shim && drv_shim_read_status(p->status_path, p) == 0)
		return;
	if (!have_st)
		snprintf(p->error, sizeof(p->error), p->adopted
			 ? "the task's shim ended without recording how the task ended (killed "
			   "with it?)"
			 : "the task's exit status was lost");
}

int drv_proc_poll(struct drv_proc *p, int64_t now_ms)
{
	bool have_st;
	int st = 0, r;

	if (p->state != DRV_PROC_RUNNING)
		return 1;
	r = proc_ended(p, &st, &have_st);
	if (r == 0) {
		if (p->terminating && now_ms >= p->kill_at_ms) {
			kill_group(p, SIGKILL);
			drv_cgroup_kill(p->cgroup);
		}
		return 0;
	}
	p->state = DRV_PROC_EXITED;
	p->ended_ms = now_ms;
	if (p->pidfd >= 0) {
		close(p->pidfd);
		p->pidfd = -1;
	}
	p->exit_code = -1;
	read_end(p, st, have_st);
	p->oom_killed |= drv_cgroup_oom_kills(p->cgroup) > 0;
	{
		int64_t cpu, mem;   /* the cgroup's, before it goes */

		drv_cgroup_usage(p->cgroup, &cpu, &mem);
		p->cpu_us = DRV_MAX(p->cpu_us, cpu);
		p->mem_peak_bytes = DRV_MAX(p->mem_peak_bytes, mem);
	}
	/* the task is over: nothing it started outlives it (an adopted shim
	 * killed its group itself, and its pid, reaped elsewhere, may be
	 * another's by now) */
	if (!p->adopted)
		kill_group(p, SIGKILL);
	drv_cgroup_kill(p->cgroup);
	return 1;
}

void drv_proc_terminate(struct drv_proc *p, int64_t grace_ms, int64_t now_ms)
{
	if (p->state != DRV_PROC_RUNNING)
		return;
	if (grace_ms <= 0) {
		kill_group(p, SIGKILL);
		drv_cgroup_kill(p->cgroup);
		p->terminating = true;
		p->kill_at_ms = now_ms;
		return;
	}
	if (p->terminating)
		return;
	p->terminating = true;
	p->kill_at_ms = now_ms + grace_ms;
	kill_group(p, SIGTERM);
	kill_group(p, SIGCONT); /* a stopped task must see its SIGTERM */
}

int drv_proc_signal(struct drv_proc *p, int sig, bool group)
{
	union sigval v = { .sival_int = DRV_SHIM_FORWARD };
	int rc;

	if (p->state != DRV_PROC_RUNNING || p->pid <= 0)
		return DRV_ENOENT;
	if (group)
		rc = kill(-p->pid, sig);
	else if (p->shim)
		rc = sigqueue(p->pid, sig, v);
	else
		rc = kill(p->pid, sig);
	return rc < 0 ? DRV_ENOENT : 0;
}

void drv_proc_cleanup(struct drv_proc *p)
{
	int i;

	if (!p->cgroup[0])
		return;
	/* the kernel empties the cgroup shortly after the last process dies */
	for (i = 0; i < 50; i++) {
		if (rmdir(p->cgroup) == 0 || errno == ENOENT)
			break;
		if (errno != EBUSY)
			break;
		usleep(10000);
	}
}
