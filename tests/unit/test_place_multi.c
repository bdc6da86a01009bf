/*
 * test_place_multi.c: the multi-resource scorer ("multi", src/core/multi.c)
 * and its learned mix: on hand-built nodes it takes the node that strands
 * nothing where best-fit strands GPUs; it never over-commits GPUs, CPU or
 * memory on random clusters and jobs; the learned mix follows a workload
 * that shifts; the names parse.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "drover/model.h"

/* n nodes of 8 H100 and `cores` cores under one leaf */
static void build(struct drv_cluster *c, int n, int cores)
{
	static const char *const lv[] = { "cluster", "leaf", "node" };
	int h100 = drv_gpu_model_find("H100"), i;
	int32_t leaf;
	char name[32];

	drv_cluster_init(c, "t");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 3), 0));
	leaf = drv_cluster_add_vertex(c, 0, "leaf");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		cr_assert(ge(int, drv_cluster_add_node(c, leaf, name, h100, 8, cores * 1000LL,
						       1 << 20), 0));
	}
}

/* Holds `gpus` GPUs (the lowest) and `cores` cores of node ni. */
static void hold(struct drv_cluster *c, int32_t ni, int gpus, int cores)
{
	struct drv_task_place t = { .node = ni, .gpu_milli = DRV_MILLI,
				    .gpu_mask = gpus ? (1ULL << gpus) - 1 : 0,
				    .cpu_milli = cores * 1000LL };
	struct drv_placement p = { &t, 1, 1 };
	drv_cluster_commit(c, &p);
}

static void pod(struct drv_job *j, int gpus, int cores)
{
	drv_job_init(j);
	drv_job_add_group(j, "p", 1, gpus, 0)->cpu_milli = cores * 1000LL;
}

/* Where job goes under strategy s with mix m: the node's name. */
static const char *where(struct drv_cluster *c, struct drv_job *j, enum drv_place_strategy s,
			 const struct drv_place_mix *m)
{
	static char buf[64];
	struct drv_place_opts o = { .strategy = s, .mix = m };
	struct drv_placement p;
	char why[256];

	drv_placement_init(&p);
	cr_assert(eq(int, drv_place(c, j, &o, &p, why, sizeof(why)), 0), "%s", why);
	snprintf(buf, sizeof(buf), "%s", c->nodes[p.tasks[0].node].name);
	drv_placement_release(&p);
	return buf;
}

/* A mix of 1-GPU tasks with 12 cores each, as the scheduler would learn it. */
static void learn_gpu_tasks(struct drv_place_mix *m)
{
	struct drv_job j;
	int i;
	drv_place_mix_init(m, 0);
	pod(&j, 1, 12);
	for (i = 0; i < 10; i++)
		drv_place_mix_observe(m, &j);
	drv_job_release(&j);
}

Test(place_multi, gpu_task_goes_where_it_strands_no_gpu)
{
	struct drv_cluster c;
	struct drv_place_mix m;
	struct drv_job j;

	build(&c, 2, 96);
	hold(&c, 0, 6, 72); /* n0: 2 GPUs and 24 cores free: room for two such tasks */
	hold(&c, 1, 4, 32); /* n1: 4 GPUs and 64 cores free */
	learn_gpu_tasks(&m);
	pod(&j, 1, 16);
	/* best-fit takes n0 (fewer free GPUs) and leaves its last GPU 8 cores,
	 * too few for the 12 the tasks seen ask */
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_BESTFIT, &m), "n0"));
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_MULTI, &m), "n1"));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place_multi, cpu_only_task_leaves_the_cpus_idle_gpus_need)
{
	struct drv_cluster c;
	struct drv_place_mix m;
	struct drv_job j;

	build(&c, 2, 96);
	hold(&c, 0, 7, 72); /* n0: 1 GPU and 24 cores free */
	hold(&c, 1, 4, 0);  /* n1: 4 GPUs and 96 cores free */
	learn_gpu_tasks(&m);
	pod(&j, 0, 20);
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_BESTFIT, &m), "n0"));
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_MULTI, &m), "n1"));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place_multi, cpu_only_task_prefers_a_node_without_free_gpus)
{
	struct drv_cluster c;
	struct drv_place_mix m;
	struct drv_job j;

	build(&c, 3, 96);
	hold(&c, 0, 8, 0);  /* n0: no GPU free, 96 cores */
	learn_gpu_tasks(&m);
	pod(&j, 0, 8);
	cr_assert(eq(str, (char *)where(&c, &j, DRV_PLACE_MULTI, &m), "n0"));
	drv_job_release(&j);
	drv_cluster_release(&c);
}

static uint64_t rng = 88172645463325252ULL;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

