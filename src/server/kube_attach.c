/*
 * kube_attach.c: the Pods attach subresource (kubectl attach) over
 * WebSocket with Kubernetes' channel protocol (v5.channel.k8s.io,
 * v4.channel.k8s.io; the frames of kube_exec.c). drover keeps a task's
 * output in files on its node rather than a live pipe, so attaching is
 * following them: from the moment of the attach (as a container runtime's
 * attach shows no past output), stdout on channel 1 and stderr on channel
 * 2, read from the node's agent (GET /v1/tasks/ID/logs with an offset)
 * every 0.25 s, until the task ends (then a Success Status on channel 3)
 * or the client goes. Without a live pipe there is no stdin or terminal to
 * give: stdin=true or tty=true is refused with a message naming kubectl
 * exec instead.
 */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 250

struct kattach {
	struct drv_server *s;
	char *url, *tok;
	char nodename[256], what[320];
	uint64_t job;
	int32_t rank;
	int64_t epoch;
	int64_t off[2];   /* stdout, stderr: where the attach reads on */
};

static void kattach_free(void *cls)
{
	struct kattach *x = cls;
	struct drv_server *s = x->s;

	drv_free(x->url);
	drv_free(x->tok);
	drv_free(x);
	pthread_mutex_lock(&s->mu);
	s->nfetches--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/*
 * Stream i's bytes from x->off[i] on: sent on channel i + 1 as they are
 * read (at most 1 MiB a request), or, with w NULL, only skipped (the
 * output before the attach). 0; -1 when the agent cannot be read.
 */
static int drain(struct kattach *x, struct drv_http_client *cl, int i, struct drv_ws *w)
{
	static const char *const names[] = { "stdout", "stderr" };

	for (int round = 0; round < 64; round++) {
		struct drv_http_reply rep;
		char path[256], nx[32];
		bool more;

		snprintf(path, sizeof(path), "/v1/tasks/%llu.%d/logs?stream=%s&offset=%lld&limit=%d",
			 (unsigned long long)x->job, x->rank, names[i],
			 w ? (long long)x->off[i] : INT64_MAX, w ? 1 << 20 : 0);
		drv_http_reply_init(&rep);
		if (drv_http_request(cl, "GET", path, NULL, NULL, 0, -1, &rep) < 0 ||
		    (rep.status != 200 && rep.status != 404)) {
			drv_http_reply_release(&rep);
			return -1;
		}
		if (rep.status == 404) {   /* no output (yet) */
			drv_http_reply_release(&rep);
			return 0;
		}
		if (!w) {   /* past the end, limit=0: its next offset is the end */
			if (drv_http_reply_header(&rep, "X-Drover-Next-Offset", nx, sizeof(nx)))
				x->off[i] = strtoll(nx, NULL, 10);
			drv_http_reply_release(&rep);
			return 0;
		}
		if (rep.len)
			drv_ws_send_channel(w, i + 1, rep.body, rep.len);
		x->off[i] += (int64_t)rep.len;
		more = rep.len >= (1u << 20);
		drv_http_reply_release(&rep);
		if (!more)
			break;
	}
	return 0;
}

static bool task_over(struct kattach *x)
{
	struct drv_server *s = x->s;
	struct srv_job *j;
	bool over;

	pthread_mutex_lock(&s->mu);
	j = srv_job_get(s, x->job);
	over = s->stopping || !j || j->epoch != x->epoch || x->rank >= j->ntasks ||
	       j->tasks[x->rank].ended;
	pthread_mutex_unlock(&s->mu);
	return over;
}

/* Until the task ends or the client goes: its new output, as it comes. */
static void session(void *cls, struct drv_ws *w)
{
	struct kattach *x = cls;
	struct drv_http_client cl;
	char msg[2048];

	drv_http_client_init(&cl, x->url, x->tok);
	drv_http_client_set_ca(&cl, x->s->cfg.tls_ca_file);
	cl.timeout_ms = 10000;
	/* x->off: the ends before the first poll, so only what comes after */
	for (int i = 0; i < 2; i++)
		if (drain(x, &cl, i, NULL) < 0)
			goto lost;
	for (;;) {
		bool over = task_over(x);
		unsigned char *m;
		size_t len;
		int op, rc;

		for (int i = 0; i < 2; i++)
			if (drain(x, &cl, i, w) < 0)
				goto lost;
		if (over) {
			kube_ws_finish(w, json_pack("{s:{},s:s}", "metadata", "status", "Success"));
			goto out;
		}
		rc = drv_ws_read(w, &op, &m, &len, POLL_MS);
		if (rc == 0)
			drv_free(m);   /* nothing asked of the client: no stdin, no TTY */
		else if (rc != DRV_ETIMEDOUT)
			goto out;      /* the client went (kubectl attach's ^C) */
	}
lost:
	snprintf(msg, sizeof(msg), "error attaching to %s: cannot read its output from node %s's "
		 "agent: %s", x->what, x->nodename, cl.err[0] ? cl.err : "it refused");
	kube_ws_finish(w, kube_ws_failure("InternalError", 500, msg));
out:
	drv_http_client_release(&cl);
}

int kube_attach(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
		struct drv_http_resp *o)
{
	const char *cont = drv_http_req_query(r, "container"), *proto = srv_exec_proto(r);
	struct kube_jobs js;
	struct kattach *x;
	struct srv_job *j;
	json_t *pod = NULL;
	const char *cname;
	int32_t rk;

	if (strcmp(q->res->kind, "Pod") != 0) {
		kube_status(o, 404, "NotFound", NULL, "only pods have attach");
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	kube_jobs_collect(s, &js);
	if (kube_find_pod(s, q, &js, cont, o, &j, &rk, &pod, &cname) < 0)
		goto out;
	if (rk >= j->ntasks || j->tasks[rk].state != T_RUNNING ||
	    !s->nodes[j->tasks[rk].node].agent_url) {
		kube_status(o, 400, "BadRequest", NULL,
			    "cannot attach to pod %s: its container \"%s\" is not running "
			    "(job %llu is %s)", q->name, cname,
			    (unsigned long long)j->id, srv_jstate_name(j->state));
		goto out;
	}
	if (kube_query_flag(r, "stdin") || kube_query_flag(r, "tty")) {
		kube_status(o, 400, "BadRequest", NULL,
			    "pods/attach: %s: drover keeps a task's output in files, not a live "
			    "terminal, so attach only streams it (kubectl attach without -i and "
			    "-t); for a command with stdin or a TTY use kubectl exec -it %s -- sh",
			    kube_query_flag(r, "stdin") ? "stdin=true" : "tty=true", q->name);
		goto out;
	}
	if (!proto || s->stopping) {
		if (s->stopping)
			kube_status(o, 503, "ServiceUnavailable", NULL, "the server is stopping");
		else
			kube_status(o, 400, "BadRequest", NULL,
				    "pods/attach: drover serves attach over WebSocket with the "
				    "subprotocol v5.channel.k8s.io or v4.channel.k8s.io (kubectl 1.30 "
				    "or later), not SPDY%s", drv_http_req_is_websocket(r)
				    ? "; none of them was offered" : "");
		goto out;
	}
	x = drv_calloc(1, sizeof(*x));
	x->s = s;
	x->url = drv_strdup(s->nodes[j->tasks[rk].node].agent_url);
	x->tok = s->cfg.cluster_token ? drv_strdup(s->cfg.cluster_token) : NULL;
	snprintf(x->nodename, sizeof(x->nodename), "%s", s->nodes[j->tasks[rk].node].name);
	snprintf(x->what, sizeof(x->what), "pod %s", q->name);
	x->job = j->id;
	x->rank = rk;
	x->epoch = j->epoch;
	s->nfetches++;   /* srv_logs_drain waits for it too */
	drv_http_resp_websocket(r, o, proto, session, x, kattach_free);
out:
	kube_jobs_release(&js);
	pthread_mutex_unlock(&s->mu);
	json_decref(pod);
	return 0;
}
