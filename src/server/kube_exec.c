/*
 * kube_exec.c: the Pods exec subresource (kubectl exec) over WebSocket
 * with Kubernetes' channel protocol (v5.channel.k8s.io, v4.channel.k8s.io):
 * each binary message starts with its channel (0 stdin, 1 stdout, 2
 * stderr, 3 the final Status as JSON, 4 a TTY's size; v5's 255 closes a
 * channel). The command runs on the pod's node, in the task's environment:
 * the agent's exec WebSocket (GET /v1/tasks/ID/exec, agent_exec.c; a
 * container task: podman exec; a host task: the task's own env, cwd and
 * user), which speaks the same frames. The session's thread relays the
 * frames both ways as they come, so output shows while the command runs
 * and stdin (-i) reaches it as typed; a TTY (-t) is the agent's pty. The
 * command ends when either side goes. drover exec's route (GET
 * /v1/jobs/ID/exec, jobs_api.c) is the same session (srv_exec_answer).
 * SPDY is not served: it is answered with a message that says so.
 */
#include "kube_int.h"

#include "drover/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define AGENT_PROTO "v5.channel.k8s.io"

struct kexec {
	struct drv_server *s;
	char *url, *tok, *path;   /* path: the agent's exec, with its query */
	char nodename[256], what[320];
	bool v5, in;
	int64_t retry_ms;         /* the agent's 404 (task not there yet) retried this long */
};

