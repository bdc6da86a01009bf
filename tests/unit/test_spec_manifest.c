/*
 * test_spec_manifest.c: Kubernetes manifests of every kind drover reads,
 * written the way the projects' documentation shows them
 * (examples/jobs/), and bad manifests whose errors must name the line,
 * column and field path.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

#include "drover/fsutil.h"
#include "drover/spec.h"

static struct drv_jobspec s;
static struct drv_diags d;

static void setup(void)
{
	drv_jobspec_init(&s);
	drv_diags_init(&d, "test");
}

static void teardown(void)
{
	drv_jobspec_release(&s);
	drv_diags_release(&d);
}

TestSuite(spec_manifest, .init = setup, .fini = teardown);

static int parse(const char *text)
{
	return drv_spec_parse_buffer(text, strlen(text), "test", &s, &d);
}

/* The diagnostic whose path is path, or NULL. */
static const struct drv_diag *diag_at(const char *path)
{
	int i;
	for (i = 0; i < d.n; i++)
		if (d.v[i].path && strcmp(d.v[i].path, path) == 0)
			return &d.v[i];
	return NULL;
}

static bool warned(const char *needle)
{
	int i;
	for (i = 0; i < s.nwarnings; i++)
		if (strstr(s.warnings[i], needle))
			return true;
	return false;
}

Test(spec_manifest, pytorchjob_master_and_workers_are_one_gang)
{
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/pytorchjob-multinode.yaml", &s, &d), 0));
	cr_assert(eq(str, s.kind, "PyTorchJob"));
	cr_assert(eq(str, s.job.name, "llama-finetune"));
	cr_assert(eq(str, s.namespace_, "research"));
	cr_assert(eq(int, s.job.ngroups, 2));
	cr_assert(eq(str, s.job.groups[0].name, "master"));
	cr_assert(eq(int, s.job.groups[0].count, 1));
	cr_assert(eq(str, s.job.groups[1].name, "worker"));
	cr_assert(eq(int, s.job.groups[1].count, 3));
	cr_assert(eq(int, s.job.groups[1].gpus, 8), "string \"8\" is 8 GPUs");
	cr_assert(eq(int, s.job.gang_min, 0), "all four pods start together");
	cr_assert(eq(int, s.job.groups[0].model, drv_gpu_model_find("H100-SXM-80GB")));
	cr_assert(eq(i64, s.job.groups[0].cpu_milli, 96000));
	cr_assert(eq(i64, s.job.groups[0].mem_mib, 1024 * 1024));
	cr_assert(eq(int, s.job.topo_mode, DRV_TOPO_REQUIRED));
	cr_assert(eq(str, s.job.topo_level, "cloud.provider.com/topology-rack"),
		  "a label is kept as written: the cluster resolves it");
	cr_assert(eq(str, s.queue, "research"));
	cr_assert(eq(i64, s.job.time_limit, 86400));
	cr_assert(eq(int, s.k8s.backoff_limit, 3));
	cr_assert(eq(int, s.run[1].ncommand, 1));
	cr_assert(eq(str, s.run[1].command[0], "torchrun"));
	cr_assert(eq(int, s.run[1].nargs, 5));
	cr_assert(eq(str, s.run[1].working_dir, "/workspace"));
	cr_assert(eq(str, s.run[1].restart_policy, "OnFailure"));
	cr_assert(eq(str, (char *)drv_jobspec_env(&s, 1, "NCCL_DEBUG"), "WARN"));
	cr_assert(warned("tolerations"), "unknown fields are kept as warnings");
	cr_assert(json_object_get(s.ignored, "spec.runPolicy.cleanPodPolicy") != NULL);
}

