/*
 * store_pg.c: the PostgreSQL backend of the store (include/drover/store.h),
 * and the leader lease that lets several controllers share one database.
 *
 * The same tables as the SQLite backend, in PostgreSQL's dialect; a
 * transaction is committed (synchronous_commit as the server sets it) when
 * COMMIT returns. The schema is versioned in drover_schema; migrations[]
 * holds one SQL script per version and open applies, in one transaction
 * under an advisory lock (two controllers starting at once migrate once),
 * every script above the database's version; a database newer than this
 * binary is refused. What SQLite keeps with triggers (finished jobs counted
 * by state, each month's cost by tenant) PL/pgSQL triggers keep here.
 *
 * Leader lease (docs/ha.md): one row, drover_leader, holds the term (it only
 * grows), the holder, its advertised address and an expiry on the
 * database's clock, so controllers' clocks never have to agree. A standby
 * takes the row only when it has expired, adding one to the term. A store
 * fenced with a term (drv_store_fence) begins every write transaction by
 * locking that row FOR SHARE where the term is still its own: a deposed
 * leader's transaction finds no row and is refused, and a takeover waits
 * for a write transaction in flight, so two leaders never both commit.
 *
 * The lease calls run on their own connection with a deadline (an
 * asynchronous query and poll), so a database that stops answering can
 * never hold the leader past its lease.
 *
 * Passwords never come from the URL (CONTRACTS.md §6): a URL or conninfo
 * with one is refused; libpq reads PGPASSFILE or ~/.pgpass itself, or the
 * caller hands a password file (mode 0600) whose text is passed apart.
 */
#include "drover/store.h"
#include "drover/fsutil.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#define MONTH_OF(t) "CAST(extract(epoch FROM date_trunc('month', to_timestamp(" t \
		    ") AT TIME ZONE 'UTC')) AS BIGINT)"

/* migrations[i] takes the schema from version i to i + 1. Never edit a
 * shipped entry; append a new one. Version 1 is SQLite's version 5. */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE jobs ("
	"  id BIGINT PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  uname TEXT NOT NULL,"
	"  tenant TEXT NOT NULL DEFAULT 'default',"
	"  state TEXT NOT NULL,"
	"  submit_time BIGINT NOT NULL,"
	"  doc TEXT NOT NULL,"
	"  end_time BIGINT NOT NULL DEFAULT 0,"
	"  done INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX jobs_live ON jobs(id) WHERE done = 0;"
	"CREATE INDEX jobs_by_state ON jobs(state);"
	"CREATE INDEX jobs_done_end ON jobs(done, end_time);"
	"CREATE TABLE events ("
	"  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
	"  time BIGINT NOT NULL,"
	"  type TEXT NOT NULL,"
	"  job BIGINT NOT NULL DEFAULT 0,"
	"  node TEXT,"
	"  from_state TEXT,"
	"  to_state TEXT NOT NULL,"
	"  reason TEXT NOT NULL DEFAULT '',"
	"  doc TEXT NOT NULL);"
	"CREATE INDEX events_by_job ON events(job, seq);"
	"CREATE TABLE meta (key TEXT PRIMARY KEY, val BIGINT NOT NULL);"
	"CREATE TABLE nodes (name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
	"CREATE TABLE acct ("
	"  job BIGINT NOT NULL,"
	"  attempt INTEGER NOT NULL,"
	"  name TEXT NOT NULL,"
	"  uname TEXT NOT NULL,"
	"  tenant TEXT NOT NULL,"
	"  pool TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  submit_time BIGINT NOT NULL,"
	"  start_time BIGINT NOT NULL,"
	"  end_time BIGINT NOT NULL,"
	"  exit_code INTEGER,"
	"  gpu_milli_s BIGINT NOT NULL,"
	"  cost_micro BIGINT NOT NULL,"
	"  PRIMARY KEY (job, attempt));"
	"CREATE INDEX acct_by_end ON acct(end_time);"
	"CREATE TABLE done_counts (state TEXT PRIMARY KEY, n BIGINT NOT NULL);"
	"CREATE FUNCTION drover_jobs_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
	"  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.done = 1 THEN"
	"    UPDATE done_counts SET n = n - 1 WHERE state = OLD.state; END IF;"
	"  IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.done = 1 THEN"
	"    INSERT INTO done_counts VALUES (NEW.state, 1)"
	"    ON CONFLICT (state) DO UPDATE SET n = done_counts.n + 1; END IF;"
	"  RETURN NULL; END $$;"
	"CREATE TRIGGER jobs_count AFTER INSERT OR UPDATE OR DELETE ON jobs"
	"  FOR EACH ROW EXECUTE FUNCTION drover_jobs_count();"
	"CREATE TABLE acct_month (month BIGINT NOT NULL, tenant TEXT NOT NULL,"
	"  micro BIGINT NOT NULL, PRIMARY KEY (month, tenant));"
	"CREATE FUNCTION drover_acct_month() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
	"  IF TG_OP IN ('UPDATE', 'DELETE') THEN"
	"    UPDATE acct_month SET micro = micro - OLD.cost_micro"
	"    WHERE month = " MONTH_OF("OLD.end_time") " AND tenant = OLD.tenant; END IF;"
	"  IF TG_OP IN ('UPDATE', 'INSERT') THEN"
	"    INSERT INTO acct_month VALUES (" MONTH_OF("NEW.end_time") ", NEW.tenant,"
	"    NEW.cost_micro) ON CONFLICT (month, tenant)"
	"    DO UPDATE SET micro = acct_month.micro + NEW.cost_micro; END IF;"
	"  RETURN NULL; END $$;"
	"CREATE TRIGGER acct_month AFTER INSERT OR UPDATE OR DELETE ON acct"
	"  FOR EACH ROW EXECUTE FUNCTION drover_acct_month();"
	"CREATE TABLE idem ("
	"  uname TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  fingerprint TEXT NOT NULL,"
	"  status INTEGER NOT NULL,"
	"  body TEXT NOT NULL,"
	"  headers TEXT,"
	"  created BIGINT NOT NULL,"
	"  PRIMARY KEY (uname, key));"
	"CREATE INDEX idem_by_created ON idem(created);"
	"CREATE TABLE drover_leader ("
	"  id INTEGER PRIMARY KEY CHECK (id = 1),"
	"  term BIGINT NOT NULL,"
	"  holder TEXT NOT NULL,"
	"  addr TEXT NOT NULL,"
	"  expires TIMESTAMPTZ NOT NULL);"
	"INSERT INTO drover_leader VALUES (1, 0, '', '', '-infinity');",
	/* 1 -> 2: each attempt's efficiency (seff's figures) as JSON */
	"ALTER TABLE acct ADD COLUMN efficiency TEXT;",
	/* 2 -> 3: Kubernetes Secrets and ConfigMaps, kept as they are */
	"CREATE TABLE kobjs (kind TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  owner TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (kind, ns, name));",
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
	ST_COUNT_DONE,
	ST_MONTH_COST,
	ST_PURGE_EVENTS,
	ST_PURGE_JOBS,
	ST_PUT_ACCT,
	ST_LOAD_ACCT,
	ST_PUT_IDEM,
	ST_GET_IDEM,
	ST_PURGE_IDEM,
	ST_SUM_TENANT,
	ST_SUM_USER,
	ST_SUM_POOL,
	ST_PUT_KOBJ,
	ST_DEL_KOBJ,
	ST_LOAD_KOBJS,
	ST_N
};

