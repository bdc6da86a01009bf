/*
 * agent_exec.c: GET /v1/tasks/ID/exec as a WebSocket (cluster token): a
 * command run in a running task's environment, for kubectl exec (the
 * controller's kube_exec.c relays to it) and drover exec. A container
 * task: `podman exec` in its container. A host task: the environment,
 * working directory and user of the task's own process (the shim's child,
 * read from /proc). The query is Kubernetes' exec subresource's
 * (command=ARG repeated, stdin, stdout, stderr, tty); the frames are
 * v5.channel.k8s.io's: 0 stdin, 1 stdout, 2 stderr, 3 the end as a
 * Kubernetes Status, 4 a terminal size ({"Width":W,"Height":H}), 255 the
 * close of a channel (255 0: stdin's end). Bytes go both ways as they
 * come. With tty the command gets a pseudo-terminal (podman exec -t gets
 * one, and passes on its size); stderr is then the terminal too. The
 * command is killed when the peer goes away; no other time limit.
 */
#include "drover/fsutil.h"
#include "drover/clock.h"
#include "drover/dynbuf.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXEC_PROTO "v5.channel.k8s.io"
#define IN_PENDING_MAX (1u << 20)
#define RESIZE_WAIT_MS 500

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

/* One exec: what the handler found, for the session's thread. */
struct aexec {
	char **argv, **envp;
	char cwd[PATH_MAX];
	int uid, gid;
	bool in, out, err, tty;
	struct winsize ws;          /* the size given before the start */
	struct drv_dynbuf pend;     /* stdin not yet written */
	bool in_eof;                /* stdin ended: close it once pend is out */
	pid_t pid;
	int fin, fout, ferr;        /* -1 once closed; with tty all the master */
};

static void aexec_free(void *cls)
{
	struct aexec *x = cls;

	strv_free(x->argv);
	strv_free(x->envp);
	drv_dynbuf_release(&x->pend);
	drv_free(x);
}

/* In the child: the task's user, directory and environment, then argv. */
static void child(struct aexec *x, int pex)
{
	extern char **environ;
	int e;

	if (x->cwd[0] && chdir(x->cwd) < 0 && chdir("/") < 0)
		_exit(127);
	if (x->gid >= 0 && (setgroups(0, NULL), setgid((gid_t)x->gid)) < 0)
		goto fail;
	if (x->uid >= 0 && setuid((uid_t)x->uid) < 0)
		goto fail;
	if (x->envp)
		environ = x->envp;
	execvp(x->argv[0], x->argv);
fail:
	e = errno;
	if (write(pex, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Starts the command on pipes or a pty; 0, or an error in why. */
static int spawn(struct aexec *x, char *why, size_t n)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 }, pex[2], m = -1, sl = -1;
	int e = 0;

	if (pipe2(pex, O_CLOEXEC) < 0)
		goto sys;
	if (x->tty) {
		if (openpty(&m, &sl, NULL, NULL, x->ws.ws_col ? &x->ws : NULL) < 0)
			goto sys;
		fcntl(m, F_SETFD, FD_CLOEXEC);
		fcntl(sl, F_SETFD, FD_CLOEXEC);
	} else if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 ||
		   pipe2(perr, O_CLOEXEC) < 0) {
		goto sys;
	}
	x->pid = fork();
	if (x->pid == 0) {
		if (x->tty) {
			setsid();
			ioctl(sl, TIOCSCTTY, 0);
			dup2(sl, 0), dup2(sl, 1), dup2(sl, 2);
		} else {
			dup2(pin[0], 0), dup2(pout[1], 1), dup2(perr[1], 2);
		}
		child(x, pex[1]);
	}
	close(pex[1]);
	if (x->tty) {
		close(sl);
		x->fin = x->fout = m;
		x->ferr = -1;
	} else {
		close(pin[0]), close(pout[1]), close(perr[1]);
		x->fin = pin[1], x->fout = pout[0], x->ferr = perr[0];
		if (!x->in) {
			close(x->fin);
			x->fin = -1;
		}
	}
	if (x->pid < 0) {
		snprintf(why, n, "fork: %s", strerror(errno));
		close(pex[0]);
		return DRV_EIO;
	}
	if (read(pex[0], &e, sizeof(e)) == (ssize_t)sizeof(e))
		snprintf(why, n, "exec %s: %s", x->argv[0], strerror(e));
	close(pex[0]);
	if (x->fin >= 0)
		fcntl(x->fin, F_SETFL, fcntl(x->fin, F_GETFL) | O_NONBLOCK);
	return e ? DRV_EIO : 0;
sys:
	snprintf(why, n, "%s: %s", x->tty ? "openpty" : "pipe", strerror(errno));
	return DRV_EIO;
}

