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
 *   drover task-shim TASK_ID KEY DIR LEASE_FILE|- GRACE_MS CGROUP|- [OUTPUT_MAX] -- EXE ARGV0 ARG...
 *
 * The output cap: with OUTPUT_MAX > 0, each of the shim's stdout and
 * stderr that is a regular file (the agent's copies of the task's output;
 * not a Slurm batch step's own files, for which the task gets /dev/null
 * here) reaches the task through a pipe that the shim relays into the
 * file, writing at most OUTPUT_MAX bytes of the task's output and then
 * the line "[drover: output capped at N bytes ...]" once, dropping the
 * rest. So a task writing as fast as it can never puts a byte past the
 * cap on disk: the file is never longer than the cap and that line. (The
 * agent's once-a-second look, agent_tasks.c, then finds nothing to cut.)
 * The shim reads whenever the pipe has data and never waits on anything
 * else while it does, so a task blocks on a full pipe only while the
 * shim's write to the file takes.
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
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
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

/* One of the task's stdout and stderr, relayed under the output cap. */
struct relay {
	int in;                /* the pipe's read end; -1 once at its end (or none) */
	int wr;                /* its write end, the task's fd; -1 in the shim after the fork */
	int fd;                /* the file: the shim's own 1 or 2 */
	int64_t written;       /* bytes of the task's output in the file */
	bool capped;           /* the line is written; the rest is dropped */
};

struct shim {
	const char *task_id, *key, *dir, *lease, *cgroup;
	int64_t grace_ms;
	int64_t output_max;    /* 0: no relay */
	struct relay rel[2];   /* stdout, stderr */
	int sigfd;             /* SIGCHLD while relaying; -1 otherwise */
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
 * Slurm batch shell's signal, which only the shell gets). A signal to the
 * group that comes before the task exists (the agent stopping a task that
 * is just starting) is kept in early_sig and sent to the task once it is
 * there; the fork itself runs with every signal blocked, so one sent
 * after it is pending in the child, which resets every handler before it
 * unblocks them.
 */
static volatile pid_t fwd_pid;
static volatile sig_atomic_t early_sig;
static pid_t shim_pid;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (getpid() != shim_pid)
		return;
	if (si->si_code == SI_QUEUE && si->si_value.sival_int == DRV_SHIM_FORWARD) {
		if (fwd_pid > 0)
			kill(fwd_pid, sig);
		return;
	}
	if (fwd_pid <= 0)
		early_sig = sig;
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

/* Pipes for the shim's stdout and stderr that are regular files, when
 * there is a cap. A stream without one goes to the task as it is. */
static void relays_open(struct shim *sh)
{
	sh->sigfd = -1;
	for (int i = 0; i < 2; i++) {
		struct relay *r = &sh->rel[i];
		struct stat st;
		int p[2];

		r->in = r->wr = -1;
		r->fd = i + 1;
		if (sh->output_max <= 0 || fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    pipe2(p, O_CLOEXEC) < 0)
			continue;
		r->in = p[0];
		r->wr = p[1];
		r->written = st.st_size;
		r->capped = st.st_size > sh->output_max;
	}
	if (sh->rel[0].in >= 0 || sh->rel[1].in >= 0) {
		sigset_t chld;

		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		sh->sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	}
}

/* In the task, before execve: the pipes become its stdout and stderr. */
static void relays_child(struct shim *sh)
{
	for (int i = 0; i < 2; i++)
		if (sh->rel[i].wr >= 0 && dup2(sh->rel[i].wr, sh->rel[i].fd) < 0)
			_exit(127);
}

/* In the shim, after the fork: only the task writes to the pipes. */
static void relays_parent(struct shim *sh)
{
	for (int i = 0; i < 2; i++) {
		struct relay *r = &sh->rel[i];

		if (r->wr >= 0)
			close(r->wr);
		r->wr = -1;
		if (r->in >= 0)
			fcntl(r->in, F_SETFL, fcntl(r->in, F_GETFL) | O_NONBLOCK);
	}
}


/* n bytes of the task's output: into the file while under the cap; past
 * it, the line saying so (the agent's cut writes the same one). */
static void relay_put(struct shim *sh, struct relay *r, const char *p, size_t n)
{
	int64_t room = sh->output_max - r->written;
	size_t k = room > 0 ? (size_t)DRV_MIN((int64_t)n, room) : 0;
	char mark[160];
	int m;

	if (r->capped)
		return;
	(void)drv_fd_write_all(r->fd, p, k);   /* a full disk: the output is lost, the task goes on */
	r->written += (int64_t)k;
	if (k == n)
		return;
	m = snprintf(mark, sizeof(mark), "\n[drover: output capped at %lld bytes "
		     "(task_output_max_bytes); later output is dropped]\n",
		     (long long)sh->output_max);
	(void)drv_fd_write_all(r->fd, mark, (size_t)m);
	r->capped = true;
}

/* Reads what the pipe holds (at most rounds reads); closes it at its end. */
static void relay_read(struct shim *sh, struct relay *r, int rounds)
{
	char buf[65536];

	while (r->in >= 0 && rounds-- > 0) {
		ssize_t n = read(r->in, buf, sizeof(buf));

		if (n > 0) {
			relay_put(sh, r, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(r->in);   /* its end (every writer gone), or an error */
		r->in = -1;
	}
}

/* Sleeps up to ms for the task's exit (SIGCHLD) or its output, relaying
 * what comes; false when there is nothing to relay (the caller waits). */
static bool relays_wait(struct shim *sh, int ms)
{
	struct pollfd pf[3];
	int n = 0;

	if (sh->sigfd < 0 || (sh->rel[0].in < 0 && sh->rel[1].in < 0))
		return false;
	pf[n++] = (struct pollfd){ .fd = sh->sigfd, .events = POLLIN };
	for (int i = 0; i < 2; i++)
		if (sh->rel[i].in >= 0)
			pf[n++] = (struct pollfd){ .fd = sh->rel[i].in, .events = POLLIN };
	if (poll(pf, (nfds_t)n, ms) <= 0)
		return true;
	if (pf[0].revents) {
		struct signalfd_siginfo si;

		while (read(sh->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
	}
	for (int i = 0; i < 2; i++)
		relay_read(sh, &sh->rel[i], 16);
	return true;
}

/* The task is over: what it left in the pipes goes to the files (a
 * process it left behind may write on; that is cut short, and killed with
 * the group right after). */
static void relays_close(struct shim *sh)
{
	for (int i = 0; i < 2; i++) {
		relay_read(sh, &sh->rel[i], 256);
		if (sh->rel[i].in >= 0)
			close(sh->rel[i].in);
		if (sh->rel[i].wr >= 0)
			close(sh->rel[i].wr);
		sh->rel[i].in = sh->rel[i].wr = -1;
	}
	if (sh->sigfd >= 0)
		close(sh->sigfd);
	sh->sigfd = -1;
}

/* Starts the task; a pipe tells whether execve worked. -1 after recording why not. */
static int start_child(struct shim *sh, char **argv)
{
	int pfd[2], err = 0;
	ssize_t n;

	sigset_t all, old;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	sh->child = fork();
	if (sh->child == 0) {
		struct sigaction dfl;
		sigset_t none;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		for (int sig = 1; sig < NSIG; sig++)
			sigaction(sig, &dfl, NULL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(pfd[0]);
		relays_child(sh);
		execve(argv[0], argv + 1, environ);
		err = errno;
		n = write(pfd[1], &err, sizeof(err));
		_exit(127);
	}
	close(pfd[1]);
	fwd_pid = sh->child;
	if (sh->child > 0 && early_sig)
		kill(sh->child, early_sig);
	sigprocmask(SIG_SETMASK, &old, NULL);
	relays_parent(sh);
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

/* Waits for the task, enforcing the lease (every second, every 100 ms
 * once stopping) and relaying its output meanwhile; fills sh->end. */
static void wait_child(struct shim *sh)
{
	sigset_t chld;
	struct rusage ru = { 0 };
	int64_t next = 0;
	int st;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t r = wait4(sh->child, &st, WNOHANG, &ru);
		int64_t now, ms;
		struct timespec ts;

		if (r == sh->child || (r < 0 && errno != EINTR))
			break;
		now = drv_boottime_ms();
		if (now >= next) {
			enforce_lease(sh, now);
			next = now + (sh->stopping ? 100 : 1000);
		}
		ms = next - now;
		ts = (struct timespec){ ms / 1000, ms % 1000 * 1000000 };
		if (!relays_wait(sh, (int)ms))
			sigtimedwait(&chld, NULL, &ts);
	}
	sh->end.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	sh->end.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	sh->end.oom_killed = drv_cgroup_oom_kills(sh->cgroup) > 0 || oom_seen(sh->oom_efd);
	read_reason(sh);
	rusage_into(&sh->end, &ru);
}

/* drover-shim beside this binary, else drover itself: drover's start
 * loads some forty shared libraries (libcurl's, libpq's), milliseconds of
 * CPU for each task of a busy node; drover-shim loads libc only. */
const char *drv_agent_shim_exe(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return "/proc/self/exe";
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return "/proc/self/exe";
	*slash = '\0';
	if ((size_t)snprintf(path, sizeof(path), "%s/drover-shim", exe) >= sizeof(path) ||
	    access(path, X_OK))
		return "/proc/self/exe";
	return path;
}

static int shim_usage(void)
{
	fprintf(stderr, "drover task-shim: internal: run by the agent as\n"
		"  drover task-shim TASK_ID KEY DIR LEASE_FILE|- GRACE_MS CGROUP|- [OUTPUT_MAX] -- "
		"EXE ARGV0 [ARG...]\n");
	return DRV_EXIT_USAGE;
}

int drv_task_shim_main(int argc, char **argv)
{
	struct shim sh;
	sigset_t chld;
	int at;   /* where "--" is: OUTPUT_MAX before it is optional */

	at = argc >= 10 && !strcmp(argv[7], "--") ? 7 : argc >= 11 && !strcmp(argv[8], "--") ? 8 : 0;
	if (!at)
		return shim_usage();
	memset(&sh, 0, sizeof(sh));
	sh.output_max = at == 8 ? atoll(argv[7]) : 0;
	sh.task_id = argv[1];
	sh.key = argv[2];
	sh.dir = argv[3];
	sh.lease = argv[4];
	sh.grace_ms = atoll(argv[5]);
	sh.cgroup = strcmp(argv[6], "-") ? argv[6] : "";
	drv_shim_paths(sh.dir, sh.task_id, sh.key, sh.status, sh.pidfile, sizeof(sh.status));
	/* the agent's SIGTERM is for the task, and any other signal to the
	 * group; SIGCHLD is waited for */
	shim_pid = getpid();
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
	relays_open(&sh);
	if (start_child(&sh, argv + at + 1) == 0)
		wait_child(&sh);
	relays_close(&sh);
	run_cleanup(&sh);
	write_status(sh.status, &sh.end);
	/* nothing the task started outlives it (the shim goes too) */
	kill(0, SIGKILL);
	return sh.end.exit_code >= 0 ? sh.end.exit_code : 128 + sh.end.signal;
}
