/*
 * acct_api.c: GET /v1/acct, accounting by tenant, user, pool or job
 * (docs/api.md).
 *
 * It sums the accounting rows (one per ended attempt, state.c) whose
 * attempt ended in [since, until), and the attempts running now as if they
 * ended now, grouped as asked: jobs (distinct), attempts, GPU-hours and
 * cost. The store sums by tenant, user or pool itself (a month of a
 * million attempts is a few groups to carry, not a million rows), on its
 * read connection, so the committer never waits for it; by job, it hands
 * the rows. Sums are kept in integer milli-GPU-seconds and micro-dollars and
 * turned into numbers for the reply only. The rows outlive the jobs'
 * purged records, so a month's accounting is whole after the purge.
 */
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

enum by { BY_TENANT, BY_USER, BY_POOL, BY_JOB };

static const char *const by_names[] = { "tenant", "user", "pool", "job" };

/* One attempt (job != 0), or a group the store summed (job 0: jobs and
 * attempts given), reduced to what the grouping needs. */
struct arow {
	char *group;
	uint64_t job;
	int32_t attempt;       /* by job: the rows of a job go in attempt order */
	int64_t jobs, attempts;
	int64_t milli_s, micro;
	char *name, *user, *tenant, *state;   /* by job only (else NULL) */
	char *efficiency;                     /* by job only: JSON text, NULL none */
};

struct acollect {
	enum by by;
	const char *only_user;   /* a plain user sees their own attempts */
	struct arow *v;
	size_t n, cap;
};

static void add_row(struct acollect *c, const struct drv_store_acct *a)
{
	struct arow *r;
	char id[32];
	const char *g;

	if (c->only_user && strcmp(c->only_user, a->user) != 0)
		return;
	snprintf(id, sizeof(id), "%llu", (unsigned long long)a->job);
	g = c->by == BY_TENANT ? a->tenant : c->by == BY_USER ? a->user
				 : c->by == BY_POOL ? a->pool : id;
	DRV_GROW(c->v, c->n + 1, c->cap);
	r = &c->v[c->n++];
	memset(r, 0, sizeof(*r));
	r->group = drv_strdup(g ? g : "");
	r->job = a->job;
	r->attempt = a->attempt;
	r->attempts = 1;
	r->milli_s = a->gpu_milli_s;
	r->micro = a->cost_micro;
	if (c->by == BY_JOB) {
		r->name = drv_strdup(a->name ? a->name : "");
		r->user = drv_strdup(a->user ? a->user : "");
		r->tenant = drv_strdup(a->tenant ? a->tenant : "");
		r->state = drv_strdup(a->state ? a->state : "");
		r->efficiency = a->efficiency ? drv_strdup(a->efficiency) : NULL;
	}
}

static int from_store(const struct drv_store_acct *a, void *cls)
{
	add_row(cls, a);
	return 0;
}

struct aread {
	int64_t since, until;
	struct acollect *c;
};

static int from_sum(const struct drv_store_acct_sum *g, void *cls)
{
	struct acollect *c = cls;
	struct arow *r;

	DRV_GROW(c->v, c->n + 1, c->cap);
	r = &c->v[c->n++];
	memset(r, 0, sizeof(*r));
	r->group = drv_strdup(g->group ? g->group : "");
	r->jobs = g->jobs;
	r->attempts = g->attempts;
	r->milli_s = g->gpu_milli_s;
	r->micro = g->cost_micro;
	return 0;
}

static int read_rows(struct drv_server *s, struct aread *q)
{
	struct drv_store *st = s->rstore;
	int rc;

	pthread_mutex_lock(&s->rstore_mu);
	if (q->c->by == BY_JOB)
		rc = st->ops->load_acct(st, q->since, q->until, from_store, q->c);
	else
		rc = st->ops->sum_acct(st, q->since, q->until, by_names[q->c->by],
				       q->c->only_user, from_sum, q->c);
	pthread_mutex_unlock(&s->rstore_mu);
	return rc;
}

/* The attempts running now, as if they ended now. Under s->mu. */
static void running_rows(struct drv_server *s, struct acollect *c, int64_t now)
{
	for (size_t k = 0; k < s->nactive; k++) {
		struct srv_job *j = srv_job_get(s, s->active[k]);
		struct drv_store_acct a;

		if (!j || !j->start_time)
			continue;
		srv_acct_row(s, j, srv_jstate_name(j->state), now, &a);
		add_row(c, &a);
		free((char *)a.efficiency);   /* json_dumps' */
	}
}

static int arow_cmp(const void *x, const void *y)
{
	const struct arow *a = x, *b = y;
	int d = strcmp(a->group, b->group);

	if (d)
		return d;
	return a->job < b->job ? -1 : a->job > b->job;
}

static int arow_cmp_job(const void *x, const void *y)
{
	const struct arow *a = x, *b = y;

	if (a->job != b->job)
		return a->job < b->job ? -1 : 1;
	return a->attempt < b->attempt ? -1 : a->attempt > b->attempt;
}

static json_t *sums_json(int64_t jobs, int64_t attempts, int64_t milli_s, int64_t micro)
{
	return json_pack("{s:I,s:I,s:f,s:f}", "jobs", (json_int_t)jobs, "attempts",
			 (json_int_t)attempts, "gpu_hours", (double)milli_s / 3.6e6, "cost_usd",
			 (double)micro / 1e6);
}

