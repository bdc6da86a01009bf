/*
 * agent_container.c: the agent's side of containers (the podman runtime,
 * podman.c): choosing the runtime at start (--runtime host|podman|auto and
 * the start check), turning an assignment into the container's script,
 * stopping a container with podman stop and the task's grace, removing it
 * once the task is over, and pruning images when the image store's disk
 * is fuller than the threshold, as kubelet's image GC does.
 *
 * podman calls other than the task's own (stop, rm, image prune) run as
 * helper processes the supervisor reaps: nothing here waits for podman
 * with the agent's mutex held, except the start check before the threads.
 */
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/dynbuf.h"
#include "drover/fsutil.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char *dup_or_null(const char *s)
{
	return s ? drv_strdup(s) : NULL;
}

/* The registry credentials file: readable, a regular file, and no one's
 * but its owner's (CONTRACTS.md section 6, as for tokens). */
static bool auth_file_refused(const char *path, char *err, size_t errsz)
{
	struct stat st;

	if (stat(path, &st) < 0 || access(path, R_OK) != 0) {
		snprintf(err, errsz, "--registry-auth-file %s: %s", path, strerror(errno));
		return true;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		snprintf(err, errsz, "--registry-auth-file %s: %s mode 0%o: it holds registry "
			 "credentials, so group and others may not read it (chmod 600)", path,
			 S_ISREG(st.st_mode) ? "a file of" : "not a regular file,",
			 (unsigned)(st.st_mode & 07777));
		return true;
	}
	return false;
}

/* The fake GPUs' CDI spec: a device per GPU, named by its index, whose
 * only edit is DROVER_FAKE_GPU_<index>=<uuid> in the container's env. */
static int put_fake_cdi(FILE *f, void *arg)
{
	const struct drv_agent *a = arg;

	fprintf(f, "{\"cdiVersion\": \"0.5.0\", \"kind\": \"%s\", \"devices\": [", a->fake_cdi_kind);
	for (int k = 0; k < a->gpus.ngpus; k++)
		fprintf(f, "%s{\"name\": \"%d\", \"containerEdits\": {\"env\": "
			"[\"DROVER_FAKE_GPU_%d=%s\"]}}", k ? ", " : "", a->gpus.gpus[k].index,
			a->gpus.gpus[k].index, a->gpus.gpus[k].uuid);
	fprintf(f, "], \"containerEdits\": {}}\n");
	return 0;
}

/*
 * With fake GPUs, a CDI spec of the agent's own, so that a container
 * task's command has the shape it has on a GPU node (--device KIND=NAME,
 * exactly the placement's GPUs), the devices' edits being env lines only.
 * podman reads specs only from /etc/cdi and /var/run/cdi, machine-wide:
 * the kind and file are this agent's alone (drover.io/fakegpu-HASH, HASH
 * of its state directory), written at start and removed at stop. Where
 * it cannot be written (an agent not root) no devices are passed, as the
 * log says.
 */
static void fake_cdi_write(struct drv_agent *a)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = a->state_dir; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	snprintf(a->fake_cdi_kind, sizeof(a->fake_cdi_kind), "drover.io/fakegpu-%012llx",
		 (unsigned long long)(h & 0xffffffffffffull));
	snprintf(a->fake_cdi_file, sizeof(a->fake_cdi_file), "/var/run/cdi/drover-fake-%012llx.json",
		 (unsigned long long)(h & 0xffffffffffffull));
	if (drv_mkdir_p("/var/run/cdi", 0755) < 0 ||
	    drv_file_write_durable(a->fake_cdi_file, 0644, put_fake_cdi, a) < 0) {
		drv_log(&a->log, "fake GPUs: cannot write the CDI spec %s (%s); containers get no "
			"GPU devices", a->fake_cdi_file, strerror(errno));
		a->fake_cdi_kind[0] = a->fake_cdi_file[0] = '\0';
		return;
	}
	drv_log(&a->log, "fake GPUs: CDI spec %s, devices %s=INDEX", a->fake_cdi_file,
		a->fake_cdi_kind);
}

