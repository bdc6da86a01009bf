/*
 * test_proto.c: the agent protocol's messages (include/drover/proto.h):
 * every message survives encode -> decode -> encode byte for byte; a
 * missing required key or a wrong type is an error naming the key path;
 * unknown keys are ignored and logged once per key and peer; optional
 * keys take their documented defaults; versions more than one apart are
 * refused.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "drover/proto.h"

static char *dump(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(j);
	return s;
}

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	cr_assert(j != NULL, "test JSON: %s at %d:%d", e.text, e.line, e.column);
	return j;
}

static struct drv_proto_dec quiet(void)
{
	struct drv_proto_dec d;

	memset(&d, 0, sizeof(d));
	d.peer = "test";
	return d;
}

/* A full assignment, as the controller sends it. */
static const char *full_task =
	"{\"task_id\": \"42.1\", \"job_id\": 42, \"job_name\": \"train\", \"epoch\": 7,"
	" \"desired\": \"stop\", \"stop_reason\": \"preempted by job 9\", \"user\": \"alice\","
	" \"runtime\": \"podman\", \"image\": \"pytorch/pytorch:2.4\", \"container\": \"trainer\","
	" \"argv\": [\"python\", \"train.py\"], \"command_len\": 1, \"pull_policy\": \"Never\","
	" \"mounts\": [{\"name\": \"data\", \"type\": \"hostPath\", \"host_path\": \"/d\","
	" \"container_path\": \"/data\", \"sub_path\": \"x\", \"read_only\": true},"
	" {\"type\": \"emptyDir\", \"container_path\": \"/t\", \"memory\": true, \"size_mib\": 64}],"
	" \"shm_mib\": 2048, \"host_ipc\": true, \"run_as_uid\": 1234, \"run_as_gid\": 0,"
	" \"run_as_non_root\": true,"
	" \"script\": null, \"workdir\": \"/w\","
	" \"env\": {\"B\": \"2\", \"A\": \"1\"}, \"gpus\": [4, 5], \"gpu_milli\": 1000,"
	" \"volumes\": [{\"name\": \"creds\", \"mount_path\": \"/etc/creds\","
	"   \"sub_path\": \"token\", \"read_only\": true, \"secret\": true,"
	"   \"files\": [{\"path\": \"token\", \"mode\": 384, \"data\": \"aGk=\"}]},"
	"  {\"name\": \"cfg\", \"mount_path\": \"/etc/cfg\", \"read_only\": false,"
	"   \"secret\": false, \"files\": []}],"
	" \"cpu_milli\": 8000, \"mem_mib\": 65536, \"rank\": 1, \"world_size\": 2,"
	" \"local_rank\": 0, \"local_world_size\": 1, \"node_rank\": 1, \"nnodes\": 2,"
	" \"master_addr\": \"10.0.0.5\", \"master_port\": 29507,"
	" \"peers\": [{\"rank\": 0, \"node\": \"a\", \"address\": \"10.0.0.5\"},"
	"             {\"rank\": 1, \"node\": \"b\", \"address\": \"10.0.0.6\"}],"
	" \"time_limit_s\": 3600, \"grace_s\": 30, \"output_max_bytes\": 1048576,"
	" \"stdout_file\": \"/h/slurm-42.out\", \"stderr_file\": \"/h/e-42.log\","
	" \"open_append\": true, \"umask\": 18, \"signal\": 10, \"signal_seq\": 77,"
	" \"signal_group\": true, \"pty\": true, \"pty_rows\": 40, \"pty_cols\": 120}";

