/*
 * agent_exec.c: POST /v1/tasks/ID/exec (cluster token): a command run in
 * a running task's environment, for kubectl exec (the controller's
 * kube_exec.c). A container task: `podman exec` in its container. A host
 * task: the environment, working directory and user of the task's own
 * process (the shim's child, read from /proc). The body is {command:
 * [...], stdin: base64, timeout_s}; the answer {exit_code, signal,
 * stdout, stderr (base64)} once the command has ended, or {error} when it
 * could not start. It runs on the HTTP thread that took the request,
 * bounded by timeout_s (at most 300); output past EXEC_OUT_MAX is cut.
 */
#include "drover/clock.h"
#include "drover/dynbuf.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXEC_OUT_MAX (8u << 20)

/* The task's own process below its shim (sid leader), or 0. */
static pid_t task_child(pid_t shim)
{
	char path[64];
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)shim, (int)shim);
	if (!(f = fopen(path, "re")))
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

/* /proc/PID/environ as a NULL-terminated vector (owned), or NULL. */
static char **proc_environ(pid_t pid)
{
	char path[64], buf[65536];
	size_t n = 0, k = 0, cnt = 0;
	char **v;
	int fd;
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		cnt += buf[i] == '\0';
	v = drv_calloc(cnt + 2, sizeof(*v));
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (buf[i])
			v[k++] = drv_strdup(buf + i);
	return v;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		drv_free(v[i]);
	drv_free(v);
}

struct exec_out {
	struct drv_dynbuf b[2];
	int status;
	bool timed_out;
	char error[300];
};

/* Runs argv (env: envp or the agent's; cwd; uid/gid when >= 0) with in as
 * stdin; collects both outputs until it ends or timeout_ms passes. */
