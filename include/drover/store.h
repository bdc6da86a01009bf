/*
 * store.h: drover's durable state behind one small interface (src/store/).
 * Owned by the server engineer (issue 6).
 *
 * The controller keeps its unfinished jobs in memory and writes through to
 * a store: every job as one row (a few indexed columns plus the full record
 * as a JSON document), an append-only log of events with a sequence number
 * that only grows, the nodes, a few named counters (the assignment epoch)
 * and one accounting row per ended attempt. On start it loads the nodes and
 * the unfinished jobs only (load_live_jobs); finished jobs are read from
 * the store when asked for (get_job, list_jobs), and purged after the
 * retention time (purge_jobs) while their accounting rows stay.
 *
 * A store is a table of function pointers (SQLite's VFS, Slurm's select
 * plugins): struct drv_store_ops. The SQLite backend (store_sqlite.c) runs
 * in WAL mode with synchronous=FULL, so a committed transaction is on disk
 * when commit returns; its schema is versioned (PRAGMA user_version) and
 * migrated forward on open. The fault backend (store_fault.c) wraps any
 * store and makes chosen operations fail, so tests can show that a failing
 * write is reported and nothing half-done is kept.
 *
 * Not thread-safe: the caller serialises calls on one store.
 * Strings passed in are copied or written before the call returns; strings
 * handed to callbacks are valid during the callback only.
 */
#ifndef DROVER_STORE_H
#define DROVER_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "drover/common.h"

struct drv_store;

/* One job row. doc is the full record as JSON text (the server's format). */
struct drv_store_job {
	uint64_t id;
	const char *name;
	const char *user;
	const char *tenant;
	const char *state;
	int64_t submit_time;   /* s since the Unix epoch */
	const char *doc;
	int64_t end_time;      /* s; 0 while unfinished */
	bool done;             /* finished and holding nothing: not loaded at start */
};

/* Which jobs list_jobs returns: ids above after, in id order, at most limit
 * (0 = all), and only those matching every filter given. */
struct drv_store_job_query {
	uint64_t after;
	int limit;
	int done;              /* -1 any, 0 unfinished only, 1 finished only */
	const char *user, *tenant, *name;   /* NULL: any */
	const char *states;    /* ",succeeded,failed," (commas around each); NULL: any */
};

/*
 * One accounting row: one attempt of a job that ended (a requeued attempt
 * has state "requeued"). Kept after the job's own record is purged; what
 * accounting, budgets and sacct read. Money in integer micro-dollars,
 * GPU time in milli-GPU-seconds (1000 = one GPU for one second).
 */
/* A group of accounting rows (sum_acct). */
struct drv_store_acct_sum {
	const char *group;
	int64_t jobs;          /* distinct jobs */
	int64_t attempts;      /* rows */
	int64_t gpu_milli_s;
	int64_t cost_micro;
};

struct drv_store_acct {
	uint64_t job;
	int32_t attempt;
	const char *name, *user, *tenant, *pool, *state;
	int64_t submit_time, start_time, end_time;   /* s; start 0 = never started */
	bool has_exit;
	int exit_code;
	int64_t gpu_milli_s;
	int64_t cost_micro;
	const char *efficiency;  /* the attempt's efficiency as JSON text (docs/api.md); NULL none */
};

/* One event. seq is assigned by add_event (> every earlier seq, also across
 * restarts). job is 0 for node events; node is NULL for job events. */
struct drv_store_event {
	int64_t seq;
	int64_t time;
	const char *type;      /* "job", "node" */
	uint64_t job;
	const char *node;
	const char *from;      /* may be NULL */
	const char *to;
	const char *reason;
	const char *doc;       /* the event as JSON text (what the watch stream sends) */
};

struct drv_store_node {
	const char *name;
	const char *doc;       /* JSON text */
};

/*
 * The answer given to a create request that carried an Idempotency-Key
 * (docs/api.md): kept per (user, key) with a fingerprint of the request,
 * so a repeat gets the same answer and another request under the same key
 * is told apart. Written in the transaction of what the request created.
 */
