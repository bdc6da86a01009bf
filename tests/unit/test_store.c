/*
 * test_store.c: the store on real SQLite files, and the same tests on a real
 * PostgreSQL when DROVER_TEST_PG names one (libpq keywords without dbname:
 * tests/integration/store_pg.sh starts a server and sets it; each test gets
 * a database of its own): what is committed survives
 * a close and a process that dies without closing; what is rolled back or
 * fails is gone; an old schema is migrated forward with its rows kept; a
 * newer one is refused; event sequence numbers only grow; injected faults
 * fail the operation they target and nothing half-done remains.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "drover/store.h"

static char dir[256], path[300];
static char pg_url[600], pg_db[64];   /* pg_url empty: SQLite */

/* Runs one statement on the server's maintenance database. */
static void pg_admin(const char *sql)
{
	char info[600];
	PGconn *c;
	PGresult *r;

	snprintf(info, sizeof(info), "%s dbname=postgres", getenv("DROVER_TEST_PG"));
	c = PQconnectdb(info);
	cr_assert(eq(int, PQstatus(c), CONNECTION_OK), "%s", PQerrorMessage(c));
	r = PQexec(c, sql);
	cr_assert(eq(int, PQresultStatus(r), PGRES_COMMAND_OK), "%s: %s", sql,
		  PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
}

static void setup(void)
{
	const char *pg = getenv("DROVER_TEST_PG");
	static int n;
	char sql[128];

	snprintf(dir, sizeof(dir), "/tmp/drover-store-XXXXXX");
	cr_assert(ne(ptr, mkdtemp(dir), NULL));
	snprintf(path, sizeof(path), "%s/state.db", dir);
	pg_url[0] = '\0';
	if (pg && *pg) {
		snprintf(pg_db, sizeof(pg_db), "drover_t%d_%d", (int)getpid(), n++);
		snprintf(sql, sizeof(sql), "CREATE DATABASE %s", pg_db);
		pg_admin(sql);
		snprintf(pg_url, sizeof(pg_url), "%s dbname=%s", pg, pg_db);
	}
}

static void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	if (pg_url[0]) {
		snprintf(cmd, sizeof(cmd), "DROP DATABASE %s WITH (FORCE)", pg_db);
		pg_admin(cmd);
	}
}

/* Tests of SQLite's own files (its migrations, its paths) skip on PostgreSQL. */
#define SQLITE_ONLY() do { if (pg_url[0]) cr_skip_test("a test of SQLite's files"); } while (0)
#define PG_ONLY() do { if (!pg_url[0]) cr_skip_test("DROVER_TEST_PG is not set " \
	"(tests/integration/store_pg.sh runs this on a real PostgreSQL)"); } while (0)

static int open_any(struct drv_store **s, char *err, size_t errsz)
{
	if (pg_url[0])
		return drv_store_open_pg(pg_url, NULL, s, err, errsz);
	return drv_store_open_sqlite(path, s, err, errsz);
}

TestSuite(store, .init = setup, .fini = teardown);

static struct drv_store *open_store(void)
{
	struct drv_store *s = NULL;
	char err[512];

	cr_assert(eq(int, open_any(&s, err, sizeof(err)), 0), "%s", err);
	return s;
}

struct seen {
	int n;
	uint64_t ids[16];
	char states[16][16];
	char tenants[16][16];
};

static int collect(const struct drv_store_job *j, void *cls)
{
	struct seen *s = cls;

	s->ids[s->n] = j->id;
	snprintf(s->states[s->n], sizeof(s->states[0]), "%s", j->state);
	snprintf(s->tenants[s->n], sizeof(s->tenants[0]), "%s", j->tenant);
	s->n++;
	return 0;
}

static void put(struct drv_store *s, uint64_t id, const char *state)
{
	struct drv_store_job j = { .id = id, .name = "train", .user = "alice",
				   .tenant = "research", .state = state, .submit_time = 100,
				   .doc = "{\"x\":1}" };

	cr_assert(eq(int, drv_store_put_job(s, &j), 0));
}

