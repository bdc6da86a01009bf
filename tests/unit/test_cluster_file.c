/*
 * test_cluster_file.c: cluster files: the examples load with the shapes
 * the issue asks for; bad files give every error with file:line:col, the
 * field path and what was expected; nothing is half-built.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "drover/clusterfile.h"

static int load(const char *text, struct drv_cluster *c, struct drv_diags *d)
{
	drv_diags_init(d, "t.yaml");
	return drv_cluster_load_buffer(text, strlen(text), c, d);
}

static const char *msg(const struct drv_diags *d, int i, char *buf, size_t sz)
{
	snprintf(buf, sz, "%d:%d: %s: %s", d->v[i].line, d->v[i].col,
		 d->v[i].path ? d->v[i].path : "", d->v[i].msg);
	return buf;
}

static int32_t gpus_at(const char *path)
{
	struct drv_cluster c;
	struct drv_diags d;
	int32_t n;
	drv_diags_init(&d, path);
	cr_assert(eq(int, drv_cluster_load_file(path, &c, &d), 0), "%s", path);
	cr_assert(eq(int, drv_cluster_check(&c), 0));
	n = c.vertices[0].total_gpus;
	drv_cluster_release(&c);
	drv_diags_release(&d);
	return n;
}

Test(cluster_file, examples_have_the_shapes_asked_for)
{
	struct drv_cluster c;
	struct drv_diags d;
	int32_t i, leaves = 0;

	cr_assert(eq(int, gpus_at("examples/clusters/h100-256.yaml"), 256));
	cr_assert(eq(int, gpus_at("examples/clusters/philly.yaml"), 512));
	cr_assert(eq(int, gpus_at("examples/clusters/gb200-nvl72.yaml"), 288));
	cr_assert(gt(int, gpus_at("examples/clusters/multicloud.yaml"), 256));

	drv_diags_init(&d, "philly");
	cr_assert(eq(int, drv_cluster_load_file("examples/clusters/philly.yaml", &c, &d), 0));
	cr_assert(eq(int, c.nnodes, 64));
	for (i = 0; i < c.nvertices; i++)
		if (c.vertices[i].level == drv_cluster_level(&c, "leaf")) {
			leaves++;
			cr_assert(eq(int, c.vertices[i].total_nodes, 16));
		}
	cr_assert(eq(int, leaves, 4));
	cr_assert(eq(int, c.nodes[0].ngpus, 8));
	cr_assert(eq(int, c.nodes[0].model, drv_gpu_model_find("P100")));
	drv_cluster_release(&c);

	/* GB200: the rack is the NVLink domain of 18 trays x 4 GPUs */
	cr_assert(eq(int, drv_cluster_load_file("examples/clusters/gb200-nvl72.yaml", &c, &d), 0));
	cr_assert(eq(int, drv_cluster_level(&c, "nvlink-domain"), drv_cluster_level(&c, "rack")));
	{
		int32_t dom = c.nodes[0].nvl_domain;
		cr_assert(eq(int, c.vertices[dom].total_gpus, 72));
		cr_assert(eq(int, c.vertices[dom].total_nodes, 18));
	}
	drv_cluster_release(&c);

	/* multicloud: prices, regions and spot survive */
	cr_assert(eq(int, drv_cluster_load_file("examples/clusters/multicloud.yaml", &c, &d), 0));
	cr_assert(eq(int, c.npools, 5));
	{
		bool spot = false, gcp = false;
		for (i = 0; i < c.npools; i++) {
			cr_assert(gt(i64, c.pools[i].price_micro_per_gpu_hour, 0));
			if (c.pools[i].spot)
				spot = true;
			if (!strcmp(c.pools[i].provider, "gcp"))
				gcp = true;
		}
		cr_assert(spot && gcp);
	}
	drv_cluster_release(&c);
	drv_diags_release(&d);
}