struct drv_store_idem {
	const char *user;
	const char *key;
	const char *fingerprint;   /* hex SHA-256 of route, Content-Type, filename, body */
	int status;
	const char *body;          /* the reply body as sent */
	const char *headers;       /* the reply's own header lines ("Name: value\n"), or NULL */
	int64_t created;           /* s since the Unix epoch */
};

/*
 * A Kubernetes object drover keeps as it is (docs/kubernetes.md): a
 * Secret or ConfigMap, by kind ("Secret", "ConfigMap"), namespace and
 * name; owner is the user who made it. The store file is the
 * controller's alone (mode 0600): Secrets' values live there and nowhere
 * else on the controller's disk.
 */
struct drv_store_kobj {
	const char *kind;
	const char *ns;
	const char *name;
	const char *owner;
	const char *doc;           /* the object, JSON */
};

/*
 * The backend table. Every function returns 0 or a negative drv_err
 * (DRV_EIO when the medium failed, DRV_ENOENT when a key is absent).
 * Writes outside begin/commit are each their own transaction.
 * Loaders call fn for each row in key order (jobs by id, events by seq,
 * nodes by name) and stop early, returning fn's value, when fn returns
 * non-zero.
 */
struct drv_store_ops {
	const char *name;
	int (*begin)(struct drv_store *s);
	int (*commit)(struct drv_store *s);
	int (*rollback)(struct drv_store *s);
	int (*put_job)(struct drv_store *s, const struct drv_store_job *j);   /* insert or replace */
	int (*load_jobs)(struct drv_store *s,
			 int (*fn)(const struct drv_store_job *j, void *cls), void *cls);
	int (*add_event)(struct drv_store *s, struct drv_store_event *e);    /* sets e->seq */
	/* events with seq > since (and of job when job != 0), at most limit (0 = all) */
	int (*load_events)(struct drv_store *s, int64_t since, uint64_t job, int limit,
			   int (*fn)(const struct drv_store_event *e, void *cls), void *cls);
	int (*put_node)(struct drv_store *s, const struct drv_store_node *n);
	int (*load_nodes)(struct drv_store *s,
			  int (*fn)(const struct drv_store_node *n, void *cls), void *cls);
	int (*get_meta)(struct drv_store *s, const char *key, int64_t *val); /* DRV_ENOENT */
	int (*put_meta)(struct drv_store *s, const char *key, int64_t val);
	/* Largest job id and event seq stored (0 when none). */
	int (*max_ids)(struct drv_store *s, uint64_t *job, int64_t *seq);
	/* Jobs with done false, by id (what a restart loads). */
	int (*load_live_jobs)(struct drv_store *s,
			      int (*fn)(const struct drv_store_job *j, void *cls), void *cls);
	/* One job; DRV_ENOENT when absent (never stored, or purged). */
	int (*get_job)(struct drv_store *s, uint64_t id,
		       int (*fn)(const struct drv_store_job *j, void *cls), void *cls);
	int (*list_jobs)(struct drv_store *s, const struct drv_store_job_query *q,
			 int (*fn)(const struct drv_store_job *j, void *cls), void *cls);
	/* Jobs with done true counted by state: fn once per state present
	 * (kept as rows are written: a few rows read, not a scan). */
	int (*count_done)(struct drv_store *s,
			  int (*fn)(const char *state, int64_t n, void *cls), void *cls);
	/* Deletes at most limit done jobs that ended before `before` (s), with
	 * their events; *n gets how many. Their accounting rows stay. Call
	 * inside begin/commit. */
	int (*purge_jobs)(struct drv_store *s, int64_t before, int limit, int64_t *n);
	int (*put_acct)(struct drv_store *s, const struct drv_store_acct *a);  /* insert or replace */
	/* Accounting rows with since <= end_time < until, by end_time. */
	int (*load_acct)(struct drv_store *s, int64_t since, int64_t until,
			 int (*fn)(const struct drv_store_acct *a, void *cls), void *cls);
	/* The accounting rows with since <= end_time < until (of user, unless
	 * NULL) summed per value of column by ("tenant", "user" or "pool"; else
	 * DRV_EINVAL): fn once per group, in group order. */
	int (*sum_acct)(struct drv_store *s, int64_t since, int64_t until, const char *by,
			const char *user,
			int (*fn)(const struct drv_store_acct_sum *g, void *cls), void *cls);
	/* The cost (micro-dollars) of the attempts that ended in the calendar
	 * month (UTC) starting at month, by tenant: fn once per tenant. Kept as
	 * rows are written, so it reads a few rows, not a month of them. */
	int (*month_cost)(struct drv_store *s, int64_t month,
			  int (*fn)(const char *tenant, int64_t micro, void *cls), void *cls);
	/* Idempotency keys: put inserts or replaces (user, key); get calls fn
	 * once or returns DRV_ENOENT; purge deletes those created before
	 * `before` (s), *n gets how many. */
	int (*put_idem)(struct drv_store *s, const struct drv_store_idem *k);
	int (*get_idem)(struct drv_store *s, const char *user, const char *key,
			int (*fn)(const struct drv_store_idem *k, void *cls), void *cls);
	int (*purge_idem)(struct drv_store *s, int64_t before, int64_t *n);
	/* Fencing (PostgreSQL; NULL elsewhere): from now on every write
	 * transaction first checks, in the database and inside the same
	 * transaction, that the leader lease's term is still term, and is
	 * refused with DRV_EPERM when another controller took it. 0: none. */
	int (*fence)(struct drv_store *s, int64_t term);
	/* Kubernetes objects: insert or replace; delete (DRV_ENOENT when
	 * absent); all of them, by kind, namespace, name. */
	int (*put_kobj)(struct drv_store *s, const struct drv_store_kobj *o);
	int (*del_kobj)(struct drv_store *s, const char *kind, const char *ns, const char *name);
	int (*load_kobjs)(struct drv_store *s,
			  int (*fn)(const struct drv_store_kobj *o, void *cls), void *cls);
	void (*close)(struct drv_store *s);
};

