/*
 * bench_pack.c: 'drover bench pack [--json] [--placement NAME] [--workload
 * NAME] [--seeds N] [--placement-half-life TASKS]': how much of a cluster
 * each placement scorer fills when more is asked for than fits.
 *
 * Each named workload is a cluster of 1,200 nodes (leaves of 40 under one
 * root) and a stream of pods that never end, generated from a seed. Pods
 * arrive until they have asked for 130% of the cluster's GPUs; each gets
 * one placement attempt, in arrival order, and one that does not fit is
 * dropped (greedy: nothing waits for it). The scorer sees the workload as
 * the scheduler would: every pod is added to the learned task mix
 * (drv_place_mix_observe) as it arrives, before it is placed. After the
 * pods that fit in 100%, 115% and 130% of the GPUs asked for, the row
 * reports `alloc`, the share of the cluster's GPU capacity allocated
 * (milli-GPUs), and `ms`, the CPU time spent placing up to there (the
 * thread's, so other load on the machine does not count); both
 * are means over seeds 1..N (default 5).
 *
 * The workloads (node shapes, then pods):
 *   shared     8 x H100, 96 cores: 70% of pods share a GPU (0.1 to 0.7),
 *              the rest 1 to 8 whole GPUs.
 *   whole      the same nodes: mostly whole multi-GPU pods (2, 4, 8).
 *   cpu-heavy  1,000 such GPU nodes and 200 CPU-only nodes of 128 cores:
 *              a quarter of the pods CPU-only (8 to 32 cores), GPU pods
 *              with 8 to 32 cores per GPU.
 *   hetero     8 x H100 / 112 cores, 4 x A100 / 48 cores, 2 x L4 / 32
 *              cores; half the pods name a model.
 *   shift      the shared mix for the first half of the GPUs asked for,
 *              the whole mix after.
 *
 * --json prints {"results": [{"workload", "strategy", "offered", "alloc",
 * "ms"}, ...], "default_strategy": NAME}, one row per workload, strategy
 * and offered load.
 */
#include "bench_int.h"
#include "drover/bench.h"
#include "drover/common.h"
#include "drover/model.h"
#include "drover/options.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEAVES 30
#define LEAF_NODES 40
#define GIB 1024LL
#define NLEVELS 3

static const double levels[NLEVELS] = { 1.0, 1.15, 1.3 };

struct pod {
	int32_t gpus, milli; /* whole GPUs, or a share of one */
	int8_t model;        /* -1 = any */
	int64_t cpu, mem;    /* milli-CPU, MiB */
};

struct wl {
	const char *name;
	void (*build)(struct drv_cluster *c);
	/* the next pod; progress is the share of the stream's GPUs asked so far */
	void (*pod)(uint64_t *rng, double progress, struct pod *p);
};

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s % n);
}

/* ---- clusters ----------------------------------------------------------- */

struct shape {
	const char *model; /* NULL: no GPUs */
	int gpus, cores;
	int64_t mem_gib;
};

/* LEAVES leaves of LEAF_NODES nodes; leaf l gets shape shape_of(l). */
static void build_leaves(struct drv_cluster *c, const struct shape *(*shape_of)(int leaf))
{
	static const char *const lv[] = { "cluster", "leaf", "node" };
	char name[64];
	int l, n;

	drv_cluster_init(c, "pack");
	drv_cluster_set_levels(c, lv, 3);
	for (l = 0; l < LEAVES; l++) {
		const struct shape *s = shape_of(l);
		int32_t leaf;
		snprintf(name, sizeof(name), "leaf%d", l);
		leaf = drv_cluster_add_vertex(c, 0, name);
		for (n = 0; n < LEAF_NODES; n++) {
			snprintf(name, sizeof(name), "l%d-n%d", l, n);
			drv_cluster_add_node(c, leaf, name, s->model ? drv_gpu_model_find(s->model) : -1,
					     s->model ? s->gpus : 0, s->cores * 1000LL, s->mem_gib * GIB);
		}
	}
}

static const struct shape hgx = { "H100", 8, 96, 1024 };

static const struct shape *uniform_leaf(int leaf)
{
	(void)leaf;
	return &hgx;
}

static const struct shape *cpu_leaf(int leaf)
{
	static const struct shape cpu = { NULL, 0, 128, 512 };
	return leaf < 25 ? &hgx : &cpu;
}