Test(spec_manifest, volcano_gang_min_member_smaller_than_replicas)
{
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/volcano-gang.yaml", &s, &d), 0));
	cr_assert(eq(int, s.job.ngroups, 2));
	cr_assert(eq(int, s.job.groups[0].count + s.job.groups[1].count, 10));
	cr_assert(eq(int, s.job.gang_min, 6));
	cr_assert(eq(int, s.k8s.min_available, 6));
	cr_assert(eq(int, s.job.groups[0].gpus, 0));
	cr_assert(eq(int, s.job.groups[1].gpus, 1));
	cr_assert(eq(i64, s.job.groups[1].cpu_milli, 8000));
	cr_assert(eq(i64, s.job.groups[1].mem_mib, 65536), "\"68719476736\" bytes");
	cr_assert(eq(str, s.queue, "training"));
	cr_assert(eq(str, s.priority_class, "training-high"));
	cr_assert(eq(int, s.job.priority, 100000), "resolved from the stream's PriorityClass");
	cr_assert(eq(int, s.nclasses, 1));
	cr_assert(eq(str, s.classes[0].preemption_policy, "PreemptLowerPriority"));
	cr_assert(warned("spec.plugins"));
}

Test(spec_manifest, podgroup_gangs_the_pods_that_name_it)
{
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/volcano-podgroup.yaml", &s, &d), 0));
	cr_assert(eq(str, s.job.name, "nccl-allreduce"));
	cr_assert(eq(int, s.job.ngroups, 2));
	cr_assert(eq(int, drv_job_tasks(&s.job), 2));
	cr_assert(eq(int, s.job.groups[1].gpus, 8));
	cr_assert(eq(int, s.job.gang_min, 0));
	cr_assert(eq(str, s.run[1].command[0], "all_reduce_perf"));
}

Test(spec_manifest, batch_job_parallelism_and_quantity_forms)
{
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/batch-eval.yaml", &s, &d), 0));
	cr_assert(eq(int, s.job.groups[0].count, 1), "one pod per element");
	cr_assert(eq(int, s.k8s.completions, 8));
	cr_assert(eq(int, s.k8s.parallelism, 4));
	cr_assert(eq(int, drv_jobspec_elements(&s), 8));
	cr_assert(eq(int, drv_jobspec_parallelism(&s), 4));
	cr_assert(eq(int, s.k8s.indexed, 1));
	cr_assert(eq(int, s.k8s.backoff_limit, 2));
	cr_assert(eq(i64, s.k8s.active_deadline_s, 7200), "the Job's deadline");
	cr_assert(eq(i64, s.job.time_limit, 0), "not each pod's time limit");
	cr_assert(eq(int, s.job.groups[0].gpus, 1));
	cr_assert(eq(i64, s.job.groups[0].cpu_milli, 7500));
	cr_assert(eq(i64, s.job.groups[0].mem_mib, 124), "129M = 129e6 bytes, rounded up");
	cr_assert(eq(int, s.job.groups[0].model, drv_gpu_model_find("A100-SXM4-80GB")));
	cr_assert(eq(int, s.job.nregions, 1));
	cr_assert(eq(str, s.job.regions[0], "us-east-1"));
	cr_assert(eq(i64, s.run[0].termination_grace_s, 60));
	cr_assert(eq(str, s.run[0].restart_policy, "Never"));
}