Test(proto, sync_reply_round_trip_with_every_assignment_field)
{
	char text[4096];
	struct drv_proto_sync_reply r, r2;
	struct drv_proto_dec d = quiet();
	char *a, *b;
	json_t *j;

	snprintf(text, sizeof(text),
		 "{\"version\": 18, \"heartbeat_interval_s\": 5, \"agent_lease_s\": 6,"
		 " \"allow_root_tasks\": true, \"tasks\": [%s],"
		 " \"stale\": [{\"task_id\": \"41.0\", \"epoch\": 5, \"reason\": \"stale epoch\"}]}",
		 full_task);
	j = parse(text);
	cr_assert(eq(int, drv_proto_sync_reply_decode(j, &r, &d), 0), "%s", d.err);
	cr_assert(r.has_tasks);
	cr_assert(eq(i64, r.agent_lease_s, 6));
	cr_assert(r.allow_root_tasks);
	cr_assert(eq(sz, r.ntasks, 1));
	cr_assert(eq(str, (char *)r.tasks[0].task_id, "42.1"));
	cr_assert(r.tasks[0].stop);
	cr_assert(eq(sz, r.tasks[0].nargv, 2));
	cr_assert(eq(i64, r.tasks[0].command_len, 1));
	cr_assert(eq(str, (char *)r.tasks[0].pull_policy, "Never"));
	cr_assert(eq(str, (char *)r.tasks[0].runtime, "podman"));
	cr_assert(eq(sz, r.tasks[0].nmounts, 2));
	cr_assert(r.tasks[0].mounts[0].read_only);
	cr_assert(eq(str, (char *)r.tasks[0].mounts[0].sub_path, "x"));
	cr_assert(r.tasks[0].mounts[1].memory);
	cr_assert(eq(i64, r.tasks[0].mounts[1].size_mib, 64));
	cr_assert(eq(i64, r.tasks[0].shm_mib, 2048));
	cr_assert(r.tasks[0].host_ipc);
	cr_assert(eq(i64, r.tasks[0].run_as_uid, 1234));
	cr_assert(eq(i64, r.tasks[0].run_as_gid, 0), "gid 0 is a gid, not absent");
	cr_assert(r.tasks[0].run_as_non_root);
	cr_assert(eq(str, (char *)r.tasks[0].env[0].name, "B"), "env keeps its order");
	cr_assert(eq(i64, r.tasks[0].gpus[1], 5));
	cr_assert(eq(str, (char *)r.tasks[0].peers[1].address, "10.0.0.6"));
	cr_assert(eq(ptr, (void *)r.tasks[0].script, NULL));
	cr_assert(eq(str, (char *)r.stale[0].reason, "stale epoch"));
	cr_assert(eq(i64, r.tasks[0].output_max_bytes, 1048576));
	cr_assert(eq(str, (char *)r.tasks[0].stdout_file, "/h/slurm-42.out"));
	cr_assert(eq(str, (char *)r.tasks[0].stderr_file, "/h/e-42.log"));
	cr_assert(r.tasks[0].open_append);
	cr_assert(eq(i64, r.tasks[0].umask, 022));
	cr_assert(eq(i64, r.tasks[0].signal, 10));
	cr_assert(eq(i64, r.tasks[0].signal_seq, 77));
	cr_assert(r.tasks[0].signal_group);
	cr_assert(r.tasks[0].pty);
	cr_assert(eq(i64, r.tasks[0].pty_rows, 40));
	cr_assert(eq(i64, r.tasks[0].pty_cols, 120));
	cr_assert(eq(sz, r.tasks[0].nvolumes, 2));
	cr_assert(r.tasks[0].volumes[0].secret && r.tasks[0].volumes[0].read_only);
	cr_assert(eq(str, (char *)r.tasks[0].volumes[0].files[0].data, "aGk="));
	cr_assert(eq(i64, r.tasks[0].volumes[0].files[0].mode, 0600));
	cr_assert(not(r.tasks[0].volumes[1].read_only));
	a = dump(drv_proto_sync_reply_encode(&r));
	b = dump(json_incref(j));
	cr_assert(eq(str, a, b));
	cr_assert(eq(int, drv_proto_sync_reply_decode(j, &r2, &d), 0));
	free(b);
	b = dump(drv_proto_sync_reply_encode(&r2));
	cr_assert(eq(str, a, b));
	free(a);
	free(b);
	drv_proto_sync_reply_release(&r);
	drv_proto_sync_reply_release(&r2);
	drv_proto_sync_reply_release(&r2);   /* a second release is a no-op */
	json_decref(j);
}