static const struct shape *hetero_leaf(int leaf)
{
	static const struct shape h = { "H100", 8, 112, 2048 }, a = { "A100", 4, 48, 512 },
				  l4 = { "L4", 2, 32, 256 };
	return leaf < 12 ? &h : leaf < 22 ? &a : &l4;
}

static void build_uniform(struct drv_cluster *c)
{
	build_leaves(c, uniform_leaf);
}

static void build_cpu(struct drv_cluster *c)
{
	build_leaves(c, cpu_leaf);
}

static void build_hetero(struct drv_cluster *c)
{
	build_leaves(c, hetero_leaf);
}

/* ---- pods --------------------------------------------------------------- */

/* One of a table's entries, uniformly. */
#define PICK(r, t) ((t)[rnd(r, DRV_ARRAY_SIZE(t))])

/* Cores per GPU (or per pod for shares and CPU-only pods) as users ask:
 * mostly below the nodes' 12 per GPU, a tail of data-loading-heavy pods. */
static const int cores_per_gpu[] = { 2, 4, 4, 6, 8, 8, 12, 16, 24 };

static void set_pod(struct pod *p, int gpus, int milli, int cores, int gib)
{
	int units = gpus > 0 ? gpus : 1;
	p->gpus = gpus;
	p->milli = milli;
	p->model = -1;
	p->cpu = (int64_t)units * cores * 1000;
	p->mem = (int64_t)units * gib * GIB;
}

static void shared_pod(uint64_t *r, double progress, struct pod *p)
{
	static const int shares[] = { 100, 200, 250, 250, 300, 500, 500, 700 };
	static const int big[] = { 2, 2, 4, 8 }, share_cores[] = { 1, 2, 2, 4, 8 };
	uint32_t x = rnd(r, 100);
	(void)progress;
	if (x < 70)
		set_pod(p, 0, PICK(r, shares), PICK(r, share_cores), 16);
	else if (x < 90)
		set_pod(p, 1, 0, PICK(r, cores_per_gpu), 64);
	else
		set_pod(p, PICK(r, big), 0, PICK(r, cores_per_gpu), 64);
}

static void whole_pod(uint64_t *r, double progress, struct pod *p)
{
	uint32_t x = rnd(r, 100);
	(void)progress;
	if (x < 8)
		set_pod(p, 0, 500, 4, 32);
	else if (x < 25)
		set_pod(p, 1, 0, PICK(r, cores_per_gpu), 96);
	else if (x < 45)
		set_pod(p, 2, 0, PICK(r, cores_per_gpu), 96);
	else if (x < 70)
		set_pod(p, 4, 0, PICK(r, cores_per_gpu), 96);
	else
		set_pod(p, 8, 0, PICK(r, cores_per_gpu), 96);
}

static void cpu_pod(uint64_t *r, double progress, struct pod *p)
{
	static const int cpu_only[] = { 4, 8, 16, 32 }, heavy[] = { 12, 16, 24, 32 };
	uint32_t x = rnd(r, 100);
	(void)progress;
	if (x < 20)
		set_pod(p, 0, 0, PICK(r, cpu_only), 32);
	else if (x < 35)
		set_pod(p, 0, rnd(r, 2) ? 250 : 500, PICK(r, cpu_only) / 2, 16);
	else if (x < 70)
		set_pod(p, 1, 0, PICK(r, heavy), 96);
	else if (x < 90)
		set_pod(p, 2, 0, PICK(r, cores_per_gpu), 96);
	else
		set_pod(p, rnd(r, 2) ? 4 : 8, 0, PICK(r, cores_per_gpu), 96);
}

static void hetero_pod(uint64_t *r, double progress, struct pod *p)
{
	static const char *const models[] = { "H100", "A100", "L4" };
	uint32_t x = rnd(r, 100), named = rnd(r, 2);
	int m = -1;
	(void)progress;
	if (x < 30) {
		set_pod(p, 0, rnd(r, 2) ? 250 : 500, PICK(r, cores_per_gpu), 16);
		m = named ? 2 : -1;
	} else if (x < 55) {
		set_pod(p, 1, 0, PICK(r, cores_per_gpu), 64);
		m = named ? (int)rnd(r, 3) : -1;
	} else if (x < 70) {
		set_pod(p, 2, 0, PICK(r, cores_per_gpu), 64);
		m = named ? (int)rnd(r, 2) : -1;
	} else if (x < 88) {
		set_pod(p, 4, 0, PICK(r, cores_per_gpu), 96);
		m = named ? (int)rnd(r, 2) : -1;
	} else {
		set_pod(p, 8, 0, PICK(r, cores_per_gpu), 128);
		m = 0;
	}
	p->model = m >= 0 ? (int8_t)drv_gpu_model_find(models[m]) : -1;
}