Test(spec_manifest, k8s_expand_as_kubelet)
{
	struct drv_env env[] = { { "A", "x", NULL }, { "B", "$(A)y", NULL }, { "A", "z", NULL } };
	static const char *const cases[][3] = {
		{ "$(A)", "z", "the last entry of a name wins" },
		{ "$$(A)", "$(A)", "$$ escapes" },
		{ "$$$(A)", "$z", "$$ then a reference" },
		{ "$(NOPE)-$(A)", "$(NOPE)-z", "undefined stays as written" },
		{ "a$b$", "a$b$", "a lone $ is itself" },
		{ "$(A", "$(A", "unclosed stays" },
		{ "", "", "empty" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = drv_k8s_expand(cases[i][0], env, 3);
		cr_assert(eq(str, got, (char *)cases[i][1]), "%s", cases[i][2]);
		free(got);
	}
	{
		char *got = drv_k8s_expand("$(A)", env, 1);
		cr_assert(eq(str, got, "x"), "only the entries before");
		free(got);
	}
}

Test(spec_manifest, job_fields_and_bad_values)
{
	static const char y[] = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n"
		"  completionMode: Sometimes\n  suspend: maybe\n  completions: 0\n"
		"  template:\n    spec:\n      restartPolicy: Always\n"
		"      containers: [{name: c, image: i, command: [\"true\"]}]\n";
	cr_assert(eq(int, drv_spec_parse_buffer(y, sizeof(y) - 1, "j.yaml", &s, &d), DRV_EPARSE));
	cr_assert(eq(int, d.nerrors, 4));
	{
		const char *want[] = { "spec.completions", "spec.completionMode", "spec.suspend",
				       "spec.template.spec.restartPolicy" };
		for (int i = 0; i < 4; i++)
			cr_assert(eq(str, d.v[i].path, (char *)want[i]));
	}
}

Test(spec_manifest, queue_from_each_scheduler)
{
	static const char *const meta[][2] = {
		{ "labels: {kueue.x-k8s.io/queue-name: q1, kai.scheduler/queue: q2}", "q1" },
		{ "labels: {kai.scheduler/queue: q2, runai/queue: q3}", "q2" },
		{ "labels: {runai/queue: q3}", "q3" },
		{ "annotations: {scheduling.volcano.sh/queue-name: q4}", "q4" },
	};
	for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++) {
		char y[512];
		int n = snprintf(y, sizeof(y), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
				 "  %s\nspec:\n  containers: [{name: c, image: i}]\n", meta[i][0]);
		drv_jobspec_release(&s);
		drv_jobspec_init(&s);
		cr_assert(eq(int, drv_spec_parse_buffer(y, (size_t)n, "q.yaml", &s, &d), 0), "%s", y);
		cr_assert(eq(str, s.queue, (char *)meta[i][1]));
	}
}

Test(spec_manifest, fractional_gpu_annotation)
{
	cr_assert(eq(int, drv_spec_load_file("examples/jobs/fractional-inference.yaml", &s, &d), 0));
	cr_assert(eq(int, s.job.groups[0].gpus, 0));
	cr_assert(eq(int, s.job.groups[0].gpu_milli, 250));
	cr_assert(eq(int, s.job.groups[0].gpu_mem_mib, 10240));
	cr_assert(s.job.preemptible);
	cr_assert(warned("ports"));
}

Test(spec_manifest, list_and_multi_document_stream_give_several_jobs)
{
	struct drv_specset set;
	char *buf;
	size_t len;
	drv_specset_init(&set);
	cr_assert(eq(int, drv_file_read("examples/jobs/two-pods-list.yaml", 1 << 20, &buf, &len), 0));
	cr_assert(eq(int, drv_spec_parse_all(buf, len, "list", NULL, &set, &d), 0));
	cr_assert(eq(int, set.njobs, 2));
	cr_assert(eq(int, set.jobs[1].job.groups[0].gpus, 2));
	drv_specset_release(&set);
	cr_assert(eq(int, drv_spec_parse_buffer(buf, len, "list", &s, &d), DRV_EPARSE),
		  "one-job entry point refuses two jobs");
	free(buf);

	drv_diags_release(&d);
	drv_diags_init(&d, "stream");
	{
		const char *two = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
				  "  containers: [{name: c, image: i}]\n---\n"
				  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n---\n"
				  "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n"
				  "  containers: [{name: c, image: i}]\n";
		drv_specset_init(&set);
		cr_assert(eq(int, drv_spec_parse_all(two, strlen(two), "stream", NULL, &set, &d), 0));
		cr_assert(eq(int, set.njobs, 2));
		cr_assert(eq(int, d.nwarnings, 1), "the ConfigMap is skipped with a warning");
		drv_specset_release(&set);
	}
}

Test(spec_manifest, gpus_in_requests_limits_or_both)
{
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
				"  containers:\n  - name: c\n    image: i\n    resources:\n"
				"      requests: {nvidia.com/gpu: \"2\"}\n"), 0));
	cr_assert(eq(int, s.job.groups[0].gpus, 2));
	drv_jobspec_release(&s);
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
				"  containers:\n  - name: c\n    image: i\n    resources:\n"
				"      requests: {nvidia.com/gpu: 2}\n      limits: {nvidia.com/gpu: 4}\n"),
		     DRV_EPARSE));
	cr_assert(not(eq(ptr, (void *)diag_at("spec.containers[0].resources.requests[\"nvidia.com/gpu\"]"),
			 NULL)));
}

