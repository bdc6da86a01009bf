/*
 * kube_exec.c: the Pods exec subresource (kubectl exec) over WebSocket
 * with Kubernetes' channel protocol (v5.channel.k8s.io, v4.channel.k8s.io):
 * each binary message starts with its channel (0 stdin, 1 stdout, 2
 * stderr, 3 the final Status as JSON; v5's 255 closes a channel). The
 * command runs on the pod's node, in the task's environment: the agent's
 * POST /v1/tasks/ID/exec (a container task: podman exec; a host task: the
 * task's own env, cwd and user). stdin (kubectl exec -i) is read whole
 * before the command starts (v5 says when it ends); the output comes once
 * the command has ended, within DRV_KUBE_EXEC_TIMEOUT_S. A TTY (-t) and
 * SPDY are not served: they answer with a message that says so.
 */
#include "kube_int.h"

#include <stdio.h>
#include <string.h>

#define DRV_KUBE_EXEC_TIMEOUT_S 60
#define STDIN_MAX (4u << 20)

struct kexec {
	struct drv_server *s;
	char *url, *tok, *body_argv;   /* body_argv: the command as a JSON array */
	char tid[64], nodename[256], pod[320];
	bool v5, in, out, err, tty;
};

static void kexec_free(void *cls)
{
	struct kexec *x = cls;
	struct drv_server *s = x->s;

	drv_free(x->url);
	drv_free(x->tok);
	drv_free(x->body_argv);
	drv_free(x);
	pthread_mutex_lock(&s->mu);
	s->nfetches--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void send_chan(struct drv_ws *w, int ch, const char *p, size_t n)
{
	size_t chunk = 32 << 10;

	do {
		size_t k = n < chunk ? n : chunk;
		char *m = drv_malloc(k + 1);

		m[0] = (char)ch;
		memcpy(m + 1, p, k);
		drv_ws_send(w, DRV_WS_BINARY, m, k + 1);
		drv_free(m);
		p += k;
		n -= k;
	} while (n);
}

/* The final Status on channel 3, then the close. */
static void finish(struct drv_ws *w, json_t *st)
{
	char *t = json_dumps(st, JSON_COMPACT);

	send_chan(w, 3, t, strlen(t));
	free(t);
	json_decref(st);
	drv_ws_close(w, 1000, NULL);
}

static json_t *failure(const char *reason, int code, const char *msg)
{
	return json_pack("{s:{},s:s,s:s,s:s,s:i}", "metadata", "status", "Failure", "reason", reason,
			 "message", msg, "code", code);
}

/* stdin until v5's close of channel 0 or the peer's end; NULL on error. */
static char *read_stdin(struct drv_ws *w, size_t *n)
{
	char *buf = drv_malloc(1);

	*n = 0;
	for (;;) {
		unsigned char *m;
		size_t len;
		int op, rc = drv_ws_read(w, &op, &m, &len, DRV_KUBE_EXEC_TIMEOUT_S * 1000);

		if (rc == 1)
			return buf;
		if (rc < 0) {
			drv_free(buf);
			return NULL;
		}
		if (len >= 2 && m[0] == 255 && m[1] == 0) {
			drv_free(m);
			return buf;
		}
		if (len >= 1 && m[0] == 0 && *n + len - 1 <= STDIN_MAX) {
			buf = drv_realloc(buf, *n + len);
			memcpy(buf + *n, m + 1, len - 1);
			*n += len - 1;
		}
		drv_free(m);
	}
}

/* The bytes of the base64 field f of rep's JSON (owned), *n its length. */
static unsigned char *field_b64(const json_t *o, const char *f, size_t *n)
{
	unsigned char *b = NULL;
	const char *s = drv_json_str(o, f);

	*n = 0;
	if (s && drv_base64_decode(s, &b, n) < 0)
		b = NULL, *n = 0;
	return b;
}

static void session(void *cls, struct drv_ws *w)
{
	struct kexec *x = cls;
	struct drv_http_client cl;
	struct drv_http_reply rep;
	char path[128], msg[2048], *in = NULL, *body;
	size_t nin = 0;
	json_t *req, *o = NULL;
	int rc;

	if (x->tty) {
		finish(w, failure("BadRequest", 400, "drover does not serve a TTY for exec "
				  "(kubectl exec -t): run the command without -t"));
		return;
	}
	if (x->in) {
		if (!x->v5) {
			finish(w, failure("BadRequest", 400, "exec with stdin needs the "
					  "v5.channel.k8s.io protocol (kubectl 1.30 or later)"));
			return;
		}
		if (!(in = read_stdin(w, &nin)))
			return;
	}
	req = json_pack("{s:o,s:i}", "command", json_loads(x->body_argv, 0, NULL), "timeout_s",
			DRV_KUBE_EXEC_TIMEOUT_S);
	if (in) {
		char *b = drv_base64_encode(in, nin);

		json_object_set_new(req, "stdin", json_string(b));
		drv_free(b);
		drv_free(in);
	}
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	drv_http_client_init(&cl, x->url, x->tok);
	drv_http_client_set_ca(&cl, x->s->cfg.tls_ca_file);
	cl.timeout_ms = (DRV_KUBE_EXEC_TIMEOUT_S + 10) * 1000L;
	drv_http_reply_init(&rep);
	snprintf(path, sizeof(path), "/v1/tasks/%s/exec", x->tid);
	rc = drv_http_request(&cl, "POST", path, "application/json", body, strlen(body), -1, &rep);
	free(body);
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "node %s: %s", x->nodename, cl.err);
		finish(w, failure("InternalError", 500, msg));
	} else if (rep.status != 200 || !(o = json_loadb(rep.body, rep.len, 0, NULL))) {
		char m2[400];

		snprintf(msg, sizeof(msg), "error executing command in pod %s on node %s: %s", x->pod,
			 x->nodename, drv_http_error_message(&rep, m2, sizeof(m2)));
		finish(w, failure("InternalError", 500, msg));
	} else {
		size_t n;
		unsigned char *b;
		json_int_t code = json_integer_value(json_object_get(o, "exit_code"));

		if ((b = field_b64(o, "stdout", &n)) && n && x->out)
			send_chan(w, 1, (char *)b, n);
		drv_free(b);
		if ((b = field_b64(o, "stderr", &n)) && n && x->err)
			send_chan(w, 2, (char *)b, n);
		drv_free(b);
		if (drv_json_str(o, "error")) {
			snprintf(msg, sizeof(msg), "error executing command in pod %s: %s", x->pod,
				 drv_json_str(o, "error"));
			finish(w, failure("InternalError", 500, msg));
		} else if (code == 0) {
			finish(w, json_pack("{s:{},s:s}", "metadata", "status", "Success"));
		} else {
			char c[32];

			snprintf(c, sizeof(c), "%lld", (long long)code);
			snprintf(msg, sizeof(msg), "command terminated with non-zero exit code: exit "
				 "status %lld", (long long)code);
			finish(w, json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s,s:s}]}}", "metadata",
					    "status", "Failure", "reason", "NonZeroExitCode", "message",
					    msg, "details", "causes", "reason", "ExitCode", "message", c));
		}
	}
	json_decref(o);
	drv_http_reply_release(&rep);
	drv_http_client_release(&cl);
	/* the client's close, briefly */
	{
		unsigned char *m;
		size_t len;
		int op;

		while (drv_ws_read(w, &op, &m, &len, 1000) == 0)
			drv_free(m);
	}
}

