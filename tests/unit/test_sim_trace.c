/*
 * test_sim_trace.c: the simulator's workload readers. Philly rows out of
 * time order, blank lines, malformed rows counted (or fatal with strict),
 * the gang split rule; the native CSV read, written and read back.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "drover/sim.h"

static FILE *mem(const char *s)
{
	return fmemopen((void *)s, strlen(s), "r");
}

static int64_t gpus_of(const struct drv_job *j)
{
	int64_t n = 0;
	int g;
	for (g = 0; g < j->ngroups; g++)
		n += (int64_t)j->groups[g].count * j->groups[g].gpus;
	return n;
}

Test(sim_trace, philly_sorts_skips_blank_and_counts_malformed)
{
	const char *csv = "timestamp,duration,num_gpus,gpu_time,cluster\n"
			  "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
			  "\n"
			  "2017-10-09 06:13:03,2951.0,12,35412.0,6214e9\n"
			  "2017-10-09 06:13:03,10.4,2,20.8,11cb48\n"
			  "2017-13-09 06:13:03,10,2,20,11cb48\n"      /* month 13 */
			  "2017-10-09 06:13:03,-5,2,20,11cb48\n"      /* negative duration */
			  "2017-10-09 06:13:03,5,1.5,7.5,11cb48\n"    /* fractional GPUs */
			  "2017-10-09 06:13:03,5,2,10\n"              /* 4 fields */
			  "2017-10-09 06:13:03,5,2,10,\n"             /* empty cluster */
			  "   \r\n"
			  "2017-09-29 07:58:32,860662.0,1,860662.0,6c71a0\r\n";
	struct drv_sim_workload w;
	struct drv_diags d;
	FILE *f = mem(csv);

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "t.csv");
	cr_assert(eq(int, drv_sim_read_philly(f, 8, false, &w, &d), 0));
	fclose(f);
	cr_assert(eq(int, w.njobs, 4));
	cr_assert(eq(i64, w.malformed, 5));
	cr_assert(eq(i64, w.blank, 2));
	cr_assert(eq(int, d.nwarnings, 5));
	cr_assert(eq(int, d.nerrors, 0));
	/* first reported problem: line 6, the timestamp column */
	cr_assert(eq(int, d.v[0].line, 6));
	cr_assert(eq(int, d.v[0].col, 1));
	cr_assert(eq(int, d.v[1].col, 21)); /* duration starts at column 21 */
	/* sorted by submit time: 2017-09-29 first; times relative to it */
	cr_assert(eq(i64, w.jobs[0].job.submit_time, 0));
	cr_assert(eq(str, w.jobs[0].job.tenant, "6c71a0"));
	cr_assert(eq(i64, w.jobs[0].duration, 860662));
	cr_assert(eq(int, w.jobs[0].line, 12));
	/* equal times keep file order: line 4 before line 5 */
	cr_assert(eq(int, w.jobs[1].line, 4));
	cr_assert(eq(int, w.jobs[2].line, 5));
	cr_assert(eq(i64, w.jobs[1].job.submit_time, w.jobs[2].job.submit_time));
	cr_assert(eq(i64, w.jobs[1].job.submit_time,
		     (int64_t)(9 * 86400 + 22 * 3600 + 14 * 60 + 31)));
	cr_assert(eq(i64, w.jobs[2].duration, 10)); /* 10.4 s rounds to 10 */
	cr_assert(eq(i64, w.jobs[3].job.submit_time - w.jobs[1].job.submit_time, 48 * 60 + 52));
	/* ids follow the sorted order */
	cr_assert(eq(u64, w.jobs[0].job.id, 1));
	cr_assert(eq(u64, w.jobs[3].job.id, 4));
	cr_assert(eq(int, w.ntenants, 3));
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
}

