/*
 * bench_sched.c: 'drover bench sched': the cost of a scheduling pass.
 *
 *   drover bench sched [--json] [--pending N] [--runs N] [--preemption on|off]
 *                      [--mode strict|backfill|greedy] [--order fifo|sjf|las|fair]
 *
 * Builds the largest cluster of 'bench place' (100,352 H100 GPUs: 8 GPUs a
 * node, 32 nodes a leaf, 16 leaves a spine), fills 80% of it with running
 * jobs, queues 50,000 pending jobs (gangs of 1 to 64 GPUs, some fractional,
 * four priorities, 32 tenants, some requiring one leaf), times one full pass
 * and then the steady-state pass after one running job ends (the median of
 * many such passes), all of it --runs times (default 3), and prints the
 * medians over the runs, wall and CPU (the figure to compare on a shared
 * machine):
 *   {"pending":…,"gpus":…,"runs":…,"full_pass_ms":…,"full_pass_cpu_ms":…,
 *    "incremental_pass_us":…,"incremental_pass_cpu_us":…}
 *
 * It also carries the golden-scenario driver used by tests/golden/run
 * (hidden: 'drover bench sched --golden FILE'), which replays a scenario
 * file of submits, events and passes and compares each pass's decisions
 * with the expected lines (format: docs/scheduling.md).
 */
#include "bench_int.h"
#include "drover/bench.h"
#include "drover/clock.h"
#include "drover/clusterfile.h"
#include "drover/common.h"
#include "drover/diag.h"
#include "drover/model.h"
#include "drover/options.h"
#include "drover/sched.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a deterministic generator ------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}


/* ---- the benchmark ------------------------------------------------------ */

static void build_cluster(struct drv_cluster *c, int leaves)
{
	int spines = (leaves + 15) / 16;
	static const char *const lv[] = { "cluster", "spine", "leaf", "node" };
	char name[64];
	int h100 = drv_gpu_model_find("H100");
	int s, l, n;
	drv_cluster_init(c, "bench");
	drv_cluster_set_levels(c, lv, 4);
	for (s = 0; s < spines; s++) {
		int sv;
		snprintf(name, sizeof(name), "s%d", s);
		sv = drv_cluster_add_vertex(c, 0, name);
		for (l = 0; l < 16 && s * 16 + l < leaves; l++) {
			int lvx;
			snprintf(name, sizeof(name), "s%d-l%d", s, l);
			lvx = drv_cluster_add_vertex(c, sv, name);
			for (n = 0; n < 32; n++) {
				snprintf(name, sizeof(name), "s%d-l%d-n%d", s, l, n);
				drv_cluster_add_node(c, lvx, name, h100, 8, 224000, 2 * 1024 * 1024);
			}
		}
	}
}

