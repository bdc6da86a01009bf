/*
 * agent_hooks.c: the site's prolog and epilog (drover agent --prolog,
 * --epilog), as Slurm's Prolog and Epilog: programs the operator names,
 * run as the agent's user (root on a real node) for every job whatever
 * its format; sites use them for GPU health checks, cleaning /dev/shm,
 * mounting scratch.
 *
 * - The prolog runs before the first task of a job (an attempt: the
 *   tasks' epoch) starts on the node; the job's tasks wait for it. When
 *   it fails (an exit code other than 0, a signal, or running past the
 *   timeout) the job's tasks here fail with "requeue" and "drain" in
 *   their reports: the controller drains the node with the reason and
 *   requeues the job, as Slurm does.
 * - The epilog runs once none of the job's tasks runs on the node any
 *   more (the last one ended, was stopped or cancelled); the end reports
 *   of the job's tasks wait for it, as a Slurm job is COMPLETING until its
 *   epilog is done. A failed epilog drains the node ("drain" in those
 *   reports); the job's own result stands.
 * - On a node where a job runs only srun steps (not its batch step), a
 *   stretch without steps ends the job there as far as the node can tell:
 *   the epilog runs, and the next step runs the prolog again. Slurm runs
 *   them once per job there.
 *
 * Each runs in a process group of its own with stdin /dev/null and its
 * output in STATE/hooks/JOB.EPOCH.prolog|epilog (0600), with SLURM_JOB_ID,
 * SLURM_JOB_USER, SLURMD_NODENAME, DROVER_JOB_ID, DROVER_NODE,
 * DROVER_HOOK (prolog or epilog) and a plain PATH. A hook the agent does
 * not see end (the agent restarted) is not waited for again; nor is an
 * epilog run for tasks a new agent adopted that ended while no agent ran.
 * Every function here runs with a->mu held.
 */
#include "drover/clock.h"
#include "drover/fsutil.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct agent_hook *hook_find(struct drv_agent *a, const char *job, int64_t epoch,
				    bool epilog)
{
	for (size_t k = 0; k < a->nhooks; k++)
		if (!strcmp(a->hooks[k].job, job) && a->hooks[k].epoch == epoch &&
		    a->hooks[k].epilog == epilog)
			return &a->hooks[k];
	return NULL;
}

static void hook_drop(struct drv_agent *a, struct agent_hook *h)
{
	*h = a->hooks[--a->nhooks];
}