Test(sim_trace, philly_gang_split)
{
	const char *csv = "2017-10-09 00:00:00,60,12,720,a\n"
			  "2017-10-09 00:00:01,60,8,480,a\n"
			  "2017-10-09 00:00:02,60,16,960,a\n"
			  "2017-10-09 00:00:03,60,7,420,a\n"
			  "2017-10-09 00:00:04,60,1,60,a\n"
			  "2017-10-09 00:00:05,60,128,7680,a\n";
	struct drv_sim_workload w;
	struct drv_diags d;
	FILE *f = mem(csv);

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "t.csv");
	cr_assert(eq(int, drv_sim_read_philly(f, 8, true, &w, &d), 0));
	fclose(f);
	cr_assert(eq(int, w.njobs, 6));
	/* 12 on 8-GPU nodes: one task of 8 and one of 4, one gang */
	cr_assert(eq(int, w.jobs[0].job.ngroups, 2));
	cr_assert(eq(int, w.jobs[0].job.groups[0].count, 1));
	cr_assert(eq(int, w.jobs[0].job.groups[0].gpus, 8));
	cr_assert(eq(int, w.jobs[0].job.groups[1].count, 1));
	cr_assert(eq(int, w.jobs[0].job.groups[1].gpus, 4));
	cr_assert(eq(int, w.jobs[0].job.gang_min, 0));
	/* 8: one task of 8 */
	cr_assert(eq(int, w.jobs[1].job.ngroups, 1));
	cr_assert(eq(int, w.jobs[1].job.groups[0].count, 1));
	cr_assert(eq(int, w.jobs[1].job.groups[0].gpus, 8));
	/* 16: two whole-node tasks */
	cr_assert(eq(int, w.jobs[2].job.ngroups, 1));
	cr_assert(eq(int, w.jobs[2].job.groups[0].count, 2));
	/* 7 and 1: one task */
	cr_assert(eq(int, w.jobs[3].job.groups[0].gpus, 7));
	cr_assert(eq(int, w.jobs[4].job.groups[0].gpus, 1));
	cr_assert(eq(int, w.jobs[5].job.groups[0].count, 16));
	cr_assert(eq(i64, gpus_of(&w.jobs[5].job), 128));
	/* sjf oracle: the estimate is the true duration */
	cr_assert(eq(i64, w.jobs[0].job.runtime_estimate, 60));
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
}

Test(sim_trace, philly_strict_rejects_the_file)
{
	const char *csv = "timestamp,duration,num_gpus,gpu_time,cluster\n"
			  "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
			  "2017-10-09 07:01:55,abc,1,66.0,11cb48\n";
	struct drv_sim_workload w;
	struct drv_diags d;
	FILE *f = mem(csv);

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "t.csv");
	cr_assert(eq(int, drv_sim_read_philly(f, 8, true, &w, &d), DRV_EPARSE));
	fclose(f);
	cr_assert(eq(int, w.njobs, 0)); /* nothing half-accepted */
	cr_assert(eq(int, d.nerrors, 1));
	cr_assert(eq(int, d.v[0].line, 3));
	cr_assert(eq(int, d.v[0].col, 21));
	cr_assert(eq(str, d.v[0].path, "duration"));
	cr_assert(not(eq(ptr, strstr(d.v[0].msg, "'abc'"), NULL)));
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
}

static const char *native_csv =
	"name,submit_s,duration_s,time_limit_s,estimate_s,tasks,gpus,gpu_milli,gpu_mem_mib,"
	"gpu_model,cpu_milli,mem_mib,priority,preemptible,tenant,topology,regions,gang_min\n"
	"train,100,3600,7200,4000,4,8,,,H100,32000,256000,10,false,vision,required:leaf,"
	"us-east|us-west,\n"
	"train,,,,,1,1,,,,4000,16000,,,,,,\n"
	"infer,50,,,,2,0,250,20000,,1000,8000,0,true,serving,,eu-west,1\n"
	"\n"
	"x,bad,10,,,1,1,,,,,,,,,,,\n"
	"tiny,60,5,,,1,,1000,,,,,,,,,,\n";