Test(spec_manifest, sidecar_gpus_count_and_sidecar_is_kept)
{
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
				"  containers:\n"
				"  - {name: main, image: m, resources: {limits: {nvidia.com/gpu: 2}}}\n"
				"  - {name: side, image: s, resources: {limits: {nvidia.com/gpu: 1}}}\n"), 0));
	cr_assert(eq(int, s.job.groups[0].gpus, 3));
	cr_assert(eq(str, s.run[0].image, "m"));
	cr_assert(not(eq(ptr, json_object_get(s.ignored, "spec.containers[1].image"), NULL)));
}

Test(spec_manifest, several_errors_with_line_column_and_path)
{
	const char *bad = "apiVersion: v1\n"
			  "kind: Pod\n"
			  "metadata:\n"
			  "  name: bad\n"
			  "spec:\n"
			  "  nodeSelector:\n"
			  "    nvidia.com/gpu.product: NVIDIA-Z9000\n"
			  "  containers:\n"
			  "  - name: c\n"
			  "    resources:\n"
			  "      limits:\n"
			  "        nvidia.com/gpu: 1.5\n"
			  "        cpu: lots\n"
			  "    env:\n"
			  "    - value: x\n";
	const struct drv_diag *x;
	cr_assert(eq(int, parse(bad), DRV_EPARSE));
	cr_assert(ge(int, d.nerrors, 4));
	x = diag_at("spec.containers[0].resources.limits[\"nvidia.com/gpu\"]");
	cr_assert(not(eq(ptr, (void *)x, NULL)));
	cr_assert(eq(int, x->line, 12));
	cr_assert(eq(int, x->col, 25));
	cr_assert(not(eq(ptr, strstr(x->msg, "1.5"), NULL)), "says what was found: %s", x->msg);
	x = diag_at("spec.containers[0].resources.limits.cpu");
	cr_assert(not(eq(ptr, (void *)x, NULL)));
	cr_assert(eq(int, x->line, 13));
	x = diag_at("spec.nodeSelector[\"nvidia.com/gpu.product\"]");
	cr_assert(not(eq(ptr, (void *)x, NULL)));
	cr_assert(eq(int, x->line, 7));
	cr_assert(eq(int, x->sev, DRV_SEV_WARNING), "a model the catalog lacks is a warning");
	cr_assert(not(eq(ptr, strstr(x->msg, "NVIDIA-Z9000"), NULL)), "%s", x->msg);
	cr_assert(not(eq(ptr, (void *)diag_at("spec.containers[0].image"), NULL)));
	cr_assert(not(eq(ptr, (void *)diag_at("spec.containers[0].env[0].name"), NULL)));
	cr_assert(eq(int, s.job.ngroups, 0), "nothing half-filled comes out");
}

Test(spec_manifest, yaml_syntax_error_has_position)
{
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata: {name: x\nspec: [\n"), DRV_EPARSE));
	cr_assert(ge(int, d.nerrors, 1));
	cr_assert(gt(int, d.v[0].line, 0));
}

Test(spec_manifest, yaml_syntax_error_names_the_right_line)
{
	/* the plain scalar "x" on line 4 runs on into line 5: libfyaml blames
	 * where it starts, line 4 column 9 (both 1-based, as editors count) */
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: y\n"),
		     DRV_EPARSE));
	cr_assert(ge(int, d.nerrors, 1));
	cr_assert(eq(int, d.v[0].line, 4));
	cr_assert(eq(int, d.v[0].col, 9));
}