int agent_runtime_setup(struct drv_agent *a, const struct drv_agent_config *cfg, char *err,
			size_t errsz)
{
	const char *rt = cfg->runtime ? cfg->runtime : "host";
	char msg[700];

	a->podman = cfg->podman;
	a->podman.podman = dup_or_null(cfg->podman.podman);
	a->podman.root = dup_or_null(cfg->podman.root);
	a->podman.storage_driver = dup_or_null(cfg->podman.storage_driver);
	a->podman.registries_conf = dup_or_null(cfg->podman.registries_conf);
	a->podman.auth_file = dup_or_null(cfg->podman.auth_file);
	if (!strcmp(rt, "host")) {
		snprintf(a->runtime_line, sizeof(a->runtime_line), "runtime host: tasks run as "
			 "processes; jobs that need a container wait for a podman node");
		drv_log(&a->log, "%s", a->runtime_line);
		return 0;
	}
	if (a->podman.auth_file && auth_file_refused(a->podman.auth_file, err, errsz))
		return DRV_EINVAL;
	a->podman_on = drv_podman_check(&a->podman, 120000, msg, sizeof(msg)) == 0;
	if (!a->podman_on && !strcmp(rt, "podman")) {
		snprintf(err, errsz, "--runtime podman: %s", msg);
		return DRV_EIO;
	}
	snprintf(a->runtime_line, sizeof(a->runtime_line), "%s%s%s",
		 !strcmp(rt, "auto") ? (a->podman_on ? "runtime auto: podman; " :
					"runtime auto: host, since ") : "", msg,
		 a->podman_on ? "" : "");
	drv_log(&a->log, "%s", a->runtime_line);
	if (a->podman_on && a->backend && !strcmp(a->backend, "fake") && a->gpus.ngpus > 0)
		fake_cdi_write(a);
	return 0;
}

/* runc made the agent's drover-tasks-PID in every v1 hierarchy, not only
 * the memory one the agent made (cgroup.c removes that): empty ones go. */
static void v1_parents_remove(const struct drv_agent *a)
{
	static const char *const ctl[] = { "blkio", "cpu", "cpuacct", "cpuset", "devices",
		"freezer", "pids", "systemd", "unified", "net_cls", "perf_event", "hugetlb" };
	const char *root = "/sys/fs/cgroup/memory";
	char p[PATH_MAX + 64];

	if (!a->podman_on || !a->cg.enabled || a->cg.version != 1 ||
	    strncmp(a->cg.base, root, strlen(root)))
		return;
	for (size_t i = 0; i < DRV_ARRAY_SIZE(ctl); i++) {
		snprintf(p, sizeof(p), "/sys/fs/cgroup/%s%s", ctl[i], a->cg.base + strlen(root));
		rmdir(p);
	}
}

void agent_runtime_release(struct drv_agent *a)
{
	int st;

	for (int k = 0; k < a->nhelpers; k++)
		waitpid(a->helpers[k], &st, 0);
	a->nhelpers = 0;
	if (a->fake_cdi_file[0])
		unlink(a->fake_cdi_file);
	v1_parents_remove(a);
	drv_free((char *)a->podman.podman);
	drv_free((char *)a->podman.root);
	drv_free((char *)a->podman.storage_driver);
	drv_free((char *)a->podman.registries_conf);
	drv_free((char *)a->podman.auth_file);
	memset(&a->podman, 0, sizeof(a->podman));
}

/* --- helpers ---------------------------------------------------------------- */

void agent_helpers_reap(struct drv_agent *a)
{
	for (int k = 0; k < a->nhelpers;) {
		int st;
		pid_t r = waitpid(a->helpers[k], &st, WNOHANG);

		if (r == a->helpers[k] || (r < 0 && errno == ECHILD)) {
			a->helpers[k] = a->helpers[--a->nhelpers];
			continue;
		}
		k++;
	}
}

/* Runs /bin/sh -c script in the background (output dropped); the agent's
 * log has the line. When 64 run already, waits for the oldest first. */
