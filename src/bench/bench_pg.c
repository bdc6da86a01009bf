/*
 * bench_pg.c: a PostgreSQL of the bench's own, for 'drover bench api
 * --store postgres': initdb and pg_ctl run as the postgres user through
 * runuser (as tests/integration/pglib.sh does), in a private directory
 * with a loopback port of its own, fsync and synchronous_commit on. A role
 * drover with a random password (scram-sha-256 over TCP) owns a database
 * drover; the password goes in a 0600 file, never in the URL.
 */
#include "bench_int.h"
#include "drover/common.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs argv as the postgres user (runuser), output appended to log; its exit status. */
static int as_postgres(char *const cmd[], const char *log)
{
	char *argv[16];
	int n = 0, st = 0;
	pid_t pid;

	argv[n++] = "runuser";
	argv[n++] = "-u";
	argv[n++] = "postgres";
	argv[n++] = "--";
	for (int i = 0; cmd[i] && n < 15; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		bench_child_output(log);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Why this machine cannot run it, or NULL. */
static const char *missing(const char *bin)
{
	static char why[600];
	char path[512];

	snprintf(path, sizeof(path), "%s/initdb", bin);
	if (access(path, X_OK)) {
		snprintf(why, sizeof(why), "needs PostgreSQL 15's initdb and pg_ctl in %s (env "
			 "DROVER_PG_BIN; scripts/install-deps installs postgresql-15)", bin);
		return why;
	}
	if (!getpwnam("postgres"))
		return "needs the postgres user (made by the postgresql-15 package)";
	if (geteuid() != 0)
		return "needs root to run initdb as the postgres user (runuser)";
	return NULL;
}

/* The role and the database, over the private socket as the superuser. */
static int make_role(struct bench_pg *pg, const char *password, char *err, size_t errsz)
{
	char conn[700], sql[300];
	PGconn *c;
	PGresult *r;
	int rc = 0;

	snprintf(conn, sizeof(conn), "host=%s port=%d user=postgres dbname=postgres", pg->dir,
		 pg->port);
	c = PQconnectdb(conn);
	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(err, errsz, "cannot connect as postgres: %s", PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE ROLE drover LOGIN PASSWORD '%s'", password);
	const char *steps[] = { sql, "CREATE DATABASE drover OWNER drover", NULL };
	for (int i = 0; rc == 0 && steps[i]; i++) {
		r = PQexec(c, steps[i]);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			snprintf(err, errsz, "%s: %s", i ? steps[i] : "CREATE ROLE drover",
				 PQresultErrorMessage(r));
			rc = -1;
		}
		PQclear(r);
	}
	PQfinish(c);
	return rc;
}

int bench_pg_start(struct bench_pg *pg, const char *tmp, char *err, size_t errsz)
{
	const char *bin = getenv("DROVER_PG_BIN") ? getenv("DROVER_PG_BIN")
						 : "/usr/lib/postgresql/15/bin";
	char initdb[512], data[600], log[700], conf[700], password[40];
	const char *why = missing(bin);
	struct passwd *pw;
	FILE *f;

	memset(pg, 0, sizeof(*pg));
	if (why) {
		snprintf(err, errsz, "%s", why);
		return DRV_EUNSUPP;
	}
	snprintf(pg->bin, sizeof(pg->bin), "%s", bin);
	/* its own directory: the bench's is root's (0700), where postgres cannot go */
	snprintf(pg->dir, sizeof(pg->dir), "/tmp/drover-bench-pg.XXXXXX");
	pw = getpwnam("postgres");
	if (!mkdtemp(pg->dir) || chown(pg->dir, pw->pw_uid, pw->pw_gid)) {
		snprintf(err, errsz, "%s: %s", pg->dir, strerror(errno));
		return DRV_EIO;
	}
	pg->port = bench_free_port();
	snprintf(initdb, sizeof(initdb), "%s/initdb", bin);
	snprintf(data, sizeof(data), "%s/data", pg->dir);
	snprintf(log, sizeof(log), "%s/initdb.log", tmp);
	{
		char *cmd[] = { initdb, "-D", data, "-U", "postgres", "--auth-local=trust",
				"--auth-host=scram-sha-256", "--no-sync", NULL };
		if (as_postgres(cmd, log)) {
			snprintf(err, errsz, "initdb failed (see %s)", log);
			return DRV_EIO;
		}
	}
	snprintf(conf, sizeof(conf), "%s/postgresql.conf", data);
	f = fopen(conf, "a");
	if (!f) {
		snprintf(err, errsz, "%s: %s", conf, strerror(errno));
		return DRV_EIO;
	}
	fprintf(f, "listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"
		   "max_connections = 200\nfsync = on\nsynchronous_commit = on\n", pg->port,
		pg->dir);
	fclose(f);
	if (bench_pg_ctl(pg, "start")) {
		snprintf(err, errsz, "pg_ctl start failed (see %s/server.log)", pg->dir);
		return DRV_EIO;
	}
	pg->running = true;
	srandom((unsigned)getpid() ^ (unsigned)pg->port);
	snprintf(password, sizeof(password), "bench-%08lx%08lx", random(), random());
	if (make_role(pg, password, err, errsz))
		return DRV_EIO;
	snprintf(pg->password_file, sizeof(pg->password_file), "%s/pg-password", tmp);
	f = fopen(pg->password_file, "w");
	if (!f)
		return DRV_EIO;
	fchmod(fileno(f), 0600);
	fprintf(f, "%s\n", password);
	fclose(f);
	snprintf(pg->url, sizeof(pg->url), "postgres://drover@127.0.0.1:%d/drover", pg->port);
	return 0;
}

int bench_pg_ctl(const struct bench_pg *pg, const char *what)
{
	char ctl[512], data[600], log[700];
	char *start[] = { ctl, "-D", data, "-l", log, "-w", "-t", "30", "start", NULL };
	char *stop[] = { ctl, "-D", data, "-m", "immediate", "-w", "stop", NULL };

	snprintf(ctl, sizeof(ctl), "%s/pg_ctl", pg->bin);
	snprintf(data, sizeof(data), "%s/data", pg->dir);
	snprintf(log, sizeof(log), "%s/server.log", pg->dir);
	return as_postgres(strcmp(what, "start") ? stop : start, "/dev/null");
}

void bench_pg_stop(struct bench_pg *pg)
{
	if (!pg->dir[0])
		return;
	if (pg->running)
		bench_pg_ctl(pg, "stop");
	pg->running = false;
	bench_remove_tree(pg->dir);
	pg->dir[0] = '\0';
}
