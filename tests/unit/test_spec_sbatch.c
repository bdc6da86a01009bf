/*
 * test_spec_sbatch.c: Slurm batch scripts read the way sbatch reads them:
 * directive forms, option spellings, time forms, arrays, hetjob
 * components, --export, command-line options that win, and errors with
 * line:col.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drover/spec.h"

static struct drv_jobspec s;
static struct drv_diags d;

static void setup(void)
{
	drv_jobspec_init(&s);
	drv_diags_init(&d, "job.sh");
}

static void teardown(void)
{
	drv_jobspec_release(&s);
	drv_diags_release(&d);
}

TestSuite(spec_sbatch, .init = setup, .fini = teardown);

static int parse(const char *text)
{
	return drv_spec_parse_buffer(text, strlen(text), "job.sh", &s, &d);
}

static const char *env(int g, const char *name)
{
	return drv_jobspec_env(&s, g, name);
}

Test(spec_sbatch, training_script_equals_the_pod)
{
	struct drv_jobspec pod;
	struct drv_diags pd;
	int i;
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/training-job.sbatch", &s, &d), 0));
	drv_jobspec_init(&pod);
	drv_diags_init(&pd, "pod");
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/training-job.yaml", &pod, &pd), 0));
	cr_assert(eq(str, s.job.name, pod.job.name));
	cr_assert(eq(int, drv_job_tasks(&s.job), drv_job_tasks(&pod.job)));
	cr_assert(eq(int, s.job.groups[0].gpus, 8));
	cr_assert(eq(int, s.run[0].nenv, pod.run[0].nenv));
	for (i = 0; i < pod.run[0].nenv; i++) {
		cr_assert(eq(str, s.run[0].env[i].name, pod.run[0].env[i].name));
		cr_assert(eq(str, s.run[0].env[i].value, pod.run[0].env[i].value));
	}
	cr_assert(eq(str, s.run[0].export_mode, "ALL"));
	cr_assert(not(eq(ptr, strstr(s.run[0].script, "srun python train.py"), NULL)));
	drv_jobspec_release(&pod);
	drv_diags_release(&pd);
}

Test(spec_sbatch, array_job_with_percent_limit)
{
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/array-sweep.sbatch", &s, &d), 0));
	cr_assert(eq(str, s.job.name, "lr-sweep"));
	cr_assert(eq(str, s.array.spec, "0-31%4"));
	cr_assert(eq(int, s.array.count, 32));
	cr_assert(eq(int, s.array.max_parallel, 4));
	cr_assert(eq(int, s.job.groups[0].count, 1));
	cr_assert(eq(int, s.job.groups[0].gpus, 1));
	cr_assert(eq(int, s.job.groups[0].model, drv_gpu_model_find("a100")));
	cr_assert(eq(i64, s.job.groups[0].cpu_milli, 8000));
	cr_assert(eq(i64, s.job.groups[0].mem_mib, 65536));
	cr_assert(eq(i64, s.job.time_limit, 4 * 3600));
	cr_assert(eq(ptr, s.queue, NULL), "-p names pools, not the queue");
	cr_assert(eq(str, s.slurm.partition, "gpu"));
	cr_assert(eq(int, s.job.nnode_selector, 1));
	cr_assert(eq(str, s.job.node_selector[0].key, DRV_LABEL_POOL));
	cr_assert(eq(str, s.job.node_selector[0].value, "gpu"));
	cr_assert(eq(str, s.slurm.qos, "normal"));
	cr_assert(eq(str, s.job.tenant, "ml-research"));
	cr_assert(eq(int, s.ndeps, 1));
	cr_assert(eq(str, s.deps[0].type, "afterok"));
	cr_assert(eq(str, s.deps[0].job, "1234"));
	cr_assert(s.slurm.requeue);
	cr_assert(eq(int, s.slurm.signal, 10));
	cr_assert(eq(int, s.slurm.signal_secs, 300));
	cr_assert(s.slurm.signal_batch_only);
	/* --output is acted on now: the batch step's stdout goes there */
	cr_assert(eq(ptr, json_object_get(s.ignored, "#SBATCH --output"), NULL));
	cr_assert(eq(str, s.slurm.output, "logs/%x-%A_%a.out"));
}