Test(proto, sync_round_trip)
{
	struct drv_proto_ref tasks[] = { { .task_id = "42.0", .epoch = 7, .state = "running",
		.container = { .name = "drover-42.0-e7", .command = "podman create 'img'",
			       .image_pull = "pulling (attempt 2 of 3)" } } };
	struct drv_proto_report reps[] = {
		{ .task_id = "42.0", .epoch = 7, .state = DRV_PROTO_RUNNING, .pid = 123,
		  .time = "2026-12-01T05:00:00Z", .exit_code = -1 },
		{ .task_id = "43.0", .epoch = 9, .state = DRV_PROTO_EXITED, .signal = 9,
		  .signal_name = "SIGKILL", .oom_killed = true, .exit_code = -1 },
		{ .task_id = "44.0", .epoch = 10, .state = DRV_PROTO_EXITED, .exit_code = 3,
		  .fenced = true, .reason = "the agent's lease ran out",
		  .container = { .name = "drover-44.0-e10", .image_pull = "pulled (attempt 1 of 3)" } },
		{ .task_id = "45.0", .epoch = 11, .state = DRV_PROTO_FAILED, .exit_code = -1,
		  .reason = "no command", .requeue = true, .drain = "prolog failed: exit 3" },
	};
	struct drv_proto_gpu_health gpus[] = {
		{ .index = 0, .healthy = true, .xid = 0, .ecc_uncorrected = 0, .temperature_c = 41,
		  .utilization = 97, .memory_used_mib = 70000, .power_w = 650.5 },
		{ .index = 1, .healthy = false, .xid = 79, .ecc_uncorrected = -1,
		  .temperature_c = -1, .utilization = -1, .memory_used_mib = -1, .power_w = NAN },
	};
	struct drv_proto_sync m, back;
	struct drv_proto_dec d = quiet();
	json_t *j;
	char *a, *b;

	drv_proto_sync_init(&m);
	m.node = "node-a";
	m.session = 31;
	m.version = 17;
	m.wait_s = 5;
	m.tasks = tasks;
	m.ntasks = 1;
	m.reports = reps;
	m.nreports = 4;
	m.gpus = gpus;
	m.ngpus = 2;
	j = drv_proto_sync_encode(&m);
	cr_assert(eq(int, drv_proto_sync_decode(j, &back, &d), 0), "%s", d.err);
	cr_assert(eq(int, back.reports[1].state, DRV_PROTO_EXITED));
	cr_assert(back.reports[1].oom_killed);
	cr_assert(eq(i64, back.reports[2].exit_code, 3));
	cr_assert(back.reports[2].fenced);
	cr_assert(not(back.reports[1].fenced), "absent: false");
	cr_assert(back.reports[3].requeue);
	cr_assert(not(back.reports[2].requeue), "absent: false");
	cr_assert(eq(str, (char *)back.reports[3].drain, "prolog failed: exit 3"));
	cr_assert(eq(ptr, (void *)back.reports[2].drain, NULL), "absent: NULL");
	cr_assert(eq(i64, back.reports[1].exit_code, -1), "a signal, no exit code");
	cr_assert(eq(i64, back.gpus[1].temperature_c, -1), "absent: -1");
	cr_assert(isnan(back.gpus[1].power_w));
	cr_assert(eq(str, (char *)back.tasks[0].container.image_pull, "pulling (attempt 2 of 3)"));
	cr_assert(eq(str, (char *)back.reports[2].container.name, "drover-44.0-e10"));
	cr_assert(eq(ptr, (void *)back.reports[2].container.command, NULL), "absent: NULL");
	cr_assert(eq(ptr, (void *)back.reports[1].container.name, NULL), "no container: none");
	a = dump(j);
	b = dump(drv_proto_sync_encode(&back));
	cr_assert(eq(str, a, b));
	free(a);
	free(b);
	drv_proto_sync_release(&back);
}

