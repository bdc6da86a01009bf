/*
 * test_place_random.c: the randomized invariant test. Long streams of place
 * and release on random clusters (random depth, fan-out, node sizes, GPU
 * models, down and draining nodes), checking after every step:
 *   - no GPU, CPU or memory is over-committed (drv_cluster_check),
 *   - every aggregate equals a recount from the nodes (drv_cluster_check),
 *   - every gang is whole: each task of each group placed, on an up node of
 *     the right model, with the right number of GPUs,
 *   - a required level holds: all tasks under one vertex of that level,
 *   - drv_place leaves the cluster as it found it and is deterministic,
 *     under both strategies (best-fit and FGD, chosen at random per job),
 *   - releasing everything returns the cluster to empty.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "drover/model.h"

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)((rng_state >> 33) % n);
}

static void random_cluster(struct drv_cluster *c, int *models)
{
	static const char *const names[] = { "cluster", "pool", "spine", "leaf", "rack", "node" };
	const char *lv[6];
	int depth = 2 + (int)rnd(4); /* levels incl. root and node: 2..5 */
	int i, nl = 0, nn = 0;
	int32_t stack[64], sp = 0;
	char name[64];

	lv[nl++] = "cluster";
	for (i = 1; i < depth - 1; i++)
		lv[nl++] = names[i];
	lv[nl++] = "node";
	drv_cluster_init(c, "rand");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, nl), 0));
	if (nl > 3 && rnd(2))
		c->nvl_level = nl - 2; /* racks as NVLink domains */
	/* build breadth: each non-node vertex gets 1..4 children */
	stack[sp++] = 0;
	while (sp > 0) {
		int32_t v = stack[--sp];
		int k, nch = 1 + (int)rnd(4);
		for (k = 0; k < nch; k++) {
			int child_level = c->vertices[v].level + 1;
			snprintf(name, sizeof(name), "v%d-%d", (int)v, k);
			if (child_level >= nl - 1 || (child_level > 1 && rnd(5) == 0)) {
				int g = (int[]){ 1, 2, 4, 8, 8, 0 }[rnd(6)];
				int m = models[rnd(2)];
				int32_t ni;
				snprintf(name, sizeof(name), "n%d", nn++);
				ni = drv_cluster_add_node(c, v, name, m, g, 16000 + 16000 * (int)rnd(4),
							  65536 * (1 + (int)rnd(4)));
				cr_assert(ge(int, ni, 0));
				if (rnd(12) == 0)
					drv_cluster_set_node_state(c, ni, rnd(2) ? DRV_NODE_DOWN
										 : DRV_NODE_DRAINING);
			} else {
				int32_t w = drv_cluster_add_vertex(c, v, name);
				cr_assert(ge(int, w, 0));
				if (c->vertices[w].level == 1 && !strcmp(lv[1], "pool")) {
					struct drv_pool p = { 0 };
					p.name = name;
					p.region = rnd(2) ? "eu" : "us";
					p.vertex = w;
					cr_assert(ge(int, drv_cluster_add_pool(c, &p), 0));
				}
				if (sp < 63)
					stack[sp++] = w;
			}
		}
	}
	cr_assert(eq(int, drv_cluster_check(c), 0));
}

static void random_job(struct drv_job *j, const struct drv_cluster *c, int *models)
{
	int ng = 1 + (int)rnd(3), i;

	drv_job_init(j);
	for (i = 0; i < ng; i++) {
		struct drv_task_group *g;
		int kind = (int)rnd(6);
		if (kind == 0)
			g = drv_job_add_group(j, "frac", 1 + (int)rnd(4), 0, 100 * (1 + (int)rnd(9)));
		else if (kind == 1)
			g = drv_job_add_group(j, "cpu", 1 + (int)rnd(2), 0, 0);
		else
			g = drv_job_add_group(j, "w", 1 + (int)rnd(5), (int[]){ 1, 2, 4, 8 }[rnd(4)], 0);
		g->cpu_milli = 1000 * (int)rnd(8);
		g->mem_mib = 1024 * (int)rnd(64);
		if (g->gpu_milli)
			g->gpu_mem_mib = 1024 * (int)rnd(20);
		if (rnd(4) == 0)
			g->model = (int8_t)models[rnd(2)];
	}
	if (rnd(3) == 0) {
		const char *lvl = c->levels[rnd((uint32_t)c->nlevels)];
		if (rnd(4) == 0)
			lvl = "nvlink-domain";
		drv_job_set_topology(j, rnd(2) ? DRV_TOPO_REQUIRED : DRV_TOPO_PREFERRED, lvl);
	}
	if (rnd(8) == 0)
		drv_job_add_region(j, rnd(2) ? "eu" : "us");
}

/* The level-L unit of a node: its topmost ancestor at level >= L. */
static int32_t unit_of(const struct drv_cluster *c, int32_t node, int L)
{
	int32_t v = c->nodes[node].vertex;
	while (c->vertices[v].parent >= 0 && c->vertices[c->vertices[v].parent].level >= L)
		v = c->vertices[v].parent;
	return v;
}