#define JOB_COLS "id,name,uname,tenant,state,submit_time,doc,end_time,done"
#define SUM_ACCT(col) \
	"SELECT " col ", COUNT(DISTINCT job), COUNT(*), SUM(gpu_milli_s)::bigint," \
	" SUM(cost_micro)::bigint FROM acct WHERE end_time >= $1 AND end_time < $2" \
	" AND ($3::text IS NULL OR uname = $3) GROUP BY 1 ORDER BY 1"

static const char *const stmt_sql[ST_N] = {
	[ST_PUT_JOB] = "INSERT INTO jobs(" JOB_COLS ") VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9)"
		       " ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name,"
		       " uname = EXCLUDED.uname, tenant = EXCLUDED.tenant, state = EXCLUDED.state,"
		       " submit_time = EXCLUDED.submit_time, doc = EXCLUDED.doc,"
		       " end_time = EXCLUDED.end_time, done = EXCLUDED.done",
	[ST_LOAD_JOBS] = "SELECT " JOB_COLS " FROM jobs ORDER BY id",
	[ST_ADD_EVENT] = "INSERT INTO events(seq,time,type,job,node,from_state,to_state,reason,doc)"
			 " OVERRIDING SYSTEM VALUE VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9)",
	[ST_LOAD_EVENTS] = "SELECT seq,time,type,job,node,from_state,to_state,reason,doc"
			   " FROM events WHERE seq > $1 ORDER BY seq LIMIT $2",
	[ST_LOAD_JOB_EVENTS] = "SELECT seq,time,type,job,node,from_state,to_state,reason,doc"
			       " FROM events WHERE job = $1 AND seq > $2 ORDER BY seq LIMIT $3",
	[ST_PUT_NODE] = "INSERT INTO nodes(name,doc) VALUES($1,$2)"
			" ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc",
	[ST_LOAD_NODES] = "SELECT name,doc FROM nodes ORDER BY name",
	[ST_GET_META] = "SELECT val FROM meta WHERE key = $1",
	[ST_PUT_META] = "INSERT INTO meta(key,val) VALUES($1,$2)"
			" ON CONFLICT (key) DO UPDATE SET val = EXCLUDED.val",
	[ST_MAX_IDS] = "SELECT (SELECT COALESCE(MAX(id),0) FROM jobs),"
		       " (SELECT COALESCE(MAX(seq),0) FROM events)",
	[ST_LOAD_LIVE] = "SELECT " JOB_COLS " FROM jobs WHERE done = 0 ORDER BY id",
	[ST_GET_JOB] = "SELECT " JOB_COLS " FROM jobs WHERE id = $1",
	[ST_LIST_JOBS] = "SELECT " JOB_COLS " FROM jobs WHERE id > $1"
			 " AND ($2::int < 0 OR done = $2) AND ($3::text IS NULL OR uname = $3)"
			 " AND ($4::text IS NULL OR tenant = $4) AND ($5::text IS NULL OR name = $5)"
			 " AND ($6::text IS NULL OR strpos($6, ',' || state || ',') > 0)"
			 " ORDER BY id LIMIT $7",
	[ST_COUNT_DONE] = "SELECT state, n FROM done_counts WHERE n > 0 ORDER BY state",
	[ST_MONTH_COST] = "SELECT tenant, micro FROM acct_month WHERE month = $1 ORDER BY tenant",
	[ST_PURGE_EVENTS] = "DELETE FROM events WHERE job IN (SELECT id FROM jobs"
			    " WHERE done = 1 AND end_time < $1 ORDER BY end_time LIMIT $2)",
	[ST_PURGE_JOBS] = "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs"
			  " WHERE done = 1 AND end_time < $1 ORDER BY end_time LIMIT $2)",
	[ST_PUT_ACCT] = "INSERT INTO acct(job,attempt,name,uname,tenant,pool,state,"
			"submit_time,start_time,end_time,exit_code,gpu_milli_s,cost_micro,efficiency)"
			" VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)"
			" ON CONFLICT (job, attempt) DO UPDATE SET name = EXCLUDED.name,"
			" uname = EXCLUDED.uname, tenant = EXCLUDED.tenant, pool = EXCLUDED.pool,"
			" state = EXCLUDED.state, submit_time = EXCLUDED.submit_time,"
			" start_time = EXCLUDED.start_time, end_time = EXCLUDED.end_time,"
			" exit_code = EXCLUDED.exit_code, gpu_milli_s = EXCLUDED.gpu_milli_s,"
			" cost_micro = EXCLUDED.cost_micro, efficiency = EXCLUDED.efficiency",
	[ST_LOAD_ACCT] = "SELECT job,attempt,name,uname,tenant,pool,state,submit_time,start_time,"
			 "end_time,exit_code,gpu_milli_s,cost_micro,efficiency FROM acct"
			 " WHERE end_time >= $1 AND end_time < $2 ORDER BY end_time, job, attempt",
	[ST_PUT_IDEM] = "INSERT INTO idem(uname,key,fingerprint,status,body,headers,created)"
			" VALUES($1,$2,$3,$4,$5,$6,$7) ON CONFLICT (uname, key) DO UPDATE SET"
			" fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,"
			" body = EXCLUDED.body, headers = EXCLUDED.headers, created = EXCLUDED.created",
	[ST_GET_IDEM] = "SELECT uname,key,fingerprint,status,body,headers,created FROM idem"
			" WHERE uname = $1 AND key = $2",
	[ST_PURGE_IDEM] = "DELETE FROM idem WHERE created < $1",
	[ST_SUM_TENANT] = SUM_ACCT("tenant"),
	[ST_SUM_USER] = SUM_ACCT("uname"),
	[ST_SUM_POOL] = SUM_ACCT("pool"),
	[ST_PUT_KOBJ] = "INSERT INTO kobjs(kind,ns,name,owner,doc) VALUES($1,$2,$3,$4,$5)"
			" ON CONFLICT (kind, ns, name) DO UPDATE SET owner = EXCLUDED.owner,"
			" doc = EXCLUDED.doc",
	[ST_DEL_KOBJ] = "DELETE FROM kobjs WHERE kind = $1 AND ns = $2 AND name = $3",
	[ST_LOAD_KOBJS] = "SELECT kind,ns,name,owner,doc FROM kobjs ORDER BY kind,ns,name",
};

