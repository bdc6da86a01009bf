/*
 * agent_super.c: the supervisor thread: applies the controller's task set,
 * reaps, enforces limits and tells the syncer when a report is owed,
 * sleeping in poll() on the tasks' pidfds and the wake eventfd.
 */
#include "drover/clock.h"
#include "drover/agent.h"
#include "agent_int.h"

#include <poll.h>
#include <unistd.h>

/* --- waiting -------------------------------------------------------------- */

void agent_wait_ms(struct drv_agent *a, int64_t ms)
{
	struct timespec ts = drv_realtime_after_ms(ms);

	pthread_cond_timedwait(&a->cv, &a->mu, &ts);
}

/*
 * The supervisor's sleep: until a running task exits (its pidfd turns
 * readable), another thread calls agent_wake, or ms pass. A task without a
 * pidfd caps the sleep at 100 ms, as polling did. Caller holds a->mu.
 */
static void wait_events(struct drv_agent *a, int64_t ms)
{
	struct pollfd stackfds[64], *fds = stackfds;
	size_t k, n = 0, cap = DRV_ARRAY_SIZE(stackfds);
	uint64_t v;
	ssize_t r = 0;

	if (a->wakefd < 0) {
		agent_wait_ms(a, DRV_MIN(ms, 100));
		return;
	}
	if (a->ntasks + 1 > cap)
		fds = drv_calloc(a->ntasks + 1, sizeof(*fds));
	fds[n++] = (struct pollfd){ .fd = a->wakefd, .events = POLLIN };
	for (k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];
		if (t->state != T_RUNNING)
			continue;
		if (t->proc.pidfd < 0)
			ms = DRV_MIN(ms, 100);
		else
			fds[n++] = (struct pollfd){ .fd = t->proc.pidfd, .events = POLLIN };
	}
	pthread_mutex_unlock(&a->mu);
	poll(fds, (nfds_t)n, (int)DRV_MAX(ms, 0));
	if (fds[0].revents & POLLIN)
		r = read(a->wakefd, &v, sizeof(v));
	(void)r;
	pthread_mutex_lock(&a->mu);
	if (fds != stackfds)
		drv_free(fds);
}

/* The next time something running is due: a time limit or a SIGKILL after
 * a grace period. INT64_MAX when nothing is. Caller holds a->mu. */
static int64_t next_task_due(const struct drv_agent *a, int64_t now)
{
	int64_t due = INT64_MAX;
	size_t k;

	for (k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];
		if (t->state != T_RUNNING)
			continue;
		if (t->proc.terminating) /* past it: SIGKILL again every 100 ms */
			due = DRV_MIN(due, DRV_MAX(t->proc.kill_at_ms, now + 100));
		else if (t->deadline_ms)
			due = DRV_MIN(due, t->deadline_ms);
		if (t->output_max > 0)   /* its output is looked at every second */
			due = DRV_MIN(due, now + 1000);
	}
	return due;
}

/* Whether any task owes the controller a report. Caller holds a->mu. */
static bool reports_owed(const struct drv_agent *a)
{
	size_t k;

	for (k = 0; k < a->ntasks; k++)
		if (a->tasks[k]->rep_running || (a->tasks[k]->rep_end && !a->tasks[k]->hook_wait))
			return true;
	return false;
}

/*
 * The supervisor: applies the controller's task set, reaps, enforces
 * limits, and tells the syncer when there is something to report. It
 * sleeps in poll() on the tasks' pidfds and the wake eventfd.
 */
void *agent_super_main(void *arg)
{
	struct drv_agent *a = arg;
	size_t k;

	pthread_mutex_lock(&a->mu);
	while (!a->stopping) {
		int64_t lease_due, hook_due = INT64_MAX;
		int running;

		if (a->desired_new) {
			a->desired_new = false;
			agent_apply_desired(a);
		}
		running = agent_reap(a);
		/* before the reports are owed: an epilog holds its job's ends */
		if (agent_hooks_step(a, &hook_due))
			agent_apply_desired(a);   /* a prolog ended: its tasks start now */
		if (a->running_dirty) {
			a->running_dirty = false;
			agent_write_job_map(a);
			agent_note_ended(a, drv_mono_ms());
		}
		lease_due = DRV_MIN(agent_enforce_lease(a), agent_sample_usage(a, drv_mono_ms()));
		agent_clean_task_dirs(a, drv_mono_ms());
		agent_helpers_reap(a);
		agent_image_gc(a, drv_mono_ms());
		if (reports_owed(a))
			agent_kick_sync(a);
		if (a->stopping)
			break;
		/* sleep until a task exits, another thread wakes us, or a time
		 * limit or a SIGKILL after a grace period is due */
		if (!a->desired_new) {
			int64_t now = drv_mono_ms();
			int64_t due = running ? DRV_MIN(next_task_due(a, now), lease_due) : INT64_MAX;

			due = DRV_MIN(due, a->next_clean_ms);
			due = DRV_MIN(due, hook_due);

			wait_events(a, DRV_MAX(DRV_MIN(due - now, 60000), 1));
		}
	}

	/* stopping: without stop_tasks_on_exit the tasks keep running under
	 * their shims, for the next agent to adopt; else terminate them and
	 * wait (drv_agent_stop reports them) */
	if (a->stop_tasks_on_exit) {
		int64_t end = drv_mono_ms() + a->grace_ms + 2000;

		for (k = 0; k < a->ntasks; k++)
			agent_stop_task(a, a->tasks[k], a->grace_ms, "the agent is stopping");
		while (agent_reap(a) > 0 && drv_mono_ms() < end)
			agent_wait_ms(a, 50);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

int64_t agent_enforce_lease(struct drv_agent *a)
{
	int64_t now = drv_boottime_ms(), left = a->lease_deadline - now;
	char why[256];

	if (!a->lease_deadline)
		return INT64_MAX;
	if (left > 0)
		return drv_mono_ms() + left;
	/* a new agent that adopted tasks before its first exchange does not
	 * know the lease's length yet: it says how long ago the deadline its
	 * predecessor renewed passed */
	if (a->lease_s)
		snprintf(why, sizeof(why), "the agent's lease ran out (no exchange with the controller "
			 "for %lld s): stopped so that a restart elsewhere never overlaps it",
			 (long long)a->lease_s);
	else
		snprintf(why, sizeof(why), "the agent's lease ran out (the deadline the previous agent "
			 "renewed passed %lld s ago): stopped so that a restart elsewhere never overlaps it",
			 (long long)(now - a->lease_deadline) / 1000);
	for (size_t k = 0; k < a->ntasks; k++) {
		struct task *t = a->tasks[k];

		if (t->state == T_RUNNING && !t->proc.terminating) {
			if (!a->lease_out)
				drv_log(&a->log, "%s", why);
			a->lease_out = true;
			agent_stop_task(a, t, DRV_MIN(t->grace_ms, AGENT_LEASE_GRACE_MS), why);
			t->fenced = true;
		}
	}
	return INT64_MAX;
}