static void make_job(struct drv_job *j, uint64_t id, uint64_t *rng, int64_t now, int ntenants,
		     char tenants[][16])
{
	static const int sizes[] = { 1, 1, 1, 2, 2, 4, 4, 8, 8, 8, 16, 32, 64 };
	uint64_t r = rng_next(rng);
	int size = sizes[r % DRV_ARRAY_SIZE(sizes)];
	struct drv_task_group *g;
	drv_job_init(j);
	j->id = id;
	j->tenant = drv_strdup(tenants[(r >> 8) % (uint64_t)ntenants]);
	j->priority = (int32_t)((r >> 16) % 4) * 100;
	j->preemptible = (r >> 20) % 2 == 0;
	j->submit_time = now - (int64_t)((r >> 24) % 36000);
	j->runtime_estimate = 600 + (int64_t)((r >> 40) % 86400);
	j->time_limit = j->runtime_estimate * 2;
	if ((r >> 32) % 10 == 0) {
		g = drv_job_add_group(j, "main", 1, 0, 250 * (int32_t)(1 + (r >> 36) % 3));
	} else if (size <= 8) {
		g = drv_job_add_group(j, "main", 1, size, 0);
	} else {
		g = drv_job_add_group(j, "main", size / 8, 8, 0);
		if ((r >> 44) % 2 == 0)
			drv_job_set_topology(j, DRV_TOPO_REQUIRED, "leaf");
	}
	(void)g;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const struct drv_opt_choice orders[] = {
	{ "fifo", DRV_ORDER_FIFO }, { "sjf", DRV_ORDER_SJF }, { "las", DRV_ORDER_LAS },
	{ "fair", DRV_ORDER_FAIR }, { NULL, 0 },
};
static const struct drv_opt_choice modes[] = {
	{ "strict", DRV_MODE_STRICT }, { "backfill", DRV_MODE_BACKFILL },
	{ "greedy", DRV_MODE_GREEDY }, { NULL, 0 },
};
static const struct drv_opt_choice on_off[] = { { "on", 1 }, { "off", 0 }, { NULL, 0 } };

/* What the command line says. */
struct bench_args {
	struct drv_sched_policy pol;
	int32_t npending;
	int runs;
	bool json, quiet;
	const char *golden; /* a tests/golden/ scenario to replay instead */
};

/* The bench's options into a; 0, or DRV_OPTS_HELP / DRV_OPTS_ERROR. */
static int parse_args(int argc, char **argv, struct bench_args *a)
{
	struct drv_sched_policy *pol = &a->pol;
	int order, mode, preemption, n = 50000, runs = 3;
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &a->json, "print one JSON object"),
		DRV_OPT_INT(0, "pending", &n, 1, 10000000, "N", "pending jobs (default 50000)"),
		DRV_OPT_INT(0, "runs", &runs, 1, 63, "N",
			    "build the world N times, print the medians (default 3)"),
		DRV_OPT_ENUM(0, "preemption", &preemption, on_off,
			     "preemption in the pass (default off)"),
		DRV_OPT_ENUM(0, "mode", &mode, modes, "head-of-line handling (default backfill)"),
		DRV_OPT_ENUM(0, "order", &order, orders, "queue order (default fifo)"),
		DRV_OPT_GROUP("golden scenarios (tests/golden/run)"),
		DRV_OPT_STRING(0, "golden", &a->golden, "FILE",
			       "replay a scenario twice and print its passes' decisions; fail when "
			       "they differ from its expectations or from each other"),
		DRV_OPT_FLAG(0, "quiet", &a->quiet, "with --golden: print only what is wrong"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench sched",
		.usage = "drover bench sched [--json] [--pending N] [--runs N] [--preemption on|off] "
			 "[--mode strict|backfill|greedy] [--order fifo|sjf|las|fair]\n"
			 "       drover bench sched --golden FILE [--quiet]",
		.about = "One scheduling pass over N pending jobs on a 100,352-GPU cluster, "
			 "then incremental passes.",
		.options = table,
	};
	int rc;

	memset(a, 0, sizeof(*a));
	drv_sched_policy_default(pol);
	order = (int)pol->order;
	mode = (int)pol->mode;
	preemption = pol->preemption;
	rc = drv_opts_parse(&usage, argc, argv);
	if (rc < 0)
		return rc;
	pol->order = (enum drv_sched_order)order;
	pol->mode = (enum drv_sched_mode)mode;
	pol->preemption = preemption;
	a->npending = n;
	a->runs = runs;
	return 0;
}

/* The benchmark's world: the cluster, the state and every job made. */
struct sched_bench {
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_job *jobs;
	size_t njobs;
	char tenants[32][16];
	uint64_t rng, id;
	int64_t now, total;
	int32_t nrunning;
};

/* Fills 80% of the cluster with running jobs placed as they come, then
 * queues npending jobs. */
static int bench_fill(struct sched_bench *b, int32_t npending)
{
	struct drv_placement pl;
	int64_t target = b->total * 8 / 10, used = 0;
	int32_t i;
	int rc;

	drv_placement_init(&pl);
	while (used < target * DRV_MILLI) {
		struct drv_job *j = &b->jobs[b->njobs];
		make_job(j, b->id++, &b->rng, b->now, 32, b->tenants);
		if (drv_place(&b->c, j, NULL, &pl, NULL, 0) != 0) {
			drv_job_release(j);
			break;
		}
		j->submit_time = b->now - 40000;
		rc = drv_sched_add_running(b->s, j, NULL, &pl,
					   b->now - (int64_t)(rng_next(&b->rng) % 30000), 0);
		if (rc) {
			fprintf(stderr, "bench sched: add_running: %s\n", drv_strerror(rc));
			drv_placement_release(&pl);
			return 1;
		}
		used += drv_job_gpu_milli(j);
		b->njobs++;
		b->nrunning++;
	}
	drv_placement_release(&pl);
	for (i = 0; i < npending; i++) {
		struct drv_job *j = &b->jobs[b->njobs++];
		make_job(j, b->id++, &b->rng, b->now, 32, b->tenants);
		drv_sched_submit(b->s, j, NULL);
	}
	return 0;
}

/* Steady state: one running job ends, one pass; the passes' wall and CPU
 * times in microseconds, sorted. */
static void bench_steady(struct sched_bench *b, const struct drv_sched_policy *pol,
			 struct drv_sched_decisions *d, int reps, double *inc, double *inc_cpu)
{
	int i;
	for (i = 0; i < reps; i++) {
		int32_t k;
		uint64_t victim = 0;
		double t0, c0;
		b->now += 1;
		/* the earliest-submitted running job still there */
		for (k = (int32_t)(rng_next(&b->rng) % b->njobs); k < (int32_t)b->njobs; k++) {
			struct drv_sched_job_info info;
			if (b->jobs[k].id && drv_sched_job_get(b->s, b->jobs[k].id, &info) == 0 &&
			    info.state == DRV_SJ_RUNNING) {
				victim = b->jobs[k].id;
				break;
			}
		}
		if (victim)
			drv_sched_finish(b->s, victim, b->now);
		t0 = drv_mono_s();
		c0 = bench_cpu_s();
		drv_sched_pass(b->s, b->now, pol, d);
		inc[i] = (drv_mono_s() - t0) * 1e6;
		inc_cpu[i] = (bench_cpu_s() - c0) * 1e6;
	}
	qsort(inc, (size_t)reps, sizeof(*inc), cmp_d);
	qsort(inc_cpu, (size_t)reps, sizeof(*inc_cpu), cmp_d);
}

