/*
 * store_fault.c: fault injection through the store table
 * (include/drover/store.h), as SQLite's own I/O fault tests do through its
 * VFS: a store that forwards every call to an inner store until armed, then
 * makes the chosen operation fail (a full disk, a dead medium), so tests can
 * check that the controller answers with an error and keeps nothing
 * half-written.
 *
 * The controller arms it from the environment too (DROVER_STORE_FAULT, see
 * src/server), so integration tests can break a real server's disk writes.
 */
#include "drover/store.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

struct fault {
	struct drv_store *inner;
	char op[32];
	int after;        /* successful calls left before failing; < 0 = disarmed */
	int err;
	int hits;
	char slow_op[32]; /* an operation that first sleeps slow_ms (a slow disk) */
	int slow_ms;
};

static void maybe_slow(struct drv_store *s, const char *op)
{
	struct fault *f = s->impl;

	if (f->slow_ms > 0 && strcmp(f->slow_op, op) == 0) {
		struct timespec ts = { f->slow_ms / 1000, (long)(f->slow_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
}

static bool should_fail(struct drv_store *s, const char *op, bool is_write)
{
	struct fault *f = s->impl;

	if (f->after < 0)
		return false;
	if (strcmp(f->op, op) != 0 && !(is_write && strcmp(f->op, "*") == 0))
		return false;
	if (f->after > 0) {
		f->after--;
		return false;
	}
	f->hits++;
	snprintf(s->err, sizeof(s->err), "injected fault: %s failed (%s)", op,
		 drv_strerror(f->err));
	return true;
}

#define INNER(s) (((struct fault *)(s)->impl)->inner)
#define FERR(s) (((struct fault *)(s)->impl)->err)

static int copy_err(struct drv_store *s, int rc)
{
	if (rc < 0)
		memcpy(s->err, INNER(s)->err, sizeof(s->err));
	return rc;
}

static int f_begin(struct drv_store *s)
{
	if (should_fail(s, "begin", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->begin(INNER(s)));
}

static int f_commit(struct drv_store *s)
{
	maybe_slow(s, "commit");
	if (should_fail(s, "commit", true)) {
		INNER(s)->ops->rollback(INNER(s));
		return FERR(s);
	}
	return copy_err(s, INNER(s)->ops->commit(INNER(s)));
}

static int f_rollback(struct drv_store *s)
{
	return copy_err(s, INNER(s)->ops->rollback(INNER(s)));
}

static int f_put_job(struct drv_store *s, const struct drv_store_job *j)
{
	if (should_fail(s, "put_job", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->put_job(INNER(s), j));
}

static int f_load_jobs(struct drv_store *s, int (*fn)(const struct drv_store_job *, void *),
		       void *cls)
{
	if (should_fail(s, "load_jobs", false))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->load_jobs(INNER(s), fn, cls));
}

static int f_add_event(struct drv_store *s, struct drv_store_event *e)
{
	if (should_fail(s, "add_event", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->add_event(INNER(s), e));
}

static int f_load_events(struct drv_store *s, int64_t since, uint64_t job, int limit,
			 int (*fn)(const struct drv_store_event *, void *), void *cls)
{
	if (should_fail(s, "load_events", false))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->load_events(INNER(s), since, job, limit, fn, cls));
}

static int f_put_node(struct drv_store *s, const struct drv_store_node *n)
{
	if (should_fail(s, "put_node", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->put_node(INNER(s), n));
}

static int f_load_nodes(struct drv_store *s, int (*fn)(const struct drv_store_node *, void *),
			void *cls)
{
	if (should_fail(s, "load_nodes", false))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->load_nodes(INNER(s), fn, cls));
}

static int f_get_meta(struct drv_store *s, const char *key, int64_t *val)
{
	if (should_fail(s, "get_meta", false))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->get_meta(INNER(s), key, val));
}

static int f_put_meta(struct drv_store *s, const char *key, int64_t val)
{
	if (should_fail(s, "put_meta", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->put_meta(INNER(s), key, val));
}

static int f_max_ids(struct drv_store *s, uint64_t *job, int64_t *seq)
{
	return copy_err(s, INNER(s)->ops->max_ids(INNER(s), job, seq));
}

static int f_load_live_jobs(struct drv_store *s,
			    int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	maybe_slow(s, "load_live_jobs");
	if (should_fail(s, "load_live_jobs", false))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->load_live_jobs(INNER(s), fn, cls));
}

static int f_get_job(struct drv_store *s, uint64_t id,
		     int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	int rc;

	if (should_fail(s, "get_job", false))
		return FERR(s);
	/* a slow read sleeps after reading: what it returns is as of its
	 * start, as a long read transaction's snapshot is */
	rc = copy_err(s, INNER(s)->ops->get_job(INNER(s), id, fn, cls));
	maybe_slow(s, "get_job");
	return rc;
}

static int f_list_jobs(struct drv_store *s, const struct drv_store_job_query *q,
		       int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	int rc;

	if (should_fail(s, "list_jobs", false))
		return FERR(s);
	/* a slow read sleeps after reading: what it returns is as of its
	 * start, as a long read transaction's snapshot is */
	rc = copy_err(s, INNER(s)->ops->list_jobs(INNER(s), q, fn, cls));
	maybe_slow(s, "list_jobs");
	return rc;
}

static int f_count_done(struct drv_store *s, int (*fn)(const char *, int64_t, void *), void *cls)
{
	return copy_err(s, INNER(s)->ops->count_done(INNER(s), fn, cls));
}

static int f_purge_jobs(struct drv_store *s, int64_t before, int limit, int64_t *n)
{
	if (should_fail(s, "purge_jobs", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->purge_jobs(INNER(s), before, limit, n));
}

static int f_put_acct(struct drv_store *s, const struct drv_store_acct *a)
{
	if (should_fail(s, "put_acct", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->put_acct(INNER(s), a));
}

static int f_load_acct(struct drv_store *s, int64_t since, int64_t until,
		       int (*fn)(const struct drv_store_acct *, void *), void *cls)
{
	if (should_fail(s, "load_acct", false))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->load_acct(INNER(s), since, until, fn, cls));
}

static int f_month_cost(struct drv_store *s, int64_t month,
			int (*fn)(const char *, int64_t, void *), void *cls)
{
	return copy_err(s, INNER(s)->ops->month_cost(INNER(s), month, fn, cls));
}

static int f_sum_acct(struct drv_store *s, int64_t since, int64_t until, const char *by,
		      const char *user, int (*fn)(const struct drv_store_acct_sum *, void *),
		      void *cls)
{
	return copy_err(s, INNER(s)->ops->sum_acct(INNER(s), since, until, by, user, fn, cls));
}

static int f_put_idem(struct drv_store *s, const struct drv_store_idem *k)
{
	if (should_fail(s, "put_idem", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->put_idem(INNER(s), k));
}

static int f_get_idem(struct drv_store *s, const char *user, const char *key,
		      int (*fn)(const struct drv_store_idem *, void *), void *cls)
{
	if (should_fail(s, "get_idem", false))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->get_idem(INNER(s), user, key, fn, cls));
}

static int f_purge_idem(struct drv_store *s, int64_t before, int64_t *n)
{
	if (should_fail(s, "purge_idem", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->purge_idem(INNER(s), before, n));
}

static int f_fence(struct drv_store *s, int64_t term)
{
	return drv_store_fence(INNER(s), term);
}

static int f_put_kobj(struct drv_store *s, const struct drv_store_kobj *o)
{
	if (should_fail(s, "put_kobj", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->put_kobj(INNER(s), o));
}

static int f_del_kobj(struct drv_store *s, const char *kind, const char *ns, const char *name)
{
	if (should_fail(s, "del_kobj", true))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->del_kobj(INNER(s), kind, ns, name));
}

static int f_load_kobjs(struct drv_store *s,
			int (*fn)(const struct drv_store_kobj *, void *), void *cls)
{
	if (should_fail(s, "load_kobjs", false))
		return FERR(s);
	return copy_err(s, INNER(s)->ops->load_kobjs(INNER(s), fn, cls));
}

static void f_close(struct drv_store *s)
{
	struct fault *f = s->impl;

	if (!f)
		return;
	drv_store_close(f->inner);
	drv_free(f);
	s->impl = NULL;
}

static const struct drv_store_ops fault_ops = {
	.name = "fault",
	.begin = f_begin,
	.commit = f_commit,
	.rollback = f_rollback,
	.put_job = f_put_job,
	.load_jobs = f_load_jobs,
	.add_event = f_add_event,
	.load_events = f_load_events,
	.put_node = f_put_node,
	.load_nodes = f_load_nodes,
	.get_meta = f_get_meta,
	.put_meta = f_put_meta,
	.max_ids = f_max_ids,
	.load_live_jobs = f_load_live_jobs,
	.get_job = f_get_job,
	.list_jobs = f_list_jobs,
	.count_done = f_count_done,
	.purge_jobs = f_purge_jobs,
	.put_acct = f_put_acct,
	.load_acct = f_load_acct,
	.month_cost = f_month_cost,
	.sum_acct = f_sum_acct,
	.put_idem = f_put_idem,
	.get_idem = f_get_idem,
	.purge_idem = f_purge_idem,
	.fence = f_fence,
	.put_kobj = f_put_kobj,
	.del_kobj = f_del_kobj,
	.load_kobjs = f_load_kobjs,
	.close = f_close,
};

int drv_store_fault_wrap(struct drv_store *inner, struct drv_store **out)
{
	struct drv_store *s = drv_calloc(1, sizeof(*s));
	struct fault *f = drv_calloc(1, sizeof(*f));

	f->inner = inner;
	f->after = -1;
	f->err = DRV_EIO;
	s->ops = &fault_ops;
	s->impl = f;
	*out = s;
	return 0;
}

int drv_store_fence(struct drv_store *s, int64_t term)
{
	return s->ops->fence ? s->ops->fence(s, term) : DRV_EUNSUPP;
}

void drv_store_fault_arm(struct drv_store *s, const char *op, int after, int err)
{
	struct fault *f = s->impl;

	if (s->ops != &fault_ops)
		return;
	snprintf(f->op, sizeof(f->op), "%s", op ? op : "*");
	f->after = after;
	f->err = err ? err : DRV_EIO;
}

int drv_store_fault_hits(const struct drv_store *s)
{
	return s->ops == &fault_ops ? ((struct fault *)s->impl)->hits : 0;
}

void drv_store_fault_slow(struct drv_store *s, const char *op, int ms)
{
	struct fault *f = s->impl;

	if (s->ops != &fault_ops)
		return;
	snprintf(f->slow_op, sizeof(f->slow_op), "%s", op ? op : "");
	f->slow_ms = ms;
}