Test(spec_sbatch, hetjob_components_are_groups_of_one_gang)
{
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/hetjob.sbatch", &s, &d), 0));
	cr_assert(eq(int, s.job.ngroups, 2));
	cr_assert(eq(int, s.job.gang_min, 0));
	cr_assert(eq(int, s.job.groups[0].count, 1));
	cr_assert(eq(int, s.job.groups[0].gpus, 0));
	cr_assert(eq(i64, s.job.groups[0].cpu_milli, 32000));
	cr_assert(eq(i64, s.job.groups[0].mem_mib, 256 * 1024));
	cr_assert(eq(int, s.job.groups[1].count, 2));
	cr_assert(eq(int, s.job.groups[1].gpus, 8));
	cr_assert(eq(int, s.job.groups[1].model, drv_gpu_model_find("H100-SXM-80GB")));
	cr_assert(eq(i64, s.job.groups[1].cpu_milli, 96000));
	cr_assert(eq(i64, s.job.groups[1].mem_mib, 8 * 120 * 1024));
	cr_assert(eq(i64, s.job.time_limit, 86400));
	cr_assert(eq(int, s.slurm.switches, 1));
	cr_assert(eq(i64, s.slurm.switches_wait_s, 1800));
	cr_assert(eq(str, (char *)env(0, "NCCL_IB_HCA"), "mlx5"));
	cr_assert(eq(str, (char *)env(1, "NCCL_IB_HCA"), "mlx5"));
}

Test(spec_sbatch, every_spelling_sbatch_accepts)
{
	const char *t = "#!/bin/bash\n"
			"\n"
			"# a comment line\n"
			"#SBATCH -N 4 -n32 -J first   # trailing comment\n"
			"#SBATCH --job-name second --gpus-per-task=1\n"
			"#SBATCH --cpus-per-t 6 --ntasks-per-n=8 -HQ\n"  /* abbreviations, clustered flags */
			"#SBATCH -t 1-2:03 --mem 100G\n"
			"#SBATCH --job-name=\"the last wins\"\n"
			"srun hostname\n"
			"#SBATCH --nodes=99\n";                       /* after the first command: ignored */
	cr_assert(eq(int, parse(t), 0), "%s", d.n ? d.v[0].msg : "");
	cr_assert(eq(str, s.job.name, "the last wins"));
	cr_assert(eq(int, s.job.groups[0].count, 4));
	cr_assert(eq(int, s.job.groups[0].gpus, 8), "1 per task x 8 tasks per node");
	cr_assert(eq(i64, s.job.groups[0].cpu_milli, 48000));
	cr_assert(eq(i64, s.job.groups[0].mem_mib, 102400));
	cr_assert(eq(i64, s.job.time_limit, 86400 + 2 * 3600 + 180));
	cr_assert(s.slurm.hold, "-H in a cluster of flags is acted on (a user hold)");
	cr_assert(eq(ptr, json_object_get(s.ignored, "#SBATCH --hold"), NULL));
	cr_assert(not(eq(ptr, json_object_get(s.ignored, "#SBATCH --quiet"), NULL)));
}

Test(spec_sbatch, every_time_form)
{
	static const struct {
		const char *t;
		int64_t secs;
	} c[] = { { "20", 1200 }, { "20:30", 1230 }, { "2:00:00", 7200 }, { "1-2", 93600 },
		  { "1-2:30", 95400 }, { "1-2:30:15", 95415 } };
	size_t i;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char text[128];
		snprintf(text, sizeof(text), "#!/bin/sh\n#SBATCH --time=%s\ntrue\n", c[i].t);
		drv_jobspec_release(&s);
		cr_assert(eq(int, parse(text), 0), "%s", c[i].t);
		cr_assert(eq(i64, s.job.time_limit, c[i].secs), "%s", c[i].t);
	}
}

Test(spec_sbatch, gpu_requests_spread_over_nodes_or_tasks)
{
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH --nodes=2 --gpus=16\n"), 0));
	cr_assert(eq(int, s.job.groups[0].count, 2));
	cr_assert(eq(int, s.job.groups[0].gpus, 8));
	drv_jobspec_release(&s);
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH --ntasks=4 --gpus-per-task=2 --cpus-per-gpu=4\n"), 0));
	cr_assert(eq(int, s.job.groups[0].count, 4));
	cr_assert(eq(int, s.job.groups[0].gpus, 2));
	cr_assert(eq(i64, s.job.groups[0].cpu_milli, 8000));
	drv_jobspec_release(&s);
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH --gres=gpu:h200:4 --gres=gpu:2\n"), 0));
	cr_assert(eq(int, s.job.groups[0].gpus, 2), "the last --gres wins");
	cr_assert(eq(int, s.job.groups[0].model, -1));
	drv_jobspec_release(&s);
	drv_diags_release(&d);
	drv_diags_init(&d, "job.sh");
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH -N 4 --gpus=10\n"), DRV_EPARSE));
}