Test(cluster_file, patterns_types_and_inline_fields)
{
	struct drv_cluster c;
	struct drv_diags d;
	const char *text =
		"kind: Cluster\n"
		"name: small\n"
		"levels: [pool, node]\n"
		"nodeTypes:\n"
		"  t: {gpus: 4, gpuModel: nvidia-a100-sxm4-80gb, cpu: 64, memory: 512Gi}\n"
		"topology:\n"
		"  - name: p\n"
		"    pricePerGpuHour: 1.5\n"
		"    children:\n"
		"      - {name: \"{parent}-a{i:03}\", count: 3, type: t}\n"
		"      - {name: big, type: t, gpus: 8, cpu: 500m, memory: 1536Mi, state: draining}\n";

	cr_assert(eq(int, load(text, &c, &d), 0));
	cr_assert(eq(int, c.nnodes, 4));
	cr_assert(eq(str, c.nodes[2].name, "p-a003"));
	cr_assert(eq(int, c.nodes[3].ngpus, 8));
	cr_assert(eq(i64, c.nodes[3].cpu_milli, 500));
	cr_assert(eq(i64, c.nodes[3].mem_mib, 1536));
	cr_assert(eq(int, c.nodes[3].state, DRV_NODE_DRAINING));
	cr_assert(eq(i64, c.nodes[0].mem_mib, 512 * 1024));
	cr_assert(eq(i64, c.pools[0].price_micro_per_gpu_hour, 1500000));
	cr_assert(eq(int, c.vertices[0].total_gpus, 12)); /* draining node offers nothing */
	drv_cluster_release(&c);
	drv_diags_release(&d);
}

Test(cluster_file, every_error_with_position_path_and_expectation)
{
	struct drv_cluster c;
	struct drv_diags d;
	char b[512];
	const char *text =
		"kind: Cluster\n"                     /* 1 */
		"name: bad\n"                         /* 2 */
		"levels: [pool, leaf, node]\n"        /* 3 */
		"nodeTypes:\n"                        /* 4 */
		"  t:\n"                              /* 5 */
		"    gpus: 9x\n"                      /* 6 */
		"    gpuModel: H1000\n"               /* 7 */
		"    cpu: 64\n"                       /* 8 */
		"    memory: 1Ti\n"                   /* 9 */
		"topology:\n"                         /* 10 */
		"  - name: p\n"                       /* 11 */
		"    children:\n"                     /* 12 */
		"      - name: l1\n"                  /* 13 */
		"        region: x\n"                 /* 14 */
		"        children:\n"                 /* 15 */
		"          - name: n{i}\n"            /* 16 */
		"            count: 2\n"              /* 17 */
		"            type: nope\n";           /* 18 */

	cr_assert(eq(int, load(text, &c, &d), DRV_EINVAL));
	cr_assert(eq(int, d.nerrors, 4));
	cr_assert(eq(str, (char *)msg(&d, 0, b, sizeof(b)),
		     "6:11: nodeTypes.t.gpus: found '9x', expected an integer from 0 to 64"));
	cr_assert(eq(int, d.v[1].line, 7));
	cr_assert(strstr(d.v[1].msg, "expected a GPU model") != NULL);
	cr_assert(eq(str, (char *)msg(&d, 2, b, sizeof(b)),
		     "14:9: topology[0].children[0].region: 'region' belongs to a pool; this entry is at level 'leaf'"));
	cr_assert(eq(int, d.v[3].line, 18));
	cr_assert(eq(str, d.v[3].path, "topology[0].children[0].children[0].type"));
	/* nothing half-built */
	cr_assert(eq(int, c.nnodes, 0));
	cr_assert(c.vertices == NULL);
	drv_cluster_release(&c);
	drv_diags_release(&d);
}

