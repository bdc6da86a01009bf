/*
 * agent_journal.c: what the agent started and what ended, durably, so that
 * a task is started at most once per (task_id, epoch) and its end is
 * reported exactly once across agent crashes and restarts.
 *
 * STATE/journal (mode 0600) holds one line per event:
 *   start TASK_ID EPOCH LAUNCH JOB_ID GRACE_MS DEADLINE_MS STARTED_MS GPUS OUTPUT_MAX
 *         GPU_MILLI
 *     written and fdatasync'd before the task's shim is started
 *     (DEADLINE_MS: the time limit on CLOCK_MONOTONIC, 0 none; STARTED_MS
 *     the same clock, which is the machine's, not the process's; GPUS
 *     "0,1" or "-"; LAUNCH unique to this launch: the shim's files are
 *     named by "EPOCH-LAUNCH"; OUTPUT_MAX the output cap in bytes,
 *     task_output_max_bytes, 0 none, so an adopted task stays capped; a
 *     line of an older agent without it reads as 0; GPU_MILLI its share
 *     of each of its GPUs, 1000 whole, so that an adopted task's metrics
 *     and usage split a shared GPU as before the restart; a line without
 *     it reads as 1000 until the controller's list says otherwise);
 *   end TASK_ID EPOCH
 *     once the controller has acknowledged the task's end (not synced:
 *     lost, it costs one more report, which the controller ignores).
 * Each task's shim writes its pid file when it starts and its status file
 * (fsync'd) when the task ends (src/agent/shim.c). A new agent reads the
 * journal before it registers; for each start without an end:
 *   - a status file: the task ended meanwhile; its end is reported;
 *   - a live shim (the pid file's process, its command line naming the
 *     task and epoch): adopted, watched through a pidfd like a child;
 *   - a pid file and no shim: it was killed with its task (signal 9);
 *   - neither: the agent died between the record and the start (or the
 *     shim is about to write it). The new agent creates the pid file
 *     itself, exclusively, saying "void"; a shim that comes later finds it
 *     and runs nothing. So the task certainly never ran under this launch:
 *     the record is dropped, and the task starts afresh (a new launch) if
 *     the controller still lists it.
 * The journal is rewritten with only the live starts at load, and again
 * when ends outnumber them.
 */
#include "drover/clock.h"
#include "drover/fsutil.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field 22 of /proc/PID/stat: when the process started (clock ticks since
 * boot); 0 when it is gone. With the pid it names a process for good. */
unsigned long long agent_proc_starttime(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	for (i = 2; p && i < 22; i++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p + 1, "%llu", &v) != 1)
		v = 0;
	return v;
}

static void journal_path(const struct drv_agent *a, char *out, size_t n)
{
	snprintf(out, n, "%s/journal", a->state_dir);
}

static void gpus_text(const struct task *t, char *buf, size_t n)
{
	size_t len = 0;

	snprintf(buf, n, "-");
	for (int k = 0; k < t->ngpus && len < n; k++)
		len += (size_t)snprintf(buf + len, n - len, "%s%d", k ? "," : "", t->gpus[k]);
}

static void start_line(const struct task *t, char *line, size_t n)
{
	char gpus[DRV_GPU_MAX * 4 + 2];

	gpus_text(t, gpus, sizeof(gpus));
	snprintf(line, n, "start %s %lld %lld %s %lld %lld %lld %s %lld %d\n", t->id,
		 (long long)t->epoch, (long long)t->launch, t->job_id, (long long)t->grace_ms,
		 (long long)t->deadline_ms, (long long)t->started_ms, gpus,
		 (long long)t->output_max, (int)t->gpu_milli);
}

static int append(struct drv_agent *a, const char *line, bool sync)
{
	size_t len = strlen(line);

	if (a->journal_fd < 0) {
		errno = EBADF;
		return DRV_EIO;
	}
	if (write(a->journal_fd, line, len) != (ssize_t)len || (sync && fdatasync(a->journal_fd)))
		return DRV_EIO;
	a->journal_lines++;
	return 0;
}

