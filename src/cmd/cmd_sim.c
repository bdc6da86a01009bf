/*
 * cmd_sim.c: 'drover sim', the trace-driven simulator's command line. It reads
 * the cluster file and the workload (a trace, or a generated one), runs
 * src/sim's engine with the scheduling policy the options choose (one
 * table, include/drover/options.h), and writes the summary (text, or JSON
 * with --json), the per-run CSV (--jobs-out),
 * the HTML report (--report) and the generated workload (--write-trace).
 * With --tenants FILE, the scheduler gets that file's tenants (quotas,
 * weights, cohorts) and priority classes, and the summary shows what
 * each tenant got.
 * Output files are written to a temporary name and renamed, so a failed
 * run never leaves one half-written.
 */
#include "drover/bench.h"
#include "drover/clock.h"
#include "drover/clusterfile.h"
#include "drover/cmd.h"
#include "drover/fsutil.h"
#include "drover/options.h"
#include "drover/sched.h"
#include "drover/sim.h"
#include "drover/tenants.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SIM_MIN_RUN 0
#define SIM_LAS_MIN_RUN 43200
#define SIM_LAS_PROMOTE 0

struct args {
	const char *cluster, *trace, *write_trace, *jobs_out, *report, *tenants;
	const char *las_queues;
	const char *format; /* "philly", "drover", or NULL: the header decides */
	int fmt, order, mode, pools, preemption, placement, half_life;
	bool generate, json, strict, every_pass;
	long long jobs, seed;
	double load, mtbf, repair, provision_delay, grow_wait;
	long long preempt_cost, min_run, las_promote, fair_half_life;
};

static const struct drv_opt_choice formats[] = { { "philly", 0 }, { "drover", 1 }, { NULL, 0 } };
static const char *const format_names[] = { "philly", "drover" };
static const struct drv_opt_choice orders[] = {
	{ "fifo", DRV_ORDER_FIFO }, { "sjf", DRV_ORDER_SJF }, { "las", DRV_ORDER_LAS },
	{ "fair", DRV_ORDER_FAIR }, { NULL, 0 },
};
static const struct drv_opt_choice modes[] = {
	{ "strict", DRV_MODE_STRICT }, { "backfill", DRV_MODE_BACKFILL },
	{ "greedy", DRV_MODE_GREEDY }, { NULL, 0 },
};
static const struct drv_opt_choice on_off[] = { { "on", 1 }, { "off", 0 }, { NULL, 0 } };
static const struct drv_opt_choice pools[] = {
	{ "cheapest", DRV_POOLS_CHEAPEST }, { "fastest", DRV_POOLS_FASTEST }, { NULL, 0 },
};

#define SIM_USAGE                                                                          \
	"drover sim --cluster FILE (--trace FILE [--format philly|drover] |\n"             \
	"                  --generate --jobs N --load RHO [--write-trace FILE]) [options]"

/* "3200,25600" into the policy's LAS thresholds; 0 or -1. */
static int parse_las_queues(const char *s, struct drv_sched_policy *pol)
{
	int32_t n = 0;
	while (*s) {
		char *end;
		long long v = strtoll(s, &end, 10);
		if (end == s || v <= 0 || n == DRV_SCHED_MAX_LAS ||
		    (n > 0 && v <= pol->las_threshold[n - 1]) || (*end && *end != ','))
			return -1;
		pol->las_threshold[n++] = v;
		s = *end ? end + 1 : end;
	}
	if (n == 0)
		return -1;
	pol->nlas = n;
	return 0;
}

/* Without preemption every waiting job has attained no service: las is
 * fifo then. Said once on stderr and in the report's title. */
#define LAS_FIFO_NOTE "las without preemption orders like fifo: no waiting job has attained " \
		      "service; --preemption on shows LAS"

static bool las_like_fifo(const struct drv_sched_policy *pol)
{
	return pol->order == DRV_ORDER_LAS && !pol->preemption;
}