/* Starts prog for h; false (h->why set) when it cannot be started. */
static bool hook_spawn(struct drv_agent *a, struct agent_hook *h, const char *prog,
		       const char *user)
{
	char dir[PATH_MAX], out[PATH_MAX + 96], e[6][320];
	char *argv[] = { (char *)prog, NULL };
	char *envp[8];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	const char *what = h->epilog ? "epilog" : "prolog";
	int rc;

	snprintf(dir, sizeof(dir), "%s/hooks", a->state_dir);
	if (drv_mkdir_p(dir, 0700) < 0) {
		snprintf(h->why, sizeof(h->why), "%s %s: cannot create %s: %s", what, prog, dir,
			 strerror(errno));
		return false;
	}
	snprintf(out, sizeof(out), "%s/%s.%lld.%s", dir, h->job, (long long)h->epoch, what);
	snprintf(e[0], sizeof(e[0]), "SLURM_JOB_ID=%s", h->job);
	snprintf(e[1], sizeof(e[1]), "SLURM_JOB_USER=%s", user ? user : "");
	snprintf(e[2], sizeof(e[2]), "SLURMD_NODENAME=%s", a->name);
	snprintf(e[3], sizeof(e[3]), "DROVER_JOB_ID=%s", h->job);
	snprintf(e[4], sizeof(e[4]), "DROVER_NODE=%s", a->name);
	snprintf(e[5], sizeof(e[5]), "DROVER_HOOK=%s", what);
	for (int i = 0; i < 6; i++)
		envp[i] = e[i];
	envp[6] = (char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	envp[7] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	rc = posix_spawn(&h->pid, prog, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0) {
		snprintf(h->why, sizeof(h->why), "%s %s could not start: %s", what, prog,
			 strerror(rc));
		return false;
	}
	h->state = H_RUNNING;
	h->deadline_ms = drv_mono_ms() + a->hook_timeout_ms;
	drv_log(&a->log, "job %s (epoch %lld): %s %s started, pid %d", h->job, (long long)h->epoch,
		what, prog, (int)h->pid);
	return true;
}

static struct agent_hook *hook_new(struct drv_agent *a, const char *job, int64_t epoch,
				   bool epilog)
{
	struct agent_hook *h;

	DRV_GROW(a->hooks, a->nhooks + 1, a->hookcap);
	h = &a->hooks[a->nhooks++];
	memset(h, 0, sizeof(*h));
	snprintf(h->job, sizeof(h->job), "%s", job);
	h->epoch = epoch;
	h->epilog = epilog;
	h->state = H_OK;
	return h;
}

int agent_prolog_gate(struct drv_agent *a, const struct drv_proto_task *j, char *why,
		      size_t whysz)
{
	char job[32];
	struct agent_hook *h;

	if (!a->prolog && !a->epilog)
		return 1;
	snprintf(job, sizeof(job), "%lld", (long long)j->job_id);
	/* the job's last epilog here still runs: its next tasks wait */
	if ((h = hook_find(a, job, j->epoch, true)) && h->state == H_RUNNING)
		return 0;
	h = hook_find(a, job, j->epoch, false);
	if (!h) {
		/* without a prolog the record only says the job runs here */
		h = hook_new(a, job, j->epoch, false);
		if (a->prolog && !hook_spawn(a, h, a->prolog, j->user))
			h->state = H_FAILED;
	}
	if (h->state == H_RUNNING)
		return 0;
	if (h->state == H_FAILED) {
		snprintf(why, whysz, "%s", h->why);
		return -1;
	}
	h->ran = true;
	return 1;
}

/* The last line the hook printed (its output file), for its failure's
 * reason: "" when it printed nothing. */
static void last_line(struct drv_agent *a, const struct agent_hook *h, char *out, size_t n)
{
	char path[PATH_MAX + 96], buf[512];
	ssize_t len = 0;
	off_t size;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/hooks/%s.%lld.%s", a->state_dir, h->job,
		 (long long)h->epoch, h->epilog ? "epilog" : "prolog");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > 0 && lseek(fd, size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0,
			      SEEK_SET) >= 0)
		len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return;
	buf[len] = '\0';
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		buf[--len] = '\0';
	char *nl = strrchr(buf, '\n');

	snprintf(out, n, "%.160s", nl ? nl + 1 : buf);
}

/* The hook's end, from waitpid's st: H_OK or H_FAILED with why. */
static void hook_ended(struct drv_agent *a, struct agent_hook *h, int st, bool killed)
{
	const char *what = h->epilog ? "epilog" : "prolog";
	const char *prog = h->epilog ? a->epilog : a->prolog;

	if (killed)
		snprintf(h->why, sizeof(h->why), "%s %s ran past %lld s and was killed", what, prog,
			 (long long)(a->hook_timeout_ms / 1000));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		h->why[0] = '\0';
	else if (WIFEXITED(st))
		snprintf(h->why, sizeof(h->why), "%s %s failed: exit code %d", what, prog,
			 WEXITSTATUS(st));
	else
		snprintf(h->why, sizeof(h->why), "%s %s failed: killed by signal %d", what, prog,
			 WTERMSIG(st));
	if (h->why[0]) {
		char line[200];
		size_t l = strlen(h->why);

		last_line(a, h, line, sizeof(line));
		if (line[0])
			snprintf(h->why + l, sizeof(h->why) - l, " (%s)", line);
	}
	h->state = h->why[0] ? H_FAILED : H_OK;
	h->pid = 0;
	drv_log(&a->log, "job %s (epoch %lld): %s %s", h->job, (long long)h->epoch, what,
		h->why[0] ? h->why : "done");
}