Test(cluster_file, duplicates_syntax_and_missing_fields)
{
	struct drv_cluster c;
	struct drv_diags d;

	cr_assert(eq(int, load("kind: Cluster\nname: x\nlevels: [node]\ntopology:\n"
			       "  - {name: a, gpus: 1, gpuModel: T4, cpu: 4, memory: 16Gi}\n"
			       "  - {name: a, gpus: 1, gpuModel: T4, cpu: 4, memory: 16Gi}\n",
			       &c, &d),
		     DRV_EINVAL));
	cr_assert(eq(int, d.v[0].line, 6));
	cr_assert(strstr(d.v[0].msg, "used twice") != NULL);
	drv_diags_release(&d);

	cr_assert(eq(int, load("kind: Cluster\nname: [x\n", &c, &d), DRV_EPARSE));
	cr_assert(gt(int, d.v[0].line, 0));
	cr_assert(strstr(d.v[0].msg, "YAML syntax") != NULL);
	drv_diags_release(&d);

	cr_assert(eq(int, load("kind: Job\nname: x\n", &c, &d), DRV_EINVAL));
	cr_assert(eq(str, d.v[0].msg, "found 'Job', expected Cluster"));
	drv_diags_release(&d);

	cr_assert(eq(int, load("kind: Cluster\nname: x\nlevels: [pool, node]\ntopology:\n"
			       "  - name: p\n    children:\n      - {name: n, gpus: 8, cpu: 4, memory: 1Gi}\n",
			       &c, &d),
		     DRV_EINVAL));
	cr_assert(strstr(d.v[0].msg, "no 'gpuModel'") != NULL);
	cr_assert(eq(int, d.v[0].line, 7));
	drv_diags_release(&d);

	cr_assert(eq(int, load("kind: Cluster\nname: x\nlevels: [pool, leaf]\ntopology: []\n", &c, &d),
		     DRV_EINVAL));
	cr_assert(strstr(d.v[0].msg, "last level must be 'node'") != NULL);
	drv_diags_release(&d);
}

Test(cluster_file, sniff_tells_clusters_from_jobs)
{
	const char *a = "# comment\nkind: Cluster\nname: x\n";
	const char *b = "apiVersion: v1\nkind: Pod\n";
	const char *e = "kind: \"Cluster\"  # yes\n";
	cr_assert(drv_cluster_file_sniff(a, strlen(a)));
	cr_assert(not(drv_cluster_file_sniff(b, strlen(b))));
	cr_assert(drv_cluster_file_sniff(e, strlen(e)));
}

Test(cluster_file, level_labels_name_levels_for_kueue)
{
	struct drv_cluster c;
	struct drv_diags d;
	const char *ok = "kind: Cluster\nname: t\nlevels: [pool, leaf, node]\n"
			 "levelLabels: {leaf: example.com/ib-switch, node: kubernetes.io/hostname}\n"
			 "topology:\n- name: dc\n  children:\n  - name: sw\n    children:\n"
			 "    - {name: n1, gpus: 8, gpuModel: H100, cpu: 8, memory: 64Gi}\n";
	const char *bad = "kind: Cluster\nname: t\nlevels: [pool, node]\n"
			  "levelLabels: {rack: example.com/rack}\n"
			  "topology:\n- name: dc\n  children:\n  - {name: n1, gpus: 8, gpuModel: H100}\n";

	drv_diags_init(&d, "ok.yaml");
	cr_assert(eq(int, load(ok, &c, &d), 0));
	cr_assert(eq(int, drv_cluster_level(&c, "example.com/ib-switch"), drv_cluster_level(&c, "leaf")));
	cr_assert(eq(int, drv_cluster_level(&c, "kubernetes.io/hostname"), drv_cluster_level(&c, "node")));
	cr_assert(eq(int, drv_cluster_level(&c, "example.com/other"), -1));
	drv_cluster_release(&c);
	drv_diags_release(&d);
	drv_diags_init(&d, "bad.yaml");
	cr_assert(ne(int, load(bad, &c, &d), 0));
	cr_assert(eq(str, d.v[0].path, "levelLabels.rack"));
	drv_cluster_release(&c);
	drv_diags_release(&d);
}

