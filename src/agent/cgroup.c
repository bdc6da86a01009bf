/*
 * cgroup.c: finds where the agent may put its tasks' cgroups (v2 only)
 * and whether memory and CPU limits can be applied there.
 *
 * cgroup v2 lets a cgroup hand controllers to its children only when it
 * holds no processes itself, so the agent makes
 *
 *	<parent>/drover-agent   the agent itself, moved here when needed
 *	<parent>/drover-tasks   memory (+cpu) enabled for its children
 *	<parent>/drover-tasks/task-<id>
 *
 * which is what a systemd unit with Delegate=yes expects of a service that
 * manages its own subtree. Everything here is best effort: on a cgroup v1
 * or hybrid host, without the memory controller, or without write access,
 * the agent runs tasks without limits and says why once at start.
 */
#include "drover/agent.h"
#include "drover/common.h"
#include "agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_text(const char *path, char *buf, size_t bufsz)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return -errno;
	n = read(fd, buf, bufsz - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int e;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	e = errno;
	close(fd);
	return n < 0 ? -e : 0;
}

static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return 1;
		p += n;
	}
	return 0;
}

/* The cgroup2 mount point, from /proc/self/mountinfo. */
static int cgroup2_mount(char *out, size_t outsz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* id parent maj:min root mountpoint opts ... - fstype source superopts */
		char *dash = strstr(line, " - ");
		char *save = NULL, *tok;
		int field = 0;
		if (!dash || strncmp(dash + 3, "cgroup2 ", 8))
			continue;
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			if (++field == 5) {
				snprintf(out, outsz, "%s", tok);
				found = 1;
				break;
			}
		}
		if (found)
			break;
	}
	fclose(f);
	return found;
}