Test(spec_manifest, limits_nesting_aliases_and_bad_bytes)
{
	char *deep = malloc(4096);
	size_t i, n = 0;
	n += (size_t)snprintf(deep, 4096, "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: ");
	for (i = 0; i < 200; i++)
		deep[n++] = '[';
	for (i = 0; i < 200; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	cr_assert(ne(int, parse(deep), 0));
	cr_assert(ge(int, d.nerrors, 1));
	free(deep);
	drv_jobspec_release(&s);
	drv_diags_release(&d);
	drv_diags_init(&d, "t");
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata: {name: &n a}\n"
				"spec: {containers: [{name: *n, image: i}]}\n"), DRV_EPARSE));
	cr_assert(not(eq(ptr, strstr(d.v[0].msg, "alias"), NULL)));
	drv_diags_release(&d);
	drv_diags_init(&d, "t");
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata: {name: \"a\x01\"}\n"), DRV_EPARSE));
	cr_assert(eq(int, d.v[0].line, 3));
}

Test(spec_manifest, kueue_topology_levels)
{
	cr_assert(eq(str, (char *)drv_spec_topo_level("kubernetes.io/hostname"), "node"));
	cr_assert(eq(str, (char *)drv_spec_topo_level("cloud.provider.com/topology-rack"), "leaf"));
	cr_assert(eq(str, (char *)drv_spec_topo_level("cloud.provider.com/topology-block"), "spine"));
	cr_assert(eq(str, (char *)drv_spec_topo_level("nvidia.com/gpu.clique"), "nvlink-domain"));
	cr_assert(eq(str, (char *)drv_spec_topo_level("leaf"), "leaf"));
	cr_assert(eq(ptr, (void *)drv_spec_topo_level("example.com/whatever"), NULL));
}

Test(spec_manifest, zero_replicas_is_refused_with_the_job_named)
{
	cr_assert(eq(int, parse("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: pt}\n"
				"spec:\n  pytorchReplicaSpecs:\n    Worker:\n      replicas: 0\n"
				"      template: {spec: {containers: [{name: c, image: i}]}}\n"),
		     DRV_EPARSE));
	cr_assert(eq(str, d.v[0].path, "pt"));
	cr_assert(not(eq(ptr, strstr(d.v[0].msg, "count 0"), NULL)), "%s", d.v[0].msg);
}

Test(spec_manifest, json_manifest_is_read_as_json)
{
	cr_assert(eq(int, parse("{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n\t\"metadata\": {\"name\": \"j\"},"
				"\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\","
				"\"resources\": {\"limits\": {\"nvidia.com/gpu\": 2}}}]}}"), 0));
	cr_assert(eq(int, s.job.groups[0].gpus, 2));
}

Test(spec_manifest, invalid_utf8_in_a_directive_is_refused_not_hung_on)
{
	/* libfyaml 0.7.12 loops forever on this; drover checks the text first */
	cr_assert(eq(int, parse("apiVersion: v1\n% nkind\xff\xff:\n"), DRV_EPARSE));
	cr_assert(eq(int, d.v[0].line, 2));
	cr_assert(eq(int, d.v[0].col, 8));
}

Test(spec_manifest, default_container_annotation_picks_the_main_container)
{
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n"
				"    kubectl.kubernetes.io/default-container: train\n"
				"spec:\n  containers:\n  - {name: proxy, image: envoy}\n"
				"  - {name: train, image: trainer, resources: {limits: {nvidia.com/gpu: 4}}}\n"),
		     0));
	cr_assert(eq(str, s.run[0].image, "trainer"));
	cr_assert(eq(str, s.run[0].container, "train"));
	cr_assert(eq(int, s.job.groups[0].gpus, 4));
	cr_assert(not(eq(ptr, json_object_get(s.ignored, "spec.containers[0].image"), NULL)));
}