static void helper(struct drv_agent *a, const char *what, const char *script)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, NULL };
	pid_t pid;
	int st;

	agent_helpers_reap(a);
	if (a->nhelpers == (int)DRV_ARRAY_SIZE(a->helpers)) {
		waitpid(a->helpers[0], &st, 0);
		a->helpers[0] = a->helpers[--a->nhelpers];
	}
	drv_log(&a->log, "%s: %s", what, script);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ) == 0)
		a->helpers[a->nhelpers++] = pid;
	else
		drv_log(&a->log, "%s: cannot run /bin/sh: %s", what, strerror(errno));
	posix_spawn_file_actions_destroy(&fa);
}

/* s in single quotes, appended to buf. */
static void shq(char *buf, size_t sz, const char *s)
{
	size_t n = strlen(buf);

	if (n + 3 >= sz)
		return;
	buf[n++] = ' ';
	buf[n++] = '\'';
	for (; *s && n + 5 < sz; s++) {
		if (*s == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *s;
		}
	}
	buf[n++] = '\'';
	buf[n] = '\0';
}

/* "podman --runtime runc ..." quoted, into buf. */
static void podman_words(const struct drv_agent *a, char *buf, size_t sz)
{
	size_t n;
	char **g = drv_podman_global_argv(&a->podman, &n);

	buf[0] = '\0';
	for (size_t k = 0; k < n; k++)
		shq(buf, sz, g[k]);
	drv_free(g);
}

/* --- one task --------------------------------------------------------------- */

/* The agent's own variables a host task inherits: in a container the
 * image's win, unless the job itself names them. */
static bool host_only(const char *kv, char *const *job_env)
{
	static const char *const names[] = { "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG",
		"LC_ALL", "TZ", "TMPDIR", "LD_LIBRARY_PATH" };
	size_t n = strcspn(kv, "=");

	for (size_t i = 0; i < DRV_ARRAY_SIZE(names); i++) {
		if (strlen(names[i]) != n || strncmp(kv, names[i], n))
			continue;
		for (char *const *e = job_env; e && *e; e++)
			if (!strncmp(*e, kv, n) && (*e)[n] == '=')
				return false;
		return true;
	}
	return false;
}

/* Does the job's own env name NAME? */
static bool job_sets(char *const *job_env, const char *name)
{
	size_t n = strlen(name);

	for (char *const *e = job_env; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return true;
	return false;
}

/*
 * The container's environment: drover's and the job's, in order. A
 * container sees only the GPUs passed to it, which CUDA counts from 0
 * there (GPU 3 of the node is the container's device 0), so
 * CUDA_VISIBLE_DEVICES names 0..n-1 unless the job's env sets it;
 * NVIDIA_VISIBLE_DEVICES keeps the node's indexes (which GPUs they are).
 */
static char **container_env(const struct drv_task_spec *s)
{
	char **all = drv_task_env(s), **out;
	size_t n = 0, k = 0;
	bool renumber = s->ngpus > 0 && !job_sets(s->env, "CUDA_VISIBLE_DEVICES");

	while (all[n])
		n++;
	out = drv_calloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		if (host_only(all[i], s->env)) {
			drv_free(all[i]);
		} else if (renumber && !strncmp(all[i], "CUDA_VISIBLE_DEVICES=", 21)) {
			char v[DRV_GPU_MAX * 4 + 32];
			size_t len = (size_t)snprintf(v, sizeof(v), "CUDA_VISIBLE_DEVICES=");

			for (int g = 0; g < s->ngpus && len < sizeof(v); g++)
				len += (size_t)snprintf(v + len, sizeof(v) - len, "%s%d", g ? "," : "", g);
			drv_free(all[i]);
			out[k++] = drv_strdup(v);
		} else {
			out[k++] = all[i];
		}
	}
	drv_free(all);
	return out;
}

/* The task's cgroup (as launch.c will make it) below its hierarchy's
 * root, for --cgroup-parent: "" when limits are off or it is elsewhere. */