struct pg {
	PGconn *db;
	char *conninfo;       /* without the password */
	char *password;       /* from the password file; NULL: libpq finds it */
	bool prepared;
	bool in_txn;
	int64_t fence;        /* 0: none; else every write transaction checks this term */
	/* inside a transaction, writes are pipelined (sent without waiting for
	 * their answers, which commit collects): a batch of a thousand jobs
	 * costs a few round trips, not two thousand */
	bool piped;
	int npend;            /* statements sent, answers not yet read */
	int64_t next_seq;     /* the last event seq given out in this transaction */
	bool seq_dirty;
};

/* Up to 16 parameters as text, formatted in place. */
struct params {
	const char *v[16];
	char buf[16][24];
	int n;
};

static void p_text(struct params *p, const char *v)
{
	p->v[p->n++] = v;
}

static void p_int(struct params *p, int64_t v)
{
	snprintf(p->buf[p->n], sizeof(p->buf[0]), "%" PRId64, v);
	p->v[p->n] = p->buf[p->n];
	p->n++;
}

static int fail_msg(struct drv_store *s, const char *what, const char *msg)
{
	size_t n;

	snprintf(s->err, sizeof(s->err), "postgresql: %s: %s", what, msg && *msg ? msg : "error");
	n = strlen(s->err);
	while (n && (s->err[n - 1] == '\n' || s->err[n - 1] == ' '))
		s->err[--n] = '\0';
	return DRV_EIO;
}

static int fail(struct drv_store *s, const char *what)
{
	struct pg *q = s->impl;

	return fail_msg(s, what, PQerrorMessage(q->db));
}

static int connect_db(struct drv_store *s);

/* A connection lost between transactions is made again once; inside one
 * the transaction is gone with it and the caller is told. */
static int ensure_conn(struct drv_store *s)
{
	struct pg *q = s->impl;

	if (q->db && PQstatus(q->db) == CONNECTION_OK)
		return 0;
	if (q->in_txn)
		return fail(s, "connection lost inside a transaction");
	return connect_db(s);
}

static int exec(struct drv_store *s, const char *sql, const char *what)
{
	struct pg *q = s->impl;
	PGresult *r;
	int rc = 0;

	r = PQexec(q->db, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = fail_msg(s, what, PQresultErrorMessage(r));
	PQclear(r);
	return rc;
}

static void stmt_name(int i, char *name)
{
	name[0] = 's';
	name[1] = (char)('a' + i / 26);
	name[2] = (char)('a' + i % 26);
	name[3] = '\0';
}

static int prepare_all(struct drv_store *s);

/* Runs statement i with p; *out gets the result (caller clears) when the
 * statement answered, else an error is returned and nothing kept. */
static int run(struct drv_store *s, int i, const struct params *p, PGresult **out)
{
	struct pg *q = s->impl;
	char name[8];
	PGresult *r;
	int st;

	*out = NULL;
	if (ensure_conn(s) < 0 || (!q->prepared && prepare_all(s) < 0))
		return DRV_EIO;
	stmt_name(i, name);
	r = PQexecPrepared(q->db, name, p ? p->n : 0, p ? p->v : NULL, NULL, NULL, 0);
	st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		fail_msg(s, stmt_sql[i], PQresultErrorMessage(r));
		PQclear(r);
		return DRV_EIO;
	}
	*out = r;
	return 0;
}

static int prepare_all(struct drv_store *s)
{
	struct pg *q = s->impl;

	for (int i = 0; i < ST_N; i++) {
		char name[8];
		PGresult *r;

		stmt_name(i, name);
		r = PQprepare(q->db, name, stmt_sql[i], 0, NULL);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			fail_msg(s, stmt_sql[i], PQresultErrorMessage(r));
			PQclear(r);
			return DRV_EIO;
		}
		PQclear(r);
	}
	q->prepared = true;
	return 0;
}

static int connect_db(struct drv_store *s)
{
	struct pg *q = s->impl;
	const char *keys[] = { "dbname", "password", "application_name", "connect_timeout", NULL };
	const char *vals[] = { q->conninfo, q->password, "drover", "5", NULL };
	int rc;

	if (q->db)
		PQfinish(q->db);
	q->prepared = false;
	if (!q->password) {
		keys[1] = "application_name";
		vals[1] = "drover";
		keys[2] = "connect_timeout";
		vals[2] = "5";
		keys[3] = NULL;
	}
	q->db = PQconnectdbParams(keys, vals, 1);
	if (PQstatus(q->db) != CONNECTION_OK)
		return fail(s, "connect");
	rc = exec(s, "SET client_min_messages = warning", "connect");
	if (rc == 0)
		rc = exec(s, "SET synchronous_commit = on", "connect");
	return rc;
}

/* Events' seqs only grow, also past a purge of the newest: the highest
 * given out is kept in meta too. */
#define LAST_SEQ "GREATEST((SELECT COALESCE(MAX(seq), 0) FROM events)," \
	" (SELECT COALESCE(MAX(val), 0) FROM meta WHERE key = 'event_seq'))"

/* Sends statement i without waiting (inside a transaction). */
static int pipe_send(struct drv_store *s, int i, const struct params *p)
{
	struct pg *q = s->impl;
	char name[8];

	if (!q->piped) {
		if (!PQenterPipelineMode(q->db))
			return fail(s, "pipeline");
		q->piped = true;
	}
	stmt_name(i, name);
	if (!PQsendQueryPrepared(q->db, name, p ? p->n : 0, p ? p->v : NULL, NULL, NULL, 0))
		return fail(s, stmt_sql[i]);
	q->npend++;
	return 0;
}