Test(store, committed_rows_survive_reopen)
{
	struct drv_store *s = open_store();
	struct seen seen = { 0 };
	uint64_t maxjob;
	int64_t maxseq, v = 0;

	cr_assert(eq(int, drv_store_begin(s), 0));
	put(s, 1, "pending");
	put(s, 2, "pending");
	cr_assert(eq(int, drv_store_put_meta(s, "epoch", 7), 0));
	cr_assert(eq(int, drv_store_commit(s), 0));
	cr_assert(eq(int, drv_store_begin(s), 0));
	put(s, 3, "pending");
	cr_assert(eq(int, drv_store_rollback(s), 0));
	put(s, 2, "running");  /* autocommit replace */
	drv_store_close(s);

	s = open_store();
	cr_assert(eq(int, s->ops->load_jobs(s, collect, &seen), 0));
	cr_assert(eq(int, seen.n, 2));
	cr_assert(eq(u64, seen.ids[0], 1));
	cr_assert(eq(str, seen.states[1], "running"));
	cr_assert(eq(str, seen.tenants[0], "research"));
	cr_assert(eq(int, drv_store_get_meta(s, "epoch", &v), 0));
	cr_assert(eq(i64, v, 7));
	cr_assert(eq(int, drv_store_get_meta(s, "nothing", &v), DRV_ENOENT));
	cr_assert(eq(int, s->ops->max_ids(s, &maxjob, &maxseq), 0));
	cr_assert(eq(u64, maxjob, 2));
	cr_assert(eq(i64, maxseq, 0));
	drv_store_close(s);
}

Test(store, a_commit_survives_a_process_that_dies)
{
	pid_t pid = fork();
	int st = 0;
	struct drv_store *s;
	struct seen seen = { 0 };

	cr_assert(ge(int, pid, 0));
	if (pid == 0) {
		struct drv_store *c = NULL;
		char err[256];

		if (open_any(&c, err, sizeof(err)) < 0)
			_exit(3);
		drv_store_begin(c);
		put(c, 5, "pending");
		if (drv_store_commit(c) < 0)
			_exit(4);
		drv_store_begin(c);
		put(c, 6, "pending");  /* never committed */
		_exit(0);              /* no close, no checkpoint: like a SIGKILL */
	}
	cr_assert(eq(int, waitpid(pid, &st, 0), pid));
	cr_assert(eq(int, WEXITSTATUS(st), 0));
	s = open_store();
	cr_assert(eq(int, s->ops->load_jobs(s, collect, &seen), 0));
	cr_assert(eq(int, seen.n, 1));
	cr_assert(eq(u64, seen.ids[0], 5));
	drv_store_close(s);
}

static int count_events(const struct drv_store_event *e, void *cls)
{
	int64_t *last = cls;

	cr_assert(gt(i64, e->seq, *last));
	*last = e->seq;
	return 0;
}

Test(store, event_seq_only_grows_across_restarts)
{
	struct drv_store *s = open_store();
	struct drv_store_event e = { .time = 10, .type = "job", .job = 1, .to = "pending",
				     .reason = "submitted", .doc = "{}" };
	int64_t first, last = 0;

	cr_assert(eq(int, drv_store_add_event(s, &e), 0));
	first = e.seq;
	cr_assert(eq(int, drv_store_add_event(s, &e), 0));
	cr_assert(eq(i64, e.seq, first + 1));
	drv_store_close(s);
	s = open_store();
	cr_assert(eq(int, drv_store_add_event(s, &e), 0));
	cr_assert(eq(i64, e.seq, first + 2));
	cr_assert(eq(int, s->ops->load_events(s, 0, 1, 0, count_events, &last), 0));
	cr_assert(eq(i64, last, first + 2));
	last = first;
	cr_assert(eq(int, s->ops->load_events(s, first, 0, 1, count_events, &last), 0));
	cr_assert(eq(i64, last, first + 1), "limit 1 after since");
	drv_store_close(s);
}

Test(store, old_schema_is_migrated_with_its_rows)
{
	struct drv_store *s = NULL;
	struct seen seen = { 0 };
	char err[256];
	sqlite3 *db;
	sqlite3_stmt *st;

	SQLITE_ONLY();

	cr_assert(ge(int, drv_store_sqlite_schema_version(), 2));
	cr_assert(eq(int, drv_store_open_sqlite_at(path, 1, &s, err, sizeof(err)), 0), "%s", err);
	drv_store_close(s);
	/* a version-1 row, written as a version-1 binary would */
	cr_assert(eq(int, sqlite3_open(path, &db), SQLITE_OK));
	cr_assert(eq(int, sqlite3_exec(db, "INSERT INTO jobs(id,name,user,state,submit_time,doc)"
				       " VALUES(9,'old','bob','pending',5,'{}')", NULL, NULL, NULL),
		     SQLITE_OK));
	sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
	sqlite3_step(st);
	cr_assert(eq(int, sqlite3_column_int(st, 0), 1));
	sqlite3_finalize(st);
	sqlite3_close(db);

	s = open_store();
	cr_assert(eq(int, s->ops->load_jobs(s, collect, &seen), 0));
	cr_assert(eq(int, seen.n, 1));
	cr_assert(eq(u64, seen.ids[0], 9));
	cr_assert(eq(str, seen.tenants[0], "default"));
	{
		struct drv_store_node n = { .name = "node-a", .doc = "{}" };

		cr_assert(eq(int, drv_store_put_node(s, &n), 0), "the v2 nodes table exists");
	}
	drv_store_close(s);
}

