/*
 * kube_watch.c: watches (?watch=true) of the Kubernetes face, fed by the
 * controller's event ring: resourceVersion is the event sequence, so a
 * watch resumes after any version the ring still holds and answers 410
 * (Expired) for one older than the ring. Without a version (or "0") it
 * starts with an ADDED event per current object, as Kubernetes does.
 * Each ring event names a job or a node; the watch renders that job's (or
 * node's) objects again and sends ADDED, MODIFIED or DELETED against what
 * it has sent so far; a watch from an older version is first told what
 * changed since (MODIFIED, or ADDED for what was created since:
 * created_after) and what was deleted since (replay_gone). BOOKMARK
 * events every 5 s when asked (allowWatchBookmarks), and the stream ends
 * at timeoutSeconds.
 */
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kwatch {
	struct drv_server *s;
	struct kube_req q;
	struct kube_sel *sel;
	int64_t since;        /* ring seq sent up to */
	json_t *known;        /* "ns/name" -> the object last sent */
	char *out;            /* bytes waiting to be sent */
	size_t olen, ooff;
	bool bookmarks, headers_sent, done;
	int64_t last_out_ms, deadline_ms;
	int64_t ttl_check_ms;  /* monotonic: when finished objects were last looked at */
	int64_t rv;            /* the client's version (0: none) */
	uint64_t *unsettled;   /* jobs whose state shown at the start was not on disk yet */
	size_t nunsettled, ucap;
};

static bool settled(struct drv_server *s, uint64_t id);
static bool unsettled_has(const struct kwatch *w, uint64_t id);
static void settle(struct kwatch *w, uint64_t id);

static void key_of(const json_t *o, char *k, size_t n)
{
	const json_t *m = json_object_get(o, "metadata");

	snprintf(k, n, "%s/%s", drv_json_str(m, "namespace") ? drv_json_str(m, "namespace") : "",
		 drv_json_str(m, "name"));
}

static void emit(struct kwatch *w, const char *type, json_t *obj)
{
	json_t *ev, *x = obj;
	char *line;
	size_t l;

	if (w->q.table && strcmp(type, "BOOKMARK") != 0) {
		json_t *one = json_pack("[O]", obj);
		const char *rv = drv_json_str(json_object_get(obj, "metadata"), "resourceVersion");

		x = kube_table(w->s, &w->q, one, true, rv ? atoll(rv) : w->since, !w->headers_sent);
		json_decref(one);
		w->headers_sent = true;
	} else {
		json_incref(x);
	}
	ev = json_pack("{s:s,s:o}", "type", type, "object", x);
	line = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	l = strlen(line);
	w->out = drv_realloc(w->out, w->olen + l + 2);
	memcpy(w->out + w->olen, line, l);
	w->out[w->olen + l] = '\n';
	w->olen += l + 1;
	free(line);
	w->last_out_ms = drv_mono_ms();
}

/* What objs (now) say against what was sent for keys in scope. */
static void diff(struct kwatch *w, json_t *objs, json_t *scope_keys)
{
	size_t i;
	json_t *o;
	const char *k;
	json_t *v;
	void *tmp;

	json_array_foreach(objs, i, o) {
		char key[600];
		json_t *prev;

		key_of(o, key, sizeof(key));
		prev = json_object_get(w->known, key);
		json_object_set_new(scope_keys, key, json_true());
		if (prev && json_equal(prev, o))
			continue;
		emit(w, prev ? "MODIFIED" : "ADDED", o);
		json_object_set(w->known, key, o);
	}
	/* sent before, in scope, gone now */
	json_object_foreach_safe(w->known, tmp, k, v) {
		json_t *in = json_object_get(scope_keys, k);

		if (in && json_is_false(in)) {
			emit(w, "DELETED", v);
			json_object_del(w->known, k);
		}
	}
}

/* The keys of known objects of job id (by the label) or node name: in scope, false. */
static json_t *scope_of(struct kwatch *w, uint64_t job, const char *node)
{
	json_t *sc = json_object();
	const char *k;
	json_t *v;
	char idb[32];

	snprintf(idb, sizeof(idb), "%llu", (unsigned long long)job);
	json_object_foreach(w->known, k, v) {
		const json_t *md = json_object_get(v, "metadata");

		if (node ? strcmp(drv_json_str(md, "name"), node) == 0
			 : (drv_json_str(json_object_get(md, "labels"), KUBE_LABEL_JOB) &&
			    strcmp(drv_json_str(json_object_get(md, "labels"), KUBE_LABEL_JOB), idb) == 0) ||
				   (drv_json_str(v, "kind") && strcmp(drv_json_str(v, "kind"), "Event") == 0 &&
				    strstr(drv_json_str(md, "name"), ".") != NULL && job &&
				    strtoull(strrchr(drv_json_str(md, "name"), '.') + 1, NULL, 16) >> 16 == job))
			json_object_set_new(sc, k, json_false());
	}
	return sc;
}