Test(spec_sbatch, export_dependency_and_signal_forms)
{
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH --export=HOME,FOO=bar,BAZ=a=b\n"
				"#SBATCH --dependency=afterok:11?afternotok:12:13 --signal=SIGTERM\n"), 0));
	cr_assert(eq(str, s.run[0].export_mode, "NONE"));
	cr_assert(eq(int, s.run[0].nenv, 3));
	cr_assert(eq(ptr, (void *)env(0, "HOME"), NULL), "taken from the submitter");
	cr_assert(eq(str, (char *)env(0, "FOO"), "bar"));
	cr_assert(eq(str, (char *)env(0, "BAZ"), "a=b"));
	cr_assert(s.deps_any);
	cr_assert(eq(int, s.ndeps, 3));
	cr_assert(eq(str, s.deps[2].type, "afternotok"));
	cr_assert(eq(str, s.deps[2].job, "13"));
	cr_assert(eq(int, s.slurm.signal, 15));
	cr_assert(eq(int, s.slurm.signal_secs, 60));
	drv_jobspec_release(&s);
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH --dependency=singleton,after:7+5 --segment=4\n"), 0));
	cr_assert(eq(int, s.ndeps, 2));
	cr_assert(eq(ptr, s.deps[0].job, NULL));
	cr_assert(eq(i64, s.deps[1].delay_s, 300));
	cr_assert(eq(int, s.slurm.segment, 4));
}

Test(spec_sbatch, command_line_options_win)
{
	char *argv[] = { "-N", "3", "--time=5", "--gpus-per-node=4" };
	struct drv_spec_opts o = { .sbatch_argc = 4, .sbatch_argv = argv };
	const char *t = "#!/bin/sh\n#SBATCH -N 1 --gpus-per-node=8 -t 60\n";
	cr_assert(eq(int, drv_spec_parse_buffer_opts(t, strlen(t), "job.sh", &o, &s, &d), 0));
	cr_assert(eq(int, s.job.groups[0].count, 3));
	cr_assert(eq(int, s.job.groups[0].gpus, 4));
	cr_assert(eq(i64, s.job.time_limit, 300));
}

Test(spec_sbatch, errors_name_line_and_column)
{
	const char *t = "#!/bin/sh\n"
			"#SBATCH --gp=2 --nodes=x\n"
			"#SBATCH -Z --time=1h --array=9-1\n";
	int i;
	bool ambiguous = false;
	cr_assert(eq(int, parse(t), DRV_EPARSE));
	cr_assert(eq(int, d.nerrors, 5));
	for (i = 0; i < d.n; i++) {
		cr_assert(gt(int, d.v[i].line, 1));
		cr_assert(gt(int, d.v[i].col, 0));
		if (strstr(d.v[i].msg, "ambiguous") && strstr(d.v[i].msg, "--gpus-per-node"))
			ambiguous = true;
	}
	cr_assert(ambiguous);
	cr_assert(eq(int, d.v[0].line, 2));
	cr_assert(eq(int, d.v[0].col, 9));
	cr_assert(eq(int, d.v[2].line, 3));
}

/* pyxis' options belong on srun: the script itself runs on the host */
Test(spec_sbatch, pyxis_options_point_at_srun)
{
	const char *t = "#!/bin/sh\n"
			"#SBATCH --container-image=nvcr.io#nvidia/pytorch:24.01-py3\n"
			"srun python train.py\n";

	cr_assert(eq(int, parse(t), DRV_EPARSE));
	cr_assert(eq(int, d.nerrors, 1));
	cr_assert(eq(int, d.v[0].line, 2));
	cr_assert(eq(int, d.v[0].col, 9));
	cr_assert(eq(str, d.v[0].msg, "found pyxis' option \"--container-image\" on the batch "
		     "script, expected it on srun: the script runs on the host, and `srun "
		     "--container-image ...` runs a step in a container"));
}

Test(spec_sbatch, limits)
{
	size_t n = DRV_SPEC_MAX_STRING + 100, i;
	char *big = malloc(n + 1);
	memcpy(big, "#!/bin/sh\n", 10);
	for (i = 10; i < n; i++)
		big[i] = 'x';
	big[n] = '\0';
	cr_assert(eq(int, drv_spec_parse_buffer(big, n, "big.sh", &s, &d), DRV_ELIMIT));
	free(big);
	drv_diags_release(&d);
	drv_diags_init(&d, "job.sh");
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH --array=0-5000000\n"), DRV_EPARSE));
	drv_diags_release(&d);
	drv_diags_init(&d, "job.sh");
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH --nodes=200000\n"), DRV_EPARSE));
}