Test(store, newer_schema_is_refused)
{
	struct drv_store *s = open_store();
	char err[512], q[64];
	sqlite3 *db;

	SQLITE_ONLY();

	drv_store_close(s);
	cr_assert(eq(int, sqlite3_open(path, &db), SQLITE_OK));
	snprintf(q, sizeof(q), "PRAGMA user_version = %d", drv_store_sqlite_schema_version() + 1);
	sqlite3_exec(db, q, NULL, NULL, NULL);
	sqlite3_close(db);
	cr_assert(eq(int, drv_store_open_sqlite(path, &s, err, sizeof(err)), DRV_EUNSUPP));
	cr_assert(ne(ptr, strstr(err, "newer drover"), NULL), "%s", err);
}

Test(store, unwritable_place_is_an_error_with_the_path)
{
	struct drv_store *s = NULL;
	char err[512];

	SQLITE_ONLY();

	cr_assert(eq(int, drv_store_open_sqlite("/nonexistent-dir/x/state.db", &s, err,
						sizeof(err)), DRV_EIO));
	cr_assert(ne(ptr, strstr(err, "/nonexistent-dir/x/state.db"), NULL), "%s", err);
}

Test(store, injected_faults_leave_nothing_half_done)
{
	struct drv_store *s = NULL;
	struct seen seen = { 0 };

	cr_assert(eq(int, drv_store_fault_wrap(open_store(), &s), 0));
	put(s, 1, "pending");

	/* the second put_job from now fails: the transaction is rolled back whole */
	drv_store_fault_arm(s, "put_job", 1, DRV_EIO);
	cr_assert(eq(int, drv_store_begin(s), 0));
	put(s, 2, "pending");
	{
		struct drv_store_job j = { .id = 3, .state = "pending", .doc = "{}" };

		cr_assert(eq(int, drv_store_put_job(s, &j), DRV_EIO));
		cr_assert(ne(ptr, strstr(s->err, "injected"), NULL));
	}
	cr_assert(eq(int, drv_store_rollback(s), 0));
	cr_assert(eq(int, drv_store_fault_hits(s), 1));

	/* a failing commit loses its transaction, as a full disk would */
	drv_store_fault_arm(s, "commit", 0, DRV_EIO);
	cr_assert(eq(int, drv_store_begin(s), 0));
	put(s, 4, "pending");
	cr_assert(eq(int, drv_store_commit(s), DRV_EIO));

	drv_store_fault_arm(s, NULL, -1, 0);
	cr_assert(eq(int, drv_store_begin(s), 0), "the store is usable after the fault");
	put(s, 5, "pending");
	cr_assert(eq(int, drv_store_commit(s), 0));
	cr_assert(eq(int, s->ops->load_jobs(s, collect, &seen), 0));
	cr_assert(eq(int, seen.n, 2));
	cr_assert(eq(u64, seen.ids[0], 1));
	cr_assert(eq(u64, seen.ids[1], 5));
	drv_store_close(s);
}

/* --- finished jobs: store-only reads, counts, purge, accounting ---------- */

static void put_fin(struct drv_store *s, uint64_t id, const char *state, int64_t end, bool done,
		    const char *user)
{
	struct drv_store_job j = { .id = id, .name = "train", .user = user, .tenant = "research",
				   .state = state, .submit_time = 100, .doc = "{}",
				   .end_time = end, .done = done };

	cr_assert(eq(int, drv_store_put_job(s, &j), 0));
}

static int count_state(const char *state, int64_t n, void *cls)
{
	int64_t *c = cls;

	if (strcmp(state, "succeeded") == 0)
		c[0] += n;
	else
		c[1] += n;
	return 0;
}

static int sum_acct(const struct drv_store_acct *a, void *cls)
{
	int64_t *c = cls;

	c[0]++;
	c[1] += a->cost_micro;
	c[2] += a->gpu_milli_s;
	return 0;
}