/* The end on channel 3 as Kubernetes' Status, then the close, and the
 * peer's close awaited briefly (what it sends meanwhile is dropped). */
static void finish(struct drv_ws *w, int status, const char *error)
{
	char msg[512], c[32];
	json_t *st;
	char *t;

	if (error) {
		st = json_pack("{s:{},s:s,s:s,s:s,s:i}", "metadata", "status", "Failure", "reason",
			       "InternalError", "message", error, "code", 500);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		st = json_pack("{s:{},s:s}", "metadata", "status", "Success");
	} else {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

		snprintf(c, sizeof(c), "%d", code);
		snprintf(msg, sizeof(msg), "command terminated with non-zero exit code: exit "
			 "status %d", code);
		st = json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s,s:s}]}}", "metadata", "status",
			       "Failure", "reason", "NonZeroExitCode", "message", msg, "details",
			       "causes", "reason", "ExitCode", "message", c);
	}
	t = json_dumps(st, JSON_COMPACT);
	drv_ws_send_channel(w, 3, t, strlen(t));
	free(t);
	json_decref(st);
	drv_ws_close(w, 1000, NULL);
	for (;;) {
		unsigned char *m;
		size_t len;
		int op;

		if (drv_ws_read(w, &op, &m, &len, 1000) != 0)
			break;
		drv_free(m);
	}
}

static void resize(struct aexec *x, const unsigned char *p, size_t n)
{
	json_t *o = json_loadb((const char *)p, n, 0, NULL);
	json_int_t wd = json_integer_value(json_object_get(o, "Width"));
	json_int_t ht = json_integer_value(json_object_get(o, "Height"));

	json_decref(o);
	if (wd <= 0 || ht <= 0 || wd > 65535 || ht > 65535)
		return;
	x->ws = (struct winsize){ .ws_row = (unsigned short)ht, .ws_col = (unsigned short)wd };
	if (x->fout >= 0)
		ioctl(x->fout, TIOCSWINSZ, &x->ws);
}

static void close_in(struct aexec *x)
{
	if (x->tty) {
		if (x->fin >= 0)   /* the terminal's end of file */
			(void)!write(x->fin, "\x04", 1);
		x->in_eof = false;
		return;
	}
	if (x->fin >= 0)
		close(x->fin);
	x->fin = -1;
}

/* A message from the peer: stdin, its end, a size. */
static void take_msg(struct aexec *x, const unsigned char *m, size_t len)
{
	if (len >= 1 && m[0] == 0 && x->in) {
		(void)drv_dynbuf_add(&x->pend, (const char *)m + 1, len - 1);
	} else if (len >= 2 && m[0] == 255 && m[1] == 0) {
		x->in_eof = true;
	} else if (len >= 1 && m[0] == 4 && x->tty) {
		resize(x, m + 1, len - 1);
	}
}

/* Writes what stdin has pending, as much as the pipe takes. */
static void flush_in(struct aexec *x)
{
	ssize_t k;

	if (x->fin < 0) {
		x->pend.len = 0;
		return;
	}
	if (x->pend.len) {
		k = write(x->fin, x->pend.buf, x->pend.len);
		if (k > 0) {
			memmove(x->pend.buf, x->pend.buf + k, x->pend.len - (size_t)k);
			x->pend.len -= (size_t)k;
		} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
			x->pend.len = 0;
			if (!x->tty) {
				close(x->fin);
				x->fin = -1;
			}
		}
	}
	if (!x->pend.len && x->in_eof)
		close_in(x);
}

