/*
 * test_spec.c: job files become the job model: the seed's Pod manifest,
 * the canonical JSON round trip, and the value grammars (quantities,
 * Slurm times, arrays).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

#include "drover/fsutil.h"
#include "drover/spec.h"

static int load(const char *path, struct drv_jobspec *s, struct drv_diags *d)
{
	drv_jobspec_init(s);
	drv_diags_init(d, path);
	return drv_spec_load_file(path, s, d);
}

static int parse(const char *text, struct drv_jobspec *s, struct drv_diags *d)
{
	drv_jobspec_init(s);
	drv_diags_init(d, "test");
	return drv_spec_parse_buffer(text, strlen(text), "test", s, d);
}

Test(spec, seed_pod_gives_one_task_with_8_gpus_and_nccl_env)
{
	struct drv_jobspec s;
	struct drv_diags d;
	cr_assert(eq(int, load("examples/jobs/training-job.yaml", &s, &d), 0));
	cr_assert(eq(int, d.nerrors, 0));
	cr_assert(eq(int, s.format, DRV_FMT_MANIFEST));
	cr_assert(eq(str, s.job.name, "training-job"));
	cr_assert(eq(int, s.job.ngroups, 1));
	cr_assert(eq(int, s.job.groups[0].count, 1));
	cr_assert(eq(int, s.job.groups[0].gpus, 8));
	cr_assert(eq(int, s.job.groups[0].gpu_milli, 0));
	cr_assert(eq(int, s.job.groups[0].count, 1));
	cr_assert(eq(str, s.run[0].image, "pytorch/pytorch:2.4-cuda12.4"));
	cr_assert(eq(int, s.run[0].nenv, 2));
	cr_assert(eq(str, s.run[0].env[0].name, "NCCL_IB_DISABLE"));
	cr_assert(eq(str, s.run[0].env[0].value, "0"));
	cr_assert(eq(str, s.run[0].env[1].name, "NCCL_NET_GDR_LEVEL"));
	cr_assert(eq(str, s.run[0].env[1].value, "5"));
	cr_assert(eq(int, s.run[0].ncommand, 0));
	drv_jobspec_release(&s);
	drv_diags_release(&d);
}

Test(spec, canonical_round_trip_is_identical)
{
	struct drv_jobspec s, t;
	struct drv_diags d;
	char *a, *b;
	cr_assert(eq(int, load("examples/jobs/training-job.yaml", &s, &d), 0));
	a = drv_jobspec_dumps(&s, 2);
	drv_diags_release(&d);
	cr_assert(eq(int, parse(a, &t, &d), 0), "%s", d.n ? d.v[0].msg : "");
	cr_assert(eq(int, t.format, DRV_FMT_MANIFEST));
	b = drv_jobspec_dumps(&t, 2);
	cr_assert(eq(str, a, b));
	cr_assert(eq(int, t.job.groups[0].gpus, 8));
	free(a);
	free(b);
	drv_jobspec_release(&s);
	drv_jobspec_release(&t);
	drv_diags_release(&d);
}

Test(spec, canonical_rejects_unknown_fields_and_wrong_types_with_paths)
{
	struct drv_jobspec s;
	struct drv_diags d;
	const char *j = "{\"apiVersion\":\"drover/v1\",\"kind\":\"Job\",\"name\":\"x\","
			"\"bogus\":1,\"groups\":[{\"name\":\"g\",\"count\":\"two\",\"gpus\":100}]}";
	cr_assert(eq(int, parse(j, &s, &d), DRV_EPARSE));
	cr_assert(ge(int, d.nerrors, 3));
	cr_assert(eq(str, d.v[0].path, "bogus"));
	cr_assert(eq(str, d.v[1].path, "groups[0].count"));
	cr_assert(eq(str, d.v[2].path, "groups[0].gpus"));
	drv_jobspec_release(&s);
	drv_diags_release(&d);
}

Test(spec, quantities_in_every_kubernetes_form)
{
	static const struct {
		const char *q;
		int64_t scale, want;
	} c[] = {
		{ "500m", 1000, 500 }, { "2", 1000, 2000 }, { "0.5", 1000, 500 },
		{ "16Gi", 1, 17179869184LL }, { "1e3", 1, 1000 }, { "128974848", 1, 128974848 },
		{ "129M", 1, 129000000 }, { "1Ki", 1, 1024 }, { "1E", 1, 1000000000000000000LL },
		{ "1E2", 1, 100 }, { "+3", 1, 3 }, { "1.5k", 1, 1500 }, { "1u", 1000, 1 },
		{ "0.0001", 1000, 1 }, { ".5", 2, 1 }, { "8Ei", 1, -1 },
	};
	size_t i;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int64_t v = -7;
		int rc = drv_quantity_parse(c[i].q, c[i].scale, &v);
		if (c[i].want < 0) {
			cr_assert(eq(int, rc, DRV_ELIMIT), "%s", c[i].q);
			continue;
		}
		cr_assert(eq(int, rc, 0), "%s", c[i].q);
		cr_assert(eq(i64, v, c[i].want), "%s", c[i].q);
	}
	{
		static const char *const bad[] = { "", "m", "1.2.3", "-1", "1Zi", "1 Gi", "0x10", "e3",
						   "1e", "1ee3", "Gi" };
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			int64_t v;
			cr_assert(ne(int, drv_quantity_parse(bad[i], 1, &v), 0), "%s", bad[i]);
		}
	}
}

Test(spec, slurm_time_every_form)
{
	static const struct {
		const char *t;
		int64_t s;
	} c[] = {
		{ "20", 1200 }, { "20:30", 1230 }, { "1:02:03", 3723 }, { "2-3", 2 * 86400 + 3 * 3600 },
		{ "2-3:04", 2 * 86400 + 3 * 3600 + 240 }, { "2-03:04:05", 2 * 86400 + 3 * 3600 + 245 },
		{ "UNLIMITED", 0 }, { "infinite", 0 },
	};
	size_t i;
	int64_t v;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		cr_assert(eq(int, drv_slurm_time_parse(c[i].t, &v), 0), "%s", c[i].t);
		cr_assert(eq(i64, v, c[i].s), "%s", c[i].t);
	}
	cr_assert(ne(int, drv_slurm_time_parse("1:2:3:4", &v), 0));
	cr_assert(ne(int, drv_slurm_time_parse("-1", &v), 0));
	cr_assert(ne(int, drv_slurm_time_parse("1-", &v), 0));
	cr_assert(ne(int, drv_slurm_time_parse("", &v), 0));
	cr_assert(ne(int, drv_slurm_time_parse("1h", &v), 0));
}

Test(spec, array_ranges_steps_and_limit)
{
	struct drv_array a;
	memset(&a, 0, sizeof(a));
	cr_assert(eq(int, drv_array_parse("0-15:4,20,30-31%3", &a), 0));
	cr_assert(eq(int, a.count, 4 + 1 + 2));
	cr_assert(eq(int, a.max_parallel, 3));
	cr_assert(eq(int, a.nranges, 3));
	cr_assert(eq(int, a.ranges[0].step, 4));
	cr_assert(eq(str, a.spec, "0-15:4,20,30-31%3"));
	cr_assert(ne(int, drv_array_parse("5-1", &a), 0));
	cr_assert(eq(ptr, a.spec, NULL));
	cr_assert(ne(int, drv_array_parse("1-4%0", &a), 0));
	cr_assert(eq(int, drv_array_parse("0-99999999", &a), DRV_ELIMIT));
	drv_array_release(&a);
}

Test(spec, every_example_round_trips_through_canonical_json)
{
	static const char *const files[] = {
		"examples/jobs/training-job.yaml", "examples/jobs/training-job.sbatch",
		"examples/jobs/training-job.json", "examples/jobs/pytorchjob-multinode.yaml",
		"examples/jobs/volcano-gang.yaml", "examples/jobs/volcano-podgroup.yaml",
		"examples/jobs/batch-eval.yaml", "examples/jobs/fractional-inference.yaml",
		"examples/jobs/array-sweep.sbatch", "examples/jobs/hetjob.sbatch",
	};
	size_t i;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct drv_jobspec s, t, u;
		struct drv_diags d;
		json_t *j;
		char *a, *b, *c;
		cr_assert(eq(int, load(files[i], &s, &d), 0), "%s", files[i]);
		a = drv_jobspec_dumps(&s, 2);
		/* canonical -> model -> canonical, through the text and through json_t */
		drv_diags_release(&d);
		cr_assert(eq(int, parse(a, &t, &d), 0), "%s", files[i]);
		b = drv_jobspec_dumps(&t, 2);
		cr_assert(eq(str, a, b), "%s", files[i]);
		j = drv_jobspec_to_json(&t);
		drv_jobspec_init(&u);
		cr_assert(eq(int, drv_jobspec_from_json(j, &u, &d), 0));
		c = drv_jobspec_dumps(&u, 2);
		cr_assert(eq(str, a, c), "%s", files[i]);
		/* the core's view survives too */
		cr_assert(eq(int, drv_job_tasks(&u.job), drv_job_tasks(&s.job)));
		cr_assert(eq(i64, drv_job_gpu_milli(&u.job), drv_job_gpu_milli(&s.job)));
		json_decref(j);
		free(a);
		free(b);
		free(c);
		drv_jobspec_release(&s);
		drv_jobspec_release(&t);
		drv_jobspec_release(&u);
		drv_diags_release(&d);
	}
}

