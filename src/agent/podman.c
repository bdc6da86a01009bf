/*
 * podman.c: the container runtime, through podman (always with runc:
 * crun, podman's default where both are installed, refuses hybrid cgroup
 * hosts). What a container task runs is a short shell script, written
 * here and run under the task's shim like any job script:
 *
 *   pull the image as the pull policy says, with retries and a backoff;
 *   podman create --rm ... (env from an env file, 0600), then rm the file;
 *   exec podman start --attach NAME
 *
 * so the container's stdout and stderr are the task's files, SIGTERM to
 * the task's process group reaches the container through podman's signal
 * proxy, and the container's exit code is the task's. A pull that fails
 * writes its reason (ErrImagePull, ImagePullBackOff, ErrImageNeverPull)
 * to the reason file; the shim puts it in the task's status.
 *
 * The start check (drv_podman_check) runs one container of the host's own
 * root filesystem through an overlay (--rootfs /:O): no image, no
 * registry, but runc, the cgroups and the ulimits tasks get.
 */
#include "drover/agent.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/dynbuf.h"
#include "drover/spec.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define SCRIPT_MAX (1 << 20)

static int64_t nofile_limit(const struct drv_podman_conf *pc)
{
	struct rlimit rl;

	if (pc->nofile > 0)
		return pc->nofile;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		return (int64_t)rl.rlim_cur;
	return 1024;
}

char **drv_podman_global_argv(const struct drv_podman_conf *pc, size_t *n)
{
	static char root[2][PATH_MAX + 16];
	char **v = drv_calloc(12, sizeof(*v));
	size_t k = 0;

	v[k++] = (char *)(pc->podman ? pc->podman : "podman");
	v[k++] = (char *)"--runtime";
	v[k++] = (char *)"runc";
	v[k++] = (char *)"--cgroup-manager";
	v[k++] = (char *)"cgroupfs";
	if (pc->root) {
		/* one agent's configuration for the process: the same every call */
		snprintf(root[0], sizeof(root[0]), "%s/storage", pc->root);
		snprintf(root[1], sizeof(root[1]), "%s/run", pc->root);
		v[k++] = (char *)"--root";
		v[k++] = root[0];
		v[k++] = (char *)"--runroot";
		v[k++] = root[1];
	}
	if (pc->storage_driver) {
		v[k++] = (char *)"--storage-driver";
		v[k++] = (char *)pc->storage_driver;
	}
	v[k] = NULL;
	if (n)
		*n = k;
	return v;
}

/* s in single quotes for sh ('\'' for a quote inside). */
static void q0(struct drv_dynbuf *b, const char *s)
{
	drv_dynbuf_addstr(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			drv_dynbuf_addstr(b, "'\\''");
		else
			drv_dynbuf_add(b, s, 1);
	}
	drv_dynbuf_addstr(b, "'");
}

/* ... after a space: the next word of a command line. */
static void q(struct drv_dynbuf *b, const char *s)
{
	drv_dynbuf_addstr(b, " ");
	q0(b, s);
}

