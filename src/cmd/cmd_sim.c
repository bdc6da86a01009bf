/*
 * cmd_sim.c: 'drover sim', the trace-driven simulator's command line. It reads
 * the cluster file and the workload (a trace, or a generated one), runs
 * src/sim's engine with the scheduling policy the flags choose, and writes
 * the summary (text, or JSON with --json), the per-run CSV (--jobs-out),
 * the HTML report (--report) and the generated workload (--write-trace).
 * With --tenants FILE, the scheduler gets that file's tenants (quotas,
 * weights, cohorts) and priority classes, and the summary shows what
 * each tenant got.
 * Output files are written to a temporary name and renamed, so a failed
 * run never leaves one half-written.
 */
#include "drover/clock.h"
#include "drover/clusterfile.h"
#include "drover/cmd.h"
#include "drover/fsutil.h"
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

static const char usage_text[] =
	"usage: drover sim --cluster FILE (--trace FILE [--format philly|drover] |\n"
	"                  --generate --jobs N --load RHO [--write-trace FILE]) [options]\n"
	"\n"
	"Replays a workload through drover's scheduler on a virtual clock.\n"
	"\n"
	"workload:\n"
	"  --cluster FILE        cluster file (docs/cluster-format.md)\n"
	"  --trace FILE          a trace; --format philly (Philly CSV) or drover (native CSV,\n"
	"                        docs/simulator.md); without --format, the header decides\n"
	"  --strict              a malformed trace row is an error (default: counted, skipped)\n"
	"  --generate            a synthetic workload: --jobs N jobs at offered load --load RHO\n"
	"                        (e.g. 0.8), Poisson arrivals, Philly-like sizes and durations\n"
	"  --write-trace FILE    write the workload as native CSV\n"
	"  --tenants FILE        tenants (GPU quotas per model, fair-share weights, cohorts\n"
	"                        and borrowing) and priority classes a trace may name\n"
	"                        (YAML, docs/simulator.md)\n"
	"  --seed N              seed for every random choice (default 1)\n"
	"  --mtbf-hours H        each node fails after an exponential time of mean H hours\n"
	"  --repair-hours R      ... and is repaired after a mean of R hours (default 4)\n"
	"  --grow-wait S         elastic pools grow for jobs that waited S seconds and shrink\n"
	"                        after S seconds idle (default: never)\n"
	"  --provision-delay S   elastic nodes become usable S seconds after asked (default 300)\n"
	"  --every-pass          run the scheduler at every event time, even when it provably\n"
	"                        decides nothing (slower; the schedule is the same)\n"
	"policy:\n"
	"  --policy fifo|sjf|las|fair       queue order (default fifo)\n"
	"  --mode strict|backfill|greedy    head-of-line handling (default backfill)\n"
	"  --preemption on|off              (default off)\n"
	"  --pools cheapest|fastest         (default cheapest)\n"
	"output:\n"
	"  --json                the summary as one JSON object (default: text)\n"
	"  --jobs-out FILE       one CSV row per run of a job\n"
	"  --report FILE.html    a self-contained HTML page with charts\n";

struct args {
	const char *cluster, *trace, *format, *write_trace, *jobs_out, *report, *tenants;
	const char *policy, *mode, *preemption, *pools;
	bool generate, json, strict, every_pass;
	long long jobs;
	double load, mtbf, repair, provision_delay, grow_wait;
	unsigned long long seed;
};

static int bad(const char *flag, const char *what, const char *found)
{
	fprintf(stderr, "drover sim: %s: expected %s, found '%s'\n", flag, what, found);
	return DRV_EXIT_USAGE;
}

static bool to_ll(const char *s, long long *out)
{
	char *end;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return *s && !*end && !errno;
}