static void bench_release(struct sched_bench *b)
{
	size_t i;
	drv_sched_free(b->s);
	for (i = 0; i < b->njobs; i++)
		drv_job_release(&b->jobs[i]);
	drv_free(b->jobs);
	drv_cluster_release(&b->c);
}

/* What one build of the world measured. */
struct sched_run {
	double full_ms, full_cpu_ms;   /* the full pass, wall and CPU */
	double inc_us, inc_cpu_us;     /* the steady-state passes' medians */
	double inc_p90_us;
	int64_t gpus;
	int32_t nstart, ndec, nrunning;
};

/* Builds the world, times the full pass and the steady-state passes. */
static int bench_once(const struct drv_sched_policy *pol, int32_t npending, struct sched_run *r)
{
	struct sched_bench B, *b = &B;
	struct drv_sched_decisions d;
	int32_t i, reps = 200;
	double t0, c0, *inc, *inc_cpu;
	int rc;

	memset(b, 0, sizeof(*b));
	memset(r, 0, sizeof(*r));
	b->rng = 42;
	b->id = 1;
	b->now = 1000000;
	for (i = 0; i < 32; i++)
		snprintf(b->tenants[i], sizeof(b->tenants[i]), "team%02d", i);
	build_cluster(&b->c, 392); /* 392 leaves x 32 nodes x 8 GPUs = 100,352, 16 leaves a spine */
	b->total = b->c.vertices[0].total_gpus;
	b->jobs = drv_calloc((size_t)npending + (size_t)b->total + 16, sizeof(*b->jobs));
	b->s = drv_sched_new(&b->c);
	drv_sched_decisions_init(&d);
	if (bench_fill(b, npending))
		return 1;

	t0 = drv_mono_s();
	c0 = bench_cpu_s();
	rc = drv_sched_pass(b->s, b->now, pol, &d);
	r->full_ms = (drv_mono_s() - t0) * 1e3;
	r->full_cpu_ms = (bench_cpu_s() - c0) * 1e3;
	if (rc < 0) {
		fprintf(stderr, "bench sched: pass: %s\n", drv_strerror(rc));
		return 1;
	}
	r->ndec = rc;
	r->nrunning = b->nrunning;
	r->gpus = b->total;
	for (i = 0; i < d.n; i++)
		r->nstart += d.v[i].kind == DRV_DEC_START;
	/* settle: passes until nothing more starts */
	for (i = 0; i < 4; i++)
		drv_sched_pass(b->s, ++b->now, pol, &d);

	inc = drv_calloc((size_t)reps, sizeof(*inc));
	inc_cpu = drv_calloc((size_t)reps, sizeof(*inc_cpu));
	bench_steady(b, pol, &d, reps, inc, inc_cpu);
	r->inc_us = inc[reps / 2];
	r->inc_cpu_us = inc_cpu[reps / 2];
	r->inc_p90_us = inc[reps * 9 / 10];
	drv_free(inc);
	drv_free(inc_cpu);
	drv_sched_decisions_release(&d);
	bench_release(b);
	return 0;
}

/* The median over runs of the figure at offset off of struct sched_run. */
static double run_median(const struct sched_run *r, int runs, size_t off)
{
	double v[64];
	int i;
	for (i = 0; i < runs; i++)
		memcpy(&v[i], (const char *)&r[i] + off, sizeof(double));
	qsort(v, (size_t)runs, sizeof(*v), cmp_d);
	return v[runs / 2];
}

/* Builds the world runs times and prints the medians of what each measured:
 * CPU time is the figure to compare (the wall clock waits for other
 * processes on a shared machine). */
static int bench_measure(const struct drv_sched_policy *pol, int32_t npending, int runs, bool json)
{
	struct sched_run r[64];
	double full, full_cpu, inc, inc_cpu, p90;
	int i;

	memset(r, 0, sizeof(r));
	for (i = 0; i < runs; i++)
		if (bench_once(pol, npending, &r[i]))
			return 1;
	full = run_median(r, runs, offsetof(struct sched_run, full_ms));
	full_cpu = run_median(r, runs, offsetof(struct sched_run, full_cpu_ms));
	inc = run_median(r, runs, offsetof(struct sched_run, inc_us));
	inc_cpu = run_median(r, runs, offsetof(struct sched_run, inc_cpu_us));
	p90 = run_median(r, runs, offsetof(struct sched_run, inc_p90_us));
	if (json)
		printf("{\"pending\":%d,\"gpus\":%" PRId64 ",\"runs\":%d,\"full_pass_ms\":%.1f,"
		       "\"full_pass_cpu_ms\":%.1f,\"incremental_pass_us\":%.1f,"
		       "\"incremental_pass_cpu_us\":%.1f}\n",
		       npending, r[0].gpus, runs, full, full_cpu, inc, inc_cpu);
	else
		printf("pending %d, GPUs %" PRId64 " (%d running jobs), median of %d run%s\n"
		       "full pass: %.1f ms wall, %.1f ms CPU (%d started, %d decisions)\n"
		       "incremental pass after one job ends: median %.1f us wall, %.1f us CPU; "
		       "p90 %.1f us wall (200 passes a run)\n",
		       npending, r[0].gpus, r[0].nrunning, runs, runs == 1 ? "" : "s", full, full_cpu,
		       r[0].nstart, r[0].ndec, inc, inc_cpu, p90);
	return 0;
}