struct drv_store {
	const struct drv_store_ops *ops;
	void *impl;
	char err[256];         /* the last failure, for a person */
};

/* Calls through the table (so callers read like plain functions). */
static inline int drv_store_begin(struct drv_store *s) { return s->ops->begin(s); }
static inline int drv_store_commit(struct drv_store *s) { return s->ops->commit(s); }
static inline int drv_store_rollback(struct drv_store *s) { return s->ops->rollback(s); }
static inline int drv_store_put_job(struct drv_store *s, const struct drv_store_job *j)
{ return s->ops->put_job(s, j); }
static inline int drv_store_add_event(struct drv_store *s, struct drv_store_event *e)
{ return s->ops->add_event(s, e); }
static inline int drv_store_put_node(struct drv_store *s, const struct drv_store_node *n)
{ return s->ops->put_node(s, n); }
static inline int drv_store_get_meta(struct drv_store *s, const char *k, int64_t *v)
{ return s->ops->get_meta(s, k, v); }
static inline int drv_store_put_meta(struct drv_store *s, const char *k, int64_t v)
{ return s->ops->put_meta(s, k, v); }
static inline int drv_store_put_acct(struct drv_store *s, const struct drv_store_acct *a)
{ return s->ops->put_acct(s, a); }
/* Closes and frees; NULL is a no-op. */
void drv_store_close(struct drv_store *s);

/*
 * SQLite: opens (creating) the database file path, WAL mode, and migrates
 * the schema to the newest version. DRV_EIO with s->err... when it cannot:
 * errmsg gets the reason. A database whose schema is newer than this
 * binary knows is refused (DRV_EUNSUPP).
 */
int drv_store_open_sqlite(const char *path, struct drv_store **out, char *errmsg,
			  size_t errsz);
/* An online copy of the SQLite database src into dst (SQLite's backup
 * API: a consistent snapshot while a server writes), dst created 0600;
 * an existing dst is refused (DRV_EINVAL), a failed copy removed. */
int drv_store_sqlite_backup(const char *src, const char *dst, char *errmsg, size_t errsz);
/* The newest schema version this binary writes. */
int drv_store_sqlite_schema_version(void);
/* Opens path migrating only up to version (tests of migrations). */
int drv_store_open_sqlite_at(const char *path, int version, struct drv_store **out,
			     char *errmsg, size_t errsz);