Test(store, only_unfinished_load_and_finished_read_back)
{
	struct drv_store *s = open_store();
	struct seen live = { 0 }, page = { 0 }, one = { 0 };
	struct drv_store_job_query q = { .after = 1, .limit = 2, .done = 1,
					 .states = ",succeeded,failed," };
	int64_t c[2] = { 0, 0 };

	put_fin(s, 1, "succeeded", 50, true, "alice");
	put_fin(s, 2, "running", 0, false, "alice");
	put_fin(s, 3, "failed", 60, true, "bob");
	put_fin(s, 4, "failed", 70, false, "alice");   /* completing: tasks not gone */
	put_fin(s, 5, "cancelled", 80, true, "alice");
	put_fin(s, 6, "succeeded", 90, true, "alice");
	cr_assert(eq(int, s->ops->load_live_jobs(s, collect, &live), 0));
	cr_assert(eq(int, live.n, 2));
	cr_assert(eq(u64, live.ids[0], 2));
	cr_assert(eq(u64, live.ids[1], 4));
	cr_assert(eq(int, s->ops->list_jobs(s, &q, collect, &page), 0));
	cr_assert(eq(int, page.n, 2));
	cr_assert(eq(u64, page.ids[0], 3));
	cr_assert(eq(u64, page.ids[1], 6));
	q = (struct drv_store_job_query){ .done = -1, .user = "bob" };
	page.n = 0;
	cr_assert(eq(int, s->ops->list_jobs(s, &q, collect, &page), 0));
	cr_assert(eq(int, page.n, 1));
	cr_assert(eq(int, s->ops->get_job(s, 5, collect, &one), 0));
	cr_assert(eq(str, one.states[0], "cancelled"));
	cr_assert(eq(int, s->ops->get_job(s, 99, collect, &one), DRV_ENOENT));
	cr_assert(eq(int, s->ops->count_done(s, count_state, c), 0));
	cr_assert(eq(i64, c[0], 2));
	cr_assert(eq(i64, c[1], 2));
	drv_store_close(s);
}

Test(store, purge_keeps_accounting_rows)
{
	struct drv_store *s = open_store();
	struct drv_store_acct a = { .job = 1, .attempt = 1, .name = "train", .user = "alice",
				    .tenant = "research", .pool = "gcp", .state = "succeeded",
				    .start_time = 10, .end_time = 50, .gpu_milli_s = 8000 * 40,
				    .cost_micro = 1234567 };
	struct seen left = { 0 };
	int64_t n = -1, sums[3] = { 0, 0, 0 };

	put_fin(s, 1, "succeeded", 50, true, "alice");
	put_fin(s, 2, "failed", 500, true, "alice");
	put_fin(s, 3, "running", 0, false, "alice");
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	a.job = 2;
	a.end_time = 500;
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	cr_assert(eq(int, drv_store_begin(s), 0));
	cr_assert(eq(int, s->ops->purge_jobs(s, 100, 10, &n), 0));
	cr_assert(eq(int, drv_store_commit(s), 0));
	cr_assert(eq(i64, n, 1));
	cr_assert(eq(int, s->ops->load_jobs(s, collect, &left), 0));
	cr_assert(eq(int, left.n, 2), "the old finished job went, the newer and the live stay");
	cr_assert(eq(u64, left.ids[0], 2));
	cr_assert(eq(int, s->ops->load_acct(s, 0, 1000, sum_acct, sums), 0));
	cr_assert(eq(i64, sums[0], 2));
	cr_assert(eq(i64, sums[1], 2 * 1234567));
	cr_assert(eq(i64, sums[2], 2 * 320000));
	sums[0] = 0;
	cr_assert(eq(int, s->ops->load_acct(s, 100, 1000, sum_acct, sums), 0));
	cr_assert(eq(i64, sums[0], 1), "until and since bound the end time");
	drv_store_close(s);
}

static int keep_eff(const struct drv_store_acct *a, void *cls)
{
	char (*e)[128] = cls;

	snprintf(e[a->job - 1], sizeof(e[0]), "%s", a->efficiency ? a->efficiency : "(null)");
	return 0;
}

/* An attempt's efficiency (seff's figures, JSON) comes back as written,
 * and none stays none (SQLite and, under store_pg.sh, PostgreSQL). */