/* ---- the golden-scenario driver ----------------------------------------- */

struct golden {
	const char *file;
	int line;
	struct drv_cluster c;
	bool have_cluster;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_job **jobs;
	size_t njobs, jcap;
	char **got;          /* the last pass's lines */
	size_t ngot, gcap;
	int failures;
	FILE *log;           /* all lines, for the determinism check */
	int64_t now;         /* the scenario's clock: the last time a line set */
	bool quiet;          /* do not print each pass's decisions */
	bool in_expect;      /* inside an expect ... end block */
	size_t expect_i;     /* the next decision of the last pass to compare */
};

static void gerr(struct golden *g, const char *msg, const char *arg)
{
	fprintf(stderr, "%s:%d: %s%s%s\n", g->file, g->line, msg, arg ? ": " : "", arg ? arg : "");
}

static bool kv(const char *tok, const char *key, const char **val)
{
	size_t n = strlen(key);
	if (strncmp(tok, key, n) || tok[n] != '=')
		return false;
	*val = tok + n + 1;
	return true;
}

static int model_of(const char *s)
{
	return drv_gpu_model_find(s);
}

/* "H100:16,A100:8" -> milli per model */
static int parse_quota(const char *v, int64_t *q)
{
	char buf[256], *save = NULL, *tok;
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		int m;
		if (!colon)
			return -1;
		*colon = '\0';
		m = model_of(tok);
		if (m < 0)
			return -1;
		q[m] = (int64_t)(atof(colon + 1) * DRV_MILLI + 0.5);
	}
	return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno || end == s || *end ? -1 : 0;
}

/* Job keys: tasks=N gpus=G milli=M model=X cpu=CORES mem=MIB prio=P class=C
 * tenant=T preemptible limit=S est=S topo=required:LEVEL regions=a,b submit=T */
static int parse_job(struct golden *g, char **tok, int ntok, int64_t now, struct drv_job *j,
		     const char **cls, const char **place, int64_t *start)
{
	int64_t tasks = 1, gpus = 0, milli = 0, cpu = 0, mem = 0, v;
	int model = -1, i;
	const char *val;
	struct drv_task_group *tg;
	if (ntok < 1 || parse_i64(tok[0], &v) || v <= 0) {
		gerr(g, "expected a job id (a positive integer)", ntok ? tok[0] : NULL);
		return -1;
	}
	drv_job_init(j);
	j->id = (uint64_t)v;
	j->submit_time = now;
	j->tenant = drv_strdup("default");
	*cls = NULL;
	for (i = 1; i < ntok; i++) {
		if (kv(tok[i], "tasks", &val) && !parse_i64(val, &tasks))
			continue;
		if (kv(tok[i], "gpus", &val) && !parse_i64(val, &gpus))
			continue;
		if (kv(tok[i], "milli", &val) && !parse_i64(val, &milli))
			continue;
		if (kv(tok[i], "model", &val) && (model = model_of(val)) >= 0)
			continue;
		if (kv(tok[i], "cpu", &val) && !parse_i64(val, &cpu))
			continue;
		if (kv(tok[i], "mem", &val) && !parse_i64(val, &mem))
			continue;
		if (kv(tok[i], "prio", &val) && !parse_i64(val, &v)) {
			j->priority = (int32_t)v;
			continue;
		}
		if (kv(tok[i], "class", &val)) {
			*cls = val;
			continue;
		}
		if (kv(tok[i], "tenant", &val)) {
			drv_free(j->tenant);
			j->tenant = drv_strdup(val);
			continue;
		}
		if (kv(tok[i], "user", &val)) {
			drv_free(j->user);
			j->user = drv_strdup(val);
			continue;
		}
		if (!strcmp(tok[i], "preemptible")) {
			j->preemptible = true;
			continue;
		}
		if (kv(tok[i], "limit", &val) && !parse_i64(val, &j->time_limit))
			continue;
		if (kv(tok[i], "est", &val) && !parse_i64(val, &j->runtime_estimate))
			continue;
		if (kv(tok[i], "submit", &val) && !parse_i64(val, &j->submit_time))
			continue;
		if (kv(tok[i], "topo", &val)) {
			const char *colon = strchr(val, ':');
			if (colon && !strncmp(val, "required:", 9))
				drv_job_set_topology(j, DRV_TOPO_REQUIRED, colon + 1);
			else if (colon && !strncmp(val, "preferred:", 10))
				drv_job_set_topology(j, DRV_TOPO_PREFERRED, colon + 1);
			else
				goto bad;
			continue;
		}
		if (kv(tok[i], "regions", &val)) {
			char buf[256], *save = NULL, *r;
			snprintf(buf, sizeof(buf), "%s", val);
			for (r = strtok_r(buf, ",", &save); r; r = strtok_r(NULL, ",", &save))
				drv_job_add_region(j, r);
			continue;
		}
		if (place && kv(tok[i], "on", &val)) {
			*place = val;
			continue;
		}
		if (start && kv(tok[i], "start", &val) && !parse_i64(val, start))
			continue;
	bad:
		gerr(g, "unknown or malformed job key", tok[i]);
		drv_job_release(j);
		return -1;
	}
	tg = drv_job_add_group(j, "main", (int32_t)tasks, (int32_t)gpus, (int32_t)milli);
	tg->model = (int8_t)model;
	tg->cpu_milli = cpu * 1000;
	tg->mem_mib = mem;
	return 0;
}