/*
 * PostgreSQL (store_pg.c, docs/ha.md): url is a libpq URL or conninfo
 * ("postgres://drover@db.example:5432/drover"); one that carries a
 * password is refused (DRV_EINVAL), since a URL shows in ps and logs.
 * The password comes from password_file (mode 0600 or stricter; NULL: none)
 * or from libpq's own PGPASSFILE or ~/.pgpass. Inside begin/commit the
 * writes are pipelined (sent without waiting for their answers): a write's
 * own failure may be reported by commit instead, which then rolls the
 * transaction back. Events get their seq from the store, not the database
 * (one writer, the fenced leader). Migrates the schema forward
 * as the SQLite backend does (a newer database: DRV_EUNSUPP); DRV_EIO with
 * libpq's reason in errmsg when the database cannot be reached.
 */
int drv_store_open_pg(const char *url, const char *password_file, struct drv_store **out,
		      char *errmsg, size_t errsz);
int drv_store_open_pg_at(const char *url, const char *password_file, int version,
			 struct drv_store **out, char *errmsg, size_t errsz);
int drv_store_pg_schema_version(void);
/* Whether a --store value names PostgreSQL (postgres:// or postgresql://). */
bool drv_store_is_pg_url(const char *store);

/*
 * The leader lease (PostgreSQL only; DRV_EUNSUPP elsewhere): one row with
 * a term that only grows, the holder, its advertised address and an expiry
 * kept on the database's clock. Each call gives up after timeout_ms
 * (DRV_ETIMEDOUT, the connection dropped and made again on the next call),
 * so a database that stops answering cannot hold a caller. Use a store
 * handle of its own for these (not the one that writes).
 *   take:    takes the lease if it has expired, term + 1, for lease_ms:
 *            0 with *l the new lease, or DRV_EEXIST with *l the holder's.
 *            holder must name this process alone (a take that timed out
 *            may still have gone through: the next take finds it ours).
 *   renew:   extends lease_ms from now if term is still the current one:
 *            0, or DRV_ESTATE (deposed; *l the current holder's).
 *   release: ends term's lease now, so a standby takes over at once.
 */
struct drv_lease {
	int64_t term;
	char holder[512];
	char addr[300];
	int64_t expires_in_ms;   /* on the database's clock; < 0: expired */
};
int drv_store_lease_take(struct drv_store *s, const char *holder, const char *addr,
			 int lease_ms, int timeout_ms, struct drv_lease *l);
/* Takes the lease from term's holder even before it expires: only for a
 * holder known dead (the same controller restarted: its state directory's
 * lock proves the old process gone). 0, or DRV_EEXIST if term moved on. */
int drv_store_lease_take_from(struct drv_store *s, int64_t term, const char *holder,
			      const char *addr, int lease_ms, int timeout_ms, struct drv_lease *l);
int drv_store_lease_renew(struct drv_store *s, int64_t term, int lease_ms, int timeout_ms,
			  struct drv_lease *l);
int drv_store_lease_release(struct drv_store *s, int64_t term, int timeout_ms);
/* Fences s with term (the fence op); DRV_EUNSUPP for a store without one. */
int drv_store_fence(struct drv_store *s, int64_t term);

/*
 * Fault injection: wraps inner (taking ownership) in a store whose
 * operations pass through until armed. drv_store_fault_arm(s, op, after,
 * err): the operation named op ("put_job", "add_event", "commit", "*" for
 * any write) fails with err after `after` more successful calls of it, and
 * keeps failing until disarmed (count < 0 disarms). A failing commit rolls
 * the inner transaction back, as a real failed commit does.
 */
int drv_store_fault_wrap(struct drv_store *inner, struct drv_store **out);
void drv_store_fault_arm(struct drv_store *s, const char *op, int after, int err);
/* Calls of op that failed so far. */
int drv_store_fault_hits(const struct drv_store *s);
/* Makes op ("load_live_jobs") sleep ms before each call: a slow disk, so
 * tests can watch a restart that is still loading. */
void drv_store_fault_slow(struct drv_store *s, const char *op, int ms);

#endif