/* The options that go together, after the parse; 0 or exit code 2. */
static int check_args(const struct drv_opts *cmd, const struct args *a)
{
	if (!a->trace == !a->generate)
		return drv_opts_usage_error(cmd, "give either --trace FILE or --generate");
	if (a->generate && (a->jobs < 0 || a->load < 0))
		return drv_opts_usage_error(cmd, "--generate needs --jobs N and --load RHO");
	if (!a->generate && (a->jobs >= 0 || a->load >= 0))
		return drv_opts_usage_error(cmd, "--jobs and --load go with --generate");
	if (a->format && a->generate)
		return drv_opts_usage_error(cmd, "--format goes with --trace");
	if (a->las_queues) {
		struct drv_sched_policy tmp;
		if (parse_las_queues(a->las_queues, &tmp))
			return drv_opts_usage_error(cmd, "--las-queues: found '%s', expected up to 8 "
						    "ascending positive GPU-second counts, e.g. "
						    "3200,25600", a->las_queues);
	}
	return 0;
}

static void set_defaults(struct args *a, struct drv_sched_policy *pol)
{
	memset(a, 0, sizeof(*a));
	drv_sched_policy_default(pol);
	a->seed = 1;
	a->repair = 4;
	a->provision_delay = 300;
	a->jobs = -1;
	a->load = -1;
	a->fmt = -1;
	a->preempt_cost = 60;
	a->min_run = -1;
	a->las_promote = -1;
	a->order = (int)pol->order;
	a->mode = (int)pol->mode;
	a->pools = (int)pol->pools;
	a->preemption = pol->preemption;
	a->placement = (int)pol->place;
}

/* The parsed options into the policy. */
static void apply_args(struct args *a, struct drv_sched_policy *pol)
{
	if (a->fmt >= 0)
		a->format = format_names[a->fmt];
	pol->order = (enum drv_sched_order)a->order;
	pol->mode = (enum drv_sched_mode)a->mode;
	pol->pools = (enum drv_sched_pools)a->pools;
	pol->preemption = a->preemption;
	pol->place = (enum drv_place_strategy)a->placement;
	if (a->las_queues)
		parse_las_queues(a->las_queues, pol);
	pol->fair_half_life_s = a->fair_half_life;
	/* LAS: runs of at least SIM_LAS_MIN_RUN before they are preempted, so
	 * LAS does not thrash (other orders: SIM_MIN_RUN); LAS promotion of
	 * jobs that waited SIM_LAS_PROMOTE (docs/simulator.md) */
	pol->min_run_s = a->min_run >= 0 ? a->min_run :
			 pol->order == DRV_ORDER_LAS ? SIM_LAS_MIN_RUN : SIM_MIN_RUN;
	pol->las_promote_s = a->las_promote >= 0 ? a->las_promote :
			     pol->order == DRV_ORDER_LAS ? SIM_LAS_PROMOTE : 0;
	pol->mix_half_life = a->half_life;
	if (a->grow_wait > 0) {
		/* elastic pools grow for jobs waiting this long, shrink after as long idle */
		pol->grow_wait_s = (int64_t)a->grow_wait;
		pol->idle_release_s = (int64_t)a->grow_wait;
	}
}