Test(spec_manifest, secret_and_configmap_references_are_kept_checked)
{
	static const char pod[] =
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
		"  containers:\n  - name: main\n    image: busybox\n    command: [\"true\"]\n"
		"    env:\n    - name: T\n      valueFrom:\n        secretKeyRef: {name: hf, key: token}\n"
		"    - name: N\n      valueFrom:\n        fieldRef: {fieldPath: spec.nodeName}\n"
		"    envFrom:\n    - configMapRef: {name: cfg}\n      prefix: C_\n"
		"    volumeMounts:\n    - {name: creds, mountPath: /etc/creds}\n"
		"    - {name: scratch, mountPath: /scratch}\n"
		"  volumes:\n  - name: creds\n    secret: {secretName: hf, defaultMode: 256}\n"
		"  - name: scratch\n    persistentVolumeClaim: {claimName: c}\n";
	char b[64];

	cr_assert(eq(int, parse(pod), 0));
	cr_assert(eq(int, s.run[0].nenv, 1), "fieldRef is kept, not an env entry");
	cr_assert(s.run[0].env[0].value_from != NULL);
	cr_assert(eq(str, (char *)drv_env_shown(&s.run[0].env[0], b, sizeof(b)), "<secret>"));
	cr_assert(eq(sz, json_array_size(s.run[0].env_from), 1));
	cr_assert(eq(sz, json_array_size(s.run[0].volumes), 1));
	cr_assert(eq(str, (char *)json_string_value(json_object_get(json_object_get(
		json_array_get(s.run[0].volumes, 0), "secret"), "secretName")), "hf"));
	cr_assert(warned("spec.volumes[1]"), "the PVC volume is kept with a warning");
	cr_assert(warned("volumeMounts[1]"));
	cr_assert(not(warned("spec.volumes[0]")), "the secret volume is acted on");
}

Test(spec_manifest, bad_secret_references_name_the_field)
{
	static const char pod[] =
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
		"  containers:\n  - name: main\n    image: busybox\n    command: [\"true\"]\n"
		"    env:\n    - name: T\n      valueFrom:\n        secretKeyRef: {name: hf}\n"
		"    volumeMounts:\n    - {name: nope, mountPath: /x}\n";

	cr_assert(lt(int, parse(pod), 0));
	cr_assert(diag_at("spec.containers[0].env[0].valueFrom.secretKeyRef.key") != NULL);
	cr_assert(diag_at("spec.containers[0].volumeMounts[0]") != NULL);
}

/* Kueue's slices: a PyTorchJob's workers cut in pairs under one rack; the
 * label kept as written; the errors where Kueue's webhook has them, and
 * where drover cannot cut the pods as one gang. */
Test(spec_manifest, kueue_slices_and_their_errors)
{
	static const char *const head =
		"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: p\n%s"
		"spec:\n  pytorchReplicaSpecs:\n%s"
		"    Worker:\n      replicas: 4\n      template:\n        metadata:\n"
		"          annotations:\n%s"
		"        spec:\n          containers: [{name: c, image: i, command: [\"true\"]}]\n";
	static const char *const master =
		"    Master:\n      replicas: 1\n      template:\n        spec:\n"
		"          containers: [{name: c, image: i, command: [\"true\"]}]\n";
	static const char *const wp = "spec.pytorchReplicaSpecs.Worker.template.metadata.annotations"
				      "[\"kueue.x-k8s.io/podset-slice-size\"]";
	char text[2048];

	snprintf(text, sizeof(text), head, "", "",
		 "            kueue.x-k8s.io/podset-slice-required-topology: example.com/topology-rack\n"
		 "            kueue.x-k8s.io/podset-slice-size: \"2\"\n");
	cr_assert(eq(int, parse(text), 0));
	cr_assert(eq(str, s.job.slice_level, "example.com/topology-rack"));
	cr_assert(eq(int, s.job.slice_size, 2));
	cr_assert(eq(int, s.job.topo_mode, DRV_TOPO_NONE));
	teardown();
	setup();

	snprintf(text, sizeof(text), head, "", "",
		 "            kueue.x-k8s.io/podset-slice-required-topology: rack\n"
		 "            kueue.x-k8s.io/podset-slice-size: \"0\"\n");
	cr_assert(ne(int, parse(text), 0));
	cr_assert(not(eq(ptr, (void *)diag_at(wp), NULL)));
	cr_assert(eq(str, diag_at(wp)->msg, "found \"0\", expected a number of pods, at least 1"));
	teardown();
	setup();

	snprintf(text, sizeof(text), head, "", "",
		 "            kueue.x-k8s.io/podset-slice-size: \"2\"\n");
	cr_assert(ne(int, parse(text), 0));
	cr_assert(not(eq(ptr, (void *)diag_at(wp), NULL)), "a size alone is an error");
	teardown();
	setup();

	/* on one of two templates: drover cuts all the pods */
	snprintf(text, sizeof(text), head, "", master,
		 "            kueue.x-k8s.io/podset-slice-required-topology: rack\n"
		 "            kueue.x-k8s.io/podset-slice-size: \"2\"\n");
	cr_assert(ne(int, parse(text), 0));
	cr_assert(not(eq(ptr, (void *)diag_at(wp), NULL)));
	cr_assert(not(eq(ptr, strstr(diag_at(wp)->msg, "found slices on one of 2 pod templates"), NULL)));
	teardown();
	setup();

	/* on the object: the 5 pods do not split in pairs; in one they do */
	snprintf(text, sizeof(text), head,
		 "  annotations:\n    kueue.x-k8s.io/podset-slice-required-topology: rack\n"
		 "    kueue.x-k8s.io/podset-slice-size: \"2\"\n", master, "            a: b\n");
	cr_assert(ne(int, parse(text), 0));
	cr_assert(eq(str, diag_at("metadata.annotations[\"kueue.x-k8s.io/podset-slice-size\"]")->msg,
		     "found 2, expected a size that divides the job's 5 pods"));
}