/* The agent's own cgroup v2 path ("0::/x/y" in /proc/self/cgroup). */
static int own_cgroup(char *out, size_t outsz)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "0::", 3)) {
			size_t n = strlen(line);
			if (n && line[n - 1] == '\n')
				line[n - 1] = '\0';
			snprintf(out, outsz, "%s", line + 3);
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

static int enable_controllers(const char *dir, int cpu)
{
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", dir);
	return write_text(p, cpu ? "+memory +cpu" : "+memory");
}

void drv_cgroup_setup(struct drv_cgroup *cg, const char *parent)
{
	char mnt[PATH_MAX / 2], own[PATH_MAX / 2], dir[PATH_MAX], p[PATH_MAX + 64];
	char ctl[512];
	int rc;

	memset(cg, 0, sizeof(*cg));
	if (parent && *parent) {
		snprintf(dir, sizeof(dir), "%s", parent);
	} else {
		if (!cgroup2_mount(mnt, sizeof(mnt))) {
			snprintf(cg->why, sizeof(cg->why),
				 "no cgroup v2 hierarchy is mounted (cgroup v1 host): task memory "
				 "and CPU limits are not enforced");
			return;
		}
		if (!own_cgroup(own, sizeof(own)))
			own[0] = '\0';
		snprintf(dir, sizeof(dir), "%s%s", mnt, strcmp(own, "/") ? own : "");
	}
	snprintf(p, sizeof(p), "%s/cgroup.controllers", dir);
	if ((rc = read_text(p, ctl, sizeof(ctl))) < 0) {
		snprintf(cg->why, sizeof(cg->why),
			 "cannot read %s (%s): task memory and CPU limits are not enforced", p,
			 strerror(-rc));
		return;
	}
	if (!has_word(ctl, "memory")) {
		snprintf(cg->why, sizeof(cg->why),
			 "cgroup v2 at %s has no memory controller (it offers: %s; a hybrid or "
			 "v1 host keeps memory in v1): task memory and CPU limits are not "
			 "enforced", dir, ctl[0] ? ctl : "none");
		return;
	}
	cg->has_cpu = has_word(ctl, "cpu");
	if (access(dir, W_OK) != 0) {
		snprintf(cg->why, sizeof(cg->why),
			 "cgroup %s is not writable by this user (%s): task memory and CPU limits "
			 "are not enforced; run the agent with a delegated cgroup (systemd "
			 "Delegate=yes)", dir, strerror(errno));
		return;
	}
	rc = enable_controllers(dir, cg->has_cpu);
	if (rc == -EBUSY) {
		/* processes live here (we do): move ourselves into a leaf first */
		char leaf[PATH_MAX + 32], procs[PATH_MAX + 64], pid[32];
		snprintf(leaf, sizeof(leaf), "%s/drover-agent", dir);
		if (mkdir(leaf, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
		} else {
			snprintf(procs, sizeof(procs), "%s/cgroup.procs", leaf);
			snprintf(pid, sizeof(pid), "%d", (int)getpid());
			rc = write_text(procs, pid);
			if (rc == 0)
				rc = enable_controllers(dir, cg->has_cpu);
		}
	}
	if (rc < 0) {
		snprintf(cg->why, sizeof(cg->why),
			 "cannot enable the memory controller below %s (%s): task memory and CPU "
			 "limits are not enforced", dir, strerror(-rc));
		return;
	}
	snprintf(cg->base, sizeof(cg->base), "%s/drover-tasks", dir);
	if (mkdir(cg->base, 0755) < 0 && errno != EEXIST) {
		snprintf(cg->why, sizeof(cg->why), "cannot create %s (%s): task limits are not "
			 "enforced", cg->base, strerror(errno));
		return;
	}
	rc = enable_controllers(cg->base, cg->has_cpu);
	if (rc < 0) {
		snprintf(cg->why, sizeof(cg->why), "cannot enable the memory controller in %s "
			 "(%s): task limits are not enforced", cg->base, strerror(-rc));
		return;
	}
	cg->enabled = true;
}

/* Used by launch.c: makes <base>/task-<id> with the limits. */
int drv_cgroup_make_task(const struct drv_cgroup *cg, const char *task_id, int64_t mem_mib,
			 int64_t cpu_milli, char *out, size_t outsz, char *err, size_t errsz)
{
	char p[PATH_MAX + 64], v[64];
	size_t i;
	int rc;

	out[0] = '\0';
	if (!cg || !cg->enabled)
		return 0;
	snprintf(out, outsz, "%s/task-", cg->base);
	/* the id may hold only safe characters in a path */
	for (i = strlen(out); *task_id && i + 1 < outsz; task_id++, i++)
		out[i] = (char)((*task_id == '/' || *task_id == '.' ? '_' : *task_id));
	out[i] = '\0';
	if (mkdir(out, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errsz, "cannot create cgroup %s: %s", out, strerror(errno));
		out[0] = '\0';
		return DRV_EIO;
	}
	if (mem_mib > 0) {
		snprintf(p, sizeof(p), "%s/memory.max", out);
		snprintf(v, sizeof(v), "%lld", (long long)mem_mib * 1024 * 1024);
		if ((rc = write_text(p, v)) < 0) {
			snprintf(err, errsz, "cannot set %s: %s", p, strerror(-rc));
			return DRV_EIO;
		}
		/* over the limit means OOM, not swap */
		snprintf(p, sizeof(p), "%s/memory.swap.max", out);
		write_text(p, "0");
	}
	if (cpu_milli > 0 && cg->has_cpu) {
		snprintf(p, sizeof(p), "%s/cpu.max", out);
		snprintf(v, sizeof(v), "%lld 100000", (long long)cpu_milli * 100);
		if ((rc = write_text(p, v)) < 0) {
			snprintf(err, errsz, "cannot set %s: %s", p, strerror(-rc));
			return DRV_EIO;
		}
	}
	return 0;
}

/* oom_kill count from <cgroup>/memory.events; 0 when unknown. */
long drv_cgroup_oom_kills(const char *cgroup)
{
	char p[PATH_MAX + 32], buf[1024];
	const char *k;

	if (!cgroup || !*cgroup)
		return 0;
	snprintf(p, sizeof(p), "%s/memory.events", cgroup);
	if (read_text(p, buf, sizeof(buf)) < 0)
		return 0;
	k = strstr(buf, "oom_kill ");
	return k ? strtol(k + 9, NULL, 10) : 0;
}

/* Kills everything left in the cgroup (cgroup.kill, Linux 5.14+). */
void drv_cgroup_kill(const char *cgroup)
{
	char p[PATH_MAX + 32];

	if (!cgroup || !*cgroup)
		return;
	snprintf(p, sizeof(p), "%s/cgroup.kill", cgroup);
	write_text(p, "1");
}