/* 0, DRV_OPTS_HELP, or an exit code (2) after printing why. */
static int parse_args(int argc, char **argv, struct args *a, struct drv_sched_policy *pol)
{
	const struct drv_option table[] = {
		DRV_OPT_GROUP("workload"),
		DRV_OPT_STRING(0, "cluster", &a->cluster, "FILE",
			       "cluster file (docs/cluster-format.md)", .flags = DRV_OPTF_REQUIRED),
		DRV_OPT_STRING(0, "trace", &a->trace, "FILE",
			       "a trace; --format philly (Philly CSV) or drover (native CSV, "
			       "docs/simulator.md); without --format, the header decides"),
		DRV_OPT_ENUM(0, "format", &a->fmt, formats, "the trace's format"),
		DRV_OPT_FLAG(0, "strict", &a->strict,
			     "a malformed trace row is an error (default: counted, skipped)"),
		DRV_OPT_FLAG(0, "generate", &a->generate,
			     "a synthetic workload: --jobs N jobs at offered load --load RHO (e.g. "
			     "0.8), Poisson arrivals, Philly-like sizes and durations"),
		DRV_OPT_LLONG(0, "jobs", &a->jobs, 1, 100000000, "N",
			      "how many jobs --generate makes",
			      .expect = "a number of jobs from 1 to 100000000"),
		DRV_OPT_DOUBLE(0, "load", &a->load, 0, 100, "RHO",
			       "the offered load of --generate (1.0 = every GPU busy)",
			       .flags = DRV_OPTF_MIN_EXCL,
			       .expect = "an offered load > 0 (1.0 = every GPU busy), at most 100"),
		DRV_OPT_STRING(0, "write-trace", &a->write_trace, "FILE",
			       "write the workload as native CSV"),
		DRV_OPT_STRING(0, "tenants", &a->tenants, "FILE",
			       "tenants (GPU quotas per model, fair-share weights, cohorts and "
			       "borrowing) and priority classes a trace may name (YAML, "
			       "docs/simulator.md)"),
		DRV_OPT_LLONG(0, "seed", &a->seed, 0, 9223372036854775807LL, "N",
			      "seed for every random choice (default 1)"),
		DRV_OPT_DOUBLE(0, "mtbf-hours", &a->mtbf, 0, 1e308, "H",
			       "each node fails after an exponential time of mean H hours",
			       .flags = DRV_OPTF_MIN_EXCL, .expect = "hours > 0"),
		DRV_OPT_DOUBLE(0, "repair-hours", &a->repair, 0, 1e308, "R",
			       "... and is repaired after a mean of R hours (default 4)",
			       .flags = DRV_OPTF_MIN_EXCL, .expect = "hours > 0"),
		DRV_OPT_DOUBLE(0, "grow-wait", &a->grow_wait, 0, 1e9, "S",
			       "elastic pools grow for jobs that waited S seconds and shrink after "
			       "S seconds idle (default: never)",
			       .expect = "seconds >= 0"),
		DRV_OPT_DOUBLE(0, "provision-delay", &a->provision_delay, 0, 1e9, "S",
			       "elastic nodes become usable S seconds after asked (default 300)",
			       .expect = "seconds >= 0"),
		DRV_OPT_FLAG(0, "every-pass", &a->every_pass,
			     "run the scheduler at every event time, even when it provably decides "
			     "nothing (slower; the schedule is the same)"),
		DRV_OPT_GROUP("policy"),
		DRV_OPT_ENUM(0, "policy", &a->order, orders, "queue order (default fifo)"),
		DRV_OPT_ENUM(0, "mode", &a->mode, modes, "head-of-line handling (default backfill)"),
		DRV_OPT_ENUM(0, "preemption", &a->preemption, on_off,
			     "may a job start by preempting lower-priority ones (default off)"),
		DRV_OPT_LLONG(0, "preempt-cost", &a->preempt_cost, 0, 1000000000, "S",
			      "seconds of work a preempted run loses (default 60)"),
		DRV_OPT_LLONG(0, "min-run", &a->min_run, 0, 1000000000, "S",
			      "a run is preempted only after S seconds (default 0; las: "
			      "43200)"),
		DRV_OPT_STRING(0, "las-queues", &a->las_queues, "GPU-S,...",
			       "las: attained GPU-seconds where each queue ends, ascending "
			       "(default 300,3000,30000,300000,3000000)"),
		DRV_OPT_LLONG(0, "fair-half-life", &a->fair_half_life, 0, 1000000000, "S",
			      "fair: weigh each tenant's past use, halved every S seconds, "
			      "beside what it holds now (default 0: only what it holds)"),
		DRV_OPT_LLONG(0, "las-promote", &a->las_promote, 0, 1000000000, "S",
			      "las: a job waiting S seconds is promoted to the first queue "
			      "(default 0: never)"),
		DRV_OPT_ENUM(0, "pools", &a->pools, pools,
			     "which pool a job tries first (default cheapest)"),
		DRV_OPT_ENUM(0, "placement", &a->placement, drv_place_choices,
			     "the placement scorer (default " DRV_PLACE_DEFAULT_NAME ")"),
		DRV_OPT_INT(0, "placement-half-life", &a->half_life, 1, 1000000000, "TASKS",
			    "multi: the learned task mix forgets half its weight every TASKS tasks "
			    "submitted (default 500)"),
		DRV_OPT_GROUP("output"),
		DRV_OPT_FLAG(0, "json", &a->json, "the summary as one JSON object (default: text)"),
		DRV_OPT_STRING(0, "jobs-out", &a->jobs_out, "FILE", "one CSV row per run of a job"),
		DRV_OPT_STRING(0, "report", &a->report, "FILE.html",
			       "a self-contained HTML page with charts"),
		DRV_OPT_END(),
	};

	const struct drv_opts cmd = {
		.name = "drover sim",
		.usage = SIM_USAGE,
		.about = "Replays a workload through drover's scheduler on a virtual clock.",
		.options = table,
	};
	int rc;

	set_defaults(a, pol);
	rc = drv_opts_parse(&cmd, argc, argv);
	if (rc < 0)
		return rc == DRV_OPTS_HELP ? rc : DRV_EXIT_USAGE;
	apply_args(a, pol);
	return check_args(&cmd, a);
}