/* A GB200 site: its NVL72 racks carry example.com/topology-rack, and that
 * rack is the NVLink domain, not the leaf the name rules would make of
 * "...rack". The cluster file's levelLabels win over those rules; without
 * them the rules still map the label. */
Test(cluster_file, level_labels_win_over_the_name_rules)
{
	struct drv_cluster c;
	struct drv_diags d;
	const char *nvl = "kind: Cluster\nname: t\nlevels: [pool, leaf, rack, node]\n"
			  "nvlinkDomain: rack\n"
			  "levelLabels: {rack: example.com/topology-rack, leaf: example.com/ib-leaf}\n"
			  "topology:\n- name: dc\n  children:\n  - name: lf\n    children:\n"
			  "    - name: r1\n      children:\n"
			  "      - {name: n1, gpus: 4, gpuModel: H100, cpu: 8, memory: 64Gi}\n";
	const char *plain = "kind: Cluster\nname: t\nlevels: [pool, leaf, node]\n"
			    "topology:\n- name: dc\n  children:\n  - name: lf\n    children:\n"
			    "    - {name: n1, gpus: 4, gpuModel: H100, cpu: 8, memory: 64Gi}\n";

	drv_diags_init(&d, "nvl.yaml");
	cr_assert(eq(int, load(nvl, &c, &d), 0));
	cr_assert(ne(int, drv_cluster_level(&c, "rack"), drv_cluster_level(&c, "leaf")));
	cr_assert(eq(int, drv_cluster_level(&c, "example.com/topology-rack"),
		     drv_cluster_level(&c, "rack")),
		  "levelLabels says rack; the name rules would say leaf");
	cr_assert(eq(int, drv_cluster_level(&c, "example.com/ib-leaf"), drv_cluster_level(&c, "leaf")));
	cr_assert(eq(int, drv_cluster_level(&c, "kubernetes.io/hostname"),
		     drv_cluster_level(&c, "node")), "the rules still map what the file does not name");
	drv_cluster_release(&c);
	drv_diags_release(&d);
	drv_diags_init(&d, "plain.yaml");
	cr_assert(eq(int, load(plain, &c, &d), 0));
	cr_assert(eq(int, drv_cluster_level(&c, "example.com/topology-rack"),
		     drv_cluster_level(&c, "leaf")), "by the rules: leaf");
	cr_assert(eq(int, drv_cluster_level(&c, "example.com/fabric"), -1));
	drv_cluster_release(&c);
	drv_diags_release(&d);
}

/* The root level is always "cluster": levels below it as written, with
 * or without a leading "cluster", and the default [pool, node]. */
Test(cluster_file, the_root_level_is_always_cluster)
{
	static const char *const lv[] = { "levels: [pool, node]\n", "levels: [cluster, pool, node]\n",
					  "" };
	char text[512];
	struct drv_cluster c;
	struct drv_diags d;

	for (int i = 0; i < 3; i++) {
		snprintf(text, sizeof(text),
			 "kind: Cluster\nname: r\n%snodeTypes:\n"
			 "  t: {gpus: 4, gpuModel: H100, cpu: 64, memory: 512Gi}\n"
			 "topology:\n  - name: p\n    children:\n      - {name: n, type: t}\n",
			 lv[i]);
		cr_assert(eq(int, load(text, &c, &d), 0), "%s", lv[i]);
		cr_assert(eq(int, c.nlevels, 3), "%s", lv[i]);
		cr_assert(eq(str, c.levels[0], "cluster"), "%s", lv[i]);
		cr_assert(eq(str, c.levels[1], "pool"));
		cr_assert(eq(str, c.levels[2], "node"));
		drv_cluster_release(&c);
		drv_diags_release(&d);
	}
}