static int split(char *line, char **tok, int max)
{
	int n = 0;
	char *save = NULL, *t;
	for (t = strtok_r(line, " \t\r\n", &save); t && n < max; t = strtok_r(NULL, " \t\r\n", &save))
		tok[n++] = t;
	return n;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "on") || !strcmp(v, "true")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "off") || !strcmp(v, "false")) {
		*out = false;
		return 0;
	}
	return -1;
}

static int golden_policy(struct golden *g, char **tok, int ntok)
{
	int i;
	const char *v;
	struct drv_sched_policy *p = &g->pol;
	for (i = 1; i < ntok; i++) {
		int64_t x = 0;
		int ok = -1;
		if (kv(tok[i], "order", &v))
			ok = drv_sched_order_parse(v, &p->order);
		else if (kv(tok[i], "mode", &v))
			ok = drv_sched_mode_parse(v, &p->mode);
		else if (kv(tok[i], "pools", &v))
			ok = drv_sched_pools_parse(v, &p->pools);
		else if (kv(tok[i], "preemption", &v))
			ok = parse_bool(v, &p->preemption);
		else if (kv(tok[i], "grace", &v) && !(ok = parse_i64(v, &x)))
			p->grace_s = x;
		else if (kv(tok[i], "min_run", &v) && !(ok = parse_i64(v, &x)))
			p->min_run_s = x;
		else if (kv(tok[i], "promote", &v) && !(ok = parse_i64(v, &x)))
			p->las_promote_s = x;
		else if (kv(tok[i], "fair_half_life", &v) && !(ok = parse_i64(v, &x)))
			p->fair_half_life_s = x;
		else if (kv(tok[i], "depth", &v) && !(ok = parse_i64(v, &x)))
			p->conservative_depth = (int32_t)x;
		else if (kv(tok[i], "aging_interval", &v) && !(ok = parse_i64(v, &x)))
			p->aging_interval_s = x;
		else if (kv(tok[i], "aging_step", &v) && !(ok = parse_i64(v, &x)))
			p->aging_step = (int32_t)x;
		else if (kv(tok[i], "aging_max", &v) && !(ok = parse_i64(v, &x)))
			p->aging_max = (int32_t)x;
		else if (kv(tok[i], "default_runtime", &v) && !(ok = parse_i64(v, &x)))
			p->default_runtime_s = x;
		else if (kv(tok[i], "grow_wait", &v) && !(ok = parse_i64(v, &x)))
			p->grow_wait_s = x;
		else if (kv(tok[i], "idle_release", &v) && !(ok = parse_i64(v, &x)))
			p->idle_release_s = x;
		else if (kv(tok[i], "all_pending", &v))
			ok = parse_bool(v, &p->report_all_pending);
		else if (kv(tok[i], "las", &v)) {
			char buf[128], *save = NULL, *t;
			snprintf(buf, sizeof(buf), "%s", v);
			p->nlas = 0;
			ok = 0;
			for (t = strtok_r(buf, ",", &save); t && p->nlas < DRV_SCHED_MAX_LAS;
			     t = strtok_r(NULL, ",", &save))
				if (parse_i64(t, &p->las_threshold[p->nlas++]))
					ok = -1;
		}
		if (ok) {
			gerr(g, "bad policy setting", tok[i]);
			return -1;
		}
	}
	return 0;
}

static void got_clear(struct golden *g)
{
	size_t i;
	for (i = 0; i < g->ngot; i++)
		drv_free(g->got[i]);
	g->ngot = 0;
}