/* Writes a file through a temporary name (fsutil.h), saying why it could not. */
static int write_atomic(const char *path, int (*fn)(FILE *f, void *arg), void *arg)
{
	int rc = drv_file_write_atomic(path, 0666, fn, arg);

	if (rc)
		fprintf(stderr, "drover sim: %s: cannot write: %s\n", path, strerror(errno));
	return rc;
}

struct out_ctx {
	struct drv_cluster *c;
	struct drv_sim_workload *w;
	struct drv_sim_result *r;
	const char *title;
};

static int wr_trace(FILE *f, void *arg)
{
	struct out_ctx *o = arg;
	return drv_sim_write_native(f, o->w);
}

static int wr_jobs(FILE *f, void *arg)
{
	struct out_ctx *o = arg;
	return drv_sim_write_jobs(f, o->c, o->w, o->r);
}

static int wr_report(FILE *f, void *arg)
{
	struct out_ctx *o = arg;
	return drv_sim_write_report(f, o->c, o->w, o->r, o->title);
}

/* philly when the first non-blank line is Philly's header */
static const char *sniff_format(FILE *f)
{
	char buf[256];
	const char *fmt = "drover";
	while (fgets(buf, sizeof(buf), f)) {
		if (strspn(buf, " \t\r\n") == strlen(buf))
			continue;
		if (!strncmp(buf, "timestamp,duration,num_gpus", 27))
			fmt = "philly";
		break;
	}
	rewind(f);
	return fmt;
}

/* One line per tenant (at most 30, busiest first beyond that). */
static void print_tenants(const struct drv_sim_workload *w, const struct drv_sim_result *r)
{
	int32_t i, shown = 0, *order;

	if (!r->ntenants)
		return;
	order = drv_malloc(sizeof(int32_t) * (size_t)r->ntenants);
	for (i = 0; i < r->ntenants; i++)
		order[i] = i;
	/* by GPU-hours, descending; insertion sort: tens of tenants */
	for (i = 1; i < r->ntenants; i++) {
		int32_t k = i, x = order[i];
		while (k > 0 && r->tenants[order[k - 1]].gpu_hours < r->tenants[x].gpu_hours) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = x;
	}
	printf("%-16s %7s %7s %7s %10s %10s %9s %9s %9s\n", "tenant", "jobs", "done", "waiting",
	       "wait mean", "wait p99", "GPU-h", "peak GPU", "quota");
	for (i = 0; i < r->ntenants && shown < 30; i++, shown++) {
		const struct drv_sim_tenant_sum *t = &r->tenants[order[i]];
		char q[32];
		if (t->quota_gpus >= 0)
			snprintf(q, sizeof(q), "%.4g", t->quota_gpus);
		else
			snprintf(q, sizeof(q), "-");
		printf("%-16.16s %7lld %7lld %7lld %9.0fs %9.0fs %9.1f %9.4g %9s\n",
		       w->tenants[order[i]], (long long)t->jobs, (long long)t->completed,
		       (long long)t->never_started, t->avg_wait_s, t->p99_wait_s, t->gpu_hours,
		       t->peak_gpus, q);
	}
	if (r->ntenants > shown)
		printf("... and %d more tenants (--json has them all)\n", r->ntenants - shown);
	drv_free(order);
}

