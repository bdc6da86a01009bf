/*
 * jobs_store.c: finished jobs, which live in the store only.
 *
 * A job leaves memory once its final record is on disk (srv_job_evict,
 * called by the committer), and a restart loads only the unfinished ones
 * (restore.c), so memory and restart time follow the unfinished jobs.
 * Reads of a finished job (GET /v1/jobs/ID, describe, logs, listings with
 * after=) come here: the row is read from the store with s->mu released
 * (the committer may be syncing; nobody else waits on that), then built
 * into a job of its own that the caller frees. After job_retention_s the
 * finished jobs' records and events are purged (srv_purge_old_jobs) while
 * their accounting rows (one per ended attempt, state.c) stay.
 */
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

/* A job row copied out of the store's callback. */
struct row {
	struct drv_store_job r;
	char *name, *user, *tenant, *state, *doc;
};

struct rows {
	struct row *v;
	size_t n, cap;
};

static void row_release(struct row *w)
{
	drv_free(w->name);
	drv_free(w->user);
	drv_free(w->tenant);
	drv_free(w->state);
	drv_free(w->doc);
}

static int keep_row(const struct drv_store_job *j, void *cls)
{
	struct rows *rs = cls;
	struct row *w;

	DRV_GROW(rs->v, rs->n + 1, rs->cap);
	w = &rs->v[rs->n++];
	w->name = drv_strdup(j->name ? j->name : "");
	w->user = drv_strdup(j->user ? j->user : "");
	w->tenant = drv_strdup(j->tenant ? j->tenant : "default");
	w->state = drv_strdup(j->state ? j->state : "");
	w->doc = drv_strdup(j->doc ? j->doc : "{}");
	w->r = *j;
	w->r.name = w->name;
	w->r.user = w->user;
	w->r.tenant = w->tenant;
	w->r.state = w->state;
	w->r.doc = w->doc;
	return 0;
}

static void rows_release(struct rows *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		row_release(&rs->v[i]);
	drv_free(rs->v);
}

/* Runs fn (reading s->rstore, or writing s->store) with s->mu released
 * and the store's own mutex held; rc, and the store's message in err. */
static int store_call(struct drv_server *s, bool write, int (*fn)(struct drv_server *, void *),
		      void *cls, char *err, size_t errsz)
{
	pthread_mutex_t *m = write ? &s->store_mu : &s->rstore_mu;
	int rc;

	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(m);
	rc = fn(s, cls);
	if (rc < 0 && err)
		snprintf(err, errsz, "%s", (write ? s->store : s->rstore)->err);
	pthread_mutex_unlock(m);
	pthread_mutex_lock(&s->mu);
	return rc;
}

int srv_store_call(struct drv_server *s, bool write, int (*fn)(struct drv_server *, void *),
		   void *cls, char *err, size_t errsz)
{
	return store_call(s, write, fn, cls, err, errsz);
}

static int store_read(struct drv_server *s, int (*fn)(struct drv_server *, void *), void *cls,
		      char *err, size_t errsz)
{
	return store_call(s, false, fn, cls, err, errsz);
}

struct get_one {
	uint64_t id;
	struct rows rs;
};

static int read_one(struct drv_server *s, void *cls)
{
	struct get_one *g = cls;

	return s->rstore->ops->get_job(s->rstore, g->id, keep_row, &g->rs);
}

struct srv_job *srv_job_lookup(struct drv_server *s, uint64_t id, struct srv_job **tmp)
{
	struct srv_job *j = srv_job_get(s, id);
	struct get_one g = { .id = id };
	char err[256];
	int rc;

	*tmp = NULL;
	if (j || id == 0 || id > s->next_id)
		return j;
	rc = store_read(s, read_one, &g, err, sizeof(err));
	if (rc < 0 && rc != DRV_ENOENT)
		drv_log(&s->log, "job %llu: cannot read it from the store: %s",
			(unsigned long long)id, err);
	j = srv_job_get(s, id);   /* it may have joined memory meanwhile */
	if (!j && g.rs.n)
		j = *tmp = srv_job_from_row(s, &g.rs.v[0].r, false);
	rows_release(&g.rs);
	return j;
}

struct page_read {
	struct drv_store_job_query q;
	struct rows rs;
};

static int read_page(struct drv_server *s, void *cls)
{
	struct page_read *p = cls;

	return s->rstore->ops->list_jobs(s->rstore, &p->q, keep_row, &p->rs);
}

/* Adds j's text to items if it matches; false when the page is full (j
 * not added). */
