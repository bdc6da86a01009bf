/*
 * shim.c: `drover task-shim`, the small parent every task runs under (as
 * conmon is for podman). The agent's launcher starts it in the task's
 * session, cgroup and user, with the task's files and environment; the
 * shim starts the task, waits for it and writes how it ended (exit code,
 * signal, OOM flag, a reason) to the task's status file with fsync before
 * it exits. It outlives the agent: a new agent adopts the running shims
 * its journal names and reads the status files of those that ended, so a
 * task survives an agent restart and its end is reported exactly once.
 *
 * The shim also enforces the agent's lease by itself, so that a dead or
 * stopped agent still fences: the agent writes a deadline (CLOCK_BOOTTIME,
 * milliseconds) to its lease file after each successful exchange with the
 * controller; a shim that finds the deadline passed sends its task
 * SIGTERM, then SIGKILL after the grace it was given.
 *
 * The shim is the session and process-group leader, so the agent's
 * kill(-pgid) reaches the shim and the task alike: the shim ignores
 * SIGTERM (the task gets it), and dies with the task on SIGKILL (the
 * agent then reports the signal itself). Once the task is over the shim
 * kills what the task left in its group, itself last.
 *
 *   drover task-shim TASK_ID KEY DIR LEASE_FILE|- GRACE_MS CGROUP|- -- EXE ARGV0 ARG...
 *
 * KEY is "EPOCH-LAUNCH", LAUNCH unique to this launch (agent_journal.c):
 * its files are DIR/TASK_ID.KEY.pid and DIR/TASK_ID.KEY.status.
 *
 * Containers (podman.c) add two files the shim reads: DIR/TASK_ID.KEY.reason,
 * why the task's script gave up (an image pull), into the status; and
 * DIR/TASK_ID.KEY.cleanup, a script run once the task is over (and before
 * the lease's SIGKILL), which removes the container: SIGKILL to podman
 * leaves the container running, and no agent may be there to remove it.
 *
 * OOM kills: on cgroup v1 the kill is counted in the memory cgroup of the
 * process killed, which for a container is the container's own cgroup
 * below the task's (gone once the container is removed); the shim asks the
 * task's cgroup for an OOM notification (cgroup.event_control on
 * memory.oom_control, which fires for an OOM under the task's limit
 * whichever cgroup below it the victim was in).
 */
#include "drover/agent.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void drv_shim_paths(const char *dir, const char *task_id, const char *key, char *status,
		    char *pidfile, size_t sz)
{
	snprintf(status, sz, "%s/%s.%s.status", dir, task_id, key);
	snprintf(pidfile, sz, "%s/%s.%s.pid", dir, task_id, key);
}

int64_t drv_boottime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t drv_lease_read(const char *path)
{
	char buf[64];
	long long v = 0;
	ssize_t n;
	int fd;

	if (!path || !strcmp(path, "-"))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%lld", &v) == 1 && v > 0 ? v : 0;
}

/* "EXIT SIGNAL OOM FENCED\nREASON\nCPU_US MAXRSS_BYTES\n", durably: the one record of how the
 * task ended when no agent is there to see it. */
static int put_status(FILE *f, void *arg)
{
	const struct drv_proc *p = arg;

	fprintf(f, "%d %d %d %d\n%s\n%lld %lld\n", p->exit_code, p->signal, p->oom_killed ? 1 : 0,
		p->fenced ? 1 : 0, p->error, (long long)p->cpu_us, (long long)p->mem_peak_bytes);
	return 0;
}

static void write_status(const char *path, const struct drv_proc *p)
{
	if (drv_file_write_durable(path, 0600, put_status, (void *)p) < 0)
		fprintf(stderr, "drover task-shim: cannot write %s: %s\n", path, strerror(errno));
}

int drv_shim_read_status(const char *path, struct drv_proc *p)
{
	char line[600];
	int ec, sig, oom, fenced = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return DRV_ENOENT;
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "%d %d %d %d", &ec, &sig, &oom, &fenced) < 3) {
		fclose(f);
		return DRV_EINVAL;
	}
	p->exit_code = ec;
	p->signal = sig;
	p->oom_killed = oom != 0;
	p->fenced = fenced != 0;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			snprintf(p->error, sizeof(p->error), "%s", line);
	}
	if (fgets(line, sizeof(line), f)) {   /* an older shim's file ends before */
		long long cpu, rss;

		if (sscanf(line, "%lld %lld", &cpu, &rss) == 2) {
			p->cpu_us = DRV_MAX(p->cpu_us, cpu);
			p->mem_peak_bytes = DRV_MAX(p->mem_peak_bytes, rss);
		}
	}
	fclose(f);
	return 0;
}