/* Reads every answer owed; the first failure is the result. */
static int pipe_flush(struct drv_store *s)
{
	struct pg *q = s->impl;
	int rc = 0, seen = 0;
	PGresult *r;

	if (!q->piped)
		return 0;
	if (!PQpipelineSync(q->db))
		rc = fail(s, "pipeline sync");
	while (rc == 0 && seen < q->npend) {
		r = PQgetResult(q->db);
		if (!r) {
			seen++;
			continue;
		}
		if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK &&
		    rc == 0)
			rc = fail_msg(s, "pipelined write", PQresultStatus(r) == PGRES_PIPELINE_ABORTED
							      ? "aborted" : PQresultErrorMessage(r));
		PQclear(r);
	}
	/* the rest, up to and with the sync's own answer */
	while (PQstatus(q->db) == CONNECTION_OK && (r = PQgetResult(q->db))) {
		int st = PQresultStatus(r);

		if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_PIPELINE_SYNC &&
		    st != PGRES_PIPELINE_ABORTED && rc == 0)
			rc = fail_msg(s, "pipelined write", PQresultErrorMessage(r));
		PQclear(r);
		if (st == PGRES_PIPELINE_SYNC)
			break;
	}
	q->npend = 0;
	q->piped = false;
	if (!PQexitPipelineMode(q->db) && rc == 0)
		rc = fail(s, "pipeline end");
	return rc;
}

static int pg_begin(struct drv_store *s)
{
	struct pg *q = s->impl;
	char sql[400];
	PGresult *r;
	int rc = 0;

	if (q->in_txn)
		return DRV_ESTATE;
	if (ensure_conn(s) < 0 || (!q->prepared && prepare_all(s) < 0))
		return DRV_EIO;
	/* the fence: the lease row locked where the term is still ours; and
	 * the last event seq given out (events get theirs here: one writer) */
	if (q->fence)
		snprintf(sql, sizeof(sql), "BEGIN; SELECT " LAST_SEQ " FROM drover_leader"
			 " WHERE id = 1 AND term = %" PRId64 " FOR SHARE", q->fence);
	else
		snprintf(sql, sizeof(sql), "BEGIN; SELECT " LAST_SEQ);
	r = PQexec(q->db, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = fail_msg(s, "begin", PQresultErrorMessage(r));
	} else if (PQntuples(r) != 1) {
		snprintf(s->err, sizeof(s->err),
			 "postgresql: refused: this controller's leader term %" PRId64
			 " has ended (another controller leads)", q->fence);
		rc = DRV_EPERM;
	} else {
		q->next_seq = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		q->seq_dirty = false;
	}
	PQclear(r);
	if (rc < 0) {
		char keep[sizeof(s->err)];

		memcpy(keep, s->err, sizeof(keep));
		exec(s, "ROLLBACK", "rollback");
		memcpy(s->err, keep, sizeof(keep));
		return rc;
	}
	q->in_txn = true;
	return 0;
}

static int pg_commit(struct drv_store *s)
{
	struct pg *q = s->impl;
	PGresult *r;
	int rc = 0;

	if (!q->in_txn)
		return DRV_ESTATE;
	if (q->seq_dirty) {
		struct params p = { .n = 0 };

		p_text(&p, "event_seq");
		p_int(&p, q->next_seq);
		rc = pipe_send(s, ST_PUT_META, &p);
	}
	if (rc == 0)
		rc = pipe_flush(s);
	q->in_txn = false;
	if (rc < 0) {
		char keep[sizeof(s->err)];

		memcpy(keep, s->err, sizeof(keep));
		exec(s, "ROLLBACK", "rollback");
		memcpy(s->err, keep, sizeof(keep));
		return rc;
	}
	r = PQexec(q->db, "COMMIT");
	/* a transaction that failed inside answers COMMIT with ROLLBACK */
	if (PQresultStatus(r) != PGRES_COMMAND_OK || strcmp(PQcmdStatus(r), "COMMIT") != 0)
		rc = fail_msg(s, "commit", PQresultStatus(r) == PGRES_COMMAND_OK
					   ? "the transaction was rolled back"
					   : PQresultErrorMessage(r));
	PQclear(r);
	return rc;
}

static int pg_rollback(struct drv_store *s)
{
	struct pg *q = s->impl;

	if (!q->in_txn)
		return 0;
	q->in_txn = false;
	if (!q->db || PQstatus(q->db) != CONNECTION_OK)
		return 0;
	pipe_flush(s);
	return exec(s, "ROLLBACK", "rollback");
}

/* A write outside begin/commit is its own transaction, fenced as any. */
static int write1(struct drv_store *s, int i, const struct params *p, int64_t *changed)
{
	struct pg *q = s->impl;
	bool own = !q->in_txn;
	PGresult *r = NULL;
	int rc = 0;

	if (own)
		rc = pg_begin(s);
	else if (!q->prepared && prepare_all(s) < 0)
		rc = DRV_EIO;
	if (rc == 0 && !changed)
		return own ? (pipe_send(s, i, p) == 0 ? pg_commit(s) : (pg_rollback(s), DRV_EIO))
			   : pipe_send(s, i, p);
	if (rc == 0)
		rc = pipe_flush(s);
	if (rc == 0)
		rc = run(s, i, p, &r);
	if (rc == 0 && changed)
		*changed = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	if (own) {
		if (rc == 0)
			rc = pg_commit(s);
		else
			pg_rollback(s);
	}
	return rc;
}

/* A read: prepared statements are made on first use of a connection. */
static int read1(struct drv_store *s, int i, const struct params *p, PGresult **out)
{
	struct pg *q = s->impl;

	*out = NULL;
	if (ensure_conn(s) < 0 || (!q->prepared && prepare_all(s) < 0))
		return DRV_EIO;
	if (pipe_flush(s) < 0)
		return DRV_EIO;
	return run(s, i, p, out);
}

static const char *val(PGresult *r, int row, int c)
{
	return PQgetisnull(r, row, c) ? NULL : PQgetvalue(r, row, c);
}

static int64_t ival(PGresult *r, int row, int c)
{
	return PQgetisnull(r, row, c) ? 0 : strtoll(PQgetvalue(r, row, c), NULL, 10);
}

static int pg_put_job(struct drv_store *s, const struct drv_store_job *j)
{
	struct params p = { .n = 0 };

	p_int(&p, (int64_t)j->id);
	p_text(&p, j->name ? j->name : "");
	p_text(&p, j->user ? j->user : "");
	p_text(&p, j->tenant ? j->tenant : "default");
	p_text(&p, j->state);
	p_int(&p, j->submit_time);
	p_text(&p, j->doc ? j->doc : "{}");
	p_int(&p, j->end_time);
	p_int(&p, j->done);
	return write1(s, ST_PUT_JOB, &p, NULL);
}

