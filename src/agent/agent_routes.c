/*
 * agent_routes.c: the agent's own HTTP endpoints over src/http: /metrics
 * (rendered by agent_metrics.c) and /healthz, open while the controller's
 * open_endpoints is (as the controller's own are), else with the cluster
 * token; /v1/inventory and task logs (GET /v1/tasks/ID/logs) only with the
 * cluster token as a bearer token, since they tell what runs where and
 * what every task printed (issue 12).
 */
#include "drover/clock.h"
#include "drover/metrics.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool cluster_token_ok(const struct drv_agent *a, struct drv_http_req *req,
			     struct drv_http_resp *resp, const char *why);

/* STATE/endpoints-closed: there while the controller says open_endpoints false. */
static void endpoints_path(const struct drv_agent *a, char *out, size_t n)
{
	snprintf(out, n, "%s/endpoints-closed", a->state_dir);
}

void agent_endpoints_load(struct drv_agent *a)
{
	char path[PATH_MAX];

	endpoints_path(a, path, sizeof(path));
	a->endpoints_closed = access(path, F_OK) == 0;
}

void agent_endpoints_set(struct drv_agent *a, bool closed)
{
	char path[PATH_MAX];
	int fd;

	if (closed == a->endpoints_closed)
		return;
	a->endpoints_closed = closed;
	endpoints_path(a, path, sizeof(path));
	if (!closed) {
		unlink(path);
	} else if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0) {
		close(fd);
	} else {
		drv_log(&a->log, "cannot create %s (%s): after a restart /metrics and /healthz are "
			"open until the controller answers", path, strerror(errno));
	}
	drv_log(&a->log, "/metrics and /healthz: %s (the controller's open_endpoints)",
		closed ? "the cluster token needed" : "open");
}

/* 1 with resp set to 401 when the endpoints are closed and req lacks the
 * cluster token. */
static int closed_to(struct drv_agent *a, struct drv_http_req *req, struct drv_http_resp *resp,
		     const char *what)
{
	char why[160];
	bool closed;

	pthread_mutex_lock(&a->mu);
	closed = a->endpoints_closed;
	pthread_mutex_unlock(&a->mu);
	snprintf(why, sizeof(why), "%s needs the cluster token (the controller has "
		 "open_endpoints: false)", what);
	return closed && !cluster_token_ok(a, req, resp, why);
}

static int h_metrics(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_prom w;

	if (closed_to(ctx, req, resp, "/metrics"))
		return 0;
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

	if (closed_to(a, req, resp, "/healthz"))
		return 0;
	pthread_mutex_lock(&a->mu);
	o = json_pack("{s:s, s:s, s:s, s:i, s:b}", "status", "ok", "version", DRV_AGENT_VERSION,
		      "backend", a->backend, "gpus", a->gpus.ngpus, "registered",
		      a->session && !a->need_register);
	pthread_mutex_unlock(&a->mu);
	drv_http_resp_json(resp, 200, o);
	return 0;
}

/* Whether req carries "Authorization: Bearer <the cluster token>"; else a
 * 401 with the message why. Compared in time that does not depend on where
 * the first difference is. */
static bool cluster_token_ok(const struct drv_agent *a, struct drv_http_req *req,
			     struct drv_http_resp *resp, const char *why)
{
	const char *auth = drv_http_req_header(req, "Authorization");

	if (auth && !strncmp(auth, "Bearer ", 7) && drv_http_token_eq(a->token, auth + 7))
		return true;
	drv_http_resp_error(resp, 401, "unauthorized", NULL, "%s", why);
	return false;
}

/*
 * A task's log file: the agent's own, or, for a Slurm batch step, a link
 * to the job's -o/-e file (launch.c), read only when it is a regular file
 * owned by whoever owns the link (the task's user), so that a user who
 * points it at someone else's file reads nothing. -1 when none.
 */