static bool page_add(struct drv_server *s, struct drv_dynbuf *items, int *n, int limit,
		     struct srv_job *j, bool (*match)(struct srv_job *, void *), void *cls)
{
	if (!match(j, cls))
		return true;
	if (*n >= limit)
		return false;
	if ((*n)++)
		drv_dynbuf_add(items, ",", 1);
	srv_job_api_text(s, j, items);
	return true;
}

void srv_jobs_page(struct drv_server *s, const struct drv_store_job_query *q,
		   bool (*match)(struct srv_job *j, void *cls), void *cls, struct drv_dynbuf *items,
		   bool *more, uint64_t *last)
{
	struct page_read p = { .q = *q };
	uint64_t bound, id;
	size_t k = 0;
	int n = 0;
	char err[256];

	/* finished jobs from the store, one more than a page to know whether
	 * the store has more: ids up to the last one read are settled */
	p.q.done = 1;
	p.q.limit = q->limit + 1;
	/* a job whose final record is written while the store is read (mu
	 * released) is not in the rows; it must still be in memory for the
	 * walk below: its eviction waits for the walk's end */
	s->page_readers++;
	if (store_read(s, read_page, &p, err, sizeof(err)) < 0)
		drv_log(&s->log, "listing jobs: cannot read the store: %s", err);
	bound = p.rs.n == (size_t)p.q.limit ? p.rs.v[p.rs.n - 1].r.id : s->njobs;
	*more = false;
	*last = q->after;
	for (id = q->after + 1; id <= DRV_MIN(bound, s->njobs); id++) {
		struct srv_job *j = srv_job_get(s, id), *tmp = NULL;
		bool ok;

		while (k < p.rs.n && p.rs.v[k].r.id < id)
			k++;
		if (!j && k < p.rs.n && p.rs.v[k].r.id == id)
			j = tmp = srv_job_from_row(s, &p.rs.v[k].r, false);
		if (!j)
			continue;
		ok = page_add(s, items, &n, q->limit, j, match, cls);
		srv_job_free(tmp);
		if (!ok) {
			*more = true;
			break;
		}
		*last = id;
	}
	if (!*more && bound < s->njobs) {
		*more = true;       /* the store has more after bound */
		*last = bound;
	}
	rows_release(&p.rs);
	if (--s->page_readers == 0 && s->nevict_later)
		srv_job_evict_deferred(s);
}

/* --- retention ----------------------------------------------------------- */

struct purge {
	int64_t before, n;
};

static int purge_batch(struct drv_server *s, void *cls)
{
	struct purge *p = cls;
	int rc = drv_store_begin(s->store);

	if (rc == 0)
		rc = s->store->ops->purge_jobs(s->store, p->before, 10000, &p->n);
	if (rc == 0)
		return drv_store_commit(s->store);
	drv_store_rollback(s->store);
	return rc;
}

static int recount(struct drv_server *s, void *cls)
{
	return srv_store_count_done(s->rstore, cls);
}

void srv_purge_old_jobs(struct drv_server *s)
{
	struct purge p = { .before = drv_wall_s() - s->cfg.job_retention_s };
	int64_t total = 0, counts[J_NSTATES];
	char err[256];
	int rc;

	do {
		rc = store_call(s, true, purge_batch, &p, err, sizeof(err));
		total += rc == 0 ? p.n : 0;
	} while (rc == 0 && p.n == 10000 && !s->stopping);
	if (rc < 0)
		drv_log(&s->log, "purging finished jobs: %s", err);
	if (total > 0 && store_read(s, recount, counts, err, sizeof(err)) == 0)
		memcpy(s->done_counts, counts, sizeof(counts));
	if (total > 0)
		drv_log(&s->log, "purged %lld finished jobs that ended over %lld s ago (their "
			"accounting rows stay)", (long long)total, (long long)s->cfg.job_retention_s);
}

/* --- the month's spend after a restart ------------------------------------ */

static int month_tenant(const char *tenant, int64_t micro, void *cls)
{
	struct drv_server *s = cls;

	if (micro)
		srv_month_cell(s, tenant && *tenant ? tenant : "default")->micro += micro;
	return 0;
}

int srv_acct_month_restore(struct drv_server *s)
{
	/* the store's sums hold every attempt that ended this month, the
	 * earlier attempts of jobs in memory too, which srv_cost_restore
	 * counted from the jobs (cost_prev): those count once */
	for (uint64_t id = 1; id <= s->njobs; id++) {
		struct srv_job *j = s->jobs[id - 1];

		if (j && j->cost_prev_micro && j->cost_prev_time >= s->month_start)
			srv_month_cell(s, j->spec.job.tenant && *j->spec.job.tenant
						  ? j->spec.job.tenant : "default")->micro -=
				j->cost_prev_micro;
	}
	return s->store->ops->month_cost(s->store, s->month_start, month_tenant, s);
}