static void shift_pod(uint64_t *r, double progress, struct pod *p)
{
	if (progress < 0.5)
		shared_pod(r, progress, p);
	else
		whole_pod(r, progress, p);
}

static const struct wl workloads[] = {
	{ "shared", build_uniform, shared_pod },
	{ "whole", build_uniform, whole_pod },
	{ "cpu-heavy", build_cpu, cpu_pod },
	{ "hetero", build_hetero, hetero_pod },
	{ "shift", build_uniform, shift_pod },
};

/* ---- the run ------------------------------------------------------------ */

struct stream {
	struct pod *pods;
	size_t n, cap;
	size_t end[NLEVELS]; /* pods that fit in each offered level */
};

static int64_t pod_milli(const struct pod *p)
{
	return p->gpus > 0 ? (int64_t)p->gpus * DRV_MILLI : p->milli;
}

static int64_t total_milli(const struct drv_cluster *c)
{
	return (int64_t)c->vertices[0].total_gpus * DRV_MILLI;
}

/* Could an empty node of c hold p? */
static bool possible(const struct drv_cluster *c, const struct pod *p)
{
	int32_t i;
	for (i = 0; i < c->nnodes; i++) {
		const struct drv_node *n = &c->nodes[i];
		if (n->cpu_milli < p->cpu || n->mem_mib < p->mem)
			continue;
		if ((p->gpus > 0 || p->milli > 0) &&
		    (n->ngpus < DRV_MAX(p->gpus, 1) || (p->model >= 0 && n->model != p->model)))
			continue;
		return true;
	}
	return false;
}

/*
 * Pods until they ask for the last level's share of the milli-GPUs of c.
 * A pod no node could ever hold is drawn again: a scheduler refuses such a
 * job at submit, so it is no part of the offered load.
 */
static void generate(const struct wl *w, uint64_t seed, const struct drv_cluster *c,
		     struct stream *s)
{
	uint64_t r = seed * 0x9e3779b97f4a7c15ULL + 1;
	int64_t total = total_milli(c);
	double top = levels[NLEVELS - 1] * (double)total;
	int64_t asked = 0;
	int k;

	s->n = 0;
	memset(s->end, 0, sizeof(s->end));
	for (;;) {
		struct pod p;
		do
			w->pod(&r, (double)asked / top, &p);
		while (!possible(c, &p));
		for (k = 0; k < NLEVELS; k++)
			if ((double)(asked + pod_milli(&p)) <= levels[k] * (double)total)
				s->end[k] = s->n + 1;
		if ((double)(asked + pod_milli(&p)) > top)
			break;
		asked += pod_milli(&p);
		DRV_GROW(s->pods, s->n + 1, s->cap);
		s->pods[s->n++] = p;
	}
}

/*
 * (debug) The GPU nodes no pod took whole (whole_node[i] set): the share
 * of their GPUs and CPU in use, and the cores per GPU of what they hold
 * (with fewer CPU per GPU than that, the CPU bounds the GPUs they can use).
 */
static void report_whole_nodes(const struct drv_cluster *c, const char *whole_node)
{
	int64_t wn = 0, on = 0, og = 0, ou = 0, oc = 0, ocu = 0;

	for (int32_t ni = 0; ni < c->nnodes; ni++) {
		const struct drv_node *n = &c->nodes[ni];
		if (n->ngpus == 0)
			continue;
		if (whole_node[ni]) {
			wn++;
			continue;
		}
		on++;
		og += (int64_t)n->ngpus * DRV_MILLI;
		for (int32_t k = 0; k < n->ngpus; k++)
			ou += n->gpu_milli_used[k];
		oc += n->cpu_milli;
		ocu += n->cpu_used;
	}
	if (on > 0 && ou > 0)
		fprintf(stderr, "    GPU nodes one pod took whole: %lld; the other %lld: "
			"GPUs used %.4f, CPU used %.4f, cores per GPU used %.2f "
			"(the nodes have %.2f)\n", (long long)wn, (long long)on,
			(double)ou / (double)og, (double)ocu / (double)oc,
			(double)ocu / (double)ou, (double)oc / (double)og);
}