static void check_placement(const struct drv_cluster *c, const struct drv_job *j,
			    const struct drv_placement *p)
{
	int32_t i, k = 0, gi, t;
	int L = -1;
	int32_t unit = -1;

	cr_assert(eq(int, p->ntasks, drv_job_tasks(j)), "gang not whole");
	if (j->topo_mode == DRV_TOPO_REQUIRED)
		L = drv_cluster_level(c, j->topo_level);
	for (gi = 0; gi < j->ngroups; gi++) {
		const struct drv_task_group *g = &j->groups[gi];
		for (t = 0; t < g->count; t++, k++) {
			const struct drv_task_place *tp = &p->tasks[k];
			const struct drv_node *n;
			cr_assert(ge(int, tp->node, 0));
			n = &c->nodes[tp->node];
			cr_assert(eq(int, tp->group, gi));
			cr_assert(eq(int, n->state, DRV_NODE_UP), "task on a node that is not up");
			if (g->gpus > 0) {
				cr_assert(eq(int, __builtin_popcountll(tp->gpu_mask), g->gpus));
				cr_assert(eq(int, tp->gpu_milli, 1000));
			} else if (g->gpu_milli > 0) {
				cr_assert(eq(int, __builtin_popcountll(tp->gpu_mask), 1));
				cr_assert(eq(int, tp->gpu_milli, g->gpu_milli));
			} else {
				cr_assert(eq(u64, tp->gpu_mask, 0));
			}
			cr_assert(lt(u64, tp->gpu_mask, n->ngpus >= 64 ? ~0ULL : (1ULL << n->ngpus)));
			if (g->model >= 0 && (g->gpus > 0 || g->gpu_milli > 0))
				cr_assert(eq(int, n->model, g->model));
			if (j->nregions > 0) {
				cr_assert(ge(int, n->pool, 0));
				cr_assert(eq(str, c->pools[n->pool].region, j->regions[0]));
			}
			if (L >= 0) {
				int32_t u = unit_of(c, tp->node, L);
				if (unit < 0)
					unit = u;
				cr_assert(eq(int, u, unit), "required level '%s' broken", j->topo_level);
			}
		}
	}
	for (i = 0; i < p->ntasks; i++)
		cr_assert(lt(int, p->tasks[i].node, c->nnodes));
}

#define RUNNING_MAX 512

static int total_placed, total_refused;

static void stream(uint64_t seed, int steps)
{
	struct drv_cluster c;
	struct drv_placement running[RUNNING_MAX], again;
	struct drv_job job;
	struct drv_place_opts opts = { 0 };
	int models[2], nrun = 0, s, i, placed = 0, refused = 0;
	char why[256];
	int32_t free_before;
	int64_t milli_before;

	rng_state = seed;
	models[0] = drv_gpu_model_find("H100");
	models[1] = drv_gpu_model_find("A100");
	random_cluster(&c, models);
	for (i = 0; i < RUNNING_MAX; i++)
		drv_placement_init(&running[i]);
	drv_placement_init(&again);
	for (s = 0; s < steps; s++) {
		if (nrun > 0 && (rnd(3) == 0 || nrun == RUNNING_MAX)) {
			int k = (int)rnd((uint32_t)nrun);
			struct drv_placement tmp;
			drv_cluster_uncommit(&c, &running[k]);
			tmp = running[k];
			running[k] = running[nrun - 1];
			running[nrun - 1] = tmp;
			nrun--;
		} else {
			int rc;
			random_job(&job, &c, models);
			free_before = c.vertices[0].free_gpus;
			milli_before = c.vertices[0].free_milli;
			opts.strategy = rnd(2) ? DRV_PLACE_FGD : DRV_PLACE_BESTFIT;
			rc = drv_place(&c, &job, &opts, &running[nrun], why, sizeof(why));
			cr_assert(eq(int, c.vertices[0].free_gpus, free_before));
			cr_assert(eq(i64, c.vertices[0].free_milli, milli_before));
			if (rc == 0) {
				check_placement(&c, &job, &running[nrun]);
				/* deterministic: the same question, the same answer */
				cr_assert(eq(int, drv_place(&c, &job, &opts, &again, why, sizeof(why)), 0));
				cr_assert(eq(int, again.ntasks, running[nrun].ntasks));
				cr_assert(eq(int, memcmp(again.tasks, running[nrun].tasks,
							 sizeof(*again.tasks) * (size_t)again.ntasks), 0));
				drv_cluster_commit(&c, &running[nrun]);
				nrun++;
				placed++;
			} else {
				cr_assert(eq(int, rc, DRV_ENOSPACE), "rc %d: %s", rc, why);
				cr_assert(gt(sz, strlen(why), 10), "no reason given");
				cr_assert(eq(int, drv_place_may_fit(&c, &job, NULL) == 0 ||
							  drv_place_may_fit(&c, &job, NULL) == DRV_ENOSPACE,
					     1));
				refused++;
			}
			drv_job_release(&job);
		}
		cr_assert(eq(int, drv_cluster_check(&c), 0), "seed %llu step %d: aggregates or usage wrong",
			  (unsigned long long)seed, s);
	}
	while (nrun > 0)
		drv_cluster_uncommit(&c, &running[--nrun]);
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	for (i = 0; i < c.nnodes; i++) {
		int g;
		cr_assert(eq(i64, c.nodes[i].cpu_used, 0));
		cr_assert(eq(i64, c.nodes[i].mem_used, 0));
		for (g = 0; g < c.nodes[i].ngpus; g++)
			cr_assert(eq(int, c.nodes[i].gpu_milli_used[g], 0));
	}
	cr_assert(gt(int, placed, 0), "seed %llu: nothing placed", (unsigned long long)seed);
	total_placed += placed;
	total_refused += refused;
	for (i = 0; i < RUNNING_MAX; i++)
		drv_placement_release(&running[i]);
	drv_placement_release(&again);
	drv_cluster_release(&c);
}

Test(place_random, long_streams_keep_every_invariant, .timeout = 120)
{
	uint64_t seed;
	for (seed = 1; seed <= 60; seed++)
		stream(seed, 3000);
	/* the streams must exercise both outcomes a lot */
	cr_assert(gt(int, total_placed, 60 * 3000 / 5));
	cr_assert(gt(int, total_refused, 60 * 3000 / 20));
}