int agent_journal_start(struct drv_agent *a, struct task *t)
{
	char line[512];
	int rc;

	t->started_ms = drv_mono_ms();
	t->launch = drv_mono_us();
	snprintf(t->key, sizeof(t->key), "%lld-%lld", (long long)t->epoch, (long long)t->launch);
	start_line(t, line, sizeof(line));
	rc = append(a, line, true);
	if (rc == 0)
		t->journaled = true;
	return rc;
}

/* --- rewriting ---------------------------------------------------------- */

static int put_live(FILE *f, void *arg)
{
	const struct drv_agent *a = arg;
	char line[512];

	for (size_t k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];

		if (t->journaled && !t->end_journaled) {
			start_line(t, line, sizeof(line));
			fputs(line, f);
		}
	}
	return 0;
}

/* Rewrites the journal with the live starts only and reopens it. */
static int journal_rewrite(struct drv_agent *a)
{
	char path[PATH_MAX];
	int rc;

	journal_path(a, path, sizeof(path));
	rc = drv_file_write_durable(path, 0600, put_live, a);
	if (rc < 0) {
		drv_log(&a->log, "cannot rewrite %s: %s", path, strerror(errno));
		return rc;
	}
	if (a->journal_fd >= 0)
		close(a->journal_fd);
	a->journal_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	a->journal_lines = 0;
	for (size_t k = 0; k < a->ntasks; k++)
		a->journal_lines += a->tasks[k]->journaled && !a->tasks[k]->end_journaled;
	return a->journal_fd < 0 ? DRV_EIO : 0;
}

void agent_journal_end(struct drv_agent *a, struct task *t)
{
	char line[128];
	size_t live = 0;

	if (!t->journaled || t->end_journaled || t->state == T_RUNNING)
		return;
	snprintf(line, sizeof(line), "end %s %lld\n", t->id, (long long)t->epoch);
	if (append(a, line, false) < 0)
		drv_log(&a->log, "cannot write to the journal: %s", strerror(errno));
	t->end_journaled = true;
	if (a->journal_lines < 1024)
		return;
	for (size_t k = 0; k < a->ntasks; k++)
		live += a->tasks[k]->journaled && !a->tasks[k]->end_journaled;
	if (a->journal_lines > 4 * live)
		journal_rewrite(a);
}

/* --- loading and adopting ------------------------------------------------ */

/* Parses "start ..." into a new task record (not yet in the table). */
static struct task *parse_start(struct drv_agent *a, const char *line)
{
	char id[64], job[32], gpus[DRV_GPU_MAX * 4 + 2];
	long long epoch, launch, grace, deadline, started, output_max = 0, milli = 1000;
	struct task *t;
	char *p, *end;
	int n;

	_Static_assert(sizeof(gpus) == 257 + 1, "the %257s below fills gpus");
	n = sscanf(line, "start %63s %lld %lld %31s %lld %lld %lld %257s %lld %lld", id, &epoch,
		   &launch, job, &grace, &deadline, &started, gpus, &output_max, &milli);
	if (n < 8 || !agent_valid_task_id(id))
		return NULL;
	t = drv_calloc(1, sizeof(*t));
	t->use.cpu_us = t->use.mem_max_bytes = -1;
	t->gpu_milli = agent_share_milli(milli);
	t->proc.pidfd = -1;
	t->pty_master = -1;   /* a terminal does not outlive the agent that held it */
	t->proc.exit_code = -1;
	snprintf(t->id, sizeof(t->id), "%s", id);
	snprintf(t->job_id, sizeof(t->job_id), "%s", job);
	snprintf(t->dir, sizeof(t->dir), "%s/tasks/%s", a->state_dir, id);
	t->epoch = epoch;
	t->launch = launch;
	snprintf(t->key, sizeof(t->key), "%lld-%lld", epoch, launch);
	t->grace_ms = grace;
	t->deadline_ms = deadline;
	t->started_ms = started;
	t->output_max = output_max > 0 ? output_max : 0;
	t->journaled = true;
	for (p = gpus; *p && *p != '-' && t->ngpus < DRV_GPU_MAX; p = *end ? end + 1 : end) {
		long g = strtol(p, &end, 10);

		if (end == p || g < 0 || g >= a->gpus.ngpus)
			break;
		t->gpus[t->ngpus++] = (int)g;
	}
	return t;
}