/* imagePullPolicy and a Pod's restartPolicy take Kubernetes' three values;
 * any other is an error at its path, and the three are kept as written. */
Test(spec_manifest, pull_and_restart_policies_take_the_three_values_only)
{
	static const char *const good[] = { "Always", "IfNotPresent", "Never" };
	static const char *const rp[] = { "Always", "OnFailure", "Never" };
	char y[512];
	const struct drv_diag *x;

	for (int i = 0; i < 3; i++) {
		snprintf(y, sizeof(y),
			 "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: %s\n"
			 "  containers: [{name: c, image: i, imagePullPolicy: %s, command: [\"true\"]}]\n",
			 rp[i], good[i]);
		cr_assert(eq(int, parse(y), 0), "%s / %s", rp[i], good[i]);
		cr_assert(eq(str, s.run[0].image_pull_policy, (char *)good[i]));
		cr_assert(eq(str, s.run[0].restart_policy, (char *)rp[i]));
		drv_jobspec_release(&s);
		drv_diags_release(&d);
		drv_jobspec_init(&s);
		drv_diags_init(&d, "test");
	}
	cr_assert(eq(int, parse("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
				"  restartPolicy: Sometimes\n"
				"  containers: [{name: c, image: i, imagePullPolicy: Maybe, command: [\"true\"]}]\n"),
		     DRV_EPARSE));
	x = diag_at("spec.containers[0].imagePullPolicy");
	cr_assert(not(eq(ptr, (void *)x, NULL)));
	cr_assert(not(eq(ptr, strstr(x->msg, "expected Always, IfNotPresent or Never"), NULL)), "%s", x->msg);
	x = diag_at("spec.restartPolicy");
	cr_assert(not(eq(ptr, (void *)x, NULL)));
	cr_assert(not(eq(ptr, strstr(x->msg, "expected Always, OnFailure or Never"), NULL)), "%s", x->msg);
}

/* An image with a newline would have reached the agent's podman script;
 * kubelet calls such a name InvalidImageName: refused, at its place. */
Test(spec_manifest, image_with_a_control_character_is_refused)
{
	const char *t = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n"
			"  containers:\n  - name: m\n    image: \"busybox\\ntouch /tmp/x;#\"\n";
	const struct drv_diag *e;

	cr_assert(eq(int, parse(t), DRV_EPARSE));
	e = diag_at("spec.containers[0].image");
	cr_assert(not(eq(ptr, (void *)e, NULL)));
	cr_assert(eq(int, e->line, 7));
	cr_assert(eq(str, e->msg, "found a control character (0x0a) at byte 8 of the image, "
		     "expected an image reference such as registry/name:tag"));
}