Test(proto, register_and_registered_round_trip)
{
	const char *text =
		"{\"protocol\": 1, \"name\": \"node-a\", \"hostname\": \"gpu-17\","
		" \"address\": \"10.0.0.5\", \"agent_url\": \"http://10.0.0.5:9400\","
		" \"metrics_url\": \"http://10.0.0.5:9401\", \"no_metrics\": true,"
		" \"version\": \"0.1.0\", \"labels\": {\"zone\": \"a\"}, \"cpu_milli\": 128000,"
		" \"mem_mib\": 2097152, \"backend\": \"fake\","
		" \"gpus\": [{\"index\": 0, \"uuid\": \"GPU-1\", \"model\": \"NVIDIA H100 80GB HBM3\","
		"             \"memory_mib\": 81559, \"pci_bus_id\": \"00000000:18:00.0\"},"
		"            {\"index\": 1, \"uuid\": \"GPU-2\", \"model\": \"NVIDIA H100 80GB HBM3\","
		"             \"memory_mib\": 81559, \"pci_bus_id\": \"00000000:19:00.0\"}],"
		" \"topology\": {\"gpu_matrix\": [[\"X\", \"NV18\"], [\"NV18\", \"X\"]],"
		"  \"nics\": [{\"name\": \"mlx5_0\", \"link_layer\": \"InfiniBand\", \"state\": \"ACTIVE\","
		"             \"rate_gbps\": 400, \"near_gpus\": [0, 1]}]},"
		" \"running\": [{\"task_id\": \"42.0\", \"epoch\": 7, \"pid\": 12345}]}";
	const char *ans = "{\"node\": \"node-a\", \"session\": 31, \"heartbeat_interval_s\": 5,"
			  " \"heartbeat_timeout_s\": 30, \"agent_lease_s\": 60, \"allow_root_tasks\": true,"
			  " \"pool\": \"default\", \"labels\": {\"zone\": \"a\"}, \"protocol\": 2}";
	struct drv_proto_register m;
	struct drv_proto_registered ok;
	struct drv_proto_dec d = quiet();
	json_t *j = parse(text), *k = parse(ans);
	char *a, *b;

	cr_assert(eq(int, drv_proto_register_decode(j, &m, &d), 0), "%s", d.err);
	cr_assert(eq(str, (char *)m.gpu_matrix[1][0], "NV18"));
	cr_assert(eq(i64, m.nics[0].near_gpus[1], 1));
	cr_assert(eq(i64, m.running[0].pid, 12345));
	a = dump(drv_proto_register_encode(&m));
	b = dump(json_incref(j));
	cr_assert(eq(str, a, b));
	free(a);
	free(b);
	drv_proto_register_release(&m);
	cr_assert(eq(int, drv_proto_registered_decode(k, &ok, &d), 0), "%s", d.err);
	cr_assert(eq(i64, ok.agent_lease_s, 60));
	cr_assert(eq(i64, ok.protocol, 2));
	cr_assert(ok.allow_root_tasks);
	a = dump(drv_proto_registered_encode(&ok));
	b = dump(json_incref(k));
	cr_assert(eq(str, a, b));
	free(a);
	free(b);
	drv_proto_registered_release(&ok);
	json_decref(j);
	json_decref(k);
}

/* The error of decoding text as a sync reply. */
static void reply_error(const char *text, const char *want)
{
	struct drv_proto_sync_reply r;
	struct drv_proto_dec d = quiet();
	json_t *j = parse(text);

	cr_assert(eq(int, drv_proto_sync_reply_decode(j, &r, &d), DRV_EINVAL), "%s", text);
	cr_assert(eq(str, d.err, (char *)want));
	cr_assert(eq(ptr, r.tasks, NULL), "nothing half-filled");
	json_decref(j);
}