/* One strategy over one stream: alloc and ms at each level, added in. */
static void run(const struct wl *w, const struct stream *s, enum drv_place_strategy strat,
		int32_t half_life, double *alloc, double *ms)
{
	struct drv_cluster c;
	struct drv_place_mix mix;
	struct drv_place_opts o = { .strategy = strat };
	struct drv_placement pl;
	struct drv_job j;
	struct drv_task_group *g;
	int64_t used = 0, total;
	double t0;
	size_t i;
	int k = 0;
	bool dbg = getenv("DROVER_BENCH_DEBUG") != NULL;
	char *whole_node = NULL; /* (debug) nodes whose GPUs one pod took, all of them */

	w->build(&c);
	total = total_milli(&c);
	if (dbg)
		whole_node = drv_calloc((size_t)c.nnodes, 1);
	drv_place_mix_init(&mix, half_life);
	o.mix = &mix;
	drv_placement_init(&pl);
	drv_job_init(&j);
	g = drv_job_add_group(&j, "pod", 1, 1, 0);
	t0 = bench_cpu_s();
	for (i = 0; i <= s->n; i++) {
		const struct pod *p = &s->pods[i];
		for (; k < NLEVELS && s->end[k] == i; k++) {
			alloc[k] += (double)used / (double)total;
			ms[k] += (bench_cpu_s() - t0) * 1e3;
		}
		if (i == s->n)
			break;
		g->gpus = p->gpus;
		g->gpu_milli = p->milli;
		g->model = p->model;
		g->cpu_milli = p->cpu;
		g->mem_mib = p->mem;
		j.id = i + 1;
		drv_place_mix_observe(&mix, &j);
		if (drv_place_commit(&c, &j, &o, &pl, NULL, 0) == 0) {
			used += pod_milli(p);
			if (whole_node && p->gpus > 0 && p->gpus == c.nodes[pl.tasks[0].node].ngpus)
				whole_node[pl.tasks[0].node] = 1;
		}
	}
	if (dbg) {
		/* where the free capacity is left: GPUs by free milli, nodes by free CPU */
		int64_t hist[6] = { 0 }, cpu0 = 0, strand = 0;
		int32_t ni, k2;
		for (ni = 0; ni < c.nnodes; ni++) {
			const struct drv_node *n = &c.nodes[ni];
			int64_t nf = 0;
			for (k2 = 0; k2 < n->ngpus; k2++) {
				int f = DRV_MILLI - n->gpu_milli_used[k2];
				hist[f == 0 ? 0 : f < 100 ? 1 : f < 500 ? 2 : f < 1000 ? 3 : 4]++;
				nf += f;
			}
			if (n->cpu_milli - n->cpu_used < 4000)
				cpu0++, strand += nf;
		}
		fprintf(stderr, "  %s/%s: GPUs free 0:%lld <100:%lld <500:%lld <1000:%lld whole:%lld; "
			"nodes with < 4 cores free: %lld holding %lld free milli\n", w->name,
			drv_place_strategy_name(strat), (long long)hist[0], (long long)hist[1],
			(long long)hist[2], (long long)hist[3], (long long)hist[4], (long long)cpu0,
			(long long)strand);
		report_whole_nodes(&c, whole_node);
	}
	free(whole_node);
	if (drv_cluster_check(&c))
		fprintf(stderr, "bench pack: aggregates drifted (%s, %s)\n", w->name,
			drv_place_strategy_name(strat));
	drv_job_release(&j);
	drv_placement_release(&pl);
	drv_cluster_release(&c);
}

static void add_rows(json_t *arr, const char *wl, enum drv_place_strategy strat,
		     const double *alloc, const double *ms, int seeds)
{
	int k;
	for (k = 0; k < NLEVELS; k++)
		json_array_append_new(
			arr, json_pack("{s:s, s:s, s:f, s:f, s:f}", "workload", wl, "strategy",
				       drv_place_strategy_name(strat), "offered", levels[k], "alloc",
				       (double)(int64_t)(alloc[k] / seeds * 1e4 + 0.5) / 1e4, "ms",
				       (double)(int64_t)(ms[k] / seeds * 100 + 0.5) / 100));
}

