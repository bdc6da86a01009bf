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
 * under tmp, then the seconds from SIGKILL of the server on it until
 * /healthz is 200 and the newest job reads back. A new object:
 * {"seconds", ...} or {"error"}.
 */
#include <jansson.h>
json_t *bench_restart(const char *self, const char *tmp, int njobs);

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

/* RLIMIT_NOFILE raised to its hard limit (simulated agents by the
 * thousand each hold a connection). */
void bench_raise_nofile(void);

/* rm -rf dir, waited for. */
void bench_remove_tree(const char *dir);

#endif