static void cgroup_rel(const struct drv_agent *a, struct task *t)
{
	const char *roots[] = { "/sys/fs/cgroup/memory", "/sys/fs/cgroup" };
	const char *base = a->cg.base, *root = roots[a->cg.version == 1 ? 0 : 1];
	size_t rl = strlen(root), i;

	t->cg_rel[0] = '\0';
	if (!a->cg.enabled || strncmp(base, root, rl) || base[rl] != '/')
		return;
	snprintf(t->cg_rel, sizeof(t->cg_rel), "%s/task-", base + rl);
	i = strlen(t->cg_rel);
	for (const char *p = t->id; *p && i + 1 < sizeof(t->cg_rel); p++, i++)
		t->cg_rel[i] = (char)(*p == '/' || *p == '.' ? '_' : *p);
	t->cg_rel[i] = '\0';
}

/* Its cleanup file, for the shim: removes the container. */
static int write_cleanup(struct drv_agent *a, struct task *t, char *err, size_t errsz)
{
	char path[PATH_MAX + 64], words[2048];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/%s.%s.cleanup", t->dir, t->id, t->key);
	podman_words(a, words, sizeof(words));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		snprintf(err, errsz, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(f, "# drover: removes task %s's container %s once the task is over\n"
		"exec%s rm --force --time 0 --ignore '%s' >/dev/null 2>&1\n", t->id, t->cname,
		words, t->cname);
	return fclose(f) == 0 ? 0 : -1;
}

/* The value (quoted, as podman.c wrote it) of the script's line NAME=... */
static void script_var(const char *script, const char *name, char *out, size_t n)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), "\n%s=", name);
	p = strstr(script, pat);
	if (!p) {
		snprintf(out, n, "\"$%s\"", name);
		return;
	}
	p += strlen(pat);
	snprintf(out, n, "%.*s", (int)strcspn(p, "\n"), p);
}

/* The script's podman create line with the global arguments, the image and
 * the env file's path spelled out, into t->runtime_cmd (for drover
 * describe and the log); false when it has none. */
static bool create_line(struct drv_agent *a, struct task *t, const char *script)
{
	const char *line = strstr(script, "\n\"$@\" create"), *end;
	char words[2048], image[1024], envf[PATH_MAX + 8];
	struct drv_dynbuf b = DRV_DYNBUF_INIT(sizeof(t->runtime_cmd));
	char *txt;

	t->runtime_cmd[0] = '\0';
	if (!line)
		return false;
	line += 6;
	end = line + strcspn(line, "\n");
	/* the error handling after the command is the script's own */
	if (strstr(line, " >/dev/null ||") && strstr(line, " >/dev/null ||") < end)
		end = strstr(line, " >/dev/null ||");
	podman_words(a, words, sizeof(words));
	script_var(script, "IMAGE", image, sizeof(image));
	script_var(script, "ENVFILE", envf, sizeof(envf));
	drv_dynbuf_addstr(&b, words + (words[0] == ' '));
	drv_dynbuf_addstr(&b, " ");
	while (line < end) {
		if (!strncmp(line, "\"$IMAGE\"", 8)) {
			drv_dynbuf_addstr(&b, image);
			line += 8;
		} else if (!strncmp(line, "\"$ENVFILE\"", 10)) {
			drv_dynbuf_addstr(&b, envf);
			line += 10;
		} else {
			drv_dynbuf_add(&b, line++, 1);
		}
	}
	txt = drv_dynbuf_take(&b, NULL);
	snprintf(t->runtime_cmd, sizeof(t->runtime_cmd), "%s", txt ? txt : "");
	drv_free(txt);
	return true;
}

/* Logs it. */
static void log_create(struct drv_agent *a, struct task *t, const char *script)
{
	if (create_line(a, t, script))
		drv_log(&a->log, "task %s: container %s: %s (script %s/%s.script)", t->id, t->cname,
			t->runtime_cmd, t->dir, t->id);
}