/* One output's bytes to its channel; false at its end. */
static bool pump(struct drv_ws *w, int fd, int ch, bool want)
{
	char buf[32768];
	ssize_t r = read(fd, buf, sizeof(buf));

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (r <= 0)
		return false;
	if (want)
		drv_ws_send_channel(w, ch, buf, (size_t)r);
	return true;
}

/* A TTY's first size, which kubectl sends at once: the command should
 * start with it (stty size), so it is waited for, briefly. */
static int early_size(struct drv_ws *w, struct aexec *x)
{
	int64_t until = drv_mono_ms() + RESIZE_WAIT_MS;

	while (!x->ws.ws_col) {
		int64_t left = until - drv_mono_ms();
		unsigned char *m;
		size_t len;
		int op, rc;

		if (left <= 0)
			return 0;
		rc = drv_ws_read(w, &op, &m, &len, (int)left);
		if (rc == DRV_ETIMEDOUT)
			return 0;
		if (rc != 0)
			return rc;
		take_msg(x, m, len);
		drv_free(m);
	}
	return 0;
}

/* Relays until the command's outputs end or the peer goes: 0, or 1 when
 * the peer went (the command is then killed). */
static int relay(struct drv_ws *w, struct aexec *x)
{
	while (x->fout >= 0 || x->ferr >= 0) {
		struct pollfd p[4] = { { x->fout, POLLIN, 0 }, { x->ferr, POLLIN, 0 },
				       { x->pend.len ? x->fin : -1, POLLOUT, 0 },
				       { x->pend.len >= IN_PENDING_MAX ? -1 : drv_ws_fd(w), POLLIN,
					 0 } };
		int rc;

		if (drv_ws_buffered(w) && p[3].fd >= 0)
			p[3].revents = POLLIN;
		else if (poll(p, 4, 1000) < 0 && errno != EINTR)
			return 1;
		if (p[3].revents & (POLLIN | POLLHUP | POLLERR)) {
			unsigned char *m;
			size_t len;
			int op;

			rc = drv_ws_read(w, &op, &m, &len, 100);
			if (rc == 0) {
				take_msg(x, m, len);
				drv_free(m);
			} else if (rc != DRV_ETIMEDOUT) {
				return 1;
			}
		}
		flush_in(x);
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR) &&
		    !pump(w, x->fout, 1, x->out || x->tty)) {
			if (x->tty)
				x->fin = -1;
			close(x->fout);
			x->fout = -1;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR) && !pump(w, x->ferr, 2, x->err)) {
			close(x->ferr);
			x->ferr = -1;
		}
	}
	return 0;
}