struct pack_args {
	bool json;
	int placement, seeds, half_life;
	const char *workload;
};

static int parse(int argc, char **argv, struct pack_args *a)
{
	const struct drv_option table[] = {
		DRV_OPT_FLAG(0, "json", &a->json, "print one JSON object on one line"),
		DRV_OPT_ENUM(0, "placement", &a->placement, drv_place_choices,
			     "only this scorer (default: bestfit, fgd and multi)"),
		DRV_OPT_STRING(0, "workload", &a->workload, "NAME",
			       "only this workload: shared, whole, cpu-heavy, hetero or shift"),
		DRV_OPT_INT(0, "seeds", &a->seeds, 1, 100, "N", "seeds 1..N, the mean kept (default 5)"),
		DRV_OPT_INT(0, "placement-half-life", &a->half_life, 1, 1000000000, "TASKS",
			    "multi: the learned mix forgets half its weight every TASKS pods "
			    "(default 500)"),
		DRV_OPT_END(),
	};
	const struct drv_opts usage = {
		.name = "drover bench pack",
		.usage = "drover bench pack [--json] [--placement NAME] [--workload NAME] [--seeds N]",
		.about = "GPU allocation each placement scorer reaches when pods that never end "
			 "ask for 100%, 115% and 130% of a 1,200-node cluster.",
		.options = table,
	};
	size_t i;
	int n;

	memset(a, 0, sizeof(*a));
	a->placement = -1;
	a->seeds = 5;
	n = drv_opts_parse(&usage, argc, argv);
	if (n < 0)
		return n;
	for (i = 0; a->workload && i < DRV_ARRAY_SIZE(workloads); i++)
		if (!strcmp(a->workload, workloads[i].name))
			return 0;
	if (a->workload)
		return drv_opts_usage_error(&usage, "--workload: found '%s', expected shared, whole, "
					    "cpu-heavy, hetero or shift", a->workload);
	return 0;
}

int drv_bench_pack(int argc, char **argv)
{
	static const enum drv_place_strategy all[] = { DRV_PLACE_BESTFIT, DRV_PLACE_FGD,
						       DRV_PLACE_MULTI };
	struct pack_args a;
	struct stream st = { 0 };
	json_t *root, *arr;
	size_t wi, si;
	char *txt;
	int rc = parse(argc, argv, &a), seed;

	if (rc < 0)
		return drv_opts_exit(rc);
	if (rc)
		return rc;
	root = json_object();
	arr = json_array();
	for (wi = 0; wi < DRV_ARRAY_SIZE(workloads); wi++) {
		const struct wl *w = &workloads[wi];
		if (a.workload && strcmp(a.workload, w->name))
			continue;
		for (si = 0; si < DRV_ARRAY_SIZE(all); si++) {
			double alloc[NLEVELS] = { 0 }, ms[NLEVELS] = { 0 };
			if (a.placement >= 0 && (int)all[si] != a.placement)
				continue;
			for (seed = 1; seed <= a.seeds; seed++) {
				struct drv_cluster c;
				w->build(&c);
				generate(w, (uint64_t)seed, &c, &st);
				drv_cluster_release(&c);
				run(w, &st, all[si], a.half_life, alloc, ms);
			}
			add_rows(arr, w->name, all[si], alloc, ms, a.seeds);
			if (!a.json)
				fprintf(stderr, "%-9s %-7s alloc at 100/115/130%%: %.4f %.4f %.4f  (%.1f ms)\n",
					w->name, drv_place_strategy_name(all[si]), alloc[0] / a.seeds,
					alloc[1] / a.seeds, alloc[2] / a.seeds, ms[2] / a.seeds);
		}
	}
	drv_free(st.pods);
	json_object_set_new(root, "results", arr);
	json_object_set_new(root, "default_strategy",
			    json_string(drv_place_strategy_name(DRV_PLACE_DEFAULT)));
	txt = json_dumps(root, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8) |
				       (a.json ? 0 : JSON_INDENT(2)));
	printf("%s\n", txt);
	free(txt);
	json_decref(root);
	return DRV_EXIT_OK;
}