void agent_container_msg(const struct task *t, struct drv_proto_container *c, char *pull,
			 size_t pullsz)
{
	char path[PATH_MAX + 64];
	FILE *f;

	memset(c, 0, sizeof(*c));
	pull[0] = '\0';
	if (!t->container)
		return;
	c->name = t->cname;
	c->command = t->runtime_cmd[0] ? t->runtime_cmd : NULL;
	snprintf(path, sizeof(path), "%s/%s.%s.pull", t->dir, t->id, t->key);
	if ((f = fopen(path, "re"))) {
		if (fgets(pull, (int)pullsz, f))
			pull[strcspn(pull, "\n")] = '\0';
		fclose(f);
	}
	c->image_pull = pull[0] ? pull : NULL;
}

/* The assignment's mounts into ms (paths in paths): hostPath (+ subPath)
 * as given; an emptyDir a directory of the task's, the job user's; of
 * medium Memory a tmpfs. -1 and err when a directory cannot be made. */
static int task_mounts(struct task *t, const struct drv_proto_task *j,
		       const struct drv_task_spec *s, struct drv_container_mount *ms,
		       char (*paths)[PATH_MAX], char *err, size_t errsz)
{
	for (size_t k = 0; k < j->nmounts; k++) {
		const struct drv_proto_mount *m = &j->mounts[k];
		const char *sub = m->sub_path && *m->sub_path ? m->sub_path : NULL;

		ms[k] = (struct drv_container_mount){ .container_path = m->container_path,
						      .read_only = m->read_only };
		if (m->memory) {
			ms[k].tmpfs = true;
			ms[k].tmpfs_mib = m->size_mib;
			continue;
		}
		if (!strcmp(m->type, "hostPath")) {
			snprintf(paths[k], PATH_MAX, "%s%s%s", m->host_path ? m->host_path : "/",
				 sub ? "/" : "", sub ? sub : "");
		} else {
			snprintf(paths[k], PATH_MAX, "%s/volumes/%s%s%s", t->dir,
				 m->name ? m->name : "v", sub ? "/" : "", sub ? sub : "");
			if (drv_mkdir_p(paths[k], 0700) < 0 ||
			    (s->set_user && chown(paths[k], s->uid, s->gid) < 0)) {
				snprintf(err, errsz, "cannot make emptyDir %s: %s", paths[k],
					 strerror(errno));
				return -1;
			}
		}
		ms[k].host_path = paths[k];
	}
	return 0;
}

/* The task's GPUs as CDI names (cdi.c), from the specs podman reads (it
 * reads no others); -1 and err when a GPU cannot be named. */
static int gpu_devices(struct drv_agent *a, struct task *t, char (*out)[DRV_CDI_NAME_MAX],
		       char *err, size_t errsz)
{
	static const char *const dirs[] = { "/etc/cdi", "/var/run/cdi", NULL };
	const char *uuid[DRV_GPU_MAX];
	int index[DRV_GPU_MAX];
	struct drv_cdi cdi;
	char why[600];
	int rc;

	for (int k = 0; k < t->ngpus; k++) {
		const struct drv_gpu_info *g = &a->gpus.gpus[t->gpus[k]];

		index[k] = g->index;
		uuid[k] = g->uuid;
	}
	rc = drv_cdi_load(dirs, "nvidia.com/gpu", &cdi, why, sizeof(why));
	if (rc == 0)
		rc = drv_cdi_gpu_devices(&cdi, "nvidia.com/gpu", index, uuid, t->ngpus, out, why,
					 sizeof(why));
	drv_cdi_release(&cdi);
	if (rc < 0)
		snprintf(err, errsz, "the task's GPUs cannot be passed to its container: %s (in "
			 "/etc/cdi or /var/run/cdi; nvidia-ctk cdi generate --output="
			 "/etc/cdi/nvidia.yaml writes it)", why);
	return rc < 0 ? -1 : 0;
}

