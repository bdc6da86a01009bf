/*
 * logs_fetch.c: GET /v1/jobs/{id}/logs asks the task's agent for the bytes
 * (docs/api.md); this is that request, made on a thread of its own.
 *
 * The agent may be slow or gone (a connect timeout is seconds), and an
 * event thread of the HTTP server must not wait that long: the handler
 * defers its reply, a fetch thread makes the request and wakes the server
 * when it has the answer. The fetch is shared by the thread and the
 * request (whose client may go away first); the last to let go frees it.
 * At most MAX_FETCHES run at once; past that a fetch is made inline, as
 * before. drv_server_stop waits for running fetches (srv_logs_drain),
 * which the client's 10 s timeout bounds.
 */
#include "server_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define MAX_FETCHES 32

struct logs_fetch {
	struct drv_server *s;
	struct srv_logs_req q;
	struct drv_http_resp res;  /* the answer, once done */
	atomic_bool done;
	atomic_int refs;
};

/* The request to the agent and the reply made of its answer. */
static void fetch(const struct srv_logs_req *q, struct drv_http_resp *o)
{
	struct drv_http_client cl;
	struct drv_http_reply rep;
	char next[32];
	int rc;

	drv_http_client_init(&cl, q->url, q->tok);
	drv_http_client_set_ca(&cl, q->ca);
	cl.timeout_ms = 10000;
	drv_http_reply_init(&rep);
	rc = drv_http_request(&cl, "GET", q->path, NULL, NULL, 0, -1, &rep);
	if (rc < 0) {
		drv_http_resp_error(o, 503, "unavailable", NULL, "node %s: %s", q->nodename, cl.err);
	} else if (rep.status != 200) {
		char msg[300];

		drv_http_resp_error(o, rep.status == 404 ? 404 : 503,
				    rep.status == 404 ? "not_found" : "unavailable", NULL,
				    "node %s: %s", q->nodename,
				    drv_http_error_message(&rep, msg, sizeof(msg)));
	} else {
		drv_http_resp_bytes(o, 200, "text/plain; charset=utf-8", rep.body, rep.len);
		if (!drv_http_reply_header(&rep, "X-Drover-Next-Offset", next, sizeof(next)))
			snprintf(next, sizeof(next), "%lld", (long long)(q->offset + (int64_t)rep.len));
		drv_http_resp_header(o, "X-Drover-Next-Offset", next);
	}
	drv_http_reply_release(&rep);
	drv_http_client_release(&cl);
}

static void req_release(struct srv_logs_req *q)
{
	drv_free(q->url);
	drv_free(q->tok);
}

static void unref(void *cls)
{
	struct logs_fetch *f = cls;

	if (atomic_fetch_sub(&f->refs, 1) != 1)
		return;
	req_release(&f->q);
	drv_free(f->res.body);
	drv_free(f->res.headers);
	drv_free(f);
}

static void *fetch_main(void *arg)
{
	struct logs_fetch *f = arg;
	struct drv_server *s = f->s;

	fetch(&f->q, &f->res);
	pthread_mutex_lock(&s->mu);
	atomic_store(&f->done, true);
	drv_http_wake(s->http);
	s->nfetches--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	unref(f);
	return NULL;
}

static int fetch_ready(void *cls, struct drv_http_resp *resp, int timed_out)
{
	struct logs_fetch *f = cls;

	if (!atomic_load(&f->done)) {
		if (!timed_out)
			return DRV_HTTP_AGAIN;
		drv_http_resp_error(resp, 503, "unavailable", NULL,
				    "node %s: the server is stopping", f->q.nodename);
		return 0;
	}
	*resp = f->res;   /* the handler left resp empty: nothing to free */
	memset(&f->res, 0, sizeof(f->res));
	return 0;
}

void srv_logs_fetch(struct drv_server *s, struct drv_http_req *r, struct drv_http_resp *o,
		    struct srv_logs_req *q)
{
	struct logs_fetch *f;
	pthread_attr_t attr;
	pthread_t th;
	bool own_thread;

	q->ca = s->cfg.tls_ca_file;   /* lives as long as the server */
	pthread_mutex_lock(&s->mu);
	own_thread = s->nfetches < MAX_FETCHES && !s->stopping;
	if (own_thread)
		s->nfetches++;
	pthread_mutex_unlock(&s->mu);
	if (!own_thread) {
		fetch(q, o);
		req_release(q);
		return;
	}
	f = drv_calloc(1, sizeof(*f));
	f->s = s;
	f->q = *q;   /* taken */
	atomic_init(&f->refs, 2);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, fetch_main, f) != 0) {
		pthread_mutex_lock(&s->mu);
		s->nfetches--;
		pthread_mutex_unlock(&s->mu);
		fetch(&f->q, o);
		atomic_init(&f->refs, 1);
		unref(f);
	} else {
		drv_http_defer(r, fetch_ready, f, unref, -1);
	}
	pthread_attr_destroy(&attr);
}

void srv_logs_drain(struct drv_server *s)
{
	pthread_mutex_lock(&s->mu);
	while (s->nfetches > 0)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}
