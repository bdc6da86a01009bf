/*
 * commit.c: group commit of the controller's state to the store.
 *
 * Under srv->mu, srv_enqueue() turns everything dirty (jobs, nodes, queued
 * events, the epoch and session counters) into a batch of ready-to-write
 * rows and queues it with a ticket. One committer thread takes every queued
 * batch, writes them in one store transaction without holding srv->mu, and
 * so pays one fsync for all the requests that arrived meanwhile: with 32
 * clients submitting, or 16 agents reporting, a burst costs a handful of
 * fsyncs, and nobody waits on the disk while holding the big lock.
 *
 * A caller that must not act before its change is on disk (a 201 reply,
 * a report answered, assignments announced) waits for its ticket: an HTTP
 * handler defers its reply (srv_reply_when_durable, durable.c), other
 * threads call srv_wait(), which releases srv->mu meanwhile. Events are published to
 * the watch ring, with their sequence numbers, only once committed.
 *
 * When a group fails (full disk, injected fault), its jobs, nodes and
 * events are made dirty again so a later flush retries them, and every
 * waiter of the group gets DRV_EIO. New jobs (srv_commit_new_jobs) are not
 * in memory until their batch committed (the committer adds them), so a
 * failed submit leaves nothing.
 */
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

static struct wbatch *batch_new(void)
{
	return drv_calloc(1, sizeof(struct wbatch));
}

void srv_widem_release(struct widem *w)
{
	drv_free((char *)w->k.user);
	drv_free((char *)w->k.key);
	drv_free((char *)w->k.fingerprint);
	drv_free((char *)w->k.body);
	drv_free((char *)w->k.headers);
}

static void batch_free(struct wbatch *b)
{
	for (size_t i = 0; i < b->nidems; i++)
		srv_widem_release(&b->idems[i]);
	drv_free(b->idems);
	for (size_t i = 0; i < b->njobs; i++) {
		drv_free(b->jobs[i].name);
		drv_free(b->jobs[i].user);
		drv_free(b->jobs[i].tenant);
		free(b->jobs[i].doc);
	}
	drv_free(b->jobs);
	for (size_t i = 0; i < b->nnodes; i++) {
		drv_free(b->nodes[i].name);
		free(b->nodes[i].doc);
	}
	drv_free(b->nodes);
	for (size_t i = 0; i < b->naccts; i++)
		srv_wacct_release(&b->accts[i]);
	drv_free(b->accts);
	for (size_t i = 0; i < b->nevents; i++)
		srv_pend_release(&b->events[i]);
	drv_free(b->events);
	drv_free(b->newjobs);
	drv_free(b);
}

static void batch_add_job(struct drv_server *s, struct wbatch *b, struct srv_job *j)
{
	json_t *doc = srv_job_store_doc(s, j);
	struct wjob *w;

	DRV_GROW(b->jobs, b->njobs + 1, b->jcap);
	w = &b->jobs[b->njobs++];
	w->id = j->id;
	w->epoch = j->epoch;
	w->ver = j->ver;
	w->name = drv_strdup(j->spec.job.name ? j->spec.job.name : "");
	w->user = drv_strdup(j->spec.job.user ? j->spec.job.user : "");
	w->tenant = drv_strdup(j->spec.job.tenant ? j->spec.job.tenant : "default");
	w->state = srv_jstate_name(j->state);
	w->submit_time = j->submit_time;
	w->end_time = srv_jstate_final(j->state) ? j->end_time : 0;
	w->done = srv_jstate_final(j->state) && !j->holding;
	w->doc = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
}

static uint64_t enqueue(struct drv_server *s, struct wbatch *b)
{
	b->ticket = ++s->next_ticket;
	if (s->cq_tail)
		s->cq_tail->next = b;
	else
		s->cq_head = b;
	s->cq_tail = b;
	pthread_cond_signal(&s->commit_cv);
	return b->ticket;
}