static bool job_runs_here(struct drv_agent *a, const char *job, int64_t epoch)
{
	for (size_t k = 0; k < a->ntasks; k++)
		if (a->tasks[k]->state == T_RUNNING && a->tasks[k]->epoch == epoch &&
		    !strcmp(a->tasks[k]->job_id, job))
			return true;
	return false;
}

/* Whether the controller's latest set still wants a task of h's job here. */
static bool job_listed(const struct drv_agent *a, const struct agent_hook *h)
{
	for (size_t i = 0; i < a->desired.ntasks; i++) {
		char jid[32];

		snprintf(jid, sizeof(jid), "%lld", (long long)a->desired.tasks[i].job_id);
		if (!strcmp(jid, h->job) && a->desired.tasks[i].epoch == h->epoch &&
		    !a->desired.tasks[i].stop)
			return true;
	}
	return false;
}

/* The end reports of job's tasks: held while its epilog runs, released
 * (with drain when it failed) after. */
static void hold_reports(struct drv_agent *a, const struct agent_hook *h, bool hold)
{
	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		if (t->epoch != h->epoch || strcmp(t->job_id, h->job))
			continue;
		if (hold && t->rep_end) {
			t->hook_wait = true;
		} else if (!hold && t->hook_wait) {
			t->hook_wait = false;
			if (h->state == H_FAILED)
				snprintf(t->drain, sizeof(t->drain), "%s", h->why);
		}
	}
}

bool agent_hooks_step(struct drv_agent *a, int64_t *due)
{
	int64_t now = drv_mono_ms();
	bool prolog_done = false;

	for (size_t k = 0; k < a->nhooks;) {
		struct agent_hook *h = &a->hooks[k];
		int st = 0;

		if (h->state == H_RUNNING) {
			pid_t r = waitpid(h->pid, &st, WNOHANG);

			if (r == 0 && now >= h->deadline_ms) {
				kill(-h->pid, SIGKILL);
				waitpid(h->pid, &st, 0);
				hook_ended(a, h, st, true);
			} else if (r == h->pid || (r < 0 && errno == ECHILD)) {
				hook_ended(a, h, st, false);
			} else {
				*due = DRV_MIN(*due, now + 100);
				k++;
				continue;
			}
			if (!h->epilog) {
				prolog_done = true;
			} else {
				hold_reports(a, h, false);
				agent_wake(a);
				hook_drop(a, h);
				continue;
			}
		}
		/* a job that ran here (its prolog record) and runs here no more:
		 * its epilog; a failed prolog's record stays while the controller
		 * still lists the job here, so that its tasks do not start after all */
		if (!h->epilog && h->state != H_RUNNING &&
		    (h->state == H_FAILED || !h->ran ? !job_listed(a, h) :
						       !job_runs_here(a, h->job, h->epoch))) {
			bool failed = h->state == H_FAILED;
			int64_t epoch = h->epoch;
			char job[32];

			snprintf(job, sizeof(job), "%s", h->job);
			hook_drop(a, h);
			if (a->epilog && !failed) {
				struct agent_hook *e = hook_new(a, job, epoch, true);

				hold_reports(a, e, true);
				if (hook_spawn(a, e, a->epilog, NULL)) {
					*due = DRV_MIN(*due, now + 100);
				} else {
					e->state = H_FAILED;
					hold_reports(a, e, false);
					hook_drop(a, e);
				}
			}
			continue;   /* k now holds another hook */
		}
		k++;
	}
	return prolog_done;
}

void agent_hooks_release(struct drv_agent *a)
{
	for (size_t k = 0; k < a->nhooks; k++)
		if (a->hooks[k].state == H_RUNNING) {
			kill(-a->hooks[k].pid, SIGKILL);
			waitpid(a->hooks[k].pid, NULL, 0);
		}
	drv_free(a->hooks);
	a->hooks = NULL;
	a->nhooks = a->hookcap = 0;
}
