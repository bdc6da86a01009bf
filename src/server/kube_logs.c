/*
 * kube_logs.c: the Pods log subresource (kubectl logs): the task's output,
 * read from its agent as GET /v1/jobs/ID/logs does, on a thread of its own
 * (an event thread never waits on an agent), streamed to the client.
 * tailLines keeps the last lines; follow=true keeps reading (every 0.5 s)
 * until the task has ended; container= must name the pod's container.
 * Without follow the output is stdout then stderr; with follow, stdout.
 */
#include "kube_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct klog {
	struct drv_server *s;
	pthread_mutex_t mu;
	char *buf;
	size_t len, off;
	bool done;
	atomic_int refs;
	char *url, *tok;
	char nodename[256];
	uint64_t job;
	int32_t rank;
	int64_t epoch;
	bool follow;
	int64_t tail;          /* -1: all */
};

static void klog_unref(void *cls)
{
	struct klog *l = cls;

	if (atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&l->mu);
	drv_free(l->buf);
	drv_free(l->url);
	drv_free(l->tok);
	drv_free(l);
}

static void append(struct klog *l, const char *b, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&l->mu);
	l->buf = drv_realloc(l->buf, l->len + n + 1);
	memcpy(l->buf + l->len, b, n);
	l->len += n;
	pthread_mutex_unlock(&l->mu);
	drv_http_wake(l->s->http);
}

/* Reads stream from *off on; appends to out (a growing buffer). Returns
 * false when the agent cannot be read. */
static bool read_all(struct klog *l, struct drv_http_client *cl, const char *stream,
		     int64_t *off, char **out, size_t *olen)
{
	for (int i = 0; i < 64; i++) {
		char path[256];
		struct drv_http_reply rep;
		bool more;

		snprintf(path, sizeof(path), "/v1/tasks/%llu.%d/logs?stream=%s&offset=%lld&limit=%d",
			 (unsigned long long)l->job, l->rank, stream, (long long)*off, 1 << 20);
		drv_http_reply_init(&rep);
		if (drv_http_request(cl, "GET", path, NULL, NULL, 0, -1, &rep) < 0 ||
		    (rep.status != 200 && rep.status != 404)) {
			drv_http_reply_release(&rep);
			return false;
		}
		if (rep.status == 404) {   /* no output (yet) */
			drv_http_reply_release(&rep);
			return true;
		}
		*out = drv_realloc(*out, *olen + rep.len + 1);
		memcpy(*out + *olen, rep.body, rep.len);
		*olen += rep.len;
		*off += (int64_t)rep.len;
		more = rep.len >= (1u << 20);
		drv_http_reply_release(&rep);
		if (!more)
			break;
	}
	return true;
}

static const char *tail_of(const char *b, size_t n, int64_t lines)
{
	size_t i = n;
	int64_t seen = 0;

	if (lines < 0)
		return b;
	if (i > 0 && b[i - 1] == '\n')
		i--;
	while (i > 0) {
		if (b[i - 1] == '\n' && ++seen == lines)
			return b + i;
		i--;
	}
	return lines == 0 ? b + n : b;
}

static bool task_over(struct klog *l)
{
	struct drv_server *s = l->s;
	struct srv_job *j;
	bool over;

	pthread_mutex_lock(&s->mu);
	j = srv_job_get(s, l->job);
	over = s->stopping || !j || j->epoch != l->epoch || l->rank >= j->ntasks ||
	       j->tasks[l->rank].ended;
	pthread_mutex_unlock(&s->mu);
	return over;
}

static void *klog_main(void *arg)
{
	struct klog *l = arg;
	struct drv_server *s = l->s;
	struct drv_http_client cl;
	int64_t off = 0, eoff = 0;
	char *first = NULL;
	size_t flen = 0;

	drv_http_client_init(&cl, l->url, l->tok);
	drv_http_client_set_ca(&cl, s->cfg.tls_ca_file);
	cl.timeout_ms = 10000;
	if (!read_all(l, &cl, "stdout", &off, &first, &flen)) {
		const char *m = "drover: cannot read the task's output from its node's agent\n";

		append(l, m, strlen(m));
	} else {
		if (!l->follow)
			read_all(l, &cl, "stderr", &eoff, &first, &flen);
		if (first) {
			const char *t = tail_of(first, flen, l->tail);

			append(l, t, flen - (size_t)(t - first));
		}
		while (l->follow) {
			bool over = task_over(l);
			char *more = NULL;
			size_t mlen = 0;

			if (!read_all(l, &cl, "stdout", &off, &more, &mlen)) {
				drv_free(more);
				break;
			}
			append(l, more, mlen);
			drv_free(more);
			if (over)
				break;
			usleep(500 * 1000);
		}
	}
	drv_free(first);
	drv_http_client_release(&cl);
	pthread_mutex_lock(&l->mu);
	l->done = true;
	pthread_mutex_unlock(&l->mu);
	pthread_mutex_lock(&s->mu);
	drv_http_wake(s->http);
	s->nfetches--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	klog_unref(l);
	return NULL;
}

