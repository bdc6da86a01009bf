/*
 * store_sqlite.c: the SQLite backend of the store (include/drover/store.h).
 *
 * One database file in WAL mode with synchronous=FULL: a transaction is on
 * disk when COMMIT returns, and readers never block the writer. The schema
 * is versioned with PRAGMA user_version; migrations[] holds one SQL script
 * per version and open applies, in one transaction, every script above the
 * file's version. A file newer than this binary is refused rather than
 * guessed at. Statements are prepared once and reused.
 *
 * The file holds every job's command and environment, so it is the
 * controller's alone: created 0600 before SQLite opens it (SQLite gives
 * -wal and -shm the database file's mode), and an older file, or a -wal or
 * -shm left by a crash, that group or others may read is narrowed to 0600.
 */
#include "drover/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

/* The first second (UTC) of the calendar month of time t, in SQL. */
#define MONTH_OF(t) "CAST(strftime('%s', " t ", 'unixepoch', 'start of month') AS INTEGER)"

/* migrations[i] takes the schema from version i to i + 1. Never edit a
 * shipped entry; append a new one. */
static const char *const migrations[] = {
	/* 0 -> 1: jobs, the event log, counters */
	"CREATE TABLE jobs ("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  user TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  submit_time INTEGER NOT NULL,"
	"  doc TEXT NOT NULL);"
	"CREATE TABLE events ("
	"  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  time INTEGER NOT NULL,"
	"  type TEXT NOT NULL,"
	"  job INTEGER NOT NULL DEFAULT 0,"
	"  from_state TEXT,"
	"  to_state TEXT NOT NULL,"
	"  reason TEXT NOT NULL DEFAULT '',"
	"  doc TEXT NOT NULL);"
	"CREATE TABLE meta (key TEXT PRIMARY KEY, val INTEGER NOT NULL);",
	/* 1 -> 2: tenants on jobs, nodes, node events, indexes for filters */
	"ALTER TABLE jobs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';"
	"ALTER TABLE events ADD COLUMN node TEXT;"
	"CREATE TABLE nodes (name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
	"CREATE INDEX events_by_job ON events(job, seq);"
	"CREATE INDEX jobs_by_state ON jobs(state);",
	/* 2 -> 3: finished jobs stay in the store only (done), are purged by
	 * end time, and leave one accounting row per attempt */
	"ALTER TABLE jobs ADD COLUMN end_time INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN done INTEGER NOT NULL DEFAULT 0;"
	"UPDATE jobs SET end_time = COALESCE(json_extract(doc, '$.end_time'), 0),"
	"  done = (state IN ('succeeded', 'failed', 'cancelled')"
	"          AND COALESCE(json_extract(doc, '$.holding'), 0) = 0);"
	"CREATE INDEX jobs_live ON jobs(id) WHERE done = 0;"
	"CREATE INDEX jobs_done ON jobs(done, state);"
	"CREATE INDEX jobs_done_end ON jobs(done, end_time);"
	"CREATE TABLE acct ("
	"  job INTEGER NOT NULL,"
	"  attempt INTEGER NOT NULL,"
	"  name TEXT NOT NULL,"
	"  user TEXT NOT NULL,"
	"  tenant TEXT NOT NULL,"
	"  pool TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  submit_time INTEGER NOT NULL,"
	"  start_time INTEGER NOT NULL,"
	"  end_time INTEGER NOT NULL,"
	"  exit_code INTEGER,"
	"  gpu_milli_s INTEGER NOT NULL,"
	"  cost_micro INTEGER NOT NULL,"
	"  PRIMARY KEY (job, attempt));"
	"CREATE INDEX acct_by_end ON acct(end_time);",
	/* 3 -> 4: what a restart reads kept small by triggers: finished jobs
	 * counted by state, and each calendar month's (UTC) cost by tenant.
	 * (A REPLACE's deletion fires the delete triggers: recursive_triggers
	 * is on for every connection.) */
	"CREATE TABLE done_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL);"
	"INSERT INTO done_counts SELECT state, COUNT(*) FROM jobs WHERE done = 1 GROUP BY state;"
	"CREATE TRIGGER jobs_done_add AFTER INSERT ON jobs WHEN NEW.done = 1 BEGIN"
	"  INSERT INTO done_counts(state, n) VALUES (NEW.state, 1)"
	"  ON CONFLICT(state) DO UPDATE SET n = n + 1; END;"
	"CREATE TRIGGER jobs_done_sub AFTER DELETE ON jobs WHEN OLD.done = 1 BEGIN"
	"  UPDATE done_counts SET n = n - 1 WHERE state = OLD.state; END;"
	"CREATE TABLE acct_month (month INTEGER NOT NULL, tenant TEXT NOT NULL,"
	"  micro INTEGER NOT NULL, PRIMARY KEY (month, tenant));"
	"INSERT INTO acct_month SELECT " MONTH_OF("end_time") ", tenant, SUM(cost_micro)"
	"  FROM acct WHERE true GROUP BY 1, 2;"
	"CREATE TRIGGER acct_month_add AFTER INSERT ON acct BEGIN"
	"  INSERT INTO acct_month VALUES (" MONTH_OF("NEW.end_time") ", NEW.tenant, NEW.cost_micro)"
	"  ON CONFLICT(month, tenant) DO UPDATE SET micro = micro + NEW.cost_micro; END;"
	"CREATE TRIGGER acct_month_sub AFTER DELETE ON acct BEGIN"
	"  UPDATE acct_month SET micro = micro - OLD.cost_micro"
	"  WHERE month = " MONTH_OF("OLD.end_time") " AND tenant = OLD.tenant; END;",
	/* 4 -> 5: the answers to requests that carried an Idempotency-Key,
	 * per user and key, purged by age */
	"CREATE TABLE idem ("
	"  user TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  fingerprint TEXT NOT NULL,"
	"  status INTEGER NOT NULL,"
	"  body TEXT NOT NULL,"
	"  headers TEXT,"
	"  created INTEGER NOT NULL,"
	"  PRIMARY KEY (user, key));"
	"CREATE INDEX idem_by_created ON idem(created);",
	/* 5 -> 6: each attempt's efficiency (seff's figures) as JSON */
	"ALTER TABLE acct ADD COLUMN efficiency TEXT;",
	/* 6 -> 7: finished jobs by id, so a page of them (GET /v1/jobs) reads
	 * only finished rows: without it each page scanned every unfinished
	 * row after its start (14,000 pending jobs: 11 ms a page) */
	"CREATE INDEX jobs_finished ON jobs(id) WHERE done = 1;",
	/* 7 -> 8: Kubernetes Secrets and ConfigMaps, kept as they are */
	"CREATE TABLE kobjs ("
	"  kind TEXT NOT NULL,"
	"  ns TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  owner TEXT NOT NULL,"
	"  doc TEXT NOT NULL,"
	"  PRIMARY KEY (kind, ns, name));",
};