static int golden_pass(struct golden *g, int64_t now)
{
	char buf[4096];
	int n, i;
	got_clear(g);
	n = drv_sched_pass(g->s, now, &g->pol, &g->d);
	if (n < 0) {
		gerr(g, "pass failed", drv_strerror(n));
		return -1;
	}
	for (i = 0; i < g->d.n; i++) {
		drv_sched_decision_format(g->s, &g->d.v[i], buf, sizeof(buf));
		DRV_GROW(g->got, g->ngot + 1, g->gcap);
		g->got[g->ngot++] = drv_strdup(buf);
		if (g->log)
			fprintf(g->log, "%" PRId64 " %s\n", now, buf);
	}
	if (drv_cluster_check(&g->c) != 0) {
		gerr(g, "cluster aggregates or usage are wrong after the pass", NULL);
		g->failures++;
	}
	return 0;
}

static struct drv_job *golden_job(struct golden *g)
{
	struct drv_job *j = drv_calloc(1, sizeof(*j));
	DRV_GROW(g->jobs, g->njobs + 1, g->jcap);
	g->jobs[g->njobs++] = j;
	return j;
}

static int golden_cluster(struct golden *g, const char *path)
{
	struct drv_diags dg;
	char full[1024];
	const char *slash = strrchr(g->file, '/');
	int rc;
	if (path[0] != '/' && slash)
		snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - g->file), g->file, path);
	else
		snprintf(full, sizeof(full), "%s", path);
	drv_diags_init(&dg, full);
	rc = drv_cluster_load_file(full, &g->c, &dg);
	if (rc) {
		drv_diags_print(&dg, stderr);
		drv_diags_release(&dg);
		return -1;
	}
	drv_diags_release(&dg);
	g->have_cluster = true;
	g->s = drv_sched_new(&g->c);
	return 0;
}

/* One line inside an expect ... end block: the next decision of the last
 * pass must read exactly so; "end" checks that none is left over. */
static void expect_line(struct golden *g, const char *t)
{
	while (*t == ' ' || *t == '\t')
		t++;
	if (!strcmp(t, "end")) {
		g->in_expect = false;
		if (g->expect_i != g->ngot) {
			size_t k;
			for (k = g->expect_i; k < g->ngot; k++)
				fprintf(stderr, "%s:%d: unexpected decision: %s\n", g->file, g->line,
					g->got[k]);
			g->failures++;
		}
		return;
	}
	if (!*t || *t == '#')
		return;
	if (g->expect_i >= g->ngot || strcmp(g->got[g->expect_i], t)) {
		fprintf(stderr, "%s:%d: expected: %s\n%s:%d:      got: %s\n", g->file, g->line, t,
			g->file, g->line, g->expect_i < g->ngot ? g->got[g->expect_i] : "(nothing)");
		g->failures++;
	}
	g->expect_i++;
}

/* The scenario commands: each returns 0, or 2 for a malformed line (said
 * on stderr). */

static int gcmd_policy(struct golden *g, char **tok, int ntok)
{
	return golden_policy(g, tok, ntok) ? 2 : 0;
}

static int gcmd_class(struct golden *g, char **tok, int ntok)
{
	enum drv_preempt_policy pp;
	int64_t v;
	(void)ntok;
	if (parse_i64(tok[2], &v) || drv_preempt_policy_parse(tok[3], &pp) ||
	    drv_sched_add_class(g->s, tok[1], (int32_t)v, pp) < 0) {
		gerr(g, "bad class (class NAME VALUE PreemptLowerPriority|Never)", NULL);
		return 2;
	}
	return 0;
}

static int gcmd_tenant(struct golden *g, char **tok, int ntok)
{
	struct drv_sched_tenant t;
	int i;
	int64_t v;
	const char *val;
	drv_sched_tenant_default(&t, tok[1]);
	for (i = 2; i < ntok; i++) {
		if (kv(tok[i], "cohort", &val))
			t.cohort = val;
		else if (kv(tok[i], "weight", &val) && !parse_i64(val, &v))
			t.weight = (int32_t)v;
		else if (kv(tok[i], "quota", &val) && !parse_quota(val, t.quota_milli))
			;
		else if (kv(tok[i], "limit", &val) && !parse_quota(val, t.borrow_limit_milli))
			;
		else {
			gerr(g, "bad tenant key", tok[i]);
			return 2;
		}
	}
	return drv_sched_set_tenant(g->s, &t) < 0 ? 2 : 0;
}

/* user NAME [running=N] [gpus=G] [submitted=S] */
static int gcmd_user(struct golden *g, char **tok, int ntok)
{
	struct drv_sched_user u = { tok[1], -1, -1, -1 };
	const char *val;
	int64_t v;
	int i;
	for (i = 2; i < ntok; i++) {
		if (kv(tok[i], "running", &val) && !parse_i64(val, &v))
			u.max_running = (int32_t)v;
		else if (kv(tok[i], "gpus", &val) && !parse_i64(val, &v))
			u.max_milli = v * DRV_MILLI;
		else if (kv(tok[i], "submitted", &val) && !parse_i64(val, &v))
			u.max_submitted = (int32_t)v;
		else {
			gerr(g, "bad user key", tok[i]);
			return 2;
		}
	}
	return drv_sched_set_user(g->s, &u) < 0 ? 2 : 0;
}