static bool flag(struct drv_http_req *r, const char *name)
{
	const char *v = drv_http_req_query(r, name);

	return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

int kube_exec(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	      struct drv_http_resp *o)
{
	const char *cont = drv_http_req_query(r, "container");
	json_t *cmd = drv_http_req_query_all(r, "command"), *pod = NULL;
	struct kube_jobs js;
	struct kexec *x = NULL;
	struct srv_job *j;
	const char *cname;
	int32_t rk;
	const char *proto = drv_http_req_ws_offers(r, "v5.channel.k8s.io") ? "v5.channel.k8s.io"
			    : drv_http_req_ws_offers(r, "v4.channel.k8s.io") ? "v4.channel.k8s.io"
			    : NULL;

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
	x = drv_calloc(1, sizeof(*x));
	x->s = s;
	x->url = drv_strdup(s->nodes[j->tasks[rk].node].agent_url);
	x->tok = s->cfg.cluster_token ? drv_strdup(s->cfg.cluster_token) : NULL;
	snprintf(x->nodename, sizeof(x->nodename), "%s", s->nodes[j->tasks[rk].node].name);
	snprintf(x->tid, sizeof(x->tid), "%llu.%d", (unsigned long long)j->id, rk);
	snprintf(x->pod, sizeof(x->pod), "%s", q->name);
	/* after the pod's checks: kubectl falls back to SPDY when the switch
	 * is refused, and its user should read why the pod cannot exec */
	if (!drv_http_req_is_websocket(r) || !proto || s->stopping) {
		if (s->stopping)
			kube_status(o, 503, "ServiceUnavailable", NULL, "the server is stopping");
		else
			kube_status(o, 400, "BadRequest", NULL,
				    "pods/exec: drover serves exec over WebSocket with the subprotocol "
				    "v5.channel.k8s.io or v4.channel.k8s.io (kubectl 1.30 or later), "
				    "not SPDY%s", drv_http_req_is_websocket(r)
				    ? "; none of them was offered" : "");
		drv_free(x->url);
		drv_free(x->tok);
		drv_free(x);
		goto out;
	}
	x->body_argv = json_dumps(cmd, JSON_COMPACT);
	x->v5 = strcmp(proto, "v5.channel.k8s.io") == 0;
	x->in = flag(r, "stdin");
	x->out = flag(r, "stdout");
	x->err = flag(r, "stderr");
	x->tty = flag(r, "tty");
	s->nfetches++;   /* srv_logs_drain waits for it too */
	drv_http_resp_websocket(r, o, proto, session, x, kexec_free);
out:
	kube_jobs_release(&js);
	pthread_mutex_unlock(&s->mu);
	json_decref(pod);
	json_decref(cmd);
	return 0;
}