static void print_text(const struct drv_sim_summary *s, const char *policy_line)
{
	printf("%s\n", policy_line);
	printf("jobs        %lld (completed %lld, rejected %lld, malformed rows %lld, never "
	       "started %lld)\n",
	       (long long)s->jobs, (long long)s->completed, (long long)s->rejected,
	       (long long)s->malformed, (long long)s->never_started);
	printf("JCT         mean %.0f s, p50 %.0f s, p99 %.0f s\n", s->avg_jct_s, s->p50_jct_s,
	       s->p99_jct_s);
	printf("wait        mean %.0f s, p99 %.0f s\n", s->avg_wait_s, s->p99_wait_s);
	printf("makespan    %lld s (%.1f days)\n", (long long)s->makespan_s,
	       (double)s->makespan_s / 86400.0);
	printf("allocation  %.1f%% of GPUs while work waited or ran\n", s->gpu_alloc_ratio * 100);
	printf("preemptions %lld, node failures %lld, lost %.1f GPU-hours\n",
	       (long long)s->preemptions, (long long)s->failures, s->lost_gpu_hours);
	printf("cost        $%.2f\n", s->cost_usd);
	printf("simulated   %lld events, %lld passes in %.2f s\n", (long long)s->events,
	       (long long)s->passes, s->sim_wall_s);
}

/* One run: the options, what was loaded, what came out. */
struct sim {
	struct args a;
	struct drv_sched_policy pol;
	struct drv_cluster c;
	bool have_cluster;
	int32_t node_gpus;
	int64_t total_gpus;
	struct drv_tenants tf;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	char title[512];
};

/* The cluster file, and its largest node and GPU count; 0 or an exit code. */
static int load_cluster(struct sim *s)
{
	struct drv_diags d;
	int32_t i;
	int rc;

	drv_diags_init(&d, s->a.cluster);
	rc = drv_cluster_load_file(s->a.cluster, &s->c, &d);
	drv_diags_print(&d, stderr);
	drv_diags_release(&d);
	if (rc) {
		fprintf(stderr, "drover sim: %s: cannot load the cluster (%s)\n", s->a.cluster,
			drv_strerror(rc));
		return DRV_EXIT_USAGE;
	}
	s->have_cluster = true;
	for (i = 0; i < s->c.nnodes; i++) {
		s->node_gpus = DRV_MAX(s->node_gpus, s->c.nodes[i].ngpus);
		s->total_gpus += s->c.nodes[i].ngpus;
	}
	if (s->node_gpus < 1) {
		fprintf(stderr, "drover sim: %s: the cluster has no GPUs\n", s->a.cluster);
		return DRV_EXIT_USAGE;
	}
	return 0;
}

/* The tenants file; its classes become names a trace row may use. */
static int load_tenants(struct sim *s)
{
	struct drv_diags d;
	int rc;

	drv_diags_init(&d, s->a.tenants);
	rc = drv_tenants_load_file(s->a.tenants, &s->tf, &d);
	drv_diags_print(&d, stderr);
	drv_diags_release(&d);
	if (rc) {
		fprintf(stderr, "drover sim: %s: %s; nothing simulated\n", s->a.tenants,
			rc == DRV_EIO ? "cannot read the tenants file" : "invalid tenants file");
		return DRV_EXIT_USAGE;
	}
	drv_sim_workload_set_classes(&s->w, &s->tf);
	return 0;
}