/* A by-job item's own keys, from its last attempt r: the job's id as a
 * number (what a face such as sacct keys its CostUSD on), name, user,
 * tenant, state and the attempt's efficiency (null when none was reported). */
static void by_job_keys(json_t *it, const struct arow *r)
{
	json_t *eff = r->efficiency ? json_loads(r->efficiency, 0, NULL) : NULL;

	json_object_update_new(it, json_pack("{s:I,s:s,s:s,s:s,s:s,s:o}", "job",
					     (json_int_t)r->job, "name", r->name, "user", r->user,
					     "tenant", r->tenant, "state", r->state, "efficiency",
					     eff ? eff : json_null()));
}

/* Groups the rows (sorted) into items; the totals into *tot. */
static json_t *group_rows(struct acollect *c, json_t **tot)
{
	json_t *items = json_array();
	int64_t tj = 0, ta = 0, tm = 0, tu = 0;
	size_t i = 0;

	qsort(c->v, c->n, sizeof(*c->v), c->by == BY_JOB ? arow_cmp_job : arow_cmp);
	while (i < c->n) {
		size_t k = i;
		int64_t jobs = 0, attempts = 0, ms = 0, micro = 0;
		json_t *it;

		for (; k < c->n && strcmp(c->v[k].group, c->v[i].group) == 0; k++) {
			const struct arow *r = &c->v[k];

			/* a store's group first (job 0), then attempts by job id */
			jobs += r->job ? k == i || r->job != c->v[k - 1].job : r->jobs;
			attempts += r->attempts;
			ms += r->milli_s;
			micro += r->micro;
		}
		it = sums_json(jobs, attempts, ms, micro);
		json_object_set_new(it, "group", json_string(c->v[i].group));
		if (c->by == BY_JOB)
			by_job_keys(it, &c->v[k - 1]);
		json_array_append_new(items, it);
		tj += jobs;
		ta += attempts;
		tm += ms;
		tu += micro;
		i = k;
	}
	*tot = sums_json(tj, ta, tm, tu);
	return items;
}

static void collect_release(struct acollect *c)
{
	for (size_t i = 0; i < c->n; i++) {
		drv_free(c->v[i].group);
		drv_free(c->v[i].name);
		drv_free(c->v[i].user);
		drv_free(c->v[i].tenant);
		drv_free(c->v[i].state);
		drv_free(c->v[i].efficiency);
	}
	drv_free(c->v);
}

/* A time parameter: RFC 3339 or seconds since the epoch; dflt if absent.
 * -1 after a 400. */
static int time_param(struct drv_http_req *r, const char *key, int64_t dflt, int64_t *out,
		      struct drv_http_resp *o)
{
	const char *v = drv_http_req_query(r, key);
	char *end;
	long long n;

	*out = dflt;
	if (!v)
		return 0;
	n = strtoll(v, &end, 10);
	if (*v && !*end) {
		*out = n;
		return 0;
	}
	if (drv_rfc3339_parse(v, out) == 0)
		return 0;
	drv_http_resp_error(o, 400, "invalid", NULL,
			    "%s=%s: expected an RFC 3339 time (2026-12-01T00:00:00Z) or seconds "
			    "since the epoch", key, v);
	return -1;
}

static int parse_by(const char *v, enum by *by, struct drv_http_resp *o)
{
	*by = BY_TENANT;
	if (!v)
		return 0;
	for (int k = 0; k < (int)DRV_ARRAY_SIZE(by_names); k++) {
		if (strcmp(v, by_names[k]) == 0) {
			*by = (enum by)k;
			return 0;
		}
	}
	drv_http_resp_error(o, 400, "invalid", NULL, "by=%s: expected tenant, user, pool or job", v);
	return -1;
}

int srv_api_acct(struct drv_http_req *r, struct drv_http_resp *o, void *ctx)
{
	struct drv_server *s = ctx;
	struct caller *c = drv_http_req_user(r);
	int64_t now = drv_wall_s(), since, until;
	struct acollect col = { 0 };
	struct aread q = { .c = &col };
	json_t *items, *tot;
	char a[DRV_RFC3339_LEN], b[DRV_RFC3339_LEN];

	if (parse_by(drv_http_req_query(r, "by"), &col.by, o) < 0 ||
	    time_param(r, "since", srv_month_start(now), &since, o) < 0 ||
	    time_param(r, "until", now + 1, &until, o) < 0)
		return 0;
	col.only_user = c->admin ? NULL : c->user;
	q.since = since;
	q.until = until;
	if (read_rows(s, &q) < 0) {
		drv_http_resp_error(o, 503, "unavailable", NULL,
				    "the state store cannot be read: %s", s->rstore->err);
		collect_release(&col);
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	if (now >= since && now < until)
		running_rows(s, &col, now);
	pthread_mutex_unlock(&s->mu);
	items = group_rows(&col, &tot);
	collect_release(&col);
	drv_http_resp_json(o, 200, json_pack("{s:s,s:s,s:s,s:o,s:o}", "by", by_names[col.by],
					     "since", drv_rfc3339(since, a, sizeof(a)), "until",
					     drv_rfc3339(until, b, sizeof(b)), "items", items,
					     "total", tot));
	return 0;
}
