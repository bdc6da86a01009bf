/*
 * kube_jobs.c: every job the Kubernetes face shows, unfinished ones from
 * memory and finished ones from the store (read with s->mu released, as
 * jobs_store.c does), and the jobs deleted through the face: a job deleted
 * with `kubectl delete` is cancelled and, once finished, gone from the
 * face (CONTRACTS.md section 1), while drover's own routes still show it.
 * The mark is a row of the store's meta table ("kube.deleted.ID"), so it
 * survives a restart with the job it marks. A batch/v1 Job's
 * ttlSecondsAfterFinished deletes it the same way, as Kubernetes' TTL
 * controller does: once the Job (the parent, for its elements' pods) has
 * been finished that long, it and its pods are gone from the face.
 */
#include "kube_int.h"

#include <stdio.h>
#include <string.h>

struct krow {
	struct drv_store_job r;
	char *name, *user, *tenant, *state, *doc;
};

struct krows {
	struct krow *v;
	size_t n, cap;
	uint64_t last;
};

static int keep(const struct drv_store_job *j, void *cls)
{
	struct krows *rs = cls;
	struct krow *w;

	DRV_GROW(rs->v, rs->n + 1, rs->cap);
	w = &rs->v[rs->n++];
	w->r = *j;
	w->r.name = w->name = drv_strdup(j->name ? j->name : "");
	w->r.user = w->user = drv_strdup(j->user ? j->user : "");
	w->r.tenant = w->tenant = drv_strdup(j->tenant ? j->tenant : "default");
	w->r.state = w->state = drv_strdup(j->state ? j->state : "");
	w->r.doc = w->doc = drv_strdup(j->doc ? j->doc : "{}");
	rs->last = j->id;
	return 0;
}

static void add(struct kube_jobs *js, struct srv_job *j, bool owned)
{
	DRV_GROW(js->v, js->n + 1, js->cap);
	DRV_GROW(js->owned, js->n + 1, js->cap_o);
	DRV_GROW(js->deleted, js->n + 1, js->cap_d);
	js->v[js->n] = j;
	js->owned[js->n] = owned;
	js->deleted[js->n] = false;
	js->n++;
}

/* Whether j (its parent p, itself when it is no element) finished over its
 * ttlSecondsAfterFinished ago: its Job and pods are deleted then. */
static bool ttl_passed(const struct srv_job *j, const struct srv_job *p, int64_t now)
{
	int64_t ttl = j->spec.k8s.ttl_after_finished_s;

	return ttl >= 0 && srv_jstate_final(p->state) && !p->holding && !j->holding &&
	       p->end_time > 0 && now >= p->end_time + ttl;
}

/* The same, the parent of an element taken from the snapshot js. */
static bool ttl_expired(const struct kube_jobs *js, const struct srv_job *j, int64_t now)
{
	const struct srv_job *p = j;

	if (j->spec.k8s.ttl_after_finished_s < 0)
		return false;
	for (size_t i = 0; j->parent && i < js->n; i++)
		if (js->v[i]->id == j->parent)
			p = js->v[i];
	if (j->parent && p == j)
		return false;   /* its parent is not at hand: not known finished */
	return ttl_passed(j, p, now);
}

bool kube_job_ttl_gone(struct drv_server *s, const struct srv_job *j)
{
	struct srv_job *tmp = NULL;
	const struct srv_job *p = j;
	bool gone;

	if (j->spec.k8s.ttl_after_finished_s < 0)
		return false;   /* before any lookup: most jobs have no ttl */
	if (j->parent && !(p = srv_job_lookup(s, j->parent, &tmp)))
		return false;   /* its parent is gone: not known finished */
	gone = ttl_passed(j, p, drv_wall_s());
	srv_job_free(tmp);
	return gone;
}

void kube_jobs_collect(struct drv_server *s, struct kube_jobs *js)
{
	struct krows rs = { 0 };
	struct drv_store_job_query q = { .done = 1, .limit = 1000 };
	int rc;

	memset(js, 0, sizeof(*js));
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&s->rstore_mu);
	do {
		size_t before = rs.n;

		q.after = rs.last;
		rc = s->rstore->ops->list_jobs(s->rstore, &q, keep, &rs);
		if (rc < 0 || rs.n - before < (size_t)q.limit)
			break;
	} while (1);
	pthread_mutex_unlock(&s->rstore_mu);
	pthread_mutex_lock(&s->mu);
	if (rc < 0)
		drv_log(&s->log, "kubernetes api: cannot list finished jobs: %s", s->rstore->err);
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = srv_job_get(s, id);

		if (j)
			add(js, j, false);
	}
	for (size_t i = 0; i < rs.n; i++) {
		struct srv_job *j;

		if (srv_job_get(s, rs.v[i].r.id))
			continue;   /* joined memory meanwhile: listed above */
		j = srv_job_from_row(s, &rs.v[i].r, false);
		if (j)
			add(js, j, true);
	}
	for (size_t i = 0; i < rs.n; i++) {
		drv_free(rs.v[i].name);
		drv_free(rs.v[i].user);
		drv_free(rs.v[i].tenant);
		drv_free(rs.v[i].state);
		drv_free(rs.v[i].doc);
	}
	drv_free(rs.v);
	/* the deletion marks, one point read each */
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&s->rstore_mu);
	for (size_t i = 0; i < js->n; i++) {
		char key[64];
		int64_t v = 0;

		snprintf(key, sizeof(key), "kube.deleted.%llu", (unsigned long long)js->v[i]->id);
		js->deleted[i] = s->rstore->ops->get_meta(s->rstore, key, &v) == 0 && v;
	}
	pthread_mutex_unlock(&s->rstore_mu);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < js->n; i++)
		if (!js->deleted[i] && ttl_expired(js, js->v[i], drv_wall_s()))
			js->deleted[i] = true;
}

void kube_jobs_release(struct kube_jobs *js)
{
	for (size_t i = 0; i < js->n; i++)
		if (js->owned[i])
			srv_job_free(js->v[i]);
	drv_free(js->v);
	drv_free(js->owned);
	drv_free(js->deleted);
	memset(js, 0, sizeof(*js));
}

int kube_job_mark_deleted(struct drv_server *s, uint64_t id)
{
	char key[64];
	int rc;

	snprintf(key, sizeof(key), "kube.deleted.%llu", (unsigned long long)id);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&s->store_mu);
	rc = drv_store_put_meta(s->store, key, 1);
	pthread_mutex_unlock(&s->store_mu);
	pthread_mutex_lock(&s->mu);
	return rc;
}

bool kube_job_deleted(struct drv_server *s, uint64_t id)
{
	char key[64];
	int64_t v = 0;
	bool d;

	snprintf(key, sizeof(key), "kube.deleted.%llu", (unsigned long long)id);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&s->rstore_mu);
	d = s->rstore->ops->get_meta(s->rstore, key, &v) == 0 && v;
	pthread_mutex_unlock(&s->rstore_mu);
	pthread_mutex_lock(&s->mu);
	return d;
}