Test(spec, canonical_file_is_what_validate_prints)
{
	struct drv_jobspec s;
	struct drv_diags d;
	char *buf, *out;
	size_t len;
	cr_assert(eq(int, drv_file_read("examples/jobs/training-job.json", 1 << 20, &buf, &len), 0));
	cr_assert(eq(int, parse(buf, &s, &d), 0));
	out = drv_jobspec_dumps(&s, 2);
	cr_assert(eq(int, strncmp(buf, out, strlen(out)), 0), "identical canonical text");
	cr_assert(eq(int, s.format, DRV_FMT_MANIFEST), "remembers where it came from");
	free(out);
	free(buf);
	drv_jobspec_release(&s);
	drv_diags_release(&d);
}

Test(spec, formats_are_told_apart_by_content)
{
	static const struct {
		const char *text;
		enum drv_spec_format f;
	} c[] = {
		{ "#!/bin/bash\n#SBATCH -N1\n", DRV_FMT_SBATCH },
		{ "# comment\napiVersion: v1\nkind: Pod\n", DRV_FMT_MANIFEST },
		{ "{\"apiVersion\": \"drover/v1\", \"kind\": \"Job\"}", DRV_FMT_CANONICAL },
		{ "{\"apiVersion\": \"v1\", \"kind\": \"Pod\"}", DRV_FMT_MANIFEST },
		{ "kind: Cluster\nname: x\n", DRV_FMT_CLUSTER },
		{ "", DRV_FMT_UNKNOWN },
		{ "hello: world\n", DRV_FMT_UNKNOWN },
	};
	size_t i;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		cr_assert(eq(int, drv_spec_sniff(c[i].text, strlen(c[i].text)), c[i].f), "%s", c[i].text);
}

Test(spec, input_size_limit)
{
	struct drv_jobspec s;
	struct drv_diags d;
	size_t n = (size_t)DRV_SPEC_MAX_BYTES + 1;
	char *big = calloc(1, n + 1);
	memset(big, ' ', n);
	drv_jobspec_init(&s);
	drv_diags_init(&d, "big");
	cr_assert(eq(int, drv_spec_parse_buffer(big, n, "big", &s, &d), DRV_ELIMIT));
	cr_assert(not(eq(ptr, strstr(d.v[0].msg, "limit"), NULL)));
	free(big);
	drv_jobspec_release(&s);
	drv_diags_release(&d);
}