static int each_job(struct drv_store *s, int i, const struct params *p,
		    int (*fn)(const struct drv_store_job *, void *), void *cls, int *n)
{
	PGresult *r;
	int rc = read1(s, i, p, &r);

	if (rc < 0)
		return rc;
	for (int row = 0; row < PQntuples(r) && rc == 0; row++) {
		struct drv_store_job j = {
			.id = (uint64_t)ival(r, row, 0),
			.name = val(r, row, 1),
			.user = val(r, row, 2),
			.tenant = val(r, row, 3),
			.state = val(r, row, 4),
			.submit_time = ival(r, row, 5),
			.doc = val(r, row, 6),
			.end_time = ival(r, row, 7),
			.done = ival(r, row, 8) != 0,
		};

		if (n)
			(*n)++;
		rc = fn(&j, cls);
	}
	PQclear(r);
	return rc;
}

static int pg_load_jobs(struct drv_store *s, int (*fn)(const struct drv_store_job *, void *),
			void *cls)
{
	return each_job(s, ST_LOAD_JOBS, NULL, fn, cls, NULL);
}

static int pg_load_live_jobs(struct drv_store *s,
			     int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	return each_job(s, ST_LOAD_LIVE, NULL, fn, cls, NULL);
}

static int pg_get_job(struct drv_store *s, uint64_t id,
		      int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	struct params p = { .n = 0 };
	int rc, n = 0;

	p_int(&p, (int64_t)id);
	rc = each_job(s, ST_GET_JOB, &p, fn, cls, &n);
	return rc == 0 && n == 0 ? DRV_ENOENT : rc;
}

static int pg_list_jobs(struct drv_store *s, const struct drv_store_job_query *q,
			int (*fn)(const struct drv_store_job *, void *), void *cls)
{
	struct params p = { .n = 0 };

	p_int(&p, (int64_t)q->after);
	p_int(&p, q->done);
	p_text(&p, q->user);
	p_text(&p, q->tenant);
	p_text(&p, q->name);
	p_text(&p, q->states);
	if (q->limit > 0)
		p_int(&p, q->limit);
	else
		p_text(&p, NULL);   /* LIMIT NULL: all */
	return each_job(s, ST_LIST_JOBS, &p, fn, cls, NULL);
}

static int each_pair(struct drv_store *s, int i, const struct params *p,
		     int (*fn)(const char *, int64_t, void *), void *cls)
{
	PGresult *r;
	int rc = read1(s, i, p, &r);

	for (int row = 0; rc == 0 && row < PQntuples(r); row++)
		rc = fn(val(r, row, 0), ival(r, row, 1), cls);
	PQclear(r);
	return rc;
}

static int pg_count_done(struct drv_store *s, int (*fn)(const char *, int64_t, void *), void *cls)
{
	return each_pair(s, ST_COUNT_DONE, NULL, fn, cls);
}

static int pg_month_cost(struct drv_store *s, int64_t month,
			 int (*fn)(const char *, int64_t, void *), void *cls)
{
	struct params p = { .n = 0 };

	p_int(&p, month);
	return each_pair(s, ST_MONTH_COST, &p, fn, cls);
}

static int pg_sum_acct(struct drv_store *s, int64_t since, int64_t until, const char *by,
		       const char *user, int (*fn)(const struct drv_store_acct_sum *, void *),
		       void *cls)
{
	struct params p = { .n = 0 };
	PGresult *r;
	int i, rc;

	if (!strcmp(by, "tenant"))
		i = ST_SUM_TENANT;
	else if (!strcmp(by, "user"))
		i = ST_SUM_USER;
	else if (!strcmp(by, "pool"))
		i = ST_SUM_POOL;
	else
		return DRV_EINVAL;
	p_int(&p, since);
	p_int(&p, until);
	p_text(&p, user);
	rc = read1(s, i, &p, &r);
	for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
		struct drv_store_acct_sum g = {
			.group = val(r, row, 0), .jobs = ival(r, row, 1),
			.attempts = ival(r, row, 2), .gpu_milli_s = ival(r, row, 3),
			.cost_micro = ival(r, row, 4),
		};

		rc = fn(&g, cls);
	}
	PQclear(r);
	return rc;
}

static int pg_purge_jobs(struct drv_store *s, int64_t before, int limit, int64_t *n)
{
	struct params p = { .n = 0 };
	int rc;

	*n = 0;
	p_int(&p, before);
	if (limit > 0)
		p_int(&p, limit);
	else
		p_text(&p, NULL);
	rc = write1(s, ST_PURGE_EVENTS, &p, NULL);
	if (rc == 0)
		rc = write1(s, ST_PURGE_JOBS, &p, n);
	return rc;
}

static int pg_put_acct(struct drv_store *s, const struct drv_store_acct *a)
{
	struct params p = { .n = 0 };

	p_int(&p, (int64_t)a->job);
	p_int(&p, a->attempt);
	p_text(&p, a->name ? a->name : "");
	p_text(&p, a->user ? a->user : "");
	p_text(&p, a->tenant ? a->tenant : "default");
	p_text(&p, a->pool ? a->pool : "");
	p_text(&p, a->state ? a->state : "");
	p_int(&p, a->submit_time);
	p_int(&p, a->start_time);
	p_int(&p, a->end_time);
	if (a->has_exit)
		p_int(&p, a->exit_code);
	else
		p_text(&p, NULL);
	p_int(&p, a->gpu_milli_s);
	p_int(&p, a->cost_micro);
	p_text(&p, a->efficiency);
	return write1(s, ST_PUT_ACCT, &p, NULL);
}

static int pg_load_acct(struct drv_store *s, int64_t since, int64_t until,
			int (*fn)(const struct drv_store_acct *, void *), void *cls)
{
	struct params p = { .n = 0 };
	PGresult *r;
	int rc;

	p_int(&p, since);
	p_int(&p, until);
	rc = read1(s, ST_LOAD_ACCT, &p, &r);
	for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
		struct drv_store_acct a = {
			.job = (uint64_t)ival(r, row, 0),
			.attempt = (int32_t)ival(r, row, 1),
			.name = val(r, row, 2), .user = val(r, row, 3), .tenant = val(r, row, 4),
			.pool = val(r, row, 5), .state = val(r, row, 6),
			.submit_time = ival(r, row, 7),
			.start_time = ival(r, row, 8),
			.end_time = ival(r, row, 9),
			.has_exit = !PQgetisnull(r, row, 10),
			.exit_code = (int)ival(r, row, 10),
			.gpu_milli_s = ival(r, row, 11),
			.cost_micro = ival(r, row, 12),
			.efficiency = val(r, row, 13),
		};

		rc = fn(&a, cls);
	}
	PQclear(r);
	return rc;
}