Test(proto, strict_about_required_keys_and_types)
{
	reply_error("{\"heartbeat_interval_s\": 5}", "version: missing (expected an integer)");
	reply_error("{\"version\": \"18\", \"heartbeat_interval_s\": 5}",
		    "version: expected an integer, found a string");
	reply_error("{\"version\": 1, \"heartbeat_interval_s\": 5, \"tasks\": [{\"task_id\": \"1.0\","
		    " \"job_id\": 1, \"epoch\": 1, \"desired\": \"run\"}, {\"task_id\": \"1.1\","
		    " \"job_id\": 1, \"epoch\": \"7\", \"desired\": \"run\"}]}",
		    "tasks[1].epoch: expected an integer, found a string");
	reply_error("{\"version\": 1, \"heartbeat_interval_s\": 5, \"tasks\": [{\"task_id\": \"1.0\","
		    " \"job_id\": 1, \"epoch\": 1, \"desired\": \"walk\"}]}",
		    "tasks[0].desired: \"walk\": expected run or stop");
	reply_error("{\"version\": 1, \"heartbeat_interval_s\": 5, \"tasks\": [{\"task_id\": \"1.0\","
		    " \"job_id\": 1, \"epoch\": 1, \"desired\": \"run\", \"env\": {\"A\": 1}}]}",
		    "tasks[0].env.A: expected a string, found an integer");
	reply_error("{\"version\": 1, \"heartbeat_interval_s\": 5, \"tasks\": [3]}",
		    "tasks[0]: expected a mapping, found an integer");
	reply_error("[]", "message: expected a mapping, found a list");
}

/* A task's usage (seff) rides on a sync's task states and on its end
 * report, and comes back as sent. */
Test(proto, usage_round_trip)
{
	struct drv_proto_sync m, back;
	struct drv_proto_dec d = quiet();
	struct drv_proto_gpu_use *gu = calloc(2, sizeof(*gu));
	struct drv_proto_usage *live = calloc(1, sizeof(*live)), *end = calloc(1, sizeof(*end));
	struct drv_proto_ref *tasks = calloc(1, sizeof(*tasks));
	struct drv_proto_report *reps = calloc(1, sizeof(*reps));
	json_t *j;
	char *a, *b;

	gu[0] = (struct drv_proto_gpu_use){ .gpu = 3, .util_pct = 87.25, .mem_max_mib = 58000,
					    .samples = 12 };
	gu[1] = (struct drv_proto_gpu_use){ .gpu = 5, .util_pct = 0, .mem_max_mib = -1,
					    .samples = 12 };
	*live = (struct drv_proto_usage){ .cpu_s = 1.5, .mem_max_mib = 300, .gpus = gu, .ngpus = 2 };
	*end = (struct drv_proto_usage){ .cpu_s = -1, .mem_max_mib = 812 };
	tasks[0] = (struct drv_proto_ref){ .task_id = "42.0", .epoch = 7, .state = "running",
					   .usage = live };
	reps[0] = (struct drv_proto_report){ .task_id = "43.0", .epoch = 9,
					     .state = DRV_PROTO_EXITED, .exit_code = 0, .usage = end };
	drv_proto_sync_init(&m);
	m.node = "node-a";
	m.session = 1;
	m.tasks = tasks;
	m.ntasks = 1;
	m.reports = reps;
	m.nreports = 1;
	j = drv_proto_sync_encode(&m);
	cr_assert(eq(int, drv_proto_sync_decode(j, &back, &d), 0), "%s", d.err);
	cr_assert(not(eq(ptr, back.tasks[0].usage, NULL)));
	cr_assert(eq(dbl, back.tasks[0].usage->cpu_s, 1.5));
	cr_assert(eq(i64, back.tasks[0].usage->mem_max_mib, 300));
	cr_assert(eq(sz, back.tasks[0].usage->ngpus, 2));
	cr_assert(eq(i64, back.tasks[0].usage->gpus[0].gpu, 3));
	cr_assert(eq(dbl, back.tasks[0].usage->gpus[0].util_pct, 87.25));
	cr_assert(eq(i64, back.tasks[0].usage->gpus[0].mem_max_mib, 58000));
	cr_assert(eq(i64, back.tasks[0].usage->gpus[1].mem_max_mib, -1), "absent: -1");
	cr_assert(eq(i64, back.tasks[0].usage->gpus[1].samples, 12));
	cr_assert(eq(dbl, back.reports[0].usage->cpu_s, -1), "absent: unknown");
	cr_assert(eq(i64, back.reports[0].usage->mem_max_mib, 812));
	cr_assert(eq(sz, back.reports[0].usage->ngpus, 0));
	a = dump(j);
	b = dump(drv_proto_sync_encode(&back));
	cr_assert(eq(str, a, b));
	free(a);
	free(b);
	drv_proto_sync_release(&back);
	drv_proto_sync_release(&m);   /* the sender's usage is freed the same way */
}