Test(sim_trace, native_reads_every_field)
{
	struct drv_sim_workload w;
	struct drv_diags d;
	FILE *f = mem(native_csv);
	const struct drv_job *j;

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "n.csv");
	cr_assert(eq(int, drv_sim_read_native(f, false, &w, &d), 0));
	fclose(f);
	cr_assert(eq(int, w.njobs, 3));
	cr_assert(eq(i64, w.malformed, 1));
	cr_assert(eq(int, d.v[0].line, 6));
	cr_assert(eq(str, d.v[0].path, "submit_s"));
	/* sorted: infer (50), tiny (60), train (100); relative to 50 */
	j = &w.jobs[0].job;
	cr_assert(eq(str, j->name, "infer"));
	cr_assert(eq(i64, w.jobs[0].duration, DRV_SIM_SERVICE));
	cr_assert(eq(int, j->groups[0].count, 2));
	cr_assert(eq(int, j->groups[0].gpus, 0));
	cr_assert(eq(int, j->groups[0].gpu_milli, 250));
	cr_assert(eq(int, j->groups[0].gpu_mem_mib, 20000));
	cr_assert(eq(int, j->preemptible, 1));
	cr_assert(eq(int, j->nregions, 1));
	cr_assert(eq(str, j->regions[0], "eu-west"));
	cr_assert(eq(int, j->gang_min, 1));
	cr_assert(eq(str, j->tenant, "serving"));
	j = &w.jobs[1].job;
	cr_assert(eq(str, j->name, "tiny"));
	cr_assert(eq(int, j->groups[0].gpus, 1)); /* 1000 milli = one whole GPU */
	cr_assert(eq(int, j->groups[0].gpu_milli, 0));
	cr_assert(eq(str, j->tenant, "default"));
	j = &w.jobs[2].job;
	cr_assert(eq(str, j->name, "train"));
	cr_assert(eq(i64, j->submit_time, 50));
	cr_assert(eq(i64, w.jobs[2].duration, 3600));
	cr_assert(eq(i64, j->time_limit, 7200));
	cr_assert(eq(i64, j->runtime_estimate, 4000));
	cr_assert(eq(int, j->ngroups, 2));
	cr_assert(eq(int, j->groups[0].count, 4));
	cr_assert(eq(int, j->groups[0].gpus, 8));
	cr_assert(eq(int, j->groups[0].model, drv_gpu_model_find("H100")));
	cr_assert(eq(i64, j->groups[0].cpu_milli, 32000));
	cr_assert(eq(i64, j->groups[0].mem_mib, 256000));
	cr_assert(eq(int, j->groups[1].count, 1));
	cr_assert(eq(int, j->groups[1].gpus, 1));
	cr_assert(eq(int, j->groups[1].model, -1));
	cr_assert(eq(int, j->priority, 10));
	cr_assert(eq(int, j->preemptible, 0));
	cr_assert(eq(int, j->topo_mode, DRV_TOPO_REQUIRED));
	cr_assert(eq(str, j->topo_level, "leaf"));
	cr_assert(eq(int, j->nregions, 2));
	cr_assert(eq(str, j->regions[1], "us-west"));
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
}

Test(sim_trace, native_round_trip)
{
	struct drv_sim_workload w, w2;
	struct drv_diags d;
	FILE *f = mem(native_csv);
	char *buf = NULL, *buf2 = NULL;
	size_t len = 0, len2 = 0;
	FILE *out;

	drv_sim_workload_init(&w);
	drv_sim_workload_init(&w2);
	drv_diags_init(&d, "n.csv");
	cr_assert(eq(int, drv_sim_read_native(f, false, &w, &d), 0));
	fclose(f);
	out = open_memstream(&buf, &len);
	cr_assert(eq(int, drv_sim_write_native(out, &w), 0));
	fclose(out);
	f = mem(buf);
	cr_assert(eq(int, drv_sim_read_native(f, true, &w2, &d), 0));
	fclose(f);
	cr_assert(eq(int, w2.njobs, w.njobs));
	out = open_memstream(&buf2, &len2);
	drv_sim_write_native(out, &w2);
	fclose(out);
	cr_assert(eq(str, buf2, buf));
	free(buf);
	free(buf2);
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
	drv_sim_workload_release(&w2);
}