static int pg_add_event(struct drv_store *s, struct drv_store_event *e)
{
	struct pg *q = s->impl;
	struct params p = { .n = 0 };
	bool own = !q->in_txn;
	int rc = 0;

	if (own)
		rc = pg_begin(s);
	if (rc < 0)
		return rc;
	/* the seq is given here (begin read the last one): the insert is
	 * pipelined like every other write of the transaction */
	p_int(&p, q->next_seq + 1);
	p_int(&p, e->time);
	p_text(&p, e->type ? e->type : "job");
	p_int(&p, (int64_t)e->job);
	p_text(&p, e->node);
	p_text(&p, e->from);
	p_text(&p, e->to ? e->to : "");
	p_text(&p, e->reason ? e->reason : "");
	p_text(&p, e->doc ? e->doc : "{}");
	rc = pipe_send(s, ST_ADD_EVENT, &p);
	if (rc == 0) {
		e->seq = ++q->next_seq;
		q->seq_dirty = true;
	}
	if (own)
		rc = rc == 0 ? pg_commit(s) : (pg_rollback(s), rc);
	return rc;
}

static int pg_load_events(struct drv_store *s, int64_t since, uint64_t job, int limit,
			  int (*fn)(const struct drv_store_event *, void *), void *cls)
{
	struct params p = { .n = 0 };
	PGresult *r;
	int rc;

	if (job)
		p_int(&p, (int64_t)job);
	p_int(&p, since);
	if (limit > 0)
		p_int(&p, limit);
	else
		p_text(&p, NULL);
	rc = read1(s, job ? ST_LOAD_JOB_EVENTS : ST_LOAD_EVENTS, &p, &r);
	for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
		struct drv_store_event e = {
			.seq = ival(r, row, 0),
			.time = ival(r, row, 1),
			.type = val(r, row, 2),
			.job = (uint64_t)ival(r, row, 3),
			.node = val(r, row, 4),
			.from = val(r, row, 5),
			.to = val(r, row, 6),
			.reason = val(r, row, 7),
			.doc = val(r, row, 8),
		};

		rc = fn(&e, cls);
	}
	PQclear(r);
	return rc;
}

static int pg_put_node(struct drv_store *s, const struct drv_store_node *n)
{
	struct params p = { .n = 0 };

	p_text(&p, n->name);
	p_text(&p, n->doc ? n->doc : "{}");
	return write1(s, ST_PUT_NODE, &p, NULL);
}

static int pg_load_nodes(struct drv_store *s, int (*fn)(const struct drv_store_node *, void *),
			 void *cls)
{
	PGresult *r;
	int rc = read1(s, ST_LOAD_NODES, NULL, &r);

	for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
		struct drv_store_node n = { .name = val(r, row, 0), .doc = val(r, row, 1) };

		rc = fn(&n, cls);
	}
	PQclear(r);
	return rc;
}

static int pg_get_meta(struct drv_store *s, const char *key, int64_t *v)
{
	struct params p = { .n = 0 };
	PGresult *r;
	int rc;

	p_text(&p, key);
	rc = read1(s, ST_GET_META, &p, &r);
	if (rc == 0 && PQntuples(r) == 0)
		rc = DRV_ENOENT;
	else if (rc == 0)
		*v = ival(r, 0, 0);
	PQclear(r);
	return rc;
}

static int pg_put_meta(struct drv_store *s, const char *key, int64_t v)
{
	struct params p = { .n = 0 };

	p_text(&p, key);
	p_int(&p, v);
	return write1(s, ST_PUT_META, &p, NULL);
}

static int pg_max_ids(struct drv_store *s, uint64_t *job, int64_t *seq)
{
	PGresult *r;
	int rc = read1(s, ST_MAX_IDS, NULL, &r);

	if (rc == 0) {
		*job = (uint64_t)ival(r, 0, 0);
		*seq = ival(r, 0, 1);
	}
	PQclear(r);
	return rc;
}

static int pg_put_idem(struct drv_store *s, const struct drv_store_idem *k)
{
	struct params p = { .n = 0 };

	p_text(&p, k->user);
	p_text(&p, k->key);
	p_text(&p, k->fingerprint);
	p_int(&p, k->status);
	p_text(&p, k->body ? k->body : "");
	p_text(&p, k->headers);
	p_int(&p, k->created);
	return write1(s, ST_PUT_IDEM, &p, NULL);
}

static int pg_get_idem(struct drv_store *s, const char *user, const char *key,
		       int (*fn)(const struct drv_store_idem *, void *), void *cls)
{
	struct params p = { .n = 0 };
	PGresult *r;
	int rc;

	p_text(&p, user);
	p_text(&p, key);
	rc = read1(s, ST_GET_IDEM, &p, &r);
	if (rc == 0 && PQntuples(r) == 0) {
		rc = DRV_ENOENT;
	} else if (rc == 0) {
		struct drv_store_idem k = {
			.user = val(r, 0, 0), .key = val(r, 0, 1), .fingerprint = val(r, 0, 2),
			.status = (int)ival(r, 0, 3), .body = val(r, 0, 4),
			.headers = val(r, 0, 5), .created = ival(r, 0, 6),
		};

		rc = fn(&k, cls);
	}
	PQclear(r);
	return rc;
}

static int pg_purge_idem(struct drv_store *s, int64_t before, int64_t *n)
{
	struct params p = { .n = 0 };

	*n = 0;
	p_int(&p, before);
	return write1(s, ST_PURGE_IDEM, &p, n);
}

static int pg_put_kobj(struct drv_store *s, const struct drv_store_kobj *o)
{
	struct params p = { .n = 0 };

	p_text(&p, o->kind);
	p_text(&p, o->ns);
	p_text(&p, o->name);
	p_text(&p, o->owner);
	p_text(&p, o->doc);
	return write1(s, ST_PUT_KOBJ, &p, NULL);
}

static int pg_del_kobj(struct drv_store *s, const char *kind, const char *ns, const char *name)
{
	struct params p = { .n = 0 };
	int64_t n = 0;
	int rc;

	p_text(&p, kind);
	p_text(&p, ns);
	p_text(&p, name);
	rc = write1(s, ST_DEL_KOBJ, &p, &n);
	return rc == 0 && n == 0 ? DRV_ENOENT : rc;
}