/* The pid in a shim's pid file: 0 when there is none, -1 when it says
 * "void", -2 when it says nothing a shim writes. The shim writes its pid
 * just after creating the file: an empty one is read again for a while. */
static pid_t read_pidfile(const char *path)
{
	for (int tries = 0; tries < 50; tries++) {
		char *buf = NULL;
		size_t len = 0;
		long v = 0;
		int rc = drv_file_read(path, 64, &buf, &len);

		if (rc < 0 && errno == ENOENT)
			return 0;
		if (rc == 0 && len)
			v = !strncmp(buf, "void", 4) ? -1 : strtol(buf, NULL, 10);
		drv_free(buf);
		if (rc == 0 && len)
			return v == -1 || v > 1 ? (pid_t)v : -2;
		usleep(20000);
	}
	return -2;
}

/* Claims a launch whose shim never wrote its pid file: "void", created
 * exclusively, so that a late shim runs nothing. Then the pid file's
 * pid: -1 (void), or a shim's that won the race. */
static pid_t void_launch(const char *pidfile)
{
	int fd = open(pidfile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ssize_t n;

	if (fd < 0)
		return errno == EEXIST ? read_pidfile(pidfile) : -2;
	n = write(fd, "void\n", 5);
	close(fd);
	(void)n;
	return -1;
}

/* Whether pid is the shim of (t, epoch): its command line says so. The
 * cgroup it was given goes to cgroup. */
static bool is_shim_of(pid_t pid, const struct task *t, char *cgroup, size_t n)
{
	char path[64], *buf = NULL, *arg[8] = { 0 };
	size_t len, k = 0;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (drv_file_read(path, 1 << 16, &buf, &len) < 0)
		return false;
	for (size_t off = 0; off < len && k < 8; off += strlen(buf + off) + 1)
		arg[k++] = buf + off;
	ok = k == 8 && !strcmp(arg[1], "task-shim") && !strcmp(arg[2], t->id) &&
	     !strcmp(arg[3], t->key);
	if (ok)
		snprintf(cgroup, n, "%s", strcmp(arg[7], "-") ? arg[7] : "");
	drv_free(buf);
	return ok;
}

/* The task ended while no agent watched: its status file says how. */
static void ended_meanwhile(struct drv_agent *a, struct task *t)
{
	t->state = T_EXITED;
	t->proc.state = DRV_PROC_EXITED;
	t->rep_end = true;
	snprintf(t->reason, sizeof(t->reason), "%s", t->proc.error);
	drv_log(&a->log, "task %s (epoch %lld) ended while the agent was away: exit code %d, "
		"signal %d%s%s", t->id, (long long)t->epoch, t->proc.exit_code, t->proc.signal,
		t->reason[0] ? ": " : "", t->reason);
}

/* Neither running nor recorded as ended: killed with its task. */
static void lost(struct drv_agent *a, struct task *t)
{
	t->rep_end = true;
	t->state = T_EXITED;
	t->proc.state = DRV_PROC_EXITED;
	t->proc.signal = SIGKILL;
	snprintf(t->reason, sizeof(t->reason), "the task and its shim were killed while the agent "
		 "was away (no exit status recorded)");
	drv_log(&a->log, "task %s (epoch %lld): %s", t->id, (long long)t->epoch, t->reason);
}

/* What became of the task a journal start names; t goes into the table,
 * or is dropped when it certainly never ran. */
static void resolve(struct drv_agent *a, struct task *t)
{
	char status[PATH_MAX], pidfile[PATH_MAX], cgroup[PATH_MAX];
	pid_t pid;

	drv_shim_paths(t->dir, t->id, t->key, status, pidfile, sizeof(status));
	snprintf(t->proc.status_path, sizeof(t->proc.status_path), "%s", status);
	pid = read_pidfile(pidfile);
	if (pid == 0)
		pid = void_launch(pidfile);
	if (pid == -1) {
		drv_log(&a->log, "task %s (epoch %lld): its start was recorded but never happened; "
			"it starts afresh if still assigned", t->id, (long long)t->epoch);
		drv_free(t);
		return;
	}
	if (pid > 0 && is_shim_of(pid, t, cgroup, sizeof(cgroup)) &&
	    drv_proc_adopt(&t->proc, pid, status, cgroup, drv_mono_ms()) == 0) {
		/* where launch.c put its output, for the cap */
		snprintf(t->proc.stdout_path, sizeof(t->proc.stdout_path), "%s/%s.out", t->dir, t->id);
		snprintf(t->proc.stderr_path, sizeof(t->proc.stderr_path), "%s/%s.err", t->dir, t->id);
		t->state = T_RUNNING;
		t->rep_running = true;
		t->starttime = agent_proc_starttime(pid);
		agent_mark_gpus(a, t, true);
		a->running_dirty = true;
		drv_log(&a->log, "task %s (epoch %lld) adopted: its shim (pid %d) still runs it",
			t->id, (long long)t->epoch, (int)pid);
	} else if (drv_shim_read_status(status, &t->proc) == 0) {
		ended_meanwhile(a, t);
	} else {
		lost(a, t);
	}
	agent_container_mark(a, t);
	DRV_GROW(a->tasks, a->ntasks + 1, a->tcap);
	a->tasks[a->ntasks++] = t;
}

/* Marks the start of (id, epoch) in recs as ended. */
static void parse_end(struct task **recs, size_t n, const char *line)
{
	char id[64];
	long long epoch;

	if (sscanf(line, "end %63s %lld", id, &epoch) != 2)
		return;
	for (size_t k = 0; k < n; k++)
		if (recs[k] && recs[k]->epoch == epoch && !strcmp(recs[k]->id, id)) {
			drv_free(recs[k]);
			recs[k] = NULL;
		}
}

/* The journal's live starts, in order; NULL entries are ended ones. */
static struct task **journal_read(struct drv_agent *a, size_t *np)
{
	char path[PATH_MAX], line[512];
	struct task **recs = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	journal_path(a, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		struct task *t;

		if (!strncmp(line, "end ", 4)) {
			parse_end(recs, n, line);
			continue;
		}
		t = parse_start(a, line);
		if (!t)
			continue;   /* a torn last line: its start never happened */
		DRV_GROW(recs, n + 1, cap);
		recs[n++] = t;
	}
	fclose(f);
	*np = n;
	return recs;
}

int agent_journal_open(struct drv_agent *a)
{
	size_t n = 0;
	struct task **recs = journal_read(a, &n);

	for (size_t k = 0; k < n; k++)
		if (recs[k])
			resolve(a, recs[k]);
	drv_free(recs);
	return journal_rewrite(a);
}

void agent_journal_close(struct drv_agent *a)
{
	if (a->journal_fd >= 0)
		close(a->journal_fd);
	a->journal_fd = -1;
}

/* --- the lease ------------------------------------------------------------ */

static int put_deadline(FILE *f, void *arg)
{
	fprintf(f, "%lld\n", (long long)*(const int64_t *)arg);
	return 0;
}

void agent_lease_renew(struct drv_agent *a, int64_t sent_boot_ms, int64_t lease_s)
{
	int64_t deadline;

	if (lease_s <= 0)
		return;
	deadline = sent_boot_ms + lease_s * 1000;
	a->lease_s = lease_s;
	if (deadline <= a->lease_deadline)
		return;
	a->lease_deadline = deadline;
	a->lease_out = false;
	/* readable by the shims, which run as the tasks' users */
	if (drv_file_write_atomic(a->lease_path, 0644, put_deadline, &deadline) < 0 &&
	    !a->lease_write_failed) {
		a->lease_write_failed = true;
		drv_log(&a->log, "cannot write the lease file %s: %s", a->lease_path,
			strerror(errno));
	}
}