static void job_changed(struct kwatch *w, uint64_t id, int64_t seq)
{
	struct drv_server *s = w->s;
	struct srv_job *tmp = NULL, *j;
	bool deleted;
	json_t *objs, *sc;

	deleted = kube_job_deleted(s, id);
	j = srv_job_lookup(s, id, &tmp);
	sc = scope_of(w, id, NULL);
	objs = j ? kube_job_objects(s, &w->q, w->sel, j, deleted, seq) : json_array();
	diff(w, objs, sc);
	json_decref(objs);
	json_decref(sc);
	srv_job_free(tmp);
}

static void node_changed(struct kwatch *w, const char *name, int64_t seq)
{
	struct drv_server *s = w->s;
	int32_t i = srv_node_find(s, name);
	json_t *objs = json_array(), *sc = scope_of(w, 0, name);

	if (i >= 0) {
		json_t *n = kube_node_json(s, i, seq);

		if ((!w->q.name[0] || strcmp(w->q.name, name) == 0) && kube_sel_match(w->sel, n))
			json_array_append_new(objs, n);
		else
			json_decref(n);
	}
	diff(w, objs, sc);
	json_decref(objs);
	json_decref(sc);
}

/* Ring events after w->since (under s->mu). */
static void catch_up(struct kwatch *w)
{
	struct drv_server *s = w->s;
	const char *kind = w->q.res->type;

	while (1) {
		struct ring_event *e = NULL;
		uint64_t job = 0;
		char node[256] = "";
		int64_t seq;

		for (size_t k = 0; k < s->ring_n; k++) {
			struct ring_event *x = &s->ring[(s->ring_start + k) % s->ring_cap];

			if (x->seq > w->since) {
				e = x;
				break;
			}
		}
		if (!e)
			return;
		seq = e->seq;
		job = e->job;
		if (drv_json_str(e->ev, "node"))
			snprintf(node, sizeof(node), "%s", drv_json_str(e->ev, "node"));
		w->since = seq;
		/* the lookups below may release s->mu: e is not used after them */
		if (job && strcmp(kind, "Node") != 0 && strcmp(kind, "Namespace") != 0) {
			if (!unsettled_has(w, job))
				job_changed(w, job, seq);
			else if (settled(s, job))
				settle(w, job);
		}
		else if (!job && node[0] && strcmp(kind, "Node") == 0)
			node_changed(w, node, seq);
	}
}

/* Whether a sent object (of job id) is terminating: deleted, its tasks
 * still stopping. */
static bool terminating(struct kwatch *w, const json_t *o, uint64_t id)
{
	(void)w;
	(void)id;
	return drv_json_str(json_object_get(o, "metadata"), "deletionTimestamp") != NULL;
}

/* Whether a sent object is finished (a Job complete or failed, a pod
 * Succeeded or Failed) and its job may have a ttl: one known to have none
 * is not rendered again each second for nothing. */