static int open_log(const char *path, struct stat *st)
{
	struct stat ln;
	int fd;

	if (lstat(path, &ln) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
	    (S_ISLNK(ln.st_mode) && st->st_uid != ln.st_uid)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int h_logs(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	const char *id = drv_http_req_param(req, 0);
	const char *stream = drv_http_req_query(req, "stream");
	int64_t offset, limit;
	char path[PATH_MAX], next[32];
	struct stat st;
	char *buf;
	ssize_t n;
	int fd;

	if (!cluster_token_ok(a, req, resp, "task logs need the cluster token"))
		return 0;
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
	if (!agent_valid_task_id(id)) {
		drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s",
				    id ? id : "", a->name);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/tasks/%s/%s.%s", a->state_dir, id, id,
		 strcmp(stream, "stdout") ? "err" : "out");
	fd = open_log(path, &st);
	if (fd < 0) {
		char to[PATH_MAX];
		ssize_t tl = readlink(path, to, sizeof(to) - 1);

		/* a Slurm job's -o/-e file: the link to it is there, the file
		 * is not a regular one of the task's user (/dev/null, say) */
		if (tl > 0) {
			to[tl] = '\0';
			drv_http_resp_error(resp, 404, "not_found", NULL, "task %s's %s went to %s, "
					    "which is not a file of the task's user: nothing kept",
					    id, stream, to);
		} else {
			drv_http_resp_error(resp, 404, "not_found", NULL, "no task %s on node %s",
					    id, a->name);
		}
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

/* A command in a running task (agent_exec.c), with the cluster token. */
static int h_exec(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	if (!cluster_token_ok(ctx, req, resp, "exec in a task needs the cluster token"))
		return 0;
	return agent_h_exec(req, resp, ctx);
}

/* srun --pty's terminal of a step task (agent_exec.c), with the cluster token. */
static int h_attach(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	if (!cluster_token_ok(ctx, req, resp, "attaching to a task needs the cluster token"))
		return 0;
	return agent_h_attach(req, resp, ctx);
}

/* A byte pipe to a task's port (agent_forward.c), with the cluster token. */
static int h_portforward(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	if (!cluster_token_ok(ctx, req, resp, "port-forward to a task needs the cluster token"))
		return 0;
	return agent_h_portforward(req, resp, ctx);
}

/* What the agent tells the controller at register: GPUs, matrix, HCAs, and
 * the tasks running now (cluster token). */
static int h_inventory(struct drv_http_req *req, struct drv_http_resp *resp, void *ctx)
{
	struct drv_agent *a = ctx;
	json_t *o;

	if (!cluster_token_ok(a, req, resp, "the inventory needs the cluster token"))
		return 0;
	pthread_mutex_lock(&a->mu);
	o = agent_register_body(a);
	json_object_set_new(o, "cgroup_limits", json_boolean(a->cg.enabled));
	if (!a->cg.enabled)
		json_object_set_new(o, "cgroup_why", json_string(a->cg.why));
	json_object_set_new(o, "driver_version", json_string(a->gpus.driver_version));
	pthread_mutex_unlock(&a->mu);
	drv_http_resp_json(resp, 200, o);
	return 0;
}

const struct drv_http_route agent_http_routes[] = {
	{ "GET", "/metrics", h_metrics, 0 },
	{ "GET", "/v1/inventory", h_inventory, 0 },
	{ "GET", "/healthz", h_healthz, 0 },
	{ "GET", "/v1/tasks/{}/logs", h_logs, 0 },
	{ "GET", "/v1/tasks/{}/exec", h_exec, 0 },
	{ "GET", "/v1/tasks/{}/attach", h_attach, 0 },
	{ "GET", "/v1/tasks/{}/portforward", h_portforward, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct drv_http_route agent_private_routes[] = {
	{ "GET", "/v1/inventory", h_inventory, 0 },
	{ "GET", "/healthz", h_healthz, 0 },
	{ "GET", "/v1/tasks/{}/logs", h_logs, 0 },
	{ "GET", "/v1/tasks/{}/exec", h_exec, 0 },
	{ "GET", "/v1/tasks/{}/attach", h_attach, 0 },
	{ "GET", "/v1/tasks/{}/portforward", h_portforward, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct drv_http_route agent_metrics_routes[] = {
	{ "GET", "/metrics", h_metrics, 0 },
	{ "GET", "/healthz", h_healthz, 0 },
	{ NULL, NULL, NULL, 0 },
};