Test(sim_trace, native_header_errors_are_fatal)
{
	struct drv_sim_workload w;
	struct drv_diags d;
	FILE *f = mem("submit_s,tasks,gpus,colour\n1,1,1,red\n");

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "n.csv");
	cr_assert(eq(int, drv_sim_read_native(f, false, &w, &d), DRV_EPARSE));
	fclose(f);
	cr_assert(eq(int, d.nerrors, 1));
	cr_assert(eq(int, d.v[0].col, 21));
	cr_assert(not(eq(ptr, strstr(d.v[0].msg, "colour"), NULL)));
	drv_diags_release(&d);
	drv_sim_workload_release(&w);

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "n.csv");
	f = mem("submit_s,duration_s\n1,1\n");
	cr_assert(eq(int, drv_sim_read_native(f, false, &w, &d), DRV_EPARSE));
	fclose(f);
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
}

Test(sim_trace, native_bad_continuation_drops_the_whole_job)
{
	struct drv_sim_workload w;
	struct drv_diags d;
	FILE *f = mem("name,submit_s,tasks,gpus,priority\n"
		      "a,0,1,8,5\n"
		      "a,,1,99,\n" /* 99 GPUs per task: bad group */
		      "b,0,1,8,5\n"
		      "b,,1,1,7\n" /* priority differs from the job's */
		      "c,3,1,1,\n");

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "n.csv");
	cr_assert(eq(int, drv_sim_read_native(f, false, &w, &d), 0));
	fclose(f);
	cr_assert(eq(int, w.njobs, 1));
	cr_assert(eq(str, w.jobs[0].job.name, "c"));
	cr_assert(eq(i64, w.malformed, 2));
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
}

/* A tenants file's classes: a row may name one (its value becomes the
 * priority), an unknown name is a malformed row at the priority column,
 * and a tenant's priorityClass goes to its jobs that give no priority. */
Test(sim_trace, priority_classes_from_a_tenants_file)
{
	static const char yaml[] = "priorityClasses:\n  urgent: {value: 100}\n"
				   "  scavenger: {value: -5, preemptionPolicy: Never}\n"
				   "tenants:\n  lab: {priorityClass: scavenger}\n"
				   "  ghost: {quota: 8}\n";
	static const char csv[] = "name,submit_s,duration_s,tasks,gpus,priority,tenant\n"
				  "a,0,10,1,1,urgent,prod\n"
				  "b,1,10,1,1,urgnet,prod\n"
				  "c,2,10,1,1,,lab\n"
				  "d,3,10,1,1,7,lab\n"
				  "e,4,10,1,1,urgent,lab\n";
	struct drv_tenants t;
	struct drv_sim_workload w;
	struct drv_diags d;
	FILE *f;

	drv_diags_init(&d, "t.yaml");
	cr_assert(eq(int, drv_tenants_load_buffer(yaml, strlen(yaml), &t, &d), 0));
	drv_diags_release(&d);

	/* without the classes, a name is malformed */
	drv_sim_workload_init(&w);
	drv_diags_init(&d, "t.csv");
	f = mem(csv);
	cr_assert(eq(int, drv_sim_read_native(f, false, &w, &d), 0));
	fclose(f);
	cr_assert(eq(int, w.njobs, 2));
	cr_assert(eq(i64, w.malformed, 3));
	cr_assert(eq(int, d.v[0].line, 2));
	cr_assert(eq(int, d.v[0].col, 12));
	cr_assert(eq(str, d.v[0].path, "priority"));
	drv_diags_release(&d);
	drv_sim_workload_release(&w);

	drv_sim_workload_init(&w);
	drv_sim_workload_set_classes(&w, &t);
	drv_diags_init(&d, "t.csv");
	f = mem(csv);
	cr_assert(eq(int, drv_sim_read_native(f, false, &w, &d), 0));
	fclose(f);
	cr_assert(eq(int, w.njobs, 4));
	cr_assert(eq(i64, w.malformed, 1));
	cr_assert(eq(int, d.n, 1));
	cr_assert(eq(int, d.v[0].line, 3));
	cr_assert(eq(int, d.v[0].col, 12));
	cr_assert(not(eq(ptr, strstr(d.v[0].msg, "(urgent, scavenger)"), NULL)), "%s", d.v[0].msg);
	drv_diags_release(&d);
	/* a: named urgent; c: no priority, lab's default; d: its own 7; e: named */
	cr_assert(eq(str, w.classes[w.jobs[0].pclass], "urgent"));
	cr_assert(eq(int, w.jobs[0].job.priority, 100));
	cr_assert(eq(int, w.jobs[1].pclass, -1));
	cr_assert(eq(int, w.jobs[2].pclass, -1));

	drv_diags_init(&d, "t.yaml");
	cr_assert(eq(int, drv_sim_bind_tenants(&w, &t, NULL, &d), 1));
	cr_assert(eq(str, w.classes[w.jobs[1].pclass], "scavenger"));
	cr_assert(eq(int, w.jobs[1].job.priority, -5));
	cr_assert(eq(int, w.jobs[2].pclass, -1));
	cr_assert(eq(int, w.jobs[2].job.priority, 7));
	cr_assert(eq(str, w.classes[w.jobs[3].pclass], "urgent"));
	/* ghost has no job: a warning at its line */
	cr_assert(eq(int, d.nerrors, 0));
	cr_assert(eq(int, d.nwarnings, 1));
	cr_assert(eq(int, d.v[0].line, 6));
	cr_assert(eq(str, d.v[0].path, "tenants.ghost"));
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
	drv_tenants_release(&t);
}