static int read_trace(struct sim *s)
{
	struct drv_diags d;
	FILE *f = fopen(s->a.trace, "r");
	int rc;

	if (!f) {
		fprintf(stderr, "drover sim: %s: %s\n", s->a.trace, strerror(errno));
		return DRV_EXIT_USAGE;
	}
	if (!s->a.format)
		s->a.format = sniff_format(f);
	drv_diags_init(&d, s->a.trace);
	if (!strcmp(s->a.format, "philly"))
		rc = drv_sim_read_philly(f, s->node_gpus, s->a.strict, &s->w, &d);
	else
		rc = drv_sim_read_native(f, s->a.strict, &s->w, &d);
	fclose(f);
	drv_diags_print(&d, stderr);
	drv_diags_release(&d);
	if (rc) {
		fprintf(stderr, "drover sim: %s: %s; nothing simulated\n", s->a.trace,
			rc == DRV_EIO ? "read error" : "malformed trace");
		return rc == DRV_EIO ? DRV_EXIT_FAIL : DRV_EXIT_USAGE;
	}
	if (s->w.malformed)
		fprintf(stderr, "drover sim: %s: %lld malformed rows skipped (--strict makes "
				"them errors)\n",
			s->a.trace, (long long)s->w.malformed);
	return 0;
}

static int generate(struct sim *s)
{
	struct drv_sim_gen_opts g = {
		.njobs = (int32_t)s->a.jobs,
		.load = s->a.load,
		.seed = (unsigned long long)s->a.seed,
		.dist = DRV_SIM_DIST_PHILLY,
		.node_gpus = s->node_gpus,
		.total_gpus = (int32_t)s->total_gpus,
	};
	int rc = drv_sim_generate(&g, &s->w);

	if (rc) {
		fprintf(stderr, "drover sim: cannot generate that workload (%s)\n", drv_strerror(rc));
		return DRV_EXIT_USAGE;
	}
	return 0;
}

/* The workload (trace or generated), bound to the tenants. */
static int load_workload(struct sim *s)
{
	struct drv_diags d;
	int rc = s->a.trace ? read_trace(s) : generate(s);

	if (rc)
		return rc;
	if (s->a.tenants) {
		/* default classes of tenants; tenants the workload lacks */
		drv_diags_init(&d, s->a.tenants);
		drv_sim_bind_tenants(&s->w, &s->tf, &s->c, &d);
		drv_diags_print(&d, stderr);
		drv_diags_release(&d);
	}
	return 0;
}

static int simulate(struct sim *s, double t0)
{
	struct drv_sim_opts o;
	int rc;

	memset(&o, 0, sizeof(o));
	o.policy = &s->pol;
	o.mtbf_hours = s->a.mtbf;
	o.repair_hours = s->a.repair;
	o.seed = (unsigned long long)s->a.seed;
	o.provision_delay_s = (int64_t)s->a.provision_delay;
	o.progress = isatty(STDERR_FILENO);
	o.record_samples = s->a.report != NULL;
	o.every_pass = s->a.every_pass;
	o.preempt_cost_s = s->a.preempt_cost;
	o.tenants = s->a.tenants ? &s->tf : NULL;
	rc = drv_sim_run(&s->c, &s->w, &o, &s->r);
	if (rc) {
		fprintf(stderr, "drover sim: the simulation failed: %s\n", drv_strerror(rc));
		return DRV_EXIT_FAIL;
	}
	s->r.sum.malformed = s->w.malformed;
	s->r.sum.sim_wall_s = drv_mono_s() - t0;
	return 0;
}