Test(store, accounting_rows_keep_the_efficiency)
{
	struct drv_store *s = open_store();
	const char *eff = "{\"gpu_util_pct\":87.5,\"cpu_efficiency_pct\":null}";
	struct drv_store_acct a = { .job = 1, .attempt = 1, .name = "n", .user = "u",
				    .tenant = "t", .pool = "p", .state = "succeeded",
				    .end_time = 50, .efficiency = eff };
	char got[2][128] = { "", "" };

	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	a.job = 2;
	a.efficiency = NULL;
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	cr_assert(eq(int, s->ops->load_acct(s, 0, 100, keep_eff, got), 0));
	cr_assert(eq(str, got[0], (char *)eff));
	cr_assert(eq(str, got[1], "(null)"));
	drv_store_close(s);
}

Test(store, v2_jobs_get_done_and_end_time_on_migration)
{
	struct drv_store *s = NULL;
	struct seen live = { 0 };
	char err[256];
	sqlite3 *db;

	SQLITE_ONLY();

	cr_assert(eq(int, drv_store_open_sqlite_at(path, 2, &s, err, sizeof(err)), 0), "%s", err);
	drv_store_close(s);
	cr_assert(eq(int, sqlite3_open(path, &db), SQLITE_OK));
	cr_assert(eq(int, sqlite3_exec(db,
		"INSERT INTO jobs(id,name,user,tenant,state,submit_time,doc) VALUES"
		" (1,'a','u','t','succeeded',5,'{\"end_time\":9,\"holding\":false}'),"
		" (2,'a','u','t','failed',5,'{\"end_time\":9,\"holding\":true}'),"
		" (3,'a','u','t','pending',5,'{}')", NULL, NULL, NULL), SQLITE_OK));
	sqlite3_close(db);
	s = open_store();
	cr_assert(eq(int, s->ops->load_live_jobs(s, collect, &live), 0));
	cr_assert(eq(int, live.n, 2));
	cr_assert(eq(u64, live.ids[0], 2), "a finished job still holding GPUs loads");
	cr_assert(eq(u64, live.ids[1], 3));
	drv_store_close(s);
}

static int pair_sum(const char *k, int64_t n, void *cls)
{
	int64_t *c = cls;

	c[strcmp(k, "succeeded") == 0 || strcmp(k, "research") == 0 ? 0 : 1] += n;
	return 0;
}

Test(store, counts_and_month_sums_follow_replaces_and_purges)
{
	struct drv_store *s = open_store();
	/* 2026-12-01T00:00:00Z and a time in that month */
	int64_t dec = 1796083200, t = dec + 86400, c[2] = { 0, 0 }, n;
	struct drv_store_acct a = { .job = 1, .attempt = 1, .user = "alice", .tenant = "research",
				    .pool = "gcp", .state = "requeued", .end_time = t,
				    .cost_micro = 100 };

	put_fin(s, 1, "succeeded", 50, true, "alice");
	put_fin(s, 1, "succeeded", 50, true, "alice");   /* written again: one job */
	put_fin(s, 2, "failed", 50, true, "alice");
	put_fin(s, 3, "failed", 0, false, "alice");      /* completing: not counted */
	cr_assert(eq(int, s->ops->count_done(s, pair_sum, c), 0));
	cr_assert(eq(i64, c[0], 1));
	cr_assert(eq(i64, c[1], 1));
	cr_assert(eq(int, drv_store_begin(s), 0));
	cr_assert(eq(int, s->ops->purge_jobs(s, 100, 10, &n), 0));
	cr_assert(eq(int, drv_store_commit(s), 0));
	c[0] = c[1] = 0;
	cr_assert(eq(int, s->ops->count_done(s, pair_sum, c), 0));
	cr_assert(eq(i64, c[0] + c[1], 0), "purged jobs leave the counts");

	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	a.state = "cancelled";
	a.cost_micro = 150;                             /* the same attempt, replaced */
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	a.job = 2;
	a.tenant = "vision";
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	a.job = 3;
	a.end_time = dec - 1;                           /* November */
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	c[0] = c[1] = 0;
	cr_assert(eq(int, s->ops->month_cost(s, dec, pair_sum, c), 0));
	cr_assert(eq(i64, c[0], 150));
	cr_assert(eq(i64, c[1], 150));
	drv_store_close(s);
}

static int keep_sum(const struct drv_store_acct_sum *g, void *cls)
{
	struct drv_store_acct_sum *v = cls;

	while (v->group)
		v++;
	*v = *g;
	v->group = strcmp(g->group, "research") == 0 ? "research" : "other";
	return 0;
}