enum {
	ST_PUT_JOB,
	ST_LOAD_JOBS,
	ST_ADD_EVENT,
	ST_LOAD_EVENTS,
	ST_LOAD_JOB_EVENTS,
	ST_PUT_NODE,
	ST_LOAD_NODES,
	ST_GET_META,
	ST_PUT_META,
	ST_MAX_IDS,
	ST_LOAD_LIVE,
	ST_GET_JOB,
	ST_LIST_JOBS,
	ST_LIST_FINISHED,
	ST_COUNT_DONE,
	ST_MONTH_COST,
	ST_PURGE_EVENTS,
	ST_PURGE_JOBS,
	ST_PUT_ACCT,
	ST_LOAD_ACCT,
	ST_PUT_IDEM,
	ST_GET_IDEM,
	ST_PURGE_IDEM,
	ST_PUT_KOBJ,
	ST_DEL_KOBJ,
	ST_LOAD_KOBJS,
	ST_N
};

#define JOB_COLS "id,name,user,tenant,state,submit_time,doc,end_time,done"

static const char *const stmt_sql[ST_N] = {
	[ST_PUT_JOB] = "INSERT OR REPLACE INTO jobs(id,name,user,tenant,state,submit_time,doc,"
		       "end_time,done) VALUES(?,?,?,?,?,?,?,?,?)",
	[ST_LOAD_JOBS] = "SELECT " JOB_COLS " FROM jobs ORDER BY id",
	[ST_ADD_EVENT] = "INSERT INTO events(time,type,job,node,from_state,to_state,reason,doc)"
			 " VALUES(?,?,?,?,?,?,?,?)",
	[ST_LOAD_EVENTS] = "SELECT seq,time,type,job,node,from_state,to_state,reason,doc"
			   " FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
	[ST_LOAD_JOB_EVENTS] = "SELECT seq,time,type,job,node,from_state,to_state,reason,doc"
			       " FROM events WHERE job = ? AND seq > ? ORDER BY seq LIMIT ?",
	[ST_PUT_NODE] = "INSERT OR REPLACE INTO nodes(name,doc) VALUES(?,?)",
	[ST_LOAD_NODES] = "SELECT name,doc FROM nodes ORDER BY name",
	[ST_GET_META] = "SELECT val FROM meta WHERE key = ?",
	[ST_PUT_META] = "INSERT OR REPLACE INTO meta(key,val) VALUES(?,?)",
	[ST_MAX_IDS] = "SELECT (SELECT COALESCE(MAX(id),0) FROM jobs),"
		       " (SELECT COALESCE(MAX(seq),0) FROM events)",
	[ST_LOAD_LIVE] = "SELECT " JOB_COLS " FROM jobs WHERE done = 0 ORDER BY id",
	[ST_GET_JOB] = "SELECT " JOB_COLS " FROM jobs WHERE id = ?",
	[ST_LIST_JOBS] = "SELECT " JOB_COLS " FROM jobs WHERE id > ?1"
			 " AND (?2 < 0 OR done = ?2) AND (?3 IS NULL OR user = ?3)"
			 " AND (?4 IS NULL OR tenant = ?4) AND (?5 IS NULL OR name = ?5)"
			 " AND (?6 IS NULL OR instr(?6, ',' || state || ',') > 0)"
			 " ORDER BY id LIMIT ?7",
	/* the same for done = 1, through jobs_finished (left to itself the
	 * planner takes jobs_done_end and sorts every finished row) */
	[ST_LIST_FINISHED] = "SELECT " JOB_COLS " FROM jobs INDEXED BY jobs_finished"
			     " WHERE done = 1 AND id > ?1 AND ?2 = 1"
			     " AND (?3 IS NULL OR user = ?3)"
			     " AND (?4 IS NULL OR tenant = ?4) AND (?5 IS NULL OR name = ?5)"
			     " AND (?6 IS NULL OR instr(?6, ',' || state || ',') > 0)"
			     " ORDER BY id LIMIT ?7",
	[ST_COUNT_DONE] = "SELECT state, n FROM done_counts WHERE n > 0",
	[ST_MONTH_COST] = "SELECT tenant, micro FROM acct_month WHERE month = ?",
	[ST_PURGE_EVENTS] = "DELETE FROM events WHERE job IN (SELECT id FROM jobs"
			    " WHERE done = 1 AND end_time < ?1 ORDER BY end_time LIMIT ?2)",
	[ST_PURGE_JOBS] = "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs"
			  " WHERE done = 1 AND end_time < ?1 ORDER BY end_time LIMIT ?2)",
	[ST_PUT_ACCT] = "INSERT OR REPLACE INTO acct(job,attempt,name,user,tenant,pool,state,"
			"submit_time,start_time,end_time,exit_code,gpu_milli_s,cost_micro,efficiency)"
			" VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_LOAD_ACCT] = "SELECT job,attempt,name,user,tenant,pool,state,submit_time,start_time,"
			 "end_time,exit_code,gpu_milli_s,cost_micro,efficiency FROM acct"
			 " WHERE end_time >= ? AND end_time < ? ORDER BY end_time, job, attempt",
	[ST_PUT_IDEM] = "INSERT OR REPLACE INTO idem(user,key,fingerprint,status,body,headers,created)"
			" VALUES(?,?,?,?,?,?,?)",
	[ST_GET_IDEM] = "SELECT user,key,fingerprint,status,body,headers,created FROM idem"
			" WHERE user = ? AND key = ?",
	[ST_PURGE_IDEM] = "DELETE FROM idem WHERE created < ?",
	[ST_PUT_KOBJ] = "INSERT OR REPLACE INTO kobjs(kind,ns,name,owner,doc) VALUES(?,?,?,?,?)",
	[ST_DEL_KOBJ] = "DELETE FROM kobjs WHERE kind = ? AND ns = ? AND name = ?",
	[ST_LOAD_KOBJS] = "SELECT kind,ns,name,owner,doc FROM kobjs ORDER BY kind,ns,name",
};

