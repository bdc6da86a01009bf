/*
 * test_place_slice.c: a gang cut into slices (Kueue's
 * podset-slice-required-topology with podset-slice-size): every slice lies
 * under one vertex of its level while the gang spans several; a job whose
 * slices find no such vertex waits, with a reason that names the level,
 * although the cluster has room for its tasks in all.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "drover/model.h"
#include "drover/sched.h"

/* cluster -> leaf x nleaves -> node x 2, 8 H100 each: "l<L>n<N>" */
static void build(struct drv_cluster *c, int nleaves)
{
	static const char *const lv[] = { "cluster", "leaf", "node" };
	int h100 = drv_gpu_model_find("H100");
	char name[32];

	drv_cluster_init(c, "t");
	cr_assert(eq(int, drv_cluster_set_levels(c, lv, 3), 0));
	for (int l = 0; l < nleaves; l++) {
		int32_t leaf;
		snprintf(name, sizeof(name), "leaf%d", l);
		leaf = drv_cluster_add_vertex(c, 0, name);
		for (int n = 0; n < 2; n++) {
			snprintf(name, sizeof(name), "l%dn%d", l, n);
			cr_assert(ge(int, drv_cluster_add_node(c, leaf, name, h100, 8, 64000, 512 * 1024), 0));
		}
	}
}

/* Takes node name's GPUs with a one-task job. */
static void fill(struct drv_cluster *c, const char *node)
{
	struct drv_placement p;
	char spec[64];
	drv_placement_init(&p);
	snprintf(spec, sizeof(spec), "%s:0,1,2,3,4,5,6,7", node);
	cr_assert(eq(int, drv_placement_parse(c, spec, 1000, &p), 0));
	drv_cluster_commit(c, &p);
	drv_placement_release(&p);
}

static void sliced(struct drv_job *j, int tasks, int gpus, const char *level, int size)
{
	drv_job_init(j);
	j->id = 7;
	drv_job_add_group(j, "w", tasks, gpus, 0);
	drv_job_set_slice(j, level, size);
}

/* The leaf of each task's node, by the node's name. */
static int leaf_of(const struct drv_cluster *c, const struct drv_placement *p, int t)
{
	return c->nodes[p->tasks[t].node].name[1] - '0';
}