Test(proto, usage_fields_are_typed)
{
	struct drv_proto_sync m;
	struct drv_proto_dec d = quiet();
	json_t *j = parse("{\"node\": \"a\", \"session\": 1, \"version\": 0, \"tasks\": "
			  "[{\"task_id\": \"1.0\", \"epoch\": 1, \"usage\": {\"gpus\": "
			  "[{\"gpu\": 0}, {\"util_pct\": 3}]}}]}");

	cr_assert(eq(int, drv_proto_sync_decode(j, &m, &d), DRV_EINVAL));
	cr_assert(eq(str, d.err, "tasks[0].usage.gpus[1].gpu: missing (expected an integer)"),
		  "%s", d.err);
	json_decref(j);
	j = parse("{\"node\": \"a\", \"session\": 1, \"version\": 0, \"reports\": "
		  "[{\"task_id\": \"1.0\", \"epoch\": 1, \"state\": \"exited\", "
		  "\"usage\": {\"cpu_s\": \"lots\"}}]}");
	cr_assert(eq(int, drv_proto_sync_decode(j, &m, &d), DRV_EINVAL));
	cr_assert(eq(str, d.err, "reports[0].usage.cpu_s: expected a number, found a string"),
		  "%s", d.err);
	json_decref(j);
}

Test(proto, report_state_must_be_known)
{
	struct drv_proto_sync m;
	struct drv_proto_dec d = quiet();
	json_t *j = parse("{\"node\": \"a\", \"session\": 1, \"version\": 0, \"reports\": "
			  "[{\"task_id\": \"1.0\", \"epoch\": 1, \"state\": \"gone\"}]}");

	cr_assert(eq(int, drv_proto_sync_decode(j, &m, &d), DRV_EINVAL));
	cr_assert(eq(str, d.err, "reports[0].state: \"gone\": expected running, exited or failed"));
	json_decref(j);
}

static int nlogged;
static char last_line[256], all_lines[1024];

static void count_log(void *cls, const char *line)
{
	size_t n = strlen(all_lines);

	(void)cls;
	nlogged++;
	snprintf(last_line, sizeof(last_line), "%s", line);
	snprintf(all_lines + n, sizeof(all_lines) - n, "%s\n", line);
}

Test(proto, tolerant_of_unknown_keys_logged_once_per_key_and_peer)
{
	struct drv_proto_seen *seen = drv_proto_seen_new();
	struct drv_proto_dec d = { .peer = "node-a", .seen = seen, .log = count_log };
	struct drv_proto_sync_reply r;
	json_t *j = parse("{\"version\": 1, \"heartbeat_interval_s\": 5, \"colour\": \"red\","
			  " \"tasks\": [{\"task_id\": \"1.0\", \"job_id\": 1, \"epoch\": 1,"
			  " \"desired\": \"run\", \"priority\": 3}, {\"task_id\": \"1.1\","
			  " \"job_id\": 1, \"epoch\": 1, \"desired\": \"run\", \"priority\": 4}]}");

	nlogged = 0;
	all_lines[0] = '\0';
	cr_assert(eq(int, drv_proto_sync_reply_decode(j, &r, &d), 0), "%s", d.err);
	drv_proto_sync_reply_release(&r);
	cr_assert(eq(int, nlogged, 2), "colour, and tasks[].priority once");
	cr_assert(eq(str, all_lines, "node-a: unknown key tasks[].priority ignored\n"
				      "node-a: unknown key colour ignored\n"));
	cr_assert(eq(int, drv_proto_sync_reply_decode(j, &r, &d), 0));
	drv_proto_sync_reply_release(&r);
	cr_assert(eq(int, nlogged, 2), "the same peer: not again");
	d.peer = "node-b";
	cr_assert(eq(int, drv_proto_sync_reply_decode(j, &r, &d), 0));
	drv_proto_sync_reply_release(&r);
	cr_assert(eq(int, nlogged, 4), "another peer: once more");
	json_decref(j);
	drv_proto_seen_free(seen);
}