static bool to_d(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return *s && !*end && !errno && isfinite(*out);
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int i;
	memset(a, 0, sizeof(*a));
	a->seed = 1;
	a->repair = 4;
	a->provision_delay = 300;
	a->jobs = -1;
	a->load = -1;
	for (i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		long long ll;
#define VAL()                                                                           \
	do {                                                                            \
		if (!v) {                                                               \
			fprintf(stderr, "drover sim: %s needs a value\n", f);           \
			return DRV_EXIT_USAGE;                                          \
		}                                                                       \
		i++;                                                                    \
	} while (0)
		if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
			fputs(usage_text, stdout);
			return -1;
		} else if (!strcmp(f, "--cluster")) {
			VAL();
			a->cluster = v;
		} else if (!strcmp(f, "--trace")) {
			VAL();
			a->trace = v;
		} else if (!strcmp(f, "--format")) {
			VAL();
			if (strcmp(v, "philly") && strcmp(v, "drover"))
				return bad(f, "philly or drover", v);
			a->format = v;
		} else if (!strcmp(f, "--generate")) {
			a->generate = true;
		} else if (!strcmp(f, "--jobs")) {
			VAL();
			if (!to_ll(v, &ll) || ll < 1 || ll > 100000000)
				return bad(f, "a number of jobs from 1 to 100000000", v);
			a->jobs = ll;
		} else if (!strcmp(f, "--load")) {
			VAL();
			if (!to_d(v, &a->load) || a->load <= 0 || a->load > 100)
				return bad(f, "an offered load > 0 (1.0 = every GPU busy), at most 100",
					   v);
		} else if (!strcmp(f, "--tenants")) {
			VAL();
			a->tenants = v;
		} else if (!strcmp(f, "--write-trace")) {
			VAL();
			a->write_trace = v;
		} else if (!strcmp(f, "--seed")) {
			VAL();
			if (!to_ll(v, &ll) || ll < 0)
				return bad(f, "a whole number >= 0", v);
			a->seed = (unsigned long long)ll;
		} else if (!strcmp(f, "--mtbf-hours")) {
			VAL();
			if (!to_d(v, &a->mtbf) || a->mtbf <= 0)
				return bad(f, "hours > 0", v);
		} else if (!strcmp(f, "--repair-hours")) {
			VAL();
			if (!to_d(v, &a->repair) || a->repair <= 0)
				return bad(f, "hours > 0", v);
		} else if (!strcmp(f, "--provision-delay")) {
			VAL();
			if (!to_d(v, &a->provision_delay) || a->provision_delay < 0 ||
			    a->provision_delay > 1e9)
				return bad(f, "seconds >= 0", v);
		} else if (!strcmp(f, "--grow-wait")) {
			VAL();
			if (!to_d(v, &a->grow_wait) || a->grow_wait < 0 || a->grow_wait > 1e9)
				return bad(f, "seconds >= 0", v);
		} else if (!strcmp(f, "--policy")) {
			VAL();
			a->policy = v;
		} else if (!strcmp(f, "--mode")) {
			VAL();
			a->mode = v;
		} else if (!strcmp(f, "--preemption")) {
			VAL();
			if (strcmp(v, "on") && strcmp(v, "off"))
				return bad(f, "on or off", v);
			a->preemption = v;
		} else if (!strcmp(f, "--pools")) {
			VAL();
			a->pools = v;
		} else if (!strcmp(f, "--json")) {
			a->json = true;
		} else if (!strcmp(f, "--jobs-out")) {
			VAL();
			a->jobs_out = v;
		} else if (!strcmp(f, "--report")) {
			VAL();
			a->report = v;
		} else if (!strcmp(f, "--strict")) {
			a->strict = true;
		} else if (!strcmp(f, "--every-pass")) {
			a->every_pass = true;
		} else {
			fprintf(stderr, "drover sim: unknown option '%s'; see 'drover sim --help'\n",
				f);
			return DRV_EXIT_USAGE;
		}
#undef VAL
	}
	if (!a->cluster) {
		fprintf(stderr, "drover sim: --cluster FILE is required; see 'drover sim --help'\n");
		return DRV_EXIT_USAGE;
	}
	if (!a->trace == !a->generate) {
		fprintf(stderr, "drover sim: give either --trace FILE or --generate\n");
		return DRV_EXIT_USAGE;
	}
	if (a->generate && (a->jobs < 0 || a->load < 0)) {
		fprintf(stderr, "drover sim: --generate needs --jobs N and --load RHO\n");
		return DRV_EXIT_USAGE;
	}
	if (!a->generate && (a->jobs >= 0 || a->load >= 0)) {
		fprintf(stderr, "drover sim: --jobs and --load go with --generate\n");
		return DRV_EXIT_USAGE;
	}
	if (a->format && a->generate) {
		fprintf(stderr, "drover sim: --format goes with --trace\n");
		return DRV_EXIT_USAGE;
	}
	return 0;
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