struct shim {
	const char *task_id, *key, *dir, *lease, *cgroup;
	int64_t grace_ms;
	char status[PATH_MAX], pidfile[PATH_MAX];
	pid_t child;
	bool stopping;
	int64_t kill_at;
	int64_t deadline;      /* the last lease deadline read; 0 none yet */
	struct drv_proc end;   /* how the task ended, as the status file says it */
	int oom_efd;           /* v1: the task cgroup's OOM notification; -1 none */
	bool cleaned;
};

/* cgroup v1: an eventfd the kernel signals on an OOM in the task's cgroup
 * (or below it); -1 where that is not offered (v2 counts in memory.events). */
static int oom_watch(const char *cgroup)
{
	char p[PATH_MAX + 32], line[64];
	int efd, ofd, cfd, n;

	if (!cgroup || !*cgroup)
		return -1;
	snprintf(p, sizeof(p), "%s/memory.oom_control", cgroup);
	ofd = open(p, O_RDONLY | O_CLOEXEC);
	if (ofd < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/cgroup.event_control", cgroup);
	cfd = open(p, O_WRONLY | O_CLOEXEC);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	n = snprintf(line, sizeof(line), "%d %d", efd, ofd);
	if (cfd < 0 || efd < 0 || write(cfd, line, (size_t)n) != n) {
		if (efd >= 0)
			close(efd);
		efd = -1;
	}
	if (cfd >= 0)
		close(cfd);
	close(ofd);
	return efd;
}

static bool oom_seen(int efd)
{
	eventfd_t v = 0;

	return efd >= 0 && eventfd_read(efd, &v) == 0 && v > 0;
}

static void side_path(const struct shim *sh, const char *what, char *out, size_t sz)
{
	snprintf(out, sz, "%s/%s.%s.%s", sh->dir, sh->task_id, sh->key, what);
}

/* Runs DIR/TASK.KEY.cleanup (a container's removal) once, if there is one. */
static void run_cleanup(struct shim *sh)
{
	char p[PATH_MAX];
	pid_t pid;

	if (sh->cleaned)
		return;
	sh->cleaned = true;
	side_path(sh, "cleanup", p, sizeof(p));
	if (access(p, R_OK) != 0)
		return;
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);   /* not killed with the task's group */
		execl("/bin/sh", "sh", p, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* The reason the task's script left (DIR/TASK.KEY.reason), if any. */
static void read_reason(struct shim *sh)
{
	char p[PATH_MAX], line[512];
	FILE *f;

	side_path(sh, "reason", p, sizeof(p));
	f = fopen(p, "re");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) && !sh->end.error[0]) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(sh->end.error, sizeof(sh->end.error), "%s", line);
	}
	fclose(f);
}

/*
 * Claims this launch: the pid file is created exclusively. A new agent
 * that found a journaled start with no pid file claims it the same way
 * ("void") to know for sure the task never ran; a shim that comes after
 * that (its start was delayed past the agent's death) must not run it.
 */
static int claim(const struct shim *sh)
{
	char buf[24];
	int fd = open(sh->pidfile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	bool ok;

	if (fd < 0)
		return -1;
	ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	return ok ? 0 : -1;
}

/*
 * Signals: the shim ignores what reaches its whole group (the agent's
 * kill(-pgid) is for the task), but forwards to the task alone what the
 * agent queues to the shim with DRV_SHIM_FORWARD (drv_proc_signal: a
 * Slurm batch shell's signal, which only the shell gets). fwd_pid is set
 * in the shim after the fork, so a handler run in the child before its
 * execve forwards nothing.
 */
static volatile pid_t fwd_pid;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (si->si_code == SI_QUEUE && si->si_value.sival_int == DRV_SHIM_FORWARD && fwd_pid > 0)
		kill(fwd_pid, sig);
}

static void shim_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD || sig == SIGSEGV ||
		    sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT ||
		    sig == SIGTRAP || sig == SIGSYS || sig == SIGCONT)
			continue;
		sigaction(sig, &sa, NULL);
	}
}