uint64_t srv_enqueue(struct drv_server *s)
{
	struct wbatch *b;

	/* the dirty lists, never a scan of every node: at 12,500 nodes that
	 * was two sweeps of the node table under the big lock per flush */
	if (s->ndirty == 0 && s->npend == 0 && !s->meta_dirty && !s->ndirty_nodes && !s->nacct)
		return s->next_ticket;   /* wait for what is in flight, if anything */
	b = batch_new();
	for (size_t i = 0; i < s->ndirty; i++) {
		struct srv_job *j = srv_job_get(s, s->dirty[i]);

		if (j && j->dirty) {
			j->dirty = false;
			batch_add_job(s, b, j);
		}
	}
	s->ndirty = 0;
	for (size_t k = 0; k < s->ndirty_nodes; k++) {
		int32_t n = s->dirty_nodes[k];
		json_t *doc;
		struct wnode *w;

		if (!s->nodes[n].dirty)
			continue;
		s->nodes[n].dirty = false;
		doc = srv_node_store_doc(s, n);
		DRV_GROW(b->nodes, b->nnodes + 1, b->ncap);
		w = &b->nodes[b->nnodes++];
		w->name = drv_strdup(s->nodes[n].name);
		w->doc = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
	}
	s->ndirty_nodes = 0;
	b->events = s->pend;
	b->nevents = s->npend;
	b->ecap = s->pcap;
	s->pend = NULL;
	s->npend = s->pcap = 0;
	b->accts = s->acct_pend;
	b->naccts = s->nacct;
	b->acap = s->acctcap;
	s->acct_pend = NULL;
	s->nacct = s->acctcap = 0;
	if (s->meta_dirty) {
		b->meta = true;
		b->epoch = s->epoch;
		b->session = s->session;
		s->meta_dirty = false;
	}
	return enqueue(s, b);
}

static bool ticket_failed(const struct drv_server *s, uint64_t t)
{
	unsigned n = s->nfail < 32 ? s->nfail : 32;

	for (unsigned i = 0; i < n; i++)
		if (t >= s->fail_lo[i] && t <= s->fail_hi[i])
			return true;
	return false;
}

int srv_ticket_state(const struct drv_server *s, uint64_t ticket)
{
	if (s->done_ticket < ticket)
		return 1;
	return ticket_failed(s, ticket) ? DRV_EIO : 0;
}

int srv_wait(struct drv_server *s, uint64_t ticket)
{
	while (s->done_ticket < ticket)
		pthread_cond_wait(&s->done_cv, &s->mu);
	return ticket_failed(s, ticket) ? DRV_EIO : 0;
}

int srv_flush(struct drv_server *s)
{
	return srv_wait(s, srv_enqueue(s));
}

uint64_t srv_commit_new_jobs(struct drv_server *s, struct srv_job **js, size_t n)
{
	struct wbatch *b = batch_new();

	b->newjobs = drv_malloc(n * sizeof(*js));
	memcpy(b->newjobs, js, n * sizeof(*js));
	b->nnew = n;
	for (size_t i = 0; i < n; i++) {
		struct srv_job *j = js[i];
		json_t *last = json_array_get(j->events, json_array_size(j->events) - 1);

		batch_add_job(s, b, j);
		DRV_GROW(b->events, b->nevents + 1, b->ecap);
		b->events[b->nevents++] = srv_make_event("job", j, NULL, NULL, "pending",
							 drv_json_str(last, "reason"));
	}
	return enqueue(s, b);
}

uint64_t srv_commit_idem(struct drv_server *s, uint64_t ticket, struct widem *w)
{
	struct wbatch *b = s->cq_tail;
	bool fresh = !b || !ticket || b->ticket != ticket;

	if (fresh)
		b = batch_new();
	DRV_GROW(b->idems, b->nidems + 1, b->icap);
	b->idems[b->nidems++] = *w;
	return fresh ? enqueue(s, b) : ticket;
}

/* Writes the group in one transaction; 0 or a negative drv_err. Runs
 * without srv->mu, under store_mu. */
static int write_group(struct drv_server *s, struct wbatch *g)
{
	struct drv_store *st = s->store;
	int rc = drv_store_begin(st);

	for (struct wbatch *b = g; b && rc == 0; b = b->next) {
		for (size_t i = 0; i < b->njobs && rc == 0; i++) {
			struct wjob *w = &b->jobs[i];
			struct drv_store_job row = { .id = w->id, .name = w->name, .user = w->user,
						     .tenant = w->tenant, .state = w->state,
						     .submit_time = w->submit_time, .doc = w->doc,
						     .end_time = w->end_time, .done = w->done };

			rc = drv_store_put_job(st, &row);
		}
		for (size_t i = 0; i < b->naccts && rc == 0; i++)
			rc = drv_store_put_acct(st, &b->accts[i].a);
		for (size_t i = 0; i < b->nnodes && rc == 0; i++) {
			struct drv_store_node row = { .name = b->nodes[i].name, .doc = b->nodes[i].doc };

			rc = drv_store_put_node(st, &row);
		}
		for (size_t i = 0; i < b->nevents && rc == 0; i++) {
			struct pend_event *p = &b->events[i];
			char *text = json_dumps(p->ev, JSON_COMPACT);
			struct drv_store_event e = { .time = p->time, .type = p->type, .job = p->job,
						     .node = p->node, .from = p->from, .to = p->to,
						     .reason = p->reason, .doc = text };

			rc = drv_store_add_event(st, &e);
			free(text);
			if (rc == 0)
				json_object_set_new(p->ev, "seq", json_integer(e.seq));
		}
		for (size_t i = 0; i < b->nidems && rc == 0; i++)
			rc = st->ops->put_idem(st, &b->idems[i].k);
		if (b->meta && rc == 0) {
			rc = drv_store_put_meta(st, "epoch", b->epoch);
			if (rc == 0)
				rc = drv_store_put_meta(st, "session", b->session);
		}
	}
	if (rc == 0)
		return drv_store_commit(st);
	drv_store_rollback(st);
	return rc;
}

