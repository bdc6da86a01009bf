/*
 * agent_clean.c: task directories do not pile up. A task's directory
 * (STATE/tasks/TASK_ID: its stdout, stderr, script, status) stays while
 * the task runs or its end is not yet acknowledged by the controller, and
 * for --task-retention seconds after its last write, so `drover logs`
 * reads a finished job's output for that long; then it is removed. Looked at every
 * --task-retention / 2 seconds, at least every second and at most every
 * minute.
 */
#include "drover/clock.h"
#include "agent_int.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t agent_clean_every_ms(const struct drv_agent *a)
{
	return DRV_MAX(1000, DRV_MIN(60000, a->task_retention_ms / 2));
}

/* The newest modification time (wall s) of dir and the files in it. */
static int64_t newest_mtime(const char *dir)
{
	char p[PATH_MAX + 300];
	struct dirent *e;
	struct stat st;
	int64_t t = stat(dir, &st) == 0 ? (int64_t)st.st_mtime : 0;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.' && lstat(p, &st) == 0 && st.st_mtime > t)
			t = st.st_mtime;
	}
	if (d)
		closedir(d);
	return t;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/* A task the agent still runs, or whose end the controller has not yet
 * acknowledged. */
static bool in_use(const struct drv_agent *a, const char *id)
{
	for (size_t k = 0; k < a->ntasks; k++)
		if (!strcmp(a->tasks[k]->id, id) &&
		    (a->tasks[k]->state == T_RUNNING || a->tasks[k]->rep_end))
			return true;
	return false;
}

void agent_clean_task_dirs(struct drv_agent *a, int64_t now_ms)
{
	char base[PATH_MAX], dir[PATH_MAX + 300];
	int64_t now = drv_wall_s(), keep = a->task_retention_ms / 1000;
	struct dirent *e;
	DIR *d;

	if (now_ms < a->next_clean_ms)
		return;
	a->next_clean_ms = now_ms + agent_clean_every_ms(a);
	snprintf(base, sizeof(base), "%s/tasks", a->state_dir);
	d = opendir(base);
	while (d && (e = readdir(d))) {
		if (!agent_valid_task_id(e->d_name) || in_use(a, e->d_name))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", base, e->d_name);
		if (now - newest_mtime(dir) < keep)
			continue;
		if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
			drv_log(&a->log, "cannot remove the task directory %s: %s", dir, strerror(errno));
		else
			drv_log(&a->log, "task %s: its directory is removed (%lld s after its last "
				"output, --task-retention)", e->d_name, (long long)keep);
	}
	if (d)
		closedir(d);
}