/* The summary as one JSON object, the run's configuration under "config". */
static int print_json(const struct sim *s)
{
	const struct args *a = &s->a;
	char *config = NULL;
	json_t *cfg = json_pack("{s:s, s:s, s:s, s:b, s:s, s:s, s:s, s:s?, s:s?, s:I}", "cluster",
				a->cluster, "policy", drv_sched_order_name(s->pol.order), "mode",
				drv_sched_mode_name(s->pol.mode), "preemption", s->pol.preemption,
				"pools", drv_sched_pools_name(s->pol.pools), "placement",
				drv_place_strategy_name(s->pol.place), "workload",
				a->trace ? "trace" : "generated", "trace", a->trace, "format",
				a->format, "seed", (json_int_t)a->seed);
	int rc;

	if (cfg) {
		if (a->tenants)
			json_object_set_new(cfg, "tenants", json_string(a->tenants));
		if (las_like_fifo(&s->pol))
			json_object_set_new(cfg, "note", json_string(LAS_FIFO_NOTE));
		if (s->pol.fair_half_life_s)
			json_object_set_new(cfg, "fair_half_life_s",
					    json_integer(s->pol.fair_half_life_s));
		if (s->pol.preemption) {
			json_object_set_new(cfg, "preempt_cost_s", json_integer(a->preempt_cost));
			json_object_set_new(cfg, "min_run_s", json_integer(s->pol.min_run_s));
		}
		if (a->mtbf > 0) {
			json_object_set_new(cfg, "mtbf_hours", json_real(a->mtbf));
			json_object_set_new(cfg, "repair_hours", json_real(a->repair));
		}
		config = json_dumps(cfg, JSON_COMPACT);
		json_decref(cfg);
	}
	rc = drv_sim_write_json(stdout, &s->w, &s->r, config) ? DRV_EXIT_FAIL : DRV_EXIT_OK;
	free(config);
	return rc;
}

/* --jobs-out, --report, then the summary; an exit code. */
static int write_outputs(struct sim *s, struct out_ctx *oc)
{
	const struct args *a = &s->a;
	int ret = DRV_EXIT_OK;

	snprintf(s->title, sizeof(s->title),
		 "drover sim: %s on %s, %s, %s, preemption %s, %s, placement %s%s%s",
		 a->trace ? a->trace : "generated workload", a->cluster,
		 drv_sched_order_name(s->pol.order), drv_sched_mode_name(s->pol.mode),
		 s->pol.preemption ? "on" : "off", drv_sched_pools_name(s->pol.pools),
		 drv_place_strategy_name(s->pol.place),
		 a->tenants ? ", tenants " : "", a->tenants ? a->tenants : "");
	if (las_like_fifo(&s->pol)) {
		size_t n = strlen(s->title);
		snprintf(s->title + n, sizeof(s->title) - n, " (%s)", LAS_FIFO_NOTE);
	}
	if (a->jobs_out && write_atomic(a->jobs_out, wr_jobs, oc))
		ret = DRV_EXIT_FAIL;
	if (a->report && write_atomic(a->report, wr_report, oc))
		ret = DRV_EXIT_FAIL;
	if (a->json) {
		if (print_json(s))
			ret = DRV_EXIT_FAIL;
	} else {
		print_text(&s->r.sum, s->title);
		print_tenants(&s->w, &s->r);
	}
	return ret;
}

int cmd_sim(int argc, char **argv)
{
	struct sim *s = drv_calloc(1, sizeof(*s));
	struct out_ctx oc;
	double t0;
	int ret;

	ret = parse_args(argc, argv, &s->a, &s->pol);
	if (ret) {
		drv_free(s);
		return ret == DRV_OPTS_HELP ? DRV_EXIT_OK : ret;
	}
	if (las_like_fifo(&s->pol))
		fprintf(stderr, "drover sim: note: %s\n", LAS_FIFO_NOTE);
	t0 = drv_mono_s();
	drv_sim_workload_init(&s->w);
	drv_sim_result_init(&s->r);
	drv_tenants_init(&s->tf);
	oc = (struct out_ctx){ .c = &s->c, .w = &s->w, .r = &s->r, .title = s->title };
	ret = load_cluster(s);
	if (!ret && s->a.tenants)
		ret = load_tenants(s);
	if (!ret)
		ret = load_workload(s);
	if (!ret && s->a.write_trace && write_atomic(s->a.write_trace, wr_trace, &oc))
		ret = DRV_EXIT_FAIL;
	if (!ret)
		ret = simulate(s, t0);
	if (!ret)
		ret = write_outputs(s, &oc);
	drv_sim_result_release(&s->r);
	drv_sim_workload_release(&s->w);
	drv_tenants_release(&s->tf);
	if (s->have_cluster)
		drv_cluster_release(&s->c);
	drv_free(s);
	return ret;
}