/* The group failed: make its contents dirty again (under srv->mu). */
static void requeue_failed(struct drv_server *s, struct wbatch *g)
{
	struct pend_event *keep = NULL;
	size_t nkeep = 0, kcap = 0;

	for (struct wbatch *b = g; b; b = b->next) {
		for (size_t i = 0; i < b->njobs; i++) {
			struct srv_job *j = srv_job_get(s, b->jobs[i].id);

			if (j)
				srv_job_mark(s, j);
		}
		for (size_t i = 0; i < b->nnodes; i++) {
			int32_t n = srv_node_find(s, b->nodes[i].name);

			if (n >= 0)
				srv_node_mark(s, n);
		}
		if (b->meta)
			s->meta_dirty = true;
		for (size_t i = 0; i < b->naccts; i++) {
			DRV_GROW(s->acct_pend, s->nacct + 1, s->acctcap);
			s->acct_pend[s->nacct++] = b->accts[i];
		}
		b->naccts = 0;
		for (size_t i = 0; i < b->nevents; i++) {
			struct pend_event *p = &b->events[i];

			/* events of jobs that never reached memory (a failed submit) go */
			if (p->job && !srv_job_get(s, p->job))
				continue;
			json_object_del(p->ev, "seq");
			DRV_GROW(keep, nkeep + 1, kcap);
			keep[nkeep++] = *p;
			memset(p, 0, sizeof(*p));
		}
	}
	/* older events first, then whatever was queued since */
	if (nkeep) {
		DRV_GROW(keep, nkeep + s->npend, kcap);
		memcpy(keep + nkeep, s->pend, s->npend * sizeof(*keep));
		drv_free(s->pend);
		s->pend = keep;
		s->npend = nkeep + s->npend;
		s->pcap = kcap;
	}
}

void *srv_commit_main(void *arg)
{
	struct drv_server *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct wbatch *g, *b, *next;
		uint64_t lo, hi;
		int rc;

		while (!s->cq_head && !s->commit_stop)
			pthread_cond_wait(&s->commit_cv, &s->mu);
		if (!s->cq_head)
			break;
		g = s->cq_head;
		s->cq_head = s->cq_tail = NULL;
		lo = g->ticket;
		for (b = g; b->next; b = b->next)
			;
		hi = b->ticket;
		pthread_mutex_unlock(&s->mu);

		pthread_mutex_lock(&s->store_mu);
		rc = write_group(s, g);
		pthread_mutex_unlock(&s->store_mu);

		pthread_mutex_lock(&s->mu);
		if (rc == 0) {
			s->commit_fail_logged = false;
			for (b = g; b; b = b->next) {
				for (size_t i = 0; i < b->njobs; i++) {
					struct srv_job *j = srv_job_get(s, b->jobs[i].id);

					if (j && j->epoch == b->jobs[i].epoch)
						j->durable_epoch = j->epoch;
					if (j && b->jobs[i].ver > j->durable_ver)
						j->durable_ver = b->jobs[i].ver;
					if (j && b->jobs[i].done)
						srv_job_evict(s, j);
				}
				for (size_t i = 0; i < b->nevents; i++) {
					struct pend_event *p = &b->events[i];

					srv_ring_push(s, json_integer_value(json_object_get(p->ev, "seq")),
						      p->job, p->user, p->ev);
					p->ev = NULL;   /* the ring owns it now */
				}
				if (b->nnew)
					srv_jobs_adopt(s, b->newjobs, b->nnew);
			}
		} else {
			snprintf(s->commit_err, sizeof(s->commit_err), "%s", s->store->err);
			if (!s->commit_fail_logged)
				drv_log(&s->log, "store write failed: %s (retrying with later writes)",
					s->commit_err);
			s->commit_fail_logged = true;
			s->fail_lo[s->nfail % 32] = lo;
			s->fail_hi[s->nfail % 32] = hi;
			s->nfail++;
			requeue_failed(s, g);
			for (b = g; b; b = b->next)
				for (size_t i = 0; i < b->nnew; i++)
					srv_job_free(b->newjobs[i]);
		}
		s->done_ticket = hi;
		pthread_cond_broadcast(&s->done_cv);
		pthread_cond_broadcast(&s->cv);
		drv_http_wake(s->http);
		drv_http_wake_key(s->http, SRV_KEY_COMMIT);
		for (b = g; b; b = next) {
			next = b->next;
			batch_free(b);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}