int agent_container_prepare(struct drv_agent *a, struct task *t, const struct drv_proto_task *j,
			    struct drv_task_spec *s, char **owned)
{
	struct drv_container_mount *ms = NULL;
	char (*paths)[PATH_MAX] = NULL;
	struct drv_container_spec cs;
	char envf[PATH_MAX + 16], reasonf[PATH_MAX + 64], pullf[PATH_MAX + 64], cgp[PATH_MAX];
	char err[512];
	const char *devs[DRV_GPU_MAX + 1];
	char devbuf[DRV_GPU_MAX][DRV_CDI_NAME_MAX];
	char **env;
	int64_t ncmd = j->command_len < 0 ? (int64_t)j->nargv : j->command_len;
	int rc;

	*owned = NULL;
	if (!a->podman_on) {
		snprintf(t->reason, sizeof(t->reason), "RuntimeUnavailable: the task needs a "
			 "container of image %s and node %s runs --runtime host", j->image ? j->image
			 : "(none)", a->name);
		t->state = T_FAILED;
		t->rep_end = true;
		return -1;
	}
	if (!j->image || !*j->image) {
		snprintf(t->reason, sizeof(t->reason), "the task asks for a container and names no "
			 "image");
		t->state = T_FAILED;
		t->rep_end = true;
		return -1;
	}
	t->container = true;
	snprintf(t->cname, sizeof(t->cname), "drover-%s-e%lld", t->id, (long long)t->epoch);
	cgroup_rel(a, t);
	snprintf(envf, sizeof(envf), "%s/%s.env", t->dir, t->id);
	snprintf(reasonf, sizeof(reasonf), "%s/%s.%s.reason", t->dir, t->id, t->key);
	snprintf(pullf, sizeof(pullf), "%s/%s.%s.pull", t->dir, t->id, t->key);
	snprintf(cgp, sizeof(cgp), "%s", t->cg_rel);
	memset(&cs, 0, sizeof(cs));
	cs.name = t->cname;
	cs.image = j->image;
	cs.pull_policy = j->pull_policy;
	cs.command = (char *const *)j->argv;
	cs.ncommand = (int)ncmd;
	cs.args = (char *const *)j->argv + ncmd;
	cs.nargs = (int)((int64_t)j->nargv - ncmd);
	cs.workdir = j->workdir;
	env = container_env(s);
	cs.env = env;
	cs.env_file = envf;
	cs.reason_file = reasonf;
	cs.pull_file = pullf;
	cs.task_id = t->id;
	cs.job_id = t->job_id;
	cs.node = a->name;
	cs.epoch = t->epoch;
	cs.set_user = s->set_user;
	cs.uid = s->uid;
	cs.gid = s->gid;
	cs.groups = s->groups;
	cs.ngroups = s->ngroups;
	cs.non_root = j->run_as_non_root && !s->set_user;
	cs.cgroup_parent = cgp[0] ? cgp : NULL;
	cs.mem_mib = j->mem_mib;
	cs.mem_in_container = !cgp[0] || a->cg.version == 2;
	cs.cpu_milli = j->cpu_milli;
	/* /dev/shm: the Pod's Memory emptyDir there, else half the memory
	 * request, else 8 GiB (podman.c); none of it with the host's IPC */
	cs.shm_mib = j->shm_mib > 0 ? j->shm_mib : j->mem_mib > 0 ? j->mem_mib / 2 : 0;
	cs.host_ipc = j->host_ipc;
	ms = drv_calloc(j->nmounts + j->nvolumes + 1, sizeof(*ms));
	paths = drv_calloc(j->nmounts + j->nvolumes + 1, sizeof(*paths));
	cs.mounts = ms;
	cs.nmounts = (int)(j->nmounts + j->nvolumes);
	rc = 0;
	if (a->backend && !strcmp(a->backend, "nvml") && t->ngpus > 0) {
		rc = gpu_devices(a, t, devbuf, err, sizeof(err));
		for (int k = 0; k < t->ngpus; k++)
			devs[k] = devbuf[k];
		devs[t->ngpus] = NULL;
		cs.devices = devs;
	} else if (a->fake_cdi_kind[0] && t->ngpus > 0) {
		/* the agent's own spec (fake_cdi_write): the GPUs by index */
		for (int k = 0; k < t->ngpus; k++) {
			snprintf(devbuf[k], sizeof(devbuf[k]), "%s=%d", a->fake_cdi_kind,
				 a->gpus.gpus[t->gpus[k]].index);
			devs[k] = devbuf[k];
		}
		devs[t->ngpus] = NULL;
		cs.devices = devs;
	}
	if (rc == 0)
		rc = task_mounts(t, j, s, ms, paths, err, sizeof(err));
	for (size_t k = 0; rc == 0 && k < j->nvolumes; k++) {
		/* Secrets and ConfigMaps: the files task_volumes wrote, at their mountPath */
		const struct drv_proto_volume *v = &j->volumes[k];
		size_t i = j->nmounts + k;

		snprintf(paths[i], PATH_MAX, "%s/volumes/%s%s%s", t->dir, v->name,
			 v->sub_path ? "/" : "", v->sub_path ? v->sub_path : "");
		ms[i] = (struct drv_container_mount){ .host_path = paths[i],
						      .container_path = v->mount_path,
						      .read_only = v->read_only };
	}
	if (rc == 0)
		rc = drv_podman_script(&a->podman, &cs, owned, err, sizeof(err));
	drv_env_free(env);
	drv_free(ms);
	drv_free(paths);
	if (rc == 0 && write_cleanup(a, t, err, sizeof(err)) < 0)
		rc = -1;
	if (rc < 0) {
		snprintf(t->reason, sizeof(t->reason), "%s", err);
		t->state = T_FAILED;
		t->rep_end = true;
		drv_free(*owned);
		*owned = NULL;
		return -1;
	}
	log_create(a, t, *owned);
	/* the script runs as the agent (podman); the container as the job's user */
	s->script = *owned;
	s->argv = NULL;
	s->workdir = NULL;
	s->set_user = false;
	return 0;
}

