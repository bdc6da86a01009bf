/*
 * test_launch.c: the launcher runs real processes. A task sees exactly
 * its GPUs and the distributed-training environment (it writes its env to
 * its stdout file, which the test reads); argv reaches it uninterpreted;
 * exit codes and signals come back exactly; cancel reaches grandchildren,
 * with SIGKILL after the grace period; a task over its memory limit is
 * reported as OOM-killed where this machine's cgroup v2 allows the test.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drover/agent.h"
#include "drover/clock.h"
#include "drover/common.h"
#include "drover/fsutil.h"
#include "drover/spec.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/drv-launch-XXXXXX");
	cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	cr_assert(not(eq(ptr, f, NULL)), "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)
		cr_assert(0, "short read on %s", path);
	fclose(f);
	return buf;
}

/* Runs to completion (10 s at most). */
static void run(struct drv_proc *p)
{
	int i;
	for (i = 0; i < 1000 && !drv_proc_poll(p, drv_mono_ms()); i++)
		usleep(10000);
	cr_assert(eq(int, p->state, DRV_PROC_EXITED), "task did not end");
}

/* The value of KEY in env(1)'s output text, or NULL. */
static char *envval(const char *text, const char *key)
{
	static char val[4096];
	const char *p = text;
	size_t k = strlen(key);

	while (p && *p) {
		if (!strncmp(p, key, k) && p[k] == '=') {
			const char *e = strchr(p, '\n');
			size_t n = e ? (size_t)(e - p - k - 1) : strlen(p + k + 1);
			snprintf(val, sizeof(val), "%.*s", (int)n, p + k + 1);
			return val;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

#define EXPECT_ENV(text, key, want)                                                   \
	do {                                                                           \
		char *v_ = envval(text, key);                                           \
		cr_assert(not(eq(ptr, v_, NULL)), "%s missing from the task's env", key); \
		cr_assert(eq(str, v_, (char *)(want)), "%s", key);                       \
	} while (0)

TestSuite(launch, .init = setup, .fini = teardown);

Test(launch, task_sees_its_gpus_and_distributed_env)
{
	char *argv[] = { "env", NULL };
	char *jobenv[] = { "NCCL_IB_DISABLE=0", "NCCL_NET_GDR_LEVEL=5", "MY_VAR=a b;$(x)", NULL };
	const char *addrs[] = { "10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2" };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char *out;

	t.job_id = "17";
	t.task_id = "17.2";
	t.argv = argv;
	t.env = jobenv;
	t.log_dir = dir;
	t.node_name = "node-b";
	t.image = "nvcr.io/nvidia/pytorch:24.01-py3";
	t.gpus[0] = 1;
	t.gpus[1] = 3;
	t.ngpus = 2;
	t.rank = 2;
	t.world_size = 4;
	t.local_rank = 0;
	t.local_world_size = 2;
	t.node_rank = 1;
	t.nnodes = 2;
	t.master_addr = "10.0.0.1";
	t.master_port = 29500;
	t.rank_addrs = addrs;
	t.nccl_ib_hca = "mlx5_0,mlx5_1";
	t.nccl_socket_ifname = "eth0";
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	cr_assert(eq(int, p.exit_code, 0));
	out = slurp(p.stdout_path);
	EXPECT_ENV(out, "CUDA_VISIBLE_DEVICES", "1,3");
	EXPECT_ENV(out, "NVIDIA_VISIBLE_DEVICES", "1,3");
	EXPECT_ENV(out, "MASTER_ADDR", "10.0.0.1");
	EXPECT_ENV(out, "MASTER_PORT", "29500");
	EXPECT_ENV(out, "WORLD_SIZE", "4");
	EXPECT_ENV(out, "RANK", "2");
	EXPECT_ENV(out, "LOCAL_RANK", "0");
	EXPECT_ENV(out, "LOCAL_WORLD_SIZE", "2");
	EXPECT_ENV(out, "NODE_RANK", "1");
	EXPECT_ENV(out, "JAX_COORDINATOR_ADDRESS", "10.0.0.1:29500");
	EXPECT_ENV(out, "JAX_NUM_PROCESSES", "4");
	EXPECT_ENV(out, "JAX_PROCESS_ID", "2");
	EXPECT_ENV(out, "TF_CONFIG",
		   "{\"cluster\":{\"worker\":[\"10.0.0.1:29501\",\"10.0.0.1:29502\","
		   "\"10.0.0.2:29501\",\"10.0.0.2:29502\"]},\"task\":{\"type\":\"worker\","
		   "\"index\":2}}");
	EXPECT_ENV(out, "NCCL_IB_HCA", "mlx5_0,mlx5_1");
	EXPECT_ENV(out, "NCCL_SOCKET_IFNAME", "eth0");
	/* the job's own env wins over what the placement says */
	EXPECT_ENV(out, "NCCL_IB_DISABLE", "0");
	EXPECT_ENV(out, "NCCL_NET_GDR_LEVEL", "5");
	EXPECT_ENV(out, "MY_VAR", "a b;$(x)");
	EXPECT_ENV(out, "DROVER_JOB_ID", "17");
	EXPECT_ENV(out, "DROVER_TASK_ID", "17.2");
	EXPECT_ENV(out, "DROVER_IMAGE", "nvcr.io/nvidia/pytorch:24.01-py3");
	cr_assert(not(eq(ptr, envval(out, "PATH"), NULL)));
	free(out);
}

Test(launch, single_node_and_no_gpus)
{
	char *argv[] = { "env", NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char *out;

	t.job_id = "3";
	t.task_id = "3.0";
	t.argv = argv;
	t.log_dir = dir;
	t.nnodes = 1;
	t.world_size = 1;
	t.local_world_size = 1;
	t.master_addr = "127.0.0.1";
	t.master_port = 29500;
	t.nccl_ib_hca = "mlx5_0";
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	out = slurp(p.stdout_path);
	EXPECT_ENV(out, "CUDA_VISIBLE_DEVICES", "");
	EXPECT_ENV(out, "NVIDIA_VISIBLE_DEVICES", "void");
	/* a gang on one node talks over NVLink/shared memory, not IB */
	EXPECT_ENV(out, "NCCL_IB_DISABLE", "1");
	cr_assert(eq(ptr, envval(out, "NCCL_IB_HCA"), NULL));
	free(out);
}

Test(launch, argv_is_not_interpreted_and_workdir_is_used)
{
	char *argv[] = { "sh", "-c", "pwd; printf '%s|' \"$0\" \"$1\"", "$HOME; `id`", "*", NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char wd[128], *out, want[256];

	snprintf(wd, sizeof(wd), "%s/work", dir);
	cr_assert(eq(int, mkdir(wd, 0755), 0));
	t.task_id = "1.0";
	t.argv = argv;
	t.log_dir = dir;
	t.workdir = wd;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	out = slurp(p.stdout_path);
	snprintf(want, sizeof(want), "%s\n$HOME; `id`|*|", wd);
	cr_assert(eq(str, out, want));
	free(out);
}

/* A Slurm batch step's own files: both streams in -o's file, made with the
 * task's umask, truncated or appended to; <task>.out links to it; a file
 * that cannot be made fails the start, naming it. */
Test(launch, batch_step_output_file_umask_and_open_mode)
{
	char *argv[] = { "sh", "-c", "echo out; echo err >&2", NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char file[128], bad[128], link[PATH_MAX], *out;
	struct stat st;
	ssize_t n;

	snprintf(file, sizeof(file), "%s/slurm-7.out", dir);
	snprintf(bad, sizeof(bad), "%s/nodir/x.out", dir);
	{
		FILE *f = fopen(file, "w");

		cr_assert(not(eq(ptr, f, NULL)));
		fputs("old\n", f);
		fclose(f);
	}
	t.task_id = "7.0";
	t.argv = argv;
	t.log_dir = dir;
	t.stdout_file = file;
	t.set_umask = true;
	t.umask = 027;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	out = slurp(file);
	cr_assert(eq(str, out, "out\nerr\n"), "truncated, both streams");
	free(out);
	n = readlink(p.stdout_path, link, sizeof(link) - 1);
	cr_assert(gt(sz, (size_t)(n > 0 ? n : 0), 0), "%s is no link", p.stdout_path);
	link[n] = '\0';
	cr_assert(eq(str, link, file));
	cr_assert(eq(int, unlink(file), 0));
	t.task_id = "7.1";
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	cr_assert(eq(int, stat(file, &st), 0));
	cr_assert(eq(int, (int)(st.st_mode & 0777), 0640), "made with umask 027");
	t.task_id = "7.2";
	t.open_append = true;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	out = slurp(file);
	cr_assert(eq(str, out, "out\nerr\nout\nerr\n"), "appended");
	free(out);
	t.task_id = "7.3";
	t.stdout_file = bad;
	cr_assert(lt(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0));
	cr_assert(not(eq(ptr, strstr(p.error, bad), NULL)), "%s", p.error);
}

Test(launch, exit_codes_signals_and_stderr)
{
	char *a1[] = { "sh", "-c", "echo oops >&2; exit 7", NULL };
	char *a2[] = { "sh", "-c", "kill -SEGV $$", NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char sig[16], *err;

	t.task_id = "1.0";
	t.argv = a1;
	t.log_dir = dir;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	cr_assert(eq(int, p.exit_code, 7));
	cr_assert(eq(int, p.signal, 0));
	err = slurp(p.stderr_path);
	cr_assert(eq(str, err, "oops\n"));
	free(err);

	t.task_id = "1.1";
	t.argv = a2;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	cr_assert(eq(int, p.exit_code, -1));
	cr_assert(eq(int, p.signal, SIGSEGV));
	cr_assert(eq(str, (char *)drv_signal_name(p.signal, sig, sizeof(sig)), "SIGSEGV"));
}

Test(launch, failures_to_start_say_why)
{
	char *a1[] = { "no-such-command-xyz", NULL };
	char *a2[] = { "/nonexistent/bin/x", NULL };
	char *a3[] = { "true", NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;

	t.task_id = "1.0";
	t.argv = a1;
	t.log_dir = dir;
	cr_assert(lt(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0));
	cr_assert(eq(int, p.state, DRV_PROC_FAILED));
	cr_assert(not(eq(ptr, strstr(p.error, "command not found: no-such-command-xyz"), NULL)),
		  "%s", p.error);
	t.argv = a2;
	cr_assert(lt(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0));
	cr_assert(not(eq(ptr, strstr(p.error, "cannot execute /nonexistent/bin/x"), NULL)), "%s",
		  p.error);
	t.argv = a3;
	t.workdir = "/nonexistent-dir";
	cr_assert(lt(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0));
	cr_assert(not(eq(ptr, strstr(p.error, "cannot enter working directory"), NULL)), "%s",
		  p.error);
	t.workdir = NULL;
	t.argv = NULL;
	cr_assert(lt(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0));
	cr_assert(not(eq(ptr, strstr(p.error, "no command"), NULL)), "%s", p.error);
}

Test(launch, script_runs_under_sh)
{
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char *out;

	t.task_id = "9.0";
	t.script = "#SBATCH --gpus=1\nx=hello\necho \"$x from $DROVER_TASK_ID\"\n";
	t.log_dir = dir;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	out = slurp(p.stdout_path);
	cr_assert(eq(str, out, "hello from 9.0\n"));
	free(out);
}

/* Run t as nobody (the agent must be root for that). */
static void as_nobody(struct drv_task_spec *t)
{
	static const gid_t groups[1] = { 65534 };

	t->set_user = true;
	t->uid = 65534;
	t->gid = 65534;
	t->groups = groups;
	t->ngroups = 1;
	t->user = "nobody";
	t->home = "/nonexistent";
}

/* A root agent running a script as another user: the user can run it. */
static void script_as_nobody(const char *script, const char *task_id)
{
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char *out;

	if (geteuid() != 0)
		cr_skip_test("SKIPPED: switching users needs root");
	cr_assert(eq(int, chmod(dir, 0711), 0)); /* as the agent's task directories */
	t.task_id = task_id;
	t.script = script;
	t.log_dir = dir;
	t.workdir = "/";
	as_nobody(&t);
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	out = slurp(p.stdout_path);
	cr_assert(eq(str, out, "65534\n"), "exit %d signal %d: %s", p.exit_code, p.signal,
		  p.error);
	free(out);
}

Test(launch, shebang_script_runs_as_the_given_user)
{
	script_as_nobody("#!/bin/sh\nid -u\n", "u.1");
}

Test(launch, plain_script_runs_as_the_given_user)
{
	script_as_nobody("#SBATCH --gpus=1\nid -u\n", "u.2");
}

static int alive(pid_t pid)
{
	char path[64], buf[512], *rp;
	FILE *f;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 0;
	/* a zombie waiting for init to reap it is dead too */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	buf[0] = '\0';
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	rp = strrchr(buf, ')');
	return !(rp && rp[1] == ' ' && rp[2] == 'Z');
}

static pid_t read_pid(const char *path)
{
	int i;
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		int pid = 0;
		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		if (pid > 0)
			return pid;
		usleep(10000);
	}
	cr_assert(0, "no pid in %s", path);
	return 0;
}

Test(launch, cancel_reaches_grandchildren)
{
	char script[512], pidf[128];
	char *argv[] = { "sh", "-c", script, NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	pid_t gc;

	snprintf(pidf, sizeof(pidf), "%s/gc.pid", dir);
	/* the grandchild is a subshell running sleep: two levels down */
	snprintf(script, sizeof(script), "(sleep 300; echo never) & echo $! > %s; wait", pidf);
	t.task_id = "5.0";
	t.argv = argv;
	t.log_dir = dir;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	gc = read_pid(pidf);
	cr_assert(alive(gc));
	drv_proc_terminate(&p, 5000, drv_mono_ms());
	run(&p);
	cr_assert(eq(int, p.signal, SIGTERM));
	usleep(100000);
	cr_assert(not(alive(gc)), "grandchild %d survived the cancel", (int)gc);
}

Test(launch, sigterm_ignored_means_sigkill_after_grace)
{
	char script[512], pidf[128];
	char *argv[] = { "sh", "-c", script, NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	int64_t t0;
	pid_t gc;

	snprintf(pidf, sizeof(pidf), "%s/gc.pid", dir);
	/* ignoring TERM is inherited by the grandchild too */
	snprintf(script, sizeof(script), "trap '' TERM; sleep 300 & echo $! > %s; wait; wait",
		 pidf);
	t.task_id = "6.0";
	t.argv = argv;
	t.log_dir = dir;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	gc = read_pid(pidf);
	t0 = drv_mono_ms();
	drv_proc_terminate(&p, 300, t0);
	run(&p);
	cr_assert(eq(int, p.signal, SIGKILL));
	cr_assert(ge(i64, p.ended_ms - t0, 300));
	usleep(100000);
	cr_assert(not(alive(gc)), "grandchild %d survived SIGKILL", (int)gc);
}

Test(launch, over_memory_task_is_reported_oom_killed)
{
	struct drv_cgroup cg;
	char *argv[] = { "python3", "-c", "x = bytearray(256 << 20); import time; time.sleep(5)",
			 NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;

	drv_cgroup_setup(&cg, getenv("DROVER_TEST_CGROUP"));
	if (!cg.enabled) {
		/* said on stderr too: criterion shows skip reasons only with --verbose */
		fprintf(stderr, "launch::over_memory_task_is_reported_oom_killed: SKIPPED: cgroup "
			"memory limits unavailable here: %s\n", cg.why);
		cr_skip_test("SKIPPED: cgroup memory limits unavailable here: %s", cg.why);
	}
	t.task_id = "oom.0";
	t.argv = argv;
	t.log_dir = dir;
	t.mem_limit_mib = 64;
	cr_assert(eq(int, drv_proc_start(&p, &t, &cg, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	cr_assert(eq(int, p.signal, SIGKILL));
	cr_assert(p.oom_killed, "exit %d signal %d not seen as OOM", p.exit_code, p.signal);
	drv_proc_cleanup(&p);
	drv_cgroup_release(&cg);
}

Test(launch, v1_setup_sweeps_the_cgroups_of_agents_that_are_gone)
{
	struct drv_cgroup cg, again;
	char parent[PATH_MAX], gone[PATH_MAX + 64], task[PATH_MAX + 80];
	pid_t pid;

	drv_cgroup_setup(&cg, getenv("DROVER_TEST_CGROUP"));
	if (!cg.enabled || cg.version != 1)
		cr_skip_test("SKIPPED: no cgroup v1 memory hierarchy here: %s", cg.why);
	snprintf(parent, sizeof(parent), "%s", cg.base);
	*strrchr(parent, '/') = '\0';
	pid = fork(); /* a pid that is surely gone once reaped */
	if (pid == 0)
		_exit(0);
	cr_assert(eq(int, (int)waitpid(pid, NULL, 0), (int)pid));
	snprintf(gone, sizeof(gone), "%s/drover-tasks-%d", parent, (int)pid);
	snprintf(task, sizeof(task), "%s/task-7_0", gone);
	cr_assert(eq(int, mkdir(gone, 0755), 0), "%s: %s", gone, strerror(errno));
	cr_assert(eq(int, mkdir(task, 0755), 0), "%s: %s", task, strerror(errno));
	drv_cgroup_release(&cg); /* a restart: setup again */
	drv_cgroup_setup(&again, getenv("DROVER_TEST_CGROUP"));
	cr_assert(again.enabled);
	cr_assert(not(eq(int, access(gone, F_OK), 0)), "%s of a gone agent is still there", gone);
	drv_cgroup_release(&again);
}

Test(launch, runs_as_the_given_user)
{
	char *argv[] = { "sh", "-c", "id -u; id -g; echo $USER $HOME", NULL };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char *out;

	if (geteuid() != 0)
		cr_skip_test("SKIPPED: switching users needs root");
	t.task_id = "u.0";
	t.argv = argv;
	t.log_dir = dir;
	t.workdir = "/";
	as_nobody(&t);
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	/* the child shares the agent's memory until execve, never its identity */
	cr_assert(eq(int, (int)geteuid(), 0), "the agent itself lost root");
	cr_assert(eq(int, (int)getegid(), 0), "the agent itself changed group");
	run(&p);
	out = slurp(p.stdout_path);
	cr_assert(eq(str, out, "65534\n65534\nnobody /nonexistent\n"));
	free(out);
}

/* --- the task shim (drover task-shim), with the drover built beside us --- */

/* The drover binary next to this test binary (build/rel/drover), else skip. */
static const char *shim_exe(void)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 16);
	char *slash;

	if (n <= 0)
		cr_skip_test("no /proc/self/exe");
	path[n] = '\0';
	slash = strrchr(path, '/');
	snprintf(slash + 1, 16, "drover");
	if (access(path, X_OK) != 0)
		cr_skip_test("no drover binary beside the unit tests (%s)", path);
	return path;
}

static void shim_spec(struct drv_task_spec *t, char **argv, const char *id, const char *key)
{
	memset(t, 0, sizeof(*t));
	t->task_id = id;
	t->argv = argv;
	t->log_dir = dir;
	t->shim_exe = shim_exe();
	t->epoch = 7;
	t->launch_key = key;
	t->lease_grace_ms = 500;
}

Test(launch, shim_records_the_end_durably_and_an_adopter_reads_it)
{
	char *argv[] = { "sh", "-c", "sleep 0.3; exit 3", NULL };
	struct drv_task_spec t;
	struct drv_proc p, q;
	char *status;

	shim_spec(&t, argv, "5.0", "7-1");
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	cr_assert(p.shim);
	/* a second watcher, as a new agent would be: not the parent */
	usleep(100000);
	cr_assert(eq(int, drv_proc_adopt(&q, p.pid, p.status_path, NULL, drv_mono_ms()), 0));
	run(&q);
	cr_assert(eq(int, q.exit_code, 3), "the adopter reads the status file");
	cr_assert(eq(int, q.signal, 0));
	run(&p);
	cr_assert(eq(int, p.exit_code, 3));
	status = slurp(p.status_path);
	cr_assert(eq(int, strncmp(status, "3 0 0 0\n\n", 9), 0), "%s", status);
	{
		long long cpu = -1, rss = -1;   /* the task's rusage, for its efficiency */

		cr_assert(eq(int, sscanf(status + 9, "%lld %lld", &cpu, &rss), 2), "%s", status);
		cr_assert(cpu >= 0 && rss > 0, "%s", status);
		cr_assert(eq(i64, q.mem_peak_bytes, rss), "the adopter reads it too");
	}
	free(status);
}

Test(launch, shim_runs_nothing_on_a_voided_launch)
{
	char *argv[] = { "sh", "-c", "echo ran", NULL };
	char path[256];
	struct drv_task_spec t;
	struct drv_proc p;
	FILE *f;
	char *out;

	snprintf(path, sizeof(path), "%s/6.0.7-2.pid", dir);
	f = fopen(path, "w");
	fputs("void\n", f);
	fclose(f);
	shim_spec(&t, argv, "6.0", "7-2");
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	out = slurp(p.stdout_path);
	cr_assert(eq(str, out, ""), "the task must not run");
	free(out);
	cr_assert(eq(int, access(p.status_path, F_OK), -1), "no status: nothing ran");
}

static int put_past(FILE *f, void *arg)
{
	fprintf(f, "%lld\n", (long long)(drv_boottime_ms() - 1000));
	return 0;
}

Test(launch, shim_stops_its_task_when_the_lease_has_run_out)
{
	char *argv[] = { "sleep", "30", NULL };
	char lease[256];
	struct drv_task_spec t;
	struct drv_proc p;
	int64_t t0 = drv_mono_ms();

	snprintf(lease, sizeof(lease), "%s/lease", dir);
	cr_assert(eq(int, drv_file_write_atomic(lease, 0644, put_past, NULL), 0));
	shim_spec(&t, argv, "7.0", "7-3");
	t.lease_file = lease;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	run(&p);
	cr_assert(lt(i64, drv_mono_ms() - t0, 5000), "stopped within the check interval");
	cr_assert(eq(int, p.signal, SIGTERM), "SIGTERM first (signal %d)", p.signal);
	cr_assert(not(eq(ptr, strstr(p.error, "lease ran out"), NULL)), "%s", p.error);
	cr_assert(p.fenced, "the status says the lease stopped it");
}

/* --- the podman runtime's script (src/agent/podman.c) --------------------- */

Test(podman, pull_policy_defaults_by_tag_as_kubernetes)
{
	cr_assert(eq(str, (char *)drv_pull_policy_default("pytorch/pytorch:2.4-cuda12.4"),
		     "IfNotPresent"));
	cr_assert(eq(str, (char *)drv_pull_policy_default("busybox"), "Always"));
	cr_assert(eq(str, (char *)drv_pull_policy_default("busybox:latest"), "Always"));
	cr_assert(eq(str, (char *)drv_pull_policy_default("127.0.0.1:5000/x"), "Always"),
		  "a registry's port is no tag");
	cr_assert(eq(str, (char *)drv_pull_policy_default("x@sha256:ab"), "IfNotPresent"));
}

Test(podman, script_keeps_env_values_off_the_command_line, .init = setup)
{
	char envf[128], *script = NULL, err[256], buf[512];
	char *cmd[] = { "python", "train.py" }, *args[] = { "--it's" };
	char *env[] = { "SECRET=hunter2", "RANK=0", NULL };
	struct drv_podman_conf pc = { .nofile = 1024 };
	struct drv_container_spec cs = { .name = "drover-1.0-e1", .image = "img:1", .command = cmd,
		.ncommand = 2, .args = args, .nargs = 1, .env = env, .env_file = envf,
		.task_id = "1.0", .job_id = "1", .node = "n", .epoch = 1, .shm_mib = 64 };
	FILE *f;

	snprintf(envf, sizeof(envf), "%s/1.0.env", dir);
	cr_assert(eq(int, drv_podman_script(&pc, &cs, &script, err, sizeof(err)), 0), "%s", err);
	cr_assert(strstr(script, "hunter2") == NULL, "an env value is in the script");
	cr_assert(strstr(script, "'--entrypoint' '[\"python\",\"train.py\"]' \"$IMAGE\" '--it'\\''s'") != NULL,
		  "%s", script);
	cr_assert(strstr(script, "--shm-size 64m --ulimit nofile=1024:1024 --ulimit nproc=32768:32768") != NULL);
	cr_assert(strstr(script, "'--runtime' 'runc'") != NULL);
	cr_assert(strstr(script, "POLICY='IfNotPresent'") != NULL);
	f = fopen(envf, "r");
	cr_assert(f != NULL);
	cr_assert(fgets(buf, sizeof(buf), f) && !strcmp(buf, "SECRET=hunter2\n"));
	fclose(f);
	{
		struct stat st;

		cr_assert(eq(int, stat(envf, &st), 0));
		cr_assert(eq(int, (int)(st.st_mode & 0777), 0600));
	}
	drv_free(script);
	env[1] = "BAD=a\nb";
	cr_assert(eq(int, drv_podman_script(&pc, &cs, &script, err, sizeof(err)), DRV_EINVAL));
	cr_assert(strstr(err, "BAD") != NULL, "%s", err);
	/* an image name is in the script's comment line: a newline would end
	 * the comment and start a command */
	env[1] = "RANK=0";
	cs.image = "img:1\ntouch /tmp/drover-pwned;#";
	cr_assert(eq(int, drv_podman_script(&pc, &cs, &script, err, sizeof(err)), DRV_EINVAL));
	cr_assert(eq(ptr, script, NULL));
	cr_assert(strstr(err, "control character (0x0a)") != NULL, "%s", err);
}

/* --- CDI names for a container's GPUs (src/agent/cdi.c) ------------------- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f != NULL, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* A spec as nvidia-ctk cdi generate writes it (devices by index, by UUID
 * and "all"), and one of another kind beside it. */
static void fake_cdi_specs(char *d1, char *d2, size_t n)
{
	char p[256];

	snprintf(d1, n, "%s/etc-cdi", dir);
	snprintf(d2, n, "%s/run-cdi", dir);
	cr_assert(eq(int, mkdir(d1, 0700), 0));
	cr_assert(eq(int, mkdir(d2, 0700), 0));
	snprintf(p, sizeof(p), "%s/nvidia.yaml", d1);
	write_file(p, "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n"
		   "- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n"
		   "- name: GPU-aaaa-0000\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n"
		   "- name: \"1\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia1\n"
		   "- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n"
		   "containerEdits:\n  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n");
	snprintf(p, sizeof(p), "%s/other.json", d2);
	write_file(p, "{\"cdiVersion\": \"0.5.0\", \"kind\": \"example.com/fpga\","
		   " \"devices\": [{\"name\": \"2\", \"containerEdits\": {}}]}");
	snprintf(p, sizeof(p), "%s/notes.txt", d2);
	write_file(p, "not a spec: skipped\n");
}

Test(podman, cdi_names_the_placed_gpus_by_uuid_else_index, .init = setup, .fini = teardown)
{
	char d1[128], d2[128], err[512], out[3][DRV_CDI_NAME_MAX];
	const char *dirs[] = { NULL, NULL, NULL };
	const char *uuid[] = { "GPU-aaaa-0000", "GPU-bbbb-1111", "GPU-cccc-2222" };
	int index[] = { 0, 1, 2 };
	struct drv_cdi c;

	fake_cdi_specs(d1, d2, sizeof(d1));
	dirs[0] = d1;
	dirs[1] = d2;
	cr_assert(eq(int, drv_cdi_load(dirs, "nvidia.com/gpu", &c, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(sz, c.n, 4));
	cr_assert(not(eq(ptr, strstr(c.file, "nvidia.yaml"), NULL)), "%s", c.file);
	cr_assert(eq(int, drv_cdi_gpu_devices(&c, "nvidia.com/gpu", index, uuid, 2, out, err,
					      sizeof(err)), 0), "%s", err);
	cr_assert(eq(str, out[0], "nvidia.com/gpu=GPU-aaaa-0000"), "by UUID where the spec has it");
	cr_assert(eq(str, out[1], "nvidia.com/gpu=1"), "else by index");
	/* a GPU the spec does not name is an error naming it: never fewer GPUs */
	cr_assert(eq(int, drv_cdi_gpu_devices(&c, "nvidia.com/gpu", index, uuid, 3, out, err,
					      sizeof(err)), DRV_ENOENT));
	cr_assert(not(eq(ptr, strstr(err, "no device for GPU 2 (GPU-cccc-2222)"), NULL)), "%s", err);
	drv_cdi_release(&c);
	cr_assert(eq(int, drv_cdi_load(dirs, "amd.com/gpu", &c, err, sizeof(err)), DRV_ENOENT));
	cr_assert(eq(str, err, "no CDI spec of kind amd.com/gpu"));
	drv_cdi_release(&c);
	cr_assert(eq(int, drv_cdi_load(dirs, "example.com/fpga", &c, err, sizeof(err)), 0), "%s", err);
	cr_assert(eq(sz, c.n, 1), "JSON specs are read too");
	drv_cdi_release(&c);
}

Test(podman, script_passes_cdi_devices, .init = setup, .fini = teardown)
{
	char envf[128], *script = NULL, err[256];
	char *env[] = { "RANK=0", NULL };
	const char *devs[] = { "nvidia.com/gpu=GPU-aaaa-0000", "nvidia.com/gpu=1", NULL };
	struct drv_podman_conf pc = { .nofile = 1024 };
	struct drv_container_spec cs = { .name = "drover-1.0-e1", .image = "img:1", .env = env,
		.env_file = envf, .task_id = "1.0", .job_id = "1", .node = "n", .epoch = 1,
		.devices = devs };

	snprintf(envf, sizeof(envf), "%s/1.0.env", dir);
	cr_assert(eq(int, drv_podman_script(&pc, &cs, &script, err, sizeof(err)), 0), "%s", err);
	cr_assert(not(eq(ptr, strstr(script, " '--device' 'nvidia.com/gpu=GPU-aaaa-0000' '--device' "
				     "'nvidia.com/gpu=1' "), NULL)), "%s", script);
	drv_free(script);
}

/* A task inherits only PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_ALL, TZ,
 * TMPDIR and LD_LIBRARY_PATH from the agent: never its token, nor
 * anything else of the agent's environment. */
Test(launch, task_env_inherits_only_the_listed_variables)
{
	char *argv[] = { "true", NULL };
	struct drv_task_spec t = { 0 };
	char **env;
	int i;

	setenv("DROVER_AGENT_TOKEN", "cluster-secret", 1);
	setenv("AGENT_ONLY_VAR", "x", 1);
	setenv("TZ", "UTC", 1);
	t.job_id = "1";
	t.task_id = "1.0";
	t.argv = argv;
	env = drv_task_env(&t);
	cr_assert(eq(str, (char *)drv_env_get(env, "TZ"), "UTC"));
	cr_assert(not(eq(ptr, (void *)drv_env_get(env, "PATH"), NULL)));
	cr_assert(eq(ptr, (void *)drv_env_get(env, "DROVER_AGENT_TOKEN"), NULL));
	cr_assert(eq(ptr, (void *)drv_env_get(env, "AGENT_ONLY_VAR"), NULL));
	for (i = 0; env[i]; i++)
		cr_assert(eq(ptr, strstr(env[i], "cluster-secret"), NULL), "%s", env[i]);
	drv_env_free(env);
	unsetenv("DROVER_AGENT_TOKEN");
	unsetenv("AGENT_ONLY_VAR");
}

/* srun --pty: the terminal is the task's stdin, stdout and stderr and its
 * controlling terminal (of the size it was made with); the log files stay
 * empty. */
Test(launch, pty_task_gets_the_terminal)
{
	char *argv[] = { "sh", "-c", "tty; stty size; ps -o tty= -p $$; echo to-err >&2", NULL };
	struct winsize ws = { .ws_row = 21, .ws_col = 77 };
	struct drv_task_spec t = { 0 };
	struct drv_proc p;
	char buf[4096] = "", *out, name[64];
	size_t n = 0;
	ssize_t r;
	int m, s;

	cr_assert(eq(int, openpty(&m, &s, NULL, NULL, &ws), 0), "openpty: %s", strerror(errno));
	t.task_id = "9.s0.0";
	t.argv = argv;
	t.log_dir = dir;
	t.pty = true;
	t.pty_slave = s;
	cr_assert(eq(int, drv_proc_start(&p, &t, NULL, drv_mono_ms()), 0), "%s", p.error);
	close(s);
	while (n < sizeof(buf) - 1 && (r = read(m, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;   /* EIO once the task, the terminal's last holder, is gone */
	buf[n] = '\0';
	close(m);
	run(&p);
	cr_assert(eq(int, p.exit_code, 0));
	cr_assert(not(eq(ptr, strstr(buf, "/dev/pts/"), NULL)), "tty: %s", buf);
	cr_assert(not(eq(ptr, strstr(buf, "21 77\r\n"), NULL)), "the size: %s", buf);
	snprintf(name, sizeof(name), "\npts/%d\r", atoi(strstr(buf, "/dev/pts/") + 9));
	cr_assert(not(eq(ptr, strstr(buf, name), NULL)), "its controlling terminal: %s", buf);
	cr_assert(not(eq(ptr, strstr(buf, "to-err"), NULL)), "stderr too: %s", buf);
	out = slurp(p.stdout_path);
	cr_assert(eq(str, out, ""), "the log file stays empty");
	free(out);
}