Test(store, accounting_sums_by_column)
{
	struct drv_store *s = open_store();
	struct drv_store_acct a = { .job = 1, .attempt = 1, .user = "alice", .tenant = "research",
				    .pool = "gcp", .state = "requeued", .end_time = 100,
				    .gpu_milli_s = 1000, .cost_micro = 10 };
	struct drv_store_acct_sum g[4] = { { 0 } };

	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	a.attempt = 2;                  /* the same job again: one job, two attempts */
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	a.job = 2;
	a.user = "bob";
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	a.job = 3;
	a.tenant = "vision";
	a.end_time = 500;               /* outside the window */
	cr_assert(eq(int, drv_store_put_acct(s, &a), 0));
	cr_assert(eq(int, s->ops->sum_acct(s, 0, 200, "tenant", NULL, keep_sum, g), 0));
	cr_assert(eq(str, (char *)g[0].group, "research"));
	cr_assert(eq(i64, g[0].jobs, 2));
	cr_assert(eq(i64, g[0].attempts, 3));
	cr_assert(eq(i64, g[0].gpu_milli_s, 3000));
	cr_assert(eq(i64, g[0].cost_micro, 30));
	cr_assert(eq(ptr, (void *)g[1].group, NULL));
	memset(g, 0, sizeof(g));
	cr_assert(eq(int, s->ops->sum_acct(s, 0, 1000, "user", "bob", keep_sum, g), 0));
	cr_assert(eq(i64, g[0].attempts, 2), "bob's two jobs");
	cr_assert(eq(int, s->ops->sum_acct(s, 0, 1000, "name; DROP TABLE acct", NULL, keep_sum, g),
		     DRV_EINVAL));
	drv_store_close(s);
}

struct idem_seen {
	int n;
	int status;
	char fp[80], body[80], headers[80];
	int64_t created;
};

static int keep_idem(const struct drv_store_idem *k, void *cls)
{
	struct idem_seen *s = cls;

	s->n++;
	s->status = k->status;
	s->created = k->created;
	snprintf(s->fp, sizeof(s->fp), "%s", k->fingerprint);
	snprintf(s->body, sizeof(s->body), "%s", k->body);
	snprintf(s->headers, sizeof(s->headers), "%s", k->headers ? k->headers : "(null)");
	return 0;
}

Test(store, idempotency_keys_commit_with_the_transaction_and_are_purged_by_age)
{
	struct drv_store *s = NULL;
	struct idem_seen seen = { 0 };
	struct drv_store_idem k = { .user = "alice", .key = "k-1", .fingerprint = "aa",
				    .status = 201, .body = "{\"id\":1}\n",
				    .headers = "Location: /v1/jobs/1\n", .created = 1000 };
	char err[256];
	int64_t n = -1;

	/* a version-4 file (before the idem table) migrates forward with its jobs */
	if (!pg_url[0]) {
		cr_assert(eq(int, drv_store_open_sqlite_at(path, 4, &s, err, sizeof(err)), 0),
			  "%s", err);
		drv_store_close(s);
	}
	s = open_store();
	cr_assert(ge(int, drv_store_sqlite_schema_version(), 5));
	cr_assert(eq(int, s->ops->get_idem(s, "alice", "k-1", keep_idem, &seen), DRV_ENOENT));

	/* rolled back with the job it came with: gone */
	cr_assert(eq(int, drv_store_begin(s), 0));
	put(s, 1, "pending");
	cr_assert(eq(int, s->ops->put_idem(s, &k), 0));
	cr_assert(eq(int, drv_store_rollback(s), 0));
	cr_assert(eq(int, s->ops->get_idem(s, "alice", "k-1", keep_idem, &seen), DRV_ENOENT));

	/* committed: read back, scoped to its user, and kept across a reopen */
	cr_assert(eq(int, drv_store_begin(s), 0));
	put(s, 1, "pending");
	cr_assert(eq(int, s->ops->put_idem(s, &k), 0));
	cr_assert(eq(int, drv_store_commit(s), 0));
	drv_store_close(s);
	s = open_store();
	cr_assert(eq(int, s->ops->get_idem(s, "alice", "k-1", keep_idem, &seen), 0));
	cr_assert(eq(int, seen.n, 1));
	cr_assert(eq(int, seen.status, 201));
	cr_assert(eq(str, seen.fp, "aa"));
	cr_assert(eq(str, seen.body, "{\"id\":1}\n"));
	cr_assert(eq(str, seen.headers, "Location: /v1/jobs/1\n"));
	cr_assert(eq(int, s->ops->get_idem(s, "bob", "k-1", keep_idem, &seen), DRV_ENOENT));

	/* a second key, newer; the purge takes the older one only */
	k.key = "k-2";
	k.created = 2000;
	k.headers = NULL;
	cr_assert(eq(int, s->ops->put_idem(s, &k), 0));
	cr_assert(eq(int, s->ops->purge_idem(s, 1500, &n), 0));
	cr_assert(eq(i64, n, 1));
	cr_assert(eq(int, s->ops->get_idem(s, "alice", "k-1", keep_idem, &seen), DRV_ENOENT));
	seen.n = 0;
	cr_assert(eq(int, s->ops->get_idem(s, "alice", "k-2", keep_idem, &seen), 0));
	cr_assert(eq(int, seen.n, 1));
	cr_assert(eq(str, seen.headers, "(null)"));
	drv_store_close(s);
}