static int pg_load_kobjs(struct drv_store *s, int (*fn)(const struct drv_store_kobj *, void *),
			 void *cls)
{
	PGresult *r;
	int rc = read1(s, ST_LOAD_KOBJS, NULL, &r);

	for (int row = 0; rc == 0 && row < PQntuples(r); row++) {
		struct drv_store_kobj o = { .kind = val(r, row, 0), .ns = val(r, row, 1),
					    .name = val(r, row, 2), .owner = val(r, row, 3),
					    .doc = val(r, row, 4) };

		rc = fn(&o, cls);
	}
	PQclear(r);
	return rc;
}

static int pg_fence(struct drv_store *s, int64_t term)
{
	((struct pg *)s->impl)->fence = term;
	return 0;
}

static void pg_close(struct drv_store *s)
{
	struct pg *q = s->impl;

	if (!q)
		return;
	if (q->db)
		PQfinish(q->db);
	drv_free(q->conninfo);
	if (q->password) {
		memset(q->password, 0, strlen(q->password));
		drv_free(q->password);
	}
	drv_free(q);
	s->impl = NULL;
}

static const struct drv_store_ops pg_ops = {
	.name = "postgres",
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.put_job = pg_put_job,
	.load_jobs = pg_load_jobs,
	.add_event = pg_add_event,
	.load_events = pg_load_events,
	.put_node = pg_put_node,
	.load_nodes = pg_load_nodes,
	.get_meta = pg_get_meta,
	.put_meta = pg_put_meta,
	.max_ids = pg_max_ids,
	.load_live_jobs = pg_load_live_jobs,
	.get_job = pg_get_job,
	.list_jobs = pg_list_jobs,
	.count_done = pg_count_done,
	.purge_jobs = pg_purge_jobs,
	.put_acct = pg_put_acct,
	.load_acct = pg_load_acct,
	.month_cost = pg_month_cost,
	.sum_acct = pg_sum_acct,
	.put_idem = pg_put_idem,
	.get_idem = pg_get_idem,
	.purge_idem = pg_purge_idem,
	.fence = pg_fence,
	.put_kobj = pg_put_kobj,
	.del_kobj = pg_del_kobj,
	.load_kobjs = pg_load_kobjs,
	.close = pg_close,
};

int drv_store_pg_schema_version(void)
{
	return (int)DRV_ARRAY_SIZE(migrations);
}

/* A conninfo or URL that carries a password is refused (CONTRACTS.md §6). */
static int check_url(const char *url, char *err, size_t errsz)
{
	char *msg = NULL;
	PQconninfoOption *o = PQconninfoParse(url, &msg);
	int rc = 0;

	if (!o) {
		snprintf(err, errsz, "--store %s: %s", url, msg ? msg : "not a PostgreSQL URL");
		PQfreemem(msg);
		return DRV_EINVAL;
	}
	for (PQconninfoOption *i = o; i->keyword; i++)
		if (!strcmp(i->keyword, "password") && i->val && *i->val) {
			snprintf(err, errsz, "the store URL carries a password; give it in "
				 "store_password_file, PGPASSFILE or ~/.pgpass instead (a password "
				 "in a URL shows in ps and logs)");
			rc = DRV_EINVAL;
		}
	PQconninfoFree(o);
	return rc;
}

static int migrate(struct drv_store *s, int target)
{
	struct pg *q = s->impl;
	PGresult *r;
	char sql[96];
	int v, rc;

	rc = exec(s, "BEGIN; SELECT pg_advisory_xact_lock(7245123001);"
		  "CREATE TABLE IF NOT EXISTS drover_schema (version INTEGER NOT NULL);", "migrate");
	if (rc < 0)
		return rc;
	r = PQexec(q->db, "SELECT COALESCE(MAX(version), 0) FROM drover_schema");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = fail_msg(s, "migrate", PQresultErrorMessage(r));
		PQclear(r);
		goto bad;
	}
	v = (int)ival(r, 0, 0);
	PQclear(r);
	if (v > drv_store_pg_schema_version()) {
		snprintf(s->err, sizeof(s->err),
			 "the state database has schema version %d; this drover knows up to %d "
			 "(a newer drover wrote it)", v, drv_store_pg_schema_version());
		rc = DRV_EUNSUPP;
		goto bad;
	}
	for (; v < target; v++) {
		rc = exec(s, migrations[v], "migrate");
		if (rc < 0)
			goto bad;
		snprintf(sql, sizeof(sql), "DELETE FROM drover_schema; INSERT INTO drover_schema "
			 "VALUES (%d)", v + 1);
		rc = exec(s, sql, "migrate");
		if (rc < 0)
			goto bad;
	}
	return exec(s, "COMMIT", "migrate");
bad:
	{
		char keep[sizeof(s->err)];

		memcpy(keep, s->err, sizeof(keep));
		exec(s, "ROLLBACK", "rollback");
		memcpy(s->err, keep, sizeof(keep));
	}
	return rc;
}

int drv_store_open_pg_at(const char *url, const char *password_file, int version,
			 struct drv_store **out, char *errmsg, size_t errsz)
{
	struct drv_store *s;
	struct pg *q;
	int rc;