static bool finished(struct kwatch *w, const json_t *o, uint64_t id)
{
	const json_t *st = json_object_get(o, "status");
	const char *phase = drv_json_str(st, "phase");
	const struct srv_job *j = srv_job_get(w->s, id);

	if (j && j->spec.k8s.ttl_after_finished_s < 0)
		return false;
	return json_object_get(st, "completionTime") || json_object_get(st, "failed") ||
	       (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
}

/* Renders again the jobs (up to 64) of the sent objects that match. */
static void recheck(struct kwatch *w,
		    bool (*match)(struct kwatch *w, const json_t *o, uint64_t id))
{
	uint64_t ids[64];
	size_t n = 0;
	const char *k;
	json_t *v;

	json_object_foreach(w->known, k, v) {
		const json_t *md = json_object_get(v, "metadata");
		const char *id = drv_json_str(json_object_get(md, "labels"), KUBE_LABEL_JOB);
		bool seen = false;

		if (!id || n == 64 || !match(w, v, strtoull(id, NULL, 10)))
			continue;
		for (size_t i = 0; i < n; i++)
			seen |= ids[i] == strtoull(id, NULL, 10);
		if (!seen)
			ids[n++] = strtoull(id, NULL, 10);
	}
	for (size_t i = 0; i < n; i++)
		job_changed(w, ids[i], w->since);
}

/* Neither of these is an event of the ring, so the jobs are looked at
 * again: objects sent as terminating go when their tasks have ended (on
 * each poll); a finished Job's ttlSecondsAfterFinished passing makes it
 * and its pods go (once a second: kube_job_objects renders nothing for
 * it, and the diff sends DELETED). */
static void recheck_gone(struct kwatch *w)
{
	recheck(w, terminating);
	if (drv_mono_ms() - w->ttl_check_ms >= 1000) {
		w->ttl_check_ms = drv_mono_ms();
		recheck(w, finished);
	}
}

/* The job of a sent object: its label, or an Event's name (POD.JOBHEX
 * followed by four hex digits); 0 for none. */
static uint64_t obj_job(const json_t *o)
{
	const json_t *md = json_object_get(o, "metadata");
	const char *id = drv_json_str(json_object_get(md, "labels"), KUBE_LABEL_JOB);
	const char *name = drv_json_str(md, "name");

	if (id)
		return strtoull(id, NULL, 10);
	if (drv_json_str(o, "kind") && !strcmp(drv_json_str(o, "kind"), "Event") && name &&
	    strrchr(name, '.'))
		return strtoull(strrchr(name, '.') + 1, NULL, 16) >> 16;
	return 0;
}

/* The jobs created after version rv: those whose first event (from null,
 * the submission) the ring holds after rv. A version the ring does not
 * reach back to is answered 410 before, so none is missed. A new object,
 * "job id" -> true. Under s->mu. */
static json_t *created_after(struct drv_server *s, int64_t rv)
{
	json_t *ids = json_object();

	for (size_t k = s->ring_n; k-- > 0;) {
		const struct ring_event *x = &s->ring[(s->ring_start + k) % s->ring_cap];
		char b[32];

		if (x->seq <= rv)
			break;
		if (!x->job || !json_is_null(json_object_get(x->ev, "from")))
			continue;
		snprintf(b, sizeof(b), "%llu", (unsigned long long)x->job);
		json_object_set_new(ids, b, json_true());
	}
	return ids;
}

static bool is_new(const json_t *created, const json_t *o)
{
	char b[32];
	uint64_t id = obj_job(o);

	snprintf(b, sizeof(b), "%llu", (unsigned long long)id);
	return id && json_object_get(created, b);
}

/* Whether job id's objects, as rendered now, show only what is on disk:
 * then the ring holds every event of what they show. */
static bool settled(struct drv_server *s, uint64_t id)
{
	const struct srv_job *j = srv_job_get(s, id);

	return !j || j->durable_ver == j->ver;
}

static bool unsettled_has(const struct kwatch *w, uint64_t id)
{
	for (size_t i = 0; i < w->nunsettled; i++)
		if (w->unsettled[i] == id)
			return true;
	return false;
}

/* Whether the ring holds job id's submission after version rv. */
static bool created_since(struct drv_server *s, int64_t rv, uint64_t id)
{
	for (size_t k = s->ring_n; k-- > 0;) {
		const struct ring_event *x = &s->ring[(s->ring_start + k) % s->ring_cap];

		if (x->seq <= rv)
			break;
		if (x->job == id && json_is_null(json_object_get(x->ev, "from")))
			return true;
	}
	return false;
}

/* A job left out at the start (its state then was not on disk, so the
 * ring could not yet tell the client's version from now) is on disk now:
 * what the client may have had of it at its version is told against what
 * is there now, as at the start of a watch from that version: MODIFIED
 * (ADDED when created since) for what is there, DELETED for what it had
 * that is gone (a deleted pod whose tasks ended meanwhile). Under s->mu;
 * the lookups may release it. */
static void settle(struct kwatch *w, uint64_t id)
{
	struct drv_server *s = w->s;
	struct srv_job *tmp = NULL, *j;
	bool deleted, fresh;
	json_t *now, *was, *o;
	size_t k;

	for (k = 0; k < w->nunsettled && w->unsettled[k] != id; k++)
		;
	if (k == w->nunsettled)
		return;
	w->unsettled[k] = w->unsettled[--w->nunsettled];
	deleted = kube_job_deleted(s, id);
	j = srv_job_lookup(s, id, &tmp);
	if (!j)
		return;
	fresh = created_since(s, w->rv, id);
	now = kube_job_objects(s, &w->q, w->sel, j, deleted, w->since);
	was = kube_job_objects(s, &w->q, w->sel, j, false, w->since);
	json_array_foreach(now, k, o) {
		char key[600];
		json_t *prev;

		key_of(o, key, sizeof(key));
		prev = json_object_get(w->known, key);
		if (prev && json_equal(prev, o))
			continue;
		emit(w, prev ? "MODIFIED" : fresh ? "ADDED" : "MODIFIED", o);
		json_object_set(w->known, key, o);
	}
	json_array_foreach(was, k, o) {
		char key[600];
		bool there = false;
		size_t i;
		json_t *x;

		key_of(o, key, sizeof(key));
		if (json_object_get(w->known, key))
			continue;
		json_array_foreach(now, i, x) {
			char kx[600];

			key_of(x, kx, sizeof(kx));
			there |= strcmp(kx, key) == 0;
		}
		if (there)
			continue;
		if (fresh)
			emit(w, "ADDED", o);
		emit(w, "DELETED", o);
	}
	json_decref(now);
	json_decref(was);
	srv_job_free(tmp);
}

/* Settles the jobs left out at the start that are on disk now. */
static void settle_all(struct kwatch *w)
{
	for (size_t i = w->nunsettled; i-- > 0;)
		if (i < w->nunsettled && settled(w->s, w->unsettled[i]))
			settle(w, w->unsettled[i]);
}

/* The DELETED events a watch from the client's version rv owes for jobs
 * with ring events after rv whose objects are gone now: the objects now
 * cannot show them, and the watch goes on from the ring's last event.
 * (kubectl delete --wait reads the pod, then watches from that version;
 * a deletion that ended in between was never told, and it waited out its
 * timeout.) Each is rendered as it was, at its job's last event. Under
 * s->mu; the lookups may release it. */
static void replay_gone(struct kwatch *w, int64_t rv, const json_t *created)
{
	struct drv_server *s = w->s;
	uint64_t *ids = NULL;
	int64_t *seqs = NULL;
	size_t n = 0;

	if (!strcmp(w->q.res->type, "Node") || !strcmp(w->q.res->type, "Namespace"))
		return;
	for (size_t k = 0; k < s->ring_n; k++) {
		const struct ring_event *x = &s->ring[(s->ring_start + k) % s->ring_cap];
		size_t i;

		if (x->seq <= rv || x->seq > w->since || !x->job || unsettled_has(w, x->job))
			continue;
		for (i = 0; i < n && ids[i] != x->job; i++)
			;
		if (i == n) {
			ids = drv_realloc(ids, (n + 1) * sizeof(*ids));
			seqs = drv_realloc(seqs, (n + 1) * sizeof(*seqs));
			ids[n++] = x->job;
		}
		seqs[i] = x->seq;
	}
	for (size_t i = 0; i < n; i++) {
		struct srv_job *tmp = NULL, *j = srv_job_lookup(s, ids[i], &tmp);
		json_t *objs, *o;
		size_t k;

		if (!j)
			continue;
		objs = kube_job_objects(s, &w->q, w->sel, j, false, seqs[i]);
		json_array_foreach(objs, k, o) {
			char key[600];

			key_of(o, key, sizeof(key));
			if (json_object_get(w->known, key))
				continue;
			if (is_new(created, o))
				emit(w, "ADDED", o);   /* created after rv too: first told */
			emit(w, "DELETED", o);
		}
		json_decref(objs);
		srv_job_free(tmp);
	}
	drv_free(ids);
	drv_free(seqs);
}

static ssize_t watch_read(void *cls, char *buf, size_t max)
{
	struct kwatch *w = cls;
	struct drv_server *s = w->s;
	size_t n;

	if (w->ooff == w->olen) {
		w->ooff = w->olen = 0;
		if (w->done || (w->deadline_ms && drv_mono_ms() >= w->deadline_ms))
			return -1;
		pthread_mutex_lock(&s->mu);
		if (s->stopping) {
			pthread_mutex_unlock(&s->mu);
			return -1;
		}
		catch_up(w);
		settle_all(w);
		recheck_gone(w);
		if (w->olen == 0 && w->bookmarks && drv_mono_ms() - w->last_out_ms >= 5000) {
			char av[96];
			json_t *b;

			snprintf(av, sizeof(av), "%s%s%s", w->q.res->group, *w->q.res->group ? "/" : "",
				 w->q.res->version);
			b = json_pack("{s:s,s:s,s:{s:o}}", "kind", w->q.res->kind, "apiVersion", av,
					      "metadata", "resourceVersion",
					      json_sprintf("%lld", (long long)w->since));

			json_object_set_new(json_object_get(b, "metadata"), "annotations",
					    json_pack("{s:s}", "k8s.io/initial-events-end", "true"));
			emit(w, "BOOKMARK", b);
			json_decref(b);
		}
		pthread_mutex_unlock(&s->mu);
		if (w->olen == 0)
			return 0;
	}
	n = w->olen - w->ooff;
	if (n > max)
		n = max;
	memcpy(buf, w->out + w->ooff, n);
	w->ooff += n;
	return (ssize_t)n;
}

static void watch_free(void *cls)
{
	struct kwatch *w = cls;

	kube_sel_free(w->sel);
	json_decref(w->known);
	drv_free(w->unsettled);
	drv_free(w->out);
	drv_free(w);
}

int kube_watch(struct drv_server *s, struct kube_req *q, struct drv_http_req *r,
	       struct drv_http_resp *o)
{
	const char *rvs = drv_http_req_query(r, "resourceVersion");
	const char *bm = drv_http_req_query(r, "allowWatchBookmarks");
	struct kwatch *w;
	int64_t rv = rvs && *rvs ? strtoll(rvs, NULL, 10) : 0, tmo = 0, oldest, lrv;
	bool bad;
	json_t *objs, *created;
	size_t i;
	json_t *x;

	if (drv_http_req_query(r, "timeoutSeconds") &&
	    drv_http_req_query_int(r, "timeoutSeconds", 0, 0, 86400 * 7, &tmo, o) < 0) {
		kube_status(o, 400, "BadRequest", NULL, "timeoutSeconds: expected seconds");
		return 0;
	}
	w = drv_calloc(1, sizeof(*w));
	w->s = s;
	w->q = *q;
	w->sel = kube_sel_parse(drv_http_req_query(r, "labelSelector"),
				drv_http_req_query(r, "fieldSelector"), o, &bad);
	if (bad) {
		drv_free(w);
		return 0;
	}
	w->known = json_object();
	w->bookmarks = bm && strcmp(bm, "true") == 0;
	w->last_out_ms = drv_mono_ms();
	if (tmo)
		w->deadline_ms = drv_mono_ms() + tmo * 1000;
	pthread_mutex_lock(&s->mu);
	oldest = s->ring_n ? s->ring[s->ring_start].seq : s->last_seq + 1;
	if (rv > 0 && rv < oldest - 1 && rv < s->last_seq) {
		pthread_mutex_unlock(&s->mu);
		kube_status(o, 410, "Expired", NULL,
			    "too old resource version: %lld (%lld)", (long long)rv,
			    (long long)(oldest - 1));
		watch_free(w);
		return 0;
	}
	/* what the client has seen: the objects now (sent as ADDED when it gave
	 * no version, else taken as known; those changed since its version as
	 * MODIFIED, or ADDED when created since, as Kubernetes does) */
	objs = kube_collect(s, &w->q, w->sel, &lrv);
	created = rv > 0 && strcmp(w->q.res->type, "Node") != 0 &&
			  strcmp(w->q.res->type, "Namespace") != 0
		  ? created_after(s, rv)
		  : json_object();
	w->since = lrv;
	w->rv = rv;
	/* jobs whose state rendered now is not on disk yet (so not in the
	 * ring): what changed of them since rv cannot be told yet; they are
	 * told once on disk (settle) */
	if (rv > 0 && strcmp(w->q.res->type, "Node") != 0 &&
	    strcmp(w->q.res->type, "Namespace") != 0)
		for (uint64_t id = 1; id <= s->njobs; id++)
			if (!settled(s, id)) {
				DRV_GROW(w->unsettled, w->nunsettled + 1, w->ucap);
				w->unsettled[w->nunsettled++] = id;
			}
	json_array_foreach(objs, i, x) {
		char key[600];
		const char *orv = drv_json_str(json_object_get(x, "metadata"), "resourceVersion");

		key_of(x, key, sizeof(key));
		if (rv > 0 && unsettled_has(w, obj_job(x)))
			continue;
		if (rv <= 0)
			emit(w, "ADDED", x);
		else if (orv && strtoll(orv, NULL, 10) > rv)
			emit(w, is_new(created, x) ? "ADDED" : "MODIFIED", x);
		json_object_set(w->known, key, x);
	}
	json_decref(objs);
	if (rv > 0)
		replay_gone(w, rv, created);
	json_decref(created);
	pthread_mutex_unlock(&s->mu);
	drv_http_resp_stream(o, 200, "application/json", watch_read, w, watch_free);
	return 0;
}