Test(spec_sbatch, job_name_defaults_to_the_file_or_sbatch_for_stdin)
{
	static const char text[] = "#!/bin/sh\n#SBATCH --gpus=1\ntrue\n";

	cr_assert(eq(int, drv_spec_parse_buffer(text, strlen(text), "dir/train.sh", &s, &d), 0));
	cr_assert(eq(str, s.job.name, "train.sh"));
	drv_jobspec_release(&s);
	drv_jobspec_init(&s);
	/* as Slurm names a script read from standard input */
	cr_assert(eq(int, drv_spec_parse_buffer(text, strlen(text), "<stdin>", &s, &d), 0));
	cr_assert(eq(str, s.job.name, "sbatch"));
	drv_jobspec_release(&s);
	drv_jobspec_init(&s);
	cr_assert(eq(int, drv_spec_parse_buffer(text, strlen(text), "-", &s, &d), 0));
	cr_assert(eq(str, s.job.name, "sbatch"));
}

Test(spec_sbatch, begin_times)
{
	/* 2026-12-01 10:30:00 UTC; clock times are read in the local zone */
	int64_t now = 1796121000, at;

	setenv("TZ", "UTC", 1);
	tzset();
	cr_assert(eq(int, drv_slurm_begin_parse("now", now, &at), 0));
	cr_assert(eq(i64, at, now));
	cr_assert(eq(int, drv_slurm_begin_parse("now+90", now, &at), 0));
	cr_assert(eq(i64, at, now + 90));
	cr_assert(eq(int, drv_slurm_begin_parse("now+2hours", now, &at), 0));
	cr_assert(eq(i64, at, now + 7200));
	cr_assert(eq(int, drv_slurm_begin_parse("now+1min", now, &at), 0), "a unit's prefix");
	cr_assert(eq(i64, at, now + 60));
	cr_assert(eq(int, drv_slurm_begin_parse("16:00", now, &at), 0));
	cr_assert(eq(i64, at, now + 5 * 3600 + 1800), "later today");
	cr_assert(eq(int, drv_slurm_begin_parse("09:15:30", now, &at), 0));
	cr_assert(eq(i64, at, now - 4500 + 30 + 86400), "passed today: tomorrow");
	cr_assert(eq(int, drv_slurm_begin_parse("teatime", now, &at), 0));
	cr_assert(eq(i64, at, now + 5 * 3600 + 1800));
	cr_assert(eq(int, drv_slurm_begin_parse("midnight", now, &at), 0));
	cr_assert(eq(i64, at, now - 37800 + 86400));
	cr_assert(eq(int, drv_slurm_begin_parse("2026-12-24T18:00", now, &at), 0));
	cr_assert(eq(i64, at, now - 37800 + 23 * 86400 + 18 * 3600));
	cr_assert(eq(int, drv_slurm_begin_parse("2026-12-24", now, &at), 0));
	cr_assert(eq(i64, at, now - 37800 + 23 * 86400));
	cr_assert(eq(int, drv_slurm_begin_parse("soonish", now, &at), DRV_EINVAL));
	cr_assert(eq(int, drv_slurm_begin_parse("now+3fortnights", now, &at), DRV_EINVAL));
	cr_assert(eq(int, drv_slurm_begin_parse("25:00", now, &at), DRV_EINVAL));
	cr_assert(eq(int, drv_slurm_begin_parse("2026-13-01", now, &at), DRV_EINVAL));
	unsetenv("TZ");
	tzset();
}

/* --input is read into the job's slurm fields, with a warning that it is
 * not acted on; --output and --error are kept without one (the agent
 * writes them: docs/slurm.md, "Output files"). */
Test(spec_sbatch, input_is_kept_and_warned_output_and_error_are_not)
{
	int i, input_warned = 0;
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH -i in.txt -o out-%j.txt -e err-%j.txt\nhostname\n"), 0));
	cr_assert(eq(str, s.slurm.input, "in.txt"));
	cr_assert(eq(str, s.slurm.output, "out-%j.txt"));
	cr_assert(eq(str, s.slurm.error, "err-%j.txt"));
	for (i = 0; i < s.nwarnings; i++) {
		if (strstr(s.warnings[i], "--input: kept, not acted on"))
			input_warned++;
		cr_assert(eq(ptr, strstr(s.warnings[i], "--output"), NULL), "%s", s.warnings[i]);
		cr_assert(eq(ptr, strstr(s.warnings[i], "--error"), NULL), "%s", s.warnings[i]);
	}
	cr_assert(eq(int, input_warned, 1));
}

/* --ntasks-per-gpu is read and kept, with a warning naming it. */
Test(spec_sbatch, ntasks_per_gpu_is_kept_and_warned)
{
	int i, warned = 0;
	cr_assert(eq(int, parse("#!/bin/sh\n#SBATCH --gpus=2 --ntasks-per-gpu=2\nhostname\n"), 0));
	for (i = 0; i < s.nwarnings; i++)
		if (strstr(s.warnings[i], "--ntasks-per-gpu: kept, not acted on"))
			warned++;
	cr_assert(eq(int, warned, 1));
}