/* The topology column carries Kueue's slices: slice:LEVEL:N, alone or after
 * a mode with +; they come back as written, and a size below 1 is refused. */
Test(sim_trace, native_slices)
{
	static const char *csv =
		"name,submit_s,duration_s,tasks,gpus,topology\n"
		"a,0,10,4,8,required:spine+slice:leaf:2\n"
		"b,1,10,4,8,slice:leaf:4\n"
		"c,2,10,4,8,slice:leaf:0\n"
		"d,3,10,4,8,slice:leaf\n";
	struct drv_sim_workload w;
	struct drv_diags d;
	FILE *f = mem(csv), *out;
	char *buf = NULL;
	size_t len = 0;

	drv_sim_workload_init(&w);
	drv_diags_init(&d, "s.csv");
	cr_assert(eq(int, drv_sim_read_native(f, false, &w, &d), 0));
	fclose(f);
	cr_assert(eq(int, w.njobs, 2));
	cr_assert(eq(i64, w.malformed, 2));
	cr_assert(eq(str, d.v[0].path, "topology"));
	cr_assert(eq(int, w.jobs[0].job.topo_mode, DRV_TOPO_REQUIRED));
	cr_assert(eq(str, w.jobs[0].job.topo_level, "spine"));
	cr_assert(eq(str, w.jobs[0].job.slice_level, "leaf"));
	cr_assert(eq(int, w.jobs[0].job.slice_size, 2));
	cr_assert(eq(int, w.jobs[1].job.topo_mode, DRV_TOPO_NONE));
	cr_assert(eq(int, w.jobs[1].job.slice_size, 4));
	out = open_memstream(&buf, &len);
	cr_assert(eq(int, drv_sim_write_native(out, &w), 0));
	fclose(out);
	cr_assert(not(eq(ptr, strstr(buf, ",required:spine+slice:leaf:2,"), NULL)), "%s", buf);
	cr_assert(not(eq(ptr, strstr(buf, ",slice:leaf:4,"), NULL)), "%s", buf);
	free(buf);
	drv_diags_release(&d);
	drv_sim_workload_release(&w);
}