static ssize_t klog_read(void *cls, char *buf, size_t max)
{
	struct klog *l = cls;
	ssize_t n = 0;

	pthread_mutex_lock(&l->mu);
	if (l->off < l->len) {
		n = (ssize_t)DRV_MIN(max, l->len - l->off);
		memcpy(buf, l->buf + l->off, (size_t)n);
		l->off += (size_t)n;
	} else if (l->done) {
		n = -1;
	}
	pthread_mutex_unlock(&l->mu);
	return n;
}

int kube_find_pod(struct drv_server *s, const struct kube_req *q, const struct kube_jobs *js,
		  const char *cont, struct drv_http_resp *o, struct srv_job **jp, int32_t *rkp,
		  json_t **pod, const char **cname)
{
	for (size_t i = 0; i < js->n; i++) {
		struct srv_job *j = js->v[i];

		/* a parent is no pod: its elements are (as kube_job_objects
		 * lists them), and element 0 bears the name its rank 0 would */
		if (j->par || strcmp(kube_job_ns(j), q->ns[0] ? q->ns : "default") != 0 ||
		    (js->deleted[i] && srv_jstate_final(j->state) && !j->holding) ||
		    (!q->c->admin && strcmp(q->c->user, j->spec.job.user) != 0))
			continue;
		for (int32_t rk = 0; rk < kube_job_npods(j); rk++) {
			char nm[320];

			kube_pod_name(j, rk, nm, sizeof(nm));
			if (strcmp(nm, q->name) != 0)
				continue;
			*pod = kube_pod_json(s, j, rk, 1, false);
			*cname = drv_json_str(json_array_get(json_object_get(json_object_get(*pod, "spec"),
									     "containers"), 0), "name");
			if (cont && strcmp(cont, *cname) != 0) {
				kube_status(o, 400, "BadRequest", NULL,
					    "container %s is not valid for pod %s (its container: %s)",
					    cont, q->name, *cname);
				return -1;
			}
			*jp = j;
			*rkp = rk;
			return 0;
		}
	}
	kube_status(o, 404, "NotFound", json_pack("{s:s,s:s}", "name", q->name, "kind", "pods"),
		    "pods \"%s\" not found", q->name);
	return -1;
}

int kube_logs(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	      struct drv_http_resp *o)
{
	const char *cont = drv_http_req_query(r, "container");
	const char *fol = drv_http_req_query(r, "follow");
	struct kube_jobs js;
	struct klog *l = NULL;
	int64_t tail = -1;
	pthread_t th;
	pthread_attr_t attr;
	json_t *pod = NULL;
	struct srv_job *j;
	const char *cname;
	int32_t rk;

	if (strcmp(q->res->kind, "Pod") != 0) {
		kube_status(o, 404, "NotFound", NULL, "only pods have logs");
		return 0;
	}
	if (drv_http_req_query(r, "tailLines") &&
	    drv_http_req_query_int(r, "tailLines", -1, 0, INT64_MAX, &tail, o) < 0) {
		kube_status(o, 400, "BadRequest", NULL, "tailLines: expected a whole number");
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	kube_jobs_collect(s, &js);
	if (kube_find_pod(s, q, &js, cont, o, &j, &rk, &pod, &cname) < 0)
		goto out;
	if (rk >= j->ntasks || j->tasks[rk].state == T_PENDING ||
	    !s->nodes[j->tasks[rk].node].agent_url) {
		kube_status(o, 400, "BadRequest", NULL,
			    "container \"%s\" in pod \"%s\" is waiting to start: %s",
			    cname, q->name,
			    j->state == J_PENDING ? "the job is pending" : "ContainerCreating");
		goto out;
	}
	l = drv_calloc(1, sizeof(*l));
	l->s = s;
	pthread_mutex_init(&l->mu, NULL);
	atomic_init(&l->refs, 2);
	l->url = drv_strdup(s->nodes[j->tasks[rk].node].agent_url);
	l->tok = s->cfg.cluster_token ? drv_strdup(s->cfg.cluster_token) : NULL;
	snprintf(l->nodename, sizeof(l->nodename), "%s", s->nodes[j->tasks[rk].node].name);
	l->job = j->id;
	l->rank = rk;
	l->epoch = j->epoch;
	l->follow = fol && strcmp(fol, "true") == 0;
	l->tail = tail;
	if (s->stopping) {
		kube_status(o, 503, "ServiceUnavailable", NULL, "the server is stopping");
		goto out;
	}
	s->nfetches++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, klog_main, l) != 0) {
		s->nfetches--;
		kube_status(o, 503, "ServiceUnavailable", NULL, "cannot start a thread to read logs");
		pthread_attr_destroy(&attr);
		goto out;
	}
	pthread_attr_destroy(&attr);
	drv_http_resp_stream(o, 200, "text/plain", klog_read, l, klog_unref);
	l = NULL;
out:
	kube_jobs_release(&js);
	pthread_mutex_unlock(&s->mu);
	json_decref(pod);
	if (l) {
		atomic_store(&l->refs, 1);
		klog_unref(l);
	}
	return 0;
}