Test(place_slice, each_slice_lands_under_one_leaf_while_the_gang_spans_leaves)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char why[256];

	/* leaf0 has one free node, leaf1 and leaf2 two: best-fit alone would
	 * take leaf0's node and split a pair */
	build(&c, 3);
	fill(&c, "l0n0");
	drv_placement_init(&p);
	sliced(&j, 4, 8, "leaf", 0);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	cr_assert(eq(int, leaf_of(&c, &p, 0), 0), "unsliced, the fullest leaf is used first");

	drv_job_set_slice(&j, "leaf", 2);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	cr_assert(eq(int, p.ntasks, 4));
	for (int s = 0; s < 2; s++)
		cr_assert(eq(int, leaf_of(&c, &p, 2 * s), leaf_of(&c, &p, 2 * s + 1)),
			  "slice %d split across leaves", s);
	cr_assert(ne(int, leaf_of(&c, &p, 0), leaf_of(&c, &p, 2)));
	for (int t = 0; t < 4; t++)
		cr_assert(ne(int, leaf_of(&c, &p, t), 0), "no slice fits leaf0's one free node");
	cr_assert(eq(int, drv_cluster_check(&c), 0), "drv_place left the cluster as it was");

	/* committed the same way, and released exactly */
	cr_assert(eq(int, drv_place_commit(&c, &j, NULL, &p, why, sizeof(why)), 0));
	cr_assert(eq(int, c.vertices[0].free_gpus, 8));
	drv_cluster_uncommit(&c, &p);
	cr_assert(eq(int, c.vertices[0].free_gpus, 40));
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	drv_placement_release(&p);
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place_slice, no_leaf_with_room_for_a_slice_waits_though_room_exists_in_all)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	struct drv_place_info info;
	struct drv_place_opts o = { .strategy = DRV_PLACE_DEFAULT, .info = &info };
	char why[256];

	/* one free node in each of three leaves: 24 GPUs free, 8 per leaf */
	build(&c, 3);
	fill(&c, "l0n0");
	fill(&c, "l1n1");
	fill(&c, "l2n0");
	drv_placement_init(&p);
	sliced(&j, 2, 8, "leaf", 0);
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), 0), "unsliced it fits");
	drv_job_set_slice(&j, "leaf", 2);
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "needs 16 GPUs in a slice of 2 tasks under one leaf; the emptiest "
			       "leaf has 8 free"));
	cr_assert(eq(int, info.why, DRV_WHY_TOPOLOGY));
	cr_assert(eq(int, drv_place_may_fit(&c, &j, &o), DRV_ENOSPACE));
	cr_assert(eq(int, drv_place_check_static(&c, &j, NULL, why, sizeof(why)), 0),
		  "an empty cluster has leaves of 16: it may fit later");

	/* leaf0 now has two free nodes: one slice of two fits, the second not */
	drv_cluster_release(&c);
	build(&c, 3);
	fill(&c, "l1n1");
	fill(&c, "l2n0");
	drv_job_release(&j);
	sliced(&j, 4, 8, "leaf", 2);
	cr_assert(eq(int, drv_place(&c, &j, &o, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "needs 2 slices of 2 tasks (16 GPUs each), each under one leaf; "
			       "there is room for 1 (32 GPUs free in all)"));
	cr_assert(eq(int, info.why, DRV_WHY_TOPOLOGY));
	cr_assert(eq(int, drv_cluster_check(&c), 0), "the failed search left nothing marked");
	drv_placement_release(&p);
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place_slice, a_slice_larger_than_any_leaf_and_an_unknown_level)
{
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char why[256];

	build(&c, 2);
	drv_placement_init(&p);
	sliced(&j, 4, 8, "leaf", 4);
	cr_assert(eq(int, drv_place_check_static(&c, &j, NULL, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "needs 32 GPUs in a slice of 4 tasks under one leaf; the emptiest "
			       "leaf has 16 free"));
	drv_job_set_slice(&j, "rack", 2);
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "the cluster has no topology level 'rack' (slices)"));
	drv_job_set_slice(&j, "leaf", 3);
	cr_assert(eq(int, drv_job_check(&j, why, sizeof(why)), DRV_EINVAL));
	cr_assert(eq(str, why, "topology slice size 3 does not divide the job's 4 tasks"));
	drv_placement_release(&p);
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place_slice, a_required_level_holds_the_whole_gang_and_slices_below_it)
{
	static const char *const lv[] = { "cluster", "spine", "leaf", "node" };
	int h100 = drv_gpu_model_find("H100");
	struct drv_cluster c;
	struct drv_job j;
	struct drv_placement p;
	char name[32], why[256];

	/* 2 spines x 2 leaves x 2 nodes; spine0's leaves have one free node each */
	drv_cluster_init(&c, "t");
	cr_assert(eq(int, drv_cluster_set_levels(&c, lv, 4), 0));
	for (int s = 0; s < 2; s++) {
		snprintf(name, sizeof(name), "sp%d", s);
		int32_t sp = drv_cluster_add_vertex(&c, 0, name);
		for (int l = 0; l < 2; l++) {
			snprintf(name, sizeof(name), "lf%d%d", s, l);
			int32_t lf = drv_cluster_add_vertex(&c, sp, name);
			for (int n = 0; n < 2; n++) {
				snprintf(name, sizeof(name), "s%dl%dn%d", s, l, n);
				drv_cluster_add_node(&c, lf, name, h100, 8, 64000, 512 * 1024);
			}
		}
	}
	fill(&c, "s0l0n0");
	fill(&c, "s0l1n0");
	drv_placement_init(&p);
	sliced(&j, 4, 8, "leaf", 2);
	drv_job_set_topology(&j, DRV_TOPO_REQUIRED, "spine");
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), 0), "%s", why);
	for (int t = 0; t < 4; t++)
		cr_assert(eq(int, c.nodes[p.tasks[t].node].name[1], '1'), "all under spine1");
	cr_assert(eq(int, c.nodes[p.tasks[0].node].name[3], c.nodes[p.tasks[1].node].name[3]));
	cr_assert(eq(int, c.nodes[p.tasks[2].node].name[3], c.nodes[p.tasks[3].node].name[3]));
	fill(&c, "s1l1n1");
	cr_assert(eq(int, drv_place(&c, &j, NULL, &p, why, sizeof(why)), DRV_ENOSPACE));
	cr_assert(eq(str, why, "needs 32 GPUs under one spine; the emptiest spine has 24 free"));
	drv_placement_release(&p);
	drv_job_release(&j);
	drv_cluster_release(&c);
}

Test(place_slice, the_pending_reason_names_the_slice_level)
{
	struct drv_cluster c;
	struct drv_sched *s;
	struct drv_sched_policy pol;
	struct drv_sched_decisions d;
	struct drv_sched_job_info info;
	struct drv_job j;
	char buf[512];

	build(&c, 3);
	fill(&c, "l0n0");
	fill(&c, "l1n1");
	fill(&c, "l2n0");
	s = drv_sched_new(&c);
	drv_sched_policy_default(&pol);
	drv_sched_decisions_init(&d);
	sliced(&j, 2, 8, "leaf", 2);
	j.tenant = drv_strdup("a");
	cr_assert(eq(int, drv_sched_submit(s, &j, NULL), 0));
	cr_assert(ge(int, drv_sched_pass(s, 10, &pol, &d), 0));
	cr_assert(eq(int, drv_sched_job_get(s, 7, &info), 0));
	cr_assert(eq(int, info.state, DRV_SJ_PENDING));
	drv_sched_decision_format(s, &info.why, buf, sizeof(buf));
	cr_assert(eq(str, buf, "pending 7: Resources: needs 16 GPUs in slices of 2 tasks, each "
			       "within one leaf; 24 GPUs free in all, not together"));

	/* a slice no leaf can ever hold is known at submit */
	drv_job_release(&j);
	sliced(&j, 4, 8, "leaf", 4);
	j.id = 8;
	j.tenant = drv_strdup("a");
	cr_assert(eq(int, drv_sched_submit(s, &j, NULL), 0));
	cr_assert(eq(int, drv_sched_job_get(s, 8, &info), 0));
	drv_sched_decision_format(s, &info.why, buf, sizeof(buf));
	cr_assert(eq(str, buf, "pending 8: BadConstraints: needs 32 GPUs under one leaf for each "
			       "slice of 4 tasks; the largest leaf has 16"));
	drv_job_release(&j);
	drv_sched_free(s);
	drv_sched_decisions_release(&d);
	drv_cluster_release(&c);
}
