/*
 * cgroup.c: finds where the agent may put its tasks' cgroups (v2, or the
 * v1 memory controller) and whether memory and CPU limits can be applied
 * there.
 *
 * cgroup v2 lets a cgroup hand controllers to its children only when it
 * holds no processes itself, so the agent makes
 *
 *	<parent>/drover-agent   the agent itself, moved here when needed
 *	<parent>/drover-tasks   memory (+cpu) enabled for its children
 *	<parent>/drover-tasks/task-<id>
 *
 * which is what a systemd unit with Delegate=yes expects of a service that
 * manages its own subtree. On a host whose v2 hierarchy lacks the memory
 * controller (hybrid hosts; cgroup v1 hosts such as RHEL 8 and Ubuntu
 * 20.04) the v1 memory hierarchy is used instead:
 *
 *	<memory mount><own v1 memory cgroup>/drover-tasks-<agent pid>/task-<id>
 *
 * with memory.limit_in_bytes (and memory.memsw.limit_in_bytes, so the
 * limit is not dodged through swap) and OOM kills counted from
 * memory.oom_control's oom_kill; v1 has no cgroup.kill, so what is left
 * in a task's cgroup is killed pid by pid. CPU limits are v2 only.
 * Everything here is best effort: without a memory controller or write
 * access the agent runs tasks without limits and says why once at start.
 */
#include "drover/agent.h"
#include "drover/common.h"
#include "agent_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

/* Whether word is one of list's words, separated by sep (or a newline). */
static int has_word_in(const char *list, const char *word, char sep)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		if ((p == list || p[-1] == sep) && (p[n] == '\0' || p[n] == sep || p[n] == '\n'))
			return 1;
		p += n;
	}
	return 0;
}

static int has_word(const char *list, const char *word)
{
	return has_word_in(list, word, ' ');
}

/* The mount point of the cgroup2 hierarchy (v1 NULL), or of the v1
 * hierarchy whose super options name controller v1, from
 * /proc/self/mountinfo. */