void agent_container_stop(struct drv_agent *a, struct task *t, int64_t grace_ms)
{
	char cmd[4096];
	int64_t now = drv_mono_ms();

	podman_words(a, cmd, sizeof(cmd));
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " stop --ignore --time %lld",
		 (long long)((grace_ms + 999) / 1000));
	shq(cmd, sizeof(cmd), t->cname);
	helper(a, "podman stop", cmd);
	/* what podman stop does not end in time, the process group's SIGKILL
	 * and the removal after it do */
	t->proc.terminating = true;
	t->proc.kill_at_ms = now + grace_ms + 15000;
}

void agent_container_ended(struct drv_agent *a, struct task *t)
{
	char cmd[4096 + PATH_MAX];

	if (!t->container)
		return;
	podman_words(a, cmd, sizeof(cmd));
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " rm --force --time 0 --ignore");
	shq(cmd, sizeof(cmd), t->cname);
	if (t->cg_rel[0] && a->cg.version == 1) {
		/* runc made the task's cgroup in every v1 hierarchy */
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "; for d in /sys/fs/cgroup/*");
		shq(cmd, sizeof(cmd), t->cg_rel);
		/* the glob and the quoted path are one word */
		memmove(strrchr(cmd, '*') + 1, strrchr(cmd, '*') + 2, strlen(strrchr(cmd, '*') + 2) + 1);
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd),
			 "; do rmdir \"$d/conmon\" \"$d\" 2>/dev/null; done; true");
	}
	helper(a, "podman rm", cmd);
}

/* Once a minute: past image_gc_percent of the image store's disk, unused
 * images go (podman image prune --all). */
void agent_image_gc(struct drv_agent *a, int64_t now_ms)
{
	char store[PATH_MAX + 16], cmd[4096];
	struct statvfs sv;
	int pct = a->podman.image_gc_percent > 0 ? a->podman.image_gc_percent : 85;
	int used;

	if (!a->podman_on || now_ms < a->next_gc_ms)
		return;
	a->next_gc_ms = now_ms + 60000;
	snprintf(store, sizeof(store), "%s", a->podman.root ? a->podman.root
		 : "/var/lib/containers/storage");
	if (statvfs(store, &sv) < 0 || !sv.f_blocks)
		return;
	used = (int)(100 - (int64_t)sv.f_bavail * 100 / (int64_t)sv.f_blocks);
	if (used <= pct)
		return;
	podman_words(a, cmd, sizeof(cmd));
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " image prune --all --force");
	drv_log(&a->log, "image store %s is %d%% full (threshold %d%%): pruning unused images",
		store, used, pct);
	helper(a, "image gc", cmd);
}

