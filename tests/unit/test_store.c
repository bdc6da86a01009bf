/*
 * test_store.c: the store on real SQLite files: what is committed survives
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
#include <sys/wait.h>
#include <unistd.h>

#include "drover/store.h"

static char dir[256], path[300];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/drover-store-XXXXXX");
	cr_assert(ne(ptr, mkdtemp(dir), NULL));
	snprintf(path, sizeof(path), "%s/state.db", dir);
}

static void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(store, .init = setup, .fini = teardown);

static struct drv_store *open_store(void)
{
	struct drv_store *s = NULL;
	char err[512];

	cr_assert(eq(int, drv_store_open_sqlite(path, &s, err, sizeof(err)), 0), "%s", err);
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

		if (drv_store_open_sqlite(path, &c, err, sizeof(err)) < 0)
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