/* --- PostgreSQL only: its schema version, passwords, the leader lease ----- */

/* Runs sql on this test's database. */
static void pg_exec(const char *sql)
{
	PGconn *c = PQconnectdb(pg_url);
	PGresult *r;

	cr_assert(eq(int, PQstatus(c), CONNECTION_OK), "%s", PQerrorMessage(c));
	r = PQexec(c, sql);
	cr_assert(eq(int, PQresultStatus(r), PGRES_COMMAND_OK), "%s: %s", sql,
		  PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
}

Test(store, pg_newer_schema_is_refused)
{
	struct drv_store *s;
	char err[512], sql[96];

	PG_ONLY();
	s = open_store();
	drv_store_close(s);
	snprintf(sql, sizeof(sql), "UPDATE drover_schema SET version = %d",
		 drv_store_pg_schema_version() + 1);
	pg_exec(sql);
	cr_assert(eq(int, drv_store_open_pg(pg_url, NULL, &s, err, sizeof(err)), DRV_EUNSUPP));
	cr_assert(ne(ptr, strstr(err, "newer drover"), NULL), "%s", err);
}

Test(store, pg_a_password_in_the_url_is_refused)
{
	struct drv_store *s = NULL;
	char err[512], pw[400];
	FILE *f;

	cr_assert(eq(int, drv_store_open_pg("postgres://drover:secret@127.0.0.1:1/drover", NULL, &s,
					    err, sizeof(err)), DRV_EINVAL));
	cr_assert(ne(ptr, strstr(err, "store_password_file"), NULL), "%s", err);
	cr_assert(eq(ptr, strstr(err, "secret"), NULL), "the password is not repeated: %s", err);
	cr_assert(eq(int, drv_store_open_pg("host=127.0.0.1 password=secret", NULL, &s, err,
					    sizeof(err)), DRV_EINVAL));
	/* a password file others may read is refused unread */
	snprintf(pw, sizeof(pw), "%s/pw", dir);
	f = fopen(pw, "w");
	cr_assert(ne(ptr, f, NULL));
	fputs("secret\n", f);
	fclose(f);
	chmod(pw, 0644);
	cr_assert(eq(int, drv_store_open_pg("postgres://drover@127.0.0.1:1/drover", pw, &s, err,
					    sizeof(err)), DRV_EPERM));
	cr_assert(ne(ptr, strstr(err, "0644"), NULL), "%s", err);
	cr_assert(eq(ptr, s, NULL));
}

Test(store, pg_a_deposed_leaders_writes_are_refused_by_the_database)
{
	struct drv_store *a, *b, *la, *lb, *fa;
	struct drv_lease l = { 0 }, l2 = { 0 };
	int64_t v = 0;

	PG_ONLY();
	a = open_store();
	b = open_store();
	la = open_store();
	lb = open_store();
	/* a takes the lease (term 1); b cannot while it holds */
	cr_assert(eq(int, drv_store_lease_take(la, "a", "http://a:1", 300, 2000, &l), 0));
	cr_assert(eq(i64, l.term, 1));
	cr_assert(eq(int, drv_store_lease_take(lb, "b", "http://b:1", 300, 2000, &l2),
		     DRV_EEXIST));
	cr_assert(eq(str, l2.addr, "http://a:1"));
	cr_assert(eq(i64, l2.term, 1));
	/* a writes as leader, through the fault wrapper: fencing passes through */
	cr_assert(eq(int, drv_store_fault_wrap(a, &fa), 0));
	cr_assert(eq(int, drv_store_fence(fa, 1), 0));
	cr_assert(eq(int, drv_store_put_meta(fa, "epoch", 1), 0));
	cr_assert(eq(int, drv_store_lease_renew(la, 1, 300, 2000, &l), 0));
	/* a stops renewing; after the lease, b takes term 2 */
	usleep(400 * 1000);
	cr_assert(eq(int, drv_store_lease_take(lb, "b", "http://b:1", 5000, 2000, &l2), 0));
	cr_assert(eq(i64, l2.term, 2), "the term only grows");
	cr_assert(eq(int, drv_store_fence(b, 2), 0));
	/* every write of a, in a transaction or alone, is refused; b's pass */
	cr_assert(eq(int, drv_store_begin(fa), DRV_EPERM));
	cr_assert(ne(ptr, strstr(fa->err, "term 1 has ended"), NULL), "%s", fa->err);
	cr_assert(eq(int, drv_store_put_meta(fa, "epoch", 99), DRV_EPERM));
	cr_assert(eq(int, drv_store_lease_renew(la, 1, 300, 2000, &l), DRV_ESTATE));
	cr_assert(eq(str, l.holder, "b"));
	cr_assert(eq(int, drv_store_put_meta(b, "epoch", 2), 0));
	cr_assert(eq(int, drv_store_get_meta(fa, "epoch", &v), 0), "reads still work");
	cr_assert(eq(i64, v, 2));
	/* a release hands over at once */
	cr_assert(eq(int, drv_store_lease_release(lb, 2, 2000), 0));
	cr_assert(eq(int, drv_store_lease_take(la, "a", "http://a:1", 300, 2000, &l), 0));
	cr_assert(eq(i64, l.term, 3));
	drv_store_close(fa);
	drv_store_close(b);
	drv_store_close(la);
	drv_store_close(lb);
}

Test(store, pg_a_takeover_waits_for_the_leaders_open_transaction)
{
	struct drv_store *a, *la, *lb;
	struct drv_lease l = { 0 };
	int64_t t0;
	struct timespec ts;

	PG_ONLY();
	a = open_store();
	la = open_store();
	lb = open_store();
	cr_assert(eq(int, drv_store_lease_take(la, "a", "http://a:1", 200, 2000, &l), 0));
	cr_assert(eq(int, drv_store_fence(a, l.term), 0));
	cr_assert(eq(int, drv_store_begin(a), 0));
	put(a, 1, "pending");
	usleep(300 * 1000);   /* the lease has expired, but a's transaction holds the row */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	cr_assert(eq(int, drv_store_lease_take(lb, "b", "http://b:1", 5000, 300, &l),
		     DRV_ETIMEDOUT), "the takeover waits for the open transaction");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	cr_assert(ge(i64, ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - t0, 250));
	cr_assert(eq(int, drv_store_commit(a), 0), "so what a committed was its term's");
	cr_assert(eq(int, drv_store_lease_take(lb, "b", "http://b:1", 5000, 2000, &l), 0));
	cr_assert(eq(i64, l.term, 2));
	cr_assert(eq(int, drv_store_begin(a), DRV_EPERM));
	drv_store_close(a);
	drv_store_close(la);
	drv_store_close(lb);
}

static int kobj_seen(const struct drv_store_kobj *o, void *cls)
{
	char *buf = cls;

	snprintf(buf + strlen(buf), 256 - strlen(buf), "%s %s/%s %s %s;", o->kind, o->ns, o->name,
		 o->owner, o->doc);
	return 0;
}

Test(store, kubernetes_objects_kept_replaced_and_deleted)
{
	struct drv_store *s = open_store();
	struct drv_store_kobj a = { "Secret", "default", "hf", "ana", "{\"v\":1}" };
	struct drv_store_kobj b = { "ConfigMap", "default", "cfg", "bo", "{}" };
	char buf[256] = "";

	cr_assert(eq(int, s->ops->put_kobj(s, &a), 0));
	cr_assert(eq(int, s->ops->put_kobj(s, &b), 0));
	a.doc = "{\"v\":2}";
	cr_assert(eq(int, s->ops->put_kobj(s, &a), 0));
	drv_store_close(s);
	s = open_store();
	cr_assert(eq(int, s->ops->load_kobjs(s, kobj_seen, buf), 0));
	cr_assert(eq(str, buf, "ConfigMap default/cfg bo {};Secret default/hf ana {\"v\":2};"));
	cr_assert(eq(int, s->ops->del_kobj(s, "Secret", "default", "hf"), 0));
	cr_assert(eq(int, s->ops->del_kobj(s, "Secret", "default", "hf"), DRV_ENOENT));
	buf[0] = 0;
	cr_assert(eq(int, s->ops->load_kobjs(s, kobj_seen, buf), 0));
	cr_assert(eq(str, buf, "ConfigMap default/cfg bo {};"));
	drv_store_close(s);
}
