/*
 * bench_int.h: what the benchmarks in src/bench/ share and nothing else.
 */
#ifndef DROVER_BENCH_INT_H
#define DROVER_BENCH_INT_H

/*
 * A loopback TCP port free at the time of the call (bound to port 0, read
 * back, closed), for a server the bench is about to start; 0 if none could
 * be had. Another process may take it in between: the starts that follow
 * fail loudly if so.
 */
int bench_free_port(void);

/* Starts argv (argv[0] a path) in a process group of its own, stdin from
 * /dev/null, stdout and stderr appended to log; the pid, or -1. */
#include <sys/types.h>
pid_t bench_spawn(char *const argv[], const char *log);

/*
 * restart_1m_jobs_s (bench_restart.c): a state of njobs (1% pending) written
 * under tmp (SQLite), or into the PostgreSQL database url (empty; pw its
 * password file or NULL) when url is not NULL, then the seconds from
 * SIGKILL of the server on it until /healthz is 200 and the newest job
 * reads back. A new object: {"seconds", ...} or {"error"}.
 */
#include <jansson.h>
json_t *bench_restart(const char *self, const char *tmp, int njobs, const char *url,
		      const char *pw);

/* CPU time of the calling thread, in seconds: what a step cost, whatever
 * else runs on the machine. */
double bench_cpu_s(void);

/* A process's threads, open files and resident memory (kB), from /proc;
 * -1 each when it is gone. */
struct bench_counts {
	long threads, fds, rss_kb;
};
void bench_proc_counts(pid_t pid, struct bench_counts *c);

/* utime + stime of pid in clock ticks (sysconf(_SC_CLK_TCK) a second), from
 * /proc/PID/stat; -1 when it is gone. */
long long bench_cpu_ticks(pid_t pid);

/* In a forked child before exec: stdout and stderr appended to log (made
 * 0644 when missing); left as they were when log cannot be opened. */
void bench_child_output(const char *log);

/* RLIMIT_NOFILE raised to its hard limit (simulated agents by the
 * thousand each hold a connection). */
void bench_raise_nofile(void);

/* A libpq connection to url (a libpq URL or conninfo), its password read
 * from pw_file (NULL: libpq's PGPASSFILE or ~/.pgpass); NULL with the
 * reason in err when it cannot connect. Caller PQfinish()es it. */
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
PGconn *bench_pg_connect(const char *url, const char *pw_file, char *err, size_t errsz);

/*
 * A PostgreSQL of the bench's own (bench_pg.c): initdb and pg_ctl as the
 * postgres user through runuser, in /tmp/drover-bench-pg.XXXXXX, on a
 * loopback port of its own; a role and database drover, its password in
 * tmp/pg-password (0600). start: 0, or DRV_EUNSUPP with err saying what
 * this machine lacks (root, the postgres user, PostgreSQL 15 in
 * DROVER_PG_BIN or /usr/lib/postgresql/15/bin), DRV_EIO when it failed.
 * ctl: pg_ctl "start" or "stop" (-m immediate); its exit status.
 * stop: stops it and removes its directory.
 */
struct bench_pg {
	char bin[400], dir[64], url[128], password_file[400];
	int port;
	bool running;
};
int bench_pg_start(struct bench_pg *pg, const char *tmp, char *err, size_t errsz);
int bench_pg_ctl(const struct bench_pg *pg, const char *what);
void bench_pg_stop(struct bench_pg *pg);

/* rm -rf dir, waited for. */
void bench_remove_tree(const char *dir);

#endif