static int gcmd_submit(struct golden *g, char **tok, int ntok)
{
	struct drv_job *j = golden_job(g);
	const char *cls;
	int e;
	if (parse_job(g, tok + 1, ntok - 1, g->now, j, &cls, NULL, NULL))
		return 2;
	e = drv_sched_submit(g->s, j, cls);
	if (e) {
		gerr(g, "submit failed", drv_strerror(e));
		return 2;
	}
	return 0;
}

static int gcmd_running(struct golden *g, char **tok, int ntok)
{
	struct drv_job *j = golden_job(g);
	struct drv_placement pl;
	const char *cls, *place = NULL;
	int64_t start = g->now;
	int e;
	if (parse_job(g, tok + 1, ntok - 1, g->now, j, &cls, &place, &start) || !place) {
		gerr(g, "running needs a job and on=NODE:GPU,..;NODE:GPU", NULL);
		return 2;
	}
	drv_placement_init(&pl);
	e = drv_placement_parse(&g->c, place, j->groups[0].gpus ? DRV_MILLI : j->groups[0].gpu_milli,
				&pl);
	if (!e)
		e = drv_sched_add_running(g->s, j, cls, &pl, start, 0);
	drv_placement_release(&pl);
	if (e) {
		gerr(g, "running failed", drv_strerror(e));
		return 2;
	}
	return 0;
}

static int gcmd_pass(struct golden *g, char **tok, int ntok)
{
	size_t k;
	(void)ntok;
	if (parse_i64(tok[1], &g->now)) {
		gerr(g, "unknown command", tok[0]);
		return 2;
	}
	if (golden_pass(g, g->now))
		return 2;
	if (!g->quiet) {
		printf("pass %" PRId64 "\n", g->now);
		for (k = 0; k < g->ngot; k++)
			printf("  %s\n", g->got[k]);
	}
	return 0;
}

static int gcmd_expect(struct golden *g, char **tok, int ntok)
{
	(void)tok;
	(void)ntok;
	g->in_expect = true;
	g->expect_i = 0;
	return 0;
}

/* finish|requeue ID TIME */
static int gcmd_finish(struct golden *g, char **tok, int ntok)
{
	int64_t id, t;
	int e;
	(void)ntok;
	if (parse_i64(tok[1], &id)) {
		gerr(g, "unknown command", tok[0]);
		return 2;
	}
	if (parse_i64(tok[2], &t)) {
		gerr(g, "expected a time", tok[2]);
		return 2;
	}
	g->now = t;
	e = tok[0][0] == 'f' ? drv_sched_finish(g->s, (uint64_t)id, g->now) :
			       drv_sched_requeue(g->s, (uint64_t)id, g->now);
	if (e) {
		gerr(g, tok[0], drv_strerror(e));
		return 2;
	}
	return 0;
}

/* grow POOL NAME... T: provisioned nodes arrive, like the first node of
 * the pool */
static int gcmd_grow(struct golden *g, char **tok, int ntok)
{
	int32_t po, k, tmpl = -1, e = 0;
	for (po = 0; po < g->c.npools; po++)
		if (!strcmp(g->c.pools[po].name, tok[1]))
			break;
	for (k = 0; k < g->c.nnodes && po < g->c.npools; k++)
		if (g->c.nodes[k].pool == po) {
			tmpl = k;
			break;
		}
	if (po == g->c.npools || tmpl < 0 || parse_i64(tok[ntok - 1], &g->now)) {
		gerr(g, "grow POOL NODE... TIME (a pool with a node to copy)", NULL);
		return 2;
	}
	for (k = 2; k < ntok - 1 && e >= 0; k++) {
		const struct drv_node *t = &g->c.nodes[tmpl];
		e = drv_cluster_add_node(&g->c, g->c.vertices[t->vertex].parent, tok[k], t->model,
					 t->ngpus, t->cpu_milli, t->mem_mib);
	}
	if (e < 0 || drv_sched_pool_grown(g->s, po, ntok - 3, g->now)) {
		gerr(g, "grow failed", drv_strerror(e));
		return 2;
	}
	return 0;
}

/* node NAME up|down|draining TIME */
static int gcmd_node(struct golden *g, char **tok, int ntok)
{
	int n = drv_cluster_find_node(&g->c, tok[1]);
	enum drv_node_state st = !strcmp(tok[2], "down")     ? DRV_NODE_DOWN :
				 !strcmp(tok[2], "draining") ? DRV_NODE_DRAINING :
							       DRV_NODE_UP;
	(void)ntok;
	if (n < 0 || parse_i64(tok[3], &g->now)) {
		gerr(g, "node NAME up|down|draining TIME", NULL);
		return 2;
	}
	drv_cluster_set_node_state(&g->c, n, st);
	drv_sched_cluster_changed(g->s, g->now);
	return 0;
}