/* --- after a restart ---------------------------------------------------------- */

void agent_container_mark(struct drv_agent *a, struct task *t)
{
	static const char *const roots[] = { "/sys/fs/cgroup/memory", "/sys/fs/cgroup" };
	char path[PATH_MAX + 64];

	/* only a container task has a cleanup file (write_cleanup) */
	snprintf(path, sizeof(path), "%s/%s.%s.cleanup", t->dir, t->id, t->key);
	if (access(path, F_OK) != 0)
		return;
	t->container = true;
	snprintf(t->cname, sizeof(t->cname), "drover-%s-e%lld", t->id, (long long)t->epoch);
	/* its cgroup is the one its shim was given (an earlier agent's base),
	 * for the v1 directories runc made; none known when it ended */
	t->cg_rel[0] = '\0';
	for (size_t i = 0; i < DRV_ARRAY_SIZE(roots) && t->proc.cgroup[0]; i++) {
		size_t rl = strlen(roots[i]);

		if (!strncmp(t->proc.cgroup, roots[i], rl) && t->proc.cgroup[rl] == '/') {
			snprintf(t->cg_rel, sizeof(t->cg_rel), "%s", t->proc.cgroup + rl);
			break;
		}
	}
}

/* The names and drover.task labels of the containers labelled as this
 * node's ("NAME\tTASK" lines, malloc'd); NULL when podman cannot say. */
static char *node_containers(struct drv_agent *a)
{
	char label[300];
	const char *args[] = { "ps", "--all", "--filter", label, "--format",
		"{{.Names}}\t{{index .Labels \"drover.task\"}}", NULL };
	char *out = NULL, why[300];

	snprintf(label, sizeof(label), "label=drover.node=%s", a->name);
	if (drv_podman_output(&a->podman, args, 60000, &out, why, sizeof(why)) < 0) {
		drv_log(&a->log, "cannot list this node's containers: %s", why);
		return NULL;
	}
	return out;
}

/* Whether name is the container of a task the agent knows. */
static bool known_container(const struct drv_agent *a, const char *name)
{
	for (size_t k = 0; k < a->ntasks; k++)
		if (a->tasks[k]->container && !strcmp(a->tasks[k]->cname, name))
			return true;
	return false;
}

void agent_containers_adopt(struct drv_agent *a)
{
	char *list, *line, *save = NULL;

	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		char path[PATH_MAX + 16], *script = NULL;
		size_t len = 0;

		if (!t->container)
			continue;
		/* what creates it, for drover describe, from its script */
		snprintf(path, sizeof(path), "%s/%s.script", t->dir, t->id);
		if (drv_file_read(path, 1 << 20, &script, &len) == 0)
			create_line(a, t, script);
		drv_free(script);
		drv_log(&a->log, "container %s of task %s adopted%s", t->cname, t->id,
			t->state == T_RUNNING ? "" : "; its task ended: removed");
		if (t->state != T_RUNNING)
			agent_container_ended(a, t);
	}
	if (!a->podman_on || !(list = node_containers(a)))
		return;
	for (line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t'), cmd[4096];

		if (tab)
			*tab++ = '\0';
		if (!*line || known_container(a, line))
			continue;
		drv_log(&a->log, "orphan container %s (task %s, unknown here): removed", line,
			tab && *tab ? tab : "?");
		podman_words(a, cmd, sizeof(cmd));
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " rm --force --time 0 --ignore");
		shq(cmd, sizeof(cmd), line);
		helper(a, "podman rm", cmd);
	}
	drv_free(list);
}