struct sq {
	sqlite3 *db;
	sqlite3_stmt *st[ST_N];
	bool in_txn;
};

static int fail(struct drv_store *s, const char *what)
{
	struct sq *q = s->impl;

	snprintf(s->err, sizeof(s->err), "sqlite: %s: %s", what, sqlite3_errmsg(q->db));
	return DRV_EIO;
}

static int exec(struct drv_store *s, const char *sql)
{
	struct sq *q = s->impl;
	char *msg = NULL;

	if (sqlite3_exec(q->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(s->err, sizeof(s->err), "sqlite: %s", msg ? msg : "error");
		sqlite3_free(msg);
		return DRV_EIO;
	}
	return 0;
}

static sqlite3_stmt *stmt(struct drv_store *s, int i)
{
	struct sq *q = s->impl;

	sqlite3_reset(q->st[i]);
	sqlite3_clear_bindings(q->st[i]);
	return q->st[i];
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static int step_done(struct drv_store *s, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	if (rc != SQLITE_DONE) {
		int r = fail(s, what);

		sqlite3_reset(st);
		return r;
	}
	sqlite3_reset(st);
	return 0;
}

static int sq_begin(struct drv_store *s)
{
	struct sq *q = s->impl;
	int rc;

	if (q->in_txn)
		return DRV_ESTATE;
	rc = exec(s, "BEGIN IMMEDIATE");
	if (rc == 0)
		q->in_txn = true;
	return rc;
}

static int sq_commit(struct drv_store *s)
{
	struct sq *q = s->impl;
	int rc;

	if (!q->in_txn)
		return DRV_ESTATE;
	rc = exec(s, "COMMIT");
	if (rc < 0) {
		exec(s, "ROLLBACK");
	}
	q->in_txn = false;
	return rc;
}

static int sq_rollback(struct drv_store *s)
{
	struct sq *q = s->impl;

	if (!q->in_txn)
		return 0;
	q->in_txn = false;
	return exec(s, "ROLLBACK");
}

static int sq_put_job(struct drv_store *s, const struct drv_store_job *j)
{
	sqlite3_stmt *st = stmt(s, ST_PUT_JOB);

	sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
	bind_text(st, 2, j->name ? j->name : "");
	bind_text(st, 3, j->user ? j->user : "");
	bind_text(st, 4, j->tenant ? j->tenant : "default");
	bind_text(st, 5, j->state);
	sqlite3_bind_int64(st, 6, j->submit_time);
	bind_text(st, 7, j->doc ? j->doc : "{}");
	sqlite3_bind_int64(st, 8, j->end_time);
	sqlite3_bind_int(st, 9, j->done);
	return step_done(s, st, "put_job");
}

static const char *col(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* Calls fn for each row st yields (JOB_COLS), then resets st; *n (if
 * given) counts the rows. fn's non-zero value stops it and is returned. */
static int each_job(struct drv_store *s, sqlite3_stmt *st, const char *what,
		    int (*fn)(const struct drv_store_job *, void *), void *cls, int *n)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct drv_store_job j = {
			.id = (uint64_t)sqlite3_column_int64(st, 0),
			.name = col(st, 1),
			.user = col(st, 2),
			.tenant = col(st, 3),
			.state = col(st, 4),
			.submit_time = sqlite3_column_int64(st, 5),
			.doc = col(st, 6),
			.end_time = sqlite3_column_int64(st, 7),
			.done = sqlite3_column_int(st, 8) != 0,
		};
		int r = fn(&j, cls);

		if (n)
			(*n)++;
		if (r) {
			sqlite3_reset(st);
			return r;
		}
	}
	if (rc != SQLITE_DONE) {
		rc = fail(s, what);
		sqlite3_reset(st);
		return rc;
	}
	sqlite3_reset(st);
	return 0;
}

static int sq_load_jobs(struct drv_store *s, int (*fn)(const struct drv_store_job *, void *),
			void *cls)
{
	return each_job(s, stmt(s, ST_LOAD_JOBS), "load_jobs", fn, cls, NULL);
}

static int sq_load_live_jobs(struct drv_store *s,
			     int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	return each_job(s, stmt(s, ST_LOAD_LIVE), "load_live_jobs", fn, cls, NULL);
}

static int sq_get_job(struct drv_store *s, uint64_t id,
		      int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	sqlite3_stmt *st = stmt(s, ST_GET_JOB);
	int rc, n = 0;

	sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
	rc = each_job(s, st, "get_job", fn, cls, &n);
	return rc == 0 && n == 0 ? DRV_ENOENT : rc;
}

static int sq_list_jobs(struct drv_store *s, const struct drv_store_job_query *q,
			int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	sqlite3_stmt *st = stmt(s, q->done == 1 ? ST_LIST_FINISHED : ST_LIST_JOBS);

	sqlite3_bind_int64(st, 1, (sqlite3_int64)q->after);
	sqlite3_bind_int(st, 2, q->done);
	bind_text(st, 3, q->user);
	bind_text(st, 4, q->tenant);
	bind_text(st, 5, q->name);
	bind_text(st, 6, q->states);
	sqlite3_bind_int64(st, 7, q->limit > 0 ? q->limit : -1);
	return each_job(s, st, "list_jobs", fn, cls, NULL);
}

/* fn(text, integer) for each row of st; its non-zero value stops it. */
static int each_pair(struct drv_store *s, sqlite3_stmt *st, const char *what,
		     int (*fn)(const char *, int64_t, void *), void *cls)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int r = fn(col(st, 0), sqlite3_column_int64(st, 1), cls);

		if (r) {
			sqlite3_reset(st);
			return r;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : fail(s, what);
	sqlite3_reset(st);
	return rc;
}

static int sq_count_done(struct drv_store *s, int (*fn)(const char *, int64_t, void *), void *cls)
{
	return each_pair(s, stmt(s, ST_COUNT_DONE), "count_done", fn, cls);
}

static int sq_sum_acct(struct drv_store *s, int64_t since, int64_t until, const char *by,
		       const char *user, int (*fn)(const struct drv_store_acct_sum *, void *),
		       void *cls)
{
	struct sq *q = s->impl;
	sqlite3_stmt *st;
	char sql[400];
	int rc;

	if (strcmp(by, "tenant") && strcmp(by, "user") && strcmp(by, "pool"))
		return DRV_EINVAL;
	/* by is one of three column names, never the caller's text */
	snprintf(sql, sizeof(sql),
		 "SELECT %s, COUNT(DISTINCT job), COUNT(*), SUM(gpu_milli_s), SUM(cost_micro)"
		 " FROM acct WHERE end_time >= ?1 AND end_time < ?2 AND (?3 IS NULL OR user = ?3)"
		 " GROUP BY 1 ORDER BY 1", by);
	if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(s, "sum_acct");
	sqlite3_bind_int64(st, 1, since);
	sqlite3_bind_int64(st, 2, until);
	bind_text(st, 3, user);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct drv_store_acct_sum g = {
			.group = col(st, 0), .jobs = sqlite3_column_int64(st, 1),
			.attempts = sqlite3_column_int64(st, 2),
			.gpu_milli_s = sqlite3_column_int64(st, 3),
			.cost_micro = sqlite3_column_int64(st, 4),
		};
		int r = fn(&g, cls);

		if (r) {
			sqlite3_finalize(st);
			return r;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : fail(s, "sum_acct");
	sqlite3_finalize(st);
	return rc;
}

static int sq_month_cost(struct drv_store *s, int64_t month,
			 int (*fn)(const char *, int64_t, void *), void *cls)
{
	sqlite3_stmt *st = stmt(s, ST_MONTH_COST);

	sqlite3_bind_int64(st, 1, month);
	return each_pair(s, st, "month_cost", fn, cls);
}

static int sq_purge_jobs(struct drv_store *s, int64_t before, int limit, int64_t *n)
{
	struct sq *q = s->impl;
	sqlite3_stmt *st = stmt(s, ST_PURGE_EVENTS);
	int rc;

	*n = 0;
	sqlite3_bind_int64(st, 1, before);
	sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
	rc = step_done(s, st, "purge_jobs");
	if (rc < 0)
		return rc;
	st = stmt(s, ST_PURGE_JOBS);
	sqlite3_bind_int64(st, 1, before);
	sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
	rc = step_done(s, st, "purge_jobs");
	if (rc == 0)
		*n = sqlite3_changes(q->db);
	return rc;
}

static int sq_put_acct(struct drv_store *s, const struct drv_store_acct *a)
{
	sqlite3_stmt *st = stmt(s, ST_PUT_ACCT);

	sqlite3_bind_int64(st, 1, (sqlite3_int64)a->job);
	sqlite3_bind_int(st, 2, a->attempt);
	bind_text(st, 3, a->name ? a->name : "");
	bind_text(st, 4, a->user ? a->user : "");
	bind_text(st, 5, a->tenant ? a->tenant : "default");
	bind_text(st, 6, a->pool ? a->pool : "");
	bind_text(st, 7, a->state ? a->state : "");
	sqlite3_bind_int64(st, 8, a->submit_time);
	sqlite3_bind_int64(st, 9, a->start_time);
	sqlite3_bind_int64(st, 10, a->end_time);
	if (a->has_exit)
		sqlite3_bind_int(st, 11, a->exit_code);
	else
		sqlite3_bind_null(st, 11);
	sqlite3_bind_int64(st, 12, a->gpu_milli_s);
	sqlite3_bind_int64(st, 13, a->cost_micro);
	if (a->efficiency)
		bind_text(st, 14, a->efficiency);
	else
		sqlite3_bind_null(st, 14);
	return step_done(s, st, "put_acct");
}

static int sq_load_acct(struct drv_store *s, int64_t since, int64_t until,
			int (*fn)(const struct drv_store_acct *, void *), void *cls)
{
	sqlite3_stmt *st = stmt(s, ST_LOAD_ACCT);
	int rc;

	sqlite3_bind_int64(st, 1, since);
	sqlite3_bind_int64(st, 2, until);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct drv_store_acct a = {
			.job = (uint64_t)sqlite3_column_int64(st, 0),
			.attempt = sqlite3_column_int(st, 1),
			.name = col(st, 2), .user = col(st, 3), .tenant = col(st, 4),
			.pool = col(st, 5), .state = col(st, 6),
			.submit_time = sqlite3_column_int64(st, 7),
			.start_time = sqlite3_column_int64(st, 8),
			.end_time = sqlite3_column_int64(st, 9),
			.has_exit = sqlite3_column_type(st, 10) != SQLITE_NULL,
			.exit_code = sqlite3_column_int(st, 10),
			.gpu_milli_s = sqlite3_column_int64(st, 11),
			.cost_micro = sqlite3_column_int64(st, 12),
			.efficiency = col(st, 13),
		};
		int r = fn(&a, cls);

		if (r) {
			sqlite3_reset(st);
			return r;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : fail(s, "load_acct");
	sqlite3_reset(st);
	return rc;
}

static int sq_add_event(struct drv_store *s, struct drv_store_event *e)
{
	struct sq *q = s->impl;
	sqlite3_stmt *st = stmt(s, ST_ADD_EVENT);
	int rc;

	sqlite3_bind_int64(st, 1, e->time);
	bind_text(st, 2, e->type ? e->type : "job");
	sqlite3_bind_int64(st, 3, (sqlite3_int64)e->job);
	bind_text(st, 4, e->node);
	bind_text(st, 5, e->from);
	bind_text(st, 6, e->to ? e->to : "");
	bind_text(st, 7, e->reason ? e->reason : "");
	bind_text(st, 8, e->doc ? e->doc : "{}");
	rc = step_done(s, st, "add_event");
	if (rc == 0)
		e->seq = sqlite3_last_insert_rowid(q->db);
	return rc;
}

static int sq_load_events(struct drv_store *s, int64_t since, uint64_t job, int limit,
			  int (*fn)(const struct drv_store_event *, void *), void *cls)
{
	sqlite3_stmt *st;
	int rc;

	if (job) {
		st = stmt(s, ST_LOAD_JOB_EVENTS);
		sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
		sqlite3_bind_int64(st, 2, since);
		sqlite3_bind_int64(st, 3, limit > 0 ? limit : -1);
	} else {
		st = stmt(s, ST_LOAD_EVENTS);
		sqlite3_bind_int64(st, 1, since);
		sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct drv_store_event e = {
			.seq = sqlite3_column_int64(st, 0),
			.time = sqlite3_column_int64(st, 1),
			.type = col(st, 2),
			.job = (uint64_t)sqlite3_column_int64(st, 3),
			.node = col(st, 4),
			.from = col(st, 5),
			.to = col(st, 6),
			.reason = col(st, 7),
			.doc = col(st, 8),
		};
		int r = fn(&e, cls);

		if (r) {
			sqlite3_reset(st);
			return r;
		}
	}
	if (rc != SQLITE_DONE) {
		rc = fail(s, "load_events");
		sqlite3_reset(st);
		return rc;
	}
	sqlite3_reset(st);
	return 0;
}

static int sq_put_node(struct drv_store *s, const struct drv_store_node *n)
{
	sqlite3_stmt *st = stmt(s, ST_PUT_NODE);

	bind_text(st, 1, n->name);
	bind_text(st, 2, n->doc ? n->doc : "{}");
	return step_done(s, st, "put_node");
}

static int sq_load_nodes(struct drv_store *s, int (*fn)(const struct drv_store_node *, void *),
			 void *cls)
{
	sqlite3_stmt *st = stmt(s, ST_LOAD_NODES);
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct drv_store_node n = { .name = col(st, 0), .doc = col(st, 1) };
		int r = fn(&n, cls);

		if (r) {
			sqlite3_reset(st);
			return r;
		}
	}
	if (rc != SQLITE_DONE) {
		rc = fail(s, "load_nodes");
		sqlite3_reset(st);
		return rc;
	}
	sqlite3_reset(st);
	return 0;
}

static int sq_get_meta(struct drv_store *s, const char *key, int64_t *val)
{
	sqlite3_stmt *st = stmt(s, ST_GET_META);
	int rc;

	bind_text(st, 1, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*val = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		return 0;
	}
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return DRV_ENOENT;
	}
	rc = fail(s, "get_meta");
	sqlite3_reset(st);
	return rc;
}

static int sq_put_meta(struct drv_store *s, const char *key, int64_t val)
{
	sqlite3_stmt *st = stmt(s, ST_PUT_META);

	bind_text(st, 1, key);
	sqlite3_bind_int64(st, 2, val);
	return step_done(s, st, "put_meta");
}

static int sq_max_ids(struct drv_store *s, uint64_t *job, int64_t *seq)
{
	sqlite3_stmt *st = stmt(s, ST_MAX_IDS);
	int rc = sqlite3_step(st);

	if (rc != SQLITE_ROW) {
		rc = fail(s, "max_ids");
		sqlite3_reset(st);
		return rc;
	}
	*job = (uint64_t)sqlite3_column_int64(st, 0);
	*seq = sqlite3_column_int64(st, 1);
	sqlite3_reset(st);
	return 0;
}

static int sq_put_idem(struct drv_store *s, const struct drv_store_idem *k)
{
	sqlite3_stmt *st = stmt(s, ST_PUT_IDEM);

	bind_text(st, 1, k->user);
	bind_text(st, 2, k->key);
	bind_text(st, 3, k->fingerprint);
	sqlite3_bind_int(st, 4, k->status);
	bind_text(st, 5, k->body ? k->body : "");
	bind_text(st, 6, k->headers);
	sqlite3_bind_int64(st, 7, k->created);
	return step_done(s, st, "put_idem");
}

static int sq_get_idem(struct drv_store *s, const char *user, const char *key,
		       int (*fn)(const struct drv_store_idem *, void *), void *cls)
{
	sqlite3_stmt *st = stmt(s, ST_GET_IDEM);
	int rc;

	bind_text(st, 1, user);
	bind_text(st, 2, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		struct drv_store_idem k = {
			.user = col(st, 0), .key = col(st, 1), .fingerprint = col(st, 2),
			.status = sqlite3_column_int(st, 3), .body = col(st, 4),
			.headers = col(st, 5), .created = sqlite3_column_int64(st, 6),
		};

		rc = fn(&k, cls);
		sqlite3_reset(st);
		return rc;
	}
	rc = rc == SQLITE_DONE ? DRV_ENOENT : fail(s, "get_idem");
	sqlite3_reset(st);
	return rc;
}

static int sq_purge_idem(struct drv_store *s, int64_t before, int64_t *n)
{
	struct sq *q = s->impl;
	sqlite3_stmt *st = stmt(s, ST_PURGE_IDEM);
	int rc;

	*n = 0;
	sqlite3_bind_int64(st, 1, before);
	rc = step_done(s, st, "purge_idem");
	if (rc == 0)
		*n = sqlite3_changes(q->db);
	return rc;
}

static int sq_put_kobj(struct drv_store *s, const struct drv_store_kobj *o)
{
	sqlite3_stmt *st = stmt(s, ST_PUT_KOBJ);

	bind_text(st, 1, o->kind);
	bind_text(st, 2, o->ns);
	bind_text(st, 3, o->name);
	bind_text(st, 4, o->owner);
	bind_text(st, 5, o->doc);
	return step_done(s, st, "put_kobj");
}

static int sq_del_kobj(struct drv_store *s, const char *kind, const char *ns, const char *name)
{
	struct sq *q = s->impl;
	sqlite3_stmt *st = stmt(s, ST_DEL_KOBJ);
	int rc;

	bind_text(st, 1, kind);
	bind_text(st, 2, ns);
	bind_text(st, 3, name);
	rc = step_done(s, st, "del_kobj");
	if (rc == 0 && sqlite3_changes(q->db) == 0)
		rc = DRV_ENOENT;
	return rc;
}

static int sq_load_kobjs(struct drv_store *s,
			 int (*fn)(const struct drv_store_kobj *, void *), void *cls)
{
	sqlite3_stmt *st = stmt(s, ST_LOAD_KOBJS);
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct drv_store_kobj o = { .kind = col(st, 0), .ns = col(st, 1),
					    .name = col(st, 2), .owner = col(st, 3),
					    .doc = col(st, 4) };
		int r = fn(&o, cls);

		if (r) {
			sqlite3_reset(st);
			return r;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : fail(s, "load_kobjs");
	sqlite3_reset(st);
	return rc;
}

static void sq_close(struct drv_store *s)
{
	struct sq *q = s->impl;

	if (!q)
		return;
	if (q->in_txn)
		exec(s, "ROLLBACK");
	for (int i = 0; i < ST_N; i++)
		sqlite3_finalize(q->st[i]);
	sqlite3_close(q->db);
	drv_free(q);
	s->impl = NULL;
}

static const struct drv_store_ops sqlite_ops = {
	.name = "sqlite",
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
	.put_job = sq_put_job,
	.load_jobs = sq_load_jobs,
	.add_event = sq_add_event,
	.load_events = sq_load_events,
	.put_node = sq_put_node,
	.load_nodes = sq_load_nodes,
	.get_meta = sq_get_meta,
	.put_meta = sq_put_meta,
	.max_ids = sq_max_ids,
	.load_live_jobs = sq_load_live_jobs,
	.get_job = sq_get_job,
	.list_jobs = sq_list_jobs,
	.count_done = sq_count_done,
	.purge_jobs = sq_purge_jobs,
	.put_acct = sq_put_acct,
	.load_acct = sq_load_acct,
	.month_cost = sq_month_cost,
	.sum_acct = sq_sum_acct,
	.put_idem = sq_put_idem,
	.get_idem = sq_get_idem,
	.purge_idem = sq_purge_idem,
	.put_kobj = sq_put_kobj,
	.del_kobj = sq_del_kobj,
	.load_kobjs = sq_load_kobjs,
	.close = sq_close,
};

int drv_store_sqlite_schema_version(void)
{
	return (int)DRV_ARRAY_SIZE(migrations);
}

static int user_version(struct drv_store *s, int *v)
{
	struct sq *q = s->impl;
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(q->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return fail(s, "user_version");
	rc = sqlite3_step(st);
	*v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	sqlite3_finalize(st);
	return *v < 0 ? fail(s, "user_version") : 0;
}

static int migrate(struct drv_store *s, int target)
{
	int v, rc;
	char sql[64];

	rc = exec(s, "BEGIN IMMEDIATE");
	if (rc < 0)
		return rc;
	rc = user_version(s, &v);
	if (rc < 0)
		goto bad;
	if (v > drv_store_sqlite_schema_version()) {
		snprintf(s->err, sizeof(s->err),
			 "the state database has schema version %d; this drover knows up to %d "
			 "(a newer drover wrote it)", v, drv_store_sqlite_schema_version());
		rc = DRV_EUNSUPP;
		goto bad;
	}
	for (; v < target; v++) {
		rc = exec(s, migrations[v]);
		if (rc < 0)
			goto bad;
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		rc = exec(s, sql);
		if (rc < 0)
			goto bad;
	}
	return exec(s, "COMMIT");
bad:
	{
		char keep[sizeof(s->err)];

		memcpy(keep, s->err, sizeof(keep));
		exec(s, "ROLLBACK");
		memcpy(s->err, keep, sizeof(keep));
	}
	return rc;
}

/* path, and its -wal and -shm where they exist, readable by the owner only
 * (the file is made 0600 when absent). Best effort: SQLite reports what
 * really fails to open. Not for ":memory:" or "file:" URIs. */
static void owner_only(const char *path)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	char p[4096];
	struct stat st;

	if (!*path || !strcmp(path, ":memory:") || !strncmp(path, "file:", 5))
		return;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		int fd;

		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		fd = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (i ? 0 : O_CREAT), 0600);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077))
			fchmod(fd, st.st_mode & 0600);
		close(fd);
	}
}