/* The commands after 'cluster', with the words each takes (-1: any). */
static const struct gcmd {
	const char *name;
	int min, max;
	int (*run)(struct golden *g, char **tok, int ntok);
} gcmds[] = {
	{ "policy", 1, -1, gcmd_policy },   { "class", 4, 4, gcmd_class },
	{ "tenant", 2, -1, gcmd_tenant },   { "submit", 1, -1, gcmd_submit },
	{ "user", 2, -1, gcmd_user },
	{ "running", 1, -1, gcmd_running }, { "pass", 2, 2, gcmd_pass },
	{ "expect", 1, 1, gcmd_expect },    { "finish", 3, 3, gcmd_finish },
	{ "requeue", 3, 3, gcmd_finish },   { "grow", 3, -1, gcmd_grow },
	{ "node", 4, 4, gcmd_node },
};

/* One scenario line outside an expect block: 0, or 2 when malformed. */
static int golden_line(struct golden *g, char *line)
{
	char *tok[64];
	int ntok = split(line, tok, 64);
	size_t i;
	if (ntok == 0 || tok[0][0] == '#')
		return 0;
	if (!strcmp(tok[0], "cluster") && ntok == 2)
		return g->have_cluster || golden_cluster(g, tok[1]) ? 2 : 0;
	if (!g->have_cluster) {
		gerr(g, "the first command must be 'cluster FILE'", tok[0]);
		return 2;
	}
	for (i = 0; i < DRV_ARRAY_SIZE(gcmds); i++)
		if (!strcmp(tok[0], gcmds[i].name) && ntok >= gcmds[i].min &&
		    (gcmds[i].max < 0 || ntok <= gcmds[i].max))
			return gcmds[i].run(g, tok, ntok);
	gerr(g, "unknown command", tok[0]);
	return 2;
}

/* Frees what the scenario built; the cluster must be empty once the state
 * is gone (1 when not, else rc). */
static int golden_release(struct golden *g, int rc)
{
	size_t k;
	got_clear(g);
	drv_free(g->got);
	drv_sched_decisions_release(&g->d);
	if (g->s)
		drv_sched_free(g->s);
	if (g->have_cluster) {
		if (drv_cluster_check(&g->c) != 0 ||
		    g->c.vertices[0].free_gpus != g->c.vertices[0].total_gpus) {
			fprintf(stderr, "%s: the cluster is not empty after the state was freed\n",
				g->file);
			if (!rc)
				rc = 1;
		}
		drv_cluster_release(&g->c);
	}
	for (k = 0; k < g->njobs; k++) {
		drv_job_release(g->jobs[k]);
		drv_free(g->jobs[k]);
	}
	drv_free(g->jobs);
	return rc;
}

/*
 * Runs one scenario. Returns 0 when every expectation held, 1 when one did
 * not, 2 on a malformed scenario.
 */
static int golden_run(const char *file, FILE *log, bool quiet)
{
	struct golden G, *g = &G;
	FILE *f = fopen(file, "r");
	char line[4096];
	int rc = 0;

	memset(g, 0, sizeof(*g));
	g->file = file;
	g->log = log;
	g->quiet = quiet;
	drv_sched_policy_default(&g->pol);
	drv_sched_decisions_init(&g->d);
	if (!f) {
		fprintf(stderr, "%s: %s\n", file, strerror(errno));
		return 2;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		g->line++;
		if (g->in_expect) {
			line[strcspn(line, "\r\n")] = '\0';
			expect_line(g, line);
		} else {
			rc = golden_line(g, line);
		}
	}
	if (!rc && g->in_expect) {
		gerr(g, "'expect' without 'end'", NULL);
		rc = 2;
	}
	fclose(f);
	if (!rc && g->failures)
		rc = 1;
	return golden_release(g, rc);
}

/* Runs the scenario twice and requires byte-identical decisions. */
static int golden_main(const char *file, bool quiet)
{
	char *a = NULL, *b = NULL;
	size_t al = 0, bl = 0;
	FILE *fa = open_memstream(&a, &al), *fb = open_memstream(&b, &bl);
	int rc = golden_run(file, fa, quiet), rc2;
	fclose(fa);
	rc2 = golden_run(file, fb, true);
	fclose(fb);
	if (!rc && (rc2 || al != bl || memcmp(a, b, al))) {
		fprintf(stderr, "%s: two runs of the scenario decided differently\n", file);
		rc = 1;
	}
	free(a);
	free(b);
	return rc;
}

int drv_bench_sched(int argc, char **argv)
{
	struct bench_args a;
	int rc = parse_args(argc, argv, &a);

	if (rc < 0)
		return drv_opts_exit(rc);
	if (a.golden)
		return golden_main(a.golden, a.quiet);
	return bench_measure(&a.pol, a.npending, a.runs, a.json);
}