static int cgroup_mount(const char *v1, char *out, size_t outsz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		/* id parent maj:min root mountpoint opts ... - fstype source superopts */
		char *dash = strstr(line, " - ");
		char *save = NULL, *tok, *super;

		if (!dash || strncmp(dash + 3, v1 ? "cgroup " : "cgroup2 ", v1 ? 7 : 8))
			continue;
		super = strrchr(dash, ' ');
		if (v1 && (!super || !has_word_in(super + 1, v1, ',')))
			continue;
		tok = strtok_r(line, " ", &save);
		for (int field = 1; tok && field < 5; field++)
			tok = strtok_r(NULL, " ", &save);
		if (tok) {
			snprintf(out, outsz, "%s", tok);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* The agent's own cgroup path in the v2 hierarchy (v1 NULL: "0::/x/y"),
 * or in the v1 hierarchy of controller v1 ("4:memory:/x/y") in
 * /proc/self/cgroup. */
static int own_cgroup(const char *v1, char *out, size_t outsz)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':'), *path = c ? strchr(c + 1, ':') : NULL;

		if (!path)
			continue;
		*path++ = '\0';
		line[strcspn(line, ":")] = '\0';
		if (v1 ? !has_word_in(c + 1, v1, ',') : strcmp(line, "0") != 0)
			continue;
		path[strcspn(path, "\n")] = '\0';
		snprintf(out, outsz, "%s", path);
		found = 1;
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

/* cgroup v2 at dir: the memory controller, writable, enabled for
 * drover-tasks (the agent moved into a leaf when it must be). */
static void setup_v2(struct drv_cgroup *cg, const char *dir)
{
	char p[PATH_MAX + 64], ctl[512];
	int rc;

	snprintf(p, sizeof(p), "%s/cgroup.controllers", dir);
	if ((rc = read_text(p, ctl, sizeof(ctl))) < 0) {
		snprintf(cg->why, sizeof(cg->why),
			 "cannot read %s (%s): task memory and CPU limits are not enforced", p,
			 strerror(-rc));
		return;
	}
	if (!has_word(ctl, "memory")) {
		snprintf(cg->why, sizeof(cg->why),
			 "cgroup v2 at %s has no memory controller (it offers: %s) and no v1 memory "
			 "hierarchy is usable: task memory and CPU limits are not enforced", dir,
			 ctl[0] ? ctl : "none");
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
	cg->version = 2;
	cg->enabled = true;
}

/* Removes dir's empty task-* cgroups, then dir itself when empty: rmdir
 * of a cgroup that still holds a process fails (EBUSY), so what still runs
 * keeps its cgroup. */
static void remove_empty(const char *dir)
{
	char p[PATH_MAX + 300];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "task-", 5)) {
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			rmdir(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* drover-tasks-PID directories under dir of agents that are gone (killed,
 * or restarted under another pid), once their tasks have ended. */
static void sweep_v1(const char *dir)
{
	char p[PATH_MAX + 300];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, "drover-tasks-", 13))
			continue;
		pid = strtol(de->d_name + 13, &end, 10);
		if (*end || pid <= 0 || pid == (long)getpid() ||
		    (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		remove_empty(p);
	}
	if (d)
		closedir(d);
}

/*
 * The v1 memory hierarchy at dir: drover-tasks-PID below it, writable. v1
 * hosts often keep every service in one memory cgroup, so each agent takes
 * a directory of its own: two agents there never share a task's cgroup.
 */
static void setup_v1(struct drv_cgroup *cg, const char *dir)
{
	char p[PATH_MAX + 64];

	sweep_v1(dir);
	snprintf(cg->base, sizeof(cg->base), "%s/drover-tasks-%d", dir, (int)getpid());
	snprintf(p, sizeof(p), "%s/memory.limit_in_bytes", cg->base);
	if ((mkdir(cg->base, 0755) < 0 && errno != EEXIST) || access(p, W_OK) != 0) {
		snprintf(cg->why, sizeof(cg->why),
			 "cannot use the cgroup v1 memory hierarchy at %s (%s): task memory and CPU "
			 "limits are not enforced", cg->base, strerror(errno));
		cg->base[0] = '\0';
		return;
	}
	cg->version = 1;
	cg->has_cpu = false;
	cg->enabled = true;
}

/* The agent's own cgroup in the v2 hierarchy (v1 NULL) or in the v1
 * hierarchy of controller v1, as a directory; 0 when there is none. */
static int own_dir(const char *v1, char *dir, size_t dirsz)
{
	char mnt[PATH_MAX / 2], own[PATH_MAX / 2];

	if (!cgroup_mount(v1, mnt, sizeof(mnt)))
		return 0;
	if (!own_cgroup(v1, own, sizeof(own)))
		own[0] = '\0';
	snprintf(dir, dirsz, "%s%s", mnt, strcmp(own, "/") ? own : "");
	return 1;
}

void drv_cgroup_setup(struct drv_cgroup *cg, const char *parent)
{
	char dir[PATH_MAX], p[PATH_MAX + 32];

	memset(cg, 0, sizeof(*cg));
	if (parent && *parent) {
		snprintf(p, sizeof(p), "%s/memory.limit_in_bytes", parent);
		if (access(p, F_OK) == 0)
			setup_v1(cg, parent);
		else
			setup_v2(cg, parent);
		return;
	}
	if (own_dir(NULL, dir, sizeof(dir)))
		setup_v2(cg, dir);
	if (cg->enabled)
		return;
	if (own_dir("memory", dir, sizeof(dir))) {
		char why2[sizeof(cg->why)];

		snprintf(why2, sizeof(why2), "%s", cg->why);
		setup_v1(cg, dir);
		if (!cg->enabled && why2[0])
			snprintf(cg->why + strlen(cg->why), sizeof(cg->why) - strlen(cg->why),
				 " (and v2: %s)", why2);
	} else if (!cg->why[0]) {
		snprintf(cg->why, sizeof(cg->why), "no cgroup hierarchy with a memory controller "
			 "is mounted: task memory and CPU limits are not enforced");
	}
}

void drv_cgroup_release(struct drv_cgroup *cg)
{
	if (cg->enabled && cg->version == 1)
		remove_empty(cg->base);
	cg->enabled = false;
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
		snprintf(p, sizeof(p), "%s/%s", out,
			 cg->version == 1 ? "memory.limit_in_bytes" : "memory.max");
		snprintf(v, sizeof(v), "%lld", (long long)mem_mib * 1024 * 1024);
		if ((rc = write_text(p, v)) < 0) {
			snprintf(err, errsz, "cannot set %s: %s", p, strerror(-rc));
			return DRV_EIO;
		}
		/* over the limit means OOM, not swap (v1: memory+swap capped at
		 * the same figure, where swap accounting is on) */
		snprintf(p, sizeof(p), "%s/%s", out,
			 cg->version == 1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max");
		write_text(p, cg->version == 1 ? v : "0");
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

/* oom_kill count from <cgroup>/memory.events (v2) or memory.oom_control
 * (v1); 0 when unknown. */
long drv_cgroup_oom_kills(const char *cgroup)
{
	char p[PATH_MAX + 32], buf[1024];
	const char *k;

	if (!cgroup || !*cgroup)
		return 0;
	snprintf(p, sizeof(p), "%s/memory.events", cgroup);
	if (read_text(p, buf, sizeof(buf)) < 0) {
		snprintf(p, sizeof(p), "%s/memory.oom_control", cgroup);
		if (read_text(p, buf, sizeof(buf)) < 0)
			return 0;
	}
	k = strstr(buf, "oom_kill ");
	return k ? strtol(k + 9, NULL, 10) : 0;
}

/* Kills everything left in the cgroup: cgroup.kill (v2, Linux 5.14+), or
 * SIGKILL to each process cgroup.procs lists (v1, older kernels). */
void drv_cgroup_kill(const char *cgroup)
{
	char p[PATH_MAX + 32], buf[4096];

	if (!cgroup || !*cgroup)
		return;
	snprintf(p, sizeof(p), "%s/cgroup.kill", cgroup);
	if (write_text(p, "1") == 0)
		return;
	snprintf(p, sizeof(p), "%s/cgroup.procs", cgroup);
	if (read_text(p, buf, sizeof(buf)) < 0)
		return;
	for (char *q = buf, *end; *q; q = end) {
		long pid = strtol(q, &end, 10);

		if (end == q)
			break;
		if (pid > 1)
			kill((pid_t)pid, SIGKILL);
	}
}

/* The CPU time of the processes in a v1 cgroup (no cpu.stat there): each
 * one's user and system time and that of its children it has waited for,
 * which are no longer in the cgroup, so nothing counts twice. -1 none. */
static int64_t procs_cpu_us(const char *cgroup)
{
	char p[PATH_MAX + 32], buf[4096], st[1024];
	long tick = sysconf(_SC_CLK_TCK);
	int64_t ticks = 0;
	bool any = false;

	snprintf(p, sizeof(p), "%s/cgroup.procs", cgroup);
	if (read_text(p, buf, sizeof(buf)) < 0 || tick <= 0)
		return -1;
	for (char *q = buf, *end; *q; q = end) {
		long pid = strtol(q, &end, 10);
		unsigned long long ut, stt;
		long long cut, cst;
		const char *rp;

		if (end == q)
			break;
		snprintf(p, sizeof(p), "/proc/%ld/stat", pid);
		if (read_text(p, st, sizeof(st)) < 0 || !(rp = strrchr(st, ')')))
			continue;
		/* after "PID (COMM)": state, then fields 4..13, utime is 14 */
		if (sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
			   &ut, &stt, &cut, &cst) == 4) {
			ticks += (int64_t)(ut + stt) + cut + cst;
			any = true;
		}
	}
	return any ? ticks * 1000000 / tick : -1;
}

/* A number after "key " in a flat-keyed file (cpu.stat); -1 none. */
static int64_t keyed(const char *path, const char *key)
{
	char buf[2048];
	size_t n = strlen(key);

	if (read_text(path, buf, sizeof(buf)) < 0)
		return -1;
	for (const char *q = buf; q && *q; q = strchr(q, '\n'), q = q ? q + 1 : NULL)
		if (!strncmp(q, key, n) && q[n] == ' ')
			return strtoll(q + n + 1, NULL, 10);
	return -1;
}

static int64_t number_in(const char *cgroup, const char *file)
{
	char p[PATH_MAX + 32], buf[64];

	snprintf(p, sizeof(p), "%s/%s", cgroup, file);
	if (read_text(p, buf, sizeof(buf)) < 0 || !buf[0] || buf[0] == 'm') /* "max" */
		return -1;
	return strtoll(buf, NULL, 10);
}

void drv_cgroup_usage(const char *cgroup, int64_t *cpu_us, int64_t *mem_bytes)
{
	char p[PATH_MAX + 32];

	*cpu_us = *mem_bytes = -1;
	if (!cgroup || !*cgroup)
		return;
	snprintf(p, sizeof(p), "%s/cpu.stat", cgroup);
	*cpu_us = keyed(p, "usage_usec");              /* v2 */
	if (*cpu_us < 0)
		*cpu_us = procs_cpu_us(cgroup);            /* v1 memory hierarchy */
	*mem_bytes = number_in(cgroup, "memory.peak"); /* v2, Linux 5.19+ */
	if (*mem_bytes < 0)
		*mem_bytes = number_in(cgroup, "memory.max_usage_in_bytes"); /* v1 */
	if (*mem_bytes < 0)
		*mem_bytes = number_in(cgroup, "memory.current");
}