Test(proto, optional_keys_take_their_defaults)
{
	struct drv_proto_sync_reply r;
	struct drv_proto_dec d = quiet();
	json_t *j = parse("{\"version\": 1, \"heartbeat_interval_s\": 5, \"tasks\": [{\"task_id\":"
			  " \"1.0\", \"job_id\": 1, \"epoch\": 1, \"desired\": \"run\","
			  " \"image\": null}]}");
	const struct drv_proto_task *t;

	cr_assert(eq(int, drv_proto_sync_reply_decode(j, &r, &d), 0), "%s", d.err);
	t = &r.tasks[0];
	cr_assert(eq(str, (char *)t->runtime, "host"));
	cr_assert(eq(ptr, (void *)t->image, NULL));
	cr_assert(eq(i64, t->world_size, 1));
	cr_assert(eq(i64, t->local_world_size, 1));
	cr_assert(eq(i64, t->nnodes, 1));
	cr_assert(eq(i64, t->gpu_milli, 1000));
	cr_assert(eq(i64, t->master_port, 29500));
	cr_assert(eq(i64, t->grace_s, -1));
	cr_assert(eq(i64, t->output_max_bytes, 0), "no key: no cap");
	cr_assert(eq(ptr, (void *)t->stdout_file, NULL), "no key: the agent's own files");
	cr_assert(eq(i64, t->umask, -1), "no key: the agent's umask");
	cr_assert(eq(sz, t->nargv, 0));
	drv_proto_sync_reply_release(&r);
	json_decref(j);

	j = parse("{\"version\": 1, \"heartbeat_interval_s\": 5}");
	cr_assert(eq(int, drv_proto_sync_reply_decode(j, &r, &d), 0));
	cr_assert(not(r.has_tasks), "no tasks key: the agent keeps its set");
	drv_proto_sync_reply_release(&r);
	json_decref(j);
}

Test(proto, versions_at_most_one_apart)
{
	char msg[200];

	cr_assert(eq(int, drv_proto_version_check(DRV_PROTO_VERSION, msg, sizeof(msg)), 0));
	cr_assert(eq(int, drv_proto_version_check(DRV_PROTO_VERSION + 1, msg, sizeof(msg)), 0));
	cr_assert(eq(int, drv_proto_version_check(DRV_PROTO_VERSION - 1, msg, sizeof(msg)), 0));
	cr_assert(eq(int, drv_proto_version_check(DRV_PROTO_VERSION + 2, msg, sizeof(msg)),
		     DRV_EPERM));
	snprintf(last_line, sizeof(last_line), "agent speaks protocol %d; this controller speaks %d "
		 "(at most one apart)", DRV_PROTO_VERSION + 2, DRV_PROTO_VERSION);
	cr_assert(eq(str, msg, last_line));
}

/* Version 1 is the floor: nothing below it exists. The agent's side (2 on)
 * names the controller; a version 1 controller's answer has no
 * "protocol" (it reads as 0, which the agent takes for 1). */