static void kexec_free(void *cls)
{
	struct kexec *x = cls;
	struct drv_server *s = x->s;

	drv_free(x->url);
	drv_free(x->tok);
	drv_free(x->path);
	drv_free(x);
	pthread_mutex_lock(&s->mu);
	s->nfetches--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void kube_ws_finish(struct drv_ws *w, json_t *st)
{
	char *t = json_dumps(st, JSON_COMPACT);

	drv_ws_send_channel(w, 3, t, strlen(t));
	free(t);
	json_decref(st);
	drv_ws_close(w, 1000, NULL);
}

json_t *kube_ws_failure(const char *reason, int code, const char *msg)
{
	return json_pack("{s:{},s:s,s:s,s:s,s:i}", "metadata", "status", "Failure", "reason", reason,
			 "message", msg, "code", code);
}

/* Whether w has a message to read now (buffered, or its socket says so). */
static bool ready(struct drv_ws *w, const struct pollfd *p)
{
	return drv_ws_buffered(w) || (p->revents & (POLLIN | POLLHUP | POLLERR));
}

/* One message from one side to the other. 0; 1 when from's peer closed
 * (or failed); 2 when the agent's message was the final Status. */
static int pass(struct drv_ws *from, struct drv_ws *to, bool to_v5, bool from_agent)
{
	unsigned char *m;
	size_t len;
	int op, rc = drv_ws_read(from, &op, &m, &len, 100);

	if (rc == DRV_ETIMEDOUT)
		return 0;
	if (rc != 0)
		return 1;
	rc = 0;
	if (len && (to_v5 || m[0] != 255))   /* v4 has no close of a channel */
		drv_ws_send(to, DRV_WS_BINARY, m, len);
	if (from_agent && len && m[0] == 3)
		rc = 2;
	drv_free(m);
	return rc;
}

/* Relays between the client (w) and the agent (aw) until either ends. */
static void relay(struct kexec *x, struct drv_ws *w, struct drv_ws *aw)
{
	char msg[1024];

	for (;;) {
		struct pollfd p[2] = { { drv_ws_fd(w), POLLIN, 0 }, { drv_ws_fd(aw), POLLIN, 0 } };
		int rc;

		if (!drv_ws_buffered(w) && !drv_ws_buffered(aw) && poll(p, 2, 1000) < 0 &&
		    errno != EINTR)
			break;
		if (ready(aw, &p[1]) && (rc = pass(aw, w, x->v5, true)) != 0) {
			if (rc == 1) {
				snprintf(msg, sizeof(msg), "error executing command in %s: the "
					 "connection to node %s ended before the command", x->what,
					 x->nodename);
				kube_ws_finish(w, kube_ws_failure("InternalError", 500, msg));
			} else {
				drv_ws_close(w, 1000, NULL);
			}
			return;
		}
		if (ready(w, &p[0]) && pass(w, aw, true, false) == 1) {
			drv_ws_close(aw, 1000, NULL);   /* the agent kills the command */
			return;
		}
	}
}

static void session(void *cls, struct drv_ws *w)
{
	struct kexec *x = cls;
	struct drv_ws *aw = NULL;
	char msg[2048], err[1024];
	long status;

	if (x->in && !x->v5) {
		kube_ws_finish(w, kube_ws_failure("BadRequest", 400,
						  "exec with stdin needs the v5.channel.k8s.io "
						  "protocol (kubectl 1.30 or later)"));
		return;
	}
	for (int64_t until = drv_mono_ms() + x->retry_ms;;) {
		status = 0;
		if (drv_ws_connect(x->url, x->path, x->tok, x->s->cfg.tls_ca_file, AGENT_PROTO, &aw,
				   &status, err, sizeof(err)) == 0 || status != 404 ||
		    drv_mono_ms() >= until)
			break;
		usleep(50000);   /* the agent's next assignment starts it */
	}
	if (!aw) {
		snprintf(msg, sizeof(msg), "error executing command in %s on node %s: %s", x->what,
			 x->nodename, err);
		kube_ws_finish(w, kube_ws_failure("InternalError", 500, msg));
		return;
	}
	relay(x, w, aw);
	drv_ws_free(aw);
	/* the client's close, briefly */
	{
		unsigned char *m;
		size_t len;
		int op;

		while (drv_ws_read(w, &op, &m, &len, 1000) == 0)
			drv_free(m);
	}
}

bool kube_query_flag(struct drv_http_req *r, const char *name)
{
	const char *v = drv_http_req_query(r, name);

	return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

/* The agent's exec path for task tid with req's command and flags. */
static char *agent_path(const char *tid, json_t *cmd, struct drv_http_req *r, bool *in)
{
	struct drv_dynbuf b;
	static const char *const flags[] = { "stdin", "stdout", "stderr", "tty" };
	char *p;

	drv_dynbuf_init(&b, 1u << 20);
	drv_dynbuf_addf(&b, "/v1/tasks/%s/exec?", tid);
	for (size_t i = 0; i < json_array_size(cmd); i++) {
		char *e = drv_http_escape(json_string_value(json_array_get(cmd, i)) ?: "");

		drv_dynbuf_addf(&b, "%scommand=%s", i ? "&" : "", e);
		drv_free(e);
	}
	for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++)
		if (kube_query_flag(r, flags[i]))
			drv_dynbuf_addf(&b, "&%s=true", flags[i]);
	*in = kube_query_flag(r, "stdin");
	p = drv_strndup(b.buf, b.len);
	drv_dynbuf_release(&b);
	return p;
}

const char *srv_exec_proto(struct drv_http_req *r)
{
	if (!drv_http_req_is_websocket(r))
		return NULL;
	return drv_http_req_ws_offers(r, "v5.channel.k8s.io") ? "v5.channel.k8s.io"
	       : drv_http_req_ws_offers(r, "v4.channel.k8s.io") ? "v4.channel.k8s.io"
	       : NULL;
}

void srv_agent_ws_answer(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
			 int32_t node, const char *what, char *path, bool in, int64_t retry_ms)
{
	struct kexec *x = drv_calloc(1, sizeof(*x));
	const char *proto = srv_exec_proto(r);

	x->s = s;
	x->url = drv_strdup(s->nodes[node].agent_url);
	x->tok = s->cfg.cluster_token ? drv_strdup(s->cfg.cluster_token) : NULL;
	snprintf(x->nodename, sizeof(x->nodename), "%s", s->nodes[node].name);
	snprintf(x->what, sizeof(x->what), "%s", what);
	x->path = path;
	x->in = in;
	x->retry_ms = retry_ms;
	x->v5 = strcmp(proto, "v5.channel.k8s.io") == 0;
	s->nfetches++;   /* srv_logs_drain waits for it too */
	drv_http_resp_websocket(r, o, proto, session, x, kexec_free);
}

void srv_exec_answer(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		     const struct srv_job *j, int32_t rk, const char *what, json_t *cmd)
{
	char tid[64];
	bool in;
	char *path;

	snprintf(tid, sizeof(tid), "%llu.%d", (unsigned long long)j->id, rk);
	path = agent_path(tid, cmd, r, &in);
	srv_agent_ws_answer(s, r, o, j->tasks[rk].node, what, path, in, 0);
}

int kube_exec(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	      struct drv_http_resp *o)
{
	const char *cont = drv_http_req_query(r, "container");
	json_t *cmd = drv_http_req_query_all(r, "command"), *pod = NULL;
	struct kube_jobs js;
	struct srv_job *j;
	const char *cname;
	char what[320];
	int32_t rk;

	if (strcmp(q->res->kind, "Pod") != 0) {
		kube_status(o, 404, "NotFound", NULL, "only pods have exec");
		json_decref(cmd);
		return 0;
	}
	if (!json_array_size(cmd)) {
		kube_status(o, 400, "BadRequest", NULL, "pods/exec: command: none given, expected "
			    "at least one (kubectl exec POD -- CMD ARG...)");
		json_decref(cmd);
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	kube_jobs_collect(s, &js);
	if (kube_find_pod(s, q, &js, cont, o, &j, &rk, &pod, &cname) < 0)
		goto out;
	if (rk >= j->ntasks || j->tasks[rk].state != T_RUNNING ||
	    !s->nodes[j->tasks[rk].node].agent_url) {
		kube_status(o, 400, "BadRequest", NULL,
			    "cannot exec in pod %s: its container \"%s\" is not running "
			    "(job %llu is %s)", q->name, cname,
			    (unsigned long long)j->id, srv_jstate_name(j->state));
		goto out;
	}
	/* after the pod's checks: kubectl falls back to SPDY when the switch
	 * is refused, and its user should read why the pod cannot exec */
	if (!srv_exec_proto(r) || s->stopping) {
		if (s->stopping)
			kube_status(o, 503, "ServiceUnavailable", NULL, "the server is stopping");
		else
			kube_status(o, 400, "BadRequest", NULL,
				    "pods/exec: drover serves exec over WebSocket with the subprotocol "
				    "v5.channel.k8s.io or v4.channel.k8s.io (kubectl 1.30 or later), "
				    "not SPDY%s", drv_http_req_is_websocket(r)
				    ? "; none of them was offered" : "");
		goto out;
	}
	snprintf(what, sizeof(what), "pod %s", q->name);
	srv_exec_answer(s, r, o, j, rk, what, cmd);
out:
	kube_jobs_release(&js);
	pthread_mutex_unlock(&s->mu);
	json_decref(pod);
	json_decref(cmd);
	return 0;
}