int cmd_sim(int argc, char **argv)
{
	struct args a;
	struct drv_cluster c;
	struct drv_diags d;
	struct drv_sim_workload w;
	struct drv_sim_result r;
	struct drv_tenants tf;
	struct drv_sched_policy pol;
	struct drv_sim_opts o;
	struct out_ctx oc;
	bool have_cluster = false;
	int rc, ret = DRV_EXIT_OK;
	int32_t i, node_gpus = 0;
	int64_t total_gpus = 0;
	double t0;
	char *config = NULL;
	char title[512];

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DRV_EXIT_OK : rc;
	drv_sched_policy_default(&pol);
	if (a.policy && drv_sched_order_parse(a.policy, &pol.order))
		return bad("--policy", "fifo, sjf, las or fair", a.policy);
	if (a.mode && drv_sched_mode_parse(a.mode, &pol.mode))
		return bad("--mode", "strict, backfill or greedy", a.mode);
	if (a.pools && drv_sched_pools_parse(a.pools, &pol.pools))
		return bad("--pools", "cheapest or fastest", a.pools);
	if (a.preemption)
		pol.preemption = !strcmp(a.preemption, "on");
	if (a.grow_wait > 0) {
		/* elastic pools grow for jobs waiting this long, shrink after as long idle */
		pol.grow_wait_s = (int64_t)a.grow_wait;
		pol.idle_release_s = (int64_t)a.grow_wait;
	}

	t0 = drv_mono_s();
	drv_sim_workload_init(&w);
	drv_sim_result_init(&r);
	drv_tenants_init(&tf);
	drv_diags_init(&d, a.cluster);
	rc = drv_cluster_load_file(a.cluster, &c, &d);
	drv_diags_print(&d, stderr);
	drv_diags_release(&d);
	if (rc) {
		fprintf(stderr, "drover sim: %s: cannot load the cluster (%s)\n", a.cluster,
			drv_strerror(rc));
		ret = rc == DRV_EIO ? DRV_EXIT_USAGE : DRV_EXIT_USAGE;
		goto out;
	}
	have_cluster = true;
	for (i = 0; i < c.nnodes; i++) {
		node_gpus = DRV_MAX(node_gpus, c.nodes[i].ngpus);
		total_gpus += c.nodes[i].ngpus;
	}
	if (node_gpus < 1) {
		fprintf(stderr, "drover sim: %s: the cluster has no GPUs\n", a.cluster);
		ret = DRV_EXIT_USAGE;
		goto out;
	}

	if (a.tenants) {
		drv_diags_init(&d, a.tenants);
		rc = drv_tenants_load_file(a.tenants, &tf, &d);
		drv_diags_print(&d, stderr);
		drv_diags_release(&d);
		if (rc) {
			fprintf(stderr, "drover sim: %s: %s; nothing simulated\n", a.tenants,
				rc == DRV_EIO ? "cannot read the tenants file"
					      : "invalid tenants file");
			ret = DRV_EXIT_USAGE;
			goto out;
		}
		/* a trace row may name the file's priority classes */
		drv_sim_workload_set_classes(&w, &tf);
	}

	if (a.trace) {
		FILE *f = fopen(a.trace, "r");
		if (!f) {
			fprintf(stderr, "drover sim: %s: %s\n", a.trace, strerror(errno));
			ret = DRV_EXIT_USAGE;
			goto out;
		}
		if (!a.format)
			a.format = sniff_format(f);
		drv_diags_init(&d, a.trace);
		if (!strcmp(a.format, "philly"))
			rc = drv_sim_read_philly(f, node_gpus, a.strict, &w, &d);
		else
			rc = drv_sim_read_native(f, a.strict, &w, &d);
		fclose(f);
		drv_diags_print(&d, stderr);
		drv_diags_release(&d);
		if (rc) {
			fprintf(stderr, "drover sim: %s: %s; nothing simulated\n", a.trace,
				rc == DRV_EIO ? "read error" : "malformed trace");
			ret = rc == DRV_EIO ? DRV_EXIT_FAIL : DRV_EXIT_USAGE;
			goto out;
		}
		if (w.malformed)
			fprintf(stderr, "drover sim: %s: %lld malformed rows skipped (--strict makes "
					"them errors)\n",
				a.trace, (long long)w.malformed);
	} else {
		struct drv_sim_gen_opts g = {
			.njobs = (int32_t)a.jobs,
			.load = a.load,
			.seed = a.seed,
			.dist = DRV_SIM_DIST_PHILLY,
			.node_gpus = node_gpus,
			.total_gpus = (int32_t)total_gpus,
		};
		rc = drv_sim_generate(&g, &w);
		if (rc) {
			fprintf(stderr, "drover sim: cannot generate that workload (%s)\n",
				drv_strerror(rc));
			ret = DRV_EXIT_USAGE;
			goto out;
		}
	}
	if (a.tenants) {
		/* default classes of tenants; tenants the workload lacks */
		drv_diags_init(&d, a.tenants);
		drv_sim_bind_tenants(&w, &tf, &c, &d);
		drv_diags_print(&d, stderr);
		drv_diags_release(&d);
	}
	oc = (struct out_ctx){ .c = &c, .w = &w, .r = &r, .title = title };
	if (a.write_trace && write_atomic(a.write_trace, wr_trace, &oc)) {
		ret = DRV_EXIT_FAIL;
		goto out;
	}

	memset(&o, 0, sizeof(o));
	o.policy = &pol;
	o.mtbf_hours = a.mtbf;
	o.repair_hours = a.repair;
	o.seed = a.seed;
	o.provision_delay_s = (int64_t)a.provision_delay;
	o.progress = isatty(STDERR_FILENO);
	o.record_samples = a.report != NULL;
	o.every_pass = a.every_pass;
	o.tenants = a.tenants ? &tf : NULL;
	rc = drv_sim_run(&c, &w, &o, &r);
	if (rc) {
		fprintf(stderr, "drover sim: the simulation failed: %s\n", drv_strerror(rc));
		ret = DRV_EXIT_FAIL;
		goto out;
	}
	r.sum.malformed = w.malformed;
	r.sum.sim_wall_s = drv_mono_s() - t0;

	snprintf(title, sizeof(title), "drover sim: %s on %s, %s, %s, preemption %s, %s%s%s",
		 a.trace ? a.trace : "generated workload", a.cluster,
		 drv_sched_order_name(pol.order), drv_sched_mode_name(pol.mode),
		 pol.preemption ? "on" : "off", drv_sched_pools_name(pol.pools),
		 a.tenants ? ", tenants " : "", a.tenants ? a.tenants : "");
	if (a.jobs_out && write_atomic(a.jobs_out, wr_jobs, &oc))
		ret = DRV_EXIT_FAIL;
	if (a.report && write_atomic(a.report, wr_report, &oc))
		ret = DRV_EXIT_FAIL;
	if (a.json) {
		json_t *cfg = json_pack("{s:s, s:s, s:s, s:b, s:s, s:s, s:s?, s:s?, s:I}", "cluster",
					a.cluster, "policy", drv_sched_order_name(pol.order), "mode",
					drv_sched_mode_name(pol.mode), "preemption", pol.preemption,
					"pools", drv_sched_pools_name(pol.pools), "workload",
					a.trace ? "trace" : "generated", "trace", a.trace, "format",
					a.format, "seed", (json_int_t)a.seed);
		if (cfg) {
			if (a.tenants)
				json_object_set_new(cfg, "tenants", json_string(a.tenants));
			if (a.mtbf > 0) {
				json_object_set_new(cfg, "mtbf_hours", json_real(a.mtbf));
				json_object_set_new(cfg, "repair_hours", json_real(a.repair));
			}
			config = json_dumps(cfg, JSON_COMPACT);
			json_decref(cfg);
		}
		if (drv_sim_write_json(stdout, &w, &r, config))
			ret = DRV_EXIT_FAIL;
	} else {
		print_text(&r.sum, title);
		print_tenants(&w, &r);
	}
out:
	free(config);
	drv_sim_result_release(&r);
	drv_sim_workload_release(&w);
	drv_tenants_release(&tf);
	if (have_cluster)
		drv_cluster_release(&c);
	return ret;
}