static void session(void *cls, struct drv_ws *w)
{
	struct aexec *x = cls;
	char why[400] = "";
	int status = 0, rc = 0;

	x->fin = x->fout = x->ferr = -1;
	if (x->tty && (rc = early_size(w, x)) != 0)
		return;
	if (spawn(x, why, sizeof(why)) == 0 || x->pid > 0) {
		if (!why[0])
			rc = relay(w, x);
		if (rc)
			kill(x->tty ? -x->pid : x->pid, SIGKILL);
		while (waitpid(x->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	if (x->fin >= 0 && x->fin != x->fout)
		close(x->fin);
	if (x->fout >= 0)
		close(x->fout);
	if (x->ferr >= 0)
		close(x->ferr);
	if (rc)
		return;
	finish(w, status, why[0] ? why : NULL);
}

static bool flag(struct drv_http_req *r, const char *name)
{
	const char *v = drv_http_req_query(r, name);

	return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

/* argv for a container task: podman exec [-i] [-t] NAME. */
static size_t podman_argv(struct drv_agent *a, struct aexec *x, const char *cname, size_t n)
{
	size_t ng, i;
	char **g = drv_podman_global_argv(&a->podman, &ng);

	x->argv = drv_calloc(ng + n + 5, sizeof(*x->argv));
	for (i = 0; i < ng; i++)
		x->argv[i] = drv_strdup(g[i]);
	drv_free(g);
	x->argv[i++] = drv_strdup("exec");
	if (x->in || x->tty)
		x->argv[i++] = drv_strdup("-i");
	if (x->tty)
		x->argv[i++] = drv_strdup("-t");
	x->argv[i++] = drv_strdup(cname);
	return i;
}

/* argv for a host task, with its process's env, cwd and user. */
static size_t host_argv(struct aexec *x, pid_t pid, size_t n)
{
	pid_t c = task_child(pid);
	char link[64];
	struct stat st;

	if (c > 0)
		pid = c;
	x->envp = proc_environ(pid);
	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	if (readlink(link, x->cwd, sizeof(x->cwd) - 1) < 0)
		x->cwd[0] = '\0';
	snprintf(link, sizeof(link), "/proc/%d", (int)pid);
	if (stat(link, &st) == 0 && geteuid() == 0 && st.st_uid != 0) {
		x->uid = (int)st.st_uid;
		x->gid = (int)st.st_gid;
	}
	x->argv = drv_calloc(n + 1, sizeof(*x->argv));
	return 0;
}

int agent_h_exec(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	const char *id = drv_http_req_param(req, 0);
	json_t *cmd = drv_http_req_query_all(req, "command");
	struct aexec *x = NULL;
	struct task *t;
	char cname[128] = "";
	size_t n = json_array_size(cmd), i;
	bool container = false;
	pid_t pid = 0;

	if (!n) {
		drv_http_resp_error(resp, 400, "invalid", NULL,
				    "command: none given, expected one query parameter or more");
		goto out;
	}
	if (!drv_http_req_is_websocket(req) || !drv_http_req_ws_offers(req, EXEC_PROTO)) {
		drv_http_resp_error(resp, 400, "invalid", NULL, "exec is a WebSocket with the "
				    "subprotocol " EXEC_PROTO);
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
	x = drv_calloc(1, sizeof(*x));
	x->uid = x->gid = -1;
	x->in = flag(req, "stdin");
	x->out = flag(req, "stdout");
	x->err = flag(req, "stderr");
	x->tty = flag(req, "tty");
	drv_dynbuf_init(&x->pend, IN_PENDING_MAX + (64u << 10));
	i = container ? podman_argv(a, x, cname, n) : host_argv(x, pid, n);
	for (size_t k = 0; k < n; k++)
		x->argv[i++] = drv_strdup(json_string_value(json_array_get(cmd, k)) ?: "");
	x->argv[i] = NULL;
	drv_http_resp_websocket(req, resp, EXEC_PROTO, session, x, aexec_free);
out:
	json_decref(cmd);
	return 0;
}

/* --- attach: srun --pty's terminal ------------------------------------------ */

/*
 * GET /v1/tasks/ID/attach?epoch=E: the terminal of a step task the
 * controller started with pty (srun --pty, docs/api.md). The same frames
 * as exec: 0 typed bytes into the terminal, 1 what the task writes, 4 a
 * size, 3 the task's end (its exit code) once every process holding the
 * terminal is gone and the task was reaped. The session takes the master
 * from the task: one attach at a time, and when the peer goes the master
 * is closed, which hangs the terminal up (SIGHUP to its session), as a
 * closed ssh window does.
 */
#define ATTACH_END_WAIT_MS 30000

struct attach {
	struct drv_agent *a;
	char id[64];
	int64_t epoch;
	int m;
};

static void attach_free(void *cls)
{
	struct attach *x = cls;
	struct task *t;

	pthread_mutex_lock(&x->a->mu);
	t = agent_find_task(x->a, x->id, x->epoch);
	if (t)
		t->pty_attached = false;
	pthread_mutex_unlock(&x->a->mu);
	if (x->m >= 0)
		close(x->m);
	drv_free(x);
}

/* A message from the peer: typed bytes or a size. */
static void attach_take(struct attach *x, const unsigned char *m, size_t len)
{
	struct aexec sz = { .fout = x->m };

	if (len >= 1 && m[0] == 0)
		(void)drv_fd_write_all(x->m, m + 1, len - 1);
	else if (len >= 1 && m[0] == 4)
		resize(&sz, m + 1, len - 1);
}

/* Relays until the terminal's last holder is gone (0) or the peer (1). */
static int attach_relay(struct attach *x, struct drv_ws *w)
{
	for (;;) {
		struct pollfd p[2] = { { x->m, POLLIN, 0 }, { drv_ws_fd(w), POLLIN, 0 } };

		if (drv_ws_buffered(w))
			p[1].revents = POLLIN;
		else if (poll(p, 2, 1000) < 0 && errno != EINTR)
			return 1;
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			unsigned char *m;
			size_t len;
			int op, rc = drv_ws_read(w, &op, &m, &len, 100);

			if (rc == 0) {
				attach_take(x, m, len);
				drv_free(m);
			} else if (rc != DRV_ETIMEDOUT) {
				return 1;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char buf[32768];
			ssize_t r = read(x->m, buf, sizeof(buf));

			if (r > 0)
				drv_ws_send_channel(w, 1, buf, (size_t)r);
			else if (r == 0 || (errno != EINTR && errno != EAGAIN))
				return 0;   /* EIO: no process has the terminal any more */
		}
	}
}

/* The task's end as a wait status, once reaped; why in err when it has
 * none. Waits at most ATTACH_END_WAIT_MS. */
static int attach_end(struct attach *x, int *status, char *err, size_t n)
{
	int64_t until = drv_mono_ms() + ATTACH_END_WAIT_MS;

	for (;;) {
		struct task *t;
		bool done = false;

		pthread_mutex_lock(&x->a->mu);
		t = agent_find_task(x->a, x->id, x->epoch);
		if (!t) {
			snprintf(err, n, "task %s is gone from node %s", x->id, x->a->name);
			done = true;
		} else if (t->state == T_FAILED) {
			snprintf(err, n, "%s", t->reason[0] ? t->reason : "the task failed");
			done = true;
		} else if (t->state != T_RUNNING) {
			*status = t->proc.signal ? (t->proc.signal & 0x7f)
				  : (t->proc.exit_code & 0xff) << 8;
			done = true;
		}
		pthread_mutex_unlock(&x->a->mu);
		if (done)
			return 0;
		if (drv_mono_ms() >= until) {
			snprintf(err, n, "task %s closed its terminal but has not ended", x->id);
			return 0;
		}
		usleep(20000);
	}
}

static void attach_session(void *cls, struct drv_ws *w)
{
	struct attach *x = cls;
	char err[600] = "";
	int status = 0;

	if (attach_relay(x, w)) {
		close(x->m);   /* the hangup */
		x->m = -1;
		return;
	}
	attach_end(x, &status, err, sizeof(err));
	finish(w, status, err[0] ? err : NULL);
}

int agent_h_attach(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	const char *id = drv_http_req_param(req, 0), *ep = drv_http_req_query(req, "epoch");
	int64_t epoch = ep ? strtoll(ep, NULL, 10) : -1;
	struct attach *x;
	struct task *t;
	int m = -1;
	bool found;

	if (!drv_http_req_is_websocket(req) || !drv_http_req_ws_offers(req, EXEC_PROTO)) {
		drv_http_resp_error(resp, 400, "invalid", NULL, "attach is a WebSocket with the "
				    "subprotocol " EXEC_PROTO);
		return 0;
	}
	pthread_mutex_lock(&a->mu);
	t = agent_valid_task_id(id) ? agent_find_task(a, id, epoch) : NULL;
	found = t != NULL;
	if (t && t->pty_master >= 0 && !t->pty_attached) {
		m = t->pty_master;
		t->pty_master = -1;
		t->pty_attached = true;
	}
	pthread_mutex_unlock(&a->mu);
	if (!found) {
		drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s (not "
				    "started yet?)", id ? id : "", a->name);
		return 0;
	}
	if (m < 0) {
		drv_http_resp_error(resp, 409, "conflict", NULL, "task %s on node %s has no "
				    "terminal, or one is attached already", id, a->name);
		return 0;
	}
	x = drv_calloc(1, sizeof(*x));
	x->a = a;
	snprintf(x->id, sizeof(x->id), "%s", id);
	x->epoch = epoch;
	x->m = m;
	drv_http_resp_websocket(req, resp, EXEC_PROTO, attach_session, x, attach_free);
	return 0;
}