Test(place_multi, never_over_commits_on_random_clusters)
{
	int round;

	for (round = 0; round < 20; round++) {
		struct drv_cluster c;
		struct drv_place_mix m;
		struct drv_place_opts o = { .strategy = DRV_PLACE_MULTI };
		struct drv_placement p;
		int i, placed = 0;

		build(&c, 2 + (int)rnd(10), 8 + (int)rnd(120));
		drv_place_mix_init(&m, 1 + (int)rnd(100));
		o.mix = &m;
		drv_placement_init(&p);
		for (i = 0; i < 300; i++) {
			struct drv_job j;
			uint32_t k = rnd(4);
			struct drv_task_group *g;
			drv_job_init(&j);
			g = drv_job_add_group(&j, "p", 1 + (int)rnd(2), k == 0 ? 0 : k == 1 ? 0 : 1 << rnd(4),
					      k == 1 ? 1 + (int)rnd(999) : 0);
			g->cpu_milli = rnd(40) * 1000LL;
			g->mem_mib = rnd(300000);
			drv_place_mix_observe(&m, &j);
			if (drv_place_commit(&c, &j, &o, &p, NULL, 0) == 0)
				placed++;
			drv_job_release(&j);
		}
		for (i = 0; i < c.nnodes; i++) {
			const struct drv_node *n = &c.nodes[i];
			int k;
			cr_assert(le(i64, n->cpu_used, n->cpu_milli));
			cr_assert(le(i64, n->mem_used, n->mem_mib));
			for (k = 0; k < n->ngpus; k++)
				cr_assert(le(int, n->gpu_milli_used[k], DRV_MILLI));
		}
		cr_assert(gt(int, placed, 0));
		cr_assert(eq(int, drv_cluster_check(&c), 0));
		drv_placement_release(&p);
		drv_cluster_release(&c);
	}
}

/* The share of the mix's shape asking milli per task (0 when absent). */
static double share_of(const struct drv_place_mix *m, int32_t milli)
{
	int32_t i;
	for (i = 0; i < m->n; i++)
		if (m->shape[i].milli == milli)
			return drv_place_mix_share(m, i);
	return 0;
}

Test(place_multi, learned_mix_follows_a_shifting_workload)
{
	struct drv_place_mix m;
	struct drv_job small, big;
	double sum = 0;
	int i;

	drv_place_mix_init(&m, 200);
	drv_job_init(&small);
	drv_job_add_group(&small, "s", 1, 0, 250);
	pod(&big, 8, 96);
	for (i = 0; i < 2000; i++)
		drv_place_mix_observe(&m, &small);
	cr_assert(gt(dbl, share_of(&m, 250), 0.999));
	/* half-life 200 tasks: after 200 of the new kind they weigh half */
	for (i = 0; i < 200; i++)
		drv_place_mix_observe(&m, &big);
	cr_assert(share_of(&m, 8000) > 0.48 && share_of(&m, 8000) < 0.52, "share %f",
		  share_of(&m, 8000));
	for (i = 0; i < 1800; i++)
		drv_place_mix_observe(&m, &big);
	cr_assert(gt(dbl, share_of(&m, 8000), 0.99));
	cr_assert(lt(dbl, share_of(&m, 250), 0.01));
	/* more shapes than the table holds: the lightest go, the shares stay a whole */
	for (i = 0; i < 40; i++) {
		struct drv_job j;
		drv_job_init(&j);
		drv_job_add_group(&j, "x", 1, 0, 10 + i);
		drv_place_mix_observe(&m, &j);
		drv_job_release(&j);
	}
	cr_assert(eq(int, m.n, DRV_MIX_MAX));
	for (i = 0; i < m.n; i++)
		sum += drv_place_mix_share(&m, i);
	cr_assert(gt(dbl, sum, 0.999999));
	cr_assert(lt(dbl, sum, 1.000001));
	cr_assert(gt(dbl, share_of(&m, 8000), 0.9), "the heavy shape stays");
	drv_job_release(&small);
	drv_job_release(&big);
}

Test(place_multi, names_parse)
{
	enum drv_place_strategy s;
	cr_assert(eq(int, drv_place_strategy_parse("multi", &s), 0));
	cr_assert(eq(int, (int)s, DRV_PLACE_MULTI));
	cr_assert(eq(int, drv_place_strategy_parse("Best-Fit", &s), 0));
	cr_assert(eq(int, (int)s, DRV_PLACE_BESTFIT));
	cr_assert(eq(int, drv_place_strategy_parse("fgd", &s), 0));
	cr_assert(eq(str, (char *)drv_place_strategy_name(DRV_PLACE_FGD), "fgd"));
	cr_assert(eq(int, drv_place_strategy_parse("worst", &s), DRV_EINVAL));
}