Test(proto, versions_have_a_floor_and_both_sides_check)
{
	struct drv_proto_registered ok;
	struct drv_proto_dec d = quiet();
	json_t *j = parse("{\"node\": \"n\", \"session\": 1}");
	char msg[200];

	cr_assert(eq(int, DRV_PROTO_VERSION, 2));
	cr_assert(eq(int, drv_proto_versions_check(1, 0, "agent", "controller", msg, sizeof(msg)),
		     DRV_EPERM));
	cr_assert(eq(str, msg, "agent speaks protocol 0; this controller speaks 1 (at most one apart)"));
	cr_assert(eq(int, drv_proto_versions_check(2, 1, "controller", "agent", msg, sizeof(msg)), 0));
	cr_assert(eq(int, drv_proto_versions_check(2, 4, "controller", "agent", msg, sizeof(msg)),
		     DRV_EPERM));
	cr_assert(eq(str, msg, "controller speaks protocol 4; this agent speaks 2 (at most one apart)"));
	cr_assert(eq(int, drv_proto_registered_decode(j, &ok, &d), 0), "%s", d.err);
	cr_assert(eq(i64, ok.protocol, 0));
	drv_proto_registered_release(&ok);
	json_decref(j);
}

/* DROVER_PROTO_VERSION makes a build speak an older version, within range. */
Test(proto, speaks_an_older_version_when_told)
{
	char msg[200] = "";

	unsetenv("DROVER_PROTO_VERSION");
	cr_assert(eq(int, drv_proto_speaks(msg, sizeof(msg)), DRV_PROTO_VERSION));
	setenv("DROVER_PROTO_VERSION", "1", 1);
	cr_assert(eq(int, drv_proto_speaks(msg, sizeof(msg)), 1));
	setenv("DROVER_PROTO_VERSION", "3", 1);
	cr_assert(eq(int, drv_proto_speaks(msg, sizeof(msg)), DRV_EINVAL));
	cr_assert(eq(str, msg, "DROVER_PROTO_VERSION: \"3\": expected a protocol version from 1 to 2"));
	setenv("DROVER_PROTO_VERSION", "1x", 1);
	cr_assert(eq(int, drv_proto_speaks(msg, sizeof(msg)), DRV_EINVAL));
	unsetenv("DROVER_PROTO_VERSION");
}

/* open_endpoints: false travels in the register answer and every sync
 * reply; absent (an older controller, or true) reads as open. */
Test(proto, open_endpoints_false_round_trips_and_absent_is_open)
{
	const char *reg = "{\"node\": \"node-a\", \"session\": 3, \"heartbeat_interval_s\": 5,"
			  " \"heartbeat_timeout_s\": 30, \"allow_root_tasks\": false,"
			  " \"open_endpoints\": false, \"pool\": \"default\", \"labels\": {}}";
	const char *syn = "{\"version\": 2, \"heartbeat_interval_s\": 5, \"open_endpoints\": false,"
			  " \"stale\": []}";
	struct drv_proto_registered ok;
	struct drv_proto_sync_reply r;
	struct drv_proto_dec d = quiet();
	json_t *j = parse(reg), *k = parse(syn), *none = parse("{\"version\": 2, "
							      "\"heartbeat_interval_s\": 5}");
	char *a, *b;

	cr_assert(eq(int, drv_proto_registered_decode(j, &ok, &d), 0), "%s", d.err);
	cr_assert(ok.endpoints_closed);
	a = dump(drv_proto_registered_encode(&ok));
	b = dump(json_incref(j));
	cr_assert(eq(str, a, b));
	free(a);
	free(b);
	drv_proto_registered_release(&ok);
	cr_assert(eq(int, drv_proto_sync_reply_decode(k, &r, &d), 0), "%s", d.err);
	cr_assert(r.endpoints_closed);
	a = dump(drv_proto_sync_reply_encode(&r));
	b = dump(json_incref(k));
	cr_assert(eq(str, a, b));
	free(a);
	free(b);
	drv_proto_sync_reply_release(&r);
	cr_assert(eq(int, drv_proto_sync_reply_decode(none, &r, &d), 0), "%s", d.err);
	cr_assert(eq(int, r.endpoints_closed, 0));
	drv_proto_sync_reply_release(&r);
	json_decref(j);
	json_decref(k);
	json_decref(none);
}