static void run(char **argv, char **envp, const char *cwd, int uid, int gid, const char *in,
		size_t nin, int64_t timeout_ms, struct exec_out *x)
{
	int pin[2], pout[2], perr[2], pex[2];
	int64_t until = drv_mono_ms() + timeout_ms;
	size_t off = 0;
	pid_t pid;
	int e = 0;

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0 ||
	    pipe2(pex, O_CLOEXEC) < 0) {
		snprintf(x->error, sizeof(x->error), "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		extern char **environ;

		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		if (cwd && chdir(cwd) < 0 && chdir("/") < 0)
			_exit(127);
		if (gid >= 0 && (setgroups(0, NULL), setgid((gid_t)gid)) < 0)
			goto fail;
		if (uid >= 0 && setuid((uid_t)uid) < 0)
			goto fail;
		if (envp)
			environ = envp;
		execvp(argv[0], argv);
fail:
		e = errno;
		if (write(pex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	close(pex[1]);
	if (pid < 0) {
		snprintf(x->error, sizeof(x->error), "fork: %s", strerror(errno));
		close(pin[1]);
		close(pout[0]);
		close(perr[0]);
		close(pex[0]);
		return;
	}
	if (read(pex[0], &e, sizeof(e)) == (ssize_t)sizeof(e))
		snprintf(x->error, sizeof(x->error), "exec %s: %s", argv[0], strerror(e));
	close(pex[0]);
	fcntl(pin[1], F_SETFL, O_NONBLOCK);
	if (!nin) {
		close(pin[1]);
		pin[1] = -1;
	}
	for (;;) {
		struct pollfd p[3] = { { pout[0], POLLIN, 0 }, { perr[0], POLLIN, 0 },
				       { pin[1], POLLOUT, 0 } };
		int64_t left = until - drv_mono_ms();
		char buf[16384];

		if (p[0].fd < 0 && p[1].fd < 0)
			break;
		if (left <= 0) {
			x->timed_out = true;
			kill(pid, SIGKILL);
			break;
		}
		if (poll(p, 3, (int)(left < 1000 ? left : 1000)) < 0 && errno != EINTR)
			break;
		for (int k = 0; k < 2; k++) {
			ssize_t r;

			if (p[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(p[k].fd, buf, sizeof(buf));
			if (r <= 0) {
				close(p[k].fd);
				*(k ? &perr[0] : &pout[0]) = -1;
			} else {
				(void)drv_dynbuf_add(&x->b[k], buf, (size_t)r);   /* cut at the cap */
			}
		}
		if (pin[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(pin[1], in + off, nin - off);

			if (w > 0)
				off += (size_t)w;
			if ((w < 0 && errno != EAGAIN) || off >= nin) {
				close(pin[1]);
				pin[1] = -1;
			}
		}
	}
	if (pin[1] >= 0)
		close(pin[1]);
	if (pout[0] >= 0)
		close(pout[0]);
	if (perr[0] >= 0)
		close(perr[0]);
	while (waitpid(pid, &x->status, 0) < 0 && errno == EINTR)
		;
}

static json_t *answer(struct exec_out *x)
{
	char *o = drv_base64_encode(x->b[0].buf ? x->b[0].buf : "", x->b[0].len);
	char *e = drv_base64_encode(x->b[1].buf ? x->b[1].buf : "", x->b[1].len);
	json_t *r = json_pack("{s:s,s:s}", "stdout", o, "stderr", e);

	drv_free(o);
	drv_free(e);
	if (x->error[0])
		json_object_set_new(r, "error", json_string(x->error));
	else if (x->timed_out)
		json_object_set_new(r, "error", json_string("the command ran past its time limit "
							     "and was killed"));
	json_object_set_new(r, "exit_code", json_integer(WIFEXITED(x->status)
							 ? WEXITSTATUS(x->status)
							 : 128 + WTERMSIG(x->status)));
	json_object_set_new(r, "signal", json_integer(WIFSIGNALED(x->status)
						      ? WTERMSIG(x->status) : 0));
	return r;
}

int agent_h_exec(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	const char *id = drv_http_req_param(req, 0);
	json_t *b = drv_http_req_json(req, resp), *cmd;
	struct exec_out x;
	struct task *t;
	char **argv = NULL, **envp = NULL, cwd[PATH_MAX] = "", link[64], cname[128] = "";
	unsigned char *in = NULL;
	size_t nin = 0, n, i;
	json_int_t tmo;
	bool container = false;
	pid_t pid = 0;
	struct stat st;
	int uid = -1, gid = -1;

	memset(&x, 0, sizeof(x));
	drv_dynbuf_init(&x.b[0], EXEC_OUT_MAX);
	drv_dynbuf_init(&x.b[1], EXEC_OUT_MAX);
	if (!b)
		return 0;
	cmd = json_object_get(b, "command");
	tmo = json_integer_value(json_object_get(b, "timeout_s"));
	if (tmo <= 0 || tmo > 300)
		tmo = 60;
	if (!json_is_array(cmd) || !json_array_size(cmd)) {
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "command: expected an array of one string or more");
		goto out;
	}
	if (drv_json_str(b, "stdin") && drv_base64_decode(drv_json_str(b, "stdin"), &in, &nin) < 0) {
		drv_http_resp_error(resp, 400, "invalid", NULL, "stdin: expected base64");
		goto out;
	}
	pthread_mutex_lock(&a->mu);
	t = agent_valid_task_id(id) ? agent_find_task(a, id, -1) : NULL;
	if (t && t->state == T_RUNNING) {
		container = t->container;
		snprintf(cname, sizeof(cname), "%s", t->cname);
		pid = t->proc.pid;
	}
	pthread_mutex_unlock(&a->mu);
	if (!t) {
		drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s",
				    id ? id : "", a->name);
		goto out;
	}
	if (!pid) {
		drv_http_resp_error(resp, 409, "conflict", NULL, "task %s on node %s is not running",
				    id, a->name);
		goto out;
	}
	n = json_array_size(cmd);
	if (container) {
		size_t ng;
		char **g = drv_podman_global_argv(&a->podman, &ng);

		argv = drv_calloc(ng + n + 4, sizeof(*argv));
		for (i = 0; i < ng; i++)
			argv[i] = drv_strdup(g[i]);
		drv_free(g);
		argv[i++] = drv_strdup("exec");
		if (nin)
			argv[i++] = drv_strdup("-i");
		argv[i++] = drv_strdup(cname);
	} else {
		pid_t c = task_child(pid);

		if (c > 0)
			pid = c;
		envp = proc_environ(pid);
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
		if (readlink(link, cwd, sizeof(cwd) - 1) < 0)
			cwd[0] = '\0';
		snprintf(link, sizeof(link), "/proc/%d", (int)pid);
		if (stat(link, &st) == 0 && geteuid() == 0 && st.st_uid != 0) {
			uid = (int)st.st_uid;
			gid = (int)st.st_gid;
		}
		argv = drv_calloc(n + 1, sizeof(*argv));
		i = 0;
	}
	for (size_t k = 0; k < n; k++)
		argv[i++] = drv_strdup(json_string_value(json_array_get(cmd, k)) ?: "");
	argv[i] = NULL;
	run(argv, envp, cwd[0] ? cwd : NULL, uid, gid, (const char *)in, nin, tmo * 1000, &x);
	drv_http_resp_json(resp, 200, answer(&x));
out:
	drv_dynbuf_release(&x.b[0]);
	drv_dynbuf_release(&x.b[1]);
	strv_free(argv);
	strv_free(envp);
	drv_free(in);
	json_decref(b);
	return 0;
}