int drv_store_open_sqlite_at(const char *path, int version, struct drv_store **out,
			     char *errmsg, size_t errsz)
{
	struct drv_store *s = drv_calloc(1, sizeof(*s));
	struct sq *q = drv_calloc(1, sizeof(*q));
	int rc;

	s->ops = &sqlite_ops;
	s->impl = q;
	owner_only(path);
	if (sqlite3_open_v2(path, &q->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = fail(s, path);
		goto bad;
	}
	sqlite3_busy_timeout(q->db, 5000);
	rc = exec(s, "PRAGMA journal_mode=WAL");
	if (rc == 0)
		rc = exec(s, "PRAGMA synchronous=FULL");
	if (rc == 0)
		rc = exec(s, "PRAGMA foreign_keys=ON");
	if (rc == 0)
		rc = exec(s, "PRAGMA recursive_triggers=ON");   /* REPLACE fires delete triggers */
	if (rc < 0)
		goto bad;
	rc = migrate(s, version);
	if (rc < 0)
		goto bad;
	if (version == drv_store_sqlite_schema_version()) {
		for (int i = 0; i < ST_N; i++) {
			if (sqlite3_prepare_v3(q->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					       &q->st[i], NULL) != SQLITE_OK) {
				rc = fail(s, stmt_sql[i]);
				goto bad;
			}
		}
	}
	*out = s;
	return 0;
bad:
	if (errmsg)
		snprintf(errmsg, errsz, "%s: %s", path, s->err);
	sq_close(s);
	drv_free(s);
	return rc;
}

int drv_store_open_sqlite(const char *path, struct drv_store **out, char *errmsg, size_t errsz)
{
	return drv_store_open_sqlite_at(path, drv_store_sqlite_schema_version(), out, errmsg,
					errsz);
}

void drv_store_close(struct drv_store *s)
{
	if (!s)
		return;
	s->ops->close(s);
	drv_free(s);
}

int drv_store_sqlite_backup(const char *src, const char *dst, char *errmsg, size_t errsz)
{
	sqlite3 *from = NULL, *to = NULL;
	sqlite3_backup *b;
	int rc = 0, fd;

	if (access(src, R_OK) != 0) {
		snprintf(errmsg, errsz, "%s: no state database there", src);
		return DRV_EINVAL;
	}
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);   /* job commands, envs */
	if (fd < 0) {
		snprintf(errmsg, errsz, "%s: %s", dst, strerror(errno));
		return errno == EEXIST ? DRV_EINVAL : DRV_EIO;
	}
	close(fd);
	if (sqlite3_open_v2(src, &from, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_open_v2(dst, &to, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		snprintf(errmsg, errsz, "%s", sqlite3_errmsg(from && !to ? from : to ? to : from));
		rc = DRV_EIO;
		goto out;
	}
	sqlite3_busy_timeout(from, 5000);
	b = sqlite3_backup_init(to, "main", from, "main");
	if (!b) {
		snprintf(errmsg, errsz, "%s", sqlite3_errmsg(to));
		rc = DRV_EIO;
		goto out;
	}
	/* all pages in one step: a consistent snapshot (WAL: the server's
	 * writes go on meanwhile) */
	if (sqlite3_backup_step(b, -1) != SQLITE_DONE) {
		snprintf(errmsg, errsz, "backup of %s: %s", src, sqlite3_errmsg(to));
		rc = DRV_EIO;
	}
	sqlite3_backup_finish(b);
out:
	sqlite3_close(from);
	sqlite3_close(to);
	if (rc < 0)
		unlink(dst);
	return rc;
}