static void qf(struct drv_dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void qf(struct drv_dynbuf *b, const char *fmt, ...)
{
	char buf[PATH_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	q(b, buf);
}

/* An env file podman reads: KEY=VALUE lines. 0600, the agent's alone. */
static int write_env_file(const struct drv_container_spec *cs, char *err, size_t errsz)
{
	FILE *f;
	int fd;

	for (char *const *e = cs->env; e && *e; e++) {
		if (strchr(*e, '\n')) {
			snprintf(err, errsz, "environment variable %.*s has a newline in its value: "
				 "podman's env file cannot carry it", (int)strcspn(*e, "="), *e);
			return DRV_EINVAL;
		}
	}
	unlink(cs->env_file);
	fd = open(cs->env_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		snprintf(err, errsz, "cannot write %s: %s", cs->env_file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return DRV_EIO;
	}
	for (char *const *e = cs->env; e && *e; e++)
		fprintf(f, "%s\n", *e);
	if (fclose(f) != 0) {
		snprintf(err, errsz, "cannot write %s: %s", cs->env_file, strerror(errno));
		return DRV_EIO;
	}
	return 0;
}

/* The pull step as the policy says: a shell function `pull`, called once. */
static void script_pull(struct drv_dynbuf *b, const struct drv_podman_conf *pc,
			const struct drv_container_spec *cs, const char *policy)
{
	int tries = pc->pull_retries > 0 ? pc->pull_retries : 3;
	int64_t backoff = pc->pull_backoff_ms > 0 ? pc->pull_backoff_ms : 2000;

	drv_dynbuf_addstr(b, "trap 'rm -f \"$ENVFILE\"' EXIT\n");
	drv_dynbuf_addstr(b, "reason() { printf '%s\\n' \"$1\" > \"$REASON\"; echo \"drover: $1\" >&2; exit 125; }\n");
	/* where the pull stands, for drover describe (the agent reports it) */
	drv_dynbuf_addstr(b, "pstate() { printf '%s\\n' \"$1\" > \"$PULL\"; }\n"
			  "pfail() { pstate \"failed: $1\"; reason \"$1\"; }\n");
	if (!strcmp(policy, "Never")) {
		drv_dynbuf_addstr(b, "\"$@\" image exists \"$IMAGE\" || pfail \"ErrImageNeverPull: "
				  "image $IMAGE is not present on node $NODE and its "
				  "imagePullPolicy is Never\"\n"
				  "pstate 'present, not pulled (imagePullPolicy Never)'\n");
		return;
	}
	if (!strcmp(policy, "IfNotPresent"))
		drv_dynbuf_addstr(b, "if \"$@\" image exists \"$IMAGE\"; then\n"
				  "  pstate 'present, not pulled (imagePullPolicy IfNotPresent)'\n"
				  "else\n");
	else
		drv_dynbuf_addstr(b, "if true; then\n");
	drv_dynbuf_addf(b, "  n=1; wait_ms=%lld\n", (long long)backoff);
	drv_dynbuf_addstr(b, "  while :; do\n"
			  "    echo \"drover: pulling $IMAGE (policy $POLICY, attempt $n of $TRIES)\" >&2\n"
			  "    pstate \"pulling (attempt $n of $TRIES, imagePullPolicy $POLICY)\"\n"
			  "    if out=$(\"$@\" pull $AUTH \"$IMAGE\" 2>&1 >/dev/null); then\n"
			  "      pstate \"pulled (attempt $n of $TRIES, imagePullPolicy $POLICY)\"; break\n"
			  "    fi\n"
			  "    msg=$(printf '%s' \"$out\" | grep -v '^Trying\\|^Getting\\|^Copying\\|^Writing\\|^Storing' | tail -n 1)\n"
			  "    case \"$out\" in\n"
			  "    *'manifest unknown'*|*'name unknown'*|*'not found'*|*'does not exist'*)\n"
			  "      pfail \"ErrImagePull: image not found: $IMAGE: $msg\";;\n"
			  "    *'unauthorized'*|*'authentication required'*|*'requested access to the resource is denied'*)\n"
			  "      pfail \"ErrImagePull: unauthorized: $IMAGE: $msg (the registry wants "
			  "credentials: --registry-auth-file)\";;\n"
			  "    esac\n"
			  "    if [ \"$n\" -ge \"$TRIES\" ]; then\n"
			  "      pfail \"ImagePullBackOff: $IMAGE: gave up after $n pulls: $msg\"\n"
			  "    fi\n"
			  "    echo \"drover: ErrImagePull: $msg (again in $((wait_ms / 1000)) s)\" >&2\n"
			  "    sleep $((wait_ms / 1000)).$((wait_ms % 1000 / 100))\n"
			  "    n=$((n + 1)); wait_ms=$((wait_ms * 2))\n"
			  "  done\n"
			  "fi\n");
	(void)cs;
	(void)tries;
}

/* podman create's options after "create". */
static void create_opts(struct drv_dynbuf *b, const struct drv_podman_conf *pc,
			const struct drv_container_spec *cs)
{
	int64_t nproc = pc->nproc > 0 ? DRV_MIN(pc->nproc, 32768) : 32768;
	int64_t nofile = nofile_limit(pc);

	drv_dynbuf_addstr(b, " --rm --pull never");
	q(b, "--name"), q(b, cs->name);
	qf(b, "--label=drover.task=%s", cs->task_id);
	qf(b, "--label=drover.job=%s", cs->job_id);
	qf(b, "--label=drover.epoch=%lld", (long long)cs->epoch);
	qf(b, "--label=drover.node=%s", cs->node);
	/* NCCL over IB/RoCE and the task's ports as on the host */
	drv_dynbuf_addstr(b, " --network host");
	if (cs->host_ipc)
		drv_dynbuf_addstr(b, " --ipc host");
	else
		drv_dynbuf_addf(b, " --ipc private --shm-size %lldm",
				(long long)(cs->shm_mib > 0 ? cs->shm_mib : 8192));
	/* podman's default ulimits fail where RLIMIT_NOFILE cannot be raised */
	drv_dynbuf_addf(b, " --ulimit nofile=%lld:%lld --ulimit nproc=%lld:%lld",
			(long long)nofile, (long long)nofile, (long long)nproc, (long long)nproc);
	drv_dynbuf_addstr(b, " --security-opt no-new-privileges");
	if (cs->set_user) {
		drv_dynbuf_addf(b, " --user %u:%u --cap-drop all", (unsigned)cs->uid, (unsigned)cs->gid);
		for (int k = 0; k < cs->ngroups && k < 64; k++)
			if (cs->groups[k] != cs->gid)
				drv_dynbuf_addf(b, " --group-add %u", (unsigned)cs->groups[k]);
	}
	if (cs->cgroup_parent && *cs->cgroup_parent)
		q(b, "--cgroup-parent"), q(b, cs->cgroup_parent);
	if (cs->mem_mib > 0 && cs->mem_in_container)
		drv_dynbuf_addf(b, " --memory %lldm --memory-swap %lldm", (long long)cs->mem_mib,
				(long long)cs->mem_mib);
	if (cs->cpu_milli > 0)
		drv_dynbuf_addf(b, " --cpus %lld.%03lld", (long long)(cs->cpu_milli / 1000),
				(long long)(cs->cpu_milli % 1000));
	for (const char *const *d = cs->devices; d && *d; d++)
		q(b, "--device"), q(b, *d);
	for (int k = 0; k < cs->nmounts; k++) {
		const struct drv_container_mount *m = &cs->mounts[k];

		if (m->tmpfs && m->tmpfs_mib > 0)
			qf(b, "--mount=type=tmpfs,destination=%s,tmpfs-size=%lldm%s",
			   m->container_path, (long long)m->tmpfs_mib, m->read_only ? ",ro" : "");
		else if (m->tmpfs)
			qf(b, "--mount=type=tmpfs,destination=%s%s", m->container_path,
			   m->read_only ? ",ro" : "");
		else
			qf(b, "--mount=type=bind,source=%s,destination=%s%s", m->host_path,
			   m->container_path, m->read_only ? ",ro" : "");
	}
	if (pc->auth_file)
		q(b, "--authfile"), q(b, pc->auth_file);
	drv_dynbuf_addstr(b, " --env-file \"$ENVFILE\"");
	if (cs->workdir && *cs->workdir)
		q(b, "--workdir"), q(b, cs->workdir);
	if (cs->ncommand > 0) {
		/* Kubernetes: command replaces ENTRYPOINT, and CMD goes with it */
		struct drv_dynbuf j = DRV_DYNBUF_INIT(SCRIPT_MAX);
		json_t *a = json_array();
		char *txt;

		for (int k = 0; k < cs->ncommand; k++)
			json_array_append_new(a, json_string(cs->command[k]));
		txt = json_dumps(a, JSON_COMPACT);
		q(b, "--entrypoint"), q(b, txt);
		free(txt);
		json_decref(a);
		drv_dynbuf_release(&j);
	}
	drv_dynbuf_addstr(b, " \"$IMAGE\"");
	for (int k = 0; k < cs->nargs; k++)
		q(b, cs->args[k]);
}

int drv_podman_script(const struct drv_podman_conf *pc, const struct drv_container_spec *cs,
		      char **out, char *err, size_t errsz)
{
	struct drv_dynbuf b = DRV_DYNBUF_INIT(SCRIPT_MAX);
	const char *policy = cs->pull_policy ? cs->pull_policy : drv_pull_policy_default(cs->image);
	size_t ng;
	char **g = drv_podman_global_argv(pc, &ng);
	int rc;

	*out = NULL;
	/* the name goes into the script's comment line too: a newline there
	 * would start a command of its own (the controller refuses such names;
	 * this holds whatever sent it) */
	for (const char *p = cs->image; p && *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f) {
			snprintf(err, errsz, "the image name has a control character (0x%02x): "
				 "not a name podman can pull", (unsigned)(unsigned char)*p);
			drv_free(g);
			return DRV_EINVAL;
		}
	rc = write_env_file(cs, err, errsz);
	if (rc < 0) {
		drv_free(g);
		return rc;
	}
	drv_dynbuf_addf(&b, "#!/bin/sh\n# drover: task %s (epoch %lld) of job %s in a container of "
			"%s (runtime podman).\n# Run by hand, these are the exact commands; the "
			"env file is removed once the container exists.\n",
			cs->task_id, (long long)cs->epoch, cs->job_id, cs->image);
	drv_dynbuf_addstr(&b, "IMAGE=");
	q0(&b, cs->image);
	drv_dynbuf_addstr(&b, "\nPOLICY=");
	q0(&b, policy);
	drv_dynbuf_addstr(&b, "\nNODE=");
	q0(&b, cs->node ? cs->node : "");
	drv_dynbuf_addstr(&b, "\nENVFILE=");
	q0(&b, cs->env_file);
	drv_dynbuf_addstr(&b, "\nREASON=");
	q0(&b, cs->reason_file ? cs->reason_file : "/dev/null");
	drv_dynbuf_addstr(&b, "\nPULL=");
	q0(&b, cs->pull_file ? cs->pull_file : "/dev/null");
	drv_dynbuf_addf(&b, "\nTRIES=%d\nAUTH=", pc->pull_retries > 0 ? pc->pull_retries : 3);
	if (pc->auth_file) {
		char a[PATH_MAX + 16];

		snprintf(a, sizeof(a), "--authfile=%s", pc->auth_file);
		q0(&b, a);
	} else
		drv_dynbuf_addstr(&b, "''");
	drv_dynbuf_addstr(&b, "\n");
	if (pc->registries_conf) {
		drv_dynbuf_addstr(&b, "CONTAINERS_REGISTRIES_CONF=");
		q0(&b, pc->registries_conf);
		drv_dynbuf_addstr(&b, "\nexport CONTAINERS_REGISTRIES_CONF\n");
	}
	drv_dynbuf_addstr(&b, "set --");
	for (size_t k = 0; k < ng; k++)
		q(&b, g[k]);
	drv_dynbuf_addstr(&b, "\n");
	script_pull(&b, pc, cs, policy);
	if (cs->non_root)   /* kubelet's check, on the image's USER */
		drv_dynbuf_addstr(&b, "u=$(\"$@\" image inspect --format '{{.Config.User}}' \"$IMAGE\")\n"
				  "case \"${u%%:*}\" in\n"
				  "''|0|root) reason \"CreateContainerConfigError: container has runAsNonRoot "
				  "and image $IMAGE will run as root (USER ${u:-not set})\";;\n"
				  "*[!0-9]*) reason \"CreateContainerConfigError: container has runAsNonRoot "
				  "and image $IMAGE has non-numeric user ($u), cannot verify user is "
				  "non-root\";;\n"
				  "esac\n");
	drv_dynbuf_addstr(&b, "\"$@\" create");
	create_opts(&b, pc, cs);
	drv_dynbuf_addstr(&b, " >/dev/null || { rc=$?; rm -f \"$ENVFILE\"; exit $rc; }\n"
			  "rm -f \"$ENVFILE\"\n");
	drv_dynbuf_addstr(&b, "exec \"$@\" start --attach");
	q(&b, cs->name);
	drv_dynbuf_addstr(&b, "\n");
	drv_free(g);
	if (drv_dynbuf_len(&b) >= SCRIPT_MAX - 1) {
		drv_dynbuf_release(&b);
		snprintf(err, errsz, "the container's command line is over %d bytes", SCRIPT_MAX);
		unlink(cs->env_file);
		return DRV_EINVAL;
	}
	*out = drv_dynbuf_take(&b, NULL);
	return 0;
}

/* --- the start check, and other podman calls at start ----------------------- */

#define OUTPUT_MAX (1 << 20)

/* Runs argv, its stdout into out (NUL-terminated, at most outsz - 1 bytes
 * kept), stderr's last line into why, at most timeout_ms. 0 when it exited
 * 0, else -1. */
static int run_output(char **argv, int64_t timeout_ms, char *out, size_t outsz, char *why,
		      size_t whysz)
{
	posix_spawn_file_actions_t fa;
	char errpath[] = "/tmp/drover-podman-XXXXXX";
	size_t len = 0;
	int pfd[2], st = -1, efd;
	pid_t pid;
	int64_t t0 = drv_mono_ms();

	out[0] = why[0] = '\0';
	efd = mkstemp(errpath);
	if (efd >= 0)
		unlink(errpath);
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		snprintf(why, whysz, "pipe: %s", strerror(errno));
		if (efd >= 0)
			close(efd);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	if (efd >= 0)
		posix_spawn_file_actions_adddup2(&fa, efd, 2);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
		snprintf(why, whysz, "cannot run %s: %s", argv[0], strerror(errno));
		posix_spawn_file_actions_destroy(&fa);
		close(pfd[0]);
		close(pfd[1]);
		if (efd >= 0)
			close(efd);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int64_t el = drv_mono_ms() - t0;
		char junk[4096];
		ssize_t n;

		if (el >= timeout_ms || poll(&p, 1, (int)(timeout_ms - el)) == 0) {
			kill(pid, SIGKILL);
			snprintf(why, whysz, "%s did not finish within %lld ms", argv[0],
				 (long long)timeout_ms);
			break;
		}
		if (len + 1 < outsz)
			n = read(pfd[0], out + len, outsz - 1 - len);
		else
			n = read(pfd[0], junk, sizeof(junk));
		if (n <= 0)
			break;
		if (len + 1 < outsz)
			len += (size_t)n;
	}
	out[len] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &st, 0) < 0)
		st = -1;
	if (efd >= 0) {
		char e[1024];
		ssize_t n = pread(efd, e, sizeof(e) - 1, 0);

		if (n > 0 && !why[0]) {
			e[n] = '\0';
			while (n > 0 && (e[n - 1] == '\n' || e[n - 1] == ' '))
				e[--n] = '\0';
			snprintf(why, whysz, "%s", strrchr(e, '\n') ? strrchr(e, '\n') + 1 : e);
		}
		close(efd);
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (!why[0])
		snprintf(why, whysz, "%s failed (status %d)", argv[0], st);
	return -1;
}

/* Runs argv with stdout and stderr into a pipe, at most timeout_ms; its
 * exit status (-1: did not finish) and the last line of its output. */
static int run_capture(char **argv, int64_t timeout_ms, char *last, size_t lastsz)
{
	posix_spawn_file_actions_t fa;
	char buf[8192];
	size_t len = 0;
	int pfd[2], st = -1;
	pid_t pid;
	struct timespec t0, t1;

	last[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
		snprintf(last, lastsz, "cannot run %s: %s", argv[0], strerror(errno));
		posix_spawn_file_actions_destroy(&fa);
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int64_t el;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		el = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		if (el >= timeout_ms || poll(&p, 1, (int)(timeout_ms - el)) == 0) {
			kill(pid, SIGKILL);
			snprintf(last, lastsz, "%s did not finish within %lld ms", argv[0],
				 (long long)timeout_ms);
			break;
		}
		n = read(pfd[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len >= sizeof(buf) - 1) {   /* keep the tail */
			memmove(buf, buf + len / 2, len - len / 2);
			len -= len / 2;
		}
	}
	close(pfd[0]);
	if (waitpid(pid, &st, 0) < 0)
		st = -1;
	buf[len] = '\0';
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	if (len && !last[0]) {
		char *nl = strrchr(buf, '\n');
		snprintf(last, lastsz, "%s", nl ? nl + 1 : buf);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int drv_podman_output(const struct drv_podman_conf *pc, const char *const *args,
		      int64_t timeout_ms, char **out, char *why, size_t whysz)
{
	size_t ng, k, na = 0;
	char **g = drv_podman_global_argv(pc, &ng), **v;
	char *buf = drv_malloc(OUTPUT_MAX + 1);
	int rc;

	while (args[na])
		na++;
	v = drv_calloc(ng + na + 1, sizeof(*v));
	for (k = 0; k < ng; k++)
		v[k] = g[k];
	for (size_t i = 0; i < na; i++)
		v[k++] = (char *)args[i];
	rc = run_output(v, timeout_ms, buf, OUTPUT_MAX + 1, why, whysz);
	drv_free(v);
	drv_free(g);
	if (rc != 0) {
		drv_free(buf);
		*out = NULL;
		return DRV_EIO;
	}
	*out = buf;
	return 0;
}

int drv_podman_check(const struct drv_podman_conf *pc, int64_t timeout_ms, char *msg,
		     size_t msgsz)
{
	char nofile[64], nproc[64], last[512], ver[128];
	int64_t nf = nofile_limit(pc), np = pc->nproc > 0 ? DRV_MIN(pc->nproc, 32768) : 32768;
	size_t ng, k;
	char **g = drv_podman_global_argv(pc, &ng);
	char **v = drv_calloc(ng + 20, sizeof(*v));
	char *vv[] = { (char *)(pc->podman ? pc->podman : "podman"), (char *)"--version", NULL };
	char *rv[] = { (char *)"runc", (char *)"--version", NULL };
	int rc;

	if (pc->registries_conf && access(pc->registries_conf, R_OK) != 0) {
		snprintf(msg, msgsz, "runtime podman unavailable: --registries-conf %s: %s",
			 pc->registries_conf, strerror(errno));
		rc = DRV_EINVAL;
		goto out;
	}
	if (run_capture(vv, timeout_ms, ver, sizeof(ver)) != 0) {
		snprintf(msg, msgsz, "runtime podman unavailable: %s (install podman and runc: "
			 "scripts/install-deps)", ver[0] ? ver : "podman is not installed");
		rc = DRV_ENOENT;
		goto out;
	}
	if (run_capture(rv, timeout_ms, last, sizeof(last)) != 0) {
		snprintf(msg, msgsz, "runtime podman unavailable: runc: %s (drover runs podman "
			 "with --runtime runc; install runc)", last[0] ? last : "not installed");
		rc = DRV_ENOENT;
		goto out;
	}
	snprintf(nofile, sizeof(nofile), "nofile=%lld:%lld", (long long)nf, (long long)nf);
	snprintf(nproc, sizeof(nproc), "nproc=%lld:%lld", (long long)np, (long long)np);
	for (k = 0; k < ng; k++)
		v[k] = g[k];
	v[k++] = (char *)"run";
	v[k++] = (char *)"--rm";
	v[k++] = (char *)"--network";
	v[k++] = (char *)"none";
	v[k++] = (char *)"--ulimit";
	v[k++] = nofile;
	v[k++] = (char *)"--ulimit";
	v[k++] = nproc;
	v[k++] = (char *)"--security-opt";
	v[k++] = (char *)"no-new-privileges";
	v[k++] = (char *)"--rootfs";
	v[k++] = (char *)"/:O";
	v[k++] = (char *)"/bin/true";
	v[k] = NULL;
	rc = run_capture(v, timeout_ms, last, sizeof(last));
	if (rc != 0) {
		snprintf(msg, msgsz, "runtime podman unavailable: a check container failed: %s",
			 last[0] ? last : "no output");
		rc = DRV_EIO;
		goto out;
	}
	snprintf(msg, msgsz, "runtime podman: a check container ran (%s, runc, ulimit %s %s, "
		 "storage %s%s%s, registries %s)", ver, nofile, nproc,
		 pc->root ? pc->root : "podman's default", pc->storage_driver ? " " : "",
		 pc->storage_driver ? pc->storage_driver : "", pc->registries_conf
		 ? pc->registries_conf : "podman's");
	rc = 0;
out:
	drv_free(v);
	drv_free(g);
	return rc;
}