/* Starts the task; a pipe tells whether execve worked. -1 after recording why not. */
static int start_child(struct shim *sh, char **argv)
{
	int pfd[2], err = 0;
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	sh->child = fork();
	if (sh->child == 0) {
		sigset_t none;

		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(pfd[0]);
		execve(argv[0], argv + 1, environ);
		err = errno;
		n = write(pfd[1], &err, sizeof(err));
		_exit(127);
	}
	close(pfd[1]);
	fwd_pid = sh->child;
	n = sh->child < 0 ? 0 : read(pfd[0], &err, sizeof(err));
	close(pfd[0]);
	if (sh->child < 0 || n == (ssize_t)sizeof(err)) {
		sh->end.exit_code = 127;
		snprintf(sh->end.error, sizeof(sh->end.error), "cannot execute %s: %s", argv[0],
			 strerror(sh->child < 0 ? errno : err));
		if (sh->child > 0)
			waitpid(sh->child, NULL, 0);
		return -1;
	}
	return 0;
}

/* Past the lease: SIGTERM now, SIGKILL after the grace (the status is
 * written first: SIGKILL to the group ends the shim too). */
static void enforce_lease(struct shim *sh, int64_t now)
{
	int64_t deadline;

	if (sh->stopping) {
		if (now < sh->kill_at)
			return;
		sh->end.exit_code = -1;
		sh->end.signal = SIGKILL;
		sh->end.oom_killed = oom_seen(sh->oom_efd);
		write_status(sh->status, &sh->end);
		run_cleanup(sh);
		kill(0, SIGKILL);
		return;
	}
	/* a lease once seen holds even if its file goes (a wiped state
	 * directory must not make the task immortal) */
	deadline = drv_lease_read(sh->lease);
	if (deadline)
		sh->deadline = deadline;
	deadline = sh->deadline;
	if (!deadline || now <= deadline)
		return;
	sh->stopping = true;
	sh->end.fenced = true;
	sh->kill_at = now + sh->grace_ms;
	snprintf(sh->end.error, sizeof(sh->end.error), "the agent's lease ran out %lld ms ago (no "
		 "exchange with the controller): stopped so that a restart elsewhere never "
		 "overlaps it", (long long)(now - deadline));
	kill(0, SIGTERM);
	kill(0, SIGCONT);
}

/* Waits for the task, enforcing the lease; fills sh->end. */
static void wait_child(struct shim *sh)
{
	sigset_t chld;
	struct rusage ru = { 0 };
	int st;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		struct timespec ts = { 1, 0 };
		pid_t r = wait4(sh->child, &st, WNOHANG, &ru);

		if (r == sh->child || (r < 0 && errno != EINTR))
			break;
		enforce_lease(sh, drv_boottime_ms());
		if (sh->stopping)
			ts = (struct timespec){ 0, 100 * 1000000 };
		sigtimedwait(&chld, NULL, &ts);
	}
	sh->end.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	sh->end.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	sh->end.oom_killed = drv_cgroup_oom_kills(sh->cgroup) > 0 || oom_seen(sh->oom_efd);
	read_reason(sh);
	rusage_into(&sh->end, &ru);
}

static int shim_usage(void)
{
	fprintf(stderr, "drover task-shim: internal: run by the agent as\n"
		"  drover task-shim TASK_ID KEY DIR LEASE_FILE|- GRACE_MS CGROUP|- -- EXE ARGV0 "
		"[ARG...]\n");
	return DRV_EXIT_USAGE;
}

int drv_task_shim_main(int argc, char **argv)
{
	struct shim sh;
	sigset_t chld;

	if (argc < 10 || strcmp(argv[7], "--"))
		return shim_usage();
	memset(&sh, 0, sizeof(sh));
	sh.task_id = argv[1];
	sh.key = argv[2];
	sh.dir = argv[3];
	sh.lease = argv[4];
	sh.grace_ms = atoll(argv[5]);
	sh.cgroup = strcmp(argv[6], "-") ? argv[6] : "";
	drv_shim_paths(sh.dir, sh.task_id, sh.key, sh.status, sh.pidfile, sizeof(sh.status));
	/* the agent's SIGTERM is for the task, and any other signal to the
	 * group; SIGCHLD is waited for */
	shim_signals();
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	if (claim(&sh) < 0) {
		fprintf(stderr, "drover task-shim: %s: %s; not starting task %s\n", sh.pidfile,
			errno == EEXIST ? "voided by a newer agent" : strerror(errno), sh.task_id);
		return DRV_EXIT_FAIL;
	}
	sh.oom_efd = oom_watch(sh.cgroup);
	if (start_child(&sh, argv + 8) == 0)
		wait_child(&sh);
	run_cleanup(&sh);
	write_status(sh.status, &sh.end);
	/* nothing the task started outlives it (the shim goes too) */
	kill(0, SIGKILL);
	return sh.end.exit_code >= 0 ? sh.end.exit_code : 128 + sh.end.signal;
}
