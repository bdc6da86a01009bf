/*
 * agent_leftovers.c: tasks an earlier agent left running. STATE/running lists
 * every running task (task, epoch, pid, start time, cgroup); the next agent
 * on the node kills those whose process is still the same one and reports
 * them, since it cannot supervise another agent's children.
 */
#include "drover/fsutil.h"
#include "agent_int.h"

#include <signal.h>
#include <string.h>

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
	for (i = 2; p && i < 22; i++) {
		p = strchr(p + 1, ' ');
	}
	if (p && sscanf(p + 1, "%llu", &v) != 1)
		v = 0;
	return v;
}

/*
 * STATE/running lists the tasks this agent runs ("TASK_ID EPOCH PID
 * STARTTIME CGROUP"), rewritten whenever that changes, so that an agent
 * that was killed and restarted can stop what its predecessor left
 * behind: it cannot supervise processes that are not its children, and
 * the controller has requeued them anyway. It is rewritten once per turn
 * of the supervisor, after the starts and exits of that turn and before
 * they are reported. Caller holds a->mu.
 */
static int put_running(FILE *f, void *arg)
{
	const struct drv_agent *a = arg;

	for (size_t k = 0; k < a->ntasks; k++) {
		const struct task *t = a->tasks[k];
		if (t->state == T_RUNNING)
			fprintf(f, "%s %lld %d %llu %s\n", t->id, (long long)t->epoch, (int)t->proc.pid,
				t->starttime, t->proc.cgroup[0] ? t->proc.cgroup : "-");
	}
	return 0;
}

void agent_save_running(struct drv_agent *a)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/running", a->state_dir);
	drv_file_write_atomic(path, 0600, put_running, a); /* best effort, as before */
}

void agent_kill_leftovers(struct drv_agent *a)
{
	char path[PATH_MAX], line[PATH_MAX + 200], id[64], cg[PATH_MAX];
	unsigned long long st;
	struct task *t;
	long long epoch;
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/running", a->state_dir);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %lld %d %llu %4095s", id, &epoch, &pid, &st, cg) != 5 ||
		    pid <= 1)
			continue;
		t = drv_calloc(1, sizeof(*t));
		snprintf(t->id, sizeof(t->id), "%s", id);
		t->epoch = epoch;
		t->proc.pid = pid;
		t->proc.exit_code = -1;
		t->rep_end = true;
		if (st && agent_proc_starttime(pid) == st) {
			kill(-pid, SIGKILL);
			drv_log(&a->log, "killed task %s (epoch %lld, pid %d), left running by an earlier agent",
			      id, epoch, pid);
			t->state = T_EXITED;
			t->proc.state = DRV_PROC_EXITED;
			t->proc.signal = SIGKILL;
			snprintf(t->reason, sizeof(t->reason), "the agent restarted and cannot watch "
				 "a task it did not start; killed");
		} else {
			t->state = T_FAILED;
			snprintf(t->reason, sizeof(t->reason), "the task ended while its agent was "
				 "down; exit status unknown");
		}
		if (strcmp(cg, "-"))
			drv_cgroup_kill(cg);
		/* remembered, so this (task_id, epoch) is reported and never started again */
		DRV_GROW(a->tasks, a->ntasks + 1, a->tcap);
		a->tasks[a->ntasks++] = t;
	}
	fclose(f);
	unlink(path);
}