	*out = NULL;
	rc = check_url(url, errmsg, errsz);
	if (rc < 0)
		return rc;
	s = drv_calloc(1, sizeof(*s));
	q = drv_calloc(1, sizeof(*q));
	s->ops = &pg_ops;
	s->impl = q;
	q->conninfo = drv_strdup(url);
	if (password_file) {
		rc = drv_secret_file_read(password_file, &q->password, s->err, sizeof(s->err));
		if (rc < 0) {
			snprintf(errmsg, errsz, "store_password_file: %s", s->err);
			rc = rc == DRV_EIO ? DRV_EINVAL : rc;
			goto out;
		}
	}
	rc = connect_db(s);
	if (rc == 0)
		rc = migrate(s, version);
	if (rc == 0 && version == drv_store_pg_schema_version())
		rc = prepare_all(s);
	if (rc < 0)
		snprintf(errmsg, errsz, "%s", s->err);
out:
	if (rc < 0) {
		pg_close(s);
		drv_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int drv_store_open_pg(const char *url, const char *password_file, struct drv_store **out,
		      char *errmsg, size_t errsz)
{
	return drv_store_open_pg_at(url, password_file, drv_store_pg_schema_version(), out, errmsg,
				    errsz);
}

bool drv_store_is_pg_url(const char *store)
{
	return store && (!strncmp(store, "postgres://", 11) || !strncmp(store, "postgresql://", 13));
}

/* ---- the leader lease ---- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One query on s's connection that answers within ms or is abandoned (the
 * connection closed, so the next call makes a new one). */
static int query_deadline(struct drv_store *s, const char *sql, int ms, PGresult **out)
{
	struct pg *q = s->impl;
	int64_t until = mono_ms() + ms;
	PGresult *r, *last = NULL;

	*out = NULL;
	if (ensure_conn(s) < 0)
		return DRV_EIO;
	if (!PQsendQuery(q->db, sql))
		return fail(s, "lease");
	for (;;) {
		while (!PQisBusy(q->db)) {
			r = PQgetResult(q->db);
			if (!r)
				goto done;
			PQclear(last);
			last = r;
		}
		{
			struct pollfd pfd = { .fd = PQsocket(q->db), .events = POLLIN };
			int64_t left = until - mono_ms();

			if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
				PQclear(last);
				PQfinish(q->db);
				q->db = NULL;
				snprintf(s->err, sizeof(s->err),
					 "postgresql: lease: no answer within %d ms", ms);
				return DRV_ETIMEDOUT;
			}
			if (!PQconsumeInput(q->db)) {
				PQclear(last);
				return fail(s, "lease");
			}
		}
	}
done:
	if (!last || (PQresultStatus(last) != PGRES_TUPLES_OK &&
		      PQresultStatus(last) != PGRES_COMMAND_OK)) {
		fail_msg(s, "lease", last ? PQresultErrorMessage(last) : "no result");
		PQclear(last);
		return DRV_EIO;
	}
	*out = last;
	return 0;
}

/* Literal text for SQL: the holder and address are ours, but quoted all
 * the same. */
static void quote(struct drv_store *s, const char *v, char *out, size_t n)
{
	struct pg *q = s->impl;
	char *e = q->db ? PQescapeLiteral(q->db, v, strlen(v)) : NULL;

	snprintf(out, n, "%s", e ? e : "''");
	PQfreemem(e);
}

static void lease_row(PGresult *r, struct drv_lease *l)
{
	l->term = ival(r, 0, 0);
	snprintf(l->holder, sizeof(l->holder), "%s", val(r, 0, 1) ? val(r, 0, 1) : "");
	snprintf(l->addr, sizeof(l->addr), "%s", val(r, 0, 2) ? val(r, 0, 2) : "");
	l->expires_in_ms = ival(r, 0, 3);
}

#define LEASE_COLS "term, holder, addr, " \
	"CAST(1000 * extract(epoch FROM expires - clock_timestamp()) AS BIGINT)"

int drv_store_lease_take(struct drv_store *s, const char *holder, const char *addr,
			 int lease_ms, int timeout_ms, struct drv_lease *l)
{
	char h[1100], a[700], sql[2200];
	PGresult *r;
	int rc;

	if (s->ops != &pg_ops)
		return DRV_EUNSUPP;
	if (ensure_conn(s) < 0)
		return DRV_EIO;
	quote(s, holder, h, sizeof(h));
	quote(s, addr, a, sizeof(a));
	snprintf(sql, sizeof(sql),
		 "UPDATE drover_leader SET term = term + 1, holder = %s, addr = %s,"
		 " expires = clock_timestamp() + %d * interval '1 millisecond'"
		 " WHERE id = 1 AND expires < clock_timestamp() RETURNING " LEASE_COLS, h, a,
		 lease_ms);
	rc = query_deadline(s, sql, timeout_ms, &r);
	if (rc < 0)
		return rc;
	if (PQntuples(r) == 1) {
		lease_row(r, l);
		PQclear(r);
		return 0;
	}
	PQclear(r);
	rc = query_deadline(s, "SELECT " LEASE_COLS " FROM drover_leader WHERE id = 1",
			    timeout_ms, &r);
	if (rc < 0)
		return rc;
	if (PQntuples(r) == 1)
		lease_row(r, l);
	PQclear(r);
	/* an earlier take that timed out here may have gone through after all */
	if (!strcmp(l->holder, holder) && l->expires_in_ms > 0)
		return 0;
	return DRV_EEXIST;
}

int drv_store_lease_take_from(struct drv_store *s, int64_t term, const char *holder,
			      const char *addr, int lease_ms, int timeout_ms, struct drv_lease *l)
{
	char h[1100], a[700], sql[2200];
	PGresult *r;
	int rc;

	if (s->ops != &pg_ops)
		return DRV_EUNSUPP;
	if (ensure_conn(s) < 0)
		return DRV_EIO;
	quote(s, holder, h, sizeof(h));
	quote(s, addr, a, sizeof(a));
	snprintf(sql, sizeof(sql),
		 "UPDATE drover_leader SET term = term + 1, holder = %s, addr = %s,"
		 " expires = clock_timestamp() + %d * interval '1 millisecond'"
		 " WHERE id = 1 AND term = %" PRId64 " RETURNING " LEASE_COLS, h, a, lease_ms, term);
	rc = query_deadline(s, sql, timeout_ms, &r);
	if (rc < 0)
		return rc;
	rc = PQntuples(r) == 1 ? 0 : DRV_EEXIST;
	if (rc == 0)
		lease_row(r, l);
	PQclear(r);
	return rc;
}

int drv_store_lease_renew(struct drv_store *s, int64_t term, int lease_ms, int timeout_ms,
			  struct drv_lease *l)
{
	char sql[600];
	PGresult *r;
	int rc;

	if (s->ops != &pg_ops)
		return DRV_EUNSUPP;
	snprintf(sql, sizeof(sql),
		 "UPDATE drover_leader SET expires = clock_timestamp() + %d * interval"
		 " '1 millisecond' WHERE id = 1 AND term = %" PRId64 " RETURNING " LEASE_COLS,
		 lease_ms, term);
	rc = query_deadline(s, sql, timeout_ms, &r);
	if (rc < 0)
		return rc;
	if (PQntuples(r) == 1) {
		lease_row(r, l);
		PQclear(r);
		return 0;
	}
	PQclear(r);
	rc = query_deadline(s, "SELECT " LEASE_COLS " FROM drover_leader WHERE id = 1",
			    timeout_ms, &r);
	if (rc == 0 && PQntuples(r) == 1)
		lease_row(r, l);
	PQclear(r);
	return DRV_ESTATE;
}

int drv_store_lease_release(struct drv_store *s, int64_t term, int timeout_ms)
{
	char sql[300];
	PGresult *r;
	int rc;

	if (s->ops != &pg_ops)
		return DRV_EUNSUPP;
	snprintf(sql, sizeof(sql), "UPDATE drover_leader SET expires = '-infinity'"
		 " WHERE id = 1 AND term = %" PRId64, term);
	rc = query_deadline(s, sql, timeout_ms, &r);
	PQclear(r);
	return rc;
}
